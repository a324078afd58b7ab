/*
 * hashcache.h: SHA-256 of vault files, remembered by what stat says.
 *
 * The sync API's manifest and the sync client both need the SHA-256 of
 * every file, and both must not read 10,000 files again after one edit.
 * An entry holds a file's hash with its size, mtime, ctime and inode (all
 * to the nanosecond); a file whose stat still matches is not read again.
 * ctime cannot be set from user space, so a rewrite in place that keeps
 * size and mtime is still seen.
 *
 * Racy entries (git's "racily clean" problem): a file changed again within
 * the file system's timestamp tick after it was hashed keeps the same
 * stat. So an entry is trusted only when the file's ctime is more than
 * HASH_CACHE_RACY_NS older than the moment hashing began; a younger one
 * is hashed again next time (a file just written is read twice, once).
 *
 * Ownership: the cache owns its entries and copies every path it is
 * given. All functions are thread-safe (one mutex, never held while a
 * file is read).
 */
#ifndef QUIRE_HASHCACHE_H
#define QUIRE_HASHCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "util/hash.h"
#include "vault/vault.h"

#define HASH_CACHE_RACY_NS (50LL * 1000 * 1000)

struct hash_cache;

struct hash_cache *hash_cache_new(void);
/* Accepts NULL. */
void hash_cache_free(struct hash_cache *c);

/*
 * Adds the entries saved in file. A missing file is an empty cache (0);
 * unreadable files return -1 (logged); lines that do not parse are
 * skipped, so a damaged file costs hashing, never a wrong hash.
 */
int hash_cache_load(struct hash_cache *c, const char *file);

/*
 * Writes every entry to file, atomically: a temporary file beside it
 * (name starting with '.'), fsync, rename. 0 or -1 (logged).
 */
int hash_cache_save(struct hash_cache *c, const char *file);

/*
 * The hash of the file path (any key; vault-relative NFC by convention)
 * at dirfd/disk (disk relative to dirfd, or absolute): from the cache when
 * its stat matches a trusted entry, else read and hashed now (and
 * remembered). *st (if not NULL) gets the file's stat. Returns 1 when the
 * file was read, 0 when the cache answered, -1 when it cannot be read
 * (errno set; the entry is dropped).
 */
int hash_cache_file(struct hash_cache *c, int dirfd, const char *disk, const char *path,
		    char sha[SHA256_HEX_SIZE], struct stat *st);

/*
 * Remembers that the file path, whose stat is st, hashes to sha (for a
 * file just written with known bytes). hashed_ns is when its bytes were
 * known (CLOCK_REALTIME); pass the time after the write.
 */
void hash_cache_put(struct hash_cache *c, const char *path, const struct stat *st,
		    const char *sha, int64_t hashed_ns);

void hash_cache_remove(struct hash_cache *c, const char *path);

/*
 * Sweeping: hash_cache_mark() starts a pass and returns its number;
 * entries looked up or stored from then on are marked with it, and
 * hash_cache_sweep() drops the others (files that are gone). Returns the
 * number dropped.
 */
uint64_t hash_cache_mark(struct hash_cache *c);
size_t hash_cache_sweep(struct hash_cache *c, uint64_t pass);

/* Whether anything changed since the last save. */
int hash_cache_dirty(struct hash_cache *c);

/* CLOCK_REALTIME in nanoseconds: the clock file timestamps use. */
int64_t hash_cache_now_ns(void);

/*
 * Hashes every file of scan (paths relative to dirfd) through the cache,
 * on one thread per core: sha[i] gets file i's SHA-256 and ok[i] whether
 * it could be read (a file gone since the scan is not), and the file's
 * size goes into scan->files[i].size. Returns how many files were hashed
 * anew rather than found in the cache.
 */
size_t hash_cache_scan(struct hash_cache *c, int dirfd, struct vault_scan *scan,
		       char (*sha)[SHA256_HEX_SIZE], char *ok);

#endif
