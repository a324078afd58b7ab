/*
 * allowlist.h: what sanitize.c lets through, element by element and
 * attribute by attribute, and the checks of attribute values (URLs by
 * their scheme, srcset, style).
 *
 * Internal to src/markdown/: sanitize.c is its one user, and sanitize.h
 * the API. It does not include sanitize.h (sanitize.c includes this
 * header: that would be an include circle), so allowlist_url() takes a
 * flag where sanitize_url() takes an enum sanitize_url_kind.
 *
 * Tags are gumbo's numbers (GumboTag), with one more for <picture>, which
 * gumbo 0.10.1 does not know; <image> reads as <img>.
 */
#ifndef QUIRE_ALLOWLIST_H
#define QUIRE_ALLOWLIST_H

#include <stddef.h>

#include <gumbo.h>

enum policy {
	UNWRAP = 0, /* unknown or not wanted: the tag goes, its content stays */
	KEEP,       /* written with its allowed attributes */
	VOID,       /* kept, and has no end tag */
	FRAME,      /* <iframe>: kept only with an https: src, content dropped */
	DROP,       /* dropped with all its content */
};

/* How an attribute's value is checked. */
enum check {
	C_TEXT,   /* any value */
	C_LINK,   /* a URL: allowlist_url(image 0) */
	C_IMAGE,  /* a URL: allowlist_url(image 1) */
	C_SRCSET, /* image candidates */
	C_HTTPS,  /* an https: URL (iframe src) */
	C_STYLE,  /* style_ok() */
	C_REL,    /* a's rel: written last, with noopener added when needed */
};

/* An attribute allowed on an element (tag, or every allowed element). */
struct attr_rule {
	unsigned short tag;
	unsigned char check; /* an enum check */
	const char *names;   /* space-separated */
};

static inline int is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static inline int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}

/* Case-insensitive search for an ASCII needle (given in lower case) in s, len bytes. */
int md_contains_ci(const char *s, size_t len, const char *needle);

/*
 * sanitize_url(): 1 when url (len bytes) may be written as a link
 * address, or with image set as an image address (data: raster images
 * too), 0 when not.
 */
int allowlist_url(const char *url, size_t len, int image);

/* The policy of tag (UNWRAP for a tag out of range or unknown). */
enum policy allowlist_policy(int tag);

/* An element's policy, with what its namespace and attributes decide. */
enum policy allowlist_element(const GumboNode *n);

/* The rule for attribute name on tag, or NULL: the attribute is dropped. */
const struct attr_rule *allowlist_attr(int tag, const char *name);

/* Does a's value pass check? */
int allowlist_attr_ok(const GumboAttribute *a, enum check check);

/* The lower-case name of tag, for writing it. */
const char *allowlist_tag_name(int tag);

/*
 * The tag whose name starts at s[i] in a tag token (up to a space, '/' or
 * '>'): gumbo's number for it, <picture>'s, or GUMBO_TAG_UNKNOWN.
 */
int allowlist_tag_at(const char *s, size_t i, size_t len);

/* An element's tag, <picture> included (known by its source name). */
int allowlist_element_tag(const GumboElement *e);

#endif
