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

#include <string.h>
#include <time.h>

int test_passed, test_failed, test_current_failed;
const char *test_current_name;

int test_done(void)
{
	printf("%d passed, %d failed\n", test_passed, test_failed);
	return test_failed ? 1 : 0;
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
