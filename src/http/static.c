/*
 * static.c: answering from the snapshot.
 *
 * What. Pages and assets from memory, gzip or identity after the client's
 * Accept-Encoding, with 304 for If-None-Match and If-Modified-Since;
 * attachments from disk with sendfile, with single byte ranges (Range,
 * If-Range, 416); redirects, the themed 404, and the 301 between "/x" and
 * "/x/" when only the other one exists.
 *
 * How. Everything was rendered, compressed and hashed when the snapshot
 * was built: serving is choosing the representation, writing its headers
 * and adding its bytes to the response with evbuffer_add_reference(),
 * holding a page reference that the buffer's cleanup callback drops once
 * libevent has written them, so a snapshot published mid-response frees
 * nothing in flight.
 *
 * Rejected:
 * - Caching open attachment descriptors: a file can change under a
 *   snapshot; opening per request (with O_NOFOLLOW) is what lets a changed
 *   or swapped file be refused.
 * - Multiple ranges (multipart/byteranges): RFC 9110 lets a server answer
 *   them with the whole representation, which is what they get.
 */
#include "http/http.h"
#include "http/http-int.h"
#include "http/purge.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>


/* A qvalue in thousandths; invalid gives 0 (not acceptable). */
static int parse_qvalue(const char *p)
{
	int q, scale = 100;

	if (*p == '0')
		q = 0;
	else if (*p == '1')
		q = 1000;
	else
		return 0;
	p++;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9' && scale; p++, scale /= 10)
			q += (*p - '0') * scale;
	}
	return q > 1000 ? 1000 : q;
}

static int is_ows(int c)
{
	return c == ' ' || c == '\t';
}

/*
 * True when the Accept-Encoding value lets us send gzip and does not
 * prefer identity: "gzip", "x-gzip" and "*" with q > 0; "gzip;q=0" and
 * "*;q=0" (with gzip unlisted) refuse it. Identity is never refused in
 * practice: with gzip refused too, identity is what a client gets.
 */
int http_accepts_gzip(const char *ae)
{
	int q_gzip = -1, q_star = -1, q_id = -1;
	const char *p = ae;

	while (*p) {
		const char *name;
		size_t len;
		int q = 1000;

		while (*p == ',' || is_ows(*p))
			p++;
		if (!*p)
			break;
		name = p;
		while (*p && *p != ',' && *p != ';' && !is_ows(*p))
			p++;
		len = (size_t)(p - name);
		while (is_ows(*p))
			p++;
		while (*p == ';') {
			p++;
			while (is_ows(*p))
				p++;
			if ((*p == 'q' || *p == 'Q') && p[1] == '=') {
				p += 2;
				q = parse_qvalue(p);
			}
			while (*p && *p != ',' && *p != ';')
				p++;
		}
		while (*p && *p != ',')
			p++;
		if ((len == 4 && strncasecmp(name, "gzip", 4) == 0) ||
		    (len == 6 && strncasecmp(name, "x-gzip", 6) == 0))
			q_gzip = q;
		else if (len == 1 && *name == '*')
			q_star = q;
		else if (len == 8 && strncasecmp(name, "identity", 8) == 0)
			q_id = q;
	}
	if (q_gzip < 0)
		q_gzip = q_star < 0 ? 0 : q_star;
	if (q_gzip == 0)
		return 0;
	return q_id < 0 || q_gzip >= q_id;
}

/*
 * If-None-Match: true when list ("*", or entity-tags separated by commas)
 * matches etag under the weak comparison (W/"x" matches "x").
 */
static int etag_list_match(const char *list, const char *etag)
{
	size_t elen = strlen(etag);
	const char *p = list;

	for (;;) {
		const char *q;

		while (*p == ',' || is_ows(*p))
			p++;
		if (!*p)
			return 0;
		if (*p == '*')
			return 1;
		if (p[0] == 'W' && p[1] == '/')
			p += 2;
		if (*p != '"') {
			while (*p && *p != ',')
				p++;
			continue;
		}
		q = strchr(p + 1, '"');
		if (!q)
			return 0;
		if ((size_t)(q + 1 - p) == elen && memcmp(p, etag, elen) == 0)
			return 1;
		p = q + 1;
	}
}

/* True when a conditional GET/HEAD should be answered with 304. */
int http_not_modified(const struct http_request *r, const char *etag, time_t mtime)
{
	const char *inm = in_header(r, "If-None-Match"), *ims;
	time_t t;

	if (inm)
		return etag[0] && etag_list_match(inm, etag);
	ims = in_header(r, "If-Modified-Since");
	return ims && mtime > 0 && http_parse_http_date(ims, &t) == 0 && mtime <= t;
}

/* If-Range: a strong ETag that matches exactly, or the exact Last-Modified date. */
int http_if_range_ok(const char *v, const char *etag, time_t mtime)
{
	size_t elen = strlen(etag), n;
	time_t t;

	while (is_ows(*v))
		v++;
	if (*v == '"') {
		n = strlen(v);
		while (n && is_ows(v[n - 1]))
			n--;
		return etag[0] && n == elen && memcmp(v, etag, elen) == 0;
	}
	if (v[0] == 'W' && v[1] == '/')
		return 0;
	return mtime > 0 && http_parse_http_date(v, &t) == 0 && t == mtime;
}

static int parse_pos(const char **p, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0;

	while (**p >= '0' && **p <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			v = UINT64_MAX / 10; /* saturate: bigger than any file */
		else
			v = v * 10 + (uint64_t)(**p - '0');
		(*p)++;
		n++;
	}
	*out = v;
	return n ? 0 : -1;
}

/*
 * Range: a single "bytes=a-b", "a-" or "-n" range. Returns 1 with the
 * range in *off and *len, 0 when the header is to be ignored (syntax we do
 * not serve, multiple ranges: RFC 9110 lets a server answer those with the
 * whole representation), -1 when it cannot be satisfied (416).
 */
int http_parse_range(const char *s, uint64_t size, uint64_t *off, uint64_t *len)
{
	uint64_t a, b = 0;
	int has_b = 0;

	while (is_ows(*s))
		s++;
	if (strncasecmp(s, "bytes", 5) != 0)
		return 0;
	s += 5;
	while (is_ows(*s))
		s++;
	if (*s++ != '=')
		return 0;
	while (is_ows(*s))
		s++;
	if (strchr(s, ','))
		return 0;
	if (*s == '-') {
		s++;
		if (parse_pos(&s, &a) < 0)
			return 0;
		while (is_ows(*s))
			s++;
		if (*s)
			return 0;
		if (a == 0 || size == 0)
			return -1;
		if (a > size)
			a = size;
		*off = size - a;
		*len = a;
		return 1;
	}
	if (parse_pos(&s, &a) < 0 || *s++ != '-')
		return 0;
	if (*s >= '0' && *s <= '9') {
		if (parse_pos(&s, &b) < 0)
			return 0;
		has_b = 1;
	}
	while (is_ows(*s))
		s++;
	if (*s || (has_b && b < a))
		return 0;
	if (a >= size)
		return -1;
	if (!has_b || b > size - 1)
		b = size - 1;
	*off = a;
	*len = b - a + 1;
	return 1;
}

static void unref_page(const void *data, size_t len, void *arg)
{
	page_unref(arg);
}

void http_cache_control(struct http_request *r, int immutable)
{
	if (immutable) {
		HDR_CONST(r, "Cache-Control: public, max-age=31536000, immutable\r\n");
		return;
	}
	if (r->snap && r->snap->cache_control)
		buf_adds(&r->w->hdr, r->snap->cache_control);
	else
		HDR_CONST(r, "Cache-Control: no-cache\r\n");
	/* what a cache in front may be told to purge this response by (purge.h) */
	if (r->snap)
		purge_add_header(&r->w->hdr, r->host ? r->host->name : NULL, r->host_own, r->path,
				 r->path_len, r->kind == K_PAGE, r->kind == K_NOTFOUND, r->tags);
}

/* The server's line for the pages a reader reads (http_server_add_page_header()). */
static void page_header(struct http_request *r, const struct page *p)
{
	const char *line = r->w->srv->page_header;

	if (line && (p->kind == PAGE_NOTE || p->kind == PAGE_GENERATED) &&
	    strncmp(p->content_type, "text/html", 9) == 0)
		buf_adds(&r->w->hdr, line);
}

/*
 * Sends a page that lives in memory: gzip or identity after the client's
 * Accept-Encoding, 304 for conditional requests when status is 200.
 */
void serve_bytes(struct http_request *r, struct page *p, int status)
{
	const char *ae, *etag = p->etag, *body = p->body;
	size_t len = p->body_len;
	int gz = 0;

	r->tags = p->tags;
	if (p->gz && (ae = in_header(r, "Accept-Encoding")) && http_accepts_gzip(ae)) {
		gz = 1;
		etag = p->gz_etag;
		body = p->gz;
		len = p->gz_len;
	}
	if (status == 200 && http_not_modified(r, etag, p->mtime)) {
		http_hdr(r, "ETag", etag);
		http_cache_control(r, p->immutable);
		page_header(r, p);
		if (p->gz)
			HDR_CONST(r, "Vary: Accept-Encoding\r\n");
		http_respond(r, 304);
		return;
	}
	http_hdr(r, "Content-Type", p->content_type);
	http_set_length(r, len);
	if (status == 200) {
		http_hdr(r, "ETag", etag);
		if (p->mtime > 0)
			http_hdr(r, "Last-Modified", http_last_modified(r->w, p->mtime));
	}
	http_cache_control(r, p->immutable && status == 200);
	page_header(r, p);
	if (p->gz)
		HDR_CONST(r, "Vary: Accept-Encoding\r\n");
	if (gz)
		HDR_CONST(r, "Content-Encoding: gzip\r\n");
	if (!r->head && len > 0 && !body) {
		/* only gzip is kept (page_keep_identity): inflated for this client */
		const char *bytes = page_bytes(p);
		if (bytes)
			http_set_body(r, bytes, len, NULL, NULL); /* copied as it is sent */
		else
			log_warn("http: cannot inflate %s", p->path);
	} else if (!r->head && len > 0) {
		/* by reference: the page outlives a snapshot published mid-write */
		http_set_body(r, body, len, unref_page, page_ref(p));
	}
	http_respond(r, status);
}

void serve_not_found(struct http_request *r)
{
	r->kind = K_NOTFOUND;
	if (r->snap && r->snap->not_found)
		serve_bytes(r, r->snap->not_found, 404);
	else
		http_respond_text(r, 404, "Not Found\n");
}

/* 301 to prefix + path (decoded, encoded here) + the query, if any. */
void http_redirect_to(struct http_request *r, const char *path, size_t len)
{
	struct buf *h = &r->w->hdr;

	r->kind = K_REDIRECT;
	buf_add(h, "Location: ", 10);
	buf_add_urlpath(h, r->w->srv->prefix, r->w->srv->prefix_len);
	buf_add_urlpath(h, path, len);
	if (r->query) {
		buf_addc(h, '?');
		buf_adds(h, r->query);
	}
	buf_add(h, "\r\n", 2);
	http_cache_control(r, 0);
	http_set_length(r, 0);
	http_respond(r, 301);
}

/* A type a browser opens as a document that may run script: it gets CSP sandbox. */
static int runs_as_document(const char *type)
{
	static const char *const kinds[] = { "text/html", "application/xhtml", "image/svg",
					     "text/xml", "application/xml", "text/xsl" };
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strncasecmp(type, kinds[i], strlen(kinds[i])) == 0)
			return 1;
	return 0;
}

/*
 * An attachment: opened at request time without following a symlink in the
 * last component, and sent only when it is still the regular file of the
 * size the snapshot recorded. The body goes out with sendfile.
 */
static void serve_file(struct http_request *r, struct page *p)
{
	const char *range, *ir;
	uint64_t off = 0, len, size;
	struct stat st;
	char num[24], cr[80];
	int fd, status = 200, rc;

	r->kind = K_FILE;
	r->sandbox = runs_as_document(p->content_type);
	fd = open(p->file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		log_warn("http: %s: %s: %s", p->path, p->file, strerror(errno));
		serve_not_found(r);
		return;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != p->file_size) {
		log_warn("http: %s: %s changed since the snapshot; not serving it", p->path, p->file);
		close(fd);
		serve_not_found(r);
		return;
	}
	size = (uint64_t)st.st_size;
	len = size;
	if (http_not_modified(r, p->etag, p->mtime)) {
		close(fd);
		http_hdr(r, "ETag", p->etag);
		http_cache_control(r, p->immutable);
		http_respond(r, 304);
		return;
	}
	http_hdr(r, "Content-Type", p->content_type);
	HDR_CONST(r, "Accept-Ranges: bytes\r\n");
	http_hdr(r, "ETag", p->etag);
	if (p->mtime > 0)
		http_hdr(r, "Last-Modified", http_last_modified(r->w, p->mtime));
	http_cache_control(r, p->immutable);
	range = in_header(r, "Range");
	ir = in_header(r, "If-Range");
	if (range && (!ir || http_if_range_ok(ir, p->etag, p->mtime))) {
		rc = http_parse_range(range, size, &off, &len);
		if (rc < 0) {
			close(fd);
			snprintf(cr, sizeof(cr), "bytes */%s", http_fmt_u64(num, size));
			http_hdr(r, "Content-Range", cr);
			http_set_length(r, 0);
			http_respond(r, 416);
			return;
		}
		if (rc > 0) {
			status = 206;
			snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)off,
				 (unsigned long long)(off + len - 1), (unsigned long long)size);
			http_hdr(r, "Content-Range", cr);
		} else {
			off = 0;
			len = size;
		}
	}
	if (r->head || len == 0) {
		close(fd);
	} else {
		/* sent with sendfile after the head (http_conn_send()), and closed then */
		r->out_fd = fd;
		r->out_off = off;
		r->out_len = len;
	}
	http_set_length(r, len);
	http_respond(r, status);
}

void serve_page(struct http_request *r, struct page *p)
{
	switch (p->kind) {
	case PAGE_NOTE:
	case PAGE_GENERATED:
		r->kind = K_PAGE;
		serve_bytes(r, p, 200);
		break;
	case PAGE_ASSET:
		r->kind = K_ASSET;
		serve_bytes(r, p, 200);
		break;
	case PAGE_FILE:
		serve_file(r, p);
		break;
	case PAGE_REDIRECT:
		r->kind = K_REDIRECT;
		if (!p->location || strpbrk(p->location, "\r\n")) {
			log_error("http: %s: bad redirect location", p->path);
			http_respond_text(r, 500, "Internal Server Error\n");
			break;
		}
		http_hdr(r, "Location", p->location);
		http_cache_control(r, 0);
		http_set_length(r, 0);
		http_respond(r, 301);
		break;
	case PAGE_NOT_FOUND:
	default:
		r->kind = K_NOTFOUND;
		serve_bytes(r, p, 404);
		break;
	}
}

/* The page at path (len bytes, room for one more) or at its other slash form, or NULL. */
static struct page *slash_variant(struct http_request *r, char *path, size_t len)
{
	struct page *alt;

	if (len > 1 && path[len - 1] == '/') {
		alt = snapshot_get(r->snap, path, len - 1);
	} else {
		path[len] = '/';
		alt = snapshot_get(r->snap, path, len + 1);
		path[len] = '\0';
	}
	return alt && alt->kind != PAGE_NOT_FOUND ? alt : NULL;
}

/*
 * A miss. "/x/" that exists as "/x" (or the other way round) is a 301;
 * so is a path that exists in lowercase, with or without its slash (note
 * URLs are lowercase; "/En/Home" finds "/en/home", as Obsidian Publish
 * answers). Only misses pay for the lowercasing.
 */
void serve_miss(struct http_request *r)
{
	struct page *alt = slash_variant(r, r->path, r->path_len); /* the scratch has room */
	char *low = NULL;
	size_t len;

	if (!alt && (low = utf8_lower(r->path, r->path_len)) &&
	    ((len = strlen(low)) != r->path_len || memcmp(low, r->path, len) != 0)) {
		low = xrealloc(low, len + 2);
		alt = snapshot_get(r->snap, low, len);
		if (!alt || alt->kind == PAGE_NOT_FOUND)
			alt = slash_variant(r, low, len);
	}
	if (alt)
		http_redirect_to(r, alt->path, alt->path_len); /* the snapshot's bytes */
	else
		serve_not_found(r);
	free(low);
}
