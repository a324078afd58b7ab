/*
 * query.c: what a visitor typed, as terms and as an FTS5 MATCH expression.
 *
 * What. search_query_parse() splits the text into terms (words, "phrases",
 * prefix*, -excluded), drops those without a letter or digit and refuses
 * what is a bad request; search_build_match() writes the terms as a MATCH
 * expression in which each is a double-quoted FTS5 string, so that nothing
 * typed is FTS5 syntax and the expression cannot fail to parse.
 */
#include "search/search.h"
#include "search/search-int.h"
#include "util/unicode.h"

#include <stdint.h>
#include <string.h>

/* The fewest letters or digits a prefix query needs. */
#define PREFIX_MIN 3

/* Length of the blank at s (a space or control character), or 0. */
static int blank_at(const char *s, size_t len)
{
	unsigned char c = (unsigned char)s[0];
	int32_t cp;
	int n;

	if (c < 0x80)
		return c <= 0x20 || c == 0x7f;
	n = utf8_decode(s, len, &cp);
	if (n < 0)
		return 1;
	return unicode_is_space(cp) ? n : 0;
}

static int char_len(const char *s, size_t len)
{
	int32_t cp;
	int n = (unsigned char)s[0] < 0x80 ? 1 : utf8_decode(s, len, &cp);

	return n < 1 ? 1 : n;
}

/*
 * Fills in core, chars and the CJK prefix rule; returns 0 for a term with
 * no letter or digit (nothing to search for).
 */
static int classify(struct term *t)
{
	const char *end = t->s + t->n, *p, *last = NULL;
	int run = 0, last_cjk_run = 0, alnum = 0;

	t->core = NULL;
	t->chars = 0;
	for (p = t->s; p < end;) {
		int32_t cp = 0;
		int n = utf8_decode(p, (size_t)(end - p), &cp), l;

		if (n < 1)
			n = 1;
		if (search_cjk_at(p, (int)(end - p), &l)) {
			run++;
			last_cjk_run = run;
		} else {
			run = 0;
			if (unicode_is_alnum(cp))
				last_cjk_run = 0;
		}
		if (unicode_is_alnum(cp) || search_is_cjk((uint32_t)cp)) {
			if (!t->core)
				t->core = p;
			last = p + n;
			alnum++;
		}
		p += n;
	}
	if (!t->core)
		return 0;
	t->core_n = (size_t)(last - t->core);
	for (p = t->core; p < last; p += char_len(p, (size_t)(last - p)))
		t->chars++;
	/* one CJK character is no bigram: look for the bigrams it starts */
	if (last_cjk_run == 1)
		t->prefix = 1;
	/*
	 * FTS5 merges the doclists of every word with the prefix: "th*" costs
	 * 25 ms on 10,000 notes, "par*" 5 ms. Shorter ones are words.
	 */
	else if (t->prefix && alnum < PREFIX_MIN)
		t->prefix = 0;
	return 1;
}

/* Splits q into terms. 0, or -1 with *err set (a 400). */
int search_query_parse(const char *q, size_t len, struct query *out, const char **err)
{
	size_t i = 0;
	int blank_only = 1;

	out->n = out->npos = 0;
	while (i < len) {
		struct term t = { 0 };
		int b = blank_at(q + i, len - i);

		if (b) {
			i += (size_t)b;
			continue;
		}
		blank_only = 0;
		if (q[i] == '-' && i + 1 < len && !blank_at(q + i + 1, len - i - 1)) {
			t.neg = 1;
			i++;
		}
		if (q[i] == '"') {
			const char *close = memchr(q + i + 1, '"', len - i - 1);

			t.s = q + i + 1;
			t.n = close ? (size_t)(close - t.s) : len - i - 1;
			i = close ? (size_t)(close - q) + 1 : len;
			if (i < len && q[i] == '*') {
				t.prefix = 1;
				while (i < len && q[i] == '*')
					i++;
			}
		} else {
			t.s = q + i;
			while (i < len && q[i] != '"' && !blank_at(q + i, len - i))
				i += (size_t)char_len(q + i, len - i);
			t.n = (size_t)(q + i - t.s);
			while (t.n > 0 && t.s[t.n - 1] == '*') {
				t.prefix = 1;
				t.n--;
			}
		}
		if (!classify(&t))
			continue;
		if (out->n == SEARCH_TERMS_MAX) {
			*err = "too many terms in the query";
			return -1;
		}
		out->t[out->n++] = t;
		if (!t.neg)
			out->npos++;
	}
	if (blank_only) {
		*err = "empty query";
		return -1;
	}
	if (out->n > 0 && out->npos == 0) {
		*err = "a query needs a term that is not excluded";
		return -1;
	}
	return 0;
}

/* Appends s as an FTS5 string: double-quoted, inner quotes doubled. */
void search_match_add_string(struct buf *b, const char *s, size_t n)
{
	const char *q;

	buf_addc(b, '"');
	while (n > 0 && (q = memchr(s, '"', n))) {
		buf_add(b, s, (size_t)(q - s) + 1);
		buf_addc(b, '"');
		n -= (size_t)(q - s) + 1;
		s = q + 1;
	}
	buf_add(b, s, n);
	buf_addc(b, '"');
}

/* Appends term t to b for the word index: its string, and " *" for a prefix. */
void search_match_add_term(struct buf *b, const struct term *t)
{
	search_match_add_string(b, t->s, t->n);
	if (t->prefix)
		buf_adds(b, " *");
}

/* Whether every term has the SUBSTRING_MIN characters a substring needs (vocab_tri's trigram). */
int search_substring_terms(const struct query *q)
{
	int i;

	for (i = 0; i < q->n; i++)
		if (q->t[i].chars < SUBSTRING_MIN)
			return 0;
	return q->n > 0;
}

/*
 * The MATCH expression: (p1 AND p2 ..) NOT (n1 OR n2 ..). FTS5 numbers
 * the phrases in this order: phrase i < q->npos is positive term i, whose
 * text in b is span[i][0] bytes from the start, span[i][1] long.
 */
void search_build_match(const struct query *q, struct buf *b, size_t span[SEARCH_PHRASES_MAX][2])
{
	search_build_typo_match(q, NULL, NULL, b, span);
}

/*
 * The MATCH expression of a query with typos forgiven: each positive term
 * with alternatives becomes ("typed" OR "alt1" OR ..), the others as in
 * search_build_match(). The phrases are numbered in this order; tq says
 * for each positive one which positive term it stands for and how many
 * edits it is from what was typed, and span where it is in b. Without a
 * plan (NULL), the query as typed; tq may then be NULL.
 */
void search_build_typo_match(const struct query *q, const struct typo_plan *plan,
			     struct typo_query *tq, struct buf *b,
			     size_t span[SEARCH_PHRASES_MAX][2])
{
	int neg, i, a, first, k = 0, term = 0;

	buf_reset(b);
	for (neg = 0; neg < 2; neg++) {
		first = 1;
		for (i = 0; i < q->n; i++) {
			const struct term *t = &q->t[i];
			int nalt = 0;

			if (t->neg != neg)
				continue;
			if (first)
				buf_adds(b, neg ? " NOT (" : "(");
			else
				buf_adds(b, neg ? " OR " : " AND ");
			first = 0;
			for (a = 0; !neg && plan && a < plan->nalt; a++)
				nalt += plan->alt[a].term == i;
			if (nalt)
				buf_addc(b, '(');
			if (!neg && tq) {
				tq->term_of[k] = term;
				tq->dist[k] = 0;
				tq->skip[k] = nalt && plan->fix[i].unmatched;
			}
			if (!neg)
				span[k][0] = b->len;
			search_match_add_term(b, t);
			if (!neg) {
				span[k][1] = b->len - span[k][0];
				k++;
			}
			for (a = 0; nalt && a < plan->nalt; a++) {
				const struct typo_alt *alt = &plan->alt[a];

				if (alt->term != i)
					continue;
				buf_adds(b, " OR ");
				span[k][0] = b->len;
				tq->term_of[k] = term;
				tq->dist[k] = alt->dist;
				tq->skip[k] = 0;
				search_match_add_string(b, plan->text.ptr + alt->at, alt->len);
				span[k][1] = b->len - span[k][0];
				k++;
			}
			if (nalt)
				buf_addc(b, ')');
			if (!neg)
				term++;
		}
		if (!first)
			buf_addc(b, ')');
	}
	if (tq) {
		tq->nterm = term;
		tq->npos = k;
	}
}
