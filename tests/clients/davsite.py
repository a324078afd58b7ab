"""davsite: what the Python tests of real WebDAV clients share (tests/clients/).

serve() starts the real `$QUIRE_BIN serve --token-file` on a vault with
--no-watch (so that a change reaches the site only through the WebDAV
endpoint, never through the file watcher) and returns the process, its
port and the token. note_url() is the URL a note is published at
(src/vault/vault.c vault_note_url, as bench/structural.py computes it).
Site is a keep-alive HTTP client that polls a page until it shows what a
change should have made of it.
"""
import http.client
import os
import secrets
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import quiretest  # noqa: E402  (check, summary, QUIRE)

LIVE_TIMEOUT = 30.0   # seconds a change may take to be served


def serve(vault, workdir, extra=()):
    token = secrets.token_hex(16)
    tokfile = os.path.join(workdir, "token")
    with open(tokfile, "w") as fh:
        fh.write(token + "\n")
    log = open(os.path.join(workdir, "serve.log"), "w")
    proc = subprocess.Popen(
        [quiretest.QUIRE, "serve", "--vault", vault, "--listen", "127.0.0.1:0", "--threads", "2",
         "--no-watch", "--search-rate", "0", "--token-file", tokfile, *extra],
        stdout=subprocess.PIPE, stderr=log, text=True)
    port = quiretest.listening_port(proc)
    # keep reading its stdout so that it never blocks on a full pipe
    import threading
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    return proc, port, token


def slugify(seg):
    """src/vault/vault.c vault_slugify."""
    out, dash = [], False
    for ch in seg.lower():
        if ch in "-_." or ch.isalnum():
            if dash and out:
                out.append("-")
            dash = False
            out.append(ch)
        else:
            dash = True
    r = "".join(out)
    return r if r.strip(".") else "-"


def note_url(path):
    """The URL of a vault path ending in .md that has no `slug:`, percent-encoded."""
    segs = path[:-3].split("/")
    url = "".join("/" + slugify(s) for s in segs[:-1])
    last = segs[-1]
    url += "/" if last.lower() == "index" else "/" + slugify(last)
    return urllib.parse.quote(url, safe="/~")


class Site:
    def __init__(self, port):
        self.port = port
        self.conn = None

    def get(self, path):
        """(status, headers, body bytes); one retry on a closed keep-alive connection."""
        for attempt in (0, 1):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                self.conn.request("GET", path, headers={"Accept-Encoding": "identity"})
                r = self.conn.getresponse()
                body = r.read()
                headers = {k.lower(): v for k, v in r.getheaders()}
                if headers.get("connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return r.status, headers, body
            except (OSError, http.client.HTTPException):
                if self.conn:
                    self.conn.close()
                self.conn = None
                if attempt:
                    raise

    def until(self, path, pred, timeout=LIVE_TIMEOUT):
        """Polls path until pred(status, body) holds; returns (held, status, body)."""
        end = time.monotonic() + timeout
        while True:
            status, _, body = self.get(path)
            if pred(status, body):
                return True, status, body
            if time.monotonic() > end:
                return False, status, body
            time.sleep(0.02)

    def shows(self, path, text, timeout=LIVE_TIMEOUT):
        t = text.encode() if isinstance(text, str) else text
        ok, status, body = self.until(path, lambda s, b: s == 200 and t in b, timeout)
        return ok, status

    def gone(self, path, allowed=(404, 410), timeout=LIVE_TIMEOUT):
        """Polls until path answers one of allowed (a moved note's old URL may
        also redirect: 301)."""
        ok, status, _ = self.until(path, lambda s, b: s in allowed, timeout)
        return ok, status
