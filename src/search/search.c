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
 * terms are looked up as substrings (search_run_substrings()). A term that fts's
 * tokenizer reads as one token is looked for inside words: vocab_tri gives
 * the words that hold it, and the term's rows are the union of theirs
 * (read word by word from fts, summing each row's weighted frequencies); a
 * term of several tokens is their phrase, the last one a word's start
 * ("Get-ChildI"). The rows in every positive term's union and in no
 * excluded one's are ranked with bm25 on those frequencies (IDF left out,
 * as for one phrase) and the unions are kept per reader with the word
 * lists, so a fragment asked again (the search box asks while one types)
 * costs the intersection. A result's snippet comes from tokenizing its
 * column (search_sub_snippet()): a word holding the fragment marks the fragment
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
 *
 * The files. search.c: the readers, the query entry points and the results
 * (the stages of a query in order); query.c: parsing what was typed;
 * rank.c: quire_rank() and the other functions FTS5 calls per row;
 * lists.c: the row lists a reader keeps, and ranking from them;
 * substring.c: queries on substrings; typo.c: words near a mistyped one
 * and the alternatives of a query that forgives typos (run_typos() here);
 * suggest.c: "did you mean"; snippet.c: snippets; tokenize.c: the cjk
 * tokenizer; db.c: the file, its schema and connections; write.c: the
 * writer; vocab.c: the vocabulary. search-int.h declares what they share.
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

/* ---- Readers ------------------------------------------------------------ */

/* Rows (times phrases) whose position lists each reader reads both ways first. */
#define POSLIST_CHECKS 1000

/* The most row ids the length cache covers; beyond, FTS5 is asked per row. */
#define LENGTHS_MAX (1 << 24)

/*
 * One step for all rows: quire_rank() is called per row as a condition
 * that always holds, and count(*) is the total. An auxiliary function is
 * not allowed as an aggregate's argument; in the select list, it was a
 * step and a row handed back per match.
 */
static const char scan_sql[] =
	"SELECT count(*) FROM fts WHERE fts MATCH ?1 AND quire_rank_fts(fts, ?2, ?3) IS NOT NULL";
static const char sizes_sql[] = "SELECT id, sz FROM fts_docsize";

/* r's statement in *slot, prepared from sql on first use; NULL on an error (logged). */
sqlite3_stmt *search_reader_stmt(struct search_reader *r, sqlite3_stmt **slot, const char *sql)
{
	if (!*slot && search_db_prepare(r->db, sql, slot) != SQLITE_OK)
		return NULL;
	return *slot;
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

	if (search_db_open(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, &db) != SQLITE_OK)
		return NULL;
	r = xcalloc(1, sizeof(*r));
	r->db = db;
	r->poslist_checks = POSLIST_CHECKS;
	r->lists_min_rows = LISTS_MIN_ROWS;
	buf_init(&r->match, 0);
	buf_init(&r->snippet, 0);
	buf_init(&r->suggestion, 0);
	buf_init(&r->corrected, 0);
	buf_init(&r->plan.text, 0);
	buf_init(&r->plan.corrected, 0);
	buf_init(&r->plan.key, 0);
	r->lex.version = -1;
	r->lex.count_version = -1;
	for (i = 0; i < SEARCH_TERMS_MAX; i++)
		buf_init(&r->sub[i].text, 0);
	r->top = xcalloc(SEARCH_OFFSET_MAX + SEARCH_LIMIT_MAX, sizeof(*r->top));
	/* map the file: readers share the OS page cache instead of each caching pages */
	rc = search_db_exec(db, "PRAGMA mmap_size = 268435456;", "setting up a reader");
	if (rc == SQLITE_OK)
		rc = search_fts5_api_of(db, &api);
	r->idx.reader = r;
	r->idx.version = -1;
	r->idx.lists_version = -1;
	if (rc == SQLITE_OK)
		rc = search_tokenizer_open(db, &r->idx.tok);
	if (rc == SQLITE_OK)
		rc = api->xCreateFunction(api, "quire_rank_fts", &r->idx, search_rank_fn, NULL);
	if (rc == SQLITE_OK)
		rc = api->xCreateFunction(api, "quire_list_fts", &r->idx, search_list_fn, NULL);
	if (rc == SQLITE_OK)
		rc = api->xCreateFunction(api, "quire_hits_fts", &r->idx, search_hits_fn, NULL);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(db, "BEGIN", &r->begin);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(db, "COMMIT", &r->commit);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(db, "ROLLBACK", &r->rollback);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(db, "PRAGMA data_version", &r->version);
	if (rc != SQLITE_OK) {
		search_db_error(db, "opening a reader");
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
	search_df_clear(&r->idx);
	free(r->idx.df);
	search_lists_clear(&r->idx);
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
	sqlite3_finalize(r->word_rows);
	sqlite3_finalize(r->word_held);
	search_lexicon_release(&r->lex);
	search_db_close(r->db);
	for (i = 0; i < SEARCH_TERMS_MAX; i++)
		buf_release(&r->sub[i].text);
	free(r->acc);
	buf_release(&r->match);
	buf_release(&r->snippet);
	buf_release(&r->suggestion);
	buf_release(&r->corrected);
	buf_release(&r->plan.text);
	buf_release(&r->plan.corrected);
	buf_release(&r->plan.key);
	free(r->top);
	free(r->slots);
	free(r);
}

/* Starts a read transaction and notes the file's data_version. 0 or -1. */
static int read_begin(struct search_reader *r)
{
	int rc;

	if (search_db_run_once(r->db, r->begin, "begin") < 0)
		return -1;
	rc = sqlite3_step(r->version);
	if (rc == SQLITE_ROW)
		r->data_version = sqlite3_column_int64(r->version, 0);
	sqlite3_reset(r->version);
	if (rc != SQLITE_ROW) {
		search_db_error(r->db, "data_version");
		search_db_run_once(r->db, r->rollback, "rollback");
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
int search_load_lengths(struct search_reader *r)
{
	struct index_state *st = &r->idx;
	sqlite3_stmt *q;
	int rc;

	if (st->version == r->data_version)
		return 0;
	q = search_reader_stmt(r, &r->sizes, sizes_sql);
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
		return search_db_error(r->db, "reading row lengths");
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
int search_add_result(struct search_reader *r, const struct ranked *row, double scale, int first,
	       struct buf *out)
{
	struct slot *sl = r->substrings ? NULL : &r->slots[row->slot];
	sqlite3_stmt *st = search_reader_stmt(
	    r, &r->doc, "SELECT url, title, headings, tags, body FROM doc WHERE id = ?1");
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
		return search_db_error(r->db, "reading a result");
	}
	url = (const char *)sqlite3_column_text(st, COL_URL);
	title = (const char *)sqlite3_column_text(st, COL_TITLE);
	buf_reset(&r->snippet);
	if (r->substrings) {
		rc = search_sub_snippet(&r->snippet, st, r->sub, r->nsub, &r->idx.tok);
	} else {
		text = (const char *)sqlite3_column_text(st, sl->col);
		rc = search_make_snippet(&r->snippet, text ? text : "",
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
	if (search_load_lengths(r) < 0)
		return -1;
	rc = search_rank_lists(r, npos, total);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		qsort(r->top, r->ntop, sizeof(*r->top), search_by_rank);
		if (search_list_hits(r, (size_t)offset) < 0)
			return -1;
		r->nlisted++;
		goto results;
	}
	if (!(st = search_reader_stmt(r, &r->scan, scan_sql)))
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
		return search_db_error(r->db, "query");
	qsort(r->top, r->ntop, sizeof(*r->top), search_by_rank);
results:
	/* one phrase was ranked without its IDF: every row has the same one */
	if (npos == 1)
		scale = search_idf_of(r->idx.nrow, *total);
	for (i = (size_t)offset; i < r->ntop; i++)
		if (search_add_result(r, &r->top[i], scale, i == (size_t)offset, out) < 0)
			return -1;
	return 0;
}

/*
 * The words as typed were in fewer than TYPO_THRESHOLD rows: the query
 * again with the words of the index near each typed one beside it
 * (typo.c), every row matching either way ranked, those with fewer typos
 * first. results and *total are replaced when the query had words to
 * correct; else they stand. Inside the read transaction. 0 or -1.
 */
static int run_typos(struct search_reader *r, const char *text, const struct query *q, int limit,
		     int offset, struct buf *results, long long *total)
{
	int nalt = search_typo_plan(r, text, q, &r->plan), ret;

	if (nalt <= 0)
		return nalt;
	search_build_typo_match(q, &r->plan, &r->typo, &r->match, r->phrase);
	r->nterms = q->n + nalt;
	r->typo.on = 1;
	r->typo.exact = 0;
	buf_reset(results);
	ret = run_query(r, q->npos + nalt, limit, offset, results, total);
	r->typo.on = 0;
	if (ret == 0 && *total > r->typo.exact) {
		buf_add(&r->corrected, r->plan.corrected.ptr, r->plan.corrected.len);
		r->exact = r->typo.exact;
	}
	return ret;
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
	int ret = 0, subs = 0;

	buf_reset(&r->suggestion);
	buf_reset(&r->corrected);
	r->exact = 0;
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
	if (search_query_parse(q, len, &parsed, &err) < 0)
		return bad_request(out, err);
	if (parsed.n > 0) {
		if (read_begin(r) < 0) {
			ret = -1;
		} else {
			r->nterms = parsed.n;
			search_build_match(&parsed, &r->match, r->phrase);
			/*
			 * One prefix alone ("param*", what a reader types):
			 * ranked from its row list and its matches found in the
			 * rows' text, as substrings are, instead of FTS5 merging
			 * the position lists of every word it starts (about ten
			 * times the time at 10,000 notes; the same rows).
			 */
			if (parsed.n == 1 && parsed.t[0].prefix && !parsed.t[0].neg &&
			    parsed.t[0].chars >= SUBSTRING_MIN)
				ret = 1;
			/*
			 * A word in no row (a seek): nothing to rank, and FTS5
			 * would read the other words' lists to find that out.
			 */
			else if ((ret = search_word_missing(r, &parsed)) == 0)
				ret = run_query(r, parsed.npos, limit, offset, &results, &total);
			else if (ret == 1)
				ret = 0;
			if (ret == 0 && total == 0 && search_substring_terms(&parsed))
				ret = search_want_substrings(r, &parsed);
			/* a word inside no word: the substring query would find nothing (a typo) */
			if (ret == 1 && !(parsed.n == 1 && parsed.t[0].prefix))
				ret = search_fragments_possible(r, &parsed);
			if (ret == 1) {
				subs = 1;
				ret = search_run_substrings(r, &parsed, limit, offset, &results, &total);
			}
			/*
			 * Few rows, and none found as part of a word: perhaps a
			 * word was mistyped. Not when substrings were looked for
			 * with an exclusion: "-dmin" excluded notes holding dmin
			 * anywhere, which a query of words cannot say.
			 */
			if (ret == 0 && total < TYPO_THRESHOLD &&
			    !(subs && (total > 0 || parsed.npos < parsed.n)))
				ret = run_typos(r, q, &parsed, limit, offset, &results, &total);
			if (ret == 0)
				ret = search_db_run_once(r->db, r->commit, "commit");
			else if (!sqlite3_get_autocommit(r->db))
				search_db_run_once(r->db, r->rollback, "rollback");
		}
	}
	/*
	 * Nothing found: perhaps a word was mistyped. Asked after the read
	 * transaction, so only a query that found nothing pays for it.
	 */
	if (ret == 0 && total == 0 && parsed.npos > 0 &&
	    search_suggest(r, q, &parsed, &r->suggestion) < 0)
		buf_reset(&r->suggestion);
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
	buf_addf(out, "\",\"total\":%lld,", total);
	if (r->suggestion.len) {
		buf_adds(out, "\"suggestion\":\"");
		buf_add_json(out, r->suggestion.ptr, r->suggestion.len);
		buf_adds(out, "\",");
	}
	if (r->corrected.len) {
		buf_adds(out, "\"corrected\":\"");
		buf_add_json(out, r->corrected.ptr, r->corrected.len);
		buf_addf(out, "\",\"exact\":%lld,", r->exact);
	}
	buf_adds(out, "\"results\":[");
	buf_add(out, results.ptr, results.len);
	buf_adds(out, "]}");
	buf_release(&results);
	return 0;
}

const char *search_reader_suggestion(const struct search_reader *r)
{
	return r->suggestion.len ? r->suggestion.ptr : NULL;
}

const char *search_reader_corrected(const struct search_reader *r, long long *exact)
{
	if (exact)
		*exact = r->exact;
	return r->corrected.len ? r->corrected.ptr : NULL;
}
