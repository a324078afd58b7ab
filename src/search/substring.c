/*
 * substring.c: queries on substrings, once the words found nothing.
 *
 * What. A term as fts's tokenizer reads it (struct sub_term): one token of
 * SUBSTRING_MIN characters or more is looked for inside words, several are
 * a phrase whose last token may be a word's start. A term's rows are a row
 * list the reader keeps (lists.c) under a key of its own: the union of the
 * rows of the words vocab_tri says hold it (contains_rows()), or the
 * phrase's, from FTS5. search_run_substrings() ranks the rows in every positive
 * term's list and in no excluded one's (search_rank_rows()); a result's snippet
 * comes from tokenizing its columns (search_sub_snippet()), a word that holds the
 * fragment marking the fragment alone.
 *
 * Why this way, what it costs and what it loses against a trigram index of
 * the text: search.c's opening comment.
 */
#include "search/search.h"
#include "search/search-int.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

/* ---- Terms, and their matches in a row ---------------------------------- */

/* The first occurrence of needle (len > 0 bytes) in s (n bytes), or NULL. */
static const char *find_bytes(const char *s, int n, const char *needle, int len)
{
	const char *end = s + n - len + 1, *p;

	for (p = s; p < end && (p = memchr(p, needle[0], (size_t)(end - p))); p++)
		if (memcmp(p, needle, (size_t)len) == 0)
			return p;
	return NULL;
}

static int add_query_token(void *p, int tflags, const char *tok, int n, int start, int end)
{
	struct sub_term *t = p;

	if (tflags & FTS5_TOKEN_COLOCATED)
		return SQLITE_OK;
	if (t->ntok < SUB_TOKENS_MAX) {
		t->tok[t->ntok] = (int)t->text.len;
		t->toklen[t->ntok] = n;
	}
	t->ntok++;
	buf_add(&t->text, tok, (size_t)n);
	buf_addc(&t->text, '\0');
	return SQLITE_OK;
}

/*
 * Reads the query term s (n bytes) into t: a word to be found inside words,
 * or a phrase whose last word may be a word's start; always the latter
 * for a prefix term ("param*": words that start with "param"). An SQLite
 * code.
 */
static int sub_term_read(struct sub_term *t, struct row_tokenizer *tk, const char *s, size_t n,
			 int prefix)
{
	int rc;

	buf_reset(&t->text);
	t->ntok = 0;
	t->list = NULL;
	rc = tk->api.xTokenize(tk->inst, t, FTS5_TOKENIZE_QUERY, s, (int)n, add_query_token);
	t->kind = !prefix && t->ntok == 1 &&
			  chars_upto(t->text.ptr, t->toklen[0], SUBSTRING_MIN) >= SUBSTRING_MIN
		      ? SUB_CONTAINS
		      : SUB_PHRASE;
	return rc;
}

/* The matches of a substring query's positive terms in one column of a row. */
struct sub_scan {
	const struct sub_term *terms;
	int nterms;
	const char *text;        /* the column */
	struct hit *hits;        /* SNIP_HITS_MAX, their byte ranges set */
	int n;
	/* per hit: where the term starts in the folded word (in characters) when
	   the word's bytes are not those of its token (not ASCII); -1 when mapped */
	int fold_at[SNIP_HITS_MAX];
	int pos;                 /* the position of the next token */
	int starts[SUB_TOKENS_MAX]; /* where the last positions start, by position */
	uint64_t state[SEARCH_TERMS_MAX], next[SEARCH_TERMS_MAX]; /* phrases' prefixes matched */
};

static int ascii_only(const char *s, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return 0;
	return 1;
}

static void scan_hit(struct sub_scan *sc, int term, int first, int last, int start, int end,
		     int fold_at)
{
	struct hit *h = &sc->hits[sc->n];

	h->phrase = term;
	h->first = first;
	h->last = last;
	h->start = start;
	h->end = end;
	sc->fold_at[sc->n++] = fold_at;
}

/*
 * A token of the column: a SUB_CONTAINS term matches a word that has it
 * inside; a SUB_PHRASE term matches where its tokens follow each other
 * (shift-and: bit k of state[i] says that its first k + 1 tokens end at
 * the last position), the last as a prefix; tokens at one position (CJK's
 * last character) are alternatives.
 */
static int scan_token(void *p, int tflags, const char *tok, int n, int start, int end)
{
	struct sub_scan *sc = p;
	int colocated = (tflags & FTS5_TOKEN_COLOCATED) != 0, pos, i, k;

	if (!colocated) {
		memcpy(sc->state, sc->next, sizeof(sc->state));
		memset(sc->next, 0, sizeof(sc->next));
		pos = sc->pos++;
		sc->starts[pos % SUB_TOKENS_MAX] = start;
	} else {
		pos = sc->pos - 1;
	}
	for (i = 0; i < sc->nterms && sc->n < SNIP_HITS_MAX; i++) {
		const struct sub_term *t = &sc->terms[i];

		if (t->kind == SUB_CONTAINS) {
			const char *needle = t->text.ptr, *at;
			int len = t->toklen[0], ascii = end - start == n, off;

			if (colocated || !(at = find_bytes(tok, n, needle, len)))
				continue;
			off = (int)(at - tok);
			/* the word's bytes are its token's, case aside */
			if (ascii && ascii_only(sc->text + start, n))
				scan_hit(sc, i, pos, pos, start + off, start + off + len, -1);
			else
				scan_hit(sc, i, pos, pos, start, end, chars_upto(tok, off, off));
		} else if (t->ntok <= SUB_TOKENS_MAX) {
			uint64_t m = sc->state[i] << 1 | 1, b = 0;
			int last = t->ntok - 1, to = end;

			for (k = 0; k <= last; k++) {
				const char *want = t->text.ptr + t->tok[k];
				int wn = t->toklen[k];

				if ((m >> k & 1) && (k < last ? n == wn : n >= wn) &&
				    memcmp(tok, want, (size_t)wn) == 0)
					b |= (uint64_t)1 << k;
			}
			sc->next[i] |= b;
			if (!(b >> last & 1))
				continue;
			/* where the last token ends in a longer word of the same bytes */
			if (n > t->toklen[last] && end - start == n &&
			    ascii_only(sc->text + start, n))
				to = start + t->toklen[last];
			scan_hit(sc, i, pos - last, pos, sc->starts[(pos - last) % SUB_TOKENS_MAX],
				 to, -1);
		}
	}
	/*
	 * One term: its first match anchors the snippet (search_emit_snippet()
	 * keeps the first of the windows that score best), which ends within
	 * SNIP_BYTES of it; the text past that need not be tokenized.
	 */
	if (sc->nterms == 1 && sc->n > 0 && start > sc->hits[0].start + SNIP_SPAN + SNIP_BYTES)
		return SQLITE_DONE;
	return sc->n == SNIP_HITS_MAX ? SQLITE_DONE : SQLITE_OK;
}

static int count_fold(void *p, int tflags, const char *tok, int n, int start, int end)
{
	*(int *)p += chars_upto(tok, n, n);
	return SQLITE_OK;
}

/* The characters the tokenizer folds the character s (n bytes) into: 1, or 0 for a mark. */
static int folded_chars(struct row_tokenizer *tk, const char *s, int n)
{
	int chars = 0;

	if (n == 1)
		return 1;
	tk->api.xTokenize(tk->inst, &chars, FTS5_TOKENIZE_DOCUMENT, s, n, count_fold);
	return chars;
}

/*
 * Narrows h, a word of text, to the characters that fold into the term's
 * len characters from at on (the word folded): é or É for an e.
 */
static void narrow_hit(struct row_tokenizer *tk, const char *text, struct hit *h, int at, int len)
{
	int p = h->start, folded = 0, from = -1, to = -1;

	while (p < h->end && to < 0) {
		int q = next_char(text, h->end, p), f = folded_chars(tk, text + p, q - p);

		if (from < 0 && f > 0 && folded + f > at)
			from = p;
		folded += f;
		if (from >= 0 && folded >= at + len)
			to = q;
		p = q;
	}
	/* and the marks on the last character */
	while (to >= 0 && to < h->end) {
		int q = next_char(text, h->end, to);
		if (folded_chars(tk, text + to, q - to) != 0)
			break;
		to = q;
	}
	if (from >= 0 && to > from) {
		h->start = from;
		h->end = to;
	}
}

/*
 * Appends the snippet of a row for a substring query: of the first of
 * body, title, headings and tags where a positive term matches, found by
 * tokenizing the column (up to SNIP_HITS_MAX matches; a substring marks
 * the part of the word it is); the body's first words when none does.
 * row holds the columns of doc. An SQLite code.
 */
int search_sub_snippet(struct buf *out, sqlite3_stmt *row, const struct sub_term *terms, int nterms,
		struct row_tokenizer *tk)
{
	static const int order[] = { COL_BODY, COL_TITLE, COL_HEADINGS, COL_TAGS };
	struct hit hits[SNIP_HITS_MAX];
	struct sub_scan sc;
	const char *text = NULL;
	int i, len = 0, rc;

	for (i = 0; i < 4; i++) {
		text = (const char *)sqlite3_column_text(row, order[i]);
		len = sqlite3_column_bytes(row, order[i]);
		memset(&sc, 0, sizeof(sc));
		sc.terms = terms;
		sc.nterms = nterms;
		sc.text = text;
		sc.hits = hits;
		if (!text || len == 0)
			continue;
		rc =
		    tk->api.xTokenize(tk->inst, &sc, FTS5_TOKENIZE_DOCUMENT, text, len, scan_token);
		if (rc != SQLITE_OK && rc != SQLITE_DONE)
			return rc;
		if (sc.n > 0)
			break;
	}
	if (i == 4) {
		text = (const char *)sqlite3_column_text(row, COL_BODY);
		len = sqlite3_column_bytes(row, COL_BODY);
		sc.n = 0;
	}
	for (i = 0; i < sc.n; i++)
		if (sc.fold_at[i] >= 0)
			narrow_hit(tk, text, &hits[i], sc.fold_at[i],
				   chars_upto(terms[hits[i].phrase].text.ptr,
					      terms[hits[i].phrase].toklen[0],
					      terms[hits[i].phrase].toklen[0]));
	qsort(hits, (size_t)sc.n, sizeof(*hits), search_by_position);
	search_emit_snippet(out, text ? text : "", text ? len : 0, hits, sc.n);
	return SQLITE_OK;
}

/* ---- Rows --------------------------------------------------------------- */

static void list_add(struct row_list *l, sqlite3_int64 rowid, double freq)
{
	if (l->n == l->alloc) {
		l->alloc = l->alloc ? l->alloc * 2 : 64;
		l->rowid = xrealloc(l->rowid, l->alloc * sizeof(*l->rowid));
		l->freq = xrealloc(l->freq, l->alloc * sizeof(*l->freq));
	}
	l->rowid[l->n] = rowid;
	l->freq[l->n++] = freq;
}

struct row_freq {
	sqlite3_int64 rowid;
	double freq;
};

static int by_rowid(const void *a, const void *b)
{
	const struct row_freq *x = a, *y = b;

	return x->rowid < y->rowid ? -1 : x->rowid > y->rowid;
}

/*
 * Appends to l the union of the rows of all (several lists end to end, ids
 * from lo to hi), a row's frequencies summed: through an array indexed by
 * row id (which the reader keeps zeroed) when the ids are dense enough,
 * else a sort.
 */
static void union_rows(struct search_reader *r, const struct row_list *all, sqlite3_int64 lo,
		       sqlite3_int64 hi, struct row_list *l)
{
	size_t i, span = (size_t)(hi - lo) + 1;

	if (!all->n)
		return;
	if (span <= 16 * all->n + 4096) {
		if (r->acc_cap < span) {
			r->acc = xrealloc(r->acc, span * sizeof(*r->acc));
			memset(r->acc + r->acc_cap, 0, (span - r->acc_cap) * sizeof(*r->acc));
			r->acc_cap = span;
		}
		for (i = 0; i < all->n; i++)
			r->acc[all->rowid[i] - lo] += all->freq[i];
		for (i = 0; i < span; i++) {
			if (r->acc[i] > 0) {
				list_add(l, lo + (sqlite3_int64)i, r->acc[i]);
				r->acc[i] = 0;
			}
		}
	} else {
		struct row_freq *v = xcalloc(all->n, sizeof(*v));

		for (i = 0; i < all->n; i++) {
			v[i].rowid = all->rowid[i];
			v[i].freq = all->freq[i];
		}
		qsort(v, all->n, sizeof(*v), by_rowid);
		for (i = 0; i < all->n; i++) {
			if (l->n > 0 && l->rowid[l->n - 1] == v[i].rowid)
				l->freq[l->n - 1] += v[i].freq;
			else
				list_add(l, v[i].rowid, v[i].freq);
		}
		free(v);
	}
}

/*
 * The rows of the words that have t (a SUB_CONTAINS term) inside, appended
 * to l: vocab_tri gives the words, and the union of their rows is read
 * word by word (not through FTS5 prefix queries, "parameter" * for the
 * words of "rameter", which are fewer but merge their words' position
 * lists first: twice the time). 0 or -1 (logged).
 */
static int contains_rows(struct search_reader *r, struct index_state *st, const struct sub_term *t,
			 struct row_list *l)
{
	sqlite3_stmt *q =
	    search_reader_stmt(r, &r->vocab_scan, "SELECT term FROM vocab_tri WHERE vocab_tri MATCH ?1");
	struct buf match = BUF_INIT, words = BUF_INIT;
	struct row_list all = { 0 };
	const char *needle = t->text.ptr, *w;
	int len = t->toklen[0], rc, ret = 0;
	size_t n = 0;
	sqlite3_int64 lo = INT64_MAX, hi = -1;

	if (!q)
		return -1;
	search_match_add_string(&match, needle, (size_t)len);
	rc = sqlite3_bind_text(q, 1, match.ptr, (int)match.len, SQLITE_STATIC);
	while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *term = (const char *)sqlite3_column_text(q, 0);
		int tn = sqlite3_column_bytes(q, 0);

		rc = SQLITE_OK;
		if (!term || !find_bytes(term, tn, needle, len)) /* the trigrams, case aside */
			continue;
		buf_add(&words, term, (size_t)tn);
		buf_addc(&words, '\0');
		n++;
	}
	sqlite3_reset(q);
	if (rc != SQLITE_DONE)
		ret = search_db_error(r->db, "looking up words");
	for (w = words.ptr; ret == 0 && n > 0; w += strlen(w) + 1, n--) {
		size_t before = all.n;

		buf_reset(&match);
		search_match_add_string(&match, w, strlen(w));
		ret = search_list_read_rows(r, st, match.ptr, match.len, &all);
		if (all.n > before) {
			if (all.rowid[before] < lo)
				lo = all.rowid[before];
			if (all.rowid[all.n - 1] > hi)
				hi = all.rowid[all.n - 1];
		}
	}
	if (ret == 0)
		union_rows(r, &all, lo, hi, l);
	free(all.rowid);
	free(all.freq);
	buf_release(&words);
	buf_release(&match);
	return ret;
}

/*
 * The rows of term q of a substring query (read into t), from the lists
 * the reader keeps, or read and kept: a phrase's from FTS5, the last token
 * a prefix; a substring's from contains_rows(). NULL on an error (logged).
 */
static struct row_list *sub_rows(struct search_reader *r, const struct term *q, struct sub_term *t)
{
	struct index_state *st = &r->idx;
	struct buf key = BUF_INIT;
	struct row_list *l;
	int ret;

	if (t->kind == SUB_PHRASE) {
		search_match_add_string(&key, q->core, q->core_n);
		buf_adds(&key, " *");
	} else { /* not a phrase's key: those start with a quote */
		buf_addc(&key, '~');
		buf_add(&key, t->text.ptr, (size_t)t->toklen[0]);
	}
	l = search_list_find(r, st, key.ptr, key.len);
	if (!l) {
		l = search_list_new(r, key.ptr, key.len);
		ret = t->kind == SUB_PHRASE ? search_list_read_rows(r, st, key.ptr, key.len, l)
					    : contains_rows(r, st, t, l);
		if (ret < 0) {
			search_list_free(l);
			l = NULL;
		} else {
			search_list_keep(r, st, l);
		}
	}
	buf_release(&key);
	return l;
}

/* ---- The query ---------------------------------------------------------- */

/*
 * The query on substrings, once the words found nothing (see search.c's
 * opening comment): each term's rows (sub_rows()), those in every positive
 * term's and no excluded one's ranked (search_rank_rows()), and the page's results
 * with the matches found in their text (search_sub_snippet()). Inside a read
 * transaction. 0 or -1 (logged).
 */
int search_run_substrings(struct search_reader *r, const struct query *q, int limit, int offset,
		   struct buf *out, long long *total)
{
	struct index_state *st = &r->idx;
	struct row_list *pos[SEARCH_TERMS_MAX], *neg[SEARCH_TERMS_MAX];
	double scale = 1.0;
	size_t k;
	int npos = 0, nneg = 0, i, neg_pass, ret = 0;

	*total = 0;
	r->ntop = 0;
	r->k = (size_t)offset + (size_t)limit;
	if (search_load_lengths(r) < 0)
		return -1;
	if (st->lists_version != r->data_version) {
		search_lists_clear(st);
		st->lists_version = r->data_version;
	}
	r->nquery++;
	for (neg_pass = 0; neg_pass < 2; neg_pass++) {
		for (i = 0; i < q->n; i++) {
			struct sub_term *t = &r->sub[npos + nneg];

			if (q->t[i].neg != neg_pass)
				continue;
			if (sub_term_read(t, &st->tok, q->t[i].core, q->t[i].core_n, q->t[i].prefix) !=
			    SQLITE_OK)
				return log_error("search: cannot tokenize a query");
			if (t->ntok == 0) /* nothing to look for, as FTS5 drops such a phrase */
				continue;
			if (!(t->list = sub_rows(r, &q->t[i], t)))
				return -1;
			if (!neg_pass)
				pos[npos++] = t->list;
			else if (t->list->n > 0)
				neg[nneg++] = t->list;
		}
	}
	r->nsub = npos;
	for (i = 0; i < npos; i++)
		if (pos[i]->n == 0)
			return 0;
	if (npos == 0)
		return 0;
	search_rank_rows(r, pos, npos, NULL, neg, nneg, 0, total); /* no IDF: the caller scales */
	qsort(r->top, r->ntop, sizeof(*r->top), search_by_rank);
	if (npos == 1)
		scale = search_idf_of(st->nrow_all, *total);
	r->substrings = 1;
	for (k = (size_t)offset; ret == 0 && k < r->ntop; k++)
		ret = search_add_result(r, &r->top[k], scale, k == (size_t)offset, out);
	r->substrings = 0;
	return ret;
}

/*
 * Whether substrings are worth looking for, once the words found nothing:
 * when some positive term is no word of any note (a fragment, "rameter").
 * Terms that are words and merely never meet would only find noise as
 * substrings ("man" in "manual"). 1, 0, or -1 (logged).
 */
int search_want_substrings(struct search_reader *r, const struct query *q)
{
	sqlite3_stmt *st;
	int i, rc;

	if (q->npos == 1 && q->n == 1)
		return 1; /* the query that found nothing was that term alone */
	st = search_reader_stmt(r, &r->exists, "SELECT 1 FROM fts WHERE fts MATCH ?1 LIMIT 1");
	if (!st)
		return -1;
	for (i = 0; i < q->n; i++) {
		if (q->t[i].neg)
			continue;
		buf_reset(&r->match);
		search_match_add_term(&r->match, &q->t[i]);
		rc = sqlite3_bind_text(st, 1, r->match.ptr, (int)r->match.len, SQLITE_STATIC);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc == SQLITE_DONE)
			return 1;
		if (rc != SQLITE_ROW)
			return search_db_error(r->db, "query");
	}
	return 0;
}
