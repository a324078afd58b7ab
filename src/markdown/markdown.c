/*
 * markdown.c: Obsidian-flavoured Markdown to an HTML fragment, on cmark-gfm.
 *
 * One note goes through four stages, each a loop without recursion, each in
 * a file of its own (they share markdown-int.h):
 *
 *  1. A source pre-pass (md_prepass.c), aware of fenced code and code spans,
 *     removes %%comments%% and swaps $math$ and $$math$$ for placeholders
 *     made of control characters ("\x02M<n>\x03"), which cmark passes
 *     through as text untouched: otherwise `_` and `*` inside TeX would turn
 *     into emphasis. Escaped \[ \] \# \= \^ at the start of a word become
 *     placeholders too ("\x02E<byte>\x03"): cmark drops the backslash, and
 *     "\[\[x]]" or "\#x" would then look like a wikilink or a tag. Only at
 *     the start of a word and not before '*', '_' or '~', because a
 *     placeholder next to those or inside a bare URL would change how cmark
 *     reads them. Comments leave their line breaks; a line map corrects line
 *     numbers for the rest (display math that spans lines).
 *  2. cmark-gfm parses (tables, strikethrough, autolinks, task lists,
 *     footnotes, raw HTML).
 *  3. A tree pass (md_annotate.c) annotates nodes through cmark's user_data: on
 *     each run of sibling inlines it finds [[wikilinks]], ![[embeds]],
 *     ==highlights== and #tags, and stores for each text node the segments
 *     it renders as; on blocks it finds callouts and ^block ids.
 *  4. Our own HTML renderer (html.c, and links.c for references), modelled
 *     on cmark-gfm's html.c so that plain CommonMark comes out byte for byte
 *     as cmark-gfm renders it, walks the tree with cmark_iter, resolves each
 *     reference through the caller as it meets it (so refs are in document
 *     order), and records heading, block and splice offsets into the HTML it
 *     is writing. Raw HTML, and the URLs of Markdown links and images, go
 *     out through sanitize.c.
 *
 * Rejected: rendering with cmark_render_html() and patching its output
 * (heading ids, splices and section offsets would mean re-parsing HTML);
 * cmark-gfm inline syntax extensions for [[ ]] (they fight the core link
 * parser over '[', and a label may hold a code span or emphasis, which an
 * extension cannot parse); inserting custom nodes into the tree (table cells
 * refuse CUSTOM_INLINE children, and splitting text literals in place copies
 * them again for every split). Annotations leave cmark's tree as it parsed it.
 *
 * This file runs the stages (md_render()), owns what they share (struct
 * ctx, the string sets of heading ids and tags), and holds the rest of the
 * public functions.
 */
#include "markdown/markdown.h"
#include "markdown/markdown-int.h"
#include "util/hash.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <cmark-gfm-core-extensions.h>

/* ---- what the stages share ---- */

char *md_detach_exact(struct buf *b)
{
	char *s = xstrndup(b->ptr, b->len);

	buf_release(b);
	return s;
}

static size_t sset_slot(const struct sset *set, const char *key)
{
	size_t i = hash64(key, strlen(key)) & (set->cap - 1);

	while (set->v[i].key && strcmp(set->v[i].key, key))
		i = (i + 1) & (set->cap - 1);
	return i;
}

int md_sset_has(const struct sset *set, const char *key)
{
	return set->cap && set->v[sset_slot(set, key)].key;
}

struct sent *md_sset_add(struct sset *set, const char *key)
{
	size_t i;

	if ((set->n + 1) * 2 > set->cap) {
		struct sset bigger = { NULL, set->n, set->cap ? set->cap * 2 : 64 };

		bigger.v = xcalloc(bigger.cap, sizeof(*bigger.v));
		for (i = 0; i < set->cap; i++)
			if (set->v[i].key)
				bigger.v[sset_slot(&bigger, set->v[i].key)] = set->v[i];
		free(set->v);
		*set = bigger;
	}
	i = sset_slot(set, key);
	if (!set->v[i].key) {
		set->v[i].key = xstrdup(key);
		set->v[i].next = 0;
		set->n++;
	}
	return &set->v[i];
}

void md_sset_release(struct sset *set)
{
	size_t i;

	for (i = 0; i < set->cap; i++)
		free(set->v[i].key);
	free(set->v);
	set->v = NULL;
	set->n = set->cap = 0;
}

/* ---- the public functions ---- */

/* Each heading's section runs to the next heading of its level or above. */
static void section_ends(struct md_result *res)
{
	size_t *stack = xmalloc((res->nheadings + 1) * sizeof(*stack));
	size_t depth = 0, i;

	for (i = 0; i < res->nheadings; i++) {
		while (depth && res->headings[stack[depth - 1]].level >= res->headings[i].level)
			res->headings[stack[--depth]].end = res->headings[i].start;
		stack[depth++] = i;
	}
	while (depth)
		res->headings[stack[--depth]].end = res->html.len;
	free(stack);
}

static pthread_mutex_t finish_lock = PTHREAD_MUTEX_INITIALIZER;

void md_global_init(void)
{
	cmark_gfm_core_extensions_ensure_registered();
}

static void ctx_release(struct ctx *c)
{
	size_t i;

	for (i = 0; i < c->nchunks; i++)
		free(c->chunks[i]);
	free(c->chunks);
	free(c->segs.v);
	free(c->v0.v);
	free(c->v1.v);
	free(c->v2.v);
	free(c->scratch.v);
	for (i = 0; i < c->nlinks; i++) {
		if (!c->links[i].done) {
			free(c->links[i].target);
			free(c->links[i].fragment);
			free(c->links[i].label);
		}
		free(c->links[i].display);
	}
	free(c->links);
	md_sset_release(&c->ids);
	md_sset_release(&c->tags);
	buf_release(&c->tmp);
	md_pre_release(&c->pre);
}

int md_render(const char *src, size_t len, const struct md_options *opt, struct md_result *res)
{
	static const struct md_options defaults = { NULL, NULL, "", 1, 0, 0, 0 };
	/* no "tagfilter": raw HTML goes through sanitize_html() instead */
	/* no "tasklist": tasks are found by md_annotate (any status character, in any container) */
	static const char *const extensions[] = { "table", "strikethrough", "autolink" };
	const int options = CMARK_OPT_FOOTNOTES | CMARK_OPT_UNSAFE | CMARK_OPT_SOURCEPOS;
	struct ctx c;
	cmark_parser *parser;
	cmark_node *doc;
	const char *md = src;
	size_t mdlen = len, i;

	if (!src) {
		src = "";
		len = 0;
	}
	memset(&c, 0, sizeof(c));
	c.opt = opt ? opt : &defaults;
	c.res = res;
	c.out = &res->html;
	buf_init(&c.pre.out, 0);
	buf_init(&c.pre.tex, 0);
	buf_init(&c.pre.notes, 0);
	buf_init(&c.tmp, 0);
	c.pre.s = src;
	c.pre.len = len;
	if (md_prepass_needed(src, len)) {
		md_prepass(&c.pre);
		md = c.pre.out.ptr;
		mdlen = c.pre.out.len;
		/* the guard's warnings, on the file's lines */
		for (i = 0; i < c.pre.nwarnings; i++)
			c.pre.warnings[i].line += c.opt->first_line > 0 ? c.opt->first_line - 1 : 0;
		res->warnings = c.pre.warnings;
		res->nwarnings = c.pre.nwarnings;
		c.pre.warnings = NULL;
		c.pre.nwarnings = 0;
	}

	parser = cmark_parser_new(options);
	for (i = 0; i < sizeof(extensions) / sizeof(extensions[0]); i++) {
		cmark_syntax_extension *ext = cmark_find_syntax_extension(extensions[i]);

		if (ext)
			cmark_parser_attach_syntax_extension(parser, ext);
	}
	cmark_parser_feed(parser, md, mdlen);
	/*
	 * cmark-gfm keeps the table of inline trigger characters in a global
	 * that each parser fills with its extensions' characters before the
	 * inline pass and empties after it (finalize_document), so two
	 * parsers finishing at once can lose each other's ':' and 'w' and
	 * drop autolinks at random (github/cmark-gfm pull 176). Only that
	 * pass is serialized; block parsing above and our passes and renderer
	 * below run in parallel.
	 */
	pthread_mutex_lock(&finish_lock);
	doc = cmark_parser_finish(parser);
	pthread_mutex_unlock(&finish_lock);
	cmark_parser_free(parser);
	if (!doc) {
		ctx_release(&c);
		md_result_release(res);
		return -1;
	}
	md_annotate(&c, doc);
	buf_grow(&res->html, mdlen + mdlen / 4 + 64);
	render_html(&c, doc);
	section_ends(res);
	/* the fragment is kept (render.c composes pages from it): no growth slack */
	buf_fit(&res->html);
	cmark_node_free(doc);
	ctx_release(&c);
	return 0;
}

void md_result_release(struct md_result *res)
{
	size_t i;

	if (!res)
		return;
	buf_release(&res->html);
	for (i = 0; i < res->nrefs; i++) {
		free(res->refs[i].target);
		free(res->refs[i].fragment);
		free(res->refs[i].label);
	}
	free(res->refs);
	free(res->splices);
	free(res->slots);
	for (i = 0; i < res->ntags; i++)
		free(res->tags[i]);
	free(res->tags);
	for (i = 0; i < res->nheadings; i++) {
		free(res->headings[i].text);
		free(res->headings[i].id);
	}
	free(res->headings);
	for (i = 0; i < res->nblocks; i++)
		free(res->blocks[i].id);
	free(res->blocks);
	free(res->summary);
	buf_release(&res->text);
	for (i = 0; i < res->nwarnings; i++)
		free(res->warnings[i].msg);
	free(res->warnings);
	memset(res, 0, sizeof(*res));
	res->html.ptr = buf_empty;
	res->text.ptr = buf_empty;
}

char *md_heading_id(const char *text)
{
	struct buf b = BUF_INIT;
	char *low;
	size_t k, len = strlen(text);

	for (k = 0; k < len && !(text[k] & 0x80); k++)
		;
	if (k == len) {
		/* ASCII, most headings: no trip through utf8proc */
		buf_grow(&b, len);
		for (k = 0; k < len; k++) {
			char ch = lower(text[k]);

			if (is_alpha(ch) || is_digit(ch) || ch == '-' || ch == '_')
				buf_addc(&b, ch);
			else if (is_space(ch))
				buf_addc(&b, '-');
		}
		if (!b.len)
			buf_adds(&b, "section");
		return md_detach_exact(&b);
	}
	low = utf8_lower(text, len);
	len = strlen(low);
	k = 0;
	while (k < len) {
		int32_t cp;
		int n = utf8_decode(low + k, len - k, &cp);

		if (n <= 0) {
			k++;
			continue;
		}
		if (cp == '-' || cp == '_' || unicode_is_alnum(cp))
			buf_add(&b, low + k, (size_t)n);
		else if (unicode_is_space(cp))
			buf_addc(&b, '-');
		k += (size_t)n;
	}
	free(low);
	if (!b.len)
		buf_adds(&b, "section");
	return md_detach_exact(&b);
}
