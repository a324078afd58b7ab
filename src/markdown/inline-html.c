/*
 * inline-html.c: raw HTML among a block's inlines, kept valid (stage 4).
 *
 * cmark-gfm hands inline raw HTML over one tag at a time ("<kbd>", text,
 * "</kbd>"), and the sanitizer (sanitize.c) writes each tag back as the
 * note had it. What a note writes is seldom balanced, and some of it a
 * browser reads otherwise than it looks: "<p/>" between the lines of a
 * table cell (Obsidian's help vault) opens a paragraph; "<div>" in a
 * paragraph ends it. So each tag, once written, is weighed here against
 * what is open, and the output says what a browser would build, without a
 * parse error:
 *
 *  - an end tag closes what it matches and what is open inside it, or is
 *    dropped when nothing open matches;
 *  - a start tag that ends an open <p> (closes_p(), the standard's "close
 *    a p element") closes it first: a raw <p> the note opened, or our own
 *    paragraph, which opens again after the element ends ("<hr>" at once);
 *    the note's own "<p>" simply becomes our paragraph's next part;
 *  - such a tag inside an inline element (emphasis, a link) or a
 *    callout's title has no valid place and is left out, its content kept; so is <li>, <dd>, <dt>
 *    outside a raw list of its kind (a browser would close our <li>), and
 *    any start tag past the 16 we keep track of;
 *  - what is still open when the block ends is closed there.
 *
 * Rejected: foster parenting (text a note writes inside a raw <table>),
 * which a browser moves before the table with a parse error; quire keeps
 * the note's order.
 */
#include "markdown/markdown.h"
#include "markdown/markdown-int.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

enum { OPEN_REOPEN = 1, OPEN_DROPPED = 2 };

static int listed(const char *name, const char *const *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(name, v[i]) == 0)
			return 1;
	return 0;
}

static int is_void_element(const char *name)
{
	static const char *const v[] = { "area", "base", "br", "col", "embed", "hr", "img",
					 "input", "link", "meta", "source", "track", "wbr" };

	return listed(name, v, sizeof(v) / sizeof(*v));
}

/* A start tag that ends an open <p> in the "in body" insertion mode. */
static int closes_p(const char *name)
{
	static const char *const v[] = {
		"address", "article", "aside", "blockquote", "center", "details", "dialog",
		"dir", "div", "dl", "dd", "dt", "fieldset", "figcaption", "figure", "footer",
		"form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "li",
		"listing", "main", "menu", "nav", "ol", "p", "pre", "search", "section",
		"summary", "table", "ul", "xmp"
	};

	return listed(name, v, sizeof(v) / sizeof(*v));
}

/* The innermost open raw element among names, or -1. */
static int open_index(const struct ctx *c, const char *const *names, size_t n)
{
	int i;

	for (i = c->nopen_tags - 1; i >= 0; i--)
		if (listed(c->open_tags[i], names, n))
			return i;
	return -1;
}

/* Our paragraph goes on: a <p> that, left empty, the paragraph's end takes back. */
static void reopen_para(struct ctx *c)
{
	size_t at = c->out->len;

	buf_adds(c->out, "<p>");
	md_para_begin(c, at, 1);
}

static void close_open_tags(struct ctx *c, int i)
{
	while (c->nopen_tags > i) {
		int k = --c->nopen_tags;
		if (!(c->open_flags[k] & OPEN_DROPPED))
			buf_addf(c->out, "</%s>", c->open_tags[k]);
		if (c->open_flags[k] & OPEN_REOPEN)
			reopen_para(c);
	}
}

void md_inline_html_close(struct ctx *c)
{
	close_open_tags(c, 0);
}

static void push(struct ctx *c, const char *name, size_t n, unsigned flags)
{
	memcpy(c->open_tags[c->nopen_tags], name, n + 1);
	c->open_flags[c->nopen_tags++] = (unsigned char)flags;
}

/*
 * A start tag that ends a <p>, written at o[from, o->len) in a block:
 * closes the <p> it ends before it. Returns 1 when that was our own
 * paragraph, 0 when a raw one or none.
 */
static int end_para_before(struct ctx *c, size_t from, cmark_node *parent)
{
	static const char *const p[] = { "p" };
	struct buf *o = c->out;
	int i = open_index(c, p, 1), ours = 0;
	char *tag;

	if (i < 0 && !(c->in_para && is_type(parent, CMARK_NODE_PARAGRAPH)))
		return 0;
	tag = xstrndup(o->ptr + from, o->len - from);
	buf_setlen(o, from);
	if (i >= 0) {
		close_open_tags(c, i);
	} else {
		close_open_tags(c, 0); /* what the note opened in our paragraph ends with it */
		if (md_para_empty(c))
			buf_setlen(o, c->para_tag); /* an empty part, between two blocks */
		else
			buf_adds(o, "</p>");
		c->in_para = 0;
		ours = 1;
	}
	buf_adds(o, tag);
	free(tag);
	return ours;
}

/* Whether a start tag has no valid place here: see the file's comment. */
static int misplaced(const struct ctx *c, const char *name, cmark_node *parent)
{
	static const char *const lists[] = { "ul", "ol", "menu" }, *const dl[] = { "dl" };

	if (closes_p(name) &&
	    ((cmark_node_get_type(parent) & CMARK_NODE_TYPE_MASK) != CMARK_NODE_TYPE_BLOCK ||
	     (has_flag(parent, A_CALLHEAD) && !c->title_closed)))
		return 1; /* in an inline element, or in a callout's title */
	if (!strcmp(name, "li"))
		return open_index(c, lists, 3) < 0;
	if (!strcmp(name, "dd") || !strcmp(name, "dt"))
		return open_index(c, dl, 1) < 0;
	return 0;
}

static void start_tag(struct ctx *c, cmark_node *n, size_t from, const char *name, size_t len,
		      int is_void)
{
	struct buf *o = c->out;
	cmark_node *parent = cmark_node_parent(n);
	size_t taglen = o->len - from;
	int ours;

	if ((!is_void && c->nopen_tags == MD_OPEN_TAGS_MAX) || misplaced(c, name, parent)) {
		buf_setlen(o, from);
		if (!is_void && c->nopen_tags < MD_OPEN_TAGS_MAX)
			push(c, name, len, OPEN_DROPPED); /* its end tag is left out too */
		return;
	}
	ours = closes_p(name) && end_para_before(c, from, parent);
	if (ours && !strcmp(name, "p")) {
		/* the note's <p ...> is our paragraph's next part: our </p> ends it */
		md_para_begin(c, o->len - taglen, 1);
	} else if (ours && is_void) {
		reopen_para(c); /* "<hr>" */
	} else if (!is_void) {
		push(c, name, len, ours ? OPEN_REOPEN : 0);
	}
}

void md_inline_html(struct ctx *c, cmark_node *n, size_t from)
{
	struct buf *o = c->out;
	const char *t = o->ptr + from;
	size_t len = o->len - from, k, nlen = 0;
	char name[12];
	int end, i;

	if (len < 3 || t[0] != '<' || t[len - 1] != '>' || memchr(t + 1, '<', len - 1))
		return; /* text, a comment, or more than one tag */
	end = t[1] == '/';
	for (k = 1 + (size_t)end; k < len && nlen < sizeof(name) - 1 &&
				  (is_alpha(t[k]) || (nlen && is_digit(t[k]))); k++)
		name[nlen++] = (char)(t[k] | (is_alpha(t[k]) ? 0x20 : 0));
	name[nlen] = '\0';
	if (!nlen || (k < len && (is_alpha(t[k]) || is_digit(t[k]))))
		return; /* no name, or one too long to be an element we allow */
	if (!end) {
		start_tag(c, n, from, name, nlen, t[len - 2] == '/' || is_void_element(name));
		return;
	}
	for (i = c->nopen_tags - 1; i >= 0 && strcmp(c->open_tags[i], name) != 0; i--)
		;
	buf_setlen(o, from); /* written again by close_open_tags(), or a stray end tag */
	if (i >= 0)
		close_open_tags(c, i);
}
