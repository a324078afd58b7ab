/*
 * syncproc.h: `quire sync` (the built binary, $QUIRE_BIN) as a child
 * process of the test, its stdout and stderr in one file that the test
 * can read while it runs.
 *
 *	struct syncproc p;
 *	syncproc_spawn(&p, vault, url, token_file, extra_args, env);
 *	... kill(p.pid, SIGKILL) ...
 *	int status = syncproc_finish(&p);   (p.out holds what it printed)
 *	syncproc_free(&p);
 */
#ifndef QUIRE_TEST_SYNCPROC_H
#define QUIRE_TEST_SYNCPROC_H

#include <sys/types.h>

#include "util/buf.h"

struct syncproc {
	pid_t pid;
	char out_path[64];   /* stdout and stderr, until finished */
	int status;          /* exit status, or 128 + signal */
	struct buf out;      /* once finished */
};

/*
 * $QUIRE_BIN when it names an executable; else NULL, after printing that
 * the test prog needs it.
 */
const char *syncproc_bin(const char *prog);

/*
 * Starts `quire sync vault url --token-file token_file extra...` (extra and
 * env NULL-terminated, may be NULL; env holds NAME=VALUE strings added to
 * the child's environment). Checked.
 */
void syncproc_spawn(struct syncproc *p, const char *vault, const char *url,
		    const char *token_file, const char *const *extra, const char *const *env);

/* Waits for it; returns its status (also in p->status), its output in p->out. */
int syncproc_finish(struct syncproc *p);

void syncproc_free(struct syncproc *p);

#endif
