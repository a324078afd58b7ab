/*
 * live.h: live pages. A page open in a browser holds one Server-Sent
 * Events stream (GET /_quire/live?u=<its path>) and hears when its bytes
 * change, when it is gone, and when it moved.
 *
 * Subscribers. Each stream is a subscriber to one (host, path): "" is the
 * main site, else a custom domain's name. They are indexed by that pair
 * (a map of pages, each with its list of subscribers), so that a publish
 * costs the paths that changed plus the readers of those paths, never
 * the number of readers: live_on_publish() walks snapshot_diff(), the
 * same difference of snapshots the purge set is made of (purge.h), and
 * looks each changed path up (on the main site and on each custom domain
 * that serves it: open ones at the same path, routed notes at their
 * route).
 *
 * Connections. This module knows nothing of HTTP: a subscriber's
 * connection is an opaque pointer and three calls (struct live_ops) that
 * start its stream, hand it bytes without waiting, and end it. live-http.c
 * maps them to the front's deferred streams (http.h); quire's own HTTP/1.1
 * connections (issue 34) will map them to theirs. Calls to ops come from
 * the thread that subscribes (a loop), from the loader thread (publish)
 * and from the heartbeat thread, always under the registry's lock, so an
 * implementation hands bytes to the connection's own loop rather than
 * writing to it.
 *
 * Events, in the text/event-stream format:
 *   retry: 3000                       at the start: the browser's reconnect delay
 *   event: hello    data: <ETag>      at the start: the page's ETag then
 *   event: changed  data: <ETag>      the page's bytes changed
 *   event: gone     data: (empty)     no page there any more (deleted, unpublished)
 *   event: moved    data: <URL path>  an old URL now: the redirect's target
 *   ": " comment                      every heartbeat_ms, so that proxies keep it
 *
 * Limits. max_total subscribers in all, max_per_address for one client
 * (its address as the guard counts it: IPv6 by /64); beyond, a subscribe
 * is refused (the front answers 503 or 429 with Retry-After). A reader
 * whose connection already holds more than max_pending bytes unsent is
 * closed at the next event or heartbeat: a slow reader never holds more
 * than that of the server's memory.
 *
 * Rejected: one stream per browser for all its tabs (a SharedWorker:
 * not in every browser, and one tab's page is what the stream is about);
 * polling with conditional requests (a request per tab every few seconds
 * for changes that are rare, and seconds late); WebSockets (two-way, for
 * one-way news; SSE reconnects by itself and passes through proxies as a
 * plain response).
 */
#ifndef QUIRE_LIVE_H
#define QUIRE_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "site/snapshot.h"
#include "util/buf.h"

/* What a connection does for the registry; see "Connections" above. */
struct live_ops {
	/* Sends the stream's head (before any write). */
	void (*start)(void *conn);
	/*
	 * Hands over bytes (emptying b) without waiting: 0, or -1 when the
	 * client has gone or more than max bytes would wait to be sent.
	 */
	int (*write)(void *conn, struct buf *b, size_t max);
	/* Ends the stream; conn is not used again by the registry. */
	void (*close)(void *conn);
};

struct live_options {
	size_t max_total;        /* subscribers in all; 0 = 4096 */
	size_t max_per_address;  /* subscribers of one client address; 0 = 16 */
	size_t max_pending;      /* bytes a subscriber's connection may hold unsent; 0 = 64 KiB */
	int heartbeat_ms;        /* 0 = 15,000 */
	int retry_ms;            /* the browser's reconnect delay; 0 = 3,000 */
};

struct live;
struct live_sub;

/*
 * A registry with its heartbeat thread, calling ops for each connection.
 * NULL when the thread cannot start (logged). Free with live_free().
 */
struct live *live_new(const struct live_options *o, const struct live_ops *ops);

/* Ends every stream and frees. Call after the front stopped. Accepts NULL. */
void live_free(struct live *lv);

enum live_refusal {
	LIVE_OK,
	LIVE_FULL_ADDRESS,       /* the client holds max_per_address already: 429 */
	LIVE_FULL,               /* max_total reached: 503 */
};

/*
 * Subscribes conn to host ("" for the main site) and path (decoded,
 * without the URL prefix), counted against client (the guard's key of its
 * address; "" for a trusted proxy's, which only the total caps): starts its stream and writes the retry and hello (etag: the
 * page's, or "") lines. Returns the subscriber, with a reference for the
 * caller, who gives it back with live_unsubscribe() once conn is done; or
 * NULL with *why, and conn untouched.
 */
struct live_sub *live_subscribe(struct live *lv, const char *host, const char *path, size_t len,
				const char *client, const char *etag, void *conn,
				enum live_refusal *why);

/*
 * conn's client has gone or its stream was ended: ends the stream if the
 * registry has not (ops->close), and drops the caller's reference. Any
 * thread. Accepts NULL.
 */
void live_unsubscribe(struct live_sub *sub);

/*
 * The loader's publish hook (loader_on_publish(l, live_on_publish, lv)):
 * sends each subscriber of a path that changed between was and now its
 * event. Never waits for a reader.
 */
void live_on_publish(void *lv, const struct snapshot *was, const struct snapshot *now);

/* Writes the heartbeat comment to every subscriber now (the thread does it every heartbeat_ms). */
void live_heartbeat(struct live *lv);

struct live_stats {
	size_t subscribers;      /* open now */
	size_t pages;            /* (host, path) pairs with subscribers */
	uint64_t visits;         /* subscribers an event was written to (publishes only) */
	uint64_t lookups;        /* (host, path) pairs publishes looked up */
	uint64_t events;         /* events written */
	uint64_t slow;           /* closed for holding more than max_pending */
	uint64_t refused;        /* subscribes refused at a limit */
};
void live_stats(struct live *lv, struct live_stats *out);

/* Appends the quire_live_* metrics in the Prometheus text format. */
void live_metrics(void *lv, struct buf *out);

/*
 * The page a live request follows, from its raw query string: the first
 * u= parameter, percent-decoded (a '+' stays a '+'), a path that starts
 * with prefix ("" or "/docs") followed by '/' or nothing, at most 4 KiB,
 * without control bytes; into out without the prefix ("/" for the prefix
 * itself). 0, or -1 with *why naming what is wrong.
 */
int live_parse_target(const char *query, const char *prefix, struct buf *out, const char **why);

/*
 * live-http.c: the front's side. A registry whose connections are the
 * front's deferred streams (http_request_park(), http.h), or NULL
 * (logged); and its endpoint, GET /_quire/live?u=<path>, added to srv
 * (before it runs). Answers: 200 text/event-stream; 400 for a bad u=
 * (saying why); 404 when no page of the site is at that path; 405 for
 * another method; 429 (the client's share) or 503 (all) with
 * Retry-After. Free the registry after the front has stopped and before
 * it is freed.
 */
struct http_server;
struct live *live_http_new(const struct live_options *o);
int live_http_register(struct live *lv, struct http_server *srv);

#endif
