/*
 * guard.c: what keeps a few clients from holding the server.
 *
 * A cap on the connections one client address may hold, so that thousands
 * of connections from a few addresses leave room for everyone else. IPv6
 * clients count per /64 (http_client_key()), and the addresses of trusted
 * proxies (opt->trusted_proxies: a reverse proxy opens many connections
 * for many clients) are not capped at all.
 *
 * And the body's limit, decided on the parsed head before a byte of the
 * body is read (conn.c): what the body policy of the target's prefix says
 * (the sync API: its upload limit with the right token, nothing without),
 * else small_body_size. A larger body is refused 413 from its head.
 *
 * The deadlines (a head must arrive whole within header_timeout_s of its
 * first byte, a body at min_request_rate once it is slow_after_s old) and
 * the eviction of idle connections at max_connections are the
 * connection's own state, in conn.c.
 */
#include "http/http.h"
#include "http/http-int.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define DEFAULT_MIN_RATE 256.0
#define DEFAULT_SLOW_AFTER 10
#define MIN_PER_ADDRESS 16

struct addr_count {
	char addr[48];            /* the map's key */
	int n;
};

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
	free(srv->trusted);
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

/* ---- the share of one address ---- */

int http_guard_trust(struct http_server *srv, const char *list)
{
	const char *p = list;

	while (p && *p) {
		char item[64], *slash;
		size_t n = strcspn(p, ", \t");
		struct trusted t;
		int max;

		if (n == 0) {
			p++;
			continue;
		}
		if (n >= sizeof(item))
			return log_error("http: trusted proxy '%.*s' is not an address", (int)n, p);
		memcpy(item, p, n);
		item[n] = '\0';
		p += n;
		memset(&t, 0, sizeof(t));
		slash = strchr(item, '/');
		if (slash)
			*slash++ = '\0';
		if (inet_pton(AF_INET, item, t.net) == 1) {
			max = 32;
		} else if (inet_pton(AF_INET6, item, t.net) == 1) {
			t.v6 = 1;
			max = 128;
		} else {
			return log_error("http: trusted proxy '%s' is not an address", item);
		}
		t.bits = max;
		if (slash) {
			char *end;
			long b = strtol(slash, &end, 10);
			if (!*slash || *end || b < 0 || b > max)
				return log_error("http: trusted proxy '%s/%s': bad prefix length", item,
						 slash);
			t.bits = (int)b;
		}
		srv->trusted = xrealloc(srv->trusted, (srv->ntrusted + 1) * sizeof(*srv->trusted));
		srv->trusted[srv->ntrusted++] = t;
	}
	return 0;
}

/* Whether the first bits of a and b are the same. */
static int same_prefix(const unsigned char *a, const unsigned char *b, int bits)
{
	int whole = bits / 8, rest = bits % 8;

	if (memcmp(a, b, (size_t)whole) != 0)
		return 0;
	return !rest || ((a[whole] ^ b[whole]) & (0xff << (8 - rest)) & 0xff) == 0;
}

/* Whether the peer sa is one of the trusted proxies. */
static int trusted(const struct http_server *srv, const struct sockaddr *sa)
{
	const unsigned char *a4 = NULL, *a6 = NULL;
	size_t i;

	if (sa->sa_family == AF_INET) {
		a4 = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		a6 = a->s6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a))
			a4 = a->s6_addr + 12;
	}
	for (i = 0; i < srv->ntrusted; i++) {
		const struct trusted *t = &srv->trusted[i];
		if (t->v6 ? a6 && same_prefix(a6, t->net, t->bits)
			  : a4 && same_prefix(a4, t->net, t->bits))
			return 1;
	}
	return 0;
}

int http_guard_admit(struct worker *w, struct conn *c, const struct sockaddr *sa)
{
	struct http_server *srv = w->srv;
	struct addr_count *a;
	int ok = 1;
	size_t len;

	c->addr[0] = '\0';
	c->trusted = trusted(srv, sa);
	if (!srv->per_address || c->trusted ||
	    http_client_key(sa, c->addr, sizeof(c->addr)) < 0) {
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
	struct addr_count *a;
	size_t len = strlen(c->addr);

	if (!len)
		return;
	pthread_mutex_lock(&srv->addr_lock);
	a = map_get(&srv->addrs, c->addr, len);
	if (a && --a->n <= 0) {
		map_remove(&srv->addrs, c->addr, len);
		free(a);
	}
	pthread_mutex_unlock(&srv->addr_lock);
	c->addr[0] = '\0';
}

/* ---- the body's limit ---- */

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

uint64_t http_guard_body_limit(const struct http_server *srv, const char *method,
			       const char *target, const char *authorization)
{
	const struct body_policy *bp;
	size_t limit;

	/* before the server is ready the policies are another thread's (and all is 503) */
	if (!http_server_is_ready(srv) || !(bp = policy_for(srv, target, strlen(target))))
		return srv->opt.small_body_size;
	limit = bp->fn(bp->ctx, method, target, authorization);
	return limit > srv->opt.max_body_size ? srv->opt.max_body_size : limit;
}
