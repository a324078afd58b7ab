/*
 * server.h: quire's HTTP front on a thread of the test program, on
 * 127.0.0.1 and a port the kernel picks.
 *
 * Two levels:
 *
 *	- struct test_server: a bare http_server from the test's own options
 *	  (its own snapshot, its own handlers), for test-http;
 *	- struct site_server: a vault served as `quire serve` serves it: the
 *	  loader publishing into a snapshot slot, the front, and the search or
 *	  sync API when asked for.
 *
 *	struct site_server s;
 *	struct site_server_options o = { .threads = 2, .search_rate = 1e9, .search_burst = 1e9 };
 *	site_server_start(&s, vault, &o);
 *	... fetch(s.port, ...), snapshot_acquire(&s.slot), s.loader ...
 *	site_server_stop(&s);
 *
 * Failures to start are checks (test.h) that fail the calling test.
 */
#ifndef QUIRE_TEST_SERVER_H
#define QUIRE_TEST_SERVER_H

#include <pthread.h>
#include <stddef.h>

#include "http/http.h"
#include "site/snapshot.h"

struct loader;
struct live;
struct live_options;
struct searchapi;
struct site_options;
struct syncapi;
struct dav;
struct syncapi_options;

struct test_server {
	struct http_server *srv; /* NULL when it failed to start, or once stopped */
	pthread_t thread;
	int rc;                  /* http_server_run's result, once it returned */
	int port;
};

/*
 * Creates the server from opt (listen: 127.0.0.1:0 when not set), without
 * running it, so that handlers can be added. 0, or -1 (checked) when it
 * could not be made.
 */
int test_server_new(struct test_server *s, struct http_options *opt);

/* Runs the server made by test_server_new() on a thread of its own (checked). */
void test_server_run(struct test_server *s);

/* test_server_new() and test_server_run(): 0 or -1. */
int test_server_start(struct test_server *s, struct http_options *opt);

/*
 * Stops the server and waits for its thread; returns http_server_run's
 * result (0 after a clean stop), or -1 when the thread could not be
 * joined. Does not free it. 0 when it never started.
 */
int test_server_join(struct test_server *s);

/* test_server_join(), then frees the server; returns what the join did. */
int test_server_stop(struct test_server *s);

struct site_server_options {
	const struct site_options *site;    /* the loader's; NULL: the defaults */
	int threads;                        /* the front's event loops */
	const char *url_prefix;             /* as in http_options */
	size_t max_body_size;               /* as in http_options */
	double search_rate, search_burst;   /* with search_rate > 0: the search API */
	const struct syncapi_options *sync; /* with it: the sync API */
	const char *listen;                 /* as in http_options (127.0.0.1:0 when NULL) */
	const struct live_options *live;    /* with it: live pages at /_quire/live */
	int max_connections;                /* as in http_options */
};

struct site_server {
	struct snapshot_slot slot;
	struct loader *loader;
	struct searchapi *search;
	struct syncapi *sync;
	struct dav *dav;         /* with the sync API: WebDAV at /dav/ */
	struct live *live;       /* with o->live */
	struct test_server http;
	int port;
};

/*
 * Loads vault, makes the front and the APIs asked for, starts the loader
 * and runs the front on a thread. Every step is checked; s is safe to
 * stop whatever failed.
 */
void site_server_start(struct site_server *s, const char *vault,
		       const struct site_server_options *o);

/* Stops and frees everything of s; returns http_server_run's result as test_server_join(). */
int site_server_stop(struct site_server *s);

#endif
