/*
 * site.c: a site's life around its changes: set-up (quire.yml, assets,
 * the moves and routes kept from earlier runs), the first load (one
 * site_apply() of the vault's root), snapshots, compression of the pages
 * published uncompressed, statistics and teardown. The changes themselves
 * are apply.c's; URLs and moves are urls.c's; search rows sitesearch.c's.
 */
#include "site/site.h"
#include "site/site-int.h"
#include "search/search.h"
#include "site/derived.h"
#include "site/hosts.h"
#include "site/render.h"
#include "site/theme.h"
#include "site/vendor.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/files.h"
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
#ifdef __GLIBC__
#include <malloc.h>
#endif

/*
 * Gives the heap's free pages back to the system. A load frees the notes'
 * sources, and the search fill their texts, among pages that stay; glibc
 * returns only the top of a heap by itself.
 */
void site_heap_trim(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

char *site_make_href(const struct site *s, const char *url)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, s->cfg.url_prefix);
	buf_add_urlpath(&b, url, strlen(url));
	return buf_detach(&b, NULL);
}

void site_key_add(struct map *m, const char *key)
{
	size_t len = strlen(key);
	if (!map_get(m, key, len)) {
		char *k = xstrndup(key, len);
		map_put(m, k, len, k);
	}
}

void site_keys_release(struct map *m)
{
	size_t i = 0;
	void *v;
	while (map_next(m, &i, NULL, NULL, &v))
		free(v);
	map_release(m);
}

static const char *asset_type(const char *name)
{
	const char *dot = strrchr(name, '.'), *slash = strrchr(name, '/');
	if (dot && strcmp(dot, ".css") == 0)
		return "text/css; charset=utf-8";
	if (dot && strcmp(dot, ".js") == 0)
		return "text/javascript; charset=utf-8";
	if (dot && strcmp(dot, ".woff2") == 0)
		return "font/woff2";
	if (strcmp(slash ? slash + 1 : name, "LICENSE") == 0)
		return "text/plain; charset=utf-8";
	return vault_content_type(name);
}

/*
 * KaTeX and Mermaid (vendor.h) as immutable pages under /_quire/vendor/,
 * at URLs that carry their version; the layout links them from the pages
 * that need them. Their gzip bytes were made at build time.
 */
static void load_vendor(struct site *s)
{
	static const char *const wanted[3] = { "/katex.min.css", "/katex.min.js", "/mermaid.min.js" };
	const char **slot[3] = { &s->layout.katex_css_url, &s->layout.katex_js_url,
				 &s->layout.mermaid_js_url };
	const struct vendor_file *f;
	size_t k;

	for (f = vendor_files; f->name; f++) {
		struct buf url = BUF_INIT;
		char *body = xmalloc(f->len + 1), *gz;
		struct page *p;

		buf_addf(&url, "/_quire/vendor/%s", f->name);
		if (gzip_inflate_to(f->gz, f->gz_len, body, f->len) < 0) {
			log_error("%s: the copy compiled into quire is damaged", url.ptr);
			free(body);
			buf_release(&url);
			continue;
		}
		p = page_new(PAGE_ASSET, url.ptr, url.len);
		p->content_type = asset_type(f->name);
		p->immutable = 1;
		gz = xmalloc_lasting(f->gz_len);
		memcpy(gz, f->gz, f->gz_len);
		page_set_body_gz(p, body, f->len, gz, f->gz_len);
		site_page_put(s, p);
		page_unref(p);
		for (k = 0; k < 3; k++) {
			size_t n = strlen(f->name), w = strlen(wanted[k]);
			if (n > w && strcmp(f->name + n - w, wanted[k]) == 0 && !s->asset_urls[8 + k]) {
				s->asset_urls[8 + k] = site_make_href(s, url.ptr);
				*slot[k] = s->asset_urls[8 + k];
			}
		}
		buf_release(&url);
	}
}

/* Theme files as immutable pages at content-hashed URLs. */
static void load_assets(struct site *s)
{
	const struct theme_file *f;
	size_t n = 0;

	for (f = theme_files; f->name && n < 5; f++, n++) {
		struct buf url = BUF_INIT;
		const char *dot = strrchr(f->name, '.');
		char hex[17];
		struct page *p;

		hash_hex16(f->data, f->len, hex);
		buf_adds(&url, "/_quire/");
		buf_add(&url, f->name, (size_t)(dot - f->name));
		buf_addf(&url, ".%.10s%s", hex, dot);
		p = page_new(PAGE_ASSET, url.ptr, url.len);
		p->content_type = asset_type(f->name);
		p->immutable = 1;
		page_set_body(p, xmemdup(f->data, f->len), f->len, GZIP_LEVEL);
		site_page_put(s, p);
		page_unref(p);
		s->asset_urls[n] = site_make_href(s, url.ptr);
		if (strcmp(f->name, "quire.css") == 0)
			s->layout.css_url = s->asset_urls[n];
		else if (strcmp(f->name, "quire.js") == 0)
			s->layout.js_url = s->asset_urls[n];
		buf_release(&url);
	}
}

/*
 * A vault file quire serves as its own (publish.css, a favicon) into out:
 * 0, or -1 when it is over SITE_ASSET_MAX (a warning under its name) or
 * could not be read (gone since: the change that removes it follows).
 */
static int read_site_asset(struct site *s, const struct site_file *f, struct buf *out)
{
	struct buf full = BUF_INIT;
	int rc;

	if (f->size > SITE_ASSET_MAX) {
		diag_add(&s->diags, DIAG_WARNING, f->path, 0,
			 "%s is %lld bytes, over the %d quire serves: not used", f->path,
			 (long long)f->size, SITE_ASSET_MAX);
		return -1;
	}
	buf_addf(&full, "%s/%s", s->vault, f->disk);
	rc = read_file(full.ptr, out);
	buf_release(&full);
	if (rc < 0)
		buf_reset(out);
	return rc;
}

/* body as the page at url: an asset at a URL that stays, so revalidated (not immutable). */
static void put_site_asset(struct site *s, const char *url, const char *type, struct buf *body)
{
	struct page *p = page_new(PAGE_ASSET, url, strlen(url));
	size_t len;

	p->content_type = type;
	buf_fit(body);
	len = body->len;
	page_set_body(p, buf_detach(body, NULL), len, GZIP_LEVEL);
	site_page_put(s, p);
	page_unref(p);
}

void site_stylesheet(struct site *s)
{
	const struct site_file *f = map_gets(&s->file_by_path, SITE_CSS_SOURCE);
	struct buf css = BUF_INIT;

	if (s->cfg.no_site_css)
		return;
	diag_forget(&s->diags, SITE_CSS_SOURCE, DIAG_OTHER);
	if (f)
		read_site_asset(s, f, &css);
	if (!css.len)
		buf_adds(&css, "/* the vault has no publish.css: quire serves its own in its place */\n");
	put_site_asset(s, SITE_CSS_URL, "text/css; charset=utf-8", &css);
}

/* Obsidian Publish's favicon names, in the order one is chosen. */
static const char *const icon_names[] = {
	"favicon-32x32.png", "favicon-32.png", "favicon.ico", "favicon-196x196.png",
	"favicon-192x192.png", "favicon-180x180.png", "favicon-167x167.png",
	"favicon-152x152.png", "favicon-128x128.png",
};

int site_icon_source(const char *path)
{
	size_t i;

	for (i = 0; i < sizeof(icon_names) / sizeof(*icon_names); i++)
		if (strcmp(path, icon_names[i]) == 0)
			return 1;
	return 0;
}

void site_icon(struct site *s)
{
	const struct theme_file *t;
	const char *type = "image/svg+xml";
	struct buf icon = BUF_INIT;
	size_t i;

	for (i = 0; i < sizeof(icon_names) / sizeof(*icon_names) && !icon.len; i++) {
		const struct site_file *f = map_gets(&s->file_by_path, icon_names[i]);
		diag_forget(&s->diags, icon_names[i], DIAG_OTHER);
		if (f && read_site_asset(s, f, &icon) == 0 && icon.len)
			type = vault_content_type(f->path);
	}
	for (t = theme_files; !icon.len && t->name; t++)
		if (strcmp(t->name, "favicon.svg") == 0)
			buf_add(&icon, t->data, t->len);
	put_site_asset(s, SITE_ICON_URL, type, &icon);
}

static struct page *text_page(enum page_kind kind, const char *path, const char *type,
			      struct buf *content)
{
	struct page *p = page_new(kind, path, strlen(path));
	size_t len;
	char *bytes;

	buf_fit(content);
	bytes = buf_detach(content, &len);

	p->content_type = type;
	page_set_body(p, bytes, len, GZIP_LEVEL);
	return p;
}

/*
 * The headers every response carries: quire's Content-Security-Policy
 * (or quire.yml's csp, or none when that is ""), no MIME sniffing, and no
 * full URLs leaking to other sites.
 */
static char *security_headers(const struct config *cfg)
{
	struct buf b = BUF_INIT;
	char *csp = cfg->csp ? NULL : layout_csp(cfg->frame_src);

	if (csp || cfg->csp[0])
		buf_addf(&b, "Content-Security-Policy: %s\r\n", csp ? csp : cfg->csp);
	buf_adds(&b, "X-Content-Type-Options: nosniff\r\n"
		     "Referrer-Policy: strict-origin-when-cross-origin\r\n");
	free(csp);
	return buf_detach(&b, NULL);
}

/*
 * quire.yml into s->cfg, failing closed: an invalid file is never half
 * applied. Without a fallback (a command, a server's start) its errors are
 * logged and the load fails; with one (a reload), the fallback's settings
 * are taken and s->config_error says why.
 */
static int load_settings(struct site *s, const char *path, const struct site_options *opt)
{
	struct diag_list bad;
	struct buf src = BUF_INIT, why = BUF_INIT;
	size_t i;

	diag_list_init(&bad);
	if (config_read(path, &src, &bad) == 0 &&
	    config_parse(&s->cfg, path, src.ptr, src.len, &bad) == 0) {
		s->config_len = src.len;
		s->config_text = buf_detach(&src, NULL);
		diag_list_release(&bad);
		return 0;
	}
	buf_release(&src);
	config_release(&s->cfg);
	diag_sort(&bad);
	for (i = 0; i < bad.n; i++) {
		const struct diag *d = &bad.items[i];
		if (!opt || !opt->config_fallback) {
			struct log_event e;
			log_event_init(&e, LOG_ERROR, "config.error");
			log_event_str(&e, "file", d->path);
			log_event_int(&e, "line", d->line);
			log_event_emit(&e, "%s/%s:%d: %s", path, d->path, d->line, d->msg);
		} else if (!why.len) {
			buf_addf(&why, "%s:%d: %s", d->path, d->line, d->msg);
		}
	}
	if (!opt || !opt->config_fallback) {
		struct log_event e;
		log_event_init(&e, LOG_ERROR, "config.invalid");
		log_event_uint(&e, "errors", bad.n);
		log_event_emit(&e, "%s/quire.yml is invalid (%zu error%s): nothing is loaded", path,
			       bad.n, bad.n == 1 ? "" : "s");
		diag_list_release(&bad);
		return -1;
	}
	if (bad.n > 1)
		buf_addf(&why, " (and %zu more)", bad.n - 1);
	s->config_error = buf_detach(&why, NULL);
	diag_list_release(&bad);
	/* the fallback was valid when it was taken, and parses the same now */
	diag_list_init(&bad);
	config_parse(&s->cfg, path, opt->config_fallback, opt->config_fallback_len, &bad);
	diag_list_release(&bad);
	s->config_text = xstrndup(opt->config_fallback, opt->config_fallback_len);
	s->config_len = opt->config_fallback_len;
	return 0;
}

/* --base-url over quire.yml's. 0, or -1 (logged) when it is not a URL. */
static int override_base_url(struct site *s, const struct site_options *opt)
{
	if (opt && opt->base_url && config_set_base_url(&s->cfg, opt->base_url) < 0)
		return log_error("--base-url must be an absolute http(s) URL: %s", opt->base_url);
	return 0;
}

int site_check_settings(const char *path, const struct site_options *opt)
{
	struct site *s = xcalloc(1, sizeof(*s));
	int ret = load_settings(s, path, NULL) < 0 || override_base_url(s, opt) < 0 ? -1 : 0;

	config_release(&s->cfg);
	free(s->config_text);
	free(s);
	return ret;
}

struct site *site_new(const char *path, const struct site_options *opt)
{
	struct site *s = xcalloc(1, sizeof(*s));
	struct buf b = BUF_INIT;
	struct page *p;

	s->vault = xstrdup(path);
	diag_list_init(&s->diags);
	s->resolver = resolver_new();
	s->derived = derived_new();
	s->hosts = hosts_new();
	s->keep_text = opt && opt->search;
	s->threads = opt && opt->threads > 0 ? opt->threads : parallel_cpus();
	if (load_settings(s, path, opt) < 0 || override_base_url(s, opt) < 0)
		goto fail;
	{
		struct buf mf = BUF_INIT;
		if (opt && opt->data_dir)
			buf_adds(&mf, opt->data_dir);
		else
			buf_addf(&mf, "%s/.quire", path);
		s->data_dir = xstrdup(mf.ptr);
		buf_adds(&mf, "/moves");
		s->moves_file = buf_detach(&mf, NULL);
		urls_load_moves(s);
	}
	s->layout.title = s->cfg.title;
	s->layout.language = s->cfg.language;
	s->layout.url_prefix = s->cfg.url_prefix;
	s->layout.base_url = s->cfg.base_url;
	s->layout.css_url = s->layout.js_url = s->layout.icon_url = "";
	buf_addf(&b, "%s/_quire/tree.json", s->cfg.url_prefix);
	s->asset_urls[7] = buf_detach(&b, NULL);
	s->layout.tree_url = s->asset_urls[7];
	if (s->cfg.base_url[0]) {
		buf_addf(&b, "%s/rss.xml", s->cfg.url_prefix);
		s->asset_urls[6] = buf_detach(&b, NULL);
		s->layout.feed_url = s->asset_urls[6];
	}
	buf_addf(&b, "%s/_quire/graph", s->cfg.url_prefix);
	s->asset_urls[11] = buf_detach(&b, NULL);
	s->layout.graph_url = s->asset_urls[11];
	buf_addf(&b, "%s/_quire/graph.json", s->cfg.url_prefix);
	s->asset_urls[12] = buf_detach(&b, NULL);
	s->layout.graph_data_url = s->asset_urls[12];
	if (opt && opt->search) {
		buf_addf(&b, "%s/search", s->cfg.url_prefix);
		s->asset_urls[5] = buf_detach(&b, NULL);
		s->layout.search_url = s->asset_urls[5];
	}
	load_assets(s);
	load_vendor(s);
	s->asset_urls[14] = site_make_href(s, SITE_ICON_URL);
	s->layout.icon_url = s->asset_urls[14];
	site_icon(s);
	if (!s->cfg.no_site_css) {
		s->asset_urls[13] = site_make_href(s, SITE_CSS_URL);
		s->layout.site_css_url = s->asset_urls[13];
		site_stylesheet(s);
	}

	if (s->cfg.robots) {
		buf_adds(&b, s->cfg.robots);
		if (b.len && b.ptr[b.len - 1] != '\n')
			buf_addc(&b, '\n');
	} else {
		buf_adds(&b, "User-agent: *\nAllow: /\n");
		if (s->cfg.base_url[0])
			buf_addf(&b, "Sitemap: %s/sitemap.xml\n", s->cfg.base_url);
	}
	p = text_page(PAGE_GENERATED, "/robots.txt", "text/plain; charset=utf-8", &b);
	site_page_put(s, p);
	page_unref(p);
	layout_graph_page(&s->layout, &b);
	p = text_page(PAGE_GENERATED, "/_quire/graph", "text/html; charset=utf-8", &b);
	site_page_put(s, p);
	page_unref(p);
	layout_not_found_page(&s->layout, &b);
	s->not_found = text_page(PAGE_NOT_FOUND, "/404.html", "text/html; charset=utf-8", &b);
	s->headers = security_headers(&s->cfg);
	return s;
fail:
	buf_release(&b);
	site_free(s);
	return NULL;
}

void site_progress_read(const struct site_progress *p, size_t *notes, size_t *of)
{
	size_t total = atomic_load(&p->total), steps = atomic_load(&p->steps);

	/* a note parsed again in a later round counts twice: never past the end */
	*of = total / 3;
	*notes = (steps < total ? steps : total) / 3;
}

struct site *site_load(const char *path, const struct site_options *opt)
{
	struct site *s = site_new(path, opt);
	const char *root = "";
	struct stat st;

	if (!s)
		return NULL;
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
		log_error("cannot read vault %s: %s", path, errno ? strerror(errno) : "not a folder");
		site_free(s);
		return NULL;
	}
	s->progress = opt ? opt->progress : NULL;
	site_apply(s, &root, 1);
	if (s->progress) {
		/* the steps of notes never rendered (unpublished) are done too */
		atomic_store(&s->progress->steps, atomic_load(&s->progress->total));
		s->progress = NULL; /* later changes are not the load's */
	}
	if (s->cfg.home) {
		const struct site_note *h = site_find_note(s, s->cfg.home);
		if (!h || !h->published)
			diag_add(&s->diags, DIAG_WARNING, "quire.yml", 0,
				 "home: %s is %s; the site's root shows the vault's listing", s->cfg.home,
				 h ? "not published" : "not a note of the vault");
	}
	site_heap_trim();
	return s;
}

struct snapshot *site_snapshot(struct site *s, const struct snapshot *prev)
{
	struct snapshot *snap;
	char *cc;
	size_t i = 0;
	void *v;

	if (!prev) {
		snap = snapshot_new(1);
		while (map_next(&s->pages, &i, NULL, NULL, &v))
			snapshot_put(snap, page_ref(v));
		snapshot_set_not_found(snap, page_ref(s->not_found));
	} else {
		snap = snapshot_clone(prev);
		while (map_next(&s->dirty, &i, NULL, NULL, &v)) {
			const char *key = v;
			struct page *p = map_gets(&s->pages, key);
			if (p)
				snapshot_put(snap, page_ref(p));
			else
				snapshot_remove(snap, key, strlen(key));
		}
	}
	site_keys_release(&s->dirty);
	hosts_snapshot(s, snap);
	snapshot_set_headers(snap, s->headers);
	cc = config_cache_control(&s->cfg);
	snapshot_set_cache_control(snap, cc);
	free(cc);
	snapshot_set_config_error(snap, s->config_error);
	snap->nnotes = s->npublished;
	snap->nattachments = s->nserved_files;
	snap->load_ms = s->load_ms;
	return snap;
}

void site_stats(const struct site *s, struct site_stats *st)
{
	size_t i, k;

	memset(st, 0, sizeof(*st));
	st->notes = s->nnotes;
	st->attachments = s->nfiles;
	for (i = 0; i < s->nnotes; i++) {
		const struct site_note *n = s->notes[i];
		if (!n->published)
			continue;
		st->published++;
		for (k = 0; k < n->md.nrefs; k++) {
			/* a path that matched nothing and names no file: a web link (markdown.h) */
			if (n->md.refs[k].markdown >= 2 && n->refs[k].kind == MD_TARGET_BROKEN)
				continue;
			st->wikilinks += !n->md.refs[k].markdown;
			if (n->md.refs[k].kind == MD_REF_EMBED)
				st->embeds++;
			else
				st->links++;
			if (n->refs[k].kind != MD_TARGET_BROKEN)
				continue;
			if (n->md.refs[k].markdown)
				st->outside++;
			else
				st->broken++;
		}
	}
	for (i = 0; i < s->nfiles; i++)
		st->published_attachments += s->files[i]->refs > 0;
}

/*
 * Feeds, sitemaps, robots.txt's Sitemap: line and canonical links need
 * the site's absolute URL, and a page's bytes are made once for every
 * request (and for quire export, which has none): they are not guessed
 * from a request's Host, which any client sets. So without base_url they
 * are left out, and this says so where the vault's owner looks.
 */
const char *site_base_url_note(const struct site *s)
{
	if (s->cfg.base_url[0])
		return NULL;
	if (hosts_strict(s->hosts))
		return "no base_url: no /rss.xml, /atom.xml or /sitemap.xml and no canonical links, "
		       "which need the site's absolute URL, and strict hosts' pages link to this "
		       "site's notes by paths those hosts do not serve; set base_url: "
		       "https://your.site in quire.yml (or --base-url)";
	return "no base_url: no /rss.xml, /atom.xml or /sitemap.xml and no canonical links, "
	       "which need the site's absolute URL; set base_url: https://your.site in quire.yml "
	       "(or --base-url)";
}

static void free_vecmap(struct map *m)
{
	size_t i = 0;
	void *v;

	while (map_next(m, &i, NULL, NULL, &v)) {
		struct notevec *nv = v;
		free((char *)(void *)nv->v[0]);
		free(nv->v);
		free(nv);
	}
	map_release(m);
}

struct gz_job {
	struct gz_pending *v;
	struct page **out;
};

static void gzip_one(void *arg, size_t i)
{
	struct gz_job *j = arg;
	j->out[i] = page_gzipped(j->v[i].page);
}

size_t site_gzip_pending(struct site *s)
{
	struct gz_job j = { s->gz_pending, NULL };
	size_t n = s->ngz_pending, i, live = 0, done = 0;

	if (!n)
		return 0;
	s->gz_pending = NULL;
	s->ngz_pending = s->agz_pending = 0;
	/* the pages still current: a later apply may have replaced some */
	for (i = 0; i < n; i++) {
		struct gz_pending e = j.v[i];
		if (map_get(&s->pages, e.page->path, e.page->path_len) == e.page) {
			j.v[live++] = e;
		} else {
			page_unref(e.page);
			free(e.note);
		}
	}
	j.out = xcalloc(live + 1, sizeof(*j.out));
	parallel_for(live, s->threads, gzip_one, &j);
	for (i = 0; i < live; i++) {
		struct page *p = j.v[i].page, *q = j.out[i];
		struct site_note *t = j.v[i].note ? site_find_note(s, j.v[i].note) : NULL;
		if (q) {
			site_page_put(s, q);
			/* the note's own references: its page, and its fragment read back from it */
			if (t && t->page == p) {
				page_unref(t->page);
				t->page = page_ref(q);
			}
			if (t && t->frag.page == p) {
				page_unref(t->frag.page);
				t->frag.page = page_ref(q);
			}
			page_unref(q);
			done++;
		}
		page_unref(p);
		free(j.v[i].note);
	}
	free(j.out);
	free(j.v);
	return done;
}

void site_free(struct site *s)
{
	size_t i = 0;
	void *v;

	if (!s)
		return;
	for (i = 0; i < s->nnotes; i++)
		site_note_free(s->notes[i]);
	for (i = 0; i < s->nfiles; i++)
		site_file_free(s->files[i]);
	free(s->notes);
	free(s->files);
	map_release(&s->note_by_path);
	map_release(&s->file_by_path);
	free_vecmap(&s->mentions);
	free_vecmap(&s->claims);
	site_keys_release(&s->unclaimed);
	urls_free(s);
	free(s->moves_file);
	free(s->data_dir);
	free(s->search_fill);
	i = 0;
	while (map_next(&s->pages, &i, NULL, NULL, &v))
		page_unref(v);
	map_release(&s->pages);
	site_keys_release(&s->dirty);
	for (i = 0; i < s->ngz_pending; i++) {
		page_unref(s->gz_pending[i].page);
		free(s->gz_pending[i].note);
	}
	free(s->gz_pending);
	page_unref(s->not_found);
	for (i = 0; i < sizeof(s->asset_urls) / sizeof(*s->asset_urls); i++)
		free(s->asset_urls[i]);
	resolver_free(s->resolver);
	derived_free(s->derived);
	hosts_free(s->hosts);
	config_release(&s->cfg);
	free(s->config_text);
	free(s->config_error);
	diag_list_release(&s->diags);
	free(s->vault);
	free(s->headers);
	free(s);
}
