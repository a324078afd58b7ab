/*
 * test-http-stream.c: streamed deferred answers (http.h,
 * http_deferred_stream_*) over real sockets.
 *
 * A handler defers each request to a thread of its own, which writes
 * PIECES pieces of PIECE bytes (a pattern that shows any byte lost,
 * doubled or reordered) and ends the answer. Checked: the body arrives
 * whole and in order, framed in chunks; the connection stays usable for
 * the next request; a client that reads slowly holds the writer back (the
 * window), and one that leaves makes the writer's writes fail so that it
 * stops, and the server goes on.
 */
#include "lib/httpc.h"
#include "lib/server.h"
#include "lib/test.h"
#include "http/http.h"
#include "site/snapshot.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PIECE (32 * 1024)
#define PIECES 64
#define MAX_JOBS 16

struct stream_job {
	struct http_deferred *d;
	pthread_t thread;
	int pieces;	    /* to write: PIECES, or n= of the query */
	int failed_at;	    /* the first write that returned -1, or -1 */
	atomic_int written; /* pieces handed over */
	atomic_int done;
};

static struct stream_job jobs[MAX_JOBS];
static atomic_int njobs;

static void fill(struct buf *b, int piece)
{
	int i;

	buf_reset(b);
	for (i = 0; i < PIECE; i++)
		buf_addc(b, 'a' + (piece + i / 1024) % 26);
}

static void *stream_main(void *arg)
{
	struct stream_job *j = arg;
	struct buf b = BUF_INIT;
	int i;

	j->failed_at = -1;
	http_deferred_header(j->d, "X-Stream", "yes");
	http_deferred_stream_start(j->d, 207, "text/plain");
	for (i = 0; i < j->pieces; i++) {
		fill(&b, i);
		if (http_deferred_stream_write(j->d, &b) < 0) {
			j->failed_at = i;
			break;
		}
		CHECK(b.len == 0);
		atomic_fetch_add(&j->written, 1);
	}
	http_deferred_stream_end(j->d);
	buf_release(&b);
	atomic_store(&j->done, 1);
	return NULL;
}

static void streamer(struct http_request *req, void *ctx)
{
	int n = atomic_fetch_add(&njobs, 1);
	struct stream_job *j = &jobs[n];

	(void)ctx;

	const char *q = http_request_query(req);

	CHECK(n < MAX_JOBS);
	j->pieces = q && strncmp(q, "n=", 2) == 0 ? atoi(q + 2) : PIECES;
	j->d = http_request_defer(req);
	CHECK(pthread_create(&j->thread, NULL, stream_main, j) == 0);
}

static int body_ok(const struct buf *body)
{
	struct buf want = BUF_INIT;
	int i, ok = body->len == (size_t)PIECE * PIECES;

	for (i = 0; ok && i < PIECES; i++) {
		fill(&want, i);
		ok = memcmp(body->ptr + (size_t)i * PIECE, want.ptr, PIECE) == 0;
	}
	buf_release(&want);
	return ok;
}

static void join(int n)
{
	int i;

	for (i = 0; i < 1200 && !atomic_load(&jobs[n].done); i++) /* a minute: only a hang */
		usleep(50 * 1000);
	CHECK(atomic_load(&jobs[n].done));
	CHECK(pthread_join(jobs[n].thread, NULL) == 0);
}

static const char *GET_STREAM = "GET /stream/x HTTP/1.1\r\nHost: x\r\n\r\n";

static int port;

static void test_whole(void)
{
	struct conn c;
	struct resp r;

	CHECK(conn_open(&c, port) >= 0);
	CHECK(send_all(c.fd, GET_STREAM, strlen(GET_STREAM)) == 0);
	CHECK(send_all(c.fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 35) == 0);
	CHECK(read_resp(&c, &r, 0) == 0);
	CHECK_INT(r.status, 207);
	CHECK_STR(hdr(&r, "Transfer-Encoding"), "chunked");
	CHECK_STR(hdr(&r, "X-Stream"), "yes");
	CHECK_STR(hdr(&r, "Content-Type"), "text/plain");
	CHECK(hdr(&r, "Content-Length") == NULL);
	CHECK(body_ok(&r.body));
	resp_free(&r);
	/* the chunks were framed right: the next answer on the connection reads */
	CHECK(read_resp(&c, &r, 0) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);
	conn_close(&c);
	join(0);
	CHECK_INT(jobs[0].failed_at, -1);
}

/*
 * A client that does not read holds the writer back (64 MiB asked for:
 * more than the kernel's socket buffers take); once it leaves, the
 * writes fail.
 */
static void test_slow_and_gone(void)
{
	static const char *get = "GET /stream/x?n=2048 HTTP/1.1\r\nHost: x\r\n\r\n";
	int fd = dial(port, 4096), i, n = atomic_load(&njobs), written;

	CHECK(fd >= 0);
	CHECK(send_all(fd, get, strlen(get)) == 0);
	/* the writer has begun (the limits only catch a hang: no machine needs a minute) */
	for (i = 0; i < 6000 && atomic_load(&njobs) == n; i++)
		usleep(10 * 1000);
	for (i = 0; i < 6000 && atomic_load(&jobs[n].written) == 0; i++)
		usleep(10 * 1000);
	/*
	 * then time for it to run far ahead, were it not held back: a slower
	 * machine writes less meanwhile, never more, so this decides nothing
	 * by speed
	 */
	usleep(300 * 1000);
	written = atomic_load(&jobs[n].written);
	/* the window (256 KiB) and the socket buffers: far from the 64 MiB */
	CHECK(written > 0 && written < 2048 / 4);
	CHECK(!atomic_load(&jobs[n].done));
	close(fd);
	join(n);
	CHECK(jobs[n].failed_at >= 0);
}

int main(void)
{
	struct snapshot_slot slot;
	struct http_options opt = {0};
	struct test_server s;
	struct resp r;

	log_set_level(LOG_ERROR);
	snapshot_slot_init(&slot);
	snapshot_publish(&slot, snapshot_new(1)); /* without a snapshot every request is a 503 */
	opt.slot = &slot;
	opt.threads = 1;
	opt.shutdown_grace_s = 1;
	if (test_server_new(&s, &opt) < 0)
		return test_done();
	CHECK(http_server_add_handler(s.srv, "/stream/", streamer, NULL) == 0);
	test_server_run(&s);

	port = s.port;
	RUN(test_whole);
	RUN(test_slow_and_gone);
	CHECK(fetch(s.port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", &r) == 0);
	CHECK_INT(r.status, 200);
	resp_free(&r);

	CHECK_INT(test_server_stop(&s), 0);
	snapshot_slot_release(&slot);
	return test_done();
}
