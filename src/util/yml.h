/*
 * yml.h: YAML documents as a small tree with line numbers.
 *
 * The only module that includes libyaml. Frontmatter and quire.yml are
 * both read through it, so each can report "file:line: what is wrong".
 *
 * Merge keys are applied as YAML 1.1 defines them: "<<: {draft: true}",
 * "<<: *base" and "<<: [*a, *b]" give the map the pairs of the merged
 * maps whose keys it lacks (its own keys win, then the earlier map of a
 * list), and the "<<" key itself is gone from the tree. A merge that names
 * no anchor, or something other than a map, is an error.
 *
 * Safety: other aliases are not expanded (an alias reads as null), so a
 * "billion laughs" document costs its own size; merges copy at most
 * YML_MAX_COPIES nodes in a document (more is an error), and nesting
 * deeper than YML_MAX_DEPTH is an error rather than a deep tree (a merged
 * map may add as many levels again below the map it is merged into).
 */
#ifndef QUIRE_YML_H
#define QUIRE_YML_H

#include <stddef.h>

#include "util/buf.h"

#define YML_MAX_DEPTH 64
#define YML_MAX_COPIES 10000

enum yml_type { YML_SCALAR, YML_SEQ, YML_MAP };

struct yml_node {
	enum yml_type type;
	int line;                 /* 1-based, in the file (first_line added) */
	char *value;              /* YML_SCALAR: NUL-terminated text */
	int quoted;               /* YML_SCALAR: written in quotes (so "true" is a string) */
	struct yml_node **items;  /* YML_SEQ: items; YML_MAP: key, value, key, value... */
	size_t nitems;
};

/*
 * Parses the first document of src. Returns the root (NULL for an empty
 * document, with *err left empty), or NULL with a message in err and its
 * line in *err_line. Lines are counted from first_line. The caller frees
 * the tree with yml_free().
 */
struct yml_node *yml_parse(const char *src, size_t len, int first_line, struct buf *err,
			   int *err_line);

/* Frees a tree. Accepts NULL. */
void yml_free(struct yml_node *node);

/* The value for key in a map, or NULL (also when map is not a map). */
const struct yml_node *yml_get(const struct yml_node *map, const char *key);

/*
 * The first key of a map anywhere in the tree that repeats an earlier key
 * of the same map (text keys, by value), or NULL; *first is that earlier
 * key. YAML wants keys unique; which of two a reader takes is a guess.
 */
const struct yml_node *yml_repeated_key(const struct yml_node *root,
					const struct yml_node **first);

/* True for a plain scalar that YAML 1.1 reads as null: "", "~", "null". */
int yml_is_null(const struct yml_node *node);

/* 1 for true/yes/on, 0 for false/no/off (plain scalars), -1 otherwise. */
int yml_bool(const struct yml_node *node);

#endif
