/*
 * apply-bench.c: what one edit costs the loader, on a vault of any size.
 *
 *	apply-bench VAULT [EDITS] [SEED]
 *
 * Loads VAULT (a copy: it edits notes in place, so point it at a generated
 * vault under bench/vaults), then edits EDITS random published notes one
 * at a time (a paragraph appended, as a sync of that note would), and for
 * each runs what the loader runs: site_apply() on the path and
 * site_snapshot() from the previous snapshot. Prints the load time and the
 * distribution of per-edit times, and how many notes each edit parsed,
 * rendered and composed. Figures, not assertions.
 */
#include "markdown.h"
#include "site.h"
#include "vault.h"

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

static double pct(const double *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

int main(int argc, char **argv)
{
	const char *vault = argc > 1 ? argv[1] : "bench/vaults/v1k";
	size_t edits = argc > 2 ? strtoul(argv[2], NULL, 10) : 200, i;
	unsigned seed = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 1;
	struct snapshot *snap;
	struct site *s;
	double *t, total = 0, t0;
	size_t parsed = 0, rendered = 0, composed = 0;

	md_global_init();
	t0 = now_ms();
	s = site_load(vault, NULL);
	if (!s)
		return 1;
	snap = site_snapshot(s, NULL);
	printf("vault %s: %zu notes loaded in %.0f ms\n", vault, s->nnotes, now_ms() - t0);
	t = calloc(edits, sizeof(*t));
	srand(seed);
	for (i = 0; i < edits; i++) {
		struct site_note *n = s->notes[(size_t)rand() % s->nnotes];
		struct buf path = BUF_INIT, text = BUF_INIT;
		const char *rel = n->disk;
		struct snapshot *next;
		FILE *f;

		if (!n->published) {
			i--;
			continue;
		}
		buf_addf(&path, "%s/%s", vault, n->disk);
		read_file(path.ptr, &text);
		buf_addf(&text, "\nEdit %zu: a new paragraph, as a sync of this note would bring.\n", i);
		f = fopen(path.ptr, "w");
		fwrite(text.ptr, 1, text.len, f);
		fclose(f);
		t0 = now_ms();
		site_apply(s, &rel, 1);
		next = site_snapshot(s, snap);
		t[i] = now_ms() - t0;
		snapshot_unref(snap);
		snap = next;
		total += t[i];
		parsed += s->napplied;
		rendered += s->nrendered;
		composed += s->ncomposed;
		buf_release(&path);
		buf_release(&text);
	}
	qsort(t, edits, sizeof(*t), cmp_double);
	printf("%zu edits: per edit p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms, mean %.2f ms\n",
	       edits, pct(t, edits, 0.5), pct(t, edits, 0.9), pct(t, edits, 0.99), t[edits - 1],
	       total / (double)edits);
	printf("per edit on average: %.1f notes parsed, %.1f rendered, %.1f pages composed\n",
	       (double)parsed / (double)edits, (double)rendered / (double)edits,
	       (double)composed / (double)edits);
	free(t);
	snapshot_unref(snap);
	site_free(s);
	return 0;
}
