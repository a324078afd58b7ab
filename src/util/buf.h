/*
 * buf.h: the one growable byte buffer, for all string building.
 *
 * Modelled on git's strbuf: `ptr` always points at a NUL-terminated string
 * (an empty static one until the first append), so a buffer can be handed
 * to any function that wants a C string, and `len` excludes the NUL. The
 * buffer may hold NUL bytes of its own (gzip output does).
 *
 *	struct buf b = BUF_INIT;
 *	buf_addf(&b, "%d notes", n);
 *	puts(b.ptr);
 *	buf_release(&b);
 */
#ifndef QUIRE_BUF_H
#define QUIRE_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *ptr;
	size_t len;
	size_t cap; /* 0 while ptr is the shared empty string */
};

extern char buf_empty[];
#define BUF_INIT { buf_empty, 0, 0 }

void buf_init(struct buf *b, size_t hint);
/* Frees the memory and leaves b as BUF_INIT. Accepts NULL. */
void buf_release(struct buf *b);
/*
 * Hands the bytes to the caller, who frees them with free(); b is left as
 * BUF_INIT. Never NULL (an empty buffer gives a fresh empty string).
 */
char *buf_detach(struct buf *b, size_t *len);
/* Makes room for extra more bytes beyond len. */
void buf_grow(struct buf *b, size_t extra);
/*
 * Gives back the capacity beyond len (and its NUL). For buffers that are
 * kept once built: growth leaves up to half of a buffer unused, and
 * gzip_compress() reserves zlib's worst case, about the input's size.
 */
void buf_fit(struct buf *b);
void buf_setlen(struct buf *b, size_t len);
static inline void buf_reset(struct buf *b)
{
	buf_setlen(b, 0);
}

/*
 * The appends every writer calls hundreds of times a page, inline: a
 * string literal's length is then known when compiling, and the room is
 * checked without a call (buf_grow() only when it runs out). Out of line,
 * strlen() of layout's literals was 16% of a folder rename's profile.
 */
static inline void buf_add(struct buf *b, const void *data, size_t len);
static inline void buf_adds(struct buf *b, const char *s);
static inline void buf_addc(struct buf *b, int c);
void buf_addf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void buf_vaddf(struct buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Appends s with &, <, >, " escaped: safe in text and in quoted attributes. */
void buf_add_html(struct buf *b, const char *s, size_t len);
static inline void buf_adds_html(struct buf *b, const char *s);
/*
 * Appends a URL path with every byte outside the unreserved set and '/'
 * percent-encoded (so '%', '#', '?', spaces and non-ASCII are safe).
 */
void buf_add_urlpath(struct buf *b, const char *s, size_t len);
/*
 * Appends s with each %XX decoded (and with form set, '+' as a space, as
 * query strings write it). Returns 0, or -1 at an invalid escape (what came
 * before it is appended). A %00 decodes to a NUL byte: callers that cannot
 * take one check for it.
 */
/* Appends the code point cp as UTF-8 (1 to 4 bytes; cp below 0x110000). */
void buf_add_utf8(struct buf *b, unsigned cp);

/* The value of a hexadecimal digit (either case), or -1 for any other character. */
int hex_value(int c);

int buf_add_urldecoded(struct buf *b, const char *s, size_t len, int form);
/*
 * Appends the bytes that base64 text s (len bytes, padding optional)
 * stands for. Returns 0, or -1 at a character outside the alphabet or a
 * bad length (what came before is appended).
 */
int buf_add_base64_decoded(struct buf *b, const char *s, size_t len);
/* Appends s as the contents of a JSON string (without the quotes). */
void buf_add_json(struct buf *b, const char *s, size_t len);
static inline void buf_adds_json(struct buf *b, const char *s);

#include <string.h>
static inline void buf_add(struct buf *b, const void *data, size_t len)
{
	if (!len)
		return;
	if (b->cap - b->len <= len) /* cap 0: the shared empty string, always grown */
		buf_grow(b, len);
	memcpy(b->ptr + b->len, data, len);
	b->len += len;
	b->ptr[b->len] = '\0';
}
static inline void buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}
static inline void buf_addc(struct buf *b, int c)
{
	if (b->cap - b->len <= 1)
		buf_grow(b, 1);
	b->ptr[b->len++] = (char)c;
	b->ptr[b->len] = '\0';
}
static inline void buf_adds_html(struct buf *b, const char *s)
{
	buf_add_html(b, s, strlen(s));
}
static inline void buf_adds_json(struct buf *b, const char *s)
{
	buf_add_json(b, s, strlen(s));
}

#endif
