#!/usr/bin/env python3
"""test-promtool: /metrics of a real server, read by Prometheus's promtool.

Starts the real `$QUIRE_BIN serve` on a copy of vault-sample with a token
and the first load held by the test hook (QUIRE_TEST_HOLD_LOAD): /metrics
answers while the server loads, says so (quire_loading 1), and passes
`promtool check metrics` (its format and lint rules: HELP and TYPE for
each family, counters ending in _total, base units). Then, once loaded,
the server serves pages, an attachment and a theme file, is searched,
written through the sync API (a create, an edit, a stale If-Match) and
through WebDAV; its /metrics passes promtool again, and the histograms
count what was done: request durations by kind (page, file, asset,
search, api, dav), change-to-live by source (sync, webdav), the search
query time; the sync API's and WebDAV's requests by method and status,
the 412 as a conflict; and the gauges (pages, bytes, loading 0).

Exit 77 (skipped) without promtool (Debian's prometheus package, which
scripts/setup installs).
"""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from quiretest import QUIRE, check, fetch, sample_vault, stop, summary  # noqa: E402

TOKEN = "test-promtool-token-0123456789abc"
AUTH = {"Authorization": "Bearer " + TOKEN}
DAV_AUTH = {"Authorization": "Basic " + base64.b64encode(b"x:" + TOKEN.encode()).decode()}
PROMTOOL = "/usr/bin/promtool"


def promtool(text, what):
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
          "promtool check metrics (%s): exit %d\n%s%s" % (what, r.returncode, r.stdout,
                                                           r.stderr))


def metrics(port):
    st, _, body, _ = fetch(port, "127.0.0.1", "/metrics")
    check(st == 200, "/metrics: %d" % st)
    return body.decode()


def value(text, series):
    """The value of one series (name and labels as written), or None."""
    m = re.search(r"^%s (\S+)$" % re.escape(series), text, re.M)
    return float(m.group(1)) if m else None


def histogram_ok(text, name, labels):
    """_count > 0, +Inf equal to it, buckets never going down, _sum present."""
    sel = "{%s}" % labels if labels else ""
    count = value(text, "%s_count%s" % (name, sel))
    inf = value(text, '%s_bucket{%sle="+Inf"}' % (name, labels + "," if labels else ""))
    buckets = [float(v) for v in re.findall(
        r'^%s_bucket\{%sle="[^"]+"\} (\S+)$' % (re.escape(name), re.escape(labels + ",")
                                                if labels else ""), text, re.M)]
    check(count is not None and count > 0, "%s%s counts something: %r" % (name, sel, count))
    check(inf == count, "%s%s: +Inf %r = _count %r" % (name, sel, inf, count))
    check(len(buckets) == 18 and buckets == sorted(buckets),
          "%s%s: 18 cumulative buckets" % (name, sel))
    check(value(text, "%s_sum%s" % (name, sel)) is not None, "%s%s_sum" % (name, sel))


def start(vault, tmp, fifo):
    env = dict(os.environ, QUIRE_TEST_HOLD_LOAD=fifo)
    proc = subprocess.Popen(
        [QUIRE, "serve", "--vault", vault, "--listen", "127.0.0.1:0", "--threads", "2",
         "--token-file", os.path.join(tmp, "token")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    port = None
    for line in proc.stderr:
        m = re.search(r"listening at http://127\.0\.0\.1:(\d+)/", line)
        if m:
            port = int(m.group(1))
        if port and "holding the first load" in line:
            return proc, port
    proc.kill()
    raise SystemExit("quire serve did not start holding its load")


def loading(port, fifo, proc):
    """While the first load is held: /metrics answers, and promtool takes it."""
    text = metrics(port)
    promtool(text, "loading")
    check(value(text, "quire_loading") == 1, "quire_loading 1 while loading")
    check(value(text, "quire_loading_notes_found") > 0, "the notes found while loading")
    check(value(text, "quire_snapshot_version") is None, "no snapshot gauges while loading")
    check(fetch(port, "127.0.0.1", "/")[0] == 503, "pages are 503 while loading")
    with open(fifo, "w") as f:
        f.write("go")
    for line in proc.stdout:
        if line.startswith("serving "):
            break
    # stderr is a pipe: drain it so that the server never blocks on a full one
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()


def work(port):
    """Serves, searches and writes: what the histograms must count."""
    for path in ["/", "/guides/", "/_quire/tree.json", "/nope"]:
        fetch(port, "127.0.0.1", path)
    body = fetch(port, "127.0.0.1", "/")[2].decode()
    asset = re.search(r'href="(/_quire/[^"]+\.css)"', body)
    check(asset and fetch(port, "127.0.0.1", asset.group(1))[0] == 200, "a theme file")
    img = re.search(r'src="(/[^"_][^"]*\.(?:png|svg|jpg))"', "".join(
        fetch(port, "127.0.0.1", p)[2].decode() for p in ["/", "/markdown/embeds"]))
    check(img and fetch(port, "127.0.0.1", img.group(1))[0] == 200, "an attachment")
    check(fetch(port, "127.0.0.1", "/api/search?q=quire")[0] == 200, "/api/search")
    check(fetch(port, "127.0.0.1", "/search?q=links")[0] == 200, "/search")
    st, _, b, _ = fetch(port, "127.0.0.1", "/api/v1/files/obs/one.md", "PUT",
                        b"# One\n\nthrough the sync API\n", dict(AUTH, **{"If-None-Match": "*"}))
    check(st == 201, "sync API PUT: %d" % st)
    first = json.loads(b)
    st, _, b, _ = fetch(port, "127.0.0.1", "/api/v1/files/obs/one.md", "PUT",
                        b"# One\n\nedited\n", dict(AUTH, **{"If-Match": '"%s"' % first["sha256"]}))
    check(st == 200, "sync API edit: %d" % st)
    version = json.loads(b)["version"]
    st, _, _, _ = fetch(port, "127.0.0.1", "/api/v1/files/obs/one.md", "PUT", b"stale\n",
                        dict(AUTH, **{"If-Match": '"%s"' % first["sha256"]}))
    check(st == 412, "stale If-Match: %d" % st)
    st, _, _, _ = fetch(port, "127.0.0.1", "/api/v1/wait?version=%d&timeout=20000" % version,
                        headers=AUTH)
    check(st == 200, "the edit live")
    st, _, _, _ = fetch(port, "127.0.0.1", "/dav/obs/two.md", "PUT", b"# Two\n", DAV_AUTH)
    check(st == 201, "WebDAV PUT: %d" % st)
    deadline = time.monotonic() + 60
    while fetch(port, "127.0.0.1", "/obs/two")[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    check(fetch(port, "127.0.0.1", "/obs/two")[0] == 200, "the WebDAV write live")
    # the loader counts a change once it has made it live, just after the
    # page can be read: wait for the count, as for the page
    for source in ["sync", "webdav"]:
        key = 'quire_change_to_live_seconds_count{source="%s"}' % source
        while not value(metrics(port), key) and time.monotonic() < deadline:
            time.sleep(0.05)


def served(port):
    text = metrics(port)
    promtool(text, "after serving, syncing and searching")
    for kind in ["page", "file", "asset", "notfound", "search", "api", "dav"]:
        histogram_ok(text, "quire_request_duration_seconds", 'kind="%s"' % kind)
    for source in ["sync", "webdav"]:
        histogram_ok(text, "quire_change_to_live_seconds", 'source="%s"' % source)
    histogram_ok(text, "quire_search_query_duration_seconds", "")
    check(value(text, 'quire_sync_requests_total{method="PUT",status="201"}') == 1,
          "the sync API's create counted")
    check(value(text, 'quire_sync_requests_total{method="PUT",status="200"}') == 1,
          "the sync API's edit counted")
    check(value(text, 'quire_sync_requests_total{method="GET",status="200"}') >= 1,
          "the sync API's wait counted")
    check(value(text, 'quire_write_conflicts_total{api="sync"}') == 1, "the 412 a conflict")
    check(value(text, 'quire_write_conflicts_total{api="webdav"}') == 0, "no WebDAV conflict")
    check(value(text, 'quire_dav_requests_total{method="PUT",status="201"}') == 1,
          "the WebDAV write counted")
    check(value(text, "quire_loading") == 0, "quire_loading 0 once loaded")
    check(value(text, "quire_pages") > 20 and value(text, "quire_snapshot_bytes") > 10000,
          "the pages and their bytes")
    check(value(text, "quire_snapshot_version") > 0, "the snapshot version")
    check(value(text, 'quire_loads_total{result="ok"}') >= 1, "the load counted")
    check(value(text, "quire_snapshots_published_total") >= 3, "the publishes counted")
    check(value(text, "quire_config_invalid") == 0, "quire.yml valid")
    check(value(text, "quire_connections") >= 1, "the connection open")


def main():
    if not os.access(PROMTOOL, os.X_OK):
        print("promtool is not installed (Debian's prometheus; scripts/setup installs it): "
              "skipped")
        return 77
    tmp = tempfile.mkdtemp(prefix="quire-promtool-")
    proc = None
    try:
        vault = sample_vault(tmp, TOKEN)
        fifo = os.path.join(tmp, "hold")
        os.mkfifo(fifo)
        proc, port = start(vault, tmp, fifo)
        loading(port, fifo, proc)
        work(port)
        served(port)
    finally:
        stop([proc])
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
