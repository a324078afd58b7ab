/*
 * xalloc.h: allocation that cannot fail.
 *
 * Running out of memory aborts with a message, in one place, as git, cmark
 * and h2o do: no caller carries an error path for it. Real failures (I/O,
 * bad input) have error paths of their own.
 */
#ifndef QUIRE_XALLOC_H
#define QUIRE_XALLOC_H

#include <stddef.h>

/* Each returns memory the caller frees with free(). Never NULL. */
void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);
/* Copies n bytes of s and a NUL. */
char *xstrndup(const char *s, size_t n);
void *xmemdup(const void *p, size_t n);

/*
 * Memory that lives as long as the vault holds it: the compressed bytes of
 * a page. xmalloc_lasting() takes it, xfree_lasting() (not free()) gives
 * it back; NULL is accepted. Programs that hold a vault link jemalloc
 * (src/cmd/malloc-conf.c), which then takes these from an arena of their
 * own: a load allocates and frees far more than it keeps, and bytes kept
 * among its temporaries would pin their slabs half empty. Elsewhere (the
 * sanitizers' builds, the tests) it is the one heap.
 */
void *xmalloc_lasting(size_t size);
void xfree_lasting(void *ptr);
/* What the two call: malloc() and free() here, overridden by malloc-conf.c. */
void *quire_lasting_alloc(size_t size);
void quire_lasting_free(void *ptr);

/* Aborts the process: called when memory cannot be had. */
_Noreturn void xdie_oom(size_t size);

/*
 * Grows the array x, of which nr elements are used and alloc allocated, so
 * that it holds at least need elements (git's ALLOC_GROW).
 */
#define ALLOC_GROW(x, need, alloc)                                                \
	do {                                                                      \
		if ((need) > (alloc)) {                                           \
			size_t alloc_grow_n_ = (alloc) < 8 ? 8 : (alloc) * 2;     \
			if (alloc_grow_n_ < (need))                               \
				alloc_grow_n_ = (need);                           \
			(x) = xrealloc((x), alloc_grow_n_ * sizeof(*(x)));        \
			(alloc) = alloc_grow_n_;                                  \
		}                                                                 \
	} while (0)

#endif
