/*
 * testutil.h: temporary vaults on disk for tests.
 *
 *	char *dir = tv_new();
 *	tv_write(dir, "folder/Note.md", "# Hi\n");
 *	...
 *	tv_remove(dir);
 */
#ifndef QUIRE_TESTUTIL_H
#define QUIRE_TESTUTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw, memmem */
#endif
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/xalloc.h"

static inline char *tv_new(void)
{
	char tmpl[] = "/tmp/quire-test-XXXXXX";
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		exit(1);
	}
	return xstrdup(tmpl);
}

static inline void tv_write_len(const char *dir, const char *rel, const char *data, size_t len)
{
	struct buf p = BUF_INIT;
	char *s;
	FILE *f;

	buf_addf(&p, "%s/%s", dir, rel);
	for (s = p.ptr + strlen(dir) + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(p.ptr, 0755);
			*s = '/';
		}
	}
	f = fopen(p.ptr, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		perror(p.ptr);
		exit(1);
	}
	buf_release(&p);
}

static inline void tv_write(const char *dir, const char *rel, const char *text)
{
	tv_write_len(dir, rel, text, strlen(text));
}

static inline int tv_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void tv_remove(char *dir)
{
	nftw(dir, tv_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

/* The corpus folder (../shared/corpus beside the project), from $QUIRE_CORPUS. */
static inline const char *tv_corpus(void)
{
	const char *c = getenv("QUIRE_CORPUS");
	return c ? c : "../shared/corpus";
}

/*
 * Runs xmllint on bytes: validated against tests/data/<schema> when schema
 * is set, else only parsed. 1 when it passes.
 */
static inline int tv_xmllint(const char *bytes, size_t len, const char *schema)
{
	char tmp[] = "/tmp/quire-xml-XXXXXX";
	int fd = mkstemp(tmp), ok;
	struct buf cmd = BUF_INIT;

	if (fd < 0 || !bytes)
		return 0;
	ok = write(fd, bytes, len) == (ssize_t)len;
	close(fd);
	if (schema)
		buf_addf(&cmd, "xmllint --noout --schema %s/tests/data/%s %s 2>/dev/null",
			 getenv("QUIRE_SOURCE_ROOT") ? getenv("QUIRE_SOURCE_ROOT") : ".", schema, tmp);
	else
		buf_addf(&cmd, "xmllint --noout %s 2>/dev/null", tmp);
	ok = ok && system(cmd.ptr) == 0;
	unlink(tmp);
	buf_release(&cmd);
	return ok;
}

#endif
