/*
 * sanitize.h: raw HTML and URLs from notes, made safe to publish.
 *
 * A note may hold raw HTML (cmark-gfm hands it over a piece at a time: an
 * HTML block, or one inline tag) and Markdown links and images with any
 * URL. What reaches readers passes through here: sanitize_html() rewrites
 * a piece of HTML to an allow-list of elements and attributes, and
 * sanitize_url() says whether a URL may be written into an href or a src.
 *
 *	if (sanitize_url(url, strlen(url), SANITIZE_URL_LINK))
 *		md_add_href(out, url);
 *	sanitize_html(out, piece, piece_len);
 *
 * The only module that uses gumbo; its header stays out of this one.
 */
#ifndef QUIRE_SANITIZE_H
#define QUIRE_SANITIZE_H

#include "util/buf.h"

#include <stddef.h>

enum sanitize_url_kind {
	/* followed by a reader or loaded as media: http, https, mailto, relative */
	SANITIZE_URL_LINK,
	/* an image: the same, and data:image/(png|gif|jpeg|webp|avif); */
	SANITIZE_URL_IMAGE,
};

/*
 * Appends to out the safe serialization of one piece of raw HTML (html,
 * len bytes, need not be NUL-terminated nor balanced). Allowed elements keep
 * their allowed attributes; start and end tags are written only where the
 * piece had them, in the piece's order, so that structures spanning pieces
 * (a <details> opened in one HTML block and closed in another) still work.
 * Disallowed elements are dropped with their content (script, style, svg,
 * forms...) or, when not known, without it; comments and doctypes go.
 * Text is escaped again from its decoded form. Never fails: bad input is
 * dropped, not reported. out is the caller's; nothing else is allocated.
 */
void sanitize_html(struct buf *out, const char *html, size_t len);

/*
 * Returns 1 when url (len bytes, as the browser will read it: entities
 * already decoded) may be written as a link or image address, 0 when not
 * (javascript:, vbscript:, data: other than raster images, file:, unknown
 * schemes, however obfuscated with case, tabs, newlines or leading control
 * characters). The scheme is read as a browser reads it.
 */
int sanitize_url(const char *url, size_t len, enum sanitize_url_kind kind);

#endif
