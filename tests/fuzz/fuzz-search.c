/*
 * fuzz-search.c: a libFuzzer target for search queries, from the text
 * typed into the search box to the answer.
 *
 * Each input is a query (up to its first NUL, as http_query_param()
 * refuses NULs): search_query_parse() splits it into terms and
 * search_build_match() writes the FTS5 MATCH expression; then the query
 * runs for real, search_query() and search_query_html(), against a small
 * index made once per process in a temporary folder (a dozen notes with
 * accents, CJK, code and punctuation, substrings filled), which reaches the
 * tokenizer, FTS5's parser on what we wrote, ranking, substrings and
 * snippets, and typos forgiven (typo.c: the words near the typed ones, a
 * MATCH expression with alternatives, ranking by typos; search.dict has
 * mistyped words of the notes). The input is also read as a note's text
 * by fts's tokenizer (CamelCase parts, CJK bigrams): every token lies in
 * the text, and a colocated one inside the word it follows.
 *
 * Properties: a JSON answer (results or error) is one well-formed JSON
 * value, as the reader of src/util/json.c sees it; a parsed query has at
 * most SEARCH_TERMS_MAX terms and at least one positive one; an answer
 * says "corrected" only with results, and "suggestion" only without.
 */
#include "fuzz.h"

#include "search/search.h"
#include "search/search-int.h"
#include "util/buf.h"
#include "util/json.h"

#include <dirent.h>
#include <strings.h>
#include <unistd.h>

static const char *const notes[][5] = {
	{ "/café", "Café au lait", "Recipe\nMilk", "food drinks", "A café au lait is coffee with hot milk. Crème brûlée." },
	{ "/shell", "PowerShell basics", "Get-Command\nPipelines", "pwsh shell", "Get-ChildItem -Path C:\\ | Where-Object { $_.Length -gt 10 }" },
	{ "/tasks", "Tasks plugin", "Due dates\nRecurrence", "tasks obsidian", "- [ ] take out the trash 📅 2024-01-01 🔁 every week" },
	{ "/cjk", "日本語のノート", "見出し", "日本", "東京は日本の首都です。漢字とひらがな。" },
	{ "/code", "Code", "C\nPython", "code", "int main(void) { return 0; } def f(x): return x * 2 # comment" },
	{ "/quotes", "\"Quoted\" title", "", "", "He said \"hello\" and 'bye'; NEAR(a b) AND OR NOT title:x ^start" },
	{ "/long", "Long", "", "", "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua" },
	{ "/dup", "Lorem lorem", "Lorem", "lorem", "lorem lorem lorem ipsum ipsum" },
	{ "/emoji", "Emoji 🎉", "", "party", "🎉 party time 🎊 confetti" },
	{ "/greek", "Ελληνικά", "", "", "Καλημέρα κόσμε, ΑΘΗΝΑ" },
	{ "/dots", "a.b.c", "", "", "version 1.2.3 e.g. i.e. foo-bar_baz" },
	{ "/empty", "", "", "", "" },
	{ "/camel", "Get-ItemPropertyValue", "", "", "HTTPServer, IPv4Address, Base64Encode, iPhone and ItemItem" },
};

static char dir[64];
static struct search_reader *reader;

/* Removes the index's files (search.db and SQLite's companions) and the folder. */
static void cleanup(void)
{
	struct buf path = BUF_INIT;
	struct dirent *e;
	DIR *d;

	search_reader_free(reader);
	reader = NULL;
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		buf_reset(&path);
		buf_addf(&path, "%s/%s", dir, e->d_name);
		unlink(path.ptr);
	}
	if (d)
		closedir(d);
	rmdir(dir);
	buf_release(&path);
}

static void setup(void)
{
	struct buf path = BUF_INIT;
	struct search *s;
	size_t i;
	int fresh;
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/quire-fuzz-XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
	if (!mkdtemp(dir))
		abort();
	atexit(cleanup);
	buf_addf(&path, "%s/search.db", dir);
	s = search_open(path.ptr, &fresh);
	if (!s || search_begin(s) < 0)
		abort();
	for (i = 0; i < sizeof(notes) / sizeof(notes[0]); i++)
		if (search_put(s, notes[i][0], notes[i][1], notes[i][2], notes[i][3], notes[i][4]) < 0)
			abort();
	if (search_commit(s) < 0 || search_fill_substrings(s, 1000) < 0)
		abort();
	search_free(s);
	reader = search_reader_open(path.ptr);
	if (!reader)
		abort();
	buf_release(&path);
}

struct doc_tokens {
	const char *text;
	int n, ntok;
};

/* A token of the input read as a note: in it, and a CamelCase part only after its word. */
static int check_token(void *p, int tflags, const char *tok, int n, int start, int end)
{
	struct doc_tokens *d = p;
	int i;

	fuzz_assert(n > 0 && start >= 0 && start <= end && end <= d->n);
	if (tflags & FTS5_TOKEN_COLOCATED) {
		fuzz_assert(d->ntok > 0);
		for (i = 0; i + n <= end - start; i++)
			if (strncasecmp(d->text + start + i, tok, (size_t)n) == 0)
				break;
		/* a part (ASCII, in its word) or CJK's last character (the bigram's end) */
		fuzz_assert(i + n <= end - start);
	}
	d->ntok++;
	return SQLITE_OK;
}

static void check_json(const struct buf *out)
{
	struct json_reader r;

	json_init(&r, out->ptr, out->len);
	fuzz_assert(json_skip(&r) == 0 && json_end(&r) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *q = fuzz_str(data, size);
	size_t len = strlen(q);
	struct query parsed;
	struct buf out = BUF_INIT;
	size_t span[SEARCH_PHRASES_MAX][2];
	const char *err = NULL;
	long long total = 0;
	int rc;

	if (!reader)
		setup();
	if (search_query_parse(q, len, &parsed, &err) == 0) {
		fuzz_assert(parsed.n <= SEARCH_TERMS_MAX && parsed.npos <= parsed.n);
		fuzz_assert(parsed.n == 0 || parsed.npos > 0);
		search_build_match(&parsed, &out, span);
		buf_reset(&out);
	} else {
		fuzz_assert(err != NULL);
	}
	{
		struct doc_tokens d = { q, (int)len, 0 };

		fuzz_assert(reader->idx.tok.api.xTokenize(reader->idx.tok.inst, &d,
							  FTS5_TOKENIZE_DOCUMENT, q, (int)len,
							  check_token) == SQLITE_OK);
	}
	rc = search_query(reader, q, 10, (int)(size % 3), &out);
	fuzz_assert(rc == 0 || rc == -1); /* -2: the index failed */
	check_json(&out);
	if (rc == 0 && strstr(out.ptr, "\"total\":0,"))
		fuzz_assert(!search_reader_corrected(reader, NULL));
	else if (rc == 0)
		fuzz_assert(!search_reader_suggestion(reader));
	buf_reset(&out);
	rc = search_query_html(reader, q, 5, 0, &out, &total);
	fuzz_assert(rc == 0 || rc == -1);
	if (rc == -1)
		check_json(&out);
	buf_release(&out);
	free(q);
	return 0;
}
