/*
 * test-parallel.c: every index exactly once at any thread count, and the
 * processor count that the affinity mask allows (a server pinned to one
 * core must not start helper threads that only take turns with it).
 */
#include "util/parallel.h"
#include "lib/test.h"

#include <sched.h>
#include <stdatomic.h>

static atomic_int seen[1000];

static void mark(void *ctx, size_t i)
{
	(void)ctx;
	atomic_fetch_add(&seen[i], 1);
}

static void test_each_index_once(void)
{
	static const size_t ns[] = { 0, 1, 2, 7, 1000 };
	size_t a, i;
	int threads;

	for (a = 0; a < sizeof(ns) / sizeof(ns[0]); a++) {
		for (threads = 0; threads <= 9; threads++) {
			for (i = 0; i < 1000; i++)
				atomic_store(&seen[i], 0);
			parallel_for(ns[a], threads, mark, NULL);
			for (i = 0; i < 1000; i++)
				CHECK_INT(atomic_load(&seen[i]), i < ns[a] ? 1 : 0);
		}
	}
}

static void test_cpus_follow_affinity(void)
{
	cpu_set_t all, one;
	int first = -1, i;

	CHECK(sched_getaffinity(0, sizeof(all), &all) == 0);
	CHECK_INT(parallel_cpus(), CPU_COUNT(&all));
	for (i = 0; i < CPU_SETSIZE && first < 0; i++)
		if (CPU_ISSET(i, &all))
			first = i;
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);
	CHECK_INT(parallel_cpus(), 1);
	CHECK(sched_setaffinity(0, sizeof(all), &all) == 0);
	CHECK_INT(parallel_cpus(), CPU_COUNT(&all));
}

int main(void)
{
	RUN(test_each_index_once);
	RUN(test_cpus_follow_affinity);
	return test_done();
}
