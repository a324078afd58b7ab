/*
 * rewrite.c: a main-site page as a custom host serves it (rewrite.h).
 *
 * Pages are rendered once, for the main site; a host that routes a note
 * serves the same bytes with every link rewritten to where the target is
 * on that host (or to the main site's absolute URL when the host does not
 * serve it), and the site's name and origin swapped for the host's.
 */
#include "site/rewrite.h"
#include "util/xalloc.h"

#include <string.h>

/*
 * Paths every custom host serves: from its own table, and the search page
 * (its answers rewritten for the host, see searchapi.c), so that a search
 * form on a host's page stays on the host.
 */
static int host_resource(const char *key)
{
	static const char *const names[] = { "/sitemap.xml", "/sitemap-routes.xml", "/robots.txt",
					     "/rss.xml", "/atom.xml", "/_quire/tree.json",
					     "/search" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(key, names[i]) == 0)
			return 1;
	return 0;
}

/*
 * Where a main-site path (decoded, without the prefix) is on the host: its
 * path there, or NULL when the host does not serve it.
 */
static const char *host_path(const struct rewrite_rules *r, const char *key, size_t len)
{
	const char *to = map_get(r->routed, key, len);
	const struct page *p;

	if (to)
		return to;
	if (map_get(r->own, key, len) || r->open || host_resource(key))
		return key;
	p = r->main ? map_get(r->main, key, len) : ptable_get(r->main_table, key, len);
	if (p && (p->kind == PAGE_ASSET || p->kind == PAGE_FILE))
		return key;
	return NULL;
}

/*
 * Rewrites one root-relative URL (encoded, escaped as esc) for the host
 * into out. The path part is decoded to look it up; the query and
 * fragment are kept as written.
 */
void rewrite_url(const struct rewrite_rules *r, const char *u, size_t len, enum esc esc,
			int absolute, struct buf *out)
{
	size_t plen = strlen(r->prefix), pathlen, i;
	struct buf raw = BUF_INIT, key = BUF_INIT;
	const char *to, *rest;

	/* undo the HTML escaping of the value ('&' is the only one a URL gets) */
	for (i = 0; i < len; i++) {
		if (esc == ESC_HTML && u[i] == '&' && len - i >= 5 && memcmp(u + i, "&amp;", 5) == 0) {
			buf_addc(&raw, '&');
			i += 4;
		} else {
			buf_addc(&raw, u[i]);
		}
	}
	pathlen = strcspn(raw.ptr, "?#");
	rest = raw.ptr + pathlen;
	if (plen && (pathlen < plen || memcmp(raw.ptr, r->prefix, plen) != 0 ||
		     (pathlen > plen && raw.ptr[plen] != '/')))
		goto keep; /* outside the main site: leave it */
	if (buf_add_urldecoded(&key, raw.ptr + plen, pathlen - plen, 0) < 0)
		goto keep;
	if (!key.len)
		buf_addc(&key, '/');
	to = host_path(r, key.ptr, key.len);
	if (to) {
		struct buf enc = BUF_INIT;
		if (absolute)
			buf_adds(&enc, r->origin);
		buf_add_urlpath(&enc, to, strlen(to));
		buf_adds(&enc, rest);
		if (esc == ESC_HTML)
			buf_add_html(out, enc.ptr, enc.len);
		else if (esc == ESC_JSON)
			buf_add_json(out, enc.ptr, enc.len);
		else
			buf_add(out, enc.ptr, enc.len);
		buf_release(&enc);
		goto done;
	}
	/* not served here: the same path on the main site, when it has an address */
	absolute = absolute || r->main_origin[0];
keep:
	if (absolute) {
		if (esc == ESC_HTML)
			buf_adds_html(out, r->main_origin);
		else if (esc == ESC_JSON)
			buf_adds_json(out, r->main_origin);
		else
			buf_adds(out, r->main_origin);
	}
	buf_add(out, u, len);
done:
	buf_release(&raw);
	buf_release(&key);
}

/* Attribute openers whose values are URLs, and how they are escaped. */
static const struct {
	const char *open;
	enum esc esc;
} url_attrs[] = {
	{ " href=\"", ESC_HTML },
	{ " src=\"", ESC_HTML },
	{ " action=\"", ESC_HTML },
	{ " data-tree=\"", ESC_HTML },
	{ " data-graph=\"", ESC_HTML },
	{ " data-src=\"", ESC_HTML },
	{ " data-diagram-script=\"", ESC_HTML },
	{ " content=\"", ESC_HTML },
	{ "\"url\":\"", ESC_JSON },
};

/* Places where the layout writes the site title just after the pattern. */
static const struct {
	const char *open;
	const char *close;
} title_spots[] = {
	{ "<title>", "</title>" },
	{ " \xc2\xb7 ", "</title>" }, /* "<title>Note · Site</title>" */
	{ "<meta property=\"og:site_name\" content=\"", "\"" },
	{ "<link rel=\"alternate\" type=\"application/rss+xml\" title=\"", "\"" },
};

static int starts(const char *p, const char *end, const char *pat, size_t len)
{
	return (size_t)(end - p) >= len && memcmp(p, pat, len) == 0;
}

/*
 * The page bytes for the host: root-relative and main-site URLs rewritten,
 * the site title replaced, data-prefix emptied (hosts have no prefix).
 * The input is our own output (layout.c, markdown.c, derived.c), where
 * user text is escaped: the patterns below cannot come from a note.
 */
void rewrite_doc(const struct rewrite_rules *r, const char *s, size_t len, struct buf *out)
{
	const char *p = s, *end = s + len, *copied = s;
	size_t molen = strlen(r->main_origin), plen = strlen(r->prefix), k;
	struct buf mt = BUF_INIT, dp = BUF_INIT;
	int retitle = strcmp(r->title, r->main_title) != 0;
	int title_link = 0; /* inside the header's or footer's home link */

	buf_adds_html(&mt, r->main_title);
	buf_addf(&dp, " data-prefix=\"%s\"", r->prefix);
	buf_grow(out, len + len / 16);
	for (; p < end; p++) {
		char c = *p;
		if (c != 'h' && c != ' ' && c != '"' && c != '<' && c != '>')
			continue;
		/* an absolute URL on the main site, anywhere (canonical links, feeds) */
		if (c == 'h' && molen && starts(p, end, r->main_origin, molen) &&
		    starts(p + molen, end, r->prefix, plen) && p + molen + plen < end &&
		    p[molen + plen] == '/') {
			size_t ulen = molen;
			while (p + ulen < end && !strchr("\"<> \n\t", p[ulen]))
				ulen++;
			buf_add(out, copied, (size_t)(p - copied));
			rewrite_url(r, p + molen, ulen - molen, ESC_HTML, 1, out);
			copied = p + ulen;
			p = copied - 1;
			continue;
		}
		if (c == ' ' || c == '"') {
			int done = 0;
			for (k = 0; k < sizeof(url_attrs) / sizeof(url_attrs[0]); k++) {
				size_t olen = strlen(url_attrs[k].open);
				const char *v = p + olen, *ve;
				if (!starts(p, end, url_attrs[k].open, olen))
					continue;
				if (v >= end || v[0] != '/' || (v + 1 < end && v[1] == '/'))
					break; /* not root-relative */
				if (!(ve = memchr(v, '"', (size_t)(end - v))))
					break;
				buf_add(out, copied, (size_t)(v - copied));
				rewrite_url(r, v, (size_t)(ve - v), url_attrs[k].esc, 0, out);
				copied = ve;
				p = ve - 1;
				done = 1;
				break;
			}
			if (done)
				continue;
			if (plen && starts(p, end, dp.ptr, dp.len)) {
				buf_add(out, copied, (size_t)(p - copied));
				buf_adds(out, " data-prefix=\"\"");
				copied = p + dp.len;
				p = copied - 1;
				continue;
			}
		}
		if (!retitle)
			continue;
		if (c == '<' && (starts(p, end, "<a class=\"site-title\"", 21) ||
				 starts(p, end, "<footer class=\"site-footer\"><a ", 31)))
			title_link = 1; /* the title is the text of the next link */
		if (c == '<' && title_link && starts(p, end, "</a>", 4))
			title_link = 0; /* the link closed with something else in it */
		if (c == '>' && title_link && starts(p + 1, end, mt.ptr, mt.len) &&
		    starts(p + 1 + mt.len, end, "</a>", 4)) {
			title_link = 0;
			buf_add(out, copied, (size_t)(p + 1 - copied));
			buf_adds_html(out, r->title);
			copied = p + 1 + mt.len;
			p = copied - 1;
			continue;
		}
		for (k = 0; k < sizeof(title_spots) / sizeof(title_spots[0]); k++) {
			size_t olen = strlen(title_spots[k].open);
			const char *t = p + olen;
			if (!starts(p, end, title_spots[k].open, olen) || !starts(t, end, mt.ptr, mt.len) ||
			    !starts(t + mt.len, end, title_spots[k].close, strlen(title_spots[k].close)))
				continue;
			buf_add(out, copied, (size_t)(t - copied));
			buf_adds_html(out, r->title);
			copied = t + mt.len;
			p = copied - 1;
			break;
		}
	}
	buf_add(out, copied, (size_t)(end - copied));
	buf_release(&mt);
	buf_release(&dp);
}
