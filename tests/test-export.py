#!/usr/bin/env python3
"""test-export: `quire export` is the live server, file for file, behind real nginx.

Serves a copy of vault-sample with `quire serve`, exports it with `quire
export --out`, and serves the export with nginx (deploy/nginx-export.conf,
paths and port replaced; nginx runs from a temporary prefix on a free
port and is stopped at the end). Then, for the main site and the routed
custom domain (domains.quire.localhost), every URL the live server
answers (crawled from "/", the feeds, the sitemaps, the explorer data),
every alias (from redirects.map) and a few that do not exist: nginx
answers with the same status, the same Location and the same body.

Then `quire export --incremental` (test 3 of issue 20): after one edit
to a note it writes only the files whose bytes changed (the count is
asserted against the files of the two exports that differ) and the
folder equals a fresh full export byte for byte.

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

CUSTOM = "domains.quire.localhost"
MISSING = ["/no-such-note", "/writing/no-such-note", "/tags/no-such-tag", "/_quire/nothing.css"]


def export(vault, *args):
    r = subprocess.run([QUIRE, "export", "--vault", vault, *args], capture_output=True, text=True)
    check(r.returncode == 0, "quire export %s: %s" % (" ".join(args), r.stderr[-500:]))
    return r.stdout


def start_nginx(tmp, out, port):
    with open(os.path.join(ROOT, "deploy", "nginx-export.conf")) as f:
        conf = f.read()
    conf = conf.replace("/var/www/notes", out).replace("listen 8080", "listen 127.0.0.1:%d" % port)
    conf = conf.replace("/var/run/quire-nginx.pid", os.path.join(tmp, "nginx.pid"))
    conf = conf.replace("/var/log/nginx/quire-error.log", os.path.join(tmp, "error.log"))
    conf = conf.replace("http {", "http {\n    client_body_temp_path %s/t1;\n    proxy_temp_path %s/t2;\n"
                        "    fastcgi_temp_path %s/t3;\n    uwsgi_temp_path %s/t4;\n"
                        "    scgi_temp_path %s/t5;\n" % ((tmp,) * 5), 1)
    if os.geteuid() == 0:
        conf = "user root;\n" + conf
    path = os.path.join(tmp, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    proc = subprocess.Popen(["nginx", "-p", tmp, "-c", path, "-g", "daemon off;"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for _ in range(100):
        try:
            fetch(port, "127.0.0.1", "/")
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("nginx did not start: " + proc.stderr.read())


def aliases(out, base):
    try:
        with open(os.path.join(out, base, "redirects.map")) as f:
            return re.findall(r'^"([^"]*)"', f.read(), re.M)
    except OSError:
        return []


def compare(qport, nport, out):
    n = 0
    for host, base in (("127.0.0.1", ""), (CUSTOM, "_hosts/" + CUSTOM)):
        urls = sorted(set(crawl(qport, host)) | set(aliases(out, base)) | set(MISSING))
        bad = []
        for u in urls:
            live, static = fetch(qport, host, u)[:3], fetch(nport, host, u)[:3]
            if live[0] == 301:
                live, static = live[:2], static[:2]  # nginx says "Moved" in a body of its own
            if live != static:
                bad.append((u, live[:2], static[:2]))
        n += len(urls)
        check(len(urls) > 10, "%s: %d URLs crawled" % (host, len(urls)))
        check(not bad, "%s: nginx differs from quire at %d URLs: %s" % (host, len(bad), bad[:6]))
    print("%d URLs compared, live against the export behind nginx" % n)


NODE_SEARCH = r"""
const fs = require('fs');
const [file, base, query] = process.argv.slice(1);
const src = fs.readFileSync(file, 'utf8');
const block = src.slice(src.indexOf('/* static-search:begin'), src.indexOf('/* static-search:end */'));
const staticSearcher = new Function(block + '; return staticSearcher;')();
staticSearcher(base, (u) => fetch(u))(query, 8).then((r) => console.log(JSON.stringify(r)));
"""


def static_search(nport, out):
    """The theme's static search (its block of quire.js, under node) against nginx."""
    node = shutil.which("node")
    if not node:
        print("node not installed: the static search box is not tested")
        return
    js = os.path.join(ROOT, "theme", "quire.js")
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
    log = export(vault, "--incremental", inc)
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


def main():
    if not shutil.which("nginx"):
        print("nginx not installed: skipped")
        return 77
    tmp = tempfile.mkdtemp(prefix="quire-export-")
    procs = []
    try:
        vault = os.path.join(tmp, "vault")
        shutil.copytree(os.path.join(ROOT, "vault-sample"), vault,
                        ignore=shutil.ignore_patterns(".quire"))
        out = os.path.join(tmp, "out")
        export(vault, "--out", out)
        proc, qport = serve(vault, ["--no-watch"])
        procs.append(proc)
        nport = free_port()
        procs.append(start_nginx(tmp, out, nport))
        compare(qport, nport, out)
        static_search(nport, out)
        incremental(tmp, vault)
    finally:
        stop(procs, 10)
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
