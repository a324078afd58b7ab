/*
 * dav-fs.c: the vault seen as WebDAV collections: what a path is, listing
 * a folder, making, removing, copying and renaming trees.
 *
 * Every folder is reached from the vault's descriptor one segment at a
 * time without following symlinks (syncapi_open_parent()); a symlink or
 * special file in the vault is as good as absent. Each change is made
 * durable before it returns (the folders it touched fsynced); files are
 * written through syncapi_put(), the sync API's durable write. The
 * caller holds the paths (syncapi_claim()) and tells the loader.
 */
#include "sync/syncapi.h"
#include "sync/syncapi-int.h"
#include "sync/dav.h"
#include "sync/dav-int.h"
#include "sync/hashcache.h"
#include "util/files.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int dav_path_under(const char *path, const char *root)
{
	size_t n = strlen(root);

	return !n || (strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/'));
}

/* Closes fd keeping errno: the call that failed before is what is reported. */
static void close_quietly(int fd)
{
	int saved = errno;

	if (fd >= 0)
		close(fd);
	errno = saved;
}

/* The folder of path (NULL: the vault) opened without following symlinks; -1 with errno. */
static int open_dir(struct syncapi *api, const char *path)
{
	const char *leaf;
	int parent, fd;

	if (!path[0])
		return openat(api->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	parent = syncapi_open_parent(api, path, 0, &leaf);
	if (parent < 0)
		return -1;
	fd = openat(parent, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close_quietly(parent);
	return fd;
}

enum dav_kind dav_fs_stat(struct syncapi *api, const char *path, struct stat *st)
{
	const char *leaf;
	int parent;
	enum dav_kind k = DAV_NONE;

	if (!path[0]) {
		if (fstat(api->root_fd, st) < 0)
			return DAV_NONE;
		return DAV_DIR;
	}
	parent = syncapi_open_parent(api, path, 0, &leaf);
	if (parent < 0)
		return DAV_NONE;
	if (fstatat(parent, leaf, st, AT_SYMLINK_NOFOLLOW) == 0)
		k = S_ISDIR(st->st_mode) ? DAV_DIR : S_ISREG(st->st_mode) ? DAV_FILE : DAV_NONE;
	close(parent);
	return k;
}

int dav_fs_parent_exists(struct syncapi *api, const char *path)
{
	const char *slash = strrchr(path, '/');
	struct stat st;
	char *parent;
	int ok;

	if (!slash)
		return 1;
	parent = xstrndup(path, (size_t)(slash - path));
	ok = dav_fs_stat(api, parent, &st) == DAV_DIR;
	free(parent);
	return ok;
}

int dav_fs_etag(struct syncapi *api, const char *path, struct buf *out)
{
	char sha[SHA256_HEX_SIZE];
	const char *leaf;
	struct stat st;
	int parent, rc = -1;

	if (!path[0])
		return -1;
	parent = syncapi_open_parent(api, path, 0, &leaf);
	if (parent < 0)
		return -1;
	if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    hash_cache_file(api->cache, parent, leaf, path, sha, &st) >= 0) {
		buf_reset(out);
		buf_addf(out, "\"%s\"", sha);
		rc = 0;
	}
	close(parent);
	return rc;
}

int dav_fs_read(struct syncapi *api, const char *path, struct buf *out)
{
	const char *leaf;
	int parent, fd, rc;

	parent = syncapi_open_parent(api, path, 0, &leaf);
	if (parent < 0)
		return -1;
	fd = openat(parent, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close_quietly(parent);
	if (fd < 0)
		return -1;
	buf_reset(out);
	rc = read_fd(fd, out);
	close_quietly(fd);
	return rc;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct dav_entry *)a)->path, ((const struct dav_entry *)b)->path);
}

size_t dav_fs_list(struct syncapi *api, const char *path, struct dav_entry **out,
		   int (*hidden)(void *ctx, const char *path), void *ctx)
{
	struct dav_entry *v = NULL;
	size_t n = 0, alloc = 0;
	struct buf child = BUF_INIT;
	struct dirent *de;
	DIR *d;
	int fd = open_dir(api, path);

	*out = NULL;
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d))) {
		struct stat st;
		enum dav_kind k;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		k = S_ISDIR(st.st_mode) ? DAV_DIR : S_ISREG(st.st_mode) ? DAV_FILE : DAV_NONE;
		if (k == DAV_NONE)
			continue;
		buf_reset(&child);
		if (path[0])
			buf_addf(&child, "%s/", path);
		buf_adds(&child, de->d_name);
		if (hidden(ctx, child.ptr))
			continue;
		ALLOC_GROW(v, n + 1, alloc);
		v[n].path = xstrdup(child.ptr);
		v[n].kind = k;
		v[n].st = st;
		n++;
	}
	closedir(d);
	buf_release(&child);
	if (n)
		qsort(v, n, sizeof(*v), by_path);
	*out = v;
	return n;
}

void dav_fs_list_free(struct dav_entry *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}

int dav_fs_mkdir(struct syncapi *api, const char *path)
{
	const char *leaf;
	int parent, rc;

	parent = syncapi_open_parent(api, path, 0, &leaf);
	if (parent < 0)
		return -1;
	rc = mkdirat(parent, leaf, 0755) < 0 || fsync(parent) < 0 ? -1 : 0;
	close_quietly(parent);
	return rc;
}

/* Removes everything in the folder fd (which it closes), depth first. 0 or -1 with errno. */
static int empty_dir(int fd)
{
	struct dirent *de;
	DIR *d = fdopendir(fd);
	int rc = 0;

	if (!d) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d))) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0 || empty_dir(sub) < 0 ||
			    unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0)
				rc = -1;
		} else if (unlinkat(dirfd(d), de->d_name, 0) < 0) {
			rc = -1;
		}
	}
	if (fsync(dirfd(d)) < 0)
		rc = -1;
	closedir(d);
	return rc;
}

int dav_fs_remove(struct syncapi *api, const char *path)
{
	const char *leaf;
	struct stat st;
	int parent, rc = -1;

	parent = syncapi_open_parent(api, path, 0, &leaf);
	if (parent < 0)
		return -1;
	if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		goto out;
	if (S_ISDIR(st.st_mode)) {
		int fd = openat(parent, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || empty_dir(fd) < 0 || unlinkat(parent, leaf, AT_REMOVEDIR) < 0)
			goto out;
	} else if (unlinkat(parent, leaf, 0) < 0) {
		goto out;
	}
	if (fsync(parent) < 0)
		goto out;
	hash_cache_remove(api->cache, path);
	rc = 0;
out:
	close_quietly(parent);
	return rc;
}

/* Copies the file from to to through the sync API's durable write. 0 or -1 with errno. */
static int copy_file(struct syncapi *api, const char *from, const char *to)
{
	struct job j;
	struct outcome out;

	memset(&j, 0, sizeof(j));
	memset(&out, 0, sizeof(out));
	buf_init(&j.body, 0);
	if (dav_fs_read(api, from, &j.body) < 0) {
		buf_release(&j.body);
		return -1;
	}
	j.kind = J_PUT;
	j.path = (char *)to;
	syncapi_put(api, &j, &out);
	buf_release(&j.body);
	if (out.status >= 300) {
		errno = out.status == 507 ? ENOSPC : EIO;
		return -1;
	}
	return 0;
}

int dav_fs_copy(struct syncapi *api, const char *from, const char *to, int infinite,
		int (*hidden)(void *ctx, const char *path), void *ctx)
{
	struct dav_entry *v = NULL;
	struct stat st;
	struct buf dst = BUF_INIT;
	size_t i, n;
	int rc = 0;

	if (dav_fs_stat(api, from, &st) == DAV_FILE)
		return copy_file(api, from, to);
	if (dav_fs_mkdir(api, to) < 0 && errno != EEXIST)
		return -1;
	if (!infinite)
		return 0;
	n = dav_fs_list(api, from, &v, hidden, ctx);
	for (i = 0; i < n && rc == 0; i++) {
		buf_reset(&dst);
		buf_addf(&dst, "%s%s", to, v[i].path + strlen(from));
		rc = dav_fs_copy(api, v[i].path, dst.ptr, 1, hidden, ctx);
	}
	dav_fs_list_free(v, n);
	buf_release(&dst);
	return rc;
}

int dav_fs_rename(struct syncapi *api, const char *from, const char *to)
{
	const char *fl, *tl;
	int fd = -1, td = -1, rc = -1;

	fd = syncapi_open_parent(api, from, 0, &fl);
	if (fd < 0)
		return -1;
	td = syncapi_open_parent(api, to, 0, &tl);
	if (td < 0)
		goto out;
	if (renameat(fd, fl, td, tl) < 0 || fsync(td) < 0 || fsync(fd) < 0)
		goto out;
	hash_cache_remove(api->cache, from);
	rc = 0;
out:
	close_quietly(fd);
	close_quietly(td);
	return rc;
}
