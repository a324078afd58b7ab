/*
 * search-int.h: what the files of src/search share. Internal: the module's
 * interface is search.h, which the files include before this header (this
 * one does not include it: the two would make an include circle).
 *
 * The writer's and the readers' structures, the shapes of a parsed query,
 * a row list and a match, and the functions the files call in each other,
 * by the file that defines them; each is described where it is defined.
 * search.c's opening comment is the design of the whole.
 */
#ifndef QUIRE_SEARCH_INT_H
#define QUIRE_SEARCH_INT_H

#ifndef QUIRE_SEARCH_H
#error "include search/search.h before search/search-int.h: a module's private header does not include its public one (no include circle)"
#endif

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "util/buf.h"
#include "util/unicode.h"

/* Columns of fts, in order. */
enum { COL_URL, COL_TITLE, COL_HEADINGS, COL_TAGS, COL_BODY, NCOLS };

/* Matches considered when choosing a snippet's window (snippet.c). */
#define SNIP_HITS_MAX 64
#define SNIP_SPAN 200  /* bytes after a match where other terms count */
#define SNIP_BYTES 240 /* a snippet's bytes at most, from its anchor on */

/* The fewest characters of a substring, and of a word worth listing in vocab. */
#define SUBSTRING_MIN 3

/* Around the matches in a snippet: search_put() replaces them in any text. */
#define MARK_OPEN '\x01'
#define MARK_CLOSE '\x02'

/* Characters in s (n bytes of UTF-8), counting up to max at most. */
static inline int chars_upto(const char *s, int n, int max)
{
	int i, chars = 0;

	for (i = 0; i < n && chars < max; i++)
		chars += ((unsigned char)s[i] & 0xC0) != 0x80;
	return chars;
}

/* Where the character after the one at p starts in t (len bytes). */
static inline int next_char(const char *t, int len, int p)
{
	p++;
	while (p < len && ((unsigned char)t[p] & 0xC0) == 0x80)
		p++;
	return p;
}

/* A match in a column, for the snippet. */
struct hit {
	int phrase;
	int first, last;   /* token positions */
	int start, end;    /* bytes, once mapped; -1 before */
};

/*
 * An instance of fts's tokenizer: a reader's, to find a row's matches in
 * its text; the writer's, for the words of new rows.
 */
struct row_tokenizer {
	fts5_tokenizer api;
	Fts5Tokenizer *inst;     /* owned */
};

/*
 * A term of a substring query (see search_run_substrings()) as fts's tokenizer
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

/*
 * Rows waiting in vocab_todo from which search_fill_substrings() lists the
 * words of the whole index (a pass over fts's terms, 0.2 s for 10,000
 * notes) instead of tokenizing each row again, and the terms of that pass
 * each row of its argument stands for (a step of 250 rows: 5,000 terms).
 */
#define VOCAB_BULK_ROWS 1000
#define VOCAB_TERMS_PER_ROW 20

/* A set of words: those of the rows being written, on their way to vocab. */
struct term_set {
	char **slot;             /* open addressing, NUL-terminated words; NULL: free */
	size_t cap, n;           /* cap is 0 or a power of two */
};

struct staged;

/* The writer (write.c, vocab.c). */
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

/* A term of the query, as search_query_parse() splits it. */
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

/*
 * The rows a phrase is in, with its weighted frequency in each (what
 * quire_rank() computes per row), read with one pass over the phrase
 * alone (quire_list()). A query whose terms are all positive is then
 * ranked by intersecting its phrases' lists in C (search_rank_lists()) instead of
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

struct df_entry;

/*
 * Typos (typo.c): a word of TYPO_ONE_FROM code points or more may have
 * one, of TYPO_TWO_FROM or more two (Meilisearch's rule); a typed word
 * brings at most TYPO_PER_WORD words near it, a query TYPO_QUERY_MAX in
 * all; and words near the typed ones are looked for when the words as
 * typed are in fewer than TYPO_THRESHOLD rows (Typesense's
 * typo_tokens_threshold): then those rows come first, the others after.
 */
#define TYPO_ONE_FROM 5
#define TYPO_TWO_FROM 9
#define TYPO_PER_WORD 8
#define TYPO_QUERY_MAX 48
#define TYPO_THRESHOLD 10

/* The phrases of a MATCH expression at most: each term and its alternatives. */
#define SEARCH_PHRASES_MAX (SEARCH_TERMS_MAX + TYPO_QUERY_MAX)

/* A word of the vocabulary in a reader's memory (struct lexicon). */
struct lex_entry {
	uint64_t mask;       /* its characters, a bit each (shared by some) */
	uint32_t off;        /* in lexicon.text */
	uint16_t bytes;
};

struct lex_bucket {
	struct lex_entry *e;
	size_t n, alloc;
};

/* A word's rows (fts5vocab's count), kept by struct lexicon. */
#define WORD_COUNTS 256
struct word_count {
	char w[64];
	size_t n;            /* 0: empty */
	sqlite3_int64 rows;
};

/* vocab in a reader's memory, by length in code points, read up to last_id. */
struct lexicon {
	struct word_count count[WORD_COUNTS];
	long long count_version; /* data_version of the counts */
	struct lex_bucket bucket[UNICODE_DISTANCE_CHARS + 1];
	char *text;          /* the words, one after the other, no separator */
	size_t len, alloc;
	sqlite3_int64 last_id;
	long long version;   /* data_version it was brought up to; -1: never */
	sqlite3_stmt *more, *top;
};

/* The first token of a text and how many it has (search_take_token()). */
struct one_token {
	char w[4 * UNICODE_DISTANCE_CHARS + 1];
	size_t n;            /* 0 when it was longer than w */
	int ntok;            /* colocated ones left out */
};

/* A word near a typed one (search_typo_near()). */
struct near_word {
	char w[4 * UNICODE_DISTANCE_CHARS + 1];
	size_t n;
	int dist;
	sqlite3_int64 rows;
};

/* An alternative of a query's term: its phrase with one word corrected. */
struct typo_alt {
	int term;            /* in the query */
	int dist;            /* edits from what was typed */
	size_t at, len;      /* its phrase in typo_plan.text */
};

/* A term's word that reads corrected: where it is in the query, and the nearest. */
struct typo_fix {
	int has;             /* the term has a word near one of its own */
	int absent;          /* no row holds the word as typed */
	int unmatched;       /* a word of the term is in no row: it matches nothing as typed */
	size_t start, end;   /* the word as typed, in the query's text */
	struct near_word word;
};

/* A query's alternatives (search_typo_plan()), and the query as it reads corrected. */
struct typo_plan {
	struct buf text;
	struct typo_alt alt[TYPO_QUERY_MAX];
	int nalt;
	struct typo_fix fix[SEARCH_TERMS_MAX];
	struct buf corrected;
	struct buf key;      /* a word as a MATCH expression, for search_word_held() */
};

/*
 * The typo query under way: what phrase i of the MATCH expression stands
 * for (which term, how many edits), for quire_rank() to count a row's
 * typos; and what the rows showed.
 */
struct typo_query {
	int on;
	int nterm;                           /* positive terms */
	int npos;                            /* positive phrases */
	int skip[SEARCH_PHRASES_MAX];        /* the phrase matches nothing (a word in no row) */
	int term_of[SEARCH_PHRASES_MAX], dist[SEARCH_PHRASES_MAX];
	long long exact;                     /* rows with no typo */
};

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
	int typos;           /* words it matched only corrected, by their edits */
};

struct slot {
	int col;             /* the column the hits are in */
	int n;
	struct hit hits[SNIP_HITS_MAX];
};

/* A reader: one serving thread's connection, and what its queries keep. */
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
	size_t phrase[SEARCH_PHRASES_MAX][2]; /* where each positive phrase is in match */
	int nterms;              /* terms in match, positive and excluded */
	int html;                /* search_add_result writes HTML list items, not JSON */
	/* rows whose position lists are still read both ways (see phrase_freq()); -1: API only */
	int poslist_checks;
	long lists_min_rows;     /* rank from row lists when the query allows
				    (search_rank_lists()); -1: never */
	unsigned long long nquery;
	long long nlisted;       /* queries ranked from lists */
	sqlite3_stmt *list_scan, *hit_scan, *vocab_scan;
	/* a substring query under way (search_run_substrings()): its terms, the positive ones first */
	struct sub_term sub[SEARCH_TERMS_MAX];
	int nsub;                /* its positive terms */
	int substrings;          /* search_add_result() finds the matches in the row itself */
	double *acc;             /* by row id from a base: frequencies summed, else 0 */
	size_t acc_cap;
	/* "did you mean" (suggest.c): the last query's suggestion, or empty */
	struct buf suggestion;
	sqlite3_stmt *word_rows, *word_held;
	/* typos (typo.c): the vocabulary, the last query's plan and ranking */
	struct lexicon lex;
	struct typo_plan plan;
	struct typo_query typo;
	struct buf corrected;    /* the last query as corrected, when results were; or empty */
	long long exact;         /* its rows without a typo */
};

/* bm25's parameters, as FTS5's (rank.c, and search_rank_rows() in lists.c). */
#define BM25_K1 1.2
#define BM25_B 0.75

/* a ranks above b: fewer typos, then a higher score, then an older row */
static inline int above(const struct ranked *a, const struct ranked *b)
{
	if (a->typos != b->typos)
		return a->typos < b->typos;
	return a->score > b->score || (a->score == b->score && a->rowid < b->rowid);
}

/* tokenize.c: the cjk tokenizer, and instances of fts's */
int search_is_cjk(uint32_t c);
uint32_t search_cjk_at(const char *s, int n, int *len);
int search_fts5_api_of(sqlite3 *db, fts5_api **out);
int search_register_fts(sqlite3 *db);
int search_tokenizer_open(sqlite3 *db, struct row_tokenizer *tk);

/* db.c: connections, the schema, the writer's file */
int search_db_error(sqlite3 *db, const char *what);
void search_db_close(sqlite3 *db);
int search_db_exec(sqlite3 *db, const char *sql, const char *what);
int search_db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st);
int search_db_run_once(sqlite3 *db, sqlite3_stmt *st, const char *what);
int search_db_step_done(sqlite3_stmt *st);
int search_db_query_int(sqlite3 *db, const char *sql, long long *v);
int search_db_open(const char *path, int flags, sqlite3 **out);
int search_open_writer(const char *path, sqlite3 **out, int *fresh);

/* vocab.c: the words of new rows */
void search_terms_clear(struct term_set *t);
int search_collect_terms(struct search *s, const char *text, int n);
int search_vocab_flush(struct search *s);

/* query.c: parsing what was typed */
int search_query_parse(const char *q, size_t len, struct query *out, const char **err);
void search_match_add_string(struct buf *b, const char *s, size_t n);
void search_match_add_term(struct buf *b, const struct term *t);
int search_substring_terms(const struct query *q);

/*
 * suggest.c: into out, the query text (whose terms q holds) with each word
 * the index lacks replaced by the most frequent indexed word one or two
 * edits from it (a prefix term's word too: search.c asks only when
 * nothing was found); empty when no word changed. 0, or -1 on a database
 * error (logged).
 */
int search_suggest(struct search_reader *r, const char *text, const struct query *q,
		   struct buf *out);
void search_build_match(const struct query *q, struct buf *b, size_t span[SEARCH_PHRASES_MAX][2]);

/* typo.c: words near a typed one, a query's alternatives */
void search_lexicon_release(struct lexicon *lx);
int search_take_token(void *p, int tflags, const char *tok, int n, int start, int end);
int search_word_held(struct search_reader *r, const char *w, size_t n);
sqlite3_int64 search_word_rows(struct search_reader *r, const char *w, size_t n);
/*
 * Into out (room for cap), the words some row holds 1 to max (at most 2)
 * edits from w (folded, n bytes), nearest first, then in more rows: their
 * count, or -1 on an error (logged). Inside a read transaction.
 */
int search_typo_near(struct search_reader *r, const char *w, size_t n, int max,
		     struct near_word *out, int cap);
int search_typos_allowed(int nc);
/*
 * Whether each positive word of q (typed as one word: not a phrase, not a
 * prefix) is inside some word of the vocabulary, as a substring query
 * needs to find anything: 0 when one is in none (a mistyped word: the
 * substring query is skipped), 1 when they all are or it cannot tell, -1
 * on an error. Inside a read transaction.
 */
int search_fragments_possible(struct search_reader *r, const struct query *q);
/*
 * Whether a positive word of q (one token, not a prefix) is in no row, so
 * that the query finds nothing: 1, 0, or -1 on an error.
 */
int search_word_missing(struct search_reader *r, const struct query *q);
/*
 * The alternatives of q's words (text, as typed) into plan, and the query
 * as it reads corrected: their count, or -1 on an error. Inside a read
 * transaction.
 */
int search_typo_plan(struct search_reader *r, const char *text, const struct query *q,
		     struct typo_plan *plan);
void search_build_typo_match(const struct query *q, const struct typo_plan *plan,
			     struct typo_query *tq, struct buf *b,
			     size_t span[SEARCH_PHRASES_MAX][2]);

/* snippet.c */
int search_by_position(const void *a, const void *b);
int search_make_snippet(struct buf *out, const char *text, int len, struct hit *hits, int n,
		 struct row_tokenizer *tk);
void search_emit_snippet(struct buf *out, const char *text, int len, const struct hit *hits, int n);

/* rank.c: the functions FTS5 calls per row, bm25, the heap of the best rows */
double search_idf_of(sqlite3_int64 nrow, sqlite3_int64 nhit);
void search_df_clear(struct index_state *st);
int search_by_rank(const void *a, const void *b);
void search_heap_put(struct search_reader *r, struct ranked x);
void search_rank_fn(const Fts5ExtensionApi *x, Fts5Context *fc, sqlite3_context *ctx, int argc,
	     sqlite3_value **argv);
void search_list_fn(const Fts5ExtensionApi *x, Fts5Context *fc, sqlite3_context *ctx, int argc,
	     sqlite3_value **argv);
void search_hits_fn(const Fts5ExtensionApi *x, Fts5Context *fc, sqlite3_context *ctx, int argc,
	     sqlite3_value **argv);

/* lists.c: the row lists a reader keeps */
void search_list_free(struct row_list *l);
void search_lists_clear(struct index_state *st);
struct row_list *search_list_find(struct search_reader *r, struct index_state *st, const char *key,
			   size_t len);
struct row_list *search_list_new(struct search_reader *r, const char *key, size_t len);
void search_list_keep(struct search_reader *r, struct index_state *st, struct row_list *l);
int search_list_read_rows(struct search_reader *r, struct index_state *st, const char *match,
			   size_t len, struct row_list *l);
int search_rank_rows(struct search_reader *r, struct row_list **pos, int npos, const double *idf,
	      struct row_list **neg, int nneg, int strict, long long *total);
int search_rank_lists(struct search_reader *r, int npos, long long *total);
int search_list_hits(struct search_reader *r, size_t from);

/* substring.c: queries on substrings */
int search_sub_snippet(struct buf *out, sqlite3_stmt *row, const struct sub_term *terms, int nterms,
		struct row_tokenizer *tk);
int search_run_substrings(struct search_reader *r, const struct query *q, int limit, int offset,
		   struct buf *out, long long *total);
int search_want_substrings(struct search_reader *r, const struct query *q);

/* search.c: readers and results */
sqlite3_stmt *search_reader_stmt(struct search_reader *r, sqlite3_stmt **slot, const char *sql);
int search_load_lengths(struct search_reader *r);
int search_add_result(struct search_reader *r, const struct ranked *row, double scale, int first,
	       struct buf *out);

#endif
