/*
 * moves.c: moves as moves.
 *
 * A note deleted and one added with the same bytes and the same file name
 * in one change is the same note moved (a folder renamed: every note in
 * it). The note known before takes the new path in place, and keeps its
 * parse, its rendered fragment, its backlinks and its place in every
 * index. What depends on where it is follows: its URL (urls.c: pages
 * linking to it are composed again), its links written relative to its
 * folder (resolved again: a changed target is taken over, a changed kind
 * renders it), its page (composed again: breadcrumbs), the listings and
 * sitemaps (derived.c), its search row (moved with its text,
 * sitesearch.c) and its diagnostics. Reading and rendering a hundred notes
 * that only moved was most of a folder rename's cost. A note with routes (hosts.c keeps claimants in path
 * order) is left to the ordinary way: deleted and added.
 */
#include "site/render.h"
#include "site/site-int.h"
#include "util/buf.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/parallel.h"
#include "util/xalloc.h"
#include "vault/resolve.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

struct probe_job {
	struct site *s;
	struct site_note **v;
	time_t *mtime;    /* out: the file's */
	char *ok;         /* out: whether it could be read */
};

static void probe_one(void *arg, size_t i)
{
	struct probe_job *j = arg;
	struct site_note *y = j->v[i];
	struct buf full = BUF_INIT, src = BUF_INIT;
	struct stat st;

	buf_addf(&full, "%s/%s", j->s->vault, y->disk);
	/* a note over max_note_size is not read here either: parsing says why */
	j->ok[i] = stat(full.ptr, &st) == 0 &&
		   read_file_max(full.ptr, &src, j->s->cfg.max_note_size, NULL) == 0;
	if (j->ok[i]) {
		y->hash = hash64(src.ptr, src.len);
		j->mtime[i] = st.st_mtime;
	}
	buf_release(&full);
	buf_release(&src);
}

static int cmp_hash(const void *a, const void *b)
{
	const struct site_note *x = *(struct site_note *const *)a, *y = *(struct site_note *const *)b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return strcmp(x->note.path, y->note.path);
}

/* Whether path names a note called name ("Folder/Name.md" and "Name"). */
static int has_name(const char *path, const char *name)
{
	const char *base = strrchr(path, '/');
	size_t len;

	base = base ? base + 1 : path;
	len = strlen(base);
	if (len > 3 && strcasecmp(base + len - 3, ".md") == 0)
		len -= 3;
	return strlen(name) == len && memcmp(base, name, len) == 0;
}

/* x, removed, takes the path of y, just found: y is dropped (settled out of the lists). */
static void relocate(struct site *s, struct work *w, struct site_note *x, struct site_note *y)
{
	struct relocation *r;
	char *from = x->note.path;

	y->reparse = 0;
	x->removed = 0;
	if (x->gbase)
		urls_group_move(s, w, x, NULL); /* while its path still orders it in its group */
	apply_note_unlink(s, x);
	if (x->indexed)
		resolver_remove(s->resolver, from, RESOLVE_NOTE, x);
	site_key_add(&w->names, x->name_key);
	apply_note_unlink(s, y);

	x->note.path = xstrdup(y->note.path);
	free(x->disk);
	x->disk = xstrdup(y->disk);
	free(x->name_key);
	x->name_key = resolve_name_key(x->note.path);
	site_key_add(&w->names, x->name_key);
	apply_note_link(s, x);
	if (x->indexed)
		resolver_add(s->resolver, x->note.path, RESOLVE_NOTE, x);
	diag_rename(&s->diags, from, x->note.path);
	if (x->published) {
		free(x->base_url);
		x->base_url = urls_base_of(s, x);
		urls_group_move(s, w, x, x->base_url);
	}
	apply_mark_recompose(w, x);
	ALLOC_GROW(w->reloc, w->nreloc + 1, w->areloc);
	r = &w->reloc[w->nreloc++];
	r->n = x;
	r->from = from;
	r->url = x->url ? xstrdup(x->url) : NULL;
}

/* Pairs the notes this change removed with the ones it found, and moves those in place. */
void moves_find(struct site *s, struct work *w)
{
	struct notevec found = { 0 }, gone = { 0 }, dropped = { 0 };
	struct probe_job j = { s, NULL, NULL, NULL };
	size_t i;

	for (i = 0; i < w->removed.n; i++) {
		struct site_note *x = w->removed.v[i];
		if (x->note.title && !x->vanished && !x->nroutes)
			notevec_push(&gone, x);
	}
	for (i = 0; gone.n && i < w->parse.n; i++)
		if (w->parse.v[i]->added && !w->parse.v[i]->removed)
			notevec_push(&found, w->parse.v[i]);
	if (!found.n) {
		free(gone.v);
		return;
	}
	qsort(gone.v, gone.n, sizeof(*gone.v), cmp_hash);
	j.v = found.v;
	j.mtime = xcalloc(found.n, sizeof(*j.mtime));
	j.ok = xcalloc(found.n, 1);
	parallel_for(found.n, s->threads, probe_one, &j);
	for (i = 0; i < found.n; i++) {
		struct site_note *y = found.v[i], *pick = NULL;
		size_t lo = 0, hi = gone.n, k;
		if (!j.ok[i])
			continue;
		while (lo < hi) { /* the first removed note with y's bytes */
			size_t mid = lo + (hi - lo) / 2;
			if (gone.v[mid]->hash < y->hash)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (k = lo; k < gone.n && gone.v[k]->hash == y->hash && !pick; k++)
			if (!gone.v[k]->seen && has_name(y->note.path, gone.v[k]->note.name))
				pick = gone.v[k];
		if (!pick)
			continue;
		pick->seen = 1;
		pick->note.mtime = j.mtime[i]; /* a copy's: the page and the listings' dates follow */
		relocate(s, w, pick, y);
		notevec_push(&dropped, y);
	}
	for (i = 0; i < gone.n; i++)
		gone.v[i]->seen = 0;
	if (dropped.n) {
		apply_settle(&w->parse, 0);
		apply_settle(&w->removed, 1);
		for (i = 0; i < dropped.n; i++)
			site_note_free(dropped.v[i]);
	}
	free(j.mtime);
	free(j.ok);
	free(found.v);
	free(gone.v);
	free(dropped.v);
}

/*
 * The links of the notes that moved in place, resolved from where they
 * are now: a link relative to the note's folder may lead elsewhere.
 */
void moves_resolve(struct site *s, struct work *w)
{
	size_t i;

	for (i = 0; i < w->nreloc; i++)
		if (w->reloc[i].n->published)
			apply_resolve_again(s, w, w->reloc[i].n);
}
