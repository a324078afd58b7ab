/*
 * suggest.c: "did you mean", from the index's own words.
 *
 * What. search_suggest() looks at each positive term of a query that is a
 * single word: one the index has stays; for one it lacks, the words of
 * vocab (every word of the index of SUBSTRING_MIN characters or more) one
 * or two edits away (one for words of four characters or fewer; an edit
 * is an insertion, a deletion, a substitution or two neighbours swapped)
 * are candidates, and the nearest wins, then the one in more rows (then
 * the first in order). The suggestion is the query with those words
 * replaced; none when nothing changed.
 *
 * How. The candidates are typo.c's (search_typo_near()): the reader's
 * copy of vocab, measured in C (optimal string alignment, on code
 * points), and a word's rows counted by fts5vocab's row table, one seek
 * each. Until issue 33 they came from vocab_tri, the words sharing a
 * trigram with the typed one, and the most frequent within two edits
 * won: "calout" suggested "about" (two edits, in more notes) rather
 * than "callout" (one), and a trigram query cost 1.7 to 6.7 ms a word.
 *
 * Cost. Asked only when a query found nothing (search.c), even with its
 * typos forgiven, so no query that finds something pays for it.
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

/* Longest word compared, in code points. */
#define SUGGEST_CHARS UNICODE_DISTANCE_CHARS

int search_suggest(struct search_reader *r, const char *text, const struct query *q,
		   struct buf *out)
{
	size_t done = 0;
	int i, changed = 0, ret = 0;

	buf_reset(out);
	for (i = 0; i < q->n && ret == 0; i++) {
		const struct term *t = &q->t[i];
		struct one_token f = { "", 0, 0 };
		struct near_word best;
		int32_t cp[SUGGEST_CHARS];
		sqlite3_int64 rows;
		int nc;

		if (t->neg || !t->core)
			continue;
		if (r->idx.tok.api.xTokenize(r->idx.tok.inst, &f, FTS5_TOKENIZE_QUERY, t->core,
					     (int)t->core_n, search_take_token) != SQLITE_OK ||
		    f.ntok != 1 || !f.n)
			continue; /* a phrase, or nothing a word could replace */
		nc = utf8_code_points(f.w, f.n, cp);
		if (nc < SUBSTRING_MIN + 1)
			continue;
		rows = search_word_rows(r, f.w, f.n);
		if (rows != 0) {
			ret = rows < 0 ? -1 : 0;
			continue;
		}
		ret = search_typo_near(r, f.w, f.n, nc <= 4 ? 1 : 2, &best, 1);
		if (ret <= 0)
			continue;
		ret = 0;
		/* the query as typed, this word replaced */
		buf_add(out, text + done, (size_t)(t->core - text) - done);
		buf_add(out, best.w, best.n);
		done = (size_t)(t->core + t->core_n - text);
		changed = 1;
	}
	if (changed && ret == 0)
		buf_adds(out, text + done);
	else
		buf_reset(out);
	return ret;
}
