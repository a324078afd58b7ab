/*
 * test-syncprop.c: incremental equals full, through the sync API.
 *
 * The edit sequence of test-incremental is made on a local mirror of a
 * real vault, and each step is sent to a running server (the real loader,
 * front and sync API, in this process) the way an editor plugin would:
 * PUT for what was written, DELETE for what was removed, POST move for a
 * rename. After waiting for the version the server promised, the live
 * snapshot must equal, page by page, a fresh load of the server's vault.
 *
 * It runs on vault-sample, then on a vault of the shared corpus (skipped,
 * with a line saying so, when ../shared/corpus is not beside the checkout).
 * QUIRE_STEPS (default 30), QUIRE_SEED (default 1), QUIRE_VAULT (a corpus
 * vault's folder name; default obsidian-tasks-docs, the benchmark suite
 * runs pwsh-docs).
 */
#include "lib/edits.h"
#include "lib/httpc.h"
#include "lib/server.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "markdown/markdown.h"
#include "site/site.h"
#include "sync/syncapi.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TOKEN "property-test-token"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"

static struct site_server srv;
static char *mirror, *server;

static void start(void)
{
	struct syncapi_options so;
	struct site_server_options o = { .threads = 2, .max_body_size = 64 << 20, .sync = &so };

	memset(&so, 0, sizeof(so));
	so.vault = server;
	so.token = TOKEN;
	site_server_start(&srv, server, &o);
}

static void target(struct buf *t, const char *rel)
{
	buf_reset(t);
	buf_adds(t, "/api/v1/files/");
	buf_add_urlpath(t, rel, strlen(rel));
}

/* Sends one path as it now is on the mirror; returns the promised version, or 0. */
static long long send_path(const char *rel)
{
	struct buf full = BUF_INIT, data = BUF_INIT, t = BUF_INIT;
	struct resp r;
	long long v = 0;

	buf_addf(&full, "%s/%s", mirror, rel);
	target(&t, rel);
	if (read_file(full.ptr, &data) == 0) {
		if (fetch_request(srv.port, "PUT", t.ptr, AUTH, data.ptr, data.len, &r) == 0 &&
		    (r.status == 200 || r.status == 201))
			v = body_u64(r.body.ptr, "version");
		else
			fprintf(stderr, "  PUT %s: %d\n", rel, r.status);
	} else if (fetch_request(srv.port, "DELETE", t.ptr, AUTH, NULL, 0, &r) == 0 &&
		   (r.status == 200 || r.status == 404)) {
		v = r.status == 200 ? body_u64(r.body.ptr, "version") : 0;
	} else {
		fprintf(stderr, "  DELETE %s: %d\n", rel, r.status);
	}
	resp_free(&r);
	buf_release(&full);
	buf_release(&data);
	buf_release(&t);
	return v;
}

static int file_exists(const char *rel)
{
	struct buf full = BUF_INIT;
	struct stat st;
	int yes;

	buf_addf(&full, "%s/%s", mirror, rel);
	yes = stat(full.ptr, &st) == 0 && S_ISREG(st.st_mode);
	buf_release(&full);
	return yes;
}

static long long send_step(const struct step *st, const struct files *before)
{
	long long v = 0, w;
	size_t i, k;
	struct resp r;

	if (st->what && !strcmp(st->what, "rename note") && st->npaths == 2) {
		struct buf body = BUF_INIT;
		buf_adds(&body, "{\"from\":\"");
		buf_adds_json(&body, st->paths[0]);
		buf_adds(&body, "\",\"to\":\"");
		buf_adds_json(&body, st->paths[1]);
		buf_adds(&body, "\"}");
		if (fetch_request(srv.port, "POST", "/api/v1/move", AUTH "Content-Type: application/json\r\n",
			       body.ptr, body.len, &r) == 0 && r.status == 200)
			v = body_u64(r.body.ptr, "version");
		else
			fprintf(stderr, "  move %s: %d %s\n", st->paths[0], r.status, r.body.ptr);
		resp_free(&r);
		buf_release(&body);
		return v;
	}
	if (st->what && !strcmp(st->what, "rename folder") && st->npaths == 2) {
		/* the sync API has no folder move: each file of it is moved, as clients do */
		size_t flen = strlen(st->paths[0]);
		for (i = 0; i < before->n; i++) {
			struct buf body = BUF_INIT;
			if (strncmp(before->v[i], st->paths[0], flen) != 0 || before->v[i][flen] != '/')
				continue;
			buf_adds(&body, "{\"from\":\"");
			buf_adds_json(&body, before->v[i]);
			buf_adds(&body, "\",\"to\":\"");
			buf_adds_json(&body, st->paths[1]);
			buf_adds_json(&body, before->v[i] + flen);
			buf_adds(&body, "\"}");
			if (fetch_request(srv.port, "POST", "/api/v1/move",
				       AUTH "Content-Type: application/json\r\n", body.ptr, body.len,
				       &r) == 0 && r.status == 200) {
				if ((w = body_u64(r.body.ptr, "version")) > v)
					v = w;
			} else {
				fprintf(stderr, "  move %s: %d %s\n", before->v[i], r.status, r.body.ptr);
				test_current_failed = 1;
			}
			resp_free(&r);
			buf_release(&body);
		}
		return v;
	}
	for (k = 0; k < st->npaths; k++) {
		const char *p = st->paths[k];
		size_t plen = strlen(p);
		int folder = 0;
		/* a folder that vanished: delete what the server had in it */
		for (i = 0; i < before->n; i++) {
			if (!strncmp(before->v[i], p, plen) && before->v[i][plen] == '/') {
				folder = 1;
				if ((w = send_path(before->v[i])) > v)
					v = w;
			}
		}
		/* not a folder, or a folder that a file of the same name replaced */
		if ((!folder || file_exists(p)) && (w = send_path(p)) > v)
			v = w;
	}
	return v;
}

static void through_the_api(const char *src, uint64_t seed)
{
	struct buf waitp = BUF_INIT;
	struct files files = { NULL, 0 };
	const char *s = getenv("QUIRE_STEPS");
	unsigned steps = s ? (unsigned)strtoul(s, NULL, 10) : 30, i;
	struct site_options so = { .threads = 2 };

	rng_state = seed;
	mirror = tv_new();
	server = tv_new();
	CHECK(tv_copy(src, mirror) == 0);
	CHECK(tv_copy(src, server) == 0);
	tv_write(mirror, "quire.yml", "title: Sync property test\nbase_url: https://example.org/\n");
	tv_write(server, "quire.yml", "title: Sync property test\nbase_url: https://example.org/\n");
	start();
	for (i = 0; i < steps; i++) {
		struct step st = { 0 };
		struct snapshot *live, *fresh;
		struct site *full;
		struct resp r;
		long long v;
		size_t diffs;

		list_files(mirror, &files);
		edit(mirror, &files, &st, i);
		v = send_step(&st, &files);
		if (v > 0) {
			buf_reset(&waitp);
			buf_addf(&waitp, "/api/v1/wait?version=%lld&timeout=10000", v);
			CHECK(fetch_request(srv.port, "GET", waitp.ptr, AUTH, NULL, 0, &r) == 0 && r.status == 200);
			resp_free(&r);
		}
		live = snapshot_acquire(&srv.slot);
		full = site_load(server, &so);
		fresh = site_snapshot(full, NULL);
		diffs = compare(live, fresh);
		if (diffs)
			step_failed(NULL, i, &st, diffs);
		snapshot_unref(live);
		snapshot_unref(fresh);
		site_free(full);
		step_release(&st);
		if (diffs)
			break;
	}
	fprintf(stderr, "  %s: %u steps through the sync API\n", src, i);
	site_server_stop(&srv);
	files_release(&files);
	buf_release(&waitp);
	tv_remove(mirror);
	tv_remove(server);
}

static uint64_t seed_env(void)
{
	const char *seed = getenv("QUIRE_SEED");

	return seed ? strtoull(seed, NULL, 10) : 1;
}

/* vault-sample is in the repository: this runs in any clone. */
static void test_vault_sample(void)
{
	char *src;

	if (getenv("QUIRE_VAULT")) {
		test_skip("QUIRE_VAULT names the one vault to run on");
		return;
	}
	src = tv_sample();
	through_the_api(src, seed_env() + 1);
	free(src);
}

static void test_corpus_vault(void)
{
	const char *name = getenv("QUIRE_VAULT") ? getenv("QUIRE_VAULT") : "obsidian-tasks-docs";
	char *src = tv_corpus_vault(name, "the edits through the sync API on a real vault");

	if (!src)
		return;
	through_the_api(src, seed_env());
	free(src);
}

int main(void)
{
	md_global_init();
	RUN(test_vault_sample);
	RUN(test_corpus_vault);
	return test_done();
}
