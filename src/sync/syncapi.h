/*
 * syncapi.h: the HTTP API through which `quire sync` (or any client)
 * writes the vault of a running server.
 *
 *	GET    /api/v1/manifest            {"version":N,"files":{"path":{"sha256":"hex","size":N}}}
 *	GET    /api/v1/files/<path>        the file's bytes, ETag: "<sha256 of them>"
 *	PUT    /api/v1/files/<path>        body = the bytes; If-Match: "<sha256>" | If-None-Match: *
 *	DELETE /api/v1/files/<path>        If-Match optional
 *	POST   /api/v1/move                {"from":"a.md","to":"b/a.md"}
 *	GET    /api/v1/wait?version=N&timeout=MS   200 {"version":M} once snapshot N is live, or 408
 *
 * Every request carries "Authorization: Bearer <token>". Failures are
 * counted per client address; past the limit the address gets 429 (with
 * Retry-After), even with the right token, until its bucket refills.
 *
 * A 2xx to a write means the bytes are durable: written to a temporary
 * dot-file in the target's folder (never scanned, never served), or for a
 * body larger than the HTTP server's small_body_size the file the server
 * spooled it to in <data dir>/spool, fsynced, renamed over the target,
 * the folder fsynced. The change is then queued
 * to the loader, and the answer carries the snapshot version that will
 * include it, for /api/v1/wait.
 *
 * Threads. Handlers run on the HTTP loops and only check, copy and
 * queue: file work and manifests run on a small pool of threads of this
 * module and answer through http_deferred_reply(); long polls are parked
 * on one thread that sleeps in loader_wait() and so wakes at each publish.
 *
 * Ownership. The API borrows the loader (which must outlive it) and owns
 * its threads, its hash cache and its copies of the options' strings.
 */
#ifndef QUIRE_SYNCAPI_H
#define QUIRE_SYNCAPI_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

struct http_server;
struct loader;

#define SYNCAPI_MAX_PATH 1024
#define SYNCAPI_MAX_SEGMENT 255
#define SYNCAPI_DEFAULT_MAX_UPLOAD (64 * 1024 * 1024)
/* The shortest token syncapi_new() takes, in bytes. */
#define SYNCAPI_MIN_TOKEN 16

struct syncapi_options {
	const char *vault;       /* the vault folder */
	const char *token;       /* the bearer token, non-empty */
	const char *data_dir;    /* where the hash cache is kept; NULL = <vault>/.quire */
	size_t max_upload;       /* largest body accepted; 0 = 64 MiB. The HTTP server's
				    max_body_size must be at least this */
	int threads;             /* threads for file work; 0 = 4 */
	int auth_failures;       /* failed authentications per minute and address; 0 = 10 */
	int loopback;            /* the server listens on a loopback address only: a token
				    shorter than 16 bytes is taken, with a warning */
};

struct syncapi_stats {
	uint64_t puts, deletes, moves, manifests, gets;
	uint64_t hashed;         /* files read and hashed to answer manifests */
	uint64_t uploads_renamed; /* spooled bodies renamed from the spool into place */
	uint64_t uploads_copied;  /* spooled bodies copied: the spool is on another file system */
	uint64_t auth_failures, limited;
};

struct syncapi;

/*
 * Opens the vault folder, loads the saved hash cache, removes temporary
 * files a crash left behind, and starts the threads. NULL on failure
 * (logged).
 */
struct syncapi *syncapi_new(const struct syncapi_options *opt, struct loader *loader);

/* Registers /api/v1/ on srv (before it runs). 0 or -1. */
int syncapi_register(struct syncapi *api, struct http_server *srv);

void syncapi_get_stats(struct syncapi *api, struct syncapi_stats *out);

/*
 * Stops the threads, answering what is still queued or waiting with 503,
 * saves the hash cache and frees everything. Call it after
 * http_server_run() has returned and before http_server_free(). Accepts
 * NULL.
 */
void syncapi_free(struct syncapi *api);

/*
 * Checks a vault path (len bytes, not NUL-terminated) as the API accepts
 * it: relative, valid UTF-8, no NUL, control character or backslash, no
 * empty, ".", ".." or dot segment, segments of at most 255 bytes and at
 * most 1024 bytes in all. Returns 0 with the NFC form in out, or -1 with
 * *why naming the problem (a static string).
 */
int syncapi_check_path(const char *path, size_t len, struct buf *out, const char **why);

/* Percent-decodes raw (len bytes) and checks it as above. */
int syncapi_decode_path(const char *raw, size_t len, struct buf *out, const char **why);

/*
 * The folder holding path (checked as above) below the folder root_fd,
 * opened one segment at a time without following symlinks (with create,
 * missing folders are made and their parents fsynced): a descriptor the
 * caller closes, *leaf pointing into path at the last segment; -1 with
 * errno. The server writes the vault through it, and `quire sync` its
 * local copy, so that a symlink cannot redirect either.
 */
int syncapi_open_parent_at(int root_fd, const char *path, int create, const char **leaf);

#endif
