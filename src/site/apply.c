/*
 * apply.c: site_apply(), one change from paths to pages.
 *
 * It works in rounds: parse what is marked (in parallel), then, on this
 * thread in path order, see what the new metadata changes (publish state,
 * names, URLs) and mark the notes whose links may now resolve differently;
 * those are parsed in the next round. When nothing new is marked, the
 * marked notes are rendered (in parallel), their contributions (backlinks,
 * mentions, attachment references) updated, the notes whose pages read any
 * of that are composed (in parallel), and the page table is brought up to
 * date; derived resources and hosts follow.
 */
#include "search/search.h"
#include "site/derived.h"
#include "site/hosts.h"
#include "site/listing.h"
#include "site/render.h"
#include "site/site.h"
#include "site/site-int.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/gzip.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/parallel.h"
#include "util/unicode.h"
#include "util/xalloc.h"
#include "vault/resolve.h"
#include "vault/vault.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Puts n in the notes array and the path index, at its path. */
void apply_note_link(struct site *s, struct site_note *n)
{
	size_t at = site_note_index(s, n->note.path);

	ALLOC_GROW(s->notes, s->nnotes + 1, s->anotes);
	memmove(&s->notes[at + 1], &s->notes[at], (s->nnotes - at) * sizeof(*s->notes));
	s->notes[at] = n;
	s->nnotes++;
	map_put(&s->note_by_path, n->note.path, strlen(n->note.path), n);
}

static struct site_note *note_add(struct site *s, const char *path, const char *disk)
{
	struct site_note *n = xcalloc(1, sizeof(*n));

	n->note.path = xstrdup(path);
	n->disk = xstrdup(disk);
	n->name_key = resolve_name_key(path);
	n->added = 1;
	apply_note_link(s, n);
	return n;
}

void apply_note_unlink(struct site *s, struct site_note *n)
{
	size_t at = site_note_index(s, n->note.path);

	if (at < s->nnotes && s->notes[at] == n) {
		memmove(&s->notes[at], &s->notes[at + 1], (s->nnotes - at - 1) * sizeof(*s->notes));
		s->nnotes--;
	}
	map_remove(&s->note_by_path, n->note.path, strlen(n->note.path));
}

void site_note_free(struct site_note *n)
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
	listed_free(n->listed);
	free(n->surl);
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
	size_t at = site_file_index(s, path);

	f->path = xstrdup(path);
	f->disk = xstrdup(disk);
	f->url = vault_file_url(path);
	f->href = site_make_href(s, f->url);
	f->added = 1;
	ALLOC_GROW(s->files, s->nfiles + 1, s->afiles);
	memmove(&s->files[at + 1], &s->files[at], (s->nfiles - at) * sizeof(*s->files));
	s->files[at] = f;
	s->nfiles++;
	map_put(&s->file_by_path, f->path, strlen(f->path), f);
	resolver_add(s->resolver, f->path, RESOLVE_FILE, f);
	return f;
}

void site_file_free(struct site_file *f)
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
		notevec_push(v, (struct site_note *)(void *)k); /* slot 0 keeps the key alive */
	}
	notevec_push(v, n);
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

void apply_mark_recompose(struct work *w, struct site_note *n)
{
	if (!n->recompose && !n->removed) {
		n->recompose = 1;
		notevec_push(&w->recompose, n);
	}
}

/* Adds delta to the count of n's links to a heading or block in each other note they point to. */
static void count_anchored(struct site_note *n, int delta)
{
	size_t k;

	for (k = 0; k < n->md.nrefs; k++) {
		struct site_note *t = n->refs[k].target;
		if (n->md.refs[k].kind == MD_REF_LINK && n->md.refs[k].fragment &&
		    n->md.refs[k].fragment[0] && n->refs[k].kind == MD_TARGET_NOTE && t != n)
			t->nanchored += (size_t)delta;
	}
}

/* Takes back what n's resolved references gave their targets: backlinks, attachment references. */
static void withdraw_targets(struct site *s, struct work *w, struct site_note *n)
{
	size_t k;

	count_anchored(n, -1);
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
					apply_mark_recompose(w, t);
					break;
				}
			}
		} else if (r->kind == MD_TARGET_ATTACHMENT) {
			struct site_file *f = r->target;
			if (--f->refs == 0) {
				site_page_del(s, f->url);
				s->nserved_files--;
			}
		}
	}
	map_release(&n->ref_kinds);
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
	withdraw_targets(s, w, n);
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

/* Gives n's resolved references to their targets: backlinks, attachment references. */
static void contribute_targets(struct site *s, struct work *w, struct site_note *n)
{
	struct map linked = MAP_INIT; /* the notes given a backlink so far */
	size_t k;

	for (k = 0; k < n->md.nrefs; k++) {
		const struct md_ref *ref = &n->md.refs[k];
		const struct site_ref *r = &n->refs[k];

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
			apply_mark_recompose(w, t);
		} else if (r->kind == MD_TARGET_ATTACHMENT) {
			struct site_file *f = r->target;
			if (f->refs++ == 0) {
				struct page *p = file_page(s, f);
				s->nserved_files++;
				site_page_put(s, p);
				page_unref(p);
			}
		}
	}
	map_release(&linked);
	count_anchored(n, 1);
	/* what apply_referrers() asks of a note with many references, without a pass over them */
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

/* Gives what a freshly rendered note points at to the others. */
static void contribute(struct site *s, struct work *w, struct site_note *n)
{
	struct map named = MAP_INIT;  /* the names mentioned so far */
	size_t k, amentions = n->nmentions;

	for (k = 0; k < n->md.nrefs; k++) {
		const struct md_ref *ref = &n->md.refs[k];
		char *key;

		if (!ref->target[0])
			continue;
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
	map_release(&named);
	contribute_targets(s, w, n);
}

/*
 * The notes whose references name key and resolve to t (kind: MD_REF_LINK,
 * _EMBED, or -1 for both).
 */
void apply_referrers(const struct site *s, const struct site_note *t, int kind,
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
				notevec_push(out, x);
			continue;
		}
		for (k = 0; k < x->md.nrefs; k++) {
			if (x->refs[k].target == t && (kind < 0 || (int)x->md.refs[k].kind == kind)) {
				notevec_push(out, x);
				break;
			}
		}
	}
}

/* ---- the steps of an apply ----------------------------------------------- */

void apply_need_render(struct work *w, struct site_note *n)
{
	if (n->rerender || n->removed)
		return;
	n->rerender = 1;
	notevec_push(&w->rerender, n);
	if (!n->reparse) {
		/* the body was dropped after the last render: read the file again */
		n->reparse = 1;
		notevec_push(&w->parse, n);
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
		notevec_push(&w->parse, n);
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
		site_key_add(&w->names, key);
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
	notevec_push(&w->removed, n);
}

/*
 * One apply may look at a path more than once (a note and its folder both
 * reported, a file deleted and restored between two looks), and each look
 * sets the note's marks; the lists are brought in line with the marks
 * once all are made, so that a note is either parsed or removed, never
 * both, and listed once. A note that was both would be unlinked from the
 * indexes, parsed back into the name index, and freed with it still there.
 */
/* Keeps the first place of each note in v (the seen marks, cleared again). */
static void unique(struct notevec *v)
{
	size_t i, kept = 0;

	for (i = 0; i < v->n; i++)
		if (!v->v[i]->seen) {
			v->v[i]->seen = 1;
			v->v[kept++] = v->v[i];
		}
	v->n = kept;
	for (i = 0; i < kept; i++)
		v->v[i]->seen = 0;
}

void apply_settle(struct notevec *v, int removed)
{
	size_t i, kept = 0;

	for (i = 0; i < v->n; i++)
		if (removed ? v->v[i]->removed : v->v[i]->reparse)
			v->v[kept++] = v->v[i];
	v->n = kept;
	unique(v);
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

	for (i = site_note_index(s, prefix); i < s->nnotes; i++) {
		struct site_note *n = s->notes[i];
		if (strncmp(n->note.path, prefix, len) != 0)
			break;
		if (!n->reparse)
			remove_note(w, n);
	}
	for (i = site_file_index(s, prefix); i < s->nfiles; i++) {
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

static void parse_one(void *arg, size_t i)
{
	struct par *c = arg;
	struct site *s = c->s;
	struct site_note *n = c->v[i];
	struct buf full = BUF_INIT, src = BUF_INIT;
	struct stat st;
	char *path = n->note.path;
	time_t mtime = 0;
	size_t size = 0;

	buf_addf(&full, "%s/%s", s->vault, n->disk);
	diag_forget(&s->diags, path, DIAG_PARSE);
	n->too_big = 0;
	if (read_file_max(full.ptr, &src, s->cfg.max_note_size, &size) < 0) {
		/*
		 * Gone since it was found, or since it was last read (an
		 * editor's save, a sync client's move, a checkout): removed by
		 * site_apply() before it returns. A note known before keeps
		 * what it was (its bytes' hash is how its move is recognized
		 * when the new path arrives) and is neither rendered nor
		 * composed meanwhile; a new one is parsed empty. Anything else
		 * is the note's error.
		 */
		if (errno == ENOENT || errno == ENOTDIR) {
			n->vanished = 1;
			if (n->note.title) {
				buf_release(&full);
				return;
			}
		} else if (errno == EFBIG) {
			/*
			 * Not read (its size is known before): a note's tree
			 * costs up to some 250 bytes a byte in memory (cmark-gfm's
			 * nodes, docs/security.md), so one 18 MB note took 2.7 GB.
			 * Parsed empty, it is found by name but not published.
			 */
			n->too_big = 1;
			diag_addk(&s->diags, DIAG_PARSE, DIAG_ERROR, path, 0,
				  "%zu bytes, over max_note_size (%zu; quire.yml sets it): not read, "
				  "not published", size, s->cfg.max_note_size);
		} else {
			diag_addk(&s->diags, DIAG_PARSE, DIAG_ERROR, path, 0, "cannot read: %s",
				  strerror(errno));
		}
	} else if (stat(full.ptr, &st) == 0)
		mtime = st.st_mtime;
	n->hash = hash64(src.ptr, src.len);
	n->note.path = NULL; /* keep the path string: the index maps use it as their key */
	note_release(&n->note);
	note_parse(&n->note, path, src.ptr, src.len, mtime, &s->diags);
	if (vault_is_conflict_copy(path))
		diag_addk(&s->diags, DIAG_PARSE, DIAG_WARNING, path, 0,
			  "a conflict copy (quire sync or Syncthing kept both sides of an edit): "
			  "not published; merge it into the note it sits beside and delete it");
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
				notevec_push(marked, t);
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

/* What a parsed note's new metadata changes for others. */
static void after_parse(struct site *s, struct work *w, struct site_note *n)
{
	int published = !n->too_big &&
			note_is_published(&n->note, s->cfg.publish == PUBLISH_EXPLICIT) &&
			!vault_is_conflict_copy(n->note.path);
	char *base = published ? urls_base_of(s, n) : NULL;

	if (!n->indexed) {
		resolver_add(s->resolver, n->note.path, RESOLVE_NOTE, n);
		n->indexed = 1;
	}
	if (!n->parsed) {
		n->parsed = 1;
		notevec_push(&w->parsed, n);
	}
	if (published != n->published) {
		site_key_add(&w->names, n->name_key);
		s->npublished += published ? 1 : (size_t)-1;
	}
	urls_group_move(s, w, n, base);
	if (n->md.nrefs || n->nmentions)
		withdraw(s, w, n);
	if (n->published && !published) {
		/* notes linking here re-resolve through the name event above */
		if (n->url)
			site_page_del(s, n->url), site_key_add(&w->stale_keys, n->url);
		free(n->url);
		free(n->href);
		n->url = n->href = NULL;
		page_unref(n->page);
		n->page = NULL;
		render_note_release(n); /* its fragment's pieces hold that page too */
		/* nor is it rendered or composed: what those said of it goes */
		diag_forget(&s->diags, n->note.path, DIAG_LINK);
		diag_forget(&s->diags, n->note.path, DIAG_EMBED);
		free(n->backlinks);
		n->backlinks = NULL;
		n->nbacklinks = n->abacklinks = 0;
	}
	n->published = published;
	if (published) {
		if (!n->rerender) {
			n->rerender = 1;
			notevec_push(&w->rerender, n);
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
		urls_group_move(s, w, n, NULL);
		withdraw(s, w, n);
		if (n->url)
			site_page_del(s, n->url), site_key_add(&w->stale_keys, n->url);
	}
	site_key_add(&w->names, n->name_key);
	if (n->indexed)
		resolver_remove(s->resolver, n->note.path, RESOLVE_NOTE, n);
	for (k = 0; k < DIAG_OTHER; k++)
		diag_forget(&s->diags, n->note.path, (enum diag_kind)k);
	apply_note_unlink(s, n);
}

/*
 * x's references resolved again into refs: when each kept its kind, only
 * URLs in x's fragment change, and those are slots filled when composing
 * (markdown.h, url_slots): x takes its new targets and is composed again,
 * without reading and rendering its body again.
 */
static void retarget(struct site *s, struct work *w, struct site_note *x, const struct site_ref *refs)
{
	withdraw_targets(s, w, x);
	memcpy(x->refs, refs, x->md.nrefs * sizeof(*refs));
	contribute_targets(s, w, x);
	apply_mark_recompose(w, x);
}

void apply_resolve_again(struct site *s, struct work *w, struct site_note *x)
{
	int moved = 0, changed = 0;
	size_t k;

	if (x->rerender || x->removed || !x->refs)
		return;
	ALLOC_GROW(w->refs, x->md.nrefs, w->arefs);
	for (k = 0; k < x->md.nrefs && !changed; k++) {
		render_resolve(s, x, &x->md.refs[k], &w->refs[k]);
		changed = w->refs[k].kind != x->refs[k].kind;
		moved |= w->refs[k].target != x->refs[k].target;
	}
	if (changed)
		apply_need_render(w, x);
	else if (moved)
		retarget(s, w, x, w->refs);
}

/*
 * Re-resolves the notes mentioning a changed name: those whose links now
 * point elsewhere take their new targets, and those whose links changed
 * kind (a note that appeared, went, or was published or unpublished)
 * render again.
 */
static void resolve_names(struct site *s, struct work *w)
{
	struct notevec todo = { 0 };
	size_t i = 0, j;
	void *v;

	while (map_next(&w->names, &i, NULL, NULL, &v)) {
		const char *key = v;
		const struct notevec *m = map_get(&s->mentions, key, strlen(key));
		for (j = 1; m && j < m->n; j++)
			notevec_push(&todo, m->v[j]);
	}
	unique(&todo); /* each once, however many of the names it mentions (a folder moved) */
	for (j = 0; j < todo.n; j++)
		apply_resolve_again(s, w, todo.v[j]);
	free(todo.v);
	site_keys_release(&w->names);
}

/* ---- phases ------------------------------------------------------------------ */

/* A step of a load, counted for whoever watches its progress (site_progress). */
static void counted(void *arg, size_t i)
{
	struct par *c = arg;

	c->fn(arg, i);
	atomic_fetch_add_explicit(&c->s->progress->steps, 1, memory_order_relaxed);
}

static void run_parallel(struct site *s, struct notevec *v, void (*fn)(void *, size_t))
{
	struct par c = { s, v->v, fn };
	parallel_for(v->n, s->threads, s->progress ? counted : fn, &c);
}

/* Attachments that appear, vanish or change: the resolver, the file list, their pages. */
static void apply_files(struct site *s, struct work *w)
{
	size_t i;
	int css = 0, icon = 0;

	for (i = 0; i < w->nfiles; i++) {
		struct site_file *f = w->files[i];
		css |= strcmp(f->path, SITE_CSS_SOURCE) == 0;
		icon |= site_icon_source(f->path);
		if (f->removed) {
			char *key = resolve_name_key(f->path);
			site_key_add(&w->names, key);
			free(key);
			resolver_remove(s->resolver, f->path, RESOLVE_FILE, f);
			map_remove(&s->file_by_path, f->path, strlen(f->path));
			{
				size_t at = site_file_index(s, f->path);
				if (at < s->nfiles && s->files[at] == f) {
					memmove(&s->files[at], &s->files[at + 1],
						(s->nfiles - at - 1) * sizeof(*s->files));
					s->nfiles--;
				}
			}
		} else if (f->refs > 0) {
			struct page *p = file_page(s, f);
			site_page_put(s, p);
			page_unref(p);
		}
	}
	/* what the site serves of its own from these files: after removed ones left the table */
	if (css)
		site_stylesheet(s);
	if (icon)
		site_icon(s); /* a favicon came, changed or went: the choice is made again */
}

/*
 * Rounds of parsing until no more notes need their bodies: each round
 * may mark notes whose links now resolve differently (names that came,
 * went or changed publish state; URLs reassigned).
 */
static void parse_rounds(struct site *s, struct work *w)
{
	size_t i, done = 0;

	while (w->parse.n > done || w->names.len) {
		struct notevec round = { 0 };
		for (i = done; i < w->parse.n; i++) {
			before_parse(w->parse.v[i]);
			notevec_push(&round, w->parse.v[i]);
		}
		done = w->parse.n;
		run_parallel(s, &round, parse_one);
		for (i = 0; i < round.n; i++)
			after_parse(s, w, round.v[i]);
		free(round.v);
		/* URLs depend on path order, publish state and slugs only */
		if (w->url_groups.len)
			urls_assign(s, w);
		resolve_names(s, w);
	}
}

/*
 * Renders the marked notes (in parallel), then hands out what they
 * contribute: backlinks, mentions, attachment references.
 */
static void render_marked(struct site *s, struct work *w)
{
	struct notevec live = { 0 };
	size_t i;

	for (i = 0; i < w->rerender.n; i++)
		if (w->rerender.v[i]->md.nrefs || w->rerender.v[i]->nmentions)
			withdraw(s, w, w->rerender.v[i]);
	for (i = 0; i < w->rerender.n; i++)
		if (w->rerender.v[i]->published && !w->rerender.v[i]->removed &&
		    !w->rerender.v[i]->vanished)
			notevec_push(&live, w->rerender.v[i]);
	run_parallel(s, &live, render_one);
	for (i = 0; i < live.n; i++) {
		contribute(s, w, live.v[i]);
		apply_mark_recompose(w, live.v[i]);
	}
	/* links to a heading or block of a note whose anchors changed: found or not, ids moved */
	for (i = 0; i < live.n; i++) {
		struct notevec v = { 0 };
		size_t k;
		if (!live.v[i]->nanchored || !live.v[i]->anchors_changed)
			continue;
		apply_referrers(s, live.v[i], MD_REF_LINK, &v);
		for (k = 0; k < v.n; k++)
			apply_mark_recompose(w, v.v[k]);
		free(v.v);
	}
	s->nrendered = live.n;
	free(live.v);
}

/* Notes that list a retitled note as a backlink are composed again. */
static void mark_retitled(struct work *w)
{
	size_t i, k;

	for (i = 0; i < w->parsed.n; i++) {
		struct site_note *n = w->parsed.v[i];
		if (n->published && n->old_title && strcmp(n->old_title, n->note.title) != 0) {
			for (k = 0; k < n->md.nrefs; k++)
				if (n->refs[k].kind == MD_TARGET_NOTE)
					apply_mark_recompose(w, n->refs[k].target);
			apply_mark_recompose(w, n);
		}
	}
}

/* Notes embedding a note to compose are composed again, transitively. */
static void mark_embedders(struct site *s, struct work *w)
{
	struct notevec queue = { 0 };
	size_t i, k;

	for (i = 0; i < w->recompose.n; i++) {
		w->recompose.v[i]->seen = 1;
		notevec_push(&queue, w->recompose.v[i]);
	}
	for (i = 0; i < queue.n; i++) {
		struct notevec emb = { 0 };
		apply_referrers(s, queue.v[i], MD_REF_EMBED, &emb);
		for (k = 0; k < emb.n; k++) {
			if (!emb.v[k]->seen) {
				emb.v[k]->seen = 1;
				apply_mark_recompose(w, emb.v[k]);
				notevec_push(&queue, emb.v[k]);
			}
		}
		free(emb.v);
	}
	for (i = 0; i < queue.n; i++)
		queue.v[i]->seen = 0;
	free(queue.v);
}

/* Composes the marked published notes (in parallel) and puts their pages in the table. */
static void compose_marked(struct site *s, struct work *w)
{
	struct notevec live = { 0 }, embedded = { 0 };
	size_t i;

	for (i = 0; i < w->recompose.n; i++)
		if (w->recompose.v[i]->published && !w->recompose.v[i]->removed &&
		    !w->recompose.v[i]->vanished)
			notevec_push(&live, w->recompose.v[i]);
	mark_embedded(&live, &embedded);
	run_parallel(s, &live, compose_one);
	for (i = 0; i < live.n; i++) {
		render_note_adopt(live.v[i]);
		site_page_put_as(s, live.v[i]->page, live.v[i]->note.path);
	}
	for (i = 0; i < embedded.n; i++)
		embedded.v[i]->embedded = 0;
	s->ncomposed = live.n;
	free(live.v);
	free(embedded.v);
}

/* Moves, alias claims, and the redirects and pages of keys they touched. */
static void settle_urls(struct site *s, struct work *w)
{
	size_t i;

	if (w->removed.n || w->parsed.n)
		urls_find_moves(s, w);
	urls_relocated(s, w);
	for (i = 0; i < w->parsed.n; i++)
		urls_update_claims(s, w, w->parsed.v[i]);
	for (i = 0; i < w->removed.n; i++)
		urls_update_claims(s, w, w->removed.v[i]);
	{
		size_t it = 0;
		void *v;
		while (map_next(&w->stale_keys, &it, NULL, NULL, &v))
			urls_refresh_key(s, v);
	}
}

/*
 * What lists the changed notes (parsed, removed, or moved to another URL):
 * their search rows (staged, written by site_search_flush() once the
 * snapshot is live), tag pages, folder listings, sitemaps, feeds, hosts.
 * Each keeps its own record of where it listed a note, so the order of
 * these calls does not matter.
 */
static void update_derived(struct site *s, struct work *w)
{
	struct notevec changed = { 0 };
	double t;
	size_t i;

	for (i = 0; i < w->parsed.n; i++)
		notevec_push(&changed, w->parsed.v[i]);
	for (i = 0; i < w->removed.n; i++)
		notevec_push(&changed, w->removed.v[i]);
	for (i = 0; i < w->moved.n; i++)
		notevec_push(&changed, w->moved.v[i]);
	for (i = 0; i < w->nreloc; i++)
		notevec_push(&changed, w->reloc[i].n);
	unique(&changed); /* a note parsed or moved in place may have a new URL too */
	sitesearch_stage(s, changed.v, changed.n);
	for (i = 0; i < w->rerender.n; i++)
		if (!sitesearch_text_wanted(s, w->rerender.v[i]))
			buf_release(&w->rerender.v[i]->md.text);
	t = clock_ms();
	derived_update(s, changed.v, changed.n, w->recompose.v, w->recompose.n);
	if (s->unclaimed.len) {
		size_t it = 0;
		void *v;
		while (map_next(&s->unclaimed, &it, NULL, NULL, &v))
			urls_refresh_key(s, v);
		site_keys_release(&s->unclaimed);
	}
	s->derived_ms = clock_ms() - t;
	t = clock_ms();
	hosts_update(s, changed.v, changed.n);
	s->hosts_ms = clock_ms() - t;
	free(changed.v);
}

/* Clears this apply's marks and frees what left. */
static void finish(struct site *s, struct work *w)
{
	size_t i;

	for (i = 0; i < w->parse.n; i++)
		w->parse.v[i]->reparse = 0;
	for (i = 0; i < w->rerender.n; i++)
		w->rerender.v[i]->rerender = 0;
	for (i = 0; i < w->recompose.n; i++)
		w->recompose.v[i]->recompose = 0;
	for (i = 0; i < w->parsed.n; i++) {
		w->parsed.v[i]->added = 0;
		w->parsed.v[i]->parsed = 0;
		free(w->parsed.v[i]->old_title);
		w->parsed.v[i]->old_title = NULL;
	}
	for (i = 0; i < w->nfiles; i++) {
		w->files[i]->changed = 0;
		w->files[i]->added = 0;
		if (w->files[i]->removed)
			site_file_free(w->files[i]);
	}
	for (i = 0; i < w->removed.n; i++)
		site_note_free(w->removed.v[i]);
	s->napplied = w->parsed.n;
	free(w->parse.v);
	free(w->parsed.v);
	free(w->rerender.v);
	free(w->recompose.v);
	free(w->removed.v);
	free(w->moved.v);
	for (i = 0; i < w->nreloc; i++) {
		free(w->reloc[i].from);
		free(w->reloc[i].url);
	}
	free(w->reloc);
	free(w->refs);
	free(w->files);
	site_keys_release(&w->names);
	site_keys_release(&w->stale_keys);
	site_keys_release(&w->url_groups);
}

/*
 * The notes whose files were gone when parsing read them, as paths to
 * look at again (a folder's files removed together: one look each).
 */
static size_t vanished_paths(struct site *s, const struct work *w, char ***out)
{
	size_t i, n = 0;

	*out = NULL;
	for (i = 0; i < w->parsed.n; i++) {
		struct site_note *x = w->parsed.v[i];
		if (!x->vanished)
			continue;
		x->vanished = 0;
		*out = xrealloc(*out, (n + 1) * sizeof(**out));
		(*out)[n++] = xstrdup(x->note.path);
	}
	if (n == 1)
		log_info("%s was removed while being read: left out", (*out)[0]);
	else if (n > 1)
		log_info("%zu notes were removed while being read (%s first): left out", n,
			 (*out)[0]);
	s->nvanished += n;
	return n;
}

int site_apply(struct site *s, const char *const *paths, size_t npaths)
{
	struct work w;
	double t0 = clock_ms(), t;
	char **gone;
	size_t i, ngone;

	memset(&w, 0, sizeof(w));
	s->applies++;
	for (i = 0; i < npaths; i++)
		collect(&w, s, paths[i]);
	apply_settle(&w.parse, 0);
	apply_settle(&w.removed, 1);
	if (s->progress && !atomic_load(&s->progress->total)) {
		atomic_store(&s->progress->total, 3 * w.parse.n);
		if (s->progress->scanned)
			s->progress->scanned(s->progress->ctx);
	}
	moves_find(s, &w);
	apply_files(s, &w);
	for (i = 0; i < w.removed.n; i++)
		unlink_removed(s, &w, w.removed.v[i]);
	moves_resolve(s, &w);

	t = clock_ms();
	parse_rounds(s, &w);
	s->phase_ms[0] = clock_ms() - t;
	t = clock_ms();
	render_marked(s, &w);
	mark_retitled(&w);
	mark_embedders(s, &w);
	s->phase_ms[1] = clock_ms() - t;
	t = clock_ms();
	compose_marked(s, &w);
	s->phase_ms[2] = clock_ms() - t;

	settle_urls(s, &w);
	update_derived(s, &w);
	ngone = vanished_paths(s, &w, &gone);
	finish(s, &w);
	s->load_ms = clock_ms() - t0;
	if (ngone) {
		/* looked at again, they are gone: removed like any deleted note */
		site_apply(s, (const char *const *)gone, ngone);
		for (i = 0; i < ngone; i++)
			free(gone[i]);
		free(gone);
		s->load_ms = clock_ms() - t0;
	}
	return 0;
}
