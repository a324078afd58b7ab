/*
 * test-serve.c: the real loader and the real front on a real vault.
 *
 * vault-sample (a copy, with a draft, a private note and their attachments
 * added) is loaded, served on a free loopback port, and exported; every
 * exported page is fetched over a socket and must come back with exactly
 * the exported bytes, identity and gzip. Drafts, private notes and the
 * attachments only they use are never served. An edit through the loader
 * goes live.
 */
#include "cmd/export.h"
#include "lib/httpc.h"
#include "lib/server.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "markdown/markdown.h"
#include "site/loader.h"
#include "util/gzip.h"
#include "vault/watch.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct site_server srv;
static char *vault, *out;

static int get(const char *path, const char *extra, struct resp *r)
{
	char req[4096];
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n", path, extra);
	return fetch(srv.port, req, r);
}

static void setup(void)
{
	struct site_options so = { .search = 1 };
	/* a small search bucket, so that the rate limit shows within the test */
	struct site_server_options o = { .site = &so, .threads = 2, .url_prefix = "",
					 .search_rate = 5.0, .search_burst = 30.0 };
	struct buf src = BUF_INIT;
	struct snapshot *snap;

	vault = tv_new();
	out = tv_new();
	buf_addf(&src, "%s/vault-sample", getenv("QUIRE_SOURCE_ROOT") ? getenv("QUIRE_SOURCE_ROOT") : ".");
	tv_copy(src.ptr, vault);
	buf_release(&src);
	tv_write(vault, "secret/Hidden plan.md",
		 "---\ndraft: true\n---\nHIDDENPLAN text ![[hidden-diagram.png]]\n");
	tv_write(vault, "secret/Private.md",
		 "---\npublish: false\n---\nPRIVATENOTE ![private](private-photo.png)\n");
	tv_write_len(vault, "secret/hidden-diagram.png", "\x89PNG hidden", 11);
	tv_write_len(vault, "secret/private-photo.png", "\x89PNG private", 12);

	site_server_start(&srv, vault, &o);
	CHECK(srv.loader && loader_search_path(srv.loader) != NULL);
	snap = snapshot_acquire(&srv.slot);
	CHECK_INT(export_snapshot(snap, out, NULL), 0);
	snapshot_unref(snap);
}

static void teardown(void)
{
	site_server_stop(&srv);
	tv_remove(vault);
	tv_remove(out);
}

/* Every page of the snapshot: served bytes equal exported bytes, both encodings. */
static void test_served_equals_exported(void)
{
	struct snapshot *snap = snapshot_acquire(&srv.slot);
	struct ptable_iter it = PTABLE_ITER_INIT;
	size_t checked = 0, gz = 0;
	const struct page *p;

	while ((p = ptable_next(&snap->pages, &it))) {
		struct buf path = BUF_INIT, file = BUF_INIT, url = BUF_INIT;
		char *rel;
		struct resp r;

		if (p->kind == PAGE_REDIRECT)
			continue;
		rel = export_path(p);
		buf_addf(&path, "%s/%s", out, rel);
		buf_add_urlpath(&url, p->path, p->path_len);
		CHECK(read_file(path.ptr, &file) == 0);
		if (get(url.ptr, "", &r) == 0) {
			CHECK_INT(r.status, 200);
			if (r.body.len != file.len || memcmp(r.body.ptr, file.ptr, file.len)) {
				fprintf(stderr, "  %s: served bytes differ from %s\n", p->path, rel);
				test_current_failed = 1;
			}
			checked++;
		}
		resp_free(&r);
		if (p->gz) {
			buf_adds(&path, ".gz");
			CHECK(read_file(path.ptr, &file) == 0);
			if (get(url.ptr, "Accept-Encoding: gzip\r\n", &r) == 0) {
				CHECK(hdr(&r, "Content-Encoding") && !strcmp(hdr(&r, "Content-Encoding"), "gzip"));
				CHECK(r.body.len == file.len && !memcmp(r.body.ptr, file.ptr, file.len));
				gz++;
			}
			resp_free(&r);
		}
		free(rel);
		buf_release(&path);
		buf_release(&file);
		buf_release(&url);
	}
	CHECK(checked >= 25);
	CHECK(gz >= 20);
	snapshot_unref(snap);
}

static void test_private_never_served(void)
{
	static const char *const paths[] = {
		"/secret/hidden-plan", "/secret/private", "/secret/hidden-diagram.png",
		"/secret/private-photo.png", "/drafts/roadmap",
	};
	size_t i;
	struct resp r;

	for (i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
		CHECK(get(paths[i], "", &r) == 0);
		CHECK_INT(r.status, 404);
		CHECK(!memmem(r.body.ptr, r.body.len, "HIDDENPLAN", 10));
		resp_free(&r);
	}
	CHECK(get("/_quire/tree.json", "", &r) == 0);
	CHECK(!memmem(r.body.ptr, r.body.len, "Hidden plan", 11));
	CHECK(!memmem(r.body.ptr, r.body.len, "Private", 7));
	resp_free(&r);
}

static void test_edit_goes_live(void)
{
	const char *path = "writing/links.md";
	uint64_t v;
	struct buf text = BUF_INIT, full = BUF_INIT;
	struct resp r;

	buf_addf(&full, "%s/%s", vault, path);
	CHECK(read_file(full.ptr, &text) == 0);
	buf_adds(&text, "\nFRESHLY EDITED paragraph.\n");
	tv_write_len(vault, path, text.ptr, text.len);
	v = loader_notify(srv.loader, &path, 1);
	CHECK_INT(loader_wait(srv.loader, v, 5000), 0);
	CHECK(get("/writing/links", "", &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(memmem(r.body.ptr, r.body.len, "FRESHLY EDITED", 14) != NULL);
	resp_free(&r);
	/* and a deleted note is gone from the next snapshot */
	unlink(full.ptr);
	v = loader_notify(srv.loader, &path, 1);
	CHECK_INT(loader_wait(srv.loader, v, 5000), 0);
	CHECK(get("/writing/links", "", &r) == 0);
	CHECK_INT(r.status, 404);
	resp_free(&r);
	buf_release(&text);
	buf_release(&full);
}

/*
 * A change is served before its pages are compressed (site_gzip_pending):
 * at its version a gzip-accepting client gets the new text, in either
 * encoding; soon after, gzip bytes of the same text, and the version has
 * not moved (the compressed snapshot is the same content).
 */
static void test_served_then_compressed(void)
{
	const char *path = "writing/embeds.md";
	struct buf text = BUF_INIT, full = BUF_INIT, raw = BUF_INIT;
	const char *ce;
	struct resp r;
	uint64_t v;
	int i;

	buf_addf(&full, "%s/%s", vault, path);
	CHECK(read_file(full.ptr, &text) == 0);
	for (i = 0; i < 40; i++)
		buf_addf(&text, "\nCOMPRESS-ME paragraph %d, long enough to be worth compressing.\n", i);
	tv_write_len(vault, path, text.ptr, text.len);
	v = loader_notify(srv.loader, &path, 1);
	/* live: the new text, in whichever encoding the page has yet */
	CHECK_INT(loader_wait(srv.loader, v, 5000), 0);
	CHECK(get("/writing/embeds", "Accept-Encoding: gzip\r\n", &r) == 0);
	CHECK_INT(r.status, 200);
	ce = hdr(&r, "Content-Encoding");
	if (ce && !strcmp(ce, "gzip"))
		CHECK(gzip_decompress(r.body.ptr, r.body.len, &raw) == 0);
	else
		buf_add(&raw, r.body.ptr, r.body.len);
	CHECK(memmem(raw.ptr, raw.len, "COMPRESS-ME paragraph 39", 24) != NULL);
	resp_free(&r);
	/* settled: the same text in gzip bytes, at the same version */
	CHECK_INT(loader_wait_settled(srv.loader, v, 5000), 0);
	CHECK(get("/writing/embeds", "Accept-Encoding: gzip\r\n", &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(hdr(&r, "Content-Encoding") && !strcmp(hdr(&r, "Content-Encoding"), "gzip"));
	buf_reset(&raw);
	CHECK(gzip_decompress(r.body.ptr, r.body.len, &raw) == 0);
	CHECK(memmem(raw.ptr, raw.len, "COMPRESS-ME paragraph 39", 24) != NULL);
	resp_free(&r);
	CHECK(loader_version(srv.loader) == v);
	buf_release(&text);
	buf_release(&full);
	buf_release(&raw);
}

/* GET path until its status is want and (if needle) its body holds needle; up to 10 s. */
static int eventually(const char *path, int want, const char *needle)
{
	int i;

	for (i = 0; i < 6000; i++) { /* a minute: only a hang fails */
		struct resp r;
		int ok = get(path, "", &r) == 0 && r.status == want &&
			 (!needle || memmem(r.body.ptr, r.body.len, needle, strlen(needle)));
		resp_free(&r);
		if (ok)
			return 1;
		usleep(10000);
	}
	fprintf(stderr, "  %s did not become %d%s%s\n", path, want, needle ? " with " : "",
		needle ? needle : "");
	return 0;
}

static void on_change(void *ctx, const char *const *paths, size_t n)
{
	loader_notify(ctx, paths, n);
}

/* Changes made on disk show up in the served site through the watcher. */
static void test_watched_changes(void)
{
	struct watch *w = watch_new(vault, on_change, srv.loader);
	struct buf p = BUF_INIT, q = BUF_INIT;
	size_t i;

	CHECK(w != NULL);
	if (!w)
		return;
	tv_write(vault, "Watched.md", "# Watched\n\nCREATED by hand.\n");
	CHECK(eventually("/watched", 200, "CREATED by hand"));
	tv_write(vault, "Watched.md", "# Watched\n\nEDITED in place.\n");
	CHECK(eventually("/watched", 200, "EDITED in place"));
	/* an editor's atomic save: a temporary file renamed over the note */
	tv_write(vault, ".Watched.md.tmp", "# Watched\n\nSAVED atomically.\n");
	buf_addf(&p, "%s/.Watched.md.tmp", vault);
	buf_addf(&q, "%s/Watched.md", vault);
	CHECK(rename(p.ptr, q.ptr) == 0);
	CHECK(eventually("/watched", 200, "SAVED atomically"));
	/* a rename: the new URL serves it, the old one redirects */
	buf_reset(&p);
	buf_addf(&p, "%s/Renamed.md", vault);
	CHECK(rename(q.ptr, p.ptr) == 0);
	CHECK(eventually("/renamed", 200, "SAVED atomically"));
	CHECK(eventually("/watched", 301, NULL));
	/* a new folder with a note in it */
	tv_write(vault, "New Folder/Inside.md", "INSIDE a new folder.\n");
	CHECK(eventually("/new-folder/inside", 200, "INSIDE a new folder"));
	/* a delete */
	CHECK(unlink(p.ptr) == 0);
	CHECK(eventually("/renamed", 404, NULL));
	/* a burst of 1,000 notes, as a sync or a git checkout brings */
	for (i = 0; i < 1000; i++) {
		char name[64], text[64];
		snprintf(name, sizeof(name), "burst/Note %04zu.md", i);
		snprintf(text, sizeof(text), "BURST number %zu.\n", i);
		tv_write(vault, name, text);
	}
	CHECK(eventually("/burst/note-0000", 200, "BURST number 0."));
	CHECK(eventually("/burst/note-0999", 200, "BURST number 999."));
	CHECK(eventually("/burst/note-0500", 200, "BURST number 500."));
	watch_free(w);
	buf_release(&p);
	buf_release(&q);
}

/* Search through the real index the loader filled; private text is never found. */
/* Polls the search API for up to 20 s until q finds a note; whether it did. */
static int search_finds(const char *q)
{
	char path[256];
	struct resp r;
	int i, ok = 0;

	snprintf(path, sizeof(path), "/api/search?q=%s", q);
	for (i = 0; i < 300 && !ok; i++) { /* a minute: only a hang fails */
		if (get(path, "", &r) == 0)
			ok = r.status == 200 && r.body.ptr && memmem(r.body.ptr, r.body.len, "\"url\"", 5);
		resp_free(&r);
		if (!ok)
			usleep(200 * 1000);
	}
	return ok;
}

/* Overwrites path from offset at to its end with bytes no SQLite page has. */
static void damage_after(const char *path, off_t at)
{
	struct stat st;
	char junk[4096];
	int fd = open(path, O_WRONLY);

	if (fd < 0)
		return;
	memset(junk, 0xa5, sizeof(junk));
	if (fstat(fd, &st) == 0)
		for (; at < st.st_size; at += (off_t)sizeof(junk))
			CHECK(pwrite(fd, junk, sizeof(junk), at) == (ssize_t)sizeof(junk));
	close(fd);
}

/*
 * The index file deleted, then overwritten with garbage, then damaged
 * inside, while serving: a new index is built each time, the search API
 * finds notes again, nothing crashes.
 */
static void test_search_index_lost(void)
{
	const char *db = loader_search_path(srv.loader);
	struct buf p = BUF_INIT;
	struct stat before, after;

	CHECK(db && search_finds("snapshot"));
	CHECK(stat(db, &before) == 0);
	buf_addf(&p, "%s-wal", db);
	unlink(p.ptr);
	buf_reset(&p);
	buf_addf(&p, "%s-shm", db);
	unlink(p.ptr);
	CHECK(unlink(db) == 0);
	CHECK(search_finds("snapshot"));
	/* a new file (its inode number may be the old one's, freed once no reader held it) */
	CHECK(stat(db, &after) == 0);
	/* garbage over the file in place: same inode, not a database */
	{
		FILE *f = fopen(db, "w");
		CHECK(f != NULL);
		if (f) {
			fputs("this is not a database\n", f);
			fclose(f);
		}
	}
	CHECK(search_finds("render"));
	CHECK(search_finds("snapshot"));
	/*
	 * Damage behind a header that still looks right: every page past the
	 * first overwritten in place. Queries meet it as corruption (500)
	 * until the loader, told of it, builds a new index.
	 */
	{
		struct resp r;
		int failed = 0, i;

		sqlite3 *c;

		/* every page in the file itself, none left in the log */
		CHECK(sqlite3_open(db, &c) == SQLITE_OK);
		CHECK(sqlite3_exec(c, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) ==
		      SQLITE_OK);
		sqlite3_close(c);
		damage_after(db, 4096);
		for (i = 0; i < 20 && !failed; i++) {
			CHECK(get("/api/search?q=vault", "", &r) == 0);
			failed = r.status == 500;
			resp_free(&r);
			if (!failed)
				usleep(50 * 1000);
		}
		fprintf(stderr, "  damaged index: %s\n",
			failed ? "a query failed, then" : "no query failed (pages cached?)");
		CHECK(failed);
		CHECK(search_finds("vault"));
		CHECK(search_finds("snapshot"));
	}
	buf_release(&p);
}

static void test_search(void)
{
	static const char *const hostile[] = {
		"%22unbalanced", "NEAR(a%20b)", "*", "%5E", "title%3Afoo", "AND%20OR%20NOT",
		"%FF%FE", "%00", "a%25", "-only",
	};
	struct resp r;
	size_t i;
	long total;
	char want[64];
	int ok = 0, limited = 0;

	/*
	 * The index fills after the first snapshot, words first, then the
	 * substrings and the vocabulary that suggestions come from: wait for
	 * all of it (on a loaded machine under ASan it takes seconds).
	 */
	for (i = 0; i < 600 && !loader_search_ready(srv.loader); i++)
		usleep(100000);
	CHECK(loader_search_ready(srv.loader));
	/* then for an answer, slower than the bucket refills */
	for (i = 0; i < 60 && !ok; i++) {
		ok = get("/api/search?q=snapshot", "", &r) == 0 && r.status == 200 &&
		     memmem(r.body.ptr, r.body.len, "\"url\"", 5);
		if (!ok && i == 59)
			fprintf(stderr, "  search still answers %d: %.*s\n", r.status, (int)r.body.len,
				r.body.ptr);
		resp_free(&r);
		if (!ok)
			usleep(250000);
	}
	CHECK(ok);
	CHECK(get("/api/search?q=render+on+write&limit=3", "", &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(memmem(r.body.ptr, r.body.len, "\"match\":true", 12) != NULL);
	CHECK(hdr(&r, "Content-Type") && strstr(hdr(&r, "Content-Type"), "application/json"));
	resp_free(&r);
	CHECK(get("/search?q=wikilinks", "", &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(memmem(r.body.ptr, r.body.len, "<mark>", 6) != NULL);
	CHECK(memmem(r.body.ptr, r.body.len, "search-result", 13) != NULL);
	resp_free(&r);
	/*
	 * The /search page keeps the query in its box (escaped), says how
	 * many notes match, and pages them 20 at a time: "the" is in more
	 * than 20 notes of vault-sample (as many as /api/search counts).
	 */
	CHECK(get("/api/search?q=the&limit=1", "", &r) == 0);
	total = strstr(r.body.ptr, "\"total\":") ? atol(strstr(r.body.ptr, "\"total\":") + 8) : 0;
	resp_free(&r);
	CHECK(total > 20 && total <= 40);
	CHECK(get("/search?q=the", "", &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(strstr(r.body.ptr, "name=\"q\" value=\"the\"") != NULL);
	snprintf(want, sizeof(want), "Results 1 to 20 of %ld", total);
	CHECK(strstr(r.body.ptr, want) != NULL);
	CHECK(test_count(r.body.ptr, "<li class=\"search-result\">") == 20);
	CHECK(strstr(r.body.ptr, "<a rel=\"next\" href=\"/search?q=the&amp;page=2\">") != NULL);
	CHECK(test_count(r.body.ptr, "<ol") == test_count(r.body.ptr, "</ol>") &&
	      test_count(r.body.ptr, "<ul") == test_count(r.body.ptr, "</ul>"));
	resp_free(&r);
	CHECK(get("/search?q=the&page=2", "", &r) == 0);
	snprintf(want, sizeof(want), "Results 21 to %ld of %ld", total, total);
	CHECK(r.status == 200 && strstr(r.body.ptr, want) &&
	      test_count(r.body.ptr, "<li class=\"search-result\">") == (size_t)total - 20 &&
	      strstr(r.body.ptr, "<ol class=\"listing-items search-page-results\" start=\"21\">") &&
	      strstr(r.body.ptr, "rel=\"prev\"") && !strstr(r.body.ptr, "rel=\"next\""));
	resp_free(&r);
	/* one typo: the results for the word corrected, and which word, in the API and on the page */
	CHECK(get("/api/search?q=calouts", "", &r) == 0);
	if (!strstr(r.body.ptr, "\"corrected\":\"callouts\",\"exact\":0,"))
		fprintf(stderr, "  calouts: %d %.300s\n", r.status, r.body.ptr);
	CHECK(r.status == 200 && strstr(r.body.ptr, "\"corrected\":\"callouts\",\"exact\":0,") &&
	      !strstr(r.body.ptr, "\"total\":0,"));
	resp_free(&r);
	CHECK(get("/search?q=calouts", "", &r) == 0);
	CHECK(r.status == 200 &&
	      strstr(r.body.ptr, "Showing results for <strong>callouts</strong>") &&
	      strstr(r.body.ptr, "<li class=\"search-result\">"));
	resp_free(&r);
	/* two typos in a word of seven letters: nothing found, "did you mean" */
	CHECK(get("/api/search?q=caluots", "", &r) == 0);
	CHECK(r.status == 200 && strstr(r.body.ptr, "\"total\":0,\"suggestion\":\"callouts\""));
	resp_free(&r);
	CHECK(get("/search?q=caluots", "", &r) == 0);
	CHECK(r.status == 200 && strstr(r.body.ptr, "Did you mean <a rel=\"nofollow\" "
						    "href=\"/search?q=callouts&amp;page=1\">callouts</a>?"));
	resp_free(&r);
	CHECK(get("/search?q=%22%3E%3Cb%3E&page=1", "", &r) == 0);
	CHECK(r.status == 200 && strstr(r.body.ptr, "value=\"&quot;&gt;&lt;b&gt;\"") &&
	      !strstr(r.body.ptr, "\"><b>"));
	resp_free(&r);
	CHECK(get("/search?q=the&page=0", "", &r) == 0);
	CHECK(r.status == 400 && strstr(r.body.ptr, "page a number from 1 to 51"));
	resp_free(&r);
	CHECK(get("/api/search?q=HIDDENPLAN", "", &r) == 0);
	CHECK(r.status == 200 && memmem(r.body.ptr, r.body.len, "\"total\":0", 9));
	resp_free(&r);
	CHECK(get("/api/search?q=PRIVATENOTE", "", &r) == 0);
	CHECK(r.status == 200 && memmem(r.body.ptr, r.body.len, "\"total\":0", 9));
	resp_free(&r);
	for (i = 0; i < sizeof(hostile) / sizeof(*hostile); i++) {
		char path[256];
		snprintf(path, sizeof(path), "/api/search?q=%s", hostile[i]);
		CHECK(get(path, "", &r) == 0);
		if (r.status != 200 && r.status != 400 && r.status != 429) {
			fprintf(stderr, "  q=%s: status %d\n", hostile[i], r.status);
			test_current_failed = 1;
		}
		resp_free(&r);
	}
	CHECK(get("/api/search?q=x&limit=500", "", &r) == 0);
	CHECK(r.status == 400 || r.status == 429);
	resp_free(&r);
	/* one address asking too fast gets 429 with Retry-After */
	for (i = 0; i < 80 && !limited; i++) {
		CHECK(get("/api/search?q=vault", "", &r) == 0);
		if (r.status == 429) {
			limited = 1;
			CHECK(hdr(&r, "Retry-After") != NULL);
		}
		resp_free(&r);
	}
	CHECK(limited);
}

int main(void)
{
	md_global_init();
	setup();
	RUN(test_served_equals_exported);
	RUN(test_private_never_served);
	RUN(test_edit_goes_live);
	RUN(test_served_then_compressed);
	RUN(test_search);
	RUN(test_search_index_lost);
	RUN(test_watched_changes);
	teardown();
	return test_done();
}
