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
 * QUIRE_STEPS (default 30), QUIRE_SEED (default 1), QUIRE_VAULT (a corpus
 * vault's folder name; default obsidian-tasks-docs, the benchmark suite
 * runs pwsh-docs).
 */
#include "edits.h"

#include "http/http.h"
#include "site/loader.h"
#include "markdown/markdown.h"
#include "site/site.h"
#include "sync/syncapi.h"
#include "testhttp.h"

#include <pthread.h>

#define TOKEN "property-test-token"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"

static struct snapshot_slot slot;
static struct loader *loader;
static struct http_server *srv;
static struct syncapi *api;
static pthread_t thread;
static int port;
static char *mirror, *server;

static void *run_server(void *arg)
{
	(void)arg;
	http_server_run(srv);
	return NULL;
}

static void start(void)
{
	struct http_options ho;
	struct syncapi_options so;

	snapshot_slot_init(&slot);
	loader = loader_new(server, NULL, &slot);
	CHECK(loader != NULL);
	memset(&ho, 0, sizeof(ho));
	ho.listen = "127.0.0.1:0";
	ho.threads = 2;
	ho.slot = &slot;
	ho.max_body_size = 64 << 20;
	srv = http_server_new(&ho);
	memset(&so, 0, sizeof(so));
	so.vault = server;
	so.token = TOKEN;
	api = syncapi_new(&so, loader);
	CHECK(srv && api && syncapi_register(api, srv) == 0);
	port = http_server_port(srv);
	CHECK(loader_start(loader) == 0);
	CHECK(pthread_create(&thread, NULL, run_server, NULL) == 0);
}

static void stop(void)
{
	http_server_stop(srv);
	pthread_join(thread, NULL);
	syncapi_free(api);
	http_server_free(srv);
	loader_free(loader);
	snapshot_slot_release(&slot);
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
	struct th_resp r;
	long long v = 0;

	buf_addf(&full, "%s/%s", mirror, rel);
	target(&t, rel);
	if (read_file(full.ptr, &data) == 0) {
		if (th_request(port, "PUT", t.ptr, AUTH, data.ptr, data.len, &r) == 0 &&
		    (r.status == 200 || r.status == 201))
			v = th_json_u64(r.body.ptr, "version");
		else
			fprintf(stderr, "  PUT %s: %d\n", rel, r.status);
	} else if (th_request(port, "DELETE", t.ptr, AUTH, NULL, 0, &r) == 0 &&
		   (r.status == 200 || r.status == 404)) {
		v = r.status == 200 ? th_json_u64(r.body.ptr, "version") : 0;
	} else {
		fprintf(stderr, "  DELETE %s: %d\n", rel, r.status);
	}
	th_resp_free(&r);
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
	struct th_resp r;

	if (st->what && !strcmp(st->what, "rename note") && st->npaths == 2) {
		struct buf body = BUF_INIT;
		buf_adds(&body, "{\"from\":\"");
		buf_adds_json(&body, st->paths[0]);
		buf_adds(&body, "\",\"to\":\"");
		buf_adds_json(&body, st->paths[1]);
		buf_adds(&body, "\"}");
		if (th_request(port, "POST", "/api/v1/move", AUTH "Content-Type: application/json\r\n",
			       body.ptr, body.len, &r) == 0 && r.status == 200)
			v = th_json_u64(r.body.ptr, "version");
		else
			fprintf(stderr, "  move %s: %d %s\n", st->paths[0], r.status, r.body.ptr);
		th_resp_free(&r);
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
			if (th_request(port, "POST", "/api/v1/move",
				       AUTH "Content-Type: application/json\r\n", body.ptr, body.len,
				       &r) == 0 && r.status == 200) {
				if ((w = th_json_u64(r.body.ptr, "version")) > v)
					v = w;
			} else {
				fprintf(stderr, "  move %s: %d %s\n", before->v[i], r.status, r.body.ptr);
				test_current_failed = 1;
			}
			th_resp_free(&r);
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

static void test_through_the_api(void)
{
	struct buf src = BUF_INIT, waitp = BUF_INIT;
	struct files files = { NULL, 0 };
	const char *s = getenv("QUIRE_STEPS"), *seed = getenv("QUIRE_SEED");
	unsigned steps = s ? (unsigned)strtoul(s, NULL, 10) : 30, i;
	struct site_options so = { .threads = 2 };

	rng_state = seed ? strtoull(seed, NULL, 10) : 1;
	mirror = tv_new();
	server = tv_new();
	buf_addf(&src, "%s/%s", tv_corpus(),
		 getenv("QUIRE_VAULT") ? getenv("QUIRE_VAULT") : "obsidian-tasks-docs");
	copy_tree(src.ptr, mirror);
	copy_tree(src.ptr, server);
	tv_write(mirror, "quire.yml", "title: Sync property test\nbase_url: https://example.org/\n");
	tv_write(server, "quire.yml", "title: Sync property test\nbase_url: https://example.org/\n");
	start();
	for (i = 0; i < steps; i++) {
		struct step st = { 0 };
		struct snapshot *live, *fresh;
		struct site *full;
		struct th_resp r;
		long long v;
		size_t diffs, k;

		list_files(mirror, &files);
		edit(mirror, &files, &st, i);
		v = send_step(&st, &files);
		if (v > 0) {
			buf_reset(&waitp);
			buf_addf(&waitp, "/api/v1/wait?version=%lld&timeout=10000", v);
			CHECK(th_request(port, "GET", waitp.ptr, AUTH, NULL, 0, &r) == 0 && r.status == 200);
			th_resp_free(&r);
		}
		live = snapshot_acquire(&slot);
		full = site_load(server, &so);
		fresh = site_snapshot(full, NULL);
		diffs = compare(live, fresh);
		if (diffs) {
			fprintf(stderr, "step %u (%s", i, st.what);
			for (k = 0; k < st.npaths; k++)
				fprintf(stderr, " %s", st.paths[k]);
			fprintf(stderr, "): %zu pages differ\n", diffs);
			test_current_failed = 1;
		}
		snapshot_unref(live);
		snapshot_unref(fresh);
		site_free(full);
		for (k = 0; k < st.npaths; k++)
			free(st.paths[k]);
		if (diffs)
			break;
	}
	fprintf(stderr, "  %u steps through the sync API\n", i);
	stop();
	files_release(&files);
	buf_release(&src);
	buf_release(&waitp);
	tv_remove(mirror);
	tv_remove(server);
}

int main(void)
{
	md_global_init();
	RUN(test_through_the_api);
	return test_done();
}
