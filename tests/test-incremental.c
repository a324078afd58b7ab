/*
 * test-incremental.c: incremental equals full (invariant 1).
 *
 * A copy of a real vault goes through a seeded random sequence of edits:
 * bodies, titles, links added and removed, embeds of notes and sections,
 * tags, aliases, slugs, publish flags, drafts, notes added, deleted and
 * renamed, attachments added and removed, folders deleted. After each
 * step the site that followed the edits through site_apply() must hold a
 * snapshot byte-identical, page by page, to a site loaded from scratch on
 * the same files, and the same diagnostics (what `quire check` says).
 *
 * test_fragments_from_pages() takes fixed steps that compose pages again
 * without rendering their notes, so that fragments are read back from
 * the pages that hold them (render.c): sections, blocks, embeds of embeds,
 * cycles.
 *
 * The sequence runs on vault-sample (in the repository) and on the two
 * vaults of the shared corpus, each of those skipped with a line saying
 * so when ../shared/corpus is not beside the checkout.
 *
 * Environment: QUIRE_STEPS (default 40 per vault), QUIRE_SEED (default 1),
 * QUIRE_VAULTS ("sample", "tasks", "pwsh" or "all", default all; CI runs
 * the default, the benchmark suite runs 1,000 steps on pwsh).
 */
#include "lib/edits.h"

#include "lib/tv.h"
#include "markdown/markdown.h"
#include "site/site.h"
#include "lib/test.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * With gzip_later (as the server runs), changed pages are served before
 * they are compressed: each step's snapshot must equal a fresh load's
 * before site_gzip_pending() as after it; two steps of three compress
 * (so pages wait across applies, and some are replaced before their
 * turn), and after compressing no page lacks gzip bytes a fresh load has.
 */
/*
 * Notes whose page, or fragment, is not the page in the table: after
 * site_gzip_pending() a note must hold the compressed page, or it keeps
 * the uncompressed bytes alive beside it.
 */
static size_t stale_note_pages(const struct site *s)
{
	size_t i, bad = 0;

	for (i = 0; i < s->nnotes; i++) {
		const struct site_note *n = s->notes[i];
		const struct page *cur = n->url ? map_gets(&s->pages, n->url) : NULL;
		if (!n->page || cur != n->page || (n->frag.page && n->frag.page != cur)) {
			if (n->page && bad++ < 3)
				fprintf(stderr, "  note %s: holds a page that is not its URL's\n",
					n->note.path);
		}
	}
	return bad;
}

/*
 * Diagnostics in inc that a fresh load does not have, or the other way
 * round (both sorted first), printing the first few: `quire check` on a
 * running server must say what it says after a restart.
 */
static size_t compare_diags(struct site *inc, struct site *full)
{
	size_t i = 0, j = 0, bad = 0;

	diag_sort(&inc->diags);
	diag_sort(&full->diags);
	while (i < inc->diags.n || j < full->diags.n) {
		const struct diag *a = i < inc->diags.n ? &inc->diags.items[i] : NULL;
		const struct diag *b = j < full->diags.n ? &full->diags.items[j] : NULL;
		int c = !a ? 1 : !b ? -1 : strcmp(a->path, b->path);

		if (!c)
			c = a->line != b->line ? (a->line < b->line ? -1 : 1) : strcmp(a->msg, b->msg);
		if (!c && a->level == b->level) {
			i++, j++;
			continue;
		}
		if (bad++ < 3)
			fprintf(stderr, "  diagnostic only in the %s site: %s:%d: %s\n",
				c <= 0 ? "incremental" : "fresh", c <= 0 ? a->path : b->path,
				c <= 0 ? a->line : b->line, c <= 0 ? a->msg : b->msg);
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
	}
	return bad;
}

static void run(const char *corpus_name, const char *src, unsigned steps, uint64_t seed,
		int gzip_later)
{
	char *root = tv_new();
	struct files files = { NULL, 0 };
	struct site_options so = { .threads = 2 };
	struct snapshot *snap;
	struct site *inc;
	unsigned i;
	size_t rendered = 0;

	rng_state = seed;
	CHECK(tv_copy(src, root) == 0);
	/* with a base_url, so that sitemaps and feeds are built and compared too */
	tv_write(root, "quire.yml",
		 "title: Property test\nbase_url: https://example.org/notes\n"
		 "hosts:\n  open.example.com: {open: true, title: Open host}\n");
	inc = site_load(root, &so);
	CHECK(inc != NULL);
	if (!inc)
		goto out;
	snap = site_snapshot(inc, NULL);
	inc->gzip_later = gzip_later;
	for (i = 0; i < steps; i++) {
		struct step st = { 0 };
		struct snapshot *next, *full_snap;
		struct site *full;
		size_t diffs;

		list_files(root, &files);
		edit(root, &files, &st, i);
		site_apply(inc, (const char *const *)st.paths, st.npaths);
		rendered += inc->nrendered;
		next = site_snapshot(inc, snap);
		snapshot_unref(snap);
		snap = next;
		full = site_load(root, &so);
		full_snap = site_snapshot(full, NULL);
		diffs = compare(snap, full_snap) + compare_diags(inc, full);
		if (!diffs && gzip_later && (i % 3 != 1 || i + 1 == steps)) {
			site_gzip_pending(inc);
			next = site_snapshot(inc, snap);
			snapshot_unref(snap);
			snap = next;
			diffs = compare(snap, full_snap) + compare_gzip(snap, full_snap) +
				stale_note_pages(inc);
		}
		if (diffs)
			step_failed(corpus_name, i, &st, diffs);
		snapshot_unref(full_snap);
		site_free(full);
		step_release(&st);
		if (diffs)
			break;
	}
	fprintf(stderr, "  %s: %u steps, %zu notes rendered incrementally (%.1f per step) of %zu; "
		"%zu hosts with routes at the end\n",
		corpus_name, i, rendered, i ? (double)rendered / i : 0.0, inc->nnotes,
		snap->hosts ? snap->hosts->by_name.len : 0);
	snapshot_unref(snap);
	site_free(inc);
out:
	files_release(&files);
	tv_remove(root);
}

static unsigned steps_env(void)
{
	const char *s = getenv("QUIRE_STEPS");
	return s ? (unsigned)strtoul(s, NULL, 10) : 40;
}

static uint64_t seed_env(void)
{
	const char *s = getenv("QUIRE_SEED");
	return s ? strtoull(s, NULL, 10) : 1;
}

/* Applies one changed path to inc, and compares its next snapshot with a fresh load. */
static void step_paths(struct site *inc, struct snapshot **snap, const char *root,
		       const char *const *paths, size_t npaths, const char *what)
{
	struct site_options so = { .threads = 2 };
	struct snapshot *next, *full_snap;
	struct site *full;
	size_t diffs;
	const char *path = paths[0];

	site_apply(inc, paths, npaths);
	next = site_snapshot(inc, *snap);
	snapshot_unref(*snap);
	*snap = next;
	full = site_load(root, &so);
	full_snap = site_snapshot(full, NULL);
	diffs = compare(*snap, full_snap) + compare_diags(inc, full);
	if (diffs) {
		fprintf(stderr, "fragments: %s (%s): %zu pages or diagnostics differ\n", what, path,
			diffs);
		test_current_failed = 1;
	}
	snapshot_unref(full_snap);
	site_free(full);
}

static void step(struct site *inc, struct snapshot **snap, const char *root, const char *path,
		 const char *what)
{
	step_paths(inc, snap, root, &path, 1, what);
}

/* Whether the page at url in snap holds text. */
static int page_has(const struct snapshot *snap, const char *url, const char *text)
{
	struct page *p = snapshot_get(snap, url, strlen(url));
	return p && strstr(page_bytes(p), text) != NULL;
}

/*
 * A fragment holds no URL of what it links to (markdown.h, url_slots):
 * when a target moves, the pages linking to it, and the pages embedding
 * those, are composed again with its new URL, and nothing is read or
 * rendered again: not even the moved note, which keeps its fragment
 * (src/site/moves.c). A URL changed by a slug renders the note whose
 * frontmatter changed, and only it.
 */
static void test_links_follow_moves(void)
{
	char *root = tv_new();
	struct site_options so = { .threads = 2 };
	struct snapshot *snap;
	struct site *inc;
	const char *move_note[] = { "T.md", "sub/T.md" };
	const char *move_file[] = { "img.png", "media/img.png" };

	tv_write(root, "T.md", "# T\n\n## Part\n\nTarget text.\n");
	tv_write(root, "L.md", "# L\n\n## Links\n\nSee [[T]], [[T#Part]] and [t](T.md), "
			       "![[img.png]].\n");
	tv_write(root, "E.md", "Embeds: ![[L#Links]]\n");
	tv_write(root, "img.png", "\x89PNG\r\n");
	page_keep_identity(0);
	inc = site_load(root, &so);
	snap = site_snapshot(inc, NULL);
	CHECK(page_has(snap, "/l", "href=\"/t\"") && page_has(snap, "/l", "href=\"/t#part\""));

	tv_unlink(root, "T.md");
	tv_write(root, "sub/T.md", "# T\n\n## Part\n\nTarget text.\n");
	step_paths(inc, &snap, root, move_note, 2, "a linked note moved");
	CHECK_INT(inc->nrendered, 0); /* T moved in place; L and E only composed */
	CHECK(page_has(snap, "/l", "href=\"/sub/t\"") &&
	      page_has(snap, "/l", "href=\"/sub/t#part\"") && !page_has(snap, "/l", "href=\"/t"));
	CHECK(page_has(snap, "/e", "href=\"/sub/t#part\""));
	CHECK(page_has(snap, "/sub/t", "href=\"/l\"")); /* its backlink */

	tv_write(root, "sub/T.md", "---\nslug: elsewhere\n---\n# T\n\n## Part\n\nTarget text.\n");
	step(inc, &snap, root, "sub/T.md", "a linked note's URL changed by its slug");
	CHECK_INT(inc->nrendered, 1);
	CHECK(page_has(snap, "/l", "href=\"/sub/elsewhere#part\"") &&
	      page_has(snap, "/e", "href=\"/sub/elsewhere\""));

	tv_unlink(root, "img.png");
	tv_write(root, "media/img.png", "\x89PNG\r\n");
	step_paths(inc, &snap, root, move_file, 2, "an embedded attachment moved");
	CHECK_INT(inc->nrendered, 0);
	CHECK(page_has(snap, "/l", "src=\"/media/img.png\"") && page_has(snap, "/e", "/media/img.png"));
	CHECK(snapshot_get(snap, "/img.png", 8) == NULL);

	tv_unlink(root, "sub/T.md");
	step(inc, &snap, root, "sub/T.md", "a linked note deleted: its links render as broken");
	CHECK_INT(inc->nrendered, 1);
	CHECK(!page_has(snap, "/l", "/sub/elsewhere"));
	page_keep_identity(1);
	snapshot_unref(snap);
	site_free(inc);
	tv_remove(root);
}

/*
 * An alias never takes the URL a tag page takes ("tags/bar"): /tags/ is
 * reserved (issue 31), so the tag page comes and goes with the tag and no
 * redirect stands there before, between or after, as in a full load.
 */
static void test_alias_under_tag_page(void)
{
	char *root = tv_new();
	struct site_options so = { .threads = 2 };
	struct snapshot *snap;
	struct site *inc;
	struct page *p;

	tv_write(root, "N.md", "---\naliases: [tags/bar]\n---\nN\n");
	tv_write(root, "T.md", "Untagged.\n");
	inc = site_load(root, &so);
	snap = site_snapshot(inc, NULL);
	CHECK(snapshot_get(snap, "/tags/bar", 9) == NULL);

	tv_write(root, "T.md", "Now #bar.\n");
	step(inc, &snap, root, "T.md", "a tag takes the URL an alias names");
	p = snapshot_get(snap, "/tags/bar", 9);
	CHECK(p && p->kind == PAGE_GENERATED);

	tv_write(root, "T.md", "Untagged again.\n");
	step(inc, &snap, root, "T.md", "the tag goes: the alias does not take its URL");
	CHECK(snapshot_get(snap, "/tags/bar", 9) == NULL);
	snapshot_unref(snap);
	site_free(inc);
	tv_remove(root);
}

/*
 * A Mermaid node of class internal-link links to the note it names
 * (src/markdown/links.c): the link follows the note when it moves, goes
 * when the note goes, and comes when a note of that name appears, each
 * step equal to a full load.
 */
static void test_diagram_links(void)
{
	char *root = tv_new();
	struct site_options so = { .threads = 2 };
	struct snapshot *snap;
	struct site *inc;
	const char *move_note[] = { "Biology.md", "sci/Biology.md" };

	tv_write(root, "Biology.md", "Cells.\n");
	tv_write(root, "D.md", "```mermaid\ngraph TD\n  A[Biology] --> B[Chemistry]\n"
			       "  class A,B internal-link;\n```\n");
	inc = site_load(root, &so);
	snap = site_snapshot(inc, NULL);
	CHECK(page_has(snap, "/d", "<a class=\"internal\" href=\"/biology\" data-node=\"Biology\">"));
	CHECK(!page_has(snap, "/d", "data-node=\"Chemistry\""));
	CHECK(page_has(snap, "/biology", "href=\"/d\"")); /* listed as a backlink */
	CHECK_INT(inc->diags.nwarnings, 0);                  /* the missing one is said nowhere */

	tv_unlink(root, "Biology.md");
	tv_write(root, "sci/Biology.md", "Cells.\n");
	step_paths(inc, &snap, root, move_note, 2, "a note a diagram links moved");
	CHECK(page_has(snap, "/d", "href=\"/sci/biology\" data-node=\"Biology\""));

	tv_write(root, "Chemistry.md", "Atoms.\n");
	step(inc, &snap, root, "Chemistry.md", "a note a diagram names appeared");
	CHECK(page_has(snap, "/d", "href=\"/chemistry\" data-node=\"Chemistry\""));

	tv_unlink(root, "sci/Biology.md");
	step(inc, &snap, root, "sci/Biology.md", "a note a diagram links deleted");
	CHECK(!page_has(snap, "/d", "data-node=\"Biology\""));
	snapshot_unref(snap);
	site_free(inc);
	tv_remove(root);
}

/* Whether inc has a diagnostic about path whose message holds text. */
static int has_diag(const struct site *inc, const char *path, const char *text)
{
	size_t i;

	for (i = 0; i < inc->diags.n; i++)
		if (!strcmp(inc->diags.items[i].path, path) && strstr(inc->diags.items[i].msg, text))
			return 1;
	return 0;
}

/*
 * [[/Delta]] is the root's Delta from any folder, or broken: never the
 * Delta beside the linking note. The mention index finds the link by its
 * name when the root's Delta appears, goes, moves away and comes back.
 */
static void test_root_links(void)
{
	char *root = tv_new();
	struct site_options so = { .threads = 2 };
	struct snapshot *snap;
	struct site *inc;
	const char *away[] = { "Delta.md", "other/Delta.md" };
	const char *back[] = { "other/Delta.md", "Delta.md" };

	tv_write(root, "sub/Delta.md", "# Near delta\n");
	tv_write(root, "folder/Note.md", "## Heading\n");
	tv_write(root, "image.png", "\x89PNG\r\n");
	tv_write(root, "sub/L.md", "[[/Delta]] [[/folder/Note#Heading|label]] ![[/image.png]] "
				   "[[Delta|near]]\n");
	inc = site_load(root, &so);
	snap = site_snapshot(inc, NULL);
	CHECK(page_has(snap, "/sub/l", "title=\"not found: /Delta\"") &&
	      page_has(snap, "/sub/l", "href=\"/folder/note#heading\">label<") &&
	      page_has(snap, "/sub/l", "src=\"/image.png\"") &&
	      page_has(snap, "/sub/l", "href=\"/sub/delta\">near<"));
	CHECK(has_diag(inc, "sub/L.md", "[[/Delta]] matches no note"));

	tv_write(root, "Delta.md", "# Root delta\n");
	step(inc, &snap, root, "Delta.md", "the root's Delta appears");
	CHECK(page_has(snap, "/sub/l", "href=\"/delta\">/Delta<") &&
	      page_has(snap, "/sub/l", "href=\"/sub/delta\">near<"));
	CHECK(!has_diag(inc, "sub/L.md", "[[/Delta]]"));

	tv_unlink(root, "Delta.md");
	step(inc, &snap, root, "Delta.md", "the root's Delta deleted");
	CHECK(page_has(snap, "/sub/l", "title=\"not found: /Delta\""));
	CHECK(has_diag(inc, "sub/L.md", "[[/Delta]] matches no note"));

	tv_write(root, "Delta.md", "# Root delta\n");
	step(inc, &snap, root, "Delta.md", "the root's Delta back");
	tv_unlink(root, "Delta.md");
	tv_write(root, "other/Delta.md", "# Root delta\n");
	step_paths(inc, &snap, root, away, 2, "the root's Delta moved into a folder");
	CHECK(page_has(snap, "/sub/l", "title=\"not found: /Delta\""));
	CHECK(!page_has(snap, "/sub/l", "href=\"/other/delta\""));

	tv_unlink(root, "other/Delta.md");
	tv_write(root, "Delta.md", "# Root delta\n");
	step_paths(inc, &snap, root, back, 2, "the root's Delta moved back");
	CHECK(page_has(snap, "/sub/l", "href=\"/delta\">/Delta<"));
	snapshot_unref(snap);
	site_free(inc);
	tv_remove(root);
}

/*
 * A link to a heading chain ([[T#Other#Sub]]) goes to that very heading's
 * id, which only T's headings say ("sub-1" when an earlier "Sub" took
 * "sub"); when T is edited the linking page follows.
 */
static void test_heading_chain_ids(void)
{
	char *root = tv_new();
	struct site_options so = { .threads = 2 };
	struct snapshot *snap;
	struct site *inc;

	tv_write(root, "T.md", "## Part\n\n### Sub\n\nA.\n\n## Other\n\n### Sub\n\nB.\n");
	tv_write(root, "L.md", "[[T#Other#Sub|to other]] and [[T#Part#Sub|to part]]\n");
	tv_write(root, "E.md", "![[L]]\n");
	inc = site_load(root, &so);
	snap = site_snapshot(inc, NULL);
	CHECK(page_has(snap, "/l", "href=\"/t#sub-1\">to other") &&
	      page_has(snap, "/l", "href=\"/t#sub\">to part"));
	CHECK(page_has(snap, "/e", "href=\"/t#sub-1\">to other"));

	tv_write(root, "T.md", "## Other\n\n### Sub\n\nB.\n");
	step(inc, &snap, root, "T.md", "the headings of a chain's target changed");
	CHECK(page_has(snap, "/l", "href=\"/t#sub\">to other") && !page_has(snap, "/l", "sub-1"));
	CHECK(page_has(snap, "/e", "href=\"/t#sub\">to other"));
	CHECK_INT(inc->nrendered, 1); /* T; L and E only composed */
	snapshot_unref(snap);
	site_free(inc);
	tv_remove(root);
}

/*
 * A link to a heading or block the target does not have ([[T#Nope]],
 * [t](T.md#missing), [[T#^gone]], [[#Here]]) still goes to the note and
 * is reported; the report follows the target's headings as they come and
 * go, and an edit that leaves them alone composes no linking page.
 */
static void test_missing_headings(void)
{
	char *root = tv_new();
	struct site_options so = { .threads = 2 };
	struct snapshot *snap;
	struct site *inc;

	tv_write(root, "T.md", "# T\n\n## Part\n\nText ^blk\n");
	tv_write(root, "L.md", "[[T#Part]] [[T#Nope|nope]] [t](T.md#missing) [[T#^blk]] "
			       "[[T#^gone]] [[#Here]] [[T#Part#Nope]]\n");
	inc = site_load(root, &so);
	snap = site_snapshot(inc, NULL);
	CHECK(page_has(snap, "/l", "href=\"/t#nope\">nope<") &&
	      page_has(snap, "/l", "href=\"/t#missing\">t<"));
	CHECK(has_diag(inc, "L.md", "missing heading 'Nope' in T.md"));
	CHECK(has_diag(inc, "L.md", "missing heading 'missing' in T.md"));
	CHECK(has_diag(inc, "L.md", "missing block '^gone' in T.md"));
	CHECK(has_diag(inc, "L.md", "missing heading 'Here' in L.md"));
	CHECK(has_diag(inc, "L.md", "missing heading 'Part#Nope' in T.md"));
	CHECK(!has_diag(inc, "L.md", "'Part'") && !has_diag(inc, "L.md", "'^blk'"));
	CHECK_INT(inc->diags.nwarnings, 5);

	tv_write(root, "T.md", "# T\n\n## Part\n\nText ^blk\n\n### Nope\n\n## Missing\n");
	step(inc, &snap, root, "T.md", "the target gains the headings");
	CHECK(!has_diag(inc, "L.md", "'Nope'") && !has_diag(inc, "L.md", "'missing'") &&
	      !has_diag(inc, "L.md", "'Part#Nope'"));
	CHECK_INT(inc->nrendered, 1); /* T; L only composed */

	tv_write(root, "T.md", "# T\n\n## Part\n\nOther text ^blk\n\n### Nope\n\n## Missing\n");
	step(inc, &snap, root, "T.md", "the target's text changes, not its headings");
	CHECK_INT(inc->ncomposed, 1); /* T alone: L's links say the same */

	tv_write(root, "T.md", "# T\n\nText ^gone\n\n### Nope\n");
	step(inc, &snap, root, "T.md", "the target loses a heading and a block, gains a block");
	CHECK(has_diag(inc, "L.md", "missing heading 'Part' in T.md") &&
	      has_diag(inc, "L.md", "missing block '^blk' in T.md") &&
	      !has_diag(inc, "L.md", "'^gone'"));
	snapshot_unref(snap);
	site_free(inc);
	tv_remove(root);
}

static void test_fragments_from_pages(void)
{
	char *root = tv_new();
	struct site_options so = { .threads = 2 };
	struct snapshot *snap;
	struct site *inc;

	tv_write(root, "A.md", "# A\n\nBefore ![[B#Part]] between ![[C#^blk]] and ![[A#Tail]].\n\n"
			       "## Tail\n\nThe end of *A*, then ![[C]].\n");
	tv_write(root, "B.md", "# B\n\n## Part\n\nPart text.\n\n![[C]]\n\nStill part.\n\n"
			       "## Other\n\nNot embedded.\n");
	tv_write(root, "C.md", "Block one ^blk\n\n![[A#Tail]]\n\n![[B]]\n");
	tv_write(root, "D.md", "Links: [[A]], [[B]], [[C]].\n");
	inc = site_load(root, &so);
	snap = site_snapshot(inc, NULL);
	/* backlinks change: A, B and C composed again, each from its page */
	tv_write(root, "D.md", "---\ntitle: Dee\n---\nLinks: [[A]], [[B]], [[C]].\n");
	step(inc, &snap, root, "D.md", "retitle the linking note");
	/* C rendered again; A and B compose from their pages and C's fresh fragment */
	tv_write(root, "C.md", "Block two ^blk\n\n![[A#Tail]]\n\n![[B#Other]]\n");
	step(inc, &snap, root, "C.md", "edit the embedded note");
	tv_write(root, "E.md", "[[A]] [[B]] [[C]] ![[A]]\n");
	step(inc, &snap, root, "E.md", "a new note links and embeds");
	tv_write(root, "D.md", "Links: none.\n");
	step(inc, &snap, root, "D.md", "backlinks withdrawn");
	snapshot_unref(snap);
	site_free(inc);
	tv_remove(root);
}

/*
 * URL groups: notes asking for one URL share it in path order ("-2",
 * "-3"...), and a note asking for a suffixed URL by name takes it from
 * the group. Each step is compared with a fresh load; the URLs are
 * checked too.
 */
static void test_url_groups(void)
{
	char *root = tv_new();
	struct site_options so = { .threads = 1 };
	struct snapshot *snap;
	struct site *inc;

	tv_write(root, "a.md", "A.\n");
	tv_write(root, "x/b.md", "---\nslug: /a\n---\nB.\n");
	tv_write(root, "y/c.md", "---\nslug: /a\n---\nC.\n");
	tv_write(root, "z.md", "[[a]] [[b]] [[c]]\n");
	inc = site_load(root, &so);
	snap = site_snapshot(inc, NULL);
	CHECK_STR(site_find_note(inc, "x/b.md")->url, "/a-2");
	CHECK_STR(site_find_note(inc, "y/c.md")->url, "/a-3");
	/* a note asks for /a-2 by name: it wins it, c moves on */
	tv_write(root, "a-2.md", "Named a-2.\n");
	step(inc, &snap, root, "a-2.md", "a base URL that is a suffix of another");
	CHECK_STR(site_find_note(inc, "a-2.md")->url, "/a-2");
	CHECK_STR(site_find_note(inc, "x/b.md")->url, "/a-3");
	CHECK_STR(site_find_note(inc, "y/c.md")->url, "/a-4");
	/* the first of the group goes: everyone moves up */
	tv_unlink(root, "a.md");
	step(inc, &snap, root, "a.md", "the first of a group leaves");
	CHECK_STR(site_find_note(inc, "x/b.md")->url, "/a");
	CHECK_STR(site_find_note(inc, "y/c.md")->url, "/a-3");
	/* the suffix's owner leaves: the group takes it back */
	tv_unlink(root, "a-2.md");
	step(inc, &snap, root, "a-2.md", "a suffix freed");
	CHECK_STR(site_find_note(inc, "y/c.md")->url, "/a-2");
	/* a slug leaves the group */
	tv_write(root, "x/b.md", "B without a slug.\n");
	step(inc, &snap, root, "x/b.md", "a slug dropped");
	CHECK_STR(site_find_note(inc, "x/b.md")->url, "/x/b");
	CHECK_STR(site_find_note(inc, "y/c.md")->url, "/a");
	snapshot_unref(snap);
	site_free(inc);
	tv_remove(root);
}

static int want(const char *name)
{
	const char *v = getenv("QUIRE_VAULTS");
	return !v || strcmp(v, "all") == 0 || strcmp(v, "both") == 0 || strcmp(v, name) == 0;
}

/*
 * vault-sample is in the repository, so the property test runs wherever
 * the tests do, the shared corpus beside the checkout or not: every
 * feature the sample shows (callouts, embeds of sections, aliases, math,
 * diagrams, hosts) goes through the random edits.
 */
static void test_vault_sample(void)
{
	char *src = tv_sample();

	if (want("sample"))
		run("vault-sample", src, steps_env(), seed_env() + 2, 1);
	free(src);
}

/*
 * Here pages keep only their gzip bytes, as the server runs
 * (page_keep_identity): composing again reads fragments from inflated
 * pages. pwsh-docs below keeps both.
 */
static void test_tasks_docs(void)
{
	char *src;

	if (!want("tasks"))
		return;
	src = tv_corpus_vault("obsidian-tasks-docs", "the random edits on a real vault of "
			      "118 notes written in Obsidian (aliases, heading links, embeds)");
	if (!src)
		return;
	page_keep_identity(0);
	run("obsidian-tasks-docs", src, steps_env(), seed_env(), 1);
	page_keep_identity(1);
	free(src);
}

static void test_pwsh_docs(void)
{
	char *src;

	if (!want("pwsh"))
		return;
	src = tv_corpus_vault("pwsh-docs", "the random edits on a real vault of 1,120 notes");
	if (!src)
		return;
	run("pwsh-docs", src, steps_env() / 4, seed_env() + 1, 0);
	free(src);
}

int main(void)
{
	md_global_init();
	RUN(test_fragments_from_pages);
	RUN(test_links_follow_moves);
	RUN(test_diagram_links);
	RUN(test_root_links);
	RUN(test_alias_under_tag_page);
	RUN(test_heading_chain_ids);
	RUN(test_missing_headings);
	RUN(test_url_groups);
	RUN(test_vault_sample);
	RUN(test_tasks_docs);
	RUN(test_pwsh_docs);
	return test_done();
}
