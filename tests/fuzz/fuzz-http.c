/*
 * fuzz-http.c: a libFuzzer target for the reading of requests: llhttp
 * through quire's parser (src/http/parse.c), driven as conn.c drives it,
 * then quire's reading of each parsed head.
 *
 * The input is a first byte choosing how the bytes arrive (its low three
 * bits) and the body limit (bit 3: 100 bytes, else 1 MiB), a second
 * seeding the cut points, then raw HTTP/1.1 bytes (several requests one
 * after another, pipelined). They go through reqparse_feed() as conn.c's
 * step() feeds them: into one buffer of conn.c's size (max_header_size
 * 8 KiB + 16 KiB and a byte), in reads the first bytes cut (all at once,
 * one byte at a time, or pieces of random lengths up to 2, 3, 7, 16, 64 or
 * 500), with a zero-length feed right after each RP_HEAD, the body's bytes
 * dropped from the buffer as they are taken, each request answered at
 * RP_DONE and the next parsed from where it stopped, the header and body
 * limits conn.c applies, and a small body limit for some inputs so that a
 * body callback's refusal (413) is taken too. Inputs are as long as the
 * longest seed (8 KB), so the case of a buffer full of one head and one
 * read is not reached.
 *
 * Properties, besides crashes: at RP_HEAD the target and every header
 * name and value lie inside the head in the buffer and are C strings of
 * their length without CR or LF; the parser never writes into a head
 * once RP_HEAD is returned (trailers, body bytes dropped behind it); the
 * body bytes delivered never exceed those fed, and for a request read
 * whole they are what a simple decoder of Content-Length or chunked
 * framing by the book (every line ending in CR LF) reads from the bytes
 * the request spanned (a CONNECT has no body); the buffer is never
 * full while a request is read; when http_framing_error() lets a request
 * read whole through, llhttp framed its body by the headers quire sees
 * (llhttp refuses a Transfer-Encoding it does not take only after the
 * head, and past HTTP_MAX_HEADERS lines conn.c answers 431: neither is
 * read whole).
 *
 * On every parsed head, what quire reads from it (request.c, static.c):
 * http_framing_error(), http_host_error() with the Host values, the
 * target (its absolute form too) through http_decode_target() and
 * http_query_param(), the conditional headers (http_not_modified() on a
 * request whose connection's parser is this one, http_if_range_ok()),
 * Range, Accept-Encoding, HTTP dates, host_normalize() and the answer of
 * a server still loading (http_loading_answer(): 503 with a Retry-After,
 * the body never empty). A decoded path starts with '/', has no NUL, no
 * "//" and survives the encoding a redirect writes (buf_add_urlpath())
 * and a second decoding unchanged; a satisfiable range lies inside the
 * representation.
 *
 * Found with it, on llhttp 8.1.0 (fixed in parse.c, tested in
 * test-http-parse.c): a CR followed by any byte taken for a line end at
 * the end of a head, after a header with an empty value and in chunked
 * framing (request smuggling), and a "CONNECT \n" head with an empty
 * target that was no C string.
 */
#include "fuzz.h"

#include "http/http.h"
#include "http/http-int.h"
#include "util/buf.h"
#include "util/unicode.h"
#include "vault/config.h"

#include <strings.h>

#define MTIME 784111777 /* Sun, 06 Nov 1994 08:49:37 GMT, the RFC's example */
/* conn.c's buffer: the default max_header_size and READ_ROOM */
#define MAX_HEADER (8 * 1024)
#define IN_CAP (MAX_HEADER + 16 * 1024)

/* ---- quire's reading of a head (the old target's checks) ---- */

static void check_target(const char *uri)
{
	size_t ulen = strlen(uri);
	char *out = malloc(ulen + 1), *again;
	const char *query, *q2;
	struct buf enc = BUF_INIT, v = BUF_INIT;
	long n, m;

	n = http_decode_target(uri, out, &query);
	if (n >= 0) {
		const char *type;
		int retry = 0;

		fuzz_assert((size_t)n <= ulen && out[0] == '/' && strlen(out) == (size_t)n);
		fuzz_assert(!strstr(out, "//") && utf8_valid(out, (size_t)n));
		/* what http_redirect_to() writes decodes to the same path */
		buf_add_urlpath(&enc, out, (size_t)n);
		again = malloc(enc.len + 1);
		m = http_decode_target(enc.ptr, again, &q2);
		fuzz_assert(m == n && memcmp(again, out, (size_t)n) == 0 && !q2);
		free(again);
		fuzz_assert(http_loading_answer(out, ulen, ulen / 2, &retry, &type, &v) == 503);
		fuzz_assert(retry >= 1 && v.len > 0 && type);
	}
	if (query) {
		static const char *const names[] = { "q", "limit", "offset", "version", "timeout" };
		size_t i;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (http_query_param(query, names[i], &v) > 0)
				fuzz_assert(!memchr(v.ptr, '\0', v.len));
	}
	buf_release(&enc);
	buf_release(&v);
	free(out);
}

/* The target as request.c decodes it: an absolute form's path after its authority. */
static void check_request_target(const char *uri)
{
	if (uri[0] != '/' &&
	    (strncasecmp(uri, "http://", 7) == 0 || strncasecmp(uri, "https://", 8) == 0)) {
		const char *a = strchr(uri, ':') + 3;
		a += strcspn(a, "/?");
		if (*a == '/')
			check_target(a);
		return;
	}
	check_target(uri);
}

static void check_range(const char *value)
{
	static const uint64_t sizes[] = { 0, 1, 100, 1 << 20, UINT64_MAX };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t off = 0, len = 0;
		if (http_parse_range(value, sizes[i], &off, &len) == 1)
			fuzz_assert(len > 0 && off < sizes[i] && len <= sizes[i] - off);
	}
}

static void check_value(const char *name, const char *value)
{
	time_t t;

	if (http_parse_http_date(value, &t) == 0)
		(void)t;
	if (strcasecmp(name, "Range") == 0)
		check_range(value);
	else if (strcasecmp(name, "If-Range") == 0) {
		(void)http_if_range_ok(value, "\"abc\"", MTIME);
		(void)http_if_range_ok(value, "", 0);
	} else if (strcasecmp(name, "Accept-Encoding") == 0)
		(void)http_accepts_gzip(value);
	else if (strcasecmp(name, "Host") == 0)
		free(host_normalize(value));
}

/*
 * When quire's framing check lets a request through (request.c runs it on
 * a request read whole), llhttp framed its body (framing and len, as
 * reqparse_framing() said at RP_HEAD) by the headers quire sees: chunked
 * with a Transfer-Encoding, else the Content-Length's value, else none (a
 * difference is a smuggling).
 */
static void check_framing(const struct reqparse *rp, int framing, uint64_t len)
{
	const char *te = reqparse_header(rp, "Transfer-Encoding");
	const char *cl = reqparse_header(rp, "Content-Length");

	if (http_framing_error(rp))
		return;
	if (te)
		fuzz_assert(framing == 2);
	else if (cl)
		fuzz_assert(framing == 1 && len == strtoull(cl, NULL, 10));
	else
		fuzz_assert(framing == 0);
}

static void check_request(struct conn *c)
{
	const struct reqparse *rp = &c->rp;
	struct http_request r;
	const char *hosts[2];
	size_t nh = 0;
	unsigned i;

	memset(&r, 0, sizeof(r));
	r.c = c;
	(void)http_framing_error(rp);
	for (i = 0; i < rp->nh && nh < 2; i++)
		if (strcasecmp(rp->base + rp->h[i].name, "Host") == 0)
			hosts[nh++] = rp->base + rp->h[i].value;
	fuzz_assert(nh < 2 || http_host_error(hosts, nh) != NULL);
	(void)http_host_error(hosts, nh);
	check_request_target(rp->base + rp->url);
	(void)http_not_modified(&r, "\"abc\"", MTIME);
	(void)http_not_modified(&r, "", 0);
	for (i = 0; i < rp->nh; i++)
		check_value(rp->base + rp->h[i].name, rp->base + rp->h[i].value);
}

/* ---- the parser, driven as conn.c drives it ---- */

struct sim {
	struct conn *c;
	const char *in;           /* the request bytes of the input */
	size_t n, fed;            /* how many; how many were read into the buffer */
	unsigned mode, seed;
	uint64_t body_limit;
	struct buf body;          /* the current request's body, as delivered */
	size_t delivered;         /* body bytes delivered, all requests */
	char head[MAX_HEADER + 1]; /* a copy of the current head, as RP_HEAD left it */
	size_t head_len, body_start;
	int framing;              /* reqparse_framing() at RP_HEAD (llhttp counts the length down) */
	uint64_t declared;
	int connect;              /* the request is a CONNECT: llhttp reads no body */
};

static int take_body(void *ctx, const char *at, size_t len)
{
	struct sim *s = ctx;
	struct conn *c = s->c;

	fuzz_assert(at >= c->in + c->head_end && at + len <= c->in + c->in_len);
	if (s->body.len + len > s->body_limit) {
		c->rp.status = 413;
		c->rp.why = "the body is larger than the server accepts";
		return -1;
	}
	buf_add(&s->body, at, len);
	s->delivered += len;
	fuzz_assert(s->delivered <= s->fed);
	return 0;
}

/* The length of the next read: what the first byte of the input chose. */
static size_t next_read(struct sim *s)
{
	static const size_t most[8] = { 0, 1, 2, 3, 7, 16, 64, 500 };
	size_t m = most[s->mode & 7];

	if (!m)
		return s->n;
	s->seed = s->seed * 1103515245u + 12345u;
	return 1 + (s->seed >> 16) % m;
}

/* The bytes of [off, off + len) of the buffer lie inside the head and end with a NUL. */
static void check_string(const struct conn *c, uint32_t off, uint32_t len)
{
	const char *p = c->in + off;

	fuzz_assert(off >= c->head_start && (size_t)off + len < c->in_pos);
	fuzz_assert(p[len] == '\0' && strlen(p) == len);
	fuzz_assert(!memchr(p, '\r', len) && !memchr(p, '\n', len));
}

static void check_head(struct sim *s)
{
	const struct conn *c = s->c;
	const struct reqparse *rp = &c->rp;
	unsigned i;

	fuzz_assert(rp->base == c->in && rp->url_len > 0 && rp->nh <= HTTP_MAX_HEADERS);
	check_string(c, rp->url, rp->url_len);
	for (i = 0; i < rp->nh; i++) {
		check_string(c, rp->h[i].name, rp->h[i].name_len);
		if (rp->h[i].value_len)
			check_string(c, rp->h[i].value, rp->h[i].value_len);
		else
			fuzz_assert(c->in[rp->h[i].value] == '\0');
	}
	fuzz_assert(reqparse_method(rp) != NULL);
}

/* Whether the line b[i, lf] ends with CR LF. */
static int crlf_at(const char *b, size_t i, const char *lf)
{
	return lf && lf > b + i && lf[-1] == '\r';
}

/*
 * The body a chunked message carries, decoded from b[0, n) by the book
 * (RFC 9112 7.1: every line ends with CR LF): the bytes the message spans
 * in *used. llhttp took it, so the syntax within a line is not checked
 * again, only the sizes and the line ends.
 */
static int dechunk(const char *b, size_t n, struct buf *out, size_t *used)
{
	size_t i = 0, line;
	const char *lf;

	for (;;) {
		uint64_t size = 0;
		int digits = 0;
		for (; i < n && b[i] && strchr("0123456789abcdefABCDEF", b[i]); i++, digits++) {
			if (size >> 60)
				return -1; /* past 2^64 (leading zeros are fine) */
			size = size * 16 + (uint64_t)(b[i] <= '9' ? b[i] - '0' : (b[i] | 32) - 'a' + 10);
		}
		lf = memchr(b + i, '\n', n - i);
		if (!digits || !crlf_at(b, i, lf))
			return -1;
		i = (size_t)(lf - b) + 1;
		if (!size)
			break;
		if (size > n - i || n - i - size < 2 || memcmp(b + i + size, "\r\n", 2) != 0)
			return -1;
		buf_add(out, b + i, size);
		i += size + 2;
	}
	do { /* trailer lines, up to an empty one */
		lf = memchr(b + i, '\n', n - i);
		if (!crlf_at(b, i, lf))
			return -1;
		line = (size_t)(lf - b) - i;
		i = (size_t)(lf - b) + 1;
	} while (line > 1);
	*used = i;
	return 0;
}

/* A request read whole: its head is as RP_HEAD left it, and its body what its framing says. */
static void check_done(struct sim *s)
{
	const struct conn *c = s->c;
	size_t end = s->fed - (c->in_len - c->in_pos), used = 0;
	const char *b = s->in + s->body_start;
	struct buf want = BUF_INIT;
	uint64_t len = s->declared;

	fuzz_assert(c->head_end - c->head_start == s->head_len);
	fuzz_assert(memcmp(c->in + c->head_start, s->head, s->head_len) == 0);
	check_framing(&c->rp, s->framing, s->declared);
	switch (s->connect ? 0 : s->framing) {
	case 0:
		fuzz_assert(end == s->body_start && s->body.len == 0);
		break;
	case 1:
		fuzz_assert(end - s->body_start == len && s->body.len == len);
		fuzz_assert(!len || memcmp(s->body.ptr, b, len) == 0);
		break;
	default:
		fuzz_assert(dechunk(b, end - s->body_start, &want, &used) == 0);
		fuzz_assert(used == end - s->body_start && want.len == s->body.len);
		fuzz_assert(!want.len || memcmp(want.ptr, s->body.ptr, want.len) == 0);
		break;
	}
	buf_release(&want);
}

/* The head is read (conn.c's head_read()): its limits; 0, or -1 refused. */
static int head_read(struct sim *s)
{
	struct conn *c = s->c;

	c->head_end = c->in_pos;
	buf_reset(&s->body);
	s->body_start = s->fed - (c->in_len - c->in_pos);
	check_head(s);
	s->framing = reqparse_framing(&c->rp, &s->declared);
	/* llhttp reads no body of a CONNECT whatever its headers say: a tunnel follows */
	s->connect = strcmp(reqparse_method(&c->rp), "CONNECT") == 0;
	check_request(c);
	if (c->rp.too_many || c->in_pos - c->head_start > MAX_HEADER)
		return -1;
	if (s->framing == 1 && s->declared > s->body_limit)
		return -1;
	s->head_len = c->head_end - c->head_start;
	memcpy(s->head, c->in + c->head_start, s->head_len);
	return 0;
}

/* Moves the unread bytes from `from` down to `to`, as conn.c's drop_input(). */
static void drop_input(struct conn *c, size_t to, size_t from)
{
	memmove(c->in + to, c->in + from, c->in_len - from);
	c->in_len -= from - to;
	c->in_pos = to;
}

/* conn.c's step(): parses what the buffer holds, each request answered at once. */
static void step(struct sim *s)
{
	struct conn *c = s->c;
	int again = 0;

	while ((c->in_pos < c->in_len || again) && !c->close_after) {
		size_t used;
		enum rp_result r;

		again = 0;
		if (c->state == C_IDLE) {
			c->state = C_HEAD;
			c->head_start = c->in_pos;
		}
		r = reqparse_feed(&c->rp, c->in, c->in_pos, c->in_len - c->in_pos, &used);
		fuzz_assert(used <= c->in_len - c->in_pos);
		c->in_pos += used;
		if (r == RP_HEAD) {
			c->state = C_BODY;
			if (head_read(s) < 0) {
				r = RP_ERROR;
			} else {
				again = 1;
				continue;
			}
		}
		if (r == RP_MORE) {
			fuzz_assert(c->in_pos == c->in_len);
			if (c->state == C_HEAD && c->in_len - c->head_start > MAX_HEADER) {
				r = RP_ERROR;
			} else {
				if (c->state == C_BODY)
					drop_input(c, c->head_end, c->in_pos);
				break;
			}
		}
		if (r == RP_END || r == RP_ERROR) {
			c->close_after = 1;
			break;
		}
		fuzz_assert(r == RP_DONE && c->state == C_BODY);
		check_done(s);
		if (!reqparse_keep_alive(&c->rp))
			c->close_after = 1;
		/* answered (http_conn_answered()): on to the next request */
		drop_input(c, 0, c->in_pos);
		c->state = C_IDLE;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf empty = BUF_INIT;
	struct conn *c;
	struct sim s;

	if (size < 2)
		return 0;
	c = calloc(1, sizeof(*c));
	memset(&s, 0, sizeof(s));
	s.c = c;
	s.mode = data[0];
	s.seed = data[1];
	s.in = (const char *)data + 2;
	s.n = size - 2;
	s.body_limit = s.mode & 8 ? 100 : 1 << 20;
	s.body = empty;
	c->in_cap = IN_CAP;
	c->in = malloc(IN_CAP + 1);
	c->state = C_IDLE;
	reqparse_init(&c->rp, take_body, &s);
	while (s.fed < s.n && !c->close_after) {
		size_t len = next_read(&s);

		/* conn.c keeps no more than a head and one read: never full while reading */
		fuzz_assert(c->in_len < c->in_cap);
		if (len > s.n - s.fed)
			len = s.n - s.fed;
		if (len > c->in_cap - c->in_len)
			len = c->in_cap - c->in_len;
		memcpy(c->in + c->in_len, s.in + s.fed, len);
		c->in_len += len;
		s.fed += len;
		step(&s);
	}
	buf_release(&s.body);
	free(c->in);
	free(c);
	return 0;
}
