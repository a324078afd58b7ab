/*
 * tv.c: temporary vaults (see tv.h). Files are written with stdio, trees
 * walked with nftw (FTW_PHYS: a link is copied or removed, never
 * followed).
 *
 * Copies walk the tree in process rather than running `cp -r`: no shell,
 * so no quoting of vault paths.
 */
#include "lib/tv.h"

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/test.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/xalloc.h"

char *tv_new(void)
{
	char tmpl[] = "/tmp/quire-test-XXXXXX";

	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		exit(1);
	}
	return xstrdup(tmpl);
}

void tv_write_len(const char *dir, const char *rel, const char *data, size_t len)
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

void tv_write(const char *dir, const char *rel, const char *text)
{
	tv_write_len(dir, rel, text, strlen(text));
}

void tv_read(const char *dir, const char *rel, struct buf *out)
{
	struct buf p = BUF_INIT;

	buf_addf(&p, "%s/%s", dir, rel);
	if (read_file(p.ptr, out) < 0)
		buf_reset(out);
	buf_release(&p);
}

void tv_unlink(const char *dir, const char *rel)
{
	struct buf p = BUF_INIT;

	buf_addf(&p, "%s/%s", dir, rel);
	unlink(p.ptr);
	buf_release(&p);
}

int tv_exists(const char *dir, const char *rel)
{
	struct buf p = BUF_INIT;
	struct stat st;
	int r;

	buf_addf(&p, "%s/%s", dir, rel);
	r = stat(p.ptr, &st) == 0;
	buf_release(&p);
	return r;
}

/* The folder dir/rel opened, or NULL. */
static DIR *open_rel(const char *dir, const char *rel)
{
	struct buf p = BUF_INIT;
	DIR *d;

	buf_addf(&p, "%s/%s", dir, rel);
	d = opendir(p.ptr);
	buf_release(&p);
	return d;
}

int tv_count_tmp(const char *dir, const char *rel)
{
	DIR *d = open_rel(dir, rel);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, ".quire-tmp-", 11) == 0)
			n++;
		else if (de->d_name[0] != '.' && de->d_type == DT_DIR) {
			struct buf sub = BUF_INIT;
			buf_addf(&sub, "%s/%s", rel, de->d_name);
			n += tv_count_tmp(dir, sub.ptr);
			buf_release(&sub);
		}
	}
	closedir(d);
	return n;
}

int tv_count_entries(const char *dir, const char *rel)
{
	DIR *d = open_rel(dir, rel);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

void tv_random_bytes(void *out, size_t n, unsigned long long seed)
{
	unsigned char *p = out;
	unsigned long long x = seed * 2654435761u + 88172645463325252ull;
	size_t i;

	for (i = 0; i < n; i++) { /* xorshift64 */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (unsigned char)(x >> 32);
	}
}

/* nftw passes no context: the copy in progress */
static const char *copy_from, *copy_to;

static int copy_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	struct buf dst = BUF_INIT, data = BUF_INIT;

	(void)st;
	(void)ftw;
	buf_addf(&dst, "%s%s", copy_to, path + strlen(copy_from));
	if (flag == FTW_D)
		mkdir(dst.ptr, 0755);
	else if (flag == FTW_F && read_file(path, &data) == 0)
		tv_write_len(copy_to, dst.ptr + strlen(copy_to) + 1, data.ptr, data.len);
	buf_release(&dst);
	buf_release(&data);
	return 0;
}

int tv_copy(const char *from, const char *to)
{
	copy_from = from;
	copy_to = to;
	return nftw(from, copy_one, 16, FTW_PHYS);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int tv_rmtree(const char *path)
{
	return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void tv_remove(char *dir)
{
	tv_rmtree(dir);
	free(dir);
}

const char *tv_corpus(void)
{
	const char *c = getenv("QUIRE_CORPUS");
	return c ? c : "../shared/corpus";
}

char *tv_corpus_vault(const char *name, const char *why)
{
	struct buf path = BUF_INIT;
	struct stat st;

	buf_addf(&path, "%s/%s", tv_corpus(), name);
	if (stat(path.ptr, &st) == 0 && S_ISDIR(st.st_mode))
		return buf_detach(&path, NULL);
	test_skip("needs %s, the shared corpus (../shared/corpus beside the checkout, or "
		  "QUIRE_CORPUS): %s", path.ptr, why);
	buf_release(&path);
	return NULL;
}

char *tv_sample(void)
{
	struct buf path = BUF_INIT;
	const char *root = getenv("QUIRE_SOURCE_ROOT");

	buf_addf(&path, "%s/vault-sample", root ? root : ".");
	return buf_detach(&path, NULL);
}

int tv_xmllint(const char *bytes, size_t len, const char *schema)
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

size_t tv_check_manifest(const char *dir, const char *body, size_t len, const char *must_lack)
{
	struct json_reader jr;
	struct buf key = BUF_INIT, path = BUF_INIT, sha = BUF_INIT, disk = BUF_INIT,
		   field = BUF_INIT, full = BUF_INIT;
	char want[SHA256_HEX_SIZE];
	uint64_t size = 0;
	size_t n = 0;

	json_init(&jr, body, len);
	CHECK(json_object(&jr) == 0);
	while (json_key(&jr, &key) > 0) {
		if (strcmp(key.ptr, "files") != 0) {
			CHECK(json_skip(&jr) == 0);
			continue;
		}
		CHECK(json_object(&jr) == 0);
		while (json_key(&jr, &path) > 0) {
			CHECK(json_object(&jr) == 0);
			while (json_key(&jr, &field) > 0) {
				if (strcmp(field.ptr, "sha256") == 0)
					CHECK(json_string(&jr, &sha) == 0);
				else if (strcmp(field.ptr, "size") == 0)
					CHECK(json_u64(&jr, &size) == 0);
				else
					CHECK(json_skip(&jr) == 0);
			}
			CHECK(path.ptr[0] != '.' && !strstr(path.ptr, "/."));
			if (must_lack)
				CHECK(strcmp(path.ptr, must_lack) != 0);
			buf_reset(&full);
			buf_addf(&full, "%s/%s", dir, path.ptr);
			CHECK(read_file(full.ptr, &disk) == 0);
			hash_sha256_hex(disk.ptr, disk.len, want);
			if (strcmp(sha.ptr, want) != 0)
				fprintf(stderr, "  %s: manifest %s, disk %s\n", path.ptr, sha.ptr, want);
			CHECK_STR(sha.ptr, want);
			CHECK_INT(size, disk.len);
			n++;
		}
	}
	CHECK(json_end(&jr) == 0);
	buf_release(&key);
	buf_release(&path);
	buf_release(&sha);
	buf_release(&disk);
	buf_release(&field);
	buf_release(&full);
	return n;
}
