/*
 * markdown-int.h: internal to src/markdown/, what the stages of md_render()
 * share. Nothing outside this folder includes it; the API is markdown.h.
 *
 * The stages (see the top of markdown.c) and who owns what:
 *
 *	md_prepass.c   stage 1: the source pre-pass (struct pre) and the
 *	            placeholders it leaves, turned back by md_pre_expand()
 *	md_annotate.c  stage 3: the annotations (struct ann, struct seg) on
 *	            cmark's tree, and the links (struct link) they find
 *	html.c      stage 4: the HTML writer, its blocks, text and footnotes
 *	links.c     stage 4: wikilinks, embeds and Markdown links and images,
 *	            resolved through the caller as they are written
 *	markdown.c  md_render() running the stages, struct ctx's lifetime,
 *	            the helpers above (md_detach_exact, struct sset)
 *
 * It does not include markdown.h, whose types it uses: the files include
 * markdown.h first, so that the two headers make no include circle.
 */
#ifndef QUIRE_MARKDOWN_INT_H
#define QUIRE_MARKDOWN_INT_H

#ifndef QUIRE_MARKDOWN_H
#error "include markdown/markdown.h before markdown/markdown-int.h: a module's private header does not include its public one (no include circle)"
#endif

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmark-gfm.h>

struct md_options;
struct md_result;

#define NONE ((size_t)-1)
/* Longer backtick runs are never code spans here: keeps the failure cache small. */
#define MAX_TICKS 64
#define PH_OPEN '\x02'
#define PH_CLOSE '\x03'
/* Escapes that the pre-pass keeps from cmark (see the top of markdown.c). */
#define ESCAPED "[]#=^"

static inline int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static inline int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}

static inline void trim(const char **s, size_t *len)
{
	while (*len && is_space(**s)) {
		(*s)++;
		(*len)--;
	}
	while (*len && is_space((*s)[*len - 1]))
		(*len)--;
}

/*
 * b's string in a block of its own length, b released: for the short
 * strings md_result keeps (reference targets, heading texts and ids),
 * which a buffer would hold in at least 64 bytes. A copy rather than a
 * shrink in place, which would leave a hole after each one.
 */
char *md_detach_exact(struct buf *b);

/* ---- stage 1: the source pre-pass (md_prepass.c) ---- */

struct math {
	size_t raw, rawlen; /* the original text in the source, delimiters included */
	size_t tex, texlen; /* the TeX in pre.tex */
	int display;
};

/*
 * The table guard (prepass.c): cmark-gfm 0.29.0.gfm.6 parses a table row in
 * time quadratic in its cells and pads every row to the header's width
 * with no limit, so a wide table, a row of many pipes, or many short rows
 * under a wide header would cost far more than their bytes. The guard
 * keeps a note's tables within these, as text where they are not:
 *	- MD_TABLE_MAX_COLUMNS columns: a wider delimiter row gets a backslash
 *	  before its first '-', so the table is text (where "\-" shows "-");
 *	- as many pipes a row, plus one: in a table, the pipes past those are
 *	  escaped, so the cells past the limit stay text in the last cell (GFM
 *	  would drop the cells past the header's width);
 *	- MD_TABLE_CELLS cells, plus one a byte of the note, for all of its
 *	  tables (every row padded to its table's width): a table that would
 *	  go over is text.
 * Each comes with a warning on the line. A table's rows are counted up
 * to the next blank line (where GFM ends it at the latest), once for all
 * the delimiter rows in those lines, so the guard stays linear.
 */
#define MD_TABLE_MAX_COLUMNS 256
#define MD_TABLE_CELLS 0x80000 /* later cmark-gfm releases' MAX_AUTOCOMPLETED_CELLS */

struct tguard {
	size_t cells_left;   /* of the note's budget */
	size_t region_end;   /* where the lines up to the next blank one end */
	int region_line;     /* the line of the delimiter row that counted them */
	size_t region_rows;  /* the lines after it, up to the blank one */
	int in_table;        /* in a table's rows (until a blank line or code) */
	int warned_rows;     /* this table's wide rows were reported */
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
	int prev_text;       /* the line before was text: a table's header could be it */
	struct tguard tables;
	struct md_warning *warnings; /* lines of the body, 1-based */
	size_t nwarnings, awarnings;
	/*
	 * Inline footnotes ^[text]: each becomes a reference [^quire-inline-N]
	 * and its definition goes to notes, appended after the body. match:
	 * for the line starting at match_line, the ']' closing each '[' (or
	 * NONE), found with one stack pass when a line first holds "^[".
	 */
	struct buf notes;
	size_t nnotes;
	size_t *match, amatch, match_line;
	/*
	 * Failure caches: a search for a closer that ran into a paragraph end
	 * at x also fails from anywhere before x. Without them a line of
	 * openers would be quadratic.
	 */
	size_t tick_fail[MAX_TICKS + 1];
	size_t dd_fail, dollar_fail;
};

/*
 * Does src (len bytes) hold anything the pre-pass changes: '$', "%%", an
 * escape it keeps, a wikilink with a '|', or a table past the guard's
 * limits? Most notes have none: then cmark reads the source itself and
 * the pre-pass does not run.
 */
int md_prepass_needed(const char *src, size_t len);

/*
 * Runs the pre-pass over p->s (p->len bytes) into p->out, p->lines,
 * p->math and p->tex. p is zeroed, with s, len and its buffers set.
 */
void md_prepass(struct pre *p);

/* Frees what p owns (p itself is the caller's). */
void md_pre_release(struct pre *p);

/*
 * Parses a placeholder at s: returns its length, or 0 if there is none.
 * *kind is 'M' (math, *ix its index) or 'E' (an escaped byte, *ix).
 */
size_t md_pre_placeholder(const struct pre *p, const char *s, size_t len, char *kind, size_t *ix);

/*
 * What a placeholder turns back into. PH_RAW: the source as written (code,
 * raw HTML). PH_URL: math as written, an escape as its character (where
 * cmark would have read the escape: URLs, link targets). PH_TEX: math as
 * its TeX, an escape as its character (plain text).
 */
enum ph_mode { PH_RAW, PH_URL, PH_TEX };

/* Appends s (len bytes) to b with its placeholders turned back as mode says. */
void md_pre_expand(const struct pre *p, struct buf *b, const char *s, size_t len,
		enum ph_mode mode);

/* The same in a string of its own (md_detach_exact()); the caller frees it. */
char *md_pre_expand_dup(const struct pre *p, const char *s, size_t len, enum ph_mode mode);

static inline int pre_has_placeholder(const struct pre *p, const char *s, size_t len)
{
	return p->out.len && memchr(s, PH_OPEN, len);
}

/* ---- stage 3: annotations (md_annotate.c) ---- */

enum {
	A_SKIP = 1 << 0,      /* not rendered at all */
	A_SEGS = 1 << 1,      /* a text node rendered from its segments */
	A_CALLOUT = 1 << 2,   /* a block quote that is a callout */
	A_CALLHEAD = 1 << 3,  /* the paragraph holding a callout's [!type] line */
	A_TITLE_END = 1 << 4, /* the line break that ends a callout's title */
	A_EMBEDS = 1 << 5,    /* a paragraph of nothing but embeds: rendered without <p> */
	A_ID = 1 << 6,        /* a block carrying a ^block id */
	A_PLAIN = 1 << 7,     /* a Markdown link that resolved to an unpublished note: no <a> */
	A_TASK = 1 << 8,      /* a list item that is a task: "[c] " cut from its first text */
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
	const char *task;            /* A_TASK: its status character, in a literal */
	size_t tasklen;
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

/* A set of strings with a counter each: heading ids and folded tags (markdown.c). */
struct sent {
	char *key;
	size_t next;
};

struct sset {
	struct sent *v;
	size_t n, cap;
};

int md_sset_has(const struct sset *set, const char *key);
/* The entry for key, added (a copy, counter 0) if it was not there. */
struct sent *md_sset_add(struct sset *set, const char *key);
void md_sset_release(struct sset *set);

/* How many elements inline raw HTML may hold open in one block (inline-html.c). */
#define MD_OPEN_TAGS_MAX 16

/* One md_render() call: its input, output and the state of every stage. */
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
	size_t alt_from;   /* where in out that alt text starts */
	uint8_t *aligns;
	uint16_t ncols, col;
	int in_thead, need_tbody;
	int footnote_ix, written_fn;
	int block_line, breaks, math_lines;
	int callouts, footnotes;
	int embed_block;   /* inside an A_EMBEDS paragraph */
	/*
	 * An open <p> (not tight, not a callout head): where its tag starts
	 * and where what it holds starts, so that a note embedded inside it
	 * closes it first (a <div> may not sit in a <p>) and opens it again,
	 * as a raw block element does (inline-html.c): md_para_begin(),
	 * md_para_empty().
	 */
	int in_para, para_id, para_split;
	size_t para_tag, para_at;
	/*
	 * Elements opened by raw HTML inside the current block's inlines
	 * ("<kbd>"), innermost last: an end tag with no open element is
	 * dropped, and what is still open is closed where the block ends, so
	 * that a stray or missing end tag in a note leaves valid HTML.
	 */
	char open_tags[MD_OPEN_TAGS_MAX][12];
	unsigned char open_flags[MD_OPEN_TAGS_MAX]; /* inline-html.c */
	int nopen_tags;
	int title_closed;  /* in a callout's head paragraph: 1 past the title, 2 and no <p> */
	cmark_node *summary_node;
	size_t summary_from;
	struct sset ids, tags;
	size_t arefs, asplices, aslots, atags, aheadings, ablocks;
	struct buf tmp;
};

static inline struct ann *ann_of(cmark_node *n)
{
	return cmark_node_get_user_data(n);
}

static inline int has_flag(cmark_node *n, unsigned flag)
{
	struct ann *a = ann_of(n);

	return a && (a->flags & flag);
}

/*
 * A part of our paragraph begins: its <p...> tag runs from tag_at to the
 * end of the output. split: it follows an embed or a raw block element
 * that ended the part before, and is taken back whole if nothing follows.
 */
static inline void md_para_begin(struct ctx *c, size_t tag_at, int split)
{
	c->para_tag = tag_at;
	c->para_at = c->out->len;
	c->para_split = split;
	c->para_id = 0;
	c->in_para = 1;
}

/* Whether the part begun last is a split one with nothing in it yet. */
static inline int md_para_empty(const struct ctx *c)
{
	return c->para_split && c->out->len == c->para_at;
}

static inline int is_type(cmark_node *n, cmark_node_type t)
{
	return n && cmark_node_get_type(n) == t;
}

static inline int is_break(cmark_node *n)
{
	cmark_node_type t = cmark_node_get_type(n);

	return t == CMARK_NODE_SOFTBREAK || t == CMARK_NODE_LINEBREAK;
}

static inline const char *literal(cmark_node *n, size_t *len)
{
	const char *s = cmark_node_get_literal(n);

	if (!s)
		s = "";
	*len = strlen(s);
	return s;
}

/* n's annotation, made (zeroed, from c's pool) if it has none. */
struct ann *md_ann_get(struct ctx *c, cmark_node *n);

/*
 * Marks up doc through md_ann_get(): callouts, ^block ids, and on every run of
 * inlines the segments of wikilinks, embeds, highlights and tags.
 */
void md_annotate(struct ctx *c, cmark_node *doc);

/*
 * Appends the plain text of root's inline content (placeholders left in):
 * text, code, what wikilinks show, tags with their '#'. Not images, HTML
 * or footnote marks.
 */
void md_plain_of(const struct ctx *c, cmark_node *root, struct buf *b);

/* A new zeroed link at the end of c->links; *ix is its index. */
struct link *md_new_link(struct ctx *c, size_t *ix);

/* ---- stage 4: the HTML writer (html.c, links.c) ---- */

static inline void cr(struct buf *b)
{
	if (b->len && b->ptr[b->len - 1] != '\n')
		buf_addc(b, '\n');
}

/* Writes doc into c->out, and its plain text, summary, headings and blocks into c->res. */
void render_html(struct ctx *c, cmark_node *doc);

/* cmark-gfm's houdini_escape_href: URL-safe bytes stay, & and ' become entities. */
void md_add_href(struct buf *b, const char *s, size_t len);

/* Escaped text with placeholders turned back (code, titles, alt text). */
void md_add_html_exp(struct ctx *c, struct buf *b, const char *s, size_t len, enum ph_mode mode);

/* The wikilink c->links[ix]: its opening <a> (none for an unpublished note), then its </a>. */
void md_link_open(struct ctx *c, size_t ix);
void md_link_close(struct ctx *c, size_t ix);

/* The embed c->links[ix]: a splice, an image, audio, video, PDF, or a broken mark. */
void render_embed(struct ctx *c, size_t ix);

/*
 * The links of a Mermaid diagram, src[0, len) with placeholders turned
 * back: each node given the class internal-link is a link to the note its
 * text names, as in Obsidian. Written after the diagram as a hidden list
 * (<div class="diagram-links" hidden>) the theme's script attaches to the
 * drawn nodes; a name that matches nothing is no link and no warning.
 */
void render_diagram_links(struct ctx *c, const char *src, size_t len);

/*
 * A tag of inline raw HTML, just written at c->out[from, len) by the
 * sanitizer: weighed against what is open (inline-html.c), so that the
 * block stays valid HTML. md_inline_html_close() closes what is still
 * open, where the block ends (or a callout's title).
 */
void md_inline_html(struct ctx *c, cmark_node *n, size_t from);
void md_inline_html_close(struct ctx *c);

/* A Markdown link or image node, entering or leaving it. */
void render_link(struct ctx *c, cmark_node *n, int entering);
void render_image(struct ctx *c, cmark_node *n, int entering);

#endif
