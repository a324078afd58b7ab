/*
 * httpc.c: the tests' HTTP/1.1 client (see httpc.h): blocking sockets, a
 * receive buffer per connection, and a response parser that takes the
 * length from Content-Length, chunks (Transfer-Encoding: chunked) or,
 * without either, reads to EOF.
 */
#include "lib/httpc.h"

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
#include <unistd.h>

#include "util/json.h"
#include "util/xalloc.h"

const char *httpc_source;

int dial(int port, int rcvbuf)
{
	struct sockaddr_in sa, src;
	struct timeval tv = { 30, 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (httpc_source) {
		memset(&src, 0, sizeof(src));
		src.sin_family = AF_INET;
		if (inet_pton(AF_INET, httpc_source, &src.sin_addr) != 1 ||
		    bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0) {
			close(fd);
			return -1;
		}
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

int conn_open(struct conn *c, int port)
{
	c->fd = dial(port, 0);
	buf_init(&c->in, 0);
	c->off = 0;
	return c->fd;
}

void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	buf_release(&c->in);
}

int send_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t conn_fill(struct conn *c)
{
	ssize_t n;

	if (c->off && c->off == c->in.len) {
		buf_reset(&c->in);
		c->off = 0;
	}
	buf_grow(&c->in, 65536);
	do
		n = recv(c->fd, c->in.ptr + c->in.len, 65536, 0);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		buf_setlen(&c->in, c->in.len + (size_t)n);
	return n;
}

void resp_free(struct resp *r)
{
	int i;

	for (i = 0; i < r->nh; i++) {
		free(r->names[i]);
		free(r->values[i]);
	}
	buf_release(&r->body);
	memset(r, 0, sizeof(*r));
}

const char *hdr(const struct resp *r, const char *name)
{
	int i;

	for (i = 0; i < r->nh; i++)
		if (strcasecmp(r->names[i], name) == 0)
			return r->values[i];
	return NULL;
}

int hdr_count(const struct resp *r, const char *name)
{
	int i, n = 0;

	for (i = 0; i < r->nh; i++)
		n += strcasecmp(r->names[i], name) == 0;
	return n;
}

/* Waits until c holds a line from c->off; returns its end ("\r\n"), or NULL at EOF. */
static char *line_end(struct conn *c)
{
	char *e;

	while (!(e = c->in.len > c->off ? memmem(c->in.ptr + c->off, c->in.len - c->off, "\r\n", 2)
					 : NULL))
		if (conn_fill(c) <= 0)
			return NULL;
	return e;
}

/* A chunked body (RFC 9112 §7.1) into r->body, trailers skipped. 0 or -1. */
static int read_chunked(struct conn *c, struct resp *r)
{
	for (;;) {
		char *e = line_end(c);
		size_t n;
		if (!e)
			return -1;
		n = (size_t)strtoull(c->in.ptr + c->off, NULL, 16);
		c->off = (size_t)(e - c->in.ptr) + 2;
		if (n == 0) {
			/* trailers, to the empty line */
			while ((e = line_end(c)) && e != c->in.ptr + c->off)
				c->off = (size_t)(e - c->in.ptr) + 2;
			if (!e)
				return -1;
			c->off += 2;
			return 0;
		}
		while (c->in.len - c->off < n + 2)
			if (conn_fill(c) <= 0)
				return -1;
		buf_add(&r->body, c->in.ptr + c->off, n);
		c->off += n + 2;
	}
}

int read_resp(struct conn *c, struct resp *r, int head)
{
	char *end, *line, *next;
	const char *cl;
	size_t hlen, want;

	memset(r, 0, sizeof(*r));
	buf_init(&r->body, 0);
	for (;;) {
		end = c->in.len > c->off ? strstr(c->in.ptr + c->off, "\r\n\r\n") : NULL;
		if (end)
			break;
		if (conn_fill(c) <= 0)
			return -1;
	}
	hlen = (size_t)(end - (c->in.ptr + c->off)) + 4;
	*end = '\0';
	line = c->in.ptr + c->off;
	if (sscanf(line, "HTTP/1.%*d %d", &r->status) != 1)
		return -1;
	for (line = strstr(line, "\r\n"); line; line = next) {
		char *colon;
		line += 2;
		next = strstr(line, "\r\n");
		if (next)
			*next = '\0';
		colon = strchr(line, ':');
		if (!colon || r->nh == 128)
			continue;
		r->names[r->nh] = xstrndup(line, (size_t)(colon - line));
		colon++;
		while (*colon == ' ')
			colon++;
		r->values[r->nh++] = xstrdup(colon);
	}
	c->off += hlen;
	cl = hdr(r, "Content-Length");
	if (head || r->status == 304 || r->status == 204 || r->status < 200) {
		want = 0;
	} else if (hdr(r, "Transfer-Encoding") &&
		   strcasecmp(hdr(r, "Transfer-Encoding"), "chunked") == 0) {
		return read_chunked(c, r);
	} else if (cl) {
		want = (size_t)strtoull(cl, NULL, 10);
	} else {
		/* until EOF */
		for (;;) {
			buf_add(&r->body, c->in.ptr + c->off, c->in.len - c->off);
			c->off = c->in.len;
			if (conn_fill(c) <= 0)
				return 0;
		}
	}
	while (c->in.len - c->off < want) {
		size_t have = c->in.len - c->off;
		buf_add(&r->body, c->in.ptr + c->off, have);
		want -= have;
		c->off = c->in.len;
		if (conn_fill(c) <= 0)
			return -1;
	}
	buf_add(&r->body, c->in.ptr + c->off, want);
	c->off += want;
	return 0;
}

/* raw on a fresh connection; head: the request is HEAD. */
static int exchange(int port, const char *raw, size_t len, int head, struct resp *r)
{
	struct conn c;
	int rc;

	memset(r, 0, sizeof(*r));
	if (conn_open(&c, port) < 0) {
		conn_close(&c);
		return -1;
	}
	rc = send_all(c.fd, raw, len);
	if (rc == 0)
		rc = read_resp(&c, r, head);
	conn_close(&c);
	return rc;
}

int conn_ask(struct conn *c, const char *req)
{
	struct resp r;
	int status = -1;

	memset(&r, 0, sizeof(r));
	if (send_all(c->fd, req, strlen(req)) == 0 && read_resp(c, &r, 0) == 0)
		status = r.status;
	resp_free(&r);
	return status;
}

int fetch(int port, const char *raw, struct resp *r)
{
	return exchange(port, raw, strlen(raw), strncmp(raw, "HEAD ", 5) == 0, r);
}

int fetch_request(int port, const char *method, const char *target, const char *headers,
		  const void *body, size_t len, struct resp *r)
{
	struct buf req = BUF_INIT;
	int rc;

	buf_addf(&req, "%s %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n%s", method, target,
		 headers ? headers : "");
	if (body)
		buf_addf(&req, "Content-Length: %zu\r\n", len);
	buf_adds(&req, "\r\n");
	if (body)
		buf_add(&req, body, len);
	rc = exchange(port, req.ptr, req.len, strcmp(method, "HEAD") == 0, r);
	buf_release(&req);
	return rc;
}

int fetch_page(int port, const char *target, struct buf *body)
{
	struct resp r;
	int status = -1;

	if (fetch_request(port, "GET", target, NULL, NULL, 0, &r) == 0) {
		status = r.status;
		if (body) {
			buf_reset(body);
			buf_add(body, r.body.ptr, r.body.len);
		}
	}
	resp_free(&r);
	return status;
}

/*
 * Positions jr on the value of a top-level field of a JSON object; 1 when
 * found, 0 when not (or the JSON is bad).
 */
static int find_field(struct json_reader *jr, const char *body, const char *field)
{
	struct buf key = BUF_INIT;
	int found = 0;

	json_init(jr, body, strlen(body));
	if (json_object(jr) == 0) {
		while (json_key(jr, &key) > 0) {
			if (strcmp(key.ptr, field) == 0) {
				found = 1;
				break;
			}
			if (json_skip(jr) < 0)
				break;
		}
	}
	buf_release(&key);
	return found;
}

long long body_u64(const char *body, const char *field)
{
	struct json_reader jr;
	uint64_t v = 0;

	if (find_field(&jr, body, field) && json_u64(&jr, &v) == 0)
		return (long long)v;
	return -1;
}

int body_str(const char *body, const char *field, struct buf *out)
{
	struct json_reader jr;

	return find_field(&jr, body, field) ? json_string(&jr, out) : -1;
}

int closed_by_server(struct conn *c)
{
	struct timeval tv = { 5, 0 };

	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return 0;
	return c->off == c->in.len && conn_fill(c) == 0;
}
