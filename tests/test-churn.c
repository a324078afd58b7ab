/*
 * test-churn.c: notes changing in quick succession never crash the server.
 *
 * What an editor saving, `git checkout`, rsync or several sync clients do
 * to a vault, for a bounded time, against the real `$QUIRE_BIN serve` (the
 * ASan/UBSan binary in the sanitizer build, where a use-after-free aborts
 * the server):
 *
 *	- test_watch_churn: on a copy of pwsh-docs (300 generated notes
 *	  without the shared corpus), 200 notes are unlinked,
 *	  truncated, replaced by a folder of the same name (holding a note)
 *	  and restored, as fast as the file system takes it, while the file
 *	  watcher reports them in bursts;
 *	- test_sync_churn: four clients PUT, DELETE and MOVE twelve notes that
 *	  link to and embed each other through the sync API.
 *
 * Then the churn stops, every file is put back as it was, and the server
 * must still answer, serve each restored note with its own text, and exit
 * cleanly on SIGTERM (under ASan a leak or a late error fails that exit).
 *
 * Environment: QUIRE_CHURN_SECONDS (default 8 per test).
 */
#include "lib/edits.h"
#include "lib/httpc.h"
#include "lib/serveproc.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "util/xalloc.h"
#include "vault/vault.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN "churn-test-token-0123"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"

static const char *quire_bin;
static int port;

static double churn_seconds(void)
{
	const char *s = getenv("QUIRE_CHURN_SECONDS");
	return s ? atof(s) : 8.0;
}

/* Starts `quire serve` on vault (with the sync API when token_file is set); returns its pid. */
static pid_t start_server(const char *vault, const char *token_file)
{
	struct serveproc_options o = { quire_bin, vault, token_file, 1, 0, NULL };

	return serveproc_start(&o, &port);
}

/* The server is still running (not exited, not killed by a sanitizer). */
static int alive(pid_t pid)
{
	int st;
	pid_t r = waitpid(pid, &st, WNOHANG);
	if (r == pid) {
		if (WIFSIGNALED(st))
			fprintf(stderr, "  server died of signal %d\n", WTERMSIG(st));
		else
			fprintf(stderr, "  server exited with %d\n", WEXITSTATUS(st));
		return 0;
	}
	return r == 0;
}

/* Waits until the served page at url contains needle (or 30 s pass). */
static int served_with(const char *url, const char *needle)
{
	double until = now_s() + 30;
	struct resp r;

	do {
		if (fetch_request(port, "GET", url, "", NULL, 0, &r) == 0 && r.status == 200 &&
		    r.body.ptr && strstr(r.body.ptr, needle)) {
			resp_free(&r);
			return 1;
		}
		resp_free(&r);
		usleep(50 * 1000);
	} while (now_s() < until);
	return 0;
}

static int healthy(void)
{
	struct resp r;
	int ok = fetch_request(port, "GET", "/healthz", "", NULL, 0, &r) == 0 && r.status == 200;
	resp_free(&r);
	return ok;
}

/* ---- the file watcher ---------------------------------------------------- */

struct churned {
	char *rel;           /* vault-relative path of the note */
	struct buf text;     /* its original bytes */
};

static void path_of(const char *root, const char *rel, struct buf *out)
{
	buf_reset(out);
	buf_addf(out, "%s/%s", root, rel);
}

/* Puts the note back as a file with its original bytes, whatever is there now. */
static void restore(const char *root, const struct churned *c)
{
	struct buf p = BUF_INIT, inner = BUF_INIT;

	path_of(root, c->rel, &p);
	buf_addf(&inner, "%s/inside.md", p.ptr);
	unlink(inner.ptr);
	rmdir(p.ptr);
	tv_write_len(root, c->rel, c->text.ptr, c->text.len);
	buf_release(&p);
	buf_release(&inner);
}

/* A heading of the note made of letters, digits and spaces (what its page shows as is). */
static void plain_heading(const char *text, struct buf *out)
{
	const char *h;

	buf_reset(out);
	for (h = strstr(text, "\n## "); h; h = strstr(h + 1, "\n## ")) {
		const char *s = h + 4, *e = s;
		while (*e == ' ' || (*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') ||
		       (*e >= '0' && *e <= '9'))
			e++;
		if (*e == '\n' && e - s > 3) {
			buf_add(out, s, (size_t)(e - s));
			return;
		}
	}
	buf_adds(out, "</html>");
}

static void churn_one(const char *root, const struct churned *c)
{
	struct buf p = BUF_INIT, inner = BUF_INIT;
	int fd;

	path_of(root, c->rel, &p);
	switch (pick(5)) {
	case 0: /* deleted */
		unlink(p.ptr);
		break;
	case 1: /* truncated, as an editor does before writing */
		fd = open(p.ptr, O_WRONLY | O_TRUNC);
		if (fd >= 0)
			close(fd);
		break;
	case 2: /* replaced by a folder of the same name */
		unlink(p.ptr);
		if (mkdir(p.ptr, 0755) == 0) {
			buf_addf(&inner, "%s/inside.md", c->rel);
			tv_write(root, inner.ptr, "# Inside\n\nA note in a folder named like a note.\n");
		}
		break;
	case 3: /* written again with other bytes (a folder is left as it is) */
		if (rmdir(p.ptr) == 0 || errno != ENOTEMPTY)
			tv_write(root, c->rel, "---\ntitle: Churned\n---\nShort-lived [[about_Modules]].\n");
		break;
	default: /* restored */
		restore(root, c);
		break;
	}
	buf_release(&p);
	buf_release(&inner);
}

/*
 * Without the shared corpus: 300 notes in folders, each with a heading of
 * its own, a link to another's and an embed of a third's section, so the
 * churn runs in any clone.
 */
static void generated_notes(const char *root, const char *missing)
{
	struct buf rel = BUF_INIT, text = BUF_INIT;
	size_t i;

	fprintf(stderr, "  no %s (the shared corpus): on 300 generated notes\n", missing);
	for (i = 0; i < 300; i++) {
		buf_reset(&rel);
		buf_addf(&rel, "part %zu/Note %zu.md", i % 7, i);
		buf_reset(&text);
		buf_addf(&text, "# Note %zu\n\n![[Note %zu#Quote]]\n\n## Section of note %zu\n\n"
			 "See [[Note %zu#Section of note %zu]].\n\n## Quote\n\nQuoted %zu.\n", i,
			 (i + 1) % 300, i, (i + 2) % 300, (i + 2) % 300, i);
		tv_write(root, rel.ptr, text.ptr);
	}
	buf_release(&rel);
	buf_release(&text);
}

static void test_watch_churn(void)
{
	struct buf src = BUF_INIT, url = BUF_INIT, needle = BUF_INIT;
	struct files files = { NULL, 0 };
	struct churned *notes = NULL;
	size_t n = 0, i;
	char *root = tv_new();
	double until;
	unsigned long ops = 0;
	pid_t pid;

	rng_state = 8;
	buf_addf(&src, "%s/pwsh-docs", tv_corpus());
	if (tv_exists(src.ptr, "."))
		CHECK(tv_copy(src.ptr, root) == 0);
	else
		generated_notes(root, src.ptr);
	list_files(root, &files);
	/* 200 notes with a title of their own, so a restored page can be recognised */
	notes = xcalloc(200, sizeof(*notes));
	for (i = 0; i < files.n && n < 200; i++) {
		struct churned *c = &notes[n];
		if (!is_md(files.v[(i * 7) % files.n]) || strstr(files.v[(i * 7) % files.n], "index.md"))
			continue;
		c->rel = xstrdup(files.v[(i * 7) % files.n]);
		tv_read(root, c->rel, &c->text);
		if (strstr(c->text.ptr, "slug:")) {
			free(c->rel);
			buf_release(&c->text);
			continue;
		}
		n++;
	}
	CHECK(n >= 100);
	if (n == 0)
		goto out;
	pid = start_server(root, NULL);
	until = now_s() + churn_seconds();
	while (now_s() < until && alive(pid)) {
		churn_one(root, &notes[pick(n)]);
		if (++ops % 64 == 0)
			usleep(2000); /* a burst, then the watcher's next read */
	}
	CHECK(alive(pid));
	for (i = 0; i < n; i++)
		restore(root, &notes[i]);
	/* every restored note is served again with its own text */
	for (i = 0; i < n && alive(pid); i += 10) {
		char *u = vault_note_url(notes[i].rel, NULL);
		plain_heading(notes[i].text.ptr, &needle);
		if (!served_with(u, needle.ptr)) {
			fprintf(stderr, "  %s: not served with \"%s\" after the churn\n", u,
				needle.ptr);
			CHECK(0);
		}
		free(u);
	}
	fprintf(stderr, "  %lu file operations on %zu notes in %.0f s\n", ops, n, churn_seconds());
	CHECK(healthy());
	if (alive(pid))
		serveproc_stop(pid);
out:
	for (i = 0; i < n; i++) {
		free(notes[i].rel);
		buf_release(&notes[i].text);
	}
	free(notes);
	files_release(&files);
	buf_release(&src);
	buf_release(&url);
	buf_release(&needle);
	tv_remove(root);
}

/* ---- the sync API ------------------------------------------------------- */

#define SYNC_NOTES 12
#define CLIENTS 4

static atomic_int stop_clients;
static atomic_ulong sync_ops, sync_errors;

static void note_text(unsigned k, uint64_t r, struct buf *out)
{
	buf_reset(out);
	buf_addf(out, "---\ntitle: Note %u v%llu\naliases: [N%u]\n---\n", k,
		 (unsigned long long)(r % 1000), k);
	buf_addf(out, "Links [[n%u]] and [[n%u|that]], embeds ![[n%u]] and ![[n%u#Part]].\n\n",
		 (unsigned)((r >> 8) % SYNC_NOTES), (unsigned)((r >> 16) % SYNC_NOTES),
		 (unsigned)((r >> 24) % SYNC_NOTES), (unsigned)((r >> 32) % SYNC_NOTES));
	buf_addf(out, "## Part\n\nSection of %u. ^b%u\n", k, k);
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *sync_client(void *arg)
{
	uint64_t seed = 0x1234567ull + (uintptr_t)arg * 7919;
	struct buf body = BUF_INIT, target = BUF_INIT;

	while (!atomic_load(&stop_clients)) {
		uint64_t r = xs(&seed);
		unsigned k = (unsigned)(r % SYNC_NOTES), op = (unsigned)((r >> 40) % 6);
		struct resp resp;
		int rc;

		buf_reset(&target);
		if (op <= 2) {
			note_text(k, xs(&seed), &body);
			buf_addf(&target, "/api/v1/files/%sn%u.md", (r >> 50) & 1 ? "sub/" : "", k);
			rc = fetch_request(port, "PUT", target.ptr, AUTH, body.ptr, body.len, &resp);
		} else if (op == 3) {
			buf_addf(&target, "/api/v1/files/%sn%u.md", (r >> 50) & 1 ? "sub/" : "", k);
			rc = fetch_request(port, "DELETE", target.ptr, AUTH, NULL, 0, &resp);
		} else {
			unsigned to = (unsigned)((r >> 20) % SYNC_NOTES);
			buf_reset(&body);
			buf_addf(&body, "{\"from\":\"%sn%u.md\",\"to\":\"%sn%u.md\"}",
				 (r >> 50) & 1 ? "sub/" : "", k, (r >> 51) & 1 ? "sub/" : "", to);
			rc = fetch_request(port, "POST", "/api/v1/move", AUTH, body.ptr, body.len, &resp);
		}
		if (rc < 0) {
			resp_free(&resp);
			atomic_fetch_add(&sync_errors, 1);
			break; /* the server is gone */
		}
		if (resp.status >= 500)
			atomic_fetch_add(&sync_errors, 1);
		atomic_fetch_add(&sync_ops, 1);
		resp_free(&resp);
	}
	buf_release(&body);
	buf_release(&target);
	return NULL;
}

static void test_sync_churn(void)
{
	char *root = tv_new();
	struct buf tf = BUF_INIT, body = BUF_INIT, rel = BUF_INIT, url = BUF_INIT;
	pthread_t th[CLIENTS];
	double until;
	unsigned k;
	pid_t pid;

	buf_addf(&tf, "%s/.token", root);
	tv_write(root, ".token", TOKEN "\n");
	for (k = 0; k < SYNC_NOTES; k++) {
		buf_reset(&rel);
		buf_addf(&rel, "n%u.md", k);
		note_text(k, k * 77, &body);
		tv_write(root, rel.ptr, body.ptr);
	}
	pid = start_server(root, tf.ptr);
	atomic_store(&stop_clients, 0);
	for (k = 0; k < CLIENTS; k++)
		pthread_create(&th[k], NULL, sync_client, (void *)(uintptr_t)k);
	until = now_s() + churn_seconds();
	while (now_s() < until && alive(pid))
		usleep(100 * 1000);
	atomic_store(&stop_clients, 1);
	for (k = 0; k < CLIENTS; k++)
		pthread_join(th[k], NULL);
	CHECK(alive(pid));
	CHECK_INT((long long)atomic_load(&sync_errors), 0);
	fprintf(stderr, "  %lu sync requests from %d clients in %.0f s\n",
		(unsigned long)atomic_load(&sync_ops), CLIENTS, churn_seconds());
	/* a final write of every note is served */
	for (k = 0; k < SYNC_NOTES && alive(pid); k++) {
		struct resp resp;
		buf_reset(&rel);
		buf_addf(&rel, "/api/v1/files/final%u.md", k);
		buf_reset(&body);
		buf_addf(&body, "# Final %u\n\nSettled text %u.\n", k, k);
		CHECK(fetch_request(port, "PUT", rel.ptr, AUTH, body.ptr, body.len, &resp) == 0);
		CHECK(resp.status == 201 || resp.status == 200);
		resp_free(&resp);
		buf_reset(&url);
		buf_addf(&url, "/final%u", k);
		buf_reset(&body);
		buf_addf(&body, "Settled text %u.", k);
		CHECK(served_with(url.ptr, body.ptr));
	}
	CHECK(healthy());
	if (alive(pid))
		serveproc_stop(pid);
	buf_release(&tf);
	buf_release(&body);
	buf_release(&rel);
	buf_release(&url);
	tv_remove(root);
}

int main(void)
{
	quire_bin = getenv("QUIRE_BIN");
	if (!quire_bin) {
		fprintf(stderr, "QUIRE_BIN is not set\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	RUN(test_watch_churn);
	RUN(test_sync_churn);
	return test_done();
}
