/*
 * unicode.h: UTF-8 validation, normalization and case folding.
 *
 * The only module that includes utf8proc. Names are compared the way
 * Obsidian compares them: NFC (files synced from macOS arrive in NFD) and
 * case-insensitive with full Unicode case folding, not ASCII tolower().
 */
#ifndef QUIRE_UNICODE_H
#define QUIRE_UNICODE_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/*
 * Appends s to out with each invalid UTF-8 sequence replaced by U+FFFD,
 * NUL and other C0 controls except tab, newline and carriage return
 * replaced too, and a leading byte-order mark dropped. Returns the number
 * of replacements; *first_bad_line (if not NULL) gets the 1-based line of
 * the first one, or 0.
 */
size_t utf8_sanitize(const char *s, size_t len, struct buf *out, int *first_bad_line);

/* True when s is valid UTF-8 with no NUL. */
int utf8_valid(const char *s, size_t len);

/* NFC form of s; the caller frees it. s must be valid UTF-8. */
char *utf8_nfc(const char *s, size_t len);
/* Case-folded NFC (NFKC_Casefold is too aggressive): the key for comparing names. */
char *utf8_fold(const char *s, size_t len);
/* Lowercase NFC (for URLs: 'Straße' stays 'straße', unlike folding). */
char *utf8_lower(const char *s, size_t len);

/*
 * Decodes one code point at s (len bytes left) into *cp; returns its length
 * in bytes, or -1 at an invalid sequence.
 */
int utf8_decode(const char *s, size_t len, int32_t *cp);
/* True for letters and digits in any script (Unicode categories L* and N*). */
int unicode_is_alnum(int32_t cp);
int unicode_is_space(int32_t cp);

/* The longest text unicode_distance() compares, in code points. */
#define UNICODE_DISTANCE_CHARS 48
/*
 * s (n bytes of UTF-8) as code points into cp (room for
 * UNICODE_DISTANCE_CHARS): their count, or -1 when there are more or s
 * is not UTF-8.
 */
int utf8_code_points(const char *s, size_t n, int32_t *cp);
/*
 * The optimal string alignment distance of a and b (na, nb code points, at
 * most UNICODE_DISTANCE_CHARS each): how many insertions, deletions,
 * substitutions and swaps of neighbours make one the other; max + 1 once
 * it is above max.
 */
int unicode_distance(const int32_t *a, int na, const int32_t *b, int nb, int max);

#endif
