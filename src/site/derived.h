/*
 * derived.h: what a site needs beside its pages, kept current change by
 * change: tag pages and the tag index, listings of folders that have no
 * index note, sitemap shards and their index, and RSS and Atom feeds for
 * the site, each folder and each tag.
 *
 * Each resource is rebuilt only when what it lists changes: derived.c
 * remembers under which tags, folder and sitemap shard each note is
 * listed, and a hash of what those listings show of it (title, URL, date,
 * summary). A change that leaves a note's hash and memberships alone
 * touches no derived resource at all.
 */
#ifndef QUIRE_DERIVED_H
#define QUIRE_DERIVED_H

#include <stddef.h>

#include "util/buf.h"

struct site;
struct site_note;

struct derived *derived_new(void);
void derived_free(struct derived *d);

/*
 * Brings every derived resource up to date after site_apply() changed the
 * notes in changed (parsed again, removed, or moved to another URL).
 * Removed notes must still be readable; they are unregistered here.
 */
void derived_update(struct site *s, struct site_note *const *changed, size_t n);

/* The number of sitemap shards (/sitemap-0.xml ...) the main site has. */
size_t derived_shards(const struct site *s);

/* A note as a feed or sitemap lists it, at a root-relative, encoded href. */
struct feed_entry {
	const struct site_note *note;
	const char *href;
};

/* Where a feed is: absolute URLs are origin + a root-relative href. */
struct feed_target {
	const char *origin;   /* "https://example.com" */
	const char *title;
	const char *home;     /* href of the page the feed is about */
	const char *self;     /* href of the feed itself */
};

/*
 * Appends an RSS 2.0 or Atom 1.0 feed of the newest entries (at most
 * feed_items of quire.yml); v is sorted newest first in place.
 */
void derived_rss(const struct site *s, const struct feed_target *t, struct feed_entry *v,
		 size_t n, struct buf *out);
void derived_atom(const struct site *s, const struct feed_target *t, struct feed_entry *v,
		  size_t n, struct buf *out);

/* Appends a sitemap <urlset> of the entries, in the given order. */
void derived_urlset(const char *origin, const struct feed_entry *v, size_t n, struct buf *out);

#endif
