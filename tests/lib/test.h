/*
 * test.h: the tiny assert header every test program uses (tests/lib/test.c
 * holds its counters, so the helpers of tests/lib can check too).
 *
 *	static void test_something(void) { CHECK(1 + 1 == 2); CHECK_STR(a, "b"); }
 *	int main(void) { RUN(test_something); return test_done(); }
 *
 * A failed check prints file:line and the expression and marks the current
 * test failed; the program goes on with the next test. test_done() prints
 * the closing line "N passed, N failed" and returns the exit status.
 */
#ifndef QUIRE_TEST_H
#define QUIRE_TEST_H

#include <stddef.h>

#include <stdio.h>
#include <string.h>

extern int test_passed, test_failed, test_current_failed;
extern const char *test_current_name;

#define CHECK(cond)                                                                       \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__, __LINE__,  \
				test_current_name, #cond);                                \
			test_current_failed = 1;                                          \
		}                                                                         \
	} while (0)

#define CHECK_STR(got, want)                                                              \
	do {                                                                              \
		const char *check_g_ = (got), *check_w_ = (want);                         \
		if (!check_g_ || !check_w_ || strcmp(check_g_, check_w_) != 0) {          \
			fprintf(stderr, "%s:%d: %s: %s\n  got:  %s\n  want: %s\n", __FILE__,  \
				__LINE__, test_current_name, #got, check_g_ ? check_g_ : "(null)", \
				check_w_ ? check_w_ : "(null)");                          \
			test_current_failed = 1;                                          \
		}                                                                         \
	} while (0)

#define CHECK_INT(got, want)                                                              \
	do {                                                                              \
		long long check_g_ = (long long)(got), check_w_ = (long long)(want);      \
		if (check_g_ != check_w_) {                                               \
			fprintf(stderr, "%s:%d: %s: %s is %lld, want %lld\n", __FILE__,       \
				__LINE__, test_current_name, #got, check_g_, check_w_);   \
			test_current_failed = 1;                                          \
		}                                                                         \
	} while (0)

#define RUN(fn)                                                                           \
	do {                                                                              \
		test_current_name = #fn;                                                  \
		test_current_failed = 0;                                                  \
		fn();                                                                     \
		if (test_current_failed)                                                  \
			test_failed++;                                                    \
		else                                                                      \
			test_passed++;                                                    \
	} while (0)

/* Prints the closing line "N passed, N failed"; returns main's exit status. */
int test_done(void);

/* Seconds on the monotonic clock: for deadlines and timing checks. */
double now_s(void);

/* How many times needle occurs in hay, without overlaps. */
size_t test_count(const char *hay, const char *needle);

#endif
