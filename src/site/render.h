/*
 * render.h: from a parsed note to finished page bytes.
 *
 * render_note_body() turns a note's Markdown into its fragment, resolving
 * each wikilink and embed through the site's name index as markdown.c
 * meets it. render_note_page() composes the page: it splices embedded
 * notes (and sections and blocks of them) into the fragment, guarding
 * against cycles, wraps it in the layout, and gzips and hashes it once.
 *
 * A fragment is kept once. The page holds it verbatim, in pieces cut where
 * other notes were spliced in, so once a note's page is composed its own
 * copy is freed (render_note_adopt()) and composing reads the fragment
 * back from the page's bytes. Rejected: keeping fragments only for notes
 * that others embed and rendering the rest again from disk when their page
 * must be composed again (a parse per backlink change, and the file may
 * have changed since), and keeping them compressed (a deflate per note at
 * load, an inflate per compose).
 */
#ifndef QUIRE_RENDER_H
#define QUIRE_RENDER_H

#include <stddef.h>

#include "site/model.h"
#include "util/buf.h"

/* Longest chain of embeds followed; deeper ones render a notice. */
#define RENDER_MAX_EMBED_DEPTH 8

/*
 * Renders n's body into n->md and n->refs, reporting broken links. The
 * body is dropped afterwards. Thread-safe for distinct notes once the
 * site's URLs and name index are up to date.
 */
void render_note_body(struct site *s, struct site_note *n);

/*
 * Composes n's page into n->page (replacing any previous one) and notes
 * where its fragment lies in it, for render_note_adopt(). Thread-safe for
 * distinct notes once bodies and backlinks are up to date.
 */
void render_note_page(struct site *s, struct site_note *n);

/*
 * After render_note_page(): n's fragment is read from its new page from
 * now on, and its own copy (or the previous page it was read from) is
 * released. Other notes' render_note_page() read n's fragment when they
 * embed it: call this when none of them runs. No-op if n was not composed.
 */
void render_note_adopt(struct site_note *n);

/* Frees what rendering n left in it: md, refs and the fragment's pieces. */
void render_note_release(struct site_note *n);

/* Resolves one reference of note n as render_note_body() does. */
void render_resolve(const struct site *s, const struct site_note *n, const struct md_ref *ref,
		    struct site_ref *out);

#endif
