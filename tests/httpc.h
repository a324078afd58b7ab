/*
 * httpc.h: a raw HTTP/1.1 client for tests that talk to a real server over
 * a socket: send exactly the bytes given, read and parse responses (also
 * several pipelined ones from one connection).
 */
#ifndef QUIRE_HTTPC_H
#define QUIRE_HTTPC_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/xalloc.h"

/* ---- a raw HTTP/1.1 client ---- */

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

static inline double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int dial(int port, int rcvbuf)
{
	struct sockaddr_in sa;
	struct timeval tv = { 10, 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
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

static inline int conn_open(struct conn *c, int port)
{
	c->fd = dial(port, 0);
	buf_init(&c->in, 0);
	c->off = 0;
	return c->fd;
}

static inline void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	buf_release(&c->in);
}

static inline int send_all(int fd, const void *data, size_t len)
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

/* Reads more bytes into c->in; returns the count, 0 at EOF, -1 on error or timeout. */
static inline ssize_t fill(struct conn *c)
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

static inline void resp_free(struct resp *r)
{
	int i;

	for (i = 0; i < r->nh; i++) {
		free(r->names[i]);
		free(r->values[i]);
	}
	buf_release(&r->body);
	memset(r, 0, sizeof(*r));
}

static inline const char *hdr(const struct resp *r, const char *name)
{
	int i;

	for (i = 0; i < r->nh; i++)
		if (strcasecmp(r->names[i], name) == 0)
			return r->values[i];
	return NULL;
}

static inline int hdr_count(const struct resp *r, const char *name)
{
	int i, n = 0;

	for (i = 0; i < r->nh; i++)
		n += strcasecmp(r->names[i], name) == 0;
	return n;
}

/*
 * Reads one response from c. head: the request was HEAD (no body follows).
 * Returns 0, or -1 when the connection closed or failed before a whole
 * response arrived.
 */
static inline int read_resp(struct conn *c, struct resp *r, int head)
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
		if (fill(c) <= 0)
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
	} else if (cl) {
		want = (size_t)strtoull(cl, NULL, 10);
	} else {
		/* until EOF */
		for (;;) {
			buf_add(&r->body, c->in.ptr + c->off, c->in.len - c->off);
			c->off = c->in.len;
			if (fill(c) <= 0)
				return 0;
		}
	}
	while (c->in.len - c->off < want) {
		size_t have = c->in.len - c->off;
		buf_add(&r->body, c->in.ptr + c->off, have);
		want -= have;
		c->off = c->in.len;
		if (fill(c) <= 0)
			return -1;
	}
	buf_add(&r->body, c->in.ptr + c->off, want);
	c->off += want;
	return 0;
}

/* One request on a fresh connection; returns read_resp's result. */
static inline int fetch(int port, const char *raw, struct resp *r)
{
	struct conn c;
	int rc;

	memset(r, 0, sizeof(*r));
	if (conn_open(&c, port) < 0)
		return -1;
	rc = send_all(c.fd, raw, strlen(raw));
	if (rc == 0)
		rc = read_resp(&c, r, strncmp(raw, "HEAD ", 5) == 0);
	conn_close(&c);
	return rc;
}


#endif
