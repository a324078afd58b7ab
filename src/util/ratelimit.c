/*
 * ratelimit.c: token buckets in sharded LRU tables.
 *
 * How. 16 shards, chosen by a hash of the address; each has a mutex, a
 * pool of at most RATE_LIMITER_MAX / 16 entries (grown on demand), a
 * bucket array of chains, and a doubly linked recency list. A lookup
 * moves its entry to the front; a new address takes a fresh entry while
 * the pool has room, else the one at the back. Buckets refill lazily: an
 * entry stores its tokens and when it last took one, and each take adds
 * (now - last) * per_sec, up to burst.
 *
 * Rejected: a periodic sweep of idle entries (it needs a thread or a
 * caller to run it, and the table still grows without bound between
 * sweeps); one global mutex (every search request of every thread would
 * queue on it).
 */
#include "util/ratelimit.h"
#include "util/hash.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SHARDS 16
#define SHARD_MAX (RATE_LIMITER_MAX / SHARDS)
#define NBUCKETS (SHARD_MAX * 2)  /* a power of two */
#define NONE UINT32_MAX

struct entry {
	double tokens;
	double last;             /* when tokens was computed */
	uint32_t chain;          /* next entry in the bucket, or NONE */
	uint32_t newer, older;   /* neighbours in the recency list, or NONE */
	uint32_t hash;
	unsigned char keylen;
	char key[RATE_LIMITER_KEY_MAX + 1];
};

struct shard {
	pthread_mutex_t lock;
	struct entry *e;
	size_t n, alloc;
	uint32_t newest, oldest;
	uint32_t bucket[NBUCKETS];
};

struct rate_limiter {
	double per_sec, burst;
	struct shard shard[SHARDS];
};

struct rate_limiter *rate_limiter_new(double per_sec, double burst)
{
	struct rate_limiter *rl;
	int i;

	if (!(per_sec > 0) || !(burst >= 1))
		return NULL;
	rl = xcalloc(1, sizeof(*rl));
	rl->per_sec = per_sec;
	rl->burst = burst;
	for (i = 0; i < SHARDS; i++) {
		struct shard *sh = &rl->shard[i];
		pthread_mutex_init(&sh->lock, NULL);
		sh->newest = sh->oldest = NONE;
		memset(sh->bucket, 0xFF, sizeof(sh->bucket));
	}
	return rl;
}

void rate_limiter_free(struct rate_limiter *rl)
{
	int i;

	if (!rl)
		return;
	for (i = 0; i < SHARDS; i++) {
		pthread_mutex_destroy(&rl->shard[i].lock);
		free(rl->shard[i].e);
	}
	free(rl);
}

static void unlink_recency(struct shard *sh, uint32_t i)
{
	struct entry *e = &sh->e[i];

	if (e->newer != NONE)
		sh->e[e->newer].older = e->older;
	else
		sh->newest = e->older;
	if (e->older != NONE)
		sh->e[e->older].newer = e->newer;
	else
		sh->oldest = e->newer;
}

static void push_newest(struct shard *sh, uint32_t i)
{
	struct entry *e = &sh->e[i];

	e->newer = NONE;
	e->older = sh->newest;
	if (sh->newest != NONE)
		sh->e[sh->newest].newer = i;
	sh->newest = i;
	if (sh->oldest == NONE)
		sh->oldest = i;
}

static void unlink_chain(struct shard *sh, uint32_t i)
{
	uint32_t *p = &sh->bucket[sh->e[i].hash & (NBUCKETS - 1)];

	while (*p != NONE && *p != i)
		p = &sh->e[*p].chain;
	if (*p == i)
		*p = sh->e[i].chain;
}

/* The entry for key, made (full) when new. Under the shard's lock. */
static struct entry *lookup(struct rate_limiter *rl, struct shard *sh, const char *key, size_t n,
			    uint32_t h, double now)
{
	uint32_t *head = &sh->bucket[h & (NBUCKETS - 1)], i;
	struct entry *e;

	for (i = *head; i != NONE; i = sh->e[i].chain) {
		e = &sh->e[i];
		if (e->hash == h && e->keylen == n && memcmp(e->key, key, n) == 0) {
			if (sh->newest != i) {
				unlink_recency(sh, i);
				push_newest(sh, i);
			}
			return e;
		}
	}
	if (sh->n < SHARD_MAX) {
		ALLOC_GROW(sh->e, sh->n + 1, sh->alloc);
		i = (uint32_t)sh->n++;
	} else {
		i = sh->oldest; /* evict the least recently seen */
		unlink_recency(sh, i);
		unlink_chain(sh, i);
	}
	e = &sh->e[i];
	e->tokens = rl->burst;
	e->last = now;
	e->hash = h;
	e->keylen = (unsigned char)n;
	memcpy(e->key, key, n);
	e->key[n] = '\0';
	e->chain = *head;
	*head = i;
	push_newest(sh, i);
	return e;
}

int rate_limiter_take(struct rate_limiter *rl, const char *addr, double now, double *retry_after)
{
	size_t n = strnlen(addr, RATE_LIMITER_KEY_MAX);
	uint32_t h = (uint32_t)hash64(addr, n);
	struct shard *sh = &rl->shard[(h >> 16) % SHARDS];
	struct entry *e;
	double wait = 0;
	int ok;

	pthread_mutex_lock(&sh->lock);
	e = lookup(rl, sh, addr, n, h, now);
	if (now > e->last) { /* a clock that goes back refills nothing */
		e->tokens += (now - e->last) * rl->per_sec;
		if (e->tokens > rl->burst)
			e->tokens = rl->burst;
		e->last = now;
	}
	ok = e->tokens >= 1;
	if (ok)
		e->tokens -= 1;
	else
		wait = (1 - e->tokens) / rl->per_sec;
	pthread_mutex_unlock(&sh->lock);
	if (retry_after)
		*retry_after = wait;
	return ok;
}

size_t rate_limiter_size(struct rate_limiter *rl)
{
	size_t total = 0;
	int i;

	for (i = 0; i < SHARDS; i++) {
		pthread_mutex_lock(&rl->shard[i].lock);
		total += rl->shard[i].n;
		pthread_mutex_unlock(&rl->shard[i].lock);
	}
	return total;
}
