/*
 * urls.c: which URL each published note gets, and what its old URLs do.
 *
 * URL groups (a base URL and the notes asking for it, suffixes for all
 * but the first), moves (a note deleted and one added with the same bytes
 * in one change: the old URL redirects), and alias claims (aliases: and
 * old URLs that redirect to a note).
 */
#include "search/search.h"
#include "site/derived.h"
#include "site/hosts.h"
#include "site/render.h"
#include "site/site.h"
#include "site/site-int.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/gzip.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/parallel.h"
#include "util/unicode.h"
#include "util/xalloc.h"
#include "vault/resolve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * URLs. Published notes that ask for the same URL (their base URL, from
 * the path or the slug) form a group, kept in path order: the first gets
 * the URL, the others "-2", "-3"... skipping any suffixed URL that is some
 * note's base URL (a note asking for "/a-2" by name wins it over the
 * second note asking for "/a"). A suffix of one base can never be a suffix
 * of another ("/a-2-2" splits only as "/a-2" and 2), so groups do not
 * interfere but through base URLs, and a change reassigns only the groups
 * it touched: the group a note leaves, the one it joins, and the group
 * whose suffixes a base URL that appears or vanishes could be. A load
 * assigns every group once; an edit, a handful, whatever the vault's size.
 */
struct url_group {
	char *base;                /* the map's key */
	struct site_note **v;      /* in path order */
	size_t n, alloc;
};

/* "/a-3" -> "/a" (and "/a-3/" -> "/a/"): the base whose suffix url could be, or 0. */
static int suffix_base(const char *url, struct buf *out)
{
	size_t len = strlen(url), end = len, d;
	int slash = len > 1 && url[len - 1] == '/';

	end -= (size_t)slash;
	for (d = end; d > 0 && url[d - 1] >= '0' && url[d - 1] <= '9'; d--)
		;
	if (d == end || d < 2 || url[d - 1] != '-' || url[d] == '0' ||
	    (end - d == 1 && url[d] == '1'))
		return 0;
	buf_reset(out);
	buf_add(out, url, d - 1);
	if (slash)
		buf_addc(out, '/');
	return 1;
}

/* The groups to assign again in this apply: base, and the base whose suffix it could be. */
static void group_touched(struct site *s, struct work *w, const char *base, int came_or_went)
{
	struct buf b = BUF_INIT;

	site_key_add(&w->url_groups, base);
	if (came_or_went && suffix_base(base, &b) && map_get(&s->url_groups, b.ptr, b.len))
		site_key_add(&w->url_groups, b.ptr);
	buf_release(&b);
}

/* Moves n from the group of its registered base (n->gbase) to the group of base (NULL: none). */
void urls_group_move(struct site *s, struct work *w, struct site_note *n, const char *base)
{
	struct url_group *g;
	size_t at;

	if (n->gbase && base && strcmp(n->gbase, base) == 0)
		return;
	if (n->gbase && (g = map_gets(&s->url_groups, n->gbase))) {
		at = site_path_index(g->v, g->n, n->note.path);
		if (at < g->n && g->v[at] == n) {
			memmove(&g->v[at], &g->v[at + 1], (g->n - at - 1) * sizeof(*g->v));
			g->n--;
		}
		group_touched(s, w, g->base, g->n == 0);
		if (!g->n) {
			map_remove(&s->url_groups, g->base, strlen(g->base));
			free(g->base);
			free(g->v);
			free(g);
		}
	}
	free(n->gbase);
	n->gbase = NULL;
	if (!base)
		return;
	if (!(g = map_gets(&s->url_groups, base))) {
		g = xcalloc(1, sizeof(*g));
		g->base = xstrdup(base);
		map_put(&s->url_groups, g->base, strlen(g->base), g);
	}
	at = site_path_index(g->v, g->n, n->note.path);
	ALLOC_GROW(g->v, g->n + 1, g->alloc);
	memmove(&g->v[at + 1], &g->v[at], (g->n - at) * sizeof(*g->v));
	g->v[at] = n;
	g->n++;
	n->gbase = xstrdup(base);
	group_touched(s, w, g->base, g->n == 1);
}

/* Gives n the URL url; what showed its old one is rendered or composed again. */
static void set_url(struct site *s, struct work *w, struct site_note *n, const char *url)
{
	struct notevec refs = { 0 };
	size_t k;

	if (n->url && strcmp(n->url, url) == 0)
		return;
	if (n->url) {
		site_page_del(s, n->url);
		site_key_add(&w->stale_keys, n->url);
		/*
		 * Pages linking here show the old URL, and so does the note's
		 * own in its [[#Heading]] links: composed again, their
		 * fragments hold no URL (markdown.h, url_slots). Its search
		 * row moves to the new URL with the text the index has
		 * (sitesearch.c): nothing is rendered again.
		 */
		apply_referrers(s, n, -1, &refs);
		for (k = 0; k < refs.n; k++)
			apply_mark_recompose(w, refs.v[k]);
		/* and notes it links to list it, with its URL, as a backlink */
		for (k = 0; k < n->md.nrefs; k++)
			if (n->refs[k].kind == MD_TARGET_NOTE)
				apply_mark_recompose(w, n->refs[k].target);
		free(refs.v);
	}
	free(n->url);
	free(n->href);
	n->url = xstrdup(url);
	n->href = site_make_href(s, n->url);
	apply_mark_recompose(w, n);
	notevec_push(&w->moved, n);
	/* its alias redirects point at the old URL */
	for (k = 0; k < n->naliases; k++)
		site_key_add(&w->stale_keys, n->aliases[k]);
}

static void assign_group(struct site *s, struct work *w, const struct url_group *g)
{
	size_t len = strlen(g->base), i, k = 1;
	int slash = len > 1 && g->base[len - 1] == '/';
	struct buf alt = BUF_INIT;

	for (i = 0; i < g->n; i++) {
		struct site_note *n = g->v[i];
		diag_forget(&s->diags, n->note.path, DIAG_URL);
		if (i == 0) {
			set_url(s, w, n, g->base);
			continue;
		}
		do {
			buf_reset(&alt);
			buf_add(&alt, g->base, len - (size_t)slash);
			buf_addf(&alt, "-%zu%s", ++k, slash ? "/" : "");
		} while (map_get(&s->url_groups, alt.ptr, alt.len));
		diag_addk(&s->diags, DIAG_URL, DIAG_WARNING, n->note.path, 0,
			  "URL %s is already taken by %s; this note is served at %s", g->base,
			  g->v[0]->note.path, alt.ptr);
		set_url(s, w, n, alt.ptr);
	}
	buf_release(&alt);
}

/* Assigns the groups this apply touched. */
void urls_assign(struct site *s, struct work *w)
{
	size_t i = 0;
	void *v;

	while (map_next(&w->url_groups, &i, NULL, NULL, &v)) {
		const struct url_group *g = map_gets(&s->url_groups, v);
		if (g)
			assign_group(s, w, g);
	}
	site_keys_release(&w->url_groups);
}

/* Whether n is the note quire.yml's home: names: the site's root, as with "slug: /". */
static int is_home(const struct site *s, const struct site_note *n)
{
	return s->cfg.home && strcmp(n->note.path, s->cfg.home) == 0;
}

/*
 * The URL a published note asks for, before collisions: from its slug or
 * its path. A slug may not claim one of quire's own URLs (an error; the
 * note keeps its path's URL); a path that leads to one is served beside it
 * (a warning naming where).
 */
char *urls_base_of(struct site *s, const struct site_note *n)
{
	int home = is_home(s, n);
	char *url = vault_note_url(n->note.path, home ? "/" : n->note.slug), *other;
	const char *why;

	if (home)
		return url;

	if (n->note.slug && (why = vault_url_reserved(url))) {
		diag_addk(&s->diags, DIAG_PARSE, DIAG_ERROR, n->note.path, 0,
			  "slug '%s' refused: %s is reserved (%s)", n->note.slug, url, why);
		free(url);
		url = vault_note_url(n->note.path, NULL);
	}
	if ((why = vault_url_reserved(url))) {
		other = vault_url_unreserved(url);
		diag_addk(&s->diags, DIAG_PARSE, DIAG_WARNING, n->note.path, 0,
			  "URL %s is reserved (%s); this note is served at %s", url, why, other);
		free(url);
		url = other;
	}
	return url;
}
struct moved {
	char *path;           /* the map's key: where the note lives now */
	char **urls;          /* URLs it had before */
	size_t n;
};

/*
 * Records that the note at from now lives at to, having had the URL url:
 * that URL, and every URL that led to from, now redirect to to. The move
 * is added to persist when not NULL (the caller appends it to the moves
 * file); the file is replayed in order at start-up, so the redirects
 * outlive a restart.
 */
static void record_move(struct site *s, const char *url, const char *from, const char *to,
			struct buf *persist)
{
	struct moved *src = map_gets(&s->moved, from), *dst = map_gets(&s->moved, to);
	size_t k;

	if (!dst) {
		dst = xcalloc(1, sizeof(*dst));
		dst->path = xstrdup(to);
		map_put(&s->moved, dst->path, strlen(dst->path), dst);
	}
	if (src && src != dst) {
		map_remove(&s->moved, from, strlen(from));
		dst->urls = xrealloc(dst->urls, (dst->n + src->n + 1) * sizeof(*dst->urls));
		for (k = 0; k < src->n; k++)
			dst->urls[dst->n++] = src->urls[k];
		free(src->urls);
		free(src->path);
		free(src);
	}
	for (k = 0; k < dst->n && strcmp(dst->urls[k], url) != 0; k++)
		;
	if (k == dst->n) {
		dst->urls = xrealloc(dst->urls, (dst->n + 1) * sizeof(*dst->urls));
		dst->urls[dst->n++] = xstrdup(url);
	}
	if (persist)
		buf_addf(persist, "%s\t%s\t%s\n", url, from, to);
}

void urls_load_moves(struct site *s)
{
	struct buf data = BUF_INIT;
	char *line, *save = NULL;

	if (read_file(s->moves_file, &data) < 0) {
		buf_release(&data);
		return;
	}
	for (line = strtok_r(data.ptr, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *from = strchr(line, '\t'), *to = from ? strchr(from + 1, '\t') : NULL;
		if (!to)
			continue;
		*from++ = '\0';
		*to++ = '\0';
		record_move(s, line, from, to, NULL);
	}
	buf_release(&data);
}

static int cmp_note_hash(const void *a, const void *b)
{
	const struct site_note *x = *(struct site_note *const *)a, *y = *(struct site_note *const *)b;
	return (x->hash > y->hash) - (x->hash < y->hash);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/*
 * The departed: a published note removed with no note of the same bytes
 * added in the same change. Its move may arrive in the next change: a
 * watcher reports a delete and a create in two batches, and a sync
 * client's move can land while the loader re-reads the old file (it then
 * finds it gone, site_apply() removes it, and the new path comes in the
 * following change). For DEPARTED_MS, a note added with the same bytes
 * is taken as its move.
 *
 * The arrived: the other order. A client that knows no moves uploads the
 * file at its new place first and deletes the old one after (rclone's
 * default, --delete-after; WebDAV clients copying then deleting): for
 * DEPARTED_MS, a note removed with the bytes of a note added lately,
 * still there with them, moved to it, and its URL redirects there.
 *
 * Each is a ring of DEPARTED_MAX: a folder of thousands split over many
 * changes keeps its most recent ones.
 */
#define DEPARTED_MAX 4096
#define DEPARTED_MS 60000.0

struct trace {
	uint64_t hash;
	char *path;
	char *url;                /* the departed's URL; NULL for the arrived */
	double at;
};

struct trail {
	struct trace v[DEPARTED_MAX];
	size_t n, next;
};

static void trace_clear(struct trail *t, struct trace *d)
{
	free(d->path);
	free(d->url);
	memset(d, 0, sizeof(*d));
	t->n--;
}

static void trail_add(struct trail **tp, const struct site_note *n, const char *url)
{
	struct trail *t = *tp ? *tp : (*tp = xcalloc(1, sizeof(**tp)));
	struct trace *d = &t->v[t->next];

	if (d->path)
		trace_clear(t, d);
	t->n++;
	d->hash = n->hash;
	d->path = xstrdup(n->note.path);
	d->url = url ? xstrdup(url) : NULL;
	d->at = clock_ms();
	t->next = (t->next + 1) % DEPARTED_MAX;
}

/*
 * The trace of n's bytes in t, preferring one of n's file name; NULL when
 * none. Traces too old go, and those that no longer hold: a departed note
 * back at its place, an arrived one gone or changed.
 */
static struct trace *trail_find(struct site *s, struct trail *t, const struct site_note *n,
				double now)
{
	struct trace *pick = NULL;
	size_t i;

	for (i = 0; t && t->n && i < DEPARTED_MAX; i++) {
		struct trace *d = &t->v[i];
		const struct site_note *there;
		if (!d->path || d->hash != n->hash)
			continue;
		there = site_find_note(s, d->path);
		if (now - d->at > DEPARTED_MS || (d->url ? there != NULL
							 : !there || there->removed || !there->published ||
								   there->hash != d->hash)) {
			trace_clear(t, d);
			continue;
		}
		if (!pick || strcmp(base_name(d->path), base_name(n->note.path)) == 0)
			pick = d;
	}
	return pick;
}

static void trail_free(struct trail **tp)
{
	size_t i;

	for (i = 0; *tp && i < DEPARTED_MAX; i++)
		if ((*tp)->v[i].path)
			trace_clear(*tp, &(*tp)->v[i]);
	free(*tp);
	*tp = NULL;
}

/*
 * r removed with the bytes of a note that arrived in an earlier change
 * and is still there with them: r moved there. Its URL redirects to that
 * note, whose claims are taken again now (it is not among this change's
 * notes). Returns whether it was.
 */
static int moved_to_arrived(struct site *s, struct work *w, struct site_note *r, double now,
			    struct buf *lines)
{
	struct trace *a = trail_find(s, s->arrived, r, now);
	struct site_note *to;

	if (!a || !(to = site_find_note(s, a->path)))
		return 0;
	record_move(s, r->url, r->note.path, to->note.path, lines);
	site_key_add(&w->stale_keys, r->url);
	trace_clear(s->arrived, a);
	urls_update_claims(s, w, to);
	return 1;
}

/*
 * A published note deleted and one added with the same bytes in one
 * change: a move. The added notes are sorted by hash, so pairing costs
 * O((removed + added) log added), not their product (a folder of
 * thousands renamed at once). Among notes with the same bytes, one with
 * the same file name is the better guess: a folder renamed moves every
 * file under its own name. A removed note with no such partner departs
 * (see above). The moves go to the moves file in one write.
 */
void urls_find_moves(struct site *s, struct work *w)
{
	struct site_note **added = xcalloc(w->parsed.n + 1, sizeof(*added));
	struct buf lines = BUF_INIT;
	size_t i, j, na = 0;
	double now = clock_ms();

	for (j = 0; j < w->parsed.n; j++)
		if (w->parsed.v[j]->added && w->parsed.v[j]->published)
			added[na++] = w->parsed.v[j];
	if (na > 1)
		qsort(added, na, sizeof(*added), cmp_note_hash);
	for (i = 0; i < w->removed.n; i++) {
		struct site_note *r = w->removed.v[i], *pick = NULL;
		size_t lo = 0, hi = na;
		if (!r->url)
			continue;
		while (lo < hi) { /* the first added note with r's hash */
			size_t mid = lo + (hi - lo) / 2;
			if (added[mid]->hash < r->hash)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (j = lo; j < na && added[j]->hash == r->hash; j++) {
			if (added[j]->seen)
				continue;
			if (!pick)
				pick = added[j];
			if (strcmp(base_name(added[j]->note.path), base_name(r->note.path)) == 0) {
				pick = added[j];
				break;
			}
		}
		if (pick) {
			pick->seen = 1; /* one old note per new one */
			record_move(s, r->url, r->note.path, pick->note.path, &lines);
		} else if (!moved_to_arrived(s, w, r, now, &lines)) {
			trail_add(&s->departed, r, r->url);
		}
	}
	/* the other half of a move that began in an earlier change */
	for (j = 0; j < na; j++) {
		struct trace *d;
		if (added[j]->seen)
			continue;
		if (!(d = trail_find(s, s->departed, added[j], now))) {
			trail_add(&s->arrived, added[j], NULL);
			continue;
		}
		record_move(s, d->url, d->path, added[j]->note.path, &lines);
		site_key_add(&w->stale_keys, d->url);
		trace_clear(s->departed, d);
	}
	for (j = 0; j < na; j++)
		added[j]->seen = 0;
	if (lines.len && s->moves_file && vault_append_line(s->moves_file, lines.ptr) < 0)
		log_warn("cannot record %s in %s: %s", "moves", s->moves_file, strerror(errno));
	buf_release(&lines);
	free(added);
}

void urls_relocated(struct site *s, struct work *w)
{
	struct buf lines = BUF_INIT;
	size_t i;

	for (i = 0; i < w->nreloc; i++) {
		const struct relocation *r = &w->reloc[i];
		struct site_note *n = r->n;
		if (n->removed)
			continue; /* moved, then deleted in the same change */
		if (r->url)
			record_move(s, r->url, r->from, n->note.path, &lines);
		urls_update_claims(s, w, n);
	}
	if (lines.len && s->moves_file && vault_append_line(s->moves_file, lines.ptr) < 0)
		log_warn("cannot record %s in %s: %s", "moves", s->moves_file, strerror(errno));
	buf_release(&lines);
}

/* An alias with a '/' that names a path: no empty, "." or ".." segment. */
static int path_alias(const char *a)
{
	for (;;) {
		size_t n = strcspn(a, "/");
		if (!n || (n == 1 && a[0] == '.') || (n == 2 && a[0] == '.' && a[1] == '.'))
			return 0;
		if (!a[n])
			return 1;
		a += n + 1;
	}
}

/*
 * Alias URLs of a note, and its former URLs. An alias is first a name (what
 * Obsidian offers when linking); as a URL it is the note name in the note's
 * folder, or, when it holds a '/', a path from the vault's root, which is
 * what Obsidian Publish asks for ("Guides/Making friends" redirects
 * /guides/making-friends). An alias whose URL quire keeps for itself
 * (".config", "robots.txt") stays a name only: no redirect, no diagnostic,
 * since Obsidian would give none.
 */
static void alias_urls(struct site *s, const struct site_note *n, char ***out, size_t *nout)
{
	const char *slash = strrchr(n->note.path, '/');
	const struct moved *m = map_gets(&s->moved, n->note.path);
	size_t k;

	*out = NULL;
	*nout = 0;
	for (k = 0; m && k < m->n; k++) {
		if (strcmp(m->urls[k], n->url) == 0)
			continue;
		*out = xrealloc(*out, (*nout + 1) * sizeof(**out));
		(*out)[(*nout)++] = xstrdup(m->urls[k]);
	}
	if (n->note.slug || is_home(s, n)) {
		/* the URL its path would give redirects to the one its slug (or home:) gives */
		char *url = vault_note_url(n->note.path, NULL);
		if (strcmp(url, n->url) != 0 && !vault_url_reserved(url)) {
			*out = xrealloc(*out, (*nout + 1) * sizeof(**out));
			(*out)[(*nout)++] = url;
		} else {
			free(url);
		}
	}
	for (k = 0; k < n->note.aliases.n; k++) {
		const char *alias = n->note.aliases.v[k];
		struct buf from = BUF_INIT;
		char *url;
		if (strchr(alias, '/')) {
			while (*alias == '/')
				alias++;
			if (!path_alias(alias))
				continue; /* "../x", "a//b", "x/": a name only */
		} else if (slash) {
			buf_add(&from, n->note.path, (size_t)(slash - n->note.path + 1));
		}
		if (!*alias) {
			buf_release(&from);
			continue;
		}
		buf_adds(&from, alias);
		buf_adds(&from, ".md");
		url = vault_note_url(from.ptr, NULL);
		buf_release(&from);
		if (vault_url_reserved(url) || strcmp(url, n->url) == 0) {
			free(url);
			continue;
		}
		*out = xrealloc(*out, (*nout + 1) * sizeof(**out));
		(*out)[(*nout)++] = url;
	}
}

static void claim(struct site *s, const char *key, struct site_note *n, int add)
{
	size_t len = strlen(key);
	struct notevec *v = map_get(&s->claims, key, len);

	if (add) {
		size_t i;
		if (!v) {
			v = xcalloc(1, sizeof(*v));
			notevec_push(v, (struct site_note *)(void *)xstrndup(key, len));
			map_put(&s->claims, (char *)(void *)v->v[0], len, v);
		}
		/* keep claimants in path order: the first one wins, as in a full load */
		for (i = 1; i < v->n && strcmp(v->v[i]->note.path, n->note.path) < 0; i++)
			;
		ALLOC_GROW(v->v, v->n + 1, v->alloc);
		memmove(&v->v[i + 1], &v->v[i], (v->n - i) * sizeof(*v->v));
		v->v[i] = n;
		v->n++;
	} else if (v) {
		notevec_remove(v, n);
		if (v->n == 1) {
			char *k = (char *)(void *)v->v[0];
			map_remove(&s->claims, key, len);
			free(k);
			free(v->v);
			free(v);
		}
	}
}

/* Brings the alias claims of a note up to date with its aliases and publish state. */
void urls_update_claims(struct site *s, struct work *w, struct site_note *n)
{
	char **now = NULL;
	size_t nnow = 0, k;

	for (k = 0; k < n->naliases; k++) {
		claim(s, n->aliases[k], n, 0);
		site_key_add(&w->stale_keys, n->aliases[k]);
	}
	strs_free(n->aliases, n->naliases);
	n->aliases = NULL;
	n->naliases = 0;
	if (n->published && !n->removed)
		alias_urls(s, n, &now, &nnow);
	for (k = 0; k < nnow; k++) {
		claim(s, now[k], n, 1);
		site_key_add(&w->stale_keys, now[k]);
	}
	n->aliases = now;
	n->naliases = nnow;
}

/* Sets the page at an alias URL: a redirect for the first claimant, unless a real page is there. */
void urls_refresh_key(struct site *s, const char *key)
{
	size_t len = strlen(key);
	struct page *cur = map_get(&s->pages, key, len), *p;
	const struct notevec *v = map_get(&s->claims, key, len);
	const struct site_note *to;

	if (cur && cur->kind != PAGE_REDIRECT)
		return; /* a note or generated page wins over an alias */
	if (!v || v->n < 2) {
		if (cur)
			site_page_del(s, key);
		return;
	}
	to = v->v[1];
	if (cur && strcmp(cur->location, to->href) == 0)
		return;
	p = page_new(PAGE_REDIRECT, key, len);
	p->location = xstrdup(to->href);
	site_page_put(s, p);
	page_unref(p);
}

void urls_free(struct site *s)
{
	size_t i = 0;
	void *v;

	while (map_next(&s->moved, &i, NULL, NULL, &v)) {
		struct moved *m = v;
		strs_free(m->urls, m->n);
		free(m->path);
		free(m);
	}
	map_release(&s->moved);
	i = 0;
	while (map_next(&s->url_groups, &i, NULL, NULL, &v)) {
		struct url_group *g = v;
		free(g->base);
		free(g->v);
		free(g);
	}
	map_release(&s->url_groups);
	trail_free(&s->departed);
	trail_free(&s->arrived);
}
