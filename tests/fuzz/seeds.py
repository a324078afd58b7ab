#!/usr/bin/env python3
"""tests/fuzz/seeds.py: writes the seed corpora of tests/fuzz/corpus/<target>/.

    python3 tests/fuzz/seeds.py [CORPUS]     (CORPUS: ../shared/corpus by default)

Seeds are small files a fuzzer starts from, so that it begins inside each
syntax instead of discovering it byte by byte. They come from the real
vaults (notes cut to at most 4 KB, their frontmatter as YAML, their titles
and words as search queries and paths), the spec tests (tests/spec/*.txt,
every example's input), vault-sample/quire.yml, and hand-written cases for
what the vaults do not hold (raw HTTP requests, sync bodies, manifests). The choice
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

    # http: a byte choosing how the bytes arrive (fuzz-http.c: 0 all at once, 1 one
    # at a time, 2-7 pieces up to 2..500 bytes; 8 and up a body limit of 100), a byte
    # seeding the cut points, then raw HTTP/1.1: one request or several pipelined
    targets = ['/', '/index', '/folder/note/', '/caf%C3%A9', '/a%20b?q=x+y&limit=5',
               '/api/search?q=%22hello+world%22&offset=10', '/%2e%2e/etc/passwd', '/a//b',
               '/a/./b', '/%00', '/%zz', '/\xc3\x28', '/tags/t?version=3&timeout=30',
               '/x?q=%F0%9F%8E%89', '/docs/a%2Fb', 'http://host/path', 'https://Host:8080',
               'http://h?x=1', '*', '/a#frag']
    headers = ['Host: Docs.Example.COM:8080', 'Accept-Encoding: gzip, deflate, br',
               'Accept-Encoding: gzip;q=0, identity;q=0.5, *;q=0.1', 'Accept-Encoding: x-gzip;q=1.000',
               'If-None-Match: W/"abc", "def"', 'If-None-Match: *', 'If-None-Match: "abc"',
               'If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT',
               'If-Modified-Since: Sunday, 06-Nov-94 08:49:37 GMT',
               'If-Modified-Since: Sun Nov  6 08:49:37 1994', 'If-Range: "abc"',
               'If-Range: Sun, 06 Nov 1994 08:49:37 GMT', 'If-Range: W/"abc"',
               'Range: bytes=0-99', 'Range: bytes=-500', 'Range: bytes=100-', 'Range: bytes=5-1',
               'Range: bytes=0-0,2-3', 'Range: bytes = 18446744073709551616-',
               'Connection: close', 'Connection: keep-alive', 'Host: [::1]:80', 'Host:',
               'Authorization: Bearer x', 'User-Agent: fuzz/1.0\t ', 'X-Empty:']
    methods = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'TRACE', 'PATCH', 'PROPFIND',
               'PROPPATCH', 'MKCOL', 'COPY', 'MOVE', 'LOCK', 'UNLOCK', 'REPORT', 'SEARCH',
               'MKCALENDAR', 'ACL', 'BIND', 'PURGE', 'BREW', 'QUERY']

    def req(method, target, hs, body=b'', version='1.1'):
        head = '%s %s HTTP/%s\r\n' % (method, target, version) + ''.join(h + '\r\n' for h in hs)
        return head.encode('latin-1') + b'\r\n' + body

    http = []
    for i, t in enumerate(targets):
        hs = ['Host: example.com'] + [headers[(i * 3 + k) % len(headers)] for k in range(1 + i % 4)]
        http.append(bytes([i % 8, i]) + req(methods[i % 3], t, hs))
    for i, m in enumerate(methods):
        body = b'<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>' if i % 2 else b''
        hs = ['Host: h', 'Depth: 1', 'Destination: /dav/b.md', 'Content-Length: %d' % len(body)]
        http.append(bytes([(i * 5) % 8, 7 * i]) + req(m, '/dav/a%20b.md', hs, body))
    chunked = ['Host: h', 'Transfer-Encoding: chunked']
    http += [
        b'\x00\x00' + req('POST', '/api/sync/a.md', chunked, b'5\r\nhello\r\n0\r\n\r\n'),
        b'\x01\x07' + req('PUT', '/dav/x', chunked,
                          b'3;ext=1;q="a b"\r\nabc\r\nA\r\n0123456789\r\n0\r\n'
                          b'Trailer-One: 1\r\nX-Sum: abc\r\n\r\n'),
        b'\x05\x21' + req('POST', '/', chunked + ['Expect: 100-continue'],
                          b'1\r\nx\r\n0\r\n\r\n') + req('GET', '/after', ['Host: h']),
        b'\x0c\x01' + req('PUT', '/big', ['Host: h', 'Content-Length: 150'], b'y' * 150),
        b'\x0b\x02' + req('PUT', '/big', chunked, b'64\r\n' + b'z' * 100 + b'\r\n1\r\nz\r\n0\r\n\r\n'),
        b'\x00\x00' + req('PUT', '/e', ['Host: h', 'Content-Length: 4', 'Expect: 100-continue'], b'abcd'),
        b'\x02\x03' + req('PUT', '/e', ['Host: h', 'Content-Length: 0', 'Expect: 100-Continue']),
        b'\x06\x04' + b''.join(req(m, '/p%d' % k, ['Host: h', 'Content-Length: 2'], b'ok')
                               for k, m in enumerate(['POST', 'PUT', 'PATCH'])) +
        req('GET', '/last', ['Host: h', 'Connection: close']) + req('GET', '/never', ['Host: h']),
        b'\x07\x05' + req('GET', '/1', ['Host: h']) + req('HEAD', '/2', ['Host: h']) +
        req('GET', '/3', ['Host: h'], version='1.0') + req('GET', '/4', ['Host: h']),
        b'\x00\x00' + req('GET', '/ka', ['Host: h', 'Connection: keep-alive'], version='1.0') +
        req('GET', '/ka2', ['Host: h']),
        b'\x00\x00\r\n\r\n' + req('GET', '/after-empty-lines', ['Host: h']),
        b'\x00\x00' + req('GET', 'http://Example.com:80/a%2fb?q=1', ['Host: other']),
        b'\x00\x00' + req('OPTIONS', '*', ['Host: h']),
        b'\x00\x00' + req('CONNECT', 'example.com:443', ['Host: example.com:443']) + b'\x16\x03\x01',
        b'\x00\x00' + req('GET', '/ws', ['Host: h', 'Connection: Upgrade', 'Upgrade: websocket']) + b'raw',
        b'\x00\x00' + req('GET', '/fold', ['Host: h', 'X-Fold: a', ' b']),
        b'\x00\x00GET /bare-lf HTTP/1.1\nHost: h\n\n',
        b'\x00\x00GET /bare-lf2 HTTP/1.1\r\nHost: h\nX: y\r\n\r\n',
        b'\x00\x00' + req('POST', '/cl2', ['Host: h', 'Content-Length: 3', 'Content-Length: 3'], b'abc'),
        b'\x00\x00' + req('POST', '/cl2', ['Host: h', 'Content-Length: 1', 'Content-Length: 2'], b'ab'),
        b'\x00\x00' + req('POST', '/cl', ['Host: h', 'Content-Length: 1, 1'], b'a'),
        b'\x00\x00' + req('POST', '/cl', ['Host: h', 'Content-Length: +12'], b'a' * 12),
        b'\x00\x00' + req('POST', '/cl', ['Host: h', 'Content-Length: 18446744073709551616']),
        b'\x00\x00' + req('POST', '/tecl', ['Host: h', 'Transfer-Encoding: chunked',
                                            'Content-Length: 5'], b'0\r\n\r\n'),
        b'\x00\x00' + req('POST', '/te', ['Host: h', 'Transfer-Encoding: gzip, chunked'], b'0\r\n\r\n'),
        b'\x00\x00' + req('POST', '/te', ['Host: h', 'Transfer-Encoding: chunked',
                                          'Transfer-Encoding: chunked'], b'0\r\n\r\n'),
        b'\x00\x00' + req('POST', '/te', ['Host: h', 'Transfer-Encoding: gzip'], b'x'),
        b'\x00\x00' + req('POST', '/te10', ['Host: h', 'Transfer-Encoding: chunked'],
                            b'0\r\n\r\n', version='1.0'),
        b'\x00\x00' + req('POST', '/ws', ['Host: h', 'Transfer-Encoding : chunked'], b'0\r\n\r\n'),
        b'\x00\x00' + req('GET', '/two-hosts', ['Host: a', 'Host: b']),
        b'\x00\x00' + req('GET', '/host', ['Host: a b', 'X-Empty:', 'Accept-Encoding: gzip']),
        b'\x00\x00' + req('GET', '/v', ['Host: h'], version='2.0'),
        b'\x00\x00' + req('GET', '/v', ['Host: h'], version='0.9'),
        b'\x00\x00' + req('FROB', '/m', ['Host: h']),
        b'\x00\x00' + req('get', '/lower', ['Host: h']),
        b'\x03\x09' + req('GET', '/many', ['X-%d: %d' % (k, k) for k in range(101)]),
        b'\x06\x0a' + req('GET', '/long', ['Host: h', 'X-Long: ' + 'v' * 8300]),
        b'\x00\x00' + req('GET', '/' + 'u' * 8300, ['Host: h']),
        # what llhttp 8.1.0 took and parse.c refuses: a CR and another byte as a line end
        b'\x00\x00GET /a HTTP/1.1\r\nHost: h\r\n\rX' + req('GET', '/next', ['Host: h']),
        b'\x01\x00' + req('POST', '/c', chunked, b'5\rXhello\r\n0\r\n\r\n'),
        b'\x00\x00' + req('POST', '/c', chunked, b'3\r\nabc\rX0\r\n\r\n'),
        b'\x02\x00' + req('POST', '/c', chunked, b'0\rX') + req('GET', '/next', ['Host: h']),
        b'\x00\x00POST /a HTTP/1.1\r\nHost: h\r\nX:\rYContent-Length: 5\r\n\r\nabcde' +
        req('GET', '/next', ['Host: h']),
        b'\x00\x00' + req('POST', '/c', chunked, b'0\r\nX:\r\r\n') + req('GET', '/next', ['Host: h']),
        # and a CONNECT with no target
        b'\x00\x00CONNECT \n\r\n',
    ]
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
