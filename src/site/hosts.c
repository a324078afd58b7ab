/*
 * hosts.c: custom domains (hosts.h has the rules).
 *
 * The loader keeps, per host, who claims each path (claimants in note path
 * order: the first wins, so a full load and any sequence of edits agree),
 * the host's page table, and for each routed path the main page it was
 * derived from. A change derives a routed page again only when its note's
 * main page was replaced or the host's routes changed; an edit of a note
 * that no host routes costs one pass over the routed paths (pointer
 * comparisons) and nothing else.
 *
 * Rejected: rendering each note once per host at load, as trip2g did (57%
 * of its reload CPU and 2.7 times the memory with one routed note), and
 * rendering pages for a host from the loader's state on request (the
 * loader may be mid-change; a snapshot is what a request may read).
 */
#include "site/hosts.h"
#include "site/derived.h"
#include "site/model.h"
#include "site/rewrite.h"
#include "util/gzip.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "vault/vault.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- routes as written ----------------------------------------------------- */

static int bad_path_char(unsigned char c)
{
	return c < 0x20 || c == 0x7f || c == '\\' || c == '?' || c == '#';
}

int host_route_parse(const char *spec, char **host, char **path, const char **why)
{
	const char *p = spec, *slash;
	struct buf h = BUF_INIT, b = BUF_INIT;
	size_t i;

	*host = *path = NULL;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncasecmp(p, "https://", 8) == 0)
		p += 8;
	else if (strncasecmp(p, "http://", 7) == 0)
		p += 7;
	if (!*p) {
		*why = "an empty route";
		return -1;
	}
	if (*p != '/') {
		/* a host part: the first segment, when it looks like a host name */
		char *name;
		slash = strchr(p, '/');
		buf_add(&h, p, slash ? (size_t)(slash - p) : strlen(p));
		if (!memchr(h.ptr, '.', h.len) && strcmp(h.ptr, "localhost") != 0 &&
		    !memchr(h.ptr, ':', h.len)) {
			/* "guide/intro": a path on the main site */
			buf_reset(&h);
			slash = p - 1;
		} else {
			if (!host_name_valid(h.ptr, h.len)) {
				buf_release(&h);
				*why = "the host name has characters a host name cannot have";
				return -1;
			}
			name = host_normalize(h.ptr);
			buf_reset(&h);
			buf_adds(&h, name);
			free(name);
			if (!h.len) {
				buf_release(&h);
				*why = "an empty host name";
				return -1;
			}
		}
		p = slash ? slash + 1 : p + strlen(p);
	} else {
		p++;
	}
	/* the path, from after its first '/' */
	buf_addc(&b, '/');
	for (; *p; p++) {
		if (bad_path_char((unsigned char)*p)) {
			*why = "the path has a control character, a backslash, '?' or '#'";
			goto fail;
		}
		if (*p == '/' && b.ptr[b.len - 1] == '/') {
			*why = "the path has an empty segment ('//')";
			goto fail;
		}
		buf_addc(&b, *p);
	}
	if (b.len > 1 && b.ptr[b.len - 1] == '/')
		buf_setlen(&b, b.len - 1);
	for (i = 0; i < b.len; i++) {
		if (b.ptr[i] == '/' && b.ptr[i + 1] == '.' &&
		    (b.ptr[i + 2] == '/' || !b.ptr[i + 2] ||
		     (b.ptr[i + 2] == '.' && (b.ptr[i + 3] == '/' || !b.ptr[i + 3])))) {
			*why = "the path has a '.' or '..' segment";
			goto fail;
		}
	}
	if ((*why = vault_url_reserved(b.ptr)))
		goto fail;
	*host = buf_detach(&h, NULL);
	*path = buf_detach(&b, NULL);
	return 0;
fail:
	buf_release(&h);
	buf_release(&b);
	return -1;
}

/* ---- the loader's hosts ------------------------------------------------------ */

/* Who claims one path on one host: notes in path order, the first wins. */
struct claims {
	struct site_note **v;
	size_t n, alloc;
	struct page *from;        /* the winner's main page that its page here came from */
};

struct site_host {
	char *name;               /* "" for the main site's extra routes */
	int open;
	char *title;
	char *origin;
	int configured;           /* named in quire.yml: kept without routes */
	struct map claims;        /* path -> struct claims * */
	struct map pages;         /* path -> page: the host's table */
	struct map routed;        /* main path of a routed note -> its first path here (owned) */
	struct map formers;       /* path -> vault path of the note that had it (owned) */
	struct page *not_found;
	int dirty;                /* routes changed: every page here is derived again */
	int built;                /* resources built once */
};

struct hosts {
	struct map by_name;       /* name -> struct site_host * */
	int ready;                /* quire.yml's hosts and the recorded moves are in */
	size_t nshards;           /* the main site's sitemap shards, for open hosts' indexes */
	char *main_name;
	char *main_origin;
	char *moves_file;         /* route moves, to outlive a restart */
};

struct hosts *hosts_new(void)
{
	return xcalloc(1, sizeof(struct hosts));
}

static void free_strings(struct map *m)
{
	size_t i = 0;
	void *v;

	while (map_next(m, &i, NULL, NULL, &v))
		free(v);
	map_release(m);
}

/* Frees c and its key (held in v[0]). */
static void claims_free(struct claims *c)
{
	page_unref(c->from);
	free(c->v[0]);
	free(c->v);
	free(c);
}

static void host_free(struct site_host *h)
{
	size_t i = 0;
	void *v;

	while (map_next(&h->claims, &i, NULL, NULL, &v))
		claims_free(v);
	map_release(&h->claims);
	i = 0;
	while (map_next(&h->pages, &i, NULL, NULL, &v))
		page_unref(v);
	map_release(&h->pages);
	free_strings(&h->routed);
	free_strings(&h->formers);
	page_unref(h->not_found);
	free(h->name);
	free(h->title);
	free(h->origin);
	free(h);
}

size_t hosts_strict(const struct hosts *hs)
{
	size_t i = 0, n = 0;
	void *v;

	while (hs && map_next(&hs->by_name, &i, NULL, NULL, &v)) {
		const struct site_host *h = v;
		n += h->name[0] && !h->open;
	}
	return n;
}

void hosts_free(struct hosts *hs)
{
	size_t i = 0;
	void *v;

	if (!hs)
		return;
	while (map_next(&hs->by_name, &i, NULL, NULL, &v))
		host_free(v);
	map_release(&hs->by_name);
	free(hs->main_name);
	free(hs->main_origin);
	free(hs->moves_file);
	free(hs);
}

/* "https://docs.example.com/x" -> "https://docs.example.com" */
static char *origin_of(const char *url)
{
	const char *p = strstr(url, "://");
	p = p ? p + 3 : url;
	return xstrndup(url, (size_t)(p - url) + strcspn(p, "/"));
}

static struct site_host *get_host(struct site *s, const char *name)
{
	struct hosts *hs = s->hosts;
	struct site_host *h = map_gets(&hs->by_name, name);
	size_t i;

	if (h)
		return h;
	h = xcalloc(1, sizeof(*h));
	h->name = xstrdup(name);
	h->title = xstrdup(s->cfg.title);
	if (name[0]) {
		struct buf o = BUF_INIT;
		buf_addf(&o, "https://%s", name);
		h->origin = buf_detach(&o, NULL);
	} else {
		h->origin = xstrdup(hs->main_origin);
	}
	for (i = 0; i < s->cfg.nhosts; i++) {
		const struct config_host *c = &s->cfg.hosts[i];
		if (strcmp(c->name, name) != 0)
			continue;
		h->configured = 1;
		h->open = c->open;
		if (c->title) {
			free(h->title);
			h->title = xstrdup(c->title);
		}
		if (c->base_url) {
			free(h->origin);
			h->origin = origin_of(c->base_url);
		}
	}
	map_put(&hs->by_name, h->name, strlen(h->name), h);
	return h;
}

/* A route's host as the registry keys it: "" for the main site's own host. */
static const char *host_key(const struct hosts *hs, const char *host)
{
	return hs->main_name[0] && strcmp(host, hs->main_name) == 0 ? "" : host;
}

/*
 * Remembers that a path on h belonged to a note (its vault path), so that
 * it answers 301 while that note has another route on h. The value is one
 * allocation "note path\0path" whose second half is the map's key.
 */
static void record_former(struct site *s, struct site_host *h, const char *path,
			  const char *note_path, int persist)
{
	struct hosts *hs = s->hosts;
	size_t plen = strlen(path), nlen = strlen(note_path);
	char *both = xmalloc(plen + nlen + 2);

	memcpy(both, note_path, nlen + 1);
	memcpy(both + nlen + 1, path, plen + 1);
	free(map_remove(&h->formers, path, plen));
	map_put(&h->formers, both + nlen + 1, plen, both);
	if (persist && hs->moves_file) {
		struct buf line = BUF_INIT;
		buf_addf(&line, "%s\t%s\t%s\n", h->name, path, note_path);
		if (vault_append_line(hs->moves_file, line.ptr) < 0)
			log_warn("cannot record the route move of %s in %s: %s", note_path,
				 hs->moves_file, strerror(errno));
		buf_release(&line);
	}}

static void load_formers(struct site *s)
{
	struct buf data = BUF_INIT;
	char *line, *save = NULL;

	if (!s->hosts->moves_file || read_file(s->hosts->moves_file, &data) < 0) {
		buf_release(&data);
		return;
	}
	for (line = strtok_r(data.ptr, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *path = strchr(line, '\t'), *note = path ? strchr(path + 1, '\t') : NULL;
		if (!note)
			continue;
		*path++ = '\0';
		*note++ = '\0';
		record_former(s, get_host(s, line), path, note, 0);
	}
	buf_release(&data);
}

static void setup(struct site *s)
{
	struct hosts *hs = s->hosts;
	size_t i;

	hs->ready = 1;
	if (s->cfg.base_url[0]) {
		char *o = origin_of(s->cfg.base_url);
		const char *p = strstr(o, "://");
		hs->main_origin = o;
		hs->main_name = host_normalize(p ? p + 3 : o);
	} else {
		hs->main_origin = xstrdup("");
		hs->main_name = xstrdup("");
	}
	if (s->data_dir) {
		struct buf f = BUF_INIT;
		buf_addf(&f, "%s/route-moves", s->data_dir);
		hs->moves_file = buf_detach(&f, NULL);
	}
	for (i = 0; i < s->cfg.nhosts; i++)
		if (strcmp(host_key(hs, s->cfg.hosts[i].name), "") != 0)
			get_host(s, s->cfg.hosts[i].name);
	load_formers(s);
}

/* ---- claims ------------------------------------------------------------------ */

static void claim(struct site_host *h, const char *path, struct site_note *n)
{
	size_t len = strlen(path), i;
	struct claims *c = map_get(&h->claims, path, len);

	if (!c) {
		char *key = xstrndup(path, len);
		c = xcalloc(1, sizeof(*c));
		/* the key is kept by the page table entry below; claims keep their own copy */
		map_put(&h->claims, key, len, c);
		ALLOC_GROW(c->v, 1, c->alloc);
		c->v[0] = (struct site_note *)(void *)key;
		c->n = 1;
	}
	for (i = 1; i < c->n && strcmp(c->v[i]->note.path, n->note.path) < 0; i++)
		;
	ALLOC_GROW(c->v, c->n + 1, c->alloc);
	memmove(&c->v[i + 1], &c->v[i], (c->n - i) * sizeof(*c->v));
	c->v[i] = n;
	c->n++;
	h->dirty = 1;
}

static void unclaim(struct site *s, struct site_host *h, const char *path, struct site_note *n)
{
	size_t len = strlen(path), i;
	struct claims *c = map_get(&h->claims, path, len);

	if (!c)
		return;
	for (i = 1; i < c->n && c->v[i] != n; i++)
		;
	if (i == c->n)
		return;
	memmove(&c->v[i], &c->v[i + 1], (c->n - i - 1) * sizeof(*c->v));
	c->n--;
	h->dirty = 1;
	if (c->n > 1)
		return;
	/* nobody claims it now: it was n's, which may have moved elsewhere on h */
	if (!n->removed && h->name[0])
		record_former(s, h, path, n->note.path, 1);
	map_remove(&h->claims, path, len);
	claims_free(c);
	page_unref(map_remove(&h->pages, path, len));
}

/* The winner of a claimed path, or NULL. */
static struct site_note *winner(const struct site_host *h, const char *path)
{
	const struct claims *c = map_gets(&h->claims, path);
	return c && c->n > 1 ? c->v[1] : NULL;
}

/* ---- a note's routes ----------------------------------------------------------- */

static void routes_free(struct site_route *v, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++) {
		free(v[i].host);
		free(v[i].path);
	}
	free(v);
}

/*
 * The routes a note claims now (none unless it is published), without
 * duplicates, reporting the ones that cannot be read when diags is set.
 */
static size_t parse_routes(struct site *s, const struct site_note *n, struct site_route **out,
			   int report)
{
	struct site_route *v = NULL;
	size_t nv = 0, i, j;

	*out = NULL;
	if (!n->published || n->removed)
		return 0;
	for (i = 0; i < n->note.routes.n; i++) {
		char *host, *path;
		const char *why = NULL;
		int dup = 0;
		if (host_route_parse(n->note.routes.v[i], &host, &path, &why) < 0) {
			if (report)
				diag_addk(&s->diags, DIAG_ROUTE, DIAG_ERROR, n->note.path,
					  n->note.routes_line, "route '%s' refused: %s",
					  n->note.routes.v[i], why);
			continue;
		}
		if (strcmp(host_key(s->hosts, host), "") == 0 && host[0]) {
			host[0] = '\0'; /* base_url's own host: a path on the main site */
		}
		for (j = 0; j < nv && !dup; j++)
			dup = strcmp(v[j].host, host) == 0 && strcmp(v[j].path, path) == 0;
		if (dup) {
			free(host);
			free(path);
			continue;
		}
		v = xrealloc(v, (nv + 1) * sizeof(*v));
		v[nv].host = host;
		v[nv].path = path;
		nv++;
	}
	*out = v;
	return nv;
}

static int same_routes(const struct site_route *a, size_t na, const struct site_route *b,
		       size_t nb)
{
	size_t i;
	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (strcmp(a[i].host, b[i].host) != 0 || strcmp(a[i].path, b[i].path) != 0)
			return 0;
	return 1;
}

static void note_set(struct map *m, struct site_note *n)
{
	map_put(m, n->note.path, strlen(n->note.path), n);
}

/* Everyone on a claimed path, for their diagnostics. */
static void claimants(const struct site_host *h, const char *path, struct map *rediag)
{
	const struct claims *c = map_gets(&h->claims, path);
	size_t i;
	for (i = 1; c && i < c->n; i++)
		note_set(rediag, c->v[i]);
}

static void update_routes(struct site *s, struct site_note *n, struct map *rediag)
{
	struct site_route *now;
	size_t nnow = parse_routes(s, n, &now, 0), i;

	if (n->parsed || n->removed)
		note_set(rediag, n);
	if (same_routes(now, nnow, n->routes, n->nroutes)) {
		routes_free(now, nnow);
		return;
	}
	for (i = 0; i < n->nroutes; i++) {
		struct site_host *h = get_host(s, n->routes[i].host);
		claimants(h, n->routes[i].path, rediag);
		unclaim(s, h, n->routes[i].path, n);
	}
	routes_free(n->routes, n->nroutes);
	n->routes = now;
	n->nroutes = nnow;
	for (i = 0; i < nnow; i++) {
		struct site_host *h = get_host(s, now[i].host);
		claim(h, now[i].path, n);
		claimants(h, now[i].path, rediag);
	}
}

/* A note's route diagnostics: routes it cannot read, and routes another note won. */
static void diagnose(struct site *s, struct site_note *n)
{
	struct site_route *tmp;
	size_t i, ntmp;

	diag_forget(&s->diags, n->note.path, DIAG_ROUTE);
	if (n->removed)
		return;
	ntmp = parse_routes(s, n, &tmp, 1);
	routes_free(tmp, ntmp);
	for (i = 0; i < n->nroutes; i++) {
		const struct site_route *r = &n->routes[i];
		struct site_host *h = map_gets(&s->hosts->by_name, r->host);
		struct site_note *w = h ? winner(h, r->path) : NULL;
		if (w && w != n)
			diag_addk(&s->diags, DIAG_ROUTE, DIAG_WARNING, n->note.path,
				  n->note.routes_line,
				  "route conflict: %s%s is also claimed by %s, which serves it "
				  "(the first in path order wins)",
				  r->host[0] ? r->host : "(main site)", r->path, w->note.path);
	}
}

/* ---- pages for a host ---------------------------------------------------------- */

static void rules_of(const struct site *s, const struct site_host *h, struct rewrite_rules *r)
{
	r->main_origin = s->hosts->main_origin;
	r->prefix = s->cfg.url_prefix;
	r->main_title = s->cfg.title;
	r->origin = h->origin;
	r->title = h->title;
	r->open = h->open;
	r->main = &s->pages;
	r->main_table = NULL;
	r->own = &h->claims;
	r->routed = &h->routed;
}

/* Puts p in h's table unless the same bytes are there already; takes the reference. */
static void host_put(struct site_host *h, struct page *p)
{
	struct page *cur = map_get(&h->pages, p->path, p->path_len);

	if (cur && cur->kind == p->kind && cur->body_len == p->body_len &&
	    (!p->body_len || strcmp(cur->etag, p->etag) == 0) && /* the identity bytes' hash */
	    (!cur->location) == (!p->location) &&
	    (!p->location || strcmp(cur->location, p->location) == 0)) {
		page_unref(p);
		return;
	}
	page_unref(map_put(&h->pages, p->path, p->path_len, p));
}

static struct page *text_page(enum page_kind kind, const char *path, const char *type,
			      struct buf *b)
{
	struct page *p = page_new(kind, path, strlen(path));
	size_t len;
	char *bytes;

	buf_fit(b); /* kept as long as the page */
	bytes = buf_detach(b, &len);

	p->content_type = type;
	page_set_body(p, bytes, len, GZIP_FAST);
	return p;
}

/* The main page src as host h serves it at path. */
static struct page *derive(const struct site *s, const struct site_host *h, const char *path,
			   const struct page *src)
{
	struct buf b = BUF_INIT;
	struct page *p;

	if (!h->name[0]) {
		buf_add(&b, page_bytes(src), src->body_len); /* an extra path on the main site */
	} else {
		struct rewrite_rules r;
		rules_of(s, h, &r);
		rewrite_doc(&r, page_bytes(src), src->body_len, &b);
	}
	p = text_page(src->kind, path, src->content_type, &b);
	p->mtime = src->mtime;
	return p;
}

static int cmp_entry_href(const void *a, const void *b)
{
	return strcmp(((const struct feed_entry *)a)->href, ((const struct feed_entry *)b)->href);
}

/* The host's sitemap, feeds, robots.txt, explorer tree and 404 page. */
static void build_resources(struct site *s, struct site_host *h)
{
	struct feed_entry *e = xcalloc(h->claims.len + 1, sizeof(*e));
	char **hrefs = xcalloc(h->claims.len + 1, sizeof(*hrefs));
	struct buf b = BUF_INIT, u = BUF_INIT;
	struct feed_target t = { h->origin, h->title, "/", NULL, s->cfg.language,
				 (size_t)s->cfg.feed_items };
	size_t i = 0, n = 0, k, shards = derived_shards(s);
	const char *key;
	void *v;

	while (map_next(&h->claims, &i, &key, NULL, &v)) {
		const struct claims *c = v;
		buf_reset(&u);
		buf_add_urlpath(&u, key, strlen(key));
		hrefs[n] = buf_detach(&u, NULL);
		derived_entry(c->v[1], hrefs[n], &e[n]);
		n++;
	}
	qsort(e, n, sizeof(*e), cmp_entry_href);

	if (s->cfg.robots) {
		buf_adds(&b, s->cfg.robots);
		if (b.len && b.ptr[b.len - 1] != '\n')
			buf_addc(&b, '\n');
	} else {
		buf_addf(&b, "User-agent: *\nAllow: /\nSitemap: %s/sitemap.xml\n", h->origin);
	}
	host_put(h, text_page(PAGE_GENERATED, "/robots.txt", "text/plain; charset=utf-8", &b));

	feed_urlset(h->origin, e, n, &b);
	if (h->open) {
		/* the routes, then the main site's shards as this host serves them */
		host_put(h, text_page(PAGE_GENERATED, "/sitemap-routes.xml",
				      "application/xml; charset=utf-8", &b));
		buf_adds(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			     "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
		buf_addf(&b, "<sitemap><loc>%s/sitemap-routes.xml</loc></sitemap>\n", h->origin);
		for (k = 0; k < shards; k++)
			buf_addf(&b, "<sitemap><loc>%s/sitemap-%zu.xml</loc></sitemap>\n", h->origin,
				 k);
		buf_adds(&b, "</sitemapindex>\n");
	}
	host_put(h, text_page(PAGE_GENERATED, "/sitemap.xml", "application/xml; charset=utf-8", &b));

	if (!h->open) {
		/* an open host serves the main site's feeds and tree, rewritten */
		t.self = "/rss.xml";
		feed_rss(&t, e, n, &b);
		host_put(h, text_page(PAGE_GENERATED, "/rss.xml",
				      "application/rss+xml; charset=utf-8", &b));
		t.self = "/atom.xml";
		feed_atom(&t, e, n, &b);
		host_put(h, text_page(PAGE_GENERATED, "/atom.xml",
				      "application/atom+xml; charset=utf-8", &b));
		qsort(e, n, sizeof(*e), cmp_entry_href);
		buf_adds(&b, "{\"title\":\"");
		buf_adds_json(&b, h->title);
		buf_adds(&b, "\",\"url\":\"/\",\"children\":[");
		for (k = 0, i = 0; k < n; k++) {
			const char *first = map_gets(&h->routed, ((const struct site_note *)e[k].item)->url);
			struct buf want = BUF_INIT;
			int skip;
			/* a note with several routes here is listed once, at its first */
			if (first)
				buf_add_urlpath(&want, first, strlen(first));
			skip = !first || strcmp(want.ptr, e[k].href) != 0;
			buf_release(&want);
			if (skip)
				continue;
			buf_adds(&b, i++ ? ",{\"title\":\"" : "{\"title\":\"");
			buf_adds_json(&b, ((const struct site_note *)e[k].item)->note.title);
			buf_adds(&b, "\",\"url\":\"");
			buf_adds_json(&b, e[k].href);
			buf_adds(&b, "\"}");
		}
		buf_adds(&b, "]}\n");
		host_put(h, text_page(PAGE_GENERATED, "/_quire/tree.json", "application/json", &b));
	}
	if (s->not_found) {
		struct page *nf = derive(s, h, "/404.html", s->not_found);
		nf->kind = PAGE_NOT_FOUND;
		page_unref(h->not_found);
		h->not_found = nf;
	}
	for (k = 0; k < n; k++)
		free(hrefs[k]);
	free(hrefs);
	free(e);
	buf_release(&b);
	buf_release(&u);
}

/* The first path on h that n wins, or NULL. */
static const char *first_route(const struct site_host *h, const struct site_note *n)
{
	size_t j;
	for (j = 0; j < n->nroutes; j++)
		if (strcmp(n->routes[j].host, h->name) == 0 && winner(h, n->routes[j].path) == n)
			return n->routes[j].path;
	return NULL;
}

/*
 * An entry of a "routed" map: one allocation "path here\0main path", the
 * second half being the key, so freeing the value frees both.
 */
static void routed_put(struct map *m, const char *main_path, const char *path)
{
	size_t ml = strlen(main_path), pl = strlen(path);
	char *both = xmalloc(ml + pl + 2);

	memcpy(both, path, pl + 1);
	memcpy(both + pl + 1, main_path, ml + 1);
	map_put(m, both + pl + 1, ml, both);
}

/* main path -> first path here, for every note that wins a path on h; 1 if it changed. */
static int update_routed(struct site_host *h)
{
	struct map now = MAP_INIT;
	size_t i = 0, klen;
	const char *key;
	int same;
	void *v;

	while (map_next(&h->claims, &i, NULL, NULL, &v)) {
		const struct site_note *w = ((const struct claims *)v)->v[1];
		const char *first;
		if (!w->url || map_gets(&now, w->url) || !(first = first_route(h, w)))
			continue;
		routed_put(&now, w->url, first);
	}
	same = now.len == h->routed.len;
	i = 0;
	while (same && map_next(&now, &i, &key, &klen, &v)) {
		const char *old = map_get(&h->routed, key, klen);
		same = old && strcmp(old, v) == 0;
	}
	if (same) {
		free_strings(&now);
		return 0;
	}
	free_strings(&h->routed);
	h->routed = now;
	return 1;
}

/* Former routes of h: a 301 to the note's route here while it has one, else nothing. */
static void update_formers(struct site *s, struct site_host *h)
{
	size_t i = 0;
	const char *key;
	void *v;

	while (map_next(&h->formers, &i, &key, NULL, &v)) {
		const struct site_note *n;
		const char *to;
		struct page *p, *cur;

		if (map_gets(&h->claims, key))
			continue; /* claimed again: its page is there */
		n = site_find_note(s, v);
		to = n && n->published && !n->removed ? first_route(h, n) : NULL;
		cur = map_gets(&h->pages, key);
		if (!to) {
			if (cur && cur->kind == PAGE_REDIRECT)
				page_unref(map_remove(&h->pages, key, strlen(key)));
			continue;
		}
		p = page_new(PAGE_REDIRECT, key, strlen(key));
		{
			struct buf loc = BUF_INIT;
			buf_add_urlpath(&loc, to, strlen(to));
			p->location = buf_detach(&loc, NULL);
		}
		host_put(h, p);
	}
}

void hosts_update(struct site *s, struct site_note *const *changed, size_t n)
{
	struct hosts *hs = s->hosts;
	struct map rediag = MAP_INIT;
	size_t i, shards = derived_shards(s);
	const char *key;
	void *v;

	if (!hs->ready)
		setup(s);
	for (i = 0; i < n; i++)
		update_routes(s, changed[i], &rediag);
	i = 0;
	while (map_next(&hs->by_name, &i, NULL, NULL, &v)) {
		struct site_host *h = v;
		size_t j = 0;
		int derived = 0;

		if (update_routed(h))
			h->dirty = 1;
		while (map_next(&h->claims, &j, &key, NULL, &v)) {
			struct claims *c = v;
			struct site_note *w = c->v[1];
			if (!w->page || (!h->dirty && c->from == w->page))
				continue;
			host_put(h, derive(s, h, key, w->page));
			page_unref(c->from);
			c->from = page_ref(w->page);
			derived = 1;
		}
		if (h->dirty)
			update_formers(s, h);
		if (h->name[0] &&
		    (h->dirty || derived || !h->built || (h->open && shards != hs->nshards))) {
			build_resources(s, h);
			h->built = 1;
		}
		h->dirty = 0;
	}
	hs->nshards = shards;
	i = 0;
	while (map_next(&rediag, &i, NULL, NULL, &v))
		diagnose(s, v);
	map_release(&rediag);
}

/* ---- snapshots ------------------------------------------------------------------ */

void hosts_snapshot(struct site *s, struct snapshot *snap)
{
	struct hosts *hs = s->hosts;
	struct snapshot_hosts *sh;
	size_t i = 0, j;
	const char *key;
	void *v;

	if (!hs->ready)
		setup(s);
	sh = xcalloc(1, sizeof(*sh));
	sh->main_name = xstrdup(hs->main_name);
	sh->main_origin = xstrdup(hs->main_origin);
	sh->prefix = xstrdup(s->cfg.url_prefix);
	sh->main_title = xstrdup(s->cfg.title);
	while (map_next(&hs->by_name, &i, NULL, NULL, &v)) {
		const struct site_host *h = v;
		struct snapshot_host *x;

		if (!h->claims.len && !h->configured)
			continue; /* no route names it: requests for it get the main site */
		x = xcalloc(1, sizeof(*x));
		x->name = xstrdup(h->name);
		x->open = h->open;
		x->origin = xstrdup(h->origin);
		x->title = xstrdup(h->title);
		map_copy(&x->pages, &h->pages);
		j = 0;
		while (map_next(&x->pages, &j, NULL, NULL, &v))
			page_ref(v);
		j = 0;
		while (map_next(&h->routed, &j, &key, NULL, &v))
			routed_put(&x->routed, key, v);
		x->not_found = page_ref(h->not_found);
		pthread_mutex_init(&x->lock, NULL);
		pthread_cond_init(&x->rendered, NULL);
		if (!h->name[0])
			sh->main = x;
		else
			map_put(&sh->by_name, x->name, strlen(x->name), x);
	}
	if (!sh->main && !sh->by_name.len && !sh->main_name[0]) {
		snapshot_hosts_free(sh); /* no hosts, and no www. of base_url's host to redirect */
		sh = NULL;
	}
	snap->hosts = sh;
}

/* ---- serving ---------------------------------------------------------------------- */

size_t host_from_header(const char *header, char out[HOST_NAME_MAX_LEN])
{
	size_t n = 0;
	const char *p = header;

	if (!p)
		p = "";
	while (*p == ' ' || *p == '\t')
		p++;
	for (; *p && *p != '/' && *p != ' ' && n + 1 < HOST_NAME_MAX_LEN; p++) {
		if (*p == ':' && header[0] != '[')
			break;
		out[n++] = (*p >= 'A' && *p <= 'Z') ? (char)(*p + 32) : *p;
		if (*p == ']')
			break;
	}
	while (n && out[n - 1] == '.')
		n--;
	out[n] = '\0';
	return n;
}

enum host_match hosts_find(const struct snapshot *snap, const char *name,
			   struct snapshot_host **h)
{
	const struct snapshot_hosts *sh = snap->hosts;
	struct snapshot_host *x;

	*h = NULL;
	if (!sh || !name[0])
		return HOST_MAIN;
	if ((x = map_gets(&sh->by_name, name))) {
		*h = x;
		return HOST_CUSTOM;
	}
	if (strncmp(name, "www.", 4) == 0) {
		if ((x = map_gets(&sh->by_name, name + 4))) {
			*h = x;
			return HOST_WWW;
		}
		if (sh->main_name[0] && strcmp(name + 4, sh->main_name) == 0)
			return HOST_WWW;
	}
	return HOST_MAIN;
}

/* Marks a page being rendered in a host's lazy table. */
static char rendering;

/* The rules of host h in snap, as they were at load (rules_of()). */
static struct rewrite_rules snapshot_rules(const struct snapshot *snap,
					   const struct snapshot_host *h)
{
	const struct snapshot_hosts *sh = snap->hosts;
	struct rewrite_rules r = { sh->main_origin, sh->prefix, sh->main_title, h->origin, h->title,
			   h->open, &h->pages, &h->routed, NULL, &snap->pages };
	return r;
}

void hosts_rewrite(const struct snapshot *snap, const struct snapshot_host *h, const char *s,
		   size_t len, struct buf *out)
{
	struct rewrite_rules r = snapshot_rules(snap, h);
	rewrite_doc(&r, s, len, out);
}

static struct page *render_lazy(const struct snapshot *snap, const struct snapshot_host *h,
				const struct page *src, const char *path, size_t len)
{
	struct rewrite_rules r = snapshot_rules(snap, h);
	struct page *p;
	struct buf b = BUF_INIT;
	size_t n;
	char *bytes;

	if (src->kind == PAGE_REDIRECT) {
		p = page_new(PAGE_REDIRECT, path, len);
		if (src->location[0] == '/')
			rewrite_url(&r, src->location, strlen(src->location), ESC_NONE, 0, &b);
		else
			buf_adds(&b, src->location);
		p->location = buf_detach(&b, NULL);
		return p;
	}
	rewrite_doc(&r, page_bytes(src), src->body_len, &b);
	p = page_new(src->kind, path, len);
	p->content_type = src->content_type;
	p->mtime = src->mtime;
	p->tags = src->tags ? xstrdup(src->tags) : NULL;
	buf_fit(&b);
	bytes = buf_detach(&b, &n);
	page_set_body(p, bytes, n, src->kind == PAGE_NOTE ? GZIP_LEVEL : GZIP_FAST);
	return p;
}

struct page *hosts_page(const struct snapshot *snap, struct snapshot_host *h, const char *path,
			size_t len)
{
	struct page *p = map_get(&h->pages, path, len), *src;
	char *key;
	void *v;

	if (p)
		return p;
	src = snapshot_get(snap, path, len);
	if (src && (src->kind == PAGE_ASSET || src->kind == PAGE_FILE))
		return src;
	if (!h->open || !src || src->kind == PAGE_NOT_FOUND)
		return NULL;
	/* open: rendered for this host on the first request, once */
	pthread_mutex_lock(&h->lock);
	while ((v = map_get(&h->lazy, path, len)) == &rendering)
		pthread_cond_wait(&h->rendered, &h->lock);
	if (v) {
		pthread_mutex_unlock(&h->lock);
		return v;
	}
	key = xstrndup(path, len);
	map_put(&h->lazy, key, len, &rendering);
	pthread_mutex_unlock(&h->lock);

	p = render_lazy(snap, h, src, path, len);

	pthread_mutex_lock(&h->lock);
	map_put(&h->lazy, p->path, len, p); /* the entry now keys on the page's own path */
	h->nrendered++;
	pthread_cond_broadcast(&h->rendered);
	pthread_mutex_unlock(&h->lock);
	free(key);
	return p;
}

struct page *hosts_main_route(const struct snapshot *snap, const char *path, size_t len)
{
	const struct snapshot_hosts *sh = snap->hosts;
	return sh && sh->main ? map_get(&sh->main->pages, path, len) : NULL;
}
