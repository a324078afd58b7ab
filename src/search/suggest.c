/*
 * suggest.c: "did you mean", from the index's own words.
 *
 * What. search_suggest() looks at each positive term of a query that is a
 * single word: one the index has stays; for one it lacks, the words of
 * vocab (every word of the index of SUBSTRING_MIN characters or more) one
 * or two edits away (one for words of four characters or fewer; an edit
 * is an insertion, a deletion, a substitution or two neighbours swapped)
 * are candidates, and the one in the most rows wins (then the fewer
 * edits, then the first in order). The suggestion is the query with those
 * words replaced; none when nothing changed.
 *
 * How. Candidates come from vocab_tri, the trigrams of vocab: the words
 * sharing any trigram with the typed one, best matches first (FTS5's
 * rank), at most SUGGEST_SCAN of them; a swap or a typo in the middle
 * leaves most trigrams intact. Each is measured in C (optimal string
 * alignment, on code points), and a word's rows are counted by
 * fts5vocab's row table, one seek each.
 *
 * Cost. Asked only when a query found nothing (search.c), so no query
 * that finds something pays for it. Then a seek per word (fts5vocab),
 * and for a word the index lacks one trigram query and up to SUGGEST_SCAN
 * distance computations and seeks: 1.7 to 6.7 ms a query on the
 * 10,000-note benchmark vault (build/bench/search-bench --db, one core:
 * "trnascript", "paramter", "fucntion", "expresion"), against 0.27 ms
 * for a word that is found.
 */
#include "search/search.h"
#include "search/search-int.h"
#include "util/log.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

/* The words vocab_tri offers per typed word, best first (a string: it goes into the SQL). */
#define SUGGEST_SCAN "1000"
/* Longest word compared, in code points. */
#define SUGGEST_CHARS UNICODE_DISTANCE_CHARS

/* Rows holding the word w (folded, as the index keeps it), or -1 on an error. */
static sqlite3_int64 rows_of(struct search_reader *r, const char *w, size_t n)
{
	sqlite3_stmt *q = search_reader_stmt(r, &r->word_rows,
					     "SELECT doc FROM temp.fts_rows WHERE term = ?1");
	sqlite3_int64 rows = 0;
	int rc;

	if (!q)
		return -1;
	sqlite3_bind_text(q, 1, w, (int)n, SQLITE_STATIC);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		rows = sqlite3_column_int64(q, 0);
	else if (rc != SQLITE_DONE)
		rows = -1;
	sqlite3_reset(q);
	return rows;
}

/* The fts5vocab table that counts each word's rows, made once per connection. */
static int open_word_rows(struct search_reader *r)
{
	if (r->word_rows)
		return 0;
	if (sqlite3_exec(r->db,
			 "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_rows USING fts5vocab(main, fts, row)",
			 NULL, NULL, NULL) != SQLITE_OK)
		return search_db_error(r->db, "opening the word counts");
	return 0;
}

struct folded {
	char w[4 * SUGGEST_CHARS + 1];
	size_t n;
	int ntok;
};

static int fold_token(void *p, int tflags, const char *tok, int n, int start, int end)
{
	struct folded *f = p;

	if (tflags & FTS5_TOKEN_COLOCATED)
		return SQLITE_OK;
	if (++f->ntok == 1 && (size_t)n < sizeof(f->w)) {
		memcpy(f->w, tok, (size_t)n);
		f->w[n] = '\0';
		f->n = (size_t)n;
	}
	return SQLITE_OK;
}

/*
 * The best word of vocab for the typed word w (folded, n bytes, nc code
 * points in cp) into best; 0 when one was found, 1 when none, -1 on an error.
 */
static int best_word(struct search_reader *r, const char *w, size_t n, const int32_t *cp, int nc,
		     struct buf *best)
{
	sqlite3_stmt *q = search_reader_stmt(
	    r, &r->near_words,
	    "SELECT term FROM vocab_tri WHERE vocab_tri MATCH ?1 ORDER BY rank LIMIT " SUGGEST_SCAN);
	struct buf match = BUF_INIT;
	int max = nc <= 4 ? 1 : 2, best_d = max + 1, rc, k, found = 1;
	sqlite3_int64 best_rows = 0;
	size_t at[SUGGEST_CHARS + 1], i = 0;

	if (!q)
		return -1;
	/* where each code point starts, then every trigram as an FTS5 string: "tra" OR "ran" OR ... */
	for (k = 0; k < nc; k++) {
		int32_t c;
		int l = utf8_decode(w + i, n - i, &c);
		at[k] = i;
		i += l < 1 ? 1 : (size_t)l;
	}
	at[nc] = n;
	for (k = 0; k + 3 <= nc; k++) {
		if (k)
			buf_adds(&match, " OR ");
		search_match_add_string(&match, w + at[k], at[k + 3] - at[k]);
	}
	if (!match.len) {
		buf_release(&match);
		return 1;
	}
	rc = sqlite3_bind_text(q, 1, match.ptr, (int)match.len, SQLITE_STATIC);
	while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *term = (const char *)sqlite3_column_text(q, 0);
		int tn = sqlite3_column_bytes(q, 0), nt, d;
		int32_t tc[SUGGEST_CHARS];
		sqlite3_int64 rows;

		rc = SQLITE_OK;
		if (!term || (nt = utf8_code_points(term, (size_t)tn, tc)) < 0)
			continue;
		d = unicode_distance(cp, nc, tc, nt, max);
		if (d > max || d == 0)
			continue;
		rows = rows_of(r, term, (size_t)tn);
		if (rows > best_rows || (rows == best_rows && rows > 0 && d < best_d)) {
			best_rows = rows;
			best_d = d;
			buf_reset(best);
			buf_add(best, term, (size_t)tn);
			found = 0;
		}
	}
	sqlite3_reset(q);
	buf_release(&match);
	if (rc != SQLITE_DONE)
		return search_db_error(r->db, "looking for words near a missing one");
	return found;
}

int search_suggest(struct search_reader *r, const char *text, const struct query *q,
		   struct buf *out)
{
	struct buf word = BUF_INIT;
	size_t done = 0;
	int i, changed = 0, ret = 0;

	buf_reset(out);
	if (open_word_rows(r) < 0)
		return -1;
	for (i = 0; i < q->n && ret == 0; i++) {
		const struct term *t = &q->t[i];
		struct folded f = { "", 0, 0 };
		int32_t cp[SUGGEST_CHARS];
		sqlite3_int64 rows;
		int nc;

		if (t->neg || !t->core)
			continue;
		if (r->idx.tok.api.xTokenize(r->idx.tok.inst, &f, FTS5_TOKENIZE_QUERY, t->core,
					     (int)t->core_n, fold_token) != SQLITE_OK ||
		    f.ntok != 1 || !f.n)
			continue; /* a phrase, or nothing a word could replace */
		nc = utf8_code_points(f.w, f.n, cp);
		if (nc < SUBSTRING_MIN + 1)
			continue;
		rows = rows_of(r, f.w, f.n);
		if (rows != 0) {
			ret = rows < 0 ? search_db_error(r->db, "counting a word's rows") : 0;
			continue;
		}
		buf_reset(&word);
		ret = best_word(r, f.w, f.n, cp, nc, &word);
		if (ret == 1) {
			ret = 0;
			continue;
		}
		if (ret < 0)
			break;
		/* the query as typed, this word replaced */
		buf_add(out, text + done, (size_t)(t->core - text) - done);
		buf_add(out, word.ptr, word.len);
		done = (size_t)(t->core + t->core_n - text);
		changed = 1;
	}
	if (changed && ret == 0)
		buf_adds(out, text + done);
	else
		buf_reset(out);
	buf_release(&word);
	return ret;
}
