/* test-unicode.c: sanitizing, normalization, folding, slugs and URLs. */
#include "lib/test.h"
#include "util/unicode.h"
#include "vault/vault.h"

#include <stdlib.h>

static void test_sanitize(void)
{
	struct buf b = BUF_INIT;
	int line;
	size_t bad;

	bad = utf8_sanitize("\xEF\xBB\xBFok\n\xff\xfe x\x01y\n", 13, &b, &line);
	CHECK_INT(bad, 3);
	CHECK_INT(line, 2);
	CHECK_STR(b.ptr, "ok\n\xEF\xBF\xBD\xEF\xBF\xBD x\xEF\xBF\xBDy\n");
	buf_reset(&b);
	bad = utf8_sanitize("a\0b", 3, &b, &line);
	CHECK_INT(bad, 1);
	CHECK_INT(b.len, 5);
	buf_reset(&b);
	/* a truncated multi-byte sequence at the end */
	bad = utf8_sanitize("caf\xC3", 4, &b, NULL);
	CHECK_INT(bad, 1);
	CHECK_STR(b.ptr, "caf\xEF\xBF\xBD");
	buf_reset(&b);
	CHECK_INT(utf8_sanitize("tab\there\r\n", 10, &b, NULL), 0);
	buf_release(&b);
	CHECK(utf8_valid("Привет", strlen("Привет")));
	CHECK(!utf8_valid("a\xC0\xAF", 3)); /* overlong */
}

static void test_normalize(void)
{
	/* "é" decomposed (NFD, as macOS writes) and composed (NFC) */
	const char *nfd = "Cafe\xCC\x81", *nfc = "Caf\xC3\xA9";
	char *a = utf8_nfc(nfd, strlen(nfd)), *b = utf8_fold(nfd, strlen(nfd)),
	     *c = utf8_fold("CAFÉ", strlen("CAFÉ"));

	CHECK_STR(a, nfc);
	CHECK_STR(b, "caf\xC3\xA9");
	CHECK_STR(c, "caf\xC3\xA9");
	free(a);
	free(b);
	free(c);
	a = utf8_fold("ΣΊΣΥΦΟΣ", strlen("ΣΊΣΥΦΟΣ"));
	b = utf8_fold("σίσυφος", strlen("σίσυφος"));
	CHECK_STR(a, b);
	free(a);
	free(b);
	a = utf8_lower("Straße ÄÖÜ", strlen("Straße ÄÖÜ"));
	CHECK_STR(a, "straße äöü");
	free(a);
}

static void check_url(const char *path, const char *slug, const char *want)
{
	char *u = vault_note_url(path, slug);
	CHECK_STR(u, want);
	free(u);
}

static void test_urls(void)
{
	check_url("index.md", NULL, "/");
	check_url("Index.md", NULL, "/");
	check_url("Guides/index.md", NULL, "/guides/");
	check_url("Guides/Getting Started.md", NULL, "/guides/getting-started");
	check_url("a/What's new? (2024).md", NULL, "/a/what-s-new-2024");
	check_url("100% done #1.md", NULL, "/100-done-1");
	check_url("Заметки/Привет Мир.md", NULL, "/заметки/привет-мир");
	check_url("日本語/東京 タワー.md", NULL, "/日本語/東京-タワー");
	check_url("emoji 🎉 party.md", NULL, "/emoji-party");
	check_url("v1.2_notes.md", NULL, "/v1.2_notes");
	check_url("a/Note.md", "Custom Slug", "/a/custom-slug");
	check_url("a/Note.md", "/top/level", "/top/level");
	check_url("a/Note.md", "/", "/");
	check_url("a/Note.md", "/../../etc/passwd", "/-/-/etc/passwd");
	check_url("a/Note.md", "../x", "/a/..-x");
	check_url("Cafe\xCC\x81.md", NULL, "/caf\xC3\xA9");
	check_url("שלום עולם.md", NULL, "/שלום-עולם");
}

static void test_hosts_and_types(void)
{
	char *h = host_normalize("Docs.Example.COM:8080");
	CHECK_STR(h, "docs.example.com");
	free(h);
	h = host_normalize("example.com.");
	CHECK_STR(h, "example.com");
	free(h);
	h = host_normalize("[::1]:80");
	CHECK_STR(h, "[::1]");
	free(h);
	CHECK_STR(vault_content_type("a/b.PNG"), "image/png");
	CHECK_STR(vault_content_type("a.b/c"), "application/octet-stream");
	CHECK(vault_is_note_path("x/Y.MD"));
	CHECK(!vault_is_note_path(".md"));
}

static void test_ignored(void)
{
	struct config cfg = { 0 };
	char *globs[] = { "templates", "*.excalidraw.md", "private/*" };

	cfg.ignore = globs;
	cfg.nignore = 3;
	CHECK(vault_ignored(&cfg, ".obsidian/app.json"));
	CHECK(vault_ignored(&cfg, "a/.trash/x.md"));
	CHECK(vault_ignored(&cfg, "templates/daily.md"));
	CHECK(vault_ignored(&cfg, "drawing.excalidraw.md"));
	CHECK(vault_ignored(&cfg, "private/deep/x.md"));
	CHECK(!vault_ignored(&cfg, "templatesx/a.md"));
	CHECK(!vault_ignored(&cfg, "notes/a.md"));
}

int main(void)
{
	RUN(test_sanitize);
	RUN(test_normalize);
	RUN(test_urls);
	RUN(test_hosts_and_types);
	RUN(test_ignored);
	return test_done();
}
