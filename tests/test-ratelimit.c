/*
 * test-ratelimit.c: token buckets with the time passed in: a burst then
 * refusals, refilling over time, separate addresses, a clock that goes
 * back, memory bounded under many addresses, and threads sharing one
 * address never taking more tokens than there are.
 */
#include "util/ratelimit.h"
#include "lib/test.h"

#include <pthread.h>
#include <stdio.h>

static int near(double a, double b)
{
	return a - b < 1e-9 && b - a < 1e-9;
}

static void test_bad_parameters(void)
{
	CHECK(rate_limiter_new(0, 5) == NULL);
	CHECK(rate_limiter_new(-1, 5) == NULL);
	CHECK(rate_limiter_new(1, 0.5) == NULL);
	rate_limiter_free(NULL);
}

static void test_burst_then_limited(void)
{
	struct rate_limiter *rl = rate_limiter_new(2, 5);
	double retry = -1;
	int i;

	for (i = 0; i < 5; i++) {
		CHECK_INT(rate_limiter_take(rl, "192.0.2.1", 100.0, &retry), 1);
		CHECK(near(retry, 0));
	}
	CHECK_INT(rate_limiter_take(rl, "192.0.2.1", 100.0, &retry), 0);
	CHECK(near(retry, 0.5)); /* one token at 2 a second */
	CHECK_INT(rate_limiter_take(rl, "192.0.2.1", 100.0, NULL), 0);
	/* another address has its own bucket */
	CHECK_INT(rate_limiter_take(rl, "2001:db8::1", 100.0, &retry), 1);
	CHECK_INT(rate_limiter_size(rl), 2);
	rate_limiter_free(rl);
}

static void test_refill(void)
{
	struct rate_limiter *rl = rate_limiter_new(1, 3);
	double retry = -1;
	int i, allowed = 0;

	for (i = 0; i < 3; i++)
		CHECK_INT(rate_limiter_take(rl, "a", 0.0, NULL), 1);
	CHECK_INT(rate_limiter_take(rl, "a", 0.0, &retry), 0);
	CHECK(near(retry, 1.0));
	CHECK_INT(rate_limiter_take(rl, "a", 0.5, &retry), 0);
	CHECK(near(retry, 0.5));
	CHECK_INT(rate_limiter_take(rl, "a", 1.0, &retry), 1);
	CHECK_INT(rate_limiter_take(rl, "a", 1.0, &retry), 0);
	CHECK(near(retry, 1.0));
	/* a long pause refills up to the burst, no more */
	for (i = 0; i < 10; i++)
		allowed += rate_limiter_take(rl, "a", 1000.0, NULL);
	CHECK_INT(allowed, 3);
	/* a steady 1 a second is always allowed */
	for (i = 1; i <= 20; i++)
		CHECK_INT(rate_limiter_take(rl, "a", 1000.0 + i, NULL), 1);
	rate_limiter_free(rl);
}

static void test_clock_going_back(void)
{
	struct rate_limiter *rl = rate_limiter_new(1, 1);
	double retry;

	CHECK_INT(rate_limiter_take(rl, "b", 50.0, NULL), 1);
	CHECK_INT(rate_limiter_take(rl, "b", 10.0, &retry), 0); /* earlier: nothing refilled */
	CHECK(retry > 0);
	CHECK_INT(rate_limiter_take(rl, "b", 50.5, NULL), 0);
	CHECK_INT(rate_limiter_take(rl, "b", 51.0, NULL), 1);
	rate_limiter_free(rl);
}

static void test_long_addresses(void)
{
	struct rate_limiter *rl = rate_limiter_new(1, 1);
	char a[200], b[200];

	memset(a, 'x', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memcpy(b, a, sizeof(b));
	b[150] = 'y'; /* differs beyond the bytes compared: the same bucket */
	CHECK_INT(rate_limiter_take(rl, a, 0, NULL), 1);
	CHECK_INT(rate_limiter_take(rl, b, 0, NULL), 0);
	CHECK_INT(rate_limiter_take(rl, "", 0, NULL), 1);
	rate_limiter_free(rl);
}

static void test_bounded(void)
{
	struct rate_limiter *rl = rate_limiter_new(1, 2);
	char addr[64];
	int i;

	CHECK_INT(rate_limiter_take(rl, "10.0.0.1", 0, NULL), 1);
	CHECK_INT(rate_limiter_take(rl, "10.0.0.1", 0, NULL), 1);
	CHECK_INT(rate_limiter_take(rl, "10.0.0.1", 0, NULL), 0);
	for (i = 0; i < 4 * RATE_LIMITER_MAX; i++) {
		snprintf(addr, sizeof(addr), "198.51.%d.%d", i / 256, i % 256);
		rate_limiter_take(rl, addr, 1.0 + i * 1e-6, NULL);
		if (i % 1024 == 0 && i > 0)
			CHECK(rate_limiter_size(rl) <= RATE_LIMITER_MAX);
	}
	CHECK(rate_limiter_size(rl) <= RATE_LIMITER_MAX);
	CHECK(rate_limiter_size(rl) > RATE_LIMITER_MAX / 2);
	/* the recent addresses are still limited... */
	CHECK_INT(rate_limiter_take(rl, addr, 1.0 + (i - 1) * 1e-6, NULL), 1);
	CHECK_INT(rate_limiter_take(rl, addr, 1.0 + (i - 1) * 1e-6, NULL), 0);
	/* ...the first one was evicted and starts again with a full bucket */
	CHECK_INT(rate_limiter_take(rl, "10.0.0.1", 2.0, NULL), 1);
	CHECK_INT(rate_limiter_take(rl, "10.0.0.1", 2.0, NULL), 1);
	CHECK_INT(rate_limiter_take(rl, "10.0.0.1", 2.0, NULL), 0);
	rate_limiter_free(rl);
}

struct job {
	struct rate_limiter *rl;
	int id;
	int allowed;
};

static void *hammer(void *arg)
{
	struct job *j = arg;
	char addr[32];
	int i;

	for (i = 0; i < 20000; i++) {
		/* everyone on one address at a frozen time, plus churn on private ones */
		j->allowed += rate_limiter_take(j->rl, "203.0.113.7", 5.0, NULL);
		snprintf(addr, sizeof(addr), "t%d-%d", j->id, i % 500);
		rate_limiter_take(j->rl, addr, 5.0 + i * 1e-3, NULL);
	}
	return NULL;
}

static void test_threads(void)
{
	struct rate_limiter *rl = rate_limiter_new(10, 100);
	struct job jobs[4];
	pthread_t t[4];
	int i, total = 0, started = 0;

	for (i = 0; i < 4; i++) {
		jobs[i].rl = rl;
		jobs[i].id = i;
		jobs[i].allowed = 0;
		if (pthread_create(&t[i], NULL, hammer, &jobs[i]) == 0)
			started++;
	}
	CHECK_INT(started, 4);
	for (i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		total += jobs[i].allowed;
	}
	CHECK_INT(total, 100); /* exactly the burst: no token taken twice */
	CHECK_INT(rate_limiter_size(rl), 1 + 4 * 500);
	rate_limiter_free(rl);
}

int main(void)
{
	RUN(test_bad_parameters);
	RUN(test_burst_then_limited);
	RUN(test_refill);
	RUN(test_clock_going_back);
	RUN(test_long_addresses);
	RUN(test_bounded);
	RUN(test_threads);
	return test_done();
}
