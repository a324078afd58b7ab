/*
 * snippet.c: a result's snippet, about 30 words around its best match.
 *
 * What. From a column's text and its matches as token positions (struct
 * hit, recorded by quire_rank() or quire_hits() in rank.c), search_make_snippet()
 * finds the matches' bytes by running the index's tokenizer over the text,
 * only up to the end of the snippet once its anchor is sure (map_token(),
 * settle()); then the window with most distinct phrases is chosen and its
 * words appended, whitespace folded, the matches between MARK_OPEN and
 * MARK_CLOSE, overlapping ones merged. search_emit_snippet() is that last step
 * alone, for matches already in bytes (substring.c's).
 *
 * Rejected: FTS5's snippet() and highlight() (search.c's opening comment).
 */
#include "search/search.h"
#include "search/search-int.h"

#include <stdint.h>

#include <sqlite3.h>

/* The snippet: words around the anchor, bytes at most (whole words win); SNIP_SPAN, SNIP_BYTES: search-int.h. */
#define SNIP_WORDS_BEFORE 6
#define SNIP_BYTES_BEFORE 60
#define SNIP_WORDS 30

struct hit_map {
	struct hit *hits;
	int n;
	int done;          /* hits before this one are fully mapped */
	int pos;           /* position of the next token */
	int base;          /* where in the text the tokenizer started */
	int max;           /* the last position needed */
	/* stopping early, once the anchor is known (see settle()) */
	int nphrase;       /* distinct phrases among the hits: no window has more */
	int next;          /* the first hit whose window is not counted yet */
	int stop;          /* hits starting past this byte do not matter; -1: not known yet */
};

/* The distinct phrases among the mapped hits from i on that start within SNIP_SPAN of hit i. */
static int window_score(const struct hit *hits, int n, int i)
{
	uint64_t seen = 0;
	int j, score = 0;

	for (j = i; j < n && hits[j].start <= hits[i].start + SNIP_SPAN; j++) {
		uint64_t bit = (uint64_t)1 << (hits[j].phrase & 63);
		if (hits[j].start >= 0 && hits[j].end >= 0 && !(seen & bit)) {
			seen |= bit;
			score++;
		}
	}
	return score;
}

/*
 * Counts the windows of the hits that the token starting at byte start
 * has settled: those of mapped hits starting more than SNIP_SPAN before
 * it, when every hit begun is mapped. The first window with every phrase
 * is the anchor search_make_snippet() will choose (a later one needs more to win),
 * and the snippet ends within SNIP_BYTES of it: m->stop is set past that,
 * and the text after it need not be tokenized.
 */
static void settle(struct hit_map *m, int start)
{
	while (m->stop < 0 && m->next < m->done && start > m->hits[m->next].start + SNIP_SPAN) {
		const struct hit *h = &m->hits[m->next++];

		if (h->start >= 0 && h->end >= 0 &&
		    window_score(m->hits, m->n, (int)(h - m->hits)) == m->nphrase)
			m->stop = (h->end > h->start + SNIP_BYTES ? h->end : h->start + SNIP_BYTES) + 8;
	}
}

static int map_token(void *p, int tflags, const char *tok, int n, int start, int end)
{
	struct hit_map *m = p;
	int pos, i;

	if (tflags & FTS5_TOKEN_COLOCATED)
		return SQLITE_OK;
	start += m->base;
	end += m->base;
	pos = m->pos++;
	for (i = m->done; i < m->n && m->hits[i].first <= pos; i++) {
		if (m->hits[i].first == pos)
			m->hits[i].start = start;
		if (m->hits[i].last == pos)
			m->hits[i].end = end;
		if (i == m->done && m->hits[i].last <= pos)
			m->done++;
	}
	if (pos >= m->max)
		return SQLITE_DONE;
	/* every hit begun is mapped: the windows before this token are settled */
	if (m->done == m->n || m->hits[m->done].first > pos) {
		if (m->stop < 0 && m->next < m->done)
			settle(m, start);
		if (m->stop >= 0 && start > m->stop)
			return SQLITE_DONE;
	}
	return SQLITE_OK;
}

/* The order of hits: by their first token, then their last. */
int search_by_position(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;

	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->last < y->last ? -1 : x->last > y->last;
}

static int is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int prev_char(const char *t, int p)
{
	p--;
	while (p > 0 && ((unsigned char)t[p] & 0xC0) == 0x80)
		p--;
	return p;
}

/* A few words before the anchor, cut at a word start when there is one. */
static int window_start(const char *t, int anchor)
{
	/* an anchor inside a word (a substring match) does not count its own word */
	int p = anchor, words = anchor > 0 && !is_ws(t[anchor - 1]) ? -1 : 0, k;

	while (p > 0) {
		int q = prev_char(t, p);
		if (anchor - q > SNIP_BYTES_BEFORE)
			break;
		p = q;
		if (!is_ws(t[p]) && (p == 0 || is_ws(t[p - 1])) && ++words >= SNIP_WORDS_BEFORE)
			return p;
	}
	if (p == 0 || is_ws(t[p - 1]))
		return p;
	for (k = p; k < anchor; k++) {
		if (is_ws(t[k])) {
			while (k < anchor && is_ws(t[k]))
				k++;
			return k;
		}
	}
	return p;
}

/* Up to SNIP_WORDS words or SNIP_BYTES bytes from start, and past min. */
static int window_end(const char *t, int len, int start, int min)
{
	int p = start, words = 0, last_ws = -1;

	while (p < len) {
		if (p >= min) {
			if (p - start >= SNIP_BYTES)
				break;
			if (!is_ws(t[p]) && (p == start || is_ws(t[p - 1])) && words >= SNIP_WORDS)
				break;
		}
		if (!is_ws(t[p]) && (p == start || is_ws(t[p - 1])))
			words++;
		if (is_ws(t[p]))
			last_ws = p;
		p = next_char(t, len, p);
	}
	if (p < len && !is_ws(t[p]) && p > start && !is_ws(t[p - 1]) && last_ws >= min)
		p = last_ws;
	while (p > start && p > min && is_ws(t[p - 1]))
		p--;
	return p;
}

static int only_ws(const char *t, int from, int to)
{
	for (; from < to; from++)
		if (!is_ws(t[from]))
			return 0;
	return 1;
}

/*
 * Appends t[start..end) with whitespace runs as one space, control
 * characters dropped, and the byte ranges of hits (sorted by start)
 * between MARK_OPEN and MARK_CLOSE, overlapping ones merged.
 */
static void emit_window(struct buf *out, const char *t, int len, int start, int end,
			const struct hit *hits, int n)
{
	int p, h = 0, open_end = -1, in_ws = 0;

	if (start > 0 && !only_ws(t, 0, start))
		buf_adds(out, "\xE2\x80\xA6");
	for (p = start; p < end; p++) {
		unsigned char c = (unsigned char)t[p];

		if (open_end < 0) {
			while (h < n && (hits[h].start < p || hits[h].end <= hits[h].start))
				h++;
			if (h < n && hits[h].start == p) {
				buf_addc(out, MARK_OPEN);
				open_end = hits[h].end;
			}
		}
		if (open_end >= 0) {
			/* absorb every hit that starts inside the open one */
			while (h < n && hits[h].start < open_end) {
				if (hits[h].end > open_end)
					open_end = hits[h].end;
				h++;
			}
		}
		if (is_ws((char)c)) {
			if (!in_ws)
				buf_addc(out, ' ');
			in_ws = 1;
		} else if (c >= 0x20) {
			buf_addc(out, (char)c);
			in_ws = 0;
		}
		if (open_end >= 0 && (p + 1 == open_end || p + 1 == end)) {
			buf_addc(out, MARK_CLOSE);
			open_end = -1;
		}
	}
	if (end < len && !only_ws(t, end, len))
		buf_adds(out, "\xE2\x80\xA6");
}

static int is_ascii_alnum(unsigned char c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/*
 * Where the tokenizer may start in text (len bytes) to reach token number
 * target without turning the tokens before it into positions one by one:
 * the start of that token, or of an earlier one, as far as the text is
 * ASCII, whose tokens under unicode61 are the runs of letters and digits
 * (a token reaching into non-ASCII text is left to the tokenizer). *pos
 * gets the number of the first token from there.
 */
static int ascii_skip(const char *text, int len, int target, int *pos)
{
	const unsigned char *t = (const unsigned char *)text;
	int i = 0, j, tokens = 0;

	while (i < len && t[i] < 0x80) {
		if (!is_ascii_alnum(t[i])) {
			i++;
			continue;
		}
		if (tokens == target)
			break;
		for (j = i; j < len && is_ascii_alnum(t[j]); j++)
			;
		if (j < len && t[j] >= 0x80)
			break;
		tokens++;
		i = j;
	}
	*pos = tokens;
	return i;
}

/*
 * Appends to out about 30 words of text (len bytes): around the window
 * with most distinct phrases among hits (token positions in this text,
 * sorted), matches between MARK_OPEN and MARK_CLOSE; the first words when
 * there are no hits. Tokenizes up to the last hit at most, and only up to
 * the end of the snippet when its window has every phrase (map_token()).
 * An SQLite code.
 */
int search_make_snippet(struct buf *out, const char *text, int len, struct hit *hits, int n,
		 struct row_tokenizer *tk)
{
	struct hit_map map = { hits, n, 0, 0, 0, -1, 0, 0, -1 };
	uint64_t phrases = 0;
	int i, rc;

	for (i = 0; i < n; i++) {
		hits[i].start = hits[i].end = -1;
		if (hits[i].last > map.max)
			map.max = hits[i].last;
		phrases |= (uint64_t)1 << (hits[i].phrase & 63);
	}
	for (; phrases; phrases &= phrases - 1)
		map.nphrase++;
	if (n > 0) {
		map.base = ascii_skip(text, len, hits[0].first, &map.pos);
		rc = tk->api.xTokenize(tk->inst, &map, FTS5_TOKENIZE_DOCUMENT, text + map.base,
				       len - map.base, map_token);
		if (rc != SQLITE_OK && rc != SQLITE_DONE)
			return rc;
	}
	/*
	 * When tokenizing stopped early, the hits past map.stop are not mapped:
	 * those before it count the same, and none after the anchor can beat it.
	 */
	search_emit_snippet(out, text, len, hits, n);
	return SQLITE_OK;
}

/*
 * Appends to out the snippet of text (len bytes) around the anchor: the
 * hit (sorted, mapped to bytes; those with start or end -1 are skipped)
 * followed closely by most distinct phrases. The first words when none.
 */
void search_emit_snippet(struct buf *out, const char *text, int len, const struct hit *hits, int n)
{
	int best = -1, best_score = -1, anchor = 0, anchor_end = 0, start, end, i;

	for (i = 0; i < n; i++) {
		int score;

		if (hits[i].start < 0 || hits[i].end < 0)
			continue;
		score = window_score(hits, n, i);
		if (score > best_score) {
			best_score = score;
			best = i;
		}
	}
	if (best >= 0) {
		anchor = hits[best].start;
		anchor_end = hits[best].end;
	}
	start = window_start(text, anchor);
	while (start < len && start < anchor && is_ws(text[start]))
		start++;
	end = window_end(text, len, start, anchor_end);
	emit_window(out, text, len, start, end, hits, n);
}
