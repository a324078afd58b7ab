/*
 * resolve.h: link resolution the way Obsidian does it.
 *
 * [[target]] names a note by its file name, case-insensitively (full
 * Unicode case folding) and in NFC, whatever form the link or the file
 * name was written in. When several notes share the name, one in the
 * linking note's own folder wins, then the shortest path (fewest folders,
 * then fewest bytes, then byte order). A target with '/' is a path: from
 * the vault root, from the linking note's folder, or else as the tail of a
 * longer path. "./" and "../" are relative to the linking note. A target
 * with an extension that names an attachment (photo.png) finds the
 * attachment even beside a note called photo.md; "photo" finds the note.
 *
 * Unpublished notes take part: a link to one resolves (and is rendered as
 * plain text by the caller) rather than falling through to another note.
 */
#ifndef QUIRE_RESOLVE_H
#define QUIRE_RESOLVE_H

#include <stddef.h>

enum resolve_kind { RESOLVE_NONE, RESOLVE_NOTE, RESOLVE_FILE };

struct resolver;

/*
 * Indexes notes and files by their vault paths (NFC; notes end in ".md").
 * The arrays are borrowed for the resolver's lifetime; ids returned later
 * are indexes into them. The caller frees with resolver_free().
 */
struct resolver *resolver_new(const char *const *notes, size_t nnotes, const char *const *files,
			      size_t nfiles);
void resolver_free(struct resolver *r);

/*
 * Resolves target (as written, without '#' fragment or '|' label) from
 * the note at path from. Sets *id and returns the kind, or RESOLVE_NONE.
 * An empty target is not resolved here: it means the linking note itself.
 */
enum resolve_kind resolver_find(const struct resolver *r, const char *from, const char *target,
				size_t *id);

#endif
