/* files.c: see files.h. */
#include "util/files.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int read_file(const char *path, struct buf *out)
{
	return read_file_max(path, out, SIZE_MAX - 1, NULL);
}

int read_file_max(const char *path, struct buf *out, size_t max, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int saved;

	buf_reset(out);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		goto fail;
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		goto fail;
	}
	if ((uint64_t)st.st_size > max) {
		if (size)
			*size = (size_t)st.st_size;
		errno = EFBIG;
		goto fail;
	}
	buf_grow(out, (size_t)st.st_size);
	/* at most one byte more than max: a file that grew since is not read whole */
	while (out->len <= max) {
		size_t want = max + 1 - out->len;
		ssize_t n;

		buf_grow(out, want < 65536 ? want : 65536);
		n = read(fd, out->ptr + out->len, out->cap - out->len - 1 < want ?
			 out->cap - out->len - 1 : want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		buf_setlen(out, out->len + (size_t)n);
	}
	if (out->len > max) {
		if (size)
			*size = out->len;
		buf_reset(out);
		errno = EFBIG;
		goto fail;
	}
	close(fd);
	return 0;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

int read_fd(int fd, struct buf *out)
{
	for (;;) {
		ssize_t n;
		buf_grow(out, 65536);
		n = read(fd, out->ptr + out->len, out->cap - out->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		buf_setlen(out, out->len + (size_t)n);
	}
}

int write_fd(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int copy_fd(int from, int to)
{
	enum { PIECE = 128 * 1024 };
	char *piece = xmalloc(PIECE);
	off_t off = 0;
	int ret = -1, saved;

	for (;;) {
		ssize_t got = pread(from, piece, PIECE, off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			ret = got < 0 ? -1 : 0;
			break;
		}
		if (write_fd(to, piece, (size_t)got) < 0)
			break;
		off += got;
	}
	saved = errno;
	free(piece);
	errno = saved;
	return ret;
}

int write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return log_error("cannot write %s: %s", path, strerror(errno));
	if (write_fd(fd, data, len) < 0) {
		int saved = errno;
		close(fd);
		return log_error("cannot write %s: %s", path, strerror(saved));
	}
	if (close(fd) < 0)
		return log_error("cannot write %s: %s", path, strerror(errno));
	return 0;
}
