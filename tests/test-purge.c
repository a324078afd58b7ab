/*
 * test-purge.c: the purger's HTTP client (src/http/purge-client.c) on a
 * real socket.
 *
 * A listener on 127.0.0.1 stands in for the cache: a thread accepts each
 * connection, keeps the request's bytes, answers 200 and closes. A request
 * whose URL or headers would put a forged line on the wire (CR or LF in
 * the URL, a bare LF or a control character in a header, a line that is
 * no "Name: value") is refused before any connection: the listener counts
 * the connections it took, so "nothing was sent" is a count, not a wait.
 */
#include "http/purge.h"
#include "lib/test.h"
#include "util/buf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct cache {
	int fd;
	int port;
	pthread_t thread;
	pthread_mutex_t lock;
	int accepted;         /* connections taken */
	struct buf last;      /* the last request's bytes */
};

static void *serve(void *arg)
{
	struct cache *c = arg;
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

	for (;;) {
		struct buf req = BUF_INIT;
		char chunk[4096];
		int fd = accept(c->fd, NULL, NULL);

		if (fd < 0)
			return NULL; /* the listener was shut down */
		while (!strstr(req.ptr, "\r\n\r\n")) {
			ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
			if (n <= 0)
				break;
			buf_add(&req, chunk, (size_t)n);
		}
		/* kept before the answer: the client reads the count once it has one */
		pthread_mutex_lock(&c->lock);
		c->accepted++;
		buf_release(&c->last);
		c->last = req;
		pthread_mutex_unlock(&c->lock);
		if (send(fd, ok, sizeof(ok) - 1, MSG_NOSIGNAL) < 0)
			perror("send");
		close(fd);
	}
}

static void cache_start(struct cache *c)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);

	memset(c, 0, sizeof(*c));
	buf_init(&c->last, 0);
	pthread_mutex_init(&c->lock, NULL);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(c->fd, 16) == 0);
	CHECK(getsockname(c->fd, (struct sockaddr *)&sa, &len) == 0);
	c->port = ntohs(sa.sin_port);
	CHECK(pthread_create(&c->thread, NULL, serve, c) == 0);
}

static void cache_stop(struct cache *c)
{
	shutdown(c->fd, SHUT_RDWR);
	pthread_join(c->thread, NULL);
	close(c->fd);
	buf_release(&c->last);
	pthread_mutex_destroy(&c->lock);
}

static int accepted(struct cache *c)
{
	int n;

	pthread_mutex_lock(&c->lock);
	n = c->accepted;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/*
 * What the purge client writes is one request line and header lines it
 * can vouch for: a CR or LF from a URL or a header value never reaches
 * the wire (issue 31: quire.yml's base_url put one into PURGE requests).
 */
static void test_refuses_forged_lines(void)
{
	static const struct {
		const char *path;     /* after http://127.0.0.1:PORT */
		const char *headers;
	} refused[] = {
		{ "/x\r\nX-Evil: 1", NULL },
		{ "/x\nX-Evil: 1", NULL },
		{ "/a b", NULL },
		{ "/", "Host: a.example\r\nX-Evil: 1\n\r\n" },
		{ "/", "X-A: b\nX-Evil: 1\r\n" },
		{ "/", "X-A: b\rX-Evil: 1\r\n" },
		{ "/", "X-A: b\r\nno colon here\r\n" },
		{ "/", "X-A: b" },
		{ "/", "X-A: \x01\r\n" },
		{ "/", "\r\n" },
	};
	struct cache c;
	struct buf url = BUF_INIT;
	size_t i;

	cache_start(&c);
	/* a request it can write goes through, as written */
	buf_addf(&url, "http://127.0.0.1:%d/purge/here", c.port);
	CHECK_INT(purge_http("PURGE", url.ptr, "xkey-purge: a b\r\nHost: docs.example\r\n", NULL, 0,
			     5000), 200);
	CHECK_INT(accepted(&c), 1);
	pthread_mutex_lock(&c.lock);
	CHECK(strncmp(c.last.ptr, "PURGE /purge/here HTTP/1.1\r\n", 28) == 0);
	CHECK(strstr(c.last.ptr, "\r\nxkey-purge: a b\r\nHost: docs.example\r\n") != NULL);
	CHECK_INT(test_count(c.last.ptr, "\r\n"), 6); /* request line, 4 headers, the end */
	pthread_mutex_unlock(&c.lock);

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		buf_reset(&url);
		buf_addf(&url, "http://127.0.0.1:%d%s", c.port, refused[i].path);
		if (purge_http("PURGE", url.ptr, refused[i].headers, NULL, 0, 5000) != -1) {
			fprintf(stderr, "  sent: %d%s with %s\n", c.port, refused[i].path,
				refused[i].headers ? refused[i].headers : "no headers");
			CHECK(0);
		}
	}
	/* and one more that goes: the refused ones made no connection */
	buf_reset(&url);
	buf_addf(&url, "http://127.0.0.1:%d/", c.port);
	CHECK_INT(purge_http("BAN", url.ptr, "quire-ban: (a|b)\r\n", NULL, 0, 5000), 200);
	CHECK_INT(accepted(&c), 2);
	cache_stop(&c);
	buf_release(&url);
}

int main(void)
{
	RUN(test_refuses_forged_lines);
	return test_done();
}
