/*
 * methods.c: extension methods (WebDAV's PROPFIND, MKCOL, MOVE...) through
 * an evhttp that cannot name them.
 *
 * What. libevent 2.1's evhttp knows nine methods. Any other it parses with
 * an unknown type and no name, and reads no body for it (only POST, PUT
 * and PATCH have one there), so the body would be parsed as the next
 * request. The extension methods of one table (methods[] below) are made
 * to reach the handlers by name, with their bodies.
 *
 * How. Each connection's input is watched with an evbuffer callback, which
 * the socket bufferevent runs inside its read, before evhttp's read
 * callback parses anything (guard.c relies on the same). The watch follows
 * HTTP/1.1 framing over the bytes as they arrive, exactly as evhttp 2.1.12
 * will read them: the request line, header lines to the blank line, and a
 * body of Content-Length bytes or chunks to the last one and its trailers,
 * for the methods evhttp reads a body for. Nothing is copied or held: a
 * few dozen bytes of state, and the bytes stay in evhttp's buffer. When a
 * request line with a method of the table is complete, it is rewritten in
 * place, before evhttp sees its end: the method becomes POST, so that the
 * body is read, and a first header line names the method under a name that
 * holds a secret drawn when the server starts ("X-Quire-Method-<32 hex>:
 * PROPFIND"), so that no client can forge it. request.c takes that header
 * off and sets the request's method. A bodiless one (no Content-Length,
 * no Transfer-Encoding) also gets "Content-Length: 0" before its blank
 * line: evhttp refuses a POST with neither when it says
 * "Connection: keep-alive", as many WebDAV clients do.
 *
 * Anything the watch cannot frame the way evhttp will (a malformed or
 * folded line, a duplicate or odd Content-Length or Transfer-Encoding, a
 * bad chunk size, a head over evhttp's limit, a body over max_body_size)
 * turns it off for the rest of the connection: the bytes go to evhttp
 * untouched, and it answers them as before (mostly 400 and a close). The
 * watch can only ever be off when it should be on, never on for bytes that
 * evhttp reads as a body: a secret written into a body could be echoed.
 *
 * A GET costs a pass over its request line and header names; values other
 * than the three framing headers are skipped with memchr.
 *
 * Rejected:
 * - A bufferevent_filter around the socket (evhttp_set_bevcb can return
 *   one, and 2.1.12 passes bufferevent_setfd through to the socket).
 *   evhttp hears that a response is written from its bufferevent's write
 *   callback, which a filter runs as soon as the bytes have moved to the
 *   socket's bufferevent, not when the kernel has them; a response with
 *   "Connection: close" is then shut down and freed unsent (measured: 0 of
 *   100 bytes reach the client). Making it work means writing the
 *   output side anew, and every response would pass through it.
 * - Parsing requests ourselves: evhttp's limits, bodies and pipelining
 *   are tested code (http.c).
 */
#include "http/http.h"
#include "http/http-int.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include <event2/buffer.h>

/* The extension methods, by name: the one table. */
static const struct {
	const char *name;
	enum http_method method;
} methods[] = {
	{ "PROPFIND", HTTP_PROPFIND }, { "PROPPATCH", HTTP_PROPPATCH }, { "MKCOL", HTTP_MKCOL },
	{ "COPY", HTTP_COPY },         { "MOVE", HTTP_MOVE },           { "LOCK", HTTP_LOCK },
	{ "UNLOCK", HTTP_UNLOCK },
};

#define NMETHODS (sizeof(methods) / sizeof(methods[0]))
#define TOKEN_MAX 20 /* longer than any method or header name that matters here */
#define VALUE_MAX 24 /* longer than any framing value we accept */

enum http_method http_methods_lookup(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NMETHODS; i++)
		if (strlen(methods[i].name) == len && memcmp(methods[i].name, name, len) == 0)
			return methods[i].method;
	return HTTP_OTHER;
}

const char *http_methods_name(enum http_method m)
{
	static const char *const base[] = { "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH",
					     "OPTIONS" };
	size_t i;

	if (m >= HTTP_GET && m <= HTTP_OPTIONS)
		return base[m - HTTP_GET];
	for (i = 0; i < NMETHODS; i++)
		if (methods[i].method == m)
			return methods[i].name;
	return NULL;
}

int http_methods_init(struct http_server *srv)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char key[16];
	size_t got = 0, i, n = sizeof(HTTP_METHOD_MARK) - 1;

	while (got < sizeof(key)) {
		ssize_t r = getrandom(key + got, sizeof(key) - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return log_error("http: getrandom: %s", strerror(errno));
		got += (size_t)r;
	}
	memcpy(srv->method_mark, HTTP_METHOD_MARK, n);
	for (i = 0; i < sizeof(key); i++) {
		srv->method_mark[n++] = hex[key[i] >> 4];
		srv->method_mark[n++] = hex[key[i] & 15];
	}
	srv->method_mark[n] = '\0';
	return 0;
}

/* ---- the watch ---- */

enum state {
	S_LINE,       /* the request line */
	S_HEAD,       /* header lines, to the blank one */
	S_BODY,       /* left bytes of a Content-Length body */
	S_CHUNK_SIZE, /* a chunk-size line (or an empty line, which evhttp skips) */
	S_CHUNK_DATA, /* left bytes of a chunk */
	S_TRAILER,    /* trailer lines, to the blank one */
	S_OFF,        /* lost: everything passes untouched */
};

/* Which framing header the current header line is. */
enum field { F_OTHER, F_LENGTH, F_CODING, F_CONNECTION };

struct method_watch {
	const struct http_server *srv;
	struct evbuffer *in;
	struct evbuffer_cb_entry *cb;
	enum state st;
	int busy;              /* our own rewrite: its changes are not news */
	uint64_t base;         /* stream offset of in's first byte */
	uint64_t seen;         /* stream offset of the first byte not yet read */
	size_t max_head;       /* evhttp's limit on a request line and header block */

	/* the current line */
	uint64_t line_start;   /* its stream offset */
	size_t line_len;       /* its bytes so far, CR and LF excluded */
	int cr;                /* the last byte was a CR */
	int skip;              /* the rest of the line does not matter: find its LF */
	int part;              /* request line: 0 method, 1 target, 2 version; header line:
				  0 name, 1 value; chunk size: 0 digits, 1 extension */
	char tok[TOKEN_MAX];   /* the method, header name, or version */
	size_t tok_len;        /* TOKEN_MAX + 1: longer than any that matters */
	char val[VALUE_MAX];   /* a framing header's value */
	size_t val_len;        /* VALUE_MAX + 1: too long */
	size_t target_len;
	size_t method_len;
	enum field field;

	/* the request */
	int body;              /* evhttp reads a body for its method */
	enum http_method ext;  /* to be rewritten, or HTTP_OTHER */
	size_t head_size;      /* line lengths so far, as evhttp counts them */
	int has_length, has_coding, has_connection, connection_close;
	uint64_t length;       /* Content-Length, then what is left of the body or chunk */
	uint64_t total;        /* chunked: the body so far */
};

static int turn_off(struct method_watch *mw, const char *why)
{
	log_debug("http: extension methods off for a connection: %s", why);
	mw->st = S_OFF;
	return -1;
}

static void new_line(struct method_watch *mw)
{
	mw->line_start = mw->seen;
	mw->line_len = 0;
	mw->cr = 0;
	mw->skip = 0;
	mw->part = 0;
	mw->tok_len = 0;
	mw->val_len = 0;
	mw->target_len = 0;
	mw->method_len = 0;
	mw->field = F_OTHER;
}

static void new_request(struct method_watch *mw)
{
	mw->st = S_LINE;
	mw->body = 0;
	mw->ext = HTTP_OTHER;
	mw->head_size = 0;
	mw->has_length = mw->has_coding = mw->has_connection = mw->connection_close = 0;
	mw->length = mw->total = 0;
	new_line(mw);
}

/*
 * Replaces del bytes at position at of the input (from its start) with
 * add[0, alen). The bytes move through two spare buffers by whole chains
 * (a copy only where a chain is cut), and the input is only ever empty or
 * whole in between: the other callbacks on it (guard.c's) run at each
 * change. Returns 0, or -1 with the watch off.
 */
static int splice(struct method_watch *mw, size_t at, size_t del, const char *add, size_t alen)
{
	struct evbuffer *all = evbuffer_new(), *out = evbuffer_new();
	int rc = -1;

	if (!all || !out)
		goto done;
	mw->busy = 1;
	if (evbuffer_add_buffer(all, mw->in) < 0)
		goto unbusy;
	if (evbuffer_remove_buffer(all, out, at) == (int)at && evbuffer_drain(all, del) == 0 &&
	    evbuffer_add(out, add, alen) == 0)
		rc = 0;
	/* whatever happened, the bytes go back, in order */
	if (evbuffer_add_buffer(out, all) < 0 || evbuffer_add_buffer(mw->in, out) < 0)
		rc = -1;
unbusy:
	mw->busy = 0;
done:
	if (all)
		evbuffer_free(all);
	if (out)
		evbuffer_free(out);
	if (rc < 0) {
		log_error("http: cannot rewrite an extension method's request");
		return turn_off(mw, "rewrite failed");
	}
	return 0;
}

/* The request line just read names an extension method: POST, and the mark after the line. */
static int rewrite_line(struct method_watch *mw)
{
	char mark[sizeof(mw->srv->method_mark) + TOKEN_MAX + 8];
	size_t at, mlen = mw->method_len, end, n;

	if (mw->line_start < mw->base)
		return turn_off(mw, "request line drained"); /* cannot be: evhttp waits for its LF */
	at = (size_t)(mw->line_start - mw->base);
	end = (size_t)(mw->seen - mw->base) - mlen + 4;
	n = (size_t)snprintf(mark, sizeof(mark), "%s: %s\r\n", mw->srv->method_mark,
			     http_methods_name(mw->ext));
	if (splice(mw, at, mlen, "POST", 4) < 0 || splice(mw, end, 0, mark, n) < 0)
		return -1;
	/* the mark is not read again: the headers go on after it */
	mw->seen = mw->base + end + n;
	mw->head_size += n - 2 + 4 - mlen;
	return 0;
}

/* Before the blank line (just read) of a bodiless rewritten request. */
static int add_length(struct method_watch *mw)
{
	static const char cl[] = "Content-Length: 0\r\n";

	if (mw->line_start < mw->base)
		return turn_off(mw, "blank line drained");
	if (splice(mw, (size_t)(mw->line_start - mw->base), 0, cl, sizeof(cl) - 1) < 0)
		return -1;
	mw->seen += sizeof(cl) - 1;
	return 0;
}

static int token_is(const struct method_watch *mw, const char *s)
{
	size_t n = strlen(s);

	return mw->tok_len == n && memcmp(mw->tok, s, n) == 0;
}

static int token_is_nocase(const struct method_watch *mw, const char *s)
{
	size_t n = strlen(s);

	return mw->tok_len == n && strncasecmp(mw->tok, s, n) == 0;
}

/* A byte of a line (not CR or LF) that matters. 0, or -1 with the watch off. */
static int line_char(struct method_watch *mw, unsigned char c)
{
	switch (mw->st) {
	case S_LINE:
		if (mw->part == 0) {
			if (c == ' ' && mw->tok_len) {
				mw->part = 1;
				mw->method_len = mw->tok_len;
				mw->ext = http_methods_lookup(mw->tok, mw->tok_len);
				/* the methods evhttp reads a body for, and ours, which become POST */
				mw->body = mw->ext != HTTP_OTHER || token_is(mw, "POST") ||
					   token_is(mw, "PUT") || token_is(mw, "PATCH");
				mw->tok_len = 0;
				return 0;
			}
			if (!http_token_char(c))
				return turn_off(mw, "bad method");
		} else if (mw->part == 1) {
			if (c == ' ' && mw->target_len) {
				mw->part = 2;
				return 0;
			}
			if (c <= ' ' || c == 0x7f)
				return turn_off(mw, "bad target");
			mw->target_len++;
			return 0;
		} else if (c <= ' ' || c == 0x7f) {
			return turn_off(mw, "bad version");
		}
		break;
	case S_HEAD:
		if (mw->part == 1) {
			if ((c < ' ' && c != '\t') || c == 0x7f)
				return turn_off(mw, "control byte in a framing header");
			if (c == ' ' && mw->val_len == 0)
				return 0; /* evhttp skips the spaces before a value (not tabs) */
			if (mw->val_len < VALUE_MAX)
				mw->val[mw->val_len++] = (char)c;
			else
				mw->val_len = VALUE_MAX + 1;
			return 0;
		}
		if (mw->line_len == 1 && (c == ' ' || c == '\t'))
			return turn_off(mw, "folded header line");
		if (c == ':') {
			if (token_is_nocase(mw, "Content-Length"))
				mw->field = F_LENGTH;
			else if (token_is_nocase(mw, "Transfer-Encoding"))
				mw->field = F_CODING;
			else if (token_is_nocase(mw, "Connection"))
				mw->field = F_CONNECTION;
			else if (mw->tok_len)
				mw->skip = 1; /* its value does not matter */
			else
				return turn_off(mw, "empty header name");
			mw->part = 1;
			return 0;
		}
		if (!http_token_char(c))
			return turn_off(mw, "bad header name"); /* request.c answers 400 and closes */
		break;
	case S_CHUNK_SIZE:
		if (mw->part == 1)
			return 0; /* evhttp ignores what follows a space */
		if (c == ' ' && mw->tok_len) {
			mw->part = 1;
			return 0;
		}
		if (hex_value(c) < 0 || mw->tok_len >= 15)
			return turn_off(mw, "bad chunk size");
		mw->length = mw->length * 16 + (uint64_t)hex_value(c);
		mw->tok_len++;
		return 0;
	default:
		return 0;
	}
	/* the method, a header name, or the version */
	if (mw->tok_len < TOKEN_MAX)
		mw->tok[mw->tok_len++] = (char)c;
	else
		mw->tok_len = TOKEN_MAX + 1;
	return 0;
}

/* A framing header's value is complete: trimmed as evhttp trims it, then read. */
static int end_field(struct method_watch *mw)
{
	size_t n = mw->val_len, i;
	uint64_t v = 0;

	if (n > VALUE_MAX) {
		if (mw->field != F_CONNECTION)
			return turn_off(mw, "framing header too long");
		n = 0; /* a long Connection value is not "close" */
	}
	while (n && (mw->val[n - 1] == ' ' || mw->val[n - 1] == '\t'))
		n--;
	switch (mw->field) {
	case F_LENGTH:
		if (mw->has_length++ || n == 0 || n > 18)
			return turn_off(mw, "Content-Length");
		for (i = 0; i < n; i++) {
			if (mw->val[i] < '0' || mw->val[i] > '9')
				return turn_off(mw, "Content-Length");
			v = v * 10 + (uint64_t)(mw->val[i] - '0');
		}
		mw->length = v;
		return 0;
	case F_CODING:
		if (mw->has_coding++ || n != 7 || strncasecmp(mw->val, "chunked", 7) != 0)
			return turn_off(mw, "Transfer-Encoding");
		return 0;
	case F_CONNECTION:
		if (!mw->has_connection++)
			mw->connection_close = n == 5 && strncasecmp(mw->val, "close", 5) == 0;
		return 0;
	default:
		return 0;
	}
}

/* The blank line that ends the head: what follows, as evhttp_get_body() decides. */
static int end_head(struct method_watch *mw)
{
	if (!mw->body) {
		new_request(mw);
		return 0;
	}
	if (mw->has_coding && mw->has_length)
		return turn_off(mw, "Transfer-Encoding and Content-Length");
	if (mw->has_coding) {
		mw->st = S_CHUNK_SIZE;
		mw->length = mw->total = 0;
		new_line(mw);
		return 0;
	}
	if (mw->has_length) {
		if (mw->length > mw->srv->opt.max_body_size)
			return turn_off(mw, "body over max_body_size"); /* evhttp: 413 */
		if (mw->length == 0) {
			new_request(mw);
		} else {
			mw->st = S_BODY;
			new_line(mw);
		}
		return 0;
	}
	if (mw->ext != HTTP_OTHER) {
		if (add_length(mw) < 0)
			return -1;
		new_request(mw);
		return 1;
	}
	if (mw->has_connection && !mw->connection_close)
		return turn_off(mw, "no length but keep-alive"); /* evhttp refuses it */
	new_request(mw);
	return 0;
}

/*
 * The LF of a line was read. 0 to go on, 1 when the input was rewritten
 * (the caller peeks again), -1 with the watch off.
 */
static int end_line(struct method_watch *mw)
{
	switch (mw->st) {
	case S_LINE:
		if (mw->part != 2 || (!token_is(mw, "HTTP/1.1") && !token_is(mw, "HTTP/1.0")))
			return turn_off(mw, "not a request line");
		mw->st = S_HEAD;
		mw->head_size = mw->line_len;
		if (mw->ext != HTTP_OTHER) {
			if (rewrite_line(mw) < 0)
				return -1;
			new_line(mw);
			return 1;
		}
		break;
	case S_HEAD:
		if (mw->line_len == 0)
			return end_head(mw);
		if (mw->part == 0)
			return turn_off(mw, "header line without a colon");
		if (mw->field != F_OTHER && end_field(mw) < 0)
			return -1;
		mw->head_size += mw->line_len;
		break;
	case S_CHUNK_SIZE:
		if (mw->line_len == 0)
			break; /* evhttp skips empty lines here (the CRLF after a chunk) */
		if (!mw->tok_len)
			return turn_off(mw, "bad chunk size");
		if (mw->length == 0) {
			mw->st = S_TRAILER;
			break;
		}
		mw->total += mw->length;
		if (mw->total > mw->srv->opt.max_body_size)
			return turn_off(mw, "chunked body over max_body_size");
		mw->st = S_CHUNK_DATA;
		break;
	case S_TRAILER:
		if (mw->line_len == 0) {
			new_request(mw);
			return 0;
		}
		mw->head_size += mw->line_len;
		break;
	default:
		break;
	}
	new_line(mw);
	return 0;
}

/*
 * Reads p[0, n), the input from stream offset mw->seen on. Returns how many
 * bytes it used: all, or fewer when the input was rewritten under them
 * (the caller peeks again) or the watch turned off.
 */
static size_t read_bytes(struct method_watch *mw, const unsigned char *p, size_t n)
{
	size_t i = 0;

	while (i < n && mw->st != S_OFF) {
		unsigned char c;
		int r;

		if (mw->st == S_BODY || mw->st == S_CHUNK_DATA) {
			size_t k = n - i < mw->length ? n - i : (size_t)mw->length;
			i += k;
			mw->seen += k;
			mw->length -= k;
			if (!mw->length) {
				if (mw->st == S_BODY) {
					new_request(mw);
				} else {
					mw->st = S_CHUNK_SIZE;
					new_line(mw);
				}
			}
			continue;
		}
		if (mw->skip) {
			/* to the end of the line, CRs and all: evhttp splits at LF */
			const unsigned char *lf = memchr(p + i, '\n', n - i);
			size_t k = lf ? (size_t)(lf - (p + i)) : n - i;
			i += k;
			mw->seen += k;
			mw->line_len += k;
			if (mw->line_len + mw->head_size > mw->max_head)
				return turn_off(mw, "head over the limit"), i;
			if (!lf)
				continue;
			mw->cr = 0;
			mw->skip = 0;
		}
		c = p[i++];
		mw->seen++;
		if (c == '\n') {
			r = end_line(mw);
			if (r != 0)
				return i;
			continue;
		}
		if (mw->cr)
			return turn_off(mw, "CR inside a line"), i;
		if (c == '\r') {
			mw->cr = 1;
			continue;
		}
		if (++mw->line_len + mw->head_size > mw->max_head)
			return turn_off(mw, "head over the limit"), i;
		if (line_char(mw, c) < 0)
			return i;
	}
	return i;
}

/* Reads what is new in the input, peeking again after each rewrite. */
static void read_new(struct method_watch *mw)
{
	struct evbuffer_iovec v[8];
	struct evbuffer_ptr at;

	while (mw->st != S_OFF) {
		size_t len = evbuffer_get_length(mw->in), pos = (size_t)(mw->seen - mw->base);
		int n, k, again = 0;

		if (pos >= len || evbuffer_ptr_set(mw->in, &at, pos, EVBUFFER_PTR_SET) < 0)
			return;
		n = evbuffer_peek(mw->in, (ev_ssize_t)(len - pos), &at, v, 8);
		if (n <= 0)
			return;
		for (k = 0; k < n && k < 8 && !again; k++) {
			size_t used = read_bytes(mw, v[k].iov_base, v[k].iov_len);
			again = used < v[k].iov_len || mw->st == S_OFF;
		}
	}
}

static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
	struct method_watch *mw = arg;

	if (mw->busy || mw->st == S_OFF)
		return;
	mw->base += info->n_deleted;
	if (mw->base > mw->seen) {
		turn_off(mw, "bytes drained unread"); /* cannot be: callbacks are not deferred */
		return;
	}
	if (info->n_added)
		read_new(mw);
}

struct method_watch *http_methods_watch(const struct http_server *srv, struct evbuffer *in)
{
	struct method_watch *mw = xcalloc(1, sizeof(*mw));

	mw->srv = srv;
	mw->in = in;
	mw->max_head = srv->max_head;
	new_request(mw);
	mw->cb = evbuffer_add_cb(in, on_input, mw);
	if (!mw->cb) {
		log_warn("http: cannot watch a connection for extension methods");
		free(mw);
		return NULL;
	}
	return mw;
}

void http_methods_unwatch(struct method_watch *mw)
{
	if (!mw)
		return;
	if (mw->cb)
		evbuffer_remove_cb_entry(mw->in, mw->cb);
	free(mw);
}
