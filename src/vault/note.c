/*
 * note.c: frontmatter.
 */
#include "vault/note.h"
#include "util/unicode.h"
#include "util/xalloc.h"
#include "util/yml.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void note_strlist_add(struct strlist *l, const char *s)
{
	size_t n = l->n;

	/*
	 * Capacity is implicit: 4, then doubling whenever n reaches a power of
	 * two (as in yml.c). Growing by one made 400,000 tags quadratic
	 * wherever realloc copies (ASan's allocator always does;
	 * tests/test-pathological.c, "YAML long lists").
	 */
	if (n == 0 || (n >= 4 && (n & (n - 1)) == 0))
		l->v = xrealloc(l->v, (n ? n * 2 : 4) * sizeof(*l->v));
	l->v[l->n++] = xstrdup(s);
}

void note_strlist_release(struct strlist *l)
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
				note_strlist_add(l, item);
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
			note_strlist_add(l, s);
	}
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

/*
 * What Obsidian accepts as a tag: letters (any script), digits, '_', '-'
 * and '/', not only digits. Anything else (spaces, quotes, '<') would not
 * be a tag in Obsidian, and would reach URLs and feeds: such a tag is
 * dropped with a warning.
 */
static int valid_tag(const char *t)
{
	const unsigned char *p;
	int letters = 0;

	for (p = (const unsigned char *)t; *p; p++) {
		if (*p >= 0x80 || isalpha(*p) || *p == '_' || *p == '-' || *p == '/')
			letters = 1;
		else if (!isdigit(*p))
			return 0;
	}
	return letters;
}

static void keep_valid_tags(struct note *n, int line, struct diag_list *diags)
{
	size_t i, kept = 0;

	for (i = 0; i < n->tags.n; i++) {
		if (valid_tag(n->tags.v[i])) {
			n->tags.v[kept++] = n->tags.v[i];
			continue;
		}
		diag_addk(diags, DIAG_PARSE, DIAG_WARNING, n->path, line,
			  "tag '%.60s' ignored: a tag holds letters, digits, '_', '-' and '/'",
			  n->tags.v[i]);
		free(n->tags.v[i]);
	}
	n->tags.n = kept;
}

static void read_frontmatter(struct note *n, const struct yml_node *root, struct diag_list *diags)
{
	const struct yml_node *v;
	const char *path = n->path;
	int tags_line = 0;

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
	if ((v = yml_get(root, "tags"))) {
		set_list(&n->tags, v, "tags", 1, 1, path, diags);
		tags_line = v->line;
	}
	if ((v = yml_get(root, "tag"))) {
		set_list(&n->tags, v, "tag", 1, 1, path, diags);
		tags_line = v->line;
	}
	if (n->tags.n)
		keep_valid_tags(n, tags_line, diags);
	if ((v = yml_get(root, "date")))
		set_date(&n->created, v, "date", path, diags);
	if ((v = yml_get(root, "created")))
		set_date(&n->created, v, "created", path, diags);
	if ((v = yml_get(root, "updated")))
		set_date(&n->updated, v, "updated", path, diags);
	if ((v = yml_get(root, "slug")))
		set_string(&n->slug, v, "slug", path, diags);
	/*
	 * Obsidian Publish's permalink: the note's whole path from the
	 * site's root, with or without its leading '/'; it wins over slug.
	 */
	if ((v = yml_get(root, "permalink"))) {
		char *permalink = NULL;

		set_string(&permalink, v, "permalink", path, diags);
		if (permalink && *permalink) {
			size_t len = strlen(permalink);
			free(n->slug);
			n->slug = xmalloc(len + 2);
			n->slug[0] = '/';
			memcpy(n->slug + 1, permalink + (permalink[0] == '/'), len + 1 - (permalink[0] == '/'));
		}
		free(permalink);
	}
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
 * The keys that hide a note: draft and publish. They fail closed. A note
 * is hidden when one of them says so, and also when the author plainly
 * meant to say something and quire cannot be sure what: a value that is
 * not a plain YAML boolean ("true" in quotes, 1, y, a list, nothing), the
 * key given twice (libyaml keeps both; which one wins is a guess), or a
 * top-level line naming the key that YAML did not read as that key
 * ("draft:true" is a plain string). Each is an error naming the line. Keys
 * are matched without regard to case ("Draft" is draft, with a warning).
 */
struct hiding_key {
	const char *name;
	int hide_value;   /* the boolean value that hides the note */
};

static const struct hiding_key hiding_keys[] = { { "draft", 1 }, { "publish", 0 } };

/* Top-level lines of yaml (first line numbered first_line) naming key before a ':'. */
static int key_lines(const char *yaml, size_t len, int first_line, const char *key, int *line)
{
	const char *p = yaml, *end = yaml + len, *next;
	size_t klen = strlen(key);
	int n = 0, at = first_line;

	for (; p < end; p = next, at++) {
		size_t l = line_len(p, end, &next), i = 0;
		if (l && (p[0] == '"' || p[0] == '\''))
			i = 1;
		if (i + klen > l || strncasecmp(p + i, key, klen) != 0)
			continue;
		i += klen;
		if (i < l && (p[i] == '"' || p[i] == '\''))
			i++;
		while (i < l && (p[i] == ' ' || p[i] == '\t'))
			i++;
		if (i < l && p[i] == ':') {
			if (!n++)
				*line = at;
		}
	}
	return n;
}

static int is_plain_bool(const struct yml_node *v, int *out)
{
	static const char *const spell[] = { "false", "False", "FALSE", "true", "True", "TRUE" };
	size_t i;

	if (v->type != YML_SCALAR || v->quoted)
		return 0;
	for (i = 0; i < 6; i++) {
		if (strcmp(v->value, spell[i]) == 0) {
			*out = i >= 3;
			return 1;
		}
	}
	return 0;
}

/* How a value was written, for a message: "\"true\" (in quotes)", "a list"... */
static void describe(const struct yml_node *v, char *out, size_t size)
{
	if (v->type == YML_SEQ)
		snprintf(out, size, "a list");
	else if (v->type == YML_MAP)
		snprintf(out, size, "a map");
	else if (!v->value[0] || yml_is_null(v))
		snprintf(out, size, "empty");
	else
		snprintf(out, size, "%s%.40s%s", v->quoted ? "\"" : "'", v->value,
			 v->quoted ? "\" (in quotes)" : "'");
}

/* Returns 1 when the note must be hidden because of key k (reported), else sets *dst. */
static int read_hiding_key(struct note *n, const struct hiding_key *k, int *dst,
			   const struct yml_node *root, const char *yaml, size_t len,
			   int first_line, struct diag_list *diags)
{
	const struct yml_node *key = NULL, *val = NULL;
	size_t i, found = 0;
	int lines, line = 0, b;
	char how[64];

	for (i = 0; root && root->type == YML_MAP && i + 1 < root->nitems; i += 2) {
		const struct yml_node *ki = root->items[i];
		if (ki->type != YML_SCALAR || strcasecmp(ki->value, k->name) != 0)
			continue;
		if (found++ == 0) {
			key = ki;
			val = root->items[i + 1];
		} else {
			diag_addk(diags, DIAG_PARSE, DIAG_ERROR, n->path, ki->line,
				  "frontmatter '%s' is given again (first on line %d); the note is "
				  "kept private",
				  k->name, key->line);
			return 1;
		}
	}
	lines = key_lines(yaml, len, first_line, k->name, &line);
	if ((size_t)lines > found) {
		diag_addk(diags, DIAG_PARSE, DIAG_ERROR, n->path, line,
			  "frontmatter '%s' could not be read (write it as '%s: true' or '%s: "
			  "false'); the note is kept private",
			  k->name, k->name, k->name);
		return 1;
	}
	if (!key)
		return 0;
	if (strcmp(key->value, k->name) != 0)
		diag_addk(diags, DIAG_PARSE, DIAG_WARNING, n->path, key->line,
			  "frontmatter '%s' is read as '%s'", key->value, k->name);
	if (!is_plain_bool(val, &b)) {
		describe(val, how, sizeof(how));
		diag_addk(diags, DIAG_PARSE, DIAG_ERROR, n->path, val->line,
			  "frontmatter '%s' must be true or false, not %s; the note is kept private",
			  k->name, how);
		return 1;
	}
	*dst = b;
	return 0;
}

/* Sets draft and publish from the frontmatter (yaml: its text), failing closed. */
static void read_visibility(struct note *n, const struct yml_node *root, const char *yaml,
			    size_t len, int first_line, struct diag_list *diags)
{
	int hide = 0;

	hide |= read_hiding_key(n, &hiding_keys[0], &n->draft, root, yaml, len, first_line, diags);
	hide |= read_hiding_key(n, &hiding_keys[1], &n->publish, root, yaml, len, first_line,
				diags);
	if (hide) {
		n->draft = hiding_keys[0].hide_value;
		n->publish = hiding_keys[1].hide_value;
	}
}

/*
 * Whether the line p[0, l) names a hiding key as a key: the word (any
 * case, a whole word) followed by ':' after an optional closing quote and
 * blanks, anywhere on the line ("  draft: true", "- Publish : no",
 * "meta: {x: 1, 'draft': true"); or anywhere on a line that starts with
 * '?' (a complex key, whose ':' may come on the next line). Sets *which.
 */
/* Whether p[i] (of a line of l bytes) is a letter, a digit or '_' (any byte of UTF-8 counts). */
static int word_char(const char *p, size_t l, size_t i)
{
	unsigned char c = i < l ? (unsigned char)p[i] : ' ';

	return isalnum(c) || c == '_' || c >= 0x80;
}

static int names_hiding_key(const char *p, size_t l, const struct hiding_key **which)
{
	size_t i, k, at;
	int complex = 0;

	for (i = 0; i < l && (p[i] == ' ' || p[i] == '\t'); i++)
		;
	complex = i < l && p[i] == '?';
	for (k = 0; k < sizeof(hiding_keys) / sizeof(hiding_keys[0]); k++) {
		size_t n = strlen(hiding_keys[k].name);
		for (at = 0; at + n <= l; at++) {
			size_t j = at + n;
			if (strncasecmp(p + at, hiding_keys[k].name, n) != 0 ||
			    (at && word_char(p, l, at - 1)))
				continue;
			if (j < l && (p[j] == '"' || p[j] == '\''))
				j++;
			while (j < l && (p[j] == ' ' || p[j] == '\t'))
				j++;
			if ((j < l && p[j] == ':') || (complex && !word_char(p, l, at + n))) {
				*which = &hiding_keys[k];
				return 1;
			}
		}
	}
	return 0;
}

/*
 * The first line of text (numbered from first_line) that names a hiding
 * key (names_hiding_key()): its number, or 0. *line_at and *at_len: the line.
 */
static int hiding_line(const char *text, size_t len, int first_line, const char **line_at,
		       size_t *at_len, const struct hiding_key **which)
{
	const char *p, *end = text + len, *next;
	int line = first_line;

	for (p = text; p < end; p = next, line++) {
		size_t l = line_len(p, end, &next);
		if (names_hiding_key(p, l, which)) {
			*line_at = p;
			*at_len = l;
			return line;
		}
	}
	return 0;
}

/*
 * A frontmatter block that is not valid YAML (real vaults have "- %" in a
 * list of aliases) still usually has its important keys on lines of their
 * own. Keep the top-level lines that carry a value after "key:", parse
 * those alone, and say which keys were lost. A note's publish state is
 * never guessed: when any line of the block names "publish" or "draft" as
 * a key, indented, in a list or in a flow map as much as at the top, the
 * note is kept private (*keep_private) with an error naming that line,
 * even if the recovery read it: what the whole block meant cannot be known
 * ("draft: false" followed by an indented "  true" is not false).
 */
static struct yml_node *recover(const char *path, const char *yaml, size_t len, const char *why,
				int why_line, int *keep_private, struct diag_list *diags)
{
	struct buf kept = BUF_INIT, lost = BUF_INIT, err = BUF_INIT;
	const char *end = yaml + len, *key_text = NULL;
	const struct hiding_key *which = NULL;
	struct yml_node *root = NULL;
	int drop[8], ndrop = 0, err_line = why_line, attempt, last_kept = 0, key_line;
	size_t key_len = 0;

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
				if (lost.len)
					buf_adds(&lost, ", ");
				buf_addf(&lost, "'%.*s'", (int)k, p);
			}
			buf_addc(&kept, '\n');
		}
		buf_reset(&err);
		root = yml_parse(kept.ptr, kept.len, 2, &err, &err_line);
	}
	key_line = hiding_line(yaml, len, 2, &key_text, &key_len, &which);
	*keep_private = key_line > 0;
	if (*keep_private)
		diag_addk(diags, DIAG_PARSE, DIAG_ERROR, path, key_line,
			  "invalid frontmatter (%s, line %d): '%.*s' names '%s', which could not be "
			  "read for certain; the note is kept private",
			  why, why_line, (int)(key_len > 60 ? 60 : key_len), key_text, which->name);
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

/*
 * A frontmatter block with no closing fence is read as text, but a line
 * of it that names a hiding key keeps the note private (the author meant
 * a frontmatter that says draft or publish).
 */
static void unclosed(struct note *n, const char *yaml, const char *end, struct diag_list *diags)
{
	const struct hiding_key *which;
	const char *text;
	size_t tlen;
	int line = hiding_line(yaml, (size_t)(end - yaml), 2, &text, &tlen, &which);

	if (!line) {
		diag_addk(diags, DIAG_PARSE, DIAG_ERROR, n->path, 1,
			  "frontmatter is not closed by a '---' line; read as text");
		return;
	}
	diag_addk(diags, DIAG_PARSE, DIAG_ERROR, n->path, line,
		  "frontmatter is not closed by a '---' line, and '%.*s' names '%s'; the note is "
		  "kept private",
		  (int)(tlen > 60 ? 60 : tlen), text, which->name);
	n->draft = 1;
	n->publish = 0;
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
				if (!keep_private)
					read_visibility(n, root, yaml, (size_t)(p - yaml), 2, diags);
				else {
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
			unclosed(n, yaml, end, diags);
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
	note_strlist_release(&n->aliases);
	note_strlist_release(&n->tags);
	free(n->created);
	free(n->updated);
	free(n->slug);
	note_strlist_release(&n->cssclasses);
	note_strlist_release(&n->routes);
	free(n->body);
	memset(n, 0, sizeof(*n));
}

int note_is_published(const struct note *n, int explicit_mode)
{
	if (explicit_mode)
		return n->publish == 1 && !n->draft;
	return n->publish != 0 && !n->draft;
}
