#!/usr/bin/env python3
"""test-links: every link quire writes leads somewhere, on the real vaults.

Serves each shared corpus (pwsh-docs, obsidian-tasks-docs; each skipped,
with a line saying so, when ../shared/corpus is not beside the checkout)
and vault-sample with the real `$QUIRE_BIN serve`, then crawls it from "/"
and from every URL its sitemaps list, over keep-alive connections. On
every HTML page it reads the links quire generated (in the page's own
markup and in the note body: <a href> to this site, internal links, tag
and folder links, the explorer's and breadcrumbs' links, <link>s and
<script>s), and checks that each:

  - answers 200 at the URL as written: quire writes canonical URLs, so
    not a 301 to another form (a redirect the author asked for, an alias
    or a moved note's old URL, is not something quire writes in links);
  - when it has a #fragment, names an id on that page (a heading, a
    ^block, a footnote), unless the fragment is empty or "top". A link
    to a heading or block that the author named ([[Note#Heading]],
    [t](Note.md#heading)) and that is not there is the author's: it is
    listed, not failed (the browser opens the page at its top, as
    Obsidian does).

Every HTML page is parsed by html5lib (the HTML5 parsing algorithm,
Debian's python3-html5lib) and must give no parse error: no stray end
tag, no block inside a paragraph, nothing a browser has to repair.

The explorer's documents (/_quire/tree.json and one per folder, which
the theme's script builds the tree from) are walked too: each answers
200, and so does every URL they name.

Links the author wrote that quire did not resolve (a broken wikilink is an
<a> without href; a Markdown link or raw <a> to something outside the
vault is left as written, without quire's classes) are not quire's links
and are skipped: `quire check` reports the broken ones.

Given folders as arguments (`tests/test-links.py VAULT...`), it crawls a
copy of each of those instead: how a vault that is not in the repository
(one of your own, or another author's) is checked the same way.

Prints what failed, then "N passed, N failed" like the C tests.
"""
import html.parser
import http.client
import json
import os
import re
import shutil
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from quiretest import ROOT, check, serve, skip, summary  # noqa: E402

CORPUS = os.environ.get("QUIRE_CORPUS", os.path.join(ROOT, "..", "shared", "corpus"))

try:
    import html5lib
except ImportError:  # Debian's python3-html5lib, when this is another Python
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import html5lib
    except ImportError:
        html5lib = None



class Page(html.parser.HTMLParser):
    """The links and ids of one page: in the note body only the links quire made."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links = []   # (tag, url, classes)
        self.ids = set()
        self.body = 0     # open <div>s from the note body's own, 0 outside it

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        if tag == "div" and (self.body or "note-body" in classes):
            self.body += 1
        url = None
        if tag == "a" and "href" in a:
            url = a["href"]
            # in the body, what the author wrote as a plain Markdown link or
            # raw HTML is theirs; quire's links are internal ones, tags and
            # the footnote marks cmark-gfm writes
            if self.body and not ({"internal", "tag"} & set(classes)) and \
                    "data-footnote-ref" not in a and "data-footnote-backref" not in a:
                url = None
        elif tag == "link" and a.get("rel") in ("stylesheet", "icon", "alternate", "canonical"):
            url = a.get("href")
        elif tag == "script" and a.get("src"):
            url = a["src"]
        if url is not None:
            # a heading the author named in a link ([[Note#Heading]]) may
            # not be there: theirs to fix, reported apart
            mine = not (self.body and "internal" in classes)
            self.links.append((tag, url, " ".join(classes), mine))

    def handle_endtag(self, tag):
        if tag == "div" and self.body:
            self.body -= 1


class Site:
    def __init__(self, port):
        self.port = port
        self.conn = None

    def get(self, path):
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                self.conn.request("GET", path, headers={"Accept-Encoding": "identity"})
                r = self.conn.getresponse()
                body = r.read()
                return r.status, dict((k.lower(), v) for k, v in r.getheaders()), body
            except (http.client.HTTPException, OSError):
                self.conn = None
                if attempt:
                    raise
        return None


def sitemap_urls(site):
    """Every page URL the sitemaps name, as paths."""
    out, todo, seen = [], ["/sitemap.xml"], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        status, _, body = site.get(path)
        if status != 200:
            continue
        for loc in re.findall(rb"<loc>([^<]+)</loc>", body):
            p = urllib.parse.urlsplit(loc.decode()).path
            (todo if p.endswith(".xml") else out).append(p)
    return out


def crawl(name, vault):
    proc, port = serve(vault, ("--no-watch",))
    site = Site(port)
    try:
        pages = {}      # path -> (status, ids) for HTML pages fetched
        statuses = {}   # path -> status for anything fetched
        queue = ["/"] + sitemap_urls(site)
        links = []      # (from page, url as written)
        invalid = []    # HTML5 parse errors
        while queue:
            path = queue.pop()
            if path in statuses:
                continue
            status, hdrs, body = site.get(path)
            statuses[path] = status
            if status != 200 or not hdrs.get("content-type", "").startswith("text/html"):
                continue
            p = Page()
            p.feed(body.decode("utf-8", "replace"))
            pages[path] = p.ids
            if html5lib:
                parser = html5lib.HTMLParser(strict=False)
                parser.parse(body)
                for pos, code, data in parser.errors:
                    invalid.append("%s:%d:%d: %s %s" % (path, pos[0], pos[1], code, data))
            for tag, url, classes, mine in p.links:
                if "broken" in classes.split():
                    continue
                u = urllib.parse.urlsplit(url)
                if u.scheme or u.netloc or url.startswith("mailto:"):
                    continue
                target = u.path or path
                if not target.startswith("/"):
                    target = urllib.parse.urljoin(path, target)
                links.append((path, url, target, u.fragment, mine))
                if tag == "a" and target not in statuses:
                    queue.append(target)
        # the explorer's documents (what the theme's script builds the tree from)
        docs, todo = 0, [("", "/_quire/tree.json")]
        while todo:
            folder, doc = todo.pop()
            status, _, body = site.get(doc)
            docs += 1
            links.append(("the explorer", doc, doc, "", True))
            if status != 200:
                continue
            d = json.loads(body)
            for m in d.get("more") or []:
                todo.append((folder, m))
            for child in d.get("children") or []:
                if child.get("url"):
                    links.append(("explorer " + doc, child["url"], child["url"], "", True))
                if child.get("name"):
                    sub = (folder + "/" if folder else "") + child["name"]
                    todo.append((sub, "/_quire/tree/" + "/".join(
                        urllib.parse.quote(x, safe="") for x in sub.split("/")) + ".json"))
        bad_status = bad_fragment = authors = 0
        examples = []
        for src, url, target, frag, mine in links:
            if target not in statuses:
                statuses[target] = site.get(target)[0]
                if statuses[target] == 200 and target not in pages:
                    status, hdrs, body = site.get(target)
                    if hdrs.get("content-type", "").startswith("text/html"):
                        p = Page()
                        p.feed(body.decode("utf-8", "replace"))
                        pages[target] = p.ids
            if statuses[target] != 200:
                bad_status += 1
                if len(examples) < 8:
                    examples.append("%s links to %s: %s" % (src, url, statuses[target]))
                continue
            if frag and frag != "top" and target in pages:
                ids = pages[target]
                want = urllib.parse.unquote(frag)
                if want not in ids and not mine:
                    authors += 1
                    print("    the author's link %s in %s: no heading or block \"%s\" there"
                          % (url, src, want), file=sys.stderr)
                elif want not in ids:
                    bad_fragment += 1
                    if len(examples) < 8:
                        examples.append("%s links to %s: no id \"%s\" there" % (src, url, want))
        print("  %s: %d pages, %d explorer documents, %d links followed, %d not 200, "
              "%d fragments missing (and %d headings the authors named that are not there)"
              % (name, len(pages), docs, len(links), bad_status, bad_fragment, authors),
              file=sys.stderr)
        for e in examples:
            print("    " + e, file=sys.stderr)
        for e in invalid[:8]:
            print("    not valid HTML5: " + e, file=sys.stderr)
        check(html5lib is not None, "html5lib (Debian's python3-html5lib, which scripts/setup "
              "installs) to validate the pages")
        check(not invalid, "%s: every page parses as HTML5 without an error (%d errors)"
              % (name, len(invalid)))
        check(len(pages) > 10, "%s: the crawl found pages" % name)
        check(bad_status == 0, "%s: every link answers 200" % name)
        check(bad_fragment == 0, "%s: every #fragment is an id on its page" % name)
    finally:
        proc.terminate()
        proc.wait()


def main():
    work = tempfile.mkdtemp(prefix="quire-links-")
    try:
        given = [(os.path.basename(os.path.normpath(a)), a, False) for a in sys.argv[1:]]
        vaults = given or \
            [("pwsh-docs", os.path.join(CORPUS, "pwsh-docs"), True),
             ("obsidian-tasks-docs", os.path.join(CORPUS, "obsidian-tasks-docs"), True),
             ("vault-sample", os.path.join(ROOT, "vault-sample"), False)]
        for name, src, shared in vaults:
            if not os.path.isdir(src) and shared:
                skip("%s: needs %s, the shared corpus (../shared/corpus beside the checkout, "
                     "or QUIRE_CORPUS): the crawl of a real vault's links" % (name, src))
                continue
            if not os.path.isdir(src):
                check(False, "%s: no vault at %s" % (name, src))
                continue
            dst = os.path.join(work, name)
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".quire"))
            crawl(name, dst)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
