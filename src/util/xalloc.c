/*
 * xalloc.c: the one place where running out of memory is handled.
 */
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void xdie_oom(size_t size)
{
	fprintf(stderr, "quire: fatal: out of memory allocating %zu bytes\n", size);
	abort();
}

/*
 * The lasting arena's defaults, weak: src/cmd/malloc-conf.c defines the
 * two for the programs linked with jemalloc.
 */
__attribute__((weak)) void *quire_lasting_alloc(size_t size)
{
	return malloc(size);
}

__attribute__((weak)) void quire_lasting_free(void *ptr)
{
	free(ptr);
}

void *xmalloc_lasting(size_t size)
{
	void *p = quire_lasting_alloc(size ? size : 1);
	if (!p)
		xdie_oom(size);
	return p;
}

void xfree_lasting(void *ptr)
{
	if (ptr)
		quire_lasting_free(ptr);
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);
	if (!p)
		xdie_oom(size);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		xdie_oom(nmemb * size);
	return p;
}

void *xrealloc(void *ptr, size_t size)
{
	void *p = realloc(ptr, size ? size : 1);
	if (!p)
		xdie_oom(size);
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void *xmemdup(const void *p, size_t n)
{
	void *q = xmalloc(n);
	if (n)
		memcpy(q, p, n);
	return q;
}
