/*
 * serve.c: the glue between the loader and the HTTP front.
 *
 * The first load runs before the port opens, so the first request already
 * sees every page; after that the loader thread owns the site and the
 * front only ever reads published snapshots.
 */
#include "serve.h"
#include "http.h"
#include "loader.h"
#include "log.h"
#include "parallel.h"
#include "site.h"
#include "watch.h"
#include "xalloc.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char serve_usage[] =
	"usage: quire serve [--vault DIR] [--listen ADDR:PORT] [--threads N] [--data-dir DIR]\n"
	"                   [--access-log FILE] [--metrics-public] [--max-connections N]\n"
	"                   [--no-watch] [--base-url URL]\n"
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
	"  --no-watch            do not watch the vault for changes\n"
	"  --base-url URL        overrides base_url of quire.yml\n";

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

int serve_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "vault", required_argument, NULL, 'v' },
		{ "listen", required_argument, NULL, 'l' },
		{ "threads", required_argument, NULL, 't' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "access-log", required_argument, NULL, 'a' },
		{ "metrics-public", no_argument, NULL, 'm' },
		{ "max-connections", required_argument, NULL, 'c' },
		{ "no-watch", no_argument, NULL, 'w' },
		{ "base-url", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct http_options ho;
	struct site_options so = { .base_url = NULL };
	struct snapshot_slot slot;
	struct loader *loader = NULL;
	struct http_server *srv = NULL;
	const struct site *site;
	const char *vault = ".";
	struct watch *watch = NULL;
	int c, ret = 1, watching = 1;

	memset(&ho, 0, sizeof(ho));
	ho.listen = "127.0.0.1:8080";
	ho.threads = parallel_cpus();
	ho.max_connections = 10000;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'v': vault = optarg; break;
		case 'l': ho.listen = optarg; break;
		case 't':
			if (parse_int(optarg, "--threads", 1, 256, &ho.threads) < 0)
				return 2;
			break;
		case 'd': so.data_dir = optarg; break;
		case 'a': ho.access_log = optarg; break;
		case 'm': ho.metrics_public = 1; break;
		case 'c':
			if (parse_int(optarg, "--max-connections", 1, 1000000, &ho.max_connections) < 0)
				return 2;
			break;
		case 'w': watching = 0; break;
		case 'b': so.base_url = optarg; break;
		case 'h': fputs(serve_usage, stdout); return 0;
		default: fputs(serve_usage, stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "quire serve: unexpected argument '%s'\n%s", argv[optind], serve_usage);
		return 2;
	}

	snapshot_slot_init(&slot);
	loader = loader_new(vault, &so, &slot);
	if (!loader)
		goto out;
	site = loader_site(loader);
	ho.slot = &slot;
	ho.url_prefix = site->cfg.url_prefix;
	ho.handle_signals = 1;
	ho.on_reload = on_reload;
	ho.reload_ctx = loader;
	srv = http_server_new(&ho);
	if (!srv)
		goto out;
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
	}
	if (loader_start(loader) < 0)
		goto out;
	if (watching) {
		watch = watch_new(vault, on_change, loader);
		if (!watch)
			log_warn("not watching %s for changes; SIGHUP reloads it", vault);
	}
	ret = http_server_run(srv) < 0 ? 1 : 0;
out:
	watch_free(watch);
	http_server_free(srv);
	loader_free(loader);
	snapshot_slot_release(&slot);
	return ret;
}
