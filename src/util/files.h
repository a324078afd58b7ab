/*
 * files.h: whole files in, whole buffers out.
 *
 * The few ways quire reads and writes files outside the vault's walk: a
 * whole file into a buffer, a buffer onto a descriptor (short writes and
 * EINTR handled), a file onto another in pieces, a buffer as a new file.
 */
#ifndef QUIRE_FILES_H
#define QUIRE_FILES_H

#include <stddef.h>

#include "util/buf.h"

/*
 * Reads a whole file into out (replacing its contents). Returns 0, or -1
 * with errno set (nothing logged: the caller knows what the file was for).
 */
int read_file(const char *path, struct buf *out);

/*
 * read_file() of a file that may hold at most max bytes: a larger one
 * (by its size, stat first, or by what reading it finds, should it grow
 * meanwhile) fails with errno EFBIG, having read nothing or at most max + 1
 * bytes of it; *size (unless NULL) is then the size found, at least
 * max + 1.
 */
int read_file_max(const char *path, struct buf *out, size_t max, size_t *size);

/*
 * Appends what is left to read from fd to out, again after EINTR. Returns
 * 0 at the end of the file, or -1 with errno set.
 */
int read_fd(int fd, struct buf *out);

/*
 * Writes all len bytes to fd, again after short writes and EINTR. Returns
 * 0, or -1 with errno set (EIO when write() wrote nothing).
 */
int write_fd(int fd, const void *data, size_t len);

/*
 * Copies the whole file from (read from its start with pread(), in pieces
 * of 128 KiB: any size costs one piece of memory) to to's current offset,
 * again after short writes and EINTR. Returns 0, or -1 with errno set.
 */
int copy_fd(int from, int to);

/*
 * Creates or truncates path (mode 0644) and writes data to it, without
 * fsync. Returns 0, or -1 after logging what could not be written.
 */
int write_file(const char *path, const void *data, size_t len);

#endif
