/*
 * listing.h: notes in title order, cut into pages that a change rewrites
 * one or two of.
 *
 * A tag's listing and a folder's (and the folder's explorer document) show
 * their notes by title. At 100,000 notes a tag or a folder can hold tens
 * of thousands of them, so a listing is cut into pages, and a note that
 * comes, goes, is retitled or shows something else rewrites only the
 * pages around it: nothing here walks the whole listing for one change.
 *
 * Where a page starts is decided by the notes themselves: a note whose
 * path hashes to 0 modulo LISTING_PAGE starts a chunk, and a chunk longer
 * than LISTING_MAX_RUN notes is cut every LISTING_MAX_RUN notes from its
 * start. So pages are about LISTING_PAGE notes, a fresh load cuts the same
 * pages as any sequence of edits (the property tests compare the two), and
 * a change is confined to the chunk it falls in and the one before it.
 *
 * The listing keeps its notes in an ordered set (by the title they were
 * registered with, then path), and a record of each page it wrote. A
 * change is noted with listing_touch() (the note's place before and after
 * it); listing_flush() then walks from each touched place back and forward
 * to the nearest chunk starts, cuts those chunks again, and tells the
 * caller which pages to write and which to drop. The first page is the
 * listing's own address and is written again whenever the set of pages
 * changes (it lists them all) or listing_head() asks for it.
 *
 *	listing_init(&l);
 *	listed_place(n->listed, title, path); // the order it is listed in
 *	listing_add(&l, n);
 *	listing_touch(&l, n);           // its place changed
 *	listing_flush(&l, &ops, ctx);
 *	listing_del(&l, n); listing_touch(&l, n); ...
 *	listing_release(&l, NULL, NULL);
 */
#ifndef QUIRE_LISTING_H
#define QUIRE_LISTING_H

#include "util/buf.h"
#include "util/oset.h"

#include <stddef.h>
#include <stdint.h>

#define LISTING_PAGE 100
#define LISTING_MAX_RUN (4 * LISTING_PAGE)
/*
 * The explorer's pages: a compact entry (a title and a URL, about 60
 * bytes), so a page of about a thousand is still a small document (60 KB,
 * 240 KB at most before gzip) and a folder of a few thousand notes opens
 * with one request. A note starting one of these chunks starts a listing
 * chunk too (the modulus is a multiple), though nothing relies on it.
 */
#define LISTING_TREE_PAGE (10 * LISTING_PAGE)
#define LISTING_TREE_MAX_RUN (4 * LISTING_TREE_PAGE)

struct site_note;
struct derived_folder;

/*
 * Where derived resources list a note: kept by derived.c (n->listed),
 * read by listings for the title they order it by. Notes that were never
 * listed have none.
 */
struct listed {
	char **tags;          /* tag keys, with their parents ("a", "a/b") */
	size_t ntags;
	struct derived_folder *folder;
	int shard;            /* sitemap shard, or -1 */
	char *url;            /* the URL it was listed under */
	uint64_t sig;         /* hash of what listings show of it (0: not listed) */
	uint64_t gsig;        /* hash of what the graph shows of it (derived.c), 0: not yet */
	int gdirty;           /* gsig changed since its graph document was written */
	char date[11];        /* the date its feeds order it by, while listed */
	char *title;          /* the title its listings order it by, while listed */
	char *path;           /* and the path (a note that moved leaves its old place) */
	uint64_t cut;         /* hash of its path: it starts a chunk of a listing whose
				 pages are `every` notes when cut % every == 0 (see above) */
};

void listed_free(struct listed *l);
/*
 * Sets the title and path a note is listed under (NULL, NULL: not
 * listed), between taking it out of its listings and putting it back.
 */
void listed_place(struct listed *l, const char *title, const char *path);

/* A page as last written. */
struct listing_page {
	char *title, *path;        /* its first note's order (copies: the note may change) */
	char *key;                 /* where it is served */
	struct site_note *first;   /* its first note, while the page stands */
	size_t n;                  /* how many notes */
	int head;                  /* it is the listing's first page (its key is the listing's) */
};

/* A place in the order that changed: the note that is or was there. */
struct listing_touch {
	char *title, *path;
};

struct listing {
	struct oset notes;         /* struct site_note *, by dtitle (case-folded), then path */
	struct oset pages;         /* struct listing_page *, by their first note's order */
	struct listing_touch *touched;
	size_t ntouched, atouched;
	int all;                   /* every page is to be written again */
	int head;                  /* the first page is to be written again */
	uint64_t every;            /* a note whose cut % every == 0 starts a chunk */
	size_t max_run;            /* a chunk is cut every max_run notes */
	int counted;               /* the first page shows each page's count: it is
				      written again when a count changes */
};

struct listing_ops {
	/*
	 * The key of the page whose first note has this path; NULL for the
	 * listing's first page, whose key is the listing's.
	 */
	void (*key)(void *ctx, const char *first_path, struct buf *out);
	/*
	 * Writes page p (NULL: the first page of an empty listing): its notes
	 * v[0..n). The pages are l->pages, in order, with the new ones in place.
	 */
	void (*write)(void *ctx, const struct listing *l, const struct listing_page *p,
		      struct site_note *const *v, size_t n);
	/* Page p is no longer there (it may be the first page, of a listing now empty). */
	void (*drop)(void *ctx, const struct listing_page *p);
};

/* A listing of pages of about LISTING_PAGE notes, at most LISTING_MAX_RUN. */
void listing_init(struct listing *l);

/*
 * A listing cut every `every` notes on average, max_run at most; counted:
 * its first page shows how many notes each page holds (the explorer's,
 * so that a reader's list has its full height before the pages come).
 */
void listing_init_sized(struct listing *l, unsigned every, size_t max_run, int counted);

/* Frees what it holds, calling drop (when not NULL) for every page it wrote. */
void listing_release(struct listing *l, const struct listing_ops *ops, void *ctx);

/* Adds n at its place (by n->dtitle and its path) and touches it. */
void listing_add(struct listing *l, struct site_note *n);

/* Removes n (by the order it was added with) and touches its place. */
void listing_del(struct listing *l, struct site_note *n);

/* What n shows in the listing changed; its place did not. */
void listing_touch(struct listing *l, const struct site_note *n);

/* The first page only (a folder's subfolders are there). */
void listing_head(struct listing *l);

/* Every page (the first load, a new layout). */
void listing_all(struct listing *l);

size_t listing_count(const struct listing *l);

/*
 * Writes the pages touched since the last flush, drops those that are no
 * longer there, and the first page when the pages changed or were asked
 * for. Costs the touched chunks (about LISTING_PAGE notes each, with their
 * neighbours), plus the number of pages when the first page is written.
 */
void listing_flush(struct listing *l, const struct listing_ops *ops, void *ctx);

/* The case-folded title, then path order that listings and the explorer show notes in. */
int listing_cmp(const struct site_note *a, const struct site_note *b);

#endif
