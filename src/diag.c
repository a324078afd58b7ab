/*
 * diag.c: the diagnostic list.
 */
#include "diag.h"
#include "buf.h"
#include "xalloc.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void diag_list_init(struct diag_list *l)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
}

static void diag_release(struct diag *d)
{
	free(d->path);
	free(d->msg);
}

void diag_list_release(struct diag_list *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		diag_release(&l->items[i]);
	free(l->items);
	pthread_mutex_destroy(&l->lock);
	memset(l, 0, sizeof(*l));
}

void diag_forget(struct diag_list *l, const char *path, enum diag_kind kind)
{
	size_t i, j = 0;

	pthread_mutex_lock(&l->lock);
	for (i = 0; i < l->n; i++) {
		if (l->items[i].kind == kind && (!path || strcmp(l->items[i].path, path) == 0)) {
			if (l->items[i].level == DIAG_ERROR)
				l->nerrors--;
			else
				l->nwarnings--;
			diag_release(&l->items[i]);
		} else {
			l->items[j++] = l->items[i];
		}
	}
	l->n = j;
	pthread_mutex_unlock(&l->lock);
}

static void add(struct diag_list *l, enum diag_kind kind, enum diag_level level, const char *path,
		int line, const char *fmt, va_list ap) __attribute__((format(printf, 6, 0)));

static void add(struct diag_list *l, enum diag_kind kind, enum diag_level level, const char *path,
		int line, const char *fmt, va_list ap)
{
	struct buf msg = BUF_INIT;
	struct diag *d;

	buf_vaddf(&msg, fmt, ap);
	pthread_mutex_lock(&l->lock);
	ALLOC_GROW(l->items, l->n + 1, l->alloc);
	d = &l->items[l->n++];
	d->level = level;
	d->kind = kind;
	d->path = xstrdup(path);
	d->line = line;
	d->msg = buf_detach(&msg, NULL);
	if (level == DIAG_ERROR)
		l->nerrors++;
	else
		l->nwarnings++;
	pthread_mutex_unlock(&l->lock);
}

void diag_add(struct diag_list *l, enum diag_level level, const char *path, int line,
	      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add(l, DIAG_OTHER, level, path, line, fmt, ap);
	va_end(ap);
}

void diag_addk(struct diag_list *l, enum diag_kind kind, enum diag_level level, const char *path,
	       int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add(l, kind, level, path, line, fmt, ap);
	va_end(ap);
}

static int cmp(const void *a, const void *b)
{
	const struct diag *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return strcmp(x->msg, y->msg);
}

void diag_sort(struct diag_list *l)
{
	if (l->n)
		qsort(l->items, l->n, sizeof(*l->items), cmp);
}
