/*
 * derived-int.h: what derived.c (registration, marks) and
 * derived-pages.c (the resources' bytes) share. Private to them.
 */
#ifndef QUIRE_DERIVED_INT_H
#define QUIRE_DERIVED_INT_H

#include "site/feeds.h"
#include "site/listing.h"
#include "site/model.h"
#include "util/hash.h"
#include "util/map.h"
#include "util/oset.h"

#include <stdlib.h>
#include <string.h>

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
	struct listing list;   /* listed notes directly inside, by title: its listing's pages */
	struct listing tree;   /* the same notes: its explorer documents, cut in bigger
				  pages (LISTING_TREE_PAGE) */
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
	struct notevec *shards; /* listed notes by a hash of their URL: sitemaps, graph */
	int *shard_dirty;      /* SHARD_SITEMAP, and a bit per graph document */
	unsigned char *shard_sorted; /* its notes are in URL order (a note in or out clears it) */
	size_t nshards;
	size_t nlisted;
	int tag_index_dirty, site_feed_dirty, sitemap_index_dirty, graph_index_dirty;
	struct map folder_by_url; /* listing URL -> struct derived_folder * */
	struct oset by_date;   /* every listed note, newest first: the site's feed */
};


/* qsort() that accepts an empty (NULL) array, which the C library may not. */
static inline void derived_sort(void *v, size_t n, size_t size,
				int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(v, n, size, cmp);
}

/*
 * What of a shard is to be written: its sitemap, and its graph documents.
 * A shard's graph is cut in GRAPH_PARTS documents (by other bits of the
 * same hash), so that one note's change rewrites about a hundred entries.
 */
#define GRAPH_PARTS 4
enum { SHARD_SITEMAP = 1, SHARD_GRAPH_ALL = ((1 << GRAPH_PARTS) - 1) << 1 };

/* The graph document of its shard that a note at url is in: 0 to GRAPH_PARTS - 1. */
static inline int derived_graph_part(const char *url)
{
	return (int)((hash64(url, strlen(url)) >> 40) & (GRAPH_PARTS - 1));
}

/* Its bit in a shard's dirty mask. */
static inline int derived_graph_bit(const char *url)
{
	return 2 << derived_graph_part(url);
}

/* derived.c */
/* The published notes n links to or embeds, in its order, each once, itself left out. */
void derived_graph_links(const struct site_note *n, struct notevec *out);
const char *derived_summary(const struct site_note *n);
void derived_newest(const struct oset *o, size_t k, struct notevec *out);
char *derived_folder_url(const struct derived_folder *f);

/* derived-pages.c */
/* Shard i's notes, in URL order (sorted when a note came or went since). */
const struct notevec *derived_shard(struct derived *d, size_t i);
/* Removes the generated page at key, if the page there is one (not a note's). */
void derived_del_generated(struct site *s, const char *key);
void derived_render_tag(struct site *s, struct derived_tag *t, int listing, int with_feed);
void derived_render_tag_index(struct site *s);
void derived_render_folder(struct site *s, struct derived_folder *f, int listing, int with_feed);
void derived_render_shard(struct site *s, size_t i);
void derived_render_sitemap_index(struct site *s);
/* The graph documents marked in shard_dirty (the marks are left to the caller). */
void derived_render_graphs(struct site *s);
void derived_render_graph_index(struct site *s);
void derived_write_feeds(struct site *s, const char *key, const char *title, const char *home,
		  struct site_note *const *v, size_t n, int with_atom);

#endif
