/*
 * write.c: the writer, the loader's side of the index.
 *
 * What. search_open() and search_free(); puts and deletes, staged in
 * memory and applied at the commit in the order FTS5 writes cheaply
 * (struct staged says why); transactions; and the calls that maintain the
 * file (search_check(), search_optimize(), search_settle()). The words of
 * the rows written go to the vocabulary (vocab.c).
 */
#include "search/search.h"
#include "search/search-int.h"
#include "util/log.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

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
 * vocab (see search_vocab_flush()), or their ids into vocab_todo when substrings
 * are deferred.
 */
#define STAGE_MAX (8 << 20)

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

struct search *search_open(const char *path, int *fresh)
{
	struct search *s = xcalloc(1, sizeof(*s));
	int i, rc;

	for (i = 0; i < 5; i++)
		buf_init(&s->field[i], 0);
	rc = search_open_writer(path, &s->db, fresh);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(
		    s->db,
		    "SELECT id, title IS ?2 AND headings IS ?3 AND tags IS ?4 AND body IS ?5"
		    " FROM doc WHERE url = ?1",
		    &s->find);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(
		    s->db,
		    "INSERT INTO doc(url, title, headings, tags, body) VALUES(?1, ?2, ?3, ?4, ?5)",
		    &s->insert);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db,
				"SELECT url, title, headings, tags, body FROM doc WHERE id = ?1",
				&s->old_row);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, "DELETE FROM doc WHERE id = ?1", &s->remove);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, index_put_sql, &s->index_put);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, index_del_sql, &s->index_del);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, "INSERT INTO vocab_todo(id) VALUES(?1)", &s->todo_add);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, "DELETE FROM vocab_todo WHERE id = ?1", &s->todo_del);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db,
				"SELECT t.id, d.title, d.headings, d.tags, d.body FROM vocab_todo t"
				" LEFT JOIN doc d ON d.id = t.id"
				" WHERE t.id > 0 ORDER BY t.id LIMIT ?1",
				&s->todo_next);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, "DELETE FROM vocab_todo WHERE id > 0 AND id <= ?1",
				&s->todo_done);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(
		    s->db, "SELECT count(*) FROM (SELECT 1 FROM vocab_todo WHERE id > 0 LIMIT ?1)",
		    &s->todo_left);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s->todo_left, 1, VOCAB_BULK_ROWS);
	/* fts's terms in order, from the index itself (a temporary table of this connection) */
	if (rc == SQLITE_OK)
		rc = search_db_exec(s->db,
			     "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_terms"
			     " USING fts5vocab(main, fts, row)",
			     "setting up");
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, "SELECT after FROM vocab_todo WHERE id = 0", &s->scan_after);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(
		    s->db, "SELECT term FROM temp.fts_terms WHERE term > ?1 ORDER BY term LIMIT ?2",
		    &s->scan_next);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, "UPDATE vocab_todo SET after = ?1 WHERE id = 0",
				&s->scan_save);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, "DELETE FROM vocab_todo WHERE id = 0", &s->scan_end);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, "INSERT OR IGNORE INTO vocab(term) VALUES(?1)",
				&s->vocab_add);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, "SELECT coalesce(max(id), 0) FROM vocab", &s->vocab_max);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db,
				"INSERT INTO vocab_tri(rowid, term) SELECT id, term FROM vocab"
				" WHERE id > ?1",
				&s->vocab_sync);
	if (rc == SQLITE_OK)
		rc = search_tokenizer_open(s->db, &s->tok);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, "BEGIN IMMEDIATE", &s->begin);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, "COMMIT", &s->commit);
	if (rc == SQLITE_OK)
		rc = search_db_prepare(s->db, "ROLLBACK", &s->rollback);
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
	search_terms_clear(&s->terms);
	free(s->terms.slot);
	sqlite3_finalize(s->begin);
	sqlite3_finalize(s->commit);
	sqlite3_finalize(s->rollback);
	search_db_close(s->db);
	for (i = 0; i < 5; i++)
		buf_release(&s->field[i]);
	free(s->staged);
	free(s);
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

/* Removes row id from doc and fts, which needs its old values. An SQLite code. */
static int remove_row(struct search *s, sqlite3_int64 id)
{
	int rc, k;

	rc = sqlite3_bind_int64(s->todo_del, 1, id);
	if (rc == SQLITE_OK)
		rc = search_db_step_done(s->todo_del);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s->old_row, 1, id);
	if (rc == SQLITE_OK && (rc = sqlite3_step(s->old_row)) == SQLITE_ROW) {
		rc = sqlite3_bind_int64(s->index_del, 1, id);
		for (k = 0; k < NCOLS && rc == SQLITE_OK; k++)
			rc = sqlite3_bind_value(s->index_del, k + 2,
						sqlite3_column_value(s->old_row, k));
		if (rc == SQLITE_OK)
			rc = search_db_step_done(s->index_del);
	}
	sqlite3_reset(s->old_row);
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK; /* not stored: nothing to remove */
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s->remove, 1, id);
	if (rc == SQLITE_OK)
		rc = search_db_step_done(s->remove);
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
			rc = search_db_step_done(s->insert);
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
			rc = search_db_step_done(s->index_put);
	}
	sqlite3_clear_bindings(s->index_put);
	for (i = 0; i < s->nstaged && rc == SQLITE_OK; i++) {
		struct staged *c = &s->staged[i];

		if (c->op != OP_PUT)
			continue;
		if (s->defer) {
			rc = sqlite3_bind_int64(s->todo_add, 1, c->new_id);
			if (rc == SQLITE_OK)
				rc = search_db_step_done(s->todo_add);
			continue;
		}
		for (k = 0; k < 4 && rc == SQLITE_OK; k++)
			rc = search_collect_terms(s, c->field[k], (int)c->len[k]);
	}
	if (rc == SQLITE_OK)
		rc = search_vocab_flush(s);
	search_terms_clear(&s->terms);
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
		return search_db_error(s->db, "writing the index");
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
	if (search_db_run_once(s->db, s->begin, "begin") < 0)
		return -1;
	s->in_tx = 1;
	return 0;
}

int search_commit(struct search *s)
{
	if (!s->in_tx)
		return log_error("search: commit without a transaction");
	if (apply_staged(s) < 0 || search_db_run_once(s->db, s->commit, "commit") < 0) {
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
	search_db_run_once(s->db, s->rollback, "rollback");
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
		ret = search_db_error(s->db, "put");
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
		ret = search_db_error(s->db, "delete");
	else
		ret = stage(s, OP_DELETE, id);
	if (implicit)
		return ret < 0 ? (search_rollback(s), -1) : search_commit(s);
	return ret;
}

/*
 * The body stored for url, as this transaction has it so far: a put
 * staged for url, else the committed row. 1 (into out), 0 when url has no
 * row, -1 on error.
 */
static int stored_body(struct search *s, const char *url, struct buf *out)
{
	sqlite3_int64 id;
	size_t i;
	int same, rc;

	for (i = s->nstaged; i-- > 0;) {
		const struct staged *c = &s->staged[i];
		if (strcmp(c->url, url) != 0)
			continue;
		if (c->op == OP_DELETE)
			return 0;
		if (c->op == OP_PUT) {
			buf_add(out, c->field[COL_BODY - 1], c->len[COL_BODY - 1]);
			return 1;
		}
		break; /* OP_KEEP: what is stored */
	}
	if (find_row(s, url, 0, &id, &same) != SQLITE_OK)
		return search_db_error(s->db, "move");
	if (!id)
		return 0;
	rc = sqlite3_bind_int64(s->old_row, 1, id);
	if (rc == SQLITE_OK && (rc = sqlite3_step(s->old_row)) == SQLITE_ROW) {
		const void *body = sqlite3_column_blob(s->old_row, COL_BODY);
		buf_add(out, body, (size_t)sqlite3_column_bytes(s->old_row, COL_BODY));
	}
	sqlite3_reset(s->old_row);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? 0 : search_db_error(s->db, "move");
	return 1;
}

int search_move(struct search *s, const char *from, const char *to, const char *title,
		const char *headings, const char *tags)
{
	struct buf body = BUF_INIT;
	int implicit = !s->in_tx, ret;

	if (!from || !*from || !to || !*to)
		return log_error("search: move without a url");
	if (implicit && search_begin(s) < 0)
		return -1;
	set_field(s, 0, from);
	ret = stored_body(s, s->field[0].ptr, &body);
	if (ret > 0 && strcmp(from, to) != 0 && search_delete(s, from) < 0)
		ret = -1;
	if (ret > 0 && search_put(s, to, title, headings, tags, body.ptr ? body.ptr : "") < 0)
		ret = -1;
	buf_release(&body);
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
		return search_db_error(s->db, "prune");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *url = (const char *)sqlite3_column_text(st, 0);
		if (url && !keep(ctx, url)) {
			ALLOC_GROW(gone, n + 1, alloc);
			gone[n++] = xstrdup(url);
		}
	}
	if (rc != SQLITE_DONE)
		ret = search_db_error(s->db, "prune");
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
	if (search_db_exec(s->db,
		    "INSERT INTO fts(fts) VALUES('integrity-check');"
		    " INSERT INTO vocab_tri(vocab_tri) VALUES('integrity-check');",
		    "check") != SQLITE_OK)
		return -1;
	rc = search_db_query_int(s->db, "SELECT count(*) FROM vocab_todo", &behind);
	if (rc == SQLITE_OK && behind == 0)
		rc = search_db_query_int(s->db,
				  "SELECT count(*) FROM temp.fts_terms t WHERE length(t.term) >= 3"
				  " AND NOT EXISTS (SELECT 1 FROM vocab v WHERE v.term = t.term)",
				  &missing);
	if (rc != SQLITE_OK)
		return search_db_error(s->db, "check");
	if (missing > 0)
		return log_error("search: %lld words of the index are not in its vocabulary",
				 missing);
	return 0;
}

int search_optimize(struct search *s)
{
	if (s->in_tx)
		return log_error("search: optimize inside a transaction");
	if (search_db_exec(s->db,
		    "INSERT INTO fts(fts) VALUES('optimize');"
		    " INSERT INTO vocab_tri(vocab_tri) VALUES('optimize');"
		    " PRAGMA wal_checkpoint(TRUNCATE);",
		    "optimize") != SQLITE_OK)
		return -1;
	return 0;
}

int search_settle(struct search *s)
{
	if (s->in_tx)
		return log_error("search: settle inside a transaction");
	if (search_db_exec(s->db, "PRAGMA cache_size = -2000;", "settling") != SQLITE_OK)
		return -1;
	sqlite3_db_release_memory(s->db);
	return 0;
}
