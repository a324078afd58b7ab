#!/usr/bin/env python3
"""test-varnish: real Varnish in front of quire, purged by exactly what changed.

Starts `quire serve` on a copy of vault-sample (with the sync API, and
quire.yml's cache: and purge: sections pointing at the Varnish below),
and varnishd (7.x, vmod xkey from Debian's varnish-modules) with
deploy/varnish.vcl as documented, its backend's port replaced. Both run
on free ports and are stopped at the end.

  1. Warms the cache: every URL of the site (crawled from "/" on the main
     host and on the routed custom domain, plus the feeds, sitemaps,
     robots.txt and explorer data), twice through Varnish; the second
     fetch of each is a hit (X-Cache, set by the VCL from obj.hits).
  2. Retitles a note and adds a word to its body through the sync API,
     waits for the snapshot to be live and the purger to be idle, then
     fetches every URL again through Varnish and straight from quire:
     every URL answers through Varnish exactly what quire answers now
     (status, Location, body); every URL whose bytes changed was a miss
     (purged), and every other one is still a hit.
  3. Deletes a note the same way: its page, cached as a 200, is a 404
     through Varnish, and again everything else matches quire, with
     hits for what did not change.
  4. Edits the note routed to the custom domain (its pages there are the
     host's own, purged by host and path), and creates a note where a 404
     was cached: both fresh through Varnish, everything else a hit.

All of it runs twice: with quire.yml's purger sending xkey purges, and
sending BANs of the same keys (the VCL's BAN branch, for a Varnish
without the vmod).

Then the same VCL in front of each real vault of ../shared/corpus
(pwsh-docs, obsidian-tasks-docs; skipped, saying so, without it), xkey
purges: every crawled URL warmed and a hit, then a note edited and
another deleted through the sync API, and after each every URL through
Varnish is what quire answers, a miss exactly where the bytes changed.

Skips (77) when varnishd or the xkey vmod is not installed.
"""
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from quiretest import QUIRE, ROOT, check, crawl, fetch, free_port, stop, summary  # noqa: E402

XKEY = "/usr/lib/x86_64-linux-gnu/varnish/vmods/libvmod_xkey.so"
CORPUS = os.environ.get("QUIRE_CORPUS", os.path.join(ROOT, "..", "shared", "corpus"))
TOKEN = "test-varnish-token-0123456789abcdef"
CUSTOM = "domains.quire.localhost"


def metric(qport, name):
    _, _, body, _ = fetch(qport, "127.0.0.1", "/metrics")
    m = re.search(r"^%s (\d+)" % re.escape(name), body.decode(), re.M)
    return int(m.group(1)) if m else -1


def settle(qport, version):
    """Waits until snapshot `version` is live and the purger has sent everything."""
    st, _, body, _ = fetch(qport, "127.0.0.1", "/api/v1/wait?version=%d&timeout=10000" % version,
                           headers={"Authorization": "Bearer " + TOKEN})
    check(st == 200, "wait for version %d: %d" % (version, st))
    for _ in range(200):
        if metric(qport, "quire_purge_pending") == 0:
            return
        time.sleep(0.02)
    check(False, "the purger is still busy after 4 s")


def write(qport, path, data=None):
    """PUT (data) or DELETE (None) through the sync API; returns the version."""
    auth = {"Authorization": "Bearer " + TOKEN}
    if data is None:
        st, _, body, _ = fetch(qport, "127.0.0.1", "/api/v1/files/" + path, "DELETE", headers=auth)
    else:
        st, _, body, _ = fetch(qport, "127.0.0.1", "/api/v1/files/" + path, "PUT", data, auth)
    check(st in (200, 201), "sync API %s %s: %d %r" % ("PUT" if data else "DELETE", path, st,
                                                      body[:200]))
    return json.loads(body)["version"]


class Site:
    def __init__(self, qport, vport, urls):
        self.qport, self.vport, self.urls = qport, vport, urls

    def warm(self, least):
        """Every URL fetched twice through Varnish (the second a hit); what quire answers."""
        check(len(self.urls) > least, "crawled %d URLs" % len(self.urls))
        for k in self.urls:
            fetch(self.vport, k[0], k[1], headers={"Accept-Encoding": "gzip"})
        hits = [fetch(self.vport, k[0], k[1], headers={"Accept-Encoding": "gzip"})[3]
                for k in self.urls]
        check(all(h == "HIT" for h in hits), "warm: every URL is a hit the second time (%d of %d)"
              % (hits.count("HIT"), len(self.urls)))
        return self.direct()

    def direct(self):
        return {(h, u): fetch(self.qport, h, u)[:3] for h, u in self.urls}

    def compare(self, before, what):
        """Through Varnish vs quire now: fresh everywhere, misses exactly where bytes changed."""
        now = self.direct()
        changed = {k for k in self.urls if now[k] != before[k]}
        stale, hit_changed, missed = [], [], []
        for k in self.urls:
            st, loc, body, xc = fetch(self.vport, k[0], k[1], headers={"Accept-Encoding": "gzip"})
            if (st, loc, body) != now[k]:
                stale.append(k)
            if k in changed and xc == "HIT":
                hit_changed.append(k)
            if k not in changed and xc != "HIT":
                missed.append(k)
        check(not stale, "%s: stale through Varnish: %s" % (what, stale[:5]))
        check(not hit_changed, "%s: changed but a hit: %s" % (what, hit_changed[:5]))
        check(not missed, "%s: unchanged but purged: %s" % (what, missed[:5]))
        print("%s: %d of %d URLs changed and were purged; %d still hits" % (
            what, len(changed), len(self.urls), len(self.urls) - len(changed)))
        return changed, now


def start_varnish(tmp, vport, qport, storage="64m"):
    with open(os.path.join(ROOT, "deploy", "varnish.vcl")) as f:
        vcl = f.read().replace('.port = "8080"', '.port = "%d"' % qport)
    path = os.path.join(tmp, "quire.vcl")
    with open(path, "w") as f:
        f.write(vcl)
    cmd = ["varnishd", "-F", "-n", os.path.join(tmp, "varnish"), "-a", "127.0.0.1:%d" % vport,
           "-f", path, "-s", "malloc," + storage]
    if os.geteuid() == 0:
        cmd += ["-j", "none"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", vport), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("varnishd did not start")


def start_quire(vault, qport):
    env = dict(os.environ, QUIRE_TOKEN=TOKEN)
    proc = subprocess.Popen([QUIRE, "serve", "--vault", vault, "--listen", "127.0.0.1:%d" % qport,
                             "--threads", "1", "--no-watch"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in proc.stdout:
        if "serving" in line:
            return proc
    proc.kill()
    raise SystemExit("quire serve did not start")


def surrogate_keys(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    keys = (r.getheader("Surrogate-Key") or "").split()
    c.close()
    return r.status, keys


def tag_and_tree_keys(qport):
    """A tagged note and its tag's listing share the tag's key; the explorer's documents say "tree"."""
    status, body = fetch(qport, "127.0.0.1", "/tags/")[0], fetch(qport, "127.0.0.1", "/tags/")[2]
    tags = re.findall(rb'href="(/tags/[^"/]+)"', body)
    check(status == 200 and tags, "/tags/ lists tags")
    if not tags:
        return
    tag = tags[0].decode()
    status, tkeys = surrogate_keys(qport, tag)
    tkeys = [k for k in tkeys if k.startswith("t")]
    check(status == 200 and len(tkeys) == 1, "%s carries one tag key: %s" % (tag, tkeys))
    listing = fetch(qport, "127.0.0.1", tag)[2]
    notes = re.findall(rb'class="listing-link" href="([^"]+)"', listing)
    check(notes, "%s lists notes" % tag)
    if notes and tkeys:
        status, nkeys = surrogate_keys(qport, notes[0].decode())
        check(status == 200 and tkeys[0] in nkeys,
              "%s, listed under %s, carries its key %s: %s" % (notes[0].decode(), tag, tkeys[0], nkeys))
    _, keys = surrogate_keys(qport, "/_quire/tree.json")
    check("tree" in keys, "/_quire/tree.json carries the key tree: %s" % keys)


def run(tmp, qport, vport):
    tag_and_tree_keys(qport)
    site = Site(qport, vport, [])
    for host in ("127.0.0.1", CUSTOM):
        site.urls += [(host, u) for u in crawl(qport, host)]
    before = site.warm(50)
    sent0 = metric(qport, 'quire_purge_requests_total{result="sent"}')

    note = os.path.join(tmp, "vault", "writing", "links.md")
    with open(note, "rb") as f:
        src = f.read()
    edited = src.replace(b"title: Links\n", b"title: Links, retitled\n", 1)
    check(edited != src, "the note to edit has the title it had")
    edited += b"\n\nA word only this edit wrote: varnishpurgeword.\n"
    settle(qport, write(qport, "writing/links.md", edited))
    check(metric(qport, 'quire_purge_requests_total{result="failed"}') == 0, "no purge failed")
    print("purge requests for the edit: %d" %
          (metric(qport, 'quire_purge_requests_total{result="sent"}') - sent0))
    changed, before = site.compare(before, "edit")
    check(("127.0.0.1", "/writing/links") in changed, "the edited note's page changed")
    check(len(changed) > 1, "pages that depend on the note changed too (%d)" % len(changed))

    gone = ("127.0.0.1", "/writing/callouts")
    check(fetch(vport, *gone)[0] == 200, "the note to delete is cached as a 200")
    settle(qport, write(qport, "writing/callouts.md"))
    changed, before = site.compare(before, "delete")
    check(gone in changed, "the deleted note's page changed")
    check(fetch(vport, *gone)[0] == 404, "the deleted note is a 404 through Varnish")

    # the note routed to the custom domain: its pages there are the host's own
    routed = os.path.join(tmp, "vault", "publishing", "custom-domains.md")
    with open(routed, "rb") as f:
        src = f.read()
    settle(qport, write(qport, "publishing/custom-domains.md", src + b"\n\nRouted edit.\n"))
    changed, before = site.compare(before, "routed edit")
    check((CUSTOM, "/") in changed and (CUSTOM, "/guide") in changed,
          "the routed note's pages on %s changed" % CUSTOM)

    # a new note where a 404 was cached: the 404 carries the key the page is purged by
    new = ("127.0.0.1", "/writing/brand-new")
    check(fetch(vport, *new, headers={"Accept-Encoding": "gzip"})[0] == 404, "a 404 before")
    check(fetch(vport, *new, headers={"Accept-Encoding": "gzip"})[3] == "HIT", "the 404 is cached")
    settle(qport, write(qport, "writing/brand-new.md", b"# Brand new\n\nA new note.\n"))
    r = fetch(vport, *new, headers={"Accept-Encoding": "gzip"})
    check(r[0] == 200 and r[3] == "MISS", "the new note is a 200 through Varnish at once")
    changed, before = site.compare(before, "create")

    # the vault's publish.css: its one stylesheet is purged, every page stays a hit
    css = [k for k in site.urls if k[1] == "/_quire/publish.css"]
    check(("127.0.0.1", "/_quire/publish.css") in css, "pages link /_quire/publish.css: %s" % css)
    settle(qport, write(qport, "publish.css", b".callout { outline: 1px solid teal; }\n"))
    changed, before = site.compare(before, "publish.css")
    check(changed and changed <= set(css),
          "publish.css changed its stylesheet and nothing else: %s" % sorted(changed)[:5])
    check(b"teal" in fetch(vport, "127.0.0.1", "/_quire/publish.css")[2],
          "the new publish.css is served through Varnish at once")


def scenario(name, src, method, body, storage="64m"):
    """quire on a copy of src, quire.yml's purger using method, the shipped VCL in front: body()."""
    print("-- %s, method: %s" % (name, method))
    tmp = tempfile.mkdtemp(prefix="quire-varnish-")
    procs = []
    try:
        vault = os.path.join(tmp, "vault")
        shutil.copytree(src, vault, ignore=shutil.ignore_patterns(".quire"))
        for d, _, _ in os.walk(vault):
            os.chmod(d, 0o755)  # the corpus is read-only; the sync API writes into the copy
        qport, vport = free_port(), free_port()
        with open(os.path.join(vault, "quire.yml"), "a") as f:
            f.write("\ncache: {s_maxage: 3600, stale_while_revalidate: 30}\n"
                    "purge:\n  - varnish: http://127.0.0.1:%d\n    method: %s\n" % (vport, method))
        procs.append(start_varnish(tmp, vport, qport, storage))
        procs.append(start_quire(vault, qport))
        settle(qport, 0)
        body(tmp, qport, vport)
    finally:
        stop(procs, 10)
        shutil.rmtree(tmp, ignore_errors=True)


def corpus_run(tmp, qport, vport):
    site = Site(qport, vport, [("127.0.0.1", u) for u in crawl(qport, "127.0.0.1")])
    before = site.warm(100)
    vault = os.path.join(tmp, "vault")
    notes = sorted(os.path.relpath(os.path.join(d, n), vault) for d, _, names in os.walk(vault)
                   for n in names if n.endswith(".md") and "/." not in d)
    edit, delete = notes[len(notes) // 3], notes[2 * len(notes) // 3]
    with open(os.path.join(vault, edit), "rb") as f:
        src = f.read()
    settle(qport, write(qport, edit, src + b"\n\nA word only this edit wrote: varnishcorpusword.\n"))
    changed, before = site.compare(before, "edit of " + edit)
    check(any(b"varnishcorpusword" in before[k][2] for k in changed),
          "the edited note's page is among the %d that changed" % len(changed))
    settle(qport, write(qport, delete))
    changed, before = site.compare(before, "delete of " + delete)
    check(any(before[k][0] == 404 for k in changed), "the deleted note's page is a 404 now")


def main():
    if not shutil.which("varnishd") or not os.path.exists(XKEY):
        print("varnishd or vmod xkey not installed: skipped")
        return 77
    for method in ("xkey", "ban"):
        scenario("vault-sample", os.path.join(ROOT, "vault-sample"), method, run)
    for name in ("pwsh-docs", "obsidian-tasks-docs"):
        if os.path.isdir(os.path.join(CORPUS, name)):
            scenario(name, os.path.join(CORPUS, name), "xkey", corpus_run, "512m")
        else:
            print("  skipped: %s needs ../shared/corpus (a real vault behind the shipped VCL)"
                  % name, file=sys.stderr)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
