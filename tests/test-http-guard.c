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

static int start(struct test_server *s, int max_connections)
{
	struct http_options opt = { 0 };

	opt.slot = &slot;
	opt.threads = 1; /* the loop that accepts is the one whose idle connections give way */
	opt.max_connections = max_connections;
	if (test_server_new(s, &opt) < 0)
		return -1;
	CHECK(http_server_add_handler(s->srv, "/hold", hold, NULL) == 0);
	CHECK(http_server_add_handler(s->srv, "/ok", ok, NULL) == 0);
	test_server_run(s);
	return 0;
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

/* Sends req on c and reads the answer: its status, or -1 when the connection is gone. */
static int ask(struct conn *c, const char *req)
{
	struct resp r;
	int status = -1;

	if (send_all(c->fd, req, strlen(req)) == 0 && read_resp(c, &r, 0) == 0)
		status = r.status;
	resp_free(&r);
	return status;
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

static void test_evict_idle(void)
{
	static const char get_ok[] = "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n";
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
			CHECK_INT(ask(&idle[i], get_ok), 200);
	}
	/* every slot is taken: a new client is served, from another address */
	CHECK(open_from(&fresh, s.port, "127.0.0.1", NULL) == 0);
	CHECK_INT(ask(&fresh, get_ok), 200);
	/* the oldest idle one made room; the next one is still served */
	CHECK(closed_by_server(&idle[0]));
	CHECK_INT(ask(&idle[1], get_ok), 200);
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
	CHECK_INT(ask(&extra, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), 200);
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

int main(void)
{
	log_set_level(getenv("QUIRE_TEST_VERBOSE") ? LOG_DEBUG : LOG_ERROR);
	snapshot_slot_init(&slot);
	snapshot_publish(&slot, snapshot_new(1));
	RUN(test_client_key);
	RUN(test_evict_idle);
	RUN(test_all_busy_refused);
	snapshot_slot_release(&slot);
	return test_done();
}
