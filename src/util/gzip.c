/*
 * gzip.c: gzip members with a zeroed header (no name, no mtime), so equal
 * input gives equal bytes; and inflating them back.
 */
#include "util/gzip.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <libdeflate.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/*
 * Compression is libdeflate's: whole buffers, which is what pages are,
 * two to three times faster than zlib at the same level, and a little
 * smaller (bench/README.md: the page render cost is mostly this). Each
 * thread keeps its compressors (one per level used) and a scratch buffer
 * of the worst-case size; the result is copied out to fit, so a kept page
 * carries no spare capacity.
 */
struct gz_thread {
	struct libdeflate_compressor *c[13];
	struct libdeflate_decompressor *d;
	struct buf scratch;
};

static pthread_key_t gz_key;
static pthread_once_t gz_once = PTHREAD_ONCE_INIT;

static void gz_thread_free(void *arg)
{
	struct gz_thread *t = arg;
	size_t i;

	for (i = 0; i < sizeof(t->c) / sizeof(t->c[0]); i++)
		libdeflate_free_compressor(t->c[i]);
	libdeflate_free_decompressor(t->d);
	buf_release(&t->scratch);
	free(t);
}

static void gz_init(void)
{
	pthread_key_create(&gz_key, gz_thread_free);
}

static struct gz_thread *gz_thread(void)
{
	struct gz_thread *t;

	pthread_once(&gz_once, gz_init);
	t = pthread_getspecific(gz_key);
	if (!t) {
		t = xcalloc(1, sizeof(*t));
		pthread_setspecific(gz_key, t);
	}
	return t;
}

/* Compresses into the thread's scratch buffer: the member's size, or 0 with a log line. */
static size_t compress_scratch(struct gz_thread *t, const void *data, size_t len, int level)
{
	size_t bound, n;

	if (level < 0 || level > 12)
		level = GZIP_LEVEL;
	if (!t->c[level] && !(t->c[level] = libdeflate_alloc_compressor(level)))
		return log_error("gzip: cannot make a compressor"), 0;
	bound = libdeflate_gzip_compress_bound(t->c[level], len);
	buf_reset(&t->scratch);
	buf_grow(&t->scratch, bound + 1);
	n = libdeflate_gzip_compress(t->c[level], data, len, t->scratch.ptr, bound);
	if (!n)
		log_error("gzip: compression failed");
	return n;
}

/* a scratch buffer grown for one huge page is not kept */
static void scratch_trim(struct gz_thread *t)
{
	if (t->scratch.cap > (1u << 22))
		buf_release(&t->scratch);
}

int gzip_compress(const void *data, size_t len, int level, struct buf *out)
{
	struct gz_thread *t = gz_thread();
	size_t n = compress_scratch(t, data, len, level);

	if (!n)
		return -1;
	buf_reset(out);
	buf_add(out, t->scratch.ptr, n);
	buf_fit(out);
	scratch_trim(t);
	return 0;
}

char *gzip_compress_lasting(const void *data, size_t len, int level, size_t *gz_len)
{
	struct gz_thread *t = gz_thread();
	size_t n = compress_scratch(t, data, len, level);
	char *gz;

	if (!n)
		return NULL;
	gz = xmalloc_lasting(n);
	memcpy(gz, t->scratch.ptr, n);
	*gz_len = n;
	scratch_trim(t);
	return gz;
}

int gzip_inflate_to(const void *data, size_t len, void *out, size_t out_len)
{
	struct gz_thread *t = gz_thread();
	size_t got = 0;

	if (!t->d && !(t->d = libdeflate_alloc_decompressor()))
		return log_error("gzip: cannot make a decompressor");
	if (libdeflate_gzip_decompress(t->d, data, len, out, out_len, &got) != LIBDEFLATE_SUCCESS ||
	    got != out_len)
		return log_error("gzip: corrupt data, or not %zu bytes", out_len);
	return 0;
}

int gzip_decompress(const void *data, size_t len, struct buf *out)
{
	z_stream zs = { 0 };
	int rc = Z_OK;

	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return log_error("gzip: inflateInit2 failed");
	buf_reset(out);
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)len;
	while (rc != Z_STREAM_END) {
		buf_grow(out, len * 2 + 4096);
		zs.next_out = (Bytef *)out->ptr + out->len;
		zs.avail_out = (uInt)(out->cap - 1 - out->len);
		rc = inflate(&zs, Z_NO_FLUSH);
		if (rc != Z_OK && rc != Z_STREAM_END) {
			inflateEnd(&zs);
			return log_error("gzip: corrupt data (%d)", rc);
		}
		buf_setlen(out, zs.total_out);
	}
	inflateEnd(&zs);
	return 0;
}
