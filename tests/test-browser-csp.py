#!/usr/bin/env python3
"""test-browser-csp: the theme works under quire's Content-Security-Policy.

Starts the real `$QUIRE_BIN serve` on a copy of vault-sample and opens
pages in headless Chromium (Debian's package, installed by scripts/setup).
Chromium reports every Content-Security-Policy violation on its console,
which --enable-logging writes to stderr. For each page: no violation, the
inline script ran (<html class="js">), and the theme's script ran and
built what it builds from /_quire/tree.json (the explorer's rows) or
/api/search (the results list); a page in a folder opens with its
folder's explorer document loaded and the page marked, also in a folder
of 250 notes whose document comes in pages; a diagram in the first
screen is drawn by Mermaid's script, which the theme's script inserts
(script-src 'self' allows it). A policy that forbids the inline script
is also served once, to show that a violation is seen when there is one.

Prints "N passed, N failed" like the C tests.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from quiretest import ROOT, check, serve, summary  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def open_page(url):
    """The DOM after scripts ran, and the console's CSP reports."""
    profile = tempfile.mkdtemp(prefix="quire-chromium-")
    try:
        run = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--user-data-dir=" + profile,
             "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
             "--dump-dom", url],
            capture_output=True, text=True, timeout=90)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    reports = [l for l in run.stderr.splitlines() if "Content Security Policy" in l]
    return run.stdout, reports


def main():
    if not CHROMIUM:
        check(False, "chromium is installed (scripts/setup installs it)")
        return summary()
    work = tempfile.mkdtemp(prefix="quire-csp-")
    vault = os.path.join(work, "vault")
    shutil.copytree(os.path.join(ROOT, "vault-sample"), vault)
    # a folder big enough that its explorer document comes in pages ("more")
    os.makedirs(os.path.join(vault, "big"))
    # (pages of about a thousand notes: src/site/listing.h LISTING_TREE_PAGE)
    for i in range(2500):
        with open(os.path.join(vault, "big", "n%04d.md" % i), "w") as f:
            f.write("# Big note %04d\n\nA note of a big folder.\n" % i)
    # a diagram in the first screen: Mermaid's script, inserted by diagrams.js, runs under the policy
    with open(os.path.join(vault, "diagram-first.md"), "w") as f:
        f.write("# Diagram\n\n```mermaid\nflowchart LR\n  A --> B\n```\n")
    # --dump-dom's virtual time stands still while a request is open, and a
    # live page's stream stays open: without live pages (tests/browser/live.mjs
    # sees any CSP report of theirs as a console error)
    proc, port = serve(vault, ("--no-live",), search_ready="quire")
    try:
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(base + "/") as r:
            csp = r.headers.get("Content-Security-Policy", "")
        check("script-src 'self' 'sha256-" in csp, "quire's policy is sent: " + csp)
        pages = {
            "/": "tree-row",
            "/getting-started/": "tree-row",
            "/tags/": "tree-row",
            "/search?q=wikilinks": "search-result",
            "/no-such-page": "tree-row",
            "/diagram-first": 'aria-roledescription="flowchart',
        }
        # a page in a folder opens with its folder's document loaded and itself marked
        dom, reports = open_page(base + "/getting-started/your-own-vault")
        check(not reports, "folder page: no CSP violation")
        check(re.search(r'<a href="/getting-started/your-own-vault" aria-current="page"', dom)
              is not None, "the explorer opened the page's folder and marked the page")
        # a big folder's explorer document is fetched with all its pages, joined in order
        with urllib.request.urlopen(base + "/_quire/tree/big.json") as r:
            check(b'"more":[' in r.read(), "a folder of 2,500 notes names more pages")
        dom, reports = open_page(base + "/big/n2499")
        check(not reports, "big folder page: no CSP violation")
        check(re.search(r'<a href="/big/n2499" aria-current="page"', dom) is not None,
              "the explorer marked a page that is on the big folder's last page")
        rows = re.findall(r'<a href="/big/n(\d{4})"', dom)
        check(len(set(rows)) == 2500 and rows == sorted(rows),
              "the explorer lists the big folder's 2,500 notes once each, in order (%d)" % len(rows))
        for path, built in pages.items():
            dom, reports = open_page(base + path)
            check(not reports, f"{path}: no CSP violation ({'; '.join(reports)[:300]})")
            check(re.search(r'<html[^>]*class="[^"]*\bjs\b', dom) is not None,
                  f"{path}: the inline script ran")
            check(built in dom, f"{path}: the theme's script built .{built}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    # the same check sees a violation when the policy forbids the inline script
    with open(os.path.join(vault, "quire.yml"), "a") as f:
        f.write("\ncsp: \"script-src 'self'\"\n")
    proc, port = serve(vault, ("--no-live",), search_ready="quire")
    try:
        dom, reports = open_page(f"http://127.0.0.1:{port}/")
        check(reports, "a forbidden inline script is reported on the console")
        check(re.search(r'<html[^>]*class="[^"]*\bjs\b', dom) is None,
              "a forbidden inline script does not run")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
