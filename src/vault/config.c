/*
 * config.c: quire.yml.
 */
#include "vault/config.h"
#include "util/buf.h"
#include "util/files.h"
#include "util/log.h"
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

	if (strncmp(url, "http://", 7) == 0)
		p = url + 7;
	else if (strncmp(url, "https://", 8) == 0)
		p = url + 8;
	else
		return -1;
	if (!*p || *p == '/')
		return -1;
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

static void load_hosts(struct config *cfg, const struct yml_node *v, struct diag_list *diags)
{
	size_t i, j;

	if (v->type != YML_MAP) {
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
			 "'hosts' must map host names to settings");
		return;
	}
	for (i = 0; i + 1 < v->nitems; i += 2) {
		const struct yml_node *k = v->items[i], *s = v->items[i + 1];
		struct config_host *h;

		if (k->type != YML_SCALAR || !k->value[0]) {
			diag_add(diags, DIAG_ERROR, FILE_NAME, k->line, "bad host name");
			continue;
		}
		cfg->hosts = xrealloc(cfg->hosts, (cfg->nhosts + 1) * sizeof(*cfg->hosts));
		h = &cfg->hosts[cfg->nhosts++];
		memset(h, 0, sizeof(*h));
		h->name = host_normalize(k->value);
		if (yml_is_null(s))
			continue;
		if (s->type != YML_MAP) {
			diag_add(diags, DIAG_ERROR, FILE_NAME, s->line,
				 "settings of host '%s' must be a map", k->value);
			continue;
		}
		for (j = 0; j + 1 < s->nitems; j += 2) {
			const struct yml_node *hk = s->items[j], *hv = s->items[j + 1];
			const char *name = hk->type == YML_SCALAR ? hk->value : "";

			if (strcmp(name, "open") == 0) {
				set_flag(&h->open, hv, "open", diags);
			} else if (strcmp(name, "title") == 0) {
				free(h->title);
				h->title = scalar(hv, "title", diags);
			} else if (strcmp(name, "base_url") == 0) {
				free(h->base_url);
				h->base_url = scalar(hv, "base_url", diags);
			} else {
				diag_add(diags, DIAG_WARNING, FILE_NAME, hk->line,
					 "unknown host setting '%s' (known: open, title, base_url)",
					 name);
			}
		}
	}
}

static void apply(struct config *cfg, const struct yml_node *root, struct diag_list *diags)
{
	size_t i;

	if (root->type != YML_MAP) {
		diag_add(diags, DIAG_ERROR, FILE_NAME, root->line,
			 "quire.yml must be a map of settings");
		return;
	}
	for (i = 0; i + 1 < root->nitems; i += 2) {
		const struct yml_node *k = root->items[i], *v = root->items[i + 1];
		const char *key = k->type == YML_SCALAR ? k->value : "";
		char *s;

		if (strcmp(key, "title") == 0) {
			if ((s = scalar(v, key, diags))) {
				free(cfg->title);
				cfg->title = s;
			}
		} else if (strcmp(key, "base_url") == 0) {
			if ((s = scalar(v, key, diags))) {
				if (s[0] && config_set_base_url(cfg, s) < 0)
					diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
						 "base_url must be an absolute http(s) URL, got '%s'", s);
				free(s);
			}
		} else if (strcmp(key, "language") == 0) {
			if ((s = scalar(v, key, diags))) {
				free(cfg->language);
				cfg->language = s;
			}
		} else if (strcmp(key, "publish") == 0) {
			if (v->type == YML_SCALAR && strcmp(v->value, "all") == 0)
				cfg->publish = PUBLISH_ALL;
			else if (v->type == YML_SCALAR && strcmp(v->value, "explicit") == 0)
				cfg->publish = PUBLISH_EXPLICIT;
			else
				diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
					 "publish must be 'all' or 'explicit'");
		} else if (strcmp(key, "ignore") == 0) {
			load_list(v, key, &cfg->ignore, &cfg->nignore, diags);
		} else if (strcmp(key, "feed_items") == 0) {
			char *end = NULL;
			long n = v->type == YML_SCALAR ? strtol(v->value, &end, 10) : -1;
			if (!end || *end || n < 1 || n > 10000)
				diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
					 "feed_items must be a number from 1 to 10000");
			else
				cfg->feed_items = (int)n;
		} else if (strcmp(key, "max_embeds") == 0) {
			char *end = NULL;
			long n = v->type == YML_SCALAR ? strtol(v->value, &end, 10) : -1;
			if (!end || *end || n < 1 || n > 1000000)
				diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
					 "max_embeds must be a number from 1 to 1000000");
			else
				cfg->max_embeds = (int)n;
		} else if (strcmp(key, "max_embed_size") == 0) {
			size_setting(v, key, &cfg->max_embed_bytes, diags);
		} else if (strcmp(key, "max_note_size") == 0) {
			size_setting(v, key, &cfg->max_note_size, diags);
		} else if (strcmp(key, "csp") == 0) {
			if ((s = scalar(v, key, diags))) {
				if (strpbrk(s, "\r\n")) {
					diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
						 "csp must be one line");
					free(s);
				} else {
					free(cfg->csp);
					cfg->csp = s;
				}
			}
		} else if (strcmp(key, "frame_src") == 0) {
			if ((s = scalar(v, key, diags))) {
				if (strpbrk(s, "\r\n;,")) {
					diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
						 "frame_src must be CSP sources on one line, like "
						 "'https://www.youtube.com https://player.vimeo.com'");
					free(s);
				} else {
					free(cfg->frame_src);
					cfg->frame_src = s;
				}
			}
		} else if (strcmp(key, "strict_line_breaks") == 0) {
			set_flag(&cfg->strict_line_breaks, v, key, diags);
		} else if (strcmp(key, "publish_css") == 0) {
			int on = !cfg->no_site_css;
			set_flag(&on, v, key, diags);
			cfg->no_site_css = !on;
		} else if (strcmp(key, "highlight") == 0) {
			int on = !cfg->plain_code;
			set_flag(&on, v, key, diags);
			cfg->plain_code = !on;
		} else if (strcmp(key, "home") == 0) {
			/* a note's path from the vault's root, ".md" optional, as a link writes it */
			if ((s = scalar(v, key, diags))) {
				struct buf p = BUF_INIT;
				const char *at = s[0] == '/' ? s + 1 : s;
				size_t n = strlen(at);
				buf_adds(&p, at);
				if (n < 3 || strcasecmp(at + n - 3, ".md") != 0)
					buf_adds(&p, ".md");
				free(cfg->home);
				cfg->home = utf8_nfc(p.ptr, p.len);
				buf_release(&p);
				free(s);
			}
		} else if (strcmp(key, "robots") == 0) {
			if ((s = scalar(v, key, diags))) {
				free(cfg->robots);
				cfg->robots = s;
			}
		} else if (strcmp(key, "hosts") == 0) {
			load_hosts(cfg, v, diags);
		} else if (config_load_cdn(cfg, key, v, diags)) {
			;
		} else {
			diag_add(diags, DIAG_WARNING, FILE_NAME, k->line,
				 "unknown setting '%s' (known: title, base_url, language, publish, "
				 "ignore, feed_items, max_embeds, max_embed_size, max_note_size, csp, "
				 "frame_src, "
				 "strict_line_breaks, highlight, home, robots, hosts, cache, purge)",
				 key);
		}
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

int config_load(struct config *cfg, const char *vault, struct diag_list *diags)
{
	struct buf path = BUF_INIT, src = BUF_INIT, err = BUF_INIT;
	struct yml_node *root = NULL;
	int err_line = 0, ret = 0;

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

	buf_addf(&path, "%s/%s", vault, FILE_NAME);
	if (read_file(path.ptr, &src) < 0) {
		if (errno != ENOENT)
			ret = log_error("cannot read %s: %s", path.ptr, strerror(errno));
		goto out;
	}
	root = yml_parse(src.ptr, src.len, 1, &err, &err_line);
	if (!root) {
		if (err.len)
			diag_add(diags, DIAG_ERROR, FILE_NAME, err_line, "invalid YAML: %s", err.ptr);
		goto out;
	}
	apply(cfg, root, diags);
out:
	yml_free(root);
	buf_release(&path);
	buf_release(&src);
	buf_release(&err);
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
