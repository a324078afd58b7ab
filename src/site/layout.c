/*
 * layout.c: the HTML document around a note, a listing and the 404 page.
 *
 * What: every page is the same shell (head, site header, explorer slot,
 * main, optional table of contents, footer) filled with what the page
 * itself determines. The shell is written straight into the caller's
 * buffer with buf_add*; every string from a note or the configuration goes
 * through buf_add_html, except body_html and intro_html, which are trusted
 * fragments from markdown.c.
 *
 * How the theme fits in: the stylesheet, script and icon come from
 * content-hashed URLs that browsers cache forever, so the bytes repeated in
 * every page stay small. The only inline code is a one-line script that
 * marks the document as scripted and applies the remembered colour scheme
 * before the first paint (no flash of the wrong theme). The script finds
 * what it needs in data attributes on <body>: data-prefix (the site's path
 * prefix, for /api/search) and data-tree (the explorer's JSON).
 *
 * Rejected:
 *  - Inlining the explorer tree, tag cloud or recent notes: they grow with
 *    the vault, and one edit would change every page (invariant 2).
 *  - Inline SVG icons in the header: a few hundred bytes on every page;
 *    the stylesheet draws them with CSS masks instead.
 *  - A template language read at run time: one more parser, one more way
 *    for a load to fail, for a shell that changes with the code anyway.
 *  - Ids that a heading could also get (a heading "Content" gets
 *    id="content"): the shell's few ids carry a "quire-" prefix.
 *  - Localising dates in C: the <time> holds the ISO date, which the
 *    script may format for the reader's locale.
 *  - The listing of the page's folder in every page, for readers without
 *    JavaScript: a note created in a folder would change every page of
 *    that folder. The breadcrumbs lead there instead, one click away.
 */
#include "site/layout.h"
#include "markdown/markdown.h"
#include "util/hash.h"
#include "util/unicode.h"
#include "vault/vault.h"

#include <stdlib.h>
#include <string.h>

/* Before the first paint: no flash of the other colour scheme. Hashed for the CSP. */
static const char theme_script[] =
	"(function(d){d.classList.add(\"js\");try{var t=localStorage."
	"getItem(\"quire-theme\");if(t===\"dark\"||t===\"light\")d.dataset.theme=t}"
	"catch(e){}})(document.documentElement)";

char *layout_csp(const char *frame_src)
{
	struct buf b = BUF_INIT;
	char hash[SHA256_B64_SIZE];

	hash_sha256_base64(theme_script, sizeof(theme_script) - 1, hash);
	buf_addf(&b,
		 "default-src 'self'; script-src 'self' 'sha256-%s'; "
		 "style-src 'self' 'unsafe-inline'; img-src 'self' data: http: https:; "
		 "media-src 'self' http: https:; frame-src %s; object-src 'none'; "
		 "base-uri 'none'; form-action 'self'; frame-ancestors 'self'",
		 hash, frame_src && frame_src[0] ? frame_src : "'none'");
	return buf_detach(&b, NULL);
}

/* Headings deeper than this stay out of the toc: the aside stays short. */
#define TOC_MAX_LEVEL 4

enum page_kind {
	PAGE_NOTE,
	PAGE_LISTING,
	PAGE_NOT_FOUND,
};

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

static void add_html(struct buf *out, const char *s)
{
	if (s)
		buf_adds_html(out, s);
}

/*
 * Appends the origin of an absolute URL ("https://example.com/docs" gives
 * "https://example.com"): page URLs already carry the path prefix, so
 * base_url's own path must not be repeated in front of them.
 */
static void add_origin(struct buf *out, const char *base_url)
{
	const char *p = strstr(base_url, "://");
	size_t len;

	p = p ? p + 3 : base_url;
	len = (size_t)(p - base_url) + strcspn(p, "/?#");
	buf_add_html(out, base_url, len);
}

static void add_absolute(struct buf *out, const struct layout_site *site, const char *url)
{
	add_origin(out, site->base_url);
	add_html(out, url);
}

static int has_base(const struct layout_site *site)
{
	return site->base_url && site->base_url[0];
}

static void add_home_url(struct buf *out, const struct layout_site *site)
{
	add_html(out, site->url_prefix);
	buf_addc(out, '/');
}

/* Whether url (with prefix) is the home page's. */
static int is_home(const struct layout_site *site, const char *url)
{
	size_t n = strlen(site->url_prefix);

	return url && strncmp(url, site->url_prefix, n) == 0 && strcmp(url + n, "/") == 0;
}

static void deferred_script(struct buf *out, const char *url)
{
	if (!url)
		return;
	buf_adds(out, "<script src=\"");
	add_html(out, url);
	buf_adds(out, "\" defer></script>\n");
}

/*
 * The document head. description and url may be NULL; url (root-relative,
 * with prefix) gives the canonical link when the site has a base_url.
 */
static void head(struct buf *out, const struct layout_site *site, enum page_kind kind,
		 const char *title, const char *description, const char *url, unsigned features)
{
	const char *lang = site->language && site->language[0] ? site->language : "en";

	buf_adds(out, "<!DOCTYPE html>\n<html lang=\"");
	buf_adds_html(out, lang);
	buf_adds(out, "\">\n<head>\n<meta charset=\"utf-8\">\n"
		      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		      "<title>");
	add_html(out, title);
	if (!title || strcmp(title, site->title) != 0) {
		if (title && title[0])
			buf_adds(out, " \xc2\xb7 ");
		buf_adds_html(out, site->title);
	}
	buf_adds(out, "</title>\n");
	if (description && description[0]) {
		buf_adds(out, "<meta name=\"description\" content=\"");
		buf_adds_html(out, description);
		buf_adds(out, "\">\n");
	}
	if (kind == PAGE_NOT_FOUND)
		buf_adds(out, "<meta name=\"robots\" content=\"noindex\">\n");
	if (url && has_base(site)) {
		buf_adds(out, "<link rel=\"canonical\" href=\"");
		add_absolute(out, site, url);
		buf_adds(out, "\">\n");
	}
	if (kind != PAGE_NOT_FOUND) {
		buf_adds(out, "<meta property=\"og:title\" content=\"");
		add_html(out, title);
		buf_adds(out, "\">\n<meta property=\"og:site_name\" content=\"");
		buf_adds_html(out, site->title);
		buf_adds(out, kind == PAGE_NOTE
				  ? "\">\n<meta property=\"og:type\" content=\"article\">\n"
				  : "\">\n<meta property=\"og:type\" content=\"website\">\n");
		if (description && description[0]) {
			buf_adds(out, "<meta property=\"og:description\" content=\"");
			buf_adds_html(out, description);
			buf_adds(out, "\">\n");
		}
		if (url && has_base(site)) {
			buf_adds(out, "<meta property=\"og:url\" content=\"");
			add_absolute(out, site, url);
			buf_adds(out, "\">\n");
		}
	}
	buf_adds(out, "<meta name=\"color-scheme\" content=\"light dark\">\n"
		      "<link rel=\"icon\" href=\"");
	add_html(out, site->icon_url);
	buf_adds(out, "\">\n<link rel=\"stylesheet\" href=\"");
	add_html(out, site->css_url);
	buf_adds(out, "\">\n");
	if (site->feed_url) {
		buf_adds(out, "<link rel=\"alternate\" type=\"application/rss+xml\" title=\"");
		buf_adds_html(out, site->title);
		buf_adds(out, "\" href=\"");
		buf_adds_html(out, site->feed_url);
		buf_adds(out, "\">\n");
	}
	if ((features & MD_HAS_MATH) && site->katex_css_url) {
		buf_adds(out, "<link rel=\"stylesheet\" href=\"");
		add_html(out, site->katex_css_url);
		buf_adds(out, "\">\n");
	}
	if (site->site_css_url) {
		/* the vault's own publish.css, last: it overrides the theme */
		buf_adds(out, "<link rel=\"stylesheet\" href=\"");
		add_html(out, site->site_css_url);
		buf_adds(out, "\">\n");
	}
	buf_adds(out, "<script>");
	buf_adds(out, theme_script);
	buf_adds(out, "</script>\n");
	/*
	 * Deferred scripts run in document order: quire.js finds KaTeX loaded
	 * and typesets before DOMContentLoaded, so math in the first screen
	 * is painted once, typeset. Mermaid is not here (note_body_open()).
	 */
	if (features & MD_HAS_MATH)
		deferred_script(out, site->katex_js_url);
	deferred_script(out, site->js_url);
	buf_adds(out, "</head>\n");
}

/* The search box; value, when set, is the query it shows. */
static void search_box(struct buf *out, const struct layout_site *site, const char *cls,
		       const char *value)
{
	buf_adds(out, "<form class=\"");
	buf_adds(out, cls);
	buf_adds(out, "\" role=\"search\" method=\"get\" action=\"");
	buf_adds_html(out, site->search_url);
	buf_adds(out, "\"><input class=\"search-input\" type=\"search\" name=\"q\" ");
	if (value) {
		buf_adds(out, "value=\"");
		buf_adds_html(out, value);
		buf_adds(out, "\" ");
	}
	buf_adds(out, "placeholder=\"Search\" aria-label=\"Search\" autocomplete=\"off\" "
		      "spellcheck=\"false\"></form>\n");
}

static void search_form(struct buf *out, const struct layout_site *site, const char *cls)
{
	search_box(out, site, cls, NULL);
}

void layout_search_form(struct buf *out, const struct layout_site *site, const char *query)
{
	search_box(out, site, "search search-large search-page-form", query);
}

/* <body> up to the opening of the grid that holds explorer, main and toc. */
static void body_open(struct buf *out, const struct layout_site *site, int has_toc,
		      const char *folder)
{
	buf_adds(out, "<body data-prefix=\"");
	add_html(out, site->url_prefix);
	buf_addc(out, '"');
	if (site->tree_url) {
		buf_adds(out, " data-tree=\"");
		buf_adds_html(out, site->tree_url);
		buf_addc(out, '"');
		if (folder && folder[0]) {
			buf_adds(out, " data-folder=\"");
			buf_adds_html(out, folder);
			buf_addc(out, '"');
		}
	}
	if (site->graph_url) {
		buf_adds(out, " data-graph=\"");
		buf_adds_html(out, site->graph_url);
		buf_addc(out, '"');
	}
	buf_adds(out, ">\n<a class=\"skip-link\" href=\"#quire-main\">Skip to content</a>\n"
		      "<header class=\"site-header\"><div class=\"site-header-inner\">\n"
		      "<button class=\"icon-button nav-toggle\" type=\"button\" "
		      "aria-controls=\"quire-explorer\" aria-expanded=\"false\" "
		      "aria-label=\"Site navigation\"></button>\n"
		      "<a class=\"site-title\" href=\"");
	add_home_url(out, site);
	buf_adds(out, "\">");
	buf_adds_html(out, site->title);
	buf_adds(out, "</a>\n");
	if (site->search_url)
		search_form(out, site, "search");
	buf_adds(out, "<button class=\"icon-button theme-toggle\" type=\"button\" "
		      "aria-label=\"Toggle dark mode\"></button>\n"
		      "</div></header>\n");
	buf_adds(out, has_toc ? "<div class=\"page has-toc\">\n" : "<div class=\"page\">\n");
	buf_adds(out,
		 "<nav class=\"explorer\" id=\"quire-explorer\" aria-label=\"Explorer\"></nav>\n"
		 "<main id=\"quire-main\" tabindex=\"-1\">\n");
}

static void body_close(struct buf *out, const struct layout_site *site)
{
	buf_adds(out, "<footer class=\"site-footer\"><a href=\"");
	add_home_url(out, site);
	buf_adds(out, "\">");
	buf_adds_html(out, site->title);
	buf_adds(out, "</a>");
	if (site->graph_url) {
		buf_adds(out, " \xc2\xb7 <a href=\"");
		buf_adds_html(out, site->graph_url);
		buf_adds(out, "\">Graph</a>");
	}
	if (site->feed_url) {
		buf_adds(out, " \xc2\xb7 <a href=\"");
		buf_adds_html(out, site->feed_url);
		buf_adds(out, "\">RSS</a>");
	}
	buf_adds(out, " \xc2\xb7 Published with quire</footer>\n</body>\n</html>\n");
}

/*
 * Home, then each folder of folder[0, len) (linked to its listing, at
 * vault_folder_url(), as derived.c places it), then the page itself, not
 * linked.
 */
static void breadcrumbs(struct buf *out, const struct layout_site *site, const char *folder,
			size_t len, const char *title)
{
	size_t at = 0;

	buf_adds(out, "<nav class=\"breadcrumbs\" aria-label=\"Breadcrumbs\"><ol>\n<li><a href=\"");
	add_home_url(out, site);
	buf_adds(out, "\">Home</a></li>\n");
	while (at < len) {
		const char *slash = memchr(folder + at, '/', len - at);
		size_t end = slash ? (size_t)(slash - folder) : len;
		char *url = vault_folder_url(folder, end);

		buf_adds(out, "<li><a href=\"");
		add_html(out, site->url_prefix);
		buf_add_urlpath(out, url, strlen(url));
		buf_adds(out, "\">");
		buf_add_html(out, folder + at, end - at);
		buf_adds(out, "</a></li>\n");
		free(url);
		at = end + 1;
	}
	buf_adds(out, "<li aria-current=\"page\">");
	add_html(out, title);
	buf_adds(out, "</li>\n</ol></nav>\n");
}

static void add_date(struct buf *out, const char *label, const char *date)
{
	buf_adds(out, "<span class=\"note-date\">");
	buf_adds(out, label);
	buf_adds(out, " <time datetime=\"");
	buf_adds_html(out, date);
	buf_adds(out, "\">");
	buf_adds_html(out, date);
	buf_adds(out, "</time></span>");
}

static void note_header(struct buf *out, const struct layout_site *site,
			const struct layout_note *note)
{
	size_t i;

	buf_adds(out, "<header class=\"note-header\">\n");
	if (note->folder && !is_home(site, note->url))
		breadcrumbs(out, site, note->folder, strlen(note->folder), note->title);
	buf_adds(out, "<h1 class=\"note-title\">");
	add_html(out, note->title);
	buf_adds(out, "</h1>\n");
	if (note->created || note->updated) {
		buf_adds(out, "<p class=\"note-meta\">");
		if (note->created)
			add_date(out, "Created", note->created);
		/* The same day twice says nothing. */
		if (note->updated && !(note->created && strcmp(note->created, note->updated) == 0))
			add_date(out, "Updated", note->updated);
		buf_adds(out, "</p>\n");
	}
	if (note->ntags) {
		buf_adds(out, "<ul class=\"note-tags\" aria-label=\"Tags\">");
		for (i = 0; i < note->ntags; i++) {
			const char *tag = or_empty(note->tags[i]);
			/* tag pages are at the lowercase tag (derived.c), as inline tags link */
			char *low = utf8_lower(tag, strlen(tag));
			buf_adds(out, "<li><a class=\"tag\" href=\"");
			add_html(out, site->url_prefix);
			buf_adds(out, "/tags/");
			/* Percent-encoding leaves nothing for HTML to escape. */
			buf_add_urlpath(out, low, strlen(low));
			buf_adds(out, "\">#");
			buf_adds_html(out, tag);
			buf_adds(out, "</a></li>");
			free(low);
		}
		buf_adds(out, "</ul>\n");
	}
	buf_adds(out, "</header>\n");
}

static void backlinks(struct buf *out, const struct layout_note *note)
{
	size_t i;

	if (!note->nbacklinks)
		return;
	buf_adds(out, "<section class=\"backlinks\" aria-label=\"Links to this page\">\n"
		      "<h2>Links to this page</h2>\n<ul>\n");
	for (i = 0; i < note->nbacklinks; i++) {
		buf_adds(out, "<li><a class=\"internal\" href=\"");
		add_html(out, note->backlinks[i].url);
		buf_adds(out, "\">");
		add_html(out, note->backlinks[i].title);
		buf_adds(out, "</a></li>\n");
	}
	buf_adds(out, "</ul>\n</section>\n");
}

/* Shallowest level shown in the toc, or 0 when nothing would be shown. */
static int toc_top(const struct layout_note *note)
{
	int top = 0;
	size_t i;

	for (i = 0; i < note->ntoc; i++) {
		int level = note->toc[i].level;
		if (level >= 1 && level <= TOC_MAX_LEVEL && (!top || level < top))
			top = level;
	}
	return top;
}

/*
 * A flat list, each entry indented by its depth below the shallowest
 * heading shown: nesting lists would need repairs for skipped levels
 * (an h4 straight under an h2), and the flat form reads the same.
 */
static void toc_entries(struct buf *out, const struct layout_note *note, int top)
{
	size_t i;

	buf_adds(out, "<ul>\n");
	for (i = 0; i < note->ntoc; i++) {
		const struct layout_toc_entry *e = &note->toc[i];
		if (e->level < 1 || e->level > TOC_MAX_LEVEL)
			continue;
		buf_addf(out, "<li class=\"toc-%d\"><a href=\"#", e->level - top);
		add_html(out, e->id);
		buf_adds(out, "\">");
		add_html(out, e->text);
		buf_adds(out, "</a></li>\n");
	}
	buf_adds(out, "</ul>\n");
}

/*
 * Beside the note on a wide screen: the same entries as the folded one,
 * copied from out[from, to).
 */
static void toc(struct buf *out, size_t from, size_t to)
{
	buf_adds(out, "<aside class=\"toc toc-side\" aria-label=\"On this page\">\n"
		      "<h2 class=\"toc-title\">On this page</h2>\n");
	buf_grow(out, to - from); /* out->ptr stays put while it copies from itself */
	buf_add(out, out->ptr + from, to - from);
	buf_adds(out, "</aside>\n");
}

/*
 * Before the note's text, folded, on a narrow screen (the stylesheet shows
 * one of the two): at the end of a long page it was out of reach. Sets
 * *from and *to around its entries, for toc().
 */
static void toc_folded(struct buf *out, const struct layout_note *note, int top, size_t *from,
		       size_t *to)
{
	buf_adds(out, "<details class=\"toc toc-folded\">\n"
		      "<summary class=\"toc-title\">On this page</summary>\n");
	*from = out->len;
	toc_entries(out, note, top);
	*to = out->len;
	buf_adds(out, "</details>\n");
}

/*
 * The note's body. A note with a diagram names Mermaid's script in
 * data-diagram-script: diagrams.js loads it once a diagram comes near the
 * viewport, after DOMContentLoaded. As a deferred script in the head, its
 * 1.6 MB (gzipped) delayed DOMContentLoaded on every page with a diagram,
 * even one that nobody scrolls to. The attribute is in the main column,
 * so a page replaced in place brings its own.
 */
static void note_body_open(struct buf *out, const struct layout_site *site,
			   const struct layout_note *note)
{
	buf_adds(out, note->title_repeated ? "<div class=\"note-body title-repeated\""
					   : "<div class=\"note-body\"");
	if ((note->features & MD_HAS_DIAGRAM) && site->mermaid_js_url) {
		buf_adds(out, " data-diagram-script=\"");
		add_html(out, site->mermaid_js_url);
		buf_addc(out, '"');
	}
	buf_adds(out, ">\n");
}

size_t layout_note_page(const struct layout_site *site, const struct layout_note *note,
			struct buf *out)
{
	int top = toc_top(note);
	size_t i, at, toc_from = 0, toc_to = 0;

	buf_grow(out, note->body_len + 4096);
	head(out, site, PAGE_NOTE, note->title, note->description, note->url, note->features);
	body_open(out, site, top != 0, note->folder);
	buf_adds(out, "<article class=\"note");
	for (i = 0; i < note->ncssclasses; i++) {
		if (!note->cssclasses[i] || !note->cssclasses[i][0])
			continue;
		buf_addc(out, ' ');
		buf_adds_html(out, note->cssclasses[i]);
	}
	buf_adds(out, "\">\n");
	note_header(out, site, note);
	if (top)
		toc_folded(out, note, top, &toc_from, &toc_to);
	note_body_open(out, site, note);
	at = out->len;
	if (note->body_html)
		buf_add(out, note->body_html, note->body_len);
	buf_adds(out, "\n</div>\n");
	backlinks(out, note);
	buf_adds(out, "</article>\n</main>\n");
	if (top)
		toc(out, toc_from, toc_to);
	buf_adds(out, "</div>\n");
	body_close(out, site);
	return at;
}

void layout_listing_page(const struct layout_site *site, const char *folder, const char *title,
			 const char *intro_html, const struct layout_item *items, size_t nitems,
			 struct buf *out)
{
	size_t i;

	head(out, site, PAGE_LISTING, title, NULL, NULL, 0);
	body_open(out, site, 0, folder);
	buf_adds(out, "<article class=\"listing\">\n<header class=\"note-header\">\n");
	if (!folder) {
		breadcrumbs(out, site, "", 0, title);
	} else if (folder[0]) {
		/* a folder's listing: the folders above it, then its own name */
		const char *slash = strrchr(folder, '/');
		breadcrumbs(out, site, folder, slash ? (size_t)(slash - folder) : 0, title);
	}
	buf_adds(out, "<h1 class=\"note-title\">");
	add_html(out, title);
	buf_adds(out, "</h1>\n</header>\n");
	if (intro_html && intro_html[0]) {
		buf_adds(out, "<div class=\"note-body listing-intro\">\n");
		buf_adds(out, intro_html);
		buf_adds(out, "\n</div>\n");
	}
	if (!nitems && !(intro_html && intro_html[0]))
		buf_adds(out, "<p class=\"listing-empty\">No pages yet.</p>\n");
	else if (nitems)
		buf_adds(out, "<ul class=\"listing-items\">\n");
	for (i = 0; i < nitems; i++) {
		const struct layout_item *it = &items[i];
		buf_adds(out, "<li><a class=\"listing-link\" href=\"");
		add_html(out, it->url);
		buf_adds(out, "\">");
		add_html(out, it->title);
		buf_adds(out, "</a>");
		if (it->date && it->date[0]) {
			buf_adds(out, " <time datetime=\"");
			buf_adds_html(out, it->date);
			buf_adds(out, "\">");
			buf_adds_html(out, it->date);
			buf_adds(out, "</time>");
		}
		if (it->summary && it->summary[0]) {
			buf_adds(out, "<p class=\"listing-summary\">");
			buf_adds_html(out, it->summary);
			buf_adds(out, "</p>");
		}
		buf_adds(out, "</li>\n");
	}
	if (nitems)
		buf_adds(out, "</ul>\n");
	buf_adds(out, "</article>\n</main>\n</div>\n");
	body_close(out, site);
}

void layout_graph_page(const struct layout_site *site, struct buf *out)
{
	head(out, site, PAGE_LISTING, "Graph", NULL, NULL, 0);
	body_open(out, site, 0, NULL);
	buf_adds(out, "<article class=\"graph-page\">\n<header class=\"note-header\">\n");
	breadcrumbs(out, site, "", 0, "Graph");
	buf_adds(out, "<h1 class=\"note-title\">Graph</h1>\n</header>\n"
		      "<div class=\"graph graph-global\" data-src=\"");
	buf_adds_html(out, site->graph_data_url);
	buf_adds(out, "\">\n<p class=\"graph-status\" role=\"status\">"
		      "Every page and the links between them. The graph is drawn by the "
		      "page's script; without it, the explorer and the ");
	buf_adds(out, "<a href=\"");
	add_html(out, site->url_prefix);
	buf_adds(out, "/tags/\">tags</a> list every page.</p>\n</div>\n"
		      "</article>\n</main>\n</div>\n");
	body_close(out, site);
}

void layout_not_found_page(const struct layout_site *site, struct buf *out)
{
	head(out, site, PAGE_NOT_FOUND, "Page not found", NULL, NULL, 0);
	body_open(out, site, 0, NULL);
	buf_adds(out, "<article class=\"not-found\">\n<header class=\"note-header\">\n"
		      "<p class=\"not-found-code\">404</p>\n"
		      "<h1 class=\"note-title\">Page not found</h1>\n</header>\n"
		      "<div class=\"note-body\">\n<p>There is no page at this address. "
		      "It may have been moved, renamed or unpublished.</p>\n");
	if (site->search_url) {
		buf_adds(out, "<p>Try searching for it:</p>\n");
		search_form(out, site, "search search-large");
	}
	buf_adds(out, "<p><a class=\"button\" href=\"");
	add_home_url(out, site);
	buf_adds(out, "\">Go to the home page</a></p>\n</div>\n</article>\n</main>\n</div>\n");
	body_close(out, site);
}
