/*
 * model.c: the page table, and finding notes by path (model.h).
 */
#include "site/model.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* ---- the page table ------------------------------------------------------ */

static void mark_dirty(struct site *s, const char *key, size_t len)
{
	if (!map_get(&s->dirty, key, len)) {
		char *k = xstrndup(key, len);
		map_put(&s->dirty, k, len, k);
	}
}

/*
 * An uncompressed page (gzip_later) also waits for site_gzip_pending(),
 * with the path of the note whose page it is (note), or NULL. Every page
 * is made anew and put once, so it waits once.
 */
void site_page_put_as(struct site *s, struct page *p, const char *note)
{
	mark_dirty(s, p->path, p->path_len);
	page_unref(map_put(&s->pages, p->path, p->path_len, page_ref(p)));
	if (p->gz_later) {
		ALLOC_GROW(s->gz_pending, s->ngz_pending + 1, s->agz_pending);
		s->gz_pending[s->ngz_pending++] =
			(struct gz_pending){ page_ref(p), note ? xstrdup(note) : NULL };
	}
}

void site_page_put(struct site *s, struct page *p)
{
	site_page_put_as(s, p, NULL);
}

void site_page_del(struct site *s, const char *key)
{
	size_t len = strlen(key);
	struct page *old;

	mark_dirty(s, key, len);
	old = map_remove(&s->pages, key, len);
	page_unref(old);
}

/* ---- notes and files ----------------------------------------------------- */

/* Where path is, or would go, in notes sorted by path. */
size_t site_path_index(struct site_note *const *v, size_t n, const char *path)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(v[mid]->note.path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t site_note_index(const struct site *s, const char *path)
{
	return site_path_index(s->notes, s->nnotes, path);
}

size_t site_file_index(const struct site *s, const char *path)
{
	size_t lo = 0, hi = s->nfiles;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(s->files[mid]->path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct site_note *site_find_note(const struct site *s, const char *path)
{
	return map_gets(&s->note_by_path, path);
}
