/*
 * synccli-int.h: internal to `quire sync` (src/sync/synccli*.c), not for
 * other folders, which include synccli.h.
 *
 * synccli.c is the command (arguments, the local hashes, the manifest,
 * the report); synccli-plan.c compares each file's three versions (here,
 * the server, the record of the last sync) and decides what moves where;
 * synccli-local.c writes into the local vault (downloads, merges,
 * conflict copies, deletions), durably; synccli-requests.c talks to the
 * server (the event loop, its connections, one-off GETs, the plan's
 * requests). This header holds the client and the run they share.
 */
#ifndef QUIRE_SYNCCLI_INT_H
#define QUIRE_SYNCCLI_INT_H

#include "util/buf.h"
#include "util/diag.h"
#include "util/hash.h"
#include "util/map.h"
#include "vault/vault.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct event;
struct event_base;
struct evhttp_connection;
struct run;
struct sync_record;

/* The most the client reads of a manifest (bytes): past it the sync stops, saying so. */
#define SYNCCLI_MAX_MANIFEST (256u << 20)
/* The default of --max-file: the largest file body read from the server. */
#define SYNCCLI_DEFAULT_MAX_FILE (64u << 20)

/*
 * OP_GET reads a file of the server (phase 1), OP_UNLINK removes a local
 * file the server deleted (between the phases), OP_PUT and OP_DELETE
 * write the server (phase 2).
 */
enum op_kind { OP_PUT, OP_DELETE, OP_GET, OP_UNLINK };

/* What a GET's bytes are for. */
enum get_use {
	GET_TAKE,   /* the server's version replaces (or creates) the local file */
	GET_MERGE,  /* merged three-way with the local text and the record's */
	GET_COPY,   /* kept beside the local file as a conflict copy */
};

struct op {
	enum op_kind kind;
	enum get_use use;             /* OP_GET */
	const char *path;             /* NFC, borrowed from the scan, the manifest or the run */
	const char *disk;             /* the local file, relative to the vault, as on disk */
	char sha[SHA256_HEX_SIZE];    /* the local hash when planned, "" when there is no file */
	char remote[SHA256_HEX_SIZE]; /* the server's hash, "" when it has none */
	off_t size;
	int status;                   /* once answered: the HTTP status, 0 when the connection
					 failed, -1 when it could not be sent */
	int too_long;                 /* the answer was over the size bound */
	char sent[SHA256_HEX_SIZE];   /* a PUT: the hash of the bytes sent */
	struct buf text;              /* a PUT of a note: the bytes sent (the record's base) */
};

struct conn_slot {
	struct client *c;
	struct evhttp_connection *con;
	struct op *op;             /* in flight, or NULL */
	struct event *delay;       /* QUIRE_SYNC_TEST_DELAY_MS */
};

struct client {
	struct run *run;
	const char *vault;
	struct event_base *base;
	char *host;
	int port;
	char *prefix;              /* URL path without trailing '/', or "" */
	char *auth;                /* "Bearer <token>" */
	struct conn_slot *slots;
	int nslots;
	struct op *ops;
	size_t nops, aops, next, done;
	int phase;                 /* 1: GETs; 2: PUTs and DELETEs */
	int running;
	uint64_t bytes_total, bytes_done;
	size_t max_file;           /* --max-file */
	uint64_t max_version;
	int delay_ms;
	int progress;              /* stderr is a terminal */
	int64_t last_progress;
	/* a single synchronous request (manifest, wait) */
	int sync_done, sync_status, sync_too_long;
	struct buf sync_body;
	/* --watch: a byte on wake_fd ends a poll (synccli_poll()) early */
	struct event *wake;
	int woken;
};

/* What a run (or a --watch session) did, for the summary line. */
struct counts {
	size_t uploaded, downloaded, merged, deleted_here, deleted_there;
	size_t unchanged, conflicts, failed, raced, skipped, only_remote;
};

/* A file of the server's manifest. */
struct remote {
	char *path;
	char sha[SHA256_HEX_SIZE];
	uint64_t size;
	int seen;                  /* the local vault has this path */
};

/* The local side's hashes (hash_cache_scan()). */
struct hash_work {
	struct hash_cache *cache;
	int dirfd;
	char (*sha)[SHA256_HEX_SIZE];
	char *ok;
};

/* One run of the command: what the steps of sync_main() share. */
struct run {
	const char *token_file, *vault, *url;
	int do_delete, dry, jobs, watch, push;
	int say_sent;              /* print a line per file uploaded or deleted on the server */
	char *token;
	struct client c;
	struct vault_scan scan;
	struct diag_list diags;
	struct hash_work hw;       /* the local hashes; owns hw.cache and hw.dirfd (the vault) */
	struct map local;          /* NFC path -> index in scan + 1 */
	struct map remote;         /* path -> struct remote, from the server's manifest */
	uint64_t server_version;   /* the manifest's */
	struct sync_record *record;
	struct counts n;
	char **strs;               /* strings the plan made (conflict copies' names), freed per pass */
	size_t nstrs, astrs;
	struct op *later;          /* phase 2 requests the answers of phase 1 asked for */
	size_t nlater, alater;
	int64_t t0;
};

/* ---- synccli.c ---- */

/*
 * One whole pass: the local files hashed (through the hash cache, kept
 * between passes), the manifest fetched, the plan made and run, made
 * again (up to three times) while the server changed during it. 0, or -1
 * when the vault or the server could not be read (printed).
 */
int synccli_pass(struct run *r);

/* Prints the summary line of r->n; returns the exit status it means. */
int synccli_report(struct run *r);

/*
 * Parses the server's manifest,
 * {"version":N,"files":{"path":{"sha256":"..","size":N},...}}, into m (path
 * to its entry, owned by m) and *version. Every path must pass
 * syncapi_check_path() unchanged (NFC), every hash be 64 lowercase hex
 * digits. 0, or -1 with err saying what was wrong; either way m is freed
 * with synccli_free_manifest().
 */
int synccli_parse_manifest(const char *body, size_t len, struct map *m, uint64_t *version,
			   struct buf *err);
/* Frees the entries of a manifest map and the map itself (left as MAP_INIT). */
void synccli_free_manifest(struct map *m);

/* ---- synccli-plan.c ---- */

/* The plan of one pass into r->c.ops (r->scan, r->hw, r->remote and r->record read). */
void synccli_plan(struct run *r);

/* Runs the plan: phase 1, local deletions, phase 2; with --dry-run prints it instead. */
void synccli_execute(struct run *r);

/* A string that lives until the end of the pass. */
const char *synccli_keep(struct run *r, const char *s);

/* Whether path is a Markdown note (merged as text, its base kept in the record). */
int synccli_is_note(const char *path);

/* ---- synccli-local.c ---- */

/* Local writes: 0; SYNCCLI_RACED when the local file changed since it was hashed; -1 (printed). */
#define SYNCCLI_RACED 1

/*
 * Writes data as the local file path (disk, as on disk, relative to the
 * vault): to a temporary dot-file in its folder (made if missing), fsync,
 * then renamed over the file when it still hashes to expect, or linked
 * in place when expect is "" and nothing is there yet; the folder is
 * fsynced. No symlink is followed on the way.
 */
int synccli_write_local(struct run *r, const char *disk, const char *path, const char *data,
			size_t len, const char *expect);

/*
 * Removes the local file disk when it still hashes to expect, fsyncs its
 * folder, and removes the folders above it that are left empty.
 */
int synccli_unlink_local(struct run *r, const char *disk, const char *path, const char *expect);

/*
 * Reads the local file disk into out and checks that it hashes to
 * expect. 0, SYNCCLI_RACED, or -1 (printed).
 */
int synccli_read_local(struct run *r, const char *disk, const char *expect, struct buf *out);

/*
 * The name of a conflict copy of path, as Syncthing names them:
 * "dir/name.sync-conflict-YYYYMMDD-HHMMSS-server.ext" (UTC), with "-2",
 * "-3"... after "server" when that is taken here or on the server. Kept
 * by the run.
 */
const char *synccli_conflict_name(struct run *r, const char *path);

/* A local conflict copy of path already holding the bytes of sha, or NULL. */
const char *synccli_find_copy(struct run *r, const char *path, const char *sha);

/* ---- synccli-requests.c ---- */

/* A new operation at the end of c's plan, zeroed. */
struct op *synccli_add_op(struct client *c);

/*
 * The event loop and jobs keep-alive connections to c->host:c->port.
 * 0, or -1 (printed); what was made is freed by synccli_disconnect().
 */
int synccli_connect(struct client *c, int jobs);

/*
 * A GET on the first connection, run to its end on the loop, reading at
 * most max bytes of body. Returns the status (0 when the connection
 * failed or the body was over max: c->sync_too_long); the body goes to
 * c->sync_body.
 */
int synccli_fetch(struct client *c, const char *target, size_t max);

/*
 * synccli_fetch() that ends early, cancelling the request, when a byte
 * arrives on the descriptor given to synccli_wake_on(): the status, or -2
 * when it was woken.
 */
int synccli_poll(struct client *c, const char *target, size_t max);

/* Makes fd (non-blocking, read end of a pipe) wake synccli_poll(); -1: nothing does. 0 or -1. */
int synccli_wake_on(struct client *c, int fd);

/* Runs the ops of c->phase on the connections until each is answered. */
void synccli_run(struct client *c);

/* Frees the connections and the event loop. */
void synccli_disconnect(struct client *c);

/* ---- synccli-plan.c: the answers, called by synccli-requests.c ---- */

/* A GET answered (status, and the bytes when 200). */
void synccli_got(struct run *r, struct op *op, const char *body, size_t len);
/* A PUT or DELETE answered 2xx (or a DELETE 404): the record follows. */
void synccli_sent(struct run *r, struct op *op);

/* ---- syncwatch.c ---- */

/*
 * `quire sync --watch`, after the first pass (which failed when again is
 * set: it is made again first): a pass after each batch of local changes
 * and each new version of the server, until SIGINT or SIGTERM. Returns
 * the exit status.
 */
int synccli_watch(struct run *r, int again);

#endif
