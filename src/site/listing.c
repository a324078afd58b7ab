/*
 * listing.c: notes in title order, cut into pages (see listing.h).
 */
#include "site/listing.h"
#include "site/model.h"
#include "util/hash.h"
#include "util/map.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int cmp_key(const char *ta, const char *pa, const char *tb, const char *pb)
{
	int c = strcasecmp(ta, tb);
	return c ? c : strcmp(pa, pb);
}

int listing_cmp(const struct site_note *a, const struct site_note *b)
{
	return cmp_key(a->listed->title, a->listed->path, b->listed->title, b->listed->path);
}

static int cmp_notes(const void *a, const void *b)
{
	return listing_cmp(a, b);
}

static int cmp_pages(const void *a, const void *b)
{
	const struct listing_page *x = a, *y = b;
	return cmp_key(x->title, x->path, y->title, y->path);
}

/* A touched place against a note, and against a page: oset_seek()'s key orders. */
static int touch_vs_note(const void *key, const void *item)
{
	const struct listing_touch *t = key;
	const struct site_note *n = item;
	return cmp_key(t->title, t->path, n->listed->title, n->listed->path);
}

static int note_vs_page(const void *key, const void *item)
{
	const struct site_note *n = key;
	const struct listing_page *p = item;
	return cmp_key(n->listed->title, n->listed->path, p->title, p->path);
}

static int note_vs_note(const void *key, const void *item)
{
	return listing_cmp(key, item);
}

static int starts_chunk(const struct listing *l, const struct site_note *n)
{
	return n->listed->cut % l->every == 0;
}

void listing_init_sized(struct listing *l, unsigned every, size_t max_run, int counted)
{
	memset(l, 0, sizeof(*l));
	l->notes.cmp = cmp_notes;
	l->pages.cmp = cmp_pages;
	l->all = 1;
	l->every = every ? every : 1;
	l->max_run = max_run ? max_run : 1;
	l->counted = counted;
}

void listing_init(struct listing *l)
{
	listing_init_sized(l, LISTING_PAGE, LISTING_MAX_RUN, 0);
}

static void page_free(struct listing_page *p)
{
	if (p) {
		free(p->title);
		free(p->path);
		free(p->key);
		free(p);
	}
}

static void touches_clear(struct listing *l)
{
	size_t i;
	for (i = 0; i < l->ntouched; i++) {
		free(l->touched[i].title);
		free(l->touched[i].path);
	}
	l->ntouched = 0;
}

void listing_release(struct listing *l, const struct listing_ops *ops, void *ctx)
{
	struct listing_page *p;

	while ((p = oset_first(&l->pages))) {
		oset_del(&l->pages, p);
		if (ops && ops->drop)
			ops->drop(ctx, p);
		page_free(p);
	}
	oset_release(&l->notes);
	touches_clear(l);
	free(l->touched);
	l->touched = NULL;
	l->atouched = 0;
}

void listing_touch(struct listing *l, const struct site_note *n)
{
	struct listing_touch *t;

	if (l->all)
		return; /* everything is written anyway */
	ALLOC_GROW(l->touched, l->ntouched + 1, l->atouched);
	t = &l->touched[l->ntouched++];
	t->title = xstrdup(n->listed->title);
	t->path = xstrdup(n->listed->path);
}

void listing_add(struct listing *l, struct site_note *n)
{
	oset_add(&l->notes, n);
	listing_touch(l, n);
}

void listing_del(struct listing *l, struct site_note *n)
{
	if (oset_del(&l->notes, n))
		listing_touch(l, n);
}

void listing_head(struct listing *l)
{
	l->head = 1;
}

void listing_all(struct listing *l)
{
	l->all = 1;
	touches_clear(l);
}

size_t listing_count(const struct listing *l)
{
	return l->notes.n;
}

/* The notes from a to b (b excluded; NULL: to the end) that a region covers. */
struct region {
	struct site_note *from, *to;
	int at_start;              /* from is the listing's first note (or it is empty) */
};

/*
 * The region a touched place falls in: from the start of the chunk of the
 * note before it (that chunk may have lost or gained its tail) to the
 * start of the chunk after the note at or after it.
 */
static struct region region_of(const struct listing *l, const struct listing_touch *t)
{
	struct oset_iter it;
	struct site_note *at = oset_seek(&l->notes, t, touch_vs_note, &it), *x, *from;
	struct region r = { NULL, NULL, 0 };

	from = oset_prev(&l->notes, &it);
	while (from && !starts_chunk(l, from) && (x = oset_prev(&l->notes, &it)))
		from = x;
	if (!from) {
		r.at_start = 1;
		from = oset_first(&l->notes);
	} else {
		struct oset_iter back = it;
		r.at_start = oset_prev(&l->notes, &back) == NULL;
	}
	r.from = from;
	if (at) {
		oset_seek(&l->notes, at, note_vs_note, &it);
		while ((x = oset_next(&l->notes, &it)) && !starts_chunk(l, x))
			;
		r.to = x;
	}
	return r;
}

static int cmp_regions(const void *a, const void *b)
{
	const struct region *x = a, *y = b;
	uintptr_t xf = (uintptr_t)x->from, yf = (uintptr_t)y->from;
	uintptr_t xt = (uintptr_t)x->to, yt = (uintptr_t)y->to;
	return xf != yf ? (xf > yf) - (xf < yf) : (xt > yt) - (xt < yt);
}

/*
 * The distinct regions of rs: places touched in one chunk (a folder's
 * notes moved together) give the same region, cut once.
 */
static size_t unique_regions(struct region *rs, size_t nr)
{
	size_t i, n = 0;

	if (nr > 1)
		qsort(rs, nr, sizeof(*rs), cmp_regions);
	for (i = 0; i < nr; i++)
		if (!n || cmp_regions(&rs[n - 1], &rs[i]) != 0)
			rs[n++] = rs[i];
	return n;
}

/* Takes the pages that begin inside r out of l->pages, onto stale. */
static void take_pages(struct listing *l, const struct region *r, struct listing_page ***stale,
		       size_t *nstale, size_t *astale)
{
	struct oset_iter it = OSET_ITER_INIT;
	struct listing_page *p, **v = NULL;
	size_t n = 0, an = 0, i;

	if (r->at_start || !r->from)
		p = oset_next(&l->pages, &it);
	else
		p = oset_seek(&l->pages, r->from, note_vs_page, &it);
	for (; p; p = oset_next(&l->pages, &it)) {
		if (r->to && note_vs_page(r->to, p) <= 0)
			break;
		ALLOC_GROW(v, n + 1, an);
		v[n++] = p;
	}
	for (i = 0; i < n; i++) {
		oset_del(&l->pages, v[i]);
		ALLOC_GROW(*stale, *nstale + 1, *astale);
		(*stale)[(*nstale)++] = v[i];
	}
	free(v);
}

/* Cuts the notes of r into pages again; those not cut already this flush go onto fresh. */
static void cut_pages(struct listing *l, const struct region *r, const struct listing_ops *ops,
		      void *ctx, struct listing_page ***fresh, size_t *nfresh, size_t *afresh)
{
	struct oset_iter it;
	struct site_note *x;
	struct listing_page *p = NULL;
	struct buf key = BUF_INIT;
	size_t run = 0;
	int first = r->at_start;

	if (!r->from)
		return;
	oset_seek(&l->notes, r->from, note_vs_note, &it);
	for (x = r->from; x && x != r->to; x = oset_next(&l->notes, &it)) {
		if (!p || run == l->max_run || starts_chunk(l, x)) {
			p = xcalloc(1, sizeof(*p));
			p->title = xstrdup(x->listed->title);
			p->path = xstrdup(x->listed->path);
			p->first = x;
			p->head = first;
			ops->key(ctx, first ? NULL : x->listed->path, &key);
			first = 0;
			p->key = buf_detach(&key, NULL);
			run = 0;
			if (oset_add(&l->pages, p) == 0) {
				ALLOC_GROW(*fresh, *nfresh + 1, *afresh);
				(*fresh)[(*nfresh)++] = p;
			} else {
				struct oset_iter at;
				page_free(p); /* another touched place cut it already */
				p = oset_seek(&l->pages, x, note_vs_page, &at);
				p->n = 0; /* counted again below */
			}
		}
		p->n++;
		run++;
	}
	buf_release(&key);
}

static void write_page(struct listing *l, struct listing_page *p, const struct listing_ops *ops,
		       void *ctx)
{
	struct site_note **v = xcalloc(p->n + 1, sizeof(*v)), *x;
	struct oset_iter it;
	size_t n = 0;

	x = oset_seek(&l->notes, p->first, note_vs_note, &it);
	for (; x && n < p->n; x = oset_next(&l->notes, &it))
		v[n++] = x;
	ops->write(ctx, l, p, v, n);
	free(v);
}

/*
 * A page's key says whether it is the first: the first note of the
 * listing can change outside every touched chunk (a note that starts a
 * chunk arrives before it, or the first chunk goes). The page that became
 * first takes the listing's key (its old key dropped), and the one that is
 * no longer first gets its own (the listing's key now belongs to the new
 * first page). Returns whether a key changed.
 */
static int rekey_heads(struct listing *l, const struct listing_ops *ops, void *ctx,
		       struct listing_page ***fresh, size_t *nfresh, size_t *afresh)
{
	struct oset_iter it = OSET_ITER_INIT;
	struct listing_page *p;
	struct buf key = BUF_INIT;
	int changed = 0, at = 0;

	while ((p = oset_next(&l->pages, &it)) && at < 2) {
		int want = at++ == 0;
		size_t i;
		if (p->head == want)
			continue;
		if (want)
			ops->drop(ctx, p); /* its own key; the listing's is taken over */
		p->head = want;
		ops->key(ctx, want ? NULL : p->path, &key);
		free(p->key);
		p->key = buf_detach(&key, NULL);
		for (i = 0; i < *nfresh && (*fresh)[i] != p; i++)
			;
		if (i == *nfresh) {
			ALLOC_GROW(*fresh, *nfresh + 1, *afresh);
			(*fresh)[(*nfresh)++] = p;
		}
		changed = 1;
	}
	buf_release(&key);
	return changed;
}

void listing_flush(struct listing *l, const struct listing_ops *ops, void *ctx)
{
	struct listing_page **stale = NULL, **fresh = NULL, *head;
	size_t nstale = 0, astale = 0, nfresh = 0, afresh = 0, nr = 0, i;
	struct region *rs;
	struct map fresh_keys = MAP_INIT;
	int pages_changed = 0, head_written = 0;

	if (!l->all && !l->ntouched && !l->head)
		return;
	if (l->all) {
		rs = xcalloc(1, sizeof(*rs));
		rs[0].from = oset_first(&l->notes);
		rs[0].at_start = 1;
		nr = 1;
	} else {
		rs = xcalloc(l->ntouched + 1, sizeof(*rs));
		for (i = 0; i < l->ntouched; i++)
			rs[nr++] = region_of(l, &l->touched[i]);
		nr = unique_regions(rs, nr);
	}
	for (i = 0; i < nr; i++)
		take_pages(l, &rs[i], &stale, &nstale, &astale);
	for (i = 0; i < nr; i++)
		cut_pages(l, &rs[i], ops, ctx, &fresh, &nfresh, &afresh);
	if (rekey_heads(l, ops, ctx, &fresh, &nfresh, &afresh))
		pages_changed = 1;
	/* the first page lists every page by its first title: does it change? */
	for (i = 0; i < nfresh; i++)
		map_put(&fresh_keys, fresh[i]->key, strlen(fresh[i]->key), fresh[i]);
	for (i = 0; i < nstale; i++) {
		struct listing_page *now = map_gets(&fresh_keys, stale[i]->key);
		if (!now) {
			ops->drop(ctx, stale[i]);
			pages_changed = 1;
		} else if (strcmp(now->title, stale[i]->title) != 0 ||
			   (l->counted && now->n != stale[i]->n)) {
			pages_changed = 1;
		}
	}
	if (nfresh != nstale)
		pages_changed = 1;
	head = oset_first(&l->pages);
	for (i = 0; i < nfresh; i++) {
		write_page(l, fresh[i], ops, ctx);
		head_written |= fresh[i] == head;
	}
	if (!head_written && (pages_changed || l->head || l->all)) {
		if (head)
			write_page(l, head, ops, ctx);
		else
			ops->write(ctx, l, NULL, NULL, 0);
	}
	for (i = 0; i < nstale; i++)
		page_free(stale[i]);
	free(stale);
	free(fresh);
	free(rs);
	map_release(&fresh_keys);
	touches_clear(l);
	l->all = l->head = 0;
}

void listed_place(struct listed *l, const char *title, const char *path)
{
	free(l->title);
	free(l->path);
	l->title = title ? xstrdup(title) : NULL;
	l->path = path ? xstrdup(path) : NULL;
	/* not listed: 1 starts no chunk of a listing cut every 2 or more */
	l->cut = path ? hash64(path, strlen(path)) : 1;
}

void listed_free(struct listed *l)
{
	size_t k;

	if (!l)
		return;
	for (k = 0; k < l->ntags; k++)
		free(l->tags[k]);
	free(l->tags);
	free(l->url);
	free(l->title);
	free(l->path);
	free(l);
}
