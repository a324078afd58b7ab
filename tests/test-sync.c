/*
 * test-sync.c: `quire sync` (the built binary, $QUIRE_BIN) against a real
 * server started in-process as `quire serve` starts it.
 *
 * The server side is inspected directly: its files on disk, its pages
 * over HTTP, and the sync API's counters (how many PUTs it took), so that
 * "uploads nothing" and "uploads only the rest" are checked on the server,
 * not only in the client's summary.
 */
#include "lib/httpc.h"
#include "lib/server.h"
#include "lib/syncproc.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "sync/syncapi.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "vault/vault.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN "sync-test-token-0123"

static char *server_vault, *client_vault, *token_file;
static struct site_server srv;
static char url[64];
static const char *quire_bin;

/* The server; again on the port it had (a restart) when listen is set. */
static void start_server_on(const char *listen)
{
	struct syncapi_options so;
	struct site_server_options o = { .threads = 2, .max_body_size = SYNCAPI_DEFAULT_MAX_UPLOAD,
					 .sync = &so, .listen = listen };

	memset(&so, 0, sizeof(so));
	so.vault = server_vault;
	so.token = TOKEN;
	site_server_start(&srv, server_vault, &o);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv.port);
}

static void start_server(void)
{
	start_server_on(NULL);
}

static void stop_server(void)
{
	CHECK_INT(site_server_stop(&srv), 0);
}

static struct syncapi_stats stats(void)
{
	struct syncapi_stats st;

	syncapi_get_stats(srv.sync, &st);
	return st;
}

/* ---- running the client ---- */

/* `quire sync client_vault url --token-file F extra...` with env (NAME=VALUE...) added. */
static void spawn(struct syncproc *r, const char *const *extra, const char *const *env)
{
	syncproc_spawn(r, client_vault, url, token_file, extra, env);
}

static int sync_run(struct syncproc *r, const char *const *extra, const char *const *env)
{
	spawn(r, extra, env);
	return syncproc_finish(r);
}

static int out_has(const struct syncproc *r, const char *s)
{
	if (!strstr(r->out.ptr, s)) {
		fprintf(stderr, "  output lacks '%s':\n%s", s, r->out.ptr);
		return 0;
	}
	return 1;
}

/* ---- comparing the two sides ---- */

static int same_file(const char *rel)
{
	struct buf a = BUF_INIT, b = BUF_INIT, pa = BUF_INIT, pb = BUF_INIT;
	int same;

	buf_addf(&pa, "%s/%s", client_vault, rel);
	buf_addf(&pb, "%s/%s", server_vault, rel);
	same = read_file(pa.ptr, &a) == 0 && read_file(pb.ptr, &b) == 0 && a.len == b.len &&
	       memcmp(a.ptr, b.ptr, a.len) == 0;
	buf_release(&a);
	buf_release(&b);
	buf_release(&pa);
	buf_release(&pb);
	return same;
}

/* Every file of the client's vault is on the server with the same bytes. */
static void check_mirror(void)
{
	struct vault_scan scan = VAULT_SCAN_INIT;
	struct diag_list d;
	size_t i;

	diag_list_init(&d);
	CHECK(vault_scan(client_vault, NULL, &scan, &d) == 0);
	for (i = 0; i < scan.n; i++) {
		if (!same_file(scan.files[i].path))
			fprintf(stderr, "  differs: %s\n", scan.files[i].path);
		CHECK(same_file(scan.files[i].path));
	}
	vault_scan_release(&scan);
	diag_list_release(&d);
}

/* ---- tests ---- */

static void test_first_sync(void)
{
	struct syncapi_stats s0 = stats(), s1;
	struct buf b = BUF_INIT;
	struct syncproc r;

	CHECK_INT(sync_run(&r, NULL, NULL), 0);
	CHECK(out_has(&r, "uploaded 8, downloaded 0, merged 0, deleted 0 here and 0 on the server, unchanged 0, "
			   "conflicts 0, failed 0 in "));
	syncproc_free(&r);
	s1 = stats();
	CHECK_INT(s1.puts - s0.puts, 8);
	check_mirror();
	/* the client waited: the pages are live as soon as it exits */
	CHECK_INT(fetch_page(srv.port, "/", &b), 200);
	CHECK(strstr(b.ptr, "Synced home") != NULL);
	CHECK_INT(fetch_page(srv.port, "/projects/alpha", &b), 200);
	CHECK(strstr(b.ptr, "Alpha plan") != NULL);
	CHECK_INT(fetch_page(srv.port, "/journal/2024/day-one", &b), 200);
	CHECK(!tv_exists(server_vault, ".obsidian/app.json"));
	buf_release(&b);
}

static void test_noop_resync(void)
{
	struct syncapi_stats s0 = stats(), s1;
	struct syncproc r;

	CHECK_INT(sync_run(&r, NULL, NULL), 0);
	CHECK(out_has(&r, "uploaded 0, downloaded 0, merged 0, deleted 0 here and 0 on the server, unchanged 8, "
			   "conflicts 0, failed 0 in "));
	syncproc_free(&r);
	s1 = stats();
	CHECK_INT(s1.puts - s0.puts, 0);
	CHECK_INT(s1.deletes - s0.deletes, 0);
}

static void test_dry_run(void)
{
	const char *const dry[] = { "--dry-run", NULL };
	struct syncapi_stats s0, s1;
	struct buf b = BUF_INIT;
	struct syncproc r;

	tv_write(client_vault, "projects/alpha.md", "# Alpha\n\nAlpha plan, revised.\n");
	tv_write(client_vault, "projects/gamma.md", "# Gamma\n\nNew project.\n");
	{
		struct buf p = BUF_INIT;
		buf_addf(&p, "%s/notes/scratch.md", client_vault);
		CHECK(unlink(p.ptr) == 0);
		buf_release(&p);
	}
	s0 = stats();
	CHECK_INT(sync_run(&r, dry, NULL), 0);
	CHECK(out_has(&r, "would upload projects/alpha.md (changed"));
	CHECK(out_has(&r, "would upload projects/gamma.md (new"));
	CHECK(out_has(&r, "would delete notes/scratch.md on the server"));
	CHECK(out_has(&r, "dry run: would have uploaded 2, downloaded 0, merged 0, deleted 0 here and 1 "
			  "on the server, unchanged 6"));
	syncproc_free(&r);
	s1 = stats();
	CHECK_INT(s1.puts - s0.puts, 0);
	CHECK_INT(s1.deletes - s0.deletes, 0);
	CHECK(!tv_exists(server_vault, "projects/gamma.md"));
	CHECK(tv_exists(server_vault, "notes/scratch.md"));
	CHECK(!same_file("projects/alpha.md"));
	CHECK_INT(fetch_page(srv.port, "/projects/alpha", &b), 200);
	CHECK(strstr(b.ptr, "revised") == NULL);
	buf_release(&b);
}

/*
 * --push sends what changed here and takes nothing; with --delete it also
 * deletes what the server has and this side does not, when the server's
 * copy is the one last synced.
 */
static void test_push_delete(void)
{
	const char *const push[] = { "--push", NULL };
	const char *const del[] = { "--push", "--delete", NULL };
	struct syncapi_stats s0 = stats(), s1;
	struct buf b = BUF_INIT;
	struct syncproc r;

	/* without --delete the server keeps what the client lacks */
	CHECK_INT(sync_run(&r, push, NULL), 0);
	CHECK(out_has(&r, "uploaded 2, downloaded 0, merged 0, deleted 0 here and 0 on the server, "
			  "unchanged 6"));
	CHECK(out_has(&r, "1 files are only on the server"));
	syncproc_free(&r);
	CHECK(tv_exists(server_vault, "notes/scratch.md"));
	CHECK_INT(fetch_page(srv.port, "/projects/alpha", &b), 200);
	CHECK(strstr(b.ptr, "revised") != NULL);
	CHECK_INT(sync_run(&r, del, NULL), 0);
	CHECK(out_has(&r, "uploaded 0, downloaded 0, merged 0, deleted 0 here and 1 on the server, "
			  "unchanged 8"));
	syncproc_free(&r);
	s1 = stats();
	CHECK_INT(s1.deletes - s0.deletes, 1);
	CHECK(!tv_exists(server_vault, "notes/scratch.md"));
	CHECK_INT(fetch_page(srv.port, "/notes/scratch", NULL), 404);
	check_mirror();
	/* --delete alone would be a one-way flag on a two-way sync */
	{
		const char *const alone[] = { "--delete", NULL };
		CHECK_INT(sync_run(&r, alone, NULL), 2);
		CHECK(out_has(&r, "--delete goes with --push"));
		syncproc_free(&r);
	}
	buf_release(&b);
}

/* Killed after a few uploads, then run again: only the rest goes. */
static void test_interrupted(void)
{
	const char *const one[] = { "--jobs", "1", NULL };
	const char *const slow[] = { "QUIRE_SYNC_TEST_DELAY_MS=40", NULL };
	struct syncapi_stats s0, s1, s2;
	struct vault_scan scan = VAULT_SCAN_INIT;
	struct diag_list d;
	size_t before_rerun = 0, i;
	struct syncproc r;
	char name[64], text[256];
	double t0;

	for (i = 0; i < 30; i++) {
		snprintf(name, sizeof(name), "bulk/file-%02zu.md", i);
		snprintf(text, sizeof(text), "# Bulk %zu\n\nBody of bulk note %zu.\n", i, i);
		tv_write(client_vault, name, text);
	}
	usleep(60 * 1000);
	s0 = stats();
	spawn(&r, one, slow);
	t0 = now_s();
	do {
		usleep(2000);
		s1 = stats();
	} while (s1.puts - s0.puts < 5 && now_s() - t0 < 20);
	CHECK(kill(r.pid, SIGKILL) == 0);
	syncproc_finish(&r);
	CHECK_INT(r.status, 128 + SIGKILL);
	syncproc_free(&r);
	usleep(50 * 1000); /* a PUT the server was still writing finishes */
	s1 = stats();
	CHECK(s1.puts - s0.puts >= 5 && s1.puts - s0.puts < 30);
	/* what the server has of the 30 now */
	diag_list_init(&d);
	CHECK(vault_scan(client_vault, NULL, &scan, &d) == 0);
	for (i = 0; i < scan.n; i++)
		if (strncmp(scan.files[i].path, "bulk/", 5) == 0 && same_file(scan.files[i].path))
			before_rerun++;
	vault_scan_release(&scan);
	diag_list_release(&d);
	CHECK_INT(before_rerun, s1.puts - s0.puts);

	CHECK_INT(sync_run(&r, NULL, NULL), 0);
	snprintf(text, sizeof(text), "uploaded %zu, downloaded 0, merged 0, deleted 0 here and 0 on the "
		 "server, unchanged %zu, conflicts 0, failed 0", 30 - before_rerun, 8 + before_rerun);
	CHECK(out_has(&r, text));
	syncproc_free(&r);
	s2 = stats();
	CHECK_INT(s2.puts - s1.puts, 30 - before_rerun);
	check_mirror();
	CHECK_INT(fetch_page(srv.port, "/bulk/file-29", NULL), 200);
	fprintf(stderr, "  interrupted after %zu of 30 uploads; the re-run sent %llu\n", before_rerun,
		(unsigned long long)(s2.puts - s1.puts));
}

/*
 * The first file whose path starts with prefix and ends with suffix in
 * vault (a conflict copy), or NULL; the caller frees it.
 */
static char *find_file(const char *vault, const char *prefix, const char *suffix)
{
	struct vault_scan scan = VAULT_SCAN_INIT;
	struct diag_list d;
	char *found = NULL;
	size_t i;

	diag_list_init(&d);
	if (vault_scan(vault, NULL, &scan, &d) == 0)
		for (i = 0; i < scan.n && !found; i++) {
			const char *p = scan.files[i].path;
			size_t n = strlen(p), k = strlen(suffix);
			if (!strncmp(p, prefix, strlen(prefix)) && n >= k && !strcmp(p + n - k, suffix))
				found = xstrdup(p);
		}
	vault_scan_release(&scan);
	diag_list_release(&d);
	return found;
}

/* Whether vault's file rel holds exactly text. */
static int holds(const char *vault, const char *rel, const char *text)
{
	struct buf b = BUF_INIT, p = BUF_INIT;
	int yes;

	buf_addf(&p, "%s/%s", vault, rel);
	yes = read_file(p.ptr, &b) == 0 && b.len == strlen(text) && !memcmp(b.ptr, text, b.len);
	if (!yes)
		fprintf(stderr, "  %s does not hold '%s' but '%s'\n", p.ptr, text, b.ptr ? b.ptr : "(none)");
	buf_release(&b);
	buf_release(&p);
	return yes;
}

/*
 * The server's copy changes after the client read the manifest: the PUT
 * is refused (If-Match), never overwrites it, and the pass made again
 * sees a note changed on both sides on the same line: this side's text
 * keeps the name, the server's is a conflict copy on both sides.
 */
static void test_conflict(void)
{
	const char *const pause[] = { "QUIRE_SYNC_TEST_PAUSE_AFTER_MANIFEST_MS=400", NULL };
	const char *const one[] = { "--jobs", "1", NULL };
	const char *server_text = "# Alpha\n\nEdited on the server meanwhile.\n";
	const char *client_text = "# Alpha\n\nClient's third version.\n";
	struct syncapi_stats s0;
	struct syncproc r;
	char *copy;
	double t0;

	tv_write(client_vault, "projects/alpha.md", client_text);
	tv_write(client_vault, "projects/beta.md", "# Beta\n\nBeta, client edit.\n");
	usleep(60 * 1000);
	s0 = stats();
	spawn(&r, one, pause);
	t0 = now_s();
	while (stats().manifests == s0.manifests && now_s() - t0 < 20)
		usleep(2000);
	tv_write(server_vault, "projects/alpha.md", server_text);
	syncproc_finish(&r);
	CHECK_INT(r.status, 3);
	CHECK(out_has(&r, "conflict: projects/alpha.md: changed on both sides"));
	CHECK(out_has(&r, "conflicts 1, failed 0"));
	syncproc_free(&r);
	copy = find_file(server_vault, "projects/alpha.sync-conflict-", "-server.md");
	CHECK(copy != NULL);
	if (copy) {
		CHECK(holds(server_vault, copy, server_text));
		CHECK(holds(client_vault, copy, server_text));
	}
	CHECK(holds(server_vault, "projects/alpha.md", client_text));
	CHECK(holds(client_vault, "projects/alpha.md", client_text));
	CHECK(same_file("projects/beta.md"));
	/* settled: nothing more to do */
	CHECK_INT(sync_run(&r, NULL, NULL), 0);
	CHECK(out_has(&r, "uploaded 0, downloaded 0, merged 0, deleted 0 here and 0 on the server"));
	syncproc_free(&r);
	check_mirror();
	free(copy);
}

/* ---- --watch ---- */

/* Waits until the page at url shows text (or 404s, when text is NULL); the ms it took, or -1. */
static double until_page(const char *page_url, const char *text, double timeout_s)
{
	struct buf b = BUF_INIT;
	double t0 = now_s();
	int st;

	for (;;) {
		st = fetch_page(srv.port, page_url, &b);
		if (text ? st == 200 && b.ptr && strstr(b.ptr, text) : st == 404)
			break;
		if (now_s() - t0 > timeout_s) {
			buf_release(&b);
			return -1;
		}
		usleep(2000);
	}
	buf_release(&b);
	return (now_s() - t0) * 1000;
}

/* Waits until the running client printed s. */
static int until_said(const struct syncproc *r, const char *s, double timeout_s)
{
	struct buf out = BUF_INIT;
	double t0 = now_s();
	int found = 0;

	while (!found && now_s() - t0 < timeout_s) {
		buf_reset(&out);
		found = read_file(r->out_path, &out) == 0 && out.ptr && strstr(out.ptr, s);
		if (!found)
			usleep(5000);
	}
	if (!found)
		fprintf(stderr, "  the client did not say '%s':\n%s", s, out.ptr ? out.ptr : "");
	buf_release(&out);
	return found;
}

/*
 * quire sync --watch: a save is live at once, a deletion and a folder
 * moved reach the site, a change made on the server comes down, the
 * server away and back gets what changed meanwhile, a note changed on
 * both sides meanwhile keeps both versions, and Ctrl-C stops it.
 */
static void test_watch(void)
{
	const char *const watch[] = { "--watch", NULL };
	const char *server_text = "# Beta\n\nBeta, edited on the server.\n";
	const char *local_text = "# Beta\n\nBeta, a later local edit.\n";
	const char *away_text = "# Beta\n\nBeta, changed on the server while it was down.\n";
	char listen[32], *copy = NULL;
	struct syncproc r;
	double ms;

	spawn(&r, watch, NULL);
	CHECK(until_said(&r, "watching ", 20));

	/* a new note, saved: live */
	tv_write(client_vault, "notes/watched.md", "# Watched\n\nSaved while watching.\n");
	ms = until_page("/notes/watched", "Saved while watching.", 10);
	CHECK(ms >= 0);
	fprintf(stderr, "  a note saved locally was live on the server after %.0f ms\n", ms);
	CHECK(until_said(&r, "uploaded notes/watched.md", 5));

	/* deleted locally: gone there */
	tv_unlink(client_vault, "notes/watched.md");
	CHECK(until_page("/notes/watched", NULL, 10) >= 0);
	CHECK(until_said(&r, "deleted notes/watched.md", 5));

	/* a folder moved: its notes at their new URLs */
	{
		struct buf from = BUF_INIT, to = BUF_INIT;
		buf_addf(&from, "%s/journal", client_vault);
		buf_addf(&to, "%s/diary", client_vault);
		CHECK(rename(from.ptr, to.ptr) == 0);
		buf_release(&from);
		buf_release(&to);
	}
	CHECK(until_page("/diary/2024/day-one", "First entry.", 10) >= 0);
	CHECK(until_said(&r, "deleted journal/2024/day one.md", 5));

	/* changed on the server (another client's edit, through the API): it comes down */
	{
		struct resp put;
		CHECK(fetch_request(srv.port, "PUT", "/api/v1/files/projects/beta.md",
				    "Authorization: Bearer " TOKEN "\r\n", server_text,
				    strlen(server_text), &put) == 0);
		CHECK(put.status == 200 || put.status == 201);
		resp_free(&put);
	}
	CHECK(until_said(&r, "downloaded projects/beta.md", 10));
	CHECK(holds(client_vault, "projects/beta.md", server_text));

	/*
	 * The server away: what is saved meanwhile arrives when it is back, and
	 * a note changed on both sides meanwhile keeps both versions.
	 */
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", srv.port);
	stop_server();
	tv_write(client_vault, "notes/while-away.md", "# While away\n\nWritten while the server was down.\n");
	tv_write(client_vault, "projects/beta.md", local_text);
	CHECK(until_said(&r, "server away", 10));
	tv_write(server_vault, "projects/beta.md", away_text);
	usleep(300 * 1000);
	start_server_on(listen);
	CHECK(srv.port > 0);
	CHECK(until_page("/notes/while-away", "Written while the server was down.", 20) >= 0);
	CHECK(until_said(&r, "conflict: projects/beta.md", 10));
	CHECK(until_said(&r, "server back", 10));
	CHECK(until_page("/projects/beta", "a later local edit", 10) >= 0);
	copy = find_file(server_vault, "projects/beta.sync-conflict-", ".md");
	CHECK(copy != NULL);
	if (copy)
		CHECK(holds(server_vault, copy, away_text));

	CHECK(kill(r.pid, SIGINT) == 0);
	syncproc_finish(&r);
	CHECK_INT(r.status, 3); /* a conflict copy was written */
	CHECK(out_has(&r, "stopped watching"));
	CHECK(!strstr(r.out.ptr, "Sanitizer"));
	syncproc_free(&r);
	free(copy);
}

/* ---- both ways ---- */

/* A write through the sync API (no precondition: another client's edit) or WebDAV. */
static void server_put(const char *path, const char *text, int dav)
{
	struct buf t = BUF_INIT;
	struct resp r;

	buf_adds(&t, dav ? "/dav/" : "/api/v1/files/");
	buf_add_urlpath(&t, path, strlen(path));
	CHECK(fetch_request(srv.port, "PUT", t.ptr, "Authorization: Bearer " TOKEN "\r\n", text,
			    strlen(text), &r) == 0);
	CHECK(r.status == 200 || r.status == 201 || r.status == 204);
	resp_free(&r);
	buf_release(&t);
}

static void server_delete(const char *path)
{
	struct buf t = BUF_INIT;
	struct resp r;

	buf_adds(&t, "/api/v1/files/");
	buf_add_urlpath(&t, path, strlen(path));
	CHECK(fetch_request(srv.port, "DELETE", t.ptr, "Authorization: Bearer " TOKEN "\r\n", NULL,
			    0, &r) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);
	buf_release(&t);
}

/* A sync that should settle everything: its exit status, its output checked for want. */
static int sync_says(const char *const *extra, const char *want)
{
	struct syncproc r;
	int st = sync_run(&r, extra, NULL);

	CHECK(out_has(&r, want));
	CHECK(!strstr(r.out.ptr, "Sanitizer"));
	syncproc_free(&r);
	return st;
}

#define NOTE5 "# Five\n\nline one\nline two\nline three\nline four\nline five\n"

/*
 * Edits made on the server only come down: a changed note, a new one
 * (through WebDAV), a deleted one, a moved one; nothing is uploaded over
 * them.
 */
static void test_server_changes_come_down(void)
{
	struct syncapi_stats s0;

	tv_write(client_vault, "two/edit.md", "# Edit\n\nfirst\n");
	tv_write(client_vault, "two/gone.md", "# Gone\n");
	tv_write(client_vault, "two/from.md", "# Moved\n\nmoves on the server\n");
	CHECK_INT(sync_says(NULL, "conflicts 0, failed 0"), 0);
	server_put("two/edit.md", "# Edit\n\nsecond, from the server\n", 0);
	server_put("two/new.md", "# New\n\nmade through WebDAV\n", 1);
	server_delete("two/gone.md");
	{
		struct resp r;
		const char *body = "{\"from\":\"two/from.md\",\"to\":\"two/sub/to.md\"}";
		CHECK(fetch_request(srv.port, "POST", "/api/v1/move",
				    "Authorization: Bearer " TOKEN "\r\n", body, strlen(body), &r) == 0);
		CHECK_INT(r.status, 200);
		resp_free(&r);
	}
	s0 = stats();
	CHECK_INT(sync_says(NULL, "uploaded 0, downloaded 3, merged 0, deleted 2 here and 0 on the "
				  "server"), 0);
	CHECK_INT(stats().puts - s0.puts, 0);
	CHECK(holds(client_vault, "two/edit.md", "# Edit\n\nsecond, from the server\n"));
	CHECK(holds(client_vault, "two/new.md", "# New\n\nmade through WebDAV\n"));
	CHECK(holds(client_vault, "two/sub/to.md", "# Moved\n\nmoves on the server\n"));
	CHECK(!tv_exists(client_vault, "two/gone.md"));
	CHECK(!tv_exists(client_vault, "two/from.md"));
	check_mirror();
	/* and the next run has nothing to do */
	CHECK_INT(sync_says(NULL, "uploaded 0, downloaded 0, merged 0, deleted 0 here and 0"), 0);
}

/*
 * A note edited on both sides: merged when the edits touch different
 * lines (exit 0), both versions kept when they touch the same line (exit
 * 3, the server's as a conflict copy on both sides); an attachment
 * changed on both sides is always a conflict copy.
 */
static void test_both_sides(void)
{
	const char *merged = "# Five\n\nline one, server\nline two\nline three\nline four\n"
			     "line five, here\n";
	const char *mine = "# Five\n\nline one, server\nline two\nline three, here\nline four\n"
			   "line five, here\n";
	const char *theirs = "# Five\n\nline one, server\nline two\nline three, there\nline four\n"
			     "line five, here\n";
	char *copy, *bin_copy;

	tv_write(client_vault, "two/five.md", NOTE5);
	tv_write(client_vault, "two/pic.bin", "\x01\x02 first");
	CHECK_INT(sync_says(NULL, "conflicts 0, failed 0"), 0);
	server_put("two/five.md", "# Five\n\nline one, server\nline two\nline three\nline four\n"
				  "line five\n", 1);
	tv_write(client_vault, "two/five.md", "# Five\n\nline one\nline two\nline three\nline four\n"
					      "line five, here\n");
	CHECK_INT(sync_says(NULL, "uploaded 1, downloaded 0, merged 1, deleted 0 here and 0 on the "
				  "server, unchanged"), 0);
	CHECK(holds(client_vault, "two/five.md", merged));
	CHECK(holds(server_vault, "two/five.md", merged));

	server_put("two/five.md", theirs, 0);
	tv_write(client_vault, "two/five.md", mine);
	server_put("two/pic.bin", "\x01\x02 server", 1);
	tv_write(client_vault, "two/pic.bin", "\x01\x02 here");
	CHECK_INT(sync_says(NULL, "merged 0, deleted 0 here and 0 on the server, unchanged"), 3);
	CHECK(holds(client_vault, "two/five.md", mine));
	CHECK(holds(server_vault, "two/five.md", mine));
	copy = find_file(server_vault, "two/five.sync-conflict-", "-server.md");
	bin_copy = find_file(client_vault, "two/pic.sync-conflict-", "-server.bin");
	CHECK(copy && bin_copy);
	if (copy && bin_copy) {
		CHECK(holds(server_vault, copy, theirs));
		CHECK(holds(client_vault, copy, theirs));
		CHECK(holds(server_vault, bin_copy, "\x01\x02 server"));
	}
	CHECK(holds(server_vault, "two/pic.bin", "\x01\x02 here"));
	check_mirror();
	free(copy);
	free(bin_copy);
}

/* An edit beats a deletion on the other side, either way round. */
static void test_edit_beats_delete(void)
{
	tv_write(client_vault, "two/kept-there.md", "# A\n\nv1\n");
	tv_write(client_vault, "two/kept-here.md", "# B\n\nv1\n");
	CHECK_INT(sync_says(NULL, "conflicts 0, failed 0"), 0);
	tv_unlink(client_vault, "two/kept-there.md");
	server_put("two/kept-there.md", "# A\n\nv2, edited on the server\n", 0);
	server_delete("two/kept-here.md");
	tv_write(client_vault, "two/kept-here.md", "# B\n\nv2, edited here\n");
	CHECK_INT(sync_says(NULL, "uploaded 1, downloaded 1, merged 0, deleted 0 here and 0 on the "
				  "server"), 0);
	CHECK(holds(client_vault, "two/kept-there.md", "# A\n\nv2, edited on the server\n"));
	CHECK(holds(server_vault, "two/kept-there.md", "# A\n\nv2, edited on the server\n"));
	CHECK(holds(server_vault, "two/kept-here.md", "# B\n\nv2, edited here\n"));
	check_mirror();
}

/*
 * A new machine (no record) whose copy of a note differs from the
 * server's: neither is overwritten. And --push leaves a note the server
 * changed since the last sync as it is there.
 */
static void test_no_record_and_push(void)
{
	const char *const push[] = { "--push", NULL };
	char *old = client_vault, *fresh = tv_new(), *copy;

	tv_write(fresh, "two/edit.md", "# Edit\n\nthe new machine's own\n");
	tv_write(fresh, "two/new.md", "# New\n\nmade through WebDAV\n");
	client_vault = fresh;
	CHECK_INT(sync_says(NULL, "conflicts 1, failed 0"), 3);
	CHECK(holds(fresh, "two/edit.md", "# Edit\n\nthe new machine's own\n"));
	copy = find_file(fresh, "two/edit.sync-conflict-", ".md");
	CHECK(copy != NULL);
	if (copy)
		CHECK(holds(fresh, copy, "# Edit\n\nsecond, from the server\n"));
	CHECK(holds(fresh, "index.md", "# Home\n\nSynced home page. See [[alpha]].\n"));
	check_mirror();
	client_vault = old;
	tv_remove(fresh);
	free(copy);

	/* --push: the server's edit is not overwritten, and nothing comes down */
	CHECK_INT(sync_says(NULL, "failed 0"), 0);
	server_put("two/new.md", "# New\n\nchanged on the server\n", 0);
	tv_write(client_vault, "two/new.md", "# New\n\nchanged here\n");
	CHECK_INT(sync_says(push, "conflict: two/new.md: changed on the server since the last sync; "
				  "not overwritten"), 1);
	CHECK(holds(server_vault, "two/new.md", "# New\n\nchanged on the server\n"));
	CHECK(holds(client_vault, "two/new.md", "# New\n\nchanged here\n"));
	/* both ways then keeps both */
	CHECK_INT(sync_says(NULL, "conflicts 1, failed 0"), 3);
	check_mirror();
}

static void test_bad_token(void)
{
	struct syncapi_stats s0 = stats();
	struct buf f = BUF_INIT;
	char *dir = tv_new(), *old = token_file;
	struct syncproc r;

	tv_write(client_vault, "projects/delta.md", "# Delta\n");
	buf_addf(&f, "%s/token", dir);
	tv_write(dir, "token", "not-the-token\n");
	token_file = f.ptr;
	CHECK(sync_run(&r, NULL, NULL) != 0);
	CHECK(out_has(&r, "wrong token"));
	syncproc_free(&r);
	token_file = old;
	buf_release(&f);
	tv_remove(dir);
	CHECK_INT(stats().puts - s0.puts, 0);
	CHECK(!tv_exists(server_vault, "projects/delta.md"));
}

static void test_usage(void)
{
	const char *argv[] = { quire_bin, "sync", "only-one-arg", NULL };
	pid_t pid;
	int st = 0, devnull;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		devnull = open("/dev/null", O_WRONLY);
		if (devnull < 0 || dup2(devnull, 2) < 0)
			_exit(126);
		execv(quire_bin, (char *const *)argv);
		_exit(127);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
}

int main(void)
{
	double t0 = now_s();
	struct buf tf = BUF_INIT;
	char *tokdir;

	log_set_level(LOG_WARN);
	if (!(quire_bin = syncproc_bin("test-sync")))
		return 1;
	server_vault = tv_new();
	client_vault = tv_new();
	tokdir = tv_new();
	tv_write(tokdir, "token", TOKEN "\n");
	buf_addf(&tf, "%s/token", tokdir);
	token_file = tf.ptr;

	tv_write(client_vault, "index.md", "# Home\n\nSynced home page. See [[alpha]].\n");
	tv_write(client_vault, "projects/alpha.md", "# Alpha\n\nAlpha plan.\n");
	tv_write(client_vault, "projects/beta.md", "# Beta\n\nBeta plan, links [[alpha]].\n");
	tv_write(client_vault, "journal/2024/day one.md", "# Day one\n\nFirst entry.\n");
	tv_write(client_vault, "notes/scratch.md", "# Scratch\n\nThrowaway.\n");
	tv_write(client_vault, "notes/ideas.md", "# Ideas\n\n![[diagram.svg]]\n");
	tv_write(client_vault, "attachments/diagram.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>");
	{
		char bin[5000];
		for (size_t i = 0; i < sizeof(bin); i++)
			bin[i] = (char)(i * 131 % 251);
		tv_write_len(client_vault, "attachments/data.bin", bin, sizeof(bin));
	}
	tv_write(client_vault, ".obsidian/app.json", "{}");
	usleep(60 * 1000);
	start_server();

	RUN(test_usage);
	RUN(test_first_sync);
	RUN(test_noop_resync);
	RUN(test_dry_run);
	RUN(test_push_delete);
	RUN(test_interrupted);
	RUN(test_conflict);
	RUN(test_watch);
	RUN(test_server_changes_come_down);
	RUN(test_both_sides);
	RUN(test_edit_beats_delete);
	RUN(test_no_record_and_push);
	RUN(test_bad_token);

	stop_server();
	tv_remove(server_vault);
	tv_remove(client_vault);
	tv_remove(tokdir);
	buf_release(&tf);
	fprintf(stderr, "test-sync: %.1f s\n", now_s() - t0);
	return test_done();
}
