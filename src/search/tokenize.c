/*
 * tokenize.c: the index's tokenizer, and the CJK it splits.
 *
 * What. `cjk`, the FTS5 tokenizer that fts is declared with (schema_sql in
 * db.c): it hands everything but Chinese, Japanese and Korean text to
 * unicode61 unchanged and splits each CJK run into overlapping bigrams,
 * the last character also alone (search.c's opening comment says why),
 * and, outside queries, adds the CamelCase parts of a word at its position
 * (camel_parts(): `ChildItem` is `childitem`, `child` and `item`; a query is
 * tokenized as typed, so `childitem` stays one word and `child item` finds
 * the parts); its registration on every connection (search_register_fts()); and instances of
 * the whole tokenizer as fts declares it (search_tokenizer_open()), for the C
 * code that must read text as fts does: the readers' snippets and
 * substrings, the writer's words for vocab.
 *
 * How. Text without CJK goes to the parent in pieces of about CJK_PIECE
 * bytes, so that a caller that stops early (a snippet) does not pay for
 * the rest of the text.
 */
#include "search/search.h"
#include "search/search-int.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <strings.h>

#include <sqlite3.h>

/* ---- CJK ---------------------------------------------------------------- */

/* Scripts written without spaces between words, plus Hangul. */
int search_is_cjk(uint32_t c)
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
uint32_t search_cjk_at(const char *s, int n, int *len)
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
	return search_is_cjk(c) ? c : 0;
}

/* ---- The cjk tokenizer -------------------------------------------------- */

struct cjk_tokenizer {
	fts5_tokenizer parent;   /* the wrapped tokenizer's methods */
	Fts5Tokenizer *inst;     /* and its instance, owned */
};

struct cjk_call {
	void *ctx;
	int (*token)(void *ctx, int tflags, const char *tok, int n, int start, int end);
	const char *text;        /* the whole text tokenized */
	int flags;               /* FTS5_TOKENIZE_* of the call */
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

/* ---- CamelCase ------------------------------------------------------------ */

/*
 * Words longer than this are not split: names are shorter, and a longer
 * run of mixed case is a key or a hash, whose "parts" would only fill the
 * vocabulary. Bounds the work and the buffer of camel_parts().
 */
#define CAMEL_WORD_MAX 64

static int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static int is_lower(char c) { return c >= 'a' && c <= 'z'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

/*
 * Whether a part of the word s (n bytes, ASCII letters and digits) starts
 * at i > 0: an upper-case letter after a lower-case letter or a digit
 * ("ChildItem", "Base64Encode"), or the last capital of a run when two
 * lower-case letters follow ("HTTPServer", not "IPv4" nor "URLs"). Digits
 * after letters start no part ("utf8", "x64", "win32" stay whole).
 */
static int camel_starts(const char *s, int n, int i)
{
	if (!is_upper(s[i]))
		return 0;
	if (is_lower(s[i - 1]) || is_digit(s[i - 1]))
		return 1;
	return is_upper(s[i - 1]) && i + 2 < n && is_lower(s[i + 1]) && is_lower(s[i + 2]);
}

/*
 * After the token text[start..end) went out whole, its CamelCase parts of
 * two characters or more, lower-cased, as tokens colocated with it and
 * with its offsets, so that positions do not move and a snippet
 * highlights the whole word. Only words of ASCII letters and digits are
 * split (unicode61 folds the rest, and its case is the tables'). An
 * SQLite code.
 */
static int camel_parts(struct cjk_call *c, int start, int end)
{
	const char *s = c->text + start;
	char part[CAMEL_WORD_MAX];
	int seen[CAMEL_WORD_MAX / 2][2], nseen = 0; /* the parts out: from, length */
	int n = end - start, from = 0, i, k, rc = SQLITE_OK, upper = 0;

	if (n < 4 || n > CAMEL_WORD_MAX)
		return SQLITE_OK;
	for (i = 0; i < n; i++) {
		if (is_upper(s[i]))
			upper = 1;
		else if (!is_lower(s[i]) && !is_digit(s[i]))
			return SQLITE_OK;
	}
	if (!upper)
		return SQLITE_OK;
	for (i = 1; i <= n && rc == SQLITE_OK; i++) {
		if (i < n && !camel_starts(s, n, i))
			continue;
		if (from == 0 && i == n)
			break; /* one part: the word itself */
		for (k = 0; k < nseen; k++) /* "ItemItem": a token once at a position */
			if (seen[k][1] == i - from && strncasecmp(s + seen[k][0], s + from,
								  (size_t)(i - from)) == 0)
				break;
		if (i - from >= 2 && k == nseen) {
			seen[nseen][0] = from;
			seen[nseen++][1] = i - from;
			for (k = from; k < i; k++)
				part[k - from] = is_upper(s[k]) ? (char)(s[k] - 'A' + 'a') : s[k];
			rc = c->token(c->ctx, FTS5_TOKEN_COLOCATED, part, i - from, start, end);
		}
		from = i;
	}
	return rc;
}

/* ---- The cjk tokenizer, continued ------------------------------------------ */

/* A token of the parent, at its place in the whole text, then its parts. */
static int shifted(void *p, int tflags, const char *tok, int n, int start, int end)
{
	struct cjk_call *c = p;
	int rc = c->token(c->ctx, tflags, tok, n, start + c->base, end + c->base);

	if (rc == SQLITE_OK && !(c->flags & FTS5_TOKENIZE_QUERY))
		rc = camel_parts(c, start + c->base, end + c->base);
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
		search_cjk_at(text + cur, end - cur, &len);
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
	struct cjk_call c = { ctx, token, text, flags, 0, 0 };
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
		if (!search_cjk_at(text + i, n - i, &len)) {
			i += len;
			continue;
		}
		if (i > seg)
			rc = cjk_parent(t, &c, flags, text, seg, i);
		for (j = i + len; j < n && search_cjk_at(text + j, n - j, &len); j += len)
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

/* ---- On a connection ---------------------------------------------------- */

/* FTS5's extension interface on db. An SQLite code. */
int search_fts5_api_of(sqlite3 *db, fts5_api **out)
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
int search_register_fts(sqlite3 *db)
{
	fts5_api *api = NULL;
	fts5_tokenizer tok = { cjk_create, cjk_delete, cjk_tokenize };
	int rc;

	rc = search_fts5_api_of(db, &api);
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

/* An instance of fts's tokenizer on db, where search_register_fts() ran. An SQLite code. */
int search_tokenizer_open(sqlite3 *db, struct row_tokenizer *tk)
{
	fts5_api *api = NULL;
	void *user = NULL;
	int rc = search_fts5_api_of(db, &api);

	if (rc == SQLITE_OK)
		rc = api->xFindTokenizer(api, index_tokenizer.name, &user, &tk->api);
	if (rc == SQLITE_OK)
		rc = tk->api.xCreate(user, (const char **)index_tokenizer.args,
				     index_tokenizer.nargs, &tk->inst);
	return rc;
}
