/*
 * syncapi-write.c: the sync API's writes into the vault, durable before
 * they are answered.
 *
 * A write. The folder holding the target is reached from the vault's
 * descriptor one segment at a time with O_NOFOLLOW, so no symlink in the
 * vault can send a write elsewhere; missing folders are made and each is
 * fsynced into its parent. The bytes go to ".quire-tmp-<pid>-<n>" in that
 * folder (O_EXCL) or to a spare (below), which is fsynced, renamed over
 * the target, and the folder fsynced; only then is the loader told and the
 * client answered.
 * Rejected: O_TMPFILE with linkat (linkat cannot replace an existing
 * target, so a rename would be needed anyway); writing in place (a crash
 * leaves a torn note that the loader would publish).
 *
 * Spares. A write that replaces a file first links the file's inode into
 * <data dir>/spares, so the rename frees no inode, and a later write
 * truncates and fills that inode there and renames it into place instead
 * of creating a file (struct spare): a sync of notes that exist allocates
 * and frees no inodes, and nothing but the one temporary file of a write
 * under way ever sits in a vault folder. Links and renames stay within
 * one file system: a write into a folder on another one than the data
 * folder (a mount inside the vault, or a data folder elsewhere) creates
 * its file as before. Why: on ext4 without a journal (this project's
 * VMs), every inode allocation skips each inode of its group freed in the
 * last 60 to 360 s, reading its table block: creating the temporary file
 * took 0.4 to 2 ms of kernel time per PUT during syncs, and that kernel
 * time is not preempted, so it delayed page reads on the same core. A
 * spare is used only if it is still the inode we linked, a regular file
 * with no other link (its name could have been swapped for a hard link to
 * another file).
 *
 * Uploads. A body larger than the HTTP server's small_body_size arrives
 * as a file the server wrote to <data dir>/spool as it came (struct
 * upload). The write hashes it by reading it back in pieces, gives it the
 * mode the file it replaces had (a new file's: 0644 less the umask),
 * fsyncs it and renames it from the spool over the target: no byte of it
 * is copied, and none is held in memory, whatever its size. The data
 * folder is <vault>/.quire by default, on the vault's file system; when
 * it is on another (rename says EXDEV, or the devices differ), the file is
 * copied in pieces into a temporary file of the target's folder as a
 * body in memory is written. Every path out of a write that did not
 * rename the file removes it: nothing stays in the spool.
 * Rejected: linking the file into the target's folder first (one more
 * metadata operation per upload, for a failure the rename reports anyway).
 *
 * Leftovers. A crash can leave temporary files; their names start with '.'
 * so the scanner, the watcher and the manifest never see them, and
 * syncapi_new() deletes them (syncapi_remove_leftovers(), at the end);
 * it empties the spool and the spares folder too (syncapi_open_scratch()).
 */
#include "sync/syncapi.h"
#include "sync/syncapi-int.h"
#include "site/loader.h"
#include "sync/hashcache.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_PREFIX ".quire-tmp-"

/* ---- the file system ---- */

static const char *dir_error(int err)
{
	switch (err) {
	case ENOTDIR: return "a parent of the path is a file";
	case ELOOP: return "a parent of the path is a symbolic link";
	case ENOENT: return "no such file";
	case ENAMETOOLONG: return "path too long for the file system";
	case ENOSPC: return "no space left on the server";
	case EDQUOT: return "over the server's disk quota";
	case EROFS: return "the vault is read-only";
	case EACCES:
	case EPERM: return "permission denied on the server";
	default: return "cannot write on the server";
	}
}

static int dir_status(int err)
{
	switch (err) {
	case ENOTDIR:
	case ELOOP: return 409;
	case ENOENT: return 404;
	case ENOSPC:
	case EDQUOT: return 507;
	case ENAMETOOLONG: return 400;
	default: return 500;
	}
}

/*
 * The folder holding path: opened from the vault root one segment at a
 * time without following symlinks; with create, missing folders are made,
 * each fsynced into its parent. Returns a descriptor (the caller closes
 * it) and points *leaf into path at the file name; -1 with errno.
 */
int syncapi_open_parent(struct syncapi *api, const char *path, int create, const char **leaf)
{
	return syncapi_open_parent_at(api->root_fd, path, create, leaf);
}

int syncapi_open_parent_at(int root_fd, const char *path, int create, const char **leaf)
{
	struct buf seg = BUF_INIT;
	const char *p = path, *slash;
	int fd, next = -1, saved, ok = 0;

	/*
	 * Opening the vault folder again: openat(root, ".") gives a descriptor
	 * of our own, so the caller closes whatever it gets.
	 * Rejected: handing out root_fd itself (every caller would need to know
	 * not to close it).
	 */
	fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((slash = strchr(p, '/'))) {
		buf_reset(&seg);
		buf_add(&seg, p, (size_t)(slash - p));
		/*
		 * Opening one folder on the way: O_NOFOLLOW so a symlink in the vault
		 * cannot redirect the write, O_DIRECTORY so a file there is ENOTDIR.
		 * Rejected: building a full path and checking it with realpath()
		 * (racy: a folder swapped for a symlink after the check is followed).
		 */
		next = openat(fd, seg.ptr, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			if ((mkdirat(fd, seg.ptr, 0755) < 0 && errno != EEXIST) || fsync(fd) < 0)
				goto out;
			next = openat(fd, seg.ptr, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0)
			goto out;
		if (close(fd) < 0) {
			fd = next;
			goto out;
		}
		fd = next;
		next = -1;
		p = slash + 1;
	}
	*leaf = p;
	ok = 1;
out:
	saved = errno;
	buf_release(&seg);
	if (ok)
		return fd;
	close(fd); /* already failing: the first error is the one reported */
	errno = saved;
	return -1;
}

/*
 * What is at leaf in dirfd: 0 missing, 1 a regular file (with its hash in
 * out->current), or -1 with the outcome set (a folder, a symlink, an
 * unreadable file).
 */
static int current_file(struct syncapi *api, int dirfd, const char *leaf, const char *path,
			struct outcome *out, struct stat *st)
{
	out->current[0] = '\0';
	if (fstatat(dirfd, leaf, st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		out->status = 500;
		out->error = "cannot read the file on the server";
		return -1;
	}
	if (S_ISDIR(st->st_mode)) {
		out->status = 409;
		out->error = "the path is a folder on the server";
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		out->status = 409;
		out->error = "the path is a symbolic link or special file on the server";
		return -1;
	}
	if (hash_cache_file(api->cache, dirfd, leaf, path, out->current, st) < 0) {
		out->status = 500;
		out->error = "cannot read the file on the server";
		return -1;
	}
	return 1;
}

/* If-Match and If-None-Match against the current file; 0 when they hold. */
static int preconditions(const struct job *j, int exists, struct outcome *out)
{
	if ((j->if_match == C_MATCH_ANY && !exists) ||
	    (j->if_match == C_MATCH && (!exists || strcmp(j->match, out->current) != 0)) ||
	    (j->if_none_match && exists)) {
		out->status = 412;
		out->error = exists ? "the file on the server has changed" : "the file does not exist on the server";
		return -1;
	}
	return 0;
}

/* Whether path has a segment starting with '.' (never read into the site). */
static int dotted(const char *path)
{
	const char *p;

	if (!path)
		return 0;
	if (path[0] == '.')
		return 1;
	for (p = path; (p = strchr(p, '/')); p++)
		if (p[1] == '.')
			return 1;
	return 0;
}

uint64_t syncapi_notify(struct syncapi *api, const struct change_origin *origin, const char *a,
			const char *b)
{
	struct change_origin none = { CHANGE_OTHER, "", clock_ms() };
	const char *paths[2] = { a, b };
	size_t n = 0;

	if (dotted(a))
		a = NULL;
	if (dotted(b))
		b = NULL;
	if (a)
		paths[n++] = a;
	if (b)
		paths[n++] = b;
	if (!n)
		return loader_version(api->loader);

	/*
	 * The site reads quire.yml only on a full load. The reload is queued
	 * first: then the version loader_notify() predicts is that reload's or
	 * a later one; queued after, a build taking the paths alone could slip
	 * in between and carry the predicted version without the new settings.
	 */
	if ((a && strcmp(a, "quire.yml") == 0) || (b && strcmp(b, "quire.yml") == 0))
		loader_reload(api->loader);
	return loader_notify_from(api->loader, paths, n, origin ? origin : &none);
}

int syncapi_errno_status(int err)
{
	return dir_status(err);
}

const char *syncapi_errno_message(int err)
{
	return dir_error(err);
}

/* A failed system call while writing: logged, and the outcome says what. */
static void io_failed(const struct job *j, struct outcome *out, const char *what)
{
	int err = errno;

	out->status = dir_status(err) == 507 ? 507 : 500;
	out->error = dir_error(err);
	log_error("sync: %s: %s: %s", j->path, what, strerror(err));
}

/* Takes a spare on file system dev (a rename cannot cross them). 0, or -1 when there is none. */
static int take_spare(struct syncapi *api, dev_t dev, struct spare *out)
{
	size_t i;
	int found = -1;

	pthread_mutex_lock(&api->lock);
	for (i = api->nspares; i-- > 0;) {
		if (api->spares[i].dev == dev) {
			*out = api->spares[i];
			api->spares[i] = api->spares[--api->nspares];
			found = 0;
			break;
		}
	}
	pthread_mutex_unlock(&api->lock);
	return found;
}

/* Keeps a spare; -1 when the pool is full. */
static int keep_spare(struct syncapi *api, struct spare *sp)
{
	int kept = -1;

	pthread_mutex_lock(&api->lock);
	if (api->nspares < SPARES_MAX) {
		api->spares[api->nspares++] = *sp;
		kept = 0;
	}
	pthread_mutex_unlock(&api->lock);
	return kept;
}

/*
 * Opens spare sp (in the spares folder spares_fd) as a temporary file:
 * emptied, with mode. Only the inode we linked, with no other link and
 * still a regular file, is written; else its name is removed and -1
 * returned.
 */
static int open_spare(int spares_fd, const struct spare *sp, mode_t mode)
{
	struct stat st;
	int fd = openat(spares_fd, sp->name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == sp->dev &&
	    st.st_ino == sp->ino && st.st_nlink == 1 && ftruncate(fd, 0) == 0 &&
	    fchmod(fd, mode) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	unlinkat(spares_fd, sp->name, 0); /* a name of ours; removing it touches no other file */
	return -1;
}

/*
 * Creates the temporary file of a write into the folder dirfd, with mode.
 * Returns its descriptor, with its name in tmp and the folder holding it
 * in *tmp_dir; -1 with errno.
 *
 * Creating the temporary file: in the target's folder (a rename only
 * replaces atomically within one file system), named with a leading
 * '.' so nothing ever loads it, O_EXCL so two writers never share it,
 * O_NOFOLLOW so a planted symlink cannot take the bytes; the mode of the
 * file it replaces is kept.
 * Rejected: mkstemp() (it takes a path, not a folder descriptor).
 * A spare comes first (see "Spares" above).
 */
static int create_tmp(struct syncapi *api, int dirfd, mode_t mode, struct buf *tmp, int *tmp_dir)
{
	struct spare sp;
	struct stat st;
	int fd = -1;

	if (api->spares_fd >= 0 && fstat(dirfd, &st) == 0 && take_spare(api, st.st_dev, &sp) == 0 &&
	    (fd = open_spare(api->spares_fd, &sp, mode)) >= 0) {
		buf_adds(tmp, sp.name);
		*tmp_dir = api->spares_fd;
	}
	while (fd < 0) {
		*tmp_dir = dirfd;
		buf_reset(tmp);
		buf_addf(tmp, TMP_PREFIX "%ld-%u", (long)getpid(),
			 atomic_fetch_add(&api->tmp_counter, 1));
		fd = openat(dirfd, tmp->ptr, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    mode);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	return fd;
}

/*
 * Links the file at leaf in dirfd into the spares folder, to become a
 * spare once the write that replaces it is done. 1 with the spare in
 * *kept (its name to remove, if it is not kept), or 0 when it was not
 * linked.
 */
static int link_spare(struct syncapi *api, int dirfd, const char *leaf, struct spare *kept)
{
	struct stat ls;
	int linked;

	snprintf(kept->name, sizeof(kept->name), "s%ld-%u", (long)getpid(),
		 atomic_fetch_add(&api->tmp_counter, 1));
	linked = linkat(dirfd, leaf, api->spares_fd, kept->name, 0) == 0;
	if (linked && (fstatat(api->spares_fd, kept->name, &ls, AT_SYMLINK_NOFOLLOW) < 0 ||
		       !S_ISREG(ls.st_mode))) {
		unlinkat(api->spares_fd, kept->name, 0);
		linked = 0;
	}
	if (linked) {
		kept->dev = ls.st_dev;
		kept->ino = ls.st_ino;
	}
	return linked;
}

void syncapi_upload_drop(struct upload *up)
{
	if (!up->spooled)
		return;
	if (up->file.fd >= 0)
		close(up->file.fd); /* read only from here on: nothing to lose */
	if (up->file.name[0] && unlinkat(up->dir, up->file.name, 0) < 0)
		log_warn("sync: cannot remove spooled upload %s: %s", up->file.name, strerror(errno));
	up->spooled = 0;
	up->file.fd = -1;
	up->file.name[0] = '\0';
}

/*
 * The hash and size of j's bytes into out: from memory, or read back from
 * the spooled file in pieces. 0, or -1 with the outcome set.
 */
static int hash_body(const struct job *j, struct outcome *out)
{
	unsigned long long len;

	if (!j->up.spooled) {
		hash_sha256_hex(j->body.ptr, j->body.len, out->sha);
		out->size = (off_t)j->body.len;
		return 0;
	}
	if (j->up.file.sha256[0]) {
		/* hashed by the front as it arrived: not read again */
		memcpy(out->sha, j->up.file.sha256, SHA256_HEX_SIZE);
		out->size = (off_t)j->up.file.len;
		return 0;
	}
	if (hash_sha256_fd(j->up.file.fd, out->sha, &len) < 0) {
		io_failed(j, out, "read the spooled upload");
		return -1;
	}
	out->size = (off_t)len;
	return 0;
}

/* Whether the folders a and b are on one device (a rename between them may work). */
static int same_device(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev;
}

/*
 * The temporary file of a write into dirfd, holding j's bytes, fsynced,
 * with mode: the spooled upload itself when it may be renamed from the
 * spool (unless copy), else a spare or a new file written from memory or
 * copied from the spool. *fd is the file (-1: none was made), its name in
 * tmp in the folder *tmp_dir. Returns 1 when it is the spooled upload
 * (j->up no longer holds it), 0 for another file, -1 with the outcome set.
 */
static int stage(struct syncapi *api, struct job *j, int dirfd, mode_t mode, int copy,
		 struct buf *tmp, int *tmp_dir, int *fd, struct outcome *out)
{
	struct upload *up = &j->up;
	int rc;

	buf_reset(tmp);
	if (up->spooled && !copy && same_device(up->dir, dirfd)) {
		*fd = up->file.fd;
		*tmp_dir = up->dir;
		buf_adds(tmp, up->file.name);
		up->file.fd = -1;
		up->file.name[0] = '\0';
		if (fchmod(*fd, mode) < 0 || fsync(*fd) < 0) {
			io_failed(j, out, "fsync");
			return -1;
		}
		return 1;
	}
	*fd = create_tmp(api, dirfd, mode, tmp, tmp_dir);
	if (*fd < 0) {
		io_failed(j, out, "create");
		return -1;
	}
	rc = up->spooled ? copy_fd(up->file.fd, *fd) : write_fd(*fd, j->body.ptr, j->body.len);
	if (rc < 0 || fsync(*fd) < 0) {
		io_failed(j, out, "write");
		return -1;
	}
	return 0;
}

/*
 * Puts the spooled upload that stage() took (fd, named tmp) back into
 * j->up, for it to be copied instead: the rename from the spool crossed a
 * mount point.
 */
static void unstage(struct job *j, int fd, const struct buf *tmp)
{
	j->up.file.fd = fd;
	snprintf(j->up.file.name, sizeof(j->up.file.name), "%s", tmp->ptr);
}

/*
 * The current file at leaf in dirfd, for a write over it: 1 (with its
 * hash in out->current and its stat in st), 0 missing, -1 with the
 * outcome set. An empty folder where the file goes is what a client
 * leaves when it deletes the last file of a folder that becomes a file:
 * it holds nothing, so the file takes its place (a folder with anything
 * in it stays a 409).
 */
static int replaced_file(struct syncapi *api, struct job *j, int dirfd, const char *leaf,
			 struct outcome *out, struct stat *st)
{
	int exists = current_file(api, dirfd, leaf, j->path, out, st);

	if (exists < 0 && out->status == 409 && S_ISDIR(st->st_mode) &&
	    unlinkat(dirfd, leaf, AT_REMOVEDIR) == 0) {
		out->status = 0;
		out->error = NULL;
		exists = 0;
	}
	return exists;
}

void syncapi_put(struct syncapi *api, struct job *j, struct outcome *out)
{
	struct buf tmp = BUF_INIT;
	struct spare kept;
	const char *leaf;
	struct stat st;
	int dirfd = -1, fd = -1, tmp_dir = -1, exists, staged, copy = 0, created = 0, renamed = 0,
	    linked = 0;
	mode_t mode = api->new_mode;

	if (hash_body(j, out) < 0)
		goto out;
	dirfd = syncapi_open_parent(api, j->path, 1, &leaf);
	if (dirfd < 0) {
		out->status = dir_status(errno);
		out->error = dir_error(errno);
		goto out;
	}
	exists = replaced_file(api, j, dirfd, leaf, out, &st);
	if (exists < 0 || preconditions(j, exists, out) < 0)
		goto out;
	if (exists)
		mode = st.st_mode & 07777;
	for (;;) {
		staged = stage(api, j, dirfd, mode, copy, &tmp, &tmp_dir, &fd, out);
		created = fd >= 0;
		if (staged < 0)
			goto out;
		/* the file replaced keeps its inode as a spare (EXDEV: the data folder is elsewhere) */
		if (exists && api->spares_fd >= 0 && !linked)
			linked = link_spare(api, dirfd, leaf, &kept);
		if (renameat(tmp_dir, tmp.ptr, dirfd, leaf) == 0)
			break;
		if (errno != EXDEV || staged != 1) {
			io_failed(j, out, "rename");
			goto out;
		}
		unstage(j, fd, &tmp); /* a mount point between the spool and the folder */
		fd = -1;
		created = 0;
		copy = 1;
	}
	renamed = 1;
	if (fsync(dirfd) < 0 || fstat(fd, &st) < 0) {
		io_failed(j, out, "fsync");
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		io_failed(j, out, "close");
		goto out;
	}
	fd = -1;
	hash_cache_put(api->cache, j->path, &st, out->sha, hash_cache_now_ns());
	out->version = syncapi_notify(api, &j->origin, j->path, NULL);
	out->status = exists ? 200 : 201;
	count(&api->puts);
	if (j->up.spooled)
		count(staged == 1 ? &api->uploads_renamed : &api->uploads_copied);
	if (linked && keep_spare(api, &kept) == 0)
		linked = 0;
out:
	if (linked && unlinkat(api->spares_fd, kept.name, 0) < 0) /* not kept: the old inode goes */
		log_warn("sync: %s: cannot remove spare %s: %s", j->path, kept.name, strerror(errno));
	if (fd >= 0)
		close(fd); /* already failing */
	if (created && !renamed && unlinkat(tmp_dir, tmp.ptr, 0) < 0)
		log_warn("sync: %s: cannot remove %s: %s", j->path, tmp.ptr, strerror(errno));
	if (renamed && out->status >= 300) {
		/* the new bytes are in place but not known durable: say so to the loader */
		hash_cache_remove(api->cache, j->path);
		syncapi_notify(api, &j->origin, j->path, NULL);
	}
	if (dirfd >= 0 && close(dirfd) < 0)
		log_warn("sync: %s: close: %s", j->path, strerror(errno));
	buf_release(&tmp);
}

/*
 * The folder holding j->path, for a job on a file that must exist and meet
 * the job's preconditions (a DELETE, a move's source). Returns a
 * descriptor (the caller closes it) and points *leaf at the file name; -1
 * with the outcome set.
 */
static int open_existing(struct syncapi *api, const struct job *j, const char **leaf,
			 struct outcome *out)
{
	struct stat st;
	int dirfd, exists;

	dirfd = syncapi_open_parent(api, j->path, 0, leaf);
	if (dirfd < 0) {
		out->status = errno == ENOENT ? 404 : dir_status(errno);
		out->error = errno == ENOENT ? "no such file" : dir_error(errno);
		return -1;
	}
	exists = current_file(api, dirfd, *leaf, j->path, out, &st);
	if (exists == 0) {
		out->status = 404;
		out->error = "no such file";
	}
	if (exists <= 0 || preconditions(j, exists, out) < 0) {
		if (close(dirfd) < 0)
			log_warn("sync: %s: close: %s", j->path, strerror(errno));
		return -1;
	}
	return dirfd;
}

void syncapi_delete(struct syncapi *api, struct job *j, struct outcome *out)
{
	const char *leaf;
	int dirfd;

	dirfd = open_existing(api, j, &leaf, out);
	if (dirfd < 0)
		return;
	if (unlinkat(dirfd, leaf, 0) < 0 || fsync(dirfd) < 0) {
		out->status = 500;
		out->error = "cannot delete the file on the server";
		log_error("sync: %s: %s", j->path, strerror(errno));
		goto out;
	}
	hash_cache_remove(api->cache, j->path);
	out->version = syncapi_notify(api, &j->origin, j->path, NULL);
	out->status = 200;
	count(&api->deletes);
out:
	if (close(dirfd) < 0)
		log_warn("sync: %s: close: %s", j->path, strerror(errno));
}

/*
 * The folder holding a move's source, when the source is a folder (a
 * folder moves with everything in it, in one rename); -1 with the
 * outcome set when it is not one (the caller then takes it as a file) or
 * cannot be moved. *is_folder says which.
 */
static int open_folder_source(struct syncapi *api, const struct job *j, const char **leaf,
			      int *is_folder, struct outcome *out)
{
	struct stat st;
	size_t len = strlen(j->path);
	int dirfd;

	*is_folder = 0;
	dirfd = syncapi_open_parent(api, j->path, 0, leaf);
	if (dirfd < 0)
		return -1;
	if (fstatat(dirfd, *leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
		close(dirfd);
		return -1;
	}
	*is_folder = 1;
	if (strncmp(j->to, j->path, len) == 0 && j->to[len] == '/') {
		out->status = 409;
		out->error = "a folder cannot move into itself";
		close(dirfd);
		return -1;
	}
	return dirfd;
}

void syncapi_move(struct syncapi *api, struct job *j, struct outcome *out)
{
	const char *from_leaf, *to_leaf;
	struct stat tst;
	int from_dir = -1, to_dir = -1, is_folder;

	from_dir = open_folder_source(api, j, &from_leaf, &is_folder, out);
	if (from_dir < 0 && !is_folder)
		from_dir = open_existing(api, j, &from_leaf, out);
	if (from_dir < 0)
		goto out;
	to_dir = syncapi_open_parent(api, j->to, 1, &to_leaf);
	if (to_dir < 0) {
		out->status = dir_status(errno);
		out->error = dir_error(errno);
		goto out;
	}
	if (fstatat(to_dir, to_leaf, &tst, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) {
		out->status = 409;
		out->error = "the target exists on the server";
		goto out;
	}
	if (renameat(from_dir, from_leaf, to_dir, to_leaf) < 0 || fsync(to_dir) < 0 ||
	    fsync(from_dir) < 0) {
		out->status = dir_status(errno) == 507 ? 507 : 500;
		out->error = "cannot move the file on the server";
		log_error("sync: move %s -> %s: %s", j->path, j->to, strerror(errno));
		goto out;
	}
	if (!is_folder) {
		hash_cache_remove(api->cache, j->path);
		hash_cache_remove(api->cache, j->to);
	} /* else the files' entries under the old paths go at the next sweep */
	out->version = syncapi_notify(api, &j->origin, j->path, j->to);
	out->status = 200;
	count(&api->moves);
out:
	if (from_dir >= 0 && close(from_dir) < 0)
		log_warn("sync: %s: close: %s", j->path, strerror(errno));
	if (to_dir >= 0 && close(to_dir) < 0)
		log_warn("sync: %s: close: %s", j->to, strerror(errno));
}

/* ---- leftovers of an earlier run ---- */

/*
 * Opens a folder of the data folder that holds only this run's files (the
 * spares, the spool: see the top), made if missing and emptied of what an
 * earlier run left; -1 when it cannot be.
 */
int syncapi_open_scratch(const char *path)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -1;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if ((d = fdopendir(dup(fd)))) {
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				unlinkat(fd, de->d_name, 0);
		closedir(d);
	}
	return fd;
}

/*
 * Whether the walk for leftovers goes into the folder name of rel: every
 * folder but "." and "..", .git (never written by quire, and large) and
 * the data folder (.quire at the top): WebDAV writes into editors' dot
 * folders (.obsidian/), so a crash can leave a temporary file there too.
 */
static int walk_into(const char *rel, const char *name)
{
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, ".git") == 0)
		return 0;
	return !(strcmp(rel, ".") == 0 && strcmp(name, ".quire") == 0);
}

/* Deletes the temporary files a crash left in the vault's folders (.git and .quire skipped). */
void syncapi_remove_leftovers(struct syncapi *api)
{
	char **queue = NULL;
	size_t qn = 0, qa = 0, qi = 0, removed = 0;

	ALLOC_GROW(queue, 1, qa);
	queue[qn++] = xstrdup(".");
	while (qi < qn) {
		char *rel = queue[qi++];
		struct dirent *de;
		DIR *dir;
		int fd;

		/*
		 * Opening each folder under the vault to look for leftovers, relative
		 * to the vault's descriptor: O_NOFOLLOW so a symlinked folder is not
		 * walked (the scanner does not follow them either, and a link could
		 * lead out of the vault). .git and the data folder are skipped (walk_into()).
		 * Rejected: vault_scan() (it lists files, and skips the dot-files
		 * that are exactly what is looked for).
		 */
		fd = openat(api->root_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || !(dir = fdopendir(fd))) {
			if (fd >= 0)
				close(fd); /* fdopendir failed: nothing else holds it */
			continue;
		}
		while ((de = readdir(dir))) {
			if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0) {
				if (unlinkat(dirfd(dir), de->d_name, 0) < 0)
					log_warn("sync: %s/%s: %s", rel, de->d_name, strerror(errno));
				else
					removed++;
			} else if (walk_into(rel, de->d_name) &&
				   (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN)) {
				struct stat st;
				if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				    S_ISDIR(st.st_mode)) {
					ALLOC_GROW(queue, qn + 1, qa);
					queue[qn] = xmalloc(strlen(rel) + strlen(de->d_name) + 2);
					sprintf(queue[qn++], "%s/%s", rel, de->d_name);
				}
			}
		}
		if (closedir(dir) < 0)
			log_warn("sync: %s: %s", rel, strerror(errno));
	}
	while (qn)
		free(queue[--qn]);
	free(queue);
	if (removed)
		log_info("sync: removed %zu temporary files left by an interrupted write", removed);
}
