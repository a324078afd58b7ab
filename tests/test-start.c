/*
 * test-start.c: how `quire serve` starts, as a child process.
 *
 *	- It listens before the first load and says so: while the load runs
 *	  /healthz answers 503 {"status":"loading","notes":N,"of":M}, a page
 *	  503 with Retry-After, and once "serving" is printed both answer 200.
 *	  The load is held by the server's test hook ($QUIRE_TEST_HOLD_LOAD
 *	  names a FIFO that the load waits on once it has counted the notes),
 *	  so nothing here depends on how long a load takes.
 *	- A stop while the first load runs ends the server, exit status 0.
 *	- A second server on an address in use exits 1 with "address in use"
 *	  and the address, and the first goes on serving.
 *
 * The vault is written by the test (40 notes); the server is $QUIRE_BIN.
 */
#include "lib/httpc.h"
#include "lib/test.h"
#include "lib/tv.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOTES 40

static const char *quire_bin;
static char *vault, *scratch;

struct child {
	pid_t pid;
	FILE *out, *err; /* its stdout and stderr */
};

/* Starts `quire serve` on listen, holding its first load on the FIFO hold when not NULL. */
static void spawn(struct child *c, const char *listen, const char *hold)
{
	int out[2], err[2];

	CHECK(pipe(out) == 0 && pipe(err) == 0);
	fflush(NULL);
	c->pid = fork();
	if (c->pid == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(126);
		close(out[0]);
		close(err[0]);
		unsetenv("QUIRE_TOKEN");
		if (hold)
			setenv("QUIRE_TEST_HOLD_LOAD", hold, 1);
		else
			unsetenv("QUIRE_TEST_HOLD_LOAD");
		execl(quire_bin, quire_bin, "serve", "--vault", vault, "--listen", listen,
		      "--threads", "2", "--no-watch", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	c->out = fdopen(out[0], "r");
	c->err = fdopen(err[0], "r");
	CHECK(c->pid > 0 && c->out && c->err);
}

/*
 * Reads f's lines until one holds want (1, the line in line) or one holds
 * stop, or the stream ends (0). Each line read goes to stderr indented.
 */
static int read_until(FILE *f, const char *want, const char *stop, char *line, size_t size)
{
	while (fgets(line, (int)size, f)) {
		fprintf(stderr, "    | %s", line);
		if (strstr(line, want))
			return 1;
		if (stop && strstr(line, stop))
			return 0;
	}
	return 0;
}

/* Closes c's pipes and waits for it; returns its exit status, or -1 when it did not exit. */
static int reap(struct child *c)
{
	int st = 0;

	if (c->out)
		fclose(c->out);
	if (c->err)
		fclose(c->err);
	c->out = c->err = NULL;
	if (waitpid(c->pid, &st, 0) != c->pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* The port in "listening at http://127.0.0.1:PORT/", or 0. */
static int listening_port(const char *line)
{
	const char *p = strstr(line, "http://127.0.0.1:");

	return p ? atoi(p + 17) : 0;
}

/* Starts a server held in its first load; returns its port, 0 when it did not get there. */
static int start_held(struct child *c, const char *fifo)
{
	char line[512];
	int port;

	spawn(c, "127.0.0.1:0", fifo);
	/* a server that loads before it listens prints "loaded" first: that fails here */
	if (!read_until(c->err, "listening at", "loaded ", line, sizeof(line)))
		return 0;
	port = listening_port(line);
	CHECK(port > 0);
	CHECK(read_until(c->err, "holding the first load", "loaded ", line, sizeof(line)));
	return port;
}

static void test_loading(void)
{
	struct child c = { 0 };
	struct buf fifo = BUF_INIT, status = BUF_INIT;
	struct resp r;
	char line[512];
	long long notes, of;
	int port, fd, retry;

	buf_addf(&fifo, "%s/hold", scratch);
	CHECK(mkfifo(fifo.ptr, 0600) == 0);
	port = start_held(&c, fifo.ptr);
	CHECK(port > 0);
	if (port > 0) {
		CHECK(fetch_request(port, "GET", "/healthz", NULL, NULL, 0, &r) == 0);
		CHECK_INT(r.status, 503);
		CHECK(hdr(&r, "Retry-After") != NULL);
		CHECK(body_str(r.body.ptr, "status", &status) == 0);
		CHECK_STR(status.ptr, "loading");
		notes = body_u64(r.body.ptr, "notes");
		of = body_u64(r.body.ptr, "of");
		/* held once the scan counted the notes: all of them, none done yet */
		CHECK(of == NOTES);
		CHECK(notes >= 0 && notes <= of);
		resp_free(&r);

		CHECK(fetch_request(port, "GET", "/n07", NULL, NULL, 0, &r) == 0);
		CHECK_INT(r.status, 503);
		retry = hdr(&r, "Retry-After") ? atoi(hdr(&r, "Retry-After")) : 0;
		CHECK(retry >= 1 && retry <= 10);
		CHECK(r.body.len > 0 && r.body.len < 200);
		CHECK(memmem(r.body.ptr, r.body.len, "loading", 7) != NULL);
		resp_free(&r);

		/* the load goes on; "serving" on stdout says the site is served */
		fd = open(fifo.ptr, O_WRONLY);
		CHECK(fd >= 0 && write(fd, "x", 1) == 1);
		if (fd >= 0)
			close(fd);
		CHECK(read_until(c.out, "serving ", NULL, line, sizeof(line)));
		CHECK(fetch_request(port, "GET", "/healthz", NULL, NULL, 0, &r) == 0);
		CHECK_INT(r.status, 200);
		CHECK(body_str(r.body.ptr, "status", &status) == 0);
		CHECK_STR(status.ptr, "ok");
		CHECK_INT(body_u64(r.body.ptr, "notes"), NOTES);
		resp_free(&r);
		CHECK_INT(fetch_page(port, "/n07", NULL), 200);
	}
	if (c.pid > 0)
		CHECK(kill(c.pid, SIGTERM) == 0);
	CHECK_INT(reap(&c), 0);
	unlink(fifo.ptr);
	buf_release(&fifo);
	buf_release(&status);
}

/* SIGTERM while the first load is held: the server ends at once, exit status 0. */
static void test_stop_while_loading(void)
{
	struct child c = { 0 };
	struct buf fifo = BUF_INIT;

	buf_addf(&fifo, "%s/hold-stop", scratch);
	CHECK(mkfifo(fifo.ptr, 0600) == 0);
	CHECK(start_held(&c, fifo.ptr) > 0);
	if (c.pid > 0)
		CHECK(kill(c.pid, SIGTERM) == 0);
	CHECK_INT(reap(&c), 0);
	unlink(fifo.ptr);
	buf_release(&fifo);
}

static void test_address_in_use(void)
{
	struct child first = { 0 }, second = { 0 };
	char line[512], listen[64], want[64];
	int port = 0, found;

	spawn(&first, "127.0.0.1:0", NULL);
	if (read_until(first.out, "serving ", NULL, line, sizeof(line)))
		port = listening_port(line);
	CHECK(port > 0);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	spawn(&second, listen, NULL);
	/* a second server that starts says "listening" (or, as quire did, "loaded") */
	found = read_until(second.err, "address in use", "loaded ", line, sizeof(line));
	CHECK(found);
	snprintf(want, sizeof(want), "127.0.0.1:%d", port);
	CHECK(strstr(line, want) != NULL);
	if (!found)
		kill(second.pid, SIGKILL);
	CHECK_INT(reap(&second), 1);
	/* the first one is untouched */
	CHECK_INT(fetch_page(port, "/n07", NULL), 200);
	CHECK_INT(fetch_page(port, "/healthz", NULL), 200);
	if (first.pid > 0)
		CHECK(kill(first.pid, SIGTERM) == 0);
	CHECK_INT(reap(&first), 0);
}

int main(void)
{
	int i;

	quire_bin = getenv("QUIRE_BIN");
	if (!quire_bin) {
		fprintf(stderr, "test-start: QUIRE_BIN must name the built quire binary\n");
		return 1;
	}
	vault = tv_new();
	scratch = tv_new();
	for (i = 0; i < NOTES; i++) {
		char rel[32], text[128];
		snprintf(rel, sizeof(rel), "n%02d.md", i);
		snprintf(text, sizeof(text), "# Note %d\n\nLinks to [[n%02d]].\n", i, (i + 1) % NOTES);
		tv_write(vault, rel, text);
	}
	RUN(test_loading);
	RUN(test_stop_while_loading);
	RUN(test_address_in_use);
	tv_remove(vault);
	tv_remove(scratch);
	return test_done();
}
