/*
 * http.c: the HTTP/1.1 front, on libevent's event loop.
 *
 * What. Serves the live snapshot: pages and assets from memory, attachments
 * from disk with sendfile, redirects, the themed 404, /healthz and
 * /metrics, and whatever other modules register with
 * http_server_add_handler().
 *
 * How. One event_base per thread. Each loop owns its own listening socket,
 * made here (socket, SO_REUSEPORT, bind, listen) and accepted from with an
 * evconnlistener, so the kernel balances new connections and loops share
 * no lock on the request path (the snapshot slot's two-instruction mutex
 * aside). SO_REUSEPORT would share the port with another process as well:
 * claim_address() first makes sure none listens there, and holds a lock
 * named after the address.
 *
 * Loading. A server made with opt->loading runs before its site is
 * loaded, answering every request 503 (builtin.c: http_answer_loading())
 * until http_server_ready(); the handlers, body policies and URL prefix
 * set meanwhile are read by the loops only after they see it ready. A
 * request takes a snapshot reference, looks the decoded path up, and
 * hands the page's bytes to the socket by reference, holding a page
 * reference until they are written: a snapshot published mid-response
 * frees nothing in flight. ETags were computed at load; dates are
 * formatted by hand and cached per loop.
 *
 * Files. This one owns the server: options, listening sockets, the loops
 * and their threads, accepting, stopping, signals. conn.c owns a
 * connection (reading, parse.c's llhttp, writing, deadlines); request.c
 * decodes a request and dispatches it (handlers, hosts, the snapshot) and
 * has the handler table and the request accessors; static.c answers from
 * the snapshot (gzip, conditional requests, ranges, attachments);
 * respond.c writes every response and the access log; defer.c carries
 * deferred replies back to their loop; guard.c has the per-address share
 * and the body limits; builtin.c has /healthz and /metrics; date.c formats
 * and parses HTTP dates; methods.c names the methods. What they share is
 * http-int.h.
 *
 * Connections. At max_connections a new connection closes the oldest idle
 * one of its loop (no request begun), else it is refused: closed at once.
 *
 * Stopping. A stop writes a byte to each loop's control pipe; the loop
 * closes its listening socket and its idle connections, answers what is
 * still in flight with "Connection: close", and exits once no response is
 * being written (or when the grace period ends).
 *
 * Rejected:
 * - evthread_use_pthreads() so that loops can wake each other with
 *   event_active(): it puts a lock around every event operation of every
 *   loop; one pipe per loop does the same job for a stop that happens once.
 * - evhttp (libevent's HTTP server, this front until issue 34): its
 *   parser state is private, so a header deadline, a body limit decided
 *   on the head and a body streamed to a file were each a workaround
 *   (TCP_INFO polled once a second, a peek into its input buffer, none);
 *   it knows nine methods (WebDAV's were rewritten into POST in its
 *   input), keeps headers as lists of three allocations each, and
 *   answered at 0.37-1.42 of nginx's rate (docs/performance.md).
 * - A parser of our own: llhttp is Node.js's, fuzzed and maintained, and
 *   Debian ships its C sources.
 */
#include "http/http.h"
#include "http/http-int.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>

#define DEFAULT_MAX_HEADER (8 * 1024)
#define DEFAULT_MAX_URI (4 * 1024)
#define DEFAULT_MAX_BODY (1024 * 1024)
#define DEFAULT_SMALL_BODY (64 * 1024)
#define DEFAULT_READ_TIMEOUT 15
#define DEFAULT_WRITE_TIMEOUT 30
#define DEFAULT_GRACE 10
#define DEFAULT_HEADER_TIMEOUT 10
#define LISTEN_BACKLOG 4096

/* ---- accepting ---- */

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
		      int salen, void *arg)
{
	struct worker *w = arg;
	struct http_server *srv = w->srv;
	int n = atomic_fetch_add_explicit(&srv->nconns, 1, memory_order_relaxed) + 1;

	(void)lev;
	if (srv->opt.max_connections > 0 && n > srv->opt.max_connections && !w->stopping &&
	    w->idle_head) {
		/*
		 * Full: the connection that waited longest for a request gives
		 * way, so that clients idling on every slot cannot lock new ones
		 * out; with none idle on this loop, the new one is refused.
		 */
		bump(&w->c.evicted, 1);
		http_conn_close(w->idle_head); /* one fewer */
		n = atomic_load_explicit(&srv->nconns, memory_order_relaxed);
	}
	if ((srv->opt.max_connections > 0 && n > srv->opt.max_connections) || w->stopping) {
		atomic_fetch_sub_explicit(&srv->nconns, 1, memory_order_relaxed);
		bump(&w->c.refused, 1);
		close(fd);
		return;
	}
	http_conn_accept(w, fd, sa, salen);
}


static void resume_accept(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;

	if (w->listener && !w->stopping)
		if (evconnlistener_enable(w->listener) < 0)
			log_error("http: cannot resume accepting");
}

/* accept() failed for a reason other than EAGAIN (EMFILE...): pause, not spin. */
static void accept_error(struct evconnlistener *lev, void *arg)
{
	struct worker *w = arg;
	struct timeval tv = { 0, 100 * 1000 };
	int err = errno;
	time_t now = time(NULL);

	if (!w || w->listener != lev)
		return;
	if (now - w->accept_warned >= 10) {
		log_warn("http: accept: %s; pausing in steps of 100 ms", strerror(err));
		w->accept_warned = now;
	}
	if (evconnlistener_disable(lev) < 0 || event_add(w->resume_ev, &tv) < 0)
		log_warn("http: cannot schedule accept");
}

/* ---- stopping ---- */

void http_check_stop(struct worker *w)
{
	struct timeval now;

	if (event_base_gettimeofday_cached(w->base, &now) < 0)
		gettimeofday(&now, NULL);
	if (w->inflight <= 0 || timercmp(&now, &w->deadline, >=))
		if (event_base_loopbreak(w->base) < 0)
			log_error("http: cannot stop loop %d", w->index);
}

static void grace_tick(evutil_socket_t fd, short what, void *arg)
{
	http_check_stop(arg);
}

static void begin_stop(struct worker *w)
{
	struct timeval now, tick = { 0, 20 * 1000 }, grace = { w->srv->grace_s, 0 };

	if (w->stopping)
		return;
	w->stopping = 1;
	/* first: answering parked requests below runs http_check_stop(), which reads it */
	gettimeofday(&now, NULL);
	timeradd(&now, &grace, &w->deadline);
	if (w->listener) {
		evconnlistener_free(w->listener); /* closes the socket */
		w->listener = NULL;
	}
	http_answer_parked(w);
	/* connections with nothing to write are idle (or mid-request): close them */
	http_conn_stop_all(w);
	if (event_add(w->grace_ev, &tick) < 0)
		log_warn("http: cannot arm the stop timer");
	http_check_stop(w);
}

static void on_control(evutil_socket_t fd, short what, void *arg)
{
	char b[16];

	while (read(fd, b, sizeof(b)) > 0)
		;
	begin_stop(arg);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;

	if (w->log.len)
		http_flush_log(w);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct http_server *srv = arg;

	struct log_event e;
	const char *name = sig == SIGHUP ? "SIGHUP" : sig == SIGINT ? "SIGINT" : "SIGTERM";

	log_event_init(&e, LOG_INFO, "signal");
	log_event_str(&e, "signal", name);
	if (sig == SIGHUP) {
		log_event_emit(&e, "SIGHUP: reopening the logs and reloading");
		if (srv->opt.on_reload)
			srv->opt.on_reload(srv->opt.reload_ctx);
		return;
	}
	log_event_emit(&e, "%s: stopping", name);
	http_server_stop(srv);
}

static void libevent_log(int severity, const char *msg)
{
	if (severity >= EVENT_LOG_ERR)
		log_error("libevent: %s", msg);
	else
		log_debug("libevent: %s", msg);
}

/* ---- setup ---- */

/* "host:port", "[v6]:port", ":port" → a socket address. */
static int resolve(const char *listen, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints, *res = NULL;
	char host[256];
	const char *port, *colon;
	size_t hlen;
	int rc;

	if (listen[0] == '[') {
		const char *end = strchr(listen, ']');
		if (!end || end[1] != ':')
			return log_error("http: bad listen address '%s'", listen);
		hlen = (size_t)(end - listen - 1);
		if (hlen >= sizeof(host))
			return log_error("http: bad listen address '%s'", listen);
		memcpy(host, listen + 1, hlen);
		port = end + 2;
	} else {
		colon = strrchr(listen, ':');
		if (!colon)
			return log_error("http: listen address '%s' has no port", listen);
		hlen = (size_t)(colon - listen);
		if (hlen >= sizeof(host))
			return log_error("http: bad listen address '%s'", listen);
		memcpy(host, listen, hlen);
		port = colon + 1;
	}
	host[hlen] = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(hlen && strcmp(host, "*") ? host : NULL, port, &hints, &res);
	if (rc != 0)
		return log_error("http: %s: %s", listen, gai_strerror(rc));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* The address as text for a message: "127.0.0.1:8080", "[::1]:8080". */
static void addr_text(const struct sockaddr_storage *ss, char *out, size_t size)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		snprintf(out, size, "[%s]:%d", host, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		snprintf(out, size, "%s:%d", host, ntohs(a->sin_port));
	}
}

static int listen_socket(const struct sockaddr_storage *ss, socklen_t len)
{
	int fd, one = 1;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return log_error("http: socket: %s", strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) {
		log_error("http: setsockopt: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
		char text[INET6_ADDRSTRLEN + 16];
		addr_text(ss, text, sizeof(text));
		log_error("http: %s: %s%s", text, errno == EADDRINUSE ? "address in use: " : "",
			  strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int set_port(struct sockaddr_storage *ss, int port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
	else
		return -1;
	return 0;
}

/* Whether a listening address reaches this machine only: 127.0.0.0/8 or ::1. */
static int is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return 0;
}

static int bound_port_of(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return -1;
}

static int bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -1;
	return bound_port_of(&ss);
}

/*
 * Makes sure no other server listens on the address: the loops' sockets
 * share it with SO_REUSEPORT, which would as gladly share it with a second
 * quire (or any server of the same user that sets it), the kernel then
 * splitting connections between two vaults. Two checks, for a fixed port
 * (port 0 gets a free one):
 *
 * - a lock: an abstract Unix socket named after the address, which the
 *   kernel gives to one process at a time and takes back when it exits
 *   (no file to leave behind), for two quires starting at once;
 * - a probe: a socket bound without SO_REUSEPORT, which bind() refuses
 *   while anything listens on the address (SO_REUSEADDR on it still lets
 *   connections in TIME_WAIT be).
 *
 * 0, or -1 with "address in use" logged. The lock's socket goes to *lock_fd.
 */
static int claim_address(const struct sockaddr_storage *ss, socklen_t len, int *lock_fd)
{
	struct sockaddr_un un;
	char text[INET6_ADDRSTRLEN + 16];
	int fd, one = 1, busy = 0;

	*lock_fd = -1;
	addr_text(ss, text, sizeof(text));
	if (bound_port_of(ss) == 0)
		return 0;
	memset(&un, 0, sizeof(un));
	un.sun_family = AF_UNIX;
	/* sun_path[0] == '\0': the abstract namespace */
	snprintf(un.sun_path + 1, sizeof(un.sun_path) - 1, "quire-serve %s", text);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&un,
			    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
					strlen(un.sun_path + 1))) == 0) {
		*lock_fd = fd;
	} else {
		busy = fd >= 0 && errno == EADDRINUSE;
		if (!busy)
			log_debug("http: no lock for %s: %s", text, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	if (!busy) {
		fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
		    bind(fd, (const struct sockaddr *)ss, len) < 0)
			busy = errno == EADDRINUSE;
		if (fd >= 0)
			close(fd);
	}
	if (!busy)
		return 0;
	if (*lock_fd >= 0)
		close(*lock_fd);
	*lock_fd = -1;
	return log_error("http: %s: address in use: another server listens there", text);
}

/* The loop has stopped: its listener and every connection go (no deferred request is touched after). */
static void close_all(struct worker *w)
{
	http_kill_deferred(w);
	if (w->listener) {
		evconnlistener_free(w->listener);
		w->listener = NULL;
	}
	while (w->conns)
		http_conn_close(w->conns);
}

static void worker_free(struct worker *w)
{
	if (!w)
		return;
	close_all(w);
	/* answers that came back after the loop stopped */
	if (w->done_lock_init)
		http_drop_late_answers(w);
	if (w->deferred)
		log_error("http: loop %d freed with deferred requests never answered", w->index);
	if (w->done_ev)
		event_free(w->done_ev);
	if (w->done_pipe[0] >= 0)
		close(w->done_pipe[0]);
	if (w->done_pipe[1] >= 0)
		close(w->done_pipe[1]);
	if (w->done_lock_init)
		pthread_mutex_destroy(&w->done_lock);
	if (w->listen_fd >= 0)
		close(w->listen_fd);
	if (w->ctl_ev)
		event_free(w->ctl_ev);
	if (w->grace_ev)
		event_free(w->grace_ev);
	if (w->flush_ev)
		event_free(w->flush_ev);
	if (w->resume_ev)
		event_free(w->resume_ev);
	if (w->base)
		event_base_free(w->base);
	if (w->ctl[0] >= 0)
		close(w->ctl[0]);
	if (w->ctl[1] >= 0)
		close(w->ctl[1]);
	if (w->log.len && w->srv->log_fd >= 0)
		http_flush_log(w);
	buf_release(&w->log);
	buf_release(&w->body);
	buf_release(&w->hdr);
	buf_release(&w->head);
	free(w->scratch);
	free(w);
}

/* A pipe with both ends non-blocking and close-on-exec. 0 or -1 (logged). */
static int nonblocking_pipe(int fds[2])
{
	if (pipe(fds) < 0)
		return log_error("http: pipe: %s", strerror(errno));
	if (fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(fds[1], F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(fds[0], F_SETFD, FD_CLOEXEC) < 0 || fcntl(fds[1], F_SETFD, FD_CLOEXEC) < 0)
		return log_error("http: fcntl: %s", strerror(errno));
	return 0;
}

static struct worker *worker_new(struct http_server *srv, int index, int fd)
{
	struct worker *w = xcalloc(1, sizeof(*w));
	struct event_config *cfg = NULL;
	struct timeval second = { 1, 0 };

	w->srv = srv;
	w->index = index;
	w->listen_fd = fd;
	w->ctl[0] = w->ctl[1] = -1;
	w->done_pipe[0] = w->done_pipe[1] = -1;
	w->scratch = xmalloc(srv->max_uri + 2);
	if (pthread_mutex_init(&w->done_lock, NULL) != 0) {
		log_error("http: cannot create a mutex");
		goto fail;
	}
	w->done_lock_init = 1;
	if (nonblocking_pipe(w->ctl) < 0 || nonblocking_pipe(w->done_pipe) < 0)
		goto fail;
	if (!(cfg = event_config_new()) ||
	    event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST) < 0 ||
	    !(w->base = event_base_new_with_config(cfg))) {
		log_error("http: cannot create an event loop");
		goto fail;
	}
	event_config_free(cfg);
	cfg = NULL;
	w->ctl_ev = event_new(w->base, w->ctl[0], EV_READ | EV_PERSIST, on_control, w);
	w->grace_ev = event_new(w->base, -1, EV_PERSIST, grace_tick, w);
	w->resume_ev = event_new(w->base, -1, 0, resume_accept, w);
	w->flush_ev = event_new(w->base, -1, EV_PERSIST, on_flush, w);
	w->done_ev = event_new(w->base, w->done_pipe[0], EV_READ | EV_PERSIST, http_on_done, w);
	if (!w->ctl_ev || !w->grace_ev || !w->resume_ev || !w->flush_ev || !w->done_ev ||
	    event_add(w->ctl_ev, NULL) < 0 || event_add(w->done_ev, NULL) < 0) {
		log_error("http: cannot create events");
		goto fail;
	}
	if (srv->log_fd >= 0 && event_add(w->flush_ev, &second) < 0) {
		log_error("http: cannot arm the log timer");
		goto fail;
	}
	w->read_common = event_base_init_common_timeout(w->base, &srv->read_tv);
	w->head_common = event_base_init_common_timeout(w->base, &srv->head_tv);
	w->listener = evconnlistener_new(w->base, on_accept, w,
					 LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (!w->read_common || !w->head_common || !w->listener) {
		log_error("http: cannot accept on the listening socket");
		goto fail;
	}
	w->listen_fd = -1; /* the listener owns it now */
	evconnlistener_set_error_cb(w->listener, accept_error);
	return w;
fail:
	if (cfg)
		event_config_free(cfg);
	worker_free(w);
	return NULL;
}

/* The access log's file, opened for appending: a descriptor, or -1 (logged). */
static int open_access_log(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0)
		log_error("http: %s: %s", path, strerror(errno));
	return fd;
}

struct http_server *http_server_new(const struct http_options *opt)
{
	struct http_server *srv = xcalloc(1, sizeof(*srv));
	struct sockaddr_storage ss;
	socklen_t sslen = 0;
	int i, fd;

	srv->log_fd = -1;
	srv->lock_fd = -1;
	srv->spool_fd = -1;
	srv->opt = *opt;
	if (!opt->slot) {
		log_error("http: no snapshot slot");
		goto fail;
	}
	srv->listen = xstrdup(opt->listen ? opt->listen : "127.0.0.1:8080");
	srv->opt.listen = srv->listen;
	http_server_set_url_prefix(srv, opt->url_prefix);
	atomic_init(&srv->ready, !opt->loading);
	if (opt->access_log) {
		srv->access_log = xstrdup(opt->access_log);
		srv->opt.access_log = srv->access_log;
		srv->log_json = opt->access_log_json;
		if ((srv->log_fd = open_access_log(srv->access_log)) < 0)
			goto fail;
	}
	if (!srv->opt.threads)
		srv->opt.threads = 1;
	if (srv->opt.threads < 0 || srv->opt.threads > 256) {
		log_error("http: bad thread count %d", opt->threads);
		goto fail;
	}
	if (!srv->opt.max_header_size)
		srv->opt.max_header_size = DEFAULT_MAX_HEADER;
	if (!srv->opt.max_uri_length)
		srv->opt.max_uri_length = DEFAULT_MAX_URI;
	if (!srv->opt.max_body_size)
		srv->opt.max_body_size = DEFAULT_MAX_BODY;
	if (!srv->opt.small_body_size)
		srv->opt.small_body_size = DEFAULT_SMALL_BODY;
	if (srv->opt.small_body_size > srv->opt.max_body_size)
		srv->opt.small_body_size = srv->opt.max_body_size;
	srv->max_uri = srv->opt.max_uri_length;
	if (srv->opt.max_uri_length > srv->opt.max_header_size)
		srv->opt.max_header_size = srv->opt.max_uri_length + 1024;
	srv->head_tv.tv_sec = opt->header_timeout_s > 0 ? opt->header_timeout_s
							: DEFAULT_HEADER_TIMEOUT;
	srv->read_tv.tv_sec = opt->read_timeout_s > 0 ? opt->read_timeout_s : DEFAULT_READ_TIMEOUT;
	srv->write_tv.tv_sec = opt->write_timeout_s > 0 ? opt->write_timeout_s : DEFAULT_WRITE_TIMEOUT;
	srv->grace_s = opt->shutdown_grace_s > 0 ? opt->shutdown_grace_s : DEFAULT_GRACE;
	atomic_init(&srv->nconns, 0);
	http_guard_init(srv);
	srv->guard_init = 1;
	if (http_guard_trust(srv, opt->trusted_proxies) < 0)
		goto fail;
	srv->started = time(NULL);
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		log_error("http: cannot ignore SIGPIPE");
		goto fail;
	}
	event_set_log_callback(libevent_log);
	if (resolve(srv->listen, &ss, &sslen) < 0)
		goto fail;
	srv->loopback = is_loopback(&ss);
	if (claim_address(&ss, sslen, &srv->lock_fd) < 0)
		goto fail;
	srv->workers = xcalloc((size_t)srv->opt.threads, sizeof(*srv->workers));
	for (i = 0; i < srv->opt.threads; i++) {
		if ((fd = listen_socket(&ss, sslen)) < 0)
			goto fail;
		if (i == 0) {
			srv->port = bound_port(fd);
			if (srv->port <= 0 || set_port(&ss, srv->port) < 0) {
				log_error("http: cannot read the bound port");
				close(fd);
				goto fail;
			}
		}
		if (!(srv->workers[i] = worker_new(srv, i, fd)))
			goto fail;
		srv->nworkers = i + 1;
	}
	if (http_add_builtin_handlers(srv) < 0)
		goto fail;
	return srv;
fail:
	http_server_free(srv);
	return NULL;
}

void http_server_set_url_prefix(struct http_server *srv, const char *url_prefix)
{
	struct buf prefix = BUF_INIT;
	size_t plen = url_prefix ? strlen(url_prefix) : 0;

	if (srv->ran && http_server_is_ready(srv)) {
		log_error("http: the URL prefix is set before the server is ready");
		return;
	}
	/* "/docs/" and "docs" mean "/docs"; "" and "/" mean no prefix */
	while (plen && url_prefix[plen - 1] == '/')
		plen--;
	if (plen && url_prefix[0] != '/')
		buf_addc(&prefix, '/');
	buf_add(&prefix, url_prefix ? url_prefix : "", plen);
	free(srv->prefix);
	srv->prefix = buf_detach(&prefix, &srv->prefix_len);
	srv->opt.url_prefix = srv->prefix;
}

void http_server_add_metrics(struct http_server *srv, void (*fn)(void *ctx, struct buf *out),
			     void *ctx)
{
	if ((srv->ran && http_server_is_ready(srv)) || srv->nhooks >= HTTP_MAX_HOOKS) {
		log_error("http: metrics are added before the server is ready, up to %d",
			  HTTP_MAX_HOOKS);
		return;
	}
	srv->hooks[srv->nhooks].fn = fn;
	srv->hooks[srv->nhooks++].ctx = ctx;
}

void http_server_add_page_header(struct http_server *srv, const char *line)
{
	if (srv->ran && http_server_is_ready(srv)) {
		log_error("http: page headers are added before the server is ready");
		return;
	}
	free(srv->page_header);
	srv->page_header = xstrdup(line);
}

int http_server_reopen_log(struct http_server *srv)
{
	int fd, rc = 0;

	if (srv->log_fd < 0)
		return 0;
	/*
	 * The new file takes the old descriptor's number (dup2 is atomic): a
	 * loop flushing its lines meanwhile writes them to one file or the
	 * other, and no loop ever holds a descriptor that was closed.
	 */
	if ((fd = open_access_log(srv->access_log)) < 0)
		return -1;
	if (dup2(fd, srv->log_fd) < 0)
		rc = log_error("http: %s: %s", srv->access_log, strerror(errno));
	close(fd);
	return rc;
}

void http_server_ready(struct http_server *srv)
{
	atomic_store_explicit(&srv->ready, 1, memory_order_release);
}

int http_server_port(const struct http_server *srv)
{
	return srv->port;
}

int http_server_loopback(const struct http_server *srv)
{
	return srv->loopback;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	if (event_base_dispatch(w->base) < 0)
		log_error("http: loop %d failed", w->index);
	return NULL;
}

int http_server_run(struct http_server *srv)
{
	struct event_base *main_base = srv->workers[0]->base;
	int i, rc = 0;

	if (srv->ran)
		return log_error("http: http_server_run called twice");
	srv->ran = 1;
	if (srv->opt.handle_signals) {
		srv->sig_int = evsignal_new(main_base, SIGINT, on_signal, srv);
		srv->sig_term = evsignal_new(main_base, SIGTERM, on_signal, srv);
		srv->sig_hup = evsignal_new(main_base, SIGHUP, on_signal, srv);
		if (!srv->sig_int || !srv->sig_term || !srv->sig_hup ||
		    evsignal_add(srv->sig_int, NULL) < 0 || evsignal_add(srv->sig_term, NULL) < 0 ||
		    evsignal_add(srv->sig_hup, NULL) < 0)
			return log_error("http: cannot install signal handlers");
	}
	for (i = 1; i < srv->nworkers; i++) {
		int err = pthread_create(&srv->workers[i]->thread, NULL, worker_main, srv->workers[i]);
		if (err) {
			log_error("http: pthread_create: %s", strerror(err));
			http_server_stop(srv);
			rc = -1;
			break;
		}
		srv->workers[i]->thread_started = 1;
	}
	if (event_base_dispatch(main_base) < 0) {
		log_error("http: loop 0 failed");
		rc = -1;
	}
	for (i = 1; i < srv->nworkers; i++) {
		if (srv->workers[i]->thread_started) {
			int err = pthread_join(srv->workers[i]->thread, NULL);
			if (err) {
				log_error("http: pthread_join: %s", strerror(err));
				rc = -1;
			}
			srv->workers[i]->thread_started = 0;
		}
	}
	/* every loop has stopped: close what is left on this thread */
	for (i = 0; i < srv->nworkers; i++) {
		struct worker *w = srv->workers[i];
		close_all(w);
		if (w->log.len)
			http_flush_log(w);
	}
	if ((srv->sig_int && event_del(srv->sig_int) < 0) ||
	    (srv->sig_term && event_del(srv->sig_term) < 0) ||
	    (srv->sig_hup && event_del(srv->sig_hup) < 0))
		log_warn("http: cannot remove the signal handlers");
	return rc;
}

void http_server_stop(struct http_server *srv)
{
	int i;

	for (i = 0; i < srv->nworkers; i++) {
		ssize_t n;
		do
			n = write(srv->workers[i]->ctl[1], "s", 1);
		while (n < 0 && errno == EINTR);
		/* EAGAIN: the pipe is full of stop requests already */
	}
}

void http_server_free(struct http_server *srv)
{
	size_t j;
	int i;

	if (!srv)
		return;
	if (srv->sig_int)
		event_free(srv->sig_int);
	if (srv->sig_term)
		event_free(srv->sig_term);
	if (srv->sig_hup)
		event_free(srv->sig_hup);
	for (i = 0; i < srv->nworkers; i++)
		worker_free(srv->workers[i]);
	if (srv->guard_init)
		http_guard_release(srv);
	for (i = 0; i < srv->npolicies; i++)
		free(srv->policies[i].prefix);
	free(srv->workers);
	for (j = 0; j < srv->nhandlers; j++)
		free(srv->handlers[j].prefix);
	free(srv->handlers);
	if (srv->log_fd >= 0 && close(srv->log_fd) < 0)
		log_warn("http: %s: %s", srv->access_log, strerror(errno));
	if (srv->lock_fd >= 0)
		close(srv->lock_fd);
	free(srv->listen);
	free(srv->page_header);
	free(srv->prefix);
	free(srv->access_log);
	free(srv);
}
