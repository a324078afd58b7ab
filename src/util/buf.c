/*
 * buf.c: the growable byte buffer and its escaping appenders.
 */
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char buf_empty[1];

void buf_init(struct buf *b, size_t hint)
{
	b->ptr = buf_empty;
	b->len = 0;
	b->cap = 0;
	if (hint)
		buf_grow(b, hint);
}

void buf_release(struct buf *b)
{
	if (!b)
		return;
	if (b->cap)
		free(b->ptr);
	buf_init(b, 0);
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *p;

	if (len)
		*len = b->len;
	if (!b->cap)
		return xstrdup("");
	p = b->ptr;
	buf_init(b, 0);
	return p;
}

void buf_grow(struct buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	size_t cap;

	if (need < b->len)
		xdie_oom(SIZE_MAX);
	if (need <= b->cap)
		return;
	cap = b->cap < 64 ? 64 : b->cap;
	while (cap < need)
		cap = cap + cap / 2;
	if (!b->cap) {
		b->ptr = xmalloc(cap);
		b->ptr[0] = '\0';
	} else {
		b->ptr = xrealloc(b->ptr, cap);
	}
	b->cap = cap;
}

void buf_fit(struct buf *b)
{
	if (!b->cap || b->cap == b->len + 1)
		return;
	b->ptr = xrealloc(b->ptr, b->len + 1);
	b->cap = b->len + 1;
}

void buf_setlen(struct buf *b, size_t len)
{
	if (!b->cap) {
		if (len)
			abort();
		return;
	}
	if (len >= b->cap)
		abort();
	b->len = len;
	b->ptr[len] = '\0';
}

void buf_vaddf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	buf_grow(b, 64);
	va_copy(cp, ap);
	n = vsnprintf(b->ptr + b->len, b->cap - b->len, fmt, cp);
	va_end(cp);
	if (n < 0)
		abort();
	if ((size_t)n >= b->cap - b->len) {
		buf_grow(b, (size_t)n);
		n = vsnprintf(b->ptr + b->len, b->cap - b->len, fmt, ap);
	}
	b->len += (size_t)n;
}

void buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(b, fmt, ap);
	va_end(ap);
}

/*
 * Whether one of the 8 bytes in x is &, <, > or " (the "has a zero byte"
 * test of Hacker's Delight, 6-1, on x xor each of them): titles, URLs and
 * summaries rarely hold one, so most of a string is passed 8 bytes at a
 * time. The test is exact as a whole; which byte it was is found below.
 */
static inline int html_special8(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	uint64_t a = x ^ (ones * '&'), l = x ^ (ones * '<'), g = x ^ (ones * '>'),
		 q = x ^ (ones * '"');

	return ((((a - ones) & ~a) | ((l - ones) & ~l) | ((g - ones) & ~g) | ((q - ones) & ~q)) &
		highs) != 0;
}

void buf_add_html(struct buf *b, const char *s, size_t len)
{
	size_t i = 0, run = 0;

	buf_grow(b, len);
	while (i < len) {
		const char *rep;
		uint64_t x;
		if (i + 8 <= len) {
			memcpy(&x, s + i, 8);
			if (!html_special8(x)) {
				i += 8;
				continue;
			}
		}
		switch (s[i]) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		default: i++; continue;
		}
		buf_add(b, s + run, i - run);
		buf_adds(b, rep);
		run = ++i;
	}
	buf_add(b, s + run, len - run);
}

static int unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.' || c == '~' || c == '/';
}

void buf_add_urlpath(struct buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;

	buf_grow(b, len);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (unreserved(c)) {
			buf_addc(b, c);
		} else {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };
			buf_add(b, e, 3);
		}
	}
}

int hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int base64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int buf_add_base64_decoded(struct buf *b, const char *s, size_t len)
{
	unsigned acc = 0;
	size_t i;
	int bits = 0;

	while (len && s[len - 1] == '=')
		len--;
	if (len % 4 == 1)
		return -1;
	for (i = 0; i < len; i++) {
		int v = base64_value((unsigned char)s[i]);
		if (v < 0)
			return -1;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf_addc(b, (int)((acc >> bits) & 0xff));
		}
	}
	return 0;
}

int buf_add_urldecoded(struct buf *b, const char *s, size_t len, int form)
{
	size_t i;

	buf_grow(b, len);
	for (i = 0; i < len; i++) {
		int hi, lo;
		if (s[i] == '%') {
			if (i + 2 >= len || (hi = hex_value(s[i + 1])) < 0 || (lo = hex_value(s[i + 2])) < 0)
				return -1;
			buf_addc(b, hi * 16 + lo);
			i += 2;
		} else {
			buf_addc(b, form && s[i] == '+' ? ' ' : s[i]);
		}
	}
	return 0;
}

void buf_add_json(struct buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	buf_grow(b, len);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t run = i;
		/* the bytes that need no escape, copied as one run */
		while (run < len && (unsigned char)s[run] >= 0x20 && s[run] != '"' && s[run] != '\\' &&
		       s[run] != '<')
			run++;
		if (run > i) {
			buf_add(b, s + i, run - i);
			i = run - 1;
			continue;
		}
		switch (c) {
		case '"': buf_add(b, "\\\"", 2); break;
		case '\\': buf_add(b, "\\\\", 2); break;
		case '\n': buf_add(b, "\\n", 2); break;
		case '\r': buf_add(b, "\\r", 2); break;
		case '\t': buf_add(b, "\\t", 2); break;
		case '<': buf_add(b, "\\u003c", 6); break; /* safe inside <script> */
		default:
			if (c < 0x20) {
				char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
				buf_add(b, e, 6);
			} else {
				buf_addc(b, c);
			}
		}
	}
}

void buf_add_utf8(struct buf *b, unsigned cp)
{
	if (cp < 0x80) {
		buf_addc(b, (int)cp);
	} else if (cp < 0x800) {
		buf_addc(b, (int)(0xC0 | cp >> 6));
		buf_addc(b, (int)(0x80 | (cp & 0x3F)));
	} else if (cp < 0x10000) {
		buf_addc(b, (int)(0xE0 | cp >> 12));
		buf_addc(b, (int)(0x80 | (cp >> 6 & 0x3F)));
		buf_addc(b, (int)(0x80 | (cp & 0x3F)));
	} else {
		buf_addc(b, (int)(0xF0 | cp >> 18));
		buf_addc(b, (int)(0x80 | (cp >> 12 & 0x3F)));
		buf_addc(b, (int)(0x80 | (cp >> 6 & 0x3F)));
		buf_addc(b, (int)(0x80 | (cp & 0x3F)));
	}
}
