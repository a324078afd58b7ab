/*
 * rewrite.h: rewriting a main-site page for a custom host.
 *
 * The rules say what the host serves (its own paths, routed notes, or
 * everything for an open host); rewriting maps each link of a page or
 * document to the host's path for it, or to the main site's absolute URL.
 * Used by hosts.c at load and on request (render_lazy), with the loader's
 * page table or a snapshot's.
 */
#ifndef QUIRE_REWRITE_H
#define QUIRE_REWRITE_H

#include <stddef.h>

#include "site/snapshot.h"
#include "util/buf.h"
#include "util/map.h"

/* What rewriting needs to know; the same at load (from the site) and on request. */
struct rewrite_rules {
	const char *main_origin;  /* "" when the main site has no base_url */
	const char *prefix;
	const char *main_title;
	const char *origin;       /* the host's */
	const char *title;
	int open;
	const struct map *own;    /* the host's paths */
	const struct map *routed; /* main path -> path on the host */
	const struct map *main;   /* the main site's pages: the loader's table, */
	const struct ptable *main_table; /* or, on request, the snapshot's */
};

/* How a URL is escaped where it stands in the document. */
enum esc { ESC_HTML, ESC_JSON, ESC_NONE };

/*
 * Rewrites one root-relative URL u (len bytes, escaped as esc) for the
 * host into out; absolute: as an absolute URL on the host's origin.
 */
void rewrite_url(const struct rewrite_rules *r, const char *u, size_t len, enum esc esc,
		      int absolute, struct buf *out);

/* Appends the document s (len bytes) to out with its links rewritten for the host. */
void rewrite_doc(const struct rewrite_rules *r, const char *s, size_t len, struct buf *out);

#endif
