/*
 * server.c: quire's front on a thread (see server.h). The site server
 * starts things in the order of `quire serve` (loader, front, APIs
 * registered before the loader starts and the front runs) and stops them
 * in the order http.h and syncapi.h ask for: the front's loops first, the
 * sync API before the front is freed, the loader last.
 */
#include "lib/server.h"

#include <string.h>

#include "http/searchapi.h"
#include "sync/dav.h"
#include "lib/test.h"
#include "http/live.h"
#include "site/loader.h"
#include "sync/syncapi.h"

static void *run_main(void *arg)
{
	struct test_server *s = arg;

	s->rc = http_server_run(s->srv);
	return NULL;
}

int test_server_new(struct test_server *s, struct http_options *opt)
{
	memset(s, 0, sizeof(*s));
	s->rc = -99;
	if (!opt->listen)
		opt->listen = "127.0.0.1:0";
	s->srv = http_server_new(opt);
	CHECK(s->srv != NULL);
	if (!s->srv)
		return -1;
	s->port = http_server_port(s->srv);
	return 0;
}

void test_server_run(struct test_server *s)
{
	CHECK(pthread_create(&s->thread, NULL, run_main, s) == 0);
}

int test_server_start(struct test_server *s, struct http_options *opt)
{
	if (test_server_new(s, opt) < 0)
		return -1;
	test_server_run(s);
	return 0;
}

int test_server_join(struct test_server *s)
{
	if (!s->srv)
		return 0;
	http_server_stop(s->srv);
	return pthread_join(s->thread, NULL) == 0 ? s->rc : -1;
}

int test_server_stop(struct test_server *s)
{
	int rc = test_server_join(s);

	http_server_free(s->srv);
	s->srv = NULL;
	return rc;
}

void site_server_start(struct site_server *s, const char *vault,
		       const struct site_server_options *o)
{
	struct http_options ho;

	memset(s, 0, sizeof(*s));
	snapshot_slot_init(&s->slot);
	s->loader = loader_new(vault, o->site, &s->slot);
	CHECK(s->loader != NULL);
	memset(&ho, 0, sizeof(ho));
	ho.threads = o->threads;
	ho.slot = &s->slot;
	ho.url_prefix = o->url_prefix;
	ho.max_body_size = o->max_body_size;
	ho.listen = o->listen;
	ho.max_connections = o->max_connections;
	if (test_server_new(&s->http, &ho) < 0 || !s->loader)
		return;
	s->port = s->http.port;
	if (o->search_rate > 0) {
		s->search = searchapi_new(loader_search_path(s->loader),
					  &loader_site(s->loader)->layout, o->search_rate,
					  o->search_burst);
		CHECK(s->search && searchapi_register(s->search, s->http.srv) == 0);
	}
	if (o->sync) {
		s->sync = syncapi_new(o->sync, s->loader);
		CHECK(s->sync != NULL);
		CHECK(s->sync && syncapi_register(s->sync, s->http.srv) == 0);
		if (s->sync) {
			s->dav = dav_new(s->sync, o->url_prefix);
			CHECK(s->dav && dav_register(s->dav, s->http.srv) == 0);
		}
	} else {
		CHECK(dav_register_off(s->http.srv) == 0);
	}
	if (o->live) {
		s->live = live_http_new(o->live);
		CHECK(s->live && live_http_register(s->live, s->http.srv) == 0);
		if (s->live)
			loader_on_publish(s->loader, live_on_publish, s->live);
	}
	CHECK(loader_start(s->loader) == 0);
	test_server_run(&s->http);
}

int site_server_stop(struct site_server *s)
{
	int rc = test_server_join(&s->http);

	syncapi_free(s->sync);
	dav_free(s->dav);
	http_server_free(s->http.srv);
	searchapi_free(s->search);
	loader_free(s->loader);
	live_free(s->live); /* after the loader, which publishes to it */
	snapshot_slot_release(&s->slot);
	memset(s, 0, sizeof(*s));
	return rc;
}
