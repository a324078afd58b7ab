/*
 * test-http-guard.c: the front's connection limits (src/http/guard.c) on
 * real sockets, the front on a thread of the test.
 *
 *	- At max_connections a new client gets in: the oldest idle connection
 *	  (answered and waiting, or silent since it connected) is closed for
 *	  it, never one whose request is in progress; with none idle, the new
 *	  one is refused. The idle ones come from 80 loopback addresses
 *	  (127.0.0.2 to 127.0.0.81, all loopback on Linux), each far under its
 *	  per-address share: what used to lock every new client out.
 *	- IPv6 clients count per /64 against the per-address share.
 *
 * A request "in progress" is one held by a handler (deferred) that tells
 * the test it has it, so no step waits on a time.
 */
#include "lib/httpc.h"
#include "lib/server.h"
#include "lib/test.h"
#include "http/http.h"
#include "site/snapshot.h"
#include "util/buf.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define HELD_MAX 8

static struct snapshot_slot slot;
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t held_cond = PTHREAD_COND_INITIALIZER;
static struct http_deferred *held[HELD_MAX];
static int nheld;

/* /hold: deferred, answered by the test (release_held()); the test waits for it. */
static void hold(struct http_request *req, void *ctx)
{
	struct http_deferred *d = http_request_defer(req);

	pthread_mutex_lock(&held_lock);
	CHECK(nheld < HELD_MAX);
	if (nheld < HELD_MAX)
		held[nheld++] = d;
	pthread_cond_broadcast(&held_cond);
	pthread_mutex_unlock(&held_lock);
}

/* /ok: answered at once. */
static void ok(struct http_request *req, void *ctx)
{
	http_reply(req, 200, "text/plain", "ok\n", 3);
}

/* Waits until n requests are held (the server has them in progress). */
static void wait_held(int n)
{
	pthread_mutex_lock(&held_lock);
	while (nheld < n)
		pthread_cond_wait(&held_cond, &held_lock);
	pthread_mutex_unlock(&held_lock);
}

static void release_held(void)
{
	int i;

	pthread_mutex_lock(&held_lock);
	for (i = 0; i < nheld; i++)
		http_deferred_reply(held[i], 200, "text/plain", "held\n", 5);
	nheld = 0;
	pthread_mutex_unlock(&held_lock);
}

/* Starts the server from opt (its slot and threads set here), with /hold and /ok. */
static int start_with(struct test_server *s, struct http_options *opt)
{
	opt->slot = &slot;
	opt->threads = 1; /* the loop that accepts is the one whose idle connections give way */
	if (test_server_new(s, opt) < 0)
		return -1;
	CHECK(http_server_add_handler(s->srv, "/hold", hold, NULL) == 0);
	CHECK(http_server_add_handler(s->srv, "/ok", ok, NULL) == 0);
	test_server_run(s);
	return 0;
}

static int start(struct test_server *s, int max_connections)
{
	struct http_options opt = { 0 };

	opt.max_connections = max_connections;
	return start_with(s, &opt);
}

/* Opens c from source (NULL: the kernel's choice) and sends req; 0 or -1. */
static int open_from(struct conn *c, int port, const char *source, const char *req)
{
	int rc;

	httpc_source = source;
	rc = conn_open(c, port);
	httpc_source = NULL;
	if (rc < 0)
		return -1;
	return req ? send_all(c->fd, req, strlen(req)) : 0;
}

static long long metric_of(int port, const char *name)
{
	struct resp r;
	long long v = -1;
	const char *p;

	if (fetch(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &r) == 0 && r.body.ptr) {
		for (p = r.body.ptr; (p = strstr(p, name)); p++)
			if ((p == r.body.ptr || p[-1] == '\n') && p[strlen(name)] == ' ') {
				v = atoll(p + strlen(name) + 1);
				break;
			}
	}
	resp_free(&r);
	return v;
}

#define CAP 80

static const char get_ok[] = "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n";

static void test_evict_idle(void)
{
	struct test_server s;
	struct conn busy, idle[CAP], fresh;
	struct resp r;
	char source[32];
	int i, nidle = CAP - 1;

	if (start(&s, CAP) < 0)
		return;
	/* the oldest connection has a request in progress: never closed for a newcomer */
	CHECK(open_from(&busy, s.port, "127.0.0.2", "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n") == 0);
	wait_held(1);
	/* 40 answered and waiting for their next request, 39 that never sent a byte */
	for (i = 0; i < nidle; i++) {
		snprintf(source, sizeof(source), "127.0.0.%d", 3 + i);
		CHECK(open_from(&idle[i], s.port, source, NULL) == 0);
		if (i < 40)
			CHECK_INT(conn_ask(&idle[i], get_ok), 200);
	}
	/* every slot is taken: a new client is served, from another address */
	CHECK(open_from(&fresh, s.port, "127.0.0.1", NULL) == 0);
	CHECK_INT(conn_ask(&fresh, get_ok), 200);
	/* the oldest idle one made room; the next one is still served */
	CHECK(closed_by_server(&idle[0]));
	CHECK_INT(conn_ask(&idle[1], get_ok), 200);
	/* the busy one was left alone: its answer comes */
	release_held();
	CHECK(read_resp(&busy, &r, 0) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);
	conn_close(&fresh);
	CHECK(metric_of(s.port, "quire_connections_evicted_total") >= 1);
	CHECK_INT(metric_of(s.port, "quire_connections_refused_total"), 0);
	conn_close(&busy);
	for (i = 0; i < nidle; i++)
		conn_close(&idle[i]);
	test_server_stop(&s);
}

/* With every connection busy, a newcomer is still refused: nothing to close for it. */
static void test_all_busy_refused(void)
{
	struct test_server s;
	struct conn busy[3], extra;
	struct resp r;
	int i;

	if (start(&s, 3) < 0)
		return;
	for (i = 0; i < 3; i++)
		CHECK(open_from(&busy[i], s.port, NULL, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n") == 0);
	wait_held(3);
	CHECK(open_from(&extra, s.port, NULL, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n") == 0);
	CHECK(conn_fill(&extra) <= 0); /* closed at once, unanswered */
	conn_close(&extra);
	release_held();
	for (i = 0; i < 3; i++) {
		CHECK(read_resp(&busy[i], &r, 0) == 0);
		CHECK_INT(r.status, 200);
		resp_free(&r);
	}
	/* idle now: the next newcomer gets in */
	CHECK(open_from(&extra, s.port, NULL, NULL) == 0);
	CHECK_INT(conn_ask(&extra, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), 200);
	conn_close(&extra);
	CHECK_INT(metric_of(s.port, "quire_connections_refused_total"), 1);
	for (i = 0; i < 3; i++)
		conn_close(&busy[i]);
	test_server_stop(&s);
}

/* The key an address counts under: IPv4 as is, IPv6 by its /64. */
static void test_client_key(void)
{
	static const struct {
		const char *addr, *key;
	} cases[] = {
		{ "2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64" },
		{ "2001:db8:1:2::1", "2001:db8:1:2::/64" },
		{ "2001:db8:1:3::1", "2001:db8:1:3::/64" },
		{ "::1", "::/64" },
		{ "::ffff:10.1.2.3", "10.1.2.3" },
		{ "10.1.2.3", "10.1.2.3" },
	};
	char key[64];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss;
		memset(&ss, 0, sizeof(ss));
		if (strchr(cases[i].addr, ':')) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			a->sin6_family = AF_INET6;
			CHECK(inet_pton(AF_INET6, cases[i].addr, &a->sin6_addr) == 1);
		} else {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			a->sin_family = AF_INET;
			CHECK(inet_pton(AF_INET, cases[i].addr, &a->sin_addr) == 1);
		}
		CHECK_INT(http_client_key((struct sockaddr *)&ss, key, sizeof(key)), 0);
		CHECK_STR(key, cases[i].key);
	}
}

/* ---- trusted proxies ---- */

/*
 * Opens n connections from source, then asks each for /ok while all are
 * open: how many were served. The connections stay open in c[].
 */
static int served_from(struct conn *c, int n, int port, const char *source)
{
	int i, served = 0;

	for (i = 0; i < n; i++)
		CHECK(open_from(&c[i], port, source, NULL) == 0);
	for (i = 0; i < n; i++)
		served += conn_ask(&c[i], get_ok) == 200;
	return served;
}

static void close_all(struct conn *c, int n)
{
	int i;

	for (i = 0; i < n; i++)
		conn_close(&c[i]);
}

/*
 * A trusted proxy (a reverse proxy opening connections for many clients)
 * is not held to the per-address share; every other address is, and its
 * connections over the share are closed at once.
 */
static void test_trusted_proxies(void)
{
	struct http_options opt = { 0 };
	struct test_server s;
	struct conn proxy[20], other[5];

	opt.max_per_address = 4;
	opt.trusted_proxies = "127.0.0.2";
	if (start_with(&s, &opt) < 0)
		return;
	CHECK_INT(served_from(proxy, 20, s.port, "127.0.0.2"), 20);
	CHECK_INT(served_from(other, 5, s.port, "127.0.0.3"), 4);
	CHECK_INT(metric_of(s.port, "quire_connections_refused_address_total"), 1);
	close_all(proxy, 20);
	close_all(other, 5);
	test_server_stop(&s);
}

/* A network trusts every address in it, and no other; a list takes commas and spaces. */
static void test_trusted_network(void)
{
	struct http_options opt = { 0 };
	struct test_server s;
	struct conn a[20], b[20], outside[5];

	opt.max_per_address = 4;
	opt.trusted_proxies = "10.0.0.0/8, 127.0.0.0/24";
	if (start_with(&s, &opt) < 0)
		return;
	CHECK_INT(served_from(a, 20, s.port, "127.0.0.2"), 20);
	CHECK_INT(served_from(b, 20, s.port, "127.0.0.3"), 20);
	CHECK_INT(served_from(outside, 5, s.port, "127.0.1.3"), 4);
	CHECK_INT(metric_of(s.port, "quire_connections_refused_address_total"), 1);
	close_all(a, 20);
	close_all(b, 20);
	close_all(outside, 5);
	test_server_stop(&s);
}

/* What http_server_new() says on stderr (the log) for opt, and whether it made a server. */
static int new_server_says(const struct http_options *opt, struct buf *said)
{
	char path[] = "/tmp/quire-guard-log-XXXXXX";
	int fd = mkstemp(path), saved = dup(2), made;
	struct http_server *srv;
	char b[512];
	ssize_t n;

	buf_reset(said);
	if (fd < 0 || saved < 0) {
		CHECK(0);
		return -1;
	}
	fflush(stderr);
	dup2(fd, 2);
	srv = http_server_new(opt);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	made = srv != NULL;
	http_server_free(srv);
	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, b, sizeof(b))) > 0)
		buf_add(said, b, (size_t)n);
	close(fd);
	unlink(path);
	return made;
}

/* A bad list stops the server from being made, with a line that names what is wrong. */
static void test_trusted_bad(void)
{
	static const struct {
		const char *list, *says;
	} cases[] = {
		{ "127.0.0.1/33", "trusted proxy '127.0.0.1/33': bad prefix length" },
		{ "nonsense", "trusted proxy 'nonsense' is not an address" },
		{ "127.0.0.2 10.0.0.0/", "trusted proxy '10.0.0.0/': bad prefix length" },
		{ "::1/129", "trusted proxy '::1/129': bad prefix length" },
		{ "10.0.0.0/8x", "trusted proxy '10.0.0.0/8x': bad prefix length" },
		{ "127.0.0.256", "trusted proxy '127.0.0.256' is not an address" },
	};
	struct http_options opt = { 0 };
	struct buf said = BUF_INIT;
	size_t i;

	opt.slot = &slot;
	opt.listen = "127.0.0.1:0";
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		opt.trusted_proxies = cases[i].list;
		CHECK_INT(new_server_says(&opt, &said), 0);
		if (!said.ptr || !strstr(said.ptr, cases[i].says))
			fprintf(stderr, "  for '%s' the log said: %s\n", cases[i].list,
				said.ptr ? said.ptr : "(nothing)");
		CHECK(said.ptr && strstr(said.ptr, cases[i].says));
	}
	/* the good ones make a server */
	opt.trusted_proxies = "127.0.0.1 ::1/128, 192.168.0.0/16 fd00::/8";
	CHECK_INT(new_server_says(&opt, &said), 1);
	buf_release(&said);
}

/* A connection to [::1]:port in c; the socket, or -1. */
static int conn_open6(struct conn *c, int port)
{
	struct sockaddr_in6 sa;
	struct timeval tv = { 30, 0 };

	buf_init(&c->in, 0);
	c->off = 0;
	c->fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memset(&sa, 0, sizeof(sa));
	sa.sin6_family = AF_INET6;
	sa.sin6_port = htons((uint16_t)port);
	sa.sin6_addr = in6addr_loopback;
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(c->fd);
		c->fd = -1;
	}
	return c->fd;
}

/* Of n connections from ::1 to a server with opt, all open at once: how many were served. */
static int served6(struct http_options *opt, int n)
{
	struct test_server s;
	struct conn c[8];
	int i, served = 0;

	opt->listen = "[::1]:0";
	if (start_with(&s, opt) < 0)
		return -1;
	for (i = 0; i < n; i++)
		CHECK(conn_open6(&c[i], s.port) >= 0);
	for (i = 0; i < n; i++)
		served += c[i].fd >= 0 && conn_ask(&c[i], get_ok) == 200;
	close_all(c, n);
	test_server_stop(&s);
	return served;
}

/*
 * IPv6 clients are held to the share (per /64: loopback has one address,
 * so the /64 itself is test_client_key's), and a trusted IPv6 proxy is not.
 */
static void test_ipv6_share(void)
{
	struct http_options opt = { 0 };
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (fd >= 0)
			close(fd);
		test_skip("needs IPv6 on loopback (::1)");
		return;
	}
	close(fd);
	opt.max_per_address = 2;
	CHECK_INT(served6(&opt, 3), 2);
	memset(&opt, 0, sizeof(opt));
	opt.max_per_address = 2;
	opt.trusted_proxies = "::1/128";
	CHECK_INT(served6(&opt, 6), 6);
	memset(&opt, 0, sizeof(opt));
	opt.max_per_address = 2;
	opt.trusted_proxies = "::2"; /* not ::1: the share holds */
	CHECK_INT(served6(&opt, 3), 2);
}

int main(void)
{
	log_set_level(getenv("QUIRE_TEST_VERBOSE") ? LOG_DEBUG : LOG_ERROR);
	snapshot_slot_init(&slot);
	snapshot_publish(&slot, snapshot_new(1));
	RUN(test_client_key);
	RUN(test_evict_idle);
	RUN(test_all_busy_refused);
	RUN(test_trusted_proxies);
	RUN(test_trusted_network);
	RUN(test_trusted_bad);
	RUN(test_ipv6_share);
	snapshot_slot_release(&slot);
	return test_done();
}
