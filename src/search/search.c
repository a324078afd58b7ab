/*
 * search.c: the search index on SQLite FTS5.
 *
 * What. A database of one row per published note, a full-text index of its
 * words, a trigram index of those words (for substrings), a writer for the
 * loader, read-only connections for the serving threads, and the parser
 * that turns what a visitor typed into an FTS5 query that cannot fail to
 * parse.
 *
 * How, storing. The text lives once, in the plain table `doc` (url UNIQUE,
 * so a put finds its row through a b-tree). An FTS5 table indexes it as
 * external content, kept in step with doc by the writer (not by triggers:
 * see struct staged):
 *
 *   fts  tokenize 'cjk unicode61 remove_diacritics 2': unicode61 (cafe =
 *        café, Ångström = angstrom) wrapped by `cjk`, a tokenizer of ours
 *        that hands everything but Chinese, Japanese and Korean text to
 *        unicode61 unchanged and splits each CJK run, which unicode61
 *        would keep as one token however long, into overlapping bigrams
 *        (東京タワー: 東京 京タ タワ ワー), the last character also indexed
 *        alone at the last bigram's position. A query of two or more CJK
 *        characters is then a phrase of bigrams, an exact substring match;
 *        a query of one character is the prefix query "東" *.
 *
 * Substrings ("shell" finds PowerShell, "rameter" finds parameter) come
 * from the words, not from the text: `vocab` holds every word of fts of
 * three characters or more (its terms, folded as fts folds them), and
 * `vocab_tri` (tokenize 'trigram', content vocab) finds the words that have
 * a fragment inside. Words are never removed: the words of a deleted note
 * stay, and cost a query only the read of their empty rows. The writer
 * adds the words of the rows it puts, tokenizing them as fts does. Filling
 * a fresh index the words can wait (search_defer_substrings()): the rows'
 * ids go to `vocab_todo`, and search_fill_substrings() lists their words
 * afterwards, from a pass over fts's own terms in order (fts5vocab) when
 * many rows wait. On the 10,000 notes of bench/vaults/v10k, as the loader
 * fills a fresh index (CPU of its thread): words 2.5 s, substrings 0.24 s
 * in 3 steps (the trigram index of the text this replaced took 9.1 s);
 * the file is 90 MB (232 MB): doc 63, fts 22, vocab and vocab_tri 1.
 *
 * The writer stages puts and deletes in memory and applies them at commit
 * in the order FTS5 writes cheaply (see struct staged); a put of what is
 * stored costs one lookup and writes nothing, so after a restart only the
 * notes that changed are written again.
 *
 * How, querying. The visitor's text never reaches MATCH as such. It is
 * split into terms (words, "phrases", prefix*, -excluded); each term is
 * emitted as an FTS5 string, double-quoted with inner quotes doubled, so
 * NEAR(, AND, col:, ^ and * are only text to search for. Terms without a
 * letter or digit are dropped. Exclusions become NOT (...); a query of
 * exclusions alone is a 400: FTS5 cannot express "every note but", and
 * listing the vault is not search. One statement visits every matching
 * row: quire_rank(), our copy of FTS5's bm25() (title 10, headings 5, tags
 * 3, body 1; the same scores), keeps the best offset + limit rows in a
 * heap with where their matches are, and total is counted on the way. The
 * IDFs of a query of several phrases need the rows each phrase is in, a
 * pass over them: the counts are kept per reader until the index changes.
 * Snippets are then made in C from the doc row: the index's tokenizer runs
 * over the matched column to turn token positions into bytes, up to the
 * end of the snippet once its anchor is sure; about 30 words around the
 * window with most distinct terms, overlapping matches merged, are marked
 * with \x01 and \x02 (which search_put() replaces in any text) and split
 * into JSON segments.
 *
 * When the words find nothing, some positive term is no word of any note
 * and every term has three characters (the least a trigram matches), the
 * terms are looked up as substrings (run_substrings()). A term that fts's
 * tokenizer reads as one token is looked for inside words: vocab_tri gives
 * the words that hold it, and the term's rows are the union of theirs
 * (read word by word from fts, summing each row's weighted frequencies); a
 * term of several tokens is their phrase, the last one a word's start
 * ("Get-ChildI"). The rows in every positive term's union and in no
 * excluded one's are ranked with bm25 on those frequencies (IDF left out,
 * as for one phrase) and the unions are kept per reader with the word
 * lists, so a fragment asked again (the search box asks while one types)
 * costs the intersection. A result's snippet comes from tokenizing its
 * column (sub_snippet()): a word holding the fragment marks the fragment
 * alone, "Power[Shell]", "Å[snéfj]ord" for snefj. On v10k (bench/search-
 * bench.c, 5,000 queries a kind, the trigram index of the text before):
 * ends of words ("rameter") 1,206 queries/s, p99 2.4 ms (411, 11 ms);
 * starts of words as typed ("par", "para") 801/s, p99 8.8 ms (714, 7.1 ms);
 * the first ask of 600 random fragments p50 0.5 ms, p99 8.7 ms (0.9, 7.0).
 * The cost is the rows of the words read, so a short fragment inside
 * hundreds of frequent words is the worst case: "ion" (909 words, 131,000
 * rows read) 20 to 24 ms the first time (3 ms), then 0.3 ms.
 *
 * What substrings lose against the trigram index of the text: a fragment
 * across a word boundary that cuts the first word ("et-ChildItem", or the
 * quoted "ildit lists": a phrase whose first word is no word); and the
 * separators inside a term of several words are not compared ("a-b" is
 * the phrase a b). The words of rows put while substrings are deferred are
 * found once search_fill_substrings() has listed them, as the rows were
 * before. CJK is as it was: the words (bigrams) answer substrings of CJK.
 *
 * Rejected:
 * - The trigram index of the text (tri, schema 2), however tuned: every
 *   character is a token, and FTS5's hash and tokenizer take the time
 *   whatever is stored. On v10k's 55 MB of text, with automerge off and
 *   one transaction ('rebuild', then 'optimize'): detail=full 5.9 + 1.3 s
 *   (140 MB), pgsz 16000 7.5 + 1.6 s, detail=column 4.1 + 0.6 s (36 MB),
 *   detail=none 4.3 + 0.3 s (12 MB); the words alone take 2.5 s of the
 *   5 s. And with detail=column or none FTS5 refuses phrases ("phrase
 *   queries are not supported"): a substring, a phrase of trigrams, would
 *   be a LIKE per column that SQLite checks against the text, with no
 *   positions for ranking or snippets.
 * - A word's rows through FTS5 prefix queries on the shortest prefix that
 *   holds the fragment ("parameter" * for every word of "rameter"): fewer
 *   queries (571 for "ion", not 909) but twice the time, FTS5 merging each
 *   prefix's position lists before the first row. Nor all the words in one
 *   statement: an OR of them visits every word per row (48 ms for "ion"
 *   without ranking), and xQueryPhrase() over the OR's phrases pays the
 *   OR's setup on top (26 ms, not 24).
 * - ORDER BY rank with bm25() and snippet() in the query. bm25() spends
 *   most of its time on a docsize lookup per row (12 ms for a word in 8,000
 *   of 10,000 notes; 1 to 4 ms now, the lengths being cached per reader);
 *   FTS5 then sorts every row; and each result's snippet re-evaluates the
 *   whole expression (a prefix query merges its doclists again per row:
 *   70 ms for "param*"). And highlight() and snippet() in SQLite 3.40
 *   repeat text when matches overlap (trigram "人人人" in 人人人人 prints the
 *   row twice), which bigrams and trigrams produce routinely.
 * - CJK through a trigram index alone: trigram cannot match one or two
 *   characters, the length of most Chinese and Japanese words, and
 *   LIKE '%東京%' on fewer than three characters reads every row.
 * - Merging substring hits into word results, or looking for substrings of
 *   words that are in the index but never together: they are the same
 *   notes again or fragments (the "cat" of "concatenate").
 * - One FTS5 table storing its own content: a put must find the old row by
 *   url, and FTS5 has no index on an UNINDEXED column (a full scan per
 *   put).
 *
 * The index is a cache: a file that is not a database, corrupt on the first
 * reads, or of another user_version is deleted and recreated, and the
 * caller is told to put every note again; one of schema 1 or 2 is upgraded
 * in place (see SCHEMA_VERSION).
 */
#include "search/search.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

/*
 * Bump when the tables, the tokenizers or the rank change. 1 kept fts and
 * tri in step with triggers on doc; 2 is the same tables without them; 3
 * replaces tri (a trigram index of the text) with vocab and vocab_tri (a
 * trigram index of the words). open_writer() makes a 3 of a 1 or a 2 in
 * place: the rows of doc and fts are kept, and the words are listed again.
 */
#define SCHEMA_VERSION 3
#define BUSY_TIMEOUT_MS 5000

/* Columns of fts, in order. */
enum { COL_URL, COL_TITLE, COL_HEADINGS, COL_TAGS, COL_BODY, NCOLS };

/* The snippet: words around the anchor, bytes at most (whole words win). */
#define SNIP_HITS_MAX 64      /* matches considered when choosing the window */
#define SNIP_SPAN 200         /* bytes after a match where other terms count */
#define SNIP_WORDS_BEFORE 6
#define SNIP_BYTES_BEFORE 60
#define SNIP_WORDS 30
#define SNIP_BYTES 240

/* The fewest letters or digits a prefix query needs. */
#define PREFIX_MIN 3

/* The fewest characters of a substring, and of a word worth listing in vocab. */
#define SUBSTRING_MIN 3

#define MARK_OPEN '\x01'
#define MARK_CLOSE '\x02'

/*
 * The words of fts (of SUBSTRING_MIN characters or more) in vocab, and
 * their trigrams in vocab_tri; vocab_todo holds the rows of doc whose words
 * may be missing from vocab, and id 0 stands for every row: a pass over
 * fts's terms in order, done up to `after`. Words are never removed.
 */
#define VOCAB_SQL \
	"CREATE TABLE IF NOT EXISTS vocab(id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);" \
	"CREATE VIRTUAL TABLE IF NOT EXISTS vocab_tri USING fts5(term," \
	" content='vocab', content_rowid='id', tokenize='trigram');" \
	"CREATE TABLE IF NOT EXISTS vocab_todo(id INTEGER PRIMARY KEY, after TEXT);"

/*
 * The tokenizer must be that of index_tokenizer, which readers run for
 * snippets and substrings, and the writer for the words of vocab. The
 * writer keeps fts and vocab in step with doc itself (see apply_staged()).
 */
static const char schema_sql[] =
	"CREATE TABLE doc("
	" id INTEGER PRIMARY KEY,"
	" url TEXT NOT NULL UNIQUE,"
	" title TEXT NOT NULL,"
	" headings TEXT NOT NULL,"
	" tags TEXT NOT NULL,"
	" body TEXT NOT NULL);"
	"CREATE VIRTUAL TABLE fts USING fts5(url UNINDEXED, title, headings, tags, body,"
	" content='doc', content_rowid='id',"
	" tokenize='cjk unicode61 remove_diacritics 2');"
	VOCAB_SQL;

/*
 * What makes an index of schema 1 or 2 one of schema 3: the same doc and
 * fts, no triggers (1), no tri, and the vocabulary to be listed from fts.
 */
static const char upgrade_sql[] =
	"BEGIN IMMEDIATE;"
	" DROP TRIGGER IF EXISTS doc_insert;"
	" DROP TRIGGER IF EXISTS doc_delete;"
	" DROP TRIGGER IF EXISTS doc_update;"
	" DROP TABLE IF EXISTS tri;"
	" DROP TABLE IF EXISTS tri_todo;"
	VOCAB_SQL
	" DELETE FROM vocab_todo;"
	" INSERT INTO vocab_todo(id, after) VALUES(0, '');"
	" PRAGMA user_version = 3;"
	"COMMIT;";

/* Characters in s (n bytes of UTF-8), counting up to max at most. */
static int chars_upto(const char *s, int n, int max)
{
	int i, chars = 0;

	for (i = 0; i < n && chars < max; i++)
		chars += ((unsigned char)s[i] & 0xC0) != 0x80;
	return chars;
}

/* ---- CJK ---------------------------------------------------------------- */

/* Scripts written without spaces between words, plus Hangul. */
static int is_cjk(uint32_t c)
{
	return (c >= 0x1100 && c <= 0x11FF) ||  /* Hangul Jamo */
	       (c >= 0x2E80 && c <= 0x2FDF) ||  /* CJK and Kangxi radicals */
	       (c >= 0x3005 && c <= 0x3007) ||  /* 々 〆 〇 */
	       (c >= 0x3021 && c <= 0x3029) ||  /* Hangzhou numerals */
	       (c >= 0x3031 && c <= 0x3035) ||  /* kana repeat marks */
	       (c >= 0x3041 && c <= 0x30FF && c != 0x30A0 && c != 0x30FB) || /* kana */
	       (c >= 0x3131 && c <= 0x318E) ||  /* Hangul compatibility Jamo */
	       (c >= 0x31F0 && c <= 0x31FF) ||  /* katakana extensions */
	       (c >= 0x3400 && c <= 0x4DBF) ||  /* extension A */
	       (c >= 0x4E00 && c <= 0x9FFF) ||  /* unified ideographs */
	       (c >= 0xA960 && c <= 0xA97F) ||  /* Hangul Jamo extended A */
	       (c >= 0xAC00 && c <= 0xD7FF) ||  /* Hangul syllables, Jamo extended B */
	       (c >= 0xF900 && c <= 0xFAFF) ||  /* compatibility ideographs */
	       (c >= 0xFF66 && c <= 0xFF9F) ||  /* halfwidth katakana */
	       (c >= 0x20000 && c <= 0x3134F);  /* extensions B to G */
}

/*
 * The code point at s (n > 0 bytes) if it is CJK, else 0; *len gets the
 * sequence's length either way (1 for a byte that starts no valid
 * sequence). CJK needs three or four bytes, so ASCII and two-byte letters
 * take the fast path.
 */
static uint32_t cjk_at(const char *s, int n, int *len)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t c;

	*len = 1;
	if (u[0] < 0xE1) {
		if (u[0] >= 0xC2 && u[0] < 0xE0 && n >= 2 && (u[1] & 0xC0) == 0x80)
			*len = 2;
		else if (u[0] == 0xE0 && n >= 3 && (u[1] & 0xC0) == 0x80 && (u[2] & 0xC0) == 0x80)
			*len = 3;
		return 0;
	}
	if (u[0] < 0xF0) {
		if (n < 3 || (u[1] & 0xC0) != 0x80 || (u[2] & 0xC0) != 0x80)
			return 0;
		*len = 3;
		c = (uint32_t)(u[0] & 0x0F) << 12 | (uint32_t)(u[1] & 0x3F) << 6 | (u[2] & 0x3F);
	} else {
		if (u[0] > 0xF4 || n < 4 || (u[1] & 0xC0) != 0x80 || (u[2] & 0xC0) != 0x80 ||
		    (u[3] & 0xC0) != 0x80)
			return 0;
		*len = 4;
		c = (uint32_t)(u[0] & 0x07) << 18 | (uint32_t)(u[1] & 0x3F) << 12 |
		    (uint32_t)(u[2] & 0x3F) << 6 | (u[3] & 0x3F);
	}
	return is_cjk(c) ? c : 0;
}

/* ---- The cjk tokenizer -------------------------------------------------- */

struct cjk_tokenizer {
	fts5_tokenizer parent;   /* the wrapped tokenizer's methods */
	Fts5Tokenizer *inst;     /* and its instance, owned */
};

struct cjk_call {
	void *ctx;
	int (*token)(void *ctx, int tflags, const char *tok, int n, int start, int end);
	int base;                /* offset of the segment handed to the parent */
	int done;                /* the caller answered SQLITE_DONE: it has what it needs */
};

/*
 * Text without CJK goes to the parent in pieces of about this many bytes,
 * cut after a space or newline (which no unicode61 token contains, so the
 * tokens are the same), so that a caller that stops early (a snippet needs
 * the text only up to its matches) does not pay for a scan of the rest.
 */
#define CJK_PIECE 1024

static int cjk_create(void *api_ptr, const char **argv, int argc, Fts5Tokenizer **out)
{
	fts5_api *api = api_ptr;
	struct cjk_tokenizer *t;
	void *user = NULL;
	const char *parent = argc > 0 ? argv[0] : "unicode61";
	int rc;

	t = xcalloc(1, sizeof(*t));
	rc = api->xFindTokenizer(api, parent, &user, &t->parent);
	if (rc == SQLITE_OK)
		rc = t->parent.xCreate(user, argc > 0 ? argv + 1 : argv, argc > 0 ? argc - 1 : 0,
				       &t->inst);
	if (rc != SQLITE_OK) {
		free(t);
		return rc;
	}
	*out = (Fts5Tokenizer *)t;
	return SQLITE_OK;
}

static void cjk_delete(Fts5Tokenizer *tok)
{
	struct cjk_tokenizer *t = (struct cjk_tokenizer *)tok;

	t->parent.xDelete(t->inst);
	free(t);
}

static int shifted(void *p, int tflags, const char *tok, int n, int start, int end)
{
	struct cjk_call *c = p;
	int rc = c->token(c->ctx, tflags, tok, n, start + c->base, end + c->base);

	if (rc == SQLITE_DONE)
		c->done = 1;
	return rc;
}

/* Hands text[from..to) to the parent tokenizer. An SQLite code; SQLITE_DONE to stop. */
static int cjk_parent(struct cjk_tokenizer *t, struct cjk_call *c, int flags, const char *text,
		      int from, int to)
{
	int rc;

	c->base = from;
	rc = t->parent.xTokenize(t->inst, c, flags, text + from, to - from, shifted);
	return rc == SQLITE_OK && c->done ? SQLITE_DONE : rc;
}

/*
 * Emits the run of CJK characters text[start..end) as bigrams, or as one
 * unigram when it is one character long. Outside queries, the last
 * character also goes in alone at the last bigram's position, so that a
 * one-character query (a prefix query on the bigrams) finds it too.
 */
static int cjk_run(const char *text, int start, int end, int flags, struct cjk_call *c)
{
	int prev = -1, cur = start, len, rc;

	while (cur < end) {
		cjk_at(text + cur, end - cur, &len);
		if (prev >= 0) {
			rc = c->token(c->ctx, 0, text + prev, cur + len - prev, prev, cur + len);
			if (rc != SQLITE_OK)
				return rc;
		}
		prev = cur;
		cur += len;
	}
	if (prev == start)
		return c->token(c->ctx, 0, text + prev, end - prev, prev, end);
	if (prev >= 0 && !(flags & FTS5_TOKENIZE_QUERY))
		return c->token(c->ctx, FTS5_TOKEN_COLOCATED, text + prev, end - prev, prev, end);
	return SQLITE_OK;
}

static int cjk_tokenize(Fts5Tokenizer *tok, void *ctx, int flags, const char *text, int n,
			int (*token)(void *, int, const char *, int, int, int))
{
	struct cjk_tokenizer *t = (struct cjk_tokenizer *)tok;
	struct cjk_call c = { ctx, token, 0, 0 };
	int seg = 0, i = 0, rc = SQLITE_OK;

	while (i < n && rc == SQLITE_OK) {
		int len, j, piece = n - seg > CJK_PIECE ? seg + CJK_PIECE : n;

		while (i < piece && (unsigned char)text[i] < 0x80)
			i++;
		if (i >= piece && i < n) {
			/* a long piece: cut it after the next space, unless non-ASCII comes first */
			while (i < n && (unsigned char)text[i] < 0x80 && text[i] != ' ' && text[i] != '\n')
				i++;
			if (i < n && (text[i] == ' ' || text[i] == '\n')) {
				rc = cjk_parent(t, &c, flags, text, seg, i + 1);
				seg = ++i;
				continue;
			}
		}
		if (i >= n)
			break;
		if (!cjk_at(text + i, n - i, &len)) {
			i += len;
			continue;
		}
		if (i > seg)
			rc = cjk_parent(t, &c, flags, text, seg, i);
		for (j = i + len; j < n && cjk_at(text + j, n - j, &len); j += len)
			;
		if (rc == SQLITE_OK)
			rc = cjk_run(text, i, j, flags, &c);
		seg = i = j;
	}
	if (rc == SQLITE_OK && n > seg)
		rc = cjk_parent(t, &c, flags, text, seg, n);
	/* as unicode61 does: stopping when asked is no error */
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* ---- Snippets ----------------------------------------------------------- */

struct hit {
	int phrase;
	int first, last;   /* token positions */
	int start, end;    /* bytes, once mapped; -1 before */
};

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
 * is the anchor make_snippet() will choose (a later one needs more to win),
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

static int by_position(const void *a, const void *b)
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

static int next_char(const char *t, int len, int p)
{
	p++;
	while (p < len && ((unsigned char)t[p] & 0xC0) == 0x80)
		p++;
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

/*
 * An instance of fts's tokenizer: a reader's, to find a row's matches in
 * its text; the writer's, for the words of new rows.
 */
struct row_tokenizer {
	fts5_tokenizer api;
	Fts5Tokenizer *inst;     /* owned */
};

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
static void emit_snippet(struct buf *out, const char *text, int len, const struct hit *hits, int n);

static int make_snippet(struct buf *out, const char *text, int len, struct hit *hits, int n,
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
	emit_snippet(out, text, len, hits, n);
	return SQLITE_OK;
}

/*
 * Appends to out the snippet of text (len bytes) around the anchor: the
 * hit (sorted, mapped to bytes; those with start or end -1 are skipped)
 * followed closely by most distinct phrases. The first words when none.
 */
static void emit_snippet(struct buf *out, const char *text, int len, const struct hit *hits, int n)
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

/* ---- Substring queries: terms, and their matches in a row -------------- */

/*
 * A term of a substring query (see run_substrings()) as fts's tokenizer
 * reads it: one token of SUBSTRING_MIN characters or more is looked for
 * inside words (SUB_CONTAINS: "shell" in powershell); several are a phrase
 * whose last token may be the start of a word (SUB_PHRASE: "Get-ChildI").
 */
enum sub_kind { SUB_CONTAINS, SUB_PHRASE };

/* The tokens of a phrase the snippet matches: a bit each. */
#define SUB_TOKENS_MAX 64

struct row_list;

struct sub_term {
	enum sub_kind kind;
	struct buf text;         /* its tokens, each followed by a NUL */
	int ntok;
	int tok[SUB_TOKENS_MAX]; /* where the first tokens start in text */
	int toklen[SUB_TOKENS_MAX];
	struct row_list *list;   /* the rows it is in, kept in the reader's lists */
};

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

/* Reads the query term s (n bytes) into t. An SQLite code. */
static int sub_term_read(struct sub_term *t, struct row_tokenizer *tk, const char *s, size_t n)
{
	int rc;

	buf_reset(&t->text);
	t->ntok = 0;
	t->list = NULL;
	rc = tk->api.xTokenize(tk->inst, t, FTS5_TOKENIZE_QUERY, s, (int)n, add_query_token);
	t->kind =
	    t->ntok == 1 && chars_upto(t->text.ptr, t->toklen[0], SUBSTRING_MIN) >= SUBSTRING_MIN
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
static int sub_snippet(struct buf *out, sqlite3_stmt *row, const struct sub_term *terms, int nterms,
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
	qsort(hits, (size_t)sc.n, sizeof(*hits), by_position);
	emit_snippet(out, text ? text : "", text ? len : 0, hits, sc.n);
	return SQLITE_OK;
}

/* ---- Connections -------------------------------------------------------- */

static int db_error(sqlite3 *db, const char *what)
{
	return log_error("search: %s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
}

/* Closes db, logging a failure (statements left unfinalized). Accepts NULL. */
static void close_db(sqlite3 *db)
{
	if (sqlite3_close(db) != SQLITE_OK)
		db_error(db, "closing");
}

static int is_corruption(int rc)
{
	rc &= 0xff;
	return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
}

/* FTS5's extension interface on db. An SQLite code. */
static int fts5_api_of(sqlite3 *db, fts5_api **out)
{
	fts5_api *api = NULL;
	sqlite3_stmt *st = NULL;
	int rc;

	rc = sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_pointer(st, 1, (void *)&api, "fts5_api_ptr", NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		rc = rc == SQLITE_ROW ? SQLITE_OK : rc;
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_OK && (!api || api->iVersion < 2))
		rc = SQLITE_ERROR;
	*out = api;
	return rc;
}

/* Registers the cjk tokenizer on db. An SQLite code. */
static int register_fts(sqlite3 *db)
{
	fts5_api *api = NULL;
	fts5_tokenizer tok = { cjk_create, cjk_delete, cjk_tokenize };
	int rc;

	rc = fts5_api_of(db, &api);
	if (rc == SQLITE_OK)
		rc = api->xCreateTokenizer(api, "cjk", api, &tok, NULL);
	return rc;
}

/* The tokenizer of fts, as schema_sql declares it. */
static const struct {
	const char *name;
	const char *args[3];
	int nargs;
} index_tokenizer = { "cjk", { "unicode61", "remove_diacritics", "2" }, 3 };

/* An instance of fts's tokenizer on db, where register_fts() ran. An SQLite code. */
static int tokenizer_open(sqlite3 *db, struct row_tokenizer *tk)
{
	fts5_api *api = NULL;
	void *user = NULL;
	int rc = fts5_api_of(db, &api);

	if (rc == SQLITE_OK)
		rc = api->xFindTokenizer(api, index_tokenizer.name, &user, &tk->api);
	if (rc == SQLITE_OK)
		rc = tk->api.xCreate(user, (const char **)index_tokenizer.args,
				     index_tokenizer.nargs, &tk->inst);
	return rc;
}

/* Opens path with flags, ready for the schema. An SQLite code; *out NULL on error. */
static int open_db(const char *path, int flags, sqlite3 **out)
{
	sqlite3 *db = NULL;
	int rc;

	*out = NULL;
	rc = sqlite3_open_v2(path, &db, flags, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
	if (rc == SQLITE_OK)
		rc = register_fts(db);
	if (rc != SQLITE_OK) {
		log_error("search: cannot open %s: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		close_db(db);
		return rc;
	}
	*out = db;
	return SQLITE_OK;
}

/* Runs sql, which returns one integer row or none (*v untouched). An SQLite code. */
static int query_int(sqlite3 *db, const char *sql, long long *v)
{
	sqlite3_stmt *st = NULL;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*v = sqlite3_column_int64(st, 0);
			rc = sqlite3_step(st);
		}
		rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	sqlite3_finalize(st);
	return rc;
}

/*
 * The first reads of an opened index: the version, then a row of doc and a
 * lookup in each index (which read their structure records). *version gets
 * 0 for a new file. An SQLite code: CORRUPT or NOTADB for a bad file.
 */
static int probe(sqlite3 *db, long long *version)
{
	long long n = 0;
	int rc;

	*version = 0;
	rc = query_int(db, "PRAGMA user_version", version);
	if (rc != SQLITE_OK || *version < 1 || *version > SCHEMA_VERSION)
		return rc;
	rc = query_int(db, "SELECT count(*) FROM (SELECT id FROM doc LIMIT 1)", &n);
	if (rc == SQLITE_OK)
		rc = query_int(db, "SELECT rowid FROM fts WHERE fts MATCH '\"quire\"' LIMIT 1", &n);
	/* an older index's tri goes in the upgrade */
	if (rc == SQLITE_OK && *version == SCHEMA_VERSION)
		rc = query_int(
		    db, "SELECT rowid FROM vocab_tri WHERE vocab_tri MATCH '\"quire\"' LIMIT 1",
		    &n);
	return rc;
}

static int remove_files(const char *path)
{
	static const char *const suffixes[] = { "", "-wal", "-shm", "-journal" };
	struct buf p = BUF_INIT;
	size_t i;
	int ret = 0;

	for (i = 0; i < sizeof(suffixes) / sizeof(*suffixes); i++) {
		buf_reset(&p);
		buf_addf(&p, "%s%s", path, suffixes[i]);
		if (unlink(p.ptr) < 0 && errno != ENOENT)
			ret = log_error("search: cannot remove %s: %s", p.ptr, strerror(errno));
	}
	buf_release(&p);
	return ret;
}

/* ---- The writer --------------------------------------------------------- */

/*
 * Puts and deletes wait in memory until the commit (or until they hold
 * STAGE_MAX bytes), which applies them in the order FTS5 writes cheaply:
 * the old rows deleted by ascending id, then the new ones inserted with
 * fresh, ascending ids. FTS5 keeps pending changes in a hash and must flush
 * it to a new segment whenever a row id is not above the last one written,
 * so replacing rows in place (delete 7, insert 7, delete 3, ...) would
 * write a segment, and start merge work, for every note.
 *
 * The writer inserts into fts itself, one single-row statement each, not
 * through triggers on doc (schema 1). A statement that writes through a
 * trigger may have to be undone alone, so SQLite opens a statement
 * savepoint for it, and FTS5 (3.40) flushes its hash to a new segment at
 * every savepoint: a segment per note and per index, and the merges they
 * bring, were a third of filling 10,000 notes (19 s of CPU in 100-note
 * transactions, 12.7 s without). The words of the new rows then go into
 * vocab (see vocab_flush()), or their ids into vocab_todo when substrings
 * are deferred.
 */
#define STAGE_MAX (8 << 20)

/*
 * Rows waiting in vocab_todo from which search_fill_substrings() lists the
 * words of the whole index (a pass over fts's terms, 0.2 s for 10,000
 * notes) instead of tokenizing each row again, and the terms of that pass
 * each row of its argument stands for (a step of 250 rows: 5,000 terms).
 */
#define VOCAB_BULK_ROWS 1000
#define VOCAB_TERMS_PER_ROW 20

/* FTS5 keeps the first this many bytes of a longer token (FTS5_MAX_TOKEN_SIZE). */
#define TOKEN_MAX 32768

enum stage_op { OP_PUT, OP_DELETE, OP_KEEP };

struct staged {
	enum stage_op op;        /* OP_KEEP: a put of what is stored, cancelling earlier ones */
	char *url;               /* owned */
	char *field[4];          /* OP_PUT: title, headings, tags, body, owned */
	size_t len[4];
	sqlite3_int64 old_id;    /* the row replaced or deleted, 0 for none */
	sqlite3_int64 new_id;    /* OP_PUT: the row inserted, once it is */
	size_t seq;              /* the last call for a url wins */
};

/* The full-text index the writer keeps in step with doc. */
static const char index_put_sql[] =
	"INSERT INTO fts(rowid, url, title, headings, tags, body) VALUES(?1, ?2, ?3, ?4, ?5, ?6)";
static const char index_del_sql[] =
	"INSERT INTO fts(fts, rowid, url, title, headings, tags, body)"
	" VALUES('delete', ?1, ?2, ?3, ?4, ?5, ?6)";

/* A set of words: those of the rows being written, on their way to vocab. */
struct term_set {
	char **slot;             /* open addressing, NUL-terminated words; NULL: free */
	size_t cap, n;           /* cap is 0 or a power of two */
};

static void terms_clear(struct term_set *t);

struct search {
	sqlite3 *db;
	sqlite3_stmt *find, *insert, *old_row, *remove, *begin, *commit, *rollback;
	sqlite3_stmt *index_put, *index_del;
	sqlite3_stmt *todo_add, *todo_del, *todo_next, *todo_done, *todo_left;
	sqlite3_stmt *scan_after, *scan_next, *scan_save, *scan_end;
	sqlite3_stmt *vocab_add, *vocab_max, *vocab_sync;
	struct row_tokenizer tok; /* fts's, for the words of new rows */
	struct term_set terms;
	int in_tx;
	int defer;               /* new rows' ids go to vocab_todo, their words later */
	struct staged *staged;
	size_t nstaged, astaged, staged_bytes;
	struct buf field[5];     /* sanitized copies for put, reused */
	struct search_counts counts;
};

static int exec(sqlite3 *db, const char *sql, const char *what)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK) {
		log_error("search: %s: %s", what, msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
	}
	return rc;
}

static int create_schema(sqlite3 *db)
{
	struct buf sql = BUF_INIT;
	int rc;

	buf_addf(&sql, "BEGIN; %s PRAGMA user_version = %d; COMMIT;", schema_sql, SCHEMA_VERSION);
	rc = exec(db, sql.ptr, "creating the index");
	if (rc != SQLITE_OK && !sqlite3_get_autocommit(db))
		exec(db, "ROLLBACK", "rolling back");
	buf_release(&sql);
	return rc;
}

/* Switches db to WAL, warning when the file system refuses. An SQLite code. */
static int set_wal(sqlite3 *db, const char *path)
{
	sqlite3_stmt *st = NULL;
	int rc;

	rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *mode = (const char *)sqlite3_column_text(st, 0);
		if (!mode || strcmp(mode, "wal") != 0)
			log_warn("search: %s: no WAL (%s); readers will wait for commits", path,
				 mode ? mode : "?");
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_OK)
		db_error(db, "journal_mode");
	return rc;
}

/*
 * Makes an index of schema 1 or 2 one of schema 3 (*version), then gives
 * back the pages tri took (two thirds of the file; VACUUM copies the rest,
 * once). An SQLite code.
 */
static int upgrade(sqlite3 *db, long long *version)
{
	char *msg = NULL;
	int rc = exec(db, upgrade_sql, "upgrading the index");

	if (rc != SQLITE_OK && !sqlite3_get_autocommit(db))
		exec(db, "ROLLBACK", "rolling back");
	if (rc != SQLITE_OK)
		return rc;
	*version = SCHEMA_VERSION;
	rc = sqlite3_exec(db, "VACUUM", NULL, NULL, &msg);
	if (rc != SQLITE_OK) /* the index works all the same, in a bigger file */
		log_warn("search: cannot vacuum the upgraded index: %s",
			 msg ? msg : sqlite3_errstr(rc));
	sqlite3_free(msg);
	return is_corruption(rc) ? rc : SQLITE_OK;
}

/*
 * Opens the writer's connection, rebuilding a bad or outdated file once.
 * An SQLite code.
 */
static int open_writer(const char *path, sqlite3 **out, int *fresh)
{
	const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
	sqlite3 *db = NULL;
	long long version = 0;
	int attempt, rc = SQLITE_OK;

	*out = NULL;
	*fresh = 0;
	for (attempt = 0; attempt < 2; attempt++) {
		rc = open_db(path, flags, &db);
		if (rc != SQLITE_OK)
			return rc;
		rc = probe(db, &version);
		if (rc == SQLITE_OK && version >= 1 && version < SCHEMA_VERSION)
			rc = upgrade(db, &version);
		if (rc == SQLITE_OK && version == SCHEMA_VERSION)
			break;
		if (rc == SQLITE_OK && version == 0) {
			long long objects = 0;
			rc = query_int(db, "SELECT count(*) FROM sqlite_schema", &objects);
			if (rc == SQLITE_OK && objects == 0) {
				*fresh = 1;
				break;
			}
		}
		if (rc != SQLITE_OK && !is_corruption(rc)) {
			db_error(db, path);
			close_db(db);
			return rc;
		}
		if (rc != SQLITE_OK)
			log_warn("search: %s is damaged (%s); rebuilding the index", path,
				 sqlite3_errstr(rc));
		else
			log_info("search: %s has schema %lld, not %d; rebuilding the index", path,
				 version, SCHEMA_VERSION);
		close_db(db);
		db = NULL;
		if (remove_files(path) < 0)
			return SQLITE_CANTOPEN;
		*fresh = 1;
	}
	if (!db) {
		log_error("search: %s is still unusable after a rebuild", path);
		return SQLITE_CORRUPT;
	}
	/* WAL: readers see the last commit while the writer works; NORMAL: the index is a cache */
	rc = set_wal(db, path);
	if (rc == SQLITE_OK)
		rc = exec(db, "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -32768;", "setting up");
	if (rc == SQLITE_OK && *fresh)
		rc = create_schema(db);
	if (rc != SQLITE_OK) {
		close_db(db);
		return rc;
	}
	*out = db;
	return SQLITE_OK;
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);

	if (rc != SQLITE_OK)
		db_error(db, "preparing a statement");
	return rc;
}

struct search *search_open(const char *path, int *fresh)
{
	struct search *s = xcalloc(1, sizeof(*s));
	int i, rc;

	for (i = 0; i < 5; i++)
		buf_init(&s->field[i], 0);
	rc = open_writer(path, &s->db, fresh);
	if (rc == SQLITE_OK)
		rc = prepare(s->db,
			     "SELECT id, title IS ?2 AND headings IS ?3 AND tags IS ?4 AND body IS ?5"
			     " FROM doc WHERE url = ?1",
			     &s->find);
	if (rc == SQLITE_OK)
		rc = prepare(s->db,
			     "INSERT INTO doc(url, title, headings, tags, body) VALUES(?1, ?2, ?3, ?4, ?5)",
			     &s->insert);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "SELECT url, title, headings, tags, body FROM doc WHERE id = ?1",
			     &s->old_row);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "DELETE FROM doc WHERE id = ?1", &s->remove);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, index_put_sql, &s->index_put);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, index_del_sql, &s->index_del);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "INSERT INTO vocab_todo(id) VALUES(?1)", &s->todo_add);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "DELETE FROM vocab_todo WHERE id = ?1", &s->todo_del);
	if (rc == SQLITE_OK)
		rc = prepare(s->db,
			     "SELECT t.id, d.title, d.headings, d.tags, d.body FROM vocab_todo t"
			     " LEFT JOIN doc d ON d.id = t.id"
			     " WHERE t.id > 0 ORDER BY t.id LIMIT ?1",
			     &s->todo_next);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "DELETE FROM vocab_todo WHERE id > 0 AND id <= ?1",
			     &s->todo_done);
	if (rc == SQLITE_OK)
		rc = prepare(
		    s->db, "SELECT count(*) FROM (SELECT 1 FROM vocab_todo WHERE id > 0 LIMIT ?1)",
		    &s->todo_left);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s->todo_left, 1, VOCAB_BULK_ROWS);
	/* fts's terms in order, from the index itself (a temporary table of this connection) */
	if (rc == SQLITE_OK)
		rc = exec(s->db, "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_terms"
				 " USING fts5vocab(main, fts, row)", "setting up");
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "SELECT after FROM vocab_todo WHERE id = 0", &s->scan_after);
	if (rc == SQLITE_OK)
		rc = prepare(
		    s->db, "SELECT term FROM temp.fts_terms WHERE term > ?1 ORDER BY term LIMIT ?2",
		    &s->scan_next);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "UPDATE vocab_todo SET after = ?1 WHERE id = 0", &s->scan_save);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "DELETE FROM vocab_todo WHERE id = 0", &s->scan_end);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "INSERT OR IGNORE INTO vocab(term) VALUES(?1)", &s->vocab_add);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "SELECT coalesce(max(id), 0) FROM vocab", &s->vocab_max);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "INSERT INTO vocab_tri(rowid, term) SELECT id, term FROM vocab"
				    " WHERE id > ?1", &s->vocab_sync);
	if (rc == SQLITE_OK)
		rc = tokenizer_open(s->db, &s->tok);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "BEGIN IMMEDIATE", &s->begin);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "COMMIT", &s->commit);
	if (rc == SQLITE_OK)
		rc = prepare(s->db, "ROLLBACK", &s->rollback);
	if (rc != SQLITE_OK) {
		search_free(s);
		return NULL;
	}
	return s;
}

void search_free(struct search *s)
{
	int i;

	if (!s)
		return;
	search_rollback(s);
	sqlite3_finalize(s->find);
	sqlite3_finalize(s->insert);
	sqlite3_finalize(s->old_row);
	sqlite3_finalize(s->remove);
	sqlite3_finalize(s->index_put);
	sqlite3_finalize(s->index_del);
	sqlite3_finalize(s->todo_add);
	sqlite3_finalize(s->todo_del);
	sqlite3_finalize(s->todo_next);
	sqlite3_finalize(s->todo_done);
	sqlite3_finalize(s->todo_left);
	sqlite3_finalize(s->scan_after);
	sqlite3_finalize(s->scan_next);
	sqlite3_finalize(s->scan_save);
	sqlite3_finalize(s->scan_end);
	sqlite3_finalize(s->vocab_add);
	sqlite3_finalize(s->vocab_max);
	sqlite3_finalize(s->vocab_sync);
	if (s->tok.inst)
		s->tok.api.xDelete(s->tok.inst);
	terms_clear(&s->terms);
	free(s->terms.slot);
	sqlite3_finalize(s->begin);
	sqlite3_finalize(s->commit);
	sqlite3_finalize(s->rollback);
	close_db(s->db);
	for (i = 0; i < 5; i++)
		buf_release(&s->field[i]);
	free(s->staged);
	free(s);
}

/* Steps a statement that returns no rows and resets it. 0 or -1. */
static int run_once(sqlite3 *db, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return db_error(db, what);
	return 0;
}

static void clear_staged(struct search *s)
{
	size_t i;
	int k;

	for (i = 0; i < s->nstaged; i++) {
		free(s->staged[i].url);
		for (k = 0; k < 4; k++)
			free(s->staged[i].field[k]);
	}
	s->nstaged = 0;
	s->staged_bytes = 0;
}

static int by_url_then_seq(const void *a, const void *b)
{
	const struct staged *x = a, *y = b;
	int c = strcmp(x->url, y->url);

	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_id(const void *a, const void *b)
{
	sqlite3_int64 x = *(const sqlite3_int64 *)a, y = *(const sqlite3_int64 *)b;

	return x < y ? -1 : x > y;
}

/* Steps a statement that returns no rows and resets it. An SQLite code. */
static int step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Empties the set (keeping its slots). */
static void terms_clear(struct term_set *t)
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
static int collect_terms(struct search *s, const char *text, int n)
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
static int vocab_flush(struct search *s)
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
			rc = step_done(s->vocab_add);
	}
	sqlite3_clear_bindings(s->vocab_add);
	/* the new words have the ids above the old maximum */
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s->vocab_sync, 1, max);
	if (rc == SQLITE_OK)
		rc = step_done(s->vocab_sync);
	terms_clear(&s->terms);
	return rc;
}

/* Removes row id from doc and fts, which needs its old values. An SQLite code. */
static int remove_row(struct search *s, sqlite3_int64 id)
{
	int rc, k;

	rc = sqlite3_bind_int64(s->todo_del, 1, id);
	if (rc == SQLITE_OK)
		rc = step_done(s->todo_del);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s->old_row, 1, id);
	if (rc == SQLITE_OK && (rc = sqlite3_step(s->old_row)) == SQLITE_ROW) {
		rc = sqlite3_bind_int64(s->index_del, 1, id);
		for (k = 0; k < NCOLS && rc == SQLITE_OK; k++)
			rc = sqlite3_bind_value(s->index_del, k + 2,
						sqlite3_column_value(s->old_row, k));
		if (rc == SQLITE_OK)
			rc = step_done(s->index_del);
	}
	sqlite3_reset(s->old_row);
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK; /* not stored: nothing to remove */
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s->remove, 1, id);
	if (rc == SQLITE_OK)
		rc = step_done(s->remove);
	return rc;
}

/* Binds the staged row c (url and fields from parameter first on) to st. An SQLite code. */
static int bind_row(sqlite3_stmt *st, int first, const struct staged *c)
{
	int rc = sqlite3_bind_text(st, first, c->url, -1, SQLITE_STATIC);
	int k;

	for (k = 0; k < 4 && rc == SQLITE_OK; k++)
		rc = sqlite3_bind_text(st, first + k + 1, c->field[k], (int)c->len[k], SQLITE_STATIC);
	return rc;
}

/*
 * Inserts the staged puts: into doc, then into fts, then their words into
 * vocab (their ids into vocab_todo instead when substrings are deferred).
 */
static int insert_rows(struct search *s)
{
	size_t i;
	int rc = SQLITE_OK, k;

	for (i = 0; i < s->nstaged && rc == SQLITE_OK; i++) {
		struct staged *c = &s->staged[i];

		if (c->op != OP_PUT)
			continue;
		rc = bind_row(s->insert, 1, c);
		if (rc == SQLITE_OK)
			rc = step_done(s->insert);
		c->new_id = sqlite3_last_insert_rowid(s->db);
		s->counts.written++;
	}
	sqlite3_clear_bindings(s->insert);
	for (i = 0; i < s->nstaged && rc == SQLITE_OK; i++) {
		struct staged *c = &s->staged[i];

		if (c->op != OP_PUT)
			continue;
		rc = sqlite3_bind_int64(s->index_put, 1, c->new_id);
		if (rc == SQLITE_OK)
			rc = bind_row(s->index_put, 2, c);
		if (rc == SQLITE_OK)
			rc = step_done(s->index_put);
	}
	sqlite3_clear_bindings(s->index_put);
	for (i = 0; i < s->nstaged && rc == SQLITE_OK; i++) {
		struct staged *c = &s->staged[i];

		if (c->op != OP_PUT)
			continue;
		if (s->defer) {
			rc = sqlite3_bind_int64(s->todo_add, 1, c->new_id);
			if (rc == SQLITE_OK)
				rc = step_done(s->todo_add);
			continue;
		}
		for (k = 0; k < 4 && rc == SQLITE_OK; k++)
			rc = collect_terms(s, c->field[k], (int)c->len[k]);
	}
	if (rc == SQLITE_OK)
		rc = vocab_flush(s);
	terms_clear(&s->terms);
	return rc;
}

/* Writes the staged changes into the open transaction. 0 or -1 (logged). */
static int apply_staged(struct search *s)
{
	sqlite3_int64 *ids;
	size_t i, nids = 0;
	int rc = SQLITE_OK;

	if (!s->nstaged)
		return 0;
	qsort(s->staged, s->nstaged, sizeof(*s->staged), by_url_then_seq);
	ids = xcalloc(s->nstaged, sizeof(*ids));
	for (i = 0; i < s->nstaged; i++) {
		struct staged *c = &s->staged[i];

		if (i + 1 < s->nstaged && strcmp(c->url, s->staged[i + 1].url) == 0)
			c->op = OP_KEEP; /* a later call decides */
		else if (c->op != OP_KEEP && c->old_id > 0)
			ids[nids++] = c->old_id;
		if (c->op == OP_DELETE && c->old_id > 0)
			s->counts.removed++;
	}
	qsort(ids, nids, sizeof(*ids), by_id);
	for (i = 0; i < nids && rc == SQLITE_OK; i++)
		rc = remove_row(s, ids[i]);
	if (rc == SQLITE_OK)
		rc = insert_rows(s);
	free(ids);
	clear_staged(s);
	if (rc != SQLITE_OK)
		return db_error(s->db, "writing the index");
	return 0;
}

/*
 * The row stored for url: its id, or 0; *same tells whether it holds the
 * sanitized fields in s->field (when fields is set). An SQLite code.
 */
static int find_row(struct search *s, const char *url, int fields, sqlite3_int64 *id, int *same)
{
	int rc, i;

	*id = 0;
	*same = 0;
	rc = sqlite3_bind_text(s->find, 1, url, -1, SQLITE_STATIC);
	for (i = 1; i < 5 && rc == SQLITE_OK; i++) {
		if (fields)
			rc = sqlite3_bind_text(s->find, i + 1, s->field[i].ptr, (int)s->field[i].len,
					       SQLITE_STATIC);
		else
			rc = sqlite3_bind_null(s->find, i + 1);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_step(s->find);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(s->find, 0);
		*same = sqlite3_column_int(s->find, 1);
		rc = SQLITE_DONE;
	}
	sqlite3_reset(s->find);
	sqlite3_clear_bindings(s->find);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Stages op for url (sanitized in s->field[0]), with the fields for OP_PUT. 0 or -1. */
static int stage(struct search *s, enum stage_op op, sqlite3_int64 old_id)
{
	struct staged *c;
	int k;

	ALLOC_GROW(s->staged, s->nstaged + 1, s->astaged);
	c = &s->staged[s->nstaged];
	memset(c, 0, sizeof(*c));
	c->op = op;
	c->url = xstrdup(s->field[0].ptr);
	c->old_id = old_id;
	c->seq = s->nstaged++;
	s->staged_bytes += s->field[0].len + sizeof(*c);
	if (op == OP_PUT) {
		for (k = 0; k < 4; k++) {
			c->len[k] = s->field[k + 1].len;
			c->field[k] = xmemdup(s->field[k + 1].ptr, c->len[k] + 1);
			s->staged_bytes += c->len[k];
		}
	}
	return s->staged_bytes >= STAGE_MAX ? apply_staged(s) : 0;
}

int search_begin(struct search *s)
{
	if (s->in_tx)
		return log_error("search: a transaction is already open");
	if (run_once(s->db, s->begin, "begin") < 0)
		return -1;
	s->in_tx = 1;
	return 0;
}

int search_commit(struct search *s)
{
	if (!s->in_tx)
		return log_error("search: commit without a transaction");
	if (apply_staged(s) < 0 || run_once(s->db, s->commit, "commit") < 0) {
		search_rollback(s);
		return -1;
	}
	s->in_tx = 0;
	return 0;
}

void search_rollback(struct search *s)
{
	clear_staged(s);
	if (!s->in_tx)
		return;
	s->in_tx = 0;
	if (sqlite3_get_autocommit(s->db))
		return; /* SQLite already rolled back (a full disk, say) */
	run_once(s->db, s->rollback, "rollback");
}

/* Sanitizes v into s->field[i]: U+FFFD for invalid UTF-8 and control characters. */
static void set_field(struct search *s, int i, const char *v)
{
	buf_reset(&s->field[i]);
	if (v)
		utf8_sanitize(v, strlen(v), &s->field[i], NULL);
}

int search_put(struct search *s, const char *url, const char *title, const char *headings,
	       const char *tags, const char *text)
{
	const char *v[5] = { url, title, headings, tags, text };
	sqlite3_int64 id;
	int i, same, implicit = !s->in_tx, ret;

	if (!url || !*url)
		return log_error("search: put without a url");
	if (implicit && search_begin(s) < 0)
		return -1;
	for (i = 0; i < 5; i++)
		set_field(s, i, v[i]);
	if (find_row(s, s->field[0].ptr, 1, &id, &same) != SQLITE_OK)
		ret = db_error(s->db, "put");
	else
		ret = stage(s, same ? OP_KEEP : OP_PUT, id);
	s->counts.unchanged += same;
	if (implicit)
		return ret < 0 ? (search_rollback(s), -1) : search_commit(s);
	return ret;
}

int search_delete(struct search *s, const char *url)
{
	sqlite3_int64 id;
	int same, implicit = !s->in_tx, ret;

	if (!url || !*url)
		return log_error("search: delete without a url");
	if (implicit && search_begin(s) < 0)
		return -1;
	set_field(s, 0, url);
	if (find_row(s, s->field[0].ptr, 0, &id, &same) != SQLITE_OK)
		ret = db_error(s->db, "delete");
	else
		ret = stage(s, OP_DELETE, id);
	if (implicit)
		return ret < 0 ? (search_rollback(s), -1) : search_commit(s);
	return ret;
}

int search_prune(struct search *s, int (*keep)(void *ctx, const char *url), void *ctx)
{
	sqlite3_stmt *st = NULL;
	char **gone = NULL;
	size_t n = 0, alloc = 0, i;
	int rc, ret = 0;

	if (!s->in_tx)
		return log_error("search: prune outside a transaction");
	if (sqlite3_prepare_v2(s->db, "SELECT url FROM doc", -1, &st, NULL) != SQLITE_OK)
		return db_error(s->db, "prune");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *url = (const char *)sqlite3_column_text(st, 0);
		if (url && !keep(ctx, url)) {
			ALLOC_GROW(gone, n + 1, alloc);
			gone[n++] = xstrdup(url);
		}
	}
	if (rc != SQLITE_DONE)
		ret = db_error(s->db, "prune");
	sqlite3_finalize(st);
	for (i = 0; i < n; i++) {
		if (ret == 0 && search_delete(s, gone[i]) < 0)
			ret = -1;
		free(gone[i]);
	}
	free(gone);
	return ret;
}

void search_counts(const struct search *s, struct search_counts *out)
{
	*out = s->counts;
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
			rc = collect_terms(s, (const char *)sqlite3_column_text(next, k),
					   sqlite3_column_bytes(next, k));
		done++;
	}
	sqlite3_reset(next);
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	if (rc == SQLITE_OK)
		rc = vocab_flush(s);
	terms_clear(&s->terms);
	if (rc == SQLITE_OK && last > 0)
		rc = sqlite3_bind_int64(s->todo_done, 1, last);
	if (rc == SQLITE_OK && last > 0)
		rc = step_done(s->todo_done);
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
			rc = step_done(s->vocab_add);
	}
	sqlite3_reset(s->scan_next);
	sqlite3_clear_bindings(s->vocab_add);
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s->vocab_sync, 1, max);
	if (rc == SQLITE_OK)
		rc = step_done(s->vocab_sync);
	if (rc == SQLITE_OK && seen < n) {
		*done = 1;
		rc = step_done(s->scan_end);
	} else if (rc == SQLITE_OK) {
		rc = sqlite3_bind_text(s->scan_save, 1, after, -1, SQLITE_TRANSIENT);
		if (rc == SQLITE_OK)
			rc = step_done(s->scan_save);
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
		rc = exec(s->db,
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
			rc = exec(s->db, "INSERT INTO vocab_tri(vocab_tri) VALUES('optimize')",
				  "optimize");
	} else if (rc == SQLITE_OK) {
		rc = vocab_fill_rows(s, n, &left);
	}
	if (rc != SQLITE_OK) {
		db_error(s->db, "filling the substring index");
		search_rollback(s);
		return -1;
	}
	if (search_commit(s) < 0)
		return -1;
	return !left;
}

/*
 * FTS5's integrity-check of fts and vocab_tri against their content, and,
 * when no row waits in vocab_todo, that every word of fts long enough for a
 * substring is in vocab.
 */
int search_check(struct search *s)
{
	long long behind = 0, missing = 0;
	int rc;

	if (s->in_tx)
		return log_error("search: check inside a transaction");
	if (exec(s->db,
		 "INSERT INTO fts(fts) VALUES('integrity-check');"
		 " INSERT INTO vocab_tri(vocab_tri) VALUES('integrity-check');",
		 "check") != SQLITE_OK)
		return -1;
	rc = query_int(s->db, "SELECT count(*) FROM vocab_todo", &behind);
	if (rc == SQLITE_OK && behind == 0)
		rc = query_int(s->db,
			       "SELECT count(*) FROM temp.fts_terms t WHERE length(t.term) >= 3"
			       " AND NOT EXISTS (SELECT 1 FROM vocab v WHERE v.term = t.term)",
			       &missing);
	if (rc != SQLITE_OK)
		return db_error(s->db, "check");
	if (missing > 0)
		return log_error("search: %lld words of the index are not in its vocabulary",
				 missing);
	return 0;
}

int search_optimize(struct search *s)
{
	if (s->in_tx)
		return log_error("search: optimize inside a transaction");
	if (exec(s->db, "INSERT INTO fts(fts) VALUES('optimize');"
			" INSERT INTO vocab_tri(vocab_tri) VALUES('optimize');"
			" PRAGMA wal_checkpoint(TRUNCATE);", "optimize") != SQLITE_OK)
		return -1;
	return 0;
}

int search_settle(struct search *s)
{
	if (s->in_tx)
		return log_error("search: settle inside a transaction");
	if (exec(s->db, "PRAGMA cache_size = -2000;", "settling") != SQLITE_OK)
		return -1;
	sqlite3_db_release_memory(s->db);
	return 0;
}

/* ---- Parsing queries ---------------------------------------------------- */

struct term {
	const char *s;   /* into the query */
	size_t n;
	const char *core; /* s without leading and trailing non-alphanumerics */
	size_t core_n;
	size_t chars;    /* code points in core */
	int neg, prefix;
};

struct query {
	struct term t[SEARCH_TERMS_MAX];
	int n, npos;
};

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
		if (cjk_at(p, (int)(end - p), &l)) {
			run++;
			last_cjk_run = run;
		} else {
			run = 0;
			if (unicode_is_alnum(cp))
				last_cjk_run = 0;
		}
		if (unicode_is_alnum(cp) || is_cjk((uint32_t)cp)) {
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
static int parse(const char *q, size_t len, struct query *out, const char **err)
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
static void add_string(struct buf *b, const char *s, size_t n)
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
static void add_term(struct buf *b, const struct term *t)
{
	add_string(b, t->s, t->n);
	if (t->prefix)
		buf_adds(b, " *");
}

/* Whether every term has the SUBSTRING_MIN characters a substring needs (vocab_tri's trigram). */
static int substring_terms(const struct query *q)
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
static void build_match(const struct query *q, struct buf *b, size_t span[SEARCH_TERMS_MAX][2])
{
	size_t start;
	int neg, i, first, k = 0;

	buf_reset(b);
	for (neg = 0; neg < 2; neg++) {
		first = 1;
		for (i = 0; i < q->n; i++) {
			const struct term *t = &q->t[i];

			if (t->neg != neg)
				continue;
			if (first)
				buf_adds(b, neg ? " NOT (" : "(");
			else
				buf_adds(b, neg ? " OR " : " AND ");
			first = 0;
			start = b->len;
			add_term(b, t);
			if (!neg) {
				span[k][0] = start;
				span[k++][1] = b->len - start;
			}
		}
		if (!first)
			buf_addc(b, ')');
	}
}

/* ---- Readers ------------------------------------------------------------ */

/* Rows (times phrases) whose position lists each reader reads both ways first. */
#define POSLIST_CHECKS 1000

/* The most row ids the length cache covers; beyond, FTS5 is asked per row. */
#define LENGTHS_MAX (1 << 24)

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

/*
 * The rows a phrase is in, with its weighted frequency in each (what
 * quire_rank() computes per row), read with one pass over the phrase
 * alone (quire_list()). A query whose terms are all positive is then
 * ranked by intersecting its phrases' lists in C (rank_lists()) instead of
 * FTS5 merging their position lists row by row: for two frequent words,
 * where most of the time went. Kept per reader until data_version moves,
 * LISTS_MAX of them and about LISTS_BYTES, the least recently used going
 * first; a query whose lists are all kept costs a merge of arrays, the
 * snippets of its page, and no pass over the index.
 */
struct row_list {
	char *key;             /* the phrase, as the MATCH expression spells it */
	size_t len;
	sqlite3_int64 *rowid;  /* ascending */
	double *freq;
	size_t n, alloc;
	unsigned long long used; /* the query that last used it (r->nquery) */
};

#define LISTS_MAX 64
#define LISTS_BYTES (8u << 20)

/*
 * A phrase gets a list the second time a query asks for it at one
 * data_version (a list costs a third more than ranking through FTS5 once:
 * queries that never come back, such as every pair of the 3,000 most
 * frequent words once, lost a quarter of their rate), and lists rank a
 * query whose phrases are in LISTS_MIN_ROWS rows or more together (below,
 * FTS5 is as quick, and its pass also finds the snippets' matches, which
 * lists read per result).
 */
#define SEEN_SLOTS 1024
#define LISTS_MIN_ROWS SEARCH_LISTS_MIN_ROWS

/* What one index's queries keep in the reader. */
struct index_state {
	struct search_reader *reader;
	uint32_t *len;       /* tokens in each row, by rowid; 0: unknown */
	size_t cap;
	long long version;   /* data_version the lengths were read at; -1: never */
	long long nrow;      /* rows in the index, set by quire_rank() */
	struct row_tokenizer tok;
	struct df_entry *df; /* DF_SLOTS, allocated when first needed */
	long long df_version; /* data_version the document frequencies are of */
	struct row_list *lists[LISTS_MAX];
	size_t nlists, list_bytes;
	long long lists_version; /* data_version the lists are of */
	int have_totals;     /* nrow_all and ntok_all are of lists_version */
	sqlite3_int64 nrow_all, ntok_all; /* the index's rows and tokens */
	struct row_list *building; /* the list quire_list() appends to */
	uint64_t seen[SEEN_SLOTS]; /* hashes of phrases asked for at lists_version; 0: none */
};

/* A ranked row and where its matches are, for the snippet. */
struct ranked {
	double score;
	sqlite3_int64 rowid;
	int slot;            /* its hits: slots[slot] */
};

struct slot {
	int col;             /* the column the hits are in */
	int n;
	struct hit hits[SNIP_HITS_MAX];
};

struct search_reader {
	sqlite3 *db;
	sqlite3_stmt *begin, *commit, *rollback, *version, *doc, *exists;
	sqlite3_stmt *scan, *sizes; /* prepared on first use */
	struct index_state idx;
	long long data_version;    /* of the open read transaction */
	/* the query under way: the best k rows in a heap with the worst at the root */
	struct ranked *top;
	size_t ntop, k;
	struct slot *slots;
	size_t nslots;
	struct buf match, snippet;
	size_t phrase[SEARCH_TERMS_MAX][2]; /* where each positive term is in match */
	int nterms;              /* terms in match, positive and excluded */
	int html;                /* add_result writes HTML list items, not JSON */
	/* rows whose position lists are still read both ways (see phrase_freq()); -1: API only */
	int poslist_checks;
	long lists_min_rows;     /* rank from row lists when the query allows (rank_lists()); -1: never */
	unsigned long long nquery;
	long long nlisted;       /* queries ranked from lists */
	sqlite3_stmt *list_scan, *hit_scan, *vocab_scan;
	/* a substring query under way (run_substrings()): its terms, the positive ones first */
	struct sub_term sub[SEARCH_TERMS_MAX];
	int nsub;                /* its positive terms */
	int substrings;          /* add_result() finds the matches in the row itself */
	double *acc;             /* by row id from a base: frequencies summed, else 0 */
	size_t acc_cap;
};

/*
 * One step for all rows: quire_rank() is called per row as a condition
 * that always holds, and count(*) is the total. An auxiliary function is
 * not allowed as an aggregate's argument; in the select list, it was a
 * step and a row handed back per match.
 */
static const char scan_sql[] =
	"SELECT count(*) FROM fts WHERE fts MATCH ?1 AND quire_rank_fts(fts, ?2, ?3) IS NOT NULL";
static const char list_sql[] =
	"SELECT count(*) FROM fts WHERE fts MATCH ?1 AND quire_list_fts(fts) IS NOT NULL";
static const char hit_sql[] = "SELECT count(*) FROM fts WHERE fts MATCH ?1 AND rowid = ?2 "
			      "AND quire_hits_fts(fts, ?3) IS NOT NULL";
static const char sizes_sql[] = "SELECT id, sz FROM fts_docsize";

/* ---- quire_rank() ------------------------------------------------------- */

static const double col_weight[NCOLS] = { 0.0, 10.0, 5.0, 3.0, 1.0 };
#define BM25_K1 1.2
#define BM25_B 0.75

struct rank_query {
	int nphrase;                    /* the positive phrases, which come first */
	double avgdl;
	double idf[SEARCH_TERMS_MAX];
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

static double idf_of(sqlite3_int64 nrow, sqlite3_int64 nhit)
{
	double idf = ln(((double)nrow - (double)nhit + 0.5) / ((double)nhit + 0.5));

	return idf > 0 ? idf : 1e-6;
}

static void df_clear(struct index_state *st)
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
		df_clear(st);
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
	if (rq->nphrase > SEARCH_TERMS_MAX)
		rq->nphrase = SEARCH_TERMS_MAX;
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
			rq->idf[i] = idf_of(nrow, nhit);
		}
	}
	if (*rc == SQLITE_OK)
		*rc = x->xSetAuxdata(fc, rq, free);
	else
		free(rq);
	return *rc == SQLITE_OK ? rq : NULL;
}

/* a ranks above b: a higher score, or the same and an older row */
static int above(const struct ranked *a, const struct ranked *b)
{
	return a->score > b->score || (a->score == b->score && a->rowid < b->rowid);
}

static int by_rank(const void *a, const void *b)
{
	return above(a, b) ? -1 : above(b, a) ? 1 : 0;
}

/* Puts x in the heap r->top, which is full when it holds r->k rows, evicting the worst. */
static void heap_put(struct search_reader *r, struct ranked x)
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
	qsort(sl->hits, (size_t)sl->n, sizeof(*sl->hits), by_position);
	return rc;
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
static void rank_fn(const Fts5ExtensionApi *x, Fts5Context *fc, sqlite3_context *ctx, int argc,
		    sqlite3_value **argv)
{
	struct index_state *st = x->xUserData(fc);
	struct search_reader *r = st->reader;
	struct rank_query *rq = x->xGetAuxdata(fc, 0);
	struct ranked row = { 0, x->xRowid(fc), 0 };
	double dl = 0;
	int i, rc = SQLITE_OK;

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
		double freq = 0;

		rc = phrase_freq(r, x, fc, i, &freq);
		row.score += rq->idf[i] * freq * (BM25_K1 + 1.0) /
			     (freq + BM25_K1 * (1.0 - BM25_B + BM25_B * dl / rq->avgdl));
	}
	if (rc == SQLITE_OK && (r->ntop < r->k || above(&row, &r->top[0]))) {
		row.slot = r->ntop < r->k ? (int)r->ntop : r->top[0].slot;
		rc = capture_hits(x, fc, &r->slots[row.slot]);
		heap_put(r, row);
	}
	if (rc != SQLITE_OK)
		sqlite3_result_error_code(ctx, rc);
	else
		sqlite3_result_double(ctx, row.score);
}

/* ---- Row lists ---------------------------------------------------------- */

static sqlite3_stmt *cached(struct search_reader *r, sqlite3_stmt **slot, const char *sql)
{
	if (!*slot && prepare(r->db, sql, slot) != SQLITE_OK)
		return NULL;
	return *slot;
}

static void list_free(struct row_list *l)
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

static void lists_clear(struct index_state *st)
{
	size_t i;

	for (i = 0; i < st->nlists; i++)
		list_free(st->lists[i]);
	st->nlists = 0;
	st->list_bytes = 0;
	st->have_totals = 0;
	memset(st->seen, 0, sizeof(st->seen));
}

/*
 * quire_list(table): appends the row and the weighted frequency of the
 * query's one phrase to st->building; the first row also notes the index's
 * row and token counts, which every list of this data_version shares.
 */
static void list_fn(const Fts5ExtensionApi *x, Fts5Context *fc, sqlite3_context *ctx, int argc,
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
static void hits_fn(const Fts5ExtensionApi *x, Fts5Context *fc, sqlite3_context *ctx, int argc,
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
	if (rc != SQLITE_OK)
		sqlite3_result_error_code(ctx, rc);
	else
		sqlite3_result_int(ctx, 1);
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
		list_free(st->lists[lru]);
		st->lists[lru] = st->lists[--st->nlists];
	}
}

static struct row_list *find_list(struct search_reader *r, struct index_state *st, const char *key,
				  size_t len);

/* Phrase i's list if it is kept, else NULL. */
static struct row_list *kept_list(struct search_reader *r, struct index_state *st, int i)
{
	return find_list(r, st, r->match.ptr + r->phrase[i][0], r->phrase[i][1]);
}

/* The list kept under key (len bytes), marked as used by this query; NULL when none. */
static struct row_list *find_list(struct search_reader *r, struct index_state *st, const char *key,
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
static int read_rows(struct search_reader *r, struct index_state *st, const char *match, size_t len,
		     struct row_list *l)
{
	sqlite3_stmt *q;
	int rc;

	if (!(q = cached(r, &r->list_scan, list_sql)))
		return -1;
	st->building = l;
	rc = sqlite3_bind_text(q, 1, match, (int)len, SQLITE_STATIC);
	if (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW)
		rc = sqlite3_step(q);
	sqlite3_reset(q);
	st->building = NULL;
	if (rc != SQLITE_DONE)
		return db_error(r->db, "reading a phrase's rows");
	return 0;
}

static struct row_list *new_list(struct search_reader *r, const char *key, size_t len)
{
	struct row_list *l = xcalloc(1, sizeof(*l));

	l->key = xmemdup(key, len);
	l->len = len;
	l->used = r->nquery;
	return l;
}

/* Keeps l, read for this query, for as long as the index does not change. */
static void keep_list(struct search_reader *r, struct index_state *st, struct row_list *l)
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
	struct row_list *l = new_list(r, key, len);

	if (read_rows(r, st, key, len, l) < 0) {
		list_free(l);
		return NULL;
	}
	keep_list(r, st, l);
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
static int rank_rows(struct search_reader *r, struct row_list **pos, int npos, const double *idf,
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
		struct ranked row = { 0, pos[drive]->rowid[k], 0 };
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
			heap_put(r, row);
		}
	}
	return 1;
}

/*
 * Ranks the rows matching r->match (index IDX_WORDS, every term positive)
 * from the phrases' row lists, as quire_rank() would: the rows in every
 * list, each scored with the same bm25 in the same order of operations,
 * into the same heap. The hits of the rows kept are read afterwards
 * (list_hits()). 1 when ranked, 0 when the query is not one for lists (a
 * phrase asked for the first time, see SEEN_SLOTS; phrases in few rows; a
 * prefix, whose hits in one row FTS5 finds by merging all of its words'
 * rows again, 1.3 ms for "param*"; a phrase in no row, which FTS5 may have
 * dropped from the query rather than matching nothing; a row of unknown
 * length), -1 on an error.
 */
static int rank_lists(struct search_reader *r, int npos, long long *total)
{
	struct index_state *st = &r->idx;
	struct row_list *l[SEARCH_TERMS_MAX];
	double idf[SEARCH_TERMS_MAX];
	size_t rows = 0;
	int i, fresh = 0;

	if (r->lists_min_rows < 0 || npos < 1 || npos != r->nterms || npos > SEARCH_TERMS_MAX)
		return 0;
	if (st->lists_version != r->data_version) {
		lists_clear(st);
		st->lists_version = r->data_version;
	}
	r->nquery++;
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
		idf[i] = npos > 1 ? idf_of(st->nrow_all, (sqlite3_int64)l[i]->n) : 1.0;
	return rank_rows(r, l, npos, idf, NULL, 0, 1, total);
}

/* Reads where the matches of the rows ranked from lists are, for rows from..r->ntop. 0 or -1. */
static int list_hits(struct search_reader *r, size_t from)
{
	sqlite3_stmt *q = cached(r, &r->hit_scan, hit_sql);
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
	return rc == SQLITE_OK ? 0 : db_error(r->db, "reading a result's matches");
}

/* ---- Substring queries: rows --------------------------------------------- */

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
	    cached(r, &r->vocab_scan, "SELECT term FROM vocab_tri WHERE vocab_tri MATCH ?1");
	struct buf match = BUF_INIT, words = BUF_INIT;
	struct row_list all = { 0 };
	const char *needle = t->text.ptr, *w;
	int len = t->toklen[0], rc, ret = 0;
	size_t n = 0;
	sqlite3_int64 lo = INT64_MAX, hi = -1;

	if (!q)
		return -1;
	add_string(&match, needle, (size_t)len);
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
		ret = db_error(r->db, "looking up words");
	for (w = words.ptr; ret == 0 && n > 0; w += strlen(w) + 1, n--) {
		size_t before = all.n;

		buf_reset(&match);
		add_string(&match, w, strlen(w));
		ret = read_rows(r, st, match.ptr, match.len, &all);
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
		add_string(&key, q->core, q->core_n);
		buf_adds(&key, " *");
	} else { /* not a phrase's key: those start with a quote */
		buf_addc(&key, '~');
		buf_add(&key, t->text.ptr, (size_t)t->toklen[0]);
	}
	l = find_list(r, st, key.ptr, key.len);
	if (!l) {
		l = new_list(r, key.ptr, key.len);
		ret = t->kind == SUB_PHRASE ? read_rows(r, st, key.ptr, key.len, l)
					    : contains_rows(r, st, t, l);
		if (ret < 0) {
			list_free(l);
			l = NULL;
		} else {
			keep_list(r, st, l);
		}
	}
	buf_release(&key);
	return l;
}

void search_reader_use_lists(struct search_reader *r, long min_rows)
{
	r->lists_min_rows = min_rows;
}

long long search_reader_listed(const struct search_reader *r)
{
	return r->nlisted;
}

/* ---- Opening readers ---------------------------------------------------- */

struct search_reader *search_reader_open(const char *path)
{
	struct search_reader *r;
	sqlite3 *db = NULL;
	fts5_api *api = NULL;
	int rc, i;

	if (open_db(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, &db) != SQLITE_OK)
		return NULL;
	r = xcalloc(1, sizeof(*r));
	r->db = db;
	r->poslist_checks = POSLIST_CHECKS;
	r->lists_min_rows = LISTS_MIN_ROWS;
	buf_init(&r->match, 0);
	buf_init(&r->snippet, 0);
	for (i = 0; i < SEARCH_TERMS_MAX; i++)
		buf_init(&r->sub[i].text, 0);
	r->top = xcalloc(SEARCH_OFFSET_MAX + SEARCH_LIMIT_MAX, sizeof(*r->top));
	/* map the file: readers share the OS page cache instead of each caching pages */
	rc = exec(db, "PRAGMA mmap_size = 268435456;", "setting up a reader");
	if (rc == SQLITE_OK)
		rc = fts5_api_of(db, &api);
	r->idx.reader = r;
	r->idx.version = -1;
	r->idx.lists_version = -1;
	if (rc == SQLITE_OK)
		rc = tokenizer_open(db, &r->idx.tok);
	if (rc == SQLITE_OK)
		rc = api->xCreateFunction(api, "quire_rank_fts", &r->idx, rank_fn, NULL);
	if (rc == SQLITE_OK)
		rc = api->xCreateFunction(api, "quire_list_fts", &r->idx, list_fn, NULL);
	if (rc == SQLITE_OK)
		rc = api->xCreateFunction(api, "quire_hits_fts", &r->idx, hits_fn, NULL);
	if (rc == SQLITE_OK)
		rc = prepare(db, "BEGIN", &r->begin);
	if (rc == SQLITE_OK)
		rc = prepare(db, "COMMIT", &r->commit);
	if (rc == SQLITE_OK)
		rc = prepare(db, "ROLLBACK", &r->rollback);
	if (rc == SQLITE_OK)
		rc = prepare(db, "PRAGMA data_version", &r->version);
	if (rc != SQLITE_OK) {
		db_error(db, "opening a reader");
		search_reader_free(r);
		return NULL;
	}
	return r;
}

void search_reader_free(struct search_reader *r)
{
	int i;

	if (!r)
		return;
	sqlite3_finalize(r->scan);
	sqlite3_finalize(r->sizes);
	free(r->idx.len);
	df_clear(&r->idx);
	free(r->idx.df);
	lists_clear(&r->idx);
	if (r->idx.tok.inst)
		r->idx.tok.api.xDelete(r->idx.tok.inst);
	sqlite3_finalize(r->begin);
	sqlite3_finalize(r->commit);
	sqlite3_finalize(r->rollback);
	sqlite3_finalize(r->version);
	sqlite3_finalize(r->doc);
	sqlite3_finalize(r->exists);
	sqlite3_finalize(r->list_scan);
	sqlite3_finalize(r->hit_scan);
	sqlite3_finalize(r->vocab_scan);
	close_db(r->db);
	for (i = 0; i < SEARCH_TERMS_MAX; i++)
		buf_release(&r->sub[i].text);
	free(r->acc);
	buf_release(&r->match);
	buf_release(&r->snippet);
	free(r->top);
	free(r->slots);
	free(r);
}

/* Starts a read transaction and notes the file's data_version. 0 or -1. */
static int read_begin(struct search_reader *r)
{
	int rc;

	if (run_once(r->db, r->begin, "begin") < 0)
		return -1;
	rc = sqlite3_step(r->version);
	if (rc == SQLITE_ROW)
		r->data_version = sqlite3_column_int64(r->version, 0);
	sqlite3_reset(r->version);
	if (rc != SQLITE_ROW) {
		db_error(r->db, "data_version");
		run_once(r->db, r->rollback, "rollback");
		return -1;
	}
	return 0;
}

/* One SQLite varint (the format FTS5 stores sizes in); its length, or 0. */
static int get_varint(const unsigned char *p, int n, uint64_t *v)
{
	uint64_t x = 0;
	int i;

	for (i = 0; i < 8 && i < n; i++) {
		x = x << 7 | (p[i] & 0x7F);
		if (!(p[i] & 0x80)) {
			*v = x;
			return i + 1;
		}
	}
	if (i == 8 && n > 8) {
		*v = x << 8 | p[8];
		return 9;
	}
	return 0;
}

/*
 * Reads every row's length (the sum of its column sizes) from the index's
 * docsize table, unless they were read at this data_version. 0 or -1.
 */
static int load_lengths(struct search_reader *r)
{
	struct index_state *st = &r->idx;
	sqlite3_stmt *q;
	int rc;

	if (st->version == r->data_version)
		return 0;
	q = cached(r, &r->sizes, sizes_sql);
	if (!q)
		return -1;
	if (st->cap)
		memset(st->len, 0, st->cap * sizeof(*st->len));
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		sqlite3_int64 id = sqlite3_column_int64(q, 0);
		const unsigned char *sz = sqlite3_column_blob(q, 1);
		int n = sqlite3_column_bytes(q, 1), k;
		uint64_t total = 0, v;

		if (id < 0 || id >= LENGTHS_MAX)
			continue;
		if ((size_t)id >= st->cap) {
			size_t cap = st->cap ? st->cap : 1024;
			while (cap <= (size_t)id)
				cap *= 2;
			st->len = xrealloc(st->len, cap * sizeof(*st->len));
			memset(st->len + st->cap, 0, (cap - st->cap) * sizeof(*st->len));
			st->cap = cap;
		}
		while (sz && n > 0 && (k = get_varint(sz, n, &v)) > 0) {
			total += v;
			sz += k;
			n -= k;
		}
		st->len[id] = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
	}
	sqlite3_reset(q);
	if (rc != SQLITE_DONE)
		return db_error(r->db, "reading row lengths");
	st->version = r->data_version;
	return 0;
}

/* Appends the snippet's runs as segments, splitting on the markers. */
static void add_segments(struct buf *out, const char *s, size_t n)
{
	size_t i, from = 0;
	int match = 0, first = 1;

	buf_adds(out, "\"segments\":[");
	for (i = 0; i <= n; i++) {
		if (i < n && s[i] != MARK_OPEN && s[i] != MARK_CLOSE)
			continue;
		if (i > from) {
			buf_adds(out, first ? "{\"text\":\"" : ",{\"text\":\"");
			buf_add_json(out, s + from, i - from);
			buf_adds(out, match ? "\",\"match\":true}" : "\",\"match\":false}");
			first = 0;
		}
		if (i < n)
			match = s[i] == MARK_OPEN;
		from = i + 1;
	}
	buf_addc(out, ']');
}

/* The snippet as HTML: matched runs in <mark>, everything escaped. */
static void add_marked_html(struct buf *out, const char *s, size_t n)
{
	size_t i, from = 0;
	int match = 0;

	for (i = 0; i <= n; i++) {
		if (i < n && s[i] != MARK_OPEN && s[i] != MARK_CLOSE)
			continue;
		if (i > from) {
			if (match)
				buf_adds(out, "<mark>");
			buf_add_html(out, s + from, i - from);
			if (match)
				buf_adds(out, "</mark>");
		}
		if (i < n)
			match = s[i] == MARK_OPEN;
		from = i + 1;
	}
}

/* Appends one result: the row's URL, title, score and snippet. 0 or -1. */
static int add_result(struct search_reader *r, const struct ranked *row, double scale, int first,
		      struct buf *out)
{
	struct slot *sl = r->substrings ? NULL : &r->slots[row->slot];
	sqlite3_stmt *st = cached(r, &r->doc,
				  "SELECT url, title, headings, tags, body FROM doc WHERE id = ?1");
	const char *url, *title, *text;
	int rc;

	if (!st)
		return -1;
	rc = sqlite3_bind_int64(st, 1, row->rowid);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) { /* cannot happen inside the read transaction */
		sqlite3_reset(st);
		return 0;
	}
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		return db_error(r->db, "reading a result");
	}
	url = (const char *)sqlite3_column_text(st, COL_URL);
	title = (const char *)sqlite3_column_text(st, COL_TITLE);
	buf_reset(&r->snippet);
	if (r->substrings) {
		rc = sub_snippet(&r->snippet, st, r->sub, r->nsub, &r->idx.tok);
	} else {
		text = (const char *)sqlite3_column_text(st, sl->col);
		rc = make_snippet(&r->snippet, text ? text : "",
				  text ? sqlite3_column_bytes(st, sl->col) : 0, sl->hits, sl->n,
				  &r->idx.tok);
	}
	if (rc == SQLITE_OK && r->html) {
		buf_adds(out, "<li class=\"search-result\"><a class=\"listing-link\" href=\"");
		buf_adds_html(out, url ? url : "");
		buf_adds(out, "\">");
		buf_adds_html(out, title ? title : "");
		buf_adds(out, "</a><p class=\"listing-summary\">");
		add_marked_html(out, r->snippet.ptr, r->snippet.len);
		buf_adds(out, "</p></li>\n");
	} else if (rc == SQLITE_OK) {
		buf_adds(out, first ? "{\"url\":\"" : ",{\"url\":\"");
		buf_adds_json(out, url ? url : "");
		buf_adds(out, "\",\"title\":\"");
		buf_adds_json(out, title ? title : "");
		buf_addf(out, "\",\"score\":%.6g,", row->score * scale);
		add_segments(out, r->snippet.ptr, r->snippet.len);
		buf_addc(out, '}');
	}
	sqlite3_reset(st);
	if (rc != SQLITE_OK)
		return log_error("search: snippet: %s", sqlite3_errstr(rc));
	return 0;
}

/*
 * Ranks every row matching r->match in index idx, keeping the best
 * offset + limit, then appends the page's results to out; *total gets the
 * number of matching rows. Inside a read transaction. 0 or -1 (logged).
 */
static int run_query(struct search_reader *r, int npos, int limit, int offset, struct buf *out,
		     long long *total)
{
	sqlite3_stmt *st;
	double scale = 1.0;
	size_t i;
	int rc;

	*total = 0;
	r->ntop = 0;
	r->k = (size_t)offset + (size_t)limit;
	if (r->nslots < r->k) {
		r->slots = xrealloc(r->slots, r->k * sizeof(*r->slots));
		r->nslots = r->k;
	}
	if (load_lengths(r) < 0)
		return -1;
	rc = rank_lists(r, npos, total);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		qsort(r->top, r->ntop, sizeof(*r->top), by_rank);
		if (list_hits(r, (size_t)offset) < 0)
			return -1;
		r->nlisted++;
		goto results;
	}
	if (!(st = cached(r, &r->scan, scan_sql)))
		return -1;
	rc = sqlite3_bind_text(st, 1, r->match.ptr, (int)r->match.len, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(st, 2, npos);
	/*
	 * Several phrases need their IDFs to be weighed against each other,
	 * one pass over each phrase's rows unless phrase_rows() has the count.
	 */
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(st, 3, npos > 1);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		*total = sqlite3_column_int64(st, 0);
		rc = sqlite3_step(st);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return db_error(r->db, "query");
	qsort(r->top, r->ntop, sizeof(*r->top), by_rank);
results:
	/* one phrase was ranked without its IDF: every row has the same one */
	if (npos == 1)
		scale = idf_of(r->idx.nrow, *total);
	for (i = (size_t)offset; i < r->ntop; i++)
		if (add_result(r, &r->top[i], scale, i == (size_t)offset, out) < 0)
			return -1;
	return 0;
}

/*
 * The query on substrings, once the words found nothing (see the opening
 * comment): each term's rows (sub_rows()), those in every positive term's
 * and no excluded one's ranked (rank_rows()), and the page's results with
 * the matches found in their text (sub_snippet()). Inside a read
 * transaction. 0 or -1 (logged).
 */
static int run_substrings(struct search_reader *r, const struct query *q, int limit, int offset,
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
	if (load_lengths(r) < 0)
		return -1;
	if (st->lists_version != r->data_version) {
		lists_clear(st);
		st->lists_version = r->data_version;
	}
	r->nquery++;
	for (neg_pass = 0; neg_pass < 2; neg_pass++) {
		for (i = 0; i < q->n; i++) {
			struct sub_term *t = &r->sub[npos + nneg];

			if (q->t[i].neg != neg_pass)
				continue;
			if (sub_term_read(t, &st->tok, q->t[i].core, q->t[i].core_n) != SQLITE_OK)
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
	rank_rows(r, pos, npos, NULL, neg, nneg, 0, total); /* no IDF: the caller scales */
	qsort(r->top, r->ntop, sizeof(*r->top), by_rank);
	if (npos == 1)
		scale = idf_of(st->nrow_all, *total);
	r->substrings = 1;
	for (k = (size_t)offset; ret == 0 && k < r->ntop; k++)
		ret = add_result(r, &r->top[k], scale, k == (size_t)offset, out);
	r->substrings = 0;
	return ret;
}

/*
 * Whether substrings are worth looking for, once the words found nothing:
 * when some positive term is no word of any note (a fragment, "rameter").
 * Terms that are words and merely never meet would only find noise as
 * substrings ("man" in "manual"). 1, 0, or -1 (logged).
 */
static int want_substrings(struct search_reader *r, const struct query *q)
{
	sqlite3_stmt *st;
	int i, rc;

	if (q->npos == 1 && q->n == 1)
		return 1; /* the query that found nothing was that term alone */
	st = cached(r, &r->exists, "SELECT 1 FROM fts WHERE fts MATCH ?1 LIMIT 1");
	if (!st)
		return -1;
	for (i = 0; i < q->n; i++) {
		if (q->t[i].neg)
			continue;
		buf_reset(&r->match);
		add_term(&r->match, &q->t[i]);
		rc = sqlite3_bind_text(st, 1, r->match.ptr, (int)r->match.len, SQLITE_STATIC);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc == SQLITE_DONE)
			return 1;
		if (rc != SQLITE_ROW)
			return db_error(r->db, "query");
	}
	return 0;
}

static int bad_request(struct buf *out, const char *msg)
{
	buf_adds(out, "{\"error\":\"");
	buf_adds_json(out, msg);
	buf_adds(out, "\"}");
	return -1;
}

static int query(struct search_reader *r, const char *q, int limit, int offset, struct buf *out,
		 long long *total_out);

int search_query(struct search_reader *r, const char *q, int limit, int offset, struct buf *out)
{
	long long total;
	r->html = 0;
	return query(r, q, limit, offset, out, &total);
}

int search_query_html(struct search_reader *r, const char *q, int limit, int offset,
		      struct buf *out, long long *total)
{
	int ret;

	r->html = 1;
	ret = query(r, q, limit, offset, out, total);
	r->html = 0;
	return ret;
}

static int query(struct search_reader *r, const char *q, int limit, int offset, struct buf *out,
		 long long *total_out)
{
	struct query parsed;
	struct buf results = BUF_INIT;
	const char *err = NULL;
	long long total = 0;
	size_t len = q ? strlen(q) : 0;
	int ret = 0;

	if (len == 0)
		return bad_request(out, "empty query");
	if (len > SEARCH_QUERY_MAX)
		return bad_request(out, "query longer than 256 bytes");
	if (!utf8_valid(q, len))
		return bad_request(out, "query is not valid UTF-8");
	if (limit < 1 || limit > SEARCH_LIMIT_MAX)
		return bad_request(out, "limit must be between 1 and 50");
	if (offset < 0 || offset > SEARCH_OFFSET_MAX)
		return bad_request(out, "offset must be between 0 and 1000");
	if (parse(q, len, &parsed, &err) < 0)
		return bad_request(out, err);
	if (parsed.n > 0) {
		if (read_begin(r) < 0) {
			ret = -1;
		} else {
			r->nterms = parsed.n;
			build_match(&parsed, &r->match, r->phrase);
			ret = run_query(r, parsed.npos, limit, offset, &results, &total);
			if (ret == 0 && total == 0 && substring_terms(&parsed))
				ret = want_substrings(r, &parsed);
			if (ret == 1)
				ret = run_substrings(r, &parsed, limit, offset, &results, &total);
			if (ret == 0)
				ret = run_once(r->db, r->commit, "commit");
			else if (!sqlite3_get_autocommit(r->db))
				run_once(r->db, r->rollback, "rollback");
		}
	}
	*total_out = total;
	if (ret < 0) {
		buf_adds(out, "{\"error\":\"search failed\"}");
		buf_release(&results);
		return -2;
	}
	if (r->html) {
		buf_add(out, results.ptr, results.len);
		buf_release(&results);
		return 0;
	}
	buf_adds(out, "{\"query\":\"");
	buf_add_json(out, q, len);
	buf_addf(out, "\",\"total\":%lld,\"results\":[", total);
	buf_add(out, results.ptr, results.len);
	buf_adds(out, "]}");
	buf_release(&results);
	return 0;
}
