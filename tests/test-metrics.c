/*
 * test-metrics.c: the histograms behind /metrics. A duration falls in the
 * first bucket whose bound holds it (le is inclusive); threads adding at
 * once lose no observation; the text is Prometheus's: cumulative buckets
 * in order, +Inf equal to _count, _sum in seconds, labels before le.
 * (promtool reads a live server's /metrics in tests/test-promtool.py.)
 */
#include "util/buf.h"
#include "util/metrics.h"
#include "lib/test.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void test_buckets(void)
{
	CHECK_INT(metrics_bucket(0), 0);
	CHECK_INT(metrics_bucket(100), 0);
	CHECK_INT(metrics_bucket(101), 1);
	CHECK_INT(metrics_bucket(250), 1);
	CHECK_INT(metrics_bucket(1000), 3);
	CHECK_INT(metrics_bucket(1000000), 12);
	CHECK_INT(metrics_bucket(30000000), METRICS_BOUNDS - 1);
	CHECK_INT(metrics_bucket(30000001), METRICS_BOUNDS);
	CHECK_INT(metrics_bucket(UINT64_MAX), METRICS_BOUNDS);
}

static struct metrics_histogram shared;

static void *observer(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 100000; i++)
		metrics_observe(&shared, (uint64_t)(i % 7) * 100);
	return NULL;
}

/* Four threads add 100,000 each: every one is counted, and summed. */
static void test_threads(void)
{
	struct metrics_totals t;
	pthread_t th[4];
	uint64_t n = 0;
	int i;

	for (i = 0; i < 4; i++)
		CHECK(pthread_create(&th[i], NULL, observer, NULL) == 0);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	memset(&t, 0, sizeof(t));
	metrics_read(&shared, &t);
	for (i = 0; i <= METRICS_BOUNDS; i++)
		n += t.count[i];
	CHECK(n == 400000);
	/* i % 7 of 0..99999: 0..6 hundred µs, 14,286 of 0..4 and 14,285 of 5 and 6, four times */
	CHECK(t.sum_us == 4ull * 100 * (14286ull * (0 + 1 + 2 + 3 + 4) + 14285ull * (5 + 6)));
	CHECK(t.count[0] == 4ull * (14286 + 14286));         /* 0 and 100 µs */
	CHECK(t.count[1] == 4ull * 14286);                   /* 200 */
	CHECK(t.count[2] == 4ull * (14286 + 14286 + 14285)); /* 300, 400, 500 */
	CHECK(t.count[3] == 4ull * 14285);                   /* 600 */
}

/* The text of one histogram, read back line by line. */
static void test_text(void)
{
	struct metrics_histogram h;
	struct metrics_totals t;
	struct buf b = BUF_INIT;
	char *line, *save = NULL;
	uint64_t last = 0;
	int buckets = 0;

	memset(&h, 0, sizeof(h));
	metrics_observe_owned(&h, 50);       /* 100 µs bucket */
	metrics_observe_owned(&h, 300);      /* 500 µs */
	metrics_observe_owned(&h, 2000000);  /* 2.5 s */
	metrics_observe_owned(&h, 90000000); /* +Inf */
	memset(&t, 0, sizeof(t));
	metrics_read(&h, &t);
	metrics_family(&b, "x_seconds", "histogram", "A test.");
	metrics_write_histogram(&b, "x_seconds", "kind=\"page\"", &t);
	CHECK(strncmp(b.ptr, "# HELP x_seconds A test.\n# TYPE x_seconds histogram\n", 51) == 0);
	CHECK(strstr(b.ptr, "x_seconds_bucket{kind=\"page\",le=\"0.0001\"} 1\n"));
	CHECK(strstr(b.ptr, "x_seconds_bucket{kind=\"page\",le=\"0.00025\"} 1\n"));
	CHECK(strstr(b.ptr, "x_seconds_bucket{kind=\"page\",le=\"0.0005\"} 2\n"));
	CHECK(strstr(b.ptr, "x_seconds_bucket{kind=\"page\",le=\"2.5\"} 3\n"));
	CHECK(strstr(b.ptr, "x_seconds_bucket{kind=\"page\",le=\"30\"} 3\n"));
	CHECK(strstr(b.ptr, "x_seconds_bucket{kind=\"page\",le=\"+Inf\"} 4\n"));
	CHECK(strstr(b.ptr, "\nx_seconds_sum{kind=\"page\"} 92.000350\n"));
	CHECK(strstr(b.ptr, "\nx_seconds_count{kind=\"page\"} 4\n"));
	/* cumulative: never down, one line per bound and +Inf */
	for (line = strtok_r(b.ptr, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *sp = strrchr(line, ' ');
		if (strncmp(line, "x_seconds_bucket{", 17) != 0)
			continue;
		buckets++;
		CHECK(strtoull(sp + 1, NULL, 10) >= last);
		last = strtoull(sp + 1, NULL, 10);
	}
	CHECK_INT(buckets, METRICS_BOUNDS + 1);
	/* without labels */
	buf_reset(&b);
	metrics_write_histogram(&b, "y_seconds", "", &t);
	CHECK(strncmp(b.ptr, "y_seconds_bucket{le=\"0.0001\"} 1\n", 32) == 0);
	CHECK(strstr(b.ptr, "\ny_seconds_sum 92.000350\ny_seconds_count 4\n"));
	buf_release(&b);
}

int main(void)
{
	RUN(test_buckets);
	RUN(test_threads);
	RUN(test_text);
	return test_done();
}
