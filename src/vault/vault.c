/*
 * vault.c: scanning, reading, paths and URLs.
 *
 * The scan is iterative (a queue of folders), stats with fstatat on the
 * folder's descriptor, and sorts at the end, so output order does not
 * depend on the file system's.
 */
#include "vault/vault.h"
#include "util/log.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 64

int vault_is_note_path(const char *path)
{
	size_t n = strlen(path);
	return n > 3 && strcasecmp(path + n - 3, ".md") == 0;
}

int vault_is_conflict_copy(const char *path)
{
	const char *slash = strrchr(path, '/'), *leaf = slash ? slash + 1 : path;

	return leaf[0] && strstr(leaf + 1, VAULT_CONFLICT_INFIX) != NULL;
}

int vault_ignored(const struct config *cfg, const char *path)
{
	const char *p = path;
	size_t i;

	for (;;) {
		if (*p == '.')
			return 1;
		p = strchr(p, '/');
		if (!p)
			break;
		p++;
	}
	/* the settings are not content: never a page, never an attachment */
	if (strcmp(path, "quire.yml") == 0)
		return 1;
	if (!cfg)
		return 0;
	for (i = 0; i < cfg->nignore; i++) {
		const char *g = cfg->ignore[i];
		/*
		 * Without FNM_PATHNAME '*' crosses '/', so "templates/..." with a star covers
		 * a whole folder; a bare folder name matches everything in it.
		 */
		size_t gl = strlen(g);
		if (fnmatch(g, path, 0) == 0)
			return 1;
		if (strncmp(path, g, gl) == 0 && path[gl] == '/')
			return 1;
	}
	return 0;
}

static void add_file(struct vault_scan *s, const char *disk, const struct stat *st)
{
	struct vault_file *f;

	ALLOC_GROW(s->files, s->n + 1, s->alloc);
	f = &s->files[s->n++];
	f->disk = xstrdup(disk);
	f->path = utf8_nfc(disk, strlen(disk));
	f->size = st->st_size;
	f->mtime = st->st_mtime;
	f->is_note = vault_is_note_path(f->path);
}

static int cmp_files(const void *a, const void *b)
{
	return strcmp(((const struct vault_file *)a)->path, ((const struct vault_file *)b)->path);
}

/* True when the symlink at rel (relative to root_fd) resolves inside the vault. */
static int link_inside(const char *root_real, const char *root, const char *rel)
{
	struct buf full = BUF_INIT;
	char *real;
	size_t n = strlen(root_real);
	int inside;

	buf_addf(&full, "%s/%s", root, rel);
	real = realpath(full.ptr, NULL);
	buf_release(&full);
	if (!real)
		return 0;
	inside = strncmp(real, root_real, n) == 0 && real[n] == '/';
	free(real);
	return inside;
}

int vault_scan(const char *root, const struct config *cfg, struct vault_scan *out,
	       struct diag_list *diags)
{
	return vault_scan_under(root, "", cfg, out, diags);
}

enum vault_entry vault_stat(const char *root, const struct config *cfg, const char *rel,
			    struct stat *st)
{
	struct buf full = BUF_INIT;
	char *root_real = NULL;
	enum vault_entry ret = VAULT_MISSING;

	if (!rel[0]) {
		ret = VAULT_FOLDER;
		goto out;
	}
	if (vault_ignored(cfg, rel) || !utf8_valid(rel, strlen(rel)))
		goto out;
	buf_addf(&full, "%s/%s", root, rel);
	if (lstat(full.ptr, st) < 0)
		goto out;
	if (S_ISLNK(st->st_mode)) {
		root_real = realpath(root, NULL);
		if (!root_real || !link_inside(root_real, root, rel) || stat(full.ptr, st) < 0 ||
		    !S_ISREG(st->st_mode))
			goto out;
	}
	if (S_ISDIR(st->st_mode))
		ret = VAULT_FOLDER;
	else if (S_ISREG(st->st_mode))
		ret = VAULT_FILE;
out:
	free(root_real);
	buf_release(&full);
	return ret;
}

int vault_scan_under(const char *root, const char *sub, const struct config *cfg,
		     struct vault_scan *out, struct diag_list *diags)
{
	char **queue = NULL;
	int *depths = NULL;
	size_t qn = 0, qalloc = 0, dalloc = 0, qi = 0;
	char *root_real = realpath(root, NULL);
	int ret = 0;

	if (!root_real)
		return log_error("cannot open vault %s: %s", root, strerror(errno));
	ALLOC_GROW(queue, 1, qalloc);
	ALLOC_GROW(depths, 1, dalloc);
	queue[qn] = xstrdup(sub);
	depths[qn++] = 0;
	while (qi < qn) {
		char *rel = queue[qi];
		int depth = depths[qi++];
		struct buf full = BUF_INIT, child = BUF_INIT;
		DIR *dir;
		struct dirent *de;

		buf_addf(&full, "%s%s%s", root, rel[0] ? "/" : "", rel);
		dir = opendir(full.ptr);
		if (!dir) {
			if (!rel[0])
				ret = log_error("cannot read vault %s: %s", root, strerror(errno));
			else if (qi == 1)
				ret = -1; /* the folder asked for is gone: the caller knows what to do */
			else
				diag_add(diags, DIAG_ERROR, rel, 0, "cannot read folder: %s",
					 strerror(errno));
			goto next;
		}
		while ((de = readdir(dir))) {
			struct stat st;
			const char *name = de->d_name;

			if (name[0] == '.')
				continue; /* ".", "..", and every dot-file and dot-folder */
			buf_reset(&child);
			if (rel[0])
				buf_addf(&child, "%s/", rel);
			buf_adds(&child, name);
			if (!utf8_valid(child.ptr, child.len)) {
				diag_add(diags, DIAG_ERROR, rel[0] ? rel : ".", 0,
					 "file name is not valid UTF-8, skipped");
				continue;
			}
			if (fstatat(dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue; /* vanished between readdir and stat */
			if (S_ISLNK(st.st_mode)) {
				if (!link_inside(root_real, root, child.ptr) ||
				    fstatat(dirfd(dir), name, &st, 0) < 0 || !S_ISREG(st.st_mode)) {
					diag_add(diags, DIAG_WARNING, child.ptr, 0,
						 "symlink to a folder or outside the vault, skipped");
					continue;
				}
			}
			if (vault_ignored(cfg, child.ptr))
				continue;
			if (S_ISDIR(st.st_mode)) {
				if (depth + 1 >= MAX_DEPTH) {
					diag_add(diags, DIAG_WARNING, child.ptr, 0,
						 "folder nested deeper than %d levels, skipped",
						 MAX_DEPTH);
					continue;
				}
				ALLOC_GROW(queue, qn + 1, qalloc);
				ALLOC_GROW(depths, qn + 1, dalloc);
				queue[qn] = xstrdup(child.ptr);
				depths[qn++] = depth + 1;
			} else if (S_ISREG(st.st_mode)) {
				add_file(out, child.ptr, &st);
			}
		}
		closedir(dir);
	next:
		buf_release(&full);
		buf_release(&child);
	}
	while (qn > 0)
		free(queue[--qn]);
	free(queue);
	free(depths);
	free(root_real);
	if (out->n)
		qsort(out->files, out->n, sizeof(*out->files), cmp_files);
	return ret;
}

void vault_scan_release(struct vault_scan *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++) {
		free(s->files[i].path);
		free(s->files[i].disk);
	}
	free(s->files);
	memset(s, 0, sizeof(*s));
}

void vault_slugify(struct buf *out, const char *seg, size_t len)
{
	char *low = utf8_lower(seg, len);
	const char *p = low;
	size_t left = strlen(low), start = out->len;
	int dash = 0;

	while (left > 0) {
		int32_t cp;
		int n = utf8_decode(p, left, &cp);

		if (n < 0)
			n = 1, cp = 0xFFFD;
		if (cp == '-' || cp == '_' || cp == '.' || unicode_is_alnum(cp)) {
			if (dash && out->len > start)
				buf_addc(out, '-');
			dash = 0;
			buf_add(out, p, (size_t)n);
		} else {
			dash = 1;
		}
		p += n;
		left -= (size_t)n;
	}
	/* "", "." and ".." would name no segment or climb out of the site */
	if (out->len == start || strspn(out->ptr + start, ".") == out->len - start) {
		buf_setlen(out, start);
		buf_addc(out, '-');
	}
	free(low);
}

static int is_index(const char *seg, size_t len)
{
	return len == 5 && strncasecmp(seg, "index", 5) == 0;
}

char *vault_note_url(const char *path, const char *slug)
{
	struct buf url = BUF_INIT;
	size_t len = strlen(path), i, segstart = 0;

	if (slug && slug[0] == '/') {
		/* the whole path: each segment slugified, a trailing '/' kept */
		const char *p = slug;
		while (*p) {
			const char *e = strchr(p + 1, '/');
			size_t n = e ? (size_t)(e - p - 1) : strlen(p + 1);
			if (n) {
				buf_addc(&url, '/');
				vault_slugify(&url, p + 1, n);
			}
			if (!e) {
				break;
			}
			p = e;
		}
		if (slug[strlen(slug) - 1] == '/' || !url.len)
			buf_addc(&url, '/');
		return buf_detach(&url, NULL);
	}
	if (vault_is_note_path(path))
		len -= 3;
	for (i = 0; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		if (i == len) {
			/* last segment */
			const char *seg = path + segstart;
			size_t n = i - segstart;
			if (slug && slug[0]) {
				buf_addc(&url, '/');
				vault_slugify(&url, slug, strlen(slug));
			} else if (is_index(seg, n)) {
				buf_addc(&url, '/');
			} else {
				buf_addc(&url, '/');
				vault_slugify(&url, seg, n);
			}
		} else {
			buf_addc(&url, '/');
			vault_slugify(&url, path + segstart, i - segstart);
		}
		segstart = i + 1;
	}
	return buf_detach(&url, NULL);
}

char *vault_folder_url(const char *folder, size_t len)
{
	struct buf idx = BUF_INIT;
	char *url;

	buf_add(&idx, folder, len);
	buf_adds(&idx, len ? "/index.md" : "index.md");
	url = vault_note_url(idx.ptr, NULL);
	buf_release(&idx);
	if (vault_url_reserved(url)) {
		/* where its index note goes (site/urls.c): "tags/" lists at "/tags-2/" */
		char *other = vault_url_unreserved(url);
		free(url);
		url = other;
	}
	return url;
}

static int seg_is(const char *seg, size_t len, const char *word)
{
	return strlen(word) == len && memcmp(seg, word, len) == 0;
}

const char *vault_url_reserved(const char *url)
{
	const char *seg = url[0] == '/' ? url + 1 : url, *end = strchr(seg, '/');
	size_t len = end ? (size_t)(end - seg) : strlen(seg);
	const char *last = strrchr(url, '/');

	last = last ? last + 1 : url;
	for (const char *p = url; p; p = strchr(p + 1, '/'))
		if (p[0] == '/' && p[1] == '.')
			return "a segment starting with '.' is never published";
	if (seg_is(seg, len, "_quire"))
		return "/_quire/ holds the theme and the explorer";
	if (seg_is(seg, len, "api"))
		return "/api/ is quire's API";
	if (end && seg_is(seg, len, "tags"))
		return "/tags/ lists the tags, and each tag's notes";
	if (seg_is(seg, len, "dav"))
		return "/dav is quire's WebDAV";
	if (seg_is(seg, len, "healthz") || seg_is(seg, len, "metrics"))
		return "it is quire's health or metrics endpoint";
	if (!end && (seg_is(seg, len, "search") || seg_is(seg, len, "robots.txt")))
		return "it is quire's search page or robots.txt";
	if (!end && len > 11 && strncmp(seg, "sitemap", 7) == 0 &&
	    strcmp(seg + len - 4, ".xml") == 0)
		return "it is a sitemap";
	if (!end && seg_is(seg, len, "sitemap.xml"))
		return "it is the sitemap";
	if (strcmp(last, "rss.xml") == 0 || strcmp(last, "atom.xml") == 0)
		return "it is a feed";
	return NULL;
}

/* url with its first segment's leading dots dropped and "-2" added to it ("/.x/y" -> "/x-2/y"). */
static void first_segment_2(struct buf *b, const char *url)
{
	const char *seg = url[0] == '/' ? url + 1 : url, *end = strchr(seg, '/');
	size_t len = end ? (size_t)(end - seg) : strlen(seg);

	while (len && seg[0] == '.')
		seg++, len--; /* ".hidden" -> "hidden-2" */
	buf_reset(b);
	buf_addc(b, '/');
	buf_add(b, seg, len);
	buf_adds(b, "-2");
	if (end)
		buf_adds(b, end);
}

/* url with each segment's leading '.' made '-', then "-2" when that is still reserved. */
static void later_segments_2(struct buf *b, const char *url)
{
	buf_reset(b);
	for (const char *p = url; *p; p++)
		buf_addc(b, *p == '.' && (p == url || p[-1] == '/') ? '-' : *p);
	if (vault_url_reserved(b->ptr))
		buf_adds(b, "-2");
}

char *vault_url_unreserved(const char *url)
{
	struct buf b = BUF_INIT, c = BUF_INIT;

	/* the first segment ("/search" -> "/search-2", "/api/x" -> "/api-2/x") */
	first_segment_2(&b, url);
	if (vault_url_reserved(b.ptr)) {
		/* a reserved name further down ("/x/rss.xml", "/x/.y"): the note's place is kept */
		later_segments_2(&b, url);
		if (vault_url_reserved(b.ptr)) {
			/* both ("/tags/x/rss.xml" -> "/tags-2/x/rss.xml-2") */
			later_segments_2(&c, url);
			first_segment_2(&b, c.ptr);
		}
	}
	buf_release(&c);
	return buf_detach(&b, NULL);
}

char *vault_file_url(const char *path)
{
	struct buf url = BUF_INIT;
	char *other;

	buf_addc(&url, '/');
	buf_adds(&url, path);
	if (!vault_url_reserved(url.ptr))
		return buf_detach(&url, NULL);
	/* "tags/a/rss.xml" would replace tag a's feed: served beside it, as a note would be */
	other = vault_url_unreserved(url.ptr);
	buf_release(&url);
	return other;
}

int vault_append_line(const char *path, const char *line)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	FILE *f;
	int ret;

	if (slash) {
		*slash = '\0';
		mkdir(dir, 0755);
	}
	free(dir);
	if (!(f = fopen(path, "a")))
		return -1;
	ret = fputs(line, f) < 0 || fflush(f) != 0 || fsync(fileno(f)) != 0 ? -1 : 0;
	if (fclose(f) != 0)
		ret = -1;
	return ret;
}

static const struct {
	const char *ext;
	const char *type;
} types[] = {
	{ "png", "image/png" },
	{ "jpg", "image/jpeg" },
	{ "jpeg", "image/jpeg" },
	{ "gif", "image/gif" },
	{ "svg", "image/svg+xml" },
	{ "webp", "image/webp" },
	{ "avif", "image/avif" },
	{ "bmp", "image/bmp" },
	{ "ico", "image/x-icon" },
	{ "mp3", "audio/mpeg" },
	{ "wav", "audio/wav" },
	{ "ogg", "audio/ogg" },
	{ "m4a", "audio/mp4" },
	{ "flac", "audio/flac" },
	{ "mp4", "video/mp4" },
	{ "webm", "video/webm" },
	{ "mov", "video/quicktime" },
	{ "ogv", "video/ogg" },
	{ "mkv", "video/x-matroska" },
	{ "pdf", "application/pdf" },
	{ "txt", "text/plain; charset=utf-8" },
	{ "csv", "text/csv; charset=utf-8" },
	{ "json", "application/json" },
	{ "zip", "application/zip" },
	{ "md", "text/markdown; charset=utf-8" },
};

const char *vault_content_type(const char *path)
{
	const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
	size_t i;

	if (!dot || (slash && dot < slash))
		return "application/octet-stream";
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcasecmp(dot + 1, types[i].ext) == 0)
			return types[i].type;
	return "application/octet-stream";
}
