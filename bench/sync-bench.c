/*
 * sync-bench.c: render on write through the sync API, as an editor plugin
 * sees it, on a vault of any size.
 *
 *	sync-bench QUIRE_BIN VAULT [EDITS]
 *
 * Copies VAULT to a temporary folder, starts `QUIRE_BIN serve` on it with a
 * token, pinned (with taskset) to the core that takes the interrupts of the
 * disk the copy is on, and runs itself on the other cores; SERVER_CORES=LIST
 * chooses the server's cores instead (see disk_core()). It measures:
 *
 *  1. edit to live: EDITS times, a random published note gets a paragraph
 *     appended through PUT /api/v1/files/<path>; from the moment the PUT is
 *     answered, the note's page is fetched in a tight loop until it carries
 *     the new text. Prints p50/p90/p99 of that delay.
 *  2. reads during a sync: a reader fetches a page 200 times a second,
 *     open loop, while syncs of 100 notes (PUT as fast as they are
 *     answered, then a wait until the last is live) alternate with idle
 *     windows as long, 5 s of each (SYNC_BENCH_READ_SECONDS=N: N s). Prints p50/p99/max of the reads in
 *     each kind of window, the errors, the ratio of the p99s, and how
 *     long a sync's PUTs took.
 *     SYNC_BENCH_TRACE=FILE writes every read and window (CLOCK_MONOTONIC
 *     milliseconds, the clock of `perf record -k CLOCK_MONOTONIC`) to FILE.
 *  3. the server's peak memory (VmHWM) and its load time.
 *
 * SYNC_BENCH_DIR=DIR puts the copy in DIR (default /tmp), to measure on
 * another file system.
 *
 * The copy starts with no .quire (an empty search index, filled after the
 * load) unless SYNC_BENCH_KEEP_DATA=1: then VAULT's own .quire is copied,
 * and a search index filled beforehand is only checked (bench/run does
 * this so that 100,000 notes do not wait minutes for the fill).
 *
 * Figures, not assertions.
 */
#include "lib/httpc.h"
#include "lib/test.h" /* now_s() */
#include "vault/vault.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#define TOKEN "bench-token-0123456789"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"

static int port;

static double now_ms(void)
{
	return now_s() * 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	size_t i;
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i];
}

/* Published notes: (vault path, URL) pairs read from the live tree.json would need
 * a JSON walk; the manifest is simpler, and a note's URL is the server's to say,
 * so we ask the server for each candidate page until we have enough. */
struct note {
	char *path;
	char *url;
};

static char *note_url(const char *path)
{
	/* the URL rules of vault_note_url(): lowercase segments, runs of other
	 * characters to '-' (ASCII is enough for generated vaults) */
	struct buf b = BUF_INIT;
	size_t n = strlen(path) - 3, i;
	int dash = 0;

	buf_addc(&b, '/');
	for (i = 0; i < n; i++) {
		char c = path[i];
		if (c == '/') {
			while (b.len > 1 && b.ptr[b.len - 1] == '-')
				buf_setlen(&b, b.len - 1);
			buf_addc(&b, '/');
			dash = 0;
			continue;
		}
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.') {
			if (dash && b.ptr[b.len - 1] != '/')
				buf_addc(&b, '-');
			buf_addc(&b, c);
			dash = 0;
		} else if (c >= 'A' && c <= 'Z') {
			if (dash && b.ptr[b.len - 1] != '/')
				buf_addc(&b, '-');
			buf_addc(&b, c + 32);
			dash = 0;
		} else {
			dash = 1;
		}
	}
	return buf_detach(&b, NULL);
}

/*
 * A port nobody listens on now: the kernel's pick for port 0. (A port from
 * the pid collided with other servers on a busy machine: /healthz answered
 * from someone else's server and no note of this vault was found.)
 */
/*
 * The core that handles most of the interrupts of the disk holding path,
 * or -1 when that cannot be told. A sync's fsyncs complete there: on this
 * VM all of the virtio disk's interrupts go to core 1 and cannot be moved
 * (not even by root), and with the reader on that core, the server's disk
 * work delayed the reader's own sends by up to 3 ms, counted against the
 * server (p99 ratio 2.6 in one run of three; 0.9 to 1.2 in four runs with
 * the cores swapped). A remote client never pays for the server's disk,
 * so the server gets the core that does.
 *
 * The disk: /sys/dev/block/MAJ:MIN of the file system (its parent for a
 * partition), its device's nearest folder with msi_irqs (the PCI
 * function), and those interrupts' counts per CPU in /proc/interrupts.
 */
static int disk_core(const char *path)
{
	char link[PATH_MAX], dev[PATH_MAX + 64], line[4096];
	long counts[64] = { 0 };
	int irqs[64], nirq = 0, ncpu = 0, best = -1, i;
	struct stat st;
	DIR *d = NULL;
	FILE *f;

	if (stat(path, &st) < 0)
		return -1;
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u/device", major(st.st_dev), minor(st.st_dev));
	if (!realpath(link, dev)) {
		snprintf(link, sizeof(link), "/sys/dev/block/%u:%u/../device", major(st.st_dev),
			 minor(st.st_dev));
		if (!realpath(link, dev))
			return -1;
	}
	while (strlen(dev) > 1) {
		char msi[PATH_MAX + 80];
		snprintf(msi, sizeof(msi), "%s/msi_irqs", dev);
		if ((d = opendir(msi)))
			break;
		*strrchr(dev, '/') = '\0';
	}
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d)) && nirq < 64;)
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
			irqs[nirq++] = atoi(e->d_name);
	closedir(d);
	if (!(f = fopen("/proc/interrupts", "r")))
		return -1;
	if (fgets(line, sizeof(line), f))
		for (char *p = line; (p = strstr(p, "CPU")); p += 3)
			ncpu++;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;
		long irq = strtol(p, &end, 10);

		if (end == p || *end != ':')
			continue;
		for (i = 0; i < nirq && irqs[i] != irq; i++)
			;
		if (i == nirq)
			continue;
		p = end + 1;
		for (i = 0; i < ncpu && i < 64; i++, p = end)
			counts[i] += strtol(p, &end, 10);
	}
	fclose(f);
	for (i = 0; i < ncpu && i < 64; i++)
		if (counts[i] > 0 && (best < 0 || counts[i] > counts[best]))
			best = i;
	return best;
}

/*
 * The port the server listens on, from the "serving ... at http://..:PORT/"
 * line it writes to its log once it is up; 0 while it has not. The server
 * picks it (--listen 127.0.0.1:0): a port chosen here and handed over was
 * free when chosen, but a 100,000-note server binds it a minute or two
 * later, and once in three runs of the suite every request then failed.
 */
static int served_port(const char *logpath)
{
	FILE *f = fopen(logpath, "r");
	char line[8192];
	int p = 0;

	while (f && !p && fgets(line, sizeof(line), f)) {
		const char *at = strncmp(line, "serving ", 8) == 0 ? strstr(line, " at http://") : NULL;
		const char *colon = at ? strchr(at + 11, ':') : NULL;
		if (colon)
			p = atoi(colon + 1);
	}
	if (f)
		fclose(f);
	return p;
}

static size_t find_notes(const char *root, struct note **out)
{
	struct note *v = NULL;
	size_t n = 0, alloc = 0;
	char cmd[4200];
	FILE *f;
	char line[4096];

	snprintf(cmd, sizeof(cmd), "cd '%s' && find . -name '*.md' -not -path '*/.*' | sort", root);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		struct resp r;
		char *path = line + 2, *url;
		line[strcspn(line, "\n")] = '\0';
		url = note_url(path);
		if (fetch_request(port, "GET", url, NULL, NULL, 0, &r) == 0 && r.status == 200) {
			ALLOC_GROW(v, n + 1, alloc);
			v[n].path = xstrdup(path);
			v[n].url = url;
			n++;
		} else {
			free(url);
		}
		resp_free(&r);
		if (n >= 400)
			break;
	}
	if (f)
		pclose(f);
	*out = v;
	return n;
}

static int put(const char *root, const char *path, const char *extra, long long *version)
{
	struct buf full = BUF_INIT, data = BUF_INIT, t = BUF_INIT;
	struct resp r;
	int ok;

	buf_addf(&full, "%s/%s", root, path);
	read_file(full.ptr, &data);
	buf_adds(&data, extra);
	buf_adds(&t, "/api/v1/files/");
	buf_add_urlpath(&t, path, strlen(path));
	ok = fetch_request(port, "PUT", t.ptr, AUTH, data.ptr, data.len, &r) == 0 &&
	     (r.status == 200 || r.status == 201);
	if (ok && version)
		*version = body_u64(r.body.ptr, "version");
	resp_free(&r);
	buf_release(&full);
	buf_release(&data);
	buf_release(&t);
	return ok ? 0 : -1;
}

/*
 * The reader is open loop: request k is due at start + 5k ms whatever
 * happened to the ones before, and its latency counts from when it was due,
 * so a stall shows in every read it delays (no coordinated omission).
 */
#define READ_EVERY_NS 5000000LL

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_until(long long t)
{
	struct timespec ts = { (time_t)(t / 1000000000LL), (long)(t % 1000000000LL) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

struct read_sample {
	long long due, sent, done; /* CLOCK_MONOTONIC ns */
	int ok;
};

struct reader {
	const char *url;
	long long start;           /* the first read is due then, CLOCK_MONOTONIC ns */
	_Atomic long long end;     /* no read is due after this */
	struct read_sample *v;
	size_t n, alloc;
	int realtime;              /* the reader ran at SCHED_FIFO */
};

static void *read_loop(void *arg)
{
	struct reader *rd = arg;
	struct sched_param sp = { .sched_priority = 1 };
	long long due;

	/*
	 * What is measured is the server: a process on the benchmark's core
	 * (or its own sync client) must not delay a read's send or its
	 * receipt. SCHED_FIFO needs root or CAP_SYS_NICE; without it the
	 * figures include the client core's scheduling.
	 */
	rd->realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
	for (due = rd->start; due < atomic_load(&rd->end); due += READ_EVERY_NS) {
		struct read_sample *s;
		struct resp r;

		sleep_until(due);
		ALLOC_GROW(rd->v, rd->n + 1, rd->alloc);
		s = &rd->v[rd->n++];
		s->due = due;
		s->sent = now_ns();
		s->ok = fetch_request(port, "GET", rd->url, "Accept-Encoding: gzip\r\n", NULL, 0, &r) == 0 &&
			r.status == 200;
		s->done = now_ns();
		resp_free(&r);
	}
	return NULL;
}

/* Windows of the read phase, CLOCK_MONOTONIC ns. */
struct span {
	long long from, to;
};

struct spans {
	struct span *v;
	size_t n, alloc;
	long long total;
};

static void spans_add(struct spans *s, long long from, long long to)
{
	ALLOC_GROW(s->v, s->n + 1, s->alloc);
	s->v[s->n].from = from;
	s->v[s->n++].to = to;
	s->total += to - from;
}

static int in_spans(long long t, const struct spans *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (t >= s->v[i].from && t < s->v[i].to)
			return 1;
	return 0;
}

/* Prints p50/p99/max and the errors of the reads due inside s; returns the p99. */
static double report_reads(const char *what, const struct reader *rd, const struct spans *s)
{
	double *lat = xcalloc(rd->n + 1, sizeof(*lat)), p99;
	size_t i, n = 0, errors = 0;

	for (i = 0; i < rd->n; i++) {
		if (!in_spans(rd->v[i].due, s))
			continue;
		lat[n++] = (double)(rd->v[i].done - rd->v[i].due) / 1e6;
		errors += !rd->v[i].ok;
	}
	p99 = pct(lat, n, 0.99);
	/* this line's shape is what bench/run reads */
	printf("reads at 200/s %s: p50 %.3f ms, p99 %.3f ms, %zu errors of %zu (max %.3f ms)\n", what,
	       pct(lat, n, 0.5), p99, errors, n, pct(lat, n, 1.0));
	free(lat);
	return p99;
}

/* Every read and window, for matching slow reads with a scheduler trace. */
static void write_trace(const char *path, const struct reader *rd, const struct spans *busy,
			const struct spans *calm)
{
	FILE *f = fopen(path, "w");
	size_t i;

	if (!f)
		return;
	fprintf(f, "# read DUE_MS LATENCY_MS SERVICE_MS OK CLASS (sync, idle or gap); span CLASS FROM_MS TO_MS\n");
	for (i = 0; i < busy->n; i++)
		fprintf(f, "span sync %.3f %.3f\n", (double)busy->v[i].from / 1e6, (double)busy->v[i].to / 1e6);
	for (i = 0; i < calm->n; i++)
		fprintf(f, "span idle %.3f %.3f\n", (double)calm->v[i].from / 1e6, (double)calm->v[i].to / 1e6);
	for (i = 0; i < rd->n; i++) {
		const struct read_sample *s = &rd->v[i];
		fprintf(f, "read %.3f %.3f %.3f %d %s\n", (double)s->due / 1e6,
			(double)(s->done - s->due) / 1e6, (double)(s->done - s->sent) / 1e6, s->ok,
			in_spans(s->due, busy) ? "sync" : in_spans(s->due, calm) ? "idle" : "gap");
	}
	fclose(f);
}

/*
 * One sync: 100 notes PUT back to back, then a wait until the last is
 * live; *puts_ns gets how long the PUTs took. -1 on any failure.
 */
static int sync_notes(const char *root, const struct note *notes, size_t nnotes, size_t *k,
		      long long *puts_ns)
{
	long long t0 = now_ns();
	long long v = 0, last = 0;
	char target[128];
	struct resp r;
	int ret = 0;
	size_t i;

	for (i = 0; i < 100; i++, (*k)++) {
		if (put(root, notes[(*k * 7) % nnotes].path, "\nA synced paragraph.\n", &v) < 0)
			ret = -1;
		else if (v > last)
			last = v;
	}
	*puts_ns = now_ns() - t0;
	snprintf(target, sizeof(target), "/api/v1/wait?version=%lld&timeout=10000", last);
	if (fetch_request(port, "GET", target, AUTH, NULL, 0, &r) != 0 || r.status != 200)
		ret = -1;
	resp_free(&r);
	return ret;
}

static long vm_hwm_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	const char *bin = argc > 1 ? argv[1] : "build/quire";
	const char *src = argc > 2 ? argv[2] : "bench/vaults/v1k";
	size_t edits = argc > 3 ? strtoul(argv[3], NULL, 10) : 200, i, nnotes;
	char root[4096], cmd[16384], tokfile[4200], logpath[4200];
	char server_cores[64];
	struct note *notes = NULL;
	double *live;
	pid_t pid;
	FILE *f;
	struct resp r;
	pthread_t t;
	int ret = 0;

	setvbuf(stdout, NULL, _IOLBF, 0); /* progress shows when redirected */
	snprintf(root, sizeof(root), "%s/quire-sync-bench-XXXXXX",
		 getenv("SYNC_BENCH_DIR") ? getenv("SYNC_BENCH_DIR") : "/tmp");
	if (!mkdtemp(root))
		return 1;
	/* SYNC_BENCH_KEEP_DATA=1 keeps the copy's .quire: a search index filled
	 * beforehand, so that 100,000 notes do not wait minutes for the fill */
	if (getenv("SYNC_BENCH_KEEP_DATA") && !strcmp(getenv("SYNC_BENCH_KEEP_DATA"), "1"))
		snprintf(cmd, sizeof(cmd), "cp -r '%s'/. '%s'/", src, root);
	else
		snprintf(cmd, sizeof(cmd), "cp -r '%s'/. '%s'/ && rm -rf '%s/.quire'", src, root, root);
	if (system(cmd) != 0)
		return 1;
	snprintf(tokfile, sizeof(tokfile), "%s.token", root);
	f = fopen(tokfile, "w");
	fputs(TOKEN "\n", f);
	fclose(f);
	if (getenv("SERVER_CORES")) {
		snprintf(server_cores, sizeof(server_cores), "%s", getenv("SERVER_CORES"));
		printf("server on cores %s (SERVER_CORES)\n", server_cores);
	} else {
		int core = disk_core(root);
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		cpu_set_t rest;

		snprintf(server_cores, sizeof(server_cores), "%d", core < 0 ? 0 : core);
		CPU_ZERO(&rest);
		for (i = 0; i < (size_t)n && i < CPU_SETSIZE; i++)
			if ((int)i != (core < 0 ? 0 : core))
				CPU_SET(i, &rest);
		if (CPU_COUNT(&rest) > 0 && sched_setaffinity(0, sizeof(rest), &rest) == 0)
			printf("server on core %s (%s), the benchmark on the other%s\n", server_cores,
			       core < 0 ? "the disk's interrupts not found" : "it takes the disk's interrupts",
			       CPU_COUNT(&rest) > 1 ? "s" : "");
	}
	snprintf(logpath, sizeof(logpath), "%s.log", root);
	pid = fork();
	if (pid == 0) {
		const char *listen = "127.0.0.1:0";
		int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp("taskset", "taskset", "-c", server_cores, bin, "serve", "--vault", root, "--listen",
		       listen, "--threads", "1", "--token-file", tokfile, "--no-watch", (char *)NULL);
		execl(bin, bin, "serve", "--vault", root, "--listen", listen, "--threads", "1",
		      "--token-file", tokfile, "--no-watch", (char *)NULL);
		_exit(127);
	}
	/* 100,000 notes load in more than a minute on this machine: wait for
	 * as long as the server is starting, up to 15 minutes */
	for (i = 0; i < 90000 && waitpid(pid, NULL, WNOHANG) == 0; i++) {
		if (!port && (port = served_port(logpath)) > 0)
			printf("serving %s at http://127.0.0.1:%d/\n", root, port);
		if (port) {
			int up = fetch_request(port, "GET", "/healthz", NULL, NULL, 0, &r) == 0 &&
				 r.status == 200;
			resp_free(&r);
			if (up)
				break;
		}
		usleep(10000);
	}
	nnotes = port ? find_notes(root, &notes) : 0;
	printf("vault %s: server up (pid %d), %zu published notes sampled\n", src, (int)pid, nnotes);
	if (!nnotes) {
		ret = 1; /* the server died, or never answered: its last words */
		snprintf(cmd, sizeof(cmd), "tail -n 20 '%s' >&2", logpath);
		if (system(cmd) != 0)
			fprintf(stderr, "sync-bench: no server log at %s\n", logpath);
		goto out;
	}

	/*
	 * The loader fills the search index between changes after start-up;
	 * an edit made meanwhile waits for a batch of it. One edit is timed
	 * during the fill, then the steady state is measured once the server
	 * logs that the index is ready.
	 */
	{
		double t0 = now_ms();
		char line[512];
		int ready = 0;

		put(root, notes[0].path, "\n\nsync-bench-warm-up\n", NULL);
		for (;;) {
			int seen = fetch_request(port, "GET", notes[0].url, NULL, NULL, 0, &r) == 0 &&
				   memmem(r.body.ptr, r.body.len, "sync-bench-warm-up", 18);
			resp_free(&r);
			if (seen || now_ms() - t0 > 60000)
				break;
			usleep(250);
		}
		printf("an edit made while the index fills: live %.1f ms after the PUT's answer\n",
		       now_ms() - t0);
		while (!ready && now_ms() - t0 < 300000) {
			FILE *lf = fopen(logpath, "r");
			while (lf && fgets(line, sizeof(line), lf))
				ready |= strstr(line, "search index ready") != NULL;
			if (lf)
				fclose(lf);
			if (!ready)
				usleep(100000);
		}
	}

	/* 1. edit to live */
	live = calloc(edits, sizeof(*live));
	srand(1);
	for (i = 0; i < edits; i++) {
		struct note *n = &notes[(size_t)rand() % nnotes];
		char marker[64], extra[128];
		double t0;
		snprintf(marker, sizeof(marker), "sync-bench-edit-%zu", i);
		snprintf(extra, sizeof(extra), "\n\nParagraph %s added by the benchmark.\n", marker);
		if (put(root, n->path, extra, NULL) < 0) {
			fprintf(stderr, "PUT %s failed\n", n->path);
			continue;
		}
		t0 = now_ms();
		for (;;) {
			int seen = fetch_request(port, "GET", n->url, NULL, NULL, 0, &r) == 0 &&
				   memmem(r.body.ptr, r.body.len, marker, strlen(marker));
			resp_free(&r);
			if (seen || now_ms() - t0 > 10000)
				break;
			usleep(250); /* poll, but leave the server's core to the server */
		}
		live[i] = now_ms() - t0;
	}
	printf("edit to live over %zu PUTs: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms\n", edits,
	       pct(live, edits, 0.5), pct(live, edits, 0.9), pct(live, edits, 0.99));

	/*
	 * 2. reads while notes sync, and idle. One reader, 200 GETs a second
	 * open loop, for the whole phase; syncs (100 notes PUT back to back,
	 * then a wait until the last one is live) alternate with idle windows
	 * of the same length, until each kind adds up to 5 s. A read counts for
	 * the window it was due in. The sync window runs on for SETTLE after
	 * the last note is live (the loader still writes the search rows) and
	 * the idle one starts after that. Alternating, rather than 5 s idle and
	 * then 5 s of syncs, exposes both to the same noise from whatever else
	 * runs on the machine; and every read counted as "during the sync" was
	 * made while one was under way (a single sync lasts 100 to 400 ms: one
	 * 5-s window around it counted mostly idle reads).
	 */
	{
		const long long settle = 100000000LL;
		const char *secs = getenv("SYNC_BENCH_READ_SECONDS");
		const long long want = (secs && atof(secs) > 0 ? (long long)(atof(secs) * 1e9) : 5000000000LL);
		struct reader rd = { 0 };
		struct spans busy = { 0 }, calm = { 0 };
		size_t failed = 0, k = 0, syncs = 0;
		long long puts = 0, puts_total = 0;
		double p_idle, p_sync;

		rd.url = notes[0].url;
		rd.start = now_ns() + 10000000LL;
		atomic_init(&rd.end, LLONG_MAX);
		pthread_create(&t, NULL, read_loop, &rd);
		sleep_until(rd.start);
		while (busy.total < want || calm.total < want) {
			long long t0 = now_ns(), t1;

			failed += sync_notes(root, notes, nnotes, &k, &puts) < 0;
			puts_total += puts;
			syncs++;
			t1 = now_ns() + settle;
			spans_add(&busy, t0, t1);
			sleep_until(t1 + (t1 - t0));
			spans_add(&calm, t1, t1 + (t1 - t0));
		}
		atomic_store(&rd.end, now_ns());
		pthread_join(t, NULL);
		printf("100-note sync: %.0f ms of PUTs (on average over %zu syncs, %.0f ms until the "
		       "last is live; as long idle between them; %zu failed)\n",
		       (double)puts_total / 1e6 / (double)syncs, syncs,
		       (double)(busy.total - (long long)syncs * settle) / 1e6 / (double)syncs, failed);
		if (!rd.realtime)
			printf("the reader could not run SCHED_FIFO: the reads include core 1's scheduling\n");
		p_idle = report_reads("idle", &rd, &calm);
		p_sync = report_reads("during the sync", &rd, &busy);
		printf("p99 during the sync / idle p99: %.2f\n", p_idle > 0 ? p_sync / p_idle : 0);
		if (getenv("SYNC_BENCH_TRACE"))
			write_trace(getenv("SYNC_BENCH_TRACE"), &rd, &busy, &calm);
		free(rd.v);
		free(busy.v);
		free(calm.v);
	}

	/* 3. memory */
	printf("server peak memory (VmHWM): %ld MB\n", vm_hwm_kb(pid) / 1024);
	free(live);
out:
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s' '%s'", root, tokfile, logpath);
	if (system(cmd) != 0)
		return 1;
	return ret;
}
