/*
 * markdown.h: Obsidian-flavoured Markdown to an HTML fragment.
 *
 * The only module that includes cmark-gfm. One call parses a note's body
 * (frontmatter already removed) and renders it, asking the caller to
 * resolve each wikilink and embed as it goes, and reports what the note
 * points at (links, embeds, tags, headings, block ids) so that the caller
 * can build its indexes from the same pass.
 *
 * Dialect: CommonMark + GFM (tables, strikethrough, autolinks, task lists,
 * tagfilter, footnotes), raw HTML allowed but tag-filtered, and Obsidian's
 * syntax: [[wikilinks]] with |alias, #Heading and #^block, ![[embeds]] of
 * notes, sections, blocks, images (|300, |300x200, |alt), audio, video and
 * PDF; callouts `> [!type] Title` with +/- folding, nested; ==highlight==;
 * %%comments%% (inline and across blocks, never in the output); inline
 * #tags and #nested/tags; $math$ and $$math$$ passed through for KaTeX;
 * ```mermaid blocks; heading ids and ^block ids as anchors.
 *
 * Embedded notes are not rendered here: an embed of a note leaves a
 * *splice* in the output, a byte offset where the caller inserts the
 * embedded note's HTML (or a section of it) when it composes the page. So
 * a note's fragment never depends on another note's body, rendering order
 * does not matter, and cycles are the composer's business (render.c).
 *
 * The renderer walks the tree without recursion: 10,000 nested lists or
 * blockquotes cannot overflow the stack.
 */
#ifndef QUIRE_MARKDOWN_H
#define QUIRE_MARKDOWN_H

#include <stddef.h>

#include "util/buf.h"

enum md_ref_kind {
	MD_REF_LINK,  /* [[target]] */
	MD_REF_EMBED, /* ![[target]] */
};

/* One wikilink or embed as written in the note. */
struct md_ref {
	enum md_ref_kind kind;
	char *target;   /* path part, trimmed, NUL-terminated, never NULL; "" for [[#Heading]] */
	char *fragment; /* after the first '#', without it ("Heading", "^id"), or NULL */
	char *label;    /* after the first '|', trimmed, or NULL */
	int line;       /* 1-based line in the note's file (see md_options.first_line) */
	/*
	 * Written as a Markdown link or image, not [[...]]: 1 to what looks
	 * like a file, 2 to a path that may be a web page's (no extension,
	 * or from the root): when it matches nothing, no warning. 3: a
	 * diagram node's text (class internal-link), resolved like a
	 * wikilink's name but to a note only, and when it matches nothing,
	 * no warning either (Obsidian keeps no record of these).
	 */
	int markdown;
};

/* What the caller says a reference points at. */
enum md_target_kind {
	MD_TARGET_BROKEN,     /* nothing by that name: <a class="internal broken">; a Markdown
				 link keeps its URL as written (it may be meant for the web) */
	MD_TARGET_PLAIN,      /* exists but is not published: plain text, no link */
	MD_TARGET_NOTE,       /* a published note */
	MD_TARGET_ATTACHMENT, /* a published attachment (image, audio, video, PDF, other) */
};

struct md_target {
	enum md_target_kind kind;
	/*
	 * Root-relative URL for NOTE and ATTACHMENT, already percent-encoded
	 * and including the site's path prefix; without a fragment (the
	 * renderer appends "#" and the heading id or "^id"). Borrowed: must
	 * stay valid until md_render() returns.
	 */
	const char *url;
	/* For NOTE: the target's title (for a title="" tooltip). May be NULL. */
	const char *title;
};

/*
 * Called once per reference, in document order, with `index` the position
 * of ref in md_result.refs. Fills *out; out->kind starts as BROKEN.
 */
typedef void (*md_resolve_fn)(void *ctx, size_t index, const struct md_ref *ref,
			      struct md_target *out);

struct md_options {
	md_resolve_fn resolve;
	void *resolve_ctx;
	/* Path prefix of the site ("" or "/docs"); tag links go to <prefix>/tags/<tag>. */
	const char *url_prefix;
	/* Line number in the file of the body's first line (after frontmatter). */
	int first_line;
	/*
	 * 1: a single newline inside a paragraph is a line break (<br />),
	 * Obsidian's default ("Strict line breaks" off); 0: CommonMark's.
	 */
	int hard_breaks;
	/*
	 * 1: the URLs of resolved links and embeds (NOTE, ATTACHMENT) are
	 * not written; each is an md_slot where the caller writes its
	 * target's URL when composing (src/site/render.c). A target that
	 * moves then changes the pages linking to it, not their fragments.
	 */
	int url_slots;
	/*
	 * 1: fenced code in a language highlight.h knows is written with its
	 * tokens in spans (quire.yml highlight:, on by default).
	 */
	int highlight;
};

/* A place in md_result.html where the composer inserts an embedded note. */
struct md_splice {
	size_t offset;    /* byte offset in html */
	size_t ref;       /* index into refs (always an MD_REF_EMBED of a NOTE) */
};

/*
 * With md_options.url_slots: where html lacks the URL of refs[ref], or,
 * with MD_SLOT_FRAGMENT set in ref, the "#id" of a heading chain
 * ([[Note#Part#Sub]]: which "Sub" only the target's headings say).
 */
struct md_slot {
	size_t offset;    /* byte offset in html */
	size_t ref;       /* index into refs (resolved to NOTE or ATTACHMENT), maybe | MD_SLOT_FRAGMENT */
};
#define MD_SLOT_FRAGMENT ((size_t)1 << (sizeof(size_t) * 8 - 1))

/* A heading, for the table of contents and for ![[note#Heading]]. */
struct md_heading {
	int level;        /* 1..6 */
	char *text;       /* plain text, NUL-terminated */
	char *id;         /* the id="" attribute, unique in the note */
	size_t start;     /* offset of "<h" in html */
	size_t end;       /* end of its section: the next heading of level <= this one, or html.len */
};

/* A block carrying ^id, for ![[note#^id]] and [[note#^id]]. */
struct md_block {
	char *id;         /* without the caret */
	size_t start;     /* offset of the block's opening tag in html */
	size_t end;       /* offset just after its closing tag */
	char list;        /* 'u' or 'o': the block is an item (<li>) of such a list; else 0 */
};

/* What in the note renders otherwise than written, and why: for `quire check`. */
struct md_warning {
	int line;   /* in the file, as md_ref.line */
	char *msg;
};

struct md_result {
	struct buf html;              /* the fragment, without a layout around it */
	struct md_ref *refs;          /* every wikilink and embed, in document order */
	size_t nrefs;
	struct md_splice *splices;    /* in increasing offset order */
	size_t nsplices;
	char **tags;                  /* inline #tags without '#', in order, no duplicates (case-insensitive) */
	size_t ntags;
	struct md_heading *headings;  /* in document order */
	size_t nheadings;
	struct md_block *blocks;
	size_t nblocks;
	/* Plain text of the first paragraph (for summaries), at most ~300 bytes, or NULL. */
	char *summary;
	/* Plain text of the whole rendered body (no markup, no code punctuation): for search. */
	struct buf text;
	struct md_warning *warnings;
	size_t nwarnings;
	struct md_slot *slots;        /* in increasing offset order (url_slots only) */
	size_t nslots;
	unsigned features;            /* MD_HAS_*: what a page showing it needs a script for */
};
#define MD_RESULT_INIT                                                                          \
	{ BUF_INIT, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, BUF_INIT, NULL, 0, NULL, 0, 0 }

/* md_result.features */
enum {
	MD_HAS_MATH = 1,    /* math: $...$, $$...$$ (KaTeX typesets it) */
	MD_HAS_DIAGRAM = 2, /* a ```mermaid block (Mermaid draws it) */
};

/*
 * Call once per process before any md_render(), from one thread: registers
 * cmark-gfm's extensions. After it, md_render() may run on many threads at
 * once.
 */
void md_global_init(void);

/*
 * Renders src (len bytes, valid UTF-8 with no NUL: the caller sanitizes)
 * into res, which must be MD_RESULT_INIT. Returns 0; -1 only if cmark
 * failed to parse (res is then released). The caller frees res with
 * md_result_release().
 */
int md_render(const char *src, size_t len, const struct md_options *opt, struct md_result *res);

/* Frees everything res owns and leaves it as MD_RESULT_INIT. Accepts NULL. */
void md_result_release(struct md_result *res);

/*
 * The id that a heading with this plain text gets (before de-duplication):
 * lowercased, spaces to '-', punctuation dropped, Unicode letters kept.
 * Returns a string the caller frees. Used to turn [[note#Heading]] into
 * "#heading" in a URL.
 */
char *md_heading_id(const char *text);

#endif
