/*
 * clock.h: the one clock quire measures with.
 *
 * CLOCK_MONOTONIC in milliseconds, as a double: fine enough for the
 * sub-millisecond phases the loader logs, and never stepped by NTP.
 */
#ifndef QUIRE_CLOCK_H
#define QUIRE_CLOCK_H

#include <time.h>

/* Milliseconds since an arbitrary fixed point (boot). */
double clock_ms(void);

/*
 * The moment ms milliseconds from now on CLOCK_REALTIME, the clock
 * pthread_cond_timedwait() counts in: the deadline of a timed wait (now,
 * for ms < 0).
 */
struct timespec clock_deadline(long ms);

#endif
