/*
 * live.c: the registry of live-page subscribers, the events of a publish
 * and the heartbeat (live.h says what and why).
 *
 * One mutex guards the registry: subscribes and unsubscribes (loop
 * threads), a publish's fan-out (the loader thread) and the heartbeat
 * (its own thread) each take it once. A publish holds it for the lookups
 * of the paths that changed and the writes to their readers; writes never
 * wait (ops->write hands bytes to the connection's loop). A subscriber
 * has two references: the registry's while it is indexed, the
 * connection's until live_unsubscribe(); ops->close is called by
 * whichever side ends it first, once.
 */
#include "http/live.h"
#include "util/log.h"
#include "util/map.h"
#include "util/xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"

#define DEFAULT_TOTAL 4096
#define DEFAULT_PER_ADDRESS 16
#define DEFAULT_PENDING (64 * 1024)
#define DEFAULT_HEARTBEAT_MS 15000
#define DEFAULT_RETRY_MS 3000
#define MAX_TARGET 4096

/* The subscribers of one (host, path). */
struct live_page {
	char *key;                /* host, NUL, path (the map's key) */
	size_t len;
	struct live_sub *head;
};

/* How many subscribers one client address holds. */
struct live_client {
	char *key;
	size_t n;
};

struct live_sub {
	struct live *lv;
	struct live_sub *prev, *next; /* in page's list */
	struct live_page *page;   /* NULL once no longer indexed */
	struct live_client *client;
	void *conn;
	int refs;                 /* under the registry's lock */
};

struct live {
	struct live_options o;
	struct live_ops ops;
	pthread_mutex_t lock;
	struct map pages;         /* "host\0path" -> struct live_page */
	struct map clients;       /* client key -> struct live_client */
	size_t nsubs;
	uint64_t visits, lookups, events, slow, refused;
	pthread_t thread;
	pthread_cond_t wake;
	int stop;
};

static void *heartbeat_main(void *arg);

struct live *live_new(const struct live_options *o, const struct live_ops *ops)
{
	struct live *lv = xcalloc(1, sizeof(*lv));

	lv->o = *o;
	lv->o.max_total = o->max_total ? o->max_total : DEFAULT_TOTAL;
	lv->o.max_per_address = o->max_per_address ? o->max_per_address : DEFAULT_PER_ADDRESS;
	lv->o.max_pending = o->max_pending ? o->max_pending : DEFAULT_PENDING;
	lv->o.heartbeat_ms = o->heartbeat_ms > 0 ? o->heartbeat_ms : DEFAULT_HEARTBEAT_MS;
	lv->o.retry_ms = o->retry_ms > 0 ? o->retry_ms : DEFAULT_RETRY_MS;
	lv->ops = *ops;
	pthread_mutex_init(&lv->lock, NULL);
	pthread_cond_init(&lv->wake, NULL);
	if (pthread_create(&lv->thread, NULL, heartbeat_main, lv) != 0) {
		log_error("live: cannot start the heartbeat thread");
		pthread_cond_destroy(&lv->wake);
		pthread_mutex_destroy(&lv->lock);
		free(lv);
		return NULL;
	}
	return lv;
}

/* ---- the index ---------------------------------------------------------------- */

/* Drops n references on sub (under the lock). */
static void sub_unref(struct live_sub *sub, int n)
{
	sub->refs -= n;
	if (sub->refs == 0)
		free(sub);
}

/*
 * Takes sub out of the index and ends its stream (under the lock): 1, and
 * the registry's reference is the caller's to drop; 0 when it was out.
 */
static int unindex(struct live *lv, struct live_sub *sub)
{
	struct live_page *pg = sub->page;
	struct live_client *c = sub->client;

	if (!pg)
		return 0;
	if (sub->prev)
		sub->prev->next = sub->next;
	else
		pg->head = sub->next;
	if (sub->next)
		sub->next->prev = sub->prev;
	sub->page = NULL;
	if (!pg->head) {
		map_remove(&lv->pages, pg->key, pg->len);
		free(pg->key);
		free(pg);
	}
	if (--c->n == 0) {
		map_remove(&lv->clients, c->key, strlen(c->key));
		free(c->key);
		free(c);
	}
	sub->client = NULL;
	lv->nsubs--;
	lv->ops.close(sub->conn);
	return 1;
}

/* Ends sub's stream, if it is not over, and drops the registry's reference (under the lock). */
static void close_sub(struct live *lv, struct live_sub *sub)
{
	if (unindex(lv, sub))
		sub_unref(sub, 1);
}

/* Writes b to sub, closing it when it cannot take it (under the lock). */
static void send_to(struct live *lv, struct live_sub *sub, const char *bytes, size_t len)
{
	struct buf b = BUF_INIT;

	buf_add(&b, bytes, len);
	if (lv->ops.write(sub->conn, &b, lv->o.max_pending) < 0) {
		lv->slow++;
		close_sub(lv, sub);
	}
	buf_release(&b);
}

static void page_key(struct buf *k, const char *host, const char *path, size_t len)
{
	buf_reset(k);
	buf_adds(k, host);
	buf_addc(k, '\0');
	buf_add(k, path, len);
}

struct live_sub *live_subscribe(struct live *lv, const char *host, const char *path, size_t len,
				const char *client, const char *etag, void *conn,
				enum live_refusal *why)
{
	struct buf k = BUF_INIT, hello = BUF_INIT;
	struct live_client *c;
	struct live_page *pg;
	struct live_sub *sub = NULL;

	*why = LIVE_OK;
	page_key(&k, host, path, len);
	buf_addf(&hello, "retry: %d\nevent: hello\ndata: %s\n\n", lv->o.retry_ms, etag);
	pthread_mutex_lock(&lv->lock);
	c = map_gets(&lv->clients, client);
	if (lv->nsubs >= lv->o.max_total)
		*why = LIVE_FULL;
	else if (c && *client && c->n >= lv->o.max_per_address) /* "": a trusted proxy's */
		*why = LIVE_FULL_ADDRESS;
	if (*why != LIVE_OK) {
		lv->refused++;
		goto out;
	}
	if (!c) {
		c = xcalloc(1, sizeof(*c));
		c->key = xstrdup(client);
		map_put(&lv->clients, c->key, strlen(c->key), c);
	}
	if (!(pg = map_get(&lv->pages, k.ptr, k.len))) {
		pg = xcalloc(1, sizeof(*pg));
		pg->len = k.len;
		pg->key = buf_detach(&k, NULL);
		map_put(&lv->pages, pg->key, pg->len, pg);
	}
	sub = xcalloc(1, sizeof(*sub));
	sub->lv = lv;
	sub->refs = 2; /* the registry's and the caller's */
	sub->conn = conn;
	sub->page = pg;
	sub->client = c;
	sub->next = pg->head;
	if (pg->head)
		pg->head->prev = sub;
	pg->head = sub;
	c->n++;
	lv->nsubs++;
	lv->ops.start(conn);
	send_to(lv, sub, hello.ptr, hello.len);
out:
	pthread_mutex_unlock(&lv->lock);
	buf_release(&k);
	buf_release(&hello);
	return sub;
}

void live_unsubscribe(struct live_sub *sub)
{
	struct live *lv = sub ? sub->lv : NULL;

	if (!sub)
		return;
	pthread_mutex_lock(&lv->lock);
	sub_unref(sub, unindex(lv, sub) + 1);
	pthread_mutex_unlock(&lv->lock);
}

/* ---- publish ------------------------------------------------------------------ */

struct fanout {
	struct live *lv;
	const struct snapshot *now;
	struct buf key, event;
};

/*
 * The event for the page now at a path (NULL: none) into ev. A redirect's
 * target carries the main site's prefix; strip it for a custom domain,
 * which serves without (NULL: keep it).
 */
static void event_of(struct buf *ev, const struct page *now, const char *strip)
{
	buf_reset(ev);
	if (!now || now->kind == PAGE_NOT_FOUND) {
		buf_adds(ev, "event: gone\ndata: \n\n");
	} else if (now->kind == PAGE_REDIRECT) {
		const char *loc = now->location;
		size_t n = strip ? strlen(strip) : 0;
		if (n && strncmp(loc, strip, n) == 0 && loc[n] == '/')
			loc += n;
		buf_addf(ev, "event: moved\ndata: %s\n\n", loc);
	} else {
		buf_addf(ev, "event: changed\ndata: %s\n\n", now->etag);
	}
}

/* Sends ev to the subscribers of (host, path). */
static void notify(struct fanout *f, const char *host, const char *path, size_t len,
		   const struct page *now, const char *strip)
{
	struct live_page *pg;
	struct live_sub *sub, *next;

	page_key(&f->key, host, path, len);
	f->lv->lookups++;
	if (!(pg = map_get(&f->lv->pages, f->key.ptr, f->key.len)))
		return;
	event_of(&f->event, now, strip);
	for (sub = pg->head; sub; sub = next) {
		next = sub->next; /* send_to may close sub, and free pg with the last */
		f->lv->visits++;
		f->lv->events++;
		send_to(f->lv, sub, f->event.ptr, f->event.len);
	}
}

static void changed(void *ctx, const char *path, size_t len, const struct page *was,
		    const struct page *now)
{
	struct fanout *f = ctx;
	const struct snapshot_hosts *sh = f->now->hosts;
	const struct page *p = now ? now : was;
	size_t i = 0;
	void *v;

	if (page_same(was, now) || p->kind == PAGE_ASSET || p->kind == PAGE_FILE)
		return;
	notify(f, "", path, len, now, NULL);
	while (sh && map_next(&sh->by_name, &i, NULL, NULL, &v)) {
		const struct snapshot_host *h = v;
		const char *routed = map_get(&h->routed, path, len);
		/* a custom domain serves the main site's pages without its prefix */
		if (h->open)
			notify(f, h->name, path, len, now, sh->prefix);
		if (routed)
			notify(f, h->name, routed, strlen(routed), now, sh->prefix);
	}
}

void live_on_publish(void *arg, const struct snapshot *was, const struct snapshot *now)
{
	struct live *lv = arg;
	struct fanout f = { lv, now, BUF_INIT, BUF_INIT };

	pthread_mutex_lock(&lv->lock);
	if (lv->nsubs > 0)
		snapshot_diff(was, now, changed, &f);
	pthread_mutex_unlock(&lv->lock);
	buf_release(&f.key);
	buf_release(&f.event);
}

/* ---- heartbeat ------------------------------------------------------------------ */

void live_heartbeat(struct live *lv)
{
	static const char beat[] = ": \n\n";
	size_t i = 0;
	void *v;

	pthread_mutex_lock(&lv->lock);
	while (map_next(&lv->pages, &i, NULL, NULL, &v)) {
		struct live_page *pg = v;
		struct live_sub *sub = pg->head, *next;
		/* pg may be freed with its last subscriber: the map's entry goes with it */
		for (; sub; sub = next) {
			next = sub->next;
			send_to(lv, sub, beat, sizeof(beat) - 1);
		}
	}
	pthread_mutex_unlock(&lv->lock);
}

static void *heartbeat_main(void *arg)
{
	struct live *lv = arg;

	pthread_mutex_lock(&lv->lock);
	while (!lv->stop) {
		struct timespec until = clock_deadline(lv->o.heartbeat_ms);
		if (pthread_cond_timedwait(&lv->wake, &lv->lock, &until) != ETIMEDOUT || lv->stop)
			continue;
		pthread_mutex_unlock(&lv->lock);
		live_heartbeat(lv);
		pthread_mutex_lock(&lv->lock);
	}
	pthread_mutex_unlock(&lv->lock);
	return NULL;
}

void live_free(struct live *lv)
{
	size_t i = 0;
	void *v;

	if (!lv)
		return;
	pthread_mutex_lock(&lv->lock);
	lv->stop = 1;
	pthread_cond_signal(&lv->wake);
	pthread_mutex_unlock(&lv->lock);
	pthread_join(lv->thread, NULL);
	while (map_next(&lv->pages, &i, NULL, NULL, &v)) {
		struct live_page *pg = v;
		while (pg->head && pg->head->next)
			close_sub(lv, pg->head->next);
		close_sub(lv, pg->head); /* frees pg */
	}
	map_release(&lv->pages);
	map_release(&lv->clients);
	pthread_cond_destroy(&lv->wake);
	pthread_mutex_destroy(&lv->lock);
	free(lv);
}

/* ---- figures -------------------------------------------------------------------- */

void live_stats(struct live *lv, struct live_stats *out)
{
	pthread_mutex_lock(&lv->lock);
	out->subscribers = lv->nsubs;
	out->pages = lv->pages.len;
	out->visits = lv->visits;
	out->lookups = lv->lookups;
	out->events = lv->events;
	out->slow = lv->slow;
	out->refused = lv->refused;
	pthread_mutex_unlock(&lv->lock);
}

void live_metrics(void *arg, struct buf *out)
{
	struct live_stats st;

	live_stats(arg, &st);
	buf_addf(out,
		 "# HELP quire_live_subscribers Open live-page streams.\n"
		 "# TYPE quire_live_subscribers gauge\n"
		 "quire_live_subscribers %zu\n"
		 "# HELP quire_live_events_total Events written to live-page streams.\n"
		 "# TYPE quire_live_events_total counter\n"
		 "quire_live_events_total %llu\n"
		 "# HELP quire_live_closed_slow_total Streams closed for not reading.\n"
		 "# TYPE quire_live_closed_slow_total counter\n"
		 "quire_live_closed_slow_total %llu\n"
		 "# HELP quire_live_refused_total Streams refused at a limit.\n"
		 "# TYPE quire_live_refused_total counter\n"
		 "quire_live_refused_total %llu\n",
		 st.subscribers, (unsigned long long)st.events, (unsigned long long)st.slow,
		 (unsigned long long)st.refused);
}

/* ---- the u= parameter ------------------------------------------------------------ */

int live_parse_target(const char *query, const char *prefix, struct buf *out, const char **why)
{
	const char *q = query, *v = NULL, *end;
	size_t i, n = prefix ? strlen(prefix) : 0;
	struct buf d = BUF_INIT;
	int rc = -1;

	buf_reset(out);
	while (q && *q) {
		if (strncmp(q, "u=", 2) == 0) {
			v = q + 2;
			break;
		}
		q = strchr(q, '&');
		q = q ? q + 1 : NULL;
	}
	if (!v) {
		*why = "no u= parameter: the path of the page to follow";
		return -1;
	}
	end = v + strcspn(v, "&");
	if ((size_t)(end - v) > 3 * MAX_TARGET) {
		*why = "u= is too long";
		return -1;
	}
	if (buf_add_urldecoded(&d, v, (size_t)(end - v), 0) < 0) {
		*why = "u= has an invalid percent-escape";
		goto done;
	}
	*why = "u= is too long";
	if (d.len > MAX_TARGET)
		goto done;
	*why = "u= holds a control byte";
	for (i = 0; i < d.len; i++)
		if ((unsigned char)d.ptr[i] < 0x20 || d.ptr[i] == 0x7f)
			goto done;
	*why = "u= is not a path of this site (it must start with the site's prefix and '/')";
	if (d.len < n || (n && memcmp(d.ptr, prefix, n) != 0))
		goto done;
	if (d.len == n) {
		buf_addc(out, '/');
	} else {
		if (d.ptr[n] != '/')
			goto done;
		buf_add(out, d.ptr + n, d.len - n);
	}
	rc = 0;
	*why = NULL;
done:
	buf_release(&d);
	return rc;
}
