/*
 * config.c: quire.yml.
 */
#include "vault/config.h"
#include "util/buf.h"
#include "util/files.h"
#include "util/unicode.h"
#include "util/xalloc.h"
#include "util/yml.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FILE_NAME "quire.yml"

static char *folder_name(const char *vault)
{
	char *abs = realpath(vault, NULL);
	const char *base;
	char *r;

	if (!abs)
		return xstrdup("Notes");
	base = strrchr(abs, '/');
	base = base && base[1] ? base + 1 : "Notes";
	r = xstrdup(base);
	free(abs);
	return r;
}

int config_set_base_url(struct config *cfg, const char *url)
{
	const char *p, *path;
	size_t len = strlen(url);

	if (config_check_url(url, 1) < 0)
		return -1;
	p = url + (url[4] == 's' ? 8 : 7);
	while (len > 0 && url[len - 1] == '/')
		len--;
	free(cfg->base_url);
	free(cfg->url_prefix);
	cfg->base_url = xstrndup(url, len);
	path = strchr(p, '/');
	if (!path || path >= url + len)
		cfg->url_prefix = xstrdup("");
	else
		cfg->url_prefix = xstrndup(path, (size_t)(url + len - path));
	return 0;
}

/* Sets *dst from a true or false, or reports that key wants one (and leaves *dst). */
static void set_flag(int *dst, const struct yml_node *v, const char *key, struct diag_list *diags)
{
	int b = yml_bool(v);

	if (b < 0)
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line, "'%s' must be true or false", key);
	else
		*dst = b;
}

/* Sets *dst from a size of 1K to 1G ("4M"), or reports that key wants one (and leaves *dst). */
static void size_setting(const struct yml_node *v, const char *key, size_t *dst,
			 struct diag_list *diags)
{
	size_t n = 0;

	if (v->type != YML_SCALAR || config_parse_size(v->value, &n) < 0 || n < 1024 ||
	    n > (1 << 30))
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
			 "%s must be a size from 1K to 1G (like 4M)", key);
	else
		*dst = n;
}

static char *scalar(const struct yml_node *v, const char *key, struct diag_list *diags)
{
	if (v->type != YML_SCALAR) {
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line, "'%s' must be a single value", key);
		return NULL;
	}
	return xstrdup(v->value);
}

/* Replaces *dst with the text of v, or reports that key wants text (and leaves *dst). */
static void set_text(char **dst, const struct yml_node *v, const char *key,
		     struct diag_list *diags)
{
	char *s = scalar(v, key, diags);

	if (s) {
		free(*dst);
		*dst = s;
	}
}

/* Sets *dst from a whole number from min to max, or reports that key wants one. */
static void set_number(int *dst, const struct yml_node *v, const char *key, long min, long max,
		       struct diag_list *diags)
{
	char *end = NULL;
	long n = v->type == YML_SCALAR ? strtol(v->value, &end, 10) : -1;

	if (!end || end == v->value || *end || n < min || n > max)
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
			 "%s must be a number from %ld to %ld", key, min, max);
	else
		*dst = (int)n;
}

int config_header_value_ok(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			return 0;
	return 1;
}

/*
 * Replaces *dst with the text of v when it can be sent in a header (no
 * control character, so no CR or LF) and holds none of the bytes of
 * refused; else reports why (and leaves *dst).
 */
static void set_header_text(char **dst, const struct yml_node *v, const char *key,
			    const char *refused, const char *why, struct diag_list *diags)
{
	char *s = scalar(v, key, diags);

	if (!s)
		return;
	if (!config_header_value_ok(s, strlen(s)) || strpbrk(s, refused)) {
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line, "%s", why);
		free(s);
		return;
	}
	free(*dst);
	*dst = s;
}

static void load_list(const struct yml_node *v, const char *key, char ***out, size_t *n,
		      struct diag_list *diags)
{
	size_t i;

	if (v->type == YML_SCALAR) {
		*out = xrealloc(*out, (*n + 1) * sizeof(**out));
		(*out)[(*n)++] = xstrdup(v->value);
		return;
	}
	if (v->type != YML_SEQ) {
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line, "'%s' must be a list", key);
		return;
	}
	for (i = 0; i < v->nitems; i++) {
		const struct yml_node *it = v->items[i];
		if (it->type != YML_SCALAR) {
			diag_add(diags, DIAG_ERROR, FILE_NAME, it->line,
				 "'%s' items must be strings", key);
			continue;
		}
		*out = xrealloc(*out, (*n + 1) * sizeof(**out));
		(*out)[(*n)++] = xstrdup(it->value);
	}
}

void config_unknown_key(struct diag_list *diags, const struct yml_node *k, const char *what,
			const char *const *known, size_t nknown)
{
	int32_t a[UNICODE_DISTANCE_CHARS], b[UNICODE_DISTANCE_CHARS];
	const char *name = k->type == YML_SCALAR ? k->value : "";
	int na = utf8_code_points(name, strlen(name), a), best = -1, best_d = 0;
	struct buf list = BUF_INIT;
	size_t i;

	for (i = 0; i < nknown; i++) {
		int nb = utf8_code_points(known[i], strlen(known[i]), b), d;
		buf_addf(&list, "%s%s", i ? ", " : "", known[i]);
		if (na < 0 || nb < 0)
			continue;
		d = unicode_distance(a, na, b, nb, UNICODE_DISTANCE_CHARS);
		if (best < 0 || d < best_d) {
			best = (int)i;
			best_d = d;
		}
	}
	if (k->type != YML_SCALAR)
		diag_add(diags, DIAG_ERROR, FILE_NAME, k->line,
			 "a %s's name must be text (known: %s)", what, list.ptr);
	else if (best >= 0)
		diag_add(diags, DIAG_ERROR, FILE_NAME, k->line,
			 "unknown %s '%.60s': did you mean '%s'? (known: %s)", what, name,
			 known[best], list.ptr);
	else
		diag_add(diags, DIAG_ERROR, FILE_NAME, k->line, "unknown %s '%.60s' (known: %s)",
			 what, name, list.ptr);
	buf_release(&list);
}

int host_name_valid(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!(c == '.' || c == '-' || c == ':' || c == '[' || c == ']' ||
		      (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      c >= 0x80))
			return 0;
	}
	return len > 0;
}

int config_check_url(const char *url, int https)
{
	const char *p, *q;
	size_t alen;

	if (strncmp(url, "http://", 7) == 0)
		p = url + 7;
	else if (https && strncmp(url, "https://", 8) == 0)
		p = url + 8;
	else
		return -1;
	alen = strcspn(p, "/");
	if (!host_name_valid(p, alen))
		return -1;
	for (q = p + alen; *q; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f || *q == '\\' || *q == '?' || *q == '#')
			return -1;
	return 0;
}

static const char *const host_keys[] = { "open", "title", "base_url" };

static void load_host(struct config_host *h, const struct yml_node *s, struct diag_list *diags)
{
	size_t j;

	if (s->type != YML_MAP) {
		diag_add(diags, DIAG_ERROR, FILE_NAME, s->line,
			 "settings of host '%s' must be a map", h->name);
		return;
	}
	for (j = 0; j + 1 < s->nitems; j += 2) {
		const struct yml_node *hk = s->items[j], *hv = s->items[j + 1];
		const char *name = hk->type == YML_SCALAR ? hk->value : "";

		if (strcmp(name, "open") == 0) {
			set_flag(&h->open, hv, "open", diags);
		} else if (strcmp(name, "title") == 0) {
			set_text(&h->title, hv, "title", diags);
		} else if (strcmp(name, "base_url") == 0) {
			set_text(&h->base_url, hv, "base_url", diags);
			if (h->base_url && config_check_url(h->base_url, 1) < 0) {
				diag_add(diags, DIAG_ERROR, FILE_NAME, hv->line,
					 "base_url of host '%s' must be an absolute http(s) URL with "
					 "no space or control character, got '%.60s'",
					 h->name, h->base_url);
				free(h->base_url);
				h->base_url = NULL;
			}
		} else {
			config_unknown_key(diags, hk, "host setting", host_keys,
					   sizeof(host_keys) / sizeof(host_keys[0]));
		}
	}
}

static void load_hosts(struct config *cfg, const struct yml_node *v, struct diag_list *diags)
{
	size_t i;

	if (v->type != YML_MAP) {
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
			 "'hosts' must map host names to settings");
		return;
	}
	for (i = 0; i + 1 < v->nitems; i += 2) {
		const struct yml_node *k = v->items[i], *s = v->items[i + 1];
		struct config_host *h;

		/* a host name as routes take one (site/hosts.c): it is sent in headers */
		if (k->type != YML_SCALAR || !host_name_valid(k->value, strlen(k->value))) {
			diag_add(diags, DIAG_ERROR, FILE_NAME, k->line,
				 "bad host name '%.60s': a host name holds letters, digits, '.', "
				 "'-' and a ':port'", k->type == YML_SCALAR ? k->value : "");
			continue;
		}
		cfg->hosts = xrealloc(cfg->hosts, (cfg->nhosts + 1) * sizeof(*cfg->hosts));
		h = &cfg->hosts[cfg->nhosts++];
		memset(h, 0, sizeof(*h));
		h->name = host_normalize(k->value);
		if (!h->name[0])
			diag_add(diags, DIAG_ERROR, FILE_NAME, k->line, "bad host name '%.60s'",
				 k->value);
		if (!yml_is_null(s))
			load_host(h, s, diags);
	}
}

static void set_publish(struct config *cfg, const struct yml_node *v, struct diag_list *diags)
{
	if (v->type == YML_SCALAR && strcmp(v->value, "all") == 0)
		cfg->publish = PUBLISH_ALL;
	else if (v->type == YML_SCALAR && strcmp(v->value, "explicit") == 0)
		cfg->publish = PUBLISH_EXPLICIT;
	else
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
			 "publish must be 'all' or 'explicit'");
}

static void set_base_url(struct config *cfg, const struct yml_node *v, struct diag_list *diags)
{
	char *s = scalar(v, "base_url", diags);

	if (s && s[0] && config_set_base_url(cfg, s) < 0)
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
			 "base_url must be an absolute http(s) URL with no space or control "
			 "character, got '%.60s'", s);
	free(s);
}

/* home: a note's path from the vault's root, ".md" optional, as a link writes it. */
static void set_home(struct config *cfg, const struct yml_node *v, struct diag_list *diags)
{
	char *s = scalar(v, "home", diags);
	struct buf p = BUF_INIT;
	const char *at;
	size_t n;

	if (!s)
		return;
	at = s[0] == '/' ? s + 1 : s;
	n = strlen(at);
	buf_adds(&p, at);
	if (n < 3 || strcasecmp(at + n - 3, ".md") != 0)
		buf_adds(&p, ".md");
	free(cfg->home);
	cfg->home = utf8_nfc(p.ptr, p.len);
	buf_release(&p);
	free(s);
}

/* The top-level settings, in the order the message about an unknown one lists them. */
static const char *const settings[] = {
	"title", "base_url", "language", "publish", "ignore", "feed_items", "max_embeds",
	"max_embed_size", "max_note_size", "csp", "frame_src", "strict_line_breaks", "highlight", "publish_css",
	"home", "robots", "hosts", "cache", "purge",
};

/* One top-level setting; 1 when key is one, else 0. */
static int apply_setting(struct config *cfg, const char *key, const struct yml_node *v,
			 struct diag_list *diags)
{
	int on;

	if (strcmp(key, "title") == 0) {
		set_text(&cfg->title, v, key, diags);
	} else if (strcmp(key, "base_url") == 0) {
		set_base_url(cfg, v, diags);
	} else if (strcmp(key, "language") == 0) {
		set_text(&cfg->language, v, key, diags);
	} else if (strcmp(key, "publish") == 0) {
		set_publish(cfg, v, diags);
	} else if (strcmp(key, "ignore") == 0) {
		load_list(v, key, &cfg->ignore, &cfg->nignore, diags);
	} else if (strcmp(key, "feed_items") == 0) {
		set_number(&cfg->feed_items, v, key, 1, 10000, diags);
	} else if (strcmp(key, "max_embeds") == 0) {
		set_number(&cfg->max_embeds, v, key, 1, 1000000, diags);
	} else if (strcmp(key, "max_embed_size") == 0) {
		size_setting(v, key, &cfg->max_embed_bytes, diags);
	} else if (strcmp(key, "max_note_size") == 0) {
		size_setting(v, key, &cfg->max_note_size, diags);
	} else if (strcmp(key, "csp") == 0) {
		set_header_text(&cfg->csp, v, key, "", "csp must be one line of text", diags);
	} else if (strcmp(key, "frame_src") == 0) {
		set_header_text(&cfg->frame_src, v, key, ";,",
				"frame_src must be CSP sources on one line, like "
				"'https://www.youtube.com https://player.vimeo.com'", diags);
	} else if (strcmp(key, "strict_line_breaks") == 0) {
		set_flag(&cfg->strict_line_breaks, v, key, diags);
	} else if (strcmp(key, "publish_css") == 0) {
		on = !cfg->no_site_css;
		set_flag(&on, v, key, diags);
		cfg->no_site_css = !on;
	} else if (strcmp(key, "highlight") == 0) {
		on = !cfg->plain_code;
		set_flag(&on, v, key, diags);
		cfg->plain_code = !on;
	} else if (strcmp(key, "home") == 0) {
		set_home(cfg, v, diags);
	} else if (strcmp(key, "robots") == 0) {
		set_text(&cfg->robots, v, key, diags);
	} else if (strcmp(key, "hosts") == 0) {
		load_hosts(cfg, v, diags);
	} else {
		return config_load_cdn(cfg, key, v, diags);
	}
	return 1;
}

static void apply(struct config *cfg, const struct yml_node *root, struct diag_list *diags)
{
	const struct yml_node *again, *first;
	size_t i;

	if (root->type != YML_MAP) {
		diag_add(diags, DIAG_ERROR, FILE_NAME, root->line,
			 "quire.yml must be a map of settings");
		return;
	}
	if ((again = yml_repeated_key(root, &first)))
		diag_add(diags, DIAG_ERROR, FILE_NAME, again->line,
			 "'%.60s' is given again (first on line %d)", again->value, first->line);
	for (i = 0; i + 1 < root->nitems; i += 2) {
		const struct yml_node *k = root->items[i], *v = root->items[i + 1];

		if (k->type != YML_SCALAR || !apply_setting(cfg, k->value, v, diags))
			config_unknown_key(diags, k, "setting", settings,
					   sizeof(settings) / sizeof(settings[0]));
	}
}

int config_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10), mult = 1;

	if (end == s || s[0] == '-')
		return -1;
	if (*end == 'k' || *end == 'K')
		mult = 1024ULL;
	else if (*end == 'm' || *end == 'M')
		mult = 1024ULL * 1024;
	else if (*end == 'g' || *end == 'G')
		mult = 1024ULL * 1024 * 1024;
	else if (*end)
		return -1;
	if (*end && end[1])
		return -1;
	if (v == 0 || v > (1ULL << 40) / mult)
		return -1;
	*out = (size_t)(v * mult);
	return 0;
}

int config_read(const char *vault, struct buf *src, struct diag_list *diags)
{
	struct buf path = BUF_INIT;
	int ret = 0;

	buf_reset(src);
	buf_addf(&path, "%s/%s", vault, FILE_NAME);
	if (read_file(path.ptr, src) < 0) {
		if (errno != ENOENT) {
			diag_add(diags, DIAG_ERROR, FILE_NAME, 0, "cannot read %s: %s", path.ptr,
				 strerror(errno));
			ret = -1;
		}
		buf_reset(src);
	}
	buf_release(&path);
	return ret;
}

int config_parse(struct config *cfg, const char *vault, const char *src, size_t len,
		 struct diag_list *diags)
{
	struct buf err = BUF_INIT;
	struct yml_node *root;
	size_t errors = diags->nerrors;
	int err_line = 0;

	memset(cfg, 0, sizeof(*cfg));
	cfg->title = folder_name(vault);
	cfg->base_url = xstrdup("");
	cfg->url_prefix = xstrdup("");
	cfg->language = xstrdup("en");
	cfg->feed_items = 50;
	cfg->max_embeds = 1000;
	cfg->max_embed_bytes = 4 << 20;
	cfg->max_note_size = CONFIG_DEFAULT_MAX_NOTE_SIZE;
	cfg->frame_src = xstrdup("https:");
	cfg->s_maxage = -1;
	cfg->stale_while_revalidate = -1;

	root = yml_parse(src, len, 1, &err, &err_line);
	if (root)
		apply(cfg, root, diags);
	else if (err.len)
		diag_add(diags, DIAG_ERROR, FILE_NAME, err_line, "invalid YAML: %s", err.ptr);
	yml_free(root);
	buf_release(&err);
	return diags->nerrors > errors ? -1 : 0;
}

int config_load(struct config *cfg, const char *vault, struct diag_list *diags)
{
	struct buf src = BUF_INIT;
	int ret = config_read(vault, &src, diags);

	if (config_parse(cfg, vault, src.ptr, src.len, diags) < 0)
		ret = -1;
	buf_release(&src);
	return ret;
}

void config_release(struct config *cfg)
{
	size_t i;

	if (!cfg)
		return;
	free(cfg->title);
	free(cfg->base_url);
	free(cfg->url_prefix);
	free(cfg->language);
	for (i = 0; i < cfg->nignore; i++)
		free(cfg->ignore[i]);
	free(cfg->ignore);
	free(cfg->robots);
	free(cfg->csp);
	free(cfg->frame_src);
	free(cfg->home);
	for (i = 0; i < cfg->nhosts; i++) {
		free(cfg->hosts[i].name);
		free(cfg->hosts[i].title);
		free(cfg->hosts[i].base_url);
	}
	free(cfg->hosts);
	config_release_cdn(cfg);
	memset(cfg, 0, sizeof(*cfg));
}

char *host_normalize(const char *host)
{
	struct buf h = BUF_INIT;
	const char *p;

	for (p = host; *p && *p != '/'; p++) {
		if (*p == ':' && host[0] != '[')
			break;
		buf_addc(&h, (*p >= 'A' && *p <= 'Z') ? *p + 32 : *p);
		if (*p == ']')
			break;
	}
	while (h.len && h.ptr[h.len - 1] == '.')
		buf_setlen(&h, h.len - 1);
	return buf_detach(&h, NULL);
}
