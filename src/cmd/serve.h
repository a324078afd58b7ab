/*
 * serve.h: the `quire serve` command: load, publish, serve, reload.
 */
#ifndef QUIRE_SERVE_H
#define QUIRE_SERVE_H

#include <getopt.h>

/* What `quire serve --help` prints, and the options it takes (commands.h). */
extern const char serve_usage[];
extern const struct option serve_options[];

/* Runs `quire serve` with argv[0] = "serve". Returns the exit status. */
int serve_main(int argc, char **argv);

#endif
