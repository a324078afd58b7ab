/*
 * metrics.c: see metrics.h.
 */
#include "util/metrics.h"


static const uint64_t bounds_us[METRICS_BOUNDS] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000,
	250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000,
};

/* The bounds as Prometheus writes le, in seconds. */
static const char *const bounds_le[METRICS_BOUNDS] = {
	"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
	"0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30",
};

size_t metrics_bucket(uint64_t us)
{
	size_t i;

	/* le is inclusive; most requests stop at the first bounds */
	for (i = 0; i < METRICS_BOUNDS; i++)
		if (us <= bounds_us[i])
			return i;
	return METRICS_BOUNDS;
}

void metrics_observe(struct metrics_histogram *h, uint64_t us)
{
	atomic_fetch_add_explicit(&h->count[metrics_bucket(us)], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
}

static void bump(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

void metrics_observe_owned(struct metrics_histogram *h, uint64_t us)
{
	bump(&h->count[metrics_bucket(us)], 1);
	bump(&h->sum_us, us);
}

void metrics_read(const struct metrics_histogram *h, struct metrics_totals *t)
{
	size_t i;

	for (i = 0; i <= METRICS_BOUNDS; i++)
		t->count[i] += atomic_load_explicit(&h->count[i], memory_order_relaxed);
	t->sum_us += atomic_load_explicit(&h->sum_us, memory_order_relaxed);
}

void metrics_family(struct buf *b, const char *name, const char *type, const char *help)
{
	buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics_write_histogram(struct buf *b, const char *name, const char *labels,
			     const struct metrics_totals *t)
{
	const char *sep = labels[0] ? "," : "";
	uint64_t total = 0;
	size_t i;

	for (i = 0; i < METRICS_BOUNDS; i++) {
		total += t->count[i];
		buf_addf(b, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, labels, sep, bounds_le[i],
			 (unsigned long long)total);
	}
	total += t->count[METRICS_BOUNDS];
	buf_addf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
		 (unsigned long long)total);
	buf_addf(b, "%s_sum%s%s%s %llu.%06llu\n", name, labels[0] ? "{" : "", labels,
		 labels[0] ? "}" : "", (unsigned long long)(t->sum_us / 1000000),
		 (unsigned long long)(t->sum_us % 1000000));
	buf_addf(b, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels,
		 labels[0] ? "}" : "", (unsigned long long)total);
}
