/*
 * highlight.c: the token scanners behind highlight.h.
 *
 * A language is a row of langs[]: the names an info string may give it, a
 * scanner (enum family), and what that scanner needs to know (comment
 * markers, keywords, which quotes make strings and how they escape). The
 * scanners do not parse: they recognize tokens by their first characters,
 * as editors' highlighters do, and every step consumes at least one byte,
 * so a block costs one pass whatever it holds (tests/test-markdown.c feeds
 * them unclosed strings, comments and tags). The classes:
 *
 *	hl-c comment    hl-s string     hl-n number     hl-k keyword
 *	hl-l literal    hl-v variable   hl-t type       hl-f function, command
 *	hl-g tag        hl-a attribute, key, parameter  hl-m meta
 */
#include "markdown/highlight.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum hl { HL_NONE, HL_COMMENT, HL_STRING, HL_NUMBER, HL_KEYWORD, HL_LITERAL, HL_VARIABLE,
	  HL_TYPE, HL_FUNCTION, HL_TAG, HL_ATTR, HL_META };

static const char *const class_of[] = { NULL, "hl-c", "hl-s", "hl-n", "hl-k", "hl-l", "hl-v",
					 "hl-t", "hl-f", "hl-g", "hl-a", "hl-m" };

enum family { F_CODE, F_JSON, F_YAML, F_MARKUP, F_CSS };

/* What the code scanner does besides comments, strings, numbers and words. */
enum {
	X_PREPROC = 1 << 0,    /* C: '#' opens a meta line */
	X_DOLLAR = 1 << 1,     /* shell, PowerShell: $name, ${...} are variables */
	X_HASH_WORD = 1 << 2,  /* shell: '#' comments only at a word's start */
	X_PWSH = 1 << 3,       /* PowerShell: Verb-Noun commands, -Parameters, [types], @' '@ */
	X_TRIPLE = 1 << 4,     /* Python: ''' and """ strings, @decorators */
	X_BACKTICK = 1 << 5,   /* JavaScript: `template` strings */
	X_NOCASE = 1 << 6,     /* keywords in any case (PowerShell, SQL) */
	X_VERBATIM = 1 << 7,   /* C#: @"..." strings, "" for a quote */
	X_RAW_SQ = 1 << 8,     /* shell: '...' has no escapes */
	X_DOUBLED = 1 << 9,    /* SQL, PowerShell '...': '' is a quote */
	X_CALLS = 1 << 10,     /* a word before '(' is a function */
};

struct lang {
	const char *names;             /* space-separated, lowercase */
	enum family family;
	unsigned x;
	const char *line1, *line2;     /* line comment markers */
	const char *open, *close;      /* block comment markers */
	const char *quotes;            /* characters that open strings */
	char escape;                   /* in strings, or 0 */
	const char *const *keywords;   /* sorted (lowercase when X_NOCASE) */
	const char *const *literals;   /* sorted likewise */
};

#define N(a) (sizeof(a) / sizeof(*(a)))
#define END NULL

static const char *const c_kw[] = { "auto", "break", "case", "char", "const", "continue",
	"default", "do", "double", "else", "enum", "extern", "float", "for", "goto", "if",
	"inline", "int", "long", "register", "restrict", "return", "short", "signed", "sizeof",
	"static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile",
	"while", END };
static const char *const c_lit[] = { "NULL", "false", "nullptr", "true", END };
static const char *const cs_kw[] = { "abstract", "as", "async", "await", "base", "bool",
	"break", "byte", "case", "catch", "char", "checked", "class", "const", "continue",
	"decimal", "default", "delegate", "do", "double", "else", "enum", "event", "explicit",
	"extern", "finally", "fixed", "float", "for", "foreach", "get", "goto", "if",
	"implicit", "in", "int", "interface", "internal", "is", "lock", "long", "namespace",
	"new", "object", "operator", "out", "override", "params", "private", "protected",
	"public", "readonly", "record", "ref", "return", "sbyte", "sealed", "set", "short",
	"sizeof", "stackalloc", "static", "string", "struct", "switch", "this", "throw", "try",
	"typeof", "uint", "ulong", "unchecked", "unsafe", "ushort", "using", "var", "virtual",
	"void", "volatile", "where", "while", "yield", END };
static const char *const cs_lit[] = { "false", "null", "true", END };
static const char *const js_kw[] = { "as", "async", "await", "break", "case", "catch",
	"class", "const", "continue", "debugger", "default", "delete", "do", "else", "enum",
	"export", "extends", "finally", "for", "from", "function", "if", "implements",
	"import", "in", "instanceof", "interface", "let", "new", "of", "private", "protected",
	"public", "return", "static", "super", "switch", "this", "throw", "try", "type",
	"typeof", "var", "void", "while", "with", "yield", END };
static const char *const js_lit[] = { "NaN", "false", "null", "true", "undefined", END };
static const char *const py_kw[] = { "and", "as", "assert", "async", "await", "break",
	"class", "continue", "def", "del", "elif", "else", "except", "finally", "for", "from",
	"global", "if", "import", "in", "is", "lambda", "match", "nonlocal", "not", "or",
	"pass", "raise", "return", "try", "while", "with", "yield", END };
static const char *const py_lit[] = { "False", "None", "True", END };
static const char *const sh_kw[] = { "case", "declare", "do", "done", "elif", "else", "esac",
	"exit", "export", "fi", "for", "function", "if", "in", "local", "readonly", "return",
	"select", "then", "until", "while", END };
static const char *const sh_lit[] = { "false", "true", END };
static const char *const ps_kw[] = { "begin", "break", "catch", "class", "continue", "data",
	"do", "dynamicparam", "else", "elseif", "end", "enum", "exit", "filter", "finally",
	"for", "foreach", "function", "if", "in", "param", "process", "return", "switch",
	"throw", "trap", "try", "until", "using", "while", "workflow", END };
static const char *const ps_lit[] = { "$false", "$null", "$true", END };
static const char *const sql_kw[] = { "add", "all", "alter", "and", "as", "asc", "begin",
	"between", "by", "case", "check", "column", "commit", "constraint", "create",
	"database", "default", "delete", "desc", "distinct", "drop", "else", "end", "exists",
	"foreign", "from", "full", "group", "having", "if", "in", "index", "inner", "insert",
	"into", "is", "join", "key", "left", "like", "limit", "not", "on", "or", "order",
	"outer", "primary", "references", "returning", "right", "rollback", "select", "set",
	"table", "then", "transaction", "union", "unique", "update", "values", "view", "when",
	"where", "with", END };
static const char *const sql_lit[] = { "false", "null", "true", END };
static const char *const json_lit[] = { "false", "null", "true", END };
static const char *const yaml_lit[] = { "false", "no", "null", "off", "on", "true", "yes",
	"~", END };

static const struct lang langs[] = {
	{ " c h cpp c++ cc cxx hpp objc ", F_CODE, X_PREPROC | X_CALLS, "//", NULL, "/*", "*/",
	  "\"'", '\\', c_kw, c_lit },
	{ " cs csharp c# ", F_CODE, X_PREPROC | X_CALLS | X_VERBATIM, "//", NULL, "/*", "*/",
	  "\"'", '\\', cs_kw, cs_lit },
	{ " js javascript jsx mjs cjs ts typescript tsx node ", F_CODE, X_CALLS | X_BACKTICK,
	  "//", NULL, "/*", "*/", "\"'`", '\\', js_kw, js_lit },
	{ " py python python3 py3 ", F_CODE, X_TRIPLE | X_CALLS, "#", NULL, NULL, NULL, "\"'",
	  '\\', py_kw, py_lit },
	{ " sh bash shell zsh console shellsession ksh ", F_CODE,
	  X_DOLLAR | X_HASH_WORD | X_RAW_SQ, "#", NULL, NULL, NULL, "\"'", '\\', sh_kw, sh_lit },
	{ " powershell ps1 ps pwsh posh psm1 psd1 ", F_CODE,
	  X_DOLLAR | X_PWSH | X_NOCASE | X_DOUBLED, "#", NULL, "<#", "#>", "\"'", '`', ps_kw,
	  ps_lit },
	{ " sql mysql postgresql postgres psql sqlite tsql plsql ", F_CODE, X_NOCASE | X_DOUBLED,
	  "--", NULL, "/*", "*/", "'\"", 0, sql_kw, sql_lit },
	{ " json jsonc json5 ", F_JSON, 0, "//", NULL, "/*", "*/", "\"", '\\', NULL, json_lit },
	{ " yaml yml ", F_YAML, 0, "#", NULL, NULL, NULL, "\"'", '\\', NULL, yaml_lit },
	{ " xml html htm xhtml svg xaml xsd xsl xslt rss atom plist csproj ps1xml vue ",
	  F_MARKUP, 0, NULL, NULL, "<!--", "-->", "\"'", 0, NULL, NULL },
	{ " css scss less ", F_CSS, 0, NULL, NULL, "/*", "*/", "\"'", '\\', NULL, NULL },
};

int hl_find(const char *name, size_t len)
{
	size_t i, k;
	char word[24];

	if (!len || len + 3 > sizeof(word))
		return -1;
	word[0] = ' ';
	for (k = 0; k < len; k++) {
		char ch = name[k];
		if (ch == ' ' || ch == '\t')
			return -1;
		word[k + 1] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
	}
	word[len + 1] = ' ';
	word[len + 2] = '\0';
	for (i = 0; i < N(langs); i++)
		if (strstr(langs[i].names, word))
			return (int)i;
	return -1;
}

/* ---- output ---------------------------------------------------------------------- */

static void emit(struct buf *out, enum hl cls, const char *s, size_t len)
{
	if (!len)
		return;
	if (cls != HL_NONE) {
		buf_adds(out, "<span class=\"");
		buf_adds(out, class_of[cls]);
		buf_adds(out, "\">");
	}
	buf_add_html(out, s, len);
	if (cls != HL_NONE)
		buf_adds(out, "</span>");
}

/* ---- characters ------------------------------------------------------------------ */

static int is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int is_word(unsigned char c)
{
	return is_alpha(c) || is_digit(c);
}

static int is_blank(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int starts(const char *s, size_t i, size_t len, const char *with)
{
	size_t n = with ? strlen(with) : 0;
	return n && i + n <= len && memcmp(s + i, with, n) == 0;
}

/* Whether word w (n bytes) is in the sorted list v. */
static int listed(const char *const *v, const char *w, size_t n, int nocase)
{
	size_t k;

	if (!v || n > 32)
		return 0;
	for (k = 0; v[k]; k++) {
		int c = nocase ? strncasecmp(v[k], w, n) : strncmp(v[k], w, n);
		if (c == 0 && !v[k][n])
			return 1;
	}
	return 0;
}

/* The end of the line holding s[i] (at its '\n', or len). */
static size_t line_end(const char *s, size_t i, size_t len)
{
	const char *nl = memchr(s + i, '\n', len - i);
	return nl ? (size_t)(nl - s) : len;
}

/* Where close first ends in s[from, len), or len. */
static size_t after(const char *s, size_t from, size_t len, const char *close)
{
	size_t k, n = strlen(close);

	for (k = from; k + n <= len; k++)
		if (s[k] == close[0] && memcmp(s + k, close, n) == 0)
			return k + n;
	return len;
}

/* Where a block comment opened at i closes (after its marker), or len. */
static size_t block_end(const char *s, size_t i, size_t len, const char *open, const char *close)
{
	return after(s, i + strlen(open), len, close);
}

/*
 * Where a string opened by q at i ends (after its closing quote), or len.
 * Strings of one-line languages end at the line's end when left open.
 */
static size_t string_end(const struct lang *l, const char *s, size_t i, size_t len, char q,
			 int one_line)
{
	char esc = (l->x & (X_RAW_SQ | X_PWSH)) && q == '\'' ? 0 : l->escape;
	int doubled = (l->x & X_DOUBLED) != 0;
	size_t k;

	for (k = i + 1; k < len; k++) {
		if (esc && s[k] == esc) {
			k++;
			continue;
		}
		if (s[k] == q) {
			if (doubled && k + 1 < len && s[k + 1] == q) {
				k++;
				continue;
			}
			return k + 1;
		}
		if (one_line && s[k] == '\n')
			return k;
	}
	return len;
}

/* A number at i: digits, hex, a fraction, an exponent, a suffix. */
static size_t number_end(const char *s, size_t i, size_t len)
{
	size_t k = i;

	while (k < len && (is_word((unsigned char)s[k]) || s[k] == '.' ||
			   ((s[k] == '+' || s[k] == '-') && k > i && (s[k - 1] == 'e' || s[k - 1] == 'E') &&
			    !(s[i] == '0' && i + 1 < len && (s[i + 1] == 'x' || s[i + 1] == 'X')))))
		k++;
	return k;
}

/*
 * The token s[i, e) of class cls, after the plain run from *run: written
 * when it has a class (else it joins the run). Returns where to go on: e,
 * or the next byte when no token starts at i.
 */
static size_t take(struct buf *out, const char *s, size_t *run, size_t i, size_t e, enum hl cls)
{
	if (e <= i)
		return i + 1;
	if (cls != HL_NONE) {
		emit(out, HL_NONE, s + *run, i - *run);
		emit(out, cls, s + i, e - i);
		*run = e;
	}
	return e;
}

/* ---- code: C-like, shell, PowerShell, Python, SQL -------------------------------- */

/* PowerShell's Verb-Noun: a capitalized word, '-', a letter. */
static size_t cmdlet_end(const char *s, size_t i, size_t len)
{
	size_t k = i;

	if (!(s[i] >= 'A' && s[i] <= 'Z'))
		return 0;
	while (k < len && is_alpha((unsigned char)s[k]))
		k++;
	if (k + 1 >= len || s[k] != '-' || !is_alpha((unsigned char)s[k + 1]))
		return 0;
	for (k++; k < len && (is_word((unsigned char)s[k]) || s[k] == '-' || s[k] == '.'); k++)
		;
	return k;
}

static void scan_code(struct buf *out, const struct lang *l, const char *s, size_t len)
{
	size_t i = 0, run = 0;
	int line_start = 1;

#define FLUSH() emit(out, HL_NONE, s + run, i - run)
#define TOKEN(cls, end)                                                                           \
	do {                                                                                      \
		size_t e_ = (end);                                                                \
		FLUSH();                                                                          \
		emit(out, (cls), s + i, e_ - i);                                                  \
		i = run = e_;                                                                     \
		line_start = 0;                                                                   \
		goto next;                                                                        \
	} while (0)

	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		unsigned char prev = i ? (unsigned char)s[i - 1] : '\n';

		if (c == '\n') {
			line_start = 1;
			i++;
			continue;
		}
		if (is_blank(c)) {
			i++;
			continue;
		}
		/* meta lines: #include, @decorator */
		if (line_start && c == '#' && (l->x & X_PREPROC))
			TOKEN(HL_META, line_end(s, i, len));
		if (line_start && c == '@' && (l->x & X_TRIPLE)) {
			size_t k = i + 1;
			while (k < len && (is_word((unsigned char)s[k]) || s[k] == '.'))
				k++;
			TOKEN(HL_META, k);
		}
		/* comments */
		if (l->open && starts(s, i, len, l->open))
			TOKEN(HL_COMMENT, block_end(s, i, len, l->open, l->close));
		if ((starts(s, i, len, l->line1) || starts(s, i, len, l->line2)) &&
		    (!(l->x & X_HASH_WORD) || is_blank(prev) || prev == ';'))
			TOKEN(HL_COMMENT, line_end(s, i, len));
		/* strings */
		if ((l->x & X_PWSH) && c == '@' && i + 1 < len && (s[i + 1] == '"' || s[i + 1] == '\'')) {
			/* a here-string: to a line that starts with the quote and '@' */
			char close[4] = { '\n', s[i + 1], '@', 0 };
			TOKEN(HL_STRING, after(s, i + 2, len, close));
		}
		if ((l->x & X_TRIPLE) && (c == '"' || c == '\'') && i + 2 < len && s[i + 1] == (char)c &&
		    s[i + 2] == (char)c) {
			char close[4] = { (char)c, (char)c, (char)c, 0 };
			TOKEN(HL_STRING, after(s, i + 3, len, close));
		}
		if ((l->x & X_VERBATIM) && c == '@' && i + 1 < len && s[i + 1] == '"') {
			size_t k;
			for (k = i + 2; k < len; k++)
				if (s[k] == '"' && !(k + 1 < len && s[k + 1] == '"' && ++k))
					break;
			TOKEN(HL_STRING, k < len ? k + 1 : len);
		}
		if (c && strchr(l->quotes, c) && !(c == '\'' && is_word(prev) && !(l->x & X_NOCASE) &&
						   !(l->x & X_DOLLAR)))
			TOKEN(HL_STRING, string_end(l, s, i, len, (char)c,
						    !(l->x & X_DOLLAR) && c != '`'));
		/* variables */
		if ((l->x & X_DOLLAR) && c == '$' && i + 1 < len) {
			size_t k = i + 1;
			if (s[k] == '{') {
				const char *e = memchr(s + k, '}', line_end(s, k, len) - k);
				k = e ? (size_t)(e - s) + 1 : k + 1;
			} else if (is_alpha((unsigned char)s[k])) {
				while (k < len && (is_word((unsigned char)s[k]) ||
						   ((l->x & X_PWSH) && s[k] == ':' && k + 1 < len &&
						    is_alpha((unsigned char)s[k + 1]))))
					k++;
			} else if (is_digit((unsigned char)s[k]) || strchr("?$!#@*_", s[k])) {
				k++;
			}
			if (k > i + 1) {
				if (listed(l->literals, s + i, k - i, 1))
					TOKEN(HL_LITERAL, k);
				TOKEN(HL_VARIABLE, k);
			}
		}
		/* PowerShell: [type], -Parameter */
		if ((l->x & X_PWSH) && c == '[' && i + 1 < len && is_alpha((unsigned char)s[i + 1])) {
			size_t k = i + 1;
			while (k < len && (is_word((unsigned char)s[k]) || s[k] == '.' || s[k] == '[' ||
					   s[k] == ']' || s[k] == ',') && s[k] != '\n') {
				if (s[k] == ']' && (k + 1 >= len || s[k + 1] != ']'))
					break;
				k++;
			}
			if (k < len && s[k] == ']') {
				FLUSH();
				emit(out, HL_NONE, s + i, 1);
				emit(out, HL_TYPE, s + i + 1, k - i - 1);
				i = run = k;
				line_start = 0;
				continue;
			}
		}
		if ((l->x & X_PWSH) && c == '-' && (is_blank(prev) || prev == '(') && i + 1 < len &&
		    is_alpha((unsigned char)s[i + 1])) {
			size_t k = i + 1;
			while (k < len && is_word((unsigned char)s[k]))
				k++;
			TOKEN(HL_ATTR, k);
		}
		/* numbers */
		if ((is_digit(c) || (c == '.' && i + 1 < len && is_digit((unsigned char)s[i + 1]))) &&
		    !is_word(prev) && prev != '.' && prev != '-')
			TOKEN(HL_NUMBER, number_end(s, i, len));
		/* words */
		if (is_alpha(c) && !is_word(prev) && prev != '$' && prev != '-') {
			size_t k = i, e;
			if ((l->x & X_PWSH) && (e = cmdlet_end(s, i, len)))
				TOKEN(HL_FUNCTION, e);
			while (k < len && is_word((unsigned char)s[k]))
				k++;
			if (listed(l->keywords, s + i, k - i, (l->x & X_NOCASE) != 0) && prev != '.')
				TOKEN(HL_KEYWORD, k);
			if (listed(l->literals, s + i, k - i, (l->x & X_NOCASE) != 0))
				TOKEN(HL_LITERAL, k);
			if ((l->x & X_CALLS) && k < len && s[k] == '(')
				TOKEN(HL_FUNCTION, k);
			i = k;
			line_start = 0;
			continue;
		}
		i++;
		line_start = 0;
next:;
	}
	FLUSH();
#undef TOKEN
#undef FLUSH
}

/* ---- data: JSON, YAML ------------------------------------------------------------- */

static void scan_json(struct buf *out, const struct lang *l, const char *s, size_t len)
{
	size_t i = 0, run = 0;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t e = 0;
		enum hl cls = HL_NONE;

		if (starts(s, i, len, l->open)) {
			e = block_end(s, i, len, l->open, l->close);
			cls = HL_COMMENT;
		} else if (starts(s, i, len, l->line1)) {
			e = line_end(s, i, len);
			cls = HL_COMMENT;
		} else if (c == '"') {
			size_t k;
			e = string_end(l, s, i, len, '"', 1);
			for (k = e; k < len && is_blank((unsigned char)s[k]); k++)
				;
			cls = k < len && s[k] == ':' ? HL_ATTR : HL_STRING;
		} else if ((is_digit(c) || c == '-') && (!i || !is_word((unsigned char)s[i - 1]))) {
			e = number_end(s, c == '-' ? i + 1 : i, len);
			cls = e > i + 1 || is_digit(c) ? HL_NUMBER : HL_NONE;
		} else if (is_alpha(c)) {
			for (e = i; e < len && is_word((unsigned char)s[e]); e++)
				;
			cls = listed(l->literals, s + i, e - i, 0) ? HL_LITERAL : HL_NONE;
		}
		i = take(out, s, &run, i, e, cls);
	}
	emit(out, HL_NONE, s + run, i - run);
}

/* A YAML scalar value s[i, e): a literal or number class, or none. */
static enum hl yaml_scalar(const struct lang *l, const char *s, size_t i, size_t e)
{
	size_t k;

	if (listed(l->literals, s + i, e - i, 1))
		return HL_LITERAL;
	for (k = i; k < e && (is_digit((unsigned char)s[k]) || s[k] == '.' || s[k] == '-' ||
			      s[k] == '+' || s[k] == 'e' || s[k] == 'E' || s[k] == ':'); k++)
		;
	return k == e && e > i && (is_digit((unsigned char)s[i]) || s[i] == '-' || s[i] == '.' ||
				   s[i] == '+') ? HL_NUMBER : HL_NONE;
}

static void scan_yaml(struct buf *out, const struct lang *l, const char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t end = line_end(s, i, len), k = i, e;

		/* indentation and list dashes */
		while (k < end && (s[k] == ' ' || s[k] == '\t' || (s[k] == '-' && k + 1 < end &&
								  s[k + 1] == ' ')))
			k++;
		emit(out, HL_NONE, s + i, k - i);
		if ((end - i == 3 && (starts(s, i, len, "---") || starts(s, i, len, "..."))) ||
		    (k == i && s[k] == '%')) {
			emit(out, HL_META, s + i, end - i);
			k = end;
		}
		/* key: a scalar up to ": " or ":" at the end of the line */
		for (e = k; e < end && s[e] != '#' && s[e] != '"' && s[e] != '\''; e++)
			if (s[e] == ':' && (e + 1 == end || s[e + 1] == ' ' || s[e + 1] == '\t'))
				break;
		if (e < end && s[e] == ':' && e > k) {
			emit(out, HL_ATTR, s + k, e - k);
			k = e;
		} else if (k < end && (s[k] == '"' || s[k] == '\'')) {
			e = string_end(l, s, k, end, s[k], 1);
			for (e = e < end ? e : end; e < end && (s[e] == ' ' || s[e] == '\t'); e++)
				;
			if (e < end && s[e] == ':') {
				emit(out, HL_ATTR, s + k, e - k);
				k = e;
			}
		}
		/* the rest of the line: values, strings, comments */
		while (k < end) {
			size_t run = k;
			unsigned char c = (unsigned char)s[k];

			if (c == '#' && (k == i || is_blank((unsigned char)s[k - 1]))) {
				emit(out, HL_COMMENT, s + k, end - k);
				k = end;
			} else if (c == '"' || c == '\'') {
				e = string_end(l, s, k, end, (char)c, 1);
				emit(out, HL_STRING, s + k, e - k);
				k = e;
			} else if ((c == '&' || c == '*') && k + 1 < end && is_word((unsigned char)s[k + 1])) {
				for (e = k + 1; e < end && !is_blank((unsigned char)s[e]); e++)
					;
				emit(out, HL_VARIABLE, s + k, e - k);
				k = e;
			} else if (c == '!' && (k == i || is_blank((unsigned char)s[k - 1]))) {
				for (e = k + 1; e < end && !is_blank((unsigned char)s[e]); e++)
					;
				emit(out, HL_TYPE, s + k, e - k);
				k = e;
			} else if (!is_blank(c) && c != ':' && c != ',' && c != '[' && c != ']' &&
				   c != '{' && c != '}') {
				for (e = k; e < end && !is_blank((unsigned char)s[e]) && s[e] != ',' &&
					    s[e] != ']' && s[e] != '}';
				     e++)
					;
				emit(out, yaml_scalar(l, s, k, e), s + k, e - k);
				k = e;
			} else {
				emit(out, HL_NONE, s + run, 1);
				k++;
			}
		}
		emit(out, HL_NONE, s + end, end < len ? 1 : 0);
		i = end < len ? end + 1 : len;
	}
}

/* ---- markup: XML, HTML; CSS -------------------------------------------------------- */

static void scan_markup(struct buf *out, const struct lang *l, const char *s, size_t len)
{
	size_t i = 0, run = 0;

	while (i < len) {
		size_t k, e;

		if (starts(s, i, len, l->open)) {
			e = block_end(s, i, len, l->open, l->close);
			emit(out, HL_NONE, s + run, i - run);
			emit(out, HL_COMMENT, s + i, e - i);
			i = run = e;
			continue;
		}
		if (s[i] == '&' && i + 1 < len && (is_alpha((unsigned char)s[i + 1]) || s[i + 1] == '#')) {
			for (e = i + 1; e < len && e < i + 12 && (is_word((unsigned char)s[e]) || s[e] == '#');
			     e++)
				;
			if (e < len && s[e] == ';') {
				emit(out, HL_NONE, s + run, i - run);
				emit(out, HL_LITERAL, s + i, e + 1 - i);
				i = run = e + 1;
				continue;
			}
		}
		if (s[i] != '<' || i + 1 >= len ||
		    !(is_alpha((unsigned char)s[i + 1]) || s[i + 1] == '/' || s[i + 1] == '?' ||
		      s[i + 1] == '!')) {
			i++;
			continue;
		}
		emit(out, HL_NONE, s + run, i - run);
		if (s[i + 1] == '?' || s[i + 1] == '!') { /* <?xml ...?>, <!DOCTYPE ...> */
			const char *gt = memchr(s + i, '>', len - i);
			e = gt ? (size_t)(gt - s) + 1 : len;
			emit(out, HL_META, s + i, e - i);
			i = run = e;
			continue;
		}
		k = i + 1 + (s[i + 1] == '/');
		for (e = k; e < len && (is_word((unsigned char)s[e]) || s[e] == ':' || s[e] == '-' ||
					s[e] == '.');
		     e++)
			;
		emit(out, HL_NONE, s + i, k - i);
		emit(out, HL_TAG, s + k, e - k);
		/* attributes, to the tag's end */
		for (i = e; i < len && s[i] != '>';) {
			unsigned char c = (unsigned char)s[i];
			if (c == '"' || c == '\'') {
				const char *q = memchr(s + i + 1, c, len - i - 1);
				e = q ? (size_t)(q - s) + 1 : len;
				emit(out, HL_STRING, s + i, e - i);
				i = e;
			} else if (is_alpha(c)) {
				for (e = i; e < len && (is_word((unsigned char)s[e]) || s[e] == ':' ||
							s[e] == '-' || s[e] == '.');
				     e++)
					;
				emit(out, HL_ATTR, s + i, e - i);
				i = e;
			} else {
				emit(out, HL_NONE, s + i, 1);
				i++;
			}
		}
		run = i;
	}
	emit(out, HL_NONE, s + run, i - run);
}

static void scan_css(struct buf *out, const struct lang *l, const char *s, size_t len)
{
	size_t i = 0, run = 0;
	int depth = 0;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		unsigned char prev = i ? (unsigned char)s[i - 1] : ' ';
		size_t e = 0;
		enum hl cls = HL_NONE;

		if (starts(s, i, len, l->open)) {
			e = block_end(s, i, len, l->open, l->close);
			cls = HL_COMMENT;
		} else if (c == '"' || c == '\'') {
			e = string_end(l, s, i, len, (char)c, 1);
			cls = HL_STRING;
		} else if (c == '{' || c == '}') {
			depth += c == '{' ? 1 : (depth > 0 ? -1 : 0);
		} else if (c == '@' && i + 1 < len && is_alpha((unsigned char)s[i + 1])) {
			for (e = i + 1; e < len && (is_word((unsigned char)s[e]) || s[e] == '-'); e++)
				;
			cls = HL_KEYWORD;
		} else if (depth > 0 && c == '#' && i + 1 < len && isxdigit((unsigned char)s[i + 1])) {
			for (e = i + 1; e < len && is_word((unsigned char)s[e]); e++)
				;
			cls = HL_NUMBER;
		} else if (depth > 0 && (is_digit(c) || (c == '.' && i + 1 < len &&
							is_digit((unsigned char)s[i + 1]))) &&
			   !is_word(prev) && prev != '-') {
			e = number_end(s, i, len);
			while (e < len && s[e] == '%')
				e++;
			cls = HL_NUMBER;
		} else if (is_alpha(c) || (c == '-' && i + 1 < len && is_alpha((unsigned char)s[i + 1]))) {
			size_t k;
			for (e = i; e < len && (is_word((unsigned char)s[e]) || s[e] == '-'); e++)
				;
			for (k = e; k < len && (s[k] == ' ' || s[k] == '\t'); k++)
				;
			if (is_word(prev) || prev == '-')
				cls = HL_NONE;
			else if (depth > 0 && k < len && s[k] == ':')
				cls = HL_ATTR;
			else if (depth == 0 && prev != '.' && prev != '#' && prev != ':')
				cls = HL_TAG;
		}
		i = take(out, s, &run, i, e, cls);
	}
	emit(out, HL_NONE, s + run, i - run);
}

void hl_write(struct buf *out, int lang, const char *code, size_t len)
{
	const struct lang *l;

	if (lang < 0 || (size_t)lang >= N(langs)) {
		buf_add_html(out, code, len);
		return;
	}
	l = &langs[lang];
	switch (l->family) {
	case F_CODE:
		scan_code(out, l, code, len);
		break;
	case F_JSON:
		scan_json(out, l, code, len);
		break;
	case F_YAML:
		scan_yaml(out, l, code, len);
		break;
	case F_MARKUP:
		scan_markup(out, l, code, len);
		break;
	case F_CSS:
		scan_css(out, l, code, len);
		break;
	}
}
