#!/usr/bin/env python3
"""WebDAV: a PUT to live, and `rclone sync` of a vault into an empty server.

    bench/dav.py QUIRE VAULT [--edits 200] [--gap 0.05] [--keep-data] [--json]
                 [--no-rclone] [--no-edits] [--rclone-files N] [--server-cores LIST]

Two measurements of quire's WebDAV endpoint (/dav/, HTTP Basic auth with
the token as password), the server pinned with taskset to the core that
takes the interrupts of the copy's disk (as bench/structural.py and
build/bench/sync-bench do; --server-cores LIST chooses), this process and
its children (rclone) on the other cores:

  edits   a copy of VAULT (with its .quire when --keep-data: a search index
          filled beforehand is only checked), `QUIRE serve --threads 1
          --no-watch --token-file`, settled ("search index ready"); then
          --edits PUTs of a random note (seeded) with a new paragraph
          carrying a marker, --gap seconds apart, over one keep-alive
          connection, as an editor saving over WebDAV does. Each latency
          runs from sending the PUT until a GET of the note's page (polled
          every 0.3 ms on another keep-alive connection) shows the marker;
          "answered" is the PUT's own round trip (the bytes written and
          fsynced). A change not visible after 30 s counts as "never".
  rclone  `rclone sync VAULT q:` (Debian's rclone, the remote configured by
          environment variables: type webdav, vendor other, Basic auth; its
          defaults --transfers 4 --checkers 8; --retries 1
          --low-level-retries 1 so that errors show) into a server started
          on an empty folder; .quire/ is excluded. Wall time of rclone,
          the requests the server logged for /dav/ (--access-log) by
          method, requests and files a second, then how long after rclone
          ended /healthz counted every published note (the number the
          edits' server loaded the same vault with, or the notes when
          --no-edits). --rclone-files N syncs only the vault's first N
          files (walk order, `--files-from`): --quick's short run.

Prints a summary; --json prints one JSON object. Exit 2 if the server
died, 1 on another failure. Python 3 standard library and rclone.
"""

import base64
import http.client
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from structural import cpu_list, disk_core, frontmatter, pct, scan  # noqa: E402

TIMEOUT = 30.0
POLL = 0.0003


class ServerGone(Exception):
    pass


def log(msg):
    print("dav: " + msg, file=sys.stderr, flush=True)


class Conn:
    """One keep-alive connection; reconnects once when the server closed it."""

    def __init__(self, port, headers=None):
        self.port, self.headers, self.c = port, headers or {}, None

    def send(self, method, path, body=None, headers=None):
        h = dict(self.headers)
        h.update(headers or {})
        for attempt in (0, 1):
            if self.c is None:
                self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                self.c.connect()
                self.c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                self.c.request(method, path, body=body, headers=h)
                r = self.c.getresponse()
                return r.status, r.read()
            except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected,
                    http.client.CannotSendRequest, http.client.ResponseNotReady):
                self.c.close()
                self.c = None
                if attempt:
                    raise

    def close(self):
        if self.c:
            self.c.close()


class Server:
    def __init__(self, quire, vault, tmp, name, cores, extra=()):
        self.logpath = os.path.join(tmp, name + ".log")
        self.token = "dav-bench-token-%08d" % os.getpid()
        tok = os.path.join(tmp, "token")
        with open(tok, "w") as fh:
            fh.write(self.token + "\n")
        self.logf = open(self.logpath, "w")
        self.t0 = time.time()
        self.proc = subprocess.Popen(
            ["taskset", "-c", cores, quire, "serve", "--vault", vault, "--listen",
             "127.0.0.1:0", "--threads", "1", "--token-file", tok, "--no-watch",
             "--search-rate", "0", *extra], stdout=self.logf, stderr=subprocess.STDOUT)
        self.port = None
        while self.port is None:
            m = re.search(r"^serving .* at http://[^:]+:(\d+)/", self.text(), re.M)
            if m:
                self.port = int(m.group(1))
            else:
                self.alive("while starting")
                if time.time() - self.t0 > 900:
                    raise RuntimeError("the server did not start in 15 minutes")
                time.sleep(0.05)
        self.serve_s = time.time() - self.t0
        self.basic = {"Authorization": "Basic " + base64.b64encode(
            ("bench:" + self.token).encode()).decode()}

    def text(self):
        with open(self.logpath, errors="replace") as fh:
            return fh.read()

    def alive(self, where):
        if self.proc.poll() is not None:
            raise ServerGone("quire exited with code %s %s:\n%s"
                             % (self.proc.returncode, where, self.text()[-2000:]))

    def wait_log(self, text, secs):
        while text not in self.text():
            self.alive("waiting for %r" % text)
            if time.time() - self.t0 > secs:
                raise RuntimeError("no %r in the log after %d s" % (text, secs))
            time.sleep(0.2)

    def stop(self):
        if self.logf.closed:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()


def dav_path(rel):
    return "/dav/" + urllib.parse.quote(rel, safe="/")


def edits(quire, vault, tmp, cores, n, gap, keep_data, seed=1):
    v = os.path.join(tmp, "edits")
    shutil.copytree(vault, v, ignore=None if keep_data else shutil.ignore_patterns(".quire"))
    srv = Server(quire, v, tmp, "edits", cores)
    out = {"notes": None}
    try:
        m = re.search(r"loaded (\d+) notes \((\d+) published\)", srv.text())
        if m:
            out["notes"], out["published"] = int(m.group(1)), int(m.group(2))
        srv.wait_log("search index ready", 1800)
        notes, _ = scan(v)
        put = Conn(srv.port, srv.basic)
        get = Conn(srv.port)
        # only notes the server publishes (drafts, and any URL computed wrong, are left out)
        pool = sorted(notes)
        rng = random.Random(seed)
        rng.shuffle(pool)
        chosen = []
        for p in pool:
            if len(chosen) >= min(n, 50):
                break
            s, _ = get.send("GET", notes[p]["url"])
            if s == 200:
                chosen.append(p)
        if not chosen:
            raise RuntimeError("no note of the vault is served at the URL computed for it")
        lat, answered, never, failures = [], [], [], []
        for i in range(n):
            p = chosen[rng.randrange(len(chosen))]
            with open(os.path.join(v, p), "rb") as fh:
                body = fh.read()
            marker = b"davbenchmarker%06dx%05d" % (os.getpid() % 1000000, i)
            new = body + b"\n\nEdited over WebDAV: " + marker + b".\n"
            url = notes[p]["url"]
            t0 = time.perf_counter()
            s, b = put.send("PUT", dav_path(p), new)
            answered.append((time.perf_counter() - t0) * 1000)
            if s not in (200, 201, 204):
                failures.append("PUT %s answered %d %s" % (p, s, b[:200]))
                srv.alive("after a failed PUT")
                continue
            while True:
                gs, gb = get.send("GET", url)
                if gs == 200 and marker in gb:
                    lat.append((time.perf_counter() - t0) * 1000)
                    break
                if time.perf_counter() - t0 > TIMEOUT:
                    never.append({"path": p, "url": url, "status": gs})
                    srv.alive("after an edit never seen")
                    break
                time.sleep(POLL)
            with open(os.path.join(v, p), "rb") as fh:
                if fh.read() != new:
                    failures.append("%s on disk is not the bytes PUT" % p)
            time.sleep(gap)
        put.close()
        get.close()
        out.update(edits=n, notes_edited=len(chosen), live_p50_ms=pct(lat, 0.5),
                   live_p90_ms=pct(lat, 0.9), live_p99_ms=pct(lat, 0.99),
                   live_max_ms=round(max(lat), 2) if lat else None,
                   answered_p50_ms=pct(answered, 0.5), answered_p90_ms=pct(answered, 0.9),
                   never=len(never), never_list=never[:5], failures=len(failures),
                   failure_list=failures[:5], gap_s=gap, serve_s=round(srv.serve_s, 2))
    finally:
        srv.stop()
        shutil.rmtree(v, ignore_errors=True)
    return out


ACCESS = re.compile(r'"([A-Z]+) (/dav/\S*) HTTP/[\d.]+" (\d{3})')


def rclone_sync(quire, vault, tmp, cores, published, max_files=None):
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    access = os.path.join(tmp, "access.log")
    srv = Server(quire, empty, tmp, "rclone", cores, ["--access-log", access])
    out = {}
    try:
        env = dict(os.environ, RCLONE_CONFIG_Q_TYPE="webdav",
                   RCLONE_CONFIG_Q_URL="http://127.0.0.1:%d/dav/" % srv.port,
                   RCLONE_CONFIG_Q_VENDOR="other", RCLONE_CONFIG_Q_USER="bench",
                   RCLONE_CONFIG_Q_PASS=subprocess.run(
                       ["rclone", "obscure", srv.token], stdout=subprocess.PIPE, text=True,
                       check=True).stdout.strip())
        paths = []
        for d, dirs, fs in os.walk(vault):
            dirs[:] = sorted(x for x in dirs if not (d == vault and x == ".quire"))
            paths += [os.path.relpath(os.path.join(d, f), vault) for f in sorted(fs)]
        extra = []
        if max_files is not None and max_files < len(paths):
            # the first files in walk order (whole folders, as a smaller vault would be)
            paths = paths[:max_files]
            lst = os.path.join(tmp, "files-from")
            with open(lst, "w") as fh:
                fh.write("".join(p + "\n" for p in paths))
            extra = ["--files-from", lst]
            published = 0
            for p in paths:
                if p.endswith(".md"):
                    with open(os.path.join(vault, p), encoding="utf-8", errors="replace") as fh:
                        keys, _ = frontmatter(fh.read(8192))
                    published += keys.get("draft", "").lower() != "true"
        files = len(paths)
        nbytes = sum(os.path.getsize(os.path.join(vault, p)) for p in paths)
        version = subprocess.run(["rclone", "version"], stdout=subprocess.PIPE,
                                 text=True).stdout.split("\n")[0]
        t0 = time.monotonic()
        # (rclone takes --files-from or filters, not both)
        r = subprocess.run(["rclone", "sync", vault, "q:", "--config", "/dev/null",
                            *(extra or ["--exclude", "/.quire/**"]), "--use-json-log", "-v",
                            "--retries", "1", "--low-level-retries", "1"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=7200)
        wall = time.monotonic() - t0
        stats, errors = {}, []
        for line in r.stdout.splitlines():
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if "stats" in j:
                stats = j["stats"]
            if j.get("level") in ("error", "critical"):
                errors.append("%s: %s" % (j.get("object", ""), j.get("msg", "")))
        srv.alive("after rclone sync")
        if not stats:
            raise RuntimeError("rclone sync gave no statistics (exit %d):\n%s"
                               % (r.returncode, r.stdout[-2000:]))
        # until the site counts every published note
        want = published
        live_s, notes_now = None, None
        t1 = time.monotonic()
        c = Conn(srv.port)
        while time.monotonic() - t1 < 120:
            s, b = c.send("GET", "/healthz")
            if s == 200:
                notes_now = json.loads(b).get("notes")
                if want is not None and notes_now >= want:
                    live_s = time.monotonic() - t0
                    break
            time.sleep(0.01)
        c.close()
        srv.stop()   # the access log is whole once the server has stopped
        by_method, statuses, n = {}, {}, 0
        with open(access, errors="replace") as fh:
            for line in fh:
                m = ACCESS.search(line)
                if m:
                    n += 1
                    by_method[m.group(1)] = by_method.get(m.group(1), 0) + 1
                    statuses[m.group(3)] = statuses.get(m.group(3), 0) + 1
        out.update(rclone=version, exit=r.returncode, files=files, mb=round(nbytes / 1e6, 1),
                   transfers=stats.get("transfers"), errors=stats.get("errors"),
                   error_list=errors[:5], wall_s=round(wall, 2), requests=n,
                   requests_by_method=by_method, statuses=statuses,
                   requests_per_s=round(n / wall, 1) if wall else None,
                   files_per_s=round((stats.get("transfers") or 0) / wall, 1) if wall else None,
                   live_s=round(live_s, 2) if live_s is not None else None,
                   published=want, notes_at_end=notes_now, rclone_transfers_opt=4,
                   rclone_checkers_opt=8)
    finally:
        srv.stop()
        shutil.rmtree(empty, ignore_errors=True)
    return out


def main():
    args = sys.argv[1:]

    def opt(name, default, conv):
        if name in args:
            i = args.index(name)
            v = conv(args[i + 1])
            del args[i:i + 2]
            return v
        return default

    n = opt("--edits", 200, int)
    max_files = opt("--rclone-files", None, int)
    gap = opt("--gap", 0.05, float)
    cores = opt("--server-cores", None, str)
    flags = {f: (f in args) for f in ("--json", "--keep-data", "--no-rclone", "--no-edits")}
    args = [a for a in args if a not in flags]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 1
    quire, vault = os.path.abspath(args[0]), os.path.abspath(args[1])
    tmp = tempfile.mkdtemp(prefix="quire-dav-bench-")
    out = {"vault": vault}
    try:
        if cores is None:
            dc = disk_core(tmp)
            cores = str(dc if dc is not None else 0)
        rest = set(range(os.cpu_count() or 1)) - cpu_list(cores)
        if rest:
            os.sched_setaffinity(0, rest)
        out["server_cores"] = cores
        out["client_cores"] = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
        published = None
        if not flags["--no-edits"]:
            log("edits: %d PUTs over WebDAV on a copy of %s" % (n, vault))
            out["edits"] = edits(quire, vault, tmp, cores, n, gap, flags["--keep-data"])
            published = out["edits"].get("published")
            e = out["edits"]
            log("edits: live p50 %s ms, p90 %s ms (PUT answered p50 %s ms), %d never, "
                "%d failures" % (e["live_p50_ms"], e["live_p90_ms"], e["answered_p50_ms"],
                                 e["never"], e["failures"]))
        if not flags["--no-rclone"]:
            if published is None:
                published = len(scan(vault)[0])
            log("rclone: sync of %s into an empty server" % vault)
            out["rclone"] = rclone_sync(quire, vault, tmp, cores, published, max_files)
            r = out["rclone"]
            log("rclone: %s files in %s s, %s requests (%s/s), live after %s s, %s errors"
                % (r["transfers"], r["wall_s"], r["requests"], r["requests_per_s"],
                   r["live_s"], r["errors"]))
    except ServerGone as e:
        log("THE SERVER IS GONE: %s" % e)
        return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if flags["--json"]:
        print(json.dumps(out))
    else:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
