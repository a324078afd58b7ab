/*
 * fuzz-json.c: a libFuzzer target for the JSON reader (src/util/json.c),
 * which reads sync API bodies on the server and answers in the client.
 *
 * The input is walked as the callers walk it: an object, key by key, each
 * value read as a string, a number, a nested object or skipped, chosen by
 * the key's length so that every path is reached; then once more with
 * json_skip() over the whole. Properties: a string read back is valid
 * UTF-8 (but for NULs from \u0000), and writing it with buf_add_json() and reading it again gives the
 * same bytes (the writer and the reader agree); a failed reader stays failed.
 */
#include "fuzz.h"

#include "util/buf.h"
#include "util/json.h"
#include "util/unicode.h"

static void round_trip(const struct buf *s)
{
	struct buf enc = BUF_INIT, back = BUF_INIT;
	struct json_reader r;

	/* \u0000 gives a NUL, which utf8_valid() refuses: callers check for it */
	fuzz_assert(memchr(s->ptr, '\0', s->len) || utf8_valid(s->ptr, s->len));
	buf_addc(&enc, '"');
	buf_add_json(&enc, s->ptr, s->len);
	buf_addc(&enc, '"');
	json_init(&r, enc.ptr, enc.len);
	fuzz_assert(json_string(&r, &back) == 0 && json_end(&r) == 0);
	fuzz_assert(back.len == s->len && memcmp(back.ptr, s->ptr, s->len) == 0);
	buf_release(&enc);
	buf_release(&back);
}

static void walk(struct json_reader *r, int depth)
{
	struct buf key = BUF_INIT, val = BUF_INIT;
	uint64_t v;

	if (json_object(r) < 0)
		goto out;
	while (json_key(r, &key) > 0) {
		switch (key.len % 4) {
		case 0:
			if (json_string(r, &val) == 0)
				round_trip(&val);
			break;
		case 1:
			(void)json_u64(r, &v);
			break;
		case 2:
			if (depth < 8)
				walk(r, depth + 1);
			else
				(void)json_skip(r);
			break;
		default:
			(void)json_skip(r);
		}
		if (r->failed)
			break;
	}
out:
	if (r->failed)
		fuzz_assert(json_object(r) < 0 && json_skip(r) < 0 && json_end(r) < 0);
	buf_release(&key);
	buf_release(&val);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_reader r;
	struct buf s = BUF_INIT;

	json_init(&r, (const char *)data, size);
	walk(&r, 0);
	(void)json_end(&r);
	json_init(&r, (const char *)data, size);
	if (json_skip(&r) == 0)
		(void)json_end(&r);
	json_init(&r, (const char *)data, size);
	if (json_string(&r, &s) == 0)
		round_trip(&s);
	buf_release(&s);
	return 0;
}
