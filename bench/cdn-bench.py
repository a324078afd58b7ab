#!/usr/bin/env python3
"""cdn-bench: purges per edit, and incremental export against a full one.

    bench/cdn-bench.py QUIRE VAULT [--edits N] [--json FILE]

VAULT is copied (never changed). Two parts:

  purges   `quire serve` with the sync API and three purgers in quire.yml,
           each a counting HTTP sink of this script: Varnish xkey, Varnish
           PURGE per URL, and the webhook. N edits (default 40) through the
           sync API, cycling through kinds: a body edit, a retitle, a new
           tag, a new link to another note; after each, the keys, URLs and
           requests each purger received once the purger is idle. Prints
           median and max per kind of purger.
  export   `quire export --out` of the vault into an empty folder (wall
           time, files), then one body edit and `quire export --incremental`
           into the same folder (wall time, files written), 3 rounds each.
"""
import http.server
import json
import os
import random
import re
import shutil
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
from quiretest import fetch, free_port  # noqa: E402

TOKEN = "cdn-bench-token-0123456789abcdef"


class Sink(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def __init__(self):
        self.requests = 0
        self.lock = threading.Lock()

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def answer(h):
                n = int(h.headers.get("Content-Length") or 0)
                if n:
                    h.rfile.read(n)
                with self.lock:
                    self.requests += 1
                h.send_response(200)
                h.send_header("Content-Length", "0")
                h.end_headers()
            do_PURGE = do_POST = answer
        super().__init__(("127.0.0.1", 0), H)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def metric(port, name):
    body = fetch(port, "127.0.0.1", "/metrics")[2].decode()
    m = re.search(r"^%s (\d+)" % re.escape(name), body, re.M)
    return int(m.group(1)) if m else 0


def settle(port, version):
    fetch(port, "127.0.0.1", "/api/v1/wait?version=%d&timeout=30000" % version,
          headers={"Authorization": "Bearer " + TOKEN})
    while metric(port, "quire_purge_pending"):
        time.sleep(0.01)


def put(port, rel, data):
    st, _, body, _ = fetch(port, "127.0.0.1", "/api/v1/files/" + rel, "PUT", data,
                           {"Authorization": "Bearer " + TOKEN})
    if st not in (200, 201):
        raise SystemExit("PUT %s: %d %r" % (rel, st, body[:200]))
    return json.loads(body)["version"]


def edit(src, kind, other, i):
    if kind == "body":
        return src + b"\n\nBenchmark edit %d.\n" % i
    if kind == "retitle" and src.startswith(b"---\n") and b"\ntitle:" in src:
        return re.sub(rb"\ntitle:[^\n]*", b"\ntitle: Retitled %d" % i, src, count=1)
    if kind == "retitle":
        return b"---\ntitle: Retitled %d\n---\n" % i + src
    if kind == "tag":
        return src + b"\n\n#benchtag%d\n" % (i % 5)
    return src + b"\n\nSee [[%s]].\n" % other.encode()


def purges(quire, vault, edits):
    sinks = [Sink() for _ in range(3)]
    port = free_port()
    with open(os.path.join(vault, "quire.yml"), "a") as f:
        f.write("\npurge:\n  - varnish: http://127.0.0.1:%d\n"
                "  - varnish: http://127.0.0.1:%d\n    method: purge\n"
                "  - webhook: http://127.0.0.1:%d/purge\n" % tuple(s.server_port for s in sinks))
    proc = subprocess.Popen([quire, "serve", "--vault", vault, "--listen", "127.0.0.1:%d" % port,
                             "--no-watch", "--threads", "1"], env=dict(os.environ, QUIRE_TOKEN=TOKEN),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in proc.stdout:
        if "serving" in line:
            break
    rows = []
    try:
        settle(port, 0)
        time.sleep(2)
        notes = sorted(os.path.relpath(os.path.join(d, f), vault)
                       for d, _, fs in os.walk(vault) for f in fs
                       if f.endswith(".md") and "/." not in d)
        rnd = random.Random(1)
        kinds = ["body", "retitle", "tag", "link"]
        for i in range(edits):
            rel = rnd.choice(notes)
            other = os.path.splitext(os.path.basename(rnd.choice(notes)))[0]
            with open(os.path.join(vault, rel), "rb") as f:
                src = f.read()
            before = [s.requests for s in sinks]
            k0 = metric(port, "quire_purge_keys_total")
            u0 = metric(port, "quire_purge_urls_total")
            settle(port, put(port, rel, edit(src, kinds[i % 4], other, i)))
            time.sleep(0.05)
            rows.append({"kind": kinds[i % 4],
                         "keys": metric(port, "quire_purge_keys_total") - k0,
                         "urls": metric(port, "quire_purge_urls_total") - u0,
                         "xkey": sinks[0].requests - before[0],
                         "purge": sinks[1].requests - before[1],
                         "webhook": sinks[2].requests - before[2]})
    finally:
        proc.terminate()
        proc.wait()
    return rows


def timed(cmd):
    t = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(" ".join(cmd) + ": " + r.stderr[-500:])
    return time.monotonic() - t, r


def export(quire, vault, tmp):
    out = os.path.join(tmp, "out")
    rows = []
    notes = sorted(os.path.join(d, f) for d, _, fs in os.walk(vault) for f in fs if f.endswith(".md"))
    for i in range(3):
        shutil.rmtree(out, ignore_errors=True)
        full, r = timed([quire, "export", "--vault", vault, "--out", out])
        files = int(re.search(r"(\d+) files written", r.stderr).group(1))
        with open(notes[i * 97], "ab") as f:
            f.write(b"\n\nIncremental benchmark edit %d.\n" % i)
        inc, r = timed([quire, "export", "--vault", vault, "--incremental", out])
        written = int(re.search(r"(\d+) files written", r.stderr).group(1))
        rows.append({"full_s": full, "files": files, "incremental_s": inc, "written": written})
    return rows


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        raise SystemExit(__doc__)
    quire, src = args[0], args[1]
    edits = int(args[args.index("--edits") + 1]) if "--edits" in args else 40
    tmp = tempfile.mkdtemp(prefix="cdn-bench-")
    try:
        vault = os.path.join(tmp, "vault")
        shutil.copytree(src, vault, ignore=shutil.ignore_patterns(".quire"))
        p = purges(quire, vault, edits)
        for col in ("keys", "urls", "xkey", "purge", "webhook"):
            v = [r[col] for r in p]
            print("purge %-8s per edit: median %g, max %d" % (col, statistics.median(v), max(v)))
        for kind in ("body", "retitle", "tag", "link"):
            v = [r for r in p if r["kind"] == kind]
            print("  %-8s keys median %g max %d; urls median %g max %d" % (
                kind, statistics.median(r["keys"] for r in v), max(r["keys"] for r in v),
                statistics.median(r["urls"] for r in v), max(r["urls"] for r in v)))
        e = export(quire, vault, tmp)
        for r in e:
            print("export: full %.2f s (%d files); incremental after one edit %.2f s (%d written)" %
                  (r["full_s"], r["files"], r["incremental_s"], r["written"]))
        if "--json" in args:
            with open(args[args.index("--json") + 1], "w") as f:
                json.dump({"purges": p, "export": e}, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
