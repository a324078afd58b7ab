/*
 * request.c: from a parsed request to whoever answers it.
 *
 * conn.c has read the request line, headers and body; http_on_request()
 * checks and decodes the target, refusing (400) what a vault path can
 * never be and what could escape it, strips the URL prefix, picks the
 * site a custom domain asks for (hosts.h), and then hands the request to
 * a registered handler or to the snapshot (static.c), the fast path: one
 * lookup. Targets refused here may still go to a raw handler, so that
 * an API can say what is wrong with them.
 *
 * Also here: the handler table (http_server_add_handler()) and the
 * accessors through which handlers read a request without libevent.
 */
#include "http/http.h"
#include "http/http-int.h"
#include "site/hosts.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>


/* ---- request parsing ---- */

int http_query_param(const char *query, const char *name, struct buf *out)
{
	size_t nlen = strlen(name);
	const char *p = query;

	buf_reset(out);
	while (p && *p) {
		const char *end = strchr(p, '&');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > nlen && strncmp(p, name, nlen) == 0 && p[nlen] == '=') {
			if (buf_add_urldecoded(out, p + nlen + 1, len - nlen - 1, 1) < 0 ||
			    memchr(out->ptr, '\0', out->len))
				return -1;
			return 1;
		}
		p = end ? end + 1 : NULL;
	}
	return 0;
}


/*
 * Decodes the path of a request target into out (room for strlen(uri) + 1
 * bytes) and points *query at the raw query or NULL. Rejects (-1) what a
 * vault path can never be and what could escape it: no leading '/', bad
 * or NUL escapes, control bytes, backslashes, invalid UTF-8, "//", and "."
 * or ".." segments, raw or encoded alike. Returns the decoded length.
 */
long http_decode_target(const char *uri, char *out, const char **query)
{
	const unsigned char *p = (const unsigned char *)uri;
	size_t n = 0, i, seg;
	int high = 0;

	*query = NULL;
	if (*p != '/')
		return -1;
	for (; *p && *p != '?'; p++) {
		unsigned c = *p;
		if (c <= 0x20 || c == 0x7f || c == '#' || c == '\\')
			return -1;
		if (c == '%') {
			int a = hex_value(p[1]), b = a < 0 ? -1 : hex_value(p[2]);
			if (b < 0)
				return -1;
			c = (unsigned)(a * 16 + b);
			p += 2;
			if (c < 0x20 || c == 0x7f || c == '\\')
				return -1;
		}
		if (c >= 0x80)
			high = 1;
		out[n++] = (char)c;
	}
	if (*p == '?') {
		*query = (const char *)p + 1;
		for (p++; *p; p++)
			if (*p <= 0x20 || *p == 0x7f)
				return -1;
	}
	out[n] = '\0';
	if (high && !utf8_valid(out, n))
		return -1;
	/* segments: out[0] == '/' */
	for (i = 0; i < n; i = seg) {
		size_t len;
		seg = i + 1;
		while (seg < n && out[seg] != '/')
			seg++;
		len = seg - i - 1;
		if (len == 0 && seg < n)
			return -1; /* "//" */
		if ((len == 1 && out[i + 1] == '.') ||
		    (len == 2 && out[i + 1] == '.' && out[i + 2] == '.'))
			return -1;
	}
	return (long)n;
}

/*
 * An authority's host and port: [a, a + len) as "host", "host:port" or
 * "[v6]:port". *port is -1 when it has none (or an empty one). 0, or -1
 * when it is no host and port (userinfo, a bad port, an empty host).
 */
static int split_authority(const char *a, size_t len, const char **host, size_t *hlen,
			   long *port)
{
	const char *end = a + len, *colon = NULL, *p;

	*port = -1;
	if (memchr(a, '@', len))
		return -1;
	if (len && a[0] == '[') {
		const char *close = memchr(a, ']', len);
		if (!close)
			return -1;
		colon = close + 1 < end ? close + 1 : NULL;
		if (colon && *colon != ':')
			return -1;
	} else {
		for (p = a; p < end; p++)
			if (*p == ':')
				colon = p;
	}
	*host = a;
	*hlen = colon ? (size_t)(colon - a) : len;
	if (colon && colon + 1 < end) {
		*port = 0;
		for (p = colon + 1; p < end; p++) {
			if (*p < '0' || *p > '9' || *port > 65535)
				return -1;
			*port = *port * 10 + (*p - '0');
		}
		if (*port > 65535)
			return -1;
	}
	/* a trailing dot names the same host */
	if (*hlen > 1 && a[*hlen - 1] == '.')
		(*hlen)--;
	return *hlen ? 0 : -1;
}

int http_same_origin(const char *uri, const char *host)
{
	const char *a, *h1, *h2;
	size_t alen, l1, l2;
	long p1, p2, dport;

	if (strncasecmp(uri, "http://", 7) == 0)
		a = uri + 7, dport = 80;
	else if (strncasecmp(uri, "https://", 8) == 0)
		a = uri + 8, dport = 443;
	else
		return 0;
	alen = strcspn(a, "/?#");
	if (split_authority(a, alen, &h1, &l1, &p1) < 0 ||
	    split_authority(host, strlen(host), &h2, &l2, &p2) < 0)
		return 0;
	if (l1 != l2 || strncasecmp(h1, h2, l1) != 0)
		return 0;
	/*
	 * The scheme is not compared: behind a TLS proxy the request came in
	 * plain while its URLs say https. A port missing from the URI is its
	 * scheme's; one missing from Host is whatever the client's scheme's
	 * default was, 80 or 443: the URI's then must be its own default.
	 */
	if (p1 < 0)
		p1 = dport;
	return p2 >= 0 ? p1 == p2 : p1 == dport;
}

int http_addr_is_loopback(const char *addr)
{
	if (!addr)
		return 0;
	if (strncmp(addr, "127.", 4) == 0 || strcmp(addr, "::1") == 0)
		return 1;
	return strncasecmp(addr, "::ffff:127.", 11) == 0;
}

/* ---- what a handler sees of its request ---- */

enum http_method http_request_method(const struct http_request *req)
{
	return req->method;
}

const char *http_request_method_name(const struct http_request *req)
{
	return req->method_name;
}

const char *http_request_path(const struct http_request *req)
{
	return req->path;
}

const char *http_request_query(const struct http_request *req)
{
	return req->query;
}

const char *http_request_header(const struct http_request *req, const char *name)
{
	return in_header(req, name);
}

const void *http_request_body(struct http_request *req, size_t *len)
{
	struct conn *c = req->c;

	*len = c ? c->body.len : 0;
	return *len ? c->body.ptr : "";
}

size_t http_request_take_body(struct http_request *req, struct buf *out)
{
	struct conn *c = req->c;

	buf_release(out);
	if (!c || !c->body.len)
		return 0;
	*out = c->body; /* moved: no copy */
	buf_init(&c->body, 0);
	return out->len;
}

void http_server_set_body_spool(struct http_server *srv, int dirfd)
{
	srv->spool_fd = dirfd;
}

int http_request_take_body_file(struct http_request *req, struct http_body_file *out)
{
	struct conn *c = req->c;

	if (!c || c->spool_fd < 0)
		return 0;
	out->fd = c->spool_fd;
	memcpy(out->name, c->spool_name, sizeof(out->name));
	out->len = c->body_got;
	hash_sha256_end(c->spool_hash, out->sha256);
	c->spool_hash = NULL;
	c->spool_fd = -1; /* the caller's now */
	return 1;
}

const char *http_request_target(const struct http_request *req)
{
	struct http_request *r = (struct http_request *)req; /* a cache, not state */
	const struct http_server *srv = req->w->srv;
	const char *t;

	if (r->target)
		return r->target;
	t = r->uri ? r->uri : "";
	if (r->absolute) {
		t = strchr(t, ':') + 3;
		t += strcspn(t, "/?");
	}
	if (srv->prefix_len && strncmp(t, srv->prefix, srv->prefix_len) == 0 &&
	    t[srv->prefix_len] == '/')
		t += srv->prefix_len;
	r->target = t;
	return t;
}

const char *http_request_peer(const struct http_request *req)
{
	return req->c ? req->c->peer : "";
}

const char *http_request_url_prefix(const struct http_request *req)
{
	return req->host ? "" : req->w->srv->prefix;
}

double http_request_start_ms(const struct http_request *req)
{
	return req->start_ms;
}

int http_request_peer_trusted(const struct http_request *req)
{
	return req->c && req->c->trusted;
}

int http_request_peer_is_loopback(const struct http_request *req)
{
	return req->c && http_addr_is_loopback(req->c->peer);
}

struct snapshot *http_request_snapshot(const struct http_request *req)
{
	return req->snap;
}

struct snapshot_host *http_request_host(const struct http_request *req)
{
	return req->host;
}

/* ---- handlers ---- */

int http_server_add_handler(struct http_server *srv, const char *prefix,
			    void (*fn)(struct http_request *req, void *ctx), void *ctx)
{
	struct handler *h;

	if (!prefix || prefix[0] != '/' || !fn || (srv->ran && http_server_is_ready(srv)))
		return log_error("http: bad handler registration for %s", prefix ? prefix : "(null)");
	ALLOC_GROW(srv->handlers, srv->nhandlers + 1, srv->ahandlers);
	h = &srv->handlers[srv->nhandlers++];
	h->prefix = xstrdup(prefix);
	h->len = strlen(prefix);
	h->is_prefix = prefix[h->len - 1] == '/';
	h->kind = K_API;
	h->raw = 0;
	h->fn = fn;
	h->ctx = ctx;
	return 0;
}

int http_server_set_handler_kind(struct http_server *srv, const char *prefix,
				 enum http_handler_kind kind)
{
	size_t i;

	for (i = 0; i < srv->nhandlers; i++) {
		if (strcmp(srv->handlers[i].prefix, prefix) != 0)
			continue;
		srv->handlers[i].kind = kind == HTTP_HANDLER_SEARCH ? K_SEARCH
				      : kind == HTTP_HANDLER_DAV  ? K_DAV
								  : K_API;
		return 0;
	}
	return log_error("http: no handler for %s to set the kind of", prefix);
}

int http_server_add_raw_handler(struct http_server *srv, const char *prefix,
				void (*fn)(struct http_request *req, void *ctx), void *ctx)
{
	if (http_server_add_handler(srv, prefix, fn, ctx) < 0)
		return -1;
	srv->handlers[srv->nhandlers - 1].raw = 1;
	srv->nraw++;
	return 0;
}

/* Calls a handler and answers 500 for it when it neither replied nor deferred. */
static void call_handler(struct http_request *r, const struct handler *h)
{
	r->kind = h->kind;
	h->fn(r, h->ctx);
	if (!r->replied) {
		log_error("http: handler for %s did not reply", h->prefix);
		buf_reset(&r->w->hdr);
		http_respond_text(r, 500, "Internal Server Error\n");
	}
}

/*
 * A target that http_decode_target() refused: a raw handler whose prefix starts
 * the raw target gets it, to explain the refusal. Returns 1 when one did.
 */
static int dispatch_raw(struct http_request *r)
{
	const struct http_server *srv = r->w->srv;
	const char *t = r->uri;
	size_t i, len;

	if (r->absolute) {
		t = strchr(t, ':') + 3;
		t += strcspn(t, "/?");
	}
	if (srv->prefix_len) {
		if (strncmp(t, srv->prefix, srv->prefix_len) != 0 || t[srv->prefix_len] != '/')
			return 0; /* outside the URL prefix */
		t += srv->prefix_len;
	}
	if (*t != '/')
		return 0;
	r->target = t;
	len = strcspn(t, "?");
	for (i = 0; i < srv->nhandlers; i++) {
		const struct handler *h = &srv->handlers[i];
		if (!h->raw || !(h->is_prefix ? len >= h->len && memcmp(t, h->prefix, h->len) == 0
					   : len == h->len && memcmp(t, h->prefix, len) == 0))
			continue;
		r->path = NULL;
		r->path_len = 0;
		r->query = t[len] == '?' ? t + len + 1 : NULL;
		r->snap = snapshot_acquire(srv->opt.slot);
		if (!r->snap) {
			HDR_CONST(r, "Retry-After: 1\r\n");
			http_respond_text(r, 503, "Service Unavailable: no snapshot published yet\n");
			return 1;
		}
		call_handler(r, h);
		snapshot_unref(r->snap);
		return 1;
	}
	return 0;
}

static const struct handler *find_handler(const struct http_server *srv, const char *path,
					  size_t len)
{
	size_t i;

	for (i = 0; i < srv->nhandlers; i++) {
		const struct handler *h = &srv->handlers[i];
		if (h->is_prefix ? len >= h->len && memcmp(path, h->prefix, h->len) == 0
				 : len == h->len && memcmp(path, h->prefix, len) == 0)
			return h;
	}
	return NULL;
}

/* ---- dispatch ---- */

/* Answers 405 or 501 unless the request is a GET or HEAD; returns whether it is. */
static int get_or_head(struct http_request *r)
{
	int known;

	if (r->method == HTTP_GET || r->method == HTTP_HEAD)
		return 1;
	known = r->method_name != NULL;
	HDR_CONST(r, "Allow: GET, HEAD\r\n");
	if (known)
		http_respond_text(r, 405, "Method Not Allowed\n");
	else
		http_respond_text(r, 501, "Not Implemented\n");
	return 0;
}

/*
 * A request for a host other than the main site's (hosts.h): served from
 * that host's pages, or redirected from www. to the bare host. Returns 0
 * when the main site should answer.
 */
static int serve_other_host(struct http_request *r)
{
	struct snapshot_host *host;
	const struct handler *h;
	const char *name = in_header(r, "Host"), *target = r->uri;
	char norm[HOST_NAME_MAX_LEN];

	if (r->absolute) {
		/* absolute-form: its authority is the host (RFC 9112 3.2.2) */
		name = strchr(r->uri, ':') + 3;
		target = name + strcspn(name, "/?");
	}
	host_from_header(name, norm);
	switch (hosts_find(r->snap, norm, &host)) {
	case HOST_MAIN:
		return 0;
	case HOST_WWW: {
		struct buf *hd = &r->w->hdr;
		r->kind = K_REDIRECT;
		buf_adds(hd, "Location: ");
		buf_adds(hd, host ? host->origin : r->snap->hosts->main_origin);
		buf_adds(hd, *target == '/' ? target : "/");
		buf_add(hd, "\r\n", 2);
		if (strpbrk(target, "\r\n")) {
			buf_reset(hd);
			http_respond_text(r, 400, "Bad Request\n");
			return 1;
		}
		http_cache_control(r, 0);
		http_set_length(r, 0);
		http_respond(r, 301);
		return 1;
	}
	case HOST_CUSTOM:
		break;
	}
	r->host = host;
	if ((h = find_handler(r->w->srv, r->path, r->path_len)))
		call_handler(r, h);
	else
		http_serve_snapshot(r);
	return 1;
}

void http_serve_snapshot(struct http_request *r)
{
	struct snapshot_host *host = r->host;
	struct page *p;

	if (!get_or_head(r))
		return;
	if (host) {
		if ((p = hosts_page(r->snap, host, r->path, r->path_len))) {
			r->host_own = map_get(&host->pages, r->path, r->path_len) == p;
			serve_page(r, p);
		} else if (host->not_found) {
			r->kind = K_NOTFOUND;
			serve_bytes(r, host->not_found, 404);
		} else {
			serve_not_found(r);
		}
	} else if ((p = snapshot_get(r->snap, r->path, r->path_len)) ||
		   (p = hosts_main_route(r->snap, r->path, r->path_len))) {
		serve_page(r, p);
	} else {
		serve_miss(r);
	}
}

/* RFC 9110's tchar: what a header name is made of. */
static int is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/*
 * Why the request's framing is not what RFC 9112 allows, or NULL. llhttp
 * refuses each of these already (parse.c); they are checked again on the
 * parsed head, since a proxy in front that read a body's bounds
 * differently from us would have the difference run as a second request
 * (smuggling). Such a request is answered 400 and its connection closed,
 * so that whatever follows is never parsed.
 */
const char *http_framing_error(const struct reqparse *rp)
{
	const char *cl = NULL;
	unsigned i;
	int te = 0, minor;

	for (i = 0; i < rp->nh; i++) {
		const char *k = rp->base + rp->h[i].name, *v = rp->base + rp->h[i].value;
		const unsigned char *u = (const unsigned char *)k;
		if (!*u)
			return "empty header name";
		for (; *u; u++)
			if (!is_tchar(*u))
				return "bad character in a header name (whitespace before the colon?)";
		if (strcasecmp(k, "Content-Length") == 0) {
			if (!all_digits(v))
				return "Content-Length is not a number";
			if (cl && strcmp(cl, v) != 0)
				return "conflicting Content-Length headers";
			cl = v;
		} else if (strcasecmp(k, "Transfer-Encoding") == 0) {
			if (te++)
				return "more than one Transfer-Encoding header";
			if (strcasecmp(v, "chunked") != 0)
				return "the only transfer coding accepted is chunked";
		}
	}
	if (te && cl)
		return "both Transfer-Encoding and Content-Length";
	if (te && reqparse_version(rp, &minor) == 1 && minor == 0)
		return "Transfer-Encoding in an HTTP/1.0 request";
	return NULL;
}

const char *http_host_error(const char *const *values, size_t n)
{
	const unsigned char *v;

	/* two could name two sites: a proxy in front may route by one, we by the other */
	if (n > 1)
		return "more than one Host header";
	if (n == 0)
		return NULL;
	/* uri-host [":" port]: a reg-name, an IPv4 address or [an IPv6 one] (RFC 3986) */
	for (v = (const unsigned char *)values[0]; *v; v++)
		if (!((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') ||
		      (*v >= '0' && *v <= '9') || strchr("-._~%!$&'()*+,;=:[]", *v)))
			return "a Host header that is not a host and port";
	return NULL;
}

/* The Host header lines of rp (the first two at most) into values; returns how many. */
static size_t host_values(const struct reqparse *rp, const char *values[2])
{
	unsigned i;
	size_t n = 0;

	for (i = 0; i < rp->nh && n < 2; i++)
		if (strcasecmp(rp->base + rp->h[i].name, "Host") == 0)
			values[n++] = rp->base + rp->h[i].value;
	return n;
}

/* A request as far as it was read, for answering it: its method and version. */
static void request_init(struct http_request *r, struct conn *c)
{
	memset(r, 0, sizeof(*r));
	r->start_ms = c->now; /* the read that completed it */
	buf_reset(&c->w->hdr);
	r->w = c->w;
	r->c = c;
	/* refused until a handler, a page or a miss answers (each sets its kind) */
	r->kind = K_ERROR;
	r->method = c->rp.head_seen || c->state == C_BUSY
			    ? http_methods_of(reqparse_method(&c->rp), &r->method_name)
			    : HTTP_OTHER;
	r->head = r->method == HTTP_HEAD;
	r->major = reqparse_version(&c->rp, &r->minor);
	r->out_fd = -1;
}

void http_refuse(struct conn *c, int status, const char *why)
{
	struct http_request r;
	char text[200];

	request_init(&r, c);
	if (!c->rp.head_seen) {
		/* the head was not read whole: none of it is known */
		r.method = HTTP_OTHER;
		r.method_name = NULL;
		r.head = 0;
		r.major = r.minor = 1;
	} else {
		r.uri = c->rp.base + c->rp.url;
	}
	r.close = 1;
	if (status == 501)
		HDR_CONST(&r, "Allow: GET, HEAD\r\n");
	snprintf(text, sizeof(text), "%s%s%s\n", http_reason(status), why ? ": " : "",
		 why ? why : "");
	http_respond_text(&r, status, text);
}

/*
 * A request conn.c read whole: checks and decodes the target, strips the
 * URL prefix, then hands the request to a registered handler or serves
 * it from the snapshot (the fast path: one lookup).
 */
void http_on_request(struct conn *c)
{
	struct worker *w = c->w;
	struct http_server *srv = w->srv;
	struct http_request r;
	const struct handler *h;
	const char *why, *hosts[2];
	size_t ulen;
	long n;

	request_init(&r, c);
	r.uri = c->rp.base + c->rp.url;
	if (!c->rp.url_len) {
		http_respond_text(&r, 400, "Bad Request\n");
		return;
	}
	if ((why = http_framing_error(&c->rp)) ||
	    (why = http_host_error(hosts, host_values(&c->rp, hosts)))) {
		char text[160];
		snprintf(text, sizeof(text), "Bad Request: %s\n", why);
		r.close = 1;
		http_respond_text(&r, 400, text);
		return;
	}
	ulen = strlen(r.uri);
	if (ulen > srv->max_uri) {
		http_respond_text(&r, 414, "URI Too Long\n");
		return;
	}
	if (r.uri[0] != '/' && (strncasecmp(r.uri, "http://", 7) == 0 ||
				strncasecmp(r.uri, "https://", 8) == 0)) {
		/* absolute-form (RFC 9112 3.2.2): the path starts after the authority */
		const char *a = strchr(r.uri, ':') + 3;
		a += strcspn(a, "/?");
		r.absolute = 1;
		n = *a == '/' ? http_decode_target(a, w->scratch, &r.query) : -1;
	} else {
		n = http_decode_target(r.uri, w->scratch, &r.query);
	}
	if (!http_server_is_ready(srv)) {
		r.path = n < 0 ? NULL : w->scratch;
		http_answer_loading(&r);
		return;
	}
	if (n < 0) {
		if (!srv->nraw || !dispatch_raw(&r))
			http_respond_text(&r, 400, "Bad Request\n");
		return;
	}
	r.path = w->scratch;
	r.path_len = (size_t)n;
	r.snap = snapshot_acquire(srv->opt.slot);
	if (r.snap && r.snap->hosts && serve_other_host(&r))
		goto done;
	if (srv->prefix_len) {
		if (r.path_len == srv->prefix_len && memcmp(r.path, srv->prefix, r.path_len) == 0) {
			http_redirect_to(&r, "/", 1);
			goto done;
		}
		if (r.path_len < srv->prefix_len + 1 ||
		    memcmp(r.path, srv->prefix, srv->prefix_len) != 0 ||
		    r.path[srv->prefix_len] != '/') {
			serve_not_found(&r);
			goto done;
		}
		r.path += srv->prefix_len;
		r.path_len -= srv->prefix_len;
	}
	if (!r.snap) {
		HDR_CONST(&r, "Retry-After: 1\r\n");
		http_respond_text(&r, 503, "Service Unavailable: no snapshot published yet\n");
		return;
	}
	if ((h = find_handler(srv, r.path, r.path_len)))
		call_handler(&r, h);
	else
		http_serve_snapshot(&r);
done:
	snapshot_unref(r.snap);
}
