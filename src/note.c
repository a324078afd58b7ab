/*
 * note.c: frontmatter.
 */
#include "note.h"
#include "unicode.h"
#include "xalloc.h"
#include "yml.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void strlist_add(struct strlist *l, const char *s)
{
	l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = xstrdup(s);
}

void strlist_release(struct strlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Length of the line at p (up to end), and where the next starts. */
static size_t line_len(const char *p, const char *end, const char **next)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

	*next = nl ? nl + 1 : end;
	if (n && p[n - 1] == '\r')
		n--;
	return n;
}

static int is_fence(const char *p, size_t n, int closing)
{
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	return (n == 3 && memcmp(p, "---", 3) == 0) ||
	       (closing && n == 3 && memcmp(p, "...", 3) == 0);
}

/* "2024-05-01", "2024-05-01T10:00" and "2024-05-01 10:00" give "2024-05-01". */
static char *iso_date(const char *s)
{
	int i;

	for (i = 0; i < 10; i++) {
		if (i == 4 || i == 7) {
			if (s[i] != '-')
				return NULL;
		} else if (!isdigit((unsigned char)s[i])) {
			return NULL;
		}
	}
	if (s[10] && s[10] != 'T' && s[10] != ' ')
		return NULL;
	return xstrndup(s, 10);
}

static void set_string(char **dst, const struct yml_node *v, const char *key, const char *path,
		       struct diag_list *diags)
{
	if (yml_is_null(v))
		return;
	if (v->type != YML_SCALAR) {
		diag_addk(diags, DIAG_PARSE, DIAG_ERROR, path, v->line, "frontmatter '%s' must be text", key);
		return;
	}
	free(*dst);
	*dst = xstrdup(v->value);
}

/* Tags and aliases may be a list, or one string of items split by commas (and spaces for tags). */
static void set_list(struct strlist *l, const struct yml_node *v, const char *key, int split_spaces,
		     int strip_hash, const char *path, struct diag_list *diags)
{
	size_t i;

	if (yml_is_null(v))
		return;
	if (v->type == YML_SCALAR) {
		const char *p = v->value;
		while (*p) {
			size_t n = strcspn(p, split_spaces ? ", \t" : ",");
			const char *s = p;
			while (n && (*s == ' ' || (strip_hash && *s == '#')))
				s++, n--;
			while (n && s[n - 1] == ' ')
				n--;
			if (n) {
				char *item = xstrndup(s, n);
				strlist_add(l, item);
				free(item);
			}
			p += strcspn(p, split_spaces ? ", \t" : ",");
			if (*p)
				p++;
		}
		return;
	}
	if (v->type != YML_SEQ) {
		diag_addk(diags, DIAG_PARSE, DIAG_ERROR, path, v->line, "frontmatter '%s' must be a list", key);
		return;
	}
	for (i = 0; i < v->nitems; i++) {
		const struct yml_node *it = v->items[i];
		const char *s;
		if (it->type != YML_SCALAR) {
			diag_addk(diags, DIAG_PARSE, DIAG_WARNING, path, it->line,
				 "frontmatter '%s': an item that is not text was ignored", key);
			continue;
		}
		s = it->value;
		while (strip_hash && *s == '#')
			s++;
		if (*s)
			strlist_add(l, s);
	}
}

static void set_bool(int *dst, const struct yml_node *v, const char *key, const char *path,
		     struct diag_list *diags)
{
	int b = yml_bool(v);

	if (yml_is_null(v))
		return;
	if (b < 0) {
		diag_addk(diags, DIAG_PARSE, DIAG_ERROR, path, v->line, "frontmatter '%s' must be true or false",
			 key);
		return;
	}
	*dst = b;
}

static void set_date(char **dst, const struct yml_node *v, const char *key, const char *path,
		     struct diag_list *diags)
{
	char *d;

	if (yml_is_null(v))
		return;
	if (v->type != YML_SCALAR || !(d = iso_date(v->value))) {
		diag_addk(diags, DIAG_PARSE, DIAG_WARNING, path, v->line,
			 "frontmatter '%s' is not a date like 2024-05-31, ignored", key);
		return;
	}
	free(*dst);
	*dst = d;
}

static void read_frontmatter(struct note *n, const struct yml_node *root, struct diag_list *diags)
{
	const struct yml_node *v;
	const char *path = n->path;

	if (!root)
		return;
	if (root->type != YML_MAP) {
		diag_addk(diags, DIAG_PARSE, DIAG_ERROR, path, root->line, "frontmatter must be a map of keys");
		return;
	}
	if ((v = yml_get(root, "title")))
		set_string(&n->title, v, "title", path, diags);
	if ((v = yml_get(root, "description")))
		set_string(&n->description, v, "description", path, diags);
	if ((v = yml_get(root, "aliases")))
		set_list(&n->aliases, v, "aliases", 0, 0, path, diags);
	if ((v = yml_get(root, "alias")))
		set_list(&n->aliases, v, "alias", 0, 0, path, diags);
	if ((v = yml_get(root, "tags")))
		set_list(&n->tags, v, "tags", 1, 1, path, diags);
	if ((v = yml_get(root, "tag")))
		set_list(&n->tags, v, "tag", 1, 1, path, diags);
	if ((v = yml_get(root, "date")))
		set_date(&n->created, v, "date", path, diags);
	if ((v = yml_get(root, "created")))
		set_date(&n->created, v, "created", path, diags);
	if ((v = yml_get(root, "updated")))
		set_date(&n->updated, v, "updated", path, diags);
	if ((v = yml_get(root, "draft")))
		set_bool(&n->draft, v, "draft", path, diags);
	if ((v = yml_get(root, "publish")))
		set_bool(&n->publish, v, "publish", path, diags);
	if ((v = yml_get(root, "slug")))
		set_string(&n->slug, v, "slug", path, diags);
	if ((v = yml_get(root, "cssclasses")))
		set_list(&n->cssclasses, v, "cssclasses", 1, 0, path, diags);
	if ((v = yml_get(root, "cssclass")))
		set_list(&n->cssclasses, v, "cssclass", 1, 0, path, diags);
	if ((v = yml_get(root, "route"))) {
		set_list(&n->routes, v, "route", 0, 0, path, diags);
		n->routes_line = v->line;
	}
	if ((v = yml_get(root, "routes"))) {
		set_list(&n->routes, v, "routes", 0, 0, path, diags);
		n->routes_line = v->line;
	}
	if (n->slug && !n->slug[0]) {
		free(n->slug);
		n->slug = NULL;
	}
}

/*
 * A frontmatter block that is not valid YAML (real vaults have "- %" in a
 * list of aliases) still usually has its important keys on lines of their
 * own. Keep the top-level lines that carry a value after "key:", parse
 * those alone, and say which keys were lost. A note's publish state is
 * never guessed: if "publish" or "draft" is on a line that fails, the note
 * keeps the safe reading below (see note_parse).
 */
static int contains(const char *hay, size_t len, const char *needle)
{
	size_t n = strlen(needle), i;

	for (i = 0; i + n <= len; i++)
		if (memcmp(hay + i, needle, n) == 0)
			return 1;
	return 0;
}

static int is_publish_key(const char *p, size_t k)
{
	return (k == 7 && strncmp(p, "publish", 7) == 0) || (k == 5 && strncmp(p, "draft", 5) == 0);
}

static struct yml_node *recover(const char *path, const char *yaml, size_t len, const char *why,
				int why_line, int *keep_private, struct diag_list *diags)
{
	struct buf kept = BUF_INIT, lost = BUF_INIT, err = BUF_INIT;
	const char *end = yaml + len;
	struct yml_node *root = NULL;
	int drop[8], ndrop = 0, err_line = why_line, attempt, last_kept = 0;

	/* each failed attempt drops the line it failed on, up to eight lines */
	for (attempt = 0; attempt < 8 && !root; attempt++) {
		const char *p, *next;
		int line = 2, i = 0;

		/*
		 * An error at the end of the block (an unclosed '[') names no
		 * line we kept: drop the last kept line before it instead.
		 */
		for (i = 0; i < ndrop; i++)
			if (drop[i] == err_line)
				err_line = last_kept;
		drop[ndrop++] = err_line;
		last_kept = 0;
		buf_reset(&kept);
		buf_reset(&lost);
		*keep_private = 0;
		for (p = yaml; p < end; p = next, line++) {
			size_t l = line_len(p, end, &next), k = 0;
			int dropped = 0;

			for (i = 0; i < ndrop; i++)
				dropped |= drop[i] == line;
			if (l == 0 || p[0] == ' ' || p[0] == '\t' || p[0] == '-' || p[0] == '#') {
				buf_addc(&kept, '\n'); /* block items are lost with their key */
				continue;
			}
			/* "key: value" (keys may have spaces, as in "Module Name: x") */
			while (k < l && p[k] != ':')
				k++;
			if (k + 1 < l && !dropped) {
				buf_add(&kept, p, l);
				if (line <= err_line || !last_kept)
					last_kept = line;
			} else {
				*keep_private |= is_publish_key(p, k);
				if (lost.len)
					buf_adds(&lost, ", ");
				buf_addf(&lost, "'%.*s'", (int)k, p);
			}
			buf_addc(&kept, '\n');
		}
		buf_reset(&err);
		root = yml_parse(kept.ptr, kept.len, 2, &err, &err_line);
	}
	if (!root)
		*keep_private |= contains(yaml, len, "publish") || contains(yaml, len, "draft");
	if (*keep_private)
		diag_addk(diags, DIAG_PARSE, DIAG_ERROR, path, why_line,
			 "invalid frontmatter: %s; 'publish' or 'draft' could not be read, so the "
			 "note is kept private",
			 why);
	else if (root)
		diag_addk(diags, DIAG_PARSE, DIAG_WARNING, path, why_line,
			 "invalid frontmatter: %s; the other keys were read line by line%s%s%s", why,
			 lost.len ? " (lost: " : "", lost.ptr, lost.len ? ")" : "");
	else
		diag_addk(diags, DIAG_PARSE, DIAG_ERROR, path, why_line, "invalid frontmatter: %s", why);
	buf_release(&kept);
	buf_release(&lost);
	buf_release(&err);
	return root;
}

void note_parse(struct note *n, const char *path, const char *src, size_t len, time_t mtime,
		struct diag_list *diags)
{
	struct buf clean = BUF_INIT, err = BUF_INIT;
	const char *base = strrchr(path, '/'), *p, *end, *next, *body;
	size_t nbad, namelen;
	int bad_line, line;

	base = base ? base + 1 : path;
	namelen = strlen(base);
	if (namelen > 3 && strcasecmp(base + namelen - 3, ".md") == 0)
		namelen -= 3;
	n->path = xstrdup(path);
	n->name = xstrndup(base, namelen);
	n->publish = -1;
	n->mtime = mtime;

	nbad = utf8_sanitize(src, len, &clean, &bad_line);
	if (nbad)
		diag_addk(diags, DIAG_PARSE, DIAG_WARNING, path, bad_line,
			 "%zu invalid UTF-8 sequence%s or control character%s replaced", nbad,
			 nbad == 1 ? "" : "s", nbad == 1 ? "" : "s");

	p = clean.ptr;
	end = clean.ptr + clean.len;
	body = p;
	n->body_line = 1;
	if (is_fence(p, line_len(p, end, &next), 0)) {
		const char *yaml = next;
		line = 2;
		for (p = next; p < end; p = next, line++) {
			size_t l = line_len(p, end, &next);
			if (is_fence(p, l, 1)) {
				int err_line = 0;
				struct yml_node *root = yml_parse(yaml, (size_t)(p - yaml), 2, &err,
								  &err_line);
				int keep_private = 0;
				if (!root && err.len)
					root = recover(path, yaml, (size_t)(p - yaml), err.ptr, err_line,
						       &keep_private, diags);
				read_frontmatter(n, root, diags);
				if (keep_private) {
					n->draft = 1;
					n->publish = 0;
				}
				yml_free(root);
				body = next;
				n->body_line = line + 1;
				break;
			}
		}
		if (body == clean.ptr)
			diag_addk(diags, DIAG_PARSE, DIAG_ERROR, path, 1,
				 "frontmatter is not closed by a '---' line; read as text");
	}
	if (!n->title || !n->title[0]) {
		free(n->title);
		n->title = xstrdup(n->name);
	}
	n->body_len = (size_t)(end - body);
	n->body = xstrndup(body, n->body_len);
	buf_release(&clean);
	buf_release(&err);
}

void note_drop_body(struct note *n)
{
	free(n->body);
	n->body = NULL;
	n->body_len = 0;
}

void note_release(struct note *n)
{
	if (!n)
		return;
	free(n->path);
	free(n->name);
	free(n->title);
	free(n->description);
	strlist_release(&n->aliases);
	strlist_release(&n->tags);
	free(n->created);
	free(n->updated);
	free(n->slug);
	strlist_release(&n->cssclasses);
	strlist_release(&n->routes);
	free(n->body);
	memset(n, 0, sizeof(*n));
}

int note_is_published(const struct note *n, int explicit_mode)
{
	if (explicit_mode)
		return n->publish == 1 && !n->draft;
	return n->publish != 0 && !n->draft;
}
