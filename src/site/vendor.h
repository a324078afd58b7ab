/*
 * vendor.h: what readers are served besides the theme: KaTeX (math) and
 * Mermaid (diagrams), compiled into the binary from the packages vendor/
 * pins, by scripts/embed-vendor.py, and served under /_quire/vendor/ to
 * the pages that need them (docs/design.md, "Math and diagrams").
 */
#ifndef QUIRE_VENDOR_H
#define QUIRE_VENDOR_H

#include <stddef.h>

struct vendor_file {
	const char *name;  /* "katex-0.16.22/katex.min.js": package-version/file */
	const char *gz;    /* the file gzipped (level 9) */
	size_t gz_len;
	size_t len;        /* the file's own length */
};

/* Terminated by an entry whose name is NULL. */
extern const struct vendor_file vendor_files[];

#endif
