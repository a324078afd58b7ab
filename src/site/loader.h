/*
 * loader.h: the thread that owns the site and publishes snapshots.
 *
 * Changes arrive in a queue from anywhere (SIGHUP, the file watcher, the
 * sync API); the loader thread takes everything queued at once, so a burst
 * of changes becomes one new snapshot, builds it beside the live one, and
 * publishes it with one pointer swap. Serving threads never wait for it:
 * not for a lock, not for the CPU (the thread runs SCHED_IDLE), and not
 * for freeing the snapshot they held across a publish (the loader frees
 * replaced snapshots itself). A failed load keeps the last good snapshot
 * serving and logs why.
 */
#ifndef QUIRE_LOADER_H
#define QUIRE_LOADER_H

#include <stdint.h>

#include "site/site.h"
#include "site/snapshot.h"
#include "util/buf.h"

struct loader;

/*
 * Where a change came from, for the line the log writes when it goes live
 * ("change.live": source, client, paths, version, the time from the
 * request or the watcher's event to the publish) and the change-to-live
 * histogram of /metrics.
 */
enum change_source { CHANGE_WATCHER, CHANGE_SYNC, CHANGE_WEBDAV, CHANGE_OTHER, CHANGE_SOURCES };

struct change_origin {
	enum change_source source;
	char client[48];          /* the client's address, or "" */
	double since_ms;          /* clock_ms() of the request's arrival or the watcher's event */
};

/* "watcher", "sync", "webdav", "other". */
const char *loader_source_name(enum change_source source);

/*
 * Loads the vault at path now, on the calling thread, and publishes the
 * first snapshot into slot (borrowed; it must outlive the loader). Returns
 * NULL when the vault cannot be read (logged). The loader thread starts
 * with loader_start().
 */
struct loader *loader_new(const char *path, const struct site_options *opt,
			  struct snapshot_slot *slot);

/*
 * loader_new() in two steps, for a caller that serves while the first
 * load runs: loader_create() makes the loader (no load yet: nothing is
 * published, loader_site() is NULL); loader_load() runs the first load on
 * the calling thread and publishes it (0, or -1 when the vault cannot be
 * read, logged: then only loader_free() may follow). opt->progress, when
 * set, gives its scanned hook to the first load; the counts are the
 * loader's own (loader_progress()).
 */
struct loader *loader_create(const char *path, const struct site_options *opt,
			     struct snapshot_slot *slot);
int loader_load(struct loader *l);

/*
 * The first load's progress: 1 while it has not published (with the notes'
 * worth of work done in *notes, of the *of notes the scan found, 0 before
 * the scan), 0 after. Thread-safe, callable during loader_load().
 */
int loader_progress(struct loader *l, size_t *notes, size_t *of);

/* The site of the first load, for start-up figures. Owned by the loader; read it before loader_start(). */
const struct site *loader_site(const struct loader *l);

/*
 * Adds fn to what is called on the loader thread each time a snapshot
 * goes live, just after the swap, in the order added (one change, many
 * listeners: the purger, live pages): was is the snapshot it replaced
 * (NULL for none), now the live one; both borrowed for the call. A
 * snapshot republished with its gzip bytes comes too (its pages' ETags
 * did not change). fn must be quick (it delays the next build): the
 * purger only queues, live pages hand bytes to the loops. Up to
 * LOADER_MAX_LISTENERS, added before loader_start().
 */
#define LOADER_MAX_LISTENERS 4
void loader_on_publish(struct loader *l,
		       void (*fn)(void *ctx, const struct snapshot *was, const struct snapshot *now),
		       void *ctx);

/* The search index's file when search is on (readers open it), or NULL. */
const char *loader_search_path(const struct loader *l);

/*
 * The vault's max_note_size (quire.yml, as last loaded): a note larger is
 * not read nor published, and the sync API refuses to store one. Any thread.
 */
size_t loader_max_note_size(struct loader *l);

/*
 * Starts the loader thread (which first fills the search index), named
 * quire-loader, at SCHED_IDLE (nice 19 where that is refused). 0 or -1.
 */
int loader_start(struct loader *l);

/* Queues a full reload of quire.yml and the vault. Thread-safe. */
void loader_reload(struct loader *l);

/*
 * Queues vault-relative paths (as on disk) that changed: files written or
 * deleted, or folders. Returns the version of the snapshot that will
 * include the change (a later one may come first if a build is under way).
 * Thread-safe; paths are copied.
 */
uint64_t loader_notify(struct loader *l, const char *const *paths, size_t n);

/*
 * loader_notify() with where the change came from (loader_notify() is
 * CHANGE_OTHER from now). The origin is copied.
 */
uint64_t loader_notify_from(struct loader *l, const char *const *paths, size_t n,
			    const struct change_origin *origin);

/*
 * Appends the loader's families to a /metrics answer (http_server_add_metrics's
 * hook; ctx is the loader): the change-to-live histogram by source,
 * snapshots published, loads, quire.yml's errors and state, and the search
 * index's. Thread-safe.
 */
void loader_metrics(void *ctx, struct buf *out);

/* The version of the live snapshot. Thread-safe. */
uint64_t loader_version(struct loader *l);

/*
 * Waits until the live snapshot's version is at least version, or
 * timeout_ms passes. Returns 0 when reached, -1 on timeout. Thread-safe.
 */
int loader_wait(struct loader *l, uint64_t version, int timeout_ms);

/*
 * Waits until the live snapshot's version is at least version and the
 * loader has nothing left to do for it: no change queued or under way,
 * every page compressed (the snapshot that follows a change with its gzip
 * bytes has the same version). 0, or -1 on timeout. Thread-safe.
 */
int loader_wait_settled(struct loader *l, uint64_t version, int timeout_ms);

/*
 * Whether the search index was filled after the start: every note's words
 * and substrings (what the log's "search index ready" says). Thread-safe.
 */
int loader_search_ready(struct loader *l);

/* Stops the thread (finishing the build under way) and frees everything. Accepts NULL. */
void loader_free(struct loader *l);

#endif
