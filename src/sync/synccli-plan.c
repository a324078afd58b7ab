/*
 * synccli-plan.c: what one pass of `quire sync` does with each file, from
 * its three versions: here (the local hash), there (the manifest) and
 * the record of the last sync (syncrecord.h), which is their common
 * ancestor.
 *
 *	here = there            in sync; the record follows
 *	here = record           changed on the server only: taken here (a
 *	                        download, or a local deletion)
 *	there = record          changed here only: sent (a PUT, or a DELETE)
 *	neither (both changed)  gone here: the server's edit is taken;
 *	                        gone there: this side's edit is sent;
 *	                        a note with a base: merged three-way, the
 *	                        result written here and sent; otherwise (the
 *	                        edits overlap, not a note, no record: a new
 *	                        machine) the local file is kept and sent, and
 *	                        the server's version is written beside it as a
 *	                        conflict copy (synccli_conflict_name()) and
 *	                        sent too, so both sides end with both.
 *
 * With --push nothing comes down: what changed here is sent when the
 * server still has what the record says (or neither side has it), and
 * a file the server changed since is a conflict, left as it is there.
 *
 * Every write to the server carries the precondition of what the plan
 * saw there (If-Match: its hash, If-None-Match: * when it had none), and
 * every write here checks that the local file is still what was hashed,
 * so a change made on either side during the pass is never overwritten:
 * it is "raced", and synccli_pass() compares again. The record is set
 * only when both sides hold the same bytes: after a download is written,
 * after a write's 2xx, or when the two hashes are found equal.
 *
 * A pass runs in two phases on the connections: first the GETs, whose
 * answers are written here at once (synccli_got()) and may ask for
 * uploads (a merge's result, a conflict copy and the file it was made
 * for); then the local deletions; then every PUT and DELETE.
 */
#include "sync/synccli-int.h"
#include "sync/merge3.h"
#include "sync/syncrecord.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/map.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int synccli_is_note(const char *path)
{
	size_t n = strlen(path);

	return n > 3 && strcasecmp(path + n - 3, ".md") == 0;
}

const char *synccli_keep(struct run *r, const char *s)
{
	ALLOC_GROW(r->strs, r->nstrs + 1, r->astrs);
	return r->strs[r->nstrs++] = xstrdup(s);
}

static int same(const char *a, const char *b)
{
	if (!a || !b)
		return !a && !b;
	return strcmp(a, b) == 0;
}

/* A new operation on path; sha and remote may be NULL. */
static struct op *add(struct run *r, enum op_kind kind, const char *path, const char *disk,
		      const char *sha, const char *remote)
{
	struct op *op = synccli_add_op(&r->c);

	op->kind = kind;
	op->path = path;
	op->disk = disk ? disk : path;
	if (sha)
		memcpy(op->sha, sha, SHA256_HEX_SIZE);
	if (remote)
		memcpy(op->remote, remote, SHA256_HEX_SIZE);
	return op;
}

/* Both sides hold the bytes of sha: the record says so (a note's text read here). */
static void record_same(struct run *r, const char *path, const char *disk, const char *sha)
{
	const struct sync_record_entry *e = sync_record_get(r->record, path);
	struct buf text = BUF_INIT;
	int note = synccli_is_note(path);

	if (e && strcmp(e->sha, sha) == 0 && (e->text != NULL) == note)
		return;
	if (!note)
		sync_record_set(r->record, path, sha, NULL, 0);
	else if (synccli_read_local(r, disk, sha, &text) == 0)
		sync_record_set(r->record, path, sha, text.ptr ? text.ptr : "", text.len);
	buf_release(&text);
}

/* --push: only what changed here goes, and only over what the record says is there. */
static void plan_push(struct run *r, const struct vault_file *f, const char *l, const char *s,
		      const char *b, const char *path)
{
	if (l && same(s, b)) {
		add(r, OP_PUT, path, f->disk, l, s)->size = f->size;
	} else if (l && !s && !same(l, b)) {
		add(r, OP_PUT, path, f->disk, l, NULL)->size = f->size; /* an edit over a deletion */
	} else if (l) {
		r->n.conflicts++;
		printf("conflict: %s: %s on the server since the last sync; not overwritten "
		       "(sync without --push to merge)\n", path, s ? "changed" : "deleted");
	} else if (!r->do_delete) {
		r->n.only_remote++;
	} else if (same(s, b)) {
		add(r, OP_DELETE, path, NULL, NULL, s);
	} else {
		r->n.conflicts++;
		printf("conflict: %s: %s on the server since the last sync; not deleted\n", path,
		       b ? "changed" : "created");
	}
}

/* The plan for one path: li its index in the scan (or -1), rf the server's entry (or NULL). */
static void plan_path(struct run *r, const char *path, long li, const struct remote *rf)
{
	const struct vault_file *f = li >= 0 ? &r->scan.files[li] : NULL;
	const struct sync_record_entry *e = sync_record_get(r->record, path);
	const char *l = f ? r->hw.sha[li] : NULL, *s = rf ? rf->sha : NULL, *b = e ? e->sha : NULL;
	const char *disk = f ? f->disk : path;
	struct op *op;

	if (same(l, s)) {
		if (l) {
			record_same(r, path, disk, l);
			r->n.unchanged++;
		} else {
			sync_record_drop(r->record, path);
		}
		return;
	}
	if (r->push) {
		plan_push(r, f, l, s, b, path);
		return;
	}
	if (same(l, b)) {
		/* changed on the server only */
		add(r, s ? OP_GET : OP_UNLINK, path, disk, l, s)->use = GET_TAKE;
		return;
	}
	if (same(s, b)) {
		/* changed here only */
		op = add(r, l ? OP_PUT : OP_DELETE, path, disk, l, s);
		op->size = f ? f->size : 0;
		return;
	}
	/* changed on both sides, or never synced from here */
	if (!l) {
		add(r, OP_GET, path, disk, NULL, s)->use = GET_TAKE; /* the edit wins a deletion */
	} else if (!s) {
		add(r, OP_PUT, path, disk, l, NULL)->size = f->size;
	} else {
		op = add(r, OP_GET, path, disk, l, s);
		op->use = synccli_is_note(path) && e && e->text ? GET_MERGE : GET_COPY;
	}
}

/*
 * Refuses a plan that would empty one side because the other is empty
 * (a vault folder mistyped or unmounted). 0, or -1 (printed).
 */
static int emptying(struct run *r)
{
	size_t k, here = 0, there = 0;

	for (k = 0; k < r->c.nops; k++) {
		here += r->c.ops[k].kind == OP_UNLINK;
		there += r->c.ops[k].kind == OP_DELETE;
	}
	if (there && r->scan.n == 0 && there == r->remote.len) {
		fprintf(stderr, "quire sync: %s has no files; refusing to delete all %zu files on the "
				"server\n", r->vault, there);
		return -1;
	}
	if (here && r->remote.len == 0 && here == r->scan.n) {
		fprintf(stderr, "quire sync: the server has no files; refusing to delete all %zu "
				"files of %s\n", here, r->vault);
		return -1;
	}
	return 0;
}

void synccli_plan(struct run *r)
{
	struct buf gone = BUF_INIT;
	const struct sync_record_entry *e;
	size_t k, it = 0, klen;
	const char *key;
	void *v;

	for (k = 0; k < r->scan.n; k++) {
		const struct vault_file *f = &r->scan.files[k];
		struct remote *rf = map_gets(&r->remote, f->path);
		if (rf)
			rf->seen = 1;
		if (!r->hw.ok[k]) {
			fprintf(stderr, "failed: %s: cannot read it\n", f->path);
			r->n.failed++;
			continue;
		}
		if (!map_gets(&r->local, f->path)) {
			r->n.skipped++; /* a name the server does not take (printed) */
			continue;
		}
		plan_path(r, f->path, (long)k, rf);
	}
	while (map_next(&r->remote, &it, &key, &klen, &v))
		if (!((struct remote *)v)->seen)
			plan_path(r, ((struct remote *)v)->path, -1, v);
	/* what neither side has any more */
	it = 0;
	while (sync_record_next(r->record, &it, &e))
		if (!map_gets(&r->local, e->path) && !map_gets(&r->remote, e->path))
			buf_add(&gone, e->path, strlen(e->path) + 1);
	for (k = 0; k < gone.len; k += strlen(gone.ptr + k) + 1)
		sync_record_drop(r->record, gone.ptr + k);
	buf_release(&gone);
	if (emptying(r) < 0) {
		r->c.nops = 0;
		r->n.failed++;
	}
}

static void dry_run(struct run *r)
{
	size_t k;

	for (k = 0; k < r->c.nops; k++) {
		const struct op *op = &r->c.ops[k];
		switch (op->kind) {
		case OP_PUT:
			printf("would upload %s (%s, %lld bytes)\n", op->path,
			       op->remote[0] ? "changed" : "new", (long long)op->size);
			r->n.uploaded++;
			break;
		case OP_DELETE:
			printf("would delete %s on the server\n", op->path);
			r->n.deleted_there++;
			break;
		case OP_UNLINK:
			printf("would delete %s here\n", op->path);
			r->n.deleted_here++;
			break;
		case OP_GET:
			if (op->use == GET_TAKE) {
				printf("would download %s\n", op->path);
				r->n.downloaded++;
			} else {
				printf("would merge %s (or keep both versions when the edits overlap)\n",
				       op->path);
				r->n.merged++;
			}
			break;
		}
	}
}

void synccli_execute(struct run *r)
{
	struct client *c = &r->c;
	size_t k, planned = c->nops;

	if (r->dry) {
		dry_run(r);
		return;
	}
	for (k = 0; k < planned; k++)
		c->bytes_total += (uint64_t)c->ops[k].size;
	c->phase = 1;
	c->next = c->done = 0;
	synccli_run(c);
	for (k = 0; k < planned; k++) {
		struct op *op = &c->ops[k];
		int rc;
		if (op->kind != OP_UNLINK)
			continue;
		rc = synccli_unlink_local(r, op->disk, op->path, op->sha);
		if (rc == 0) {
			sync_record_drop(r->record, op->path);
			r->n.deleted_here++;
			printf("deleted %s here (deleted on the server)\n", op->path);
		} else if (rc == SYNCCLI_RACED) {
			r->n.raced++;
		} else {
			r->n.failed++;
		}
	}
	sync_record_flush(r->record);
	for (k = 0; k < r->nlater; k++)
		*synccli_add_op(c) = r->later[k];
	r->nlater = 0;
	c->phase = 2;
	c->next = c->done = 0;
	synccli_run(c);
	sync_record_flush(r->record);
	fflush(stdout);
}

/* ---- the answers ---- */

/* An upload phase 2 makes, asked for by an answer of phase 1. */
static void later(struct run *r, const char *path, const char *disk, const char *sha,
		  const char *remote)
{
	struct op *op;

	ALLOC_GROW(r->later, r->nlater + 1, r->alater);
	op = &r->later[r->nlater++];
	memset(op, 0, sizeof(*op));
	op->kind = OP_PUT;
	op->path = path;
	op->disk = disk;
	memcpy(op->sha, sha, SHA256_HEX_SIZE);
	if (remote)
		memcpy(op->remote, remote, SHA256_HEX_SIZE);
}

static void count_write(struct run *r, int rc)
{
	if (rc == SYNCCLI_RACED)
		r->n.raced++;
	else if (rc < 0)
		r->n.failed++;
}

/* The server's version of op->path (body, hashing to sha) kept beside the local file. */
static void conflict_copy(struct run *r, struct op *op, const char *body, size_t len,
			  const char *sha)
{
	const char *copy = synccli_find_copy(r, op->path, sha);
	int rc = 0;

	if (!copy) {
		copy = synccli_conflict_name(r, op->path);
		rc = synccli_write_local(r, copy, copy, body, len, "");
	}
	count_write(r, rc);
	if (rc != 0)
		return;
	r->n.conflicts++;
	printf("conflict: %s: changed on both sides; kept this side's, the server's is in %s\n",
	       op->path, copy);
	later(r, copy, copy, sha, NULL);
	later(r, op->path, op->disk, op->sha, sha);
}

/* A note changed on both sides: merged with the record's base, or a conflict copy. */
static void merge(struct run *r, struct op *op, const char *body, size_t len, const char *sha)
{
	const struct sync_record_entry *e = sync_record_get(r->record, op->path);
	struct buf mine = BUF_INIT, out = BUF_INIT;
	char merged[SHA256_HEX_SIZE];
	int rc = e && e->text ? synccli_read_local(r, op->disk, op->sha, &mine) : -1;

	if (rc != 0) {
		count_write(r, rc);
		goto done;
	}
	rc = merge3_text(e->text, e->text_len, mine.ptr ? mine.ptr : "", mine.len, body, len, &out);
	if (rc <= 0) {
		conflict_copy(r, op, body, len, sha);
		goto done;
	}
	hash_sha256_hex(out.ptr ? out.ptr : "", out.len, merged);
	if (strcmp(merged, op->sha) != 0) {
		rc = synccli_write_local(r, op->disk, op->path, out.ptr ? out.ptr : "", out.len,
					 op->sha);
		count_write(r, rc);
		if (rc != 0)
			goto done;
	}
	r->n.merged++;
	printf("merged %s (changed on both sides)\n", op->path);
	if (strcmp(merged, sha) == 0)
		sync_record_set(r->record, op->path, sha, out.ptr ? out.ptr : "", out.len);
	else
		later(r, op->path, op->disk, merged, sha);
done:
	buf_release(&mine);
	buf_release(&out);
}

void synccli_got(struct run *r, struct op *op, const char *body, size_t len)
{
	char sha[SHA256_HEX_SIZE];
	int rc;

	hash_sha256_hex(body, len, sha);
	switch (op->use) {
	case GET_TAKE:
		rc = synccli_write_local(r, op->disk, op->path, body, len, op->sha);
		count_write(r, rc);
		if (rc != 0)
			return;
		sync_record_set(r->record, op->path, sha, synccli_is_note(op->path) ? body : NULL,
				len);
		r->n.downloaded++;
		printf("downloaded %s\n", op->path);
		break;
	case GET_MERGE:
		merge(r, op, body, len, sha);
		break;
	case GET_COPY:
		conflict_copy(r, op, body, len, sha);
		break;
	}
}

void synccli_sent(struct run *r, struct op *op)
{
	if (op->kind == OP_DELETE) {
		sync_record_drop(r->record, op->path);
		r->n.deleted_there++;
		if (r->say_sent)
			printf("deleted %s on the server\n", op->path);
		return;
	}
	sync_record_set(r->record, op->path, op->sent,
			synccli_is_note(op->path) ? (op->text.ptr ? op->text.ptr : "") : NULL,
			op->text.len);
	r->n.uploaded++;
	if (r->say_sent)
		printf("uploaded %s\n", op->path);
}
