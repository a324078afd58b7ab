/*
 * test-search.c: the search index on a real SQLite file in a temporary
 * folder: words, phrases, prefixes, exclusions, accents, ranking, Chinese
 * and Japanese, substrings, updates and deletes, paging, snippet segments,
 * hostile queries, readers on threads during commits, and rebuilding a
 * corrupt or outdated file. Every response is parsed by the small JSON
 * parser below, which also proves it valid.
 */
#include "search/search.h"
#include "site/site.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "util/unicode.h"
#include "vault/vault.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- A strict little JSON parser ------------------------------------------ */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum jtype type;
	int b;
	double num;
	char *str;          /* J_STR, decoded */
	size_t n;           /* J_ARR, J_OBJ */
	char **keys;        /* J_OBJ */
	struct jv **items;
};

struct jp {
	const char *s;
	int depth;
};

static void jfree(struct jv *v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < v->n; i++) {
		if (v->keys)
			free(v->keys[i]);
		jfree(v->items[i]);
	}
	free(v->keys);
	free(v->items);
	free(v->str);
	free(v);
}

static void jws(struct jp *p)
{
	while (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')
		p->s++;
}

static int hex4(const char *s, unsigned *out)
{
	unsigned v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		char c = s[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static char *jstring(struct jp *p)
{
	struct buf b = BUF_INIT;

	if (*p->s != '"')
		return NULL;
	p->s++;
	for (;;) {
		unsigned char c = (unsigned char)*p->s;
		if (c == '"') {
			p->s++;
			return buf_detach(&b, NULL);
		}
		if (c < 0x20)
			goto fail; /* raw control characters (and the end) are invalid */
		if (c != '\\') {
			buf_addc(&b, c);
			p->s++;
			continue;
		}
		p->s++;
		switch (*p->s) {
		case '"': buf_addc(&b, '"'); break;
		case '\\': buf_addc(&b, '\\'); break;
		case '/': buf_addc(&b, '/'); break;
		case 'b': buf_addc(&b, '\b'); break;
		case 'f': buf_addc(&b, '\f'); break;
		case 'n': buf_addc(&b, '\n'); break;
		case 'r': buf_addc(&b, '\r'); break;
		case 't': buf_addc(&b, '\t'); break;
		case 'u': {
			unsigned cp, lo;
			if (hex4(p->s + 1, &cp) < 0)
				goto fail;
			p->s += 4;
			if (cp >= 0xD800 && cp < 0xDC00) {
				if (p->s[1] != '\\' || p->s[2] != 'u' || hex4(p->s + 3, &lo) < 0 ||
				    lo < 0xDC00 || lo > 0xDFFF)
					goto fail;
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				p->s += 6;
			} else if (cp >= 0xDC00 && cp < 0xE000) {
				goto fail;
			}
			buf_add_utf8(&b, cp);
			break;
		}
		default:
			goto fail;
		}
		p->s++;
	}
fail:
	buf_release(&b);
	return NULL;
}

static struct jv *jvalue(struct jp *p);

static struct jv *jcontainer(struct jp *p, int obj)
{
	struct jv *v = xcalloc(1, sizeof(*v));
	size_t alloc = 0, kalloc = 0;

	v->type = obj ? J_OBJ : J_ARR;
	p->s++;
	jws(p);
	if (*p->s == (obj ? '}' : ']')) {
		p->s++;
		return v;
	}
	for (;;) {
		struct jv *item;
		char *key = NULL;

		jws(p);
		if (obj) {
			key = jstring(p);
			if (!key)
				goto fail;
			jws(p);
			if (*p->s != ':') {
				free(key);
				goto fail;
			}
			p->s++;
		}
		item = jvalue(p);
		if (!item) {
			free(key);
			goto fail;
		}
		ALLOC_GROW(v->items, v->n + 1, alloc);
		if (obj) {
			ALLOC_GROW(v->keys, v->n + 1, kalloc);
			v->keys[v->n] = key;
		}
		v->items[v->n++] = item;
		jws(p);
		if (*p->s == ',') {
			p->s++;
			continue;
		}
		if (*p->s == (obj ? '}' : ']')) {
			p->s++;
			return v;
		}
		goto fail;
	}
fail:
	jfree(v);
	return NULL;
}

static struct jv *jvalue(struct jp *p)
{
	struct jv *v;
	const char *start;

	jws(p);
	if (++p->depth > 64)
		return NULL;
	if (*p->s == '{' || *p->s == '[') {
		v = jcontainer(p, *p->s == '{');
		p->depth--;
		return v;
	}
	p->depth--;
	v = xcalloc(1, sizeof(*v));
	if (*p->s == '"') {
		v->type = J_STR;
		v->str = jstring(p);
		if (!v->str) {
			free(v);
			return NULL;
		}
		return v;
	}
	if (strncmp(p->s, "true", 4) == 0 || strncmp(p->s, "false", 5) == 0) {
		v->type = J_BOOL;
		v->b = *p->s == 't';
		p->s += v->b ? 4 : 5;
		return v;
	}
	if (strncmp(p->s, "null", 4) == 0) {
		p->s += 4;
		return v;
	}
	/* number: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
	start = p->s;
	if (*p->s == '-')
		p->s++;
	if (*p->s == '0')
		p->s++;
	else if (*p->s >= '1' && *p->s <= '9')
		while (*p->s >= '0' && *p->s <= '9')
			p->s++;
	else
		goto fail;
	if (*p->s == '.') {
		p->s++;
		if (!(*p->s >= '0' && *p->s <= '9'))
			goto fail;
		while (*p->s >= '0' && *p->s <= '9')
			p->s++;
	}
	if (*p->s == 'e' || *p->s == 'E') {
		p->s++;
		if (*p->s == '+' || *p->s == '-')
			p->s++;
		if (!(*p->s >= '0' && *p->s <= '9'))
			goto fail;
		while (*p->s >= '0' && *p->s <= '9')
			p->s++;
	}
	v->type = J_NUM;
	v->num = strtod(start, NULL);
	return v;
fail:
	free(v);
	return NULL;
}

/* The parsed document, or NULL when s (len bytes) is not exactly one valid JSON value. */
static struct jv *jparse(const char *s, size_t len)
{
	struct jp p = { s, 0 };
	struct jv *v;

	if (strlen(s) != len || !utf8_valid(s, len))
		return NULL;
	v = jvalue(&p);
	if (!v)
		return NULL;
	jws(&p);
	if (*p.s) {
		jfree(v);
		return NULL;
	}
	return v;
}

static struct jv *jget(const struct jv *o, const char *key)
{
	size_t i;

	if (!o || o->type != J_OBJ)
		return NULL;
	for (i = 0; i < o->n; i++)
		if (strcmp(o->keys[i], key) == 0)
			return o->items[i];
	return NULL;
}

static struct jv *jat(const struct jv *a, size_t i)
{
	return a && a->type == J_ARR && i < a->n ? a->items[i] : NULL;
}

static void test_json_parser(void)
{
	static const char *const good[] = { "{}", "[]", "{\"a\":[1,-2.5e3,true,false,null,\"\\u00e9\\ud83d\\ude00\"]}",
					    " \"x\\n\" " };
	static const char *const bad[] = { "", "{", "{\"a\":}", "[1,]", "\"\x01\"", "01", "\"\\ud800\"",
					   "{} {}", "\"abc", "[\"\\x\"]", "1." };
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(*good); i++) {
		struct jv *v = jparse(good[i], strlen(good[i]));
		CHECK(v != NULL);
		jfree(v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct jv *v = jparse(bad[i], strlen(bad[i]));
		if (v)
			fprintf(stderr, "  accepted: %s\n", bad[i]);
		CHECK(v == NULL);
		jfree(v);
	}
}

/* ---- Fixtures --------------------------------------------------------------- */

static char dir[] = "/tmp/quire-test-search-XXXXXX";
static char db_path[256];

static struct search *writer;
static struct search_reader *reader;

static void put(const char *url, const char *title, const char *headings, const char *tags,
		const char *text)
{
	CHECK(search_put(writer, url, title, headings, tags, text) == 0);
}

/*
 * Runs a query that must succeed; returns the parsed response (the caller
 * frees it) or NULL after marking the test failed.
 */
static struct jv *query_page(const char *q, int limit, int offset)
{
	struct buf out = BUF_INIT;
	struct jv *v;
	int rc = search_query(reader, q, limit, offset, &out);

	if (rc != 0)
		fprintf(stderr, "  query [%s] failed (%d): %s\n", q, rc, out.ptr);
	CHECK(rc == 0);
	v = jparse(out.ptr, out.len);
	if (!v)
		fprintf(stderr, "  query [%s]: invalid JSON: %s\n", q, out.ptr);
	CHECK(v != NULL);
	buf_release(&out);
	if (rc != 0) {
		jfree(v);
		return NULL;
	}
	return v;
}

static struct jv *query(const char *q)
{
	return query_page(q, 10, 0);
}

/* The URLs of the results, space-separated, in order ("" for none, "ERROR" on failure). */
static const char *urls_of(const struct jv *v)
{
	static char out[4096];
	struct jv *results = jget(v, "results");
	size_t i;

	if (!results || results->type != J_ARR)
		return "ERROR";
	out[0] = '\0';
	for (i = 0; i < results->n; i++) {
		struct jv *url = jget(results->items[i], "url");
		if (!url || url->type != J_STR)
			return "ERROR";
		if (i)
			strncat(out, " ", sizeof(out) - strlen(out) - 1);
		strncat(out, url->str, sizeof(out) - strlen(out) - 1);
	}
	return out;
}

static const char *urls(const char *q)
{
	struct jv *v = query(q);
	const char *u = v ? urls_of(v) : "ERROR";

	jfree(v);
	return u;
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The URLs of the results in byte order, for results whose ranks tie. */
static const char *sorted_urls(const char *q)
{
	static char out[4096];
	char *words[64], *copy;
	size_t n = 0, i;

	copy = xstrdup(urls(q));
	for (char *w = strtok(copy, " "); w && n < 64; w = strtok(NULL, " "))
		words[n++] = w;
	qsort(words, n, sizeof(*words), by_string);
	out[0] = '\0';
	for (i = 0; i < n; i++) {
		if (i)
			strncat(out, " ", sizeof(out) - strlen(out) - 1);
		strncat(out, words[i], sizeof(out) - strlen(out) - 1);
	}
	free(copy);
	return out;
}

static long long total_of(const struct jv *v)
{
	struct jv *t = jget(v, "total");

	return t && t->type == J_NUM ? (long long)t->num : -1;
}

/* Segments of result i as "text|[match]|text", matched runs in brackets. */
static const char *segments_of(const struct jv *v, size_t i)
{
	static char out[4096];
	struct jv *segs = jget(jat(jget(v, "results"), i), "segments");
	size_t k;

	if (!segs || segs->type != J_ARR)
		return "ERROR";
	out[0] = '\0';
	for (k = 0; k < segs->n; k++) {
		struct jv *text = jget(segs->items[k], "text");
		struct jv *match = jget(segs->items[k], "match");
		if (!text || text->type != J_STR || !match || match->type != J_BOOL)
			return "ERROR";
		strncat(out, match->b ? "[" : "", sizeof(out) - strlen(out) - 1);
		strncat(out, text->str, sizeof(out) - strlen(out) - 1);
		strncat(out, match->b ? "]" : "", sizeof(out) - strlen(out) - 1);
	}
	return out;
}

static void reopen_reader(void)
{
	search_reader_free(reader);
	reader = search_reader_open(db_path);
	CHECK(reader != NULL);
}

static void setup(void)
{
	int fresh = 0;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(2);
	}
	snprintf(db_path, sizeof(db_path), "%s/search.db", dir);
	/* a reader cannot open an index that does not exist yet */
	CHECK(search_reader_open(db_path) == NULL);
	writer = search_open(db_path, &fresh);
	if (!writer) {
		fprintf(stderr, "cannot open %s\n", db_path);
		exit(2);
	}
	CHECK_INT(fresh, 1);
	reader = search_reader_open(db_path);
	if (!reader)
		exit(2);
}

static void teardown(void)
{
	char p[300];

	search_reader_free(reader);
	search_free(writer);
	snprintf(p, sizeof(p), "%s-wal", db_path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", db_path);
	unlink(p);
	unlink(db_path);
	rmdir(dir);
}

/* ---- Tests ------------------------------------------------------------------ */

static void test_words(void)
{
	CHECK(search_begin(writer) == 0);
	put("/animals/fox", "The fox", "Habitat\nDiet", "animals wild",
	    "The quick brown fox jumps over the lazy dog near the river bank.");
	put("/animals/dog", "Dogs", "Breeds", "animals pets",
	    "A lazy dog sleeps all day. Dogs are loyal companions.");
	put("/programming", "Programming notes", "Languages", "code",
	    "Programming in C is fun; a programmer writes programs every day.");
	CHECK(search_begin(writer) < 0); /* one transaction at a time */
	CHECK(search_commit(writer) == 0);

	CHECK_STR(urls("fox"), "/animals/fox");
	CHECK_STR(urls("FOX"), "/animals/fox");
	CHECK_STR(urls("fox river"), "/animals/fox");
	CHECK_STR(urls("fox loyal"), "");
	CHECK_STR(urls("elephant"), "");
	/* tags and headings are searched too */
	CHECK_STR(urls("pets"), "/animals/dog");
	CHECK_STR(urls("breeds"), "/animals/dog");
}

static void test_phrases(void)
{
	CHECK_STR(sorted_urls("\"lazy dog\""), "/animals/dog /animals/fox");
	CHECK_STR(urls("\"quick brown fox\""), "/animals/fox");
	CHECK_STR(urls("\"brown quick\""), "");
	CHECK_STR(urls("\"dog sleeps\" lazy"), "/animals/dog");
}

static void test_prefixes(void)
{
	CHECK_STR(urls("progr*"), "/programming");
	CHECK_STR(urls("\"quick bro\"*"), "/animals/fox");
	CHECK_STR(urls("compan*"), "/animals/dog");
	/* prefixes shorter than three characters are searched as words */
	CHECK_STR(sorted_urls("a*"), "/animals/dog /programming");
	CHECK_STR(urls("pr*"), "");
	CHECK_STR(urls("pro*"), "/programming");
}

/*
 * A prefix alone is ranked from its row list and its matches found in the
 * text (search.c): the same rows as FTS5's prefix query, the typed part
 * of each word marked.
 */
static void test_prefix_alone(void)
{
	struct jv *v = query("progr*");

	CHECK(v && total_of(v) == 1);
	CHECK_STR(v ? segments_of(v, 0) : "", "[Progr]amming in C is fun; a [progr]ammer writes "
					       "[progr]ams every day.");
	jfree(v);
	CHECK_STR(sorted_urls("dog*"), "/animals/dog /animals/fox");
	CHECK_STR(urls("zebra*"), "");
}

static void test_exclusion(void)
{
	CHECK_STR(urls("lazy -fox"), "/animals/dog");
	CHECK_STR(urls("lazy -\"brown fox\""), "/animals/dog");
	CHECK_STR(urls("animals -loyal -river"), "");
	CHECK_STR(sorted_urls("lazy -cat"), "/animals/dog /animals/fox");
}

static void test_only_exclusion(void)
{
	struct buf out = BUF_INIT;
	struct jv *v;

	CHECK_INT(search_query(reader, "-fox", 10, 0, &out), -1);
	v = jparse(out.ptr, out.len);
	CHECK(v && jget(v, "error") && jget(v, "error")->type == J_STR);
	jfree(v);
	buf_reset(&out);
	CHECK_INT(search_query(reader, "-fox -dog", 10, 0, &out), -1);
	buf_release(&out);
}

static void test_accents(void)
{
	CHECK(search_begin(writer) == 0);
	put("/cafe", "Café society", "", "", "We met at the café near the Ångström lab.");
	put("/plain", "Plain", "", "", "The cafe served strong coffee; angstrom units are tiny.");
	CHECK(search_commit(writer) == 0);

	CHECK_STR(urls("café -society"), "/plain");
	CHECK_STR(urls("cafe -society"), "/plain");
	CHECK_STR(urls("CAFÉ coffee"), "/plain");
	CHECK_STR(urls("Ångström lab"), "/cafe");
	CHECK_STR(urls("angstrom lab"), "/cafe");
	CHECK_STR(urls("ångström tiny"), "/plain");
	/* NFD input (e + combining acute) finds the NFC text too */
	CHECK_STR(urls("cafe\xCC\x81 near"), "/cafe");
}

static void test_title_ranked_above_body(void)
{
	struct jv *v;
	struct jv *results;

	CHECK(search_begin(writer) == 0);
	put("/z-body", "Some page", "", "", "This page mentions zebra once, in passing, among many other words.");
	put("/a-title", "Zebra", "", "", "Striped animals of Africa, among many other words in the text.");
	put("/m-heading", "Another page", "Zebra crossing", "", "Roads and rules, among many other words.");
	CHECK(search_commit(writer) == 0);

	v = query("zebra");
	CHECK_STR(urls_of(v), "/a-title /m-heading /z-body");
	results = jget(v, "results");
	if (results && results->n == 3) {
		double s0 = jget(results->items[0], "score")->num;
		double s1 = jget(results->items[1], "score")->num;
		double s2 = jget(results->items[2], "score")->num;
		CHECK(s0 > s1 && s1 > s2 && s2 > 0);
	}
	jfree(v);
}

static void test_chinese(void)
{
	struct jv *v;

	CHECK(search_begin(writer) == 0);
	put("/zh/search", "搜索引擎简介", "", "", "搜索引擎是一种信息检索系统，用户输入关键词。");
	put("/zh/other", "数据库", "", "", "数据库管理系统用于存储数据。");
	CHECK(search_commit(writer) == 0);

	CHECK_STR(urls("搜索"), "/zh/search");
	CHECK_STR(urls("引擎"), "/zh/search");
	CHECK_STR(urls("搜索引擎"), "/zh/search");
	CHECK_STR(urls("信息检索"), "/zh/search");
	CHECK_STR(sorted_urls("系统"), "/zh/other /zh/search");
	CHECK_STR(urls("系统 -数据"), "/zh/search");
	CHECK_STR(urls("检索数据"), "");
	/* one character: the first, a middle and the last of a run */
	CHECK_STR(urls("擎"), "/zh/search");
	CHECK_STR(urls("词"), "/zh/search");
	CHECK_STR(urls("储"), "/zh/other");

	v = query("引擎");
	CHECK_STR(segments_of(v, 0), "搜索[引擎]是一种信息检索系统，用户输入关键词。");
	jfree(v);
}

static void test_japanese(void)
{
	struct jv *v;

	CHECK(search_begin(writer) == 0);
	put("/ja/tower", "観光", "", "", "東京タワーは東京の名所です。");
	put("/ja/kyoto", "旅行", "", "", "京都の寺を見に行きました。");
	CHECK(search_commit(writer) == 0);

	CHECK_STR(urls("東京"), "/ja/tower");
	CHECK_STR(urls("タワー"), "/ja/tower");
	CHECK_STR(urls("東京タワー"), "/ja/tower");
	CHECK_STR(urls("京都"), "/ja/kyoto");
	CHECK_STR(urls("\"東京 名所\""), "");
	CHECK_STR(urls("名所"), "/ja/tower");

	v = query("東京");
	CHECK_STR(segments_of(v, 0), "[東京]タワーは[東京]の名所です。");
	jfree(v);
}

static void test_substrings(void)
{
	struct jv *v;

	CHECK(search_begin(writer) == 0);
	put("/pwsh", "PowerShell", "", "", "Get-ChildItem lists the items in a PowerShell drive.");
	CHECK(search_commit(writer) == 0);

	/* no word "owersh" anywhere: the words that have it inside find it */
	v = query("owersh");
	CHECK_STR(urls_of(v), "/pwsh");
	CHECK_INT(total_of(v), 1);
	CHECK_STR(segments_of(v, 0), "Get-ChildItem lists the items in a P[owerSh]ell drive.");
	jfree(v);
	CHECK_STR(urls("childitem"), "/pwsh");
	CHECK_STR(urls("gram"), "/programming");
	CHECK_STR(urls("ildit lists"), "/pwsh");
	/* too short for trigrams: nothing */
	CHECK_STR(urls("sh"), "");
	/* every term must be three characters */
	CHECK_STR(urls("owersh dr"), "");
	/* an exclusion applies to substrings as well */
	CHECK_STR(urls("owersh -drive"), "");

	/* substrings are for terms that are no word at all, not for words that never meet */
	CHECK(search_begin(writer) == 0);
	put("/sub/cat", "Feline", "", "", "A cat sat.");
	put("/sub/dog", "Canine", "", "", "A dog ran.");
	put("/sub/both", "Compound", "", "", "Concatenate the hotdogs.");
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("cat dog"), "");
	CHECK_STR(urls("cat hotdo"), "/sub/both");
	CHECK_STR(urls("atena"), "/sub/both");

	/* a term of several words is their phrase, the last one a word's start */
	v = query("Get-ChildI");
	CHECK_STR(urls_of(v), "/pwsh");
	CHECK_STR(segments_of(v, 0), "[Get-ChildI]tem lists the items in a PowerShell drive.");
	jfree(v);
	CHECK_STR(urls("owersh -\"Get-ChildI\""), "");
	CHECK_STR(urls("\"items in a Pow\""), "/pwsh");

	/* a substring inside a word with accents marks what folds into it */
	CHECK(search_begin(writer) == 0);
	put("/sub/units", "Units", "", "",
	    "The \xC3\x85sn\xC3\xA9"
	    "fjord unit, and the na\xC3\xAFvet\xC3\xA9 of it.");
	put("/sub/zebrafish", "Zebrafish facts", "", "", "Nothing in the body about it.");
	/* 東京タワーでPowerShellを使う。 */
	put("/sub/cjk", "\xE6\x9D\xB1\xE4\xBA\xAC", "", "",
	    "\xE6\x9D\xB1\xE4\xBA\xAC\xE3\x82\xBF\xE3\x83\xAF\xE3\x83\xBC\xE3\x81\xA7PowerShell"
	    "\xE3\x82\x92\xE4\xBD\xBF\xE3\x81\x86\xE3\x80\x82");
	CHECK(search_commit(writer) == 0);
	v = query("snefj"); /* in Åsnéfjord */
	CHECK_STR(urls_of(v), "/sub/units");
	CHECK_STR(segments_of(v, 0), "The \xC3\x85[sn\xC3\xA9"
				     "fj]ord unit, and the na\xC3\xAFvet\xC3\xA9 of it.");
	jfree(v);
	v = query("AIVET");
	CHECK_STR(segments_of(v, 0), "The \xC3\x85sn\xC3\xA9"
				     "fjord unit, and the n[a\xC3\xAFvet]\xC3\xA9 of it.");
	jfree(v);
	v = query("\xC3\xA5sn\xC3\xA9" "f"); /* åsnéf: accents in the query fold too */
	CHECK_STR(segments_of(v, 0), "The [\xC3\x85sn\xC3\xA9"
				     "f]jord unit, and the na\xC3\xAFvet\xC3\xA9 of it.");
	jfree(v);
	/* only the title has it: the title is the snippet */
	v = query("ebrafi");
	CHECK_STR(urls_of(v), "/sub/zebrafish");
	CHECK_STR(segments_of(v, 0), "Z[ebrafi]sh facts");
	jfree(v);
	/* CJK terms are phrases of bigrams, next to a substring */
	v = query("\xE3\x82\xBF\xE3\x83\xAF\xE3\x83\xBC owersh"); /* タワー owersh */
	CHECK_STR(urls_of(v), "/sub/cjk");
	CHECK_STR(
	    segments_of(v, 0),
	    "\xE6\x9D\xB1\xE4\xBA\xAC[\xE3\x82\xBF\xE3\x83\xAF\xE3\x83\xBC]\xE3\x81\xA7P[owerSh]ell"
	    "\xE3\x82\x92\xE4\xBD\xBF\xE3\x81\x86\xE3\x80\x82");
	jfree(v);
	CHECK_STR(sorted_urls("owersh"), "/pwsh /sub/cjk");
	/* the search page marks the substring too */
	{
		struct buf out = BUF_INIT;
		long long n = -1;

		CHECK(search_query_html(reader, "snefj", 10, 0, &out, &n) == 0);
		CHECK_INT(n, 1);
		CHECK(strstr(out.ptr, "\xC3\x85<mark>sn\xC3\xA9" "fj</mark>ord") != NULL);
		buf_release(&out);
	}

	/* a note deleted or changed: its words stay in the vocabulary, its rows go */
	CHECK(search_begin(writer) == 0);
	put("/sub/gone", "Gone", "", "", "An ephemeral xylophonist.");
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("ylophon"), "/sub/gone");
	CHECK(search_begin(writer) == 0);
	CHECK(search_delete(writer, "/sub/gone") == 0);
	put("/sub/zebrafish", "Lionfish facts", "", "", "Nothing in the body about it.");
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("ylophon"), "");
	CHECK_STR(urls("ebrafi"), "");
	CHECK_STR(urls("ionfi"), "/sub/zebrafish");
	CHECK(search_check(writer) == 0);
}

/* The "suggestion" of a query, or "" when it has none ("ERROR" on failure). */
/*
 * The string field name of the answer to q ("" when it has none); an
 * error when it comes with results and with_results is 0, or without.
 */
static const char *field_str(const char *q, const char *name, int with_results)
{
	static char out[256];
	struct jv *v = query(q), *f = v ? jget(v, name) : NULL;

	snprintf(out, sizeof(out), "%s", !v ? "ERROR" : f && f->type == J_STR ? f->str : "");
	if (v && f && (total_of(v) != 0) != with_results)
		snprintf(out, sizeof(out), "%s with %lld results", name, total_of(v));
	jfree(v);
	return out;
}

/* The query as corrected when results needed it ("" when none did). */
static const char *corrected(const char *q)
{
	return field_str(q, "corrected", 1);
}

static const char *suggestion(const char *q)
{
	return field_str(q, "suggestion", 0);
}

/*
 * A query that finds nothing, even with its typos forgiven, gets "did you
 * mean": each word the index lacks replaced by the nearest word one or two
 * edits away (one for short words), then the one in more rows, swaps
 * counting as one edit; the rest of the query as typed.
 */
static void test_suggestions(void)
{
	CHECK(search_begin(writer) == 0);
	put("/s/start-transcript", "Start-Transcript", "", "", "Starts a transcript of the session.");
	put("/s/stop-transcript", "Stop-Transcript", "", "", "Stops the transcript; transcripts end.");
	put("/s/transcribe", "Transcribe", "", "", "To transcribe is to copy.");
	put("/s/colour", "Colour", "", "", "The colour of the sky; a colour chart.");
	put("/s/colour2", "Colours", "", "", "Another colour.");
	put("/s/color", "Color", "", "", "One color, spelt the short way.");
	CHECK(search_commit(writer) == 0);

	/* one typo, or two in a long word: results for the word corrected, no suggestion */
	CHECK_STR(corrected("trnascript"), "transcript");
	CHECK_STR(suggestion("trnascript"), "");
	CHECK_STR(corrected("Trnascript"), "transcript");
	CHECK_STR(corrected("start trnascript"), "start transcript");
	CHECK_STR(corrected("trancsrpt"), "transcript");
	/* nothing found even so: did you mean, the nearest, then the one in more rows */
	CHECK_STR(suggestion("\"stop\" transcrpt of"), "\"stop\" transcript of");
	CHECK_STR(suggestion("culoor"), "colour");
	CHECK_STR(suggestion("colr"), "color");
	CHECK_STR(suggestion("clr"), "");
	/* nothing near, or nothing missing */
	CHECK_STR(suggestion("zzzzqqqq"), "");
	CHECK_STR(suggestion("transcript"), "");
	CHECK_STR(suggestion("transcribe colour"), "");
}

/* The integer field name of the answer to q, or -1. */
static long long field_of(const char *q, const char *name)
{
	struct jv *v = query(q), *f = v ? jget(v, name) : NULL;
	long long n = f && f->type == J_NUM ? (long long)f->num : -1;

	jfree(v);
	return n;
}

/*
 * Typos forgiven as Meilisearch counts them: one in a word of five
 * characters or more, two from nine, none below five; a letter dropped,
 * added, replaced, or two neighbours swapped, each one typo. Rows found
 * as typed come first; words joined by a hyphen are found by each part and
 * by the whole, a typo in either; the candidates follow the notes as they
 * change.
 */
static void test_typos(void)
{
	CHECK(search_begin(writer) == 0);
	put("/t/otter", "Rivers", "", "", "An otter swims.");
	put("/t/armadillo", "Deserts", "", "", "The armadillo digs.");
	put("/t/heron", "Birds", "", "", "A heron stands.");
	put("/t/herons", "Herons", "Herons", "", "Herons, herons and more herons.");
	put("/t/gci", "Get-NarwhalItem", "", "", "Get-NarwhalItem lists the narwhals of a sea.");
	put("/t/edit", "Edited", "", "", "The aardvark eats ants.");
	CHECK(search_commit(writer) == 0);

	/* one typo from five characters: dropped, swapped, replaced, added */
	CHECK_STR(urls("ottre"), "/t/otter");
	CHECK_STR(urls("otterr"), "/t/otter");
	CHECK_STR(urls("ottar"), "/t/otter");
	CHECK_STR(urls("Otetr"), "/t/otter");
	CHECK_STR(corrected("ottre"), "otter");
	CHECK_INT(field_of("ottre", "exact"), 0);
	/* none below five: "ottr" is four */
	CHECK_STR(urls("ottr"), "");
	/* one typo at eight, two at nine and more, never three */
	CHECK_STR(urls("armadilo"), "/t/armadillo");
	CHECK_STR(urls("armdailo"), "");
	CHECK_STR(urls("armdailloo"), "/t/armadillo");
	CHECK_STR(urls("aramdaillo"), "/t/armadillo");
	CHECK_STR(urls("xarmdailloo"), "");
	/* with a word as typed: both must match */
	CHECK_STR(urls("ottre swims"), "/t/otter");
	CHECK_STR(urls("ottre digs"), "");

	/* found as typed above found corrected, however much better that one scores */
	CHECK_STR(urls("heron"), "/t/heron /t/herons");
	CHECK_INT(field_of("heron", "exact"), 1);
	CHECK_STR(corrected("heron"), "herons");
	CHECK_STR(urls("herons"), "/t/herons /t/heron");
	/* quoted, or a prefix: as typed only */
	CHECK_STR(urls("\"heron\""), "/t/heron");
	CHECK_STR(urls("\"ottre\""), "");

	/* a hyphenated name: by its parts, by the whole, with a typo in a part */
	CHECK_STR(urls("NarwhalItem"), "/t/gci");
	CHECK_STR(urls("narwhalitem"), "/t/gci");
	CHECK_STR(urls("Get-NarwhalItem"), "/t/gci");
	CHECK_STR(urls("Get-NarwhalItm"), "/t/gci");
	CHECK_STR(corrected("Get-NarwhalItm"), "Get-narwhalitem");
	CHECK_STR(urls("NarwhlItem"), "/t/gci");

	/* sixteen mistyped words, the most a query has: alternatives within their bounds */
	CHECK_STR(urls("heorns heorns heorns heorns heorns heorns heorns heorns heorns heorns "
		       "heorns heorns heorns heorns heorns heorns"),
		  "/t/herons");

	/* the vocabulary follows an edit: a word added is found with a typo, a word gone is not */
	CHECK_STR(urls("aardvrak"), "/t/edit");
	CHECK(search_begin(writer) == 0);
	put("/t/edit", "Edited", "", "", "The echidna eats ants.");
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("echidan"), "/t/edit");
	CHECK_STR(urls("aardvrak"), "");
	CHECK_STR(suggestion("aardvrak"), "");
	CHECK(search_begin(writer) == 0);
	CHECK(search_delete(writer, "/t/edit") == 0);
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("echidan"), "");
	CHECK_STR(suggestion("echidan"), "");
}

static double score_of(const struct jv *v, size_t i)
{
	struct jv *sc = jget(jat(jget(v, "results"), i), "score");

	return sc && sc->type == J_NUM ? sc->num : -1;
}

/*
 * CamelCase: a word is found by its parts, which sit at its position
 * (a snippet highlights the whole word; a quoted phrase of parts does not
 * match, one of the word before and the first part does), the whole word
 * stays one word, and parts add nothing to a row's length.
 */
static void test_camel_case(void)
{
	struct jv *v;

	CHECK(search_begin(writer) == 0);
	/* the parts are words of another note: no substring query finds them */
	put("/c/words", "Words", "", "",
	    "A child, an item, a property, a value; convert to json; an http server, an ipv4 address.");
	put("/c/gci", "Get-ChildItem", "", "", "Get-ChildItem lists what a folder holds.");
	put("/c/gipv", "Get-ItemPropertyValue", "", "", "Reads one setting of a registry key.");
	put("/c/ctj", "ConvertTo-Json", "", "", "Serializes an object to a string.");
	put("/c/http", "Listeners", "", "", "The HTTPServer answers on a port; IPv4Address too.");
	put("/c/whole", "Tamandua", "", "", "the tamandua sleeps");
	put("/c/part", "Tamandua", "", "", "the TreeTamandua sleeps");
	put("/c/blob", "Blob", "", "", "QmFzZTY0IGlzIG5vdCBhIG5hbWUsIGl0IGlzIGEga2V5IG9mIHNvbWUga2luZA9");
	CHECK(search_commit(writer) == 0);

	CHECK_STR(urls("child item"), "/c/gci /pwsh /c/words");
	CHECK_STR(urls("child"), "/c/gci /pwsh /c/words");
	CHECK_STR(urls("item property value"), "/c/gipv /c/words");
	CHECK_STR(urls("property"), "/c/gipv /c/words");
	CHECK_STR(urls("convert json"), "/c/ctj /c/words");
	CHECK_STR(urls("http server"), "/c/http /c/words");
	CHECK_STR(urls("ipv4 address"), "/c/http /c/words");
	/* the whole word as typed, exact; a query word is never split */
	CHECK_STR(urls("ChildItem"), "/c/gci /pwsh");
	CHECK_STR(urls("childitem"), "/c/gci /pwsh");
	CHECK_STR(urls("httpserver"), "/c/http");
	CHECK_STR(urls("getchild"), "");
	/* a typo in a part: the vocabulary has the parts */
	CHECK_STR(urls("chlid item"), "/c/gci /pwsh /c/words");
	CHECK_STR(corrected("chlid item"), "child item");
	/* phrases: the parts share the word's position */
	CHECK_STR(urls("\"child item\""), "");
	CHECK_STR(urls("\"get child\""), "/c/gci /pwsh");
	CHECK_STR(urls("\"get childitem\""), "/c/gci /pwsh");
	/* a long key is no name: not split, found as a substring (the fragment marked) */
	v = query("mfzzty0");
	CHECK(strncmp(segments_of(v, 0), "Q[mFzZTY0]IG", 12) == 0);
	jfree(v);
	/* "shell" is a word of PowerShell now, which is marked whole */
	v = query("shell");
	CHECK_STR(segments_of(v, 0), "Get-ChildItem lists the items in a [PowerShell] drive.");
	jfree(v);

	/*
	 * only words of ASCII letters and digits are split: a part of
	 * "ZürichNord" would keep the "ü" that unicode61 folds in the word
	 */
	CHECK(search_begin(writer) == 0);
	put("/c/nord", "Compass", "", "", "Nord is north in German.");
	put("/c/zurich", "Stations", "", "", "ZürichNord is a station.");
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("nord"), "/c/nord");

	/* the snippet highlights the whole word */
	v = query("item property value");
	CHECK_STR(segments_of(v, 0), "Get-[ItemPropertyValue]");
	jfree(v);
	v = query("lists child");
	CHECK_STR(segments_of(v, 0), "Get-[ChildItem] [lists] what a folder holds.");
	jfree(v);

	/* a part scores as the whole word: the parts lengthen no row */
	v = query("tamandua sleeps");
	CHECK_STR(sorted_urls("tamandua sleeps"), "/c/part /c/whole");
	CHECK(score_of(v, 1) > 0 && score_of(v, 0) == score_of(v, 1));
	jfree(v);
}

static void test_update_replaces(void)
{
	struct jv *v;

	CHECK(search_begin(writer) == 0);
	put("/note", "Draft", "", "", "The aardvark is a nocturnal burrowing mammal.");
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("aardvark"), "/note");

	CHECK(search_begin(writer) == 0);
	put("/note", "Final", "", "", "The pangolin eats ants.");
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("aardvark"), "");
	CHECK_STR(urls("draft"), "");
	CHECK_STR(urls("pangolin"), "/note");
	v = query("pangolin");
	CHECK_STR(jget(jat(jget(v, "results"), 0), "title") ? jget(jat(jget(v, "results"), 0), "title")->str : NULL,
		  "Final");
	CHECK_INT(total_of(v), 1);
	jfree(v);

	/* the same content again is a no-op, outside a transaction too */
	CHECK(search_put(writer, "/note", "Final", NULL, NULL, "The pangolin eats ants.") == 0);
	CHECK_STR(urls("pangolin"), "/note");
}

static void test_delete(void)
{
	CHECK(search_begin(writer) == 0);
	CHECK(search_delete(writer, "/note") == 0);
	CHECK(search_delete(writer, "/never-was") == 0);
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("pangolin"), "");
	CHECK_STR(urls("pangol*"), "");
}

/*
 * A row moves to a new URL with the body it has: committed, or put
 * earlier in the same transaction; a move of what is not stored writes
 * nothing; the substring index follows.
 */
static void test_move(void)
{
	CHECK(search_begin(writer) == 0);
	put("/move/a", "Mover", "Heading", "tag", "a body about the okapi");
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("okapi"), "/move/a");

	CHECK(search_begin(writer) == 0);
	CHECK_INT(search_move(writer, "/move/a", "/move/b", "Mover", "Heading", "tag"), 1);
	CHECK_INT(search_move(writer, "/move/never-was", "/move/c", "C", "", ""), 0);
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("okapi"), "/move/b");
	CHECK_STR(urls("kap"), "/move/b");
	CHECK_STR(urls("\"Mover\""), "/move/b");
	CHECK(search_check(writer) == 0);

	/* put and moved in one transaction: the body put moves */
	CHECK(search_begin(writer) == 0);
	put("/move/b", "Mover", "Heading", "tag", "a new body about the tapir");
	CHECK_INT(search_move(writer, "/move/b", "/move/d", "Moved twice", "", ""), 1);
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("tapir"), "/move/d");
	CHECK_STR(urls("okapi"), "");
	CHECK_STR(urls("twice"), "/move/d");

	/* deleted, then moved in one transaction: nothing to move */
	CHECK(search_begin(writer) == 0);
	CHECK(search_delete(writer, "/move/d") == 0);
	CHECK_INT(search_move(writer, "/move/d", "/move/e", "E", "", ""), 0);
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("tapir"), "");
	CHECK(search_check(writer) == 0);
}

static void test_batches(void)
{
	struct buf big = BUF_INIT;
	char url[64], word[64];
	size_t base;
	int i;

	/* the last call for a URL wins, whatever came before it in the batch */
	CHECK(search_begin(writer) == 0);
	put("/batch/a", "A", "", "", "first version with gnu");
	put("/batch/b", "B", "", "", "bison");
	put("/batch/a", "A", "", "", "second version with yak");
	CHECK(search_delete(writer, "/batch/b") == 0);
	put("/batch/c", "C", "", "", "ibex");
	CHECK(search_delete(writer, "/batch/c") == 0);
	put("/batch/c", "C", "", "", "ibex again");
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("gnu"), "");
	CHECK_STR(urls("yak"), "/batch/a");
	CHECK_STR(urls("bison"), "");
	CHECK_STR(urls("ibex"), "/batch/c");

	/* a put of what is stored cancels an earlier change in the batch */
	CHECK(search_begin(writer) == 0);
	put("/batch/a", "A", "", "", "third version with moose");
	put("/batch/a", "A", "", "", "second version with yak");
	CHECK(search_delete(writer, "/batch/c") == 0);
	put("/batch/c", "C", "", "", "ibex again");
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("yak"), "/batch/a");
	CHECK_STR(urls("moose"), "");
	CHECK_STR(urls("ibex"), "/batch/c");

	/* more text than is staged at once: applied in chunks, same result */
	for (i = 0; i < 2000; i++)
		buf_adds(&big, "lorem ipsum dolor sit amet consectetur adipiscing elit ");
	base = big.len;
	CHECK(search_begin(writer) == 0);
	for (i = 0; i < 100; i++) {
		snprintf(url, sizeof(url), "/big/%d", i);
		snprintf(word, sizeof(word), "bigword%dx ", i);
		buf_setlen(&big, base);
		buf_adds(&big, word);
		put(url, "Big", "", "", big.ptr);
	}
	put("/big/0", "Big", "", "", "replaced after its first version was written");
	CHECK(search_delete(writer, "/big/1") == 0);
	CHECK(search_commit(writer) == 0);
	/* quoted: as typed, without the words a typo away (bigword10x) */
	CHECK_STR(urls("\"bigword0x\""), "");
	CHECK_STR(urls("\"bigword1x\""), "");
	CHECK_STR(urls("\"bigword99x\""), "/big/99");
	CHECK_STR(urls("replaced"), "/big/0");
	{
		struct jv *v = query("lorem");
		CHECK_INT(total_of(v), 98);
		jfree(v);
	}
	CHECK(search_begin(writer) == 0);
	for (i = 0; i < 100; i++) {
		snprintf(url, sizeof(url), "/big/%d", i);
		CHECK(search_delete(writer, url) == 0);
	}
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("lorem"), "");
	buf_release(&big);
}

static void test_rollback(void)
{
	CHECK(search_begin(writer) == 0);
	put("/rolled", "Rolled back", "", "", "quetzalcoatl");
	search_rollback(writer);
	CHECK_STR(urls("quetzalcoatl"), "");
	CHECK(search_commit(writer) < 0);
}

static void test_paging(void)
{
	char url[64];
	char seen[25] = { 0 };
	int i, k, offset;

	CHECK(search_begin(writer) == 0);
	for (i = 0; i < 25; i++) {
		struct buf text = BUF_INIT;

		snprintf(url, sizeof(url), "/page/%02d", i);
		for (k = 0; k <= i; k++)
			buf_adds(&text, "wombat ");
		buf_addf(&text, "filler text number %d", i);
		put(url, "Page", "", "", text.ptr);
		buf_release(&text);
	}
	CHECK(search_commit(writer) == 0);

	for (offset = 0; offset <= 30; offset += 10) {
		struct jv *v = query_page("wombat", 10, offset);
		struct jv *results = jget(v, "results");
		size_t want = offset < 20 ? 10 : offset == 20 ? 5 : 0;

		CHECK_INT(total_of(v), 25);
		CHECK(results && results->n == want);
		for (i = 0; results && i < (int)results->n; i++) {
			struct jv *u = jget(results->items[i], "url");
			int at = u ? atoi(u->str + 6) : -1;
			CHECK(at >= 0 && at < 25 && !seen[at]);
			if (at >= 0 && at < 25)
				seen[at] = 1;
		}
		jfree(v);
	}
	for (i = 0; i < 25; i++)
		CHECK(seen[i]);
	/* past the end: no results, the total still */
	{
		struct jv *v = query_page("wombat", 50, 1000);
		CHECK_INT(total_of(v), 25);
		CHECK(jget(v, "results") && jget(v, "results")->n == 0);
		jfree(v);
	}
	/* all of them in one page */
	{
		struct jv *v = query_page("wombat", 50, 0);
		CHECK_INT(total_of(v), 25);
		CHECK(jget(v, "results") && jget(v, "results")->n == 25);
		jfree(v);
	}
}

static void test_bad_requests(void)
{
	static const struct {
		const char *q;
		int limit, offset;
	} cases[] = {
		{ "fox", 0, 0 }, { "fox", 51, 0 }, { "fox", -1, 0 }, { "fox", 10, -1 },
		{ "fox", 10, 1001 }, { "", 10, 0 }, { "   ", 10, 0 }, { " \t\n ", 10, 0 },
		{ "\xE3\x80\x80", 10, 0 }, /* an ideographic space */
		{ "a b c d e f g h i j k l m n o p q", 10, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct buf out = BUF_INIT;
		struct jv *v, *e;
		int rc = search_query(reader, cases[i].q, cases[i].limit, cases[i].offset, &out);

		if (rc != -1)
			fprintf(stderr, "  case %zu: rc %d: %s\n", i, rc, out.ptr);
		CHECK_INT(rc, -1);
		v = jparse(out.ptr, out.len);
		e = jget(v, "error");
		CHECK(e && e->type == J_STR && e->str[0]);
		jfree(v);
		buf_release(&out);
	}
	{
		struct buf out = BUF_INIT;
		CHECK_INT(search_query(reader, NULL, 10, 0, &out), -1);
		buf_release(&out);
	}
}

static void test_segments(void)
{
	struct jv *v, *segs;
	struct buf joined = BUF_INIT;
	size_t k;

	CHECK(search_begin(writer) == 0);
	put("/snip", "Snippets", "", "",
	    "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron\n\n"
	    "pi rho sigma tau upsilon phi chi psi omega. The <b>marmot</b> & \"friends\" whistle loudly\t"
	    "when the marmot sees an eagle; then alpha beta gamma delta epsilon zeta eta theta iota "
	    "kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega again and again.");
	put("/title-only", "Marsupial facts", "", "", "Nothing in the body about it.");
	CHECK(search_commit(writer) == 0);

	v = query("marmot eagle");
	CHECK_STR(segments_of(v, 0),
		  "…upsilon phi chi psi omega. The <b>[marmot]</b> & \"friends\" whistle loudly when "
		  "the [marmot] sees an [eagle]; then alpha beta gamma delta epsilon zeta eta theta iota "
		  "kappa lambda mu…");
	/* segments alternate, are never empty, and join into the snippet */
	segs = jget(jat(jget(v, "results"), 0), "segments");
	for (k = 0; segs && k < segs->n; k++) {
		struct jv *t = jget(segs->items[k], "text"), *m = jget(segs->items[k], "match");
		CHECK(t && t->str[0]);
		if (k > 0) {
			struct jv *pm = jget(segs->items[k - 1], "match");
			CHECK(pm->b != m->b);
		}
		buf_adds(&joined, t->str);
	}
	CHECK(strstr(joined.ptr, "<b>marmot</b>") != NULL);
	buf_release(&joined);
	jfree(v);

	/* the body has no match: the title is the snippet */
	v = query("marsupial");
	CHECK_STR(segments_of(v, 0), "[Marsupial] facts");
	jfree(v);

	/*
	 * Matches past 1 KB of text that mixes ASCII with accents, CJK and a
	 * word running from ASCII into an accent: where a snippet's tokens are
	 * counted quickly (ASCII) and where unicode61 counts them
	 */
	CHECK(search_begin(writer) == 0);
	{
		struct buf body = BUF_INIT;
		int i;

		for (i = 0; i < 40; i++)
			buf_adds(&body, "plain words here, x9_y8 ");
		buf_adds(&body, "Crème brûlée, naïve cafés; 東京タワー and mañana résumé2 then the zebu walked. ");
		for (i = 0; i < 40; i++)
			buf_adds(&body, "more plain words ");
		buf_adds(&body, "cafébar zebu again.");
		put("/mixed", "Mixed", "", "", body.ptr);
		buf_release(&body);
	}
	CHECK(search_commit(writer) == 0);
	v = query("zebu");
	CHECK_STR(segments_of(v, 0),
		  "…東京タワー and mañana résumé2 then the [zebu] walked. more plain words more plain "
		  "words more plain words more plain words more plain words more plain words more "
		  "plain words more…");
	jfree(v);
	v = query("zebu cafébar");
	CHECK_STR(segments_of(v, 0), "…more plain words more plain words [cafébar] [zebu] again.");
	jfree(v);
	v = query("タワー mixed");
	CHECK_STR(segments_of(v, 0),
		  "…here, x9_y8 Crème brûlée, naïve cafés; 東京[タワー] and mañana résumé2 then the "
		  "zebu walked. more plain words more plain words more plain words more plain words "
		  "more plain words more…");
	jfree(v);

	/* a match at the start of the body: no ellipsis before */
	v = query("alpha snippets");
	CHECK_STR(segments_of(v, 0),
		  "[Alpha] beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
		  "pi rho sigma tau upsilon phi chi psi omega. The <b>marmot</b> & \"friends\" whistle "
		  "loudly…");
	jfree(v);
}

static void test_escaping_and_sanitizing(void)
{
	struct jv *v;

	CHECK(search_begin(writer) == 0);
	put("/esc/\"quoted\"", "Title with \"quotes\" and \\ backslash </script>", "", "",
	    "Bad \xFF bytes \xC3 and control\x01 chars\x02 near the okapi.");
	CHECK(search_commit(writer) == 0);
	v = query("okapi");
	CHECK_STR(urls_of(v), "/esc/\"quoted\"");
	CHECK_STR(jget(jat(jget(v, "results"), 0), "title")->str,
		  "Title with \"quotes\" and \\ backslash </script>");
	/* the markers in the text were replaced before indexing; the snippet stays intact */
	CHECK_STR(segments_of(v, 0),
		  "…\xEF\xBF\xBD and control\xEF\xBF\xBD chars\xEF\xBF\xBD near the [okapi].");
	jfree(v);
	/* and '<' never appears raw in the output */
	{
		struct buf out = BUF_INIT;
		CHECK(search_query(reader, "okapi <script>", 10, 0, &out) == 0);
		CHECK(strchr(out.ptr, '<') == NULL);
		buf_release(&out);
	}
}

static void test_hostile_queries(void)
{
	static const char *const hostile[] = {
		"\"", "\"\"", "\"\"\"", "\"fox", "fox\"", "fo\"x", "*", "**", "fox*", "*fox", "f*o*x",
		"NEAR(", "NEAR(fox dog)", "NEAR(fox dog, 2)", "^fox", "^", "title:fox", "body:dog",
		"title:", ":", "{title body}:fox", "fox AND dog", "fox OR dog", "NOT fox", "AND OR NOT",
		"AND", "OR", "NOT", "fox NOT", "(", ")", "(fox", "fox)", "-", "--fox", "- fox", "-\"\"",
		"+fox", "fox + dog", "'", "';DROP TABLE doc;--", "\\", "%", "_", "fox%", "\x01\x02",
		"\x7f", "\xEF\xBF\xBD", "🦊", "🦊*", "\"🦊\"", "\xE2\x80\x8B", "é*", "\"a\" * *",
		"fox -", "fox -*", "-* fox", "\"NEAR(\" -\"AND\"", "a:b:c", "rank:1", "rowid:1",
		"fts:fox", "url:x", "* * * *", "\"*\"", "東*", "*東", "\"東京\"*", "-東京 東",
		"0", "0x1F", "1e10", "null", "true", "{\"a\":1}", "<script>alert(1)</script>",
	};
	static const char *const invalid_utf8[] = { "\xFF", "fox \xC3", "\xC0\xAF", "\xED\xA0\x80",
						    "\xF4\x90\x80\x80", "ok \xE2\x82" };
	struct buf big = BUF_INIT, out = BUF_INIT;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(hostile) / sizeof(*hostile); i++) {
		struct jv *v;

		buf_reset(&out);
		rc = search_query(reader, hostile[i], 10, 0, &out);
		if (rc != 0 && rc != -1)
			fprintf(stderr, "  [%s]: rc %d: %s\n", hostile[i], rc, out.ptr);
		CHECK(rc == 0 || rc == -1);
		v = jparse(out.ptr, out.len);
		if (!v)
			fprintf(stderr, "  [%s]: invalid JSON: %s\n", hostile[i], out.ptr);
		CHECK(v != NULL);
		CHECK(rc == 0 ? jget(v, "results") != NULL : jget(v, "error") != NULL);
		jfree(v);
	}
	for (i = 0; i < sizeof(invalid_utf8) / sizeof(*invalid_utf8); i++) {
		struct jv *v;

		buf_reset(&out);
		CHECK_INT(search_query(reader, invalid_utf8[i], 10, 0, &out), -1);
		v = jparse(out.ptr, out.len);
		CHECK(v && jget(v, "error"));
		jfree(v);
	}
	/* the operators really are text: these find the fox note as words do */
	CHECK_STR(urls("NEAR fox"), "/animals/fox");
	CHECK_STR(urls("(fox) river"), "/animals/fox");
	CHECK_STR(urls("NEAR(fox river)"), "");     /* the phrase "near fox" */
	CHECK_STR(urls("fox AND river"), "");       /* "and" is a word the note lacks */
	CHECK_STR(urls("title:fox"), "");           /* nor "title" */
	CHECK_STR(urls("^fox"), "/animals/fox");
	CHECK_STR(urls("\"fox"), "/animals/fox");

	/* 10 KB: refused before parsing */
	for (i = 0; i < 10240; i++)
		buf_addc(&big, "\"*-:(^ ab"[i % 9]);
	buf_reset(&out);
	CHECK_INT(search_query(reader, big.ptr, 10, 0, &out), -1);
	/* 256 bytes of operators: accepted or refused, never an error */
	buf_setlen(&big, 256);
	buf_reset(&out);
	rc = search_query(reader, big.ptr, 10, 0, &out);
	CHECK(rc == 0 || rc == -1);
	{
		struct jv *v = jparse(out.ptr, out.len);
		CHECK(v != NULL);
		jfree(v);
	}
	/* 256 bytes of one-letter prefixes and CJK characters */
	buf_reset(&big);
	for (i = 0; big.len + 4 <= 256; i++)
		buf_adds(&big, i % 2 ? "x* " : "東 ");
	buf_reset(&out);
	rc = search_query(reader, big.ptr, 10, 0, &out);
	CHECK(rc == 0 || rc == -1);
	buf_release(&big);
	buf_release(&out);
}

/* ---- Readers during commits ------------------------------------------------- */

struct reader_job {
	int stop;
	pthread_mutex_t lock;
	int queries, errors, bad_json;
};

static int job_stopped(struct reader_job *j)
{
	int s;

	pthread_mutex_lock(&j->lock);
	s = j->stop;
	pthread_mutex_unlock(&j->lock);
	return s;
}

static void *reader_thread(void *arg)
{
	static const char *const qs[] = { "busy", "busy bee", "\"busy bee\"", "hive*", "honey -wax",
					  "蜂蜜", "bee", "ive", "nothing-here" };
	struct reader_job *j = arg;
	struct search_reader *r = search_reader_open(db_path);
	struct buf out = BUF_INIT;
	int n = 0, errors = 0, bad = 0;

	if (!r)
		errors++;
	while (r && (!job_stopped(j) || n < 50)) {
		struct jv *v;
		int rc;

		buf_reset(&out);
		rc = search_query(r, qs[n % (int)(sizeof(qs) / sizeof(*qs))], 10, 0, &out);
		if (rc != 0)
			errors++;
		v = jparse(out.ptr, out.len);
		if (!v)
			bad++;
		jfree(v);
		n++;
	}
	buf_release(&out);
	search_reader_free(r);
	pthread_mutex_lock(&j->lock);
	j->queries += n;
	j->errors += errors;
	j->bad_json += bad;
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

static void test_readers_during_commits(void)
{
	struct reader_job job = { 0 };
	pthread_t threads[6];
	char url[64], text[256];
	int i, batch, started = 0;

	pthread_mutex_init(&job.lock, NULL);
	CHECK(search_begin(writer) == 0);
	put("/bees/0", "Bees", "", "", "A busy bee makes honey in the hive. 蜂蜜");
	CHECK(search_commit(writer) == 0);
	for (i = 0; i < 6; i++)
		if (pthread_create(&threads[i], NULL, reader_thread, &job) == 0)
			started++;
	CHECK_INT(started, 6);
	for (batch = 0; batch < 40; batch++) {
		CHECK(search_begin(writer) == 0);
		for (i = 0; i < 25; i++) {
			snprintf(url, sizeof(url), "/bees/%d", 1 + (batch * 25 + i) % 300);
			snprintf(text, sizeof(text),
				 "The busy bee %d visits flower %d and brings honey to the hive; wax %d. 蜂蜜",
				 batch, i, batch % 3);
			put(url, "Bee note", "Hive", "bees", text);
		}
		if (batch % 5 == 4) {
			snprintf(url, sizeof(url), "/bees/%d", 1 + batch);
			CHECK(search_delete(writer, url) == 0);
		}
		CHECK(search_commit(writer) == 0);
	}
	pthread_mutex_lock(&job.lock);
	job.stop = 1;
	pthread_mutex_unlock(&job.lock);
	for (i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	CHECK(job.queries >= 6 * 50);
	CHECK_INT(job.errors, 0);
	CHECK_INT(job.bad_json, 0);
	pthread_mutex_destroy(&job.lock);
	{
		struct jv *v = query("busy bee");
		CHECK(total_of(v) > 200);
		jfree(v);
	}
}

/* ---- Scores ---------------------------------------------------------------- */

/* A note of ASCII words only, so that its unicode61 tokens are its words. */
struct bm25_note {
	char url[32];
	const char *col[4];      /* title, headings, tags, body */
};

static const double bm25_weight[4] = { 10, 5, 3, 1 };

/* Matches of the phrase words[0..n) in s: word runs compared without case. */
static int phrase_matches(const char *s, const char *const *words, int n)
{
	char toks[600][16];
	int ntok = 0, hits = 0, i, k;

	while (*s && ntok < 600) {
		size_t len = 0;
		while (*s && !isalnum((unsigned char)*s))
			s++;
		if (!*s)
			break;
		while (isalnum((unsigned char)s[len]))
			len++;
		snprintf(toks[ntok], sizeof(toks[ntok]), "%.*s", (int)len, s);
		for (k = 0; toks[ntok][k]; k++)
			toks[ntok][k] = (char)tolower((unsigned char)toks[ntok][k]);
		ntok++;
		s += len;
	}
	if (!words)
		return ntok;
	for (i = 0; i + n <= ntok; i++) {
		for (k = 0; k < n && strcmp(toks[i + k], words[k]) == 0; k++)
			;
		hits += k == n;
	}
	return hits;
}

/*
 * The score FTS5's bm25() gives note t among notes[0..n) for a query of
 * the given phrases (negated, as search.c shows it: higher is better):
 * per phrase, IDF times weighted frequency f (title 10, headings 5, tags
 * 3, body 1) times 2.2 / (f + 1.2 (0.25 + 0.75 length / mean length)).
 */
static double bm25_expected(const struct bm25_note *notes, int n, int t, const char *const *phrases[],
			    const int *nwords, int nphrases)
{
	double total = 0, score = 0, dl = 0;
	int i, p, c;

	for (i = 0; i < n; i++)
		for (c = 0; c < 4; c++)
			total += phrase_matches(notes[i].col[c], NULL, 0);
	for (c = 0; c < 4; c++)
		dl += phrase_matches(notes[t].col[c], NULL, 0);
	for (p = 0; p < nphrases; p++) {
		double f = 0, idf;
		int rows = 0;

		for (i = 0; i < n; i++) {
			int in = 0;
			for (c = 0; c < 4; c++)
				in += phrase_matches(notes[i].col[c], phrases[p], nwords[p]);
			rows += in > 0;
		}
		idf = log((n - rows + 0.5) / (rows + 0.5));
		if (idf <= 0)
			idf = 1e-6;
		for (c = 0; c < 4; c++)
			f += bm25_weight[c] * phrase_matches(notes[t].col[c], phrases[p], nwords[p]);
		score += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * dl / (total / n)));
	}
	return score;
}

/* Removes the file named by path and suffix. */
static void unlink_suffixed(struct buf *path, const char *suffix)
{
	size_t len = path->len;

	buf_adds(path, suffix);
	unlink(path->ptr);
	buf_setlen(path, len);
}

/* Redirects stderr to a file until stderr_release(), which returns what was written (freed by the caller). */
static int stderr_capture(const char *path)
{
	int saved, fd;

	fflush(stderr);
	saved = dup(STDERR_FILENO);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(saved >= 0 && fd >= 0);
	if (fd >= 0) {
		dup2(fd, STDERR_FILENO);
		close(fd);
	}
	return saved;
}

static char *stderr_release(int saved, const char *path)
{
	struct buf b = BUF_INIT;
	char chunk[4096];
	ssize_t n;
	int fd;

	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	fd = open(path, O_RDONLY);
	while (fd >= 0 && (n = read(fd, chunk, sizeof(chunk))) > 0)
		buf_add(&b, chunk, (size_t)n);
	if (fd >= 0)
		close(fd);
	unlink(path);
	fputs(b.ptr, stderr); /* failed checks, if any */
	return buf_detach(&b, NULL);
}

/*
 * Scores are FTS5's bm25() with our weights, checked against the formula
 * on counts made here: matches in every column, positions past 127 (two
 * bytes in FTS5's position lists), phrases, and IDFs that change when
 * notes are added (search.c keeps them per reader until the index moves).
 * A new reader reads its first position lists both ways and warns at a
 * difference: no warning may appear.
 */
static void test_scores_are_bm25(void)
{
	static const char *const w_quokka[] = { "quokka" }, *const w_wombat[] = { "wombat" },
			       *const w_both[] = { "quokka", "wombat" };
	static const struct {
		const char *q;
		const char *const *phrases[2];
		int nwords[2], nphrases;
	} queries[] = {
		{ "quokka", { w_quokka }, { 1 }, 1 },
		{ "quokka wombat", { w_quokka, w_wombat }, { 1, 1 }, 2 },
		{ "Wombat QUOKKA", { w_wombat, w_quokka }, { 1, 1 }, 2 },
		{ "\"quokka wombat\"", { w_both }, { 2 }, 1 },
	};
	struct search *saved_writer = writer;
	struct search_reader *saved_reader = reader;
	struct bm25_note notes[16];
	struct buf filler = BUF_INIT, body0 = BUF_INIT, body3 = BUF_INIT, path = BUF_INIT,
		   log_path = BUF_INIT;
	char *log_text;
	int fresh = 0, n = 0, round, i, q, saved_fd;

	for (i = 0; i < 200; i++)
		buf_adds(&filler, i % 7 ? "lorem " : "ipsum dolor ");
	buf_addf(&body0, "%s quokka wombat. More %s quokka", filler.ptr, filler.ptr);
	notes[n++] = (struct bm25_note){ "/b/0", { "Quokka facts", "Quokka habitat\nWombat friends",
						    "quokka marsupial", body0.ptr } };
	notes[n++] = (struct bm25_note){ "/b/1", { "Wombat", "", "", "A quokka lives here, wombat wombat." } };
	notes[n++] = (struct bm25_note){ "/b/2", { "Burrows", "Digging", "", "Only a wombat digs." } };
	/* 127 words apart: the second quokka's varint is 0x81 0x01, whose last byte is no column mark */
	buf_adds(&body3, "Rottnest has the quokka ");
	for (i = 0; i < 126; i++)
		buf_adds(&body3, "lorem ");
	buf_adds(&body3, "quokka again.");
	notes[n++] = (struct bm25_note){ "/b/3", { "Islands", "", "travel", body3.ptr } };
	for (i = 0; i < 5; i++) {
		snprintf(notes[n].url, sizeof(notes[n].url), "/b/f%d", i);
		notes[n].col[0] = "Filler";
		notes[n].col[1] = "";
		notes[n].col[2] = "";
		notes[n].col[3] = i % 2 ? "lorem ipsum dolor" : filler.ptr;
		n++;
	}
	buf_addf(&path, "%s/bm25.db", dir);
	buf_addf(&log_path, "%s/bm25.log", dir);
	writer = search_open(path.ptr, &fresh);
	CHECK(writer != NULL);
	reader = NULL;
	saved_fd = stderr_capture(log_path.ptr);
	for (round = 0; writer && round < 2; round++) {
		CHECK(search_begin(writer) == 0);
		for (i = 0; i < n; i++)
			put(notes[i].url, notes[i].col[0], notes[i].col[1], notes[i].col[2], notes[i].col[3]);
		CHECK(search_commit(writer) == 0);
		if (!reader)
			reader = search_reader_open(path.ptr);
		CHECK(reader != NULL);
		for (q = 0; reader && q < (int)(sizeof(queries) / sizeof(*queries)); q++) {
			struct jv *v = query(queries[q].q), *results = jget(v, "results");

			for (i = 0; results && i < (int)results->n; i++) {
				const char *url = jget(results->items[i], "url")->str;
				double got = jget(results->items[i], "score")->num, want = -1;
				int t;

				for (t = 0; t < n; t++)
					if (strcmp(notes[t].url, url) == 0)
						want = bm25_expected(notes, n, t, (const char *const **)queries[q].phrases,
								     queries[q].nwords, queries[q].nphrases);
				if (fabs(got - want) > 1e-5 * fabs(want))
					fprintf(stderr, "  round %d [%s] %s: score %.9g, bm25 %.9g\n", round,
						queries[q].q, url, got, want);
				CHECK(fabs(got - want) <= 1e-5 * fabs(want));
			}
			CHECK(results && results->n > 0);
			jfree(v);
		}
		/* the second round: more notes with quokka, so its IDF changes */
		notes[n++] = (struct bm25_note){ "/b/4", { "More quokkas", "", "", "quokka quokka" } };
		notes[n++] = (struct bm25_note){ "/b/5", { "Quokka", "", "", "a quokka and a wombat" } };
	}
	log_text = stderr_release(saved_fd, log_path.ptr);
	CHECK(strstr(log_text, "position lists") == NULL);
	free(log_text);
	search_reader_free(reader);
	search_free(writer);
	reader = saved_reader;
	writer = saved_writer;
	unlink(path.ptr);
	unlink_suffixed(&path, "-wal");
	unlink_suffixed(&path, "-shm");
	buf_release(&filler);
	buf_release(&body0);
	buf_release(&body3);
	buf_release(&path);
	buf_release(&log_path);
}

/* ---- Row lists against FTS5 --------------------------------------------------- */

static char **md_paths;
static size_t nmd, amd;

static int add_md(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	size_t n = strlen(path);

	(void)st;
	(void)ftw;
	if (flag == FTW_F && n > 3 && strcmp(path + n - 3, ".md") == 0) {
		ALLOC_GROW(md_paths, nmd + 1, amd);
		md_paths[nmd++] = xstrdup(path);
	}
	return 0;
}

static int by_cstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct word_count {
	char w[32];
	int n;
};

static int by_count(const void *a, const void *b)
{
	const struct word_count *x = a, *y = b;
	return x->n != y->n ? y->n - x->n : strcmp(x->w, y->w);
}

/* Counts the words of text (ASCII letters, 4 to 31 of them, lowercased) into *wc. */
static void count_words(const char *text, struct word_count **wc, size_t *n, size_t *alloc)
{
	const char *p = text;

	while (*p) {
		char w[32];
		size_t k = 0, i;

		while (*p && !isalpha((unsigned char)*p))
			p++;
		while (isalpha((unsigned char)*p)) {
			if (k < sizeof(w) - 1)
				w[k++] = (char)tolower((unsigned char)*p);
			p++;
		}
		w[k] = '\0';
		if (k < 4 || k == sizeof(w) - 1)
			continue;
		for (i = 0; i < *n && strcmp((*wc)[i].w, w); i++)
			;
		if (i == *n) {
			ALLOC_GROW(*wc, *n + 1, *alloc);
			memcpy((*wc)[i].w, w, k + 1);
			(*wc)[i].n = 0;
			(*n)++;
		}
		(*wc)[i].n++;
	}
}

/*
 * One query on both readers, twice on the one with lists (a phrase gets
 * its list the second time it is asked for): the same status and bytes.
 */
static void same_answer(struct search_reader *lists, struct search_reader *fts, const char *q,
			int limit, int offset)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	int ra, rb = search_query(fts, q, limit, offset, &b), twice;

	for (twice = 0; twice < 2; twice++) {
		buf_reset(&a);
		ra = search_query(lists, q, limit, offset, &a);
		if (ra != rb || a.len != b.len || memcmp(a.ptr, b.ptr, a.len) != 0)
			fprintf(stderr, "  [%s] limit %d offset %d:\n    lists %d %.300s\n    fts   %d %.300s\n",
				q, limit, offset, ra, a.ptr, rb, b.ptr);
		CHECK(ra == rb && a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0);
	}
	buf_release(&a);
	buf_release(&b);
}

/*
 * Queries of positive terms are ranked from row lists (search_rank_lists()); the
 * answers must be the bytes FTS5 alone gives, on real notes (400 of the
 * PowerShell corpus), for pairs and triples of its 80 most frequent words
 * (more distinct words than a reader keeps lists of, so lists are evicted
 * and read again), phrases, pages, and again after the index changed
 * under a reader whose lists were of the old one.
 */
static void test_lists_match_fts(void)
{
	char path[512], url[600], q[200];
	struct search *w;
	struct search_reader *lists, *fts;
	struct word_count *wc = NULL;
	size_t nwc = 0, awc = 0, i, nwords;
	int fresh = 0, round;
	long long listed;
	char *corpus = tv_corpus_vault("pwsh-docs", "ranking from row lists is checked against "
				       "FTS5 on 400 real notes and their most frequent words");

	if (!corpus)
		return;
	snprintf(path, sizeof(path), "%s", corpus);
	free(corpus);
	nftw(path, add_md, 16, FTW_PHYS);
	CHECK(nmd >= 400);
	if (nmd < 400)
		return;
	qsort(md_paths, nmd, sizeof(*md_paths), by_cstr);
	snprintf(path, sizeof(path), "%s/lists.db", dir);
	w = search_open(path, &fresh);
	CHECK(w != NULL);
	if (!w)
		return;
	CHECK(search_begin(w) == 0);
	for (i = 0; i < 400; i++) {
		struct buf text = BUF_INIT;
		const char *title = strrchr(md_paths[i], '/') + 1;

		snprintf(url, sizeof(url), "/n/%zu", i);
		CHECK(read_file(md_paths[i], &text) == 0);
		if (i < 200)
			count_words(text.ptr, &wc, &nwc, &awc);
		CHECK(search_put(w, url, title, "", i % 7 ? "" : "docs", text.ptr) == 0);
		buf_release(&text);
	}
	CHECK(search_commit(w) == 0);
	qsort(wc, nwc, sizeof(*wc), by_count);
	nwords = nwc < 80 ? nwc : 80;
	CHECK(nwords == 80);
	lists = search_reader_open(path);
	fts = search_reader_open(path);
	CHECK(lists && fts);
	if (!lists || !fts)
		goto out;
	search_reader_use_lists(fts, -1);
	search_reader_use_lists(lists, 1); /* every query of positive terms, in this small index */
	for (round = 0; round < 2; round++) {
		for (i = 0; i < nwords; i++) {
			snprintf(q, sizeof(q), "%s %s", wc[i].w, wc[(i + 1) % nwords].w);
			same_answer(lists, fts, q, 10, 0);
			snprintf(q, sizeof(q), "%s %s %s", wc[i].w, wc[(i * 7 + 3) % nwords].w,
				 wc[(i * 13 + 5) % nwords].w);
			same_answer(lists, fts, q, 10, 0);
		}
		for (i = 0; i < 10; i++) {
			same_answer(lists, fts, wc[i].w, 10, 0);
			snprintf(q, sizeof(q), "\"%s %s\" %s", wc[i].w, wc[i + 1].w, wc[i + 2].w);
			same_answer(lists, fts, q, 10, 0);
			snprintf(q, sizeof(q), "%s %s", wc[i].w, wc[i + 20].w);
			same_answer(lists, fts, q, 50, 0);
			same_answer(lists, fts, q, 7, 23);
			same_answer(lists, fts, q, 10, 990);
		}
		same_answer(lists, fts, "pipeline object", 10, 0);
		same_answer(lists, fts, "pipeline pipeline OBJECT", 10, 0);
		same_answer(lists, fts, "get-help pipeline", 10, 0);
		same_answer(lists, fts, "pipeline -object", 10, 0); /* not from lists: an exclusion */
		same_answer(lists, fts, "param* pipeline", 10, 0);  /* nor a prefix */
		same_answer(lists, fts, "pipeline zzzqqqxx", 10, 0); /* a word in no note */
		same_answer(lists, fts, "pipeline \"!!\"", 10, 0);   /* a term without a token */
		/* typos: the same ranking from lists as from FTS5 (a swap, a letter dropped) */
		for (i = 0; i < 40; i++) {
			const char *x = wc[i].w;
			int h = (int)strlen(x) / 2;

			if (h < 3 || x[h - 1] == x[h])
				continue;
			snprintf(q, sizeof(q), "%.*s%c%c%s %s", h - 1, x, x[h], x[h - 1], x + h + 1,
				 wc[(i + 3) % nwords].w);
			same_answer(lists, fts, q, 10, 0);
			snprintf(q, sizeof(q), "%.*s%s", h, x, x + h + 1);
			same_answer(lists, fts, q, 10, 0);
			same_answer(lists, fts, q, 10, 5);
		}
		if (round == 1)
			break;
		/* change the index under the readers' lists: new rows, changed ones, deleted ones */
		CHECK(search_begin(w) == 0);
		for (i = 0; i < 400; i += 3) {
			struct buf text = BUF_INIT;

			snprintf(url, sizeof(url), "/n/%zu", i);
			if (i % 2) {
				CHECK(search_delete(w, url) == 0);
			} else if (read_file(md_paths[(i * 17) % nmd], &text) == 0) {
				buf_addf(&text, "\n\n%s %s %s", wc[0].w, wc[1].w, wc[i % nwords].w);
				CHECK(search_put(w, url, "Changed", "", "", text.ptr) == 0);
			}
			buf_release(&text);
		}
		CHECK(search_commit(w) == 0);
	}
	listed = search_reader_listed(lists);
	CHECK(listed >= 2 * (2 * 80 + 40 + 3));
	CHECK_INT(search_reader_listed(fts), 0);
out:
	search_reader_free(lists);
	search_reader_free(fts);
	search_free(w);
	unlink(path);
	strcat(path, "-wal");
	unlink(path);
	strcpy(path + strlen(path) - 4, "-shm");
	unlink(path);
	for (i = 0; i < nmd; i++)
		free(md_paths[i]);
	free(md_paths);
	md_paths = NULL;
	nmd = amd = 0;
	free(wc);
}

/* ---- Rebuilding ------------------------------------------------------------- */

static void close_all(void)
{
	search_reader_free(reader);
	reader = NULL;
	search_free(writer);
	writer = NULL;
}

static void open_all(int want_fresh)
{
	int fresh = -1;

	writer = search_open(db_path, &fresh);
	CHECK(writer != NULL);
	CHECK_INT(fresh, want_fresh);
	if (!writer)
		exit(2);
	reopen_reader();
}

static void test_reopen_keeps(void)
{
	close_all();
	open_all(0);
	CHECK_STR(urls("fox river"), "/animals/fox");
}

static void test_corrupt_rebuilds(void)
{
	static const char garbage[] = "this is not an SQLite database, just garbage bytes......";
	int fd, i;

	close_all();
	fd = open(db_path, O_WRONLY | O_TRUNC);
	CHECK(fd >= 0);
	for (i = 0; i < 100; i++)
		CHECK(write(fd, garbage, sizeof(garbage)) == (ssize_t)sizeof(garbage));
	close(fd);
	open_all(1);
	CHECK_STR(urls("fox"), "");
	CHECK(search_begin(writer) == 0);
	put("/again", "Again", "", "", "The index works again after the rebuild.");
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("rebuild"), "/again");

	/* a damaged page in the middle: the header is fine, the first reads are not */
	close_all();
	fd = open(db_path, O_WRONLY);
	CHECK(fd >= 0);
	for (i = 1; i < 6; i++)
		CHECK(pwrite(fd, garbage, sizeof(garbage), 4096 * i + 8) == (ssize_t)sizeof(garbage));
	close(fd);
	open_all(1);
	CHECK_STR(urls("rebuild"), "");
}

static void test_old_version_rebuilds(void)
{
	/* user_version is the big-endian integer at offset 60 of the header */
	static const unsigned char old[4] = { 0, 0, 0, 0 };
	static const unsigned char future[4] = { 0, 0, 1, 0 };
	static const unsigned char one[4] = { 0, 0, 0, 1 };
	int fd;

	CHECK(search_begin(writer) == 0);
	put("/kept", "Kept", "", "", "Persistence of the capybara.");
	CHECK(search_commit(writer) == 0);
	close_all();
	open_all(0);
	CHECK_STR(urls("capybara"), "/kept");

	/* schema 1 had the same tables (and triggers): upgraded in place, rows kept */
	close_all();
	fd = open(db_path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, one, 4, 60) == 4);
	close(fd);
	open_all(0);
	CHECK_STR(urls("capybara"), "/kept");
	CHECK(search_put(writer, "/kept", "Kept", "", "", "Persistence of the okapi.") == 0);
	CHECK_STR(urls("capybara"), "");
	CHECK_STR(urls("kapi"), "/kept");
	CHECK(search_check(writer) == 0);
	CHECK(search_put(writer, "/kept", "Kept", "", "", "Persistence of the capybara.") == 0);

	close_all();
	fd = open(db_path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, old, 4, 60) == 4);
	close(fd);
	open_all(1);
	CHECK_STR(urls("capybara"), "");

	CHECK(search_put(writer, "/kept", "Kept", "", "", "Persistence of the capybara.") == 0);
	close_all();
	fd = open(db_path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, future, 4, 60) == 4);
	close(fd);
	open_all(1);
	CHECK_STR(urls("capybara"), "");
}

/* ---- Deferred substrings, and restarts on a real vault ----------------------- */

/*
 * Swaps the shared writer and reader for ones on the file name in dir
 * (fresh when want_fresh), or back when name is NULL.
 */
static struct search *shared_writer;
static struct search_reader *shared_reader;

static void use_index(const char *name, int want_fresh)
{
	char path[300];
	int fresh = -1;

	if (!name) {
		search_reader_free(reader);
		search_free(writer);
		writer = shared_writer;
		reader = shared_reader;
		shared_writer = NULL;
		shared_reader = NULL;
		return;
	}
	if (!shared_writer) {
		shared_writer = writer;
		shared_reader = reader;
	} else {
		search_reader_free(reader);
		search_free(writer);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	writer = search_open(path, &fresh);
	CHECK(writer != NULL);
	CHECK_INT(fresh, want_fresh);
	reader = search_reader_open(path);
	CHECK(reader != NULL);
}

static void remove_index(const char *name)
{
	static const char *const suffixes[] = { "", "-wal", "-shm" };
	char path[320];
	size_t i;

	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s%s", dir, name, suffixes[i]);
		unlink(path);
	}
}

static long long total(const char *q)
{
	struct jv *v = query(q);
	long long n = v ? total_of(v) : -1;

	jfree(v);
	return n;
}

/*
 * Deferred rows are searchable by words at once and by substrings once
 * search_fill_substrings() has put them; deleting or replacing one before
 * then is no error; deferred rows survive closing the writer. More than
 * 1,000 rows wait: their words are listed by a pass over the index's words,
 * in steps, which a writer opened again resumes.
 */
static void test_deferred_substrings(void)
{
	char url[64], text[160];
	int i, rc, steps = 0;

	if (!writer)
		return;
	use_index("deferred.db", 1);
	search_defer_substrings(writer, 1);
	CHECK(search_begin(writer) == 0);
	for (i = 0; i < 1200; i++) {
		snprintf(url, sizeof(url), "/d/%d", i);
		snprintf(text, sizeof(text), "Deferred note %d about the quixotic%dzebra and the marmot.",
			 i, i);
		put(url, "Deferred", "", "", text);
	}
	CHECK(search_commit(writer) == 0);
	CHECK_INT(total("marmot"), 1200);
	CHECK_INT(total("quixotic7zebra"), 1);
	CHECK_INT(total("xotic7zebr"), 0); /* a substring: not yet */

	/* gone or changed before the substring index had them */
	CHECK(search_begin(writer) == 0);
	CHECK(search_delete(writer, "/d/3") == 0);
	put("/d/5", "Deferred", "", "", "Replaced before its substrings: the capybara.");
	CHECK(search_commit(writer) == 0);
	search_defer_substrings(writer, 0);
	put("/d/6", "Deferred", "", "", "Replaced with substrings at once: the axolotl.");
	CHECK_INT(total("olotl"), 1);

	/* cut short: the rest waits in the file (a step of 1 row is 20 of the 2,400 terms) */
	CHECK_INT(search_fill_substrings(writer, 1), 0);
	CHECK_INT(total("xotic7zebr"), 0);
	use_index("deferred.db", 0);
	while ((rc = search_fill_substrings(writer, 1)) == 0)
		steps++;
	CHECK_INT(rc, 1);
	CHECK(steps > 10);
	CHECK_INT(search_fill_substrings(writer, 500), 1);
	CHECK_INT(total("xotic7zebr"), 1);
	CHECK_INT(total("xotic3zebr"), 0);
	CHECK_INT(total("xotic5zebr"), 0);
	CHECK_INT(total("apybar"), 1);
	CHECK_INT(total("otic11"), 111); /* quixotic11, 110..119, 1100..1199 */
	CHECK_INT(total("marmot"), 1197);
	CHECK(search_check(writer) == 0);

	/* after the fill, changes go to both indexes and the check still holds */
	CHECK(search_begin(writer) == 0);
	CHECK(search_delete(writer, "/d/7") == 0);
	put("/d/8", "Deferred", "", "", "Changed after the fill: the wolverine.");
	CHECK(search_commit(writer) == 0);
	CHECK_INT(total("olverin"), 1);
	CHECK(search_check(writer) == 0);
	use_index(NULL, 0);
	remove_index("deferred.db");
}

/*
 * One start of the server on vault, as the loader does it: loads the
 * vault, opens the index at db, fills it in small steps (words, then
 * substrings). Returns what the writer did; *fresh and *published are the
 * index's state at opening and the vault's published notes.
 */
static struct search_counts start_server(const char *vault, const char *db, int *fresh,
					 size_t *published)
{
	struct site_options so = { .threads = 1, .search = 1 };
	struct search_counts c = { -1, -1, -1 };
	struct site *site = site_load(vault, &so);
	struct search *w = search_open(db, fresh);
	int rc = -1;

	CHECK(site != NULL);
	CHECK(w != NULL);
	if (site && w && site_search_start(site, w) == 0)
		while ((rc = site_search_fill(site, 16)) == 0)
			;
	CHECK_INT(rc, 1);
	if (w) {
		search_counts(w, &c);
		CHECK(search_check(w) == 0);
	}
	*published = site ? site->npublished : 0;
	search_free(w);
	site_free(site);
	return c;
}

/*
 * Without the shared corpus: 119 notes in the shape of its folder of
 * cmdlets (Get-Date and Get-Random among them), so the test below runs
 * in any clone.
 */
static void generated_cmdlets(const char *vault, const char *missing)
{
	static const char *const verbs[] = { "Get", "Set", "New", "Remove", "Invoke", "Test", "Add" };
	struct buf name = BUF_INIT, text = BUF_INIT;
	size_t i;

	fprintf(stderr, "  no %s (the shared corpus): on 119 generated notes\n", missing);
	for (i = 0; i < 119; i++) {
		buf_reset(&name);
		if (i == 0)
			buf_adds(&name, "Get-Date.md");
		else if (i == 1)
			buf_adds(&name, "Get-Random.md");
		else
			buf_addf(&name, "%s-Thing%zu.md", verbs[i % 7], i);
		buf_reset(&text);
		buf_addf(&text, "---\ntitle: %.*s\n---\n# Synopsis\n\nGets or sets thing %zu of the "
			 "session, with parameters and examples.\n\n```powershell\n%.*s -Name x%zu\n```\n",
			 (int)name.len - 3, name.ptr, i, (int)name.len - 3, name.ptr, i);
		tv_write(vault, name.ptr, text.ptr);
	}
	buf_release(&name);
	buf_release(&text);
}

/*
 * Across restarts only what changed is written again: a restart on the
 * same notes writes no row, and a note edited while the server was down
 * is written again (and a deleted one removed), searchable by words and
 * substrings. On 119 real notes (generated ones without the corpus).
 */
static void test_restart_writes_changes_only(void)
{
	char *vault = tv_new();
	struct buf src = BUF_INIT, db = BUF_INIT, text = BUF_INIT, path = BUF_INIT;
	struct search_counts c;
	struct search_reader *saved = reader;
	size_t published = 0;
	int fresh = -1;

	buf_addf(&src, "%s/pwsh-docs/reference/7.6/Microsoft.PowerShell.Utility", tv_corpus());
	buf_addf(&db, "%s/restart.db", dir);
	if (tv_exists(src.ptr, "Get-Date.md"))
		CHECK(tv_copy(src.ptr, vault) == 0);
	else
		generated_cmdlets(vault, src.ptr);

	c = start_server(vault, db.ptr, &fresh, &published);
	CHECK_INT(fresh, 1);
	CHECK(published > 100);
	CHECK_INT(c.written, (long long)published);
	CHECK_INT(c.unchanged, 0);

	c = start_server(vault, db.ptr, &fresh, &published);
	CHECK_INT(fresh, 0);
	CHECK_INT(c.written, 0);
	CHECK_INT(c.unchanged, (long long)published);
	CHECK_INT(c.removed, 0);

	/* edited and deleted while the server was down */
	buf_addf(&path, "%s/Get-Date.md", vault);
	CHECK(read_file(path.ptr, &text) == 0);
	buf_adds(&text, "\nEdited while the server was down: the quirkywombat.\n");
	tv_write_len(vault, "Get-Date.md", text.ptr, text.len);
	buf_reset(&path);
	buf_addf(&path, "%s/Get-Random.md", vault);
	CHECK(unlink(path.ptr) == 0);
	c = start_server(vault, db.ptr, &fresh, &published);
	CHECK_INT(fresh, 0);
	CHECK_INT(c.written, 1);
	CHECK_INT(c.removed, 1);
	CHECK_INT(c.unchanged, (long long)published - 1);

	reader = search_reader_open(db.ptr);
	CHECK(reader != NULL);
	if (reader) {
		CHECK_STR(urls("quirkywombat"), "/get-date");
		CHECK_STR(urls("irkywomba"), "/get-date");
		CHECK(strstr(urls("Get-Random"), "/get-random") == NULL);
		CHECK(strstr(urls("Get-Date"), "/get-date") != NULL);
	}
	search_reader_free(reader);
	reader = saved;
	unlink(db.ptr);
	unlink_suffixed(&db, "-wal");
	unlink_suffixed(&db, "-shm");
	buf_release(&src);
	buf_release(&db);
	buf_release(&text);
	buf_release(&path);
	tv_remove(vault);
}

/* ---- Substrings on real notes ------------------------------------------------ */

/* A note of the corpus as the oracle sees it: its text lowercased, and its words. */
struct real_note {
	char url[32];
	char *title, *body;   /* as put */
	char *lower;          /* title, a newline, body: lowercased */
	int gone;             /* deleted */
};

/*
 * A note whose URL changes without its text changing keeps its search row,
 * moved to the new URL with the text the index has, and is not rendered
 * again for it: a folder renamed (its notes move in place), and a note
 * that takes the URL a deleted one had (a collision resolved).
 */
static void test_rows_follow_moves(void)
{
	struct site_options so = { .threads = 2, .search = 1 };
	struct search_reader *saved = reader;
	struct buf db = BUF_INIT, from = BUF_INIT, to = BUF_INIT;
	const char *folder[] = { "docs", "guides" }, *gone[] = { "c/Name.md" };
	char *vault = tv_new();
	struct search *w;
	struct site *site;
	int fresh = -1;

	tv_write(vault, "docs/Alpha.md", "# Alpha\n\nThe ocelot sleeps. See [[Beta]].\n");
	tv_write(vault, "docs/Beta.md", "# Beta\n\nThe margay climbs. Back to [[Alpha]], "
					"on to [g](../other/Gamma.md).\n");
	tv_write(vault, "other/Gamma.md", "# Gamma\n\nThe caracal runs.\n");
	tv_write(vault, "c/Name.md", "The serval hunts.\n");
	tv_write(vault, "c/name.md", "The jaguarundi waits.\n");
	buf_addf(&db, "%s/moves.db", dir);
	site = site_load(vault, &so);
	w = search_open(db.ptr, &fresh);
	CHECK(site && w);
	if (!site || !w)
		goto out;
	CHECK(site_attach_search(site, w, fresh) == 0);
	reader = search_reader_open(db.ptr);
	CHECK(reader != NULL);
	CHECK_STR(urls("ocelot"), "/docs/alpha");
	CHECK_STR(urls("jaguarundi"), "/c/name-2");

	buf_addf(&from, "%s/docs", vault);
	buf_addf(&to, "%s/guides", vault);
	CHECK(rename(from.ptr, to.ptr) == 0);
	site_apply(site, folder, 2);
	CHECK(site_search_flush(site) == 0);
	CHECK_INT(site->nrendered, 0);
	CHECK_STR(urls("ocelot"), "/guides/alpha");
	CHECK_STR(urls("margay"), "/guides/beta");
	CHECK_STR(urls("caracal"), "/other/gamma");

	tv_unlink(vault, "c/Name.md");
	site_apply(site, gone, 1);
	CHECK(site_search_flush(site) == 0);
	CHECK_INT(site->nrendered, 0);
	CHECK_STR(urls("jaguarundi"), "/c/name");
	CHECK_STR(urls("serval"), "");
	CHECK(search_check(w) == 0);
	search_reader_free(reader);
out:
	reader = saved;
	search_free(w);
	site_free(site);
	unlink(db.ptr);
	unlink_suffixed(&db, "-wal");
	unlink_suffixed(&db, "-shm");
	buf_release(&db);
	buf_release(&from);
	buf_release(&to);
	tv_remove(vault);
}

static int is_ascii_text(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return 0;
	return 1;
}

static void real_lower(struct real_note *n)
{
	struct buf b = BUF_INIT;
	size_t i;

	free(n->lower);
	buf_addf(&b, "%s\n%s", n->title, n->body);
	for (i = 0; i < b.len; i++)
		b.ptr[i] = (char)tolower((unsigned char)b.ptr[i]);
	n->lower = buf_detach(&b, NULL);
}

/* The words of ASCII text as unicode61 makes them: runs of letters and digits, lowercased. */
static void real_words(const char *s, char ***words, size_t *n, size_t *alloc)
{
	while (*s) {
		size_t k = 0;

		while (*s && !isalnum((unsigned char)*s))
			s++;
		while (isalnum((unsigned char)s[k]))
			k++;
		if (k) {
			ALLOC_GROW(*words, *n + 1, *alloc);
			(*words)[(*n)++] = xmemdup(s, k + 1);
			(*words)[*n - 1][k] = '\0';
		}
		s += k;
	}
}

/*
 * The CamelCase parts of the words of ASCII text, lowercased, as the
 * tokenizer adds them ("arameterValidation": arameter, validation): a part
 * starts at a capital after a small letter or a digit, or at the last of
 * several capitals when two small letters follow; parts of one letter and
 * words over 64 bytes are left out.
 */
static void real_camel_parts(const char *s, char ***words, size_t *n, size_t *alloc)
{
	while (*s) {
		size_t k = 0, from = 0, i, c;
		int upper = 0;

		while (*s && !isalnum((unsigned char)*s))
			s++;
		while (isalnum((unsigned char)s[k]))
			upper |= isupper((unsigned char)s[k++]);
		for (i = 1; upper && k >= 4 && k <= 64 && i <= k; i++) {
			if (i < k && !(isupper((unsigned char)s[i]) &&
				       (islower((unsigned char)s[i - 1]) || isdigit((unsigned char)s[i - 1]) ||
					(isupper((unsigned char)s[i - 1]) && i + 2 < k &&
					 islower((unsigned char)s[i + 1]) && islower((unsigned char)s[i + 2])))))
				continue;
			if (from == 0 && i == k)
				break;
			if (i - from >= 2) {
				ALLOC_GROW(*words, *n + 1, *alloc);
				(*words)[*n] = xmemdup(s + from, i - from + 1);
				for (c = 0; c < i - from; c++)
					(*words)[*n][c] = (char)tolower((unsigned char)s[from + c]);
				(*words)[(*n)++][i - from] = '\0';
			}
			from = i;
		}
		s += k;
	}
}

static int real_is_word(char **words, size_t n, const char *w)
{
	return bsearch(&w, words, n, sizeof(*words), by_cstr) != NULL;
}

/*
 * One substring query of the real notes against the oracle: the total is
 * the number of notes whose text has every positive fragment and no
 * excluded one, each result (up to 50) is such a note, and its snippet
 * marks runs that are the fragments (any when several may overlap).
 */
static void real_check(struct real_note *notes, size_t nnotes, const char *q, const char *f1,
		       const char *f2, int exclude)
{
	struct jv *v = query_page(q, 50, 0), *results = v ? jget(v, "results") : NULL;
	long long want = 0;
	size_t i, k;

	for (i = 0; i < nnotes; i++)
		if (!notes[i].gone && strstr(notes[i].lower, f1) &&
		    (!f2 || (strstr(notes[i].lower, f2) != NULL) != exclude))
			want++;
	if (v && total_of(v) != want)
		fprintf(stderr, "  [%s]: total %lld, want %lld\n", q, total_of(v), want);
	CHECK(v && total_of(v) == want);
	for (i = 0; results && i < results->n; i++) {
		const char *url = jget(results->items[i], "url")->str;
		struct jv *segs = jget(results->items[i], "segments");
		struct real_note *n = NULL;
		int marks = 0;

		for (k = 0; k < nnotes && !n; k++)
			if (strcmp(notes[k].url, url) == 0)
				n = &notes[k];
		CHECK(n && !n->gone && strstr(n->lower, f1) &&
		      (!f2 || (strstr(n->lower, f2) != NULL) != exclude));
		for (k = 0; segs && k < segs->n; k++) {
			char mark[256];
			size_t c;

			if (!jget(segs->items[k], "match")->b)
				continue;
			marks++;
			snprintf(mark, sizeof(mark), "%s", jget(segs->items[k], "text")->str);
			for (c = 0; mark[c]; c++)
				mark[c] = (char)tolower((unsigned char)mark[c]);
			if (f2 && !exclude ? !strstr(mark, f1) && !strstr(mark, f2)
					   : strcmp(mark, f1) != 0) {
				fprintf(stderr, "  [%s] %s: marked \"%s\"\n", q, url, mark);
				CHECK(0);
			}
		}
		CHECK(marks > 0);
	}
	jfree(v);
}

/*
 * Substrings on real notes: the ASCII ones of the PowerShell corpus (1,059
 * of 1,120), whose words are their runs of letters and digits, so that the
 * notes a fragment must find are those whose lowercased text has it. For
 * fragments of their words that are no word themselves (the middle of long
 * words, the start of shorter ones, pairs, exclusions), the totals, the
 * results and the marks are checked. The words of 1,000 notes go into the
 * vocabulary in the pass over the index (substrings deferred, filled in
 * small steps, resumed by a writer opened again), those of the others as
 * they are put; a note changed and one deleted after the fill are found as
 * they are now.
 */
static void test_substrings_real(void)
{
	char path[512], frag[64];
	struct real_note *notes = NULL;
	size_t nnotes = 0, anotes = 0, i, k, nfrag = 0, nshort = 0, nwords = 0, awords = 0;
	char **words = NULL, **frags = NULL;
	size_t afrags = 0;
	int rc, steps = 0;

	char *corpus;

	if (!writer)
		return;
	corpus = tv_corpus_vault("pwsh-docs", "substrings are checked against the text of its "
				 "1,059 ASCII notes");
	if (!corpus)
		return;
	for (i = 0; i < nmd; i++)
		free(md_paths[i]);
	free(md_paths);
	md_paths = NULL;
	nmd = amd = 0;
	snprintf(path, sizeof(path), "%s", corpus);
	free(corpus);
	nftw(path, add_md, 16, FTW_PHYS);
	qsort(md_paths, nmd, sizeof(*md_paths), by_cstr);
	for (i = 0; i < nmd; i++) {
		struct buf text = BUF_INIT;
		struct real_note *n;

		if (read_file(md_paths[i], &text) != 0 || !is_ascii_text(text.ptr, text.len)) {
			buf_release(&text);
			continue;
		}
		ALLOC_GROW(notes, nnotes + 1, anotes);
		n = &notes[nnotes];
		memset(n, 0, sizeof(*n));
		snprintf(n->url, sizeof(n->url), "/r/%zu", nnotes);
		n->title = xstrdup(strrchr(md_paths[i], '/') + 1);
		n->body = buf_detach(&text, NULL);
		nnotes++;
	}
	CHECK(nnotes > 1000);
	if (nnotes <= 1000)
		return;

	use_index("real.db", 1);
	search_defer_substrings(writer, 1);
	CHECK(search_begin(writer) == 0);
	for (i = 0; i < 1000; i++)
		put(notes[i].url, notes[i].title, "", "", notes[i].body);
	CHECK(search_commit(writer) == 0);
	CHECK_INT(total("arameterset"), 0); /* not yet */
	CHECK_INT(search_fill_substrings(writer, 20), 0);
	use_index("real.db", 0);
	while ((rc = search_fill_substrings(writer, 20)) == 0)
		steps++;
	CHECK_INT(rc, 1);
	CHECK(steps > 3);
	CHECK(search_begin(writer) == 0);
	for (i = 1000; i < nnotes; i++)
		put(notes[i].url, notes[i].title, "", "", notes[i].body);
	CHECK(search_commit(writer) == 0);
	/* changed, and deleted, after the fill */
	{
		struct buf b = BUF_INIT;

		buf_addf(&b,
			 "%s\nAdded later: the quadrilateralisation of hyperparameterised cmdlets.",
			 notes[0].body);
		free(notes[0].body);
		notes[0].body = buf_detach(&b, NULL);
		put(notes[0].url, notes[0].title, "", "", notes[0].body);
		CHECK(search_delete(writer, notes[1].url) == 0);
		notes[1].gone = 1;
	}
	CHECK(search_check(writer) == 0);

	for (i = 0; i < nnotes; i++) {
		real_lower(&notes[i]);
		if (!notes[i].gone) {
			real_words(notes[i].lower, &words, &nwords, &awords);
			real_camel_parts(notes[i].title, &words, &nwords, &awords);
			real_camel_parts(notes[i].body, &words, &nwords, &awords);
		}
	}
	qsort(words, nwords, sizeof(*words), by_cstr);
	/* fragments: the middle of long words, and the first four letters of shorter ones */
	for (i = 0; i < nwords; i += 97) {
		const char *w = words[i];
		size_t len = strlen(w), c;
		int letters = 1;

		for (c = 0; c < len; c++)
			letters &= isalpha((unsigned char)w[c]) != 0;
		if (!letters || len < 6)
			continue;
		if (len >= 9)
			snprintf(frag, sizeof(frag), "%.*s", (int)(len - 2), w + 1);
		else if (nshort < 40)
			snprintf(frag, sizeof(frag), "%.4s", w + 1);
		else
			continue;
		if (real_is_word(words, nwords, frag))
			continue;
		for (k = 0; k < nfrag && strcmp(frags[k], frag) != 0; k++)
			;
		if (k < nfrag)
			continue;
		nshort += len < 9;
		ALLOC_GROW(frags, nfrag + 1, afrags);
		frags[nfrag++] = xstrdup(frag);
	}
	CHECK(nfrag > 100);
	for (i = 0; i < nfrag; i++)
		real_check(notes, nnotes, frags[i], frags[i], NULL, 0);
	for (i = 0; i + 1 < nfrag && i < 60; i += 2) {
		char q[160];

		snprintf(q, sizeof(q), "%s %s", frags[i], frags[i + 1]);
		real_check(notes, nnotes, q, frags[i], frags[i + 1], 0);
		snprintf(q, sizeof(q), "%s -%s", frags[i], frags[i + 1]);
		real_check(notes, nnotes, q, frags[i], frags[i + 1], 1);
	}
	/* upper case, and the words added after the fill */
	real_check(notes, nnotes, "ARAMETERSET", "arameterset", NULL, 0);
	real_check(notes, nnotes, "uadrilateralisatio", "uadrilateralisatio", NULL, 0);
	CHECK_INT(total("uadrilateralisatio"), 1);
	real_check(notes, nnotes, "yperparameteris", "yperparameteris", NULL, 0);

	use_index(NULL, 0);
	remove_index("real.db");
	for (i = 0; i < nmd; i++)
		free(md_paths[i]);
	free(md_paths);
	md_paths = NULL;
	nmd = amd = 0;
	for (i = 0; i < nwords; i++)
		free(words[i]);
	free(words);
	for (i = 0; i < nfrag; i++)
		free(frags[i]);
	free(frags);
	for (i = 0; i < nnotes; i++) {
		free(notes[i].title);
		free(notes[i].body);
		free(notes[i].lower);
	}
	free(notes);
}

/*
 * An index of schema 2 (tri, a trigram index of doc, beside fts) becomes
 * one of schema 3 in place: its rows kept, tri dropped and its pages given
 * back, the words listed by the next fill. And the check finds a word of
 * fts missing from the vocabulary.
 */
static void test_upgrade_from_2(void)
{
	char path[300], url[64], text[200];
	long long pages2 = 0, pages3 = 0, tri = -1, free_pages = -1;
	sqlite3 *db = NULL;
	int i, rc;

	if (!writer)
		return;
	use_index("v2.db", 1);
	CHECK(search_begin(writer) == 0);
	put("/v2/a", "Rodents", "", "", "The capybara is the largest rodent.");
	for (i = 0; i < 300; i++) {
		snprintf(url, sizeof(url), "/v2/filler/%d", i);
		snprintf(text, sizeof(text),
			 "Filler note %d: lorem ipsum dolor sit amet, consectetur"
			 " adipiscing elit, sed do eiusmod tempor incididunt%dut labore.",
			 i, i);
		put(url, "Filler", "", "", text);
	}
	CHECK(search_commit(writer) == 0);
	use_index(NULL, 0);
	snprintf(path, sizeof(path), "%s/v2.db", dir);
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	rc = sqlite3_exec(
	    db,
	    "DROP TABLE vocab_tri; DROP TABLE vocab; DROP TABLE vocab_todo;"
	    "CREATE VIRTUAL TABLE tri USING fts5(url UNINDEXED, title, headings, tags, body,"
	    " content='doc', content_rowid='id', tokenize='trigram');"
	    "INSERT INTO tri(tri) VALUES('rebuild');"
	    "CREATE TABLE tri_todo(id INTEGER PRIMARY KEY);"
	    "PRAGMA user_version = 2;",
	    NULL, NULL, NULL);
	CHECK_INT(rc, SQLITE_OK);
	CHECK(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) == SQLITE_OK);
	{
		sqlite3_stmt *st = NULL;

		CHECK(sqlite3_prepare_v2(db, "PRAGMA page_count", -1, &st, NULL) == SQLITE_OK);
		if (st && sqlite3_step(st) == SQLITE_ROW)
			pages2 = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	CHECK(sqlite3_close(db) == SQLITE_OK);

	use_index("v2.db", 0);
	CHECK_STR(urls("capybara"), "/v2/a");
	CHECK_STR(urls("apybar"), ""); /* the words are not listed yet */
	CHECK(search_check(writer) == 0);
	while ((rc = search_fill_substrings(writer, 250)) == 0)
		;
	CHECK_INT(rc, 1);
	CHECK_STR(urls("apybar"), "/v2/a");
	CHECK_INT(total("cididunt7"), 11); /* 7, 70..79 */
	CHECK(search_check(writer) == 0);
	use_index(NULL, 0);

	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) == SQLITE_OK);
	{
		sqlite3_stmt *st = NULL;

		CHECK(
		    sqlite3_prepare_v2(db,
				       "SELECT (SELECT count(*) FROM sqlite_schema WHERE name LIKE"
				       " 'tri%'), (SELECT page_count FROM pragma_page_count),"
				       " (SELECT freelist_count FROM pragma_freelist_count)",
				       -1, &st, NULL) == SQLITE_OK);
		if (st && sqlite3_step(st) == SQLITE_ROW) {
			tri = sqlite3_column_int64(st, 0);
			pages3 = sqlite3_column_int64(st, 1);
			free_pages = sqlite3_column_int64(st, 2);
		}
		sqlite3_finalize(st);
	}
	CHECK_INT(tri, 0);
	CHECK_INT(free_pages, 0);
	CHECK(pages3 > 0 && pages3 < pages2);
	/* a word of fts missing from the vocabulary: the check says so */
	rc = sqlite3_exec(db,
			  "INSERT INTO vocab_tri(vocab_tri, rowid, term)"
			  " SELECT 'delete', id, term FROM vocab WHERE term = 'capybara';"
			  "DELETE FROM vocab WHERE term = 'capybara';",
			  NULL, NULL, NULL);
	CHECK_INT(rc, SQLITE_OK);
	CHECK(sqlite3_close(db) == SQLITE_OK);
	use_index("v2.db", 0);
	CHECK_STR(urls("apybar"), "");
	CHECK(search_check(writer) < 0);
	use_index(NULL, 0);
	remove_index("v2.db");
}

/* Sets fts's tokenizer in the schema of the file at path (no FTS5 call: cjk is not there). */
static void set_fts_tokenizer(const char *path, const char *from, const char *to)
{
	sqlite3 *db = NULL;
	char *sql;

	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	sql = sqlite3_mprintf("PRAGMA writable_schema = ON;"
			      "UPDATE sqlite_schema SET sql = replace(sql, '%q', '%q') WHERE name = 'fts';"
			      "PRAGMA writable_schema = OFF;",
			      from, to);
	CHECK_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_free(sql);
	CHECK(sqlite3_close(db) == SQLITE_OK);
}

/*
 * An index of schema 3, whose words were not split, becomes one of schema
 * 4 in place: its rows kept (nothing to write again), fts tokenized again,
 * and the parts listed in the vocabulary for typos. The file of schema 3
 * is made from one of 4: fts tokenized again by unicode61 alone, which is
 * what cjk was for ASCII text.
 */
static void test_upgrade_from_3(void)
{
	char path[300];
	sqlite3 *db = NULL;
	struct jv *v;

	if (!writer)
		return;
	use_index("v3.db", 1);
	CHECK(search_begin(writer) == 0);
	put("/v3/a", "Cmdlets", "", "", "Run Get-WalrusProperty first.");
	CHECK(search_commit(writer) == 0);
	CHECK_STR(urls("walrus property"), "/v3/a");
	use_index(NULL, 0);
	snprintf(path, sizeof(path), "%s/v3.db", dir);
	set_fts_tokenizer(path, "tokenize='cjk unicode61", "tokenize='unicode61");
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK_INT(sqlite3_exec(db,
			       "INSERT INTO fts(fts) VALUES('rebuild');"
			       "DELETE FROM vocab WHERE term IN ('walrus', 'property');"
			       "PRAGMA user_version = 3;",
			       NULL, NULL, NULL),
		  SQLITE_OK);
	CHECK(sqlite3_close(db) == SQLITE_OK);
	set_fts_tokenizer(path, "tokenize='unicode61", "tokenize='cjk unicode61");

	use_index("v3.db", 0);
	CHECK_STR(urls("walrus property"), "/v3/a");
	v = query("walrus"); /* a word now, marked whole; not a substring */
	CHECK_STR(segments_of(v, 0), "Run Get-[WalrusProperty] first.");
	jfree(v);
	CHECK_STR(urls("walrusproperty"), "/v3/a");
	CHECK(search_put(writer, "/v3/a", "Cmdlets", "", "", "Run Get-WalrusProperty first.") == 0);
	CHECK(search_check(writer) == 0);
	while (search_fill_substrings(writer, 250) == 0)
		;
	CHECK_STR(urls("walrsu property"), "/v3/a");
	use_index(NULL, 0);
	remove_index("v3.db");
}

static void test_unwritable(void)
{
	int fresh = -1;

	CHECK(search_open("/nonexistent-dir/quire/search.db", &fresh) == NULL);
}

int main(void)
{
	setup();
	RUN(test_json_parser);
	RUN(test_words);
	RUN(test_phrases);
	RUN(test_prefixes);
	RUN(test_prefix_alone);
	RUN(test_exclusion);
	RUN(test_only_exclusion);
	RUN(test_accents);
	RUN(test_title_ranked_above_body);
	RUN(test_chinese);
	RUN(test_japanese);
	RUN(test_substrings);
	RUN(test_suggestions);
	RUN(test_typos);
	RUN(test_camel_case);
	RUN(test_update_replaces);
	RUN(test_delete);
	RUN(test_move);
	RUN(test_batches);
	RUN(test_rollback);
	RUN(test_paging);
	RUN(test_bad_requests);
	RUN(test_segments);
	RUN(test_escaping_and_sanitizing);
	RUN(test_hostile_queries);
	RUN(test_readers_during_commits);
	RUN(test_scores_are_bm25);
	RUN(test_lists_match_fts);
	RUN(test_deferred_substrings);
	RUN(test_restart_writes_changes_only);
	RUN(test_rows_follow_moves);
	RUN(test_substrings_real);
	RUN(test_upgrade_from_2);
	RUN(test_upgrade_from_3);
	RUN(test_reopen_keeps);
	RUN(test_corrupt_rebuilds);
	RUN(test_old_version_rebuilds);
	RUN(test_unwritable);
	teardown();
	return test_done();
}
