/*
 * parse.h: a request's head and body framing, read by llhttp (parse.c).
 *
 * Apart from http-int.h, because llhttp.h's method names (HTTP_GET...)
 * are quire's own in http.h: only parse.c includes llhttp.h.
 */
#ifndef QUIRE_HTTP_PARSE_H
#define QUIRE_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Header lines a request may have (431 beyond). */
#define HTTP_MAX_HEADERS 100
/* Room for llhttp's parser state (parse.c checks it is enough). */
#define REQPARSE_LLHTTP_SIZE 96

/* parse.c: a request's head, as offsets into the connection's input buffer */
struct rp_header {
	uint32_t name, name_len, value, value_len;
};

enum rp_result {
	RP_MORE,  /* every byte read: more are needed */
	RP_HEAD,  /* the head is complete (names and values are C strings now) */
	RP_DONE,  /* the message is complete */
	RP_ERROR, /* refused: status and why say how */
	RP_END,   /* after an Upgrade or CONNECT: nothing more is HTTP */
};

struct reqparse {
	_Alignas(16) unsigned char ll[REQPARSE_LLHTTP_SIZE]; /* llhttp's llhttp_t, first */
	char *base;               /* the buffer the offsets count from */
	uint32_t url, url_len;
	struct rp_header h[HTTP_MAX_HEADERS];
	unsigned nh;
	int in_value, too_many, head_seen;
	int stop;                 /* why llhttp paused (parse.c) */
	int field_open;           /* a header name is being read (parse.c) */
	const char *start;        /* the first byte of the current feed (parse.c) */
	char tail[4];             /* the last four bytes fed before it (parse.c) */
	int status;               /* the answer to a refused request, or 0 */
	const char *why;          /* and its reason (static) */
	int (*body)(void *ctx, const char *at, size_t len);
	void *ctx;
};

/* Sets rp up for a connection; body() gets the body's bytes (-1: stop, refused). */
void reqparse_init(struct reqparse *rp, int (*body)(void *ctx, const char *at, size_t len),
		   void *ctx);
/*
 * Feeds base[from, from + len) to the parser; *used is how many bytes it
 * took (up to the end of a head or message at RP_HEAD and RP_DONE).
 */
enum rp_result reqparse_feed(struct reqparse *rp, char *base, size_t from, size_t len,
			     size_t *used);
/* The first value of a header of the head (case-insensitive name), or NULL. */
const char *reqparse_header(const struct reqparse *rp, const char *name);

/* The method's name as llhttp knows it ("GET", "PROPFIND"; static), or NULL. */
const char *reqparse_method(const struct reqparse *rp);
/* The request's HTTP version: the major number, and the minor in *minor. */
int reqparse_version(const struct reqparse *rp, int *minor);
/* Whether the request lets the connection stay open (its version and Connection). */
int reqparse_keep_alive(const struct reqparse *rp);
/* The body's framing, once the head is read: 0 none, 1 Content-Length (*len), 2 chunked. */
int reqparse_framing(const struct reqparse *rp, uint64_t *len);
#endif
