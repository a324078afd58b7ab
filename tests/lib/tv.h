/*
 * tv.h: temporary vaults on disk for tests, and the corpus they copy.
 *
 *	char *dir = tv_new();
 *	tv_write(dir, "folder/Note.md", "# Hi\n");
 *	tv_copy("/path/to/corpus/vault", dir);
 *	...
 *	tv_remove(dir);
 *
 * Paths named "rel" are relative to the vault folder dir. Failures to
 * create a folder or write a file end the test program (exit 1): a test
 * that cannot set up its vault has nothing to check.
 */
#ifndef QUIRE_TEST_TV_H
#define QUIRE_TEST_TV_H

#include <stddef.h>

#include "util/buf.h"

/* A new empty folder under /tmp; free it with tv_remove(). */
char *tv_new(void);

/* Writes a file of the vault, making its folders. */
void tv_write_len(const char *dir, const char *rel, const char *data, size_t len);
void tv_write(const char *dir, const char *rel, const char *text);

/* A file's bytes into out (reset to empty when it cannot be read). */
void tv_read(const char *dir, const char *rel, struct buf *out);

/* Unlinks a file of the vault (no matter if it is not there). */
void tv_unlink(const char *dir, const char *rel);

/* 1 when rel exists (stat follows links). */
int tv_exists(const char *dir, const char *rel);

/*
 * Counts the temporary files of the sync API (".quire-tmp-*") under
 * dir/rel, in its folders too (not in dot-folders).
 */
int tv_count_tmp(const char *dir, const char *rel);

/* The entries of the folder dir/rel (not below it; "." and ".." aside); -1 when it is not one. */
int tv_count_entries(const char *dir, const char *rel);

/* n bytes of a pseudo-random sequence fixed by seed (the same every run) into out. */
void tv_random_bytes(void *out, size_t n, unsigned long long seed);

/*
 * Checks a sync API manifest (the JSON body of GET /api/v1/manifest)
 * against the vault in dir: every entry is a file there whose SHA-256
 * and size are the ones listed, none is a dot-file or must_lack (unless
 * NULL). Failures are CHECKs of the calling test. Returns the number of
 * entries.
 */
size_t tv_check_manifest(const char *dir, const char *body, size_t len, const char *must_lack);

/*
 * Copies every file and folder under from into the folder to, as files of
 * their own (a vault from the corpus, or vault-sample). Returns nftw's
 * result: 0, or -1 when from cannot be walked.
 */
int tv_copy(const char *from, const char *to);

/* Removes path and everything under it; nftw's result (0 or -1). */
int tv_rmtree(const char *path);

/* Removes the vault and frees dir. */
void tv_remove(char *dir);

/* The corpus folder (../shared/corpus beside the project), from $QUIRE_CORPUS. */
const char *tv_corpus(void);

/*
 * The folder of one vault of the shared corpus ("pwsh-docs",
 * "obsidian-tasks-docs"), for the caller to free. When it is not there (a
 * clone without ../shared beside it), skips the current test with one line
 * saying what it needs and why (test_skip()) and returns NULL: the caller
 * returns.
 */
char *tv_corpus_vault(const char *name, const char *why);

/* vault-sample, the vault in the repository ($QUIRE_SOURCE_ROOT/vault-sample); caller frees. */
char *tv_sample(void);

/*
 * Runs xmllint on bytes: validated against tests/data/<schema> when schema
 * is set, else only parsed. 1 when it passes.
 */
int tv_xmllint(const char *bytes, size_t len, const char *schema);

#endif
