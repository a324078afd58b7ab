/*
 * test-watch.c: the file watcher on real folders.
 *
 * Each test makes a temporary vault, starts a watcher whose callback
 * collects every reported path under a mutex, changes files, and waits
 * (at most WAIT_MS) for the paths it expects. "Never reported" is checked
 * with a sentinel: a change made after the ones that must not show, whose
 * report means those were read already.
 */
#include "lib/tv.h"
#include "lib/test.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "vault/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 3000

struct collector {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char **paths;
	size_t n, alloc;
	int calls;
	int gate;      /* callbacks wait while set */
	int waiting;   /* a callback is waiting at the gate */
};

static void collect(void *ctx, const char *const *paths, size_t n)
{
	struct collector *c = ctx;
	size_t i;

	pthread_mutex_lock(&c->lock);
	c->calls++;
	for (i = 0; i < n; i++) {
		ALLOC_GROW(c->paths, c->n + 1, c->alloc);
		c->paths[c->n++] = xstrdup(paths[i]);
	}
	pthread_cond_broadcast(&c->cond);
	while (c->gate) {
		c->waiting = 1;
		pthread_cond_broadcast(&c->cond);
		pthread_cond_wait(&c->cond, &c->lock);
	}
	c->waiting = 0;
	pthread_mutex_unlock(&c->lock);
}

static void collector_init(struct collector *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
}

static void collector_reset(struct collector *c)
{
	pthread_mutex_lock(&c->lock);
	while (c->n > 0)
		free(c->paths[--c->n]);
	c->calls = 0;
	pthread_mutex_unlock(&c->lock);
}

static void collector_release(struct collector *c)
{
	collector_reset(c);
	free(c->paths);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
}

/* Under c->lock: path reported exactly. */
static int has(struct collector *c, const char *path)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (strcmp(c->paths[i], path) == 0)
			return 1;
	return 0;
}

/* Under c->lock: path reported, or a folder above it, or "". */
static int has_covered(struct collector *c, const char *path)
{
	size_t i, len;

	for (i = 0; i < c->n; i++) {
		len = strlen(c->paths[i]);
		if (!len || (strncmp(path, c->paths[i], len) == 0 &&
			     (path[len] == '\0' || path[len] == '/')))
			return 1;
	}
	return 0;
}

static struct timespec deadline_in(int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* Waits until path is reported (covered: or a folder above it, or ""). 1 when it was. */
static int wait_path(struct collector *c, const char *path, int cover)
{
	struct timespec dl = deadline_in(WAIT_MS);
	int ok;

	pthread_mutex_lock(&c->lock);
	while (!(ok = cover ? has_covered(c, path) : has(c, path)))
		if (pthread_cond_timedwait(&c->cond, &c->lock, &dl) == ETIMEDOUT) {
			ok = cover ? has_covered(c, path) : has(c, path);
			break;
		}
	pthread_mutex_unlock(&c->lock);
	if (!ok)
		fprintf(stderr, "  (not reported in %d ms: \"%s\")\n", WAIT_MS, path);
	return ok;
}

static int reported(struct collector *c, const char *path)
{
	int r;

	pthread_mutex_lock(&c->lock);
	r = has(c, path);
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Any reported path with a segment starting with '.', or matching suffix. */
static int reported_dot_or(struct collector *c, const char *suffix)
{
	size_t i;
	int r = 0;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->n && !r; i++) {
		const char *p = c->paths[i];
		size_t len = strlen(p), sl = suffix ? strlen(suffix) : 0;
		if (p[0] == '.' || strstr(p, "/."))
			r = 1;
		if (sl && len >= sl && strcmp(p + len - sl, suffix) == 0)
			r = 1;
		if (r)
			fprintf(stderr, "  (reported: \"%s\")\n", p);
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

static int reported_under(struct collector *c, const char *folder)
{
	size_t i, len = strlen(folder);
	int r = 0;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->n; i++)
		if (strncmp(c->paths[i], folder, len) == 0 &&
		    (c->paths[i][len] == '\0' || c->paths[i][len] == '/'))
			r = 1;
	pthread_mutex_unlock(&c->lock);
	return r;
}

static char *vpath(const char *dir, const char *rel)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "%s/%s", dir, rel);
	return buf_detach(&b, NULL);
}

static int vrename(const char *dir, const char *from, const char *to)
{
	char *a = vpath(dir, from), *b = vpath(dir, to);
	int r = rename(a, b);

	if (r < 0)
		perror(a);
	free(a);
	free(b);
	return r;
}

static int vmkdir(const char *dir, const char *rel)
{
	char *p = vpath(dir, rel);
	int r = mkdir(p, 0755);

	if (r < 0)
		perror(p);
	free(p);
	return r;
}

static int vunlink(const char *dir, const char *rel)
{
	char *p = vpath(dir, rel);
	int r = unlink(p);

	if (r < 0)
		perror(p);
	free(p);
	return r;
}

/* A vault, a collector, a watcher: set up and torn down by each test. */
static char *dir;
static struct collector col;
static struct watch *w;

static int start(void)
{
	collector_init(&col);
	w = watch_new(dir, collect, &col);
	CHECK(w != NULL);
	return w != NULL;
}

static void stop(void)
{
	pthread_mutex_lock(&col.lock);
	col.gate = 0;
	pthread_cond_broadcast(&col.cond);
	pthread_mutex_unlock(&col.lock);
	watch_free(w);
	w = NULL;
	collector_release(&col);
	tv_remove(dir);
	dir = NULL;
}

static void test_new_fails(void)
{
	watch_free(NULL);
	log_set_level(LOG_QUIET);
	CHECK(watch_new("/nonexistent/quire-watch", collect, NULL) == NULL);
	log_set_level(LOG_INFO);
}

static void test_edit(void)
{
	dir = tv_new();
	tv_write(dir, "note.md", "# One\n");
	tv_write(dir, "a/b/deep.md", "# Deep\n");
	if (start()) {
		tv_write(dir, "note.md", "# Two\n");
		CHECK(wait_path(&col, "note.md", 0));
		tv_write(dir, "a/b/deep.md", "# Deeper\n");
		CHECK(wait_path(&col, "a/b/deep.md", 0));
	}
	stop();
}

static void test_create_delete(void)
{
	dir = tv_new();
	tv_write(dir, "old.md", "# Old\n");
	tv_write(dir, "f/keep.md", "# Keep\n");
	if (start()) {
		tv_write(dir, "new.md", "# New\n");
		tv_write(dir, "f/photo.png", "png");
		CHECK(wait_path(&col, "new.md", 0));
		CHECK(wait_path(&col, "f/photo.png", 0));
		CHECK(vunlink(dir, "old.md") == 0);
		CHECK(wait_path(&col, "old.md", 0));
		CHECK(!reported(&col, "f/keep.md"));
	}
	stop();
}

static void test_rename_note(void)
{
	dir = tv_new();
	tv_write(dir, "a.md", "# A\n");
	tv_write(dir, "f/x.md", "# X\n");
	if (start()) {
		CHECK(vrename(dir, "a.md", "b.md") == 0);
		CHECK(wait_path(&col, "a.md", 0));
		CHECK(wait_path(&col, "b.md", 0));
		CHECK(vrename(dir, "f/x.md", "y.md") == 0);
		CHECK(wait_path(&col, "f/x.md", 0));
		CHECK(wait_path(&col, "y.md", 0));
	}
	stop();
}

/* vim, Obsidian: write a temp file, rename it over the note. */
static void test_atomic_save(void)
{
	dir = tv_new();
	tv_write(dir, "note.md", "# One\n");
	if (start()) {
		tv_write(dir, ".note.md.tmp", "# Two\n");
		CHECK(vrename(dir, ".note.md.tmp", "note.md") == 0);
		tv_write(dir, "other.md.tmp", "x");
		CHECK(vrename(dir, "other.md.tmp", "other.md") == 0);
		tv_write(dir, "note.md~", "# backup\n");
		tv_write(dir, ".note.md.swp", "swap");
		tv_write(dir, "note.md.swx", "swap");
		tv_write(dir, ".#note.md", "lock");
		tv_write(dir, ".~lock.note.md#", "lock");
		CHECK(wait_path(&col, "note.md", 0));
		CHECK(wait_path(&col, "other.md", 0));
		tv_write(dir, "sentinel.md", "#\n");
		CHECK(wait_path(&col, "sentinel.md", 0));
		CHECK(!reported_dot_or(&col, ".tmp"));
		CHECK(!reported_dot_or(&col, "~"));
		CHECK(!reported_dot_or(&col, ".swx"));
	}
	stop();
}

static void test_new_folder(void)
{
	dir = tv_new();
	if (start()) {
		CHECK(vmkdir(dir, "fresh") == 0);
		CHECK(wait_path(&col, "fresh", 0));
		tv_write(dir, "fresh/a.md", "# A\n");
		CHECK(wait_path(&col, "fresh/a.md", 0));
		/* folders made in a hurry, and a file at once */
		collector_reset(&col);
		tv_write(dir, "fresh/x/y/z/now.md", "# Now\n");
		CHECK(wait_path(&col, "fresh/x/y/z/now.md", 1));
		collector_reset(&col);
		tv_write(dir, "fresh/x/y/z/later.md", "# Later\n");
		CHECK(wait_path(&col, "fresh/x/y/z/later.md", 0));
	}
	stop();
}

/* A folder made elsewhere with files, then moved in (mv, git checkout). */
static void test_move_in(void)
{
	char *outside = tv_new(), *from, *to;

	dir = tv_new();
	tv_write(outside, "in/a.md", "# A\n");
	tv_write(outside, "in/sub/b.md", "# B\n");
	if (start()) {
		from = vpath(outside, "in");
		to = vpath(dir, "in");
		CHECK(rename(from, to) == 0);
		CHECK(wait_path(&col, "in", 0));
		CHECK(!reported(&col, "in/a.md")); /* the folder stands for them */
		tv_write(dir, "in/sub/c.md", "# C\n");
		CHECK(wait_path(&col, "in/sub/c.md", 0));
		free(from);
		free(to);
	}
	stop();
	tv_remove(outside);
}

/* Moved out: reported, and its watches gone (no events under the old path). */
static void test_move_out(void)
{
	char *outside = tv_new(), *from, *to;

	dir = tv_new();
	tv_write(dir, "out/a.md", "# A\n");
	tv_write(dir, "out/sub/b.md", "# B\n");
	if (start()) {
		from = vpath(dir, "out");
		to = vpath(outside, "out");
		CHECK(rename(from, to) == 0);
		CHECK(wait_path(&col, "out", 0));
		collector_reset(&col);
		tv_write(outside, "out/sub/b.md", "# B2\n");
		tv_write(outside, "out/c.md", "# C\n");
		tv_write(dir, "sentinel.md", "#\n");
		CHECK(wait_path(&col, "sentinel.md", 0));
		CHECK(!reported_under(&col, "out"));
		/* into a dot-folder: the same */
		tv_write(dir, "hide/x.md", "# X\n");
		CHECK(wait_path(&col, "hide", 1));
		CHECK(vmkdir(dir, ".trash") == 0);
		collector_reset(&col);
		CHECK(vrename(dir, "hide", ".trash/hide") == 0);
		CHECK(wait_path(&col, "hide", 0));
		collector_reset(&col);
		tv_write(dir, ".trash/hide/x.md", "# X2\n");
		tv_write(dir, "sentinel2.md", "#\n");
		CHECK(wait_path(&col, "sentinel2.md", 0));
		CHECK(!reported_under(&col, "hide"));
		CHECK(!reported_dot_or(&col, NULL));
		free(from);
		free(to);
	}
	stop();
	tv_remove(outside);
}

static void test_rename_folder(void)
{
	dir = tv_new();
	tv_write(dir, "old/a.md", "# A\n");
	tv_write(dir, "old/deep/er/b.md", "# B\n");
	if (start()) {
		CHECK(vrename(dir, "old", "new") == 0);
		CHECK(wait_path(&col, "old", 0));
		CHECK(wait_path(&col, "new", 0));
		collector_reset(&col);
		tv_write(dir, "new/deep/er/b.md", "# B2\n");
		tv_write(dir, "new/a.md", "# A2\n");
		CHECK(wait_path(&col, "new/deep/er/b.md", 0));
		CHECK(wait_path(&col, "new/a.md", 0));
		CHECK(!reported_under(&col, "old"));
		/* into another folder, then an edit */
		CHECK(vmkdir(dir, "box") == 0);
		CHECK(vrename(dir, "new/deep", "box/deep") == 0);
		CHECK(wait_path(&col, "box/deep", 1)); /* or "box", if it was watched late */
		CHECK(wait_path(&col, "new/deep", 0));
		collector_reset(&col);
		tv_write(dir, "box/deep/er/b.md", "# B3\n");
		CHECK(wait_path(&col, "box/deep/er/b.md", 0));
		CHECK(!reported_under(&col, "new/deep"));
		/* rename then edit at once, within one batch */
		collector_reset(&col);
		CHECK(vrename(dir, "box", "crate") == 0);
		tv_write(dir, "crate/deep/er/c.md", "# C\n");
		CHECK(wait_path(&col, "crate/deep/er/c.md", 1));
		collector_reset(&col);
		tv_write(dir, "crate/deep/er/d.md", "# D\n");
		CHECK(wait_path(&col, "crate/deep/er/d.md", 0));
		CHECK(!reported_under(&col, "box"));
	}
	stop();
}

static void test_delete_folder(void)
{
	char *gone;

	dir = tv_new();
	tv_write(dir, "gone/a.md", "# A\n");
	tv_write(dir, "gone/sub/b.md", "# B\n");
	tv_write(dir, "stay.md", "# Stay\n");
	if (start()) {
		gone = vpath(dir, "gone");
		CHECK(tv_rmtree(gone) == 0);
		CHECK(wait_path(&col, "gone", 0));
		/* the same name again, watched afresh */
		collector_reset(&col);
		tv_write(dir, "gone/sub/new.md", "# New\n");
		CHECK(wait_path(&col, "gone/sub/new.md", 1));
		collector_reset(&col);
		tv_write(dir, "gone/sub/newer.md", "# Newer\n");
		CHECK(wait_path(&col, "gone/sub/newer.md", 0));
		free(gone);
	}
	stop();
}

static void test_dot_paths(void)
{
	dir = tv_new();
	tv_write(dir, ".obsidian/app.json", "{}");
	tv_write(dir, ".git/HEAD", "ref: refs/heads/main\n");
	tv_write(dir, "a/keep.md", "# Keep\n");
	if (start()) {
		tv_write(dir, ".obsidian/app.json", "{\"x\":1}");
		tv_write(dir, ".obsidian/workspace.json", "{}");
		tv_write(dir, ".git/objects/ab/cdef", "blob");
		tv_write(dir, ".git/HEAD", "ref: refs/heads/other\n");
		tv_write(dir, ".trash/x.md", "# X\n");
		tv_write(dir, "a/.hidden.md", "# Hidden\n");
		tv_write(dir, ".dotfile", "x");
		tv_write(dir, "sentinel.md", "#\n");
		CHECK(wait_path(&col, "sentinel.md", 0));
		CHECK(!reported_dot_or(&col, NULL));
	}
	stop();
}

static void test_burst(void)
{
	struct buf p = BUF_INIT;
	double t0, t1, last;
	int i, calls, all = 1, gaps = 0, allowed;

	dir = tv_new();
	tv_write(dir, "burst/.keep", "");
	if (start()) {
		t0 = last = now_s();
		for (i = 0; i < 1000; i++) {
			buf_reset(&p);
			buf_addf(&p, "burst/n%04d.md", i);
			tv_write(dir, p.ptr, "# N\n");
			/* a pause this long between writes may end a batch (the watcher's 20 ms) */
			if (now_s() - last >= 0.015)
				gaps++;
			last = now_s();
		}
		t1 = now_s();
		CHECK(wait_path(&col, "burst/n0999.md", 1));
		for (i = 0; i < 1000; i++) {
			buf_reset(&p);
			buf_addf(&p, "burst/n%04d.md", i);
			pthread_mutex_lock(&col.lock);
			if (!has_covered(&col, p.ptr))
				all = 0;
			pthread_mutex_unlock(&col.lock);
		}
		CHECK(all);
		pthread_mutex_lock(&col.lock);
		calls = col.calls;
		pthread_mutex_unlock(&col.lock);
		/*
		 * A batch ends after 20 ms without an event or 200 ms after its
		 * first (src/vault/watch.c): so one batch, and one more for each
		 * pause in the writing and each 200 ms it took, whatever the
		 * machine's speed (a fixed count failed where writing was slow).
		 */
		allowed = 3 + gaps + (int)((t1 - t0) / 0.2);
		fprintf(stderr, "  1,000 files written in %.0f ms with %d pauses: %d callbacks "
			"(at most %d)\n", (t1 - t0) * 1000, gaps, calls, allowed);
		CHECK(calls <= allowed);
	}
	buf_release(&p);
	stop();
}

static long read_long(const char *path)
{
	char line[64];
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f && fgets(line, sizeof(line), f))
		v = strtol(line, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

/*
 * The kernel's queue overflows while the callback holds the watcher: renames
 * (two events each, cheap) past fs.inotify.max_queued_events. Then "" is
 * reported, and a folder made while events were lost is watched.
 */
static void test_overflow(void)
{
	long max = read_long("/proc/sys/fs/inotify/max_queued_events"), i;
	struct timespec dl;
	int ok = 1;

	if (max <= 0 || max > 1000000) {
		fprintf(stderr, "  skipped: max_queued_events is %ld\n", max);
		return;
	}
	dir = tv_new();
	tv_write(dir, "r0.md", "#\n");
	if (start()) {
		pthread_mutex_lock(&col.lock);
		col.gate = 1;
		pthread_mutex_unlock(&col.lock);
		tv_write(dir, "trigger.md", "#\n");
		dl = deadline_in(WAIT_MS);
		pthread_mutex_lock(&col.lock);
		while (!col.waiting && ok)
			ok = pthread_cond_timedwait(&col.cond, &col.lock, &dl) != ETIMEDOUT;
		pthread_mutex_unlock(&col.lock);
		CHECK(ok);
		for (i = 0; i < max / 2 + 100 && ok; i++)
			ok = vrename(dir, i % 2 ? "r1.md" : "r0.md", i % 2 ? "r0.md" : "r1.md") == 0;
		CHECK(ok);
		CHECK(vmkdir(dir, "during") == 0);
		pthread_mutex_lock(&col.lock);
		col.gate = 0;
		pthread_cond_broadcast(&col.cond);
		pthread_mutex_unlock(&col.lock);
		CHECK(wait_path(&col, "", 0));
		collector_reset(&col);
		tv_write(dir, "during/x.md", "# X\n");
		CHECK(wait_path(&col, "during/x.md", 0));
	}
	stop();
}

/* More paths than a batch holds: "" instead, with memory bounded. */
static void test_mass_change(void)
{
	struct buf p = BUF_INIT;
	int i;

	dir = tv_new();
	tv_write(dir, "m/.keep", "");
	if (start()) {
		/* renames are cheap: 10,000 distinct names in a moment */
		tv_write(dir, "m/r00000.md", "#\n");
		for (i = 1; i < 10000; i++) {
			char *a, *b;
			buf_reset(&p);
			buf_addf(&p, "m/r%05d.md", i - 1);
			a = vpath(dir, p.ptr);
			buf_reset(&p);
			buf_addf(&p, "m/r%05d.md", i);
			b = vpath(dir, p.ptr);
			if (rename(a, b) < 0) {
				perror(a);
				CHECK(0);
				i = 10000;
			}
			free(a);
			free(b);
		}
		CHECK(wait_path(&col, "m/r09999.md", 1));
	}
	buf_release(&p);
	stop();
}

static void test_root_deleted(void)
{
	char *copy;

	dir = tv_new();
	tv_write(dir, "a/b.md", "# B\n");
	if (start()) {
		copy = xstrdup(dir);
		log_set_level(LOG_ERROR);
		CHECK(tv_rmtree(copy) == 0);
		CHECK(wait_path(&col, "", 0));
		/* back again: watched, and "" once more */
		collector_reset(&col);
		CHECK(mkdir(copy, 0755) == 0);
		CHECK(wait_path(&col, "", 0));
		collector_reset(&col);
		tv_write(dir, "c.md", "# C\n");
		CHECK(wait_path(&col, "c.md", 0));
		log_set_level(LOG_INFO);
		free(copy);
	}
	stop();
}

int main(void)
{
	RUN(test_new_fails);
	RUN(test_edit);
	RUN(test_create_delete);
	RUN(test_rename_note);
	RUN(test_atomic_save);
	RUN(test_new_folder);
	RUN(test_move_in);
	RUN(test_move_out);
	RUN(test_rename_folder);
	RUN(test_delete_folder);
	RUN(test_dot_paths);
	RUN(test_burst);
	RUN(test_overflow);
	RUN(test_mass_change);
	RUN(test_root_deleted);
	return test_done();
}
