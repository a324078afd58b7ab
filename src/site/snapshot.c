/*
 * snapshot.c: pages, snapshots and the live slot.
 */
#include "site/snapshot.h"
#include "util/buf.h"
#include "util/gzip.h"
#include "util/hash.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_int keep_identity = 1;

void page_keep_identity(int keep)
{
	atomic_store(&keep_identity, keep);
}

struct page *page_new(enum page_kind kind, const char *path, size_t path_len)
{
	struct page *p = xcalloc(1, sizeof(*p));

	atomic_init(&p->refs, 1);
	p->kind = kind;
	p->path = xstrndup(path, path_len);
	p->path_len = path_len;
	p->content_type = "text/html; charset=utf-8";
	return p;
}

int page_set_body(struct page *p, char *body, size_t len, int level)
{
	char *gz = NULL;
	size_t gz_len = 0;

	if (level && len >= 256 && !(gz = gzip_compress_lasting(body, len, level, &gz_len))) {
		page_set_body_gz(p, body, len, NULL, 0);
		return -1;
	}
	page_set_body_gz(p, body, len, gz, gz_len);
	return 0;
}

void page_set_body_gz(struct page *p, char *body, size_t len, char *gz, size_t gz_len)
{
	free(p->body);
	xfree_lasting(p->gz);
	p->body = body;
	p->body_len = len;
	p->gz = NULL;
	p->gz_len = 0;
	hash_etag(body, len, p->etag);
	p->gz_etag[0] = '\0';
	if (!gz || gz_len + 32 >= len) {
		xfree_lasting(gz);
		return;
	}
	hash_etag(gz, gz_len, p->gz_etag);
	p->gz = gz;
	p->gz_len = gz_len;
	if (!atomic_load_explicit(&keep_identity, memory_order_relaxed)) {
		free(p->body);
		p->body = NULL;
	}
}

void page_set_body_later(struct page *p, char *body, size_t len, int level)
{
	page_set_body(p, body, len, 0);
	p->gz_later = len >= 256 ? level : 0;
}

struct page *page_gzipped(const struct page *p)
{
	struct page *q;

	if (!p->gz_later || !p->body)
		return NULL;
	q = page_new(p->kind, p->path, p->path_len);
	q->content_type = p->content_type;
	q->mtime = p->mtime;
	q->immutable = p->immutable;
	q->tags = p->tags ? xstrdup(p->tags) : NULL;
	/* the same ETag (same bytes), the same size rule, the same identity policy */
	if (page_set_body(q, xmemdup(p->body, p->body_len), p->body_len, p->gz_later) < 0 || !q->gz) {
		page_unref(q);
		return NULL;
	}
	return q;
}

/*
 * The per-thread cache of inflated pages: the last few, by page and ETag
 * (a page freed and another made at its address with other bytes has
 * another ETag; with the same ETag, the same bytes).
 */
#define INFLATED 4

struct inflated {
	const struct page *page;
	char etag[ETAG_SIZE];
	char *bytes;
	size_t cap;
	unsigned long long used;
};

struct inflated_cache {
	struct inflated e[INFLATED];
	unsigned long long tick;
};

static pthread_key_t inflated_key;
static pthread_once_t inflated_once = PTHREAD_ONCE_INIT;

static void inflated_free(void *arg)
{
	struct inflated_cache *c = arg;
	size_t i;

	for (i = 0; i < INFLATED; i++)
		free(c->e[i].bytes);
	free(c);
}

static void inflated_init(void)
{
	pthread_key_create(&inflated_key, inflated_free);
}

const char *page_bytes(const struct page *p)
{
	struct inflated_cache *c;
	struct inflated *e = NULL;
	size_t i;

	if (!p || p->body || !p->gz)
		return p ? p->body : NULL;
	pthread_once(&inflated_once, inflated_init);
	if (!(c = pthread_getspecific(inflated_key))) {
		c = xcalloc(1, sizeof(*c));
		pthread_setspecific(inflated_key, c);
	}
	c->tick++;
	for (i = 0; i < INFLATED; i++) {
		if (c->e[i].page == p && strcmp(c->e[i].etag, p->etag) == 0) {
			c->e[i].used = c->tick;
			return c->e[i].bytes;
		}
		if (!e || c->e[i].used < e->used)
			e = &c->e[i];
	}
	if (e->cap < p->body_len + 1) {
		free(e->bytes);
		e->cap = p->body_len + 1;
		e->bytes = xmalloc(e->cap);
	}
	e->page = NULL;
	if (gzip_inflate_to(p->gz, p->gz_len, e->bytes, p->body_len) < 0)
		return NULL;
	e->bytes[p->body_len] = '\0';
	e->page = p;
	memcpy(e->etag, p->etag, ETAG_SIZE);
	e->used = c->tick;
	return e->bytes;
}

void page_unref(struct page *p)
{
	if (!p || atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1)
		return;
	free(p->path);
	free(p->body);
	xfree_lasting(p->gz);
	free(p->location);
	free(p->file);
	free(p->tags);
	free(p);
}

/* ---- the persistent table ---------------------------------------------------- */

struct ptable_leaf {
	atomic_long refs;         /* nodes sharing it */
	struct map map;           /* path -> struct page * (one reference each) */
};

struct ptable_node {
	atomic_long refs;         /* tables sharing it */
	struct ptable_leaf *leaves[PTABLE_LEAVES]; /* NULL: empty */
};

static void place(const char *path, size_t len, size_t *node, size_t *leaf)
{
	uint64_t h = hash64(path, len);

	*node = (size_t)(h >> 56) & (PTABLE_NODES - 1);
	*leaf = (size_t)(h >> 50) & (PTABLE_LEAVES - 1);
}

static void leaf_unref(struct ptable_leaf *lf)
{
	size_t i = 0;
	void *v;

	if (!lf || atomic_fetch_sub_explicit(&lf->refs, 1, memory_order_acq_rel) != 1)
		return;
	while (map_next(&lf->map, &i, NULL, NULL, &v))
		page_unref(v);
	map_release(&lf->map);
	free(lf);
}

static void node_unref(struct ptable_node *nd)
{
	size_t j;

	if (!nd || atomic_fetch_sub_explicit(&nd->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (j = 0; j < PTABLE_LEAVES; j++)
		leaf_unref(nd->leaves[j]);
	free(nd);
}

/* Node k of t, which t alone holds (copied first when shared), created when missing. */
static struct ptable_node *own_node(struct ptable *t, size_t k)
{
	struct ptable_node *nd = t->nodes[k], *copy;
	size_t j;

	if (!nd) {
		nd = t->nodes[k] = xcalloc(1, sizeof(*nd));
		atomic_init(&nd->refs, 1);
		return nd;
	}
	if (atomic_load_explicit(&nd->refs, memory_order_acquire) == 1)
		return nd;
	copy = xcalloc(1, sizeof(*copy));
	atomic_init(&copy->refs, 1);
	for (j = 0; j < PTABLE_LEAVES; j++) {
		copy->leaves[j] = nd->leaves[j];
		if (copy->leaves[j])
			atomic_fetch_add_explicit(&copy->leaves[j]->refs, 1, memory_order_relaxed);
	}
	node_unref(nd);
	return t->nodes[k] = copy;
}

/* Leaf j of a node t alone holds, which it alone holds then too (copied first when shared). */
static struct ptable_leaf *own_leaf(struct ptable_node *nd, size_t j)
{
	struct ptable_leaf *lf = nd->leaves[j], *copy;
	size_t i = 0;
	void *v;

	if (!lf) {
		lf = nd->leaves[j] = xcalloc(1, sizeof(*lf));
		atomic_init(&lf->refs, 1);
		return lf;
	}
	if (atomic_load_explicit(&lf->refs, memory_order_acquire) == 1)
		return lf;
	copy = xcalloc(1, sizeof(*copy));
	atomic_init(&copy->refs, 1);
	map_copy(&copy->map, &lf->map);
	while (map_next(&copy->map, &i, NULL, NULL, &v))
		page_ref(v);
	leaf_unref(lf);
	return nd->leaves[j] = copy;
}

static void ptable_share(struct ptable *dst, const struct ptable *src)
{
	size_t k;

	for (k = 0; k < PTABLE_NODES; k++) {
		dst->nodes[k] = src->nodes[k];
		if (dst->nodes[k])
			atomic_fetch_add_explicit(&dst->nodes[k]->refs, 1, memory_order_relaxed);
	}
	dst->len = src->len;
	dst->bytes = src->bytes;
}

static void ptable_release(struct ptable *t)
{
	size_t k;

	for (k = 0; k < PTABLE_NODES; k++)
		node_unref(t->nodes[k]);
	memset(t, 0, sizeof(*t));
}

static const struct ptable_leaf *leaf_at(const struct ptable *t, size_t k, size_t j)
{
	return t->nodes[k] ? t->nodes[k]->leaves[j] : NULL;
}

struct page *ptable_get(const struct ptable *t, const char *path, size_t len)
{
	const struct ptable_leaf *lf;
	size_t k, j;

	place(path, len, &k, &j);
	lf = leaf_at(t, k, j);
	return lf ? map_get(&lf->map, path, len) : NULL;
}

struct page *ptable_next(const struct ptable *t, struct ptable_iter *it)
{
	void *v;

	for (; it->leaf < PTABLE_NODES * PTABLE_LEAVES; it->leaf++, it->slot = 0) {
		size_t k = it->leaf / PTABLE_LEAVES, j = it->leaf % PTABLE_LEAVES;
		const struct ptable_leaf *lf;
		if (!t->nodes[k]) {
			it->leaf = (k + 1) * PTABLE_LEAVES - 1; /* the whole node is empty */
			continue;
		}
		lf = t->nodes[k]->leaves[j];
		if (lf && map_next(&lf->map, &it->slot, NULL, NULL, &v))
			return v;
	}
	return NULL;
}

size_t ptable_shared_leaves(const struct ptable *a, const struct ptable *b)
{
	size_t k, j, n = 0;

	for (k = 0; k < PTABLE_NODES; k++)
		for (j = 0; j < PTABLE_LEAVES; j++)
			n += leaf_at(a, k, j) && leaf_at(a, k, j) == leaf_at(b, k, j);
	return n;
}

size_t ptable_leaves(const struct ptable *t)
{
	size_t k, j, n = 0;

	for (k = 0; k < PTABLE_NODES; k++)
		for (j = 0; j < PTABLE_LEAVES; j++)
			n += leaf_at(t, k, j) != NULL;
	return n;
}

/* ---- snapshots ----------------------------------------------------------------- */

struct snapshot *snapshot_new(uint64_t version)
{
	struct snapshot *s = xcalloc(1, sizeof(*s));

	atomic_init(&s->refs, 1);
	s->version = version;
	s->created = time(NULL);
	return s;
}

struct snapshot *snapshot_clone(const struct snapshot *prev)
{
	struct snapshot *s = snapshot_new(prev->version + 1);

	ptable_share(&s->pages, &prev->pages);
	s->not_found = page_ref(prev->not_found);
	s->nnotes = prev->nnotes;
	s->nattachments = prev->nattachments;
	snapshot_set_headers(s, prev->headers);
	snapshot_set_cache_control(s, prev->cache_control);
	snapshot_set_config_error(s, prev->config_error);
	return s;
}

/* The bytes a page holds in memory (a page is immutable once in a snapshot). */
static size_t held_bytes(const struct page *p)
{
	return p ? (p->body ? p->body_len : 0) + (p->gz ? p->gz_len : 0) : 0;
}

void snapshot_put(struct snapshot *s, struct page *p)
{
	size_t k, j;
	struct ptable_leaf *lf;
	struct page *old;

	place(p->path, p->path_len, &k, &j);
	lf = own_leaf(own_node(&s->pages, k), j);
	old = map_put(&lf->map, p->path, p->path_len, p);

	if (!old)
		s->pages.len++;
	s->pages.bytes += held_bytes(p) - held_bytes(old);
	page_unref(old);
}

void snapshot_remove(struct snapshot *s, const char *path, size_t len)
{
	size_t k, j;
	struct page *old;

	if (!ptable_get(&s->pages, path, len))
		return;
	place(path, len, &k, &j);
	old = map_remove(&own_leaf(own_node(&s->pages, k), j)->map, path, len);
	if (old)
		s->pages.len--;
	s->pages.bytes -= held_bytes(old);
	page_unref(old);
}

int page_same(const struct page *a, const struct page *b)
{
	return a && b && a->kind == b->kind && strcmp(a->etag, b->etag) == 0 &&
	       !a->location == !b->location && (!a->location || strcmp(a->location, b->location) == 0);
}

static void count_changed(void *ctx, const char *path, size_t len, const struct page *was,
			  const struct page *now)
{
	if (!page_same(was, now))
		(*(size_t *)ctx)++;
}

size_t snapshot_changed_pages(const struct snapshot *a, const struct snapshot *b)
{
	size_t n = 0;

	snapshot_diff(a, b, count_changed, &n);
	return n + !page_same(a ? a->not_found : NULL, b->not_found);
}

struct page *snapshot_get(const struct snapshot *s, const char *path, size_t len)
{
	return ptable_get(&s->pages, path, len);
}

void snapshot_set_headers(struct snapshot *s, const char *headers)
{
	free(s->headers);
	s->headers = headers ? xstrdup(headers) : NULL;
}

void snapshot_set_cache_control(struct snapshot *s, const char *line)
{
	free(s->cache_control);
	s->cache_control = line ? xstrdup(line) : NULL;
}

void snapshot_set_config_error(struct snapshot *s, const char *why)
{
	free(s->config_error);
	s->config_error = why ? xstrdup(why) : NULL;
}

/* The paths of leaf b whose page is not the same in leaf a, then those only in a. */
static void diff_leaf(const struct ptable_leaf *la, const struct ptable_leaf *lb,
		      void (*fn)(void *, const char *, size_t, const struct page *,
				 const struct page *),
		      void *ctx)
{
	const char *key;
	size_t i = 0, len;
	void *v;

	while (lb && map_next(&lb->map, &i, &key, &len, &v)) {
		const struct page *was = la ? map_get(&la->map, key, len) : NULL;
		if (was != v)
			fn(ctx, key, len, was, v);
	}
	i = 0;
	while (la && map_next(&la->map, &i, &key, &len, &v))
		if (!lb || !map_get(&lb->map, key, len))
			fn(ctx, key, len, v, NULL);
}

void snapshot_diff(const struct snapshot *a, const struct snapshot *b,
		   void (*fn)(void *ctx, const char *path, size_t len, const struct page *was,
			      const struct page *now),
		   void *ctx)
{
	static const struct ptable empty;
	const struct ptable *ta = a ? &a->pages : &empty, *tb = &b->pages;
	size_t k, j;

	for (k = 0; k < PTABLE_NODES; k++) {
		if (ta->nodes[k] == tb->nodes[k])
			continue;
		for (j = 0; j < PTABLE_LEAVES; j++)
			if (leaf_at(ta, k, j) != leaf_at(tb, k, j))
				diff_leaf(leaf_at(ta, k, j), leaf_at(tb, k, j), fn, ctx);
	}
}

void snapshot_set_not_found(struct snapshot *s, struct page *p)
{
	page_unref(s->not_found);
	s->not_found = p;
}

void snapshot_unref(struct snapshot *s)
{
	if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	ptable_release(&s->pages);
	page_unref(s->not_found);
	snapshot_hosts_free(s->hosts);
	free(s->headers);
	free(s->cache_control);
	free(s->config_error);
	free(s);
}

static void pages_release(struct map *m)
{
	size_t i = 0;
	void *v;

	while (map_next(m, &i, NULL, NULL, &v))
		page_unref(v);
	map_release(m);
}

static void host_free(struct snapshot_host *h)
{
	size_t i = 0;
	void *v;

	if (!h)
		return;
	free(h->name);
	free(h->origin);
	free(h->title);
	pages_release(&h->pages);
	pages_release(&h->lazy); /* nothing is still rendering: the renderer holds the snapshot */
	while (map_next(&h->routed, &i, NULL, NULL, &v))
		free(v);
	map_release(&h->routed);
	page_unref(h->not_found);
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->rendered);
	free(h);
}

void snapshot_hosts_free(struct snapshot_hosts *hosts)
{
	size_t i = 0;
	void *v;

	if (!hosts)
		return;
	while (map_next(&hosts->by_name, &i, NULL, NULL, &v))
		host_free(v);
	map_release(&hosts->by_name);
	host_free(hosts->main);
	free(hosts->main_name);
	free(hosts->main_origin);
	free(hosts->prefix);
	free(hosts->main_title);
	free(hosts);
}

void snapshot_slot_init(struct snapshot_slot *slot)
{
	pthread_mutex_init(&slot->lock, NULL);
	slot->current = NULL;
	slot->retired = NULL;
	slot->nretired = slot->aretired = 0;
}

void snapshot_slot_release(struct snapshot_slot *slot)
{
	while (slot->nretired > 0)
		snapshot_unref(slot->retired[--slot->nretired]);
	free(slot->retired);
	slot->retired = NULL;
	slot->aretired = 0;
	snapshot_unref(slot->current);
	slot->current = NULL;
	pthread_mutex_destroy(&slot->lock);
}

struct snapshot *snapshot_acquire(struct snapshot_slot *slot)
{
	struct snapshot *s;

	pthread_mutex_lock(&slot->lock);
	s = snapshot_ref(slot->current);
	pthread_mutex_unlock(&slot->lock);
	return s;
}

void snapshot_publish(struct snapshot_slot *slot, struct snapshot *s)
{
	struct snapshot *old;

	pthread_mutex_lock(&slot->lock);
	old = slot->current;
	slot->current = s;
	pthread_mutex_unlock(&slot->lock);
	if (old) {
		ALLOC_GROW(slot->retired, slot->nretired + 1, slot->aretired);
		slot->retired[slot->nretired++] = old;
	}
	snapshot_slot_reap(slot); /* outside the lock: freeing a snapshot can take a while */
}

size_t snapshot_slot_reap(struct snapshot_slot *slot)
{
	size_t i = 0;

	/*
	 * A retired snapshot can no longer be acquired, so once the slot's
	 * reference is the only one left, none can appear: dropping it here
	 * frees it, on this thread.
	 */
	while (i < slot->nretired) {
		struct snapshot *r = slot->retired[i];
		if (atomic_load_explicit(&r->refs, memory_order_acquire) == 1) {
			snapshot_unref(r);
			slot->retired[i] = slot->retired[--slot->nretired];
		} else {
			i++;
		}
	}
	return slot->nretired;
}
