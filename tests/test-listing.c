/*
 * test-listing.c: a listing's pages after any sequence of adds, removes,
 * retitles and touches are the pages a fresh listing of the same notes
 * cuts, and each flush writes only pages near what changed.
 *
 * The pages are kept in a map as the ops write and drop them (key -> the
 * paths of their notes, the first page with the keys of every page); after
 * each flush that map must equal the one a new listing of the same notes
 * writes from scratch.
 */
#include "site/listing.h"
#include "util/map.h"
#include "site/site.h"
#include "lib/test.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng = 7;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct served {
	struct map pages;          /* key -> "key\0what the page shows" (the key points into it) */
	size_t writes, drops;
};

static void key_of(void *ctx, const char *first_path, struct buf *out)
{
	(void)ctx;
	buf_reset(out);
	buf_adds(out, "/list");
	if (first_path)
		buf_addf(out, "/~%s", first_path);
}

/* How the listings under test are cut: a listing's, or as set by a test. */
static struct {
	unsigned every;
	size_t max_run;
	int counted;
} cut = { LISTING_PAGE, LISTING_MAX_RUN, 0 };

static void init_cut(struct listing *l)
{
	listing_init_sized(l, cut.every, cut.max_run, cut.counted);
}

static const char *text_of(const char *entry)
{
	return entry + strlen(entry) + 1;
}

static void put(struct served *sv, const char *key, char *text)
{
	size_t kl = strlen(key), tl = strlen(text);
	char *entry = xmalloc(kl + tl + 2);

	memcpy(entry, key, kl + 1);
	memcpy(entry + kl + 1, text, tl + 1);
	free(text);
	free(map_remove(&sv->pages, key, kl));
	map_put(&sv->pages, entry, kl, entry);
}

static void write_page(void *ctx, const struct listing *l, const struct listing_page *p,
		       struct site_note *const *v, size_t n)
{
	struct served *sv = ctx;
	struct buf b = BUF_INIT;
	size_t i;

	sv->writes++;
	if (!p || p->head) {
		/* the first page shows every page: its pager */
		struct oset_iter it = OSET_ITER_INIT;
		const struct listing_page *q;
		buf_adds(&b, "pages:");
		while ((q = oset_next(&l->pages, &it)))
			if (cut.counted)
				buf_addf(&b, " %s(%s)x%zu", q->key, q->title, q->n);
			else
				buf_addf(&b, " %s(%s)", q->key, q->title);
		buf_addc(&b, '\n');
	}
	for (i = 0; i < n; i++)
		buf_addf(&b, "%s|%s\n", v[i]->note.title, v[i]->note.path);
	put(sv, p ? p->key : "/list", buf_detach(&b, NULL));
}

static void drop_page(void *ctx, const struct listing_page *p)
{
	struct served *sv = ctx;
	sv->drops++;
	free(map_remove(&sv->pages, p->key, strlen(p->key)));
}

static const struct listing_ops ops = { key_of, write_page, drop_page };

static void served_release(struct served *sv)
{
	size_t i = 0;
	const char *k;
	void *v;

	while (map_next(&sv->pages, &i, &k, NULL, &v))
		free(v);
	map_release(&sv->pages);
}

/* Whether a and b serve the same keys with the same text; prints the first difference. */
static int same(const struct served *a, const struct served *b)
{
	size_t i = 0;
	const char *k;
	void *v;

	if (a->pages.len != b->pages.len) {
		fprintf(stderr, "  %zu pages, a fresh listing has %zu\n", a->pages.len, b->pages.len);
		return 0;
	}
	while (map_next(&a->pages, &i, &k, NULL, &v)) {
		const char *w = map_gets(&b->pages, k);
		if (!w || strcmp(text_of(v), text_of(w)) != 0) {
			fprintf(stderr, "  page %s differs:\n%s\n  a fresh listing:\n%s\n", k,
				text_of(v), w ? text_of(w) : "(none)");
			return 0;
		}
	}
	return 1;
}

enum { NOTES = 1500, TITLES = 400 };

static void title_of(struct site_note *n, unsigned t)
{
	char buf[32];
	free(n->note.title);
	snprintf(buf, sizeof(buf), "Title %03u", t); /* shared titles: path breaks ties */
	n->note.title = xstrdup(buf);
}

static int check_fresh(struct site_note *notes, const int *in, size_t count, struct served *live)
{
	struct listing fresh;
	struct served sv = { MAP_INIT, 0, 0 };
	size_t k;
	int ok;

	init_cut(&fresh);
	for (k = 0; k < count; k++)
		if (in[k])
			listing_add(&fresh, &notes[k]);
	listing_flush(&fresh, &ops, &sv);
	ok = same(live, &sv);
	listing_release(&fresh, NULL, NULL);
	served_release(&sv);
	return ok;
}

static void test_random_changes(void)
{
	struct site_note *notes = xcalloc(NOTES, sizeof(*notes));
	int *in = xcalloc(NOTES, sizeof(int));
	struct listing l;
	struct served live = { MAP_INIT, 0, 0 };
	size_t k, step, small = 0, singles = 0, flushes = 0;
	char path[32];

	for (k = 0; k < NOTES; k++) {
		snprintf(path, sizeof(path), "n%04zu.md", k);
		notes[k].note.path = xstrdup(path);
		notes[k].listed = xcalloc(1, sizeof(*notes[k].listed));
		title_of(&notes[k], (unsigned)(rnd() % TITLES));
	}
	init_cut(&l);
	for (step = 0; step < 4000; step++) {
		size_t batch = 1 + (rnd() % 8 == 0 ? rnd() % 40 : 0), b, before;
		for (b = 0; b < batch; b++) {
			struct site_note *n;
			k = rnd() % NOTES;
			n = &notes[k];
			switch (rnd() % 5) {
			case 0: /* comes or goes */
			case 1:
				if (in[k]) {
					listing_del(&l, n);
					listed_place(n->listed, NULL, NULL);
				} else {
					listed_place(n->listed, n->note.title, n->note.path);
					listing_add(&l, n);
				}
				in[k] = !in[k];
				break;
			case 2: /* retitled: leaves under the old title, comes back under the new */
				if (!in[k])
					break;
				listing_del(&l, n);
				title_of(n, (unsigned)(rnd() % TITLES));
				listed_place(n->listed, n->note.title, n->note.path);
				listing_add(&l, n);
				break;
			case 3: /* moved: leaves its place under the old path, comes back under the new */
				if (!in[k])
					break;
				listing_del(&l, n);
				snprintf(path, sizeof(path), "m%04u/n%04zu.md", (unsigned)(rnd() % 9999), k);
				free(n->note.path);
				n->note.path = xstrdup(path);
				listed_place(n->listed, n->note.title, n->note.path);
				listing_add(&l, n);
				break;
			default: /* shows something else in place */
				if (in[k])
					listing_touch(&l, n);
				break;
			}
		}
		if (rnd() % 50 == 0)
			listing_head(&l);
		before = live.writes + live.drops;
		listing_flush(&l, &ops, &live);
		flushes++;
		if (batch == 1) {
			singles++;
			small += live.writes + live.drops - before <= 6;
		}
		if (step % 97 == 0 || step > 3990) {
			if (!check_fresh(notes, in, NOTES, &live)) {
				test_current_failed = 1;
				fprintf(stderr, "  after step %zu\n", step);
				break;
			}
		}
	}
	CHECK(l.notes.n > 300); /* several pages: the cuts were exercised */
	CHECK(l.pages.n > 3);
	/* one change writes a handful of pages, not the listing */
	fprintf(stderr, "  %zu flushes, %zu of %zu single changes wrote or dropped at most 6 pages\n",
		flushes, small, singles);
	CHECK(singles > 1000 && small > singles * 3 / 4);
	/* emptied, the listing drops every page and writes an empty first page */
	for (k = 0; k < NOTES; k++)
		if (in[k]) {
			listing_del(&l, &notes[k]);
			in[k] = 0;
		}
	listing_flush(&l, &ops, &live);
	CHECK(check_fresh(notes, in, NOTES, &live));
	CHECK(live.pages.len == 1);
	listing_release(&l, NULL, NULL);
	served_release(&live);
	for (k = 0; k < NOTES; k++) {
		free(notes[k].note.path);
		free(notes[k].note.title);
		listed_free(notes[k].listed);
	}
	free(notes);
	free(in);
}

/* A note that starts a chunk, arriving before every other, takes the first page's key. */
static void test_new_first(void)
{
	struct site_note *notes = xcalloc(600, sizeof(*notes));
	struct listing l;
	struct served live = { MAP_INIT, 0, 0 };
	int *in = xcalloc(600, sizeof(int));
	char path[32];
	size_t k, tried = 0;

	listing_init(&l);
	for (k = 0; k < 600; k++) {
		snprintf(path, sizeof(path), "p%04zu.md", k);
		notes[k].note.path = xstrdup(path);
		notes[k].listed = xcalloc(1, sizeof(*notes[k].listed));
		notes[k].note.title = xstrdup(k < 300 ? "M" : "A"); /* the second half sorts first */
		listed_place(notes[k].listed, notes[k].note.title, path);
	}
	for (k = 0; k < 300; k++) {
		listing_add(&l, &notes[k]);
		in[k] = 1;
	}
	listing_flush(&l, &ops, &live);
	for (k = 599; k >= 300; k--, tried++) {
		listing_add(&l, &notes[k]); /* before every note there */
		in[k] = 1;
		listing_flush(&l, &ops, &live);
		if (!check_fresh(notes, in, 600, &live)) {
			test_current_failed = 1;
			break;
		}
	}
	CHECK(tried == 300);
	listing_release(&l, NULL, NULL);
	served_release(&live);
	for (k = 0; k < 600; k++) {
		free(notes[k].note.path);
		free(notes[k].note.title);
		listed_free(notes[k].listed);
	}
	free(notes);
	free(in);
}

/*
 * The explorer's way: pages cut three times coarser here (LISTING_TREE_PAGE
 * is ten, too coarse for 1,500 notes to make several pages), and a first
 * page that shows each page's count, so it is written again when one
 * changes: the same pages as a fresh listing after every flush.
 */
static void test_random_counted(void)
{
	cut.every = 3 * LISTING_PAGE;
	cut.max_run = 700;
	cut.counted = 1;
	test_random_changes();
	cut.every = LISTING_PAGE;
	cut.max_run = LISTING_MAX_RUN;
	cut.counted = 0;
}

int main(void)
{
	RUN(test_random_changes);
	RUN(test_random_counted);
	RUN(test_new_first);
	return test_done();
}
