/*
 * oset.h: an ordered set of pointers, kept ordered as items come and go.
 *
 * A treap: a binary search tree by the caller's order, shaped as a heap
 * by a priority drawn from the item's address, so that it is balanced in
 * expectation whatever order items arrive in. Insert and remove cost
 * O(log n); walking the first k items in order costs O(k + log n). This is
 * what keeps "the newest 50 notes of this folder" current without a sort
 * of the folder on every change (derived.c's feeds).
 *
 * Rejected: a sorted array (an insert moves everything after it: a pass
 * over the set per change), and sorting on demand (a sort of every note
 * per change, which is what the feeds did).
 *
 *	struct oset s = OSET_INIT(cmp);
 *	oset_add(&s, item);
 *	for (struct oset_iter it = OSET_ITER_INIT; (x = oset_next(&s, &it));) ...
 *	oset_del(&s, item);
 *	oset_release(&s);
 *
 * The order must be total and must not change while an item is in the
 * set: remove it, change what it is ordered by, add it again.
 */
#ifndef QUIRE_OSET_H
#define QUIRE_OSET_H

#include <stddef.h>

struct oset_node;

struct oset {
	struct oset_node *root;
	size_t n;
	int (*cmp)(const void *a, const void *b); /* <0, 0, >0 as strcmp */
};
#define OSET_INIT(cmp) { NULL, 0, (cmp) }

/* Adds item (not NULL); returns 0, or -1 when an equal item is there already. */
int oset_add(struct oset *s, void *item);

/* Removes the item equal to item; returns it, or NULL when there is none. */
void *oset_del(struct oset *s, const void *item);

/* Frees the nodes (not the items); s is empty afterwards. Accepts NULL. */
void oset_release(struct oset *s);

/* In-order iteration: the node last returned, NULL before the first. */
struct oset_iter {
	struct oset_node *at;
	int done;
};
#define OSET_ITER_INIT { NULL, 0 }

/* The next item in order, or NULL at the end. */
void *oset_next(const struct oset *s, struct oset_iter *it);

/*
 * The previous item in order, or NULL before the first; from an iterator
 * that reached the end, the last item. O(1) amortized, as oset_next().
 */
void *oset_prev(const struct oset *s, struct oset_iter *it);

/*
 * Positions it at the first item not less than key (cmp(key, item) <= 0)
 * and returns that item; NULL, with it at the end, when every item is
 * less. oset_next() and oset_prev() go on from there. O(log n).
 */
void *oset_seek(const struct oset *s, const void *key,
		int (*cmp)(const void *key, const void *item), struct oset_iter *it);

/* The first item, or NULL when the set is empty. */
void *oset_first(const struct oset *s);

#endif
