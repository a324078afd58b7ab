/*
 * export-search.c: the static search index of an export.
 *
 * Without a server, the theme's search box (theme/js/search.js) answers from
 * files under _quire/search/, fetched on demand so that a large site
 * does not download one big index:
 *
 *   t/<hex>.json   the terms whose first two UTF-8 bytes are <hex>, each
 *                  with the URLs of the notes that hold it: {"term":[url...]}
 *   d/<hh>.json    titles: {url: title} for the URLs whose FNV-1a hash
 *                  (32 bits, of the URL's bytes) ends in the byte <hh>
 *
 * A query fetches one term shard per word (the last word matches as a
 * prefix: every term with its first two bytes is in the same shard) and
 * one title shard per result shown. Terms are the runs of letters and
 * digits (Unicode L* and N*) of a note's article, lowercased: what the
 * script's split(/[^\p{L}\p{N}]+/u) and toLowerCase() give for a query.
 * Shards hold URLs, not numbers, and are sorted: an edit rewrites the
 * shards of the terms it added or removed and its title's shard, so an
 * incremental export stays small.
 *
 * Rejected: one index file (4 MB at 10,000 notes, all of it for the first
 * keystroke); compiling SQLite to WebAssembly to read search.db (a large
 * download, and the export would carry the whole FTS index); ranking by
 * BM25 (needs document lengths and frequencies in every shard: the server
 * ranks, the static fallback lists title matches first).
 */
#include "cmd/export.h"
#include "cmd/export-int.h"
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct note_text {
	char *url;     /* encoded, with the prefix */
	char *title;
};

struct term {
	char *word;
	size_t *notes; /* indexes into the notes, ascending, once each */
	size_t n, alloc;
};

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

/* Text between start and end with tags dropped and &...; read as a space (title: decoded). */
static void plain(const char *s, const char *end, struct buf *out, int decode)
{
	static const char *const ents[][2] = { { "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" },
					       { "&quot;", "\"" }, { "&#39;", "'" } };
	size_t k;

	while (s < end) {
		if (*s == '<') {
			const char *gt = memchr(s, '>', (size_t)(end - s));
			s = gt ? gt + 1 : end;
			buf_addc(out, ' ');
			continue;
		}
		if (*s == '&') {
			const char *semi = memchr(s, ';', (size_t)(end - s) < 10 ? (size_t)(end - s) : 10);
			for (k = 0; decode && semi && k < sizeof(ents) / sizeof(ents[0]); k++)
				if ((size_t)(semi - s + 1) == strlen(ents[k][0]) &&
				    memcmp(s, ents[k][0], strlen(ents[k][0])) == 0)
					break;
			if (semi) {
				buf_adds(out, decode && k < sizeof(ents) / sizeof(ents[0]) ? ents[k][1] : " ");
				s = semi + 1;
				continue;
			}
		}
		buf_addc(out, *s++);
	}
}

static const char *find(const char *s, const char *end, const char *what)
{
	size_t n = strlen(what);

	for (; s && s + n <= end; s++)
		if (*s == *what && memcmp(s, what, n) == 0)
			return s;
	return NULL;
}

/* Whether the code point at text is a letter or digit; *n gets its length (at least 1). */
static int alnum_at(const char *text, size_t left, int *n)
{
	unsigned char c = (unsigned char)*text;
	int32_t cp;

	*n = 1;
	if (c < 0x80) /* the common case, without utf8proc */
		return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
	*n = utf8_decode(text, left, &cp);
	if (*n <= 0) {
		*n = 1;
		return 0;
	}
	return unicode_is_alnum(cp);
}

/* The lowercase of an ASCII term into out (len < 65), or a new string from utf8_lower(). */
static char *lower(const char *s, size_t len, char out[65], int *ascii)
{
	size_t i;

	for (i = 0; i < len && !((unsigned char)s[i] & 0x80); i++)
		out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
	*ascii = i == len;
	if (*ascii) {
		out[len] = '\0';
		return out;
	}
	return utf8_lower(s, len);
}

/* Adds note i to the posting list of each term of text. */
static void add_terms(struct map *terms, const char *text, size_t len, size_t i)
{
	size_t at = 0;
	char small[65];

	while (at < len) {
		size_t start = at, end;
		int n = 1, ascii;
		char *low;
		struct term *t;

		while (at < len && alnum_at(text + at, len - at, &n))
			at += (size_t)n;
		end = at;
		if (at < len)
			at += (size_t)n;
		if (end == start || end - start > 64)
			continue;
		low = lower(text + start, end - start, small, &ascii);
		t = map_gets(terms, low);
		if (!t) {
			t = xcalloc(1, sizeof(*t));
			t->word = ascii ? xstrdup(low) : low;
			map_put(terms, t->word, strlen(t->word), t);
		} else if (!ascii) {
			free(low);
		}
		if (t->n && t->notes[t->n - 1] == i)
			continue;
		if (t->n == t->alloc) {
			t->alloc = t->alloc ? 2 * t->alloc : 4;
			t->notes = xrealloc(t->notes, t->alloc * sizeof(*t->notes));
		}
		t->notes[t->n++] = i;
	}
}

/* A note page's title and terms (from its <article>). */
static void read_note(const struct page *p, const char *prefix, struct note_text *nt,
		      struct map *terms, size_t i)
{
	const char *body = page_bytes(p), *end = body ? body + p->body_len : NULL;
	const char *a = find(body, end, "<article"), *b = a ? find(a, end, "</article>") : NULL;
	const char *h = a ? find(a, b, "<h1") : NULL, *he = h ? find(h, b, "</h1>") : NULL;
	const char *gt = h && he ? memchr(h, '>', (size_t)(he - h)) : NULL;
	struct buf u = BUF_INIT, text = BUF_INIT;

	buf_adds(&u, prefix);
	buf_add_urlpath(&u, p->path, p->path_len);
	nt->url = buf_detach(&u, NULL);
	if (gt)
		plain(gt + 1, he, &text, 1);
	nt->title = buf_detach(&text, NULL);
	if (a && b) {
		plain(a, b, &text, 0);
		add_terms(terms, text.ptr, text.len, i);
	}
	buf_release(&text);
}

static int cmp_page(const void *a, const void *b)
{
	const struct page *x = *(const struct page *const *)a, *y = *(const struct page *const *)b;
	return strcmp(x->path, y->path);
}

static int cmp_term(const void *a, const void *b)
{
	return strcmp((*(const struct term *const *)a)->word, (*(const struct term *const *)b)->word);
}

static void shard_name(const char *word, char out[5])
{
	static const char hex[] = "0123456789abcdef";
	size_t i, n = strlen(word) < 2 ? strlen(word) : 2;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex[(unsigned char)word[i] >> 4];
		out[2 * i + 1] = hex[(unsigned char)word[i] & 15];
	}
	out[2 * n] = '\0';
}

static void flush(struct export_list *l, const char *base, const char *dir, const char *name,
		  struct buf *json)
{
	struct buf rel = BUF_INIT;
	size_t len;

	buf_adds(json, "}\n");
	buf_addf(&rel, "%s_quire/search/%s/%s.json", base, dir, name);
	len = json->len;
	export_add(l, rel.ptr, NULL, REP_BUF, buf_detach(json, NULL), len);
	buf_release(&rel);
}

static void write_terms(struct export_list *l, const char *base, struct map *terms,
			const struct note_text *notes)
{
	struct term **v = xcalloc(terms->len + 1, sizeof(*v));
	struct buf json = BUF_INIT;
	char shard[5] = "", cur[5] = "";
	size_t i = 0, n = 0, k;
	void *x;

	while (map_next(terms, &i, NULL, NULL, &x))
		v[n++] = x;
	qsort(v, n, sizeof(*v), cmp_term);
	for (i = 0; i < n; i++) {
		shard_name(v[i]->word, shard);
		if (strcmp(shard, cur) != 0) {
			if (cur[0])
				flush(l, base, "t", cur, &json);
			memcpy(cur, shard, sizeof(cur));
			buf_addc(&json, '{');
		} else {
			buf_addc(&json, ',');
		}
		buf_addc(&json, '"');
		buf_adds_json(&json, v[i]->word);
		buf_adds(&json, "\":[");
		for (k = 0; k < v[i]->n; k++) {
			buf_adds(&json, k ? ",\"" : "\"");
			buf_adds_json(&json, notes[v[i]->notes[k]].url);
			buf_addc(&json, '"');
		}
		buf_addc(&json, ']');
		free(v[i]->word);
		free(v[i]->notes);
		free(v[i]);
	}
	if (cur[0])
		flush(l, base, "t", cur, &json);
	buf_release(&json);
	free(v);
}

static void write_titles(struct export_list *l, const char *base, const struct note_text *notes,
			 size_t n)
{
	struct buf shard[256];
	size_t i;
	int b;

	for (b = 0; b < 256; b++) {
		struct buf empty = BUF_INIT;
		shard[b] = empty;
	}
	for (i = 0; i < n; i++) {
		struct buf *s = &shard[fnv1a(notes[i].url) & 255];
		buf_adds(s, s->len ? ",\"" : "{\"");
		buf_adds_json(s, notes[i].url);
		buf_adds(s, "\":\"");
		buf_adds_json(s, notes[i].title);
		buf_addc(s, '"');
	}
	for (b = 0; b < 256; b++) {
		char name[3];
		snprintf(name, sizeof(name), "%02x", b);
		if (shard[b].len)
			flush(l, base, "d", name, &shard[b]);
		buf_release(&shard[b]);
	}
}

void export_collect_search(struct export_list *l, const char *base, const char *prefix,
			   const struct page **pages, size_t n)
{
	struct note_text *notes = xcalloc(n + 1, sizeof(*notes));
	struct map terms = MAP_INIT;
	size_t i;

	qsort(pages, n, sizeof(*pages), cmp_page);
	for (i = 0; i < n; i++)
		read_note(pages[i], prefix, &notes[i], &terms, i);
	write_terms(l, base, &terms, notes);
	write_titles(l, base, notes, n);
	for (i = 0; i < n; i++) {
		free(notes[i].url);
		free(notes[i].title);
	}
	free(notes);
	map_release(&terms);
}
