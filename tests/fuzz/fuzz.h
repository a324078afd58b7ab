/*
 * fuzz.h: what the libFuzzer targets of tests/fuzz/ share.
 *
 * Each target is one program, fuzz-<name>.c, that defines
 * LLVMFuzzerTestOneInput() and is built only with -Dfuzz=true under clang
 * (tests/meson.build). The input is raw bytes: fuzz_str() gives a target a
 * NUL-terminated copy (the parsers here take C strings, as libevent hands
 * them), and fuzz_split() cuts the input at a separator byte for targets
 * that read several fields from one input.
 *
 * A crash, a sanitizer report, a leak or a timeout is a finding; a
 * property a target checks (a round trip, a bound) aborts with
 * fuzz_assert() so that libFuzzer records the input the same way.
 */
#ifndef QUIRE_FUZZ_H
#define QUIRE_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL-terminated copy of data (NUL bytes inside stay); free() it. */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/*
 * The next field of *p (up to end) ending at sep or at end: its start, its
 * length in *len; *p moves past the separator. NULL when *p is at end.
 */
static inline const char *fuzz_split(const char **p, const char *end, char sep, size_t *len)
{
	const char *s = *p, *e;

	if (s >= end)
		return NULL;
	e = memchr(s, sep, (size_t)(end - s));
	if (!e)
		e = end;
	*len = (size_t)(e - s);
	*p = e < end ? e + 1 : end;
	return s;
}

#define fuzz_assert(cond)                                                             \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, \
				#cond);                                               \
			abort();                                                      \
		}                                                             \
	} while (0)

#endif
