/*
 * export.c: writing a snapshot to a folder (export.h says what is written).
 *
 * Two steps. Collecting makes the list of outputs, each a file relative to
 * the folder with where its bytes come from (a page's identity or gzip
 * bytes, an attachment on disk, or bytes made here) and a hash of them; no
 * bytes are copied. Writing then goes through the list on several threads,
 * skipping (incremental) the files the manifest shows with the same hash,
 * removes what the last manifest had and this one has not, and writes the
 * new manifest last (a run that fails keeps the old one: the next run
 * writes whatever it cannot vouch for).
 *
 * Rejected: comparing with the bytes on disk (reads the whole export to
 * write a few files) and file times (an export is the snapshot's bytes,
 * not the vault's times).
 */
#include "cmd/export.h"
#include "cmd/export-int.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/files.h"
#include "util/log.h"
#include "util/parallel.h"
#include "util/xalloc.h"
#include "vault/vault.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int export_safe_key(const char *key)
{
	const char *p = key;

	if (*p != '/')
		return 0;
	while (*p == '/') {
		const char *seg = p + 1;
		size_t n = strcspn(seg, "/");
		if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return 0;
		if (memchr(seg, '\\', n))
			return 0;
		p = seg + n;
	}
	return 1;
}

char *export_path(const struct page *p)
{
	struct buf b = BUF_INIT;
	const char *key = p->path + 1;
	size_t len = p->path_len - 1;

	if (p->kind == PAGE_NOTE || p->kind == PAGE_REDIRECT ||
	    (p->kind == PAGE_GENERATED && strncmp(p->content_type, "text/html", 9) == 0)) {
		if (!len || key[len - 1] == '/') {
			buf_add(&b, key, len);
			buf_adds(&b, "index.html");
		} else {
			buf_add(&b, key, len);
			buf_adds(&b, ".html");
		}
	} else if (p->kind == PAGE_NOT_FOUND) {
		buf_adds(&b, "404.html");
	} else {
		buf_add(&b, key, len);
	}
	return buf_detach(&b, NULL);
}

int export_mkdirs(const char *path)
{
	char *p = xstrdup(path), *s;
	int ret = 0;

	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			ret = log_error("cannot create folder %s: %s", p, strerror(errno));
			break;
		}
		*s = '/';
	}
	free(p);
	return ret;
}

static int copy_file(const char *from, const char *to, size_t *bytes)
{
	struct buf data = BUF_INIT;
	int ret;

	if (read_file(from, &data) < 0) {
		buf_release(&data);
		return log_error("cannot read %s: %s", from, strerror(errno));
	}
	ret = write_file(to, data.ptr, data.len);
	*bytes += data.len;
	buf_release(&data);
	return ret;
}

void export_redirect_html(const struct page *p, struct buf *out)
{
	buf_adds(out, "<!doctype html>\n<meta charset=\"utf-8\">\n<title>Moved</title>\n"
		      "<link rel=\"canonical\" href=\"");
	buf_adds_html(out, p->location);
	buf_adds(out, "\">\n<meta http-equiv=\"refresh\" content=\"0; url=");
	buf_adds_html(out, p->location);
	buf_adds(out, "\">\n<p>Moved to <a href=\"");
	buf_adds_html(out, p->location);
	buf_adds(out, "\">");
	buf_adds_html(out, p->location);
	buf_adds(out, "</a>.</p>\n");
}

/* ---- the list ------------------------------------------------------------------ */

void export_add(struct export_list *l, const char *rel, const struct page *p, enum export_rep rep,
		char *buf, size_t len)
{
	struct export_output *o;
	size_t rl = strlen(rel);

	if (map_get(&l->by_rel, rel, rl)) {
		free(buf);
		return;
	}
	if (l->n == l->alloc) {
		l->alloc = l->alloc ? 2 * l->alloc : 256;
		l->v = xrealloc(l->v, l->alloc * sizeof(*l->v));
	}
	o = &l->v[l->n++];
	memset(o, 0, sizeof(*o));
	o->rel = xstrdup(rel);
	o->p = p;
	o->rep = rep;
	o->buf = buf;
	o->len = len;
	if (rep == REP_BUF)
		hash_etag(buf, len, o->hash);
	else
		memcpy(o->hash, rep == REP_GZ ? p->gz_etag : p->etag, ETAG_SIZE);
	map_put(&l->by_rel, o->rel, rl, (void *)(uintptr_t)l->n);
}

void export_add_page(struct export_list *l, const char *base, const struct page *p)
{
	struct buf rel = BUF_INIT, html = BUF_INIT;
	char *path;

	if (!export_safe_key(p->path) && p->kind != PAGE_NOT_FOUND) {
		log_warn("not exporting %s: it would leave the export folder", p->path);
		return;
	}
	path = export_path(p);
	buf_adds(&rel, base);
	buf_adds(&rel, path);
	if (p->kind == PAGE_FILE) {
		export_add(l, rel.ptr, p, REP_FILE, NULL, 0);
	} else if (p->kind == PAGE_REDIRECT) {
		size_t len;
		export_redirect_html(p, &html);
		len = html.len;
		export_add(l, rel.ptr, p, REP_BUF, buf_detach(&html, NULL), len);
	} else if (page_bytes(p)) {
		export_add(l, rel.ptr, p, REP_BODY, NULL, 0);
		if (p->gz) {
			buf_adds(&rel, ".gz");
			export_add(l, rel.ptr, p, REP_GZ, NULL, 0);
		}
	}
	free(path);
	buf_release(&rel);
	buf_release(&html);
}

static void list_release(struct export_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].rel);
		free(l->v[i].buf);
	}
	free(l->v);
	map_release(&l->by_rel);
}

/* ---- the manifest ------------------------------------------------------------------ */

#define MANIFEST ".quire-export"

/* rel -> hash of the last export (both in one allocation per line: "hash\0rel"). */
static void read_manifest(const char *dir, struct map *m, struct buf *data)
{
	struct buf path = BUF_INIT;
	char *line, *next;

	buf_addf(&path, "%s/" MANIFEST, dir);
	if (read_file(path.ptr, data) < 0) {
		buf_release(&path);
		return;
	}
	for (line = data->ptr; line && *line; line = next) {
		char *sp = strchr(line, ' '), *nl = strchr(line, '\n');
		next = nl ? nl + 1 : NULL;
		if (!sp || !nl || sp > nl)
			continue;
		*sp = '\0';
		*nl = '\0';
		map_put(m, sp + 1, (size_t)(nl - sp - 1), line);
	}
	buf_release(&path);
}

static int cmp_rel(const void *a, const void *b)
{
	return strcmp((*(const struct export_output *const *)a)->rel,
		      (*(const struct export_output *const *)b)->rel);
}

static int write_manifest(const char *dir, const struct export_list *l)
{
	const struct export_output **sorted = xcalloc(l->n + 1, sizeof(*sorted));
	struct buf path = BUF_INIT, b = BUF_INIT;
	size_t i;
	int ret;

	for (i = 0; i < l->n; i++)
		sorted[i] = &l->v[i];
	qsort(sorted, l->n, sizeof(*sorted), cmp_rel);
	for (i = 0; i < l->n; i++)
		buf_addf(&b, "%s %s\n", sorted[i]->hash, sorted[i]->rel);
	buf_addf(&path, "%s/" MANIFEST, dir);
	ret = write_file(path.ptr, b.ptr, b.len);
	free(sorted);
	buf_release(&path);
	buf_release(&b);
	return ret;
}

/* ---- writing --------------------------------------------------------------------- */

struct job {
	const struct export_list *l;
	const struct map *old;     /* the last manifest */
	const char *dir;
	int incremental;
	char *written;             /* one flag per output */
	struct export_stats *st;   /* one per output: no sharing between threads */
	atomic_int failed;
};

static int write_output(const struct export_output *o, const char *path, size_t *bytes)
{
	const char *data;
	size_t len;

	if (export_mkdirs(path) < 0)
		return -1;
	if (o->rep == REP_FILE)
		return copy_file(o->p->file, path, bytes);
	if (o->rep == REP_BUF) {
		data = o->buf;
		len = o->len;
	} else if (o->rep == REP_GZ) {
		data = o->p->gz;
		len = o->p->gz_len;
	} else {
		data = page_bytes(o->p);
		len = o->p->body_len;
	}
	if (!data || write_file(path, data, len) < 0)
		return -1;
	*bytes += len;
	return 0;
}

static void export_one(void *arg, size_t i)
{
	struct job *j = arg;
	const struct export_output *o = &j->l->v[i];
	struct buf path = BUF_INIT;
	const char *was;

	if (atomic_load(&j->failed))
		return;
	buf_addf(&path, "%s/%s", j->dir, o->rel);
	was = j->incremental ? map_gets(j->old, o->rel) : NULL;
	if (was && strcmp(was, o->hash) == 0 && access(path.ptr, F_OK) == 0) {
		j->st[i].unchanged = 1;
	} else if (write_output(o, path.ptr, &j->st[i].bytes) < 0) {
		atomic_store(&j->failed, 1);
	} else {
		j->st[i].files = 1;
		j->written[i] = 1;
	}
	buf_release(&path);
}

/* Removes what the last export wrote and this one does not, and folders left empty. */
static size_t remove_gone(const char *dir, const struct map *old, const struct export_list *l,
			  FILE *log)
{
	struct buf path = BUF_INIT;
	const char *rel;
	size_t i = 0, len, n = 0;

	while (map_next(old, &i, &rel, &len, NULL)) {
		char *slash;
		if (map_get(&l->by_rel, rel, len))
			continue;
		buf_reset(&path);
		buf_addf(&path, "/%s", rel);
		if (!export_safe_key(path.ptr))
			continue; /* a manifest edited to point outside the folder */
		buf_reset(&path);
		buf_addf(&path, "%s/%s", dir, rel);
		if (unlink(path.ptr) < 0 && errno != ENOENT) {
			log_warn("cannot remove %s: %s", path.ptr, strerror(errno));
			continue;
		}
		n++;
		if (log)
			fprintf(log, "remove %s\n", rel);
		while ((slash = strrchr(path.ptr, '/')) && slash > path.ptr + strlen(dir)) {
			*slash = '\0';
			if (rmdir(path.ptr) < 0)
				break;
		}
	}
	buf_release(&path);
	return n;
}

int export_site(const struct snapshot *snap, const char *dir, const struct export_options *opt,
		struct export_stats *stats)
{
	static const struct export_options none = { 0, NULL, "" };
	struct export_stats st = { 0, 0, 0, 0 };
	struct export_list l = { NULL, 0, 0, MAP_INIT };
	struct map old = MAP_INIT;
	struct buf root = BUF_INIT, manifest = BUF_INIT;
	struct job j;
	size_t i;
	int ret = -1;

	if (!opt)
		opt = &none;
	buf_addf(&root, "%s/", dir);
	if (export_mkdirs(root.ptr) < 0)
		goto out;
	read_manifest(dir, &old, &manifest);
	export_collect(&l, snap, opt->prefix ? opt->prefix : "");
	j.l = &l;
	j.old = &old;
	j.dir = dir;
	j.incremental = opt->incremental;
	j.written = xcalloc(l.n + 1, 1);
	j.st = xcalloc(l.n + 1, sizeof(*j.st));
	atomic_init(&j.failed, 0);
	/*
	 * Creating a file costs the file system far more than writing its
	 * bytes (ext4 here: ~0.5 ms an open), so files are written from
	 * several threads, which overlaps those waits.
	 */
	parallel_for(l.n, 4, export_one, &j);
	for (i = 0; i < l.n; i++) {
		st.files += j.st[i].files;
		st.bytes += j.st[i].bytes;
		st.unchanged += j.st[i].unchanged;
		if (opt->log && j.written[i] && opt->incremental)
			fprintf(opt->log, "write %s\n", l.v[i].rel);
	}
	if (!atomic_load(&j.failed)) {
		st.removed = remove_gone(dir, &old, &l, opt->log);
		ret = write_manifest(dir, &l);
	}
	free(j.written);
	free(j.st);
out:
	list_release(&l);
	map_release(&old);
	buf_release(&manifest);
	buf_release(&root);
	if (stats)
		*stats = st;
	return ret;
}

int export_snapshot(const struct snapshot *snap, const char *dir, struct export_stats *stats)
{
	return export_site(snap, dir, NULL, stats);
}
