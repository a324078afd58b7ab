/*
 * test-snapshot.c: the live slot's publish, retire and reap.
 *
 * A replaced snapshot is freed by the publishing thread, never by a reader:
 * freed at once when nobody holds it, kept while a reader does (its pages
 * stay valid), freed by the next reap or publish after the reader lets go,
 * and by snapshot_slot_release() at the end. Whether a snapshot was freed
 * is read off a page only it holds: the test keeps its own reference on
 * that page and watches the count. Readers on other threads acquiring and
 * dropping while the main thread publishes must leave every count right
 * (ASan reports any use after free).
 */
#include "site/snapshot.h"
#include "lib/test.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* A snapshot with one page at path, whose reference the caller also gets in *page. */
static struct snapshot *with_page(uint64_t version, const char *path, struct page **page)
{
	struct snapshot *s = snapshot_new(version);
	struct page *p = page_new(PAGE_NOTE, path, strlen(path));

	CHECK(page_set_body(p, xstrdup("body"), 4, 0) == 0);
	snapshot_put(s, page_ref(p));
	snapshot_set_not_found(s, page_new(PAGE_NOT_FOUND, "/404", 4));
	*page = p;
	return s;
}

static long refs(struct page *p)
{
	return atomic_load(&p->refs);
}

/* A slot where snapshot 1 (page *a) is held by the returned reference and 2 (page *b) is live. */
static struct snapshot *held_across_publish(struct snapshot_slot *slot, struct page **a,
					    struct page **b)
{
	struct snapshot *held;

	snapshot_slot_init(slot);
	snapshot_publish(slot, with_page(1, "/a", a));
	held = snapshot_acquire(slot);
	snapshot_publish(slot, with_page(2, "/b", b));
	return held;
}

static void test_unheld_freed_at_publish(void)
{
	struct snapshot_slot slot;
	struct page *a, *b;

	snapshot_slot_init(&slot);
	snapshot_publish(&slot, with_page(1, "/a", &a));
	CHECK_INT(refs(a), 2);
	snapshot_publish(&slot, with_page(2, "/b", &b));
	CHECK_INT(refs(a), 1); /* snapshot 1 is gone */
	CHECK_INT(snapshot_slot_reap(&slot), 0);
	snapshot_slot_release(&slot);
	CHECK_INT(refs(b), 1);
	page_unref(a);
	page_unref(b);
}

static void test_reader_keeps_retired(void)
{
	struct snapshot_slot slot;
	struct page *a, *b;
	struct snapshot *held = held_across_publish(&slot, &a, &b);

	CHECK_INT(refs(a), 2);                     /* still in the retired snapshot */
	CHECK(snapshot_get(held, "/a", 2) == a);   /* and readable through it */
	CHECK_INT(snapshot_slot_reap(&slot), 1);
	snapshot_unref(held);                      /* the reader lets go ... */
	CHECK_INT(refs(a), 2);                     /* ... without freeing it */
	CHECK_INT(snapshot_slot_reap(&slot), 0);   /* the publisher does */
	CHECK_INT(refs(a), 1);
	snapshot_slot_release(&slot);
	page_unref(a);
	page_unref(b);
}

static void test_next_publish_reaps(void)
{
	struct snapshot_slot slot;
	struct page *a, *b, *c;

	snapshot_unref(held_across_publish(&slot, &a, &b));
	CHECK_INT(refs(a), 2);
	snapshot_publish(&slot, with_page(3, "/c", &c));
	CHECK_INT(refs(a), 1);
	CHECK_INT(refs(b), 1);
	snapshot_slot_release(&slot);
	page_unref(a);
	page_unref(b);
	page_unref(c);
}

static void test_release_frees_retired(void)
{
	struct snapshot_slot slot;
	struct page *a, *b;

	snapshot_unref(held_across_publish(&slot, &a, &b));
	snapshot_slot_release(&slot); /* no reap in between */
	CHECK_INT(refs(a), 1);
	CHECK_INT(refs(b), 1);
	page_unref(a);
	page_unref(b);
}

struct reader_ctx {
	struct snapshot_slot *slot;
	atomic_int *stop, *started;
	long reads;
	int bad;
};

static void *reader(void *arg)
{
	struct reader_ctx *c = arg;

	while (!atomic_load(c->stop)) {
		struct snapshot *s = snapshot_acquire(c->slot);
		struct page *p = snapshot_get(s, "/p", 2);
		if (!p || p->body_len != 4 || memcmp(p->body, "body", 4) != 0)
			c->bad = 1;
		snapshot_unref(s);
		if (c->reads++ == 0)
			atomic_fetch_add(c->started, 1);
	}
	return NULL;
}

/* Readers on two threads while 2,000 snapshots are published and reaped. */
static void test_readers_during_publishes(void)
{
	static struct page *pages[2000];
	struct snapshot_slot slot;
	struct reader_ctx c[2];
	pthread_t t[2];
	atomic_int stop, started;
	size_t held = 0;
	int i;

	snapshot_slot_init(&slot);
	snapshot_publish(&slot, with_page(1, "/p", &pages[0]));
	atomic_init(&stop, 0);
	atomic_init(&started, 0);
	for (i = 0; i < 2; i++) {
		c[i] = (struct reader_ctx){ .slot = &slot, .stop = &stop, .started = &started };
		CHECK(pthread_create(&t[i], NULL, reader, &c[i]) == 0);
	}
	while (atomic_load(&started) < 2)
		sched_yield();
	for (i = 1; i < 2000; i++) {
		snapshot_publish(&slot, with_page((uint64_t)i + 1, "/p", &pages[i]));
		held = snapshot_slot_reap(&slot);
	}
	atomic_store(&stop, 1);
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		CHECK(!c[i].bad);
		CHECK(c[i].reads > 0);
	}
	CHECK(held <= 2); /* at most one held snapshot per reader */
	CHECK_INT(snapshot_slot_reap(&slot), 0);
	for (i = 0; i < 1999; i++)
		CHECK_INT(refs(pages[i]), 1);
	CHECK_INT(refs(pages[1999]), 2); /* the live one */
	snapshot_slot_release(&slot);
	for (i = 0; i < 2000; i++)
		page_unref(pages[i]);
}

/*
 * The persistent table: a clone shares every shard, a change in the clone
 * copies only its own shard, and neither snapshot sees the other's
 * changes; each page's count follows the shards that hold it.
 */
static void test_clone_shares_shards(void)
{
	enum { N = 5000 };
	struct snapshot *a = snapshot_new(1), *b;
	struct page **pages = xcalloc(N, sizeof(*pages)), *fresh;
	struct ptable_iter it = PTABLE_ITER_INIT;
	char path[32];
	size_t k, shared = 0, seen = 0;

	for (k = 0; k < N; k++) {
		snprintf(path, sizeof(path), "/note-%zu", k);
		pages[k] = page_new(PAGE_NOTE, path, strlen(path));
		snapshot_put(a, page_ref(pages[k]));
	}
	CHECK_INT(a->pages.len, N);
	CHECK_INT(refs(pages[7]), 2);
	b = snapshot_clone(a);
	CHECK_INT(refs(pages[7]), 2); /* shared, not referenced again */
	shared = ptable_shared_leaves(&a->pages, &b->pages);
	CHECK(shared > 1000 && shared == ptable_leaves(&a->pages));
	/* one page replaced, one removed, one added, in b only */
	fresh = page_new(PAGE_NOTE, "/note-7", 7);
	snapshot_put(b, page_ref(fresh));
	snapshot_remove(b, "/note-8", 7);
	snapshot_remove(b, "/absent", 7);
	snapshot_put(b, page_new(PAGE_NOTE, "/added", 6));
	CHECK(snapshot_get(a, "/note-7", 7) == pages[7]);
	CHECK(snapshot_get(b, "/note-7", 7) == fresh);
	CHECK(snapshot_get(a, "/note-8", 7) == pages[8]);
	CHECK(snapshot_get(b, "/note-8", 7) == NULL);
	CHECK(snapshot_get(a, "/added", 6) == NULL && snapshot_get(b, "/added", 6) != NULL);
	CHECK_INT(a->pages.len, N);
	CHECK_INT(b->pages.len, N);
	/* at most the three leaves touched were copied (the one that gained "/added" may be new) */
	CHECK(ptable_shared_leaves(&a->pages, &b->pages) + 3 >= ptable_leaves(&a->pages));
	/*
	 * and what they held: the pages referenced by both tables now are the
	 * few in those leaves (n / 16,384 each), not a share of the 5,000
	 */
	{
		size_t twice = 0;
		for (k = 0; k < N; k++)
			twice += refs(pages[k]) == 3;
		CHECK(twice <= 8);
	}
	while (ptable_next(&b->pages, &it))
		seen++;
	CHECK_INT(seen, N);
	snapshot_unref(a);
	CHECK(refs(pages[8]) == 1); /* only the test's own: b dropped it, a is gone */
	CHECK(refs(pages[9]) == 2); /* still in b */
	snapshot_unref(b);
	CHECK_INT(refs(pages[9]), 1);
	CHECK_INT(refs(fresh), 1);
	for (k = 0; k < N; k++)
		page_unref(pages[k]);
	page_unref(fresh);
	free(pages);
}

struct diff_seen {
	char paths[8][32];
	int was[8], now[8];
	size_t n;
};

static void record(void *ctx, const char *path, size_t len, const struct page *was,
		   const struct page *now)
{
	struct diff_seen *d = ctx;

	if (d->n < 8 && len < 32) {
		memcpy(d->paths[d->n], path, len);
		d->paths[d->n][len] = '\0';
		d->was[d->n] = was != NULL;
		d->now[d->n] = now != NULL;
	}
	d->n++;
}

/* snapshot_diff() reports exactly the pages put, replaced and removed. */
static void test_diff(void)
{
	enum { N = 3000 };
	struct snapshot *a = snapshot_new(1), *b;
	struct diff_seen d;
	char path[32];
	size_t k, i;

	for (k = 0; k < N; k++) {
		snprintf(path, sizeof(path), "/note-%zu", k);
		snapshot_put(a, page_new(PAGE_NOTE, path, strlen(path)));
	}
	b = snapshot_clone(a);
	memset(&d, 0, sizeof(d));
	snapshot_diff(a, b, record, &d);
	CHECK_INT(d.n, 0); /* a clone shares everything */
	snapshot_put(b, page_new(PAGE_NOTE, "/note-5", 7));
	snapshot_put(b, page_new(PAGE_NOTE, "/new", 4));
	snapshot_remove(b, "/note-9", 7);
	snapshot_diff(a, b, record, &d);
	CHECK_INT(d.n, 3);
	for (i = 0; i < d.n && i < 8; i++) {
		if (strcmp(d.paths[i], "/note-5") == 0)
			CHECK(d.was[i] && d.now[i]);
		else if (strcmp(d.paths[i], "/new") == 0)
			CHECK(!d.was[i] && d.now[i]);
		else
			CHECK(strcmp(d.paths[i], "/note-9") == 0 && d.was[i] && !d.now[i]);
	}
	memset(&d, 0, sizeof(d));
	snapshot_diff(NULL, a, record, &d);
	CHECK_INT(d.n, N); /* from nothing: every page is new */
	snapshot_unref(a);
	snapshot_unref(b);
}

int main(void)
{
	RUN(test_diff);
	RUN(test_clone_shares_shards);
	RUN(test_unheld_freed_at_publish);
	RUN(test_reader_keeps_retired);
	RUN(test_next_publish_reaps);
	RUN(test_release_frees_retired);
	RUN(test_readers_during_publishes);
	return test_done();
}
