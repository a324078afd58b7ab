/*
 * gzip.c: zlib deflate with a gzip wrapper, deterministic output.
 */
#include "gzip.h"
#include "log.h"

#include <stdint.h>
#include <zlib.h>

int gzip_compress(const void *data, size_t len, int level, struct buf *out)
{
	z_stream zs = { 0 };
	int rc;

	/* 15 + 16: gzip wrapper with a zeroed header (no name, no mtime) */
	if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return log_error("gzip: deflateInit2 failed");
	buf_reset(out);
	/*
	 * Pages deflate to 30% of their size on average: reserving zlib's
	 * bound (about len) would leave a hole of most of it beside each
	 * page kept, once fitted. Start at a third and grow by a quarter
	 * (three pages in ten need it), then fit.
	 */
	buf_grow(out, len / 3 + 64);
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)len;
	for (;;) {
		zs.next_out = (Bytef *)out->ptr + zs.total_out;
		zs.avail_out = (uInt)(out->cap - 1 - zs.total_out);
		rc = deflate(&zs, Z_FINISH);
		if (rc == Z_STREAM_END)
			break;
		if (rc != Z_OK && rc != Z_BUF_ERROR) {
			deflateEnd(&zs);
			return log_error("gzip: deflate failed (%d)", rc);
		}
		buf_setlen(out, zs.total_out);
		buf_grow(out, len / 4 + 64);
	}
	buf_setlen(out, zs.total_out);
	deflateEnd(&zs);
	buf_fit(out);
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
