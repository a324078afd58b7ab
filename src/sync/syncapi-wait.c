/*
 * syncapi-wait.c: GET /api/v1/wait, answered once a snapshot version is live.
 *
 * Long polls. A waiter list with one thread: it sleeps in loader_wait()
 * for the version after the live one, so it wakes at each publish (not on
 * a timer), answers the waiters that are satisfied, and wakes at least
 * every WAIT_TICK_MS to time out the others. A waiter already satisfied is
 * answered by the handler at once.
 */
#include "sync/syncapi.h"
#include "sync/syncapi-int.h"
#include "http/http.h"
#include "site/loader.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/xalloc.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#define WAIT_TICK_MS 50
#define WAIT_DEFAULT_MS 30000
#define WAIT_MAX_MS 300000

static void version_body(struct buf *b, uint64_t v)
{
	buf_addf(b, "{\"version\":%" PRIu64 "}\n", v);
}

void *syncapi_waiter_main(void *arg)
{
	struct syncapi *api = arg;

	prctl(PR_SET_NAME, "quire-wait", 0, 0, 0);
	pthread_mutex_lock(&api->wlock);
	while (!api->wstop) {
		struct waiter **pp, *w;
		uint64_t live;
		int64_t now, sleep_ms = WAIT_TICK_MS;

		if (!api->waiters) {
			pthread_cond_wait(&api->wcond, &api->wlock);
			continue;
		}
		live = loader_version(api->loader);
		now = (int64_t)clock_ms();
		for (pp = &api->waiters; (w = *pp);) {
			struct buf b = BUF_INIT;
			if (w->version <= live || w->deadline_ms <= now) {
				*pp = w->next;
				version_body(&b, live);
				http_deferred_reply_buf(w->d, w->version <= live ? 200 : 408, JSON_TYPE,
							&b);
				free(w);
				continue;
			}
			if (w->deadline_ms - now < sleep_ms)
				sleep_ms = w->deadline_ms - now;
			pp = &w->next;
		}
		if (!api->waiters)
			continue;
		pthread_mutex_unlock(&api->wlock);
		/* wakes at the next publish, or after sleep_ms to time out the others */
		(void)loader_wait(api->loader, live + 1, (int)sleep_ms);
		pthread_mutex_lock(&api->wlock);
	}
	while (api->waiters) {
		struct waiter *w = api->waiters;
		api->waiters = w->next;
		syncapi_dreply_error(w->d, 503, "the server is stopping", NULL);
		free(w);
	}
	pthread_mutex_unlock(&api->wlock);
	return NULL;
}

/* The value of name=... in a query string, as a number; -1 when absent or not a number. */
long long syncapi_query_num(const char *q, const char *name)
{
	size_t n = strlen(name);

	while (q && *q) {
		if (strncmp(q, name, n) == 0 && q[n] == '=') {
			char *end;
			long long v;
			if (q[n + 1] < '0' || q[n + 1] > '9')
				return -2;
			errno = 0;
			v = strtoll(q + n + 1, &end, 10);
			if (errno || (*end && *end != '&'))
				return -2;
			return v;
		}
		q = strchr(q, '&');
		if (q)
			q++;
	}
	return -1;
}

void syncapi_handle_wait(struct syncapi *api, struct http_request *req, const char *query)
{
	long long want = syncapi_query_num(query, "version"), timeout = syncapi_query_num(query, "timeout");
	uint64_t live = loader_version(api->loader);
	struct waiter *w;
	struct buf b = BUF_INIT;

	if (want < 0 || timeout < -1) {
		syncapi_reply_error(req, 400, "wait takes version=N and optionally timeout=MS",
				    NULL);
		return;
	}
	if (timeout == -1)
		timeout = WAIT_DEFAULT_MS;
	if (timeout > WAIT_MAX_MS)
		timeout = WAIT_MAX_MS;
	if ((uint64_t)want <= live || timeout == 0) {
		version_body(&b, live);
		http_reply_header(req, "Cache-Control", "no-store");
		http_reply_buf(req, (uint64_t)want <= live ? 200 : 408, JSON_TYPE, &b);
		return;
	}
	w = xcalloc(1, sizeof(*w));
	w->version = (uint64_t)want;
	w->deadline_ms = (int64_t)clock_ms() + timeout;
	w->d = http_request_park(req);
	pthread_mutex_lock(&api->wlock);
	if (api->wstop) {
		pthread_mutex_unlock(&api->wlock);
		syncapi_dreply_error(w->d, 503, "the server is stopping", NULL);
		free(w);
		return;
	}
	w->next = api->waiters;
	api->waiters = w;
	pthread_cond_signal(&api->wcond);
	pthread_mutex_unlock(&api->wlock);
}
