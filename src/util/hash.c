/*
 * hash.c: XXH3 for ETags and tables, SHA-256 for the sync manifest.
 */
#include "util/hash.h"

#include "util/xalloc.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <xxhash.h>

uint64_t hash64(const void *data, size_t len)
{
	return XXH3_64bits(data, len);
}

uint64_t hash64_seeded(const void *data, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed(data, len, seed);
}

void hash_hex16(const void *data, size_t len, char out[17])
{
	snprintf(out, 17, "%016llx", (unsigned long long)XXH3_64bits(data, len));
}

void hash_etag(const void *data, size_t len, char out[ETAG_SIZE])
{
	snprintf(out, ETAG_SIZE, "\"%016llx\"", (unsigned long long)XXH3_64bits(data, len));
}

void hash_sha256_base64(const void *data, size_t len, char out[SHA256_B64_SIZE])
{
	unsigned char md[32];
	unsigned int n = 0;

	if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) || n != 32)
		abort(); /* only fails when libcrypto cannot allocate */
	if (EVP_EncodeBlock((unsigned char *)out, md, 32) != 44)
		abort();
}

static void sha256_to_hex(const unsigned char md[32], char out[SHA256_HEX_SIZE])
{
	static const char hex[] = "0123456789abcdef";
	unsigned int i;

	for (i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

void hash_sha256_hex(const void *data, size_t len, char out[SHA256_HEX_SIZE])
{
	unsigned char md[32];
	unsigned int n = 0;

	if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) || n != 32)
		abort(); /* only fails when libcrypto cannot allocate */
	sha256_to_hex(md, out);
}

struct hash_sha256 *hash_sha256_begin(void)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (ctx && !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(ctx);
		ctx = NULL;
	}
	return (struct hash_sha256 *)ctx;
}

void hash_sha256_add(struct hash_sha256 *h, const void *data, size_t len)
{
	if (!EVP_DigestUpdate((EVP_MD_CTX *)h, data, len))
		abort(); /* only fails when libcrypto cannot allocate */
}

void hash_sha256_end(struct hash_sha256 *h, char out[SHA256_HEX_SIZE])
{
	unsigned char md[32];
	unsigned int n = 0;

	if (!h)
		return;
	if (out) {
		if (!EVP_DigestFinal_ex((EVP_MD_CTX *)h, md, &n) || n != 32)
			abort();
		sha256_to_hex(md, out);
	}
	EVP_MD_CTX_free((EVP_MD_CTX *)h);
}

/*
 * Hashing a file in pieces: libcrypto's incremental digest (EVP_DigestInit,
 * Update, Final) over pread() pieces, which leave the offset alone.
 * Rejected: mmap (a file truncated meanwhile raises SIGBUS); reading the
 * file whole (a 1 GB upload would cost 1 GB of memory).
 */
int hash_sha256_fd(int fd, char out[SHA256_HEX_SIZE], unsigned long long *len)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char md[32];
	unsigned int n = 0;
	unsigned long long off = 0;
	char *piece = xmalloc(HASH_PIECE);
	int ret = -1, saved;

	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
		abort(); /* only fails when libcrypto cannot allocate */
	for (;;) {
		ssize_t got = pread(fd, piece, HASH_PIECE, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			goto out;
		if (got == 0)
			break;
		if (!EVP_DigestUpdate(ctx, piece, (size_t)got))
			abort();
		off += (unsigned long long)got;
	}
	if (!EVP_DigestFinal_ex(ctx, md, &n) || n != 32)
		abort();
	sha256_to_hex(md, out);
	if (len)
		*len = off;
	ret = 0;
out:
	saved = errno;
	EVP_MD_CTX_free(ctx);
	free(piece);
	errno = saved;
	return ret;
}
