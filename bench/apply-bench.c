/*
 * apply-bench.c: what one edit costs the loader, on a vault of any size.
 *
 *	apply-bench VAULT [EDITS] [SEED] [search]
 *
 * Loads VAULT (a copy: it edits notes in place, so point it at a generated
 * vault under bench/vaults), then edits EDITS random published notes one
 * at a time (a paragraph appended, as a sync of that note would), and for
 * each runs what the loader runs: site_apply() on the path and
 * site_snapshot() from the previous snapshot. Prints the load time and the
 * distribution of per-edit times, and how many notes each edit parsed,
 * rendered and composed. With "search", a search index (in a temporary
 * file) is attached first, and the time to write each edit's rows after
 * the snapshot (site_search_flush) is reported too. When the environment
 * names a file in APPLY_SKIP, notes whose vault paths are lines of it are
 * never edited (bench/hosts-bench.sh: the same edits with and without
 * routes). APPLY_THREADS sets the loader's threads (1 under callgrind, so
 * that every instruction runs inside one_edit). The peak resident memory
 * is printed last. Figures, not
 * assertions.
 */
#include "markdown.h"
#include "search.h"
#include "site.h"
#include "vault.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU time of the whole process (every thread), in ms: steadier than wall time on a busy machine. */
static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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

/*
 * What the loader runs for one change: its own function, so that
 * `valgrind --tool=callgrind --collect-atstart=no --toggle-collect=one_edit`
 * counts the instructions of the edits and not of the load.
 */
__attribute__((noinline)) static struct snapshot *one_edit(struct site *s, const char *rel,
							  const struct snapshot *prev)
{
	site_apply(s, &rel, 1);
	return site_snapshot(s, prev);
}

/* Whether path is a whole line of list. */
static int skipped(const char *list, const char *path)
{
	size_t n = strlen(path);
	const char *p = list;

	while (p && (p = strstr(p, path))) {
		if ((p == list || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
			return 1;
		p += n;
	}
	return 0;
}

/* VmHWM of /proc/self/status, in kB. */
static long peak_rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	const char *vault = argc > 1 ? argv[1] : "bench/vaults/v1k";
	size_t edits = argc > 2 ? strtoul(argv[2], NULL, 10) : 200, i;
	unsigned seed = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 1;
	struct snapshot *snap;
	struct site *s;
	double *t, *ct, total = 0, t0, c0;
	size_t parsed = 0, rendered = 0, composed = 0;

	int with_search = argc > 4 && !strcmp(argv[4], "search");
	struct site_options so = { .search = with_search };
	struct search *index = NULL;
	char dbpath[] = "/tmp/quire-apply-bench-XXXXXX";
	double *ft = NULL;
	char *skip = NULL;

	if (getenv("APPLY_THREADS"))
		so.threads = atoi(getenv("APPLY_THREADS"));
	md_global_init();
	t0 = now_ms();
	s = site_load(vault, &so);
	if (!s)
		return 1;
	snap = site_snapshot(s, NULL);
	printf("vault %s: %zu notes loaded in %.0f ms\n", vault, s->nnotes, now_ms() - t0);
	if (with_search) {
		int fresh, fd = mkstemp(dbpath);
		if (fd >= 0)
			close(fd);
		unlink(dbpath);
		index = search_open(dbpath, &fresh);
		t0 = now_ms();
		if (!index || site_attach_search(s, index, fresh) < 0)
			return 1;
		printf("search index filled in %.0f ms\n", now_ms() - t0);
		ft = calloc(edits, sizeof(*ft));
	}
	t = calloc(edits, sizeof(*t));
	ct = calloc(edits, sizeof(*ct));
	if (getenv("APPLY_SKIP")) {
		struct buf list = BUF_INIT;
		if (read_file(getenv("APPLY_SKIP"), &list) == 0)
			skip = list.ptr ? xstrdup(list.ptr) : NULL;
		buf_release(&list);
	}
	srand(seed);
	for (i = 0; i < edits; i++) {
		struct site_note *n = s->notes[(size_t)rand() % s->nnotes];
		struct buf path = BUF_INIT, text = BUF_INIT;
		const char *rel = n->disk;
		struct snapshot *next;
		FILE *f;

		if (!n->published || skipped(skip, n->disk)) {
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
		c0 = cpu_ms();
		next = one_edit(s, rel, snap);
		t[i] = now_ms() - t0;
		ct[i] = cpu_ms() - c0;
		if (ft) {
			t0 = now_ms();
			site_search_flush(s);
			ft[i] = now_ms() - t0;
		}
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
	qsort(ct, edits, sizeof(*ct), cmp_double);
	printf("CPU time per edit (all threads): p50 %.2f ms, p90 %.2f ms, p99 %.2f ms\n",
	       pct(ct, edits, 0.5), pct(ct, edits, 0.9), pct(ct, edits, 0.99));
	printf("per edit on average: %.1f notes parsed, %.1f rendered, %.1f pages composed\n",
	       (double)parsed / (double)edits, (double)rendered / (double)edits,
	       (double)composed / (double)edits);
	if (ft) {
		qsort(ft, edits, sizeof(*ft), cmp_double);
		printf("search rows written after each edit: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms\n",
		       pct(ft, edits, 0.5), pct(ft, edits, 0.9), pct(ft, edits, 0.99));
		free(ft);
	}
	free(t);
	free(ct);
	free(skip);
	snapshot_unref(snap);
	site_free(s);
	printf("peak resident memory: %ld MB\n", peak_rss_kb() / 1024);
	if (index) {
		char cmd[256];
		search_free(index);
		snprintf(cmd, sizeof(cmd), "rm -f %s %s-wal %s-shm", dbpath, dbpath, dbpath);
		if (system(cmd) != 0)
			return 1;
	}
	return 0;
}
