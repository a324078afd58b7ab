/*
 * sanitize.c: raw HTML from notes, parsed with gumbo and written again from
 * an allow-list; URLs judged by their scheme as a browser reads it. The
 * allow-lists and the checks of URLs and other attribute values are
 * allowlist.c's; this file parses, walks and writes.
 *
 * cmark-gfm hands raw HTML over a piece at a time, and pieces are seldom
 * balanced: "<details>\n<summary>T</summary>\n" is one HTML block, the
 * Markdown after it is ours, and "</details>" is a later block; <span
 * style=...> and </span> are two inline nodes with text nodes between. So
 * each piece is parsed as a fragment (context <div>) and written back as the
 * source had it rather than as the tree has it:
 *
 *  1. gumbo parses the piece (tree construction as browsers do it).
 *  2. A walk of the tree lists events with their source offsets: the start
 *     tag of each allowed element the source wrote (not one the parser
 *     inserted, implied or cloned), the end tag of each whose end tag the
 *     source wrote (not an implied end), and text. Every other node claims
 *     its source span, and an element dropped with its content claims all
 *     of it.
 *  3. The events are sorted by offset and written. In the source no event
 *     claims, and inside text nodes that swallowed a token, is what the
 *     parser ignored: stray end tags (the "</details>" block), start tags
 *     it ignores (<body>), doctypes. A small tag scanner finds those end
 *     tags and writes the allowed ones, in their place.
 *
 * What is written is built only from the tree and the allow-lists: names
 * from gumbo's tag table and our attribute table, values and text escaped
 * again from gumbo's decoded strings. No markup is copied from the source,
 * so nothing the allow-lists do not name can get through, whatever the
 * pieces' order: the only element written whose content a browser reads as
 * raw text is <iframe>, and its content is dropped. Long pieces are parsed
 * in chunks, which bounds gumbo's cost (see the end of the file).
 *
 * Rejected: gumbo's parse errors to find stray end tags. The GumboError
 * struct is not in the installed header, and stray end tags of formatting
 * elements (</b>, </i>, </a>, </em>...) leave no error at all: gumbo's
 * adoption agency returns without one. Serializing the tree, as DOMPurify
 * and html5lib-based sanitizers do with whole documents: it closes every
 * open element and drops every stray end tag, which breaks exactly the
 * spanning structures above. A hand-written tokenizer for everything:
 * browsers' error recovery is what attacks aim at, and gumbo implements the
 * standard's; the scanner here only measures tags gumbo already skipped.
 */
#include "markdown/sanitize.h"
#include "markdown/allowlist.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gumbo.h>

#define NONE ((size_t)-1)

int sanitize_url(const char *url, size_t len, enum sanitize_url_kind kind)
{
	return allowlist_url(url, len, kind == SANITIZE_URL_IMAGE);
}

/* ---- writing ---- */

/*
 * The standard's serialization escapes: &, <, > and U+00A0 (as &nbsp;, so
 * that entities in the source read the same), and in attributes '"' too.
 * '<' and '>' are escaped in attributes as well, as browsers now do.
 */
static void add_escaped(struct buf *b, const char *s, size_t len, int attr)
{
	size_t i, run = 0;

	for (i = 0; i < len; i++) {
		const char *rep;
		size_t skip = 1;

		switch (s[i]) {
		case '&':
			rep = "&amp;";
			break;
		case '<':
			rep = "&lt;";
			break;
		case '>':
			rep = "&gt;";
			break;
		case '"':
			if (!attr)
				continue;
			rep = "&quot;";
			break;
		case '\xc2':
			if (i + 1 == len || s[i + 1] != '\xa0')
				continue;
			rep = "&nbsp;";
			skip = 2;
			break;
		default:
			continue;
		}
		buf_add(b, s + run, i - run);
		buf_adds(b, rep);
		run = i + skip;
		i += skip - 1;
	}
	buf_add(b, s + run, len - run);
}

static void add_attr(struct buf *b, const char *name, const char *value)
{
	buf_addc(b, ' ');
	buf_adds(b, name);
	buf_adds(b, "=\"");
	add_escaped(b, value, strlen(value), 1);
	buf_addc(b, '"');
}

/* Does the space-separated list s hold token (ASCII case-insensitively)? */
static int has_token(const char *s, const char *token)
{
	size_t n = strlen(token);

	while (s && *s) {
		size_t k;

		while (is_ws(*s))
			s++;
		for (k = 0; s[k] && !is_ws(s[k]); k++)
			;
		if (k == n && md_contains_ci(s, k, token))
			return 1;
		s += k;
	}
	return 0;
}

/*
 * A link that opens another browsing context gets rel="noopener
 * noreferrer" (the author's rel tokens kept), so the opened page cannot
 * reach back to ours through window.opener.
 */
static void add_rel(struct buf *b, const char *rel, const char *target)
{
	int opens = target && *target && !(strlen(target) == 5 && md_contains_ci(target, 5, "_self"));
	const char *sep = "";

	if (!rel && !opens)
		return;
	buf_adds(b, " rel=\"");
	if (rel && *rel) {
		add_escaped(b, rel, strlen(rel), 1);
		sep = " ";
	}
	if (opens && !has_token(rel, "noopener")) {
		buf_adds(b, sep);
		buf_adds(b, "noopener");
		sep = " ";
	}
	if (opens && !has_token(rel, "noreferrer")) {
		buf_adds(b, sep);
		buf_adds(b, "noreferrer");
	}
	buf_addc(b, '"');
}

static void add_start_tag(struct buf *b, const GumboElement *e, enum policy p)
{
	int tag = allowlist_element_tag(e);
	const char *rel = NULL, *target = NULL;
	unsigned i;

	buf_addc(b, '<');
	buf_adds(b, allowlist_tag_name(tag));
	for (i = 0; i < e->attributes.length; i++) {
		const GumboAttribute *a = e->attributes.data[i];
		const struct attr_rule *r;

		if (a->attr_namespace != GUMBO_ATTR_NAMESPACE_NONE)
			continue;
		r = allowlist_attr(tag, a->name);
		if (!r || !allowlist_attr_ok(a, (enum check)r->check))
			continue;
		if (r->check == C_REL) {
			rel = a->value;
			continue;
		}
		if (tag == GUMBO_TAG_A && !strcmp(a->name, "target"))
			target = a->value;
		add_attr(b, a->name, a->value);
	}
	if (tag == GUMBO_TAG_A)
		add_rel(b, rel, target);
	buf_adds(b, p == VOID ? " />" : ">");
}

static void add_end_tag(struct buf *b, int tag)
{
	buf_adds(b, "</");
	buf_adds(b, allowlist_tag_name(tag));
	buf_addc(b, '>');
}

/* ---- tags gumbo skipped ---- */

/*
 * The end of the tag token at s[i] ('<' and a letter, or "</" and a
 * letter), read as the standard's tokenizer reads it: attribute values in
 * quotes may hold '>'. Returns the index after its '>', or len when the
 * piece ends inside it.
 */
static size_t tag_end(const char *s, size_t i, size_t len)
{
	i += s[i + 1] == '/' ? 2 : 1;
	while (i < len && !is_ws(s[i]) && s[i] != '/' && s[i] != '>')
		i++;
	for (;;) {
		while (i < len && (is_ws(s[i]) || s[i] == '/'))
			i++;
		if (i >= len)
			return len;
		if (s[i] == '>')
			return i + 1;
		/* an attribute name; its first character may be '=' */
		for (i++; i < len && !is_ws(s[i]) && s[i] != '/' && s[i] != '>' && s[i] != '='; i++)
			;
		while (i < len && is_ws(s[i]))
			i++;
		if (i == len || s[i] != '=')
			continue;
		for (i++; i < len && is_ws(s[i]); i++)
			;
		if (i < len && (s[i] == '"' || s[i] == '\'')) {
			const char *q = memchr(s + i + 1, s[i], len - i - 1);

			if (!q)
				return len;
			i = (size_t)(q - s) + 1;
		} else {
			while (i < len && !is_ws(s[i]) && s[i] != '>')
				i++;
		}
	}
}

/*
 * The length of the token gumbo skipped at s[i] (a tag, "</>", a doctype),
 * or 0 when the '<' there is text.
 */
static size_t skipped_token(const char *s, size_t i, size_t len)
{
	const char *gt;

	if (i + 1 >= len)
		return 0;
	if (is_alpha(s[i + 1]) || (s[i + 1] == '/' && i + 2 < len && is_alpha(s[i + 2])))
		return tag_end(s, i, len) - i;
	if (s[i + 1] != '!' && s[i + 1] != '?' && s[i + 1] != '/')
		return 0;
	/* "</>" is nothing; "<!doctype ...>", "<?...>", "</ ...>" end at '>' */
	gt = memchr(s + i + 1, '>', len - i - 1);
	return gt ? (size_t)(gt - s) + 1 - i : len - i;
}

/* The element an end tag token at s[i] closes: GUMBO_TAG_UNKNOWN if none. */
static int end_tag_of(const char *s, size_t i, size_t len)
{
	if (i + 2 >= len || s[i + 1] != '/' || !is_alpha(s[i + 2]))
		return GUMBO_TAG_UNKNOWN;
	return allowlist_tag_at(s, i + 2, len);
}

/* A stray end tag the parser ignored: written when its element may be. */
static void add_stray(struct buf *b, const char *s, size_t i, size_t len)
{
	int tag = end_tag_of(s, i, len);
	enum policy p = allowlist_policy(tag);

	if (tag != GUMBO_TAG_UNKNOWN && (p == KEEP || p == FRAME))
		add_end_tag(b, tag);
}

/* Source between events: only stray end tags are written from it. */
static void add_gap(struct buf *b, const char *s, size_t from, size_t to)
{
	size_t i = from;

	while (i < to) {
		const char *lt = memchr(s + i, '<', to - i);
		size_t n;

		if (!lt)
			return;
		i = (size_t)(lt - s);
		n = skipped_token(s, i, to);
		if (!n) {
			i++;
			continue;
		}
		if (s[i + 1] == '/')
			add_stray(b, s, i, to);
		i += n;
	}
}

/* ---- text ---- */

static void *gumbo_alloc(void *userdata, size_t size)
{
	(void)userdata;
	return xmalloc(size);
}

static void gumbo_free(void *userdata, void *ptr)
{
	(void)userdata;
	free(ptr);
}

static GumboOutput *parse(const char *s, size_t len, GumboTag context)
{
	GumboOptions opt = kGumboDefaultOptions;

	opt.allocator = gumbo_alloc;
	opt.deallocator = gumbo_free;
	opt.fragment_context = context;
	opt.fragment_namespace = GUMBO_NAMESPACE_HTML;
	/* parse errors are not used: do not collect them */
	opt.max_errors = 0;
	return gumbo_parse_with_options(&opt, s, len);
}

static void release(GumboOutput *out)
{
	GumboOptions opt = kGumboDefaultOptions;

	opt.allocator = gumbo_alloc;
	opt.deallocator = gumbo_free;
	gumbo_destroy_output(&opt, out);
}

/*
 * One run of text from a text node that swallowed tokens, decoded as
 * gumbo decodes text: a run with nothing to decode is copied; one with
 * references, carriage returns, control characters or non-ASCII bytes goes
 * through gumbo alone (it holds no tags, so it parses as text).
 */
static void add_run(struct buf *b, const char *s, size_t len)
{
	GumboOutput *out;
	const GumboVector *kids;
	size_t i;
	unsigned k;

	for (i = 0; i < len; i++)
		if (s[i] == '&' || s[i] == '\r' || (unsigned char)s[i] >= 0x80 ||
		    ((unsigned char)s[i] < 0x20 && !is_ws(s[i])))
			break;
	if (i == len) {
		add_escaped(b, s, len, 0);
		return;
	}
	out = parse(s, len, GUMBO_TAG_DIV);
	kids = &out->root->v.element.children;
	for (k = 0; k < kids->length; k++) {
		const GumboNode *n = kids->data[k];

		if (n->type == GUMBO_NODE_TEXT || n->type == GUMBO_NODE_WHITESPACE)
			add_escaped(b, n->v.text.text, strlen(n->v.text.text), 0);
	}
	release(out);
}

/* Is the parent's content read as text, tags and all (<xmp>, <plaintext>...)? */
static int raw_text_parent(const GumboNode *n)
{
	static const GumboTag raw[] = { GUMBO_TAG_XMP,      GUMBO_TAG_PLAINTEXT, GUMBO_TAG_IFRAME,
					GUMBO_TAG_NOEMBED,  GUMBO_TAG_NOFRAMES,  GUMBO_TAG_SCRIPT,
					GUMBO_TAG_STYLE,    GUMBO_TAG_TEXTAREA,  GUMBO_TAG_TITLE,
					GUMBO_TAG_NOSCRIPT };
	const GumboNode *p = n->parent;
	size_t i;

	if (!p || p->type != GUMBO_NODE_ELEMENT)
		return 0;
	for (i = 0; i < sizeof(raw) / sizeof(raw[0]); i++)
		if (p->v.element.tag == raw[i])
			return 1;
	return 0;
}

/*
 * A text node. Usually its decoded text, escaped; but gumbo keeps adding
 * characters to the open text node across tokens it ignores ("a</span>b"
 * is one node "ab"), so when the source of the node holds such tokens it
 * is written run by run, with the stray end tags between.
 */
static void add_text(struct buf *b, const GumboNode *n)
{
	const GumboText *t = &n->v.text;
	const char *s = t->original_text.data;
	size_t len = t->original_text.length, i, run = 0, k;

	if (!raw_text_parent(n)) {
		for (i = 0; i < len; i++)
			if (s[i] == '<' && skipped_token(s, i, len))
				break;
	} else {
		i = len;
	}
	if (i == len) {
		add_escaped(b, t->text, strlen(t->text), 0);
		return;
	}
	while (i < len) {
		if (s[i] != '<' || !(k = skipped_token(s, i, len))) {
			i++;
			continue;
		}
		add_run(b, s + run, i - run);
		if (s[i + 1] == '/')
			add_stray(b, s, i, len);
		i += k;
		run = i;
	}
	add_run(b, s + run, len - run);
}

/* ---- the walk ---- */

enum ev_kind {
	EV_CLAIM, /* a span of source that writes nothing */
	EV_START,
	EV_END,
	EV_BR, /* "</br>", which browsers read as <br> */
	EV_TEXT,
};

struct event {
	size_t off, len; /* the span of source */
	size_t seq;      /* walk order, for ties */
	const GumboNode *node;
	enum ev_kind kind;
	enum policy policy;
};

struct walk {
	const char *src;
	size_t len;
	struct event *v;
	size_t n, alloc;
	const GumboNode *drop; /* the element being dropped with its content */
	size_t drop_from;      /* its first event */
};

static void add_event(struct walk *w, const GumboStringPiece *p, enum ev_kind kind,
		      const GumboNode *node, enum policy policy)
{
	struct event *ev;

	uintptr_t at = (uintptr_t)p->data, base = (uintptr_t)w->src;

	/* every span points into the piece; anything else writes nothing */
	if (!p->length || at < base || at - base > w->len || p->length > w->len - (at - base))
		return;
	ALLOC_GROW(w->v, w->n + 1, w->alloc);
	ev = &w->v[w->n];
	ev->off = (size_t)(at - base);
	ev->len = p->length;
	ev->seq = w->n;
	ev->node = node;
	ev->kind = w->drop ? EV_CLAIM : kind;
	ev->policy = policy;
	w->n++;
}

/* Does the end tag the source wrote for e name e's own element? */
static int own_end_tag(const GumboElement *e)
{
	const GumboStringPiece *p = &e->original_end_tag;

	return end_tag_of(p->data, 0, p->length) == allowlist_element_tag(e);
}

static void enter(struct walk *w, const GumboNode *n)
{
	const GumboElement *e = &n->v.element;
	enum policy p;
	unsigned flags = n->parse_flags;
	enum ev_kind start, end;
	int kept, by_parser = (flags & GUMBO_INSERTION_BY_PARSER) != 0;
	int implicit_end = (flags & GUMBO_INSERTION_IMPLICIT_END_TAG) != 0;

	switch (n->type) {
	case GUMBO_NODE_ELEMENT:
	case GUMBO_NODE_TEMPLATE:
		p = allowlist_element(n);
		if (p == DROP && !w->drop) {
			w->drop = n;
			w->drop_from = w->n;
		}
		kept = p == KEEP || p == VOID || p == FRAME;
		if (e->tag == GUMBO_TAG_BR && (flags & GUMBO_INSERTION_CONVERTED_FROM_END_TAG)) {
			add_event(w, &e->original_end_tag, EV_BR, n, p);
			break;
		}
		/* the tags the source wrote, not the parser's insertions and repairs */
		start = kept && !by_parser ? EV_START : EV_CLAIM;
		end = kept && p != VOID && !implicit_end && own_end_tag(e) ? EV_END : EV_CLAIM;
		add_event(w, &e->original_tag, start, n, p);
		add_event(w, &e->original_end_tag, end, n, p);
		break;
	case GUMBO_NODE_TEXT:
	case GUMBO_NODE_WHITESPACE:
	case GUMBO_NODE_CDATA:
		add_event(w, &n->v.text.original_text,
			  n->parent && n->parent->type == GUMBO_NODE_ELEMENT &&
					  n->parent->v.element.tag == GUMBO_TAG_IFRAME ?
				  EV_CLAIM :
				  EV_TEXT,
			  n, UNWRAP);
		break;
	default: /* comments */
		add_event(w, &n->v.text.original_text, EV_CLAIM, n, UNWRAP);
		break;
	}
}

/*
 * Leaving the element being dropped: its events become one claim over all
 * the source they covered, so that no stray end tag inside it is written.
 */
static void leave(struct walk *w, const GumboNode *n)
{
	size_t lo = NONE, hi = 0, i;

	if (w->drop != n)
		return;
	w->drop = NULL;
	for (i = w->drop_from; i < w->n; i++) {
		if (w->v[i].off < lo)
			lo = w->v[i].off;
		if (w->v[i].off + w->v[i].len > hi)
			hi = w->v[i].off + w->v[i].len;
	}
	w->n = w->drop_from;
	if (lo != NONE) {
		GumboStringPiece all = { w->src + lo, hi - lo };

		add_event(w, &all, EV_CLAIM, n, DROP);
	}
}

static const GumboVector *children(const GumboNode *n)
{
	return n->type == GUMBO_NODE_ELEMENT || n->type == GUMBO_NODE_TEMPLATE ?
		       &n->v.element.children :
		       NULL;
}

/* Every node under root, in tree order, without recursion. */
static void walk_tree(struct walk *w, const GumboNode *root)
{
	const GumboVector *kids = children(root);
	const GumboNode *n;

	if (!kids || !kids->length)
		return;
	n = kids->data[0];
	while (n) {
		enter(w, n);
		kids = children(n);
		if (kids && kids->length) {
			n = kids->data[0];
			continue;
		}
		for (;;) {
			const GumboNode *parent = n->parent;

			if (children(n))
				leave(w, n);
			if (n->index_within_parent + 1 < parent->v.element.children.length) {
				n = parent->v.element.children.data[n->index_within_parent + 1];
				break;
			}
			if (parent == root) {
				n = NULL;
				break;
			}
			n = parent;
		}
	}
}

static int event_cmp(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* After <pre>, browsers drop one newline: one written there keeps the next. */
static void pre_newline(struct buf *b, const struct walk *w, const struct event *ev)
{
	size_t at = ev->off + ev->len;

	if (ev->node->v.element.tag == GUMBO_TAG_PRE && at < w->len &&
	    (w->src[at] == '\n' || w->src[at] == '\r'))
		buf_addc(b, '\n');
}

/* One piece, or one chunk of a long one, parsed in the given context. */
static void sanitize_chunk(struct buf *out, const char *html, size_t len, GumboTag context)
{
	struct walk w = { html, len, NULL, 0, 0, NULL, 0 };
	GumboOutput *tree;
	size_t i, at = 0, last_end = NONE;

	if (!len)
		return;
	tree = parse(html, len, context);
	walk_tree(&w, tree->root);
	if (w.n)
		qsort(w.v, w.n, sizeof(*w.v), event_cmp);
	for (i = 0; i < w.n; i++) {
		const struct event *ev = &w.v[i];

		if (ev->off > at)
			add_gap(out, html, at, ev->off);
		switch (ev->kind) {
		case EV_START:
			add_start_tag(out, &ev->node->v.element, ev->policy);
			pre_newline(out, &w, ev);
			break;
		case EV_END:
			/* elements closed by one end tag (adoption agency clones) */
			if (ev->off != last_end)
				add_end_tag(out, allowlist_element_tag(&ev->node->v.element));
			last_end = ev->off;
			break;
		case EV_BR:
			buf_adds(out, "<br />");
			break;
		case EV_TEXT:
			add_text(out, ev->node);
			break;
		case EV_CLAIM:
			break;
		}
		if (ev->off + ev->len > at)
			at = ev->off + ev->len;
	}
	if (at < len)
		add_gap(out, html, at, len);
	free(w.v);
	release(tree);
}

/* ---- long pieces ---- */

/*
 * gumbo walks the stack of open elements for most start tags ("close a p
 * element in button scope"), so deeply nested input costs the square of
 * its length: 40,000 nested <ul><li> take 14 s, and a note may be tens of
 * megabytes. A piece with more than CHUNK_TAGS tags is therefore parsed in
 * chunks of that many tags, which bounds the cost per byte. The chunks'
 * outputs join up as the whole piece's would, since tags are written where
 * the source has them; what a chunk cannot see is what the previous ones
 * left open, which matters in tables (in a <div>, a <tr> or <td> start tag
 * is ignored). So a rough model of the open elements follows the chunks,
 * and a chunk that starts inside a table part is parsed in its context.
 * Nothing here decides what is safe: every chunk goes through the same
 * allow-lists.
 */
#define CHUNK_TAGS 1024
#define MODEL_DEPTH 64

struct model {
	int open[MODEL_DEPTH];
	size_t depth; /* may pass MODEL_DEPTH: deeper elements are only counted */
};

static int model_top(const struct model *m)
{
	return m->depth && m->depth <= MODEL_DEPTH ? m->open[m->depth - 1] : GUMBO_TAG_UNKNOWN;
}

static int top_is(const struct model *m, int a, int b, int c)
{
	int t = model_top(m);

	return m->depth && (t == a || t == b || t == c);
}

/* A start tag: what it closes implicitly, roughly, then itself. */
static void model_start(struct model *m, int tag)
{
	switch (tag) {
	case GUMBO_TAG_TBODY:
	case GUMBO_TAG_THEAD:
	case GUMBO_TAG_TFOOT:
		while (top_is(m, GUMBO_TAG_TD, GUMBO_TAG_TH, GUMBO_TAG_TR) ||
		       top_is(m, GUMBO_TAG_TBODY, GUMBO_TAG_THEAD, GUMBO_TAG_TFOOT))
			m->depth--;
		break;
	case GUMBO_TAG_TR:
		while (top_is(m, GUMBO_TAG_TD, GUMBO_TAG_TH, GUMBO_TAG_TR))
			m->depth--;
		break;
	case GUMBO_TAG_TD:
	case GUMBO_TAG_TH:
		while (top_is(m, GUMBO_TAG_TD, GUMBO_TAG_TH, GUMBO_TAG_TD))
			m->depth--;
		break;
	case GUMBO_TAG_DT:
	case GUMBO_TAG_DD:
		if (top_is(m, GUMBO_TAG_DT, GUMBO_TAG_DD, GUMBO_TAG_DD))
			m->depth--;
		break;
	case GUMBO_TAG_LI:
	case GUMBO_TAG_P:
	case GUMBO_TAG_OPTION:
		if (top_is(m, tag, tag, tag))
			m->depth--;
		break;
	default:
		break;
	}
	if (m->depth < MODEL_DEPTH)
		m->open[m->depth] = tag;
	m->depth++;
}

/* An end tag closes its element and what is inside it, if it is open. */
static void model_end(struct model *m, int tag)
{
	size_t i;

	if (m->depth > MODEL_DEPTH) {
		m->depth--;
		return;
	}
	for (i = m->depth; i > 0; i--) {
		if (m->open[i - 1] == tag) {
			m->depth = i - 1;
			return;
		}
	}
}

static int is_void(int tag)
{
	static const GumboTag voids[] = { GUMBO_TAG_AREA,   GUMBO_TAG_BASE,    GUMBO_TAG_BASEFONT,
					  GUMBO_TAG_BGSOUND, GUMBO_TAG_BR,     GUMBO_TAG_COL,
					  GUMBO_TAG_EMBED,  GUMBO_TAG_FRAME,   GUMBO_TAG_HR,
					  GUMBO_TAG_IMG,    GUMBO_TAG_INPUT,   GUMBO_TAG_KEYGEN,
					  GUMBO_TAG_LINK,   GUMBO_TAG_META,    GUMBO_TAG_PARAM,
					  GUMBO_TAG_SOURCE, GUMBO_TAG_TRACK,   GUMBO_TAG_WBR };
	size_t i;

	for (i = 0; i < sizeof(voids) / sizeof(voids[0]); i++)
		if ((int)voids[i] == tag)
			return 1;
	return 0;
}

/* After the start tag of an element whose content is text: past that content. */
static size_t skip_raw_text(const char *s, size_t i, size_t len, int tag)
{
	static const GumboTag raw[] = { GUMBO_TAG_SCRIPT,  GUMBO_TAG_STYLE,    GUMBO_TAG_TEXTAREA,
					GUMBO_TAG_TITLE,   GUMBO_TAG_XMP,      GUMBO_TAG_IFRAME,
					GUMBO_TAG_NOEMBED, GUMBO_TAG_NOFRAMES, GUMBO_TAG_NOSCRIPT };
	size_t k;

	if (tag == GUMBO_TAG_PLAINTEXT)
		return len;
	for (k = 0; k < sizeof(raw) / sizeof(raw[0]); k++)
		if ((int)raw[k] == tag)
			break;
	if (k == sizeof(raw) / sizeof(raw[0]))
		return i;
	for (; i + 2 < len; i++)
		if (s[i] == '<' && s[i + 1] == '/' && end_tag_of(s, i, len) == tag)
			return i;
	return len;
}

/*
 * The context of a chunk that starts inside the model's open elements:
 * inside any table part, a <table>, whose insertion mode takes rows, cells,
 * sections and captions and foster-parents everything else (so nothing is
 * lost but nested <table> start tags); a cell would ignore a <tr>, a
 * <tbody> a <caption>. Elsewhere a <div>.
 */
static GumboTag chunk_context(const struct model *m)
{
	size_t i, n = m->depth < MODEL_DEPTH ? m->depth : MODEL_DEPTH;

	for (i = 0; i < n; i++) {
		switch (m->open[i]) {
		case GUMBO_TAG_TABLE:
		case GUMBO_TAG_TBODY:
		case GUMBO_TAG_THEAD:
		case GUMBO_TAG_TFOOT:
		case GUMBO_TAG_TR:
		case GUMBO_TAG_TD:
		case GUMBO_TAG_TH:
		case GUMBO_TAG_CAPTION:
		case GUMBO_TAG_COLGROUP:
			return GUMBO_TAG_TABLE;
		default:
			break;
		}
	}
	return GUMBO_TAG_DIV;
}

/*
 * Follows the model over s from i and returns where the chunk that starts
 * at i, to be parsed in context, ends: where the model has nothing open
 * once the chunk has CHUNK_TAGS / 2 tags (so that sibling tables and lists
 * stay whole), where a chunk parsed as inside a table leaves it, after
 * CHUNK_TAGS tags at most, or at len.
 */
static size_t chunk_end(struct model *m, const char *s, size_t i, size_t len, GumboTag context)
{
	size_t tags = 0;

	while (i < len) {
		const char *lt = memchr(s + i, '<', len - i);
		int tag;

		if (!lt)
			return len;
		i = (size_t)(lt - s);
		if (len - i >= 4 && !memcmp(s + i, "<!--", 4)) {
			/* "<!-->" is a whole comment, so "-->" is looked for from the "--" */
			for (i += 2; i + 3 <= len && memcmp(s + i, "-->", 3); i++)
				;
			i = i + 3 <= len ? i + 3 : len;
		} else if (i + 1 < len && is_alpha(s[i + 1])) {
			tag = allowlist_tag_at(s, i + 1, len);
			i = tag_end(s, i, len);
			tags++;
			if (!is_void(tag)) {
				model_start(m, tag);
				i = skip_raw_text(s, i, len, tag);
			}
		} else if (i + 2 < len && s[i + 1] == '/' && is_alpha(s[i + 2])) {
			tag = end_tag_of(s, i, len);
			i = tag_end(s, i, len);
			tags++;
			model_end(m, tag);
		} else {
			size_t n = skipped_token(s, i, len);

			i += n ? n : 1;
		}
		if (tags >= CHUNK_TAGS || (tags >= CHUNK_TAGS / 2 && !m->depth) ||
		    (context == GUMBO_TAG_TABLE && chunk_context(m) == GUMBO_TAG_DIV))
			break;
	}
	return i;
}

void sanitize_html(struct buf *out, const char *html, size_t len)
{
	struct model m = { { 0 }, 0 };
	const char *p = html;
	size_t tags = 0, at = 0;
	GumboTag context = GUMBO_TAG_DIV;

	while (tags <= CHUNK_TAGS && (p = memchr(p, '<', len - (size_t)(p - html))) != NULL) {
		tags++;
		p++;
	}
	if (tags <= CHUNK_TAGS) {
		sanitize_chunk(out, html, len, GUMBO_TAG_DIV);
		return;
	}
	while (at < len) {
		size_t end = chunk_end(&m, html, at, len, context);

		sanitize_chunk(out, html + at, end - at, context);
		context = chunk_context(&m);
		at = end;
	}
}
