/*
 * dav-props.c: WebDAV dead properties (PROPPATCH), kept across restarts
 * in one file of the data folder (<data dir>/davprops).
 *
 * How. Every property is held in memory in one array, and the whole file
 * is written again at each change: a temporary file beside it, fsync,
 * rename, fsync of the folder, so that a 2xx to a PROPPATCH is durable
 * and a crash leaves the old file or the new one. Each record is a line
 * of four byte counts (path, namespace, name, value) and then the four
 * strings and a newline: any bytes, no escaping.
 *
 * Editors set few dead properties (litmus a dozen; Windows a handful of
 * timestamps per file it writes), so the linear scans and the rewrite
 * cost less than an index would. Rejected: SQLite (architecture.md: it is
 * the search module's); extended attributes (not on every file system,
 * and lost by tools that copy the vault).
 */
#include "sync/dav.h"
#include "sync/dav-int.h"
#include "util/files.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct dav_props {
	char *file;
	pthread_mutex_t lock;
	struct dav_prop *v;
	size_t n, alloc;
};

static void prop_release(struct dav_prop *p)
{
	free(p->path);
	free(p->ns);
	free(p->name);
	free(p->xml);
}

static void push(struct dav_props *p, const char *path, const char *ns, const char *name,
		 const char *xml)
{
	struct dav_prop *q;

	ALLOC_GROW(p->v, p->n + 1, p->alloc);
	q = &p->v[p->n++];
	q->path = xstrdup(path);
	q->ns = xstrdup(ns);
	q->name = xstrdup(name);
	q->xml = xstrdup(xml);
}

/* Reads the records of the file's bytes; a damaged tail is dropped (logged). */
static void load(struct dav_props *p, const char *s, size_t len)
{
	size_t off = 0;

	while (off < len) {
		size_t l[4], total;
		int used = 0;
		const char *r = s + off;
		char *f[4];
		int i;

		if (sscanf(r, "%zu %zu %zu %zu\n%n", &l[0], &l[1], &l[2], &l[3], &used) != 4 ||
		    used <= 0 || (total = l[0] + l[1] + l[2] + l[3]) > len - off - (size_t)used ||
		    len - off - (size_t)used - total < 1) {
			log_warn("dav: %s: damaged at byte %zu; the rest is dropped", p->file, off);
			return;
		}
		r += used;
		for (i = 0; i < 4; i++) {
			f[i] = xstrndup(r, l[i]);
			r += l[i];
		}
		push(p, f[0], f[1], f[2], f[3]);
		for (i = 0; i < 4; i++)
			free(f[i]);
		off += (size_t)used + total + 1;
	}
}

struct dav_props *dav_props_open(const char *file)
{
	struct dav_props *p = xcalloc(1, sizeof(*p));
	struct buf b = BUF_INIT;

	p->file = xstrdup(file);
	pthread_mutex_init(&p->lock, NULL);
	if (read_file(file, &b) < 0) {
		if (errno != ENOENT) {
			log_error("dav: %s: %s", file, strerror(errno));
			buf_release(&b);
			dav_props_free(p);
			return NULL;
		}
	} else {
		load(p, b.ptr ? b.ptr : "", b.len);
	}
	buf_release(&b);
	return p;
}

void dav_props_free(struct dav_props *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++)
		prop_release(&p->v[i]);
	free(p->v);
	free(p->file);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* Writes the store to its file durably (under the lock). 0 or -1 (logged). */
static int save(struct dav_props *p)
{
	struct buf b = BUF_INIT, tmp = BUF_INIT, dir = BUF_INIT;
	const char *slash = strrchr(p->file, '/');
	int fd = -1, dfd = -1, rc = -1;
	size_t i;

	for (i = 0; i < p->n; i++) {
		const struct dav_prop *q = &p->v[i];
		buf_addf(&b, "%zu %zu %zu %zu\n", strlen(q->path), strlen(q->ns), strlen(q->name),
			 strlen(q->xml));
		buf_adds(&b, q->path);
		buf_adds(&b, q->ns);
		buf_adds(&b, q->name);
		buf_adds(&b, q->xml);
		buf_addc(&b, '\n');
	}
	if (slash)
		buf_add(&dir, p->file, (size_t)(slash - p->file));
	else
		buf_adds(&dir, ".");
	buf_addf(&tmp, "%s/.davprops-%ld", dir.ptr, (long)getpid());
	fd = open(tmp.ptr, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write_fd(fd, b.ptr, b.len) < 0 || fsync(fd) < 0) {
		log_error("dav: %s: %s", tmp.ptr, strerror(errno));
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		log_error("dav: %s: %s", tmp.ptr, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp.ptr, p->file) < 0) {
		log_error("dav: %s: %s", p->file, strerror(errno));
		goto out;
	}
	dfd = open(dir.ptr, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0) {
		log_error("dav: %s: %s", dir.ptr, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd); /* already failing */
	if (rc < 0)
		unlink(tmp.ptr);
	if (dfd >= 0)
		close(dfd);
	buf_release(&b);
	buf_release(&tmp);
	buf_release(&dir);
	return rc;
}

void dav_props_each(struct dav_props *p, const char *path,
		    void (*fn)(const struct dav_prop *prop, void *ctx), void *ctx)
{
	size_t i;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->n; i++)
		if (strcmp(p->v[i].path, path) == 0)
			fn(&p->v[i], ctx);
	pthread_mutex_unlock(&p->lock);
}

static ssize_t find(struct dav_props *p, const char *path, const char *ns, const char *name)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (strcmp(p->v[i].path, path) == 0 && strcmp(p->v[i].ns, ns) == 0 &&
		    strcmp(p->v[i].name, name) == 0)
			return (ssize_t)i;
	return -1;
}

/* A deep copy of the store's array, to put back when a save fails. */
static struct dav_prop *snapshot(const struct dav_props *p)
{
	struct dav_prop *v = xcalloc(p->n + 1, sizeof(*v));
	size_t i;

	for (i = 0; i < p->n; i++) {
		v[i].path = xstrdup(p->v[i].path);
		v[i].ns = xstrdup(p->v[i].ns);
		v[i].name = xstrdup(p->v[i].name);
		v[i].xml = xstrdup(p->v[i].xml);
	}
	return v;
}

/* Saves; on failure puts back the array old (of n entries), else frees it. Under the lock. */
static int commit(struct dav_props *p, struct dav_prop *old, size_t n)
{
	size_t i;

	if (save(p) == 0) {
		for (i = 0; i < n; i++)
			prop_release(&old[i]);
		free(old);
		return 0;
	}
	for (i = 0; i < p->n; i++)
		prop_release(&p->v[i]);
	free(p->v);
	p->v = old;
	p->n = n;
	p->alloc = n + 1;
	return -1;
}

static void remove_at(struct dav_props *p, size_t i)
{
	prop_release(&p->v[i]);
	p->v[i] = p->v[--p->n];
}

int dav_props_apply(struct dav_props *p, const char *path, const struct dav_prop_change *c,
		    size_t n)
{
	struct dav_prop *old;
	size_t i, nold;
	int rc;

	pthread_mutex_lock(&p->lock);
	old = snapshot(p);
	nold = p->n;
	for (i = 0; i < n; i++) {
		ssize_t at = find(p, path, c[i].ns, c[i].name);
		if (at >= 0)
			remove_at(p, (size_t)at);
		if (c[i].xml)
			push(p, path, c[i].ns, c[i].name, c[i].xml);
	}
	rc = commit(p, old, nold);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/* Frees an array of n properties. */
static void free_array(struct dav_prop *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		prop_release(&v[i]);
	free(v);
}

/*
 * from's tree: dropped (to NULL), moved (keep 0) or copied (keep 1) to
 * to, whose own properties go (it is replaced). The array is built anew
 * and swapped in only once saved.
 */
static int relocate(struct dav_props *p, const char *from, const char *to, int keep)
{
	struct dav_props next;
	struct buf np = BUF_INIT;
	size_t i, flen = strlen(from);
	int changed = 0, rc = 0;

	memset(&next, 0, sizeof(next));
	next.file = p->file;
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->n; i++) {
		const struct dav_prop *q = &p->v[i];
		int in_from = dav_path_under(q->path, from);
		if (to && dav_path_under(q->path, to) && !in_from) {
			changed = 1;
			continue;
		}
		if (!in_from || keep)
			push(&next, q->path, q->ns, q->name, q->xml);
		if (!in_from)
			continue;
		changed = 1;
		if (to) {
			buf_reset(&np);
			buf_adds(&np, to);
			buf_adds(&np, q->path + flen);
			push(&next, np.ptr, q->ns, q->name, q->xml);
		}
	}
	if (changed && (rc = save(&next)) == 0) {
		free_array(p->v, p->n);
		p->v = next.v;
		p->n = next.n;
		p->alloc = next.alloc;
	} else {
		free_array(next.v, next.n);
	}
	pthread_mutex_unlock(&p->lock);
	buf_release(&np);
	return rc;
}

int dav_props_move(struct dav_props *p, const char *from, const char *to)
{
	return relocate(p, from, to, 0);
}

int dav_props_copy(struct dav_props *p, const char *from, const char *to)
{
	return relocate(p, from, to, 1);
}

int dav_props_drop(struct dav_props *p, const char *path)
{
	return relocate(p, path, NULL, 0);
}
