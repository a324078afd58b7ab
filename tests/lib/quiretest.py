"""quiretest: what the Python system tests share (tests/test-*.py).

check() counts like the C tests' CHECK and summary() prints their last
line ("N passed, N failed"); serve() starts the real `$QUIRE_BIN serve`
on a vault, on a port of its own, and returns once it listens (and, with
search_ready, once a search for that word finds a note).
"""
import os
import re
import subprocess
import sys
import time
import urllib.request

QUIRE = os.environ.get("QUIRE_BIN", "build/quire")
ROOT = os.environ.get("QUIRE_SOURCE_ROOT", ".")

_counts = {"passed": 0, "failed": 0}


def check(cond, what):
    if cond:
        _counts["passed"] += 1
    else:
        _counts["failed"] += 1
        print("  FAILED: " + what, file=sys.stderr)


def summary():
    """Prints the C tests' last line; returns the exit status."""
    print("%d passed, %d failed" % (_counts["passed"], _counts["failed"]))
    return 1 if _counts["failed"] else 0


def serve(vault, extra=(), search_ready=None):
    proc = subprocess.Popen(
        [QUIRE, "serve", "--vault", vault, "--listen", "127.0.0.1:0", "--threads", "1",
         *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = None
    for line in proc.stdout:
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    if port is None:
        proc.kill()
        raise SystemExit("quire serve did not say where it listens")
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
