/*
 * feeds.c: RSS, Atom and sitemap documents (feeds.h).
 *
 * Pure writers: the bytes depend only on the entries and the target they
 * are given, so the main site, each folder, each tag and each custom host
 * write their feeds through the same three functions.
 */
#include "site/feeds.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Newest first: by date, then by path for a stable order. */
static int cmp_newest(const void *a, const void *b)
{
	const struct feed_entry *x = a, *y = b;
	int c = strcmp(y->date, x->date);
	return c ? c : strcmp(x->path, y->path);
}

static void rfc822(const char *date, char *out, size_t size)
{
	struct tm tm;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = atoi(date) - 1900;
	tm.tm_mon = atoi(date + 5) - 1;
	tm.tm_mday = atoi(date + 8);
	t = timegm(&tm);
	gmtime_r(&t, &tm);
	strftime(out, size, "%a, %d %b %Y 00:00:00 +0000", &tm);
}

static void add_origin_href(struct buf *b, const char *origin, const char *href)
{
	buf_adds_html(b, origin);
	buf_adds_html(b, href);
}

/*
 * Plain text where RSS wants HTML (<description>): readers render it, so
 * the text is escaped as HTML and that HTML escaped again as XML; once
 * would let a "<script>" in a summary reach the reader as markup.
 */
static void add_text_as_html(struct buf *b, const char *text)
{
	struct buf html = BUF_INIT;

	buf_adds_html(&html, text);
	if (html.len)
		buf_add_html(b, html.ptr, html.len);
	buf_release(&html);
}

void feed_rss(const struct feed_target *t, struct feed_entry *v, size_t n, struct buf *b)
{
	size_t i, max = t->max_items;
	char when[64];

	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_newest);
	buf_adds(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		    "<rss version=\"2.0\" xmlns:atom=\"http://www.w3.org/2005/Atom\">\n<channel>\n"
		    "<title>");
	buf_adds_html(b, t->title);
	buf_adds(b, "</title>\n<link>");
	add_origin_href(b, t->origin, t->home);
	buf_adds(b, "</link>\n<description>");
	add_text_as_html(b, "Recent notes: ");
	add_text_as_html(b, t->title);
	buf_adds(b, "</description>\n<language>");
	buf_adds_html(b, t->language);
	buf_adds(b, "</language>\n<atom:link rel=\"self\" type=\"application/rss+xml\" href=\"");
	add_origin_href(b, t->origin, t->self);
	buf_adds(b, "\"/>\n");
	for (i = 0; i < n && i < max; i++) {
		const char *sum = v[i].summary;
		rfc822(v[i].date, when, sizeof(when));
		buf_adds(b, "<item>\n<title>");
		buf_adds_html(b, v[i].title);
		buf_adds(b, "</title>\n<link>");
		add_origin_href(b, t->origin, v[i].href);
		buf_adds(b, "</link>\n<guid isPermaLink=\"true\">");
		add_origin_href(b, t->origin, v[i].href);
		buf_adds(b, "</guid>\n<pubDate>");
		buf_adds(b, when);
		buf_adds(b, "</pubDate>\n");
		if (sum && *sum) {
			buf_adds(b, "<description>");
			add_text_as_html(b, sum);
			buf_adds(b, "</description>\n");
		}
		buf_adds(b, "</item>\n");
	}
	buf_adds(b, "</channel>\n</rss>\n");
}

void feed_atom(const struct feed_target *t, struct feed_entry *v, size_t n, struct buf *b)
{
	size_t i, max = t->max_items;

	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_newest);
	buf_adds(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		    "<feed xmlns=\"http://www.w3.org/2005/Atom\">\n<title>");
	buf_adds_html(b, t->title);
	buf_adds(b, "</title>\n<id>");
	add_origin_href(b, t->origin, t->home);
	buf_adds(b, "</id>\n<link href=\"");
	add_origin_href(b, t->origin, t->home);
	buf_adds(b, "\"/>\n<link rel=\"self\" href=\"");
	add_origin_href(b, t->origin, t->self);
	buf_adds(b, "\"/>\n<updated>");
	buf_adds(b, n ? v[0].date : "1970-01-01");
	buf_adds(b, "T00:00:00Z</updated>\n<author><name>");
	buf_adds_html(b, t->title);
	buf_adds(b, "</name></author>\n");
	for (i = 0; i < n && i < max; i++) {
		const char *sum = v[i].summary;
		buf_adds(b, "<entry>\n<title>");
		buf_adds_html(b, v[i].title);
		buf_adds(b, "</title>\n<id>");
		add_origin_href(b, t->origin, v[i].href);
		buf_adds(b, "</id>\n<link href=\"");
		add_origin_href(b, t->origin, v[i].href);
		buf_adds(b, "\"/>\n<updated>");
		buf_adds(b, v[i].date);
		buf_adds(b, "T00:00:00Z</updated>\n");
		if (sum && *sum) {
			buf_adds(b, "<summary>");
			buf_adds_html(b, sum);
			buf_adds(b, "</summary>\n");
		}
		buf_adds(b, "</entry>\n");
	}
	buf_adds(b, "</feed>\n");
}

void feed_urlset(const char *origin, const struct feed_entry *v, size_t n, struct buf *b)
{
	size_t k;

	buf_adds(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		    "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
	for (k = 0; k < n; k++) {
		buf_adds(b, "<url><loc>");
		add_origin_href(b, origin, v[k].href);
		buf_adds(b, "</loc><lastmod>");
		buf_adds(b, v[k].date);
		buf_adds(b, "</lastmod></url>\n");
	}
	buf_adds(b, "</urlset>\n");
}
