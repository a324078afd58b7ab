/*
 * http.h: the HTTP/1.1 front that serves the live snapshot.
 *
 * Every page was rendered, compressed and hashed when its snapshot was
 * built, so answering a request is a lookup and a send: take the live
 * snapshot, find the page, hand its bytes to the socket by reference (no
 * copy), and drop the page when the kernel has them. Attachments go out
 * with sendfile. Nothing on the request path renders, compresses, or
 * allocates in proportion to the page.
 *
 * Threads. Each of opt->threads event loops owns a listening socket bound
 * to the same address with SO_REUSEPORT, so the kernel spreads new
 * connections and the loops share nothing on the request path but the
 * snapshot slot. No other process may join them: a server already
 * listening on the address makes http_server_new() fail ("address in
 * use"). Counters are per loop and summed when /metrics is read.
 *
 * Handlers. /healthz and /metrics are built in; other modules (the sync
 * API, search) hook in with http_server_add_handler() before the server
 * runs. A handler answers synchronously with http_reply(), or defers the
 * request with http_request_defer() and answers later from any thread
 * with http_deferred_reply(); it sees the request through the small
 * accessor set below, never through libevent: only the files of src/http/
 * include libevent's headers.
 */
#ifndef QUIRE_HTTP_H
#define QUIRE_HTTP_H

#include <stddef.h>

#include "site/snapshot.h"
#include "util/buf.h"

struct http_options {
	const char *listen;            /* "127.0.0.1:8080", "[::1]:0"; port 0 = any free port */
	int threads;                   /* event loops, one listening socket each; 0 = 1 */
	struct snapshot_slot *slot;    /* borrowed: must outlive the server */
	const char *url_prefix;        /* "" or "/docs": stripped before lookup; 404 outside it */
	const char *access_log;        /* path of the access log, or NULL for none */
	int access_log_json;           /* its lines as JSON objects, not the combined format */
	int metrics_public;            /* /metrics from any address, else loopback only (403) */
	int max_connections;           /* total over all loops; 0 = no limit. At it, a loop
					  closes its oldest idle connection (no request in
					  progress) for each new one; with none idle the new
					  one is accepted and closed at once */
	int max_per_address;           /* connections one client address may hold; 0 = an
					  eighth of max_connections (at least 16), or no cap
					  without max_connections; -1 = no cap */
	double min_request_rate;       /* bytes a second a request body being received
					  must average once it is slow_after_s old; 0 = 256 */
	int slow_after_s;              /* 0 = 10 s */
	int header_timeout_s;          /* 0 = 10 s: a request's head must arrive whole
					  within this of its first byte, or the connection
					  is closed without an answer */
	const char *trusted_proxies;   /* addresses and networks max_per_address does not
					  apply to ("10.0.0.0/8 ::1"), or NULL */
	size_t max_header_size;        /* 0 = 8 KiB (request line included) */
	size_t max_uri_length;         /* 0 = 4 KiB: longer request targets get 414 */
	size_t max_body_size;          /* 0 = 1 MiB: the largest body any request may have
					  (413 beyond); only requests a body policy allows
					  it get more than small_body_size */
	size_t small_body_size;        /* 0 = 64 KiB: the most any other request may carry */
	int read_timeout_s;            /* 0 = 15 s: idle and slow-sending clients are dropped */
	int write_timeout_s;           /* 0 = 30 s: clients that stop reading are dropped */
	int shutdown_grace_s;          /* 0 = 10 s: how long a stop waits for responses in flight */
	int handle_signals;            /* run installs SIGINT/SIGTERM (stop) and SIGHUP (reload) */
	void (*on_reload)(void *ctx);  /* SIGHUP: called on the thread of http_server_run; may be NULL */
	void *reload_ctx;
	int loading;                   /* answer 503 until http_server_ready() (see there) */
	/* while loading: the notes' worth of work done and the notes found, for /healthz */
	void (*progress)(void *ctx, size_t *notes, size_t *of);
	void *progress_ctx;
};

struct http_server;

/*
 * Creates the loops and binds the listening sockets (so the port is known
 * before run). Strings in opt are copied; opt->slot is borrowed. Returns
 * NULL with a log line on failure. Ignores SIGPIPE process-wide: writes to
 * closed sockets must fail with EPIPE, not kill the server.
 */
struct http_server *http_server_new(const struct http_options *opt);

/*
 * A server that listens before its site is loaded (opt->loading): it runs
 * at once and answers every request 503 with Retry-After, /healthz with
 * {"status":"loading","notes":N,"of":M} from opt->progress, until
 * http_server_ready(). Meanwhile, on any one thread, the caller may set
 * the URL prefix, add handlers and body policies as before a run; from
 * http_server_ready() on (thread-safe: the loops see all that was set
 * before it) they are served, and no more may be added. A server made
 * without opt->loading is ready from the start.
 */
void http_server_set_url_prefix(struct http_server *srv, const char *prefix);
/*
 * Adds fn to what /metrics writes (it appends families to out, on a
 * serving thread, so it must be thread-safe), as the URL prefix: before
 * the server is ready. Up to eight. While the server loads, /metrics
 * answers with its own figures and the load's progress only.
 */
void http_server_add_metrics(struct http_server *srv, void (*fn)(void *ctx, struct buf *out),
			     void *ctx);

/*
 * Adds a header line ("Name: value\r\n", copied, unchecked: the caller's
 * own) to every answer of a note or a listing (an HTML page of the
 * snapshot, 200 or 304). Before the server is ready. Live pages say so
 * with it ("Server-Timing: quire-live"): the page's script reads it, and
 * an export, served without quire, lacks it.
 */
void http_server_add_page_header(struct http_server *srv, const char *line);

/*
 * SIGHUP's other half: opens the access log again in the old file's place
 * (after logrotate moved it); lines being written go to one or the other
 * whole. 0, or -1 (logged: the old file is kept).
 */
int http_server_reopen_log(struct http_server *srv);
void http_server_ready(struct http_server *srv);

/* The bound port (useful with port 0). */
int http_server_port(const struct http_server *srv);

/* Whether the server listens on a loopback address only (127.0.0.0/8, ::1). */
int http_server_loopback(const struct http_server *srv);

/*
 * Runs every loop (loop 0 on the calling thread, the others on threads of
 * their own) until http_server_stop() or, with opt->handle_signals, SIGINT
 * or SIGTERM. Returns 0 after a clean stop, -1 on failure. Call it once.
 */
int http_server_run(struct http_server *srv);

/*
 * Thread-safe (not async-signal-safe): stops accepting, lets responses in
 * flight finish (within the grace period), closes idle connections, and
 * makes http_server_run return. Callable before run, which then returns at
 * once, and more than once.
 */
void http_server_stop(struct http_server *srv);

/* Frees a server that is not running (never ran, or run returned). Accepts NULL. */
void http_server_free(struct http_server *srv);

/*
 * Extension handlers.
 *
 * A request whose decoded path (after the URL prefix) equals prefix, or
 * starts with it when prefix ends with '/', goes to fn instead of the
 * snapshot: "/api/" takes "/api/anything". The first match in
 * registration order wins. fn runs on a loop thread, possibly on several
 * at once, so it must be thread-safe; it must answer with http_reply() or
 * defer the request with http_request_defer() before it returns
 * (otherwise the client gets 500). Register before
 * http_server_run(). prefix is copied; ctx is borrowed. Returns 0 or -1.
 */
struct http_request;
int http_server_add_handler(struct http_server *srv, const char *prefix,
			    void (*fn)(struct http_request *req, void *ctx), void *ctx);

/*
 * Like http_server_add_handler(), and fn also gets the requests under
 * prefix whose target the server itself would refuse with a bare 400
 * (bad or NUL escapes, control bytes, backslashes, invalid UTF-8, "//",
 * "." and ".." segments), so that it can say what is wrong. For those,
 * http_request_path() returns NULL; http_request_target() has the raw
 * target. The prefix is matched against the raw target byte for byte.
 */
int http_server_add_raw_handler(struct http_server *srv, const char *prefix,
				void (*fn)(struct http_request *req, void *ctx), void *ctx);

/*
 * What the requests a handler answers count as in /metrics
 * (quire_requests_total{kind} and the duration histogram): "api" unless
 * set here for the handler registered with exactly prefix. 0, or -1 when
 * there is none.
 */
enum http_handler_kind { HTTP_HANDLER_API, HTTP_HANDLER_SEARCH, HTTP_HANDLER_DAV };
int http_server_set_handler_kind(struct http_server *srv, const char *prefix,
				 enum http_handler_kind kind);

/*
 * Decides from a request's method, target and Authorization header alone,
 * before any of its body is read, how large a body it may carry (at most
 * max_body_size). Requests under prefix (the raw target, after the URL
 * prefix) get what fn says; every other request at most small_body_size.
 * A body over the limit is refused with 413 and the connection closed,
 * unread. fn runs on the serving threads and must be thread-safe;
 * authorization is NULL when the request has none. Several prefixes may each have
 * a policy (up to four); the first registered that matches decides.
 */
typedef size_t (*http_body_policy)(void *ctx, const char *method, const char *target,
				   const char *authorization);
void http_server_set_body_policy(struct http_server *srv, const char *prefix,
				 http_body_policy fn, void *ctx);

/*
 * Request methods. Besides evhttp's, the server accepts the extension
 * methods of WebDAV (RFC 4918) listed here, with their bodies; any other
 * method is HTTP_OTHER (TRACE and CONNECT, and those with no name the
 * server knows, which the snapshot answers 501).
 */
enum http_method {
	HTTP_GET,
	HTTP_HEAD,
	HTTP_POST,
	HTTP_PUT,
	HTTP_DELETE,
	HTTP_PATCH,
	HTTP_OPTIONS,
	HTTP_PROPFIND,
	HTTP_PROPPATCH,
	HTTP_MKCOL,
	HTTP_COPY,
	HTTP_MOVE,
	HTTP_LOCK,
	HTTP_UNLOCK,
	HTTP_OTHER,
};

/*
 * Answers req as the site does when no handler takes its path: the page
 * of the snapshot (or of its host) at that path for GET and HEAD, else
 * 404; 405 for other methods. For a handler that stands aside.
 */
void http_serve_snapshot(struct http_request *req);

/* Accessors; every pointer returned is valid until the handler returns. */
enum http_method http_request_method(const struct http_request *req);
/*
 * The method's name as sent ("GET", "PROPFIND", "TRACE"), a static string;
 * NULL for an HTTP_OTHER method whose name the server does not know
 * (libevent keeps no name for a method it does not know either).
 */
const char *http_request_method_name(const struct http_request *req);
/*
 * The percent-decoded path without the URL prefix, NUL-terminated; NULL
 * for a refused target passed to a raw handler.
 */
const char *http_request_path(const struct http_request *req);
/*
 * The request target as sent (still percent-encoded, query included),
 * after the authority of an absolute-form target and after the URL prefix
 * when the raw target starts with it.
 */
const char *http_request_target(const struct http_request *req);
/* The peer's address as text ("127.0.0.1", "::1"), or "" when unknown. */
const char *http_request_peer(const struct http_request *req);
/*
 * When the request was dispatched (its head and body read), on clock_ms()'s
 * clock: the start of what the access log and the histograms time.
 */
double http_request_start_ms(const struct http_request *req);
/*
 * The URL prefix the request's path was found under: the main site's
 * ("" or "/docs"), "" for a custom domain. Static or the server's.
 */
const char *http_request_url_prefix(const struct http_request *req);
/* The raw query string after '?', or NULL. */
const char *http_request_query(const struct http_request *req);
/* The first value of a request header (case-insensitive name), or NULL. */
const char *http_request_header(const struct http_request *req, const char *name);
/* The request body (may be empty, never NULL); its length goes to *len. */
const void *http_request_body(struct http_request *req, size_t *len);
/*
 * Moves the request body into out (replacing its contents) with one copy
 * and no second buffer of the whole size; afterwards the body reads as
 * empty. Returns the length.
 */
size_t http_request_take_body(struct http_request *req, struct buf *out);
/*
 * Spooled bodies. A request whose body policy lets it carry more than
 * small_body_size has its body written, as it arrives, to a new file in
 * the spool folder (dirfd: a folder on the vault's file system, borrowed,
 * so that the file can be renamed into place), never held whole in
 * memory. Set before the server is ready; without a spool such bodies
 * are read into memory as before.
 */
void http_server_set_body_spool(struct http_server *srv, int dirfd);
struct http_body_file {
	int fd;           /* open for reading and writing; read it with pread() */
	char name[64];    /* its name in the spool folder */
	unsigned long long len;
	char sha256[65];  /* its SHA-256, hex, computed as it arrived */
};
/*
 * Takes a spooled body over: 1 with *out filled, and the caller then
 * closes out->fd and either renames out->name out of the spool folder or
 * unlinks it; 0 when the request's body is in memory (read it with
 * http_request_body() or http_request_take_body()). A body not taken is
 * removed after the answer.
 */
int http_request_take_body_file(struct http_request *req, struct http_body_file *out);

/*
 * The decoded value of the first name=value pair of a query string (NULL
 * is an empty one) into out: 1 when found, 0 when absent, -1 when its
 * percent-encoding is invalid or it holds a NUL byte.
 */
int http_query_param(const char *query, const char *name, struct buf *out);

/* True when the peer is one of the trusted proxies (http_options.trusted_proxies). */
int http_request_peer_trusted(const struct http_request *req);
/* True when the peer connected from a loopback address. */
int http_request_peer_is_loopback(const struct http_request *req);
/* The snapshot this request is served from, borrowed for the handler's call. */
struct snapshot *http_request_snapshot(const struct http_request *req);
/*
 * The custom domain (see hosts.h) the request is for, or NULL for the main
 * site. What a handler answers for the main site, hosts_rewrite() makes
 * right for it.
 */
struct snapshot_host *http_request_host(const struct http_request *req);

/* Adds a response header (name and value are copied). Before http_reply. */
void http_reply_header(struct http_request *req, const char *name, const char *value);
/*
 * Sends the response: status, content type (NULL for none), and the body,
 * which is copied (omitted on the wire for HEAD, but counted in
 * Content-Length). Call once.
 */
void http_reply(struct http_request *req, int status, const char *content_type,
		const void *body, size_t len);
/* Like http_reply, but takes over body's bytes (no copy) and leaves it as BUF_INIT. */
void http_reply_buf(struct http_request *req, int status, const char *content_type,
		    struct buf *body);

/*
 * Deferred replies, for work that must not run on a loop (file writes,
 * long polls).
 *
 * Inside its handler, http_request_defer() takes the request over: the
 * handler returns without replying, copying first whatever it needs from
 * the request (the accessors stay valid until it returns). The caller
 * owns the returned handle until it hands it back with exactly one
 * http_deferred_reply() or http_deferred_reply_buf(), from any thread;
 * the response is then sent by the request's own loop, woken through a
 * pipe, so libevent is only ever touched on its own thread. If the client
 * has gone meanwhile, the reply is dropped.
 *
 * A deferred request counts as in flight: a stop waits for it (up to the
 * grace period). Every handle must be handed back before
 * http_server_free(), even after http_server_run() has returned (the
 * reply is then discarded).
 */
struct http_deferred;
struct http_deferred *http_request_defer(struct http_request *req);
/*
 * Like http_request_defer(), for a long poll: a stop does not wait for it
 * but answers it 503 at once (the holder's later answer is dropped).
 */
struct http_deferred *http_request_park(struct http_request *req);
/* Adds a response header (copied). Before the reply, on the thread holding d. */
void http_deferred_header(struct http_deferred *d, const char *name, const char *value);
/*
 * Sends status with a copy of body and frees d. Thread-safe. Every deferred
 * request must be answered before http_server_free() (a parked one too,
 * even after a stop answered it 503): d refers to its loop.
 */
void http_deferred_reply(struct http_deferred *d, int status, const char *content_type,
			 const void *body, size_t len);
/* Like http_deferred_reply, taking over body's bytes (left as BUF_INIT). */
void http_deferred_reply_buf(struct http_deferred *d, int status, const char *content_type,
			     struct buf *body);

/*
 * Streamed deferred replies, for answers too large to build whole (a
 * WebDAV PROPFIND of the vault): the response goes out with
 * "Transfer-Encoding: chunked" as the holder writes it, from its own
 * thread. stream_start sets the status and content type (headers added
 * before it with http_deferred_header() go out too); each stream_write
 * hands over piece's bytes (piece is emptied), waiting while more than a
 * window (256 KiB) is already waiting for the socket, and returns -1 once
 * the client has gone (or stopped reading for 30 s): the holder may stop
 * writing then. stream_end finishes the answer and gives d up; it must be
 * called once, whatever the writes returned. Never call these from a loop
 * thread (the wait would block the loop).
 */
void http_deferred_stream_start(struct http_deferred *d, int status, const char *content_type);
int http_deferred_stream_write(struct http_deferred *d, struct buf *piece);
void http_deferred_stream_end(struct http_deferred *d);

/*
 * For streams that live as long as their reader (live pages): like
 * http_deferred_stream_write(), but never waits. Hands piece's bytes over
 * (piece is emptied) and returns 0, or returns -1 without taking them
 * when the client has gone or when more than max bytes would be waiting
 * for the socket (a reader that does not read: the holder ends the
 * stream). Any thread, the loop's too.
 */
int http_deferred_stream_offer(struct http_deferred *d, struct buf *piece, size_t max);

/*
 * Sets fn to be called once, on d's loop thread, when d's client has gone
 * or, at the latest, just before d is freed after its answer was sent:
 * the holder learns that it may stop writing (it must still end a stream
 * it started; a reply after the answer is impossible). Set it right after
 * taking d over, on the handler's thread.
 */
void http_deferred_on_end(struct http_deferred *d, void (*fn)(void *ctx), void *ctx);

/*
 * The client address a connection counts against for max_per_address
 * into out (at least 48 bytes): an IPv4 address as text ("10.0.0.1",
 * also when mapped into IPv6), an IPv6 one by its /64 ("2001:db8:1:2::/64"):
 * one host of IPv6 commonly holds a whole /64. 0, or -1 for another family
 * (exported for tests).
 */
struct sockaddr;
int http_client_key(const struct sockaddr *sa, char *out, size_t size);

/*
 * Whether an absolute http(s) URI ("https://h:8443/dav/x") names the
 * server that a request with this Host value ("h:8443") was sent to: the
 * same host (case and a trailing dot aside) and port (a missing one is
 * the scheme's default). Any scheme but http and https, userinfo, or a
 * bad port: no. For WebDAV's Destination (RFC 4918 9.8.5: another
 * server's is 502). 1 or 0.
 */
int http_same_origin(const char *uri, const char *host);

/* True for "127.x.y.z", "::1" and "::ffff:127.x.y.z" (exported for tests). */
int http_addr_is_loopback(const char *addr);

#endif
