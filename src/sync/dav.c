/*
 * dav.c: the WebDAV front at /dav/: authentication, the request as the
 * methods need it, and the front's life (dav_new() to dav_free()).
 *
 * Requests. A handler on the loops checks the credentials (HTTP Basic with
 * the token as password, or Bearer; failures counted by the sync API's
 * limiter), answers OPTIONS, checks the path and copies what the method
 * needs (headers, the body moved out of libevent's buffer, or a large
 * one as the file the HTTP layer spooled it to) into a struct dav_req, defers the request and queues it on the sync API's pool as a
 * J_CALL job. Everything that touches the disk runs there
 * (dav-methods.c), holding its paths as the sync API's writes do
 * (syncapi_claim()), so WebDAV and the sync API never write one path at
 * once.
 *
 * Paths. As the sync API checks them (NFC, no "." or "..", lengths),
 * except that dot-files and dot-folders are let through: editors keep
 * their settings in .obsidian/ and their bin in .trash/. The scanner and
 * the watcher skip dot paths and syncapi_notify() does not tell the
 * loader of them, so they are stored and listed back but never
 * published. quire's own names are never reachable (dav_hidden()): the
 * data folder (.quire, or data_dir when it is inside the vault) and the
 * temporary files of writes, found or not, answer 404, and listings leave
 * them out.
 *
 * Rejected: a handler of its own for every method on the loops (file
 * work on a loop stalls every reader on it); a second job queue (the sync
 * API's already serializes writes per path and bounds the backlog).
 */
#include "sync/syncapi.h"
#include "sync/syncapi-int.h"
#include "sync/dav.h"
#include "sync/dav-int.h"
#include "http/http.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TMP_NAME ".quire-tmp-"
#define ALLOW                                                                                      \
	"OPTIONS, GET, HEAD, PUT, DELETE, MKCOL, COPY, MOVE, PROPFIND, PROPPATCH, LOCK, UNLOCK"

/* ---- paths ---- */

/* Whether the segment at s (up to '/' or the end) starts with name. */
static int seg_starts(const char *s, const char *name)
{
	return strncmp(s, name, strlen(name)) == 0;
}

int dav_hidden(void *ctx, const char *path)
{
	const struct dav *dav = ctx;
	const char *p = path;
	size_t n;

	if (strcmp(path, ".quire") == 0 || strncmp(path, ".quire/", 7) == 0)
		return 1;
	if (dav->data_rel && (n = strlen(dav->data_rel)) && strncmp(path, dav->data_rel, n) == 0 &&
	    (path[n] == '\0' || path[n] == '/'))
		return 1;
	for (;;) {
		if (seg_starts(p, TMP_NAME))
			return 1;
		if (!(p = strchr(p, '/')))
			return 0;
		p++;
	}
}

/*
 * The vault path of a URL path under /dav/ (raw: still percent-encoded,
 * the query cut off) into out, checked: 0; -1 when it is not under /dav/
 * (*status 502), or is refused (*status 400, or 404 for a hidden name).
 * *slash says whether it ended with '/'.
 */
static int url_path(const struct dav *dav, const char *base, const char *raw, size_t len,
		    struct buf *out, int *slash, int *status)
{
	struct buf dec = BUF_INIT;
	size_t blen = strlen(base);
	const char *why;
	int rc = -1;

	*slash = 0;
	buf_reset(out);
	if (len < blen || strncmp(raw, base, blen) != 0 || (len > blen && raw[blen] != '/')) {
		*status = 502;
		return -1;
	}
	raw += blen;
	len -= blen;
	while (len && raw[0] == '/')
		raw++, len--;
	if (len && raw[len - 1] == '/') {
		*slash = 1;
		while (len && raw[len - 1] == '/')
			len--;
	}
	*status = 400;
	if (buf_add_urldecoded(&dec, raw, len, 0) < 0)
		goto out;
	if (dec.len == 0) {
		buf_adds(out, ""); /* the root */
		*slash = 1;
		rc = 0;
		goto out;
	}
	if (syncapi_check_path_dots(dec.ptr, dec.len, out, &why, 1) < 0)
		goto out;
	if (dav_hidden((void *)dav, out->ptr)) {
		*status = 404;
		goto out;
	}
	rc = 0;
out:
	buf_release(&dec);
	return rc;
}

int dav_resolve_url(void *ctx, const char *url, struct buf *out)
{
	const struct dav *dav = ctx;
	const char *p = url;
	int slash, status;

	if (strncasecmp(p, "http://", 7) == 0 || strncasecmp(p, "https://", 8) == 0) {
		p = strstr(p, "://") + 3;
		p = strchr(p, '/');
		if (!p)
			return -1;
	}
	return url_path(dav, dav->base, p, strcspn(p, "?#"), out, &slash, &status);
}

/* ---- requests ---- */

/* Removes r's spooled body, if any (before an answer: the spool is empty once the client hears). */
static void drop_upload(struct dav_req *r)
{
	if (r->up)
		syncapi_upload_drop(r->up);
	free(r->up);
	r->up = NULL;
}

static void req_free(void *ctx)
{
	struct dav_req *r = ctx;

	if (!r)
		return;
	free(r->path);
	free(r->dest);
	free(r->if_hdr);
	free(r->if_match);
	free(r->if_none_match);
	free(r->lock_token);
	free(r->timeout);
	buf_release(&r->body);
	drop_upload(r);
	free(r);
}

static char *header_copy(struct http_request *req, const char *name)
{
	const char *v = http_request_header(req, name);

	return v ? xstrdup(v) : NULL;
}

/* Depth: "0", "1" or "infinity" (-1); absent: dflt. -2 for anything else. */
static int parse_depth(const char *v, int dflt)
{
	if (!v)
		return dflt;
	while (*v == ' ')
		v++;
	if (strcmp(v, "0") == 0)
		return 0;
	if (strcmp(v, "1") == 0)
		return 1;
	if (strcasecmp(v, "infinity") == 0)
		return -1;
	return -2;
}

int dav_method_writes(int method)
{
	switch (method) {
	case HTTP_PUT: case HTTP_DELETE: case HTTP_MKCOL: case HTTP_COPY: case HTTP_MOVE:
	case HTTP_PROPPATCH: case HTTP_LOCK: case HTTP_UNLOCK:
		return 1;
	default:
		return 0;
	}
}

/* A short plain-text answer on the loop; a write refused, or a 401, is logged. */
static void reply_text(struct http_request *req, int status, const char *msg)
{
	struct buf b = BUF_INIT;

	if (status == 401 || (status >= 400 && status != 429 &&
			      dav_method_writes(http_request_method(req))))
		syncapi_log_refusal(1, http_request_method_name(req), status, msg, NULL, NULL,
				    http_request_peer(req));

	buf_adds(&b, msg);
	buf_addc(&b, '\n');
	http_reply_header(req, "Cache-Control", "no-store");
	http_reply_buf(req, status, "text/plain; charset=utf-8", &b);
}

/* The credentials: 1 to go on; else the request has been answered 401 or 429. */
static int authenticate(struct dav *dav, struct http_request *req)
{
	double retry;
	char num[32];
	int rc = syncapi_auth_check(dav->api, req, 1, &retry);

	if (rc == 1)
		return 1;
	if (rc == 0) {
		http_reply_header(req, "WWW-Authenticate", "Basic realm=\"quire\"");
		reply_text(req, 401, "authentication required: the sync token as the password");
		return 0;
	}
	snprintf(num, sizeof(num), "%.0f", retry < 1 ? 1.0 : retry + 0.5);
	http_reply_header(req, "Retry-After", num);
	reply_text(req, 429, "too many failed authentications from this address");
	return 0;
}

static void options(struct http_request *req)
{
	http_reply_header(req, "DAV", "1, 2");
	http_reply_header(req, "Allow", ALLOW);
	http_reply_header(req, "MS-Author-Via", "DAV");
	http_reply_header(req, "Accept-Ranges", "none");
	http_reply(req, 200, NULL, "", 0);
}

/* The Destination of a COPY or MOVE into r->dest; 0, or -1 answered. */
static int destination(struct dav *dav, struct http_request *req, struct dav_req *r)
{
	const char *v = http_request_header(req, "Destination");
	struct buf out = BUF_INIT;
	int slash, status;

	if (!v) {
		reply_text(req, 400, "COPY and MOVE need a Destination header");
		return -1;
	}
	if (strchr(v, ':') && v[0] != '/') {
		/* an absolute URI: on another server (or a scheme not ours), not ours to write */
		const char *host = http_request_header(req, "Host");
		if (host && !http_same_origin(v, host)) {
			reply_text(req, 502, "the Destination is on another server");
			return -1;
		}
		if (strncasecmp(v, "http://", 7) != 0 && strncasecmp(v, "https://", 8) != 0) {
			reply_text(req, 502, "the Destination is not an http(s) URL");
			return -1;
		}
		v = strstr(v, "://") + 3;
		v = strchr(v, '/');
		if (!v)
			v = "/";
	}
	/* the request's target comes without the URL prefix; a Destination has it */
	if (url_path(dav, dav->base, v, strcspn(v, "?#"), &out, &slash, &status) < 0) {
		buf_release(&out);
		reply_text(req, status == 404 ? 403 : status,
			   status == 502 ? "the Destination is not under /dav/ on this server"
					 : "the Destination is not a path the vault takes");
		return -1;
	}
	r->dest = buf_detach(&out, NULL);
	return 0;
}

/* Reads what the method needs from req into a new dav_req; NULL when answered. */
static struct dav_req *read_request(struct dav *dav, struct http_request *req)
{
	enum http_method m = http_request_method(req);
	struct dav_req *r = xcalloc(1, sizeof(*r));
	const char *target = http_request_target(req);
	struct buf path = BUF_INIT;
	unsigned long long len;
	int status;

	r->dav = dav;
	r->method = m;
	r->method_name = http_request_method_name(req);
	syncapi_origin(req, CHANGE_WEBDAV, &r->origin);
	buf_init(&r->body, 0);
	if (url_path(dav, "/dav", target, strcspn(target, "?#"), &path, &r->slash, &status) < 0) {
		reply_text(req, status == 502 ? 404 : status,
			   status == 404 ? "not found" : "not a path the vault takes");
		goto fail;
	}
	r->path = buf_detach(&path, NULL);
	r->depth = parse_depth(
	    http_request_header(req, "Depth"),
	    m == HTTP_PROPFIND || m == HTTP_LOCK || m == HTTP_COPY || m == HTTP_MOVE ? -1 : 0);
	if (r->depth == -2) {
		reply_text(req, 400, "Depth takes 0, 1 or infinity");
		goto fail;
	}
	{
		const char *ow = http_request_header(req, "Overwrite");
		r->overwrite = !ow || (ow[0] != 'F' && ow[0] != 'f');
	}
	if ((m == HTTP_COPY || m == HTTP_MOVE) && destination(dav, req, r) < 0)
		goto fail;
	r->if_hdr = header_copy(req, "If");
	r->if_match = header_copy(req, "If-Match");
	r->if_none_match = header_copy(req, "If-None-Match");
	r->lock_token = header_copy(req, "Lock-Token");
	r->timeout = header_copy(req, "Timeout");
	r->up = xmalloc(sizeof(*r->up));
	len = syncapi_take_body(dav->api, req, &r->body, r->up);
	if (!r->up->spooled) {
		free(r->up);
		r->up = NULL;
	}
	if (len > dav->api->max_upload) {
		drop_upload(r);
		reply_text(req, 413, "the body is larger than the server accepts");
		goto fail;
	}
	if (m == HTTP_PUT && syncapi_note_too_big(dav->api, r->path, len, &path)) {
		drop_upload(r);
		reply_text(req, 413, path.ptr);
		goto fail;
	}
	if (m != HTTP_PUT && len > DAV_MAX_BODY) {
		drop_upload(r);
		reply_text(req, 413, "XML bodies are limited to 1 MiB");
		goto fail;
	}
	return r;
fail:
	buf_release(&path);
	req_free(r);
	return NULL;
}

static void handle(struct http_request *req, void *ctx)
{
	struct dav *dav = ctx;
	enum http_method m = http_request_method(req);
	struct dav_req *r;
	struct job *j;

	if (!authenticate(dav, req))
		return;
	if (m == HTTP_OPTIONS) {
		options(req);
		return;
	}
	if (m == HTTP_POST || m == HTTP_PATCH || m == HTTP_OTHER) {
		http_reply_header(req, "Allow", ALLOW);
		reply_text(req, 405, "WebDAV takes " ALLOW);
		return;
	}
	r = read_request(dav, req);
	if (!r)
		return;
	j = xcalloc(1, sizeof(*j));
	j->kind = J_CALL;
	j->run = dav_run;
	j->ctx = r;
	j->ctx_free = req_free;
	buf_init(&j->body, 0);
	j->d = http_request_defer(req);
	r->d = j->d;
	syncapi_enqueue(dav->api, j);
}

/*
 * The body limit of a request to /dav/, from its head (http.h,
 * http_body_policy): with the right credentials, as large as the server
 * takes (a PUT's upload limit; XML bodies are held to 1 MiB once read);
 * without them a little, enough to be answered 401.
 */
static size_t body_policy(void *ctx, const char *method, const char *target,
			  const char *authorization)
{
	struct dav *dav = ctx;

	(void)method;
	(void)target;
	return syncapi_token_ok(dav->api, authorization, 1) ? SIZE_MAX : 4096;
}

/* ---- life ---- */

struct dav *dav_new(struct syncapi *api, const char *url_prefix)
{
	struct dav *dav = xcalloc(1, sizeof(*dav));
	struct buf b = BUF_INIT;
	char vault[PATH_MAX], data[PATH_MAX];
	size_t n;

	dav->api = api;
	buf_addf(&b, "%s/dav", url_prefix ? url_prefix : "");
	dav->base = buf_detach(&b, NULL);
	/* the data folder, when it is inside the vault, is hidden under its own name too */
	if (realpath(api->vault, vault) && realpath(api->data_dir, data) && (n = strlen(vault)) &&
	    strncmp(data, vault, n) == 0 && data[n] == '/')
		dav->data_rel = xstrdup(data + n + 1);
	buf_addf(&b, "%s/davprops", api->data_dir);
	dav->props = dav_props_open(b.ptr);
	buf_release(&b);
	if (!dav->props) {
		dav_free(dav);
		return NULL;
	}
	dav->locks = dav_locks_new();
	return dav;
}

int dav_register(struct dav *dav, struct http_server *srv)
{
	if (dav->api->spool_fd >= 0) /* the sync API's spool: PUT takes a large body as a file */
		http_server_set_body_spool(srv, dav->api->spool_fd);
	http_server_set_body_policy(srv, "/dav", body_policy, dav);
	if (http_server_add_handler(srv, "/dav", handle, dav) < 0 ||
	    http_server_add_handler(srv, DAV_PREFIX, handle, dav) < 0)
		return -1;
	/* counted apart from the sync API's in /metrics */
	if (http_server_set_handler_kind(srv, "/dav", HTTP_HANDLER_DAV) < 0)
		return -1;
	return http_server_set_handler_kind(srv, DAV_PREFIX, HTTP_HANDLER_DAV);
}

/*
 * Without a token: WebDAV's requests get 404, and reads are the site's
 * (its 404 page: /dav is reserved, so a vault's own folder named "dav" is
 * served at /dav-2/ with a token or without).
 */
static void handle_off(struct http_request *req, void *ctx)
{
	enum http_method m = http_request_method(req);

	(void)ctx;
	if (m == HTTP_GET || m == HTTP_HEAD)
		http_serve_snapshot(req);
	else
		reply_text(req, 404, "not found: WebDAV needs the sync token (--token-file)");
}

int dav_register_off(struct http_server *srv)
{
	if (http_server_add_handler(srv, "/dav", handle_off, NULL) < 0)
		return -1;
	return http_server_add_handler(srv, DAV_PREFIX, handle_off, NULL);
}

void dav_free(struct dav *dav)
{
	if (!dav)
		return;
	dav_props_free(dav->props);
	dav_locks_free(dav->locks);
	free(dav->data_rel);
	free(dav->base);
	free(dav);
}
