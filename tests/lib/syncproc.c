/*
 * syncproc.c: `quire sync` as a child of the test (see syncproc.h): fork,
 * the output to a temporary file, exec.
 */
#include "lib/syncproc.h"
#include "lib/test.h"
#include "util/files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *syncproc_bin(const char *prog)
{
	const char *bin = getenv("QUIRE_BIN");

	if (!bin || access(bin, X_OK) != 0) {
		fprintf(stderr, "%s: QUIRE_BIN must name the built quire binary\n", prog);
		return NULL;
	}
	return bin;
}

void syncproc_spawn(struct syncproc *p, const char *vault, const char *url,
		    const char *token_file, const char *const *extra, const char *const *env)
{
	const char *bin = getenv("QUIRE_BIN"), *argv[24];
	int n = 0, fd;

	memset(p, 0, sizeof(*p));
	buf_init(&p->out, 0);
	snprintf(p->out_path, sizeof(p->out_path), "/tmp/quire-sync-out-XXXXXX");
	fd = mkstemp(p->out_path);
	CHECK(fd >= 0);
	argv[n++] = bin;
	argv[n++] = "sync";
	argv[n++] = vault;
	argv[n++] = url;
	argv[n++] = "--token-file";
	argv[n++] = token_file;
	while (extra && *extra && n < 23)
		argv[n++] = *extra++;
	argv[n] = NULL;
	fflush(NULL);
	p->pid = fork();
	CHECK(p->pid >= 0);
	if (p->pid == 0) {
		while (env && *env)
			putenv((char *)*env++);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	if (fd >= 0)
		close(fd);
}

int syncproc_finish(struct syncproc *p)
{
	int st = 0;

	CHECK(waitpid(p->pid, &st, 0) == p->pid);
	p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	buf_reset(&p->out);
	CHECK(read_file(p->out_path, &p->out) == 0);
	unlink(p->out_path);
	return p->status;
}

void syncproc_free(struct syncproc *p)
{
	buf_release(&p->out);
}
