/*
 * edits.c: the seeded random edit sequence and the snapshot comparison of
 * the property tests (see edits.h).
 *
 * The generator is splitmix64 on one global state, so a seed replays the
 * same sequence on any machine; list_files() walks with nftw, whose
 * callback takes no context, hence the walk's statics.
 */
#include "lib/edits.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/test.h"
#include "lib/tv.h"
#include "util/gzip.h"
#include "util/xalloc.h"

uint64_t rng_state;

uint64_t rnd(void)
{
	/* splitmix64: small, seeded, the same everywhere */
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

size_t pick(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

/* ---- the vault on disk ---------------------------------------------------- */

void files_release(struct files *f)
{
	size_t i;
	for (i = 0; i < f->n; i++)
		free(f->v[i]);
	free(f->v);
	f->v = NULL;
	f->n = 0;
}

static const char *walk_root;
static struct files *walk_out;

static int walk_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	/* dot-files and dot-folders (.quire/ holds the server's own state) are not the vault's */
	/* nor is quire.yml: a change to it is a full reload, the loader's business */
	if (flag == FTW_F && !strstr(path + strlen(walk_root), "/.") &&
	    strcmp(path + strlen(walk_root), "/quire.yml") != 0) {
		walk_out->v = xrealloc(walk_out->v, (walk_out->n + 1) * sizeof(char *));
		walk_out->v[walk_out->n++] = xstrdup(path + strlen(walk_root) + 1);
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void list_files(const char *root, struct files *out)
{
	files_release(out);
	walk_root = root;
	walk_out = out;
	nftw(root, walk_one, 16, FTW_PHYS);
	qsort(out->v, out->n, sizeof(char *), cmp_str);
}

/* ---- edits ---------------------------------------------------------------- */

static const char *const words[] = {
	"pipeline", "module", "session", "provider", "variable", "error", "parameter",
	"object", "property", "script", "remote", "profile", "alias", "format", "Straße",
	"Привет", "東京",
};

static const char *note_name(const char *path, struct buf *out)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	buf_reset(out);
	buf_add(out, base, strlen(base) - 3);
	return out->ptr;
}

int is_md(const char *p)
{
	size_t n = strlen(p);
	return n > 3 && strcmp(p + n - 3, ".md") == 0;
}

static const char *random_note(struct files *f)
{
	size_t tries;

	/* a vault with no file yet: the edit creates a note (op 6) */
	for (tries = 0; tries < 100 && f->n; tries++) {
		const char *p = f->v[pick(f->n)];
		if (is_md(p))
			return p;
	}
	return NULL;
}

/* Inserts a frontmatter line (after the opening ---, adding a block if there is none). */
static void set_front(struct buf *text, const char *line)
{
	struct buf out = BUF_INIT;

	if (strncmp(text->ptr, "---\n", 4) == 0) {
		buf_adds(&out, "---\n");
		buf_adds(&out, line);
		buf_addc(&out, '\n');
		buf_adds(&out, text->ptr + 4);
	} else {
		buf_addf(&out, "---\n%s\n---\n", line);
		buf_add(&out, text->ptr, text->len);
	}
	buf_reset(text);
	buf_add(text, out.ptr, out.len);
	buf_release(&out);
}

/* Removes the first line containing needle (outside of nothing in particular). */
static int drop_line(struct buf *text, const char *needle)
{
	char *hit = strstr(text->ptr, needle), *start, *end;
	if (!hit)
		return 0;
	start = hit;
	while (start > text->ptr && start[-1] != '\n')
		start--;
	end = strchr(hit, '\n');
	end = end ? end + 1 : text->ptr + text->len;
	memmove(start, end, (size_t)(text->ptr + text->len - end) + 1);
	text->len -= (size_t)(end - start);
	return 1;
}

static void touched(struct step *st, const char *rel)
{
	if (st->npaths < 4)
		st->paths[st->npaths++] = xstrdup(rel);
}

void edit(const char *root, struct files *f, struct step *st, unsigned counter)
{
	struct buf text = BUF_INIT, name = BUF_INIT, rel = BUF_INIT;
	const char *target = random_note(f), *other = random_note(f);
	unsigned op = (unsigned)pick(21);

	if (!target || !other)
		op = 6;
	if (target && (op <= 9 || op == 15 || op == 19))
		tv_read(root, target, &text);
	switch (op) {
	case 0: /* body edit */
		st->what = "edit body";
		buf_addf(&text, "\n\nA new paragraph about %s and %s.\n", words[pick(17)], words[pick(17)]);
		break;
	case 1: /* add a link */
		st->what = "add link";
		buf_addf(&text, "\nSee [[%s]]", note_name(other, &name));
		buf_addf(&text, " and [[%s|this one]].\n", note_name(random_note(f), &name));
		break;
	case 2: /* a link to a name that does not exist yet (added later, maybe) */
		st->what = "add dangling link";
		buf_addf(&text, "\nSoon: [[Future note %u]].\n", (unsigned)pick(6));
		break;
	case 3: /* embed a note or a section */
		st->what = "add embed";
		if (pick(2))
			buf_addf(&text, "\n![[%s]]\n", note_name(other, &name));
		else
			buf_addf(&text, "\n![[%s#Description]]\n", note_name(other, &name));
		break;
	case 4: /* retitle */
		st->what = "retitle";
		drop_line(&text, "\ntitle:");
		buf_reset(&name);
		buf_addf(&name, "title: Retitled %u %s", counter, words[pick(17)]);
		set_front(&text, name.ptr);
		break;
	case 5: /* publish flags */
		st->what = "publish flag";
		if (!drop_line(&text, "draft: true") && !drop_line(&text, "publish: false"))
			set_front(&text, pick(2) ? "draft: true" : "publish: false");
		break;
	case 6: { /* a new note, sometimes with a name others already link to */
		st->what = "add note";
		buf_addf(&rel, "%sFuture note %u.md", pick(2) ? "new/" : "", (unsigned)pick(6));
		buf_reset(&text);
		buf_addf(&text, "---\ntags: [new]\n---\n# Fresh\n\nLinks to [[%s]].\n\n## Description\n\nText.\n",
			 other ? note_name(other, &name) : "nothing");
		tv_write(root, rel.ptr, text.ptr);
		touched(st, rel.ptr);
		goto out;
	}
	case 7: /* tags and aliases */
		st->what = "tags and aliases";
		if (pick(2)) {
			buf_addf(&text, "\nTagged #%s #topic/%u\n", pick(2) ? "inline" : "other", (unsigned)pick(3));
		} else {
			buf_reset(&name);
			buf_addf(&name, "aliases: [Alias %u]", (unsigned)pick(5));
			drop_line(&text, "aliases:");
			set_front(&text, name.ptr);
		}
		break;
	case 8: /* slug */
		st->what = "slug";
		if (!drop_line(&text, "slug:")) {
			buf_reset(&name);
			buf_addf(&name, "slug: %s", pick(2) ? "same-slug" : "/top/level");
			set_front(&text, name.ptr);
		}
		break;
	case 9: /* remove links */
		st->what = "remove a link";
		drop_line(&text, "[[");
		break;
	case 10: /* delete a note */
		st->what = "delete note";
		tv_unlink(root, target);
		touched(st, target);
		goto out;
	case 11: { /* rename a note (as an editor does: the old path vanishes, a new one appears) */
		struct buf dst = BUF_INIT;
		st->what = "rename note";
		tv_read(root, target, &text);
		buf_addf(&dst, "renamed/%s %u.md", note_name(target, &name), counter);
		tv_unlink(root, target);
		tv_write_len(root, dst.ptr, text.ptr, text.len);
		touched(st, target);
		touched(st, dst.ptr);
		buf_release(&dst);
		goto out;
	}
	case 12: { /* an attachment appears and is embedded */
		st->what = "add attachment";
		buf_addf(&rel, "media/pic-%u.png", (unsigned)pick(3));
		tv_write_len(root, rel.ptr, "\x89PNG\r\n\x1a\nfake", 12);
		touched(st, rel.ptr);
		tv_read(root, target, &text);
		buf_addf(&text, "\n![[pic-%u.png|200]]\n", (unsigned)pick(3));
		tv_write_len(root, target, text.ptr, text.len);
		touched(st, target);
		goto out;
	}
	case 13: { /* an attachment vanishes */
		size_t i;
		st->what = "delete attachment";
		for (i = 0; i < f->n; i++) {
			const char *p = f->v[(i + pick(f->n)) % f->n];
			if (!is_md(p)) {
				tv_unlink(root, p);
				touched(st, p);
				break;
			}
		}
		goto out;
	}
	case 14: { /* a whole folder of notes vanishes (git checkout of another branch) */
		const char *slash = strrchr(target, '/');
		st->what = "delete folder";
		if (!slash || strncmp(target, "new/", 4) != 0) {
			tv_unlink(root, target);
			touched(st, target);
		} else {
			size_t i;
			buf_add(&rel, target, (size_t)(slash - target));
			for (i = 0; i < f->n; i++)
				if (strncmp(f->v[i], rel.ptr, rel.len) == 0 && f->v[i][rel.len] == '/')
					tv_unlink(root, f->v[i]);
			touched(st, rel.ptr);
		}
		goto out;
	}
	case 15: { /* routes on other hosts: added, changed, moved between hosts, dropped */
		static const char *const routes[] = { "docs.example.com/", "docs.example.com/guide",
						      "docs.example.com/p%u", "open.example.com/x%u",
						      "Other.Example.com:8080/page", "/extra/%u",
						      "www.docs.example.com/w" };
		st->what = "routes";
		drop_line(&text, "\nroutes:");
		if (pick(4)) {
			unsigned k, n = 1 + (unsigned)pick(2);
			buf_reset(&name);
			buf_adds(&name, "routes: [");
			for (k = 0; k < n; k++) {
				if (k)
					buf_adds(&name, ", ");
				buf_addf(&name, routes[pick(7)], (unsigned)pick(3));
			}
			buf_adds(&name, "]");
			set_front(&text, name.ptr);
		}
		break;
	}
	case 17: { /* a note replaced by a folder of the same name, holding a note */
		st->what = "note becomes folder";
		buf_addf(&rel, "%s/inside %u.md", target, counter);
		tv_unlink(root, target);
		buf_reset(&text);
		buf_addf(&text, "# Inside\n\nIn a folder named like a note: [[%s]], ![[%s]].\n",
			 note_name(other, &name), note_name(other, &name));
		tv_write(root, rel.ptr, text.ptr);
		touched(st, target);
		touched(st, rel.ptr);
		goto out;
	}
	case 18: { /* such a folder becomes a note again */
		size_t i;
		const char *dir = NULL, *md = NULL;
		st->what = "folder becomes note";
		for (i = 0; i < f->n && !dir; i++)
			if ((md = strstr(f->v[i], ".md/")))
				dir = f->v[i];
		if (!dir) {
			touched(st, target);
			goto out;
		}
		buf_add(&rel, dir, (size_t)(md + 3 - dir));
		buf_reset(&name);
		buf_addf(&name, "%s/%s", root, rel.ptr);
		tv_rmtree(name.ptr);
		tv_write(root, rel.ptr, "# Back\n\nA note again, linking [[Future note 1]].\n");
		touched(st, rel.ptr);
		goto out;
	}
	case 16: { /* a folder renamed with everything in it (a move in the editor's file tree) */
		const char *slash = strrchr(target, '/');
		struct buf from = BUF_INIT, to = BUF_INIT;
		st->what = "rename folder";
		if (!slash) { /* a note at the root: no folder to move */
			touched(st, target);
			goto out;
		}
		buf_add(&rel, target, (size_t)(slash - target));
		buf_addf(&name, "%s moved %u", rel.ptr, counter);
		buf_addf(&from, "%s/%s", root, rel.ptr);
		buf_addf(&to, "%s/%s", root, name.ptr);
		if (rename(from.ptr, to.ptr) != 0) {
			perror(from.ptr);
			test_current_failed = 1;
		}
		touched(st, rel.ptr);
		touched(st, name.ptr);
		buf_release(&from);
		buf_release(&to);
		goto out;
	}
	case 20: { /* a note moved to another folder under its own name (drag and drop) */
		struct buf from = BUF_INIT, to = BUF_INIT;
		const char *slash = strrchr(target, '/');
		st->what = "move note";
		buf_addf(&rel, "moved %u", (unsigned)pick(3));
		buf_addf(&name, "%s/%s", rel.ptr, slash ? slash + 1 : target);
		buf_addf(&from, "%s/%s", root, target);
		buf_addf(&to, "%s/%s", root, rel.ptr);
		mkdir(to.ptr, 0755);
		buf_addf(&to, "/%s", slash ? slash + 1 : target);
		if (!tv_exists(root, name.ptr) && rename(from.ptr, to.ptr) != 0) {
			perror(from.ptr);
			test_current_failed = 1;
		}
		touched(st, target);
		touched(st, name.ptr);
		buf_release(&from);
		buf_release(&to);
		goto out;
	}
	case 19: { /* deleted and written back before anyone looked; reported with its folder */
		const char *slash = strrchr(target, '/');
		st->what = "delete and restore";
		tv_unlink(root, target);
		buf_addf(&text, "\nRestored %u.\n", counter);
		tv_write_len(root, target, text.ptr, text.len);
		touched(st, target);
		buf_add(&rel, target, slash ? (size_t)(slash - target) : 0);
		touched(st, rel.ptr);
		touched(st, target);
		goto out;
	}
	default: /* an untouched file reported as changed: nothing must move */
		st->what = "touch";
		touched(st, target);
		goto out;
	}
	tv_write_len(root, target, text.ptr, text.len);
	touched(st, target);
out:
	buf_release(&text);
	buf_release(&name);
	buf_release(&rel);
}

void step_failed(const char *prefix, unsigned i, const struct step *st, size_t diffs)
{
	size_t k;

	fprintf(stderr, "%s%sstep %u (%s", prefix ? prefix : "", prefix ? " " : "", i, st->what);
	for (k = 0; k < st->npaths; k++)
		fprintf(stderr, " %s", st->paths[k]);
	fprintf(stderr, "): %zu pages differ\n", diffs);
	test_current_failed = 1;
}

void step_release(struct step *st)
{
	size_t k;

	for (k = 0; k < st->npaths; k++)
		free(st->paths[k]);
	st->npaths = 0;
}

/* ---- comparing ------------------------------------------------------------ */

static int same_page(const struct page *a, const struct page *b)
{
	if (a->kind != b->kind || strcmp(a->content_type, b->content_type) != 0)
		return 0;
	/* page_bytes: the identity bytes, inflated when only gzip is kept */
	if (a->body_len != b->body_len ||
	    (a->body_len && memcmp(page_bytes(a), page_bytes(b), a->body_len)))
		return 0;
	if (strcmp(a->etag, b->etag) != 0)
		return 0;
	if (!a->location != !b->location || (a->location && strcmp(a->location, b->location)))
		return 0;
	if (!a->file != !b->file || (a->file && (strcmp(a->file, b->file) || a->file_size != b->file_size)))
		return 0;
	return 1;
}

static void show_difference(const struct page *a, const struct page *b)
{
	size_t i, n = a->body_len < b->body_len ? a->body_len : b->body_len;
	char *ab = NULL, *bb = NULL;

	/* copies: page_bytes() keeps only the last few inflated */
	if (page_bytes(a))
		ab = xstrndup(page_bytes(a), a->body_len);
	if (page_bytes(b))
		bb = xstrndup(page_bytes(b), b->body_len);
	for (i = 0; i < n && ab && bb && ab[i] == bb[i]; i++)
		;
	fprintf(stderr, "    kinds %d/%d, lengths %zu/%zu, first difference at %zu:\n", a->kind,
		b->kind, a->body_len, b->body_len, i);
	if (ab && bb) {
		size_t from = i > 120 ? i - 120 : 0;
		fprintf(stderr, "    incremental: ...%.*s...\n", (int)(i + 120 > a->body_len ? a->body_len - from : i + 120 - from), ab + from);
		fprintf(stderr, "    full:        ...%.*s...\n", (int)(i + 120 > b->body_len ? b->body_len - from : i + 120 - from), bb + from);
	}
	if (getenv("QUIRE_DUMP")) {
		FILE *fa = fopen("/tmp/quire-inc.html", "w"), *fb = fopen("/tmp/quire-full.html", "w");
		if (fa && ab)
			fwrite(ab, 1, a->body_len, fa);
		if (fb && bb)
			fwrite(bb, 1, b->body_len, fb);
		if (fa)
			fclose(fa);
		if (fb)
			fclose(fb);
	}
	free(ab);
	free(bb);
	if (a->location || b->location)
		fprintf(stderr, "    locations %s / %s\n", a->location ? a->location : "-",
			b->location ? b->location : "-");
}

/* The pages of two hosts (either may be NULL), named for messages. */
static size_t compare_host(const char *name, const struct snapshot_host *a,
			   const struct snapshot_host *b)
{
	const struct map empty = MAP_INIT;
	const struct map *ma = a ? &a->pages : &empty, *mb = b ? &b->pages : &empty;
	size_t i = 0, diffs = 0, keylen;
	const char *key;
	void *v;

	while (map_next(mb, &i, &key, &keylen, &v)) {
		const struct page *p = map_get(ma, key, keylen);
		if ((!p || !same_page(p, v)) && diffs++ < 3) {
			fprintf(stderr, "  host %s page %.*s: %s\n", name, (int)keylen, key,
				p ? "differs" : "missing from the incremental snapshot");
			if (p)
				show_difference(p, v);
		}
	}
	i = 0;
	while (map_next(ma, &i, &key, &keylen, &v))
		if (!map_get(mb, key, keylen) && diffs++ < 6)
			fprintf(stderr, "  host %s page %.*s: only in the incremental snapshot\n", name,
				(int)keylen, key);
	if (a && b && (!a->not_found) != (!b->not_found)) {
		fprintf(stderr, "  host %s: 404 page in one snapshot only\n", name);
		diffs++;
	} else if (a && b && a->not_found && !same_page(a->not_found, b->not_found)) {
		fprintf(stderr, "  host %s: 404 pages differ\n", name);
		diffs++;
	}
	if (a && b && (a->open != b->open || strcmp(a->origin, b->origin) != 0)) {
		fprintf(stderr, "  host %s: settings differ\n", name);
		diffs++;
	}
	return diffs;
}

/* Every host's pre-rendered pages, both ways. */
static size_t compare_hosts(const struct snapshot *inc, const struct snapshot *full)
{
	const struct map empty = MAP_INIT;
	const struct map *hi = inc->hosts ? &inc->hosts->by_name : &empty;
	const struct map *hf = full->hosts ? &full->hosts->by_name : &empty;
	size_t i = 0, diffs = 0, keylen;
	const char *key;
	void *v;

	diffs += compare_host("(main routes)", inc->hosts ? inc->hosts->main : NULL,
			      full->hosts ? full->hosts->main : NULL);
	while (map_next(hf, &i, &key, &keylen, &v)) {
		const struct snapshot_host *a = map_get(hi, key, keylen);
		if (!a) {
			fprintf(stderr, "  host %.*s: missing from the incremental snapshot\n",
				(int)keylen, key);
			diffs++;
			continue;
		}
		diffs += compare_host(a->name, a, v);
	}
	i = 0;
	while (map_next(hi, &i, &key, &keylen, &v)) {
		if (!map_get(hf, key, keylen)) {
			fprintf(stderr, "  host %.*s: only in the incremental snapshot\n", (int)keylen,
				key);
			diffs++;
		}
	}
	return diffs;
}

/* Returns the number of differing pages (printing the first few). */
size_t compare(const struct snapshot *inc, const struct snapshot *full)
{
	struct ptable_iter it = PTABLE_ITER_INIT;
	const struct page *v;
	size_t diffs = 0;

	while ((v = ptable_next(&full->pages, &it))) {
		const struct page *a = snapshot_get(inc, v->path, v->path_len);
		if (!a || !same_page(a, v)) {
			if (diffs++ < 3) {
				fprintf(stderr, "  page %s: %s\n", v->path,
					a ? "differs" : "missing from the incremental snapshot");
				if (a)
					show_difference(a, v);
			}
		}
	}
	it = (struct ptable_iter)PTABLE_ITER_INIT;
	while ((v = ptable_next(&inc->pages, &it))) {
		if (!snapshot_get(full, v->path, v->path_len) && diffs++ < 6)
			fprintf(stderr, "  page %s: only in the incremental snapshot\n", v->path);
	}
	if (inc->pages.len != full->pages.len && diffs++ < 6)
		fprintf(stderr, "  %zu pages, %zu in a fresh load\n", inc->pages.len, full->pages.len);
	diffs += compare_hosts(inc, full);
	if (inc->nnotes != full->nnotes || inc->nattachments != full->nattachments) {
		fprintf(stderr, "  counts: %zu/%zu notes, %zu/%zu attachments\n", inc->nnotes,
			full->nnotes, inc->nattachments, full->nattachments);
		diffs++;
	}
	return diffs;
}

/*
 * Pages that a fresh load compresses and inc does not (or the other way
 * round), or whose gzip bytes do not inflate to the page: what
 * site_gzip_pending() must have settled. Returns how many.
 */
size_t compare_gzip(const struct snapshot *inc, const struct snapshot *full)
{
	struct ptable_iter it = PTABLE_ITER_INIT;
	const struct page *v;
	size_t diffs = 0;

	while ((v = ptable_next(&full->pages, &it))) {
		const struct page *a = snapshot_get(inc, v->path, v->path_len);
		struct buf raw = BUF_INIT;
		int bad;
		if (!a)
			continue; /* compare() reports it */
		bad = !a->gz != !v->gz;
		if (!bad && a->gz) {
			char *want = xstrndup(page_bytes(v), v->body_len);
			bad = gzip_decompress(a->gz, a->gz_len, &raw) < 0 || raw.len != v->body_len ||
			      memcmp(raw.ptr, want, raw.len) != 0;
			free(want);
		}
		if (bad && diffs++ < 3)
			fprintf(stderr, "  page %s: gzip bytes %s\n", v->path,
				!a->gz ? "missing" : !v->gz ? "where a fresh load has none" : "wrong");
		buf_release(&raw);
	}
	return diffs;
}
