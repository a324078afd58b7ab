/*
 * syncapi.c: writes into the vault over HTTP, durably, off the loops.
 *
 * Requests. One raw handler takes /api/v1/ (raw, so that a path the HTTP
 * front would refuse with a bare 400 gets a JSON error naming the
 * problem). It checks the address against the failure limiter, the
 * token, the route and the path, copies what the work needs (the path, the
 * preconditions, the body, moved out of libevent's buffer), defers the
 * request and queues a job. Nothing on a loop touches the disk.
 *
 * Jobs. A pool of threads takes jobs in order. Writes to one path are
 * serialized by a set of busy paths (a move holds both of its paths), so a
 * precondition and the write it guards are atomic with respect to other
 * API writes; jobs on other paths run in parallel, which matters because
 * each write waits for two fsyncs.
 *
 * A write. The folder holding the target is reached from the vault's
 * descriptor one segment at a time with O_NOFOLLOW, so no symlink in the
 * vault can send a write elsewhere; missing folders are made and each is
 * fsynced into its parent. The bytes go to ".quire-tmp-<pid>-<n>" in that
 * folder (O_EXCL) or to a spare (below), which is fsynced, renamed over
 * the target, and the folder fsynced; only then is the loader told and the
 * client answered.
 * Rejected: O_TMPFILE with linkat (linkat cannot replace an existing
 * target, so a rename would be needed anyway); writing in place (a crash
 * leaves a torn note that the loader would publish).
 *
 * Spares. A write that replaces a file first links the file's inode into
 * <data dir>/spares, so the rename frees no inode, and a later write
 * truncates and fills that inode there and renames it into place instead
 * of creating a file (struct spare): a sync of notes that exist allocates
 * and frees no inodes, and nothing but the one temporary file of a write
 * under way ever sits in a vault folder. Links and renames stay within
 * one file system: a write into a folder on another one than the data
 * folder (a mount inside the vault, or a data folder elsewhere) creates
 * its file as before. Why: on ext4 without a journal (this project's
 * VMs), every inode allocation skips each inode of its group freed in the
 * last 60 to 360 s, reading its table block: creating the temporary file
 * took 0.4 to 2 ms of kernel time per PUT during syncs, and that kernel
 * time is not preempted, so it delayed page reads on the same core. A
 * spare is used only if it is still the inode we linked, a regular file
 * with no other link (its name could have been swapped for a hard link to
 * another file).
 *
 * Leftovers. A crash can leave temporary files; their names start with '.'
 * so the scanner, the watcher and the manifest never see them, and
 * syncapi_new() deletes them.
 *
 * The manifest scans the vault with the scanner's rules (without
 * quire.yml's ignore globs: those decide what is published, not what is
 * synced) and takes each file's hash from the hash cache, which reads only
 * files whose stat changed; the cache is saved in the data folder.
 *
 * Long polls. A waiter list with one thread: it sleeps in loader_wait()
 * for the version after the live one, so it wakes at each publish (not on
 * a timer), answers the waiters that are satisfied, and wakes at least
 * every WAIT_TICK_MS to time out the others. A waiter already satisfied is
 * answered by the handler at once.
 *
 * Authentication. The token's SHA-256 is kept, and the presented token's
 * hash is compared with it in constant time (so neither the token's
 * length nor a matching prefix shows in the timing). Failures take a
 * token from a per-address bucket (ratelimit.h); when the bucket is
 * empty, the address is blocked until it holds a token again, and a
 * blocked address gets 429 even with the right token.
 */
#define _GNU_SOURCE /* SCHED_BATCH */
#include "sync/syncapi.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/hash.h"
#include "sync/hashcache.h"
#include "http/http.h"
#include "util/json.h"
#include "site/loader.h"
#include "util/log.h"
#include "util/parallel.h"
#include "util/ratelimit.h"
#include "util/unicode.h"
#include "vault/vault.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define API_PREFIX "/api/v1/"
#define FILES_PREFIX "/api/v1/files"
#define FILES_LEN (sizeof(FILES_PREFIX) - 1)
#define DEFAULT_THREADS 4
#define DEFAULT_AUTH_FAILURES 10
#define MAX_QUEUED 4096
#define WAIT_TICK_MS 50
#define WAIT_DEFAULT_MS 30000
#define WAIT_MAX_MS 300000
#define BLOCK_SLOTS 256
#define BLOCK_PROBE 8
#define TMP_PREFIX ".quire-tmp-"
#define JSON_TYPE "application/json"

enum job_kind { J_PUT, J_DELETE, J_MOVE, J_MANIFEST };

enum cond { C_NONE, C_MATCH, C_MATCH_ANY };

struct job {
	enum job_kind kind;
	struct http_deferred *d;
	char *path;               /* NFC, checked; the source of a move */
	char *to;                 /* a move's target */
	struct buf body;          /* a PUT's bytes */
	enum cond if_match;
	char match[SHA256_HEX_SIZE];
	int if_none_match;        /* If-None-Match: * */
	struct job *next;
};

struct waiter {
	struct http_deferred *d;
	uint64_t version;
	int64_t deadline_ms;      /* CLOCK_MONOTONIC */
	struct waiter *next;
};

/* An address that failed too often, until it may try again. */
struct blocked {
	char addr[RATE_LIMITER_KEY_MAX + 1];
	double until;
};

/*
 * The inode of a file a write replaced, linked in <data dir>/spares, to be
 * a later write's temporary file.
 */
struct spare {
	char name[48];
	dev_t dev;
	ino_t ino;
};

#define SPARES_MAX 64

struct syncapi {
	char *vault;
	int root_fd;                  /* the vault folder, for every *at() call */
	char *hashes_file;
	struct loader *loader;        /* borrowed */
	char token_sha[SHA256_HEX_SIZE];
	size_t max_upload;
	struct hash_cache *cache;

	struct rate_limiter *failures;
	pthread_mutex_t block_lock;
	struct blocked blocked[BLOCK_SLOTS];

	pthread_mutex_t lock;         /* the job queue and the busy paths */
	pthread_cond_t work;          /* a job was queued, or stop */
	pthread_cond_t released;      /* a busy path was released */
	struct job *head, *tail;
	size_t queued;
	char **busy;
	size_t nbusy, abusy;
	int stop;
	pthread_t *threads;
	int nthreads;

	pthread_mutex_t wlock;        /* the waiters */
	pthread_cond_t wcond;         /* a waiter was added, or stop */
	struct waiter *waiters;
	int wstop;
	pthread_t wthread;
	int wstarted;

	pthread_mutex_t save_lock;    /* one save of the hash cache at a time */
	atomic_uint tmp_counter;
	int spares_fd;                /* <data dir>/spares, or -1 */
	struct spare spares[SPARES_MAX]; /* under lock */
	size_t nspares;

	_Atomic uint64_t puts, deletes, moves, manifests, hashed, auth_failures, limited;
};

static void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* ---- paths ---- */

int syncapi_check_path(const char *path, size_t len, struct buf *out, const char **why)
{
	size_t i, seg;
	char *nfc;

	buf_reset(out);
	if (len == 0)
		return *why = "empty path", -1;
	if (path[0] == '/')
		return *why = "absolute path", -1;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)path[i];
		if (c == 0)
			return *why = "NUL byte in path", -1;
		if (c < 0x20 || c == 0x7f)
			return *why = "control character in path", -1;
		if (c == '\\')
			return *why = "backslash in path", -1;
	}
	if (!utf8_valid(path, len))
		return *why = "path is not valid UTF-8", -1;
	nfc = utf8_nfc(path, len);
	buf_adds(out, nfc);
	free(nfc);
	if (out->len > SYNCAPI_MAX_PATH)
		return *why = "path longer than 1024 bytes", -1;
	for (i = 0; i <= out->len; i = seg + 1) {
		size_t n;
		seg = i;
		while (seg < out->len && out->ptr[seg] != '/')
			seg++;
		n = seg - i;
		if (n == 0)
			return *why = "empty path segment", -1;
		if ((n == 1 && out->ptr[i] == '.') || (n == 2 && out->ptr[i] == '.' && out->ptr[i + 1] == '.'))
			return *why = "'.' or '..' segment in path", -1;
		if (out->ptr[i] == '.')
			return *why = "dot-file or dot-folder in path", -1;
		if (n > SYNCAPI_MAX_SEGMENT)
			return *why = "path segment longer than 255 bytes", -1;
	}
	return 0;
}

int syncapi_decode_path(const char *raw, size_t len, struct buf *out, const char **why)
{
	struct buf dec = BUF_INIT;
	int rc;

	if (buf_add_urldecoded(&dec, raw, len, 0) < 0) {
		buf_release(&dec);
		buf_reset(out);
		return *why = "invalid percent-encoding in path", -1;
	}
	rc = syncapi_check_path(dec.ptr, dec.len, out, why);
	buf_release(&dec);
	return rc;
}

/* ---- answers ---- */

static void json_error(struct buf *b, const char *msg, const char *path)
{
	buf_adds(b, "{\"error\":\"");
	buf_adds_json(b, msg);
	buf_addc(b, '"');
	if (path) {
		buf_adds(b, ",\"path\":\"");
		buf_adds_json(b, path);
		buf_addc(b, '"');
	}
	buf_adds(b, "}\n");
}

static void reply_error(struct http_request *req, int status, const char *msg, const char *path)
{
	struct buf b = BUF_INIT;

	json_error(&b, msg, path);
	http_reply_header(req, "Cache-Control", "no-store");
	http_reply_buf(req, status, JSON_TYPE, &b);
}

static void dreply_error(struct http_deferred *d, int status, const char *msg, const char *path)
{
	struct buf b = BUF_INIT;

	json_error(&b, msg, path);
	http_deferred_reply_buf(d, status, JSON_TYPE, &b);
}

/* ---- authentication ---- */

/* Seconds until addr may try again, or 0 when it is not blocked. */
static double blocked_for(struct syncapi *api, const char *addr, double now)
{
	uint32_t h = (uint32_t)hash64(addr, strlen(addr));
	double left = 0;
	int i;

	pthread_mutex_lock(&api->block_lock);
	for (i = 0; i < BLOCK_PROBE; i++) {
		struct blocked *b = &api->blocked[(h + (uint32_t)i) % BLOCK_SLOTS];
		if (b->until > now && strcmp(b->addr, addr) == 0) {
			left = b->until - now;
			break;
		}
	}
	pthread_mutex_unlock(&api->block_lock);
	return left;
}

/* Blocks addr until now + secs: its own slot, a free one, or the one expiring first. */
static void block(struct syncapi *api, const char *addr, double now, double secs)
{
	uint32_t h = (uint32_t)hash64(addr, strlen(addr));
	struct blocked *pick = NULL;
	int i;

	pthread_mutex_lock(&api->block_lock);
	for (i = 0; i < BLOCK_PROBE; i++) {
		struct blocked *b = &api->blocked[(h + (uint32_t)i) % BLOCK_SLOTS];
		if (strcmp(b->addr, addr) == 0) {
			pick = b;
			break;
		}
		if (!pick || b->until < pick->until)
			pick = b;
	}
	snprintf(pick->addr, sizeof(pick->addr), "%s", addr);
	pick->until = now + secs;
	pthread_mutex_unlock(&api->block_lock);
}

static int token_ok(struct syncapi *api, const char *auth)
{
	char sha[SHA256_HEX_SIZE];
	unsigned diff = 0;
	size_t n;
	int i;

	if (!auth || strncasecmp(auth, "Bearer", 6) != 0 || (auth[6] != ' ' && auth[6] != '\t'))
		return 0;
	auth += 6;
	while (*auth == ' ' || *auth == '\t')
		auth++;
	n = strlen(auth);
	while (n && (auth[n - 1] == ' ' || auth[n - 1] == '\t'))
		n--;
	if (!n)
		return 0;
	hash_sha256_hex(auth, n, sha);
	for (i = 0; i < 64; i++)
		diff |= (unsigned)(sha[i] ^ api->token_sha[i]);
	return diff == 0;
}

/* 1 when the request may go on; otherwise it has been answered (401 or 429). */
static int authenticate(struct syncapi *api, struct http_request *req)
{
	const char *addr = http_request_peer(req);
	double now = (clock_ms() / 1e3), retry = blocked_for(api, addr, now);
	char num[32];

	if (retry <= 0) {
		if (token_ok(api, http_request_header(req, "Authorization")))
			return 1;
		count(&api->auth_failures);
		if (rate_limiter_take(api->failures, addr, now, &retry)) {
			http_reply_header(req, "WWW-Authenticate", "Bearer realm=\"quire\"");
			reply_error(req, 401,
				    http_request_header(req, "Authorization") ? "wrong token"
									      : "missing bearer token",
				    NULL);
			return 0;
		}
		if (retry < 1)
			retry = 1;
		block(api, addr, now, retry);
	}
	count(&api->limited);
	snprintf(num, sizeof(num), "%.0f", retry < 1 ? 1.0 : retry + 0.5);
	http_reply_header(req, "Retry-After", num);
	reply_error(req, 429, "too many failed authentications from this address", NULL);
	return 0;
}

/* ---- the job queue ---- */

static void job_free(struct job *j)
{
	if (!j)
		return;
	free(j->path);
	free(j->to);
	buf_release(&j->body);
	free(j);
}

/* Queues j (whose request is deferred); answers 503 itself when the queue is full. */
static void enqueue(struct syncapi *api, struct job *j)
{
	pthread_mutex_lock(&api->lock);
	if (api->queued >= MAX_QUEUED || api->stop) {
		pthread_mutex_unlock(&api->lock);
		http_deferred_header(j->d, "Retry-After", "1");
		dreply_error(j->d, 503, "too much work queued; try again", NULL);
		job_free(j);
		return;
	}
	if (api->tail)
		api->tail->next = j;
	else
		api->head = j;
	api->tail = j;
	api->queued++;
	pthread_cond_signal(&api->work);
	pthread_mutex_unlock(&api->lock);
}

static int is_busy(struct syncapi *api, const char *path)
{
	size_t i;

	if (!path)
		return 0;
	for (i = 0; i < api->nbusy; i++)
		if (strcmp(api->busy[i], path) == 0)
			return 1;
	return 0;
}

/* Waits until neither a nor b (may be NULL) is being written, then claims both. */
static void claim(struct syncapi *api, const char *a, const char *b)
{
	pthread_mutex_lock(&api->lock);
	while (is_busy(api, a) || is_busy(api, b))
		pthread_cond_wait(&api->released, &api->lock);
	ALLOC_GROW(api->busy, api->nbusy + 2, api->abusy);
	if (a)
		api->busy[api->nbusy++] = (char *)a;
	if (b)
		api->busy[api->nbusy++] = (char *)b;
	pthread_mutex_unlock(&api->lock);
}

static void release(struct syncapi *api, const char *a, const char *b)
{
	size_t i;

	pthread_mutex_lock(&api->lock);
	for (i = 0; i < api->nbusy;) {
		if (api->busy[i] == a || api->busy[i] == b)
			api->busy[i] = api->busy[--api->nbusy];
		else
			i++;
	}
	pthread_cond_broadcast(&api->released);
	pthread_mutex_unlock(&api->lock);
}

/* ---- the file system ---- */

/* The outcome of a job, for its answer. */
struct outcome {
	int status;
	const char *error;           /* static message for a 4xx/5xx */
	char current[SHA256_HEX_SIZE]; /* the file's hash before, "" when missing */
	char sha[SHA256_HEX_SIZE];   /* a PUT's new hash */
	off_t size;
	uint64_t version;
};

static const char *dir_error(int err)
{
	switch (err) {
	case ENOTDIR: return "a parent of the path is a file";
	case ELOOP: return "a parent of the path is a symbolic link";
	case ENOENT: return "no such file";
	case ENAMETOOLONG: return "path too long for the file system";
	case ENOSPC: return "no space left on the server";
	case EDQUOT: return "over the server's disk quota";
	case EROFS: return "the vault is read-only";
	case EACCES:
	case EPERM: return "permission denied on the server";
	default: return "cannot write on the server";
	}
}

static int dir_status(int err)
{
	switch (err) {
	case ENOTDIR:
	case ELOOP: return 409;
	case ENOENT: return 404;
	case ENOSPC:
	case EDQUOT: return 507;
	case ENAMETOOLONG: return 400;
	default: return 500;
	}
}

/*
 * The folder holding path: opened from the vault root one segment at a
 * time without following symlinks; with create, missing folders are made,
 * each fsynced into its parent. Returns a descriptor (the caller closes
 * it) and points *leaf into path at the file name; -1 with errno.
 */
static int open_parent(struct syncapi *api, const char *path, int create, const char **leaf)
{
	struct buf seg = BUF_INIT;
	const char *p = path, *slash;
	int fd, next = -1, saved, ok = 0;

	/*
	 * Opening the vault folder again: openat(root, ".") gives a descriptor
	 * of our own, so the caller closes whatever it gets.
	 * Rejected: handing out root_fd itself (every caller would need to know
	 * not to close it).
	 */
	fd = openat(api->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((slash = strchr(p, '/'))) {
		buf_reset(&seg);
		buf_add(&seg, p, (size_t)(slash - p));
		/*
		 * Opening one folder on the way: O_NOFOLLOW so a symlink in the vault
		 * cannot redirect the write, O_DIRECTORY so a file there is ENOTDIR.
		 * Rejected: building a full path and checking it with realpath()
		 * (racy: a folder swapped for a symlink after the check is followed).
		 */
		next = openat(fd, seg.ptr, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			if ((mkdirat(fd, seg.ptr, 0755) < 0 && errno != EEXIST) || fsync(fd) < 0)
				goto out;
			next = openat(fd, seg.ptr, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0)
			goto out;
		if (close(fd) < 0) {
			fd = next;
			goto out;
		}
		fd = next;
		next = -1;
		p = slash + 1;
	}
	*leaf = p;
	ok = 1;
out:
	saved = errno;
	buf_release(&seg);
	if (ok)
		return fd;
	close(fd); /* already failing: the first error is the one reported */
	errno = saved;
	return -1;
}

/*
 * What is at leaf in dirfd: 0 missing, 1 a regular file (with its hash in
 * out->current), or -1 with the outcome set (a folder, a symlink, an
 * unreadable file).
 */
static int current_file(struct syncapi *api, int dirfd, const char *leaf, const char *path,
			struct outcome *out, struct stat *st)
{
	out->current[0] = '\0';
	if (fstatat(dirfd, leaf, st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		out->status = 500;
		out->error = "cannot read the file on the server";
		return -1;
	}
	if (S_ISDIR(st->st_mode)) {
		out->status = 409;
		out->error = "the path is a folder on the server";
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		out->status = 409;
		out->error = "the path is a symbolic link or special file on the server";
		return -1;
	}
	if (hash_cache_file(api->cache, dirfd, leaf, path, out->current, st) < 0) {
		out->status = 500;
		out->error = "cannot read the file on the server";
		return -1;
	}
	return 1;
}

/* If-Match and If-None-Match against the current file; 0 when they hold. */
static int preconditions(const struct job *j, int exists, struct outcome *out)
{
	if ((j->if_match == C_MATCH_ANY && !exists) ||
	    (j->if_match == C_MATCH && (!exists || strcmp(j->match, out->current) != 0)) ||
	    (j->if_none_match && exists)) {
		out->status = 412;
		out->error = exists ? "the file on the server has changed" : "the file does not exist on the server";
		return -1;
	}
	return 0;
}

static uint64_t notify(struct syncapi *api, const char *a, const char *b)
{
	const char *paths[2] = { a, b };

	/*
	 * The site reads quire.yml only on a full load. The reload is queued
	 * first: then the version loader_notify() predicts is that reload's or
	 * a later one; queued after, a build taking the paths alone could slip
	 * in between and carry the predicted version without the new settings.
	 */
	if (strcmp(a, "quire.yml") == 0 || (b && strcmp(b, "quire.yml") == 0))
		loader_reload(api->loader);
	return loader_notify(api->loader, paths, b ? 2 : 1);
}

/* A failed system call while writing: logged, and the outcome says what. */
static void io_failed(const struct job *j, struct outcome *out, const char *what)
{
	int err = errno;

	out->status = dir_status(err) == 507 ? 507 : 500;
	out->error = dir_error(err);
	log_error("sync: %s: %s: %s", j->path, what, strerror(err));
}

/* Takes a spare on file system dev (a rename cannot cross them). 0, or -1 when there is none. */
static int take_spare(struct syncapi *api, dev_t dev, struct spare *out)
{
	size_t i;
	int found = -1;

	pthread_mutex_lock(&api->lock);
	for (i = api->nspares; i-- > 0;) {
		if (api->spares[i].dev == dev) {
			*out = api->spares[i];
			api->spares[i] = api->spares[--api->nspares];
			found = 0;
			break;
		}
	}
	pthread_mutex_unlock(&api->lock);
	return found;
}

/* Keeps a spare; -1 when the pool is full. */
static int keep_spare(struct syncapi *api, struct spare *sp)
{
	int kept = -1;

	pthread_mutex_lock(&api->lock);
	if (api->nspares < SPARES_MAX) {
		api->spares[api->nspares++] = *sp;
		kept = 0;
	}
	pthread_mutex_unlock(&api->lock);
	return kept;
}

/*
 * Opens spare sp (in the spares folder spares_fd) as a temporary file:
 * emptied, with mode. Only the inode we linked, with no other link and
 * still a regular file, is written; else its name is removed and -1
 * returned.
 */
static int open_spare(int spares_fd, const struct spare *sp, mode_t mode)
{
	struct stat st;
	int fd = openat(spares_fd, sp->name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == sp->dev &&
	    st.st_ino == sp->ino && st.st_nlink == 1 && ftruncate(fd, 0) == 0 &&
	    fchmod(fd, mode) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	unlinkat(spares_fd, sp->name, 0); /* a name of ours; removing it touches no other file */
	return -1;
}

static void do_put(struct syncapi *api, struct job *j, struct outcome *out)
{
	struct buf tmp = BUF_INIT;
	struct spare sp, kept;
	const char *leaf;
	struct stat st;
	int dirfd = -1, fd = -1, tmp_dir = -1, exists, created = 0, renamed = 0, linked = 0;
	mode_t mode = 0644;

	hash_sha256_hex(j->body.ptr, j->body.len, out->sha);
	out->size = (off_t)j->body.len;
	dirfd = open_parent(api, j->path, 1, &leaf);
	if (dirfd < 0) {
		out->status = dir_status(errno);
		out->error = dir_error(errno);
		goto out;
	}
	exists = current_file(api, dirfd, leaf, j->path, out, &st);
	/*
	 * An empty folder where the file goes is what a client leaves when it
	 * deletes the last file of a folder that becomes a file: it holds
	 * nothing, so the file takes its place (a folder with anything in it
	 * stays a 409).
	 */
	if (exists < 0 && out->status == 409 && S_ISDIR(st.st_mode) &&
	    unlinkat(dirfd, leaf, AT_REMOVEDIR) == 0) {
		out->status = 0;
		out->error = NULL;
		exists = 0;
	}
	if (exists < 0 || preconditions(j, exists, out) < 0)
		goto out;
	if (exists)
		mode = st.st_mode & 07777;
	/*
	 * Creating the temporary file: in the target's folder (a rename only
	 * replaces atomically within one file system), named with a leading
	 * '.' so nothing ever loads it, O_EXCL so two writers never share it,
	 * O_NOFOLLOW so a planted symlink cannot take the bytes; the mode of the
	 * file it replaces is kept.
	 * Rejected: mkstemp() (it takes a path, not a folder descriptor).
	 * A spare comes first (see "Spares" above).
	 */
	if (api->spares_fd >= 0 && fstat(dirfd, &st) == 0 && take_spare(api, st.st_dev, &sp) == 0 &&
	    (fd = open_spare(api->spares_fd, &sp, mode)) >= 0) {
		buf_adds(&tmp, sp.name);
		tmp_dir = api->spares_fd;
	}
	while (fd < 0) {
		tmp_dir = dirfd;
		buf_reset(&tmp);
		buf_addf(&tmp, TMP_PREFIX "%ld-%u", (long)getpid(),
			 atomic_fetch_add(&api->tmp_counter, 1));
		fd = openat(dirfd, tmp.ptr, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    mode);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		io_failed(j, out, "create");
		goto out;
	}
	created = 1;
	if (write_fd(fd, j->body.ptr, j->body.len) < 0 || fsync(fd) < 0) {
		io_failed(j, out, "write");
		goto out;
	}
	/* the file replaced keeps its inode as a spare (EXDEV: the data folder is elsewhere) */
	if (exists && api->spares_fd >= 0) {
		struct stat ls;
		snprintf(kept.name, sizeof(kept.name), "s%ld-%u", (long)getpid(),
			 atomic_fetch_add(&api->tmp_counter, 1));
		linked = linkat(dirfd, leaf, api->spares_fd, kept.name, 0) == 0;
		if (linked && (fstatat(api->spares_fd, kept.name, &ls, AT_SYMLINK_NOFOLLOW) < 0 ||
			       !S_ISREG(ls.st_mode))) {
			unlinkat(api->spares_fd, kept.name, 0);
			linked = 0;
		}
		if (linked) {
			kept.dev = ls.st_dev;
			kept.ino = ls.st_ino;
		}
	}
	if (renameat(tmp_dir, tmp.ptr, dirfd, leaf) < 0) {
		io_failed(j, out, "rename");
		goto out;
	}
	renamed = 1;
	if (fsync(dirfd) < 0 || fstat(fd, &st) < 0) {
		io_failed(j, out, "fsync");
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		io_failed(j, out, "close");
		goto out;
	}
	fd = -1;
	hash_cache_put(api->cache, j->path, &st, out->sha, hash_cache_now_ns());
	out->version = notify(api, j->path, NULL);
	out->status = exists ? 200 : 201;
	count(&api->puts);
	if (linked && keep_spare(api, &kept) == 0)
		linked = 0;
out:
	if (linked && unlinkat(api->spares_fd, kept.name, 0) < 0) /* not kept: the old inode goes */
		log_warn("sync: %s: cannot remove spare %s: %s", j->path, kept.name, strerror(errno));
	if (fd >= 0)
		close(fd); /* already failing */
	if (created && !renamed && unlinkat(tmp_dir, tmp.ptr, 0) < 0)
		log_warn("sync: %s: cannot remove %s: %s", j->path, tmp.ptr, strerror(errno));
	if (renamed && out->status >= 300) {
		/* the new bytes are in place but not known durable: say so to the loader */
		hash_cache_remove(api->cache, j->path);
		notify(api, j->path, NULL);
	}
	if (dirfd >= 0 && close(dirfd) < 0)
		log_warn("sync: %s: close: %s", j->path, strerror(errno));
	buf_release(&tmp);
}

static void do_delete(struct syncapi *api, struct job *j, struct outcome *out)
{
	const char *leaf;
	struct stat st;
	int dirfd, exists;

	dirfd = open_parent(api, j->path, 0, &leaf);
	if (dirfd < 0) {
		out->status = errno == ENOENT ? 404 : dir_status(errno);
		out->error = errno == ENOENT ? "no such file" : dir_error(errno);
		return;
	}
	exists = current_file(api, dirfd, leaf, j->path, out, &st);
	if (exists < 0)
		goto out;
	if (!exists) {
		out->status = 404;
		out->error = "no such file";
		goto out;
	}
	if (preconditions(j, exists, out) < 0)
		goto out;
	if (unlinkat(dirfd, leaf, 0) < 0 || fsync(dirfd) < 0) {
		out->status = 500;
		out->error = "cannot delete the file on the server";
		log_error("sync: %s: %s", j->path, strerror(errno));
		goto out;
	}
	hash_cache_remove(api->cache, j->path);
	out->version = notify(api, j->path, NULL);
	out->status = 200;
	count(&api->deletes);
out:
	if (close(dirfd) < 0)
		log_warn("sync: %s: close: %s", j->path, strerror(errno));
}

static void do_move(struct syncapi *api, struct job *j, struct outcome *out)
{
	const char *from_leaf, *to_leaf;
	struct stat st, tst;
	int from_dir = -1, to_dir = -1, exists;

	from_dir = open_parent(api, j->path, 0, &from_leaf);
	if (from_dir < 0) {
		out->status = errno == ENOENT ? 404 : dir_status(errno);
		out->error = errno == ENOENT ? "no such file" : dir_error(errno);
		goto out;
	}
	exists = current_file(api, from_dir, from_leaf, j->path, out, &st);
	if (exists < 0)
		goto out;
	if (!exists) {
		out->status = 404;
		out->error = "no such file";
		goto out;
	}
	if (preconditions(j, exists, out) < 0)
		goto out;
	to_dir = open_parent(api, j->to, 1, &to_leaf);
	if (to_dir < 0) {
		out->status = dir_status(errno);
		out->error = dir_error(errno);
		goto out;
	}
	if (fstatat(to_dir, to_leaf, &tst, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) {
		out->status = 409;
		out->error = "the target exists on the server";
		goto out;
	}
	if (renameat(from_dir, from_leaf, to_dir, to_leaf) < 0 || fsync(to_dir) < 0 ||
	    fsync(from_dir) < 0) {
		out->status = dir_status(errno) == 507 ? 507 : 500;
		out->error = "cannot move the file on the server";
		log_error("sync: move %s -> %s: %s", j->path, j->to, strerror(errno));
		goto out;
	}
	hash_cache_remove(api->cache, j->path);
	hash_cache_remove(api->cache, j->to);
	out->version = notify(api, j->path, j->to);
	out->status = 200;
	count(&api->moves);
out:
	if (from_dir >= 0 && close(from_dir) < 0)
		log_warn("sync: %s: close: %s", j->path, strerror(errno));
	if (to_dir >= 0 && close(to_dir) < 0)
		log_warn("sync: %s: close: %s", j->to, strerror(errno));
}

/* ---- the manifest ---- */

struct manifest_work {
	struct syncapi *api;
	struct vault_scan *scan;
	char (*sha)[SHA256_HEX_SIZE];
	off_t *size;
	char *ok;
	atomic_size_t hashed;
};

static void hash_one(void *ctx, size_t i)
{
	struct manifest_work *m = ctx;
	const struct vault_file *f = &m->scan->files[i];
	struct stat st;
	int rc = hash_cache_file(m->api->cache, m->api->root_fd, f->disk, f->path, m->sha[i], &st);

	m->ok[i] = rc >= 0;
	m->size[i] = rc >= 0 ? st.st_size : 0;
	if (rc > 0)
		atomic_fetch_add(&m->hashed, 1);
}

static void save_cache(struct syncapi *api)
{
	pthread_mutex_lock(&api->save_lock);
	if (hash_cache_dirty(api->cache) && hash_cache_save(api->cache, api->hashes_file) < 0)
		log_warn("sync: the hash cache was not saved; the next start hashes again");
	pthread_mutex_unlock(&api->save_lock);
}

static void do_manifest(struct syncapi *api, struct job *j)
{
	struct vault_scan scan = VAULT_SCAN_INIT;
	struct diag_list diags;
	struct manifest_work m;
	struct buf b = BUF_INIT;
	uint64_t version = loader_version(api->loader), pass;
	size_t i, n = 0;

	diag_list_init(&diags);
	memset(&m, 0, sizeof(m));
	pass = hash_cache_mark(api->cache);
	if (vault_scan(api->vault, NULL, &scan, &diags) < 0) {
		dreply_error(j->d, 500, "cannot read the vault", NULL);
		goto out;
	}
	m.api = api;
	m.scan = &scan;
	m.sha = xcalloc(scan.n + 1, sizeof(*m.sha));
	m.size = xcalloc(scan.n + 1, sizeof(*m.size));
	m.ok = xcalloc(scan.n + 1, 1);
	atomic_init(&m.hashed, 0);
	parallel_for(scan.n, parallel_cpus(), hash_one, &m);
	hash_cache_sweep(api->cache, pass);
	buf_grow(&b, 64 + scan.n * 128);
	buf_addf(&b, "{\"version\":%" PRIu64 ",\"files\":{", version);
	for (i = 0; i < scan.n; i++) {
		if (!m.ok[i])
			continue; /* gone since the scan */
		if (n++)
			buf_addc(&b, ',');
		buf_addc(&b, '"');
		buf_adds_json(&b, scan.files[i].path);
		buf_addf(&b, "\":{\"sha256\":\"%s\",\"size\":%lld}", m.sha[i], (long long)m.size[i]);
	}
	buf_adds(&b, "}}\n");
	atomic_fetch_add(&api->hashed, (uint64_t)atomic_load(&m.hashed));
	count(&api->manifests);
	http_deferred_reply_buf(j->d, 200, JSON_TYPE, &b);
	if (atomic_load(&m.hashed))
		log_debug("sync: manifest of %zu files hashed %zu", n, (size_t)atomic_load(&m.hashed));
	save_cache(api);
out:
	free(m.sha);
	free(m.size);
	free(m.ok);
	vault_scan_release(&scan);
	diag_list_release(&diags);
}

/* ---- running jobs ---- */

static void answer(struct syncapi *api, struct job *j, struct outcome *out)
{
	struct buf b = BUF_INIT;

	if (out->status >= 300) {
		buf_adds(&b, "{\"error\":\"");
		buf_adds_json(&b, out->error ? out->error : "failed");
		buf_adds(&b, "\",\"path\":\"");
		buf_adds_json(&b, j->path);
		buf_addc(&b, '"');
		if (out->status == 412)
			buf_addf(&b, ",\"sha256\":%s%s%s", out->current[0] ? "\"" : "",
				 out->current[0] ? out->current : "null", out->current[0] ? "\"" : "");
		buf_adds(&b, "}\n");
	} else if (j->kind == J_PUT) {
		buf_adds(&b, "{\"path\":\"");
		buf_adds_json(&b, j->path);
		buf_addf(&b, "\",\"sha256\":\"%s\",\"size\":%lld,\"version\":%" PRIu64 "}\n", out->sha,
			 (long long)out->size, out->version);
		{
			char etag[SHA256_HEX_SIZE + 2];
			snprintf(etag, sizeof(etag), "\"%s\"", out->sha);
			http_deferred_header(j->d, "ETag", etag);
		}
	} else if (j->kind == J_MOVE) {
		buf_adds(&b, "{\"from\":\"");
		buf_adds_json(&b, j->path);
		buf_adds(&b, "\",\"to\":\"");
		buf_adds_json(&b, j->to);
		buf_addf(&b, "\",\"version\":%" PRIu64 "}\n", out->version);
	} else {
		buf_adds(&b, "{\"path\":\"");
		buf_adds_json(&b, j->path);
		buf_addf(&b, "\",\"version\":%" PRIu64 "}\n", out->version);
	}
	http_deferred_reply_buf(j->d, out->status, JSON_TYPE, &b);
}

static void run_job(struct syncapi *api, struct job *j)
{
	struct outcome out;

	memset(&out, 0, sizeof(out));
	switch (j->kind) {
	case J_MANIFEST:
		do_manifest(api, j);
		return;
	case J_PUT:
		claim(api, j->path, NULL);
		do_put(api, j, &out);
		release(api, j->path, NULL);
		break;
	case J_DELETE:
		claim(api, j->path, NULL);
		do_delete(api, j, &out);
		release(api, j->path, NULL);
		break;
	case J_MOVE:
		claim(api, j->path, j->to);
		do_move(api, j, &out);
		release(api, j->path, j->to);
		break;
	}
	answer(api, j, &out);
}

static void *worker_main(void *arg)
{
	struct syncapi *api = arg;

	prctl(PR_SET_NAME, "quire-sync", 0, 0, 0);
	/*
	 * SCHED_BATCH: the same share of the CPU, but a writer woken by the
	 * serving thread (a PUT queued) does not preempt it. When it did, the
	 * serving thread was left runnable with a lag the scheduler (EEVDF)
	 * held against it, and once the writer slept on the disk the
	 * SCHED_IDLE loader was picked instead, until the next tick: reads
	 * waited up to 3.6 ms (traced; docs/performance.md). With spares and
	 * batch writers the p99 of reads during syncs stayed within twice idle
	 * in 11 runs of 12; with batch writers alone in none of 6.
	 */
	{
		struct sched_param none = { .sched_priority = 0 };
		int rc = pthread_setschedparam(pthread_self(), SCHED_BATCH, &none);
		if (rc != 0)
			log_debug("sync: writers keep the default policy: %s", strerror(rc));
	}
	pthread_mutex_lock(&api->lock);
	for (;;) {
		struct job *j;

		while (!api->head && !api->stop)
			pthread_cond_wait(&api->work, &api->lock);
		if (!api->head)
			break;
		j = api->head;
		api->head = j->next;
		if (!api->head)
			api->tail = NULL;
		api->queued--;
		if (api->stop) {
			pthread_mutex_unlock(&api->lock);
			dreply_error(j->d, 503, "the server is stopping", NULL);
		} else {
			pthread_mutex_unlock(&api->lock);
			run_job(api, j);
		}
		job_free(j);
		pthread_mutex_lock(&api->lock);
	}
	pthread_mutex_unlock(&api->lock);
	return NULL;
}

/* ---- long polls ---- */

static void version_body(struct buf *b, uint64_t v)
{
	buf_addf(b, "{\"version\":%" PRIu64 "}\n", v);
}

static void *waiter_main(void *arg)
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
		dreply_error(w->d, 503, "the server is stopping", NULL);
		free(w);
	}
	pthread_mutex_unlock(&api->wlock);
	return NULL;
}

/* ---- handlers ---- */

/* The value of name=... in a query string, as a number; -1 when absent or not a number. */
static long long query_num(const char *q, const char *name)
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

static void handle_wait(struct syncapi *api, struct http_request *req, const char *query)
{
	long long want = query_num(query, "version"), timeout = query_num(query, "timeout");
	uint64_t live = loader_version(api->loader);
	struct waiter *w;
	struct buf b = BUF_INIT;

	if (want < 0 || timeout < -1) {
		reply_error(req, 400, "wait takes version=N and optionally timeout=MS", NULL);
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
		dreply_error(w->d, 503, "the server is stopping", NULL);
		free(w);
		return;
	}
	w->next = api->waiters;
	api->waiters = w;
	pthread_cond_signal(&api->wcond);
	pthread_mutex_unlock(&api->wlock);
}

/* An entity tag of If-Match / If-None-Match: "*" or one quoted SHA-256. */
static int parse_tag(const char *v, enum cond *kind, char out[SHA256_HEX_SIZE])
{
	size_t i;

	while (*v == ' ' || *v == '\t')
		v++;
	if (v[0] == '*' && (!v[1] || v[1] == ' ')) {
		*kind = C_MATCH_ANY;
		return 0;
	}
	if (v[0] != '"')
		return -1;
	for (i = 0; i < 64; i++) {
		char c = v[1 + i];
		if (c >= 'A' && c <= 'F')
			c = (char)(c - 'A' + 'a');
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -1;
		out[i] = c;
	}
	out[64] = '\0';
	if (v[65] != '"')
		return -1;
	for (v += 66; *v == ' ' || *v == '\t'; v++)
		;
	if (*v)
		return -1;
	*kind = C_MATCH;
	return 0;
}

static void handle_file(struct syncapi *api, struct http_request *req, const char *raw,
			size_t len)
{
	enum http_method m = http_request_method(req);
	const char *why, *im, *inm;
	struct buf path = BUF_INIT;
	struct job *j;

	if (m != HTTP_PUT && m != HTTP_DELETE) {
		http_reply_header(req, "Allow", "PUT, DELETE");
		reply_error(req, 405, "files take PUT and DELETE", NULL);
		return;
	}
	if (syncapi_decode_path(raw, len, &path, &why) < 0) {
		reply_error(req, 400, why, NULL);
		buf_release(&path);
		return;
	}
	j = xcalloc(1, sizeof(*j));
	j->kind = m == HTTP_PUT ? J_PUT : J_DELETE;
	j->path = buf_detach(&path, NULL);
	im = http_request_header(req, "If-Match");
	inm = http_request_header(req, "If-None-Match");
	if (im && parse_tag(im, &j->if_match, j->match) < 0) {
		reply_error(req, 400, "If-Match takes * or one quoted SHA-256", j->path);
		job_free(j);
		return;
	}
	if (inm) {
		enum cond k = C_NONE;
		char tag[SHA256_HEX_SIZE];
		if (parse_tag(inm, &k, tag) < 0 || k != C_MATCH_ANY) {
			reply_error(req, 400, "If-None-Match takes only *", j->path);
			job_free(j);
			return;
		}
		j->if_none_match = 1;
	}
	buf_init(&j->body, 0);
	if (j->kind == J_PUT && http_request_take_body(req, &j->body) > api->max_upload) {
		reply_error(req, 413, "the file is larger than the server accepts", j->path);
		job_free(j);
		return;
	}
	j->d = http_request_defer(req);
	enqueue(api, j);
}

static void handle_move(struct syncapi *api, struct http_request *req)
{
	struct buf key = BUF_INIT, val = BUF_INIT, from = BUF_INIT, to = BUF_INIT;
	struct json_reader r;
	const char *body, *why = NULL, *what = NULL;
	struct job *j;
	size_t len;
	int rc, have_from = 0, have_to = 0;

	if (http_request_method(req) != HTTP_POST) {
		http_reply_header(req, "Allow", "POST");
		reply_error(req, 405, "move takes POST", NULL);
		return;
	}
	body = http_request_body(req, &len);
	json_init(&r, body, len);
	rc = json_object(&r);
	while (rc == 0 && (rc = json_key(&r, &key)) > 0) {
		if (strcmp(key.ptr, "from") == 0 || strcmp(key.ptr, "to") == 0) {
			int is_from = key.ptr[0] == 'f';
			if (json_string(&r, &val) < 0)
				break;
			if (syncapi_check_path(val.ptr, val.len, is_from ? &from : &to, &why) < 0) {
				what = is_from ? "from" : "to";
				break;
			}
			if (is_from)
				have_from = 1;
			else
				have_to = 1;
		} else if (json_skip(&r) < 0) {
			break;
		}
		rc = 0;
	}
	if (what) {
		struct buf msg = BUF_INIT;
		buf_addf(&msg, "%s: %s", what, why);
		reply_error(req, 400, msg.ptr, NULL);
		buf_release(&msg);
	} else if (rc != 0 || json_end(&r) < 0 || !have_from || !have_to) {
		reply_error(req, 400, "move takes {\"from\":\"path\",\"to\":\"path\"}", NULL);
	} else if (strcmp(from.ptr, to.ptr) == 0) {
		reply_error(req, 400, "from and to are the same path", from.ptr);
	} else {
		j = xcalloc(1, sizeof(*j));
		j->kind = J_MOVE;
		j->path = buf_detach(&from, NULL);
		j->to = buf_detach(&to, NULL);
		buf_init(&j->body, 0);
		j->d = http_request_defer(req);
		enqueue(api, j);
	}
	buf_release(&key);
	buf_release(&val);
	buf_release(&from);
	buf_release(&to);
}

static void handle(struct http_request *req, void *ctx)
{
	struct syncapi *api = ctx;
	const char *target, *query;
	size_t len;

	if (!authenticate(api, req))
		return;
	target = http_request_target(req);
	len = strcspn(target, "?");
	query = target[len] == '?' ? target + len + 1 : NULL;
	if (len >= FILES_LEN && strncmp(target, FILES_PREFIX, FILES_LEN) == 0 &&
	    (len == FILES_LEN || target[FILES_LEN] == '/')) {
		/* "/api/v1/files" alone is the empty path */
		if (len == FILES_LEN)
			handle_file(api, req, target + len, 0);
		else
			handle_file(api, req, target + FILES_LEN + 1, len - FILES_LEN - 1);
	} else if (len == strlen(API_PREFIX "manifest") &&
		   strncmp(target, API_PREFIX "manifest", len) == 0) {
		struct job *j;
		if (http_request_method(req) != HTTP_GET) {
			http_reply_header(req, "Allow", "GET");
			reply_error(req, 405, "the manifest takes GET", NULL);
			return;
		}
		j = xcalloc(1, sizeof(*j));
		j->kind = J_MANIFEST;
		buf_init(&j->body, 0);
		j->d = http_request_defer(req);
		enqueue(api, j);
	} else if (len == strlen(API_PREFIX "move") && strncmp(target, API_PREFIX "move", len) == 0) {
		handle_move(api, req);
	} else if (len == strlen(API_PREFIX "wait") && strncmp(target, API_PREFIX "wait", len) == 0) {
		if (http_request_method(req) != HTTP_GET) {
			http_reply_header(req, "Allow", "GET");
			reply_error(req, 405, "wait takes GET", NULL);
			return;
		}
		handle_wait(api, req, query);
	} else {
		reply_error(req, 404, "no such API endpoint", NULL);
	}
}

/* ---- setup ---- */

/*
 * Opens <data dir>/spares for spares (see "Spares" at the top), made if
 * missing and emptied of what an earlier run left; -1 (writes then create
 * their files) when it cannot be.
 */
static int open_spares(const char *path)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -1;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if ((d = fdopendir(dup(fd)))) {
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				unlinkat(fd, de->d_name, 0);
		closedir(d);
	}
	return fd;
}

/* Deletes the temporary files a crash left in the vault's folders (dot-folders skipped). */
static void remove_leftovers(struct syncapi *api)
{
	char **queue = NULL;
	size_t qn = 0, qa = 0, qi = 0, removed = 0;

	ALLOC_GROW(queue, 1, qa);
	queue[qn++] = xstrdup(".");
	while (qi < qn) {
		char *rel = queue[qi++];
		struct dirent *de;
		DIR *dir;
		int fd;

		/*
		 * Opening each folder under the vault to look for leftovers, relative
		 * to the vault's descriptor: O_NOFOLLOW so a symlinked folder is not
		 * walked (the scanner does not follow them either, and a link could
		 * lead out of the vault). Dot-folders are skipped: we never write there.
		 * Rejected: vault_scan() (it lists files, and skips the dot-files
		 * that are exactly what is looked for).
		 */
		fd = openat(api->root_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || !(dir = fdopendir(fd))) {
			if (fd >= 0)
				close(fd); /* fdopendir failed: nothing else holds it */
			continue;
		}
		while ((de = readdir(dir))) {
			if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0) {
				if (unlinkat(dirfd(dir), de->d_name, 0) < 0)
					log_warn("sync: %s/%s: %s", rel, de->d_name, strerror(errno));
				else
					removed++;
			} else if (de->d_name[0] != '.' && (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN)) {
				struct stat st;
				if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				    S_ISDIR(st.st_mode)) {
					ALLOC_GROW(queue, qn + 1, qa);
					queue[qn] = xmalloc(strlen(rel) + strlen(de->d_name) + 2);
					sprintf(queue[qn++], "%s/%s", rel, de->d_name);
				}
			}
		}
		if (closedir(dir) < 0)
			log_warn("sync: %s: %s", rel, strerror(errno));
	}
	while (qn)
		free(queue[--qn]);
	free(queue);
	if (removed)
		log_info("sync: removed %zu temporary files left by an interrupted write", removed);
}

struct syncapi *syncapi_new(const struct syncapi_options *opt, struct loader *loader)
{
	struct syncapi *api = xcalloc(1, sizeof(*api));
	struct buf dir = BUF_INIT;
	int i, per_min;

	api->root_fd = -1;
	api->spares_fd = -1;
	api->loader = loader;
	pthread_mutex_init(&api->block_lock, NULL);
	pthread_mutex_init(&api->lock, NULL);
	pthread_cond_init(&api->work, NULL);
	pthread_cond_init(&api->released, NULL);
	pthread_mutex_init(&api->wlock, NULL);
	pthread_cond_init(&api->wcond, NULL);
	pthread_mutex_init(&api->save_lock, NULL);
	api->cache = hash_cache_new();
	if (!opt->token || !opt->token[0]) {
		log_error("sync: an empty token would let anyone write the vault");
		goto fail;
	}
	hash_sha256_hex(opt->token, strlen(opt->token), api->token_sha);
	api->vault = xstrdup(opt->vault);
	api->max_upload = opt->max_upload ? opt->max_upload : SYNCAPI_DEFAULT_MAX_UPLOAD;
	per_min = opt->auth_failures > 0 ? opt->auth_failures : DEFAULT_AUTH_FAILURES;
	api->failures = rate_limiter_new(per_min / 60.0, per_min);
	/*
	 * Opening the vault folder: every file operation is relative to this
	 * descriptor, so renaming or replacing the vault's path under a running
	 * server does not redirect writes.
	 * Rejected: joining the vault path to each file's path (every write would
	 * resolve the whole path again, symlinks included).
	 */
	api->root_fd = open(api->vault, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (api->root_fd < 0) {
		log_error("sync: %s: %s", api->vault, strerror(errno));
		goto fail;
	}
	if (opt->data_dir)
		buf_adds(&dir, opt->data_dir);
	else
		buf_addf(&dir, "%s/.quire", api->vault);
	if (mkdir(dir.ptr, 0755) < 0 && errno != EEXIST) {
		log_error("sync: %s: %s", dir.ptr, strerror(errno));
		goto fail;
	}
	buf_adds(&dir, "/spares");
	api->spares_fd = open_spares(dir.ptr);
	buf_setlen(&dir, dir.len - strlen("/spares"));
	buf_adds(&dir, "/hashes");
	api->hashes_file = buf_detach(&dir, NULL);
	if (hash_cache_load(api->cache, api->hashes_file) < 0)
		log_warn("sync: starting with an empty hash cache");
	remove_leftovers(api);

	api->nthreads = opt->threads > 0 ? opt->threads : DEFAULT_THREADS;
	api->threads = xcalloc((size_t)api->nthreads, sizeof(*api->threads));
	for (i = 0; i < api->nthreads; i++) {
		if (pthread_create(&api->threads[i], NULL, worker_main, api) != 0) {
			log_error("sync: cannot start a thread");
			api->nthreads = i;
			goto fail;
		}
	}
	if (pthread_create(&api->wthread, NULL, waiter_main, api) != 0) {
		log_error("sync: cannot start a thread");
		goto fail;
	}
	api->wstarted = 1;
	return api;
fail:
	buf_release(&dir);
	syncapi_free(api);
	return NULL;
}

int syncapi_register(struct syncapi *api, struct http_server *srv)
{
	return http_server_add_raw_handler(srv, API_PREFIX, handle, api);
}

void syncapi_get_stats(struct syncapi *api, struct syncapi_stats *out)
{
	out->puts = atomic_load(&api->puts);
	out->deletes = atomic_load(&api->deletes);
	out->moves = atomic_load(&api->moves);
	out->manifests = atomic_load(&api->manifests);
	out->hashed = atomic_load(&api->hashed);
	out->auth_failures = atomic_load(&api->auth_failures);
	out->limited = atomic_load(&api->limited);
}

void syncapi_free(struct syncapi *api)
{
	int i;

	if (!api)
		return;
	pthread_mutex_lock(&api->lock);
	api->stop = 1;
	pthread_cond_broadcast(&api->work);
	pthread_mutex_unlock(&api->lock);
	for (i = 0; i < api->nthreads; i++)
		pthread_join(api->threads[i], NULL);
	free(api->threads);
	pthread_mutex_lock(&api->wlock);
	api->wstop = 1;
	pthread_cond_signal(&api->wcond);
	pthread_mutex_unlock(&api->wlock);
	if (api->wstarted)
		pthread_join(api->wthread, NULL);
	if (api->hashes_file)
		save_cache(api);
	for (i = 0; i < (int)api->nspares; i++) /* the spares go with the server */
		unlinkat(api->spares_fd, api->spares[i].name, 0);
	if (api->spares_fd >= 0)
		close(api->spares_fd);
	if (api->root_fd >= 0 && close(api->root_fd) < 0)
		log_warn("sync: %s: %s", api->vault, strerror(errno));
	hash_cache_free(api->cache);
	rate_limiter_free(api->failures);
	free(api->busy);
	free(api->hashes_file);
	free(api->vault);
	pthread_mutex_destroy(&api->block_lock);
	pthread_mutex_destroy(&api->lock);
	pthread_cond_destroy(&api->work);
	pthread_cond_destroy(&api->released);
	pthread_mutex_destroy(&api->wlock);
	pthread_cond_destroy(&api->wcond);
	pthread_mutex_destroy(&api->save_lock);
	free(api);
}
