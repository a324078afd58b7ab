/*
 * highlight.h: code blocks highlighted once, when their note is rendered.
 *
 * A fenced code block whose info string names a known language (```ps1,
 * ```bash, ```json...) is written with its tokens in spans: comments,
 * strings, numbers, keywords, literals, variables, types, function and
 * command names, tags, attributes and parameters, meta lines
 * (preprocessor, decorators, document markers). The theme colours them
 * (quire.css, .hl-*); readers run no script for it. Each language is a
 * table for one of a few scanners (C-like, shell, PowerShell, Python,
 * SQL; JSON, YAML, XML/HTML, CSS), each a single pass over the code: the
 * cost is linear in the block, whatever it holds. Unknown languages, and
 * code blocks without one, stay plain.
 *
 *	int lang = hl_find(info, len);      // -1: not one we know
 *	hl_write(out, lang, code, len);     // HTML-escaped, with spans
 */
#ifndef QUIRE_HIGHLIGHT_H
#define QUIRE_HIGHLIGHT_H

#include "util/buf.h"

#include <stddef.h>

/* The language an info string's first word names (case ignored), or -1. */
int hl_find(const char *name, size_t len);

/* Appends code (len bytes) HTML-escaped, its tokens in <span class="hl-*">. */
void hl_write(struct buf *out, int lang, const char *code, size_t len);

#endif
