/*
 * md_prepass.c: stage 1 of md_render(), the source pre-pass (see the top of
 * markdown.c), and the placeholders it leaves turned back into text.
 *
 * One loop over the lines of the source, aware of fenced and indented code
 * (copied as they are) and of code spans and autolinks (skipped): it drops
 * %%comments%% but keeps their line breaks, swaps $math$, $$math$$ and the
 * escapes in ESCAPED for placeholders "\x02M<n>\x03" and "\x02E<byte>\x03",
 * escapes the '|' of a [[target|label]] so that tables keep it, and keeps a
 * line map (struct pre.lines) for what display math folds onto one line.
 * The later stages turn placeholders back with md_pre_expand(): as the source
 * had it in code and raw HTML, as TeX in text.
 *
 * Knows nothing of cmark: it works on bytes, and its closers are found with
 * failure caches so that no input makes it quadratic.
 */
#include "markdown/markdown.h"
#include "markdown/markdown-int.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int is_punct(char c)
{
	return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
	       (c >= 123 && c <= 126);
}

/* ---- the pre-pass ---- */

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

static size_t line_end_s(const char *s, size_t len, size_t i)
{
	const char *nl = memchr(s + i, '\n', len - i);

	return nl ? (size_t)(nl - s) : len;
}

/* A line with nothing but blanks and '>' ends a paragraph, in a quote or not. */
static int blank_line_at_s(const char *s, size_t len, size_t i)
{
	while (i < len && (is_blank(s[i]) || s[i] == '>'))
		i++;
	return i >= len || s[i] == '\n' || s[i] == '\r';
}

static size_t line_end(const struct pre *p, size_t i)
{
	return line_end_s(p->s, p->len, i);
}

static int blank_line_at(const struct pre *p, size_t i)
{
	return blank_line_at_s(p->s, p->len, i);
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

/* ---- the table guard (see markdown-int.h) ---- */

/*
 * The cells of a GFM delimiter row ("| :-- | --: |") in s[i, eol), or 0
 * when it is not one. Only rows with a pipe: "---" alone is a rule.
 */
static size_t delim_cells(const char *s, size_t i, size_t eol)
{
	size_t cells = 0, pipes = 0, k = i;

	while (k < eol && is_blank(s[k]))
		k++;
	if (k < eol && s[k] == '|') {
		pipes++;
		k++;
	}
	for (;;) {
		while (k < eol && is_blank(s[k]))
			k++;
		if (k >= eol || s[k] == '\r')
			break;
		if (s[k] == ':')
			k++;
		if (k >= eol || s[k] != '-')
			return 0;
		while (k < eol && s[k] == '-')
			k++;
		if (k < eol && s[k] == ':')
			k++;
		while (k < eol && is_blank(s[k]))
			k++;
		cells++;
		if (k < eol && s[k] == '|') {
			pipes++;
			k++;
		} else if (k < eol && s[k] != '\r') {
			return 0;
		}
	}
	return pipes ? cells : 0;
}

/* The pipes of s[i, eol) that split cells: not behind an odd run of backslashes. */
static size_t cell_pipes(const char *s, size_t i, size_t eol)
{
	size_t n = 0, k;

	for (k = i; k < eol; k++) {
		if (s[k] == '\\' && k + 1 < eol)
			k++;
		else if (s[k] == '|')
			n++;
	}
	return n;
}

static void tguard_init(struct tguard *g, size_t len)
{
	memset(g, 0, sizeof(*g));
	g->cells_left = MD_TABLE_CELLS + len;
}

enum tact { T_NONE, T_BREAK, T_ESCAPE };

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define MAX_COLUMNS_TEXT STRINGIFY(MD_TABLE_MAX_COLUMNS)

/*
 * The guard's verdict on the text line s[i, eol), line number line, whose
 * content starts at content (past quote and list markers); prev_text says
 * the line before was text. T_BREAK: *at is where a '\\' makes the
 * delimiter row text; T_ESCAPE: the row's pipes past the limit are to be
 * escaped. *why gets what to report (a format whose one number is
 * *n1), or NULL.
 */
static enum tact tguard_line(struct tguard *g, const char *s, size_t len, size_t i, size_t eol,
			     size_t content, int prev_text, int line, size_t *at, const char **why,
			     size_t *n1)
{
	size_t cols = prev_text ? delim_cells(s, content, eol) : 0;

	*why = NULL;
	if (cols) {
		size_t rows, cells, k;

		if (i >= g->region_end) {
			/* the rows this table can have: up to the next blank line */
			g->region_line = line;
			g->region_rows = 0;
			for (k = eol < len ? eol + 1 : len; k < len && !blank_line_at_s(s, len, k);
			     g->region_rows++)
				k = line_end_s(s, len, k) + 1;
			g->region_end = k < len ? k : len;
		}
		rows = g->region_rows - (size_t)(line - g->region_line);
		for (*at = content; s[*at] != '-'; (*at)++)
			;
		if (cols > MD_TABLE_MAX_COLUMNS) {
			*why = "a table of %zu columns: more than " MAX_COLUMNS_TEXT
			       ", so it is left as text";
			*n1 = cols;
			return T_BREAK;
		}
		cells = cols * (rows + 2);
		if (cells > g->cells_left) {
			*why = "a table of up to %zu cells (with the rows padded to its width): over "
			       "the note's limit for tables, so it is left as text";
			*n1 = cells;
			return T_BREAK;
		}
		g->cells_left -= cells;
		g->in_table = 1;
		g->warned_rows = 0;
		return T_NONE;
	}
	if (!g->in_table || (*n1 = cell_pipes(s, i, eol)) <= MD_TABLE_MAX_COLUMNS + 1)
		return T_NONE;
	if (!g->warned_rows) {
		g->warned_rows = 1;
		*why = "a table row of %zu pipes: the cells past " MAX_COLUMNS_TEXT
		       " are left as text in its last cell";
	}
	return T_ESCAPE;
}

static void pre_warn(struct pre *p, const char *fmt, size_t n1)
{
	struct md_warning *w;
	char msg[200];

	snprintf(msg, sizeof(msg), fmt, n1);
	ALLOC_GROW(p->warnings, p->nwarnings + 1, p->awarnings);
	w = &p->warnings[p->nwarnings++];
	w->line = p->line;
	w->msg = xstrdup(msg);
}

/* Escapes the cell-splitting pipes of p->out past the limit, from offset from on. */
static void escape_pipes(struct pre *p, size_t from)
{
	size_t n = 0, k, extra = 0;
	struct buf tail = BUF_INIT;

	for (k = from; k < p->out.len; k++) {
		if (p->out.ptr[k] == '\\' && k + 1 < p->out.len)
			k++;
		else if (p->out.ptr[k] == '|' && ++n > MD_TABLE_MAX_COLUMNS + 1)
			extra++;
	}
	if (!extra)
		return;
	buf_add(&tail, p->out.ptr + from, p->out.len - from);
	p->out.len = from;
	buf_grow(&p->out, tail.len + extra);
	for (n = 0, k = 0; k < tail.len; k++) {
		if (tail.ptr[k] == '\\' && k + 1 < tail.len) {
			buf_add(&p->out, tail.ptr + k, 2);
			k++;
			continue;
		}
		if (tail.ptr[k] == '|' && ++n > MD_TABLE_MAX_COLUMNS + 1)
			buf_addc(&p->out, '\\');
		buf_addc(&p->out, tail.ptr[k]);
	}
	buf_release(&tail);
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
 * after it, so "$5 and $6" is not math. Inline math stays on one line. A
 * code span binds tighter (as in CommonMark): a '$' inside one closes
 * nothing, so "$5 and `$x$`" is no math.
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
		if (s[k] == '`') {
			size_t n = 0, close;

			while (k + n < p->len && s[k + n] == '`')
				n++;
			close = tick_close(p, k + n, n);
			if (close == NONE)
				k += n - 1; /* literal backticks */
			else if (!memchr(s + k, '\n', close - k))
				k = close + n - 1;
			else
				return NONE; /* the span runs past the line, as math may not */
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
 * "\\[\\[" or "\\]\\]" at j, either half: an escaped wikilink's brackets
 * stay text wherever they stand, after a letter or a '!' too (Obsidian),
 * not only at the start of a word.
 */
static int escaped_pair(const char *s, size_t len, size_t j)
{
	char b = s[j + 1];

	if (b != '[' && b != ']')
		return 0;
	return (j + 3 < len && s[j + 2] == '\\' && s[j + 3] == b) ||
	       (j >= 2 && s[j - 1] == b && s[j - 2] == '\\');
}

/* For the line [ls, eol): the ']' that closes each '[' (escaped brackets skipped). */
static void match_brackets(struct pre *p, size_t ls, size_t eol)
{
	const char *s = p->s;
	size_t n = eol - ls, k, top = 0, *stack;

	ALLOC_GROW(p->match, n + 1, p->amatch);
	stack = xcalloc(n + 1, sizeof(*stack));
	for (k = 0; k < n; k++)
		p->match[k] = NONE;
	for (k = ls; k < eol; k++) {
		if (s[k] == '\\') {
			k++;
			continue;
		}
		if (s[k] == '[')
			stack[top++] = k;
		else if (s[k] == ']' && top)
			p->match[stack[--top] - ls] = k;
	}
	free(stack);
	p->match_line = ls;
}

/*
 * An inline footnote "^[text]" at j (line start ls): the reference is
 * written in its place and the definition kept for the end. Returns where
 * the text goes on, or NONE when the '[' does not close on its line.
 */
static size_t inline_footnote(struct pre *p, size_t ls, size_t j, size_t *run)
{
	size_t close;

	if (p->match_line != ls)
		match_brackets(p, ls, line_end(p, ls));
	close = p->match[j + 1 - ls];
	if (close == NONE || close == j + 2)
		return NONE;
	pre_copy(p, *run, j);
	p->nnotes++;
	buf_addf(&p->out, "[^quire-inline-%zu]", p->nnotes);
	buf_addf(&p->notes, "\n[^quire-inline-%zu]: ", p->nnotes);
	buf_add(&p->notes, p->s + j + 2, close - j - 2);
	buf_addc(&p->notes, '\n');
	*run = close + 1;
	return close + 1;
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
	size_t wl_done = i; /* the "[[" before here would close where the last one failed */

	while (j < len) {
		char ch = s[j];

		if (ch == '\n') {
			pre_copy(p, run, j + 1);
			return j + 1;
		}
		if (ch == '\\' && j + 1 < len && strchr(ESCAPED, s[j + 1]) &&
		    (j == 0 || is_space(s[j - 1]) || escaped_pair(s, len, j)) &&
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
		if (ch == '^' && j + 1 < len && s[j + 1] == '[') {
			k = inline_footnote(p, ls, j, &run);
			j = k == NONE ? j + 1 : k;
			continue;
		}
		if (ch == '<') {
			k = autolink_end(s, j, len);
			j = k == NONE ? j + 1 : k;
			continue;
		}
		if (ch == '[' && j + 1 < len && s[j + 1] == '[' && j >= wl_done) {
			/*
			 * A wikilink's '|' inside a table row would end the cell:
			 * Obsidian wants "\|" there, but vaults converted from
			 * elsewhere have the bare pipe. Escaping it here makes both
			 * work, in tables and out (where "\|" is just "|"). A
			 * backtick in a wikilink's target is part of the name, not
			 * a code span (Obsidian links [[a `b` c]] to the note
			 * "a `b` c"): escaped too; in its label it is code.
			 */
			for (k = j + 2; k + 1 < len && s[k] != '\n' && !(s[k] == ']' && s[k + 1] == ']');
			     k++)
				;
			if (k + 1 < len && s[k] == ']' && s[k + 1] == ']' &&
			    (memchr(s + j, '|', k - j) || memchr(s + j, '`', k - j))) {
				size_t m;
				int label = 0;
				pre_copy(p, run, j);
				for (m = j; m < k + 2; m++) {
					int bare = m > j && s[m - 1] != '\\';
					if (bare && (s[m] == '|' || (s[m] == '`' && !label)))
						buf_addc(&p->out, '\\');
					label |= s[m] == '|';
					buf_addc(&p->out, s[m]);
				}
				run = j = k + 2;
				continue;
			}
			/*
			 * Every "[[" between here and k meets the same "]]" (or the
			 * same end of line) with no pipe before it: scanning again
			 * from each made a line of n unclosed "[[a |b" cost n^2
			 * (tests/test-pathological.c, "unclosed wikilinks").
			 */
			wl_done = k;
		}
		j++;
	}
	pre_copy(p, run, len);
	return len;
}

/* A line of text from i: the table guard's verdict on it, then its inlines. */
static size_t text_line(struct pre *p, size_t i, size_t eol)
{
	size_t at = 0, n1 = 0, from = p->out.len;
	enum tact act = T_NONE;

	if (blank_line_at(p, i)) {
		p->prev_text = 0;
		p->tables.in_table = 0;
		return scan_inline(p, i);
	}
	if (memchr(p->s + i, '|', eol - i)) {
		int depth = 0, marker = 0;
		size_t qend, content = strip_containers(p->s, i, eol, &depth, &marker, &qend);
		const char *why;

		act = tguard_line(&p->tables, p->s, p->len, i, eol, content, p->prev_text, p->line,
				  &at, &why, &n1);
		if (why)
			pre_warn(p, why, n1);
	}
	p->prev_text = 1;
	if (act == T_BREAK) {
		pre_copy(p, i, at);
		buf_addc(&p->out, '\\');
		return scan_inline(p, at);
	}
	i = scan_inline(p, i);
	if (act == T_ESCAPE)
		escape_pipes(p, from);
	return i;
}

void md_prepass(struct pre *p)
{
	size_t i = 0;

	p->line = 1;
	p->prev_blank = 1;
	p->match_line = NONE;
	tguard_init(&p->tables, p->len);
	pre_newline(p);
	buf_grow(&p->out, p->len + p->len / 16);
	while (i < p->len) {
		size_t eol = line_end(p, i);
		size_t next = eol < p->len ? eol + 1 : eol;

		if ((p->in_fence && fence_line(p, i, eol)) || block_line(p, i, eol)) {
			p->prev_text = 0;
			p->tables.in_table = 0;
			pre_copy(p, i, next);
			i = next;
			continue;
		}
		i = text_line(p, i, eol);
	}
	if (p->nnotes) {
		/* the inline footnotes' definitions, after everything (cmark numbers by use) */
		buf_adds(&p->out, "\n\n");
		buf_add(&p->out, p->notes.ptr, p->notes.len);
	}
}

void md_pre_release(struct pre *p)
{
	size_t i;

	buf_release(&p->out);
	buf_release(&p->tex);
	free(p->lines);
	free(p->math);
	for (i = 0; i < p->nwarnings; i++)
		free(p->warnings[i].msg);
	free(p->warnings);
	buf_release(&p->notes);
	free(p->match);
}

/* ---- whether it is needed ---- */

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

/*
 * A "[[...|...]]" or "[[...`...]]" on one line: its pipe needs escaping
 * for tables, its backtick so as not to open a code span (see scan_inline).
 */
static int has_piped_wikilink(const char *s, size_t len)
{
	const char *q, *end = s + len;

	while ((q = memchr(s, '[', (size_t)(end - s))) && q + 1 < end) {
		if (q[1] == '[') {
			for (q += 2; q + 1 < end && *q != '\n' && !(q[0] == ']' && q[1] == ']'); q++)
				if (*q == '|' || *q == '`')
					return 1;
		} else {
			q++;
		}
		s = q;
	}
	return 0;
}

/*
 * Would the table guard change anything? The same walk as the pre-pass's,
 * blind to code: it may say yes where code hides a table (the pre-pass
 * then runs and changes nothing), never no where the pre-pass would act.
 */
static int tables_need_guard(const char *s, size_t len)
{
	struct tguard g;
	size_t i = 0, at, n1;
	int prev_text = 0, line = 1;
	const char *why;

	if (!memchr(s, '|', len))
		return 0;
	tguard_init(&g, len);
	for (; i < len; i = line_end_s(s, len, i) + 1, line++) {
		size_t eol = line_end_s(s, len, i), qend, content;
		int depth = 0, marker = 0;

		if (blank_line_at_s(s, len, i)) {
			prev_text = 0;
			g.in_table = 0;
			continue;
		}
		if (memchr(s + i, '|', eol - i)) {
			content = strip_containers(s, i, eol, &depth, &marker, &qend);
			if (tguard_line(&g, s, len, i, eol, content, prev_text, line, &at, &why, &n1) !=
			    T_NONE)
				return 1;
		}
		prev_text = 1;
	}
	return 0;
}

/* A "^[": perhaps an inline footnote. */
static int has_inline_note(const char *s, size_t len)
{
	const char *q, *end = s + len;

	for (; (q = memchr(s, '^', (size_t)(end - s))) && q + 1 < end; s = q + 1)
		if (q[1] == '[')
			return 1;
	return 0;
}

int md_prepass_needed(const char *src, size_t len)
{
	return memchr(src, '$', len) || find_pair(src, 0, len, '%') != NONE ||
	       has_escape(src, len) || has_piped_wikilink(src, len) ||
	       has_inline_note(src, len) || tables_need_guard(src, len);
}

/* ---- placeholders turned back ---- */

size_t md_pre_placeholder(const struct pre *p, const char *s, size_t len, char *kind, size_t *ix)
{
	size_t k = 2, v = 0;

	if (len < 4 || s[0] != PH_OPEN || (s[1] != 'M' && s[1] != 'E'))
		return 0;
	while (k < len && is_digit(s[k]) && k < 20)
		v = v * 10 + (size_t)(s[k++] - '0');
	if (k == 2 || k >= len || s[k] != PH_CLOSE)
		return 0;
	if (s[1] == 'M' ? v >= p->nmath : v > 127 || !v || !strchr(ESCAPED, (int)v))
		return 0;
	*kind = s[1];
	*ix = v;
	return k + 1;
}

void md_pre_expand(const struct pre *p, struct buf *b, const char *s, size_t len, enum ph_mode mode)
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
		n = md_pre_placeholder(p, s, len, &kind, &ix);
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
			buf_add(b, p->tex.ptr + p->math[ix].tex, p->math[ix].texlen);
		} else {
			buf_add(b, p->s + p->math[ix].raw, p->math[ix].rawlen);
		}
		s += n;
		len -= n;
	}
}

char *md_pre_expand_dup(const struct pre *p, const char *s, size_t len, enum ph_mode mode)
{
	struct buf b = BUF_INIT;

	md_pre_expand(p, &b, s, len, mode);
	return md_detach_exact(&b);
}
