/*
 * test-resolve.c: link resolution as Obsidian does it: case, NFC vs NFD,
 * shortest path, same folder first, relative paths, the same name in two
 * folders, notes against attachments, special characters.
 */
#include "vault/resolve.h"

#include <stdint.h>
#include <stdlib.h>
#include "lib/test.h"

static const char *const notes[] = {
	"index.md",                       /* 0 */
	"Projects/Alpha.md",              /* 1 */
	"Archive/2019/Alpha.md",          /* 2 */
	"Projects/Sub/Beta.md",           /* 3 */
	"Beta.md",                        /* 4 */
	"Caf\xC3\xA9 Notes.md",           /* 5 (NFC) */
	"photo.md",                       /* 6 */
	"Weird/100% #1 what?.md",         /* 7 */
	"Заметки/Привет.md",              /* 8 */
	"Deep/a/b/Gamma.md",              /* 9 */
	"Other/a/b/Gamma.md",             /* 10 */
	"v1.2.md",                        /* 11 */
	"Archive/2019/Delta.md",          /* 12 */
	"Archive/2020/Delta.md",          /* 13 */
	"Delta.md",                       /* 14 */
};
static const char *const files[] = {
	"photo.png",                      /* 0 */
	"attachments/diagram.svg",        /* 1 */
	"Projects/report.pdf",            /* 2 */
	"attachments/Photo.PNG.backup",   /* 3 */
};

static struct resolver *r;

static void expect(const char *from, const char *target, enum resolve_kind kind, size_t id)
{
	void *item = NULL;
	enum resolve_kind k = resolver_find(r, from, target, &item);
	size_t got = item ? (uintptr_t)item - 1 : 999;

	if (k != kind || (kind != RESOLVE_NONE && got != id)) {
		fprintf(stderr, "  [[%s]] from %s: got kind %d id %zu, want kind %d id %zu\n", target,
			from, k, got, kind, id);
		test_current_failed = 1;
	}
}

static void test_by_name(void)
{
	expect("index.md", "Beta", RESOLVE_NOTE, 4);
	expect("index.md", "beta", RESOLVE_NOTE, 4);
	expect("index.md", "BETA.md", RESOLVE_NOTE, 4);
	expect("index.md", "  Beta ", RESOLVE_NOTE, 4);
	expect("index.md", "Nope", RESOLVE_NONE, 0);
	expect("index.md", "", RESOLVE_NONE, 0);
}

static void test_shortest_and_same_folder(void)
{
	/* two Alphas: the shortest path wins from elsewhere... */
	expect("index.md", "Alpha", RESOLVE_NOTE, 1);
	/* ...but a note in the linking note's own folder wins first */
	expect("Archive/2019/Delta.md", "alpha", RESOLVE_NOTE, 2);
	/* equal depth: byte order decides, deterministically */
	expect("index.md", "Gamma", RESOLVE_NOTE, 9);
	expect("index.md", "Delta", RESOLVE_NOTE, 14);          /* the root's: shortest */
	expect("Archive/Note.md", "Delta", RESOLVE_NOTE, 14);
	expect("Archive/2020/Delta.md", "Delta", RESOLVE_NOTE, 13);
	/* Beta: root beats Projects/Sub */
	expect("Projects/Alpha.md", "Beta", RESOLVE_NOTE, 4);
	expect("Projects/Sub/Beta.md", "Beta", RESOLVE_NOTE, 3);
}

static void test_paths(void)
{
	expect("index.md", "Projects/Alpha", RESOLVE_NOTE, 1);
	expect("index.md", "projects/alpha.md", RESOLVE_NOTE, 1);
	expect("index.md", "/Archive/2019/Alpha", RESOLVE_NOTE, 2);
	expect("index.md", "2019/Alpha", RESOLVE_NOTE, 2);      /* the tail of a longer path */
	expect("index.md", "Other/a/b/Gamma", RESOLVE_NOTE, 10);
	expect("index.md", "a/b/Gamma", RESOLVE_NOTE, 9);       /* tail, shortest then byte order */
	expect("Projects/Alpha.md", "Sub/Beta", RESOLVE_NOTE, 3); /* from the note's folder */
	expect("index.md", "Nope/Alpha", RESOLVE_NONE, 0);
}

static void test_relative(void)
{
	expect("Projects/Alpha.md", "./Sub/Beta", RESOLVE_NOTE, 3);
	expect("Projects/Sub/Beta.md", "../Alpha", RESOLVE_NOTE, 1);
	expect("Projects/Sub/Beta.md", "../../Beta", RESOLVE_NOTE, 4);
	expect("Projects/Sub/Beta.md", "../../../Beta", RESOLVE_NONE, 0); /* leaves the vault */
	expect("Projects/Alpha.md", "./Alpha", RESOLVE_NOTE, 1);
	expect("Projects/Alpha.md", "./Beta", RESOLVE_NONE, 0);      /* relative means exact */
	expect("Projects/Alpha.md", "./report.pdf", RESOLVE_FILE, 2);
}

/*
 * A target starting with '/' is a path from the vault's root, from any
 * folder: [[/Delta]] in Archive/2019 is the root's Delta, not the one
 * beside it, and a root path that names nothing is broken, never looked
 * up by name or as a tail elsewhere.
 */
static void test_root_absolute(void)
{
	expect("Archive/2019/Alpha.md", "Delta", RESOLVE_NOTE, 12);   /* by name: its own folder */
	expect("Archive/2019/Alpha.md", "/Delta", RESOLVE_NOTE, 14);
	expect("Archive/2019/Alpha.md", "/delta.md", RESOLVE_NOTE, 14);
	expect("Archive/2020/Delta.md", "/Archive/2019/Delta", RESOLVE_NOTE, 12);
	expect("Projects/Sub/Beta.md", "/Beta", RESOLVE_NOTE, 4);
	expect("index.md", "/photo.png", RESOLVE_FILE, 0);
	expect("index.md", "/attachments/diagram.svg", RESOLVE_FILE, 1);
	expect("index.md", "/Alpha", RESOLVE_NONE, 0);          /* only Projects/ has one */
	expect("index.md", "/2019/Alpha", RESOLVE_NONE, 0);     /* no tail from the root */
	expect("Projects/Alpha.md", "/Sub/Beta", RESOLVE_NONE, 0); /* nor the note's folder */
	expect("index.md", "/diagram.svg", RESOLVE_NONE, 0);
	expect("index.md", "//Beta", RESOLVE_NOTE, 4);
}

static void test_unicode(void)
{
	/* NFD in the link (as typed on macOS) finds the NFC file name, any case */
	expect("index.md", "Cafe\xCC\x81 notes", RESOLVE_NOTE, 5);
	expect("index.md", "CAF\xC3\x89 NOTES", RESOLVE_NOTE, 5);
	expect("index.md", "привет", RESOLVE_NOTE, 8);
	expect("index.md", "Заметки/ПРИВЕТ", RESOLVE_NOTE, 8);
}

static void test_notes_and_files(void)
{
	expect("index.md", "photo", RESOLVE_NOTE, 6);
	expect("index.md", "photo.png", RESOLVE_FILE, 0);
	expect("index.md", "Photo.PNG", RESOLVE_FILE, 0);
	expect("index.md", "diagram.svg", RESOLVE_FILE, 1);
	expect("index.md", "attachments/diagram.svg", RESOLVE_FILE, 1);
	expect("index.md", "diagram", RESOLVE_NONE, 0);
	expect("index.md", "v1.2", RESOLVE_NOTE, 11);       /* a dot in a note's name */
	expect("index.md", "report.pdf", RESOLVE_FILE, 2);
	expect("index.md", "missing.png", RESOLVE_NONE, 0);
}

static void test_special_characters(void)
{
	expect("index.md", "100% #1 what?", RESOLVE_NOTE, 7);
	expect("index.md", "weird/100% #1 WHAT?", RESOLVE_NOTE, 7);
}

static void index_all(void)
{
	size_t i;

	r = resolver_new();
	for (i = 0; i < sizeof(notes) / sizeof(*notes); i++)
		resolver_add(r, notes[i], RESOLVE_NOTE, (void *)(uintptr_t)(i + 1));
	for (i = 0; i < sizeof(files) / sizeof(*files); i++)
		resolver_add(r, files[i], RESOLVE_FILE, (void *)(uintptr_t)(i + 1));
}

/* Entries come and go as the vault changes; lookups follow. */
static void test_add_remove(void)
{
	expect("index.md", "Alpha", RESOLVE_NOTE, 1);
	resolver_remove(r, notes[1], RESOLVE_NOTE, (void *)(uintptr_t)2);
	expect("index.md", "Alpha", RESOLVE_NOTE, 2);        /* the other Alpha now */
	expect("index.md", "Projects/Alpha", RESOLVE_NONE, 0);
	resolver_remove(r, notes[2], RESOLVE_NOTE, (void *)(uintptr_t)3);
	expect("index.md", "Alpha", RESOLVE_NONE, 0);
	resolver_add(r, notes[1], RESOLVE_NOTE, (void *)(uintptr_t)2);
	resolver_add(r, notes[2], RESOLVE_NOTE, (void *)(uintptr_t)3);
	expect("index.md", "Alpha", RESOLVE_NOTE, 1);
	/* a file and a note at one folded path: both entries kept apart */
	resolver_add(r, "Photo.PNG", RESOLVE_FILE, (void *)(uintptr_t)100);
	resolver_remove(r, "Photo.PNG", RESOLVE_FILE, (void *)(uintptr_t)100);
	expect("index.md", "photo.png", RESOLVE_FILE, 0);
}

static void test_name_keys(void)
{
	char *k = resolve_name_key("Folder/My Note.md");
	CHECK_STR(k, "my note");
	free(k);
	k = resolve_name_key("../up/PHOTO.png");
	CHECK_STR(k, "photo.png");
	free(k);
	k = resolve_name_key("Cafe\xCC\x81");
	CHECK_STR(k, "caf\xC3\xA9");
	free(k);
}

int main(void)
{
	index_all();
	RUN(test_by_name);
	RUN(test_shortest_and_same_folder);
	RUN(test_paths);
	RUN(test_relative);
	RUN(test_root_absolute);
	RUN(test_unicode);
	RUN(test_notes_and_files);
	RUN(test_special_characters);
	RUN(test_add_remove);
	RUN(test_name_keys);
	resolver_free(r);
	return test_done();
}
