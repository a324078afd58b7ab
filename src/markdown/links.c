/*
 * links.c: stage 4 of md_render(), the references: wikilinks, embeds, and
 * Markdown links and images.
 *
 * Each reference is handed to md_result.refs and resolved through the
 * caller's md_resolve_fn when the writer meets it, so refs come out in
 * document order with the source line they stand on. What the caller says
 * it points at decides the markup: a link to a note (with "#heading-id" or
 * "#^block"), an attachment, plain text for an unpublished note, a broken
 * mark. An embed of a note leaves a splice for the composer; an embed of an
 * attachment becomes <img>, <audio>, <video>, a PDF <iframe> or a link. A
 * Markdown link or image whose URL is a relative path with an extension
 * resolves the same way; any other URL is written only if sanitize_url()
 * allows it.
 */
#define _GNU_SOURCE /* memmem */
#include "markdown/markdown.h"
#include "markdown/markdown-int.h"
#include "markdown/sanitize.h"
#include "util/map.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- link addresses ---- */

/*
 * May the URL of a Markdown link or image be written (sanitize_url())? It
 * is judged with its placeholders turned back, as add_href_raw() writes it.
 */
static int url_ok(struct ctx *c, const char *s, enum sanitize_url_kind kind)
{
	size_t len = strlen(s);

	if (!pre_has_placeholder(&c->pre, s, len))
		return sanitize_url(s, len, kind);
	buf_reset(&c->tmp);
	md_pre_expand(&c->pre, &c->tmp, s, len, PH_URL);
	return sanitize_url(c->tmp.ptr, c->tmp.len, kind);
}

static void add_href_raw(struct ctx *c, const char *s, size_t len)
{
	if (pre_has_placeholder(&c->pre, s, len)) {
		struct buf t = BUF_INIT;

		md_pre_expand(&c->pre, &t, s, len, PH_URL);
		md_add_href(c->out, t.ptr, t.len);
		buf_release(&t);
		return;
	}
	md_add_href(c->out, s, len);
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

/* A slot at the end of o for reference ref (maybe | MD_SLOT_FRAGMENT): markdown.h. */
static void add_slot(struct ctx *c, const struct buf *o, size_t ref)
{
	struct md_result *res = c->res;

	ALLOC_GROW(res->slots, res->nslots + 1, c->aslots);
	res->slots[res->nslots].offset = o->len;
	res->slots[res->nslots].ref = ref;
	res->nslots++;
}

/*
 * The URL of a resolved link or embed: written, or with url_slots left
 * out and recorded where it goes (markdown.h).
 */
static void add_url(struct ctx *c, struct buf *o, const struct link *l)
{
	if (c->opt->url_slots)
		add_slot(c, o, l->ref);
	else
		buf_adds_html(o, l->url);
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
 * A resolved note link's fragment. A heading chain ("Part#Sub") names one
 * heading among those of its last name ("sub", "sub-1"...), which only the
 * target's headings tell: with url_slots it is a slot too
 * (MD_SLOT_FRAGMENT), written when the page is composed; otherwise the
 * last name's id.
 */
static void add_note_fragment(struct ctx *c, struct buf *o, const struct link *l)
{
	if (c->opt->url_slots && l->fragment && l->fragment[0] != '^' && strchr(l->fragment, '#'))
		add_slot(c, o, l->ref | MD_SLOT_FRAGMENT);
	else
		add_fragment(o, l->fragment);
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

/*
 * Could a Markdown link's URL name a file of the vault, as Obsidian reads
 * it: no scheme, not a fragment of this page, not "//host"? Obsidian
 * resolves "Three%20laws", "../Other.md#^id" and "/Folder/Note.md" (from
 * the vault's root) like wikilinks. Those that match nothing and do not
 * look like a file (local_url()) may be meant for the web: left as
 * written, without a warning.
 */
static int vault_url(const char *u)
{
	size_t n = strcspn(u, "?#"), i;

	if (!n || u[0] == '#' || (u[0] == '/' && u[1] == '/') || u[0] == '?')
		return 0;
	for (i = 0; i < n && u[i] != '/'; i++)
		if (u[i] == ':')
			return 0;
	return memchr(u, '\\', n) == NULL;
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
	return md_detach_exact(&b);
}

/* Registers a local link or image as a reference and resolves it; returns its link. */
static struct link *local_link(struct ctx *c, const char *u, int embed, int quiet)
{
	size_t ix, n = strcspn(u, "?#");
	struct link *l = md_new_link(c, &ix);
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
	l->markdown = quiet ? 2 : 1;
	return resolve(c, ix);
}

void md_link_open(struct ctx *c, size_t ix)
{
	struct link *l = resolve(c, ix);
	struct buf *o = c->out;

	switch (l->kind) {
	case MD_TARGET_NOTE:
		buf_adds(o, "<a class=\"internal\" href=\"");
		add_url(c, o, l);
		add_note_fragment(c, o, l);
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
		add_url(c, o, l);
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

void md_link_close(struct ctx *c, size_t ix)
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
		add_url(c, o, l);
		buf_adds(o, "\" alt=\"");
		buf_add_html(o, alt, altlen);
		buf_addc(o, '"');
		if (w)
			buf_addf(o, " width=\"%lu\"", w);
		if (h)
			buf_addf(o, " height=\"%lu\"", h);
		buf_adds(o, " />");
	} else if (ext_is(ext, "mp3 wav ogg oga m4a flac aac opus")) {
		buf_adds(o, "<audio controls preload=\"metadata\" src=\"");
		add_url(c, o, l);
		buf_adds(o, "\"></audio>");
	} else if (ext_is(ext, "mp4 webm mov ogv mkv m4v")) {
		buf_adds(o, "<video controls preload=\"metadata\" src=\"");
		add_url(c, o, l);
		buf_adds(o, "\"></video>");
	} else if (!strcmp(ext, "pdf")) {
		buf_adds(o, "<iframe class=\"pdf\" src=\"");
		add_url(c, o, l);
		if (l->fragment && *l->fragment) {
			buf_addc(o, '#');
			buf_adds_html(o, l->fragment);
		}
		buf_adds(o, "\"></iframe>");
	} else {
		buf_adds(o, "<a class=\"internal attachment\" href=\"");
		add_url(c, o, l);
		buf_adds(o, "\">");
		buf_adds_html(o, l->label ? l->label : l->target);
		buf_adds(o, "</a>");
	}
}

void render_embed(struct ctx *c, size_t ix)
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
		if (c->in_para) {
			/*
			 * A note's embed is blocks: the paragraph it stands in is
			 * closed before it and opened again after it (an empty
			 * one before it is dropped, unless it carries a ^block id).
			 */
			static const char br[] = "<br />\n";
			/* the line break before it ends the paragraph anyway */
			if (o->len >= c->para_at + sizeof(br) - 1 &&
			    memcmp(o->ptr + o->len - (sizeof(br) - 1), br, sizeof(br) - 1) == 0)
				buf_setlen(o, o->len - (sizeof(br) - 1));
			else if (o->len > c->para_at && o->ptr[o->len - 1] == '\n')
				buf_setlen(o, o->len - 1);
			if (o->len == c->para_at && !c->para_id)
				buf_setlen(o, c->para_tag);
			else
				buf_adds(o, "</p>\n");
		}
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
		if (c->in_para) {
			size_t at;
			buf_addc(o, '\n');
			at = o->len;
			buf_adds(o, "<p>");
			md_para_begin(c, at, 1);
		}
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

/* ---- Markdown links and images ---- */

void render_link(struct ctx *c, cmark_node *n, int entering)
{
	struct buf *o = c->out;
	const char *s;

	if (!entering) {
		buf_adds(o, has_flag(n, A_PLAIN) ? "</span>" : "</a>");
		return;
	}
	s = cmark_node_get_url(n);
	if (s && vault_url(s)) {
		int file = local_url(s);
		struct link *l = local_link(c, s, 0, !file);
		struct ann *la = md_ann_get(c, n);
		if (l->kind == MD_TARGET_PLAIN) {
			la->flags |= A_PLAIN;
			buf_adds(o, "<span class=\"internal\">");
			return;
		}
		if (l->kind == MD_TARGET_BROKEN && file) {
			/* not in the vault: perhaps meant for the web, keep it as written */
			buf_adds(o, "<a href=\"");
			add_href_raw(c, s, strlen(s));
			buf_adds(o, "\">");
			return;
		}
		if (l->kind != MD_TARGET_BROKEN) {
			buf_adds(o, l->kind == MD_TARGET_NOTE ? "<a class=\"internal\" href=\""
							     : "<a class=\"internal attachment\" href=\"");
			add_url(c, o, l);
			if (l->kind == MD_TARGET_NOTE)
				add_note_fragment(c, o, l);
			buf_adds(o, "\">");
			return;
		}
		/* a path that names nothing here and no file: a web link, below */
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
		md_add_html_exp(c, o, s, strlen(s), PH_URL);
		buf_addc(o, '"');
	}
	buf_addc(o, '>');
}

/* A size in an image's alt text: "250" or "250x100", alone or after a '|'. */
static int size_at(const char *s, size_t len, size_t *w, size_t *h)
{
	size_t i = 0, n;

	*w = *h = 0;
	for (n = 0; i < len && is_digit(s[i]) && n < 5; i++, n++)
		*w = *w * 10 + (size_t)(s[i] - '0');
	if (!n || !*w)
		return 0;
	if (i < len && s[i] == 'x') {
		for (i++, n = 0; i < len && is_digit(s[i]) && n < 5; i++, n++)
			*h = *h * 10 + (size_t)(s[i] - '0');
		if (!n || !*h)
			return 0;
	}
	return i == len;
}

/*
 * Obsidian's image sizes in a Markdown image's alt text (as written, HTML
 * escaped: digits, 'x' and '|' are kept): "![250](u)", "![alt|250x100](u)".
 * Sets where the alt text ends without it.
 */
static int image_size(const char *alt, size_t len, size_t *cut, size_t *w, size_t *h)
{
	size_t bar = len, num;

	while (bar > 0 && alt[bar - 1] != '|')
		bar--;
	if (bar > 0) { /* alt[bar - 1] is the last '|' */
		for (num = bar; num < len && alt[num] == ' '; num++)
			;
		if (size_at(alt + num, len - num, w, h)) {
			*cut = bar - 1;
			while (*cut && alt[*cut - 1] == ' ')
				(*cut)--;
			return 1;
		}
	}
	if (size_at(alt, len, w, h)) {
		*cut = 0;
		return 1;
	}
	return 0;
}

/* Entering writes up to the alt text, which html.c writes (c->plain); leaving closes. */
void render_image(struct ctx *c, cmark_node *n, int entering)
{
	struct buf *o = c->out;
	const char *s;

	if (entering) {
		s = cmark_node_get_url(n);
		if (s && !vault_url(s) && !url_ok(c, s, SANITIZE_URL_IMAGE)) {
			/* an unsafe URL: the image keeps its alt text, not its src */
			buf_adds(o, "<img alt=\"");
			c->plain = n;
			return;
		}
		buf_adds(o, "<img src=\"");
		if (s && vault_url(s)) {
			struct link *l = local_link(c, s, 1, !local_url(s));
			if (l->kind == MD_TARGET_ATTACHMENT || l->kind == MD_TARGET_NOTE)
				add_url(c, o, l);
			else /* broken or private: the src as written, so nothing leaks */
				add_href_raw(c, s, l->kind == MD_TARGET_PLAIN ? 0 : strlen(s));
		} else {
			add_href_raw(c, s ? s : "", s ? strlen(s) : 0);
		}
		buf_adds(o, "\" alt=\"");
		c->plain = n;
		c->alt_from = o->len;
		return;
	}
	{
		size_t cut, w, h;

		if (image_size(o->ptr + c->alt_from, o->len - c->alt_from, &cut, &w, &h)) {
			buf_setlen(o, c->alt_from + cut);
			buf_addf(o, "\" width=\"%zu", w);
			if (h)
				buf_addf(o, "\" height=\"%zu", h);
		}
	}
	s = cmark_node_get_title(n);
	if (s && *s) {
		buf_adds(o, "\" title=\"");
		md_add_html_exp(c, o, s, strlen(s), PH_URL);
	}
	buf_adds(o, "\" />");
}

/* ---- links in diagrams ---- */

/* At most this many linked nodes a diagram: a bound on the work of a hostile note. */
#define DIAGRAM_LINKS_MAX 256
/* A node's text is looked for this far past its opening bracket, on its line. */
#define DIAGRAM_LABEL_MAX 512

static const char diagram_list_open[] = "\n<div class=\"diagram-links\" hidden>";
static const char internal_link[] = "internal-link";

static int ident_char(char ch)
{
	return is_alpha(ch) || is_digit(ch) || ch == '_' || (unsigned char)ch >= 0x80;
}

/* A node of the diagram: the text of its last shape (in the source), and whether it links. */
struct diagram_node {
	const char *id, *label; /* in the source; label NULL: the id is its text */
	size_t idlen, len;
	int linked;
};

struct diagram {
	struct map ids;             /* id (in the source) -> index + 1 in v */
	struct diagram_node *v;
	size_t n, alloc;
	size_t linked[DIAGRAM_LINKS_MAX]; /* indexes in v, in the order they were linked */
	size_t nlinked;
};

static struct diagram_node *node_of(struct diagram *d, const char *id, size_t len)
{
	uintptr_t at = (uintptr_t)map_get(&d->ids, id, len);

	if (!at) {
		ALLOC_GROW(d->v, d->n + 1, d->alloc);
		memset(&d->v[d->n], 0, sizeof(*d->v));
		d->v[d->n].id = id;
		d->v[d->n].idlen = len;
		at = ++d->n;
		map_put(&d->ids, id, len, (void *)at);
	}
	return &d->v[at - 1];
}

static void mark_linked(struct diagram *d, const char *id, size_t len)
{
	struct diagram_node *nd = node_of(d, id, len);

	if (nd->linked || d->nlinked == DIAGRAM_LINKS_MAX)
		return;
	nd->linked = 1;
	d->linked[d->nlinked++] = (size_t)(nd - d->v);
}

/*
 * The shape opening at s[0] ("[Biology]", "((Cell))", "[("DB")]",
 * "{{"Is it?"}}", "[/Slanted/]", ">Flag]"): its text in s[*from, *from + *n)
 * (quotes taken off); returns the shape's length, or 0 when s[0] opens no
 * shape or its closer, the openers mirrored (")]" for "[("), is not on the
 * line within DIAGRAM_LABEL_MAX bytes: a line of openers stays linear.
 */
static size_t shape_at(const char *s, size_t len, size_t *from, size_t *n)
{
	size_t lim = len < DIAGRAM_LABEL_MAX ? len : DIAGRAM_LABEL_MAX, o = 0, i, a, b, k;
	char close[3];

	if (lim && s[0] == '>')
		close[o++] = ']';
	else
		while (o < 3 && o < lim && (s[o] == '[' || s[o] == '(' || s[o] == '{')) {
			close[o] = s[o] == '[' ? ']' : s[o] == '(' ? ')' : '}';
			o++;
		}
	if (!o)
		return 0;
	i = o + (o < lim && (s[o] == '/' || s[o] == '\\'));
	if (i < lim && s[i] == '"') {
		const char *q = memchr(s + i + 1, '"', lim - i - 1);
		if (!q)
			return 0;
		a = i + 1;
		b = (size_t)(q - s);
		i = b + 1 + (b + 1 < lim && (s[b + 1] == '/' || s[b + 1] == '\\'));
		for (k = 0; k < o; k++, i++)
			if (i >= lim || s[i] != close[o - 1 - k])
				return 0;
		*from = a;
		*n = b - a;
		return i;
	}
	for (b = i; b < lim && s[b] != '\n'; b++) {
		size_t e = b;
		for (k = 0; k < o && e < lim && s[e] == close[o - 1 - k]; k++, e++)
			;
		if (k == o) {
			*from = i;
			*n = b - i - (b > i && (s[b - 1] == '/' || s[b - 1] == '\\'));
			return e;
		}
	}
	return 0;
}

/* "@{ shape: rect, label: "Text" }": the label's text; returns the length of the braces, or 0. */
static size_t attrs_label(const char *s, size_t len, size_t *from, size_t *n)
{
	size_t lim = len < DIAGRAM_LABEL_MAX ? len : DIAGRAM_LABEL_MAX, i, end;
	const char *close, *at;

	*n = 0;
	if (lim < 3 || s[0] != '@' || s[1] != '{')
		return 0;
	close = memchr(s, '}', lim);
	if (!close || memchr(s, '\n', (size_t)(close - s)))
		return 0;
	end = (size_t)(close - s) + 1;
	at = memmem(s, end, "label:", 6);
	if (!at)
		return end;
	for (i = (size_t)(at - s) + 6; i < end && is_space(s[i]); i++)
		;
	if (i < end && s[i] == '"') {
		const char *q = memchr(s + i + 1, '"', end - i - 1);
		if (q) {
			*from = i + 1;
			*n = (size_t)(q - s) - i - 1;
		}
		return end;
	}
	*from = i;
	for (*n = 0; i + *n < end - 1 && s[i + *n] != ','; (*n)++)
		;
	return end;
}

/* A "class a,b internal-link" line (from its word "class" on): links a and b. */
static void class_line(struct diagram *d, const char *s, size_t len)
{
	size_t i = 5, j, k;

	while (len > i && (is_space(s[len - 1]) || s[len - 1] == ';'))
		len--;
	if (len < i + sizeof(internal_link) ||
	    memcmp(s + len - (sizeof(internal_link) - 1), internal_link, sizeof(internal_link) - 1) ||
	    !is_space(s[len - sizeof(internal_link)]))
		return;
	len -= sizeof(internal_link) - 1;
	for (j = i; j < len;) {
		while (j < len && (is_space(s[j]) || s[j] == ','))
			j++;
		for (k = j; k < len && !is_space(s[k]) && s[k] != ','; k++)
			;
		if (k > j)
			mark_linked(d, s + j, k - j);
		j = k;
	}
}

/*
 * One pass over the source: each node id with the text of its shape, and
 * the nodes linked by a class line or ":::internal-link". Strings, edge
 * labels ("|text|"), comments ("%%") and a shape's own text are stepped
 * over, so a word inside them is no node.
 */
static void diagram_read(struct diagram *d, const char *s, size_t len)
{
	size_t i = 0, line = 0, from, n, w;

	while (i < len) {
		char ch = s[i];
		if (ch == '\n') {
			line = ++i;
		} else if (ch == '%' && i + 1 < len && s[i + 1] == '%') {
			const char *nl = memchr(s + i, '\n', len - i);
			i = nl ? (size_t)(nl - s) : len;
		} else if (ch == '"' || ch == '|') {
			const char *q = memchr(s + i + 1, ch, len - i - 1);
			const char *nl = memchr(s + i + 1, '\n', len - i - 1);
			i = q && (!nl || q < nl) ? (size_t)(q - s) + 1 : i + 1;
		} else if (!ident_char(ch) || (i && ident_char(s[i - 1]))) {
			i++;
		} else {
			size_t id = i, idlen, k;
			const char *nl;
			struct diagram_node *nd;
			while (i < len && ident_char(s[i]))
				i++;
			idlen = i - id;
			for (k = line; k < id && is_space(s[k]); k++)
				;
			if (k == id && i - id == 5 && !memcmp(s + id, "class", 5) && i < len &&
			    is_space(s[i])) {
				nl = memchr(s + id, '\n', len - id);
				w = nl ? (size_t)(nl - s) : len;
				class_line(d, s + id, w - id);
				i = w;
				continue;
			}
			nd = node_of(d, s + id, idlen);
			if ((w = shape_at(s + i, len - i, &from, &n)) ||
			    (w = attrs_label(s + i, len - i, &from, &n))) {
				if (n) {
					nd->label = s + i + from;
					nd->len = n;
				}
				i += w;
			}
			/* "A:::internal-link", "A[Text]:::internal-link" */
			k = 3 + sizeof(internal_link) - 1;
			if (len - i >= k && !memcmp(s + i, ":::", 3) &&
			    !memcmp(s + i + 3, internal_link, k - 3) &&
			    (i + k == len || !ident_char(s[i + k]))) {
				mark_linked(d, s + id, idlen);
				i += k;
			}
		}
	}
}

/* A link to the note called name, at most once a diagram (seen owns its keys). */
static void diagram_link(struct ctx *c, struct buf *o, const char *name, struct map *seen)
{
	struct link *l;
	size_t ix;
	char *key;

	if (!*name || map_gets(seen, name))
		return;
	key = xstrdup(name);
	map_put(seen, key, strlen(key), key);
	l = md_new_link(c, &ix);
	l->target = xstrdup(name);
	l->markdown = 3; /* a diagram's: to a note or nothing, and a miss is said nowhere */
	l = resolve(c, ix);
	if (l->kind != MD_TARGET_NOTE)
		return;
	buf_adds(o, "<a class=\"internal\" href=\"");
	add_url(c, o, l);
	buf_adds(o, "\" data-node=\"");
	buf_adds_html(o, name);
	buf_adds(o, "\">");
	buf_adds_html(o, name);
	buf_adds(o, "</a>");
}

void render_diagram_links(struct ctx *c, const char *s, size_t len)
{
	struct diagram d;
	struct map seen = MAP_INIT;
	struct buf *o = c->out, name = BUF_INIT;
	size_t start = o->len, i;
	void *value;

	if (!c->opt->resolve || !memmem(s, len, internal_link, sizeof(internal_link) - 1))
		return;
	memset(&d, 0, sizeof(d));
	diagram_read(&d, s, len);
	buf_adds(o, diagram_list_open);
	for (i = 0; i < d.nlinked; i++) {
		const struct diagram_node *nd = &d.v[d.linked[i]];
		const char *t = nd->label;
		size_t n = nd->len;
		buf_reset(&name);
		if (t) {
			trim(&t, &n);
			buf_add(&name, t, n);
		}
		if (!name.len)
			buf_add(&name, nd->id, nd->idlen);
		diagram_link(c, o, name.ptr ? name.ptr : "", &seen);
	}
	if (o->len == start + sizeof(diagram_list_open) - 1)
		buf_setlen(o, start);
	else
		buf_adds(o, "</div>");
	buf_release(&name);
	for (i = 0; map_next(&seen, &i, NULL, NULL, &value);)
		free(value);
	map_release(&seen);
	map_release(&d.ids);
	free(d.v);
}
