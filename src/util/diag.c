/*
 * diag.c: the diagnostic list.
 */
#include "util/diag.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The indices of one path's diagnostics in the list's items. */
struct diag_path {
	char *path;   /* the map's key */
	size_t *at;
	size_t n, alloc;
};

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

static void paths_release(struct map *m)
{
	size_t i = 0;
	void *v;

	while (map_next(m, &i, NULL, NULL, &v)) {
		struct diag_path *p = v;
		free(p->path);
		free(p->at);
		free(p);
	}
	map_release(m);
}

void diag_list_release(struct diag_list *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		diag_release(&l->items[i]);
	free(l->items);
	paths_release(&l->by_path);
	pthread_mutex_destroy(&l->lock);
	memset(l, 0, sizeof(*l));
}

/* Records that items[i] is about its path. */
static void index_item(struct diag_list *l, size_t i)
{
	struct diag *d = &l->items[i];
	struct diag_path *p = map_gets(&l->by_path, d->path);

	if (!p) {
		p = xcalloc(1, sizeof(*p));
		p->path = xstrdup(d->path);
		map_put(&l->by_path, p->path, strlen(p->path), p);
	}
	ALLOC_GROW(p->at, p->n + 1, p->alloc);
	d->slot = p->n;
	p->at[p->n++] = i;
}

/* Drops items[i]: the last item takes its place, and both indexes follow. */
static void remove_item(struct diag_list *l, size_t i)
{
	struct diag *d = &l->items[i];
	struct diag_path *p = map_gets(&l->by_path, d->path);
	size_t last = l->n - 1;

	if (d->level == DIAG_ERROR)
		l->nerrors--;
	else
		l->nwarnings--;
	p->at[d->slot] = p->at[p->n - 1];
	l->items[p->at[d->slot]].slot = d->slot;
	if (--p->n == 0) {
		map_remove(&l->by_path, p->path, strlen(p->path));
		free(p->path);
		free(p->at);
		free(p);
	}
	diag_release(d);
	if (i != last) {
		struct diag_path *q;
		l->items[i] = l->items[last];
		q = map_gets(&l->by_path, l->items[i].path);
		q->at[l->items[i].slot] = i;
	}
	l->n--;
}

void diag_forget(struct diag_list *l, const char *path, enum diag_kind kind)
{
	size_t i;

	pthread_mutex_lock(&l->lock);
	if (path) {
		struct diag_path *p = map_gets(&l->by_path, path);
		/* from the last slot down: a removal moves the last slot, already seen */
		for (i = p ? p->n : 0; i-- > 0;) {
			size_t at = p->at[i];
			int emptied = p->n == 1;
			if (l->items[at].kind != kind)
				continue;
			remove_item(l, at);
			if (emptied)
				break; /* p is freed */
		}
	} else {
		for (i = l->n; i-- > 0;)
			if (l->items[i].kind == kind)
				remove_item(l, i);
	}
	pthread_mutex_unlock(&l->lock);
}

void diag_rename(struct diag_list *l, const char *from, const char *to)
{
	struct diag_path *p;
	size_t i;

	pthread_mutex_lock(&l->lock);
	p = map_gets(&l->by_path, from);
	if (p && strcmp(from, to) != 0) {
		map_remove(&l->by_path, p->path, strlen(p->path));
		for (i = 0; i < p->n; i++) {
			struct diag *d = &l->items[p->at[i]];
			free(d->path);
			d->path = xstrdup(to);
			index_item(l, p->at[i]);
		}
		free(p->path);
		free(p->at);
		free(p);
	}
	pthread_mutex_unlock(&l->lock);
}

/*
 * A message quotes what it is about (a frontmatter key, a link target, a
 * file name), and a note can make that a megabyte: one line of a log or
 * of `check` is cut at DIAG_MSG_MAX bytes (on a character boundary), with
 * how much was left out.
 */
static void clamp(struct buf *msg)
{
	size_t cut = DIAG_MSG_MAX, more;

	if (msg->len <= DIAG_MSG_MAX)
		return;
	while (cut > 0 && ((unsigned char)msg->ptr[cut] & 0xc0) == 0x80)
		cut--;
	more = msg->len - cut;
	buf_setlen(msg, cut);
	buf_addf(msg, "\xe2\x80\xa6 (%zu more bytes)", more);
}

/*
 * A message is one line: a control character in what it quotes (quire.yml's
 * "\r\n" in a double-quoted value; notes are sanitized before) is written
 * as an escape, so that it can neither end a log line nor forge another.
 */
static void one_line(struct buf *msg)
{
	struct buf out = BUF_INIT;
	size_t i;

	for (i = 0; i < msg->len; i++)
		if ((unsigned char)msg->ptr[i] < 0x20 || msg->ptr[i] == 0x7f)
			break;
	if (i == msg->len)
		return;
	buf_add(&out, msg->ptr, i);
	for (; i < msg->len; i++) {
		unsigned char c = (unsigned char)msg->ptr[i];
		if (c == '\n')
			buf_adds(&out, "\\n");
		else if (c == '\r')
			buf_adds(&out, "\\r");
		else if (c < 0x20 || c == 0x7f)
			buf_addf(&out, "\\x%02x", c);
		else
			buf_addc(&out, (char)c);
	}
	buf_release(msg);
	*msg = out;
}

static void add(struct diag_list *l, enum diag_kind kind, enum diag_level level, const char *path,
		int line, const char *fmt, va_list ap) __attribute__((format(printf, 6, 0)));

static void add(struct diag_list *l, enum diag_kind kind, enum diag_level level, const char *path,
		int line, const char *fmt, va_list ap)
{
	struct buf msg = BUF_INIT;
	struct diag *d;

	buf_vaddf(&msg, fmt, ap);
	one_line(&msg);
	clamp(&msg);
	pthread_mutex_lock(&l->lock);
	ALLOC_GROW(l->items, l->n + 1, l->alloc);
	d = &l->items[l->n++];
	d->level = level;
	d->kind = kind;
	d->path = xstrdup(path);
	d->line = line;
	d->msg = buf_detach(&msg, NULL);
	index_item(l, l->n - 1);
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
	size_t i = 0;
	void *v;

	if (!l->n)
		return;
	qsort(l->items, l->n, sizeof(*l->items), cmp);
	while (map_next(&l->by_path, &i, NULL, NULL, &v))
		((struct diag_path *)v)->n = 0;
	for (i = 0; i < l->n; i++)
		index_item(l, i);
}
