/*
 * test-layout.c: the page shell: escaping of every field, what each page
 * must contain, the path prefix everywhere, determinism.
 */
#include "site/layout.h"
#include "lib/test.h"

#include <string.h>

static const char *const tags_plain[] = { "guide", "nested/tag", "with space" };
static const char *const classes_plain[] = { "wide", "cards" };
static const struct layout_toc_entry toc_plain[] = {
	{ 2, "Install", "install" },
	{ 3, "On Debian", "on-debian" },
	{ 4, "From source", "from-source" },
	{ 5, "Too deep", "too-deep" },
	{ 2, "Use", "use" },
};
static const struct layout_link backlinks_plain[] = {
	{ "Home", "/docs/" },
	{ "Getting started", "/docs/guide/getting-started" },
};

static struct layout_site site_docs(void)
{
	struct layout_site s = {
		.title = "Quire Docs",
		.language = "en",
		.url_prefix = "/docs",
		.base_url = "https://example.com/docs",
		.css_url = "/docs/_quire/quire.0123abcd.css",
		.js_url = "/docs/_quire/quire.4567ef01.js",
		.icon_url = "/docs/_quire/favicon.89ab.svg",
		.tree_url = "/docs/_quire/tree.json",
		.search_url = "/docs/search",
		.feed_url = "/docs/feed.xml",
	};
	return s;
}

static struct layout_site site_bare(void)
{
	struct layout_site s = {
		.title = "Garden",
		.language = "",
		.url_prefix = "",
		.base_url = "",
		.css_url = "/_quire/quire.css",
		.js_url = "/_quire/quire.js",
		.icon_url = "/_quire/favicon.svg",
		.tree_url = "/_quire/tree.json",
		.search_url = NULL,
		.feed_url = NULL,
	};
	return s;
}

static struct layout_note note_full(void)
{
	static const char body[] =
		"<p>Hello <a class=\"internal\" href=\"/docs/other\">other</a></p>";
	struct layout_note n = {
		.title = "Install guide",
		.description = "How to install quire.",
		.url = "/docs/guide/install",
		.created = "2024-01-02",
		.updated = "2024-03-04",
		.tags = tags_plain,
		.ntags = 3,
		.cssclasses = classes_plain,
		.ncssclasses = 2,
		.body_html = body,
		.body_len = sizeof(body) - 1,
		.toc = toc_plain,
		.ntoc = 5,
		.backlinks = backlinks_plain,
		.nbacklinks = 2,
	};
	return n;
}

static struct layout_note note_minimal(void)
{
	struct layout_note n = {
		.title = "Plain",
		.url = "/plain",
		.body_html = "<p>x</p>",
		.body_len = 8,
	};
	return n;
}

static int has(const struct buf *b, const char *s)
{
	return strstr(b->ptr, s) != NULL;
}

/* Every root-relative URL in an attribute starts with the prefix. */
static int prefixed_everywhere(const struct buf *b, const char *prefix)
{
	static const char *const attrs[] = { "href=\"", "src=\"", "action=\"", "data-tree=\"" };
	size_t i, plen = strlen(prefix);

	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		const char *p = b->ptr;
		size_t alen = strlen(attrs[i]);
		while ((p = strstr(p, attrs[i]))) {
			p += alen;
			if (*p == '/' && (strncmp(p, prefix, plen) != 0 || (p[plen] != '/'))) {
				fprintf(stderr, "unprefixed URL: %.40s\n", p);
				return 0;
			}
		}
	}
	return 1;
}

/* The elements the shell opens are all closed, in a plausible number. */
static int balanced(const struct buf *b)
{
	static const char *const tags[] = { "html", "head", "body", "header", "nav", "main",
					    "article", "aside", "section", "footer", "ul", "li",
					    "div", "form", "p", "a", "time", "title", "h1", "h2" };
	size_t i;

	for (i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		char open[32], open_attr[32], close[32];
		size_t nopen;
		snprintf(open, sizeof(open), "<%s>", tags[i]);
		snprintf(open_attr, sizeof(open_attr), "<%s ", tags[i]);
		snprintf(close, sizeof(close), "</%s>", tags[i]);
		nopen = test_count(b->ptr, open) + test_count(b->ptr, open_attr);
		if (nopen != test_count(b->ptr, close)) {
			fprintf(stderr, "<%s>: %zu opened, %zu closed\n", tags[i], nopen,
				test_count(b->ptr, close));
			return 0;
		}
	}
	return 1;
}

static void test_head(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct buf b = BUF_INIT;

	layout_note_page(&s, &n, &b);
	CHECK(strncmp(b.ptr, "<!DOCTYPE html>\n<html lang=\"en\">", 32) == 0);
	CHECK(has(&b, "<meta charset=\"utf-8\">"));
	CHECK(has(&b, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"));
	CHECK(has(&b, "<title>Install guide \xc2\xb7 Quire Docs</title>"));
	CHECK(has(&b, "<meta name=\"description\" content=\"How to install quire.\">"));
	CHECK(has(&b, "<meta property=\"og:title\" content=\"Install guide\">"));
	CHECK(has(&b, "<meta property=\"og:description\" content=\"How to install quire.\">"));
	CHECK(has(&b, "<meta property=\"og:url\" "
		      "content=\"https://example.com/docs/guide/install\">"));
	CHECK(has(&b, "<link rel=\"icon\" href=\"/docs/_quire/favicon.89ab.svg\">"));
	CHECK(has(&b, "<link rel=\"stylesheet\" href=\"/docs/_quire/quire.0123abcd.css\">"));
	CHECK(has(&b, "<script src=\"/docs/_quire/quire.4567ef01.js\" defer></script>"));
	CHECK(has(&b, "data-tree=\"/docs/_quire/tree.json\""));
	CHECK(has(&b, "data-prefix=\"/docs\""));
	/* The only inline script is the colour-scheme snippet, before any CSS paints. */
	CHECK_INT(test_count(b.ptr, "<script>"), 1);
	CHECK(has(&b, "localStorage.getItem(\"quire-theme\")"));
	CHECK(!has(&b, "<style"));
	CHECK(!has(&b, "style=\""));
	CHECK(balanced(&b));
	buf_release(&b);
}

static void test_title_equals_site(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_minimal();
	struct buf b = BUF_INIT;

	n.title = "Quire Docs";
	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<title>Quire Docs</title>"));
	buf_release(&b);
}

static void test_canonical(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct buf b = BUF_INIT;

	/* base_url's path is the prefix, which the page URL already carries. */
	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<link rel=\"canonical\" href=\"https://example.com/docs/guide/install\">"));
	CHECK(!has(&b, "/docs/docs/"));

	buf_reset(&b);
	s.base_url = "http://localhost:8080";
	s.url_prefix = "";
	n.url = "/a%20b";
	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<link rel=\"canonical\" href=\"http://localhost:8080/a%20b\">"));

	buf_reset(&b);
	s.base_url = "";
	layout_note_page(&s, &n, &b);
	CHECK(!has(&b, "rel=\"canonical\""));
	CHECK(!has(&b, "og:url"));

	buf_reset(&b);
	s.base_url = NULL;
	layout_note_page(&s, &n, &b);
	CHECK(!has(&b, "rel=\"canonical\""));
	buf_release(&b);
}

static void test_escaping(void)
{
	static const char *const tags[] = { "a\"b", "<x>&y" };
	static const char *const classes[] = { "c\"><script>" };
	static const struct layout_toc_entry toc[] = { { 2, "A < B & \"C\"", "a-b-c\"x" } };
	static const struct layout_link links[] = { { "<i>Evil</i> & co", "/p?a=1&b=\"2\"" } };
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct buf b = BUF_INIT;

	s.title = "Site <&> \"S\"";
	s.language = "en\"><x";
	s.css_url = "/docs/a.css?\"><x";
	s.search_url = "/docs/search?\"";
	s.feed_url = "/docs/feed\".xml";
	s.tree_url = "/docs/tree\".json";
	n.title = "<script>alert(1)</script> & \"quotes\"";
	n.description = "Say \"hi\" <b>&</b>";
	n.url = "/docs/a\"b";
	n.created = "2024\"<";
	n.tags = tags;
	n.ntags = 2;
	n.cssclasses = classes;
	n.ncssclasses = 1;
	n.toc = toc;
	n.ntoc = 1;
	n.backlinks = links;
	n.nbacklinks = 1;
	layout_note_page(&s, &n, &b);

	CHECK(!has(&b, "<script>alert"));
	CHECK(!has(&b, "<b>&</b>"));
	CHECK(!has(&b, "<i>Evil"));
	CHECK(!has(&b, "<x"));
	CHECK(!has(&b, "\"><script>"));
	CHECK(has(&b, "<html lang=\"en&quot;&gt;&lt;x\">"));
	CHECK(has(&b, "<title>&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot; "
		      "\xc2\xb7 "
		      "Site &lt;&amp;&gt; &quot;S&quot;</title>"));
	CHECK(has(&b, "<h1 class=\"note-title\">&lt;script&gt;alert(1)&lt;/script&gt; &amp; "
		      "&quot;quotes&quot;</h1>"));
	CHECK(has(&b, "content=\"Say &quot;hi&quot; &lt;b&gt;&amp;&lt;/b&gt;\""));
	CHECK(has(&b, "href=\"https://example.com/docs/a&quot;b\""));
	CHECK(has(&b, "<time datetime=\"2024&quot;&lt;\">"));
	CHECK(has(&b, "<a class=\"tag\" href=\"/docs/tags/a%22b\">#a&quot;b</a>"));
	CHECK(has(&b, "<a class=\"tag\" href=\"/docs/tags/%3Cx%3E%26y\">#&lt;x&gt;&amp;y</a>"));
	CHECK(has(&b, "<article class=\"note c&quot;&gt;&lt;script&gt;\">"));
	CHECK(has(&b, "<a href=\"#a-b-c&quot;x\">A &lt; B &amp; &quot;C&quot;</a>"));
	CHECK(has(&b, "<a class=\"internal\" href=\"/p?a=1&amp;b=&quot;2&quot;\">"
		      "&lt;i&gt;Evil&lt;/i&gt; &amp; co</a>"));
	CHECK(has(&b, "href=\"/docs/a.css?&quot;&gt;&lt;x\""));
	CHECK(has(&b, "action=\"/docs/search?&quot;\""));
	CHECK(has(&b, "href=\"/docs/feed&quot;.xml\""));
	CHECK(has(&b, "data-tree=\"/docs/tree&quot;.json\""));
	CHECK(has(&b, "class=\"site-title\" href=\"/docs/\">Site &lt;&amp;&gt; &quot;S&quot;</a>"));
	buf_release(&b);
}

static void test_body_verbatim(void)
{
	static const char body[] = "<p>a &amp; <em>b</em></p>\n<div class=\"callout\">TAIL";
	struct layout_site s = site_bare();
	struct layout_note n = note_minimal();
	struct buf b = BUF_INIT;
	size_t at;

	/* body_len rules, not the NUL: the "TAIL" is left out. */
	n.body_html = body;
	n.body_len = sizeof(body) - 1 - 4;
	at = layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<div class=\"note-body\">\n<p>a &amp; <em>b</em></p>\n"
		      "<div class=\"callout\">\n</div>"));
	CHECK(!has(&b, "TAIL"));
	/* the offset returned is where the body's bytes are (render.c reads them back) */
	CHECK(at + n.body_len <= b.len && memcmp(b.ptr + at, body, n.body_len) == 0);
	buf_release(&b);
}

static void test_dates(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct buf b = BUF_INIT;

	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "Created <time datetime=\"2024-01-02\">2024-01-02</time>"));
	CHECK(has(&b, "Updated <time datetime=\"2024-03-04\">2024-03-04</time>"));

	buf_reset(&b);
	n.updated = n.created;
	layout_note_page(&s, &n, &b);
	CHECK_INT(test_count(b.ptr, "<time "), 1);

	buf_reset(&b);
	n.created = NULL;
	n.updated = "2025-05-06";
	layout_note_page(&s, &n, &b);
	CHECK(!has(&b, "Created"));
	CHECK(has(&b, "Updated <time datetime=\"2025-05-06\">"));

	buf_reset(&b);
	n.updated = NULL;
	layout_note_page(&s, &n, &b);
	CHECK(!has(&b, "<time"));
	CHECK(!has(&b, "note-meta"));
	buf_release(&b);
}

static void test_tags(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct buf b = BUF_INIT;

	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<a class=\"tag\" href=\"/docs/tags/guide\">#guide</a>"));
	CHECK(has(&b, "<a class=\"tag\" href=\"/docs/tags/nested/tag\">#nested/tag</a>"));
	CHECK(has(&b, "<a class=\"tag\" href=\"/docs/tags/with%20space\">#with space</a>"));

	buf_reset(&b);
	s = site_bare();
	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<a class=\"tag\" href=\"/tags/guide\">#guide</a>"));

	buf_reset(&b);
	n.ntags = 0;
	layout_note_page(&s, &n, &b);
	CHECK(!has(&b, "note-tags"));
	CHECK(!has(&b, "class=\"tag\""));
	buf_release(&b);
}

static void test_unicode_tag(void)
{
	static const char *const tags[] = {
		"\xd0\xb7\xd0\xb0\xd0\xbc\xd0\xb5\xd1\x82\xd0\xba\xd0\xb8",
	};
	struct layout_site s = site_bare();
	struct layout_note n = note_minimal();
	struct buf b = BUF_INIT;

	n.tags = tags;
	n.ntags = 1;
	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "href=\"/tags/%D0%B7%D0%B0%D0%BC%D0%B5%D1%82%D0%BA%D0%B8\">#"
		      "\xd0\xb7\xd0\xb0\xd0\xbc\xd0\xb5\xd1\x82\xd0\xba\xd0\xb8</a>"));
	buf_release(&b);
}

/*
 * Breadcrumbs: Home, each folder above the note linked to its listing
 * (the URL derived.c gives it, with the prefix), the note itself; none on
 * the home page. A listing has them too, a folder's naming its parents.
 */
static void test_breadcrumbs(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct layout_item it = { "A", "/docs/a", NULL, NULL };
	struct buf b = BUF_INIT;

	n.folder = "Guides/On Linux";
	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<nav class=\"breadcrumbs\" aria-label=\"Breadcrumbs\"><ol>\n"
		      "<li><a href=\"/docs/\">Home</a></li>\n"
		      "<li><a href=\"/docs/guides/\">Guides</a></li>\n"
		      "<li><a href=\"/docs/guides/on-linux/\">On Linux</a></li>\n"
		      "<li aria-current=\"page\">Install guide</li>\n</ol></nav>"));
	buf_reset(&b);
	n.folder = "";
	n.url = "/docs/";
	layout_note_page(&s, &n, &b);
	CHECK(!has(&b, "breadcrumbs"));
	buf_reset(&b);
	layout_listing_page(&s, "Guides/On Linux", "On Linux", NULL, &it, 1, &b);
	CHECK(has(&b, "<li><a href=\"/docs/guides/\">Guides</a></li>\n"
		      "<li aria-current=\"page\">On Linux</li>"));
	CHECK(has(&b, "data-folder=\"Guides/On Linux\""));
	buf_reset(&b);
	layout_listing_page(&s, "", "Quire Docs", NULL, &it, 1, &b);
	CHECK(!has(&b, "breadcrumbs"));
	buf_release(&b);
}

/* A body opening with an h1 of the title is marked, so that the title shows once. */
static void test_title_repeated(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct buf b = BUF_INIT;

	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<div class=\"note-body\">"));
	buf_reset(&b);
	n.title_repeated = 1;
	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<div class=\"note-body title-repeated\">"));
	buf_release(&b);
}

static void test_toc(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct buf b = BUF_INIT;
	const char *aside, *main_end;

	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<div class=\"page has-toc\">"));
	CHECK(has(&b, "<aside class=\"toc toc-side\" aria-label=\"On this page\">"));
	/* and folded before the body, for narrow screens */
	CHECK(has(&b, "<details class=\"toc toc-folded\">\n<summary class=\"toc-title\">On this "
		      "page</summary>\n<ul>\n<li class=\"toc-0\"><a href=\"#install\">Install</a>"));
	CHECK(strstr(b.ptr, "<details class=\"toc") < strstr(b.ptr, "<div class=\"note-body"));
	CHECK(has(&b, "<li class=\"toc-0\"><a href=\"#install\">Install</a></li>"));
	CHECK(has(&b, "<li class=\"toc-1\"><a href=\"#on-debian\">On Debian</a></li>"));
	CHECK(has(&b, "<li class=\"toc-2\"><a href=\"#from-source\">From source</a></li>"));
	CHECK(has(&b, "<li class=\"toc-0\"><a href=\"#use\">Use</a></li>"));
	CHECK(!has(&b, "too-deep"));
	/* After main in the source: below the body on narrow screens. */
	aside = strstr(b.ptr, "<aside");
	main_end = strstr(b.ptr, "</main>");
	CHECK(aside && main_end && main_end < aside);

	/* An h1 in the body becomes the shallowest level. */
	{
		static const struct layout_toc_entry toc[] = {
			{ 1, "Top", "top" },
			{ 2, "Sub", "sub" },
		};
		buf_reset(&b);
		n.toc = toc;
		n.ntoc = 2;
		layout_note_page(&s, &n, &b);
		CHECK(has(&b, "<li class=\"toc-0\"><a href=\"#top\">Top</a></li>"));
		CHECK(has(&b, "<li class=\"toc-1\"><a href=\"#sub\">Sub</a></li>"));
	}

	buf_reset(&b);
	n.ntoc = 0;
	layout_note_page(&s, &n, &b);
	CHECK(!has(&b, "<aside"));
	CHECK(!has(&b, "has-toc"));
	CHECK(has(&b, "<div class=\"page\">"));

	/* Only headings too deep to show: no aside either. */
	buf_reset(&b);
	n.toc = toc_plain + 3;
	n.ntoc = 1;
	layout_note_page(&s, &n, &b);
	CHECK(!has(&b, "<aside"));
	buf_release(&b);
}

static void test_backlinks(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct buf b = BUF_INIT;
	const char *sec, *art_end;

	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<h2>Links to this page</h2>"));
	CHECK(has(&b, "<li><a class=\"internal\" href=\"/docs/\">Home</a></li>\n"
		      "<li><a class=\"internal\" href=\"/docs/guide/getting-started\">"
		      "Getting started</a></li>"));
	/* At the end of the article, after the body. */
	sec = strstr(b.ptr, "class=\"backlinks\"");
	art_end = strstr(b.ptr, "</article>");
	CHECK(sec && art_end && sec > strstr(b.ptr, "note-body") && sec < art_end);

	buf_reset(&b);
	n.nbacklinks = 0;
	layout_note_page(&s, &n, &b);
	CHECK(!has(&b, "backlinks"));
	CHECK(!has(&b, "Links to this page"));
	buf_release(&b);
}

static void test_cssclasses(void)
{
	static const char *const classes[] = { "wide", "", "cards" };
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct buf b = BUF_INIT;

	n.cssclasses = classes;
	n.ncssclasses = 3;
	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<article class=\"note wide cards\">"));

	buf_reset(&b);
	n.ncssclasses = 0;
	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<article class=\"note\">"));
	buf_release(&b);
}

static void test_feed_and_search(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct buf b = BUF_INIT;

	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<link rel=\"alternate\" type=\"application/rss+xml\" title=\"Quire Docs\" "
		      "href=\"/docs/feed.xml\">"));
	CHECK(has(&b, "<form class=\"search\" role=\"search\" method=\"get\" "
		      "action=\"/docs/search\">"));
	CHECK(has(&b, "<input class=\"search-input\" type=\"search\" name=\"q\""));

	buf_reset(&b);
	s.feed_url = NULL;
	s.search_url = NULL;
	layout_note_page(&s, &n, &b);
	CHECK(!has(&b, "rel=\"alternate\""));
	CHECK(!has(&b, "application/rss+xml"));
	CHECK(!has(&b, "<form"));
	CHECK(!has(&b, "name=\"q\""));
	buf_release(&b);
}

static void test_landmarks(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct buf b = BUF_INIT;

	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<a class=\"skip-link\" href=\"#quire-main\">"));
	CHECK(has(&b, "<main id=\"quire-main\""));
	CHECK(has(&b, "<header class=\"site-header\">"));
	CHECK(has(&b, "<nav class=\"explorer\" id=\"quire-explorer\""));
	CHECK(has(&b, "aria-controls=\"quire-explorer\""));
	CHECK(has(&b, "<footer class=\"site-footer\">"));
	CHECK(has(&b, "class=\"icon-button theme-toggle\" type=\"button\""));
	/* The explorer is not inlined: it grows with the vault. */
	CHECK(has(&b, "aria-label=\"Explorer\"></nav>"));
	buf_release(&b);
}

static void test_prefix(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct layout_item it = { "A", "/docs/a", NULL, NULL };
	struct buf b = BUF_INIT;

	layout_note_page(&s, &n, &b);
	CHECK(prefixed_everywhere(&b, "/docs"));
	CHECK(has(&b, "class=\"site-title\" href=\"/docs/\""));
	buf_reset(&b);
	layout_listing_page(&s, NULL, "Tag: guide", NULL, &it, 1, &b);
	CHECK(prefixed_everywhere(&b, "/docs"));
	buf_reset(&b);
	layout_not_found_page(&s, &b);
	CHECK(prefixed_everywhere(&b, "/docs"));
	CHECK(has(&b, "href=\"/docs/\">Go to the home page</a>"));

	/* Without a prefix, the home is "/". */
	buf_reset(&b);
	s = site_bare();
	layout_not_found_page(&s, &b);
	CHECK(has(&b, "class=\"site-title\" href=\"/\""));
	CHECK(has(&b, "href=\"/\">Go to the home page</a>"));
	buf_release(&b);
}

static void test_defaults(void)
{
	struct layout_site s = site_bare();
	struct layout_note n = note_minimal();
	struct buf b = BUF_INIT;

	s.language = NULL;
	s.tree_url = NULL;
	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<html lang=\"en\">"));
	CHECK(!has(&b, "data-tree"));
	CHECK(!has(&b, "name=\"description\""));
	CHECK(!has(&b, "og:description"));
	CHECK(has(&b, "<title>Plain \xc2\xb7 Garden</title>"));
	CHECK(has(&b, "<article class=\"note\">"));
	CHECK(balanced(&b));

	buf_reset(&b);
	s.language = "de";
	layout_note_page(&s, &n, &b);
	CHECK(has(&b, "<html lang=\"de\">"));
	buf_release(&b);
}

static void test_listing(void)
{
	static const struct layout_item items[] = {
		{ "First <note>", "/docs/first", "A summary & more", "2024-02-03" },
		{ "Second", "/docs/folder/second%20note", NULL, NULL },
	};
	struct layout_site s = site_docs();
	struct buf b = BUF_INIT;

	layout_listing_page(&s, NULL, "Tag: \"guide\"", "<p>Intro <em>html</em></p>", items, 2, &b);
	CHECK(has(&b, "<title>Tag: &quot;guide&quot; \xc2\xb7 Quire Docs</title>"));
	CHECK(has(&b, "<h1 class=\"note-title\">Tag: &quot;guide&quot;</h1>"));
	CHECK(has(&b, "<p>Intro <em>html</em></p>"));
	CHECK(has(&b, "<a class=\"listing-link\" href=\"/docs/first\">First &lt;note&gt;</a>"));
	CHECK(has(&b, "<time datetime=\"2024-02-03\">2024-02-03</time>"));
	CHECK(has(&b, "<p class=\"listing-summary\">A summary &amp; more</p>"));
	CHECK(has(&b, "<a class=\"listing-link\" href=\"/docs/folder/second%20note\">"
		      "Second</a></li>"));
	CHECK(has(&b, "<article class=\"listing\">"));
	CHECK(has(&b, "<ul class=\"listing-items\">"));
	CHECK(has(&b, "action=\"/docs/search\""));
	CHECK(has(&b, "rel=\"alternate\""));
	CHECK(!has(&b, "<aside"));
	CHECK(!has(&b, "rel=\"canonical\""));
	CHECK(balanced(&b));

	buf_reset(&b);
	layout_listing_page(&s, NULL, "Empty", NULL, NULL, 0, &b);
	CHECK(has(&b, "class=\"listing-empty\""));
	CHECK(!has(&b, "listing-items"));
	CHECK(!has(&b, "listing-intro"));
	CHECK(balanced(&b));
	buf_release(&b);
}

static void test_not_found(void)
{
	struct layout_site s = site_docs();
	struct buf b = BUF_INIT;

	layout_not_found_page(&s, &b);
	CHECK(has(&b, "<title>Page not found \xc2\xb7 Quire Docs</title>"));
	CHECK(has(&b, "<h1 class=\"note-title\">Page not found</h1>"));
	CHECK(has(&b, "<meta name=\"robots\" content=\"noindex\">"));
	CHECK(has(&b, "<form class=\"search search-large\""));
	CHECK(has(&b, "<link rel=\"stylesheet\" href=\"/docs/_quire/quire.0123abcd.css\">"));
	CHECK(has(&b, "data-tree=\"/docs/_quire/tree.json\""));
	CHECK(!has(&b, "rel=\"canonical\""));
	CHECK(balanced(&b));

	buf_reset(&b);
	s.search_url = NULL;
	layout_not_found_page(&s, &b);
	CHECK(!has(&b, "<form"));
	CHECK(has(&b, "Go to the home page"));
	buf_release(&b);
}

static void test_deterministic(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_full();
	struct layout_item it = { "A", "/docs/a", "s", "2024-01-01" };
	struct buf a = BUF_INIT, b = BUF_INIT;
	size_t first;

	layout_note_page(&s, &n, &a);
	layout_note_page(&s, &n, &b);
	CHECK(a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0);

	/* The layout appends: what the buffer held stays, the page follows. */
	buf_reset(&b);
	buf_adds(&b, "PREFIX");
	layout_note_page(&s, &n, &b);
	CHECK(b.len == a.len + 6 && memcmp(b.ptr + 6, a.ptr, a.len) == 0);

	buf_reset(&a);
	buf_reset(&b);
	layout_listing_page(&s, NULL, "T", "<p>i</p>", &it, 1, &a);
	first = a.len;
	layout_listing_page(&s, NULL, "T", "<p>i</p>", &it, 1, &a);
	CHECK(a.len == 2 * first && memcmp(a.ptr, a.ptr + first, first) == 0);

	buf_reset(&a);
	layout_not_found_page(&s, &a);
	layout_not_found_page(&s, &b);
	CHECK(a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0);
	buf_release(&a);
	buf_release(&b);
}

static void test_overhead(void)
{
	struct layout_site s = site_docs();
	struct layout_note n = note_minimal();
	struct buf b = BUF_INIT;

	/* The shell is repeated in every page: keep it small. */
	n.url = "/docs/plain";
	layout_note_page(&s, &n, &b);
	CHECK(b.len < 2600);
	buf_release(&b);
}

int main(void)
{
	RUN(test_head);
	RUN(test_title_equals_site);
	RUN(test_canonical);
	RUN(test_escaping);
	RUN(test_body_verbatim);
	RUN(test_dates);
	RUN(test_tags);
	RUN(test_unicode_tag);
	RUN(test_toc);
	RUN(test_breadcrumbs);
	RUN(test_title_repeated);
	RUN(test_backlinks);
	RUN(test_cssclasses);
	RUN(test_feed_and_search);
	RUN(test_landmarks);
	RUN(test_prefix);
	RUN(test_defaults);
	RUN(test_listing);
	RUN(test_not_found);
	RUN(test_deterministic);
	RUN(test_overhead);
	return test_done();
}
