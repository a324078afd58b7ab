/*
 * test-syncapi.c: the sync API against the real server, real files and
 * real sockets.
 *
 * A small vault is written to a temporary folder; the loader, the HTTP
 * front and the sync API start in-process as `quire serve` starts them,
 * on 127.0.0.1:0 (lib/server.h); an HTTP client (lib/httpc.h) writes, deletes, moves
 * and waits, and each test checks the answer, the bytes on disk and the
 * page the site serves afterwards.
 */
#include "lib/httpc.h"
#include "lib/server.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "site/loader.h"
#include "sync/syncapi.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "vault/vault.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/mount.h>
#include <unistd.h>

#define TOKEN "s3cret-token-0123456"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"
#define MAX_UPLOAD (4 * 1024 * 1024)
#define SPOOLED 3000001 /* over the HTTP server's small_body_size (64 KiB): spooled; no whole number of hashing pieces */
#define AUTH_FAILURES 5

static char *vault;
static struct site_server srv;
static int port;

/* ---- the server ---- */

/* The sync API as these tests run it, on dir with this many threads. */
static void sync_options(struct syncapi_options *so, const char *dir, int threads)
{
	memset(so, 0, sizeof(*so));
	so->vault = dir;
	so->token = TOKEN;
	so->max_upload = MAX_UPLOAD;
	so->threads = threads;
	so->auth_failures = AUTH_FAILURES;
}

static void start_server(void)
{
	struct syncapi_options so;
	/* a little over: the API's own 413 is reachable */
	struct site_server_options o = { .threads = 2, .max_body_size = MAX_UPLOAD + 4096,
					 .sync = &so };

	sync_options(&so, vault, 3);
	site_server_start(&srv, vault, &o);
	port = srv.port;
}

static void stop_server(void)
{
	CHECK_INT(site_server_stop(&srv), 0);
}

/* ---- helpers ---- */

static char *disk_path(const char *rel)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "%s/%s", vault, rel);
	return buf_detach(&b, NULL);
}

/* The file's bytes into out; 0 or -1. */
static int read_back(const char *rel, struct buf *out)
{
	char *p = disk_path(rel);
	int rc = read_file(p, out);

	free(p);
	return rc;
}

static int exists(const char *rel)
{
	struct stat st;
	char *p = disk_path(rel);
	int rc = lstat(p, &st) == 0;

	free(p);
	return rc;
}

static int put(const char *target, const char *extra, const void *body, size_t len,
	       struct resp *r)
{
	struct buf h = BUF_INIT, t = BUF_INIT;
	int rc;

	buf_addf(&h, AUTH "%s", extra ? extra : "");
	buf_addf(&t, "/api/v1/files/%s", target);
	rc = fetch_request(port, "PUT", t.ptr, h.ptr, body, len, r);
	buf_release(&h);
	buf_release(&t);
	return rc;
}

static int del(const char *target, const char *extra, struct resp *r)
{
	struct buf h = BUF_INIT, t = BUF_INIT;
	int rc;

	buf_addf(&h, AUTH "%s", extra ? extra : "");
	buf_addf(&t, "/api/v1/files/%s", target);
	rc = fetch_request(port, "DELETE", t.ptr, h.ptr, NULL, 0, r);
	buf_release(&h);
	buf_release(&t);
	return rc;
}

static int get(const char *target, struct resp *r)
{
	return fetch_request(port, "GET", target, AUTH, NULL, 0, r);
}

/* Waits for snapshot v through the API; returns the status. */
static int wait_for(long long v)
{
	struct resp r;
	char t[128];
	int status;

	snprintf(t, sizeof(t), "/api/v1/wait?version=%lld&timeout=10000", v);
	if (get(t, &r) < 0)
		return -1;
	status = r.status;
	CHECK(body_u64(r.body.ptr, "version") >= v || status != 200);
	resp_free(&r);
	return status;
}

static int body_has(const struct resp *r, const char *s)
{
	return r->body.ptr && strstr(r->body.ptr, s) != NULL;
}

static void sha_of(const char *data, size_t len, char out[SHA256_HEX_SIZE])
{
	hash_sha256_hex(data, len, out);
}

/* The name of a spare ("" if none), into out; rel is its folder, the data folder's spares. */
static void spare_in(const char *rel, char out[256])
{
	char *p = disk_path(rel);
	DIR *d = opendir(p);
	struct dirent *de;

	free(p);
	out[0] = '\0';
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			snprintf(out, 256, "%s", de->d_name);
	if (d)
		closedir(d);
}

static ino_t ino_of(const char *rel)
{
	struct stat st;
	char *p = disk_path(rel);
	int rc = stat(p, &st);

	free(p);
	return rc == 0 ? st.st_ino : 0;
}

/*
 * A write that replaces a file keeps the old inode as a spare in the data
 * folder (never in a vault folder), and the next write fills it
 * (truncated: no old byte survives) instead of allocating an inode; a
 * spare that is no longer the inode linked, or has another link, is never
 * written through.
 */
static void test_spares(void)
{
	static const char longer[] = "# Old\n\nA first version, longer than the next file's bytes.\n";
	char spare[256], name[300];
	struct resp r;
	struct buf b = BUF_INIT;
	ino_t old;
	char *victim, *link_path;

	CHECK(put("sp/a.md", NULL, longer, sizeof(longer) - 1, &r) == 0);
	CHECK_INT(r.status, 201);
	resp_free(&r);
	spare_in(".quire/spares", spare);
	CHECK_STR(spare, ""); /* a new file replaces nothing */
	old = ino_of("sp/a.md");
	CHECK(put("sp/a.md", NULL, "# A\n\nsecond\n", 13, &r) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);
	spare_in(".quire/spares", spare);
	CHECK(spare[0] != '\0');
	snprintf(name, sizeof(name), ".quire/spares/%s", spare);
	CHECK(ino_of(name) == old && ino_of("sp/a.md") != old);
	CHECK_INT(tv_count_tmp(vault, "."), 0); /* nothing in the vault's folders */
	/* the next write into sp fills the old inode */
	CHECK(put("sp/b.md", NULL, "# B\n", 4, &r) == 0);
	CHECK_INT(r.status, 201);
	resp_free(&r);
	CHECK(ino_of("sp/b.md") == old);
	CHECK(read_back("sp/b.md", &b) == 0 && b.len == 4 && memcmp(b.ptr, "# B\n", 4) == 0);
	CHECK(read_back("sp/a.md", &b) == 0 && b.len == 13 && memcmp(b.ptr, "# A\n\nsecond\n", 13) == 0);
	spare_in(".quire/spares", spare);
	CHECK_STR(spare, "");
	/* a spare swapped for a hard link to another file: that file is never written */
	CHECK(put("sp/a.md", NULL, "# A3\n", 5, &r) == 0);
	resp_free(&r);
	spare_in(".quire/spares", spare);
	CHECK(spare[0] != '\0');
	snprintf(name, sizeof(name), ".quire/spares/%s", spare);
	victim = disk_path("victim.txt");
	link_path = disk_path(name);
	tv_write(vault, "victim.txt", "VICTIM BYTES");
	CHECK(unlink(link_path) == 0 && link(victim, link_path) == 0);
	CHECK(put("sp/c.md", NULL, "# C\n", 4, &r) == 0);
	CHECK_INT(r.status, 201);
	resp_free(&r);
	CHECK(read_back("victim.txt", &b) == 0 && b.len == 12 && memcmp(b.ptr, "VICTIM BYTES", 12) == 0);
	CHECK(read_back("sp/c.md", &b) == 0 && b.len == 4);
	CHECK(access(link_path, F_OK) != 0); /* the name is gone, the file it named stays */
	unlink(victim);
	free(victim);
	free(link_path);
	buf_release(&b);
}

/* The umask of this process (as the server's files get it). */
static mode_t our_umask(void)
{
	mode_t m = umask(022);

	umask(m);
	return m;
}

/* A PUT of n bytes of data to path on the server at p; the status, with the ETag's hash in sha. */
static int put_big(int p, const char *path, const char *extra, const char *data, size_t n,
		   char sha[SHA256_HEX_SIZE])
{
	struct buf h = BUF_INIT, t = BUF_INIT;
	const char *etag;
	struct resp r;
	int status;

	buf_addf(&h, AUTH "%s", extra ? extra : "");
	buf_addf(&t, "/api/v1/files/%s", path);
	status = fetch_request(p, "PUT", t.ptr, h.ptr, data, n, &r) == 0 ? r.status : -1;
	etag = hdr(&r, "ETag");
	sha[0] = '\0';
	if (etag && strlen(etag) == SHA256_HEX_SIZE + 1)
		snprintf(sha, SHA256_HEX_SIZE, "%s", etag + 1);
	if (status == 200 || status == 201) {
		struct buf s = BUF_INIT;
		CHECK(body_str(r.body.ptr, "sha256", &s) == 0 && strcmp(s.ptr, sha) == 0);
		CHECK(body_u64(r.body.ptr, "size") == (long long)n);
		buf_release(&s);
	}
	resp_free(&r);
	buf_release(&h);
	buf_release(&t);
	return status;
}

/*
 * An upload larger than the HTTP server's small_body_size comes as the
 * file the server spooled it to, and is renamed from the spool into
 * place: byte for byte, with its hash, the mode a new file gets (or the
 * replaced file's), a stale If-Match refused before anything moves, and
 * nothing left in the spool.
 */
static void test_spooled(void)
{
	char *data = xmalloc(SPOOLED), *other = xmalloc(SPOOLED);
	char sha[SHA256_HEX_SIZE], want[SHA256_HEX_SIZE], hdr_line[128];
	struct syncapi_stats st0, st1;
	struct buf b = BUF_INIT;
	struct stat st;
	char *p = disk_path("spool/blob.bin");

	tv_random_bytes(data, SPOOLED, 1);
	tv_random_bytes(other, SPOOLED, 2);
	sha_of(data, SPOOLED, want);
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);
	syncapi_get_stats(srv.sync, &st0);
	CHECK_INT(put_big(port, "spool/blob.bin", NULL, data, SPOOLED, sha), 201);
	CHECK_STR(sha, want);
	CHECK(read_back("spool/blob.bin", &b) == 0 && b.len == SPOOLED &&
	      memcmp(b.ptr, data, SPOOLED) == 0);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == (0644 & ~our_umask()));
	syncapi_get_stats(srv.sync, &st1);
	CHECK_INT(st1.uploads_renamed - st0.uploads_renamed, 1); /* renamed, not copied */
	CHECK_INT(st1.uploads_copied - st0.uploads_copied, 0);
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);
	CHECK_INT(tv_count_tmp(vault, "."), 0);

	/* a stale If-Match: 412, the file untouched, the spool empty */
	snprintf(hdr_line, sizeof(hdr_line), "If-Match: \"%064d\"\r\n", 0);
	CHECK_INT(put_big(port, "spool/blob.bin", hdr_line, other, SPOOLED, sha), 412);
	CHECK(read_back("spool/blob.bin", &b) == 0 && b.len == SPOOLED &&
	      memcmp(b.ptr, data, SPOOLED) == 0);
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);

	/* the right one: replaced, keeping the file's mode */
	CHECK(chmod(p, 0600) == 0);
	snprintf(hdr_line, sizeof(hdr_line), "If-Match: \"%s\"\r\n", want);
	CHECK_INT(put_big(port, "spool/blob.bin", hdr_line, other, SPOOLED, sha), 200);
	sha_of(other, SPOOLED, want);
	CHECK_STR(sha, want);
	CHECK(read_back("spool/blob.bin", &b) == 0 && b.len == SPOOLED &&
	      memcmp(b.ptr, other, SPOOLED) == 0);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0600);
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);
	free(p);
	free(data);
	free(other);
	buf_release(&b);
}

/*
 * A data folder on another file system than the vault: the spooled
 * upload cannot be renamed into place, so it is copied into a temporary
 * file of the target's folder, and still leaves nothing in the spool.
 */
static void test_spooled_elsewhere(void)
{
	struct site_server other;
	struct syncapi_options so;
	struct site_server_options o = { .threads = 1, .max_body_size = MAX_UPLOAD + 4096,
					 .sync = &so };
	char data_tmpl[] = "/dev/shm/quire-spool-XXXXXX";
	char *dir = tv_new(), *data = xmalloc(SPOOLED), *data_dir;
	char sha[SHA256_HEX_SIZE], want[SHA256_HEX_SIZE];
	struct syncapi_stats stats;
	struct stat a, b;
	struct buf disk = BUF_INIT, path = BUF_INIT;

	data_dir = mkdtemp(data_tmpl);
	if (!data_dir || stat(dir, &a) < 0 || stat(data_dir, &b) < 0 || a.st_dev == b.st_dev) {
		fprintf(stderr, "  spool on another file system: skipped (needs /dev/shm on "
				"another file system than the temporary vault)\n");
		if (data_dir)
			rmdir(data_dir);
		tv_remove(dir);
		free(data);
		return;
	}
	tv_random_bytes(data, SPOOLED, 3);
	sha_of(data, SPOOLED, want);
	sync_options(&so, dir, 1);
	so.data_dir = data_dir;
	site_server_start(&other, dir, &o);
	CHECK_INT(put_big(other.port, "far/blob.bin", NULL, data, SPOOLED, sha), 201);
	CHECK_STR(sha, want);
	buf_addf(&path, "%s/far/blob.bin", dir);
	CHECK(read_file(path.ptr, &disk) == 0 && disk.len == SPOOLED &&
	      memcmp(disk.ptr, data, SPOOLED) == 0);
	syncapi_get_stats(other.sync, &stats);
	CHECK_INT(stats.uploads_copied, 1);
	CHECK_INT(stats.uploads_renamed, 0);
	CHECK_INT(tv_count_entries(data_dir, "spool"), 0);
	CHECK_INT(tv_count_tmp(dir, "."), 0);
	site_server_stop(&other);
	tv_rmtree(data_dir);
	tv_remove(dir);
	free(data);
	buf_release(&disk);
	buf_release(&path);
}

/* ---- tests ---- */

static void test_auth(void)
{
	struct resp r;

	httpc_source = "127.0.0.3";
	CHECK(fetch_request(port, "GET", "/api/v1/manifest", NULL, NULL, 0, &r) == 0);
	CHECK_INT(r.status, 401);
	CHECK(body_has(&r, "\"error\""));
	CHECK(hdr(&r, "WWW-Authenticate") != NULL);
	CHECK_STR(hdr(&r, "Content-Type"), "application/json");
	resp_free(&r);
	CHECK(fetch_request(port, "GET", "/api/v1/manifest", "Authorization: Bearer s3cret-token-012345\r\n",
			 NULL, 0, &r) == 0);
	CHECK_INT(r.status, 401);
	resp_free(&r);
	CHECK(fetch_request(port, "GET", "/api/v1/manifest", "Authorization: Basic czNjcmV0\r\n", NULL,
			 0, &r) == 0);
	CHECK_INT(r.status, 401);
	resp_free(&r);
	/* writes need the token too, and write nothing without it */
	CHECK(fetch_request(port, "PUT", "/api/v1/files/unauth.md", NULL, "x", 1, &r) == 0);
	CHECK_INT(r.status, 401);
	resp_free(&r);
	CHECK(!exists("unauth.md"));
	httpc_source = NULL;
	CHECK(fetch_request(port, "GET", "/api/v1/manifest", "Authorization: bearer " TOKEN "\r\n",
			 NULL, 0, &r) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);
	CHECK(get("/api/v1/nothing-here", &r) == 0);
	CHECK_INT(r.status, 404);
	CHECK(body_has(&r, "\"error\""));
	resp_free(&r);
	CHECK(fetch_request(port, "POST", "/api/v1/manifest", AUTH, "", 0, &r) == 0);
	CHECK_INT(r.status, 405);
	resp_free(&r);
}

static void test_rate_limit(void)
{
	struct resp r;
	int i;

	httpc_source = "127.0.0.2";
	for (i = 0; i < AUTH_FAILURES; i++) {
		CHECK(fetch_request(port, "GET", "/api/v1/manifest", "Authorization: Bearer nope\r\n",
				 NULL, 0, &r) == 0);
		CHECK_INT(r.status, 401);
		resp_free(&r);
	}
	CHECK(fetch_request(port, "GET", "/api/v1/manifest", "Authorization: Bearer nope\r\n", NULL, 0,
			 &r) == 0);
	CHECK_INT(r.status, 429);
	CHECK(hdr(&r, "Retry-After") != NULL && atoi(hdr(&r, "Retry-After")) >= 1);
	resp_free(&r);
	/*
	 * The right token from that address is not refused: behind a reverse
	 * proxy every client has the proxy's address, and wrong tokens from
	 * anyone must not lock the owner out. Wrong ones still get 429.
	 */
	CHECK(get("/api/v1/manifest", &r) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);
	CHECK(fetch_request(port, "GET", "/api/v1/manifest", "Authorization: Bearer nope\r\n", NULL, 0,
			 &r) == 0);
	CHECK_INT(r.status, 429);
	resp_free(&r);
	httpc_source = NULL;
	CHECK(get("/api/v1/manifest", &r) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);
}

/*
 * Bodies are sized before they are read: requests without the token to a
 * write route, declaring a body the server takes from its owner (here
 * 200 KB, under the test's upload limit; 60 MB on a real server), and GETs
 * declaring 100 KB, get 413 and are closed before the body is read. Before,
 * each body was read whole and then answered 401 (or the page): 30 such
 * 60 MB uploads held 1.8 GB.
 */
static void test_unauthenticated_bodies(void)
{
	enum { N = 30, M = 10, PUT_LEN = 200000, GET_LEN = 100000 };
	struct conn c[N + M];
	struct buf head = BUF_INIT;
	char *body = xcalloc(1, PUT_LEN);
	int i, refused = 0, closed = 0;

	memset(body, 'x', PUT_LEN);
	for (i = 0; i < N + M; i++) {
		buf_reset(&head);
		if (i < N)
			buf_addf(&head, "PUT /api/v1/files/big.md HTTP/1.1\r\nHost: x\r\n"
					"Content-Length: %d\r\n\r\n", PUT_LEN);
		else
			buf_addf(&head, "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n",
				 GET_LEN);
		CHECK(conn_open(&c[i], port) >= 0);
		CHECK(send_all(c[i].fd, head.ptr, head.len) == 0);
		/* the server may close before it is all sent */
		(void)send(c[i].fd, body, i < N ? PUT_LEN : GET_LEN, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	for (i = 0; i < N + M; i++) {
		struct resp r;
		if (read_resp(&c[i], &r, 0) == 0) {
			if (r.status != 413)
				fprintf(stderr, "  request %d: %d, not 413\n", i, r.status);
			refused += r.status == 413;
			resp_free(&r);
		}
		closed += conn_fill(&c[i]) <= 0;
		conn_close(&c[i]);
	}
	fprintf(stderr, "  %d of %d bodies refused unread (413), %d connections closed\n",
		refused, N + M, closed);
	CHECK_INT(refused, N + M);
	CHECK_INT(closed, N + M);
	CHECK(!exists("big.md"));
	/* the owner's upload of the same size still goes through */
	{
		struct resp r;
		CHECK(fetch_request(port, "PUT", "/api/v1/files/big.md", AUTH, body, PUT_LEN, &r) == 0);
		CHECK(r.status == 201 || r.status == 200);
		resp_free(&r);
		CHECK(exists("big.md"));
	}
	buf_release(&head);
	free(body);
}

/*
 * A full disk: a write that does not fit is answered 507, the file keeps
 * its old bytes, no temporary file is left, and once there is room again
 * the same write succeeds. The vault is on a 2 MB tmpfs (root only: the
 * test says so and does nothing elsewhere).
 */
static void test_disk_full(void)
{
	struct site_server full;
	struct syncapi_options so;
	struct site_server_options o = { .threads = 1, .max_body_size = MAX_UPLOAD + 4096,
					 .sync = &so };
	char *dir = tv_new(), *filler;
	struct buf path = BUF_INIT, body = BUF_INIT, disk = BUF_INIT;
	struct resp r;
	struct statvfs fs;
	int fd;

	if (geteuid() != 0 || mount("tmpfs", dir, "tmpfs", 0, "size=2m") < 0) {
		fprintf(stderr, "  disk full: skipped (needs root to mount a small tmpfs)\n");
		tv_remove(dir);
		return;
	}
	tv_write(dir, "notes/a.md", "# A\n\nold bytes\n");
	sync_options(&so, dir, 1);
	site_server_start(&full, dir, &o);
	/* leave about 64 KB free */
	buf_addf(&path, "%s/filler.bin", dir);
	filler = xstrdup(path.ptr);
	fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && statvfs(dir, &fs) == 0);
	if (fd >= 0) {
		char block[4096];
		memset(block, 0, sizeof(block));
		while (statvfs(dir, &fs) == 0 && fs.f_bavail * fs.f_frsize > 64 * 1024 &&
		       write(fd, block, sizeof(block)) == (ssize_t)sizeof(block))
			;
		close(fd);
	}
	while (body.len < 200 * 1024)
		buf_adds(&body, "new bytes that do not fit on the disk\n");
	CHECK(fetch_request(full.port, "PUT", "/api/v1/files/notes/a.md", AUTH, body.ptr, body.len,
			    &r) == 0);
	CHECK_INT(r.status, 507);
	CHECK(r.body.ptr && strstr(r.body.ptr, "no space"));
	resp_free(&r);
	buf_reset(&path);
	buf_addf(&path, "%s/notes/a.md", dir);
	CHECK(read_file(path.ptr, &disk) == 0 && strcmp(disk.ptr, "# A\n\nold bytes\n") == 0);
	CHECK_INT(tv_count_tmp(dir, ""), 0);
	/* room again: the same write goes through */
	CHECK(unlink(filler) == 0);
	CHECK(fetch_request(full.port, "PUT", "/api/v1/files/notes/a.md", AUTH, body.ptr, body.len,
			    &r) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);
	CHECK(read_file(path.ptr, &disk) == 0 && disk.len == body.len);
	site_server_stop(&full);
	CHECK(umount(dir) == 0);
	tv_remove(dir);
	free(filler);
	buf_release(&path);
	buf_release(&body);
	buf_release(&disk);
}

/* Tokens no client could send, or that could be guessed, are refused at start. */
static void test_bad_tokens(void)
{
	static const char *const bad[] = {
		"", "   ", "\t", " s3cret-token-0123456", "s3cret-token-0123456 ", "s3cret token 0123456",
		"s3cret-token-\1770123", "short-token", "fifteen-bytes-1",
	};
	struct syncapi_options so;
	char *data;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct syncapi *api;
		memset(&so, 0, sizeof(so));
		so.vault = vault;
		so.token = bad[i];
		api = syncapi_new(&so, srv.loader);
		CHECK(api == NULL);
		syncapi_free(api);
	}
	/* the server's own token, 20 bytes, was taken: every request here uses it */
	/* on a loopback address only, a short token is taken (a benchmark's), not a bad one */
	memset(&so, 0, sizeof(so));
	so.vault = vault;
	so.data_dir = data = tv_new(); /* not the running server's hash cache */
	so.loopback = 1;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct syncapi *api;
		so.token = bad[i];
		api = syncapi_new(&so, srv.loader);
		CHECK((api != NULL) == (i >= 7)); /* "short-token", "fifteen-bytes-1" */
		syncapi_free(api);
	}
	tv_remove(data);
}

static void test_bad_paths(void)
{
	static const struct {
		const char *target, *why;
	} bad[] = {
		{ "/etc/passwd", "absolute" },
		{ "%2Fetc%2Fpasswd", "absolute" },
		{ "a/../b.md", "'..'" },
		{ "..", "'..'" },
		{ "a/%2e%2e/b.md", "'..'" },
		{ "./a.md", "'.'" },
		{ "a/./b.md", "'.'" },
		{ "a%5Cb.md", "backslash" },
		{ "a\\b.md", "backslash" },
		{ "a%00b.md", "NUL" },
		{ "%00", "NUL" },
		{ "a%01b.md", "control" },
		{ "a%0Ab.md", "control" },
		{ "a%7Fb.md", "control" },
		{ ".obsidian/app.json", "dot-" },
		{ "notes/.hidden.md", "dot-" },
		{ ".quire-tmp-1-1", "dot-" },
		{ "%ff.md", "UTF-8" },
		{ "%c3%28.md", "UTF-8" },
		{ "%ed%a0%80.md", "UTF-8" },
		{ "%zz.md", "percent" },
		{ "a%4", "percent" },
		{ "a%", "percent" },
		{ "", "empty path" },
		{ "a//b.md", "empty path segment" },
		{ "folder/", "empty path segment" },
	};
	struct buf t = BUF_INIT;
	struct resp r;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(put(bad[i].target, NULL, "x", 1, &r) == 0);
		if (r.status != 400 || !body_has(&r, bad[i].why))
			fprintf(stderr, "  %s -> %d %s\n", bad[i].target, r.status, r.body.ptr);
		CHECK_INT(r.status, 400);
		CHECK(body_has(&r, bad[i].why));
		CHECK_STR(hdr(&r, "Content-Type"), "application/json");
		resp_free(&r);
	}
	/* a segment over 255 bytes, a path over 1024 */
	for (i = 0; i < 256; i++)
		buf_addc(&t, 'a');
	buf_adds(&t, ".md");
	CHECK(put(t.ptr, NULL, "x", 1, &r) == 0);
	CHECK_INT(r.status, 400);
	CHECK(body_has(&r, "segment longer than 255"));
	resp_free(&r);
	buf_reset(&t);
	for (i = 0; i < 5; i++) {
		for (int k = 0; k < 250; k++)
			buf_addc(&t, 'b');
		buf_addc(&t, i < 4 ? '/' : 'x');
	}
	CHECK(put(t.ptr, NULL, "x", 1, &r) == 0);
	CHECK_INT(r.status, 400);
	CHECK(body_has(&r, "longer than 1024"));
	resp_free(&r);
	buf_release(&t);
	CHECK(!exists("a") && !exists("b.md") && !exists("etc"));
	CHECK_INT(tv_count_tmp(vault, "."), 0);
	/* DELETE checks paths the same way */
	CHECK(del("a/../index.md", NULL, &r) == 0);
	CHECK_INT(r.status, 400);
	resp_free(&r);
	CHECK(exists("index.md"));
	/* an NFD name is stored in NFC */
	CHECK(put("cafe%CC%81.md", NULL, "# Caf\xc3\xa9\n", 8, &r) == 0);
	CHECK_INT(r.status, 201);
	CHECK(body_has(&r, "caf\xc3\xa9.md"));
	resp_free(&r);
	CHECK(exists("caf\xc3\xa9.md"));
}

static void test_size_limit(void)
{
	struct resp r;
	char *big = xmalloc(MAX_UPLOAD + 1);
	struct conn c;

	memset(big, 'q', MAX_UPLOAD + 1);
	CHECK(put("big.bin", NULL, big, MAX_UPLOAD + 1, &r) == 0);
	CHECK_INT(r.status, 413);
	CHECK(body_has(&r, "larger"));
	resp_free(&r);
	CHECK(!exists("big.bin"));
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0); /* the spooled body went */
	/* exactly the limit is fine */
	CHECK(put("big.bin", NULL, big, MAX_UPLOAD, &r) == 0);
	CHECK_INT(r.status, 201);
	resp_free(&r);
	free(big);
	/* far over: refused from the Content-Length, before the body */
	CHECK(conn_open(&c, port) >= 0);
	if (c.fd >= 0) {
		const char *req = "PUT /api/v1/files/huge.bin HTTP/1.1\r\nHost: x\r\n" AUTH
				  "Content-Length: 100000000\r\n\r\nabc";
		CHECK(send_all(c.fd, req, strlen(req)) == 0);
		CHECK(read_resp(&c, &r, 0) == 0);
		CHECK_INT(r.status, 413);
		resp_free(&r);
	}
	conn_close(&c);
	CHECK(!exists("huge.bin"));
}

/*
 * A note over max_note_size (quire.yml) is refused with 413 and why: the
 * loader would leave it unread and unpublished. An attachment of the
 * same size is only under the upload limit; the limit follows quire.yml.
 */
static void test_note_size_limit(void)
{
	struct resp r;
	char big[3000], *huge;
	long long v;

	memset(big, 'q', sizeof(big));
	memcpy(big, "# Big\n\n", 7);
	CHECK(put("quire.yml", NULL, "max_note_size: 2K\n", 18, &r) == 0);
	v = body_u64(r.body.ptr, "version");
	resp_free(&r);
	CHECK_INT(wait_for(v), 200);
	CHECK(put("notes/big.md", NULL, big, sizeof(big), &r) == 0);
	CHECK_INT(r.status, 413);
	CHECK(body_has(&r, "3000 bytes, over max_note_size (2048"));
	CHECK(body_has(&r, "notes/big.md"));
	resp_free(&r);
	CHECK(!exists("notes/big.md"));
	/* spooled (over small_body_size), refused all the same, and the spool left empty */
	huge = xmalloc(SPOOLED);
	memset(huge, 'q', SPOOLED);
	CHECK(put("notes/huge.md", NULL, huge, SPOOLED, &r) == 0);
	CHECK_INT(r.status, 413);
	CHECK(body_has(&r, "3000001 bytes, over max_note_size (2048"));
	resp_free(&r);
	free(huge);
	CHECK(!exists("notes/huge.md"));
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);
	CHECK(put("notes/big.txt", NULL, big, sizeof(big), &r) == 0);
	CHECK_INT(r.status, 201);
	resp_free(&r);
	CHECK(put("notes/fits.md", NULL, big, 2048, &r) == 0);
	CHECK_INT(r.status, 201);
	resp_free(&r);
	/* back to the default (4 MiB): taken */
	CHECK(del("quire.yml", NULL, &r) == 0);
	v = body_u64(r.body.ptr, "version");
	resp_free(&r);
	CHECK_INT(wait_for(v), 200);
	CHECK(put("notes/big.md", NULL, big, sizeof(big), &r) == 0);
	CHECK_INT(r.status, 201);
	resp_free(&r);
	CHECK(del("notes/big.md", NULL, &r) == 0 && r.status == 200);
	resp_free(&r);
	CHECK(del("notes/big.txt", NULL, &r) == 0 && r.status == 200);
	resp_free(&r);
	CHECK(del("notes/fits.md", NULL, &r) == 0 && r.status == 200);
	resp_free(&r);
}

static void test_put(void)
{
	const char *text = "---\ntitle: Fresh\n---\nA brand new note with *sync* words.\n";
	const char *text2 = "---\ntitle: Fresh\n---\nReplaced text, second version.\n";
	char sha[SHA256_HEX_SIZE], hdr[128];
	struct buf b = BUF_INIT, s = BUF_INIT;
	struct resp r;
	long long v;
	size_t i;

	CHECK_INT(fetch_page(port, "/inbox/fresh", NULL), 404);
	CHECK(put("inbox/fresh.md", "If-None-Match: *\r\n", text, strlen(text), &r) == 0);
	CHECK_INT(r.status, 201);
	sha_of(text, strlen(text), sha);
	CHECK(body_str(r.body.ptr, "sha256", &s) == 0 && strcmp(s.ptr, sha) == 0);
	CHECK(body_str(r.body.ptr, "path", &s) == 0 && strcmp(s.ptr, "inbox/fresh.md") == 0);
	v = body_u64(r.body.ptr, "version");
	CHECK(v >= 2);
	resp_free(&r);
	CHECK(read_back("inbox/fresh.md", &b) == 0 && b.len == strlen(text) &&
	      memcmp(b.ptr, text, b.len) == 0);
	CHECK_INT(wait_for(v), 200);
	CHECK_INT(fetch_page(port, "/inbox/fresh", &b), 200);
	CHECK(strstr(b.ptr, "brand new note") != NULL);

	/* replace with the current hash: 200, the page follows */
	snprintf(hdr, sizeof(hdr), "If-Match: \"%s\"\r\n", sha);
	CHECK(put("inbox/fresh.md", hdr, text2, strlen(text2), &r) == 0);
	CHECK_INT(r.status, 200);
	sha_of(text2, strlen(text2), sha);
	CHECK(body_str(r.body.ptr, "sha256", &s) == 0 && strcmp(s.ptr, sha) == 0);
	v = body_u64(r.body.ptr, "version");
	resp_free(&r);
	CHECK(read_back("inbox/fresh.md", &b) == 0 && b.len == strlen(text2) &&
	      memcmp(b.ptr, text2, b.len) == 0);
	CHECK_INT(wait_for(v), 200);
	CHECK_INT(fetch_page(port, "/inbox/fresh", &b), 200);
	CHECK(strstr(b.ptr, "second version") != NULL);
	CHECK(strstr(b.ptr, "brand new note") == NULL);

	/* an existing note edited without preconditions */
	CHECK(put("notes/hello.md", NULL, "# Hello\n\nChanged over the API.\n", 30, &r) == 0);
	CHECK_INT(r.status, 200);
	v = body_u64(r.body.ptr, "version");
	resp_free(&r);
	CHECK_INT(wait_for(v), 200);
	CHECK_INT(fetch_page(port, "/notes/hello", &b), 200);
	CHECK(strstr(b.ptr, "Changed over the API.") != NULL);

	/* any bytes: a binary attachment in new nested folders */
	buf_reset(&s);
	for (i = 0; i < 200000; i++)
		buf_addc(&s, (int)((i * 7919) >> 3 & 0xff));
	CHECK(put("media/2024/deep/blob.bin", NULL, s.ptr, s.len, &r) == 0);
	CHECK_INT(r.status, 201);
	resp_free(&r);
	CHECK(read_back("media/2024/deep/blob.bin", &b) == 0 && b.len == s.len &&
	      memcmp(b.ptr, s.ptr, s.len) == 0);
	/* an empty file */
	CHECK(put("empty.txt", NULL, "", 0, &r) == 0);
	CHECK_INT(r.status, 201);
	resp_free(&r);
	CHECK(read_back("empty.txt", &b) == 0 && b.len == 0);
	CHECK_INT(tv_count_tmp(vault, "."), 0);
	/* quire.yml is read on a full load: writing it reloads */
	CHECK(put("quire.yml", NULL, "title: Synced Site Title\n", 25, &r) == 0);
	CHECK_INT(r.status, 201);
	v = body_u64(r.body.ptr, "version");
	resp_free(&r);
	CHECK_INT(wait_for(v), 200);
	CHECK_INT(fetch_page(port, "/", &b), 200);
	CHECK(strstr(b.ptr, "Synced Site Title") != NULL);
	/* a folder or a file in the way */
	CHECK(put("notes", NULL, "x", 1, &r) == 0);
	CHECK_INT(r.status, 409);
	resp_free(&r);
	CHECK(put("index.md/child.md", NULL, "x", 1, &r) == 0);
	CHECK_INT(r.status, 409);
	resp_free(&r);
	/* an empty folder is no obstacle: the file takes its place */
	{
		char *d = disk_path("emptied.md");
		CHECK(mkdir(d, 0755) == 0);
		CHECK(put("emptied.md", NULL, "# Was a folder\n", 16, &r) == 0);
		CHECK_INT(r.status, 201);
		v = body_u64(r.body.ptr, "version");
		resp_free(&r);
		CHECK(read_back("emptied.md", &b) == 0 && strcmp(b.ptr, "# Was a folder\n") == 0);
		CHECK_INT(wait_for(v), 200);
		CHECK_INT(fetch_page(port, "/emptied", &b), 200);
		free(d);
	}
	buf_release(&b);
	buf_release(&s);
}

static void test_preconditions(void)
{
	const char *orig = "# Guarded\n\nOriginal.\n";
	char sha[SHA256_HEX_SIZE], hdr[128];
	struct buf b = BUF_INIT, s = BUF_INIT;
	struct resp r;

	CHECK(put("guarded.md", "If-None-Match: *\r\n", orig, strlen(orig), &r) == 0);
	CHECK_INT(r.status, 201);
	resp_free(&r);
	sha_of(orig, strlen(orig), sha);
	/* If-None-Match: * on an existing file */
	CHECK(put("guarded.md", "If-None-Match: *\r\n", "other", 5, &r) == 0);
	CHECK_INT(r.status, 412);
	CHECK(body_str(r.body.ptr, "sha256", &s) == 0 && strcmp(s.ptr, sha) == 0);
	resp_free(&r);
	/* If-Match with a stale hash */
	snprintf(hdr, sizeof(hdr), "If-Match: \"%064d\"\r\n", 0);
	CHECK(put("guarded.md", hdr, "other", 5, &r) == 0);
	CHECK_INT(r.status, 412);
	CHECK(body_has(&r, "changed"));
	resp_free(&r);
	CHECK(read_back("guarded.md", &b) == 0 && strcmp(b.ptr, orig) == 0);
	/* If-Match on a missing file */
	snprintf(hdr, sizeof(hdr), "If-Match: \"%s\"\r\n", sha);
	CHECK(put("missing.md", hdr, "x", 1, &r) == 0);
	CHECK_INT(r.status, 412);
	CHECK(body_has(&r, "\"sha256\":null"));
	resp_free(&r);
	CHECK(!exists("missing.md"));
	/* uppercase hex is the same tag; malformed tags are 400 */
	for (char *p = hdr; *p; p++)
		if (*p >= 'a' && *p <= 'f')
			*p = (char)(*p - 'a' + 'A');
	memcpy(hdr, "If-Match", 8);
	CHECK(put("guarded.md", hdr, "v2", 2, &r) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);
	CHECK(put("guarded.md", "If-Match: abc\r\n", "v3", 2, &r) == 0);
	CHECK_INT(r.status, 400);
	resp_free(&r);
	CHECK(put("guarded.md", "If-None-Match: \"abc\"\r\n", "v3", 2, &r) == 0);
	CHECK_INT(r.status, 400);
	resp_free(&r);
	CHECK(read_back("guarded.md", &b) == 0 && strcmp(b.ptr, "v2") == 0);
	buf_release(&b);
	buf_release(&s);
}

struct racer {
	const char *hdr;
	char body[32];
	int status;
};

static void *race_put(void *arg)
{
	struct racer *x = arg;
	struct resp r;

	if (put("contended.md", x->hdr, x->body, strlen(x->body), &r) == 0)
		x->status = r.status;
	resp_free(&r);
	return NULL;
}

/* Writers with the same If-Match: exactly one wins, the others get 412. */
static void test_race(void)
{
	struct racer x[6];
	pthread_t t[6];
	char sha[SHA256_HEX_SIZE], hdr[128];
	struct buf b = BUF_INIT;
	struct resp r;
	int i, ok = 0, conflict = 0;

	CHECK(put("contended.md", NULL, "start", 5, &r) == 0);
	resp_free(&r);
	sha_of("start", 5, sha);
	snprintf(hdr, sizeof(hdr), "If-Match: \"%s\"\r\n", sha);
	for (i = 0; i < 6; i++) {
		x[i].hdr = hdr;
		snprintf(x[i].body, sizeof(x[i].body), "writer %d", i);
		x[i].status = 0;
		CHECK(pthread_create(&t[i], NULL, race_put, &x[i]) == 0);
	}
	for (i = 0; i < 6; i++) {
		CHECK(pthread_join(t[i], NULL) == 0);
		ok += x[i].status == 200;
		conflict += x[i].status == 412;
	}
	CHECK_INT(ok, 1);
	CHECK_INT(conflict, 5);
	CHECK(read_back("contended.md", &b) == 0 && strncmp(b.ptr, "writer ", 7) == 0);
	buf_release(&b);
}

static void test_delete(void)
{
	struct resp r;
	char hdr[128];
	long long v;

	CHECK(put("trash/old.md", NULL, "# Old\n\nTo be deleted.\n", 22, &r) == 0);
	v = body_u64(r.body.ptr, "version");
	resp_free(&r);
	CHECK_INT(wait_for(v), 200);
	CHECK_INT(fetch_page(port, "/trash/old", NULL), 200);
	snprintf(hdr, sizeof(hdr), "If-Match: \"%064d\"\r\n", 7);
	CHECK(del("trash/old.md", hdr, &r) == 0);
	CHECK_INT(r.status, 412);
	resp_free(&r);
	CHECK(exists("trash/old.md"));
	CHECK(del("trash/old.md", NULL, &r) == 0);
	CHECK_INT(r.status, 200);
	v = body_u64(r.body.ptr, "version");
	CHECK(v > 0);
	resp_free(&r);
	CHECK(!exists("trash/old.md"));
	CHECK_INT(wait_for(v), 200);
	CHECK_INT(fetch_page(port, "/trash/old", NULL), 404);
	CHECK(del("trash/old.md", NULL, &r) == 0);
	CHECK_INT(r.status, 404);
	resp_free(&r);
	CHECK(del("no/such/folder/x.md", NULL, &r) == 0);
	CHECK_INT(r.status, 404);
	resp_free(&r);
	CHECK(del("notes", NULL, &r) == 0);
	CHECK_INT(r.status, 409);
	resp_free(&r);
}

/*
 * GET of a file: its bytes, with the SHA-256 of exactly those as the ETag
 * (what `quire sync` downloads by); 404 for a file that is not there, a
 * folder, or a symlink; 401 without the token; 400 for a path the API
 * refuses.
 */
static void test_get(void)
{
	const char bin[] = { 'a', 0, 'b', '\n', (char)0xff };
	char sha[SHA256_HEX_SIZE], etag[SHA256_HEX_SIZE + 2];
	struct resp r;

	CHECK(put("got/bytes.bin", NULL, bin, sizeof(bin), &r) == 0);
	CHECK(r.status == 201 || r.status == 200);
	resp_free(&r);
	CHECK(get("/api/v1/files/got/bytes.bin", &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK_INT(r.body.len, sizeof(bin));
	CHECK(r.body.ptr && memcmp(r.body.ptr, bin, sizeof(bin)) == 0);
	hash_sha256_hex(bin, sizeof(bin), sha);
	snprintf(etag, sizeof(etag), "\"%s\"", sha);
	CHECK_STR(hdr(&r, "ETag"), etag);
	CHECK_STR(hdr(&r, "Content-Type"), "application/octet-stream");
	resp_free(&r);
	CHECK(get("/api/v1/files/got/none.md", &r) == 0);
	CHECK_INT(r.status, 404);
	CHECK(body_has(&r, "\"error\""));
	resp_free(&r);
	CHECK(get("/api/v1/files/got", &r) == 0);
	CHECK_INT(r.status, 404);
	resp_free(&r);
	{
		struct buf target = BUF_INIT, link = BUF_INIT;
		buf_addf(&target, "%s/got/bytes.bin", vault);
		buf_addf(&link, "%s/got/link.bin", vault);
		CHECK(symlink(target.ptr, link.ptr) == 0);
		buf_release(&target);
		buf_release(&link);
	}
	CHECK(get("/api/v1/files/got/link.bin", &r) == 0);
	CHECK_INT(r.status, 404);
	resp_free(&r);
	CHECK(get("/api/v1/files/got/%2e%2e/index.md", &r) == 0);
	CHECK_INT(r.status, 400);
	resp_free(&r);
	httpc_source = "127.0.0.4";
	CHECK(fetch_request(port, "GET", "/api/v1/files/got/bytes.bin", NULL, NULL, 0, &r) == 0);
	CHECK_INT(r.status, 401);
	CHECK(r.body.len < sizeof(bin) || memcmp(r.body.ptr, bin, sizeof(bin)) != 0);
	resp_free(&r);
	httpc_source = NULL;
	tv_unlink(vault, "got/link.bin");
	tv_unlink(vault, "got/bytes.bin");
}

static int move(const char *json, struct resp *r)
{
	return fetch_request(port, "POST", "/api/v1/move", AUTH, json, strlen(json), r);
}

static void test_move(void)
{
	struct buf b = BUF_INIT;
	struct resp r;
	long long v;

	CHECK(put("notes/movable.md", NULL, "# Movable\n\nI travel.\n", 21, &r) == 0);
	v = body_u64(r.body.ptr, "version");
	resp_free(&r);
	CHECK_INT(wait_for(v), 200);
	CHECK_INT(fetch_page(port, "/notes/movable", NULL), 200);
	CHECK(move("{\"from\":\"notes/movable.md\",\"to\":\"archive/2024/moved.md\"}", &r) == 0);
	CHECK_INT(r.status, 200);
	v = body_u64(r.body.ptr, "version");
	resp_free(&r);
	CHECK(!exists("notes/movable.md"));
	CHECK(read_back("archive/2024/moved.md", &b) == 0 && strcmp(b.ptr, "# Movable\n\nI travel.\n") == 0);
	CHECK_INT(wait_for(v), 200);
	CHECK_INT(fetch_page(port, "/archive/2024/moved", &b), 200);
	CHECK(strstr(b.ptr, "I travel.") != NULL);
	CHECK(fetch_page(port, "/notes/movable", NULL) != 200);
	/* refusals */
	CHECK(move("{\"from\":\"notes/movable.md\",\"to\":\"x.md\"}", &r) == 0);
	CHECK_INT(r.status, 404);
	resp_free(&r);
	CHECK(move("{\"from\":\"archive/2024/moved.md\",\"to\":\"index.md\"}", &r) == 0);
	CHECK_INT(r.status, 409);
	resp_free(&r);
	CHECK(exists("archive/2024/moved.md"));
	CHECK(move("{\"from\":\"archive/2024/moved.md\",\"to\":\"../escape.md\"}", &r) == 0);
	CHECK_INT(r.status, 400);
	CHECK(body_has(&r, "to: "));
	resp_free(&r);
	CHECK(move("{\"from\":\"archive/2024/moved.md\"}", &r) == 0);
	CHECK_INT(r.status, 400);
	resp_free(&r);
	CHECK(move("not json", &r) == 0);
	CHECK_INT(r.status, 400);
	resp_free(&r);
	CHECK(move("{\"from\":\"a.md\",\"to\":\"a.md\"}", &r) == 0);
	CHECK_INT(r.status, 400);
	resp_free(&r);
	/* escapes in JSON strings */
	CHECK(move("{\"to\":\"archive/caf\\u00e9 \\\"q\\\".md\",\"from\":\"archive/2024/moved.md\"}",
		   &r) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);
	CHECK(exists("archive/caf\xc3\xa9 \"q\".md"));
	CHECK(fetch_request(port, "GET", "/api/v1/move", AUTH, NULL, 0, &r) == 0);
	CHECK_INT(r.status, 405);
	resp_free(&r);
	buf_release(&b);
}

/*
 * A folder moves whole in one request (a folder renamed in an editor's
 * file tree): its notes are served at their new URLs, their old ones
 * redirect; a folder cannot move into itself or over something that
 * exists.
 */
static void test_move_folder(void)
{
	struct buf b = BUF_INIT;
	struct resp r;
	long long v;
	const char *one = "# One\n\nFirst on the shelf, see [[two]].\n", *two = "# Two\n\nUnder it.\n";

	CHECK(put("shelf/one.md", NULL, one, strlen(one), &r) == 0);
	resp_free(&r);
	CHECK(put("shelf/deep/two.md", NULL, two, strlen(two), &r) == 0);
	v = body_u64(r.body.ptr, "version");
	resp_free(&r);
	CHECK_INT(wait_for(v), 200);
	CHECK(move("{\"from\":\"shelf\",\"to\":\"cabinet/drawer\"}", &r) == 0);
	CHECK_INT(r.status, 200);
	v = body_u64(r.body.ptr, "version");
	resp_free(&r);
	CHECK(!exists("shelf/one.md") && exists("cabinet/drawer/one.md") &&
	      exists("cabinet/drawer/deep/two.md"));
	CHECK_INT(wait_for(v), 200);
	CHECK_INT(fetch_page(port, "/cabinet/drawer/one", &b), 200);
	CHECK(strstr(b.ptr, "First on the shelf") && strstr(b.ptr, "href=\"/cabinet/drawer/deep/two\""));
	CHECK_INT(fetch_page(port, "/cabinet/drawer/deep/two", NULL), 200);
	CHECK_INT(fetch_page(port, "/shelf/one", NULL), 301);
	/* refusals */
	CHECK(move("{\"from\":\"cabinet\",\"to\":\"cabinet/drawer/inner\"}", &r) == 0);
	CHECK_INT(r.status, 409);
	resp_free(&r);
	CHECK(put("elsewhere/x.md", NULL, "x\n", 2, &r) == 0);
	resp_free(&r);
	CHECK(move("{\"from\":\"cabinet\",\"to\":\"elsewhere\"}", &r) == 0);
	CHECK_INT(r.status, 409);
	resp_free(&r);
	CHECK(exists("cabinet/drawer/one.md") && exists("elsewhere/x.md"));
	buf_release(&b);
}

static void test_wait(void)
{
	struct resp r;
	char t[128];
	double t0;
	long long live;

	CHECK(get("/api/v1/wait?version=1", &r) == 0);
	CHECK_INT(r.status, 200);
	live = body_u64(r.body.ptr, "version");
	CHECK(live >= 1);
	resp_free(&r);
	snprintf(t, sizeof(t), "/api/v1/wait?version=%lld&timeout=300", live + 1000);
	t0 = now_s();
	CHECK(get(t, &r) == 0);
	CHECK_INT(r.status, 408);
	/*
	 * It waited, and for its own timeout rather than the default 30 s:
	 * a bound far from both, which no machine's speed decides.
	 */
	CHECK(now_s() - t0 >= 0.28 && now_s() - t0 < 15.0);
	resp_free(&r);
	snprintf(t, sizeof(t), "/api/v1/wait?version=%lld&timeout=0", live + 1000);
	CHECK(get(t, &r) == 0);
	CHECK_INT(r.status, 408);
	resp_free(&r);
	CHECK(get("/api/v1/wait", &r) == 0);
	CHECK_INT(r.status, 400);
	resp_free(&r);
	CHECK(get("/api/v1/wait?version=x", &r) == 0);
	CHECK_INT(r.status, 400);
	resp_free(&r);
}

struct waiting {
	long long version;
	int status;
	double done;
};

static void *wait_thread(void *arg)
{
	struct waiting *w = arg;

	w->status = wait_for(w->version);
	w->done = now_s();
	return NULL;
}

/* A long poll parked before the write returns as soon as the write is live. */
static void test_put_to_live(void)
{
	struct waiting w;
	struct resp r;
	pthread_t t;
	double t0, best = 1e9, sum = 0;
	int i, n = 10;

	for (i = 0; i < n; i++) {
		char body[64];
		long long v;
		snprintf(body, sizeof(body), "# Latency\n\nround %d\n", i);
		t0 = now_s();
		CHECK(put("latency.md", NULL, body, strlen(body), &r) == 0);
		v = body_u64(r.body.ptr, "version");
		resp_free(&r);
		w.version = v;
		CHECK(pthread_create(&t, NULL, wait_thread, &w) == 0);
		CHECK(pthread_join(t, NULL) == 0);
		CHECK_INT(w.status, 200);
		if (w.done - t0 < best)
			best = w.done - t0;
		sum += w.done - t0;
	}
	CHECK_INT(fetch_page(port, "/latency", NULL), 200);
	fprintf(stderr, "  PUT -> live: best %.1f ms, mean %.1f ms over %d writes\n", best * 1e3,
		sum / n * 1e3, n);

	/* parked first, woken by the publish */
	{
		long long live;
		CHECK(get("/api/v1/wait?version=1", &r) == 0);
		live = body_u64(r.body.ptr, "version");
		resp_free(&r);
		w.version = live + 1;
		w.status = 0;
		CHECK(pthread_create(&t, NULL, wait_thread, &w) == 0);
		usleep(100 * 1000);
		CHECK_INT(w.status, 0); /* still parked */
		t0 = now_s();
		CHECK(put("latency.md", NULL, "# Latency\n\nwoken\n", 17, &r) == 0);
		resp_free(&r);
		CHECK(pthread_join(t, NULL) == 0);
		CHECK_INT(w.status, 200);
		fprintf(stderr, "  parked wait answered %.1f ms after the PUT was sent\n",
			(w.done - t0) * 1e3);
	}
}

static void test_manifest(void)
{
	struct syncapi_stats st0, st1;
	struct vault_scan scan = VAULT_SCAN_INIT;
	struct diag_list diags;
	struct resp r;
	size_t n;

	/* a temporary file left by a crash: never listed, never served */
	tv_write(vault, "notes/.quire-tmp-999-1", "# Half a note");
	tv_write(vault, ".obsidian/workspace.json", "{}");
	usleep(60 * 1000); /* older than the racy window */
	CHECK(get("/api/v1/manifest", &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK_STR(hdr(&r, "Content-Type"), "application/json");
	CHECK(body_u64(r.body.ptr, "version") == (long long)loader_version(srv.loader));
	n = tv_check_manifest(vault, r.body.ptr, r.body.len, "notes/.quire-tmp-999-1");
	CHECK(!body_has(&r, "quire-tmp") && !body_has(&r, ".obsidian"));
	resp_free(&r);
	diag_list_init(&diags);
	CHECK(vault_scan(vault, NULL, &scan, &diags) == 0);
	CHECK_INT(n, scan.n);
	vault_scan_release(&scan);
	diag_list_release(&diags);
	CHECK_INT(fetch_page(port, "/notes/.quire-tmp-999-1", NULL), 404);
	CHECK(fetch_page(port, "/notes/-quire-tmp-999-1", NULL) == 404);

	/* one edit: one file hashed */
	syncapi_get_stats(srv.sync, &st0);
	tv_write(vault, "notes/hello.md", "# Hello\n\nEdited on disk.\n");
	usleep(60 * 1000);
	CHECK(get("/api/v1/manifest", &r) == 0);
	CHECK_INT(r.status, 200);
	tv_check_manifest(vault, r.body.ptr, r.body.len, NULL);
	resp_free(&r);
	syncapi_get_stats(srv.sync, &st1);
	CHECK_INT(st1.hashed - st0.hashed, 1);
	CHECK(get("/api/v1/manifest", &r) == 0);
	resp_free(&r);
	syncapi_get_stats(srv.sync, &st0);
	CHECK_INT(st0.hashed - st1.hashed, 0);
	/* same size and mtime, different bytes: ctime tells */
	{
		char *p = disk_path("notes/hello.md");
		struct stat before, after;
		struct timespec times[2];
		CHECK(stat(p, &before) == 0);
		tv_write(vault, "notes/hello.md", "# Hello\n\nEdited on DISK.\n");
		times[0] = before.st_atim;
		times[1] = before.st_mtim;
		CHECK(utimensat(AT_FDCWD, p, times, 0) == 0);
		CHECK(stat(p, &after) == 0);
		CHECK(after.st_size == before.st_size &&
		      after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
		free(p);
		CHECK(get("/api/v1/manifest", &r) == 0);
		tv_check_manifest(vault, r.body.ptr, r.body.len, NULL);
		resp_free(&r);
	}
	{
		char *p = disk_path("notes/.quire-tmp-999-1");
		CHECK(unlink(p) == 0);
		free(p);
	}
}

/* Restarting the API: the hash cache comes back, leftovers (in the vault, in the spool) go. */
static void test_restart(void)
{
	struct syncapi_stats st;
	struct resp r;

	/* settle: files hashed within the racy window are hashed once more */
	usleep(60 * 1000);
	CHECK(get("/api/v1/manifest", &r) == 0);
	resp_free(&r);
	stop_server();
	tv_write(vault, "media/.quire-tmp-123-9", "partial");
	tv_write(vault, ".quire/spool/upload-123-9", "a body spooled before a crash");
	start_server();
	CHECK(!exists("media/.quire-tmp-123-9"));
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);
	CHECK(get("/api/v1/manifest", &r) == 0);
	CHECK_INT(r.status, 200);
	tv_check_manifest(vault, r.body.ptr, r.body.len, NULL);
	resp_free(&r);
	syncapi_get_stats(srv.sync, &st);
	CHECK_INT(st.hashed, 0);
}

int main(void)
{
	double t0 = now_s();

	log_set_level(LOG_WARN);
	vault = tv_new();
	tv_write(vault, "index.md", "# Home\n\nWelcome. See [[hello]].\n");
	tv_write(vault, "notes/hello.md", "# Hello\n\nThe first note.\n");
	tv_write(vault, "notes/second.md", "# Second\n\nLinks to [[hello]].\n");
	tv_write(vault, "attachments/pixel.png", "\x89PNG\r\n\x1a\n fake");
	tv_write(vault, ".obsidian/app.json", "{}");
	usleep(60 * 1000);
	start_server();

	RUN(test_auth);
	RUN(test_rate_limit);
	RUN(test_bad_tokens);
	RUN(test_unauthenticated_bodies);
	RUN(test_disk_full);
	RUN(test_bad_paths);
	RUN(test_size_limit);
	RUN(test_note_size_limit);
	RUN(test_put);
	RUN(test_spares);
	RUN(test_spooled);
	RUN(test_spooled_elsewhere);
	RUN(test_preconditions);
	RUN(test_race);
	RUN(test_delete);
	RUN(test_get);
	RUN(test_move);
	RUN(test_move_folder);
	RUN(test_wait);
	RUN(test_put_to_live);
	RUN(test_manifest);
	RUN(test_restart);

	stop_server();
	tv_remove(vault);
	fprintf(stderr, "test-syncapi: %.1f s\n", now_s() - t0);
	return test_done();
}
