/*
 * dav-propfind.c: WebDAV multistatus answers to PROPFIND: the live
 * properties of a file or folder, its dead ones, and lock discovery.
 *
 * Live properties: resourcetype, getetag (files: the quoted SHA-256, as
 * GET and the sync API give it), getcontentlength, getcontenttype,
 * getlastmodified (RFC 1123), creationdate (RFC 3339; the inode's change
 * time: Linux file systems keep no birth time stat() can read everywhere),
 * displayname (the last segment), lockdiscovery and supportedlock. A
 * property asked for and not held gets a 404 propstat.
 *
 * The answer goes out in pieces of about STREAM_PIECE bytes as it is
 * written (http_deferred_stream_*), so a PROPFIND of the whole vault at
 * Depth: infinity never holds the whole document in memory.
 */
#include "sync/syncapi.h"
#include "sync/syncapi-int.h"
#include "sync/dav.h"
#include "sync/dav-int.h"
#include "http/http.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STREAM_PIECE (64 * 1024)

static const char *const live_names[] = {
    "resourcetype", "getetag",	   "getcontentlength", "getcontenttype", "getlastmodified",
    "creationdate", "displayname", "lockdiscovery",    "supportedlock",
};

#define NLIVE (sizeof(live_names) / sizeof(live_names[0]))

void dav_href(const struct dav *dav, struct buf *b, const char *path, int collection)
{
	buf_adds(b, "<D:href>");
	buf_add_urlpath(b, dav->base, strlen(dav->base));
	buf_addc(b, '/');
	buf_add_urlpath(b, path, strlen(path));
	if (collection && path[0])
		buf_addc(b, '/');
	buf_adds(b, "</D:href>");
}

const char *dav_content_type(const char *path)
{
	static const struct {
		const char *ext, *type;
	} types[] = {
	    {".md", "text/markdown; charset=utf-8"},
	    {".txt", "text/plain; charset=utf-8"},
	    {".json", "application/json"},
	    {".css", "text/css"},
	    {".png", "image/png"},
	    {".jpg", "image/jpeg"},
	    {".jpeg", "image/jpeg"},
	    {".gif", "image/gif"},
	    {".svg", "image/svg+xml"},
	    {".webp", "image/webp"},
	    {".pdf", "application/pdf"},
	    {".yml", "text/yaml; charset=utf-8"},
	    {".canvas", "application/json"},
	};
	const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
	size_t i;

	if (dot && (!slash || dot > slash))
		for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			if (strcasecmp(dot, types[i].ext) == 0)
				return types[i].type;
	return "application/octet-stream";
}

void dav_write_lockdiscovery(const struct dav *dav, struct buf *b, const struct dav_lock *v,
			     size_t n)
{
	size_t i;

	buf_adds(b, "<D:lockdiscovery>");
	for (i = 0; i < n; i++) {
		buf_addf(b,
			 "<D:activelock><D:locktype><D:write/></D:locktype>"
			 "<D:lockscope><D:%s/></D:lockscope><D:depth>%s</D:depth>",
			 v[i].shared ? "shared" : "exclusive", v[i].infinite ? "infinity" : "0");
		if (v[i].owner)
			buf_addf(b, "<D:owner>%s</D:owner>", v[i].owner);
		buf_addf(b,
			 "<D:timeout>Second-%ld</D:timeout>"
			 "<D:locktoken><D:href>%s</D:href></D:locktoken>",
			 v[i].timeout, v[i].token);
		buf_adds(b, "<D:lockroot>");
		dav_href(dav, b, v[i].path, 0);
		buf_adds(b, "</D:lockroot>");
		buf_adds(b, "</D:activelock>");
	}
	buf_adds(b, "</D:lockdiscovery>");
}

/* Appends live property name of e (with its value unless names_only); 0 when e has none. */
static int live_prop(struct dav *dav, struct buf *b, const struct dav_entry *e, const char *name,
		     int names_only)
{
	int dir = e->kind == DAV_DIR;
	char date[64];
	struct tm tm;

	if (!dir && strcmp(name, "resourcetype") != 0 && names_only) {
		buf_addf(b, "<D:%s/>", name);
		return 1;
	}
	if (strcmp(name, "resourcetype") == 0) {
		if (names_only)
			buf_adds(b, "<D:resourcetype/>");
		else
			buf_adds(b, dir ? "<D:resourcetype><D:collection/></D:resourcetype>"
					: "<D:resourcetype/>");
	} else if (strcmp(name, "getetag") == 0 || strcmp(name, "getcontentlength") == 0 ||
		   strcmp(name, "getcontenttype") == 0) {
		struct buf tag = BUF_INIT;
		if (dir)
			return 0;
		if (names_only)
			buf_addf(b, "<D:%s/>", name);
		else if (name[3] == 'e' && dav_fs_etag(dav->api, e->path, &tag) == 0)
			buf_addf(b, "<D:getetag>%s</D:getetag>", tag.ptr);
		else if (name[3] == 'e')
			return buf_release(&tag), 0;
		else if (name[10] == 'l')
			buf_addf(b, "<D:getcontentlength>%lld</D:getcontentlength>",
				 (long long)e->st.st_size);
		else
			buf_addf(b, "<D:getcontenttype>%s</D:getcontenttype>",
				 dav_content_type(e->path));
		buf_release(&tag);
	} else if (strcmp(name, "getlastmodified") == 0 || strcmp(name, "creationdate") == 0) {
		int created = name[0] == 'c';
		time_t t = created ? e->st.st_ctime : e->st.st_mtime;
		gmtime_r(&t, &tm);
		strftime(date, sizeof(date),
			 created ? "%Y-%m-%dT%H:%M:%SZ" : "%a, %d %b %Y %H:%M:%S GMT", &tm);
		if (names_only)
			buf_addf(b, "<D:%s/>", name);
		else
			buf_addf(b, "<D:%s>%s</D:%s>", name, date, name);
	} else if (strcmp(name, "displayname") == 0) {
		const char *slash = strrchr(e->path, '/'), *leaf = slash ? slash + 1 : e->path;
		buf_adds(b, "<D:displayname>");
		if (!names_only)
			dav_xml_escape(b, leaf, strlen(leaf));
		buf_adds(b, "</D:displayname>");
	} else if (strcmp(name, "lockdiscovery") == 0) {
		struct dav_lock *v = NULL;
		size_t n = names_only ? 0 : dav_locks_covering(dav->locks, e->path, &v);
		if (names_only)
			buf_adds(b, "<D:lockdiscovery/>");
		else
			dav_write_lockdiscovery(dav, b, v, n);
		dav_locks_list_free(v, n);
	} else if (strcmp(name, "supportedlock") == 0) {
		if (names_only)
			buf_adds(b, "<D:supportedlock/>");
		else
			buf_adds(b, "<D:supportedlock>"
				    "<D:lockentry><D:lockscope><D:exclusive/></D:lockscope>"
				    "<D:locktype><D:write/></D:locktype></D:lockentry>"
				    "<D:lockentry><D:lockscope><D:shared/></D:lockscope>"
				    "<D:locktype><D:write/></D:locktype></D:lockentry>"
				    "</D:supportedlock>");
	} else {
		return 0;
	}
	return 1;
}

/* The dead properties of a resource, copied out of the store. */
struct dead {
	struct buf xml;		  /* the found ones, concatenated */
	const struct xnode *want; /* FIND_PROPS: one wanted property, else NULL: all */
	int names_only, found;
};

static void add_dead(const struct dav_prop *p, void *ctx)
{
	struct dead *d = ctx;

	if (d->want && (strcmp(d->want->ns, p->ns) != 0 || strcmp(d->want->name, p->name) != 0))
		return;
	d->found = 1;
	if (d->names_only) {
		buf_addf(&d->xml, "<%s xmlns=\"", p->name);
		dav_xml_escape(&d->xml, p->ns, strlen(p->ns));
		buf_adds(&d->xml, "\"/>");
	} else {
		buf_adds(&d->xml, p->xml);
	}
}

static void propstat(struct buf *b, const struct buf *props, const char *status)
{
	if (!props->len)
		return;
	buf_adds(b, "<D:propstat><D:prop>");
	buf_add(b, props->ptr, props->len);
	buf_addf(b, "</D:prop><D:status>HTTP/1.1 %s</D:status></D:propstat>", status);
}

/* Appends the <D:response> of e to b. */
static void response(struct dav *dav, struct buf *b, const struct dav_propfind *find,
		     const struct dav_entry *e)
{
	struct buf ok = BUF_INIT, missing = BUF_INIT;
	struct dead dead;
	size_t i;

	memset(&dead, 0, sizeof(dead));
	buf_init(&dead.xml, 0);
	buf_adds(b, "<D:response>");
	dav_href(dav, b, e->path, e->kind == DAV_DIR);
	if (find->mode != FIND_PROPS) {
		for (i = 0; i < NLIVE; i++)
			live_prop(dav, &ok, e, live_names[i], find->mode == FIND_NAMES);
		dead.names_only = find->mode == FIND_NAMES;
		dav_props_each(dav->props, e->path, add_dead, &dead);
		buf_add(&ok, dead.xml.ptr, dead.xml.len);
	} else {
		const struct xnode *p;
		for (p = find->props->child; p; p = p->next) {
			if (strcmp(p->ns, "DAV:") == 0 && live_prop(dav, &ok, e, p->name, 0))
				continue;
			buf_reset(&dead.xml);
			dead.want = p;
			dead.found = 0;
			dav_props_each(dav->props, e->path, add_dead, &dead);
			if (dead.found) {
				buf_add(&ok, dead.xml.ptr, dead.xml.len);
			} else if (strcmp(p->ns, "DAV:") == 0) {
				buf_addf(&missing, "<D:%s/>", p->name);
			} else {
				buf_addf(&missing, "<%s xmlns=\"", p->name);
				dav_xml_escape(&missing, p->ns, strlen(p->ns));
				buf_adds(&missing, "\"/>");
			}
		}
	}
	propstat(b, &ok, "200 OK");
	propstat(b, &missing, "404 Not Found");
	buf_adds(b, "</D:response>\n");
	buf_release(&ok);
	buf_release(&missing);
	buf_release(&dead.xml);
}

/* A stream under way: its buffer, and whether the client is still there. */
struct walk {
	struct dav *dav;
	struct http_deferred *d;
	const struct dav_propfind *find;
	struct buf b;
	int gone;
};

static void emit(struct walk *wk, const struct dav_entry *e)
{
	response(wk->dav, &wk->b, wk->find, e);
	if (wk->b.len >= STREAM_PIECE && http_deferred_stream_write(wk->d, &wk->b) < 0)
		wk->gone = 1;
}

/* The members of the folder path, and with depth -1 all under them, depth first. */
static void walk_members(struct walk *wk, const char *path, int depth)
{
	struct dav_entry *v = NULL;
	size_t i, n = dav_fs_list(wk->dav->api, path, &v, dav_hidden, wk->dav);

	for (i = 0; i < n && !wk->gone; i++) {
		emit(wk, &v[i]);
		if (depth < 0 && v[i].kind == DAV_DIR)
			walk_members(wk, v[i].path, depth);
	}
	dav_fs_list_free(v, n);
}

void dav_propfind_answer(struct dav *dav, struct http_deferred *d, const struct dav_propfind *find,
			 const struct dav_entry *e, int depth)
{
	struct walk wk;

	memset(&wk, 0, sizeof(wk));
	wk.dav = dav;
	wk.d = d;
	wk.find = find;
	buf_init(&wk.b, STREAM_PIECE + 4096);
	http_deferred_stream_start(d, 207, DAV_XML_TYPE);
	buf_adds(&wk.b, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
			"<D:multistatus xmlns:D=\"DAV:\">\n");
	emit(&wk, e);
	if (depth != 0 && e->kind == DAV_DIR && !wk.gone)
		walk_members(&wk, e->path, depth);
	buf_adds(&wk.b, "</D:multistatus>\n");
	if (!wk.gone)
		http_deferred_stream_write(d, &wk.b);
	http_deferred_stream_end(d);
	buf_release(&wk.b);
}
