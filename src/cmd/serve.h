/*
 * serve.h: the `quire serve` command: load, publish, serve, reload.
 */
#ifndef QUIRE_SERVE_H
#define QUIRE_SERVE_H

/* Runs `quire serve` with argv[0] = "serve". Returns the exit status. */
int serve_main(int argc, char **argv);

#endif
