/*
 * http-bench-server.c: serves one page with the real HTTP front, for
 * bench/http-vs-nginx.sh.
 *
 *	http-bench-server PAGE.html PAGE.html.gz PORT [THREADS]
 *
 * Builds a one-page snapshot at /page from the two files (the gzip bytes
 * are the ones nginx serves with gzip_static, so both servers send the
 * same bytes), plus a 404 page, and runs http_server until SIGINT/SIGTERM.
 * Prints "ready PORT" on stdout once listening.
 *
 * GET /allocs answers the allocations the process has made so far, from
 * jemalloc's statistics (stats.arenas.<all>.small.nmalloc + large.nmalloc):
 * the script reads it before and after a run and divides the difference
 * by the requests wrk made, so the page path's allocations per request are
 * measured, not assumed. Built without jemalloc (the sanitizers), it
 * answers "unknown".
 */
#include "util/hash.h"
#include "http/http.h"
#include "util/log.h"
#include "site/snapshot.h"
#include "util/xalloc.h"

#ifdef QUIRE_JEMALLOC
#include <jemalloc/jemalloc.h>
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *p;

	if (!f || fstat(fileno(f), &st) < 0) {
		perror(path);
		exit(1);
	}
	p = xmalloc((size_t)st.st_size + 1);
	if (fread(p, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		perror(path);
		exit(1);
	}
	fclose(f);
	*len = (size_t)st.st_size;
	return p;
}

/* The allocations made so far, or -1 when jemalloc's statistics are not there. */
static long long allocations(void)
{
#ifdef QUIRE_JEMALLOC
	uint64_t epoch = 1, small = 0, large = 0;
	size_t sz = sizeof(epoch);

	if (mallctl("epoch", &epoch, &sz, &epoch, sz) != 0)
		return -1;
	sz = sizeof(small);
	if (mallctl("stats.arenas." STRINGIFY(MALLCTL_ARENAS_ALL) ".small.nmalloc", &small, &sz,
		    NULL, 0) != 0 ||
	    mallctl("stats.arenas." STRINGIFY(MALLCTL_ARENAS_ALL) ".large.nmalloc", &large, &sz,
		    NULL, 0) != 0)
		return -1;
	return (long long)(small + large);
#else
	return -1;
#endif
}

static void on_allocs(struct http_request *req, void *ctx)
{
	char out[32];
	long long n = allocations();

	(void)ctx;
	if (n < 0)
		snprintf(out, sizeof(out), "unknown\n");
	else
		snprintf(out, sizeof(out), "%lld\n", n);
	http_reply(req, 200, "text/plain", out, strlen(out));
}

int main(int argc, char **argv)
{
	struct snapshot_slot slot;
	struct snapshot *s;
	struct page *p, *nf;
	struct http_options opt = { 0 };
	struct http_server *srv;
	struct stat st;
	char listen[64], *body;
	size_t len;
	int rc;

	if (argc < 4) {
		fprintf(stderr, "usage: %s PAGE.html PAGE.html.gz PORT [THREADS]\n", argv[0]);
		return 2;
	}
	s = snapshot_new(1);
	p = page_new(PAGE_NOTE, "/page", 5);
	body = slurp(argv[1], &len);
	if (page_set_body(p, body, len, 0) < 0)
		return 1;
	p->gz = slurp(argv[2], &p->gz_len);
	hash_etag(p->gz, p->gz_len, p->gz_etag);
	if (stat(argv[1], &st) == 0)
		p->mtime = st.st_mtime;
	snapshot_put(s, p);
	nf = page_new(PAGE_NOT_FOUND, "/404", 4);
	if (page_set_body(nf, xstrdup("<h1>Not found</h1>\n"), 19, 0) < 0)
		return 1;
	snapshot_set_not_found(s, nf);
	s->nnotes = 1;
	snapshot_slot_init(&slot);
	snapshot_publish(&slot, s);

	snprintf(listen, sizeof(listen), "127.0.0.1:%s", argv[3]);
	opt.listen = listen;
	opt.threads = argc > 4 ? atoi(argv[4]) : 1;
	opt.slot = &slot;
	opt.handle_signals = 1;
	opt.max_connections = 10000;
	log_set_level(LOG_WARN);
	if (!(srv = http_server_new(&opt)) || http_server_add_handler(srv, "/allocs", on_allocs, NULL) < 0)
		return 1;
	printf("ready %d\n", http_server_port(srv));
	fflush(stdout);
	rc = http_server_run(srv);
	http_server_free(srv);
	snapshot_slot_release(&slot);
	return rc ? 1 : 0;
}
