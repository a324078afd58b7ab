#!/usr/bin/env python3
"""tests/fuzz/seeds.py: writes the seed corpora of tests/fuzz/corpus/<target>/.

    python3 tests/fuzz/seeds.py [CORPUS]     (CORPUS: ../shared/corpus by default)

Seeds are small files a fuzzer starts from, so that it begins inside each
syntax instead of discovering it byte by byte. They come from the real
vaults (notes cut to at most 4 KB, their frontmatter as YAML, their titles
and words as search queries and paths), the spec tests (tests/spec/*.txt,
every example's input), vault-sample/quire.yml, and hand-written cases for
what the vaults do not hold (requests, sync bodies, manifests). The choice
is deterministic (every n-th file in sorted order), so running this again
writes the same files; they are committed, and this script is how to
remake them after the vaults or the spec change.
"""

import hashlib
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, '..', 'shared', 'corpus')
OUT = os.path.join(HERE, 'corpus')
MAX_NOTE = 4096


def notes():
    out = []
    for dirpath, dirs, files in os.walk(CORPUS):
        dirs.sort()
        for f in sorted(files):
            if f.endswith('.md'):
                out.append(os.path.join(dirpath, f))
    return out


def every(items, n):
    """n items spread evenly over the list."""
    if len(items) <= n:
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def cut(data, limit):
    """At most limit bytes, cut at a line end."""
    if len(data) <= limit:
        return data
    end = data.rfind(b'\n', 0, limit)
    return data[:end + 1 if end > 0 else limit]


def write(target, seeds):
    d = os.path.join(OUT, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    seen = set()
    for s in seeds:
        if isinstance(s, str):
            s = s.encode()
        h = hashlib.sha1(s).hexdigest()[:16]
        if h in seen:
            continue
        seen.add(h)
        with open(os.path.join(d, h), 'wb') as f:
            f.write(s)
    print('%-7s %3d seeds, %6d bytes' % (target, len(seen), sum(
        os.path.getsize(os.path.join(d, x)) for x in os.listdir(d))))


def spec_inputs():
    out = []
    fence = '`' * 32
    for f in sorted(os.listdir(os.path.join(ROOT, 'tests', 'spec'))):
        text = open(os.path.join(ROOT, 'tests', 'spec', f), encoding='utf-8').read()
        for m in re.finditer(fence + r' example\n(.*?)\n\.\n', text, re.S):
            out.append(m.group(1).replace('→', '\t') + '\n')
    return out


def frontmatter(data):
    m = re.match(rb'---\r?\n(.*?\n)---\r?\n', data, re.S)
    return m.group(1) if m else None


def titles(paths):
    out = []
    for p in paths:
        data = open(p, 'rb').read()
        m = re.search(rb'^title:\s*(.+)$', data, re.M) or re.search(rb'^# (.+)$', data, re.M)
        if m:
            out.append(m.group(1).strip().strip(b'"\''))
    return out


def main():
    all_notes = notes()
    small = [p for p in all_notes if os.path.getsize(p) <= MAX_NOTE]
    picked = every(small, 20) + every(all_notes, 10)

    # note: spec inputs and notes of both vaults
    write('note', spec_inputs() + [cut(open(p, 'rb').read(), MAX_NOTE) for p in picked])

    # config: the sample's quire.yml, every setting, broken YAML, frontmatter as YAML
    config = [open(os.path.join(ROOT, 'vault-sample', 'quire.yml'), 'rb').read(),
              'title: Notes\nlanguage: fr\nbase_url: https://example.com/docs/\npublish: explicit\n',
              'ignore:\n  - "templates/*"\n  - drafts/**\n  - "*.tmp"\n',
              'feed_items: 20\nmax_embeds: 10\nmax_embed_size: 512K\n',
              'max_embed_size: 4M\nfeed_items: -1\nmax_embeds: lots\n',
              'max_note_size: 1M\n', 'max_note_size: 2G\nmax_note_size: [1K]\n',
              'csp: "default-src \'self\'"\nframe_src: "https://www.youtube.com"\nrobots: |\n  User-agent: *\n  Disallow: /\n',
              'hosts:\n  Docs.Example.COM.:\n    open: true\n    title: Docs\n    base_url: https://docs.example.com\n  blog.example.org: ~\n  "[::1]:8080": {open: no}\n',
              'hosts: [a, b]\n', 'hosts:\n  "": {}\n  x: 3\n  y: {open: maybe, z: 1}\n',
              'base_url: ftp://x\n', 'base_url: "http://"\n', 'publish: sometimes\nunknown: 1\n',
              'a: &x [1, 2]\nb: *x\ntitle: *x\n', '- just\n- a list\n', 'title: [unclosed\n',
              '%YAML 1.2\n---\ntitle: two\n---\ntitle: docs\n', 'title: "\\u00e9t\\u00e9"\n',
              '{title: flow, language: de, ignore: [x, y]}\n', 'title: !!binary aGVsbG8=\n',
              'title:\n  nested: map\n', '\ttitle: tab\n', 'title: "a\x00b"\n', '']
    config += [fm for fm in (frontmatter(open(p, 'rb').read()) for p in every(all_notes, 25)) if fm]
    write('config', config)

    # http: a target line, then headers as evhttp hands them over
    targets = ['/', '/index', '/folder/note/', '/caf%C3%A9', '/a%20b?q=x+y&limit=5',
               '/api/search?q=%22hello+world%22&offset=10', '/%2e%2e/etc/passwd', '/a//b',
               '/a/./b', '/%00', '/%zz', '/\xc3\x28', '/tags/t?version=3&timeout=30',
               '/x?q=%F0%9F%8E%89', '/docs/a%2Fb', 'http://host/path', '*', '/a#frag']
    headers = ['Host: Docs.Example.COM:8080', 'Accept-Encoding: gzip, deflate, br',
               'Accept-Encoding: gzip;q=0, identity;q=0.5, *;q=0.1', 'Accept-Encoding: x-gzip;q=1.000',
               'If-None-Match: W/"abc", "def"', 'If-None-Match: *',
               'If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT',
               'If-Modified-Since: Sunday, 06-Nov-94 08:49:37 GMT',
               'If-Modified-Since: Sun Nov  6 08:49:37 1994', 'If-Range: "abc"',
               'If-Range: Sun, 06 Nov 1994 08:49:37 GMT', 'If-Range: W/"abc"',
               'Range: bytes=0-99', 'Range: bytes=-500', 'Range: bytes=100-', 'Range: bytes=5-1',
               'Range: bytes=0-0,2-3', 'Range: bytes = 18446744073709551616-',
               'Content-Length: 12', 'Content-Length: +12', 'Content-Length: 1\nContent-Length: 2',
               'Transfer-Encoding: chunked', 'Transfer-Encoding: gzip, chunked',
               'Transfer-Encoding : chunked', 'Connection: close']
    http = []
    for i, t in enumerate(targets):
        hs = [headers[(i * 3 + k) % len(headers)] for k in range(1 + i % 4)]
        http.append((t + '\r\n' + '\r\n'.join(hs) + '\r\n').encode('latin-1'))
    http += [('/\n' + h + '\n').encode() for h in headers]
    write('http', http)

    # sync: URL paths, tags, wait queries, move bodies, manifests
    sha = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
    sync = ['notes/a.md', 'folder/sub/Caf%C3%A9.md', 'Cafe\u0301.md', '.obsidian/x', 'a/../b',
            '/abs', 'a//b', 'a%00b', 'a\\b', 'a%2Fb.md', 'x' * 256, '%ff.md',
            '"%s"' % sha, '"%s"' % sha.upper(), '*', ' * ', '"abc"',
            'version=12&timeout=30', 'timeout=99999999999999999999', 'version=-1',
            '{"from":"a.md","to":"b/c.md"}', '{"to":"x.md","from":"y.md","extra":[1,{"z":null}]}',
            '{"from":"a.md","to":"a.md"}', '{"from":"\\u00e9.md","to":"\\ud83c\\udf89.md"}',
            '{"from":".git/x","to":"b"}',
            '{"version":3,"files":{"a.md":{"sha256":"%s","size":12},"b/c.png":{"sha256":"%s","size":0}}}' % (sha, sha),
            '{"files":{},"version":18446744073709551615}', '{"version":1,"files":{"x":{"size":1}}}']
    sync += [os.path.relpath(p, CORPUS).split('/', 1)[-1] for p in every(all_notes, 12)]
    write('sync', sync)

    # json: what the sync API and the client exchange, and the escapes
    json = sync[20:28] + ['{}', '{"a":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u4e2d"}',
                          '{"a":"\\ud800"}', '{"a":"\\udc00\\ud800"}', '{"a":"\\u0000"}',
                          '{"n":0,"m":01,"f":1.5,"e":1e3,"neg":-0,"big":18446744073709551616}',
                          '{"t":true,"f":false,"n":null,"arr":[[],[{}],"s",1]}',
                          '{"deep":' * 70 + '1' + '}' * 70, '"just a string"', '  {"a" : "b" }  ',
                          '{"query":"x","total":1,"results":[{"url":"/a","title":"A","score":1.23,'
                          '"segments":[{"text":"\\u2026 a ","match":false},{"text":"x","match":true}]}]}']
    write('json', json)

    # search: titles from the vaults, and the query syntax
    search = [t for t in titles(every(all_notes, 25))]
    search += ['café', 'cafe', '"get command"', 'shell*', 'pref* -word', '-only', 'a b c d e f',
               'NEAR(a b)', 'title:x', '^start', 'a AND b OR NOT c', '"unclosed', 'x"y', '***',
               '日本の首都', '🎉', 'Get-ChildItem', '1.2.3', 'e.g.', '   ', '-', '"" ""',
               'lo', 'lor*', 'ΑΘΗΝΑ', 'c:\\\\', 'a' * 300]
    write('search', search)

    # dav: first byte even, an XML body (PROPFIND, PROPPATCH, LOCK); odd, an If header
    xml = ['<?xml version="1.0" encoding="utf-8"?>\n<D:propfind xmlns:D="DAV:"><D:prop>'
           '<D:getetag/><x:a xmlns:x="urn:x"/></D:prop></D:propfind>',
           '<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>',
           '<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><z:v xmlns:z="http://example.com/" '
           'xml:lang="en">value <b>x</b> &amp; y</z:v></D:prop></D:set><D:remove><D:prop>'
           '<q xmlns=""/></D:prop></D:remove></D:propertyupdate>',
           '<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:shared/></D:lockscope><D:locktype>'
           '<D:write/></D:locktype><D:owner><D:href>mailto:a@b</D:href></D:owner></D:lockinfo>',
           '<!DOCTYPE a [<!ENTITY e "x">]><a>&e;</a>', '<a><![CDATA[x]]>\r\n</a>',
           '<bar:foo xmlns:bar=""/>', '<xml:a/>', '<a>' * 40 + '</a>' * 40]
    ifs = ['<http://127.0.0.1/dav/a.md> (<opaquelocktoken:1234> ["abc"]) (Not <DAV:no-lock> ["def"])',
           '(<opaquelocktoken:1234>) (Not <DAV:no-lock>) (["x', '(<DAV:no-lock>)', '</dav/b> (["e"])',
           '(Not [W/"x"])', '()', '<a>']
    write('dav', ['\0' + x for x in xml] + ['\1' + x for x in ifs])

    # live: "prefix\0query" or a query alone (the u= of /_quire/live)
    write('live', ['u=/', 'u=%2Fa%20b', 'x=1&u=/n%C3%A9e', '/docs\0u=/docs/a', '/docs\0u=/docs',
                   '/docs\0u=/docsx', 'u=/a%zz', 'u=/a%00', 'u=a', 'u=', 'u=/a+b&u=/c',
                   'u=/' + 'x' * 5000])


main()
