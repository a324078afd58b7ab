/*
 * builtin.c: the server's own endpoints.
 *
 * /healthz answers with the live snapshot's version and counts (and
 * quire.yml's error while the last valid settings stand in for it);
 * /healthz/host tells a TLS proxy whether a domain is one of the vault's
 * sites; /metrics gives the Prometheus text format of the request
 * counters, summed over the loops, and of the snapshot. They are handlers
 * like the ones other modules register, registered first, and counted
 * under kinds of their own.
 *
 * Rejected: shared atomic counters. Each loop bumps its own (relaxed
 * stores, no read-modify-write, see bump() in http-int.h) and /metrics
 * sums them.
 */
#include "http/http.h"
#include "http/http-int.h"
#include "site/hosts.h"
#include "util/buf.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Names of enum kind, for quire_requests_total{kind=...}. */
static const char *const kind_names[NKINDS] = {
	"page", "file", "asset", "redirect", "notfound", "api", "health", "metrics",
};

/*
 * ,"config":"error: quire.yml:3: why" while quire.yml is invalid and the
 * last valid settings serve (site.h); nothing when it is applied.
 */
static void health_config(const struct snapshot *s, struct buf *b)
{
	if (!s->config_error)
		return;
	buf_adds(b, ",\"config\":\"error: ");
	buf_add_json(b, s->config_error, strlen(s->config_error));
	buf_addc(b, '"');
}

static void health(struct http_request *req, void *ctx)
{
	struct http_server *srv = ctx;
	struct snapshot *s = req->snap;
	struct buf b = BUF_INIT;

	http_reply_header(req, "Cache-Control", "no-store");
	buf_addf(&b, "{\"status\":\"ok\",\"version\":%llu,\"notes\":%zu,\"attachments\":%zu,"
		     "\"uptime_s\":%lld",
		 (unsigned long long)s->version, s->nnotes, s->nattachments,
		 (long long)(time(NULL) - srv->started));
	health_config(s, &b);
	buf_adds(&b, "}\n");
	http_reply_buf(req, 200, "application/json", &b);
}

/*
 * GET /healthz/host?domain=H: 200 when H is a site of this vault (base_url's
 * host, a routed or configured host, or www. of one of them), else 404.
 * For a TLS proxy that gets certificates on demand (Caddy's "ask").
 */
static void host_allowed(struct http_request *req, void *ctx)
{
	struct buf q = BUF_INIT;
	struct snapshot_host *h;
	char name[HOST_NAME_MAX_LEN];
	const struct snapshot_hosts *sh = req->snap->hosts;
	int ok = 0;

	(void)ctx;
	http_reply_header(req, "Cache-Control", "no-store");
	if (http_query_param(http_request_query(req), "domain", &q) > 0) {
		host_from_header(q.ptr, name);
		ok = hosts_find(req->snap, name, &h) != HOST_MAIN ||
		     (sh && sh->main_name[0] && strcmp(name, sh->main_name) == 0);
	}
	buf_release(&q);
	if (ok)
		http_reply(req, 200, "text/plain; charset=utf-8", "yes\n", 4);
	else
		http_reply(req, 404, "text/plain; charset=utf-8", "no\n", 3);
}

static void metrics(struct http_request *req, void *ctx)
{
	static const char *const classes[4] = { "2xx", "3xx", "4xx", "5xx" };
	struct http_server *srv = ctx;
	struct snapshot *s = req->snap;
	struct buf b = BUF_INIT;
	uint64_t bytes = 0, nm = 0, refused = 0, refused_address = 0, slow = 0, evicted = 0;
	int i, c, k;

	if (!srv->opt.metrics_public && !http_request_peer_is_loopback(req)) {
		http_reply_header(req, "Cache-Control", "no-store");
		http_reply(req, 403, "text/plain; charset=utf-8", "Forbidden\n", 10);
		return;
	}
	buf_adds(&b, "# HELP quire_requests_total HTTP requests answered, by status class and kind.\n"
		     "# TYPE quire_requests_total counter\n");
	for (c = 0; c < 4; c++) {
		for (k = 0; k < NKINDS; k++) {
			uint64_t n = 0;
			for (i = 0; i < srv->nworkers; i++)
				n += peek(&srv->workers[i]->c.requests[c][k]);
			buf_addf(&b, "quire_requests_total{status=\"%s\",kind=\"%s\"} %llu\n",
				 classes[c], kind_names[k], (unsigned long long)n);
		}
	}
	for (i = 0; i < srv->nworkers; i++) {
		bytes += peek(&srv->workers[i]->c.bytes);
		nm += peek(&srv->workers[i]->c.not_modified);
		refused += peek(&srv->workers[i]->c.refused);
		refused_address += peek(&srv->workers[i]->c.refused_address);
		slow += peek(&srv->workers[i]->c.slow);
		evicted += peek(&srv->workers[i]->c.evicted);
	}
	buf_addf(&b, "# HELP quire_response_bytes_total Body bytes sent.\n"
		     "# TYPE quire_response_bytes_total counter\n"
		     "quire_response_bytes_total %llu\n"
		     "# HELP quire_not_modified_total Conditional requests answered with 304.\n"
		     "# TYPE quire_not_modified_total counter\n"
		     "quire_not_modified_total %llu\n"
		     "# HELP quire_connections_refused_total Connections closed at once over max_connections "
		     "(no idle one to close instead).\n"
		     "# TYPE quire_connections_refused_total counter\n"
		     "quire_connections_refused_total %llu\n"
		     "# HELP quire_connections Open connections.\n"
		     "# TYPE quire_connections gauge\n"
		     "quire_connections %d\n"
		     "# HELP quire_snapshot_version Version of the live snapshot.\n"
		     "# TYPE quire_snapshot_version gauge\n"
		     "quire_snapshot_version %llu\n"
		     "# HELP quire_snapshot_age_seconds Seconds since the live snapshot was built.\n"
		     "# TYPE quire_snapshot_age_seconds gauge\n"
		     "quire_snapshot_age_seconds %lld\n"
		     "# HELP quire_notes Published notes.\n"
		     "# TYPE quire_notes gauge\n"
		     "quire_notes %zu\n"
		     "# HELP quire_attachments Published attachments.\n"
		     "# TYPE quire_attachments gauge\n"
		     "quire_attachments %zu\n"
		     "# HELP quire_load_duration_seconds How long building the live snapshot took.\n"
		     "# TYPE quire_load_duration_seconds gauge\n"
		     "quire_load_duration_seconds %.6f\n",
		 (unsigned long long)bytes, (unsigned long long)nm, (unsigned long long)refused,
		 atomic_load_explicit(&srv->nconns, memory_order_relaxed),
		 (unsigned long long)s->version, (long long)(time(NULL) - s->created), s->nnotes,
		 s->nattachments, s->load_ms / 1000.0);
	buf_addf(&b, "# HELP quire_connections_refused_address_total Connections closed at once: "
		     "their client address held its share.\n"
		     "# TYPE quire_connections_refused_address_total counter\n"
		     "quire_connections_refused_address_total %llu\n"
		     "# HELP quire_connections_slow_total Connections closed for sending a request "
		     "too slowly.\n"
		     "# TYPE quire_connections_slow_total counter\n"
		     "quire_connections_slow_total %llu\n"
		     "# HELP quire_connections_evicted_total Idle connections closed at "
		     "max_connections to let a new client in.\n"
		     "# TYPE quire_connections_evicted_total counter\n"
		     "quire_connections_evicted_total %llu\n",
		 (unsigned long long)refused_address, (unsigned long long)slow,
		 (unsigned long long)evicted);
	if (srv->opt.metrics)
		srv->opt.metrics(srv->opt.metrics_ctx, &b);
	http_reply_header(req, "Cache-Control", "no-store");
	http_reply_buf(req, 200, "text/plain; version=0.0.4; charset=utf-8", &b);
}

int http_loading_answer(const char *path, size_t notes, size_t of, int *retry_after,
			const char **type, struct buf *out)
{
	size_t len = path ? strlen(path) : 0;

	if (notes > of)
		notes = of;
	/* a load takes seconds: a client that retries at once only adds to it */
	*retry_after = 2;
	buf_reset(out);
	if (len >= 8 && strcmp(path + len - 8, "/healthz") == 0) {
		*type = "application/json";
		buf_addf(out, "{\"status\":\"loading\",\"notes\":%zu,\"of\":%zu}\n", notes, of);
	} else {
		*type = "text/plain; charset=utf-8";
		if (of)
			buf_addf(out, "Service Unavailable: the site is loading (%zu of %zu notes)\n",
				 notes, of);
		else
			buf_adds(out, "Service Unavailable: the site is loading\n");
	}
	return 503;
}

void http_answer_loading(struct http_request *r)
{
	const struct http_server *srv = r->w->srv;
	size_t notes = 0, of = 0;
	int status, retry;
	const char *type;
	struct buf body = BUF_INIT;
	char num[16];

	if (srv->opt.progress)
		srv->opt.progress(srv->opt.progress_ctx, &notes, &of);
	status = http_loading_answer(r->path, notes, of, &retry, &type, &body);
	if (strcmp(type, "application/json") == 0)
		r->kind = K_HEALTH;
	snprintf(num, sizeof(num), "%d", retry);
	http_hdr(r, "Retry-After", num);
	http_hdr(r, "Cache-Control", "no-store");
	http_reply_buf(r, status, type, &body);
}

int http_add_builtin_handlers(struct http_server *srv)
{
	if (http_server_add_handler(srv, "/healthz", health, srv) < 0 ||
	    http_server_add_handler(srv, "/metrics", metrics, srv) < 0 ||
	    http_server_add_handler(srv, "/healthz/host", host_allowed, srv) < 0)
		return -1;
	srv->handlers[0].kind = K_HEALTH;
	srv->handlers[1].kind = K_METRICS;
	srv->handlers[2].kind = K_HEALTH;
	return 0;
}
