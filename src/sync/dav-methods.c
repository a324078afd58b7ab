/*
 * dav-methods.c: the WebDAV methods, each a job on the sync API's pool
 * (dav_run()): preconditions, locks, the work, the answer.
 *
 * Order of checks in every write, as RFC 4918 has it: the resource's
 * state (404, 405, 409 for a missing parent), then the preconditions
 * (If-Match, If-None-Match and the If header: 412), then the locks (a
 * lock covering what changes whose token the If header does not submit:
 * 423), then the work. The paths a write changes are claimed for its
 * whole length (syncapi_claim()), so the checks and the write are atomic
 * with respect to every other WebDAV and sync API write.
 *
 * A 2xx to a write means durable: files go through syncapi_put(), folders
 * and removals fsync their parents (dav-fs.c), dead properties are saved
 * before the answer (dav-props.c). Every write tells the loader
 * (syncapi_notify(), which leaves dot paths out).
 */
#include "sync/syncapi.h"
#include "sync/syncapi-int.h"
#include "sync/dav.h"
#include "sync/dav-int.h"
#include "http/http.h"
#include "util/files.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT 600L
#define MAX_TIMEOUT (7L * 24 * 3600)

/* ---- answers ---- */

/*
 * A PUT's spooled body that no write took (refused, failed) goes before
 * the answer: the spool is empty once the client hears.
 */
static void drop_upload(struct dav_req *r)
{
	if (r->up)
		syncapi_upload_drop(r->up);
}

static void reply(struct dav_req *r, int status, const char *msg)
{
	struct buf b = BUF_INIT;

	drop_upload(r);
	if (status >= 400 && dav_method_writes(r->method))
		syncapi_log_refusal(1, r->method_name, status, msg ? msg : "refused", r->path,
				    r->dest, r->origin.client);

	if (msg) {
		buf_adds(&b, msg);
		buf_addc(&b, '\n');
	}
	http_deferred_reply_buf(r->d, status, msg ? "text/plain; charset=utf-8" : NULL, &b);
}

/* 423 naming the locked resource (RFC 4918 §16, lock-token-submitted). */
static void reply_locked(struct dav_req *r, const char *path)
{
	struct buf b = BUF_INIT;

	drop_upload(r);
	if (dav_method_writes(r->method))
		syncapi_log_refusal(1, r->method_name, 423, "locked", path, NULL, r->origin.client);

	buf_adds(&b, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
		     "<D:error xmlns:D=\"DAV:\"><D:lock-token-submitted>");
	dav_href(r->dav, &b, path, 0);
	buf_adds(&b, "</D:lock-token-submitted></D:error>\n");
	http_deferred_reply_buf(r->d, 423, DAV_XML_TYPE, &b);
}

static void reply_errno(struct dav_req *r, int err, const char *what)
{
	log_error("dav: %s: %s: %s", r->path, what, strerror(err));
	reply(r, err == ENOSPC || err == EDQUOT ? 507 : 500, syncapi_errno_message(err));
}

/* ---- preconditions and locks ---- */

static int etag_of(void *ctx, const char *path, struct buf *out)
{
	struct dav *dav = ctx;

	return dav_fs_etag(dav->api, path, out);
}

/* Whether the entity tag list v (If-Match or If-None-Match) names etag ("*": any). */
static int tag_listed(const char *v, const char *etag)
{
	const char *p = v;

	while (*p == ' ' || *p == ',')
		p++;
	if (*p == '*')
		return etag != NULL;
	if (!etag)
		return 0;
	while ((p = strchr(p, '"'))) {
		const char *end = strchr(p + 1, '"');
		size_t n;
		if (!end)
			return 0;
		n = (size_t)(end - p + 1);
		if (n == strlen(etag) && strncmp(p, etag, n) == 0)
			return 1;
		p = end + 1;
	}
	return 0;
}

/*
 * If-Match, If-None-Match and the If header for a request on path. 0
 * when they hold, else the status (412; 304 for a GET's If-None-Match).
 */
static int conditions(struct dav_req *r, const struct if_header *ifh, const char *path, int read)
{
	struct buf tag = BUF_INIT;
	const char *etag = dav_fs_etag(r->dav->api, path, &tag) == 0 ? tag.ptr : NULL;
	struct stat st;
	int status = 0;

	/* a folder has no entity tag, but it exists: "*" matches it */
	if (!etag && path[0] && dav_fs_stat(r->dav->api, path, &st) == DAV_DIR)
		etag = "*";
	if (!path[0])
		etag = "*";
	if (r->if_match && (!etag || (strcmp(etag, "*") != 0 && !tag_listed(r->if_match, etag)) ||
			    (strcmp(etag, "*") == 0 && !strchr(r->if_match, '*'))))
		status = 412;
	else if (r->if_none_match && tag_listed(r->if_none_match, etag))
		status = read ? 304 : 412;
	else if (ifh->n && !dav_if_eval(ifh, r->dav->locks, path, etag_of, r->dav))
		status = 412;
	buf_release(&tag);
	return status;
}

/* The parent folder of path into out ("" for the root's children). */
static void parent_of(const char *path, struct buf *out)
{
	const char *slash = strrchr(path, '/');

	buf_reset(out);
	if (slash)
		buf_add(out, path, (size_t)(slash - path));
	else
		buf_adds(out, "");
}

/*
 * Whether the request may change path (with tree, all under it; with
 * member, it is added to or removed from its folder, whose own lock then
 * counts). 0, or 423 answered.
 */
static int may_write(struct dav_req *r, const struct if_header *ifh, const char *path, int tree,
		     int member)
{
	struct buf locked = BUF_INIT, parent = BUF_INIT;
	int rc = dav_locks_may_write(r->dav->locks, path, tree, ifh->tokens, ifh->ntokens, &locked);

	if (!rc && member && path[0]) {
		parent_of(path, &parent);
		rc = dav_locks_may_write(r->dav->locks, parent.ptr, 0, ifh->tokens, ifh->ntokens,
					 &locked);
	}
	if (rc)
		reply_locked(r, locked.ptr ? locked.ptr : path);
	buf_release(&locked);
	buf_release(&parent);
	return rc;
}

/*
 * The checks of every write to r's own path: its If header (412) and its
 * locks (423, see may_write()). 0, or the refusal answered.
 */
static int write_refused(struct dav_req *r, const struct if_header *ifh, int tree, int member)
{
	if (conditions(r, ifh, r->path, 0)) {
		reply(r, 412, "precondition failed");
		return 1;
	}
	return may_write(r, ifh, r->path, tree, member) != 0;
}

/* ---- GET, HEAD ---- */

static void http_date(time_t t, char out[64])
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 64, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static void get_folder(struct dav_req *r)
{
	struct dav_entry *v = NULL;
	struct buf b = BUF_INIT;
	size_t i, n = dav_fs_list(r->dav->api, r->path, &v, dav_hidden, r->dav);

	buf_adds(&b, "<!doctype html>\n<meta charset=utf-8>\n<title>");
	dav_xml_escape(&b, r->path, strlen(r->path));
	buf_adds(&b, "</title>\n<ul>\n");
	for (i = 0; i < n; i++) {
		const char *slash = strrchr(v[i].path, '/'), *leaf = slash ? slash + 1 : v[i].path;
		buf_adds(&b, "<li><a href=\"");
		buf_add_urlpath(&b, leaf, strlen(leaf));
		buf_adds(&b, v[i].kind == DAV_DIR ? "/\">" : "\">");
		dav_xml_escape(&b, leaf, strlen(leaf));
		buf_adds(&b, "</a>\n");
	}
	buf_adds(&b, "</ul>\n");
	dav_fs_list_free(v, n);
	http_deferred_reply_buf(r->d, 200, "text/html; charset=utf-8", &b);
}

static void do_get(struct dav_req *r, const struct if_header *ifh)
{
	struct buf tag = BUF_INIT, body = BUF_INIT;
	struct stat st;
	char date[64];
	int status;
	enum dav_kind k = dav_fs_stat(r->dav->api, r->path, &st);

	if (k == DAV_NONE) {
		reply(r, 404, "not found");
		return;
	}
	if ((status = conditions(r, ifh, r->path, 1)) != 0) {
		if (status == 304 && dav_fs_etag(r->dav->api, r->path, &tag) == 0)
			http_deferred_header(r->d, "ETag", tag.ptr);
		buf_release(&tag);
		{
			reply(r, status, status == 304 ? NULL : "precondition failed");
			return;
		}
	}
	if (k == DAV_DIR) {
		get_folder(r);
		return;
	}
	if (dav_fs_etag(r->dav->api, r->path, &tag) < 0 ||
	    dav_fs_read(r->dav->api, r->path, &body) < 0) {
		reply_errno(r, errno, "read");
		goto out;
	}
	http_date(st.st_mtime, date);
	http_deferred_header(r->d, "ETag", tag.ptr);
	http_deferred_header(r->d, "Last-Modified", date);
	http_deferred_reply_buf(r->d, 200, dav_content_type(r->path), &body);
out:
	buf_release(&tag);
	buf_release(&body);
}

/* ---- PUT, DELETE, MKCOL ---- */

/*
 * Writes body, or the spooled upload up (may be NULL), to path durably
 * through the sync API, for r's request; both are taken (up is left not
 * spooled, its file renamed into place or removed). The outcome's status
 * (>= 300 on failure).
 */
static int put_file(struct dav_req *r, const char *path, struct buf *body, struct upload *up,
		    struct outcome *out)
{
	struct syncapi *api = r->dav->api;
	struct job w;

	memset(&w, 0, sizeof(w));
	memset(out, 0, sizeof(*out));
	w.origin = r->origin;
	w.kind = J_PUT;
	w.path = (char *)path;
	w.body = *body;
	buf_init(body, 0);
	if (up) {
		w.up = *up;
		up->spooled = 0;
	}
	syncapi_put(api, &w, out);
	syncapi_upload_drop(&w.up);
	buf_release(&w.body);
	return out->status;
}

static void do_put(struct dav_req *r, const struct if_header *ifh)
{
	struct syncapi *api = r->dav->api;
	struct outcome out;
	struct stat st;
	enum dav_kind k;
	char etag[SHA256_HEX_SIZE + 2];

	if (!r->path[0]) {
		reply(r, 405, "the root is a collection");
		return;
	}
	k = dav_fs_stat(api, r->path, &st);
	if (k == DAV_DIR) {
		reply(r, 405, "a collection takes no PUT");
		return;
	}
	if (!dav_fs_parent_exists(api, r->path)) {
		reply(r, 409, "the parent collection does not exist");
		return;
	}
	if (write_refused(r, ifh, 0, k == DAV_NONE))
		return;
	if (put_file(r, r->path, &r->body, r->up, &out) >= 300) {
		reply(r, out.status, out.error);
		return;
	}
	snprintf(etag, sizeof(etag), "\"%s\"", out.sha);
	http_deferred_header(r->d, "ETag", etag);
	reply(r, k == DAV_NONE ? 201 : 204, NULL);
}

static void do_delete(struct dav_req *r, const struct if_header *ifh)
{
	struct syncapi *api = r->dav->api;
	struct stat st;

	if (!r->path[0]) {
		reply(r, 403, "the root cannot be deleted");
		return;
	}
	if (dav_fs_stat(api, r->path, &st) == DAV_NONE) {
		reply(r, 404, "not found");
		return;
	}
	if (write_refused(r, ifh, 1, 1))
		return;
	if (dav_fs_remove(api, r->path) < 0) {
		reply_errno(r, errno, "delete");
		return;
	}
	dav_props_drop(r->dav->props, r->path);
	dav_locks_drop(r->dav->locks, r->path);
	syncapi_notify(api, &r->origin, r->path, NULL);
	reply(r, 204, NULL);
}

static void do_mkcol(struct dav_req *r, const struct if_header *ifh)
{
	struct syncapi *api = r->dav->api;
	struct stat st;

	if (r->body.len) {
		reply(r, 415, "MKCOL takes no body");
		return;
	}
	if (!r->path[0] || dav_fs_stat(api, r->path, &st) != DAV_NONE) {
		reply(r, 405, "the resource exists");
		return;
	}
	if (!dav_fs_parent_exists(api, r->path)) {
		reply(r, 409, "the parent collection does not exist");
		return;
	}
	if (write_refused(r, ifh, 0, 1))
		return;
	if (dav_fs_mkdir(api, r->path) < 0) {
		reply_errno(r, errno, "mkcol");
		return;
	}
	syncapi_notify(api, &r->origin, r->path, NULL);
	reply(r, 201, NULL);
}

/* ---- COPY, MOVE ---- */

/* The checks of a COPY or MOVE, the source's kind in *k; 0, or -1 answered. */
static int copy_checks(struct dav_req *r, const struct if_header *ifh, int move, enum dav_kind *k,
		       enum dav_kind *dk)
{
	struct syncapi *api = r->dav->api;
	struct stat st;

	*k = dav_fs_stat(api, r->path, &st);
	if (*k == DAV_NONE)
		return reply(r, 404, "not found"), -1;
	if ((move && r->depth != -1) || r->depth == 1)
		return reply(r, 400,
			     move ? "MOVE takes Depth: infinity"
				  : "COPY takes Depth 0 or infinity"),
		       -1;
	if (!dav_fs_parent_exists(api, r->dest))
		return reply(r, 409, "the Destination's parent collection does not exist"), -1;
	*dk = dav_fs_stat(api, r->dest, &st);
	if (conditions(r, ifh, r->path, 0))
		return reply(r, 412, "precondition failed"), -1;
	if (*dk != DAV_NONE && !r->overwrite)
		return reply(r, 412, "the Destination exists and Overwrite is F"), -1;
	if ((move && may_write(r, ifh, r->path, 1, 1)) || may_write(r, ifh, r->dest, 1, 1))
		return -1;
	return 0;
}

static void do_copy_move(struct syncapi *api, struct dav_req *r, const struct if_header *ifh)
{
	int move = r->method == HTTP_MOVE;
	enum dav_kind k, dk;

	if (!r->path[0] || !r->dest[0]) {
		reply(r, 403, "the root cannot be copied, moved or replaced");
		return;
	}
	if (strcmp(r->path, r->dest) == 0) {
		reply(r, 403, "the source and the Destination are the same");
		return;
	}
	if (dav_path_under(r->dest, r->path) || dav_path_under(r->path, r->dest)) {
		reply(r, 409, "the source and the Destination hold one another");
		return;
	}
	syncapi_claim(api, r->path, r->dest);
	if (copy_checks(r, ifh, move, &k, &dk) < 0)
		goto out;
	if (dk != DAV_NONE) {
		if (dav_fs_remove(api, r->dest) < 0) {
			reply_errno(r, errno, "replace");
			goto out;
		}
		dav_props_drop(r->dav->props, r->dest);
		dav_locks_drop(r->dav->locks, r->dest);
	}
	if (move ? dav_fs_rename(api, r->path, r->dest) < 0
		 : dav_fs_copy(api, r->path, r->dest, r->depth == -1, dav_hidden, r->dav) < 0) {
		reply_errno(r, errno, move ? "move" : "copy");
		goto out;
	}
	if (move) {
		dav_props_move(r->dav->props, r->path, r->dest);
		dav_locks_drop(r->dav->locks, r->path);
		syncapi_notify(api, &r->origin, r->path, r->dest);
		count(&api->moves);
	} else {
		dav_props_copy(r->dav->props, r->path, r->dest);
		syncapi_notify(api, &r->origin, r->dest, NULL);
	}
	reply(r, dk != DAV_NONE ? 204 : 201, NULL);
out:
	syncapi_release(api, r->path, r->dest);
}

/* ---- PROPFIND, PROPPATCH ---- */

static void do_propfind(struct dav_req *r)
{
	struct dav_propfind find = {FIND_ALL, NULL};
	struct xnode *root = NULL;
	struct dav_entry e;
	const char *why;

	if (r->body.len) {
		root = dav_xml_parse(r->body.ptr, r->body.len, &why);
		if (!root) {
			reply(r, 400, why);
			return;
		}
		if (!xnode_is(root, "DAV:", "propfind"))
			why = "PROPFIND takes a DAV:propfind body";
		else if (xnode_child(root, "DAV:", "propname"))
			find.mode = FIND_NAMES;
		else if ((find.props = xnode_child(root, "DAV:", "prop")))
			find.mode = FIND_PROPS;
		else if (!xnode_child(root, "DAV:", "allprop"))
			why = "DAV:propfind holds allprop, propname or prop";
		else
			why = NULL;
		if (why && find.mode == FIND_ALL) {
			xnode_free(root);
			{
				reply(r, 400, why);
				return;
			}
		}
	}
	memset(&e, 0, sizeof(e));
	e.path = r->path;
	e.kind = dav_fs_stat(r->dav->api, r->path, &e.st);
	if (e.kind == DAV_NONE)
		reply(r, 404, "not found");
	else
		dav_propfind_answer(r->dav, r->d, &find, &e, r->depth);
	xnode_free(root);
}

/* Appends a propstat of one property (its name as the request had it) with status. */
static void patch_result(struct buf *b, const struct xnode *p, const char *status)
{
	buf_addf(b, "<D:propstat><D:prop><%s xmlns=\"", p->name);
	dav_xml_escape(b, p->ns, strlen(p->ns));
	buf_addf(b, "\"/></D:prop><D:status>HTTP/1.1 %s</D:status></D:propstat>", status);
}

/* Whether a PROPPATCH may set or remove {ns}name: DAV:'s properties are live, protected. */
static int protected_prop(const struct xnode *p)
{
	return strcmp(p->ns, "DAV:") == 0;
}

/* The changes a propertyupdate asks for, in order; -1 when it is malformed. */
static int patch_changes(const struct xnode *root, struct dav_prop_change **out, size_t *n,
			 struct buf *values, int *refused)
{
	const struct xnode *op, *p;
	size_t alloc = 0, nvals = 0;
	size_t *offs = NULL, i;

	*out = NULL;
	*n = 0;
	*refused = 0;
	for (op = root->child; op; op = op->next) {
		int set = xnode_is(op, "DAV:", "set");
		const struct xnode *prop = xnode_child(op, "DAV:", "prop");
		if (!set && !xnode_is(op, "DAV:", "remove"))
			continue;
		if (!prop)
			return free(offs), -1;
		for (p = prop->child; p; p = p->next) {
			ALLOC_GROW(*out, *n + 1, alloc);
			offs = xrealloc(offs, (*n + 1) * sizeof(*offs));
			(*out)[*n].ns = p->ns;
			(*out)[*n].name = p->name;
			(*out)[*n].xml = NULL;
			offs[*n] = set ? values->len + 1 : 0; /* 0: a removal */
			if (set) {
				xnode_write(values, p);
				buf_addc(values, '\0');
				nvals++;
			}
			if (protected_prop(p))
				*refused = 1;
			(*n)++;
		}
	}
	/* the values' buffer is complete: point into it */
	for (i = 0; i < *n; i++)
		if (offs[i])
			(*out)[i].xml = values->ptr + offs[i] - 1;
	free(offs);
	return 0;
}

static void do_proppatch(struct dav_req *r, const struct if_header *ifh)
{
	struct dav_prop_change *c = NULL;
	struct buf values = BUF_INIT, b = BUF_INIT;
	struct xnode *root = NULL;
	const struct xnode *op, *p;
	const char *why = NULL;
	struct stat st;
	size_t n = 0;
	int refused = 0;

	if (dav_fs_stat(r->dav->api, r->path, &st) == DAV_NONE) {
		reply(r, 404, "not found");
		return;
	}
	root = dav_xml_parse(r->body.ptr ? r->body.ptr : "", r->body.len, &why);
	if (!root || !xnode_is(root, "DAV:", "propertyupdate") ||
	    patch_changes(root, &c, &n, &values, &refused) < 0) {
		reply(r, 400, why ? why : "PROPPATCH takes a DAV:propertyupdate body");
		goto out;
	}
	if (write_refused(r, ifh, 0, 0))
		goto out;
	if (!refused && dav_props_apply(r->dav->props, r->path, c, n) < 0) {
		reply(r, 500, "the properties could not be saved");
		goto out;
	}
	buf_adds(&b, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
		     "<D:multistatus xmlns:D=\"DAV:\"><D:response>");
	dav_href(r->dav, &b, r->path, 0);
	for (op = root->child; op; op = op->next) {
		const struct xnode *prop = xnode_child(op, "DAV:", "prop");
		for (p = prop ? prop->child : NULL; p; p = p->next)
			patch_result(&b, p,
				     !refused		 ? "200 OK"
				     : protected_prop(p) ? "403 Forbidden"
							 : "424 Failed Dependency");
	}
	buf_adds(&b, "</D:response></D:multistatus>\n");
	http_deferred_reply_buf(r->d, 207, DAV_XML_TYPE, &b);
out:
	free(c);
	buf_release(&values);
	buf_release(&b);
	xnode_free(root);
}

/* ---- LOCK, UNLOCK ---- */

/* Timeout: "Second-N" or "Infinite" (the first we understand), capped; absent: the default. */
static long parse_timeout(const char *v)
{
	while (v && *v) {
		while (*v == ' ' || *v == ',')
			v++;
		if (strncasecmp(v, "Infinite", 8) == 0)
			return MAX_TIMEOUT;
		if (strncasecmp(v, "Second-", 7) == 0) {
			long s = strtol(v + 7, NULL, 10);
			if (s > 0)
				return s > MAX_TIMEOUT ? MAX_TIMEOUT : s;
		}
		v = strchr(v, ',');
	}
	return DEFAULT_TIMEOUT;
}

static void reply_lock(struct dav_req *r, const struct dav_lock *k, int status)
{
	struct buf b = BUF_INIT, tok = BUF_INIT;

	buf_adds(&b, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:prop xmlns:D=\"DAV:\">");
	dav_write_lockdiscovery(r->dav, &b, k, 1);
	buf_adds(&b, "</D:prop>\n");
	buf_addf(&tok, "<%s>", k->token);
	http_deferred_header(r->d, "Lock-Token", tok.ptr);
	http_deferred_reply_buf(r->d, status, DAV_XML_TYPE, &b);
	buf_release(&tok);
}

/* A LOCK without a body refreshes the lock the If header names. */
static void refresh_lock(struct dav_req *r, const struct if_header *ifh, long timeout)
{
	struct dav_lock k;
	size_t i;

	memset(&k, 0, sizeof(k));
	for (i = 0; i < ifh->ntokens; i++) {
		if (dav_locks_refresh(r->dav->locks, r->path, ifh->tokens[i], timeout, &k) == 0) {
			reply_lock(r, &k, 200);
			dav_lock_release(&k);
			return;
		}
	}
	reply(r, 412, "no lock of the If header covers the resource");
}

/* The owner element's content as XML, or NULL. */
static char *owner_xml(const struct xnode *info)
{
	const struct xnode *o = xnode_child(info, "DAV:", "owner"), *c;
	struct buf b = BUF_INIT;

	if (!o)
		return NULL;
	dav_xml_escape(&b, o->text.ptr ? o->text.ptr : "", o->text.len);
	for (c = o->child; c; c = c->next)
		xnode_write(&b, c);
	return buf_detach(&b, NULL);
}

static void do_lock(struct dav_req *r, const struct if_header *ifh)
{
	struct syncapi *api = r->dav->api;
	long timeout = parse_timeout(r->timeout);
	struct xnode *root = NULL;
	const struct xnode *scope;
	const char *why = "LOCK takes a DAV:lockinfo body";
	struct dav_lock k;
	struct outcome out;
	struct stat st;
	enum dav_kind kind;
	char *owner = NULL;
	int rc;

	memset(&k, 0, sizeof(k));
	if (!r->body.len) {
		refresh_lock(r, ifh, timeout);
		return;
	}
	root = dav_xml_parse(r->body.ptr, r->body.len, &why);
	scope = root ? xnode_child(xnode_child(root, "DAV:", "lockscope"), "DAV:", "shared") : NULL;
	if (!root || !xnode_is(root, "DAV:", "lockinfo") ||
	    !xnode_child(root, "DAV:", "lockscope") || r->depth == 1) {
		reply(r, 400, r->depth == 1 ? "LOCK takes Depth 0 or infinity" : why);
		goto out;
	}
	kind = dav_fs_stat(api, r->path, &st);
	if (kind == DAV_NONE && !dav_fs_parent_exists(api, r->path)) {
		reply(r, 409, "the parent collection does not exist");
		goto out;
	}
	if (conditions(r, ifh, r->path, 0)) {
		reply(r, 412, "precondition failed");
		goto out;
	}
	if (kind == DAV_NONE && may_write(r, ifh, r->path, 0, 1))
		goto out;
	owner = owner_xml(root);
	rc = dav_locks_add(r->dav->locks, r->path, r->depth == -1, scope != NULL, owner, timeout,
			   &k);
	if (rc) {
		reply_locked(r, r->path);
		goto out;
	}
	/* a lock on an unmapped URL makes an empty resource (RFC 4918 §7.3) */
	if (kind == DAV_NONE) {
		struct buf empty = BUF_INIT;
		if (put_file(r, r->path, &empty, NULL, &out) >= 300) {
			dav_locks_remove(r->dav->locks, r->path, k.token);
			reply(r, out.status, out.error);
			goto out;
		}
	}
	reply_lock(r, &k, kind == DAV_NONE ? 201 : 200);
out:
	dav_lock_release(&k);
	free(owner);
	xnode_free(root);
}

static void do_unlock(struct dav_req *r)
{
	struct buf tok = BUF_INIT;
	const char *v = r->lock_token;

	if (!v || !(v = strchr(v, '<')) || !strchr(v, '>')) {
		reply(r, 400, "UNLOCK takes a Lock-Token header");
		return;
	}
	buf_add(&tok, v + 1, (size_t)(strchr(v, '>') - v - 1));
	if (dav_locks_remove(r->dav->locks, r->path, tok.ptr) == 0)
		reply(r, 204, NULL);
	else
		reply(r, 409, "no such lock on the resource");
	buf_release(&tok);
}

/* ---- the job ---- */

/*
 * The body of a method other than PUT into r->body: an XML body (held to
 * DAV_MAX_BODY before it was queued) the HTTP layer spooled is read here,
 * off the loops. 0, or -1 answered.
 */
static int body_in_memory(struct dav_req *r)
{
	int rc;

	if (r->method == HTTP_PUT || !r->up)
		return 0;
	rc = lseek(r->up->file.fd, 0, SEEK_SET) < 0 ? -1 : read_fd(r->up->file.fd, &r->body);
	syncapi_upload_drop(r->up);
	if (rc < 0) {
		log_error("dav: %s: cannot read the request's body: %s", r->path, strerror(errno));
		reply(r, 500, "cannot read the request's body");
	}
	return rc;
}

void dav_run(struct syncapi *api, struct job *j)
{
	struct dav_req *r = j->ctx;
	struct if_header ifh;
	int claimed = 0;

	if (body_in_memory(r) < 0)
		return;
	memset(&ifh, 0, sizeof(ifh));
	if (r->if_hdr && dav_if_parse(r->if_hdr, &ifh, dav_resolve_url, r->dav) < 0) {
		dav_if_release(&ifh);
		reply(r, 400, "the If header does not parse");
		return;
	}
	/* writes to one path wait for each other; COPY and MOVE claim both of theirs */
	if (r->method != HTTP_GET && r->method != HTTP_HEAD && r->method != HTTP_PROPFIND &&
	    r->method != HTTP_COPY && r->method != HTTP_MOVE && r->method != HTTP_UNLOCK) {
		syncapi_claim(api, r->path, NULL);
		claimed = 1;
	}
	switch (r->method) {
	case HTTP_GET:
	case HTTP_HEAD:
		do_get(r, &ifh);
		break;
	case HTTP_PUT:
		do_put(r, &ifh);
		break;
	case HTTP_DELETE:
		do_delete(r, &ifh);
		break;
	case HTTP_MKCOL:
		do_mkcol(r, &ifh);
		break;
	case HTTP_COPY:
	case HTTP_MOVE:
		do_copy_move(api, r, &ifh);
		break;
	case HTTP_PROPFIND:
		do_propfind(r);
		break;
	case HTTP_PROPPATCH:
		do_proppatch(r, &ifh);
		break;
	case HTTP_LOCK:
		do_lock(r, &ifh);
		break;
	case HTTP_UNLOCK:
		do_unlock(r);
		break;
	default:
		reply(r, 405, "method not allowed");
		break;
	}
	if (claimed)
		syncapi_release(api, r->path, NULL);
	dav_if_release(&ifh);
}
