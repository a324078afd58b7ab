/*
 * test-config.c: an invalid quire.yml fails closed, with the real quire
 * binary ($QUIRE_BIN) as a child.
 *
 *	- `quire check`, `quire export` and `quire serve` on a vault whose
 *	  quire.yml is broken (a YAML error, a typo of a key) exit 1 with a
 *	  message naming the file, the line and the reason, and serve nor
 *	  export anything;
 *	- a running `quire serve` whose quire.yml becomes invalid keeps the
 *	  last valid settings (a note they hide stays hidden, also one
 *	  created meanwhile), says so in its log and on /healthz, and applies
 *	  quire.yml again once it is valid.
 *
 * The vaults are written by the test. A server that started when it
 * should not have is seen by its "serving" line and stopped.
 */
#include "lib/httpc.h"
#include "lib/serveproc.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "util/files.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *quire_bin;

/*
 * Runs `quire cmd --vault vault [flag value]` with its stdout and stderr
 * in out; returns its exit status. A command that is still running after
 * a minute (a server that went on serving) is killed: -1.
 */
static int run(const char *cmd, const char *vault, const char *flag, const char *value,
	       struct buf *out)
{
	const char *argv[10];
	char path[] = "/tmp/quire-config-out-XXXXXX";
	int n = 0, fd = mkstemp(path), st = 0;
	double deadline = now_s() + 60;
	pid_t pid;

	CHECK(fd >= 0);
	argv[n++] = quire_bin;
	argv[n++] = cmd;
	argv[n++] = "--vault";
	argv[n++] = vault;
	if (flag) {
		argv[n++] = flag;
		argv[n++] = value;
	}
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execv(quire_bin, (char *const *)argv);
		_exit(127);
	}
	close(fd);
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now_s() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			st = -1;
			break;
		}
		usleep(20000);
	}
	buf_reset(out);
	CHECK(read_file(path, out) == 0);
	unlink(path);
	return st < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int has(const struct buf *out, const char *s)
{
	if (strstr(out->ptr, s))
		return 1;
	fprintf(stderr, "  output lacks '%s':\n%s", s, out->ptr);
	return 0;
}

/* A vault with one note that publishes under publish: explicit and one that does not. */
static char *two_notes(const char *yml)
{
	char *v = tv_new();

	tv_write(v, "quire.yml", yml);
	tv_write(v, "Public.md", "---\npublish: true\n---\nfor everyone\n");
	tv_write(v, "Private.md", "only with publish: all\n");
	return v;
}

/*
 * s as quire serve's log writes it inside a quoted value (logfmt): its
 * backslashes and quotes escaped. check and export write messages as they are.
 */
static void logfmt_quoted(const char *s, struct buf *out)
{
	buf_reset(out);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			buf_addc(out, '\\');
		buf_addc(out, *s);
	}
}

/*
 * check, export and serve on the vault v exit 1, saying says (and also,
 * unless NULL), and neither serve nor export anything.
 */
static void expect_stopped(const char *v, const char *says, const char *also)
{
	struct buf out = BUF_INIT, outdir = BUF_INIT;
	size_t k;

	buf_addf(&outdir, "%s/out", v);
	{
		const char *cmds[3][3] = {
			{ "check", NULL, NULL },
			{ "export", "--out", outdir.ptr },
			{ "serve", "--listen", "127.0.0.1:0" },
		};
		for (k = 0; k < 3; k++) {
			int st = run(cmds[k][0], v, cmds[k][1], cmds[k][2], &out);
			if (st != 1) {
				fprintf(stderr, "  quire %s exited %d, not 1\n", cmds[k][0], st);
				CHECK(0);
			}
			CHECK(has(&out, says));
			if (also && k == 2) {
				struct buf q = BUF_INIT;
				logfmt_quoted(also, &q);
				CHECK(has(&out, q.ptr));
				buf_release(&q);
			} else {
				CHECK(!also || has(&out, also));
			}
			CHECK(has(&out, "quire.yml is invalid"));
			/* nor does serve listen first: a proxy would see a server come and go */
			CHECK(!strstr(out.ptr, "serving ") && !strstr(out.ptr, "exported ") &&
			      !strstr(out.ptr, "listening at "));
		}
	}
	CHECK(!tv_exists(v, "out")); /* export wrote nothing */
	buf_release(&out);
	buf_release(&outdir);
}

/*
 * A broken quire.yml stops check, export and serve (issue 31: with
 * "publish: explicit" and a YAML error elsewhere, serve dropped every
 * setting and published every note).
 */
static void test_broken_config_stops_commands(void)
{
	static const struct {
		const char *yml;
		const char *says, *also;   /* in the message */
	} broken[] = {
		{ "publish: explicit\ntitle: [oops\n", "/quire.yml:3: invalid YAML", NULL },
		{ "publsh: explicit\n", "/quire.yml:1: unknown setting 'publsh'", "'publish'" },
		{ "publish: explicit\nhosts:\n"
		  "  docs.example.org: {base_url: \"https://x/\\r\\nA: b\"}\n",
		  "/quire.yml:3: base_url of host", "https://x/\\r\\nA: b" },
	};
	size_t i;

	for (i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		char *v = two_notes(broken[i].yml);
		expect_stopped(v, broken[i].says, broken[i].also);
		tv_remove(v);
	}
}

/* The status of GET path on port (the body in body when not NULL), or -1. */
static int get(int port, const char *path, struct buf *body)
{
	struct resp r;
	int st = fetch_request(port, "GET", path, NULL, NULL, 0, &r) == 0 ? r.status : -1;

	if (body) {
		buf_reset(body);
		buf_add(body, r.body.ptr, r.body.len);
	}
	resp_free(&r);
	return st;
}

/*
 * Waits for GET path to answer status (with want in its body, when not
 * NULL), for up to a minute: the watcher and the loader take their time.
 * 1 when it did.
 */
static int await(int port, const char *path, int status, const char *want)
{
	struct buf body = BUF_INIT;
	double deadline = now_s() + 60;
	int ok = 0;

	while (!ok && now_s() < deadline) {
		ok = get(port, path, &body) == status && (!want || strstr(body.ptr, want));
		if (!ok)
			usleep(20000);
	}
	if (!ok)
		fprintf(stderr, "  GET %s never gave %d%s%s; last: %s\n", path, status,
			want ? " with " : "", want ? want : "", body.ptr);
	buf_release(&body);
	return ok;
}

/* Starts `quire serve` on v with its stderr in the file log. */
static pid_t serve_logged(const char *v, const char *log, int *port)
{
	struct serveproc_options o = { quire_bin, v, NULL, 1, 0, NULL };
	int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	pid_t pid;

	/* the child takes the test's stderr: make it the log for the time of the start */
	CHECK(saved >= 0 && fd >= 0 && dup2(fd, 2) == 2);
	pid = serveproc_start(&o, port);
	dup2(saved, 2);
	close(saved);
	close(fd);
	return pid;
}

/*
 * A running server whose quire.yml becomes invalid keeps the last valid
 * settings: what they hide stays 404 (a note created meanwhile too), the
 * log says why in one line, /healthz shows it; a valid quire.yml is
 * applied again and clears it (issue 31).
 */
static void test_live_reload_keeps_settings(void)
{
	char *v = two_notes("publish: explicit\n");
	struct buf log = BUF_INIT, body = BUF_INIT, path = BUF_INIT;
	int port = 0;
	pid_t pid;

	buf_addf(&path, "%s.log", v);
	pid = serve_logged(v, path.ptr, &port);
	CHECK_INT(get(port, "/public", NULL), 200);
	CHECK_INT(get(port, "/private", NULL), 404);
	CHECK(get(port, "/healthz", &body) == 200 && !strstr(body.ptr, "\"config\""));
	/*
	 * The server prints its address before it watches: a note written
	 * again until it is served shows that it does.
	 */
	{
		double deadline = now_s() + 60;
		while (get(port, "/probe", NULL) != 200 && now_s() < deadline) {
			tv_write(v, "Probe.md", "---\npublish: true\n---\nwatched\n");
			usleep(50000);
		}
		CHECK_INT(get(port, "/probe", NULL), 200);
	}

	/* invalid, and publish: all if it were applied */
	tv_write(v, "quire.yml", "publish: all\ntitle: [oops\n");
	CHECK(await(port, "/healthz", 200, "\"config\":\"error: quire.yml:3: invalid YAML"));
	CHECK_INT(get(port, "/private", NULL), 404);
	CHECK_INT(get(port, "/public", NULL), 200);
	/* notes change meanwhile under the last valid settings: a marker note shows when */
	tv_write(v, "New.md", "written while quire.yml is broken\n");
	tv_write(v, "Marker.md", "---\npublish: true\n---\nafter New.md\n");
	CHECK(await(port, "/marker", 200, NULL));
	CHECK_INT(get(port, "/new", NULL), 404);
	CHECK(get(port, "/healthz", &body) == 200 && strstr(body.ptr, "quire.yml:3:"));

	/* a typo of a key is invalid as well */
	tv_write(v, "quire.yml", "publsh: all\n");
	CHECK(await(port, "/healthz", 200, "quire.yml:1: unknown setting 'publsh'"));
	CHECK_INT(get(port, "/private", NULL), 404);

	/* valid again: applied, and the error is gone */
	tv_write(v, "quire.yml", "publish: all\n");
	CHECK(await(port, "/private", 200, NULL));
	CHECK(get(port, "/healthz", &body) == 200 && !strstr(body.ptr, "\"config\""));
	CHECK_INT(get(port, "/new", NULL), 200);
	serveproc_stop(pid);

	CHECK(read_file(path.ptr, &log) == 0);
	CHECK(has(&log, "/quire.yml:3: invalid YAML"));
	CHECK(has(&log, "the last valid settings are kept"));
	CHECK(has(&log, "/quire.yml:1: unknown setting 'publsh': did you mean 'publish'?"));
	CHECK(has(&log, "quire.yml is valid again"));
	unlink(path.ptr);
	buf_release(&log);
	buf_release(&body);
	buf_release(&path);
	tv_remove(v);
}

int main(void)
{
	quire_bin = getenv("QUIRE_BIN");
	if (!quire_bin || access(quire_bin, X_OK) != 0) {
		fprintf(stderr, "test-config: QUIRE_BIN must name the built quire binary\n");
		return 1;
	}
	RUN(test_broken_config_stops_commands);
	RUN(test_live_reload_keeps_settings);
	return test_done();
}
