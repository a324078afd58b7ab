/*
 * vault.h: the folder on disk: scanning it, reading files, paths and URLs.
 *
 * A vault is a folder of notes (*.md) and attachments (everything else).
 * Dot-files and dot-folders (.obsidian, .git, .trash, .quire) are never
 * loaded, nor anything matching an `ignore` glob of quire.yml. A symlink is
 * followed only when it is a file whose target lies inside the vault, so
 * nothing outside the vault can be published; symlinked folders are not
 * followed (they could form loops or leave the vault).
 *
 * Paths are kept twice: `disk` as the bytes the file system gave (macOS
 * syncs arrive in NFD), and `path` in NFC, which every index and URL uses.
 */
#ifndef QUIRE_VAULT_H
#define QUIRE_VAULT_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "util/buf.h"
#include "util/diag.h"
#include "util/files.h"
#include "vault/config.h"

struct vault_file {
	char *path;     /* vault-relative, NFC, '/'-separated, valid UTF-8 */
	char *disk;     /* vault-relative as on disk */
	off_t size;
	time_t mtime;
	int is_note;
};

struct vault_scan {
	struct vault_file *files;  /* sorted by path (byte order) */
	size_t n, alloc;
};
#define VAULT_SCAN_INIT { NULL, 0, 0 }

/*
 * Lists the vault's files into out (VAULT_SCAN_INIT). Unreadable folders
 * and file names that are not valid UTF-8 are diagnostics, not failures.
 * Returns 0, or -1 when root itself cannot be read (logged).
 */
int vault_scan(const char *root, const struct config *cfg, struct vault_scan *out,
	       struct diag_list *diags);

/*
 * Like vault_scan(), for the folder sub (vault-relative, as on disk) and
 * everything below it. Returns -1 when sub cannot be read (not logged).
 */
int vault_scan_under(const char *root, const char *sub, const struct config *cfg,
		     struct vault_scan *out, struct diag_list *diags);

enum vault_entry { VAULT_MISSING, VAULT_FILE, VAULT_FOLDER };

/*
 * What is at the vault-relative path rel under the scan's rules: a file
 * (with *st filled), a folder, or nothing (absent, ignored, a dot path, a
 * symlink leaving the vault or naming a folder, not a regular file).
 */
enum vault_entry vault_stat(const char *root, const struct config *cfg, const char *rel,
			    struct stat *st);
void vault_scan_release(struct vault_scan *s);

/* True when a vault-relative path is excluded: a dot segment or an ignore glob. */
int vault_ignored(const struct config *cfg, const char *path);

/* True when the path names a note (ends in .md, any case). */
int vault_is_note_path(const char *path);

/*
 * The infix of a conflict copy's file name, as quire sync and Syncthing
 * write it beside the file they kept: NAME.sync-conflict-WHEN-WHO.EXT.
 */
#define VAULT_CONFLICT_INFIX ".sync-conflict-"

/*
 * True when the path's last segment is a conflict copy's name (holds
 * VAULT_CONFLICT_INFIX after its first character): a side of an edit
 * that waits for its author, synced like any file but never published.
 */
int vault_is_conflict_copy(const char *path);

/*
 * Appends line (with its '\n') to path, creating its folder, and fsyncs it:
 * for the small logs kept in the data dir (moves). Returns 0, or -1 with
 * errno set.
 */
int vault_append_line(const char *path, const char *line);

/*
 * The URL path of a note (decoded, no prefix): "/folder/my-note",
 * "/folder/" for folder/index.md, "/" for index.md. slug (or NULL) replaces
 * the last segment, or the whole path when it starts with '/'. The caller
 * frees the result.
 */
char *vault_note_url(const char *path, const char *slug);

/*
 * The URL path of the folder folder[0, len) (decoded, no prefix), where its
 * listing or its index note is: "/a/b/"; "/" for the root; the
 * vault_url_unreserved() of that when it is reserved ("tags" lists at
 * "/tags-2/"). The caller frees it.
 */
char *vault_folder_url(const char *folder, size_t len);

/*
 * Why the decoded URL path url is quire's own and no note may claim it (as
 * its URL, a slug, an alias or a route), or NULL when it is free: feeds,
 * sitemaps, robots.txt, /_quire/, /api/, /tags/ (the tag pages; "/tags"
 * alone is free), /dav (WebDAV), /healthz, /metrics, /search, and any
 * segment that starts with '.'. The reason is a static string.
 */
const char *vault_url_reserved(const char *url);

/*
 * A URL for a note whose own URL is reserved: its first segment with "-2"
 * appended ("/search" -> "/search-2", "/api/x" -> "/api-2/x"), which is
 * never reserved. The caller frees it.
 */
char *vault_url_unreserved(const char *url);

/* One path segment as a URL segment: lowercase, runs of other characters to '-'. */
void vault_slugify(struct buf *out, const char *seg, size_t len);

/*
 * The URL path of an attachment: "/" + its vault path, case kept, or
 * vault_url_unreserved() of that when it is reserved. Caller frees.
 */
char *vault_file_url(const char *path);

/* The MIME type for a file name by extension; "application/octet-stream" when unknown. */
const char *vault_content_type(const char *path);

#endif
