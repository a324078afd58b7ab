/*
 * dav-locks.c: WebDAV write locks (RFC 4918 §6, §9.10) and the If header
 * (§10.4).
 *
 * Locks live in memory, in one array under a mutex, and are dropped when
 * their timeout passes (looked at lazily, whenever the array is). A
 * restart ends them: a client holding one gets 412 on its next
 * conditional request and locks again. Rejected: keeping them in the data
 * folder (a lock is a lease with a timeout of minutes; editors refresh
 * or retake them; a lock surviving a crash mostly locks out its owner).
 *
 * A lock covers its root and, with Depth: infinity, everything under it.
 * Two locks conflict when one covers the other's root (or the other's
 * tree holds it) and either is exclusive. A write needs the token of
 * every lock covering what it changes.
 *
 * Tokens are "opaquelocktoken:" and a random UUID (getrandom()).
 */
#include "sync/dav.h"
#include "sync/dav-int.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

struct dav_locks {
	pthread_mutex_t lock;
	struct dav_lock *v;
	size_t n, alloc;
};

struct dav_locks *dav_locks_new(void)
{
	struct dav_locks *l = xcalloc(1, sizeof(*l));

	pthread_mutex_init(&l->lock, NULL);
	return l;
}

void dav_lock_release(struct dav_lock *k)
{
	if (!k)
		return;
	free(k->path);
	free(k->owner);
	k->path = k->owner = NULL;
}

void dav_locks_free(struct dav_locks *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		dav_lock_release(&l->v[i]);
	free(l->v);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

static void copy_lock(struct dav_lock *to, const struct dav_lock *from)
{
	*to = *from;
	to->path = xstrdup(from->path);
	to->owner = from->owner ? xstrdup(from->owner) : NULL;
}

/* Whether lock k covers path. */
static int covers(const struct dav_lock *k, const char *path)
{
	return strcmp(k->path, path) == 0 || (k->infinite && dav_path_under(path, k->path));
}

/* Drops the locks whose time is up (under the lock). */
static void expire(struct dav_locks *l)
{
	time_t now = time(NULL);
	size_t i;

	for (i = 0; i < l->n;) {
		if (l->v[i].expires <= now) {
			dav_lock_release(&l->v[i]);
			l->v[i] = l->v[--l->n];
		} else {
			i++;
		}
	}
}

static void new_token(char out[DAV_TOKEN_SIZE])
{
	unsigned char r[16];

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		/* no entropy: tokens need only be unique, not secret */
		struct timespec ts;
		static unsigned counter;
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf((char *)r, sizeof(r), "%lx%x", (long)ts.tv_nsec, counter++);
	}
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	snprintf(
	    out, DAV_TOKEN_SIZE,
	    "opaquelocktoken:%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	    r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
	    r[14], r[15]);
}

int dav_locks_add(struct dav_locks *l, const char *path, int infinite, int shared,
		  const char *owner, long timeout, struct dav_lock *out)
{
	struct dav_lock k;
	size_t i;

	pthread_mutex_lock(&l->lock);
	expire(l);
	for (i = 0; i < l->n; i++) {
		const struct dav_lock *o = &l->v[i];
		int overlap = covers(o, path) || (infinite && dav_path_under(o->path, path));
		if (overlap && (!shared || !o->shared)) {
			pthread_mutex_unlock(&l->lock);
			return 423;
		}
	}
	memset(&k, 0, sizeof(k));
	new_token(k.token);
	k.path = xstrdup(path);
	k.infinite = infinite;
	k.shared = shared;
	k.owner = owner ? xstrdup(owner) : NULL;
	k.timeout = timeout;
	k.expires = time(NULL) + timeout;
	ALLOC_GROW(l->v, l->n + 1, l->alloc);
	l->v[l->n++] = k;
	copy_lock(out, &k);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

int dav_locks_refresh(struct dav_locks *l, const char *path, const char *token, long timeout,
		      struct dav_lock *out)
{
	size_t i;
	int rc = -1;

	pthread_mutex_lock(&l->lock);
	expire(l);
	for (i = 0; i < l->n; i++) {
		struct dav_lock *k = &l->v[i];
		if (strcmp(k->token, token) == 0 && covers(k, path)) {
			k->timeout = timeout;
			k->expires = time(NULL) + timeout;
			copy_lock(out, k);
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&l->lock);
	return rc;
}

void dav_locks_drop(struct dav_locks *l, const char *path)
{
	size_t i;

	pthread_mutex_lock(&l->lock);
	for (i = 0; i < l->n;) {
		if (dav_path_under(l->v[i].path, path)) {
			dav_lock_release(&l->v[i]);
			l->v[i] = l->v[--l->n];
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&l->lock);
}

int dav_locks_remove(struct dav_locks *l, const char *path, const char *token)
{
	size_t i;
	int rc = -1;

	pthread_mutex_lock(&l->lock);
	expire(l);
	for (i = 0; i < l->n; i++) {
		if (strcmp(l->v[i].token, token) == 0 && covers(&l->v[i], path)) {
			dav_lock_release(&l->v[i]);
			l->v[i] = l->v[--l->n];
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&l->lock);
	return rc;
}

size_t dav_locks_covering(struct dav_locks *l, const char *path, struct dav_lock **out)
{
	size_t i, n = 0;

	pthread_mutex_lock(&l->lock);
	expire(l);
	*out = xcalloc(l->n + 1, sizeof(**out));
	for (i = 0; i < l->n; i++)
		if (covers(&l->v[i], path))
			copy_lock(&(*out)[n++], &l->v[i]);
	pthread_mutex_unlock(&l->lock);
	return n;
}

void dav_locks_list_free(struct dav_lock *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		dav_lock_release(&v[i]);
	free(v);
}

static int submitted(const char *token, char *const *tokens, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(tokens[i], token) == 0)
			return 1;
	return 0;
}

int dav_locks_may_write(struct dav_locks *l, const char *path, int tree, char *const *tokens,
			size_t n, struct buf *locked)
{
	size_t i;
	int rc = 0;

	pthread_mutex_lock(&l->lock);
	expire(l);
	for (i = 0; i < l->n && !rc; i++) {
		const struct dav_lock *k = &l->v[i];
		if ((covers(k, path) || (tree && dav_path_under(k->path, path))) &&
		    !submitted(k->token, tokens, n)) {
			rc = 423;
			if (locked) {
				buf_reset(locked);
				buf_adds(locked, k->path);
			}
		}
	}
	pthread_mutex_unlock(&l->lock);
	return rc;
}

/* ---- the If header ---- */

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* The text between open and close at *p (which is at open) into out; -1 when unclosed. */
static int delimited(const char **p, char close, struct buf *out)
{
	const char *end = strchr(*p + 1, close);

	if (!end)
		return -1;
	buf_reset(out);
	buf_add(out, *p + 1, (size_t)(end - *p - 1));
	*p = end + 1;
	return 0;
}

/*
 * One list "( conditions )" at *p, for path (may be NULL).
 *
 * A list the header's end cuts off (an unclosed "(", "<" or "[") is kept
 * as broken: it never holds, whatever its conditions, and the state
 * tokens read before the cut still count as submitted. Why: litmus 0.13
 * (through neon) formats its If headers into a 200-byte buffer, and a
 * SHA-256 entity tag pushes the last list of its complex conditions past
 * it. Treating the cut list as false can only refuse a write (412), never
 * let through one that the whole header would have refused.
 */
static int parse_list(const char **p, struct if_header *h, const char *path)
{
	struct if_list *li;
	struct buf v = BUF_INIT;
	const char *s = *p + 1;
	size_t alloc = 0;
	int rc = -1;

	h->lists = xrealloc(h->lists, (h->n + 1) * sizeof(*h->lists));
	li = &h->lists[h->n++];
	memset(li, 0, sizeof(*li));
	li->path = path ? xstrdup(path) : NULL;
	for (;;) {
		struct if_cond c;
		memset(&c, 0, sizeof(c));
		s = skip_ws(s);
		if (*s == ')') {
			s++;
			break;
		}
		if (strncmp(s, "Not", 3) == 0) {
			c.not = 1;
			s = skip_ws(s + 3);
		}
		if (!*s || ((*s == '<' || *s == '[') && !strchr(s + 1, *s == '<' ? '>' : ']'))) {
			li->broken = 1;
			s += strlen(s);
			break;
		}
		if (*s == '<') {
			if (delimited(&s, '>', &v) < 0)
				goto out;
			h->tokens = xrealloc(h->tokens, (h->ntokens + 1) * sizeof(*h->tokens));
			h->tokens[h->ntokens++] = xstrdup(v.ptr ? v.ptr : "");
		} else if (*s == '[') {
			if (delimited(&s, ']', &v) < 0)
				goto out;
			c.etag = 1;
		} else {
			goto out;
		}
		c.value = xstrdup(v.ptr ? v.ptr : "");
		ALLOC_GROW(li->conds, li->n + 1, alloc);
		li->conds[li->n++] = c;
	}
	if (li->n == 0 && !li->broken)
		goto out;
	*p = s;
	rc = 0;
out:
	buf_release(&v);
	return rc;
}

int dav_if_parse(const char *v, struct if_header *h,
		 int (*resolve)(void *ctx, const char *url, struct buf *out), void *ctx)
{
	struct buf tag = BUF_INIT, path = BUF_INIT;
	const char *p = v;
	int tagged = -1, have_path = 0, rc = -1;

	memset(h, 0, sizeof(*h));
	for (;;) {
		p = skip_ws(p);
		if (!*p)
			break;
		if (*p == '<') {
			if (tagged == 0 || delimited(&p, '>', &tag) < 0)
				goto out;
			tagged = 1;
			buf_reset(&path);
			/* a resource outside /dav/ matches nothing here: its lists are false */
			have_path = resolve(ctx, tag.ptr ? tag.ptr : "", &path) == 0;
			if (!have_path)
				buf_adds(&path, "\x01");
			p = skip_ws(p);
			if (*p != '(')
				goto out;
		} else if (*p == '(') {
			if (tagged < 0)
				tagged = 0;
			if (parse_list(&p, h, tagged ? path.ptr : NULL) < 0)
				goto out;
		} else {
			goto out;
		}
	}
	rc = h->n ? 0 : -1;
out:
	buf_release(&tag);
	buf_release(&path);
	return rc;
}

void dav_if_release(struct if_header *h)
{
	size_t i, j;

	for (i = 0; i < h->n; i++) {
		for (j = 0; j < h->lists[i].n; j++)
			free(h->lists[i].conds[j].value);
		free(h->lists[i].conds);
		free(h->lists[i].path);
	}
	free(h->lists);
	for (i = 0; i < h->ntokens; i++)
		free(h->tokens[i]);
	free(h->tokens);
	memset(h, 0, sizeof(*h));
}

/* Whether a live lock with token covers path. */
static int token_holds(struct dav_locks *l, const char *path, const char *token)
{
	size_t i;
	int found = 0;

	pthread_mutex_lock(&l->lock);
	expire(l);
	for (i = 0; i < l->n && !found; i++)
		found = strcmp(l->v[i].token, token) == 0 && covers(&l->v[i], path);
	pthread_mutex_unlock(&l->lock);
	return found;
}

/* Entity tags compared strongly; a weak one ("W/") never matches. */
static int etag_holds(const char *path, const char *tag,
		      int (*etag_of)(void *ctx, const char *path, struct buf *out), void *ctx)
{
	struct buf cur = BUF_INIT;
	int ok = etag_of(ctx, path, &cur) == 0 && strcmp(cur.ptr, tag) == 0;

	buf_release(&cur);
	return ok;
}

int dav_if_eval(const struct if_header *h, struct dav_locks *l, const char *path,
		int (*etag_of)(void *ctx, const char *path, struct buf *out), void *ctx)
{
	size_t i, j;

	for (i = 0; i < h->n; i++) {
		const struct if_list *li = &h->lists[i];
		const char *res = li->path ? li->path : path;
		int all = !li->broken;

		for (j = 0; j < li->n && all; j++) {
			const struct if_cond *c = &li->conds[j];
			int holds = c->etag ? etag_holds(res, c->value, etag_of, ctx)
					    : token_holds(l, res, c->value);
			all = c->not ? !holds : holds;
		}
		if (all)
			return 1;
	}
	return 0;
}
