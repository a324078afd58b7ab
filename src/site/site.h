/*
 * site.h: the loader's state, and how a change becomes a snapshot.
 *
 * The structures are model.h's; this is what the loader and the commands
 * call: load, apply a change, take a snapshot, keep the search index.
 *
 * A site is everything known about a vault between two snapshots: the
 * settings, each note's metadata, rendered fragment and resolved
 * references, the attachments, the name index, the backlinks, and the
 * table of pages that the next snapshot will hold. It is owned by one
 * thread (the loader); the snapshots it produces are what the rest of the
 * program reads.
 *
 * There is one way in: site_apply() takes the paths that changed and
 * works out what they touch. Loading a vault is site_apply() on every
 * file of an empty site, so the full load and an incremental update run
 * the same code, and "incremental equals full" is checked by building both
 * (tests/test-incremental.c).
 *
 * What a change touches (docs/design.md has the table):
 *	- the note itself is parsed and rendered again;
 *	- a name that appears, vanishes or changes publish state re-resolves
 *	  the notes that mention it (an index from name to mentioning notes),
 *	  and those whose links now resolve differently are rendered again;
 *	- a note whose URL changes re-renders the notes that link to it;
 *	- notes gaining or losing a backlink, and notes linked from a note
 *	  whose title or URL changed, are composed again (not re-rendered);
 *	- notes that embed a changed note, transitively, are composed again.
 */
#ifndef QUIRE_SITE_H
#define QUIRE_SITE_H

#include <stdatomic.h>
#include <stddef.h>

#include "site/model.h"

struct site_options {
	const char *base_url; /* overrides quire.yml, or NULL */
	/*
	 * The text of the last valid quire.yml ("" for none), to take when
	 * the one on disk is invalid (a running server's reload), or NULL:
	 * an invalid quire.yml fails the load.
	 */
	const char *config_fallback;
	size_t config_fallback_len;
	int threads;          /* loader threads; 0 = one per core */
	const char *data_dir; /* state kept between runs (moves); NULL: <vault>/.quire */
	int search;           /* keep notes' text for the search index, link the search page */
	struct site_progress *progress; /* site_load() counts its work here, or NULL */
};

/*
 * How far a site_load() has come, for other threads to read while it runs
 * (a server's /healthz, a progress bar). Each note found is parsed,
 * rendered and composed: three steps, counted as each ends, so that the
 * notes' worth of work done is steps / 3 (site_progress_read()). total is
 * 0 until the scan has counted the notes; at the end steps == total (a
 * note that is not published is never rendered: its steps count then).
 * Zero it before the load (or use SITE_PROGRESS_INIT).
 */
struct site_progress {
	atomic_size_t steps;
	atomic_size_t total;          /* 3 x the notes the scan found */
	void (*scanned)(void *ctx);   /* called once total is known, on the loading thread, or NULL */
	void *ctx;
};

/* The notes' worth of work done (at most *of) and the notes found (0 before the scan). */
void site_progress_read(const struct site_progress *p, size_t *notes, size_t *of);

/* Figures for check and the start-up line. */
struct site_stats {
	size_t notes, published, attachments, published_attachments;
	size_t links, embeds, broken;
	size_t outside;       /* Markdown links to relative paths not in the vault */
	size_t wikilinks;     /* [[links]] and ![[embeds]] (the rest are Markdown links) */
};

/*
 * Reads and checks <path>/quire.yml (and opt's --base-url) as site_new()
 * would without a fallback, logging each error the same way, and keeps
 * nothing: what a command runs before it starts anything, so that a bad
 * setting stops it before it listens or writes. 0, or -1.
 */
int site_check_settings(const char *path, const struct site_options *opt);

/*
 * A site for the vault at path with its settings loaded and no notes yet.
 * Returns NULL when quire.yml cannot be read or is invalid (each error
 * logged as "<vault>/quire.yml:LINE: why") and opt gives no fallback, or
 * when --base-url is bad (logged). With a fallback, an invalid quire.yml
 * gives a site with the fallback's settings and config_error set.
 */
struct site *site_new(const char *path, const struct site_options *opt);

/*
 * Reads the vault at path and renders every published page: site_new()
 * and site_apply() of every file. Problems with notes are diagnostics,
 * not failures. Returns NULL only when the vault cannot be read (logged).
 */
struct site *site_load(const char *path, const struct site_options *opt);

/*
 * Takes n vault-relative paths (as on disk) that changed: files created,
 * modified or deleted, or folders (all that is below them). Reads them
 * again and updates every page they touch. Returns 0, or -1 when the vault
 * itself has become unreadable (logged; the site is unchanged).
 */
int site_apply(struct site *s, const char *const *paths, size_t n);

/*
 * The next snapshot: prev's pages with what changed since the last call
 * replaced (prev NULL: every page, version 1). The caller owns it.
 */
struct snapshot *site_snapshot(struct site *s, const struct snapshot *prev);

void site_stats(const struct site *s, struct site_stats *st);

/*
 * What a site without base_url lacks and why, one sentence for quire check
 * and the server's log (docs/design.md, "Feeds, sitemaps and base_url"),
 * or NULL when it has a base_url. A static string.
 */
const char *site_base_url_note(const struct site *s);


/*
 * Fills the search index with every published note (the ones that changed
 * since it was last filled cost a write, the others a lookup), drops rows
 * of notes no longer published, and from then on keeps it current on each
 * site_apply(). The site must have been loaded with the search option; the
 * texts it kept for this are released. Returns 0 or -1 (logged).
 */
int site_attach_search(struct site *s, struct search *search, int fresh);

/*
 * The same in steps, so that changes need not wait for a whole fill:
 * site_search_start() attaches the index and drops stale rows; from then
 * on site_apply() keeps what it changes indexed, and each
 * site_search_fill() puts up to batch more notes. Returns 1 when the index
 * is full (texts released), 0 when there is more, -1 on an error (logged;
 * the index is then left as it is).
 */
int site_search_start(struct site *s, struct search *search);
int site_search_fill(struct site *s, size_t batch);

/*
 * Writes the search rows that site_apply() staged (call it once the
 * snapshot is published). 0, or -1 (logged) when the index refused them.
 */
int site_search_flush(struct site *s);

/*
 * Publishing before compressing. With gzip_later set, the pages a
 * site_apply() composes (notes, listings, feeds, explorer documents) go
 * into the table with their identity bytes only: the snapshot is served
 * at once, gzip-accepting clients included. This compresses them (on
 * s->threads threads) and puts the compressed pages in their place, all
 * but the ones a later site_apply() replaced already; a site_snapshot()
 * afterwards serves them. Returns how many pages it replaced.
 */
size_t site_gzip_pending(struct site *s);


void site_free(struct site *s);

#endif
