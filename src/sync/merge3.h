/*
 * merge3.h: the three-way merge of a text, for `quire sync`.
 *
 * Given the text both sides last agreed on (the base) and each side's
 * edit of it, merge3_text() keeps both edits when they touch different
 * lines, as git merges a file (diff3 with git's "zealous" level: a change
 * made identically on both sides is taken once). When they overlap it
 * reports a conflict and produces nothing: the caller keeps one side and
 * writes the other beside it, rather than leaving conflict markers in a
 * note that a site publishes.
 *
 * This module is the only one that includes libgit2 (git_merge_file(),
 * which needs no repository).
 */
#ifndef QUIRE_MERGE3_H
#define QUIRE_MERGE3_H

#include <stddef.h>

#include "util/buf.h"

/*
 * Merges ours and theirs, both edits of base. Returns 1 with the merged
 * text in out, 0 when the edits overlap or either side is binary (out
 * left empty), -1 when the library failed (printed).
 */
int merge3_text(const char *base, size_t blen, const char *ours, size_t olen,
		const char *theirs, size_t tlen, struct buf *out);

#endif
