/*
 * markdown.c: Obsidian-flavoured Markdown to an HTML fragment, on cmark-gfm.
 *
 * One note goes through four stages, each a loop without recursion:
 *
 *  1. A source pre-pass, aware of fenced code and code spans, removes
 *     %%comments%% and swaps $math$ and $$math$$ for placeholders made of
 *     control characters ("\x02M<n>\x03"), which cmark passes through as text
 *     untouched: otherwise `_` and `*` inside TeX would turn into emphasis.
 *     Escaped \[ \] \# \= \^ at the start of a word become placeholders too
 *     ("\x02E<byte>\x03"): cmark drops the backslash, and "\[\[x]]" or "\#x"
 *     would then look like a wikilink or a tag. Only at the start of a word
 *     and not before '*', '_' or '~', because a placeholder next to those or
 *     inside a bare URL would change how cmark reads them. Comments leave
 *     their line breaks; a line map corrects line numbers for the rest
 *     (display math that spans lines).
 *  2. cmark-gfm parses (tables, strikethrough, autolinks, task lists,
 *     footnotes, raw HTML).
 *  3. A tree pass annotates nodes through cmark's user_data: on each run of
 *     sibling inlines it finds [[wikilinks]], ![[embeds]], ==highlights==
 *     and #tags, and stores for each text node the segments it renders as;
 *     on blocks it finds callouts and ^block ids.
 *  4. Our own HTML renderer, modelled on cmark-gfm's html.c so that plain
 *     CommonMark comes out byte for byte as cmark-gfm renders it, walks the
 *     tree with cmark_iter, resolves each reference through the caller as it
 *     meets it (so refs are in document order), and records heading, block
 *     and splice offsets into the HTML it is writing. Raw HTML, and the URLs
 *     of Markdown links and images, go out through sanitize.c.
 *
 * Rejected: rendering with cmark_render_html() and patching its output
 * (heading ids, splices and section offsets would mean re-parsing HTML);
 * cmark-gfm inline syntax extensions for [[ ]] (they fight the core link
 * parser over '[', and a label may hold a code span or emphasis, which an
 * extension cannot parse); inserting custom nodes into the tree (table cells
 * refuse CUSTOM_INLINE children, and splitting text literals in place copies
 * them again for every split). Annotations leave cmark's tree as it parsed it.
 *
 * The one private cmark-gfm header, node.h, is read for footnotes only: the
 * public API has no getter for a definition's label or a reference's ordinal,
 * and cmark-gfm's own footnote markup needs both.
 */
#include "markdown/markdown.h"
#include "util/hash.h"
#include "markdown/sanitize.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <cmark-gfm.h>
#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm/node.h>

#define NONE ((size_t)-1)
#define SUMMARY_MAX 300
/* Longer backtick runs are never code spans here: keeps the failure cache small. */
#define MAX_TICKS 64
#define PH_OPEN '\x02'
#define PH_CLOSE '\x03'
/* Escapes that the pre-pass keeps from cmark (see the top of the file). */
#define ESCAPED "[]#=^"

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_punct(char c)
{
	return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
	       (c >= 123 && c <= 126);
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}

static void trim(const char **s, size_t *len)
{
	while (*len && is_space(**s)) {
		(*s)++;
		(*len)--;
	}
	while (*len && is_space((*s)[*len - 1]))
		(*len)--;
}

/* ---- stage 1: the source pre-pass ---- */

struct math {
	size_t raw, rawlen; /* the original text in the source, delimiters included */
	size_t tex, texlen; /* the TeX in pre.tex */
	int display;
};

struct pre {
	const char *s;
	size_t len;
	struct buf out;
	int *lines; /* lines[i]: source line of output line i + 1 */
	size_t nlines, alines;
	int line; /* source line being read */
	struct math *math;
	size_t nmath, amath;
	struct buf tex;
	/* fenced code: its character, length, quote depth and list indent */
	int in_fence, fdepth;
	char fchar;
	size_t flen, findent;
	int list_ctx, prev_blank, in_indented;
	/*
	 * Failure caches: a search for a closer that ran into a paragraph end
	 * at x also fails from anywhere before x. Without them a line of
	 * openers would be quadratic.
	 */
	size_t tick_fail[MAX_TICKS + 1];
	size_t dd_fail, dollar_fail;
};

static void pre_newline(struct pre *p)
{
	ALLOC_GROW(p->lines, p->nlines + 1, p->alines);
	p->lines[p->nlines++] = p->line;
}

/* Copies s[from, to) to the output as it is, keeping the line map. */
static void pre_copy(struct pre *p, size_t from, size_t to)
{
	while (from < to) {
		const char *nl = memchr(p->s + from, '\n', to - from);
		size_t end = nl ? (size_t)(nl - p->s) + 1 : to;

		buf_add(&p->out, p->s + from, end - from);
		if (nl) {
			p->line++;
			pre_newline(p);
		}
		from = end;
	}
}

static size_t line_end(const struct pre *p, size_t i)
{
	const char *nl = memchr(p->s + i, '\n', p->len - i);

	return nl ? (size_t)(nl - p->s) : p->len;
}

/* A line with nothing but blanks and '>' ends a paragraph, in a quote or not. */
static int blank_line_at(const struct pre *p, size_t i)
{
	while (i < p->len && (is_blank(p->s[i]) || p->s[i] == '>'))
		i++;
	return i >= p->len || p->s[i] == '\n' || p->s[i] == '\r';
}

/*
 * Skips block quote markers and list markers at the start of a line, so that
 * a fence behind them is seen. Returns the offset of what follows them;
 * *qend is the offset just after the last '>'.
 */
static size_t strip_containers(const char *s, size_t i, size_t eol, int *depth, int *marker,
			       size_t *qend)
{
	*qend = i;
	for (;;) {
		size_t k = i, m;

		while (k < eol && is_blank(s[k]))
			k++;
		if (k < eol && s[k] == '>') {
			(*depth)++;
			i = k + 1;
			if (i < eol && s[i] == ' ')
				i++;
			*qend = i;
			continue;
		}
		if (k + 1 < eol && (s[k] == '-' || s[k] == '+' || s[k] == '*') && is_blank(s[k + 1])) {
			*marker = 1;
			i = k + 2;
			continue;
		}
		for (m = k; m < eol && m - k < 9 && is_digit(s[m]); m++)
			;
		if (m > k && m + 1 < eol && (s[m] == '.' || s[m] == ')') && is_blank(s[m + 1])) {
			*marker = 1;
			i = m + 2;
			continue;
		}
		return i;
	}
}

/*
 * Looks at a line outside fenced code. Returns 1 when the line is to be
 * copied as it is: blank, indented code, or a fence that opens.
 */
static int block_line(struct pre *p, size_t i, size_t eol)
{
	const char *s = p->s;
	size_t k = i, ind = 0, c, f, n, qend;
	int depth = 0, marker = 0;

	while (k < eol && is_blank(s[k])) {
		ind += s[k] == '\t' ? 4 : 1;
		k++;
	}
	if (k == eol || (k + 1 == eol && s[k] == '\r')) {
		p->prev_blank = 1;
		return 1;
	}
	if (ind >= 4 && !p->list_ctx && (p->prev_blank || p->in_indented)) {
		p->in_indented = 1;
		p->prev_blank = 0;
		return 1;
	}
	p->in_indented = 0;
	c = strip_containers(s, i, eol, &depth, &marker, &qend);
	if (marker)
		p->list_ctx = 1;
	else if (ind == 0 && depth == 0 && p->prev_blank)
		p->list_ctx = 0;
	p->prev_blank = 0;
	for (f = c; f < eol && is_blank(s[f]); f++)
		;
	if (f >= eol || (s[f] != '`' && s[f] != '~'))
		return 0;
	for (n = 0; f + n < eol && s[f + n] == s[f]; n++)
		;
	if (n < 3 || (s[f] == '`' && memchr(s + f + n, '`', eol - f - n)))
		return 0;
	p->in_fence = 1;
	p->fchar = s[f];
	p->flen = n;
	p->fdepth = depth;
	p->findent = marker ? f - qend : 0;
	return 1;
}

/*
 * A line while inside fenced code: returns 1 if it belongs to the code
 * (closing the fence if it is the closing fence), 0 if the container the
 * fence was in has ended, so the line is read as ordinary text.
 */
static int fence_line(struct pre *p, size_t i, size_t eol)
{
	const char *s = p->s;
	size_t k = i, ind = 0, n;
	int d;

	for (d = 0; d < p->fdepth; d++) {
		size_t sp = 0;

		while (k < eol && sp < 3 && is_blank(s[k])) {
			k++;
			sp++;
		}
		if (k >= eol || s[k] != '>')
			break;
		k++;
		if (k < eol && s[k] == ' ')
			k++;
	}
	if (d < p->fdepth) {
		p->in_fence = 0;
		return 0;
	}
	while (k < eol && is_blank(s[k])) {
		ind++;
		k++;
	}
	if (k == eol || s[k] == '\r')
		return 1;
	if (ind < p->findent) {
		p->in_fence = 0;
		return 0;
	}
	if (s[k] == p->fchar) {
		for (n = 0; k + n < eol && s[k + n] == p->fchar; n++)
			;
		if (n >= p->flen) {
			k += n;
			while (k < eol && (is_blank(s[k]) || s[k] == '\r'))
				k++;
			if (k == eol)
				p->in_fence = 0;
		}
	}
	return 1;
}

/* Where a code span opened by n backticks closes, or NONE. */
static size_t tick_close(struct pre *p, size_t from, size_t n)
{
	const char *s = p->s;
	size_t k = from;

	if (n > MAX_TICKS || from < p->tick_fail[n])
		return NONE;
	while (k < p->len) {
		if (s[k] == '`') {
			size_t m = 0;

			while (k + m < p->len && s[k + m] == '`')
				m++;
			if (m == n)
				return k;
			k += m;
			continue;
		}
		if (s[k] == '\n' && blank_line_at(p, k + 1)) {
			p->tick_fail[n] = k + 1;
			return NONE;
		}
		k++;
	}
	p->tick_fail[n] = p->len;
	return NONE;
}

/* Where display math opened at from - 2 closes (its "$$"), or NONE. */
static size_t dd_close(struct pre *p, size_t from)
{
	const char *s = p->s;
	size_t k = from;

	if (from < p->dd_fail)
		return NONE;
	while (k + 1 < p->len) {
		if (s[k] == '\\') {
			k += 2;
			continue;
		}
		if (s[k] == '$' && s[k + 1] == '$')
			return k;
		if (s[k] == '\n' && blank_line_at(p, k + 1)) {
			p->dd_fail = k + 1;
			return NONE;
		}
		k++;
	}
	p->dd_fail = p->len;
	return NONE;
}

/*
 * Where inline math opened at from - 1 closes, or NONE. Pandoc's rule, which
 * Obsidian follows: the closing '$' has no space before it and no digit
 * after it, so "$5 and $6" is not math. Inline math stays on one line.
 */
static size_t dollar_close(struct pre *p, size_t from)
{
	const char *s = p->s;
	size_t k;

	if (from < p->dollar_fail)
		return NONE;
	for (k = from; k < p->len && s[k] != '\n'; k++) {
		if (s[k] == '\\') {
			k++;
			continue;
		}
		if (s[k] == '$' && k > from && !is_space(s[k - 1]) &&
		    !(k + 1 < p->len && is_digit(s[k + 1])))
			return k;
	}
	p->dollar_fail = k;
	return NONE;
}

/* Number of '>' markers that open the line starting at i. */
static int quote_depth(const char *s, size_t i, size_t len)
{
	int depth = 0;

	for (;;) {
		size_t sp = 0;

		while (i < len && sp < 3 && is_blank(s[i])) {
			i++;
			sp++;
		}
		if (i >= len || s[i] != '>')
			return depth;
		depth++;
		i++;
		if (i < len && s[i] == ' ')
			i++;
	}
}

static void add_placeholder(struct pre *p, size_t raw, size_t rawlen, int display)
{
	struct math *m;

	ALLOC_GROW(p->math, p->nmath + 1, p->amath);
	m = &p->math[p->nmath];
	m->raw = raw;
	m->rawlen = rawlen;
	m->display = display;
	m->tex = p->tex.len;
	buf_addf(&p->out, "%cM%zu%c", PH_OPEN, p->nmath, PH_CLOSE);
	p->nmath++;
}

/*
 * Display math s[open, close + 2): the TeX goes without the quote markers
 * that the lines after the first carry when the math sits in a callout.
 */
static void display_math(struct pre *p, size_t open, size_t close, size_t line_start)
{
	const char *s = p->s;
	int depth = quote_depth(s, line_start, p->len);
	size_t k = open + 2;

	add_placeholder(p, open, close + 2 - open, 1);
	while (k < close) {
		const char *nl = memchr(s + k, '\n', close - k);
		size_t end = nl ? (size_t)(nl - s) + 1 : close;
		int d;

		buf_add(&p->tex, s + k, end - k);
		k = end;
		if (!nl)
			break;
		p->line++;
		for (d = 0; d < depth; d++) {
			size_t sp = 0;

			while (k < close && sp < 3 && is_blank(s[k])) {
				k++;
				sp++;
			}
			if (k >= close || s[k] != '>')
				break;
			k++;
			if (k < close && s[k] == ' ')
				k++;
		}
	}
	p->math[p->nmath - 1].texlen = p->tex.len - p->math[p->nmath - 1].tex;
}

/*
 * Drops the comment s[from, to) but keeps its line breaks, each followed by
 * the container prefix ('>' and blanks) of the line it starts, so that line
 * numbers stay right and a comment inside a callout does not end it.
 */
static void comment(struct pre *p, size_t from, size_t to)
{
	const char *s = p->s;

	while (from < to) {
		const char *nl = memchr(s + from, '\n', to - from);
		size_t k;

		if (!nl)
			break;
		from = (size_t)(nl - s) + 1;
		buf_addc(&p->out, '\n');
		p->line++;
		pre_newline(p);
		for (k = from; k < to && (is_blank(s[k]) || s[k] == '>'); k++)
			;
		buf_add(&p->out, s + from, k - from);
	}
}

/* An autolink <scheme:...> is copied whole: its '$' and '%' are not ours. */
static size_t autolink_end(const char *s, size_t j, size_t len)
{
	size_t k = j + 1, n = 0;

	if (k >= len || !is_alpha(s[k]))
		return NONE;
	while (k < len && (is_alpha(s[k]) || is_digit(s[k]) || s[k] == '+' || s[k] == '.' ||
			   s[k] == '-')) {
		k++;
		n++;
	}
	if (n < 2 || n > 32 || k >= len || s[k] != ':')
		return NONE;
	for (k++; k < len; k++) {
		if (s[k] == '>')
			return k + 1;
		if ((unsigned char)s[k] <= ' ' || s[k] == '<')
			return NONE;
	}
	return NONE;
}

static size_t find_pair(const char *s, size_t from, size_t len, char c)
{
	while (from + 1 < len) {
		const char *q = memchr(s + from, c, len - from - 1);

		if (!q)
			return NONE;
		from = (size_t)(q - s);
		if (s[from + 1] == c)
			return from;
		from++;
	}
	return NONE;
}

/*
 * Reads text from i (the start of a line) to the end of that line, or
 * further when a code span, comment or display math runs across lines.
 * Returns where the next line starts.
 */
static size_t scan_inline(struct pre *p, size_t i)
{
	const char *s = p->s;
	size_t len = p->len, run = i, j = i, ls = i, k;

	while (j < len) {
		char ch = s[j];

		if (ch == '\n') {
			pre_copy(p, run, j + 1);
			return j + 1;
		}
		if (ch == '\\' && j + 1 < len && strchr(ESCAPED, s[j + 1]) &&
		    (j == 0 || is_space(s[j - 1])) &&
		    !(j + 2 < len && strchr("*_~", s[j + 2]))) {
			pre_copy(p, run, j);
			buf_addf(&p->out, "%cE%d%c", PH_OPEN, s[j + 1], PH_CLOSE);
			run = j = j + 2;
			continue;
		}
		if (ch == '\\') {
			j += j + 1 < len && is_punct(s[j + 1]) ? 2 : 1;
			continue;
		}
		if (ch == '`') {
			size_t n = 0;

			while (j + n < len && s[j + n] == '`')
				n++;
			k = tick_close(p, j + n, n);
			if (k == NONE) {
				j += n;
				continue;
			}
			for (j += n; j < k; j++)
				if (s[j] == '\n')
					ls = j + 1;
			j = k + n;
			continue;
		}
		if (ch == '%' && j + 1 < len && s[j + 1] == '%') {
			k = find_pair(s, j + 2, len, '%');
			k = k == NONE ? len : k + 2;
			pre_copy(p, run, j);
			comment(p, j, k);
			for (; j < k; j++)
				if (s[j] == '\n')
					ls = j + 1;
			run = j = k;
			continue;
		}
		if (ch == '$' && j + 1 < len && s[j + 1] == '$') {
			k = dd_close(p, j + 2);
			if (k == NONE || k == j + 2) {
				j += 2;
				continue;
			}
			pre_copy(p, run, j);
			display_math(p, j, k, ls);
			for (; j < k; j++)
				if (s[j] == '\n')
					ls = j + 1;
			run = j = k + 2;
			continue;
		}
		if (ch == '$' && j + 1 < len && !is_space(s[j + 1])) {
			k = dollar_close(p, j + 1);
			if (k == NONE) {
				j++;
				continue;
			}
			pre_copy(p, run, j);
			add_placeholder(p, j, k + 1 - j, 0);
			buf_add(&p->tex, s + j + 1, k - j - 1);
			p->math[p->nmath - 1].texlen = k - j - 1;
			run = j = k + 1;
			continue;
		}
		if (ch == '<') {
			k = autolink_end(s, j, len);
			j = k == NONE ? j + 1 : k;
			continue;
		}
		if (ch == '[' && j + 1 < len && s[j + 1] == '[') {
			/*
			 * A wikilink's '|' inside a table row would end the cell:
			 * Obsidian wants "\|" there, but vaults converted from
			 * elsewhere have the bare pipe. Escaping it here makes both
			 * work, in tables and out (where "\|" is just "|").
			 */
			for (k = j + 2; k + 1 < len && s[k] != '\n' && !(s[k] == ']' && s[k + 1] == ']');
			     k++)
				;
			if (k + 1 < len && s[k] == ']' && s[k + 1] == ']' && memchr(s + j, '|', k - j)) {
				size_t m;
				pre_copy(p, run, j);
				for (m = j; m < k + 2; m++) {
					if (s[m] == '|' && s[m - 1] != '\\')
						buf_addc(&p->out, '\\');
					buf_addc(&p->out, s[m]);
				}
				run = j = k + 2;
				continue;
			}
		}
		j++;
	}
	pre_copy(p, run, len);
	return len;
}

static void prepass(struct pre *p)
{
	size_t i = 0;

	p->line = 1;
	p->prev_blank = 1;
	pre_newline(p);
	buf_grow(&p->out, p->len + p->len / 16);
	while (i < p->len) {
		size_t eol = line_end(p, i);
		size_t next = eol < p->len ? eol + 1 : eol;

		if ((p->in_fence && fence_line(p, i, eol)) || block_line(p, i, eol)) {
			pre_copy(p, i, next);
			i = next;
			continue;
		}
		i = scan_inline(p, i);
	}
}

static void pre_release(struct pre *p)
{
	buf_release(&p->out);
	buf_release(&p->tex);
	free(p->lines);
	free(p->math);
}

/* ---- stage 3: annotations ---- */

enum {
	A_SKIP = 1 << 0,      /* not rendered at all */
	A_SEGS = 1 << 1,      /* a text node rendered from its segments */
	A_CALLOUT = 1 << 2,   /* a block quote that is a callout */
	A_CALLHEAD = 1 << 3,  /* the paragraph holding a callout's [!type] line */
	A_TITLE_END = 1 << 4, /* the line break that ends a callout's title */
	A_EMBEDS = 1 << 5,    /* a paragraph of nothing but embeds: rendered without <p> */
	A_ID = 1 << 6,        /* a block carrying a ^block id */
	A_LOCAL = 1 << 7,     /* a Markdown link or image to a file of the vault */
	A_PLAIN = 1 << 8,     /* ... that resolved to an unpublished note: no <a> */
};

struct ann {
	unsigned flags;
	size_t trim_start, trim_end; /* text: bytes cut off the literal's ends */
	size_t seg, nseg;            /* A_SEGS */
	const char *id;              /* A_ID: without the caret; points into a literal */
	size_t idlen, block;         /* block: index in res->blocks while rendering */
	const char *ctype;           /* A_CALLOUT: [!type], in a literal */
	size_t ctypelen;
	char fold;                   /* A_CALLOUT: '+', '-' or 0 */
	char has_title, has_content;
	cmark_node *last_para;       /* list items: cache for "is the last paragraph" */
};

enum seg_kind {
	S_TEXT,   /* s, len: text (may hold math placeholders) */
	S_NODE,   /* a sibling node; only while a run is being processed */
	S_LOPEN,  /* link: wikilink opens */
	S_LCLOSE, /* link: wikilink closes */
	S_EMBED,  /* link: an embed */
	S_MOPEN,  /* ==highlight== opens */
	S_MCLOSE,
	S_TAG,    /* s, len: the tag without '#' */
};

struct seg {
	enum seg_kind kind;
	cmark_node *node; /* the text node the segment came from, or the S_NODE */
	const char *s;
	size_t len;
	size_t link;
};

struct segv {
	struct seg *v;
	size_t n, a;
};

/* A wikilink or embed found by the tree pass, resolved when rendered. */
struct link {
	int embed, done, markdown;
	char *target, *fragment, *label; /* owned until handed to res->refs */
	char *display;                    /* the text shown when there is no label */
	size_t ref;
	enum md_target_kind kind;
	const char *url, *title;
};

/* A set of strings with a counter each: heading ids and folded tags. */
struct sent {
	char *key;
	size_t next;
};

struct sset {
	struct sent *v;
	size_t n, cap;
};

#define POOL_CHUNK 256

struct ctx {
	const struct md_options *opt;
	struct md_result *res;
	struct buf *out;
	struct pre pre;

	struct ann **chunks;
	size_t nchunks, achunks, used;
	struct segv segs, v0, v1, v2, scratch;
	struct link *links;
	size_t nlinks, alinks;
	int link_depth;

	/* rendering */
	cmark_node *plain; /* an image whose alt text is being written */
	uint8_t *aligns;
	uint16_t ncols, col;
	int in_thead, need_tbody;
	int footnote_ix, written_fn;
	int block_line, breaks, math_lines;
	int callouts, footnotes;
	int embed_block;   /* inside an A_EMBEDS paragraph */
	int title_closed;  /* in a callout's head paragraph: 1 past the title, 2 and no <p> */
	cmark_node *summary_node;
	size_t summary_from;
	struct sset ids, tags;
	size_t arefs, asplices, atags, aheadings, ablocks;
	struct buf tmp;
};

static struct ann *ann_of(cmark_node *n)
{
	return cmark_node_get_user_data(n);
}

static struct ann *ann_get(struct ctx *c, cmark_node *n)
{
	struct ann *a = cmark_node_get_user_data(n);

	if (a)
		return a;
	if (c->used == POOL_CHUNK || !c->nchunks) {
		ALLOC_GROW(c->chunks, c->nchunks + 1, c->achunks);
		c->chunks[c->nchunks++] = xcalloc(POOL_CHUNK, sizeof(struct ann));
		c->used = 0;
	}
	a = &c->chunks[c->nchunks - 1][c->used++];
	cmark_node_set_user_data(n, a);
	return a;
}

static int has_flag(cmark_node *n, unsigned flag)
{
	struct ann *a = ann_of(n);

	return a && (a->flags & flag);
}

static void segv_push(struct segv *v, enum seg_kind kind, cmark_node *node, const char *s,
		      size_t len, size_t link)
{
	struct seg *g;

	if (kind == S_TEXT && !len)
		return;
	ALLOC_GROW(v->v, v->n + 1, v->a);
	g = &v->v[v->n++];
	g->kind = kind;
	g->node = node;
	g->s = s;
	g->len = len;
	g->link = link;
}

static void segv_add(struct segv *v, const struct seg *g)
{
	segv_push(v, g->kind, g->node, g->s, g->len, g->link);
}

static size_t sset_slot(const struct sset *set, const char *key)
{
	size_t i = hash64(key, strlen(key)) & (set->cap - 1);

	while (set->v[i].key && strcmp(set->v[i].key, key))
		i = (i + 1) & (set->cap - 1);
	return i;
}

static int sset_has(const struct sset *set, const char *key)
{
	return set->cap && set->v[sset_slot(set, key)].key;
}

/* The entry for key, added (a copy, counter 0) if it was not there. */
static struct sent *sset_add(struct sset *set, const char *key)
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

static void sset_release(struct sset *set)
{
	size_t i;

	for (i = 0; i < set->cap; i++)
		free(set->v[i].key);
	free(set->v);
	set->v = NULL;
	set->n = set->cap = 0;
}

/* ---- math placeholders ---- */

/*
 * Parses a placeholder at s: returns its length, or 0 if there is none.
 * *kind is 'M' (math, *ix its index) or 'E' (an escaped byte, *ix).
 */
static size_t placeholder(const struct ctx *c, const char *s, size_t len, char *kind, size_t *ix)
{
	size_t k = 2, v = 0;

	if (len < 4 || s[0] != PH_OPEN || (s[1] != 'M' && s[1] != 'E'))
		return 0;
	while (k < len && is_digit(s[k]) && k < 20)
		v = v * 10 + (size_t)(s[k++] - '0');
	if (k == 2 || k >= len || s[k] != PH_CLOSE)
		return 0;
	if (s[1] == 'M' ? v >= c->pre.nmath : v > 127 || !v || !strchr(ESCAPED, (int)v))
		return 0;
	*kind = s[1];
	*ix = v;
	return k + 1;
}

/*
 * What a placeholder turns back into. PH_RAW: the source as written (code,
 * raw HTML). PH_URL: math as written, an escape as its character (where
 * cmark would have read the escape: URLs, link targets). PH_TEX: math as
 * its TeX, an escape as its character (plain text).
 */
enum ph_mode { PH_RAW, PH_URL, PH_TEX };

static void add_expanded(const struct ctx *c, struct buf *b, const char *s, size_t len,
			 enum ph_mode mode)
{
	while (len) {
		const char *q = memchr(s, PH_OPEN, len);
		size_t ix, n;
		char kind;

		if (!q) {
			buf_add(b, s, len);
			return;
		}
		buf_add(b, s, (size_t)(q - s));
		len -= (size_t)(q - s);
		s = q;
		n = placeholder(c, s, len, &kind, &ix);
		if (!n) {
			s++;
			len--;
			continue;
		}
		if (kind == 'E') {
			if (mode == PH_RAW)
				buf_addc(b, '\\');
			buf_addc(b, (int)ix);
		} else if (mode == PH_TEX) {
			buf_add(b, c->pre.tex.ptr + c->pre.math[ix].tex, c->pre.math[ix].texlen);
		} else {
			buf_add(b, c->pre.s + c->pre.math[ix].raw, c->pre.math[ix].rawlen);
		}
		s += n;
		len -= n;
	}
}

static int has_placeholder(const struct ctx *c, const char *s, size_t len)
{
	return c->pre.out.len && memchr(s, PH_OPEN, len);
}

/*
 * b's string in a block of its own length, b released: for the short
 * strings md_result keeps (reference targets, heading texts and ids),
 * which a buffer would hold in at least 64 bytes. A copy rather than a
 * shrink in place, which would leave a hole after each one.
 */
static char *detach_exact(struct buf *b)
{
	char *s = xstrndup(b->ptr, b->len);

	buf_release(b);
	return s;
}

static char *dup_expanded(struct ctx *c, const char *s, size_t len, enum ph_mode mode)
{
	struct buf b = BUF_INIT;

	add_expanded(c, &b, s, len, mode);
	return detach_exact(&b);
}

/* ---- plain text of inline content ---- */

static const char *literal(cmark_node *n, size_t *len)
{
	const char *s = cmark_node_get_literal(n);

	if (!s)
		s = "";
	*len = strlen(s);
	return s;
}

static int is_break(cmark_node *n)
{
	cmark_node_type t = cmark_node_get_type(n);

	return t == CMARK_NODE_SOFTBREAK || t == CMARK_NODE_LINEBREAK;
}

static void plain_segs(const struct ctx *c, const struct ann *a, struct buf *b)
{
	size_t i;

	for (i = a->seg; i < a->seg + a->nseg; i++) {
		const struct seg *g = &c->segs.v[i];

		if (g->kind == S_TEXT) {
			buf_add(b, g->s, g->len);
		} else if (g->kind == S_TAG) {
			buf_addc(b, '#');
			buf_add(b, g->s, g->len);
		}
	}
}

/*
 * Appends the plain text of root's inline content (placeholders left in):
 * text, code, what wikilinks show, tags with their '#'. Not images, HTML
 * or footnote marks.
 */
static void plain_of(const struct ctx *c, cmark_node *root, struct buf *b)
{
	cmark_iter *it = cmark_iter_new(root);
	cmark_event_type ev;

	while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
		cmark_node *n = cmark_iter_get_node(it);
		struct ann *a = ann_of(n);
		const char *s;
		size_t len;

		if (ev != CMARK_EVENT_ENTER)
			continue;
		if (a && (a->flags & A_SKIP) && n != root) {
			cmark_iter_reset(it, n, CMARK_EVENT_EXIT);
			continue;
		}
		switch (cmark_node_get_type(n)) {
		case CMARK_NODE_TEXT:
			if (a && (a->flags & A_SEGS)) {
				plain_segs(c, a, b);
				break;
			}
			s = literal(n, &len);
			buf_add(b, s, len);
			break;
		case CMARK_NODE_CODE:
			s = literal(n, &len);
			buf_add(b, s, len);
			break;
		case CMARK_NODE_SOFTBREAK:
		case CMARK_NODE_LINEBREAK:
			buf_addc(b, ' ');
			break;
		case CMARK_NODE_IMAGE:
			cmark_iter_reset(it, n, CMARK_EVENT_EXIT);
			break;
		default:
			break;
		}
	}
	cmark_iter_free(it);
}

/* ---- stage 3: wikilinks, highlights and tags on a run of inlines ---- */

static struct link *new_link(struct ctx *c, size_t *ix)
{
	struct link *l;

	ALLOC_GROW(c->links, c->nlinks + 1, c->alinks);
	*ix = c->nlinks;
	l = &c->links[c->nlinks++];
	memset(l, 0, sizeof(*l));
	return l;
}

/* What a wikilink shows without a label: "Note", "Note > Heading", "Heading". */
static char *link_display(const char *target, const char *fragment)
{
	struct buf b = BUF_INIT;
	const char *f;

	buf_adds(&b, target);
	if (fragment && *fragment) {
		if (*target)
			buf_adds(&b, " > ");
		for (f = fragment; *f; f++) {
			if (*f == '#')
				buf_adds(&b, " > ");
			else
				buf_addc(&b, *f);
		}
	}
	return buf_detach(&b, NULL);
}

/*
 * A "]]" closes the wikilink whose "[[" token is out->v[open]; piece is the
 * text before "]]" in close_node. The target must lie in the opening text
 * node; a label may run across other inline nodes ([[x|`code`]]). Rewrites
 * the tokens from open on and returns 1, or returns 0 if it is no link.
 */
static int make_link(struct ctx *c, struct segv *out, size_t open, cmark_node *close_node,
		     const char *piece, size_t piecelen)
{
	struct seg *o = &out->v[open];
	cmark_node *open_node = o->node;
	int embed = o->s[0] == '!', same = open + 1 == out->n;
	const char *first, *pipe, *hash, *t, *f = NULL, *lab = NULL;
	size_t firstlen, tlen, flen = 0, lablen = 0, ix, i;
	struct link *l;

	if (same) {
		first = piece;
		firstlen = piecelen;
	} else {
		if (out->v[open + 1].kind != S_TEXT || out->v[open + 1].node != open_node)
			return 0;
		first = out->v[open + 1].s;
		firstlen = out->v[open + 1].len;
	}
	pipe = memchr(first, '|', firstlen);
	if (!same && !pipe)
		return 0;
	t = first;
	tlen = pipe ? (size_t)(pipe - first) : firstlen;
	hash = memchr(t, '#', tlen);
	if (hash) {
		f = hash + 1;
		flen = tlen - (size_t)(f - t);
		tlen = (size_t)(hash - t);
		trim(&f, &flen);
	}
	trim(&t, &tlen);
	if (!tlen && !flen)
		return 0;

	l = new_link(c, &ix);
	l->embed = embed;
	l->target = dup_expanded(c, t, tlen, PH_URL);
	l->fragment = f ? dup_expanded(c, f, flen, PH_URL) : NULL;
	if (pipe) {
		lab = pipe + 1;
		lablen = firstlen - (size_t)(lab - first);
	}
	if (pipe && same) {
		trim(&lab, &lablen);
		if (lablen)
			l->label = dup_expanded(c, lab, lablen, PH_URL);
	} else if (pipe) {
		struct buf b = BUF_INIT;
		const char *bs;
		size_t blen;

		buf_add(&b, lab, lablen);
		for (i = open + 2; i < out->n; i++) {
			if (out->v[i].kind == S_TEXT)
				buf_add(&b, out->v[i].s, out->v[i].len);
			else if (out->v[i].kind == S_NODE)
				plain_of(c, out->v[i].node, &b);
		}
		buf_add(&b, piece, piecelen);
		bs = b.ptr;
		blen = b.len;
		trim(&bs, &blen);
		if (blen)
			l->label = dup_expanded(c, bs, blen, PH_URL);
		buf_release(&b);
	}
	l->display = link_display(l->target, l->fragment);

	c->scratch.n = 0;
	for (i = open + 2; !same && i < out->n; i++)
		segv_add(&c->scratch, &out->v[i]);
	out->n = open;
	if (embed) {
		segv_push(out, S_EMBED, open_node, NULL, 0, ix);
		for (i = 0; i < c->scratch.n; i++) {
			cmark_node *n = c->scratch.v[i].node;

			if (n != open_node && n != close_node)
				ann_get(c, n)->flags |= A_SKIP;
		}
		return 1;
	}
	segv_push(out, S_LOPEN, open_node, NULL, 0, ix);
	if (same) {
		if (l->label)
			segv_push(out, S_TEXT, open_node, lab, lablen, 0);
		else
			segv_push(out, S_TEXT, open_node, l->display, strlen(l->display), 0);
	} else {
		while (lablen && is_space(*lab)) {
			lab++;
			lablen--;
		}
		segv_push(out, S_TEXT, open_node, lab, lablen, 0);
		for (i = 0; i < c->scratch.n; i++)
			segv_add(out, &c->scratch.v[i]);
		while (piecelen && is_space(piece[piecelen - 1]))
			piecelen--;
		segv_push(out, S_TEXT, close_node, piece, piecelen, 0);
	}
	segv_push(out, S_LCLOSE, close_node, NULL, 0, ix);
	return 1;
}

/*
 * Phase 1: [[wikilinks]] and ![[embeds]]. One pass, a single pending
 * opener: a later "[[" replaces it, a line break drops it, so a line of
 * "[[[[" stays linear.
 */
static void wikilinks(struct ctx *c, const struct segv *in, struct segv *out)
{
	size_t i, open = 0;
	int active = 0;

	out->n = 0;
	for (i = 0; i < in->n; i++) {
		const struct seg *t = &in->v[i];
		const char *s = t->s;
		size_t len = t->len, cur = 0, k = 0;

		if (t->kind != S_TEXT) {
			if (t->kind == S_NODE && is_break(t->node))
				active = 0;
			segv_add(out, t);
			continue;
		}
		while (k + 1 < len) {
			if (s[k] == '[' && s[k + 1] == '[') {
				size_t st = k > cur && s[k - 1] == '!' ? k - 1 : k;

				segv_push(out, S_TEXT, t->node, s + cur, st - cur, 0);
				active = 1;
				open = out->n;
				segv_push(out, S_TEXT, t->node, s + st, k + 2 - st, 0);
				cur = k = k + 2;
				continue;
			}
			if (active && s[k] == ']' && s[k + 1] == ']') {
				active = 0;
				if (make_link(c, out, open, t->node, s + cur, k - cur))
					cur = k + 2;
				k += 2;
				continue;
			}
			k++;
		}
		segv_push(out, S_TEXT, t->node, s + cur, len - cur, 0);
	}
}

/* May a '#' that starts the next text token open a tag? */
static int boundary_before(const struct segv *out)
{
	const struct seg *p;

	if (!out->n)
		return 1;
	p = &out->v[out->n - 1];
	if (p->kind == S_NODE)
		return is_break(p->node);
	if (p->kind == S_TEXT)
		return p->len && (is_space(p->s[p->len - 1]) || p->s[p->len - 1] == '(');
	return p->kind == S_MOPEN;
}

/* Is there white space (or nothing) next to the edge of token i? */
static int space_beside(const struct segv *in, size_t i, int before)
{
	const struct seg *p;

	if (before ? i == 0 : i + 1 >= in->n)
		return 1;
	p = &in->v[before ? i - 1 : i + 1];
	if (p->kind == S_NODE)
		return is_break(p->node);
	if (p->kind == S_TEXT && p->len)
		return is_space(before ? p->s[p->len - 1] : p->s[0]);
	return 0;
}

/*
 * Phase 2: ==highlight==. A run of exactly two '=' opens when not followed
 * by a space and closes when not preceded by one; the first opener waits
 * for its closer. Inside a wikilink label (depth 1) pairs are separate.
 */
static void highlights(const struct segv *in, struct segv *out)
{
	size_t i, pend[2] = { NONE, NONE };
	int depth = 0;

	out->n = 0;
	for (i = 0; i < in->n; i++) {
		const struct seg *t = &in->v[i];
		const char *s = t->s;
		size_t len = t->len, cur = 0, k = 0;

		if (t->kind != S_TEXT) {
			if (t->kind == S_LOPEN) {
				depth = 1;
			} else if (t->kind == S_LCLOSE) {
				depth = 0;
				pend[1] = NONE;
			} else if (t->kind == S_NODE && has_flag(t->node, A_TITLE_END)) {
				/* a callout's title and its content are separate elements */
				pend[0] = pend[1] = NONE;
			}
			segv_add(out, t);
			continue;
		}
		while (k < len) {
			size_t r = 0;
			int ws_before, ws_after;

			if (s[k] != '=') {
				k++;
				continue;
			}
			while (k + r < len && s[k + r] == '=')
				r++;
			if (r != 2) {
				k += r;
				continue;
			}
			ws_before = k > 0 ? is_space(s[k - 1]) : space_beside(in, i, 1);
			ws_after = k + 2 < len ? is_space(s[k + 2]) : space_beside(in, i, 0);
			if (pend[depth] != NONE && !ws_before) {
				segv_push(out, S_TEXT, t->node, s + cur, k - cur, 0);
				out->v[pend[depth]].kind = S_MOPEN;
				segv_push(out, S_MCLOSE, t->node, NULL, 0, 0);
				pend[depth] = NONE;
				cur = k + 2;
			} else if (pend[depth] == NONE && !ws_after) {
				segv_push(out, S_TEXT, t->node, s + cur, k - cur, 0);
				pend[depth] = out->n;
				segv_push(out, S_TEXT, t->node, s + k, 2, 0);
				cur = k + 2;
			}
			k += 2;
		}
		segv_push(out, S_TEXT, t->node, s + cur, len - cur, 0);
	}
}

/*
 * Length of a #tag's name at s (after the '#'), or 0 when it is no tag:
 * letters and digits of any script, '_', '-', '/', at least one letter or
 * digit, not only digits and slashes (#1984 and #2024/05 are not tags), no
 * trailing slash.
 */
static size_t tag_len(const char *s, size_t len)
{
	size_t k = 0;
	int letter = 0, alnum = 0;

	while (k < len) {
		int32_t cp;
		int n;

		if (s[k] == '_' || s[k] == '-' || s[k] == '/') {
			letter |= s[k] != '/';
			k++;
			continue;
		}
		n = utf8_decode(s + k, len - k, &cp);
		if (n <= 0 || !unicode_is_alnum(cp))
			break;
		alnum = 1;
		if (!(cp >= '0' && cp <= '9'))
			letter = 1;
		k += (size_t)n;
	}
	while (k && s[k - 1] == '/')
		k--;
	return letter && alnum ? k : 0;
}

/* Phase 3: #tags, outside wikilink labels. */
static void tags(const struct segv *in, struct segv *out)
{
	size_t i;
	int depth = 0;

	out->n = 0;
	for (i = 0; i < in->n; i++) {
		const struct seg *t = &in->v[i];
		const char *s = t->s;
		size_t len = t->len, cur = 0, k;

		if (t->kind == S_LOPEN)
			depth = 1;
		else if (t->kind == S_LCLOSE)
			depth = 0;
		if (t->kind != S_TEXT || depth) {
			segv_add(out, t);
			continue;
		}
		for (k = 0; k + 1 < len; k++) {
			size_t n;

			if (s[k] != '#')
				continue;
			if (k > 0 ? !(is_space(s[k - 1]) || s[k - 1] == '(') : !boundary_before(out))
				continue;
			n = tag_len(s + k + 1, len - k - 1);
			if (!n)
				continue;
			segv_push(out, S_TEXT, t->node, s + cur, k - cur, 0);
			segv_push(out, S_TAG, t->node, s + k + 1, n, 0);
			cur = k + 1 + n;
			k = cur - 1;
		}
		segv_push(out, S_TEXT, t->node, s + cur, len - cur, 0);
	}
}

static int is_type(cmark_node *n, cmark_node_type t)
{
	return n && cmark_node_get_type(n) == t;
}

/*
 * Is everything in this paragraph (after a callout's title, in the
 * paragraph that holds it) an embed, a blank or a line break?
 */
static int only_embeds(const struct segv *v, int callhead)
{
	size_t i = 0, k;
	int embeds = 0;

	if (callhead) {
		while (i < v->n && !(v->v[i].kind == S_NODE && has_flag(v->v[i].node, A_TITLE_END)))
			i++;
		if (i++ == v->n)
			return 0;
	}
	for (; i < v->n; i++) {
		const struct seg *g = &v->v[i];

		switch (g->kind) {
		case S_EMBED:
			embeds = 1;
			break;
		case S_TEXT:
			for (k = 0; k < g->len; k++)
				if (!is_space(g->s[k]))
					return 0;
			break;
		case S_NODE:
			if (!is_break(g->node))
				return 0;
			break;
		default:
			return 0;
		}
	}
	return embeds;
}

static int worth_scanning(const char *s, size_t len)
{
	size_t k;

	for (k = 0; k < len; k++)
		if (s[k] == '[' || s[k] == '=' || s[k] == '#')
			return 1;
	return 0;
}

/* Runs the three phases on parent's children and stores the segments. */
static void process_run(struct ctx *c, cmark_node *parent)
{
	cmark_node *n;
	struct segv *v0 = &c->v0, *v1 = &c->v1, *v2 = &c->v2;
	int todo = 0;
	size_t i;

	v0->n = 0;
	for (n = cmark_node_first_child(parent); n; n = cmark_node_next(n)) {
		struct ann *a = ann_of(n);
		const char *s;
		size_t len;

		if (!is_type(n, CMARK_NODE_TEXT) || (a && (a->flags & A_SKIP))) {
			segv_push(v0, S_NODE, n, NULL, 0, 0);
			continue;
		}
		s = literal(n, &len);
		if (a) {
			size_t st = a->trim_start, en = len - a->trim_end;

			todo = 1;
			s += st;
			len = en > st ? en - st : 0;
		}
		if (!todo && worth_scanning(s, len))
			todo = 1;
		/* even an empty text keeps a token: its node must get its segments */
		ALLOC_GROW(v0->v, v0->n + 1, v0->a);
		v0->v[v0->n].kind = S_TEXT;
		v0->v[v0->n].node = n;
		v0->v[v0->n].s = s;
		v0->v[v0->n].len = len;
		v0->v[v0->n].link = 0;
		v0->n++;
	}
	if (!todo)
		return;
	wikilinks(c, v0, v1);
	highlights(v1, v2);
	tags(v2, v1);
	if (is_type(parent, CMARK_NODE_PARAGRAPH) && only_embeds(v1, has_flag(parent, A_CALLHEAD)))
		ann_get(c, parent)->flags |= A_EMBEDS;

	/* every text child gets segments, none if all of it went into markup */
	for (i = 0; i < v0->n; i++) {
		if (v0->v[i].kind == S_TEXT) {
			struct ann *a = ann_get(c, v0->v[i].node);

			a->flags |= A_SEGS;
			a->nseg = 0;
		}
	}
	n = NULL;
	for (i = 0; i < v1->n; i++) {
		const struct seg *g = &v1->v[i];
		struct ann *a;

		if (g->kind == S_NODE)
			continue;
		a = ann_get(c, g->node);
		if (g->node != n) {
			n = g->node;
			a->seg = c->segs.n;
			a->nseg = 0;
		}
		segv_add(&c->segs, g);
		a->nseg++;
	}
}

/* ---- stage 3: blocks ---- */

static int id_char(char ch)
{
	return is_alpha(ch) || is_digit(ch) || ch == '-';
}

/*
 * "> [!type]+ Title": marks the quote as a callout, cuts the marker off the
 * first text and marks the line break that ends the title.
 */
static void find_callout(struct ctx *c, cmark_node *para)
{
	cmark_node *quote = cmark_node_parent(para), *first = cmark_node_first_child(para), *n;
	const char *s, *close;
	size_t len, k;
	struct ann *q, *a;

	if (!is_type(quote, CMARK_NODE_BLOCK_QUOTE) || cmark_node_first_child(quote) != para ||
	    !is_type(first, CMARK_NODE_TEXT))
		return;
	s = literal(first, &len);
	if (len < 4 || s[0] != '[' || s[1] != '!')
		return;
	close = memchr(s + 2, ']', len - 2);
	if (!close || close == s + 2)
		return;
	for (k = 2; s + k < close; k++)
		if (is_space(s[k]))
			return;
	q = ann_get(c, quote);
	q->flags |= A_CALLOUT;
	q->ctype = s + 2;
	q->ctypelen = (size_t)(close - s) - 2;
	k = (size_t)(close - s) + 1;
	if (k < len && (s[k] == '+' || s[k] == '-'))
		q->fold = s[k++];
	while (k < len && is_space(s[k]))
		k++;
	a = ann_get(c, first);
	a->trim_start = k;
	ann_get(c, para)->flags |= A_CALLHEAD;
	q->has_title = k < len;
	q->has_content = cmark_node_next(para) != NULL;
	for (n = cmark_node_next(first); n; n = cmark_node_next(n)) {
		if (is_break(n)) {
			ann_get(c, n)->flags |= A_TITLE_END;
			q->has_content = 1;
			break;
		}
		q->has_title = 1;
	}
}

static int takes_trailing_id(cmark_node *n)
{
	cmark_node_type t = cmark_node_get_type(n);
	const char *ts;

	if (t == CMARK_NODE_BLOCK_QUOTE || t == CMARK_NODE_LIST || t == CMARK_NODE_CODE_BLOCK)
		return 1;
	ts = cmark_node_get_type_string(n);
	return !strcmp(ts, "table");
}

static cmark_node *last_paragraph(struct ctx *c, cmark_node *item)
{
	struct ann *a = ann_get(c, item);
	cmark_node *n;

	if (!a->last_para) {
		for (n = cmark_node_last_child(item); n; n = cmark_node_previous(n))
			if (is_type(n, CMARK_NODE_PARAGRAPH))
				break;
		a->last_para = n ? n : item;
	}
	return a->last_para;
}

/*
 * "text ^id" gives the paragraph (or its list item) an id; a paragraph of
 * just "^id" right after a table, quote, list or code block gives it to
 * that block, and is itself dropped.
 */
static void find_block_id(struct ctx *c, cmark_node *para)
{
	cmark_node *last = cmark_node_last_child(para), *prev, *target, *parent;
	const char *s;
	size_t len, st = 0, e, b, idend;
	struct ann *a = NULL, *t;

	if (!is_type(last, CMARK_NODE_TEXT))
		return;
	s = literal(last, &len);
	a = ann_of(last);
	if (a) {
		st = a->trim_start;
		if (a->trim_end)
			return;
	}
	e = len;
	while (e > st && is_space(s[e - 1]))
		e--;
	b = e;
	while (b > st && id_char(s[b - 1]))
		b--;
	if (b == e || b == st || s[b - 1] != '^')
		return;
	idend = e;
	if (b - 1 == st && st == 0 && cmark_node_first_child(para) == last) {
		prev = cmark_node_previous(para);
		if (!prev || !takes_trailing_id(prev) || has_flag(para, A_CALLHEAD))
			return;
		t = ann_get(c, prev);
		t->flags |= A_ID;
		t->id = s + b;
		t->idlen = idend - b;
		ann_get(c, para)->flags |= A_SKIP;
		return;
	}
	if (b - 1 == st) {
		prev = cmark_node_previous(last);
		if (!prev || !is_break(prev))
			return;
		ann_get(c, prev)->flags |= A_SKIP;
		e = b - 1;
	} else if (is_space(s[b - 2])) {
		e = b - 1;
		while (e > st && is_space(s[e - 1]))
			e--;
	} else {
		return;
	}
	a = ann_get(c, last);
	a->trim_end = len - e;
	parent = cmark_node_parent(para);
	if (has_flag(para, A_CALLHEAD))
		target = parent;
	else if (is_type(parent, CMARK_NODE_ITEM) &&
		 (last_paragraph(c, parent) == para ||
		  cmark_node_get_list_tight(cmark_node_parent(parent))))
		target = parent;
	else
		target = para;
	t = ann_get(c, target);
	t->flags |= A_ID;
	t->id = s + b;
	t->idlen = idend - b;
}

static int has_inline_children(cmark_node *n)
{
	cmark_node *f = cmark_node_first_child(n);

	return f && (cmark_node_get_type(f) & CMARK_NODE_TYPE_MASK) == CMARK_NODE_TYPE_INLINE;
}

/*
 * cmark splits text at '[', '!' and the like; the autolink extension's
 * post-processing joins the pieces back (cmark_consolidate_text_nodes),
 * so this only does work if that ever stops: the scanners need "[[" and
 * "[!note]" in one piece. One copy per run of pieces, not one per piece.
 */
static void merge_texts(cmark_node *parent)
{
	cmark_node *n = cmark_node_first_child(parent), *m, *next;
	struct buf b = BUF_INIT;

	for (; n; n = cmark_node_next(n)) {
		const char *s;
		size_t len;

		if (!is_type(n, CMARK_NODE_TEXT) || !is_type(cmark_node_next(n), CMARK_NODE_TEXT))
			continue;
		buf_reset(&b);
		s = literal(n, &len);
		buf_add(&b, s, len);
		for (m = cmark_node_next(n); is_type(m, CMARK_NODE_TEXT); m = next) {
			next = cmark_node_next(m);
			s = literal(m, &len);
			buf_add(&b, s, len);
			cmark_node_free(m);
		}
		cmark_node_set_literal(n, b.ptr);
	}
	buf_release(&b);
}

static void annotate(struct ctx *c, cmark_node *doc)
{
	cmark_iter *it = cmark_iter_new(doc);
	cmark_event_type ev;

	while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
		cmark_node *n = cmark_iter_get_node(it);
		cmark_node_type t = cmark_node_get_type(n);

		if (t == CMARK_NODE_LINK || t == CMARK_NODE_IMAGE) {
			c->link_depth += ev == CMARK_EVENT_ENTER ? 1 : -1;
			continue;
		}
		if (ev != CMARK_EVENT_ENTER)
			continue;
		if (has_flag(n, A_SKIP)) {
			cmark_iter_reset(it, n, CMARK_EVENT_EXIT);
			continue;
		}
		if (!c->link_depth && has_inline_children(n))
			merge_texts(n);
		if (t == CMARK_NODE_PARAGRAPH) {
			find_callout(c, n);
			find_block_id(c, n);
			if (has_flag(n, A_SKIP)) {
				cmark_iter_reset(it, n, CMARK_EVENT_EXIT);
				continue;
			}
		}
		if (!c->link_depth && has_inline_children(n))
			process_run(c, n);
	}
	cmark_iter_free(it);
}

/* ---- stage 4: the renderer ---- */

static void cr(struct buf *b)
{
	if (b->len && b->ptr[b->len - 1] != '\n')
		buf_addc(b, '\n');
}

/* cmark-gfm's houdini_escape_href: URL-safe bytes stay, & and ' become entities. */
static void add_href(struct buf *b, const char *s, size_t len)
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

	if (has_placeholder(c, s, len)) {
		buf_reset(&c->tmp);
		add_expanded(c, &c->tmp, s, len, PH_RAW);
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

/* Escaped text with placeholders turned back (code, titles, alt text). */
static void add_html_exp(struct ctx *c, struct buf *b, const char *s, size_t len,
			 enum ph_mode mode)
{
	if (has_placeholder(c, s, len)) {
		struct buf t = BUF_INIT;

		add_expanded(c, &t, s, len, mode);
		buf_add_html(b, t.ptr, t.len);
		buf_release(&t);
		return;
	}
	buf_add_html(b, s, len);
}

/*
 * May the URL of a Markdown link or image be written (sanitize_url())? It
 * is judged with its placeholders turned back, as add_href_raw() writes it.
 */
static int url_ok(struct ctx *c, const char *s, enum sanitize_url_kind kind)
{
	size_t len = strlen(s);

	if (!has_placeholder(c, s, len))
		return sanitize_url(s, len, kind);
	buf_reset(&c->tmp);
	add_expanded(c, &c->tmp, s, len, PH_URL);
	return sanitize_url(c->tmp.ptr, c->tmp.len, kind);
}

static void add_href_raw(struct ctx *c, const char *s, size_t len)
{
	if (has_placeholder(c, s, len)) {
		struct buf t = BUF_INIT;

		add_expanded(c, &t, s, len, PH_URL);
		add_href(c->out, t.ptr, t.len);
		buf_release(&t);
		return;
	}
	add_href(c->out, s, len);
}

/* ---- plain text for search and summaries ---- */

static void text_add(struct ctx *c, const char *s, size_t len, enum ph_mode mode)
{
	add_expanded(c, &c->res->text, s, len, mode);
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
	return detach_exact(&b);
}

/* ---- text, math, tags ---- */

static void math_html(struct ctx *c, size_t ix, int block)
{
	const struct math *m = &c->pre.math[ix];
	const char *tex = c->pre.tex.ptr + m->tex;
	struct buf *o = c->out;

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
		n = placeholder(c, s, len, &kind, &ix);
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

	if (!sset_has(&c->tags, key)) {
		sset_add(&c->tags, key);
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

/* ---- wikilinks and embeds ---- */

static int src_line(const struct ctx *c)
{
	long l = (long)c->block_line + c->breaks;
	int first = c->opt->first_line > 0 ? c->opt->first_line : 1;

	if (c->pre.nlines && l >= 1 && (size_t)l <= c->pre.nlines)
		l = c->pre.lines[l - 1];
	return (int)l + c->math_lines + first - 1;
}

/* Hands the link to res->refs and asks the caller what it points at. */
static struct link *resolve(struct ctx *c, size_t ix)
{
	struct md_result *res = c->res;
	struct link *l = &c->links[ix];
	struct md_target t = { MD_TARGET_BROKEN, NULL, NULL };
	struct md_ref *r;

	if (l->done)
		return l;
	ALLOC_GROW(res->refs, res->nrefs + 1, c->arefs);
	r = &res->refs[res->nrefs];
	r->kind = l->embed ? MD_REF_EMBED : MD_REF_LINK;
	r->target = l->target;
	r->fragment = l->fragment;
	r->label = l->label;
	r->line = src_line(c);
	r->markdown = l->markdown;
	l->ref = res->nrefs++;
	l->done = 1;
	if (c->opt->resolve)
		c->opt->resolve(c->opt->resolve_ctx, l->ref, r, &t);
	l->kind = t.kind;
	l->url = t.url ? t.url : "";
	l->title = t.title;
	return l;
}

/* "#heading-id" or "#^block" for a wikilink's fragment ("H1#H2" uses H2). */
static void add_fragment(struct buf *o, const char *frag)
{
	const char *last;
	char *id;

	if (!frag || !*frag)
		return;
	buf_addc(o, '#');
	if (frag[0] == '^') {
		buf_adds_html(o, frag);
		return;
	}
	last = strrchr(frag, '#');
	id = md_heading_id(last ? last + 1 : frag);
	buf_adds_html(o, id);
	free(id);
}

/*
 * A Markdown link or image whose URL is a relative path with a file
 * extension ("../Other/Note.md", "media/x.png", "My%20Note.md#Usage")
 * points into the vault: it resolves like a wikilink, publishes the
 * attachment it names, counts as a backlink, and is reported when broken.
 * URLs with a scheme, root-relative URLs, fragments alone and paths
 * without an extension are the web's, and are left as written.
 */
static int local_url(const char *u)
{
	size_t n = strcspn(u, "?#"), i;
	const char *last;

	if (!n || u[0] == '/' || u[0] == '#')
		return 0;
	for (i = 0; i < n; i++) {
		if (u[i] == ':')
			return 0;
		if (u[i] == '/')
			break;
	}
	for (i = 0; i < n; i++)
		if (u[i] == '\\')
			return 0;
	last = u;
	for (i = 0; i < n; i++)
		if (u[i] == '/')
			last = u + i + 1;
	return memchr(last, '.', (size_t)(u + n - last)) != NULL && last[0] != '.';
}

/* %XX decoded; NULs dropped; an invalid escape leaves the text as written. */
static char *percent_decode(const char *s, size_t len)
{
	struct buf b = BUF_INIT;
	size_t i, j;

	if (buf_add_urldecoded(&b, s, len, 0) < 0) {
		buf_reset(&b);
		buf_add(&b, s, len);
	}
	for (i = j = 0; i < b.len; i++)
		if (b.ptr[i])
			b.ptr[j++] = b.ptr[i];
	buf_setlen(&b, j);
	return detach_exact(&b);
}

/* Registers a local link or image as a reference and resolves it; returns its link. */
static struct link *local_link(struct ctx *c, const char *u, int embed)
{
	size_t ix, n = strcspn(u, "?#");
	struct link *l = new_link(c, &ix);
	char *target = percent_decode(u, n), *frag = NULL;

	if (!utf8_valid(target, strlen(target))) {
		free(target);
		target = xstrdup(u);
		target[n] = '\0';
	}
	if (u[n] == '#' && u[n + 1]) {
		frag = percent_decode(u + n + 1, strlen(u + n + 1));
		if (!utf8_valid(frag, strlen(frag))) {
			free(frag);
			frag = NULL;
		}
	}
	l->embed = embed;
	l->target = target;
	l->fragment = frag;
	l->markdown = 1;
	return resolve(c, ix);
}

static void link_open(struct ctx *c, size_t ix)
{
	struct link *l = resolve(c, ix);
	struct buf *o = c->out;

	switch (l->kind) {
	case MD_TARGET_NOTE:
		buf_adds(o, "<a class=\"internal\" href=\"");
		buf_adds_html(o, l->url);
		add_fragment(o, l->fragment);
		buf_addc(o, '"');
		if (l->title) {
			buf_adds(o, " title=\"");
			buf_adds_html(o, l->title);
			buf_addc(o, '"');
		}
		buf_addc(o, '>');
		break;
	case MD_TARGET_ATTACHMENT:
		buf_adds(o, "<a class=\"internal attachment\" href=\"");
		buf_adds_html(o, l->url);
		if (l->fragment && *l->fragment) {
			buf_addc(o, '#');
			buf_adds_html(o, l->fragment);
		}
		buf_adds(o, "\">");
		break;
	case MD_TARGET_PLAIN:
		break;
	case MD_TARGET_BROKEN:
	default:
		if (!*l->target) {
			/* [[#Heading]]: a heading of this note */
			buf_adds(o, "<a class=\"internal\" href=\"");
			add_fragment(o, l->fragment);
			buf_adds(o, "\">");
			break;
		}
		buf_adds(o, "<a class=\"internal broken\" title=\"not found: ");
		buf_adds_html(o, l->target);
		buf_adds(o, "\">");
		break;
	}
}

static void link_close(struct ctx *c, size_t ix)
{
	if (c->links[ix].kind != MD_TARGET_PLAIN)
		buf_adds(c->out, "</a>");
}

static int ext_is(const char *ext, const char *list)
{
	size_t n = strlen(ext);
	const char *p = list;

	if (!n)
		return 0;
	while ((p = strstr(p, ext))) {
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return 1;
		p += n;
	}
	return 0;
}

/* "300" or "300x200": sets *w and *h (0 when absent); 0 if it is no size. */
static int parse_size(const char *s, size_t len, unsigned long *w, unsigned long *h)
{
	size_t k = 0;

	*w = *h = 0;
	while (k < len && is_digit(s[k]) && k < 6)
		*w = *w * 10 + (unsigned long)(s[k++] - '0');
	if (!k)
		return 0;
	if (k == len)
		return 1;
	if (s[k] != 'x' || k + 1 == len)
		return 0;
	while (++k < len) {
		if (!is_digit(s[k]) || *h > 99999)
			return 0;
		*h = *h * 10 + (unsigned long)(s[k] - '0');
	}
	return 1;
}

static void attachment_embed(struct ctx *c, const struct link *l)
{
	struct buf *o = c->out;
	const char *base = strrchr(l->target, '/'), *dot;
	char ext[8] = "";
	size_t i;

	base = base ? base + 1 : l->target;
	dot = strrchr(base, '.');
	if (dot && strlen(dot + 1) < sizeof(ext)) {
		for (i = 0; dot[1 + i]; i++)
			ext[i] = lower(dot[1 + i]);
		ext[i] = '\0';
	}
	if (ext_is(ext, "png jpg jpeg gif svg webp avif bmp ico")) {
		const char *alt = l->target, *lab = l->label, *bar;
		size_t altlen = strlen(alt), lablen = lab ? strlen(lab) : 0;
		unsigned long w = 0, h = 0;

		if (lab) {
			bar = strrchr(lab, '|');
			if (bar && parse_size(bar + 1, lablen - (size_t)(bar + 1 - lab), &w, &h)) {
				alt = lab;
				altlen = (size_t)(bar - lab);
			} else if (!parse_size(lab, lablen, &w, &h)) {
				alt = lab;
				altlen = lablen;
			}
		}
		buf_adds(o, "<img src=\"");
		buf_adds_html(o, l->url);
		buf_adds(o, "\" alt=\"");
		buf_add_html(o, alt, altlen);
		buf_addc(o, '"');
		if (w)
			buf_addf(o, " width=\"%lu\"", w);
		if (h)
			buf_addf(o, " height=\"%lu\"", h);
		buf_adds(o, " />");
	} else if (ext_is(ext, "mp3 wav ogg oga m4a flac aac opus")) {
		buf_adds(o, "<audio controls src=\"");
		buf_adds_html(o, l->url);
		buf_adds(o, "\"></audio>");
	} else if (ext_is(ext, "mp4 webm mov ogv mkv m4v")) {
		buf_adds(o, "<video controls src=\"");
		buf_adds_html(o, l->url);
		buf_adds(o, "\"></video>");
	} else if (!strcmp(ext, "pdf")) {
		buf_adds(o, "<iframe class=\"pdf\" src=\"");
		buf_adds_html(o, l->url);
		if (l->fragment && *l->fragment) {
			buf_addc(o, '#');
			buf_adds_html(o, l->fragment);
		}
		buf_adds(o, "\"></iframe>");
	} else {
		buf_adds(o, "<a class=\"internal attachment\" href=\"");
		buf_adds_html(o, l->url);
		buf_adds(o, "\">");
		buf_adds_html(o, l->label ? l->label : l->target);
		buf_adds(o, "</a>");
	}
}

static void render_embed(struct ctx *c, size_t ix)
{
	struct md_result *res = c->res;
	struct link *l = resolve(c, ix);
	struct buf *o = c->out;

	if (l->kind == MD_TARGET_PLAIN)
		return; /* an unpublished note leaves no trace */
	if (c->embed_block)
		cr(o);
	switch (l->kind) {
	case MD_TARGET_NOTE:
		buf_adds(o, "<div class=\"embed\" data-src=\"");
		buf_adds_html(o, l->target);
		if (l->fragment && *l->fragment) {
			buf_addc(o, '#');
			buf_adds_html(o, l->fragment);
		}
		buf_adds(o, "\">");
		ALLOC_GROW(res->splices, res->nsplices + 1, c->asplices);
		res->splices[res->nsplices].offset = o->len;
		res->splices[res->nsplices].ref = l->ref;
		res->nsplices++;
		buf_adds(o, "</div>");
		break;
	case MD_TARGET_ATTACHMENT:
		attachment_embed(c, l);
		break;
	default:
		buf_adds(o, "<span class=\"embed broken\" title=\"not found: ");
		buf_adds_html(o, l->target);
		buf_adds(o, "\">");
		buf_adds_html(o, l->display);
		buf_adds(o, "</span>");
		break;
	}
	if (c->embed_block)
		buf_addc(o, '\n');
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
			link_open(c, g->link);
			break;
		case S_LCLOSE:
			link_close(c, g->link);
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

	if (!sset_has(&c->ids, base)) {
		sset_add(&c->ids, base);
		return base;
	}
	for (;;) {
		/* base's counter: "intro-1", "intro-2" without trying them all again */
		size_t n = ++sset_add(&c->ids, base)->next;

		buf_reset(&c->tmp);
		buf_addf(&c->tmp, "%s-%zu", base, n);
		if (!sset_has(&c->ids, c->tmp.ptr)) {
			sset_add(&c->ids, c->tmp.ptr);
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

	plain_of(c, n, &b);
	s = b.ptr;
	len = b.len;
	trim(&s, &len);
	ALLOC_GROW(res->headings, res->nheadings + 1, c->aheadings);
	h = &res->headings[res->nheadings++];
	h->level = level;
	h->text = dup_expanded(c, s, len, PH_TEX);
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
	if (placeholder(c, s, len, &kind, &ix) != len || kind != 'M' || !c->pre.math[ix].display)
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

	close_title(c, cmark_node_parent(cmark_node_parent(br)));
	if (has_flag(cmark_node_parent(br), A_EMBEDS)) {
		c->embed_block = 1;
		c->title_closed = 2;
		return;
	}
	if (ix == NONE) {
		buf_adds(c->out, "<p>");
		c->title_closed = 1;
		return;
	}
	math_html(c, ix, 1);
	text_add(c, c->pre.tex.ptr + c->pre.math[ix].tex, c->pre.math[ix].texlen, PH_TEX);
	ann_get(c, next)->flags |= A_SKIP;
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
	add_href(o, (const char *)def->as.literal.data, (size_t)def->as.literal.len);
	buf_adds(o, "\" class=\"footnote-backref\" data-footnote-backref "
		    "aria-label=\"Back to content\">\xE2\x86\xA9</a>");
	for (i = 2; i <= def->footnote.def_count; i++) {
		buf_adds(o, " <a href=\"#fnref-");
		add_href(o, (const char *)def->as.literal.data, (size_t)def->as.literal.len);
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
	add_href(o, label, labellen);
	buf_adds(o, "\" id=\"fnref-");
	add_href(o, label, labellen);
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
			return;
		}
		if (!tight_paragraph(n)) {
			cr(o);
			tag_open(c, a, "<p");
			buf_addc(o, '>');
		}
		return;
	}
	if (a && (a->flags & A_CALLHEAD)) {
		/* the title is still open when no line followed it */
		if (c->title_closed == 1)
			buf_adds(o, "</p>\n");
		else if (!c->title_closed)
			close_title(c, cmark_node_parent(n));
		c->title_closed = 0;
		c->embed_block = 0;
	} else if (a && (a->flags & A_EMBEDS)) {
		c->embed_block = 0;
	} else if (!tight_paragraph(n)) {
		cmark_node *parent = cmark_node_parent(n);

		if (is_type(parent, CMARK_NODE_FOOTNOTE_DEFINITION) && !cmark_node_next(n)) {
			buf_addc(o, ' ');
			footnote_backref(c, parent);
		}
		tag_close(c, a, "</p>");
		buf_addc(o, '\n');
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
	if (has_placeholder(c, info, infolen)) {
		exp = dup_expanded(c, info, infolen, PH_URL);
		info = exp;
		infolen = strlen(info);
	}
	while (first < infolen && !is_space(info[first]))
		first++;
	lit = literal(n, &len);
	cr(o);
	if (first == 7 && !memcmp(info, "mermaid", 7)) {
		tag_open(c, a, "<pre class=\"mermaid\"");
		buf_addc(o, '>');
		add_html_exp(c, o, lit, len, PH_RAW);
		tag_close(c, a, "</pre>");
	} else {
		tag_open(c, a, "<pre");
		if (!infolen) {
			buf_adds(o, "><code>");
		} else {
			buf_adds(o, "><code class=\"language-");
			buf_add_html(o, info, first);
			buf_adds(o, "\">");
		}
		add_html_exp(c, o, lit, len, PH_RAW);
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
		add_html_exp(c, c->out, s, len, PH_URL);
		break;
	case CMARK_NODE_CODE:
	case CMARK_NODE_HTML_INLINE:
		s = literal(n, &len);
		add_html_exp(c, c->out, s, len, PH_RAW);
		break;
	case CMARK_NODE_LINEBREAK:
	case CMARK_NODE_SOFTBREAK:
		buf_addc(c->out, ' ');
		break;
	default:
		break;
	}
}

static void render_node(struct ctx *c, cmark_iter *it, cmark_node *n, int entering)
{
	struct md_result *res = c->res;
	struct buf *o = c->out;
	struct ann *a = ann_of(n);
	const char *s;
	size_t len;

	switch (cmark_node_get_type(n)) {
	case CMARK_NODE_DOCUMENT:
		break;
	case CMARK_NODE_BLOCK_QUOTE:
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
		break;
	case CMARK_NODE_LIST:
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
		break;
	case CMARK_NODE_ITEM:
		if (entering) {
			cr(o);
			tag_open(c, a, "<li");
			buf_addc(o, '>');
			if (!strcmp(cmark_node_get_type_string(n), "tasklist"))
				buf_adds(o, cmark_gfm_extensions_get_tasklist_item_checked(n) ?
				       "<input type=\"checkbox\" checked=\"\" disabled=\"\" /> " :
				       "<input type=\"checkbox\" disabled=\"\" /> ");
		} else {
			tag_close(c, a, "</li>");
			buf_addc(o, '\n');
			text_break(c, '\n');
		}
		break;
	case CMARK_NODE_HEADING:
		if (entering) {
			cr(o);
			c->block_line = cmark_node_get_start_line(n);
			c->breaks = c->math_lines = 0;
			heading_open(c, n);
		} else {
			buf_addf(o, "</h%d>\n", cmark_node_get_heading_level(n));
			text_break(c, '\n');
		}
		break;
	case CMARK_NODE_CODE_BLOCK:
		code_block(c, n, a);
		break;
	case CMARK_NODE_HTML_BLOCK:
		cr(o);
		s = literal(n, &len);
		add_raw_html(c, s, len, 1);
		cr(o);
		break;
	case CMARK_NODE_THEMATIC_BREAK:
		cr(o);
		buf_adds(o, "<hr />\n");
		break;
	case CMARK_NODE_PARAGRAPH:
		paragraph(c, it, n, a, entering);
		break;
	case CMARK_NODE_TEXT:
		if (a && (a->flags & A_SEGS)) {
			render_segs(c, a);
		} else if (!c->embed_block) {
			s = literal(n, &len);
			emit_text(c, s, len);
		}
		break;
	case CMARK_NODE_SOFTBREAK:
		c->breaks++;
		c->math_lines = 0;
		if (a && (a->flags & A_TITLE_END)) {
			title_end(c, n);
			break;
		}
		if (!c->embed_block)
			buf_addc(o, '\n');
		text_break(c, ' ');
		break;
	case CMARK_NODE_LINEBREAK:
		c->breaks++;
		c->math_lines = 0;
		if (a && (a->flags & A_TITLE_END)) {
			title_end(c, n);
			break;
		}
		buf_adds(o, "<br />\n");
		text_break(c, ' ');
		break;
	case CMARK_NODE_CODE:
		s = literal(n, &len);
		buf_adds(o, "<code>");
		add_html_exp(c, o, s, len, PH_RAW);
		buf_adds(o, "</code>");
		text_add(c, s, len, PH_RAW);
		break;
	case CMARK_NODE_HTML_INLINE:
		s = literal(n, &len);
		add_raw_html(c, s, len, 0);
		break;
	case CMARK_NODE_EMPH:
		buf_adds(o, entering ? "<em>" : "</em>");
		break;
	case CMARK_NODE_STRONG:
		buf_adds(o, entering ? "<strong>" : "</strong>");
		break;
	case CMARK_NODE_LINK:
		if (!entering) {
			buf_adds(o, has_flag(n, A_PLAIN) ? "</span>" : "</a>");
			break;
		}
		s = cmark_node_get_url(n);
		if (s && local_url(s)) {
			struct link *l = local_link(c, s, 0);
			struct ann *la = ann_get(c, n);
			la->flags |= A_LOCAL;
			if (l->kind == MD_TARGET_PLAIN) {
				la->flags |= A_PLAIN;
				buf_adds(o, "<span class=\"internal\">");
				break;
			}
			if (l->kind == MD_TARGET_BROKEN) {
				/* not in the vault: perhaps meant for the web, keep it as written */
				buf_adds(o, "<a href=\"");
				add_href_raw(c, s, strlen(s));
				buf_adds(o, "\">");
				break;
			}
			buf_adds(o, l->kind == MD_TARGET_NOTE ? "<a class=\"internal\" href=\""
							     : "<a class=\"internal attachment\" href=\"");
			buf_adds_html(o, l->url);
			if (l->kind == MD_TARGET_NOTE)
				add_fragment(o, l->fragment);
			buf_adds(o, "\">");
			break;
		}
		/* an unsafe URL (javascript:...) leaves the text in an <a> without href */
		if (!s || url_ok(c, s, SANITIZE_URL_LINK)) {
			buf_adds(o, "<a href=\"");
			add_href_raw(c, s ? s : "", s ? strlen(s) : 0);
			buf_addc(o, '"');
		} else {
			buf_adds(o, "<a");
		}
		s = cmark_node_get_title(n);
		if (s && *s) {
			buf_adds(o, " title=\"");
			add_html_exp(c, o, s, strlen(s), PH_URL);
			buf_addc(o, '"');
		}
		buf_addc(o, '>');
		break;
	case CMARK_NODE_IMAGE:
		if (entering) {
			s = cmark_node_get_url(n);
			if (s && !local_url(s) && !url_ok(c, s, SANITIZE_URL_IMAGE)) {
				/* an unsafe URL: the image keeps its alt text, not its src */
				buf_adds(o, "<img alt=\"");
				c->plain = n;
				break;
			}
			buf_adds(o, "<img src=\"");
			if (s && local_url(s)) {
				struct link *l = local_link(c, s, 1);
				if (l->kind == MD_TARGET_ATTACHMENT || l->kind == MD_TARGET_NOTE)
					buf_adds_html(o, l->url);
				else /* broken or private: the src as written, so nothing leaks */
					add_href_raw(c, s, l->kind == MD_TARGET_PLAIN ? 0 : strlen(s));
			} else {
				add_href_raw(c, s ? s : "", s ? strlen(s) : 0);
			}
			buf_adds(o, "\" alt=\"");
			c->plain = n;
			break;
		}
		s = cmark_node_get_title(n);
		if (s && *s) {
			buf_adds(o, "\" title=\"");
			add_html_exp(c, o, s, strlen(s), PH_URL);
		}
		buf_adds(o, "\" />");
		break;
	case CMARK_NODE_FOOTNOTE_DEFINITION:
		if (entering) {
			if (c->footnote_ix == 0)
				buf_adds(o, "<section class=\"footnotes\" data-footnotes>\n<ol>\n");
			c->footnote_ix++;
			c->footnotes++;
			buf_adds(o, "<li id=\"fn-");
			add_href(o, (const char *)n->as.literal.data, (size_t)n->as.literal.len);
			buf_adds(o, "\">\n");
		} else {
			if (c->written_fn < c->footnote_ix) {
				footnote_backref(c, n);
				buf_addc(o, '\n');
			}
			buf_adds(o, "</li>\n");
			c->footnotes--;
		}
		break;
	case CMARK_NODE_FOOTNOTE_REFERENCE:
		if (entering)
			footnote_ref(c, n);
		break;
	default:
		table_part(c, n, a, cmark_node_get_type_string(n), entering);
		break;
	}
	(void)res;
}

static void render(struct ctx *c, cmark_node *doc)
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
		render_node(c, it, n, ev == CMARK_EVENT_ENTER);
	}
	cmark_iter_free(it);
	if (c->footnote_ix)
		buf_adds(c->out, "</ol>\n</section>\n");
}

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

/* ---- the public functions ---- */

static int has_escape(const char *s, size_t len)
{
	const char *q;

	while (len > 1 && (q = memchr(s, '\\', len - 1))) {
		if (strchr(ESCAPED, q[1]))
			return 1;
		len -= (size_t)(q + 2 - s);
		s = q + 2;
	}
	return 0;
}

/* A "[[...|...]]" on one line: its pipe needs escaping for tables (see scan_inline). */
static int has_piped_wikilink(const char *s, size_t len)
{
	const char *q, *end = s + len;

	while ((q = memchr(s, '[', (size_t)(end - s))) && q + 1 < end) {
		if (q[1] == '[') {
			for (q += 2; q + 1 < end && *q != '\n' && !(q[0] == ']' && q[1] == ']'); q++)
				if (*q == '|')
					return 1;
		} else {
			q++;
		}
		s = q;
	}
	return 0;
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
	sset_release(&c->ids);
	sset_release(&c->tags);
	buf_release(&c->tmp);
	pre_release(&c->pre);
}

int md_render(const char *src, size_t len, const struct md_options *opt, struct md_result *res)
{
	static const struct md_options defaults = { NULL, NULL, "", 1 };
	/* no "tagfilter": raw HTML goes through sanitize_html() instead */
	static const char *const extensions[] = { "table", "strikethrough", "autolink", "tasklist" };
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
	buf_init(&c.tmp, 0);
	c.pre.s = src;
	c.pre.len = len;
	/* most notes have none of these: then cmark reads the source itself */
	if (memchr(src, '$', len) || find_pair(src, 0, len, '%') != NONE || has_escape(src, len) ||
	    has_piped_wikilink(src, len)) {
		prepass(&c.pre);
		md = c.pre.out.ptr;
		mdlen = c.pre.out.len;
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
	annotate(&c, doc);
	buf_grow(&res->html, mdlen + mdlen / 4 + 64);
	render(&c, doc);
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
		return detach_exact(&b);
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
	return detach_exact(&b);
}
