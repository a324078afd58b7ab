/*
 * http-int.h: what the files of the HTTP front share (http.c, request.c,
 * static.c, http_respond.c, defer.c, builtin.c, date.c, methods.c; http.c's header
 * comment says which owns what). Private to src/http/: the public API is
 * http.h, and searchapi.c uses only that.
 *
 * The state is three structures: the server (options, handlers, loops),
 * one worker per event loop (its evhttp, pipes, connections, counters and
 * the buffers a response is built in), and the request being answered,
 * which lives on the loop's stack for the length of one callback.
 *
 * It does not include http/http.h, whose types it uses: the files include
 * it first, so that the two headers make no include circle.
 */
#ifndef QUIRE_HTTP_INT_H
#define QUIRE_HTTP_INT_H

#ifndef QUIRE_HTTP_H
#error "include http/http.h before http/http-int.h: a module's private header does not include its public one (no include circle)"
#endif

#include "site/snapshot.h"
#include "util/buf.h"
#include "util/map.h"
#include "util/metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/buffer.h>

#include "http/parse.h"

#define HTTP_DATE_SIZE 30 /* "Sun, 06 Nov 1994 08:49:37 GMT" + NUL */



/*
 * What a request was, for quire_requests_total{kind=...} and the duration
 * histogram: K_API is the sync API's (and any handler's that says nothing
 * else), K_ERROR a request refused before anything could answer it
 * (framing, target, 405, 503 while loading).
 */
enum kind {
	K_PAGE, K_FILE, K_ASSET, K_REDIRECT, K_NOTFOUND, K_API, K_HEALTH, K_METRICS,
	K_SEARCH, K_DAV, K_ERROR, NKINDS
};

/* The statuses counted one by one for the sync API and WebDAV (others: the last slot). */
#define HTTP_STATUSES 28
/* The slot of a status in struct counters' calls (respond.c), and its code (0: other). */
int http_status_slot(int status);
int http_status_of_slot(int slot);
#define HTTP_METHODS (HTTP_OTHER + 1)

/*
 * Per-loop counters. Only the owning loop writes them, with a relaxed load
 * and store (plain moves on common hardware); /metrics reads them from any
 * loop with relaxed loads.
 */
struct counters {
	_Atomic uint64_t requests[4][NKINDS]; /* 2xx, 3xx, 4xx, 5xx */
	_Atomic uint64_t bytes;
	_Atomic uint64_t not_modified;
	_Atomic uint64_t refused;
	_Atomic uint64_t refused_address; /* over max_per_address */
	_Atomic uint64_t slow;            /* closed for receiving a request too slowly */
	_Atomic uint64_t evicted;         /* idle, closed at max_connections for a new client */
	/* from the request's dispatch to its answer's head, by kind */
	struct metrics_histogram duration[NKINDS];
	/* the sync API's [0] and WebDAV's [1] requests by method and status */
	_Atomic uint64_t calls[2][HTTP_METHODS][HTTP_STATUSES];
};

static inline void bump(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static inline uint64_t peek(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

struct handler {
	char *prefix;
	size_t len;
	int is_prefix; /* prefix ends with '/': matches everything under it */
	int raw;       /* also gets refused targets (http_server_add_raw_handler) */
	enum kind kind;
	void (*fn)(struct http_request *req, void *ctx);
	void *ctx;
};

/* conn.c: an open connection, from accept to close */
enum conn_state {
	C_IDLE,    /* waiting for a request's first byte */
	C_HEAD,    /* reading a head */
	C_BODY,    /* reading a body */
	C_BUSY,    /* the request is read and not yet answered (or its answer is a stream) */
};

struct conn {
	struct worker *w;
	int fd;
	enum conn_state state;
	struct event rd, wr, timer;
	int reading, writing;     /* rd, wr added */
	int tstate;               /* what the timer is armed for (a state, or -1) */
	struct conn *prev, *next; /* w->conns */
	struct conn *idle_prev, *idle_next; /* w's idle list, oldest first */
	int idle;
	char addr[48];            /* the client's address, as counted (guard.c), or "" */
	char peer[48];            /* its address as text */
	int trusted;              /* the address is a trusted proxy's (guard.c) */
	struct reqparse rp;
	char *in;                 /* the input: the current head, then what follows */
	size_t in_len, in_cap, in_pos, head_start, head_end;
	double now;               /* clock_ms() at the last read */
	double since;             /* clock_ms() at the current request's first byte */
	double last;              /* clock_ms() at the last read of a body, or the last answer */
	uint64_t body_got, body_limit;
	struct buf body;          /* a body in memory */
	int spool_fd;             /* or spooled (http_server_set_body_spool), or -1 */
	char spool_name[64];
	struct hash_sha256 *spool_hash; /* of the spooled bytes, as they arrive */
	uint64_t spool_synced;    /* bytes handed to writeback (sync_file_range) */
	char why[96];             /* a refusal's reason made for this request */
	int keep_alive;           /* the request allows the connection to stay open */
	int close_after;          /* close once the output is written */
	int broken;               /* the socket failed: close at the next chance */
	int linger, lingering;    /* close after a refusal by reading what follows (linger()) */
	int pending;              /* output waiting: counted in w->inflight */
	int in_step;              /* conn.c's step is on the stack */
	struct evbuffer *out;     /* the output not yet written */
	struct http_deferred *deferred; /* the request a handler took over, or NULL */
};

/* Accepts a new connection on w (the listener's callback). */
void http_conn_accept(struct worker *w, int fd, const struct sockaddr *sa, int salen);
/*
 * Sends a response: head, then body (len bytes, handed over: release is
 * called once they are written or dropped; NULL: copied now) or, with
 * fd >= 0, len bytes of the file fd from off (sendfile; closed after).
 * Tries one writev at once; what does not fit waits for the socket.
 */
void http_conn_send(struct conn *c, const char *head, size_t hlen, const void *body, size_t len,
	       evbuffer_ref_cleanup_cb release, void *arg, int fd, uint64_t off);
/* Appends bytes to c's output (a stream's chunks), and writes them when it can. */
void http_conn_write(struct conn *c, const void *bytes, size_t len);
/*
 * The request on c is answered (its answer queued): on to the next one,
 * pipelined, or close. c may be freed when it returns, unless called
 * from within the connection's own step (a handler answering at once).
 */
void http_conn_answered(struct conn *c);
/* Closes c now (its deferred request, if any, is dead). */
void http_conn_close(struct conn *c);
/* After work done from outside conn.c's step (a deferred answer): closes or reads on. */
void http_conn_settle(struct conn *c);
/* At a stop: closes what is idle, and marks the rest to close once answered. */
void http_conn_stop_all(struct worker *w);
/* A request head's header (case-insensitive name), or NULL. */
static inline const char *http_conn_header(const struct conn *c, const char *name)
{
	return reqparse_header(&c->rp, name);
}

/*
 * A request taken over by a handler. Created and listed on its loop; the
 * holder fills http_hdr and body; queued back under the loop's done_lock.
 */
struct http_deferred {
	struct worker *w;
	struct conn *c;             /* loop thread only; NULL once its client left */
	struct http_deferred *prev, *next; /* w->deferred: outstanding (loop thread only) */
	struct http_deferred *qnext;       /* w->done queue */
	enum kind kind;
	enum http_method method;
	const char *method_name;    /* the request's, static (for the access log) */
	double start_ms;            /* clock_ms() when the request was dispatched */
	int head, absolute;
	int parked;                 /* a long poll: a stop answers it 503 instead of waiting */
	int status;
	struct buf hdr;             /* header lines of the answer */
	struct buf body;            /* a stream's: the bytes not yet taken by the loop */
	/* a streamed answer (http_deferred_stream_*); under w->done_lock but where said */
	int stream, stream_end, stream_dead, queued;
	size_t out_len;             /* the socket buffer's length when the loop last looked */
	pthread_cond_t drained;     /* out_len fell, or the client left */
	int head_sent;              /* loop only */
	int major, minor;           /* the request's version */
	struct evbuffer *out;       /* loop only: the connection's output, watched by drain */
	struct evbuffer_cb_entry *drain;
	void (*on_end)(void *ctx);  /* http_deferred_on_end(): called once, loop thread */
	void *end_ctx;
};

struct worker {
	struct http_server *srv;
	int index;
	pthread_t thread;
	int thread_started;
	struct event_base *base;
	struct evconnlistener *listener;
	const struct timeval *read_common, *head_common; /* srv's, as common timeouts */
	int listen_fd;            /* until the listener owns it, then -1 */
	int ctl[2];               /* stop pipe: any byte stops this loop */
	struct event *ctl_ev;
	struct event *grace_ev;
	struct event *flush_ev;
	struct event *resume_ev;  /* re-enables accepting after EMFILE */
	int done_pipe[2];         /* deferred answers waiting: a byte wakes the loop */
	struct event *done_ev;
	pthread_mutex_t done_lock;
	int done_lock_init;
	struct http_deferred *done_head, *done_tail; /* under done_lock */
	struct http_deferred *deferred; /* taken over and not yet answered (loop thread) */
	time_t accept_warned;     /* last accept error logged (one line per 10 s) */
	struct conn *conns;       /* open */
	struct conn *idle_head, *idle_tail; /* those with no request in progress, oldest first */
	char *scratch;            /* the decoded path: max_uri_length + 2 bytes */
	int stopping;
	long inflight;            /* connections with output waiting, and deferred requests */
	struct timeval deadline;
	time_t date_sec;          /* second of the cached dates below */
	char date[HTTP_DATE_SIZE];
	char clf_date[80];        /* "10/Oct/2000:13:55:36 +0000" */
	char iso_date[24];        /* "2000-10-10T13:55:36" (the JSON access log's) */
	long date_usec;           /* the loop's cached time within its second */
	time_t lm_sec;            /* one-entry cache of the last Last-Modified */
	char lm[HTTP_DATE_SIZE];
	struct buf hdr;           /* header lines of the response being built */
	struct buf head;          /* its status line and header block */
	struct buf log;           /* access log lines not yet written */
	struct buf body;          /* a small answer built on the loop (/healthz) */
	struct counters c;
};

#define HTTP_MAX_POLICIES 4
#define HTTP_MAX_HOOKS 8

struct http_server {
	struct http_options opt;  /* with the strings below */
	char *listen;
	char *prefix;             /* "" or "/docs" (no trailing slash) */
	size_t prefix_len;
	char *access_log;
	int log_fd;               /* the access log; SIGHUP opens the file again in its place */
	int log_json;             /* one JSON object a line, not the combined format */
	struct metrics_hook {     /* more for /metrics (http_server_add_metrics) */
		void (*fn)(void *ctx, struct buf *out);
		void *ctx;
	} hooks[HTTP_MAX_HOOKS];
	int nhooks;
	char *page_header;        /* http_server_add_page_header(), or NULL */
	int lock_fd;              /* the address's lock (http.c: claim_address()), or -1 */
	size_t max_uri;
	struct timeval read_tv, write_tv, head_tv;
	int grace_s;
	struct worker **workers;
	int nworkers;
	int port;
	int loopback;             /* listening on 127.0.0.0/8 or ::1 only */
	struct handler *handlers;
	size_t nhandlers, ahandlers;
	size_t nraw;              /* handlers with raw set */
	atomic_int nconns;
	int guard_init;
	struct body_policy {      /* the body policies (guard.c), prefixes with the URL prefix */
		char *prefix;
		size_t len;
		http_body_policy fn;
		void *ctx;
	} policies[HTTP_MAX_POLICIES];
	int npolicies;
	int spool_fd;             /* http_server_set_body_spool()'s folder, or -1 */
	atomic_uint spool_seq;    /* the spooled files' names */
	int per_address;          /* the cap per client address, 0: none (guard.c) */
	struct trusted {          /* addresses the cap does not apply to (guard.c) */
		unsigned char net[16];
		int bits, v6;
	} *trusted;
	size_t ntrusted;
	double min_rate;
	int slow_after_s;
	pthread_mutex_t addr_lock;
	struct map addrs;         /* client address -> struct addr_count, under addr_lock */
	time_t started;
	int ran;
	atomic_int ready;         /* not loading: handlers and the prefix are set (http_server_ready) */
	struct event *sig_int, *sig_term, *sig_hup;
};

struct http_request {
	struct worker *w;
	struct conn *c;           /* NULL once answered */
	enum http_method method;
	const char *method_name;  /* http_request_method_name(): static, or NULL */
	int head;
	const char *uri;          /* raw request target */
	char *path;               /* decoded, without the prefix, in w->scratch */
	size_t path_len;
	const char *query;        /* raw, after '?', or NULL */
	struct snapshot *snap;
	struct snapshot_host *host; /* the custom domain asked for, or NULL: the main site */
	int host_own;             /* the page is one of host's own (a route), not the main site's */
	const char *tags;         /* the page's tags (struct page), for its Surrogate-Key */
	enum kind kind;
	int absolute;             /* absolute-form target */
	int close;                /* close the connection after the response */
	int replied;              /* answered or deferred */
	int sandbox;              /* an attachment a browser would run: CSP sandbox */
	const char *target;       /* http_request_target(), computed on first use */
	double start_ms;          /* clock_ms() when the request was dispatched */
	/* the answer's body (http_respond()): bytes, owned or referenced, or a file */
	const void *out;
	size_t out_len;
	evbuffer_ref_cleanup_cb out_release;
	void *out_arg;
	int out_fd;
	uint64_t out_off;
	int major, minor;         /* the request's version */
};

/*
 * Whether the server serves its site (http_server_ready()): until then,
 * every request is answered 503 and the handlers, body policies and URL
 * prefix are the starting thread's, not the loops'.
 */
static inline int http_server_is_ready(const struct http_server *srv)
{
	return atomic_load_explicit(&srv->ready, memory_order_acquire);
}

/* The first value of a request header (case-insensitive name), or NULL. */
static inline const char *in_header(const struct http_request *r, const char *name)
{
	return r->c ? http_conn_header(r->c, name) : NULL;
}

/* guard.c */

/* Sets the guard's limits from the options. */
void http_guard_init(struct http_server *srv);
void http_guard_release(struct http_server *srv);
/*
 * Counts a newly adopted connection against its client address. 0, or -1
 * when the address holds its share already: the caller closes it.
 */
int http_guard_admit(struct worker *w, struct conn *c, const struct sockaddr *sa);
/*
 * The most a request's body may carry, decided on its head alone (method,
 * target, Authorization): what the body policy of its prefix says, else
 * small_body_size.
 */
uint64_t http_guard_body_limit(const struct http_server *srv, const char *method,
			       const char *target, const char *authorization);
/* The connection c closes: its address's count goes down. */
void http_guard_forget(struct worker *w, struct conn *c);
/*
 * Parses opt->trusted_proxies (addresses and networks, "10.0.0.0/8",
 * "::1", separated by commas or spaces) into srv->trusted. 0, or -1
 * (logged) for one that is not an address.
 */
int http_guard_trust(struct http_server *srv, const char *list);

/* date.c */

/* Refreshes the loop's Date (w->date) and log date (w->clf_date) once a second. */
void http_refresh_dates(struct worker *w);
/* t as an HTTP date, in a per-loop buffer valid until the next call. */
const char *http_last_modified(struct worker *w, time_t t);
/*
 * Parses the three HTTP-date forms (IMF-fixdate, RFC 850, asctime) into
 * *out. Returns 0 or -1; an invalid date is ignored by the callers, as
 * RFC 9110 asks.
 */
int http_parse_http_date(const char *s, time_t *out);

/* request.c */

/*
 * A request read whole on c: decodes the target, then a handler or the
 * snapshot answers it.
 */
void http_on_request(struct conn *c);
/* Answers a request the parser refused (status, why) and closes after. */
void http_refuse(struct conn *c, int status, const char *why);
/*
 * The target's path decoded into out (room for strlen(uri) + 1 bytes),
 * *query pointed at the raw query or NULL. Returns the decoded length, or
 * -1 for a target a vault path can never be (see request.c).
 */
long http_decode_target(const char *uri, char *out, const char **query);
/* Why the framing of a request head is not what RFC 9112 allows, or NULL. */
const char *http_framing_error(const struct reqparse *rp);
/*
 * Why a request's n Host header values are not what RFC 9112 3.2 allows
 * (at most one, a host and port), or NULL. An absolute-form target's
 * authority is the host whatever Host says (RFC 9112 3.2.2).
 */
const char *http_host_error(const char *const *values, size_t n);

/* http_respond.c */

/* Decimal digits of v into out (at least 21 bytes); returns out. */
char *http_fmt_u64(char *out, uint64_t v);
/* Writes the loop's buffered access log lines to the log file. */
void http_flush_log(struct worker *w);
/*
 * Response header lines, gathered in the loop's http_hdr buffer until
 * http_respond(): a whole line ("Name: value\r\n"), a constant one, or a name
 * and a value (neither checked: callers pass their own or checked ones).
 */
void http_hdr_line(struct http_request *r, const char *line, size_t len);
#define HDR_CONST(r, s) http_hdr_line((r), (s), sizeof(s) - 1)
void http_hdr(struct http_request *r, const char *name, const char *value);
void http_set_length(struct http_request *r, uint64_t len);
/*
 * Sends the response: status, the header lines gathered, and the body in
 * the request's output buffer. Every response goes through here; the
 * request (and its connection) may be freed when it returns.
 */
void http_respond(struct http_request *r, int status);
/*
 * A streamed answer, for deferred requests (defer.c): the head with
 * "Transfer-Encoding: chunked", then chunks, then the last chunk, which
 * ends the request as http_respond() does.
 */
void http_respond_stream_head(struct http_request *r, int status);
void http_respond_stream_chunk(struct conn *c, const void *data, size_t len);
void http_respond_stream_end(struct conn *c);
/*
 * The answer's body for http_respond(): len bytes, copied as they are sent
 * (before http_respond() returns) unless release takes them over: it is
 * called once they are written or dropped.
 */
void http_set_body(struct http_request *r, const void *bytes, size_t len,
		   evbuffer_ref_cleanup_cb release, void *arg);
/* The reason phrase of a status ("Not Found"). */
const char *http_reason(int status);
/* A short plain-text answer (errors, 405, 503). */
void http_respond_text(struct http_request *r, int status, const char *text);
/* True for a byte of an HTTP token (a header name). */
int http_token_char(unsigned char c);
/* An evbuffer cleanup callback that frees arg (a buf_detach()ed body). */
void http_free_bytes(const void *data, size_t len, void *arg);

/* static.c */

/* Cache-Control for a snapshot answer: a year for immutable assets, else revalidate. */
void http_cache_control(struct http_request *r, int immutable);
/* True when an Accept-Encoding value lets us send gzip and does not prefer identity. */
int http_accepts_gzip(const char *ae);
/* True when a conditional GET/HEAD (If-None-Match, If-Modified-Since) gets 304. */
int http_not_modified(const struct http_request *r, const char *etag, time_t mtime);
/* If-Range value v: true when it names this representation (strong ETag or exact date). */
int http_if_range_ok(const char *v, const char *etag, time_t mtime);
/*
 * A Range value for a representation of size bytes: 1 with *off and *len,
 * 0 when it is to be ignored, -1 when it cannot be satisfied (416).
 */
int http_parse_range(const char *s, uint64_t size, uint64_t *off, uint64_t *len);
/*
 * Sends a page that lives in memory: gzip or identity after the client's
 * Accept-Encoding, 304 for conditional requests when status is 200.
 */
void serve_bytes(struct http_request *r, struct page *p, int status);
/* Serves a snapshot entry of any kind (page, asset, attachment, redirect, 404). */
void serve_page(struct http_request *r, struct page *p);
/* The snapshot's themed 404, or a plain one. */
void serve_not_found(struct http_request *r);
/* A miss: "/x/" that exists as "/x" (or the other way round) is a 301, else 404. */
void serve_miss(struct http_request *r);
/* 301 to prefix + path (decoded, encoded here) + the query, if any. */
void http_redirect_to(struct http_request *r, const char *path, size_t len);

/* defer.c */

/* The done pipe's callback: sends the answers handed back to this loop. */
void http_on_done(evutil_socket_t fd, short what, void *arg);
/* At a stop: answers the parked requests (long polls) 503 at once. */
void http_answer_parked(struct worker *w);
/* The client of a streamed answer left: its writer stops waiting (loop thread). */
void http_stream_gone(struct http_deferred *d);
/* Before the connections are freed: no deferred request is touched after. */
void http_kill_deferred(struct worker *w);
/* Frees the answers that came back after the loop stopped (needs done_lock). */
void http_drop_late_answers(struct worker *w);

/* methods.c */

/*
 * The method llhttp named ll_name, and its name for the handlers (static;
 * NULL for an HTTP_OTHER other than TRACE and CONNECT).
 */
enum http_method http_methods_of(const char *ll_name, const char **name);
/* The extension method name[0, len) is (exact case), or HTTP_OTHER. */
enum http_method http_methods_lookup(const char *name, size_t len);
/* The name of a method of enum http_method (static), or NULL for HTTP_OTHER. */
const char *http_methods_name(enum http_method m);

/* builtin.c */

/*
 * Registers /healthz, /metrics and /healthz/host: called first, so that
 * they are handlers 0 to 2. Returns 0 or -1.
 */
int http_add_builtin_handlers(struct http_server *srv);
/*
 * What a server still loading answers a request for path (decoded, NULL
 * when the target was refused), given the load's progress: the status
 * (503), *retry_after (seconds), the content type, and the body into out:
 * for /healthz (under any URL prefix, which is not known yet) the JSON
 * {"status":"loading","notes":N,"of":M}, else a line of text.
 */
int http_loading_answer(const char *path, size_t notes, size_t of, int *retry_after,
			const char **type, struct buf *out);
/*
 * Answers r so (http_loading_answer() with the server's progress); a
 * /metrics gets the metrics the server has while it loads.
 */
void http_answer_loading(struct http_request *r);
/* The name of a kind, as quire_requests_total{kind} and the access log write it. */
const char *http_kind_name(enum kind k);

/* http.c */

/* While stopping: ends the loop once nothing is in flight or the grace period is over. */
void http_check_stop(struct worker *w);

#endif
