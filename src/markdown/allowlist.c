/*
 * allowlist.c: the allow-lists of sanitize.c, and the checks of the values
 * its attributes may have.
 *
 * Elements have a policy each (tag_policy, indexed by gumbo's tag number):
 * kept, kept without an end tag, kept only as an https: <iframe>, dropped
 * with their content, or unwrapped (the default, for anything not named).
 * Attributes are allowed per element (attr_rules), each with the check its
 * value must pass: a link or image URL, judged by its scheme as a browser
 * reads it; srcset candidates; an https: URL; a style without anything that
 * fetches or runs. The tables are data so that a review reads them whole.
 */
#include "markdown/allowlist.h"

#include <string.h>

int md_contains_ci(const char *s, size_t len, const char *needle)
{
	size_t n = strlen(needle), i, k;

	for (i = 0; i + n <= len; i++) {
		for (k = 0; k < n && lower(s[i + k]) == needle[k]; k++)
			;
		if (k == n)
			return 1;
	}
	return 0;
}

/* ---- URLs ---- */

/*
 * The scheme of url as a browser finds it, in lower case: leading C0
 * controls and spaces skipped, tabs and newlines anywhere removed, the part
 * before the first ':' when no '/', '?' or '#' comes first. Returns the
 * scheme's length (at most cap - 1, NUL-terminated in scheme) with *rest at
 * the byte after the ':', 0 for a relative URL, -1 when there is a ':' but
 * no scheme we could name before it (empty, too long, or characters a
 * scheme cannot hold: a browser would read a relative path, we refuse).
 */
static int url_scheme(const char *url, size_t len, char *scheme, size_t cap, size_t *rest)
{
	size_t i = 0, n = 0;
	int valid = 1;

	while (i < len && (unsigned char)url[i] <= 0x20)
		i++;
	for (; i < len; i++) {
		char c = url[i];

		if (c == '\t' || c == '\n' || c == '\r')
			continue;
		if (c == ':')
			break;
		if (c == '/' || c == '?' || c == '#')
			return 0;
		/* ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) */
		if (!is_alpha(c) &&
		    (!n || !((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.')))
			valid = 0;
		if (n + 1 < cap)
			scheme[n] = lower(c);
		n++;
	}
	if (i == len)
		return 0;
	if (!valid || !n || n + 1 > cap)
		return -1;
	scheme[n] = '\0';
	*rest = i + 1;
	return (int)n;
}

/*
 * After "data:": one of the raster image types, then ';' (base64), ',' or
 * nothing (a srcset run cut at the comma; without one the URL is invalid).
 */
static int data_image(const char *s, size_t len)
{
	static const char *const types[] = { "image/png", "image/gif", "image/jpeg", "image/webp",
					     "image/avif" };
	char head[16];
	size_t i, n = 0, t;

	for (i = 0; i < len && n < sizeof(head); i++)
		if (s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			head[n++] = lower(s[i]);
	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		size_t k = strlen(types[t]);

		if (n >= k && !memcmp(head, types[t], k) &&
		    (n == k || head[k] == ';' || head[k] == ','))
			return 1;
	}
	return 0;
}

int allowlist_url(const char *url, size_t len, int image)
{
	char scheme[16];
	size_t rest = 0;
	int n = url_scheme(url, len, scheme, sizeof(scheme), &rest);

	if (n == 0)
		return 1;
	if (n < 0)
		return 0;
	if (!strcmp(scheme, "http") || !strcmp(scheme, "https") || !strcmp(scheme, "mailto"))
		return 1;
	return image && !strcmp(scheme, "data") &&
	       data_image(url + rest, len - rest);
}

static int https_url(const char *url, size_t len)
{
	char scheme[16];
	size_t rest = 0;

	return url_scheme(url, len, scheme, sizeof(scheme), &rest) > 0 && !strcmp(scheme, "https");
}

/*
 * srcset: every run between spaces and commas must pass as an image URL,
 * or the attribute goes. The standard splits candidates at spaces and
 * keeps commas inside a URL (a data: URL has one); older parsers split at
 * every comma; checking every run covers both readings. Descriptors ("2x",
 * "100w") pass as relative URLs.
 */
static int srcset_ok(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t start;

		while (i < len && (is_ws(s[i]) || s[i] == ','))
			i++;
		start = i;
		while (i < len && !is_ws(s[i]) && s[i] != ',')
			i++;
		if (i > start && !allowlist_url(s + start, i - start, 1))
			return 0;
	}
	return 1;
}

/*
 * A style attribute is kept whole or dropped whole. Dropped when it holds
 * a backslash or a comment (either could split a keyword below so that no
 * search finds it), an at-rule, a '<', or anything that fetches or runs:
 * url(), image-set(), image(), cross-fade(), element(), src(), IE's
 * expression() and behavior, Firefox's -moz-binding, script schemes.
 * Colours, sizes, fonts, borders and layout stay.
 */
static int style_ok(const char *s, size_t len)
{
	static const char *const banned[] = {
		"\\",         "/*",       "@",          "<",        "expression", "url(",
		"image(",     "image-set(", "cross-fade(", "element(", "src(",       "behavior",
		"-moz-binding", "javascript:", "vbscript:",
	};
	size_t i;

	for (i = 0; i < sizeof(banned) / sizeof(banned[0]); i++)
		if (md_contains_ci(s, len, banned[i]))
			return 0;
	return 1;
}

/* ---- the allow-lists ---- */

/*
 * gumbo 0.10.1 predates <picture>: it parses it as an unknown element, so
 * this module knows it by name and gives it the number after gumbo's tags.
 */
#define TAG_PICTURE ((int)GUMBO_TAG_LAST)
#define TAG_COUNT (TAG_PICTURE + 1)

#define T(tag) [GUMBO_TAG_##tag]
static const unsigned char tag_policy[TAG_COUNT] = {
	/* text-level */
	T(A) = KEEP, T(ABBR) = KEEP, T(B) = KEEP, T(BDI) = KEEP, T(BDO) = KEEP, T(BIG) = KEEP,
	T(BR) = VOID, T(CITE) = KEEP, T(CODE) = KEEP, T(DEL) = KEEP, T(DFN) = KEEP, T(EM) = KEEP,
	T(FONT) = KEEP, T(I) = KEEP, T(INS) = KEEP, T(KBD) = KEEP, T(MARK) = KEEP, T(Q) = KEEP,
	T(RP) = KEEP, T(RT) = KEEP, T(RUBY) = KEEP, T(S) = KEEP, T(SAMP) = KEEP, T(SMALL) = KEEP,
	T(SPAN) = KEEP, T(STRIKE) = KEEP, T(STRONG) = KEEP, T(SUB) = KEEP, T(SUP) = KEEP,
	T(TIME) = KEEP, T(TT) = KEEP, T(U) = KEEP, T(VAR) = KEEP, T(WBR) = VOID,
	/* blocks */
	T(ADDRESS) = KEEP, T(ARTICLE) = KEEP, T(ASIDE) = KEEP, T(BLOCKQUOTE) = KEEP,
	T(CENTER) = KEEP, T(DD) = KEEP, T(DETAILS) = KEEP, T(DIV) = KEEP, T(DL) = KEEP,
	T(DT) = KEEP, T(FIGCAPTION) = KEEP, T(FIGURE) = KEEP, T(FOOTER) = KEEP, T(H1) = KEEP,
	T(H2) = KEEP, T(H3) = KEEP, T(H4) = KEEP, T(H5) = KEEP, T(H6) = KEEP, T(HEADER) = KEEP,
	T(HR) = VOID, T(LI) = KEEP, T(NAV) = KEEP, T(OL) = KEEP, T(P) = KEEP, T(PRE) = KEEP,
	T(SECTION) = KEEP, T(SUMMARY) = KEEP, T(UL) = KEEP,
	/* tables */
	T(CAPTION) = KEEP, T(COL) = VOID, T(COLGROUP) = KEEP, T(TABLE) = KEEP, T(TBODY) = KEEP,
	T(TD) = KEEP, T(TFOOT) = KEEP, T(TH) = KEEP, T(THEAD) = KEEP, T(TR) = KEEP,
	/* media; gumbo reads <image> as <img> */
	T(AUDIO) = KEEP, T(IFRAME) = FRAME, T(IMAGE) = VOID, T(IMG) = VOID, [TAG_PICTURE] = KEEP,
	T(SOURCE) = VOID, T(TRACK) = VOID, T(VIDEO) = KEEP,
	/*
	 * Dropped with their content: they run code, load or submit things,
	 * change the page around the note, or are read differently by the
	 * parser than their content suggests (svg and math: foreign content;
	 * noscript: raw text to browsers with scripts on, markup to gumbo).
	 */
	T(APPLET) = DROP, T(BASE) = DROP, T(BASEFONT) = DROP, T(BGSOUND) = DROP,
	T(BUTTON) = DROP, T(DATALIST) = DROP, T(EMBED) = DROP, T(FORM) = DROP, T(FRAME) = DROP,
	T(FRAMESET) = DROP, T(HEAD) = DROP, T(INPUT) = DROP, T(ISINDEX) = DROP, T(KEYGEN) = DROP,
	T(LINK) = DROP, T(MATH) = DROP, T(META) = DROP, T(NOEMBED) = DROP, T(NOFRAMES) = DROP,
	T(NOSCRIPT) = DROP, T(OBJECT) = DROP, T(OPTGROUP) = DROP, T(OPTION) = DROP,
	T(PARAM) = DROP, T(SCRIPT) = DROP, T(SELECT) = DROP, T(STYLE) = DROP, T(SVG) = DROP,
	T(TEMPLATE) = DROP, T(TEXTAREA) = DROP, T(TITLE) = DROP,
};
#undef T

#define ANY 0xffff

/*
 * Attributes per element (ANY: every allowed element), space-separated.
 * Everything else goes: every on* handler, srcdoc, formaction, name (it
 * clobbers document properties that scripts read), data-* (quire.js reads
 * its own), iframe's allow (it would hand camera, microphone or location
 * prompts to the framed site in our name).
 */
static const struct attr_rule attr_rules[] = {
	{ ANY, C_TEXT, "class id title lang dir align" },
	{ ANY, C_STYLE, "style" },
	{ GUMBO_TAG_A, C_LINK, "href" },
	{ GUMBO_TAG_A, C_REL, "rel" },
	{ GUMBO_TAG_A, C_TEXT, "target hreflang" },
	{ GUMBO_TAG_IMG, C_IMAGE, "src" },
	{ GUMBO_TAG_IMG, C_SRCSET, "srcset" },
	{ GUMBO_TAG_IMG, C_TEXT, "alt width height sizes loading" },
	{ GUMBO_TAG_VIDEO, C_LINK, "src" },
	{ GUMBO_TAG_VIDEO, C_IMAGE, "poster" },
	{ GUMBO_TAG_VIDEO, C_TEXT,
	  "controls loop muted autoplay playsinline preload width height" },
	{ GUMBO_TAG_AUDIO, C_LINK, "src" },
	{ GUMBO_TAG_AUDIO, C_TEXT, "controls loop muted autoplay preload" },
	{ GUMBO_TAG_SOURCE, C_LINK, "src" },
	{ GUMBO_TAG_SOURCE, C_SRCSET, "srcset" },
	{ GUMBO_TAG_SOURCE, C_TEXT, "type media sizes width height" },
	{ GUMBO_TAG_TRACK, C_LINK, "src" },
	{ GUMBO_TAG_TRACK, C_TEXT, "kind label srclang default" },
	{ GUMBO_TAG_IFRAME, C_HTTPS, "src" },
	{ GUMBO_TAG_IFRAME, C_TEXT,
	  "width height allowfullscreen frameborder loading referrerpolicy" },
	{ GUMBO_TAG_OL, C_TEXT, "start type reversed" },
	{ GUMBO_TAG_UL, C_TEXT, "type" },
	{ GUMBO_TAG_LI, C_TEXT, "value type" },
	{ GUMBO_TAG_DETAILS, C_TEXT, "open" },
	{ GUMBO_TAG_TIME, C_TEXT, "datetime" },
	{ GUMBO_TAG_DEL, C_TEXT, "datetime" },
	{ GUMBO_TAG_DEL, C_LINK, "cite" },
	{ GUMBO_TAG_INS, C_TEXT, "datetime" },
	{ GUMBO_TAG_INS, C_LINK, "cite" },
	{ GUMBO_TAG_BLOCKQUOTE, C_LINK, "cite" },
	{ GUMBO_TAG_Q, C_LINK, "cite" },
	{ GUMBO_TAG_TABLE, C_TEXT, "border cellpadding cellspacing width" },
	{ GUMBO_TAG_COL, C_TEXT, "span width" },
	{ GUMBO_TAG_COLGROUP, C_TEXT, "span width" },
	{ GUMBO_TAG_TR, C_TEXT, "valign" },
	{ GUMBO_TAG_TD, C_TEXT, "colspan rowspan headers width height valign" },
	{ GUMBO_TAG_TH, C_TEXT, "colspan rowspan headers width height valign scope abbr" },
	{ GUMBO_TAG_FONT, C_TEXT, "color size face" },
	{ GUMBO_TAG_HR, C_TEXT, "width" },
};

/* Is name one of the space-separated words of list? */
static int in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	while (*list) {
		size_t k = strcspn(list, " ");

		if (k == n && !memcmp(list, name, n))
			return 1;
		list += k;
		while (*list == ' ')
			list++;
	}
	return 0;
}

const struct attr_rule *allowlist_attr(int tag, const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(attr_rules) / sizeof(attr_rules[0]); i++)
		if ((attr_rules[i].tag == ANY || attr_rules[i].tag == tag) &&
		    in_list(attr_rules[i].names, name))
			return &attr_rules[i];
	return NULL;
}

int allowlist_attr_ok(const GumboAttribute *a, enum check check)
{
	size_t len = strlen(a->value);

	switch (check) {
	case C_LINK:
		return allowlist_url(a->value, len, 0);
	case C_IMAGE:
		return allowlist_url(a->value, len, 1);
	case C_SRCSET:
		return srcset_ok(a->value, len);
	case C_HTTPS:
		return https_url(a->value, len);
	case C_STYLE:
		return style_ok(a->value, len);
	default:
		return 1;
	}
}

enum policy allowlist_policy(int tag)
{
	return tag >= 0 && tag < TAG_COUNT ? (enum policy)tag_policy[tag] : UNWRAP;
}

const char *allowlist_tag_name(int tag)
{
	return tag == TAG_PICTURE ? "picture" : gumbo_normalized_tagname((GumboTag)tag);
}

int allowlist_tag_at(const char *s, size_t i, size_t len)
{
	char name[16];
	size_t n = 0;
	GumboTag tag;

	for (; i < len && !is_ws(s[i]) && s[i] != '/' && s[i] != '>'; i++) {
		if (n == sizeof(name))
			return GUMBO_TAG_UNKNOWN;
		name[n++] = lower(s[i]);
	}
	if (!n)
		return GUMBO_TAG_UNKNOWN;
	tag = gumbo_tagn_enum(name, (unsigned)n);
	if (tag == GUMBO_TAG_UNKNOWN && n == 7 && !memcmp(name, "picture", 7))
		return TAG_PICTURE;
	return tag == GUMBO_TAG_IMAGE ? GUMBO_TAG_IMG : (int)tag;
}

int allowlist_element_tag(const GumboElement *e)
{
	if (e->tag != GUMBO_TAG_UNKNOWN)
		return e->tag == GUMBO_TAG_IMAGE ? GUMBO_TAG_IMG : (int)e->tag;
	if (e->original_tag.length < 2 || e->original_tag.data[0] != '<')
		return GUMBO_TAG_UNKNOWN;
	return allowlist_tag_at(e->original_tag.data, 1, e->original_tag.length);
}

enum policy allowlist_element(const GumboNode *n)
{
	const GumboElement *e = &n->v.element;
	enum policy p;

	/* foreign elements live inside <svg> and <math>, which are dropped */
	if (n->type != GUMBO_NODE_ELEMENT || e->tag_namespace != GUMBO_NAMESPACE_HTML)
		return DROP;
	p = allowlist_policy(allowlist_element_tag(e));
	if (p == FRAME) {
		const GumboAttribute *src = gumbo_get_attribute(&e->attributes, "src");

		if (!src || !https_url(src->value, strlen(src->value)))
			return DROP;
	}
	return p;
}
