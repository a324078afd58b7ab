/*
 * layout.h: the page template and default theme around a note's HTML.
 *
 * A page carries only what its own note determines (invariant 2 of
 * docs/design.md): its title, dates, tags, body, table of contents and
 * backlinks. Anything that grows with the vault (the folder tree, the tag
 * list, recent notes) is *not* inlined: the theme's script loads it from
 * precomputed resources under /_quire/ (tree.json) that the browser
 * caches, so one edit never changes every page.
 *
 * All strings are UTF-8 and unescaped: the layout escapes what it writes,
 * except `body_html`, which is trusted HTML from markdown.c.
 */
#ifndef QUIRE_LAYOUT_H
#define QUIRE_LAYOUT_H

#include <stddef.h>

#include "util/buf.h"

/* Site-wide settings, the same for every page of a snapshot. */
struct layout_site {
	const char *title;      /* site title, never NULL */
	const char *language;   /* <html lang="">, e.g. "en" */
	const char *url_prefix; /* "" or "/docs": prefix of every root-relative URL */
	const char *base_url;   /* absolute site URL without trailing slash, or "" */
	const char *css_url;    /* content-hashed stylesheet URL, with prefix */
	const char *site_css_url; /* the vault's publish.css (SITE_CSS_URL), with prefix, or NULL */
	const char *js_url;     /* content-hashed script URL, with prefix */
	const char *icon_url;   /* the site's icon (SITE_ICON_URL), with prefix */
	const char *tree_url;   /* explorer tree JSON URL, with prefix */
	const char *search_url; /* search page URL with prefix ("/search"), or NULL when there is none */
	const char *feed_url;   /* site RSS feed URL with prefix, or NULL when there is none */
	const char *graph_url;  /* the graph page's URL with prefix, or NULL: none */
	const char *graph_data_url; /* the graph's index document (derived.c), with prefix */
	/* KaTeX's and Mermaid's files (vendor.h), linked from the pages that need them, or NULL */
	const char *katex_css_url, *katex_js_url, *mermaid_js_url;
};

struct layout_link {
	const char *title;
	const char *url;        /* root-relative with prefix, percent-encoded */
};

struct layout_toc_entry {
	int level;
	const char *text;
	const char *id;
};

struct layout_note {
	const char *title;
	const char *description;   /* may be NULL */
	const char *url;           /* canonical root-relative URL with prefix, percent-encoded */
	const char *created;       /* "YYYY-MM-DD" or NULL */
	const char *updated;       /* "YYYY-MM-DD" or NULL */
	const char *const *tags;   /* without '#' */
	size_t ntags;
	const char *const *cssclasses;
	size_t ncssclasses;
	const char *body_html;     /* the rendered note, embeds already spliced in */
	size_t body_len;
	const struct layout_toc_entry *toc;
	size_t ntoc;
	const struct layout_link *backlinks; /* sorted by the caller */
	size_t nbacklinks;
	const char *folder;        /* the note's vault folder ("a/b", "" at the root), for the
				      explorer to open its way there; NULL: none */
	int title_repeated;        /* the body opens with an h1 of the title: not shown twice */
	unsigned features;         /* MD_HAS_* of the body: math and diagrams load their scripts */
};

/* An item in a generated listing page (tag page, folder page, search results). */
struct layout_item {
	const char *title;
	const char *url;
	const char *summary;       /* may be NULL */
	const char *date;          /* may be NULL */
};

/*
 * Appends the whole HTML document for a note page to out. Returns the
 * offset in out where body_html was copied, unchanged.
 */
size_t layout_note_page(const struct layout_site *site, const struct layout_note *note,
			struct buf *out);

/* The large search box of the /search page, showing query (escaped here). */
void layout_search_form(struct buf *out, const struct layout_site *site, const char *query);

/*
 * Appends a generated listing page: breadcrumbs, a heading, an optional
 * intro (trusted HTML, may be NULL) and the items as a list. For tag and
 * folder pages and search results. folder is the vault folder a folder's
 * listing shows ("a/b"; "" for the root, which has no breadcrumbs), or
 * NULL for any other listing (breadcrumbs Home > title).
 */
void layout_listing_page(const struct layout_site *site, const char *folder, const char *title,
			 const char *intro_html, const struct layout_item *items, size_t nitems,
			 struct buf *out);

/*
 * The Content-Security-Policy that quire's pages need and satisfy: scripts
 * from the site and the page's one inline script (by its hash), styles
 * from the site and in style attributes, images and media from anywhere
 * over http(s) and data: images, frames from frame_src only ("https:" by
 * default; NULL or "" for none), no plugins, no <base>, forms to the site.
 * The caller frees it.
 */
char *layout_csp(const char *frame_src);

/*
 * Appends the graph page: the whole site's notes and links, drawn by the
 * theme's script from graph_data_url's documents; without script, a
 * pointer to the explorer and the tag index.
 */
void layout_graph_page(const struct layout_site *site, struct buf *out);

/* Appends the themed 404 page. */
void layout_not_found_page(const struct layout_site *site, struct buf *out);

#endif
