/*
 * derived-pages.c: the bytes of derived resources (derived.h): tag pages
 * and the tag index, folder listings, the explorer's tree documents, and
 * sitemap shards and their index. derived.c decides what is dirty; these
 * write it.
 */
#include "site/derived.h"
#include "site/derived-int.h"
#include "site/feeds.h"
#include "site/layout.h"
#include "site/listing.h"
#include "site/model.h"
#include "util/gzip.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/oset.h"
#include "util/parallel.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

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

void derived_del_generated(struct site *s, const char *key)
{
	struct page *cur = map_gets(&s->pages, key);
	if (cur && cur->kind == PAGE_GENERATED) {
		site_page_del(s, key);
		/* an alias claiming the URL takes it back, as in a load (apply.c) */
		if (map_gets(&s->claims, key) && !map_gets(&s->unclaimed, key)) {
			char *k = xstrdup(key);
			map_put(&s->unclaimed, k, strlen(k), k);
		}
	}
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

	for (i = 0; i < n; i++)
		derived_entry(v[i], v[i]->href, &e[i]);
	return e;
}

/* The main site's RSS feed (at key) and, for the whole site, its Atom feed. */
void derived_write_feeds(struct site *s, const char *key, const char *title, const char *home,
		  struct site_note *const *v, size_t n, int with_atom)
{
	struct feed_entry *e = entries_of(v, n);
	struct buf b = BUF_INIT, self = BUF_INIT;
	char *origin = main_origin(s);
	struct feed_target t = { origin, title, home, NULL, s->cfg.language,
				 (size_t)s->cfg.feed_items };

	buf_adds(&self, s->cfg.url_prefix);
	buf_add_urlpath(&self, key, strlen(key));
	t.self = self.ptr;
	feed_rss(&t, e, n, &b);
	put_text(s, PAGE_GENERATED, key, "application/rss+xml; charset=utf-8", &b);
	if (with_atom) {
		buf_reset(&self);
		buf_addf(&self, "%s/atom.xml", s->cfg.url_prefix);
		t.self = self.ptr;
		feed_atom(&t, e, n, &b);
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
		items[i].summary = derived_summary(v[i]);
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
			 const char *key0, const char *folder, const char *title,
			 const struct layout_item *lead, size_t nlead, struct site_note *const *v,
			 size_t n)
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
	/* sized at once: grown from nothing, a page of 100 items was copied a dozen times */
	buf_grow(&html, 8192 + intro.len + 384 * (nlead + n));
	layout_listing_page(&s->layout, folder, page_title.ptr, intro.len ? intro.ptr : NULL,
			    items, nlead + n, &html);
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
		derived_del_generated(c->s, c->key0.ptr);
		return;
	}
	listing_html(c->s, l, p, c->key0.ptr, NULL, c->title.ptr, NULL, 0, v, n);
}

static void tag_page_drop(void *arg, const struct listing_page *p)
{
	struct tag_ctx *c = arg;
	derived_del_generated(c->s, p->key);
}

static const struct listing_ops tag_ops = { tag_page_key, tag_page_write, tag_page_drop };

/* A tag's listing (what changed of it) and its feed. */
void derived_render_tag(struct site *s, struct derived_tag *t, int listing, int with_feed)
{
	struct tag_ctx c = { s, t, BUF_INIT, BUF_INIT };

	buf_addf(&c.key0, "/tags/%s", t->key);
	buf_addf(&c.title, "#%s", t->key);
	if (listing)
		listing_flush(&t->list, &tag_ops, &c);
	if (!listing_count(&t->list)) {
		buf_adds(&c.key0, "/rss.xml");
		derived_del_generated(s, c.key0.ptr);
	} else if (with_feed && s->cfg.base_url[0]) {
		struct buf link = BUF_INIT;
		struct notevec top = { 0 };
		buf_adds(&link, s->cfg.url_prefix);
		buf_add_urlpath(&link, c.key0.ptr, c.key0.len);
		buf_adds(&c.key0, "/rss.xml");
		derived_newest(&t->by_date, (size_t)s->cfg.feed_items, &top);
		derived_write_feeds(s, c.key0.ptr, c.title.ptr, link.ptr, top.v, top.n, 0);
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

void derived_render_tag_index(struct site *s)
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
	derived_sort(v, n, sizeof(*v), cmp_tag_key);
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
	layout_listing_page(&s->layout, NULL, "Tags", NULL, items, n, &html);
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
 * The explorer: one JSON document per folder, cut into pages of about
 * LISTING_TREE_PAGE notes (f->tree: ten times a listing's, an entry being
 * a title and a URL). /_quire/tree.json is the root's first page,
 * /_quire/tree/<folder path>.json a folder's; it names the folder's
 * subfolders (those with listed notes somewhere below), each with its
 * index note's URL or null, then its first page of notes, "more": the
 * URLs of its other pages in order (/_quire/tree-more/[<folder
 * path>/]<hash>.json, strings as before pages had counts, so clients
 * that read them keep working), and "sizes": how many notes each of
 * those holds; each page is {"children": [its notes]}. With the counts
 * the theme lays out the whole folder at once and fetches a page only
 * when it is scrolled near. The theme loads a folder's documents when
 * the folder is opened (and those on the way to the page shown, from
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
	derived_sort(kids, *nk, sizeof(*kids), cmp_folder_name);
	return kids;
}

static void tree_doc(struct site *s, const struct derived_folder *f, const struct listing *l,
		     const struct listing_page *p, struct site_note *const *v, size_t n,
		     struct derived_folder *const *kids, char *const *kid_urls, size_t nk)
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
		/* its index note, else its listing: the explorer's folder names are links */
		buf_addc(&b, '"');
		buf_adds_json(&b, kids[i]->index ? kids[i]->index->href : kid_urls[i]);
		buf_addc(&b, '"');
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
		struct buf more = BUF_INIT, url = BUF_INIT, sizes = BUF_INIT;
		buf_adds(&b, ",\"more\":[");
		k = 0;
		while ((q = oset_next(&l->pages, &it))) {
			if (q->head)
				continue;
			tree_key(f, q->path, &more);
			buf_reset(&url);
			buf_adds(&url, s->cfg.url_prefix);
			buf_add_urlpath(&url, more.ptr, more.len);
			buf_adds(&b, k ? ",\"" : "\"");
			buf_adds_json(&b, url.ptr);
			buf_addc(&b, '"');
			buf_addf(&sizes, k++ ? ",%zu" : "%zu", q->n);
		}
		buf_adds(&b, "],\"sizes\":[");
		buf_add(&b, sizes.ptr, sizes.len);
		buf_addc(&b, ']');
		buf_release(&more);
		buf_release(&url);
		buf_release(&sizes);
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

/* The subfolders a folder's first page shows, with the URL each links. */
struct kids {
	struct derived_folder **v;
	char **urls;
	size_t n;
};

static void kids_of(struct site *s, const struct derived_folder *f, struct kids *k)
{
	size_t i;

	k->v = shown_kids(f, &k->n);
	k->urls = xcalloc(k->n + 1, sizeof(*k->urls));
	for (i = 0; i < k->n; i++) {
		char *ku = derived_folder_url(k->v[i]);
		struct buf b = BUF_INIT;
		buf_adds(&b, s->cfg.url_prefix);
		buf_add_urlpath(&b, ku, strlen(ku));
		free(ku);
		k->urls[i] = buf_detach(&b, NULL);
	}
}

static void kids_release(struct kids *k)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		free(k->urls[i]);
	free(k->urls);
	free(k->v);
}

static void folder_page_write(void *arg, const struct listing *l, const struct listing_page *p,
			      struct site_note *const *v, size_t n)
{
	struct folder_ctx *c = arg;
	struct site *s = c->s;
	struct derived_folder *f = c->f;
	struct layout_item *lead = NULL;
	struct kids k = { NULL, NULL, 0 };
	size_t i;

	if (!p || p->head) {
		if (!f->subtree) {
			derived_del_generated(s, f->url); /* nothing listed below: no listing */
			return;
		}
		kids_of(s, f, &k);
		lead = xcalloc(k.n + 1, sizeof(*lead));
		for (i = 0; i < k.n; i++) {
			lead[i].title = k.v[i]->name;
			lead[i].url = k.urls[i];
		}
	}
	listing_html(s, l, p, f->url, f->path, f->path[0] ? f->name : s->cfg.title, lead, k.n, v,
		     n);
	free(lead);
	kids_release(&k);
}

static void folder_page_drop(void *arg, const struct listing_page *p)
{
	struct folder_ctx *c = arg;
	derived_del_generated(c->s, p->key);
}

static void tree_page_key(void *arg, const char *first_path, struct buf *out)
{
	struct folder_ctx *c = arg;
	tree_key(c->f, first_path, out);
}

static void tree_page_write(void *arg, const struct listing *l, const struct listing_page *p,
			    struct site_note *const *v, size_t n)
{
	struct folder_ctx *c = arg;
	struct derived_folder *f = c->f;
	struct kids k = { NULL, NULL, 0 };
	struct buf key = BUF_INIT;

	if ((!p || p->head) && !f->subtree) {
		/* nothing listed below: no document; the root keeps an empty explorer */
		tree_key(f, NULL, &key);
		if (f->path[0])
			derived_del_generated(c->s, key.ptr);
		else
			tree_doc(c->s, f, l, NULL, NULL, 0, NULL, NULL, 0);
		buf_release(&key);
		return;
	}
	if (!p || p->head)
		kids_of(c->s, f, &k);
	tree_doc(c->s, f, l, p, v, n, k.v, k.urls, k.n);
	kids_release(&k);
}

static void tree_page_drop(void *arg, const struct listing_page *p)
{
	struct folder_ctx *c = arg;
	derived_del_generated(c->s, p->key);
}

static const struct listing_ops folder_ops = { folder_page_key, folder_page_write,
					       folder_page_drop };
static const struct listing_ops tree_ops = { tree_page_key, tree_page_write, tree_page_drop };

/*
 * A folder's listing and explorer document (what changed of them), and its
 * feed (of it and the folders below).
 */
void derived_render_folder(struct site *s, struct derived_folder *f, int listing, int with_feed)
{
	struct folder_ctx c = { s, f };
	struct buf feed = BUF_INIT, href = BUF_INIT;

	if (listing) {
		listing_flush(&f->list, &folder_ops, &c);
		listing_flush(&f->tree, &tree_ops, &c);
	}
	buf_adds(&feed, f->url);
	buf_adds(&feed, "rss.xml");
	/* the root folder's feed is the site's: /rss.xml */
	if (!f->subtree) {
		derived_del_generated(s, feed.ptr);
	} else if (with_feed && s->cfg.base_url[0] && f->path[0]) {
		struct notevec top = { 0 };
		derived_newest(&f->by_date, (size_t)s->cfg.feed_items, &top);
		buf_adds(&href, s->cfg.url_prefix);
		buf_add_urlpath(&href, f->url, strlen(f->url));
		derived_write_feeds(s, feed.ptr, f->name, href.ptr, top.v, top.n, 0);
		free(top.v);
	}
	buf_release(&feed);
	buf_release(&href);
}

static int cmp_notes_url(const void *a, const void *b)
{
	return strcmp((*(struct site_note *const *)a)->url, (*(struct site_note *const *)b)->url);
}

const struct notevec *derived_shard(struct derived *d, size_t i)
{
	if (!d->shard_sorted[i]) {
		derived_sort(d->shards[i].v, d->shards[i].n, sizeof(*d->shards[i].v), cmp_notes_url);
		d->shard_sorted[i] = 1;
	}
	return &d->shards[i];
}

void derived_render_shard(struct site *s, size_t i)
{
	struct notevec *l = &s->derived->shards[i];
	struct buf b = BUF_INIT, key = BUF_INIT;
	struct feed_entry *e;
	char *origin = main_origin(s);

	buf_addf(&key, "/sitemap-%zu.xml", i);
	derived_shard(s->derived, i);
	e = entries_of(l->v, l->n);
	feed_urlset(origin, e, l->n, &b);
	put_text(s, PAGE_GENERATED, key.ptr, "application/xml; charset=utf-8", &b);
	free(e);
	free(origin);
	buf_release(&b);
	buf_release(&key);
}

/*
 * The graph, cut like the sitemap and finer: /_quire/graph/<i>-<part>.json
 * lists the notes of shard i in that part (derived_graph_part()),
 * {"notes": [{"u": URL, "t": title, "l": [URLs it links to]}]}, in URL
 * order; /_quire/graph.json names the documents. The theme's graph
 * page reads them all and draws the notes with the most links; links
 * point one way (a note's backlinks are the links of others), so a change
 * to one note's links or title rewrites its own shard only.
 */
/* A note's entry, fresh. */
static void graph_entry(const struct site_note *n, struct notevec *links, struct buf *b)
{
	size_t j;

	buf_adds(b, "{\"u\":\"");
	buf_adds_json(b, n->href);
	buf_adds(b, "\",\"t\":\"");
	buf_adds_json(b, n->note.title);
	buf_adds(b, "\",\"l\":[");
	derived_graph_links(n, links);
	for (j = 0; j < links->n; j++) {
		buf_adds(b, j ? ",\"" : "\"");
		buf_adds_json(b, links->v[j]->href);
		buf_addc(b, '"');
	}
	buf_adds(b, "]}");
}

/*
 * One graph document's bytes: the notes of a shard (sorted by URL) in
 * part, one entry a line. The entry of a note whose graph hash did not
 * change (listed->gdirty clear) is copied from the document as it was
 * (old, its bytes, or NULL), found by its "u" near where it stood: a
 * folder moved changes the entries of the notes linking into it, a few
 * in each document, and the rest of each document costs a copy, not a
 * walk over each note's links and their targets.
 */
static void graph_doc(const struct notevec *l, int part, const char *old, size_t old_len,
		      struct buf *b)
{
	struct notevec links = { 0 };
	struct buf want = BUF_INIT;
	const char *p = NULL, *end = old ? old + old_len : NULL;
	size_t k, m = 0;

	if (old && (p = memchr(old, '\n', old_len)))
		p++; /* past {"notes":[ */
	buf_grow(b, old_len + 256);
	buf_adds(b, "{\"notes\":[");
	for (k = 0; k < l->n; k++) {
		struct site_note *n = l->v[k];
		const char *q = p, *copy = NULL;
		size_t copy_len = 0;
		int tries;
		if (derived_graph_part(n->url) != part)
			continue;
		buf_adds(b, m++ ? ",\n" : "\n");
		if (p && !n->listed->gdirty) {
			buf_reset(&want);
			buf_adds(&want, "{\"u\":\"");
			buf_adds_json(&want, n->href);
			buf_adds(&want, "\",");
			for (tries = 0; q && q < end && tries < 8; tries++) {
				const char *eol = memchr(q, '\n', (size_t)(end - q));
				size_t len = eol ? (size_t)(eol - q) : (size_t)(end - q);
				if (len && q[len - 1] == ',')
					len--;
				if (len >= want.len && !memcmp(q, want.ptr, want.len)) {
					copy = q;
					copy_len = len;
					p = eol ? eol + 1 : end;
					break;
				}
				q = eol ? eol + 1 : end;
			}
		}
		if (copy)
			buf_add(b, copy, copy_len);
		else
			graph_entry(n, &links, b);
		n->listed->gdirty = 0;
	}
	buf_adds(b, "\n]}\n");
	free(links.v);
	buf_release(&want);
}

struct graph_jobs {
	struct site *s;
	const int *parts;      /* shard * GRAPH_PARTS + part, for each document */
	struct buf *out;
};

static void graph_key(int at, struct buf *key)
{
	buf_reset(key);
	buf_addf(key, "/_quire/graph/%d-%d.json", at / GRAPH_PARTS, at % GRAPH_PARTS);
}

static void graph_job(void *arg, size_t i)
{
	struct graph_jobs *c = arg;
	int at = c->parts[i];
	struct buf key = BUF_INIT;
	const struct page *cur;
	const char *old = NULL;

	graph_key(at, &key);
	cur = map_gets(&c->s->pages, key.ptr);
	if (cur && cur->kind == PAGE_GENERATED)
		old = page_bytes(cur); /* a thread's own cache when it inflates */
	graph_doc(&c->s->derived->shards[at / GRAPH_PARTS], at % GRAPH_PARTS, old,
		  old ? cur->body_len : 0, &c->out[i]);
	buf_release(&key);
}

/*
 * The documents of the dirty graph parts: built in parallel (a folder
 * moved rewrites the entries of every note linking into it), put in order.
 */
void derived_render_graphs(struct site *s)
{
	struct derived *d = s->derived;
	struct graph_jobs c = { s, NULL, NULL };
	struct buf key = BUF_INIT;
	int *parts = NULL;
	size_t i, n = 0;
	int k;

	for (i = 0; i < d->nshards; i++) {
		if (!(d->shard_dirty[i] & SHARD_GRAPH_ALL))
			continue;
		derived_shard(d, i);
		for (k = 0; k < GRAPH_PARTS; k++) {
			if (d->shard_dirty[i] & (2 << k)) {
				parts = xrealloc(parts, (n + 1) * sizeof(*parts));
				parts[n++] = (int)(i * GRAPH_PARTS) + k;
			}
		}
	}
	c.parts = parts;
	c.out = xcalloc(n + 1, sizeof(*c.out));
	parallel_for(n, s->threads, graph_job, &c);
	for (i = 0; i < n; i++) {
		graph_key(parts[i], &key);
		put_text(s, PAGE_GENERATED, key.ptr, "application/json", &c.out[i]);
		buf_release(&c.out[i]);
	}
	free(c.out);
	free(parts);
	buf_release(&key);
}

void derived_render_graph_index(struct site *s)
{
	struct buf b = BUF_INIT;
	size_t i;
	int j;

	buf_adds(&b, "{\"shards\":[");
	for (i = 0; i < s->derived->nshards; i++) {
		for (j = 0; j < GRAPH_PARTS; j++) {
			buf_adds(&b, i || j ? ",\"" : "\"");
			buf_adds_json(&b, s->cfg.url_prefix);
			buf_addf(&b, "/_quire/graph/%zu-%d.json\"", i, j);
		}
	}
	buf_adds(&b, "]}\n");
	put_text(s, PAGE_GENERATED, "/_quire/graph.json", "application/json", &b);
	buf_release(&b);
}

void derived_render_sitemap_index(struct site *s)
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
