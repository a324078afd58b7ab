#!/usr/bin/env python3
"""test-stylesheets: no URL in a stylesheet quire serves answers 404.

Starts the real `$QUIRE_BIN serve` on a copy of vault-sample, reads the
stylesheets a note with math links (the theme's, KaTeX's, the vault's
publish.css), and requests every url() each one names (relative to the
stylesheet, as a browser resolves it; data: URLs aside): each answers 200.
A crawler that requests them all, or a browser that falls back to another
format, must find no 404. KaTeX's stylesheet named each font as woff2,
woff and ttf, and only the woff2 files are served: the stylesheet is
rewritten at build time (scripts/embed-vendor.py) to name only those.
The same on the vault without its publish.css, where quire serves a
placeholder in its place.

Prints "N passed, N failed" like the C tests.
"""
import http.client
import os
import re
import shutil
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from quiretest import ROOT, check, serve, stop, summary  # noqa: E402

MATH_NOTE = "# Math\n\nEuler: $e^{i\\pi} + 1 = 0$.\n"


def get(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    return r.status, r.getheader("Content-Type") or "", r.read()


def stylesheets(html):
    for tag in re.findall(rb"<link [^>]*>", html):
        if re.search(rb'rel="stylesheet"', tag):
            m = re.search(rb'href="([^"]+)"', tag)
            if m:
                yield m.group(1).decode()


def urls(css):
    for m in re.finditer(r"url\(\s*(['\"]?)(.*?)\1\s*\)", css):
        if not m.group(2).startswith("data:"):
            yield m.group(2)


def check_site(vault, what):
    """Every url() of every stylesheet the math note links answers 200; returns the sheets."""
    proc, port = serve(vault)
    sheets = []
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        status, _, html = get(conn, "/weight-math")
        check(status == 200, f"{what}: the note with math answers ({status})")
        for sheet in stylesheets(html):
            sheets.append(sheet)
            status, ctype, body = get(conn, sheet)
            check(status == 200 and ctype.startswith("text/css"),
                  f"{what}: {sheet} answers 200 as text/css ({status}, {ctype})")
            named = list(urls(body.decode("utf-8")))
            bad = []
            for u in named:
                target = urllib.parse.urljoin(sheet, u)
                st, _, _ = get(conn, urllib.parse.urlsplit(target).path)
                if st != 200:
                    bad.append((u, st))
            check(not bad, f"{what}: every url() of {sheet} answers 200 "
                  f"({len(named) - len(bad)} of {len(named)}; {bad[:5]})")
            if "katex" in sheet:
                check(len(named) >= 20 and all(u.endswith(".woff2") for u in named),
                      f"{what}: KaTeX's stylesheet names its fonts, each as woff2 only ({len(named)})")
        conn.close()
    finally:
        stop([proc])
    return sheets


def main():
    work = tempfile.mkdtemp(prefix="quire-css-")
    try:
        vault = os.path.join(work, "vault")
        shutil.copytree(os.path.join(ROOT, "vault-sample"), vault,
                        ignore=shutil.ignore_patterns(".quire"))
        with open(os.path.join(vault, "weight-math.md"), "w") as f:
            f.write(MATH_NOTE)
        sheets = check_site(vault, "vault-sample")
        kinds = ["/_quire/quire.", "/_quire/vendor/katex-", "/_quire/publish.css"]
        check(all(any(k in s for s in sheets) for k in kinds),
              "the theme's, KaTeX's and the vault's stylesheets were all read: %s" % sheets)
        os.remove(os.path.join(vault, "publish.css"))
        shutil.rmtree(os.path.join(vault, ".quire"), ignore_errors=True)
        sheets = check_site(vault, "no publish.css")
        check(any("/_quire/publish.css" in s for s in sheets),
              "without publish.css, its placeholder is linked and read: %s" % sheets)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
