/*
 * conn.c: quire's HTTP/1.1 connections, on libevent's event loop.
 *
 * What. A connection from accept to close: its socket read into one
 * buffer per connection, requests parsed by llhttp (parse.c) and handed
 * to request.c whole, answers written, keep-alive and pipelining, the
 * deadlines, and the eviction of idle connections at max_connections.
 *
 * Reading. Bytes are read into c->in. A request's head stays there, whole
 * and in place, until the request is answered: the parser's offsets and
 * the C strings it made in place are the request's target and headers
 * (no header list is built, nothing is allocated). Its body goes, as the
 * parser frames it, to c->body or, past small_body_size for a request
 * whose body policy allows more, to a file in the spool folder
 * (http_server_set_body_spool()): a 1 GB upload holds one buffer of memory.
 * Body bytes are dropped from c->in as they are taken, so the buffer
 * never holds more than a head and one read.
 *
 * The limits are decided on the parsed head, before a byte of the body is
 * read: the body's limit from its policy (guard.c), 413 and close past
 * it; Expect: 100-continue answered then, and only for a body allowed.
 *
 * Writing. An answer is a head (built in the loop's buffer) and a body:
 * the snapshot's bytes by reference, a handler's buffer handed over, or
 * an attachment's file. When nothing is waiting on the socket, both go
 * out with one writev() at once, and on the common path the request
 * costs no allocation and no EPOLLOUT round trip; what does not fit goes
 * to c->out (an evbuffer: the head's rest copied, the body referenced, a
 * file sent with sendfile()) and EV_WRITE is waited for. Pipelined
 * requests are answered in order: the next is read only when less than
 * PIPELINE_OUT bytes wait.
 *
 * Deadlines. One timer per connection, armed for its state: an idle
 * connection (no request begun) is closed after read_timeout_s with no
 * request (checked against its last answer, so a busy keep-alive
 * connection re-arms nothing); a head must arrive whole within
 * header_timeout_s of its first byte (nginx's client_header_timeout),
 * else it is closed without an answer, as nginx does; a body must bring a
 * byte every read_timeout_s and average min_request_rate once
 * slow_after_s old (client_body_timeout).
 * A connection waiting for its answer (a handler, a long poll, a stream)
 * has no read deadline; output that makes no progress for
 * write_timeout_s closes it.
 *
 * Idle connections (waiting for a request's first byte) are on a list per
 * loop, oldest first: at max_connections a new client closes the oldest
 * (http.c's accept), so idle clients holding every slot cannot lock new
 * ones out.
 */
#define _GNU_SOURCE /* sync_file_range() */
#include "http/http.h"
#include "http/http-int.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

/* What the input buffer holds beyond max_header_size: one read of a body. */
#define READ_ROOM (16 * 1024)
/* Output waiting above which a pipelined request waits to be read. */
#define PIPELINE_OUT (64 * 1024)
/* A body's timer: its rate and its last byte are checked this often. */
#define BODY_TICK_MS 1000
/* A spooled body is handed to writeback every this many bytes (see spool_write()). */
#define SPOOL_WRITEBACK (8 * 1024 * 1024)
/* A refused request's connection reads (and drops) what follows for this long, or this much. */
#define LINGER_S 2
#define LINGER_MAX (1024 * 1024)

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);
static void on_timer(evutil_socket_t fd, short what, void *arg);
static void step(struct conn *c);
static int take_body(void *ctx, const char *at, size_t len);

/* ---- the idle list ---- */

static void idle_unlink(struct worker *w, struct conn *c)
{
	if (!c->idle)
		return;
	if (c->idle_prev)
		c->idle_prev->idle_next = c->idle_next;
	else
		w->idle_head = c->idle_next;
	if (c->idle_next)
		c->idle_next->idle_prev = c->idle_prev;
	else
		w->idle_tail = c->idle_prev;
	c->idle_prev = c->idle_next = NULL;
	c->idle = 0;
}

static void idle_append(struct worker *w, struct conn *c)
{
	if (c->idle)
		return;
	c->idle_prev = w->idle_tail;
	c->idle_next = NULL;
	if (w->idle_tail)
		w->idle_tail->idle_next = c;
	else
		w->idle_head = c;
	w->idle_tail = c;
	c->idle = 1;
}

/* ---- events ---- */

static void want_read(struct conn *c, int on)
{
	if (on == c->reading)
		return;
	if ((on ? event_add(&c->rd, NULL) : event_del(&c->rd)) < 0)
		log_warn("http: cannot %s reading", on ? "start" : "stop");
	c->reading = on;
}

static void want_write(struct conn *c, int on)
{
	if (on == c->writing)
		return;
	if ((on ? event_add(&c->wr, &c->w->srv->write_tv) : event_del(&c->wr)) < 0)
		log_warn("http: cannot %s writing", on ? "start" : "stop");
	c->writing = on;
}

/* Arms the timer for c's state, unless it is armed for it already. */
static void arm_timer(struct conn *c)
{
	struct timeval tv = { 0, BODY_TICK_MS * 1000 };
	const struct timeval *t = NULL;

	if ((int)c->state == c->tstate)
		return;
	switch (c->state) {
	case C_IDLE:
		t = c->w->read_common;
		break;
	case C_HEAD:
		t = c->w->head_common;
		break;
	case C_BODY:
		t = &tv;
		break;
	case C_BUSY:
		break;
	}
	if (t ? event_add(&c->timer, t) : event_del(&c->timer))
		log_warn("http: cannot arm a connection's timer");
	c->tstate = (int)c->state;
}

/* ---- closing ---- */

static void drop_spool(struct conn *c)
{
	hash_sha256_end(c->spool_hash, NULL);
	c->spool_hash = NULL;
	if (c->spool_fd < 0)
		return;
	close(c->spool_fd);
	if (c->w->srv->spool_fd >= 0 && unlinkat(c->w->srv->spool_fd, c->spool_name, 0) < 0)
		log_warn("http: spool %s: %s", c->spool_name, strerror(errno));
	c->spool_fd = -1;
}

void http_conn_close(struct conn *c)
{
	struct worker *w = c->w;

	if (c->in_step) {
		/* on the stack below: the step closes it on its way out */
		c->broken = 1;
		return;
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	idle_unlink(w, c);
	http_guard_forget(w, c);
	if (c->deferred) {
		struct http_deferred *d = c->deferred;
		c->deferred = NULL;
		d->c = NULL;
		if (d->stream)
			http_stream_gone(d);
	}
	event_del(&c->rd);
	event_del(&c->wr);
	event_del(&c->timer);
	if (c->pending) {
		w->inflight--;
		c->pending = 0;
	}
	evbuffer_free(c->out);
	drop_spool(c);
	buf_release(&c->body);
	close(c->fd);
	free(c->in);
	free(c);
	atomic_fetch_sub_explicit(&w->srv->nconns, 1, memory_order_relaxed);
	if (w->stopping)
		http_check_stop(w);
}

/* ---- accepting ---- */

void http_conn_accept(struct worker *w, int fd, const struct sockaddr *sa, int salen)
{
	struct http_server *srv = w->srv;
	struct conn *c = xcalloc(1, sizeof(*c));
	int one = 1;

	(void)salen;
	c->w = w;
	c->fd = fd;
	c->spool_fd = -1;
	c->tstate = -1;
	c->state = C_IDLE;
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	c->in_cap = srv->opt.max_header_size + READ_ROOM;
	c->in = xmalloc(c->in_cap + 1);
	c->out = evbuffer_new();
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, c->peer,
			  sizeof(c->peer));
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, c->peer,
			  sizeof(c->peer));
	reqparse_init(&c->rp, take_body, c);
	event_assign(&c->rd, w->base, fd, EV_READ | EV_PERSIST, on_read, c);
	event_assign(&c->wr, w->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
	evtimer_assign(&c->timer, w->base, on_timer, c);
	/* file segments added to a buffer that drains to a socket go out with sendfile */
	if (!c->out || evbuffer_set_flags(c->out, EVBUFFER_FLAG_DRAINS_TO_FD) < 0 ||
	    http_guard_admit(w, c, sa) < 0) {
		/* its address holds its share: room is kept for others */
		http_conn_close(c);
		return;
	}
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		log_debug("http: TCP_NODELAY: %s", strerror(errno));
	c->now = c->last = clock_ms();
	idle_append(w, c);
	want_read(c, 1);
	arm_timer(c);
}

/* ---- writing ---- */

/* Output waiting on c changed: count it in flight, and wait for the socket. */
static void output_changed(struct conn *c)
{
	int waiting = evbuffer_get_length(c->out) > 0;

	if (waiting != c->pending) {
		c->w->inflight += waiting ? 1 : -1;
		c->pending = waiting;
	}
	want_write(c, waiting);
}

/* Writes what c->out holds; marks c broken when the socket failed. */
static void flush_out(struct conn *c)
{
	while (evbuffer_get_length(c->out) > 0) {
		int n = evbuffer_write(c->out, c->fd);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			c->broken = 1;
			break;
		}
	}
}

/* A file's cleanup: closes it once sent or dropped. */
static void close_file(const struct evbuffer_file_segment *seg, int flags, void *arg)
{
	(void)seg;
	(void)flags;
	close((int)(intptr_t)arg);
}

void http_conn_send(struct conn *c, const char *head, size_t hlen, const void *body, size_t len,
	       evbuffer_ref_cleanup_cb release, void *arg, int fd, uint64_t off)
{
	size_t sent = 0;

	if (!c->broken && evbuffer_get_length(c->out) == 0 && fd < 0) {
		struct iovec iov[2] = { { (void *)head, hlen }, { (void *)body, len } };
		ssize_t n;

		do
			n = writev(c->fd, iov, len ? 2 : 1);
		while (n < 0 && errno == EINTR);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			c->broken = 1;
		sent = n > 0 ? (size_t)n : 0;
	}
	if (c->broken) {
		if (release)
			release(body, len, arg);
		if (fd >= 0)
			close(fd);
		return;
	}
	if (sent < hlen)
		evbuffer_add(c->out, head + sent, hlen - sent);
	sent = sent > hlen ? sent - hlen : 0;
	if (fd >= 0) {
		struct evbuffer_file_segment *seg =
			evbuffer_file_segment_new(fd, (ev_off_t)off, (ev_off_t)len, 0);
		if (!seg || evbuffer_add_file_segment(c->out, seg, 0, (ev_off_t)len) < 0) {
			log_warn("http: cannot queue a file");
			c->broken = 1;
		}
		if (seg) {
			evbuffer_file_segment_add_cleanup_cb(seg, close_file, (void *)(intptr_t)fd);
			evbuffer_file_segment_free(seg);
		} else {
			close(fd);
		}
	} else if (sent < len) {
		if (release) {
			if (evbuffer_add_reference(c->out, (const char *)body + sent, len - sent,
						   release, arg) < 0) {
				release(body, len, arg);
				c->broken = 1;
			}
			release = NULL;
		} else {
			evbuffer_add(c->out, (const char *)body + sent, len - sent);
		}
	}
	if (release)
		release(body, len, arg);
	if (evbuffer_get_length(c->out) > 0) {
		flush_out(c);
		output_changed(c);
	}
}

void http_conn_write(struct conn *c, const void *bytes, size_t len)
{
	if (c->broken || !len)
		return;
	evbuffer_add(c->out, bytes, len);
	flush_out(c);
	output_changed(c);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	if (what & EV_TIMEOUT) {
		/* no byte taken for write_timeout_s: a client that stopped reading */
		http_conn_close(c);
		return;
	}
	flush_out(c);
	output_changed(c);
	http_conn_settle(c);
}

/* ---- reading ---- */

/* Moves the unread bytes from `from` down to `to` (a request done, or body bytes taken). */
static void drop_input(struct conn *c, size_t to, size_t from)
{
	memmove(c->in + to, c->in + from, c->in_len - from);
	c->in_len -= from - to;
	c->in_pos = to;
}

/* The spool file could not be made or written (errno): 507, saying why. */
static int spool_failed(struct conn *c, const char *what)
{
	int err = errno;

	log_error("http: spool %s: %s: %s", c->spool_name, what, strerror(err));
	snprintf(c->why, sizeof(c->why), "the server cannot store the body: %s", strerror(err));
	for (char *p = c->why; *p; p++)
		*p = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
	c->rp.status = 507;
	c->rp.why = c->why;
	return -1;
}

/*
 * Appends to the spool file and its hash. Every SPOOL_WRITEBACK bytes the
 * kernel is asked to start writing them out (sync_file_range, which does
 * not wait): the fsync the sync API makes before the rename then finds
 * most of a large upload on disk already, and the dirty pages never pile
 * up to the whole body.
 */
static int spool_write(struct conn *c, const void *at, size_t len)
{
	off_t written;

	if (write_fd(c->spool_fd, at, len) < 0)
		return -1;
	hash_sha256_add(c->spool_hash, at, len);
	written = (off_t)(c->body_got);
	if ((uint64_t)written - c->spool_synced >= SPOOL_WRITEBACK) {
		if (sync_file_range(c->spool_fd, (off_t)c->spool_synced,
				    written - (off_t)c->spool_synced, SYNC_FILE_RANGE_WRITE) < 0)
			log_debug("http: sync_file_range: %s", strerror(errno));
		c->spool_synced = (uint64_t)written;
	}
	return 0;
}

/* A body's bytes, as llhttp frames them: to memory, or past the small size to the spool. */
static int take_body(void *ctx, const char *at, size_t len)
{
	struct conn *c = ctx;
	struct http_server *srv = c->w->srv;

	if (c->body_got + len > c->body_limit) {
		c->rp.status = 413;
		c->rp.why = "the body is larger than the server accepts";
		return -1;
	}
	c->body_got += len;
	if (c->spool_fd < 0 && c->body.len + len > srv->opt.small_body_size &&
	    srv->spool_fd >= 0 && c->body_limit > srv->opt.small_body_size) {
		/* too large to hold: what came so far goes to a new spool file */
		for (;;) {
			snprintf(c->spool_name, sizeof(c->spool_name), "upload-%ld-%u",
				 (long)getpid(),
				 atomic_fetch_add(&srv->spool_seq, 1));
			c->spool_fd = openat(srv->spool_fd, c->spool_name,
					     O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (c->spool_fd >= 0 || errno != EEXIST)
				break;
		}
		if (c->spool_fd < 0)
			return spool_failed(c, "create");
		c->spool_synced = 0;
		if (!(c->spool_hash = hash_sha256_begin()))
			return spool_failed(c, "hash");
		if (c->body.len && spool_write(c, c->body.ptr, c->body.len) < 0)
			goto failed;
		buf_release(&c->body);
	}
	if (c->spool_fd >= 0) {
		if (spool_write(c, at, len) < 0)
			goto failed;
		return 0;
	}
	buf_add(&c->body, at, len);
	return 0;
failed:
	return spool_failed(c, "write");
}

/* The head is read: size the body, and say 100 Continue to a client that waits for it. */
static int head_read(struct conn *c)
{
	const struct http_server *srv = c->w->srv;
	const char *target = c->rp.base + c->rp.url, *expect;
	const char *method = reqparse_method(&c->rp);
	uint64_t declared;
	int framing = reqparse_framing(&c->rp, &declared), chunked = framing == 2, minor;

	c->head_end = c->in_pos;
	c->body_got = 0;
	buf_reset(&c->body);
	if (c->rp.too_many) {
		c->rp.status = 431;
		c->rp.why = "more header lines than the server takes";
		return -1;
	}
	if (c->in_pos - c->head_start > srv->opt.max_header_size) {
		c->rp.status = c->rp.url_len > srv->max_uri ? 414 : 431;
		c->rp.why = c->rp.status == 414 ? "the request target is too long"
						: "the head is too large";
		return -1;
	}
	c->body_limit = http_guard_body_limit(srv, method, target,
					      reqparse_header(&c->rp, "Authorization"));
	if (framing == 1 && declared > c->body_limit) {
		c->rp.status = 413;
		c->rp.why = "the body is larger than the server accepts";
		return -1;
	}
	expect = reqparse_header(&c->rp, "Expect");
	if (expect && strcasecmp(expect, "100-continue") == 0 &&
	    reqparse_version(&c->rp, &minor) == 1 && minor >= 1 &&
	    (chunked || declared > 0) && c->in_pos == c->in_len) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		http_conn_write(c, cont, sizeof(cont) - 1);
	}
	return 0;
}

/* Parses what c->in holds and answers each request read whole, in order. */
static void step(struct conn *c)
{
	const struct http_server *srv = c->w->srv;

	int again = 0; /* a head just read: the parser goes on, with no more bytes if none came */

	c->in_step++;
	while (!c->broken && c->state != C_BUSY && (c->in_pos < c->in_len || again) &&
	       (!c->pending || evbuffer_get_length(c->out) < PIPELINE_OUT) && !c->close_after) {
		size_t used;
		enum rp_result r;

		again = 0;
		if (c->state == C_IDLE) {
			c->state = C_HEAD;
			c->head_start = c->in_pos;
			c->since = c->now;
			idle_unlink(c->w, c);
		}
		r = reqparse_feed(&c->rp, c->in, c->in_pos, c->in_len - c->in_pos, &used);
		c->in_pos += used;
		if (r == RP_HEAD) {
			c->state = C_BODY;
			c->last = c->now;
			if (head_read(c) < 0)
				r = RP_ERROR;
			else {
				again = 1;
				continue;
			}
		}
		if (r == RP_MORE) {
			if (c->state == C_HEAD && c->in_len - c->head_start > srv->opt.max_header_size) {
				c->rp.status = c->rp.url_len > srv->max_uri || !c->rp.nh ? 414 : 431;
				c->rp.why = c->rp.status == 414 ? "the request target is too long"
							       : "the head is too large";
				r = RP_ERROR;
			} else {
				if (c->state == C_BODY) /* the body's bytes are taken: drop them */
					drop_input(c, c->head_end, c->in_pos);
				break;
			}
		}
		if (r == RP_END) {
			c->close_after = 1;
			break;
		}
		c->state = C_BUSY;
		if (r == RP_ERROR) {
			http_refuse(c, c->rp.status ? c->rp.status : 400, c->rp.why);
			c->close_after = 1;
			c->linger = 1; /* what the client still sends must not reset the answer */
			break;
		}
		c->keep_alive = reqparse_keep_alive(&c->rp);
		if (!c->keep_alive)
			c->close_after = 1;
		http_on_request(c);
	}
	c->in_step--;
}

void http_conn_answered(struct conn *c)
{
	if (c->spool_fd >= 0)
		drop_spool(c); /* not taken by the handler */
	if (c->body.cap > 2 * READ_ROOM)
		buf_release(&c->body);
	buf_reset(&c->body);
	drop_input(c, 0, c->in_pos);
	c->state = C_IDLE;
	c->last = c->in_step ? c->now : clock_ms();
	if (c->in_len == 0)
		idle_append(c->w, c);
	if (!c->in_step)
		http_conn_settle(c); /* an answer given later: on to the next request */
}

/*
 * Closes c after a refusal the way nginx's lingering_close does: a close
 * with unread bytes in the socket sends a reset, which can destroy the
 * answer before the client reads it (a 413 to an upload still being
 * sent). So the sending side is shut, and what the client still sends is
 * read and dropped until it closes, for LINGER_S or LINGER_MAX at most.
 */
static void linger(struct conn *c)
{
	struct timeval tv = { LINGER_S, 0 };

	if (shutdown(c->fd, SHUT_WR) < 0) {
		http_conn_close(c);
		return;
	}
	c->lingering = 1;
	c->in_len = c->in_pos = 0;
	idle_unlink(c->w, c);
	want_read(c, 1);
	if (event_add(&c->timer, &tv) < 0)
		log_warn("http: cannot arm a connection's timer");
	c->tstate = -1;
}

void http_conn_settle(struct conn *c)
{
	struct worker *w = c->w;

	if (c->in_step || c->lingering)
		return;
	if (!c->broken)
		step(c);
	if (!c->broken && c->close_after && c->state != C_BUSY && !c->pending &&
	    (c->linger || c->in_len > c->in_pos)) {
		linger(c);
		return;
	}
	if (c->broken || (c->close_after && c->state != C_BUSY && !c->pending) ||
	    (w->stopping && c->state == C_IDLE && !c->pending)) {
		http_conn_close(c);
		return;
	}
	/* read on, unless the buffer is full while a request waits for its answer */
	want_read(c, !c->close_after && c->in_len < c->in_cap);
	arm_timer(c);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	ssize_t n;

	(void)what;
	if (c->lingering) {
		n = read(fd, c->in, c->in_cap);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		c->in_len += n > 0 ? (size_t)n : 0; /* counts what was dropped */
		if (n <= 0 || c->in_len > LINGER_MAX)
			http_conn_close(c);
		return;
	}
	if (c->in_len == c->in_cap) {
		want_read(c, 0);
		return;
	}
	n = read(fd, c->in + c->in_len, c->in_cap - c->in_len);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n == 0 && c->pending && c->state != C_BUSY) {
		/* the client is done sending (a half close): its answers still go out */
		c->close_after = 1;
		want_read(c, 0);
		return;
	}
	if (n <= 0) {
		/* the client closed (or reset): what it waits for it will not read */
		http_conn_close(c);
		return;
	}
	c->in_len += (size_t)n;
	c->now = clock_ms(); /* once a read: the requests it completes start now */
	if (c->state == C_BODY)
		c->last = c->now;
	http_conn_settle(c);
}

/* ---- deadlines ---- */

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	const struct http_server *srv = c->w->srv;
	double now = c->now = clock_ms(), age;
	struct timeval rest;
	long ms;

	(void)fd;
	(void)what;
	c->tstate = -1;
	if (c->lingering) {
		http_conn_close(c);
		return;
	}
	switch (c->state) {
	case C_IDLE:
		age = now - c->last;
		if (age >= srv->read_tv.tv_sec * 1000.0) {
			http_conn_close(c);
			return;
		}
		/* answered since it was armed: the rest of the idle time */
		ms = (long)(srv->read_tv.tv_sec * 1000.0 - age) + 1;
		rest.tv_sec = ms / 1000;
		rest.tv_usec = ms % 1000 * 1000;
		if (event_add(&c->timer, &rest) < 0)
			log_warn("http: cannot arm a connection's timer");
		c->tstate = C_IDLE;
		return;
	case C_HEAD:
		/*
		 * The head did not arrive whole within header_timeout_s of its
		 * first byte: closed without an answer, as nginx does at its
		 * client_header_timeout (a slowloris reads none).
		 */
		bump(&c->w->c.slow, 1);
		http_conn_close(c);
		return;
	case C_BODY:
		age = now - c->since;
		if (now - c->last >= srv->read_tv.tv_sec * 1000.0 ||
		    (age >= srv->slow_after_s * 1000.0 &&
		     (double)c->body_got < srv->min_rate * age / 1000.0)) {
			bump(&c->w->c.slow, 1);
			http_conn_close(c);
			return;
		}
		arm_timer(c);
		return;
	case C_BUSY:
		return;
	}
}

/* ---- stopping ---- */

void http_conn_stop_all(struct worker *w)
{
	struct conn *c, *next;

	for (c = w->conns; c; c = next) {
		next = c->next;
		if (c->state != C_BUSY && !c->pending)
			http_conn_close(c); /* idle, or mid-request */
		else
			c->close_after = 1;
	}
}
