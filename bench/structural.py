#!/usr/bin/env python3
"""Structural changes to live through the sync API, on a settled server.

    bench/structural.py QUIRE VAULT [--n 30] [--folder-rounds 3] [--json]
                        [--keep-data] [--conns 4] [--gap 0.05] [--server-cores LIST]

Copies VAULT to a temporary folder (without its .quire, unless --keep-data:
then a search index filled beforehand is only checked), serves it with
`QUIRE serve --threads 1 --token-file ... --no-watch --search-rate 0`,
pinned with taskset to the core that takes the interrupts of the copy's
disk (as build/bench/sync-bench does; --server-cores LIST chooses), this
process on the other cores, and waits until the log says "search index
ready". Then --n rounds, each of:

  create    PUT a new note into an existing folder, If-None-Match: *
  edit      PUT it again: another body, the same title and links
  retitle   PUT an existing note with a new `title:` (the rest unchanged)
  rename    POST /api/v1/move of the new note to another name
  delete    DELETE it

and --folder-rounds renames of a folder of about 100 notes (the one whose
notes, subfolders included, are nearest 100 between 50 and 200, else
nearest 100), each round giving the folder a new name beside the old one,
done two ways: "folder", one POST /api/v1/move of the folder (as an
editor's file tree, a file watcher or a WebDAV MOVE bring it), then
"files", every file in it moved with its own POST /api/v1/move (as a sync
client that knows no folder moves does), sent as fast as the server
answers over --conns keep-alive connections at once.

A latency runs from sending the request to the first GET that shows the
whole result, over keep-alive connections (polling every 0.3 ms):
  create   the page is served with its text and its folder's explorer
           document (/_quire/tree.json for the root,
           /_quire/tree/<folder path>.json else, with the pages it names
           in "more" for a big folder) lists its URL;
  edit     the page is served with the new text;
  retitle  the page's <title> and its folder's explorer document carry the
           new title;
  rename   the new URL is served with the text, the old one no longer
           serves the page (301 to the new URL, as docs/http-api.md says,
           or 404: which of the two is counted, in "old_url"), and the
           folder's explorer document lists the new URL and not the old;
  delete   the URL answers 404 or 410 and the explorer document no longer
           lists it;
  folder   "requests": from the first move sent to the last answer;
           "live": until the note whose move got the highest snapshot
           version is served at its new URL and its old URL no longer
           serves it (as for rename), then every other moved note is
           checked the same way (and the new folder's explorer document is
           served, the old one gone): if all are, snapshots being whole and
           in order, "live" is that first moment, else the end of the sweep
           that found them all ("swept" is when the sweep ended). Then each
           old URL is asked once more: redirect, gone or other.
Two environment variables help to see where a change's time goes:
STRUCTURAL_SERVE_ARGS adds arguments to `quire serve` (--verbose logs each
change the loader applies, with its phases), and STRUCTURAL_LOG names a
file to keep the server's log in.
Each single-note kind also reports how long the API took to answer (p50:
the bytes written and fsynced, before anything is rendered).
Between changes the client waits --gap seconds (default 0.05), as an
editor's changes are apart, so that a change does not measure the last
one's leftovers. A change not visible after 30 s counts as "never", with
what was still missing.

A note's URL is computed like src/vault/vault.c (vault_note_url: each segment
lowercased, runs of other characters than letters, digits, '-', '_', '.'
made one '-'; `slug:` honoured) and kept only if the server's explorer
documents list it (so drafts, and any URL this gets wrong, are left out of
the checks: counted as "unchecked").

Prints p50 and p90 (nearest rank) of each kind in milliseconds, and the
folder rename's figures; --json prints one JSON object instead. Exit 2 if
the server died, 1 on another failure. Python 3 standard library only.
"""

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
import threading
import time
import urllib.parse

TIMEOUT = 30.0
POLL = 0.0003
KINDS = ("create", "edit", "retitle", "rename", "delete")


class ServerGone(Exception):
    pass


def log(msg):
    print("structural: " + msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# The vault: notes, their URLs, the folder to rename


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


def note_url(path, slug=None):
    """src/vault/vault.c vault_note_url for a vault path ending in .md."""
    if slug and slug.startswith("/"):
        segs = [s for s in slug.split("/") if s]
        url = "".join("/" + slugify(s) for s in segs)
        return url + "/" if slug.endswith("/") or not url else url
    segs = path[:-3].split("/")
    url = "".join("/" + slugify(s) for s in segs[:-1])
    last = segs[-1]
    if slug:
        return url + "/" + slugify(slug)
    if last.lower() == "index":
        return url + "/"
    return url + "/" + slugify(last)


def enc(url):
    """The URL as the server writes it in its documents (buf_add_urlpath)."""
    return urllib.parse.quote(url, safe="/~")


def tree_doc(folder):
    return "/_quire/tree.json" if not folder else "/_quire/tree/%s.json" % enc(folder)


FM_KEY = re.compile(r"^([A-Za-z_][\w.-]*):[ \t]*(.*)$")


def frontmatter(text):
    """(dict of top-level scalar keys, end offset of the frontmatter or 0)."""
    if not text.startswith("---\n"):
        return {}, 0
    end = text.find("\n---", 3)
    if end < 0:
        return {}, 0
    keys = {}
    for line in text[4:end].split("\n"):
        m = FM_KEY.match(line)
        if m:
            v = m.group(2).strip()
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
                v = v[1:-1]
            keys[m.group(1).lower()] = v
    return keys, end


def scan(vault):
    """Every .md file: {path: {"slug", "url"}}, and every other file."""
    notes, others = {}, []
    for root, dirs, files in os.walk(vault):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if f.startswith("."):
                continue
            rel = os.path.relpath(os.path.join(root, f), vault).replace(os.sep, "/")
            if not f.endswith(".md"):
                others.append(rel)
                continue
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                keys, _ = frontmatter(fh.read(8192))
            slug = keys.get("slug") or None
            notes[rel] = {"slug": slug, "url": note_url(rel, slug)}
    return notes, others


def folder_of(path):
    return path.rsplit("/", 1)[0] if "/" in path else ""


def pick_folder(notes, lo=50, hi=200, want=100):
    """The folder (not the root, not a dot-folder) whose notes, subfolders
    included, are nearest `want` within [lo, hi], else nearest `want`."""
    counts = {}
    for p in notes:
        f = folder_of(p)
        while f:
            counts[f] = counts.get(f, 0) + 1
            f = folder_of(f)
    if not counts:
        return None, 0
    inside = {f: n for f, n in counts.items() if lo <= n <= hi}
    pool = inside or counts
    best = min(pool, key=lambda f: (abs(pool[f] - want), f.count("/"), f))
    return best, pool[best]


# ---------------------------------------------------------------------------
# Pinning (as build/bench/sync-bench does)


def disk_core(path):
    """The core that takes most interrupts of the disk holding path, or None."""
    try:
        st = os.stat(path)
        maj, mnr = os.major(st.st_dev), os.minor(st.st_dev)
        dev = None
        for link in ("/sys/dev/block/%d:%d/device" % (maj, mnr),
                     "/sys/dev/block/%d:%d/../device" % (maj, mnr)):
            if os.path.exists(link):
                dev = os.path.realpath(link)
                break
        irqs = None
        while dev and len(dev) > 1:
            if os.path.isdir(os.path.join(dev, "msi_irqs")):
                irqs = {int(x) for x in os.listdir(os.path.join(dev, "msi_irqs")) if x.isdigit()}
                break
            dev = os.path.dirname(dev)
        if not irqs:
            return None
        with open("/proc/interrupts") as fh:
            ncpu = fh.readline().count("CPU")
            counts = [0] * ncpu
            for line in fh:
                head, _, rest = line.partition(":")
                if head.strip().isdigit() and int(head) in irqs:
                    for i, x in enumerate(rest.split()[:ncpu]):
                        counts[i] += int(x) if x.isdigit() else 0
        best = max(range(ncpu), key=lambda i: counts[i])
        return best if counts[best] > 0 else None
    except (OSError, ValueError):
        return None


def cpu_list(text):
    """taskset's list form ("0", "0,2", "1-3") as a set of cores."""
    cores = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        if a.strip().isdigit():
            cores |= set(range(int(a), int(b if b.strip().isdigit() else a) + 1))
    return cores


# ---------------------------------------------------------------------------
# HTTP


class Client:
    """Keep-alive connections by name; reconnects once when the server has
    closed an idle one."""

    def __init__(self, port, token):
        self.port = port
        self.auth = {"Authorization": "Bearer " + token}
        self.conns = {}

    def send(self, name, method, path, body=None, headers=None):
        for attempt in (0, 1):
            c = self.conns.get(name)
            if c is None:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                c.connect()
                c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.conns[name] = c
            try:
                c.request(method, path, body=body, headers=headers or {})
                r = c.getresponse()
                return r.status, r.getheader("Location"), r.read()
            except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected,
                    http.client.CannotSendRequest, http.client.ResponseNotReady):
                c.close()
                self.conns.pop(name, None)
                if attempt:
                    raise

    def get(self, path, name="get"):
        return self.send(name, "GET", path)

    def api(self, method, path, body=None, headers=None, name="api"):
        h = dict(self.auth)
        h.update(headers or {})
        status, _, b = self.send(name, method, path, body, h)
        if status >= 300:
            raise RuntimeError("%s %s answered %d %s" % (method, path, status, b[:200]))
        try:
            return json.loads(b)
        except ValueError:
            return {}

    def close(self):
        for c in self.conns.values():
            c.close()
        self.conns = {}


def page_has(url, marker):
    return ("page %s shows %r" % (url, marker),
            lambda c: (lambda s, _, b: s == 200 and marker in b)(*c.get(url)))


def page_title(url, title):
    return ("page %s has <title>%s" % (url, title.decode()),
            lambda c: (lambda s, _, b: s == 200 and b"<title>" + title in b)(*c.get(url)))


def gone(url):
    return ("%s gone" % url, lambda c: c.get(url)[0] in (404, 410))


def old_state(client, old, new):
    """What the old URL of a moved note answers: "redirect" (301 or 308 to
    the new URL), "gone" (404 or 410) or "other" (still the page, or
    elsewhere)."""
    s, loc, _ = client.get(old)
    if s in (301, 308) and loc is not None and urllib.parse.urlsplit(loc).path == new:
        return "redirect"
    return "gone" if s in (404, 410) else "other"


def moved_away(old, new):
    return ("%s redirects to %s (or is gone)" % (old, new),
            lambda c: old_state(c, old, new) != "other")


def whole_doc(c, doc):
    """A folder's explorer document with its other pages ("more"): the
    status of the first, and the bytes of them all."""
    s, _, b = c.get(doc)
    if s != 200:
        return s, b
    try:
        more = json.loads(b).get("more") or []
    except ValueError:
        return s, b
    parts = [b]
    for u in more:
        ms, _, mb = c.get(u)
        if ms != 200:
            return ms, b
        parts.append(mb)
    return s, b"\n".join(parts)


def doc_has(doc, needle, present=True):
    def check(c):
        s, b = whole_doc(c, doc)
        return s == 200 and (needle in b) == present
    return ("%s %s %s" % (doc, "lists" if present else "no longer lists", needle.decode()), check)


def until(client, t0, checks, timeout=TIMEOUT):
    """Milliseconds from t0 until every check has passed (each is checked
    again only until it passes), or (None, what was still missing)."""
    pending = list(checks)
    while True:
        pending = [c for c in pending if not c[1](client)]
        if not pending:
            return (time.perf_counter() - t0) * 1000, None
        if time.perf_counter() - t0 > timeout:
            return None, "; ".join(c[0] for c in pending)
        time.sleep(POLL)


# ---------------------------------------------------------------------------


def pct(xs, p):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    return round(xs[int(p * (len(xs) - 1) + 0.5)], 2)


def retitled(body, stamp):
    """The note's bytes with its frontmatter title replaced by stamp."""
    if body.startswith(b"---\n") and b"\n---" in body[3:]:
        end = body.index(b"\n---", 3)
        lines = body[4:end].split(b"\n")
        keep, skip = [], False
        for line in lines:
            if line.startswith(b"title:"):
                skip = True       # and its continuation lines, if any
                continue
            if skip and line[:1] in (b" ", b"\t"):
                continue
            skip = False
            keep.append(line)
        return b"---\ntitle: " + stamp + b"\n" + b"\n".join(keep) + body[end:]
    return b"---\ntitle: " + stamp + b"\n---\n" + body


def run(quire, vault, n, folder_rounds, conns, gap, keep_data, server_cores):
    tmp = tempfile.mkdtemp(prefix="quire-structural-")
    v = os.path.join(tmp, "v")
    t0 = time.time()
    shutil.copytree(vault, v, ignore=None if keep_data else shutil.ignore_patterns(".quire"))
    copy_s = time.time() - t0
    token = "structural-token-%08d" % os.getpid()
    with open(os.path.join(tmp, "token"), "w") as fh:
        fh.write(token + "\n")
    out = {"vault": vault, "copy_s": round(copy_s, 1)}
    cores = server_cores
    if cores is None:
        dc = disk_core(v)
        cores = str(dc if dc is not None else 0)
        out["server_core_why"] = ("it takes the disk's interrupts" if dc is not None
                                  else "the disk's interrupts not found")
    # this process on every other core (as sync-bench does, whatever core it was started on)
    rest = set(range(os.cpu_count() or 1)) - cpu_list(cores)
    if rest:
        os.sched_setaffinity(0, rest)
    out["server_cores"] = cores
    out["client_cores"] = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    logpath = os.path.join(tmp, "serve.log")
    logf = open(logpath, "w")
    argv = ["taskset", "-c", cores, quire, "serve", "--vault", v, "--listen", "127.0.0.1:0",
            "--threads", "1", "--token-file", os.path.join(tmp, "token"), "--no-watch",
            "--search-rate", "0"] + os.environ.get("STRUCTURAL_SERVE_ARGS", "").split()
    t0 = time.time()
    srv = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT)

    def log_text():
        with open(logpath, errors="replace") as fh:
            return fh.read()

    def alive(where):
        if srv.poll() is not None:
            raise ServerGone("quire exited with code %s %s:\n%s"
                             % (srv.returncode, where, log_text()[-2000:]))

    client = None
    try:
        port = None
        while port is None:
            m = re.search(r"^serving .* at http://[^:]+:(\d+)/", log_text(), re.M)
            if m:
                port = int(m.group(1))
            else:
                alive("while starting")
                if time.time() - t0 > 900:
                    raise RuntimeError("the server did not start in 15 minutes")
                time.sleep(0.05)
        out["serve_s"] = round(time.time() - t0, 2)
        m = re.search(r"loaded (\d+) notes \((\d+) published\) in (\d+) ms", log_text())
        if m:
            out["notes"], out["published"] = int(m.group(1)), int(m.group(2))
            out["load_s"] = int(m.group(3)) / 1000.0
        while "search index ready" not in log_text():
            alive("while its search index fills")
            if time.time() - t0 > 1800:
                raise RuntimeError("the search index was not ready in 30 minutes")
            time.sleep(0.2)
        out["ready_s"] = round(time.time() - t0, 2)
        client = Client(port, token)

        # what the server lists: every explorer document, from the root down
        notes, others = scan(v)
        listed, folders, todo = set(), {}, [""]
        while todo:
            f = todo.pop()
            s, _, b = client.get(tree_doc(f))
            if s != 200:
                continue
            doc = json.loads(b)
            folders[f] = doc
            children = list(doc.get("children", []))
            for u in doc.get("more") or []:
                ms, _, mb = client.get(u)
                if ms == 200:
                    children += json.loads(mb).get("children", [])
            for ch in children:
                if "name" in ch:
                    todo.append(f + "/" + ch["name"] if f else ch["name"])
                    if ch.get("url"):
                        listed.add(ch["url"])
                else:
                    listed.add(ch["url"])
        checked = {p: d for p, d in notes.items() if enc(d["url"]) in listed}
        out["explorer_documents"] = len(folders)
        out["listed"] = len(listed)
        out["checked_notes"] = len(checked)
        if not checked:
            raise RuntimeError("no note's URL is in the explorer documents")
        log("%s: %d notes, %d listed in %d explorer documents, %d matched to their files; "
            "server on core %s" % (vault, len(notes), len(listed), len(folders), len(checked),
                                   cores))
        candidates = sorted(p for p, d in checked.items()
                            if not d["slug"] and not p.lower().endswith("/index.md")
                            and p.lower() != "index.md")
        if not candidates:
            raise RuntimeError("no published note without a slug to change")
        rnd = random.Random(7)
        nonce = "%x" % rnd.getrandbits(32)
        lat = {k: [] for k in KINDS}
        answered = {k: [] for k in KINDS}   # until the API's answer (the bytes on disk)
        olds = {"redirect": 0, "gone": 0, "other": 0}   # a renamed note's old URL, at the end
        never = []

        def measure(kind, t, checks):
            answered[kind].append((time.perf_counter() - t) * 1000)
            ms, missing = until(client, t, checks)
            alive("after a %s" % kind)
            lat[kind].append(ms)
            if ms is None:
                never.append({"kind": kind, "missing": missing})
                log("%s never became visible: %s" % (kind, missing))
            time.sleep(gap)

        for i in range(n):
            host = candidates[rnd.randrange(len(candidates))]
            folder = folder_of(host)
            doc = tree_doc(folder)
            pre = folder + "/" if folder else ""
            p = pre + "zz-structural-new-%d.md" % i
            url = enc(note_url(p))
            link = os.path.splitext(os.path.basename(candidates[rnd.randrange(len(candidates))]))[0]

            def mk(tag):
                return ("---\ntitle: Structural %d\ntags: [structural]\n---\n%s-%s-%d links "
                        "[[%s]]\n" % (i, tag, nonce, i, link)).encode()
            made, edited = ("made-%s-%d" % (nonce, i)).encode(), ("edited-%s-%d" % (nonce, i)).encode()
            t = time.perf_counter()
            client.api("PUT", "/api/v1/files/" + enc(p), mk("made"), {"If-None-Match": "*"})
            measure("create", t, [page_has(url, made), doc_has(doc, b'"url":"%s"' % url.encode())])
            t = time.perf_counter()
            client.api("PUT", "/api/v1/files/" + enc(p), mk("edited"))
            measure("edit", t, [page_has(url, edited)])

            e = candidates[rnd.randrange(len(candidates))]
            with open(os.path.join(v, e), "rb") as fh:
                body = fh.read()
            stamp = ("Structural retitle %s %03d" % (nonce, i)).encode()
            eurl = enc(checked[e]["url"])
            t = time.perf_counter()
            client.api("PUT", "/api/v1/files/" + enc(e), retitled(body, stamp))
            measure("retitle", t, [page_title(eurl, stamp),
                                   doc_has(tree_doc(folder_of(e)), b'"title":"%s"' % stamp)])

            q = pre + "zz-structural-moved-%d.md" % i
            qurl = enc(note_url(q))
            t = time.perf_counter()
            client.api("POST", "/api/v1/move", json.dumps({"from": p, "to": q}).encode(),
                       {"Content-Type": "application/json"})
            measure("rename", t, [page_has(qurl, edited), moved_away(url, qurl),
                                  doc_has(doc, b'"url":"%s"' % qurl.encode()),
                                  doc_has(doc, b'"url":"%s"' % url.encode(), False)])
            olds[old_state(client, url, qurl)] += 1
            t = time.perf_counter()
            client.api("DELETE", "/api/v1/files/" + enc(q))
            measure("delete", t, [gone(qurl), doc_has(doc, b'"url":"%s"' % qurl.encode(), False)])
        for k in KINDS:
            xs = lat[k]
            out[k] = {"n": len(xs), "p50_ms": pct(xs, 0.5), "p90_ms": pct(xs, 0.9),
                      "max_ms": pct(xs, 1.0), "never": sum(1 for x in xs if x is None),
                      "answered_p50_ms": pct(answered[k], 0.5)}
            log("%-8s p50 %s ms, p90 %s ms (%d); the API answered in %s ms (p50)"
                % (k, out[k]["p50_ms"], out[k]["p90_ms"], len(xs), out[k]["answered_p50_ms"]))

        out["rename"]["old_url"] = olds
        # the folder rename
        name, count = pick_folder(notes)
        if name and folder_rounds:
            out["folder"], cur = folder_rename(client, v, name, count, notes, others, checked,
                                               folder_rounds, conns, alive, nonce, True, name)
            out["folder_files"], cur = folder_rename(client, v, name, count, notes, others,
                                                     checked, folder_rounds, conns, alive, nonce,
                                                     False, cur, folder_rounds)
        out["never"] = never
        out["rounds"] = n
        out["gap_s"] = gap
        alive("at the end")
        return out
    finally:
        if client:
            client.close()
        if srv.poll() is None:
            srv.terminate()
            try:
                srv.wait(20)
            except subprocess.TimeoutExpired:
                srv.kill()
                srv.wait()
        logf.close()
        if os.environ.get("STRUCTURAL_LOG"):
            shutil.copy(logpath, os.environ["STRUCTURAL_LOG"])
        shutil.rmtree(tmp, ignore_errors=True)


def folder_rename(client, v, name, count, notes, others, checked, rounds, conns, alive, nonce,
                  whole, cur, start=0):
    """Renames the folder first called name, now cur, rounds times: whole,
    with one move of the folder, else one move per file. Returns the
    figures and the folder's name at the end."""
    parent, base = folder_of(name), name.rsplit("/", 1)[-1]
    inside = sorted(p for p in notes if p.startswith(name + "/"))
    files = sorted(inside + [p for p in others if p.startswith(name + "/")])
    watched = [p for p in inside if p in checked]
    res = {"folder": name, "notes": count, "files": len(files), "checked": len(watched),
           "subfolders": len({folder_of(p) for p in inside} - {name}),
           "connections": 1 if whole else conns, "moves": "folder" if whole else "files",
           "rounds": rounds, "requests_ms": [], "live_ms": [], "swept_ms": [],
           "never": 0, "errors": [], "old_urls": []}
    log("folder rename, %s: %s (%d notes, %d checked, %d files) over %d connections"
        % (res["moves"], name, count, len(watched), len(files), res["connections"]))
    if not watched:
        res["errors"].append("no published note in %s: nothing to check" % name)
        res["rounds"] = 0
        rounds = 0
    for r in range(rounds):
        new = (parent + "/" if parent else "") + "%s %s r%d" % (base, nonce, start + r + 1)
        moves = [(f, new + f[len(cur):]) for f in (cur + p[len(name):] for p in files)]
        q = list(enumerate(moves)) if not whole else [(None, (cur, new))]
        lock = threading.Lock()
        answers = [None] * len(moves)
        go = threading.Event()
        clients = [Client(client.port, client.auth["Authorization"][7:])
                   for _ in range(res["connections"])]
        for c in clients:       # connected before the clock starts
            c.get("/healthz", name="api")

        def worker(c):
            go.wait()
            while True:
                with lock:
                    if not q:
                        return
                    k, (a, b) = q.pop(0)
                try:
                    ans = c.api("POST", "/api/v1/move", json.dumps({"from": a, "to": b}).encode(),
                                {"Content-Type": "application/json"})
                    got = (time.perf_counter(), ans.get("version", 0))
                except Exception as e:   # noqa: BLE001 - reported, not fatal
                    got = (time.perf_counter(), None)
                    with lock:
                        res["errors"].append("%s -> %s: %s" % (a, b, e))
                for i in (range(len(moves)) if k is None else [k]):
                    answers[i] = got

        threads = [threading.Thread(target=worker, args=(c,)) for c in clients]
        for th in threads:
            th.start()
        t0 = time.perf_counter()
        go.set()
        for th in threads:
            th.join()
        done = max(a[0] for a in answers)
        res["requests_ms"].append(round((done - t0) * 1000, 2))
        for c in clients:
            c.close()
        # expected: each checked note at its new URL, its old URL redirecting
        exp = []
        for p in watched:
            old_path = cur + p[len(name):]
            new_path = new + p[len(name):]
            k = [m[0] for m in moves].index(old_path)
            exp.append((answers[k][1] or 0, enc(note_url(old_path, notes[p]["slug"])),
                        enc(note_url(new_path, notes[p]["slug"]))))
        exp.sort(reverse=True)
        ver, old_u, new_u = exp[0]
        last = [("%s served" % new_u, lambda c, u=new_u: c.get(u)[0] == 200), moved_away(old_u, new_u)]
        live, missing = until(client, t0, last)
        sweep = [c for _, o, nu in exp[1:] for c in (
            ("%s served" % nu, lambda c, u=nu: c.get(u)[0] == 200), moved_away(o, nu))]
        sweep.append(doc_has(tree_doc(new), b'"children"'))
        sweep.append(("%s gone" % tree_doc(cur), lambda c, d=tree_doc(cur): c.get(d)[0] == 404))
        first_pass = [c for c in sweep if not c[1](client)]
        swept, missing2 = until(client, t0, first_pass)
        alive("after a folder rename")
        if live is None or swept is None:
            res["never"] += 1
            res["errors"].append("not live after %d s: %s" % (TIMEOUT, missing or missing2))
            log("folder rename round %d never became visible: %s" % (r + 1, missing or missing2))
            res["live_ms"].append(None)
        else:
            res["live_ms"].append(round(live if not first_pass else swept, 2))
        res["swept_ms"].append(round(swept, 2) if swept is not None else None)
        states = {"redirect": 0, "gone": 0, "other": 0}
        for _, o, nu in exp:
            st = old_state(client, o, nu)
            states[st] += 1
            if st != "redirect" and len(res.setdefault("old_url_examples", [])) < 10:
                res["old_url_examples"].append("%s (%s, moved to %s)" % (o, st, nu))
                log("old URL %s: %s (moved to %s)" % (o, st, nu))
        res["old_urls"].append(states)
        log("folder rename round %d: %d moves answered in %.1f ms, live in %s ms (%d left after "
            "the last one was live, all checked at %s ms); old URLs: %d redirect, %d gone, "
            "%d other" % (r + 1, len(moves), res["requests_ms"][-1], res["live_ms"][-1],
                          len(first_pass), res["swept_ms"][-1], states["redirect"],
                          states["gone"], states["other"]))
        cur = new
        time.sleep(0.5)
    for k in ("requests_ms", "live_ms"):
        res[k.replace("_ms", "_p50_ms")] = pct(res[k], 0.5)
        res[k.replace("_ms", "_max_ms")] = pct(res[k], 1.0)
    return res, cur


def main():
    args = sys.argv[1:]
    if len(args) < 2 or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args and args[0] in ("-h", "--help") else 1

    def opt(name, default, conv):
        return conv(args[args.index(name) + 1]) if name in args else default
    try:
        out = run(args[0], args[1], opt("--n", 30, int), opt("--folder-rounds", 3, int),
                  opt("--conns", 4, int), opt("--gap", 0.05, float), "--keep-data" in args,
                  opt("--server-cores", None, str))
    except ServerGone as e:
        log("THE SERVER IS GONE: %s" % e)
        return 2
    except (RuntimeError, OSError, ValueError) as e:
        log("failed: %s" % e)
        return 1
    if "--json" in args:
        print(json.dumps(out))
        return 0
    print("%s notes (%s published), load %s s, search ready %s s after start; server on core %s"
          % (out.get("notes"), out.get("published"), out.get("load_s"), out["ready_s"],
             out["server_cores"]))
    for k in KINDS:
        print("  %-8s p50 %8s ms  p90 %8s ms  API answered p50 %6s ms  (%d rounds%s)" % (
            k, out[k]["p50_ms"], out[k]["p90_ms"], out[k]["answered_p50_ms"], out[k]["n"],
            ", %d never" % out[k]["never"] if out[k]["never"] else ""))
    for f in (out.get("folder"), out.get("folder_files")):
        if not f:
            continue
        print("  folder rename (%s) of %s: %d notes (%d files, %d subfolders), %d rounds over "
              "%d connections: requests %s ms, live %s ms (p50; max %s ms)%s" % (
                  "one move" if f["moves"] == "folder" else "a move per file",
                  f["folder"], f["notes"], f["files"], f["subfolders"], f["rounds"],
                  f["connections"], f["requests_p50_ms"], f["live_p50_ms"], f["live_max_ms"],
                  "; %d never" % f["never"] if f["never"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
