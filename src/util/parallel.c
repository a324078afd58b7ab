/*
 * parallel.c: a counter-driven parallel loop on pthreads.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "util/parallel.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct job {
	atomic_size_t next;
	size_t n;
	void (*fn)(void *ctx, size_t i);
	void *ctx;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	size_t i;

	while ((i = atomic_fetch_add(&j->next, 1)) < j->n)
		j->fn(j->ctx, i);
	return NULL;
}

/*
 * The processors this process may run on, not the machine's: under
 * `taskset -c 0` or a container's cpuset, a second thread would only take
 * turns with the first (and, in `serve`, with the serving thread).
 */
int parallel_cpus(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : (int)n;
}

void parallel_for(size_t n, int threads, void (*fn)(void *ctx, size_t i), void *ctx)
{
	struct job j;
	pthread_t *tids;
	int t, started = 0;

	if (threads > 64)
		threads = 64;
	if ((size_t)threads > n)
		threads = (int)n;
	atomic_init(&j.next, 0);
	j.n = n;
	j.fn = fn;
	j.ctx = ctx;
	if (threads <= 1) {
		worker(&j);
		return;
	}
	tids = xcalloc((size_t)threads - 1, sizeof(*tids));
	for (t = 0; t < threads - 1; t++) {
		if (pthread_create(&tids[t], NULL, worker, &j) != 0) {
			log_warn("cannot start a loader thread; continuing with %d", started + 1);
			break;
		}
		started++;
	}
	worker(&j); /* this thread works too */
	for (t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	free(tids);
}
