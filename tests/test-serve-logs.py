#!/usr/bin/env python3
"""test-serve-logs: what `quire serve --log-format json` writes, line by line.

Starts the real `$QUIRE_BIN serve` on a copy of vault-sample with a token,
a JSON log in a file (--log-file), a JSON access log, and quire.yml's
purge: section pointing at two webhooks: a listener of this test that
answers 200, and a port where nothing listens. Then:

  - writes through the sync API (a note created, then edited with
    If-Match), and through WebDAV (a PUT with the token as password);
  - is refused: a stale If-Match (412), a wrong token (401), a wrong
    WebDAV password (401);
  - makes quire.yml invalid through the sync API, then valid again;
  - searches;
  - rotates the log: moves the file away, sends SIGHUP, writes again.

Every line of both log files (before and after the rotation) and of the
access log must parse as one JSON object with an RFC 3339 time, a level,
an event and a message; and the lines the administrator of issue 32
missed must be there with their fields: each change live (source, client,
paths, version, duration), each refused write (why, path, client), the
purges sent and the one that failed, each configuration reload (ok or
invalid), the signal, and an access line per request (host, duration).

Last, a short second run whose stderr is the stream $JOURNAL_STREAM names,
as under systemd: its lines carry a syslog priority and no time.
"""
import base64
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import quiretest  # noqa: E402
from quiretest import check, fetch, free_port, sample_vault, serve, stop, summary  # noqa: E402

TOKEN = "test-serve-logs-token-0123456789ab"
AUTH = {"Authorization": "Bearer " + TOKEN}
DAV_AUTH = {"Authorization": "Basic " + base64.b64encode(b"editor:" + TOKEN.encode()).decode()}
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
LEVELS = {"debug", "info", "warn", "error"}


class Hook(http.server.BaseHTTPRequestHandler):
    """The webhook purger's end: takes each POST, answers 200."""
    bodies = []

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        Hook.bodies.append(json.loads(self.rfile.read(n)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def start(vault, tmp, extra, stderr=subprocess.DEVNULL, env=None):
    return serve(vault, ["--threads", "2", "--token-file", os.path.join(tmp, "token"), *extra],
                 stderr=stderr, env=env)


def put(port, path, data, headers=None):
    st, _, body, _ = fetch(port, "127.0.0.1", "/api/v1/files/" + path, "PUT", data,
                           dict(AUTH, **(headers or {})))
    return st, (json.loads(body) if body.startswith(b"{") else {})


def wait_version(port, version):
    st, _, _, _ = fetch(port, "127.0.0.1", "/api/v1/wait?version=%d&timeout=20000" % version,
                        headers=AUTH)
    check(st == 200, "snapshot %d live: %d" % (version, st))


def poll(what, cond, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    check(False, "never: " + what)
    return False


def lines_of(path):
    """Each line of a file parsed as JSON (a failed check for one that is not)."""
    out = []
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                obj = json.loads(line)
            except ValueError:
                check(False, "%s:%d is not JSON: %r" % (os.path.basename(path), n, line[:200]))
                continue
            check(isinstance(obj, dict), "%s:%d is not an object" % (path, n))
            out.append(obj)
    return out


def log_has(path, event, **fields):
    return any(o.get("event") == event and all(o.get(k) == v for k, v in fields.items())
               for o in lines_of(path))


def check_shape(objs, what):
    for o in objs:
        ok = (isinstance(o.get("time"), str) and TIME.match(o["time"]) and
              o.get("level") in LEVELS and isinstance(o.get("event"), str) and o["event"] and
              isinstance(o.get("msg"), str))
        check(ok, "%s: a line without time, level, event and msg: %r" % (what, o))


def find(objs, event, **fields):
    return [o for o in objs if o.get("event") == event and
            all(o.get(k) == v for k, v in fields.items())]


def check_change(objs, source, path):
    found = [o for o in find(objs, "change.live", source=source) if path in o.get("paths", [])]
    check(found, "a change.live line from %s for %s" % (source, path))
    for o in found[:1]:
        check(o.get("client") == "127.0.0.1", "change.live of %s names its client: %r" % (path, o))
        check(isinstance(o.get("version"), int) and o["version"] > 0, "version: %r" % o)
        check(isinstance(o.get("duration_ms"), (int, float)) and o["duration_ms"] >= 0,
              "duration_ms: %r" % o)
        check(o.get("npaths") == len(o["paths"]) and o.get("level") == "info", "npaths: %r" % o)
    return found


def scenario(tmp, vault, hook_port, dead_port):
    log, access = os.path.join(tmp, "quire.log"), os.path.join(tmp, "access.log")
    proc, port = start(vault, tmp, ["--log-format", "json", "--log-file", log,
                                    "--access-log", access])
    try:
        check(fetch(port, "127.0.0.1", "/")[0] == 200, "GET /")
        # sync API: created, then edited with its ETag
        st, a = put(port, "logs/first.md", b"# First\n\nwritten through the sync API\n",
                    {"If-None-Match": "*"})
        check(st == 201, "sync API PUT: %d" % st)
        wait_version(port, a["version"])
        st, b = put(port, "logs/first.md", b"# First\n\nedited\n",
                    {"If-Match": '"%s"' % a["sha256"]})
        check(st == 200, "sync API PUT with If-Match: %d" % st)
        wait_version(port, b["version"])
        # refused: a stale If-Match, a wrong token
        st, _ = put(port, "logs/first.md", b"stale\n", {"If-Match": '"%s"' % a["sha256"]})
        check(st == 412, "stale If-Match: %d" % st)
        st, _, _, _ = fetch(port, "127.0.0.1", "/api/v1/files/logs/x.md", "PUT", b"x",
                            {"Authorization": "Bearer wrong-token-wrong-token-wrong"})
        check(st == 401, "wrong token: %d" % st)
        # WebDAV: a write, and a wrong password
        st, _, _, _ = fetch(port, "127.0.0.1", "/dav/logs/dav.md", "PUT",
                            b"# From WebDAV\n\nsaved by an editor\n", DAV_AUTH)
        check(st == 201, "WebDAV PUT: %d" % st)
        poll("/logs/dav served", lambda: fetch(port, "127.0.0.1", "/logs/dav")[0] == 200)
        st, _, _, _ = fetch(port, "127.0.0.1", "/dav/logs/nope.md", "PUT", b"x",
                            {"Authorization": "Basic " + base64.b64encode(b"u:wrong").decode()})
        check(st == 401, "wrong WebDAV password: %d" % st)
        # quire.yml invalid, then valid again (through the sync API: a reload each)
        with open(os.path.join(vault, "quire.yml"), "rb") as f:
            good = f.read()
        st, c = put(port, "quire.yml", good + b"publsh: explicit\n")
        check(st == 200, "quire.yml PUT: %d" % st)
        poll("quire.yml's error on /healthz",
             lambda: b'"config":"error' in fetch(port, "127.0.0.1", "/healthz")[2])
        st, c = put(port, "quire.yml", good)
        poll("quire.yml valid again",
             lambda: b'"config"' not in fetch(port, "127.0.0.1", "/healthz")[2])
        check(fetch(port, "127.0.0.1", "/api/search?q=quire")[0] == 200, "search")
        # the purges: one set sent to the hook, one request failed at the dead port
        poll("a purge at the webhook", lambda: Hook.bodies)
        poll("purge.failed in the log", lambda: log_has(log, "purge.failed"))
        # logrotate: moved away, SIGHUP, and the next lines go to a new file
        os.rename(log, log + ".1")
        os.rename(access, access + ".1")
        proc.send_signal(signal.SIGHUP)
        poll("the log opened again", lambda: os.path.exists(log) and os.path.exists(access))
        st, d = put(port, "logs/after.md", b"# After the rotation\n")
        check(st == 201, "PUT after SIGHUP: %d" % st)
        wait_version(port, d["version"])
        poll("the change after the rotation logged",
             lambda: log_has(log, "change.live", source="sync"))
        fetch(port, "127.0.0.1", "/logs/after")
    finally:
        stop([proc])
    check(proc.returncode == 0, "quire serve exit status %s" % proc.returncode)
    return log, access, dead_port


def check_log(log, hook_port, dead_port):
    old, new = lines_of(log + ".1"), lines_of(log)
    check_shape(old, "the log before the rotation")
    check_shape(new, "the log after it")
    check(len(old) > 10 and len(new) >= 2, "lines: %d before, %d after" % (len(old), len(new)))
    check(find(old, "listen") and find(old, "load"), "the start-up lines are events too")
    check_change(old, "sync", "logs/first.md")
    check(len([o for o in find(old, "change.live", source="sync")
               if o.get("paths") == ["logs/first.md"]]) >= 2, "a change.live per sync API write")
    check_change(old, "webdav", "logs/dav.md")
    check_change(new, "sync", "logs/after.md")
    check(not [o for o in old if "logs/after.md" in o.get("paths", [])],
          "the change after the rotation is in the new file only")
    stale = find(old, "sync.refused", status=412)
    check(stale and stale[0].get("path") == "logs/first.md" and stale[0].get("method") == "PUT"
          and stale[0].get("client") == "127.0.0.1" and stale[0].get("why"),
          "the stale If-Match refused: %r" % stale[:1])
    bad = find(old, "sync.refused", status=401)
    check(bad and bad[0].get("why") == "wrong token" and bad[0].get("level") == "warn",
          "the wrong token refused: %r" % bad[:1])
    dav = find(old, "dav.refused", status=401)
    check(dav and dav[0].get("client") == "127.0.0.1", "the wrong WebDAV password: %r" % dav[:1])
    sent = [o for o in find(old, "purge.sent")
            if o.get("purger") == "http://127.0.0.1:%d/purge" % hook_port]
    check(sent and isinstance(sent[0].get("version"), int) and sent[0].get("requests", 0) >= 1
          and sent[0].get("failed") == 0, "purge.sent to the webhook: %r" % sent[:1])
    failed = [o for o in find(old, "purge.failed")
              if o.get("url") == "http://127.0.0.1:%d/purge" % dead_port]
    check(failed and failed[0].get("method") == "POST" and failed[0].get("level") == "warn",
          "purge.failed at the dead port: %r" % failed[:1])
    reloads = find(old, "config.reload")
    invalid = [o for o in reloads if o.get("result") == "invalid"]
    check(invalid and "unknown setting 'publsh'" in invalid[0].get("error", "")
          and invalid[0].get("level") == "error" and invalid[0].get("trigger") == "quire.yml",
          "quire.yml invalid: %r" % invalid[:1])
    check([o for o in reloads if o.get("result") == "ok" and "valid again" in o["msg"]],
          "quire.yml valid again: %r" % reloads)
    check(find(old, "change.live", source="sync", build="reload"),
          "the quire.yml writes went live through reloads")
    check(find(old, "signal", signal="SIGHUP"), "the SIGHUP line")
    # the search index is filled on a thread of its own: its line comes
    # before or after the rotation, as the machine's load has it
    check(find(old + new, "search.ready"), "search.ready")


def check_access(access):
    objs = lines_of(access + ".1") + lines_of(access)
    for o in objs:
        ok = (TIME.match(o.get("time", "")) and o.get("event") == "access" and
              isinstance(o.get("status"), int) and isinstance(o.get("duration_ms"), float) and
              o.get("host") == "127.0.0.1" and o.get("remote") == "127.0.0.1")
        check(ok, "an access line without its fields: %r" % o)
    kinds = {(o.get("method"), o.get("status"), o.get("kind")) for o in objs}
    for want in [("GET", 200, "page"), ("PUT", 201, "api"), ("PUT", 412, "api"),
                 ("PUT", 401, "api"), ("PUT", 201, "dav"), ("PUT", 401, "dav"),
                 ("GET", 200, "search")]:
        check(want in kinds, "an access line %r" % (want,))
    check([o for o in lines_of(access) if o.get("target") == "/logs/after"],
          "the access log opened again after SIGHUP")


def journal_run(tmp, vault):
    """stderr is the stream $JOURNAL_STREAM names: a priority first, no time."""
    err_path = os.path.join(tmp, "journal.err")
    with open(err_path, "w") as err:
        st = os.fstat(err.fileno())
        env = dict(os.environ, JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
        proc, port = start(vault, tmp, ["--no-watch"], stderr=err, env=env)
        fetch(port, "127.0.0.1", "/")
        stop([proc])
    with open(err_path) as f:
        lines = f.read().splitlines()
    check(lines and all(re.match(r"^<[3467]>level=(debug|info|warn|error) event=", ln)
                        for ln in lines), "journald lines: %r" % lines[:3])
    check(not [ln for ln in lines if "time=" in ln], "no time under journald")


def main():
    tmp = tempfile.mkdtemp(prefix="quire-logs-")
    hook = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    try:
        vault = sample_vault(tmp, TOKEN)
        dead_port = free_port()
        with open(os.path.join(vault, "quire.yml"), "a") as f:
            f.write("purge:\n  - webhook: http://127.0.0.1:%d/purge\n"
                    "  - webhook: http://127.0.0.1:%d/purge\n"
                    % (hook.server_address[1], dead_port))
        log, access, dead_port = scenario(tmp, vault, hook.server_address[1], dead_port)
        check_log(log, hook.server_address[1], dead_port)
        check_access(access)
        journal_run(tmp, vault)
        if quiretest._counts["failed"]:
            for p in (log + ".1", log):
                if os.path.exists(p):
                    with open(p) as f:
                        sys.stderr.write("--- %s (last lines)\n%s" % (
                            p, "".join(f.readlines()[-30:])))
    finally:
        hook.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
