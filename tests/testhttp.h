/*
 * testhttp.h: a tiny blocking HTTP/1.1 client over raw sockets, for the
 * sync tests: one request per connection, on top of httpc.h (which
 * test-http.c uses to check every byte on the wire, pipelining included).
 *
 *	struct th_resp r;
 *	th_request(port, "PUT", "/api/v1/files/a.md", "Authorization: Bearer x\r\n",
 *		   "hi", 2, &r);
 *	... r.status, th_header(&r, "ETag"), r.body.ptr ...
 *	th_resp_free(&r);
 *
 * One request per connection (Connection: close). A source address other
 * than 127.0.0.1 can be chosen (th_source) so that tests can look like
 * several clients to the per-address limiter.
 */
#ifndef QUIRE_TESTHTTP_H
#define QUIRE_TESTHTTP_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "httpc.h" /* send_all(), now_s() */
#include "util/json.h"
#include "util/xalloc.h"

struct th_resp {
	int status;
	struct buf head;   /* the header block, NUL-separated "name: value" lines */
	struct buf body;
};

static const char *th_source = "127.0.0.1";

static inline int th_dial(int port)
{
	struct sockaddr_in sa, src;
	struct timeval tv = { 30, 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memset(&src, 0, sizeof(src));
	src.sin_family = AF_INET;
	if (inet_pton(AF_INET, th_source, &src.sin_addr) != 1 ||
	    bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0) {
		close(fd);
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static inline void th_resp_free(struct th_resp *r)
{
	buf_release(&r->head);
	buf_release(&r->body);
	r->status = 0;
}

/* The first value of a response header, or NULL (points into r). */
static inline const char *th_header(const struct th_resp *r, const char *name)
{
	size_t n = strlen(name);
	const char *p = r->head.ptr, *end = r->head.ptr + r->head.len;

	while (p < end) {
		if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
			p += n + 1;
			while (*p == ' ')
				p++;
			return p;
		}
		p += strlen(p) + 1;
	}
	return NULL;
}

/* The first "\r\nContent-Length:" in s, any case, or NULL. */
static inline const char *th_find_length(const char *s)
{
	for (s = strstr(s, "\r\n"); s; s = strstr(s + 2, "\r\n"))
		if (strncasecmp(s + 2, "Content-Length:", 15) == 0)
			return s;
	return NULL;
}

/*
 * Reads a whole response from fd (the server closes after it). Returns 0,
 * or -1 when the connection failed before a status line.
 */
static inline int th_read(int fd, struct th_resp *r)
{
	struct buf in = BUF_INIT;
	char *hend, *line, *next;
	const char *cl;
	size_t hlen, want;

	for (;;) {
		ssize_t n;
		buf_grow(&in, 65536);
		n = recv(fd, in.ptr + in.len, 65536, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		buf_setlen(&in, in.len + (size_t)n);
		if ((hend = strstr(in.ptr, "\r\n\r\n"))) {
			hlen = (size_t)(hend - in.ptr) + 4;
			*hend = '\0';
			cl = th_find_length(in.ptr);
			*hend = '\r';
			want = cl ? strtoull(cl + 17, NULL, 10) : SIZE_MAX;
			if (want != SIZE_MAX && in.len >= hlen + want)
				break;
		}
	}
	hend = strstr(in.ptr, "\r\n\r\n");
	if (!hend || sscanf(in.ptr, "HTTP/1.%*d %d", &r->status) != 1) {
		buf_release(&in);
		return -1;
	}
	*hend = '\0';
	line = strstr(in.ptr, "\r\n");
	for (; line; line = next) {
		line += 2;
		next = strstr(line, "\r\n");
		buf_add(&r->head, line, next ? (size_t)(next - line) : strlen(line));
		buf_addc(&r->head, '\0');
	}
	buf_add(&r->body, hend + 4, in.len - (size_t)(hend + 4 - in.ptr));
	cl = th_header(r, "Content-Length");
	if (cl && r->body.len > strtoull(cl, NULL, 10))
		buf_setlen(&r->body, strtoull(cl, NULL, 10));
	buf_release(&in);
	return 0;
}

/*
 * One request: method target, extra header lines (each ending in \r\n),
 * an optional body (Content-Length is added for it when body is not NULL).
 */
static inline int th_request(int port, const char *method, const char *target, const char *headers,
			     const void *body, size_t len, struct th_resp *r)
{
	struct buf req = BUF_INIT;
	int fd, rc = -1;

	memset(r, 0, sizeof(*r));
	buf_init(&r->head, 0);
	buf_init(&r->body, 0);
	buf_addf(&req, "%s %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n%s", method, target,
		 headers ? headers : "");
	if (body)
		buf_addf(&req, "Content-Length: %zu\r\n", len);
	buf_adds(&req, "\r\n");
	if (body)
		buf_add(&req, body, len);
	fd = th_dial(port);
	if (fd < 0)
		goto out;
	if (send_all(fd, req.ptr, req.len) == 0)
		rc = th_read(fd, r);
	close(fd);
out:
	buf_release(&req);
	return rc;
}

/* A top-level unsigned field of a JSON object, or -1. */
static inline long long th_json_u64(const char *body, const char *field)
{
	struct json_reader jr;
	struct buf key = BUF_INIT;
	uint64_t v = 0;
	long long ret = -1;

	json_init(&jr, body, strlen(body));
	if (json_object(&jr) == 0) {
		while (json_key(&jr, &key) > 0) {
			if (strcmp(key.ptr, field) == 0) {
				if (json_u64(&jr, &v) == 0)
					ret = (long long)v;
				break;
			}
			if (json_skip(&jr) < 0)
				break;
		}
	}
	buf_release(&key);
	return ret;
}

/* A top-level string field of a JSON object into out; 0 or -1. */
static inline int th_json_str(const char *body, const char *field, struct buf *out)
{
	struct json_reader jr;
	struct buf key = BUF_INIT;
	int ret = -1;

	json_init(&jr, body, strlen(body));
	if (json_object(&jr) == 0) {
		while (json_key(&jr, &key) > 0) {
			if (strcmp(key.ptr, field) == 0) {
				ret = json_string(&jr, out);
				break;
			}
			if (json_skip(&jr) < 0)
				break;
		}
	}
	buf_release(&key);
	return ret;
}

#endif
