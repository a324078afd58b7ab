/*
 * site-int.h: what the files of a site's update share; private to
 * src/site/site.c, apply.c, moves.c, urls.c and sitesearch.c.
 *
 * One site_apply() is a set of worklists (struct work) that the phases in
 * apply.c fill and drain, URL assignment and moves (urls.c) add to, and
 * the search rows (sitesearch.c) read.
 */
#ifndef QUIRE_SITE_INT_H
#define QUIRE_SITE_INT_H

#include "site/model.h"
#include "util/map.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* A note that moved in place (moves.c): where it was, and its URL there. */
struct relocation {
	struct site_note *n;
	char *from;               /* owned */
	char *url;                /* owned, or NULL (unpublished) */
};

/* One site_apply()'s worklists. */
struct work {
	struct notevec parse;     /* to parse in the next round */
	struct notevec parsed;    /* parsed this apply (any round) */
	struct notevec rerender;  /* to render */
	struct notevec recompose; /* to compose (rendered ones too) */
	struct notevec removed;   /* to free at the end */
	struct notevec moved;     /* published notes whose URL changed */
	struct relocation *reloc; /* notes that moved in place */
	size_t nreloc, areloc;
	struct site_ref *refs;    /* scratch for apply_resolve_again() */
	size_t arefs;
	struct site_file **files; /* attachments added, changed or removed */
	size_t nfiles, afiles;
	struct map names;         /* name keys whose resolution may have changed -> owned key */
	struct map stale_keys;    /* alias keys and old URLs to look at again -> owned key */
	struct map url_groups;    /* bases whose groups must be assigned again -> owned key */
};

struct par {
	struct site *s;
	struct site_note **v;
	void (*fn)(void *arg, size_t i); /* the step, when counted (run_parallel()) */
};

/* The href of a URL path: the prefix, then the path percent-encoded. Caller frees. */
char *site_make_href(const struct site *s, const char *url);
/* Adds a copy of key to a set of owned keys (a map from key to itself). */
void site_key_add(struct map *m, const char *key);
/* Frees the keys of such a set, and the set. */
void site_keys_release(struct map *m);

/* apply.c */
void site_note_free(struct site_note *n);
void site_file_free(struct site_file *f);
void apply_need_render(struct work *w, struct site_note *n);
void apply_referrers(const struct site *s, const struct site_note *t, int kind,
		      struct notevec *out);
void apply_mark_recompose(struct work *w, struct site_note *n);
void apply_note_link(struct site *s, struct site_note *n);
void apply_note_unlink(struct site *s, struct site_note *n);
/* Drops from v the notes no longer marked (to parse, or removed), and duplicates. */
void apply_settle(struct notevec *v, int removed);
/*
 * Resolves x's references again: when each keeps its kind, x takes the new
 * targets and is composed again; when one changes kind, x is rendered again.
 */
void apply_resolve_again(struct site *s, struct work *w, struct site_note *x);

/* site.c */
/*
 * The vault's own stylesheet, publish.css at its root as Obsidian Publish
 * reads it (an empty one when there is none), into the page at SITE_CSS_URL.
 */
void site_stylesheet(struct site *s);
/* The page at SITE_ICON_URL, from the first of the vault's favicons there is, or quire's. */
void site_icon(struct site *s);

/* moves.c */
/* Moves in place the notes this change removed and found again elsewhere. */
void moves_find(struct site *s, struct work *w);
/* Resolves again the references of the notes moved in place. */
void moves_resolve(struct site *s, struct work *w);

/* urls.c */
char *urls_base_of(struct site *s, const struct site_note *n);
void urls_group_move(struct site *s, struct work *w, struct site_note *n, const char *base);
void urls_assign(struct site *s, struct work *w);
void urls_find_moves(struct site *s, struct work *w);
/* Records the moves of the notes that moved in place, and their alias claims. */
void urls_relocated(struct site *s, struct work *w);
void urls_update_claims(struct site *s, struct work *w, struct site_note *n);
void urls_refresh_key(struct site *s, const char *key);
void urls_load_moves(struct site *s);
/* Frees the URL groups and the moves. */
void urls_free(struct site *s);

/* sitesearch.c */
/*
 * Stages the search rows of the changed notes in the index's open
 * transaction (site_search_flush() writes them once the snapshot is live).
 */
void sitesearch_stage(struct site *s, struct site_note *const *changed, size_t n);
int sitesearch_text_wanted(const struct site *s, const struct site_note *n);

/* site.c */
void site_heap_trim(void);

static inline void strs_free(char **v, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}
#endif
