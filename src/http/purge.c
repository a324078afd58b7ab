/*
 * purge.c: surrogate keys, the purge set of a publish, and the thread
 * that sends it (purge.h says what and why).
 */
#include "http/purge.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TIMEOUT_MS 5000
#define RETRIES 5
#define FIRST_BACKOFF_MS 100
#define KEYS_PER_REQUEST 4000 /* bytes of keys in one xkey-purge header */

/* ---- keys -------------------------------------------------------------------- */

/*
 * A key: tag, then 16 hex digits of a hash of the path, seeded with the
 * host's hash for a custom host's own pages. Computed for every response,
 * so without an allocation.
 */
static void key_of(char tag, const char *host, const char *path, size_t len,
		   char out[PURGE_KEY_SIZE])
{
	uint64_t h = host && *host ? hash64_seeded(path, len, hash64(host, strlen(host)))
				   : hash64(path, len);

	static const char hex[] = "0123456789abcdef";
	int i;

	out[0] = tag;
	for (i = 16; i >= 1; i--, h >>= 4) /* by hand: printf was a percent of a request */
		out[i] = hex[h & 15];
	out[17] = '\0';
}

void purge_key(const char *host, const char *path, size_t len, char out[PURGE_KEY_SIZE])
{
	key_of('p', host, path, len, out);
}

/* " t<hash>" for the tag t[0..len) and each tag above it ("a/b": "a/b" and "a"). */
static void add_tag_key(struct buf *h, const char *t, size_t len)
{
	char k[PURGE_KEY_SIZE];
	size_t i;

	for (i = 1; i <= len; i++) {
		if (i < len && t[i] != '/')
			continue;
		key_of('t', NULL, t, i, k);
		buf_addc(h, ' ');
		buf_add(h, k, PURGE_KEY_SIZE - 1);
	}
}

/*
 * The tag keys of a response: a note's tags (one a line), or the tag whose
 * listing path is (/tags/<tag>, its pages /tags/<tag>/~<hash> and its
 * feed /tags/<tag>/rss.xml; not the index /tags/).
 */
static void add_tag_keys(struct buf *h, const char *path, size_t len, const char *tags)
{
	const char *t = tags, *end;

	while (t && *t) {
		end = strchr(t, '\n');
		add_tag_key(h, t, end ? (size_t)(end - t) : strlen(t));
		t = end ? end + 1 : NULL;
	}
	if (!tags && len > 6 && memcmp(path, "/tags/", 6) == 0) {
		const char *tag = path + 6, *stop = path + len, *p;
		for (p = tag; p + 1 < stop; p++)
			if (p[0] == '/' && p[1] == '~')
				break;
		if (p + 1 >= stop)
			p = stop;
		if (p - tag > 8 && memcmp(p - 8, "/rss.xml", 8) == 0)
			p -= 8;
		if (p > tag)
			add_tag_key(h, tag, (size_t)(p - tag));
	}
}

void purge_add_header(struct buf *h, const char *host, int own, const char *path, size_t len,
		      int note, int not_found, const char *tags)
{
	char k[PURGE_KEY_SIZE];
	const char *slash;

	buf_adds(h, "Surrogate-Key: quire host-");
	buf_adds(h, host ? host : "main");
	purge_key(own ? host : NULL, path, len, k);
	buf_addc(h, ' ');
	buf_add(h, k, PURGE_KEY_SIZE - 1);
	if (not_found && host && !own) {
		/* the host's own page created at this path later must purge it too */
		purge_key(host, path, len, k);
		buf_addc(h, ' ');
		buf_add(h, k, PURGE_KEY_SIZE - 1);
	}
	for (slash = path + len; note && slash > path && slash[-1] != '/'; slash--)
		;
	if (note && slash > path) {
		key_of('f', NULL, path, (size_t)(slash - path), k);
		buf_addc(h, ' ');
		buf_add(h, k, PURGE_KEY_SIZE - 1);
	}
	add_tag_keys(h, path, len, tags);
	if (len >= 12 && memcmp(path, "/_quire/tree", 12) == 0)
		buf_adds(h, " tree");
	if (not_found)
		buf_adds(h, " q404");
	buf_add(h, "\r\n", 2);
}

/* ---- the purge set ------------------------------------------------------------- */

void purge_set_add(struct purge_set *ps, struct map *m, const char *s, size_t len)
{
	char *copy;

	if (map_get(m, s, len))
		return;
	copy = xstrndup(s, len);
	map_put(m, copy, len, copy);
}

static void free_values(struct map *m)
{
	size_t i = 0;
	void *v;

	while (map_next(m, &i, NULL, NULL, &v))
		free(v);
	map_release(m);
}

void purge_set_release(struct purge_set *ps)
{
	free_values(&ps->keys);
	free_values(&ps->urls);
	free_values(&ps->hosts);
	ps->version = 0;
}

struct diff {
	struct purge_set *ps;
	const struct snapshot *now;
	const struct snapshot_host *host; /* NULL: the main table */
};

static void add_url(struct purge_set *ps, const char *origin, const char *prefix,
		    const char *path, size_t len)
{
	struct buf u = BUF_INIT;

	if (!origin || !*origin)
		return; /* no base_url: the main site has no name to purge URLs by */
	buf_adds(&u, origin);
	buf_adds(&u, prefix);
	buf_add_urlpath(&u, path, len);
	purge_set_add(ps, &ps->urls, u.ptr, u.len);
	buf_release(&u);
}

static void add_host(struct purge_set *ps, const char *name)
{
	if (!*name)
		name = "main";
	purge_set_add(ps, &ps->hosts, name, strlen(name));
}

static void changed_main(void *ctx, const char *path, size_t len, const struct page *was,
			 const struct page *now)
{
	struct diff *d = ctx;
	const struct snapshot_hosts *sh = d->now->hosts;
	const struct page *p = now ? now : was;
	char k[PURGE_KEY_SIZE];
	size_t i = 0;
	void *v;

	if (page_same(was, now) || (p->kind == PAGE_ASSET && p->immutable))
		return; /* at a content-hashed URL: never changes (publish.css does) */
	purge_key(NULL, path, len, k);
	purge_set_add(d->ps, &d->ps->keys, k, PURGE_KEY_SIZE - 1);
	add_host(d->ps, "");
	if (!sh)
		return;
	add_url(d->ps, sh->main_origin, sh->prefix, path, len);
	while (map_next(&sh->by_name, &i, NULL, NULL, &v)) {
		const struct snapshot_host *h = v;
		if (h->open || p->kind == PAGE_FILE) {
			add_url(d->ps, h->origin, "", path, len);
			add_host(d->ps, h->name);
		}
	}
}

static void changed_host(void *ctx, const char *path, size_t len, const struct page *was,
			 const struct page *now)
{
	struct diff *d = ctx;
	const struct snapshot_hosts *sh = d->now->hosts;
	char k[PURGE_KEY_SIZE];

	if (page_same(was, now))
		return;
	purge_key(d->host->name, path, len, k);
	purge_set_add(d->ps, &d->ps->keys, k, PURGE_KEY_SIZE - 1);
	add_host(d->ps, d->host->name);
	if (d->host->name[0])
		add_url(d->ps, d->host->origin, "", path, len);
	else if (sh)
		add_url(d->ps, sh->main_origin, sh->prefix, path, len);
}

static void diff_maps(struct diff *d, const struct map *a, const struct map *b)
{
	const char *key;
	size_t i = 0, len;
	void *v;

	while (b && map_next(b, &i, &key, &len, &v)) {
		const struct page *was = a ? map_get(a, key, len) : NULL;
		if (was != v)
			changed_host(d, key, len, was, v);
	}
	i = 0;
	while (a && map_next(a, &i, &key, &len, &v))
		if (!b || !map_get(b, key, len))
			changed_host(d, key, len, v, NULL);
}

static const struct snapshot_host *host_in(const struct snapshot *s, const char *name)
{
	if (!s || !s->hosts)
		return NULL;
	return name[0] ? map_gets(&s->hosts->by_name, name) : s->hosts->main;
}

static void diff_host(struct diff *d, const struct snapshot *was, const struct snapshot *now,
		      const struct snapshot_host *h)
{
	const struct snapshot_host *a = host_in(was, h->name), *b = host_in(now, h->name);
	struct buf key = BUF_INIT;

	d->host = h;
	diff_maps(d, a ? &a->pages : NULL, b ? &b->pages : NULL);
	if (!h->name[0] || (a && b && a->open == b->open && strcmp(a->title, b->title) == 0 &&
			    strcmp(a->origin, b->origin) == 0))
		return;
	/* the host itself changed (quire.yml): its pages rendered on request carry its key */
	buf_addf(&key, "host-%s", h->name);
	purge_set_add(d->ps, &d->ps->keys, key.ptr, key.len);
	add_host(d->ps, h->name);
	buf_release(&key);
}

/* Each host's own pages (routes, its sitemap), in either snapshot. */
static void diff_hosts(struct diff *d, const struct snapshot *was, const struct snapshot *now)
{
	size_t i = 0;
	void *v;

	while (now->hosts && map_next(&now->hosts->by_name, &i, NULL, NULL, &v))
		diff_host(d, was, now, v);
	i = 0;
	while (was && was->hosts && map_next(&was->hosts->by_name, &i, NULL, NULL, &v))
		if (!host_in(now, ((const struct snapshot_host *)v)->name))
			diff_host(d, was, now, v);
	if (now->hosts && now->hosts->main)
		diff_host(d, was, now, now->hosts->main);
	else if (was && was->hosts && was->hosts->main)
		diff_host(d, was, now, was->hosts->main);
}

void purge_set_diff(struct purge_set *ps, const struct snapshot *was, const struct snapshot *now)
{
	struct diff d = { ps, now, NULL };

	if (now->version > ps->version)
		ps->version = now->version;
	snapshot_diff(was, now, changed_main, &d);
	diff_hosts(&d, was, now);
	if (!page_same(was ? was->not_found : NULL, now->not_found))
		purge_set_add(ps, &ps->keys, "q404", 4);
}

/* ---- the thread ------------------------------------------------------------------ */

struct purger {
	struct config_purger *list;
	size_t n;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;      /* queued, or stop */
	pthread_cond_t idle;      /* nothing queued or being sent */
	struct purge_set queued;  /* under lock */
	int has_queued, busy, stop;
	atomic_ullong sets, sent, failed, retried, keys, urls;
};

static void sleep_ms(int ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&t, NULL);
}

static int stopping(struct purger *pg)
{
	int s;

	pthread_mutex_lock(&pg->lock);
	s = pg->stop;
	pthread_mutex_unlock(&pg->lock);
	return s;
}

/* What one purger was sent of a set, for its log line. */
struct tally {
	size_t sent, failed;
};

/* One request, retried with backoff, counted in t: sent when a cache took it, else failed. */
static void send_one(struct purger *pg, struct tally *t, const char *method, const char *url,
		     const char *headers, const char *body, size_t len)
{
	int i, status, backoff = FIRST_BACKOFF_MS;
	struct log_event e;

	for (i = 0; i <= RETRIES; i++) {
		if (i) {
			atomic_fetch_add(&pg->retried, 1);
			sleep_ms(backoff);
			backoff *= 2;
		}
		status = purge_http(method, url, headers, body, len, TIMEOUT_MS);
		if (status >= 200 && status < 300) {
			atomic_fetch_add(&pg->sent, 1);
			t->sent++;
			return;
		}
		if (stopping(pg))
			break;
	}
	atomic_fetch_add(&pg->failed, 1);
	t->failed++;
	log_event_init(&e, LOG_WARN, "purge.failed");
	log_event_str(&e, "method", method);
	log_event_str(&e, "url", url);
	log_event_int(&e, "status", status);
	log_event_int(&e, "attempts", i > RETRIES ? RETRIES + 1 : i + 1);
	log_event_emit(&e, "%s %s failed (last status %d)", method, url, status);
}

static void extra_header(struct buf *h, const struct config_purger *p)
{
	if (p->header) {
		buf_adds(h, p->header);
		buf_add(h, "\r\n", 2);
	}
}

/*
 * xkey: the keys, a few thousand bytes of them a request, in an xkey-purge
 * header. ban: the same keys as one regular expression in a quire-ban
 * header, "(^|[[:blank:]])(k1|k2)([[:blank:]]|$)" (keys are letters, digits
 * and dashes; no space, which would end the argument of Varnish's ban).
 */
static void send_keys(struct purger *pg, struct tally *t, const struct config_purger *p,
		      const struct purge_set *ps)
{
	int ban = p->kind == PURGER_BAN;
	struct buf h = BUF_INIT;
	const char *key;
	size_t i = 0, len, start;
	int more = map_next(&ps->keys, &i, &key, &len, NULL);

	while (more) {
		buf_reset(&h);
		extra_header(&h, p);
		buf_adds(&h, ban ? "quire-ban: (^|[[:blank:]])(" : "xkey-purge: ");
		start = h.len;
		while (more && h.len - start + len < KEYS_PER_REQUEST) {
			if (h.len > start)
				buf_addc(&h, ban ? '|' : ' ');
			buf_add(&h, key, len);
			more = map_next(&ps->keys, &i, &key, &len, NULL);
		}
		buf_adds(&h, ban ? ")([[:blank:]]|$)\r\n" : "\r\n");
		send_one(pg, t, ban ? "BAN" : "PURGE", p->url, h.ptr, NULL, 0);
	}
	buf_release(&h);
}

/* PURGE of each URL at the cache, with the URL's host. */
static void send_urls(struct purger *pg, struct tally *t, const struct config_purger *p,
		      const struct purge_set *ps)
{
	struct buf h = BUF_INIT, target = BUF_INIT;
	const char *url;
	size_t i = 0, len;

	while (map_next(&ps->urls, &i, &url, &len, NULL)) {
		const char *auth = strstr(url, "://"), *path;
		const char *base = p->url + 7;
		if (!auth)
			continue;
		auth += 3;
		path = auth + strcspn(auth, "/");
		if (!host_name_valid(auth, (size_t)(path - auth))) {
			log_warn("purge: a URL whose host cannot be sent as a Host header skipped");
			continue;
		}
		buf_reset(&h);
		buf_reset(&target);
		extra_header(&h, p);
		buf_addf(&h, "Host: %.*s\r\n", (int)(path - auth), auth);
		buf_adds(&target, "http://");
		buf_add(&target, base, strcspn(base, "/"));
		buf_adds(&target, *path ? path : "/");
		send_one(pg, t, "PURGE", target.ptr, h.ptr, NULL, 0);
	}
	buf_release(&h);
	buf_release(&target);
}

static void json_list(struct buf *b, const char *name, const struct map *m)
{
	const char *s;
	size_t i = 0, len;
	int first = 1;

	buf_addf(b, ",\"%s\":[", name);
	while (map_next(m, &i, &s, &len, NULL)) {
		buf_adds(b, first ? "\"" : ",\"");
		buf_add_json(b, s, len);
		buf_addc(b, '"');
		first = 0;
	}
	buf_addc(b, ']');
}

static void send_webhook(struct purger *pg, struct tally *t, const struct config_purger *p,
			 const struct purge_set *ps)
{
	struct buf h = BUF_INIT, body = BUF_INIT;

	extra_header(&h, p);
	buf_adds(&h, "Content-Type: application/json\r\n");
	buf_addf(&body, "{\"version\":%llu", (unsigned long long)ps->version);
	json_list(&body, "hosts", &ps->hosts);
	json_list(&body, "urls", &ps->urls);
	json_list(&body, "keys", &ps->keys);
	buf_adds(&body, "}\n");
	send_one(pg, t, "POST", p->url, h.ptr, body.ptr, body.len);
	buf_release(&h);
	buf_release(&body);
}

static void send_set(struct purger *pg, const struct purge_set *ps)
{
	size_t i;

	atomic_fetch_add(&pg->sets, 1);
	atomic_fetch_add(&pg->keys, ps->keys.len);
	atomic_fetch_add(&pg->urls, ps->urls.len);
	for (i = 0; i < pg->n && !stopping(pg); i++) {
		static const char *const kinds[] = { "xkey", "purge", "ban", "webhook" };
		const struct config_purger *p = &pg->list[i];
		struct tally t = { 0, 0 };
		double t0 = clock_ms();
		struct log_event e;

		if (p->kind == PURGER_XKEY || p->kind == PURGER_BAN)
			send_keys(pg, &t, p, ps);
		else if (p->kind == PURGER_PURGE)
			send_urls(pg, &t, p, ps);
		else
			send_webhook(pg, &t, p, ps);
		/* one line per purger and set: what it was sent, and how it went */
		log_event_init(&e, t.failed ? LOG_WARN : LOG_INFO, "purge.sent");
		log_event_str(&e, "purger", p->url);
		log_event_str(&e, "method", (size_t)p->kind < 4 ? kinds[p->kind] : "?");
		log_event_uint(&e, "version", ps->version);
		log_event_uint(&e, "keys", ps->keys.len);
		log_event_uint(&e, "urls", ps->urls.len);
		log_event_uint(&e, "requests", t.sent + t.failed);
		log_event_uint(&e, "failed", t.failed);
		log_event_ms(&e, "duration_ms", clock_ms() - t0);
		log_event_emit(&e, "%zu key%s, %zu URL%s to %s: %zu request%s, %zu failed",
			       ps->keys.len, ps->keys.len == 1 ? "" : "s", ps->urls.len,
			       ps->urls.len == 1 ? "" : "s", p->url, t.sent + t.failed,
			       t.sent + t.failed == 1 ? "" : "s", t.failed);
	}
}

static void *run(void *arg)
{
	struct purger *pg = arg;

	pthread_mutex_lock(&pg->lock);
	for (;;) {
		struct purge_set ps = PURGE_SET_INIT;
		while (!pg->stop && !pg->has_queued) {
			pg->busy = 0;
			pthread_cond_broadcast(&pg->idle);
			pthread_cond_wait(&pg->wake, &pg->lock);
		}
		if (pg->stop)
			break;
		ps = pg->queued;
		memset(&pg->queued, 0, sizeof(pg->queued));
		pg->has_queued = 0;
		pg->busy = 1;
		pthread_mutex_unlock(&pg->lock);
		if (ps.keys.len || ps.urls.len)
			send_set(pg, &ps);
		purge_set_release(&ps);
		pthread_mutex_lock(&pg->lock);
	}
	pg->busy = 0;
	pthread_cond_broadcast(&pg->idle);
	pthread_mutex_unlock(&pg->lock);
	return NULL;
}

struct purger *purger_new(const struct config_purger *list, size_t n)
{
	struct purger *pg;
	size_t i;

	if (!n)
		return NULL;
	pg = xcalloc(1, sizeof(*pg));
	pg->list = xcalloc(n, sizeof(*pg->list));
	pg->n = n;
	for (i = 0; i < n; i++) {
		pg->list[i].kind = list[i].kind;
		pg->list[i].url = xstrdup(list[i].url);
		pg->list[i].header = list[i].header ? xstrdup(list[i].header) : NULL;
	}
	pthread_mutex_init(&pg->lock, NULL);
	pthread_cond_init(&pg->wake, NULL);
	pthread_cond_init(&pg->idle, NULL);
	if (pthread_create(&pg->thread, NULL, run, pg) != 0) {
		log_error("purge: cannot start the purging thread");
		pg->thread = pthread_self();
		purger_free(pg);
		return NULL;
	}
	return pg;
}

void purger_on_publish(void *arg, const struct snapshot *was, const struct snapshot *now)
{
	struct purger *pg = arg;

	pthread_mutex_lock(&pg->lock);
	purge_set_diff(&pg->queued, was, now);
	if (pg->queued.keys.len || pg->queued.urls.len) {
		pg->has_queued = 1;
		pthread_cond_signal(&pg->wake);
	}
	pthread_mutex_unlock(&pg->lock);
}

void purger_all(struct purger *pg, uint64_t version)
{
	if (!pg)
		return;
	pthread_mutex_lock(&pg->lock);
	purge_set_add(&pg->queued, &pg->queued.keys, "quire", 5);
	purge_set_add(&pg->queued, &pg->queued.hosts, "main", 4);
	if (version > pg->queued.version)
		pg->queued.version = version;
	pg->has_queued = 1;
	pthread_cond_signal(&pg->wake);
	pthread_mutex_unlock(&pg->lock);
}

int purger_wait_idle(struct purger *pg, int timeout_ms)
{
	struct timespec t;
	int ret = 0;

	if (!pg)
		return 0;
	t = clock_deadline(timeout_ms);
	pthread_mutex_lock(&pg->lock);
	while ((pg->has_queued || pg->busy) && ret == 0)
		ret = pthread_cond_timedwait(&pg->idle, &pg->lock, &t);
	pthread_mutex_unlock(&pg->lock);
	return ret ? -1 : 0;
}

void purger_metrics(void *arg, struct buf *b)
{
	struct purger *pg = arg;
	int pending;

	if (!pg)
		return;
	pthread_mutex_lock(&pg->lock);
	pending = pg->has_queued || pg->busy;
	pthread_mutex_unlock(&pg->lock);
	buf_addf(b, "# HELP quire_purge_pending Whether purges are queued or being sent (0 or 1).\n"
		    "# TYPE quire_purge_pending gauge\n"
		    "quire_purge_pending %d\n", pending);
	buf_addf(b, "# HELP quire_purge_sets_total Purge sets sent (a publish, or several queued at once).\n"
		    "# TYPE quire_purge_sets_total counter\n"
		    "quire_purge_sets_total %llu\n"
		    "# HELP quire_purge_requests_total Purge requests, by outcome (after retries).\n"
		    "# TYPE quire_purge_requests_total counter\n"
		    "quire_purge_requests_total{result=\"sent\"} %llu\n"
		    "quire_purge_requests_total{result=\"failed\"} %llu\n"
		    "# HELP quire_purge_retries_total Purge requests sent again after a failure.\n"
		    "# TYPE quire_purge_retries_total counter\n"
		    "quire_purge_retries_total %llu\n"
		    "# HELP quire_purge_keys_total Surrogate keys purged.\n"
		    "# TYPE quire_purge_keys_total counter\n"
		    "quire_purge_keys_total %llu\n"
		    "# HELP quire_purge_urls_total URLs purged.\n"
		    "# TYPE quire_purge_urls_total counter\n"
		    "quire_purge_urls_total %llu\n",
		 (unsigned long long)atomic_load(&pg->sets), (unsigned long long)atomic_load(&pg->sent),
		 (unsigned long long)atomic_load(&pg->failed),
		 (unsigned long long)atomic_load(&pg->retried),
		 (unsigned long long)atomic_load(&pg->keys), (unsigned long long)atomic_load(&pg->urls));
}

void purger_free(struct purger *pg)
{
	size_t i;

	if (!pg)
		return;
	pthread_mutex_lock(&pg->lock);
	pg->stop = 1;
	pthread_cond_signal(&pg->wake);
	pthread_mutex_unlock(&pg->lock);
	if (!pthread_equal(pg->thread, pthread_self()))
		pthread_join(pg->thread, NULL);
	purge_set_release(&pg->queued);
	for (i = 0; i < pg->n; i++) {
		free(pg->list[i].url);
		free(pg->list[i].header);
	}
	free(pg->list);
	pthread_cond_destroy(&pg->wake);
	pthread_cond_destroy(&pg->idle);
	pthread_mutex_destroy(&pg->lock);
	free(pg);
}
