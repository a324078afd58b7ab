/*
 * hash.h: content hashes.
 *
 * Two kinds, for two jobs. ETags and hash tables want speed: XXH3 (64 bit)
 * hashes at memory speed, and a strong ETag only has to change when the
 * bytes do. The sync API's manifest wants a hash that clients can compute
 * with anything and trust against tampering: SHA-256 from OpenSSL's
 * libcrypto. Only this module includes xxhash.h and openssl/.
 */
#ifndef QUIRE_HASH_H
#define QUIRE_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash64(const void *data, size_t len);
/* hash64 under a seed: the hash of a pair without joining it in memory first. */
uint64_t hash64_seeded(const void *data, size_t len, uint64_t seed);

/* A strong ETag: '"' + 16 lowercase hex digits + '"' + NUL. */
#define ETAG_SIZE 19
void hash_etag(const void *data, size_t len, char out[ETAG_SIZE]);

/* 16 lowercase hex digits + NUL: content-hashed asset names. */
void hash_hex16(const void *data, size_t len, char out[17]);

/* SHA-256 as 64 lowercase hex digits + NUL. */
#define SHA256_HEX_SIZE 65
void hash_sha256_hex(const void *data, size_t len, char out[SHA256_HEX_SIZE]);
/*
 * SHA-256 (as hash_sha256_hex()) of the whole file fd, read from its start
 * with pread() in pieces of HASH_PIECE bytes, so that a file of any size
 * costs one piece of memory; fd's offset is left as it was. 0 with the
 * number of bytes hashed in *len (unless NULL), or -1 with errno set.
 */
#define HASH_PIECE (128 * 1024)
int hash_sha256_fd(int fd, char out[SHA256_HEX_SIZE], unsigned long long *len);

/*
 * SHA-256 of bytes that arrive in pieces (an upload as it is spooled):
 * hash_sha256_begin() (NULL only when libcrypto cannot allocate), any
 * number of hash_sha256_add(), then hash_sha256_end(), which frees it.
 */
struct hash_sha256;
struct hash_sha256 *hash_sha256_begin(void);
void hash_sha256_add(struct hash_sha256 *h, const void *data, size_t len);
/* Writes the hex digest into out unless it is NULL (an upload dropped), and frees h. */
void hash_sha256_end(struct hash_sha256 *h, char out[SHA256_HEX_SIZE]);

/* SHA-256 in base64 (44 characters + NUL), as a Content-Security-Policy hash source wants it. */
#define SHA256_B64_SIZE 45
void hash_sha256_base64(const void *data, size_t len, char out[SHA256_B64_SIZE]);

#endif
