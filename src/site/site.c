/*
 * site.c: the vault as indexes and pages, kept current change by change.
 *
 * site_apply() is the only way notes enter, change or leave. It works in
 * rounds: parse what is marked (in parallel), then, on this thread in path
 * order, see what the new metadata changes (publish state, names, URLs)
 * and mark the notes whose links may now resolve differently; those are
 * parsed in the next round. When nothing new is marked, the marked notes
 * are rendered (in parallel), their contributions (backlinks, mentions,
 * attachment references) updated, the notes whose pages read any of that
 * are composed (in parallel), and the page table is brought up to date.
 *
 * Loading a vault is site_apply() on its root folder from an empty site.
 * The same code builds every page of a fresh load and the few pages of an
 * edit; a test compares the two after each step of a random edit sequence.
 */
#include "site/site.h"
#include "util/clock.h"
#include "util/buf.h"
#include "site/derived.h"
#include "util/gzip.h"
#include "util/hash.h"
#include "site/hosts.h"
#include "util/log.h"
#include "util/parallel.h"
#include "site/render.h"
#include "vault/resolve.h"
#include "search/search.h"
#include "site/theme.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

struct notevec {
	struct site_note **v;
	size_t n, alloc;
};

static void vec_push(struct notevec *v, struct site_note *n)
{
	ALLOC_GROW(v->v, v->n + 1, v->alloc);
	v->v[v->n++] = n;
}

static void vec_remove(struct notevec *v, const struct site_note *n)
{
	size_t i;
	for (i = 0; i < v->n; i++) {
		if (v->v[i] == n) {
			memmove(&v->v[i], &v->v[i + 1], (v->n - i - 1) * sizeof(*v->v));
			v->n--;
			return;
		}
	}
}

/* One site_apply()'s worklists. */
struct work {
	struct notevec parse;     /* to parse in the next round */
	struct notevec parsed;    /* parsed this apply (any round) */
	struct notevec rerender;  /* to render */
	struct notevec recompose; /* to compose (rendered ones too) */
	struct notevec removed;   /* to free at the end */
	struct notevec moved;     /* published notes whose URL changed */
	struct site_file **files; /* attachments added, changed or removed */
	size_t nfiles, afiles;
	struct map names;         /* name keys whose resolution may have changed -> owned key */
	struct map stale_keys;    /* alias keys and old URLs to look at again -> owned key */
	struct map url_groups;    /* bases whose groups must be assigned again -> owned key */
};

/*
 * Gives the heap's free pages back to the system. A load frees the notes'
 * sources, and the search fill their texts, among pages that stay; glibc
 * returns only the top of a heap by itself.
 */
static void heap_trim(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

static char *make_href(const struct site *s, const char *url)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, s->cfg.url_prefix);
	buf_add_urlpath(&b, url, strlen(url));
	return buf_detach(&b, NULL);
}

static void key_add(struct map *m, const char *key)
{
	size_t len = strlen(key);
	if (!map_get(m, key, len)) {
		char *k = xstrndup(key, len);
		map_put(m, k, len, k);
	}
}

static void keys_release(struct map *m)
{
	size_t i = 0;
	void *v;
	while (map_next(m, &i, NULL, NULL, &v))
		free(v);
	map_release(m);
}

/* ---- the page table ------------------------------------------------------ */

static void mark_dirty(struct site *s, const char *key, size_t len)
{
	if (!map_get(&s->dirty, key, len)) {
		char *k = xstrndup(key, len);
		map_put(&s->dirty, k, len, k);
	}
}

/* Puts p in the table (a new reference); the next snapshot will carry it. */
/*
 * Puts p in the table for the next snapshot; an uncompressed page
 * (gzip_later) also waits for site_gzip_pending(), with the path of the
 * note whose page it is (note), or NULL. Every page is made anew and put
 * once, so it waits once.
 */
static void table_put_as(struct site *s, struct page *p, const char *note)
{
	mark_dirty(s, p->path, p->path_len);
	page_unref(map_put(&s->pages, p->path, p->path_len, page_ref(p)));
	if (p->gz_later) {
		ALLOC_GROW(s->gz_pending, s->ngz_pending + 1, s->agz_pending);
		s->gz_pending[s->ngz_pending++] =
			(struct gz_pending){ page_ref(p), note ? xstrdup(note) : NULL };
	}
}

static void table_put(struct site *s, struct page *p)
{
	table_put_as(s, p, NULL);
}

static void table_del(struct site *s, const char *key)
{
	size_t len = strlen(key);
	struct page *old;

	mark_dirty(s, key, len);
	old = map_remove(&s->pages, key, len);
	page_unref(old);
}

void site_page_put(struct site *s, struct page *p)
{
	table_put(s, p);
}

void site_page_del(struct site *s, const char *key)
{
	table_del(s, key);
}

/* ---- notes and files ----------------------------------------------------- */

/* Where path is, or would go, in notes sorted by path. */
static size_t path_index(struct site_note *const *v, size_t n, const char *path)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(v[mid]->note.path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static size_t note_index(const struct site *s, const char *path)
{
	return path_index(s->notes, s->nnotes, path);
}

static size_t file_index(const struct site *s, const char *path)
{
	size_t lo = 0, hi = s->nfiles;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(s->files[mid]->path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct site_note *site_find_note(const struct site *s, const char *path)
{
	return map_gets(&s->note_by_path, path);
}

static struct site_note *note_add(struct site *s, const char *path, const char *disk)
{
	struct site_note *n = xcalloc(1, sizeof(*n));
	size_t at = note_index(s, path);

	n->note.path = xstrdup(path);
	n->disk = xstrdup(disk);
	n->name_key = resolve_name_key(path);
	n->added = 1;
	ALLOC_GROW(s->notes, s->nnotes + 1, s->anotes);
	memmove(&s->notes[at + 1], &s->notes[at], (s->nnotes - at) * sizeof(*s->notes));
	s->notes[at] = n;
	s->nnotes++;
	map_put(&s->note_by_path, n->note.path, strlen(n->note.path), n);
	return n;
}

static void note_unlink(struct site *s, struct site_note *n)
{
	size_t at = note_index(s, n->note.path);

	if (at < s->nnotes && s->notes[at] == n) {
		memmove(&s->notes[at], &s->notes[at + 1], (s->nnotes - at - 1) * sizeof(*s->notes));
		s->nnotes--;
	}
	map_remove(&s->note_by_path, n->note.path, strlen(n->note.path));
}

static void strs_free(char **v, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void note_free(struct site_note *n)
{
	if (!n)
		return;
	note_release(&n->note);
	free(n->disk);
	free(n->name_key);
	free(n->base_url);
	free(n->gbase);
	free(n->url);
	free(n->href);
	render_note_release(n);
	free(n->backlinks);
	strs_free(n->mentions, n->nmentions);
	strs_free(n->aliases, n->naliases);
	page_unref(n->page);
	free(n->old_title);
	strs_free(n->dtags, n->ndtags);
	free(n->durl);
	free(n->dtitle);
	for (size_t i = 0; i < n->nroutes; i++) {
		free(n->routes[i].host);
		free(n->routes[i].path);
	}
	free(n->routes);
	free(n);
}

static struct site_file *file_add(struct site *s, const char *path, const char *disk)
{
	struct site_file *f = xcalloc(1, sizeof(*f));
	size_t at = file_index(s, path);

	f->path = xstrdup(path);
	f->disk = xstrdup(disk);
	f->url = vault_file_url(path);
	f->href = make_href(s, f->url);
	f->added = 1;
	ALLOC_GROW(s->files, s->nfiles + 1, s->afiles);
	memmove(&s->files[at + 1], &s->files[at], (s->nfiles - at) * sizeof(*s->files));
	s->files[at] = f;
	s->nfiles++;
	map_put(&s->file_by_path, f->path, strlen(f->path), f);
	resolver_add(s->resolver, f->path, RESOLVE_FILE, f);
	return f;
}

static void file_free(struct site_file *f)
{
	if (!f)
		return;
	free(f->path);
	free(f->disk);
	free(f->url);
	free(f->href);
	free(f);
}

static struct page *file_page(const struct site *s, const struct site_file *f)
{
	struct page *p = page_new(PAGE_FILE, f->url, strlen(f->url));
	struct buf b = BUF_INIT;
	char id[64];

	buf_addf(&b, "%s/%s", s->vault, f->disk);
	p->file = buf_detach(&b, NULL);
	p->file_size = f->size;
	p->mtime = f->mtime;
	p->content_type = vault_content_type(f->path);
	/* the bytes stay on disk: size and mtime identify this version, as nginx does */
	snprintf(id, sizeof(id), "|%lld|%lld", (long long)f->size, (long long)f->mtime);
	buf_adds(&b, f->path);
	buf_adds(&b, id);
	hash_etag(b.ptr, b.len, p->etag);
	buf_release(&b);
	return p;
}

/* ---- mentions and contributions ------------------------------------------ */

static void mention_add(struct site *s, const char *key, struct site_note *n)
{
	size_t len = strlen(key);
	struct notevec *v = map_get(&s->mentions, key, len);
	char *k;

	if (!v) {
		v = xcalloc(1, sizeof(*v));
		k = xstrndup(key, len);
		/* the key string is stored right after the vector's pointer array owner */
		map_put(&s->mentions, k, len, v);
		vec_push(v, (struct site_note *)(void *)k); /* slot 0 keeps the key alive */
	}
	vec_push(v, n);
}

static void mention_remove(struct site *s, const char *key, struct site_note *n)
{
	size_t len = strlen(key);
	struct notevec *v = map_get(&s->mentions, key, len);
	size_t i;

	if (!v)
		return;
	for (i = 1; i < v->n; i++) {
		if (v->v[i] == n) {
			v->v[i] = v->v[v->n - 1];
			v->n--;
			break;
		}
	}
	if (v->n == 1) {
		char *k = (char *)(void *)v->v[0];
		map_remove(&s->mentions, key, len);
		free(k);
		free(v->v);
		free(v);
	}
}

static void mark_recompose(struct work *w, struct site_note *n)
{
	if (!n->recompose && !n->removed) {
		n->recompose = 1;
		vec_push(&w->recompose, n);
	}
}

/* Takes back what a rendered note gave others: mentions, backlinks, attachment references. */
static void withdraw(struct site *s, struct work *w, struct site_note *n)
{
	size_t k;

	for (k = 0; k < n->nmentions; k++)
		mention_remove(s, n->mentions[k], n);
	strs_free(n->mentions, n->nmentions);
	n->mentions = NULL;
	n->nmentions = 0;
	for (k = 0; k < n->md.nrefs; k++) {
		const struct site_ref *r = &n->refs[k];
		if (r->kind == MD_TARGET_NOTE && n->md.refs[k].kind == MD_REF_LINK && r->target != n) {
			struct site_note *t = r->target;
			size_t i;
			for (i = 0; i < t->nbacklinks; i++) {
				if (t->backlinks[i] == n) {
					memmove(&t->backlinks[i], &t->backlinks[i + 1],
						(t->nbacklinks - i - 1) * sizeof(*t->backlinks));
					t->nbacklinks--;
					mark_recompose(w, t);
					break;
				}
			}
		} else if (r->kind == MD_TARGET_ATTACHMENT) {
			struct site_file *f = r->target;
			if (--f->refs == 0) {
				table_del(s, f->url);
				s->nserved_files--;
			}
		}
	}
	render_note_release(n);
}

/*
 * A note with more references than this keeps a map from target to the
 * kinds of its references (ref_kinds), so that finding the notes that
 * reference a target costs one lookup per mentioning note, not a pass
 * over all its references: otherwise a note linking to every note of the
 * vault makes a load quadratic.
 */
#define REF_SCAN_MAX 32

/* Gives what a freshly rendered note points at to the others. */
static void contribute(struct site *s, struct work *w, struct site_note *n)
{
	struct map named = MAP_INIT;  /* the names mentioned so far */
	struct map linked = MAP_INIT; /* the notes given a backlink so far */
	size_t k, amentions = n->nmentions;

	for (k = 0; k < n->md.nrefs; k++) {
		const struct md_ref *ref = &n->md.refs[k];
		const struct site_ref *r = &n->refs[k];
		char *key;

		if (ref->target[0]) {
			key = resolve_name_key(ref->target);
			if (map_gets(&named, key)) {
				free(key);
			} else {
				mention_add(s, key, n);
				ALLOC_GROW(n->mentions, n->nmentions + 1, amentions);
				n->mentions[n->nmentions++] = key;
				map_put(&named, key, strlen(key), key);
			}
		}
		/*
		 * n is in no backlink list yet (withdraw() took it out of all),
		 * so only its own earlier links to t can have put it there: a
		 * lookup among those, not a pass over t's backlinks, which a
		 * note linked from every other note would make quadratic.
		 */
		if (r->kind == MD_TARGET_NOTE && ref->kind == MD_REF_LINK && r->target != n &&
		    !map_get(&linked, (const char *)&r->target, sizeof(r->target))) {
			struct site_note *t = r->target;
			map_put(&linked, (const char *)&r->target, sizeof(r->target), t);
			ALLOC_GROW(t->backlinks, t->nbacklinks + 1, t->abacklinks);
			t->backlinks[t->nbacklinks++] = n;
			mark_recompose(w, t);
		} else if (r->kind == MD_TARGET_ATTACHMENT) {
			struct site_file *f = r->target;
			if (f->refs++ == 0) {
				struct page *p = file_page(s, f);
				s->nserved_files++;
				table_put(s, p);
				page_unref(p);
			}
		}
	}
	map_release(&named);
	map_release(&linked);
	/* what referrers() asks of a note with many references, without a pass over them */
	if (n->md.nrefs > REF_SCAN_MAX) {
		for (k = 0; k < n->md.nrefs; k++) {
			const void *t = n->refs[k].target;
			uintptr_t kinds;
			if (!t)
				continue;
			kinds = (uintptr_t)map_get(&n->ref_kinds, (const char *)&n->refs[k].target,
						   sizeof(t));
			kinds |= (uintptr_t)1 << n->md.refs[k].kind;
			map_put(&n->ref_kinds, (const char *)&n->refs[k].target, sizeof(t),
				(void *)kinds);
		}
	}
}

/* The notes whose references name key and resolve to t (kind: MD_REF_LINK, _EMBED, or -1 for both). */
static void referrers(const struct site *s, const struct site_note *t, int kind,
		      struct notevec *out)
{
	const struct notevec *v = map_get(&s->mentions, t->name_key, strlen(t->name_key));
	uintptr_t want = kind < 0 ? ~(uintptr_t)0 : (uintptr_t)1 << kind;
	size_t i, k;

	for (i = 1; v && i < v->n; i++) {
		struct site_note *x = v->v[i];
		if (x->md.nrefs > REF_SCAN_MAX) {
			uintptr_t kinds = (uintptr_t)map_get(&x->ref_kinds, (const char *)&t,
							     sizeof(t));
			if (kinds & want)
				vec_push(out, x);
			continue;
		}
		for (k = 0; k < x->md.nrefs; k++) {
			if (x->refs[k].target == t && (kind < 0 || (int)x->md.refs[k].kind == kind)) {
				vec_push(out, x);
				break;
			}
		}
	}
}

/* ---- the steps of an apply ----------------------------------------------- */

static void need_render(struct work *w, struct site_note *n)
{
	if (n->rerender || n->removed)
		return;
	n->rerender = 1;
	vec_push(&w->rerender, n);
	if (!n->reparse) {
		/* the body was dropped after the last render: read the file again */
		n->reparse = 1;
		vec_push(&w->parse, n);
	}
}

static void touch_note(struct work *w, struct site *s, const char *path, const char *disk)
{
	struct site_note *n = site_find_note(s, path);

	if (!n) {
		n = note_add(s, path, disk);
	} else if (strcmp(n->disk, disk) != 0) {
		free(n->disk);
		n->disk = xstrdup(disk);
	}
	n->removed = 0; /* seen gone earlier in this apply, and back since: the last look wins */
	if (!n->reparse) {
		n->reparse = 1;
		vec_push(&w->parse, n);
	}
}

static void touch_file(struct work *w, struct site *s, const char *path, const char *disk,
		       const struct stat *st)
{
	struct site_file *f = map_gets(&s->file_by_path, path);

	if (!f) {
		char *key;
		f = file_add(s, path, disk);
		key = resolve_name_key(f->path);
		key_add(&w->names, key);
		free(key);
	}
	f->seen = s->applies;
	f->removed = 0; /* the last look wins, as for notes */
	if (f->added || f->size != st->st_size || f->mtime != st->st_mtime) {
		f->size = st->st_size;
		f->mtime = st->st_mtime;
		if (!f->changed) {
			f->changed = 1;
			ALLOC_GROW(w->files, w->nfiles + 1, w->afiles);
			w->files[w->nfiles++] = f;
		}
	}
}

static void remove_note(struct work *w, struct site_note *n)
{
	n->reparse = 0; /* found earlier in this apply, gone since: the last look wins */
	if (n->removed)
		return;
	n->removed = 1;
	vec_push(&w->removed, n);
}

/*
 * One apply may look at a path more than once (a note and its folder both
 * reported, a file deleted and restored between two looks), and each look
 * sets the note's marks; the lists are brought in line with the marks
 * once all are made, so that a note is either parsed or removed, never
 * both, and listed once. A note that was both would be unlinked from the
 * indexes, parsed back into the name index, and freed with it still there.
 */
static void settle(struct notevec *v, int removed)
{
	size_t i, kept = 0;

	for (i = 0; i < v->n; i++) {
		struct site_note *n = v->v[i];
		int on = removed ? n->removed : n->reparse;
		if (on && !n->seen) {
			n->seen = 1;
			v->v[kept++] = n;
		}
	}
	v->n = kept;
	for (i = 0; i < kept; i++)
		v->v[i]->seen = 0;
}

static void remove_file(struct work *w, struct site_file *f)
{
	if (f->removed)
		return;
	f->removed = 1;
	if (!f->changed) {
		f->changed = 1;
		ALLOC_GROW(w->files, w->nfiles + 1, w->afiles);
		w->files[w->nfiles++] = f;
	}
}

/*
 * Everything known under a folder prefix (vault path + '/', or "" for
 * all) that this apply has not found on disk is gone.
 */
static void remove_under(struct work *w, struct site *s, const char *prefix)
{
	size_t len = strlen(prefix), i;

	for (i = note_index(s, prefix); i < s->nnotes; i++) {
		struct site_note *n = s->notes[i];
		if (strncmp(n->note.path, prefix, len) != 0)
			break;
		if (!n->reparse)
			remove_note(w, n);
	}
	for (i = file_index(s, prefix); i < s->nfiles; i++) {
		struct site_file *f = s->files[i];
		if (strncmp(f->path, prefix, len) != 0)
			break;
		if (f->seen != s->applies)
			remove_file(w, f);
	}
}

static void collect(struct work *w, struct site *s, const char *rel_in)
{
	const char *rel = rel_in;
	struct stat st;
	char *path;
	struct site_note *n;
	struct site_file *f;

	while (rel[0] == '/' || (rel[0] == '.' && rel[1] == '/'))
		rel += rel[0] == '/' ? 1 : 2;
	path = utf8_nfc(rel, strlen(rel));
	switch (vault_stat(s->vault, &s->cfg, rel, &st)) {
	case VAULT_FILE: {
		struct buf prefix = BUF_INIT;
		if (vault_is_note_path(path))
			touch_note(w, s, path, rel);
		else
			touch_file(w, s, path, rel, &st);
		/* a folder replaced by a file of the same name */
		buf_addf(&prefix, "%s/", path);
		remove_under(w, s, prefix.ptr);
		buf_release(&prefix);
		break;
	}
	case VAULT_FOLDER: {
		struct vault_scan scan = VAULT_SCAN_INIT;
		struct buf prefix = BUF_INIT;
		size_t i;

		/* a file replaced by a folder of the same name */
		if ((n = site_find_note(s, path)))
			remove_note(w, n);
		if ((f = map_gets(&s->file_by_path, path)))
			remove_file(w, f);
		vault_scan_under(s->vault, rel, &s->cfg, &scan, &s->diags);
		for (i = 0; i < scan.n; i++) {
			const struct vault_file *vf = &scan.files[i];
			struct stat fst;
			fst.st_size = vf->size;
			fst.st_mtime = vf->mtime;
			if (vf->is_note)
				touch_note(w, s, vf->path, vf->disk);
			else
				touch_file(w, s, vf->path, vf->disk, &fst);
		}
		/* what was known below this folder and is no longer there */
		if (path[0])
			buf_addf(&prefix, "%s/", path);
		remove_under(w, s, prefix.ptr);
		buf_release(&prefix);
		vault_scan_release(&scan);
		break;
	}
	case VAULT_MISSING: {
		struct buf prefix = BUF_INIT;
		if ((n = site_find_note(s, path)))
			remove_note(w, n);
		if ((f = map_gets(&s->file_by_path, path)))
			remove_file(w, f);
		buf_addf(&prefix, "%s/", path);
		remove_under(w, s, prefix.ptr);
		buf_release(&prefix);
		break;
	}
	}
	free(path);
}

struct par {
	struct site *s;
	struct site_note **v;
};

static void parse_one(void *arg, size_t i)
{
	struct par *c = arg;
	struct site *s = c->s;
	struct site_note *n = c->v[i];
	struct buf full = BUF_INIT, src = BUF_INIT;
	struct stat st;
	char *path = n->note.path;
	time_t mtime = 0;

	buf_addf(&full, "%s/%s", s->vault, n->disk);
	diag_forget(&s->diags, path, DIAG_PARSE);
	if (read_file(full.ptr, &src) < 0)
		diag_addk(&s->diags, DIAG_PARSE, DIAG_ERROR, path, 0, "cannot read: %s",
			  strerror(errno));
	else if (stat(full.ptr, &st) == 0)
		mtime = st.st_mtime;
	n->hash = hash64(src.ptr, src.len);
	n->note.path = NULL; /* keep the path string: the index maps use it as their key */
	note_release(&n->note);
	note_parse(&n->note, path, src.ptr, src.len, mtime, &s->diags);
	free(n->note.path);
	n->note.path = path;
	buf_release(&full);
	buf_release(&src);
}

static void render_one(void *arg, size_t i)
{
	struct par *c = arg;
	diag_forget(&c->s->diags, c->v[i]->note.path, DIAG_LINK);
	render_note_body(c->s, c->v[i]);
}

static int cmp_backlink(const void *a, const void *b)
{
	const struct site_note *x = *(struct site_note *const *)a, *y = *(struct site_note *const *)b;
	int c = strcasecmp(x->note.title, y->note.title);
	return c ? c : strcmp(x->note.path, y->note.path);
}

static void compose_one(void *arg, size_t i)
{
	struct par *c = arg;
	struct site_note *n = c->v[i];

	if (n->nbacklinks > 1)
		qsort(n->backlinks, n->nbacklinks, sizeof(*n->backlinks), cmp_backlink);
	render_note_page(c->s, n);
	/*
	 * No other page being composed reads n's fragment: it moves to the
	 * new page now, so that a load never holds every fragment beside
	 * every page.
	 */
	if (!n->embedded)
		render_note_adopt(n);
}

/*
 * Marks the notes whose fragments composing the pages of live reads,
 * besides each page's own: the notes they embed, transitively. Those
 * keep their fragment where it is until every page is composed.
 */
static void mark_embedded(const struct notevec *live, struct notevec *marked)
{
	size_t i, k;

	for (i = 0; i < live->n + marked->n; i++) {
		const struct site_note *x = i < live->n ? live->v[i] : marked->v[i - live->n];
		for (k = 0; k < x->md.nsplices; k++) {
			const struct site_ref *r = &x->refs[x->md.splices[k].ref];
			struct site_note *t = r->target;
			if (r->kind == MD_TARGET_NOTE && !t->embedded) {
				t->embedded = 1;
				vec_push(marked, t);
			}
		}
	}
}

/* Parsing replaces the title: keep what the diff needs, once per apply. */
static void before_parse(struct site_note *n)
{
	if (n->parsed)
		return;
	free(n->old_title);
	n->old_title = n->note.title && !n->added ? xstrdup(n->note.title) : NULL;
}

/*
 * URLs. Published notes that ask for the same URL (their base URL, from
 * the path or the slug) form a group, kept in path order: the first gets
 * the URL, the others "-2", "-3"... skipping any suffixed URL that is some
 * note's base URL (a note asking for "/a-2" by name wins it over the
 * second note asking for "/a"). A suffix of one base can never be a suffix
 * of another ("/a-2-2" splits only as "/a-2" and 2), so groups do not
 * interfere but through base URLs, and a change reassigns only the groups
 * it touched: the group a note leaves, the one it joins, and the group
 * whose suffixes a base URL that appears or vanishes could be. A load
 * assigns every group once; an edit, a handful, whatever the vault's size.
 */
struct url_group {
	char *base;                /* the map's key */
	struct site_note **v;      /* in path order */
	size_t n, alloc;
};

/* "/a-3" -> "/a" (and "/a-3/" -> "/a/"): the base whose suffix url could be, or 0. */
static int suffix_base(const char *url, struct buf *out)
{
	size_t len = strlen(url), end = len, d;
	int slash = len > 1 && url[len - 1] == '/';

	end -= (size_t)slash;
	for (d = end; d > 0 && url[d - 1] >= '0' && url[d - 1] <= '9'; d--)
		;
	if (d == end || d < 2 || url[d - 1] != '-' || url[d] == '0' ||
	    (end - d == 1 && url[d] == '1'))
		return 0;
	buf_reset(out);
	buf_add(out, url, d - 1);
	if (slash)
		buf_addc(out, '/');
	return 1;
}

/* The groups to assign again in this apply: base, and the base whose suffix it could be. */
static void group_touched(struct site *s, struct work *w, const char *base, int came_or_went)
{
	struct buf b = BUF_INIT;

	key_add(&w->url_groups, base);
	if (came_or_went && suffix_base(base, &b) && map_get(&s->url_groups, b.ptr, b.len))
		key_add(&w->url_groups, b.ptr);
	buf_release(&b);
}

/* Moves n from the group of its registered base (n->gbase) to the group of base (NULL: none). */
static void group_move(struct site *s, struct work *w, struct site_note *n, const char *base)
{
	struct url_group *g;
	size_t at;

	if (n->gbase && base && strcmp(n->gbase, base) == 0)
		return;
	if (n->gbase && (g = map_gets(&s->url_groups, n->gbase))) {
		at = path_index(g->v, g->n, n->note.path);
		if (at < g->n && g->v[at] == n) {
			memmove(&g->v[at], &g->v[at + 1], (g->n - at - 1) * sizeof(*g->v));
			g->n--;
		}
		group_touched(s, w, g->base, g->n == 0);
		if (!g->n) {
			map_remove(&s->url_groups, g->base, strlen(g->base));
			free(g->base);
			free(g->v);
			free(g);
		}
	}
	free(n->gbase);
	n->gbase = NULL;
	if (!base)
		return;
	if (!(g = map_gets(&s->url_groups, base))) {
		g = xcalloc(1, sizeof(*g));
		g->base = xstrdup(base);
		map_put(&s->url_groups, g->base, strlen(g->base), g);
	}
	at = path_index(g->v, g->n, n->note.path);
	ALLOC_GROW(g->v, g->n + 1, g->alloc);
	memmove(&g->v[at + 1], &g->v[at], (g->n - at) * sizeof(*g->v));
	g->v[at] = n;
	g->n++;
	n->gbase = xstrdup(base);
	group_touched(s, w, g->base, g->n == 1);
}

/* Gives n the URL url; what showed its old one is rendered or composed again. */
static void set_url(struct site *s, struct work *w, struct site_note *n, const char *url)
{
	struct notevec refs = { 0 };
	size_t k;

	if (n->url && strcmp(n->url, url) == 0)
		return;
	if (n->url) {
		table_del(s, n->url);
		key_add(&w->stale_keys, n->url);
		/* notes linking here carry the old URL in their fragments, and
		 * so does the note itself in its [[#Heading]] links */
		need_render(w, n);
		referrers(s, n, -1, &refs);
		for (k = 0; k < refs.n; k++)
			need_render(w, refs.v[k]);
		/* and notes it links to list it, with its URL, as a backlink */
		for (k = 0; k < n->md.nrefs; k++)
			if (n->refs[k].kind == MD_TARGET_NOTE)
				mark_recompose(w, n->refs[k].target);
		free(refs.v);
	}
	free(n->url);
	free(n->href);
	n->url = xstrdup(url);
	n->href = make_href(s, n->url);
	mark_recompose(w, n);
	vec_push(&w->moved, n);
	/* its alias redirects point at the old URL */
	for (k = 0; k < n->naliases; k++)
		key_add(&w->stale_keys, n->aliases[k]);
}

static void assign_group(struct site *s, struct work *w, const struct url_group *g)
{
	size_t len = strlen(g->base), i, k = 1;
	int slash = len > 1 && g->base[len - 1] == '/';
	struct buf alt = BUF_INIT;

	for (i = 0; i < g->n; i++) {
		struct site_note *n = g->v[i];
		diag_forget(&s->diags, n->note.path, DIAG_URL);
		if (i == 0) {
			set_url(s, w, n, g->base);
			continue;
		}
		do {
			buf_reset(&alt);
			buf_add(&alt, g->base, len - (size_t)slash);
			buf_addf(&alt, "-%zu%s", ++k, slash ? "/" : "");
		} while (map_get(&s->url_groups, alt.ptr, alt.len));
		diag_addk(&s->diags, DIAG_URL, DIAG_WARNING, n->note.path, 0,
			  "URL %s is already taken by %s; this note is served at %s", g->base,
			  g->v[0]->note.path, alt.ptr);
		set_url(s, w, n, alt.ptr);
	}
	buf_release(&alt);
}

/* Assigns the groups this apply touched. */
static void assign_urls(struct site *s, struct work *w)
{
	size_t i = 0;
	void *v;

	while (map_next(&w->url_groups, &i, NULL, NULL, &v)) {
		const struct url_group *g = map_gets(&s->url_groups, v);
		if (g)
			assign_group(s, w, g);
	}
	keys_release(&w->url_groups);
}

/*
 * The URL a published note asks for, before collisions: from its slug or
 * its path. A slug may not claim one of quire's own URLs (an error; the
 * note keeps its path's URL); a path that leads to one is served beside it
 * (a warning naming where).
 */
static char *base_url_of(struct site *s, const struct site_note *n)
{
	char *url = vault_note_url(n->note.path, n->note.slug), *other;
	const char *why;

	if (n->note.slug && (why = vault_url_reserved(url))) {
		diag_addk(&s->diags, DIAG_PARSE, DIAG_ERROR, n->note.path, 0,
			  "slug '%s' refused: %s is reserved (%s)", n->note.slug, url, why);
		free(url);
		url = vault_note_url(n->note.path, NULL);
	}
	if ((why = vault_url_reserved(url))) {
		other = vault_url_unreserved(url);
		diag_addk(&s->diags, DIAG_PARSE, DIAG_WARNING, n->note.path, 0,
			  "URL %s is reserved (%s); this note is served at %s", url, why, other);
		free(url);
		url = other;
	}
	return url;
}

/* What a parsed note's new metadata changes for others. */
static void after_parse(struct site *s, struct work *w, struct site_note *n)
{
	int published = note_is_published(&n->note, s->cfg.publish == PUBLISH_EXPLICIT);
	char *base = published ? base_url_of(s, n) : NULL;

	if (!n->indexed) {
		resolver_add(s->resolver, n->note.path, RESOLVE_NOTE, n);
		n->indexed = 1;
	}
	if (!n->parsed) {
		n->parsed = 1;
		vec_push(&w->parsed, n);
	}
	if (published != n->published) {
		key_add(&w->names, n->name_key);
		s->npublished += published ? 1 : (size_t)-1;
	}
	group_move(s, w, n, base);
	if (n->md.nrefs || n->nmentions)
		withdraw(s, w, n);
	if (n->published && !published) {
		/* notes linking here re-resolve through the name event above */
		if (n->url)
			table_del(s, n->url), key_add(&w->stale_keys, n->url);
		free(n->url);
		free(n->href);
		n->url = n->href = NULL;
		page_unref(n->page);
		n->page = NULL;
		render_note_release(n); /* its fragment's pieces hold that page too */
		free(n->backlinks);
		n->backlinks = NULL;
		n->nbacklinks = n->abacklinks = 0;
	}
	n->published = published;
	if (published) {
		if (!n->rerender) {
			n->rerender = 1;
			vec_push(&w->rerender, n);
		}
	}
	free(n->base_url);
	n->base_url = base;
}

static void unlink_removed(struct site *s, struct work *w, struct site_note *n)
{
	size_t k;

	if (n->published) {
		/* notes linking here re-resolve through the name event below */
		s->npublished--;
		group_move(s, w, n, NULL);
		withdraw(s, w, n);
		if (n->url)
			table_del(s, n->url), key_add(&w->stale_keys, n->url);
	}
	key_add(&w->names, n->name_key);
	if (n->indexed)
		resolver_remove(s->resolver, n->note.path, RESOLVE_NOTE, n);
	for (k = 0; k < DIAG_OTHER; k++)
		diag_forget(&s->diags, n->note.path, (enum diag_kind)k);
	note_unlink(s, n);
}

/* Re-resolves the notes mentioning a changed name; those whose links now differ render again. */
static void resolve_names(struct site *s, struct work *w)
{
	size_t i = 0, j, k;
	void *v;

	while (map_next(&w->names, &i, NULL, NULL, &v)) {
		const char *key = v;
		const struct notevec *m = map_get(&s->mentions, key, strlen(key));
		struct notevec todo = { 0 };

		for (j = 1; m && j < m->n; j++)
			vec_push(&todo, m->v[j]);
		for (j = 0; j < todo.n; j++) {
			struct site_note *x = todo.v[j];
			if (x->rerender || x->removed)
				continue;
			for (k = 0; k < x->md.nrefs; k++) {
				struct site_ref r;
				render_resolve(s, x, &x->md.refs[k], &r);
				if (r.kind != x->refs[k].kind || r.target != x->refs[k].target) {
					need_render(w, x);
					break;
				}
			}
		}
		free(todo.v);
	}
	keys_release(&w->names);
}

/* ---- moves ------------------------------------------------------------------ */

struct moved {
	char *path;           /* the map's key: where the note lives now */
	char **urls;          /* URLs it had before */
	size_t n;
};

/*
 * Records that the note at from now lives at to, having had the URL url:
 * that URL, and every URL that led to from, now redirect to to. The move
 * is added to persist when not NULL (the caller appends it to the moves
 * file); the file is replayed in order at start-up, so the redirects
 * outlive a restart.
 */
static void record_move(struct site *s, const char *url, const char *from, const char *to,
			struct buf *persist)
{
	struct moved *src = map_gets(&s->moved, from), *dst = map_gets(&s->moved, to);
	size_t k;

	if (!dst) {
		dst = xcalloc(1, sizeof(*dst));
		dst->path = xstrdup(to);
		map_put(&s->moved, dst->path, strlen(dst->path), dst);
	}
	if (src && src != dst) {
		map_remove(&s->moved, from, strlen(from));
		dst->urls = xrealloc(dst->urls, (dst->n + src->n + 1) * sizeof(*dst->urls));
		for (k = 0; k < src->n; k++)
			dst->urls[dst->n++] = src->urls[k];
		free(src->urls);
		free(src->path);
		free(src);
	}
	for (k = 0; k < dst->n && strcmp(dst->urls[k], url) != 0; k++)
		;
	if (k == dst->n) {
		dst->urls = xrealloc(dst->urls, (dst->n + 1) * sizeof(*dst->urls));
		dst->urls[dst->n++] = xstrdup(url);
	}
	if (persist)
		buf_addf(persist, "%s\t%s\t%s\n", url, from, to);
}

static void load_moves(struct site *s)
{
	struct buf data = BUF_INIT;
	char *line, *save = NULL;

	if (read_file(s->moves_file, &data) < 0) {
		buf_release(&data);
		return;
	}
	for (line = strtok_r(data.ptr, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *from = strchr(line, '\t'), *to = from ? strchr(from + 1, '\t') : NULL;
		if (!to)
			continue;
		*from++ = '\0';
		*to++ = '\0';
		record_move(s, line, from, to, NULL);
	}
	buf_release(&data);
}

static int cmp_note_hash(const void *a, const void *b)
{
	const struct site_note *x = *(struct site_note *const *)a, *y = *(struct site_note *const *)b;
	return (x->hash > y->hash) - (x->hash < y->hash);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/*
 * A published note deleted and one added with the same bytes in one
 * change: a move. The added notes are sorted by hash, so pairing costs
 * O((removed + added) log added), not their product (a folder of
 * thousands renamed at once). Among notes with the same bytes, one with
 * the same file name is the better guess: a folder renamed moves every
 * file under its own name. The moves go to the moves file in one write.
 */
static void find_moves(struct site *s, struct work *w)
{
	struct site_note **added = xcalloc(w->parsed.n + 1, sizeof(*added));
	struct buf lines = BUF_INIT;
	size_t i, j, na = 0;

	for (j = 0; j < w->parsed.n; j++)
		if (w->parsed.v[j]->added && w->parsed.v[j]->published)
			added[na++] = w->parsed.v[j];
	if (na > 1)
		qsort(added, na, sizeof(*added), cmp_note_hash);
	for (i = 0; i < w->removed.n; i++) {
		struct site_note *r = w->removed.v[i], *pick = NULL;
		size_t lo = 0, hi = na;
		if (!r->url)
			continue;
		while (lo < hi) { /* the first added note with r's hash */
			size_t mid = lo + (hi - lo) / 2;
			if (added[mid]->hash < r->hash)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (j = lo; j < na && added[j]->hash == r->hash; j++) {
			if (added[j]->seen)
				continue;
			if (!pick)
				pick = added[j];
			if (strcmp(base_name(added[j]->note.path), base_name(r->note.path)) == 0) {
				pick = added[j];
				break;
			}
		}
		if (pick) {
			pick->seen = 1; /* one old note per new one */
			record_move(s, r->url, r->note.path, pick->note.path, &lines);
		}
	}
	for (j = 0; j < na; j++)
		added[j]->seen = 0;
	if (lines.len && s->moves_file && append_line_durable(s->moves_file, lines.ptr) < 0)
		log_warn("cannot record %s in %s: %s", "moves", s->moves_file, strerror(errno));
	buf_release(&lines);
	free(added);
}

/* Alias URLs of a note: each alias as a note name in the note's folder, and its former URLs. */
static void alias_urls(struct site *s, const struct site_note *n, int report, char ***out,
		       size_t *nout)
{
	const char *slash = strrchr(n->note.path, '/'), *why;
	const struct moved *m = map_gets(&s->moved, n->note.path);
	size_t k;

	*out = NULL;
	*nout = 0;
	for (k = 0; m && k < m->n; k++) {
		if (strcmp(m->urls[k], n->url) == 0)
			continue;
		*out = xrealloc(*out, (*nout + 1) * sizeof(**out));
		(*out)[(*nout)++] = xstrdup(m->urls[k]);
	}
	for (k = 0; k < n->note.aliases.n; k++) {
		struct buf from = BUF_INIT;
		char *url;
		if (slash)
			buf_add(&from, n->note.path, (size_t)(slash - n->note.path + 1));
		buf_adds(&from, n->note.aliases.v[k]);
		buf_adds(&from, ".md");
		url = vault_note_url(from.ptr, NULL);
		buf_release(&from);
		if ((why = vault_url_reserved(url))) {
			if (report)
				diag_addk(&s->diags, DIAG_PARSE, DIAG_ERROR, n->note.path, 0,
					  "alias '%s' refused: %s is reserved (%s)",
					  n->note.aliases.v[k], url, why);
			free(url);
			continue;
		}
		if (strcmp(url, n->url) == 0) {
			free(url);
			continue;
		}
		*out = xrealloc(*out, (*nout + 1) * sizeof(**out));
		(*out)[(*nout)++] = url;
	}
}

static void claim(struct site *s, const char *key, struct site_note *n, int add)
{
	size_t len = strlen(key);
	struct notevec *v = map_get(&s->claims, key, len);

	if (add) {
		size_t i;
		if (!v) {
			v = xcalloc(1, sizeof(*v));
			vec_push(v, (struct site_note *)(void *)xstrndup(key, len));
			map_put(&s->claims, (char *)(void *)v->v[0], len, v);
		}
		/* keep claimants in path order: the first one wins, as in a full load */
		for (i = 1; i < v->n && strcmp(v->v[i]->note.path, n->note.path) < 0; i++)
			;
		ALLOC_GROW(v->v, v->n + 1, v->alloc);
		memmove(&v->v[i + 1], &v->v[i], (v->n - i) * sizeof(*v->v));
		v->v[i] = n;
		v->n++;
	} else if (v) {
		vec_remove(v, n);
		if (v->n == 1) {
			char *k = (char *)(void *)v->v[0];
			map_remove(&s->claims, key, len);
			free(k);
			free(v->v);
			free(v);
		}
	}
}

/* Brings the alias claims of a note up to date with its aliases and publish state. */
static void update_claims(struct site *s, struct work *w, struct site_note *n)
{
	char **now = NULL;
	size_t nnow = 0, k;

	for (k = 0; k < n->naliases; k++) {
		claim(s, n->aliases[k], n, 0);
		key_add(&w->stale_keys, n->aliases[k]);
	}
	strs_free(n->aliases, n->naliases);
	n->aliases = NULL;
	n->naliases = 0;
	if (n->published && !n->removed)
		alias_urls(s, n, 1, &now, &nnow);
	for (k = 0; k < nnow; k++) {
		claim(s, now[k], n, 1);
		key_add(&w->stale_keys, now[k]);
	}
	n->aliases = now;
	n->naliases = nnow;
}

/* Sets the page at an alias URL: a redirect for the first claimant, unless a real page is there. */
static void refresh_key(struct site *s, const char *key)
{
	size_t len = strlen(key);
	struct page *cur = map_get(&s->pages, key, len), *p;
	const struct notevec *v = map_get(&s->claims, key, len);
	const struct site_note *to;

	if (cur && cur->kind != PAGE_REDIRECT)
		return; /* a note or generated page wins over an alias */
	if (!v || v->n < 2) {
		if (cur)
			table_del(s, key);
		return;
	}
	to = v->v[1];
	if (cur && strcmp(cur->location, to->href) == 0)
		return;
	p = page_new(PAGE_REDIRECT, key, len);
	p->location = xstrdup(to->href);
	table_put(s, p);
	page_unref(p);
}

/*
 * Whether n's plain text is still wanted: the search index is being
 * filled (or will be) and the fill has not put n's row yet.
 */
static int text_wanted(const struct site *s, const struct site_note *n)
{
	return s->keep_text && (!s->search_fill || strcmp(n->note.path, s->search_fill) > 0);
}

/* Puts a note's row, or deletes the row of a note that left (its old URL). */
static int index_note(struct site *s, struct site_note *n)
{
	struct buf headings = BUF_INIT, tags = BUF_INIT;
	int listed = n->published && !n->removed, ret = 0;
	size_t k;

	if (n->durl && (!listed || strcmp(n->durl, n->url) != 0))
		ret = search_delete(s->search, n->durl);
	if (listed && ret == 0) {
		for (k = 0; k < n->md.nheadings; k++) {
			buf_adds(&headings, n->md.headings[k].text);
			buf_addc(&headings, '\n');
		}
		for (k = 0; k < n->note.tags.n; k++)
			buf_addf(&tags, "%s ", n->note.tags.v[k]);
		for (k = 0; k < n->md.ntags; k++)
			buf_addf(&tags, "%s ", n->md.tags[k]);
		ret = search_put(s->search, n->url, n->note.title, headings.ptr, tags.ptr,
				 n->md.text.ptr);
	}
	buf_release(&headings);
	buf_release(&tags);
	return ret;
}

/* ---- apply ----------------------------------------------------------------- */

static void run_parallel(struct site *s, struct notevec *v, void (*fn)(void *, size_t))
{
	struct par c = { s, v->v };
	parallel_for(v->n, s->threads, fn, &c);
}

int site_apply(struct site *s, const char *const *paths, size_t npaths)
{
	struct work w;
	double t0 = clock_ms();
	size_t i, k, done = 0;

	memset(&w, 0, sizeof(w));
	s->applies++;
	for (i = 0; i < npaths; i++)
		collect(&w, s, paths[i]);
	settle(&w.parse, 0);
	settle(&w.removed, 1);

	/* attachments that appear, vanish or change */
	for (i = 0; i < w.nfiles; i++) {
		struct site_file *f = w.files[i];
		const char *base = strrchr(f->path, '/');
		base = base ? base + 1 : f->path;
		if (f->removed) {
			char *key = resolve_name_key(f->path);
			key_add(&w.names, key);
			free(key);
			resolver_remove(s->resolver, f->path, RESOLVE_FILE, f);
			map_remove(&s->file_by_path, f->path, strlen(f->path));
			{
				size_t at = file_index(s, f->path);
				if (at < s->nfiles && s->files[at] == f) {
					memmove(&s->files[at], &s->files[at + 1],
						(s->nfiles - at - 1) * sizeof(*s->files));
					s->nfiles--;
				}
			}
		} else if (f->refs > 0) {
			struct page *p = file_page(s, f);
			table_put(s, p);
			page_unref(p);
		}
	}
	for (i = 0; i < w.removed.n; i++)
		unlink_removed(s, &w, w.removed.v[i]);

	/* rounds of parsing until no more notes need their bodies */
	s->phase_ms[0] = clock_ms();
	while (w.parse.n > done || w.names.len) {
		struct notevec round = { 0 };
		for (i = done; i < w.parse.n; i++) {
			before_parse(w.parse.v[i]);
			vec_push(&round, w.parse.v[i]);
		}
		done = w.parse.n;
		run_parallel(s, &round, parse_one);
		for (i = 0; i < round.n; i++)
			after_parse(s, &w, round.v[i]);
		free(round.v);
		/* URLs depend on path order, publish state and slugs only */
		if (w.url_groups.len)
			assign_urls(s, &w);
		resolve_names(s, &w);
	}

	/* render, then hand out backlinks, mentions and attachment references */
	s->phase_ms[1] = clock_ms();
	s->phase_ms[0] = s->phase_ms[1] - s->phase_ms[0];
	for (i = 0; i < w.rerender.n; i++)
		if (w.rerender.v[i]->md.nrefs || w.rerender.v[i]->nmentions)
			withdraw(s, &w, w.rerender.v[i]);
	{
		struct notevec live = { 0 };
		for (i = 0; i < w.rerender.n; i++)
			if (w.rerender.v[i]->published && !w.rerender.v[i]->removed)
				vec_push(&live, w.rerender.v[i]);
		run_parallel(s, &live, render_one);
		for (i = 0; i < live.n; i++) {
			contribute(s, &w, live.v[i]);
			mark_recompose(&w, live.v[i]);
		}
		s->nrendered = live.n;
		free(live.v);
	}

	/* notes listed as backlinks under a new title, and embedders, transitively */
	for (i = 0; i < w.parsed.n; i++) {
		struct site_note *n = w.parsed.v[i];
		if (n->published && n->old_title && strcmp(n->old_title, n->note.title) != 0) {
			for (k = 0; k < n->md.nrefs; k++)
				if (n->refs[k].kind == MD_TARGET_NOTE)
					mark_recompose(&w, n->refs[k].target);
			mark_recompose(&w, n);
		}
	}
	{
		struct notevec queue = { 0 };
		for (i = 0; i < w.recompose.n; i++) {
			w.recompose.v[i]->seen = 1;
			vec_push(&queue, w.recompose.v[i]);
		}
		for (i = 0; i < queue.n; i++) {
			struct notevec emb = { 0 };
			referrers(s, queue.v[i], MD_REF_EMBED, &emb);
			for (k = 0; k < emb.n; k++) {
				if (!emb.v[k]->seen) {
					emb.v[k]->seen = 1;
					mark_recompose(&w, emb.v[k]);
					vec_push(&queue, emb.v[k]);
				}
			}
			free(emb.v);
		}
		for (i = 0; i < queue.n; i++)
			queue.v[i]->seen = 0;
		free(queue.v);
	}

	/* compose, and bring the page table up to date */
	s->phase_ms[2] = clock_ms();
	s->phase_ms[1] = s->phase_ms[2] - s->phase_ms[1];
	{
		struct notevec live = { 0 }, embedded = { 0 };
		for (i = 0; i < w.recompose.n; i++)
			if (w.recompose.v[i]->published && !w.recompose.v[i]->removed)
				vec_push(&live, w.recompose.v[i]);
		mark_embedded(&live, &embedded);
		run_parallel(s, &live, compose_one);
		for (i = 0; i < live.n; i++) {
			render_note_adopt(live.v[i]);
			table_put_as(s, live.v[i]->page, live.v[i]->note.path);
		}
		for (i = 0; i < embedded.n; i++)
			embedded.v[i]->embedded = 0;
		s->ncomposed = live.n;
		free(live.v);
		free(embedded.v);
	}
	s->phase_ms[2] = clock_ms() - s->phase_ms[2];
	if (w.removed.n && w.parsed.n)
		find_moves(s, &w);
	for (i = 0; i < w.parsed.n; i++)
		update_claims(s, &w, w.parsed.v[i]);
	for (i = 0; i < w.removed.n; i++)
		update_claims(s, &w, w.removed.v[i]);
	{
		size_t it = 0;
		void *v;
		while (map_next(&w.stale_keys, &it, NULL, NULL, &v))
			refresh_key(s, v);
	}
	{
		/* tag pages, folder listings, sitemaps and feeds that list what changed */
		struct notevec changed = { 0 };
		for (i = 0; i < w.parsed.n; i++)
			vec_push(&changed, w.parsed.v[i]);
		for (i = 0; i < w.removed.n; i++)
			vec_push(&changed, w.removed.v[i]);
		for (i = 0; i < w.moved.n; i++)
			vec_push(&changed, w.moved.v[i]);
		/* the search rows of what changed (derived.c still knows the old URLs) */
		if (s->search && changed.n) {
			/*
			 * Staged in memory here, written by site_search_flush() after
			 * the snapshot is live: the index need not delay the pages.
			 */
			int ok = s->search_tx || search_begin(s->search) == 0;
			s->search_tx = ok;
			for (k = 0; ok && k < changed.n; k++)
				ok = index_note(s, changed.v[k]) == 0;
			if (!ok) {
				search_rollback(s->search);
				s->search_tx = 0;
				log_error("search index not updated; it catches up on the next change");
			}
		}
		for (i = 0; i < w.rerender.n; i++)
			if (!text_wanted(s, w.rerender.v[i]))
				buf_release(&w.rerender.v[i]->md.text);
		double t1 = clock_ms();
		derived_update(s, changed.v, changed.n);
		s->derived_ms = clock_ms() - t1;
		t1 = clock_ms();
		hosts_update(s, changed.v, changed.n);
		s->hosts_ms = clock_ms() - t1;
		free(changed.v);
	}

	/* done: clear the marks, free what left */
	for (i = 0; i < w.parse.n; i++)
		w.parse.v[i]->reparse = 0;
	for (i = 0; i < w.rerender.n; i++)
		w.rerender.v[i]->rerender = 0;
	for (i = 0; i < w.recompose.n; i++)
		w.recompose.v[i]->recompose = 0;
	for (i = 0; i < w.parsed.n; i++) {
		w.parsed.v[i]->added = 0;
		w.parsed.v[i]->parsed = 0;
		free(w.parsed.v[i]->old_title);
		w.parsed.v[i]->old_title = NULL;
	}
	for (i = 0; i < w.nfiles; i++) {
		w.files[i]->changed = 0;
		w.files[i]->added = 0;
		if (w.files[i]->removed)
			file_free(w.files[i]);
	}
	for (i = 0; i < w.removed.n; i++)
		note_free(w.removed.v[i]);
	s->napplied = w.parsed.n;
	free(w.parse.v);
	free(w.parsed.v);
	free(w.rerender.v);
	free(w.recompose.v);
	free(w.removed.v);
	free(w.moved.v);
	free(w.files);
	keys_release(&w.names);
	keys_release(&w.stale_keys);
	keys_release(&w.url_groups);
	s->load_ms = clock_ms() - t0;
	return 0;
}

/* ---- search ----------------------------------------------------------------- */

int site_search_flush(struct site *s)
{
	if (!s->search || !s->search_tx)
		return 0;
	s->search_tx = 0;
	if (search_commit(s->search) < 0) {
		search_rollback(s->search);
		return log_error("search rows not written; they catch up on the next change");
	}
	return 0;
}

static int keep_url(void *ctx, const char *url)
{
	const struct page *p = map_gets(&((struct site *)ctx)->pages, url);
	return p && p->kind == PAGE_NOTE;
}

int site_search_start(struct site *s, struct search *search)
{
	int ok;

	s->search = search;
	s->search_fill = xstrdup("");
	ok = search_begin(search) == 0 && search_prune(search, keep_url, s) == 0;
	if (!ok || search_commit(search) < 0) {
		search_rollback(search);
		return log_error("cannot prune the search index");
	}
	/* words first: the substring index, most of a fresh fill's work, follows */
	search_defer_substrings(search, 1);
	return 0;
}

int site_search_fill(struct site *s, size_t batch)
{
	size_t i, done = 0;
	int ok;

	/* every note is in the word index: the substring index catches up */
	if (!s->search_fill)
		return s->search ? search_fill_substrings(s->search, batch) : 1;
	/*
	 * The notes array may have changed since the last batch: continue
	 * after the last path filled, not at an index.
	 */
	ok = search_begin(s->search) == 0;
	for (i = note_index(s, s->search_fill); ok && i < s->nnotes && done < batch; i++) {
		struct site_note *n = s->notes[i];
		if (s->search_fill[0] && strcmp(n->note.path, s->search_fill) <= 0)
			continue;
		if (n->published)
			ok = index_note(s, n) == 0;
		/* the row has a copy: the texts go as the fill passes, not all at its end */
		buf_release(&n->md.text);
		done++;
		free(s->search_fill);
		s->search_fill = xstrdup(n->note.path);
	}
	if (!ok || search_commit(s->search) < 0) {
		search_rollback(s->search);
		search_defer_substrings(s->search, 0);
		free(s->search_fill);
		s->search_fill = NULL;
		s->keep_text = 0;
		return log_error("cannot fill the search index");
	}
	if (i < s->nnotes)
		return 0;
	/* filled: the texts kept for it can go; changes from now on go to both indexes */
	search_defer_substrings(s->search, 0);
	free(s->search_fill);
	s->search_fill = NULL;
	s->keep_text = 0;
	for (i = 0; i < s->nnotes; i++)
		buf_release(&s->notes[i]->md.text);
	heap_trim();
	return 0;
}

int site_attach_search(struct site *s, struct search *search, int fresh)
{
	int rc;

	if (site_search_start(s, search) < 0)
		return -1;
	while ((rc = site_search_fill(s, SIZE_MAX)) == 0)
		;
	if (rc < 0)
		return -1;
	if (fresh)
		search_optimize(search);
	return 0;
}

/* ---- set-up --------------------------------------------------------------- */

static const char *asset_type(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (dot && strcmp(dot, ".css") == 0)
		return "text/css; charset=utf-8";
	if (dot && strcmp(dot, ".js") == 0)
		return "text/javascript; charset=utf-8";
	return vault_content_type(name);
}

/* Theme files as immutable pages at content-hashed URLs. */
static void load_assets(struct site *s)
{
	const struct theme_file *f;
	size_t n = 0;

	for (f = theme_files; f->name && n < 5; f++, n++) {
		struct buf url = BUF_INIT;
		const char *dot = strrchr(f->name, '.');
		char hex[17];
		struct page *p;

		hash_hex16(f->data, f->len, hex);
		buf_adds(&url, "/_quire/");
		buf_add(&url, f->name, (size_t)(dot - f->name));
		buf_addf(&url, ".%.10s%s", hex, dot);
		p = page_new(PAGE_ASSET, url.ptr, url.len);
		p->content_type = asset_type(f->name);
		p->immutable = 1;
		page_set_body(p, xmemdup(f->data, f->len), f->len, GZIP_LEVEL);
		table_put(s, p);
		page_unref(p);
		s->asset_urls[n] = make_href(s, url.ptr);
		if (strcmp(f->name, "quire.css") == 0)
			s->layout.css_url = s->asset_urls[n];
		else if (strcmp(f->name, "quire.js") == 0)
			s->layout.js_url = s->asset_urls[n];
		else if (strcmp(f->name, "favicon.svg") == 0)
			s->layout.icon_url = s->asset_urls[n];
		buf_release(&url);
	}
}

static struct page *text_page(enum page_kind kind, const char *path, const char *type,
			      struct buf *content)
{
	struct page *p = page_new(kind, path, strlen(path));
	size_t len;
	char *bytes;

	buf_fit(content);
	bytes = buf_detach(content, &len);

	p->content_type = type;
	page_set_body(p, bytes, len, GZIP_LEVEL);
	return p;
}

/*
 * The headers every response carries: quire's Content-Security-Policy
 * (or quire.yml's csp, or none when that is ""), no MIME sniffing, and no
 * full URLs leaking to other sites.
 */
static char *security_headers(const struct config *cfg)
{
	struct buf b = BUF_INIT;
	char *csp = cfg->csp ? NULL : layout_csp(cfg->frame_src);

	if (csp || cfg->csp[0])
		buf_addf(&b, "Content-Security-Policy: %s\r\n", csp ? csp : cfg->csp);
	buf_adds(&b, "X-Content-Type-Options: nosniff\r\n"
		     "Referrer-Policy: strict-origin-when-cross-origin\r\n");
	free(csp);
	return buf_detach(&b, NULL);
}

struct site *site_new(const char *path, const struct site_options *opt)
{
	struct site *s = xcalloc(1, sizeof(*s));
	struct buf b = BUF_INIT;
	struct page *p;

	s->vault = xstrdup(path);
	diag_list_init(&s->diags);
	s->resolver = resolver_new();
	s->derived = derived_new();
	s->hosts = hosts_new();
	s->keep_text = opt && opt->search;
	s->threads = opt && opt->threads > 0 ? opt->threads : parallel_cpus();
	if (config_load(&s->cfg, path, &s->diags) < 0)
		goto fail;
	if (opt && opt->base_url && config_set_base_url(&s->cfg, opt->base_url) < 0) {
		log_error("--base-url must be an absolute http(s) URL: %s", opt->base_url);
		goto fail;
	}
	{
		struct buf mf = BUF_INIT;
		if (opt && opt->data_dir)
			buf_adds(&mf, opt->data_dir);
		else
			buf_addf(&mf, "%s/.quire", path);
		s->data_dir = xstrdup(mf.ptr);
		buf_adds(&mf, "/moves");
		s->moves_file = buf_detach(&mf, NULL);
		load_moves(s);
	}
	s->layout.title = s->cfg.title;
	s->layout.language = s->cfg.language;
	s->layout.url_prefix = s->cfg.url_prefix;
	s->layout.base_url = s->cfg.base_url;
	s->layout.css_url = s->layout.js_url = s->layout.icon_url = "";
	buf_addf(&b, "%s/_quire/tree.json", s->cfg.url_prefix);
	s->asset_urls[7] = buf_detach(&b, NULL);
	s->layout.tree_url = s->asset_urls[7];
	if (s->cfg.base_url[0]) {
		buf_addf(&b, "%s/rss.xml", s->cfg.url_prefix);
		s->asset_urls[6] = buf_detach(&b, NULL);
		s->layout.feed_url = s->asset_urls[6];
	}
	if (opt && opt->search) {
		buf_addf(&b, "%s/search", s->cfg.url_prefix);
		s->asset_urls[5] = buf_detach(&b, NULL);
		s->layout.search_url = s->asset_urls[5];
	}
	load_assets(s);

	if (s->cfg.robots) {
		buf_adds(&b, s->cfg.robots);
		if (b.len && b.ptr[b.len - 1] != '\n')
			buf_addc(&b, '\n');
	} else {
		buf_adds(&b, "User-agent: *\nAllow: /\n");
		if (s->cfg.base_url[0])
			buf_addf(&b, "Sitemap: %s/sitemap.xml\n", s->cfg.base_url);
	}
	p = text_page(PAGE_GENERATED, "/robots.txt", "text/plain; charset=utf-8", &b);
	table_put(s, p);
	page_unref(p);
	layout_not_found_page(&s->layout, &b);
	s->not_found = text_page(PAGE_NOT_FOUND, "/404.html", "text/html; charset=utf-8", &b);
	s->headers = security_headers(&s->cfg);
	return s;
fail:
	buf_release(&b);
	site_free(s);
	return NULL;
}

struct site *site_load(const char *path, const struct site_options *opt)
{
	struct site *s = site_new(path, opt);
	const char *root = "";
	struct stat st;

	if (!s)
		return NULL;
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
		log_error("cannot read vault %s: %s", path, errno ? strerror(errno) : "not a folder");
		site_free(s);
		return NULL;
	}
	site_apply(s, &root, 1);
	heap_trim();
	return s;
}

struct snapshot *site_snapshot(struct site *s, const struct snapshot *prev)
{
	struct snapshot *snap;
	size_t i = 0;
	void *v;

	if (!prev) {
		snap = snapshot_new(1);
		while (map_next(&s->pages, &i, NULL, NULL, &v))
			snapshot_put(snap, page_ref(v));
		snapshot_set_not_found(snap, page_ref(s->not_found));
	} else {
		snap = snapshot_clone(prev);
		while (map_next(&s->dirty, &i, NULL, NULL, &v)) {
			const char *key = v;
			struct page *p = map_gets(&s->pages, key);
			if (p)
				snapshot_put(snap, page_ref(p));
			else
				snapshot_remove(snap, key, strlen(key));
		}
	}
	keys_release(&s->dirty);
	hosts_snapshot(s, snap);
	snapshot_set_headers(snap, s->headers);
	snap->nnotes = s->npublished;
	snap->nattachments = s->nserved_files;
	snap->load_ms = s->load_ms;
	return snap;
}

void site_stats(const struct site *s, struct site_stats *st)
{
	size_t i, k;

	memset(st, 0, sizeof(*st));
	st->notes = s->nnotes;
	st->attachments = s->nfiles;
	for (i = 0; i < s->nnotes; i++) {
		const struct site_note *n = s->notes[i];
		if (!n->published)
			continue;
		st->published++;
		for (k = 0; k < n->md.nrefs; k++) {
			st->wikilinks += !n->md.refs[k].markdown;
			if (n->md.refs[k].kind == MD_REF_EMBED)
				st->embeds++;
			else
				st->links++;
			if (n->refs[k].kind != MD_TARGET_BROKEN)
				continue;
			if (n->md.refs[k].markdown)
				st->outside++;
			else
				st->broken++;
		}
	}
	for (i = 0; i < s->nfiles; i++)
		st->published_attachments += s->files[i]->refs > 0;
}

static void free_vecmap(struct map *m)
{
	size_t i = 0;
	void *v;

	while (map_next(m, &i, NULL, NULL, &v)) {
		struct notevec *nv = v;
		free((char *)(void *)nv->v[0]);
		free(nv->v);
		free(nv);
	}
	map_release(m);
}

struct gz_job {
	struct gz_pending *v;
	struct page **out;
};

static void gzip_one(void *arg, size_t i)
{
	struct gz_job *j = arg;
	j->out[i] = page_gzipped(j->v[i].page);
}

size_t site_gzip_pending(struct site *s)
{
	struct gz_job j = { s->gz_pending, NULL };
	size_t n = s->ngz_pending, i, live = 0, done = 0;

	if (!n)
		return 0;
	s->gz_pending = NULL;
	s->ngz_pending = s->agz_pending = 0;
	/* the pages still current: a later apply may have replaced some */
	for (i = 0; i < n; i++) {
		struct gz_pending e = j.v[i];
		if (map_get(&s->pages, e.page->path, e.page->path_len) == e.page) {
			j.v[live++] = e;
		} else {
			page_unref(e.page);
			free(e.note);
		}
	}
	j.out = xcalloc(live + 1, sizeof(*j.out));
	parallel_for(live, s->threads, gzip_one, &j);
	for (i = 0; i < live; i++) {
		struct page *p = j.v[i].page, *q = j.out[i];
		struct site_note *t = j.v[i].note ? site_find_note(s, j.v[i].note) : NULL;
		if (q) {
			table_put(s, q);
			/* the note's own references: its page, and its fragment read back from it */
			if (t && t->page == p) {
				page_unref(t->page);
				t->page = page_ref(q);
			}
			if (t && t->frag.page == p) {
				page_unref(t->frag.page);
				t->frag.page = page_ref(q);
			}
			page_unref(q);
			done++;
		}
		page_unref(p);
		free(j.v[i].note);
	}
	free(j.out);
	free(j.v);
	return done;
}

void site_free(struct site *s)
{
	size_t i = 0, gi = 0;
	void *v, *gv;

	if (!s)
		return;
	for (i = 0; i < s->nnotes; i++)
		note_free(s->notes[i]);
	for (i = 0; i < s->nfiles; i++)
		file_free(s->files[i]);
	free(s->notes);
	free(s->files);
	map_release(&s->note_by_path);
	map_release(&s->file_by_path);
	free_vecmap(&s->mentions);
	free_vecmap(&s->claims);
	i = 0;
	while (map_next(&s->moved, &i, NULL, NULL, &v)) {
		struct moved *m = v;
		strs_free(m->urls, m->n);
		free(m->path);
		free(m);
	}
	map_release(&s->moved);
	free(s->moves_file);
	free(s->data_dir);
	free(s->search_fill);
	i = 0;
	while (map_next(&s->pages, &i, NULL, NULL, &v))
		page_unref(v);
	map_release(&s->pages);
	keys_release(&s->dirty);
	for (i = 0; i < s->ngz_pending; i++) {
		page_unref(s->gz_pending[i].page);
		free(s->gz_pending[i].note);
	}
	free(s->gz_pending);
	page_unref(s->not_found);
	for (i = 0; i < 8; i++)
		free(s->asset_urls[i]);
	resolver_free(s->resolver);
	derived_free(s->derived);
	hosts_free(s->hosts);
	config_release(&s->cfg);
	diag_list_release(&s->diags);
	free(s->vault);
	free(s->headers);
	while (map_next(&s->url_groups, &gi, NULL, NULL, &gv)) {
		struct url_group *g = gv;
		free(g->base);
		free(g->v);
		free(g);
	}
	map_release(&s->url_groups);
	free(s);
}
