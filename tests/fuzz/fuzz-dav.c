/*
 * fuzz-dav.c: a libFuzzer target for the WebDAV request parsers
 * (src/sync/dav-xml.c and the If header of src/sync/dav-locks.c), which
 * read what any client with the token sends to /dav/.
 *
 * The first byte chooses: even, the rest is an XML body (PROPFIND,
 * PROPPATCH, LOCK) for dav_xml_parse(); odd, an If header for
 * dav_if_parse(), whose lists are then evaluated against an empty lock
 * table. Properties: a parsed tree respects the limits (depth, element
 * count); every element written back with xnode_write() (the form dead
 * properties are kept and sent in) parses again to the same names and
 * text: what the server stores is well-formed and means what was sent.
 */
#include "fuzz.h"

#include "sync/dav.h"
#include "sync/dav-int.h"
#include "util/buf.h"

static int depth_of(const struct xnode *n)
{
	const struct xnode *c;
	int d = 0;

	for (c = n->child; c; c = c->next) {
		int cd = depth_of(c);
		if (cd > d)
			d = cd;
	}
	return d + 1;
}

/* Whether a and b have the same names and text, all the way down. */
static int same(const struct xnode *a, const struct xnode *b)
{
	for (; a && b; a = a->next, b = b->next) {
		if (strcmp(a->ns, b->ns) != 0 || strcmp(a->name, b->name) != 0 ||
		    a->text.len != b->text.len ||
		    (a->text.len && memcmp(a->text.ptr, b->text.ptr, a->text.len) != 0) ||
		    !same(a->child, b->child))
			return 0;
	}
	return !a && !b;
}

static void xml(const uint8_t *data, size_t size)
{
	const char *why = NULL;
	struct xnode *root = dav_xml_parse((const char *)data, size, &why), *again;
	struct buf b = BUF_INIT;

	if (!root) {
		fuzz_assert(why != NULL);
		return;
	}
	fuzz_assert(depth_of(root) <= DAV_MAX_DEPTH);
	xnode_write(&b, root);
	again = dav_xml_parse(b.ptr, b.len, &why);
	/* text holding "\r" or "]]>" and the like is escaped: it must come back whole */
	fuzz_assert(again != NULL);
	fuzz_assert(same(root, again));
	xnode_free(again);
	xnode_free(root);
	buf_release(&b);
}

static int resolve(void *ctx, const char *url, struct buf *out)
{
	(void)ctx;
	if (strncmp(url, "/dav/", 5) != 0)
		return -1;
	buf_adds(out, url + 5);
	return 0;
}

static int no_etag(void *ctx, const char *path, struct buf *out)
{
	(void)ctx;
	(void)path;
	(void)out;
	return -1;
}

static void if_header(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);
	struct dav_locks *l = dav_locks_new();
	struct if_header h;

	if (dav_if_parse(s, &h, resolve, NULL) == 0)
		(void)dav_if_eval(&h, l, "a.md", no_etag, NULL);
	dav_if_release(&h);
	dav_locks_free(l);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] % 2 == 0)
		xml(data + 1, size - 1);
	else
		if_header(data + 1, size - 1);
	return 0;
}
