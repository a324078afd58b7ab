/*
 * oset.c: a treap with parent pointers (see oset.h).
 *
 * Each node's priority is a hash of its item's address: no random state,
 * and the shape is balanced in expectation. Only the shape depends on the
 * addresses; the order of the items, and so everything written from
 * them, does not.
 */
#include "util/oset.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>

struct oset_node {
	struct oset_node *left, *right, *parent;
	void *item;
	uint64_t prio;
};

static uint64_t prio_of(const void *item)
{
	uint64_t z = (uint64_t)(uintptr_t)item + 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Points whatever pointed at old (its parent's link, or the root) at new. */
static void replace_link(struct oset *s, struct oset_node *old, struct oset_node *new)
{
	struct oset_node *p = old->parent;

	if (!p)
		s->root = new;
	else if (p->left == old)
		p->left = new;
	else
		p->right = new;
	if (new)
		new->parent = p;
}

/* Lifts x above its parent, keeping the order. */
static void rotate_up(struct oset *s, struct oset_node *x)
{
	struct oset_node *p = x->parent;

	replace_link(s, p, x);
	if (p->left == x) {
		p->left = x->right;
		if (x->right)
			x->right->parent = p;
		x->right = p;
	} else {
		p->right = x->left;
		if (x->left)
			x->left->parent = p;
		x->left = p;
	}
	p->parent = x;
}

int oset_add(struct oset *s, void *item)
{
	struct oset_node **at = &s->root, *parent = NULL, *x;

	while (*at) {
		int c = s->cmp(item, (*at)->item);
		if (c == 0)
			return -1;
		parent = *at;
		at = c < 0 ? &(*at)->left : &(*at)->right;
	}
	x = xcalloc(1, sizeof(*x));
	x->item = item;
	x->prio = prio_of(item);
	x->parent = parent;
	*at = x;
	while (x->parent && x->parent->prio < x->prio)
		rotate_up(s, x);
	s->n++;
	return 0;
}

void *oset_del(struct oset *s, const void *item)
{
	struct oset_node *x = s->root;
	void *found;

	while (x) {
		int c = s->cmp(item, x->item);
		if (c == 0)
			break;
		x = c < 0 ? x->left : x->right;
	}
	if (!x)
		return NULL;
	/* down to where it has at most one child, lifting the stronger child each step */
	while (x->left && x->right)
		rotate_up(s, x->left->prio > x->right->prio ? x->left : x->right);
	replace_link(s, x, x->left ? x->left : x->right);
	found = x->item;
	free(x);
	s->n--;
	return found;
}

static void free_nodes(struct oset_node *x)
{
	while (x) {
		struct oset_node *right = x->right;
		free_nodes(x->left);
		free(x);
		x = right;
	}
}

void oset_release(struct oset *s)
{
	if (!s)
		return;
	free_nodes(s->root);
	s->root = NULL;
	s->n = 0;
}

void *oset_next(const struct oset *s, struct oset_iter *it)
{
	struct oset_node *x = it->at;

	if (it->done)
		return NULL;
	if (!x) {
		x = s->root;
		while (x && x->left)
			x = x->left;
	} else if (x->right) {
		x = x->right;
		while (x->left)
			x = x->left;
	} else {
		while (x->parent && x->parent->right == x)
			x = x->parent;
		x = x->parent;
	}
	it->at = x;
	it->done = !x;
	return x ? x->item : NULL;
}

void *oset_prev(const struct oset *s, struct oset_iter *it)
{
	struct oset_node *x = it->at;

	if (!x && !it->done)
		return NULL; /* before the first */
	if (!x) {
		x = s->root;
		while (x && x->right)
			x = x->right;
	} else if (x->left) {
		x = x->left;
		while (x->right)
			x = x->right;
	} else {
		while (x->parent && x->parent->left == x)
			x = x->parent;
		x = x->parent;
	}
	it->at = x;
	it->done = 0;
	return x ? x->item : NULL;
}

void *oset_seek(const struct oset *s, const void *key,
		int (*cmp)(const void *key, const void *item), struct oset_iter *it)
{
	struct oset_node *x = s->root, *best = NULL;

	while (x) {
		if (cmp(key, x->item) <= 0) {
			best = x;
			x = x->left;
		} else {
			x = x->right;
		}
	}
	it->at = best;
	it->done = !best;
	return best ? best->item : NULL;
}

void *oset_first(const struct oset *s)
{
	struct oset_iter it = OSET_ITER_INIT;
	return oset_next(s, &it);
}
