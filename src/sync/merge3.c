/*
 * merge3.c: three-way merge of a note through libgit2's git_merge_file().
 *
 * The library is started once (pthread_once) and never shut down: the
 * process that merges is a short command. Inputs are passed as they are;
 * a NUL byte in any of them makes libgit2 treat the file as binary, which
 * is a conflict here.
 *
 * Rejected: a diff3 of our own (an LCS diff and the hunk alignment are
 * hundreds of lines that git has tested for twenty years); GNU diff3 as a
 * subprocess (three temporary files per note, and a program that may be
 * missing).
 */
#include "sync/merge3.h"
#include "util/buf.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <git2.h>

static pthread_once_t started = PTHREAD_ONCE_INIT;
static int start_rc;

static void start(void)
{
	start_rc = git_libgit2_init();
}

static void input(git_merge_file_input *in, const char *ptr, size_t len)
{
	git_merge_file_input_init(in, GIT_MERGE_FILE_INPUT_VERSION);
	in->ptr = ptr ? ptr : "";
	in->size = ptr ? len : 0;
	in->path = "note.md";
	in->mode = 0100644;
}

int merge3_text(const char *base, size_t blen, const char *ours, size_t olen,
		const char *theirs, size_t tlen, struct buf *out)
{
	git_merge_file_input b, o, t;
	git_merge_file_options opts;
	git_merge_file_result res;
	int ret;

	buf_reset(out);
	pthread_once(&started, start);
	if (start_rc < 0) {
		fprintf(stderr, "quire sync: libgit2 could not start\n");
		return -1;
	}
	input(&b, base, blen);
	input(&o, ours, olen);
	input(&t, theirs, tlen);
	git_merge_file_options_init(&opts, GIT_MERGE_FILE_OPTIONS_VERSION);
	memset(&res, 0, sizeof(res));
	if (git_merge_file(&res, &b, &o, &t, &opts) < 0) {
		const git_error *e = git_error_last();
		fprintf(stderr, "quire sync: merge failed: %s\n", e && e->message ? e->message : "?");
		return -1;
	}
	ret = res.automergeable ? 1 : 0;
	if (ret)
		buf_add(out, res.ptr ? res.ptr : "", res.ptr ? res.len : 0);
	git_merge_file_result_free(&res);
	return ret;
}
