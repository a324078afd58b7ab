/*
 * gzip.h: gzip bytes for pages, computed once at load.
 *
 * The only module that includes zlib and libdeflate.
 */
#ifndef QUIRE_GZIP_H
#define QUIRE_GZIP_H

#include <stddef.h>

#include "util/buf.h"

/* Note pages: 6, the knee of size against time (libdeflate levels run 0 to 12). */
#define GZIP_LEVEL 6

/*
 * Generated pages (listings, explorer documents, feeds, sitemaps): written
 * again whenever a note they list changes, so their compression is on the
 * path of every create, rename and retitle. Their markup repeats per item:
 * level 1 comes within 5% of level 6's size (0.194 of the input against
 * 0.184 on the tag pages of a 10,000-note vault) in 37% of the time
 * (0.18 ms against 0.49 for 40 KB). nginx's gzip_comp_level defaults to 1.
 */
#define GZIP_FAST 1

/*
 * Replaces out's contents with the gzip member for data (no file name, no
 * mtime, so equal input gives equal bytes), leaving no spare capacity:
 * the bytes are kept. Returns 0, or -1 with a log line.
 */
int gzip_compress(const void *data, size_t len, int level, struct buf *out);

/*
 * The same member, in memory of the lasting arena (util/xalloc.h: freed
 * with xfree_lasting()), for bytes a page keeps. Sets *gz_len; NULL with a
 * log line on failure.
 */
char *gzip_compress_lasting(const void *data, size_t len, int level, size_t *gz_len);

/*
 * Inflates a gzip member whose inflated size is known (out_len bytes,
 * exactly) into out. 0, or -1 with a log line.
 */
int gzip_inflate_to(const void *data, size_t len, void *out, size_t out_len);

/* Inflates a gzip member into out (for tests and the export check). 0 or -1. */
int gzip_decompress(const void *data, size_t len, struct buf *out);

#endif
