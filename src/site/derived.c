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
 * one shard and not every shard after it. The graph's documents are cut
 * along the same shards (with or without base_url), each rewritten when
 * what it shows of a member changed: title, URL, the notes it links to. The number of shards is a power
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
#include "site/feeds.h"
#include "site/layout.h"
#include "site/listing.h"
#include "site/model.h"
#include "util/gzip.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/oset.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "site/derived.h"
#include "site/derived-int.h"

/*
 * Newest first: by the date a note is listed under, then by path. The
 * same order as cmp_notes_date(), from the date kept at registration, so
 * that it cannot change while the note is in a set.
 */
static int cmp_listed_date(const void *a, const void *b)
{
	const struct site_note *x = a, *y = b;
	int c = strcmp(y->listed->date, x->listed->date);
	return c ? c : strcmp(x->listed->path, y->listed->path);
}

struct derived *derived_new(void)
{
	struct derived *d = xcalloc(1, sizeof(struct derived));
	d->by_date.cmp = cmp_listed_date;
	d->tag_index_dirty = 1; /* /tags/ is there with no tag yet: every page links it */
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
		listing_release(&f->tree, NULL, NULL);
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
	free(d->shard_sorted);
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
		listing_head(&f->tree);
		folder_dirty(d, f);
	}
}

/*
 * A folder's listed notes, at any depth, went from none to some or back:
 * its parent lists it or not.
 */
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

char *derived_folder_url(const struct derived_folder *f)
{
	return vault_folder_url(f->path, strlen(f->path));
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
	listing_init_sized(&f->tree, LISTING_TREE_PAGE, LISTING_TREE_MAX_RUN, 1);
	f->by_date.cmp = cmp_listed_date;
	f->url = derived_folder_url(f);
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

const char *derived_summary(const struct site_note *n)
{
	return n->note.description ? n->note.description : n->md.summary;
}

void derived_entry(const struct site_note *n, const char *href, struct feed_entry *out)
{
	out->title = n->note.title;
	out->href = href;
	out->summary = derived_summary(n);
	out->path = n->note.path;
	site_note_date(n, out->date);
	out->item = n;
}

static uint64_t signature(const struct site_note *n)
{
	struct buf b = BUF_INIT;
	char date[11];
	const char *sum = derived_summary(n);
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

/* A shard's sitemap (SHARD_SITEMAP), graph documents (derived_graph_bit()), or both, to write. */
static void shard_dirty(struct derived *d, int i, int what)
{
	if (i >= 0 && (size_t)i < d->nshards)
		d->shard_dirty[i] |= what;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
	return x < y ? -1 : x > y;
}

/*
 * In the order the note names them (its text's order: a full load and
 * any run of edits agree on it), each once: a few links are checked
 * against those kept, many are sorted by address to find the repeats.
 */
void derived_graph_links(const struct site_note *n, struct notevec *out)
{
	size_t k, j, i;

	out->n = 0;
	for (k = 0; n->refs && k < n->md.nrefs; k++) {
		struct site_note *t = n->refs[k].target;
		/*
		 * A link resolves to a note (MD_TARGET_NOTE) only while the note
		 * is published; a note that goes or is unpublished has its
		 * referrers resolved and rendered again before this runs.
		 */
		if (n->refs[k].kind == MD_TARGET_NOTE && t != n && t->published)
			notevec_push(out, t);
	}
	if (out->n <= 32) {
		for (k = 0, j = 0; k < out->n; k++) {
			for (i = 0; i < j && out->v[i] != out->v[k]; i++)
				;
			if (i == j)
				out->v[j++] = out->v[k];
		}
		out->n = j;
		return;
	}
	{
		struct site_note **uniq = xmemdup(out->v, out->n * sizeof(*out->v));
		unsigned char *used;
		size_t nu = 0;
		qsort(uniq, out->n, sizeof(*uniq), cmp_ptr);
		for (k = 0; k < out->n; k++)
			if (!nu || uniq[nu - 1] != uniq[k])
				uniq[nu++] = uniq[k];
		used = xcalloc(nu, 1);
		for (k = 0, j = 0; k < out->n; k++) {
			struct site_note **at = bsearch(&out->v[k], uniq, nu, sizeof(*uniq), cmp_ptr);
			if (!used[at - uniq]) {
				used[at - uniq] = 1;
				out->v[j++] = out->v[k];
			}
		}
		out->n = j;
		free(uniq);
		free(used);
	}
}

/*
 * A hash of what the graph shows of a note: its title, its URL and the
 * URLs of the notes it links to. A note composed again (a link that now
 * points elsewhere, a target that moved) rewrites its shard's graph
 * document only when this changed.
 */
static uint64_t graph_signature(const struct site_note *n, struct notevec *links)
{
	struct buf b = BUF_INIT;
	uint64_t h;
	size_t k;

	derived_graph_links(n, links);
	buf_adds(&b, n->note.title);
	buf_addc(&b, 0);
	buf_adds(&b, n->href);
	for (k = 0; k < links->n; k++) {
		buf_addc(&b, 0);
		buf_adds(&b, links->v[k]->href);
	}
	h = hash64(b.ptr, b.len);
	buf_release(&b);
	return h ? h : 1;
}

/* A listed note's graph entry may have changed: its shard's document is written if it did. */
static void graph_check(struct derived *d, struct site_note *n, struct notevec *links)
{
	uint64_t g;

	if (!n->listed || !n->listed->sig || n->removed || !n->published)
		return;
	g = graph_signature(n, links);
	if (g != n->listed->gsig) {
		n->listed->gsig = g;
		n->listed->gdirty = 1;
		shard_dirty(d, n->listed->shard, derived_graph_bit(n->url));
	}
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
void derived_newest(const struct oset *o, size_t k, struct notevec *out)
{
	struct oset_iter it = OSET_ITER_INIT;
	struct site_note *n;

	while (out->n < k && (n = oset_next(o, &it)))
		notevec_push(out, n);
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
	int changed, resort, retitle, moved;
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
	moved = n->listed->sig && listed && strcmp(n->listed->path, n->note.path) != 0;
	/* what a feed shows of it, or which feeds it is in, changed */
	resort = changed || moved || folder != n->listed->folder || nkeys != n->listed->ntags;
	for (k = 0; !resort && k < nkeys; k++)
		resort = strcmp(keys[k], n->listed->tags[k]) != 0;
	if (n->listed->sig && resort)
		date_sets(d, n, 0, top);
	/*
	 * Listings order by the title and path a note was registered with
	 * (listed->title, ->path): a retitled or moved note leaves its place
	 * under the old ones before it takes the new, in its tags and its
	 * folder alike.
	 */
	retitle = moved ||
		  (n->listed->sig && listed && strcmp(n->listed->title, n->note.title) != 0);
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
		listing_del(&n->listed->folder->tree, n);
		folder_dirty(d, n->listed->folder);
	} else if (n->listed->folder && changed) {
		listing_touch(&n->listed->folder->list, n);
		/* the explorer shows its title (a retitle moves it: above) and URL */
		if (!n->listed->url || strcmp(n->listed->url, n->url) != 0)
			listing_touch(&n->listed->folder->tree, n);
		folder_dirty(d, n->listed->folder);
	}
	listed_place(n->listed, listed ? n->note.title : NULL, listed ? n->note.path : NULL);
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
		listing_add(&folder->tree, n);
		folder_dirty(d, folder);
	}
	/* folders; a folder's index note is its link in the explorer's document above it */
	if (n->listed->folder && n->listed->folder->index == n &&
	    (n->listed->folder != folder || changed)) {
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
	/*
	 * sitemap shard: it shows the URL (which picks the shard) and the
	 * date, not the title or the summary a retitle or an edit changes
	 */
	if (n->listed->shard >= 0 && (!listed || !n->listed->url || strcmp(n->listed->url, n->url))) {
		notevec_take(&d->shards[n->listed->shard], n);
		d->shard_sorted[n->listed->shard] = 0;
		shard_dirty(d, n->listed->shard, SHARD_SITEMAP | derived_graph_bit(n->listed->url));
		n->listed->shard = -1;
		n->listed->gsig = 0;
	} else if (n->listed->shard >= 0 && changed) {
		char date[11];
		site_note_date(n, date);
		if (strcmp(date, n->listed->date) != 0)
			shard_dirty(d, n->listed->shard, SHARD_SITEMAP);
	}
	if (listed && n->listed->shard < 0 && d->nshards) {
		n->listed->shard = shard_of(d, n->url);
		notevec_push(&d->shards[n->listed->shard], n);
		d->shard_sorted[n->listed->shard] = 0;
		shard_dirty(d, n->listed->shard, SHARD_SITEMAP | derived_graph_bit(n->url));
	}
	/*
	 * A derived page may want the URL the note left, or yield to the one
	 * it took. Not a tag's: /tags/ is reserved (vault_url_reserved()).
	 */
	if (n->listed->url && (!listed || strcmp(n->listed->url, n->url) != 0)) {
		struct derived_folder *f;
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

/* A new number of shards: every listed note is placed again. */
static void reshard(struct site *s, size_t k)
{
	struct derived *d = s->derived;
	struct buf key = BUF_INIT;
	size_t i, j;

	for (i = k; i < d->nshards; i++) {
		buf_reset(&key);
		buf_addf(&key, "/sitemap-%zu.xml", i);
		derived_del_generated(s, key.ptr);
		for (j = 0; j < GRAPH_PARTS; j++) {
			buf_reset(&key);
			buf_addf(&key, "/_quire/graph/%zu-%zu.json", i, j);
			derived_del_generated(s, key.ptr);
		}
	}
	for (i = 0; i < d->nshards; i++)
		free(d->shards[i].v);
	free(d->shards);
	free(d->shard_dirty);
	free(d->shard_sorted);
	d->nshards = k;
	d->shards = xcalloc(k, sizeof(*d->shards));
	d->shard_dirty = xcalloc(k, sizeof(*d->shard_dirty));
	d->shard_sorted = xcalloc(k, 1);
	for (i = 0; i < k; i++)
		d->shard_dirty[i] = SHARD_SITEMAP | SHARD_GRAPH_ALL;
	for (i = 0; i < s->nnotes; i++) {
		struct site_note *n = s->notes[i];
		if (!n->listed)
			continue;
		n->listed->shard = -1;
		if (n->listed->sig) {
			n->listed->shard = shard_of(d, n->url);
			notevec_push(&d->shards[n->listed->shard], n);
		}
	}
	d->sitemap_index_dirty = 1;
	d->graph_index_dirty = 1;
	buf_release(&key);
}

size_t derived_shards(const struct site *s)
{
	return s->cfg.base_url[0] ? s->derived->nshards : 0;
}

void derived_update(struct site *s, struct site_note *const *changed, size_t n,
		    struct site_note *const *composed, size_t ncomposed)
{
	struct derived *d = s->derived;
	struct notevec links = { 0 };
	size_t i;
	int feeds = s->cfg.base_url[0] != '\0';

	if (!d->nshards)
		reshard(s, 1);
	for (i = 0; i < n; i++)
		update_note(s, changed[i]);
	if (shard_count(d->nlisted) != d->nshards)
		reshard(s, shard_count(d->nlisted));
	for (i = 0; i < n; i++)
		graph_check(d, changed[i], &links);
	for (i = 0; i < ncomposed; i++)
		graph_check(d, composed[i], &links);
	free(links.v);

	for (i = 0; i < d->ndirty_tags; i++) {
		struct derived_tag *t = d->dirty_tags[i];
		derived_render_tag(s, t, t->dirty, t->feed_dirty);
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
		derived_render_tag_index(s);
	d->tag_index_dirty = 0;
	if (!d->tree_started) {
		folder_head(d, get_folder(d, "", 0)); /* the root's document, even with no notes */
		d->tree_started = 1;
	}
	for (i = 0; i < d->ndirty_folders; i++) {
		struct derived_folder *f = d->dirty_folders[i];
		derived_render_folder(s, f, f->dirty, f->feed_dirty);
		f->dirty = f->feed_dirty = f->queued = 0;
	}
	d->ndirty_folders = 0;
	derived_render_graphs(s);
	for (i = 0; i < d->nshards; i++) {
		if (feeds && (d->shard_dirty[i] & SHARD_SITEMAP))
			derived_render_shard(s, i);
		d->shard_dirty[i] = 0;
	}
	if (d->graph_index_dirty)
		derived_render_graph_index(s);
	d->graph_index_dirty = 0;
	if (feeds) {
		if (d->sitemap_index_dirty)
			derived_render_sitemap_index(s);
		if (d->site_feed_dirty) {
			struct notevec top = { 0 };
			struct buf home = BUF_INIT;
			derived_newest(&d->by_date, (size_t)s->cfg.feed_items, &top);
			buf_addf(&home, "%s/", s->cfg.url_prefix);
			derived_write_feeds(s, "/rss.xml", s->cfg.title, home.ptr, top.v, top.n, 1);
			buf_release(&home);
			free(top.v);
		}
	}
	d->sitemap_index_dirty = 0;
	d->site_feed_dirty = 0;
}
