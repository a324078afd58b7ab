/* test-note.c: frontmatter, publish rules and quire.yml. */
#include "vault/config.h"
#include "vault/note.h"
#include "lib/test.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void parse(struct note *n, struct diag_list *d, const char *path, const char *src)
{
	memset(n, 0, sizeof(*n));
	note_parse(n, path, src, strlen(src), 0, d);
}

/* A 1 MB frontmatter key is named in its diagnostic, cut to one readable line. */
static void test_huge_key(void)
{
	struct diag_list d;
	struct note n;
	struct buf src = BUF_INIT;
	size_t i, found = 0;

	diag_list_init(&d);
	buf_adds(&src, "---\n");
	for (i = 0; i < 1024 * 1024; i++)
		buf_addc(&src, i % 3 ? 'k' : '\xc3'), buf_addc(&src, i % 3 ? 'e' : '\xa9');
	buf_adds(&src, ": [a, b]\ntitle: T\n---\nbody\n");
	parse(&n, &d, "huge.md", src.ptr);
	for (i = 0; i < d.n; i++) {
		size_t len = strlen(d.items[i].msg);
		CHECK(len <= DIAG_MSG_MAX + 40);
		if (strstr(d.items[i].msg, "more bytes)"))
			found++;
		CHECK(utf8_valid(d.items[i].msg, len));
	}
	CHECK(found >= 1); /* "lost: '<the key>'", cut */
	CHECK_STR(n.title, "T");
	note_release(&n);
	diag_list_release(&d);
	buf_release(&src);
}

static void test_full_frontmatter(void)
{
	struct diag_list d;
	struct note n;

	diag_list_init(&d);
	parse(&n, &d, "folder/My Note.md",
	      "---\n"
	      "title: \"A: title\"\n"
	      "description: Short\n"
	      "aliases: [Old name, other]\n"
	      "tags:\n  - '#one'\n  - nested/two\n"
	      "date: 2024-05-01T10:00:00\n"
	      "updated: 2024-06-02\n"
	      "draft: false\n"
	      "publish: true\n"
	      "slug: custom\n"
	      "cssclasses: wide, dark\n"
	      "routes: [example.com/, docs.example.com/x]\n"
	      "Module Name: ignored\n"
	      "---\n"
	      "# Body\n");
	CHECK_STR(n.name, "My Note");
	CHECK_STR(n.title, "A: title");
	CHECK_STR(n.description, "Short");
	CHECK_INT(n.aliases.n, 2);
	CHECK_STR(n.aliases.v[0], "Old name");
	CHECK_INT(n.tags.n, 2);
	CHECK_STR(n.tags.v[0], "one");
	CHECK_STR(n.tags.v[1], "nested/two");
	CHECK_STR(n.created, "2024-05-01");
	CHECK_STR(n.updated, "2024-06-02");
	CHECK_INT(n.draft, 0);
	CHECK_INT(n.publish, 1);
	CHECK_STR(n.slug, "custom");
	CHECK_INT(n.cssclasses.n, 2);
	CHECK_STR(n.cssclasses.v[1], "dark");
	CHECK_INT(n.routes.n, 2);
	CHECK_INT(n.routes_line, 14);
	CHECK_STR(n.body, "# Body\n");
	CHECK_INT(n.body_line, 17);
	CHECK_INT(d.n, 0);
	note_release(&n);
	diag_list_release(&d);
}

static void test_no_frontmatter(void)
{
	struct diag_list d;
	struct note n;

	diag_list_init(&d);
	parse(&n, &d, "Plain.md", "Just text\n---\nmore\n");
	CHECK_STR(n.title, "Plain");
	CHECK_STR(n.body, "Just text\n---\nmore\n");
	CHECK_INT(n.body_line, 1);
	CHECK_INT(n.publish, -1);
	CHECK_INT(d.n, 0);
	note_release(&n);
	diag_list_release(&d);
}

static void test_malformed(void)
{
	struct diag_list d;
	struct note n;

	diag_list_init(&d);
	/* bad YAML: reported with its line, the body still comes through */
	parse(&n, &d, "bad.md", "---\ntitle: ok\ntags: [unclosed\n---\nBody text\n");
	CHECK_INT(d.nwarnings, 1);
	CHECK(d.n == 1 && d.items[0].line >= 3 && strstr(d.items[0].msg, "'tags'"));
	CHECK_STR(n.body, "Body text\n");
	CHECK_STR(n.title, "ok");
	note_release(&n);
	diag_list_release(&d);

	diag_list_init(&d);
	/* nothing to recover: an error, and the title falls back to the file name */
	parse(&n, &d, "bad.md", "---\n[not: a map\n---\nBody text\n");
	CHECK_INT(d.nerrors, 1);
	CHECK_STR(n.body, "Body text\n");
	CHECK_STR(n.title, "bad");
	note_release(&n);
	diag_list_release(&d);

	diag_list_init(&d);
	/* unterminated: the whole file is the body */
	parse(&n, &d, "open.md", "---\ntitle: x\nno end here\n");
	CHECK_INT(d.nerrors, 1);
	CHECK_INT(d.items[0].line, 1);
	CHECK_STR(n.body, "---\ntitle: x\nno end here\n");
	note_release(&n);
	diag_list_release(&d);

	diag_list_init(&d);
	/* wrong types and bad dates name the key and line */
	parse(&n, &d, "types.md", "---\ntitle: [a, b]\ndraft: maybe\ndate: tomorrow\ntags: {a: 1}\n---\n");
	CHECK_INT(d.nerrors, 3);
	CHECK_INT(d.nwarnings, 1);
	CHECK_STR(n.title, "types");
	CHECK(n.body && n.body_len == 0);
	note_release(&n);
	diag_list_release(&d);

	diag_list_init(&d);
	/* invalid UTF-8 and a YAML alias bomb do no harm */
	parse(&n, &d, "bytes.md",
	      "---\na: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n---\nbad \xff byte\n");
	CHECK_INT(d.nwarnings, 1);
	CHECK_STR(n.body, "bad \xEF\xBF\xBD byte\n");
	note_release(&n);
	diag_list_release(&d);

	diag_list_init(&d);
	{
		/* 10,000 nested flow sequences: refused, not recursed into */
		struct buf src = BUF_INIT;
		size_t i;
		buf_adds(&src, "---\nx: ");
		for (i = 0; i < 10000; i++)
			buf_addc(&src, '[');
		buf_adds(&src, "\n---\nbody\n");
		parse(&n, &d, "deep.md", src.ptr);
		CHECK_INT(d.nerrors, 1);
		CHECK_STR(n.body, "body\n");
		note_release(&n);
		buf_release(&src);
	}
	diag_list_release(&d);
}

static void test_recovery(void)
{
	struct diag_list d;
	struct note n;

	diag_list_init(&d);
	/* a real note from the corpus: "- %" is not valid YAML */
	parse(&n, &d, "ForEach-Object.md",
	      "---\nschema: 2.0.0\naliases:\n  - %\n  - foreach\ntitle: ForEach-Object\n---\nbody\n");
	CHECK_STR(n.title, "ForEach-Object");
	CHECK_INT(d.nerrors, 0);
	CHECK_INT(d.nwarnings, 1);
	CHECK(d.n == 1 && strstr(d.items[0].msg, "'aliases'") != NULL);
	CHECK(note_is_published(&n, 0));
	note_release(&n);
	diag_list_release(&d);

	diag_list_init(&d);
	/* the publish flag itself is broken: the note stays private, an error says why */
	parse(&n, &d, "x.md", "---\ntitle: ok\npublish: [false\n---\nsecret\n");
	CHECK_INT(d.nerrors, 1);
	CHECK(!note_is_published(&n, 0));
	CHECK_STR(n.title, "ok");
	note_release(&n);
	diag_list_release(&d);

	diag_list_init(&d);
	/* an alias that YAML reads as a map ("- ?") is dropped with a warning */
	parse(&n, &d, "Where-Object.md", "---\naliases:\n  - ?\n  - where\n---\n");
	CHECK_INT(d.nerrors, 0);
	CHECK_INT(n.aliases.n, 1);
	note_release(&n);
	diag_list_release(&d);
}

static void test_publish_rules(void)
{
	struct diag_list d;
	struct note n;

	diag_list_init(&d);
	parse(&n, &d, "a.md", "---\ndraft: true\n---\n");
	CHECK(!note_is_published(&n, 0));
	CHECK(!note_is_published(&n, 1));
	note_release(&n);
	parse(&n, &d, "a.md", "---\npublish: false\n---\n");
	CHECK(!note_is_published(&n, 0));
	note_release(&n);
	parse(&n, &d, "a.md", "plain\n");
	CHECK(note_is_published(&n, 0));
	CHECK(!note_is_published(&n, 1));
	note_release(&n);
	parse(&n, &d, "a.md", "---\npublish: True\ndraft: FALSE\n---\n");
	CHECK(note_is_published(&n, 1));
	note_release(&n);
	parse(&n, &d, "a.md", "---\npublish: \"true\"\n---\n");
	CHECK_INT(d.nerrors, 1); /* a quoted string is not a boolean */
	note_release(&n);
	diag_list_release(&d);
}

/*
 * src gives a note that neither mode publishes, with a diagnostic saying
 * says: an error on line when line is not 0, else a warning and no error.
 */
static void expect_hidden(const char *src, int line, const char *says)
{
	struct diag_list d;
	struct note n;
	size_t k;
	int found = 0;

	diag_list_init(&d);
	parse(&n, &d, "dir/private.md", src);
	if (note_is_published(&n, 0) || note_is_published(&n, 1)) {
		fprintf(stderr, "  published: %s", src);
		CHECK(0);
	}
	if (line ? d.nerrors < 1 : d.nerrors != 0) {
		fprintf(stderr, "  %zu errors for: %s", d.nerrors, src);
		CHECK(0);
	}
	for (k = 0; k < d.n; k++) {
		const struct diag *x = &d.items[k];
		if (strstr(x->msg, says) && strcmp(x->path, "dir/private.md") == 0 &&
		    (!line || (x->line == line && x->level == DIAG_ERROR)))
			found = 1;
	}
	if (!found) {
		fprintf(stderr, "  no diagnostic with \"%s\" on line %d for: %s", says, line, src);
		CHECK(0);
	}
	if (!found || test_current_failed)
		for (k = 0; k < d.n; k++)
			fprintf(stderr, "    line %d: %s\n", d.items[k].line, d.items[k].msg);
	note_release(&n);
	diag_list_release(&d);
}

/*
 * draft and publish fail closed: whatever the author wrote that is not a
 * plain true or false keeps the note private, with an error naming the
 * file, the line and the value.
 */
static void test_hiding_keys_fail_closed(void)
{
	static const struct {
		const char *src;
		int line;           /* of the error; 0: a warning only, and the note is hidden */
		const char *says;   /* in the message */
	} hidden[] = {
		{ "---\ndraft: \"true\"\n---\n", 2, "\"true\" (in quotes)" },
		{ "---\ndraft: 'true'\n---\n", 2, "\"true\" (in quotes)" },
		{ "---\ndraft: 1\n---\n", 2, "'1'" },
		{ "---\ndraft: y\n---\n", 2, "'y'" },
		{ "---\ndraft: yes\n---\n", 2, "'yes'" },
		{ "---\ndraft: [true]\n---\n", 2, "a list" },
		{ "---\ntitle: x\ndraft:\n---\n", 3, "empty" },
		{ "---\npublish: \"false\"\n---\n", 2, "\"false\" (in quotes)" },
		{ "---\npublish: 0\n---\n", 2, "'0'" },
		{ "---\npublish: n\n---\n", 2, "'n'" },
		{ "---\ntitle: t\npublish: true\npublish: false\n---\n", 4, "given again" },
		{ "---\ndraft: false\nDraft: true\n---\n", 3, "given again" },
		{ "---\ndraft:true\n---\n", 2, "could not be read" },
		{ "---\ntitle: t\ndraft:true\n---\n", 3, "could not be read" },
		{ "---\ntitle: t\nPUBLISH:false\ntags: [a]\n---\n", 3, "could not be read" },
		{ "---\nDraft: true\n---\n", 0, "read as 'draft'" },
		{ "---\nDRAFT: true\n---\n", 0, "read as 'draft'" },
		{ "---\nPublish: false\n---\n", 0, "read as 'publish'" },
	};
	struct diag_list d;
	struct note n;
	size_t i;

	for (i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		expect_hidden(hidden[i].src, hidden[i].line, hidden[i].says);

	/* what still publishes: plain booleans, and words that only look like the keys */
	diag_list_init(&d);
	parse(&n, &d, "a.md", "---\ndraft: false\npublish: true\ndrafts: [x]\npublished: 2024\n---\n");
	CHECK(note_is_published(&n, 1));
	CHECK_INT(d.n, 0);
	note_release(&n);
	parse(&n, &d, "a.md", "---\ntitle: 'draft: true'\nnotes: |\n  draft: true\n---\n");
	CHECK(note_is_published(&n, 0));
	CHECK_INT(d.n, 0);
	note_release(&n);
	diag_list_release(&d);
}

/* Whether src parses into a note that neither mode publishes, and how many diagnostics it gave. */
static int parse_hidden(const char *src, size_t *ndiags, struct note *out)
{
	struct diag_list d;
	struct note n;
	int h;

	diag_list_init(&d);
	parse(&n, &d, "m.md", src);
	h = !note_is_published(&n, 0) && !note_is_published(&n, 1);
	*ndiags = d.n;
	if (out)
		*out = n;
	else
		note_release(&n);
	diag_list_release(&d);
	return h;
}

/*
 * YAML 1.1 merge keys in frontmatter are honoured: a draft: true merged
 * from a map, an anchor or a list of them hides the note; the note's own
 * keys win over merged ones, and an earlier map of a list over a later
 * one (issue 31).
 */
static void test_merge_keys(void)
{
	static const char *const drafts[] = {
		"---\n<<: {draft: true}\n---\nbody\n",
		"---\nbase: &b\n  draft: true\n<<: *b\n---\nbody\n",
		"---\na: &a {title: A}\nb: &b {publish: false}\n<<: [*a, *b]\n---\nbody\n",
		"---\n<<: [{title: T}, {draft: true}]\npublish: true\n---\nbody\n",
		"---\nbase: &b {draft: true}\nmiddle: &m {<<: *b, title: M}\n<<: *m\n---\n",
	};
	struct note n;
	size_t i, nd;

	for (i = 0; i < sizeof(drafts) / sizeof(drafts[0]); i++) {
		if (!parse_hidden(drafts[i], &nd, NULL)) {
			fprintf(stderr, "  published: %s", drafts[i]);
			CHECK(0);
		}
		CHECK_INT(nd, 0);
	}
	/* the note's own key wins, wherever it stands */
	CHECK(!parse_hidden("---\ndraft: false\npublish: true\n<<: {draft: true, title: Merged}\n"
			    "---\n", &nd, &n));
	CHECK_STR(n.title, "Merged");
	note_release(&n);
	/* the earlier map of a list wins over a later one */
	CHECK(!parse_hidden("---\n<<: [{title: First, publish: true},\n"
			    "  {title: Second, publish: false}]\n---\n", &nd, &n));
	CHECK_STR(n.title, "First");
	note_release(&n);
	/* "<<" in quotes is a key like any other, not a merge */
	CHECK(!parse_hidden("---\n\"<<\": {draft: true}\npublish: true\n---\n", &nd, NULL));
	/* a merge of no anchor, of a scalar, or of a map holding it: reported (the rest is read) */
	CHECK(!parse_hidden("---\ntitle: t\n<<: *nowhere\n---\n", &nd, &n));
	CHECK_INT(nd, 1);
	CHECK_STR(n.title, "t");
	note_release(&n);
	CHECK(!parse_hidden("---\n<<: [1]\n---\n", &nd, NULL) && nd == 1);
	CHECK(!parse_hidden("---\na: &a {k: {<<: *a}}\n---\n", &nd, NULL) && nd == 1);
	/* ... and a merge whose draft: true a typo left unread keeps the note private */
	CHECK(parse_hidden("---\nbase: &b\n  draft: true\n<<: *bb\n---\n", &nd, NULL) && nd == 1);
	{
		/* maps merging maps twice a level: refused past YML_MAX_COPIES, not copied 2^40 times */
		struct buf src = BUF_INIT;
		int k;
		buf_adds(&src, "---\nl0: &l0 {a: 1, b: 2}\n");
		for (k = 1; k <= 40; k++)
			buf_addf(&src, "l%d: &l%d {x: {<<: *l%d}, y: {<<: *l%d}}\n", k, k, k - 1, k - 1);
		buf_adds(&src, "draft: true\n---\n");
		CHECK(parse_hidden(src.ptr, &nd, NULL));
		CHECK_INT(nd, 1);
		buf_release(&src);
	}
}

/*
 * Frontmatter that is not valid YAML: a line naming draft or publish as a
 * key, at any indentation, in a list or a flow map, keeps the note
 * private with an error naming that line (issue 31: an indented
 * " draft: true" was dropped and the note published).
 */
static void test_failed_parse_hides(void)
{
	static const struct {
		const char *src;
		int line;
	} cases[] = {
		{ "---\ntitle: x\n draft: true\n---\nbody\n", 3 },
		{ "---\ntitle: x\n\tpublish: false\n---\n", 3 },
		{ "---\naliases:\n  - %\nmeta:\n  Draft : yes\n---\n", 5 },
		{ "---\ntags: [a\ndraft: false\n---\n", 3 },
		{ "---\nx: {a: 1, 'draft': true\n---\n", 2 },
		{ "---\nlist:\n  - publish: no\n  - [\n---\n", 3 },
		{ "---\n? draft\n: true\nbad: [\n---\n", 2 },
		{ "---\ndraft: false\n  true\nbad: [\n---\n", 2 },
		/* no closing fence: read as text, but kept private */
		{ "---\ntitle: t\ndraft: true\n# Heading\ntext\n", 3 },
	};
	struct diag_list d;
	struct note n;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_hidden(cases[i].src, cases[i].line, "kept private");
	/* what still publishes: words in values, and broken frontmatter without the keys */
	diag_list_init(&d);
	parse(&n, &d, "a.md", "---\ntitle: 'my drafts, published'\nstatus: draft\nbad: [\n---\n");
	CHECK(note_is_published(&n, 0));
	CHECK_INT(d.nwarnings, 1);
	note_release(&n);
	parse(&n, &d, "a.md", "---\ntitle: x\nno end here\n");
	CHECK(note_is_published(&n, 0));
	note_release(&n);
	diag_list_release(&d);
}

static char *temp_vault(const char *yml)
{
	char tmpl[] = "/tmp/quire-test-XXXXXX";
	char *dir = xstrdup(mkdtemp(tmpl));
	struct buf p = BUF_INIT;
	FILE *f;

	buf_addf(&p, "%s/quire.yml", dir);
	f = fopen(p.ptr, "w");
	fputs(yml, f);
	fclose(f);
	buf_release(&p);
	return dir;
}

static void remove_vault(char *dir)
{
	struct buf p = BUF_INIT;
	buf_addf(&p, "%s/quire.yml", dir);
	unlink(p.ptr);
	rmdir(dir);
	buf_release(&p);
	free(dir);
}

/*
 * quire.yml as config_load() reads it; src (a whole file) is invalid with
 * errors errors when errors is not 0, the first at line saying says.
 */
static void expect_config(const char *src, size_t errors, int line, const char *says)
{
	struct diag_list d;
	struct config cfg;
	char *dir = temp_vault(src);
	size_t k;

	diag_list_init(&d);
	CHECK_INT(config_load(&cfg, dir, &d), errors ? -1 : 0);
	CHECK_INT(d.nerrors, errors);
	CHECK_INT(d.nwarnings, 0);
	diag_sort(&d);
	if (errors && (d.n == 0 || d.items[0].line != line || strcmp(d.items[0].path, "quire.yml") ||
		       !strstr(d.items[0].msg, says))) {
		fprintf(stderr, "  want line %d saying \"%s\" for: %s", line, says, src);
		CHECK(0);
	}
	if (test_current_failed)
		for (k = 0; k < d.n; k++)
			fprintf(stderr, "    line %d: %s\n", d.items[k].line, d.items[k].msg);
	config_release(&cfg);
	diag_list_release(&d);
	remove_vault(dir);
}

static void test_config(void)
{
	struct diag_list d;
	struct config cfg;
	char *dir = temp_vault("title: My site\nbase_url: https://example.com/notes/\n"
			       "publish: explicit\nignore: [templates, '*.tmp']\n"
			       "feed_items: 20\nhosts:\n  Docs.Example.com:\n    open: true\n");

	diag_list_init(&d);
	CHECK_INT(config_load(&cfg, dir, &d), 0);
	CHECK_STR(cfg.title, "My site");
	CHECK_STR(cfg.base_url, "https://example.com/notes");
	CHECK_STR(cfg.url_prefix, "/notes");
	CHECK_INT(cfg.publish, PUBLISH_EXPLICIT);
	CHECK_INT(cfg.nignore, 2);
	CHECK_INT(cfg.feed_items, 20);
	CHECK_INT(cfg.nhosts, 1);
	CHECK_STR(cfg.hosts[0].name, "docs.example.com");
	CHECK_INT(cfg.hosts[0].open, 1);
	CHECK_INT(d.n, 0);
	config_release(&cfg);
	diag_list_release(&d);
	remove_vault(dir);

	expect_config("", 0, 0, NULL);
	expect_config("publish: sometimes\nbase_url: ftp://x\nfeed_items: -3\n", 3, 1,
		      "publish must be 'all' or 'explicit'");
	expect_config("title: [unclosed\n", 1, 2, "invalid YAML");
}

/*
 * quire.yml fails closed (issue 31): a YAML error, an unknown key at any
 * level (named, with the nearest known one), a key given twice, a value
 * outside its set make the file invalid, not a warning beside defaults
 * that publish every note.
 */
static void test_config_fails_closed(void)
{
	expect_config("publish: explicit\ntitle: [oops\n", 1, 3, "invalid YAML");
	expect_config("publsh: explicit\n", 1, 1,
		      "unknown setting 'publsh': did you mean 'publish'?");
	expect_config("title: t\nPublish: explicit\n", 1, 2, "did you mean 'publish'?");
	expect_config("colour: blue\n", 1, 1, "unknown setting 'colour'");
	expect_config("publish: explicit\npublish: all\n", 1, 2, "'publish' is given again");
	expect_config("publish: Explicit\n", 1, 1, "publish must be 'all' or 'explicit'");
	expect_config("hosts:\n  a.com: {opne: true}\n", 1, 2,
		      "unknown host setting 'opne': did you mean 'open'?");
	expect_config("hosts:\n  a.com: {open: false, open: true}\n", 1, 2, "given again");
	expect_config("cache: {s_max_age: 60}\n", 1, 1, "did you mean 's_maxage'?");
	expect_config("purge:\n  - varnish: http://c\n    metod: ban\n", 1, 3,
		      "did you mean 'method'?");
	expect_config("- publish: explicit\n", 1, 1, "must be a map of settings");
	expect_config("? [publish]\n: explicit\n", 1, 1, "name must be text");
}

/*
 * Host names and URLs of quire.yml go into headers (Host, Location, the
 * purges' request lines): like routes, they hold no space and no control
 * character, or the file is invalid (issue 31: a base_url with CR/LF was
 * sent as a header line of PURGE requests).
 */
static void test_config_header_values(void)
{
	expect_config("base_url: \"https://a.com/x\\r\\nX-Evil: 1\"\n", 1, 1,
		      "base_url must be an absolute http(s) URL");
	expect_config("base_url: https://a .com/\n", 1, 1, "base_url must be");
	expect_config("hosts:\n  b.com: {base_url: \"https://b.com/\\r\\nX-Evil: 1\"}\n", 1, 2,
		      "base_url of host 'b.com' must be");
	expect_config("hosts:\n  b.com: {base_url: \"https://b.com\\n\"}\n", 1, 2,
		      "base_url of host 'b.com' must be");
	expect_config("hosts:\n  b.com: {base_url: javascript:x}\n", 1, 2, "must be");
	expect_config("hosts:\n  \"a.com\\r\\nX-Evil: 1\": {open: true}\n", 1, 2, "bad host name");
	expect_config("hosts:\n  \"a b.com\": {}\n", 1, 2, "bad host name");
	expect_config("purge:\n  - varnish: \"http://c/\\r\\nX: y\"\n", 1, 2, "http:// URL");
	expect_config("purge:\n  - webhook: http://c/\n    header: \"X-A: b\\nX-B: c\"\n", 1, 3,
		      "header must be one");
	expect_config("purge:\n  - webhook: http://c/\n    header: \"X A: b\"\n", 1, 3,
		      "header must be one");
	expect_config("csp: \"default-src 'self'\\x01\"\n", 1, 1, "csp must be one line");
	/* what stays valid: ports, IPv6, paths, UTF-8 names */
	expect_config("base_url: http://[::1]:8080/notes\nhosts:\n  docs.example.com:8443: {}\n"
		      "  b\xc3\xbc" "cher.example: {base_url: 'https://b.example/a%20b'}\n",
		      0, 0, NULL);
}

/* quire.yml's cache: and purge: (config-cdn.c), and the Cache-Control they give. */
static void test_config_cdn(void)
{
	struct diag_list d;
	struct config cfg;
	char *cc;
	char *dir = temp_vault("cache: {s_maxage: 600, stale_while_revalidate: 30}\npurge:\n"
			       "  - varnish: http://127.0.0.1:6081\n"
			       "  - varnish: http://cache:80\n    method: purge\n"
			       "  - varnish: http://cache:81\n    method: ban\n"
			       "  - webhook: http://relay/purge\n    header: 'Authorization: Bearer x'\n");

	diag_list_init(&d);
	CHECK_INT(config_load(&cfg, dir, &d), 0);
	CHECK_INT(d.n, 0);
	CHECK_INT(cfg.s_maxage, 600);
	CHECK_INT(cfg.npurgers, 4);
	CHECK_INT(cfg.purgers[0].kind, PURGER_XKEY);
	CHECK_INT(cfg.purgers[1].kind, PURGER_PURGE);
	CHECK_INT(cfg.purgers[2].kind, PURGER_BAN);
	CHECK_INT(cfg.purgers[3].kind, PURGER_WEBHOOK);
	CHECK_STR(cfg.purgers[3].header, "Authorization: Bearer x");
	cc = config_cache_control(&cfg);
	CHECK_STR(cc, "Cache-Control: public, max-age=0, s-maxage=600, "
		      "stale-while-revalidate=30\r\n");
	free(cc);
	config_release(&cfg);
	diag_list_release(&d);
	remove_vault(dir);

	/* bad values are errors, and make the file invalid */
	dir = temp_vault("cache: {s_maxage: soon}\npurge:\n  - varnish: https://x\n"
			 "  - webhook: http://y\n    header: nocolon\n  - 7\n");
	diag_list_init(&d);
	CHECK_INT(config_load(&cfg, dir, &d), -1);
	CHECK_INT(d.nerrors, 4);
	CHECK_INT(cfg.s_maxage, -1);
	CHECK(config_cache_control(&cfg) == NULL);
	CHECK_INT(cfg.npurgers, 1); /* the webhook, without its bad header */
	CHECK(cfg.purgers[0].header == NULL);
	config_release(&cfg);
	diag_list_release(&d);
	remove_vault(dir);
}

int main(void)
{
	RUN(test_config_cdn);
	RUN(test_full_frontmatter);
	RUN(test_no_frontmatter);
	RUN(test_malformed);
	RUN(test_recovery);
	RUN(test_publish_rules);
	RUN(test_hiding_keys_fail_closed);
	RUN(test_merge_keys);
	RUN(test_failed_parse_hides);
	RUN(test_config);
	RUN(test_config_fails_closed);
	RUN(test_config_header_values);
	RUN(test_huge_key);
	return test_done();
}
