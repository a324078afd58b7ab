/*
 * test-site.c: the loader on real vaults and hostile ones.
 *
 * The real corpus (../shared/corpus) must load with every link resolved;
 * unpublished notes must leave no trace in an export; broken, huge, deep
 * and oddly named notes must be reported and everything else must render.
 */
#include "lib/tv.h"

#include "cmd/export.h"
#include "util/gzip.h"
#include "markdown/markdown.h"
#include "site/site.h"
#include "site/snapshot.h"
#include "lib/test.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct site *load(const char *dir, int threads)
{
	struct site_options o = { .threads = threads };
	return site_load(dir, &o);
}

static const struct site_note *find_note(const struct site *s, const char *path)
{
	return site_find_note(s, path);
}

static struct site_stats stats(const struct site *s)
{
	struct site_stats st;
	site_stats(s, &st);
	return st;
}

static int has_diag(const struct site *s, const char *path, const char *needle)
{
	size_t i;
	for (i = 0; i < s->diags.n; i++)
		if (strcmp(s->diags.items[i].path, path) == 0 && strstr(s->diags.items[i].msg, needle))
			return 1;
	return 0;
}

static void print_diags(const struct site *s, size_t max)
{
	size_t i;
	for (i = 0; i < s->diags.n && i < max; i++)
		fprintf(stderr, "    %s:%d: %s\n", s->diags.items[i].path, s->diags.items[i].line,
			s->diags.items[i].msg);
}

static void test_pwsh_docs(void)
{
	char *dir = tv_corpus_vault("pwsh-docs", "its 1,120 notes and 5,651 wikilinks must load "
				    "with every link resolved");
	struct site *s;

	if (!dir)
		return;
	s = load(dir, 0);
	CHECK(s != NULL);
	if (!s)
		goto out;
	CHECK_INT(s->nnotes, 1120);
	CHECK_INT(stats(s).published, 1120);
	/* every one of the corpus's wikilinks resolves */
	CHECK_INT(stats(s).broken, 0);
	/* the corpus README counts 5,651 wikilinks; a few more stand in tables and callouts */
	CHECK(stats(s).wikilinks >= 5651);
	fprintf(stderr, "  pwsh-docs: %zu wikilinks and embeds, %zu Markdown links\n",
		stats(s).wikilinks, stats(s).links + stats(s).embeds - stats(s).wikilinks);
	CHECK_INT(s->diags.nerrors, 0);
	if (stats(s).broken || s->diags.nerrors)
		print_diags(s, 20);
	fprintf(stderr, "  pwsh-docs: %zu notes, %zu links, %zu embeds in %.0f ms\n", s->nnotes,
		stats(s).links, stats(s).embeds, s->load_ms);
	site_free(s);
out:
	free(dir);
}

/*
 * obsidian-tasks-docs was written in Obsidian itself: aliases, heading
 * links, embeds of notes and sections, "\\|" inside tables. Every one of
 * its links resolves in Obsidian, and every one must resolve here: a
 * Python cross-check of its 1,136 [[...]] (code excluded) found no target
 * missing from the vault, so the list of truly broken links is empty.
 */
static void test_tasks_docs(void)
{
	char *dir = tv_corpus_vault("obsidian-tasks-docs", "its 118 notes, written in Obsidian, "
				    "must load with every link resolved");
	struct site *s;

	if (!dir)
		return;
	s = load(dir, 0);
	CHECK(s != NULL);
	if (!s)
		goto out;
	CHECK_INT(s->nnotes, 118);
	CHECK_INT(stats(s).broken, 0);
	/*
	 * The one reference that resolves to nothing is truly broken: the
	 * "image embed" template shows how to embed an image with a
	 * placeholder name, ![](../images/insert-filename-here.png), and no
	 * such file exists (Obsidian shows it broken too).
	 */
	CHECK_INT(stats(s).outside, 1);
	CHECK(has_diag(s, "docs/_meta/templates/image embed.md", "insert-filename-here.png"));
	CHECK(stats(s).links + stats(s).embeds >= 1100);
	CHECK_INT(s->diags.nerrors, 0);
	if (stats(s).broken || s->diags.nerrors)
		print_diags(s, 40);
	site_free(s);
out:
	free(dir);
}

/* ---- privacy ----------------------------------------------------------- */

struct grep {
	const char *const *needles;
	size_t n;
	int hits;
};
static struct grep *grep_state;

static int grep_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	struct buf data = BUF_INIT, plain = BUF_INIT;
	const char *hay;
	size_t len, i;

	(void)st;
	(void)ftw;
	if (flag != FTW_F)
		return 0;
	if (read_file(path, &data) < 0)
		return 0;
	hay = data.ptr;
	len = data.len;
	if (strlen(path) > 3 && strcmp(path + strlen(path) - 3, ".gz") == 0) {
		if (gzip_decompress(data.ptr, data.len, &plain) == 0) {
			hay = plain.ptr;
			len = plain.len;
		}
	}
	for (i = 0; i < grep_state->n; i++) {
		if (memmem(hay, len, grep_state->needles[i], strlen(grep_state->needles[i])) ||
		    strstr(path, grep_state->needles[i])) {
			fprintf(stderr, "  leak: '%s' in %s\n", grep_state->needles[i], path);
			grep_state->hits++;
		}
	}
	buf_release(&data);
	buf_release(&plain);
	return 0;
}

static int grep_tree(const char *dir, const char *const *needles, size_t n)
{
	struct grep g = { needles, n, 0 };
	grep_state = &g;
	nftw(dir, grep_one, 16, FTW_PHYS);
	return g.hits;
}

static void test_unpublished_leaves_no_trace(void)
{
	static const char *const secrets[] = {
		"Zanzibar", "zanzibar", "SECRETBODY", "Quokka", "quokka", "HIDDENTEXT",
		"Pangolin", "pangolin", "ExplicitOnly", "private-scan.png", "PRIVATEALIAS",
	};
	char *v = tv_new(), *out = tv_new();
	struct snapshot *snap;
	struct site *s;

	tv_write(v, "index.md",
		 "# Home\n\nSee [[Zanzibar Plans|a trip]], [[Quokka|an animal]] and [[folder/Pangolin|scales]].\n\n"
		 "Also [a page](Zanzibar%20Plans.md) and ![pic](./folder/Pangolin.md).\n\n"
		 "![[Zanzibar Plans]]\n\n![[Quokka#Section]]\n\n![[shared.png]]\n\n#public\n");
	tv_write(v, "Zanzibar Plans.md",
		 "---\ndraft: true\ntags: [zanzibar]\naliases: [PRIVATEALIAS]\n---\n"
		 "SECRETBODY lives here. [[index]] ![[private-scan.png]] ![scan](private-scan.png)\n");
	tv_write(v, "Quokka.md",
		 "---\npublish: false\ndescription: HIDDENTEXT\n---\n## Section\nHIDDENTEXT\n"
		 "Links to [[index]] so it would be a backlink.\n");
	tv_write(v, "folder/Pangolin.md", "---\npublish: false\n---\n#pangolin [[index]]\n");
	tv_write(v, "Public.md", "Links [[index]].\n");
	tv_write_len(v, "private-scan.png", "\x89PNG fake", 9);
	tv_write_len(v, "shared.png", "\x89PNG ok", 7);
	tv_write_len(v, "unreferenced.png", "\x89PNG no", 7);

	s = load(v, 2);
	CHECK(s != NULL);
	if (!s)
		goto out;
	snap = site_snapshot(s, NULL);
	CHECK_INT(export_snapshot(snap, out, NULL), 0);
	CHECK_INT(grep_tree(out, secrets, sizeof(secrets) / sizeof(*secrets)), 0);
	CHECK(tv_exists(out, "index.html"));
	CHECK(tv_exists(out, "public.html"));
	CHECK(tv_exists(out, "shared.png"));
	CHECK(!tv_exists(out, "private-scan.png"));
	CHECK(!tv_exists(out, "unreferenced.png"));
	CHECK(!tv_exists(out, "zanzibar-plans.html"));
	/* links to unpublished notes are plain text, not broken links */
	CHECK_INT(stats(s).broken, 0);
	snapshot_unref(snap);
	site_free(s);
out:
	tv_remove(v);
	tv_remove(out);
}

static void test_explicit_mode(void)
{
	static const char *const secrets[] = { "NOTMARKED" };
	char *v = tv_new(), *out = tv_new();
	struct snapshot *snap;
	struct site *s;

	tv_write(v, "quire.yml", "publish: explicit\n");
	tv_write(v, "Yes.md", "---\npublish: true\n---\nShown. [[No]]\n");
	tv_write(v, "No.md", "NOTMARKED body\n");
	tv_write(v, "Draft.md", "---\npublish: true\ndraft: true\n---\nNOTMARKED too\n");
	s = load(v, 1);
	CHECK(s && stats(s).published == 1);
	snap = site_snapshot(s, NULL);
	CHECK_INT(export_snapshot(snap, out, NULL), 0);
	CHECK_INT(grep_tree(out, secrets, 1), 0);
	CHECK(tv_exists(out, "yes.html"));
	snapshot_unref(snap);
	site_free(s);
	tv_remove(v);
	tv_remove(out);
}

/*
 * A conflict copy that quire sync (or Syncthing) wrote beside a note is a
 * file of the vault, synced like any other, and never a page: it holds
 * one side of an edit, with the note's title, aliases and slug, until its
 * author merges it. check names it.
 */
static void test_conflict_copy_private(void)
{
	static const char *const secrets[] = { "SERVERSIDE" };
	char *v = tv_new(), *out = tv_new();
	struct snapshot *snap;
	struct site *s;

	tv_write(v, "Plan.md", "---\naliases: [Roadmap]\n---\nLaptop side. [[index]]\n");
	tv_write(v, "Plan.sync-conflict-20261207-172200-server.md",
		 "---\naliases: [Roadmap]\n---\nSERVERSIDE of the edit. [[index]]\n");
	tv_write(v, "notes/Log.sync-conflict-20261207-172200-ABCDEF1.md", "SERVERSIDE too\n");
	tv_write(v, "index.md", "See [[Plan]].\n");
	s = load(v, 1);
	CHECK(s && stats(s).published == 2);
	if (!s)
		goto out;
	CHECK(has_diag(s, "Plan.sync-conflict-20261207-172200-server.md", "conflict copy"));
	CHECK(has_diag(s, "notes/Log.sync-conflict-20261207-172200-ABCDEF1.md", "conflict copy"));
	snap = site_snapshot(s, NULL);
	CHECK_INT(export_snapshot(snap, out, NULL), 0);
	CHECK_INT(grep_tree(out, secrets, 1), 0);
	CHECK(tv_exists(out, "plan.html"));
	CHECK_INT(stats(s).broken, 0);
	snapshot_unref(snap);
	site_free(s);
out:
	tv_remove(v);
	tv_remove(out);
}

/* ---- hostile input ------------------------------------------------------- */

static void test_bad_input(void)
{
	char *v = tv_new(), *out = tv_new();
	struct buf big = BUF_INIT;
	struct snapshot *snap;
	struct site *s;
	size_t i;
	static const char *const names[] = {
		"100% sure.md", "C# notes.md", "why?.md", "with  spaces .md", "emoji 🎉.md",
		"שלום.md", "مرحبا بالعالم.md", "日本語.md",
	};

	tv_write_len(v, "bad-utf8.md", "# Title\n\nbroken \xff\xfe bytes \xc3 here\n", 29);
	tv_write(v, "bad-yaml.md", "---\ntitle: [oops\n---\nstill rendered BADYAMLBODY\n");
	tv_write(v, "open-frontmatter.md", "---\ntitle: never closed\n\nbody OPENBODY\n");
	tv_write(v, "self.md", "Me: ![[self]]\n");
	tv_write(v, "cycle-a.md", "A ![[cycle-b]]\n");
	tv_write(v, "cycle-b.md", "B ![[cycle-a]]\n");
	for (i = 0; i < 10000; i++)
		buf_addc(&big, '>');
	buf_adds(&big, " deep quote\n\n");
	for (i = 0; i < 10000; i++) {
		size_t k;
		for (k = 0; k < i % 200; k++)
			buf_adds(&big, "  ");
		buf_adds(&big, "- item\n");
	}
	tv_write(v, "deep.md", big.ptr);
	/* under max_note_size (4 MiB), rendered; 50 MB, over it: refused unread */
	buf_reset(&big);
	while (big.len < 3u * 1024 * 1024)
		buf_adds(&big, "A realistic paragraph with [[index]] a link, `code`, *emphasis* and "
			       "#tags, repeated until the note weighs megabytes.\n\n");
	tv_write_len(v, "big.md", big.ptr, big.len);
	{
		char *part = xmemdup(big.ptr, big.len);
		size_t len = big.len;

		while (big.len < 50u * 1024 * 1024)
			buf_add(&big, part, len);
		free(part);
	}
	tv_write_len(v, "huge.md", big.ptr, big.len);
	buf_release(&big);
	for (i = 0; i < sizeof(names) / sizeof(*names); i++)
		tv_write(v, names[i], "Odd name, [[index]].\n");
	tv_write(v, "index.md", "[[100% sure]] [[why?]] [[emoji 🎉]] [[שלום]] [[日本語]]\n");

	s = load(v, 2);
	CHECK(s != NULL);
	if (!s)
		goto out;
	CHECK(has_diag(s, "bad-utf8.md", "invalid UTF-8"));
	CHECK(has_diag(s, "bad-yaml.md", "invalid frontmatter"));
	CHECK(has_diag(s, "open-frontmatter.md", "not closed"));
	CHECK(has_diag(s, "self.md", "embed cycle"));
	CHECK(has_diag(s, "cycle-a.md", "embed cycle"));
	CHECK(has_diag(s, "cycle-b.md", "embed cycle"));
	CHECK_INT(stats(s).broken, 0);
	if (stats(s).broken)
		print_diags(s, 40);
	CHECK(has_diag(s, "huge.md", "over max_note_size"));
	for (i = 0; i < s->nnotes; i++)
		CHECK((s->notes[i]->page != NULL) == (strcmp(s->notes[i]->note.path, "huge.md") != 0));
	CHECK(strstr(find_note(s, "bad-yaml.md")->page->body, "BADYAMLBODY") != NULL);
	CHECK(strstr(find_note(s, "open-frontmatter.md")->page->body, "OPENBODY") != NULL);
	snap = site_snapshot(s, NULL);
	CHECK_INT(export_snapshot(snap, out, NULL), 0);
	CHECK(tv_exists(out, "100-sure.html"));
	CHECK(tv_exists(out, "c-notes.html"));
	CHECK(tv_exists(out, "why.html"));
	CHECK(tv_exists(out, "emoji.html"));
	CHECK(tv_exists(out, "שלום.html"));
	CHECK(tv_exists(out, "日本語.html"));
	CHECK(tv_exists(out, "big.html") && tv_exists(out, "big.html.gz"));
	CHECK(!tv_exists(out, "huge.html"));
	snapshot_unref(snap);
	site_free(s);
out:
	tv_remove(v);
	tv_remove(out);
}

/* ---- URLs, aliases, collisions, determinism ---------------------------- */

static void test_urls_and_aliases(void)
{
	char *v = tv_new();
	struct snapshot *snap;
	struct site *s;
	struct page *p;

	tv_write(v, "Guides/index.md", "---\naliases: [Old Guides]\n---\n# Guides\n");
	/* Obsidian Publish's redirect: an alias with a '/' is a path from the vault's root */
	tv_write(v, "Guides/Config.md",
		 "---\naliases:\n  - .config\n  - Customization/Config folders\n  - /Top Level\n"
		 "  - ../escape\n  - a//b\n  - x/\n  - /\n---\nC\n");
	tv_write(v, "Guides/My Note.md", "x\n");
	tv_write(v, "Guides/my-note.md", "y\n");
	tv_write(v, "Top.md", "---\nslug: /elsewhere/top\n---\n[[My Note]]\n");
	s = load(v, 1);
	CHECK(s != NULL);
	if (!s)
		goto out;
	snap = site_snapshot(s, NULL);
	CHECK(snapshot_get(snap, "/guides/", 8) != NULL);
	CHECK(snapshot_get(snap, "/guides/my-note", 15) != NULL);
	CHECK(snapshot_get(snap, "/guides/my-note-2", 17) != NULL);
	CHECK(has_diag(s, "Guides/my-note.md", "already taken"));
	CHECK(snapshot_get(snap, "/elsewhere/top", 14) != NULL);
	p = snapshot_get(snap, "/guides/old-guides", 18);
	CHECK(p && p->kind == PAGE_REDIRECT && strcmp(p->location, "/guides/") == 0);
	p = snapshot_get(snap, "/customization/config-folders", 29);
	CHECK(p && p->kind == PAGE_REDIRECT && strcmp(p->location, "/guides/config") == 0);
	p = snapshot_get(snap, "/top-level", 10);
	CHECK(p && p->kind == PAGE_REDIRECT && strcmp(p->location, "/guides/config") == 0);
	CHECK(snapshot_get(snap, "/guides/customization/config-folders", 36) == NULL);
	/* a '/' alias that names no path ("..", an empty segment) stays a name */
	CHECK(snapshot_get(snap, "/-/escape", 9) == NULL && snapshot_get(snap, "/a/-/b", 6) == NULL &&
	      snapshot_get(snap, "/x/-", 4) == NULL && snapshot_get(snap, "/escape", 7) == NULL);
	CHECK(!has_diag(s, "Guides/Config.md", "alias"));
	p = snapshot_get(snap, "/_quire/tree.json", 17);
	CHECK(p && strstr(p->body, "\"url\":\"/guides/\"") != NULL);
	snapshot_unref(snap);
	site_free(s);
out:
	tv_remove(v);
}

static void expect_redirect(const struct snapshot *snap, const char *from, const char *to)
{
	const struct page *p = snapshot_get(snap, from, strlen(from));
	if (!p || p->kind != PAGE_REDIRECT || strcmp(p->location, to) != 0) {
		fprintf(stderr, "  %s: want a redirect to %s, got %s\n", from, to,
			!p ? "nothing" : p->kind != PAGE_REDIRECT ? "a page" : p->location);
		test_current_failed = 1;
	}
}

/* A note that moves keeps working at its new URL; its old URLs redirect, across restarts. */
static void test_moves(void)
{
	char *v = tv_new();
	struct buf a = BUF_INIT, b = BUF_INIT;
	struct snapshot *snap;
	struct site *s, *again;
	const char *paths[2];

	tv_write(v, "Start.md", "Links to [[Moving]].\n");
	tv_write(v, "Moving.md", "I move around.\n");
	s = load(v, 1);
	/* as an editor renames: the old path vanishes, the new one appears with the same bytes */
	buf_addf(&a, "%s/Moving.md", v);
	buf_addf(&b, "%s/Archive/Moved Once.md", v);
	tv_write(v, "Archive/Moved Once.md", "I move around.\n");
	unlink(a.ptr);
	paths[0] = "Moving.md";
	paths[1] = "Archive/Moved Once.md";
	site_apply(s, paths, 2);
	snap = site_snapshot(s, NULL);
	CHECK(snapshot_get(snap, "/archive/moved-once", 19) != NULL);
	expect_redirect(snap, "/moving", "/archive/moved-once");
	snapshot_unref(snap);
	/* and again: both former URLs lead to the latest */
	tv_write(v, "Final.md", "I move around.\n");
	unlink(b.ptr);
	paths[0] = "Archive/Moved Once.md";
	paths[1] = "Final.md";
	site_apply(s, paths, 2);
	snap = site_snapshot(s, NULL);
	expect_redirect(snap, "/moving", "/final");
	expect_redirect(snap, "/archive/moved-once", "/final");
	snapshot_unref(snap);
	/* a restart reads the moves back */
	again = load(v, 1);
	snap = site_snapshot(again, NULL);
	expect_redirect(snap, "/moving", "/final");
	expect_redirect(snap, "/archive/moved-once", "/final");
	snapshot_unref(snap);
	/* a new note at a former URL takes it over */
	tv_write(v, "Moving.md", "A different note now.\n");
	paths[0] = "Moving.md";
	site_apply(again, paths, 1);
	snap = site_snapshot(again, NULL);
	CHECK(snapshot_get(snap, "/moving", 7) && snapshot_get(snap, "/moving", 7)->kind == PAGE_NOTE);
	snapshot_unref(snap);
	site_free(again);
	site_free(s);
	buf_release(&a);
	buf_release(&b);
	tv_remove(v);
}

/* The snapshot of s serves to, and from redirects there. */
static void expect_moved(struct site *s, const char *from, const char *to)
{
	struct snapshot *snap = site_snapshot(s, NULL);

	CHECK(snapshot_get(snap, to, strlen(to)) != NULL);
	expect_redirect(snap, from, to);
	snapshot_unref(snap);
}

/* Deletes path from the vault v and applies the change to s. */
static void delete_and_apply(struct site *s, const char *v, const char *path)
{
	struct buf full = BUF_INIT;
	const char *paths[1] = { path };

	buf_addf(&full, "%s/%s", v, path);
	CHECK(unlink(full.ptr) == 0);
	site_apply(s, paths, 1);
	buf_release(&full);
}

/*
 * The two halves of a move in two changes: a watcher reporting the delete
 * and the create in two batches; and a note re-read (a note it links to
 * was renamed) after a sync client moved its file but before that move
 * reached the loader. Either way its old URL redirects once the new path
 * arrives. Before: the old URL answered 404 (the second case also left a
 * "cannot read" error and an empty page for a moment).
 */
static void test_moves_across_changes(void)
{
	char *v = tv_new();
	struct buf a = BUF_INIT, b = BUF_INIT;
	struct snapshot *snap;
	struct site *s;
	const char *paths[2];

	tv_write(v, "Start.md", "Links to [[Moving]] and [[Target]].\n");
	tv_write(v, "Moving.md", "I move around.\n");
	tv_write(v, "Old/Linker.md", "I link to [[Target]].\n");
	tv_write(v, "Target.md", "I am linked to.\n");
	s = load(v, 1);
	CHECK(s != NULL);
	if (!s)
		goto out;
	/* the delete, then the create, one change each */
	delete_and_apply(s, v, "Moving.md");
	tv_write(v, "Archive/Moved.md", "I move around.\n");
	paths[0] = "Archive/Moved.md";
	site_apply(s, paths, 1);
	expect_moved(s, "/moving", "/archive/moved");

	/* Old/Linker.md moved on disk, its move not yet told ... */
	buf_reset(&a);
	buf_addf(&a, "%s/Old/Linker.md", v);
	buf_addf(&b, "%s/New", v);
	CHECK(mkdir(b.ptr, 0755) == 0);
	buf_addf(&b, "/Linker.md");
	CHECK(rename(a.ptr, b.ptr) == 0);
	/* ... when a change makes it render again (what it links to is renamed) */
	buf_reset(&a);
	buf_addf(&a, "%s/Target.md", v);
	buf_reset(&b);
	buf_addf(&b, "%s/Renamed Target.md", v);
	CHECK(rename(a.ptr, b.ptr) == 0);
	paths[0] = "Target.md";
	paths[1] = "Renamed Target.md";
	site_apply(s, paths, 2);
	CHECK(!has_diag(s, "Old/Linker.md", "cannot read"));
	CHECK(find_note(s, "Old/Linker.md") == NULL);
	snap = site_snapshot(s, NULL);
	CHECK(snapshot_get(snap, "/old/linker", 11) == NULL);
	snapshot_unref(snap);
	/* then the move arrives */
	paths[0] = "Old/Linker.md";
	paths[1] = "New/Linker.md";
	site_apply(s, paths, 2);
	expect_moved(s, "/old/linker", "/new/linker");

	/*
	 * The other order, one change each: the new place first, then the old
	 * one deleted (rclone's default, --delete-after).
	 */
	tv_write(v, "Shelf/Moving on.md", "I move again.\n");
	tv_write(v, "Moving on.md", "I move again.\n");
	paths[0] = "Moving on.md";
	site_apply(s, paths, 1);
	paths[0] = "Shelf/Moving on.md";
	site_apply(s, paths, 1);
	delete_and_apply(s, v, "Moving on.md");
	expect_moved(s, "/moving-on", "/shelf/moving-on");
	/* an arrival that changed since is not where the bytes went */
	tv_write(v, "Copy.md", "Copied.\n");
	tv_write(v, "Copy of.md", "Copied.\n");
	paths[0] = "Copy.md";
	paths[1] = "Copy of.md";
	site_apply(s, paths, 2);
	tv_write(v, "Copy of.md", "Copied, then changed.\n");
	paths[0] = "Copy of.md";
	site_apply(s, paths, 1);
	delete_and_apply(s, v, "Copy.md");
	snap = site_snapshot(s, NULL);
	CHECK(snapshot_get(snap, "/copy", 5) == NULL);
	snapshot_unref(snap);
	CHECK_INT(s->diags.nerrors, 0);
	site_free(s);
out:
	buf_release(&a);
	buf_release(&b);
	tv_remove(v);
}

/*
 * permalink: (Obsidian Publish) gives the note's whole path, with or
 * without its leading '/', over slug:; with either, the URL the note's
 * path would give redirects to it, unless a note is there.
 */
static void test_permalinks(void)
{
	char *v = tv_new();
	struct snapshot *snap;
	struct site *s;
	const struct site_note *n;

	tv_write(v, "Docs/Getting Started.md", "---\npermalink: guides/start\n---\n# Start\n");
	tv_write(v, "Docs/Both.md", "---\nslug: ignored\npermalink: /both-here\n---\nB\n");
	tv_write(v, "Docs/Old Name.md", "---\nslug: new-name\n---\nO\n");
	tv_write(v, "Docs/Taken.md", "---\npermalink: /docs/plain\n---\nT\n");
	tv_write(v, "Docs/Plain.md", "---\nslug: elsewhere\n---\nP\n");
	tv_write(v, "index.md", "[[Getting Started]] [[Both]] [[Old Name]]\n");
	s = load(v, 1);
	CHECK(s != NULL);
	if (!s)
		goto out;
	n = find_note(s, "Docs/Getting Started.md");
	CHECK(n && n->url && strcmp(n->url, "/guides/start") == 0);
	n = find_note(s, "Docs/Both.md");
	CHECK(n && n->url && strcmp(n->url, "/both-here") == 0);
	n = find_note(s, "Docs/Old Name.md");
	CHECK(n && n->url && strcmp(n->url, "/docs/new-name") == 0);
	snap = site_snapshot(s, NULL);
	expect_redirect(snap, "/docs/getting-started", "/guides/start");
	expect_redirect(snap, "/docs/both", "/both-here");
	expect_redirect(snap, "/docs/old-name", "/docs/new-name");
	/* a note's own URL wins over another's former path URL */
	CHECK(snapshot_get(snap, "/docs/plain", 11) &&
	      snapshot_get(snap, "/docs/plain", 11)->kind == PAGE_NOTE);
	snapshot_unref(snap);
	CHECK_INT(s->diags.nerrors, 0);
	site_free(s);
out:
	tv_remove(v);
}

/* The body of the page at url, between its note-body div and the end of the article. */
static char *page_body(const struct snapshot *snap, const char *url)
{
	const struct page *p = snapshot_get(snap, url, strlen(url));
	const char *b = p ? page_bytes(p) : NULL, *from, *to;

	if (!b)
		return xstrdup("");
	from = memmem(b, p->body_len, "<div class=\"note-body", 21);
	to = from ? memmem(from, p->body_len - (size_t)(from - b), "</article>", 10) : NULL;
	return from && to ? xstrndup(from, (size_t)(to - from)) : xstrdup("");
}

/*
 * Embeds of sections, as Obsidian shows them: a note may embed a section
 * of itself (only an embed that would show itself is a cycle), and
 * "Note#Part#Sub" is the heading Sub under Part.
 */
static void test_embed_sections(void)
{
	char *v = tv_new(), *body;
	struct snapshot *snap;
	struct site *s;

	tv_write(v, "Self.md", "Before ![[#Later]] and ![[Self#Later]].\n\n# Later\n\nlater text\n");
	tv_write(v, "Loop.md", "Top ![[#A]]\n\n# A\n\nin A ![[#B]]\n\n# B\n\nin B ![[#A]]\n");
	tv_write(v, "Whole.md", "All of me: ![[Whole]]\n");
	tv_write(v, "Chain.md", "# Chain\n\n## Part\n\n### Sub\n\nunder part\n\n## Other\n\n"
				"### Sub\n\nunder other\n");
	tv_write(v, "Uses.md", "![[Chain#Other#Sub]]\n\n![[Chain#Part#Sub]]\n\n![[Chain#Nope#Sub]]\n\n"
			       "![[Chain#Other]]\n");
	s = load(v, 1);
	CHECK(s != NULL);
	if (!s)
		goto out;
	snap = site_snapshot(s, NULL);
	body = page_body(snap, "/self");
	CHECK(strstr(body, "embed-cycle") == NULL);
	CHECK(test_count(body, "later text") == 3);
	CHECK(!has_diag(s, "Self.md", "cycle"));
	free(body);
	/* A shows B, which would show A again: cut there, and said */
	body = page_body(snap, "/loop");
	CHECK(test_count(body, "embed-cycle") == 3);
	CHECK(has_diag(s, "Loop.md", "cycle"));
	free(body);
	body = page_body(snap, "/whole");
	CHECK(strstr(body, "embed-cycle") != NULL);
	CHECK(has_diag(s, "Whole.md", "embeds itself"));
	free(body);
	body = page_body(snap, "/uses");
	{
		const char *o = strstr(body, "under other"), *p = strstr(body, "under part");
		CHECK(o && p && o < p);
	}
	CHECK(test_count(body, "under other") == 2); /* Other#Sub, and all of Other */
	CHECK(test_count(body, "under part") == 1);
	CHECK(has_diag(s, "Uses.md", "missing section 'Nope#Sub'"));
	free(body);
	snapshot_unref(snap);
	site_free(s);
out:
	tv_remove(v);
}

/*
 * Markdown links to notes as Obsidian writes them resolve, count as
 * backlinks, and only what looks like a missing file is reported; a
 * relative path of another layout finds its file by name.
 */
static void test_markdown_links(void)
{
	char *v = tv_new(), *body;
	struct snapshot *snap;
	struct site *s;
	const struct site_note *n;
	static const char *const want[] = {
		"href=\"/three-laws\">a<", "href=\"/three-laws\">b<", "href=\"/folder/note#heading\">c<",
		"href=\"/other#^block\">d<", "href=\"/folder/note\">e<", "href=\"/help/guide\">f<",
		"<a href=\"/powershell/page\">g<", "<a href=\"missing.md\">h<",
	};
	size_t i;

	tv_write(v, "Three laws.md", "# Three laws\n");
	tv_write(v, "Folder/Note.md", "# Note\n\n## Heading\n");
	tv_write(v, "Other.md", "para ^block\n");
	tv_write(v, "Help/Guide.md", "# Guide\n");
	tv_write(v, "Sub/Start.md",
		 "[a](Three%20laws) [b](<Three laws.md>) [c](../Folder/Note.md#Heading) "
		 "[d](../Other.md#^block) [e](/Folder/Note.md) [f](../module/Guide.md) "
		 "[g](/powershell/page) [h](missing.md)\n");
	s = load(v, 1);
	CHECK(s != NULL);
	if (!s)
		goto out;
	snap = site_snapshot(s, NULL);
	body = page_body(snap, "/sub/start");
	for (i = 0; i < sizeof(want) / sizeof(*want); i++) {
		if (!strstr(body, want[i])) {
			fprintf(stderr, "  want %s in %s\n", want[i], body);
			test_current_failed = 1;
		}
	}
	free(body);
	n = find_note(s, "Folder/Note.md");
	CHECK(n && n->nbacklinks == 1);
	CHECK(has_diag(s, "Sub/Start.md", "missing.md"));
	CHECK(!has_diag(s, "Sub/Start.md", "powershell"));
	CHECK_INT(s->diags.nwarnings, 1);
	snapshot_unref(snap);
	site_free(s);
out:
	tv_remove(v);
}

/*
 * Blocks named by an id on their own line, and a single list item, embed
 * as valid HTML: the item inside a list element of its kind, a line of
 * images with its images.
 */
static void test_embedded_blocks(void)
{
	char *v = tv_new(), *body;
	struct snapshot *snap;
	struct site *s;

	tv_write(v, "pic.png", "\x89PNG\r\n");
	tv_write(v, "Src.md", "- one\n- two ^bullet\n\n1. first\n2. second ^numbered\n\n"
			      "![[pic.png]]\n\n^picture\n\n![[pic.png|40]]^glued\n");
	tv_write(v, "Show.md", "![[Src#^bullet]]\n\n![[Src#^numbered]]\n\n![[Src#^picture]]\n\n"
			       "![[Src#^glued]] [[Src#^glued|to it]]\n");
	tv_write(v, "Self.md", "## Part\n\nSome text ^b\n\n## Again\n\n![[#Part]]\n\n![[#Part]]\n");
	s = load(v, 1);
	CHECK(s != NULL);
	if (!s)
		goto out;
	snap = site_snapshot(s, NULL);
	body = page_body(snap, "/show");
	/* embedded copies carry no ids: the page's own ids stay unique */
	CHECK(strstr(body, "<ul>\n<li>two</li>\n</ul>") != NULL);
	CHECK(strstr(body, "<ol>\n<li>second</li>\n</ol>") != NULL);
	CHECK(strstr(body, "<div class=\"embeds\">\n<img src=\"/pic.png\"") != NULL);
	/* "![[pic.png]]^glued": the id of the embed's paragraph, as with a blank before it */
	CHECK(strstr(body, "<img src=\"/pic.png\" alt=\"pic.png\" width=\"40\"") != NULL);
	CHECK(strstr(body, "href=\"/src#^glued\">to it<") != NULL);
	CHECK(!strstr(body, "No section"));
	CHECK(!strstr(body, " id=\""));
	CHECK_INT(s->diags.nwarnings, 0);
	free(body);
	body = page_body(snap, "/src");
	CHECK(strstr(body, "<div class=\"embeds\" id=\"^glued\">\n<img src=\"/pic.png\"") != NULL);
	free(body);
	body = page_body(snap, "/self");
	CHECK(test_count(body, " id=\"part\"") == 1 && test_count(body, " id=\"^b\"") == 1);
	CHECK(test_count(body, "text") == 3);
	free(body);
	snapshot_unref(snap);
	site_free(s);
out:
	tv_remove(v);
}

/*
 * quire.yml's home: names the note served at the site's root (as a
 * "slug: /" would): "/" is its page, links to it say "/", the URL of its
 * path redirects there; a home that is no published note is reported.
 */
static void test_home_setting(void)
{
	char *v = tv_new(), *body;
	struct snapshot *snap;
	struct site *s;
	struct page *p;

	tv_write(v, "quire.yml", "home: Guide/Welcome\n");
	tv_write(v, "Guide/Welcome.md", "# Welcome\n\nWELCOME-TEXT.\n");
	tv_write(v, "Other.md", "See [[Welcome]].\n");
	s = load(v, 1);
	CHECK(s != NULL);
	if (!s)
		goto out;
	snap = site_snapshot(s, NULL);
	body = page_body(snap, "/");
	CHECK(body && strstr(body, "WELCOME-TEXT"));
	free(body);
	body = page_body(snap, "/other");
	CHECK(body && strstr(body, "<a class=\"internal\" href=\"/\">Welcome</a>"));
	free(body);
	p = snapshot_get(snap, "/guide/welcome", 14);
	CHECK(p && p->kind == PAGE_REDIRECT && p->location && strcmp(p->location, "/") == 0);
	CHECK_INT(s->diags.nwarnings, 0);
	snapshot_unref(snap);
	site_free(s);

	tv_write(v, "quire.yml", "home: Guide/Nothing.md\n");
	s = load(v, 1);
	CHECK(s && has_diag(s, "quire.yml", "home: Guide/Nothing.md is not a note of the vault"));
	site_free(s);
out:
	tv_remove(v);
}

/* A page's bytes, NUL-terminated (freed by the caller), or "" when there is none. */
static char *whole_page(const struct snapshot *snap, const char *url)
{
	const struct page *p = snapshot_get(snap, url, strlen(url));
	const char *b = p ? page_bytes(p) : NULL;

	return b ? xstrndup(b, p->body_len) : xstrdup("");
}

/*
 * KaTeX and Mermaid are served by quire (immutable, gzipped at build
 * time, with their licences) and linked only from pages that have math or
 * a diagram, their own or an embedded note's.
 */
static void test_math_and_diagram_scripts(void)
{
	static const char *const katex = "/_quire/vendor/katex-0.16.22/katex.min.js",
			  *const css = "/_quire/vendor/katex-0.16.22/katex.min.css",
			  *const mermaid = "/_quire/vendor/mermaid-12.3.0/mermaid.min.js";
	char *v = tv_new(), *body;
	struct snapshot *snap;
	struct site *s;
	struct page *p;

	tv_write(v, "Math.md", "Euler: $e^{i\\pi} + 1 = 0$.\n");
	tv_write(v, "Diagram.md", "```mermaid\nflowchart LR\n  A --> B\n```\n");
	tv_write(v, "Plain.md", "No math, $5 and $6, and `$x$` in code.\n");
	tv_write(v, "Embeds.md", "![[Math]]\n");
	s = load(v, 1);
	CHECK(s != NULL);
	if (!s)
		goto out;
	snap = site_snapshot(s, NULL);
	body = whole_page(snap, "/math");
	CHECK(body && strstr(body, katex) && strstr(body, css) && !strstr(body, mermaid));
	CHECK(body && strstr(body, "<span class=\"math math-inline\">\\(e^{i\\pi} + 1 = 0\\)"));
	free(body);
	/* Mermaid is named for diagrams.js to load when a diagram comes near, not loaded in the head */
	body = whole_page(snap, "/diagram");
	CHECK(body && !strstr(body, katex) && strstr(body, "<pre class=\"mermaid\""));
	CHECK(body && strstr(body, "<div class=\"note-body\" data-diagram-script=\""
				   "/_quire/vendor/mermaid-12.3.0/mermaid.min.js\">"));
	CHECK(body && !strstr(body, "<script src=\"/_quire/vendor/mermaid"));
	free(body);
	body = whole_page(snap, "/plain");
	CHECK(body && !strstr(body, "/_quire/vendor/"));
	free(body);
	body = whole_page(snap, "/embeds");
	CHECK(body && strstr(body, katex));
	free(body);
	/* the scripts come before quire.js, which typesets with them */
	body = whole_page(snap, "/math");
	CHECK(body && strstr(body, katex) && strstr(body, "<script src=\"/_quire/quire.") &&
	      strstr(body, katex) < strstr(body, "<script src=\"/_quire/quire."));
	free(body);
	p = snapshot_get(snap, mermaid, strlen(mermaid));
	CHECK(p && p->kind == PAGE_ASSET && p->immutable && p->gz && p->body_len > 1000000 &&
	      strcmp(p->content_type, "text/javascript; charset=utf-8") == 0);
	body = whole_page(snap, mermaid);
	CHECK(body && strstr(body, "globalThis[\"mermaid\"]"));
	free(body);
	/* KaTeX's stylesheet names only the woff2 fonts, which are served (test-stylesheets serves them) */
	body = whole_page(snap, css);
	CHECK(body && strstr(body, "url(fonts/KaTeX_Main-Regular.woff2)") && !strstr(body, ".woff)") &&
	      !strstr(body, ".ttf)"));
	free(body);
	p = snapshot_get(snap, "/_quire/vendor/katex-0.16.22/fonts/KaTeX_Main-Regular.woff2",
			 strlen("/_quire/vendor/katex-0.16.22/fonts/KaTeX_Main-Regular.woff2"));
	CHECK(p && strcmp(p->content_type, "font/woff2") == 0);
	body = whole_page(snap, "/_quire/vendor/katex-0.16.22/LICENSE");
	CHECK(body && strstr(body, "MIT License"));
	free(body);
	body = whole_page(snap, "/_quire/vendor/mermaid-12.3.0/LICENSE");
	CHECK(body && strstr(body, "MIT License"));
	free(body);
	snapshot_unref(snap);
	site_free(s);
out:
	tv_remove(v);
}

/* A single newline is a line break (Obsidian's default), or a space with strict_line_breaks. */
static void test_line_breaks(void)
{
	char *v = tv_new(), *body;
	struct snapshot *snap;
	struct site *s;
	int strict;

	tv_write(v, "Poem.md", "Roses are red,\nviolets are blue.\n");
	for (strict = 0; strict < 2; strict++) {
		if (strict)
			tv_write(v, "quire.yml", "strict_line_breaks: true\n");
		s = load(v, 1);
		CHECK(s != NULL);
		if (!s)
			break;
		snap = site_snapshot(s, NULL);
		body = page_body(snap, "/poem");
		CHECK(strstr(body, strict ? "<p>Roses are red,\nviolets are blue.</p>"
					  : "<p>Roses are red,<br />\nviolets are blue.</p>") != NULL);
		free(body);
		snapshot_unref(snap);
		CHECK_INT(s->diags.n, 0);
		site_free(s);
	}
	tv_remove(v);
}

/* The same files give the same bytes on one thread and on two. */
static void same_across_threads(const char *dir)
{
	struct site *a, *b;
	size_t i, differ = 0;

	a = load(dir, 1);
	b = load(dir, 2);
	CHECK(a && b);
	if (a && b) {
		CHECK(a->nnotes > 10);
		CHECK_INT(a->nnotes, b->nnotes);
		for (i = 0; i < a->nnotes && i < b->nnotes; i++) {
			const struct page *x = a->notes[i]->page, *y = b->notes[i]->page;
			if (!x != !y || (x && (x->body_len != y->body_len ||
					       memcmp(x->body, y->body, x->body_len) != 0)))
				differ++;
		}
		CHECK_INT(differ, 0);
	}
	site_free(a);
	site_free(b);
}

static void test_deterministic_across_threads(void)
{
	char *dir = tv_sample();

	same_across_threads(dir);
	free(dir);
	dir = tv_corpus_vault("obsidian-tasks-docs", "one thread against two on a real vault "
			      "(vault-sample ran)");
	if (dir)
		same_across_threads(dir);
	free(dir);
}

/*
 * Embeds multiply: four notes whose lines are 200 x ![[next]] made one
 * page of 4.39 GB. A page embeds at most max_embeds notes and
 * max_embed_size bytes of them; the rest are markers, and check warns.
 */
static void test_embed_amplification(void)
{
	char *root = tv_new();
	struct buf text = BUF_INIT;
	const struct page *p;
	struct snapshot *snap;
	struct site *s;
	int i, k;

	for (i = 0; i < 4; i++) {
		buf_reset(&text);
		buf_addf(&text, "# Level %d\n\n", i);
		for (k = 0; k < 200; k++)
			buf_addf(&text, "![[L%d]]\n", i + 1);
		buf_addf(&text, "\nText of level %d, padded to be longer than one line. ", i);
		{
			char name[16];
			snprintf(name, sizeof(name), "L%d.md", i);
			tv_write(root, name, text.ptr);
		}
	}
	tv_write(root, "L4.md", "The bottom.\n");
	s = load(root, 2);
	CHECK(s != NULL);
	snap = site_snapshot(s, NULL);
	p = snapshot_get(snap, "/l0", 3);
	CHECK(p != NULL);
	if (p) {
		/* the default bound: 1,000 embeds, 4 MiB of them */
		CHECK(p->body_len < (4u << 20) + 200000);
		CHECK(memmem(p->body, p->body_len, "class=\"embed-limit\"", 19) != NULL);
		CHECK(memmem(p->body, p->body_len, "The bottom.", 11) != NULL);
	}
	CHECK(has_diag(s, "L0.md", "max_embeds (1000)"));
	snapshot_unref(snap);
	site_free(s);

	/* configurable: three embeds per page */
	tv_write(root, "quire.yml", "max_embeds: 3\nmax_embed_size: 64K\n");
	tv_write(root, "L0.md", "![[L4]] ![[L4]]\n\n![[L4]]\n\n![[L4]]\n\n![[L4]]\n");
	s = load(root, 1);
	snap = site_snapshot(s, NULL);
	p = snapshot_get(snap, "/l0", 3);
	CHECK(p != NULL);
	if (p) {
		size_t shown = 0, markers = 0;
		const char *at = p->body, *end = p->body + p->body_len;
		while ((at = memmem(at, (size_t)(end - at), "The bottom.", 11)) && ++shown)
			at++;
		at = p->body;
		while ((at = memmem(at, (size_t)(end - at), "embed-limit", 11)) && ++markers)
			at++;
		CHECK_INT(shown, 3);
		CHECK_INT(markers, 2);
	}
	CHECK(has_diag(s, "L0.md", "max_embeds (3)"));
	CHECK(!has_diag(s, "L4.md", "max_embeds"));
	snapshot_unref(snap);
	site_free(s);

	/* a bad setting is an error naming it, and an invalid quire.yml loads nothing */
	tv_write(root, "quire.yml", "max_embeds: lots\nmax_embed_size: 12Q\n");
	CHECK(load(root, 1) == NULL);
	{
		struct config cfg;
		struct diag_list d;
		diag_list_init(&d);
		CHECK_INT(config_load(&cfg, root, &d), -1);
		CHECK_INT(d.nerrors, 2);
		CHECK(d.n == 2 && strstr(d.items[0].msg, "max_embeds must be") &&
		      strstr(d.items[1].msg, "max_embed_size must be"));
		config_release(&cfg);
		diag_list_release(&d);
	}
	buf_release(&text);
	tv_remove(root);
}

/* The bytes of the page at url in s's table, NUL-terminated by the page, or "". */
static const char *page_text(const struct site *s, const char *url)
{
	const struct page *p = map_gets(&s->pages, url);
	return p && p->body ? p->body : "";
}

/* n bytes of a note: "# Big" and lines of text. */
static void write_sized(const char *root, const char *rel, size_t n)
{
	struct buf b = BUF_INIT;

	buf_adds(&b, "# Big\n\n");
	while (b.len < n)
		buf_adds(&b, "A line of the big note, over and over.\n");
	buf_setlen(&b, n);
	tv_write_len(root, rel, b.ptr, b.len);
	buf_release(&b);
}

/*
 * A note over max_note_size (quire.yml) is not read: an error names it,
 * its size and the limit, it is not published (no page; links to it are
 * text, as to a draft), and everything else is. Through site_apply(), as
 * the watcher and the sync API reach the loader, it comes and goes with
 * its size. Attachments are not notes: no limit of this kind.
 */
static void test_note_too_big(void)
{
	char *root = tv_new();
	const char *paths[] = { "big.md" };
	const struct site_note *n;
	struct site *s;

	tv_write(root, "quire.yml", "max_note_size: 2K\n");
	write_sized(root, "big.md", 3000);
	write_sized(root, "big.png", 3000);
	tv_write(root, "small.md", "# Small\n\nSee [[big]], [[other]] and ![[big.png]].\n");
	tv_write(root, "other.md", "# Other\n");
	s = load(root, 1);
	CHECK(s != NULL);
	if (!s)
		goto out;
	CHECK_INT(s->cfg.max_note_size, 2048);
	CHECK(has_diag(s, "big.md", "3000 bytes, over max_note_size (2048"));
	CHECK_INT(s->diags.nerrors, 1);
	n = find_note(s, "big.md");
	CHECK(n && !n->published && !n->page);
	CHECK(map_gets(&s->pages, "/big") == NULL);
	CHECK(strstr(page_text(s, "/small"), "See big, <a class=\"internal\" href=\"/other\"") != NULL);
	CHECK(map_gets(&s->pages, "/big.png") != NULL);
	/* cut under the limit: read, published, the error gone */
	write_sized(root, "big.md", 1000);
	site_apply(s, paths, 1);
	n = find_note(s, "big.md");
	CHECK(n && n->published && n->page);
	CHECK(!has_diag(s, "big.md", "max_note_size"));
	CHECK(strstr(page_text(s, "/small"), "href=\"/big\"") != NULL);
	/* over it again: withdrawn */
	write_sized(root, "big.md", 5000);
	site_apply(s, paths, 1);
	n = find_note(s, "big.md");
	CHECK(n && !n->published && !n->page);
	CHECK(map_gets(&s->pages, "/big") == NULL);
	CHECK(has_diag(s, "big.md", "5000 bytes, over max_note_size"));
	CHECK(strstr(page_text(s, "/small"), "href=\"/big\"") == NULL);
	site_free(s);
	/* a bad value is an error naming the setting, and quire.yml is invalid: nothing loads */
	tv_write(root, "quire.yml", "max_note_size: 12Q\n");
	{
		struct config cfg;
		struct diag_list d;
		size_t i;
		int named = 0;

		diag_list_init(&d);
		CHECK_INT(config_load(&cfg, root, &d), -1);
		for (i = 0; i < d.n; i++)
			named |= strstr(d.items[i].msg, "max_note_size must be") != NULL;
		CHECK(named);
		config_release(&cfg);
		diag_list_release(&d);
	}
	CHECK(load(root, 1) == NULL);
out:
	tv_remove(root);
}

/*
 * publish.css at the vault's root is the site's own CSS, as in Obsidian
 * Publish: served at /_quire/publish.css and linked from every page, last.
 * Without it an empty stylesheet stands there, so the file coming, changing
 * or going changes that one page and renders or composes nothing else.
 */
static void test_site_stylesheet(void)
{
	char *v = tv_new();
	const char *path = "publish.css";
	struct site *s;

	tv_write(v, "a.md", "# A\n\n> [!recipe] Soup\n> Water.\n");
	tv_write(v, "sub/b.md", "B\n");
	s = load(v, 2);
	CHECK(s != NULL);
	if (!s)
		goto out;
	CHECK(strstr(page_text(s, "/_quire/publish.css"), "no publish.css") != NULL);
	CHECK(strstr(page_text(s, "/a"), "<link rel=\"stylesheet\" href=\"/_quire/publish.css\">"));
	CHECK(strstr(page_text(s, "/sub/b"), "href=\"/_quire/publish.css\""));

	tv_write(v, "publish.css", ".callout[data-callout=\"recipe\"] { --callout-color: 200, 110, 30; }\n");
	site_apply(s, &path, 1);
	CHECK(strstr(page_text(s, "/_quire/publish.css"), "200, 110, 30") != NULL);
	CHECK_INT(s->nrendered, 0);
	CHECK_INT(s->ncomposed, 0);
	CHECK(map_gets(&s->pages, "/publish.css") == NULL); /* not an attachment nobody links */

	tv_write(v, "publish.css", "body { color: teal; } /* longer now */\n");
	site_apply(s, &path, 1);
	CHECK(strstr(page_text(s, "/_quire/publish.css"), "teal") != NULL);
	CHECK_INT(s->ncomposed, 0);

	tv_unlink(v, "publish.css");
	site_apply(s, &path, 1);
	CHECK(strstr(page_text(s, "/_quire/publish.css"), "no publish.css") != NULL);
	CHECK_INT(s->ncomposed, 0);
	site_free(s);

	/* publish_css: false: no link, no page */
	tv_write(v, "quire.yml", "publish_css: false\n");
	tv_write(v, "publish.css", "body { color: teal; }\n");
	s = load(v, 2);
	CHECK(s != NULL);
	if (!s)
		goto out;
	CHECK(map_gets(&s->pages, "/_quire/publish.css") == NULL);
	CHECK(!strstr(page_text(s, "/a"), "publish.css"));
	site_free(s);
out:
	tv_remove(v);
}

/*
 * A favicon at the vault's root, named as Obsidian Publish names them, is
 * the site's icon at /_quire/favicon, a URL that stays: choosing another
 * changes that one page. Without one, quire's own icon stands there.
 */
static void test_site_icon(void)
{
	char *v = tv_new();
	const char *ico = "favicon.ico", *png = "favicon-32x32.png";
	const struct page *p;
	struct site *s;

	tv_write(v, "a.md", "A\n");
	s = load(v, 2);
	CHECK(s != NULL);
	if (!s)
		goto out;
	p = map_gets(&s->pages, "/_quire/favicon");
	CHECK(p && !strcmp(p->content_type, "image/svg+xml") && strstr(p->body, "<svg"));
	CHECK(strstr(page_text(s, "/a"), "<link rel=\"icon\" href=\"/_quire/favicon\">") != NULL);

	tv_write_len(v, "favicon.ico", "\0\0\1\0ICO", 7);
	site_apply(s, &ico, 1);
	p = map_gets(&s->pages, "/_quire/favicon");
	CHECK(p && p->body_len == 7 && !memcmp(p->body, "\0\0\1\0ICO", 7));
	CHECK_INT(s->ncomposed, 0);

	tv_write_len(v, "favicon-32x32.png", "\x89PNG32", 7);
	site_apply(s, &png, 1);
	p = map_gets(&s->pages, "/_quire/favicon");
	CHECK(p && !strcmp(p->content_type, "image/png") && !memcmp(p->body, "\x89PNG32", 7));

	tv_unlink(v, "favicon-32x32.png");
	site_apply(s, &png, 1);
	p = map_gets(&s->pages, "/_quire/favicon");
	CHECK(p && p->body_len == 7 && !memcmp(p->body, "\0\0\1\0ICO", 7)); /* the next one */
	CHECK_INT(s->ncomposed, 0);
	site_free(s);
out:
	tv_remove(v);
}

/*
 * A slug, alias, route or file name cannot take over what quire serves
 * itself (robots.txt, feeds, sitemaps, /_quire/, /api/, dot-segments):
 * slugs and routes are refused with an error, aliases stay names (no
 * redirect, no diagnostic: Obsidian gives none), a path that leads
 * there is served beside it.
 */
static void test_reserved_urls(void)
{
	char *v = tv_new(), *out = tv_new();
	const struct page *p;
	struct snapshot *snap;
	struct site *s;

	tv_write(v, "quire.yml", "base_url: https://example.org\n");
	tv_write(v, "a.md", "---\nslug: /robots.txt\n---\nTAKEOVER robots\n");
	tv_write(v, "b.md", "---\nslug: /rss.xml\n---\nTAKEOVER rss\n");
	tv_write(v, "c.md", "---\nslug: /sitemap.xml\n---\nTAKEOVER sitemap\n");
	tv_write(v, "d.md", "---\nslug: /.quire/x\n---\nTAKEOVER dot\n");
	tv_write(v, "e.md", "---\naliases: [robots.txt, sitemap-0.xml, fine alias]\n---\nE\n");
	tv_write(v, "f.md", "---\nroutes: [/api/v1/files/x, /_quire/theme.css, /ok/route]\n---\nF\n");
	tv_write(v, "search.md", "A note named Search.\n");
	tv_write(v, "api/guide.md", "API guide.\n");
	tv_write(v, "tags/x/rss.xml.md", "A note named like a feed.\n");
	/* /tags/ is the tag index and tag pages (issue 31: a note could take it) */
	tv_write(v, "tags/index.md", "TAKEOVER tag index\n");
	tv_write(v, "tags/topic.md", "TAKEOVER topic page\n");
	tv_write(v, "g.md",
		 "---\ntags: [topic]\nslug: /tags/\n---\nTagged. [[tags/topic/rss.xml]]\n");
	tv_write(v, "h.md", "---\nslug: /tags/topic\nroutes: [/tags/topic/rss.xml]\n---\nH\n");
	tv_write(v, "Tags.md", "A note named Tags keeps /tags.\n");
	tv_write(v, "dav/notes.md", "A folder named dav.\n");
	tv_write(v, "tags/topic/rss.xml", "<rss>TAKEOVER feed</rss>\n");
	s = load(v, 2);
	CHECK(s != NULL);
	if (!s)
		goto out;
	snap = site_snapshot(s, NULL);
	p = snapshot_get(snap, "/robots.txt", 11);
	CHECK(p && !memmem(p->body, p->body_len, "TAKEOVER", 8) &&
	      strstr(p->content_type, "text/plain"));
	p = snapshot_get(snap, "/rss.xml", 8);
	/* (the feed lists the notes, TAKEOVER included: it must be the feed) */
	CHECK(p && strncmp(p->body, "<?xml", 5) == 0 && strstr(p->content_type, "rss+xml"));
	p = snapshot_get(snap, "/sitemap.xml", 12);
	CHECK(p && strncmp(p->body, "<?xml", 5) == 0 && !memmem(p->body, p->body_len, "<html", 5));
	CHECK(snapshot_get(snap, "/.quire/x", 9) == NULL);
	/* refused slugs: each note keeps the URL of its path */
	CHECK(snapshot_get(snap, "/a", 2) && snapshot_get(snap, "/d", 2));
	CHECK(has_diag(s, "a.md", "slug '/robots.txt' refused"));
	CHECK(has_diag(s, "b.md", "slug '/rss.xml' refused"));
	CHECK(has_diag(s, "d.md", "slug '/.quire/x' refused"));
	/* an alias is a name first: one that cannot be a URL stays a name, said nowhere */
	CHECK(!has_diag(s, "e.md", "alias"));
	p = snapshot_get(snap, "/sitemap-0.xml", 14);
	CHECK(p && p->kind != PAGE_REDIRECT);
	CHECK(snapshot_get(snap, "/fine-alias", 11) != NULL);
	CHECK(has_diag(s, "f.md", "route '/api/v1/files/x' refused"));
	CHECK(has_diag(s, "f.md", "route '/_quire/theme.css' refused"));
	CHECK(!has_diag(s, "f.md", "'/ok/route'"));
	/* paths that lead to reserved URLs are served beside them, with a warning */
	CHECK(snapshot_get(snap, "/search", 7) == NULL);
	CHECK(snapshot_get(snap, "/search-2", 9) != NULL);
	CHECK(snapshot_get(snap, "/api-2/guide", 12) != NULL);
	CHECK(has_diag(s, "api/guide.md", "served at /api-2/guide"));
	CHECK(snapshot_get(snap, "/tags-2/x/rss.xml-2", 19) != NULL);
	CHECK(s->diags.nerrors >= 5);
	/* the tag index and a tag's page are quire's; the notes that asked are beside them */
	p = snapshot_get(snap, "/tags/", 6);
	CHECK(p && p->kind == PAGE_GENERATED &&
	      !memmem(page_bytes(p), p->body_len, "TAKEOVER", 8));
	p = snapshot_get(snap, "/tags/topic", 11);
	CHECK(p && p->kind == PAGE_GENERATED &&
	      !memmem(page_bytes(p), p->body_len, "TAKEOVER", 8) &&
	      memmem(page_bytes(p), p->body_len, "Tagged.", 7));
	CHECK(snapshot_get(snap, "/tags-2/", 8) && snapshot_get(snap, "/tags-2/topic", 13));
	CHECK(has_diag(s, "tags/index.md", "served at /tags-2/"));
	CHECK(has_diag(s, "g.md", "slug '/tags/' refused"));
	CHECK(has_diag(s, "h.md", "slug '/tags/topic' refused"));
	CHECK(has_diag(s, "h.md", "route '/tags/topic/rss.xml' refused"));
	CHECK(snapshot_get(snap, "/tags", 5) != NULL);
	CHECK(snapshot_get(snap, "/dav-2/notes", 12) && !snapshot_get(snap, "/dav/notes", 10));
	/* an attachment too: tag topic's feed stays the feed, the file is served beside it */
	p = snapshot_get(snap, "/tags/topic/rss.xml", 19);
	CHECK(p && p->kind == PAGE_GENERATED && strstr(p->content_type, "rss+xml"));
	p = snapshot_get(snap, "/tags-2/topic/rss.xml-2", 23);
	CHECK(p && p->kind == PAGE_FILE);
	/* the export writes none of it where quire's own files go */
	CHECK_INT(export_snapshot(snap, out, NULL), 0);
	CHECK(!tv_exists(out, ".quire/x.html") && !tv_exists(out, ".quire"));
	{
		struct buf robots = BUF_INIT, path = BUF_INIT;
		buf_addf(&path, "%s/robots.txt", out);
		CHECK(read_file(path.ptr, &robots) == 0 && !strstr(robots.ptr, "TAKEOVER"));
		buf_release(&robots);
		buf_release(&path);
	}
	snapshot_unref(snap);
	site_free(s);
out:
	tv_remove(v);
	tv_remove(out);
}

/*
 * With page_keep_identity(0) a page keeps only its gzip bytes; page_bytes()
 * gives back exactly the identity bytes, for many pages in turn (more
 * than its cache holds) and for a page that gzip would not shrink (which
 * keeps its body).
 */
static void test_gzip_only_pages(void)
{
	enum { N = 12 };
	struct page *p[N], *tiny;
	char *want[N];
	size_t i, round;

	page_keep_identity(0);
	for (i = 0; i < N; i++) {
		struct buf b = BUF_INIT;
		size_t k;
		for (k = 0; k < 400 + i * 37; k++)
			buf_addf(&b, "<p>line %zu of page %zu</p>\n", k, i);
		want[i] = xstrndup(b.ptr, b.len);
		p[i] = page_new(PAGE_GENERATED, "/x", 2);
		CHECK(page_set_body(p[i], buf_detach(&b, NULL), strlen(want[i]), GZIP_LEVEL) == 0);
		CHECK(p[i]->body == NULL && p[i]->gz != NULL);
		CHECK(p[i]->body_len == strlen(want[i]));
	}
	tiny = page_new(PAGE_GENERATED, "/t", 2);
	page_set_body(tiny, xstrdup("short"), 5, GZIP_LEVEL);
	CHECK(tiny->body != NULL && tiny->gz == NULL);
	CHECK(page_bytes(tiny) == tiny->body);
	for (round = 0; round < 3; round++)
		for (i = 0; i < N; i++) {
			const char *got = page_bytes(p[(i * 5 + round) % N]);
			size_t j = (i * 5 + round) % N;
			CHECK(got && memcmp(got, want[j], p[j]->body_len) == 0);
		}
	page_keep_identity(1);
	for (i = 0; i < N; i++) {
		page_unref(p[i]);
		free(want[i]);
	}
	page_unref(tiny);
}

/*
 * Files removed while the vault loads (an editor's save, a sync, a
 * checkout between the scan and the read): left out, the load completes,
 * nothing is published empty. A thread watches the vault with inotify;
 * when the loader opens its first note (the scan only stats), it removes
 * every other note, from the last: parsing meets some of them gone.
 */
#define VANISH_NOTES 3000

struct vanisher {
	const char *dir;
	int fd;
	size_t removed;
};

static void *vanish(void *arg)
{
	struct vanisher *v = arg;
	char ev[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	char name[32];
	size_t i;
	int go = 0;

	while (!go) {
		ssize_t n = read(v->fd, ev, sizeof(ev));
		char *p;

		if (n <= 0)
			return NULL;
		for (p = ev; p < ev + n && !go;) {
			const struct inotify_event *e = (const struct inotify_event *)p;
			go = (e->mask & IN_OPEN) && e->len && strstr(e->name, ".md");
			p += sizeof(*e) + e->len;
		}
	}
	for (i = VANISH_NOTES; i-- > 1;) {
		if (i % 2)
			continue;
		snprintf(name, sizeof(name), "n%05zu.md", i);
		tv_unlink(v->dir, name);
		v->removed++;
	}
	return NULL;
}

static void test_files_vanish_during_load(void)
{
	char *dir = tv_new();
	struct vanisher v = { dir, -1, 0 };
	struct buf text = BUF_INIT;
	struct snapshot *snap;
	struct site *s;
	pthread_t th;
	size_t i, kept = 0;

	for (i = 0; i < VANISH_NOTES; i++) {
		char name[32];

		buf_reset(&text);
		buf_addf(&text, "# Note %zu\n\nbody of note %zu, linking [[n%05zu]]\n", i, i,
			 (i + 1) % VANISH_NOTES);
		snprintf(name, sizeof(name), "n%05zu.md", i);
		tv_write(dir, name, text.ptr);
	}
	v.fd = inotify_init1(IN_CLOEXEC);
	CHECK(v.fd >= 0 && inotify_add_watch(v.fd, dir, IN_OPEN) >= 0);
	CHECK(pthread_create(&th, NULL, vanish, &v) == 0);
	s = load(dir, 2);
	close(v.fd); /* ends the thread's read if the loader never opened a note */
	pthread_join(th, NULL);
	CHECK(s != NULL);
	if (!s)
		goto out;
	fprintf(stderr, "  %zu of %d notes removed while loading, %zu of those while read\n",
		v.removed, VANISH_NOTES, s->nvanished);
	/* the race is the test: removing 1,500 files outruns reading them on any machine */
	CHECK(s->nvanished > 0);
	snap = site_snapshot(s, NULL);
	for (i = 0; i < VANISH_NOTES; i++) {
		char name[32], url[32];
		const struct site_note *n;
		const struct page *p;

		snprintf(name, sizeof(name), "n%05zu.md", i);
		snprintf(url, sizeof(url), "/n%05zu", i);
		n = find_note(s, name);
		p = snapshot_get(snap, url, strlen(url));
		if (n) {
			/* loaded before it went, or still there: the page has its text */
			char want[64];

			snprintf(want, sizeof(want), "body of note %zu,", i);
			kept++;
			CHECK(p != NULL && page_bytes(p) && memmem(page_bytes(p), p->body_len, want, strlen(want)));
			CHECK(!has_diag(s, name, "cannot read"));
		} else {
			CHECK(!tv_exists(dir, name));
			CHECK(p == NULL);
		}
	}
	CHECK_INT(s->diags.nerrors, 0);
	CHECK(kept >= VANISH_NOTES - v.removed && kept < VANISH_NOTES);
	snapshot_unref(snap);
	site_free(s);
out:
	buf_release(&text);
	tv_remove(dir);
}

/*
 * A folder renamed one file at a time, as the sync API's clients do it
 * (POST /api/v1/move per file), the moves reaching the loader in batches
 * of any size, each with both halves of its moves: every note's old URL
 * redirects to where it is now. (The 404s bench/structural.py saw after
 * such renames came from a move split over two changes while the old
 * file was being re-read: test_moves_across_changes reproduces that.)
 */
static void moved_in_batches(const char *dir, const char *folder, const char *to)
{
	struct buf from = BUF_INIT, dst = BUF_INIT;
	struct snapshot *snap;
	struct site *s;
	char **olds = NULL, **news = NULL, **urls = NULL;
	size_t i, n = 0, done = 0;
	unsigned seed = 7;

	s = load(dir, 2);
	CHECK(s != NULL);
	if (!s)
		goto out;
	for (i = 0; i < s->nnotes; i++) {
		const struct site_note *x = s->notes[i];
		if (strncmp(x->note.path, folder, strlen(folder)) != 0 || !x->url)
			continue;
		olds = xrealloc(olds, (n + 1) * sizeof(*olds));
		news = xrealloc(news, (n + 1) * sizeof(*news));
		urls = xrealloc(urls, (n + 1) * sizeof(*urls));
		olds[n] = xstrdup(x->note.path);
		buf_reset(&dst);
		buf_addf(&dst, "%s%s", to, x->note.path + strlen(folder));
		news[n] = xstrdup(dst.ptr);
		urls[n] = xstrdup(x->url);
		n++;
	}
	CHECK(n > 150);
	while (done < n) {
		size_t batch = 1 + (size_t)(rand_r(&seed) % 20), k;
		const char **paths;

		if (batch > n - done)
			batch = n - done;
		paths = xcalloc(2 * batch, sizeof(*paths));
		for (k = 0; k < batch; k++) {
			size_t j = done + k;
			char *slash;

			buf_reset(&from);
			buf_addf(&from, "%s/%s", dir, olds[j]);
			buf_reset(&dst);
			buf_addf(&dst, "%s/%s", dir, news[j]);
			for (slash = dst.ptr + strlen(dir) + 1; *slash; slash++) {
				if (*slash == '/') {
					*slash = '\0';
					mkdir(dst.ptr, 0755);
					*slash = '/';
				}
			}
			CHECK(rename(from.ptr, dst.ptr) == 0);
			paths[2 * k] = olds[j];
			paths[2 * k + 1] = news[j];
		}
		site_apply(s, paths, 2 * batch);
		free(paths);
		done += batch;
	}
	snap = site_snapshot(s, NULL);
	for (i = 0; i < n; i++) {
		const struct site_note *x = find_note(s, news[i]);

		CHECK(x != NULL && x->href != NULL);
		if (x && x->href)
			expect_redirect(snap, urls[i], x->href); /* Location is the encoded href */
	}
	snapshot_unref(snap);
	site_free(s);
out:
	for (i = 0; i < n; i++) {
		free(olds[i]);
		free(news[i]);
		free(urls[i]);
	}
	free(olds);
	free(news);
	free(urls);
	buf_release(&from);
	buf_release(&dst);
}

/*
 * A vault shaped like pwsh-docs's reference: three versions of one folder
 * of 200 notes with the same names (so their URLs collide and are shared
 * out by URL groups), each linking its neighbours by name, by path and to
 * a heading.
 */
static void write_versions(const char *dir)
{
	struct buf rel = BUF_INIT, text = BUF_INIT;
	int v, i;

	for (v = 4; v <= 6; v++) {
		for (i = 0; i < 200; i++) {
			buf_reset(&rel);
			buf_addf(&rel, "reference/7.%d/Core/Cmdlet-%03d.md", v, i);
			buf_reset(&text);
			buf_addf(&text, "# Cmdlet %03d\n\n## Syntax\n\nSee [[Cmdlet-%03d]], "
				 "[[Cmdlet-%03d#Syntax]] and [next](Cmdlet-%03d.md).\n",
				 i, (i + 1) % 200, (i + 7) % 200, (i + 1) % 200);
			tv_write(dir, rel.ptr, text.ptr);
		}
	}
	tv_write(dir, "index.md", "Start at [[reference/7.6/Core/Cmdlet-000]].\n");
	buf_release(&rel);
	buf_release(&text);
}

static void test_folder_moved_in_batches(void)
{
	char *dir = tv_new(), *src;

	write_versions(dir);
	moved_in_batches(dir, "reference/7.6/Core/", "reference/7.6/Core Moved/");
	tv_remove(dir);
	src = tv_corpus_vault("pwsh-docs", "the same moves on a real vault's folder of 150 notes "
			      "(a generated one ran)");
	if (!src)
		return;
	dir = tv_new();
	CHECK(tv_copy(src, dir) == 0);
	moved_in_batches(dir, "reference/7.6/Microsoft.PowerShell.Core/",
			 "reference/7.6/Core Moved/");
	tv_remove(dir);
	free(src);
}

int main(void)
{
	md_global_init();
	RUN(test_gzip_only_pages);
	RUN(test_pwsh_docs);
	RUN(test_tasks_docs);
	RUN(test_unpublished_leaves_no_trace);
	RUN(test_explicit_mode);
	RUN(test_conflict_copy_private);
	RUN(test_bad_input);
	RUN(test_urls_and_aliases);
	RUN(test_moves);
	RUN(test_moves_across_changes);
	RUN(test_permalinks);
	RUN(test_embed_sections);
	RUN(test_markdown_links);
	RUN(test_embedded_blocks);
	RUN(test_home_setting);
	RUN(test_math_and_diagram_scripts);
	RUN(test_line_breaks);
	RUN(test_deterministic_across_threads);
	RUN(test_embed_amplification);
	RUN(test_note_too_big);
	RUN(test_reserved_urls);
	RUN(test_site_stylesheet);
	RUN(test_site_icon);
	RUN(test_files_vanish_during_load);
	RUN(test_folder_moved_in_batches);
	return test_done();
}
