/*
 * serve.c: the glue between the loader, the HTTP front and the sync API.
 *
 * The port opens first, and the first load runs on a thread of its own
 * meanwhile: until it is published every request is answered 503 with
 * Retry-After, and /healthz says how far the load is
 * ({"status":"loading","notes":N,"of":M}), so that a health check or a
 * proxy sees a server starting, not a dead one; stderr shows the same
 * (progress.h). Then what needs the site is wired in (the URL prefix,
 * purgers, the APIs), the front opens (http_server_ready()), and
 * "serving ... at http://..." goes to stdout: what scripts wait for.
 * After that the loader thread owns the site and the front only ever
 * reads published snapshots. Rejected: loading before listening, as
 * quire did (25 seconds of refused connections at 10,000 notes). With a token (--token-file or
 * QUIRE_TOKEN) the sync API is registered under /api/v1/ and WebDAV under
 * /dav/ (dav.h); without one those URLs are plain 404s.
 *
 * The log is set up before anything is logged (--log-format text or json,
 * --log-file; util/log.h), and the access log follows its format. SIGHUP
 * opens both files again (logrotate) and reloads quire.yml and the vault;
 * the loader, the search front and the purger add their families to
 * /metrics (http_server_add_metrics()).
 */
#include "cmd/serve.h"
#include "cmd/progress.h"
#include "cmd/systemd.h"
#include "http/http.h"
#include "http/purge.h"
#include "http/live.h"
#include "http/searchapi.h"
#include "site/loader.h"
#include "site/site.h"
#include "sync/dav.h"
#include "sync/syncapi.h"
#include "util/log.h"
#include "util/parallel.h"
#include "util/xalloc.h"
#include "vault/vault.h"
#include "vault/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char serve_usage[] =
	"usage: quire serve [--vault DIR] [--listen ADDR:PORT] [--threads N] [--data-dir DIR]\n"
	"                   [--access-log FILE] [--log-format FORMAT] [--log-file FILE]\n"
	"                   [--metrics-public] [--max-connections N]\n"
	"                   [--max-per-address N] [--trusted-proxy ADDR[/BITS]]\n"
	"                   [--header-timeout SECONDS]\n"
	"                   [--no-watch] [--base-url URL] [--token-file FILE] [--max-upload BYTES]\n"
	"                   [--search-rate N] [--no-live] [--verbose]\n"
	"\n"
	"Renders the vault and serves it. SIGHUP opens the log files again (after a\n"
	"rotation) and reloads quire.yml and the vault; SIGINT and SIGTERM stop after\n"
	"the responses in flight.\n"
	"\n"
	"  --vault DIR           the vault (default: the current folder)\n"
	"  --listen ADDR:PORT    where to listen (default 127.0.0.1:8080; port 0 picks one)\n"
	"  --threads N           serving threads (default: one per core)\n"
	"  --data-dir DIR        state kept between runs (default: <vault>/.quire)\n"
	"  --access-log FILE     write a line per request: the combined format, the Host\n"
	"                        and the duration in seconds (JSON with --log-format json)\n"
	"  --log-format FORMAT   the log on stderr: text (key=value pairs, the default)\n"
	"                        or json (one object a line); under journald, no time\n"
	"  --log-file FILE       write the log to FILE instead of stderr\n"
	"  --metrics-public      serve /metrics to any address, not only loopback\n"
	"  --max-connections N   at N connections, close the oldest idle one for each new\n"
	"                        one, or refuse it when none is idle (default 10000)\n"
	"  --max-per-address N   connections one client address may hold (default: an\n"
	"                        eighth of --max-connections; behind a reverse proxy every\n"
	"                        client has its address: see --trusted-proxy)\n"
	"  --trusted-proxy ADDR[/BITS]  an address or network (10.0.0.0/8, ::1) whose\n"
	"                        connections --max-per-address does not cap: a reverse\n"
	"                        proxy in front opens many for many clients (repeatable)\n"
	"  --header-timeout SECONDS  a request's head must arrive whole within this of\n"
	"                        its first byte, or the connection is closed (default 10)\n"
	"  --no-watch            do not watch the vault for changes\n"
	"  --base-url URL        overrides base_url of quire.yml\n"
	"  --token-file FILE     enables the sync API (/api/v1/) and WebDAV (/dav/, the\n"
	"                        token as the password) for this token; without it, the\n"
	"                        systemd credential token ($CREDENTIALS_DIRECTORY/token)\n"
	"                        or the environment variable QUIRE_TOKEN does the same\n"
	"  --max-upload BYTES    largest file the sync API accepts (default 64M; K, M, G)\n"
	"  --search-rate N       searches a second allowed per client address (default 20;\n"
	"                        0: no limit, e.g. behind a proxy that limits)\n"
	"  --no-live             no live pages: open pages do not follow changes\n"
	"                        (/_quire/live answers 404; the pages stay quiet)\n"
	"  --verbose             log each change applied: paths, notes parsed, rendered and\n"
	"                        composed, and the time each step took\n"
	"\n"
	"Under systemd (Type=notify, $NOTIFY_SOCKET) it reports READY=1 once the site is\n"
	"served and STOPPING=1 when it stops.\n"
	"\n"
	"Exit status: 0 stopped by a signal; 1 the vault, the address or the token could\n"
	"not be used; 2 usage.\n";

const struct option serve_options[] = {
	{ "vault", required_argument, NULL, 'v' },
	{ "listen", required_argument, NULL, 'l' },
	{ "threads", required_argument, NULL, 't' },
	{ "data-dir", required_argument, NULL, 'd' },
	{ "access-log", required_argument, NULL, 'a' },
	{ "log-format", required_argument, NULL, 'f' },
	{ "log-file", required_argument, NULL, 'L' },
	{ "metrics-public", no_argument, NULL, 'm' },
	{ "max-connections", required_argument, NULL, 'c' },
	{ "max-per-address", required_argument, NULL, 'A' },
	{ "trusted-proxy", required_argument, NULL, 'P' },
	{ "header-timeout", required_argument, NULL, 'H' },
	{ "no-watch", no_argument, NULL, 'w' },
	{ "base-url", required_argument, NULL, 'b' },
	{ "token-file", required_argument, NULL, 'k' },
	{ "max-upload", required_argument, NULL, 'u' },
	{ "search-rate", required_argument, NULL, 'r' },
	{ "no-live", no_argument, NULL, 'n' },
	{ "verbose", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The watcher's batches go straight into the loader's queue, timed from their first event. */
static void on_change(void *ctx, const char *const *paths, size_t n)
{
	struct change_origin o = { CHANGE_WATCHER, "", watch_batch_start_ms() };

	loader_notify_from(ctx, paths, n, &o);
}

static int parse_int(const char *s, const char *flag, int min, int max, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v < min || v > max) {
		fprintf(stderr, "quire serve: %s takes a number from %d to %d, got '%s'\n", flag, min,
			max, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}


/*
 * The token: the first line of file (trailing whitespace dropped), else
 * $QUIRE_TOKEN, else NULL (no sync API). Returns -1 when the file cannot
 * be read or holds no token.
 */
static int read_token(const char *file, char **out)
{
	struct buf b = BUF_INIT;
	const char *env = getenv("QUIRE_TOKEN");
	char cred[4096];
	size_t n;
	int ret = -1;

	*out = NULL;
	if (!file && systemd_credential("token", cred, sizeof(cred)) == 0)
		file = cred; /* LoadCredential=token:... in the unit (docs/deploy.md) */
	if (!file) {
		if (env && *env)
			*out = xstrdup(env);
		return 0;
	}
	/*
	 * Opening the token file: read whole with read_file() (it is one line).
	 * Its first line is the token, so a trailing newline from an editor or
	 * `echo` does not become part of it.
	 * Rejected: the token on the command line (visible in ps).
	 */
	if (read_file(file, &b) < 0) {
		fprintf(stderr, "quire serve: %s: %s\n", file, strerror(errno));
		goto out;
	}
	n = strcspn(b.ptr, "\r\n");
	while (n && (b.ptr[n - 1] == ' ' || b.ptr[n - 1] == '\t'))
		n--;
	if (!n) {
		fprintf(stderr, "quire serve: %s holds no token\n", file);
		goto out;
	}
	*out = xstrndup(b.ptr, n);
	ret = 0;
out:
	buf_release(&b);
	return ret;
}

/* What the command line asks of serve. */
struct serve_args {
	struct http_options ho;
	struct site_options so;
	const char *vault, *token_file, *data_dir;
	size_t max_upload;
	int watching, search_rate, live;
	enum log_format log_format;
	const char *log_file;
	struct buf trusted;   /* the --trusted-proxy values, separated by spaces */
};

/* Parses the command line into a: 0, 1 when --help was printed, or 2 (usage printed). */
static int parse_args(int argc, char **argv, struct serve_args *a)
{
	int c;

	memset(a, 0, sizeof(*a));
	buf_init(&a->trusted, 0);
	a->vault = ".";
	a->max_upload = SYNCAPI_DEFAULT_MAX_UPLOAD;
	a->watching = 1;
	a->live = 1;
	a->search_rate = 20;
	a->log_format = LOG_TEXT;
	a->ho.listen = "127.0.0.1:8080";
	a->ho.threads = parallel_cpus();
	a->ho.max_connections = 10000;
	while ((c = getopt_long(argc, argv, "", serve_options, NULL)) != -1) {
		switch (c) {
		case 'v': a->vault = optarg; break;
		case 'l': a->ho.listen = optarg; break;
		case 't':
			if (parse_int(optarg, "--threads", 1, 256, &a->ho.threads) < 0)
				return 2;
			break;
		case 'd': a->data_dir = optarg; break;
		case 'a': a->ho.access_log = optarg; break;
		case 'f':
			if (log_parse_format(optarg, &a->log_format) < 0) {
				fprintf(stderr, "quire serve: --log-format takes text or json, got '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'L': a->log_file = optarg; break;
		case 'm': a->ho.metrics_public = 1; break;
		case 'c':
			if (parse_int(optarg, "--max-connections", 1, 1000000,
				      &a->ho.max_connections) < 0)
				return 2;
			break;
		case 'A':
			if (parse_int(optarg, "--max-per-address", 1, 1000000,
				      &a->ho.max_per_address) < 0)
				return 2;
			break;
		case 'P':
			buf_adds(&a->trusted, optarg);
			buf_addc(&a->trusted, ' ');
			a->ho.trusted_proxies = a->trusted.ptr;
			break;
		case 'H':
			if (parse_int(optarg, "--header-timeout", 1, 3600, &a->ho.header_timeout_s) < 0)
				return 2;
			break;
		case 'w': a->watching = 0; break;
		case 'n': a->live = 0; break;
		case 'b': a->so.base_url = optarg; break;
		case 'k': a->token_file = optarg; break;
		case 'r':
			if (parse_int(optarg, "--search-rate", 0, 1000000, &a->search_rate) < 0)
				return 2;
			break;
		case 'u':
			if (config_parse_size(optarg, &a->max_upload) < 0) {
				fprintf(stderr, "quire serve: --max-upload takes a size such as "
						"1048576, 512K or 64M, got '%s'\n", optarg);
				return 2;
			}
			break;
		case 'V': log_set_level(LOG_DEBUG); break;
		case 'h': fputs(serve_usage, stdout); return 1;
		default: fputs(serve_usage, stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "quire serve: unexpected argument '%s'\n%s", argv[optind], serve_usage);
		return 2;
	}
	return 0;
}

/* Everything serve runs, shared by the thread that loads and the one that serves. */
struct serve {
	struct serve_args args;
	struct snapshot_slot slot;
	struct loader *loader;
	struct http_server *srv;
	struct syncapi *api;
	struct dav *dav;
	struct searchapi *search;
	struct watch *watch;
	struct purger *purger;
	struct live *live;
	struct progress *shown;
	char *token;
	pthread_t starter;
	atomic_int failed;        /* the starter could not load or wire: serve exits 1 */
};

/* SIGHUP, on the front's first loop: the logs opened again (logrotate), then a reload. */
static void on_reload(void *ctx)
{
	struct serve *sv = ctx;

	log_reopen();
	http_server_reopen_log(sv->srv);
	loader_reload(sv->loader);
}

/* The first load's progress, for /healthz and stderr. */
static void read_progress(void *ctx, size_t *notes, size_t *of)
{
	loader_progress(ctx, notes, of);
}

/*
 * The test hook that holds the first load once its notes are counted
 * ($QUIRE_TEST_HOLD_LOAD names a FIFO: the load goes on once a byte is
 * written to it), so that a test sees a server loading without racing
 * the load (tests/test-start.c).
 */
static void hold_load(void *ctx)
{
	char byte;
	int fd;

	log_info("test hook: holding the first load until %s is written", (char *)ctx);
	fd = open(ctx, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, &byte, 1) < 0)
		log_warn("%s: %s", (char *)ctx, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/*
 * Live pages: streams to a share of the connections, so that readers
 * following pages never hold every connection (the guard closes none of
 * them as idle): half of --max-connections, and half of an address's
 * share, at least 4.
 */
static int wire_live(struct serve *sv)
{
	const struct http_options *ho = &sv->args.ho;
	struct live_options lo;
	int per = ho->max_per_address > 0 ? ho->max_per_address
		  : ho->max_connections / 8 > 16 ? ho->max_connections / 8 : 16;

	memset(&lo, 0, sizeof(lo));
	lo.max_total = ho->max_connections > 1 ? (size_t)ho->max_connections / 2 : 1;
	lo.max_per_address = per / 2 > 4 ? (size_t)per / 2 : 4;
	if (!(sv->live = live_http_new(&lo)) || live_http_register(sv->live, sv->srv) < 0)
		return -1;
	loader_on_publish(sv->loader, live_on_publish, sv->live);
	return 0;
}

/* After the first load: what needs the site (purgers, the URL prefix, the APIs). 0 or -1. */
static int wire(struct serve *sv)
{
	const struct serve_args *a = &sv->args;
	const struct site *site = loader_site(sv->loader);
	struct syncapi_options sa;

	http_server_add_metrics(sv->srv, loader_metrics, sv->loader);
	/* quire.yml's purge: (read at start; a reload does not change the purgers) */
	if ((sv->purger = purger_new(site->cfg.purgers, site->cfg.npurgers))) {
		loader_on_publish(sv->loader, purger_on_publish, sv->purger);
		/* the cache may hold a past run's pages */
		purger_all(sv->purger, loader_version(sv->loader));
		http_server_add_metrics(sv->srv, purger_metrics, sv->purger);
	}
	http_server_set_url_prefix(sv->srv, site->cfg.url_prefix);
	if (a->live && wire_live(sv) < 0)
		return -1;
	if (sv->token) {
		memset(&sa, 0, sizeof(sa));
		sa.vault = a->vault;
		sa.token = sv->token;
		sa.data_dir = a->data_dir;
		sa.max_upload = a->max_upload;
		sa.loopback = http_server_loopback(sv->srv);
		sv->api = syncapi_new(&sa, sv->loader);
		if (!sv->api || syncapi_register(sv->api, sv->srv) < 0)
			return -1;
		log_info("sync: API enabled at /api/v1/ (uploads up to %zu bytes)", a->max_upload);
		sv->dav = dav_new(sv->api, site->cfg.url_prefix);
		if (!sv->dav || dav_register(sv->dav, sv->srv) < 0)
			return -1;
		log_info("dav: WebDAV enabled at %s/dav/ (the token as the password)",
			 site->cfg.url_prefix);
	} else if (dav_register_off(sv->srv) < 0) {
		return -1;
	}
	if (loader_search_path(sv->loader)) {
		/* --search-rate a second per address (default 20), bursts of twice that; 0: no limit */
		double rate = a->search_rate ? a->search_rate : 1e9;
		sv->search = searchapi_new(loader_search_path(sv->loader), &site->layout, rate,
					   2 * rate);
		if (!sv->search || searchapi_register(sv->search, sv->srv) < 0)
			return -1;
		http_server_add_metrics(sv->srv, searchapi_metrics, sv->search);
	}
	return 0;
}

/*
 * The starter thread: the first load while the front answers 503, then
 * the wiring, the loader thread and the watcher, and the front opens.
 * On failure it stops the front, so that serve exits 1.
 */
static void *start(void *arg)
{
	struct serve *sv = arg;
	const struct serve_args *a = &sv->args;
	const struct site *site;
	struct site_stats st;

	if (loader_load(sv->loader) < 0 || wire(sv) < 0) {
		progress_stop(sv->shown);
		sv->shown = NULL;
		sv->failed = 1;
		http_server_stop(sv->srv);
		return NULL;
	}
	progress_stop(sv->shown);
	sv->shown = NULL;
	site = loader_site(sv->loader);
	site_stats(site, &st);
	{
		struct log_event e;
		log_event_init(&e, LOG_INFO, "load");
		log_event_uint(&e, "notes", st.notes);
		log_event_uint(&e, "published", st.published);
		log_event_uint(&e, "version", loader_version(sv->loader));
		log_event_ms(&e, "duration_ms", site->load_ms);
		log_event_emit(&e, "loaded %zu notes (%zu published) in %.0f ms", st.notes,
			       st.published, site->load_ms);
	}
	if (loader_start(sv->loader) < 0) {
		sv->failed = 1;
		http_server_stop(sv->srv);
		return NULL;
	}
	if (a->watching) {
		sv->watch = watch_new(a->vault, on_change, sv->loader);
		if (!sv->watch)
			log_warn("not watching %s for changes; SIGHUP reloads it", a->vault);
	}
	http_server_ready(sv->srv);
	{
		const char *listen = a->ho.listen, *colon = strrchr(listen, ':');
		int hostlen = colon ? (int)(colon - listen) : (int)strlen(listen);
		/* what scripts wait for: the site is served from here on */
		printf("serving %s at http://%.*s:%d%s/\n", a->vault, hostlen, listen,
		       http_server_port(sv->srv), site->cfg.url_prefix);
		fflush(stdout);
		/* Type=notify: started once the first snapshot is live and answered */
		systemd_notify("READY=1\nSTATUS=serving %s at http://%.*s:%d%s/", a->vault, hostlen,
			       listen, http_server_port(sv->srv), site->cfg.url_prefix);
	}
	return NULL;
}

/* Makes the loader (no load yet) and the front, which listens at once. 0 or -1. */
static int open_front(struct serve *sv)
{
	struct serve_args *a = &sv->args;
	struct site_options so = a->so;
	struct site_progress hold = { 0 };
	struct http_options ho = a->ho;
	const char *colon;

	so.data_dir = a->data_dir;
	so.search = 1;
	if (getenv("QUIRE_TEST_HOLD_LOAD")) {
		hold.scanned = hold_load;
		hold.ctx = getenv("QUIRE_TEST_HOLD_LOAD");
		so.progress = &hold;
	}
	sv->loader = loader_create(a->vault, &so, &sv->slot);
	ho.slot = &sv->slot;
	ho.loading = 1;
	ho.progress = read_progress;
	ho.progress_ctx = sv->loader;
	ho.handle_signals = 1;
	ho.on_reload = on_reload;
	ho.reload_ctx = sv;
	ho.access_log_json = a->log_format == LOG_JSON;
	if (sv->token)
		ho.max_body_size = a->max_upload; /* evhttp answers 413 beyond it */
	sv->srv = http_server_new(&ho);
	if (!sv->srv)
		return -1;
	colon = strrchr(ho.listen, ':');
	{
		struct log_event e;
		log_event_init(&e, LOG_INFO, "listen");
		log_event_str(&e, "listen", ho.listen);
		log_event_int(&e, "port", http_server_port(sv->srv));
		log_event_str(&e, "vault", a->vault);
		log_event_emit(&e, "listening at http://%.*s:%d/ (503 until %s is loaded)",
			       colon ? (int)(colon - ho.listen) : (int)strlen(ho.listen), ho.listen,
			       http_server_port(sv->srv), a->vault);
	}
	return 0;
}

int serve_main(int argc, char **argv)
{
	struct serve sv;
	int ret;

	memset(&sv, 0, sizeof(sv));
	if ((ret = parse_args(argc, argv, &sv.args)) != 0)
		return ret == 1 ? 0 : 2;
	if (read_token(sv.args.token_file, &sv.token) < 0 ||
	    log_setup(sv.args.log_format, sv.args.log_file) < 0)
		return 1;
	ret = 1;
	/* pages keep their gzip bytes only; the rare client that refuses gzip gets them inflated */
	page_keep_identity(0);
	snapshot_slot_init(&sv.slot);
	/* a bad quire.yml stops the server before it listens: nothing is served under it */
	if (site_check_settings(sv.args.vault, &sv.args.so) < 0 || open_front(&sv) < 0)
		goto out;
	sv.shown = progress_start("loading", read_progress, sv.loader, 1);
	if (pthread_create(&sv.starter, NULL, start, &sv) != 0) {
		log_error("cannot start the loading thread");
		goto out;
	}
	ret = http_server_run(sv.srv) < 0 ? 1 : 0;
	systemd_notify("STOPPING=1");
	if (loader_progress(sv.loader, &(size_t){ 0 }, &(size_t){ 0 }) && !sv.failed) {
		/*
		 * Stopped while the first load runs: nothing is written before it
		 * ends, and it cannot be cut short; waiting for it would hold a
		 * stop for as long as the load takes.
		 */
		log_info("stopped before the vault was loaded");
		fflush(NULL);
		_exit(ret);
	}
	pthread_join(sv.starter, NULL);
	if (sv.failed)
		ret = 1;
out:
	watch_free(sv.watch);
	syncapi_free(sv.api); /* answers what it still holds before the server goes */
	dav_free(sv.dav);     /* after the sync API's threads, which run its jobs */
	http_server_free(sv.srv);
	searchapi_free(sv.search);
	loader_free(sv.loader);
	purger_free(sv.purger); /* after the loader, whose thread queues to it */
	live_free(sv.live);     /* the same; the front's stop ended its streams */
	progress_stop(sv.shown);
	snapshot_slot_release(&sv.slot);
	buf_release(&sv.args.trusted);
	if (sv.token) {
		memset(sv.token, 0, strlen(sv.token));
		free(sv.token);
	}
	return ret;
}
