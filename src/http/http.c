/*
 * http.c: the HTTP/1.1 front on libevent's evhttp.
 *
 * What. Serves the live snapshot: pages and assets from memory, attachments
 * from disk with sendfile, redirects, the themed 404, /healthz and
 * /metrics, and whatever other modules register with
 * http_server_add_handler().
 *
 * How. One event_base and one evhttp per thread. Each loop owns its own
 * listening socket, made here (socket, SO_REUSEPORT, bind, listen) and
 * handed to evhttp_accept_socket_with_handle(), so the kernel balances new
 * connections and loops share no lock on the request path (the snapshot
 * slot's two-instruction mutex aside). A request takes a snapshot
 * reference, looks the decoded path up, and adds the page's bytes to the
 * response with evbuffer_add_reference() holding a page reference that
 * the buffer's cleanup callback drops once libevent has written them: a
 * snapshot published mid-response frees nothing in flight. ETags were
 * computed at load; dates are formatted by hand and cached per loop.
 *
 * evhttp parses requests (keep-alive, pipelining, bodies, limits); the
 * response side is ours (respond.c).
 *
 * Connections. libevent 2.1 has no per-server connection limit nor an
 * accept hook, so the bufferevent callback (evhttp_set_bevcb), which runs
 * once per accepted socket, does the counting: over max_connections it
 * returns a bufferevent pair, which cannot take a socket, so evhttp closes
 * the socket at once. Otherwise the new bufferevent is "adopted" by an
 * event that runs right after evhttp has set the connection up: it finds
 * the evhttp_connection through the bufferevent's callback argument and
 * sets the close callback that gives the slot back, the separate read and
 * write timeouts, and TCP_NODELAY.
 *
 * Stopping. A stop writes a byte to each loop's control pipe; the loop
 * closes its listening socket and its idle connections, answers what is
 * still in flight with "Connection: close", and exits once no response is
 * being written (or when the grace period ends).
 *
 * Rejected:
 * - evthread_use_pthreads() so that loops can wake each other with
 *   event_active(): it puts a lock around every event operation of every
 *   loop; one pipe per loop does the same job for a stop that happens once.
 * - A hand-written HTTP/1.1 parser and connection state machine: evhttp's
 *   parsing costs a few percent in the profile, and its limits, bodies and
 *   pipelining are tested code.
 */
#include "http/http.h"
#include "http/http-int.h"
#include "util/buf.h"
#include "site/hosts.h"
#include "util/log.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h> /* the request's major/minor version */
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#define DEFAULT_MAX_HEADER (8 * 1024)
#define DEFAULT_MAX_URI (4 * 1024)
#define DEFAULT_MAX_BODY (1024 * 1024)
#define DEFAULT_READ_TIMEOUT 15
#define DEFAULT_WRITE_TIMEOUT 30
#define DEFAULT_GRACE 10
#define LISTEN_BACKLOG 4096

/* ---- request parsing ---- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

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
static long decode_target(const char *uri, char *out, const char **query)
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
			int a = hexval(p[1]), b = a < 0 ? -1 : hexval(p[2]);
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

int http_addr_is_loopback(const char *addr)
{
	if (!addr)
		return 0;
	if (strncmp(addr, "127.", 4) == 0 || strcmp(addr, "::1") == 0)
		return 1;
	return strncasecmp(addr, "::ffff:127.", 11) == 0;
}

/* ---- the handler API ---- */

enum http_method http_request_method(const struct http_request *req)
{
	return req->method;
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
	return req->ev ? in_header(req->ev, name) : NULL;
}

const void *http_request_body(struct http_request *req, size_t *len)
{
	struct evbuffer *in = req->ev ? evhttp_request_get_input_buffer(req->ev) : NULL;
	const unsigned char *p;

	*len = in ? evbuffer_get_length(in) : 0;
	if (!*len)
		return "";
	p = evbuffer_pullup(in, -1);
	return p ? (const void *)p : "";
}

size_t http_request_take_body(struct http_request *req, struct buf *out)
{
	struct evbuffer *in = req->ev ? evhttp_request_get_input_buffer(req->ev) : NULL;
	size_t len = in ? evbuffer_get_length(in) : 0;
	ev_ssize_t n;

	buf_reset(out);
	if (!len)
		return 0;
	buf_grow(out, len);
	n = evbuffer_remove(in, out->ptr, len);
	buf_setlen(out, n > 0 ? (size_t)n : 0);
	return out->len;
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
	struct evhttp_connection *con = req->ev ? evhttp_request_get_connection(req->ev) : NULL;
	char *host = NULL;
	ev_uint16_t port = 0;

	if (!con)
		return "";
	evhttp_connection_get_peer(con, &host, &port);
	return host ? host : "";
}

int http_request_peer_is_loopback(const struct http_request *req)
{
	struct evhttp_connection *con = req->ev ? evhttp_request_get_connection(req->ev) : NULL;
	char *host = NULL;
	ev_uint16_t port = 0;

	if (!con)
		return 0;
	evhttp_connection_get_peer(con, &host, &port);
	return http_addr_is_loopback(host);
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

	if (!prefix || prefix[0] != '/' || !fn || srv->ran)
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
		respond_text(r, 500, "Internal Server Error\n");
	}
}

/*
 * A target that decode_target() refused: a raw handler whose prefix starts
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
			respond_text(r, 503, "Service Unavailable: no snapshot published yet\n");
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

static enum http_method map_method(enum evhttp_cmd_type t)
{
	switch (t) {
	case EVHTTP_REQ_GET: return HTTP_GET;
	case EVHTTP_REQ_HEAD: return HTTP_HEAD;
	case EVHTTP_REQ_POST: return HTTP_POST;
	case EVHTTP_REQ_PUT: return HTTP_PUT;
	case EVHTTP_REQ_DELETE: return HTTP_DELETE;
	case EVHTTP_REQ_PATCH: return HTTP_PATCH;
	case EVHTTP_REQ_OPTIONS: return HTTP_OPTIONS;
	default: return HTTP_OTHER;
	}
}

/* Answers 405 or 501 unless the request is a GET or HEAD; returns whether it is. */
static int get_or_head(struct http_request *r)
{
	int known;

	if (r->method == HTTP_GET || r->method == HTTP_HEAD)
		return 1;
	known = strcmp(method_name(evhttp_request_get_command(r->ev)), "-") != 0;
	HDR_CONST(r, "Allow: GET, HEAD\r\n");
	if (known)
		respond_text(r, 405, "Method Not Allowed\n");
	else
		respond_text(r, 501, "Not Implemented\n");
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
	const char *name = in_header(r->ev, "Host"), *target = r->uri;
	char norm[HOST_NAME_MAX_LEN];
	struct page *p;

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
			respond_text(r, 400, "Bad Request\n");
			return 1;
		}
		cache_control(r, 0);
		set_length(r, 0);
		respond(r, 301);
		return 1;
	}
	case HOST_CUSTOM:
		break;
	}
	r->host = host;
	if ((h = find_handler(r->w->srv, r->path, r->path_len)))
		call_handler(r, h);
	else if (!get_or_head(r))
		;
	else if ((p = hosts_page(r->snap, host, r->path, r->path_len)))
		serve_page(r, p);
	else if (host->not_found)
		r->kind = K_NOTFOUND, serve_bytes(r, host->not_found, 404);
	else
		serve_not_found(r);
	return 1;
}

/*
 * evhttp's callback for every request it parsed: checks and decodes the
 * target, strips the URL prefix, then hands the request to a registered
 * handler or serves it from the snapshot (the fast path: one lookup).
 */
static void on_request(struct evhttp_request *ev, void *arg)
{
	struct worker *w = arg;
	struct http_server *srv = w->srv;
	struct http_request r;
	const struct handler *h;
	struct page *p;
	size_t ulen;
	long n;

	memset(&r, 0, sizeof(r));
	buf_reset(&w->hdr);
	r.w = w;
	r.ev = ev;
	r.kind = K_PAGE;
	r.method = map_method(evhttp_request_get_command(ev));
	r.head = r.method == HTTP_HEAD;
	r.uri = evhttp_request_get_uri(ev);
	if (!r.uri) {
		respond_text(&r, 400, "Bad Request\n");
		return;
	}
	ulen = strlen(r.uri);
	if (ulen > srv->max_uri) {
		respond_text(&r, 414, "URI Too Long\n");
		return;
	}
	if (r.uri[0] != '/' && (strncasecmp(r.uri, "http://", 7) == 0 ||
				strncasecmp(r.uri, "https://", 8) == 0)) {
		/* absolute-form (RFC 9112 3.2.2): the path starts after the authority */
		const char *a = strchr(r.uri, ':') + 3;
		a += strcspn(a, "/?");
		r.absolute = 1;
		n = *a == '/' ? decode_target(a, w->scratch, &r.query) : -1;
	} else {
		n = decode_target(r.uri, w->scratch, &r.query);
	}
	if (n < 0) {
		if (!srv->nraw || !dispatch_raw(&r))
			respond_text(&r, 400, "Bad Request\n");
		return;
	}
	r.path = w->scratch;
	r.path_len = (size_t)n;
	r.snap = snapshot_acquire(srv->opt.slot);
	if (r.snap && r.snap->hosts && serve_other_host(&r))
		goto done;
	if (srv->prefix_len) {
		if (r.path_len == srv->prefix_len && memcmp(r.path, srv->prefix, r.path_len) == 0) {
			redirect_to(&r, "/", 1);
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
		respond_text(&r, 503, "Service Unavailable: no snapshot published yet\n");
		return;
	}
	if ((h = find_handler(srv, r.path, r.path_len)))
		call_handler(&r, h);
	else if (!get_or_head(&r))
		;
	else if ((p = snapshot_get(r.snap, r.path, r.path_len)))
		serve_page(&r, p);
	else if ((p = hosts_main_route(r.snap, r.path, r.path_len)))
		serve_page(&r, p);
	else
		serve_miss(&r);
done:
	snapshot_unref(r.snap);
}

/* ---- connections ---- */

void on_complete(struct evhttp_request *ev, void *arg)
{
	struct worker *w = arg;

	w->inflight--;
	if (w->stopping)
		check_stop(w);
}

/* evhttp frees a connection: give its slot back. */
static void on_close(struct evhttp_connection *con, void *arg)
{
	struct conn *c = arg;
	struct worker *w = c->w;
	struct bufferevent *bev = evhttp_connection_get_bufferevent(con);

	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
	atomic_fetch_sub_explicit(&w->srv->nconns, 1, memory_order_relaxed);
	/* evhttp frees the requests still on con: a deferred one is dead */
	for (struct http_deferred *d = w->deferred; d; d = d->next)
		if (d->ev && evhttp_request_get_connection(d->ev) == con)
			d->ev = NULL;
	/* a response cut off mid-write never reaches on_complete */
	if (bev && evbuffer_get_length(bufferevent_get_output(bev)) > 0) {
		w->inflight--;
		if (w->stopping)
			check_stop(w);
	}
}

/* A bufferevent that evhttp cannot attach a socket to: it closes the socket. */
static struct bufferevent *refusing_bev(struct event_base *base)
{
	struct bufferevent *pair[2];

	if (bufferevent_pair_new(base, BEV_OPT_CLOSE_ON_FREE, pair) < 0)
		return NULL;
	bufferevent_free(pair[1]);
	return pair[0];
}

static struct bufferevent *make_bev(struct event_base *base, void *arg)
{
	struct worker *w = arg;
	struct http_server *srv = w->srv;
	struct bufferevent *bev;
	int n = atomic_fetch_add_explicit(&srv->nconns, 1, memory_order_relaxed) + 1;

	if ((srv->opt.max_connections > 0 && n > srv->opt.max_connections) || w->stopping) {
		atomic_fetch_sub_explicit(&srv->nconns, 1, memory_order_relaxed);
		bump(&w->c.refused, 1);
		return refusing_bev(base);
	}
	bev = bufferevent_socket_new(base, -1, 0);
	if (!bev) {
		atomic_fetch_sub_explicit(&srv->nconns, 1, memory_order_relaxed);
		return refusing_bev(base);
	}
	bufferevent_incref(bev);
	ALLOC_GROW(w->pending, w->npending + 1, w->apending);
	w->pending[w->npending++] = bev;
	event_active(w->adopt_ev, EV_TIMEOUT, 0);
	return bev;
}

/*
 * Runs after the accept callback, once evhttp has made each new connection
 * (its bufferevent's callback argument is the evhttp_connection), or not
 * (then the argument is NULL and the slot goes back at once).
 */
static void adopt(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	size_t i;

	for (i = 0; i < w->npending; i++) {
		struct bufferevent *bev = w->pending[i];
		void *con = NULL;
		int one = 1, sfd;

		bufferevent_getcb(bev, NULL, NULL, NULL, &con);
		if (con) {
			struct conn *c = xcalloc(1, sizeof(*c));
			c->w = w;
			c->con = con;
			c->next = w->conns;
			if (w->conns)
				w->conns->prev = c;
			w->conns = c;
			evhttp_connection_set_closecb(con, on_close, c);
			if (bufferevent_set_timeouts(bev, &w->srv->read_tv, &w->srv->write_tv) < 0)
				log_warn("http: cannot set timeouts");
			sfd = bufferevent_getfd(bev);
			if (sfd >= 0 &&
			    setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
				log_debug("http: TCP_NODELAY: %s", strerror(errno));
		} else {
			atomic_fetch_sub_explicit(&w->srv->nconns, 1, memory_order_relaxed);
		}
		(void)bufferevent_decref(bev); /* 1 when it was the last reference */
	}
	w->npending = 0;
}

/* The loop running on this thread (libevent's listener error callback gets the evhttp, not us). */
static _Thread_local struct worker *this_worker;

static void resume_accept(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;

	if (w->bound && !w->stopping)
		if (evconnlistener_enable(evhttp_bound_socket_get_listener(w->bound)) < 0)
			log_error("http: cannot resume accepting");
}

/* accept() failed for a reason other than EAGAIN (EMFILE...): pause, not spin. */
static void accept_error(struct evconnlistener *lev, void *arg)
{
	struct worker *w = this_worker;
	struct timeval tv = { 0, 100 * 1000 };
	int err = errno;
	time_t now = time(NULL);

	if (!w || !w->bound || evhttp_bound_socket_get_listener(w->bound) != lev)
		return;
	if (now - w->accept_warned >= 10) {
		log_warn("http: accept: %s; pausing in steps of 100 ms", strerror(err));
		w->accept_warned = now;
	}
	if (evconnlistener_disable(lev) < 0 || event_add(w->resume_ev, &tv) < 0)
		log_warn("http: cannot schedule accept");
}

/* ---- stopping ---- */

void check_stop(struct worker *w)
{
	struct timeval now;

	if (event_base_gettimeofday_cached(w->base, &now) < 0)
		gettimeofday(&now, NULL);
	if (w->inflight <= 0 || timercmp(&now, &w->deadline, >=))
		if (event_base_loopbreak(w->base) < 0)
			log_error("http: cannot stop loop %d", w->index);
}

static void grace_tick(evutil_socket_t fd, short what, void *arg)
{
	check_stop(arg);
}

static void begin_stop(struct worker *w)
{
	struct timeval now, tick = { 0, 20 * 1000 }, grace = { w->srv->grace_s, 0 };
	struct conn *c, *next;

	if (w->stopping)
		return;
	w->stopping = 1;
	/* first: answering parked requests below runs check_stop(), which reads it */
	gettimeofday(&now, NULL);
	timeradd(&now, &grace, &w->deadline);
	if (w->bound) {
		evhttp_del_accept_socket(w->http, w->bound); /* closes the socket */
		w->bound = NULL;
	}
	adopt(-1, 0, w);
	answer_parked(w);
	/* connections with nothing to write are idle (or mid-request): close them */
	for (c = w->conns; c; c = next) {
		struct bufferevent *bev = evhttp_connection_get_bufferevent(c->con);
		next = c->next;
		if ((!bev || evbuffer_get_length(bufferevent_get_output(bev)) == 0) &&
		    !has_deferred(w, c->con))
			evhttp_connection_free(c->con); /* on_close frees c */
	}
	if (event_add(w->grace_ev, &tick) < 0)
		log_warn("http: cannot arm the stop timer");
	check_stop(w);
}

static void on_control(evutil_socket_t fd, short what, void *arg)
{
	char b[16];

	while (read(fd, b, sizeof(b)) > 0)
		;
	begin_stop(arg);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;

	if (w->log.len)
		flush_log(w);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct http_server *srv = arg;

	if (sig == SIGHUP) {
		log_info("http: SIGHUP: reloading");
		if (srv->opt.on_reload)
			srv->opt.on_reload(srv->opt.reload_ctx);
		return;
	}
	log_info("http: %s: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
	http_server_stop(srv);
}

static void libevent_log(int severity, const char *msg)
{
	if (severity >= EVENT_LOG_ERR)
		log_error("libevent: %s", msg);
	else
		log_debug("libevent: %s", msg);
}

/* ---- setup ---- */

/* "host:port", "[v6]:port", ":port" → a socket address. */
static int resolve(const char *listen, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints, *res = NULL;
	char host[256];
	const char *port, *colon;
	size_t hlen;
	int rc;

	if (listen[0] == '[') {
		const char *end = strchr(listen, ']');
		if (!end || end[1] != ':')
			return log_error("http: bad listen address '%s'", listen);
		hlen = (size_t)(end - listen - 1);
		if (hlen >= sizeof(host))
			return log_error("http: bad listen address '%s'", listen);
		memcpy(host, listen + 1, hlen);
		port = end + 2;
	} else {
		colon = strrchr(listen, ':');
		if (!colon)
			return log_error("http: listen address '%s' has no port", listen);
		hlen = (size_t)(colon - listen);
		if (hlen >= sizeof(host))
			return log_error("http: bad listen address '%s'", listen);
		memcpy(host, listen, hlen);
		port = colon + 1;
	}
	host[hlen] = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(hlen && strcmp(host, "*") ? host : NULL, port, &hints, &res);
	if (rc != 0)
		return log_error("http: %s: %s", listen, gai_strerror(rc));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static int listen_socket(const struct sockaddr_storage *ss, socklen_t len)
{
	int fd, one = 1;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return log_error("http: socket: %s", strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) {
		log_error("http: setsockopt: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
		log_error("http: bind/listen: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int set_port(struct sockaddr_storage *ss, int port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
	else
		return -1;
	return 0;
}

static int bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -1;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -1;
}

static void worker_free(struct worker *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->npending; i++)
		(void)bufferevent_decref(w->pending[i]);
	free(w->pending);
	kill_deferred(w);
	if (w->http)
		evhttp_free(w->http); /* closes the listener and every connection */
	/* answers that came back after the loop stopped */
	if (w->done_lock_init)
		drop_late_answers(w);
	if (w->deferred)
		log_error("http: loop %d freed with deferred requests never answered", w->index);
	if (w->done_ev)
		event_free(w->done_ev);
	if (w->done_pipe[0] >= 0)
		close(w->done_pipe[0]);
	if (w->done_pipe[1] >= 0)
		close(w->done_pipe[1]);
	if (w->done_lock_init)
		pthread_mutex_destroy(&w->done_lock);
	if (w->listen_fd >= 0)
		close(w->listen_fd);
	if (w->ctl_ev)
		event_free(w->ctl_ev);
	if (w->adopt_ev)
		event_free(w->adopt_ev);
	if (w->grace_ev)
		event_free(w->grace_ev);
	if (w->flush_ev)
		event_free(w->flush_ev);
	if (w->resume_ev)
		event_free(w->resume_ev);
	if (w->base)
		event_base_free(w->base);
	if (w->ctl[0] >= 0)
		close(w->ctl[0]);
	if (w->ctl[1] >= 0)
		close(w->ctl[1]);
	if (w->log.len && w->srv->log_fd >= 0)
		flush_log(w);
	buf_release(&w->log);
	buf_release(&w->hdr);
	buf_release(&w->head);
	free(w->scratch);
	free(w);
}

/* A pipe with both ends non-blocking and close-on-exec. 0 or -1 (logged). */
static int nonblocking_pipe(int fds[2])
{
	if (pipe(fds) < 0)
		return log_error("http: pipe: %s", strerror(errno));
	if (fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(fds[1], F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(fds[0], F_SETFD, FD_CLOEXEC) < 0 || fcntl(fds[1], F_SETFD, FD_CLOEXEC) < 0)
		return log_error("http: fcntl: %s", strerror(errno));
	return 0;
}

static struct worker *worker_new(struct http_server *srv, int index, int fd)
{
	struct worker *w = xcalloc(1, sizeof(*w));
	struct event_config *cfg = NULL;
	struct timeval second = { 1, 0 };

	w->srv = srv;
	w->index = index;
	w->listen_fd = fd;
	w->ctl[0] = w->ctl[1] = -1;
	w->done_pipe[0] = w->done_pipe[1] = -1;
	w->scratch = xmalloc(srv->max_uri + 2);
	if (pthread_mutex_init(&w->done_lock, NULL) != 0) {
		log_error("http: cannot create a mutex");
		goto fail;
	}
	w->done_lock_init = 1;
	if (nonblocking_pipe(w->ctl) < 0 || nonblocking_pipe(w->done_pipe) < 0)
		goto fail;
	if (!(cfg = event_config_new()) ||
	    event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST) < 0 ||
	    !(w->base = event_base_new_with_config(cfg))) {
		log_error("http: cannot create an event loop");
		goto fail;
	}
	event_config_free(cfg);
	cfg = NULL;
	w->ctl_ev = event_new(w->base, w->ctl[0], EV_READ | EV_PERSIST, on_control, w);
	w->adopt_ev = event_new(w->base, -1, 0, adopt, w);
	w->grace_ev = event_new(w->base, -1, EV_PERSIST, grace_tick, w);
	w->resume_ev = event_new(w->base, -1, 0, resume_accept, w);
	w->flush_ev = event_new(w->base, -1, EV_PERSIST, on_flush, w);
	w->done_ev = event_new(w->base, w->done_pipe[0], EV_READ | EV_PERSIST, on_done, w);
	if (!w->ctl_ev || !w->adopt_ev || !w->grace_ev || !w->resume_ev || !w->flush_ev ||
	    !w->done_ev || event_add(w->ctl_ev, NULL) < 0 || event_add(w->done_ev, NULL) < 0) {
		log_error("http: cannot create events");
		goto fail;
	}
	if (srv->log_fd >= 0 && event_add(w->flush_ev, &second) < 0) {
		log_error("http: cannot arm the log timer");
		goto fail;
	}
	if (!(w->http = evhttp_new(w->base))) {
		log_error("http: evhttp_new failed");
		goto fail;
	}
	evhttp_set_timeout_tv(w->http, &srv->read_tv);
	evhttp_set_max_headers_size(w->http, (ev_ssize_t)srv->opt.max_header_size);
	evhttp_set_max_body_size(w->http, (ev_ssize_t)srv->opt.max_body_size);
	/* every method reaches on_request, which answers 405 with Allow itself */
	evhttp_set_allowed_methods(w->http, 0xffff);
	evhttp_set_gencb(w->http, on_request, w);
	evhttp_set_bevcb(w->http, make_bev, w);
	if (!(w->bound = evhttp_accept_socket_with_handle(w->http, fd))) {
		log_error("http: cannot accept on the listening socket");
		goto fail;
	}
	w->listen_fd = -1; /* the listener owns it now */
	evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(w->bound), accept_error);
	return w;
fail:
	if (cfg)
		event_config_free(cfg);
	worker_free(w);
	return NULL;
}

struct http_server *http_server_new(const struct http_options *opt)
{
	struct http_server *srv = xcalloc(1, sizeof(*srv));
	struct sockaddr_storage ss;
	struct buf prefix = BUF_INIT;
	socklen_t sslen = 0;
	size_t plen;
	int i, fd;

	srv->log_fd = -1;
	srv->opt = *opt;
	if (!opt->slot) {
		log_error("http: no snapshot slot");
		goto fail;
	}
	srv->listen = xstrdup(opt->listen ? opt->listen : "127.0.0.1:8080");
	srv->opt.listen = srv->listen;
	/* "/docs/" and "docs" mean "/docs"; "" and "/" mean no prefix */
	plen = opt->url_prefix ? strlen(opt->url_prefix) : 0;
	while (plen && opt->url_prefix[plen - 1] == '/')
		plen--;
	if (plen && opt->url_prefix[0] != '/')
		buf_addc(&prefix, '/');
	buf_add(&prefix, opt->url_prefix ? opt->url_prefix : "", plen);
	srv->prefix = buf_detach(&prefix, &srv->prefix_len);
	srv->opt.url_prefix = srv->prefix;
	if (opt->access_log) {
		srv->access_log = xstrdup(opt->access_log);
		srv->opt.access_log = srv->access_log;
		srv->log_fd = open(srv->access_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (srv->log_fd < 0) {
			log_error("http: %s: %s", srv->access_log, strerror(errno));
			goto fail;
		}
	}
	if (!srv->opt.threads)
		srv->opt.threads = 1;
	if (srv->opt.threads < 0 || srv->opt.threads > 256) {
		log_error("http: bad thread count %d", opt->threads);
		goto fail;
	}
	if (!srv->opt.max_header_size)
		srv->opt.max_header_size = DEFAULT_MAX_HEADER;
	if (!srv->opt.max_uri_length)
		srv->opt.max_uri_length = DEFAULT_MAX_URI;
	if (!srv->opt.max_body_size)
		srv->opt.max_body_size = DEFAULT_MAX_BODY;
	srv->max_uri = srv->opt.max_uri_length;
	srv->read_tv.tv_sec = opt->read_timeout_s > 0 ? opt->read_timeout_s : DEFAULT_READ_TIMEOUT;
	srv->write_tv.tv_sec = opt->write_timeout_s > 0 ? opt->write_timeout_s : DEFAULT_WRITE_TIMEOUT;
	srv->grace_s = opt->shutdown_grace_s > 0 ? opt->shutdown_grace_s : DEFAULT_GRACE;
	atomic_init(&srv->nconns, 0);
	srv->started = time(NULL);
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		log_error("http: cannot ignore SIGPIPE");
		goto fail;
	}
	event_set_log_callback(libevent_log);
	if (resolve(srv->listen, &ss, &sslen) < 0)
		goto fail;
	srv->workers = xcalloc((size_t)srv->opt.threads, sizeof(*srv->workers));
	for (i = 0; i < srv->opt.threads; i++) {
		if ((fd = listen_socket(&ss, sslen)) < 0)
			goto fail;
		if (i == 0) {
			srv->port = bound_port(fd);
			if (srv->port <= 0 || set_port(&ss, srv->port) < 0) {
				log_error("http: cannot read the bound port");
				close(fd);
				goto fail;
			}
		}
		if (!(srv->workers[i] = worker_new(srv, i, fd)))
			goto fail;
		srv->nworkers = i + 1;
	}
	if (add_builtin_handlers(srv) < 0)
		goto fail;
	return srv;
fail:
	http_server_free(srv);
	return NULL;
}

int http_server_port(const struct http_server *srv)
{
	return srv->port;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	this_worker = w;
	if (event_base_dispatch(w->base) < 0)
		log_error("http: loop %d failed", w->index);
	return NULL;
}

int http_server_run(struct http_server *srv)
{
	struct event_base *main_base = srv->workers[0]->base;
	int i, rc = 0;

	if (srv->ran)
		return log_error("http: http_server_run called twice");
	srv->ran = 1;
	if (srv->opt.handle_signals) {
		srv->sig_int = evsignal_new(main_base, SIGINT, on_signal, srv);
		srv->sig_term = evsignal_new(main_base, SIGTERM, on_signal, srv);
		srv->sig_hup = evsignal_new(main_base, SIGHUP, on_signal, srv);
		if (!srv->sig_int || !srv->sig_term || !srv->sig_hup ||
		    evsignal_add(srv->sig_int, NULL) < 0 || evsignal_add(srv->sig_term, NULL) < 0 ||
		    evsignal_add(srv->sig_hup, NULL) < 0)
			return log_error("http: cannot install signal handlers");
	}
	for (i = 1; i < srv->nworkers; i++) {
		int err = pthread_create(&srv->workers[i]->thread, NULL, worker_main, srv->workers[i]);
		if (err) {
			log_error("http: pthread_create: %s", strerror(err));
			http_server_stop(srv);
			rc = -1;
			break;
		}
		srv->workers[i]->thread_started = 1;
	}
	this_worker = srv->workers[0];
	if (event_base_dispatch(main_base) < 0) {
		log_error("http: loop 0 failed");
		rc = -1;
	}
	for (i = 1; i < srv->nworkers; i++) {
		if (srv->workers[i]->thread_started) {
			int err = pthread_join(srv->workers[i]->thread, NULL);
			if (err) {
				log_error("http: pthread_join: %s", strerror(err));
				rc = -1;
			}
			srv->workers[i]->thread_started = 0;
		}
	}
	/* every loop has stopped: close what is left on this thread */
	for (i = 0; i < srv->nworkers; i++) {
		struct worker *w = srv->workers[i];
		adopt(-1, 0, w);
		kill_deferred(w);
		if (w->http) {
			evhttp_free(w->http);
			w->http = NULL;
			w->bound = NULL;
		}
		if (w->log.len)
			flush_log(w);
	}
	if ((srv->sig_int && event_del(srv->sig_int) < 0) ||
	    (srv->sig_term && event_del(srv->sig_term) < 0) ||
	    (srv->sig_hup && event_del(srv->sig_hup) < 0))
		log_warn("http: cannot remove the signal handlers");
	return rc;
}

void http_server_stop(struct http_server *srv)
{
	int i;

	for (i = 0; i < srv->nworkers; i++) {
		ssize_t n;
		do
			n = write(srv->workers[i]->ctl[1], "s", 1);
		while (n < 0 && errno == EINTR);
		/* EAGAIN: the pipe is full of stop requests already */
	}
}

void http_server_free(struct http_server *srv)
{
	size_t j;
	int i;

	if (!srv)
		return;
	if (srv->sig_int)
		event_free(srv->sig_int);
	if (srv->sig_term)
		event_free(srv->sig_term);
	if (srv->sig_hup)
		event_free(srv->sig_hup);
	for (i = 0; i < srv->nworkers; i++)
		worker_free(srv->workers[i]);
	free(srv->workers);
	for (j = 0; j < srv->nhandlers; j++)
		free(srv->handlers[j].prefix);
	free(srv->handlers);
	if (srv->log_fd >= 0 && close(srv->log_fd) < 0)
		log_warn("http: %s: %s", srv->access_log, strerror(errno));
	free(srv->listen);
	free(srv->prefix);
	free(srv->access_log);
	free(srv);
}
