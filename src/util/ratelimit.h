/*
 * ratelimit.h: a token bucket per client address, for /api/search.
 *
 * Each address has a bucket of at most burst tokens that refills at
 * per_sec tokens a second; a request takes one token or is refused with
 * the seconds until one is back (for Retry-After). Callers pass the time,
 * so the limiter has no clock of its own and tests are deterministic.
 *
 * Memory is bounded: at most RATE_LIMITER_MAX addresses are tracked, and a
 * new one evicts the least recently seen. An evicted address starts again
 * with a full bucket, which only matters when more than RATE_LIMITER_MAX
 * addresses are active at once. Thread-safe: addresses are spread over
 * shards with a mutex each, held for one lookup.
 */
#ifndef QUIRE_RATELIMIT_H
#define QUIRE_RATELIMIT_H

#include <stddef.h>

/* The most addresses remembered at once. */
#define RATE_LIMITER_MAX 65536
/* Addresses are compared on at most this many bytes (an IPv6 text form is at most 45). */
#define RATE_LIMITER_KEY_MAX 63

struct rate_limiter;

/*
 * A limiter allowing burst requests at once and per_sec a second after.
 * NULL when per_sec is not positive or burst is below 1. Free it with
 * rate_limiter_free().
 */
struct rate_limiter *rate_limiter_new(double per_sec, double burst);
/* Accepts NULL. */
void rate_limiter_free(struct rate_limiter *rl);

/*
 * Takes a token for addr (a NUL-terminated string, borrowed) at time now
 * (seconds, any fixed origin, e.g. CLOCK_MONOTONIC). Returns 1 when the
 * request may go on, 0 when it is limited; then *retry_after (if not
 * NULL) gets the seconds until a token is back, else 0.
 */
int rate_limiter_take(struct rate_limiter *rl, const char *addr, double now, double *retry_after);

/* The number of addresses tracked now. */
size_t rate_limiter_size(struct rate_limiter *rl);

#endif
