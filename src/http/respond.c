/*
 * http_respond.c: writing responses, and the reply half of the handler API.
 *
 * evhttp parses requests (keep-alive, pipelining, bodies, limits); the
 * response side is ours (see http_respond()): the status line and headers are
 * written in one block, and the response is written from the request
 * callback and finished at once with evhttp_send_reply_end() when it fits
 * in the socket. Both came from profiles (bench/http-vs-nginx.sh): evhttp's
 * header lists and its wait for EPOLLOUT with epoll_ctl calls around every
 * request cost about a third of the server's CPU. What is left is mostly
 * the kernel's send path, which nginx pays too.
 *
 * Every answer, from the snapshot, a handler or a deferred reply, goes
 * through http_respond(), which also adds the security headers, counts the
 * response for /metrics (its class and kind, its duration in the loop's
 * histogram of its kind, and for the sync API and WebDAV its method and
 * status) and writes its access log line (buffered per loop, flushed at
 * 32 KiB and once a second). A request's duration runs from its dispatch
 * (http_on_request(), once evhttp has read it whole) to its answer's head:
 * two reads of the monotonic clock per request, and no allocation.
 */
#include "http/http.h"
#include "http/http-int.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/metrics.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h> /* the request's major/minor version */
#include <event2/keyvalq_struct.h>

#define LOG_FLUSH_SIZE (32 * 1024)

/* Decimal digits of v into out (at least 21 bytes); returns out. */
char *http_fmt_u64(char *out, uint64_t v)
{
	char tmp[21];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = '\0';
	return out;
}

const char *http_method_name(enum evhttp_cmd_type t)
{
	switch (t) {
	case EVHTTP_REQ_GET: return "GET";
	case EVHTTP_REQ_HEAD: return "HEAD";
	case EVHTTP_REQ_POST: return "POST";
	case EVHTTP_REQ_PUT: return "PUT";
	case EVHTTP_REQ_DELETE: return "DELETE";
	case EVHTTP_REQ_OPTIONS: return "OPTIONS";
	case EVHTTP_REQ_TRACE: return "TRACE";
	case EVHTTP_REQ_CONNECT: return "CONNECT";
	case EVHTTP_REQ_PATCH: return "PATCH";
	default: return "-";
	}
}

void http_flush_log(struct worker *w)
{
	const char *p = w->log.ptr;
	size_t left = w->log.len;

	while (left > 0) {
		ssize_t n = write(w->srv->log_fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_warn("http: access log: %s", n < 0 ? strerror(errno) : "short write");
			break;
		}
		p += n;
		left -= (size_t)n;
	}
	buf_reset(&w->log);
}

/*
 * s (or "-" for NULL) with quotes, backslashes and bytes outside printable
 * ASCII as \xHH, as nginx writes them.
 */
static void add_clf(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *u = (const unsigned char *)(s ? s : "-"), *run;

	for (;;) {
		/* the bytes that need no escape, copied as one run */
		for (run = u; *run >= 0x20 && *run < 0x7f && *run != '"' && *run != '\\'; run++)
			;
		buf_add(b, u, (size_t)(run - u));
		if (!*run)
			return;
		char e[4] = { '\\', 'x', hex[*run >> 4], hex[*run & 15] };
		buf_add(b, e, 4);
		u = run + 1;
	}
}

/* The Host, Referer and User-Agent headers of ev (NULL when absent), in one walk. */
static void log_headers(struct evhttp_request *ev, const char **host, const char **ref,
			const char **ua)
{
	const struct evkeyvalq *hs = evhttp_request_get_input_headers(ev);
	const struct evkeyval *kv;

	*host = *ref = *ua = NULL;
	for (kv = hs->tqh_first; kv; kv = kv->next.tqe_next) {
		switch (kv->key[0] | 0x20) {
		case 'h':
			if (!*host && strcasecmp(kv->key, "Host") == 0)
				*host = kv->value;
			break;
		case 'r':
			if (!*ref && strcasecmp(kv->key, "Referer") == 0)
				*ref = kv->value;
			break;
		case 'u':
			if (!*ua && strcasecmp(kv->key, "User-Agent") == 0)
				*ua = kv->value;
			break;
		}
	}
}

/* "HTTP/1.1\" 200 " (with json: "HTTP/1.1\",\"status\":200"), without printf. */
static void add_proto_status(struct buf *b, const struct evhttp_request *ev, int status,
			     int json)
{
	char p[10] = { 'H', 'T', 'T', 'P', '/', '0', '.', '0', '"' };

	p[5] = (char)('0' + (ev->major >= 0 && ev->major <= 9 ? ev->major : 0));
	p[7] = (char)('0' + (ev->minor >= 0 && ev->minor <= 9 ? ev->minor : 0));
	buf_add(b, p, 9);
	buf_adds(b, json ? ",\"status\":" : " ");
	buf_addc(b, '0' + status / 100 % 10);
	buf_addc(b, '0' + status / 10 % 10);
	buf_addc(b, '0' + status % 10);
}

/* ,"key":"s" (s escaped, invalid UTF-8 as U+FFFD), or nothing for NULL. */
static void add_json_field(struct buf *b, const char *key, const char *s)
{
	if (!s)
		return;
	buf_addf(b, ",\"%s\":\"", key);
	log_add_json(b, s, strlen(s));
	buf_addc(b, '"');
}

/* us microseconds as seconds with six decimals ("0.000123"). */
static void add_seconds(struct buf *b, uint64_t us)
{
	char num[24], frac[7];
	int i;

	buf_adds(b, http_fmt_u64(num, us / 1000000));
	for (i = 5; i >= 0; i--, us /= 10)
		frac[i] = (char)('0' + us % 10);
	frac[6] = '\0';
	buf_addc(b, '.');
	buf_add(b, frac, 6);
}

/*
 * One line of the access log: the combined format (NCSA, as Apache and
 * nginx write it) followed by the Host header and the duration in
 * seconds, or with --log-format json an object with the same fields.
 */
static void log_request(struct http_request *r, int status, size_t bytes, uint64_t us)
{
	struct worker *w = r->w;
	struct buf *b = &w->log;
	struct evhttp_connection *con = evhttp_request_get_connection(r->ev);
	const char *host, *ref, *ua;
	char *peer = NULL, num[24];
	ev_uint16_t port = 0;

	if (con)
		evhttp_connection_get_peer(con, &peer, &port);
	log_headers(r->ev, &host, &ref, &ua);
	if (w->srv->log_json) {
		buf_adds(b, "{\"time\":\"");
		buf_adds(b, w->iso_date);
		buf_addf(b, ".%03ldZ\",\"event\":\"access\",\"remote\":\"", w->date_usec / 1000);
		log_add_json(b, peer ? peer : "", peer ? strlen(peer) : 0);
		buf_addc(b, '"');
		add_json_field(b, "host", host);
		add_json_field(b, "method", r->method_name ? r->method_name : "-");
		add_json_field(b, "target", r->uri ? r->uri : "-");
		buf_adds(b, ",\"protocol\":\"");
		add_proto_status(b, r->ev, status, 1);
		buf_adds(b, ",\"bytes\":");
		buf_adds(b, http_fmt_u64(num, bytes));
		add_json_field(b, "referer", ref);
		add_json_field(b, "user_agent", ua);
		buf_addf(b, ",\"duration_ms\":%llu.%03llu,\"kind\":\"%s\"}\n",
			 (unsigned long long)(us / 1000), (unsigned long long)(us % 1000),
			 http_kind_name(r->kind));
	} else {
		buf_adds(b, peer ? peer : "-");
		buf_add(b, " - - [", 6);
		buf_adds(b, w->clf_date);
		buf_add(b, "] \"", 3);
		buf_adds(b, r->method_name ? r->method_name : "-");
		buf_addc(b, ' ');
		add_clf(b, r->uri);
		buf_addc(b, ' ');
		add_proto_status(b, r->ev, status, 0);
		buf_addc(b, ' ');
		buf_adds(b, http_fmt_u64(num, bytes));
		buf_add(b, " \"", 2);
		add_clf(b, ref);
		buf_add(b, "\" \"", 3);
		add_clf(b, ua);
		buf_add(b, "\" \"", 3);
		add_clf(b, host);
		buf_add(b, "\" ", 2);
		add_seconds(b, us);
		buf_addc(b, '\n');
	}
	if (b->len >= LOG_FLUSH_SIZE)
		http_flush_log(w);
}

/*
 * Response headers. evhttp keeps headers as a list of three malloc'd
 * pieces each and prints them one printf at a time; the profile showed
 * that at a tenth of the server's time. We write the header block
 * ourselves instead: lines accumulate in the loop's http_hdr buffer while the
 * request is handled, and http_respond() puts the status line, Date and the
 * lines in the connection's output with one copy.
 */
void http_hdr_line(struct http_request *r, const char *line, size_t len)
{
	buf_add(&r->w->hdr, line, len);
}

void http_hdr(struct http_request *r, const char *name, const char *value)
{
	struct buf *h = &r->w->hdr;

	buf_adds(h, name);
	buf_add(h, ": ", 2);
	buf_adds(h, value);
	buf_add(h, "\r\n", 2);
}

void http_set_length(struct http_request *r, uint64_t len)
{
	char num[24];

	http_hdr(r, "Content-Length", http_fmt_u64(num, len));
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 207: return "Multi-Status";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 303: return "See Other";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 415: return "Unsupported Media Type";
	case 416: return "Range Not Satisfiable";
	case 422: return "Unprocessable Content";
	case 423: return "Locked";
	case 424: return "Failed Dependency";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 507: return "Insufficient Storage";
	default: return "Status";
	}
}

/*
 * Security headers (docs/security.md). A response from a snapshot carries
 * the snapshot's (quire's Content-Security-Policy, or quire.yml's); an
 * attachment a browser would run as a document (HTML, SVG, XML) is
 * sandboxed, so that its scripts have no origin; the rest (plain-text
 * errors, API answers given later) may run nothing at all.
 */
#define NOSNIFF "X-Content-Type-Options: nosniff\r\n" \
		"Referrer-Policy: strict-origin-when-cross-origin\r\n"
#define SANDBOX_HEADERS "Content-Security-Policy: sandbox; default-src 'none'; " \
			"img-src 'self' data:; style-src 'unsafe-inline'\r\n" NOSNIFF
#define BARE_HEADERS "Content-Security-Policy: default-src 'none'; " \
		     "frame-ancestors 'none'\r\n" NOSNIFF

/*
 * Sends the response whose header lines are in the loop's http_hdr buffer and
 * whose body is in the request's output buffer; every response of ours
 * goes through here.
 *
 * The response is written at once rather than on the next loop iteration,
 * and when it all fits in the socket, evhttp_send_reply_end() finishes the
 * request right away: the connection goes back to reading within the same
 * iteration, so a keep-alive request costs no EPOLLOUT round trip and,
 * with the epoll changelist, the write event's add and remove cancel out
 * (the first profile had epoll_ctl at a fifth of the server's time; the
 * one call left per request is evhttp turning reads off and on again).
 * What does not fit is left to the bufferevent, set up as
 * evhttp_write_buffer() would (reads off but close detection on), and the
 * request finishes when the rest is written.
 *
 * The request (and the connection) may be freed when this returns, so r's
 * libevent pointers are cleared.
 */
/* A connection to close once its answer is out; see close_after_connect(). */
struct closing_conn {
	struct worker *w;
	struct evhttp_connection *con;
	int tries;
};

static void close_later(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval again = { 0, 10000 };
	struct closing_conn *cc = arg;
	struct conn *c;
	struct bufferevent *bev;

	for (c = cc->w->conns; c && c->con != cc->con; c = c->next)
		;
	if (!c) { /* closed already */
		free(cc);
		return;
	}
	bev = evhttp_connection_get_bufferevent(cc->con);
	if (bev && evbuffer_get_length(bufferevent_get_output(bev)) > 0 && cc->tries++ < 500 &&
	    event_base_once(cc->w->base, -1, EV_TIMEOUT, close_later, cc, &again) == 0)
		return;
	evhttp_connection_free(cc->con); /* on_close frees c */
	free(cc);
}

/*
 * evhttp never reads another request after a CONNECT, nor closes the
 * connection (it would be a tunnel), whatever the headers say: the
 * connection would sit idle until its timeout. It is closed here once the
 * answer (always an error: quire is not a proxy) has been written.
 */
static void close_after_connect(struct worker *w, struct evhttp_connection *con)
{
	static const struct timeval now = { 0, 0 };
	struct closing_conn *cc = xmalloc(sizeof(*cc));

	cc->w = w;
	cc->con = con;
	cc->tries = 0;
	if (!con || event_base_once(w->base, -1, EV_TIMEOUT, close_later, cc, &now) < 0)
		free(cc);
}

/*
 * The head of a response into w->head (status line, Date, Connection,
 * the gathered lines, the security headers, the blank line), counted and
 * logged with blen body bytes. Returns whether the connection closes after.
 */
static void build_head(struct http_request *r, int status, size_t blen)
{
	struct worker *w = r->w;
	struct evhttp_request *ev = r->ev;
	struct buf *h = &w->head;
	const char *c = in_header(ev, "Connection");
	int v10 = ev->major < 1 || (ev->major == 1 && ev->minor == 0);
	int cls = status / 100 - 2, closing;

	/*
	 * evhttp keeps a chunked request's flag on the request and, finishing
	 * the reply, would append a last chunk ("0\r\n\r\n") after our
	 * Content-Length body: bytes a client reads as the next response.
	 * The request's body is read by now; a streamed response frames its
	 * own chunks (http_respond_stream_head()).
	 */
	ev->chunked = 0;
	http_refresh_dates(w);
	buf_reset(h);
	buf_add(h, "HTTP/1.1 ", 9);
	buf_addc(h, '0' + status / 100 % 10);
	buf_addc(h, '0' + status / 10 % 10);
	buf_addc(h, '0' + status % 10);
	buf_addc(h, ' ');
	buf_adds(h, reason(status));
	buf_add(h, "\r\nDate: ", 8);
	buf_add(h, w->date, HTTP_DATE_SIZE - 1);
	buf_add(h, "\r\n", 2);
	/* the same tests evhttp makes to decide whether to close afterwards */
	if (r->absolute) {
		c = in_header(ev, "Proxy-Connection");
		v10 = 1;
	}
	closing = w->stopping || r->close || (c && strcasecmp(c, "close") == 0) ||
		  (v10 && !(c && strncasecmp(c, "keep-alive", 10) == 0));
	if (closing) {
		buf_add(h, "Connection: close\r\n", 19);
		/*
		 * evhttp decides from its own headers whether to close: tell it,
		 * or a CONNECT asking to close (say) would stay open.
		 */
		if (evhttp_add_header(evhttp_request_get_output_headers(ev), "Connection", "close") < 0)
			log_warn("http: cannot mark the connection for closing");
	} else if (v10) {
		buf_add(h, "Connection: keep-alive\r\n", 24);
	}
	buf_add(h, w->hdr.ptr, w->hdr.len);
	if (r->sandbox)
		buf_add(h, SANDBOX_HEADERS, sizeof(SANDBOX_HEADERS) - 1);
	else if (r->snap && r->snap->headers)
		buf_adds(h, r->snap->headers);
	else
		buf_add(h, BARE_HEADERS, sizeof(BARE_HEADERS) - 1);
	buf_add(h, "\r\n", 2);

	if (cls < 0)
		cls = 0;
	if (cls > 3)
		cls = 3;
	bump(&w->c.requests[cls][r->kind], 1);
	bump(&w->c.bytes, blen);
	if (status == 304)
		bump(&w->c.not_modified, 1);
	{
		double ms = clock_ms() - r->start_ms;
		uint64_t us = ms > 0 ? (uint64_t)(ms * 1000) : 0;
		metrics_observe_owned(&w->c.duration[r->kind], us);
		if (r->kind == K_API || r->kind == K_DAV)
			bump(&w->c.calls[r->kind == K_DAV][r->method][http_status_slot(status)], 1);
		if (w->srv->log_fd >= 0)
			log_request(r, status, blen, us);
	}
}

/* The statuses the sync API and WebDAV answer, each counted on its own. */
static const int counted_statuses[HTTP_STATUSES - 1] = {
	200, 201, 204, 206, 207, 301, 302, 304, 400, 401, 403, 404, 405, 409,
	412, 413, 414, 415, 416, 423, 424, 429, 500, 501, 502, 503, 507,
};

int http_status_slot(int status)
{
	int i;

	for (i = 0; i < HTTP_STATUSES - 1; i++)
		if (counted_statuses[i] == status)
			return i;
	return HTTP_STATUSES - 1;
}

int http_status_of_slot(int slot)
{
	return slot >= 0 && slot < HTTP_STATUSES - 1 ? counted_statuses[slot] : 0;
}

/* Writes what out holds now to the socket, and has the bufferevent write the rest. */
static void push_out(struct bufferevent *bev, struct evbuffer *out)
{
	evutil_socket_t fd = bufferevent_getfd(bev);
	int n;

	evbuffer_unfreeze(out, 1); /* the socket bufferevent drains it only in its write callback */
	n = fd >= 0 ? evbuffer_write(out, fd) : -1;
	evbuffer_freeze(out, 1);
	(void)n; /* errors show up again when the bufferevent writes */
	if (evbuffer_get_length(out) > 0) {
		bufferevent_data_cb wcb;
		bufferevent_event_cb ecb;
		void *arg;

		bufferevent_getcb(bev, NULL, &wcb, &ecb, &arg);
		bufferevent_setcb(bev, NULL, wcb, ecb, arg);
		if (bufferevent_enable(bev, EV_READ | EV_WRITE) < 0)
			log_warn("http: cannot wait for the socket");
	}
}

/* Hands the request back to evhttp, its answer queued: it is done with once written. */
static void finish(struct worker *w, struct evhttp_request *ev, struct bufferevent *bev)
{
	struct evhttp_connection *con = evhttp_request_get_connection(ev);
	int connect;

	if (!bev) {
		evhttp_send_reply_end(ev); /* no connection: frees the request */
		return;
	}
	w->inflight++;
	evhttp_request_set_on_complete_cb(ev, http_on_complete, w);
	push_out(bev, bufferevent_get_output(bev));
	connect = evhttp_request_get_command(ev) == EVHTTP_REQ_CONNECT;
	evhttp_send_reply_end(ev);
	if (connect)
		close_after_connect(w, con);
}

void http_respond(struct http_request *r, int status)
{
	struct worker *w = r->w;
	struct evhttp_request *ev = r->ev;
	struct evhttp_connection *con = evhttp_request_get_connection(ev);
	struct bufferevent *bev = con ? evhttp_connection_get_bufferevent(con) : NULL;
	struct evbuffer *body = evhttp_request_get_output_buffer(ev);

	build_head(r, status, evbuffer_get_length(body));
	r->replied = 1;
	r->ev = NULL;
	r->uri = NULL;
	r->query = NULL;
	if (bev && (evbuffer_add(bufferevent_get_output(bev), w->head.ptr, w->head.len) < 0 ||
		    evbuffer_add_buffer(bufferevent_get_output(bev), body) < 0))
		log_warn("http: cannot queue a response");
	finish(w, ev, bev);
}

struct evbuffer *http_respond_stream_head(struct http_request *r, int status)
{
	struct evhttp_connection *con = evhttp_request_get_connection(r->ev);
	struct bufferevent *bev = con ? evhttp_connection_get_bufferevent(con) : NULL;
	struct evbuffer *out;

	HDR_CONST(r, "Transfer-Encoding: chunked\r\n");
	build_head(r, status, 0);
	if (!bev)
		return NULL;
	out = bufferevent_get_output(bev);
	if (evbuffer_add(out, r->w->head.ptr, r->w->head.len) < 0)
		log_warn("http: cannot queue a response");
	push_out(bev, out);
	return out;
}

void http_respond_stream_chunk(struct evhttp_request *ev, const void *data, size_t len)
{
	struct evhttp_connection *con = evhttp_request_get_connection(ev);
	struct bufferevent *bev = con ? evhttp_connection_get_bufferevent(con) : NULL;
	struct evbuffer *out;

	if (!bev || !len)
		return;
	out = bufferevent_get_output(bev);
	if (evbuffer_add_printf(out, "%zx\r\n", len) < 0 || evbuffer_add(out, data, len) < 0 ||
	    evbuffer_add(out, "\r\n", 2) < 0)
		log_warn("http: cannot queue a chunk");
	push_out(bev, out);
}

void http_respond_stream_end(struct worker *w, struct evhttp_request *ev)
{
	struct evhttp_connection *con = evhttp_request_get_connection(ev);
	struct bufferevent *bev = con ? evhttp_connection_get_bufferevent(con) : NULL;

	if (bev && evbuffer_add(bufferevent_get_output(bev), "0\r\n\r\n", 5) < 0)
		log_warn("http: cannot queue the last chunk");
	finish(w, ev, bev);
}

/* A short plain-text answer (errors, 405, 503). */
void http_respond_text(struct http_request *r, int status, const char *text)
{
	size_t len = strlen(text);

	HDR_CONST(r, "Content-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n");
	http_set_length(r, len);
	if (!r->head && evbuffer_add(evhttp_request_get_output_buffer(r->ev), text, len) < 0)
		log_warn("http: cannot queue a response");
	http_respond(r, status);
}

int http_token_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

void http_reply_header(struct http_request *req, const char *name, const char *value)
{
	const unsigned char *p;

	if (req->replied)
		return;
	for (p = (const unsigned char *)name; *p; p++)
		if (!http_token_char(*p))
			break;
	if (!*name || *p || strpbrk(value, "\r\n")) {
		log_warn("http: %s: invalid response header dropped", req->path);
		return;
	}
	http_hdr(req, name, value);
}

void http_reply(struct http_request *req, int status, const char *content_type,
		const void *body, size_t len)
{
	if (req->replied) {
		log_warn("http: %s: second reply ignored", req->path);
		return;
	}
	if (content_type)
		http_hdr(req, "Content-Type", content_type);
	http_set_length(req, len);
	if (!req->head && len > 0 &&
	    evbuffer_add(evhttp_request_get_output_buffer(req->ev), body, len) < 0)
		log_warn("http: cannot queue response");
	http_respond(req, status);
}

void http_free_bytes(const void *data, size_t len, void *arg)
{
	free(arg);
}

void http_reply_buf(struct http_request *req, int status, const char *content_type,
		    struct buf *body)
{
	size_t len = body->len;
	char *bytes;

	if (req->replied || req->head || !len) {
		if (!req->replied) {
			if (content_type)
				http_hdr(req, "Content-Type", content_type);
			http_set_length(req, len);
			http_respond(req, status);
		}
		buf_release(body);
		return;
	}
	if (content_type)
		http_hdr(req, "Content-Type", content_type);
	http_set_length(req, len);
	bytes = buf_detach(body, NULL);
	if (evbuffer_add_reference(evhttp_request_get_output_buffer(req->ev), bytes, len,
				   http_free_bytes, bytes) < 0) {
		free(bytes);
		log_warn("http: cannot queue response");
	}
	http_respond(req, status);
}
