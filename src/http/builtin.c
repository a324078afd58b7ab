/*
 * builtin.c: the server's own endpoints.
 *
 * /healthz answers with the live snapshot's version and counts (and
 * quire.yml's error while the last valid settings stand in for it);
 * /healthz/host tells a TLS proxy whether a domain is one of the vault's
 * sites; /metrics gives the Prometheus text format of the request
 * counters and duration histograms, summed over the loops, of the sync
 * API's and WebDAV's requests by method and status, of the snapshot, and
 * whatever the modules wired in add (http_server_add_metrics(): the
 * loader, search, the purger). They are handlers like the ones other
 * modules register, registered first, and counted under kinds of their
 * own. While the server loads, /metrics still answers (the load's
 * progress), where every other path gets 503.
 *
 * Rejected: shared atomic counters. Each loop bumps its own (relaxed
 * stores, no read-modify-write, see bump() in http-int.h) and /metrics
 * sums them; histograms are arrays of such counters (util/metrics.h).
 */
#include "http/http.h"
#include "http/http-int.h"
#include "site/hosts.h"
#include "util/buf.h"
#include "util/metrics.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Names of enum kind, for quire_requests_total{kind=...}. */
static const char *const kind_names[NKINDS] = {
	"page", "file", "asset", "redirect", "notfound", "api", "health", "metrics",
	"search", "dav", "error",
};

const char *http_kind_name(enum kind k)
{
	return k >= 0 && k < NKINDS ? kind_names[k] : "error";
}

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
	struct buf *b = &req->w->body; /* the loop's: no allocation a probe */
	char num[24];

	http_reply_header(req, "Cache-Control", "no-store");
	http_refresh_dates(req->w);
	buf_reset(b);
	buf_adds(b, "{\"status\":\"ok\",\"version\":");
	buf_adds(b, http_fmt_u64(num, s->version));
	buf_adds(b, ",\"notes\":");
	buf_adds(b, http_fmt_u64(num, s->nnotes));
	buf_adds(b, ",\"attachments\":");
	buf_adds(b, http_fmt_u64(num, s->nattachments));
	buf_adds(b, ",\"uptime_s\":");
	buf_adds(b, http_fmt_u64(num, (uint64_t)(req->w->date_sec - srv->started)));
	health_config(s, b);
	buf_adds(b, "}\n");
	http_reply(req, 200, "application/json", b->ptr, b->len); /* copied only if it waits */
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

/* The request counters, summed over the loops. */
static void metrics_requests(struct http_server *srv, struct buf *b)
{
	static const char *const classes[4] = { "2xx", "3xx", "4xx", "5xx" };
	char labels[32];
	int i, c, k;

	metrics_family(b, "quire_requests_total", "counter",
		       "HTTP requests answered, by status class and kind.");
	for (c = 0; c < 4; c++) {
		for (k = 0; k < NKINDS; k++) {
			uint64_t n = 0;
			for (i = 0; i < srv->nworkers; i++)
				n += peek(&srv->workers[i]->c.requests[c][k]);
			buf_addf(b, "quire_requests_total{status=\"%s\",kind=\"%s\"} %llu\n",
				 classes[c], kind_names[k], (unsigned long long)n);
		}
	}
	metrics_family(b, "quire_request_duration_seconds", "histogram",
		       "Time from a request's dispatch (head and body read) to its answer, by kind.");
	for (k = 0; k < NKINDS; k++) {
		struct metrics_totals t;
		memset(&t, 0, sizeof(t));
		for (i = 0; i < srv->nworkers; i++)
			metrics_read(&srv->workers[i]->c.duration[k], &t);
		snprintf(labels, sizeof(labels), "kind=\"%s\"", kind_names[k]);
		metrics_write_histogram(b, "quire_request_duration_seconds", labels, &t);
	}
}

/* The sync API's [0] or WebDAV's [1] requests by method and status, and their 412s. */
static void metrics_calls(struct http_server *srv, struct buf *b)
{
	static const char *const names[2] = { "quire_sync_requests_total", "quire_dav_requests_total" };
	static const char *const helps[2] = {
		"Sync API requests (/api/v1/) answered, by method and status.",
		"WebDAV requests (/dav/) answered, by method and status.",
	};
	uint64_t conflicts[2] = { 0, 0 };
	int a, m, st, i;

	for (a = 0; a < 2; a++) {
		metrics_family(b, names[a], "counter", helps[a]);
		for (m = 0; m < HTTP_METHODS; m++) {
			const char *name = http_methods_name((enum http_method)m);
			for (st = 0; st < HTTP_STATUSES; st++) {
				uint64_t n = 0;
				for (i = 0; i < srv->nworkers; i++)
					n += peek(&srv->workers[i]->c.calls[a][m][st]);
				if (!n)
					continue;
				if (http_status_of_slot(st) == 412)
					conflicts[a] += n;
				buf_addf(b, "%s{method=\"%s\",status=\"%d\"} %llu\n", names[a],
					 name ? name : "OTHER", http_status_of_slot(st),
					 (unsigned long long)n);
			}
		}
	}
	metrics_family(b, "quire_write_conflicts_total", "counter",
		       "Writes refused 412 because the file changed since the client saw it, by API.");
	buf_addf(b, "quire_write_conflicts_total{api=\"sync\"} %llu\n"
		    "quire_write_conflicts_total{api=\"webdav\"} %llu\n",
		 (unsigned long long)conflicts[0], (unsigned long long)conflicts[1]);
}

/* The connection counters and gauges, summed over the loops. */
static void metrics_connections(struct http_server *srv, struct buf *b)
{
	uint64_t bytes = 0, nm = 0, refused = 0, refused_address = 0, slow = 0, evicted = 0;
	int i;

	for (i = 0; i < srv->nworkers; i++) {
		bytes += peek(&srv->workers[i]->c.bytes);
		nm += peek(&srv->workers[i]->c.not_modified);
		refused += peek(&srv->workers[i]->c.refused);
		refused_address += peek(&srv->workers[i]->c.refused_address);
		slow += peek(&srv->workers[i]->c.slow);
		evicted += peek(&srv->workers[i]->c.evicted);
	}
	buf_addf(b, "# HELP quire_response_bytes_total Body bytes sent.\n"
		    "# TYPE quire_response_bytes_total counter\n"
		    "quire_response_bytes_total %llu\n"
		    "# HELP quire_not_modified_total Conditional requests answered with 304.\n"
		    "# TYPE quire_not_modified_total counter\n"
		    "quire_not_modified_total %llu\n"
		    "# HELP quire_connections_refused_total Connections closed at once over "
		    "max_connections (no idle one to close instead).\n"
		    "# TYPE quire_connections_refused_total counter\n"
		    "quire_connections_refused_total %llu\n"
		    "# HELP quire_connections Open connections.\n"
		    "# TYPE quire_connections gauge\n"
		    "quire_connections %d\n",
		 (unsigned long long)bytes, (unsigned long long)nm, (unsigned long long)refused,
		 atomic_load_explicit(&srv->nconns, memory_order_relaxed));
	buf_addf(b, "# HELP quire_connections_refused_address_total Connections closed at once: "
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
}

/* The live snapshot's gauges (none while loading), and the load's progress. */
static void metrics_site(struct http_server *srv, const struct snapshot *s, struct buf *b)
{
	size_t notes = 0, of = 0;

	if (s)
		buf_addf(b, "# HELP quire_snapshot_version Version of the live snapshot.\n"
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
			    "# HELP quire_pages Entries of the live snapshot: pages, attachments, assets, "
			    "redirects.\n"
			    "# TYPE quire_pages gauge\n"
			    "quire_pages %zu\n"
			    "# HELP quire_snapshot_bytes Bytes of the live snapshot's pages held in memory "
			    "(gzip and identity; attachments stay on disk).\n"
			    "# TYPE quire_snapshot_bytes gauge\n"
			    "quire_snapshot_bytes %zu\n"
			    "# HELP quire_load_duration_seconds How long building the live snapshot took.\n"
			    "# TYPE quire_load_duration_seconds gauge\n"
			    "quire_load_duration_seconds %.6f\n",
			 (unsigned long long)s->version, (long long)(time(NULL) - s->created),
			 s->nnotes, s->nattachments, s->pages.len, s->pages.bytes, s->load_ms / 1000.0);
	if (srv->opt.progress)
		srv->opt.progress(srv->opt.progress_ctx, &notes, &of);
	buf_addf(b, "# HELP quire_loading Whether the first load is still running (1: every page "
		    "answers 503).\n"
		    "# TYPE quire_loading gauge\n"
		    "quire_loading %d\n"
		    "# HELP quire_loading_notes_done Notes' worth of the first load's work done.\n"
		    "# TYPE quire_loading_notes_done gauge\n"
		    "quire_loading_notes_done %zu\n"
		    "# HELP quire_loading_notes_found Notes the first load's scan found (0 before it "
		    "has).\n"
		    "# TYPE quire_loading_notes_found gauge\n"
		    "quire_loading_notes_found %zu\n",
		 !http_server_is_ready(srv), notes > of ? of : notes, of);
}

/* GET /metrics; also while the server loads (http_answer_loading()), with r->snap NULL. */
static void metrics(struct http_request *req, void *ctx)
{
	struct http_server *srv = ctx;
	struct buf b = BUF_INIT;
	int i;

	if (!srv->opt.metrics_public && !http_request_peer_is_loopback(req)) {
		http_reply_header(req, "Cache-Control", "no-store");
		http_reply(req, 403, "text/plain; charset=utf-8", "Forbidden\n", 10);
		return;
	}
	metrics_requests(srv, &b);
	metrics_calls(srv, &b);
	metrics_connections(srv, &b);
	metrics_site(srv, req->snap, &b);
	/* the hooks are set before the server is ready, and read only after */
	for (i = 0; http_server_is_ready(srv) && i < srv->nhooks; i++)
		srv->hooks[i].fn(srv->hooks[i].ctx, &b);
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
	size_t plen = r->path ? strlen(r->path) : 0;

	if (plen >= 8 && strcmp(r->path + plen - 8, "/metrics") == 0) {
		/* the load's progress, for a scrape (under any URL prefix: not known yet) */
		r->kind = K_METRICS;
		metrics(r, r->w->srv);
		return;
	}
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
