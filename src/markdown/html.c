/*
 * html.c: stage 4 of md_render(), the HTML writer.
 *
 * Modelled on cmark-gfm's html.c, so that plain CommonMark comes out byte
 * for byte as cmark-gfm renders it: render_html() walks the annotated tree
 * with cmark_iter (no recursion) and render_node() hands each node to the
 * helper for its kind. On the way it records what md_result reports besides
 * the HTML: heading and ^block offsets, the plain text for search and the
 * summary (the first paragraph outside callouts and footnotes), inline
 * tags. Text nodes that md_annotate.c split are written from their segments;
 * wikilinks, embeds and Markdown links and images are links.c's. Raw HTML
 * goes out through sanitize.c.
 *
 * The one private cmark-gfm header, node.h, is read for footnotes only: the
 * public API has no getter for a definition's label or a reference's ordinal,
 * and cmark-gfm's own footnote markup needs both.
 */
#include "markdown/markdown.h"
#include "markdown/highlight.h"
#include "markdown/markdown-int.h"
#include "markdown/sanitize.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm/node.h>

#define SUMMARY_MAX 300

/* ---- escaping ---- */

void md_add_href(struct buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	static const char safe[] = "-_.+!*(),%#@?=;:/$~";
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (is_alpha((char)ch) || is_digit((char)ch) || (ch && strchr(safe, ch))) {
			buf_addc(b, ch);
		} else if (ch == '&') {
			buf_adds(b, "&amp;");
		} else if (ch == '\'') {
			buf_adds(b, "&#x27;");
		} else {
			char e[3] = { '%', hex[ch >> 4], hex[ch & 15] };

			buf_add(b, e, 3);
		}
	}
}

/*
 * Raw HTML, placeholders back to their source, through the sanitizer
 * (sanitize.h), which makes GFM's tagfilter needless. A block that keeps
 * nothing but white space (a comment, a <script>) leaves no blank line.
 */
static void add_raw_html(struct ctx *c, const char *s, size_t len, int block)
{
	struct buf *o = c->out;
	size_t start = o->len, i;

	if (pre_has_placeholder(&c->pre, s, len)) {
		buf_reset(&c->tmp);
		md_pre_expand(&c->pre, &c->tmp, s, len, PH_RAW);
		s = c->tmp.ptr;
		len = c->tmp.len;
	}
	sanitize_html(o, s, len);
	if (!block)
		return;
	for (i = start; i < o->len && is_space(o->ptr[i]); i++)
		;
	if (i == o->len)
		buf_setlen(o, start);
}

void md_add_html_exp(struct ctx *c, struct buf *b, const char *s, size_t len, enum ph_mode mode)
{
	if (pre_has_placeholder(&c->pre, s, len)) {
		struct buf t = BUF_INIT;

		md_pre_expand(&c->pre, &t, s, len, mode);
		buf_add_html(b, t.ptr, t.len);
		buf_release(&t);
		return;
	}
	buf_add_html(b, s, len);
}

/* ---- plain text for search and summaries ---- */

static void text_add(struct ctx *c, const char *s, size_t len, enum ph_mode mode)
{
	md_pre_expand(&c->pre, &c->res->text, s, len, mode);
}

static void text_break(struct ctx *c, char sep)
{
	struct buf *t = &c->res->text;
	char last;

	if (!t->len)
		return;
	last = t->ptr[t->len - 1];
	if (last == '\n')
		return;
	if (last == ' ' || last == '\t') {
		if (sep == '\n')
			t->ptr[t->len - 1] = '\n';
		return;
	}
	buf_addc(t, sep);
}

/* Whitespace collapsed, cut at a word boundary to at most SUMMARY_MAX bytes. */
static char *make_summary(const char *s, size_t len)
{
	struct buf b = BUF_INIT;
	size_t i, cut;

	for (i = 0; i < len; i++) {
		if (is_space(s[i])) {
			if (b.len && b.ptr[b.len - 1] != ' ')
				buf_addc(&b, ' ');
			continue;
		}
		buf_addc(&b, s[i]);
	}
	while (b.len && b.ptr[b.len - 1] == ' ')
		b.len--;
	if (!b.len) {
		buf_release(&b);
		return NULL;
	}
	if (b.len > SUMMARY_MAX) {
		cut = SUMMARY_MAX - 3; /* room for the ellipsis */
		for (i = cut; i > 0 && b.ptr[i] != ' '; i--)
			;
		if (i > 0) {
			cut = i;
		} else {
			while (cut > 0 && ((unsigned char)b.ptr[cut] & 0xC0) == 0x80)
				cut--;
		}
		while (cut > 0 && b.ptr[cut - 1] == ' ')
			cut--;
		b.len = cut;
		buf_adds(&b, "\xE2\x80\xA6");
	}
	buf_setlen(&b, b.len);
	return md_detach_exact(&b);
}

/* ---- text, math, tags ---- */

static void math_html(struct ctx *c, size_t ix, int block)
{
	const struct math *m = &c->pre.math[ix];
	const char *tex = c->pre.tex.ptr + m->tex;
	struct buf *o = c->out;

	c->res->features |= MD_HAS_MATH;
	if (block)
		buf_adds(o, "<div class=\"math math-display\">\\[");
	else if (m->display)
		buf_adds(o, "<span class=\"math math-display\">\\[");
	else
		buf_adds(o, "<span class=\"math math-inline\">\\(");
	buf_add_html(o, tex, m->texlen);
	if (block)
		buf_adds(o, "\\]</div>\n");
	else if (m->display)
		buf_adds(o, "\\]</span>");
	else
		buf_adds(o, "\\)</span>");
}

static int count_lines(const char *s, size_t len)
{
	int n = 0;
	const char *q;

	while ((q = memchr(s, '\n', len))) {
		n++;
		len -= (size_t)(q + 1 - s);
		s = q + 1;
	}
	return n;
}

/*
 * Text as HTML, placeholders as math. Display math that ran across lines
 * is on one line for cmark: math_lines counts what it swallowed, for the
 * line numbers of references after it on the same line.
 */
static void emit_text(struct ctx *c, const char *s, size_t len)
{
	struct buf *o = c->out;

	text_add(c, s, len, PH_TEX);
	while (len) {
		const char *q = c->pre.out.len ? memchr(s, PH_OPEN, len) : NULL;
		size_t ix, n;
		char kind;

		if (!q) {
			buf_add_html(o, s, len);
			return;
		}
		buf_add_html(o, s, (size_t)(q - s));
		len -= (size_t)(q - s);
		s = q;
		n = md_pre_placeholder(&c->pre, s, len, &kind, &ix);
		if (!n) {
			s++;
			len--;
			continue;
		}
		s += n;
		len -= n;
		if (kind == 'E') {
			buf_addc(o, (int)ix);
			continue;
		}
		math_html(c, ix, 0);
		c->math_lines += count_lines(c->pre.s + c->pre.math[ix].raw, c->pre.math[ix].rawlen);
	}
}

static void render_tag(struct ctx *c, const char *s, size_t len)
{
	struct md_result *res = c->res;
	struct buf *o = c->out;
	char *low = utf8_lower(s, len), *key = utf8_fold(s, len);

	if (!md_sset_has(&c->tags, key)) {
		md_sset_add(&c->tags, key);
		ALLOC_GROW(res->tags, res->ntags + 1, c->atags);
		res->tags[res->ntags++] = xstrndup(s, len);
	}
	buf_adds(o, "<a class=\"tag\" href=\"");
	buf_adds_html(o, c->opt->url_prefix ? c->opt->url_prefix : "");
	buf_adds(o, "/tags/");
	buf_add_urlpath(o, low, strlen(low));
	buf_adds(o, "\">#");
	buf_add_html(o, s, len);
	buf_adds(o, "</a>");
	buf_addc(&res->text, '#');
	buf_add(&res->text, s, len);
	free(low);
	free(key);
}

static void render_segs(struct ctx *c, const struct ann *a)
{
	size_t i;

	for (i = a->seg; i < a->seg + a->nseg; i++) {
		const struct seg *g = &c->segs.v[i];

		switch (g->kind) {
		case S_TEXT:
			if (!c->embed_block)
				emit_text(c, g->s, g->len);
			break;
		case S_LOPEN:
			md_link_open(c, g->link);
			break;
		case S_LCLOSE:
			md_link_close(c, g->link);
			break;
		case S_EMBED:
			render_embed(c, g->link);
			break;
		case S_MOPEN:
			buf_adds(c->out, "<mark>");
			break;
		case S_MCLOSE:
			buf_adds(c->out, "</mark>");
			break;
		case S_TAG:
			render_tag(c, g->s, g->len);
			break;
		case S_NODE:
			break;
		}
	}
}

/* ---- blocks ---- */

/* Writes tag; with a ^block id adds it and starts the block's record. */
static void tag_open(struct ctx *c, struct ann *a, const char *tag)
{
	struct md_result *res = c->res;
	struct buf *o = c->out;
	struct md_block *b;

	if (!a || !(a->flags & A_ID)) {
		buf_adds(o, tag);
		return;
	}
	ALLOC_GROW(res->blocks, res->nblocks + 1, c->ablocks);
	b = &res->blocks[res->nblocks];
	b->id = xstrndup(a->id, a->idlen);
	b->start = b->end = o->len;
	b->list = 0;
	a->block = res->nblocks++;
	buf_adds(o, tag);
	buf_adds(o, " id=\"^");
	buf_add_html(o, a->id, a->idlen);
	buf_addc(o, '"');
}

static void tag_close(struct ctx *c, struct ann *a, const char *tag)
{
	buf_adds(c->out, tag);
	if (a && (a->flags & A_ID))
		c->res->blocks[a->block].end = c->out->len;
}

static char *unique_id(struct ctx *c, const char *text)
{
	char *base = md_heading_id(text);

	if (!md_sset_has(&c->ids, base)) {
		md_sset_add(&c->ids, base);
		return base;
	}
	for (;;) {
		/* base's counter: "intro-1", "intro-2" without trying them all again */
		size_t n = ++md_sset_add(&c->ids, base)->next;

		buf_reset(&c->tmp);
		buf_addf(&c->tmp, "%s-%zu", base, n);
		if (!md_sset_has(&c->ids, c->tmp.ptr)) {
			md_sset_add(&c->ids, c->tmp.ptr);
			free(base);
			return xstrdup(c->tmp.ptr);
		}
	}
}

static void heading_open(struct ctx *c, cmark_node *n)
{
	struct md_result *res = c->res;
	struct buf b = BUF_INIT;
	struct md_heading *h;
	const char *s;
	size_t len;
	int level = cmark_node_get_heading_level(n);

	md_plain_of(c, n, &b);
	s = b.ptr;
	len = b.len;
	trim(&s, &len);
	ALLOC_GROW(res->headings, res->nheadings + 1, c->aheadings);
	h = &res->headings[res->nheadings++];
	h->level = level;
	h->text = md_pre_expand_dup(&c->pre, s, len, PH_TEX);
	h->id = unique_id(c, h->text);
	h->start = c->out->len;
	h->end = 0;
	buf_addf(c->out, "<h%d id=\"", level);
	buf_adds_html(c->out, h->id);
	buf_adds(c->out, "\">");
	buf_release(&b);
}

static void close_title(struct ctx *c, cmark_node *quote)
{
	struct ann *q = ann_of(quote);

	buf_adds(c->out, q && q->fold ? "</summary>\n" : "</div>\n");
	if (q && q->has_content)
		buf_adds(c->out, "<div class=\"callout-content\">\n");
	text_break(c, '\n');
}

static void callout(struct ctx *c, struct ann *a, int entering)
{
	struct buf *o = c->out;
	char *type;
	size_t i;

	if (!entering) {
		cr(o);
		if (a->has_content)
			buf_adds(o, "</div>\n");
		tag_close(c, a, a->fold ? "</details>" : "</div>");
		buf_addc(o, '\n');
		c->callouts--;
		return;
	}
	c->callouts++;
	type = utf8_lower(a->ctype, a->ctypelen);
	cr(o);
	buf_reset(&c->tmp);
	buf_adds(&c->tmp, a->fold ? "<details" : "<div");
	buf_adds(&c->tmp, " class=\"callout\" data-callout=\"");
	buf_adds_html(&c->tmp, type);
	buf_addc(&c->tmp, '"');
	if (a->fold == '+')
		buf_adds(&c->tmp, " open");
	tag_open(c, a, c->tmp.ptr);
	buf_adds(o, a->fold ? ">\n<summary class=\"callout-title\">" : ">\n<div class=\"callout-title\">");
	if (!a->has_title) {
		/* the type capitalised: "Note", "Warning" */
		for (i = 0; type[i]; i++)
			if (!i && type[i] >= 'a' && type[i] <= 'z')
				buf_addc(o, type[i] - 32);
			else
				buf_add_html(o, type + i, 1);
	}
	free(type);
}

/* A text node, last of its siblings, of nothing but one $$display$$: its index, or NONE. */
static size_t math_alone(struct ctx *c, cmark_node *t)
{
	const char *s;
	size_t len, ix;
	char kind;

	if (!c->pre.nmath || !is_type(t, CMARK_NODE_TEXT) || cmark_node_next(t))
		return NONE;
	s = literal(t, &len);
	trim(&s, &len);
	if (md_pre_placeholder(&c->pre, s, len, &kind, &ix) != len || kind != 'M' ||
	    !c->pre.math[ix].display)
		return NONE;
	return ix;
}

/*
 * The line break after a callout's title: the content starts. Display math
 * right under the title gets a block of its own, as in any other paragraph.
 */
static void title_end(struct ctx *c, cmark_node *br)
{
	cmark_node *next = cmark_node_next(br);
	size_t ix = math_alone(c, next);

	md_inline_html_close(c); /* what the title's raw HTML opened ends with the title */
	close_title(c, cmark_node_parent(cmark_node_parent(br)));
	if (has_flag(cmark_node_parent(br), A_EMBEDS)) {
		c->embed_block = 1;
		c->title_closed = 2;
		return;
	}
	if (ix == NONE) {
		/* the rest of the paragraph, which an embed of a note may split */
		size_t at = c->out->len;
		buf_adds(c->out, "<p>");
		md_para_begin(c, at, 0);
		c->title_closed = 1;
		return;
	}
	math_html(c, ix, 1);
	text_add(c, c->pre.tex.ptr + c->pre.math[ix].tex, c->pre.math[ix].texlen, PH_TEX);
	md_ann_get(c, next)->flags |= A_SKIP;
	c->title_closed = 2;
}

static int tight_paragraph(cmark_node *n)
{
	cmark_node *gp = cmark_node_parent(cmark_node_parent(n));

	return is_type(gp, CMARK_NODE_LIST) && cmark_node_get_list_tight(gp);
}

static void footnote_backref(struct ctx *c, cmark_node *def)
{
	struct buf *o = c->out;
	int i;

	if (c->written_fn >= c->footnote_ix)
		return;
	c->written_fn = c->footnote_ix;
	buf_adds(o, "<a href=\"#fnref-");
	md_add_href(o, (const char *)def->as.literal.data, (size_t)def->as.literal.len);
	buf_adds(o, "\" class=\"footnote-backref\" data-footnote-backref "
		    "aria-label=\"Back to content\">\xE2\x86\xA9</a>");
	for (i = 2; i <= def->footnote.def_count; i++) {
		buf_adds(o, " <a href=\"#fnref-");
		md_add_href(o, (const char *)def->as.literal.data, (size_t)def->as.literal.len);
		buf_addf(o, "-%d\" class=\"footnote-backref\" data-footnote-backref "
			    "aria-label=\"Back to content\">\xE2\x86\xA9<sup class=\"footnote-ref\">"
			    "%d</sup></a>", i, i);
	}
}

static void footnote_ref(struct ctx *c, cmark_node *n)
{
	struct buf *o = c->out;
	cmark_node *def = n->parent_footnote_def;
	const char *label = def ? (const char *)def->as.literal.data : "";
	size_t labellen = def ? (size_t)def->as.literal.len : 0;

	buf_adds(o, "<sup class=\"footnote-ref\"><a href=\"#fn-");
	md_add_href(o, label, labellen);
	buf_adds(o, "\" id=\"fnref-");
	md_add_href(o, label, labellen);
	if (n->footnote.ref_ix > 1)
		buf_addf(o, "-%d", n->footnote.ref_ix);
	buf_adds(o, "\" data-footnote-ref>");
	buf_add(o, (const char *)n->as.literal.data, (size_t)n->as.literal.len);
	buf_adds(o, "</a></sup>");
}

static void paragraph(struct ctx *c, cmark_iter *it, cmark_node *n, struct ann *a, int entering)
{
	struct md_result *res = c->res;
	struct buf *o = c->out;
	size_t ix;

	if (entering) {
		c->block_line = cmark_node_get_start_line(n);
		c->breaks = c->math_lines = 0;
		if (a && (a->flags & A_CALLHEAD)) {
			c->title_closed = 0;
			return;
		}
		ix = math_alone(c, cmark_node_first_child(n));
		if (ix != NONE) {
			cr(o);
			math_html(c, ix, 1);
			text_add(c, c->pre.tex.ptr + c->pre.math[ix].tex, c->pre.math[ix].texlen, PH_TEX);
			text_break(c, '\n');
			cmark_iter_reset(it, n, CMARK_EVENT_EXIT);
			return;
		}
		if (!res->summary && !c->summary_node && !c->callouts && !c->footnotes) {
			c->summary_node = n;
			c->summary_from = res->text.len;
		}
		if (a && (a->flags & A_EMBEDS)) {
			c->embed_block = 1;
			if (a->flags & A_ID) {
				/* "^id" after a line of embeds: the block they make */
				cr(o);
				tag_open(c, a, "<div class=\"embeds\"");
				buf_addc(o, '>');
			}
			return;
		}
		if (!tight_paragraph(n)) {
			size_t at;
			cr(o);
			at = o->len;
			tag_open(c, a, "<p");
			buf_addc(o, '>');
			md_para_begin(c, at, 0);
			c->para_id = a && (a->flags & A_ID);
		}
		return;
	}
	if (a && (a->flags & A_CALLHEAD)) {
		/* the title is still open when no line followed it */
		if (c->title_closed == 1 && md_para_empty(c))
			buf_setlen(o, c->para_tag); /* nothing after the last embed: no empty <p> */
		else if (c->title_closed == 1)
			buf_adds(o, "</p>\n");
		else if (!c->title_closed)
			close_title(c, cmark_node_parent(n));
		c->title_closed = 0;
		c->embed_block = 0;
		c->in_para = 0;
	} else if (a && (a->flags & A_EMBEDS)) {
		c->embed_block = 0;
		if (a->flags & A_ID) {
			tag_close(c, a, "</div>");
			buf_addc(o, '\n');
		}
	} else if (!tight_paragraph(n)) {
		cmark_node *parent = cmark_node_parent(n);

		if (is_type(parent, CMARK_NODE_FOOTNOTE_DEFINITION) && !cmark_node_next(n)) {
			buf_addc(o, ' ');
			footnote_backref(c, parent);
		}
		if (md_para_empty(c)) {
			/* nothing after the last embed or raw block: no empty <p> */
			buf_setlen(o, c->para_tag);
			tag_close(c, a, "");
			if (o->len && o->ptr[o->len - 1] != '\n')
				buf_addc(o, '\n');
		} else {
			tag_close(c, a, "</p>");
			buf_addc(o, '\n');
		}
		c->in_para = 0;
	}
	text_break(c, '\n');
	if (c->summary_node == n) {
		res->summary = make_summary(res->text.ptr + c->summary_from,
					    res->text.len - c->summary_from);
		c->summary_node = NULL;
	}
}

static void code_block(struct ctx *c, cmark_node *n, struct ann *a)
{
	struct buf *o = c->out;
	const char *info = cmark_node_get_fence_info(n), *lit;
	char *exp = NULL;
	size_t infolen, first = 0, len;

	if (!info)
		info = "";
	infolen = strlen(info);
	if (pre_has_placeholder(&c->pre, info, infolen)) {
		exp = md_pre_expand_dup(&c->pre, info, infolen, PH_URL);
		info = exp;
		infolen = strlen(info);
	}
	while (first < infolen && !is_space(info[first]))
		first++;
	lit = literal(n, &len);
	cr(o);
	if (first == 7 && !memcmp(info, "mermaid", 7)) {
		struct buf raw = BUF_INIT;

		c->res->features |= MD_HAS_DIAGRAM;
		tag_open(c, a, "<pre class=\"mermaid\"");
		buf_addc(o, '>');
		md_add_html_exp(c, o, lit, len, PH_RAW);
		tag_close(c, a, "</pre>");
		md_pre_expand(&c->pre, &raw, lit, len, PH_RAW);
		render_diagram_links(c, raw.ptr ? raw.ptr : "", raw.len);
		buf_release(&raw);
	} else {
		int lang = c->opt && c->opt->highlight ? hl_find(info, first) : -1;

		tag_open(c, a, "<pre");
		if (!infolen) {
			buf_adds(o, "><code>");
		} else {
			buf_adds(o, "><code class=\"language-");
			buf_add_html(o, info, first);
			buf_adds(o, "\">");
		}
		if (lang >= 0) {
			struct buf raw = BUF_INIT;
			md_pre_expand(&c->pre, &raw, lit, len, PH_RAW);
			hl_write(o, lang, raw.ptr ? raw.ptr : "", raw.len);
			buf_release(&raw);
		} else {
			md_add_html_exp(c, o, lit, len, PH_RAW);
		}
		tag_close(c, a, "</code></pre>");
	}
	buf_addc(o, '\n');
	free(exp);
}

static void table_part(struct ctx *c, cmark_node *n, struct ann *a, const char *type,
		       int entering)
{
	struct buf *o = c->out;

	if (!strcmp(type, "table")) {
		if (entering) {
			cr(o);
			tag_open(c, a, "<table");
			buf_addc(o, '>');
			c->need_tbody = 0;
			c->aligns = cmark_gfm_extensions_get_table_alignments(n);
			c->ncols = cmark_gfm_extensions_get_table_columns(n);
		} else {
			if (c->need_tbody) {
				cr(o);
				buf_adds(o, "</tbody>");
				cr(o);
			}
			c->need_tbody = 0;
			cr(o);
			tag_close(c, a, "</table>");
			cr(o);
		}
	} else if (!strcmp(type, "table_header") || !strcmp(type, "table_row")) {
		int header = cmark_gfm_extensions_get_table_row_is_header(n);

		if (entering) {
			cr(o);
			if (header) {
				c->in_thead = 1;
				buf_adds(o, "<thead>");
				cr(o);
			} else if (!c->need_tbody) {
				buf_adds(o, "<tbody>");
				cr(o);
				c->need_tbody = 1;
			}
			buf_adds(o, "<tr>");
			c->col = 0;
		} else {
			cr(o);
			buf_adds(o, "</tr>");
			if (header) {
				cr(o);
				buf_adds(o, "</thead>");
				c->in_thead = 0;
			}
			text_break(c, '\n');
		}
	} else if (!strcmp(type, "table_cell")) {
		if (entering) {
			uint8_t al = c->aligns && c->col < c->ncols ? c->aligns[c->col] : 0;

			cr(o);
			buf_adds(o, c->in_thead ? "<th" : "<td");
			if (al == 'l')
				buf_adds(o, " align=\"left\"");
			else if (al == 'c')
				buf_adds(o, " align=\"center\"");
			else if (al == 'r')
				buf_adds(o, " align=\"right\"");
			buf_addc(o, '>');
			c->block_line = cmark_node_get_start_line(n);
			c->breaks = c->math_lines = 0;
		} else {
			buf_adds(o, c->in_thead ? "</th>" : "</td>");
			c->col++;
			text_break(c, ' ');
		}
	} else if (!strcmp(type, "strikethrough")) {
		buf_adds(o, entering ? "<del>" : "</del>");
	}
}

/* Inside an image: its alt text, as cmark-gfm writes it. */
static void render_plain(struct ctx *c, cmark_node *n)
{
	const char *s;
	size_t len;

	switch (cmark_node_get_type(n)) {
	case CMARK_NODE_TEXT:
		s = literal(n, &len);
		md_add_html_exp(c, c->out, s, len, PH_URL);
		break;
	case CMARK_NODE_CODE:
	case CMARK_NODE_HTML_INLINE:
		s = literal(n, &len);
		md_add_html_exp(c, c->out, s, len, PH_RAW);
		break;
	case CMARK_NODE_LINEBREAK:
	case CMARK_NODE_SOFTBREAK:
		buf_addc(c->out, ' ');
		break;
	default:
		break;
	}
}

/* ---- the walk: one helper per kind of node ---- */

static void block_quote(struct ctx *c, struct ann *a, int entering)
{
	struct buf *o = c->out;

	if (a && (a->flags & A_CALLOUT)) {
		callout(c, a, entering);
	} else if (entering) {
		cr(o);
		tag_open(c, a, "<blockquote");
		buf_adds(o, ">\n");
	} else {
		cr(o);
		tag_close(c, a, "</blockquote>");
		buf_addc(o, '\n');
	}
}

static void list(struct ctx *c, cmark_node *n, struct ann *a, int entering)
{
	struct buf *o = c->out;

	if (entering) {
		int start = cmark_node_get_list_start(n);

		cr(o);
		if (cmark_node_get_list_type(n) == CMARK_BULLET_LIST) {
			tag_open(c, a, "<ul");
		} else if (start == 1) {
			tag_open(c, a, "<ol");
		} else {
			char tag[32];

			snprintf(tag, sizeof(tag), "<ol start=\"%d\"", start);
			tag_open(c, a, tag);
		}
		buf_adds(o, ">\n");
	} else {
		tag_close(c, a, cmark_node_get_list_type(n) == CMARK_BULLET_LIST ? "</ul>" :
			  "</ol>");
		buf_addc(o, '\n');
	}
}

static void list_item(struct ctx *c, cmark_node *n, struct ann *a, int entering)
{
	struct buf *o = c->out;

	if (entering) {
		cr(o);
		tag_open(c, a, "<li");
		if (a && (a->flags & A_ID))
			c->res->blocks[a->block].list =
				cmark_node_get_list_type(cmark_node_parent(n)) == CMARK_BULLET_LIST ? 'u'
												   : 'o';
		if (a && (a->flags & A_TASK)) {
			/* Obsidian's markup: data-task is "" for an open task */
			int done = !(a->tasklen == 1 && a->task[0] == ' ');

			buf_adds(o, done ? " class=\"task-list-item is-checked\" data-task=\"" :
					   " class=\"task-list-item\" data-task=\"");
			if (done)
				buf_add_html(o, a->task, a->tasklen);
			/* named for assistive technology, which says its state */
			buf_adds(o, "\"><input type=\"checkbox\" class=\"task-list-item-checkbox\""
				    " aria-label=\"Task\"");
			buf_adds(o, done ? " checked=\"\" disabled=\"\" /> " : " disabled=\"\" /> ");
		} else {
			buf_addc(o, '>');
		}
	} else {
		tag_close(c, a, "</li>");
		buf_addc(o, '\n');
		text_break(c, '\n');
	}
}

static void heading(struct ctx *c, cmark_node *n, int entering)
{
	struct buf *o = c->out;

	if (entering) {
		cr(o);
		c->block_line = cmark_node_get_start_line(n);
		c->breaks = c->math_lines = 0;
		heading_open(c, n);
	} else {
		buf_addf(o, "</h%d>\n", cmark_node_get_heading_level(n));
		text_break(c, '\n');
	}
}

static void html_block(struct ctx *c, cmark_node *n)
{
	const char *s;
	size_t len;

	cr(c->out);
	s = literal(n, &len);
	add_raw_html(c, s, len, 1);
	cr(c->out);
}

static void text_node(struct ctx *c, cmark_node *n, struct ann *a)
{
	const char *s;
	size_t len;

	if (a && (a->flags & A_SEGS)) {
		render_segs(c, a);
	} else if (!c->embed_block) {
		s = literal(n, &len);
		emit_text(c, s, len);
	}
}

/* A soft or a hard line break; the one after a callout's title ends the title. */
static void line_break(struct ctx *c, cmark_node *n, struct ann *a, int soft)
{
	c->breaks++;
	c->math_lines = 0;
	if (a && (a->flags & A_TITLE_END)) {
		title_end(c, n);
		return;
	}
	if (c->embed_block && soft)
		; /* between embeds rendered without <p>: nothing */
	else if (c->in_para && md_para_empty(c))
		; /* right after a note's embed, which ended the line: no empty line */
	else if (!soft || c->opt->hard_breaks)
		buf_adds(c->out, "<br />\n");
	else
		buf_addc(c->out, '\n');
	text_break(c, ' ');
}

static void code_span(struct ctx *c, cmark_node *n)
{
	struct buf *o = c->out;
	const char *s;
	size_t len;

	s = literal(n, &len);
	buf_adds(o, "<code>");
	md_add_html_exp(c, o, s, len, PH_RAW);
	buf_adds(o, "</code>");
	text_add(c, s, len, PH_RAW);
}

static void footnote_def(struct ctx *c, cmark_node *n, int entering)
{
	struct buf *o = c->out;

	if (entering) {
		if (c->footnote_ix == 0)
			buf_adds(o, "<section class=\"footnotes\" data-footnotes>\n<ol>\n");
		c->footnote_ix++;
		c->footnotes++;
		buf_adds(o, "<li id=\"fn-");
		md_add_href(o, (const char *)n->as.literal.data, (size_t)n->as.literal.len);
		buf_adds(o, "\">\n");
	} else {
		if (c->written_fn < c->footnote_ix) {
			footnote_backref(c, n);
			buf_addc(o, '\n');
		}
		buf_adds(o, "</li>\n");
		c->footnotes--;
	}
}

static void render_node(struct ctx *c, cmark_iter *it, cmark_node *n, int entering)
{
	struct buf *o = c->out;
	struct ann *a = ann_of(n);
	const char *s;
	size_t len;

	switch (cmark_node_get_type(n)) {
	case CMARK_NODE_DOCUMENT:
		break;
	case CMARK_NODE_BLOCK_QUOTE:
		block_quote(c, a, entering);
		break;
	case CMARK_NODE_LIST:
		list(c, n, a, entering);
		break;
	case CMARK_NODE_ITEM:
		list_item(c, n, a, entering);
		break;
	case CMARK_NODE_HEADING:
		heading(c, n, entering);
		break;
	case CMARK_NODE_CODE_BLOCK:
		code_block(c, n, a);
		break;
	case CMARK_NODE_HTML_BLOCK:
		html_block(c, n);
		break;
	case CMARK_NODE_THEMATIC_BREAK:
		cr(o);
		buf_adds(o, "<hr />\n");
		break;
	case CMARK_NODE_PARAGRAPH:
		paragraph(c, it, n, a, entering);
		break;
	case CMARK_NODE_TEXT:
		text_node(c, n, a);
		break;
	case CMARK_NODE_SOFTBREAK:
		line_break(c, n, a, 1);
		break;
	case CMARK_NODE_LINEBREAK:
		line_break(c, n, a, 0);
		break;
	case CMARK_NODE_CODE:
		code_span(c, n);
		break;
	case CMARK_NODE_HTML_INLINE: {
		size_t from = o->len;

		s = literal(n, &len);
		add_raw_html(c, s, len, 0);
		md_inline_html(c, n, from);
		break;
	}
	case CMARK_NODE_EMPH:
		buf_adds(o, entering ? "<em>" : "</em>");
		break;
	case CMARK_NODE_STRONG:
		buf_adds(o, entering ? "<strong>" : "</strong>");
		break;
	case CMARK_NODE_LINK:
		render_link(c, n, entering);
		break;
	case CMARK_NODE_IMAGE:
		render_image(c, n, entering);
		break;
	case CMARK_NODE_FOOTNOTE_DEFINITION:
		footnote_def(c, n, entering);
		break;
	case CMARK_NODE_FOOTNOTE_REFERENCE:
		if (entering)
			footnote_ref(c, n);
		break;
	default:
		table_part(c, n, a, cmark_node_get_type_string(n), entering);
		break;
	}
}

void render_html(struct ctx *c, cmark_node *doc)
{
	cmark_iter *it = cmark_iter_new(doc);
	cmark_event_type ev;

	while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
		cmark_node *n = cmark_iter_get_node(it);

		if (c->plain == n) {
			c->plain = NULL;
		} else if (c->plain) {
			if (ev == CMARK_EVENT_ENTER)
				render_plain(c, n);
			continue;
		}
		if (ev == CMARK_EVENT_ENTER && has_flag(n, A_SKIP)) {
			cmark_iter_reset(it, n, CMARK_EVENT_EXIT);
			continue;
		}
		if (ev == CMARK_EVENT_EXIT && c->nopen_tags &&
		    (cmark_node_get_type(n) & CMARK_NODE_TYPE_MASK) == CMARK_NODE_TYPE_BLOCK)
			md_inline_html_close(c);
		render_node(c, it, n, ev == CMARK_EVENT_ENTER);
	}
	cmark_iter_free(it);
	if (c->footnote_ix)
		buf_adds(c->out, "</ol>\n</section>\n");
}
