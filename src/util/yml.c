/*
 * yml.c: libyaml's event parser folded into a tree.
 *
 * The event API (not yaml_document_t) because it reports marks for every
 * node and lets us refuse aliases and deep nesting as they arrive. The
 * tree is built with an explicit stack: no recursion on hostile input.
 */
#include "util/yml.h"
#include "util/xalloc.h"

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

struct yml_node *yml_parse(const char *src, size_t len, int first_line, struct buf *err,
			   int *err_line)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	struct yml_node *stack[YML_MAX_DEPTH + 1];
	struct yml_node *root = NULL;
	int depth = 0, done = 0, failed = 0;

	*err_line = 0;
	if (!yaml_parser_initialize(&parser)) {
		buf_adds(err, "cannot initialise the YAML parser");
		return NULL;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)src, len);
	yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
	while (!done && !failed) {
		struct yml_node *n = NULL;
		int line;

		if (!yaml_parser_parse(&parser, &ev)) {
			buf_addf(err, "%s%s%s", parser.problem ? parser.problem : "invalid YAML",
				 parser.context ? " " : "", parser.context ? parser.context : "");
			*err_line = first_line + (int)parser.problem_mark.line;
			failed = 1;
			break;
		}
		line = first_line + (int)ev.start_mark.line;
		switch (ev.type) {
		case YAML_DOCUMENT_END_EVENT:
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_SCALAR_EVENT:
			n = node_new(YML_SCALAR, line);
			n->value = xstrndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
			n->quoted = ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
			break;
		case YAML_ALIAS_EVENT:
			n = node_new(YML_SCALAR, line);
			n->value = xstrdup("");
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (depth >= YML_MAX_DEPTH) {
				buf_addf(err, "nesting deeper than %d levels", YML_MAX_DEPTH);
				*err_line = line;
				failed = 1;
				break;
			}
			n = node_new(ev.type == YAML_SEQUENCE_START_EVENT ? YML_SEQ : YML_MAP, line);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		default:
			break;
		}
		if (n) {
			if (depth > 0)
				add_item(stack[depth - 1], n);
			else if (!root)
				root = n;
			else
				yml_free(n); /* cannot happen within one document */
			if (n->type != YML_SCALAR)
				stack[depth++] = n;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (failed) {
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
