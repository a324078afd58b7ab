/*
 * derived.c: tag pages, folder listings, explorer documents, sitemaps and feeds.
 *
 * Every published note is registered under its tags (with their parents:
 * "a/b" also lists under "a"), its folder (and, for counting, every folder
 * above), and a sitemap shard chosen by a hash of its URL. With each note
 * goes a hash of what those listings show of it. derived_update() compares
 * a changed note's new registrations and hash with the old ones and marks
 * only the resources concerned; then it renders just those.
 *
 * Sitemap shards are chosen by hash, not by order, so adding a note changes
 * one shard and not every shard after it. The number of shards is a power
 * of two picked from the note count alone (about 250 to 500 URLs each, far
 * from the limit of 1,000), so a fresh load and a long run of edits agree
 * on it; crossing a threshold reshuffles every shard, which is rare.
 *
 * Feeds list the newest notes by date (updated, else created, else the
 * file's). The site, each tag and each folder (with the folders below it)
 * keep their notes in that order as they come and go (an ordered set,
 * oset.h), so a feed is rewritten from its first feed_items notes without
 * a pass over its members: a change costs O((tags + depth) log n).
 * Feeds and sitemaps need absolute URLs, so they exist only with base_url.
 */
#include "site/derived.h"
#include "util/gzip.h"
#include "util/hash.h"
#include "site/layout.h"
#include "site/listing.h"
#include "util/log.h"
#include "util/oset.h"
#include "site/model.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct notelist {
	struct site_note **v;
	size_t n, alloc;
};

struct derived_tag {
	char *key;             /* lowercased, as tag links write it */
	struct listing list;   /* its notes by title, and the pages of its listing */
	struct oset by_date;   /* the same notes, newest first: its feed */
	int dirty;             /* its listing has changes to write */
	int feed_dirty;        /* its feed must be written again */
	int queued;            /* in dirty_tags */
};

struct derived_folder {
	char *path;            /* vault path, "" for the root */
	char *name;
	struct derived_folder *parent;
	struct listing list;   /* listed notes directly inside, by title: its listing's
				  pages and its explorer documents, cut alike */
	size_t subtree;        /* listed notes inside, at any depth */
	struct oset by_date;   /* those, newest first: its feed */
	struct site_note *index; /* its listed index.md, whose URL the explorer links */
	char *url;             /* where its listing is (its index note's URL) */
	int feed_dirty;        /* its feed must be written again */
	int queued;            /* in dirty_folders */
	struct derived_folder **kids;
	size_t nkids, akids;
	int dirty;
};

struct derived {
	struct map tags;       /* key -> struct derived_tag * */
	struct map folders;    /* path -> struct derived_folder * */
	struct derived_tag **dirty_tags;
	size_t ndirty_tags, adirty_tags;
	struct derived_folder **dirty_folders;
	size_t ndirty_folders, adirty_folders;
	int tree_started;      /* the root's document was written once */
	struct notelist *shards;
	int *shard_dirty;
	size_t nshards;
	size_t nlisted;
	int tag_index_dirty, site_feed_dirty, sitemap_index_dirty;
	struct map folder_by_url; /* listing URL -> struct derived_folder * */
	struct oset by_date;   /* every listed note, newest first: the site's feed */
};

static void nl_add(struct notelist *l, struct site_note *n)
{
	ALLOC_GROW(l->v, l->n + 1, l->alloc);
	l->v[l->n++] = n;
}

static void nl_del(struct notelist *l, const struct site_note *n)
{
	size_t i;
	for (i = 0; i < l->n; i++) {
		if (l->v[i] == n) {
			l->v[i] = l->v[--l->n];
			return;
		}
	}
}

/*
 * Newest first: by the date a note is listed under, then by path. The
 * same order as cmp_notes_date(), from the date kept at registration, so
 * that it cannot change while the note is in a set.
 */
static int cmp_listed_date(const void *a, const void *b)
{
	const struct site_note *x = a, *y = b;
	int c = strcmp(y->listed->date, x->listed->date);
	return c ? c : strcmp(x->note.path, y->note.path);
}

struct derived *derived_new(void)
{
	struct derived *d = xcalloc(1, sizeof(struct derived));
	d->by_date.cmp = cmp_listed_date;
	return d;
}

void derived_free(struct derived *d)
{
	size_t i = 0;
	void *v;

	if (!d)
		return;
	while (map_next(&d->tags, &i, NULL, NULL, &v)) {
		struct derived_tag *t = v;
		listing_release(&t->list, NULL, NULL);
		oset_release(&t->by_date);
		free(t->key);
		free(t);
	}
	map_release(&d->tags);
	i = 0;
	while (map_next(&d->folders, &i, NULL, NULL, &v)) {
		struct derived_folder *f = v;
		listing_release(&f->list, NULL, NULL);
		oset_release(&f->by_date);
		free(f->url);
		free(f->kids);
		free(f->path);
		free(f->name);
		free(f);
	}
	map_release(&d->folders);
	map_release(&d->folder_by_url);
	for (i = 0; i < d->nshards; i++)
		free(d->shards[i].v);
	free(d->shards);
	free(d->shard_dirty);
	free(d->dirty_tags);
	free(d->dirty_folders);
	oset_release(&d->by_date);
	free(d);
}

/* ---- marks ------------------------------------------------------------------- */

/*
 * A tag's or a folder's page (its listing) and its feed are marked apart:
 * the listing shows its own members, the feed only the newest feed_items
 * of them (and, for a folder, of the folders below). A change to a note
 * deep in the vault or far down a feed leaves both alone.
 */
static void queue_tag(struct derived *d, struct derived_tag *t)
{
	if (!t->queued) {
		t->queued = 1;
		ALLOC_GROW(d->dirty_tags, d->ndirty_tags + 1, d->adirty_tags);
		d->dirty_tags[d->ndirty_tags++] = t;
	}
}

static void tag_dirty(struct derived *d, struct derived_tag *t)
{
	t->dirty = 1;
	queue_tag(d, t);
}

static void queue_folder(struct derived *d, struct derived_folder *f)
{
	if (f && !f->queued) {
		f->queued = 1;
		ALLOC_GROW(d->dirty_folders, d->ndirty_folders + 1, d->adirty_folders);
		d->dirty_folders[d->ndirty_folders++] = f;
	}
}

/* Its listing has changes (touched by listing_add/del/touch) to write. */
static void folder_dirty(struct derived *d, struct derived_folder *f)
{
	if (f) {
		f->dirty = 1;
		queue_folder(d, f);
	}
}

/*
 * The first page of its listing and of its explorer document must be
 * written again: its subfolders, or the URL one of them links, changed.
 */
static void folder_head(struct derived *d, struct derived_folder *f)
{
	if (f) {
		listing_head(&f->list);
		folder_dirty(d, f);
	}
}

/* A folder's listed notes, at any depth, went from none to some or back: its parent lists it or not. */
static void count_change(struct derived *d, struct derived_folder *f, int delta)
{
	for (; f; f = f->parent) {
		size_t before = f->subtree;
		f->subtree += (size_t)delta;
		if (!before != !f->subtree) {
			folder_head(d, f);
			folder_head(d, f->parent);
		}
	}
}

static int is_index(const char *path)
{
	const char *base = strrchr(path, '/');
	return strcasecmp(base ? base + 1 : path, "index.md") == 0;
}

static struct derived_tag *get_tag(struct derived *d, const char *key)
{
	struct derived_tag *t = map_gets(&d->tags, key);

	if (!t) {
		t = xcalloc(1, sizeof(*t));
		t->key = xstrdup(key);
		listing_init(&t->list);
		t->by_date.cmp = cmp_listed_date;
		map_put(&d->tags, t->key, strlen(t->key), t);
	}
	return t;
}

static char *folder_url(const struct derived_folder *f)
{
	struct buf idx = BUF_INIT;
	char *u;

	buf_addf(&idx, "%s%sindex.md", f->path, f->path[0] ? "/" : "");
	u = vault_note_url(idx.ptr, NULL);
	buf_release(&idx);
	return u;
}

static struct derived_folder *get_folder(struct derived *d, const char *path, size_t len)
{
	struct derived_folder *f = map_get(&d->folders, path, len);
	const char *slash;


	if (f)
		return f;
	f = xcalloc(1, sizeof(*f));
	f->path = xstrndup(path, len);
	listing_init(&f->list);
	f->by_date.cmp = cmp_listed_date;
	f->url = folder_url(f);
	map_put(&d->folder_by_url, f->url, strlen(f->url), f);
	map_put(&d->folders, f->path, len, f);
	for (slash = path + len; slash > path && slash[-1] != '/'; slash--)
		;
	slash = slash > path ? slash - 1 : NULL;
	f->name = slash ? xstrndup(slash + 1, (size_t)(path + len - slash - 1)) : xstrdup(f->path);
	if (len) {
		f->parent = get_folder(d, path, slash ? (size_t)(slash - path) : 0);
		ALLOC_GROW(f->parent->kids, f->parent->nkids + 1, f->parent->akids);
		f->parent->kids[f->parent->nkids++] = f;
	}
	return f;
}

/* ---- what a note shows ---------------------------------------------------------- */

void site_note_date(const struct site_note *n, char out[11])
{
	const char *d = n->note.updated ? n->note.updated : n->note.created;
	struct tm tm;

	if (d) {
		memcpy(out, d, 10);
		out[10] = '\0';
		return;
	}
	gmtime_r(&n->note.mtime, &tm);
	strftime(out, 11, "%Y-%m-%d", &tm);
}

static const char *summary_of(const struct site_note *n)
{
	return n->note.description ? n->note.description : n->md.summary;
}

static uint64_t signature(const struct site_note *n)
{
	struct buf b = BUF_INIT;
	char date[11];
	const char *sum = summary_of(n);
	uint64_t h;

	site_note_date(n, date);
	buf_adds(&b, n->note.title);
	buf_addc(&b, 0);
	buf_adds(&b, n->href);
	buf_addc(&b, 0);
	buf_adds(&b, date);
	buf_addc(&b, 0);
	buf_adds(&b, sum ? sum : "");
	h = hash64(b.ptr, b.len);
	buf_release(&b);
	return h ? h : 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The tag keys a note lists under: each tag lowercased, with its parents, sorted, unique. */
static void tag_keys(const struct site_note *n, char ***out, size_t *nout)
{
	char **v = NULL;
	size_t nv = 0, k, j, total = n->note.tags.n + n->md.ntags;

	for (k = 0; k < total; k++) {
		const char *t = k < n->note.tags.n ? n->note.tags.v[k] : n->md.tags[k - n->note.tags.n];
		char *low = utf8_lower(t, strlen(t)), *p;
		/* "a/b/c" lists under "a", "a/b" and "a/b/c" */
		for (p = low;; p++) {
			if (*p == '/' || *p == '\0') {
				if (p > low) {
					v = xrealloc(v, (nv + 1) * sizeof(*v));
					v[nv++] = xstrndup(low, (size_t)(p - low));
				}
				if (!*p)
					break;
			}
		}
		free(low);
	}
	if (nv > 1)
		qsort(v, nv, sizeof(*v), cmp_str);
	for (k = 0, j = 0; k < nv; k++) {
		if (j && strcmp(v[j - 1], v[k]) == 0)
			free(v[k]);
		else
			v[j++] = v[k];
	}
	*out = v;
	*nout = j;
}

/* qsort() that accepts an empty (NULL) array, which the C library may not. */
static void sort(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(v, n, size, cmp);
}

static int has_key(char *const *v, size_t n, const char *key)
{
	return n && bsearch(&key, v, n, sizeof(*v), cmp_str) != NULL;
}

static size_t shard_count(size_t listed)
{
	size_t k = 1;
	while (k * 500 < listed)
		k *= 2;
	return k;
}

static int shard_of(const struct derived *d, const char *url)
{
	return (int)(hash64(url, strlen(url)) & (d->nshards - 1));
}

static void shard_dirty(struct derived *d, int i)
{
	if (i >= 0 && (size_t)i < d->nshards)
		d->shard_dirty[i] = 1;
}

/*
 * Takes a listed note out of, or puts it into, every feed's order: the
 * site's, its tags', its folder's and every folder's above (as registered
 * in dtags, dfolder and ddate). O((tags + depth) log n): no feed is sorted
 * again when one note changes.
 */
/* Whether n is among the first k of o: a walk of k steps at most. */
static int in_top(const struct oset *o, const struct site_note *n, size_t k)
{
	struct oset_iter it = OSET_ITER_INIT;
	const struct site_note *x;

	while (k-- > 0 && (x = oset_next(o, &it)))
		if (x == n)
			return 1;
	return 0;
}

/* Takes n out of, or puts it into, o; 1 when that changes o's first k (its feed). */
static int move_in(struct oset *o, struct site_note *n, int add, size_t k)
{
	int top;

	if (add) {
		oset_add(o, n);
		return in_top(o, n, k);
	}
	top = in_top(o, n, k);
	oset_del(o, n);
	return top;
}

static void date_sets(struct derived *d, struct site_note *n, int add, size_t top)
{
	struct derived_folder *f;
	size_t k;

	if (move_in(&d->by_date, n, add, top))
		d->site_feed_dirty = 1;
	for (k = 0; k < n->listed->ntags; k++) {
		struct derived_tag *t = get_tag(d, n->listed->tags[k]);
		if (move_in(&t->by_date, n, add, top)) {
			t->feed_dirty = 1;
			queue_tag(d, t);
		}
	}
	for (f = n->listed->folder; f; f = f->parent) {
		if (move_in(&f->by_date, n, add, top)) {
			f->feed_dirty = 1;
			queue_folder(d, f);
		}
	}
}

/* The first k notes of a feed's order. */
static void newest(const struct oset *o, size_t k, struct notelist *out)
{
	struct oset_iter it = OSET_ITER_INIT;
	struct site_note *n;

	while (out->n < k && (n = oset_next(o, &it)))
		nl_add(out, n);
}

/* Registers a note as it is now; marks whatever lists it, before or now. */
static void update_note(struct site *s, struct site_note *n)
{
	struct derived *d = s->derived;
	int listed = n->published && !n->removed;
	uint64_t sig = listed ? signature(n) : 0;
	char **keys = NULL;
	size_t nkeys = 0, k;
	struct derived_folder *folder = NULL;
	int changed, resort, retitle;
	size_t top = (size_t)s->cfg.feed_items;

	if (!n->listed) {
		n->listed = xcalloc(1, sizeof(*n->listed));
		n->listed->shard = -1;
	}
	changed = sig != n->listed->sig;

	if (listed) {
		const char *slash = strrchr(n->note.path, '/');
		tag_keys(n, &keys, &nkeys);
		folder = get_folder(d, n->note.path, slash ? (size_t)(slash - n->note.path) : 0);
	}
	/* what a feed shows of it, or which feeds it is in, changed */
	resort = changed || folder != n->listed->folder || nkeys != n->listed->ntags;
	for (k = 0; !resort && k < nkeys; k++)
		resort = strcmp(keys[k], n->listed->tags[k]) != 0;
	if (n->listed->sig && resort)
		date_sets(d, n, 0, top);
	/*
	 * Listings order by the title a note was registered with (dtitle): a
	 * retitled note leaves its place under the old title before it takes
	 * the new one, in its tags and its folder alike.
	 */
	retitle = n->listed->sig && listed && strcmp(n->listed->title, n->note.title) != 0;
	for (k = 0; k < n->listed->ntags; k++) {
		struct derived_tag *t = get_tag(d, n->listed->tags[k]);
		int stays = has_key(keys, nkeys, n->listed->tags[k]);
		if (!stays || retitle)
			listing_del(&t->list, n);
		else if (changed)
			listing_touch(&t->list, n);
		if (!stays)
			d->tag_index_dirty = 1;
		if (!stays || changed)
			tag_dirty(d, t);
	}
	if (n->listed->folder && (n->listed->folder != folder || retitle)) {
		listing_del(&n->listed->folder->list, n);
		folder_dirty(d, n->listed->folder);
	} else if (n->listed->folder && changed) {
		listing_touch(&n->listed->folder->list, n);
		folder_dirty(d, n->listed->folder);
	}
	free(n->listed->title);
	n->listed->title = listed ? xstrdup(n->note.title) : NULL;
	for (k = 0; k < nkeys; k++) {
		struct derived_tag *t = get_tag(d, keys[k]);
		int joins = !has_key(n->listed->tags, n->listed->ntags, keys[k]);
		if (joins || retitle) {
			listing_add(&t->list, n);
			tag_dirty(d, t);
		}
		if (joins)
			d->tag_index_dirty = 1;
	}
	for (k = 0; k < n->listed->ntags; k++)
		free(n->listed->tags[k]);
	free(n->listed->tags);
	n->listed->tags = keys;
	n->listed->ntags = nkeys;
	if (folder && (n->listed->folder != folder || retitle)) {
		listing_add(&folder->list, n);
		folder_dirty(d, folder);
	}
	/* folders; a folder's index note is its link in the explorer's document above it */
	if (n->listed->folder && n->listed->folder->index == n && (n->listed->folder != folder || changed)) {
		/* "index.md" and "Index.md" both: the first in path order is the one */
		struct derived_folder *f = n->listed->folder;
		struct oset_iter it = OSET_ITER_INIT;
		struct site_note *x;
		f->index = NULL;
		while ((x = oset_next(&f->list.notes, &it)))
			if (x != n && is_index(x->note.path) &&
			    (!f->index || strcmp(x->note.path, f->index->note.path) < 0))
				f->index = x;
		folder_head(d, f->parent);
	}
	if (n->listed->folder != folder) {
		if (n->listed->folder)
			count_change(d, n->listed->folder, -1);
		if (folder)
			count_change(d, folder, 1);
		n->listed->folder = folder;
		d->nlisted += (listed ? 1 : 0) - (n->listed->sig ? 1 : 0);
	}
	if (folder && is_index(n->note.path) && folder->index != n &&
	    (!folder->index || strcmp(n->note.path, folder->index->note.path) < 0)) {
		folder->index = n;
		folder_head(d, folder->parent);
	}
	/* sitemap shard */
	if (n->listed->shard >= 0 && (!listed || changed)) {
		nl_del(&d->shards[n->listed->shard], n);
		shard_dirty(d, n->listed->shard);
		n->listed->shard = -1;
	}
	if (listed && n->listed->shard < 0 && d->nshards) {
		n->listed->shard = shard_of(d, n->url);
		nl_add(&d->shards[n->listed->shard], n);
		shard_dirty(d, n->listed->shard);
	}
	/* a derived page may want the URL the note left, or yield to the one it took */
	if (n->listed->url && (!listed || strcmp(n->listed->url, n->url) != 0)) {
		struct derived_tag *t;
		struct derived_folder *f;
		if (strncmp(n->listed->url, "/tags/", 6) == 0 && (t = map_gets(&d->tags, n->listed->url + 6))) {
			listing_head(&t->list);
			tag_dirty(d, t);
		}
		if (!strcmp(n->listed->url, "/tags/"))
			d->tag_index_dirty = 1;
		/* a folder's listing lives at its index note's URL */
		if ((f = map_gets(&d->folder_by_url, n->listed->url)))
			folder_head(d, f);
	}
	free(n->listed->url);
	n->listed->url = listed ? xstrdup(n->url) : NULL;
	n->listed->sig = sig;
	if (listed && resort) {
		site_note_date(n, n->listed->date);
		date_sets(d, n, 1, top);
	}
}

/* ---- rendering ------------------------------------------------------------------ */

/* The absolute URL for an href (base_url's origin + href). */
static void add_abs(const struct site *s, struct buf *b, const char *href)
{
	size_t blen = strlen(s->cfg.base_url), plen = strlen(s->cfg.url_prefix);
	buf_add_html(b, s->cfg.base_url, blen - plen);
	buf_adds_html(b, href);
}

static void put_text(struct site *s, enum page_kind kind, const char *key, const char *type,
		     struct buf *content)
{
	struct page *cur = map_gets(&s->pages, key), *p;
	char etag[ETAG_SIZE];
	size_t len;
	char *bytes;

	if (cur && cur->kind == PAGE_NOTE) {
		buf_reset(content);
		return; /* a note owns this URL */
	}
	/*
	 * The same bytes as the page served: its ETag says so (the server
	 * keeps only the gzip bytes, and inflating them to compare would cost
	 * more than the hash; a client's If-None-Match trusts the same hash).
	 */
	hash_etag(content->ptr, content->len, etag);
	if (cur && cur->body_len == content->len && !strcmp(cur->etag, etag)) {
		buf_reset(content);
		return;
	}
	p = page_new(kind, key, strlen(key));
	p->content_type = type;
	buf_fit(content); /* kept as long as the page */
	bytes = buf_detach(content, &len);
	if (s->gzip_later)
		page_set_body_later(p, bytes, len, GZIP_FAST); /* site_gzip_pending() */
	else
		page_set_body(p, bytes, len, GZIP_FAST);
	site_page_put(s, p);
	page_unref(p);
}

static void del_generated(struct site *s, const char *key)
{
	struct page *cur = map_gets(&s->pages, key);
	if (cur && cur->kind == PAGE_GENERATED)
		site_page_del(s, key);
}

/* Newest first: by date, then by path for a stable order. */
static int cmp_notes_date(const void *a, const void *b)
{
	const struct site_note *x = *(struct site_note *const *)a, *y = *(struct site_note *const *)b;
	char dx[11], dy[11];
	int c;

	site_note_date(x, dx);
	site_note_date(y, dy);
	c = strcmp(dy, dx);
	return c ? c : strcmp(x->note.path, y->note.path);
}

static void rfc822(const char *date, char *out, size_t size)
{
	struct tm tm;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = atoi(date) - 1900;
	tm.tm_mon = atoi(date + 5) - 1;
	tm.tm_mday = atoi(date + 8);
	t = timegm(&tm);
	gmtime_r(&t, &tm);
	strftime(out, size, "%a, %d %b %Y 00:00:00 +0000", &tm);
}

static int cmp_entries_date(const void *a, const void *b)
{
	const struct feed_entry *x = a, *y = b;
	return cmp_notes_date(&x->note, &y->note);
}

static void add_origin_href(struct buf *b, const char *origin, const char *href)
{
	buf_adds_html(b, origin);
	buf_adds_html(b, href);
}

/*
 * Plain text where RSS wants HTML (<description>): readers render it, so
 * the text is escaped as HTML and that HTML escaped again as XML; once
 * would let a "<script>" in a summary reach the reader as markup.
 */
static void add_text_as_html(struct buf *b, const char *text)
{
	struct buf html = BUF_INIT;

	buf_adds_html(&html, text);
	if (html.len)
		buf_add_html(b, html.ptr, html.len);
	buf_release(&html);
}

void derived_rss(const struct site *s, const struct feed_target *t, struct feed_entry *v,
		 size_t n, struct buf *b)
{
	size_t i, max = (size_t)s->cfg.feed_items;
	char date[11], when[64];

	sort(v, n, sizeof(*v), cmp_entries_date);
	buf_adds(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		    "<rss version=\"2.0\" xmlns:atom=\"http://www.w3.org/2005/Atom\">\n<channel>\n"
		    "<title>");
	buf_adds_html(b, t->title);
	buf_adds(b, "</title>\n<link>");
	add_origin_href(b, t->origin, t->home);
	buf_adds(b, "</link>\n<description>");
	add_text_as_html(b, "Recent notes: ");
	add_text_as_html(b, t->title);
	buf_adds(b, "</description>\n<language>");
	buf_adds_html(b, s->cfg.language);
	buf_adds(b, "</language>\n<atom:link rel=\"self\" type=\"application/rss+xml\" href=\"");
	add_origin_href(b, t->origin, t->self);
	buf_adds(b, "\"/>\n");
	for (i = 0; i < n && i < max; i++) {
		const char *sum = summary_of(v[i].note);
		site_note_date(v[i].note, date);
		rfc822(date, when, sizeof(when));
		buf_adds(b, "<item>\n<title>");
		buf_adds_html(b, v[i].note->note.title);
		buf_adds(b, "</title>\n<link>");
		add_origin_href(b, t->origin, v[i].href);
		buf_adds(b, "</link>\n<guid isPermaLink=\"true\">");
		add_origin_href(b, t->origin, v[i].href);
		buf_adds(b, "</guid>\n<pubDate>");
		buf_adds(b, when);
		buf_adds(b, "</pubDate>\n");
		if (sum && *sum) {
			buf_adds(b, "<description>");
			add_text_as_html(b, sum);
			buf_adds(b, "</description>\n");
		}
		buf_adds(b, "</item>\n");
	}
	buf_adds(b, "</channel>\n</rss>\n");
}

void derived_atom(const struct site *s, const struct feed_target *t, struct feed_entry *v,
		  size_t n, struct buf *b)
{
	size_t i, max = (size_t)s->cfg.feed_items;
	char date[11];

	sort(v, n, sizeof(*v), cmp_entries_date);
	buf_adds(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		    "<feed xmlns=\"http://www.w3.org/2005/Atom\">\n<title>");
	buf_adds_html(b, t->title);
	buf_adds(b, "</title>\n<id>");
	add_origin_href(b, t->origin, t->home);
	buf_adds(b, "</id>\n<link href=\"");
	add_origin_href(b, t->origin, t->home);
	buf_adds(b, "\"/>\n<link rel=\"self\" href=\"");
	add_origin_href(b, t->origin, t->self);
	buf_adds(b, "\"/>\n<updated>");
	if (n)
		site_note_date(v[0].note, date);
	else
		strcpy(date, "1970-01-01");
	buf_adds(b, date);
	buf_adds(b, "T00:00:00Z</updated>\n<author><name>");
	buf_adds_html(b, t->title);
	buf_adds(b, "</name></author>\n");
	for (i = 0; i < n && i < max; i++) {
		const char *sum = summary_of(v[i].note);
		site_note_date(v[i].note, date);
		buf_adds(b, "<entry>\n<title>");
		buf_adds_html(b, v[i].note->note.title);
		buf_adds(b, "</title>\n<id>");
		add_origin_href(b, t->origin, v[i].href);
		buf_adds(b, "</id>\n<link href=\"");
		add_origin_href(b, t->origin, v[i].href);
		buf_adds(b, "\"/>\n<updated>");
		buf_adds(b, date);
		buf_adds(b, "T00:00:00Z</updated>\n");
		if (sum && *sum) {
			buf_adds(b, "<summary>");
			buf_adds_html(b, sum);
			buf_adds(b, "</summary>\n");
		}
		buf_adds(b, "</entry>\n");
	}
	buf_adds(b, "</feed>\n");
}

void derived_urlset(const char *origin, const struct feed_entry *v, size_t n, struct buf *b)
{
	size_t k;
	char date[11];

	buf_adds(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		    "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
	for (k = 0; k < n; k++) {
		site_note_date(v[k].note, date);
		buf_adds(b, "<url><loc>");
		add_origin_href(b, origin, v[k].href);
		buf_adds(b, "</loc><lastmod>");
		buf_adds(b, date);
		buf_adds(b, "</lastmod></url>\n");
	}
	buf_adds(b, "</urlset>\n");
}

/* The main site's origin: base_url without its path prefix. */
static char *main_origin(const struct site *s)
{
	size_t blen = strlen(s->cfg.base_url), plen = strlen(s->cfg.url_prefix);
	return xstrndup(s->cfg.base_url, blen - plen);
}

static struct feed_entry *entries_of(struct site_note *const *v, size_t n)
{
	struct feed_entry *e = xcalloc(n + 1, sizeof(*e));
	size_t i;

	for (i = 0; i < n; i++) {
		e[i].note = v[i];
		e[i].href = v[i]->href;
	}
	return e;
}

/* The main site's RSS feed (at key) and, for the whole site, its Atom feed. */
static void write_feeds(struct site *s, const char *key, const char *title, const char *home,
		  struct site_note *const *v, size_t n, int with_atom)
{
	struct feed_entry *e = entries_of(v, n);
	struct buf b = BUF_INIT, self = BUF_INIT;
	char *origin = main_origin(s);
	struct feed_target t = { origin, title, home, NULL };

	buf_adds(&self, s->cfg.url_prefix);
	buf_add_urlpath(&self, key, strlen(key));
	t.self = self.ptr;
	derived_rss(s, &t, e, n, &b);
	put_text(s, PAGE_GENERATED, key, "application/rss+xml; charset=utf-8", &b);
	if (with_atom) {
		buf_reset(&self);
		buf_addf(&self, "%s/atom.xml", s->cfg.url_prefix);
		t.self = self.ptr;
		derived_atom(s, &t, e, n, &b);
		put_text(s, PAGE_GENERATED, "/atom.xml", "application/atom+xml; charset=utf-8", &b);
	}
	buf_release(&b);
	buf_release(&self);
	free(origin);
	free(e);
}

static void note_items(const struct site_note *const *v, size_t n, struct layout_item *items,
		       char (*dates)[11])
{
	size_t i;
	for (i = 0; i < n; i++) {
		if (v[i]->listed->date[0])
			memcpy(dates[i], v[i]->listed->date, sizeof(dates[i])); /* as registered */
		else
			site_note_date(v[i], dates[i]);
		items[i].title = v[i]->note.title;
		items[i].url = v[i]->href;
		items[i].summary = summary_of(v[i]);
		items[i].date = dates[i];
	}
}

/*
 * Listings (a tag's notes, a folder's) are cut into pages by listing.c;
 * here is what a page shows. The first page is the listing's own URL and
 * lists every page by its first title (a folder's subfolders come first
 * there); the others are <URL>/~<hash of their first note's path> ('~' is
 * in no note's URL), are titled by their first and last notes, and link
 * back to the first. Only pages whose bytes changed are compressed and
 * replaced (put_text).
 */
static void listing_key(const char *key0, const char *first_path, struct buf *key)
{
	size_t len = strlen(key0);

	buf_reset(key);
	buf_adds(key, key0);
	if (first_path) {
		if (!len || key0[len - 1] != '/')
			buf_addc(key, '/');
		buf_addf(key, "~%012llx",
			 (unsigned long long)(hash64(first_path, strlen(first_path)) &
					      0xffffffffffffull));
	}
}

/* The pager of a listing's first page: every page by its first note's title. */
static void listing_pager(struct site *s, const struct listing *l, struct buf *intro)
{
	struct oset_iter it = OSET_ITER_INIT;
	const struct listing_page *p;
	struct buf href = BUF_INIT;

	if (l->pages.n < 2)
		return;
	buf_adds(intro, "<nav class=\"pager\" aria-label=\"Pages\"><ol>");
	while ((p = oset_next(&l->pages, &it))) {
		buf_reset(&href);
		buf_adds(&href, s->cfg.url_prefix);
		buf_add_urlpath(&href, p->key, strlen(p->key));
		if (p->head) {
			buf_adds(intro, "<li aria-current=\"page\">");
		} else {
			buf_adds(intro, "<li><a href=\"");
			buf_adds_html(intro, href.ptr);
			buf_adds(intro, "\">");
		}
		buf_adds_html(intro, p->title);
		buf_adds(intro, p->head ? "</li>" : "</a></li>");
	}
	buf_adds(intro, "</ol></nav>\n");
	buf_release(&href);
}

/*
 * Writes one page of a listing whose first page is key0 and whose name is
 * title: lead items (a folder's subfolders) first on the first page, then
 * notes v[0..n).
 */
static void listing_html(struct site *s, const struct listing *l, const struct listing_page *p,
			 const char *key0, const char *title, const struct layout_item *lead,
			 size_t nlead, struct site_note *const *v, size_t n)
{
	struct layout_item *items = xcalloc(nlead + n + 1, sizeof(*items));
	char (*dates)[11] = xcalloc(n + 1, sizeof(*dates));
	struct buf html = BUF_INIT, intro = BUF_INIT, page_title = BUF_INIT, href = BUF_INIT;
	int head = !p || p->head;

	buf_adds(&page_title, title);
	if (head) {
		listing_pager(s, l, &intro);
		if (nlead)
			memcpy(items, lead, nlead * sizeof(*items));
	} else {
		nlead = 0;
		buf_adds(&href, s->cfg.url_prefix);
		buf_add_urlpath(&href, key0, strlen(key0));
		buf_adds(&intro, "<nav class=\"pager\"><a href=\"");
		buf_adds_html(&intro, href.ptr);
		buf_adds(&intro, "\">All pages of ");
		buf_adds_html(&intro, title);
		buf_adds(&intro, "</a></nav>\n");
		if (n)
			buf_addf(&page_title, " (%s \xe2\x80\x93 %s)", v[0]->note.title,
				 v[n - 1]->note.title);
	}
	note_items((const struct site_note *const *)v, n, items + nlead, dates);
	layout_listing_page(&s->layout, page_title.ptr, intro.len ? intro.ptr : NULL, items,
			    nlead + n, &html);
	put_text(s, PAGE_GENERATED, p ? p->key : key0, "text/html; charset=utf-8", &html);
	free(items);
	free(dates);
	buf_release(&html);
	buf_release(&intro);
	buf_release(&page_title);
	buf_release(&href);
}

/* ---- tags ---------------------------------------------------------------------- */

struct tag_ctx {
	struct site *s;
	struct derived_tag *t;
	struct buf key0, title;
};

static void tag_page_key(void *arg, const char *first_path, struct buf *out)
{
	struct tag_ctx *c = arg;
	listing_key(c->key0.ptr, first_path, out);
}

static void tag_page_write(void *arg, const struct listing *l, const struct listing_page *p,
			   struct site_note *const *v, size_t n)
{
	struct tag_ctx *c = arg;

	if (!p) { /* the tag has no notes left */
		del_generated(c->s, c->key0.ptr);
		return;
	}
	listing_html(c->s, l, p, c->key0.ptr, c->title.ptr, NULL, 0, v, n);
}

static void tag_page_drop(void *arg, const struct listing_page *p)
{
	struct tag_ctx *c = arg;
	del_generated(c->s, p->key);
}

static const struct listing_ops tag_ops = { tag_page_key, tag_page_write, tag_page_drop };

/* A tag's listing (what changed of it) and its feed. */
static void render_tag(struct site *s, struct derived_tag *t, int listing, int with_feed)
{
	struct tag_ctx c = { s, t, BUF_INIT, BUF_INIT };

	buf_addf(&c.key0, "/tags/%s", t->key);
	buf_addf(&c.title, "#%s", t->key);
	if (listing)
		listing_flush(&t->list, &tag_ops, &c);
	if (!listing_count(&t->list)) {
		buf_adds(&c.key0, "/rss.xml");
		del_generated(s, c.key0.ptr);
	} else if (with_feed && s->cfg.base_url[0]) {
		struct buf link = BUF_INIT;
		struct notelist top = { 0 };
		buf_adds(&link, s->cfg.url_prefix);
		buf_add_urlpath(&link, c.key0.ptr, c.key0.len);
		buf_adds(&c.key0, "/rss.xml");
		newest(&t->by_date, (size_t)s->cfg.feed_items, &top);
		write_feeds(s, c.key0.ptr, c.title.ptr, link.ptr, top.v, top.n, 0);
		free(top.v);
		buf_release(&link);
	}
	buf_release(&c.key0);
	buf_release(&c.title);
}

static int cmp_tag_key(const void *a, const void *b)
{
	return strcmp((*(struct derived_tag *const *)a)->key, (*(struct derived_tag *const *)b)->key);
}

static void render_tag_index(struct site *s)
{
	struct derived *d = s->derived;
	struct derived_tag **v = xcalloc(d->tags.len + 1, sizeof(*v));
	struct layout_item *items = xcalloc(d->tags.len + 1, sizeof(*items));
	char **urls = xcalloc(d->tags.len + 1, sizeof(*urls)), **counts;
	struct buf html = BUF_INIT;
	size_t i = 0, n = 0;
	void *val;

	while (map_next(&d->tags, &i, NULL, NULL, &val))
		if (listing_count(&((struct derived_tag *)val)->list))
			v[n++] = val;
	sort(v, n, sizeof(*v), cmp_tag_key);
	counts = xcalloc(n + 1, sizeof(*counts));
	for (i = 0; i < n; i++) {
		struct buf u = BUF_INIT, c = BUF_INIT;
		buf_addf(&u, "%s/tags/", s->cfg.url_prefix);
		buf_add_urlpath(&u, v[i]->key, strlen(v[i]->key));
		size_t count = listing_count(&v[i]->list);
		buf_addf(&c, "%zu note%s", count, count == 1 ? "" : "s");
		urls[i] = buf_detach(&u, NULL);
		counts[i] = buf_detach(&c, NULL);
		items[i].title = v[i]->key;
		items[i].url = urls[i];
		items[i].summary = counts[i];
	}
	layout_listing_page(&s->layout, "Tags", NULL, items, n, &html);
	put_text(s, PAGE_GENERATED, "/tags/", "text/html; charset=utf-8", &html);
	for (i = 0; i < n; i++) {
		free(urls[i]);
		free(counts[i]);
	}
	free(urls);
	free(counts);
	free(items);
	free(v);
	buf_release(&html);
}

/* ---- folders: listings and the explorer --------------------------------------------- */

static int cmp_folder_name(const void *a, const void *b)
{
	const struct derived_folder *x = *(struct derived_folder *const *)a,
				    *y = *(struct derived_folder *const *)b;
	int c = strcasecmp(x->name, y->name);
	return c ? c : strcmp(x->name, y->name);
}

/*
 * The explorer: one JSON document per folder, cut into the same pages as
 * its listing. /_quire/tree.json is the root's first page,
 * /_quire/tree/<folder path>.json a folder's; it names the folder's
 * subfolders (those with listed notes somewhere below), each with its
 * index note's URL or null, then its first page of notes, and "more": the
 * URLs of its other pages (/_quire/tree-more/[<folder path>/]<hash>.json),
 * each {"children": [its notes]}. The theme loads a folder's documents
 * when the folder is opened (and those on the way to the page shown, from
 * <body data-folder>), so a change rewrites the page of the folder it
 * touched, not the folder, let alone the whole tree.
 */
static void tree_key(const struct derived_folder *f, const char *first_path, struct buf *key)
{
	buf_reset(key);
	if (first_path) {
		buf_adds(key, "/_quire/tree-more/");
		if (f->path[0])
			buf_addf(key, "%s/", f->path);
		buf_addf(key, "%012llx.json",
			 (unsigned long long)(hash64(first_path, strlen(first_path)) &
					      0xffffffffffffull));
	} else if (f->path[0]) {
		buf_addf(key, "/_quire/tree/%s.json", f->path);
	} else {
		buf_adds(key, "/_quire/tree.json");
	}
}

/* The subfolders that show, by name. */
static struct derived_folder **shown_kids(const struct derived_folder *f, size_t *nk)
{
	struct derived_folder **kids = xcalloc(f->nkids + 1, sizeof(*kids));
	size_t i;

	*nk = 0;
	for (i = 0; i < f->nkids; i++)
		if (f->kids[i]->subtree)
			kids[(*nk)++] = f->kids[i];
	sort(kids, *nk, sizeof(*kids), cmp_folder_name);
	return kids;
}

static void tree_doc(struct site *s, const struct derived_folder *f, const struct listing *l,
		     const struct listing_page *p, struct site_note *const *v, size_t n,
		     struct derived_folder *const *kids, size_t nk)
{
	struct buf key = BUF_INIT, b = BUF_INIT;
	int head = !p || p->head;
	size_t i, k = 0;

	tree_key(f, head ? NULL : p->path, &key);
	buf_addc(&b, '{');
	if (head && !f->path[0]) {
		buf_adds(&b, "\"title\":\"");
		buf_adds_json(&b, s->cfg.title);
		buf_adds(&b, "\",\"url\":\"");
		buf_adds_json(&b, s->cfg.url_prefix);
		buf_adds(&b, "/\",");
	}
	buf_adds(&b, "\"children\":[");
	for (i = 0; head && i < nk; i++) {
		buf_adds(&b, k++ ? ",{\"name\":\"" : "{\"name\":\"");
		buf_adds_json(&b, kids[i]->name);
		buf_adds(&b, "\",\"url\":");
		if (kids[i]->index) {
			buf_addc(&b, '"');
			buf_adds_json(&b, kids[i]->index->href);
			buf_addc(&b, '"');
		} else {
			buf_adds(&b, "null");
		}
		buf_addc(&b, '}');
	}
	for (i = 0; i < n; i++) {
		buf_adds(&b, k++ ? ",{\"title\":\"" : "{\"title\":\"");
		buf_adds_json(&b, v[i]->note.title);
		buf_adds(&b, "\",\"url\":\"");
		buf_adds_json(&b, v[i]->href);
		buf_adds(&b, "\"}");
	}
	buf_addc(&b, ']');
	if (head && l->pages.n > 1) {
		struct oset_iter it = OSET_ITER_INIT;
		const struct listing_page *q;
		struct buf more = BUF_INIT, url = BUF_INIT;
		buf_adds(&b, ",\"more\":[");
		k = 0;
		while ((q = oset_next(&l->pages, &it))) {
			if (q->head)
				continue;
			tree_key(f, q->path, &more);
			buf_reset(&url);
			buf_adds(&url, s->cfg.url_prefix);
			buf_add_urlpath(&url, more.ptr, more.len);
			buf_adds(&b, k++ ? ",\"" : "\"");
			buf_adds_json(&b, url.ptr);
			buf_addc(&b, '"');
		}
		buf_addc(&b, ']');
		buf_release(&more);
		buf_release(&url);
	}
	buf_adds(&b, "}\n");
	put_text(s, PAGE_GENERATED, key.ptr, "application/json", &b);
	buf_release(&key);
	buf_release(&b);
}

struct folder_ctx {
	struct site *s;
	struct derived_folder *f;
};

static void folder_page_key(void *arg, const char *first_path, struct buf *out)
{
	struct folder_ctx *c = arg;
	listing_key(c->f->url, first_path, out);
}

static void folder_page_write(void *arg, const struct listing *l, const struct listing_page *p,
			      struct site_note *const *v, size_t n)
{
	struct folder_ctx *c = arg;
	struct site *s = c->s;
	struct derived_folder *f = c->f, **kids = NULL;
	struct layout_item *lead = NULL;
	char **kid_urls = NULL;
	size_t nk = 0, i;
	struct buf key = BUF_INIT;

	if (!p || p->head) {
		if (!f->subtree) {
			/* nothing listed below: no listing; the root keeps an empty explorer */
			del_generated(s, f->url);
			tree_key(f, NULL, &key);
			if (f->path[0])
				del_generated(s, key.ptr);
			else
				tree_doc(s, f, l, NULL, NULL, 0, NULL, 0);
			buf_release(&key);
			return;
		}
		kids = shown_kids(f, &nk);
		lead = xcalloc(nk + 1, sizeof(*lead));
		kid_urls = xcalloc(nk + 1, sizeof(*kid_urls));
		for (i = 0; i < nk; i++) {
			char *ku = folder_url(kids[i]);
			struct buf b = BUF_INIT;
			buf_adds(&b, s->cfg.url_prefix);
			buf_add_urlpath(&b, ku, strlen(ku));
			free(ku);
			kid_urls[i] = buf_detach(&b, NULL);
			lead[i].title = kids[i]->name;
			lead[i].url = kid_urls[i];
		}
	}
	listing_html(s, l, p, f->url, f->path[0] ? f->name : s->cfg.title, lead, nk, v, n);
	tree_doc(s, f, l, p, v, n, kids, nk);
	for (i = 0; i < nk; i++)
		free(kid_urls[i]);
	free(kid_urls);
	free(lead);
	free(kids);
	buf_release(&key);
}

static void folder_page_drop(void *arg, const struct listing_page *p)
{
	struct folder_ctx *c = arg;
	struct buf key = BUF_INIT;

	del_generated(c->s, p->key);
	tree_key(c->f, p->head ? NULL : p->path, &key);
	del_generated(c->s, key.ptr);
	buf_release(&key);
}

static const struct listing_ops folder_ops = { folder_page_key, folder_page_write,
					       folder_page_drop };

/* A folder's listing and explorer document (what changed of them), and its feed (of it and the folders below). */
static void render_folder(struct site *s, struct derived_folder *f, int listing, int with_feed)
{
	struct folder_ctx c = { s, f };
	struct buf feed = BUF_INIT, href = BUF_INIT;

	if (listing)
		listing_flush(&f->list, &folder_ops, &c);
	buf_adds(&feed, f->url);
	buf_adds(&feed, "rss.xml");
	/* the root folder's feed is the site's: /rss.xml */
	if (!f->subtree) {
		del_generated(s, feed.ptr);
	} else if (with_feed && s->cfg.base_url[0] && f->path[0]) {
		struct notelist top = { 0 };
		newest(&f->by_date, (size_t)s->cfg.feed_items, &top);
		buf_adds(&href, s->cfg.url_prefix);
		buf_add_urlpath(&href, f->url, strlen(f->url));
		write_feeds(s, feed.ptr, f->name, href.ptr, top.v, top.n, 0);
		free(top.v);
	}
	buf_release(&feed);
	buf_release(&href);
}

static int cmp_notes_url(const void *a, const void *b)
{
	return strcmp((*(struct site_note *const *)a)->url, (*(struct site_note *const *)b)->url);
}

static void render_shard(struct site *s, size_t i)
{
	struct notelist *l = &s->derived->shards[i];
	struct buf b = BUF_INIT, key = BUF_INIT;
	struct feed_entry *e;
	char *origin = main_origin(s);

	buf_addf(&key, "/sitemap-%zu.xml", i);
	sort(l->v, l->n, sizeof(*l->v), cmp_notes_url);
	e = entries_of(l->v, l->n);
	derived_urlset(origin, e, l->n, &b);
	put_text(s, PAGE_GENERATED, key.ptr, "application/xml; charset=utf-8", &b);
	free(e);
	free(origin);
	buf_release(&b);
	buf_release(&key);
}

static void render_sitemap_index(struct site *s)
{
	struct buf b = BUF_INIT, loc = BUF_INIT;
	size_t i;

	buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		     "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
	for (i = 0; i < s->derived->nshards; i++) {
		buf_reset(&loc);
		buf_addf(&loc, "%s/sitemap-%zu.xml", s->cfg.url_prefix, i);
		buf_adds(&b, "<sitemap><loc>");
		add_abs(s, &b, loc.ptr);
		buf_adds(&b, "</loc></sitemap>\n");
	}
	buf_adds(&b, "</sitemapindex>\n");
	put_text(s, PAGE_GENERATED, "/sitemap.xml", "application/xml; charset=utf-8", &b);
	buf_release(&b);
	buf_release(&loc);
}

/* A new number of shards: every listed note is placed again. */
static void reshard(struct site *s, size_t k)
{
	struct derived *d = s->derived;
	struct buf key = BUF_INIT;
	size_t i;

	for (i = k; i < d->nshards; i++) {
		buf_reset(&key);
		buf_addf(&key, "/sitemap-%zu.xml", i);
		del_generated(s, key.ptr);
	}
	for (i = 0; i < d->nshards; i++)
		free(d->shards[i].v);
	free(d->shards);
	free(d->shard_dirty);
	d->nshards = k;
	d->shards = xcalloc(k, sizeof(*d->shards));
	d->shard_dirty = xcalloc(k, sizeof(*d->shard_dirty));
	for (i = 0; i < k; i++)
		d->shard_dirty[i] = 1;
	for (i = 0; i < s->nnotes; i++) {
		struct site_note *n = s->notes[i];
		if (!n->listed)
			continue;
		n->listed->shard = -1;
		if (n->listed->sig) {
			n->listed->shard = shard_of(d, n->url);
			nl_add(&d->shards[n->listed->shard], n);
		}
	}
	d->sitemap_index_dirty = 1;
	buf_release(&key);
}

size_t derived_shards(const struct site *s)
{
	return s->cfg.base_url[0] ? s->derived->nshards : 0;
}

void derived_update(struct site *s, struct site_note *const *changed, size_t n)
{
	struct derived *d = s->derived;
	size_t i;
	int feeds = s->cfg.base_url[0] != '\0';

	if (!d->nshards)
		reshard(s, 1);
	for (i = 0; i < n; i++)
		update_note(s, changed[i]);
	if (feeds && shard_count(d->nlisted) != d->nshards)
		reshard(s, shard_count(d->nlisted));

	for (i = 0; i < d->ndirty_tags; i++) {
		struct derived_tag *t = d->dirty_tags[i];
		render_tag(s, t, t->dirty, t->feed_dirty);
		t->dirty = t->feed_dirty = t->queued = 0;
		if (!listing_count(&t->list)) {
			map_remove(&d->tags, t->key, strlen(t->key));
			listing_release(&t->list, NULL, NULL);
			oset_release(&t->by_date);
			free(t->key);
			free(t);
		}
	}
	d->ndirty_tags = 0;
	if (d->tag_index_dirty)
		render_tag_index(s);
	d->tag_index_dirty = 0;
	if (!d->tree_started) {
		folder_head(d, get_folder(d, "", 0)); /* the root's document, even with no notes */
		d->tree_started = 1;
	}
	for (i = 0; i < d->ndirty_folders; i++) {
		struct derived_folder *f = d->dirty_folders[i];
		render_folder(s, f, f->dirty, f->feed_dirty);
		f->dirty = f->feed_dirty = f->queued = 0;
	}
	d->ndirty_folders = 0;
	if (feeds) {
		for (i = 0; i < d->nshards; i++) {
			if (d->shard_dirty[i])
				render_shard(s, i);
			d->shard_dirty[i] = 0;
		}
		if (d->sitemap_index_dirty)
			render_sitemap_index(s);
		if (d->site_feed_dirty) {
			struct notelist top = { 0 };
			struct buf home = BUF_INIT;
			newest(&d->by_date, (size_t)s->cfg.feed_items, &top);
			buf_addf(&home, "%s/", s->cfg.url_prefix);
			write_feeds(s, "/rss.xml", s->cfg.title, home.ptr, top.v, top.n, 1);
			buf_release(&home);
			free(top.v);
		}
	}
	d->sitemap_index_dirty = 0;
	d->site_feed_dirty = 0;
}
