/*
 * export.h: a snapshot as static files, every host, complete.
 *
 * The bytes written are exactly those the server sends: note pages as
 * <url>.html (or <url>/index.html for folder URLs), a .gz beside each page
 * that has gzip bytes (for nginx's gzip_static), attachments copied, theme
 * assets under _quire/, tag and folder pages, feeds, sitemaps, robots.txt,
 * the explorer's JSON, and 404.html. Redirects (aliases, old URLs) are
 * written three ways: a small HTML page that points at the target (any
 * static host), a line of redirects.map (an nginx map: `map $uri
 * $quire_redirect { include .../redirects.map; }`) and of _redirects
 * (Netlify, Cloudflare Pages). Each custom domain (hosts.h) gets the same
 * under _hosts/<name>/: its routes and own resources, the attachments and
 * theme it serves, and, for an open host, every page as rendered for it;
 * hosts.map and redirects-hosts.map at the top let one nginx server
 * serve every host (export-collect.c, deploy/nginx-export.conf).
 * The static search index is under _quire/search/ (export-search.c).
 *
 * The manifest. DIR/.quire-export lists each file written with a hash of
 * its bytes (the page's ETag). The next export into DIR removes the files
 * it lists that are gone, and --incremental skips the files whose hash did
 * not change and that are still there: an edit rewrites a few files, and
 * rsync or an object-store sync afterwards sends only those.
 */
#ifndef QUIRE_EXPORT_H
#define QUIRE_EXPORT_H

#include <stddef.h>
#include <stdio.h>

#include "site/snapshot.h"

struct export_stats {
	size_t files;      /* files written, .gz included */
	size_t bytes;      /* bytes written */
	size_t unchanged;  /* files left as they were (--incremental) */
	size_t removed;    /* files of the last export that are gone */
};

struct export_options {
	int incremental;   /* skip files whose bytes did not change since the manifest */
	FILE *log;         /* "write PATH" / "remove PATH" lines, or NULL */
	const char *prefix; /* the site's URL prefix ("" or "/notes"), for the redirect maps */
};

/*
 * Writes snap under dir (created if missing), as described above. Returns
 * 0, or -1 on the first I/O error (logged with the path). Refuses keys with
 * "." or ".." segments, so nothing is written outside dir. opt may be NULL
 * (a full export, silent, no prefix).
 */
int export_site(const struct snapshot *snap, const char *dir, const struct export_options *opt,
		struct export_stats *stats);

/* export_site() with no options. */
int export_snapshot(const struct snapshot *snap, const char *dir, struct export_stats *stats);

/* The file a page key is exported to, relative to the export folder. Caller frees. */
char *export_path(const struct page *p);

#endif
