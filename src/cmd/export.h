/*
 * export.h: a snapshot as static files.
 *
 * The bytes written are exactly those the server sends: note pages as
 * <url>.html (or <url>/index.html for folder URLs), a .gz beside each page
 * that has gzip bytes (for nginx's gzip_static), attachments copied, theme
 * assets under _quire/, redirects as small HTML pages that point at their
 * target (a static host cannot answer 301), and 404.html.
 */
#ifndef QUIRE_EXPORT_H
#define QUIRE_EXPORT_H

#include <stddef.h>

#include "site/snapshot.h"

struct export_stats {
	size_t files;      /* files written, .gz included */
	size_t bytes;      /* bytes written */
};

/*
 * Writes snap under dir (created if missing). Returns 0, or -1 on the first
 * I/O error (logged with the path). Refuses keys with "." or ".." segments,
 * so nothing is written outside dir.
 */
int export_snapshot(const struct snapshot *snap, const char *dir, struct export_stats *stats);

/* The file a page key is exported to, relative to the export folder. Caller frees. */
char *export_path(const struct page *p);

#endif
