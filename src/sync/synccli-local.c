/*
 * synccli-local.c: what `quire sync` writes into the local vault: files
 * the server changed or created, merged notes, conflict copies, and the
 * deletions the server made.
 *
 * Every write is durable before the record says it happened: the bytes
 * go to a temporary dot-file (".quire-sync-<pid>-<n>", which neither the
 * scanner nor Obsidian lists) in the target's folder, are fsynced, and
 * the file is renamed over the target, or linked in place when the target
 * is new (link() fails when something appeared there meanwhile, where a
 * rename would replace it); then the folder is fsynced. Folders are
 * reached from the vault's descriptor one segment at a time without
 * following symlinks (syncapi_open_parent_at(), as the server writes),
 * and every path was checked as the server checks paths before it gets
 * here: a manifest cannot make the client write outside the vault.
 *
 * The local file may change while the sync runs (an editor saving): just
 * before a replacement or a deletion its hash is taken again (through the
 * hash cache, a stat when it did not change) and compared with the one the
 * plan was made from; when it differs, nothing is written, the run counts
 * it as raced and compares the file again.
 */
#include "sync/synccli-int.h"
#include "sync/hashcache.h"
#include "sync/syncapi.h"
#include "util/buf.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/map.h"
#include "util/xalloc.h"
#include "vault/vault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static unsigned tmp_counter;

/* Whether the local file leaf in parent hashes to expect ("": that there is none). */
static int still(struct run *r, int parent, const char *leaf, const char *path, const char *expect,
		 struct stat *st)
{
	char sha[SHA256_HEX_SIZE];

	if (hash_cache_file(r->hw.cache, parent, leaf, path, sha, st) < 0)
		return !expect[0] && (errno == ENOENT);
	return expect[0] && strcmp(sha, expect) == 0;
}

int synccli_write_local(struct run *r, const char *disk, const char *path, const char *data,
			size_t len, const char *expect)
{
	struct buf tmp = BUF_INIT;
	struct stat st;
	const char *leaf;
	mode_t mode = 0644;
	int parent, fd, rc = -1;

	parent = syncapi_open_parent_at(r->hw.dirfd, disk, 1, &leaf);
	if (parent < 0) {
		fprintf(stderr, "failed: %s: cannot make its folder: %s\n", path, strerror(errno));
		return -1;
	}
	buf_addf(&tmp, ".quire-sync-%d-%u", (int)getpid(), tmp_counter++);
	if (expect[0] && fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0)
		mode = st.st_mode & 07777;
	fd = openat(parent, tmp.ptr, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0 || write_fd(fd, data, len) < 0 || fsync(fd) < 0) {
		fprintf(stderr, "failed: %s: cannot write it: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto drop;
	}
	if (close(fd) < 0) {
		fprintf(stderr, "failed: %s: cannot write it: %s\n", path, strerror(errno));
		goto drop;
	}
	if (!still(r, parent, leaf, path, expect, &st)) {
		rc = SYNCCLI_RACED;
		goto drop;
	}
	if (expect[0] ? renameat(parent, tmp.ptr, parent, leaf) < 0
		      : linkat(parent, tmp.ptr, parent, leaf, 0) < 0) {
		if (errno == EEXIST) {
			rc = SYNCCLI_RACED;
		} else {
			fprintf(stderr, "failed: %s: cannot write it: %s\n", path, strerror(errno));
		}
		goto drop;
	}
	if (!expect[0] && unlinkat(parent, tmp.ptr, 0) < 0)
		fprintf(stderr, "quire sync: %s/%s: %s\n", r->vault, tmp.ptr, strerror(errno));
	if (fsync(parent) < 0) {
		fprintf(stderr, "failed: %s: cannot sync its folder: %s\n", path, strerror(errno));
		goto out;
	}
	rc = 0;
	goto out;
drop:
	unlinkat(parent, tmp.ptr, 0);
out:
	close(parent);
	buf_release(&tmp);
	return rc;
}

int synccli_unlink_local(struct run *r, const char *disk, const char *path, const char *expect)
{
	struct buf up = BUF_INIT;
	const char *leaf;
	struct stat st;
	char *slash;
	int parent, rc = -1;

	parent = syncapi_open_parent_at(r->hw.dirfd, disk, 0, &leaf);
	if (parent < 0) {
		fprintf(stderr, "failed: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!still(r, parent, leaf, path, expect, &st)) {
		close(parent);
		return SYNCCLI_RACED;
	}
	if (unlinkat(parent, leaf, 0) < 0 || fsync(parent) < 0) {
		fprintf(stderr, "failed: %s: cannot delete it: %s\n", path, strerror(errno));
		close(parent);
		return -1;
	}
	close(parent);
	hash_cache_remove(r->hw.cache, path);
	rc = 0;
	/* the folders the deletion left empty, as the server's folder moves leave none */
	buf_adds(&up, disk);
	while ((slash = strrchr(up.ptr, '/'))) {
		buf_setlen(&up, (size_t)(slash - up.ptr));
		parent = syncapi_open_parent_at(r->hw.dirfd, up.ptr, 0, &leaf);
		if (parent < 0)
			break;
		if (unlinkat(parent, leaf, AT_REMOVEDIR) < 0 || fsync(parent) < 0) {
			close(parent);
			break;
		}
		close(parent);
	}
	buf_release(&up);
	return rc;
}

int synccli_read_local(struct run *r, const char *disk, const char *expect, struct buf *out)
{
	char sha[SHA256_HEX_SIZE];
	const char *leaf;
	int parent, fd;

	buf_reset(out);
	parent = syncapi_open_parent_at(r->hw.dirfd, disk, 0, &leaf);
	if (parent < 0)
		return errno == ENOENT ? SYNCCLI_RACED : -1;
	fd = openat(parent, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(parent);
	if (fd < 0)
		return errno == ENOENT ? SYNCCLI_RACED : -1;
	if (read_fd(fd, out) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	hash_sha256_hex(out->ptr ? out->ptr : "", out->len, sha);
	return strcmp(sha, expect) == 0 ? 0 : SYNCCLI_RACED;
}

/* The parts of a conflict copy's name: path up to the extension, and the extension. */
static void split_ext(const char *path, size_t *stem_len, const char **ext)
{
	const char *slash = strrchr(path, '/'), *leaf = slash ? slash + 1 : path;
	const char *dot = strrchr(leaf, '.');

	if (!dot || dot == leaf)
		dot = leaf + strlen(leaf);
	*stem_len = (size_t)(dot - path);
	*ext = dot;
}

static int taken(struct run *r, const char *name)
{
	struct stat st;

	return map_gets(&r->local, name) || map_gets(&r->remote, name) ||
	       fstatat(r->hw.dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

const char *synccli_conflict_name(struct run *r, const char *path)
{
	struct buf name = BUF_INIT, nfc = BUF_INIT;
	const char *ext, *slash = strrchr(path, '/'), *why, *kept;
	size_t stem_len, leaf_at = slash ? (size_t)(slash + 1 - path) : 0, room;
	char stamp[32], suffix[64];
	time_t now = time(NULL);
	struct tm tm;
	int k;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	split_ext(path, &stem_len, &ext);
	for (k = 1;; k++) {
		if (k == 1)
			snprintf(suffix, sizeof(suffix), VAULT_CONFLICT_INFIX "%s-server", stamp);
		else
			snprintf(suffix, sizeof(suffix), VAULT_CONFLICT_INFIX "%s-server-%d", stamp, k);
		/* a name at most SYNCAPI_MAX_SEGMENT bytes long, cut on a character */
		room = SYNCAPI_MAX_SEGMENT - strlen(suffix) - strlen(ext);
		if (strlen(ext) > 32)
			ext = "";
		buf_reset(&name);
		buf_add(&name, path, stem_len);
		if (stem_len - leaf_at > room) {
			size_t cut = leaf_at + room;
			while (cut > leaf_at && ((unsigned char)path[cut] & 0xc0) == 0x80)
				cut--;
			buf_setlen(&name, cut);
		}
		buf_adds(&name, suffix);
		buf_adds(&name, ext);
		if (!taken(r, name.ptr) || k > 1000)
			break;
	}
	if (syncapi_check_path(name.ptr, name.len, &nfc, &why) < 0)
		fprintf(stderr, "quire sync: the conflict copy of %s cannot be named: %s\n", path, why);
	kept = synccli_keep(r, name.ptr);
	buf_release(&name);
	buf_release(&nfc);
	return kept;
}

const char *synccli_find_copy(struct run *r, const char *path, const char *sha)
{
	struct buf prefix = BUF_INIT;
	const char *ext, *found = NULL;
	size_t stem_len, i;

	split_ext(path, &stem_len, &ext);
	buf_add(&prefix, path, stem_len);
	buf_adds(&prefix, VAULT_CONFLICT_INFIX);
	for (i = 0; i < r->scan.n && !found; i++) {
		const char *p = r->scan.files[i].path;
		size_t n = strlen(p), e = strlen(ext);
		if (strncmp(p, prefix.ptr, prefix.len) == 0 && n >= e && strcmp(p + n - e, ext) == 0 &&
		    r->hw.ok[i] && strcmp(r->hw.sha[i], sha) == 0)
			found = p;
	}
	buf_release(&prefix);
	return found;
}
