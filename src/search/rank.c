/*
 * rank.c: what FTS5 calls for each matching row: quire_rank(), quire_list()
 * and quire_hits().
 *
 * What. quire_rank() (search_rank_fn()) is our copy of FTS5's bm25() that keeps
 * the reader's best rows in a heap, with where their matches are
 * (capture_hits()); quire_list() appends the row and its weighted
 * frequency to the row list being read (lists.c); quire_hits() records the
 * matches of a row ranked from lists. The rows each phrase is in, for its
 * IDF, are kept per reader (struct df_entry), and a phrase's weighted
 * frequency is read from FTS5's position lists directly (poslist_freq(),
 * checked against the API on each reader's first rows).
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

/* ---- quire_rank() ------------------------------------------------------- */

static const double col_weight[NCOLS] = { 0.0, 10.0, 5.0, 3.0, 1.0 };

/*
 * A phrase's document frequency (the rows it is in) for its IDF, as the
 * MATCH expression spells the phrase. Cached per reader and index, a slot
 * per hash, and forgotten when data_version moves: a pass over every row
 * of each phrase (what xQueryPhrase() does) was a quarter of a two-word
 * query, and frequent words come back in query after query.
 */
struct df_entry {
	char *key;           /* owned; NULL: empty slot */
	size_t len;
	sqlite3_int64 rows;
};

#define DF_SLOTS 512

struct rank_query {
	int nphrase;                    /* the positive phrases, which come first */
	double avgdl;
	double idf[SEARCH_PHRASES_MAX];
};

static int count_row(const Fts5ExtensionApi *x, Fts5Context *fc, void *n)
{
	(*(sqlite3_int64 *)n)++;
	return SQLITE_OK;
}

/*
 * The natural logarithm of x > 0, as 2 atanh((m - 1) / (m + 1)) + e ln 2
 * for x = m 2^e: the IDF needs no more, and the build links no libm.
 */
static double ln(double x)
{
	uint64_t bits;
	double m, z, z2, term, sum = 0;
	int e, k;

	if (!(x > 0))
		return 0;
	memcpy(&bits, &x, sizeof(bits));
	e = (int)(bits >> 52 & 0x7FF) - 1023;
	bits = (bits & 0x000FFFFFFFFFFFFFu) | 0x3FF0000000000000u;
	memcpy(&m, &bits, sizeof(m));
	z = (m - 1) / (m + 1);
	z2 = z * z;
	for (term = z, k = 1; k < 40; k += 2, term *= z2)
		sum += term / k;
	return 2 * sum + e * 0.69314718055994530942;
}

double search_idf_of(sqlite3_int64 nrow, sqlite3_int64 nhit)
{
	double idf = ln(((double)nrow - (double)nhit + 0.5) / ((double)nhit + 0.5));

	return idf > 0 ? idf : 1e-6;
}

void search_df_clear(struct index_state *st)
{
	size_t i;

	for (i = 0; st->df && i < DF_SLOTS; i++) {
		free(st->df[i].key);
		st->df[i].key = NULL;
	}
}

/*
 * The rows phrase i is in, from the cache or else counted. The cache is
 * used only when FTS5 has every term of the query as a phrase (it drops a
 * phrase with no token, and the numbering would no longer be ours). An
 * SQLite code.
 */
static int phrase_rows(const Fts5ExtensionApi *x, Fts5Context *fc, struct index_state *st, int i,
		       sqlite3_int64 *rows)
{
	struct search_reader *r = st->reader;
	const char *key = r->match.ptr + r->phrase[i][0];
	size_t len = r->phrase[i][1];
	struct df_entry *e;
	int rc;

	*rows = 0;
	if (x->xPhraseCount(fc) != r->nterms)
		return x->xQueryPhrase(fc, i, rows, count_row);
	if (!st->df) {
		st->df = xcalloc(DF_SLOTS, sizeof(*st->df));
		st->df_version = r->data_version;
	} else if (st->df_version != r->data_version) {
		search_df_clear(st);
		st->df_version = r->data_version;
	}
	e = &st->df[hash64(key, len) % DF_SLOTS];
	if (e->key && e->len == len && memcmp(e->key, key, len) == 0) {
		*rows = e->rows;
		return SQLITE_OK;
	}
	rc = x->xQueryPhrase(fc, i, rows, count_row);
	if (rc == SQLITE_OK) {
		free(e->key);
		e->key = xmemdup(key, len);
		e->len = len;
		e->rows = *rows;
	}
	return rc;
}

static struct rank_query *rank_setup(const Fts5ExtensionApi *x, Fts5Context *fc,
				     struct index_state *st, int npos, int with_idf, int *rc)
{
	struct rank_query *rq = xcalloc(1, sizeof(*rq));
	sqlite3_int64 nrow = 0, ntok = 0;
	int i;

	rq->nphrase = npos;
	if (rq->nphrase > x->xPhraseCount(fc))
		rq->nphrase = x->xPhraseCount(fc);
	if (rq->nphrase > SEARCH_PHRASES_MAX)
		rq->nphrase = SEARCH_PHRASES_MAX;
	*rc = x->xRowCount(fc, &nrow);
	if (*rc == SQLITE_OK)
		*rc = x->xColumnTotalSize(fc, -1, &ntok);
	rq->avgdl = nrow > 0 && ntok > 0 ? (double)ntok / (double)nrow : 1.0;
	st->nrow = nrow;
	for (i = 0; *rc == SQLITE_OK && i < rq->nphrase; i++) {
		sqlite3_int64 nhit = 0;

		rq->idf[i] = 1.0;
		if (with_idf) {
			*rc = phrase_rows(x, fc, st, i, &nhit);
			rq->idf[i] = search_idf_of(nrow, nhit);
		}
	}
	if (*rc == SQLITE_OK)
		*rc = x->xSetAuxdata(fc, rq, free);
	else
		free(rq);
	return *rc == SQLITE_OK ? rq : NULL;
}

int search_by_rank(const void *a, const void *b)
{
	return above(a, b) ? -1 : above(b, a) ? 1 : 0;
}

/* Puts x in the heap r->top, which is full when it holds r->k rows, evicting the worst. */
void search_heap_put(struct search_reader *r, struct ranked x)
{
	struct ranked *h = r->top;
	size_t i, c;

	if (r->ntop < r->k) {
		for (i = r->ntop++; i > 0 && above(&h[(i - 1) / 2], &x); i = (i - 1) / 2)
			h[i] = h[(i - 1) / 2];
		h[i] = x;
		return;
	}
	for (i = 0; (c = 2 * i + 1) < r->ntop; i = c) {
		if (c + 1 < r->ntop && above(&h[c], &h[c + 1]))
			c++;
		if (!above(&x, &h[c]))
			break;
		h[i] = h[c];
	}
	h[i] = x;
}

/*
 * Records where the row's matches are: the first SNIP_HITS_MAX, by
 * position, of the first column among body, title, headings and tags that
 * has any. An SQLite code.
 */
static int capture_hits(const Fts5ExtensionApi *x, Fts5Context *fc, struct slot *sl)
{
	static const int order[] = { COL_BODY, COL_TITLE, COL_HEADINGS, COL_TAGS };
	int has[NCOLS] = { 0 };
	int ninst = 0, i, rc;

	sl->col = COL_BODY;
	sl->n = 0;
	rc = x->xInstCount(fc, &ninst);
	for (i = 0; rc == SQLITE_OK && i < ninst; i++) {
		int ph, c, off;
		rc = x->xInst(fc, i, &ph, &c, &off);
		if (rc == SQLITE_OK && c >= 0 && c < NCOLS)
			has[c] = 1;
	}
	for (i = 0; i < 4; i++) {
		if (has[order[i]]) {
			sl->col = order[i];
			break;
		}
	}
	for (i = 0; rc == SQLITE_OK && i < ninst; i++) {
		struct hit *h;
		int ph, c, off;

		rc = x->xInst(fc, i, &ph, &c, &off);
		if (rc != SQLITE_OK || c != sl->col)
			continue;
		if (sl->n == SNIP_HITS_MAX) {
			int j, worst = 0;
			for (j = 1; j < sl->n; j++)
				if (sl->hits[j].first > sl->hits[worst].first)
					worst = j;
			if (off >= sl->hits[worst].first)
				continue;
			sl->hits[worst] = sl->hits[--sl->n];
		}
		h = &sl->hits[sl->n++];
		h->phrase = ph;
		h->first = off;
		h->last = off + x->xPhraseSize(fc, ph) - 1;
	}
	qsort(sl->hits, (size_t)sl->n, sizeof(*sl->hits), search_by_position);
	return rc;
}

/*
 * In a typo query, a hit's phrase becomes the term it stands for: a
 * snippet's window is chosen for the terms it shows, whichever spelling.
 */
static void typo_hits(const struct search_reader *r, struct slot *sl, int npos)
{
	int i;

	for (i = 0; i < sl->n; i++)
		if (sl->hits[i].phrase < npos)
			sl->hits[i].phrase = r->typo.term_of[sl->hits[i].phrase];
		else
			sl->hits[i].phrase += SEARCH_PHRASES_MAX;
}

/*
 * The rest of a position list from a, which ends at b, in column col: the
 * list FTS5 keeps on disk (fts5_index.c), a varint per match (the offset
 * from the previous one, plus 2) and 0x01 then a varint before each new
 * column. Returns the sum of col_weight[] of each match's column. A
 * varint ends at its one byte with the top bit clear, so matches are
 * counted without decoding them, eight bytes at a time while no byte is
 * 0x01 (only a varint of 1 starts with it: a longer one starts with its
 * top bit set, but may end with 0x01).
 */
static double poslist_freq(const unsigned char *a, const unsigned char *b, int col)
{
	const uint64_t high = 0x8080808080808080u, ones = 0x0101010101010101u;
	double freq = 0, w = col >= 0 && col < NCOLS ? col_weight[col] : 0;
	int n = 0, inside = 0; /* matches in this column; a varint begun */

	while (a < b) {
		uint64_t v, x;

		if (b - a >= 8) {
			memcpy(&v, a, 8);
			x = v ^ ones;
			if (!((x - ones) & ~x & high)) { /* no byte is 0x01 */
				n += (int)((((~v & high) >> 7) * ones) >> 56); /* bytes ending a varint */
				inside = (int)(a[7] >> 7);
				a += 8;
				continue;
			}
		}
		if (*a == 0x01 && !inside) {
			uint32_t c = 0;

			for (a++; a < b && (*a & 0x80); a++)
				c = c << 7 | (*a & 0x7F);
			if (a < b)
				c = c << 7 | *a++;
			freq += n * w;
			n = 0;
			w = c < NCOLS ? col_weight[c] : 0;
			continue;
		}
		inside = *a++ >> 7;
		n += !inside;
	}
	return freq + n * w;
}

/* The weighted frequency of phrase i in the row through the API: one call per match. */
static int phrase_freq_api(const Fts5ExtensionApi *x, Fts5Context *fc, int i, double *freq)
{
	Fts5PhraseIter it;
	int col = -1, off, rc;

	*freq = 0;
	rc = x->xPhraseFirst(fc, i, &it, &col, &off);
	for (; rc == SQLITE_OK && col >= 0; x->xPhraseNext(fc, &it, &col, &off))
		if (col < NCOLS)
			*freq += col_weight[col];
	return rc;
}

/*
 * The weighted frequency of phrase i in the row (each match counts its
 * column's weight), what FTS5's bm25() sums. The matches of a frequent
 * word are many (24,000 per query for "pipeline object"), and a call of
 * xPhraseNext() per match was a fifth of the query: the list the iterator
 * walks is read here directly (poslist_freq()), from where
 * xPhraseFirstColumn() leaves it (past the first column's number, which
 * is cheaper than xPhraseFirst() decoding the first match). Its layout is
 * FTS5's file format, not its API, so each reader's first rows are read
 * both ways, and at the first difference the reader goes back to the API
 * for good.
 */
static int phrase_freq(struct search_reader *r, const Fts5ExtensionApi *x, Fts5Context *fc, int i,
		       double *freq)
{
	Fts5PhraseIter it;
	double check = 0;
	int col = -1, rc;

	if (r->poslist_checks < 0)
		return phrase_freq_api(x, fc, i, freq);
	*freq = 0;
	rc = x->xPhraseFirstColumn(fc, i, &it, &col);
	if (rc != SQLITE_OK || col < 0)
		return rc;
	*freq = poslist_freq(it.a, it.b, col);
	if (r->poslist_checks > 0) {
		r->poslist_checks--;
		rc = phrase_freq_api(x, fc, i, &check);
		if (rc == SQLITE_OK && check != *freq) {
			log_warn("search: FTS5 position lists are not as expected (%g, not %g); "
				 "reading them through the API", *freq, check);
			r->poslist_checks = -1;
			*freq = check;
		}
	}
	return rc;
}

/*
 * quire_rank(table, npos, with_idf): scores the row with FTS5's bm25()
 * (fts5_aux.c: per phrase, its weighted frequency against the row's length
 * and the average, k1 = 1.2, b = 0.75), higher is better, over the first
 * npos phrases; and keeps it in the reader's heap of the best rows, with
 * where its matches are, when it ranks among them. What makes it cheaper
 * than bm25(), which spends most of its time on a docsize lookup per row:
 * the row's length comes from the reader's cache; the matches are counted
 * from the position lists (phrase_freq()); the IDFs' counts of rows are
 * kept (phrase_rows()); and with_idf = 0 leaves the IDF out (as 1), which
 * for a single phrase changes no order and saves a pass over its rows (the
 * caller scales the scores it shows).
 */
void search_rank_fn(const Fts5ExtensionApi *x, Fts5Context *fc, sqlite3_context *ctx, int argc,
	     sqlite3_value **argv)
{
	struct index_state *st = x->xUserData(fc);
	struct search_reader *r = st->reader;
	struct rank_query *rq = x->xGetAuxdata(fc, 0);
	struct ranked row = { 0, x->xRowid(fc), 0, 0 };
	int least[SEARCH_TERMS_MAX];
	double dl = 0, freq[SEARCH_PHRASES_MAX];
	int i, rc = SQLITE_OK;

	for (i = 0; i < SEARCH_TERMS_MAX; i++)
		least[i] = 3;

	if (!rq) {
		if (argc != 2)
			rc = SQLITE_MISUSE;
		else
			rq = rank_setup(x, fc, st, sqlite3_value_int(argv[0]),
					sqlite3_value_int(argv[1]), &rc);
		if (!rq) {
			sqlite3_result_error_code(ctx, rc);
			return;
		}
	}
	if (row.rowid >= 0 && (size_t)row.rowid < st->cap && st->len[row.rowid]) {
		dl = st->len[row.rowid];
	} else {
		int n = 0;
		rc = x->xColumnSize(fc, -1, &n);
		dl = n;
	}
	for (i = 0; rc == SQLITE_OK && i < rq->nphrase; i++) {
		rc = phrase_freq(r, x, fc, i, &freq[i]);
		if (r->typo.on && freq[i] > 0 && r->typo.dist[i] < least[r->typo.term_of[i]])
			least[r->typo.term_of[i]] = r->typo.dist[i];
	}
	/*
	 * In a typo query each term scores by its nearest spelling in the
	 * row alone, so that a row found as typed scores as without typos.
	 */
	for (i = 0; rc == SQLITE_OK && i < rq->nphrase; i++)
		if (!r->typo.on || least[r->typo.term_of[i]] > 2 ||
		    r->typo.dist[i] == least[r->typo.term_of[i]])
			row.score += rq->idf[i] * freq[i] * (BM25_K1 + 1.0) /
				     (freq[i] + BM25_K1 * (1.0 - BM25_B + BM25_B * dl / rq->avgdl));
	if (r->typo.on) {
		/* a word matched only in the URL (no weight) counts as matched as typed */
		for (i = 0; i < r->typo.nterm; i++)
			row.typos += least[i] > 2 ? 0 : least[i];
		r->typo.exact += row.typos == 0;
	}
	if (rc == SQLITE_OK && (r->ntop < r->k || above(&row, &r->top[0]))) {
		row.slot = r->ntop < r->k ? (int)r->ntop : r->top[0].slot;
		rc = capture_hits(x, fc, &r->slots[row.slot]);
		if (r->typo.on)
			typo_hits(r, &r->slots[row.slot], rq->nphrase);
		search_heap_put(r, row);
	}
	if (rc != SQLITE_OK)
		sqlite3_result_error_code(ctx, rc);
	else
		sqlite3_result_double(ctx, row.score);
}

/* ---- quire_list() and quire_hits() -------------------------------------- */

/*
 * quire_list(table): appends the row and the weighted frequency of the
 * query's one phrase to st->building; the first row also notes the index's
 * row and token counts, which every list of this data_version shares.
 */
void search_list_fn(const Fts5ExtensionApi *x, Fts5Context *fc, sqlite3_context *ctx, int argc,
	     sqlite3_value **argv)
{
	struct index_state *st = x->xUserData(fc);
	struct row_list *l = st->building;
	double freq = 0;
	int rc = SQLITE_OK;

	(void)argc;
	(void)argv;
	if (!l || x->xPhraseCount(fc) != 1) {
		sqlite3_result_error_code(ctx, SQLITE_MISUSE);
		return;
	}
	if (!st->have_totals) {
		rc = x->xRowCount(fc, &st->nrow_all);
		if (rc == SQLITE_OK)
			rc = x->xColumnTotalSize(fc, -1, &st->ntok_all);
		st->have_totals = rc == SQLITE_OK;
	}
	if (rc == SQLITE_OK)
		rc = phrase_freq(st->reader, x, fc, 0, &freq);
	if (rc != SQLITE_OK) {
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	if (l->n == l->alloc) {
		l->alloc = l->alloc ? l->alloc * 2 : 64;
		l->rowid = xrealloc(l->rowid, l->alloc * sizeof(*l->rowid));
		l->freq = xrealloc(l->freq, l->alloc * sizeof(*l->freq));
	}
	l->rowid[l->n] = x->xRowid(fc);
	l->freq[l->n++] = freq;
	sqlite3_result_int(ctx, 1);
}

/* quire_hits(table, slot): records where the row's matches are in r->slots[slot]. */
void search_hits_fn(const Fts5ExtensionApi *x, Fts5Context *fc, sqlite3_context *ctx, int argc,
	     sqlite3_value **argv)
{
	struct index_state *st = x->xUserData(fc);
	struct search_reader *r = st->reader;
	int slot = argc == 1 ? sqlite3_value_int(argv[0]) : -1, rc;

	if (slot < 0 || (size_t)slot >= r->nslots) {
		sqlite3_result_error_code(ctx, SQLITE_MISUSE);
		return;
	}
	rc = capture_hits(x, fc, &r->slots[slot]);
	if (rc == SQLITE_OK && r->typo.on)
		typo_hits(r, &r->slots[slot], r->typo.npos);
	if (rc != SQLITE_OK)
		sqlite3_result_error_code(ctx, rc);
	else
		sqlite3_result_int(ctx, 1);
}
