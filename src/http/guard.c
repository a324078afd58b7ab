/*
 * guard.c: what keeps a few clients from holding the server.
 *
 * Two limits, both on connections evhttp has already made (adopt() in
 * http.c), and a way in at the total cap: a cap on the connections one
 * client address may hold, so that thousands of connections from a few
 * addresses leave room for everyone else; and a minimum rate for a request being received, so that a
 * client sending a header byte a second (slowloris) cannot keep its
 * connections for ever: evhttp's read timeout restarts with every byte.
 *
 * A request's progress is read from the kernel, not from evhttp (whose
 * parser state is private): TCP_INFO's bytes received and bytes the
 * client acknowledged, once a second. A connection whose acknowledged
 * bytes grew has had an answer: no request is in progress. One that
 * received bytes with none in progress has begun a request, at the
 * latest at the last sweep. A request in progress for slow_after_s
 * seconds that brought less than min_rate bytes a second on average is
 * closed, unless a handler holds it (a long poll) or its answer is still
 * being written. An idle connection (nothing received) is left to the
 * read timeout.
 *
 * Bodies are sized before they are read. libevent reads a request's whole
 * body into memory before any handler runs, up to one limit for every
 * request: with the sync API on, 64 MB that anyone could send to any URL
 * without a token. Its input buffer tells us of new bytes before its
 * parser reads them (an evbuffer callback); when they start a request
 * head that is complete, the head is read here (method, target,
 * Authorization) and the connection's body limit set for that request:
 * what the body policy allows (the sync API: its upload limit with the
 * right token, nothing without), else small_body_size. libevent then
 * refuses a larger body with 413 and closes the connection unread.
 *
 * At max_connections a new client is let in by closing the oldest idle
 * connection of the loop that accepted it (http_guard_evictable(), called
 * from http.c's make_bev()): else idle clients holding every slot, each
 * address under its share, would lock every new one out. Idle is no
 * request in progress: a connection joins its loop's idle list (oldest
 * first) when adopted with nothing received and when its output drains
 * with nothing waiting in its input, and leaves it when bytes arrive; one
 * a handler still owes an answer (a stream between two writes) is skipped.
 * IPv6 clients count per /64 against the share (http_client_key()).
 *
 * Rejected: a deadline on the headers alone (nginx's
 * client_header_timeout): it needs the parser's state, which libevent
 * keeps to itself; the rate covers headers and bodies alike, and a body
 * that arrives at a useful speed is never cut.
 */
#include <linux/tcp.h> /* struct tcp_info with its byte counts; not with <netinet/tcp.h> */

#include "http/http.h"
#include "http/http-int.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>

#define DEFAULT_MIN_RATE 256.0
#define DEFAULT_SLOW_AFTER 10
#define MIN_PER_ADDRESS 16

struct addr_count {
	char addr[48];            /* the map's key */
	int n;
};

/* The socket's bytes received and acknowledged by the client. 0, or -1. */
static int tcp_bytes(int fd, uint64_t *rx, uint64_t *tx)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
	    len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
		return -1;
	*rx = ti.tcpi_bytes_received;
	*tx = ti.tcpi_bytes_acked;
	return 0;
}

void http_guard_init(struct http_server *srv)
{
	const struct http_options *o = &srv->opt;

	if (o->max_per_address > 0)
		srv->per_address = o->max_per_address;
	else if (o->max_per_address == 0 && o->max_connections > 0)
		srv->per_address = o->max_connections / 8 > MIN_PER_ADDRESS ? o->max_connections / 8
									    : MIN_PER_ADDRESS;
	else
		srv->per_address = 0;
	srv->min_rate = o->min_request_rate > 0 ? o->min_request_rate : DEFAULT_MIN_RATE;
	srv->slow_after_s = o->slow_after_s > 0 ? o->slow_after_s : DEFAULT_SLOW_AFTER;
	pthread_mutex_init(&srv->addr_lock, NULL);
	srv->addrs = (struct map)MAP_INIT;
}

void http_guard_release(struct http_server *srv)
{
	size_t i = 0;
	void *v;

	while (map_next(&srv->addrs, &i, NULL, NULL, &v))
		free(v);
	map_release(&srv->addrs);
	pthread_mutex_destroy(&srv->addr_lock);
}

int http_client_key(const struct sockaddr *sa, char *out, size_t size)
{
	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)size);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		struct in6_addr net;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			inet_ntop(AF_INET, &a->s6_addr[12], out, (socklen_t)size);
			return 0;
		}
		/* a host is given a /64 (RFC 6177): its 2^64 addresses are one client */
		memset(&net, 0, sizeof(net));
		memcpy(net.s6_addr, a->s6_addr, 8);
		inet_ntop(AF_INET6, &net, out, (socklen_t)size);
		if (strlen(out) + 4 < size)
			strcat(out, "/64");
		return 0;
	}
	return -1;
}

/* ---- idle connections: a list per loop, oldest first ---- */

static void idle_unlink(struct worker *w, struct conn *c)
{
	if (!c->idle)
		return;
	if (c->idle_prev)
		c->idle_prev->idle_next = c->idle_next;
	else
		w->idle_head = c->idle_next;
	if (c->idle_next)
		c->idle_next->idle_prev = c->idle_prev;
	else
		w->idle_tail = c->idle_prev;
	c->idle_prev = c->idle_next = NULL;
	c->idle = 0;
}

static void idle_append(struct worker *w, struct conn *c)
{
	if (c->idle)
		return;
	c->idle = 1;
	c->idle_next = NULL;
	c->idle_prev = w->idle_tail;
	if (w->idle_tail)
		w->idle_tail->idle_next = c;
	else
		w->idle_head = c;
	w->idle_tail = c;
}

/*
 * Whether a connection has no request in progress: nothing received that
 * is not answered (its input empty), nothing of an answer left to write,
 * and no answer a handler still owes it.
 */
static int is_idle(size_t in_len, size_t out_len, int deferred)
{
	return in_len == 0 && out_len == 0 && !deferred;
}

/* The connection's output was written out: it waits for its next request. */
static void on_output(struct evbuffer *out, const struct evbuffer_cb_info *info, void *arg)
{
	struct conn *c = arg;
	struct bufferevent *bev;

	if (!info->n_deleted || evbuffer_get_length(out) > 0 || c->idle)
		return;
	bev = evhttp_connection_get_bufferevent(c->con);
	/* a pipelined request waiting is not idle; a stream is found out in http_guard_evictable */
	if (bev && evbuffer_get_length(bufferevent_get_input(bev)) == 0)
		idle_append(c->w, c);
}

struct conn *http_guard_evictable(struct worker *w)
{
	struct conn *c;

	while ((c = w->idle_head)) {
		struct bufferevent *bev = evhttp_connection_get_bufferevent(c->con);
		if (bev && is_idle(evbuffer_get_length(bufferevent_get_input(bev)),
				   evbuffer_get_length(bufferevent_get_output(bev)),
				   http_has_deferred(w, c->con)))
			return c;
		/* busy after all (a streamed answer between two writes): back when it drains */
		idle_unlink(w, c);
	}
	return NULL;
}

int http_guard_admit(struct worker *w, struct conn *c)
{
	struct http_server *srv = w->srv;
	struct bufferevent *bev = evhttp_connection_get_bufferevent(c->con);
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	struct addr_count *a;
	int fd = bev ? bufferevent_getfd(bev) : -1, ok = 1;
	size_t len;

	c->since = 0;
	if (tcp_bytes(fd, &c->rx, &c->tx) < 0)
		c->rx = c->tx = 0;
	/* nothing received yet: idle, the first to go at max_connections if it stays so */
	if (bev && evbuffer_get_length(bufferevent_get_input(bev)) == 0)
		idle_append(w, c);
	if (!srv->per_address || fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &sslen) < 0)
		return 0;
	if (http_client_key((struct sockaddr *)&ss, c->addr, sizeof(c->addr)) < 0) {
		c->addr[0] = '\0';
		return 0;
	}
	len = strlen(c->addr);
	pthread_mutex_lock(&srv->addr_lock);
	a = map_get(&srv->addrs, c->addr, len);
	if (!a) {
		a = xcalloc(1, sizeof(*a));
		memcpy(a->addr, c->addr, len + 1);
		map_put(&srv->addrs, a->addr, len, a);
	}
	if (a->n >= srv->per_address)
		ok = 0;
	else
		a->n++;
	pthread_mutex_unlock(&srv->addr_lock);
	if (!ok) {
		c->addr[0] = '\0'; /* not counted */
		bump(&w->c.refused_address, 1);
		return -1;
	}
	return 0;
}

void http_guard_forget(struct worker *w, struct conn *c)
{
	struct http_server *srv = w->srv;
	struct bufferevent *bev = evhttp_connection_get_bufferevent(c->con);
	struct addr_count *a;
	size_t len = strlen(c->addr);

	/* evhttp calls this before it frees the bufferevent: c goes first */
	if (c->watch && bev)
		evbuffer_remove_cb_entry(bufferevent_get_input(bev), c->watch);
	if (c->out_watch && bev)
		evbuffer_remove_cb_entry(bufferevent_get_output(bev), c->out_watch);
	c->watch = c->out_watch = NULL;
	idle_unlink(w, c);
	if (!len)
		return;
	pthread_mutex_lock(&srv->addr_lock);
	a = map_get(&srv->addrs, c->addr, len);
	if (a && --a->n <= 0) {
		map_remove(&srv->addrs, c->addr, len);
		free(a);
	}
	pthread_mutex_unlock(&srv->addr_lock);
}

void http_guard_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct http_server *srv = w->srv;
	struct conn *c, *next;
	double now = (clock_ms() / 1e3), last = w->last_sweep ? w->last_sweep : now;

	w->last_sweep = now;
	for (c = w->conns; c; c = next) {
		struct bufferevent *bev = evhttp_connection_get_bufferevent(c->con);
		uint64_t rx, tx;
		double took;

		next = c->next;
		if (!bev || tcp_bytes(bufferevent_getfd(bev), &rx, &tx) < 0)
			continue;
		if (tx != c->tx || (!c->since && rx == c->rx)) {
			/* answered (no request in progress), or idle */
			c->since = 0;
			c->rx = rx;
			c->tx = tx;
			continue;
		}
		if (!c->since) {
			c->since = last; /* a request began since the last sweep */
			continue;
		}
		took = now - c->since;
		if (took < srv->slow_after_s || (double)(rx - c->rx) >= srv->min_rate * took ||
		    evbuffer_get_length(bufferevent_get_output(bev)) > 0 ||
		    http_has_deferred(w, c->con))
			continue;
		log_debug("http: %s sent %llu bytes of a request in %.0f s: closed",
			  c->addr[0] ? c->addr : "a client", (unsigned long long)(rx - c->rx), took);
		bump(&w->c.slow, 1);
		evhttp_connection_free(c->con); /* on_close frees c */
	}
}

void http_server_set_body_policy(struct http_server *srv, const char *prefix,
				 http_body_policy fn, void *ctx)
{
	struct buf p = BUF_INIT;
	struct body_policy *bp;

	if (srv->ran && http_server_is_ready(srv)) {
		log_error("http: body policy for %s set while serving: ignored", prefix);
		return;
	}
	if (srv->npolicies == HTTP_MAX_POLICIES) {
		log_error("http: more than %d body policies; %s keeps the small limit",
			  HTTP_MAX_POLICIES, prefix);
		return;
	}
	buf_adds(&p, srv->prefix);
	buf_adds(&p, prefix);
	bp = &srv->policies[srv->npolicies++];
	bp->prefix = buf_detach(&p, &bp->len);
	bp->fn = fn;
	bp->ctx = ctx;
}

/* The body policy whose prefix the target [t, t + tlen) starts with, or NULL. */
static const struct body_policy *policy_for(const struct http_server *srv, const char *t,
					    size_t tlen)
{
	int i;

	for (i = 0; i < srv->npolicies; i++)
		if (tlen >= srv->policies[i].len &&
		    memcmp(t, srv->policies[i].prefix, srv->policies[i].len) == 0)
			return &srv->policies[i];
	return NULL;
}

/* The value of header name in the head [h, h + len), copied into out; 1 if found. */
static int head_field(const char *h, size_t len, const char *name, struct buf *out)
{
	size_t nlen = strlen(name), i = 0;

	while (i < len) {
		const char *line = h + i, *eol = memchr(line, '\n', len - i);
		size_t l = eol ? (size_t)(eol - line) : len - i;
		if (l > nlen && line[nlen] == ':' && strncasecmp(line, name, nlen) == 0) {
			const char *v = line + nlen + 1, *end = line + l;
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			while (end > v && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
				end--;
			buf_reset(out);
			buf_add(out, v, (size_t)(end - v));
			return 1;
		}
		i += l + 1;
	}
	return 0;
}

/*
 * New bytes in a connection's input, not yet parsed. When the buffer
 * starts with a complete request head, that request's body limit is set
 * now. (Its body, already being read, never starts like a request line
 * with a complete head before it: evhttp drains each head as it parses it,
 * so the buffer starts with a head only between requests.)
 */
static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
	struct conn *c = arg;
	struct http_server *srv = c->w->srv;
	size_t have = evbuffer_get_length(in), limit = srv->opt.small_body_size, mlen, tlen;
	struct evbuffer_ptr end, stop;
	const char *h, *sp, *sp2;
	char first;
	struct buf method = BUF_INIT, target = BUF_INIT, auth = BUF_INIT;
	const struct body_policy *bp;
	size_t window = srv->opt.max_header_size + srv->opt.max_uri_length + 1024;

	if (info->n_added)
		idle_unlink(c->w, c); /* a request begins (or goes on) */
	/* a request line starts with a method: body bytes seldom do, and cost no search */
	if (!info->n_added || have < 4 || evbuffer_copyout(in, &first, 1) != 1 ||
	    first < 'A' || first > 'Z')
		return;
	if (evbuffer_ptr_set(in, &stop, have < window + 4 ? have : window + 4,
			     EVBUFFER_PTR_SET) < 0)
		return;
	end = evbuffer_search_range(in, "\r\n\r\n", 4, NULL, &stop);
	if (end.pos < 0)
		return; /* not a complete head (yet): the parser judges it */
	h = (const char *)evbuffer_pullup(in, end.pos + 4);
	if (!h)
		return;
	sp = memchr(h, ' ', (size_t)end.pos);
	sp2 = sp ? memchr(sp + 1, ' ', (size_t)(h + end.pos - sp - 1)) : NULL;
	if (!sp || !sp2 || sp == h)
		return;
	mlen = (size_t)(sp - h);
	tlen = (size_t)(sp2 - sp - 1);
	/* before the server is ready the policies are another thread's (and all is 503) */
	if (http_server_is_ready(srv) && (bp = policy_for(srv, sp + 1, tlen))) {
		buf_add(&method, h, mlen);
		/* an extension method, renamed POST for evhttp (methods.c): its own name */
		if (mlen == 4 && memcmp(h, "POST", 4) == 0)
			head_field(h, (size_t)end.pos, srv->method_mark, &method);
		buf_add(&target, sp + 1, tlen);
		limit = bp->fn(bp->ctx, method.ptr, target.ptr,
				    head_field(h, (size_t)end.pos, "Authorization", &auth) ? auth.ptr
											 : NULL);
		if (limit > srv->opt.max_body_size)
			limit = srv->opt.max_body_size;
	}
	evhttp_connection_set_max_body_size(c->con, (ev_ssize_t)limit);
	buf_release(&method);
	buf_release(&target);
	buf_release(&auth);
}

void http_guard_watch(struct worker *w, struct conn *c)
{
	struct bufferevent *bev = evhttp_connection_get_bufferevent(c->con);

	evhttp_connection_set_max_body_size(c->con, (ev_ssize_t)w->srv->opt.small_body_size);
	if (bev && !(c->watch = evbuffer_add_cb(bufferevent_get_input(bev), on_input, c)))
		log_warn("http: cannot watch a connection's input");
	if (bev && !(c->out_watch = evbuffer_add_cb(bufferevent_get_output(bev), on_output, c)))
		log_warn("http: cannot watch a connection's output");
}
