/*
 * parallel.h: run a loop body on several threads.
 *
 * The loader's work is a handful of embarrassingly parallel loops (parse
 * every note, render every page, compress every page). Items are handed
 * out one at a time from an atomic counter, so one large note does not
 * hold up a whole slice. With threads <= 1 or few items it runs inline.
 */
#ifndef QUIRE_PARALLEL_H
#define QUIRE_PARALLEL_H

#include <stddef.h>

/* Calls fn(ctx, i) for each i in [0, n), on up to threads threads; returns when all are done. */
void parallel_for(size_t n, int threads, void (*fn)(void *ctx, size_t i), void *ctx);

/* The number of processors this process may run on (its affinity mask; at least 1). */
int parallel_cpus(void);

#endif
