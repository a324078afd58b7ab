/*
 * map.h: a hash table from byte-string keys to pointers.
 *
 * Open addressing with linear probing and a stored 64-bit hash per slot,
 * so a miss rarely touches a key. Keys are borrowed: the caller keeps each
 * key alive as long as its entry (snapshot pages use their own path as the
 * key). Copying a map copies its slot array and nothing else: a snapshot's
 * table is 256 such maps that snapshots share, and copy one at a time
 * when a page in it changes (snapshot.h, "Sharing").
 */
#ifndef QUIRE_MAP_H
#define QUIRE_MAP_H

#include <stddef.h>
#include <stdint.h>

struct map_slot {
	uint64_t hash;    /* 0 marks an empty slot (real hashes are forced non-zero) */
	const char *key;
	size_t keylen;
	void *value;
};

struct map {
	struct map_slot *slots;
	size_t cap;       /* a power of two, or 0 */
	size_t len;       /* live entries */
	size_t used;      /* live entries + tombstones */
};
#define MAP_INIT { NULL, 0, 0, 0 }

/* Frees the slot array (not keys or values) and leaves m as MAP_INIT. Accepts NULL. */
void map_release(struct map *m);

/* Returns the value for key, or NULL. */
void *map_get(const struct map *m, const char *key, size_t keylen);
static inline void *map_gets(const struct map *m, const char *key);

/*
 * Sets key to value (value must not be NULL). Returns the previous value
 * or NULL; the caller releases it. The key pointer of an existing entry is
 * replaced by this one.
 */
void *map_put(struct map *m, const char *key, size_t keylen, void *value);

/* Removes key; returns its value or NULL. */
void *map_remove(struct map *m, const char *key, size_t keylen);

/* Makes dst (MAP_INIT) a copy of src: same keys, same value pointers. */
void map_copy(struct map *dst, const struct map *src);

/*
 * Iteration: size_t i = 0; while (map_next(m, &i, &key, &keylen, &value)) ...
 * Order is the slot order: stable for a given map, but not sorted.
 * Removing the current entry during iteration is allowed.
 */
int map_next(const struct map *m, size_t *i, const char **key, size_t *keylen, void **value);

#include <string.h>
static inline void *map_gets(const struct map *m, const char *key)
{
	return map_get(m, key, strlen(key));
}

#endif
