/*
 * test-syncliar.c: `quire sync` (the built binary, $QUIRE_BIN) against a
 * server that lies (issue 31, item 7c).
 *
 * The server here is a small real one on a socket of this process: it
 * reads each request's head (and body) and answers what the test asks,
 * counting the writes it was sent. A manifest naming paths that leave
 * the vault ("../", "//", NUL, absolute, dot-folders, not NFC), a hash
 * that would smuggle a header, a manifest larger than the client takes,
 * and a file larger than --max-file: each must end the sync with a clear
 * message naming what was wrong, before any request that writes and any
 * local write, and leave the vault and everything beside it as they were.
 */
#include "lib/syncproc.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "util/buf.h"
#include "util/files.h"
#include "util/log.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SHA_A "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"

static char *vault, *outside, *token_file;

/* ---- the lying server ---- */

static struct {
	int fd, port;
	pthread_t thread;
	atomic_int stop, writes, gets;
	const char *manifest;        /* the body of GET /api/v1/manifest */
	int huge;                    /* announce a 2 GiB manifest */
	int chunks;                  /* a file GET: this many 4 KiB chunks */
} liar;

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads one request (head, and a body of Content-Length bytes); its method and target. */
static int read_request(int fd, char *method, char *target)
{
	char head[65536];
	size_t n = 0;
	const char *cl, *end = NULL;
	long body;

	while (!end && n < sizeof(head) - 1) {
		ssize_t r = read(fd, head + n, sizeof(head) - 1 - n);
		if (r <= 0)
			return -1;
		n += (size_t)r;
		head[n] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	if (!end || sscanf(head, "%15s %1023s", method, target) != 2)
		return -1;
	cl = strcasestr(head, "\r\nContent-Length:");
	body = cl ? atol(cl + 17) : 0;
	body -= (long)(n - (size_t)(end + 4 - head));
	while (body > 0) {
		ssize_t r = read(fd, head, sizeof(head));
		if (r <= 0)
			return -1;
		body -= r;
	}
	return 0;
}

static void answer(int fd)
{
	char method[16], target[1024];
	struct buf b = BUF_INIT;
	int i;

	if (read_request(fd, method, target) < 0)
		return;
	if (strcmp(method, "GET") != 0) {
		atomic_fetch_add(&liar.writes, 1);
		buf_adds(&b, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
	} else if (strstr(target, "/api/v1/manifest")) {
		if (liar.huge)
			buf_adds(&b, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				     "Content-Length: 2147483648\r\nConnection: close\r\n\r\n{\"files\":{");
		else
			buf_addf(&b, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
				 strlen(liar.manifest), liar.manifest);
	} else if (strstr(target, "/api/v1/files/")) {
		atomic_fetch_add(&liar.gets, 1);
		buf_adds(&b, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
		for (i = 0; i < liar.chunks; i++) {
			size_t k;
			buf_adds(&b, "1000\r\n");
			for (k = 0; k < 4096; k++)
				buf_addc(&b, 'x');
			buf_adds(&b, "\r\n");
		}
		buf_adds(&b, "0\r\n\r\n");
	} else {
		buf_adds(&b, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
	}
	send_all(fd, b.ptr, b.len);
	buf_release(&b);
}

static void *liar_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&liar.stop)) {
		struct pollfd p = { .fd = liar.fd, .events = POLLIN };
		int c;
		if (poll(&p, 1, 50) <= 0)
			continue;
		c = accept(liar.fd, NULL, NULL);
		if (c < 0)
			continue;
		answer(c);
		shutdown(c, SHUT_WR);
		close(c);
	}
	return NULL;
}

static void liar_start(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	liar.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(liar.fd >= 0);
	CHECK(bind(liar.fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(listen(liar.fd, 16) == 0);
	CHECK(getsockname(liar.fd, (struct sockaddr *)&a, &len) == 0);
	liar.port = ntohs(a.sin_port);
	CHECK(pthread_create(&liar.thread, NULL, liar_main, NULL) == 0);
}

static void liar_stop(void)
{
	atomic_store(&liar.stop, 1);
	pthread_join(liar.thread, NULL);
	close(liar.fd);
}

/* ---- the client ---- */

/* Runs quire sync on the vault against the liar; its exit status, its output in out. */
static int sync_run(const char *const *extra, struct buf *out)
{
	struct syncproc p;
	char url[64];
	int st;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", liar.port);
	syncproc_spawn(&p, vault, url, token_file, extra, NULL);
	st = syncproc_finish(&p);
	buf_reset(out);
	buf_add(out, p.out.ptr ? p.out.ptr : "", p.out.len);
	syncproc_free(&p);
	return st;
}

/* Nothing was written anywhere: not on the server, not beside the vault, not in it. */
static void nothing_written(void)
{
	struct buf b = BUF_INIT;

	CHECK_INT(atomic_load(&liar.writes), 0);
	CHECK(!tv_exists(outside, "evil.md"));
	CHECK(!tv_exists(vault, "a"));
	CHECK(!tv_exists(vault, "big.md"));
	tv_read(vault, "keep.md", &b);
	CHECK(b.ptr && strcmp(b.ptr, "# Keep\n") == 0);
	buf_release(&b);
}

/* A manifest listing path (a JSON string's inside): refused, naming it, before any write. */
static void refused_path(const char *json_path, const char *why)
{
	const char *const push[] = { "--push", "--delete", NULL };
	struct buf m = BUF_INIT, out = BUF_INIT;
	int both;

	buf_addf(&m, "{\"version\":7,\"files\":{\"keep.md\":{\"sha256\":\"%s\",\"size\":7},"
		     "\"%s\":{\"sha256\":\"%s\",\"size\":1}}}", SHA_A, json_path, SHA_A);
	liar.manifest = m.ptr;
	for (both = 0; both < 2; both++) {
		CHECK_INT(sync_run(both ? push : NULL, &out), 1);
		if (!strstr(out.ptr, "the server's manifest is not valid") || !strstr(out.ptr, why))
			fprintf(stderr, "  for %s, the output lacks '%s':\n%s", json_path, why, out.ptr);
		CHECK(strstr(out.ptr, "the server's manifest is not valid") != NULL);
		CHECK(strstr(out.ptr, why) != NULL);
		CHECK_INT(atomic_load(&liar.gets), 0);
		nothing_written();
	}
	buf_release(&m);
	buf_release(&out);
}

static void test_paths_outside(void)
{
	refused_path("../evil.md", "'.' or '..' segment in path");
	refused_path("a/../../evil.md", "'.' or '..' segment in path");
	refused_path("a//b.md", "empty path segment");
	refused_path("/tmp/evil.md", "absolute path");
	refused_path("a\\u0000b.md", "NUL byte in path");
	refused_path(".quire/sync-record", "dot-file or dot-folder in path");
	refused_path("a\\\\..\\\\evil.md", "backslash in path");
	refused_path("", "empty path");
	refused_path("Cafe\\u0301.md", "not in NFC");
}

/* A hash that is not one: it would go into an If-Match header. */
static void test_bad_hash(void)
{
	struct buf out = BUF_INIT;

	liar.manifest = "{\"version\":7,\"files\":{\"keep.md\":{\"sha256\":\"" SHA_A "\",\"size\":7},"
			"\"x.md\":{\"sha256\":\"00000000000000000000000000000000000000000000000000"
			"00000000\\r\\nX: y\",\"size\":1}}}";
	CHECK_INT(sync_run(NULL, &out), 1);
	CHECK(strstr(out.ptr, "the hash of \"x.md\" is not 64 lowercase hex digits") != NULL);
	nothing_written();
	buf_release(&out);
}

/* A manifest announced at 2 GiB: refused at once, not read into memory. */
static void test_huge_manifest(void)
{
	struct buf out = BUF_INIT;

	liar.huge = 1;
	CHECK_INT(sync_run(NULL, &out), 1);
	CHECK(strstr(out.ptr, "is larger than 256 MiB; refusing it") != NULL);
	nothing_written();
	liar.huge = 0;
	buf_release(&out);
}

/* A file streamed past --max-file: that file fails, saying so, and is not written. */
static void test_file_over_bound(void)
{
	const char *const small[] = { "--max-file", "10000", NULL };
	struct buf out = BUF_INIT;

	liar.manifest = "{\"version\":7,\"files\":{\"big.md\":{\"sha256\":\"" SHA_A "\",\"size\":1}}}";
	liar.chunks = 64;
	tv_unlink(vault, "keep.md");
	CHECK_INT(sync_run(small, &out), 1);
	CHECK(strstr(out.ptr, "failed: download big.md: the server sent more than 10000 bytes") !=
	      NULL);
	CHECK(!tv_exists(vault, "big.md"));
	CHECK_INT(atomic_load(&liar.writes), 0);
	/* with room for it, the same file is taken */
	if (sync_run(NULL, &out) != 0)
		fprintf(stderr, "%s", out.ptr);
	CHECK(strstr(out.ptr, "downloaded big.md") != NULL);
	CHECK(tv_exists(vault, "big.md"));
	tv_write(vault, "keep.md", "# Keep\n");
	tv_unlink(vault, "big.md");
	buf_release(&out);
}

int main(void)
{
	struct buf tf = BUF_INIT;
	char *tokdir;

	log_set_level(LOG_WARN);
	if (!syncproc_bin("test-syncliar"))
		return 1;
	/* the vault one folder down, so that "../evil.md" would land in outside/ */
	outside = tv_new();
	tv_write(outside, "vault/keep.md", "# Keep\n");
	buf_addf(&tf, "%s/vault", outside);
	vault = buf_detach(&tf, NULL);
	tokdir = tv_new();
	tv_write(tokdir, "token", "liar-test-token-0123\n");
	buf_addf(&tf, "%s/token", tokdir);
	token_file = tf.ptr;
	liar_start();

	RUN(test_paths_outside);
	RUN(test_bad_hash);
	RUN(test_huge_manifest);
	RUN(test_file_over_bound);

	liar_stop();
	free(vault);
	tv_remove(outside);
	tv_remove(tokdir);
	buf_release(&tf);
	return test_done();
}
