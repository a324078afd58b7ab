/*
 * pathological-bench.c: the times of the hostile inputs of
 * tests/lib/hostile.c, at a size n and at 10 n. Figures only, never a
 * verdict: tests/test-pathological.c decides on counted work and memory,
 * which a slower or busier machine does not change; times here say what
 * a reader waits for, on this machine, today.
 *
 *	build/bench/pathological-bench [--json] [CASE-SUBSTRING]
 *
 * Each case is built at its bench size (past where a deep tree outgrows
 * the caches) and at ten times that, and run three times at each; the
 * least CPU time of the three (CLOCK_PROCESS_CPUTIME_ID) is printed with
 * the input's bytes, microseconds a kilobyte at 10 n, and the ratio of the
 * two times (near 10 for linear work; cache misses alone can add a third,
 * and a busy machine more: the reason the test counts instead). The first
 * run at each size checks the output as the test does. --json prints one
 * JSON object a line (bench/run --only=pathological).
 *
 * Run it on a release build (build/): under the sanitizers times mean
 * little.
 */
#include "lib/hostile.h"
#include "lib/test.h"

#include "markdown/markdown.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The least CPU seconds of three runs at n; the input's bytes in *bytes. */
static double best_of_3(const struct hostile_case *c, size_t n, size_t *bytes)
{
	void *in = c->build(n);
	double best = 1e9;
	int i;

	*bytes = hostile_bytes(c, in);
	for (i = 0; i < 3; i++) {
		double t0 = cpu_now(), t;

		c->run(in, n, i == 0);
		t = cpu_now() - t0;
		if (t < best)
			best = t;
	}
	c->drop(in);
	return best;
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	int json = 0, i;
	size_t k;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else
			only = argv[i];
	}
	md_global_init();
	test_current_name = "pathological-bench";
	if (!json)
		printf("%-30s %12s %9s %12s %9s %8s %8s\n", "case", "bytes at n", "n s", "bytes at 10n",
		       "10 n s", "ratio", "us/KB");
	for (k = 0; k < hostile_ncases; k++) {
		const struct hostile_case *c = &hostile_cases[k];
		size_t a_bytes, b_bytes;
		double a, b;

		if (only && !strstr(c->name, only))
			continue;
		a = best_of_3(c, c->bench, &a_bytes);
		b = best_of_3(c, 10 * c->bench, &b_bytes);
		if (json)
			printf("{\"case\": \"%s\", \"n\": %zu, \"bytes\": %zu, \"seconds\": %.6f, "
			       "\"bytes_10n\": %zu, \"seconds_10n\": %.6f, \"ratio\": %.2f}\n", c->name,
			       c->bench, a_bytes, a, b_bytes, b, b / (a > 1e-9 ? a : 1e-9));
		else
			printf("%-30s %12zu %9.4f %12zu %9.4f %8.1f %8.2f\n", c->name, a_bytes, a,
			       b_bytes, b, b / (a > 1e-9 ? a : 1e-9), b * 1e6 / ((double)b_bytes / 1024));
		fflush(stdout);
	}
	/* an output that was not what the case wants is a broken benchmark, not a figure */
	return test_current_failed ? 1 : 0;
}
