#!/usr/bin/env python3
"""test-export: `quire export` is the live server, file for file, behind real nginx.

For each vault (a copy): vault-sample as it is (no base_url, an open
custom domain); vault-sample with --base-url http://notes.example.com and
its custom domain made strict (feeds, sitemaps, www. redirects, links
across hosts); and the real vaults pwsh-docs and obsidian-tasks-docs
(../shared/corpus; without it they are skipped, saying so): serve it with
`quire serve`, export it with `quire export --out`, and serve the export
with real nginx through deploy/nginx-export.conf as it is but for the
export's path and the port (included in an http block like Debian's
nginx.conf; nginx runs from a temporary prefix and is stopped after).
Then for the main site, every custom domain hosts.map names, and www. of
each: every URL the live server answers (crawled from "/", the feeds, the
sitemaps, the explorer data: every page, tag and folder listing,
attachment and theme file), every redirect of the site's redirects.map,
a few that do not exist, and the URL of every file the export wrote for
the site (so every page and attachment, whether the crawl reached it or
not): nginx answers with the same status, the same Location and the same
body. The one exception is made on purpose: an alias longer than an
nginx map key holds, which quire export leaves out of redirects.map
(saying so) and nginx answers with its HTML redirect page.

On vault-sample, the theme's static search box finds notes through nginx,
and `quire export --incremental` (test 3 of issue 20): after one edit to
a note it writes only the files whose bytes changed (the count is
asserted against the files of the two exports that differ) and the folder
equals a fresh full export byte for byte.

Skips (77) when nginx is not installed.
"""
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from quiretest import QUIRE, ROOT, check, crawl, fetch, free_port, serve, stop, summary  # noqa: E402

CORPUS = os.environ.get("QUIRE_CORPUS", os.path.join(ROOT, "..", "shared", "corpus"))
CUSTOM = "domains.quire.localhost"
MISSING = ["/no-such-note", "/writing/no-such-note", "/tags/no-such-tag", "/_quire/nothing.css",
           "/_hosts/", "/redirects.map", "/hosts.map", "/.quire-export"]

# What Debian's /etc/nginx/nginx.conf has around the files of conf.d/, with
# the paths of a server that is not the machine's.
NGINX_CONF = """user {user};
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{
}}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    client_body_temp_path {tmp}/t1;
    proxy_temp_path {tmp}/t2;
    fastcgi_temp_path {tmp}/t3;
    uwsgi_temp_path {tmp}/t4;
    scgi_temp_path {tmp}/t5;
    include {conf};
}}
"""


def export(vault, *args):
    r = subprocess.run([QUIRE, "export", "--vault", vault, *args], capture_output=True, text=True)
    check(r.returncode == 0, "quire export %s: %s" % (" ".join(args), r.stderr[-500:]))
    return r


def start_nginx(tmp, out, port):
    with open(os.path.join(ROOT, "deploy", "nginx-export.conf")) as f:
        conf = f.read()
    # the file as shipped, but for where the export is and the port
    conf = conf.replace("/var/www/notes", out).replace("listen 8080 ", "listen 127.0.0.1:%d " % port)
    with open(os.path.join(tmp, "quire-export.conf"), "w") as f:
        f.write(conf)
    path = os.path.join(tmp, "nginx.conf")
    with open(path, "w") as f:
        f.write(NGINX_CONF.format(tmp=tmp, conf=os.path.join(tmp, "quire-export.conf"),
                                  user="root" if os.geteuid() == 0 else "nobody"))
    proc = subprocess.Popen(["nginx", "-p", tmp, "-c", path, "-g", "daemon off;"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for _ in range(100):
        try:
            fetch(port, "127.0.0.1", "/")
            return proc
        except OSError:
            time.sleep(0.05)
            if proc.poll() is not None:
                break
    proc.kill()
    check(False, "nginx starts with deploy/nginx-export.conf: " + proc.stderr.read()[-800:])
    return None


def map_entries(path):
    """The "key" "value" lines of an nginx map file quire export wrote."""
    try:
        with open(path) as f:
            return re.findall(r'^"((?:[^"\\]|\\.)*)" "((?:[^"\\]|\\.)*)";$', f.read(), re.M)
    except OSError:
        return []


def aliases(out, base):
    return [k for k, _ in map_entries(os.path.join(out, base, "redirects.map"))]


EXPORT_ONLY = {".quire-export", "hosts.map", "redirects.map", "redirects-hosts.map", "_redirects",
               "404.html"}


def exported_urls(out, base):
    """
    The URL of every file the export wrote for a site: pages (<url>.html,
    <url>/index.html), attachments, theme. (nginx also answers a page at
    its file's name, <url>.html, where quire serve has no such URL: the
    file names are not compared.)
    """
    root, urls = os.path.join(out, base), set()
    for d, dirs, names in os.walk(root):
        rel = os.path.relpath(d, root)
        if rel == ".":
            dirs[:] = [x for x in dirs if x != "_hosts"]
        if rel.replace(os.sep, "/").startswith("_quire/search"):
            continue  # the static search index: the export's own (the server has /api/search)
        for n in names:
            path = "/" + os.path.normpath(os.path.join(rel, n)).replace(os.sep, "/")
            if n.endswith(".gz") or (rel == "." and n in EXPORT_ONLY):
                continue
            if n == "index.html":
                urls.add(path[:-len("index.html")])
            elif n.endswith(".html"):
                urls.add(path[:-len(".html")])
            else:
                urls.add(path)
    return urls


def sites(out, main):
    """(Host, folder under the export) of every site, and the www. names and their origins."""
    hosts, www = [(h, "") for h in main], []
    for name, value in map_entries(os.path.join(out, "hosts.map")):
        if value.startswith("/_hosts/"):
            hosts.append((name, value[1:]))
        else:
            www.append((name, value))
    return hosts, www


def compare(qport, nport, out, main):
    hosts, www = sites(out, main)
    n = 0
    for host, base in hosts:
        urls = sorted((set(crawl(qport, host)) | set(aliases(out, base)) | set(MISSING) |
                       exported_urls(out, base)) - {LONG})  # a page there, not a 301
        bad = []
        for u in urls:
            live, static = fetch(qport, host, u)[:3], fetch(nport, host, u)[:3]
            if live[0] == 301:
                live, static = live[:2], static[:2]  # nginx says "Moved" in a body of its own
            if live != static:
                bad.append((u, live[:2], static[:2]))
        n += len(urls)
        check(len(urls) > 10, "%s: %d URLs crawled" % (host, len(urls)))
        check(not bad, "%s: nginx differs from quire at %d of %d URLs: %s" %
              (host, len(bad), len(urls), bad[:6]))
    for host, origin in www:
        for u in ("/", "/some/page", "/search?q=a"):
            live, static = fetch(qport, host, u)[:2], fetch(nport, host, u)[:2]
            n += 1
            check(live == static and live == (301, origin + u),
                  "%s%s: 301 to %s%s from both (quire %s, nginx %s)" % (host, u, origin, u, live,
                                                                      static))
    print("%d URLs compared on %d sites, live against the export behind nginx" %
          (n, len(hosts) + len(www)))
    return n


NODE_SEARCH = r"""
const fs = require('fs');
const [file, base, query] = process.argv.slice(1);
const src = fs.readFileSync(file, 'utf8');
const block = src.slice(src.indexOf('/* static-search:begin'), src.indexOf('/* static-search:end */'));
const staticSearcher = new Function(block + '; return staticSearcher;')();
staticSearcher(base, (u) => fetch(u))(query, 8).then((r) => console.log(JSON.stringify(r)));
"""


def static_search(nport, out):
    """The theme's static search (its block of theme/js/search.js, under node) against nginx."""
    node = shutil.which("node")
    if not node:
        print("node not installed: the static search box is not tested")
        return
    js = os.path.join(ROOT, "theme", "js", "search.js")
    for q, want in (("wikilink", "/writing/links"), ("Wikil", "/writing/links"),
                    ("embed wikilink", "/writing/embeds"), ("callout", "/writing/callouts")):
        r = subprocess.run([node, "-e", NODE_SEARCH, js, "http://127.0.0.1:%d" % nport, q],
                           capture_output=True, text=True, timeout=60)
        urls = [x["url"] for x in json.loads(r.stdout or "{}").get("results", [])] \
            if r.returncode == 0 else []
        check(want in urls, "static search for %r finds %s (got %s; %s)" %
              (q, want, urls, r.stderr[-300:]))
    st, _, body, _ = fetch(nport, CUSTOM, "/_quire/search/t/%s.json" % b"gu".hex())
    check(st == 200 and b"/guide" in body, "the custom domain has its own search index")


def tree(root):
    files = set()
    for d, _, names in os.walk(root):
        files |= {os.path.relpath(os.path.join(d, x), root) for x in names}
    return files


def incremental(tmp, vault):
    inc, full = os.path.join(tmp, "inc"), os.path.join(tmp, "full")
    export(vault, "--out", inc)
    before = os.path.join(tmp, "before")
    shutil.copytree(inc, before)
    note = os.path.join(vault, "writing", "links.md")
    with open(note, "rb") as f:
        src = f.read()
    with open(note, "wb") as f:
        f.write(src.replace(b"title: Links\n", b"title: Links, retitled\n", 1))
    log = export(vault, "--incremental", inc).stdout
    export(vault, "--out", full)
    written = [x[6:] for x in log.splitlines() if x.startswith("write ")]
    a, b = tree(inc), tree(full)
    check(a == b, "incremental and full exports hold the same files (%s)" % sorted(a ^ b)[:5])
    same = filecmp.cmpfiles(inc, full, sorted(a & b), shallow=False)
    check(not same[1] and not same[2], "incremental equals full byte for byte: %s" % same[1][:5])
    old = tree(before)
    changed = {x for x in b if x != ".quire-export" and (x not in old or not filecmp.cmp(
        os.path.join(before, x), os.path.join(full, x), shallow=False))}
    check(set(written) == changed, "written exactly the %d files that changed (wrote %d: %s)" %
          (len(changed), len(written), sorted(set(written) ^ changed)[:5]))
    check(0 < len(written) < len(b) / 4, "one edit rewrote %d of %d files" % (len(written), len(b)))
    print("incremental export after one edit: %d of %d files written" % (len(written), len(b)))


DEEP = "/".join(["d" * 200, "e" * 200])
LONG = "/%s/%s" % (DEEP, "x" * 100)  # 503 bytes, in segments a file system takes


def strict_with_base_url(vault):
    """
    vault-sample as a site on its own address, its custom domain strict,
    and an alias too long for an nginx map key (quire export leaves it out
    of redirects.map, saying so, so that nginx still starts).
    """
    path = os.path.join(vault, "quire.yml")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("{title: quire on its own domain, open: true}",
                             "{title: quire on its own domain}"))
    os.makedirs(os.path.join(vault, DEEP))
    with open(os.path.join(vault, DEEP, "long-alias.md"), "w") as f:
        f.write("---\naliases: [%s]\n---\nA note with a long alias.\n" % LONG.rsplit("/", 1)[1])


def vaults():
    """(name, source, quire's options, change to the copy, Host names of the main site)."""
    yield "vault-sample", os.path.join(ROOT, "vault-sample"), [], None, ["127.0.0.1"]
    yield ("vault-sample with base_url", os.path.join(ROOT, "vault-sample"),
           ["--base-url", "http://notes.example.com"], strict_with_base_url,
           ["127.0.0.1", "notes.example.com"])
    for name in ("pwsh-docs", "obsidian-tasks-docs"):
        src = os.path.join(CORPUS, name)
        if os.path.isdir(src):
            yield name, src, [], None, ["127.0.0.1"]
        else:
            print("  skipped: %s needs ../shared/corpus (a real vault whose export must work "
                  "behind the shipped nginx config)" % name, file=sys.stderr)


def one(tmp, name, src, args, change, main):
    work = os.path.join(tmp, re.sub(r"\W+", "-", name))
    vault, out = os.path.join(work, "vault"), os.path.join(work, "out")
    shutil.copytree(src, vault, ignore=shutil.ignore_patterns(".quire"))
    if change:
        change(vault)
    procs = []
    try:
        r = export(vault, "--out", out, *args)
        if change is strict_with_base_url:
            check("%s is longer than an nginx map key" % LONG in r.stderr and
                  LONG not in open(os.path.join(out, "redirects.map")).read() and
                  os.path.exists(os.path.join(out, LONG[1:] + ".html")),
                  "a %d-byte alias: left out of redirects.map with a warning, its page written"
                  % len(LONG))
        proc, qport = serve(vault, ["--no-watch", *args])
        procs.append(proc)
        nport = free_port()
        nginx = start_nginx(work, out, nport)
        if not nginx:
            return
        procs.append(nginx)
        print("%s:" % name)
        compare(qport, nport, out, main)
        if name == "vault-sample":
            static_search(nport, out)
            incremental(work, vault)
    finally:
        stop(procs, 10)
        shutil.rmtree(work, ignore_errors=True)


def main():
    if not shutil.which("nginx"):
        print("nginx not installed: skipped")
        return 77
    tmp = tempfile.mkdtemp(prefix="quire-export-")
    if os.geteuid() != 0:
        os.chmod(tmp, 0o755)
    try:
        for name, src, args, change, main_hosts in vaults():
            one(tmp, name, src, args, change, main_hosts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
