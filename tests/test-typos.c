/*
 * test-typos.c: search that forgives typos, on real vaults loaded as
 * `quire serve` loads them.
 *
 * For each vault (vault-sample always; pwsh-docs of the shared corpus
 * when it is there, else that part is skipped with a line saying so), a
 * copy with a private note and a draft added is loaded with search, and
 * the index filled. Then the titles of its notes, as the index holds
 * them, give queries: in each title one word of five letters or more
 * (chosen with a seeded generator) gets one typo of the four kinds in
 * turn (a letter dropped, two neighbours swapped, one replaced, one
 * added), keeping the typed word at five letters or more so the rules
 * allow it a typo. A query counts when the note is among the first five
 * results. The test prints the count and fails below a floor; the same
 * queries as typed must all find their note first or among the five
 * (what typos are measured against). The private note's and the draft's
 * words, and the CamelCase parts of its words, are never found, corrected
 * or suggested; those of a published note are, with a typo.
 */
#include "lib/server.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "search/search.h"
#include "site/loader.h"
#include "site/site.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The queries a vault gives at most (pwsh-docs has 1,120 notes: the measure is 100). */
#define QUERIES_MAX 100

struct title {
	char *url, *title;
};

static uint64_t rng;

static uint32_t next(void)
{
	rng = rng * 6364136223846793005u + 1442695040888963407u;
	return (uint32_t)(rng >> 33);
}

/* Whether url is among the first five results of the JSON answer out. */
static int in_first_five(const char *out, const char *url)
{
	struct buf want = BUF_INIT;
	const char *p = out;
	int i, found = 0;

	buf_addf(&want, "{\"url\":\"%s\"", url);
	for (i = 0; i < 5 && (p = strstr(p, "{\"url\":\"")); i++, p++)
		if (strncmp(p, want.ptr, want.len) == 0)
			found = 1;
	buf_release(&want);
	return found;
}

/*
 * The title with one typo of kind in its word of ASCII letters that
 * starts at w (len letters), at a place next() picks; NULL when the word
 * cannot take that kind and stay five letters long. The caller frees.
 */
static char *with_typo(const char *title, size_t w, size_t len, int kind)
{
	struct buf b = BUF_INIT;
	size_t at;
	char c;

	if (kind == 0 && len < 6)
		return NULL; /* dropped: the typed word would be four letters */
	buf_add(&b, title, w);
	at = next() % (kind == 1 ? len - 1 : len);
	switch (kind) {
	case 0: /* dropped */
		buf_add(&b, title + w, at);
		buf_adds(&b, title + w + at + 1);
		break;
	case 1: /* swapped with the next */
		if (tolower((unsigned char)title[w + at]) == tolower((unsigned char)title[w + at + 1])) {
			buf_release(&b);
			return NULL;
		}
		buf_add(&b, title + w, at);
		buf_addc(&b, title[w + at + 1]);
		buf_addc(&b, title[w + at]);
		buf_adds(&b, title + w + at + 2);
		break;
	case 2: /* replaced */
		do
			c = (char)('a' + next() % 26);
		while (c == tolower((unsigned char)title[w + at]));
		buf_add(&b, title + w, at);
		buf_addc(&b, c);
		buf_adds(&b, title + w + at + 1);
		break;
	default: /* added */
		buf_add(&b, title + w, at);
		buf_addc(&b, (char)('a' + next() % 26));
		buf_adds(&b, title + w + at);
		break;
	}
	return buf_detach(&b, NULL);
}

/* The words of five ASCII letters or more in t, a word being a run of letters: their starts. */
static size_t long_words(const char *t, size_t *start, size_t *len, size_t max)
{
	size_t i = 0, n = 0;

	while (t[i] && n < max) {
		size_t j = i;

		while (isalpha((unsigned char)t[j]))
			j++;
		/* a run inside a word of other characters (digits, accents) is not a word */
		if (j - i >= 5 && (i == 0 || !((unsigned char)t[i - 1] & 0x80) || !isalnum((unsigned char)t[i - 1])) &&
		    !((unsigned char)t[j] & 0x80) && !isdigit((unsigned char)t[j]) &&
		    (i == 0 || !isdigit((unsigned char)t[i - 1]))) {
			start[n] = i;
			len[n++] = j - i;
		}
		i = j > i ? j : i + 1;
	}
	return n;
}

/* The published notes' URLs and titles, as the index at path holds them, by URL. */
static size_t read_titles(const char *path, struct title **out)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	size_t n = 0, alloc = 0;

	*out = NULL;
	CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
	CHECK(sqlite3_prepare_v2(db, "SELECT url, title FROM doc ORDER BY url", -1, &st, NULL) ==
	      SQLITE_OK);
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		ALLOC_GROW(*out, n + 1, alloc);
		(*out)[n].url = xstrdup((const char *)sqlite3_column_text(st, 0));
		(*out)[n].title = xstrdup((const char *)sqlite3_column_text(st, 1));
		n++;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/* What the queries found: in all, and by kind of typo. */
struct tally {
	size_t asked, found, exact, kinds[4], hit[4];
};

/*
 * Asks for the title t as typed and with a typo in its word at start (len
 * letters), of the next kind that word can take; counts in tl.
 */
static void ask(struct search_reader *r, const struct title *t, size_t start, size_t len,
		struct tally *tl)
{
	struct buf out = BUF_INIT;
	char *typo = NULL;
	int k, kind = 0;

	for (k = 0; k < 4 && !typo; k++)
		typo = with_typo(t->title, start, len, kind = (int)((tl->asked + (size_t)k) % 4));
	if (!typo)
		return;
	CHECK_INT(search_query(r, t->title, 10, 0, &out), 0);
	tl->exact += in_first_five(out.ptr, t->url);
	buf_reset(&out);
	CHECK_INT(search_query(r, typo, 10, 0, &out), 0);
	tl->asked++;
	tl->kinds[kind]++;
	if (in_first_five(out.ptr, t->url)) {
		tl->found++;
		tl->hit[kind]++;
	} else if (getenv("TYPOS_VERBOSE")) {
		fprintf(stderr, "  missed: [%s] for %s: %.200s\n", typo, t->title, out.ptr);
	}
	free(typo);
	buf_release(&out);
}

/*
 * Loads a copy of the vault at src and runs the queries: at least
 * min_asked, of which floor percent must find their note.
 */
static void typo_vault(const char *src, const char *name, size_t min_asked, int floor)
{
	struct site_options so = { .search = 1 };
	struct site_server_options o = { .site = &so, .threads = 1, .url_prefix = "",
					 .search_rate = 1e9, .search_burst = 1e9 };
	struct site_server srv;
	struct search_reader *r;
	struct title *t = NULL;
	struct buf out = BUF_INIT;
	struct tally tl = { 0 };
	size_t nt, i, step;
	char *vault = tv_new();
	int k;

	tv_copy(src, vault);
	tv_write(vault, "zz-private/Zygomorphic.md",
		 "---\npublish: false\n---\nThe quillwortish rhizomorph is private; "
		 "so is Get-BrambleworthZymurgical.\n");
	tv_write(vault, "zz-public/Lantern.md", "Get-SaxifrageLantern lights the way.\n");
	tv_write(vault, "zz-private/Draft.md",
		 "---\ndraft: true\n---\nThe xanthoderm plan is a draft.\n");
	site_server_start(&srv, vault, &o);
	for (i = 0; i < 1200 && srv.loader && !loader_search_ready(srv.loader); i++)
		usleep(100000);
	CHECK(srv.loader && loader_search_ready(srv.loader));
	r = srv.loader ? search_reader_open(loader_search_path(srv.loader)) : NULL;
	CHECK(r != NULL);
	nt = r ? read_titles(loader_search_path(srv.loader), &t) : 0;
	CHECK(nt > 20);
	rng = 33;
	step = nt / QUERIES_MAX > 1 ? nt / QUERIES_MAX : 1;
	/* one word of a title in every step-th; in a small vault, each word of every title */
	for (i = 0; r && i < nt && tl.asked < QUERIES_MAX; i += step) {
		size_t start[16], len[16], n = long_words(t[i].title, start, len, 16), w;

		if (step > 1 && n > 0) {
			w = next() % n;
			ask(r, &t[i], start[w], len[w], &tl);
		}
		for (w = 0; step == 1 && w < n && tl.asked < QUERIES_MAX; w++)
			ask(r, &t[i], start[w], len[w], &tl);
	}
	printf("%s: %zu title words with one typo, %zu find their note in the first five "
	       "(dropped %zu/%zu, swapped %zu/%zu, replaced %zu/%zu, added %zu/%zu); "
	       "the titles as typed, %zu\n",
	       name, tl.asked, tl.found, tl.hit[0], tl.kinds[0], tl.hit[1], tl.kinds[1], tl.hit[2],
	       tl.kinds[2], tl.hit[3], tl.kinds[3], tl.exact);
	CHECK(tl.asked >= min_asked);
	CHECK(tl.found * 100 >= tl.asked * (size_t)floor);

	/* unpublished: not found, not corrected, not suggested, as typed or mistyped */
	for (k = 0; r && k < 10; k++) {
		static const char *const q[] = { "quillwortish", "quillwortsh", "rhizomorph",
						 "rhizomroph",  "xanthoderm",  "xanthodrem",
						 "brambleworth", "bramblewroth", "zymurgical", "zymurgicla" };
		buf_reset(&out);
		CHECK_INT(search_query(r, q[k], 10, 0, &out), 0);
		CHECK(strstr(out.ptr, "\"total\":0,") && !strstr(out.ptr, "suggestion") &&
		      !strstr(out.ptr, "corrected"));
		if (!strstr(out.ptr, "\"total\":0,") || strstr(out.ptr, "suggestion"))
			fprintf(stderr, "  [%s]: %s\n", q[k], out.ptr);
	}
	/* a CamelCase part of a published note: found with a typo, corrected */
	buf_reset(&out);
	CHECK(r && search_query(r, "saxifrgae", 10, 0, &out) == 0);
	CHECK(strstr(out.ptr, "\"corrected\":\"saxifrage\"") && strstr(out.ptr, "Lantern"));
	buf_release(&out);
	for (i = 0; i < nt; i++) {
		free(t[i].url);
		free(t[i].title);
	}
	free(t);
	search_reader_free(r);
	site_server_stop(&srv);
	tv_remove(vault);
}

static void test_sample(void)
{
	char *sample = tv_sample();

	typo_vault(sample, "vault-sample", 20, 80);
	free(sample);
}

static void test_pwsh(void)
{
	char *corpus = tv_corpus_vault("pwsh-docs", "one-typo queries from the titles of its "
				       "1,120 notes");

	if (!corpus)
		return;
	typo_vault(corpus, "pwsh-docs", QUERIES_MAX, 80);
	free(corpus);
}

int main(void)
{
	RUN(test_sample);
	RUN(test_pwsh);
	return test_done();
}
