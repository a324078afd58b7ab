/*
 * test-crash.c: a 2xx from the sync API means the bytes survive a crash.
 *
 * Twenty rounds of: start `$QUIRE_BIN serve` with a token on one vault;
 * four client threads stream PUTs of notes (up to 64 KB) and attachments
 * (up to 1 MB) with distinctive bytes, each thread owning its paths so
 * that a path has at most one write in flight; SIGKILL the server at a
 * random moment; then check the disk and, after a restart, the site:
 *
 *	- every path holds exactly the bytes of its last acknowledged PUT, or
 *	  of the one in flight when the server died (it may have landed
 *	  without its answer getting out) — never anything else, so no file
 *	  is torn or truncated;
 *	- temporary files may be left by the kill, but the restarted server
 *	  removes them, never lists them in the manifest and never serves
 *	  them; the manifest's hashes match the disk;
 *	- every note's page shows the version on disk.
 *
 * A SIGKILL loses no page cache, so this checks the protocol (write to a
 * temporary, rename, answer after), not the fsyncs; those cannot be
 * tested without cutting power.
 */
#include "lib/httpc.h"
#include "lib/serveproc.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "util/hash.h"
#include "util/json.h"
#include "vault/vault.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 20
#define THREADS 4
#define NOTES 24
#define FILES 8
#define NPATHS (NOTES + FILES)
#define TOKEN "crash-test-token-0123"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"
#define MAX_ALLOWED 4

struct path_state {
	char path[64];
	struct buf allowed[MAX_ALLOWED]; /* [0] the last acknowledged; then unacknowledged sends */
	int nallowed;
	int acked;                       /* allowed[0] was acknowledged */
	unsigned long seq;
};

static struct path_state paths[NPATHS];
static char *vault, *token_file;
static const char *quire_bin;
static int port;
static atomic_int stop_clients;
static atomic_ulong acked_total;

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t rnd(void)
{
	uint64_t x;

	pthread_mutex_lock(&rng_lock);
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	x = rng_state;
	pthread_mutex_unlock(&rng_lock);
	return x;
}

/* ---- the server process ---- */

static pid_t start_server(void)
{
	struct serveproc_options o = { quire_bin, vault, token_file, 2, 1, NULL };

	return serveproc_start(&o, &port);
}

static void kill_server(pid_t pid)
{
	int st = 0;

	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* ---- the writers ---- */

static void make_content(struct path_state *p, struct buf *out)
{
	size_t size, i;

	buf_reset(out);
	p->seq++;
	if (strstr(p->path, ".md")) {
		size = (size_t)(rnd() % (64 * 1024));
		buf_addf(out, "# %s seq %lu\n\n", p->path + 6, p->seq);
		while (out->len < size) {
			uint64_t r = rnd();
			for (i = 0; i < 60; i++)
				buf_addc(out, 'a' + (int)((r >> (i % 58)) % 26));
			buf_addf(out, " %lu\n", p->seq);
		}
	} else {
		size = (size_t)(rnd() % (1024 * 1024 + 1));
		buf_addf(out, "BIN %s seq %lu\n", p->path, p->seq);
		i = out->len; /* the header line is kept whole */
		while (out->len < size) {
			uint64_t r = rnd();
			buf_add(out, &r, sizeof(r));
		}
		if (size > i)
			buf_setlen(out, size);
	}
}

/* The highest snapshot version a PUT was acknowledged with. */
static _Atomic uint64_t acked_version;

static void note_version(uint64_t v)
{
	uint64_t cur = atomic_load(&acked_version);

	while (v > cur && !atomic_compare_exchange_weak(&acked_version, &cur, v))
		;
}

static void *writer(void *arg)
{
	int t = (int)(intptr_t)arg, k = t;
	struct buf content = BUF_INIT, target = BUF_INIT;

	while (!atomic_load(&stop_clients)) {
		struct path_state *p = &paths[k];
		struct resp r;

		make_content(p, &content);
		/*
		 * Allowed from now on: it may land even if no answer comes. The
		 * newest send is always kept; when the list is full the oldest
		 * unacknowledged one gives way (it was answered, with an error, so
		 * it did not land: only the send in flight at the kill may have).
		 */
		if (p->nallowed == MAX_ALLOWED) {
			struct buf gone = p->allowed[1];
			memmove(&p->allowed[1], &p->allowed[2], (MAX_ALLOWED - 2) * sizeof(gone));
			p->allowed[MAX_ALLOWED - 1] = gone;
			p->nallowed--;
		}
		buf_reset(&p->allowed[p->nallowed]);
		buf_add(&p->allowed[p->nallowed], content.ptr, content.len);
		p->nallowed++;
		buf_reset(&target);
		buf_adds(&target, "/api/v1/files/");
		buf_adds(&target, p->path);
		if (fetch_request(port, "PUT", target.ptr, AUTH, content.ptr, content.len, &r) < 0) {
			resp_free(&r);
			break; /* the server is gone */
		}
		if (r.status == 200 || r.status == 201) {
			/* acknowledged: this is now the only allowed content */
			buf_reset(&p->allowed[0]);
			buf_add(&p->allowed[0], content.ptr, content.len);
			p->nallowed = 1;
			p->acked = 1;
			atomic_fetch_add(&acked_total, 1);
			note_version((uint64_t)body_u64(r.body.ptr, "version"));
		} else {
			fprintf(stderr, "  PUT %s (seq %lu): %d %s\n", p->path, p->seq, r.status,
				r.body.ptr ? r.body.ptr : "");
		}
		resp_free(&r);
		k += THREADS;
		if (k >= NPATHS)
			k = t;
	}
	buf_release(&content);
	buf_release(&target);
	return NULL;
}

/* ---- checks ---- */

/* The first line of some content, for messages (at most 60 bytes; a static buffer). */
static const char *first_line(const struct buf *b)
{
	static char line[64];
	size_t n = 0;

	while (n < b->len && n < 60 && b->ptr[n] != '\n')
		n++;
	memcpy(line, b->ptr, n);
	line[n] = '\0';
	return line;
}

/* Each path holds one of its allowed contents, whole. Returns the paths checked. */
static int check_disk(void)
{
	struct buf disk = BUF_INIT, full = BUF_INIT;
	int i, j, n = 0;

	for (i = 0; i < NPATHS; i++) {
		struct path_state *p = &paths[i];
		int ok = 0, present;

		if (!p->nallowed)
			continue;
		buf_reset(&full);
		buf_addf(&full, "%s/%s", vault, p->path);
		present = read_file(full.ptr, &disk) == 0;
		if (!present) {
			/* absent is fine only if nothing was ever acknowledged */
			ok = !p->acked;
		} else {
			for (j = 0; j < p->nallowed && !ok; j++)
				ok = disk.len == p->allowed[j].len &&
				     memcmp(disk.ptr, p->allowed[j].ptr, disk.len) == 0;
		}
		if (!ok) {
			/* which send it was (each starts with its "seq N"), and which were allowed */
			fprintf(stderr, "  %s: %zu bytes on disk (%s) match none of %d allowed versions:",
				p->path, disk.len, present ? first_line(&disk) : "absent", p->nallowed);
			for (j = 0; j < p->nallowed; j++)
				fprintf(stderr, " [%d] %zu bytes (%s)%s", j, p->allowed[j].len,
					first_line(&p->allowed[j]), j == 0 && p->acked ? " acknowledged" : "");
			fprintf(stderr, "\n");
		}
		CHECK(ok);
		/* what is on disk is now the only allowed content */
		if (ok && present) {
			buf_reset(&p->allowed[0]);
			buf_add(&p->allowed[0], disk.ptr, disk.len);
			p->nallowed = 1;
			p->acked = 1;
		}
		n++;
	}
	buf_release(&disk);
	buf_release(&full);
	return n;
}

/* The restarted server: manifest against the disk, no temporary files, pages up to date. */
static void check_site(void)
{
	struct resp r;
	char url[128];
	int i, listed;

	CHECK_INT(tv_count_tmp(vault, "crash"), 0);
	CHECK(fetch_request(port, "GET", "/api/v1/manifest", AUTH, NULL, 0, &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(r.body.ptr && !strstr(r.body.ptr, "quire-tmp"));
	listed = (int)tv_check_manifest(vault, r.body.ptr, r.body.len, NULL);
	resp_free(&r);
	CHECK(listed >= 1);
	for (i = 0; i < NOTES; i++) {
		struct path_state *p = &paths[i];
		const char *seq;
		if (!p->nallowed || !p->acked)
			continue;
		snprintf(url, sizeof(url), "/crash/n-%02d", i);
		CHECK(fetch_request(port, "GET", url, NULL, NULL, 0, &r) == 0);
		CHECK_INT(r.status, 200);
		seq = strstr(p->allowed[0].ptr, " seq ");
		if (seq) {
			char want_seq[32];
			snprintf(want_seq, sizeof(want_seq), " seq %lu", strtoul(seq + 5, NULL, 10));
			CHECK(r.body.ptr && strstr(r.body.ptr, want_seq));
		}
		resp_free(&r);
	}
	/* a temporary name is never a page */
	CHECK(fetch_request(port, "GET", "/crash/.quire-tmp-1-1", NULL, NULL, 0, &r) == 0);
	CHECK_INT(r.status, 404);
	resp_free(&r);
}

static pid_t server_pid;
static int round_no, left_tmp;

/*
 * Versions survive the restart: waiting for the last version acknowledged
 * before the kill is answered 200 at once, not 408 after the timeout.
 */
static void check_wait_after_restart(void)
{
	char target[96];
	struct resp r;
	uint64_t v = atomic_load(&acked_version);

	CHECK(v > 0);
	snprintf(target, sizeof(target), "/api/v1/wait?version=%llu&timeout=2000",
		 (unsigned long long)v);
	CHECK(fetch_request(port, "GET", target, AUTH, NULL, 0, &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK((uint64_t)body_u64(r.body.ptr, "version") >= v);
	resp_free(&r);
}

/* One round: write, kill at a random moment, check the disk, restart, check the site. */
static void test_round(void)
{
	pthread_t t[THREADS];
	unsigned long before = atomic_load(&acked_total);
	int delay_ms = 40 + (int)(rnd() % 260), i;

	atomic_store(&stop_clients, 0);
	for (i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, writer, (void *)(intptr_t)i) == 0);
	usleep((useconds_t)delay_ms * 1000);
	/* on a busy machine the first fsync can take longer than the delay: a round
	 * is only worth checking once something was acknowledged */
	for (i = 0; i < 10000 && atomic_load(&acked_total) == before; i++)
		usleep(1000);
	kill_server(server_pid);
	atomic_store(&stop_clients, 1);
	for (i = 0; i < THREADS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	left_tmp += tv_count_tmp(vault, "crash");
	check_disk();
	server_pid = start_server();
	check_wait_after_restart();
	check_site();
	CHECK(atomic_load(&acked_total) > before);
	if (round_no == 0 || round_no == ROUNDS - 1)
		fprintf(stderr, "  round %d: killed after %d ms, %lu PUTs acknowledged\n", round_no,
			delay_ms, atomic_load(&acked_total) - before);
	round_no++;
}

int main(void)
{
	struct buf tf = BUF_INIT;
	double t0 = now_s();
	int i, j;

	quire_bin = getenv("QUIRE_BIN");
	if (!quire_bin || access(quire_bin, X_OK) != 0) {
		fprintf(stderr, "test-crash: QUIRE_BIN must name the built quire binary\n");
		return 1;
	}
	vault = tv_new();
	tv_write(vault, "index.md", "# Crash vault\n");
	buf_addf(&tf, "%s/.token", vault);
	tv_write(vault, ".token", TOKEN "\n");
	token_file = tf.ptr;
	for (i = 0; i < NPATHS; i++) {
		if (i < NOTES)
			snprintf(paths[i].path, sizeof(paths[i].path), "crash/n-%02d.md", i);
		else
			snprintf(paths[i].path, sizeof(paths[i].path), "crash/f-%02d.bin", i);
		for (j = 0; j < MAX_ALLOWED; j++)
			buf_init(&paths[i].allowed[j], 0);
	}
	server_pid = start_server();
	for (i = 0; i < ROUNDS && now_s() - t0 < 50; i++)
		RUN(test_round);
	serveproc_stop(server_pid);
	fprintf(stderr, "  %lu PUTs acknowledged in %d rounds; %d temporary files left by kills, "
			"all removed on restart\n",
		atomic_load(&acked_total), round_no, left_tmp);
	for (i = 0; i < NPATHS; i++)
		for (j = 0; j < MAX_ALLOWED; j++)
			buf_release(&paths[i].allowed[j]);
	tv_remove(vault);
	buf_release(&tf);
	fprintf(stderr, "test-crash: %.1f s\n", now_s() - t0);
	return test_done();
}
