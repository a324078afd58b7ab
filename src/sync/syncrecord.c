/*
 * syncrecord.c: the record of the last sync, a journal on disk and a map
 * in memory (see syncrecord.h for the format and the guarantees).
 *
 * Appends are collected in a buffer and written with one write() and one
 * fdatasync() per flush: the client flushes after each batch of answers,
 * not after each file, so a first sync of 10,000 notes costs a few dozen
 * syncs, not 10,000. The journal is written anew at the end of a run when
 * it is more than twice the size of its live entries (and at load, after
 * a torn tail).
 *
 * Rejected: SQLite (the search module's library, and each library lives
 * in one module); one file per base text, by hash, as git stores objects
 * (a fsync per note on a first sync); keeping bases only in memory (a
 * killed run would forget what it had synced).
 */
#include "sync/syncrecord.h"
#include "util/buf.h"
#include "util/files.h"
#include "util/map.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER "quire-sync-record 1\n"
#define FLUSH_SIZE (1 << 20)

struct sync_record {
	char *file;
	int fd;                  /* the journal, opened for appending; -1 until the first flush */
	int dry;
	struct map entries;      /* path -> struct sync_record_entry */
	struct buf pending;      /* entries set since the last flush, as they are written */
	size_t file_size;        /* bytes in the journal */
	size_t live_size;        /* bytes the live entries would take */
};

static size_t entry_size(const struct sync_record_entry *e)
{
	return strlen(e->path) + 96 + (e->text ? e->text_len + 1 : 0);
}

static void entry_free(struct sync_record_entry *e)
{
	if (!e)
		return;
	free(e->path);
	free(e->text);
	free(e);
}

/* Puts e in the map in place of what path had. */
static void replace(struct sync_record *r, struct sync_record_entry *e, const char *path)
{
	struct sync_record_entry *old = map_remove(&r->entries, path, strlen(path));

	if (old) {
		r->live_size -= entry_size(old);
		entry_free(old);
	}
	if (e) {
		map_put(&r->entries, e->path, strlen(e->path), e);
		r->live_size += entry_size(e);
	}
}

static void write_entry(struct buf *b, const struct sync_record_entry *e)
{
	buf_addf(b, "+\t%s\t%lld\t%s\n", e->sha, e->text ? (long long)e->text_len : -1LL, e->path);
	if (e->text) {
		buf_add(b, e->text, e->text_len);
		buf_addc(b, '\n');
	}
}

static int is_hex64(const char *s, size_t n)
{
	size_t i;

	if (n != 64)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/*
 * One entry at p (end: the buffer's end) into r. The bytes it took, or 0
 * when it is torn or malformed.
 */
static size_t parse_entry(struct sync_record *r, const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p)), *tab, *path;
	struct sync_record_entry *e;
	long long tlen;
	char *num_end;

	if (!nl || nl - p < 3 || p[1] != '\t')
		return 0;
	if (p[0] == '-') {
		char *key = xstrndup(p + 2, (size_t)(nl - p - 2));
		replace(r, NULL, key);
		free(key);
		return (size_t)(nl + 1 - p);
	}
	if (p[0] != '+' || nl - p < 2 + 64 + 1 || !is_hex64(p + 2, 64) || p[66] != '\t')
		return 0;
	tlen = strtoll(p + 67, &num_end, 10);
	tab = num_end;
	if (tab >= nl || *tab != '\t' || tlen < -1 || tab + 1 >= nl)
		return 0;
	path = tab + 1;
	if (tlen >= 0 && (end - (nl + 1) < tlen + 1 || nl[1 + tlen] != '\n'))
		return 0;
	e = xcalloc(1, sizeof(*e));
	e->path = xstrndup(path, (size_t)(nl - path));
	memcpy(e->sha, p + 2, 64);
	if (tlen >= 0) {
		e->text = xstrndup(nl + 1, (size_t)tlen);
		e->text_len = (size_t)tlen;
	}
	replace(r, e, e->path);
	return (size_t)(nl + 1 - p) + (tlen >= 0 ? (size_t)tlen + 1 : 0);
}

struct sync_record *sync_record_open(const char *file, int dry)
{
	struct sync_record *r = xcalloc(1, sizeof(*r));
	struct buf b = BUF_INIT;
	const char *p, *end;
	size_t n;
	int torn = 0;

	r->file = xstrdup(file);
	r->fd = -1;
	r->dry = dry;
	r->entries = (struct map)MAP_INIT;
	buf_init(&r->pending, 0);
	if (read_file(file, &b) < 0) {
		if (errno != ENOENT) {
			fprintf(stderr, "quire sync: %s: %s\n", file, strerror(errno));
			buf_release(&b);
			sync_record_free(r);
			return NULL;
		}
		buf_release(&b);
		return r;
	}
	p = b.ptr ? b.ptr : "";
	end = p + b.len;
	if (b.len < sizeof(HEADER) - 1 || memcmp(p, HEADER, sizeof(HEADER) - 1) != 0) {
		torn = b.len > 0;
	} else {
		for (p += sizeof(HEADER) - 1; p < end; p += n)
			if (!(n = parse_entry(r, p, end))) {
				torn = 1;
				break;
			}
	}
	r->file_size = b.len;
	buf_release(&b);
	if (torn) {
		fprintf(stderr, "quire sync: %s: the end of the record was torn (an interrupted run); "
				"it is written anew\n", file);
		r->file_size = SIZE_MAX; /* forces the rewrite */
		if (!dry && sync_record_compact(r) < 0) {
			sync_record_free(r);
			return NULL;
		}
	}
	return r;
}

void sync_record_free(struct sync_record *r)
{
	size_t i = 0;
	void *v;

	if (!r)
		return;
	while (map_next(&r->entries, &i, NULL, NULL, &v))
		entry_free(v);
	map_release(&r->entries);
	buf_release(&r->pending);
	if (r->fd >= 0)
		close(r->fd);
	free(r->file);
	free(r);
}

const struct sync_record_entry *sync_record_get(const struct sync_record *r, const char *path)
{
	return map_gets(&r->entries, path);
}

void sync_record_set(struct sync_record *r, const char *path, const char *sha, const char *text,
		     size_t text_len)
{
	struct sync_record_entry *e = xcalloc(1, sizeof(*e));
	const struct sync_record_entry *old = sync_record_get(r, path);

	if (old && strcmp(old->sha, sha) == 0 && (old->text != NULL) == (text != NULL)) {
		free(e);
		return; /* nothing new */
	}
	e->path = xstrdup(path);
	memcpy(e->sha, sha, SHA256_HEX_SIZE);
	e->sha[SHA256_HEX_SIZE - 1] = '\0';
	if (text) {
		e->text = xstrndup(text, text_len);
		e->text_len = text_len;
	}
	write_entry(&r->pending, e);
	replace(r, e, path);
	if (r->pending.len > FLUSH_SIZE)
		sync_record_flush(r);
}

void sync_record_drop(struct sync_record *r, const char *path)
{
	if (!sync_record_get(r, path))
		return;
	buf_addf(&r->pending, "-\t%s\n", path);
	replace(r, NULL, path);
}

/* The folder of the journal, fsynced (after a create or a rename in it). */
static int sync_folder(const char *file)
{
	const char *slash = strrchr(file, '/');
	char *dir = slash ? xstrndup(file, (size_t)(slash - file)) : xstrdup(".");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0 || fsync(fd) < 0) {
		fprintf(stderr, "quire sync: %s: %s\n", dir, strerror(errno));
		rc = -1;
	}
	if (fd >= 0)
		close(fd);
	free(dir);
	return rc;
}

int sync_record_flush(struct sync_record *r)
{
	int created = 0;

	if (r->dry || !r->pending.len)
		return 0;
	if (r->fd < 0) {
		r->fd = open(r->file, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (r->fd < 0 && errno == ENOENT) {
			r->fd = open(r->file, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			created = r->fd >= 0;
		}
		if (r->fd < 0) {
			fprintf(stderr, "quire sync: %s: %s\n", r->file, strerror(errno));
			return -1;
		}
		if (created && write_fd(r->fd, HEADER, sizeof(HEADER) - 1) < 0)
			goto fail;
		if (created)
			r->file_size = sizeof(HEADER) - 1;
	}
	if (write_fd(r->fd, r->pending.ptr, r->pending.len) < 0 || fdatasync(r->fd) < 0)
		goto fail;
	if (created && sync_folder(r->file) < 0)
		return -1;
	r->file_size += r->pending.len;
	buf_reset(&r->pending);
	return 0;
fail:
	fprintf(stderr, "quire sync: %s: %s\n", r->file, strerror(errno));
	return -1;
}

int sync_record_compact(struct sync_record *r)
{
	struct buf b = BUF_INIT, tmp = BUF_INIT;
	size_t i = 0;
	void *v;
	int fd, rc = -1;

	if (r->dry)
		return 0;
	if (r->file_size != SIZE_MAX && r->file_size + r->pending.len <= 2 * r->live_size + 65536)
		return sync_record_flush(r);
	buf_adds(&b, HEADER);
	while (map_next(&r->entries, &i, NULL, NULL, &v))
		write_entry(&b, v);
	buf_addf(&tmp, "%s.tmp-%d", r->file, (int)getpid());
	fd = open(tmp.ptr, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write_fd(fd, b.ptr, b.len) < 0 || fsync(fd) < 0) {
		fprintf(stderr, "quire sync: %s: %s\n", tmp.ptr, strerror(errno));
		if (fd >= 0)
			close(fd);
		unlink(tmp.ptr);
		goto out;
	}
	if (close(fd) < 0 || rename(tmp.ptr, r->file) < 0) {
		fprintf(stderr, "quire sync: %s: %s\n", r->file, strerror(errno));
		unlink(tmp.ptr);
		goto out;
	}
	if (sync_folder(r->file) < 0)
		goto out;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	r->file_size = b.len;
	buf_reset(&r->pending);
	rc = 0;
out:
	buf_release(&b);
	buf_release(&tmp);
	return rc;
}

int sync_record_next(const struct sync_record *r, size_t *i, const struct sync_record_entry **e)
{
	void *v;

	if (!map_next(&r->entries, i, NULL, NULL, &v))
		return 0;
	*e = v;
	return 1;
}
