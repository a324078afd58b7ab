/* clock.c: see clock.h. */
#include "util/clock.h"

#include <time.h>

double clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail with CLOCK_MONOTONIC */
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

struct timespec clock_deadline(long ms)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	if (ms < 0)
		ms = 0;
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}
