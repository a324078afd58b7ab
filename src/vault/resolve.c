/*
 * resolve.c: name and path indexes over folded keys.
 *
 * Two maps of candidate lists: by name (the folded file name: without
 * ".md" for notes, with its extension for attachments) and by path (the
 * folded vault path, ".md" dropped for notes). Every lookup is a hash
 * probe and a walk over the few entries sharing a key; a tail match
 * ("folder/note" anywhere) filters the name's candidates instead of
 * scanning the vault.
 */
#include "vault/resolve.h"
#include "util/buf.h"
#include "util/map.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct entry {
	char *path;            /* as given */
	char *fold;            /* folded path (".md" kept) */
	enum resolve_kind kind;
	void *item;
};

struct cand {
	char *key;             /* owned: the map's key */
	struct entry **v;
	size_t n, alloc;
};

struct resolver {
	struct map by_name;    /* folded name -> struct cand * */
	struct map by_path;    /* folded path -> struct cand * */
};

static int has_md(const char *s, size_t n)
{
	return n > 3 && strncasecmp(s + n - 3, ".md", 3) == 0;
}

struct resolver *resolver_new(void)
{
	return xcalloc(1, sizeof(struct resolver));
}

static void free_cands(struct map *m, int free_entries)
{
	size_t i = 0, k;
	void *v;

	while (map_next(m, &i, NULL, NULL, &v)) {
		struct cand *c = v;
		for (k = 0; free_entries && k < c->n; k++) {
			free(c->v[k]->path);
			free(c->v[k]->fold);
			free(c->v[k]);
		}
		free(c->v);
		free(c->key);
		free(c);
	}
	map_release(m);
}

void resolver_free(struct resolver *r)
{
	if (!r)
		return;
	free_cands(&r->by_name, 0);
	free_cands(&r->by_path, 1); /* every entry is in exactly one path list */
	free(r);
}

/* The name and path keys of an entry, as offsets into its folded path. */
static void keys(const struct entry *e, size_t *name_start, size_t *len)
{
	const char *slash = strrchr(e->fold, '/');

	*len = strlen(e->fold);
	if (e->kind == RESOLVE_NOTE && has_md(e->fold, *len))
		*len -= 3;
	*name_start = slash ? (size_t)(slash + 1 - e->fold) : 0;
}

static void cand_add(struct map *m, const char *key, size_t len, struct entry *e)
{
	struct cand *c = map_get(m, key, len);

	if (!c) {
		c = xcalloc(1, sizeof(*c));
		c->key = xstrndup(key, len);
		map_put(m, c->key, len, c);
	}
	ALLOC_GROW(c->v, c->n + 1, c->alloc);
	c->v[c->n++] = e;
}

static struct entry *cand_remove(struct map *m, const char *key, size_t len, void *item)
{
	struct cand *c = map_get(m, key, len);
	struct entry *e = NULL;
	size_t k;

	if (!c)
		return NULL;
	for (k = 0; k < c->n; k++) {
		if (c->v[k]->item == item) {
			e = c->v[k];
			memmove(&c->v[k], &c->v[k + 1], (c->n - k - 1) * sizeof(*c->v));
			c->n--;
			break;
		}
	}
	if (!c->n) {
		map_remove(m, key, len);
		free(c->v);
		free(c->key);
		free(c);
	}
	return e;
}

void resolver_add(struct resolver *r, const char *path, enum resolve_kind kind, void *item)
{
	struct entry *e = xcalloc(1, sizeof(*e));
	size_t name, len;

	e->path = xstrdup(path);
	e->fold = utf8_fold(path, strlen(path));
	e->kind = kind;
	e->item = item;
	keys(e, &name, &len);
	cand_add(&r->by_path, e->fold, len, e);
	cand_add(&r->by_name, e->fold + name, len - name, e);
}

void resolver_remove(struct resolver *r, const char *path, enum resolve_kind kind, void *item)
{
	struct entry probe, *e;
	size_t name, len;

	probe.fold = utf8_fold(path, strlen(path));
	probe.kind = kind;
	keys(&probe, &name, &len);
	cand_remove(&r->by_name, probe.fold + name, len - name, item);
	e = cand_remove(&r->by_path, probe.fold, len, item);
	if (e) {
		free(e->path);
		free(e->fold);
		free(e);
	}
	free(probe.fold);
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

/* Is a a better pick than b for a link from the folder of from? */
static int better(const struct entry *a, const struct entry *b, const char *from, size_t fromdir)
{
	int a_here = dir_len(a->path) == fromdir && strncmp(a->path, from, fromdir) == 0;
	int b_here = dir_len(b->path) == fromdir && strncmp(b->path, from, fromdir) == 0;
	size_t da, db, la, lb;

	if (a_here != b_here)
		return a_here;
	da = depth(a->path);
	db = depth(b->path);
	if (da != db)
		return da < db;
	la = strlen(a->path);
	lb = strlen(b->path);
	if (la != lb)
		return la < lb;
	return strcmp(a->path, b->path) < 0;
}

/* The best entry of a list, of the wanted kind (RESOLVE_NONE: any), or NULL. */
static const struct entry *pick(const struct cand *c, enum resolve_kind want, const char *from)
{
	const struct entry *best = NULL;
	size_t k, fromdir = dir_len(from);

	for (k = 0; c && k < c->n; k++) {
		if (want != RESOLVE_NONE && c->v[k]->kind != want)
			continue;
		if (!best || better(c->v[k], best, from, fromdir))
			best = c->v[k];
	}
	return best;
}

/* Exact path lookup of a folded key: an attachment by that name first, then a note. */
static const struct entry *by_path(const struct resolver *r, const char *key, const char *from)
{
	size_t n = strlen(key);
	const struct cand *c = map_get(&r->by_path, key, n);
	const struct entry *e;

	if (has_md(key, n)) {
		const struct cand *notes = map_get(&r->by_path, key, n - 3);
		if ((e = pick(notes, RESOLVE_NOTE, from)))
			return e;
	}
	if ((e = pick(c, RESOLVE_FILE, from)))
		return e;
	return pick(c, RESOLVE_NOTE, from);
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

static enum resolve_kind found(const struct entry *e, void **item)
{
	if (!e)
		return RESOLVE_NONE;
	*item = e->item;
	return e->kind;
}

/* A path's tail: entries named like its last segment whose folded path ends with it. */
static const struct entry *by_tail(const struct resolver *r, const char *p, const char *from)
{
	const char *base = strrchr(p, '/') + 1;
	size_t bl = strlen(base), pl = strlen(p), k, fromdir = dir_len(from);
	const struct cand *c = map_get(&r->by_name, base, bl);
	const struct entry *best = NULL;

	if (!c && has_md(base, bl))
		c = map_get(&r->by_name, base, bl - 3);
	for (k = 0; c && k < c->n; k++) {
		const struct entry *e = c->v[k];
		size_t fl = strlen(e->fold);

		if (e->kind == RESOLVE_NOTE && has_md(e->fold, fl) && !has_md(p, pl))
			fl -= 3;
		if (fl > pl && e->fold[fl - pl - 1] == '/' && strncmp(e->fold + fl - pl, p, pl) == 0 &&
		    (!best || better(e, best, from, fromdir)))
			best = e;
	}
	return best;
}

enum resolve_kind resolver_find(const struct resolver *r, const char *from, const char *target,
				void **item)
{
	char *t = utf8_fold(target, strlen(target)), *ffrom = utf8_fold(from, strlen(from));
	char *key = NULL;
	const char *p = t;
	size_t fromdir = dir_len(from), tl;
	const struct entry *e = NULL;

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
		if (key)
			e = by_path(r, key, from);
		/*
		 * A relative path that misses (a vault opened one folder higher
		 * than it was written in, "../" past the root) falls back to its
		 * tail, as Obsidian's lenient lookup does: "../../images/x.png"
		 * finds "docs/images/x.png".
		 */
		while (!e && (strncmp(p, "./", 2) == 0 || strncmp(p, "../", 3) == 0))
			p = strchr(p, '/') + 1;
		if (!e && strchr(p, '/'))
			e = by_tail(r, p, from);
		else if (!e && *p)
			e = pick(map_get(&r->by_name, p, strlen(p)), RESOLVE_FILE, from);
		goto out;
	}
	if (*p == '/') {
		/*
		 * From the vault's root, whatever folder the link is in: exact,
		 * or broken. Falling back to the name would link the note
		 * beside it that the author wrote the '/' to avoid.
		 */
		while (*p == '/')
			p++;
		e = by_path(r, p, from);
		goto out;
	}
	if (strchr(p, '/')) {
		e = by_path(r, p, from);
		if (!e && (key = join(ffrom, fromdir, p)))
			e = by_path(r, key, from);
		if (!e)
			e = by_tail(r, p, from);
		goto out;
	}

	/* a bare name: an attachment by its full name first, then a note */
	tl = strlen(p);
	{
		const struct cand *c = map_get(&r->by_name, p, tl);
		e = pick(c, RESOLVE_FILE, from);
		if (!e)
			e = pick(c, RESOLVE_NOTE, from);
		if (!e && has_md(p, tl))
			e = pick(map_get(&r->by_name, p, tl - 3), RESOLVE_NOTE, from);
	}
out:
	free(key);
	free(t);
	free(ffrom);
	return found(e, item);
}

char *resolve_name_key(const char *target)
{
	const char *slash = strrchr(target, '/');
	const char *base = slash ? slash + 1 : target;
	size_t n = strlen(base);

	while (n && base[n - 1] == ' ')
		n--;
	while (n && *base == ' ')
		base++, n--;
	if (has_md(base, n))
		n -= 3;
	return utf8_fold(base, n);
}
