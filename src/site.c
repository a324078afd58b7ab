/*
 * site.c: loading a vault and turning it into a snapshot.
 *
 * The expensive steps (parsing and rendering notes, composing and
 * compressing pages) run as parallel loops over notes; everything that
 * looks across notes (URLs, the name index, backlinks) runs between them
 * on one thread, in path order, so a load is deterministic: the same files
 * give the same bytes whatever the thread count.
 */
#include "site.h"
#include "buf.h"
#include "hash.h"
#include "log.h"
#include "parallel.h"
#include "render.h"
#include "resolve.h"
#include "theme.h"
#include "unicode.h"
#include "xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* An encoded href with the site prefix for a decoded URL path. */
static char *make_href(const struct site *s, const char *url)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, s->cfg.url_prefix);
	buf_add_urlpath(&b, url, strlen(url));
	return buf_detach(&b, NULL);
}

struct parse_ctx {
	struct site *s;
	const struct vault_scan *scan;
	size_t *note_files;  /* scan index of each note */
};

static void parse_one(void *arg, size_t i)
{
	struct parse_ctx *c = arg;
	struct site *s = c->s;
	const struct vault_file *f = &c->scan->files[c->note_files[i]];
	struct site_note *n = &s->notes[i];
	struct buf full = BUF_INIT, src = BUF_INIT;

	buf_addf(&full, "%s/%s", s->vault, f->disk);
	if (read_file(full.ptr, &src) < 0)
		diag_add(&s->diags, DIAG_ERROR, f->path, 0, "cannot read: %s", strerror(errno));
	note_parse(&n->note, f->path, src.ptr, src.len, f->mtime, &s->diags);
	n->disk = xstrdup(f->disk);
	buf_release(&full);
	buf_release(&src);
}

/* Gives each published note its URL; a URL taken earlier in path order gets "-2", "-3"... */
static void assign_urls(struct site *s)
{
	struct map taken = MAP_INIT;
	size_t i;

	for (i = 0; i < s->nnotes; i++) {
		struct site_note *n = &s->notes[i];
		char *url;
		struct site_note *other;

		if (!n->published)
			continue;
		url = vault_note_url(n->note.path, n->note.slug);
		other = map_get(&taken, url, strlen(url));
		if (other) {
			struct buf alt = BUF_INIT;
			size_t len = strlen(url), k;
			int slash = len > 1 && url[len - 1] == '/';

			for (k = 2;; k++) {
				buf_reset(&alt);
				buf_add(&alt, url, len - (size_t)slash);
				buf_addf(&alt, "-%zu%s", k, slash ? "/" : "");
				if (!map_get(&taken, alt.ptr, alt.len))
					break;
			}
			diag_add(&s->diags, DIAG_WARNING, n->note.path, 0,
				 "URL %s is already taken by %s; this note is served at %s", url,
				 other->note.path, alt.ptr);
			free(url);
			url = buf_detach(&alt, NULL);
		}
		n->url = url;
		n->href = make_href(s, url);
		map_put(&taken, n->url, strlen(n->url), n);
	}
	map_release(&taken);
}

static void render_body_one(void *arg, size_t i)
{
	struct site *s = arg;
	if (s->notes[i].published)
		render_note_body(s, i);
	else
		note_drop_body(&s->notes[i].note);
}

static void render_page_one(void *arg, size_t i)
{
	struct site *s = arg;
	if (s->notes[i].published)
		render_note_page(s, i);
}

static int cmp_title_ctx_sort(const struct site *s, size_t a, size_t b)
{
	int c = strcasecmp(s->notes[a].note.title, s->notes[b].note.title);
	return c ? c : strcmp(s->notes[a].note.path, s->notes[b].note.path);
}

static void sort_backlinks(const struct site *s, size_t *v, size_t n)
{
	size_t i, j;

	/* insertion sort: backlink lists are short, and this keeps it stable without a context qsort */
	for (i = 1; i < n; i++) {
		size_t x = v[i];
		for (j = i; j > 0 && cmp_title_ctx_sort(s, v[j - 1], x) > 0; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* Backlinks, link counts and diagnostics for references that resolve to nothing. */
static void link_pass(struct site *s)
{
	size_t i, k;

	for (i = 0; i < s->nnotes; i++) {
		struct site_note *n = &s->notes[i];

		if (!n->published)
			continue;
		for (k = 0; k < n->md.nrefs; k++) {
			const struct md_ref *ref = &n->md.refs[k];
			const struct site_ref *r = &n->refs[k];
			struct site_note *t;

			if (ref->kind == MD_REF_EMBED)
				s->nembeds++;
			else
				s->nlinks++;
			if (r->kind == MD_TARGET_BROKEN) {
				s->nbroken++;
				diag_add(&s->diags, DIAG_WARNING, n->note.path, ref->line,
					 "broken %s: [[%s]] matches no note or attachment",
					 ref->kind == MD_REF_EMBED ? "embed" : "link", ref->target);
				continue;
			}
			if (r->kind != MD_TARGET_NOTE || r->id == i || ref->kind != MD_REF_LINK)
				continue;
			t = &s->notes[r->id];
			if (t->nbacklinks && t->backlinks[t->nbacklinks - 1] == i)
				continue; /* several links from one note count once */
			ALLOC_GROW(t->backlinks, t->nbacklinks + 1, t->abacklinks);
			t->backlinks[t->nbacklinks++] = i;
		}
	}
	for (i = 0; i < s->nnotes; i++)
		sort_backlinks(s, s->notes[i].backlinks, s->notes[i].nbacklinks);
}

static const char *asset_type(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (dot && strcmp(dot, ".css") == 0)
		return "text/css; charset=utf-8";
	if (dot && strcmp(dot, ".js") == 0)
		return "text/javascript; charset=utf-8";
	return vault_content_type(name);
}

/* Theme files as immutable pages at content-hashed URLs. */
static void load_assets(struct site *s)
{
	const struct theme_file *f;

	for (f = theme_files; f->name && s->nassets < 8; f++) {
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
		p->mtime = 0;
		page_set_body(p, xmemdup(f->data, f->len), f->len, 1);
		s->assets[s->nassets] = p;
		s->asset_urls[s->nassets] = make_href(s, url.ptr);
		if (strcmp(f->name, "quire.css") == 0)
			s->layout.css_url = s->asset_urls[s->nassets];
		else if (strcmp(f->name, "quire.js") == 0)
			s->layout.js_url = s->asset_urls[s->nassets];
		else if (strcmp(f->name, "favicon.svg") == 0)
			s->layout.icon_url = s->asset_urls[s->nassets];
		s->nassets++;
		buf_release(&url);
	}
}

static void setup_layout(struct site *s)
{
	struct buf b = BUF_INIT;

	s->layout.title = s->cfg.title;
	s->layout.language = s->cfg.language;
	s->layout.url_prefix = s->cfg.url_prefix;
	s->layout.base_url = s->cfg.base_url;
	s->layout.css_url = s->layout.js_url = s->layout.icon_url = "";
	buf_addf(&b, "%s/_quire/tree.json", s->cfg.url_prefix);
	s->asset_urls[7] = buf_detach(&b, NULL);
	s->layout.tree_url = s->asset_urls[7];
	s->layout.search_url = NULL;
	s->layout.feed_url = NULL;
	load_assets(s);
}

struct site *site_load(const char *path, const struct site_options *opt)
{
	struct site *s = xcalloc(1, sizeof(*s));
	struct vault_scan scan = VAULT_SCAN_INIT;
	struct parse_ctx pc;
	size_t i, nn = 0, nf = 0;
	double t0 = now_ms();

	s->vault = xstrdup(path);
	diag_list_init(&s->diags);
	s->threads = opt && opt->threads > 0 ? opt->threads : parallel_cpus();
	if (config_load(&s->cfg, path, &s->diags) < 0)
		goto fail;
	if (opt && opt->base_url && config_set_base_url(&s->cfg, opt->base_url) < 0) {
		log_error("--base-url must be an absolute http(s) URL: %s", opt->base_url);
		goto fail;
	}
	if (vault_scan(path, &s->cfg, &scan, &s->diags) < 0)
		goto fail;
	setup_layout(s);

	for (i = 0; i < scan.n; i++)
		scan.files[i].is_note ? nn++ : nf++;
	s->notes = xcalloc(nn + 1, sizeof(*s->notes));
	s->files = xcalloc(nf + 1, sizeof(*s->files));
	s->note_paths = xcalloc(nn + 1, sizeof(*s->note_paths));
	s->file_paths = xcalloc(nf + 1, sizeof(*s->file_paths));
	pc.s = s;
	pc.scan = &scan;
	pc.note_files = xcalloc(nn + 1, sizeof(size_t));
	for (i = 0; i < scan.n; i++) {
		const struct vault_file *f = &scan.files[i];
		if (f->is_note) {
			pc.note_files[s->nnotes++] = i;
		} else {
			struct site_file *sf = &s->files[s->nfiles++];
			sf->path = xstrdup(f->path);
			sf->disk = xstrdup(f->disk);
			sf->size = f->size;
			sf->mtime = f->mtime;
		}
	}

	parallel_for(s->nnotes, s->threads, parse_one, &pc);
	free(pc.note_files);

	for (i = 0; i < s->nnotes; i++) {
		struct site_note *n = &s->notes[i];
		n->published = note_is_published(&n->note, s->cfg.publish == PUBLISH_EXPLICIT);
		s->npublished += (size_t)n->published;
		s->note_paths[i] = n->note.path;
	}
	for (i = 0; i < s->nfiles; i++) {
		s->files[i].url = vault_file_url(s->files[i].path);
		s->files[i].href = make_href(s, s->files[i].url);
		s->file_paths[i] = s->files[i].path;
	}
	assign_urls(s);
	s->resolver = resolver_new(s->note_paths, s->nnotes, s->file_paths, s->nfiles);

	parallel_for(s->nnotes, s->threads, render_body_one, s);
	link_pass(s);
	parallel_for(s->nnotes, s->threads, render_page_one, s);

	vault_scan_release(&scan);
	s->load_ms = now_ms() - t0;
	return s;
fail:
	vault_scan_release(&scan);
	site_free(s);
	return NULL;
}

void site_free(struct site *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nnotes; i++) {
		struct site_note *n = &s->notes[i];
		note_release(&n->note);
		free(n->disk);
		free(n->url);
		free(n->href);
		md_result_release(&n->md);
		free(n->refs);
		free(n->backlinks);
		page_unref(n->page);
	}
	for (i = 0; i < s->nfiles; i++) {
		free(s->files[i].path);
		free(s->files[i].disk);
		free(s->files[i].url);
		free(s->files[i].href);
	}
	for (i = 0; i < 8; i++) {
		free(s->asset_urls[i]);
		page_unref(s->assets[i]);
	}
	free(s->notes);
	free(s->files);
	free(s->note_paths);
	free(s->file_paths);
	resolver_free(s->resolver);
	config_release(&s->cfg);
	diag_list_release(&s->diags);
	free(s->vault);
	free(s);
}

size_t site_published_notes(const struct site *s)
{
	return s->npublished;
}

/* --- snapshot ------------------------------------------------------------ */

struct tree_node {
	char *name;                /* folder name, or NULL for a note */
	size_t note;               /* for a note */
	struct tree_node **kids;
	size_t nkids, akids;
};

static struct tree_node *tree_child(struct tree_node *dir, const char *name, size_t len)
{
	struct tree_node *k;
	size_t i;

	for (i = 0; i < dir->nkids; i++) {
		k = dir->kids[i];
		if (k->name && strlen(k->name) == len && strncmp(k->name, name, len) == 0)
			return k;
	}
	k = xcalloc(1, sizeof(*k));
	k->name = xstrndup(name, len);
	ALLOC_GROW(dir->kids, dir->nkids + 1, dir->akids);
	dir->kids[dir->nkids++] = k;
	return k;
}

static const struct site *tree_site;

static const char *tree_label(const struct tree_node *t)
{
	return t->name ? t->name : tree_site->notes[t->note].note.title;
}

static int cmp_tree(const void *a, const void *b)
{
	const struct tree_node *x = *(struct tree_node *const *)a, *y = *(struct tree_node *const *)b;
	int c;

	if (!x->name != !y->name)
		return x->name ? -1 : 1; /* folders first */
	c = strcasecmp(tree_label(x), tree_label(y));
	return c ? c : strcmp(tree_label(x), tree_label(y));
}

static void tree_free(struct tree_node *t)
{
	size_t i;
	for (i = 0; i < t->nkids; i++)
		tree_free(t->kids[i]);
	free(t->kids);
	free(t->name);
	free(t);
}

/* Emits a folder's children; folder nesting is bounded by the scan's depth limit. */
static void tree_emit(const struct site *s, struct tree_node *dir, const char *dirpath,
		      struct buf *out)
{
	size_t i;

	qsort(dir->kids, dir->nkids, sizeof(*dir->kids), cmp_tree);
	buf_adds(out, "[");
	for (i = 0; i < dir->nkids; i++) {
		struct tree_node *k = dir->kids[i];
		if (i)
			buf_addc(out, ',');
		if (k->name) {
			struct buf sub = BUF_INIT;
			size_t j;
			const char *url = NULL;

			buf_addf(&sub, "%s%s%s", dirpath, dirpath[0] ? "/" : "", k->name);
			/* the folder's URL is its index note's, when it has one */
			for (j = 0; j < k->nkids; j++) {
				const struct tree_node *c = k->kids[j];
				const char *base;
				if (c->name)
					continue;
				base = strrchr(s->notes[c->note].note.path, '/');
				base = base ? base + 1 : s->notes[c->note].note.path;
				if (strcasecmp(base, "index.md") == 0)
					url = s->notes[c->note].href;
			}
			buf_adds(out, "{\"name\":\"");
			buf_adds_json(out, k->name);
			buf_adds(out, "\",\"url\":");
			if (url) {
				buf_addc(out, '"');
				buf_adds_json(out, url);
				buf_addc(out, '"');
			} else {
				buf_adds(out, "null");
			}
			buf_adds(out, ",\"children\":");
			tree_emit(s, k, sub.ptr, out);
			buf_addc(out, '}');
			buf_release(&sub);
		} else {
			const struct site_note *n = &s->notes[k->note];
			buf_adds(out, "{\"title\":\"");
			buf_adds_json(out, n->note.title);
			buf_adds(out, "\",\"url\":\"");
			buf_adds_json(out, n->href);
			buf_adds(out, "\"}");
		}
	}
	buf_adds(out, "]");
}

/* /_quire/tree.json: the folder tree of published notes, for the explorer. */
static struct page *tree_page(const struct site *s)
{
	struct tree_node *root = xcalloc(1, sizeof(*root));
	struct buf out = BUF_INIT;
	struct page *p;
	size_t i;
	char *bytes;
	size_t len;

	for (i = 0; i < s->nnotes; i++) {
		const char *path = s->notes[i].note.path, *slash;
		struct tree_node *dir = root, *leaf;

		if (!s->notes[i].published)
			continue;
		while ((slash = strchr(path, '/'))) {
			dir = tree_child(dir, path, (size_t)(slash - path));
			path = slash + 1;
		}
		leaf = xcalloc(1, sizeof(*leaf));
		leaf->note = i;
		ALLOC_GROW(dir->kids, dir->nkids + 1, dir->akids);
		dir->kids[dir->nkids++] = leaf;
	}
	tree_site = s;
	buf_adds(&out, "{\"title\":\"");
	buf_adds_json(&out, s->cfg.title);
	buf_adds(&out, "\",\"url\":\"");
	buf_adds_json(&out, s->cfg.url_prefix);
	buf_adds(&out, "/\",\"children\":");
	tree_emit(s, root, "", &out);
	buf_adds(&out, "}\n");
	tree_free(root);

	p = page_new(PAGE_GENERATED, "/_quire/tree.json", strlen("/_quire/tree.json"));
	p->content_type = "application/json";
	bytes = buf_detach(&out, &len);
	page_set_body(p, bytes, len, 1);
	return p;
}

static struct page *text_page(enum page_kind kind, const char *path, const char *type,
			      struct buf *content)
{
	struct page *p = page_new(kind, path, strlen(path));
	size_t len;
	char *bytes = buf_detach(content, &len);

	p->content_type = type;
	page_set_body(p, bytes, len, 1);
	return p;
}

static void put_redirect(struct site *s, struct snapshot *snap, const char *from,
			 const struct site_note *to)
{
	struct page *p;

	if (snapshot_get(snap, from, strlen(from))) {
		diag_add(&s->diags, DIAG_WARNING, to->note.path, 0,
			 "alias URL %s is already a page; no redirect made", from);
		return;
	}
	p = page_new(PAGE_REDIRECT, from, strlen(from));
	p->location = xstrdup(to->href);
	p->mtime = to->note.mtime;
	snapshot_put(snap, p);
}

struct snapshot *site_snapshot(struct site *s, uint64_t version)
{
	struct snapshot *snap = snapshot_new(version);
	struct buf b = BUF_INIT;
	size_t i, k;

	for (i = 0; i < s->nnotes; i++) {
		if (s->notes[i].published && s->notes[i].page)
			snapshot_put(snap, page_ref(s->notes[i].page));
	}
	snap->nnotes = s->npublished;
	for (i = 0; i < s->nfiles; i++) {
		const struct site_file *f = &s->files[i];
		struct page *p;
		char id[64];

		if (!f->published)
			continue;
		if (snapshot_get(snap, f->url, strlen(f->url))) {
			diag_add(&s->diags, DIAG_WARNING, f->path, 0,
				 "URL %s is taken by a note; attachment not served", f->url);
			continue;
		}
		p = page_new(PAGE_FILE, f->url, strlen(f->url));
		buf_reset(&b);
		buf_addf(&b, "%s/%s", s->vault, f->disk);
		p->file = buf_detach(&b, NULL);
		p->file_size = f->size;
		p->mtime = f->mtime;
		p->content_type = vault_content_type(f->path);
		/* the bytes stay on disk: size and mtime identify this version, as nginx does */
		snprintf(id, sizeof(id), "%s|%lld|%lld", f->path, (long long)f->size,
			 (long long)f->mtime);
		hash_etag(id, strlen(id), p->etag);
		snapshot_put(snap, p);
		snap->nattachments++;
	}
	for (i = 0; i < s->nassets; i++)
		snapshot_put(snap, page_ref(s->assets[i]));
	snapshot_put(snap, tree_page(s));

	buf_reset(&b);
	if (s->cfg.robots) {
		buf_adds(&b, s->cfg.robots);
		if (b.len && b.ptr[b.len - 1] != '\n')
			buf_addc(&b, '\n');
	} else {
		buf_adds(&b, "User-agent: *\nAllow: /\n");
	}
	snapshot_put(snap, text_page(PAGE_GENERATED, "/robots.txt", "text/plain; charset=utf-8", &b));

	layout_not_found_page(&s->layout, &b);
	snapshot_set_not_found(snap, text_page(PAGE_NOT_FOUND, "/404.html",
					       "text/html; charset=utf-8", &b));

	/* aliases: each becomes a redirect in the note's folder */
	for (i = 0; i < s->nnotes; i++) {
		const struct site_note *n = &s->notes[i];
		if (!n->published)
			continue;
		for (k = 0; k < n->note.aliases.n; k++) {
			const char *slash = strrchr(n->note.path, '/');
			struct buf from = BUF_INIT;
			if (slash)
				buf_add(&from, n->note.path, (size_t)(slash - n->note.path + 1));
			buf_adds(&from, n->note.aliases.v[k]);
			buf_adds(&from, ".md");
			{
				char *url = vault_note_url(from.ptr, NULL);
				if (strcmp(url, n->url) != 0)
					put_redirect(s, snap, url, n);
				free(url);
			}
			buf_release(&from);
		}
	}
	buf_release(&b);
	snap->load_ms = s->load_ms;
	return snap;
}
