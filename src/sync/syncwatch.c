/*
 * syncwatch.c: `quire sync --watch`.
 *
 * After the first pass (synccli.c), the command stays: the file watcher
 * (vault/watch.h) reports the paths that changed in VAULT, in batches of
 * about 20 ms, and a long poll of /api/v1/wait (half a second at a time,
 * cut short through a pipe when the watcher reports) tells when the
 * server published a version after the last one this side knows (another client's edit, a WebDAV write, a file changed on the
 * server's disk). Either starts a pass, the same three-way pass as a run
 * of the command (synccli_pass()): local edits go up, the server's come
 * down, edits on both sides are merged or kept side by side, and nothing
 * is overwritten that was not seen. A pass costs a stat of each local
 * file (the hash cache reads only what changed) and one manifest; the
 * pass that follows this side's own writes finds nothing to do. One line
 * is printed per file sent, taken, merged, deleted or in conflict.
 *
 * The server away (the manifest cannot be read) or files that failed: the
 * pass is made again after a pause that doubles from 100 ms to 5 s; one
 * line says so, and one when the server is back.
 *
 * Rejected: sending each saved file on its own with If-Match, as this
 * command did before the record of the last sync existed (a change made
 * on the server while this side was away was caught only between two
 * saves, and never came down).
 *
 * Threads: the watcher calls on_batch() on its thread, which only adds
 * the paths to a set under a lock; everything else runs here, on the
 * thread of the command, with the client's event loop.
 */
#include "sync/synccli-int.h"
#include "util/buf.h"
#include "util/map.h"
#include "util/xalloc.h"
#include "vault/watch.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000
#define POLL_MS 500

/* What the watcher reported and this thread has not taken yet. */
struct inbox {
	pthread_mutex_t lock;
	pthread_cond_t ready;
	struct map paths;  /* path as on disk -> the same string (owned) */
	int all;           /* "": look at everything */
	int wake[2];       /* a byte written to wake[1] ends the poll of the server */
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void on_batch(void *ctx, const char *const *paths, size_t n)
{
	struct inbox *in = ctx;
	size_t i;

	pthread_mutex_lock(&in->lock);
	for (i = 0; i < n; i++) {
		if (!paths[i][0]) {
			in->all = 1;
		} else if (!map_gets(&in->paths, paths[i])) {
			char *p = xstrdup(paths[i]);
			map_put(&in->paths, p, strlen(p), p);
		}
	}
	pthread_cond_signal(&in->ready);
	pthread_mutex_unlock(&in->lock);
	if (in->wake[1] >= 0 && write(in->wake[1], "", 1) < 0) {
		/* full: a wake is pending already */
	}
}

static void close_wake(struct run *r, struct inbox *in)
{
	synccli_wake_on(&r->c, -1);
	if (in->wake[0] >= 0)
		close(in->wake[0]);
	if (in->wake[1] >= 0)
		close(in->wake[1]);
	in->wake[0] = in->wake[1] = -1;
}

static void free_paths(struct map *m)
{
	size_t i = 0;
	void *v;

	while (map_next(m, &i, NULL, NULL, &v))
		free(v);
	map_release(m);
}

/* CLOCK_REALTIME (what pthread_cond_timedwait() counts in) in milliseconds. */
static int64_t clock_realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Waits until the watcher reported something, a signal came, or ms passed
 * (ms < 0: no limit), and takes what was reported into *paths and *all.
 */
static void take(struct inbox *in, int ms, struct map *paths, int *all)
{
	int64_t until = clock_realtime_ms() + (ms >= 0 ? ms : 0);

	pthread_mutex_lock(&in->lock);
	while (!stopping && !in->all && !in->paths.len) {
		/* signals do not wake a condition wait: look again every 100 ms */
		int64_t now = clock_realtime_ms(), wake = now + 100;
		struct timespec ts;
		if (ms >= 0 && now >= until)
			break;
		if (ms >= 0 && wake > until)
			wake = until;
		ts.tv_sec = (time_t)(wake / 1000);
		ts.tv_nsec = (long)(wake % 1000) * 1000000L;
		pthread_cond_timedwait(&in->ready, &in->lock, &ts);
	}
	*paths = in->paths;
	in->paths = (struct map)MAP_INIT;
	*all = in->all;
	in->all = 0;
	pthread_mutex_unlock(&in->lock);
}

/*
 * Whether the server published a version after version: 1 yes, 0 not
 * within POLL_MS (or a local change came first), -1 it cannot be asked.
 */
static int server_moved(struct run *r, uint64_t version)
{
	struct client *c = &r->c;
	struct buf target = BUF_INIT;
	int st;

	buf_addf(&target, "%s/api/v1/wait?version=%" PRIu64 "&timeout=%d", c->prefix, version + 1,
		 POLL_MS);
	c->woken = 0;
	st = synccli_poll(c, target.ptr, 65536);
	buf_release(&target);
	return st == 200 ? 1 : st == 408 || st == -2 ? 0 : -1;
}

/* The version this side knows the server at: its manifest's, or a later one it wrote. */
static uint64_t known_version(const struct run *r)
{
	return r->c.max_version > r->server_version ? r->c.max_version : r->server_version;
}

int synccli_watch(struct run *r, int again)
{
	struct inbox in;
	struct watch *watcher;
	struct sigaction sa;
	size_t conflicts = again ? 0 : r->n.conflicts, failed = 0;
	int backoff = 0, away = again;

	memset(&in, 0, sizeof(in));
	in.wake[0] = in.wake[1] = -1;
	if (pipe(in.wake) < 0 || fcntl(in.wake[0], F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(in.wake[1], F_SETFL, O_NONBLOCK) < 0 || synccli_wake_on(&r->c, in.wake[0]) < 0)
		fprintf(stderr, "quire sync: saves wait for the poll of the server (no pipe)\n");
	pthread_mutex_init(&in.lock, NULL);
	pthread_cond_init(&in.ready, NULL);
	in.paths = (struct map)MAP_INIT;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	r->c.progress = 0;
	if (!(watcher = watch_new(r->vault, on_batch, &in))) {
		fprintf(stderr, "quire sync: cannot watch %s\n", r->vault);
		close_wake(r, &in);
		return 1;
	}
	printf("watching %s: changes are synced as they are saved here or there (Ctrl-C stops)\n",
	       r->vault);
	if (away)
		printf("server away: trying again in %d ms\n", backoff = BACKOFF_FIRST_MS);
	fflush(stdout);
	while (!stopping) {
		struct map paths;
		int all, moved = 0;

		take(&in, away ? backoff : 0, &paths, &all);
		if (!away && !all && !paths.len && (moved = server_moved(r, known_version(r))) == 0) {
			free_paths(&paths);
			continue;
		}
		free_paths(&paths); /* the pass looks at everything */
		if (stopping)
			break;
		memset(&r->n, 0, sizeof(r->n));
		if (moved < 0 || synccli_pass(r) < 0) {
			away = 1;
		} else {
			conflicts += r->n.conflicts;
			failed = r->n.failed + r->n.skipped;
			away = failed > 0;
			if (!away && backoff)
				printf("server back: in step again\n");
			if (!away)
				backoff = 0;
		}
		if (away) {
			if (!backoff)
				backoff = BACKOFF_FIRST_MS;
			else if ((backoff *= 2) > BACKOFF_MAX_MS)
				backoff = BACKOFF_MAX_MS;
			printf("%s: trying again in %d ms\n",
			       failed ? "some files were not synced" : "server away", backoff);
			failed = 0;
		}
		fflush(stdout);
	}
	watch_free(watcher);
	close_wake(r, &in);
	free_paths(&in.paths);
	pthread_mutex_destroy(&in.lock);
	pthread_cond_destroy(&in.ready);
	printf("stopped watching %s%s\n", r->vault,
	       away ? "; the last pass did not finish (see above)"
		    : conflicts ? "; conflict copies were written (see above)" : "");
	return away ? 1 : conflicts ? 3 : 0;
}
