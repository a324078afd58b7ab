/*
 * theme.h: the default theme's files, compiled into the binary from
 * theme/ by scripts/embed.py.
 */
#ifndef QUIRE_THEME_H
#define QUIRE_THEME_H

#include <stddef.h>

struct theme_file {
	const char *name;  /* "quire.css", "quire.js", "favicon.svg" */
	const char *data;
	size_t len;
};

/* Terminated by an entry whose name is NULL. */
extern const struct theme_file theme_files[];

#endif
