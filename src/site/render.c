/*
 * render.c: fragments and pages.
 *
 * A fragment depends only on its note and on what its names resolve to
 * (kind and URL); an embedded note is a splice point in it, not a copy.
 * Composing a page follows the splices into the embedded notes' fragments
 * (a section of one for ![[note#Heading]], a block for ![[note#^id]]), so
 * an edit to an embedded note re-composes its embedders without
 * re-parsing them.
 *
 * The composed page holds the note's own fragment verbatim, in pieces
 * between the places where embedded notes were spliced in; so after
 * composing, the fragment is read back from the page (frag_add()) and the
 * note's own copy is freed: about a third of what the pages of a vault
 * take, instead of a copy of each page's HTML.
 *
 * Rejected: rendering embeds inside markdown.c by recursion. It would make
 * a fragment depend on other notes' bodies, force an order on rendering,
 * and parse each embedded note once per embedder.
 */
#define _GNU_SOURCE /* memmem */
#include "site/render.h"
#include "util/gzip.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/unicode.h"
#include "util/xalloc.h"
#include "vault/resolve.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void render_resolve(const struct site *s, const struct site_note *n, const struct md_ref *ref,
		    struct site_ref *out)
{
	void *item = NULL;
	enum resolve_kind kind;

	if (!ref->target[0]) {
		kind = RESOLVE_NOTE; /* [[#Heading]]: this note */
		item = (void *)n;
	} else {
		kind = resolver_find(s->resolver, n->note.path, ref->target, &item);
		if (kind == RESOLVE_FILE && ref->markdown == 3)
			kind = RESOLVE_NONE; /* a diagram links notes: an attachment is not published by it */
		/*
		 * A Markdown link to a file by a path that misses
		 * ("../module/x.md" where x.md is in help/): vaults converted
		 * from elsewhere keep the paths of their old layout, and
		 * Obsidian finds the file by its name. The name is what the
		 * link mentions (resolve_name_key), so a note of that name
		 * appearing later is looked up again.
		 */
		if (kind == RESOLVE_NONE && ref->markdown == 1 && strchr(ref->target, '/') &&
		    strrchr(ref->target, '/')[1])
			kind = resolver_find(s->resolver, n->note.path,
					     strrchr(ref->target, '/') + 1, &item);
	}
	out->kind = MD_TARGET_BROKEN;
	out->target = NULL;
	if (kind == RESOLVE_NOTE) {
		const struct site_note *t = item;
		out->kind = t->published ? MD_TARGET_NOTE : MD_TARGET_PLAIN;
		out->target = item;
	} else if (kind == RESOLVE_FILE) {
		out->kind = MD_TARGET_ATTACHMENT;
		out->target = item;
	}
}

struct body_ctx {
	struct site *s;
	struct site_note *n;
	size_t cap;           /* of n->refs */
};

static void resolve_ref(void *ctx, size_t index, const struct md_ref *ref, struct md_target *out)
{
	struct body_ctx *c = ctx;
	struct site_note *n = c->n;
	struct site_ref *r;

	if (index >= c->cap) {
		/* refs arrive one by one as markdown.c meets them: keep ours parallel */
		c->cap = c->cap * 2 > index + 1 ? c->cap * 2 : index + 1;
		n->refs = xrealloc(n->refs, c->cap * sizeof(*n->refs));
	}
	r = &n->refs[index];
	render_resolve(c->s, n, ref, r);
	out->kind = r->kind;
	/*
	 * No title tooltip: a fragment must not depend on another note's
	 * title, or a retitle would re-render every note linking to it.
	 */
	out->title = NULL;
	if (r->kind == MD_TARGET_NOTE)
		out->url = ((const struct site_note *)r->target)->href;
	else if (r->kind == MD_TARGET_ATTACHMENT)
		out->url = ((const struct site_file *)r->target)->href;
}

void render_note_release(struct site_note *n)
{
	struct site_fragment *f = &n->frag;

	md_result_release(&n->md);
	free(n->refs);
	n->refs = NULL;
	map_release(&n->ref_kinds);
	page_unref(f->page);
	free(f->pieces);
	free(f->next);
	memset(f, 0, sizeof(*f));
}

void render_note_adopt(struct site_note *n)
{
	struct site_fragment *f = &n->frag;

	if (!f->next)
		return;
	buf_release(&n->md.html);
	page_unref(f->page);
	free(f->pieces);
	f->page = page_ref(n->page);
	f->pieces = f->next;
	f->npieces = f->nnext;
	f->next = NULL;
	f->nnext = 0;
}

/* Appends bytes [from, to) of n's fragment, from wherever it is kept. */
static void frag_add(struct buf *out, const struct site_note *n, size_t from, size_t to)
{
	const struct site_fragment *f = &n->frag;
	size_t k;

	if (!f->page) {
		buf_add(out, n->md.html.ptr + from, to - from);
		return;
	}
	/* the last piece starting at or before from (one piece more than the note's embeds) */
	for (k = f->npieces - 1; k > 0 && f->pieces[k].from > from; k--)
		;
	for (; from < to; k++) {
		size_t end = k + 1 < f->npieces ? f->pieces[k + 1].from : f->len;
		size_t len = (end < to ? end : to) - from;
		const char *bytes = page_bytes(f->page); /* inflated when only gzip is kept */
		buf_add(out, bytes + f->pieces[k].at + (from - f->pieces[k].from), len);
		from += len;
	}
}

/*
 * A hash of what links into n can name: its headings (level, id, text,
 * in order: a chain's "#id" depends on all three) and block ids. When it
 * is unchanged, the notes linking to a heading or block here need not be
 * composed again.
 */
static uint64_t anchors_hash(const struct md_result *md)
{
	uint64_t h = hash64_seeded(&md->nheadings, sizeof(md->nheadings), md->nblocks);
	size_t k;

	for (k = 0; k < md->nheadings; k++) {
		const struct md_heading *x = &md->headings[k];
		h = hash64_seeded(&x->level, sizeof(x->level), h);
		h = hash64_seeded(x->id, strlen(x->id) + 1, h);
		h = hash64_seeded(x->text, strlen(x->text) + 1, h);
	}
	for (k = 0; k < md->nblocks; k++)
		h = hash64_seeded(md->blocks[k].id, strlen(md->blocks[k].id) + 1, h);
	return h;
}

void render_note_body(struct site *s, struct site_note *n)
{
	uint64_t anchors;
	struct body_ctx ctx = { s, n, 0 };
	struct md_options opt;
	size_t k;

	render_note_release(n);
	opt.resolve = resolve_ref;
	opt.resolve_ctx = &ctx;
	opt.url_prefix = s->cfg.url_prefix;
	opt.first_line = n->note.body_line;
	opt.hard_breaks = !s->cfg.strict_line_breaks;
	opt.url_slots = 1;
	opt.highlight = !s->cfg.plain_code;
	if (md_render(n->note.body ? n->note.body : "", n->note.body_len, &opt, &n->md) < 0) {
		diag_addk(&s->diags, DIAG_LINK, DIAG_ERROR, n->note.path, 0,
			  "could not parse the Markdown");
		md_result_release(&n->md);
	}
	n->frag.len = n->md.html.len;
	anchors = anchors_hash(&n->md);
	n->anchors_changed = anchors != n->anchors;
	n->anchors = anchors;
	for (k = 0; k < n->md.nwarnings; k++)
		diag_addk(&s->diags, DIAG_LINK, DIAG_WARNING, n->note.path, n->md.warnings[k].line,
			  "%s", n->md.warnings[k].msg);
	for (k = 0; k < n->md.nrefs; k++) {
		const struct md_ref *ref = &n->md.refs[k];
		if (n->refs[k].kind != MD_TARGET_BROKEN)
			continue;
		if (ref->markdown >= 2)
			continue; /* perhaps a web path, or a diagram's node (markdown.h) */
		if (ref->markdown)
			diag_addk(&s->diags, DIAG_LINK, DIAG_WARNING, n->note.path, ref->line,
				  "%s to %s, which is not in the vault: left as written",
				  ref->kind == MD_REF_EMBED ? "image" : "link", ref->target);
		else
			diag_addk(&s->diags, DIAG_LINK, DIAG_WARNING, n->note.path, ref->line,
				  "broken %s: [[%s]] matches no note or attachment",
				  ref->kind == MD_REF_EMBED ? "embed" : "link", ref->target);
	}
	note_drop_body(&n->note);
	/* the plain text is kept only until the search index has it */
	if (!s->keep_text && !s->search)
		buf_release(&n->md.text);
	else
		buf_fit(&n->md.text);
}

/*
 * The index of the first heading named text (by id or, ignoring case, by
 * its text) that starts in [from, to) and is deeper than level, or -1.
 */
static long heading_in(const struct md_result *md, const char *text, size_t from, size_t to,
		       int level)
{
	char *id = md_heading_id(text);
	long found = -1;
	size_t k;

	for (k = 0; k < md->nheadings && found < 0; k++) {
		const struct md_heading *h = &md->headings[k];
		if (h->start >= from && h->start < to && h->level > level &&
		    (strcmp(h->id, id) == 0 || strcasecmp(h->text, text) == 0))
			found = (long)k;
	}
	free(id);
	return found;
}

/*
 * The heading that frag names in md: a heading, or "Part#Sub", the
 * heading Sub in the section of Part (Obsidian's heading chains). The
 * whole fragment is tried first: a heading may hold a '#' ("C# basics").
 * Its index, with *end where its section ends inside the chain's
 * sections (len: the fragment's length), or -1.
 */
static long chain_heading(const struct md_result *md, const char *frag, size_t len, size_t *end)
{
	const char *part = frag, *hash;
	size_t from = 0, to = len;
	int level = 0;
	long h = heading_in(md, frag, from, to, level);

	if (h >= 0) {
		*end = md->headings[h].end;
		return h;
	}
	for (; part; part = hash ? hash + 1 : NULL) {
		char *text;

		hash = strchr(part, '#');
		text = hash ? xstrndup(part, (size_t)(hash - part)) : xstrdup(part);
		h = heading_in(md, text, from, to, level);
		free(text);
		if (h < 0)
			return -1;
		from = md->headings[h].start;
		to = md->headings[h].end < to ? md->headings[h].end : to;
		level = md->headings[h].level;
	}
	*end = to;
	return h;
}

/*
 * The part of note t that an embed with this fragment shows: [*start,
 * *end); *list is 'u' or 'o' when that part is one item of such a list,
 * which the embed then wraps in its list element.
 */
static int embed_range(const struct site_note *t, const char *frag, size_t *start, size_t *end,
		       char *list)
{
	const struct md_result *md = &t->md;
	size_t k;
	long h;

	*start = 0;
	*end = t->frag.len;
	*list = 0;
	if (!frag || !frag[0])
		return 0;
	if (frag[0] == '^') {
		for (k = 0; k < md->nblocks; k++) {
			if (strcmp(md->blocks[k].id, frag + 1) == 0) {
				*start = md->blocks[k].start;
				*end = md->blocks[k].end;
				*list = md->blocks[k].list;
				return 0;
			}
		}
		return -1;
	}
	if ((h = chain_heading(md, frag, t->frag.len, end)) < 0)
		return -1;
	*start = md->headings[h].start;
	return 0;
}

/* Where the pieces of the note being composed went in its body. */
struct pieces {
	struct site_piece *v;
	size_t n, alloc;
};

/*
 * Drops the id attributes from out[from, out->len): an embedded copy must
 * not repeat the ids of the page it is in (the page's own headings and
 * blocks, when a note embeds a part of itself, or one section embedded
 * twice), or the page is not valid HTML and an anchor may land on the
 * copy. The writer escapes '"' in text, so ` id="` only opens an
 * attribute.
 */
static void drop_ids(struct buf *out, size_t from)
{
	char *p = out->ptr + from, *end = out->ptr + out->len, *w = p;

	for (;;) {
		char *a = memmem(p, (size_t)(end - p), " id=\"", 5);
		char *q = a ? memchr(a + 5, '"', (size_t)(end - a - 5)) : NULL;

		if (!q) {
			memmove(w, p, (size_t)(end - p));
			w += end - p;
			break;
		}
		memmove(w, p, (size_t)(a - p));
		w += a - p;
		p = q + 1;
	}
	buf_setlen(out, (size_t)(w - out->ptr));
}

/*
 * Appends n's fragment from pos to end, noting where it went when pieces
 * is set (the page's own note); without pieces it is an embedded copy,
 * whose ids are dropped.
 */
static void add_piece(struct buf *out, const struct site_note *n, size_t pos, size_t end,
		      struct pieces *pieces)
{
	size_t from = out->len;

	if (pieces) {
		ALLOC_GROW(pieces->v, pieces->n + 1, pieces->alloc);
		pieces->v[pieces->n].from = pos;
		pieces->v[pieces->n].at = out->len;
		pieces->n++;
	}
	frag_add(out, n, pos, end);
	if (!pieces)
		drop_ids(out, from);
}

/* The URL a slot of n's fragment stands for, as its reference resolves now. */
static const char *slot_url(const struct site_note *n, size_t ref)
{
	const struct site_ref *r = &n->refs[ref];

	if (r->kind == MD_TARGET_NOTE)
		return ((const struct site_note *)r->target)->href;
	if (r->kind == MD_TARGET_ATTACHMENT)
		return ((const struct site_file *)r->target)->href;
	return NULL;
}

/*
 * "#id" for the heading chain of n's reference ref ([[T#Part#Sub]]): the
 * id of that very heading in T as rendered now ("sub-1" when an earlier
 * "Sub" took "sub"), else the last name's id, as without a target.
 */
static void add_chain_id(struct buf *out, const struct site_note *n, size_t ref)
{
	const struct site_ref *r = &n->refs[ref];
	const char *frag = n->md.refs[ref].fragment, *last = strrchr(frag, '#');
	const struct site_note *t = r->target;
	size_t end;
	long h = r->kind == MD_TARGET_NOTE ? chain_heading(&t->md, frag, t->frag.len, &end) : -1;
	char *id;

	buf_addc(out, '#');
	if (h >= 0) {
		buf_adds_html(out, t->md.headings[h].id);
		return;
	}
	id = md_heading_id(last ? last + 1 : frag);
	buf_adds_html(out, id);
	free(id);
}

/*
 * Appends n's fragment from pos to end with the current URL of its target
 * at each slot (markdown.h, url_slots): the runs between slots are pieces.
 */
static void add_run(struct buf *out, const struct site_note *n, size_t pos, size_t end,
		    struct pieces *pieces)
{
	const struct md_result *md = &n->md;
	size_t lo = 0, hi = md->nslots;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (md->slots[mid].offset < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < md->nslots && md->slots[lo].offset < end; lo++) {
		size_t ref = md->slots[lo].ref;
		const char *url;

		add_piece(out, n, pos, md->slots[lo].offset, pieces);
		pos = md->slots[lo].offset;
		if (ref & MD_SLOT_FRAGMENT)
			add_chain_id(out, n, ref & ~MD_SLOT_FRAGMENT);
		else if ((url = slot_url(n, ref)))
			buf_adds_html(out, url);
	}
	add_piece(out, n, pos, end, pieces);
}

/*
 * What one page may still take in by embedding: a page's size must not
 * be the product of its notes' embeds (four notes of 200 embeds each
 * would make a page of gigabytes from 8 KB of Markdown). An embed that
 * would go past either bound is left out with a marker where it stood;
 * the first one is reported against the page's note.
 */
struct budget {
	int embeds;       /* embeds left */
	size_t bytes;     /* embedded bytes left */
	int refused;      /* embeds left out so far */
	int too_deep;     /* embeds cut at RENDER_MAX_EMBED_DEPTH so far */
	unsigned features; /* MD_HAS_* of the notes embedded so far */
};

static int over_budget(struct site *s, struct budget *b, const struct site_note *top,
		       const struct site_note *t, size_t bytes, int depth, int line,
		       struct buf *out)
{
	if (b->embeds > 0 && bytes <= b->bytes) {
		b->embeds--;
		b->bytes -= bytes;
		return 0;
	}
	/* a marker for each of the page's own embeds, one for all the nested ones */
	if (depth == 0 || !b->refused) {
		buf_adds(out, "<p class=\"embed-limit\">Not embedded: ");
		buf_adds_html(out, t->note.title);
		buf_adds(out, " (this page already embeds as much as one page may).</p>");
	}
	if (!b->refused)
		diag_addk(&s->diags, DIAG_EMBED, DIAG_WARNING, top->note.path, line,
			  "this page embeds more than max_embeds (%d) notes or max_embed_size "
			  "(%zu bytes) of them; %s and the embeds after it are left out",
			  s->cfg.max_embeds, s->cfg.max_embed_bytes, t->note.path);
	b->refused++;
	return 1;
}

/*
 * Appends n's HTML from start to end with its embeds spliced in (depth
 * levels already followed, chain the notes above it, line the line of the
 * first note's embed that led here), within budget. An embed cycle is
 * reported when the chain returns to its first note. At depth 0, pieces
 * gets where each run of n's own fragment went in out.
 */
/*
 * The embeds being expanded, outermost first: at each depth the note and
 * the offset in its fragment of the embed being expanded there.
 */
struct embed_path {
	const struct site_note *note[RENDER_MAX_EMBED_DEPTH + 1];
	size_t at[RENDER_MAX_EMBED_DEPTH + 1];
};

/* A note's tags for its page (struct page's tags): lowercased, one a line; NULL for none. */
static char *page_tags(const char *const *tags, size_t ntags)
{
	struct buf b = BUF_INIT;
	size_t k;

	for (k = 0; k < ntags; k++) {
		char *low = utf8_lower(tags[k], strlen(tags[k]));
		if (k)
			buf_addc(&b, '\n');
		buf_adds(&b, low);
		free(low);
	}
	return ntags ? buf_detach(&b, NULL) : NULL;
}

/*
 * Whether showing [ts, te) of t at this depth would show an embed being
 * expanded: a cycle. A note may show another section of itself (or of a
 * note embedding it): only a range holding the embed itself repeats.
 */
static int is_cycle(const struct embed_path *path, int depth, const struct site_note *t,
		    size_t ts, size_t te)
{
	int d;

	for (d = 0; d <= depth; d++)
		if (path->note[d] == t && path->at[d] >= ts && path->at[d] < te)
			return 1;
	return 0;
}

static void compose(struct site *s, const struct site_note *n, size_t start, size_t end,
		    struct buf *out, struct embed_path *path, int depth, int line,
		    struct pieces *pieces, struct budget *budget)
{
	const struct site_note **chain = path->note;
	const struct md_result *md = &n->md;
	size_t pos = start, k;

	chain[depth] = n;
	for (k = 0; k < md->nsplices; k++) {
		const struct md_splice *sp = &md->splices[k];
		const struct md_ref *ref = &md->refs[sp->ref];
		const struct site_ref *r = &n->refs[sp->ref];
		const struct site_note *t = r->target;
		size_t ts, te;
		char list;
		int missing;

		if (sp->offset < start || sp->offset >= end || r->kind != MD_TARGET_NOTE)
			continue;
		add_run(out, n, pos, sp->offset, pieces);
		pos = sp->offset;
		path->at[depth] = sp->offset;
		missing = embed_range(t, ref->fragment, &ts, &te, &list) < 0;
		if (!missing && is_cycle(path, depth, t, ts, te)) {
			buf_adds(out, "<p class=\"embed-cycle\">Embed cycle: ");
			buf_adds_html(out, t->note.title);
			buf_adds(out, " is already shown above.</p>");
			if (chain[0] == t && depth == 0)
				diag_addk(&s->diags, DIAG_EMBED, DIAG_WARNING, n->note.path, ref->line,
					  "embed cycle: the note embeds itself");
			else if (chain[0] == t)
				diag_addk(&s->diags, DIAG_EMBED, DIAG_WARNING, chain[0]->note.path,
					  line, "embed cycle: embedding %s leads back to this note",
					  chain[1]->note.path);
			continue;
		}
		if (depth + 1 >= RENDER_MAX_EMBED_DEPTH) {
			buf_adds(out, "<p class=\"embed-cycle\">Embeds nested too deeply.</p>");
			/*
			 * Said once per page, naming the note whose page it is: a
			 * chain of notes embedding each other deeper than the
			 * limit was cut with no word of it in `quire check`.
			 */
			if (!budget->too_deep++)
				diag_addk(&s->diags, DIAG_EMBED, DIAG_WARNING, chain[0]->note.path,
					  depth ? line : ref->line,
					  "embeds nested deeper than %d levels (through %s); the rest is "
					  "not shown",
					  RENDER_MAX_EMBED_DEPTH, t->note.path);
			continue;
		}
		if (missing) {
			buf_adds(out, "<p class=\"embed broken\">No section &ldquo;");
			buf_adds_html(out, ref->fragment);
			buf_adds(out, "&rdquo; in ");
			buf_adds_html(out, t->note.title);
			buf_adds(out, ".</p>");
			if (depth == 0)
				diag_addk(&s->diags, DIAG_EMBED, DIAG_WARNING, n->note.path, ref->line,
					  "embed of missing section '%s' in %s", ref->fragment,
					  t->note.path);
			continue;
		}
		if (over_budget(s, budget, chain[0], t, te - ts, depth, depth ? line : ref->line,
				out))
			continue;
		if (list)
			buf_adds(out, list == 'u' ? "<ul>\n" : "<ol>\n");
		budget->features |= t->md.features;
		compose(s, t, ts, te, out, path, depth + 1, depth ? line : ref->line, NULL, budget);
		if (list)
			buf_adds(out, list == 'u' ? "\n</ul>" : "\n</ol>");
	}
	add_run(out, n, pos, end, pieces);
}

/*
 * What links can call a note's anchors, so that asking whether it has one
 * is a lookup, not a pass over its headings per link (a note of n
 * headings and n links into itself would cost n squared): "i" and each
 * heading's id, "t" and its text in ASCII lower case (heading_in()'s
 * rule), "^" and each block id. Built once per target a page links into.
 */
struct anchors {
	const struct site_note *t;
	struct map names;
	char **keys;           /* owned, the map's keys */
	size_t nkeys, akeys;
};

/* Sets b to prefix and s, ASCII lower case when fold. */
static void anchor_key(struct buf *b, char prefix, const char *s, int fold)
{
	size_t i;

	buf_reset(b);
	buf_addc(b, prefix);
	for (i = 0; s[i]; i++)
		buf_addc(b, fold && s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
}

static int has_key(const struct anchors *a, struct buf *b, char prefix, const char *s, int fold)
{
	anchor_key(b, prefix, s, fold);
	return map_get(&a->names, b->ptr, b->len) != NULL;
}

static void anchor_add(struct anchors *a, struct buf *b, char prefix, const char *s, int fold)
{
	if (has_key(a, b, prefix, s, fold))
		return;
	ALLOC_GROW(a->keys, a->nkeys + 1, a->akeys);
	a->keys[a->nkeys] = xstrndup(b->ptr, b->len);
	map_put(&a->names, a->keys[a->nkeys++], b->len, a);
}

static struct anchors *anchors_of(struct map *cache, const struct site_note *t, struct buf *b)
{
	struct anchors *a = map_get(cache, (const char *)&t, sizeof(t));
	size_t k;

	if (a)
		return a;
	a = xcalloc(1, sizeof(*a));
	a->t = t;
	for (k = 0; k < t->md.nheadings; k++) {
		anchor_add(a, b, 'i', t->md.headings[k].id, 0);
		anchor_add(a, b, 't', t->md.headings[k].text, 1);
	}
	for (k = 0; k < t->md.nblocks; k++)
		anchor_add(a, b, '^', t->md.blocks[k].id, 0);
	map_put(cache, (const char *)&a->t, sizeof(a->t), a);
	return a;
}

/* Does the note a indexes have the heading, heading chain or block frag names? */
static int has_anchor(const struct anchors *a, const char *frag, struct buf *b)
{
	size_t end;
	char *id;
	int found;

	if (frag[0] == '^')
		return has_key(a, b, '^', frag + 1, 0);
	id = md_heading_id(frag);
	found = has_key(a, b, 'i', id, 0) || has_key(a, b, 't', frag, 1);
	free(id);
	/* "Part#Sub": the chain is walked; as costly as composing its link (add_chain_id()) */
	return found || (strchr(frag, '#') && chain_heading(&a->t->md, frag, a->t->frag.len, &end) >= 0);
}

/*
 * Reports n's links to a heading or block that their note does not have
 * ([[T#Nope]], [t](T.md#nope), [[T#^gone]], [[#Nope]]): each still goes
 * to the note. Made when n is composed, since it reads the targets'
 * headings; a target whose anchors change has its linkers composed again
 * (nanchored), so the report follows.
 */
static void check_anchors(struct site *s, const struct site_note *n)
{
	struct map cache = MAP_INIT; /* target -> struct anchors */
	struct buf b = BUF_INIT;
	size_t k, i = 0;
	void *v;

	for (k = 0; k < n->md.nrefs; k++) {
		const struct md_ref *ref = &n->md.refs[k];
		const struct site_note *t = n->refs[k].target;

		if (ref->kind != MD_REF_LINK || !ref->fragment || !ref->fragment[0] ||
		    n->refs[k].kind != MD_TARGET_NOTE ||
		    has_anchor(anchors_of(&cache, t, &b), ref->fragment, &b))
			continue;
		diag_addk(&s->diags, DIAG_EMBED, DIAG_WARNING, n->note.path, ref->line,
			  "link to missing %s '%s' in %s: it goes to the note",
			  ref->fragment[0] == '^' ? "block" : "heading", ref->fragment, t->note.path);
	}
	while (map_next(&cache, &i, NULL, NULL, &v)) {
		struct anchors *a = v;
		for (k = 0; k < a->nkeys; k++)
			free(a->keys[k]);
		free(a->keys);
		map_release(&a->names);
		free(a);
	}
	map_release(&cache);
	buf_release(&b);
}

void render_note_page(struct site *s, struct site_note *n)
{
	struct buf body = BUF_INIT, html = BUF_INIT;
	struct layout_note ln;
	struct layout_toc_entry *toc = NULL;
	struct layout_link *back = NULL;
	const char **tags = NULL;
	struct embed_path path;
	struct pieces pieces = { 0 };
	size_t k, ntoc = 0, ntags = 0, len, at;
	struct page *p;
	char *bytes, *folder = NULL;
	struct budget budget = { s->cfg.max_embeds, s->cfg.max_embed_bytes, 0, 0, 0 };

	diag_forget(&s->diags, n->note.path, DIAG_EMBED);
	/*
	 * Sized at once (the fragment, and the page it had): grown from
	 * nothing, a page's buffers were copied a dozen times over, and each
	 * copy faulted fresh memory in.
	 */
	buf_grow(&body, n->frag.len + 1024);
	buf_grow(&html, (n->page ? n->page->body_len : n->frag.len + 8192) + 1024);
	compose(s, n, 0, n->frag.len, &body, &path, 0, 0, &pieces, &budget);
	check_anchors(s, n);

	toc = xcalloc(n->md.nheadings + 1, sizeof(*toc));
	for (k = 0; k < n->md.nheadings; k++) {
		const struct md_heading *h = &n->md.headings[k];
		if (h->level < 2 || h->level > 4)
			continue;
		toc[ntoc].level = h->level;
		toc[ntoc].text = h->text;
		toc[ntoc].id = h->id;
		ntoc++;
	}
	back = xcalloc(n->nbacklinks + 1, sizeof(*back));
	for (k = 0; k < n->nbacklinks; k++) {
		back[k].title = n->backlinks[k]->note.title;
		back[k].url = n->backlinks[k]->href;
	}
	/* frontmatter tags, then inline tags not already there */
	tags = xcalloc(n->note.tags.n + n->md.ntags + 1, sizeof(*tags));
	for (k = 0; k < n->note.tags.n + n->md.ntags; k++) {
		const char *t = k < n->note.tags.n ? n->note.tags.v[k] : n->md.tags[k - n->note.tags.n];
		size_t j;
		int dup = 0;
		for (j = 0; j < ntags && !dup; j++)
			dup = strcasecmp(tags[j], t) == 0;
		if (!dup)
			tags[ntags++] = t;
	}

	memset(&ln, 0, sizeof(ln));
	ln.title = n->note.title;
	ln.description = n->note.description ? n->note.description : n->md.summary;
	ln.url = n->href;
	ln.created = n->note.created;
	ln.updated = n->note.updated;
	ln.tags = tags;
	ln.ntags = ntags;
	ln.cssclasses = (const char *const *)n->note.cssclasses.v;
	ln.ncssclasses = n->note.cssclasses.n;
	ln.body_html = body.ptr;
	ln.body_len = body.len;
	/* "# Title" opening a note whose title it is: the page heading says it already */
	ln.title_repeated = n->md.nheadings && n->md.headings[0].start == 0 &&
			    n->md.headings[0].level == 1 &&
			    strcasecmp(n->md.headings[0].text, n->note.title) == 0;
	ln.features = n->md.features | budget.features;
	ln.toc = toc;
	ln.ntoc = ntoc;
	ln.backlinks = back;
	ln.nbacklinks = n->nbacklinks;
	{
		const char *slash = strrchr(n->note.path, '/');
		folder = xstrndup(n->note.path, slash ? (size_t)(slash - n->note.path) : 0);
		ln.folder = folder;
	}
	at = layout_note_page(&s->layout, &ln, &html);
	for (k = 0; k < pieces.n; k++)
		pieces.v[k].at += at;

	p = page_new(PAGE_NOTE, n->url, strlen(n->url));
	p->mtime = n->note.mtime;
	p->tags = page_tags(tags, ntags);
	buf_fit(&html); /* the page keeps these bytes: no growth slack */
	bytes = buf_detach(&html, &len);
	if (s->gzip_later)
		page_set_body_later(p, bytes, len, GZIP_LEVEL); /* site_gzip_pending() */
	else if (page_set_body(p, bytes, len, GZIP_LEVEL) < 0)
		diag_addk(&s->diags, DIAG_EMBED, DIAG_ERROR, n->note.path, 0,
			  "could not compress the page");
	page_unref(n->page);
	n->page = p;
	free(n->frag.next);
	n->frag.next = pieces.v;
	n->frag.nnext = pieces.n;

	free(toc);
	free(back);
	free(tags);
	free(folder);
	buf_release(&body);
}
