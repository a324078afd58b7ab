/*
 * syncrecord.h: what `quire sync` last synced, per file: the base of its
 * three-way comparison.
 *
 * For every path that was the same on both sides when a sync last saw
 * it, the record holds the SHA-256 of those bytes and, for a Markdown
 * note, the text itself (the common ancestor a merge needs). A file
 * changed on one side only is then told from one changed on both.
 *
 * On disk (VAULT/.quire/sync-record) it is a journal: a header line, then
 * entries appended as files are synced,
 *	"+\t<sha256>\t<text length, or -1>\t<path>\n" [<text> "\n"]
 *	"-\t<path>\n"
 * later entries overriding earlier ones. sync_record_flush() appends what
 * was set since the last flush and fdatasyncs it, so a kill loses at
 * most the entries of the last unflushed batch (which costs a second
 * look, never an edit: a file whose two sides are equal needs no base).
 * A torn last entry (a kill during the append) is dropped at load, and
 * the file is then written anew. sync_record_compact() writes the live
 * entries to a temporary file, fsyncs it, renames it over the journal and
 * fsyncs the folder.
 *
 * Ownership: the record owns its entries and copies every string given.
 */
#ifndef QUIRE_SYNCRECORD_H
#define QUIRE_SYNCRECORD_H

#include <stddef.h>

#include "util/hash.h"

struct sync_record;

struct sync_record_entry {
	char *path;
	char sha[SHA256_HEX_SIZE];
	char *text;              /* the bytes, for a Markdown note; NULL otherwise */
	size_t text_len;
};

/*
 * Loads the record kept in file (a missing file is an empty record).
 * NULL when it cannot be read or created (printed). With dry, nothing is
 * ever written.
 */
struct sync_record *sync_record_open(const char *file, int dry);

/* Accepts NULL. */
void sync_record_free(struct sync_record *r);

/* The entry of path, or NULL. Valid until the path is set or dropped again. */
const struct sync_record_entry *sync_record_get(const struct sync_record *r, const char *path);

/* path was synced with the bytes of hash sha; text (may be NULL) is kept as its base. */
void sync_record_set(struct sync_record *r, const char *path, const char *sha, const char *text,
		     size_t text_len);

/* path is on neither side any more. */
void sync_record_drop(struct sync_record *r, const char *path);

/* Appends what changed since the last flush, durably. 0 or -1 (printed). */
int sync_record_flush(struct sync_record *r);

/*
 * Flushes, and writes the journal anew when it holds much more than the
 * live entries. 0 or -1 (printed).
 */
int sync_record_compact(struct sync_record *r);

/* Iteration: 1 with *e the next entry (any order), 0 at the end. Start with *i = 0. */
int sync_record_next(const struct sync_record *r, size_t *i, const struct sync_record_entry **e);

#endif
