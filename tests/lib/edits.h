/*
 * edits.h: a seeded random edit sequence on a copy of a real vault, and a
 * page-by-page comparison of two snapshots. Shared by the property tests:
 * test-incremental (edits applied through the loader) and test-syncprop
 * (the same edits driven through the sync API of a running server);
 * test-churn takes its file list and generator.
 *
 * edit() changes files under root (bodies, titles, links, embeds, tags,
 * aliases, slugs, publish flags, notes added, deleted and renamed,
 * attachments added and removed, folders removed and renamed) and records the paths it
 * touched; compare() returns how many pages differ, printing the first.
 */
#ifndef QUIRE_TEST_EDITS_H
#define QUIRE_TEST_EDITS_H

#include <stddef.h>
#include <stdint.h>

#include "site/snapshot.h"

/* The generator's state: set it to the seed before the first edit. */
extern uint64_t rng_state;

/* The next number of the sequence (splitmix64). */
uint64_t rnd(void);

/* A number below n (0 when n is 0). */
size_t pick(size_t n);

/* The files of a vault, relative to its root, sorted. */
struct files {
	char **v;
	size_t n;
};

void files_release(struct files *f);

/*
 * Lists the files under root into out (replacing what it held), leaving out
 * dot-files and dot-folders (.quire/ holds the server's own state) and
 * quire.yml (a change to it is a full reload, the loader's business).
 */
void list_files(const char *root, struct files *out);

/* 1 when path names a note (ends in ".md"). */
int is_md(const char *path);

/* What one edit did: a name for messages, and the paths it touched (owned). */
struct step {
	const char *what;
	char *paths[4];
	size_t npaths;
};

/*
 * Makes one random edit under root, f being the files before it; records
 * what it touched in st (the caller frees st->paths). counter makes new
 * names unique.
 */
void edit(const char *root, struct files *f, struct step *st, unsigned counter);

/*
 * Reports step number i, after which diffs pages differ, and fails the
 * current test. prefix (a vault's name, or NULL) starts the message.
 */
void step_failed(const char *prefix, unsigned i, const struct step *st, size_t diffs);

/* Frees the paths of st. */
void step_release(struct step *st);

/* Returns the number of differing pages (printing the first few). */
size_t compare(const struct snapshot *inc, const struct snapshot *full);

/*
 * Pages that a fresh load compresses and inc does not (or the other way
 * round), or whose gzip bytes do not inflate to the page: what
 * site_gzip_pending() must have settled. Returns how many.
 */
size_t compare_gzip(const struct snapshot *inc, const struct snapshot *full);

#endif
