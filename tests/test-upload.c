/*
 * test-upload.c: a large upload to the sync API of the real `quire serve`
 * ($QUIRE_BIN as a child, --max-upload 2G), issue 34.
 *
 *	- A 1 GiB PUT with the token (under ASan too) raises the server's
 *	  peak RSS (VmHWM in /proc/PID/status), after the loader has taken
 *	  the file in, by less than 16 MB: the body goes to the spool as it
 *	  arrives. The file has the size sent and the SHA-256 the test
 *	  computed while sending (the body is made in pieces from a PRNG,
 *	  never whole in the test either), the server answers that hash, and
 *	  the spool is left empty.
 *	- The same PUT without the token is refused from its head (413: an
 *	  unauthenticated body may be 4 KiB) and the connection closed: the
 *	  client, sending the body in pieces, gets a reset or EPIPE with most
 *	  of it unsent (bytes counted, never seconds).
 *	- Expect: 100-continue: with the token the server says 100 Continue
 *	  before the body is sent; without it, the final 413 and no 100.
 *
 * It needs 3 GiB free where the vault is (/tmp), and skips with a line
 * saying so otherwise.
 */
#include "lib/httpc.h"
#include "lib/serveproc.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "util/buf.h"
#include "util/hash.h"

#include <errno.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <unistd.h>

#define UPLOAD_SIZE ((uint64_t)1 << 30)
#define PIECE (256 * 1024)
#define RSS_LIMIT_KB (16 * 1024)
#define NEEDED_FREE ((uint64_t)3 << 30)
#define TOKEN "upload-test-token-0123456789"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"
/* what the client may have in flight, in its socket and the server's, when the server closes */
#define UNREAD_BOUND ((uint64_t)16 << 20)

static char *vault, *token_file;
static pid_t server;
static int port;
static unsigned char piece[PIECE];

/* The peak resident size of process pid in kB (VmHWM), or -1. */
static long vm_hwm_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = atol(line + 6);
	fclose(f);
	return kb;
}

/* The next n bytes of a xorshift64 sequence into out (n a multiple of 8). */
static void fill(unsigned char *out, size_t n, uint64_t *state)
{
	size_t i;

	for (i = 0; i < n; i += 8) {
		uint64_t x = *state;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		*state = x;
		memcpy(out + i, &x, 8);
	}
}

/* Sends a PUT's head for len bytes to the API's path, with extra header lines (or ""). */
static int put_head(struct conn *c, const char *path, const char *extra, uint64_t len)
{
	struct buf h = BUF_INIT;
	int rc;

	buf_addf(&h, "PUT /api/v1/files/%s HTTP/1.1\r\nHost: x\r\n%sContent-Length: %llu\r\n\r\n",
		 path, extra, (unsigned long long)len);
	rc = send_all(c->fd, h.ptr, h.len);
	buf_release(&h);
	return rc;
}

/* Waits for the snapshot with version, so that the loader has taken the upload in. */
static void wait_version(long long version)
{
	char req[160];
	struct resp r;

	snprintf(req, sizeof(req),
		 "GET /api/v1/wait?version=%lld&timeout=60000 HTTP/1.1\r\nHost: x\r\n" AUTH
		 "Connection: close\r\n\r\n", version);
	CHECK(fetch(port, req, &r) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);
}

/* A small spooled upload first: what the server allocates once is not the large one's. */
static void warm_up(void)
{
	struct resp r;
	uint64_t seed = 7;
	long long version;

	fill(piece, PIECE, &seed);
	CHECK(fetch_request(port, "PUT", "/api/v1/files/warm.bin", AUTH, piece, PIECE, &r) == 0);
	CHECK_INT(r.status, 201);
	version = r.body.ptr ? body_u64(r.body.ptr, "version") : -1;
	resp_free(&r);
	wait_version(version);
}

static int enough_space(void)
{
	struct statvfs sv;

	if (statvfs(vault, &sv) < 0 || (uint64_t)sv.f_bavail * sv.f_frsize < NEEDED_FREE) {
		test_skip("needs 3 GiB free in %s for the upload and its spool", vault);
		return 0;
	}
	return 1;
}

static void test_large_upload(void)
{
	struct timeval slow = { 600, 0 };
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char digest[32];
	char sha[SHA256_HEX_SIZE], path[512];
	struct buf got = BUF_INIT;
	struct conn c;
	struct resp r;
	struct stat st;
	uint64_t sent = 0, seed = 0x9e3779b97f4a7c15ULL;
	long before, after;
	long long version;
	unsigned int i;

	if (!enough_space() || !md) {
		EVP_MD_CTX_free(md);
		return;
	}
	warm_up();
	before = vm_hwm_kb(server);
	CHECK(before > 0);
	CHECK(EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1);
	CHECK(conn_open(&c, port) >= 0);
	/* hashing and fsyncing a gigabyte may outlast the client's usual 30 s */
	setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &slow, sizeof(slow));
	CHECK(put_head(&c, "big/blob.bin", AUTH, UPLOAD_SIZE) == 0);
	while (sent < UPLOAD_SIZE) {
		fill(piece, PIECE, &seed);
		CHECK(EVP_DigestUpdate(md, piece, PIECE) == 1);
		if (send_all(c.fd, piece, PIECE) < 0)
			break;
		sent += PIECE;
	}
	CHECK(sent == UPLOAD_SIZE);
	CHECK(EVP_DigestFinal_ex(md, digest, NULL) == 1);
	EVP_MD_CTX_free(md);
	for (i = 0; i < 32; i++)
		snprintf(sha + 2 * i, 3, "%02x", digest[i]);
	CHECK(read_resp(&c, &r, 0) == 0);
	CHECK_INT(r.status, 201);
	CHECK(r.body.ptr && body_str(r.body.ptr, "sha256", &got) == 0);
	CHECK_STR(got.ptr, sha);
	version = r.body.ptr ? body_u64(r.body.ptr, "version") : -1;
	resp_free(&r);
	conn_close(&c);
	/* the loader has seen the file too: its cost is counted */
	wait_version(version);
	after = vm_hwm_kb(server);
	fprintf(stderr, "  upload: %llu MiB; the server's VmHWM %ld kB before, %ld kB after\n",
		(unsigned long long)(UPLOAD_SIZE >> 20), before, after);
	CHECK(after > 0 && after - before < RSS_LIMIT_KB);
	snprintf(path, sizeof(path), "%s/big/blob.bin", vault);
	CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == UPLOAD_SIZE);
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);
	buf_release(&got);
	/* the disk is given back before the next test */
	unlink(path);
}

/*
 * Sends the body of a PUT whose head went out, in pieces, until the whole
 * of it is sent or the socket fails; returns the bytes sent.
 */
static uint64_t send_until_refused(struct conn *c, uint64_t len)
{
	uint64_t sent = 0;

	memset(piece, 'x', sizeof(piece));
	while (sent < len) {
		size_t n = len - sent < 65536 ? (size_t)(len - sent) : 65536;
		ssize_t k = send(c->fd, piece, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		sent += (uint64_t)k;
	}
	return sent;
}

static void test_refused_unread(void)
{
	struct conn c;
	struct resp r;
	uint64_t sent;

	CHECK(conn_open(&c, port) >= 0);
	CHECK(put_head(&c, "denied.bin", "", UPLOAD_SIZE) == 0);
	sent = send_until_refused(&c, UPLOAD_SIZE);
	fprintf(stderr, "  refused: %llu of %llu bytes sent before the server closed\n",
		(unsigned long long)sent, (unsigned long long)UPLOAD_SIZE);
	/* the server closed while most of the body was still to come */
	CHECK(sent < UNREAD_BOUND);
	/* the answer, read after the reset (Linux keeps what came before it): 413 from the head */
	CHECK(read_resp(&c, &r, 0) == 0);
	CHECK_INT(r.status, 413);
	resp_free(&r);
	conn_close(&c);
	CHECK(!tv_exists(vault, "denied.bin"));
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);
}

/* Reads from c until a head ("\r\n\r\n") is in; 0, or -1 when the connection ended first. */
static int read_head(struct conn *c)
{
	while (!c->in.ptr || !strstr(c->in.ptr + c->off, "\r\n\r\n"))
		if (conn_fill(c) <= 0)
			return -1;
	return 0;
}

static void test_expect_continue(void)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
	struct conn c;
	struct resp r;
	uint64_t seed = 11;

	/* the token: 100 Continue before a byte of the body, then the answer */
	CHECK(conn_open(&c, port) >= 0);
	CHECK(put_head(&c, "expect.bin", AUTH "Expect: 100-continue\r\n", PIECE) == 0);
	CHECK(read_head(&c) == 0);
	CHECK(c.in.len >= sizeof(cont) - 1 && memcmp(c.in.ptr, cont, sizeof(cont) - 1) == 0);
	c.off = sizeof(cont) - 1;
	fill(piece, PIECE, &seed);
	CHECK(send_all(c.fd, piece, PIECE) == 0);
	CHECK(read_resp(&c, &r, 0) == 0);
	CHECK_INT(r.status, 201);
	resp_free(&r);
	conn_close(&c);
	CHECK(tv_exists(vault, "expect.bin"));

	/* no token: the final answer at once, no 100, and the connection closed */
	CHECK(conn_open(&c, port) >= 0);
	CHECK(put_head(&c, "expect-denied.bin", "Expect: 100-continue\r\n", PIECE) == 0);
	CHECK(read_head(&c) == 0);
	CHECK(c.in.len >= 12 && memcmp(c.in.ptr, "HTTP/1.1 413", 12) == 0);
	CHECK(read_resp(&c, &r, 0) == 0);
	CHECK_INT(r.status, 413);
	resp_free(&r);
	CHECK(closed_by_server(&c));
	conn_close(&c);
	CHECK(!tv_exists(vault, "expect-denied.bin"));
}

int main(void)
{
	static const char *const args[] = { "--max-upload", "2G", NULL };
	struct serveproc_options o = { 0 };
	const char *bin = getenv("QUIRE_BIN");
	char *tokens;
	struct buf tf = BUF_INIT;

	if (!bin) {
		fprintf(stderr, "test-upload: QUIRE_BIN must name the built quire binary\n");
		return 1;
	}
	vault = tv_new();
	tokens = tv_new();
	tv_write(vault, "index.md", "# Uploads\n");
	tv_write(tokens, "token", TOKEN "\n");
	buf_addf(&tf, "%s/token", tokens);
	token_file = tf.ptr;
	o.bin = bin;
	o.vault = vault;
	o.token_file = token_file;
	o.threads = 1;
	o.quiet = !getenv("QUIRE_TEST_VERBOSE");
	o.args = args;
	server = serveproc_start(&o, &port);
	if (port > 0) {
		RUN(test_expect_continue);
		RUN(test_refused_unread);
		RUN(test_large_upload);
		serveproc_stop(server);
	}
	buf_release(&tf);
	tv_remove(tokens);
	tv_remove(vault);
	return test_done();
}
