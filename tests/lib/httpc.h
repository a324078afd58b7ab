/*
 * httpc.h: the HTTP/1.1 client of the tests, over real sockets to a server
 * on 127.0.0.1.
 *
 * Two ways in, one reader:
 *
 *	- raw: conn_open(), send_all() exactly the bytes given, read_resp()
 *	  each response (several pipelined ones from one connection too), or
 *	  fetch() for one request on a fresh connection. test-http checks every
 *	  byte on the wire this way.
 *	- built: fetch_request(port, "PUT", "/api/v1/files/a.md",
 *	  "Authorization: Bearer x\r\n", "hi", 2, &r) writes the request line,
 *	  Host, Connection: close and Content-Length; for the API tests.
 *
 *	struct resp r;
 *	if (fetch_request(port, "GET", "/healthz", NULL, NULL, 0, &r) == 0)
 *		... r.status, hdr(&r, "ETag"), r.body.ptr ...
 *	resp_free(&r);
 *
 * A response is always safe to resp_free(), whatever the call returned.
 * Sockets time out after 30 s, longer than the sync API's longest wait
 * (10 s), so a test that hangs fails instead. A source address other than
 * the kernel's choice can be set (httpc_source) so that a test looks like
 * several clients to a per-address limiter.
 *
 * This merges the two clients the tests had (httpc.h for test-http,
 * testhttp.h for the sync tests, whose reader kept the header block as
 * one buffer); the API tests only ever read whole responses on closing
 * connections, which read_resp() does as well.
 */
#ifndef QUIRE_TEST_HTTPC_H
#define QUIRE_TEST_HTTPC_H

#include <stddef.h>
#include <sys/types.h>

#include "util/buf.h"

struct conn {
	int fd;
	struct buf in; /* received, not yet consumed from off */
	size_t off;
};

struct resp {
	int status;
	int nh;
	char *names[128], *values[128];
	struct buf body;
};

/* The address new connections are made from ("127.0.0.2"); NULL: the kernel's choice. */
extern const char *httpc_source;

/*
 * A connected socket to 127.0.0.1:port (rcvbuf > 0 sets its receive
 * buffer), or -1. The caller closes it.
 */
int dial(int port, int rcvbuf);

/* Connects c to port; returns the socket, or -1. conn_close() c either way. */
int conn_open(struct conn *c, int port);
void conn_close(struct conn *c);

/* Reads more bytes into c->in; returns the count, 0 at EOF, -1 on error or timeout. */
ssize_t conn_fill(struct conn *c);

/* Sends all of data; 0, or -1 when the socket failed. */
int send_all(int fd, const void *data, size_t len);

/*
 * Reads one response from c into r (which the caller frees with
 * resp_free()). head: the request was HEAD (no body follows). Returns 0,
 * or -1 when the connection closed or failed before a whole response
 * arrived.
 */
int read_resp(struct conn *c, struct resp *r, int head);
void resp_free(struct resp *r);

/* The first value of a response header (any case), or NULL; points into r. */
const char *hdr(const struct resp *r, const char *name);

/* How many times a header appears. */
int hdr_count(const struct resp *r, const char *name);

/*
 * Whether the server closed c: nothing unread, and EOF within 5 s (a
 * bound for a server that should close at once, not a wait).
 */
int closed_by_server(struct conn *c);

/* Sends req on c and reads its answer: the status, or -1 when the connection is gone. */
int conn_ask(struct conn *c, const char *req);

/* Sends raw (a whole request) on a fresh connection; returns read_resp's result. */
int fetch(int port, const char *raw, struct resp *r);

/*
 * One request on a fresh connection: method target, extra header lines
 * (each ending in \r\n; may be NULL), and a body when body is not NULL
 * (Content-Length is added for it). Returns read_resp's result.
 */
int fetch_request(int port, const char *method, const char *target, const char *headers,
		  const void *body, size_t len, struct resp *r);

/*
 * GET target with no extra headers: the status (-1 when no response came),
 * and the body into body when it is not NULL.
 */
int fetch_page(int port, const char *target, struct buf *body);

/* A top-level unsigned field of a JSON object (a response body), or -1. */
long long body_u64(const char *body, const char *field);

/* A top-level string field of a JSON object into out; 0 or -1. */
int body_str(const char *body, const char *field, struct buf *out);

#endif
