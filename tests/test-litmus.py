#!/usr/bin/env python3
"""test-litmus: Debian's litmus (the WebDAV conformance suite) against /dav/.

Starts `$QUIRE_BIN serve` on a temporary vault with a token, runs the
suites basic, copymove, props, locks and http one by one (litmus's own
binaries through its wrapper, TESTS=<suite>), and checks that each ran
its tests with none failed; litmus's output is printed for a suite that
failed. The server must then stop cleanly (exit 0: under the sanitizers,
no leak and no report). Exit 77 (skipped) without litmus.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from quiretest import QUIRE, check, summary  # noqa: E402

SUITES = ["basic", "copymove", "props", "locks", "http"]
TOKEN = "litmus-token-0123456789abcdef"


def start(vault, token_file, log):
    proc = subprocess.Popen(
        [QUIRE, "serve", "--vault", vault, "--listen", "127.0.0.1:0", "--threads", "2",
         "--token-file", token_file, "--no-watch"],
        stdout=subprocess.PIPE, stderr=log, text=True)
    for line in proc.stdout:
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if m:
            return proc, int(m.group(1))
    proc.kill()
    raise SystemExit("quire serve did not say where it listens")


def main():
    if not shutil.which("litmus"):
        print("litmus is not installed (scripts/setup installs it): skipped")
        return 77
    with tempfile.TemporaryDirectory(prefix="quire-litmus-") as tmp:
        vault = os.path.join(tmp, "vault")
        os.makedirs(vault)
        with open(os.path.join(vault, "index.md"), "w") as f:
            f.write("# Litmus\n")
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        log = open(os.path.join(tmp, "serve.log"), "w+")
        proc, port = start(vault, token_file, log)
        url = "http://127.0.0.1:%d/dav/" % port
        try:
            for suite in SUITES:
                env = dict(os.environ, TESTS=suite)
                r = subprocess.run(["litmus", url, "user", TOKEN], cwd=tmp, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, timeout=300)
                m = re.search(r"summary for `%s': of (\d+) tests run: (\d+) passed, (\d+) failed"
                              % suite, r.stdout)
                warnings = len(re.findall(r"WARNING:", r.stdout))
                ok = bool(m) and int(m.group(3)) == 0 and int(m.group(1)) > 0
                print("%-8s %s%s" % (suite, m.group(0) if m else "no summary",
                                     ", %d warnings" % warnings if warnings else ""))
                if not ok:
                    print(r.stdout)
                check(ok, "litmus %s: no failure" % suite)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = -1
            log.seek(0)
            out = log.read()
            check(rc == 0, "quire serve stops cleanly (exit %d)" % rc)
            if rc != 0:
                print(out[-20000:])
            log.close()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
