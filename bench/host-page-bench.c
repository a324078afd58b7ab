/*
 * host-page-bench.c: what a page of an open host costs on its first request.
 *
 *	host-page-bench VAULT HOST [PAGES]
 *
 * Loads VAULT (whose quire.yml makes HOST an open host: bench/hosts-bench.sh
 * writes such a copy), takes the snapshot, and asks it for PAGES published
 * notes (default 500) on HOST, as the front does on a first request:
 * hosts_page() rewrites the main page for the host and gzips it. Each page
 * is asked twice; the second answer comes from the snapshot's cache. Prints
 * the distribution of both, and the mean page size. Figures, not
 * assertions.
 */
#include "site/hosts.h"
#include "markdown/markdown.h"
#include "site/site.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *vault = argc > 1 ? argv[1] : NULL, *host = argc > 2 ? argv[2] : NULL;
	size_t want = argc > 3 ? strtoul(argv[3], NULL, 10) : 500, n = 0, i, bytes = 0;
	struct site_options so = { 0 };
	struct snapshot_host *h = NULL;
	struct snapshot *snap;
	struct site *s;
	double *first, *again;

	if (!vault || !host) {
		fprintf(stderr, "usage: host-page-bench VAULT HOST [PAGES]\n");
		return 2;
	}
	md_global_init();
	if (!(s = site_load(vault, &so)))
		return 1;
	snap = site_snapshot(s, NULL);
	if (hosts_find(snap, host, &h) != HOST_CUSTOM || !h->open) {
		fprintf(stderr, "host-page-bench: %s is not an open host of %s\n", host, vault);
		return 1;
	}
	first = calloc(want + 1, sizeof(*first));
	again = calloc(want + 1, sizeof(*again));
	for (i = 0; i < s->nnotes && n < want; i++) {
		const struct site_note *note = s->notes[i];
		struct page *p;
		double t0;
		if (!note->published || map_gets(&h->pages, note->url))
			continue;
		t0 = now_ms();
		p = hosts_page(snap, h, note->url, strlen(note->url));
		first[n] = now_ms() - t0;
		t0 = now_ms();
		if (hosts_page(snap, h, note->url, strlen(note->url)) != p)
			return 1;
		again[n] = now_ms() - t0;
		bytes += p ? p->body_len : 0;
		n++;
	}
	if (!n)
		return 1;
	qsort(first, n, sizeof(*first), cmp_double);
	qsort(again, n, sizeof(*again), cmp_double);
	printf("%zu pages of %s on %s, mean %zu bytes\n", n, vault, host, bytes / n);
	printf("first request (rewrite + gzip): p50 %.3f ms, p90 %.3f ms, max %.3f ms\n",
	       first[n / 2], first[n * 9 / 10], first[n - 1]);
	printf("again (from the snapshot's cache): p50 %.4f ms, p90 %.4f ms\n", again[n / 2],
	       again[n * 9 / 10]);
	free(first);
	free(again);
	snapshot_unref(snap);
	site_free(s);
	return 0;
}
