/*
 * md_annotate.c: stage 3 of md_render(), marks on cmark's tree for the writer.
 *
 * One walk of the parsed tree, without recursion. On blocks it finds
 * callouts ("> [!type]+ Title": the quote, its head paragraph, the line
 * break that ends the title) and ^block ids (on the paragraph, its list
 * item, or the block before a lone "^id" paragraph). On each run of sibling
 * inlines it runs three phases over a vector of segments (struct seg):
 * [[wikilinks]] and ![[embeds]], then ==highlights==, then #tags, and gives
 * every text node of the run the slice of segments it renders as. Marks go
 * into struct ann, which cmark's user_data points at, from a pool of
 * chunks freed with the context; cmark's tree itself is left as parsed.
 *
 * Links are only found here (struct link, target and label as written):
 * links.c resolves them when it writes them, so references come out in
 * document order.
 */
#include "markdown/markdown.h"
#include "markdown/markdown-int.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define POOL_CHUNK 256

struct ann *md_ann_get(struct ctx *c, cmark_node *n)
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

static void free_segv(struct segv *v)
{
	free(v->v);
	memset(v, 0, sizeof(*v));
}

static void segv_add(struct segv *v, const struct seg *g)
{
	segv_push(v, g->kind, g->node, g->s, g->len, g->link);
}

/* ---- plain text of inline content ---- */

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

void md_plain_of(const struct ctx *c, cmark_node *root, struct buf *b)
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

struct link *md_new_link(struct ctx *c, size_t *ix)
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

	l = md_new_link(c, &ix);
	l->embed = embed;
	l->target = md_pre_expand_dup(&c->pre, t, tlen, PH_URL);
	l->fragment = f ? md_pre_expand_dup(&c->pre, f, flen, PH_URL) : NULL;
	if (pipe) {
		lab = pipe + 1;
		lablen = firstlen - (size_t)(lab - first);
	}
	if (pipe && same) {
		trim(&lab, &lablen);
		if (lablen)
			l->label = md_pre_expand_dup(&c->pre, lab, lablen, PH_URL);
	} else if (pipe) {
		struct buf b = BUF_INIT;
		const char *bs;
		size_t blen;

		buf_add(&b, lab, lablen);
		for (i = open + 2; i < out->n; i++) {
			if (out->v[i].kind == S_TEXT)
				buf_add(&b, out->v[i].s, out->v[i].len);
			else if (out->v[i].kind == S_NODE)
				md_plain_of(c, out->v[i].node, &b);
		}
		buf_add(&b, piece, piecelen);
		bs = b.ptr;
		blen = b.len;
		trim(&bs, &blen);
		if (blen)
			l->label = md_pre_expand_dup(&c->pre, bs, blen, PH_URL);
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
				md_ann_get(c, n)->flags |= A_SKIP;
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

/*
 * Whether a run of siblings holds anything for the three phases: a text
 * child already annotated (trimmed) or with a '[', '=' or '#'. Asked
 * before the run's tokens are made: a paragraph of 200,000 plain lines
 * (each a text and a line break) made 400,000 tokens of 40 bytes, kept
 * at their most, to find nothing (69 bytes a byte of the note).
 */
static int run_needs_work(cmark_node *parent)
{
	cmark_node *n;
	const char *s;
	size_t len;

	for (n = cmark_node_first_child(parent); n; n = cmark_node_next(n)) {
		if (!is_type(n, CMARK_NODE_TEXT))
			continue;
		if (ann_of(n))
			return 1;
		s = literal(n, &len);
		if (worth_scanning(s, len))
			return 1;
	}
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
	if (!run_needs_work(parent))
		return;
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
		md_ann_get(c, parent)->flags |= A_EMBEDS;

	/* every text child gets segments, none if all of it went into markup */
	for (i = 0; i < v0->n; i++) {
		if (v0->v[i].kind == S_TEXT) {
			struct ann *a = md_ann_get(c, v0->v[i].node);

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
		a = md_ann_get(c, g->node);
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
	q = md_ann_get(c, quote);
	q->flags |= A_CALLOUT;
	q->ctype = s + 2;
	q->ctypelen = (size_t)(close - s) - 2;
	k = (size_t)(close - s) + 1;
	if (k < len && (s[k] == '+' || s[k] == '-'))
		q->fold = s[k++];
	while (k < len && is_space(s[k]))
		k++;
	a = md_ann_get(c, first);
	a->trim_start = k;
	md_ann_get(c, para)->flags |= A_CALLHEAD;
	q->has_title = k < len;
	q->has_content = cmark_node_next(para) != NULL;
	for (n = cmark_node_next(first); n; n = cmark_node_next(n)) {
		if (is_break(n)) {
			md_ann_get(c, n)->flags |= A_TITLE_END;
			q->has_content = 1;
			break;
		}
		q->has_title = 1;
	}
}

/* A paragraph of images only (and the blanks between them): ![a](x.png) ![b](y.png). */
static int only_images(cmark_node *para)
{
	cmark_node *n;
	int images = 0;

	for (n = cmark_node_first_child(para); n; n = cmark_node_next(n)) {
		cmark_node_type t = cmark_node_get_type(n);
		const char *s;
		size_t len, i;

		if (t == CMARK_NODE_IMAGE) {
			images++;
			continue;
		}
		if (t == CMARK_NODE_SOFTBREAK || t == CMARK_NODE_LINEBREAK)
			continue;
		if (t != CMARK_NODE_TEXT)
			return 0;
		s = literal(n, &len);
		for (i = 0; i < len; i++)
			if (!is_space(s[i]))
				return 0;
	}
	return images > 0;
}

/*
 * The blocks that a paragraph of just "^id" after them names (Obsidian:
 * the id on its own line after the block): a table, quote, list, code
 * block, or a paragraph of images or embeds only.
 */
static int takes_trailing_id(cmark_node *n)
{
	cmark_node_type t = cmark_node_get_type(n);
	const char *ts;

	if (t == CMARK_NODE_BLOCK_QUOTE || t == CMARK_NODE_LIST || t == CMARK_NODE_CODE_BLOCK)
		return 1;
	if (t == CMARK_NODE_PARAGRAPH)
		return has_flag(n, A_EMBEDS) || only_images(n);
	ts = cmark_node_get_type_string(n);
	return !strcmp(ts, "table");
}

static cmark_node *last_paragraph(struct ctx *c, cmark_node *item)
{
	struct ann *a = md_ann_get(c, item);
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
 * Does s (len bytes) end with an embed, "![[...]]"? Obsidian takes
 * "![[image.png]]^id" (no blank before the caret: its own help vault
 * writes it) as the paragraph's id, as after a blank.
 */
static int ends_with_embed(const char *s, size_t len)
{
	size_t k;

	if (len < 6 || s[len - 1] != ']' || s[len - 2] != ']')
		return 0;
	for (k = len - 2; k >= 3; k--) {
		if (s[k - 1] == ']' && s[k - 2] == ']')
			return 0;
		if (s[k - 1] == '[' && s[k - 2] == '[')
			return s[k - 3] == '!' && k < len - 2;
	}
	return 0;
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
		t = md_ann_get(c, prev);
		t->flags |= A_ID;
		t->id = s + b;
		t->idlen = idend - b;
		md_ann_get(c, para)->flags |= A_SKIP;
		return;
	}
	if (b - 1 == st) {
		prev = cmark_node_previous(last);
		if (!prev || !is_break(prev))
			return;
		md_ann_get(c, prev)->flags |= A_SKIP;
		e = b - 1;
	} else if (is_space(s[b - 2])) {
		e = b - 1;
		while (e > st && is_space(s[e - 1]))
			e--;
	} else if (ends_with_embed(s + st, b - 1 - st)) {
		e = b - 1;
	} else {
		return;
	}
	a = md_ann_get(c, last);
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
	t = md_ann_get(c, target);
	t->flags |= A_ID;
	t->id = s + b;
	t->idlen = idend - b;
}

/*
 * A task: a list item whose first paragraph starts with "[c]" and a blank
 * (or nothing more on its line), c any one character. Obsidian keeps c:
 * a space is open, anything else done, and themes give meaning to "x",
 * "-", "?", "!", ">", "/"... (data-task). Found here in every list, in
 * quotes and callouts too, where cmark-gfm's tasklist extension (no
 * longer used) saw none and knew only " " and "x".
 */
static void find_task(struct ctx *c, cmark_node *para)
{
	cmark_node *item = cmark_node_parent(para), *first = cmark_node_first_child(para);
	struct ann *t, *a;
	const char *s;
	size_t len, k, skip;
	int32_t cp;
	int n;

	if (!is_type(item, CMARK_NODE_ITEM) || cmark_node_first_child(item) != para ||
	    !is_type(first, CMARK_NODE_TEXT))
		return;
	s = literal(first, &len);
	if (len < 3 || s[0] != '[' || s[1] == ']' || s[1] == '\n')
		return;
	n = utf8_decode(s + 1, len - 1, &cp); /* the text is valid UTF-8 (md_render) */
	k = 1 + (size_t)(n > 0 ? n : 1);
	if (k >= len || s[k] != ']')
		return;
	if (k + 1 < len ? s[k + 1] != ' ' && s[k + 1] != '\t'
			: cmark_node_next(first) && !is_break(cmark_node_next(first)))
		return;
	t = md_ann_get(c, item);
	t->flags |= A_TASK;
	t->task = s + 1;
	t->tasklen = k - 1;
	for (skip = k + 1; skip < len && (s[skip] == ' ' || s[skip] == '\t'); skip++)
		;
	a = md_ann_get(c, first);
	a->trim_start = skip;
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

void md_annotate(struct ctx *c, cmark_node *doc)
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
			find_task(c, n);
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
	/*
	 * The runs' scratch tokens, 40 bytes each and kept at their most,
	 * are not needed to render: not held beside the HTML being written
	 * (a note of 1 MB of broken links held 31 MB of them there).
	 */
	free_segv(&c->v0);
	free_segv(&c->v1);
	free_segv(&c->v2);
}
