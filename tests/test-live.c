/*
 * test-live.c: live pages (src/http/live.c, live-http.c) over real
 * sockets: a vault served in process with live pages on, streams opened
 * to /_quire/live, notes changed, deleted and moved on disk and handed
 * to the loader, and the events read off the sockets. The cost of a
 * publish is counted (live_stats()'s visits and lookups), never timed.
 */
#include "http/live.h"
#include "lib/httpc.h"
#include "lib/server.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "site/loader.h"
#include "util/buf.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *vault;
static struct site_server srv;

static void start(const struct live_options *lo, int threads)
{
	struct site_server_options o = { .threads = threads, .url_prefix = "", .live = lo };

	vault = tv_new();
	tv_write(vault, "a.md", "# A\n\nfirst text of a\n");
	tv_write(vault, "b.md", "# B\n\ntext of b\n");
	tv_write(vault, "c.md", "# C\n\ntext of c\n");
	tv_write(vault, "d.md", "# D\n\ntext of d, which moves\n");
	site_server_start(&srv, vault, &o);
}

static void stop(void)
{
	CHECK_INT(site_server_stop(&srv), 0);
	tv_remove(vault);
}

/* Hands the loader a changed path and waits until it is live. */
static void publish(const char *const *paths, size_t n)
{
	uint64_t v = loader_notify(srv.loader, paths, n);
	CHECK_INT(loader_wait(srv.loader, v, 20000), 0);
}

/* A stream to u; status into *status (200 when it is streaming). The head is consumed. */
static int sse_open(struct conn *c, const char *u, int *status)
{
	struct buf req = BUF_INIT;
	char *end;

	*status = -1;
	if (conn_open(c, srv.port) < 0)
		return -1;
	buf_addf(&req, "GET /_quire/live?u=%s HTTP/1.1\r\nHost: localhost\r\n"
		       "Accept: text/event-stream\r\n\r\n", u);
	send_all(c->fd, req.ptr, req.len);
	buf_release(&req);
	while (!(c->in.ptr && (end = strstr(c->in.ptr, "\r\n\r\n"))))
		if (conn_fill(c) <= 0)
			return -1;
	if (c->in.len > 12)
		*status = atoi(c->in.ptr + 9);
	return 0;
}

/* Reads from c until its bytes (from off) hold want; 1 when they do, 0 at EOF or after 20 s. */
static int sse_wait(struct conn *c, const char *want)
{
	double give_up = now_s() + 20; /* heartbeats keep the socket busy: a bound of its own */

	while (!c->in.ptr || !strstr(c->in.ptr + c->off, want))
		if (now_s() > give_up || conn_fill(c) <= 0)
			return 0;
	return 1;
}

/* Consumes what c received so far. */
static void sse_skip(struct conn *c)
{
	c->off = c->in.len;
}

/* Heartbeats every 2 s: a stream outlives the front's 15 s read timeout (the limits test). */
static const struct live_options roomy = { .max_total = 1000, .max_per_address = 1000,
					   .heartbeat_ms = 2000 };

static void test_head_and_refusals(void)
{
	struct conn c = { -1, BUF_INIT, 0 };
	int status;
	struct resp r;

	start(&roomy, 1);
	CHECK(sse_open(&c, "/a", &status) == 0);
	CHECK_INT(status, 200);
	CHECK(strstr(c.in.ptr, "Content-Type: text/event-stream") != NULL);
	CHECK(strstr(c.in.ptr, "Cache-Control: no-store") != NULL);
	CHECK(strstr(c.in.ptr, "X-Accel-Buffering: no") != NULL);
	CHECK(sse_wait(&c, "retry: "));
	CHECK(sse_wait(&c, "event: hello\ndata: \""));
	conn_close(&c);
	CHECK_INT(fetch_page(srv.port, "/_quire/live?u=/nothing-here", NULL), 404);
	CHECK_INT(fetch_page(srv.port, "/_quire/live", NULL), 400);
	CHECK_INT(fetch_page(srv.port, "/_quire/live?u=a", NULL), 400);
	CHECK_INT(fetch_page(srv.port, "/_quire/live?u=/a%zz", NULL), 400);
	CHECK_INT(fetch_page(srv.port, "/_quire/live?u=/a%0a", NULL), 400);
	CHECK_INT(fetch_page(srv.port, "/_quire/live?u=/_quire/quire.js", NULL), 404);
	CHECK(fetch_request(srv.port, "POST", "/_quire/live?u=/a", NULL, "", 0, &r) == 0);
	CHECK_INT(r.status, 405);
	resp_free(&r);
	/* the pages say that they may follow (theme/js/live.js reads it) */
	CHECK(fetch_request(srv.port, "GET", "/a", NULL, NULL, 0, &r) == 0);
	CHECK_STR(hdr(&r, "Server-Timing"), "quire-live");
	resp_free(&r);
	stop();
}

static void test_changed_reaches_its_page_only(void)
{
	struct conn a = { -1, BUF_INIT, 0 }, b = { -1, BUF_INIT, 0 };
	const char *pa = "a.md", *pb = "b.md";
	int status;

	start(&roomy, 2);
	CHECK(sse_open(&a, "/a", &status) == 0 && status == 200);
	CHECK(sse_open(&b, "/b", &status) == 0 && status == 200);
	CHECK(sse_wait(&a, "event: hello") && sse_wait(&b, "event: hello"));
	sse_skip(&a);
	sse_skip(&b);
	tv_write(vault, "a.md", "# A\n\nsecond text of a\n");
	publish(&pa, 1);
	CHECK(sse_wait(&a, "event: changed\ndata: \""));
	/* b's first event after that must be b's own change: nothing came for a's */
	tv_write(vault, "b.md", "# B\n\nsecond text of b\n");
	publish(&pb, 1);
	CHECK(sse_wait(&b, "event: changed"));
	CHECK_INT(test_count(b.in.ptr + b.off, "event: changed"), 1);
	conn_close(&a);
	conn_close(&b);
	stop();
}

static void test_gone_and_moved(void)
{
	struct conn c = { -1, BUF_INIT, 0 }, d = { -1, BUF_INIT, 0 };
	const char *pc = "c.md", *moved[] = { "d.md", "e.md" };
	struct buf text = BUF_INIT;
	int status;

	start(&roomy, 1);
	CHECK(sse_open(&c, "/c", &status) == 0 && status == 200);
	CHECK(sse_open(&d, "/d", &status) == 0 && status == 200);
	CHECK(sse_wait(&c, "event: hello") && sse_wait(&d, "event: hello"));
	tv_unlink(vault, "c.md");
	publish(&pc, 1);
	CHECK(sse_wait(&c, "event: gone\n"));
	tv_read(vault, "d.md", &text);
	tv_unlink(vault, "d.md");
	tv_write(vault, "e.md", text.ptr);
	publish(moved, 2);
	CHECK(sse_wait(&d, "event: moved\ndata: /e\n"));
	buf_release(&text);
	conn_close(&c);
	conn_close(&d);
	stop();
}

static void test_limits(void)
{
	const struct live_options lo = { .max_total = 5, .max_per_address = 3 };
	static const char *const from[7] = { NULL, NULL, NULL, NULL, "127.0.0.2", "127.0.0.3",
					     "127.0.0.4" };
	static const int want[7] = { 200, 200, 200, 429, 200, 200, 503 };
	struct conn c[7];
	struct live_stats st;
	int i, status;

	start(&lo, 1);
	/* three from one address, a fourth beyond its share; then others up to five in all */
	for (i = 0; i < 7; i++) {
		c[i] = (struct conn){ -1, BUF_INIT, 0 };
		httpc_source = from[i];
		CHECK(sse_open(&c[i], i == 3 ? "/b" : "/a", &status) == 0);
		CHECK_INT(status, want[i]);
		if (status == 429 || status == 503)
			CHECK(strstr(c[i].in.ptr, "Retry-After: ") != NULL);
	}
	httpc_source = NULL;
	live_stats(srv.live, &st);
	CHECK_INT(st.refused, 2);
	CHECK_INT(st.subscribers, 5);
	for (i = 0; i < 7; i++)
		conn_close(&c[i]);
	stop();
}

/* A reader that does not read is closed once more than max_pending waits for it. */
static void test_slow_reader_is_bounded(void)
{
	const struct live_options lo = { .max_total = 10, .max_per_address = 10,
					 .max_pending = 4096 };
	struct live_stats st;
	struct conn c = { -1, BUF_INIT, 0 };
	struct buf req = BUF_INIT;
	int i;

	start(&lo, 1);
	c.fd = dial(srv.port, 1024);
	buf_adds(&req, "GET /_quire/live?u=/a HTTP/1.1\r\nHost: localhost\r\n\r\n");
	CHECK(c.fd >= 0 && send_all(c.fd, req.ptr, req.len) == 0);
	buf_release(&req);
	do {
		live_stats(srv.live, &st);
	} while (st.subscribers == 0 && usleep(1000) == 0);
	/* never read: heartbeats pile up in the socket, then in the server */
	for (i = 0; i < 2000000; i++) {
		live_heartbeat(srv.live);
		live_stats(srv.live, &st);
		if (st.slow > 0)
			break;
	}
	CHECK_INT(st.slow, 1);
	CHECK_INT(st.subscribers, 0);
	conn_close(&c);
	stop();
}

/* Every reader of a page hears of its change. */
static void test_many_readers_of_one_page(void)
{
	enum { N = 60 };
	struct conn c[N];
	const char *pa = "a.md";
	int i, status, got = 0;

	start(&roomy, 2);
	for (i = 0; i < N; i++) {
		c[i] = (struct conn){ -1, BUF_INIT, 0 };
		CHECK(sse_open(&c[i], "/a", &status) == 0 && status == 200);
	}
	tv_write(vault, "a.md", "# A\n\ntext of a for many\n");
	publish(&pa, 1);
	for (i = 0; i < N; i++) {
		got += sse_wait(&c[i], "event: changed");
		conn_close(&c[i]);
	}
	CHECK_INT(got, N);
	stop();
}

/* Subscribers visited and pairs looked up by one change of a, with n idle readers of b and c. */
static void publish_cost(int n, uint64_t *visits, uint64_t *lookups)
{
	struct conn *c = calloc((size_t)n + 1, sizeof(*c));
	struct live_stats before, after;
	const char *pa = "a.md";
	int i, status;

	start(&roomy, 1);
	for (i = 0; i <= n; i++) {
		c[i] = (struct conn){ -1, BUF_INIT, 0 };
		CHECK(sse_open(&c[i], i == n ? "/a" : i % 2 ? "/b" : "/c", &status) == 0);
		CHECK_INT(status, 200);
	}
	live_stats(srv.live, &before);
	tv_write(vault, "a.md", "# A\n\nanother text of a\n");
	publish(&pa, 1);
	CHECK(sse_wait(&c[n], "event: changed"));
	CHECK(loader_wait_settled(srv.loader, loader_version(srv.loader), 20000) == 0);
	live_stats(srv.live, &after);
	*visits = after.visits - before.visits;
	*lookups = after.lookups - before.lookups;
	for (i = 0; i <= n; i++)
		conn_close(&c[i]);
	free(c);
	stop();
}

static void test_publish_cost_does_not_grow_with_readers(void)
{
	uint64_t v10, l10, v200, l200;

	publish_cost(10, &v10, &l10);
	publish_cost(200, &v200, &l200);
	CHECK_INT(v10, 1); /* the one reader of a */
	CHECK_INT(v200, v10);
	CHECK_INT(l200, l10);
}

static void test_parse_target(void)
{
	struct buf out = BUF_INIT;
	const char *why;

	CHECK_INT(live_parse_target("u=/docs/a%20b", "/docs", &out, &why), 0);
	CHECK_STR(out.ptr, "/a b");
	CHECK_INT(live_parse_target("x=1&u=/docs", "/docs", &out, &why), 0);
	CHECK_STR(out.ptr, "/");
	CHECK_INT(live_parse_target("u=/a+b&u=/c", "", &out, &why), 0);
	CHECK_STR(out.ptr, "/a+b");
	CHECK_INT(live_parse_target("u=/docsx", "/docs", &out, &why), -1);
	CHECK(strstr(why, "prefix") != NULL);
	CHECK_INT(live_parse_target("u=/a%00", "", &out, &why), -1);
	CHECK_INT(live_parse_target(NULL, "", &out, &why), -1);
	CHECK(strstr(why, "no u=") != NULL);
	buf_release(&out);
}

int main(void)
{
	RUN(test_parse_target);
	RUN(test_head_and_refusals);
	RUN(test_changed_reaches_its_page_only);
	RUN(test_gone_and_moved);
	RUN(test_limits);
	RUN(test_slow_reader_is_bounded);
	RUN(test_many_readers_of_one_page);
	RUN(test_publish_cost_does_not_grow_with_readers);
	return test_done();
}
