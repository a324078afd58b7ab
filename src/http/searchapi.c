/*
 * searchapi.c: the search endpoints.
 *
 * Query strings are decoded strictly (a bad %XX or a NUL is a 400). Readers live in
 * thread-specific storage, so no connection is shared between loops and no
 * lock is taken on the request path; the rate limiter is the only shared
 * state, and it is sharded.
 *
 * The page is rendered per request, the one exception to "no rendering on
 * the request path": its content is the query's. It reuses the layout's
 * listing page, with the results (escaped by search.c) as its body.
 */
#include "http/searchapi.h"
#include "http/http.h"
#include "search/search.h"
#include "site/hosts.h"
#include "site/layout.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/metrics.h"
#include "util/ratelimit.h"
#include "util/xalloc.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct searchapi {
	char *db;
	struct rate_limiter *limiter;
	struct metrics_histogram took; /* each query's time in the index, any thread */
	_Atomic uint64_t limited;      /* answered 429 */
	pthread_key_t reader_key;
	struct layout_site layout;
	char *strings[10];    /* owned copies behind layout */
};

/* A serving thread's reader, and the file it has open. */
struct thread_reader {
	struct search_reader *r;
	dev_t dev;
	ino_t ino;
};

static void reader_free(void *arg)
{
	struct thread_reader *t = arg;

	if (t) {
		search_reader_free(t->r);
		free(t);
	}
}

static const char *dup_into(struct searchapi *api, int i, const char *s)
{
	api->strings[i] = s ? xstrdup(s) : NULL;
	return api->strings[i];
}

struct searchapi *searchapi_new(const char *db_path, const struct layout_site *layout,
				double per_sec, double burst)
{
	struct searchapi *api = xcalloc(1, sizeof(*api));

	api->db = xstrdup(db_path);
	api->limiter = rate_limiter_new(per_sec, burst);
	if (pthread_key_create(&api->reader_key, reader_free) != 0) {
		log_error("search: cannot create the per-thread reader key");
		free(api->db);
		rate_limiter_free(api->limiter);
		free(api);
		return NULL;
	}
	api->layout.title = dup_into(api, 0, layout->title);
	api->layout.language = dup_into(api, 1, layout->language);
	api->layout.url_prefix = dup_into(api, 2, layout->url_prefix);
	api->layout.base_url = dup_into(api, 3, layout->base_url);
	api->layout.css_url = dup_into(api, 4, layout->css_url);
	api->layout.js_url = dup_into(api, 5, layout->js_url);
	api->layout.icon_url = dup_into(api, 6, layout->icon_url);
	api->layout.tree_url = dup_into(api, 7, layout->tree_url);
	api->layout.search_url = dup_into(api, 8, layout->search_url);
	api->layout.feed_url = dup_into(api, 9, layout->feed_url);
	return api;
}

void searchapi_free(struct searchapi *api)
{
	size_t i;

	if (!api)
		return;
	/* this thread's reader (the others went with their threads) */
	reader_free(pthread_getspecific(api->reader_key));
	pthread_key_delete(api->reader_key);
	rate_limiter_free(api->limiter);
	for (i = 0; i < sizeof(api->strings) / sizeof(*api->strings); i++)
		free(api->strings[i]);
	free(api->db);
	free(api);
}

/*
 * This thread's reader of the index file as it is now. The loader
 * replaces a file that was deleted or damaged under it with a new one
 * (loader.c, "search_intact"): a reader still on the old file would
 * answer from it for ever, so each request checks that the path is still
 * the file the reader opened (a stat, about a microsecond) and opens the
 * new one otherwise. NULL while there is no file (a 503 until it is back).
 */
static struct search_reader *reader(struct searchapi *api)
{
	struct thread_reader *t = pthread_getspecific(api->reader_key);
	struct stat st;

	if (stat(api->db, &st) < 0) {
		if (t) {
			pthread_setspecific(api->reader_key, NULL);
			reader_free(t);
		}
		return NULL;
	}
	if (t && (t->dev != st.st_dev || t->ino != st.st_ino)) {
		pthread_setspecific(api->reader_key, NULL);
		reader_free(t);
		t = NULL;
	}
	if (!t) {
		struct search_reader *r = search_reader_open(api->db);
		if (!r)
			return NULL;
		t = xmalloc(sizeof(*t));
		t->r = r;
		t->dev = st.st_dev;
		t->ino = st.st_ino;
		pthread_setspecific(api->reader_key, t);
	}
	return t->r;
}

static int number(const char *query, const char *name, int dflt, int *out)
{
	struct buf v = BUF_INIT;
	char *end;
	long n;
	int rc = http_query_param(query, name, &v);

	*out = dflt;
	if (rc == 1) {
		n = strtol(v.ptr, &end, 10);
		if (!v.len || *end || n < -1000000 || n > 1000000)
			rc = -1;
		else
			*out = (int)n;
	}
	buf_release(&v);
	return rc < 0 ? -1 : 0;
}

static void reply_error(struct http_request *req, int status, const char *msg)
{
	struct buf b = BUF_INIT;

	buf_adds(&b, "{\"error\":\"");
	buf_adds_json(&b, msg);
	buf_adds(&b, "\"}\n");
	http_reply_header(req, "Cache-Control", "no-store");
	http_reply_buf(req, status, "application/json", &b);
}

/* Method, rate limit and reader; replies and returns NULL when the request cannot go on. */
static struct search_reader *admit(struct searchapi *api, struct http_request *req)
{
	enum http_method m = http_request_method(req);
	struct search_reader *r;
	double retry = 0;

	if (m != HTTP_GET && m != HTTP_HEAD) {
		http_reply_header(req, "Allow", "GET, HEAD");
		reply_error(req, 405, "search answers GET and HEAD");
		return NULL;
	}
	if (!rate_limiter_take(api->limiter, http_request_peer(req), clock_ms() / 1e3, &retry)) {
		char secs[32];
		snprintf(secs, sizeof(secs), "%d", (int)ceil(retry > 1 ? retry : 1));
		http_reply_header(req, "Retry-After", secs);
		atomic_fetch_add_explicit(&api->limited, 1, memory_order_relaxed);
		reply_error(req, 429, "too many searches from this address; try again shortly");
		return NULL;
	}
	r = reader(api);
	if (!r)
		reply_error(req, 503, "the search index is not available yet");
	return r;
}

/*
 * Answers out, which is the main site's: on a custom domain, rewritten for
 * it first, so that a result links to where its note is served (its route
 * there, or the main site) and never to a path the host answers with 404.
 */
static void reply_for_host(struct http_request *req, int status, const char *type,
			   struct buf *out)
{
	struct snapshot_host *h = http_request_host(req);
	struct buf b = BUF_INIT;

	http_reply_header(req, "Cache-Control", "no-store");
	if (!h) {
		http_reply_buf(req, status, type, out);
		return;
	}
	hosts_rewrite(http_request_snapshot(req), h, out->ptr, out->len, &b);
	http_reply_buf(req, status, type, &b);
	buf_release(&b);
}

/* A query that began at start (clock_ms()) is done: into the histogram. */
static void timed(struct searchapi *api, double start)
{
	double ms = clock_ms() - start;

	metrics_observe(&api->took, ms > 0 ? (uint64_t)(ms * 1000) : 0);
}

static void api_handler(struct http_request *req, void *ctx)
{
	struct searchapi *api = ctx;
	const char *query = http_request_query(req);
	struct search_reader *r = admit(api, req);
	struct buf q = BUF_INIT, out = BUF_INIT;
	int limit, offset, rc;
	double start;

	if (!r)
		return;
	if (http_query_param(query, "q", &q) < 0 || number(query, "limit", 10, &limit) < 0 ||
	    number(query, "offset", 0, &offset) < 0) {
		reply_error(req, 400, "bad query string: q, limit and offset must be percent-encoded text and numbers");
		goto out;
	}
	start = clock_ms();
	rc = search_query(r, q.ptr, limit, offset, &out);
	timed(api, start);
	reply_for_host(req, rc == 0 ? 200 : rc == -1 ? 400 : 500, "application/json", &out);
out:
	buf_release(&q);
	buf_release(&out);
}

/* Results a page of /search shows; ?page=N goes on from there. */
#define SEARCH_PAGE_SIZE 20

/* "?q=...&page=n" for a link to another page of results. */
static void page_link(struct buf *out, const struct searchapi *api, const char *q, int page,
		      const char *rel, const char *text)
{
	struct buf href = BUF_INIT;

	buf_adds(&href, api->layout.search_url);
	buf_adds(&href, "?q=");
	buf_add_urlpath(&href, q, strlen(q));
	buf_addf(&href, "&page=%d", page);
	buf_addf(out, "<a rel=\"%s\" href=\"", rel);
	buf_adds_html(out, href.ptr);
	buf_adds(out, "\">");
	buf_adds_html(out, text);
	buf_adds(out, "</a>");
	buf_release(&href);
}

/*
 * The /search page: the query in its box, how many notes match and which
 * of them this page shows, the results with their highlighted passages,
 * and links to the pages before and after (?page=, SEARCH_PAGE_SIZE a
 * page, as far as the index pages: offset SEARCH_OFFSET_MAX).
 */
static void page_handler(struct http_request *req, void *ctx)
{
	struct searchapi *api = ctx;
	const char *query = http_request_query(req);
	struct search_reader *r = admit(api, req);
	struct buf q = BUF_INIT, results = BUF_INIT, intro = BUF_INIT, html = BUF_INIT,
		   title = BUF_INIT;
	const char *fixed;
	long long total = 0, exact = 0;
	int rc = 0, status = 200, page = 1, offset = 0;
	double start;

	if (!r)
		return;
	if (http_query_param(query, "q", &q) < 0 || number(query, "page", 1, &page) < 0 ||
	    page < 1 || page > SEARCH_OFFSET_MAX / SEARCH_PAGE_SIZE + 1) {
		status = 400;
		buf_reset(&q);
		layout_search_form(&intro, &api->layout, NULL);
		buf_addf(&intro, "<p>That query could not be read: q is the words to find, page a "
				 "number from 1 to %d.</p>\n",
			 SEARCH_OFFSET_MAX / SEARCH_PAGE_SIZE + 1);
		goto reply;
	}
	layout_search_form(&intro, &api->layout, q.ptr);
	if (!q.len)
		goto reply;
	offset = (page - 1) * SEARCH_PAGE_SIZE;
	start = clock_ms();
	rc = search_query_html(r, q.ptr, SEARCH_PAGE_SIZE, offset, &results, &total);
	timed(api, start);
	if (rc != 0) {
		status = rc == -1 ? 400 : 500;
		buf_adds(&intro, rc == -1 ? "<p>That query cannot be searched: try other words.</p>\n"
					  : "<p>Search failed; please try again.</p>\n");
		goto reply;
	}
	if (!total) {
		const char *hint = search_reader_suggestion(r);

		buf_adds(&intro, "<p class=\"search-total\">No notes match.</p>\n");
		if (hint) {
			/* "did you mean": the index's own words for mistyped ones */
			buf_adds(&intro, "<p class=\"search-suggestion\">Did you mean ");
			page_link(&intro, api, hint, 1, "nofollow", hint);
			buf_adds(&intro, "?</p>\n");
		}
	}
	else if (!results.len)
		buf_addf(&intro, "<p class=\"search-total\">%lld result%s: none on page %d.</p>\n",
			 total, total == 1 ? "" : "s", page);
	else if (total <= SEARCH_PAGE_SIZE && page == 1)
		buf_addf(&intro, "<p class=\"search-total\">%lld result%s</p>\n", total,
			 total == 1 ? "" : "s");
	else
		buf_addf(&intro, "<p class=\"search-total\">Results %d to %lld of %lld</p>\n",
			 offset + 1, offset + SEARCH_PAGE_SIZE < total ? offset + SEARCH_PAGE_SIZE : total,
			 total);
	if (total && (fixed = search_reader_corrected(r, &exact))) {
		/* typos forgiven: say for which words, as search engines do */
		buf_adds(&intro, exact ? "<p class=\"search-corrected\">Including results for <strong>"
				       : "<p class=\"search-corrected\">Showing results for <strong>");
		buf_adds_html(&intro, fixed);
		buf_adds(&intro, "</strong></p>\n");
	}
	if (results.len) {
		buf_addf(&intro, "<ol class=\"listing-items search-page-results\" start=\"%d\">\n",
			 offset + 1);
		buf_add(&intro, results.ptr, results.len);
		buf_adds(&intro, "</ol>\n");
	}
	if (page > 1 || offset + SEARCH_PAGE_SIZE < total) {
		int reach = SEARCH_OFFSET_MAX / SEARCH_PAGE_SIZE + 1;
		int last = (int)((total + SEARCH_PAGE_SIZE - 1) / SEARCH_PAGE_SIZE);

		last = last < 1 ? 1 : last < reach ? last : reach;
		buf_adds(&intro, "<nav class=\"pager search-pager\" aria-label=\"Result pages\">");
		if (page > 1)
			page_link(&intro, api, q.ptr, page - 1 < last ? page - 1 : last, "prev",
				  "Previous");
		if (page <= last)
			buf_addf(&intro, " <span>Page %d of %d</span> ", page, last);
		if (page < last)
			page_link(&intro, api, q.ptr, page + 1, "next", "Next");
		buf_adds(&intro, "</nav>\n");
	}
reply:
	buf_adds(&title, q.len ? "Search: " : "Search");
	buf_add(&title, q.ptr, q.len);
	/* a listing page with no items of its own: the results are its intro */
	layout_listing_page(&api->layout, NULL, title.ptr, intro.ptr, NULL, 0, &html);
	reply_for_host(req, status, "text/html; charset=utf-8", &html);
	buf_release(&q);
	buf_release(&results);
	buf_release(&intro);
	buf_release(&html);
	buf_release(&title);
}

int searchapi_register(struct searchapi *api, struct http_server *srv)
{
	if (http_server_add_handler(srv, "/api/search", api_handler, api) < 0 ||
	    http_server_add_handler(srv, "/search", page_handler, api) < 0 ||
	    http_server_set_handler_kind(srv, "/api/search", HTTP_HANDLER_SEARCH) < 0 ||
	    http_server_set_handler_kind(srv, "/search", HTTP_HANDLER_SEARCH) < 0)
		return -1;
	return 0;
}

void searchapi_metrics(void *ctx, struct buf *b)
{
	struct searchapi *api = ctx;
	struct metrics_totals t;

	memset(&t, 0, sizeof(t));
	metrics_read(&api->took, &t);
	metrics_family(b, "quire_search_query_duration_seconds", "histogram",
		       "Time a search query (/api/search, /search) took in the index.");
	metrics_write_histogram(b, "quire_search_query_duration_seconds", "", &t);
	metrics_family(b, "quire_search_limited_total", "counter",
		       "Searches answered 429: their address asked faster than --search-rate.");
	buf_addf(b, "quire_search_limited_total %llu\n",
		 (unsigned long long)atomic_load_explicit(&api->limited, memory_order_relaxed));
}
