/*
 * test-oset.c: the ordered set against a sorted array, through random
 * adds and removes, with iteration checked after each step.
 */
#include "util/oset.h"
#include "lib/test.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static uint64_t rng = 42;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Items are the addresses of values[k]; ref[k] says whether k is in the set. */
static void check_order(struct oset *s, const int *values, const int *ref, int n)
{
	struct oset_iter it = OSET_ITER_INIT;
	int *prev = NULL, *x, count = 0, k, want = 0;

	while ((x = oset_next(s, &it))) {
		if (prev && *prev >= *x) {
			test_current_failed = 1;
			fprintf(stderr, "  out of order: %d then %d\n", *prev, *x);
			return;
		}
		prev = x;
		count++;
	}
	for (k = 0; k < n; k++)
		want += ref[k];
	CHECK_INT(count, want);
	CHECK_INT(s->n, (size_t)want);
	(void)values;
}

static void test_random(void)
{
	enum { N = 2000 };
	int *values = xcalloc(N, sizeof(int)), *ref = xcalloc(N, sizeof(int));
	struct oset s = OSET_INIT(cmp_int);
	int k, step;

	for (k = 0; k < N; k++)
		values[k] = (int)(k * 7919 % N); /* distinct, in no order */
	for (step = 0; step < 20000; step++) {
		k = (int)(rnd() % N);
		if (ref[k]) {
			CHECK(oset_del(&s, &values[k]) == &values[k]);
			ref[k] = 0;
		} else {
			CHECK_INT(oset_add(&s, &values[k]), 0);
			ref[k] = 1;
		}
		if (step % 997 == 0)
			check_order(&s, values, ref, N);
	}
	check_order(&s, values, ref, N);
	/* an equal item is refused; a missing one is not found */
	for (k = 0; k < N && !ref[k]; k++)
		;
	if (k < N) {
		int twin = values[k];
		CHECK_INT(oset_add(&s, &twin), -1);
		CHECK(oset_del(&s, &twin) == &values[k]); /* found by order, returns the member */
		ref[k] = 0;
	}
	{
		int none = -5;
		CHECK(oset_del(&s, &none) == NULL);
	}
	check_order(&s, values, ref, N);
	oset_release(&s);
	CHECK_INT(s.n, 0);
	oset_release(NULL);
	free(values);
	free(ref);
}

/* Items added in order (the worst case of a plain tree) still walk in order, and the first k are first. */
static void test_sorted_input(void)
{
	enum { N = 100000 };
	int *values = xcalloc(N, sizeof(int));
	struct oset s = OSET_INIT(cmp_int);
	struct oset_iter it = OSET_ITER_INIT;
	int k, *x;

	for (k = 0; k < N; k++) {
		values[k] = k;
		oset_add(&s, &values[k]);
	}
	for (k = 0; k < 50 && (x = oset_next(&s, &it)); k++)
		CHECK_INT(*x, k);
	for (k = 0; k < N; k += 2)
		oset_del(&s, &values[k]);
	it = (struct oset_iter)OSET_ITER_INIT;
	CHECK_INT(*(int *)oset_next(&s, &it), 1);
	CHECK_INT(s.n, N / 2);
	oset_release(&s);
	free(values);
}

/*
 * oset_seek() finds the first value not less than the key, and oset_next()
 * and oset_prev() walk on from it, against a sorted reference, through
 * random adds and removes.
 */
static void test_seek_prev(void)
{
	enum { N = 600 };
	int *values = xcalloc(N, sizeof(int)), *ref = xcalloc(N, sizeof(int));
	struct oset s = OSET_INIT(cmp_int);
	int k, step;

	for (k = 0; k < N; k++)
		values[k] = 2 * k; /* even: odd keys fall between */
	CHECK(oset_first(&s) == NULL);
	for (step = 0; step < 3000; step++) {
		struct oset_iter it;
		int key = (int)(rnd() % (2 * N + 2)) - 1, want, *x, back;

		k = (int)(rnd() % N);
		if (ref[k])
			oset_del(&s, &values[k]);
		else
			oset_add(&s, &values[k]);
		ref[k] = !ref[k];
		/* the first member >= key, the one after it and the one before */
		for (want = key < 0 ? 0 : (key + 1) / 2; want < N && !ref[want]; want++)
			;
		x = oset_seek(&s, &key, cmp_int, &it);
		if (want == N) {
			CHECK(x == NULL);
		} else {
			CHECK(x == &values[want]);
		}
		for (back = (want == N ? N : want) - 1; back >= 0 && !ref[back]; back--)
			;
		x = oset_prev(&s, &it);
		CHECK(back < 0 ? x == NULL : x == &values[back]);
		if (want < N) {
			int after;
			x = oset_seek(&s, &key, cmp_int, &it);
			for (after = want + 1; after < N && !ref[after]; after++)
				;
			x = oset_next(&s, &it);
			CHECK(after == N ? x == NULL : x == &values[after]);
			if (after < N) /* and back again */
				CHECK(oset_prev(&s, &it) == &values[want]);
		}
	}
	for (k = 0; k < N && !ref[k]; k++)
		;
	CHECK(k == N ? oset_first(&s) == NULL : oset_first(&s) == &values[k]);
	oset_release(&s);
	free(values);
	free(ref);
}

int main(void)
{
	RUN(test_random);
	RUN(test_seek_prev);
	RUN(test_sorted_input);
	return test_done();
}
