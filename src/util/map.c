/*
 * map.c: open addressing with linear probing, tombstones, and growth at
 * 70% load (counting tombstones, so a churned table is rebuilt).
 */
#include "util/map.h"
#include "util/hash.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static const char tombstone[1];

static uint64_t key_hash(const char *key, size_t len)
{
	uint64_t h = hash64(key, len);
	return h ? h : 1;
}

void map_release(struct map *m)
{
	if (!m)
		return;
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

static struct map_slot *find(const struct map *m, uint64_t h, const char *key, size_t keylen)
{
	size_t mask, i;

	if (!m->cap)
		return NULL;
	mask = m->cap - 1;
	for (i = h & mask;; i = (i + 1) & mask) {
		struct map_slot *s = &m->slots[i];
		if (!s->hash)
			return NULL;
		if (s->hash == h && s->key != tombstone && s->keylen == keylen &&
		    memcmp(s->key, key, keylen) == 0)
			return s;
	}
}

void *map_get(const struct map *m, const char *key, size_t keylen)
{
	struct map_slot *s = find(m, key_hash(key, keylen), key, keylen);
	return s ? s->value : NULL;
}

static void insert_fresh(struct map *m, const struct map_slot *src)
{
	size_t mask = m->cap - 1, i;

	for (i = src->hash & mask; m->slots[i].hash; i = (i + 1) & mask)
		;
	m->slots[i] = *src;
}

static void resize(struct map *m, size_t cap)
{
	struct map_slot *old = m->slots;
	size_t oldcap = m->cap, i;

	m->slots = xcalloc(cap, sizeof(*m->slots));
	m->cap = cap;
	m->used = m->len;
	for (i = 0; i < oldcap; i++)
		if (old[i].hash && old[i].key != tombstone)
			insert_fresh(m, &old[i]);
	free(old);
}

void *map_put(struct map *m, const char *key, size_t keylen, void *value)
{
	uint64_t h = key_hash(key, keylen);
	struct map_slot *s = find(m, h, key, keylen), fresh;
	void *old;

	if (s) {
		old = s->value;
		s->key = key;
		s->value = value;
		return old;
	}
	if ((m->used + 1) * 10 >= m->cap * 7) {
		size_t cap = m->cap ? m->cap : 16;
		while ((m->len + 1) * 10 >= cap * 5)
			cap *= 2;
		resize(m, cap);
	}
	fresh.hash = h;
	fresh.key = key;
	fresh.keylen = keylen;
	fresh.value = value;
	insert_fresh(m, &fresh);
	m->len++;
	m->used++;
	return NULL;
}

void *map_remove(struct map *m, const char *key, size_t keylen)
{
	struct map_slot *s = find(m, key_hash(key, keylen), key, keylen);
	void *old;

	if (!s)
		return NULL;
	old = s->value;
	s->key = tombstone;
	s->keylen = 0;
	s->value = NULL;
	m->len--;
	return old;
}

void map_copy(struct map *dst, const struct map *src)
{
	dst->cap = src->cap;
	dst->len = src->len;
	dst->used = src->used;
	dst->slots = src->cap ? xmemdup(src->slots, src->cap * sizeof(*src->slots)) : NULL;
}

int map_next(const struct map *m, size_t *i, const char **key, size_t *keylen, void **value)
{
	while (*i < m->cap) {
		const struct map_slot *s = &m->slots[(*i)++];
		if (s->hash && s->key != tombstone) {
			if (key)
				*key = s->key;
			if (keylen)
				*keylen = s->keylen;
			if (value)
				*value = s->value;
			return 1;
		}
	}
	return 0;
}
