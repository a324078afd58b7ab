/*
 * live-http.c: live pages on the front: the endpoint GET /_quire/live,
 * and the registry's connections as the front's deferred streams (live.h
 * says what and why; http.h how a parked, streamed request works).
 *
 * Thin on purpose: everything that is not the front's deferred requests
 * (the index, the events, the limits) is in live.c, which knows nothing
 * of the front. A stream is parked
 * (http_request_park()): a stop does not wait for it, and the guard
 * never counts it idle (a request is in progress on its connection), so
 * it is not closed for a new client at max_connections; the registry's
 * own limits keep streams to a share of the connections.
 */
#include "http/http.h"
#include "http/live.h"
#include "site/hosts.h"
#include "util/buf.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static void op_start(void *conn)
{
	http_deferred_stream_start(conn, 200, "text/event-stream");
}

static int op_write(void *conn, struct buf *b, size_t max)
{
	return http_deferred_stream_offer(conn, b, max);
}

static void op_close(void *conn)
{
	http_deferred_stream_end(conn);
}

struct live *live_http_new(const struct live_options *o)
{
	static const struct live_ops ops = { op_start, op_write, op_close };

	return live_new(o, &ops);
}

/* The client's key as the guard counts it (IPv6 by /64), from its address as text. */
static void client_key(const char *peer, char *out, size_t size)
{
	struct sockaddr_in6 a6;
	struct sockaddr_in a4;

	memset(&a6, 0, sizeof(a6));
	memset(&a4, 0, sizeof(a4));
	if (inet_pton(AF_INET, peer, &a4.sin_addr) == 1) {
		a4.sin_family = AF_INET;
		http_client_key((const struct sockaddr *)&a4, out, size);
	} else if (inet_pton(AF_INET6, peer, &a6.sin6_addr) == 1) {
		a6.sin6_family = AF_INET6;
		http_client_key((const struct sockaddr *)&a6, out, size);
	} else {
		snprintf(out, size, "%s", peer);
	}
}

/* The page of the site at path that a reader may follow (a note or a listing), or NULL. */
static const struct page *followable(struct http_request *req, const char *path, size_t len)
{
	struct snapshot *snap = http_request_snapshot(req);
	struct snapshot_host *h = http_request_host(req);
	const struct page *p;

	if (h)
		p = hosts_page(snap, h, path, len);
	else if (!(p = snapshot_get(snap, path, len)))
		p = hosts_main_route(snap, path, len);
	if (!p || (p->kind != PAGE_NOTE && p->kind != PAGE_GENERATED) ||
	    strncmp(p->content_type, "text/html", 9) != 0)
		return NULL;
	return p;
}

static void on_end(void *sub)
{
	live_unsubscribe(sub);
}

static void on_live(struct http_request *req, void *ctx)
{
	struct live *lv = ctx;
	struct snapshot_host *h = http_request_host(req);
	struct buf path = BUF_INIT, msg = BUF_INIT;
	const struct page *p;
	struct http_deferred *d;
	struct live_sub *sub;
	enum live_refusal why;
	const char *bad;
	char key[64];

	if (http_request_method(req) != HTTP_GET) {
		http_reply_header(req, "Allow", "GET");
		http_reply(req, 405, "text/plain; charset=utf-8", "live pages: GET only\n", 21);
		goto out;
	}
	if (live_parse_target(http_request_query(req), http_request_url_prefix(req), &path,
			      &bad) < 0) {
		buf_addf(&msg, "live pages: %s\n", bad);
		http_reply_buf(req, 400, "text/plain; charset=utf-8", &msg);
		goto out;
	}
	if (!(p = followable(req, path.ptr, path.len))) {
		buf_adds(&msg, "live pages: no note or listing of this site at u=\n");
		http_reply_buf(req, 404, "text/plain; charset=utf-8", &msg);
		goto out;
	}
	if (http_request_peer_trusted(req))
		key[0] = '\0'; /* a trusted proxy's streams are many readers': only the total caps them */
	else
		client_key(http_request_peer(req), key, sizeof(key));
	d = http_request_park(req);
	if (!d)
		goto out;
	http_deferred_header(d, "X-Accel-Buffering", "no");
	sub = live_subscribe(lv, h ? h->name : "", path.ptr, path.len, key, p->etag, d, &why);
	if (!sub) {
		http_deferred_header(d, "Retry-After", why == LIVE_FULL_ADDRESS ? "30" : "60");
		buf_adds(&msg, why == LIVE_FULL_ADDRESS
				       ? "live pages: this address follows as many pages as it may\n"
				       : "live pages: the server follows as many pages as it may\n");
		http_deferred_reply_buf(d, why == LIVE_FULL_ADDRESS ? 429 : 503,
					"text/plain; charset=utf-8", &msg);
		goto out;
	}
	http_deferred_on_end(d, on_end, sub);
out:
	buf_release(&path);
	buf_release(&msg);
}

int live_http_register(struct live *lv, struct http_server *srv)
{
	if (http_server_add_handler(srv, "/_quire/live", on_live, lv) < 0)
		return -1;
	http_server_add_metrics(srv, live_metrics, lv);
	http_server_add_page_header(srv, "Server-Timing: quire-live\r\n");
	return 0;
}
