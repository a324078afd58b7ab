/*
 * derived.h: what a site needs beside its pages, kept current change by
 * change: tag pages and the tag index, listings of folders that have no
 * index note, sitemap shards and their index, the graph's documents (cut
 * like the sitemap), and RSS and Atom feeds for the site, each folder and
 * each tag.
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

#include "site/feeds.h"
#include "util/buf.h"

struct site;
struct site_note;

struct derived *derived_new(void);
void derived_free(struct derived *d);

/*
 * Brings every derived resource up to date after site_apply() changed the
 * notes in changed (parsed again, removed, or moved to another URL) and
 * composed the notes in composed (whose links may now point elsewhere:
 * the graph shows them). Removed notes must still be readable; they are
 * unregistered here.
 */
void derived_update(struct site *s, struct site_note *const *changed, size_t n,
		    struct site_note *const *composed, size_t ncomposed);

/* The number of sitemap shards (/sitemap-0.xml ...) the main site has. */
size_t derived_shards(const struct site *s);

/* The feed entry of a note at href (feeds.h); the entry borrows the note's strings. */
void derived_entry(const struct site_note *n, const char *href, struct feed_entry *out);

#endif
