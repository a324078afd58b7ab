/*
 * export-collect.c: everything an export writes, host by host.
 *
 * The main site goes at the folder's root: the snapshot's pages, the main
 * site's extra routes, 404.html. Each custom domain goes under
 * _hosts/<name>/ with what hosts_page() answers there for every path: its
 * own pages first (routes, its sitemap and robots.txt), then the theme and
 * attachments it shares with the main site, and for an open host every
 * page rendered for it. Redirects are gathered into redirects.map (nginx)
 * and _redirects (Netlify, Cloudflare Pages) beside each site's pages,
 * and its note pages into its static search index (export-search.c).
 *
 * For one nginx server that serves every host (deploy/nginx-export.conf,
 * unedited whatever hosts a vault has), two more maps at the top, always
 * written: hosts.map, from $host to the folder of a custom domain
 * ("/_hosts/<name>") or, for www. of a host or of base_url's host, to the
 * origin it redirects to (as quire serve answers it); and
 * redirects-hosts.map, every custom domain's redirects keyed by that
 * folder and the path ("/_hosts/<name>/old"), so that one map on
 * $quire_site$uri holds every site's redirects.
 *
 * A redirect whose path is longer than EXPORT_MAP_KEY_MAX bytes stays out
 * of the maps (nginx refuses a map whose key does not fit its hash
 * bucket: deploy/nginx-export.conf sets map_hash_bucket_size 512), with a
 * warning; its HTML page and _redirects line are still written.
 */
#include "cmd/export.h"
#include "cmd/export-int.h"
#include "site/hosts.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* "key" "value"; for an nginx map: quoted, with \ and " escaped. */
static void nginx_quoted(struct buf *b, const char *s, size_t len)
{
	size_t i;

	buf_addc(b, '"');
	for (i = 0; i < len; i++) {
		if (s[i] == '"' || s[i] == '\\')
			buf_addc(b, '\\');
		buf_addc(b, s[i]);
	}
	buf_addc(b, '"');
}

/* The longest key a redirect map holds: map_hash_bucket_size 512 less nginx's overhead. */
#define EXPORT_MAP_KEY_MAX 480

struct redirects {
	struct buf map;    /* nginx: "/old" "/new"; (keys: decoded, as $uri is) */
	struct buf netlify; /* /old /new 301 (encoded) */
	struct buf *all;   /* a custom domain's: redirects-hosts.map, keys after folder */
	const char *folder; /* "/_hosts/<name>" */
	const struct page **notes; /* the site's note pages, for its search index */
	size_t nnotes, anotes;
};
#define REDIRECTS_INIT { BUF_INIT, BUF_INIT, NULL, "", NULL, 0, 0 }

/* A line "key" "value"; of an nginx map. */
static void map_line(struct buf *map, const char *key, size_t klen, const char *value)
{
	nginx_quoted(map, key, klen);
	buf_addc(map, ' ');
	nginx_quoted(map, value, strlen(value));
	buf_adds(map, ";\n");
}

static void add_redirect(struct redirects *r, const char *prefix, const struct page *p)
{
	struct buf key = BUF_INIT;

	if (!p->location || strpbrk(p->location, " \t\r\n"))
		return;
	buf_adds(&key, r->folder);
	buf_adds(&key, prefix);
	buf_add(&key, p->path, p->path_len);
	if (key.len > EXPORT_MAP_KEY_MAX) {
		log_warn("export: the redirect from %s is longer than an nginx map key may be (%d "
			 "bytes): left out of redirects.map, written as a page", key.ptr,
			 EXPORT_MAP_KEY_MAX);
	} else {
		size_t flen = strlen(r->folder);
		map_line(&r->map, key.ptr + flen, key.len - flen, p->location);
		if (r->all)
			map_line(r->all, key.ptr, key.len, p->location);
	}
	buf_reset(&key);
	buf_adds(&key, prefix);
	buf_add_urlpath(&key, p->path, p->path_len);
	buf_addf(&r->netlify, "%s %s 301\n", key.ptr, p->location);
	buf_release(&key);
}

/* The redirect maps and the search index of one site. */
static void finish_site(struct export_list *l, const char *base, const char *prefix,
			struct redirects *r)
{
	struct buf rel = BUF_INIT;
	size_t len;

	buf_addf(&rel, "%sredirects.map", base);
	len = r->map.len;
	export_add(l, rel.ptr, NULL, REP_BUF, buf_detach(&r->map, NULL), len);
	buf_reset(&rel);
	buf_addf(&rel, "%s_redirects", base);
	len = r->netlify.len;
	export_add(l, rel.ptr, NULL, REP_BUF, buf_detach(&r->netlify, NULL), len);
	buf_release(&rel);
	export_collect_search(l, base, prefix, r->notes, r->nnotes);
	free(r->notes);
}

static void add(struct export_list *l, const char *base, struct redirects *r,
		const char *prefix, const struct page *p)
{
	if (p->kind == PAGE_REDIRECT && export_safe_key(p->path))
		add_redirect(r, prefix, p);
	if (p->kind == PAGE_NOTE && export_safe_key(p->path)) {
		if (r->nnotes == r->anotes) {
			r->anotes = r->anotes ? 2 * r->anotes : 64;
			r->notes = xrealloc(r->notes, r->anotes * sizeof(*r->notes));
		}
		r->notes[r->nnotes++] = p;
	}
	export_add_page(l, base, p);
}

static void collect_main(struct export_list *l, const struct snapshot *snap, const char *prefix)
{
	struct redirects r = REDIRECTS_INIT;
	struct ptable_iter it = PTABLE_ITER_INIT;
	const struct page *p;

	while ((p = ptable_next(&snap->pages, &it)))
		add(l, "", &r, prefix, p);
	if (snap->hosts && snap->hosts->main) {
		size_t i = 0;
		void *v;
		while (map_next(&snap->hosts->main->pages, &i, NULL, NULL, &v))
			add(l, "", &r, prefix, v);
	}
	if (snap->not_found)
		export_add_page(l, "", snap->not_found);
	finish_site(l, "", prefix, &r);
}

static void collect_host(struct export_list *l, const struct snapshot *snap,
			 struct snapshot_host *h, struct buf *hosts, struct buf *all)
{
	struct redirects r = REDIRECTS_INIT;
	struct ptable_iter it = PTABLE_ITER_INIT;
	struct buf base = BUF_INIT, folder = BUF_INIT;
	const struct page *p;
	size_t i = 0;
	void *v;

	buf_addf(&base, "_hosts/%s/", h->name);
	if (!export_safe_key(base.ptr + 6) || strchr(h->name, '/')) {
		buf_release(&base);
		return;
	}
	/* "/_hosts/<name>": the folder, as nginx's root takes it and redirect keys start */
	buf_addf(&folder, "/_hosts/%s", h->name);
	map_line(hosts, h->name, strlen(h->name), folder.ptr);
	r.all = all;
	r.folder = folder.ptr;
	while (map_next(&h->pages, &i, NULL, NULL, &v))
		add(l, base.ptr, &r, "", v);
	while ((p = ptable_next(&snap->pages, &it))) {
		const struct page *hp = hosts_page(snap, h, p->path, p->path_len);
		if (hp)
			add(l, base.ptr, &r, "", hp);
	}
	p = h->not_found ? h->not_found : snap->not_found;
	if (p)
		export_add_page(l, base.ptr, p);
	finish_site(l, base.ptr, "", &r);
	buf_release(&folder);
	buf_release(&base);
}

/* www.<name> answers 301 to origin, unless a note routes www.<name> itself (hosts_find()). */
static void add_www(struct buf *hosts, const struct snapshot_hosts *sh, const char *name,
		    const char *origin)
{
	struct buf www = BUF_INIT;

	buf_addf(&www, "www.%s", name);
	if (name[0] && origin[0] && !map_gets(&sh->by_name, www.ptr))
		map_line(hosts, www.ptr, www.len, origin);
	buf_release(&www);
}

void export_collect(struct export_list *l, const struct snapshot *snap, const char *prefix)
{
	struct buf hosts = BUF_INIT, all = BUF_INIT;
	size_t i = 0, len;
	void *v;

	collect_main(l, snap, prefix);
	while (snap->hosts && map_next(&snap->hosts->by_name, &i, NULL, NULL, &v)) {
		struct snapshot_host *h = v;
		collect_host(l, snap, h, &hosts, &all);
		add_www(&hosts, snap->hosts, h->name, h->origin);
	}
	if (snap->hosts)
		add_www(&hosts, snap->hosts, snap->hosts->main_name, snap->hosts->main_origin);
	len = hosts.len;
	export_add(l, "hosts.map", NULL, REP_BUF, buf_detach(&hosts, NULL), len);
	len = all.len;
	export_add(l, "redirects-hosts.map", NULL, REP_BUF, buf_detach(&all, NULL), len);
}
