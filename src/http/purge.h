/*
 * purge.h: what a response depends on (Surrogate-Key), and telling the
 * caches in front what changed when a snapshot goes live.
 *
 * Keys. Every response from a snapshot names its keys in one
 * Surrogate-Key header: "quire" (everything), "host-NAME" (the host it
 * was served for; "host-main" for the main site), "p" + 16 hex digits of
 * a hash of its path (of host and path for a page a custom domain holds
 * of its own: a route, its sitemap), "f" + the hash of its folder for a
 * note, "t" + the hash of a tag for a note with that tag (and each tag
 * above it: "a/b" also gives "a") and for the pages of that tag's
 * listing (/tags/a/b and its other pages and feed), "tree" for the
 * explorer's documents, and "q404" for a 404. A key is computed from the request's path
 * and host (a hash into a fixed buffer), so a 404 for a path carries the
 * key that the page created there later is purged by.
 *
 * The purge set. At publish, the diff of the new snapshot against the one
 * it replaced (snapshot_diff(): only leaves that changed are looked at)
 * gives every path whose bytes changed (a page replaced by one with the
 * same ETag is not a change: the gzip bytes of a change come in a second
 * publish of the same content); each custom host's own pages are compared
 * the same way. Each such path gives its page key, and its URL on every
 * host that serves it (the main site and the open hosts for main pages).
 *
 * Sending. The loader thread only appends the set to a queue; a thread of
 * the purger's own takes everything queued at once (a burst of publishes
 * becomes one set), and sends it to every purger of quire.yml:
 *   xkey:    PURGE / with "xkey-purge: k1 k2 ..." (4 KB of keys a request)
 *   ban:     BAN / with "quire-ban: <a regular expression of the keys>"
 *            (the VCL bans objects whose Surrogate-Key matches; no vmod)
 *   purge:   PURGE of each URL, with its Host
 *   webhook: POST of {"version":N,"hosts":[...],"urls":[...],"keys":[...]}
 * with a blocking HTTP/1.1 client (plain http; one connection a request).
 * A request that fails (no connection, no answer in 5 s, a status other
 * than 2xx, or 404 for a PURGE: nothing cached) is retried 5 times, after
 * 0.1, 0.2, 0.4, 0.8 and 1.6 s, then counted failed. Counters are in
 * /metrics (quire_purge_*).
 *
 * Rejected: purging from the loader thread (a slow cache would hold up
 * the next snapshot), one request per key (a folder rename is thousands),
 * and purging everything on a change (the cache would be cold after each
 * edit: what the keys are for).
 */
#ifndef QUIRE_PURGE_H
#define QUIRE_PURGE_H

#include <stddef.h>
#include <stdint.h>

#include "site/snapshot.h"
#include "util/buf.h"
#include "vault/config.h"

#define PURGE_KEY_SIZE 18 /* "p" + 16 hex digits + NUL */

/* The page key of path on host ("" or NULL: the main site's pages, also served by open hosts). */
void purge_key(const char *host, const char *path, size_t len, char out[PURGE_KEY_SIZE]);

/*
 * Appends "Surrogate-Key: ...\r\n" for a response: host is the custom
 * domain's name or NULL for the main site; own is whether the page came
 * from that host's own pages; note whether it is a note (it gets its
 * folder's key); not_found whether it is a 404; tags the page's tags
 * (struct page) or NULL.
 */
void purge_add_header(struct buf *h, const char *host, int own, const char *path, size_t len,
		      int note, int not_found, const char *tags);

/* What changed from was to now: keys and absolute URLs, each once. */
struct purge_set {
	uint64_t version;
	struct map keys;     /* key -> itself (owned) */
	struct map urls;     /* URL -> itself (owned) */
	struct map hosts;    /* host name -> itself (owned) */
};
#define PURGE_SET_INIT { 0, MAP_INIT, MAP_INIT, MAP_INIT }

/* Adds what changed from was (NULL: nothing before) to now. */
void purge_set_diff(struct purge_set *ps, const struct snapshot *was, const struct snapshot *now);
void purge_set_add(struct purge_set *ps, struct map *m, const char *s, size_t len);
void purge_set_release(struct purge_set *ps);

struct purger;

/*
 * Starts the purging thread for the n purgers of list (copied). NULL when
 * n is 0 or the thread cannot start (logged). Free it with purger_free().
 */
struct purger *purger_new(const struct config_purger *list, size_t n);

/*
 * Queues what changed from was to now (the loader's on_publish hook:
 * loader_on_publish(l, purger_on_publish, pg)). Never waits for a cache.
 */
void purger_on_publish(void *pg, const struct snapshot *was, const struct snapshot *now);

/* Queues a purge of everything (key "quire"): after a start, the cache may hold a past run's pages. */
void purger_all(struct purger *pg, uint64_t version);

/* Waits until nothing is queued or being sent: 0, or -1 after timeout_ms. */
int purger_wait_idle(struct purger *pg, int timeout_ms);

/* Appends the quire_purge_* metrics in the Prometheus text format. pg may be NULL. */
void purger_metrics(void *pg, struct buf *out);

/* Stops the thread (dropping what is queued) and frees. Accepts NULL. */
void purger_free(struct purger *pg);

/*
 * One blocking HTTP/1.1 request to url (http://host[:port]/path) with
 * method, an extra header block (lines ending in \r\n, or NULL) and a body
 * (or NULL); Host is the URL's unless the block has one. Returns the
 * status, or -1 when no answer came within timeout_ms (logged at debug).
 * Nothing is sent, and -1 returned (logged), when the URL holds a space or
 * a control character or a header line is not one "Name: value" line
 * without control characters: quire.yml is checked for that already
 * (config.h), this is the second line of defence against a forged header.
 */
int purge_http(const char *method, const char *url, const char *headers, const char *body,
	       size_t body_len, int timeout_ms);

#endif
