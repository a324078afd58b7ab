/*
 * sync-bench.c: render on write through the sync API, as an editor plugin
 * sees it, on a vault of any size.
 *
 *	sync-bench QUIRE_BIN VAULT [EDITS]
 *
 * Copies VAULT to a temporary folder, starts `QUIRE_BIN serve` on it with a
 * token (pinned to core 0 when taskset is around; run the benchmark itself
 * on core 1: `taskset -c 1 sync-bench ...`), and measures:
 *
 *  1. edit to live: EDITS times, a random published note gets a paragraph
 *     appended through PUT /api/v1/files/<path>; from the moment the PUT is
 *     answered, the note's page is fetched in a tight loop until it carries
 *     the new text. Prints p50/p90/p99 of that delay.
 *  2. reads during a sync: a reader fetches a page 200 times a second for
 *     5 s while nothing happens, then again while 100 notes are PUT as fast
 *     as they are answered. Prints p50/p99 of both and the errors.
 *  3. the server's peak memory (VmHWM) and its load time.
 *
 * The copy starts with no .quire (an empty search index, filled after the
 * load) unless SYNC_BENCH_KEEP_DATA=1: then VAULT's own .quire is copied,
 * and a search index filled beforehand is only checked (bench/run does
 * this so that 100,000 notes do not wait minutes for the fill).
 *
 * Figures, not assertions.
 */
#define _GNU_SOURCE
#include "../tests/testhttp.h"
#include "vault.h"
#include "xalloc.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define TOKEN "bench-token"
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
static int free_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), p = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		p = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return p ? p : 20000 + (int)(getpid() % 20000);
}

static size_t find_notes(const char *root, struct note **out)
{
	struct note *v = NULL;
	size_t n = 0, alloc = 0;
	char cmd[4096];
	FILE *f;
	char line[4096];

	snprintf(cmd, sizeof(cmd), "cd '%s' && find . -name '*.md' -not -path '*/.*' | sort", root);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		struct th_resp r;
		char *path = line + 2, *url;
		line[strcspn(line, "\n")] = '\0';
		url = note_url(path);
		if (th_request(port, "GET", url, NULL, NULL, 0, &r) == 0 && r.status == 200) {
			ALLOC_GROW(v, n + 1, alloc);
			v[n].path = xstrdup(path);
			v[n].url = url;
			n++;
		} else {
			free(url);
		}
		th_resp_free(&r);
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
	struct th_resp r;
	int ok;

	buf_addf(&full, "%s/%s", root, path);
	read_file(full.ptr, &data);
	buf_adds(&data, extra);
	buf_adds(&t, "/api/v1/files/");
	buf_add_urlpath(&t, path, strlen(path));
	ok = th_request(port, "PUT", t.ptr, AUTH, data.ptr, data.len, &r) == 0 &&
	     (r.status == 200 || r.status == 201);
	if (ok && version)
		*version = th_json_u64(r.body.ptr, "version");
	th_resp_free(&r);
	buf_release(&full);
	buf_release(&data);
	buf_release(&t);
	return ok ? 0 : -1;
}

struct reader {
	const char *url;
	double seconds;
	double *lat;
	size_t n, alloc;
	size_t errors;
};

/* 200 GETs a second, each one's latency recorded. */
static void *read_loop(void *arg)
{
	struct reader *rd = arg;
	double start = now_ms(), next = start;

	while (now_ms() - start < rd->seconds * 1e3) {
		struct th_resp r;
		double t0;
		while (now_ms() < next)
			usleep(200);
		t0 = now_ms();
		if (th_request(port, "GET", rd->url, "Accept-Encoding: gzip\r\n", NULL, 0, &r) != 0 ||
		    r.status != 200)
			rd->errors++;
		ALLOC_GROW(rd->lat, rd->n + 1, rd->alloc);
		rd->lat[rd->n++] = now_ms() - t0;
		th_resp_free(&r);
		next += 5.0;
	}
	return NULL;
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
	char root[] = "/tmp/quire-sync-bench-XXXXXX", cmd[16384], tokfile[4200], logpath[4200];
	struct note *notes;
	double *live;
	pid_t pid;
	FILE *f;
	struct th_resp r;
	struct reader idle = { 0 }, busy = { 0 };
	pthread_t t;
	int ret = 0;

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
	port = free_port();
	snprintf(logpath, sizeof(logpath), "%s.log", root);
	pid = fork();
	if (pid == 0) {
		char listen[64];
		int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			dup2(fd, 2);
		snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
		/* SERVER_CORES=0,1 gives the server both cores (default: core 0 alone) */
		const char *cores = getenv("SERVER_CORES") ? getenv("SERVER_CORES") : "0";
		execlp("taskset", "taskset", "-c", cores, bin, "serve", "--vault", root, "--listen",
		       listen, "--threads", "1", "--token-file", tokfile, "--no-watch", (char *)NULL);
		execl(bin, bin, "serve", "--vault", root, "--listen", listen, "--threads", "1",
		      "--token-file", tokfile, "--no-watch", (char *)NULL);
		_exit(127);
	}
	/* 100,000 notes load in more than a minute on this machine: wait for
	 * as long as the server is starting, up to 15 minutes */
	for (i = 0; i < 90000 && waitpid(pid, NULL, WNOHANG) == 0; i++) {
		if (th_request(port, "GET", "/healthz", NULL, NULL, 0, &r) == 0 && r.status == 200) {
			th_resp_free(&r);
			break;
		}
		th_resp_free(&r);
		usleep(10000);
	}
	nnotes = find_notes(root, &notes);
	printf("vault %s: server up, %zu published notes sampled\n", src, nnotes);
	if (!nnotes) {
		ret = 1; /* the server died, or never answered */
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
			int seen = th_request(port, "GET", notes[0].url, NULL, NULL, 0, &r) == 0 &&
				   memmem(r.body.ptr, r.body.len, "sync-bench-warm-up", 18);
			th_resp_free(&r);
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
			int seen = th_request(port, "GET", n->url, NULL, NULL, 0, &r) == 0 &&
				   memmem(r.body.ptr, r.body.len, marker, strlen(marker));
			th_resp_free(&r);
			if (seen || now_ms() - t0 > 10000)
				break;
			usleep(250); /* poll, but leave the server's core to the server */
		}
		live[i] = now_ms() - t0;
	}
	printf("edit to live over %zu PUTs: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms\n", edits,
	       pct(live, edits, 0.5), pct(live, edits, 0.9), pct(live, edits, 0.99));

	/* 2. reads, idle and during a 100-note sync */
	idle.url = busy.url = notes[0].url;
	idle.seconds = busy.seconds = 5;
	pthread_create(&t, NULL, read_loop, &idle);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, read_loop, &busy);
	{
		double t0 = now_ms();
		for (i = 0; i < 100; i++)
			put(root, notes[(i * 7) % nnotes].path, "\nA synced paragraph.\n", NULL);
		printf("100-note sync: %.0f ms of PUTs\n", now_ms() - t0);
	}
	pthread_join(t, NULL);
	printf("reads at 200/s idle: p50 %.3f ms, p99 %.3f ms, %zu errors of %zu\n",
	       pct(idle.lat, idle.n, 0.5), pct(idle.lat, idle.n, 0.99), idle.errors, idle.n);
	printf("reads at 200/s during the sync: p50 %.3f ms, p99 %.3f ms, %zu errors of %zu\n",
	       pct(busy.lat, busy.n, 0.5), pct(busy.lat, busy.n, 0.99), busy.errors, busy.n);

	/* 3. memory */
	printf("server peak memory (VmHWM): %ld MB\n", vm_hwm_kb(pid) / 1024);
	free(live);
	free(idle.lat);
	free(busy.lat);
out:
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s' '%s'", root, tokfile, logpath);
	if (system(cmd) != 0)
		return 1;
	return ret;
}
