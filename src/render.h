/*
 * render.h: from a parsed note to finished page bytes.
 *
 * render_note_body() turns a note's Markdown into its fragment, resolving
 * each wikilink and embed through the site's name index as markdown.c
 * meets it. render_note_page() composes the page: it splices embedded
 * notes (and sections and blocks of them) into the fragment, guarding
 * against cycles, wraps it in the layout, and gzips and hashes it once.
 */
#ifndef QUIRE_RENDER_H
#define QUIRE_RENDER_H

#include <stddef.h>

#include "buf.h"
#include "site.h"

/* Longest chain of embeds followed; deeper ones render a notice. */
#define RENDER_MAX_EMBED_DEPTH 8

/*
 * Renders n's body into n->md and n->refs, reporting broken links. The
 * body is dropped afterwards. Thread-safe for distinct notes once the
 * site's URLs and name index are up to date.
 */
void render_note_body(struct site *s, struct site_note *n);

/*
 * Composes n's page into n->page (replacing any previous one).
 * Thread-safe for distinct notes once bodies and backlinks are up to date.
 */
void render_note_page(struct site *s, struct site_note *n);

/* Resolves one reference of note n as render_note_body() does. */
void render_resolve(const struct site *s, const struct site_note *n, const struct md_ref *ref,
		    struct site_ref *out);

#endif
