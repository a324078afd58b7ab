/*
 * site.h: the loader's state, and building a snapshot from it.
 *
 * A site is everything known about a vault between two snapshots: the
 * settings, each note's metadata, rendered fragment and resolved
 * references, the attachments, the name index and the backlinks. It is
 * owned by one thread (the loader); the snapshots it produces are what the
 * rest of the program reads.
 *
 * site_load() reads the whole vault and renders every published page:
 *	1. scan the folder                         (vault.c)
 *	2. read and parse notes, frontmatter only   (note.c, parallel)
 *	3. decide what is published; give URLs      (vault.c)
 *	4. index names for links                    (resolve.c)
 *	5. render each published note's fragment    (render.c -> markdown.c, parallel)
 *	6. backlinks and the published attachments  (here)
 *	7. compose pages: embeds, layout, gzip, ETag (render.c, parallel)
 *	8. put it all in a snapshot with the theme, 404, tree.json, redirects
 */
#ifndef QUIRE_SITE_H
#define QUIRE_SITE_H

#include <stddef.h>

#include "config.h"
#include "diag.h"
#include "layout.h"
#include "markdown.h"
#include "note.h"
#include "snapshot.h"
#include "vault.h"

struct resolver;

/* How one wikilink or embed of a note resolved. */
struct site_ref {
	enum md_target_kind kind;
	size_t id;            /* note or file index for NOTE, ATTACHMENT and PLAIN */
};

struct site_note {
	struct note note;
	char *disk;           /* path as on disk, vault-relative */
	char *url;            /* decoded URL path without prefix: "/folder/note"; NULL if unpublished */
	char *href;           /* encoded URL with prefix, for links */
	int published;
	struct md_result md;  /* the rendered fragment (published notes) */
	struct site_ref *refs;/* parallel to md.refs */
	size_t *backlinks;    /* published notes linking here, sorted by title */
	size_t nbacklinks, abacklinks;
	struct page *page;    /* the composed page (a reference) */
};

struct site_file {
	char *path;           /* vault-relative, NFC */
	char *disk;
	char *url;            /* decoded: "/" + path */
	char *href;           /* encoded with prefix */
	off_t size;
	time_t mtime;
	int published;        /* referenced by a published note */
};

struct site_options {
	const char *base_url; /* overrides quire.yml, or NULL */
	int threads;          /* loader threads; 0 = one per core */
};

struct site {
	char *vault;              /* the root as given */
	struct config cfg;
	struct diag_list diags;
	struct site_note *notes;  /* in path order */
	size_t nnotes;
	struct site_file *files;  /* in path order */
	size_t nfiles;
	struct resolver *resolver;
	const char **note_paths;  /* for the resolver */
	const char **file_paths;
	struct layout_site layout;
	char *asset_urls[8];      /* owned strings behind layout's URLs */
	struct page *assets[8];   /* theme files as pages */
	size_t nassets;
	int threads;
	/* figures for check and the start-up line */
	size_t npublished, nlinks, nbroken, nembeds;
	double load_ms;
};

/*
 * Reads the vault at path and renders every published page. Problems with
 * notes are diagnostics in site->diags, not failures. Returns NULL only
 * when the vault cannot be read at all (logged). The caller frees with
 * site_free().
 */
struct site *site_load(const char *path, const struct site_options *opt);
void site_free(struct site *s);

/*
 * A new snapshot (version given) holding every page of the site. The
 * caller owns the returned reference.
 */
struct snapshot *site_snapshot(struct site *s, uint64_t version);

/* Number of notes that are published. */
size_t site_published_notes(const struct site *s);

#endif
