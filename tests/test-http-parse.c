/*
 * test-http-parse.c: the request parser (src/http/parse.c, llhttp) fed as
 * conn.c feeds it: a buffer the head stays in, bytes given whole or one at
 * a time, a zero-length feed after each head, requests one after another.
 *
 * The line ends llhttp 8.1.0 takes for CR LF when they are a CR and any
 * byte, and a CONNECT with no target, are refused (both found by
 * fuzz-http), wherever the feeds are cut, and what is well-formed around
 * them still parses.
 */
#include "http/parse.h"
#include "lib/test.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

struct outcome {
	int done;         /* requests read whole */
	int status;       /* of the refusal that ended it, or 0 */
	const char *why;
	struct buf bodies; /* their bodies, each followed by '|' */
	struct buf urls;   /* their targets, each followed by '|' */
};

static int take(void *ctx, const char *at, size_t len)
{
	buf_add(&((struct outcome *)ctx)->bodies, at, len);
	return 0;
}

/* Parses req[0, len) fed piece bytes at a time (0: whole) into *o. */
static void parse(const char *req, size_t len, size_t piece, struct outcome *o)
{
	struct reqparse rp;
	char *in = malloc(len + 1);
	size_t have = 0, pos = 0, used;
	int again = 0;
	enum rp_result r;

	memset(o, 0, sizeof(*o));
	o->bodies = (struct buf)BUF_INIT;
	o->urls = (struct buf)BUF_INIT;
	reqparse_init(&rp, take, o);
	while (have < len || again) {
		if (!again) {
			size_t n = piece && piece < len - have ? piece : len - have;
			memcpy(in + have, req + have, n);
			have += n;
		}
		again = 0;
		while (pos < have || again) {
			again = 0;
			r = reqparse_feed(&rp, in, pos, have - pos, &used);
			pos += used;
			if (r == RP_HEAD) {
				buf_add(&o->urls, in + rp.url, rp.url_len);
				buf_addc(&o->urls, '|');
				again = 1;
			} else if (r == RP_DONE) {
				o->done++;
				buf_addc(&o->bodies, '|');
			} else if (r == RP_ERROR) {
				o->status = rp.status;
				o->why = rp.why;
				free(in);
				return;
			} else {
				break;
			}
		}
	}
	free(in);
}

static void release(struct outcome *o)
{
	buf_release(&o->bodies);
	buf_release(&o->urls);
}

#define POST_CHUNKED "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
#define NEXT "GET /next HTTP/1.1\r\nHost: h\r\n\r\n"

/* Well-formed requests, pipelined, read the same however the feeds are cut. */
static void test_well_formed(void)
{
	static const char req[] = POST_CHUNKED "5;ext=\"a b\"\r\nhello\r\n6\r\n world\r\n"
				  "0\r\nX-Trailer: 1\r\nX-Empty:\r\n\r\n"
				  "PUT /cl HTTP/1.1\r\nHost: h\r\nX-Empty:\r\nContent-Length: 3\r\n\r\na\rb"
				  NEXT;
	size_t piece;
	struct outcome o;

	for (piece = 0; piece <= 7; piece++) {
		parse(req, sizeof(req) - 1, piece, &o);
		CHECK_INT(o.status, 0);
		CHECK_INT(o.done, 3);
		CHECK_STR(o.bodies.ptr, "hello world|a\rb||");
		CHECK_STR(o.urls.ptr, "/up|/cl|/next|");
		release(&o);
	}
}

/* Each request of reqs, fed whole and up to most bytes at a time: refused 400 for why, none read. */
static void check_refused(const char *const *reqs, size_t n, size_t most, const char *why)
{
	size_t i, piece;
	struct outcome o;

	for (i = 0; i < n; i++) {
		for (piece = 0; piece <= most; piece++) {
			parse(reqs[i], strlen(reqs[i]), piece, &o);
			CHECK_INT(o.status, 400);
			CHECK_INT(o.done, 0);
			CHECK_STR(o.why, why);
			if (o.status != 400)
				fprintf(stderr, "  request %zu, fed %zu bytes at a time\n", i, piece);
			release(&o);
		}
	}
}

/* A CR and any other byte where a line ends: 400, and nothing after it is read. */
static void test_cr_without_lf(void)
{
	static const char *const reqs[] = {
		"GET /a HTTP/1.1\r\nHost: h\r\n\rX" NEXT,         /* the head's empty line */
		POST_CHUNKED "5\rXhello\r\n0\r\n\r\n" NEXT,       /* a chunk-size line */
		POST_CHUNKED "5;e=1\rXhello\r\n0\r\n\r\n" NEXT,   /* one with an extension */
		POST_CHUNKED "3\r\nabc\rX0\r\n\r\n" NEXT,         /* the end of a chunk's data */
		POST_CHUNKED "0\rX\r\n" NEXT,                      /* the last chunk */
		POST_CHUNKED "0\r!\n" NEXT,
		POST_CHUNKED "3\r\nabc\r\n0\r\n\rX" NEXT,         /* the empty line after it */
		POST_CHUNKED "0\r\nX:\r\r\n" NEXT,                 /* after an empty trailer */
		POST_CHUNKED "0\r\nX:\rYZ: 1\r\n\r\n" NEXT,
		/* after a header with an empty value: a Content-Length a proxy does not see */
		"POST /a HTTP/1.1\r\nHost: h\r\nX:\rYContent-Length: 5\r\n\r\nabcde" NEXT,
		"GET /a HTTP/1.1\r\nX: \rY: 1\r\n\r\n" NEXT,
		"GET /a HTTP/1.1\r\nHost: h\r\nX:\r\r\n" NEXT,    /* and the head's end after it */
	};

	check_refused(reqs, sizeof(reqs) / sizeof(reqs[0]), 3, "a line ending in CR without LF");
}

/* llhttp takes "CONNECT " and a LF for a request with no target: refused, as no string */
static void test_empty_target(void)
{
	static const char *const reqs[] = { "CONNECT \n\r\n" NEXT, "CONNECT \n\r\n" };

	check_refused(reqs, sizeof(reqs) / sizeof(reqs[0]), 1, "an empty request target");
}

int main(void)
{
	RUN(test_well_formed);
	RUN(test_cr_without_lf);
	RUN(test_empty_target);
	return test_done();
}
