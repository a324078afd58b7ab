/*
 * defer.c: deferred replies, for handlers that answer later from another
 * thread (http_request_defer(), http_request_park()).
 *
 * A handler may take a request over (http_request_defer) and answer from
 * another thread. The answer is queued on the request's loop under a mutex
 * and the loop is woken by a byte on a second pipe (written only when the
 * queue was empty), so only the owning loop ever touches the connection.
 * A connection reads no further request while one on it is unanswered
 * (conn.c), so the request's head stays in its buffer for the answer's
 * access log line; if the connection closes meanwhile (its client left, a
 * stop), http_conn_close() marks the deferred request dead and its answer is
 * dropped. Deferred
 * requests count as in flight, and a stop does not close their connections
 * as idle.
 *
 * Rejected: evthread_use_pthreads(), so that another thread could wake
 * the loop with event_active(): it puts a lock around every event
 * operation of every loop (see http.c); a pipe per loop does the job.
 */
#include "http/http.h"
#include "http/http-int.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

struct http_deferred *http_request_defer(struct http_request *req)
{
	struct worker *w = req->w;
	struct http_deferred *d;

	if (req->replied || !req->c) {
		log_warn("http: %s: cannot defer an answered request", req->path ? req->path : "-");
		return NULL;
	}
	d = xcalloc(1, sizeof(*d));
	d->w = w;
	d->c = req->c;
	req->c->deferred = d;
	d->major = req->major;
	d->minor = req->minor;
	d->kind = req->kind;
	d->method = req->method;
	d->method_name = req->method_name;
	d->start_ms = req->start_ms;
	d->head = req->head;
	d->absolute = req->absolute;
	d->status = 500;
	buf_init(&d->hdr, 0);
	buf_init(&d->body, 0);
	pthread_cond_init(&d->drained, NULL);
	d->next = w->deferred;
	if (w->deferred)
		w->deferred->prev = d;
	w->deferred = d;
	w->inflight++;
	req->replied = 1;
	return d;
}

struct http_deferred *http_request_park(struct http_request *req)
{
	struct http_deferred *d = http_request_defer(req);

	if (d) {
		d->parked = 1;
		req->w->inflight--; /* a stop does not wait for it */
	}
	return d;
}

void http_deferred_header(struct http_deferred *d, const char *name, const char *value)
{
	const unsigned char *p;

	for (p = (const unsigned char *)name; *p; p++)
		if (!http_token_char(*p))
			break;
	if (!*name || *p || strpbrk(value, "\r\n")) {
		log_warn("http: invalid deferred response header dropped");
		return;
	}
	buf_adds(&d->hdr, name);
	buf_add(&d->hdr, ": ", 2);
	buf_adds(&d->hdr, value);
	buf_add(&d->hdr, "\r\n", 2);
}

/*
 * Queues d for its loop unless it is queued already, in the done queue or
 * in the list the loop took and has not reached (under done_lock; a
 * stream's step clears it, see stream_step()); 1 when the loop must be
 * woken.
 */
static int hand_back(struct worker *w, struct http_deferred *d)
{
	int wake = !w->done_head;

	if (d->queued)
		return 0;
	d->queued = 1;
	d->qnext = NULL;
	if (w->done_tail)
		w->done_tail->qnext = d;
	else
		w->done_head = d;
	w->done_tail = d;
	return wake;
}

static void wake_loop(struct worker *w)
{
	ssize_t n;

	do
		n = write(w->done_pipe[1], "d", 1);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno != EAGAIN)
		log_error("http: cannot wake loop %d: %s", w->index, strerror(errno));
}

/* The answer's status and content type (NULL: none), by the holder before it hands d back. */
static void set_status(struct http_deferred *d, int status, const char *content_type)
{
	d->status = status;
	if (content_type) {
		buf_add(&d->hdr, "Content-Type: ", 14);
		buf_adds(&d->hdr, content_type);
		buf_add(&d->hdr, "\r\n", 2);
	}
}

void http_deferred_reply_buf(struct http_deferred *d, int status, const char *content_type,
			     struct buf *body)
{
	struct worker *w = d->w;
	int wake;

	set_status(d, status, content_type);
	if (body) {
		buf_release(&d->body);
		d->body = *body;
		buf_init(body, 0);
	}
	pthread_mutex_lock(&w->done_lock);
	wake = hand_back(w, d);
	pthread_mutex_unlock(&w->done_lock);
	if (wake)
		wake_loop(w);
}

void http_deferred_reply(struct http_deferred *d, int status, const char *content_type,
			 const void *body, size_t len)
{
	struct buf b = BUF_INIT;

	buf_add(&b, body, len);
	http_deferred_reply_buf(d, status, content_type, &b);
}

static void unlink_deferred(struct worker *w, struct http_deferred *d)
{
	if (d->prev)
		d->prev->next = d->next;
	else if (w->deferred == d)
		w->deferred = d->next;
	if (d->next)
		d->next->prev = d->prev;
	d->prev = d->next = NULL;
}

static void free_deferred(struct http_deferred *d)
{
	pthread_cond_destroy(&d->drained);
	buf_release(&d->hdr);
	buf_release(&d->body);
	free(d);
}

/* Takes the queue of answers handed back to this loop. */
static struct http_deferred *take_done(struct worker *w)
{
	struct http_deferred *list;

	pthread_mutex_lock(&w->done_lock);
	list = w->done_head;
	w->done_head = w->done_tail = NULL;
	pthread_mutex_unlock(&w->done_lock);
	return list;
}

/* The request a deferred one was, to answer it on its loop. */
static void request_of(struct worker *w, const struct http_deferred *d, struct http_request *r)
{
	memset(r, 0, sizeof(*r));
	r->w = w;
	r->c = d->c;
	r->out_fd = -1;
	r->major = d->major;
	r->minor = d->minor;
	r->kind = d->kind;
	r->method = d->method;
	r->method_name = d->method_name;
	r->start_ms = d->start_ms;
	r->head = d->head;
	r->absolute = d->absolute;
	r->uri = d->c ? d->c->rp.base + d->c->rp.url : NULL;
}

/* Sends one handed-back answer on its own loop (the fast path's http_respond()). */
static void send_deferred(struct worker *w, struct http_deferred *d)
{
	struct http_request r;
	size_t len = d->body.len;

	request_of(w, d, &r);
	buf_reset(&w->hdr);
	buf_add(&w->hdr, d->hdr.ptr, d->hdr.len);
	HDR_CONST(&r, "Cache-Control: no-store\r\n");
	http_set_length(&r, len);
	if (!r.head && len > 0) {
		char *bytes = buf_detach(&d->body, NULL);
		http_set_body(&r, bytes, len, http_free_bytes, bytes);
	}
	d->c->deferred = NULL;
	d->c = NULL;
	http_respond(&r, d->status);
}

/* ---- streamed answers ---- */

/*
 * A streamed answer keeps at most STREAM_WINDOW bytes in the socket's
 * buffer and its own: the writer waits for the socket to drain (or the
 * client to go, or STREAM_STALL_S seconds without progress, after which
 * the stream counts as dead) before handing over more.
 */
#define STREAM_WINDOW (256 * 1024)
#define STREAM_STALL_S 30

void http_deferred_stream_start(struct http_deferred *d, int status, const char *content_type)
{
	struct worker *w = d->w;
	int wake;

	set_status(d, status, content_type);
	pthread_mutex_lock(&w->done_lock);
	d->stream = 1;
	wake = hand_back(w, d);
	pthread_mutex_unlock(&w->done_lock);
	if (wake)
		wake_loop(w);
}

int http_deferred_stream_write(struct http_deferred *d, struct buf *piece)
{
	struct worker *w = d->w;
	int wake = 0, dead;

	pthread_mutex_lock(&w->done_lock);
	while (!d->stream_dead && d->body.len + d->out_len > STREAM_WINDOW) {
		struct timespec until = clock_deadline(STREAM_STALL_S * 1000L);
		if (pthread_cond_timedwait(&d->drained, &w->done_lock, &until) == ETIMEDOUT)
			d->stream_dead = 1;
	}
	dead = d->stream_dead;
	if (!dead && piece->len) {
		buf_add(&d->body, piece->ptr, piece->len);
		wake = hand_back(w, d);
	}
	pthread_mutex_unlock(&w->done_lock);
	buf_reset(piece);
	if (wake)
		wake_loop(w);
	return dead ? -1 : 0;
}

void http_deferred_stream_end(struct http_deferred *d)
{
	struct worker *w = d->w;
	int wake;

	pthread_mutex_lock(&w->done_lock);
	d->stream_end = 1;
	wake = hand_back(w, d);
	pthread_mutex_unlock(&w->done_lock);
	if (wake)
		wake_loop(w);
}

int http_deferred_stream_offer(struct http_deferred *d, struct buf *piece, size_t max)
{
	struct worker *w = d->w;
	int wake = 0, refused;

	pthread_mutex_lock(&w->done_lock);
	refused = d->stream_dead || d->body.len + d->out_len + piece->len > max;
	if (!refused && piece->len) {
		buf_add(&d->body, piece->ptr, piece->len);
		wake = hand_back(w, d);
	}
	pthread_mutex_unlock(&w->done_lock);
	if (!refused)
		buf_reset(piece);
	if (wake)
		wake_loop(w);
	return refused ? -1 : 0;
}

void http_deferred_on_end(struct http_deferred *d, void (*fn)(void *ctx), void *ctx)
{
	d->on_end = fn;
	d->end_ctx = ctx;
}

/* Tells d's holder, once, that d's client has gone or d is done (loop thread). */
static void notify_end(struct http_deferred *d)
{
	void (*fn)(void *ctx) = d->on_end;

	d->on_end = NULL;
	if (fn)
		fn(d->end_ctx);
}

/* The socket's buffer of a stream changed: tell its writer how full it is. */
static void on_drain(struct evbuffer *out, const struct evbuffer_cb_info *info, void *arg)
{
	struct http_deferred *d = arg;

	if (!info->n_deleted)
		return;
	pthread_mutex_lock(&d->w->done_lock);
	d->out_len = evbuffer_get_length(out);
	pthread_cond_broadcast(&d->drained);
	pthread_mutex_unlock(&d->w->done_lock);
}

static void unwatch(struct http_deferred *d)
{
	if (d->drain)
		evbuffer_remove_cb_entry(d->out, d->drain);
	d->drain = NULL;
	d->out = NULL;
}

void http_stream_gone(struct http_deferred *d)
{
	unwatch(d);
	pthread_mutex_lock(&d->w->done_lock);
	d->stream_dead = 1;
	pthread_cond_broadcast(&d->drained);
	pthread_mutex_unlock(&d->w->done_lock);
	notify_end(d);
}

/*
 * Moves what the writer of stream d handed over onto the socket (the
 * head first). 1 when the stream has ended and d is to be freed, 0 while
 * its writer still holds it.
 */
static int stream_step(struct worker *w, struct http_deferred *d)
{
	struct buf piece = BUF_INIT;
	int ended;

	/*
	 * d stays marked queued until here, where what it holds is taken: a
	 * writer handing it back before would link it into the done queue
	 * while it still sits, unread, in the list this loop took (its qnext
	 * cut, and d seen twice, the second time freed).
	 */
	pthread_mutex_lock(&w->done_lock);
	piece = d->body;
	buf_init(&d->body, 0);
	ended = d->stream_end;
	d->queued = 0;
	pthread_mutex_unlock(&w->done_lock);
	if (d->c && !d->head_sent) {
		struct http_request r;
		request_of(w, d, &r);
		buf_reset(&w->hdr);
		buf_add(&w->hdr, d->hdr.ptr, d->hdr.len);
		HDR_CONST(&r, "Cache-Control: no-store\r\n");
		http_respond_stream_head(&r, d->status);
		d->head_sent = 1;
		d->out = d->c->out;
		d->drain = evbuffer_add_cb(d->out, on_drain, d);
	}
	if (d->c && piece.len)
		http_respond_stream_chunk(d->c, piece.ptr, piece.len);
	buf_release(&piece);
	if (d->out) {
		/* the writer may be waiting on what was just taken from it */
		pthread_mutex_lock(&w->done_lock);
		d->out_len = evbuffer_get_length(d->out);
		pthread_cond_broadcast(&d->drained);
		pthread_mutex_unlock(&w->done_lock);
	}
	if (!d->c && !d->stream_dead)
		http_stream_gone(d);
	if (!ended)
		return 0;
	unwatch(d);
	if (d->c) {
		struct conn *c = d->c;
		c->deferred = NULL;
		d->c = NULL;
		http_respond_stream_end(c);
	}
	return 1;
}

void http_on_done(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct http_deferred *d, *next;
	char b[64];

	while (read(fd, b, sizeof(b)) > 0)
		;
	for (d = take_done(w); d; d = next) {
		next = d->qnext;
		if (d->stream && !stream_step(w, d))
			continue;
		unlink_deferred(w, d);
		if (!d->parked)
			w->inflight--;
		if (d->c && !d->stream)
			send_deferred(w, d);
		notify_end(d);
		free_deferred(d);
	}
	if (w->stopping)
		http_check_stop(w);
}

/*
 * A stop answers parked requests (long polls) at once with 503; the
 * holder's answer, when it comes, is dropped. Only loop-owned fields of d
 * are touched: its headers and body belong to the holder until it replies.
 */
void http_answer_parked(struct worker *w)
{
	static const char text[] = "Service Unavailable: the server is stopping\n";
	struct http_deferred *d;

	for (d = w->deferred; d; d = d->next) {
		struct http_request r;

		if (!d->parked || !d->c || d->stream)
			continue; /* a stream's head is out: it ends as its connection closes */
		request_of(w, d, &r);
		d->c->deferred = NULL;
		d->c = NULL;
		buf_reset(&w->hdr);
		HDR_CONST(&r, "Retry-After: 1\r\n");
		http_respond_text(&r, 503, text);
	}
}

/*
 * The loops have stopped and every connection is about to be closed: no
 * deferred request may be touched after that.
 */
void http_kill_deferred(struct worker *w)
{
	struct http_deferred *d;

	for (d = w->deferred; d; d = d->next) {
		if (d->c)
			d->c->deferred = NULL;
		d->c = NULL;
		if (d->stream)
			http_stream_gone(d);
	}
}

/* Frees the answers that came back after the loop stopped: they are not sent. */
void http_drop_late_answers(struct worker *w)
{
	struct http_deferred *d, *next;

	for (d = take_done(w); d; d = next) {
		next = d->qnext;
		unlink_deferred(w, d);
		notify_end(d);
		free_deferred(d);
	}
}
