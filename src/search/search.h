/*
 * search.h: the full-text index behind /api/search.
 *
 * One SQLite database file (e.g. <vault>/.quire/search.db, WAL mode) holds
 * one row per published note: its URL, title, headings, tags and the plain
 * text of its rendered body. The index is a cache of the vault: when the
 * file is missing, unreadable as a database, corrupt, or from another
 * schema version, search_open() deletes it, creates an empty one and says
 * so through *fresh, and the caller puts every note again.
 *
 * Two kinds of user. One thread (the loader) writes through a struct
 * search: search_begin(), any number of search_put() and search_delete(),
 * search_commit(); one transaction per batch, so a whole reload costs one
 * commit and one edited note costs a few milliseconds. Serving threads
 * read, each through its own struct search_reader (its own read-only
 * connection and cached statements); WAL lets them read the last committed
 * state while the writer works. A reader is used by one thread at a time.
 *
 * Queries are the user's words, never SQL or FTS5 syntax:
 *
 *	word            notes containing the word (accents ignored: cafe = café)
 *	"two words"     the phrase
 *	pref*           words starting with pref (three characters at least)
 *	-word           notes without the word (needs at least one other term)
 *
 * Everything else (NEAR, AND, OR, NOT, column:, ^, stray quotes or stars)
 * is searched for as plain text. Chinese, Japanese and Korean need no
 * spaces: 東京 finds 東京タワー. When the words find nothing because a
 * term is no word of any note, the terms are looked up as substrings
 * (shell finds PowerShell), if each has three characters. See search.c.
 * When they find fewer than ten notes, words typed with a typo (one in a
 * word of five characters or more, two from nine) find the words of the
 * index near them, ranked after the notes found as typed. See typo.c.
 */
#ifndef QUIRE_SEARCH_H
#define QUIRE_SEARCH_H

#include <stddef.h>
#include <sys/types.h>

#include "util/buf.h"

/* Queries longer than this many bytes are refused (400). */
#define SEARCH_QUERY_MAX 256
/* The most results one request may ask for. */
#define SEARCH_LIMIT_MAX 50
/* The deepest offset one request may ask for. */
#define SEARCH_OFFSET_MAX 1000
/* The most terms one query may have. */
#define SEARCH_TERMS_MAX 16

struct search;
struct search_reader;

/*
 * Opens the index at path for writing, creating it (and rebuilding it when
 * it is corrupt, not a database, or from another schema version). *fresh
 * is set to 1 when the index is new and empty, so the caller must put every
 * note, and to 0 when it holds what was committed before. Returns NULL on
 * an error that rebuilding cannot cure (a folder that does not exist,
 * permissions, a full disk), logged. Open the writer before any reader: a
 * rebuild replaces the file under the same name.
 */
struct search *search_open(const char *path, int *fresh);
/* Rolls back an open transaction and closes. Accepts NULL. */
void search_free(struct search *s);

/*
 * Starts a transaction (BEGIN IMMEDIATE). Puts and deletes are held in
 * memory (up to 8 MB of text, then written) and readers see them at the
 * commit; outside a transaction each runs in one of its own, which is
 * correct but slow for many notes. Returns 0 or -1 (logged), like all the
 * writer calls below; after a failed call, roll back.
 */
int search_begin(struct search *s);
/*
 * Adds the note at url, or replaces its row; the last put or delete of a
 * url in a transaction wins. title, headings (one per line), tags
 * (separated by spaces) and text (the rendered body as plain text) may be
 * NULL for empty; invalid UTF-8 and control characters other than tab and
 * newline are replaced with U+FFFD. All strings are borrowed (copied when
 * needed). A note identical to the stored one costs a lookup, so putting
 * every note after a restart only re-indexes the notes that changed.
 */
int search_put(struct search *s, const char *url, const char *title, const char *headings,
	       const char *tags, const char *text);
/*
 * A note's row under a new URL (from may equal to) with new title,
 * headings and tags, and the body it has: taken from the index, so that a
 * note that only moved (a new URL, the same text) is not rendered again
 * for its row. 1 when moved, 0 when no row
 * is stored at from (nothing is written), -1 on error.
 */
int search_move(struct search *s, const char *from, const char *to, const char *title,
		const char *headings, const char *tags);
/* Removes the note at url; a url not in the index is not an error. */
int search_delete(struct search *s, const char *url);
int search_commit(struct search *s);
/*
 * Deletes every note whose url keep() rejects: after a restart, the notes
 * that left the vault while the server was down. Inside a transaction.
 */
int search_prune(struct search *s, int (*keep)(void *ctx, const char *url), void *ctx);
/* Abandons the open transaction and what it staged, if any. */
void search_rollback(struct search *s);

/* What a writer has done since search_open(). */
struct search_counts {
	long long written;   /* rows written: notes new to the index or changed */
	long long unchanged; /* puts of what was stored: a lookup, nothing written */
	long long removed;   /* rows deleted and not put again */
};
void search_counts(const struct search *s, struct search_counts *out);

/*
 * With on set, the rows that puts write go into the word index at once and
 * their words into the substring index (the vocabulary's trigrams, see
 * search.c) later, by search_fill_substrings(): words are what most queries
 * need, and a fresh fill then reads every word of the index in one pass
 * instead of each row's. Until then a query of substrings does not find
 * the words of those rows. Deferred rows stay deferred across
 * search_free() and a restart. Off by default.
 */
void search_defer_substrings(struct search *s, int on);
/*
 * Adds the words of deferred rows to the substring index, a step of up to
 * about n rows' worth, in a transaction of its own (call it outside one).
 * Returns 1 when nothing is left deferred, 0 when some may be, -1 on an
 * error (logged).
 */
int search_fill_substrings(struct search *s, size_t n);
/*
 * Merges the index into one segment per table: worth it after putting
 * every note (a fresh index), not after small batches. Outside a transaction.
 */
int search_optimize(struct search *s);
/*
 * The writer's page cache back to SQLite's default size, its pages freed:
 * the 32 MB it opens with serve filling the index, and once the index is
 * full a change writes a row or two. 0, or -1 (logged). Outside a
 * transaction.
 */
int search_settle(struct search *s);
/*
 * Checks both indexes against the stored rows (FTS5's integrity-check,
 * which reads all of them: for tests and repairs, not for serving), when
 * no row waits for the substring index. Outside a transaction. 0, or -1
 * (logged) when they disagree.
 */
int search_check(struct search *s);

/*
 * Whether any connection of this process, writer or reader, met damage
 * inside the index file with this device and inode (SQLITE_CORRUPT,
 * SQLITE_NOTADB: pages overwritten behind a header that still looks
 * right) since the last call; the answer is taken (the next call says 0
 * until it is met again). The loader, which owns the file, rebuilds it.
 */
int search_take_damage(dev_t dev, ino_t ino);

/*
 * Opens a read-only connection for one serving thread. Returns NULL when
 * the file cannot be opened (logged).
 */
struct search_reader *search_reader_open(const char *path);
/* Accepts NULL. */
void search_reader_free(struct search_reader *r);

/*
 * When r ranks a query of positive terms from the per-phrase row lists it
 * keeps until the index changes: when its phrases are in min_rows rows or
 * more together (default SEARCH_LISTS_MIN_ROWS), or never (-1). The
 * answers are the same bytes either way; tests and benchmarks compare them.
 */
#define SEARCH_LISTS_MIN_ROWS 1000
void search_reader_use_lists(struct search_reader *r, long min_rows);

/* The queries r has ranked from row lists. */
long long search_reader_listed(const struct search_reader *r);

/*
 * Runs the query q (a NUL-terminated string from the request) and appends
 * to out (which it does not reset) either the results:
 *
 *	{"query":"..","total":N,"results":[{"url":"..","title":"..","score":1.23,
 *	  "segments":[{"text":"..","match":true},..]},..]}
 *
 * total counts every matching note; results holds at most limit of them
 * from offset on, best first (score: higher is better). segments, joined,
 * are a snippet of about 30 words of the body around the best match (of
 * the title, headings or tags when only they match), "…" marking a cut;
 * match tells which runs matched the query. Or an error:
 *
 *	{"error":"..."}
 *
 * Returns 0 for results, -1 for a bad request (400: q empty or blank,
 * longer than SEARCH_QUERY_MAX bytes, invalid UTF-8, only excluded terms,
 * more than SEARCH_TERMS_MAX terms, limit outside 1..SEARCH_LIMIT_MAX,
 * offset outside 0..SEARCH_OFFSET_MAX), -2 when the index failed (500,
 * logged). A query of only punctuation is valid and finds nothing.
 */
int search_query(struct search_reader *r, const char *q, int limit, int offset, struct buf *out);

/*
 * The same query for the search page: appends the results as HTML list
 * items (<li class="search-result"> with the title linked and the snippet
 * escaped, matches in <mark>) and sets *total; on a bad request out gets
 * the JSON error as search_query() gives it. Returns as search_query().
 */
int search_query_html(struct search_reader *r, const char *q, int limit, int offset,
		      struct buf *out, long long *total);

/*
 * After a query that found nothing: the query with its mistyped words
 * replaced by the index's nearest frequent ones (suggest.c), which
 * /api/search also gives as "suggestion"; NULL when there is none. Valid
 * until the reader's next query.
 */
const char *search_reader_suggestion(const struct search_reader *r);

/*
 * After a query whose results include rows found through a corrected word
 * (typo.c: a word of five characters or more one edit away, of nine or
 * more two, tried when the words as typed are in fewer than ten notes):
 * the query as it reads corrected, each such word replaced by the nearest
 * word of the index, and *exact (may be NULL) set to the rows found as
 * typed, which come first. /api/search gives them as "corrected" and
 * "exact". NULL when no result needed a correction. Valid until the
 * reader's next query.
 */
const char *search_reader_corrected(const struct search_reader *r, long long *exact);

#endif
