"""quiretest: what the Python system tests share (tests/test-*.py).

check() counts like the C tests' CHECK and summary() prints their last
line ("N passed, N failed"); serve() starts the real `$QUIRE_BIN serve`
on a vault, on a port of its own, and returns once it listens (and, with
search_ready, once a search for that word finds a note); sample_vault()
copies vault-sample for a test that writes into it.
"""
import gzip
import http.client
import os
import re
import shutil
import subprocess
import sys
import socket
import time
import urllib.parse
import urllib.request

QUIRE = os.environ.get("QUIRE_BIN", "build/quire")
ROOT = os.environ.get("QUIRE_SOURCE_ROOT", ".")

_counts = {"passed": 0, "failed": 0, "skipped": 0}


def check(cond, what):
    if cond:
        _counts["passed"] += 1
    else:
        _counts["failed"] += 1
        print("  FAILED: " + what, file=sys.stderr)


def skip(what):
    """A part that cannot run here (the shared corpus is not beside the
    checkout, a tool is missing): one line saying what it needs and why."""
    _counts["skipped"] += 1
    print("  skipped: " + what, file=sys.stderr)


def summary():
    """Prints the C tests' last lines; returns the exit status: 1 when a
    check failed, 77 (meson's "skipped") when all that ran was skipped."""
    if _counts["skipped"]:
        print("%d skipped" % _counts["skipped"])
    print("%d passed, %d failed" % (_counts["passed"], _counts["failed"]))
    if _counts["failed"]:
        return 1
    return 77 if _counts["skipped"] and not _counts["passed"] else 0


def stop(procs, timeout=20):
    """Terminates each process (None is skipped), killing one that does not exit in time."""
    for p in procs:
        if p is None:
            continue
        p.terminate()
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()


def log_tail_if_failed(path, lines=20):
    """After a failed check, prints the last lines of a server's log."""
    if not _counts["failed"]:
        return
    try:
        with open(path) as fh:
            tail = fh.readlines()[-lines:]
        print("  the server's log, last lines:\n    " + "    ".join(tail), file=sys.stderr)
    except OSError:
        pass


def listening_port(proc):
    """The port `quire serve` says it listens on (its stdout, read to that line)."""
    for line in proc.stdout:
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if m:
            return int(m.group(1))
    proc.kill()
    raise SystemExit("quire serve did not say where it listens")


def serve(vault, extra=(), search_ready=None, stderr=subprocess.DEVNULL, env=None):
    proc = subprocess.Popen(
        [QUIRE, "serve", "--vault", vault, "--listen", "127.0.0.1:0", "--threads", "1",
         *extra], stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    port = listening_port(proc)
    # the search index fills after the first snapshot
    for _ in range(100 if search_ready else 0):
        try:
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/api/search?q={search_ready}") as r:
                if b'"url"' in r.read():
                    break
        except OSError:
            pass
        time.sleep(0.1)
    return proc, port


def sample_vault(tmp, token):
    """A copy of vault-sample in tmp/vault (without its .quire) and token in
    tmp/token; returns the vault's path."""
    vault = os.path.join(tmp, "vault")
    shutil.copytree(os.path.join(ROOT, "vault-sample"), vault,
                    ignore=shutil.ignore_patterns(".quire"))
    with open(os.path.join(tmp, "token"), "w") as f:
        f.write(token + "\n")
    return vault


# Where a crawl starts besides the links: what no page links to.
EXTRA = ["/", "/feed.xml", "/atom.xml", "/rss.xml", "/sitemap.xml", "/robots.txt",
         "/_quire/tree.json"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def fetch(port, host, path, method="GET", body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    h = {"Host": host}
    h.update(headers or {})
    c.request(method, urllib.parse.quote(path, safe="/%?=&:@"), body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    if r.getheader("Content-Encoding") == "gzip":
        data = gzip.decompress(data)
    out = (r.status, r.getheader("Location"), data, r.getheader("X-Cache"))
    c.close()
    return out


def links(body):
    for m in re.finditer(rb'(?:href|src)="(/[^"#?]*)', body):
        u = urllib.parse.unquote(m.group(1).decode())
        if not u.startswith("//"):
            yield u
    for m in re.finditer(rb'<loc>https?://[^/<]+(/[^<#?]*)</loc>', body):
        yield urllib.parse.unquote(m.group(1).decode())
    for m in re.finditer(rb'"(?:url|href)"\s*:\s*"(/[^"#?]*)"', body):
        yield urllib.parse.unquote(m.group(1).decode())


def crawl(port, host):
    seen, todo = set(), list(EXTRA)
    while todo and len(seen) < 3000:
        u = todo.pop()
        if u in seen or u.startswith("/api/"):
            continue
        seen.add(u)
        status, _, body, _ = fetch(port, host, u)
        if status == 200:
            todo.extend(links(body))
    # what quire answers with no-store (search) is not for a cache
    return sorted(u for u in seen if not no_store(port, host, u))


def no_store(port, host, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("HEAD", urllib.parse.quote(path), headers={"Host": host})
    r = c.getresponse()
    r.read()
    c.close()
    return "no-store" in (r.getheader("Cache-Control") or "")
