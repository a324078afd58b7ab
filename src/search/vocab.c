/*
 * vocab.c: the vocabulary, the words that substrings are looked for in.
 *
 * What. vocab holds every word of fts of SUBSTRING_MIN characters or more
 * (folded as fts folds them) and vocab_tri their trigrams; words are never
 * removed. The writer collects the words of the rows it inserts
 * (search_collect_terms()) and adds those vocab lacks at the end of the batch
 * (search_vocab_flush()). While substrings are deferred, the rows' ids wait in
 * vocab_todo, and search_fill_substrings() lists their words later: row by
 * row when few wait, else in one pass over fts's own terms in order.
 */
#include "search/search.h"
#include "search/search-int.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

/* FTS5 keeps the first this many bytes of a longer token (FTS5_MAX_TOKEN_SIZE). */
#define TOKEN_MAX 32768

/* Empties the set (keeping its slots). */
void search_terms_clear(struct term_set *t)
{
	size_t i;

	for (i = 0; i < t->cap; i++) {
		free(t->slot[i]);
		t->slot[i] = NULL;
	}
	t->n = 0;
}

/* The slot of the word s (n bytes) in t: its own, or the free one it would take. */
static char **terms_slot(struct term_set *t, const char *s, size_t n)
{
	size_t mask = t->cap - 1, i;

	for (i = hash64(s, n) & mask; t->slot[i]; i = (i + 1) & mask)
		if (strncmp(t->slot[i], s, n) == 0 && t->slot[i][n] == '\0')
			break;
	return &t->slot[i];
}

static void terms_add(struct term_set *t, const char *s, size_t n)
{
	char **slot;

	if (2 * (t->n + 1) > t->cap) {
		struct term_set bigger = { NULL, t->cap ? 2 * t->cap : 1024, 0 };
		size_t i;

		bigger.slot = xcalloc(bigger.cap, sizeof(*bigger.slot));
		for (i = 0; i < t->cap; i++)
			if (t->slot[i])
				*terms_slot(&bigger, t->slot[i], strlen(t->slot[i])) = t->slot[i];
		bigger.n = t->n;
		free(t->slot);
		*t = bigger;
	}
	slot = terms_slot(t, s, n);
	if (!*slot) {
		*slot = xmalloc(n + 1);
		memcpy(*slot, s, n);
		(*slot)[n] = '\0';
		t->n++;
	}
}

/* A token of a new row: a word for vocab if it is long enough to hold a substring. */
static int collect_term(void *p, int tflags, const char *tok, int n, int start, int end)
{
	if (n > TOKEN_MAX)
		n = TOKEN_MAX;
	if (chars_upto(tok, n, SUBSTRING_MIN) >= SUBSTRING_MIN)
		terms_add(p, tok, (size_t)n);
	return SQLITE_OK;
}

/* Adds the words of text (n bytes) to s->terms, as fts tokenizes it. An SQLite code. */
int search_collect_terms(struct search *s, const char *text, int n)
{
	if (!text || n <= 0)
		return SQLITE_OK;
	return s->tok.api.xTokenize(s->tok.inst, &s->terms, FTS5_TOKENIZE_DOCUMENT, text, n,
				    collect_term);
}

/*
 * Puts the words of s->terms that vocab lacks into vocab and vocab_tri, and
 * empties the set. An SQLite code.
 */
int search_vocab_flush(struct search *s)
{
	sqlite3_int64 max = 0;
	size_t i;
	int rc;

	if (!s->terms.n)
		return SQLITE_OK;
	rc = sqlite3_step(s->vocab_max);
	if (rc == SQLITE_ROW) {
		max = sqlite3_column_int64(s->vocab_max, 0);
		rc = SQLITE_OK;
	}
	sqlite3_reset(s->vocab_max);
	for (i = 0; i < s->terms.cap && rc == SQLITE_OK; i++) {
		if (!s->terms.slot[i])
			continue;
		rc = sqlite3_bind_text(s->vocab_add, 1, s->terms.slot[i], -1, SQLITE_STATIC);
		if (rc == SQLITE_OK)
			rc = search_db_step_done(s->vocab_add);
	}
	sqlite3_clear_bindings(s->vocab_add);
	/* the new words have the ids above the old maximum */
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s->vocab_sync, 1, max);
	if (rc == SQLITE_OK)
		rc = search_db_step_done(s->vocab_sync);
	search_terms_clear(&s->terms);
	return rc;
}

void search_defer_substrings(struct search *s, int on)
{
	s->defer = on;
}

/* Rows in vocab_todo (the pass aside), up to VOCAB_BULK_ROWS, or -1 on an error. */
static int vocab_behind(struct search *s)
{
	int rc = sqlite3_step(s->todo_left), n = 0;

	if (rc == SQLITE_ROW)
		n = sqlite3_column_int(s->todo_left, 0);
	sqlite3_reset(s->todo_left);
	return rc == SQLITE_ROW ? n : -1;
}

/*
 * Puts the words of up to n rows of vocab_todo into vocab, *left set when
 * some remain. An SQLite code.
 */
static int vocab_fill_rows(struct search *s, size_t n, int *left)
{
	sqlite3_stmt *next = s->todo_next;
	sqlite3_int64 last = 0;
	size_t done = 0;
	int rc, k;

	*left = 0;
	rc = sqlite3_bind_int64(next, 1, n > INT64_MAX ? INT64_MAX : (sqlite3_int64)n);
	while (rc == SQLITE_OK && (rc = sqlite3_step(next)) == SQLITE_ROW) {
		last = sqlite3_column_int64(next, 0);
		rc = SQLITE_OK;
		for (k = 1; k <= 4 && rc == SQLITE_OK; k++) /* title, headings, tags, body */
			rc = search_collect_terms(s, (const char *)sqlite3_column_text(next, k),
					   sqlite3_column_bytes(next, k));
		done++;
	}
	sqlite3_reset(next);
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	if (rc == SQLITE_OK)
		rc = search_vocab_flush(s);
	search_terms_clear(&s->terms);
	if (rc == SQLITE_OK && last > 0)
		rc = sqlite3_bind_int64(s->todo_done, 1, last);
	if (rc == SQLITE_OK && last > 0)
		rc = search_db_step_done(s->todo_done);
	if (rc == SQLITE_OK && done == n) {
		int behind = vocab_behind(s);
		*left = behind != 0;
		rc = behind < 0 ? SQLITE_ERROR : SQLITE_OK;
	}
	return rc;
}

/*
 * The pass over fts's terms: puts up to n of them, from where it stopped
 * on, into vocab; *done set when it reached the last. An SQLite code.
 */
static int vocab_fill_scan(struct search *s, size_t n, int *done)
{
	sqlite3_int64 max = 0;
	char *after = NULL;
	size_t seen = 0;
	int rc;

	*done = 0;
	rc = sqlite3_step(s->scan_after);
	if (rc == SQLITE_ROW) {
		const char *a = (const char *)sqlite3_column_text(s->scan_after, 0);
		after = xstrdup(a ? a : "");
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_ERROR; /* the caller saw the pass under way */
	}
	sqlite3_reset(s->scan_after);
	if (rc == SQLITE_OK && (rc = sqlite3_step(s->vocab_max)) == SQLITE_ROW) {
		max = sqlite3_column_int64(s->vocab_max, 0);
		rc = SQLITE_OK;
	}
	sqlite3_reset(s->vocab_max);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(s->scan_next, 1, after, -1, SQLITE_TRANSIENT);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s->scan_next, 2,
					n > INT64_MAX ? INT64_MAX : (sqlite3_int64)n);
	while (rc == SQLITE_OK && (rc = sqlite3_step(s->scan_next)) == SQLITE_ROW) {
		const char *term = (const char *)sqlite3_column_text(s->scan_next, 0);
		int len = sqlite3_column_bytes(s->scan_next, 0);

		rc = SQLITE_OK;
		seen++;
		if (!term)
			continue;
		free(after);
		after = xmemdup(term, (size_t)len + 1);
		if (chars_upto(term, len, SUBSTRING_MIN) < SUBSTRING_MIN)
			continue;
		rc = sqlite3_bind_text(s->vocab_add, 1, term, len, SQLITE_STATIC);
		if (rc == SQLITE_OK)
			rc = search_db_step_done(s->vocab_add);
	}
	sqlite3_reset(s->scan_next);
	sqlite3_clear_bindings(s->vocab_add);
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s->vocab_sync, 1, max);
	if (rc == SQLITE_OK)
		rc = search_db_step_done(s->vocab_sync);
	if (rc == SQLITE_OK && seen < n) {
		*done = 1;
		rc = search_db_step_done(s->scan_end);
	} else if (rc == SQLITE_OK) {
		rc = sqlite3_bind_text(s->scan_save, 1, after, -1, SQLITE_TRANSIENT);
		if (rc == SQLITE_OK)
			rc = search_db_step_done(s->scan_save);
	}
	free(after);
	return rc;
}

/*
 * The words of rows put while substrings were deferred go into vocab here:
 * of each row in vocab_todo, tokenized again, when they are few; when
 * VOCAB_BULK_ROWS or more wait (a fresh index, an upgraded one), of the
 * whole index at once, in a pass over its terms that fts5vocab lists from
 * fts in order (which costs a read of fts, not a tokenizing of the text),
 * in steps that each take n * VOCAB_TERMS_PER_ROW terms. The pass's
 * progress is kept in the file, so a restart resumes it; rows deferred
 * while it runs wait for it to end.
 */
int search_fill_substrings(struct search *s, size_t n)
{
	int rc, left = 0, scan = 0, behind = 0, done = 0;

	if (s->in_tx)
		return log_error("search: filling substrings inside a transaction");
	if (n == 0)
		n = 1;
	if (search_begin(s) < 0)
		return -1;
	rc = sqlite3_step(s->scan_after);
	sqlite3_reset(s->scan_after);
	scan = rc == SQLITE_ROW;
	rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
	if (rc == SQLITE_OK && !scan && (behind = vocab_behind(s)) < 0)
		rc = SQLITE_ERROR;
	/* nothing to do: the usual case after a restart */
	if (rc == SQLITE_OK && !scan && behind == 0) {
		search_rollback(s);
		return 1;
	}
	if (rc == SQLITE_OK && !scan && behind >= VOCAB_BULK_ROWS) {
		rc = search_db_exec(s->db,
			     "DELETE FROM vocab_todo;"
			     " INSERT INTO vocab_todo(id, after) VALUES(0, '');",
			     "listing the words");
		scan = 1;
	}
	if (rc == SQLITE_OK && scan) {
		rc = vocab_fill_scan(
		    s, n > SIZE_MAX / VOCAB_TERMS_PER_ROW ? SIZE_MAX : n * VOCAB_TERMS_PER_ROW,
		    &done);
		left = !done;
		if (rc == SQLITE_OK && done && (behind = vocab_behind(s)) != 0)
			left = 1; /* rows deferred during the pass */
		if (rc == SQLITE_OK && behind < 0)
			rc = SQLITE_ERROR;
		if (rc == SQLITE_OK && done)
			rc = search_db_exec(s->db, "INSERT INTO vocab_tri(vocab_tri) VALUES('optimize')",
				     "optimize");
	} else if (rc == SQLITE_OK) {
		rc = vocab_fill_rows(s, n, &left);
	}
	if (rc != SQLITE_OK) {
		search_db_error(s->db, "filling the substring index");
		search_rollback(s);
		return -1;
	}
	if (search_commit(s) < 0)
		return -1;
	return !left;
}
