/*
 * metrics.h: latency histograms for /metrics, and the Prometheus text
 * format they are written in.
 *
 * A histogram is a fixed array of counters, one per bucket, and a sum, all
 * atomics: no allocation, no lock, nothing but an add per observation. Every
 * histogram shares one set of bounds, from 100 µs (a page from memory) to
 * 30 s (a full load of a large vault), 2.5x apart; Prometheus sums
 * histograms across servers only when their bounds agree.
 *
 * Two ways to count. A serving loop owns its histograms (one per loop,
 * summed when /metrics is read) and adds with a relaxed load and store, as
 * its other counters do: plain moves, no bus lock on the request path
 * (metrics_observe_owned()). Histograms that any thread adds to (search,
 * change-to-live) use a relaxed fetch-and-add (metrics_observe()).
 *
 * Rejected: summaries (quantiles cannot be summed across threads or
 * servers), and a histogram library (prometheus-client-c needs a registry
 * and allocates per label set).
 */
#ifndef QUIRE_METRICS_H
#define QUIRE_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* The upper bounds, in µs: 100 µs, 250 µs, 500 µs, 1 ms ... 10 s, 30 s. */
#define METRICS_BOUNDS 17

struct metrics_histogram {
	_Atomic uint64_t count[METRICS_BOUNDS + 1]; /* per bucket; the last: above every bound */
	_Atomic uint64_t sum_us;
};

/* Totals read from histograms (plain numbers), to write. */
struct metrics_totals {
	uint64_t count[METRICS_BOUNDS + 1];
	uint64_t sum_us;
};

/* The bucket of a duration of us microseconds (0 .. METRICS_BOUNDS). */
size_t metrics_bucket(uint64_t us);

/* Adds an observation from any thread (relaxed atomic adds). */
void metrics_observe(struct metrics_histogram *h, uint64_t us);

/* Adds an observation from the one thread that writes h (relaxed load and store). */
void metrics_observe_owned(struct metrics_histogram *h, uint64_t us);

/* Adds h's counts to t (relaxed loads; t starts zeroed). */
void metrics_read(const struct metrics_histogram *h, struct metrics_totals *t);

/* "# HELP name help\n# TYPE name type\n". */
void metrics_family(struct buf *b, const char *name, const char *type, const char *help);

/*
 * The series of one histogram: name_bucket{labels,le="..."} (cumulative,
 * "+Inf" last), name_sum{labels} in seconds and name_count{labels}. labels
 * is "" or a label list without braces: kind="page".
 */
void metrics_write_histogram(struct buf *b, const char *name, const char *labels,
			     const struct metrics_totals *t);

#endif
