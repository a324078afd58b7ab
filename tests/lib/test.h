/*
 * test.h: the tiny assert header every test program uses (tests/lib/test.c
 * holds its counters, so the helpers of tests/lib can check too).
 *
 *	static void test_something(void) { CHECK(1 + 1 == 2); CHECK_STR(a, "b"); }
 *	int main(void) { RUN(test_something); return test_done(); }
 *
 * A failed check prints file:line and the expression and marks the current
 * test failed; the program goes on with the next test. A test that cannot
 * run here (the shared corpus is not beside the checkout, a tool is not
 * installed) calls test_skip() with what it needs and returns. test_done()
 * prints "N skipped" when some were, then the closing line "N passed, N
 * failed", and returns the exit status: 1 when a test failed, 77 (meson's
 * "skipped") when every test skipped, else 0.
 */
#ifndef QUIRE_TEST_H
#define QUIRE_TEST_H

#include <stddef.h>

#include <stdio.h>
#include <string.h>

/* 1 in a build with AddressSanitizer (where a test may make its work smaller), else 0. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

extern int test_passed, test_failed, test_skipped, test_current_failed, test_current_skipped;
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
		test_current_skipped = 0;                                                 \
		fn();                                                                     \
		if (test_current_failed)                                                  \
			test_failed++;                                                    \
		else if (test_current_skipped)                                            \
			test_skipped++;                                                   \
		else                                                                      \
			test_passed++;                                                    \
	} while (0)

/*
 * Marks the current test skipped, printing one line on stderr: "  skipped:
 * <test>: <what it needs, and why>". The test returns after it: nothing
 * it would have checked counts as passed.
 */
void test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "N skipped" (when some were) and the closing line; returns main's exit status. */
int test_done(void);

/* Seconds on the monotonic clock: for deadlines and timing checks. */
double now_s(void);

/* How many times needle occurs in hay, without overlaps. */
size_t test_count(const char *hay, const char *needle);

#endif
