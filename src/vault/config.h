/*
 * config.h: site settings from quire.yml at the vault root.
 *
 *	title: My notes
 *	base_url: https://example.com/notes
 *	language: en
 *	publish: all            # or: explicit
 *	ignore: [templates, "*.excalidraw.md"]
 *	feed_items: 50
 *	robots: |
 *	  User-agent: *
 *	  Disallow: /private/
 *	hosts: {docs.example.com: {open: true, title: Docs}}
 *	cache: {s_maxage: 3600, stale_while_revalidate: 60}
 *	purge:
 *	  - varnish: http://127.0.0.1:6081   # method: xkey (default), ban or purge
 *	  - webhook: http://127.0.0.1:9000/purge
 *	    header: "Authorization: Bearer ..."
 *
 * Every key is optional; flags on the command line override it. The file
 * fails closed: a YAML error, an unknown key (at any level: a typo such as
 * "publsh: explicit" would otherwise publish every note), a key given
 * twice, a value outside its set or range, a host name or URL with a
 * space or a control character (they are sent in headers) make the whole
 * file invalid, each an error with file and line. An invalid file is
 * never half applied: the commands stop (site.c), and a running server
 * keeps the last valid settings (loader.c).
 */
#ifndef QUIRE_CONFIG_H
#define QUIRE_CONFIG_H

#include <stddef.h>

#include "util/buf.h"
#include "util/diag.h"

struct yml_node;

enum publish_mode { PUBLISH_ALL, PUBLISH_EXPLICIT };

struct config_host {
	char *name;        /* lowercased, no port */
	int open;          /* serves any published note, not only its routes */
	char *title;       /* or NULL: the site's */
	char *base_url;    /* or NULL: https://<name> */
};

/* Where quire sends purges when a snapshot goes live (http/purge.h). */
enum purger_kind {
	PURGER_XKEY,       /* Varnish with vmod xkey: PURGE with an xkey-purge header of keys */
	PURGER_PURGE,      /* Varnish: PURGE of each URL that changed, per host */
	PURGER_BAN,        /* Varnish: BAN with a regular expression of the keys (no vmod) */
	PURGER_WEBHOOK,    /* POST of a JSON body: version, hosts, urls, keys */
};

struct config_purger {
	enum purger_kind kind;
	char *url;         /* http://host[:port][/path] */
	char *header;      /* "Name: value" sent with each request, or NULL */
};

struct config {
	char *title;       /* default: the vault folder's name */
	char *base_url;    /* absolute, no trailing slash, or "" */
	char *url_prefix;  /* path part of base_url without trailing slash: "" or "/notes" */
	char *language;    /* default "en" */
	enum publish_mode publish;
	char **ignore;     /* globs matched against vault-relative paths */
	size_t nignore;
	int feed_items;    /* default 50 */
	char *robots;      /* robots.txt body, or NULL for the default */
	int max_embeds;    /* notes one page may embed, nested ones included (default 1000) */
	size_t max_embed_bytes; /* of HTML embedded into one page (default 4 MiB) */
	size_t max_note_size; /* a larger note is not read nor published (default 4 MiB) */
	char *csp;         /* Content-Security-Policy to send instead of quire's, "" for none, or NULL */
	char *frame_src;   /* CSP frame-src in quire's policy (default "https:") */
	int strict_line_breaks; /* 0 (Obsidian's default): a single newline breaks the line */
	int plain_code;         /* highlight: false: code blocks are not highlighted */
	int no_site_css;        /* publish_css: false: pages link no /_quire/publish.css */
	char *home;        /* vault path of the note served at the site's root ("a/Welcome.md"), or NULL */
	struct config_host *hosts;
	size_t nhosts;
	int s_maxage;      /* cache: seconds shared caches keep a page, or -1: no-cache */
	int stale_while_revalidate; /* cache: seconds, or -1 */
	struct config_purger *purgers;
	size_t npurgers;
};

/*
 * Loads <vault>/quire.yml into cfg (all defaults when the file is
 * missing), reporting problems in diags under the path "quire.yml".
 * Returns 0, or -1 when the file exists but cannot be read or is invalid
 * (each reason an error in diags); cfg then holds what could be read and
 * must not be used but to be released. The caller frees cfg with
 * config_release() either way.
 */
int config_load(struct config *cfg, const char *vault, struct diag_list *diags);

/* max_note_size's default: 4 MiB, 48 times the largest note of the real vaults (85 KB). */
#define CONFIG_DEFAULT_MAX_NOTE_SIZE ((size_t)4 << 20)

/*
 * config_load() in two steps: the bytes of <vault>/quire.yml into src
 * ("" when there is none): 0, or -1 (an error in diags)...
 */
int config_read(const char *vault, struct buf *src, struct diag_list *diags);
/* ... then the settings of src (len bytes) into cfg: 0, or -1 when they are invalid. */
int config_parse(struct config *cfg, const char *vault, const char *src, size_t len,
		 struct diag_list *diags);

/*
 * Sets base_url and url_prefix from an absolute URL; returns -1 (and
 * leaves cfg) when config_check_url(url, 1) refuses it.
 */
int config_set_base_url(struct config *cfg, const char *url);

/*
 * 0 when url is http://HOST[/path] (or https:// when https is set) with a
 * host name host_name_valid() takes and a path with no space, control
 * character, '\\', '?' or '#'; else -1.
 */
int config_check_url(const char *url, int https);

/*
 * Whether s[0, len) is a host name as quire takes one, in routes and in
 * quire.yml: letters, digits, '.', '-', a ':port', '[' and ']' for IPv6,
 * and UTF-8; at least one byte. No space or control character, so it can
 * go into a header.
 */
int host_name_valid(const char *s, size_t len);

/* Whether s[0, len) can go into an HTTP header: no control character but tab (no CR, no LF). */
int config_header_value_ok(const char *s, size_t len);

/*
 * Reports the key k of a map as unknown (an error), naming the nearest of
 * the nknown names in known and listing them; what names the kind of key
 * ("setting", "host setting").
 */
void config_unknown_key(struct diag_list *diags, const struct yml_node *k, const char *what,
			const char *const *known, size_t nknown);

/* "1048576", "512K", "64M", "1G" -> bytes in *out: 0, or -1 when s is no such size. */
int config_parse_size(const char *s, size_t *out);

void config_release(struct config *cfg);

/*
 * config-cdn.c: the cache: and purge: sections (key is the section's
 * name). Returns 1 when key was one of them, else 0.
 */
int config_load_cdn(struct config *cfg, const char *key, const struct yml_node *v,
		    struct diag_list *diags);
/* The Cache-Control line of cfg's cache: section, or NULL (no-cache). Free it. */
char *config_cache_control(const struct config *cfg);
void config_release_cdn(struct config *cfg);

/* A host name lowercased, without port or trailing dot. Caller frees. */
char *host_normalize(const char *host);

#endif
