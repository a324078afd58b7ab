/*
 * test-derived.c: tag pages, folder listings, sitemaps and feeds.
 *
 * Sitemaps are validated with xmllint against the protocol's schema
 * (tests/data/sitemap.xsd, siteindex.xsd), feeds are parsed by xmllint; contents are checked
 * item by item, after edits too, and no unpublished note appears in any.
 * The graph's documents are read entry by entry. Without base_url there
 * are no feeds nor sitemaps, and quire check says why.
 */
#include "lib/tv.h"

#include "markdown/markdown.h"
#include "site/site.h"
#include "lib/test.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct site *load(const char *dir)
{
	struct site_options o = { .threads = 2 };
	return site_load(dir, &o);
}

static const struct page *page(const struct site *s, const char *key)
{
	return map_gets(&s->pages, key);
}

static int has(const struct site *s, const char *key, const char *needle)
{
	const struct page *p = page(s, key);
	return p && memmem(p->body, p->body_len, needle, strlen(needle)) != NULL;
}

/* Runs xmllint on a page's bytes (with a schema, or just parsing); 1 when it passes. */
static int xmllint(const struct page *p, const char *schema)
{
	return p && tv_xmllint(p->body, p->body_len, schema);
}

static char *vault;

static void make_vault(void)
{
	vault = tv_new();
	tv_write(vault, "quire.yml", "title: Garden\nbase_url: https://example.org/garden\nfeed_items: 3\n");
	tv_write(vault, "Alpha.md", "---\ntags: [plants/trees]\ndate: 2024-01-05\n---\nAbout #oak.\n");
	tv_write(vault, "Beta.md", "---\ntags: [plants]\nupdated: 2024-03-01\ndescription: B notes\n---\nText.\n");
	tv_write(vault, "Garden/Gamma.md", "---\ndate: 2024-02-10\n---\nIn the garden #plants/flowers\n");
	tv_write(vault, "Garden/Beds/Delta.md", "---\ndate: 2023-12-01\n---\nDeep.\n");
	tv_write(vault, "Docs/index.md", "---\ntitle: Docs home\ndate: 2022-01-01\n---\nThe docs.\n");
	tv_write(vault, "Docs/Page.md", "---\ndate: 2022-01-02\n---\nA page.\n");
	tv_write(vault, "Secret.md", "---\ndraft: true\ntags: [plants]\ndate: 2030-01-01\n---\nSECRETWORD\n");
}

/*
 * A vault without a tag still has /tags/ (every page's footer, the graph
 * page and the search page link there): a listing that says it is empty,
 * and it stays when the last tag goes.
 */
static void test_tag_index_without_tags(void)
{
	char *v = tv_new();
	const char *path = "A.md";
	struct site *s;

	tv_write(v, "A.md", "No tags here.\n");
	s = load(v);
	CHECK(s != NULL);
	if (!s)
		goto out;
	CHECK(has(s, "/tags/", "No pages yet."));
	tv_write(v, "A.md", "Now #tagged.\n");
	site_apply(s, &path, 1);
	CHECK(has(s, "/tags/", "tagged"));
	tv_write(v, "A.md", "Untagged again.\n");
	site_apply(s, &path, 1);
	CHECK(has(s, "/tags/", "No pages yet.") && !has(s, "/tags/", "tagged"));
	site_free(s);
out:
	tv_remove(v);
}

static void test_tags(void)
{
	struct site *s = load(vault);

	CHECK(s != NULL);
	CHECK(has(s, "/tags/", "plants"));
	CHECK(has(s, "/tags/", "3 notes")); /* plants: Alpha (plants/trees), Beta, Gamma (inline) */
	CHECK(has(s, "/tags/plants", "Alpha") && has(s, "/tags/plants", "Beta") &&
	      has(s, "/tags/plants", "Gamma"));
	CHECK(has(s, "/tags/plants/trees", "Alpha") && !has(s, "/tags/plants/trees", "Beta"));
	CHECK(has(s, "/tags/oak", "Alpha"));
	CHECK(!has(s, "/tags/plants", "Secret"));
	CHECK(xmllint(page(s, "/tags/plants/rss.xml"), NULL));
	site_free(s);
}

static void test_folders(void)
{
	struct site *s = load(vault);

	CHECK(has(s, "/garden/", "Gamma") && has(s, "/garden/", "Beds"));
	CHECK(has(s, "/garden/beds/", "Delta"));
	/* a folder with its own index note keeps the note's page */
	CHECK(page(s, "/docs/") && page(s, "/docs/")->kind == PAGE_NOTE);
	CHECK(has(s, "/docs/", "The docs."));
	CHECK(xmllint(page(s, "/garden/rss.xml"), NULL));
	CHECK(has(s, "/garden/rss.xml", "Delta")); /* folder feeds cover subfolders */
	site_free(s);
}

static void test_feeds(void)
{
	struct site *s = load(vault);
	const struct page *rss = page(s, "/rss.xml"), *atom = page(s, "/atom.xml");
	const char *b, *g, *a;

	CHECK(xmllint(rss, NULL) && xmllint(atom, NULL));
	/* newest first, three items (feed_items: 3): Beta 03-01, Gamma 02-10, Alpha 01-05 */
	b = memmem(rss->body, rss->body_len, "<title>Beta", 11);
	g = memmem(rss->body, rss->body_len, "<title>Gamma", 12);
	a = memmem(rss->body, rss->body_len, "<title>Alpha", 12);
	CHECK(b && g && a && b < g && g < a);
	CHECK(!has(s, "/rss.xml", "Delta"));
	CHECK(has(s, "/rss.xml", "https://example.org/garden/beta"));
	CHECK(has(s, "/rss.xml", "<description>B notes</description>"));
	CHECK(has(s, "/atom.xml", "<updated>2024-03-01T00:00:00Z</updated>"));
	CHECK(!has(s, "/rss.xml", "Secret") && !has(s, "/atom.xml", "SECRETWORD"));
	/* every page links the site feed */
	CHECK(has(s, "/alpha", "/garden/rss.xml"));
	site_free(s);
}

static void test_sitemaps(void)
{
	struct site *s;
	size_t i, shards = 0, urls = 0;

	s = load(vault);
	CHECK(xmllint(page(s, "/sitemap.xml"), "siteindex.xsd"));
	CHECK(xmllint(page(s, "/sitemap-0.xml"), "sitemap.xsd"));
	CHECK(has(s, "/sitemap-0.xml", "<loc>https://example.org/garden/alpha</loc><lastmod>2024-01-05</lastmod>"));
	CHECK(!has(s, "/sitemap-0.xml", "secret"));
	CHECK(has(s, "/robots.txt", "Sitemap: https://example.org/garden/sitemap.xml"));
	site_free(s);

	/* 1,200 more notes: several shards, none over 1,000, every URL once */
	for (i = 0; i < 1200; i++) {
		char name[64];
		snprintf(name, sizeof(name), "many/n%04zu.md", i);
		tv_write(vault, name, "x\n");
	}
	s = load(vault);
	for (i = 0; i < 64; i++) {
		char key[32];
		const struct page *p;
		const char *q;
		size_t here = 0;
		snprintf(key, sizeof(key), "/sitemap-%zu.xml", i);
		if (!(p = page(s, key)))
			break;
		shards++;
		for (q = p->body; (q = memmem(q, p->body_len - (size_t)(q - p->body), "<loc>", 5)); q++)
			here++;
		CHECK(here <= 1000);
		urls += here;
		CHECK(xmllint(p, "sitemap.xsd"));
	}
	CHECK(shards >= 2);
	CHECK_INT(urls, 1204); /* 1,200 + Alpha, Beta, Docs, Docs/Page (Gamma and Delta left in test_edits) */
	CHECK(xmllint(page(s, "/sitemap.xml"), "siteindex.xsd"));
	site_free(s);
}

/* After edits: retitle, delete, unpublish; the derived pages follow. */
static void test_edits(void)
{
	struct site *s = load(vault);
	const char *paths[1];

	tv_write(vault, "Beta.md", "---\ntags: [plants]\ntitle: Renamed Beta\nupdated: 2024-03-01\n---\nText.\n");
	paths[0] = "Beta.md";
	site_apply(s, paths, 1);
	CHECK(has(s, "/tags/plants", "Renamed Beta"));
	CHECK(has(s, "/rss.xml", "Renamed Beta"));
	tv_write(vault, "Garden/Gamma.md", "---\ndraft: true\n---\nNow a draft\n");
	paths[0] = "Garden/Gamma.md";
	site_apply(s, paths, 1);
	CHECK(!has(s, "/tags/plants", "Gamma"));
	CHECK(!page(s, "/tags/plants/flowers"));
	CHECK(!has(s, "/garden/", "Gamma"));
	CHECK(!has(s, "/rss.xml", "Gamma"));
	{
		struct buf p = BUF_INIT;
		buf_addf(&p, "%s/Garden/Beds/Delta.md", vault);
		unlink(p.ptr);
		buf_release(&p);
	}
	paths[0] = "Garden/Beds/Delta.md";
	site_apply(s, paths, 1);
	CHECK(!page(s, "/garden/beds/"));
	CHECK(!page(s, "/garden/")); /* nothing published is left in Garden */
	site_free(s);
}

/*
 * The explorer is one document per folder: a folder lists its folders
 * (with their index note's URL) and its notes, one level; an edit writes
 * again only the documents of the folders it touched.
 */
static void test_tree_documents(void)
{
	char *v = tv_new();
	const struct page *root, *a, *ab;
	struct site *s;
	const char *path = "a/b/Leaf.md";

	tv_write(v, "index.md", "# Home\n");
	tv_write(v, "a/index.md", "---\ntitle: Folder A\n---\nA.\n");
	tv_write(v, "a/Zeta.md", "Z.\n");
	tv_write(v, "a/b/Leaf.md", "Leaf.\n");
	tv_write(v, "a/b/Other.md", "---\ntitle: Another\n---\nO.\n");
	tv_write(v, "empty/Draft.md", "---\ndraft: true\n---\nhidden\n");
	s = load(v);
	root = page(s, "/_quire/tree.json");
	a = page(s, "/_quire/tree/a.json");
	ab = page(s, "/_quire/tree/a/b.json");
	CHECK(root && a && ab);
	CHECK(has(s, "/_quire/tree.json", "{\"name\":\"a\",\"url\":\"/a/\"}"));
	CHECK(!has(s, "/_quire/tree.json", "\"empty\"")); /* only a draft inside */
	CHECK(page(s, "/_quire/tree/empty.json") == NULL);
	/* a folder without an index note links to its listing */
	CHECK(has(s, "/_quire/tree/a.json", "{\"children\":[{\"name\":\"b\",\"url\":\"/a/b/\"},"
		  "{\"title\":\"Folder A\",\"url\":\"/a/\"},{\"title\":\"Zeta\""));
	CHECK(page(s, "/a/b/") != NULL);
	CHECK(has(s, "/_quire/tree/a/b.json", "[{\"title\":\"Another\""));
	CHECK(!has(s, "/_quire/tree/a/b.json", "Zeta"));

	/* a retitle in a/b: only a/b's document is written again */
	tv_write(v, "a/b/Leaf.md", "---\ntitle: Renamed leaf\n---\nLeaf.\n");
	site_apply(s, &path, 1);
	CHECK(page(s, "/_quire/tree.json") == root);
	CHECK(page(s, "/_quire/tree/a.json") == a);
	CHECK(page(s, "/_quire/tree/a/b.json") != ab);
	CHECK(has(s, "/_quire/tree/a/b.json", "Renamed leaf"));

	/* the last note of a folder goes: its document goes, and its parent's entry */
	tv_unlink(v, "a/b/Leaf.md");
	tv_unlink(v, "a/b/Other.md");
	path = "a/b";
	site_apply(s, &path, 1);
	CHECK(page(s, "/_quire/tree/a/b.json") == NULL);
	CHECK(!has(s, "/_quire/tree/a.json", "\"name\":\"b\""));
	CHECK(page(s, "/_quire/tree.json") == root);
	site_free(s);
	tv_remove(v);
}

/*
 * A tag (or folder) of many notes is cut into pages where its notes say (about 100 a
 * page); a retitle changes the pages the note was and is on, not the
 * others, and a fresh load cuts the same pages.
 */
static void test_tag_pages(void)
{
	char *v = tv_new();
	struct site *s, *full;
	const char *path = "n0500.md";
	size_t i, pages = 0, changed = 0;
	const struct page **before;
	char name[32], text[96];

	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "n%04zu.md", i);
		snprintf(text, sizeof(text), "---\ntitle: Note %04zu\ntags: [big]\n---\nBody.\n", i);
		tv_write(v, name, text);
	}
	s = load(v);
	CHECK(has(s, "/tags/big", "class=\"pager\""));
	/* the same for a folder's listing (here the root's: no index.md) */
	CHECK(has(s, "/", "class=\"pager\"") && !has(s, "/", "Note 0999"));
	CHECK(has(s, "/tags/big", "Note 0000"));
	CHECK(!has(s, "/tags/big", "Note 0999"));
	/* every page is reachable from the first, and together they list every note once */
	before = xcalloc(64, sizeof(*before));
	{
		const struct page *first = page(s, "/tags/big");
		const char *at = first ? first->body : NULL, *end = first ? first->body + first->body_len : NULL;
		size_t notes = 0;
		while (at && (at = memmem(at, (size_t)(end - at), "href=\"/tags/big/~", 17))) {
			char key[64];
			const char *q = memchr(at + 6, '"', (size_t)(end - at - 6));
			snprintf(key, sizeof(key), "%.*s", (int)(q - at - 6), at + 6);
			if (pages < 63)
				before[pages + 1] = page(s, key);
			CHECK(page(s, key) != NULL);
			pages++;
			at = q;
		}
		before[0] = first;
		CHECK(pages >= 3);
		for (i = 0; i <= pages && i < 64; i++) {
			const char *x = before[i] ? before[i]->body : NULL;
			const char *e = x ? x + before[i]->body_len : NULL;
			while (x && (x = memmem(x, (size_t)(e - x), ">Note ", 6))) {
				notes++;
				x++;
			}
		}
		/* each note's title once, plus the first page's list of first titles */
		CHECK(notes == 1000 + pages + 1);
	}
	/* a retitle moves one note from the middle to the end */
	tv_write(v, "n0500.md", "---\ntitle: Zulu last\ntags: [big]\n---\nBody.\n");
	site_apply(s, &path, 1);
	{
		const struct page *first = page(s, "/tags/big");
		const char *at = first->body, *end = first->body + first->body_len;
		size_t k = 1;
		changed = first != before[0];
		while ((at = memmem(at, (size_t)(end - at), "href=\"/tags/big/~", 17)) && k < 64) {
			char key[64];
			const char *q = memchr(at + 6, '"', (size_t)(end - at - 6));
			snprintf(key, sizeof(key), "%.*s", (int)(q - at - 6), at + 6);
			changed += page(s, key) != before[k++];
			at = q;
		}
	}
	/* the page it left, the page it joined, and the first (its pager shows first titles) */
	CHECK(changed <= 3);
	/*
	 * The root's explorer document is cut the same way: the first names the
	 * others in "more", and together they list every note once, the
	 * retitled one under its new title.
	 */
	{
		const struct page *root = page(s, "/_quire/tree.json");
		const char *at = root ? root->body : NULL, *end = root ? root->body + root->body_len : NULL;
		const char *more = at ? memmem(at, root->body_len, "\"more\":[", 8) : NULL;
		size_t titles = 0, docs = 1, sizes[16], nsizes = 0;
		CHECK(more != NULL);
		/* after "children": the root's own {"title": names the site */
		for (const char *x = at ? memmem(at, root->body_len, "\"children\"", 10) : NULL;
		     x && (x = memmem(x, (size_t)(end - x), "{\"title\":", 9)); x++)
			titles++;
		while (more && (more = memmem(more, (size_t)(end - more), "\"/_quire/tree-more/", 19))) {
			char key[96];
			const char *q = memchr(more + 1, '"', (size_t)(end - more - 1));
			const struct page *d;
			snprintf(key, sizeof(key), "%.*s", (int)(q - more - 1), more + 1);
			size_t in_doc = 0;
			d = page(s, key);
			CHECK(d != NULL);
			for (const char *x = d ? d->body : NULL; x && (x = memmem(x, (size_t)(d->body + d->body_len - x), "{\"title\":", 9)); x++)
				in_doc++;
			/* each named with how many notes it holds: the theme's list has its height at once */
			CHECK(nsizes < sizeof(sizes) / sizeof(*sizes));
			if (nsizes < sizeof(sizes) / sizeof(*sizes))
				sizes[nsizes++] = in_doc;
			titles += in_doc;
			docs++;
			more = q;
		}
		CHECK(docs >= 3);
		/* "sizes" after "more": the count of each page, in the same order */
		{
			const char *z = at ? memmem(at, root->body_len, "\"sizes\":[", 9) : NULL;
			size_t nth = 0;
			CHECK(z != NULL);
			for (z = z ? z + 9 : NULL; z && *z != ']' && nth < nsizes; nth++) {
				char *e;
				CHECK(strtoul(z, &e, 10) == sizes[nth]);
				z = *e == ',' ? e + 1 : e;
			}
			CHECK(nth == nsizes && z && *z == ']');
		}
		if (titles != 1000)
			fprintf(stderr, "  %zu titles in %zu documents\n", titles, docs);
		CHECK(titles == 1000);
		CHECK(has(s, "/_quire/tree.json", "Zulu last") == 0); /* at the end: not on the first page */
	}
	CHECK(has(s, "/tags/big", "Note 0000"));
	/* the same pages as a fresh load */
	full = load(v);
	{
		size_t it = 0;
		const char *key;
		void *pv;
		while (map_next(&full->pages, &it, &key, NULL, &pv)) {
			const struct page *a = page(s, key), *b = pv;
			if (strncmp(key, "/tags/big", 9) == 0 || strncmp(key, "/_quire/tree", 12) == 0)
				CHECK(a && a->body_len == b->body_len && !memcmp(a->body, b->body, a->body_len));
		}
	}
	site_free(full);
	free(before);
	site_free(s);
	tv_remove(v);
}

/* ---- the graph's documents ---------------------------------------------------- */

/* The documents /_quire/graph.json names, in order (NULL-terminated; the caller frees the array). */
static const struct page **graph_docs(const struct site *s)
{
	const struct page *index = page(s, "/_quire/graph.json"), **docs = NULL;
	const char *p, *end;
	size_t n = 0;

	if (!index)
		return xcalloc(1, sizeof(*docs));
	end = index->body + index->body_len;
	for (p = index->body; (p = memmem(p, (size_t)(end - p), "\"/_quire/graph/", 15)); ) {
		const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
		char *key = xstrndup(p + 1, (size_t)(q - p - 1));
		docs = xrealloc(docs, (n + 2) * sizeof(*docs));
		docs[n] = page(s, key);
		CHECK(docs[n] != NULL); /* every document named is served */
		n++;
		free(key);
		p = q + 1;
	}
	if (!docs)
		docs = xcalloc(1, sizeof(*docs));
	docs[n] = NULL;
	return docs;
}

/* A note's entry in the graph ("{"u":...]}"), or NULL; the caller frees it. */
static char *graph_entry(const struct site *s, const char *url)
{
	const struct page **docs = graph_docs(s), **d;
	char want[256], *out = NULL;

	snprintf(want, sizeof(want), "{\"u\":\"%s\",", url);
	for (d = docs; *d && !out; d++) {
		const char *p = memmem((*d)->body, (*d)->body_len, want, strlen(want)), *q;
		if (p && (q = memmem(p, (*d)->body_len - (size_t)(p - (*d)->body), "]}", 2)))
			out = xstrndup(p, (size_t)(q + 2 - p));
	}
	free(docs);
	return out;
}

/* How many of the graph's documents hold needle. */
static size_t graph_count(const struct site *s, const char *needle)
{
	const struct page **docs = graph_docs(s), **d;
	size_t n = 0;

	for (d = docs; *d; d++)
		n += memmem((*d)->body, (*d)->body_len, needle, strlen(needle)) != NULL;
	free(docs);
	return n;
}

static int entry_is(const struct site *s, const char *url, const char *want)
{
	char *e = graph_entry(s, url);
	int ok = e && strcmp(e, want) == 0;
	if (!ok)
		fprintf(stderr, "  graph entry of %s: %s, not %s\n", url, e ? e : "(none)", want);
	free(e);
	return ok;
}

/*
 * Each published note is in the graph once, with the published notes it
 * links to or embeds, in its order, each once, never itself; no
 * unpublished note appears anywhere in it. A change rewrites the
 * document of the notes whose entry changed, and nothing else; a fresh
 * load writes the same bytes.
 */
static void test_graph_documents(void)
{
	char *v = tv_new();
	const struct page **before, **after;
	struct site *s, *full;
	const char *path;
	size_t i, changed = 0, ndocs = 0;

	tv_write(v, "index.md", "# Home\n\n[[A]], [[B]], [[Draft]] and [[Missing]].\n");
	tv_write(v, "A.md", "[[B]], [[B|again]], ![[B]], [[A#Top]], [[Nowhere]], [text](B.md).\n");
	tv_write(v, "B.md", "---\ntitle: Bee \"quoted\"\n---\nNo links.\n");
	tv_write(v, "Draft.md", "---\ndraft: true\n---\n[[A]] SECRETWORD\n");
	for (i = 0; i < 300; i++) {
		char name[32], body[64];
		snprintf(name, sizeof(name), "f/n%03zu.md", i);
		snprintf(body, sizeof(body), "[[A]] and [[f/n%03zu]].\n", (i + 1) % 300);
		tv_write(v, name, body);
	}
	s = load(v);
	CHECK(entry_is(s, "/", "{\"u\":\"/\",\"t\":\"index\",\"l\":[\"/a\",\"/b\"]}"));
	CHECK(entry_is(s, "/a", "{\"u\":\"/a\",\"t\":\"A\",\"l\":[\"/b\"]}"));
	CHECK(entry_is(s, "/b", "{\"u\":\"/b\",\"t\":\"Bee \\\"quoted\\\"\",\"l\":[]}"));
	CHECK(entry_is(s, "/f/n007", "{\"u\":\"/f/n007\",\"t\":\"n007\",\"l\":[\"/a\",\"/f/n008\"]}"));
	CHECK(graph_count(s, "draft") == 0 && graph_count(s, "SECRET") == 0);
	before = graph_docs(s);
	for (i = 0; before[i]; i++)
		ndocs++;
	CHECK(ndocs >= 4); /* a shard's graph is cut in parts */
	for (i = 0; i < 300; i++) {
		/* every published note is in the graph */
		char url[32];
		snprintf(url, sizeof(url), "{\"u\":\"/f/n%03zu\"", i);
		CHECK(graph_count(s, url) == 1);
	}

	/* an edit of a note's text alone: no document written again */
	tv_write(v, "B.md", "---\ntitle: Bee \"quoted\"\n---\nStill no links, more text.\n");
	path = "B.md";
	site_apply(s, &path, 1);
	after = graph_docs(s);
	for (i = 0; before[i]; i++)
		changed += after[i] != before[i];
	CHECK(changed == 0);
	free(after);

	/* a link added: that note's document alone */
	tv_write(v, "B.md", "---\ntitle: Bee \"quoted\"\n---\nNow [[f/n000]].\n");
	site_apply(s, &path, 1);
	after = graph_docs(s);
	for (i = 0, changed = 0; before[i]; i++)
		changed += after[i] != before[i];
	CHECK(changed == 1);
	CHECK(entry_is(s, "/b", "{\"u\":\"/b\",\"t\":\"Bee \\\"quoted\\\"\",\"l\":[\"/f/n000\"]}"));
	free(after);

	/* the draft published: it joins, and the home page's entry names it */
	tv_write(v, "Draft.md", "[[A]] now public\n");
	path = "Draft.md";
	site_apply(s, &path, 1);
	CHECK(entry_is(s, "/", "{\"u\":\"/\",\"t\":\"index\",\"l\":[\"/a\",\"/b\",\"/draft\"]}"));
	CHECK(entry_is(s, "/draft", "{\"u\":\"/draft\",\"t\":\"Draft\",\"l\":[\"/a\"]}"));

	/* A renamed: every entry that links it follows (its referrers were composed) */
	{
		char from[4096], to[4096];
		snprintf(from, sizeof(from), "%s/A.md", v);
		snprintf(to, sizeof(to), "%s/Alpha.md", v);
		CHECK(rename(from, to) == 0);
	}
	{
		const char *two[2] = { "A.md", "Alpha.md" };
		site_apply(s, two, 2);
	}
	CHECK(graph_entry(s, "/a") == NULL);
	CHECK(entry_is(s, "/f/n007", "{\"u\":\"/f/n007\",\"t\":\"n007\",\"l\":[\"/f/n008\"]}"));
	CHECK(graph_count(s, "\"/a\"") == 0);

	/* the same bytes as a fresh load */
	full = load(v);
	{
		const struct page **x = graph_docs(s), **y = graph_docs(full);
		for (i = 0; x[i] && y[i]; i++)
			CHECK(x[i]->body_len == y[i]->body_len && !memcmp(x[i]->body, y[i]->body, x[i]->body_len));
		CHECK(!x[i] && !y[i]);
		free(x);
		free(y);
	}
	site_free(full);
	free(before);
	site_free(s);
	tv_remove(v);
}

/*
 * No base_url: no feeds, sitemaps or canonical links (they need the
 * site's absolute URL, and a page is not made per request), and
 * site_base_url_note() says so, naming strict hosts' links when there are
 * some; quire check prints it as a note, not a warning.
 */
static void test_without_base_url(void)
{
	static const char *const absent[] = { "/rss.xml", "/atom.xml", "/sitemap.xml",
					      "/sitemap-0.xml", "/tags/plants/rss.xml" };
	char *dir = tv_new();
	struct buf out = BUF_INIT, cmd = BUF_INIT;
	struct site *s;
	char chunk[4096];
	size_t i, n;
	FILE *p;

	tv_write(dir, "quire.yml", "title: No address\n");
	tv_write(dir, "Alpha.md", "---\ntags: [plants]\ndate: 2024-01-05\n---\nA.\n");
	s = load(dir);
	CHECK(s && page(s, "/alpha") && !has(s, "/alpha", "rel=\"canonical\""));
	for (i = 0; s && i < sizeof(absent) / sizeof(absent[0]); i++)
		CHECK(page(s, absent[i]) == NULL);
	CHECK(s && has(s, "/robots.txt", "Allow: /") && !has(s, "/robots.txt", "Sitemap:"));
	CHECK(s && site_base_url_note(s) && strstr(site_base_url_note(s), "/rss.xml") &&
	      strstr(site_base_url_note(s), "base_url: https://") &&
	      !strstr(site_base_url_note(s), "strict hosts"));
	site_free(s);

	/* a strict host: its pages link to the main site by paths it does not serve */
	tv_write(dir, "Beta.md", "---\nroute: docs.example.com/\n---\nSee [[Alpha]].\n");
	s = load(dir);
	CHECK(s && site_base_url_note(s) && strstr(site_base_url_note(s), "strict hosts"));
	site_free(s);
	tv_write(dir, "quire.yml", "title: No address\nhosts:\n  docs.example.com: {open: true}\n");
	s = load(dir);
	CHECK(s && site_base_url_note(s) && !strstr(site_base_url_note(s), "strict hosts"));
	site_free(s);

	/* quire check prints it as a note: no warning, exit 0 */
	buf_addf(&cmd, "'%s' check --vault '%s' 2>/dev/null", getenv("QUIRE_BIN"), dir);
	p = popen(cmd.ptr, "r");
	while (p && (n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		buf_add(&out, chunk, n);
	CHECK(p && pclose(p) == 0);
	CHECK(out.len && strstr(out.ptr, "quire.yml: note: no base_url: no /rss.xml") != NULL);
	CHECK(out.len && strstr(out.ptr, "0 errors, 0 warnings\n") != NULL);

	tv_write(dir, "quire.yml", "title: An address\nbase_url: https://example.org\n");
	s = load(dir);
	CHECK(s && site_base_url_note(s) == NULL && page(s, "/rss.xml") && page(s, "/sitemap.xml"));
	site_free(s);
	buf_release(&out);
	buf_release(&cmd);
	tv_remove(dir);
}

int main(void)
{
	md_global_init();
	make_vault();
	RUN(test_tags);
	RUN(test_tag_index_without_tags);
	RUN(test_folders);
	RUN(test_feeds);
	RUN(test_edits);
	RUN(test_sitemaps);
	RUN(test_tree_documents);
	RUN(test_tag_pages);
	RUN(test_graph_documents);
	RUN(test_without_base_url);
	tv_remove(vault);
	return test_done();
}
