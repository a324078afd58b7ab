/*
 * unicode.c: utf8proc behind a small interface.
 */
#include "util/unicode.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

int utf8_decode(const char *s, size_t len, int32_t *cp)
{
	utf8proc_int32_t c;
	utf8proc_ssize_t n;

	n = utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &c);
	if (n <= 0)
		return -1;
	*cp = c;
	return (int)n;
}

size_t utf8_sanitize(const char *s, size_t len, struct buf *out, int *first_bad_line)
{
	static const char fffd[] = "\xEF\xBF\xBD";
	size_t bad = 0, i = 0, run = 0;
	int line = 1;

	if (first_bad_line)
		*first_bad_line = 0;
	if (len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
		i = run = 3;
	buf_grow(out, len - i);
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		int n;
		int32_t cp;

		if (c >= 0x20 && c < 0x80) {
			i++;
			continue;
		}
		if (c == '\n') {
			line++;
			i++;
			continue;
		}
		if (c == '\t' || c == '\r') {
			i++;
			continue;
		}
		n = c < 0x20 || c == 0x7f ? -1 : utf8_decode(s + i, len - i, &cp);
		if (c == 0x7f)
			n = 1; /* DEL is valid UTF-8 and harmless */
		if (n > 0) {
			i += (size_t)n;
			continue;
		}
		buf_add(out, s + run, i - run);
		buf_add(out, fffd, 3);
		if (!bad && first_bad_line)
			*first_bad_line = line;
		bad++;
		i++;
		/* skip continuation bytes of the broken sequence */
		while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80)
			i++;
		run = i;
	}
	buf_add(out, s + run, len - run);
	return bad;
}

int utf8_valid(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		int32_t cp;
		int n;

		if (s[i] == '\0')
			return 0;
		if ((unsigned char)s[i] < 0x80) {
			i++;
			continue;
		}
		n = utf8_decode(s + i, len - i, &cp);
		if (n < 0)
			return 0;
		i += (size_t)n;
	}
	return 1;
}

static char *map(const char *s, size_t len, int options)
{
	utf8proc_uint8_t *out = NULL;
	utf8proc_ssize_t n;

	n = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &out,
			 (utf8proc_option_t)(options | UTF8PROC_STABLE | UTF8PROC_COMPOSE));
	if (n < 0) {
		/* invalid input: callers sanitize first, but never crash */
		free(out);
		return xstrndup(s, len);
	}
	return (char *)out;
}

char *utf8_nfc(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len && (unsigned char)s[i] < 0x80; i++)
		;
	if (i == len)
		return xstrndup(s, len);
	return map(s, len, 0);
}

char *utf8_fold(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len && (unsigned char)s[i] < 0x80; i++)
		;
	if (i == len) {
		char *r = xstrndup(s, len);
		for (i = 0; i < len; i++)
			if (r[i] >= 'A' && r[i] <= 'Z')
				r[i] = (char)(r[i] + 32);
		return r;
	}
	return map(s, len, UTF8PROC_CASEFOLD);
}

char *utf8_lower(const char *s, size_t len)
{
	struct buf b = BUF_INIT;
	char *nfc = utf8_nfc(s, len), *p = nfc;
	size_t left = strlen(nfc);

	while (left > 0) {
		int32_t cp;
		int n = utf8_decode(p, left, &cp);
		utf8proc_uint8_t enc[4];
		utf8proc_ssize_t m;

		if (n < 0) {
			buf_addc(&b, *p);
			p++;
			left--;
			continue;
		}
		m = utf8proc_encode_char(utf8proc_tolower(cp), enc);
		buf_add(&b, enc, (size_t)m);
		p += n;
		left -= (size_t)n;
	}
	free(nfc);
	return buf_detach(&b, NULL);
}

int unicode_is_alnum(int32_t cp)
{
	switch (utf8proc_category(cp)) {
	case UTF8PROC_CATEGORY_LU:
	case UTF8PROC_CATEGORY_LL:
	case UTF8PROC_CATEGORY_LT:
	case UTF8PROC_CATEGORY_LM:
	case UTF8PROC_CATEGORY_LO:
	case UTF8PROC_CATEGORY_ND:
	case UTF8PROC_CATEGORY_NL:
	case UTF8PROC_CATEGORY_NO:
	case UTF8PROC_CATEGORY_MN: /* combining marks belong to their letter */
	case UTF8PROC_CATEGORY_MC:
		return 1;
	default:
		return 0;
	}
}

int unicode_is_space(int32_t cp)
{
	if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\f' || cp == '\v')
		return 1;
	return utf8proc_category(cp) == UTF8PROC_CATEGORY_ZS;
}

int utf8_code_points(const char *s, size_t n, int32_t *cp)
{
	size_t i = 0;
	int k = 0;

	while (i < n) {
		int l;

		if (k == UNICODE_DISTANCE_CHARS)
			return -1;
		l = utf8_decode(s + i, n - i, &cp[k]);
		if (l < 1)
			return -1;
		i += (size_t)l;
		k++;
	}
	return k;
}

int unicode_distance(const int32_t *a, int na, const int32_t *b, int nb, int max)
{
	int d[UNICODE_DISTANCE_CHARS + 1][UNICODE_DISTANCE_CHARS + 1];
	int i, j;

	if (abs(na - nb) > max)
		return max + 1;
	for (i = 0; i <= na; i++)
		d[i][0] = i;
	for (j = 0; j <= nb; j++)
		d[0][j] = j;
	for (i = 1; i <= na; i++) {
		int row_min = max + 1;
		for (j = 1; j <= nb; j++) {
			int cost = a[i - 1] != b[j - 1], v = d[i - 1][j - 1] + cost;
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
			if (v < row_min)
				row_min = v;
		}
		if (row_min > max)
			return max + 1;
	}
	return d[na][nb];
}
