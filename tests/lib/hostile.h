/*
 * hostile.h: hostile inputs at a size n, what a note goes through, and a
 * check of what came out. Shared by tests/test-pathological.c, which
 * counts the work and memory of each case at n and 10 n (the verdict),
 * and bench/pathological-bench.c, which times them (figures only).
 *
 *	const struct hostile_case *c = &hostile_cases[i];
 *	void *in = c->build(n);
 *	c->run(in, n, 1);                 renders, and checks the output
 *	size_t bytes = hostile_bytes(c, in);
 *	c->drop(in);
 *
 * Two ways through:
 *	- a note's bytes (HOSTILE_BYTES, the input a struct buf): note_parse()
 *	  (frontmatter) and md_render() with a resolver that publishes every
 *	  target but "missing..." ones;
 *	- a real site (HOSTILE_VAULT, the input a folder, removed by drop): the
 *	  vault loaded with site_load() on one thread (embeds, links, file
 *	  names), checked in the snapshot's page table.
 *
 * Inputs whose natural size is quadratic in their depth (callouts and
 * lists nested by indentation, cmark's backtick staircase) take n as a
 * size in bytes, so the depth grows by sqrt(10) from n to 10 n.
 */
#ifndef QUIRE_TEST_HOSTILE_H
#define QUIRE_TEST_HOSTILE_H

#include <stddef.h>

enum hostile_kind { HOSTILE_BYTES, HOSTILE_VAULT };

struct hostile_case {
	const char *name;
	enum hostile_kind kind;
	size_t n;     /* the size the test counts at (and at 10 n) */
	size_t bench; /* the size the benchmark times at (and at 10 n) */
	void *(*build)(size_t n);
	/* renders or loads the input; with check set, checks what came out (CHECKs) */
	void (*run)(void *input, size_t n, int check);
	void (*drop)(void *input);
};

extern const struct hostile_case hostile_cases[];
extern const size_t hostile_ncases;

/* The input's size in bytes: the note's, or every file's of the vault. */
size_t hostile_bytes(const struct hostile_case *c, void *input);

/*
 * A vault of file names with every odd character Linux takes: each
 * becomes a note (or, when its name is not UTF-8, a diagnostic naming
 * its folder), each published note's URL is in the page table and
 * serves a note, and links to them by name resolve. CHECKs.
 */
void hostile_odd_file_names(void);

#endif
