/*
 * diag.h: problems found in a vault, with file and line.
 *
 * The loader collects them as it goes; `quire check` prints them sorted,
 * `quire serve` logs them. A diagnostic never stops a load: the note it
 * names is published as well as it can be, and the rest of the vault is
 * untouched.
 */
#ifndef QUIRE_DIAG_H
#define QUIRE_DIAG_H

#include <pthread.h>
#include <stddef.h>

#include "util/map.h"

enum diag_level { DIAG_WARNING, DIAG_ERROR };

/* What produced a diagnostic, so that redoing that step can drop its old ones. */
enum diag_kind {
	DIAG_PARSE,   /* reading the file and its frontmatter */
	DIAG_LINK,    /* rendering: broken links and embeds */
	DIAG_EMBED,   /* composing: embed cycles, missing sections, links to missing headings */
	DIAG_URL,     /* URL and alias collisions */
	DIAG_ROUTE,   /* routes on hosts: unreadable, or claimed by another note */
	DIAG_OTHER,
};

/* The longest message kept whole, in bytes; longer ones are cut (diag.c). */
#define DIAG_MSG_MAX 400

struct diag {
	enum diag_level level;
	enum diag_kind kind;
	char *path;   /* vault-relative path, or "quire.yml" */
	int line;     /* 1-based, 0 when unknown */
	char *msg;
	size_t slot;  /* where its index is in its path's list (see diag_list.by_path) */
};

/*
 * The diagnostics in one array, in no particular order (diag_sort() sorts
 * them), and an index by path, so that forgetting one note's costs in
 * proportion to that note's diagnostics, not to the vault's: a vault
 * with 40,000 broken links would otherwise make every edit pay for all.
 */
struct diag_list {
	pthread_mutex_t lock; /* loader threads add concurrently */
	struct diag *items;
	size_t n, alloc;
	size_t nerrors, nwarnings;
	struct map by_path;   /* path -> its items' indices */
};

void diag_list_init(struct diag_list *l);
void diag_list_release(struct diag_list *l);
/*
 * Drops the diagnostics of one kind about path (NULL: about any path),
 * before the step that made them runs again.
 */
void diag_forget(struct diag_list *l, const char *path, enum diag_kind kind);

/* Makes the diagnostics about from about to: a note that moved keeps them. */
void diag_rename(struct diag_list *l, const char *from, const char *to);

/* Adds a diagnostic of kind DIAG_OTHER. */
void diag_add(struct diag_list *l, enum diag_level level, const char *path, int line,
	      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Adds a diagnostic of the given kind. */
void diag_addk(struct diag_list *l, enum diag_kind kind, enum diag_level level, const char *path,
	       int line, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Sorts by path, line, then message: the order check prints in. */
void diag_sort(struct diag_list *l);

#endif
