/*
 * resolve.c: name and path indexes over folded keys.
 *
 * Two maps: by name (the folded file name: without ".md" for notes, with
 * its extension for attachments) to a list of candidates, and by path (the
 * folded vault path, ".md" dropped for notes) to one entry. Every lookup is
 * a hash probe; a tail match ("folder/note" anywhere) filters the name's
 * candidates instead of scanning the vault.
 */
#include "resolve.h"
#include "buf.h"
#include "map.h"
#include "unicode.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct cand {
	size_t *ids;  /* encoded: id * 2 + (1 for a file) */
	size_t n;
};

struct resolver {
	const char *const *notes;
	const char *const *files;
	size_t nnotes, nfiles;
	char **keys;          /* owned keys of both maps */
	size_t nkeys, akeys;
	struct map by_name;   /* folded name -> struct cand * */
	struct map by_path;   /* folded path -> (encoded id + 1) as a pointer */
	struct cand *cands;
	size_t ncands, acands;
};

static int has_md(const char *s, size_t n)
{
	return n > 3 && strncasecmp(s + n - 3, ".md", 3) == 0;
}

static char *own_key(struct resolver *r, const char *s, size_t n)
{
	char *k = utf8_fold(s, n);
	ALLOC_GROW(r->keys, r->nkeys + 1, r->akeys);
	r->keys[r->nkeys++] = k;
	return k;
}

static void index_entry(struct resolver *r, const char *path, size_t code, struct map *names)
{
	size_t n = strlen(path), base;
	const char *slash = strrchr(path, '/');
	struct cand *c;
	char *k;

	base = slash ? (size_t)(slash + 1 - path) : 0;
	if (!(code & 1) && has_md(path, n))
		n -= 3;
	k = own_key(r, path, n);
	if (!map_get(&r->by_path, k, strlen(k)))
		map_put(&r->by_path, k, strlen(k), (void *)(uintptr_t)(code + 1));
	k = own_key(r, path + base, n - base);
	c = map_get(names, k, strlen(k));
	if (!c) {
		c = xcalloc(1, sizeof(*c));
		map_put(names, k, strlen(k), c);
	}
	c->ids = xrealloc(c->ids, (c->n + 1) * sizeof(*c->ids));
	c->ids[c->n++] = code;
}

struct resolver *resolver_new(const char *const *notes, size_t nnotes, const char *const *files,
			      size_t nfiles)
{
	struct resolver *r = xcalloc(1, sizeof(*r));
	size_t i;

	r->notes = notes;
	r->files = files;
	r->nnotes = nnotes;
	r->nfiles = nfiles;
	for (i = 0; i < nnotes; i++)
		index_entry(r, notes[i], i * 2, &r->by_name);
	for (i = 0; i < nfiles; i++)
		index_entry(r, files[i], i * 2 + 1, &r->by_name);
	return r;
}

void resolver_free(struct resolver *r)
{
	size_t i = 0;
	void *v;

	if (!r)
		return;
	while (map_next(&r->by_name, &i, NULL, NULL, &v)) {
		struct cand *c = v;
		free(c->ids);
		free(c);
	}
	map_release(&r->by_name);
	map_release(&r->by_path);
	for (i = 0; i < r->nkeys; i++)
		free(r->keys[i]);
	free(r->keys);
	free(r);
}

static const char *code_path(const struct resolver *r, size_t code)
{
	return code & 1 ? r->files[code / 2] : r->notes[code / 2];
}

static size_t dir_len(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? (size_t)(slash - path) : 0;
}

static size_t depth(const char *p)
{
	size_t d = 0;
	for (; *p; p++)
		d += *p == '/';
	return d;
}

/* Is a a better pick than b for a link from the folder fromdir? */
static int better(const char *a, const char *b, const char *from, size_t fromdir)
{
	int a_here = dir_len(a) == fromdir && strncmp(a, from, fromdir) == 0;
	int b_here = dir_len(b) == fromdir && strncmp(b, from, fromdir) == 0;
	size_t da, db, la, lb;

	if (a_here != b_here)
		return a_here;
	da = depth(a);
	db = depth(b);
	if (da != db)
		return da < db;
	la = strlen(a);
	lb = strlen(b);
	if (la != lb)
		return la < lb;
	return strcmp(a, b) < 0;
}

static enum resolve_kind found(size_t code, size_t *id)
{
	*id = code / 2;
	return code & 1 ? RESOLVE_FILE : RESOLVE_NOTE;
}

/* Exact path lookup of a folded key: a file first when it has that name, then a note. */
static int by_path(const struct resolver *r, const char *key, size_t *code)
{
	size_t n = strlen(key);
	void *v;

	if (has_md(key, n)) {
		v = map_get(&r->by_path, key, n - 3);
		if (v && !(((uintptr_t)v - 1) & 1)) {
			*code = (uintptr_t)v - 1;
			return 1;
		}
	}
	v = map_get(&r->by_path, key, n);
	if (v) {
		*code = (uintptr_t)v - 1;
		return 1;
	}
	return 0;
}

/* Joins dir and rel, applying "." and ".." segments; NULL when it climbs out of the vault. */
static char *join(const char *dir, size_t dirlen, const char *rel)
{
	struct buf out = BUF_INIT;
	const char *p = rel;

	buf_add(&out, dir, dirlen);
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 1 && p[0] == '.') {
			/* stay */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			char *slash;
			if (!out.len) {
				buf_release(&out);
				return NULL;
			}
			slash = strrchr(out.ptr, '/');
			buf_setlen(&out, slash ? (size_t)(slash - out.ptr) : 0);
		} else if (n) {
			if (out.len)
				buf_addc(&out, '/');
			buf_add(&out, p, n);
		}
		p += n;
		if (*p)
			p++;
	}
	return buf_detach(&out, NULL);
}

enum resolve_kind resolver_find(const struct resolver *r, const char *from, const char *target,
				size_t *id)
{
	char *t = utf8_fold(target, strlen(target)), *key = NULL;
	const char *p = t;
	size_t fromdir = dir_len(from), code = 0, tl;
	enum resolve_kind kind = RESOLVE_NONE;
	struct cand *c;
	char *ffrom = utf8_fold(from, strlen(from));

	while (*p == ' ')
		p++;
	tl = strlen(p);
	while (tl && (p[tl - 1] == ' ' || p[tl - 1] == '/'))
		tl--;
	t[p - t + (ptrdiff_t)tl] = '\0';
	if (!*p)
		goto out;

	if (strncmp(p, "./", 2) == 0 || strncmp(p, "../", 3) == 0) {
		key = join(ffrom, fromdir, p);
		if (key && by_path(r, key, &code))
			kind = found(code, id);
		goto out;
	}
	while (*p == '/')
		p++;
	if (strchr(p, '/')) {
		const char *base = strrchr(p, '/') + 1;
		size_t bl = strlen(base), i, best = 0;
		int have = 0;

		if (by_path(r, p, &code)) {
			kind = found(code, id);
			goto out;
		}
		key = join(ffrom, fromdir, p);
		if (key && by_path(r, key, &code)) {
			kind = found(code, id);
			goto out;
		}
		/* the tail of a longer path: filter the base name's candidates */
		c = map_get(&r->by_name, base, bl);
		if (!c && has_md(base, bl))
			c = map_get(&r->by_name, base, bl - 3);
		for (i = 0; c && i < c->n; i++) {
			const char *cp = code_path(r, c->ids[i]);
			char *fp = utf8_fold(cp, strlen(cp));
			size_t fl = strlen(fp), pl = strlen(p);
			int match;

			if (!(c->ids[i] & 1) && has_md(fp, fl) && !has_md(p, pl))
				fl -= 3;
			match = fl > pl && fp[fl - pl - 1] == '/' && strncmp(fp + fl - pl, p, pl) == 0;
			free(fp);
			if (match && (!have || better(cp, code_path(r, best), from, fromdir))) {
				best = c->ids[i];
				have = 1;
			}
		}
		if (have)
			kind = found(best, id);
		goto out;
	}

	/* a bare name: an attachment by its full name first, then a note */
	tl = strlen(p);
	c = map_get(&r->by_name, p, tl);
	if (c) {
		size_t i, best = SIZE_MAX;
		int files_only = 0;
		for (i = 0; i < c->n; i++)
			files_only |= (int)(c->ids[i] & 1);
		for (i = 0; i < c->n; i++) {
			if (files_only && !(c->ids[i] & 1))
				continue;
			if (best == SIZE_MAX ||
			    better(code_path(r, c->ids[i]), code_path(r, best), from, fromdir))
				best = c->ids[i];
		}
		kind = found(best, id);
	} else if (has_md(p, tl) && (c = map_get(&r->by_name, p, tl - 3))) {
		size_t i, best = SIZE_MAX;
		for (i = 0; i < c->n; i++) {
			if (c->ids[i] & 1)
				continue;
			if (best == SIZE_MAX ||
			    better(code_path(r, c->ids[i]), code_path(r, best), from, fromdir))
				best = c->ids[i];
		}
		if (best != SIZE_MAX)
			kind = found(best, id);
	}
out:
	free(key);
	free(t);
	free(ffrom);
	return kind;
}
