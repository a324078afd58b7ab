/*
 * serveproc.h: `quire serve` (the built binary) as a child process of the
 * test, on 127.0.0.1 and a port the kernel picks, for the tests that kill
 * it or want it to survive what the test does to its vault.
 *
 *	struct serveproc_options o = { quire_bin, vault, token_file, 2, 1, NULL };
 *	int port;
 *	pid_t pid = serveproc_start(&o, &port);
 *	...
 *	serveproc_stop(pid);
 */
#ifndef QUIRE_TEST_SERVEPROC_H
#define QUIRE_TEST_SERVEPROC_H

#include <sys/types.h>

struct serveproc_options {
	const char *bin;        /* the quire binary ($QUIRE_BIN) */
	const char *vault;
	const char *token_file; /* --token-file (the sync API), or NULL */
	int threads;            /* --threads */
	int quiet;              /* the server's stderr goes to /dev/null */
	const char *const *args; /* more arguments (NULL-terminated), or NULL */
};

/*
 * Starts the server and reads its port from the line it prints on stdout
 * (checked: *port > 0). The server is killed if the test program dies
 * first. Returns its pid.
 */
pid_t serveproc_start(const struct serveproc_options *o, int *port);

/* SIGTERM; checks that the server stops by itself and exits 0. */
void serveproc_stop(pid_t pid);

#endif
