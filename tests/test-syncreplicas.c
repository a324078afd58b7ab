/*
 * test-syncreplicas.c: the property of `quire sync` that no edit is ever
 * lost, with several writers and syncs killed midway.
 *
 * A server (the real loader, front, sync API and WebDAV, in this
 * process) and two replicas, local folders synced with the real `quire
 * sync` ($QUIRE_BIN) as a child. A seeded random sequence of steps edits
 * the replicas (a line inserted in a note or appended to an attachment,
 * a file created, deleted or renamed), writes the server directly as
 * another client would (through the sync API or WebDAV, always with
 * If-Match: read, edit, write; a create, a delete, a move), and syncs a
 * replica, a third of the time killing the sync with SIGKILL at a random
 * moment. Every line written carries a token of its own ("[t17]").
 *
 * At the end every replica is synced until a round changes nothing, and
 * then:
 *	- every replica holds exactly the server's files, byte for byte;
 *	- every token ever written is in some file (the note it was written
 *	  to, a merge of it, or a conflict copy), unless a side deleted a
 *	  file that held it (then it may be gone, as a deletion means);
 *	- each sync that was not killed exited 0 or 3 (no failure).
 *
 * QUIRE_STEPS (default 40), QUIRE_SEED (default 1); bench/run
 * --only=property runs it for hundreds of steps.
 */
#include "lib/httpc.h"
#include "lib/server.h"
#include "lib/syncproc.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "sync/syncapi.h"
#include "util/buf.h"
#include "util/files.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "vault/vault.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOKEN "replicas-test-token-0123"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"
#define REPLICAS 2

static struct site_server srv;
static char *server_vault, *replica[REPLICAS], *token_file;
static char url[64];
static uint64_t rng;
static int step_no, syncs, kills;

/* Tokens written, and whether a deletion may have taken each. */
static struct {
	int n;
	size_t alloc;
	char *deletable;
} tokens;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int pick(int n)
{
	return n > 0 ? (int)(next_rand() % (uint64_t)n) : 0;
}

static int new_token(char out[32])
{
	ALLOC_GROW(tokens.deletable, (size_t)tokens.n + 1, tokens.alloc);
	tokens.deletable[tokens.n] = 0;
	snprintf(out, 32, "[t%d]", tokens.n);
	return tokens.n++;
}

/* Every token in text may be gone: a side deleted the file that held it. */
static void mark_deletable(const char *text)
{
	const char *p = text;

	while (p && (p = strstr(p, "[t"))) {
		int t = atoi(p + 2);
		if (t >= 0 && t < tokens.n)
			tokens.deletable[t] = 1;
		p += 2;
	}
}

/* The files of a folder (the scanner's view: no dot paths). */
static void list(const char *dir, struct vault_scan *scan)
{
	struct diag_list d;

	diag_list_init(&d);
	*scan = (struct vault_scan)VAULT_SCAN_INIT;
	CHECK(vault_scan(dir, NULL, scan, &d) == 0);
	diag_list_release(&d);
}

/* A random file of dir (NULL when it has none), whose path the caller frees. */
static char *random_file(const char *dir)
{
	struct vault_scan scan;
	char *p = NULL;

	list(dir, &scan);
	if (scan.n)
		p = xstrdup(scan.files[pick((int)scan.n)].disk);
	vault_scan_release(&scan);
	return p;
}

/* text with a new token line inserted: at a random line of a note, at the end of anything else. */
static void insert_token(struct buf *text, const char *path)
{
	char tok[32], line[64];
	size_t at = text->len, nl = 0, i;
	int lines = 0;

	new_token(tok);
	snprintf(line, sizeof(line), "edit %s step %d\n", tok, step_no);
	if (strstr(path, ".md")) {
		for (i = 0; i < text->len; i++)
			lines += text->ptr[i] == '\n';
		nl = (size_t)pick(lines + 1);
		for (i = 0, at = 0; i < text->len && nl; i++)
			if (text->ptr[i] == '\n' && --nl == 0)
				at = i + 1;
		if (nl)
			at = text->len;
	}
	if (text->len && at == text->len && text->ptr[text->len - 1] != '\n')
		buf_addc(text, '\n');
	{
		struct buf out = BUF_INIT;
		buf_add(&out, text->ptr ? text->ptr : "", at);
		buf_adds(&out, line);
		buf_add(&out, text->ptr ? text->ptr + at : "", text->len - at);
		buf_reset(text);
		buf_add(text, out.ptr, out.len);
		buf_release(&out);
	}
}

static void new_name(char *out, size_t n, const char *ext)
{
	static const char *folders[] = { "", "notes/", "notes/deep/", "att/" };
	snprintf(out, n, "%sf%d-%d%s", folders[pick(4)], step_no, pick(1000), ext);
}

/* ---- the replicas' edits ---- */

static void replica_step(const char *dir)
{
	struct buf text = BUF_INIT;
	char *f = random_file(dir), name[96];
	int what = pick(10);

	if (!f || what < 2) {
		char tok[32], body[256];
		new_name(name, sizeof(name), pick(4) ? ".md" : ".bin");
		new_token(tok);
		snprintf(body, sizeof(body), "# New %s\n\ncreated %s\n", name, tok);
		tv_write(dir, name, body);
	} else if (what < 7) {
		tv_read(dir, f, &text);
		insert_token(&text, f);
		tv_write_len(dir, f, text.ptr, text.len);
	} else if (what < 8) {
		tv_read(dir, f, &text);
		mark_deletable(text.ptr);
		tv_unlink(dir, f);
	} else {
		struct buf from = BUF_INIT, to = BUF_INIT;
		const char *dot = strrchr(f, '.');
		new_name(name, sizeof(name), dot ? dot : "");
		buf_addf(&from, "%s/%s", dir, f);
		buf_addf(&to, "%s/%s", dir, name);
		tv_write(dir, name, ""); /* its folder */
		CHECK(rename(from.ptr, to.ptr) == 0);
		buf_release(&from);
		buf_release(&to);
	}
	free(f);
	buf_release(&text);
}

/* ---- another client, writing the server ---- */

static void target_of(struct buf *t, const char *base, const char *path)
{
	buf_reset(t);
	buf_adds(t, base);
	buf_add_urlpath(t, path, strlen(path));
}

/* Read, edit and write back one file through the API or WebDAV, with If-Match. */
static void server_edit(const char *path)
{
	struct buf t = BUF_INIT, text = BUF_INIT, h = BUF_INIT;
	struct resp r;
	int dav = pick(2);

	target_of(&t, dav ? "/dav/" : "/api/v1/files/", path);
	if (fetch_request(srv.port, "GET", t.ptr, AUTH, NULL, 0, &r) != 0 || r.status != 200 ||
	    !hdr(&r, "ETag")) {
		resp_free(&r);
		goto out;
	}
	buf_add(&text, r.body.ptr ? r.body.ptr : "", r.body.len);
	buf_addf(&h, AUTH "If-Match: %s\r\n", hdr(&r, "ETag"));
	resp_free(&r);
	insert_token(&text, path);
	CHECK(fetch_request(srv.port, "PUT", t.ptr, h.ptr, text.ptr, text.len, &r) == 0);
	CHECK(r.status == 200 || r.status == 201 || r.status == 204);
	resp_free(&r);
out:
	buf_release(&t);
	buf_release(&text);
	buf_release(&h);
}

static void server_step(void)
{
	struct buf t = BUF_INIT, b = BUF_INIT;
	char *f = random_file(server_vault), name[96];
	struct resp r;
	int what = pick(10);

	if (!f || what < 2) {
		char tok[32], body[256];
		new_name(name, sizeof(name), ".md");
		new_token(tok);
		snprintf(body, sizeof(body), "# Server %s\n\ncreated there %s\n", name, tok);
		target_of(&t, "/api/v1/files/", name);
		CHECK(fetch_request(srv.port, "PUT", t.ptr, AUTH "If-None-Match: *\r\n", body,
				    strlen(body), &r) == 0);
		CHECK(r.status == 201);
		resp_free(&r);
	} else if (what < 7) {
		server_edit(f);
	} else if (what < 8) {
		tv_read(server_vault, f, &b);
		mark_deletable(b.ptr);
		target_of(&t, "/api/v1/files/", f);
		CHECK(fetch_request(srv.port, "DELETE", t.ptr, AUTH, NULL, 0, &r) == 0);
		CHECK_INT(r.status, 200);
		resp_free(&r);
	} else {
		const char *dot = strrchr(f, '.');
		new_name(name, sizeof(name), dot ? dot : "");
		buf_adds(&b, "{\"from\":\"");
		buf_adds_json(&b, f);
		buf_adds(&b, "\",\"to\":\"");
		buf_adds_json(&b, name);
		buf_adds(&b, "\"}");
		CHECK(fetch_request(srv.port, "POST", "/api/v1/move", AUTH, b.ptr, b.len, &r) == 0);
		CHECK_INT(r.status, 200);
		resp_free(&r);
	}
	free(f);
	buf_release(&t);
	buf_release(&b);
}

/* ---- syncs ---- */

/* Syncs replica k, killed at a random moment when kill_it; 1 when it changed nothing. */
static int sync_replica(int k, int kill_it)
{
	const char *const slow[] = { "QUIRE_SYNC_TEST_DELAY_MS=4", NULL };
	struct syncproc p;
	int quiet = 0;

	syncproc_spawn(&p, replica[k], url, token_file, NULL, kill_it ? slow : NULL);
	syncs++;
	if (kill_it) {
		usleep((useconds_t)pick(40) * 1000);
		kill(p.pid, SIGKILL);
		kills++;
	}
	syncproc_finish(&p);
	if (!kill_it || p.status != 128 + SIGKILL) {
		if (p.status != 0 && p.status != 3)
			fprintf(stderr, "  step %d: sync of replica %d exited %d:\n%s", step_no, k,
				p.status, p.out.ptr);
		CHECK(p.status == 0 || p.status == 3);
		CHECK(!strstr(p.out.ptr, "Sanitizer"));
		quiet = p.status == 0 &&
			strstr(p.out.ptr, "uploaded 0, downloaded 0, merged 0, deleted 0 here and 0 on "
					  "the server") != NULL;
	}
	syncproc_free(&p);
	return quiet;
}

/* ---- the check ---- */

/* Every replica holds exactly the server's files. */
static void check_same(void)
{
	struct vault_scan s, l;
	struct buf a = BUF_INIT, b = BUF_INIT;
	size_t i;
	int k;

	list(server_vault, &s);
	for (k = 0; k < REPLICAS; k++) {
		list(replica[k], &l);
		if (l.n != s.n)
			fprintf(stderr, "  replica %d has %zu files, the server %zu\n", k, l.n, s.n);
		CHECK_INT(l.n, s.n);
		for (i = 0; i < l.n && i < s.n; i++) {
			if (strcmp(l.files[i].path, s.files[i].path) != 0)
				fprintf(stderr, "  replica %d: %s, the server: %s\n", k, l.files[i].path,
					s.files[i].path);
			CHECK_STR(l.files[i].path, s.files[i].path);
			tv_read(replica[k], l.files[i].disk, &a);
			tv_read(server_vault, s.files[i].disk, &b);
			if (a.len != b.len || memcmp(a.ptr, b.ptr, a.len) != 0)
				fprintf(stderr, "  replica %d: %s differs\n", k, l.files[i].path);
			CHECK(a.len == b.len && !memcmp(a.ptr ? a.ptr : "", b.ptr ? b.ptr : "", a.len));
		}
		vault_scan_release(&l);
	}
	vault_scan_release(&s);
	buf_release(&a);
	buf_release(&b);
}

/* Every token no deletion took is in some file of the server. */
static void check_tokens(void)
{
	struct vault_scan s;
	struct buf all = BUF_INIT, one = BUF_INIT;
	char tok[32];
	size_t i;
	int t, lost = 0, kept = 0;

	list(server_vault, &s);
	for (i = 0; i < s.n; i++) {
		tv_read(server_vault, s.files[i].disk, &one);
		buf_add(&all, one.ptr ? one.ptr : "", one.len);
		buf_addc(&all, '\n');
	}
	for (t = 0; t < tokens.n; t++) {
		snprintf(tok, sizeof(tok), "[t%d]", t);
		if (all.ptr && strstr(all.ptr, tok)) {
			kept++;
		} else if (!tokens.deletable[t]) {
			fprintf(stderr, "  lost: %s\n", tok);
			lost++;
		}
	}
	CHECK_INT(lost, 0);
	fprintf(stderr, "  %d tokens written, %d present in %zu files, %d syncs (%d killed)\n",
		tokens.n, kept, s.n, syncs, kills);
	vault_scan_release(&s);
	buf_release(&all);
	buf_release(&one);
}

static void test_replicas(void)
{
	const char *e = getenv("QUIRE_STEPS"), *sd = getenv("QUIRE_SEED");
	int steps = e && *e ? atoi(e) : 40, round, k;
	char tok[32], body[256];

	rng = (uint64_t)(sd && *sd ? atoll(sd) : 1) * 0x9E3779B97F4A7C15ull + 1;
	for (k = 0; k < 6; k++) {
		char name[32];
		new_token(tok);
		snprintf(name, sizeof(name), k % 3 ? "notes/n%d.md" : "att/a%d.bin", k);
		snprintf(body, sizeof(body), "# Note %d\n\nfirst line %s\nsecond line\n", k, tok);
		tv_write(replica[0], name, body);
	}
	CHECK(sync_replica(0, 0) == 0);
	CHECK(sync_replica(1, 0) == 0);
	for (step_no = 0; step_no < steps; step_no++) {
		int what = pick(10);
		if (what < 4)
			replica_step(replica[pick(REPLICAS)]);
		else if (what < 6)
			server_step();
		else
			sync_replica(pick(REPLICAS), pick(3) == 0);
		usleep(2000); /* a file saved twice within a timestamp tick is still seen: see hashcache.h */
	}
	for (round = 0; round < 8; round++) {
		int quiet = 1;
		for (k = 0; k < REPLICAS; k++)
			quiet &= sync_replica(k, 0);
		if (quiet)
			break;
	}
	CHECK(round < 8);
	check_same();
	check_tokens();
}

int main(void)
{
	struct syncapi_options so;
	struct site_server_options o = { .threads = 2, .max_body_size = SYNCAPI_DEFAULT_MAX_UPLOAD,
					 .sync = &so };
	struct buf tf = BUF_INIT;
	char *tokdir;
	int k;

	log_set_level(LOG_WARN);
	if (!syncproc_bin("test-syncreplicas"))
		return 1;
	server_vault = tv_new();
	for (k = 0; k < REPLICAS; k++)
		replica[k] = tv_new();
	tokdir = tv_new();
	tv_write(tokdir, "token", TOKEN "\n");
	buf_addf(&tf, "%s/token", tokdir);
	token_file = tf.ptr;
	memset(&so, 0, sizeof(so));
	so.vault = server_vault;
	so.token = TOKEN;
	site_server_start(&srv, server_vault, &o);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv.port);

	RUN(test_replicas);

	CHECK_INT(site_server_stop(&srv), 0);
	tv_remove(server_vault);
	for (k = 0; k < REPLICAS; k++)
		tv_remove(replica[k]);
	tv_remove(tokdir);
	buf_release(&tf);
	free(tokens.deletable);
	return test_done();
}
