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
#include "lib/test.h"
#include "lib/tv.h"
#include "sync/syncapi.h"
#include "util/hash.h"
#include "util/log.h"
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

struct run {
	pid_t pid;
	char out_path[64];
	int status;          /* exit status, or 128 + signal */
	struct buf out;      /* stdout and stderr */
};

/*
 * Starts `quire sync client_vault url --token-file F extra...` with env
 * (NAME=VALUE strings, NULL-terminated, may be NULL) added.
 */
static void spawn(struct run *r, const char *const *extra, const char *const *env)
{
	const char *argv[16];
	int n = 0, fd;

	memset(r, 0, sizeof(*r));
	buf_init(&r->out, 0);
	snprintf(r->out_path, sizeof(r->out_path), "/tmp/quire-sync-out-XXXXXX");
	fd = mkstemp(r->out_path);
	CHECK(fd >= 0);
	argv[n++] = quire_bin;
	argv[n++] = "sync";
	argv[n++] = client_vault;
	argv[n++] = url;
	argv[n++] = "--token-file";
	argv[n++] = token_file;
	while (extra && *extra && n < 15)
		argv[n++] = *extra++;
	argv[n] = NULL;
	fflush(NULL);
	r->pid = fork();
	CHECK(r->pid >= 0);
	if (r->pid == 0) {
		while (env && *env)
			putenv((char *)*env++);
		if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execv(quire_bin, (char *const *)argv);
		_exit(127);
	}
	close(fd);
}

static int finish(struct run *r)
{
	int st = 0;

	CHECK(waitpid(r->pid, &st, 0) == r->pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	CHECK(read_file(r->out_path, &r->out) == 0);
	unlink(r->out_path);
	return r->status;
}

static int sync_run(struct run *r, const char *const *extra, const char *const *env)
{
	spawn(r, extra, env);
	return finish(r);
}

static void run_free(struct run *r)
{
	buf_release(&r->out);
}

static int out_has(const struct run *r, const char *s)
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
	struct run r;

	CHECK_INT(sync_run(&r, NULL, NULL), 0);
	CHECK(out_has(&r, "uploaded 8, deleted 0, unchanged 0, conflicts 0, failed 0 in "));
	run_free(&r);
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
	struct run r;

	CHECK_INT(sync_run(&r, NULL, NULL), 0);
	CHECK(out_has(&r, "uploaded 0, deleted 0, unchanged 8, conflicts 0, failed 0 in "));
	run_free(&r);
	s1 = stats();
	CHECK_INT(s1.puts - s0.puts, 0);
	CHECK_INT(s1.deletes - s0.deletes, 0);
}

static void test_dry_run(void)
{
	const char *const dry[] = { "--dry-run", "--delete", NULL };
	struct syncapi_stats s0, s1;
	struct buf b = BUF_INIT;
	struct run r;

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
	CHECK(out_has(&r, "would delete notes/scratch.md"));
	CHECK(out_has(&r, "would upload 2, would delete 1, unchanged 6"));
	run_free(&r);
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

static void test_delete(void)
{
	const char *const del[] = { "--delete", NULL };
	struct syncapi_stats s0 = stats(), s1;
	struct buf b = BUF_INIT;
	struct run r;

	/* without --delete the server keeps what the client lacks */
	CHECK_INT(sync_run(&r, NULL, NULL), 0);
	CHECK(out_has(&r, "uploaded 2, deleted 0, unchanged 6"));
	CHECK(out_has(&r, "1 files are only on the server"));
	run_free(&r);
	CHECK(tv_exists(server_vault, "notes/scratch.md"));
	CHECK_INT(fetch_page(srv.port, "/projects/alpha", &b), 200);
	CHECK(strstr(b.ptr, "revised") != NULL);
	CHECK_INT(sync_run(&r, del, NULL), 0);
	CHECK(out_has(&r, "uploaded 0, deleted 1, unchanged 8"));
	run_free(&r);
	s1 = stats();
	CHECK_INT(s1.deletes - s0.deletes, 1);
	CHECK(!tv_exists(server_vault, "notes/scratch.md"));
	CHECK_INT(fetch_page(srv.port, "/notes/scratch", NULL), 404);
	check_mirror();
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
	struct run r;
	char name[64], text[128];
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
	finish(&r);
	CHECK_INT(r.status, 128 + SIGKILL);
	run_free(&r);
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
	snprintf(text, sizeof(text), "uploaded %zu, deleted 0, unchanged %zu, conflicts 0, failed 0",
		 30 - before_rerun, 8 + before_rerun);
	CHECK(out_has(&r, text));
	run_free(&r);
	s2 = stats();
	CHECK_INT(s2.puts - s1.puts, 30 - before_rerun);
	check_mirror();
	CHECK_INT(fetch_page(srv.port, "/bulk/file-29", NULL), 200);
	fprintf(stderr, "  interrupted after %zu of 30 uploads; the re-run sent %llu\n", before_rerun,
		(unsigned long long)(s2.puts - s1.puts));
}

/* The server's copy changes after the client read the manifest: a conflict, not an overwrite. */
static void test_conflict(void)
{
	const char *const pause[] = { "QUIRE_SYNC_TEST_PAUSE_AFTER_MANIFEST_MS=400", NULL };
	const char *const one[] = { "--jobs", "1", NULL };
	const char *server_text = "# Alpha\n\nEdited on the server meanwhile.\n";
	struct syncapi_stats s0;
	struct buf b = BUF_INIT, p = BUF_INIT;
	struct run r;
	double t0;

	tv_write(client_vault, "projects/alpha.md", "# Alpha\n\nClient's third version.\n");
	tv_write(client_vault, "projects/beta.md", "# Beta\n\nBeta, client edit.\n");
	usleep(60 * 1000);
	s0 = stats();
	spawn(&r, one, pause);
	t0 = now_s();
	while (stats().manifests == s0.manifests && now_s() - t0 < 20)
		usleep(2000);
	tv_write(server_vault, "projects/alpha.md", server_text);
	finish(&r);
	CHECK_INT(r.status, 1);
	CHECK(out_has(&r, "conflict: projects/alpha.md"));
	CHECK(out_has(&r, "uploaded 1, deleted 0, unchanged 36, conflicts 1, failed 0"));
	run_free(&r);
	buf_addf(&p, "%s/projects/alpha.md", server_vault);
	CHECK(read_file(p.ptr, &b) == 0 && strcmp(b.ptr, server_text) == 0);
	CHECK(same_file("projects/beta.md"));
	buf_release(&b);
	buf_release(&p);
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
static int until_said(const struct run *r, const char *s, double timeout_s)
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
 * moved reach the site, a change made on the server is reported as a
 * conflict and kept, the server away and back gets what changed
 * meanwhile (and keeps what changed there), and Ctrl-C stops it.
 */
static void test_watch(void)
{
	const char *const watch[] = { "--watch", NULL };
	const char *server_text = "# Beta\n\nBeta, edited on the server.\n";
	char listen[32];
	struct buf b = BUF_INIT, p = BUF_INIT;
	struct run r;
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

	/* changed on the server, then here: a conflict, the server's bytes kept */
	{
		/* another client's edit, through the API */
		struct resp put;
		CHECK(fetch_request(srv.port, "PUT", "/api/v1/files/projects/beta.md",
				    "Authorization: Bearer " TOKEN "\r\n", server_text,
				    strlen(server_text), &put) == 0);
		CHECK(put.status == 200 || put.status == 201);
		resp_free(&put);
	}
	CHECK(until_page("/projects/beta", "edited on the server", 10) >= 0);
	tv_write(client_vault, "projects/beta.md", "# Beta\n\nBeta, a later local edit.\n");
	CHECK(until_said(&r, "conflict: projects/beta.md", 10));
	buf_addf(&p, "%s/projects/beta.md", server_vault);
	CHECK(read_file(p.ptr, &b) == 0 && strcmp(b.ptr, server_text) == 0);

	/* the server away: what is saved meanwhile arrives when it is back */
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", srv.port);
	stop_server();
	tv_write(client_vault, "notes/while-away.md", "# While away\n\nWritten while the server was down.\n");
	CHECK(until_said(&r, "server away", 10));
	usleep(300 * 1000);
	start_server_on(listen);
	CHECK(srv.port > 0);
	CHECK(until_page("/notes/while-away", "Written while the server was down.", 20) >= 0);
	CHECK(until_said(&r, "server back", 10));
	/* the conflict still stands: not sent in the pass after the absence */
	buf_reset(&b);
	CHECK(read_file(p.ptr, &b) == 0 && strcmp(b.ptr, server_text) == 0);

	CHECK(kill(r.pid, SIGINT) == 0);
	finish(&r);
	CHECK_INT(r.status, 1); /* projects/beta.md was left unsent */
	CHECK(out_has(&r, "stopped watching"));
	CHECK(!strstr(r.out.ptr, "Sanitizer"));
	run_free(&r);
	/* as it was, for the tests after */
	tv_write(client_vault, "projects/beta.md", server_text);
	buf_release(&b);
	buf_release(&p);
}

static void test_bad_token(void)
{
	struct syncapi_stats s0 = stats();
	struct buf f = BUF_INIT;
	char *dir = tv_new(), *old = token_file;
	struct run r;

	tv_write(client_vault, "projects/delta.md", "# Delta\n");
	buf_addf(&f, "%s/token", dir);
	tv_write(dir, "token", "not-the-token\n");
	token_file = f.ptr;
	CHECK(sync_run(&r, NULL, NULL) != 0);
	CHECK(out_has(&r, "wrong token"));
	run_free(&r);
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
	quire_bin = getenv("QUIRE_BIN");
	if (!quire_bin || access(quire_bin, X_OK) != 0) {
		fprintf(stderr, "test-sync: QUIRE_BIN must name the built quire binary\n");
		return 1;
	}
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
	RUN(test_delete);
	RUN(test_interrupted);
	RUN(test_conflict);
	RUN(test_watch);
	RUN(test_bad_token);

	stop_server();
	tv_remove(server_vault);
	tv_remove(client_vault);
	tv_remove(tokdir);
	buf_release(&tf);
	fprintf(stderr, "test-sync: %.1f s\n", now_s() - t0);
	return test_done();
}
