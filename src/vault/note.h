/*
 * note.h: one note's metadata, read from its frontmatter.
 *
 * note_parse() splits the YAML frontmatter from the body and reads the keys
 * quire understands: title, description, aliases, tags, date/created,
 * updated, draft, publish, slug, cssclasses, route/routes. Other keys are
 * the author's business and are ignored. YAML merge keys ("<<") count
 * (yml.h). A malformed block is reported with its line and the note is
 * still published from its body, unless draft or publish cannot be read
 * for certain: those fail closed (a value that is not a plain true/false,
 * a key given twice, a line naming the key that YAML did not read as it,
 * and any line naming either key, at any indentation, in a block that is
 * not valid YAML or not closed), keeping the note private with an error
 * naming the line.
 */
#ifndef QUIRE_NOTE_H
#define QUIRE_NOTE_H

#include <stddef.h>
#include <time.h>

#include "util/buf.h"
#include "util/diag.h"

struct strlist {
	char **v;
	size_t n;
};

struct note {
	char *path;          /* vault-relative, NFC: "folder/My Note.md" */
	char *name;          /* file name without ".md": "My Note" */
	char *title;         /* frontmatter title, or name */
	char *description;   /* or NULL */
	struct strlist aliases;
	struct strlist tags; /* frontmatter tags without '#' */
	char *created;       /* "YYYY-MM-DD" from date/created, or NULL */
	char *updated;       /* "YYYY-MM-DD", or NULL */
	int draft;           /* draft: true */
	int publish;         /* publish: -1 unset, 0 false, 1 true */
	char *slug;          /* or NULL */
	struct strlist cssclasses;
	struct strlist routes;
	int routes_line;     /* line of route/routes, for diagnostics */
	char *body;          /* the Markdown after the frontmatter, sanitized UTF-8 */
	size_t body_len;
	int body_line;       /* line of the file where body starts (1-based) */
	time_t mtime;
};

/*
 * Fills n (zeroed by the caller) from the file's bytes src. Invalid UTF-8
 * and control characters are replaced (reported), frontmatter parsed,
 * problems added to diags under path. Never fails: a broken note still
 * yields a body. The caller frees with note_release().
 */
void note_parse(struct note *n, const char *path, const char *src, size_t len, time_t mtime,
		struct diag_list *diags);

void note_release(struct note *n);

/* Frees the body once it has been rendered. */
void note_drop_body(struct note *n);

/* 1 when the note is published under the given mode (see config.h). */
int note_is_published(const struct note *n, int explicit_mode);

void note_strlist_add(struct strlist *l, const char *s);
void note_strlist_release(struct strlist *l);

#endif
