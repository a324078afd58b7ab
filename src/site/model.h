/*
 * model.h: the data model of a site: notes, attachments, their pages.
 *
 * What the loader knows of a vault between two snapshots, as plain
 * structures: each note's metadata, rendered fragment, resolved
 * references and backlinks; the attachments; and the page table the next
 * snapshot will hold. The stages that read and write it (render.c,
 * derived.c, hosts.c, listing.c, and the update in site.c, apply.c,
 * moves.c and urls.c) include this header; it includes nothing of
 * theirs, so the model sits below every stage that works on it
 * (docs/design.md, "The source tree").
 */
#ifndef QUIRE_MODEL_H
#define QUIRE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "markdown/markdown.h"
#include "site/layout.h"
#include "site/snapshot.h"
#include "util/diag.h"
#include "util/map.h"
#include "util/xalloc.h"
#include "vault/config.h"
#include "vault/note.h"
#include "vault/vault.h"

#include <string.h>

struct resolver;
struct derived;
struct derived_folder;
struct hosts;
struct site_note;
struct trail;
struct site_file;
struct listed;

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
	size_t nanchored;     /* links of other notes to a heading or block here ([[This#Part]],
				 [[This#Part#Sub]], [t](This.md#^id)): whether each finds it,
				 and a chain's "#id", depend on this note's anchors (render.c) */
	uint64_t anchors;     /* hash of its headings and block ids as last rendered */
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
	unsigned anchors_changed : 1; /* its last render changed anchors */
	unsigned vanished : 1;  /* its file was gone when parsing read it */
	unsigned too_big : 1;   /* over max_note_size: not read, not published (an error) */
	char *surl;           /* the URL its search row is under (sitesearch.c), or NULL */
	char *old_title;      /* before this apply's reparse, to spot a retitle */
	uint64_t hash;        /* of the file's bytes: a note deleted and one added with the
				 same bytes in one change is a move */
	struct listed *listed; /* where derived.c lists it (listing.h), or NULL */
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


struct site_progress; /* site.h */

struct site {
	char *vault;              /* the root as given */
	struct config cfg;
	char *config_text;        /* the quire.yml that cfg comes from ("" for none): valid */
	size_t config_len;
	char *config_error;       /* "quire.yml:3: why" when the file on disk is invalid and
				     cfg is the fallback's (site_options), else NULL */
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
	struct map unclaimed;     /* claimed URLs a generated page left this change -> owned key */
	struct map url_groups;    /* base URL -> the published notes asking for it (site.c) */
	struct map moved;         /* note path -> the URLs it had before it moved there */
	/*
	 * Published notes removed lately with no note of the same bytes added
	 * in that change, and notes added lately with none removed (urls.c):
	 * a move whose two halves reach the loader in two changes, in either
	 * order, is still a move. Rings, at most DEPARTED_MAX each.
	 */
	struct trail *departed, *arrived; /* urls.c */
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
	char *asset_urls[15];     /* owned strings behind layout's URLs */
	int threads;
	struct site_progress *progress; /* counted into while site_load() runs, else NULL */
	unsigned long applies;    /* site_apply() calls so far */
	size_t npublished;        /* published notes */
	size_t nserved_files;     /* attachments referenced by published notes */
	double load_ms;           /* the last site_apply() */
	double derived_ms, hosts_ms; /* of that: derived resources, custom hosts (last apply) */
	double phase_ms[3];       /* of that: parse and resolve, render, compose (last apply) */
	size_t napplied;          /* notes parsed by the last site_apply() */
	size_t nrendered;         /* notes rendered by the last site_apply() */
	size_t nvanished;         /* files gone between being found and read, since the start */
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

/* A growable array of notes ------------------------------------------------- */

struct notevec {
	struct site_note **v;
	size_t n, alloc;
};

static inline void notevec_push(struct notevec *v, struct site_note *n)
{
	ALLOC_GROW(v->v, v->n + 1, v->alloc);
	v->v[v->n++] = n;
}

/* Removes n (its first place), keeping the others in order. */
static inline void notevec_remove(struct notevec *v, const struct site_note *n)
{
	size_t i;
	for (i = 0; i < v->n; i++) {
		if (v->v[i] == n) {
			memmove(&v->v[i], &v->v[i + 1], (v->n - i - 1) * sizeof(*v->v));
			v->n--;
			return;
		}
	}
}

/* Removes n (its first place), moving the last note there: order is not kept. */
static inline void notevec_take(struct notevec *v, const struct site_note *n)
{
	size_t i;
	for (i = 0; i < v->n; i++) {
		if (v->v[i] == n) {
			v->v[i] = v->v[--v->n];
			return;
		}
	}
}

/*
 * Where a site serves the vault's publish.css (Obsidian Publish's custom
 * CSS), or an empty stylesheet when there is none: every page links it
 * (unless quire.yml says publish_css: false), so that the file coming,
 * changing or going changes this one page and no other.
 */
#define SITE_CSS_SOURCE "publish.css"
#define SITE_CSS_URL "/_quire/publish.css"
/* Larger than this, publish.css or a favicon is not served (a warning says so). */
#define SITE_ASSET_MAX (1024 * 1024)
/*
 * The site's icon, at a URL that stays: the vault's own favicon as
 * Obsidian Publish names it at the root (favicon-32x32.png, favicon-32.png,
 * favicon.ico, then the other sizes it recommends), else quire's.
 */
#define SITE_ICON_URL "/_quire/favicon"
int site_icon_source(const char *path);

/* The page table ---------------------------------------------------------- */

/* Puts a page in the table for the next snapshot (taking a new reference). */
void site_page_put(struct site *s, struct page *p);
/*
 * The same for the page of the note at a vault path: if the page waits for
 * gzip (gzip_later), the note is looked up when it is compressed.
 */
void site_page_put_as(struct site *s, struct page *p, const char *note);
/* Removes the page at a URL path from the table. */
void site_page_del(struct site *s, const char *key);

/* Lookups ------------------------------------------------------------------- */

/* The note at a vault path (NFC), or NULL. */
struct site_note *site_find_note(const struct site *s, const char *path);

/* Where path is, or would go, in notes sorted by path. */
size_t site_path_index(struct site_note *const *v, size_t n, const char *path);
/* Where a vault path is, or would go, in s->notes and s->files (sorted by path). */
size_t site_note_index(const struct site *s, const char *path);
size_t site_file_index(const struct site *s, const char *path);

/* The date a note is listed and sorted under: updated, else created, else its file's. */
void site_note_date(const struct site_note *n, char out[11]);

#endif
