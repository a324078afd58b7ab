/*
 * apply-bench.c: what one edit costs the loader, on a vault of any size.
 *
 *	apply-bench VAULT [EDITS] [SEED] [search]
 *
 * Loads VAULT (a copy: it edits notes in place, so point it at a generated
 * vault under bench/vaults), then makes EDITS changes one at a time, and
 * for each runs what the loader runs: site_apply() on the paths and
 * site_snapshot() from the previous snapshot. APPLY_KIND chooses the
 * change (default edit):
 *   edit     a paragraph appended to a random published note, as a sync
 *            of that note would bring;
 *   create   a new note beside a random one, linking to it;
 *   retitle  a random note's `title:` changed;
 *   rename   a random note renamed in its folder;
 *   delete   a random note deleted;
 *   folder   the folder of 50 to 200 notes nearest 100 renamed (all its
 *            files, one apply, as the watcher reports a folder move).
 * Every kind but edit is undone after it is timed (and the undoing applied,
 * untimed), so each change meets the same vault. Prints the load time and the
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
#include "markdown/markdown.h"
#include "search/search.h"
#include "site/snapshot.h"
#include "site/site.h"
#include "vault/vault.h"
#include "util/xalloc.h"

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
__attribute__((noinline)) static struct snapshot *one_edit(struct site *s, const char *const *rel,
							  size_t n, const struct snapshot *prev)
{
	site_apply(s, rel, n);
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

enum kind { KIND_EDIT, KIND_CREATE, KIND_RETITLE, KIND_RENAME, KIND_DELETE, KIND_FOLDER };

static const char *const kind_names[] = { "edit", "create", "retitle", "rename", "delete", "folder" };

/* One change on disk: the paths it touched, and how to put the vault back. */
struct change {
	const char *vault;
	enum kind kind;
	char **paths;        /* vault-relative, what the loader is told */
	size_t npaths;
	struct buf saved;    /* the note's bytes before (retitle, delete) */
	char *from, *to;     /* vault-relative (create, rename, folder) */
};

static void add_path(struct change *c, const char *rel)
{
	c->paths = xrealloc(c->paths, (c->npaths + 1) * sizeof(*c->paths));
	c->paths[c->npaths++] = xstrdup(rel);
}

static void write_bytes(const char *vault, const char *rel, const char *p, size_t len)
{
	struct buf path = BUF_INIT;
	FILE *f;

	buf_addf(&path, "%s/%s", vault, rel);
	f = fopen(path.ptr, "w");
	if (!f || fwrite(p, 1, len, f) != len || fclose(f) != 0) {
		perror(path.ptr);
		exit(1);
	}
	buf_release(&path);
}

static void move(const char *vault, const char *from, const char *to)
{
	struct buf a = BUF_INIT, b = BUF_INIT;

	buf_addf(&a, "%s/%s", vault, from);
	buf_addf(&b, "%s/%s", vault, to);
	if (rename(a.ptr, b.ptr) != 0) {
		perror(a.ptr);
		exit(1);
	}
	buf_release(&a);
	buf_release(&b);
}

static size_t dir_len(const char *rel)
{
	const char *slash = strrchr(rel, '/');
	return slash ? (size_t)(slash - rel) + 1 : 0;
}

/* Every note and attachment under folder/ (old paths), then where they go (under to/). */
static void add_folder_paths(struct change *c, const struct site *s, const char *from, const char *to)
{
	size_t i, k, flen = strlen(from);

	for (k = 0; k < 2; k++) {
		size_t nitems = k ? s->nfiles : s->nnotes;
		for (i = 0; i < nitems; i++) {
			const char *d = k ? s->files[i]->disk : s->notes[i]->disk;
			struct buf moved = BUF_INIT;
			if (strncmp(d, from, flen) != 0 || d[flen] != '/')
				continue;
			add_path(c, d);
			buf_addf(&moved, "%s%s", to, d + flen);
			add_path(c, moved.ptr);
			buf_release(&moved);
		}
	}
}

/*
 * The folder (not the root) whose notes, subfolders included, are nearest
 * 100 between 50 and 200, as bench/structural.py picks it.
 */
struct folder_count {
	size_t n;
	char key[];
};

static int pick_folder(const struct site *s, char **out)
{
	struct map count = MAP_INIT;
	size_t i, it = 0, best = 0;
	void *v;

	for (i = 0; i < s->nnotes; i++) {
		const char *d = s->notes[i]->disk;
		size_t len = dir_len(d);
		while (len > 1) {
			struct folder_count *fc = map_get(&count, d, len - 1);
			if (!fc) {
				fc = xmalloc(sizeof(*fc) + len);
				memcpy(fc->key, d, len - 1);
				fc->key[len - 1] = '\0';
				fc->n = 0;
				map_put(&count, fc->key, len - 1, fc);
			}
			fc->n++;
			while (--len > 0 && d[len - 1] != '/')
				;
		}
	}
	*out = NULL;
	while (map_next(&count, &it, NULL, NULL, &v)) {
		struct folder_count *fc = v;
		size_t d = fc->n > 100 ? fc->n - 100 : 100 - fc->n;
		if (fc->n >= 50 && fc->n <= 200 && fc->key[0] != '.' &&
		    (!*out || d < best || (d == best && strcmp(fc->key, *out) < 0))) {
			free(*out);
			*out = xstrdup(fc->key);
			best = d;
		}
	}
	it = 0;
	while (map_next(&count, &it, NULL, NULL, &v))
		free(v);
	map_release(&count);
	return *out != NULL;
}

/* Makes change i of kind on disk (n: a random published note) and lists its paths. */
static void prepare(struct change *c, const struct site *s, enum kind kind,
		    const struct site_note *n, const char *folder, size_t i)
{
	struct buf path = BUF_INIT, text = BUF_INIT, rel = BUF_INIT;

	c->kind = kind;
	buf_addf(&path, "%s/%s", c->vault, n->disk);
	switch (kind) {
	case KIND_EDIT:
		read_file(path.ptr, &text);
		buf_addf(&text, "\nEdit %zu: a new paragraph, as a sync of this note would bring.\n", i);
		write_bytes(c->vault, n->disk, text.ptr, text.len);
		add_path(c, n->disk);
		break;
	case KIND_CREATE:
		/* a new note beside n, linking to n as new notes do */
		buf_addf(&rel, "%.*szz-apply-new-%zu.md", (int)dir_len(n->disk), n->disk, i);
		buf_addf(&text, "---\ntitle: New note %zu\ntags: [bench]\n---\nA new note about [[%s]].\n",
			 i, n->name_key);
		write_bytes(c->vault, rel.ptr, text.ptr, text.len);
		c->to = xstrdup(rel.ptr);
		add_path(c, rel.ptr);
		break;
	case KIND_RETITLE: {
		const char *t;
		read_file(path.ptr, &c->saved);
		t = c->saved.ptr && !strncmp(c->saved.ptr, "---\n", 4) ? strstr(c->saved.ptr, "\ntitle:") : NULL;
		if (t) {
			buf_add(&text, c->saved.ptr, (size_t)(t - c->saved.ptr) + 1);
			buf_addf(&text, "title: Retitled %zu", i);
			buf_adds(&text, strchr(t + 1, '\n'));
		} else {
			buf_addf(&text, "---\ntitle: Retitled %zu\n---\n", i);
			buf_add(&text, c->saved.ptr, c->saved.len);
		}
		write_bytes(c->vault, n->disk, text.ptr, text.len);
		c->from = xstrdup(n->disk);
		add_path(c, n->disk);
		break;
	}
	case KIND_RENAME:
		buf_addf(&rel, "%.*szz-apply-moved-%zu.md", (int)dir_len(n->disk), n->disk, i);
		move(c->vault, n->disk, rel.ptr);
		c->from = xstrdup(n->disk);
		c->to = xstrdup(rel.ptr);
		add_path(c, c->from);
		add_path(c, c->to);
		break;
	case KIND_DELETE:
		read_file(path.ptr, &c->saved);
		if (unlink(path.ptr) != 0) {
			perror(path.ptr);
			exit(1);
		}
		c->from = xstrdup(n->disk);
		add_path(c, n->disk);
		break;
	case KIND_FOLDER:
		buf_addf(&rel, "%s r%zu", folder, i);
		c->from = xstrdup(folder);
		c->to = xstrdup(rel.ptr);
		add_folder_paths(c, s, c->from, c->to);
		move(c->vault, c->from, c->to);
		break;
	}
	buf_release(&path);
	buf_release(&text);
	buf_release(&rel);
}

static void change_free(struct change *c)
{
	size_t i;

	for (i = 0; i < c->npaths; i++)
		free(c->paths[i]);
	free(c->paths);
	buf_release(&c->saved);
	free(c->from);
	free(c->to);
}

/* Puts the vault back as it was before c; returns whether the loader must be told. */
static int undo(struct change *c)
{
	char *t;

	switch (c->kind) {
	case KIND_EDIT:
		return 0;
	case KIND_CREATE: {
		struct buf path = BUF_INIT;
		buf_addf(&path, "%s/%s", c->vault, c->to);
		unlink(path.ptr);
		buf_release(&path);
		return 1;
	}
	case KIND_RETITLE:
	case KIND_DELETE:
		write_bytes(c->vault, c->from, c->saved.ptr ? c->saved.ptr : "", c->saved.len);
		return 1;
	case KIND_RENAME:
	case KIND_FOLDER:
		move(c->vault, c->to, c->from);
		t = c->from, c->from = c->to, c->to = t;
		return 1;
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
	double *t, *ct, *gt, total = 0, t0, c0;
	size_t parsed = 0, rendered = 0, composed = 0;
	double phase[6] = { 0 }; /* parse, render, compose, derived, hosts, the rest: summed over the timed applies */

	int with_search = argc > 4 && !strcmp(argv[4], "search");
	struct site_options so = { .search = with_search };
	struct search *index = NULL;
	char dbpath[] = "/tmp/quire-apply-bench-XXXXXX";
	double *ft = NULL;
	char *skip = NULL, *folder = NULL;
	enum kind kind = KIND_EDIT;
	const char *kname = getenv("APPLY_KIND");

	for (i = 0; kname && i < sizeof(kind_names) / sizeof(*kind_names); i++)
		if (!strcmp(kname, kind_names[i]))
			kind = (enum kind)i;
	if (kname && strcmp(kname, kind_names[kind]) != 0) {
		fprintf(stderr, "apply-bench: APPLY_KIND is one of edit, create, retitle, rename, "
			"delete, folder\n");
		return 2;
	}

	if (getenv("APPLY_THREADS"))
		so.threads = atoi(getenv("APPLY_THREADS"));
	md_global_init();
	page_keep_identity(0); /* as serve runs: only the gzip bytes of a page are kept */
	t0 = now_ms();
	s = site_load(vault, &so);
	if (!s)
		return 1;
	snap = site_snapshot(s, NULL);
	printf("vault %s: %zu notes loaded in %.0f ms\n", vault, s->nnotes, now_ms() - t0);
	/* as the server runs: a change is served first, compressed after (APPLY_GZIP_NOW=1: not) */
	s->gzip_later = !getenv("APPLY_GZIP_NOW");
	gt = calloc(edits, sizeof(*gt));
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
	if (kind == KIND_FOLDER && !pick_folder(s, &folder)) {
		fprintf(stderr, "apply-bench: no folder of 50 to 200 notes in %s\n", vault);
		return 1;
	}
	for (i = 0; i < edits; i++) {
		struct site_note *n = s->notes[(size_t)rand() % s->nnotes];
		struct change c = { .vault = vault };
		struct snapshot *next;

		if (kind != KIND_FOLDER && (!n->published || skipped(skip, n->disk))) {
			i--;
			continue;
		}
		prepare(&c, s, kind, n, folder, i);
		t0 = now_ms();
		c0 = cpu_ms();
		next = one_edit(s, (const char *const *)c.paths, c.npaths, snap);
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
		t0 = now_ms();
		if (site_gzip_pending(s)) {
			next = site_snapshot(s, snap);
			snapshot_unref(snap);
			snap = next;
		}
		gt[i] = now_ms() - t0;
		parsed += s->napplied;
		phase[0] += s->phase_ms[0];
		phase[1] += s->phase_ms[1];
		phase[2] += s->phase_ms[2];
		phase[3] += s->derived_ms;
		phase[4] += s->hosts_ms;
		phase[5] += t[i] - s->phase_ms[0] - s->phase_ms[1] - s->phase_ms[2] - s->derived_ms -
			    s->hosts_ms;
		rendered += s->nrendered;
		composed += s->ncomposed;
		/* the vault as it was (not timed), so the next change meets the same vault */
		if (undo(&c)) {
			next = one_edit(s, (const char *const *)c.paths, c.npaths, snap);
			snapshot_unref(snap);
			snap = next;
			if (ft)
				site_search_flush(s);
			site_gzip_pending(s);
		}
		change_free(&c);
	}
	qsort(t, edits, sizeof(*t), cmp_double);
	if (folder)
		printf("folder %s renamed %zu times\n", folder, edits);
	printf("%zu %s changes: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms, mean %.2f ms\n",
	       edits, kind_names[kind], pct(t, edits, 0.5), pct(t, edits, 0.9), pct(t, edits, 0.99), t[edits - 1],
	       total / (double)edits);
	qsort(ct, edits, sizeof(*ct), cmp_double);
	printf("CPU time per edit (all threads): p50 %.2f ms, p90 %.2f ms, p99 %.2f ms\n",
	       pct(ct, edits, 0.5), pct(ct, edits, 0.9), pct(ct, edits, 0.99));
	printf("per edit on average: %.1f notes parsed, %.1f rendered, %.1f pages composed\n",
	       (double)parsed / (double)edits, (double)rendered / (double)edits,
	       (double)composed / (double)edits);
	printf("of which on average: parse and resolve %.2f ms, render %.2f, compose %.2f, "
	       "derived resources %.2f, hosts %.2f, the rest (moves, claims, search rows, snapshot) %.2f\n",
	       phase[0] / (double)edits, phase[1] / (double)edits, phase[2] / (double)edits,
	       phase[3] / (double)edits, phase[4] / (double)edits, phase[5] / (double)edits);
	if (s->gzip_later) {
		qsort(gt, edits, sizeof(*gt), cmp_double);
		printf("then compressed (site_gzip_pending and a snapshot): p50 %.2f ms, p90 %.2f ms, "
		       "p99 %.2f ms\n", pct(gt, edits, 0.5), pct(gt, edits, 0.9), pct(gt, edits, 0.99));
	}
	free(gt);
	if (ft) {
		qsort(ft, edits, sizeof(*ft), cmp_double);
		printf("search rows written after each edit: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms\n",
		       pct(ft, edits, 0.5), pct(ft, edits, 0.9), pct(ft, edits, 0.99));
		free(ft);
	}
	free(t);
	free(ct);
	free(skip);
	free(folder);
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
