/*
 * fuzz-live.c: a libFuzzer target for the u= parameter of live pages
 * (live_parse_target(), src/http/live.c), the one part of a live
 * request quire parses itself: the raw query string as a client sends it.
 *
 * The input is "prefix\0query" (no NUL: the query alone, prefix ""; a
 * prefix longer than 16 bytes is cut). Properties: a parse that succeeds
 * gives a path that starts with '/', holds no control byte and is at
 * most 4 KiB; one that fails names why; the same input parses the same
 * way twice (no state kept).
 */
#include "fuzz.h"

#include "http/live.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size), *query = s, prefix[17] = "";
	const char *nul = memchr(s, '\0', size), *why = NULL, *why2 = NULL;
	struct buf out = BUF_INIT, again = BUF_INIT;
	int rc, rc2;
	size_t i;

	if (nul) {
		size_t n = (size_t)(nul - s) < 16 ? (size_t)(nul - s) : 16;
		memcpy(prefix, s, n);
		prefix[n] = '\0';
		query = (char *)nul + 1;
	}
	rc = live_parse_target(query, prefix, &out, &why);
	rc2 = live_parse_target(query, prefix, &again, &why2);
	fuzz_assert(rc == rc2);
	if (rc == 0) {
		fuzz_assert(out.len >= 1 && out.ptr[0] == '/' && out.len <= 4096);
		for (i = 0; i < out.len; i++)
			fuzz_assert((unsigned char)out.ptr[i] >= 0x20 && out.ptr[i] != 0x7f);
		fuzz_assert(again.len == out.len && memcmp(again.ptr, out.ptr, out.len) == 0);
	} else {
		fuzz_assert(why != NULL && why2 != NULL);
	}
	buf_release(&out);
	buf_release(&again);
	free(s);
	return 0;
}
