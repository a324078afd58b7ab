/*
 * db.c: the index's file: its schema, connections, and opening it to write.
 *
 * What. The tables (schema_sql) and their version, and the upgrade of an
 * older schema in place (upgrade_sql); a connection with the cjk tokenizer
 * registered (search_db_open()), for the writer and the readers; the writer's
 * open (search_open_writer()), which probes the file and, the index being a
 * cache, deletes and recreates it when it is damaged or of another
 * version; the helpers the SQLite calls of every file share
 * (search_db_exec(), search_db_prepare(), search_db_step_done(), ...), which log as "search:";
 * and the record of damage that any of them met (search_take_damage()).
 */
#include "search/search.h"
#include "search/search-int.h"
#include "util/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

/*
 * Bump when the tables, the tokenizers or the rank change. 1 kept fts and
 * tri in step with triggers on doc; 2 is the same tables without them; 3
 * replaces tri (a trigram index of the text) with vocab and vocab_tri (a
 * trigram index of the words); 4 adds the CamelCase parts of words to fts
 * (tokenize.c). search_open_writer() makes a 4 of a 1, 2 or 3 in place: the
 * rows of doc are kept (and with them the hashes that spare a restart its
 * writes), fts is tokenized again from them, and the words are listed again.
 */
#define SCHEMA_VERSION 4
#define BUSY_TIMEOUT_MS 5000

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
 * What makes an index of schema 1, 2 or 3 one of schema 4: the same doc, no
 * triggers (1), no tri (1, 2), fts tokenized again (the parts of words),
 * and the vocabulary to be listed from fts.
 */
static const char upgrade_sql[] =
	"BEGIN IMMEDIATE;"
	" DROP TRIGGER IF EXISTS doc_insert;"
	" DROP TRIGGER IF EXISTS doc_delete;"
	" DROP TRIGGER IF EXISTS doc_update;"
	" DROP TABLE IF EXISTS tri;"
	" DROP TABLE IF EXISTS tri_todo;"
	VOCAB_SQL
	" INSERT INTO fts(fts) VALUES('rebuild');"
	" DELETE FROM vocab_todo;"
	" INSERT INTO vocab_todo(id, after) VALUES(0, '');"
	" PRAGMA user_version = 4;"
	"COMMIT;";

/* ---- Damage --------------------------------------------------------------- */

/*
 * The files that a connection found damaged, by identity (a reader opens
 * the path, which may be a new file by then). A few at most: one index a
 * site, and a file leaves the list when its owner takes it.
 */
#define DAMAGE_MAX 8
static pthread_mutex_t damage_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	dev_t dev;
	ino_t ino;
} damaged[DAMAGE_MAX];
static size_t ndamaged;
static atomic_int any_damage;

static int is_corruption(int rc)
{
	rc &= 0xff;
	return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
}

static void note_damage(sqlite3 *db)
{
	const char *file = sqlite3_db_filename(db, "main");
	struct stat st;
	size_t i;

	if (!file || !*file || stat(file, &st) < 0)
		return;
	pthread_mutex_lock(&damage_lock);
	for (i = 0; i < ndamaged; i++)
		if (damaged[i].dev == st.st_dev && damaged[i].ino == st.st_ino)
			break;
	if (i == ndamaged && ndamaged < DAMAGE_MAX) {
		damaged[ndamaged].dev = st.st_dev;
		damaged[ndamaged].ino = st.st_ino;
		ndamaged++;
	}
	atomic_store(&any_damage, 1);
	pthread_mutex_unlock(&damage_lock);
}

int search_take_damage(dev_t dev, ino_t ino)
{
	size_t i;
	int found = 0;

	if (!atomic_load(&any_damage))
		return 0;
	pthread_mutex_lock(&damage_lock);
	for (i = 0; i < ndamaged; i++) {
		if (damaged[i].dev == dev && damaged[i].ino == ino) {
			damaged[i] = damaged[--ndamaged];
			found = 1;
			break;
		}
	}
	atomic_store(&any_damage, ndamaged > 0);
	pthread_mutex_unlock(&damage_lock);
	return found;
}

/* ---- Connections -------------------------------------------------------- */

int search_db_error(sqlite3 *db, const char *what)
{
	if (db && is_corruption(sqlite3_extended_errcode(db)))
		note_damage(db);
	return log_error("search: %s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
}

/* Closes db, logging a failure (statements left unfinalized). Accepts NULL. */
void search_db_close(sqlite3 *db)
{
	if (sqlite3_close(db) != SQLITE_OK)
		search_db_error(db, "closing");
}

int search_db_exec(sqlite3 *db, const char *sql, const char *what)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK) {
		if (is_corruption(rc))
			note_damage(db);
		log_error("search: %s: %s", what, msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
	}
	return rc;
}

int search_db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);

	if (rc != SQLITE_OK)
		search_db_error(db, "preparing a statement");
	return rc;
}

/* Steps a statement that returns no rows and resets it. 0 or -1. */
int search_db_run_once(sqlite3 *db, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return search_db_error(db, what);
	return 0;
}

/* Steps a statement that returns no rows and resets it. An SQLite code. */
int search_db_step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Runs sql, which returns one integer row or none (*v untouched). An SQLite code. */
int search_db_query_int(sqlite3 *db, const char *sql, long long *v)
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

/* Opens path with flags, ready for the schema. An SQLite code; *out NULL on error. */
int search_db_open(const char *path, int flags, sqlite3 **out)
{
	sqlite3 *db = NULL;
	int rc;

	*out = NULL;
	rc = sqlite3_open_v2(path, &db, flags, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
	if (rc == SQLITE_OK)
		rc = search_register_fts(db);
	if (rc != SQLITE_OK) {
		log_error("search: cannot open %s: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		search_db_close(db);
		return rc;
	}
	*out = db;
	return SQLITE_OK;
}

/* ---- Opening the writer's file ------------------------------------------ */

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
	rc = search_db_query_int(db, "PRAGMA user_version", version);
	if (rc != SQLITE_OK || *version < 1 || *version > SCHEMA_VERSION)
		return rc;
	rc = search_db_query_int(db, "SELECT count(*) FROM (SELECT id FROM doc LIMIT 1)", &n);
	if (rc == SQLITE_OK)
		rc = search_db_query_int(db, "SELECT rowid FROM fts WHERE fts MATCH '\"quire\"' LIMIT 1",
				  &n);
	/* an older index's tri goes in the upgrade */
	if (rc == SQLITE_OK && *version == SCHEMA_VERSION)
		rc = search_db_query_int(
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

static int create_schema(sqlite3 *db)
{
	struct buf sql = BUF_INIT;
	int rc;

	buf_addf(&sql, "BEGIN; %s PRAGMA user_version = %d; COMMIT;", schema_sql, SCHEMA_VERSION);
	rc = search_db_exec(db, sql.ptr, "creating the index");
	if (rc != SQLITE_OK && !sqlite3_get_autocommit(db))
		search_db_exec(db, "ROLLBACK", "rolling back");
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
		search_db_error(db, "journal_mode");
	return rc;
}

/*
 * Makes an index of schema 1, 2 or 3 one of schema 4 (*version), then
 * gives back the pages tri and fts's old segments took (VACUUM copies the
 * rest, once). An SQLite code.
 */
static int upgrade(sqlite3 *db, long long *version)
{
	char *msg = NULL;
	int rc = search_db_exec(db, upgrade_sql, "upgrading the index");

	if (rc != SQLITE_OK && !sqlite3_get_autocommit(db))
		search_db_exec(db, "ROLLBACK", "rolling back");
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
int search_open_writer(const char *path, sqlite3 **out, int *fresh)
{
	const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
	sqlite3 *db = NULL;
	long long version = 0;
	int attempt, rc = SQLITE_OK;

	*out = NULL;
	*fresh = 0;
	for (attempt = 0; attempt < 2; attempt++) {
		rc = search_db_open(path, flags, &db);
		if (rc != SQLITE_OK)
			return rc;
		rc = probe(db, &version);
		if (rc == SQLITE_OK && version >= 1 && version < SCHEMA_VERSION)
			rc = upgrade(db, &version);
		if (rc == SQLITE_OK && version == SCHEMA_VERSION)
			break;
		if (rc == SQLITE_OK && version == 0) {
			long long objects = 0;
			rc = search_db_query_int(db, "SELECT count(*) FROM sqlite_schema", &objects);
			if (rc == SQLITE_OK && objects == 0) {
				*fresh = 1;
				break;
			}
		}
		if (rc != SQLITE_OK && !is_corruption(rc)) {
			search_db_error(db, path);
			search_db_close(db);
			return rc;
		}
		if (rc != SQLITE_OK)
			log_warn("search: %s is damaged (%s); rebuilding the index", path,
				 sqlite3_errstr(rc));
		else
			log_info("search: %s has schema %lld, not %d; rebuilding the index", path,
				 version, SCHEMA_VERSION);
		search_db_close(db);
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
		rc = search_db_exec(db, "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -32768;",
			     "setting up");
	if (rc == SQLITE_OK && *fresh)
		rc = create_schema(db);
	if (rc != SQLITE_OK) {
		search_db_close(db);
		return rc;
	}
	*out = db;
	return SQLITE_OK;
}
