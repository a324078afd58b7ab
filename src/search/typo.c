/*
 * typo.c: words of the index near a mistyped one, and queries that
 * forgive typos.
 *
 * What. search_typo_near() gives the words of the index at most max edits
 * from a typed word (an edit: a letter inserted, deleted or replaced, or
 * two neighbours swapped: optimal string alignment), nearest first, then
 * the ones in more rows; search_typo_plan() turns a query into
 * alternatives for its words under Meilisearch's rules (a word of five
 * characters or more may have one typo, of nine or more two), which
 * search.c puts in the MATCH expression beside the words as typed.
 *
 * How. Each reader keeps the vocabulary (vocab: every word of the index of
 * SUBSTRING_MIN characters or more, which the writer keeps, never removing
 * a word) in memory, in buckets by length in code points, each word with a
 * mask of the characters it holds. A word is compared only with the
 * buckets within max of its length, and only where the masks allow it (an
 * edit takes at most one character away and brings at most one: a word
 * missing more of the typed word's characters is further than max); the
 * few left are measured exactly, with a cut-off once a row of the
 * distance table passes max (unicode_distance()). vocab's ids only grow,
 * so when the index changes the reader reads the words above the last id
 * it has: a change costs its new words. A word is a candidate only while
 * some row holds it (a MATCH reading the first entry of its list): a word
 * of a note deleted, changed or unpublished is in vocab but in no row, and
 * is never offered. Near words are ordered by their rows (fts5vocab's
 * count, which reads the whole list, kept per reader until the index
 * changes) only when there is a choice.
 *
 * The same copy answers two questions that spare a query work: whether a
 * typed word is inside some word at all (search_fragments_possible(): if
 * not, the substring query would find nothing), and search_word_missing()
 * says when a typed word is in no row (the query as typed finds nothing,
 * whatever FTS5 would read of the other words' lists to learn it).
 *
 * Rejected. vocab_tri's trigrams (what suggest.c used): a trigram query
 * ranked every word sharing one trigram with the typo (1.7 to 6.7 ms a
 * word at 10,000 notes), and a five-letter word has three trigrams, which
 * one typo in its middle can all break, so it missed candidates. A
 * deletion dictionary (SymSpell) on disk: every word's deletions, 10 to
 * 50 rows a word to write and keep in step. A trie walked with the
 * distance table: quicker for large vocabularies, more memory and code
 * than a vault's tens of thousands of words need.
 */
#define _GNU_SOURCE /* memmem */
#include "search/search.h"
#include "search/search-int.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

/* Words within reach whose rows are counted, per distance: the rest are not offered. */
#define NEAR_SCAN 64

/* ---- The vocabulary in memory --------------------------------------------- */

/* The bit of a code point in a word's mask: a letter or digit its own, others shared. */
static uint64_t char_bit(int32_t c)
{
	if (c >= 'a' && c <= 'z')
		return (uint64_t)1 << (c - 'a');
	if (c >= '0' && c <= '9')
		return (uint64_t)1 << (26 + c - '0');
	return (uint64_t)1 << (36 + ((uint32_t)c * 2654435761u >> 16) % 28);
}

static uint64_t mask_of(const int32_t *cp, int n)
{
	uint64_t m = 0;
	int i;

	for (i = 0; i < n; i++)
		m |= char_bit(cp[i]);
	return m;
}

void search_lexicon_release(struct lexicon *lx)
{
	int i;

	for (i = 0; i <= UNICODE_DISTANCE_CHARS; i++)
		free(lx->bucket[i].e);
	free(lx->text);
	sqlite3_finalize(lx->more);
	sqlite3_finalize(lx->top);
	memset(lx, 0, sizeof(*lx));
	lx->version = -1;
	lx->count_version = -1;
}

static void lexicon_add(struct lexicon *lx, const char *w, size_t n)
{
	int32_t cp[UNICODE_DISTANCE_CHARS];
	struct lex_bucket *b;
	int nc = utf8_code_points(w, n, cp);

	if (n > UINT16_MAX || lx->len + n > UINT32_MAX)
		return;
	ALLOC_GROW(lx->text, lx->len + n, lx->alloc);
	memcpy(lx->text + lx->len, w, n);
	/* longer than any word compared: kept in bucket 0 for fragments alone, every bit set */
	b = &lx->bucket[nc < 1 ? 0 : nc];
	ALLOC_GROW(b->e, b->n + 1, b->alloc);
	b->e[b->n].mask = nc < 1 ? ~(uint64_t)0 : mask_of(cp, nc);
	b->e[b->n].off = (uint32_t)lx->len;
	b->e[b->n].bytes = (uint16_t)n;
	b->n++;
	lx->len += n;
}

/*
 * Brings r's copy of vocab up to the read transaction's data_version: the
 * words above the last id read (all of them when vocab's ids went back,
 * a rebuilt index). 0 or -1 (logged).
 */
static int lexicon_update(struct search_reader *r)
{
	struct lexicon *lx = &r->lex;
	sqlite3_int64 top = 0;
	int rc;

	if (lx->version == r->data_version)
		return 0;
	if (!lx->top && search_db_prepare(r->db, "SELECT max(id) FROM vocab", &lx->top) != SQLITE_OK)
		return -1;
	rc = sqlite3_step(lx->top);
	if (rc == SQLITE_ROW)
		top = sqlite3_column_int64(lx->top, 0);
	sqlite3_reset(lx->top);
	if (rc != SQLITE_ROW)
		return search_db_error(r->db, "reading the vocabulary's size");
	if (top < lx->last_id) {
		sqlite3_stmt *more = lx->more;
		lx->more = NULL;
		search_lexicon_release(lx);
		lx->more = more;
	}
	if (!lx->more &&
	    search_db_prepare(r->db, "SELECT id, term FROM vocab WHERE id > ?1 ORDER BY id",
			      &lx->more) != SQLITE_OK)
		return -1;
	rc = sqlite3_bind_int64(lx->more, 1, lx->last_id);
	while (rc == SQLITE_OK && (rc = sqlite3_step(lx->more)) == SQLITE_ROW) {
		const char *w = (const char *)sqlite3_column_text(lx->more, 1);

		lx->last_id = sqlite3_column_int64(lx->more, 0);
		if (w)
			lexicon_add(lx, w, (size_t)sqlite3_column_bytes(lx->more, 1));
		rc = SQLITE_OK;
	}
	sqlite3_reset(lx->more);
	if (rc != SQLITE_DONE)
		return search_db_error(r->db, "reading the vocabulary");
	lx->version = r->data_version;
	return 0;
}

/* ---- Words near a typed one --------------------------------------------- */

/*
 * Whether some row holds the word w (folded, n bytes): 1, 0, or -1 on an
 * error (logged). FTS5 reads the first entry of the word's list, where
 * fts5vocab's count reads all of it (a millisecond for a word in most
 * notes).
 */
int search_word_held(struct search_reader *r, const char *w, size_t n)
{
	sqlite3_stmt *q = search_reader_stmt(r, &r->word_held,
					     "SELECT 1 FROM fts WHERE fts MATCH ?1 LIMIT 1");
	int rc;

	if (!q)
		return -1;
	buf_reset(&r->plan.key);
	search_match_add_string(&r->plan.key, w, n);
	rc = sqlite3_bind_text(q, 1, r->plan.key.ptr, (int)r->plan.key.len, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(q);
	sqlite3_reset(q);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return search_db_error(r->db, "looking a word up");
	return rc == SQLITE_ROW;
}

/*
 * Rows holding the word w (folded, n bytes), or -1 on an error (logged):
 * fts5vocab's count, kept per reader until the index changes (a slot per
 * hash), since it reads the word's whole list.
 */
sqlite3_int64 search_word_rows(struct search_reader *r, const char *w, size_t n)
{
	struct word_count *c = &r->lex.count[hash64(w, n) % WORD_COUNTS];
	sqlite3_stmt *q;
	sqlite3_int64 rows = 0;
	int rc;

	if (r->lex.count_version != r->data_version) {
		size_t i;

		for (i = 0; i < WORD_COUNTS; i++)
			r->lex.count[i].n = 0;
		r->lex.count_version = r->data_version;
	}
	if (c->n == n && n < sizeof(c->w) && memcmp(c->w, w, n) == 0)
		return c->rows;

	if (!r->word_rows &&
	    sqlite3_exec(r->db,
			 "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_rows USING fts5vocab(main, fts, row)",
			 NULL, NULL, NULL) != SQLITE_OK)
		return search_db_error(r->db, "opening the word counts");
	q = search_reader_stmt(r, &r->word_rows, "SELECT doc FROM temp.fts_rows WHERE term = ?1");
	if (!q)
		return -1;
	sqlite3_bind_text(q, 1, w, (int)n, SQLITE_STATIC);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		rows = sqlite3_column_int64(q, 0);
	else if (rc != SQLITE_DONE)
		rows = search_db_error(r->db, "counting a word's rows");
	sqlite3_reset(q);
	if (rows >= 0 && n < sizeof(c->w)) {
		memcpy(c->w, w, n);
		c->n = n;
		c->rows = rows;
	}
	return rows;
}

static int by_nearness(const void *a, const void *b)
{
	const struct near_word *x = a, *y = b;
	int c;

	if (x->dist != y->dist)
		return x->dist - y->dist;
	if (x->rows != y->rows)
		return x->rows > y->rows ? -1 : 1;
	c = memcmp(x->w, y->w, x->n < y->n ? x->n : y->n);
	return c ? c : (int)x->n - (int)y->n;
}

/*
 * Appends to out the words found at one distance (up to NEAR_SCAN of
 * them, in *found) that some row holds, the most frequent first (their
 * rows counted only when there is a choice). The count appended, or -1.
 */
static int keep_held(struct search_reader *r, struct near_word *found, int nfound,
		     struct near_word *out, int room)
{
	int i, kept = 0, held;

	for (i = 0; i < nfound; i++) {
		if ((held = search_word_held(r, found[i].w, found[i].n)) < 0)
			return -1;
		if (held)
			found[kept++] = found[i];
	}
	for (i = 0; kept > 1 && i < kept; i++)
		if ((found[i].rows = search_word_rows(r, found[i].w, found[i].n)) < 0)
			return -1;
	qsort(found, (size_t)kept, sizeof(*found), by_nearness);
	if (kept > room)
		kept = room;
	memcpy(out, found, (size_t)kept * sizeof(*out));
	return kept;
}

int search_typo_near(struct search_reader *r, const char *w, size_t n, int max,
		     struct near_word *out, int cap)
{
	struct lexicon *lx = &r->lex;
	struct near_word found[2][NEAR_SCAN];
	int32_t cp[UNICODE_DISTANCE_CHARS], tc[UNICODE_DISTANCE_CHARS];
	int nfound[2] = { 0, 0 }, nc, len, d, got = 0, k;
	uint64_t mask;

	if (max < 1 || cap < 1 || (nc = utf8_code_points(w, n, cp)) < 1)
		return 0;
	if (max > 2)
		max = 2;
	if (lexicon_update(r) < 0)
		return -1;
	mask = mask_of(cp, nc);
	for (len = nc - max; len <= nc + max; len++) {
		const struct lex_bucket *b;
		size_t i;

		if (len < 1 || len > UNICODE_DISTANCE_CHARS)
			continue;
		b = &lx->bucket[len];
		for (i = 0; i < b->n; i++) {
			const struct lex_entry *e = &b->e[i];
			const char *t = lx->text + e->off;

			if (__builtin_popcountll(mask & ~e->mask) > max ||
			    __builtin_popcountll(e->mask & ~mask) > max)
				continue;
			if (utf8_code_points(t, e->bytes, tc) != len)
				continue;
			d = unicode_distance(cp, nc, tc, len, max);
			if (d < 1 || d > max || nfound[d - 1] == NEAR_SCAN ||
			    e->bytes >= sizeof(found[0][0].w))
				continue;
			memcpy(found[d - 1][nfound[d - 1]].w, t, e->bytes);
			found[d - 1][nfound[d - 1]].w[e->bytes] = '\0';
			found[d - 1][nfound[d - 1]].n = e->bytes;
			found[d - 1][nfound[d - 1]].dist = d;
			found[d - 1][nfound[d - 1]].rows = 0;
			nfound[d - 1]++;
		}
	}
	/*
	 * The nearest only: words two edits away when none is one away (as
	 * Typesense tries more typos only while too little is found). Each
	 * word offered is a phrase more that FTS5 merges for every row.
	 */
	for (d = 0; d < 2 && got == 0; d++) {
		k = keep_held(r, found[d], nfound[d], out + got, cap - got);
		if (k < 0)
			return -1;
		got += k;
	}
	return got;
}

/* ---- Fragments ---------------------------------------------------------- */

/* Whether some word of the vocabulary holds w (folded, n bytes, nc code points). */
static int inside_some_word(const struct lexicon *lx, const char *w, size_t n, const int32_t *cp,
			    int nc)
{
	uint64_t mask = mask_of(cp, nc);
	int len;

	for (len = 0; len <= UNICODE_DISTANCE_CHARS; len++) {
		const struct lex_bucket *b = &lx->bucket[len];
		size_t i;

		if (len && len < nc)
			continue;
		for (i = 0; i < b->n; i++)
			if (!(mask & ~b->e[i].mask) && b->e[i].bytes >= n &&
			    memmem(lx->text + b->e[i].off, b->e[i].bytes, w, n))
				return 1;
	}
	return 0;
}

/* fts's tokenizer callback that keeps the first token in a struct one_token and counts them. */
int search_take_token(void *p, int tflags, const char *tok, int n, int start, int end)
{
	struct one_token *o = p;

	if (tflags & FTS5_TOKEN_COLOCATED)
		return SQLITE_OK;
	if (++o->ntok == 1 && (size_t)n < sizeof(o->w)) {
		memcpy(o->w, tok, (size_t)n);
		o->n = (size_t)n;
	}
	return SQLITE_OK;
}

int search_word_missing(struct search_reader *r, const struct query *q)
{
	int i;

	for (i = 0; i < q->n; i++) {
		const struct term *t = &q->t[i];
		struct one_token o = { "", 0, 0 };
		int held;

		if (t->neg || t->prefix || !t->core)
			continue;
		if (r->idx.tok.api.xTokenize(r->idx.tok.inst, &o, FTS5_TOKENIZE_QUERY, t->core,
					     (int)t->core_n, search_take_token) != SQLITE_OK ||
		    o.ntok != 1 || !o.n)
			continue;
		if ((held = search_word_held(r, o.w, o.n)) <= 0)
			return held < 0 ? -1 : 1;
	}
	return 0;
}

int search_fragments_possible(struct search_reader *r, const struct query *q)
{
	int i, nc, l;

	if (lexicon_update(r) < 0)
		return -1;
	for (i = 0; i < q->n; i++) {
		const struct term *t = &q->t[i];
		struct one_token o = { "", 0, 0 };
		int32_t cp[UNICODE_DISTANCE_CHARS];

		if (t->neg || t->prefix || !t->core)
			continue;
		if (r->idx.tok.api.xTokenize(r->idx.tok.inst, &o, FTS5_TOKENIZE_QUERY, t->core,
					     (int)t->core_n, search_take_token) != SQLITE_OK ||
		    o.ntok != 1 || !o.n || search_cjk_at(o.w, (int)o.n, &l))
			continue; /* a phrase, or CJK: looked for as they are */
		nc = utf8_code_points(o.w, o.n, cp);
		if (nc >= SUBSTRING_MIN && !inside_some_word(&r->lex, o.w, o.n, cp, nc))
			return 0;
	}
	return 1;
}

/* ---- A query's alternatives --------------------------------------------- */

/* The tokens of a term as fts's tokenizer reads a query, colocated ones left out. */
struct term_tokens {
	int n;
	int start[SEARCH_TERMS_MAX], end[SEARCH_TERMS_MAX]; /* bytes, in the term's core */
	char w[SEARCH_TERMS_MAX][4 * UNICODE_DISTANCE_CHARS + 1];
	size_t len[SEARCH_TERMS_MAX];
	int too_many;
};

static int add_token(void *p, int tflags, const char *tok, int n, int start, int end)
{
	struct term_tokens *tt = p;

	if (tflags & FTS5_TOKEN_COLOCATED)
		return SQLITE_OK;
	if (tt->n == SEARCH_TERMS_MAX) {
		tt->too_many = 1;
		return SQLITE_OK;
	}
	tt->start[tt->n] = start;
	tt->end[tt->n] = end;
	tt->len[tt->n] = (size_t)n < sizeof(tt->w[0]) ? (size_t)n : 0;
	memcpy(tt->w[tt->n], tok, tt->len[tt->n]);
	tt->w[tt->n][tt->len[tt->n]] = '\0';
	tt->n++;
	return SQLITE_OK;
}

/* Typos a word of nc code points may have: Meilisearch's rule. */
int search_typos_allowed(int nc)
{
	return nc >= TYPO_TWO_FROM ? 2 : nc >= TYPO_ONE_FROM ? 1 : 0;
}

/* A term typos may apply to: typed as a word (not "quoted", not pref*, not -excluded). */
static int may_correct(const char *text, const struct term *t)
{
	return !t->neg && !t->prefix && t->core && !(t->s > text && t->s[-1] == '"');
}

/*
 * Appends to plan the alternatives of term i: its tokens as typed, one of
 * them replaced by a word near it; and the word of the term that reads
 * corrected, the nearest of all. 0, or -1 on an error.
 */
static int plan_term(struct search_reader *r, const char *text, const struct query *q, int i,
		     struct typo_plan *plan)
{
	const struct term *t = &q->t[i];
	struct typo_fix *fix = &plan->fix[i];
	struct near_word near[TYPO_PER_WORD];
	struct term_tokens tt;
	struct near_word best = { "", 0, 3, -1 };
	int j, k, m, nc, room, best_tok = -1;
	int32_t cp[UNICODE_DISTANCE_CHARS];
	int tok_rows[SEARCH_TERMS_MAX]; /* held as typed */

	memset(&tt, 0, sizeof(tt));
	if (r->idx.tok.api.xTokenize(r->idx.tok.inst, &tt, FTS5_TOKENIZE_QUERY, t->core,
				     (int)t->core_n, add_token) != SQLITE_OK ||
	    tt.too_many)
		return 0;
	for (j = 0; j < tt.n; j++)
		if (!tt.len[j])
			return 0; /* a token too long to copy: the term as typed only */
	for (j = 0; j < tt.n; j++) {
		room = TYPO_PER_WORD;
		if (room > TYPO_QUERY_MAX - plan->nalt)
			room = TYPO_QUERY_MAX - plan->nalt;
		/* CJK is searched by bigrams, whose typos are other characters */
		if (room <= 0 || search_cjk_at(tt.w[j], (int)tt.len[j], &k) ||
		    (nc = utf8_code_points(tt.w[j], tt.len[j], cp)) < TYPO_ONE_FROM)
			continue;
		m = search_typo_near(r, tt.w[j], tt.len[j], search_typos_allowed(nc), near, room);
		if (m < 0)
			return -1;
		if (m > 0 && (tok_rows[j] = search_word_held(r, tt.w[j], tt.len[j])) < 0)
			return -1;
		/* a word in no row: the term as typed matches nothing */
		fix->unmatched |= m > 0 && tok_rows[j] == 0;
		for (k = 0; k < m; k++) {
			struct typo_alt *a = &plan->alt[plan->nalt++];
			int x;

			a->term = i;
			a->dist = near[k].dist;
			a->at = plan->text.len;
			for (x = 0; x < tt.n; x++) {
				if (x)
					buf_addc(&plan->text, ' ');
				if (x == j)
					buf_add(&plan->text, near[k].w, near[k].n);
				else
					buf_add(&plan->text, tt.w[x], tt.len[x]);
			}
			a->len = plan->text.len - a->at;
			if (near[k].dist < best.dist ||
			    (near[k].dist == best.dist && near[k].rows > best.rows)) {
				best = near[k];
				best_tok = j;
			}
		}
	}
	if (best_tok < 0)
		return 0;
	fix->has = 1;
	fix->word = best;
	fix->start = (size_t)(t->core + tt.start[best_tok] - text);
	fix->end = (size_t)(t->core + tt.end[best_tok] - text);
	fix->absent = tok_rows[best_tok] == 0;
	return 0;
}

/*
 * The query as it reads corrected: the words the index lacks replaced by
 * their nearest; when it has them all (corrections were looked for since
 * they are in few rows), every word that has a near one.
 */
static void plan_corrected(const char *text, const struct query *q, struct typo_plan *plan)
{
	size_t done = 0;
	int i, absent = 0, any = 0;

	for (i = 0; i < q->n; i++)
		absent |= plan->fix[i].has && plan->fix[i].absent;
	buf_reset(&plan->corrected);
	for (i = 0; i < q->n; i++) {
		const struct typo_fix *f = &plan->fix[i];

		if (!f->has || (absent && !f->absent))
			continue;
		buf_add(&plan->corrected, text + done, f->start - done);
		buf_add(&plan->corrected, f->word.w, f->word.n);
		done = f->end;
		any = 1;
	}
	if (any)
		buf_adds(&plan->corrected, text + done);
}

int search_typo_plan(struct search_reader *r, const char *text, const struct query *q,
		     struct typo_plan *plan)
{
	int i;

	buf_reset(&plan->text);
	plan->nalt = 0;
	for (i = 0; i < q->n; i++) {
		plan->fix[i].has = plan->fix[i].unmatched = 0;
		if (may_correct(text, &q->t[i]) && plan_term(r, text, q, i, plan) < 0)
			return -1;
	}
	plan_corrected(text, q, plan);
	return plan->nalt;
}
