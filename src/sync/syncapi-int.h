/*
 * syncapi-int.h: internal to the sync API (src/sync/syncapi*.c), not for
 * other folders, which include syncapi.h.
 *
 * The API is cut along its responsibilities: syncapi.c (the requests:
 * routes, handlers, paths, JSON errors, setup), syncapi-auth.c (the token
 * and the per-address failure limit), syncapi-jobs.c (the job queue, its
 * threads, the manifest), syncapi-write.c (durable writes into the vault,
 * spares, leftovers) and syncapi-wait.c (long polls). This header holds
 * what they share: the state of struct syncapi, the jobs, and the few
 * functions one piece calls in another.
 */
#ifndef QUIRE_SYNCAPI_INT_H
#define QUIRE_SYNCAPI_INT_H

#ifndef QUIRE_SYNCAPI_H
#error "include sync/syncapi.h before sync/syncapi-int.h: a module's private header does not include its public one (no include circle)"
#endif

#include "http/http.h"
#include "site/loader.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/ratelimit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

struct hash_cache;
struct http_deferred;
struct http_request;

#define BLOCK_SLOTS 256
#define JSON_TYPE "application/json"

/* J_CALL: a job of another front (WebDAV, dav.c) that runs j->run on the pool. */
enum job_kind { J_PUT, J_DELETE, J_MOVE, J_MANIFEST, J_CALL, J_GET };

enum cond { C_NONE, C_MATCH, C_MATCH_ANY };

/*
 * A PUT's body taken as a file in the spool folder (http_request_take_body_file(),
 * "Uploads" in syncapi-write.c), or none (spooled 0: the body is in memory).
 * Whoever holds it either renames file.name out of the spool or drops it
 * (syncapi_upload_drop()): nothing is left in the spool.
 */
struct upload {
	int spooled;
	int dir;                  /* the spool folder, borrowed */
	struct http_body_file file; /* fd -1 and name "" once the write took them */
};

struct job {
	enum job_kind kind;
	struct http_deferred *d;
	char *path;               /* NFC, checked; the source of a move */
	char *to;                 /* a move's target */
	struct buf body;          /* a PUT's bytes, when in memory */
	struct upload up;         /* a PUT's bytes, when spooled */
	enum cond if_match;
	char match[SHA256_HEX_SIZE];
	int if_none_match;        /* If-None-Match: * */
	void (*run)(struct syncapi *api, struct job *j); /* J_CALL: claims, works and answers */
	void *ctx;                /* J_CALL: the front's, freed with ctx_free (may be NULL) */
	void (*ctx_free)(void *ctx);
	struct change_origin origin; /* the client and when its request came, for the log */
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
	char *data_dir;               /* absolute or as given; <vault>/.quire by default */
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
	int spool_fd;                 /* <data dir>/spool (large bodies as they arrive), or -1 */
	mode_t new_mode;              /* a new file's: 0644 less the umask */
	struct spare spares[SPARES_MAX]; /* under lock */
	size_t nspares;

	_Atomic uint64_t puts, deletes, moves, manifests, gets, hashed, auth_failures, limited;
	_Atomic uint64_t uploads_renamed, uploads_copied;
};

static inline void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* The outcome of a job, for its answer. */
struct outcome {
	int status;
	const char *error;           /* static message for a 4xx/5xx */
	char current[SHA256_HEX_SIZE]; /* the file's hash before, "" when missing */
	char sha[SHA256_HEX_SIZE];   /* a PUT's new hash */
	off_t size;
	uint64_t version;
};

/* ---- syncapi.c: answers ---- */

/*
 * Answers req with status and {"error":msg,"path":path} (path may be NULL);
 * a write refused, or a request without the token, gets its log line.
 */
void syncapi_reply_error(struct http_request *req, int status, const char *msg, const char *path);

/* The origin of req's change (its client, its arrival) for the loader's log line. */
void syncapi_origin(struct http_request *req, enum change_source source, struct change_origin *out);

/*
 * One "sync.refused" (dav: "dav.refused") line: a write refused, or a
 * request without the right token; why says why, path and to (a move's or
 * a copy's target) may be NULL. Refusals a client causes are warnings,
 * failures of the server (5xx) errors.
 */
void syncapi_log_refusal(int dav, const char *method, int status, const char *why,
			 const char *path, const char *to, const char *client);

/* The same for a deferred request. */
void syncapi_dreply_error(struct http_deferred *d, int status, const char *msg, const char *path);

/*
 * An entity tag of If-Match / If-None-Match: "*" (*kind C_MATCH_ANY) or one
 * quoted SHA-256 (C_MATCH, the lowercase hex in out). 0, or -1 for anything else.
 */
int syncapi_parse_tag(const char *v, enum cond *kind, char out[SHA256_HEX_SIZE]);

/*
 * syncapi_check_path(), and with allow_dot, dot-files and dot-folders pass
 * (WebDAV stores editors' .obsidian/ and .trash/); "." and ".." never do.
 */
int syncapi_check_path_dots(const char *path, size_t len, struct buf *out, const char **why,
			    int allow_dot);

/*
 * Takes req's body: into up when the HTTP layer spooled it (the caller
 * then owns the file, see struct upload), else into body. Returns its
 * length.
 */
unsigned long long syncapi_take_body(struct syncapi *api, struct http_request *req,
				     struct buf *body, struct upload *up);

/* ---- syncapi-auth.c ---- */

/* 1 when the request may go on; otherwise it has been answered (401 or 429). */
int syncapi_authenticate(struct syncapi *api, struct http_request *req);

/*
 * The check behind syncapi_authenticate(), for fronts that answer in their
 * own words: 1 when the Authorization header carries the token (Bearer,
 * or with basic also HTTP Basic with the token as password); 0 when it
 * does not and the client may be told 401; -1 when its address failed too
 * often (answer 429 with Retry-After: *retry seconds). Failures count.
 */
int syncapi_auth_check(struct syncapi *api, struct http_request *req, int basic, double *retry);

/* ---- syncapi-jobs.c ---- */

/* Frees a job and what it holds. Accepts NULL. */
void syncapi_job_free(struct job *j);

/*
 * Queues j (whose request is deferred), which the queue then owns; answers
 * 503 itself when the queue is full.
 */
void syncapi_enqueue(struct syncapi *api, struct job *j);

/* A thread of the pool: runs jobs until api->stop (pthread_create's start routine). */
void *syncapi_worker_main(void *arg);

/* Saves the hash cache when it changed, one save at a time. */
void syncapi_save_cache(struct syncapi *api);

/* ---- syncapi-write.c: run on the pool, the job's paths claimed ---- */

/* Waits until neither a nor b (either may be NULL) is being written, then claims both. */
void syncapi_claim(struct syncapi *api, const char *a, const char *b);
/* Releases what syncapi_claim() took (the same pointers). */
void syncapi_release(struct syncapi *api, const char *a, const char *b);

/*
 * syncapi_put: the file at j->path becomes j->body or j->up, durably
 * (missing folders are made). 201 when new, 200 when replaced. A spooled
 * upload is renamed into place when it can be (j->up then holds nothing);
 * whatever is left in j->up is the caller's to drop.
 */
void syncapi_put(struct syncapi *api, struct job *j, struct outcome *out);
void syncapi_delete(struct syncapi *api, struct job *j, struct outcome *out);
void syncapi_move(struct syncapi *api, struct job *j, struct outcome *out);

/*
 * The folder holding path, opened from the vault one segment at a time
 * without following symlinks (with create, missing folders are made and
 * fsynced). A descriptor the caller closes, *leaf pointing into path at
 * the last segment; -1 with errno.
 */
int syncapi_open_parent(struct syncapi *api, const char *path, int create, const char **leaf);

/*
 * Tells the loader that a (and b, may be NULL) changed, from origin (for
 * its log line; NULL: none known); paths with a dot segment are never read
 * into the site and are not told. Returns the version that will include
 * the change (the live one when nothing was told).
 */
uint64_t syncapi_notify(struct syncapi *api, const struct change_origin *origin, const char *a,
			const char *b);

/*
 * Whether a PUT of len bytes to path is a note (*.md) over the vault's
 * max_note_size (quire.yml): the loader would leave it unread and
 * unpublished, so neither the API nor WebDAV stores it (413). 1 with the
 * message in why, else 0.
 */
int syncapi_note_too_big(struct syncapi *api, const char *path, unsigned long long len,
			 struct buf *why);

/* An errno of a failed write as an HTTP status (409, 404, 507, 400, 500) and a message. */
int syncapi_errno_status(int err);
const char *syncapi_errno_message(int err);

/*
 * Opens a folder of the data folder that holds only files of this run
 * (<data dir>/spares, see "Spares" in syncapi-write.c; <data dir>/spool,
 * "Uploads"), made if missing and emptied of what an earlier run left; -1
 * (writes then do without it) when it cannot be.
 */
int syncapi_open_scratch(const char *path);

/*
 * Closes and removes a spooled upload (accepts one not spooled, or taken
 * by a write), leaving up not spooled.
 */
void syncapi_upload_drop(struct upload *up);

/* Deletes the temporary files a crash left in the vault's folders (.git and .quire skipped). */
void syncapi_remove_leftovers(struct syncapi *api);

/* ---- syncapi-wait.c ---- */

/* GET /api/v1/wait: answers at once, or parks req among the waiters. */
void syncapi_handle_wait(struct syncapi *api, struct http_request *req, const char *query);

/* The value of name=... in a query string as a number: -1 when absent, -2 when not a number. */
long long syncapi_query_num(const char *q, const char *name);

/* The waiters' thread: answers them as versions go live or they time out, until api->wstop. */
void *syncapi_waiter_main(void *arg);

/*
 * syncapi-auth.c: whether an Authorization header carries the API's token
 * (Bearer; with basic, HTTP Basic with the token as password too).
 */
int syncapi_token_ok(struct syncapi *api, const char *authorization, int basic);
/* syncapi-auth.c: the body limit of a request to the API, from its head */
size_t syncapi_body_policy(void *ctx, const char *method, const char *target,
			   const char *authorization);

/*
 * syncapi.c: reads a move's body, {"from":"path","to":"path"}, into from
 * and to (checked as every path is). 0; -1 when the body is malformed or
 * a path is refused, -2 when both are the same path; err says why.
 */
int syncapi_parse_move(const char *body, size_t len, struct buf *from, struct buf *to,
		       struct buf *err);

#endif
