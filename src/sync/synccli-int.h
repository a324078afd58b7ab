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
#include "util/hash.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct event;
struct event_base;
struct evhttp_connection;
struct map;

enum op_kind { OP_PUT, OP_DELETE };

struct op {
	enum op_kind kind;
	const char *path;          /* NFC, borrowed from the scan or the manifest */
	const char *disk;          /* local, relative to the vault (PUT) */
	char sha[SHA256_HEX_SIZE]; /* the local hash (PUT) */
	char remote[SHA256_HEX_SIZE]; /* the server's hash, "" when new */
	off_t size;
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
