/*
 * test-dav.c: WebDAV (/dav/) against the real server, real files and real
 * sockets.
 *
 * A small vault is written to a temporary folder; the loader, the front,
 * the sync API and WebDAV start in-process as `quire serve` starts them
 * (lib/server.h); the tests' HTTP client sends each method and checks
 * the status, the bytes on disk and the pages the site serves after.
 * litmus (test-litmus.py) covers the protocol broadly; this file covers
 * what is quire's own: credentials on every method, durability and the
 * loader, dot folders, the data folder, dead properties across a restart,
 * streaming, and the server without a token.
 */
#include "lib/httpc.h"
#include "lib/server.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "site/loader.h"
#include "sync/syncapi.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOKEN "dav-token-0123456789abc"
/* "editor:" TOKEN and "editor:wrong-token-0123456789ab" in base64 */
#define BASIC "Authorization: Basic ZWRpdG9yOmRhdi10b2tlbi0wMTIzNDU2Nzg5YWJj\r\n"
#define WRONG "Authorization: Basic ZWRpdG9yOndyb25nLXRva2VuLTAxMjM0NTY3ODlhYg==\r\n"
#define BEARER "Authorization: Bearer " TOKEN "\r\n"
#define SECRET "secret words of a private note"
#define MAX_UPLOAD (4 * 1024 * 1024)
#define SPOOLED 3000001 /* over the HTTP server's small_body_size (64 KiB): spooled; no whole number of hashing pieces */

static char *vault;
static struct site_server srv;
static struct syncapi_options so;
static int port;

/* ---- the server ---- */

static void start_server(void)
{
	struct site_server_options o = {.threads = 2, .max_body_size = MAX_UPLOAD, .sync = &so};

	memset(&so, 0, sizeof(so));
	so.vault = vault;
	so.token = TOKEN;
	so.max_upload = MAX_UPLOAD;
	so.threads = 3;
	so.auth_failures = 100000; /* the unauthenticated tests send many */
	site_server_start(&srv, vault, &o);
	port = srv.port;
}

static void stop_server(void)
{
	CHECK_INT(site_server_stop(&srv), 0);
}

/* ---- helpers ---- */

/* One request to /dav/<path> with the right credentials and extra headers. */
static int dav(const char *method, const char *path, const char *extra, const char *body,
	       struct resp *r)
{
	struct buf h = BUF_INIT, t = BUF_INIT;
	int rc;

	buf_addf(&h, BASIC "%s", extra ? extra : "");
	buf_addf(&t, "/dav/%s", path);
	rc = fetch_request(port, method, t.ptr, h.ptr, body, body ? strlen(body) : 0, r);
	buf_release(&h);
	buf_release(&t);
	return rc;
}

/* The status of one request (its response freed). */
static int status_of(const char *method, const char *path, const char *extra, const char *body)
{
	struct resp r;
	int st = dav(method, path, extra, body, &r) == 0 ? r.status : -1;

	resp_free(&r);
	return st;
}

static void sha_tag(const char *text, char out[SHA256_HEX_SIZE + 2])
{
	char sha[SHA256_HEX_SIZE];

	hash_sha256_hex(text, strlen(text), sha);
	snprintf(out, SHA256_HEX_SIZE + 2, "\"%s\"", sha);
}

/* Every name, size and mtime under dir (a fingerprint of the vault) into out, sorted walk. */
static void fingerprint(const char *dir, const char *rel, struct buf *out)
{
	struct dirent **names = NULL;
	struct buf p = BUF_INIT;
	int i, n;

	buf_addf(&p, "%s/%s", dir, rel);
	n = scandir(p.ptr, &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		struct stat st;
		const char *name = names[i]->d_name;
		if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
			buf_reset(&p);
			buf_addf(&p, "%s/%s%s", dir, rel, name);
			if (lstat(p.ptr, &st) == 0) {
				buf_addf(out, "%s%s %lld %lld.%09ld\n", rel, name,
					 (long long)st.st_size, (long long)st.st_mtim.tv_sec,
					 st.st_mtim.tv_nsec);
				if (S_ISDIR(st.st_mode)) {
					struct buf sub = BUF_INIT;
					buf_addf(&sub, "%s%s/", rel, name);
					fingerprint(dir, sub.ptr, out);
					buf_release(&sub);
				}
			}
		}
		free(names[i]);
	}
	free(names);
	buf_release(&p);
}

/*
 * Waits (10 s at most) for the site's page at url to answer want (and,
 * with text, to hold it); the last status.
 */
static int page_shows(const char *url, int want, const char *text, struct buf *body)
{
	struct buf b = BUF_INIT;
	int st = -1, i;

	for (i = 0; i < 1200; i++) { /* a minute: only a hang fails */
		st = fetch_page(port, url, &b);
		if (st == want && (!text || (b.ptr && strstr(b.ptr, text))))
			break;
		usleep(50 * 1000);
	}
	if (body) {
		buf_reset(body);
		buf_add(body, b.ptr ? b.ptr : "", b.len);
	}
	buf_release(&b);
	return st;
}

/* ---- tests ---- */

static void test_options(void)
{
	struct resp r;

	CHECK(dav("OPTIONS", "", NULL, NULL, &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(hdr(&r, "DAV") && strstr(hdr(&r, "DAV"), "2"));
	CHECK(hdr(&r, "Allow") && strstr(hdr(&r, "Allow"), "PROPFIND") &&
	      strstr(hdr(&r, "Allow"), "LOCK"));
	resp_free(&r);
	/* Bearer works as well as Basic */
	CHECK(fetch_request(port, "OPTIONS", "/dav/", BEARER, NULL, 0, &r) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);
}

/*
 * Every method without credentials and with a wrong password: 401 with a
 * Basic challenge, nothing of the vault in the body, nothing on disk changed.
 */
static void test_unauthenticated(void)
{
	static const struct {
		const char *method, *path, *extra, *body;
	} reqs[] = {
	    {"OPTIONS", "", NULL, NULL},
	    {"GET", "private.md", NULL, NULL},
	    {"HEAD", "private.md", NULL, NULL},
	    {"PUT", "private.md", NULL, "overwritten"},
	    {"PUT", "new.md", NULL, "created"},
	    {"DELETE", "private.md", NULL, NULL},
	    {"MKCOL", "newdir", NULL, NULL},
	    {"COPY", "private.md", "Destination: /dav/copy.md\r\n", NULL},
	    {"MOVE", "private.md", "Destination: /dav/moved.md\r\n", NULL},
	    {"PROPFIND", "", "Depth: 1\r\n", NULL},
	    {"PROPPATCH", "private.md", NULL,
	     "<?xml version=\"1.0\"?><D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop>"
	     "<x xmlns=\"urn:t\">v</x></D:prop></D:set></D:propertyupdate>"},
	    {"LOCK", "private.md", NULL,
	     "<?xml version=\"1.0\"?><D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/>"
	     "</D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>"},
	    {"UNLOCK", "private.md", "Lock-Token: <opaquelocktoken:x>\r\n", NULL},
	};
	struct buf before = BUF_INIT, after = BUF_INIT, h = BUF_INIT, t = BUF_INIT;
	size_t i;
	int w;

	struct syncapi_stats st0, st1;
	int sent = 0;

	tv_write(vault, "private.md", "# Private\n\n" SECRET "\n");
	fingerprint(vault, "", &before);
	syncapi_get_stats(srv.sync, &st0);
	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		for (w = 0; w < 2; w++) {
			struct resp r;
			buf_reset(&h);
			buf_reset(&t);
			buf_addf(&h, "%s%s", w ? WRONG : "", reqs[i].extra ? reqs[i].extra : "");
			buf_addf(&t, "/dav/%s", reqs[i].path);
			CHECK(fetch_request(port, reqs[i].method, t.ptr, h.ptr, reqs[i].body,
					    reqs[i].body ? strlen(reqs[i].body) : 0, &r) == 0);
			if (r.status != 401)
				fprintf(stderr, "  %s %s (%s): %d\n", reqs[i].method, t.ptr,
					w ? "wrong password" : "no credentials", r.status);
			CHECK_INT(r.status, 401);
			CHECK(hdr(&r, "WWW-Authenticate") &&
			      strcmp(hdr(&r, "WWW-Authenticate"), "Basic realm=\"quire\"") == 0);
			CHECK(!r.body.ptr || !strstr(r.body.ptr, SECRET));
			CHECK(!hdr(&r, "ETag") && !hdr(&r, "DAV"));
			resp_free(&r);
			sent++;
		}
	}
	/* each counted by the sync API's per-address failure limiter */
	syncapi_get_stats(srv.sync, &st1);
	CHECK_INT((int)(st1.auth_failures - st0.auth_failures), sent);
	usleep(100 * 1000); /* a write let through would have landed by now */
	fingerprint(vault, "", &after);
	CHECK(before.len == after.len && memcmp(before.ptr, after.ptr, before.len) == 0);
	buf_release(&before);
	buf_release(&after);
	buf_release(&h);
	buf_release(&t);
}

static void test_put_get(void)
{
	const char *text = "# Dav note\n\nWritten over WebDAV.\n";
	const char *text2 = "# Dav note\n\nWritten again.\n";
	char tag[SHA256_HEX_SIZE + 2];
	struct buf b = BUF_INIT;
	struct resp r;

	CHECK(dav("PUT", "notes/dav-note.md", NULL, text, &r) == 0);
	CHECK_INT(r.status, 201);
	sha_tag(text, tag);
	CHECK(hdr(&r, "ETag") && strcmp(hdr(&r, "ETag"), tag) == 0);
	resp_free(&r);
	tv_read(vault, "notes/dav-note.md", &b);
	CHECK(b.len == strlen(text) && memcmp(b.ptr, text, b.len) == 0);

	CHECK(dav("GET", "notes/dav-note.md", NULL, NULL, &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(r.body.len == strlen(text) && memcmp(r.body.ptr, text, r.body.len) == 0);
	CHECK(hdr(&r, "ETag") && strcmp(hdr(&r, "ETag"), tag) == 0);
	resp_free(&r);

	CHECK(dav("PUT", "notes/dav-note.md", NULL, text2, &r) == 0);
	CHECK_INT(r.status, 204);
	resp_free(&r);

	/* HEAD: the headers, no body */
	CHECK(fetch_request(port, "HEAD", "/dav/notes/dav-note.md", BASIC, NULL, 0, &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(r.body.len == 0 && hdr(&r, "ETag"));
	resp_free(&r);

	/* render on write: the page follows */
	CHECK_INT(page_shows("/notes/dav-note", 200, "Written again", &b), 200);
	CHECK(b.ptr && strstr(b.ptr, "Written again") != NULL);
	buf_release(&b);
}

static void test_preconditions(void)
{
	const char *text = "# Pre\n\nfirst\n";
	char tag[SHA256_HEX_SIZE + 2], hdrs[160];
	struct buf b = BUF_INIT;
	struct resp r;

	CHECK_INT(status_of("PUT", "pre.md", NULL, text), 201);
	sha_tag(text, tag);
	/* a stale client: 412, the file unchanged */
	CHECK_INT(
	    status_of("PUT", "pre.md",
		      "If-Match: "
		      "\"0000000000000000000000000000000000000000000000000000000000000000\"\r\n",
		      "# Pre\n\nstale\n"),
	    412);
	tv_read(vault, "pre.md", &b);
	CHECK(b.len == strlen(text) && memcmp(b.ptr, text, b.len) == 0);
	snprintf(hdrs, sizeof(hdrs), "If-Match: %s\r\n", tag);
	CHECK_INT(status_of("PUT", "pre.md", hdrs, "# Pre\n\nsecond\n"), 204);
	CHECK_INT(status_of("PUT", "pre.md", "If-None-Match: *\r\n", "# Pre\n\nthird\n"), 412);
	CHECK_INT(status_of("PUT", "pre-new.md", "If-None-Match: *\r\n", "# New\n"), 201);
	/* a GET revalidating with the current tag: 304 */
	sha_tag("# Pre\n\nsecond\n", tag);
	snprintf(hdrs, sizeof(hdrs), "If-None-Match: %s\r\n", tag);
	CHECK(dav("GET", "pre.md", hdrs, NULL, &r) == 0);
	CHECK_INT(r.status, 304);
	resp_free(&r);
	buf_release(&b);
}

/* A PUT of n bytes to /dav/<path>; the status, with the ETag in etag ("" when none). */
static int put_bytes(const char *path, const char *extra, const char *data, size_t n,
		     char etag[SHA256_HEX_SIZE + 2])
{
	struct buf h = BUF_INIT, t = BUF_INIT;
	struct resp r;
	int status;

	buf_addf(&h, BASIC "%s", extra ? extra : "");
	buf_addf(&t, "/dav/%s", path);
	status = fetch_request(port, "PUT", t.ptr, h.ptr, data, n, &r) == 0 ? r.status : -1;
	snprintf(etag, SHA256_HEX_SIZE + 2, "%s", hdr(&r, "ETag") ? hdr(&r, "ETag") : "");
	resp_free(&r);
	buf_release(&h);
	buf_release(&t);
	return status;
}

/* Whether the vault file rel holds exactly data (n bytes). */
static int holds(const char *rel, const char *data, size_t n)
{
	struct buf b = BUF_INIT;
	int same;

	tv_read(vault, rel, &b);
	same = b.len == n && memcmp(b.ptr, data, n) == 0;
	buf_release(&b);
	return same;
}

/*
 * A PUT larger than the HTTP server's small_body_size comes as the file
 * the server spooled it to and is renamed into place: byte for byte, its
 * hash as the ETag, a stale If-Match refused with the file untouched, and
 * nothing left in the spool. An XML body that large (a PROPFIND) is read
 * from the spool as before.
 */
static void test_spooled(void)
{
	char *data = xmalloc(SPOOLED), *other = xmalloc(SPOOLED);
	char etag[SHA256_HEX_SIZE + 2], want[SHA256_HEX_SIZE], tag[SHA256_HEX_SIZE + 2];
	struct syncapi_stats st0, st1;
	struct buf xml = BUF_INIT;
	struct resp r;

	tv_random_bytes(data, SPOOLED, 11);
	tv_random_bytes(other, SPOOLED, 12);
	hash_sha256_hex(data, SPOOLED, want);
	snprintf(tag, sizeof(tag), "\"%s\"", want);
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);
	syncapi_get_stats(srv.sync, &st0);
	CHECK_INT(put_bytes("notes/blob.bin", NULL, data, SPOOLED, etag), 201);
	CHECK_STR(etag, tag);
	CHECK(holds("notes/blob.bin", data, SPOOLED));
	syncapi_get_stats(srv.sync, &st1);
	CHECK_INT(st1.uploads_renamed - st0.uploads_renamed, 1);
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);
	CHECK_INT(tv_count_tmp(vault, "."), 0);

	/* a stale If-Match: 412, the file untouched, the spool empty */
	CHECK_INT(put_bytes("notes/blob.bin",
			    "If-Match: \"0000000000000000000000000000000000000000000000000000000000000000\"\r\n",
			    other, SPOOLED, etag),
		  412);
	CHECK(holds("notes/blob.bin", data, SPOOLED));
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);
	/* the right tag: replaced */
	{
		char hdrs[SHA256_HEX_SIZE + 32];
		snprintf(hdrs, sizeof(hdrs), "If-Match: %s\r\n", tag);
		CHECK_INT(put_bytes("notes/blob.bin", hdrs, other, SPOOLED, etag), 204);
	}
	hash_sha256_hex(other, SPOOLED, want);
	snprintf(tag, sizeof(tag), "\"%s\"", want);
	CHECK_STR(etag, tag);
	CHECK(holds("notes/blob.bin", other, SPOOLED));
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);

	/* a PROPFIND body over small_body_size (spooled) is read as XML all the same */
	buf_adds(&xml, "<?xml version=\"1.0\"?>\n<D:propfind xmlns:D=\"DAV:\"><D:allprop/>");
	while (xml.len < 100 * 1024)
		buf_adds(&xml, "<!-- padding padding padding padding padding padding -->\n");
	buf_adds(&xml, "</D:propfind>\n");
	CHECK(dav("PROPFIND", "notes/blob.bin", "Depth: 0\r\n", xml.ptr, &r) == 0);
	CHECK_INT(r.status, 207);
	CHECK(r.body.ptr && strstr(r.body.ptr, "getetag"));
	resp_free(&r);
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);
	CHECK_INT(status_of("DELETE", "notes/blob.bin", NULL, NULL), 204);
	buf_release(&xml);
	free(data);
	free(other);
}

static void test_errors(void)
{
	CHECK_INT(status_of("PUT", "no/such/parent.md", NULL, "x"), 409);
	CHECK(!tv_exists(vault, "no"));
	CHECK_INT(status_of("MKCOL", "withbody", NULL, "<x/>"), 415);
	CHECK(!tv_exists(vault, "withbody"));
	CHECK_INT(status_of("MKCOL", "coll", NULL, NULL), 201);
	CHECK_INT(status_of("MKCOL", "coll", NULL, NULL), 405);
	CHECK_INT(status_of("MKCOL", "pre.md", NULL, NULL), 405);
	CHECK_INT(status_of("MKCOL", "no/such", NULL, NULL), 409);
	CHECK_INT(status_of("DELETE", "nothing.md", NULL, NULL), 404);
	CHECK_INT(status_of("GET", "nothing.md", NULL, NULL), 404);
	CHECK_INT(status_of("PROPFIND", "", "Depth: 0\r\n", "<not-xml"), 400);
	CHECK_INT(
	    status_of("PROPFIND", "", "Depth: 0\r\n", "<!DOCTYPE a [<!ENTITY e \"x\">]><a>&e;</a>"),
	    400);
	CHECK_INT(status_of("PUT", "a/../b.md", NULL, "x"), 400);
}

static void test_copy_move(void)
{
	struct resp r;

	CHECK_INT(status_of("MKCOL", "src", NULL, NULL), 201);
	CHECK_INT(status_of("PUT", "src/one.md", NULL, "# One\n"), 201);
	CHECK_INT(status_of("MKCOL", "src/sub", NULL, NULL), 201);
	CHECK_INT(status_of("PUT", "src/sub/two.md", NULL, "# Two\n"), 201);
	CHECK_INT(status_of("COPY", "src", "Destination: /dav/dst\r\n", NULL), 201);
	CHECK(tv_exists(vault, "dst/one.md") && tv_exists(vault, "dst/sub/two.md"));
	CHECK(tv_exists(vault, "src/one.md"));
	/* Overwrite: F onto an existing one */
	CHECK_INT(status_of("COPY", "src/one.md",
			    "Destination: /dav/dst/one.md\r\nOverwrite: F\r\n", NULL),
		  412);
	/*
	 * an absolute URL as the Destination: on this server (the request's
	 * Host, "test", whatever the scheme: a TLS proxy may be in front), or
	 * on another one, 502 (RFC 4918 9.8.5), nothing moved or copied
	 */
	{
		static const char *const other[] = {
			"http://other.example/dav/x", "http://test:8080/dav/x",
			"https://test:80/dav/x", "ftp://test/dav/x", "http://user@test/dav/x",
			"http://test:99999/dav/x", "http://[::1]/dav/x",
		};
		char h[160];
		size_t i;
		for (i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
			snprintf(h, sizeof(h), "Destination: %s\r\n", other[i]);
			CHECK_INT(status_of("MOVE", "dst", h, NULL), 502);
			CHECK_INT(status_of("COPY", "dst", h, NULL), 502);
		}
		CHECK(tv_exists(vault, "dst") && !tv_exists(vault, "x"));
		CHECK_INT(status_of("COPY", "dst/one.md", "Destination: https://TEST./dav/c.md\r\n",
				    NULL), 201);
		CHECK(tv_exists(vault, "c.md"));
		CHECK_INT(status_of("MOVE", "dst", "Destination: http://test:80/dav/moved\r\n", NULL),
			  201);
	}
	CHECK(!tv_exists(vault, "dst") && tv_exists(vault, "moved/sub/two.md"));
	/* outside /dav/: refused, nothing moved */
	CHECK_INT(status_of("MOVE", "moved", "Destination: /elsewhere\r\n", NULL), 502);
	CHECK_INT(status_of("MOVE", "moved", "Destination: /dav/.quire/x\r\n", NULL), 403);
	CHECK(tv_exists(vault, "moved"));
	CHECK_INT(status_of("MOVE", "moved", "Destination: /dav/moved/inside\r\n", NULL), 409);
	/* a move onto an existing resource replaces it */
	CHECK_INT(status_of("MOVE", "moved/one.md", "Destination: /dav/src/one.md\r\n", NULL), 204);
	CHECK(!tv_exists(vault, "moved/one.md"));
	CHECK(dav("DELETE", "moved", NULL, NULL, &r) == 0);
	CHECK_INT(r.status, 204);
	resp_free(&r);
	CHECK(!tv_exists(vault, "moved"));
}

static void test_propfind(void)
{
	char tag[SHA256_HEX_SIZE + 2];
	struct resp r;

	sha_tag("# One\n", tag);
	CHECK(dav("PROPFIND", "src/one.md", "Depth: 0\r\n", NULL, &r) == 0);
	CHECK_INT(r.status, 207);
	CHECK(r.body.ptr && strstr(r.body.ptr, tag) &&
	      strstr(r.body.ptr, "<D:getcontentlength>6<"));
	resp_free(&r);
	CHECK(dav("PROPFIND", "", "Depth: 1\r\n",
		  "<?xml version=\"1.0\"?><D:propfind xmlns:D=\"DAV:\"><D:prop><D:resourcetype/>"
		  "<x:nothing xmlns:x=\"urn:x\"/></D:prop></D:propfind>",
		  &r) == 0);
	CHECK_INT(r.status, 207);
	CHECK(r.body.ptr && strstr(r.body.ptr, "<D:href>/dav/src/</D:href>"));
	CHECK(r.body.ptr && strstr(r.body.ptr, "404 Not Found") && strstr(r.body.ptr, "urn:x"));
	/* Depth 1: members, not their members */
	CHECK(r.body.ptr && !strstr(r.body.ptr, "/dav/src/one.md"));
	CHECK(r.body.ptr && !strstr(r.body.ptr, ".quire"));
	resp_free(&r);
}

/* A folder moved and deleted over WebDAV: the site follows (the loader is told of folders). */
static void test_folder_pages(void)
{
	CHECK_INT(status_of("MKCOL", "journal", NULL, NULL), 201);
	CHECK_INT(status_of("PUT", "journal/day-one.md", NULL, "# Day one\n\nFolder note.\n"), 201);
	CHECK_INT(page_shows("/journal/day-one", 200, "Folder note", NULL), 200);
	CHECK_INT(status_of("MOVE", "journal", "Destination: /dav/diary\r\n", NULL), 201);
	CHECK_INT(page_shows("/diary/day-one", 200, "Folder note", NULL), 200);
	CHECK_INT(status_of("DELETE", "diary", NULL, NULL), 204);
	CHECK_INT(page_shows("/diary/day-one", 404, NULL, NULL), 404);
}

/* Editors' dot folders: stored and listed back, never published; quire's own: unreachable. */
static void test_dot_folders(void)
{
	struct buf b = BUF_INIT;
	struct resp r;

	CHECK_INT(status_of("MKCOL", ".obsidian", NULL, NULL), 201);
	CHECK_INT(status_of("PUT", ".obsidian/workspace.json", NULL, "{\"a\":1}"), 201);
	CHECK_INT(status_of("MKCOL", ".trash", NULL, NULL), 201);
	CHECK_INT(status_of("PUT", ".trash/gone.md", NULL, "# Gone\n\n" SECRET "\n"), 201);
	CHECK_INT(status_of("PUT", ".gitignore", NULL, "*.tmp\n"), 201);
	tv_read(vault, ".obsidian/workspace.json", &b);
	CHECK(b.len == 7);
	CHECK(dav("PROPFIND", "", "Depth: 1\r\n", NULL, &r) == 0);
	CHECK(r.body.ptr && strstr(r.body.ptr, "/dav/.obsidian/") &&
	      strstr(r.body.ptr, "/dav/.gitignore"));
	resp_free(&r);
	/* a published note written after: once it is live, the dot files were never read */
	CHECK_INT(status_of("PUT", "after-dots.md", NULL, "# After\n"), 201);
	CHECK_INT(page_shows("/after-dots", 200, NULL, NULL), 200);
	CHECK_INT(fetch_page(port, "/.trash/gone", NULL), 404);
	CHECK_INT(fetch_page(port, "/trash/gone", NULL), 404);
	CHECK_INT(fetch_page(port, "/-trash/gone", NULL), 404);

	/* quire's data folder: not reachable, not listed, not writable */
	CHECK_INT(status_of("GET", ".quire/hashes", NULL, NULL), 404);
	CHECK_INT(status_of("PROPFIND", ".quire", "Depth: 1\r\n", NULL), 404);
	CHECK_INT(status_of("PUT", ".quire/planted", NULL, "x"), 404);
	CHECK_INT(status_of("DELETE", ".quire", NULL, NULL), 404);
	CHECK_INT(status_of("GET", "notes/.quire-tmp-1-1", NULL, NULL), 404);
	CHECK(!tv_exists(vault, ".quire/planted"));
	CHECK(dav("PROPFIND", "", "Depth: infinity\r\n", NULL, &r) == 0);
	CHECK(r.body.ptr && !strstr(r.body.ptr, "/dav/.quire"));
	resp_free(&r);
	buf_release(&b);
}

static const char *PATCH =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
    "<D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:example\"><D:set><D:prop>"
    "<Z:color>blue &amp; <Z:b>bold</Z:b></Z:color></D:prop></D:set></D:propertyupdate>";

static void test_props_restart(void)
{
	struct resp r;

	CHECK_INT(status_of("PUT", "props.md", NULL, "# Props\n"), 201);
	CHECK(dav("PROPPATCH", "props.md", NULL, PATCH, &r) == 0);
	CHECK_INT(r.status, 207);
	CHECK(r.body.ptr && strstr(r.body.ptr, "200 OK"));
	resp_free(&r);
	/* a live property is protected: nothing applied */
	CHECK(dav("PROPPATCH", "props.md", NULL,
		  "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><D:getetag>x</D:getetag>"
		  "</D:prop></D:set></D:propertyupdate>",
		  &r) == 0);
	CHECK_INT(r.status, 207);
	CHECK(r.body.ptr && strstr(r.body.ptr, "403 Forbidden"));
	resp_free(&r);

	/* what a crash mid-write left in an editor's dot folder goes at the next start */
	tv_write(vault, ".obsidian/.quire-tmp-99-1", "torn");
	stop_server();
	start_server();
	CHECK(!tv_exists(vault, ".obsidian/.quire-tmp-99-1"));

	CHECK(dav("PROPFIND", "props.md", "Depth: 0\r\n",
		  "<D:propfind xmlns:D=\"DAV:\"><D:prop><color "
		  "xmlns=\"urn:example\"/></D:prop></D:propfind>",
		  &r) == 0);
	CHECK_INT(r.status, 207);
	CHECK(r.body.ptr && strstr(r.body.ptr, "blue &amp; ") && strstr(r.body.ptr, ">bold<"));
	resp_free(&r);
	/* moved with MOVE, dropped with DELETE */
	CHECK_INT(status_of("MOVE", "props.md", "Destination: /dav/props2.md\r\n", NULL), 201);
	CHECK(dav("PROPFIND", "props2.md", "Depth: 0\r\n", NULL, &r) == 0);
	CHECK(r.body.ptr && strstr(r.body.ptr, "blue"));
	resp_free(&r);
	CHECK_INT(status_of("DELETE", "props2.md", NULL, NULL), 204);
	CHECK_INT(status_of("PUT", "props2.md", NULL, "# Again\n"), 201);
	CHECK(dav("PROPFIND", "props2.md", "Depth: 0\r\n", NULL, &r) == 0);
	CHECK(r.body.ptr && !strstr(r.body.ptr, "blue"));
	resp_free(&r);
}

/* The lock token of a LOCK answer into out ("opaquelocktoken:..."). */
static int lock_token(const struct resp *r, struct buf *out)
{
	const char *v = hdr(r, "Lock-Token");

	buf_reset(out);
	if (!v || v[0] != '<' || !strchr(v, '>'))
		return -1;
	buf_add(out, v + 1, (size_t)(strchr(v, '>') - v - 1));
	return 0;
}

static const char *LOCKINFO =
    "<?xml version=\"1.0\"?><D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/>"
    "</D:lockscope><D:locktype><D:write/></D:locktype><D:owner>test</D:owner></D:lockinfo>";

static void test_locks(void)
{
	struct buf tok = BUF_INIT, h = BUF_INIT, b = BUF_INIT;
	struct resp r;

	CHECK_INT(status_of("PUT", "locked.md", NULL, "# Locked\n"), 201);
	CHECK(dav("LOCK", "locked.md", "Timeout: Second-60\r\n", LOCKINFO, &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(lock_token(&r, &tok) == 0);
	resp_free(&r);
	/* without the token: 423, the file unchanged */
	CHECK_INT(status_of("PUT", "locked.md", NULL, "# Other\n"), 423);
	CHECK_INT(status_of("DELETE", "locked.md", NULL, NULL), 423);
	CHECK_INT(status_of("MOVE", "locked.md", "Destination: /dav/l2.md\r\n", NULL), 423);
	tv_read(vault, "locked.md", &b);
	CHECK(b.len == 9);
	/* a second exclusive lock: 423 */
	CHECK_INT(status_of("LOCK", "locked.md", NULL, LOCKINFO), 423);
	/* with it: 204 */
	buf_addf(&h, "If: (<%s>)\r\n", tok.ptr);
	CHECK_INT(status_of("PUT", "locked.md", h.ptr, "# Mine\n"), 204);
	/* a token of another resource does not do */
	CHECK_INT(status_of("PUT", "locked.md", "If: (<opaquelocktoken:nope>)\r\n", "# x\n"), 412);
	buf_reset(&h);
	buf_addf(&h, "Lock-Token: <%s>\r\n", tok.ptr);
	CHECK_INT(status_of("UNLOCK", "locked.md", h.ptr, NULL), 204);
	CHECK_INT(status_of("PUT", "locked.md", NULL, "# Free\n"), 204);
	/* a lock on an unmapped URL makes an empty resource */
	CHECK(dav("LOCK", "fresh-lock.md", NULL, LOCKINFO, &r) == 0);
	CHECK_INT(r.status, 201);
	CHECK(lock_token(&r, &tok) == 0);
	resp_free(&r);
	CHECK(tv_exists(vault, "fresh-lock.md"));
	buf_reset(&h);
	buf_addf(&h, "Lock-Token: <%s>\r\n", tok.ptr);
	CHECK_INT(status_of("UNLOCK", "fresh-lock.md", h.ptr, NULL), 204);
	buf_release(&tok);
	buf_release(&h);
	buf_release(&b);
}

/* A PROPFIND of a large tree comes in chunks, whole. */
static void test_large_propfind(void)
{
	struct buf path = BUF_INIT;
	struct resp r;
	int i;

	for (i = 0; i < 3000; i++) {
		buf_reset(&path);
		buf_addf(&path, "big/d%02d/file-%04d.txt", i % 30, i);
		tv_write(vault, path.ptr, "x");
	}
	CHECK(dav("PROPFIND", "big", "Depth: infinity\r\n", NULL, &r) == 0);
	CHECK_INT(r.status, 207);
	CHECK(hdr(&r, "Transfer-Encoding") && strcmp(hdr(&r, "Transfer-Encoding"), "chunked") == 0);
	CHECK_INT((int)test_count(r.body.ptr ? r.body.ptr : "", "<D:response>"), 3000 + 30 + 1);
	CHECK(r.body.ptr && strstr(r.body.ptr, "</D:multistatus>"));
	CHECK(r.body.len > 1024 * 1024);
	resp_free(&r);
	buf_release(&path);
}

static atomic_int propfind_failures;

static void *propfind_main(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 150; i++) {
		struct resp r;
		if (dav("PROPFIND", "src", "Depth: 1\r\n", NULL, &r) != 0 || r.status != 207 ||
		    !r.body.ptr || !strstr(r.body.ptr, "</D:multistatus>"))
			atomic_fetch_add(&propfind_failures, 1);
		resp_free(&r);
	}
	return NULL;
}

/*
 * Small streamed answers from several clients at once: a stream's start,
 * piece and end handed back while its loop is busy with the others (a
 * stream was once queued twice and freed in between).
 */
static void test_many_propfinds(void)
{
	pthread_t t[6];
	int i;

	for (i = 0; i < 6; i++)
		CHECK(pthread_create(&t[i], NULL, propfind_main, NULL) == 0);
	for (i = 0; i < 6; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	CHECK_INT(atomic_load(&propfind_failures), 0);
}

/*
 * Without a token there is no WebDAV: 404 to every method on a file of the
 * vault. A vault's own folder "dav" is served at /dav-2/, as with a token
 * (/dav is reserved: a note's URL does not depend on the server's flags).
 */
static void test_no_token(void)
{
	static const char *const methods[] = {"OPTIONS", "GET", "PUT", "PROPFIND", "MKCOL", "LOCK"};
	struct site_server bare;
	struct site_server_options o = {.threads = 1};
	char *v = tv_new();
	struct resp r;
	size_t i;

	tv_write(v, "index.md", "# Bare\n");
	tv_write(v, "dav/guide.md", "# Guide\n\nMounting the vault.\n");
	site_server_start(&bare, v, &o);
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		CHECK(fetch_request(bare.port, methods[i], "/dav/index.md", BASIC, "x", 1, &r) ==
		      0);
		CHECK_INT(r.status, 404);
		resp_free(&r);
	}
	CHECK(fetch_request(bare.port, "GET", "/dav-2/guide", NULL, NULL, 0, &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(r.body.ptr && strstr(r.body.ptr, "Mounting the vault"));
	resp_free(&r);
	CHECK(fetch_request(bare.port, "GET", "/dav/guide", NULL, NULL, 0, &r) == 0);
	CHECK_INT(r.status, 404);
	resp_free(&r);
	CHECK(fetch_request(bare.port, "PROPFIND", "/dav/guide", BASIC, "x", 1, &r) == 0);
	CHECK_INT(r.status, 404);
	resp_free(&r);
	CHECK(!tv_exists(v, ".quire/davprops"));
	CHECK_INT(site_server_stop(&bare), 0);
	tv_remove(v);
}

/* The vault's max_note_size as the sync API reads it, once it is want (a minute: only a hang). */
static int until_note_limit(size_t want)
{
	int i;

	for (i = 0; i < 6000 && loader_max_note_size(srv.loader) != want; i++)
		usleep(10 * 1000);
	return loader_max_note_size(srv.loader) == want;
}

/* A PUT of a note over max_note_size (quire.yml) is refused, as through the API. */
static void test_note_size_limit(void)
{
	char big[3001], *huge, etag[SHA256_HEX_SIZE + 2];
	struct resp r;

	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(dav("PUT", "quire.yml", NULL, "max_note_size: 2K\n", &r) == 0);
	CHECK_INT(r.status, 201);
	resp_free(&r);
	CHECK(until_note_limit(2048));
	CHECK(dav("PUT", "notes/big.md", NULL, big, &r) == 0);
	CHECK_INT(r.status, 413);
	CHECK(r.body.ptr && strstr(r.body.ptr, "3000 bytes, over max_note_size (2048"));
	resp_free(&r);
	CHECK(!tv_exists(vault, "notes/big.md"));
	/* spooled (over small_body_size), refused all the same, and the spool left empty */
	huge = xmalloc(SPOOLED);
	memset(huge, 'q', SPOOLED);
	CHECK_INT(put_bytes("notes/huge.md", NULL, huge, SPOOLED, etag), 413);
	free(huge);
	CHECK(!tv_exists(vault, "notes/huge.md"));
	CHECK_INT(tv_count_entries(vault, ".quire/spool"), 0);
	CHECK(dav("PUT", "notes/big.txt", NULL, big, &r) == 0);
	CHECK_INT(r.status, 201);
	resp_free(&r);
	CHECK(dav("DELETE", "quire.yml", NULL, NULL, &r) == 0);
	CHECK_INT(r.status, 204);
	resp_free(&r);
	CHECK(until_note_limit(4 << 20));
	CHECK(dav("DELETE", "notes/big.txt", NULL, NULL, &r) == 0);
	resp_free(&r);
}

int main(void)
{
	double t0 = now_s();

	log_set_level(LOG_WARN);
	vault = tv_new();
	tv_write(vault, "index.md", "# Home\n\nWelcome.\n");
	tv_write(vault, "notes/hello.md", "# Hello\n\nThe first note.\n");
	usleep(60 * 1000);
	start_server();

	RUN(test_options);
	RUN(test_unauthenticated);
	RUN(test_put_get);
	RUN(test_preconditions);
	RUN(test_spooled);
	RUN(test_errors);
	RUN(test_copy_move);
	RUN(test_propfind);
	RUN(test_folder_pages);
	RUN(test_dot_folders);
	RUN(test_props_restart);
	RUN(test_locks);
	RUN(test_large_propfind);
	RUN(test_many_propfinds);
	RUN(test_note_size_limit);
	RUN(test_no_token);

	stop_server();
	tv_remove(vault);
	fprintf(stderr, "test-dav: %.1f s\n", now_s() - t0);
	return test_done();
}
