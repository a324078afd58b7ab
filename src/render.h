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
 * Renders note i's body into s->notes[i].md and .refs; marks the files
 * it references as published. Thread-safe for distinct i once the site's
 * URLs and index exist.
 */
void render_note_body(struct site *s, size_t i);

/*
 * Composes note i's page into s->notes[i].page (replacing any previous
 * one). Thread-safe for distinct i once every body and backlink exists.
 */
void render_note_page(struct site *s, size_t i);

/*
 * Appends note i's HTML from start to end with its embeds spliced in
 * (depth levels already followed, chain the notes above it, line the line
 * of the first note's embed that led here). Reports an embed cycle as a
 * diagnostic when the chain returns to its first note.
 */
void render_compose(struct site *s, size_t i, size_t start, size_t end, struct buf *out,
		    size_t *chain, int depth, int line);

#endif
