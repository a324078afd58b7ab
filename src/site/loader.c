/*
 * loader.c: a queue, a thread, and the publish step.
 *
 * The queue is a set of flags and paths under one mutex with a condition
 * variable; the thread sleeps on it, takes the whole queue when woken,
 * and builds one snapshot for everything it took.
 *
 * Each notify queues its origin beside its paths (where the change came
 * from, the client, when): once the snapshot that holds it is live, the
 * loader writes one "change.live" line for it (its paths, the version,
 * the time from its request or the watcher's event to the publish) and
 * adds that time to the histogram of its source. A reload writes one
 * "config.reload" line, ok or invalid (the last valid settings kept).
 * The loader thread alone writes the histograms; /metrics reads them.
 */
#define _GNU_SOURCE /* SCHED_IDLE */
#include "site/loader.h"
#include "search/search.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/metrics.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct loader {
	char *path;
	struct site_options opt;
	struct snapshot_slot *slot;
	struct site *site;          /* owned by the loader thread once started */
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t wake;        /* work queued, or stop */
	pthread_cond_t published;   /* a new version is live */
	int stop;
	int reload;                 /* a full reload is queued */
	char **queue;               /* changed paths waiting for the next build */
	size_t nqueue, aqueue;
	int building;               /* the thread has taken the queue and is building */
	uint64_t version;           /* live version, under lock */
	struct snapshot *last;      /* the last snapshot published (a reference) */
	struct search *search;      /* the full-text index, when opt.search */
	int filling;                /* the index is being filled between changes */
	int words_filled;           /* ... and every note is in its word index */
	atomic_int search_ready;    /* ... and in its substring index: filled (loader_search_ready()) */
	double fill_start, fill_cpu_start; /* ms, monotonic and of the loader thread's CPU */
	int search_fresh;
	char *search_path;
	dev_t search_dev;           /* the index file the writer has open */
	ino_t search_ino;
	size_t retired_held;        /* replaced snapshots a reader still held at the last reap */
	struct site_progress progress; /* of the first load (loader_progress()) */
	atomic_int loaded;          /* the first load has published */
	struct listener {           /* loader_on_publish() */
		void (*fn)(void *ctx, const struct snapshot *was, const struct snapshot *now);
		void *ctx;
	} listeners[LOADER_MAX_LISTENERS];
	int nlisteners;
	double gz_since;            /* ms, monotonic: since pages wait for their gzip bytes, or 0 */
	int gz_waiting;             /* the live snapshot has pages waiting for them, under lock */
	atomic_size_t max_note_size; /* the site's quire.yml's, for the sync API */
	struct queued_origin {      /* where queue[first, first + n) came from, under lock */
		struct change_origin o;
		size_t first, n;
	} *origins;
	size_t norigins, aorigins;
	struct metrics_histogram live[CHANGE_SOURCES]; /* change to live, by source (loader thread) */
	_Atomic uint64_t npublished, loads_ok, loads_failed, config_errors, search_rebuilds;
	atomic_int config_invalid;  /* the last valid settings stand in for quire.yml */
};

/*
 * Changes are published before they are compressed (site_gzip_pending()):
 * the pages of the changes queued meanwhile are composed first, but no
 * page waits longer than this for its gzip bytes.
 */
#define GZIP_WAIT_MS 1000

/* How soon a replaced snapshot that a reader held is looked at again. */
#define REAP_MS 20

/* How often an idle loader checks that the search index file is still there and whole. */
#define SEARCH_CHECK_MS 2000

static void publish(struct loader *l, struct snapshot *snap)
{
	uint64_t v = snap->version;
	struct snapshot *was = l->last;

	l->last = snapshot_ref(snap);
	snapshot_publish(l->slot, snap);
	atomic_fetch_add_explicit(&l->npublished, 1, memory_order_relaxed);
	/* after the swap: a cache that refetches at once gets the new bytes */
	for (int i = 0; i < l->nlisteners; i++)
		l->listeners[i].fn(l->listeners[i].ctx, was, l->last);
	snapshot_unref(was);
	l->retired_held = snapshot_slot_reap(l->slot);
	pthread_mutex_lock(&l->lock);
	l->version = v;
	/* in the same breath as the version: loader_notify() predicts from both */
	l->building = 0;
	l->gz_waiting = l->site && l->site->ngz_pending > 0;
	pthread_cond_broadcast(&l->published);
	pthread_mutex_unlock(&l->lock);
}

static void log_diags(const struct site *s)
{
	size_t i;

	struct log_event e;

	for (i = 0; i < s->diags.n; i++) {
		const struct diag *d = &s->diags.items[i];
		if (d->level != DIAG_ERROR)
			continue;
		log_event_init(&e, LOG_WARN, "vault.error");
		log_event_str(&e, "path", d->path);
		log_event_int(&e, "line", d->line);
		log_event_emit(&e, "%s:%d: %s", d->path, d->line, d->msg);
	}
	if (site_base_url_note(s)) {
		log_event_init(&e, LOG_INFO, "config.note");
		log_event_emit(&e, "quire.yml: %s", site_base_url_note(s));
	}
	if (!s->diags.n)
		return;
	log_event_init(&e, LOG_INFO, "vault.diagnostics");
	log_event_uint(&e, "errors", s->diags.nerrors);
	log_event_uint(&e, "warnings", s->diags.nwarnings);
	log_event_emit(&e, "%zu errors, %zu warnings in the vault (quire check lists them)",
		       s->diags.nerrors, s->diags.nwarnings);
}

/*
 * The version of a run's first snapshot: the wall clock in microseconds.
 * Versions then count up by one a snapshot, so a run's versions stay
 * below the clock (no run publishes a million snapshots a second) and the
 * next run starts above every version the last one handed out: a client
 * waiting for a version acknowledged before a restart is answered at once
 * after it, without a file to keep. A clock set back between two runs by
 * more than the first run lasted would break that; nothing else does.
 */
static uint64_t first_version(void)
{
	struct timespec ts;
	uint64_t v;

	clock_gettime(CLOCK_REALTIME, &ts);
	v = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	return v ? v : 1;
}

/* Records which file the index writer has open (see search_intact()). */
static void note_search_file(struct loader *l)
{
	struct stat st;

	if (stat(l->search_path, &st) == 0) {
		l->search_dev = st.st_dev;
		l->search_ino = st.st_ino;
	}
}

/*
 * Whether the index file is still the one the writer has open and still a
 * SQLite database. Deleted (a cleanup, a mistaken rm) or overwritten in
 * place, the index would otherwise be written and read on a dead inode or
 * fail on every query until a restart. Damage behind a whole header is
 * what a connection met instead (search_take_damage()).
 */
static int search_intact(struct loader *l)
{
	static const char magic[16] = "SQLite format 3";
	char head[16];
	struct stat st;
	int fd, ok;

	if (stat(l->search_path, &st) < 0 || st.st_dev != l->search_dev ||
	    st.st_ino != l->search_ino)
		return 0;
	if (st.st_size == 0)
		return 1; /* created, not written yet */
	fd = open(l->search_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ok = read(fd, head, sizeof(head)) == (ssize_t)sizeof(head) && memcmp(head, magic, 16) == 0;
	close(fd);
	return ok;
}

static uint64_t full_reload(struct loader *l, const char *trigger);

/*
 * Replaces a lost or damaged index with a new one, filled by a full
 * reload: the notes' texts were released once the index had them.
 * Readers find the new file on their next query (searchapi.c).
 */
static void rebuild_search(struct loader *l)
{
	static const char *const ext[] = { "", "-wal", "-shm", "-journal" };
	struct buf p = BUF_INIT;
	size_t i;
	struct log_event e;

	atomic_fetch_add_explicit(&l->search_rebuilds, 1, memory_order_relaxed);
	log_event_init(&e, LOG_WARN, "search.rebuild");
	log_event_str(&e, "path", l->search_path);
	log_event_emit(&e, "%s was removed or damaged; building a new index", l->search_path);
	l->site->search = NULL;
	l->site->search_tx = 0;
	search_free(l->search);
	for (i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		buf_reset(&p);
		buf_addf(&p, "%s%s", l->search_path, ext[i]);
		if (unlink(p.ptr) < 0 && errno != ENOENT)
			log_warn("search: cannot remove %s: %s", p.ptr, strerror(errno));
	}
	buf_release(&p);
	l->search = search_open(l->search_path, &l->search_fresh);
	if (!l->search) {
		log_error("search is off: cannot open %s", l->search_path);
		return;
	}
	note_search_file(l);
	full_reload(l, "search");
}

struct loader *loader_create(const char *path, const struct site_options *opt,
			     struct snapshot_slot *slot)
{
	struct loader *l = xcalloc(1, sizeof(*l));

	l->path = xstrdup(path);
	if (opt)
		l->opt = *opt;
	l->opt.base_url = opt && opt->base_url ? xstrdup(opt->base_url) : NULL;
	l->slot = slot;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->wake, NULL);
	pthread_cond_init(&l->published, NULL);
	/* the first load counts here (loader_progress()), whatever the caller asked */
	if (opt && opt->progress)
		l->progress.scanned = opt->progress->scanned, l->progress.ctx = opt->progress->ctx;
	l->opt.progress = &l->progress;
	return l;
}

struct loader *loader_new(const char *path, const struct site_options *opt,
			  struct snapshot_slot *slot)
{
	struct loader *l = loader_create(path, opt, slot);

	if (loader_load(l) < 0) {
		loader_free(l);
		return NULL;
	}
	return l;
}

int loader_progress(struct loader *l, size_t *notes, size_t *of)
{
	site_progress_read(&l->progress, notes, of);
	return !atomic_load(&l->loaded);
}

int loader_load(struct loader *l)
{
	struct snapshot *snap;

	l->site = site_load(l->path, &l->opt);
	l->opt.progress = NULL; /* a reload is not the first load */
	if (!l->site) {
		atomic_fetch_add_explicit(&l->loads_failed, 1, memory_order_relaxed);
		return -1;
	}
	atomic_fetch_add_explicit(&l->loads_ok, 1, memory_order_relaxed);
	atomic_store(&l->max_note_size, l->site->cfg.max_note_size);
	if (l->opt.search) {
		/* opened here, before any reader: a rebuild replaces the file */
		struct buf p = BUF_INIT;
		mkdir(l->site->data_dir, 0755);
		buf_addf(&p, "%s/search.db", l->site->data_dir);
		l->search_path = buf_detach(&p, NULL);
		l->search = search_open(l->search_path, &l->search_fresh);
		if (!l->search)
			log_warn("search is off: cannot open %s", l->search_path);
		else
			note_search_file(l);
	}
	log_diags(l->site);
	snap = site_snapshot(l->site, NULL);
	snap->version = first_version();
	publish(l, snap);
	l->site->gzip_later = 1; /* the load compressed everything; changes are served first */
	atomic_store(&l->loaded, 1);
	return 0;
}

void loader_on_publish(struct loader *l,
		       void (*fn)(void *ctx, const struct snapshot *was, const struct snapshot *now),
		       void *ctx)
{
	if (l->nlisteners == LOADER_MAX_LISTENERS) {
		log_error("loader: more than %d listeners to publishes", LOADER_MAX_LISTENERS);
		return;
	}
	l->listeners[l->nlisteners].fn = fn;
	l->listeners[l->nlisteners++].ctx = ctx;
}

const struct site *loader_site(const struct loader *l)
{
	return l->site;
}

size_t loader_max_note_size(struct loader *l)
{
	return atomic_load(&l->max_note_size);
}

const char *loader_search_path(const struct loader *l)
{
	return l->search ? l->search_path : NULL;
}

/*
 * The vault and quire.yml again. An invalid quire.yml is not applied: the
 * settings of the last valid one load the vault (and the snapshot says
 * why, for /healthz), so a reload never publishes more than they allow.
 * One "config.reload" line says which. Returns the version published, 0
 * when the vault could not be read.
 */
static uint64_t full_reload(struct loader *l, const char *trigger)
{
	struct site *s;
	struct snapshot *snap;
	struct log_event e;
	int was_invalid = l->site->config_error != NULL;

	l->opt.config_fallback = l->site->config_text;
	l->opt.config_fallback_len = l->site->config_len;
	s = site_load(l->path, &l->opt);
	l->opt.config_fallback = NULL;
	if (!s) {
		atomic_fetch_add_explicit(&l->loads_failed, 1, memory_order_relaxed);
		log_event_init(&e, LOG_ERROR, "reload.failed");
		log_event_str(&e, "trigger", trigger);
		log_event_emit(&e, "reload of %s failed; the last good snapshot keeps serving",
			       l->path);
		return 0;
	}
	atomic_fetch_add_explicit(&l->loads_ok, 1, memory_order_relaxed);
	atomic_store(&l->config_invalid, s->config_error != NULL);
	log_diags(s);
	snap = site_snapshot(s, NULL);
	snap->version = l->version + 1;
	site_free(l->site);
	l->site = s;
	atomic_store(&l->max_note_size, s->cfg.max_note_size);
	s->gzip_later = 1;
	l->gz_since = 0;
	if (l->search) {
		site_attach_search(s, l->search, 0);
		l->filling = 0;
	}
	log_event_init(&e, s->config_error ? LOG_ERROR : LOG_INFO, "config.reload");
	log_event_str(&e, "result", s->config_error ? "invalid" : "ok");
	log_event_str(&e, "error", s->config_error);
	log_event_str(&e, "trigger", trigger);
	log_event_uint(&e, "notes", s->nnotes);
	log_event_uint(&e, "version", snap->version);
	log_event_ms(&e, "duration_ms", s->load_ms);
	if (s->config_error) {
		atomic_fetch_add_explicit(&l->config_errors, 1, memory_order_relaxed);
		log_event_emit(&e, "%s/%s; the last valid settings are kept", l->path,
			       s->config_error);
	} else {
		log_event_emit(&e, "%sreloaded %zu notes in %.0f ms, snapshot %llu",
			       was_invalid ? "quire.yml is valid again; its settings apply: " : "",
			       s->nnotes, s->load_ms, (unsigned long long)snap->version);
	}
	publish(l, snap);
	return snap->version;
}

/*
 * One snapshot for every path taken from the queue at once; returns its
 * version, and in *same whether it holds the same pages as the last one
 * (a change that made nothing new live: the watcher seeing a write the
 * sync API made live already, an unpublished note edited).
 */
static uint64_t apply(struct loader *l, char **paths, size_t n, int *same)
{
	struct snapshot *snap;
	double t0 = clock_ms(), t1, t2, t3;

	site_apply(l->site, (const char *const *)paths, n);
	t1 = clock_ms();
	snap = site_snapshot(l->site, l->last);
	snap->version = l->version + 1;
	*same = l->last && snapshot_changed_pages(l->last, snap) == 0;
	t2 = clock_ms();
	publish(l, snap);
	t3 = clock_ms();
	if (l->site->ngz_pending && !l->gz_since)
		l->gz_since = t3;
	site_search_flush(l->site);
	log_debug("applied %zu changed paths (%s%s): %zu notes parsed, %zu rendered, %zu composed; "
		  "%.1f ms to apply (parse %.1f, render %.1f, compose %.1f, derived %.1f, hosts %.1f), "
		  "%.1f to snapshot, %.1f to publish, %.1f to index; snapshot %llu",
		  n, n ? paths[0] : "", n > 1 ? ", ..." : "", l->site->napplied,
		  l->site->nrendered, l->site->ncomposed, t1 - t0, l->site->phase_ms[0],
		  l->site->phase_ms[1], l->site->phase_ms[2], l->site->derived_ms,
		  l->site->hosts_ms, t2 - t1, t3 - t2, clock_ms() - t3,
		  (unsigned long long)snap->version);
	return snap->version;
}

/*
 * The line and the histogram of each change that version (0: none, the
 * build failed) made live, or did not. A change of the whole vault (the
 * watcher lost events) has the path "".
 */
static void report(struct loader *l, const struct queued_origin *o, size_t no, char **paths,
		   uint64_t version, int reload, int same)
{
	double now = clock_ms();
	size_t i;

	for (i = 0; i < no; i++) {
		const char *const *p = (const char *const *)paths + o[i].first;
		enum change_source src = o[i].o.source;
		double ms = now - o[i].o.since_ms;
		const char *first = o[i].n && p[0][0] ? p[0] : "the vault";
		struct log_event e;

		if (ms < 0)
			ms = 0;
		/* the watcher's echo of a write already live, and tests' own changes: debug */
		log_event_init(&e, !version			      ? LOG_ERROR
				   : src == CHANGE_OTHER || (same && src == CHANGE_WATCHER) ? LOG_DEBUG
										     : LOG_INFO,
			       version ? "change.live" : "change.failed");
		log_event_str(&e, "source", loader_source_name(src));
		log_event_str(&e, "client", o[i].o.client[0] ? o[i].o.client : NULL);
		log_event_list(&e, "paths", p, o[i].n, "npaths");
		if (reload)
			log_event_str(&e, "build", "reload");
		if (!version) {
			log_event_emit(&e, "%s%s not live: the reload failed", first,
				       o[i].n > 1 ? " and more" : "");
			continue;
		}
		metrics_observe_owned(&l->live[src], (uint64_t)(ms * 1000));
		log_event_uint(&e, "version", version);
		log_event_ms(&e, "duration_ms", ms);
		log_event_str(&e, "pages", same ? "unchanged" : "changed");
		if (o[i].n > 1)
			log_event_emit(&e, "%s and %zu more live in %.1f ms", first, o[i].n - 1, ms);
		else
			log_event_emit(&e, "%s live in %.1f ms", first, ms);
	}
}

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * The gzip bytes of the pages the last changes put uncompressed, in a
 * snapshot of the same version: the same content, smaller.
 */
static void gzip_step(struct loader *l)
{
	struct snapshot *snap;
	double t0 = clock_ms();
	size_t pending = l->site->ngz_pending, n = site_gzip_pending(l->site);

	l->gz_since = 0;
	if (!n) {
		pthread_mutex_lock(&l->lock);
		l->gz_waiting = 0;
		pthread_cond_broadcast(&l->published);
		pthread_mutex_unlock(&l->lock);
		return;
	}
	snap = site_snapshot(l->site, l->last);
	snap->version = l->version;
	publish(l, snap);
	log_debug("compressed %zu of %zu pages put since the last compression in %.1f ms",
		  n, pending, clock_ms() - t0);
}

/* Notes, or rows of the substring index, put per fill step: 20 to 200 ms of work. */
#define FILL_BATCH 250

/*
 * The first snapshot is live before the index is filled: the index catches
 * up here, FILL_BATCH notes at a time, between changes, so an edit made
 * while it fills waits for one batch, not for the whole vault. Every note
 * goes into the word index first (what most queries need; a fresh index
 * is merged into one segment then), and the substring index follows
 * (search_defer_substrings()).
 */
static void fill_step(struct loader *l)
{
	int rc = site_search_fill(l->site, FILL_BATCH);
	struct search_counts c;

	search_counts(l->search, &c);
	if (rc >= 0 && !l->words_filled && !l->site->search_fill) {
		l->words_filled = 1;
		if (l->search_fresh)
			search_optimize(l->search);
		log_info("search: words of every note indexed in %.0f ms (%.0f ms of CPU): "
			 "%lld rows written, %lld unchanged, %lld removed", clock_ms() - l->fill_start,
			 cpu_ms() - l->fill_cpu_start, c.written, c.unchanged, c.removed);
	}
	if (rc == 0)
		return;
	l->filling = 0;
	if (rc > 0) {
		struct log_event e;
		double ms = clock_ms() - l->fill_start, cpu = cpu_ms() - l->fill_cpu_start;

		search_settle(l->search);
		atomic_store(&l->search_ready, 1);
		log_event_init(&e, LOG_INFO, "search.ready");
		log_event_ms(&e, "duration_ms", ms);
		log_event_ms(&e, "cpu_ms", cpu);
		log_event_int(&e, "written", c.written);
		log_event_int(&e, "unchanged", c.unchanged);
		log_event_int(&e, "removed", c.removed);
		log_event_emit(&e, "search index ready in %.0f ms (%.0f ms of CPU): %lld rows written, "
			       "%lld unchanged, %lld removed", ms, cpu, c.written, c.unchanged,
			       c.removed);
	}
}

/*
 * Readers never wait for writers, not even for the CPU. The loader thread
 * (and the parallel loops it starts, which inherit this) runs SCHED_IDLE:
 * the one policy that a waking serving thread preempts at once. At nice 10
 * (what this replaced) the loader kept the core for the rest of its slice
 * when a request arrived, up to the next scheduler tick (4 ms at HZ=250):
 * after 1% of the serving thread's wakeups during syncs, 0.5 ms or more
 * (docs/performance.md has the traces). The cost: the loader runs only on
 * time no serving thread wants, so on cores saturated by requests an edit
 * waits for a lull (nice 10 had a tenth of the core). Rejected: nice 19
 * (the same slice protection as nice 10); real-time serving threads (a
 * saturated server would starve everything else on its cores).
 */
static void background(void)
{
	struct sched_param none = { .sched_priority = 0 };

	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &none) == 0)
		return;
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19) < 0)
		log_debug("loader: cannot lower its priority: %s", strerror(errno));
}

/*
 * One snapshot for everything queued, called and returning with the lock
 * held: the paths applied, or the vault loaded again whole when a reload
 * is queued (SIGHUP, a lost search index) or quire.yml is among them
 * (settings changed: everything may look different). Then each change's
 * line.
 */
static void build_queued(struct loader *l)
{
	char **paths = l->queue;
	struct queued_origin *origins = l->origins;
	size_t n = l->nqueue, no = l->norigins, i;
	const char *trigger = l->reload ? "reload" : NULL;
	uint64_t v;
	int same = 0;

	for (i = 0; i < n; i++)
		if (strcmp(paths[i], "quire.yml") == 0)
			trigger = "quire.yml";
	l->reload = 0;
	l->queue = NULL;
	l->nqueue = l->aqueue = 0;
	l->origins = NULL;
	l->norigins = l->aorigins = 0;
	l->building = 1;
	pthread_mutex_unlock(&l->lock);
	/* a full reload reads every path anyway */
	v = trigger ? full_reload(l, trigger) : apply(l, paths, n, &same);
	report(l, origins, no, paths, v, trigger != NULL, same);
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(origins);
	pthread_mutex_lock(&l->lock);
	l->building = 0;
	pthread_cond_broadcast(&l->published); /* loader_wait_settled(), after a failed reload */
}

static void *run(void *arg)
{
	struct loader *l = arg;
	double checked = clock_ms();

	prctl(PR_SET_NAME, "quire-loader", 0, 0, 0); /* for top -H and perf */
	background();
	if (l->search && site_search_start(l->site, l->search) == 0) {
		l->filling = 1;
		l->fill_start = clock_ms();
		l->fill_cpu_start = cpu_ms();
	}
	pthread_mutex_lock(&l->lock);
	for (;;) {
		int gz = l->site->ngz_pending > 0;

		while (!l->stop && !l->reload && !l->nqueue && !l->filling && !gz) {
			if (l->search && clock_ms() - checked >= SEARCH_CHECK_MS) {
				int intact;
				pthread_mutex_unlock(&l->lock);
				intact = search_intact(l) &&
					 !search_take_damage(l->search_dev, l->search_ino);
				if (!intact)
					rebuild_search(l);
				pthread_mutex_lock(&l->lock);
				checked = clock_ms();
				if (!intact)
					continue;
			}
			if (!l->retired_held) {
				struct timespec t = clock_deadline(SEARCH_CHECK_MS);
				if (l->search)
					pthread_cond_timedwait(&l->wake, &l->lock, &t);
				else
					pthread_cond_wait(&l->wake, &l->lock);
				continue;
			}
			/* a reader still held the snapshot we replaced: free it here, soon */
			struct timespec t = clock_deadline(REAP_MS);
			pthread_cond_timedwait(&l->wake, &l->lock, &t);
			pthread_mutex_unlock(&l->lock);
			l->retired_held = snapshot_slot_reap(l->slot);
			pthread_mutex_lock(&l->lock);
		}
		if (l->stop)
			break;
		if (gz && ((!l->reload && !l->nqueue) || clock_ms() - l->gz_since > GZIP_WAIT_MS)) {
			pthread_mutex_unlock(&l->lock);
			gzip_step(l);
			pthread_mutex_lock(&l->lock);
			continue;
		}
		if (!l->reload && !l->nqueue) {
			pthread_mutex_unlock(&l->lock);
			fill_step(l);
			pthread_mutex_lock(&l->lock);
			continue;
		}
		build_queued(l);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

const char *loader_source_name(enum change_source source)
{
	static const char *const names[CHANGE_SOURCES] = { "watcher", "sync", "webdav", "other" };

	return source < CHANGE_SOURCES ? names[source] : "other";
}

uint64_t loader_notify_from(struct loader *l, const char *const *paths, size_t n,
			    const struct change_origin *origin)
{
	struct queued_origin *q;
	uint64_t v;
	size_t i;

	pthread_mutex_lock(&l->lock);
	ALLOC_GROW(l->origins, l->norigins + 1, l->aorigins);
	q = &l->origins[l->norigins++];
	q->o = *origin;
	q->o.client[sizeof(q->o.client) - 1] = '\0';
	q->first = l->nqueue;
	q->n = n;
	ALLOC_GROW(l->queue, l->nqueue + n, l->aqueue);
	for (i = 0; i < n; i++)
		l->queue[l->nqueue++] = xstrdup(paths[i]);
	/* the next build takes this; one under way has its queue already */
	v = l->version + 1 + (uint64_t)l->building;
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->lock);
	return v;
}

uint64_t loader_notify(struct loader *l, const char *const *paths, size_t n)
{
	struct change_origin o = { CHANGE_OTHER, "", clock_ms() };

	return loader_notify_from(l, paths, n, &o);
}

int loader_start(struct loader *l)
{
	if (pthread_create(&l->thread, NULL, run, l) != 0)
		return log_error("cannot start the loader thread");
	l->started = 1;
	return 0;
}

void loader_reload(struct loader *l)
{
	pthread_mutex_lock(&l->lock);
	l->reload = 1;
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->lock);
}

uint64_t loader_version(struct loader *l)
{
	uint64_t v;

	pthread_mutex_lock(&l->lock);
	v = l->version;
	pthread_mutex_unlock(&l->lock);
	return v;
}

int loader_wait(struct loader *l, uint64_t version, int timeout_ms)
{
	struct timespec deadline = clock_deadline(timeout_ms);
	int ret = 0;

	pthread_mutex_lock(&l->lock);
	while (l->version < version && ret == 0)
		if (pthread_cond_timedwait(&l->published, &l->lock, &deadline) == ETIMEDOUT)
			ret = l->version >= version ? 0 : -1;
	pthread_mutex_unlock(&l->lock);
	return ret;
}

int loader_search_ready(struct loader *l)
{
	return atomic_load(&l->search_ready);
}

int loader_wait_settled(struct loader *l, uint64_t version, int timeout_ms)
{
	struct timespec deadline = clock_deadline(timeout_ms);
	int ret = 0;

	pthread_mutex_lock(&l->lock);
	while ((l->version < version || l->nqueue || l->building || l->reload || l->gz_waiting) &&
	       ret == 0)
		if (pthread_cond_timedwait(&l->published, &l->lock, &deadline) == ETIMEDOUT)
			ret = -1;
	pthread_mutex_unlock(&l->lock);
	return ret;
}

void loader_metrics(void *ctx, struct buf *b)
{
	struct loader *l = ctx;
	char labels[32];
	size_t i;

	metrics_family(b, "quire_change_to_live_seconds", "histogram",
		       "Time from a change's request (or the watcher's event) to the publish of the "
		       "snapshot that holds it, by source.");
	for (i = 0; i < CHANGE_SOURCES; i++) {
		struct metrics_totals t;
		memset(&t, 0, sizeof(t));
		metrics_read(&l->live[i], &t);
		snprintf(labels, sizeof(labels), "source=\"%s\"", loader_source_name(i));
		metrics_write_histogram(b, "quire_change_to_live_seconds", labels, &t);
	}
	buf_addf(b, "# HELP quire_snapshots_published_total Snapshots published (changes, reloads, "
		    "and their gzip bytes).\n"
		    "# TYPE quire_snapshots_published_total counter\n"
		    "quire_snapshots_published_total %llu\n"
		    "# HELP quire_loads_total Loads of the whole vault (the first and each reload), by "
		    "result.\n"
		    "# TYPE quire_loads_total counter\n"
		    "quire_loads_total{result=\"ok\"} %llu\n"
		    "quire_loads_total{result=\"failed\"} %llu\n"
		    "# HELP quire_config_errors_total Reloads that found quire.yml invalid (the last "
		    "valid settings kept).\n"
		    "# TYPE quire_config_errors_total counter\n"
		    "quire_config_errors_total %llu\n"
		    "# HELP quire_config_invalid Whether quire.yml is invalid now and the last valid "
		    "settings serve (1).\n"
		    "# TYPE quire_config_invalid gauge\n"
		    "quire_config_invalid %d\n",
		 (unsigned long long)atomic_load(&l->npublished),
		 (unsigned long long)atomic_load(&l->loads_ok),
		 (unsigned long long)atomic_load(&l->loads_failed),
		 (unsigned long long)atomic_load(&l->config_errors), atomic_load(&l->config_invalid));
	if (l->search_path)
		buf_addf(b, "# HELP quire_search_ready Whether the search index holds every note "
			    "(words and substrings).\n"
			    "# TYPE quire_search_ready gauge\n"
			    "quire_search_ready %d\n"
			    "# HELP quire_search_rebuilds_total Search indexes found removed or damaged "
			    "and built again.\n"
			    "# TYPE quire_search_rebuilds_total counter\n"
			    "quire_search_rebuilds_total %llu\n",
			 atomic_load(&l->search_ready),
			 (unsigned long long)atomic_load(&l->search_rebuilds));
}

void loader_free(struct loader *l)
{
	if (!l)
		return;
	if (l->started) {
		pthread_mutex_lock(&l->lock);
		l->stop = 1;
		pthread_cond_signal(&l->wake);
		pthread_mutex_unlock(&l->lock);
		pthread_join(l->thread, NULL);
	}
	site_free(l->site);
	search_free(l->search);
	free(l->search_path);
	while (l->nqueue > 0)
		free(l->queue[--l->nqueue]);
	free(l->queue);
	free(l->origins);
	snapshot_unref(l->last);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->wake);
	pthread_cond_destroy(&l->published);
	free((char *)l->opt.base_url);
	free(l->path);
	free(l);
}
