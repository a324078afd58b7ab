/*
 * lists.c: the row lists a reader keeps, and ranking from them.
 *
 * What. A phrase's rows, each with the phrase's weighted frequency in it
 * (struct row_list), read in one pass (quire_list() in rank.c) and kept
 * until the index changes, the least recently used going first.
 * search_rank_lists() ranks a query of positive terms by intersecting its
 * phrases' lists (search_rank_rows()) instead of FTS5 merging their position
 * lists row by row, and search_list_hits() then reads the matches of the rows
 * shown. substring.c keeps its terms' rows here too.
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

/* About the most bytes of lists a reader keeps (see struct row_list). */
#define LISTS_BYTES (8u << 20)

/* In the shape of scan_sql (search.c): one step for all the rows. */
static const char list_sql[] =
	"SELECT count(*) FROM fts WHERE fts MATCH ?1 AND quire_list_fts(fts) IS NOT NULL";
static const char hit_sql[] = "SELECT count(*) FROM fts WHERE fts MATCH ?1 AND rowid = ?2 "
			      "AND quire_hits_fts(fts, ?3) IS NOT NULL";

void search_list_free(struct row_list *l)
{
	if (!l)
		return;
	free(l->key);
	free(l->rowid);
	free(l->freq);
	free(l);
}

static size_t list_size(const struct row_list *l)
{
	return sizeof(*l) + l->len + l->alloc * (sizeof(*l->rowid) + sizeof(*l->freq));
}

void search_lists_clear(struct index_state *st)
{
	size_t i;

	for (i = 0; i < st->nlists; i++)
		search_list_free(st->lists[i]);
	st->nlists = 0;
	st->list_bytes = 0;
	st->have_totals = 0;
	memset(st->seen, 0, sizeof(st->seen));
}

/* Frees the least recently used lists not used by this query until one more fits. */
static void lists_make_room(struct index_state *st, unsigned long long query)
{
	while (st->nlists == LISTS_MAX || st->list_bytes > LISTS_BYTES) {
		size_t i, lru = st->nlists;

		for (i = 0; i < st->nlists; i++)
			if (st->lists[i]->used != query &&
			    (lru == st->nlists || st->lists[i]->used < st->lists[lru]->used))
				lru = i;
		if (lru == st->nlists)
			return; /* all this query's: at most SEARCH_TERMS_MAX < LISTS_MAX */
		st->list_bytes -= list_size(st->lists[lru]);
		search_list_free(st->lists[lru]);
		st->lists[lru] = st->lists[--st->nlists];
	}
}

/* Phrase i's list if it is kept, else NULL. */
static struct row_list *kept_list(struct search_reader *r, struct index_state *st, int i)
{
	return search_list_find(r, st, r->match.ptr + r->phrase[i][0], r->phrase[i][1]);
}

/* The list kept under key (len bytes), marked as used by this query; NULL when none. */
struct row_list *search_list_find(struct search_reader *r, struct index_state *st, const char *key,
			   size_t len)
{
	size_t j;

	for (j = 0; j < st->nlists; j++) {
		struct row_list *l = st->lists[j];
		if (l->len == len && memcmp(l->key, key, len) == 0) {
			l->used = r->nquery;
			return l;
		}
	}
	return NULL;
}

/* Marks phrase i as asked for; whether it had been already (at this data_version). */
static int seen_before(struct search_reader *r, struct index_state *st, int i)
{
	uint64_t h = hash64(r->match.ptr + r->phrase[i][0], r->phrase[i][1]) | 1;
	uint64_t *slot = &st->seen[h % SEEN_SLOTS];

	if (*slot == h)
		return 1;
	*slot = h;
	return 0;
}

/* Appends the rows of the one phrase match (len bytes) to l. 0 or -1 (logged). */
int search_list_read_rows(struct search_reader *r, struct index_state *st, const char *match,
			   size_t len, struct row_list *l)
{
	sqlite3_stmt *q;
	int rc;

	if (!(q = search_reader_stmt(r, &r->list_scan, list_sql)))
		return -1;
	st->building = l;
	rc = sqlite3_bind_text(q, 1, match, (int)len, SQLITE_STATIC);
	if (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW)
		rc = sqlite3_step(q);
	sqlite3_reset(q);
	st->building = NULL;
	if (rc != SQLITE_DONE)
		return search_db_error(r->db, "reading a phrase's rows");
	return 0;
}

struct row_list *search_list_new(struct search_reader *r, const char *key, size_t len)
{
	struct row_list *l = xcalloc(1, sizeof(*l));

	l->key = xmemdup(key, len);
	l->len = len;
	l->used = r->nquery;
	return l;
}

/* Keeps l, read for this query, for as long as the index does not change. */
void search_list_keep(struct search_reader *r, struct index_state *st, struct row_list *l)
{
	lists_make_room(st, r->nquery);
	if (l->alloc > l->n + l->n / 8) {
		l->alloc = l->n ? l->n : 1;
		l->rowid = xrealloc(l->rowid, l->alloc * sizeof(*l->rowid));
		l->freq = xrealloc(l->freq, l->alloc * sizeof(*l->freq));
	}
	st->lists[st->nlists++] = l;
	st->list_bytes += list_size(l);
}

/* Reads phrase i's list and keeps it; NULL on an error (logged). */
static struct row_list *read_list(struct search_reader *r, struct index_state *st, int i)
{
	const char *key = r->match.ptr + r->phrase[i][0];
	size_t len = r->phrase[i][1];
	struct row_list *l = search_list_new(r, key, len);

	if (search_list_read_rows(r, st, key, len, l) < 0) {
		search_list_free(l);
		return NULL;
	}
	search_list_keep(r, st, l);
	return l;
}

/* The first index from at on whose row id is id or more (galloping). */
static size_t list_seek(const struct row_list *l, size_t at, sqlite3_int64 id)
{
	size_t lo = at, hi, step = 1;

	if (at >= l->n || l->rowid[at] >= id)
		return at;
	/* l->rowid[lo] < id: widen until l->rowid[hi] >= id or the end */
	for (hi = at + 1; hi < l->n && l->rowid[hi] < id; step *= 2) {
		lo = hi;
		hi = at + step * 2;
	}
	if (hi > l->n)
		hi = l->n;
	while (lo + 1 < hi) { /* l->rowid[lo] < id, and hi is the end or l->rowid[hi] >= id */
		size_t mid = lo + (hi - lo) / 2;
		if (l->rowid[mid] < id)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/*
 * The rows in every list of pos and in none of neg, ranked with bm25 into
 * r->top, term i weighted by idf[i] (NULL: 1); *total gets their number.
 * The lists are intersected from the shortest. A row whose length the
 * reader does not know takes the mean length, or with strict ends the
 * ranking: 0 (r->top and *total emptied; the caller asks FTS5), else 1.
 */
int search_rank_rows(struct search_reader *r, struct row_list **pos, int npos, const double *idf,
	      struct row_list **neg, int nneg, int strict, long long *total)
{
	struct index_state *st = &r->idx;
	size_t at[SEARCH_TERMS_MAX] = { 0 }, nat[SEARCH_TERMS_MAX] = { 0 }, k;
	double avgdl = st->have_totals && st->nrow_all > 0 && st->ntok_all > 0
			       ? (double)st->ntok_all / (double)st->nrow_all
			       : 1.0;
	int i, j, drive = 0;

	*total = 0;
	for (i = 1; i < npos; i++)
		if (pos[i]->n < pos[drive]->n)
			drive = i;
	for (k = 0; k < pos[drive]->n; k++) {
		struct ranked row = { 0, pos[drive]->rowid[k], 0, 0 };
		double dl;

		for (i = 0; i < npos; i++) {
			if (i == drive) {
				at[i] = k;
				continue;
			}
			at[i] = list_seek(pos[i], at[i], row.rowid);
			if (at[i] == pos[i]->n)
				return 1; /* no later row is in every list */
			if (pos[i]->rowid[at[i]] != row.rowid)
				break;
		}
		if (i < npos)
			continue;
		for (j = 0; j < nneg; j++) {
			nat[j] = list_seek(neg[j], nat[j], row.rowid);
			if (nat[j] < neg[j]->n && neg[j]->rowid[nat[j]] == row.rowid)
				break;
		}
		if (j < nneg)
			continue;
		if (row.rowid >= 0 && (size_t)row.rowid < st->cap && st->len[row.rowid]) {
			dl = st->len[row.rowid];
		} else if (strict) {
			r->ntop = 0;
			*total = 0;
			return 0;
		} else {
			dl = avgdl;
		}
		for (i = 0; i < npos; i++) {
			double freq = pos[i]->freq[at[i]];

			row.score += (idf ? idf[i] : 1.0) * freq * (BM25_K1 + 1.0) /
				     (freq + BM25_K1 * (1.0 - BM25_B + BM25_B * dl / avgdl));
		}
		++*total;
		if (r->ntop < r->k || above(&row, &r->top[0])) {
			row.slot = r->ntop < r->k ? (int)r->ntop : r->top[0].slot;
			search_heap_put(r, row);
		}
	}
	return 1;
}

/* A term of a typo query ranked from lists: its phrases' lists and cursors. */
struct typo_term {
	int n;
	struct row_list *l[SEARCH_PHRASES_MAX];
	int dist[SEARCH_PHRASES_MAX];
	double idf[SEARCH_PHRASES_MAX];
	size_t at[SEARCH_PHRASES_MAX];
	int here[SEARCH_PHRASES_MAX]; /* the phrase is in the row at hand */
	size_t rows;
};

/* Whether the term is in row id (its cursors moved there); its least distance in *least. */
static int typo_term_at(struct typo_term *t, sqlite3_int64 id, int *least)
{
	int p, in = 0;

	*least = 3;
	for (p = 0; p < t->n; p++) {
		t->at[p] = list_seek(t->l[p], t->at[p], id);
		t->here[p] = t->at[p] < t->l[p]->n && t->l[p]->rowid[t->at[p]] == id;
		if (t->here[p] && t->dist[p] < *least)
			*least = t->dist[p];
		in |= t->here[p];
	}
	return in;
}

/* The term's bm25 in the row at hand: its phrases at the least distance, as quire_rank(). */
static double typo_term_score(const struct typo_term *t, int least, double dl, double avgdl)
{
	double score = 0;
	int p;

	for (p = 0; p < t->n; p++) {
		double freq;

		if (!t->here[p] || t->dist[p] != least)
			continue;
		freq = t->l[p]->freq[t->at[p]];
		score += t->idf[p] * freq * (BM25_K1 + 1.0) /
			 (freq + BM25_K1 * (1.0 - BM25_B + BM25_B * dl / avgdl));
	}
	return score;
}

/*
 * Ranks a typo query from its row lists, as quire_rank() does in a typo
 * query: the rows that have every term in one of its spellings, fewer
 * typos first, then bm25 over each term's nearest spellings in the row.
 * The rows of the term in fewest drive: each of them (the union of its
 * lists, merged with a cursor per list) is looked up in the others' lists.
 * 1 when ranked, 0 when the query is not one for lists (as
 * search_rank_lists() says; also an excluded term), -1 on an error.
 */
static int rank_typo_lists(struct search_reader *r, int npos, long long *total)
{
	struct index_state *st = &r->idx;
	struct typo_term *t = xcalloc((size_t)r->typo.nterm, sizeof(*t));
	double avgdl;
	size_t rows = 0;
	int i, k, fresh = 0, drive = 0, ret = 0;

	if (npos != r->typo.npos || r->nterms != npos || r->typo.nterm > SEARCH_TERMS_MAX)
		goto done; /* an excluded term: FTS5 */
	for (i = 0; i < npos; i++) {
		if (r->typo.skip[i])
			continue;
		if (r->match.ptr[r->phrase[i][0] + r->phrase[i][1] - 1] == '*')
			goto done;
		if (!kept_list(r, st, i) && !seen_before(r, st, i))
			fresh = 1;
	}
	if (fresh)
		goto done;
	for (i = 0; i < npos; i++) {
		struct typo_term *tt = &t[r->typo.term_of[i]];
		struct row_list *l;

		if (r->typo.skip[i])
			continue;
		if (!(l = kept_list(r, st, i)) && !(l = read_list(r, st, i))) {
			ret = -1;
			goto done;
		}
		tt->l[tt->n] = l;
		tt->dist[tt->n] = r->typo.dist[i];
		tt->n++;
		tt->rows += l->n;
		rows += l->n;
	}
	if (!st->have_totals || rows < (size_t)r->lists_min_rows)
		goto done;
	for (i = 0; i < r->typo.nterm; i++) {
		if (!t[i].rows)
			goto done; /* a term in no row: FTS5 says so as quickly */
		for (k = 0; k < t[i].n; k++)
			t[i].idf[k] = search_idf_of(st->nrow_all, (sqlite3_int64)t[i].l[k]->n);
		if (t[i].rows < t[drive].rows)
			drive = i;
	}
	st->nrow = st->nrow_all;
	avgdl = st->nrow_all > 0 && st->ntok_all > 0 ? (double)st->ntok_all / (double)st->nrow_all
						      : 1.0;
	*total = 0;
	r->typo.exact = 0;
	for (;;) {
		struct ranked row = { 0, INT64_MAX, 0, 0 };
		int least;

		/* the drive's next row: the least row id under its cursors */
		for (k = 0; k < t[drive].n; k++)
			if (t[drive].at[k] < t[drive].l[k]->n &&
			    t[drive].l[k]->rowid[t[drive].at[k]] < row.rowid)
				row.rowid = t[drive].l[k]->rowid[t[drive].at[k]];
		if (row.rowid == INT64_MAX)
			break;
		for (i = 0; i < r->typo.nterm; i++) {
			if (!typo_term_at(&t[i], row.rowid, &least))
				break;
			row.typos += least;
		}
		if (i == r->typo.nterm) {
			double dl;

			if (row.rowid < 0 || (size_t)row.rowid >= st->cap || !st->len[row.rowid]) {
				r->ntop = 0;
				*total = 0;
				r->typo.exact = 0;
				goto done; /* a row of unknown length: FTS5 */
			}
			dl = st->len[row.rowid];
			for (i = 0; i < r->typo.nterm; i++) {
				typo_term_at(&t[i], row.rowid, &least);
				row.score += typo_term_score(&t[i], least, dl, avgdl);
			}
			++*total;
			r->typo.exact += row.typos == 0;
			if (r->ntop < r->k || above(&row, &r->top[0])) {
				row.slot = r->ntop < r->k ? (int)r->ntop : r->top[0].slot;
				search_heap_put(r, row);
			}
		}
		for (k = 0; k < t[drive].n; k++) /* past this row */
			if (t[drive].at[k] < t[drive].l[k]->n &&
			    t[drive].l[k]->rowid[t[drive].at[k]] == row.rowid)
				t[drive].at[k]++;
	}
	ret = 1;
done:
	free(t);
	return ret;
}

/*
 * Ranks the rows matching r->match (index IDX_WORDS, every term positive)
 * from the phrases' row lists, as quire_rank() would: the rows in every
 * list, each scored with the same bm25 in the same order of operations,
 * into the same heap. The hits of the rows kept are read afterwards
 * (search_list_hits()). 1 when ranked, 0 when the query is not one for lists (a
 * phrase asked for the first time, see SEEN_SLOTS; phrases in few rows; a
 * prefix, whose hits in one row FTS5 finds by merging all of its words'
 * rows again, 1.3 ms for "param*"; a phrase in no row, which FTS5 may have
 * dropped from the query rather than matching nothing; a row of unknown
 * length), -1 on an error.
 */
int search_rank_lists(struct search_reader *r, int npos, long long *total)
{
	struct index_state *st = &r->idx;
	struct row_list *l[SEARCH_TERMS_MAX];
	double idf[SEARCH_TERMS_MAX];
	size_t rows = 0;
	int i, fresh = 0;

	if (r->lists_min_rows < 0 || npos < 1)
		return 0;
	if (!r->typo.on && (npos != r->nterms || npos > SEARCH_TERMS_MAX))
		return 0;
	if (st->lists_version != r->data_version) {
		search_lists_clear(st);
		st->lists_version = r->data_version;
	}
	r->nquery++;
	if (r->typo.on)
		return rank_typo_lists(r, npos, total);
	for (i = 0; i < npos; i++) /* a prefix's rows are cheap to list, but not its hits per row */
		if (r->match.ptr[r->phrase[i][0] + r->phrase[i][1] - 1] == '*')
			return 0;
	for (i = 0; i < npos; i++)
		if (!(l[i] = kept_list(r, st, i)) && !seen_before(r, st, i))
			fresh = 1;
	if (fresh)
		return 0;
	for (i = 0; i < npos; i++) {
		if (!l[i] && !(l[i] = read_list(r, st, i)))
			return -1;
		if (l[i]->n == 0)
			return 0;
		rows += l[i]->n;
	}
	if (!st->have_totals || rows < (size_t)r->lists_min_rows)
		return 0;
	st->nrow = st->nrow_all;
	for (i = 0; i < npos; i++)
		idf[i] = npos > 1 ? search_idf_of(st->nrow_all, (sqlite3_int64)l[i]->n) : 1.0;
	return search_rank_rows(r, l, npos, idf, NULL, 0, 1, total);
}

/* Reads where the matches of the rows ranked from lists are, for rows from..r->ntop. 0 or -1. */
int search_list_hits(struct search_reader *r, size_t from)
{
	sqlite3_stmt *q = search_reader_stmt(r, &r->hit_scan, hit_sql);
	size_t i;
	int rc = q ? SQLITE_OK : SQLITE_ERROR;

	for (i = from; rc == SQLITE_OK && i < r->ntop; i++) {
		struct slot *sl = &r->slots[r->top[i].slot];

		sl->col = COL_BODY;
		sl->n = 0;
		rc = sqlite3_bind_text(q, 1, r->match.ptr, (int)r->match.len, SQLITE_STATIC);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(q, 2, r->top[i].rowid);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int(q, 3, r->top[i].slot);
		if (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW)
			rc = sqlite3_step(q);
		sqlite3_reset(q);
		if (rc == SQLITE_DONE)
			rc = SQLITE_OK;
	}
	return rc == SQLITE_OK ? 0 : search_db_error(r->db, "reading a result's matches");
}
