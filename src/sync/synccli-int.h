/*
 * synccli-int.h: internal to `quire sync` (src/sync/synccli*.c), not for
 * other folders, which include synccli.h.
 *
 * synccli.c is the command (arguments, the local hashes, the manifest,
 * the plan, the report); synccli-requests.c talks to the server (the
 * event loop, its connections, one-off GETs, the plan's operations). This
 * header holds the client they share.
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

enum op_kind { OP_PUT, OP_DELETE };

struct op {
	enum op_kind kind;
	const char *path;          /* NFC, borrowed from the scan or the manifest */
	const char *disk;          /* local, relative to the vault (PUT) */
	char sha[SHA256_HEX_SIZE]; /* the local hash (PUT) */
	char remote[SHA256_HEX_SIZE]; /* the server's hash, "" when new */
	off_t size;
	int status;                /* once answered: the HTTP status, 0 when the connection
				      failed, -1 when it could not be sent (the file unreadable) */
	char stored[SHA256_HEX_SIZE]; /* a PUT's answer: the hash of what the server stored */
};

struct conn_slot {
	struct client *c;
	struct evhttp_connection *con;
	struct op *op;             /* in flight, or NULL */
	struct event *delay;       /* QUIRE_SYNC_TEST_DELAY_MS */
};

struct client {
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
	int running;
	uint64_t bytes_total, bytes_done;
	size_t uploaded, deleted, conflicts, failed;
	uint64_t max_version;
	int delay_ms;
	int progress;              /* stderr is a terminal */
	int64_t last_progress;
	/* a single synchronous request (manifest, wait) */
	int sync_done, sync_status;
	struct buf sync_body;
};

/* A file of the server's manifest. */
struct remote {
	char *path;
	char sha[SHA256_HEX_SIZE];
	uint64_t size;
	int seen;                  /* the local vault has this path */
	int synced;                /* the local file had these bytes when last compared or
				      sent: only such a file is deleted when it goes locally */
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
	int do_delete, dry, jobs, watch;
	char *token;
	struct client c;
	struct vault_scan scan;
	struct diag_list diags;
	struct hash_work hw;       /* the local hashes; owns hw.cache and hw.dirfd (the vault) */
	struct map remote;         /* path -> struct remote, from the server's manifest */
	size_t unchanged, skipped, only_remote;
	int64_t t0;
	/*
	 * With it, a pass does not upload a file for which it returns 1: the
	 * local hash and the server's (from the manifest). --watch uses it so
	 * that a pass after the server was away keeps the changes made there.
	 */
	int (*keep_remote)(void *ctx, const char *path, const char *local, const char *remote);
	void *keep_ctx;
};

/*
 * synccli.c: one whole pass, as a run of the command makes it: the local
 * files hashed (through the hash cache, kept between passes), the
 * manifest fetched, the plan made and run. The plan's outcomes are in
 * c->ops (status) until the next pass. 0, or -1 when the vault or the
 * server could not be read (printed).
 */
int synccli_pass(struct run *r);

/*
 * syncwatch.c: `quire sync --watch`, after the first pass (which failed
 * when again is set: it is made again first): pushes what the file
 * watcher reports until SIGINT or SIGTERM. Returns the exit status.
 */
int synccli_watch(struct run *r, int again);

/* A new operation at the end of c's plan, zeroed. */
struct op *synccli_add_op(struct client *c);

/*
 * The event loop and jobs keep-alive connections to c->host:c->port.
 * 0, or -1 (printed); what was made is freed by synccli_disconnect().
 */
int synccli_connect(struct client *c, int jobs);

/*
 * A GET on the first connection, run to its end on the loop. Returns the
 * status (0 when the connection failed); the body goes to c->sync_body.
 */
int synccli_fetch(struct client *c, const char *target);

/* Runs c->ops on the connections until each is answered, counting outcomes in c. */
void synccli_run(struct client *c);

/* Frees the connections and the event loop. */
void synccli_disconnect(struct client *c);

/*
 * synccli.c: parses the server's manifest,
 * {"version":N,"files":{"path":{"sha256":"..","size":N},...}}, into m (path
 * to its entry, owned by m) and *version. 0 or -1; either way m is freed
 * with synccli_free_manifest().
 */
int synccli_parse_manifest(const char *body, size_t len, struct map *m, uint64_t *version);
/* Frees the entries of a manifest map and the map itself (left as MAP_INIT). */
void synccli_free_manifest(struct map *m);

#endif
