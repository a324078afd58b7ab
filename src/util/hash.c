/*
 * hash.c: XXH3 for ETags and tables, SHA-256 for the sync manifest.
 */
#include "util/hash.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
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

void hash_sha256_hex(const void *data, size_t len, char out[SHA256_HEX_SIZE])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[32];
	unsigned int n = 0, i;

	if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) || n != 32)
		abort(); /* only fails when libcrypto cannot allocate */
	for (i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}
