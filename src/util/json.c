/*
 * json.c: the pull reader of json.h.
 *
 * One flag stands in for a stack: json_object() sets "the next key is the
 * first", and json_key() clears it, so nested objects read strictly in
 * order need nothing more. Numbers are unsigned integers only: the sync
 * API has no other kind. json_skip() recurses at most 64 levels.
 */
#include "util/json.h"
#include "util/unicode.h"

#include <string.h>

#define MAX_DEPTH 64

void json_init(struct json_reader *r, const char *s, size_t len)
{
	r->p = s;
	r->end = s + len;
	r->depth = 0;
	r->failed = 0;
	r->first = 0;
}

static int fail(struct json_reader *r)
{
	r->failed = 1;
	return -1;
}

/* Skips whitespace; the next byte, or -1 at the end. */
static int peek(struct json_reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
	return r->p < r->end ? (unsigned char)*r->p : -1;
}

static int eat(struct json_reader *r, int c)
{
	if (r->failed || peek(r) != c)
		return fail(r);
	r->p++;
	return 0;
}

int json_object(struct json_reader *r)
{
	if (eat(r, '{') < 0)
		return -1;
	r->first = 1;
	return 0;
}

int json_key(struct json_reader *r, struct buf *key)
{
	int c;

	if (r->failed)
		return -1;
	c = peek(r);
	if (c == '}') {
		r->p++;
		r->first = 0;
		return 0;
	}
	if (!r->first && eat(r, ',') < 0)
		return -1;
	r->first = 0;
	if (json_string(r, key) < 0 || eat(r, ':') < 0)
		return -1;
	return 1;
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		int d = hex_value(p[i]);
		if (d < 0)
			return -1;
		v = v * 16 + (unsigned)d;
	}
	*out = v;
	return 0;
}

int json_string(struct json_reader *r, struct buf *out)
{
	const char *run;

	buf_reset(out);
	if (eat(r, '"') < 0)
		return -1;
	for (;;) {
		unsigned char c;

		run = r->p;
		while (r->p < r->end && *r->p != '"' && *r->p != '\\' &&
		       (unsigned char)*r->p >= 0x20)
			r->p++;
		buf_add(out, run, (size_t)(r->p - run));
		if (r->p >= r->end)
			return fail(r);
		c = (unsigned char)*r->p++;
		if (c == '"')
			break;
		if (c < 0x20 || r->p >= r->end)
			return fail(r); /* raw control characters are not allowed in strings */
		c = (unsigned char)*r->p++;
		switch (c) {
		case '"': buf_addc(out, '"'); break;
		case '\\': buf_addc(out, '\\'); break;
		case '/': buf_addc(out, '/'); break;
		case 'b': buf_addc(out, '\b'); break;
		case 'f': buf_addc(out, '\f'); break;
		case 'n': buf_addc(out, '\n'); break;
		case 'r': buf_addc(out, '\r'); break;
		case 't': buf_addc(out, '\t'); break;
		case 'u': {
			unsigned cp, lo;
			if (r->end - r->p < 4 || hex4(r->p, &cp) < 0)
				return fail(r);
			r->p += 4;
			if (cp >= 0xDC00 && cp <= 0xDFFF)
				return fail(r); /* a lone low surrogate */
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
				    hex4(r->p + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
					return fail(r);
				r->p += 6;
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			}
			buf_add_utf8(out, cp);
			break;
		}
		default:
			return fail(r);
		}
	}
	/* NUL bytes from \u0000 are allowed through; utf8_valid() would refuse them */
	for (size_t i = 0, start = 0; i <= out->len; i++) {
		if (i == out->len || out->ptr[i] == '\0') {
			if (i > start && !utf8_valid(out->ptr + start, i - start))
				return fail(r);
			start = i + 1;
		}
	}
	return 0;
}

int json_u64(struct json_reader *r, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0;

	if (r->failed || peek(r) < '0' || peek(r) > '9')
		return fail(r);
	if (*r->p == '0' && r->p + 1 < r->end && r->p[1] >= '0' && r->p[1] <= '9')
		return fail(r); /* leading zeros */
	while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
		unsigned d = (unsigned)(*r->p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return fail(r);
		v = v * 10 + d;
		r->p++;
		n++;
	}
	if (r->p < r->end && (*r->p == '.' || *r->p == 'e' || *r->p == 'E'))
		return fail(r);
	*out = v;
	return n ? 0 : fail(r);
}

static int literal(struct json_reader *r, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
		return fail(r);
	r->p += n;
	return 0;
}

int json_skip(struct json_reader *r)
{
	struct buf tmp = BUF_INIT;
	int c, rc = 0;

	if (r->failed)
		return -1;
	c = peek(r);
	if (c == '"') {
		rc = json_string(r, &tmp);
	} else if (c == '{' || c == '[') {
		int close = c == '{' ? '}' : ']', first = 1;
		if (++r->depth > MAX_DEPTH) {
			r->depth--;
			return fail(r);
		}
		r->p++;
		while (rc == 0) {
			if (peek(r) == close) {
				r->p++;
				break;
			}
			if (!first && eat(r, ',') < 0) {
				rc = -1;
				break;
			}
			first = 0;
			if (c == '{' && (json_string(r, &tmp) < 0 || eat(r, ':') < 0)) {
				rc = -1;
				break;
			}
			rc = json_skip(r);
		}
		r->depth--;
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		if (c == '-')
			r->p++;
		if (peek(r) < '0' || peek(r) > '9')
			rc = fail(r);
		while (rc == 0 && r->p < r->end &&
		       ((*r->p >= '0' && *r->p <= '9') || *r->p == '.' || *r->p == 'e' ||
			*r->p == 'E' || *r->p == '+' || *r->p == '-'))
			r->p++;
	} else if (c == 't') {
		rc = literal(r, "true");
	} else if (c == 'f') {
		rc = literal(r, "false");
	} else if (c == 'n') {
		rc = literal(r, "null");
	} else {
		rc = fail(r);
	}
	buf_release(&tmp);
	return rc;
}

int json_end(struct json_reader *r)
{
	if (r->failed || peek(r) != -1)
		return fail(r);
	return 0;
}
