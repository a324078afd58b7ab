/*
 * respond.c: writing responses, and the reply half of the handler API.
 *
 * The status line and headers are written into the loop's head buffer in
 * one pass (no header list: a tenth of the server's time when evhttp
 * kept one), and http_conn_send() writes head and body with one writev() at
 * once, when the socket takes it (conn.c).
 *
 * Every answer, from the snapshot, a handler or a deferred reply, goes
 * through http_respond(), which also adds the security headers, counts the
 * response for /metrics (its class and kind, its duration in the loop's
 * histogram of its kind, and for the sync API and WebDAV its method and
 * status) and writes its access log line (buffered per loop, flushed at
 * 32 KiB and once a second). A request's duration runs from its dispatch
 * (http_on_request(), once its head and body are read) to its answer's
 * head: two reads of the monotonic clock per request, and no allocation.
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

/* The Host, Referer and User-Agent headers of the request (NULL when absent), in one walk. */
static void log_headers(const struct http_request *r, const char **host, const char **ref,
			const char **ua)
{
	const struct reqparse *rp = r->c ? &r->c->rp : NULL;
	unsigned i;

	*host = *ref = *ua = NULL;
	for (i = 0; rp && i < rp->nh; i++) {
		const char *k = rp->base + rp->h[i].name, *v = rp->base + rp->h[i].value;
		switch (k[0] | 0x20) {
		case 'h':
			if (!*host && strcasecmp(k, "Host") == 0)
				*host = v;
			break;
		case 'r':
			if (!*ref && strcasecmp(k, "Referer") == 0)
				*ref = v;
			break;
		case 'u':
			if (!*ua && strcasecmp(k, "User-Agent") == 0)
				*ua = v;
			break;
		}
	}
}

/* "HTTP/1.1\" 200 " (with json: "HTTP/1.1\",\"status\":200"), without printf. */
static void add_proto_status(struct buf *b, const struct http_request *r, int status,
			     int json)
{
	char p[10] = { 'H', 'T', 'T', 'P', '/', '0', '.', '0', '"' };

	p[5] = (char)('0' + (r->major >= 0 && r->major <= 9 ? r->major : 0));
	p[7] = (char)('0' + (r->minor >= 0 && r->minor <= 9 ? r->minor : 0));
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
	const char *host, *ref, *ua, *peer = r->c && r->c->peer[0] ? r->c->peer : NULL;
	char num[24];

	log_headers(r, &host, &ref, &ua);
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
		add_proto_status(b, r, status, 1);
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
		add_proto_status(b, r, status, 0);
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
 * Response headers. No list of headers: lines accumulate in the loop's http_hdr buffer while the
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

const char *http_reason(int status)
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
 * The head of a response into w->head (status line, Date, Connection,
 * the gathered lines, the security headers, the blank line), counted and
 * logged with blen body bytes. Returns whether the connection closes after.
 */
static void build_head(struct http_request *r, int status, size_t blen)
{
	struct worker *w = r->w;
	struct conn *c = r->c;
	struct buf *h = &w->head;
	int v10 = r->major < 1 || (r->major == 1 && r->minor == 0);
	int cls = status / 100 - 2, closing;

	http_refresh_dates(w);
	buf_reset(h);
	buf_add(h, "HTTP/1.1 ", 9);
	buf_addc(h, '0' + status / 100 % 10);
	buf_addc(h, '0' + status / 10 % 10);
	buf_addc(h, '0' + status % 10);
	buf_addc(h, ' ');
	buf_adds(h, http_reason(status));
	buf_add(h, "\r\nDate: ", 8);
	buf_add(h, w->date, HTTP_DATE_SIZE - 1);
	buf_add(h, "\r\n", 2);
	/* a CONNECT would be a tunnel: quire is none, and what follows is not HTTP */
	closing = w->stopping || r->close || !c || c->close_after || !c->keep_alive ||
		  (r->method_name && strcmp(r->method_name, "CONNECT") == 0);
	if (closing) {
		buf_add(h, "Connection: close\r\n", 19);
		if (c)
			c->close_after = 1;
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

/*
 * Sends the response whose header lines are in the loop's hdr buffer and
 * whose body is r's (http_set_body(), or a file); every response of ours
 * goes through here. The request (and the connection) may be freed when
 * this returns, so r's pointers into it are cleared.
 */
void http_respond(struct http_request *r, int status)
{
	struct conn *c = r->c;

	build_head(r, status, r->out_fd >= 0 ? (size_t)r->out_len : (r->out ? r->out_len : 0));
	r->replied = 1;
	r->c = NULL;
	r->uri = NULL;
	r->query = NULL;
	if (!c) {
		/* its client has gone: the body is dropped */
		if (r->out_release)
			r->out_release(r->out, r->out_len, r->out_arg);
		if (r->out_fd >= 0)
			close(r->out_fd);
		return;
	}
	http_conn_send(c, r->w->head.ptr, r->w->head.len, r->out,
		       r->out || r->out_fd >= 0 ? r->out_len : 0, r->out_release, r->out_arg,
		       r->out_fd, r->out_off);
	http_conn_answered(c);
}

/* The answer's body: len bytes, copied when sent unless release takes them over. */
void http_set_body(struct http_request *r, const void *bytes, size_t len,
		   evbuffer_ref_cleanup_cb release, void *arg)
{
	r->out = bytes;
	r->out_len = len;
	r->out_release = release;
	r->out_arg = arg;
}

void http_respond_stream_head(struct http_request *r, int status)
{
	struct conn *c = r->c;

	HDR_CONST(r, "Transfer-Encoding: chunked\r\n");
	build_head(r, status, 0);
	if (c)
		http_conn_write(c, r->w->head.ptr, r->w->head.len);
}

void http_respond_stream_chunk(struct conn *c, const void *data, size_t len)
{
	char size[24];
	int n;

	if (!c || !len)
		return;
	n = snprintf(size, sizeof(size), "%zx\r\n", len);
	evbuffer_add(c->out, size, (size_t)n);
	evbuffer_add(c->out, data, len);
	http_conn_write(c, "\r\n", 2);
}

void http_respond_stream_end(struct conn *c)
{
	if (!c)
		return;
	http_conn_write(c, "0\r\n\r\n", 5);
	http_conn_answered(c);
}

/* A short plain-text answer (errors, 405, 503). */
void http_respond_text(struct http_request *r, int status, const char *text)
{
	size_t len = strlen(text);

	HDR_CONST(r, "Content-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n");
	http_set_length(r, len);
	if (!r->head)
		http_set_body(r, text, len, NULL, NULL);
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
	if (!req->head && len > 0)
		http_set_body(req, body, len, NULL, NULL);
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
	http_set_body(req, bytes, len, http_free_bytes, bytes);
	http_respond(req, status);
}
