/*
 * site.h: the loader's state, and how a change becomes a snapshot.
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

#include <stddef.h>
#include <stdint.h>

#include "vault/config.h"
#include "util/diag.h"
#include "site/layout.h"
#include "util/map.h"
#include "markdown/markdown.h"
#include "vault/note.h"
#include "site/snapshot.h"
#include "vault/vault.h"

struct resolver;
struct derived;
struct derived_folder;
struct hosts;
struct site_note;
struct site_file;

/* How one wikilink or embed of a note resolved. */
/* A route a note claims: a path on a host ("" for the main site). */
struct site_route {
	char *host;
	char *path;
};

struct site_ref {
	enum md_target_kind kind;
	void *target;  /* struct site_note * (NOTE, PLAIN), struct site_file * (ATTACHMENT), or NULL */
};

/* A run of a note's fragment that its composed page holds verbatim. */
struct site_piece {
	size_t from;   /* offset in the fragment; the run ends where the next one starts */
	size_t at;     /* offset of the same bytes in the page's body */
};

/*
 * Where a note's fragment is. Composing copies the fragment into the page,
 * in pieces cut at its embeds, so once the page exists the fragment is read
 * back from it and md.html is freed: the fragment is not kept twice
 * (render.c).
 */
struct site_fragment {
	size_t len;                /* the fragment's length */
	struct page *page;         /* the page holding it (a reference), or NULL: md.html holds it */
	struct site_piece *pieces; /* in fragment order */
	size_t npieces;
	struct site_piece *next;   /* its pieces in n->page once composed, until adopted */
	size_t nnext;
};

struct site_note {
	struct note note;
	char *disk;           /* path as on disk, vault-relative */
	char *name_key;       /* resolve_name_key(path): what links call it by */
	char *base_url;       /* its URL before collision suffixes (published notes) */
	char *gbase;          /* the base URL whose group it is in (site.c, "URLs"), or NULL */
	char *url;            /* decoded URL path without prefix: "/folder/note"; NULL if unpublished */
	char *href;           /* encoded URL with prefix, for links */
	int published;
	struct md_result md;  /* the rendered fragment (published notes); html only until composed */
	struct site_ref *refs;/* parallel to md.refs */
	struct map ref_kinds; /* many refs: target -> (1 << MD_REF_LINK) | (1 << MD_REF_EMBED) */
	struct site_fragment frag; /* where the fragment's bytes are */
	struct site_note **backlinks; /* published notes linking here, by title then path */
	size_t nbacklinks, abacklinks;
	char **mentions;      /* name keys under which this note is in site->mentions */
	size_t nmentions;
	char **aliases;       /* alias URLs this note claims */
	size_t naliases;
	struct page *page;    /* the composed page (a reference) */
	struct site_route *routes; /* the routes it claims (published notes), see hosts.h */
	size_t nroutes;
	/* work marks for one site_apply() */
	unsigned reparse : 1, rerender : 1, recompose : 1, removed : 1, added : 1, seen : 1;
	unsigned indexed : 1, parsed : 1;
	unsigned embedded : 1;  /* a page being composed reads its fragment */
	char *old_title;      /* before this apply's reparse, to spot a retitle */
	uint64_t hash;        /* of the file's bytes: a note deleted and one added with the
				 same bytes in one change is a move */
	/* what derived.c registered it under */
	char **dtags;         /* tag keys, with their parents ("a", "a/b") */
	size_t ndtags;
	struct derived_folder *dfolder;
	int dshard;           /* sitemap shard, or -1 */
	char *durl;           /* the URL it was listed under */
	uint64_t dsig;        /* hash of what listings show of it (0: not listed) */
	char ddate[11];       /* the date its feeds order it by, while listed */
	char *dtitle;         /* the title its listings order it by, while listed */
};

struct site_file {
	char *path;           /* vault-relative, NFC */
	char *disk;
	char *url;            /* decoded: "/" + path */
	char *href;           /* encoded with prefix */
	off_t size;
	time_t mtime;
	int refs;             /* references from published notes: published when > 0 */
	unsigned changed : 1, removed : 1, added : 1;
	unsigned long seen;   /* the site's apply count when last found on disk */
};

struct site_options {
	const char *base_url; /* overrides quire.yml, or NULL */
	int threads;          /* loader threads; 0 = one per core */
	const char *data_dir; /* state kept between runs (moves); NULL: <vault>/.quire */
	int search;           /* keep notes' text for the search index, link the search page */
};

struct site {
	char *vault;              /* the root as given */
	struct config cfg;
	struct diag_list diags;
	struct site_note **notes; /* sorted by path */
	size_t nnotes, anotes;
	struct site_file **files; /* sorted by path */
	size_t nfiles, afiles;
	struct map note_by_path;  /* path -> struct site_note * */
	struct map file_by_path;  /* path -> struct site_file * */
	struct resolver *resolver;
	struct map mentions;      /* name key -> notes whose links use that name */
	struct map claims;        /* alias URL -> notes claiming it, in path order */
	struct map url_groups;    /* base URL -> the published notes asking for it (site.c) */
	struct map moved;         /* note path -> the URLs it had before it moved there */
	char *moves_file;         /* where moves are recorded, to outlive a restart */
	struct derived *derived;  /* tag pages, folder listings, sitemaps, feeds */
	struct hosts *hosts;      /* custom domains and routes */
	struct search *search;    /* the full-text index kept by site_apply(), or NULL */
	int keep_text;            /* keep each note's plain text (for indexing it later) */
	int search_tx;            /* site_apply() staged rows in an open transaction */
	char *search_fill;        /* filling the index: the last path done ("" at first), or NULL */
	char *data_dir;
	struct map pages;         /* URL path -> struct page *: what the next snapshot holds */
	struct map dirty;         /* URL paths changed since the last snapshot */
	struct page *not_found;
	char *headers;            /* security headers for every response (see snapshot.h) */
	struct layout_site layout;
	char *asset_urls[8];      /* owned strings behind layout's URLs */
	int threads;
	unsigned long applies;    /* site_apply() calls so far */
	size_t npublished;        /* published notes */
	size_t nserved_files;     /* attachments referenced by published notes */
	double load_ms;           /* the last site_apply() */
	double derived_ms, hosts_ms; /* of that: derived resources, custom hosts (last apply) */
	double phase_ms[3];       /* of that: parse and resolve, render, compose (last apply) */
	size_t napplied;          /* notes parsed by the last site_apply() */
	size_t nrendered;         /* notes rendered by the last site_apply() */
	size_t ncomposed;         /* pages composed by the last site_apply() */
	int gzip_later;           /* pages site_apply() makes wait for site_gzip_pending() */
	struct gz_pending *gz_pending; /* those pages, in the order they were put */
	size_t ngz_pending, agz_pending;
};

/* A page put uncompressed (gzip_later), and the note whose page it is (or NULL). */
struct gz_pending {
	struct page *page;    /* a reference */
	char *note;           /* the note's path: the note is looked up, it may be gone */
};

/* Figures for check and the start-up line. */
struct site_stats {
	size_t notes, published, attachments, published_attachments;
	size_t links, embeds, broken;
	size_t outside;       /* Markdown links to relative paths not in the vault */
	size_t wikilinks;     /* [[links]] and ![[embeds]] (the rest are Markdown links) */
};

/*
 * A site for the vault at path with its settings loaded and no notes yet.
 * Returns NULL when quire.yml cannot be read or --base-url is bad (logged).
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

/* Puts a page in the table for the next snapshot (taking a new reference). */
void site_page_put(struct site *s, struct page *p);
/* Removes the page at a URL path from the table. */
void site_page_del(struct site *s, const char *key);

/* The date a note is listed and sorted under: updated, else created, else its file's. */
void site_note_date(const struct site_note *n, char out[11]);

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

/* The note at a vault path (NFC), or NULL. */
struct site_note *site_find_note(const struct site *s, const char *path);

void site_free(struct site *s);

#endif
