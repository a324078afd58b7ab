/*
 * syncapi-jobs.c: the work of the sync API that runs off the HTTP loops.
 *
 * Jobs. A pool of threads takes jobs in order. Writes to one path are
 * serialized by a set of busy paths (a move holds both of its paths, and
 * a folder's move everything under them), so a precondition and the
 * write it guards are atomic with respect to other API writes; jobs on
 * other paths run in parallel, which matters because
 * each write waits for two fsyncs. The writes themselves are in
 * syncapi-write.c; here each job is claimed, run and answered.
 *
 * The manifest scans the vault with the scanner's rules (without
 * quire.yml's ignore globs: those decide what is published, not what is
 * synced) and takes each file's hash from the hash cache, which reads only
 * files whose stat changed; the cache is saved in the data folder.
 */
#define _GNU_SOURCE /* SCHED_BATCH */
#include "sync/syncapi.h"
#include "sync/syncapi-int.h"
#include "http/http.h"
#include "site/loader.h"
#include "sync/hashcache.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/parallel.h"
#include "util/xalloc.h"
#include "vault/vault.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_QUEUED 4096

/* ---- the job queue ---- */

void syncapi_job_free(struct job *j)
{
	if (!j)
		return;
	free(j->path);
	free(j->to);
	buf_release(&j->body);
	syncapi_upload_drop(&j->up);
	if (j->ctx_free)
		j->ctx_free(j->ctx);
	free(j);
}

/*
 * Drops what j carries (a spooled body, a front's context) before j is
 * answered without being run: the spool is empty once the client hears.
 */
static void shed(struct job *j)
{
	syncapi_upload_drop(&j->up);
	if (j->ctx_free)
		j->ctx_free(j->ctx);
	j->ctx_free = NULL;
	j->ctx = NULL;
}

/* Queues j (whose request is deferred); answers 503 itself when the queue is full. */
void syncapi_enqueue(struct syncapi *api, struct job *j)
{
	pthread_mutex_lock(&api->lock);
	if (api->queued >= MAX_QUEUED || api->stop) {
		pthread_mutex_unlock(&api->lock);
		shed(j);
		http_deferred_header(j->d, "Retry-After", "1");
		syncapi_dreply_error(j->d, 503, "too much work queued; try again", NULL);
		syncapi_job_free(j);
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

/* Whether a and b are the same path, or one is a folder holding the other. */
static int overlap(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la > lb)
		return overlap(b, a);
	return strncmp(a, b, la) == 0 && (b[la] == '\0' || b[la] == '/');
}

/* Whether a job holds path, or a folder above or below it (a folder moves whole). */
static int is_busy(struct syncapi *api, const char *path)
{
	size_t i;

	if (!path)
		return 0;
	for (i = 0; i < api->nbusy; i++)
		if (overlap(api->busy[i], path))
			return 1;
	return 0;
}

void syncapi_claim(struct syncapi *api, const char *a, const char *b)
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

void syncapi_release(struct syncapi *api, const char *a, const char *b)
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

/* ---- the manifest ---- */

void syncapi_save_cache(struct syncapi *api)
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
	char (*sha)[SHA256_HEX_SIZE] = NULL;
	char *ok = NULL;
	size_t hashed = 0;
	struct buf b = BUF_INIT;
	uint64_t version = loader_version(api->loader), pass;
	size_t i, n = 0;

	diag_list_init(&diags);
	pass = hash_cache_mark(api->cache);
	if (vault_scan(api->vault, NULL, &scan, &diags) < 0) {
		syncapi_dreply_error(j->d, 500, "cannot read the vault", NULL);
		goto out;
	}
	sha = xcalloc(scan.n + 1, sizeof(*sha));
	ok = xcalloc(scan.n + 1, 1);
	hashed = hash_cache_scan(api->cache, api->root_fd, &scan, sha, ok);
	hash_cache_sweep(api->cache, pass);
	buf_grow(&b, 64 + scan.n * 128);
	buf_addf(&b, "{\"version\":%" PRIu64 ",\"files\":{", version);
	for (i = 0; i < scan.n; i++) {
		if (!ok[i])
			continue; /* gone since the scan */
		if (n++)
			buf_addc(&b, ',');
		buf_addc(&b, '"');
		buf_adds_json(&b, scan.files[i].path);
		buf_addf(&b, "\":{\"sha256\":\"%s\",\"size\":%lld}", sha[i],
			 (long long)scan.files[i].size);
	}
	buf_adds(&b, "}}\n");
	atomic_fetch_add(&api->hashed, (uint64_t)hashed);
	count(&api->manifests);
	http_deferred_reply_buf(j->d, 200, JSON_TYPE, &b);
	if (hashed)
		log_debug("sync: manifest of %zu files hashed %zu", n, hashed);
	syncapi_save_cache(api);
out:
	free(sha);
	free(ok);
	vault_scan_release(&scan);
	diag_list_release(&diags);
}

/* ---- reading a file ---- */

/*
 * GET /api/v1/files/<path>: the bytes, with the SHA-256 of exactly those
 * bytes as the ETag (hashed here, not taken from the cache: a write
 * renamed in between cannot pair one version's tag with another's bytes).
 * Writes replace files by rename, so the read sees one whole version;
 * only regular files are read, and no symlink is followed on the way.
 */
static void do_get(struct syncapi *api, struct job *j)
{
	struct buf body = BUF_INIT;
	char sha[SHA256_HEX_SIZE], etag[SHA256_HEX_SIZE + 2];
	const char *leaf;
	struct stat st;
	int parent, fd = -1, err = 0;

	parent = syncapi_open_parent(api, j->path, 0, &leaf);
	if (parent >= 0) {
		fd = openat(parent, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		err = errno;
		close(parent);
	} else {
		err = errno;
	}
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
		err = ENOENT;
	}
	if (fd < 0) {
		syncapi_dreply_error(j->d, err == ENOENT || err == ENOTDIR || err == ELOOP ? 404 : 500,
				     err == ENOENT || err == ENOTDIR || err == ELOOP ? "no such file"
										     : strerror(err),
				     j->path);
		return;
	}
	if (read_fd(fd, &body) < 0) {
		err = errno;
		close(fd);
		syncapi_dreply_error(j->d, 500, strerror(err), j->path);
		buf_release(&body);
		return;
	}
	close(fd);
	hash_sha256_hex(body.ptr ? body.ptr : "", body.len, sha);
	snprintf(etag, sizeof(etag), "\"%s\"", sha);
	count(&api->gets);
	http_deferred_header(j->d, "ETag", etag);
	http_deferred_header(j->d, "Cache-Control", "no-store");
	http_deferred_reply_buf(j->d, 200, "application/octet-stream", &body);
}

/* ---- running jobs ---- */

static void answer(struct syncapi *api, struct job *j, struct outcome *out)
{
	static const char *const methods[] = { "PUT", "DELETE", "POST" };
	struct buf b = BUF_INIT;

	if (out->status >= 400 && j->kind <= J_MOVE)
		syncapi_log_refusal(0, methods[j->kind], out->status, out->error ? out->error : "failed",
				    j->path, j->to, j->origin.client);
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
	case J_GET:
		do_get(api, j);
		return;
	case J_CALL:
		j->run(api, j);
		return;
	case J_PUT:
		syncapi_claim(api, j->path, NULL);
		syncapi_put(api, j, &out);
		syncapi_upload_drop(&j->up); /* what the write did not take, before the answer */
		syncapi_release(api, j->path, NULL);
		break;
	case J_DELETE:
		syncapi_claim(api, j->path, NULL);
		syncapi_delete(api, j, &out);
		syncapi_release(api, j->path, NULL);
		break;
	case J_MOVE:
		syncapi_claim(api, j->path, j->to);
		syncapi_move(api, j, &out);
		syncapi_release(api, j->path, j->to);
		break;
	}
	answer(api, j, &out);
}

void *syncapi_worker_main(void *arg)
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
			shed(j);
			syncapi_dreply_error(j->d, 503, "the server is stopping", NULL);
		} else {
			pthread_mutex_unlock(&api->lock);
			run_job(api, j);
		}
		syncapi_job_free(j);
		pthread_mutex_lock(&api->lock);
	}
	pthread_mutex_unlock(&api->lock);
	return NULL;
}
