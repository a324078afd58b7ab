/*
 * hostile.c: the hostile inputs of hostile.h, in the manner of cmark's
 * test/pathological_tests.py: each case builds its input in memory (or a
 * vault on disk) at a size n, runs it through what a note goes through,
 * and checks that the output is what the case wants. How they are
 * measured is the caller's: counts in tests/test-pathological.c, times in
 * bench/pathological-bench.c.
 */
#include "lib/hostile.h"
#include "lib/test.h"
#include "lib/tv.h"

#include "markdown/markdown.h"
#include "site/site.h"
#include "site/snapshot.h"
#include "util/buf.h"
#include "util/diag.h"
#include "vault/note.h"

#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- through a note's bytes ------------------------------------------------ */

static void resolve_all(void *ctx, size_t index, const struct md_ref *ref, struct md_target *out)
{
	(void)ctx;
	(void)index;
	if (strncmp(ref->target, "missing", 7) == 0)
		return;
	out->kind = MD_TARGET_NOTE;
	out->url = "/t";
	out->title = "T";
}

/* What one run of a note's bytes left, for the checks. */
struct rendered {
	struct note note;
	struct diag_list diags;
	struct md_result md;
	int rc;
};

static void render_bytes(const struct buf *src, struct rendered *r)
{
	struct md_options opt = { resolve_all, NULL, "", 1, 0, 0, 0 };

	memset(&r->note, 0, sizeof(r->note));
	diag_list_init(&r->diags);
	r->md = (struct md_result)MD_RESULT_INIT;
	note_parse(&r->note, "case.md", src->ptr, src->len, 0, &r->diags);
	opt.first_line = r->note.body_line;
	opt.highlight = 1; /* as the site renders */
	r->rc = md_render(r->note.body, r->note.body_len, &opt, &r->md);
}

static void rendered_release(struct rendered *r)
{
	note_release(&r->note);
	md_result_release(&r->md);
	diag_list_release(&r->diags);
}

static int has_diag(const struct diag_list *l, const char *path, const char *needle)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->items[i].path, path) == 0 && strstr(l->items[i].msg, needle))
			return 1;
	return 0;
}

/*
 * Occurrences of needle in the fragment. Not memmem() in a loop: ASan's
 * memmem checks the whole rest of the haystack on every call, which made
 * this check quadratic under the sanitizers (memchr checks up to its match).
 */
static size_t count(const struct buf *b, const char *needle)
{
	size_t k = 0, len = strlen(needle);
	const char *at = b->ptr, *end = b->ptr + b->len;

	while (at < end && (at = memchr(at, needle[0], (size_t)(end - at)))) {
		if ((size_t)(end - at) >= len && memcmp(at, needle, len) == 0) {
			k++;
			at += len;
		} else {
			at++;
		}
	}
	return k;
}

static int contains(const struct buf *b, const char *needle)
{
	return memmem(b->ptr, b->len, needle, strlen(needle)) != NULL;
}

static void drop_buf(void *input)
{
	buf_release(input);
	free(input);
}

static struct buf *new_buf(void)
{
	struct buf *b = malloc(sizeof(*b));

	*b = (struct buf)BUF_INIT;
	return b;
}

static struct buf *repeat(const char *head, const char *unit, size_t n, const char *mid,
			  const char *unit2, size_t n2, const char *tail)
{
	struct buf *b = new_buf();
	size_t i;

	buf_adds(b, head);
	for (i = 0; i < n; i++)
		buf_adds(b, unit);
	buf_adds(b, mid);
	for (i = 0; i < n2; i++)
		buf_adds(b, unit2);
	buf_adds(b, tail);
	return b;
}

/*
 * The bytes-through cases share one run: render, and hand the result to
 * the case's check when asked.
 */
#define BYTES_CASE(fn, checker)                                                          \
	static void fn(void *input, size_t n, int check)                                 \
	{                                                                                \
		struct rendered r;                                                       \
		render_bytes(input, &r);                                                 \
		CHECK_INT(r.rc, 0);                                                      \
		if (check && r.rc == 0)                                                  \
			checker(&r, n);                                                  \
		rendered_release(&r);                                                    \
	}

/* nested block quotes: "> > > ... a" */
static void *b_quotes(size_t n)
{
	return repeat("", "> ", n, "innermost\n", "", 0, "");
}

static void c_quotes(const struct rendered *r, size_t n)
{
	CHECK(contains(&r->md.html, "<p>innermost</p>"));
	CHECK_INT(count(&r->md.html, "<blockquote>"), n);
}
BYTES_CASE(r_quotes, c_quotes)

/* nested lists on one line: "- - - ... a" */
static void *b_lists(size_t n)
{
	return repeat("", "- ", n, "innermost\n", "", 0, "");
}

static void c_lists(const struct rendered *r, size_t n)
{
	CHECK(contains(&r->md.html, "innermost"));
	CHECK_INT(count(&r->md.html, "<ul>"), n);
}
BYTES_CASE(r_lists, c_lists)

/* lists nested by indentation, each level one line deeper: n bytes */
static void *b_indented_lists(size_t n)
{
	struct buf *b = new_buf();
	size_t depth = 0, k;

	while (b->len < n) {
		for (k = 0; k < depth; k++)
			buf_adds(b, "  ");
		buf_adds(b, "* a\n");
		depth++;
	}
	buf_adds(b, "\nafter\n");
	return b;
}

static void c_indented_lists(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, "<li>a</li>"));
	CHECK(contains(&r->md.html, "<p>after</p>"));
}
BYTES_CASE(r_indented_lists, c_indented_lists)

/* nested brackets: "[[[[ a ]]]]" */
static void *b_brackets(size_t n)
{
	return repeat("", "[", n, "a", "]", n, "\n");
}

static void c_brackets(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, "[[[[a]]]]") || contains(&r->md.html, "a"));
}
BYTES_CASE(r_brackets, c_brackets)

/* nested wikilinks: "[[[[[[ a ]]]]]]" as pairs */
static void *b_wikilinks(size_t n)
{
	return repeat("", "[[", n, "a", "]]", n, "\n");
}

static void c_any_paragraph(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, "<p>"));
}
BYTES_CASE(r_wikilinks, c_any_paragraph)

/* nested embeds in one note: "![[![[![[ a ]]]]]]" */
static void *b_embed_syntax(size_t n)
{
	return repeat("", "![[", n, "a", "]]", n, "\n");
}
BYTES_CASE(r_embed_syntax, c_any_paragraph)

/* unclosed wikilinks and embeds: "[[a ![[b " */
static void *b_unclosed_wikilinks(size_t n)
{
	return repeat("", "[[a ![[b |c #d ", n, "", "", 0, "\n");
}

static void c_unclosed_wikilinks(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK_INT(r->md.nrefs, 0);
	CHECK(contains(&r->md.html, "[[a ![[b |c"));
}
BYTES_CASE(r_unclosed_wikilinks, c_unclosed_wikilinks)

/* cmark's nested strong emphasis */
static void *b_emphasis(size_t n)
{
	return repeat("", "*a **a ", n, "b", " a** a*", n, "\n");
}

static void c_emphasis(const struct rendered *r, size_t n)
{
	CHECK_INT(count(&r->md.html, "<em>a <strong>a "), n);
	CHECK(contains(&r->md.html, "a <strong>a b a</strong> a</em>"));
}
BYTES_CASE(r_emphasis, c_emphasis)

/* emphasis openers and closers that never match, and link openers */
static void *b_emph_mismatch(size_t n)
{
	return repeat("", "*a_ [ a_ _a ", n, "", "", 0, "\n");
}
BYTES_CASE(r_emph_mismatch, c_any_paragraph)

/* ==highlights== nested and unclosed */
static void *b_highlights(size_t n)
{
	return repeat("", "==a ", n, "b", " c==", n, "\n");
}

static void c_highlights(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, "<mark>"));
}
BYTES_CASE(r_highlights, c_highlights)

/* %%comments%% and $math$ openers that never close */
static void *b_comments_math(size_t n)
{
	return repeat("", "%% $a $$ b ", n, "", "", 0, "\nend\n");
}
BYTES_CASE(r_comments_math, c_any_paragraph)

/* unclosed links, cmark's A and B */
static void *b_unclosed_links(size_t n)
{
	return repeat("", "[a](<b [a](b ", n, "", "", 0, "\n");
}

static void c_unclosed_links(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, "[a](&lt;b [a](b"));
}
BYTES_CASE(r_unclosed_links, c_unclosed_links)

/* callouts nested by one '>' more per line: n bytes */
static void *b_callouts(size_t n)
{
	struct buf *b = new_buf();
	size_t depth = 1, k;

	while (b->len < n) {
		for (k = 0; k < depth; k++)
			buf_addc(b, '>');
		buf_addf(b, " [!note] Level %zu\n", depth);
		depth++;
	}
	for (k = 0; k < depth; k++)
		buf_addc(b, '>');
	buf_adds(b, " innermost\n");
	return b;
}

static void c_callouts(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, "innermost"));
	CHECK(count(&r->md.html, "callout") > 10);
}
BYTES_CASE(r_callouts, c_callouts)

/* a callout at the bottom of a deep quote: ">>>>... [!note] Title" */
static void *b_deep_callout(size_t n)
{
	return repeat("", ">", n, " [!warning]- Deep title\n", "", 0, "> inside\n");
}

static void c_deep_callout(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, "Deep title"));
	CHECK(contains(&r->md.html, "inside"));
}
BYTES_CASE(r_deep_callout, c_deep_callout)

/* a run of n backticks, then text, then a shorter run */
static void *b_backticks(size_t n)
{
	return repeat("", "`", n, " code ", "`", n / 2, " end\n");
}

static void c_backticks(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, " code "));
	CHECK(contains(&r->md.html, "end</p>"));
}
BYTES_CASE(r_backticks, c_backticks)

/*
 * Highlighted code (src/markdown/highlight.c): a PowerShell block of n
 * lines that open strings, here-strings, comments, types and variables
 * they never close, each line one more for its scanner to look past.
 */
static void *b_highlight(size_t n)
{
	return repeat("```powershell\n", "Get-Item -Path $x \"a `\" <# [b.c @' ${d\n", n,
		      "```\n", "", 0, "");
}

static void c_highlight(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, "<span class=\"hl-f\">Get-Item</span>"));
	CHECK(contains(&r->md.html, "</code></pre>"));
}
BYTES_CASE(r_highlight, c_highlight)

/*
 * A Mermaid diagram whose nodes link (class internal-link): one line of n
 * shapes that never close ("a0[a1[a2[...") and n class lines that name no
 * node, each a pass over the source if the reader were naive.
 */
static void *b_diagram(size_t n)
{
	struct buf *b = new_buf();
	size_t i;

	buf_adds(b, "```mermaid\ngraph TD\n");
	for (i = 0; i < n; i++)
		buf_addf(b, "a%zu[", i);
	buf_adds(b, "\n");
	for (i = 0; i < n; i++)
		buf_adds(b, "class  internal-link\n");
	buf_adds(b, "class a0 internal-link\n```\n");
	return b;
}

static void c_diagram(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, "<div class=\"diagram-links\" hidden><a class=\"internal\""));
}
BYTES_CASE(r_diagram, c_diagram)

/* cmark's staircase: "e`" "e``" "e```" ... to n bytes */
static void *b_backtick_stairs(size_t n)
{
	struct buf *b = new_buf();
	size_t x, k;

	for (x = 1; b->len < n; x++) {
		buf_addc(b, 'e');
		for (k = 0; k < x; k++)
			buf_addc(b, '`');
	}
	buf_addc(b, '\n');
	return b;
}

static void c_backtick_stairs(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(!contains(&r->md.html, "<code>"));
}
BYTES_CASE(r_backtick_stairs, c_backtick_stairs)

/*
 * Tables. cmark-gfm 0.29.0.gfm.6 parses a row in time quadratic in its
 * cells and pads short rows to the header's width without limit; the
 * pre-pass's table guard (src/markdown/markdown-int.h) keeps tables
 * within MD_TABLE_MAX_COLUMNS columns, as many cells a row, and a budget
 * of cells a note, and leaves the rest as text with a warning.
 */
#define GUARD_COLUMNS 256
#define GUARD_CELLS 0x80000

static void table_header(struct buf *b, size_t cols)
{
	size_t i;

	for (i = 0; i < cols; i++)
		buf_addf(b, "|h%zu", i);
	buf_adds(b, "|\n");
	for (i = 0; i < cols; i++)
		buf_adds(b, "|-");
	buf_adds(b, "|\n");
}

static void table_rows(struct buf *b, size_t rows, size_t cells)
{
	size_t row, i;

	for (row = 0; row < rows; row++) {
		for (i = 0; i < cells; i++)
			buf_adds(b, "|c");
		buf_adds(b, "|\n");
	}
}

static int has_warning(const struct rendered *r, const char *needle)
{
	size_t i;

	for (i = 0; i < r->md.nwarnings; i++)
		if (strstr(r->md.warnings[i].msg, needle))
			return 1;
	return 0;
}

/* a table of n columns and 10 rows: past the guard's width, text */
static void *b_table_wide(size_t n)
{
	struct buf *b = new_buf();

	table_header(b, n);
	table_rows(b, 10, n);
	return b;
}

static void c_table_wide(const struct rendered *r, size_t n)
{
	CHECK(n > GUARD_COLUMNS);
	CHECK(!contains(&r->md.html, "<table>"));
	CHECK(has_warning(r, "columns"));
}
BYTES_CASE(r_table_wide, c_table_wide)

/* n rows of 256 cells: the widest table kept, each row at the most it costs */
static void *b_table_full_rows(size_t n)
{
	struct buf *b = new_buf();

	table_header(b, GUARD_COLUMNS);
	table_rows(b, n, GUARD_COLUMNS);
	return b;
}

static void c_table_full_rows(const struct rendered *r, size_t n)
{
	CHECK_INT(count(&r->md.html, "<td>"), n * GUARD_COLUMNS);
	CHECK_INT(r->md.nwarnings, 0);
}
BYTES_CASE(r_table_full_rows, c_table_full_rows)

/* a two-column table whose n rows have 1,000 cells each: the excess stays text */
static void *b_table_long_rows(size_t n)
{
	struct buf *b = new_buf();

	table_header(b, 2);
	table_rows(b, n, 1000);
	return b;
}

static void c_table_long_rows(const struct rendered *r, size_t n)
{
	CHECK_INT(count(&r->md.html, "<td>"), 2 * n);
	CHECK(has_warning(r, "pipes"));
}
BYTES_CASE(r_table_long_rows, c_table_long_rows)

/*
 * A header of 256 columns and n rows of one cell: each row padded to 256
 * cells, 128 cells a byte, until the note's budget of cells is spent;
 * past it the table is text.
 */
static struct buf *one_cell_rows(size_t cols, size_t rows)
{
	struct buf *b = new_buf();
	size_t i;

	table_header(b, cols);
	for (i = 0; i < rows; i++)
		buf_adds(b, "x\n");
	return b;
}

static void *b_table_short_rows(size_t n)
{
	return one_cell_rows(GUARD_COLUMNS, n);
}

static void c_table_short_rows(const struct rendered *r, size_t n)
{
	size_t len = r->note.body_len;

	if (GUARD_COLUMNS * (n + 2) <= GUARD_CELLS + len) {
		CHECK_INT(count(&r->md.html, "<td>"), n * GUARD_COLUMNS);
	} else {
		CHECK(!contains(&r->md.html, "<table>"));
		CHECK(has_warning(r, "cells"));
	}
}
BYTES_CASE(r_table_short_rows, c_table_short_rows)

/*
 * The output explosion: n columns and n rows of one cell, 4 n bytes in,
 * n^2 cells out if every row were padded: within the guard at n = 100,
 * text at 1,000.
 */
static void *b_table_square(size_t n)
{
	return one_cell_rows(n, n);
}

static void c_table_square(const struct rendered *r, size_t n)
{
	CHECK(contains(&r->md.html, "<table>") == (n <= GUARD_COLUMNS));
}
BYTES_CASE(r_table_square, c_table_square)

/* "# a" n times: heading ids a, a-1, a-2... */
static void *b_headings(size_t n)
{
	return repeat("", "# a\n\n", n, "", "", 0, "");
}

static void c_headings(const struct rendered *r, size_t n)
{
	CHECK_INT(r->md.nheadings, n);
	CHECK(r->md.nheadings == n && strcmp(r->md.headings[n - 1].id, "a") != 0);
}
BYTES_CASE(r_headings, c_headings)

/* n distinct #tags and n ^block ids */
static void *b_tags(size_t n)
{
	struct buf *b = new_buf();
	size_t i;

	for (i = 0; i < n; i++)
		buf_addf(b, "#tag%zu #TAG%zu para ^b%zu\n\n", i, i, i);
	return b;
}

static void c_tags(const struct rendered *r, size_t n)
{
	CHECK_INT(r->md.ntags, n);
	CHECK_INT(r->md.nblocks, n);
}
BYTES_CASE(r_tags, c_tags)

/* n footnote references and definitions */
static void *b_footnotes(size_t n)
{
	struct buf *b = new_buf();
	size_t i;

	for (i = 0; i < n; i++)
		buf_addf(b, "x[^f%zu] ", i);
	buf_adds(b, "\n\n");
	for (i = 0; i < n; i++)
		buf_addf(b, "[^f%zu]: note %zu\n", i, i);
	return b;
}

static void c_footnotes(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, "footnote"));
}
BYTES_CASE(r_footnotes, c_footnotes)

/* inline footnotes: n in a row, then n nested, then n unclosed openers */
static void *b_inline_notes(size_t n)
{
	struct buf *b = repeat("", "a^[b] ", n, "", "", 0, "\n\n");
	struct buf *c = repeat("", "^[x ", n, "y", "]", n, "\n\n");
	struct buf *d = repeat("", "^[z ", n, "", "", 0, "\n");

	buf_add(b, c->ptr, c->len);
	buf_add(b, d->ptr, d->len);
	drop_buf(c);
	drop_buf(d);
	return b;
}

static void c_inline_notes(const struct rendered *r, size_t n)
{
	CHECK_INT(count(&r->md.html, "data-footnote-ref"), n + 1);
}
BYTES_CASE(r_inline_notes, c_inline_notes)

/* n reference definitions and n uses (cmark's "many references") */
static void *b_references(size_t n)
{
	struct buf *b = new_buf();
	size_t i;

	for (i = 0; i < n; i++)
		buf_addf(b, "[r%zu]: https://e.com/u%zu\n", i, i);
	buf_adds(b, "\n");
	for (i = 0; i < n; i++)
		buf_addf(b, "[r%zu] ", i);
	buf_adds(b, "\n");
	return b;
}

static void c_references(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, "<a href=\"https://e.com/u0\">r0</a>"));
}
BYTES_CASE(r_references, c_references)

/* raw HTML nested n deep: <div><div>... through the sanitizer */
static void *b_html_nesting(size_t n)
{
	return repeat("<div>\n", "<div><span><b>", n, "innermost", "</b></span></div>", n,
		      "\n</div>\n");
}

static void c_html_nesting(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, "innermost"));
}
BYTES_CASE(r_html_nesting, c_html_nesting)

/*
 * The sanitizer's hostile tags (test-sanitize's test_hostile) in one HTML
 * block: lists, tables, formatting elements and selects left open, stray
 * end tags, comments, each unit n / 12 times, and a script after them.
 */
static void *b_html_units(size_t n)
{
	static const char *const units[] = {
		"<ul><li>", "<div>", "<b><i>", "<font><b><u>", "<table><tr><td>", "<p><b id=1>",
		"</span>x", "<a href=x>", "<select>", "<!--x-->", "<b>x</b>", "<p><b></p>x",
	};
	struct buf *b = new_buf();
	size_t i;

	buf_adds(b, "<div>\n");
	for (i = 0; i < n; i++)
		buf_adds(b, units[i % (sizeof(units) / sizeof(units[0]))]);
	buf_adds(b, "<img src=x onerror=alert(1)>\n</div>\n");
	return b;
}

static void c_html_units(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(contains(&r->md.html, "<ul><li><div><b><i>"));
	CHECK(!contains(&r->md.html, "onerror"));
}
BYTES_CASE(r_html_units, c_html_units)

/*
 * A YAML alias bomb in the frontmatter ("billion laughs"): aliases read as
 * null, so the note costs its own size, and the body renders.
 */
static void *b_alias_bomb(size_t n)
{
	struct buf *b = new_buf();
	size_t i;

	buf_adds(b, "---\ntitle: Bomb\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
	for (i = 1; i < n; i++)
		buf_addf(b, "a%zu: &a%zu [*a%zu, *a%zu, *a%zu, *a%zu, *a%zu, *a%zu, *a%zu, *a%zu]\n", i,
			 i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
	buf_adds(b, "---\nBOMBBODY\n");
	return b;
}

static void c_alias_bomb(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK_STR(r->note.title, "Bomb");
	CHECK(contains(&r->md.html, "BOMBBODY"));
}
BYTES_CASE(r_alias_bomb, c_alias_bomb)

/* frontmatter nested n deep: refused with the line, the body still renders */
static void *b_yaml_deep(size_t n)
{
	return repeat("---\ntitle: Deep\nx: ", "[", n, "a", "]", n, "\n---\nDEEPBODY\n");
}

static void c_yaml_deep(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(has_diag(&r->diags, "case.md", "nesting deeper than"));
	CHECK(contains(&r->md.html, "DEEPBODY"));
}
BYTES_CASE(r_yaml_deep, c_yaml_deep)

/* a frontmatter list of n tags and n aliases */
static void *b_yaml_long(size_t n)
{
	struct buf *b = new_buf();
	size_t i;

	buf_adds(b, "---\ntags:\n");
	for (i = 0; i < n; i++)
		buf_addf(b, "  - t%zu\n", i);
	buf_adds(b, "aliases:\n");
	for (i = 0; i < n; i++)
		buf_addf(b, "  - alias %zu\n", i);
	buf_adds(b, "---\nbody\n");
	return b;
}

static void c_yaml_long(const struct rendered *r, size_t n)
{
	CHECK_INT(r->note.tags.n, n);
	CHECK_INT(r->note.aliases.n, n);
}
BYTES_CASE(r_yaml_long, c_yaml_long)

/* a big note, n bytes of realistic paragraphs (the 50 MB case) */
static void *b_big_note(size_t n)
{
	struct buf *b = new_buf();

	buf_adds(b, "---\ntitle: Big\n---\n");
	while (b->len < n)
		buf_adds(b, "A realistic paragraph with [[index]] a link, `code`, *emphasis*, "
			    "==marks==, $x^2$ and #tags, repeated until the note is big.\n\n");
	return b;
}

static void c_big_note(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(count(&r->md.html, "<p>") > 1000);
	CHECK_INT(r->md.ntags, 1);
}
BYTES_CASE(r_big_note, c_big_note)

/* control characters and invalid UTF-8 everywhere: replaced and reported */
static void *b_bad_bytes(size_t n)
{
	struct buf *b = new_buf();
	size_t i;

	for (i = 0; i < n; i++)
		buf_add(b, "a\x01\xff\xc3 \x7f\0", 7);
	buf_addc(b, '\n');
	return b;
}

static void c_bad_bytes(const struct rendered *r, size_t n)
{
	(void)n;
	CHECK(has_diag(&r->diags, "case.md", "invalid UTF-8"));
	CHECK(memchr(r->md.html.ptr, 0, r->md.html.len) == NULL);
}
BYTES_CASE(r_bad_bytes, c_bad_bytes)

/* ---- through a site --------------------------------------------------------- */

static struct site *load(const char *dir)
{
	struct site_options o = { .threads = 1 };
	return site_load(dir, &o);
}

static void drop_vault(void *input)
{
	tv_remove(input);
}

static const struct page *page_at(const struct snapshot *snap, const char *url)
{
	return snapshot_get(snap, url, strlen(url));
}

/* A chain of n notes, each embedding the next: capped, and said so. */
static void *b_embed_chain(size_t n)
{
	char *dir = tv_new();
	char name[32], text[96];
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "e%zu.md", i);
		snprintf(text, sizeof(text), "Level %zu.\n\n![[e%zu]]\n", i, i + 1);
		tv_write(dir, name, text);
	}
	snprintf(name, sizeof(name), "e%zu.md", n);
	tv_write(dir, name, "The bottom.\n");
	return dir;
}

static void r_embed_chain(void *input, size_t n, int check)
{
	struct site *s = load(input);
	struct snapshot *snap;
	const struct page *p;

	CHECK(s != NULL);
	if (!s)
		return;
	if (check) {
		snap = site_snapshot(s, NULL);
		p = page_at(snap, "/e0");
		CHECK(p && memmem(p->body, p->body_len, "Embeds nested too deeply", 24));
		CHECK(p && memmem(p->body, p->body_len, "Level 1.", 8));
		p = page_at(snap, "/e1");
		(void)n;
		CHECK(has_diag(&s->diags, "e0.md", "nested deeper than"));
		snapshot_unref(snap);
	}
	site_free(s);
}

/* One note with n links: wikilinks and Markdown links, resolved and broken. */
static void *b_many_links(size_t n)
{
	char *dir = tv_new();
	struct buf text = BUF_INIT;
	char name[32];
	size_t i;

	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "t%zu.md", i);
		tv_write(dir, name, "# Target\n\n## Part\n");
	}
	for (i = 0; i < n; i++) {
		switch (i % 4) {
		case 0:
			buf_addf(&text, "[[t%zu]] ", i % 100);
			break;
		case 1:
			buf_addf(&text, "[[t%zu#Part|see]] ", i % 100);
			break;
		case 2:
			buf_addf(&text, "[x](t%zu.md) ", i % 100);
			break;
		default:
			buf_addf(&text, "[[missing%zu]] ", i);
			break;
		}
		if (i % 64 == 63)
			buf_adds(&text, "\n");
	}
	tv_write_len(dir, "hub.md", text.ptr, text.len);
	/* a million links make 13.6 MB, over the default max_note_size: raised, as such a vault would */
	tv_write(dir, "quire.yml", "max_note_size: 64M\n");
	buf_release(&text);
	return dir;
}

static void r_many_links(void *input, size_t n, int check)
{
	struct site *s = load(input);

	CHECK(s != NULL);
	if (!s)
		return;
	if (check) {
		struct snapshot *snap = site_snapshot(s, NULL);
		const struct page *p = page_at(snap, "/hub");
		struct site_stats st;

		site_stats(s, &st);
		CHECK(p != NULL);
		CHECK_INT(st.broken, n / 4);
		CHECK(has_diag(&s->diags, "hub.md", "missing"));
		CHECK(p && memmem(p->body, p->body_len, "href=\"/t1#part\"", 15));
		snapshot_unref(snap);
	}
	site_free(s);
}

/*
 * One note with n headings and n links into itself, half to headings it
 * has, half to headings and blocks it lacks: each reported, and finding
 * whether a note has a heading costs no pass over its headings per link.
 */
static void *b_heading_links(size_t n)
{
	char *dir = tv_new();
	struct buf text = BUF_INIT;
	size_t i;

	for (i = 0; i < n; i++)
		buf_addf(&text, "## Part %zu\n\n", i);
	for (i = 0; i < n; i++) {
		if (i % 4 == 0)
			buf_addf(&text, "[[#Part %zu]] [x](case.md#part-%zu) ", n - 1 - i, i);
		else
			buf_addf(&text, "[[#Nope %zu]] [[case#^gone%zu]] ", i, i);
		if (i % 64 == 63)
			buf_adds(&text, "\n");
	}
	tv_write_len(dir, "case.md", text.ptr, text.len);
	tv_write(dir, "quire.yml", "max_note_size: 64M\n"); /* 10 MB at the bench's 10 n */
	buf_release(&text);
	return dir;
}

static void r_heading_links(void *input, size_t n, int check)
{
	struct site *s = load(input);

	CHECK(s != NULL);
	if (s && check) {
		CHECK_INT(s->diags.nwarnings, n / 4 * 3 * 2);
		CHECK(has_diag(&s->diags, "case.md", "missing heading 'Nope 1' in case.md"));
		CHECK(has_diag(&s->diags, "case.md", "missing block '^gone1' in case.md"));
		CHECK(!has_diag(&s->diags, "case.md", "'Part "));
		CHECK(!has_diag(&s->diags, "case.md", "'part-"));
	}
	site_free(s);
}

/*
 * Per-link work in a site: one note with n distinct broken links, and a
 * hub linked from n / 10 notes that it links back (was test_links_linear
 * in test-site.c).
 */
static void *b_hub_links(size_t n)
{
	char *dir = tv_new();
	struct buf text = BUF_INIT;
	char name[32];
	size_t i;

	for (i = 0; i < n; i++)
		buf_addf(&text, "[[missing%zu]] ", i);
	tv_write(dir, "broken.md", text.ptr);
	buf_reset(&text);
	for (i = 0; i < n / 10; i++)
		buf_addf(&text, "[[n%zu]] ", i);
	tv_write(dir, "hub.md", text.ptr);
	for (i = 0; i < n / 10; i++) {
		snprintf(name, sizeof(name), "n%zu.md", i);
		tv_write(dir, name, "Back to [[hub]].\n");
	}
	buf_release(&text);
	return dir;
}

static void r_hub_links(void *input, size_t n, int check)
{
	struct site *s = load(input);
	struct site_stats st;

	CHECK(s != NULL);
	if (!s)
		return;
	if (check) {
		site_stats(s, &st);
		CHECK_INT(st.broken, n);
		CHECK_INT(s->nnotes, n / 10 + 2);
		CHECK(site_find_note(s, "n1.md") && site_find_note(s, "n1.md")->page);
	}
	site_free(s);
}

/*
 * File names with every odd character Linux takes: each becomes a note
 * (or, when its name is not UTF-8, a diagnostic naming its folder), each
 * published note's URL is in the page table and serves a note, and
 * links to them by name resolve.
 */
static const char *const odd_names[] = {
	" leading space.md", "trailing space .md", "two  spaces.md", "hash # in.md", "#start.md",
	"percent 100%.md", "percent-encoded %20 %2F %2e%2e.md", "question?.md", "[brackets].md",
	"pipe | bar.md", "caret ^ up.md", "back\\slash.md", "colon: star* quote\" <lt> gt.md",
	"amp & semi; eq= plus+.md", "tick ` tilde ~ bang !.md", "dollar $ at @ {brace}.md",
	"apostrophe's.md", "comma, dot..md", "..md", "-.md", "_.md", "!!!.md", "###.md",
	"%%.md", "==.md", "Case.md", "case.md", "CASE.md", "café NFC.md", "cafe\xcc\x81 NFD.md",
	"caf\xc3\xa9 NFC.md", "emoji 🎉👩‍👩‍👧.md", "rtl שלום عربى.md", "zero\xe2\x80\x8bwidth.md",
	"bom \xef\xbb\xbf.md", "日本語 ノート.md", "tab\there.md", "newline\nhere.md",
	"cr\rhere.md", "bell\x07 esc\x1b del\x7f.md", "nbsp\xc2\xa0here.md",
	"index.md", "tags.md", "robots.txt.md", "sitemap.xml.md", "_quire.md", "api.md",
	"search.md", "rss.xml.md", "UPPER.MD", "no extension", "image [1] #2?.png",
	"folder #1/child ?.md", "folder #1/index.md", "[folder]/[note].md",
	"sub dir/ leading.md", "💥/💥.md",
};

static void write_odd_vault(const char *dir)
{
	struct buf name = BUF_INIT, links = BUF_INIT;
	size_t i;

	for (i = 0; i < sizeof(odd_names) / sizeof(*odd_names); i++) {
		const char *nm = odd_names[i], *slash = strrchr(nm, '/');
		size_t len = strlen(nm);

		tv_write(dir, nm, "Odd name, back to [[hub]].\n\n![[image [1] #2?.png]]\n");
		if (len > 3 && strcmp(nm + len - 3, ".md") == 0)
			buf_addf(&links, "[[%.*s]] ", (int)(len - 3 - (slash ? slash + 1 - nm : 0)),
				 slash ? slash + 1 : nm);
	}
	/* the longest name a file system takes: 255 bytes */
	buf_reset(&name);
	while (name.len < 252)
		buf_adds(&name, "é");
	buf_setlen(&name, 250);
	buf_adds(&name, "x.md");
	tv_write(dir, name.ptr, "Long name.\n");
	/* names that are not UTF-8: skipped, said about their folder */
	tv_write(dir, "latin1 caf\xe9.md", "Not UTF-8.\n");
	tv_write(dir, "bad/\xff\xfe.md", "Not UTF-8.\n");
	buf_adds(&links, "\n");
	tv_write_len(dir, "hub.md", links.ptr, links.len);
	buf_release(&name);
	buf_release(&links);
}

void hostile_odd_file_names(void)
{
	char *dir = tv_new();
	struct snapshot *snap;
	struct site *s;
	size_t i, pages = 0;

	write_odd_vault(dir);
	s = load(dir);
	CHECK(s != NULL);
	if (!s)
		goto out;
	snap = site_snapshot(s, NULL);
	for (i = 0; i < s->nnotes; i++) {
		const struct site_note *n = s->notes[i];
		const struct page *p;

		if (!n->published) {
			fprintf(stderr, "  not published: %s\n", n->note.path);
			CHECK(n->published);
			continue;
		}
		p = n->url ? page_at(snap, n->url) : NULL;
		if (!p || p->kind != PAGE_NOTE || !p->body) {
			fprintf(stderr, "  %s: no page at %s\n", n->note.path,
				n->url ? n->url : "(no URL)");
			CHECK(p != NULL && p->kind == PAGE_NOTE && p->body);
			continue;
		}
		pages++;
	}
	CHECK(pages >= sizeof(odd_names) / sizeof(*odd_names) - 3);
	CHECK(has_diag(&s->diags, ".", "not valid UTF-8"));
	CHECK(has_diag(&s->diags, "bad", "not valid UTF-8"));
	fprintf(stderr, "  odd file names: %zu notes, %zu pages, %zu diagnostics\n", s->nnotes,
		pages, s->diags.n);
	snapshot_unref(snap);
	site_free(s);
out:
	tv_remove(dir);
}

/* ---- the table of cases ------------------------------------------------------ */

static size_t vault_bytes;

static int add_file_size(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (flag == FTW_F)
		vault_bytes += (size_t)st->st_size;
	return 0;
}

size_t hostile_bytes(const struct hostile_case *c, void *input)
{
	if (c->kind == HOSTILE_BYTES)
		return ((struct buf *)input)->len;
	vault_bytes = 0;
	nftw(input, add_file_size, 16, FTW_PHYS);
	return vault_bytes;
}

#define KB 1024
#define MB (1024 * 1024)
#define BYTES HOSTILE_BYTES
#define VAULT HOSTILE_VAULT

/*
 * n is where the test counts (at n and 10 n): large enough that the work
 * in proportion to the input outweighs md_render()'s fixed cost many times
 * (so a quadratic part cannot hide behind it), small enough that 10 n
 * stays quick under the sanitizers. bench is where the benchmark times:
 * past where a deep tree outgrows the caches (a tree grows a little faster
 * than its depth until then: 2.7 times from 50,000 to 100,000 nested
 * quotes, 2 past 200,000).
 */
const struct hostile_case hostile_cases[] = {
	{ "nested quotes", BYTES, 20000, 160000, b_quotes, r_quotes, drop_buf },
	{ "nested lists", BYTES, 20000, 80000, b_lists, r_lists, drop_buf },
	{ "lists by indentation (bytes)", BYTES, 256 * KB, 2 * MB, b_indented_lists,
	  r_indented_lists, drop_buf },
	{ "nested brackets", BYTES, 20000, 160000, b_brackets, r_brackets, drop_buf },
	{ "nested wikilinks", BYTES, 20000, 80000, b_wikilinks, r_wikilinks, drop_buf },
	{ "nested embeds in one note", BYTES, 20000, 80000, b_embed_syntax, r_embed_syntax,
	  drop_buf },
	{ "unclosed wikilinks", BYTES, 10000, 20000, b_unclosed_wikilinks, r_unclosed_wikilinks,
	  drop_buf },
	{ "nested emphasis", BYTES, 10000, 40000, b_emphasis, r_emphasis, drop_buf },
	{ "mismatched emphasis", BYTES, 10000, 20000, b_emph_mismatch, r_emph_mismatch,
	  drop_buf },
	{ "nested highlights", BYTES, 20000, 320000, b_highlights, r_highlights, drop_buf },
	{ "unclosed comments and math", BYTES, 20000, 160000, b_comments_math, r_comments_math,
	  drop_buf },
	{ "unclosed links", BYTES, 10000, 20000, b_unclosed_links, r_unclosed_links, drop_buf },
	{ "nested callouts (bytes)", BYTES, 256 * KB, MB, b_callouts, r_callouts, drop_buf },
	{ "callout in a deep quote", BYTES, 20000, 160000, b_deep_callout, r_deep_callout,
	  drop_buf },
	{ "backticks", BYTES, 100000, 2560000, b_backticks, r_backticks, drop_buf },
	{ "highlighted code, unclosed", BYTES, 10000, 40000, b_highlight, r_highlight, drop_buf },
	{ "backtick staircase (bytes)", BYTES, 256 * KB, 4 * MB, b_backtick_stairs,
	  r_backtick_stairs, drop_buf },
	{ "diagram links", BYTES, 4000, 4000, b_diagram, r_diagram, drop_buf },
	{ "table columns", BYTES, 2000, 2000, b_table_wide, r_table_wide, drop_buf },
	{ "table rows of 256 cells", BYTES, 100, 100, b_table_full_rows, r_table_full_rows,
	  drop_buf },
	{ "table rows of 1,000 cells", BYTES, 100, 100, b_table_long_rows, r_table_long_rows,
	  drop_buf },
	{ "table square", BYTES, 100, 100, b_table_square, r_table_square, drop_buf },
	{ "table short rows", BYTES, 1000, 1000, b_table_short_rows, r_table_short_rows,
	  drop_buf },
	{ "duplicate headings", BYTES, 10000, 20000, b_headings, r_headings, drop_buf },
	{ "tags and block ids", BYTES, 10000, 10000, b_tags, r_tags, drop_buf },
	{ "footnotes", BYTES, 10000, 10000, b_footnotes, r_footnotes, drop_buf },
	{ "inline footnotes", BYTES, 10000, 10000, b_inline_notes, r_inline_notes, drop_buf },
	{ "reference definitions", BYTES, 10000, 10000, b_references, r_references, drop_buf },
	{ "nested raw HTML", BYTES, 4000, 8000, b_html_nesting, r_html_nesting, drop_buf },
	{ "raw HTML, hostile tags", BYTES, 12000, 120000, b_html_units, r_html_units, drop_buf },
	{ "YAML alias bomb", BYTES, 4000, 16000, b_alias_bomb, r_alias_bomb, drop_buf },
	{ "YAML nesting", BYTES, 20000, 80000, b_yaml_deep, r_yaml_deep, drop_buf },
	{ "YAML long lists", BYTES, 10000, 40000, b_yaml_long, r_yaml_long, drop_buf },
	{ "control bytes", BYTES, 20000, 160000, b_bad_bytes, r_bad_bytes, drop_buf },
	{ "big note (bytes)", BYTES, 512 * KB, 5 * MB, b_big_note, r_big_note, drop_buf },
	{ "embed chain (notes)", VAULT, 200, 400, b_embed_chain, r_embed_chain, drop_vault },
	{ "links to a hub (links)", VAULT, 4000, 4000, b_hub_links, r_hub_links, drop_vault },
	{ "links to headings (links)", VAULT, 2000, 20000, b_heading_links, r_heading_links,
	  drop_vault },
	{ "a million links (links)", VAULT, 10000, 100000, b_many_links, r_many_links,
	  drop_vault },
};

const size_t hostile_ncases = sizeof(hostile_cases) / sizeof(hostile_cases[0]);
