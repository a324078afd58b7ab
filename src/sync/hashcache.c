/*
 * hashcache.c: a map from path to (stat, SHA-256), saved as a text file.
 *
 * The saved form is one line per entry,
 *	<sha256> <size> <mtime_ns> <ctime_ns> <ino> <hashed_ns> <path>\n
 * after a header line; paths holding '\n' are not saved. Text keeps the
 * file inspectable and a damaged line just fails to parse.
 *
 * Files are hashed in pieces (hash_sha256_fd()): memory is one piece at
 * a time per caller, whatever the file's size (an upload may be 1 GB).
 * Rejected: mmap (a file truncated by another program while it is hashed
 * raises SIGBUS in the server).
 */
#include "sync/hashcache.h"
#include "util/buf.h"
#include "util/files.h"
#include "util/log.h"
#include "util/map.h"
#include "util/parallel.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HEADER "quire-hashes 1\n"

struct entry {
	char *path;
	int64_t size, mtime_ns, ctime_ns, hashed_ns;
	uint64_t ino;
	uint64_t pass;
	char sha[SHA256_HEX_SIZE];
};

struct hash_cache {
	pthread_mutex_t lock;
	struct map map;        /* path -> struct entry *; keys are the entries' paths */
	uint64_t pass;
	int dirty;
};

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

int64_t hash_cache_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts_ns(&ts);
}

struct hash_cache *hash_cache_new(void)
{
	struct hash_cache *c = xcalloc(1, sizeof(*c));

	pthread_mutex_init(&c->lock, NULL);
	return c;
}

static void free_entry(struct entry *e)
{
	if (e) {
		free(e->path);
		free(e);
	}
}

void hash_cache_free(struct hash_cache *c)
{
	size_t i = 0, klen;
	const char *key;
	void *v;

	if (!c)
		return;
	while (map_next(&c->map, &i, &key, &klen, &v))
		free_entry(v);
	map_release(&c->map);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Inserts or replaces; under the lock. */
static void put_locked(struct hash_cache *c, struct entry *e)
{
	struct entry *old = map_put(&c->map, e->path, strlen(e->path), e);

	free_entry(old);
	c->dirty = 1;
}

static void fill(struct entry *e, const struct stat *st)
{
	e->size = (int64_t)st->st_size;
	e->mtime_ns = ts_ns(&st->st_mtim);
	e->ctime_ns = ts_ns(&st->st_ctim);
	e->ino = (uint64_t)st->st_ino;
}

static int matches(const struct entry *e, const struct stat *st)
{
	return e->size == (int64_t)st->st_size && e->mtime_ns == ts_ns(&st->st_mtim) &&
	       e->ctime_ns == ts_ns(&st->st_ctim) && e->ino == (uint64_t)st->st_ino &&
	       e->ctime_ns + HASH_CACHE_RACY_NS < e->hashed_ns;
}

int hash_cache_load(struct hash_cache *c, const char *file)
{
	struct buf b = BUF_INIT;
	char *line, *next;
	int fd, ret = 0;

	/*
	 * Opening the saved cache: read whole (about 120 bytes per file) and
	 * parsed in place. A missing file is the normal first run.
	 * Rejected: stdio line reads (fgets needs a line-length limit, and a
	 * path may be up to 1024 bytes plus the fields).
	 */
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return log_error("%s: %s", file, strerror(errno));
	}
	if (read_fd(fd, &b) < 0) {
		ret = log_error("%s: %s", file, strerror(errno));
		goto out;
	}
	if (strncmp(b.ptr, HEADER, strlen(HEADER)) != 0)
		goto out; /* another format: start empty */
	pthread_mutex_lock(&c->lock);
	for (line = b.ptr + strlen(HEADER); *line; line = next) {
		struct entry *e;
		long long size, mt, ct, ht;
		unsigned long long ino;
		char sha[SHA256_HEX_SIZE];
		int off = 0;

		next = strchr(line, '\n');
		if (!next)
			break; /* a torn last line */
		*next++ = '\0';
		if (sscanf(line, "%64[0-9a-f] %lld %lld %lld %llu %lld %n", sha, &size, &mt, &ct, &ino,
			   &ht, &off) != 6 ||
		    off == 0 || strlen(sha) != 64 || !line[off] || size < 0)
			continue;
		e = xcalloc(1, sizeof(*e));
		e->path = xstrdup(line + off);
		memcpy(e->sha, sha, SHA256_HEX_SIZE);
		e->size = size;
		e->mtime_ns = mt;
		e->ctime_ns = ct;
		e->ino = ino;
		e->hashed_ns = ht;
		e->pass = c->pass;
		put_locked(c, e);
	}
	c->dirty = 0;
	pthread_mutex_unlock(&c->lock);
out:
	if (close(fd) < 0 && ret == 0)
		ret = log_error("%s: %s", file, strerror(errno));
	buf_release(&b);
	return ret;
}

int hash_cache_save(struct hash_cache *c, const char *file)
{
	struct buf b = BUF_INIT, tmp = BUF_INIT;
	const char *slash = strrchr(file, '/'), *key;
	size_t i = 0, klen;
	void *v;
	int fd = -1, ret = -1;

	pthread_mutex_lock(&c->lock);
	buf_adds(&b, HEADER);
	while (map_next(&c->map, &i, &key, &klen, &v)) {
		const struct entry *e = v;
		if (strchr(e->path, '\n'))
			continue;
		buf_addf(&b, "%s %lld %lld %lld %llu %lld %s\n", e->sha, (long long)e->size,
			 (long long)e->mtime_ns, (long long)e->ctime_ns, (unsigned long long)e->ino,
			 (long long)e->hashed_ns, e->path);
	}
	c->dirty = 0;
	pthread_mutex_unlock(&c->lock);

	/*
	 * Writing the cache: a temporary file in the same folder, named with a
	 * leading '.' and the pid and thread-unique address so two savers never
	 * share one, fsynced and renamed over the old file, so a crash leaves
	 * the old cache or the new one. The folder is not fsynced: losing the
	 * rename costs hashing again, never a wrong hash.
	 * Rejected: writing in place (a crash mid-write leaves half a cache).
	 */
	if (slash)
		buf_add(&tmp, file, (size_t)(slash - file + 1));
	buf_addf(&tmp, ".hashes-tmp-%ld-%lx", (long)getpid(), (unsigned long)(uintptr_t)&b);
	fd = open(tmp.ptr, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		log_error("%s: %s", tmp.ptr, strerror(errno));
		goto out;
	}
	if (write_fd(fd, b.ptr, b.len) < 0 || fsync(fd) < 0) {
		log_error("%s: %s", tmp.ptr, strerror(errno));
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		log_error("%s: %s", tmp.ptr, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp.ptr, file) < 0) {
		log_error("%s: %s", file, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (fd >= 0)
		close(fd); /* already failing */
	if (ret < 0 && tmp.len && unlink(tmp.ptr) < 0 && errno != ENOENT)
		log_warn("%s: %s", tmp.ptr, strerror(errno));
	if (ret < 0) {
		pthread_mutex_lock(&c->lock);
		c->dirty = 1;
		pthread_mutex_unlock(&c->lock);
	}
	buf_release(&tmp);
	buf_release(&b);
	return ret;
}

int hash_cache_file(struct hash_cache *c, int dirfd, const char *disk, const char *path,
		    char sha[SHA256_HEX_SIZE], struct stat *st_out)
{
	struct entry *e;
	struct stat st;
	int64_t t0;
	int fd, saved, ret = -1;

	/*
	 * Opening a vault file to hash it: read-only, relative to the caller's
	 * folder descriptor, following a final symlink (the scanner has already
	 * refused those leaving the vault), and read in pieces.
	 * Rejected: mmap (see the top of this file).
	 */
	fd = openat(dirfd, disk, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0)
		goto out;
	if (!S_ISREG(st.st_mode)) {
		errno = EISDIR;
		goto out;
	}
	if (st_out)
		*st_out = st;
	pthread_mutex_lock(&c->lock);
	e = map_get(&c->map, path, strlen(path));
	if (e && matches(e, &st)) {
		memcpy(sha, e->sha, SHA256_HEX_SIZE);
		e->pass = c->pass;
		ret = 0;
	}
	pthread_mutex_unlock(&c->lock);
	if (ret == 0)
		goto out;

	t0 = hash_cache_now_ns();
	if (hash_sha256_fd(fd, sha, NULL) < 0)
		goto out;
	e = xcalloc(1, sizeof(*e));
	e->path = xstrdup(path);
	fill(e, &st);
	e->hashed_ns = t0;
	memcpy(e->sha, sha, SHA256_HEX_SIZE);
	pthread_mutex_lock(&c->lock);
	e->pass = c->pass;
	put_locked(c, e);
	pthread_mutex_unlock(&c->lock);
	ret = 1;
out:
	saved = errno;
	/* a read-only descriptor fails to close only on EIO, and then the hash is suspect */
	if (fd >= 0 && close(fd) < 0 && ret >= 0) {
		saved = errno;
		ret = -1;
	}
	if (ret < 0)
		hash_cache_remove(c, path);
	errno = saved;
	return ret;
}

void hash_cache_put(struct hash_cache *c, const char *path, const struct stat *st,
		    const char *sha, int64_t hashed_ns)
{
	struct entry *e = xcalloc(1, sizeof(*e));

	e->path = xstrdup(path);
	fill(e, st);
	e->hashed_ns = hashed_ns;
	memcpy(e->sha, sha, SHA256_HEX_SIZE);
	pthread_mutex_lock(&c->lock);
	e->pass = c->pass;
	put_locked(c, e);
	pthread_mutex_unlock(&c->lock);
}

void hash_cache_remove(struct hash_cache *c, const char *path)
{
	struct entry *e;

	pthread_mutex_lock(&c->lock);
	e = map_remove(&c->map, path, strlen(path));
	if (e)
		c->dirty = 1;
	pthread_mutex_unlock(&c->lock);
	free_entry(e);
}

uint64_t hash_cache_mark(struct hash_cache *c)
{
	uint64_t p;

	pthread_mutex_lock(&c->lock);
	p = ++c->pass;
	pthread_mutex_unlock(&c->lock);
	return p;
}

size_t hash_cache_sweep(struct hash_cache *c, uint64_t pass)
{
	size_t i = 0, klen, n = 0;
	const char *key;
	void *v;

	pthread_mutex_lock(&c->lock);
	while (map_next(&c->map, &i, &key, &klen, &v)) {
		struct entry *e = v;
		if (e->pass < pass) {
			map_remove(&c->map, key, klen);
			free_entry(e);
			n++;
		}
	}
	if (n)
		c->dirty = 1;
	pthread_mutex_unlock(&c->lock);
	return n;
}

int hash_cache_dirty(struct hash_cache *c)
{
	int d;

	pthread_mutex_lock(&c->lock);
	d = c->dirty;
	pthread_mutex_unlock(&c->lock);
	return d;
}

struct scan_work {
	struct hash_cache *cache;
	int dirfd;
	struct vault_scan *scan;
	char (*sha)[SHA256_HEX_SIZE];
	char *ok;
	atomic_size_t hashed;
};

static void scan_one(void *ctx, size_t i)
{
	struct scan_work *w = ctx;
	struct vault_file *f = &w->scan->files[i];
	struct stat st;
	int rc = hash_cache_file(w->cache, w->dirfd, f->disk, f->path, w->sha[i], &st);

	w->ok[i] = rc >= 0;
	if (rc > 0)
		atomic_fetch_add(&w->hashed, 1);
	if (rc >= 0)
		f->size = st.st_size;
}

size_t hash_cache_scan(struct hash_cache *c, int dirfd, struct vault_scan *scan,
		       char (*sha)[SHA256_HEX_SIZE], char *ok)
{
	struct scan_work w = { c, dirfd, scan, sha, ok, 0 };

	atomic_init(&w.hashed, 0);
	parallel_for(scan->n, parallel_cpus(), scan_one, &w);
	return atomic_load(&w.hashed);
}
