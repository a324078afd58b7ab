/*
 * resolve.h: link resolution the way Obsidian does it.
 *
 * [[target]] names a note by its file name, case-insensitively (full
 * Unicode case folding) and in NFC, whatever form the link or the file
 * name was written in. When several notes share the name, one in the
 * linking note's own folder wins, then the shortest path (fewest folders,
 * then fewest bytes, then byte order). A target with '/' is a path: from
 * the vault root, from the linking note's folder, or else as the tail of a
 * longer path. One that starts with '/' is from the vault root only
 * ([[/Delta]] is the root's Delta from any folder; if there is none, the
 * link is broken). "./" and "../" are relative to the linking note. A target
 * with an extension that names an attachment (photo.png) finds the
 * attachment even beside a note called photo.md; "photo" finds the note.
 *
 * Unpublished notes take part: a link to one resolves (and is rendered as
 * plain text by the caller) rather than falling through to another note.
 *
 * The index changes as the vault does: entries are added and removed one
 * at a time, so a sync costs what it changes, not the vault's size.
 */
#ifndef QUIRE_RESOLVE_H
#define QUIRE_RESOLVE_H

#include <stddef.h>

enum resolve_kind { RESOLVE_NONE, RESOLVE_NOTE, RESOLVE_FILE };

struct resolver;

/* An empty index. The caller frees it with resolver_free(). */
struct resolver *resolver_new(void);
void resolver_free(struct resolver *r);

/*
 * Adds an entry: path is the vault path (NFC; notes end in ".md"), item
 * is the caller's pointer, returned by lookups. path is copied.
 */
void resolver_add(struct resolver *r, const char *path, enum resolve_kind kind, void *item);
/* Removes the entry added with this path and item. */
void resolver_remove(struct resolver *r, const char *path, enum resolve_kind kind, void *item);

/*
 * Resolves target (as written, without '#' fragment or '|' label) from
 * the note at path from. Sets *item and returns the kind, or RESOLVE_NONE.
 * An empty target is not resolved here: it means the linking note itself.
 */
enum resolve_kind resolver_find(const struct resolver *r, const char *from, const char *target,
				void **item);

/*
 * The key under which a target can change its resolution: the folded
 * last path segment, without ".md". "Folder/My Note.md" and "[[my note]]"
 * share one key, so a caller can index which notes mention a name and
 * revisit just those when a note of that name appears or vanishes. The
 * caller frees the result.
 */
char *resolve_name_key(const char *target);

#endif
