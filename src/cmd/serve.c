/*
 * serve.c: the glue between the loader, the HTTP front and the sync API.
 *
 * The first load runs before the port opens, so the first request already
 * sees every page; after that the loader thread owns the site and the
 * front only ever reads published snapshots. With a token (--token-file or
 * QUIRE_TOKEN) the sync API is registered under /api/v1/ and WebDAV under
 * /dav/ (dav.h); without one those URLs are plain 404s.
 */
#include "cmd/serve.h"
#include "cmd/systemd.h"
#include "http/http.h"
#include "http/purge.h"
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
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char serve_usage[] =
	"usage: quire serve [--vault DIR] [--listen ADDR:PORT] [--threads N] [--data-dir DIR]\n"
	"                   [--access-log FILE] [--metrics-public] [--max-connections N]\n"
	"                   [--max-per-address N]\n"
	"                   [--no-watch] [--base-url URL] [--token-file FILE] [--max-upload BYTES]\n"
	"                   [--search-rate N] [--verbose]\n"
	"\n"
	"Renders the vault and serves it. SIGHUP reloads quire.yml and the vault;\n"
	"SIGINT and SIGTERM stop after the responses in flight.\n"
	"\n"
	"  --vault DIR           the vault (default: the current folder)\n"
	"  --listen ADDR:PORT    where to listen (default 127.0.0.1:8080; port 0 picks one)\n"
	"  --threads N           serving threads (default: one per core)\n"
	"  --data-dir DIR        state kept between runs (default: <vault>/.quire)\n"
	"  --access-log FILE     write requests in the common log format\n"
	"  --metrics-public      serve /metrics to any address, not only loopback\n"
	"  --max-connections N   refuse connections beyond N (default 10000)\n"
	"  --max-per-address N   connections one client address may hold (default: an\n"
	"                        eighth of --max-connections; behind a reverse proxy every\n"
	"                        client has its address)\n"
	"  --no-watch            do not watch the vault for changes\n"
	"  --base-url URL        overrides base_url of quire.yml\n"
	"  --token-file FILE     enables the sync API (/api/v1/) and WebDAV (/dav/, the\n"
	"                        token as the password) for this token; without it, the\n"
	"                        systemd credential token ($CREDENTIALS_DIRECTORY/token)\n"
	"                        or the environment variable QUIRE_TOKEN does the same\n"
	"  --max-upload BYTES    largest file the sync API accepts (default 64M; K, M, G)\n"
	"  --search-rate N       searches a second allowed per client address (default 20;\n"
	"                        0: no limit, e.g. behind a proxy that limits)\n"
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
	{ "metrics-public", no_argument, NULL, 'm' },
	{ "max-connections", required_argument, NULL, 'c' },
	{ "max-per-address", required_argument, NULL, 'A' },
	{ "no-watch", no_argument, NULL, 'w' },
	{ "base-url", required_argument, NULL, 'b' },
	{ "token-file", required_argument, NULL, 'k' },
	{ "max-upload", required_argument, NULL, 'u' },
	{ "search-rate", required_argument, NULL, 'r' },
	{ "verbose", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The watcher's batches go straight into the loader's queue. */
static void on_change(void *ctx, const char *const *paths, size_t n)
{
	loader_notify(ctx, paths, n);
}

static void on_reload(void *ctx)
{
	log_info("SIGHUP: reloading");
	loader_reload(ctx);
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
	int watching, search_rate;
};

/* Parses the command line into a: 0, 1 when --help was printed, or 2 (usage printed). */
static int parse_args(int argc, char **argv, struct serve_args *a)
{
	int c;

	memset(a, 0, sizeof(*a));
	a->vault = ".";
	a->max_upload = SYNCAPI_DEFAULT_MAX_UPLOAD;
	a->watching = 1;
	a->search_rate = 20;
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
		case 'w': a->watching = 0; break;
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

int serve_main(int argc, char **argv)
{
	struct serve_args args;
	struct http_options ho;
	struct site_options so;
	struct snapshot_slot slot;
	struct loader *loader = NULL;
	struct http_server *srv = NULL;
	struct syncapi *api = NULL;
	struct dav *dav = NULL;
	struct searchapi *search = NULL;
	struct syncapi_options sa;
	const struct site *site;
	const char *vault, *token_file, *data_dir;
	char *token = NULL;
	size_t max_upload;
	struct watch *watch = NULL;
	struct purger *purger = NULL;
	int ret = 1, watching, search_rate;

	if ((ret = parse_args(argc, argv, &args)) != 0)
		return ret == 1 ? 0 : 2;
	ret = 1;
	ho = args.ho;
	so = args.so;
	vault = args.vault;
	token_file = args.token_file;
	data_dir = args.data_dir;
	max_upload = args.max_upload;
	watching = args.watching;
	search_rate = args.search_rate;

	if (read_token(token_file, &token) < 0)
		return 1;
	so.data_dir = data_dir;
	so.search = 1;
	/* pages keep their gzip bytes only; the rare client that refuses gzip gets them inflated */
	page_keep_identity(0);
	snapshot_slot_init(&slot);
	loader = loader_new(vault, &so, &slot);
	if (!loader)
		goto out;
	site = loader_site(loader);
	/* quire.yml's purge: (read at start; a reload does not change the purgers) */
	if ((purger = purger_new(site->cfg.purgers, site->cfg.npurgers))) {
		loader_on_publish(loader, purger_on_publish, purger);
		purger_all(purger, loader_version(loader)); /* the cache may hold a past run's pages */
		ho.metrics = purger_metrics;
		ho.metrics_ctx = purger;
	}
	ho.slot = &slot;
	ho.url_prefix = site->cfg.url_prefix;
	ho.handle_signals = 1;
	ho.on_reload = on_reload;
	ho.reload_ctx = loader;
	if (token)
		ho.max_body_size = max_upload; /* evhttp answers 413 beyond it */
	srv = http_server_new(&ho);
	if (!srv)
		goto out;
	if (token) {
		memset(&sa, 0, sizeof(sa));
		sa.vault = vault;
		sa.token = token;
		sa.data_dir = data_dir;
		sa.max_upload = max_upload;
		sa.loopback = http_server_loopback(srv);
		api = syncapi_new(&sa, loader);
		if (!api || syncapi_register(api, srv) < 0)
			goto out;
		fprintf(stderr, "sync API enabled at /api/v1/ (uploads up to %zu bytes)\n", max_upload);
		dav = dav_new(api, site->cfg.url_prefix);
		if (!dav || dav_register(dav, srv) < 0)
			goto out;
		fprintf(stderr, "WebDAV enabled at %s/dav/ (the token as the password)\n",
			site->cfg.url_prefix);
	}
	if (!token && dav_register_off(srv) < 0)
		goto out;
	if (loader_search_path(loader)) {
		/* --search-rate a second per address (default 20), bursts of twice that; 0: no limit */
		double rate = search_rate ? search_rate : 1e9;
		search = searchapi_new(loader_search_path(loader), &site->layout, rate, 2 * rate);
		if (!search || searchapi_register(search, srv) < 0)
			goto out;
	}
	{
		struct site_stats st;
		site_stats(site, &st);
		fprintf(stderr, "loaded %zu notes (%zu published) in %.0f ms\n", st.notes,
			st.published, site->load_ms);
	}
	{
		const char *colon = strrchr(ho.listen, ':');
		int hostlen = colon ? (int)(colon - ho.listen) : (int)strlen(ho.listen);
		printf("serving %s at http://%.*s:%d%s/\n", vault, hostlen, ho.listen,
		       http_server_port(srv), site->cfg.url_prefix);
		fflush(stdout);
		/* Type=notify: started once the first snapshot is live and answered */
		systemd_notify("READY=1\nSTATUS=serving %s at http://%.*s:%d%s/", vault, hostlen,
			       ho.listen, http_server_port(srv), site->cfg.url_prefix);
	}
	if (loader_start(loader) < 0)
		goto out;
	if (watching) {
		watch = watch_new(vault, on_change, loader);
		if (!watch)
			log_warn("not watching %s for changes; SIGHUP reloads it", vault);
	}
	ret = http_server_run(srv) < 0 ? 1 : 0;
	systemd_notify("STOPPING=1");
out:
	watch_free(watch);
	syncapi_free(api); /* answers what it still holds before the server goes */
	dav_free(dav);     /* after the sync API's threads, which run its jobs */
	http_server_free(srv);
	searchapi_free(search);
	loader_free(loader);
	purger_free(purger); /* after the loader, whose thread queues to it */
	snapshot_slot_release(&slot);
	if (token) {
		memset(token, 0, strlen(token));
		free(token);
	}
	return ret;
}
