/*
 * synccli-requests.c: the requests of `quire sync`, on evhttp's client.
 *
 * One event loop and --jobs keep-alive connections. Each connection runs
 * one request at a time and takes the next operation of the running
 * phase when it finishes (phase 1: the GETs of files to take, merge or
 * copy; phase 2: PUTs and DELETEs), so --jobs bounds both concurrency and
 * memory: a file is read into memory when its upload starts and freed
 * when the request is done, and a download is held until it is written.
 * The manifest and the wait are single GETs on the first connection, run
 * on the loop to their end.
 *
 * Bounds. Before each request its connection is told the most it may
 * read of the answer: SYNCCLI_MAX_MANIFEST for the manifest, --max-file
 * for a file, 64 KiB for the JSON answer of a write, 64 KiB of headers.
 * evhttp stops reading past them, and the request fails saying so.
 *
 * Outcomes. PUT 200/201 uploaded; DELETE 200, or 404 (already gone),
 * deleted; GET 200 handed to the plan (synccli_got()); 412 (or a GET's
 * 404) means the server changed the file since the manifest was read:
 * counted as raced, and the pass is made again; anything else, or a
 * connection failure, failed.
 *
 * Rejected: re-reading each file's hash just before sending it (the hash
 * of the bytes sent is what the record keeps, so a file changed during
 * the run is sent as it was read, and the next run compares again).
 */
#include "sync/synccli-int.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#define REQUEST_TIMEOUT_S 300
#define PROGRESS_EVERY_MS 100
/* The most read of a write's answer (a line of JSON) and of an answer's headers. */
#define MAX_ANSWER (64u << 10)
#define MAX_HEADERS (64u << 10)

/* ---- progress ---- */

static void progress(struct client *c, int final)
{
	size_t total = c->nops, done = c->done;
	int width = 30, fill, i;
	char bar[64];
	int64_t t = (int64_t)clock_ms();

	if (!c->progress || (!final && t - c->last_progress < PROGRESS_EVERY_MS))
		return;
	c->last_progress = t;
	if (final) {
		fputs("\r\033[K", stderr);
		return;
	}
	fill = total ? (int)((double)done / (double)total * width) : width;
	for (i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[width] = '\0';
	fprintf(stderr, "\r\033[K[%s] %zu/%zu  %.1f/%.1f MB", bar, done, total,
		(double)c->bytes_done / 1e6, (double)c->bytes_total / 1e6);
	fflush(stderr);
}

/* Prints a line above the progress bar. */
static void say(struct client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct client *c, const char *fmt, ...)
{
	va_list ap;

	if (c->progress)
		fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	c->last_progress = 0;
}

/* ---- requests ---- */

/* A request with the headers every call carries. */
static struct evhttp_request *new_request(struct client *c,
					  void (*cb)(struct evhttp_request *, void *), void *arg)
{
	struct evhttp_request *req = evhttp_request_new(cb, arg);
	struct evkeyvalq *h;

	if (!req)
		return NULL;
	h = evhttp_request_get_output_headers(req);
	if (evhttp_add_header(h, "Host", c->host) < 0 ||
	    evhttp_add_header(h, "Authorization", c->auth) < 0 ||
	    evhttp_add_header(h, "User-Agent", "quire-sync/" QUIRE_VERSION) < 0) {
		evhttp_request_free(req);
		return NULL;
	}
	return req;
}

/* The JSON "error" of an answer, or its status line. */
static void describe(struct evhttp_request *req, struct buf *out)
{
	struct evbuffer *in;
	struct json_reader jr;
	struct buf key = BUF_INIT;
	size_t len;
	const char *body;

	buf_reset(out);
	if (!req || !evhttp_request_get_response_code(req)) {
		buf_adds(out, "connection failed");
		return;
	}
	in = evhttp_request_get_input_buffer(req);
	len = evbuffer_get_length(in);
	body = len ? (const char *)evbuffer_pullup(in, -1) : "";
	json_init(&jr, body ? body : "", body ? len : 0);
	if (json_object(&jr) == 0) {
		while (json_key(&jr, &key) > 0) {
			if (strcmp(key.ptr, "error") == 0) {
				json_string(&jr, out);
				break;
			}
			if (json_skip(&jr) < 0)
				break;
		}
	}
	buf_release(&key);
	if (!out->len)
		buf_addf(out, "HTTP %d %s", evhttp_request_get_response_code(req),
			 evhttp_request_get_response_code_line(req)
				 ? evhttp_request_get_response_code_line(req)
				 : "");
}

static void sync_error_cb(enum evhttp_request_error err, void *arg)
{
	struct client *c = arg;

	if (err == EVREQ_HTTP_DATA_TOO_LONG)
		c->sync_too_long = 1;
}

static void sync_cb(struct evhttp_request *req, void *arg)
{
	struct client *c = arg;
	struct evbuffer *in;

	c->sync_done = 1;
	c->sync_status = req ? evhttp_request_get_response_code(req) : 0;
	buf_reset(&c->sync_body);
	if (req && (in = evhttp_request_get_input_buffer(req)) && evbuffer_get_length(in)) {
		size_t n = evbuffer_get_length(in);
		buf_grow(&c->sync_body, n);
		if (evbuffer_remove(in, c->sync_body.ptr, n) == (int)n)
			buf_setlen(&c->sync_body, n);
	}
	while (c->sync_body.len && c->sync_body.ptr[c->sync_body.len - 1] == '\n')
		buf_setlen(&c->sync_body, c->sync_body.len - 1);
	if (c->sync_status && c->sync_status != 200 && c->sync_body.len == 0)
		buf_addf(&c->sync_body, "HTTP %d", c->sync_status);
	event_base_loopbreak(c->base);
}

/*
 * Bounds what a connection reads of the next answer: evhttp fails the
 * request (EVREQ_HTTP_DATA_TOO_LONG) as soon as the body, announced or
 * chunked, passes max, before holding more.
 */
static void bound(struct evhttp_connection *con, size_t max)
{
	evhttp_connection_set_max_body_size(con, (ev_ssize_t)max);
	evhttp_connection_set_max_headers_size(con, MAX_HEADERS);
}

/* A GET on the first connection; with wakeable, ended by a byte on the wake descriptor. */
static int fetch(struct client *c, const char *target, size_t max, int wakeable)
{
	struct evhttp_request *req = new_request(c, sync_cb, c);

	c->sync_done = 0;
	c->sync_status = 0;
	c->sync_too_long = 0;
	if (!req)
		return 0;
	evhttp_request_set_error_cb(req, sync_error_cb);
	bound(c->slots[0].con, max);
	if (evhttp_make_request(c->slots[0].con, req, EVHTTP_REQ_GET, target) < 0)
		return 0; /* evhttp freed req */
	while (!c->sync_done && !(wakeable && c->woken))
		if (event_base_dispatch(c->base) < 0)
			break;
	if (!c->sync_done) {
		evhttp_cancel_request(req); /* frees it; the connection is made again */
		return -2;
	}
	return c->sync_status;
}

int synccli_fetch(struct client *c, const char *target, size_t max)
{
	return fetch(c, target, max, 0);
}

int synccli_poll(struct client *c, const char *target, size_t max)
{
	return fetch(c, target, max, 1);
}

static void woken(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;
	char drain[64];

	while (read(fd, drain, sizeof(drain)) > 0)
		;
	c->woken = 1;
	event_base_loopbreak(c->base);
}

int synccli_wake_on(struct client *c, int fd)
{
	if (c->wake)
		event_free(c->wake);
	c->wake = NULL;
	if (fd < 0)
		return 0;
	c->wake = event_new(c->base, fd, EV_READ | EV_PERSIST, woken, c);
	return c->wake && event_add(c->wake, NULL) == 0 ? 0 : -1;
}

static void start_next(struct conn_slot *s);

static const char *verb(const struct op *op)
{
	return op->kind == OP_PUT ? "upload" : op->kind == OP_GET ? "download" : "delete";
}

/* The JSON answer of a write: the version it promised, into c->max_version. */
static void take_version(struct client *c, struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
	struct json_reader jr;
	struct buf key = BUF_INIT;
	uint64_t v = 0;

	json_init(&jr, body ? body : "", body ? len : 0);
	if (json_object(&jr) == 0) {
		while (json_key(&jr, &key) > 0) {
			if (strcmp(key.ptr, "version") == 0 && json_u64(&jr, &v) == 0 &&
			    v > c->max_version)
				c->max_version = v;
			else if (json_skip(&jr) < 0)
				break;
		}
	}
	buf_release(&key);
}

static void op_error_cb(enum evhttp_request_error err, void *arg)
{
	struct conn_slot *s = arg;

	if (err == EVREQ_HTTP_DATA_TOO_LONG && s->op)
		s->op->too_long = 1;
}

/* An operation's answer. */
static void op_cb(struct evhttp_request *req, void *arg)
{
	struct conn_slot *s = arg;
	struct client *c = s->c;
	struct counts *n = &c->run->n;
	struct op *op = s->op;
	int status = req ? evhttp_request_get_response_code(req) : 0;
	struct buf msg = BUF_INIT;

	s->op = NULL;
	op->status = status;
	c->running--;
	c->done++;
	c->bytes_done += (uint64_t)op->size;
	if (op->kind == OP_GET && status == 200) {
		struct evbuffer *in = evhttp_request_get_input_buffer(req);
		size_t len = evbuffer_get_length(in);
		const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
		synccli_got(c->run, op, body, len);
	} else if (op->kind == OP_GET && status == 404) {
		n->raced++; /* deleted on the server since the manifest: the next round sees it */
	} else if ((op->kind == OP_PUT && (status == 200 || status == 201)) ||
		   (op->kind == OP_DELETE && (status == 200 || status == 404))) {
		take_version(c, req);
		synccli_sent(c->run, op);
	} else if (status == 412) {
		n->raced++; /* changed on the server since the manifest: compared again */
	} else if (op->too_long) {
		n->failed++;
		say(c, "failed: download %s: the server sent more than %zu bytes (--max-file)",
		    op->path, c->max_file);
	} else {
		n->failed++;
		describe(req, &msg);
		say(c, "failed: %s %s: %s", verb(op), op->path, msg.ptr);
	}
	buf_release(&op->text);
	buf_release(&msg);
	progress(c, 0);
	start_next(s);
}

static void fail_op(struct conn_slot *s, struct op *op, const char *why)
{
	struct client *c = s->c;

	c->run->n.failed++;
	c->done++;
	op->status = -1;
	buf_release(&op->text);
	say(c, "failed: %s %s: %s", verb(op), op->path, why);
}

/*
 * A PUT's body: the file's bytes, read now: read_file() (whole, into
 * memory), since the body must be in the request's buffer before it is
 * sent, and freed when the request is done (--jobs bounds how many are
 * held). Their hash is what the record keeps once the server has them.
 * Rejected: evbuffer_add_file() (the file could change between the
 * Content-Length and the last byte sent).
 */
static int put_body(struct client *c, struct op *op, struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct buf full = BUF_INIT, body = BUF_INIT;
	char tag[SHA256_HEX_SIZE + 3], num[32];
	int rc = 0;

	buf_addf(&full, "%s/%s", c->vault, op->disk);
	if (read_file(full.ptr, &body) < 0) {
		buf_release(&full);
		buf_release(&body);
		return -1;
	}
	buf_release(&full);
	op->size = (off_t)body.len;
	hash_sha256_hex(body.ptr ? body.ptr : "", body.len, op->sent);
	snprintf(num, sizeof(num), "%zu", body.len);
	rc |= evhttp_add_header(h, "Content-Length", num);
	rc |= evhttp_add_header(h, "Content-Type", "application/octet-stream");
	if (op->remote[0]) {
		snprintf(tag, sizeof(tag), "\"%s\"", op->remote);
		rc |= evhttp_add_header(h, "If-Match", tag);
	} else {
		rc |= evhttp_add_header(h, "If-None-Match", "*");
	}
	rc |= evbuffer_add(evhttp_request_get_output_buffer(req), body.ptr ? body.ptr : "",
			   body.len);
	if (synccli_is_note(op->path))
		buf_add(&op->text, body.ptr ? body.ptr : "", body.len);
	buf_release(&body);
	errno = EIO;
	return rc ? -1 : 0;
}

static enum evhttp_cmd_type method(const struct op *op)
{
	return op->kind == OP_PUT ? EVHTTP_REQ_PUT : op->kind == OP_GET ? EVHTTP_REQ_GET
									 : EVHTTP_REQ_DELETE;
}

/* Whether op is sent in the phase running. */
static int in_phase(const struct client *c, const struct op *op)
{
	if (op->kind == OP_UNLINK)
		return 0;
	return (op->kind == OP_GET) == (c->phase == 1);
}

/* Starts the next operation of the plan on s, or leaves s idle. */
static void launch(struct conn_slot *s)
{
	struct client *c = s->c;

	while (c->next < c->nops) {
		struct op *op = &c->ops[c->next++];
		struct evhttp_request *req;
		struct buf target = BUF_INIT;
		char tag[SHA256_HEX_SIZE + 3];
		int rc = 0;

		if (!in_phase(c, op))
			continue;
		buf_addf(&target, "%s/api/v1/files/", c->prefix);
		buf_add_urlpath(&target, op->path, strlen(op->path));
		req = new_request(c, op_cb, s);
		if (!req) {
			fail_op(s, op, "cannot make a request");
			buf_release(&target);
			continue;
		}
		evhttp_request_set_error_cb(req, op_error_cb);
		if (op->kind == OP_PUT) {
			if (put_body(c, op, req) < 0) {
				fail_op(s, op, strerror(errno));
				evhttp_request_free(req);
				buf_release(&target);
				continue;
			}
		} else if (op->kind == OP_DELETE) {
			snprintf(tag, sizeof(tag), "\"%s\"", op->remote);
			rc |= evhttp_add_header(evhttp_request_get_output_headers(req), "If-Match", tag);
		}
		if (rc) {
			fail_op(s, op, "cannot make a request");
			evhttp_request_free(req);
			buf_release(&target);
			continue;
		}
		s->op = op;
		c->running++;
		bound(s->con, op->kind == OP_GET ? c->max_file : MAX_ANSWER);
		if (evhttp_make_request(s->con, req, method(op), target.ptr) < 0) {
			s->op = NULL;
			c->running--;
			fail_op(s, op, "cannot send the request");
			buf_release(&target);
			continue;
		}
		buf_release(&target);
		return;
	}
	if (c->running == 0)
		event_base_loopbreak(c->base);
}

static void delayed_launch(evutil_socket_t fd, short what, void *arg)
{
	struct conn_slot *s = arg;

	s->c->running--; /* the timer counted as running */
	launch(s);
}

static void start_next(struct conn_slot *s)
{
	struct client *c = s->c;
	struct timeval tv;

	if (c->delay_ms > 0 && c->next < c->nops) {
		tv.tv_sec = c->delay_ms / 1000;
		tv.tv_usec = (c->delay_ms % 1000) * 1000;
		if (!s->delay)
			s->delay = evtimer_new(c->base, delayed_launch, s);
		if (s->delay && evtimer_add(s->delay, &tv) == 0) {
			c->running++; /* a pending timer counts as running */
			return;
		}
	}
	launch(s);
}

/* ---- the connections ---- */

int synccli_connect(struct client *c, int jobs)
{
	int i;

	c->base = event_base_new();
	if (!c->base) {
		fprintf(stderr, "quire sync: cannot create an event loop\n");
		return -1;
	}
	c->nslots = jobs;
	c->slots = xcalloc((size_t)jobs, sizeof(*c->slots));
	for (i = 0; i < jobs; i++) {
		c->slots[i].c = c;
		c->slots[i].con =
			evhttp_connection_base_new(c->base, NULL, c->host, (ev_uint16_t)c->port);
		if (!c->slots[i].con) {
			fprintf(stderr, "quire sync: cannot connect to %s:%d\n", c->host, c->port);
			return -1;
		}
		evhttp_connection_set_timeout(c->slots[i].con, REQUEST_TIMEOUT_S);
		evhttp_connection_set_retries(c->slots[i].con, 2);
	}
	return 0;
}

void synccli_run(struct client *c)
{
	int i;

	progress(c, 0);
	for (i = 0; i < c->nslots; i++)
		start_next(&c->slots[i]);
	while (c->running > 0)
		if (event_base_dispatch(c->base) < 0)
			break;
	progress(c, 1);
}

void synccli_disconnect(struct client *c)
{
	int i;

	if (c->slots) {
		for (i = 0; i < c->nslots; i++) {
			if (c->slots[i].con)
				evhttp_connection_free(c->slots[i].con);
			if (c->slots[i].delay)
				event_free(c->slots[i].delay);
		}
		free(c->slots);
	}
	if (c->wake)
		event_free(c->wake);
	c->wake = NULL;
	if (c->base)
		event_base_free(c->base);
}
