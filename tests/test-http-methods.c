/*
 * test-http-methods.c: WebDAV's extension methods through the HTTP front
 * (src/http/methods.c), over real sockets.
 *
 * A handler on "/dav/" answers with what it saw: the method's name, the
 * path, a few headers and the body. Requests go out whole, pipelined in one
 * write, split at every byte, and malformed, and the answers must be the
 * ones a server that knew the methods would give: the method named, the
 * body read, and nothing of the rewrite visible in a body.
 */
#include "lib/httpc.h"
#include "lib/server.h"
#include "lib/test.h"
#include "http/http.h"
#include "site/snapshot.h"
#include "util/buf.h"
#include "util/gzip.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct snapshot_slot slot;
static struct test_server srv;
static char policy_saw[64]; /* the method the body policy was last asked about */
static atomic_int policy_calls;

/* "NAME path|Destination|Overwrite|Content-Length|X-Test|body", or 501 for a nameless method. */
static void dav(struct http_request *req, void *ctx)
{
	const char *name = http_request_method_name(req), *v;
	const char *const hs[] = { "Destination", "Overwrite", "Content-Length", "X-Test" };
	struct buf b = BUF_INIT;
	size_t len, i;
	const char *body = http_request_body(req, &len);

	if (!name) {
		http_reply_header(req, "Allow", "PROPFIND, MKCOL, MOVE");
		http_reply(req, 501, "text/plain", "no such method\n", 15);
		return;
	}
	buf_addf(&b, "%s %s", name, http_request_path(req));
	for (i = 0; i < sizeof(hs) / sizeof(hs[0]); i++) {
		v = http_request_header(req, hs[i]);
		buf_addf(&b, "|%s", v ? v : "-");
	}
	buf_addc(&b, '|');
	buf_add(&b, body, len);
	http_reply_buf(req, 200, "text/plain", &b);
}

/* Forged mark headers, echoed so that the test sees they reached the handler untouched. */
static void forged(struct http_request *req, void *ctx)
{
	const char *a = http_request_header(req, "X-Quire-Method-00000000000000000000000000000000");
	const char *b = http_request_header(req, "X-Quire-Method");
	struct buf out = BUF_INIT;

	buf_addf(&out, "%s %s %s", http_request_method_name(req), a ? a : "-", b ? b : "-");
	http_reply_buf(req, 200, "text/plain", &out);
}

/* PROPFIND may carry 16 bytes under /dav/small/, anything else the default. */
static size_t policy(void *ctx, const char *method, const char *target, const char *auth)
{
	atomic_fetch_add(&policy_calls, 1);
	snprintf(policy_saw, sizeof(policy_saw), "%s", method);
	if (strncmp(target, "/dav/small/", 11) == 0 && strcmp(method, "PROPFIND") == 0)
		return 16;
	return 64 * 1024;
}

static void build_snapshot(void)
{
	struct snapshot *s = snapshot_new(1);
	struct page *p = page_new(PAGE_NOTE, "/notes/hello", 12);

	p->content_type = "text/html; charset=utf-8";
	CHECK(page_set_body(p, xstrdup("<p>hello</p>\n"), 13, GZIP_LEVEL) == 0);
	snapshot_put(s, p);
	snapshot_slot_init(&slot);
	snapshot_publish(&slot, s);
}

/* One request on a fresh connection; the response's body (or "") into out, its status back. */
static int ask(const char *raw, struct buf *out)
{
	struct resp r;
	int status = -1;

	buf_reset(out);
	if (fetch(srv.port, raw, &r) == 0) {
		status = r.status;
		buf_add(out, r.body.ptr ? r.body.ptr : "", r.body.len);
	}
	resp_free(&r);
	return status;
}

static int send_str(int fd, const char *s)
{
	return send_all(fd, s, strlen(s));
}

static void test_propfind(void)
{
	struct buf b = BUF_INIT;

	CHECK_INT(ask("PROPFIND /dav/a HTTP/1.1\r\nHost: x\r\nDepth: 1\r\nContent-Type: "
		      "application/xml\r\nContent-Length: 11\r\n\r\n<propfind/>",
		      &b),
		  200);
	CHECK_STR(b.ptr, "PROPFIND /dav/a|-|-|11|-|<propfind/>");
	CHECK_INT(ask("PROPPATCH /dav/b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", &b),
		  200);
	CHECK_STR(b.ptr, "PROPPATCH /dav/b|-|-|3|-|abc");
	/*
	 * A bare LF does not end a line: RFC 9112 2.2 lets a recipient take
	 * it, llhttp (as Node.js) does not, and a proxy in front that did
	 * not either would frame the request differently.
	 */
	CHECK_INT(ask("PROPPATCH /dav/b HTTP/1.1\nHost: x\nContent-Length: 3\n\nabc", &b), 400);
	buf_release(&b);
}

static void test_mkcol(void)
{
	struct buf b = BUF_INIT;
	struct conn c;
	struct resp r;

	CHECK_INT(ask("MKCOL /dav/new/ HTTP/1.1\r\nHost: x\r\n\r\n", &b), 200);
	CHECK_STR(b.ptr, "MKCOL /dav/new/|-|-|-|-|");
	/* a bodiless request that keeps the connection: the next one is read after it */
	if (conn_open(&c, srv.port) < 0) {
		CHECK(0);
		return;
	}
	CHECK(send_str(c.fd,
		       "MKCOL /dav/k HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n"
		       "UNLOCK /dav/k HTTP/1.1\r\nHost: x\r\nLock-Token: <x>\r\n\r\n") == 0);
	CHECK(read_resp(&c, &r, 0) == 0);
	CHECK_INT(r.status, 200);
	CHECK_STR(r.body.ptr, "MKCOL /dav/k|-|-|-|-|");
	resp_free(&r);
	CHECK(read_resp(&c, &r, 0) == 0);
	CHECK_INT(r.status, 200);
	CHECK_STR(r.body.ptr, "UNLOCK /dav/k|-|-|-|-|");
	resp_free(&r);
	conn_close(&c);
	buf_release(&b);
}

static void test_move_copy(void)
{
	struct buf b = BUF_INIT;

	CHECK_INT(ask("MOVE /dav/a.md HTTP/1.1\r\nHost: x\r\nDestination: http://x/dav/b.md\r\n"
		      "Overwrite: F\r\nX-Test: 1\r\n\r\n",
		      &b),
		  200);
	CHECK_STR(b.ptr, "MOVE /dav/a.md|http://x/dav/b.md|F|-|1|");
	CHECK_INT(ask("COPY /dav/a.md HTTP/1.0\r\nDestination: /dav/c.md\r\nOverwrite: T\r\n\r\n",
		      &b),
		  200);
	CHECK_STR(b.ptr, "COPY /dav/a.md|/dav/c.md|T|-|-|");
	buf_release(&b);
}

static void test_lock_chunked(void)
{
	struct buf b = BUF_INIT;

	CHECK_INT(ask("LOCK /dav/a.md HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		      "6\r\n<lock>\r\n7;ext=1\r\n</lock>\r\n0\r\n\r\n",
		      &b),
		  200);
	CHECK_STR(b.ptr, "LOCK /dav/a.md|-|-|-|-|<lock></lock>");
	/* trailers */
	CHECK_INT(ask("LOCK /dav/t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n"
		      "3\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n",
		      &b),
		  200);
	CHECK_STR(b.ptr, "LOCK /dav/t|-|-|-|-|abcde");
	/* an empty line between chunks (which evhttp skipped) is no chunk size */
	CHECK_INT(ask("LOCK /dav/t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		      "3\r\nabc\r\n\r\n2\r\nde\r\n0\r\n\r\n",
		      &b),
		  400);
	buf_release(&b);
}

/* The pipelined mix: requests and the answers they must get, in order. */
static const char mix[] =
	"GET /dav/1 HTTP/1.1\r\nHost: x\r\n\r\n"
	"PROPFIND /dav/2 HTTP/1.1\r\nHost: x\r\nContent-Length: 26\r\n\r\n"
	"MOVE /dav/x HTTP/1.1\r\n\r\n\r\n"
	"MKCOL /dav/3 HTTP/1.1\r\nHost: x\r\n\r\n"
	"POST /dav/4 HTTP/1.1\r\nHost: x\r\nContent-length: 24\r\n\r\n"
	"COPY /dav/y HTTP/1.1\r\n\r\n"
	"LOCK /dav/5 HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\n\r\n"
	"18\r\nUNLOCK /dav/z HTTP/1.1\r\n\r\n0\r\n\r\n"
	"GET /notes/hello HTTP/1.1\r\nHost: x\r\n\r\n"
	"PUT /dav/6 HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nLOCK"
	"UNLOCK /dav/7 HTTP/1.1\r\nHost: x\r\nLock-Token: <t>\r\n\r\n"
	"HEAD /dav/8 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
	"COPY /dav/9 HTTP/1.1\r\nHost: x\r\nDestination: /dav/10\r\n\r\n";

static const char *const mix_answers[] = {
	"GET /dav/1|-|-|-|-|",
	"PROPFIND /dav/2|-|-|26|-|MOVE /dav/x HTTP/1.1\r\n\r\n\r\n",
	"MKCOL /dav/3|-|-|-|-|",
	"POST /dav/4|-|-|24|-|COPY /dav/y HTTP/1.1\r\n\r\n",
	"LOCK /dav/5|-|-|-|-|UNLOCK /dav/z HTTP/1.1\r\n",
	"<p>hello</p>\n",
	"PUT /dav/6|-|-|4|-|LOCK",
	"UNLOCK /dav/7|-|-|-|-|",
	"",
	"COPY /dav/9|/dav/10|-|-|-|",
};
#define NMIX (sizeof(mix_answers) / sizeof(mix_answers[0]))

/* Sends mix in pieces (cuts: offsets where a piece ends, ascending) and checks every answer. */
static int run_mix(const size_t *cuts, size_t ncuts)
{
	struct conn c;
	struct resp r;
	size_t i, from = 0, len = sizeof(mix) - 1;
	int one = 1, ok = 1;

	if (conn_open(&c, srv.port) < 0)
		return 0;
	setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (i = 0; i <= ncuts; i++) {
		size_t to = i < ncuts ? cuts[i] : len;
		if (to > from && send_all(c.fd, mix + from, to - from) < 0)
			ok = 0;
		from = to;
		if (i < ncuts)
			usleep(1000); /* so that the server reads the piece on its own */
	}
	for (i = 0; i < NMIX && ok; i++) {
		int head = strncmp(mix_answers[i], "", 1) == 0;
		if (read_resp(&c, &r, head) < 0 || r.status != 200 ||
		    strcmp(r.body.ptr ? r.body.ptr : "", mix_answers[i]) != 0) {
			fprintf(stderr, "answer %zu: %d '%s', want '%s'\n", i, r.status,
				r.body.ptr ? r.body.ptr : "", mix_answers[i]);
			ok = 0;
		}
		resp_free(&r);
	}
	conn_close(&c);
	return ok;
}

static void test_pipelined(void)
{
	size_t cuts[sizeof(mix)], i;

	CHECK(run_mix(NULL, 0));
	/* byte by byte */
	for (i = 0; i + 1 < sizeof(mix) - 1; i++)
		cuts[i] = i + 1;
	CHECK(run_mix(cuts, sizeof(mix) - 2));
}

/* The mix cut in two at every offset. */
static void test_every_boundary(void)
{
	size_t i, bad = 0;

	for (i = 1; i < sizeof(mix) - 1; i++) {
		if (!run_mix(&i, 1)) {
			fprintf(stderr, "cut at %zu failed\n", i);
			if (++bad > 3)
				break;
		}
	}
	CHECK_INT(bad, 0);
}

static void test_forged_mark(void)
{
	struct buf b = BUF_INIT;

	CHECK_INT(ask("POST /forged HTTP/1.1\r\nX-Quire-Method-00000000000000000000000000000000: "
		      "PROPFIND\r\nHost: x\r\nX-Quire-Method: MKCOL\r\nContent-Length: 0\r\n\r\n",
		      &b),
		  200);
	CHECK_STR(b.ptr, "POST PROPFIND MKCOL");
	/* a mark sent after a real extension method is not the mark either */
	CHECK_INT(ask("PROPFIND /forged HTTP/1.1\r\nX-Quire-Method-00000000000000000000000000000000: "
		      "MKCOL\r\nContent-Length: 0\r\n\r\n",
		      &b),
		  200);
	CHECK_STR(b.ptr, "PROPFIND MKCOL -");
	buf_release(&b);
}

static void test_not_allowed(void)
{
	struct resp r;
	struct conn c;

	/* an extension method on a page: 405, its body read, the connection kept */
	if (conn_open(&c, srv.port) < 0) {
		CHECK(0);
		return;
	}
	CHECK(send_str(c.fd,
		       "PROPFIND /notes/hello HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
		       "GET /notes/hello HTTP/1.1\r\nHost: x\r\n\r\n") == 0);
	CHECK(read_resp(&c, &r, 0) == 0);
	CHECK_INT(r.status, 405);
	CHECK_STR(hdr(&r, "Allow"), "GET, HEAD");
	resp_free(&r);
	CHECK(read_resp(&c, &r, 0) == 0);
	CHECK_INT(r.status, 200);
	CHECK_STR(r.body.ptr, "<p>hello</p>\n");
	resp_free(&r);
	conn_close(&c);
	/* a method nobody knows: 501, as before */
	CHECK(fetch(srv.port, "BREW /notes/hello HTTP/1.1\r\nHost: x\r\n\r\n", &r) == 0);
	CHECK_INT(r.status, 501);
	CHECK_STR(hdr(&r, "Allow"), "GET, HEAD");
	resp_free(&r);
	CHECK(fetch(srv.port, "BREW /dav/pot HTTP/1.1\r\nHost: x\r\n\r\n", &r) == 0);
	CHECK_INT(r.status, 501);
	resp_free(&r);
	/* the table is case-sensitive, as methods are */
	CHECK(fetch(srv.port, "propfind /dav/a HTTP/1.1\r\nHost: x\r\n\r\n", &r) == 0);
	CHECK_INT(r.status, 501);
	resp_free(&r);
}

static void test_body_policy(void)
{
	struct buf b = BUF_INIT;

	CHECK_INT(ask("PROPFIND /dav/small/a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nsmall",
		      &b),
		  200);
	CHECK_STR(policy_saw, "PROPFIND");
	CHECK_INT(ask("PROPFIND /dav/small/a HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n"
		      "0123456789abcdefghij",
		      &b),
		  413);
	CHECK_INT(ask("MKCOL /dav/small/b HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n"
		      "0123456789abcdefghij",
		      &b),
		  200);
	CHECK_STR(policy_saw, "MKCOL");
	CHECK(atomic_load(&policy_calls) >= 3);
	buf_release(&b);
}

/*
 * What llhttp refuses is answered and the connection closed (nothing after
 * it is read as a request); what it takes is served, and the methods after
 * it are named as ever.
 */
static void test_malformed(void)
{
	struct buf b = BUF_INIT;
	struct resp r;
	struct conn c;
	static const struct {
		const char *req;
		int status;
	} cases[] = {
		/* duplicate Content-Length, equal (RFC 9110 8.6 lets a recipient refuse it) */
		{ "GET /dav/a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
		  400 },
		/* a folded header line (obs-fold, RFC 9112 5.2) */
		{ "GET /dav/a HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n 2\r\n\r\n", 400 },
		/* a version that is not HTTP/1.x */
		{ "GET /dav/a HTTP/1.01\r\nHost: x\r\n\r\n", 505 },
		/* a framing value with trailing spaces: trimmed, as RFC 9112 5 asks */
		{ "GET /dav/a HTTP/1.1\r\nHost: x\r\nContent-Length: 0                              \r\n\r\n",
		  200 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (conn_open(&c, srv.port) < 0) {
			CHECK(0);
			return;
		}
		CHECK(send_all(c.fd, cases[i].req, strlen(cases[i].req)) == 0);
		CHECK(send_str(c.fd, "MKCOL /dav/m HTTP/1.1\r\nHost: x\r\n\r\n") == 0);
		CHECK(read_resp(&c, &r, 0) == 0);
		CHECK_INT(r.status, cases[i].status);
		resp_free(&r);
		if (cases[i].status == 200) {
			CHECK(read_resp(&c, &r, 0) == 0);
			CHECK_INT(r.status, 200);
			CHECK_STR(r.body.ptr, "MKCOL /dav/m|-|-|-|-|");
			resp_free(&r);
		} else {
			CHECK(closed_by_server(&c));
		}
		conn_close(&c);
	}
	/* a bad chunk size: refused, and closed */
	CHECK(fetch(srv.port,
		    "LOCK /dav/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "zz\r\nhello\r\n0\r\n\r\n",
		    &r) == 0);
	CHECK(r.status == 400 || r.status == 413);
	resp_free(&r);
	/* both framings */
	CHECK(fetch(srv.port,
		    "PROPFIND /dav/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
		    "Content-Length: 3\r\n\r\n0\r\n\r\n",
		    &r) == 0);
	CHECK_INT(r.status, 400);
	resp_free(&r);
	/* a body over max_body_size */
	CHECK(fetch(srv.port,
		    "PROPFIND /dav/a HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\nabc",
		    &r) == 0);
	CHECK_INT(r.status, 413);
	resp_free(&r);
	/* an empty line before the request is skipped (RFC 9112 2.2) */
	CHECK(fetch(srv.port, "\r\nPROPFIND /dav/a HTTP/1.1\r\nHost: x\r\n\r\n", &r) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);
	/* a head over the limit */
	buf_adds(&b, "PROPFIND /dav/a HTTP/1.1\r\nHost: x\r\n");
	for (i = 0; i < 400; i++)
		buf_addf(&b, "X-Filler-%zu: %s\r\n", i, "0123456789012345678901234567890123456789");
	buf_adds(&b, "\r\n");
	CHECK(fetch(srv.port, b.ptr, &r) == 0);
	CHECK(r.status == 400 || r.status == 431);
	resp_free(&r);
	buf_release(&b);
}

int main(void)
{
	struct http_options opt = { 0 };

	log_set_level(getenv("QUIRE_TEST_VERBOSE") ? LOG_DEBUG : LOG_ERROR);
	build_snapshot();
	opt.listen = "127.0.0.1:0";
	opt.slot = &slot;
	opt.max_header_size = 8 * 1024;
	if (test_server_new(&srv, &opt) < 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	CHECK(http_server_add_handler(srv.srv, "/dav/", dav, NULL) == 0);
	CHECK(http_server_add_handler(srv.srv, "/forged", forged, NULL) == 0);
	http_server_set_body_policy(srv.srv, "/dav/", policy, NULL);
	test_server_run(&srv);

	RUN(test_propfind);
	RUN(test_mkcol);
	RUN(test_move_copy);
	RUN(test_lock_chunked);
	RUN(test_pipelined);
	RUN(test_every_boundary);
	RUN(test_forged_mark);
	RUN(test_not_allowed);
	RUN(test_body_policy);
	RUN(test_malformed);

	CHECK_INT(test_server_stop(&srv), 0);
	snapshot_slot_release(&slot);
	return test_done();
}
