/*
 * json.h: a small pull reader for the JSON the sync API exchanges.
 *
 * The sync API reads {"from":..,"to":..}; the sync client reads the
 * manifest and {"version":N} answers. Both are objects of strings,
 * unsigned integers and nested objects, so the reader offers exactly
 * that: objects walked key by key, strings (escapes decoded, \u pairs
 * joined, the result checked as UTF-8), unsigned integers, and skipping
 * any other value. Writing JSON is buf_add_json().
 *
 * The reader never allocates except into the caller's buffers and keeps
 * no state but a cursor, so it can be used on any thread.
 *
 *	struct json_reader r;
 *	json_init(&r, text, len);
 *	if (json_object(&r) == 0)
 *		while (json_key(&r, &key) > 0)
 *			if (strcmp(key.ptr, "version") == 0) json_u64(&r, &v);
 *			else json_skip(&r);
 */
#ifndef QUIRE_JSON_H
#define QUIRE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

struct json_reader {
	const char *p, *end;
	int depth;        /* of json_skip's recursion, bounded */
	int failed;       /* set by the first error; every call fails after it */
	int first;        /* json_object() was just read: no ',' before the next key */
};

void json_init(struct json_reader *r, const char *s, size_t len);

/* Consumes '{'. 0 or -1. */
int json_object(struct json_reader *r);
/*
 * The next key of the object being read, into key, with its ':' consumed:
 * returns 1, then the caller reads or skips the value. Returns 0 at the
 * closing '}' (consumed), -1 on a syntax error.
 */
int json_key(struct json_reader *r, struct buf *key);
/* A string into out (replacing it); it may hold NUL bytes from \u0000. 0 or -1. */
int json_string(struct json_reader *r, struct buf *out);
/* An unsigned integer without fraction or exponent. 0 or -1. */
int json_u64(struct json_reader *r, uint64_t *out);
/* Any value. 0 or -1. */
int json_skip(struct json_reader *r);
/* 0 when only whitespace is left, else -1. */
int json_end(struct json_reader *r);

#endif
