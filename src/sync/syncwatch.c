/*
 * syncwatch.c: `quire sync --watch`.
 *
 * After the first pass (synccli.c), the file watcher (vault/watch.h)
 * reports the paths that changed in VAULT, in batches of about 20 ms.
 * Each batch is compared with what the server is known to hold (the
 * manifest of the last whole pass, brought up to date by every answer
 * since) and sent at once:
 *	- a file whose bytes differ: PUT with If-Match: the server's hash
 *	  (If-None-Match: * for a new file), so that a change made on the
 *	  server meanwhile is a conflict (412), reported and not overwritten;
 *	- a file or folder gone: DELETE of each file the server has there
 *	  that was last seen with the same bytes on both sides (a file only
 *	  the server has, added by another client, is left alone), with
 *	  If-Match as well;
 *	- a folder created or moved in: every file below it, as above.
 * A file the server refused (a conflict, a path it does not take) is not
 * sent again until it changes locally. A file changed on the server while
 * it was away is kept there (this side's older copy is not sent), and a
 * change to it here is a conflict until this side has the server's bytes.
 *
 * The server away (a connection refused, a 5xx, 429): the batch is kept,
 * and after a pause that doubles from 100 ms to 5 s a whole pass is made
 * again (local hashes through the cache, the manifest, the plan), which
 * also catches what changed on either side meanwhile; "" from the watcher
 * (events lost) does the same. One line is printed per file sent,
 * deleted or in conflict, and one when the server goes away and comes
 * back.
 *
 * Threads: the watcher calls on_batch() on its thread, which only adds
 * the paths to a set under a lock; everything else runs here, on the
 * thread of the command, with the client's event loop.
 */
#include "sync/synccli-int.h"
#include "sync/hashcache.h"
#include "sync/syncapi.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/map.h"
#include "util/xalloc.h"
#include "vault/vault.h"
#include "vault/watch.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000

/* What the watcher reported and this thread has not taken yet. */
struct inbox {
	pthread_mutex_t lock;
	pthread_cond_t ready;
	struct map paths;  /* path as on disk -> the same string (owned) */
	int all;           /* "": look at everything */
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

/* The strings a batch's operations point to, freed after the batch. */
struct batch {
	char **strs;
	size_t n, alloc;
};

static const char *keep(struct batch *b, const char *s)
{
	ALLOC_GROW(b->strs, b->n + 1, b->alloc);
	return b->strs[b->n++] = xstrdup(s);
}

static void batch_release(struct batch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		free(b->strs[i]);
	free(b->strs);
	memset(b, 0, sizeof(*b));
}

/*
 * What the server held when this side last knew it (path -> hash, both
 * owned), for the pass after an absence: a file changed there since is
 * the server's to keep.
 */
struct base {
	struct map files;
};

/* A file whose upload was refused (a conflict, a bad path): not sent again with these bytes. */
struct refused {
	char *path;             /* NFC; the key */
	char sha[SHA256_HEX_SIZE];
};

/* The state of the watch: what the server holds and what was refused. */
struct watch_state {
	struct run *r;
	struct map refused;     /* NFC path -> struct refused */
	struct map stale;       /* NFC paths (owned) the server changed while away: this side's
				   copy is older, and a change to it here is a conflict */
	struct batch batch;
	struct base base;       /* while the server is away, from when it went */
	int have_base;
};

/* Remembers that path was refused with the local bytes sha: not sent again with them. */
static void refuse(struct watch_state *w, const char *path, const char *sha)
{
	struct refused *no = map_gets(&w->refused, path);

	if (!no) {
		no = xcalloc(1, sizeof(*no));
		no->path = xstrdup(path);
		map_put(&w->refused, no->path, strlen(no->path), no);
	}
	memcpy(no->sha, sha, SHA256_HEX_SIZE);
}

/* A local file (disk: as on disk, vault-relative) to send if its bytes are not the server's. */
static void plan_file(struct watch_state *w, const char *disk)
{
	struct run *r = w->r;
	struct buf nfc = BUF_INIT;
	struct stat st;
	char sha[SHA256_HEX_SIZE];
	const char *why;
	struct refused *refused;
	struct remote *rf;
	struct op *op;

	if (syncapi_check_path(disk, strlen(disk), &nfc, &why) < 0) {
		printf("skipped: %s: %s\n", disk, why);
		buf_release(&nfc);
		return;
	}
	if (hash_cache_file(r->hw.cache, r->hw.dirfd, disk, nfc.ptr, sha, &st) < 0) {
		buf_release(&nfc); /* gone since it was reported: its deletion comes next */
		return;
	}
	rf = map_gets(&r->remote, nfc.ptr);
	refused = map_gets(&w->refused, nfc.ptr);
	if ((rf && strcmp(rf->sha, sha) == 0) || (refused && strcmp(refused->sha, sha) == 0)) {
		char *was;
		if (rf && strcmp(rf->sha, sha) == 0) {
			rf->synced = 1;
			if ((was = map_remove(&w->stale, nfc.ptr, nfc.len)))
				free(was); /* this side has the server's bytes now */
		}
		buf_release(&nfc);
		return;
	}
	if (map_gets(&w->stale, nfc.ptr)) {
		printf("conflict: %s: changed here, and on the server while it was away; not "
		       "overwritten\n", nfc.ptr);
		refuse(w, nfc.ptr, sha);
		buf_release(&nfc);
		return;
	}
	op = synccli_add_op(&r->c);
	op->kind = OP_PUT;
	op->path = keep(&w->batch, nfc.ptr);
	op->disk = keep(&w->batch, disk);
	op->size = st.st_size;
	memcpy(op->sha, sha, SHA256_HEX_SIZE);
	if (rf)
		memcpy(op->remote, rf->sha, SHA256_HEX_SIZE);
	buf_release(&nfc);
}

/* Deletions for the server's files at or below prefix (NFC) that are gone locally. */
static void plan_gone(struct watch_state *w, const char *prefix)
{
	struct run *r = w->r;
	size_t i = 0, len = strlen(prefix), klen;
	const char *key;
	void *v;

	while (map_next(&r->remote, &i, &key, &klen, &v)) {
		struct remote *rf = v;
		struct stat st;
		struct op *op;
		if (!rf->synced || klen < len || memcmp(key, prefix, len) != 0 ||
		    (klen > len && key[len] != '/'))
			continue;
		/* the NFC path as the disk path: a file that is there under it is not gone */
		if (vault_stat(r->vault, NULL, rf->path, &st) == VAULT_FILE)
			continue;
		op = synccli_add_op(&r->c);
		op->kind = OP_DELETE;
		op->path = keep(&w->batch, rf->path);
		memcpy(op->remote, rf->sha, SHA256_HEX_SIZE);
	}
}

/* The operations for one path the watcher reported (as on disk). */
static void plan_path(struct watch_state *w, const char *disk)
{
	struct run *r = w->r;
	struct vault_scan scan = VAULT_SCAN_INIT;
	struct diag_list diags;
	struct buf nfc = BUF_INIT;
	const char *why;
	struct stat st;
	size_t k;

	switch (vault_stat(r->vault, NULL, disk, &st)) {
	case VAULT_FILE:
		plan_file(w, disk);
		return;
	case VAULT_FOLDER:
		diag_list_init(&diags);
		if (vault_scan_under(r->vault, disk, NULL, &scan, &diags) == 0)
			for (k = 0; k < scan.n; k++)
				plan_file(w, scan.files[k].disk);
		vault_scan_release(&scan);
		diag_list_release(&diags);
		break;
	case VAULT_MISSING:
		break;
	}
	/* what went from here (a folder: from below it) */
	if (syncapi_check_path(disk, strlen(disk), &nfc, &why) == 0)
		plan_gone(w, nfc.ptr);
	buf_release(&nfc);
}

static int transient(int status)
{
	return status == 0 || status == 429 || status >= 500;
}

/*
 * Takes in the answers of the batch just run: what the server now holds,
 * the refusals; with say, one line for each file sent or deleted. Returns
 * 1 when the server was away (some operation could not be answered).
 */
static int settle(struct watch_state *w, int say)
{
	struct run *r = w->r;
	struct client *c = &r->c;
	int away = 0;
	size_t k;

	for (k = 0; k < c->nops; k++) {
		struct op *op = &c->ops[k];
		struct remote *rf = map_gets(&r->remote, op->path);
		struct refused *no = map_gets(&w->refused, op->path);
		if (transient(op->status)) {
			away = 1;
			continue;
		}
		if (op->status < 0 || op->status >= 400) {
			/* printed by the request; not sent again until it changes here */
			if (op->kind == OP_PUT)
				refuse(w, op->path, op->sha);
			continue;
		}
		if (no) {
			map_remove(&w->refused, no->path, strlen(no->path));
			free(no->path);
			free(no);
		}
		if (op->kind == OP_PUT) {
			if (!rf) {
				rf = xcalloc(1, sizeof(*rf));
				rf->path = xstrdup(op->path);
				map_put(&r->remote, rf->path, strlen(rf->path), rf);
			}
			memcpy(rf->sha, op->stored[0] ? op->stored : op->sha, SHA256_HEX_SIZE);
			rf->synced = strcmp(rf->sha, op->sha) == 0;
			if (say)
				printf("uploaded %s\n", op->path);
		} else {
			if (rf) {
				map_remove(&r->remote, rf->path, strlen(rf->path));
				free(rf->path);
				free(rf);
			}
			if (say)
				printf("deleted %s\n", op->path);
		}
	}
	fflush(stdout);
	return away;
}

static void base_take(struct base *b, const struct map *remote)
{
	size_t i = 0;
	void *v;

	b->files = (struct map)MAP_INIT;
	while (map_next(remote, &i, NULL, NULL, &v)) {
		const struct remote *rf = v;
		if (rf->synced) {
			char *dup = xmalloc(strlen(rf->path) + 1 + SHA256_HEX_SIZE);
			strcpy(dup, rf->path);
			memcpy(dup + strlen(rf->path) + 1, rf->sha, SHA256_HEX_SIZE);
			map_put(&b->files, dup, strlen(dup), dup);
		}
	}
}

static void base_release(struct base *b)
{
	free_paths(&b->files);
}

/*
 * keep_remote for a pass: a file the server changed since the base is not
 * uploaded: kept as the server has it when it did not change here too,
 * else a conflict (printed).
 */
static int keep_changed(void *ctx, const char *path, const char *local, const char *remote)
{
	struct watch_state *w = ctx;
	struct base *b = &w->base;
	const struct refused *no = map_gets(&w->refused, path);
	const char *entry = map_gets(&b->files, path), *sha;

	if (no && strcmp(no->sha, local) == 0)
		return 1; /* refused with these bytes already */
	if (!entry)
		return 0;
	sha = entry + strlen(entry) + 1;
	if (strcmp(sha, remote) == 0)
		return 0; /* the server's is the one known: the change is this side's */
	if (!map_gets(&w->stale, path)) {
		char *dup = xstrdup(path);
		map_put(&w->stale, dup, strlen(dup), dup);
	}
	if (strcmp(sha, local) == 0) {
		printf("changed on the server: %s (kept; this side had not changed it)\n", path);
	} else {
		refuse(w, path, local); /* left unsent: the exit status says so */
		printf("conflict: %s: changed on both sides while the server was away; not "
		       "overwritten\n", path);
	}
	return 1;
}

static void reset_counts(struct client *c)
{
	c->nops = c->next = c->done = 0;
	c->uploaded = c->deleted = c->conflicts = c->failed = 0;
	c->bytes_total = c->bytes_done = 0;
}

int synccli_watch(struct run *r, int again)
{
	struct inbox in;
	struct watch_state w;
	struct watch *watcher;
	struct sigaction sa;
	int backoff = 0, away = again, ret;

	memset(&w, 0, sizeof(w));
	w.r = r;
	w.refused = (struct map)MAP_INIT;
	w.stale = (struct map)MAP_INIT;
	memset(&in, 0, sizeof(in));
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
		return 1;
	}
	if (!again)
		away = settle(&w, 0); /* the first pass, reported already */
	printf("watching %s: changes are sent as they are saved (Ctrl-C stops)\n", r->vault);
	fflush(stdout);
	if (away)
		printf("server away: trying again in %d ms\n", backoff = BACKOFF_FIRST_MS);
	while (!stopping) {
		struct map paths;
		int all;
		size_t i = 0;
		void *v;

		take(&in, away ? backoff : -1, &paths, &all);
		if (stopping) {
			free_paths(&paths);
			break;
		}
		if (away || all) {
			/* a whole pass: the server was away or events were lost */
			int failed;
			reset_counts(&r->c);
			if (!w.have_base) {
				base_take(&w.base, &r->remote);
				w.have_base = 1;
			}
			r->keep_remote = keep_changed;
			r->keep_ctx = &w;
			failed = synccli_pass(r) < 0 || settle(&w, 1);
			r->keep_remote = NULL;
			if (!failed) {
				base_release(&w.base);
				w.have_base = 0;
			}
			if (failed) {
				away = 1;
			} else {
				if (backoff)
					printf("server back: in step again\n");
				away = 0;
				backoff = 0;
			}
			free_paths(&paths); /* the pass looked at everything */
		} else {
			reset_counts(&r->c);
			while (map_next(&paths, &i, NULL, NULL, &v))
				plan_path(&w, v);
			free_paths(&paths);
			if (r->c.nops)
				synccli_run(&r->c);
			away = settle(&w, 1);
			batch_release(&w.batch);
			if (away && !w.have_base) {
				base_take(&w.base, &r->remote);
				w.have_base = 1;
			}
		}
		if (away) {
			if (!backoff)
				backoff = BACKOFF_FIRST_MS;
			else if ((backoff *= 2) > BACKOFF_MAX_MS)
				backoff = BACKOFF_MAX_MS;
			printf("server away: trying again in %d ms\n", backoff);
		}
		fflush(stdout);
	}
	watch_free(watcher);
	/* 1 when a file is left unsent: a conflict or a refusal not resolved since */
	ret = w.refused.len ? 1 : 0;
	batch_release(&w.batch);
	if (w.have_base)
		base_release(&w.base);
	{
		size_t i = 0;
		void *v;
		while (map_next(&w.refused, &i, NULL, NULL, &v)) {
			struct refused *no = v;
			free(no->path);
			free(no);
		}
		map_release(&w.refused);
	}
	free_paths(&w.stale);
	free_paths(&in.paths);
	pthread_mutex_destroy(&in.lock);
	pthread_cond_destroy(&in.ready);
	printf("stopped watching %s%s\n", r->vault,
	       ret ? "; some files were not sent (conflicts or refusals above)" : "");
	return ret;
}
