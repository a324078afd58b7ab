/*
 * purge-client.c: the purger's small blocking HTTP/1.1 client.
 *
 * One request per connection ("Connection: close"): purges are a few
 * requests per change, and a connection per request needs no pool, no
 * keep-alive state and no care for a cache that restarts between two.
 * Only the status line of the answer is read. Plain http only: a CDN's
 * https API is reached through a relay (docs/deploy.md).
 *
 * Rejected: evhttp's client (no PURGE or BAN method in libevent 2.1, and
 * an event loop for a thread that sends one request at a time).
 */
#include "http/purge.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Waits for fd to be ready for events until deadline: 0, or -1. */
static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = { fd, events, 0 };
	long long left = deadline - now_ms();

	if (left <= 0)
		return -1;
	return poll(&p, 1, (int)left) == 1 ? 0 : -1;
}

static int dial(const char *host, const char *port, long long deadline)
{
	struct addrinfo hints, *res = NULL, *ai;
	int fd = -1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -1;
	for (ai = res; ai; ai = ai->ai_next) {
		int err = 0;
		socklen_t len = sizeof(err);
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
		    (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 0 &&
		     getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

static int send_all(int fd, const char *p, size_t len, long long deadline)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (wait_fd(fd, POLLOUT, deadline) < 0)
				return -1;
			continue;
		}
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The status of the answer's status line, or -1. */
static int read_status(int fd, long long deadline)
{
	char line[64];
	size_t got = 0;
	int status = -1;

	while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
		ssize_t n = recv(fd, line + got, sizeof(line) - 1 - got, 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (wait_fd(fd, POLLIN, deadline) < 0)
				return -1;
			continue;
		}
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	line[got] = '\0';
	if (strncmp(line, "HTTP/1.", 7) == 0 && got > 12)
		status = atoi(line + 9);
	return status >= 100 && status < 600 ? status : -1;
}

/*
 * Whether the request can be written as given: a URL without spaces or
 * control characters, and headers that are "Name: value" lines, each
 * ended by CR LF, with no other CR, LF or control character.
 */
static int request_ok(const char *url, const char *headers)
{
	const char *p, *eol;

	for (p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return 0;
	for (p = headers ? headers : ""; *p; p = eol + 2) {
		eol = strstr(p, "\r\n");
		if (!eol || eol == p || !memchr(p, ':', (size_t)(eol - p)) ||
		    !config_header_value_ok(p, (size_t)(eol - p)))
			return 0;
	}
	return 1;
}

int purge_http(const char *method, const char *url, const char *headers, const char *body,
	       size_t body_len, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	struct buf req = BUF_INIT;
	const char *auth, *path, *colon;
	char *host = NULL, *port = NULL;
	int fd = -1, status = -1;

	if (strncmp(url, "http://", 7) != 0)
		goto out;
	if (!request_ok(url, headers)) {
		log_warn("purge: a %s request not sent: its URL or a header line holds a space or "
			 "a control character", method);
		goto out;
	}
	auth = url + 7;
	path = auth + strcspn(auth, "/");
	colon = memchr(auth, ':', (size_t)(path - auth));
	host = xstrndup(auth, (size_t)((colon ? colon : path) - auth));
	port = colon ? xstrndup(colon + 1, (size_t)(path - colon - 1)) : xstrdup("80");
	buf_addf(&req, "%s %s HTTP/1.1\r\n", method, *path ? path : "/");
	if (!headers || !strstr(headers, "Host:"))
		buf_addf(&req, "Host: %.*s\r\n", (int)(path - auth), auth);
	if (headers)
		buf_adds(&req, headers);
	buf_addf(&req, "Content-Length: %zu\r\nConnection: close\r\n\r\n", body_len);
	if (body_len)
		buf_add(&req, body, body_len);
	fd = dial(host, port, deadline);
	if (fd < 0 || send_all(fd, req.ptr, req.len, deadline) < 0)
		goto out;
	status = read_status(fd, deadline);
out:
	if (status < 0)
		log_debug("purge: %s %s: no answer", method, url);
	if (fd >= 0)
		close(fd);
	free(host);
	free(port);
	buf_release(&req);
	return status;
}
