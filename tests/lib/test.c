/*
 * test.c: the state behind test.h's checks, and the closing line.
 *
 * The counters are one set per test program, shared by the program and
 * the helpers of tests/lib that check things on its behalf (a server that
 * does not start, an edit that cannot be made), so that a failed check in
 * a helper fails the test that called it. They were static in test.h
 * while test.h was the only place that checked.
 */
#include "lib/test.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

int test_passed, test_failed, test_skipped, test_current_failed, test_current_skipped;
const char *test_current_name;

void test_skip(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "  skipped: %s: ", test_current_name ? test_current_name : "(setup)");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	test_current_skipped = 1;
}

int test_done(void)
{
	if (test_skipped)
		printf("%d skipped\n", test_skipped);
	printf("%d passed, %d failed\n", test_passed, test_failed);
	if (test_failed)
		return 1;
	/* meson's "skipped": nothing here could run */
	return test_passed == 0 && test_skipped ? 77 : 0;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

size_t test_count(const char *hay, const char *needle)
{
	size_t n = 0, len = strlen(needle);

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += len;
	}
	return n;
}
