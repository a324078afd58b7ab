/*
 * test-markdown.c: markdown.c against spec files, plus what they cannot show.
 *
 * The spec files (tests/spec/NAME.txt, found under $QUIRE_SOURCE_ROOT) use
 * cmark's format: a line of 32 backticks and " example", the Markdown, a
 * line with ".", the expected HTML, a closing line of 32 backticks; "→"
 * stands for a tab. Each example counts as one test. Everything renders
 * against a small fake vault (see resolve_fake), with tags under "/tags".
 *
 * The C tests check what HTML alone does not: the references handed to the
 * resolver, offsets of splices, headings and blocks, tags, summary, text,
 * md_heading_id(), and hostile inputs that must simply finish.
 *
 * `test-markdown --render < note.md` prints the HTML against the same fake
 * vault: the way to write the expected half of a new example.
 */
#include "markdown/markdown.h"
#include "lib/test.h"

#include <pthread.h>
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the fake vault ---- */

static const struct {
	const char *name, *url, *title;
	enum md_target_kind kind;
} vault[] = {
	{ "Note", "/note", "Note", MD_TARGET_NOTE },
	{ "folder/Other", "/folder/other", "Other", MD_TARGET_NOTE },
	{ "Other", "/folder/other", "Other", MD_TARGET_NOTE },
	{ "Unpublished", NULL, NULL, MD_TARGET_PLAIN },
	{ "Code `name`", "/code-name", "Code `name`", MD_TARGET_NOTE },
	{ "image.png", "/image.png", NULL, MD_TARGET_ATTACHMENT },
	{ "folder/photo.JPG", "/folder/photo.JPG", NULL, MD_TARGET_ATTACHMENT },
	{ "song.mp3", "/song.mp3", NULL, MD_TARGET_ATTACHMENT },
	{ "clip.mp4", "/clip.mp4", NULL, MD_TARGET_ATTACHMENT },
	{ "doc.pdf", "/doc.pdf", NULL, MD_TARGET_ATTACHMENT },
	{ "archive.zip", "/archive.zip", NULL, MD_TARGET_ATTACHMENT },
};

struct seen {
	size_t n;
	int bad_index;
};

static void resolve_fake(void *ctx, size_t index, const struct md_ref *ref, struct md_target *out)
{
	struct seen *seen = ctx;
	size_t i;

	if (seen) {
		if (index != seen->n)
			seen->bad_index = 1;
		seen->n++;
	}
	/* paths as Markdown links write them: "./Note.md" and "/Note" are "Note" */
	const char *t = ref->target;
	size_t tl;
	int rooted = t[0] == '/';

	while (!strncmp(t, "./", 2) || t[0] == '/')
		t += t[0] == '/' ? 1 : 2;
	tl = strlen(t);
	if (tl > 3 && !strcasecmp(t + tl - 3, ".md"))
		tl -= 3;
	for (i = 0; i < sizeof(vault) / sizeof(vault[0]); i++) {
		/* from the root ("/Other"), a note found by name alone elsewhere is not there */
		if (rooted && !strchr(vault[i].name, '/') && vault[i].url &&
		    strchr(vault[i].url + 1, '/'))
			continue;
		if (strlen(vault[i].name) == tl && !strncasecmp(vault[i].name, t, tl)) {
			out->kind = vault[i].kind;
			out->url = vault[i].url;
			out->title = vault[i].title;
			return;
		}
	}
}

static int render_opts(const char *md, size_t len, struct md_result *res, const char *prefix,
		       int first_line, struct seen *seen)
{
	struct md_options opt;

	memset(&opt, 0, sizeof(opt));
	opt.resolve = resolve_fake;
	opt.resolve_ctx = seen;
	opt.url_prefix = prefix;
	opt.first_line = first_line;
	return md_render(md, len, &opt, res);
}

static int render(const char *md, struct md_result *res)
{
	return render_opts(md, strlen(md), res, "", 1, NULL);
}

/* ---- the spec runner ---- */

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct buf b = BUF_INIT;
	char chunk[65536];
	size_t n;

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	return buf_detach(&b, len);
}

/* "→" back to a tab. */
static void add_untabbed(struct buf *b, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (i + 2 < len && !memcmp(s + i, "\xE2\x86\x92", 3)) {
			buf_addc(b, '\t');
			i += 2;
		} else {
			buf_addc(b, s[i]);
		}
	}
}

static const char fence[] = "````````````````````````````````";

static void spec_example(const char *file, int line, const struct buf *md, const struct buf *want)
{
	struct md_result res = MD_RESULT_INIT;
	int rc = render_opts(md->ptr, md->len, &res, "", 1, NULL);

	if (rc == 0 && res.html.len == want->len && !memcmp(res.html.ptr, want->ptr, want->len)) {
		test_passed++;
	} else {
		test_failed++;
		fprintf(stderr, "%s:%d: example failed (rc %d)\n--- markdown\n%s--- expected\n%s--- got\n%s---\n",
			file, line, rc, md->ptr, want->ptr, res.html.ptr);
	}
	md_result_release(&res);
}

static void run_spec(const char *name)
{
	const char *root = getenv("QUIRE_SOURCE_ROOT");
	struct buf path = BUF_INIT, md = BUF_INIT, want = BUF_INIT;
	char *text;
	size_t len, pos = 0, flen = strlen(fence);
	int lineno = 0, state = 0, start = 0, examples = 0;

	buf_addf(&path, "%s/tests/spec/%s", root && *root ? root : ".", name);
	text = read_file(path.ptr, &len);
	if (!text) {
		fprintf(stderr, "%s: cannot read (set QUIRE_SOURCE_ROOT)\n", path.ptr);
		test_failed++;
		buf_release(&path);
		return;
	}
	while (pos < len) {
		const char *l = text + pos, *nl = memchr(l, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - l) : len - pos;

		pos += ll + (nl ? 1 : 0);
		lineno++;
		if (state == 0) {
			if (ll == flen + 8 && !memcmp(l, fence, flen) && !memcmp(l + flen, " example", 8)) {
				state = 1;
				start = lineno;
				buf_reset(&md);
				buf_reset(&want);
			}
		} else if (state == 1) {
			if (ll == 1 && l[0] == '.') {
				state = 2;
				continue;
			}
			add_untabbed(&md, l, ll);
			buf_addc(&md, '\n');
		} else {
			if (ll == flen && !memcmp(l, fence, flen)) {
				spec_example(path.ptr, start, &md, &want);
				examples++;
				state = 0;
				continue;
			}
			add_untabbed(&want, l, ll);
			buf_addc(&want, '\n');
		}
	}
	if (state != 0 || examples == 0) {
		fprintf(stderr, "%s: %s\n", path.ptr, state ? "unterminated example" : "no examples");
		test_failed++;
	}
	free(text);
	buf_release(&path);
	buf_release(&md);
	buf_release(&want);
}

/* ---- references ---- */

static void test_refs(void)
{
	struct md_result r = MD_RESULT_INIT;
	struct seen seen = { 0, 0 };
	const char *md = "First [[Note]] and [[folder/Other#Sec One|the *label*]]\n"
			 "second line ![[image.png|300]] [[#Local]]\n"
			 "\n"
			 "| a |\n|---|\n| [[Note#^blk\\|alias]] |\n"
			 "\n"
			 "`[[not a link]]` [[Missing]]\n";

	CHECK_INT(render_opts(md, strlen(md), &r, "", 10, &seen), 0);
	CHECK_INT(r.nrefs, 6);
	CHECK_INT(seen.n, 6);
	CHECK(!seen.bad_index);
	if (r.nrefs == 6) {
		CHECK_INT(r.refs[0].kind, MD_REF_LINK);
		CHECK_STR(r.refs[0].target, "Note");
		CHECK(r.refs[0].fragment == NULL);
		CHECK(r.refs[0].label == NULL);
		CHECK_INT(r.refs[0].line, 10);
		CHECK_STR(r.refs[1].target, "folder/Other");
		CHECK_STR(r.refs[1].fragment, "Sec One");
		CHECK_STR(r.refs[1].label, "the label");
		CHECK_INT(r.refs[1].line, 10);
		CHECK_INT(r.refs[2].kind, MD_REF_EMBED);
		CHECK_STR(r.refs[2].target, "image.png");
		CHECK_STR(r.refs[2].label, "300");
		CHECK_INT(r.refs[2].line, 11);
		CHECK_STR(r.refs[3].target, "");
		CHECK_STR(r.refs[3].fragment, "Local");
		CHECK_INT(r.refs[3].line, 11);
		CHECK_STR(r.refs[4].target, "Note");
		CHECK_STR(r.refs[4].fragment, "^blk");
		CHECK_STR(r.refs[4].label, "alias");
		CHECK_INT(r.refs[4].line, 15);
		CHECK_STR(r.refs[5].target, "Missing");
		CHECK_INT(r.refs[5].line, 17);
	}
	md_result_release(&r);
}

/* A label made of other inline nodes is their plain text. */
static void test_ref_label_nodes(void)
{
	struct md_result r = MD_RESULT_INIT;

	CHECK_INT(render("[[New-CimSession|`New-CimSession`]]\n", &r), 0);
	CHECK_INT(r.nrefs, 1);
	if (r.nrefs == 1) {
		CHECK_STR(r.refs[0].target, "New-CimSession");
		CHECK_STR(r.refs[0].label, "New-CimSession");
	}
	CHECK(strstr(r.html.ptr, "<code>New-CimSession</code></a>") != NULL);
	md_result_release(&r);
}

/* Lines stay right after comments, display math and fenced code. */
static void test_ref_lines(void)
{
	struct md_result r = MD_RESULT_INIT;
	const char *md = "%%\ncomment\n%%\n[[A]]\n\n$$\nx\ny\n$$\n[[B]]\n\n```\n$z$\n```\n[[C]]\n"
			 "> [!note]\n> %% a\n> b %%\n> text $$\n> m\n> $$ [[D]]\n";

	CHECK_INT(render_opts(md, strlen(md), &r, "", 3, NULL), 0);
	CHECK_INT(r.nrefs, 4);
	if (r.nrefs == 4) {
		CHECK_INT(r.refs[0].line, 3 + 3);
		CHECK_INT(r.refs[1].line, 3 + 9);
		CHECK_INT(r.refs[2].line, 3 + 14);
		CHECK_INT(r.refs[3].line, 3 + 20);
	}
	md_result_release(&r);
}

static void test_no_resolver(void)
{
	struct md_result r = MD_RESULT_INIT;
	struct md_options opt = { NULL, NULL, NULL, 0, 0, 0, 0 };

	CHECK_INT(md_render("[[Note]] #tag ![[Note]]\n", 24, &opt, &r), 0);
	CHECK_INT(r.nrefs, 2);
	CHECK_INT(r.nsplices, 0);
	CHECK(strstr(r.html.ptr, "internal broken") != NULL);
	CHECK(strstr(r.html.ptr, "href=\"/tags/tag\"") != NULL);
	md_result_release(&r);
	CHECK_INT(md_render("x\n", 2, NULL, &r), 0);
	CHECK_STR(r.html.ptr, "<p>x</p>\n");
	md_result_release(&r);
}

/* ---- offsets ---- */

static void test_splices(void)
{
	struct md_result r = MD_RESULT_INIT;
	const char *md = "# Top\n\n![[Note]]\n\nText ![[folder/Other#Part]] and ![[Unpublished]] "
			 "![[image.png]]\n\n> ![[Note#^b1]]\n";
	size_t i;

	CHECK_INT(render(md, &r), 0);
	CHECK_INT(r.nrefs, 5);
	CHECK_INT(r.nsplices, 3);
	for (i = 0; i < r.nsplices; i++) {
		const char *at = r.html.ptr + r.splices[i].offset;

		CHECK(r.splices[i].offset <= r.html.len);
		CHECK(!strncmp(at, "</div>", 6));
		CHECK(r.splices[i].offset > 0 && at[-1] == '>');
		CHECK(r.splices[i].ref < r.nrefs);
		CHECK_INT(r.refs[r.splices[i].ref].kind, MD_REF_EMBED);
		if (i)
			CHECK(r.splices[i].offset > r.splices[i - 1].offset);
	}
	if (r.nsplices == 3) {
		CHECK_INT(r.splices[0].ref, 0);
		CHECK_INT(r.splices[1].ref, 1);
		CHECK_INT(r.splices[2].ref, 4);
		CHECK(strstr(r.html.ptr, "<div class=\"embed\" data-src=\"folder/Other#Part\"></div>") !=
		      NULL);
	}
	CHECK(strstr(r.html.ptr, "Unpublished") == NULL);
	md_result_release(&r);
}

static void test_headings(void)
{
	struct md_result r = MD_RESULT_INIT;
	const char *md = "# One\n\ntext\n\n## Two *em*\n\n### Three\n\n## Two em\n\n# Last `code`\n"
			 "\nSetext\n------\n";
	size_t i;

	CHECK_INT(render(md, &r), 0);
	CHECK_INT(r.nheadings, 6);
	for (i = 0; i < r.nheadings; i++) {
		char want[8];

		snprintf(want, sizeof(want), "<h%d id=", r.headings[i].level);
		CHECK(!strncmp(r.html.ptr + r.headings[i].start, want, strlen(want)));
		CHECK(r.headings[i].end >= r.headings[i].start);
		CHECK(r.headings[i].end <= r.html.len);
	}
	if (r.nheadings == 6) {
		CHECK_STR(r.headings[0].text, "One");
		CHECK_STR(r.headings[0].id, "one");
		CHECK_INT(r.headings[0].end, r.headings[4].start);
		CHECK_STR(r.headings[1].text, "Two em");
		CHECK_STR(r.headings[1].id, "two-em");
		CHECK_INT(r.headings[1].end, r.headings[3].start);
		CHECK_INT(r.headings[2].level, 3);
		CHECK_INT(r.headings[2].end, r.headings[3].start);
		CHECK_STR(r.headings[3].id, "two-em-1");
		CHECK_INT(r.headings[3].end, r.headings[4].start);
		CHECK_STR(r.headings[4].text, "Last code");
		CHECK_INT(r.headings[4].end, r.html.len);
		CHECK_STR(r.headings[5].text, "Setext");
		CHECK_INT(r.headings[5].level, 2);
		CHECK_INT(r.headings[5].end, r.html.len);
	}
	md_result_release(&r);
}

static void test_blocks(void)
{
	struct md_result r = MD_RESULT_INIT;
	const char *md = "A paragraph ^p1\n\n- item ^li-1\n- other\n\n| t |\n|---|\n| c |\n\n^tbl\n\n"
			 "> [!note] Callout\n> body\n\n^co\n\n```\ncode\n```\n\n^code\n";
	static const char *const ids[] = { "p1", "li-1", "tbl", "co", "code" };
	static const char *const opens[] = { "<p id=\"^p1\">", "<li id=\"^li-1\">",
					     "<table id=\"^tbl\">",
					     "<div class=\"callout\" data-callout=\"note\" id=\"^co\">",
					     "<pre id=\"^code\">" };
	static const char *const closes[] = { "</p>", "</li>", "</table>", "</div>", "</pre>" };
	size_t i;

	CHECK_INT(render(md, &r), 0);
	CHECK_INT(r.nblocks, 5);
	for (i = 0; i < r.nblocks && i < 5; i++) {
		size_t cl = strlen(closes[i]);

		CHECK_STR(r.blocks[i].id, ids[i]);
		CHECK(!strncmp(r.html.ptr + r.blocks[i].start, opens[i], strlen(opens[i])));
		CHECK(r.blocks[i].end >= r.blocks[i].start + cl);
		CHECK(!strncmp(r.html.ptr + r.blocks[i].end - cl, closes[i], cl));
	}
	CHECK(strstr(r.html.ptr, "^tbl</p>") == NULL);
	CHECK(strstr(r.html.ptr, "A paragraph</p>") != NULL);
	md_result_release(&r);
}

/* ---- tags, summary, text ---- */

static void test_tags(void)
{
	struct md_result r = MD_RESULT_INIT;
	const char *md = "#first and #Second/Sub, #second/sub #SECOND/SUB #123 a#b\n\n"
			 "`#code` [#link](x) #Ёлка #ёлка\n\n```\n#fenced\n```\n\n## Title #inhead\n";

	CHECK_INT(render_opts(md, strlen(md), &r, "/docs", 1, NULL), 0);
	CHECK_INT(r.ntags, 4);
	if (r.ntags == 4) {
		CHECK_STR(r.tags[0], "first");
		CHECK_STR(r.tags[1], "Second/Sub");
		CHECK_STR(r.tags[2], "Ёлка");
		CHECK_STR(r.tags[3], "inhead");
	}
	CHECK(strstr(r.html.ptr, "<a class=\"tag\" href=\"/docs/tags/second/sub\">#Second/Sub</a>") !=
	      NULL);
	CHECK(strstr(r.html.ptr, "href=\"/docs/tags/%D1%91%D0%BB%D0%BA%D0%B0\">#Ёлка</a>") != NULL);
	md_result_release(&r);
}

static void test_summary(void)
{
	struct md_result r = MD_RESULT_INIT;
	struct buf md = BUF_INIT;
	size_t i;

	CHECK_INT(render("# Heading\n\n> [!note]\n> In a callout.\n\nThe  *first*\nparagraph "
			 "[[Note|with a link]] and `code`.\n\nSecond.\n", &r), 0);
	CHECK_STR(r.summary, "The first paragraph with a link and code.");
	md_result_release(&r);

	CHECK_INT(render("# Only a heading\n\n```\ncode\n```\n", &r), 0);
	CHECK(r.summary == NULL);
	md_result_release(&r);

	CHECK_INT(render("![[Note]]\n\n$$\nx\n$$\n\nReal one.\n", &r), 0);
	CHECK_STR(r.summary, "Real one.");
	md_result_release(&r);

	for (i = 0; i < 100; i++)
		buf_adds(&md, "word ");
	buf_addc(&md, '\n');
	CHECK_INT(render(md.ptr, &r), 0);
	CHECK(r.summary != NULL);
	if (r.summary) {
		size_t n = strlen(r.summary);

		CHECK(n <= 300);
		CHECK(n > 250);
		CHECK(!strcmp(r.summary + n - 3, "\xE2\x80\xA6"));
		CHECK(!strncmp(r.summary + n - 7, "word\xE2\x80\xA6", 7));
	}
	md_result_release(&r);

	/* one long word: cut inside it, at a character boundary */
	buf_reset(&md);
	for (i = 0; i < 200; i++)
		buf_adds(&md, "é");
	buf_addc(&md, '\n');
	CHECK_INT(render(md.ptr, &r), 0);
	CHECK(r.summary && strlen(r.summary) <= 300 && utf8_valid(r.summary, strlen(r.summary)));
	md_result_release(&r);
	buf_release(&md);
}

static void test_text(void)
{
	struct md_result r = MD_RESULT_INIT;

	CHECK_INT(render("# Title\n\nSome *text* with `code` and [[Note|a label]] #tag $x^2$.\n\n"
			 "```\nfenced secret\n```\n\n| a | b |\n|---|---|\n| c | d |\n\n- one\n- two\n\n"
			 "<div>raw html</div>\n", &r), 0);
	CHECK(strstr(r.text.ptr, "Title") != NULL);
	CHECK(strstr(r.text.ptr, "Some text with code and a label #tag x^2.") != NULL);
	CHECK(strstr(r.text.ptr, "fenced") == NULL);
	CHECK(strstr(r.text.ptr, "raw html") == NULL);
	CHECK(strstr(r.text.ptr, "a b") != NULL);
	CHECK(strstr(r.text.ptr, "c d") != NULL);
	CHECK(strstr(r.text.ptr, "one\ntwo") != NULL);
	CHECK(strchr(r.text.ptr, '<') == NULL);
	md_result_release(&r);
}

/* ---- md_heading_id ---- */

static void check_id(const char *text, const char *want)
{
	char *id = md_heading_id(text);

	CHECK_STR(id, want);
	free(id);
}

static void test_heading_id(void)
{
	check_id("Hello, World!", "hello-world");
	check_id("Привет Мир", "привет-мир");
	check_id("日本語の見出し", "日本語の見出し");
	check_id("Café Crème", "café-crème");
	check_id("Cafe\xCC\x81", "café"); /* NFD in, NFC out */
	check_id("Straße", "straße");
	check_id("  a  b ", "--a--b-");
	check_id("snake_case-and-kebab", "snake_case-and-kebab");
	check_id("C++ & C#", "c--c");
	check_id("", "section");
	check_id("!!!", "section");
	check_id("Ελληνικά 2024", "ελληνικά-2024");
}

/* ---- results ---- */

static void test_release(void)
{
	struct md_result r = MD_RESULT_INIT;

	md_result_release(NULL);
	md_result_release(&r);
	CHECK_INT(render("# H\n\n[[Note]] #t ^id\n", &r), 0);
	md_result_release(&r);
	md_result_release(&r);
	CHECK_INT(r.html.len, 0);
	CHECK_INT(r.nrefs, 0);
	CHECK(r.summary == NULL);
	/* a released result can be used again */
	CHECK_INT(render("again\n", &r), 0);
	CHECK_STR(r.html.ptr, "<p>again</p>\n");
	md_result_release(&r);
}

static void test_empty_and_crlf(void)
{
	struct md_result r = MD_RESULT_INIT;
	const char *md = "a %%b%% c $x$\r\n\r\n```\r\n%%kept%% $y$\r\n```\r\n\r\n"
			 "> [!note] T\r\n> body [[Note]]\r\n";

	CHECK_INT(md_render("", 0, NULL, &r), 0);
	CHECK_STR(r.html.ptr, "");
	CHECK(r.summary == NULL);
	md_result_release(&r);
	CHECK_INT(render(md, &r), 0);
	CHECK(strstr(r.html.ptr, "<p>a  c <span class=\"math math-inline\">\\(x\\)</span></p>") != NULL);
	CHECK(strstr(r.html.ptr, "<pre><code>%%kept%% $y$\n</code></pre>") != NULL);
	CHECK(strstr(r.html.ptr, "<div class=\"callout-title\">T</div>") != NULL);
	CHECK_INT(r.nrefs, 1);
	if (r.nrefs)
		CHECK_INT(r.refs[0].line, 8);
	md_result_release(&r);
}

/* ---- hostile inputs: each must return 0 and finish ---- */

static void render_buf(struct buf *b)
{
	struct md_result r = MD_RESULT_INIT;

	CHECK_INT(render_opts(b->ptr, b->len, &r, "", 1, NULL), 0);
	CHECK(r.html.len > 0 || b->len == 0);
	md_result_release(&r);
}

static void repeat(struct buf *b, const char *s, size_t n)
{
	size_t len = strlen(s), i;

	buf_grow(b, len * n);
	for (i = 0; i < n; i++)
		buf_add(b, s, len);
}

static void test_deep_quotes(void)
{
	struct buf b = BUF_INIT;

	repeat(&b, ">", 10000);
	buf_adds(&b, " [!note] deep\n");
	repeat(&b, ">", 10000);
	buf_adds(&b, " text [[Note]] #tag\n");
	render_buf(&b);
	buf_release(&b);
}

static void test_deep_lists(void)
{
	struct buf b = BUF_INIT;

	repeat(&b, "- ", 10000);
	buf_adds(&b, "item ^id\n");
	render_buf(&b);
	buf_reset(&b);
	repeat(&b, "1. ", 10000);
	buf_adds(&b, "x\n");
	render_buf(&b);
	buf_release(&b);
}

/* 50 MB of a realistic section, like the PowerShell notes in the corpus. */
static void test_huge_note(void)
{
	static const char section[] =
		"## Working with remote sessions\n\n"
		"A remote session lets you run commands on another computer as if you were "
		"sitting at it. Use [[New-PSSession]] to create one, then pass it to "
		"[[Invoke-Command|`Invoke-Command`]] with the `-Session` parameter. Sessions "
		"persist until you close them, so variables you define stay available between "
		"calls. See [[Note#Persistent sessions]] for the details and #powershell/remoting "
		"for related notes.\n\n"
		"When the target computer is in another domain, you may need to add it to the "
		"*TrustedHosts* list first. The list is a comma-separated string; wildcards are "
		"allowed, which is convenient but ==weakens the protection== that Kerberos "
		"authentication would otherwise give you. The cost of a connection is about "
		"$t = t_0 + n \\cdot c$ for $n$ commands. %%check the numbers%%\n\n"
		"- Create the session once ^create-once\n"
		"- Reuse it for every command\n"
		"- [ ] Close it with [[Remove-PSSession]] when done\n\n"
		"> [!note] Credentials\n"
		"> Pass a `PSCredential` object rather than a plain password; the cmdlet will "
		"prompt when you omit it.\n\n"
		"![[Note#Examples]]\n\n"
		"| Parameter | Meaning |\n|---|:-:|\n| `-Session` | [[image.png\\|the session]] |\n\n"
		"```powershell\n$s = New-PSSession -ComputerName Server01\n"
		"Invoke-Command -Session $s -ScriptBlock { Get-Process }\n```\n\n";
	struct buf b = BUF_INIT;
	struct md_result r = MD_RESULT_INIT;
	size_t n = 50 * 1024 * 1024 / (sizeof(section) - 1) + 1;

	repeat(&b, section, n);
	CHECK(b.len >= 50 * 1024 * 1024);
	CHECK_INT(render_opts(b.ptr, b.len, &r, "", 1, NULL), 0);
	CHECK_INT(r.nheadings, n);
	CHECK_INT(r.nsplices, n);
	CHECK_INT(r.nblocks, n);
	CHECK_INT(r.nrefs, 6 * n);
	CHECK_INT(r.ntags, 1);
	/* the section is 24 lines; its last reference is on line 18 */
	if (r.nrefs == 6 * n)
		CHECK_INT(r.refs[6 * n - 1].line, (n - 1) * 24 + 18);
	if (r.nheadings == n) {
		char want[64];

		snprintf(want, sizeof(want), "working-with-remote-sessions-%zu", n - 1);
		CHECK_STR(r.headings[n - 1].id, want);
	}
	md_result_release(&r);
	buf_release(&b);
}

static void test_brackets(void)
{
	struct buf b = BUF_INIT;

	repeat(&b, "[[", 200000);
	buf_adds(&b, "x|");
	repeat(&b, "]]", 1000);
	buf_addc(&b, '\n');
	repeat(&b, "![[a|", 50000);
	buf_addc(&b, '\n');
	repeat(&b, "]]", 100000);
	buf_addc(&b, '\n');
	render_buf(&b);
	buf_release(&b);
}

static void test_unterminated(void)
{
	struct buf b = BUF_INIT;

	repeat(&b, "$$ a ", 100000);
	buf_addc(&b, '\n');
	repeat(&b, "$a ", 100000);
	buf_addc(&b, '\n');
	repeat(&b, "`` x ` ", 50000);
	buf_addc(&b, '\n');
	repeat(&b, "= ==a ", 50000);
	buf_addc(&b, '\n');
	render_buf(&b);
	buf_reset(&b);
	repeat(&b, "text\n", 1000);
	buf_adds(&b, "%% never closed\n");
	repeat(&b, "[[Note]] $x$\n", 1000);
	render_buf(&b);
	buf_reset(&b);
	repeat(&b, "$$\n", 20001);
	render_buf(&b);
	buf_reset(&b);
	repeat(&b, "```\n> $x$\n", 20000);
	render_buf(&b);
	buf_release(&b);
}

static void test_deep_emphasis(void)
{
	struct buf b = BUF_INIT;

	repeat(&b, "*a **b ==c ", 20000);
	repeat(&b, "#t ", 20000);
	buf_addc(&b, '\n');
	repeat(&b, "_", 50000);
	buf_adds(&b, "x");
	repeat(&b, "_", 50000);
	buf_addc(&b, '\n');
	repeat(&b, "[", 50000);
	repeat(&b, "](", 50000);
	buf_addc(&b, '\n');
	render_buf(&b);
	buf_release(&b);
}

/*
 * Rendering on several threads at once gives the same bytes as on one.
 * cmark-gfm shares its inline trigger table between parsers; without the
 * lock around its inline pass, autolinks vanished now and then when two
 * notes finished parsing together.
 */
struct race {
	const char *src;
	const char *want;
	int bad;
};

static void *race_worker(void *arg)
{
	struct race *r = arg;
	int i;

	for (i = 0; i < 300; i++) {
		struct md_result res = MD_RESULT_INIT;
		if (render_opts(r->src, strlen(r->src), &res, "", 1, NULL) != 0 ||
		    strcmp(res.html.ptr, r->want) != 0)
			r->bad++;
		md_result_release(&res);
	}
	return NULL;
}

/* ---- the table guard (markdown-int.h) ---- */

static size_t count_of(const struct buf *b, const char *needle)
{
	size_t n = 0, len = strlen(needle);
	const char *q = b->ptr, *end = b->ptr + b->len;

	while ((q = memmem(q, (size_t)(end - q), needle, len))) {
		n++;
		q += len;
	}
	return n;
}

/* A row of n cells of text c, or a delimiter row when c is "-". */
static void table_row(struct buf *b, const char *lead, size_t n, const char *c)
{
	size_t i;

	buf_adds(b, lead);
	for (i = 0; i < n; i++) {
		buf_addc(b, '|');
		buf_adds(b, c);
	}
	buf_adds(b, "|\n");
}

static void render_guarded(const struct buf *b, struct md_result *r, int first_line)
{
	*r = (struct md_result)MD_RESULT_INIT;
	CHECK_INT(render_opts(b->ptr, b->len, r, "", first_line, NULL), 0);
}

static void test_table_guard(void)
{
	struct buf b = BUF_INIT, plain = BUF_INIT;
	struct md_result r, r2;
	size_t i;

	/* 256 columns: a table, as GFM has it, and nothing to say */
	table_row(&b, "", 256, "h");
	table_row(&b, "", 256, "-");
	table_row(&b, "", 256, "c");
	render_guarded(&b, &r, 1);
	CHECK_INT(count_of(&r.html, "<th>"), 256);
	CHECK_INT(count_of(&r.html, "<td>"), 256);
	CHECK_INT(r.nwarnings, 0);
	md_result_release(&r);

	/* 257 columns: text, showing the delimiter row as written, and a warning on its line */
	buf_reset(&b);
	buf_adds(&b, "intro\n\n");
	table_row(&b, "", 257, "h");
	table_row(&b, "", 257, "-");
	table_row(&b, "", 257, "c");
	render_guarded(&b, &r, 10);
	CHECK(!strstr(r.html.ptr, "<table"));
	CHECK(strstr(r.html.ptr, "|-|-|-|") != NULL);
	CHECK(!strstr(r.html.ptr, "\\"));
	CHECK_INT(r.nwarnings, 1);
	if (r.nwarnings) {
		CHECK_INT(r.warnings[0].line, 13);
		CHECK(strstr(r.warnings[0].msg, "257 columns") != NULL);
	}
	md_result_release(&r);

	/* the same in a quote */
	buf_reset(&b);
	table_row(&b, "> ", 300, "h");
	table_row(&b, "> ", 300, "-");
	render_guarded(&b, &r, 1);
	CHECK(strstr(r.html.ptr, "<blockquote>") && !strstr(r.html.ptr, "<table"));
	CHECK_INT(r.nwarnings, 1);
	md_result_release(&r);

	/* a row of 300 pipes in a 2-column table: the table stays, with its two cells */
	buf_reset(&b);
	buf_adds(&b, "| a | b |\n|---|---|\n");
	table_row(&b, "", 300, "x");
	table_row(&b, "", 300, "y");
	buf_adds(&b, "| c | d |\n");
	render_guarded(&b, &r, 1);
	CHECK_INT(count_of(&r.html, "<tr>"), 4);
	CHECK_INT(count_of(&r.html, "<td>"), 6);
	CHECK_INT(count_of(&r.html, "<td>x</td>"), 2);
	CHECK_INT(r.nwarnings, 1); /* once a table */
	if (r.nwarnings) {
		CHECK_INT(r.warnings[0].line, 3);
		CHECK(strstr(r.warnings[0].msg, "301 pipes") != NULL);
	}
	md_result_release(&r);

	/* escaped pipes split no cells, and are not counted */
	buf_reset(&b);
	buf_adds(&b, "| a | b |\n|---|---|\n| ");
	for (i = 0; i < 400; i++)
		buf_adds(&b, "\\|");
	buf_adds(&b, " | d |\n");
	render_guarded(&b, &r, 1);
	CHECK_INT(count_of(&r.html, "<td>"), 2);
	CHECK_INT(r.nwarnings, 0);
	md_result_release(&r);

	/* many pipes outside a table: the paragraph as it was, with no guard */
	buf_reset(&b);
	buf_adds(&b, "text ");
	table_row(&b, "", 1000, "p");
	render_guarded(&b, &r, 1);
	CHECK(!strstr(r.html.ptr, "\\"));
	CHECK_INT(count_of(&r.html, "|"), 1001);
	CHECK_INT(r.nwarnings, 0);
	md_result_release(&r);

	/* short rows under a wide header: padded, up to the note's budget of cells */
	buf_reset(&b);
	table_row(&b, "", 256, "h");
	table_row(&b, "", 256, "-");
	for (i = 0; i < 100; i++)
		buf_adds(&b, "x\n");
	render_guarded(&b, &r, 1);
	CHECK_INT(count_of(&r.html, "<td>"), 256 * 100);
	CHECK_INT(r.nwarnings, 0);
	md_result_release(&r);
	for (i = 100; i < 3000; i++)
		buf_adds(&b, "x\n");
	render_guarded(&b, &r, 1);
	CHECK(!strstr(r.html.ptr, "<table"));
	CHECK_INT(r.nwarnings, 1);
	if (r.nwarnings)
		CHECK(strstr(r.warnings[0].msg, "cells") != NULL);
	md_result_release(&r);

	/* in fenced and indented code, nothing changes */
	buf_reset(&b);
	buf_adds(&b, "```\n");
	table_row(&b, "", 300, "h");
	table_row(&b, "", 300, "-");
	table_row(&b, "", 300, "c");
	buf_adds(&b, "```\n\n    a|b\n");
	table_row(&b, "    ", 300, "-");
	render_guarded(&b, &r, 1);
	CHECK(!strstr(r.html.ptr, "\\"));
	CHECK_INT(count_of(&r.html, "|-|"), 150 + 150);
	CHECK_INT(r.nwarnings, 0);
	md_result_release(&r);

	/*
	 * Guarded or not, the same HTML where the guard has nothing to do:
	 * a table that passes next to one that does not.
	 */
	buf_reset(&b);
	buf_adds(&b, "| a | b |\n|:--|--:|\n| 1 | 2 |\n\n");
	buf_add(&plain, b.ptr, b.len);
	table_row(&b, "", 400, "h");
	table_row(&b, "", 400, "-");
	render_guarded(&b, &r, 1);
	render_guarded(&plain, &r2, 1);
	CHECK(r.html.len > r2.html.len && !memcmp(r.html.ptr, r2.html.ptr, r2.html.len));
	md_result_release(&r);
	md_result_release(&r2);
	buf_release(&plain);
	buf_release(&b);
}

/*
 * Obsidian's default ("Strict line breaks" off): a single newline in a
 * paragraph is a line break, as cmark's HARDBREAKS writes it; in a
 * paragraph of embeds alone, nothing, as without it.
 */
static void test_hard_breaks(void)
{
	static const char src[] = "one\ntwo\\\nthree\n\n> quoted\n> lines\n\n![[image.png]]\n![[image.png]]\n";
	struct md_options opt = { resolve_fake, NULL, "", 1, 1, 0, 0 };
	struct md_result r = MD_RESULT_INIT;

	CHECK_INT(md_render(src, strlen(src), &opt, &r), 0);
	CHECK_STR(r.html.ptr, "<p>one<br />\ntwo<br />\nthree</p>\n<blockquote>\n<p>quoted<br />\nlines</p>\n"
			      "</blockquote>\n<img src=\"/image.png\" alt=\"image.png\" />\n"
			      "<img src=\"/image.png\" alt=\"image.png\" />\n");
	CHECK_STR(r.summary, "one two three");
	md_result_release(&r);
}

static void test_threads(void)
{
	static const char src[] = "See https://example.com/a and www.example.org, mail x@example.com.\n\n"
				  "| a | b |\n|---|---|\n| ~~s~~ | https://e.com |\n\n- [ ] task [[Note]]\n";
	struct md_result one = MD_RESULT_INIT;
	struct race r[4];
	pthread_t t[4];
	int i;

	CHECK_INT(render_opts(src, strlen(src), &one, "", 1, NULL), 0);
	CHECK(strstr(one.html.ptr, "<a href=\"https://example.com/a\">") != NULL);
	for (i = 0; i < 4; i++) {
		r[i].src = src;
		r[i].want = one.html.ptr;
		r[i].bad = 0;
		pthread_create(&t[i], NULL, race_worker, &r[i]);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK_INT(r[i].bad, 0);
	}
	md_result_release(&one);
}

/* test-markdown --render < note.md: the HTML, for writing new examples. */
static int render_stdin(void)
{
	struct md_result r = MD_RESULT_INIT;
	struct buf in = BUF_INIT;
	char chunk[65536];
	size_t n;

	while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
		buf_add(&in, chunk, n);
	if (render_opts(in.ptr, in.len, &r, "", 1, NULL) == 0)
		fwrite(r.html.ptr, 1, r.html.len, stdout);
	md_result_release(&r);
	buf_release(&in);
	return 0;
}

/* The highlighted HTML of one fenced block (the note body "```lang\n" code "```"), or "". */
static char *highlighted(const char *lang, const char *code)
{
	struct md_options opt;
	struct md_result r = MD_RESULT_INIT;
	struct buf md = BUF_INIT;
	char *out;

	memset(&opt, 0, sizeof(opt));
	opt.url_prefix = "";
	opt.first_line = 1;
	opt.highlight = 1;
	buf_addf(&md, "```%s\n%s```\n", lang, code);
	out = md_render(md.ptr, md.len, &opt, &r) == 0 ? xstrdup(r.html.ptr) : xstrdup("");
	md_result_release(&r);
	buf_release(&md);
	return out;
}

/* The text of html's <code> element with the highlighter's spans taken out: what was escaped. */
static char *unspanned(const char *html)
{
	const char *p = strstr(html, "<code"), *end = strstr(html, "</code>");
	struct buf b = BUF_INIT;

	if (!p || !end)
		return xstrdup("");
	p = strchr(p, '>') + 1;
	while (p < end) {
		if (!strncmp(p, "<span class=\"hl-", 16)) {
			p = strchr(p, '>') + 1;
		} else if (!strncmp(p, "</span>", 7)) {
			p += 7;
		} else {
			buf_addc(&b, *p++);
		}
	}
	return buf_detach(&b, NULL);
}

/* Whether highlighting code as lang only added spans around its escaped text. */
static int only_spans(const char *lang, const char *code, const char *html)
{
	struct buf want = BUF_INIT;
	char *got = unspanned(html);
	int ok;

	buf_add_html(&want, code, strlen(code));
	ok = strcmp(got, want.ptr) == 0;
	if (!ok)
		fprintf(stderr, "  %s: the text changed:\n%s\n  against\n%s\n", lang, got, want.ptr);
	free(got);
	buf_release(&want);
	return ok;
}

static int has_all(const char *html, const char *const *want)
{
	int ok = 1;

	for (; *want; want++) {
		if (!strstr(html, *want)) {
			fprintf(stderr, "  missing %s in:\n%s\n", *want, html);
			ok = 0;
		}
	}
	return ok;
}

/*
 * Code blocks in the shared corpora's languages come out with their tokens
 * in spans, HTML-escaped; an unknown language, or highlight off, stays
 * plain; unclosed strings, comments and tags end at the block's end.
 */
static void test_highlight(void)
{
	static const struct {
		const char *lang, *code;
		const char *want[9];
	} cases[] = {
		{ "powershell",
		  "# list\nGet-ChildItem -Path $env:TEMP | Where-Object { $_.Length -gt 1KB }\n"
		  "[string]$s = \"a `\"b`\" $x\"; foreach ($i in 1..3) { $true }\n<# block #>\n",
		  { "<span class=\"hl-c\"># list</span>", "<span class=\"hl-f\">Get-ChildItem</span>",
		    "<span class=\"hl-a\">-Path</span>", "<span class=\"hl-v\">$env:TEMP</span>",
		    "<span class=\"hl-t\">string</span>", "<span class=\"hl-k\">foreach</span>",
		    "<span class=\"hl-l\">$true</span>", "<span class=\"hl-c\">&lt;# block #&gt;</span>" } },
		{ "ps1", "$h = @'\nhere 'string'\n'@\nWrite-Output $h\n",
		  { "<span class=\"hl-s\">@'\nhere 'string'\n'@</span>",
		    "<span class=\"hl-f\">Write-Output</span>", NULL } },
		{ "bash", "# comment\nfor f in *.md; do echo \"$f\" 'raw $x'; done # end\necho a#b\n",
		  { "<span class=\"hl-c\"># comment</span>", "<span class=\"hl-k\">for</span>",
		    "<span class=\"hl-s\">&quot;$f&quot;</span>", "<span class=\"hl-s\">'raw $x'</span>",
		    "<span class=\"hl-k\">done</span>", "<span class=\"hl-c\"># end</span>", "a#b", NULL } },
		{ "csharp", "// note\nusing System;\npublic class A { string s = @\"C:\\x\"\"\"; int n = 0x1F; }\n",
		  { "<span class=\"hl-c\">// note</span>", "<span class=\"hl-k\">using</span>",
		    "<span class=\"hl-k\">class</span>", "<span class=\"hl-s\">@&quot;C:\\x&quot;&quot;&quot;</span>",
		    "<span class=\"hl-n\">0x1F</span>", NULL } },
		{ "c", "#include <stdio.h>\nint main(void) { return printf(\"%d\\n\", 42); /* x */ }\n",
		  { "<span class=\"hl-m\">#include &lt;stdio.h&gt;</span>", "<span class=\"hl-k\">int</span>",
		    "<span class=\"hl-f\">printf</span>", "<span class=\"hl-s\">&quot;%d\\n&quot;</span>",
		    "<span class=\"hl-n\">42</span>", "<span class=\"hl-c\">/* x */</span>", NULL } },
		{ "js", "const x = `t ${a}`; // c\nif (x === null) fetch('/u');\n",
		  { "<span class=\"hl-k\">const</span>", "<span class=\"hl-s\">`t ${a}`</span>",
		    "<span class=\"hl-l\">null</span>", "<span class=\"hl-f\">fetch</span>",
		    "<span class=\"hl-s\">'/u'</span>", NULL } },
		{ "python", "@cache\ndef f(x=None):\n    \"\"\"doc\n    string\"\"\"\n    return 1.5e3  # c\n",
		  { "<span class=\"hl-m\">@cache</span>", "<span class=\"hl-k\">def</span>",
		    "<span class=\"hl-f\">f</span>", "<span class=\"hl-l\">None</span>",
		    "<span class=\"hl-s\">&quot;&quot;&quot;doc\n    string&quot;&quot;&quot;</span>",
		    "<span class=\"hl-n\">1.5e3</span>", "<span class=\"hl-c\"># c</span>", NULL } },
		{ "json", "{\"name\": \"quire\", \"n\": -1.5, \"ok\": true, \"v\": null}\n",
		  { "<span class=\"hl-a\">&quot;name&quot;</span>", "<span class=\"hl-s\">&quot;quire&quot;</span>",
		    "<span class=\"hl-n\">-1.5</span>", "<span class=\"hl-l\">true</span>",
		    "<span class=\"hl-l\">null</span>", NULL } },
		{ "yaml", "---\ntitle: \"Home\" # c\ntags:\n  - a\ncount: 3\ndraft: false\nref: *anchor\n",
		  { "<span class=\"hl-m\">---</span>", "<span class=\"hl-a\">title</span>",
		    "<span class=\"hl-s\">&quot;Home&quot;</span>", "<span class=\"hl-c\"># c</span>",
		    "<span class=\"hl-n\">3</span>", "<span class=\"hl-l\">false</span>",
		    "<span class=\"hl-v\">*anchor</span>", NULL } },
		{ "xml", "<?xml version=\"1.0\"?>\n<!-- c -->\n<a href=\"x\">&amp; t</a>\n",
		  { "<span class=\"hl-m\">&lt;?xml version=&quot;1.0&quot;?&gt;</span>",
		    "<span class=\"hl-c\">&lt;!-- c --&gt;</span>", "<span class=\"hl-g\">a</span>",
		    "<span class=\"hl-a\">href</span>", "<span class=\"hl-s\">&quot;x&quot;</span>",
		    "<span class=\"hl-l\">&amp;amp;</span>", NULL } },
		{ "css", "/* c */\n@media print { body { color: #fff; margin: 0.5em } }\n",
		  { "<span class=\"hl-c\">/* c */</span>", "<span class=\"hl-k\">@media</span>",
		    "<span class=\"hl-a\">color</span>", "<span class=\"hl-n\">#fff</span>",
		    "<span class=\"hl-n\">0.5em</span>", NULL } },
		{ "sql", "SELECT name FROM notes WHERE title = 'it''s' -- c\n",
		  { "<span class=\"hl-k\">SELECT</span>", "<span class=\"hl-k\">FROM</span>",
		    "<span class=\"hl-s\">'it''s'</span>", "<span class=\"hl-c\">-- c</span>", NULL } },
	};
	static const char *const unclosed[] = { "powershell", "bash", "c", "js", "python", "json",
		"yaml", "xml", "css", "sql" };
	size_t i;
	char *h;

	for (i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		h = highlighted(cases[i].lang, cases[i].code);
		if (!has_all(h, cases[i].want) || !only_spans(cases[i].lang, cases[i].code, h)) {
			fprintf(stderr, "  (%s)\n", cases[i].lang);
			test_current_failed = 1;
		}
		free(h);
	}
	/* unknown languages and no language: plain, escaped */
	h = highlighted("brainfuck", "<x> \"y\"\n");
	CHECK(strstr(h, "<code class=\"language-brainfuck\">&lt;x&gt; &quot;y&quot;\n</code>") &&
	      !strstr(h, "<span"));
	free(h);
	h = highlighted("", "<x> # y\n");
	CHECK(strstr(h, "<code>&lt;x&gt; # y\n</code>") && !strstr(h, "<span"));
	free(h);
	/* unclosed: no hang, everything kept, nothing unescaped */
	for (i = 0; i < sizeof(unclosed) / sizeof(*unclosed); i++) {
		h = highlighted(unclosed[i], "a \"b <c '/* <!-- `x @' [d\n$\n");
		CHECK(only_spans(unclosed[i], "a \"b <c '/* <!-- `x @' [d\n$\n", h));
		free(h);
	}
}

int main(int argc, char **argv)
{
	static const char *const specs[] = { "commonmark-basics.txt", "wikilinks.txt", "embeds.txt",
					     "callouts.txt", "highlight-comments.txt", "tags.txt",
					     "math.txt", "headings-blocks.txt", "tasks.txt", "footnotes.txt", "raw-html.txt" };
	size_t i;

	md_global_init();
	if (argc > 1 && !strcmp(argv[1], "--render"))
		return render_stdin();
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		run_spec(specs[i]);
	RUN(test_refs);
	RUN(test_ref_label_nodes);
	RUN(test_ref_lines);
	RUN(test_no_resolver);
	RUN(test_splices);
	RUN(test_headings);
	RUN(test_blocks);
	RUN(test_tags);
	RUN(test_summary);
	RUN(test_text);
	RUN(test_heading_id);
	RUN(test_release);
	RUN(test_empty_and_crlf);
	RUN(test_deep_quotes);
	RUN(test_deep_lists);
	RUN(test_huge_note);
	RUN(test_brackets);
	RUN(test_unterminated);
	RUN(test_deep_emphasis);
	RUN(test_table_guard);
	RUN(test_hard_breaks);
	RUN(test_threads);
	RUN(test_highlight);
	return test_done();
}
