/*
 * export-int.h: what export.c, export-collect.c and export-search.c share.
 */
#ifndef QUIRE_EXPORT_INT_H
#define QUIRE_EXPORT_INT_H

#include "site/snapshot.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/map.h"

enum export_rep {
	REP_BODY,   /* the page's identity bytes */
	REP_GZ,     /* its gzip bytes */
	REP_FILE,   /* the attachment on disk */
	REP_BUF,    /* bytes made by the export (buf) */
};

struct export_output {
	char *rel;                 /* relative to the folder (owned) */
	const struct page *p;      /* REP_BODY, REP_GZ, REP_FILE */
	enum export_rep rep;
	char *buf;                 /* REP_BUF (owned) */
	size_t len;
	char hash[ETAG_SIZE];      /* of the bytes: the page's ETag, or of buf */
};

struct export_list {
	struct export_output *v;
	size_t n, alloc;
	struct map by_rel;         /* rel -> index + 1: the first output of a path wins */
};

/* Adds an output unless one has rel already (rel is copied; buf taken for REP_BUF). */
void export_add(struct export_list *l, const char *rel, const struct page *p, enum export_rep rep,
		char *buf, size_t len);
/* Adds what serving p at base + its path writes: the page, its .gz, or the redirect page. */
void export_add_page(struct export_list *l, const char *base, const struct page *p);

/* export-collect.c: every output of snap (every host, redirect maps, search). */
void export_collect(struct export_list *l, const struct snapshot *snap, const char *prefix);

/*
 * export-search.c: the static search index of the n note pages (sorted
 * here) of one site, under base + "_quire/search/"; prefix goes before
 * each URL.
 */
void export_collect_search(struct export_list *l, const char *base, const char *prefix,
			   const struct page **pages, size_t n);

int export_mkdirs(const char *path);
void export_redirect_html(const struct page *p, struct buf *out);
/* Whether a page key stays inside the folder (no "." or ".." segment, no backslash). */
int export_safe_key(const char *key);

#endif
