/*
 * serveproc.c: `quire serve` as a child (see serveproc.h): fork, exec with
 * stdout on a pipe, and the port taken from the "http://127.0.0.1:PORT"
 * that the server prints once it listens; then the pipe is closed, so the
 * server's later output goes nowhere (it ignores SIGPIPE).
 */
#include "lib/serveproc.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/test.h"

/* In the child: exec the server with stdout on out (does not return). */
static void exec_server(const struct serveproc_options *o, int out)
{
	const char *argv[64];
	char threads[16];
	int n = 0, i;

	snprintf(threads, sizeof(threads), "%d", o->threads);
	/* the server goes with the test, however the test ends */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || dup2(out, 1) < 0)
		_exit(126);
	if (o->quiet) {
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull < 0 || dup2(devnull, 2) < 0)
			_exit(126);
	}
	argv[n++] = o->bin;
	argv[n++] = "serve";
	argv[n++] = "--vault";
	argv[n++] = o->vault;
	argv[n++] = "--listen";
	argv[n++] = "127.0.0.1:0";
	argv[n++] = "--threads";
	argv[n++] = threads;
	if (o->token_file) {
		argv[n++] = "--token-file";
		argv[n++] = o->token_file;
	}
	for (i = 0; o->args && o->args[i] && n < 63; i++)
		argv[n++] = o->args[i];
	argv[n] = NULL;
	execv(o->bin, (char *const *)argv);
	_exit(127);
}

pid_t serveproc_start(const struct serveproc_options *o, int *port)
{
	int out[2];
	pid_t pid;
	FILE *f;
	char line[512];

	CHECK(pipe(out) == 0);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(out[0]);
		exec_server(o, out[1]);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	*port = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "http://127.0.0.1:");
		if (p) {
			*port = atoi(p + 17);
			break;
		}
	}
	if (f)
		fclose(f);
	CHECK(*port > 0);
	return pid;
}

void serveproc_stop(pid_t pid)
{
	int st = 0;

	CHECK(kill(pid, SIGTERM) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
