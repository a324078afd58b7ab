/*
 * commands.h: the command line's table: each command's name, one-line
 * summary, the text `--help` prints and its getopt_long() options.
 *
 * One text per command, used for everything a user reads about it:
 * `quire CMD --help`, `quire help CMD` (which runs `quire CMD --help`),
 * `quire --help`'s list of commands, and at build time the man pages and
 * the shell completions (scripts/gen-manual.py reads the binary's help).
 * tests/test-usage.c holds each text against its options table, so an
 * option added to a table and not to the text fails the suite.
 */
#ifndef QUIRE_COMMANDS_H
#define QUIRE_COMMANDS_H

#include <getopt.h>
#include <stdio.h>

struct command {
	const char *name;
	const char *summary;          /* one line, lowercase, no final stop */
	const char *usage;            /* what --help prints: "usage: quire NAME ...\n\n..." */
	const struct option *options; /* its getopt_long() table, ending with a NULL name */
};

/* Every command in the order `quire --help` lists them, ending with a NULL name. */
extern const struct command commands[];

/* The command called name, or NULL. */
const struct command *command_find(const char *name);

/* `quire --help`: what quire is and the list of commands, on out. */
void commands_usage(FILE *out);

/* `quire --version`: the version, then each library linked and its version, on out. */
void commands_version(FILE *out);

/* The texts and tables of the commands main.c runs itself. */
extern const char check_usage[];
extern const struct option check_options[];
extern const char export_usage[];
extern const struct option export_options[];

#endif
