/* clock.c: see clock.h. */
#include "util/clock.h"

#include <time.h>

double clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail with CLOCK_MONOTONIC */
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
