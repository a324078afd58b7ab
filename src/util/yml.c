/*
 * yml.c: libyaml's event parser folded into a tree.
 *
 * The event API (not yaml_document_t) because it reports marks for every
 * node and lets us refuse aliases and deep nesting as they arrive. The
 * tree is built with an explicit stack: no recursion on hostile input.
 *
 * Merge keys (YAML 1.1's "<<", yml.h) are applied as each map ends: an
 * alias that is the value of "<<" (or an item of a list that is) becomes
 * a copy of the map its anchor names, then the pairs of the merged maps
 * whose keys the map lacks are copied into it. Copies are counted against
 * YML_MAX_COPIES for the document, so that maps merging maps that merge
 * maps cannot grow the tree beyond a bound. The "<<" pairs themselves
 * leave the tree but are freed only with the parse: an anchor may still
 * name a map among them. Rejected: ignoring merge keys (what this
 * replaced: "<<: {draft: true}" published a draft) and expanding every
 * alias (a "billion laughs" document would cost its expansion).
 */
#include "util/yml.h"
#include "util/map.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

static struct yml_node *node_new(enum yml_type type, int line)
{
	struct yml_node *n = xcalloc(1, sizeof(*n));
	n->type = type;
	n->line = line;
	return n;
}

static void add_item(struct yml_node *parent, struct yml_node *child)
{
	size_t n = parent->nitems;

	/* capacity is implicit: 4, then doubling whenever n reaches a power of two */
	if (n == 0 || (n >= 4 && (n & (n - 1)) == 0))
		parent->items = xrealloc(parent->items, (n ? n * 2 : 4) * sizeof(*parent->items));
	parent->items[parent->nitems++] = child;
}

void yml_free(struct yml_node *node)
{
	struct yml_node **stack = NULL;
	size_t n = 0, alloc = 0;

	if (!node)
		return;
	ALLOC_GROW(stack, n + 1, alloc);
	stack[n++] = node;
	while (n > 0) {
		struct yml_node *cur = stack[--n];
		size_t i;

		ALLOC_GROW(stack, n + cur->nitems, alloc);
		for (i = 0; i < cur->nitems; i++)
			stack[n++] = cur->items[i];
		free(cur->items);
		free(cur->value);
		free(cur);
	}
	free(stack);
}

/* What one yml_parse() keeps besides the tree. */
struct parse {
	struct yml_node *stack[YML_MAX_DEPTH + 1]; /* the open sequences and maps */
	int depth;
	struct map anchors;        /* name -> the node it was last given to */
	char **names;              /* the anchors' names (the map's keys), owned */
	size_t nnames, anames;
	struct yml_node **dropped; /* "<<" pairs taken out of their maps, freed at the end */
	size_t ndropped, adropped;
	size_t copies;             /* nodes copied by merge keys so far */
	int failed;
	struct buf *err;
	int *err_line;
};

/* Records the first error of the parse; returns -1. */
__attribute__((format(printf, 3, 4)))
static int fail(struct parse *ps, int line, const char *fmt, ...)
{
	va_list ap;

	if (ps->failed++)
		return -1;
	va_start(ap, fmt);
	buf_vaddf(ps->err, fmt, ap);
	va_end(ap);
	*ps->err_line = line;
	return -1;
}

static void remember_anchor(struct parse *ps, const unsigned char *anchor, struct yml_node *n)
{
	char *name;

	if (!anchor)
		return;
	name = xstrdup((const char *)anchor);
	ALLOC_GROW(ps->names, ps->nnames + 1, ps->anames);
	ps->names[ps->nnames++] = name;
	map_put(&ps->anchors, name, strlen(name), n); /* a later anchor of that name wins */
}

static struct yml_node *node_clone(struct parse *ps, const struct yml_node *from)
{
	struct yml_node *n;

	if (++ps->copies > YML_MAX_COPIES) {
		fail(ps, from->line, "merge keys ('<<') copy more than %d nodes", YML_MAX_COPIES);
		return NULL;
	}
	n = node_new(from->type, from->line);
	n->quoted = from->quoted;
	n->value = from->value ? xstrdup(from->value) : NULL;
	return n;
}

/* A copy of the tree at from (lines kept), or NULL past YML_MAX_COPIES (the error set). */
static struct yml_node *copy_tree(struct parse *ps, const struct yml_node *from)
{
	struct pending {
		const struct yml_node *src;
		struct yml_node *dst;
	} *todo = NULL;
	size_t n = 0, alloc = 0, i;
	struct yml_node *root = node_clone(ps, from);

	if (!root)
		return NULL;
	ALLOC_GROW(todo, n + 1, alloc);
	todo[n++] = (struct pending){ from, root };
	while (n > 0) {
		struct pending p = todo[--n];
		for (i = 0; i < p.src->nitems; i++) {
			struct yml_node *c = node_clone(ps, p.src->items[i]);
			if (!c) {
				free(todo);
				yml_free(root);
				return NULL;
			}
			add_item(p.dst, c);
			ALLOC_GROW(todo, n + 1, alloc);
			todo[n++] = (struct pending){ p.src->items[i], c };
		}
	}
	free(todo);
	return root;
}

static int is_merge_key(const struct yml_node *k)
{
	return k->type == YML_SCALAR && !k->quoted && strcmp(k->value, "<<") == 0;
}

/* Whether the node that comes next is the value of a "<<" key, or an item of a list that is. */
static int in_merge(const struct parse *ps)
{
	const struct yml_node *top, *up;

	if (ps->depth == 0)
		return 0;
	top = ps->stack[ps->depth - 1];
	if (top->type == YML_MAP)
		return top->nitems % 2 == 1 && is_merge_key(top->items[top->nitems - 1]);
	if (ps->depth < 2)
		return 0;
	up = ps->stack[ps->depth - 2];
	return up->type == YML_MAP && up->nitems >= 2 && up->nitems % 2 == 0 &&
	       up->items[up->nitems - 1] == top && is_merge_key(up->items[up->nitems - 2]);
}

/*
 * An alias: a copy of the map it names where a merge key wants one, else
 * a null (aliases are not expanded). NULL on an error.
 */
static struct yml_node *alias(struct parse *ps, const char *anchor, int line)
{
	struct yml_node *n, *target;
	int i;

	if (!in_merge(ps)) {
		n = node_new(YML_SCALAR, line);
		n->value = xstrdup("");
		return n;
	}
	target = map_gets(&ps->anchors, anchor);
	if (!target) {
		fail(ps, line, "merge key '<<': no anchor '&%.40s' before '*%.40s'", anchor, anchor);
		return NULL;
	}
	if (target->type != YML_MAP) {
		fail(ps, line, "merge key '<<' takes maps, and '*%.40s' is not one", anchor);
		return NULL;
	}
	for (i = 0; i < ps->depth; i++) {
		if (ps->stack[i] == target) {
			fail(ps, line, "merge key '<<': '*%.40s' names a map that holds it", anchor);
			return NULL;
		}
	}
	return copy_tree(ps, target);
}

/* Copies into m the pairs of the map(s) v whose keys are not in seen (which gets them). */
static int merge_value(struct parse *ps, struct yml_node *m, struct yml_node *v, struct map *seen)
{
	struct yml_node *one = v, *const *src = &one;
	size_t nsrc = 1, k, i;

	if (v->type == YML_SEQ) {
		src = v->items;
		nsrc = v->nitems;
	}
	for (k = 0; k < nsrc; k++) {
		const struct yml_node *from = src[k];
		if (from->type != YML_MAP)
			return fail(ps, from->line, "merge key '<<' takes a map or a list of maps");
		for (i = 0; i + 1 < from->nitems; i += 2) {
			const struct yml_node *key = from->items[i];
			struct yml_node *kc, *vc;

			if (key->type == YML_SCALAR && map_gets(seen, key->value))
				continue; /* the map's own key, or an earlier merged map's, wins */
			kc = copy_tree(ps, key);
			vc = kc ? copy_tree(ps, from->items[i + 1]) : NULL;
			if (!vc) {
				yml_free(kc);
				return -1;
			}
			add_item(m, kc);
			add_item(m, vc);
			if (kc->type == YML_SCALAR)
				map_put(seen, kc->value, strlen(kc->value), kc);
		}
	}
	return 0;
}

/* Applies the merge keys of the map m, which has just ended. 0, or -1 (the error set). */
static int merge_keys(struct parse *ps, struct yml_node *m)
{
	struct yml_node **old = m->items;
	struct map seen = MAP_INIT;
	size_t n = m->nitems, i;
	int has = 0, ret = 0;

	for (i = 0; i + 1 < n; i += 2)
		has |= is_merge_key(old[i]);
	if (!has)
		return 0;
	/* explicit keys win over merged ones, wherever they stand in the map */
	for (i = 0; i + 1 < n; i += 2)
		if (!is_merge_key(old[i]) && old[i]->type == YML_SCALAR)
			map_put(&seen, old[i]->value, strlen(old[i]->value), old[i]);
	m->items = NULL;
	m->nitems = 0;
	for (i = 0; i + 1 < n; i += 2) {
		if (!is_merge_key(old[i])) {
			add_item(m, old[i]);
			add_item(m, old[i + 1]);
			continue;
		}
		ALLOC_GROW(ps->dropped, ps->ndropped + 2, ps->adropped);
		ps->dropped[ps->ndropped++] = old[i];
		ps->dropped[ps->ndropped++] = old[i + 1];
		if (ret == 0)
			ret = merge_value(ps, m, old[i + 1], &seen);
	}
	free(old);
	map_release(&seen);
	return ret;
}

/*
 * Adds n where the document is: under the open node, or as the root; and
 * opens it when it is a sequence or a map that its events go on to fill.
 */
static void place(struct parse *ps, struct yml_node **root, struct yml_node *n, int open)
{
	if (ps->depth > 0)
		add_item(ps->stack[ps->depth - 1], n);
	else if (!*root)
		*root = n;
	else
		yml_free(n); /* cannot happen within one document */
	if (open)
		ps->stack[ps->depth++] = n;
}

/* One event into the tree. 1 at the document's end, 0 to go on, -1 on an error (set). */
static int take(struct parse *ps, const yaml_event_t *ev, int line, struct yml_node **root)
{
	struct yml_node *n = NULL;

	switch (ev->type) {
	case YAML_DOCUMENT_END_EVENT:
	case YAML_STREAM_END_EVENT:
		return 1;
	case YAML_SCALAR_EVENT:
		n = node_new(YML_SCALAR, line);
		n->value = xstrndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
		n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
		remember_anchor(ps, ev->data.scalar.anchor, n);
		break;
	case YAML_ALIAS_EVENT:
		if (!(n = alias(ps, (const char *)ev->data.alias.anchor, line)))
			return -1;
		break;
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (ps->depth >= YML_MAX_DEPTH)
			return fail(ps, line, "nesting deeper than %d levels", YML_MAX_DEPTH);
		if (ev->type == YAML_SEQUENCE_START_EVENT) {
			n = node_new(YML_SEQ, line);
			remember_anchor(ps, ev->data.sequence_start.anchor, n);
		} else {
			n = node_new(YML_MAP, line);
			remember_anchor(ps, ev->data.mapping_start.anchor, n);
		}
		break;
	case YAML_MAPPING_END_EVENT:
		if (merge_keys(ps, ps->stack[ps->depth - 1]) < 0)
			return -1;
		ps->depth--;
		break;
	case YAML_SEQUENCE_END_EVENT:
		ps->depth--;
		break;
	default:
		break;
	}
	if (n)
		place(ps, root, n,
		      ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT);
	return 0;
}

struct yml_node *yml_parse(const char *src, size_t len, int first_line, struct buf *err,
			   int *err_line)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	struct parse ps;
	struct yml_node *root = NULL;
	int rc = 0;
	size_t i;

	*err_line = 0;
	if (!yaml_parser_initialize(&parser)) {
		buf_adds(err, "cannot initialise the YAML parser");
		return NULL;
	}
	memset(&ps, 0, sizeof(ps));
	ps.err = err;
	ps.err_line = err_line;
	yaml_parser_set_input_string(&parser, (const unsigned char *)src, len);
	yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
	while (rc == 0) {
		if (!yaml_parser_parse(&parser, &ev)) {
			fail(&ps, first_line + (int)parser.problem_mark.line, "%s%s%s",
			     parser.problem ? parser.problem : "invalid YAML",
			     parser.context ? " " : "", parser.context ? parser.context : "");
			rc = -1;
			break;
		}
		rc = take(&ps, &ev, first_line + (int)ev.start_mark.line, &root);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	for (i = 0; i < ps.ndropped; i++)
		yml_free(ps.dropped[i]);
	free(ps.dropped);
	for (i = 0; i < ps.nnames; i++)
		free(ps.names[i]);
	free(ps.names);
	map_release(&ps.anchors);
	if (rc < 0) {
		yml_free(root);
		return NULL;
	}
	return root;
}

const struct yml_node *yml_get(const struct yml_node *map, const char *key)
{
	size_t i;

	if (!map || map->type != YML_MAP)
		return NULL;
	for (i = 0; i + 1 < map->nitems; i += 2) {
		const struct yml_node *k = map->items[i];
		if (k->type == YML_SCALAR && strcmp(k->value, key) == 0)
			return map->items[i + 1];
	}
	return NULL;
}

const struct yml_node *yml_repeated_key(const struct yml_node *root,
					const struct yml_node **first)
{
	const struct yml_node **stack = NULL, *found = NULL;
	size_t n = 0, alloc = 0, i;
	struct map seen = MAP_INIT;

	if (root) {
		ALLOC_GROW(stack, n + 1, alloc);
		stack[n++] = root;
	}
	while (n > 0 && !found) {
		const struct yml_node *cur = stack[--n];

		ALLOC_GROW(stack, n + cur->nitems, alloc);
		for (i = 0; i < cur->nitems; i++)
			stack[n++] = cur->items[i];
		if (cur->type != YML_MAP)
			continue;
		for (i = 0; i + 1 < cur->nitems && !found; i += 2) {
			const struct yml_node *k = cur->items[i];
			if (k->type != YML_SCALAR)
				continue;
			if ((*first = map_get(&seen, k->value, strlen(k->value))))
				found = k;
			else
				map_put(&seen, k->value, strlen(k->value), (void *)k);
		}
		map_release(&seen);
	}
	free(stack);
	return found;
}

int yml_is_null(const struct yml_node *node)
{
	if (!node)
		return 1;
	if (node->type != YML_SCALAR || node->quoted)
		return 0;
	return !node->value[0] || strcmp(node->value, "~") == 0 ||
	       strcasecmp(node->value, "null") == 0;
}

int yml_bool(const struct yml_node *node)
{
	static const char *const yes[] = { "true", "yes", "on" };
	static const char *const no[] = { "false", "no", "off" };
	size_t i;

	if (!node || node->type != YML_SCALAR || node->quoted)
		return -1;
	for (i = 0; i < 3; i++) {
		if (strcasecmp(node->value, yes[i]) == 0)
			return 1;
		if (strcasecmp(node->value, no[i]) == 0)
			return 0;
	}
	return -1;
}
