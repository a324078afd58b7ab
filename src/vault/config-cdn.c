/*
 * config-cdn.c: quire.yml's settings for a cache in front: how long shared
 * caches keep pages (cache:) and where to send purges (purge:).
 *
 *	cache:
 *	  s_maxage: 3600                # Cache-Control s-maxage of every page
 *	  stale_while_revalidate: 60
 *	purge:
 *	  - varnish: http://127.0.0.1:6081
 *	    method: xkey                # or ban (a BAN of the keys, without vmod
 *	                                # xkey), or purge (one PURGE per URL and host)
 *	  - webhook: http://127.0.0.1:9000/purge
 *	    header: "Authorization: Bearer secret"
 *
 * Without cache:, pages say "no-cache" (every use revalidates with the
 * strong ETag), as before. Rejected: a max-age for browsers too (a
 * browser cannot be purged; only shared caches get a lifetime).
 */
#include "vault/config.h"
#include "util/buf.h"
#include "util/xalloc.h"
#include "util/yml.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define FILE_NAME "quire.yml"
#define MAX_SECONDS (365 * 24 * 3600)

static void seconds(int *dst, const struct yml_node *v, const char *key, struct diag_list *diags)
{
	char *end = NULL;
	long n = v->type == YML_SCALAR ? strtol(v->value, &end, 10) : -1;

	if (!end || end == v->value || *end || n < 0 || n > MAX_SECONDS)
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
			 "'%s' must be a number of seconds from 0 to %d", key, MAX_SECONDS);
	else
		*dst = (int)n;
}

static const char *const cache_keys[] = { "s_maxage", "stale_while_revalidate" };

static void load_cache(struct config *cfg, const struct yml_node *v, struct diag_list *diags)
{
	size_t i;

	if (v->type != YML_MAP) {
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
			 "'cache' must be a map (s_maxage, stale_while_revalidate)");
		return;
	}
	for (i = 0; i + 1 < v->nitems; i += 2) {
		const struct yml_node *k = v->items[i], *x = v->items[i + 1];
		const char *name = k->type == YML_SCALAR ? k->value : "";
		if (strcmp(name, "s_maxage") == 0)
			seconds(&cfg->s_maxage, x, name, diags);
		else if (strcmp(name, "stale_while_revalidate") == 0)
			seconds(&cfg->stale_while_revalidate, x, name, diags);
		else
			config_unknown_key(diags, k, "cache setting", cache_keys,
					   sizeof(cache_keys) / sizeof(cache_keys[0]));
	}
}

/* "Name: value": a name of token characters, then a value that can be sent in a header. */
static int header_line_ok(const char *s)
{
	size_t n = strcspn(s, ":");

	if (!n || !s[n])
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("!#$%&'*+-.^_`|~", s[i]))
			return 0;
	return config_header_value_ok(s + n + 1, strlen(s + n + 1));
}

static const char *const purger_keys[] = { "varnish", "webhook", "method", "header" };

/* One item of purge:; 0, or -1 when it is not usable (reported). */
static int load_purger(struct config_purger *p, const struct yml_node *v, struct diag_list *diags)
{
	const struct yml_node *url = NULL, *method = NULL, *header = NULL;
	size_t i;

	if (v->type != YML_MAP) {
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line,
			 "each purger must be a map with varnish: or webhook:");
		return -1;
	}
	p->kind = PURGER_XKEY;
	for (i = 0; i + 1 < v->nitems; i += 2) {
		const struct yml_node *k = v->items[i], *x = v->items[i + 1];
		const char *name = k->type == YML_SCALAR ? k->value : "";
		if (strcmp(name, "varnish") == 0 || strcmp(name, "webhook") == 0) {
			url = x;
			if (name[0] == 'w')
				p->kind = PURGER_WEBHOOK;
		} else if (strcmp(name, "method") == 0) {
			method = x;
		} else if (strcmp(name, "header") == 0) {
			header = x;
		} else {
			config_unknown_key(diags, k, "purger setting", purger_keys,
					   sizeof(purger_keys) / sizeof(purger_keys[0]));
		}
	}
	/* the URL's host and path go into the request line and Host: nothing that ends a line */
	if (!url || url->type != YML_SCALAR || config_check_url(url->value, 0) < 0) {
		diag_add(diags, DIAG_ERROR, FILE_NAME, url ? url->line : v->line,
			 "a purger needs varnish: or webhook: with an http:// URL with no space "
			 "or control character");
		return -1;
	}
	if (method && p->kind != PURGER_WEBHOOK) {
		if (method->type == YML_SCALAR && strcmp(method->value, "purge") == 0)
			p->kind = PURGER_PURGE;
		else if (method->type == YML_SCALAR && strcmp(method->value, "ban") == 0)
			p->kind = PURGER_BAN;
		else if (method->type != YML_SCALAR || strcmp(method->value, "xkey") != 0)
			diag_add(diags, DIAG_ERROR, FILE_NAME, method->line,
				 "method must be xkey, ban or purge");
	}
	if (header && (header->type != YML_SCALAR || !header_line_ok(header->value))) {
		diag_add(diags, DIAG_ERROR, FILE_NAME, header->line,
			 "header must be one \"Name: value\" line");
		header = NULL;
	}
	p->url = xstrdup(url->value);
	p->header = header ? xstrdup(header->value) : NULL;
	return 0;
}

static void load_purge(struct config *cfg, const struct yml_node *v, struct diag_list *diags)
{
	size_t i;

	if (v->type != YML_SEQ) {
		diag_add(diags, DIAG_ERROR, FILE_NAME, v->line, "'purge' must be a list of purgers");
		return;
	}
	for (i = 0; i < v->nitems; i++) {
		struct config_purger p = { PURGER_XKEY, NULL, NULL };
		if (load_purger(&p, v->items[i], diags) < 0)
			continue;
		cfg->purgers = xrealloc(cfg->purgers, (cfg->npurgers + 1) * sizeof(*cfg->purgers));
		cfg->purgers[cfg->npurgers++] = p;
	}
}

int config_load_cdn(struct config *cfg, const char *key, const struct yml_node *v,
		    struct diag_list *diags)
{
	if (strcmp(key, "cache") == 0)
		load_cache(cfg, v, diags);
	else if (strcmp(key, "purge") == 0)
		load_purge(cfg, v, diags);
	else
		return 0;
	return 1;
}

char *config_cache_control(const struct config *cfg)
{
	struct buf b = BUF_INIT;

	if (cfg->s_maxage < 0)
		return NULL;
	/* browsers revalidate every use; shared caches keep it until purged or s-maxage */
	buf_addf(&b, "Cache-Control: public, max-age=0, s-maxage=%d", cfg->s_maxage);
	if (cfg->stale_while_revalidate >= 0)
		buf_addf(&b, ", stale-while-revalidate=%d", cfg->stale_while_revalidate);
	buf_adds(&b, "\r\n");
	return buf_detach(&b, NULL);
}

void config_release_cdn(struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->npurgers; i++) {
		free(cfg->purgers[i].url);
		free(cfg->purgers[i].header);
	}
	free(cfg->purgers);
	cfg->purgers = NULL;
	cfg->npurgers = 0;
}
