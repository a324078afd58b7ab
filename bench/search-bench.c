/*
 * search-bench.c: the search index on real text.
 *
 * Reads the Markdown notes of a corpus (default ../shared/corpus/pwsh-docs,
 * or $QUIRE_CORPUS/pwsh-docs), strips frontmatter, and resamples whole
 * notes deterministically up to N documents (default 10,000). Then times:
 * building the index in one transaction; filling a second, fresh one as
 * the loader does (words first, in transactions of 250 notes, then
 * substrings: search_fill_substrings() in steps of 250); one note's update
 * and commit (200 times: median and p99); and queries on one thread
 * through one reader: single words drawn uniformly from the corpus
 * vocabulary, word pairs that occur next to each other in the text, the
 * 100 most frequent words (the worst case: most notes match), fragments
 * of words (their end, "rameter", and their start as typed, "para"),
 * and the adjacent pairs again with one typo in a word of five letters or
 * more (a letter dropped, two swapped, one replaced or one added, drawn
 * from a seed of their own, so the other queries stay the same).
 * QUIRE_BENCH_QUERIES=pairs runs only the pairs, exact and with a typo
 * (before and after a change to typo tolerance, on a kept index).
 *
 *	ninja -C build bench/search-bench
 *	build/bench/search-bench [corpus-dir] [N] [queries]
 *
 * With QUIRE_BENCH_DB=file, the index is kept there, and an existing one
 * is reused: only the queries run (for profiling them).
 *
 *	/tmp/search-bench --db FILE [--fts] [--repeat N | --json] QUERY...
 *
 * runs each QUERY N times (default 1000) on an existing index, such as the
 * <vault>/.quire/search.db that `quire serve` fills, with no corpus, and
 * prints its total, its CPU time per query and that of its first run (which
 * reads the row lists the others reuse; --fts ranks through FTS5 alone); --json prints each answer
 * instead, one a line (to compare two builds' results). For callgrind, count only
 * the queries: valgrind --tool=callgrind --toggle-collect=search_query
 * and divide by N + 1 (one warm-up run each).
 */
#define _XOPEN_SOURCE 700 /* nftw() */
#include <ftw.h>

#include "util/buf.h"
#include "util/log.h"
#include "search/search.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct note {
	char *path;
	char *title;
	char *headings;
	char *body;
};

static struct note *notes;
static size_t nnotes, anotes;
static char **paths;
static size_t npaths, apaths;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time of this thread: what a query costs, whatever else the machine runs */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 0x9E3779B97F4A7C15u;

static uint64_t next_rand(void)
{
	/* xorshift64*: deterministic across runs and machines */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1Du;
}

static int collect(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	size_t n = strlen(path);

	if (type == FTW_F && n > 3 && strcmp(path + n - 3, ".md") == 0) {
		ALLOC_GROW(paths, npaths + 1, apaths);
		paths[npaths++] = xstrdup(path);
	}
	return 0;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *read_file(const char *path)
{
	struct buf b = BUF_INIT;
	char chunk[65536];
	size_t n;
	FILE *f = fopen(path, "rb");

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	return buf_detach(&b, NULL);
}

/* Splits a Markdown file into title, headings and a plain-ish body. */
static void load_note(const char *path)
{
	char *src = read_file(path), *p, *line;
	struct buf title = BUF_INIT, headings = BUF_INIT, body = BUF_INIT;
	struct note *nt;

	if (!src)
		return;
	p = src;
	if (strncmp(p, "---\n", 4) == 0) {
		char *end = strstr(p + 4, "\n---");
		if (end) {
			char *t = strstr(p, "\ntitle:");
			if (t && t < end) {
				char *e = strchr(t + 7, '\n');
				while (t[7] == ' ')
					t++;
				buf_add(&title, t + 7, (size_t)(e - t - 7));
			}
			p = strchr(end + 1, '\n');
			p = p ? p + 1 : end + 4;
		}
	}
	for (line = p; *line;) {
		char *e = strchr(line, '\n');
		size_t len = e ? (size_t)(e - line) : strlen(line);

		if (line[0] == '#') {
			size_t k = 0;
			while (k < len && (line[k] == '#' || line[k] == ' '))
				k++;
			if (!title.len && len > 2 && line[1] == ' ')
				buf_add(&title, line + k, len - k);
			else {
				buf_add(&headings, line + k, len - k);
				buf_addc(&headings, '\n');
			}
		} else {
			size_t k;
			for (k = 0; k < len; k++) {
				char c = line[k];
				/* what rendering would drop: emphasis, code and link markup */
				buf_addc(&body, strchr("`*[]|#<>", c) ? ' ' : c);
			}
			buf_addc(&body, '\n');
		}
		line = e ? e + 1 : line + len;
	}
	if (!title.len) {
		const char *slash = strrchr(path, '/');
		buf_adds(&title, slash ? slash + 1 : path);
	}
	ALLOC_GROW(notes, nnotes + 1, anotes);
	nt = &notes[nnotes++];
	nt->path = xstrdup(path);
	nt->title = buf_detach(&title, NULL);
	nt->headings = buf_detach(&headings, NULL);
	nt->body = buf_detach(&body, NULL);
	free(src);
}

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);

	return v[i < n ? i : n - 1];
}

/* ---- Vocabulary ---------------------------------------------------------- */

struct word {
	char *w;
	size_t count;
};

static struct word *vocab;
static size_t nvocab;

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int by_count(const void *a, const void *b)
{
	const struct word *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->w, y->w);
}

/* The next word of 3 to 20 ASCII letters at or after *p, lowercased into w; 0 at the end. */
static int next_word(const char **p, char *w)
{
	const char *s = *p;

	for (;;) {
		size_t n = 0;
		while (*s && !isalpha((unsigned char)*s))
			s++;
		if (!*s) {
			*p = s;
			return 0;
		}
		while (isalpha((unsigned char)s[n]))
			n++;
		if (n >= 3 && n <= 20 && !(s[n] & 0x80) && (s == *p || !((unsigned char)s[-1] & 0x80))) {
			size_t i;
			for (i = 0; i < n; i++)
				w[i] = (char)tolower((unsigned char)s[i]);
			w[n] = '\0';
			*p = s + n;
			return 1;
		}
		s += n;
	}
}

static void build_vocab(void)
{
	char **all = NULL, w[32];
	size_t nall = 0, aall = 0, i, j;

	for (i = 0; i < nnotes; i++) {
		const char *p = notes[i].body;
		while (next_word(&p, w)) {
			ALLOC_GROW(all, nall + 1, aall);
			all[nall++] = xstrdup(w);
		}
	}
	qsort(all, nall, sizeof(*all), by_str);
	vocab = xcalloc(nall + 1, sizeof(*vocab));
	for (i = 0; i < nall; i = j) {
		for (j = i + 1; j < nall && strcmp(all[i], all[j]) == 0; j++)
			free(all[j]);
		vocab[nvocab].w = all[i];
		vocab[nvocab].count = j - i;
		nvocab++;
	}
	free(all);
}

/*
 * The pair q with one typo in its first word of five letters or more
 * (none: q as it is), of the kind and at the place rand picks: a letter
 * dropped, two neighbours swapped, one replaced, one added. The caller
 * frees the result.
 */
static char *with_typo(const char *q, uint64_t *rand)
{
	char *t = xmalloc(strlen(q) + 2);
	const char *w = q, *end;
	size_t at, len, i;

	for (;;) {
		end = strchr(w, ' ');
		len = end ? (size_t)(end - w) : strlen(w);
		if (len >= 5 || !end)
			break;
		w = end + 1;
	}
	if (len < 5) {
		strcpy(t, q);
		return t;
	}
	*rand = *rand * 6364136223846793005u + 1442695040888963407u;
	at = (size_t)(w - q) + 1 + (size_t)(*rand >> 33) % (len - 2); /* not the first letter */
	memcpy(t, q, at);
	switch ((*rand >> 20) % 4) {
	case 0: /* dropped */
		strcpy(t + at, q + at + 1);
		break;
	case 1: /* swapped with the next */
		strcpy(t + at, q + at);
		t[at] = q[at + 1];
		t[at + 1] = q[at];
		break;
	case 2: /* replaced */
		strcpy(t + at, q + at);
		for (i = 0; t[at] == q[at]; i++)
			t[at] = (char)('a' + (*rand >> 8 ^ i) % 26);
		break;
	default: /* added */
		t[at] = (char)('a' + (*rand >> 8) % 26);
		strcpy(t + at + 1, q + at);
		break;
	}
	return t;
}

/* ---- Runs ---------------------------------------------------------------- */

static void run_queries(struct search_reader *r, const char *label, char **qs, size_t nq)
{
	double *lat = xcalloc(nq, sizeof(*lat)), *cpu = xcalloc(nq, sizeof(*cpu));
	double t0, c0, total_time = 0, total_cpu = 0;
	struct buf out = BUF_INIT;
	size_t i, empty = 0, errors = 0, bytes = 0, slowest[3] = { 0, 0, 0 };

	for (i = 0; i < nq && i < 200; i++) { /* warm the page cache and statements */
		buf_reset(&out);
		search_query(r, qs[i], 10, 0, &out);
	}
	for (i = 0; i < nq; i++) {
		buf_reset(&out);
		t0 = now();
		c0 = cpu_now();
		if (search_query(r, qs[i], 10, 0, &out) != 0)
			errors++;
		cpu[i] = cpu_now() - c0;
		lat[i] = now() - t0;
		total_time += lat[i];
		total_cpu += cpu[i];
		if (cpu[i] > cpu[slowest[2]]) {
			slowest[2] = i;
			if (cpu[i] > cpu[slowest[1]]) {
				slowest[2] = slowest[1];
				slowest[1] = i;
				if (cpu[i] > cpu[slowest[0]]) {
					slowest[1] = slowest[0];
					slowest[0] = i;
				}
			}
		}
		bytes += out.len;
		if (strstr(out.ptr, "\"total\":0,"))
			empty++;
	}
	printf("  slowest: [%s] %.2f ms, [%s] %.2f ms, [%s] %.2f ms\n", qs[slowest[0]],
	       cpu[slowest[0]] * 1e3, qs[slowest[1]], cpu[slowest[1]] * 1e3, qs[slowest[2]],
	       cpu[slowest[2]] * 1e3);
	qsort(lat, nq, sizeof(*lat), by_double);
	qsort(cpu, nq, sizeof(*cpu), by_double);
	printf("  %s (%zu queries, %zu found nothing, %zu errors, %.1f KB of JSON each)\n"
	       "    CPU:  %6.0f queries/s  p50 %6.3f ms  p99 %6.3f ms  max %6.2f ms\n"
	       "    wall: %6.0f queries/s  p50 %6.3f ms  p99 %6.3f ms  max %6.2f ms\n",
	       label, nq, empty, errors, (double)bytes / (double)nq / 1024,
	       (double)nq / total_cpu, pct(cpu, nq, 0.5) * 1e3, pct(cpu, nq, 0.99) * 1e3,
	       cpu[nq - 1] * 1e3, (double)nq / total_time, pct(lat, nq, 0.5) * 1e3,
	       pct(lat, nq, 0.99) * 1e3, lat[nq - 1] * 1e3);
	buf_release(&out);
	free(lat);
	free(cpu);
}

/*
 * A fresh index next to db filled as the loader fills one: every note's
 * words in transactions of 250 notes with substrings deferred, the index
 * merged, then search_fill_substrings() in steps of 250 until done. Prints
 * the CPU time of each part and the file's size; removes the file.
 */
static void fill_as_loader(const char *db, const size_t *pick, size_t ndocs)
{
	struct buf path = BUF_INIT, aux = BUF_INIT;
	struct search *s;
	double c0, c_words, c_subs;
	size_t i;
	int fresh = 0, rc = 0, steps = 0;
	FILE *f;
	long size = 0;

	buf_addf(&path, "%s-fill", db);
	unlink(path.ptr); /* left by a run that stopped: fresh, or it measures nothing */
	s = search_open(path.ptr, &fresh);
	if (!s || !fresh) {
		fprintf(stderr, "search-bench: cannot create %s\n", path.ptr);
		search_free(s);
		buf_release(&path);
		return;
	}
	search_defer_substrings(s, 1);
	c0 = cpu_now();
	for (i = 0; i < ndocs && rc == 0; i++) {
		const struct note *n = &notes[pick[i]];
		char url[64];

		if (i % 250 == 0)
			rc = search_begin(s);
		snprintf(url, sizeof(url), "/doc/%05zu", i);
		if (rc == 0)
			rc = search_put(s, url, n->title, n->headings, "powershell reference",
					n->body);
		if (rc == 0 && (i % 250 == 249 || i + 1 == ndocs))
			rc = search_commit(s);
	}
	search_defer_substrings(s, 0);
	if (rc == 0)
		rc = search_optimize(s);
	c_words = cpu_now() - c0;
	c0 = cpu_now();
	while (rc == 0 && (rc = search_fill_substrings(s, 250)) == 0)
		steps++;
	c_subs = cpu_now() - c0;
	search_free(s);
	f = fopen(path.ptr, "rb");
	if (f) {
		fseek(f, 0, SEEK_END);
		size = ftell(f);
		fclose(f);
	}
	printf("fill:   as the loader fills a fresh index (CPU): words %.2f s (with the merge), "
	       "substrings %.2f s in %d steps, together %.2f s; file %.0f MB%s\n",
	       c_words, c_subs, steps + 1, c_words + c_subs, (double)size / 1e6,
	       rc < 0 ? " (FAILED)" : "");
	unlink(path.ptr);
	buf_addf(&aux, "%s-wal", path.ptr);
	unlink(aux.ptr);
	buf_reset(&aux);
	buf_addf(&aux, "%s-shm", path.ptr);
	unlink(aux.ptr);
	buf_release(&aux);
	buf_release(&path);
}

/* The figure after "total": in a response, or -1. */
static long long total_of(const struct buf *out)
{
	const char *p = strstr(out->ptr, "\"total\":");

	return p ? atoll(p + 8) : -1;
}

/* --db FILE [--repeat N | --json] QUERY...: the given queries on an existing index. */
static int run_given(int argc, char **argv)
{
	struct search_reader *r;
	struct buf out = BUF_INIT;
	long repeat = 1000;
	int i = 3, json = 0, ret = 0, lists = 1;

	if (argc > 3 && strcmp(argv[3], "--fts") == 0) {
		lists = 0;
		memmove(argv + 3, argv + 4, (size_t)(argc - 3) * sizeof(*argv)); /* keeps argv[argc] */
		argc--;
	}
	if (argc > 4 && strcmp(argv[3], "--repeat") == 0) {
		repeat = atol(argv[4]);
		i = 5;
	} else if (argc > 3 && strcmp(argv[3], "--json") == 0) {
		json = 1;
		i = 4;
	}
	if (argc < 3 || i >= argc || repeat < 1) {
		fprintf(stderr, "usage: search-bench --db FILE [--fts] [--repeat N | --json] QUERY...\n");
		return 2;
	}
	r = search_reader_open(argv[2]);
	if (!r)
		return 1;
	search_reader_use_lists(r, lists ? SEARCH_LISTS_MIN_ROWS : -1);
	for (; json && i < argc; i++) {
		buf_reset(&out);
		search_query(r, argv[i], 10, 0, &out);
		printf("%s\n", out.ptr);
	}
	if (!json)
		printf("%-32s %8s %10s %10s %10s %9s\n", "query", "total", "CPU q/s", "us/query",
		       "first us", "JSON B");
	for (; i < argc; i++) {
		double c0, first;
		long k;

		buf_reset(&out);
		first = cpu_now();
		if (search_query(r, argv[i], 10, 0, &out) != 0) { /* warm-up, and the total */
			fprintf(stderr, "search-bench: %s: %s\n", argv[i], out.ptr);
			ret = 1;
			continue;
		}
		c0 = cpu_now();
		first = c0 - first;
		for (k = 0; k < repeat; k++) {
			buf_reset(&out);
			search_query(r, argv[i], 10, 0, &out);
		}
		c0 = cpu_now() - c0;
		printf("%-32s %8lld %10.0f %10.1f %10.1f %9zu\n", argv[i], total_of(&out),
		       (double)repeat / c0, c0 / (double)repeat * 1e6, first * 1e6, out.len);
	}
	search_reader_free(r);
	buf_release(&out);
	return ret;
}

int main(int argc, char **argv)
{
	const char *env = getenv("QUIRE_CORPUS");
	struct buf corpus = BUF_INIT, dbp = BUF_INIT;
	size_t ndocs = argc > 2 ? (size_t)atol(argv[2]) : 10000;
	size_t nq = argc > 3 ? (size_t)atol(argv[3]) : 5000;
	size_t i, bytes = 0, updates = 200;
	struct search *s;
	struct search_reader *r;
	char **q1, **q2, **q3, **q5, **q6, **q7, **q8, w[32], w2[32];
	const char *only = getenv("QUIRE_BENCH_QUERIES");
	int pairs_only = only && strcmp(only, "pairs") == 0;
	uint64_t seed = 33; /* the typos' own, so the other queries are drawn as before */
	size_t *pick;
	double t0, c0, t_build, t_opt, *upd, *upd_cpu;
	int fresh, keep = 0;
	char tmpl[] = "/tmp/quire-search-bench-XXXXXX";
	FILE *f;
	long size;

	log_set_level(LOG_WARN);
	if (argc > 1 && strcmp(argv[1], "--db") == 0)
		return run_given(argc, argv);
	if (argc > 1)
		buf_adds(&corpus, argv[1]);
	else if (env)
		buf_addf(&corpus, "%s/pwsh-docs", env);
	else
		buf_adds(&corpus, "../shared/corpus/pwsh-docs");
	if (nftw(corpus.ptr, collect, 32, FTW_PHYS) != 0 || !npaths) {
		fprintf(stderr, "search-bench: no notes under %s\n", corpus.ptr);
		return 1;
	}
	qsort(paths, npaths, sizeof(*paths), by_path);
	for (i = 0; i < npaths; i++)
		load_note(paths[i]);
	for (i = 0; i < nnotes; i++)
		bytes += strlen(notes[i].body);
	build_vocab();
	printf("corpus: %zu notes, %.1f MB of body text, %zu distinct words; index of %zu documents\n",
	       nnotes, (double)bytes / 1e6, nvocab, ndocs);

	if (getenv("QUIRE_BENCH_DB")) {
		buf_adds(&dbp, getenv("QUIRE_BENCH_DB"));
		keep = 1;
	} else {
		if (!mkdtemp(tmpl))
			return 1;
		buf_addf(&dbp, "%s/search.db", tmpl);
	}
	s = search_open(dbp.ptr, &fresh);
	if (!s)
		return 1;
	if (!fresh)
		goto queries;

	/* build: whole notes resampled deterministically */
	bytes = 0;
	pick = xcalloc(ndocs, sizeof(*pick));
	t0 = now();
	if (search_begin(s) < 0)
		return 1;
	for (i = 0; i < ndocs; i++) {
		const struct note *n = &notes[pick[i] = i < nnotes ? i : next_rand() % nnotes];
		char url[64];

		snprintf(url, sizeof(url), "/doc/%05zu", i);
		if (search_put(s, url, n->title, n->headings, "powershell reference", n->body) < 0)
			return 1;
		bytes += strlen(n->body);
	}
	if (search_commit(s) < 0)
		return 1;
	t_build = now() - t0;
	t0 = now();
	if (search_optimize(s) < 0)
		return 1;
	t_opt = now() - t0;
	f = fopen(dbp.ptr, "rb");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	printf("build:  %.2f s for %zu documents (%.1f MB of text, %.0f docs/s), optimize %.2f s, "
	       "file %.0f MB\n",
	       t_build, ndocs, (double)bytes / 1e6, (double)ndocs / t_build, t_opt, (double)size / 1e6);
	fill_as_loader(dbp.ptr, pick, ndocs);
	free(pick);

	/* one note's update and commit, as the loader does after an edit */
	upd = xcalloc(updates, sizeof(*upd));
	upd_cpu = xcalloc(updates, sizeof(*upd_cpu));
	for (i = 0; i < updates; i++) {
		const struct note *n = &notes[next_rand() % nnotes];
		char url[64];
		struct buf body = BUF_INIT;

		snprintf(url, sizeof(url), "/doc/%05zu", (size_t)(next_rand() % ndocs));
		buf_addf(&body, "%s\nrevision%zu", n->body, i);
		t0 = now();
		c0 = cpu_now();
		if (search_begin(s) < 0 || search_put(s, url, n->title, n->headings, "edited", body.ptr) < 0 ||
		    search_commit(s) < 0)
			return 1;
		upd_cpu[i] = cpu_now() - c0;
		upd[i] = now() - t0;
		buf_release(&body);
	}
	qsort(upd, updates, sizeof(*upd), by_double);
	qsort(upd_cpu, updates, sizeof(*upd_cpu), by_double);
	printf("update: one note put + commit (%zu updates):\n"
	       "    CPU:  median %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n"
	       "    wall: median %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n",
	       updates, pct(upd_cpu, updates, 0.5) * 1e3, pct(upd_cpu, updates, 0.9) * 1e3,
	       pct(upd_cpu, updates, 0.99) * 1e3, upd_cpu[updates - 1] * 1e3,
	       pct(upd, updates, 0.5) * 1e3, pct(upd, updates, 0.9) * 1e3,
	       pct(upd, updates, 0.99) * 1e3, upd[updates - 1] * 1e3);
	free(upd);
	free(upd_cpu);
	/*
	 * The queries run on the index merged into one segment, as a load
	 * leaves it: after the updates FTS5 holds as many segments as its
	 * merges happen to leave (6 or 19 here depending on the build's data),
	 * and each query looks up every one, which moved a query's cost by
	 * 1.5 to 2.3 times between two builds that cost the same once merged.
	 */
	if (search_optimize(s) < 0)
		return 1;

queries:
	q1 = xcalloc(nq, sizeof(*q1));
	q2 = xcalloc(nq, sizeof(*q2));
	q3 = xcalloc(nq, sizeof(*q3));
	for (i = 0; i < nq; i++)
		q1[i] = xstrdup(vocab[next_rand() % nvocab].w);
	for (i = 0; i < nq; i++) {
		/* two words next to each other somewhere in a note */
		for (;;) {
			const struct note *n = &notes[next_rand() % nnotes];
			size_t len = strlen(n->body);
			const char *p = n->body + (len ? next_rand() % len : 0);
			while (isalpha((unsigned char)*p)) /* from the next word on */
				p++;
			if (next_word(&p, w) && next_word(&p, w2)) {
				struct buf b = BUF_INIT;
				buf_addf(&b, "%s %s", w, w2);
				q2[i] = buf_detach(&b, NULL);
				break;
			}
		}
	}
	q5 = xcalloc(nq, sizeof(*q5));
	q6 = xcalloc(nq, sizeof(*q6));
	for (i = 0; i < nq; i++) {
		struct buf b = BUF_INIT;
		const char *word;

		buf_addf(&b, "%s %s", vocab[next_rand() % nvocab].w, vocab[next_rand() % nvocab].w);
		q5[i] = buf_detach(&b, NULL);
		do
			word = vocab[next_rand() % nvocab].w;
		while (strlen(word) < 7);
		q6[i] = xstrdup(word + 2); /* "rameter" of "parameter" */
	}
	q7 = xcalloc(nq, sizeof(*q7));
	for (i = 0; i < nq; i++) { /* what the search box sends while a word is typed */
		const char *word;
		size_t len;

		do
			word = vocab[next_rand() % nvocab].w;
		while (strlen(word) < 6);
		len = 3 + next_rand() % 3;
		q7[i] = xmemdup(word, len + 1);
		q7[i][len] = '\0';
	}
	qsort(vocab, nvocab, sizeof(*vocab), by_count);
	for (i = 0; i < nq; i++)
		q3[i] = xstrdup(vocab[i % (nvocab < 100 ? nvocab : 100)].w);

	q8 = xcalloc(nq, sizeof(*q8));
	r = search_reader_open(dbp.ptr);
	if (!r)
		return 1;
	printf("query (one thread, limit 10, snippets; CPU time is the thread's own, wall time "
	       "includes whatever else the machine runs):\n");
	for (i = 0; i < nq; i++)
		q8[i] = with_typo(q2[i], &seed);
	if (pairs_only) {
		run_queries(r, "two adjacent words", q2, nq);
		run_queries(r, "two adjacent words, one with a typo", q8, nq);
		goto end_queries;
	}
	run_queries(r, "one word (vocabulary)", q1, nq);
	run_queries(r, "two adjacent words", q2, nq);
	run_queries(r, "two adjacent words, one with a typo", q8, nq);
	run_queries(r, "100 most frequent words", q3, nq);
	run_queries(r, "two vocabulary words (independent: mostly no note has both)", q5, nq);
	run_queries(r, "word fragments (substrings: \"rameter\")", q6, nq);
	run_queries(r, "word starts as typed (3 to 5 letters: \"par\", \"para\")", q7, nq);
	{
		char *q4[8] = { "Get-ChildItem", "\"remote computer\"", "param*", "pipeline -object",
				"shell", "ession", "東京", "Invoke-Command -ComputerName" };
		char **q4n = xcalloc(nq, sizeof(*q4n));
		for (i = 0; i < nq; i++)
			q4n[i] = q4[i % 8];
		run_queries(r, "mixed (phrase, prefix, -, substring)", q4n, nq);
		free(q4n);
	}
end_queries:
	for (i = 0; i < nq; i++)
		free(q8[i]);
	free(q8);
	search_reader_free(r);
	search_free(s);
	for (i = 0; i < nq; i++) {
		free(q1[i]);
		free(q2[i]);
		free(q3[i]);
		free(q5[i]);
		free(q6[i]);
		free(q7[i]);
	}
	free(q5);
	free(q6);
	free(q7);
	free(q1);
	free(q2);
	free(q3);
	if (keep)
		goto done;
	unlink(dbp.ptr);
	buf_reset(&corpus);
	buf_addf(&corpus, "%s-wal", dbp.ptr);
	unlink(corpus.ptr);
	buf_reset(&corpus);
	buf_addf(&corpus, "%s-shm", dbp.ptr);
	unlink(corpus.ptr);
	rmdir(tmpl);
done:
	buf_release(&corpus);
	buf_release(&dbp);
	return 0;
}
