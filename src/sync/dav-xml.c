/*
 * dav-xml.c: WebDAV request bodies (PROPFIND, PROPPATCH, LOCK) through
 * libexpat, into a small tree of elements.
 *
 * How. XML_ParserCreateNS with ' ' as the separator, so an element's name
 * arrives as "namespace local" (or "local" in no namespace) and prefixes
 * never matter. Only elements, their text and xml:lang are kept; the
 * tree is what the handlers walk, and what a dead property's value is
 * written back from (xnode_write(), every element declaring its own
 * default namespace, so a value stands alone wherever it is sent).
 *
 * Hostile bodies. A DOCTYPE (and so any entity declaration: they live in
 * one) stops the parse: no entity expansion, no external entities, no
 * billion laughs. The body is refused over DAV_MAX_BODY bytes, the
 * nesting over DAV_MAX_DEPTH and the element count over DAV_MAX_NODES,
 * so the tree is bounded by the body and the stack by the depth. Expat's
 * own amplification limits stay on as a second wall.
 *
 * Rejected: a hand-written parser (namespaces, encodings, CDATA and
 * character references are where they go wrong); libxml2 (larger, and its
 * defaults have expanded entities before).
 */
#include "sync/dav.h"
#include "sync/dav-int.h"
#include "util/xalloc.h"

#include <expat.h>
#include <stdlib.h>
#include <string.h>

#define XML_NS "http://www.w3.org/XML/1998/namespace"

struct parse {
	XML_Parser p;
	struct xnode *root, *cur;
	int depth;
	size_t nodes;
	const char *why;
};

void xnode_free(struct xnode *n)
{
	while (n) {
		struct xnode *next = n->next;
		xnode_free(n->child);
		free(n->ns);
		free(n->name);
		free(n->lang);
		buf_release(&n->text);
		free(n);
		n = next;
	}
}

static void stop(struct parse *ps, const char *why)
{
	if (!ps->why)
		ps->why = why;
	XML_StopParser(ps->p, XML_FALSE);
}

static void on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct parse *ps = ud;
	const char *sp = strrchr(name, ' ');
	struct xnode *n;
	int i;

	if (ps->why)
		return;
	if (++ps->depth > DAV_MAX_DEPTH) {
		stop(ps, "XML nested too deeply");
		return;
	}
	if (++ps->nodes > DAV_MAX_NODES) {
		stop(ps, "too many XML elements");
		return;
	}
	n = xcalloc(1, sizeof(*n));
	buf_init(&n->text, 0);
	n->ns = sp ? xstrndup(name, (size_t)(sp - name)) : xstrdup("");
	n->name = xstrdup(sp ? sp + 1 : name);
	for (i = 0; attrs[i]; i += 2)
		if (strcmp(attrs[i], XML_NS " lang") == 0)
			n->lang = xstrdup(attrs[i + 1]);
	n->parent = ps->cur;
	if (!ps->cur) {
		ps->root = n;
	} else {
		if (ps->cur->last)
			ps->cur->last->next = n;
		else
			ps->cur->child = n;
		ps->cur->last = n;
	}
	ps->cur = n;
}

static void on_end(void *ud, const XML_Char *name)
{
	struct parse *ps = ud;

	(void)name;
	if (ps->why)
		return;
	ps->depth--;
	if (ps->cur)
		ps->cur = ps->cur->parent;
}

static void on_text(void *ud, const XML_Char *s, int len)
{
	struct parse *ps = ud;

	if (!ps->why && ps->cur && len > 0)
		buf_add(&ps->cur->text, s, (size_t)len);
}

static void on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
		       int has_internal_subset)
{
	(void)name;
	(void)sysid;
	(void)pubid;
	(void)has_internal_subset;
	stop(ud, "DOCTYPE declarations are refused");
}

static void on_entity(void *ud, const XML_Char *name, int is_param, const XML_Char *value,
		      int value_len, const XML_Char *base, const XML_Char *sysid,
		      const XML_Char *pubid, const XML_Char *notation)
{
	(void)name;
	(void)is_param;
	(void)value;
	(void)value_len;
	(void)base;
	(void)sysid;
	(void)pubid;
	(void)notation;
	stop(ud, "entity declarations are refused");
}

struct xnode *dav_xml_parse(const char *body, size_t len, const char **why)
{
	struct parse ps;
	enum XML_Status st;

	memset(&ps, 0, sizeof(ps));
	if (len > DAV_MAX_BODY)
		return *why = "XML body too large", NULL;
	ps.p = XML_ParserCreateNS(NULL, ' ');
	if (!ps.p)
		return *why = "out of memory", NULL;
	XML_SetUserData(ps.p, &ps);
	XML_SetElementHandler(ps.p, on_start, on_end);
	XML_SetCharacterDataHandler(ps.p, on_text);
	XML_SetStartDoctypeDeclHandler(ps.p, on_doctype);
	XML_SetEntityDeclHandler(ps.p, on_entity);
	XML_SetParamEntityParsing(ps.p, XML_PARAM_ENTITY_PARSING_NEVER);
	st = XML_Parse(ps.p, body, (int)len, XML_TRUE);
	if (st != XML_STATUS_OK || ps.why || !ps.root) {
		*why = ps.why				 ? ps.why
		       : !ps.root && st == XML_STATUS_OK ? "empty XML body"
							 : "malformed XML body";
		xnode_free(ps.root);
		ps.root = NULL;
	}
	XML_ParserFree(ps.p);
	return ps.root;
}

int xnode_is(const struct xnode *n, const char *ns, const char *name)
{
	return n && strcmp(n->ns, ns) == 0 && strcmp(n->name, name) == 0;
}

struct xnode *xnode_child(const struct xnode *n, const char *ns, const char *name)
{
	struct xnode *c;

	for (c = n ? n->child : NULL; c; c = c->next)
		if (xnode_is(c, ns, name))
			return c;
	return NULL;
}

void dav_xml_escape(struct buf *b, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		switch (s[i]) {
		case '&':
			buf_adds(b, "&amp;");
			break;
		case '<':
			buf_adds(b, "&lt;");
			break;
		case '>':
			buf_adds(b, "&gt;");
			break;
		case '"':
			buf_adds(b, "&quot;");
			break;
		case '\r':
			buf_adds(b, "&#13;");
			break;
		case '\n': /* in an attribute (xmlns, xml:lang) a parser reads these as spaces */
			buf_adds(b, "&#10;");
			break;
		case '\t':
			buf_adds(b, "&#9;");
			break;
		default:
			buf_addc(b, s[i]);
			break;
		}
	}
}

void xnode_write(struct buf *b, const struct xnode *n)
{
	const struct xnode *c;
	/* the xml namespace may not be declared as a default one: its prefix is fixed */
	int xml_ns = strcmp(n->ns, XML_NS) == 0;

	buf_addc(b, '<');
	if (xml_ns)
		buf_adds(b, "xml:");
	buf_adds(b, n->name);
	if (!xml_ns) {
		buf_adds(b, " xmlns=\"");
		dav_xml_escape(b, n->ns, strlen(n->ns));
		buf_addc(b, '"');
	}
	if (n->lang) {
		buf_adds(b, " xml:lang=\"");
		dav_xml_escape(b, n->lang, strlen(n->lang));
		buf_addc(b, '"');
	}
	if (!n->child && !n->text.len) {
		buf_adds(b, "/>");
		return;
	}
	buf_addc(b, '>');
	/* mixed content keeps its text first: property values are text or elements, seldom both */
	dav_xml_escape(b, n->text.ptr ? n->text.ptr : "", n->text.len);
	for (c = n->child; c; c = c->next)
		xnode_write(b, c);
	buf_adds(b, xml_ns ? "</xml:" : "</");
	buf_adds(b, n->name);
	buf_addc(b, '>');
}
