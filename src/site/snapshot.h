/*
 * snapshot.h: the immutable, reference-counted site that the front serves.
 *
 * A snapshot maps a URL path to a page: finished bytes (identity and gzip),
 * a strong ETag, a content type and a date, or, for attachments, a file on
 * disk to send with sendfile. Everything a request needs was computed when
 * the snapshot was built; serving is a lookup and a send.
 *
 * Sharing. The table of pages is persistent (struct ptable): a trie of
 * two fixed levels by a hash of the path, 256 nodes of 64 leaves, each
 * leaf a small map; snapshots share nodes and leaves and count references
 * to them. A new snapshot starts with the previous one's nodes
 * (snapshot_clone: 256 pointers, whatever the vault's size), and putting
 * or removing a page copies only the node and the leaf it lands in, if
 * another snapshot still shares them: 64 pointers and a leaf of n / 16,384
 * pages (12 at 100,000 notes). Building a snapshot costs in proportion to
 * the pages that changed, not to the vault. Pages are reference-counted
 * on their own: each leaf holds one reference on each of its pages. A
 * response takes a reference on the page it sends and drops it when
 * libevent is done with the bytes, so publishing a new snapshot never
 * frees bytes in flight.
 *
 * Rejected: copying the whole table per snapshot (what this replaced: at
 * 10,000 notes a fifth of the time of a one-note change went into copying
 * and referencing every page); one level of 256 shards (what the trie
 * replaced: a change copied and referenced n / 256 pages per shard it
 * touched, 800 at 100,000 notes, and the retired copy dropped as many,
 * 1-3 ms of every change there); a hash array mapped trie of unbounded
 * depth (the same sharing with more indirections per lookup and more
 * code: two fixed levels keep a lookup to one hash, two indexes and one
 * map probe, and stay shallow to millions of pages).
 *
 * Publishing. struct snapshot_slot holds the live snapshot. Taking it is a
 * pointer load and an increment under a mutex held for those two
 * instructions only; the loader builds the next snapshot beside it without
 * any lock and swaps it in with one store. Readers never wait for a build.
 *
 * Freeing. Dropping a snapshot drops its shards; a shard no other
 * snapshot shares drops a reference on each of its pages. The slot keeps
 * the snapshots it replaced ("retired") until no reader holds them, and
 * the publishing thread frees them (snapshot_slot_reap), so a serving
 * thread that happens to hold the old snapshot across a publish never
 * pays for it. Rejected: a reaper thread (one more thread to wake, for
 * work the loader is already awake for) and freeing on whichever thread
 * drops the last reference (what this replaced: 5 frees of 0.2 to 0.3 ms
 * on the serving thread in one 10,000-note sync benchmark).
 *
 * Keys are decoded paths as they appear after percent-decoding a request:
 * "/", "/folder/", "/folder/note", "/attachments/photo 1.png",
 * "/_quire/quire.0123abcd.css". They never carry the site's path prefix.
 */
#ifndef QUIRE_SNAPSHOT_H
#define QUIRE_SNAPSHOT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "util/hash.h"
#include "util/map.h"

enum page_kind {
	PAGE_NOTE,       /* a rendered note */
	PAGE_GENERATED,  /* a listing, feed, sitemap, tree.json, robots.txt */
	PAGE_ASSET,      /* theme file under /_quire/, immutable */
	PAGE_FILE,       /* an attachment: bytes stay on disk */
	PAGE_REDIRECT,   /* an alias or old URL: 301 to location */
	PAGE_NOT_FOUND,  /* the themed 404 page */
};

struct page {
	atomic_long refs;
	enum page_kind kind;
	char *path;               /* the key: decoded URL path, NUL-terminated */
	size_t path_len;
	const char *content_type; /* static string, e.g. "text/html; charset=utf-8" */
	char *body;               /* identity bytes; NULL for PAGE_FILE and PAGE_REDIRECT */
	size_t body_len;
	char *gz;                 /* gzip bytes (xmalloc_lasting()), or NULL when gzip would not be smaller */
	size_t gz_len;
	char etag[ETAG_SIZE];     /* strong ETag of the identity bytes, quoted */
	char gz_etag[ETAG_SIZE];  /* strong ETag of the gzip bytes (a different representation) */
	time_t mtime;             /* Last-Modified */
	char *location;           /* PAGE_REDIRECT: where to (encoded, with prefix) */
	char *file;               /* PAGE_FILE: absolute path on disk */
	off_t file_size;          /* PAGE_FILE */
	int immutable;            /* Cache-Control: immutable (content-hashed URL) */
	int gz_later;             /* page_set_body_later(): the gzip level page_gzipped() uses */
	char *tags;               /* a note's tags, lowercased, one a line, or NULL: what a
				     cache in front may purge it by (http/purge.h) */
};

/*
 * A page with a copy of path; refs = 1. The caller fills the rest with the
 * setters below, then hands it to a snapshot.
 */
struct page *page_new(enum page_kind kind, const char *path, size_t path_len);

/*
 * Takes ownership of body (malloc'd, len bytes), computes the ETag, and
 * compresses it at gzip level (GZIP_LEVEL, GZIP_FAST; 0: not at all) when
 * the result is smaller (the gzip bytes get their own ETag). Returns 0 or -1.
 */
int page_set_body(struct page *p, char *body, size_t len, int level);

/*
 * page_set_body() with gzip bytes made beforehand (gz, gz_len: taken too,
 * from xmalloc_lasting(); dropped when not smaller), for files compressed
 * at build time.
 */
void page_set_body_gz(struct page *p, char *body, size_t len, char *gz, size_t gz_len);

/*
 * page_set_body() without the gzip bytes: they are left for page_gzipped()
 * (gz_later keeps the level), so that a change is served before it is
 * compressed (site_gzip_pending()).
 */
void page_set_body_later(struct page *p, char *body, size_t len, int level);

/*
 * The same page with its gzip bytes, made after page_set_body_later(): a
 * new page (refs = 1; identity bytes copied, or none when they are not
 * kept: page_keep_identity()), or NULL when gzip would not be smaller or
 * compressing failed. p is untouched: a published page is immutable.
 */
struct page *page_gzipped(const struct page *p);

/*
 * Whether pages keep their identity bytes beside their gzip bytes (the
 * default: 1). With 0, page_set_body() frees the identity bytes of a page
 * that has gzip bytes (body becomes NULL; body_len and the ETag stay):
 * the server keeps only what nearly every client takes, and inflates for
 * the rare one that refuses gzip, as nginx's gunzip does. Set once, before
 * any page is made.
 */
void page_keep_identity(int keep);

/*
 * A page's identity bytes (body_len of them): body, or its gzip bytes
 * inflated into a small per-thread cache. Valid until this thread's next
 * few calls (four pages are kept); copy what must last. NULL when there
 * are none (PAGE_FILE, PAGE_REDIRECT) or they cannot be inflated.
 */
const char *page_bytes(const struct page *p);

static inline struct page *page_ref(struct page *p)
{
	if (p)
		atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
	return p;
}
/* Drops a reference; frees the page with the last. Accepts NULL. */
void page_unref(struct page *p);

/*
 * A custom host as the front serves it (hosts.h says what it serves). Built
 * by the loader for each snapshot; only the cache of pages rendered on
 * request changes afterwards, under its lock.
 */
struct snapshot_host {
	char *name;               /* "docs.example.com"; "" for the main site's extra routes */
	int open;                 /* serves every published page, not only its routes */
	char *origin;             /* "https://docs.example.com" */
	char *title;              /* its site title */
	struct map pages;         /* path -> page: routes and the host's own resources */
	struct map routed;        /* main-site path of a routed note -> its path here (owned) */
	struct page *not_found;   /* the host's 404 page */
	pthread_mutex_t lock;     /* over lazy */
	pthread_cond_t rendered;  /* a page of lazy was rendered */
	struct map lazy;          /* path -> page rendered on request, or a "rendering" mark */
	unsigned long nrendered;  /* pages rendered on request (under lock) */
};

/* The hosts of a snapshot. */
struct snapshot_hosts {
	struct map by_name;       /* name -> struct snapshot_host * */
	struct snapshot_host *main; /* the main site's extra routes, or NULL */
	char *main_name;          /* base_url's host, or "" */
	char *main_origin;        /* "https://example.com" (no prefix), or "" without base_url */
	char *prefix;             /* the main site's URL prefix: "" or "/docs" */
	char *main_title;
};

/* The persistent table of pages (see "Sharing" above). */
#define PTABLE_NODES 256
#define PTABLE_LEAVES 64          /* per node */
struct ptable_node;
struct ptable {
	struct ptable_node *nodes[PTABLE_NODES]; /* NULL: empty */
	size_t len;               /* pages in all leaves */
	size_t bytes;             /* their bytes held in memory (identity and gzip), for /metrics */
};

/* Iteration: struct ptable_iter it = PTABLE_ITER_INIT; while ((p = ptable_next(t, &it))) ... */
struct ptable_iter {
	size_t leaf, slot;        /* leaf: node * PTABLE_LEAVES + leaf in it */
};
#define PTABLE_ITER_INIT { 0, 0 }
struct page *ptable_next(const struct ptable *t, struct ptable_iter *it);

/* The page at path, or NULL (borrowed for as long as t is). */
struct page *ptable_get(const struct ptable *t, const char *path, size_t len);

/* Leaves that a and b share (the same leaf, not a copy), and leaves in t: for tests. */
size_t ptable_shared_leaves(const struct ptable *a, const struct ptable *b);
size_t ptable_leaves(const struct ptable *t);

struct snapshot {
	atomic_long refs;
	uint64_t version;         /* increases by one with each publish */
	time_t created;
	struct ptable pages;      /* path -> struct page * */
	struct page *not_found;   /* the 404 page; never NULL in a published snapshot */
	size_t nnotes;            /* published notes */
	size_t nattachments;      /* published attachments */
	double load_ms;           /* how long building this snapshot took */
	struct snapshot_hosts *hosts; /* custom domains and extra routes, or NULL when none */
	char *headers;            /* "Name: value\r\n" lines every response carries, or NULL */
	char *cache_control;      /* "Cache-Control: ...\r\n" for pages that are not immutable,
				     or NULL for "no-cache" (quire.yml's cache: section) */
	char *config_error;       /* "quire.yml:3: why" while quire.yml on disk is invalid and
				     the last valid settings serve (/healthz says it), or NULL */
};

/* An empty snapshot, refs = 1. */
struct snapshot *snapshot_new(uint64_t version);
/*
 * A new snapshot with version prev->version + 1 that shares every page of
 * prev (each page's count goes up by one). refs = 1.
 */
struct snapshot *snapshot_clone(const struct snapshot *prev);

/* Puts p at p->path, taking over the caller's reference; drops any page it replaces. */
void snapshot_put(struct snapshot *s, struct page *p);
/* Removes the page at path (dropping the snapshot's reference). */
void snapshot_remove(struct snapshot *s, const char *path, size_t len);
/* The page at path, borrowed for as long as the caller holds s, or NULL. */
struct page *snapshot_get(const struct snapshot *s, const char *path, size_t len);
/* Frees hosts and every page it holds. Accepts NULL. */
void snapshot_hosts_free(struct snapshot_hosts *hosts);

/* Sets the headers every response from s carries (copied; NULL for none). */
void snapshot_set_headers(struct snapshot *s, const char *headers);

/* Sets the Cache-Control line of pages that are not immutable (copied; NULL: no-cache). */
void snapshot_set_cache_control(struct snapshot *s, const char *line);

/* Sets why quire.yml is not applied (copied; NULL: it is). */
void snapshot_set_config_error(struct snapshot *s, const char *why);

/*
 * Calls fn for each path whose page differs between a and b (a may be
 * NULL: every page of b is new): was is a's page or NULL (put), now is
 * b's page or NULL (removed). Pages are compared by pointer; nodes and
 * leaves that a and b share are skipped, so the cost is that of what
 * changed, not of the site. Both snapshots are borrowed.
 */
void snapshot_diff(const struct snapshot *a, const struct snapshot *b,
		   void (*fn)(void *ctx, const char *path, size_t len, const struct page *was,
			      const struct page *now),
		   void *ctx);

/*
 * Whether two pages are the same bytes at the same place (kind, ETag,
 * redirect target): not a change a reader or a cache can see. Both may be
 * NULL (then false).
 */
int page_same(const struct page *a, const struct page *b);

/*
 * How many main-site paths a page of a and b differs at (page_same()),
 * and the 404 page: 0 when a change made nothing new live. Costs what
 * snapshot_diff() costs: the leaves that changed.
 */
size_t snapshot_changed_pages(const struct snapshot *a, const struct snapshot *b);

/* Replaces the 404 page, taking over the caller's reference. */
void snapshot_set_not_found(struct snapshot *s, struct page *p);

static inline struct snapshot *snapshot_ref(struct snapshot *s)
{
	if (s)
		atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	return s;
}
/* Drops a reference; the last drops every page reference. Accepts NULL. */
void snapshot_unref(struct snapshot *s);

/*
 * Holds the live snapshot, and the ones it replaced while readers may
 * still hold them. snapshot_publish() and snapshot_slot_reap() are called
 * from one thread at a time (the loader); snapshot_acquire() from any.
 */
struct snapshot_slot {
	pthread_mutex_t lock;
	struct snapshot *current;
	struct snapshot **retired;  /* replaced, with the slot's reference; publisher only */
	size_t nretired, aretired;
};

void snapshot_slot_init(struct snapshot_slot *slot);
/* Drops the live snapshot and the retired ones. No reader may hold any. */
void snapshot_slot_release(struct snapshot_slot *slot);
/* A new reference on the live snapshot (NULL before the first publish); unref it when done. */
struct snapshot *snapshot_acquire(struct snapshot_slot *slot);
/*
 * Makes s live, taking over the caller's reference. The snapshot it
 * replaces is retired: freed here if no reader holds it, else by a later
 * snapshot_slot_reap() or publish, on this thread either way.
 */
void snapshot_publish(struct snapshot_slot *slot, struct snapshot *s);
/*
 * Frees the retired snapshots that no reader holds any more. Returns how
 * many are still held (call again later; readers hold one for the length
 * of a request).
 */
size_t snapshot_slot_reap(struct snapshot_slot *slot);

#endif
