/*
 * feeds.h: RSS 2.0, Atom 1.0 and sitemap <urlset> documents.
 *
 * Functions of their inputs only: an entry carries what a feed shows of a
 * note (derived_entry() fills one from a note), a target says where the
 * feed is and how many items it holds.
 */
#ifndef QUIRE_FEEDS_H
#define QUIRE_FEEDS_H

#include <stddef.h>

#include "util/buf.h"

/* A note as a feed or sitemap lists it. */
struct feed_entry {
	const char *title;
	const char *href;     /* root-relative and encoded */
	const char *summary;  /* or NULL */
	const char *path;     /* the vault path: orders entries of the same date */
	char date[11];        /* YYYY-MM-DD */
	const void *item;     /* the caller's (its note): carried along, never read */
};

/* Where a feed is: absolute URLs are origin + a root-relative href. */
struct feed_target {
	const char *origin;   /* "https://example.com" */
	const char *title;
	const char *home;     /* href of the page the feed is about */
	const char *self;     /* href of the feed itself */
	const char *language; /* RSS <language> */
	size_t max_items;     /* the newest this many entries */
};

/* Appends an RSS or Atom feed of the newest entries; v is sorted newest first in place. */
void feed_rss(const struct feed_target *t, struct feed_entry *v, size_t n, struct buf *out);
void feed_atom(const struct feed_target *t, struct feed_entry *v, size_t n, struct buf *out);

/* Appends a sitemap <urlset> of the entries, in the given order. */
void feed_urlset(const char *origin, const struct feed_entry *v, size_t n, struct buf *out);

#endif
