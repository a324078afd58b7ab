/*
 * parse.c: a request's head and its body's framing, read by llhttp.
 *
 * llhttp (Node.js's parser, compiled from Debian's node-llhttp sources)
 * walks the bytes; this file keeps what it finds as offsets into the
 * connection's input buffer, where the head stays whole until the request
 * is answered (conn.c): the target and up to HTTP_MAX_HEADERS header
 * lines, each name and value made a C string in place once the head is
 * complete (the byte after each, ':' or CR, is one llhttp has passed). No
 * allocation: a request costs its bytes in the buffer and one struct
 * reqparse per connection.
 *
 * The parser stops twice a message: when the head is complete (RP_HEAD:
 * the connection decides the body's limit, its spool and 100-continue
 * before a byte of the body is read) and when the message is (RP_DONE:
 * the request is answered before the next pipelined one is read).
 * Body bytes go to the owner's callback as llhttp frames them (chunks
 * decoded).
 *
 * Strictness is llhttp's default: no lenient flag is set, so a
 * Content-Length beside Transfer-Encoding, two different Content-Lengths,
 * a "+35", whitespace before a colon, a bare LF inside a header or a
 * transfer coding other than chunked last are all errors (the smuggling
 * cases RFC 9112 11.2 names). http_framing_error() checks the same again
 * on the parsed head (request.c), as the evhttp front did.
 *
 * One more is checked here: llhttp 8.1.0 (Debian 12's) takes a CR
 * followed by any byte as a line end in five places - the empty line
 * that ends a head or the trailers, a header line with an empty value
 * ("X:\rYContent-Length: 5" is a Content-Length to llhttp and none to a
 * proxy that reads CR LF), a chunk-size line, the CRLF after a chunk's
 * data - so that a proxy in front and quire disagree on where a body or
 * a request ends (the smuggling of CVE-2023-30589, fixed in llhttp
 * 8.1.1). So a header name (or a trailer's) must follow CR LF, the parser
 * pauses where a chunk's line or data ends (on_chunk_header,
 * on_chunk_complete) and the two bytes before must be CR LF, and a head
 * or a chunked message must end with CR LF CR LF (a head's last CR is the
 * NUL of its last value by then, so LF CR LF is checked): 400 otherwise. Those
 * bytes may belong to an earlier feed whose body bytes the connection
 * dropped, so the last four bytes of each feed are kept (tail). Found by
 * fuzz-http.
 */
#include "http/parse.h"

#include <llhttp.h>

#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

_Static_assert(sizeof(llhttp_t) <= REQPARSE_LLHTTP_SIZE, "REQPARSE_LLHTTP_SIZE is too small");

static struct reqparse *rp_of(llhttp_t *p)
{
	return (struct reqparse *)(void *)p;
}

static llhttp_t *ll(struct reqparse *rp)
{
	return (llhttp_t *)(void *)rp->ll;
}

static const llhttp_t *cll(const struct reqparse *rp)
{
	return (const llhttp_t *)(const void *)rp->ll;
}

/* Why llhttp paused: what reqparse_feed() checks, and whether it returns. */
enum {
	STOP_HEAD,      /* the head is complete: LF CR LF before (the CR is a NUL now), RP_HEAD */
	STOP_CHUNK,     /* a chunk's line or data ended: CR LF before, and on */
	STOP_DONE,      /* the message is complete: RP_DONE */
	STOP_DONE_CRLF, /* a chunked one: CR LF CR LF before, and RP_DONE */
};

/* The byte k (1 to 4) before pos, pos in [start, ...): from this feed, or from the last kept. */
static char byte_before(const struct reqparse *rp, const char *start, const char *pos, size_t k)
{
	size_t in = (size_t)(pos - start);

	return k <= in ? pos[-(ptrdiff_t)k] : rp->tail[4 - (k - in)];
}

/* Whether the n bytes before pos (up to 4) end CR LF CR LF. */
static int crlf_before(const struct reqparse *rp, const char *start, const char *pos, size_t n)
{
	size_t k;

	for (k = 1; k <= n; k++)
		if (byte_before(rp, start, pos, k) != (k % 2 ? '\n' : '\r'))
			return 0;
	return 1;
}

/* A line end that llhttp took but is not CR LF: the request is refused. */
static int bad_line_end(struct reqparse *rp)
{
	rp->status = 400;
	rp->why = "a line ending in CR without LF";
	return -1;
}

static uint32_t off_of(const struct reqparse *rp, const char *at)
{
	return (uint32_t)(at - rp->base);
}

static int on_begin(llhttp_t *p)
{
	struct reqparse *rp = rp_of(p);

	rp->url = rp->url_len = 0;
	rp->nh = 0;
	rp->in_value = 0;
	rp->too_many = 0;
	rp->status = 0;
	rp->why = NULL;
	rp->field_open = 0;
	return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t len)
{
	struct reqparse *rp = rp_of(p);

	if (!rp->url_len)
		rp->url = off_of(rp, at);
	rp->url_len = off_of(rp, at) + (uint32_t)len - rp->url; /* pieces are contiguous */
	return 0;
}

static int on_field(llhttp_t *p, const char *at, size_t len)
{
	struct reqparse *rp = rp_of(p);
	struct rp_header *h;

	if (!rp->field_open) {
		/* a name's first byte: llhttp takes CR and any byte as the line end before it */
		if (!crlf_before(rp, rp->start, at, 2))
			return bad_line_end(rp);
		rp->field_open = 1;
	}
	if (rp->head_seen)
		return 0; /* a trailer, after a chunked body: not kept */
	if (rp->nh == 0 || rp->in_value) {
		if (rp->nh == HTTP_MAX_HEADERS) {
			rp->too_many = 1;
			return 0; /* counted as too large once the head is read */
		}
		h = &rp->h[rp->nh++];
		h->name = off_of(rp, at);
		h->name_len = 0;
		h->value = h->value_len = 0;
		rp->in_value = 0;
	}
	if (rp->too_many)
		return 0;
	h = &rp->h[rp->nh - 1];
	h->name_len = off_of(rp, at) + (uint32_t)len - h->name;
	return 0;
}

static int on_value(llhttp_t *p, const char *at, size_t len)
{
	struct reqparse *rp = rp_of(p);
	struct rp_header *h;

	rp->field_open = 0;
	if (rp->too_many || rp->nh == 0 || rp->head_seen)
		return 0;
	h = &rp->h[rp->nh - 1];
	if (!rp->in_value) {
		h->value = off_of(rp, at);
		rp->in_value = 1;
	}
	h->value_len = off_of(rp, at) + (uint32_t)len - h->value;
	return 0;
}

/*
 * The head is complete: names and values become C strings in place, and
 * the parser stops so that the connection can size the body first.
 */
static int on_head(llhttp_t *p)
{
	struct reqparse *rp = rp_of(p);
	unsigned i;

	if (rp->url_len) {
		rp->base[rp->url + rp->url_len] = '\0';
	} else {
		/* llhttp takes "CONNECT \n" for a request with no target: base + url is no string */
		rp->status = 400;
		rp->why = "an empty request target";
	}
	for (i = 0; i < rp->nh; i++) {
		struct rp_header *h = &rp->h[i];
		char *v = rp->base + h->value;

		rp->base[h->name + h->name_len] = '\0';
		if (!h->value_len) {
			/* an empty value: point at the name's terminator */
			h->value = h->name + h->name_len;
			continue;
		}
		while (h->value_len && (v[h->value_len - 1] == ' ' || v[h->value_len - 1] == '\t'))
			h->value_len--;
		if (memchr(v, '\r', h->value_len) || memchr(v, '\n', h->value_len)) {
			rp->status = 400;
			rp->why = "a header folded over lines";
		}
		v[h->value_len] = '\0';
	}
	rp->stop = STOP_HEAD;
	return HPE_PAUSED;
}

/* A chunk-size line or a chunk's data ended: the feed checks the line end. */
static int on_chunk_end(llhttp_t *p)
{
	rp_of(p)->stop = STOP_CHUNK;
	return HPE_PAUSED;
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
	struct reqparse *rp = rp_of(p);

	return rp->body(rp->ctx, at, len) < 0 ? -1 : 0;
}

static int on_done(llhttp_t *p)
{
	rp_of(p)->stop = p->flags & F_CHUNKED ? STOP_DONE_CRLF : STOP_DONE;
	return HPE_PAUSED;
}

static llhttp_settings_t settings;
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;

static void init_settings(void)
{
	llhttp_settings_init(&settings);
	settings.on_message_begin = on_begin;
	settings.on_url = on_url;
	settings.on_header_field = on_field;
	settings.on_header_value = on_value;
	settings.on_headers_complete = on_head;
	settings.on_body = on_body;
	settings.on_chunk_header = on_chunk_end;
	settings.on_chunk_complete = on_chunk_end;
	settings.on_message_complete = on_done;
}

void reqparse_init(struct reqparse *rp, int (*body)(void *ctx, const char *at, size_t len),
		   void *ctx)
{
	pthread_once(&settings_once, init_settings);
	memset(rp, 0, sizeof(*rp));
	llhttp_init(ll(rp), HTTP_REQUEST, &settings);
	rp->body = body;
	rp->ctx = ctx;
}

/* The answer to a request llhttp refused: a status and a reason. */
static void refuse(struct reqparse *rp, llhttp_errno_t err)
{
	if (rp->status)
		return; /* a callback's own */
	switch (err) {
	case HPE_INVALID_METHOD:
		rp->status = 501;
		rp->why = "a method the server does not know";
		break;
	case HPE_INVALID_VERSION:
		rp->status = 505;
		rp->why = "an HTTP version other than 1.x";
		break;
	case HPE_UNEXPECTED_CONTENT_LENGTH:
		rp->status = 400;
		rp->why = "Content-Length beside Transfer-Encoding, or two of them";
		break;
	case HPE_INVALID_CONTENT_LENGTH:
		rp->status = 400;
		rp->why = "Content-Length is not a number";
		break;
	case HPE_INVALID_TRANSFER_ENCODING:
		rp->status = 400;
		rp->why = "the only transfer coding accepted is chunked";
		break;
	case HPE_INVALID_HEADER_TOKEN:
		rp->status = 400;
		rp->why = "bad character in a header name (whitespace before the colon?)";
		break;
	default:
		rp->status = 400;
		rp->why = llhttp_get_error_reason(cll(rp));
		if (!rp->why)
			rp->why = llhttp_errno_name(err);
		break;
	}
}

/* Keeps the last four bytes of start[0, used) (with those before) for the next feed. */
static void keep_tail(struct reqparse *rp, const char *start, size_t used)
{
	char t[4];
	size_t k;

	for (k = 1; k <= 4; k++)
		t[4 - k] = byte_before(rp, start, start + used, k);
	memcpy(rp->tail, t, 4);
}

/*
 * llhttp paused at pos (rp->stop says why): 1 to parse on from pos, 0 to
 * return, -1 for a line end llhttp took that is not CR LF.
 */
static int paused(struct reqparse *rp, const char *start, const char *pos)
{
	static const size_t n[] = { [STOP_HEAD] = 3, [STOP_CHUNK] = 2, [STOP_DONE_CRLF] = 4 };

	if (rp->stop != STOP_DONE && !crlf_before(rp, start, pos, n[rp->stop]))
		return bad_line_end(rp);
	return rp->stop == STOP_CHUNK;
}

enum rp_result reqparse_feed(struct reqparse *rp, char *base, size_t from, size_t len,
			     size_t *used)
{
	llhttp_errno_t err;
	const char *start = base + from, *p = start, *end = start + len, *pos;
	int on;

	rp->base = base;
	rp->start = start;
	*used = len;
	if (rp->status)
		return RP_ERROR;
	for (;;) {
		err = llhttp_execute(ll(rp), p, (size_t)(end - p));
		if (err != HPE_PAUSED)
			break;
		pos = llhttp_get_error_pos(cll(rp));
		llhttp_resume(ll(rp));
		if (rp->status) {
			*used = (size_t)(pos - start);
			return RP_ERROR;
		}
		on = paused(rp, start, pos);
		if (on > 0) {
			p = pos;
			continue;
		}
		*used = (size_t)(pos - start);
		keep_tail(rp, start, *used);
		if (on < 0)
			return RP_ERROR;
		rp->head_seen = !rp->head_seen;
		return rp->head_seen ? RP_HEAD : RP_DONE;
	}
	if (err == HPE_OK) {
		keep_tail(rp, start, len);
		return RP_MORE;
	}
	if (err == HPE_PAUSED_UPGRADE) {
		/* after an Upgrade or CONNECT message: what follows is not HTTP */
		*used = 0;
		return RP_END;
	}
	*used = (size_t)(llhttp_get_error_pos(cll(rp)) - start);
	refuse(rp, err);
	return RP_ERROR;
}

const char *reqparse_header(const struct reqparse *rp, const char *name)
{
	unsigned i;

	for (i = 0; i < rp->nh; i++)
		if (strcasecmp(rp->base + rp->h[i].name, name) == 0)
			return rp->base + rp->h[i].value;
	return NULL;
}

const char *reqparse_method(const struct reqparse *rp)
{
	return llhttp_method_name((llhttp_method_t)cll(rp)->method);
}

int reqparse_version(const struct reqparse *rp, int *minor)
{
	*minor = cll(rp)->http_minor;
	return cll(rp)->http_major;
}

int reqparse_keep_alive(const struct reqparse *rp)
{
	return llhttp_should_keep_alive(cll(rp));
}

int reqparse_framing(const struct reqparse *rp, uint64_t *len)
{
	const llhttp_t *p = cll(rp);

	*len = 0;
	if (p->flags & F_CHUNKED)
		return 2;
	if (p->flags & F_CONTENT_LENGTH) {
		*len = p->content_length;
		return 1;
	}
	return 0;
}
