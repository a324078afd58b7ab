/*
 * synccli.c: `quire sync`, on evhttp's client.
 *
 * Steps, in order: scan the local vault with the scanner's rules (no
 * ignore globs, as the server's manifest), hash every file through the
 * hash cache (in parallel; only changed files are read), fetch the
 * manifest, plan (upload new and changed files, delete what only the
 * server has with --delete, count the rest unchanged), run the plan on
 * --jobs keep-alive connections from one event loop, then long-poll
 * /api/v1/wait for the highest version the server returned.
 *
 * Each connection runs one request at a time and takes the next
 * operation from the plan when it finishes, so --jobs bounds both
 * concurrency and memory (a file is read into memory when its upload
 * starts and freed when the request is done).
 *
 * Outcomes. 200/201 uploaded; DELETE 200, or 404 (already gone), deleted;
 * 412 a conflict (the server's file is not the one the manifest showed);
 * anything else, or a connection failure, failed. The exit status is 1
 * when anything conflicted or failed.
 *
 * Rejected: re-reading each file's hash just before sending it (the
 * server returns the hash of what it stored, which is compared with the
 * planned one instead: a file changed during the run is reported, and the
 * next run sends it again).
 *
 * Test hooks (environment): QUIRE_SYNC_TEST_PAUSE_AFTER_MANIFEST_MS sleeps
 * after the manifest is fetched; QUIRE_SYNC_TEST_DELAY_MS delays the start
 * of each request.
 */
#include "sync/synccli.h"
#include "util/clock.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/hash.h"
#include "sync/hashcache.h"
#include "util/json.h"
#include "util/log.h"
#include "util/map.h"
#include "util/parallel.h"
#include "sync/syncapi.h"
#include "vault/vault.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#define DEFAULT_JOBS 4
#define MAX_JOBS 64
#define REQUEST_TIMEOUT_S 300
#define WAIT_TIMEOUT_MS 60000
#define PROGRESS_EVERY_MS 100

static const char sync_usage[] =
	"usage: quire sync VAULT URL [--token-file FILE] [--delete] [--dry-run] [--jobs N]\n"
	"\n"
	"Pushes the vault folder VAULT to the quire server at URL (http://host:port[/prefix])\n"
	"through its sync API, and waits until the site shows the changes. Files that are\n"
	"new or changed are uploaded; a file changed on the server since it was listed is\n"
	"reported as a conflict, not overwritten. Run it again after an interruption: it\n"
	"sends only what is left.\n"
	"\n"
	"  --token-file FILE   the API token (default: $QUIRE_TOKEN)\n"
	"  --delete            also delete files the server has and VAULT does not\n"
	"  --dry-run           print what would be done, change nothing\n"
	"  --jobs N            requests at once (default 4)\n";

enum op_kind { OP_PUT, OP_DELETE };

struct op {
	enum op_kind kind;
	const char *path;          /* NFC, borrowed from the scan or the manifest */
	const char *disk;          /* local, relative to the vault (PUT) */
	char sha[SHA256_HEX_SIZE]; /* the local hash (PUT) */
	char remote[SHA256_HEX_SIZE]; /* the server's hash, "" when new */
	off_t size;
};

struct remote {
	char *path;
	char sha[SHA256_HEX_SIZE];
	uint64_t size;
	int seen;                  /* the local vault has this path */
};

struct conn_slot {
	struct client *c;
	struct evhttp_connection *con;
	struct op *op;             /* in flight, or NULL */
	struct event *delay;       /* QUIRE_SYNC_TEST_DELAY_MS */
};

struct client {
	const char *vault;
	struct event_base *base;
	char *host;
	int port;
	char *prefix;              /* URL path without trailing '/', or "" */
	char *auth;                /* "Bearer <token>" */
	struct conn_slot *slots;
	int nslots;
	struct op *ops;
	size_t nops, aops, next, done;
	int running;
	uint64_t bytes_total, bytes_done;
	size_t uploaded, deleted, conflicts, failed;
	uint64_t max_version;
	int delay_ms;
	int progress;              /* stderr is a terminal */
	int64_t last_progress;
	/* a single synchronous request (manifest, wait) */
	int sync_done, sync_status;
	struct buf sync_body;
};

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
 * A GET on the first connection, run to its end on the loop. Returns the
 * status (0 when the connection failed); the body goes to c->sync_body.
 */
static int fetch(struct client *c, const char *target)
{
	struct evhttp_request *req = new_request(c, sync_cb, c);

	c->sync_done = 0;
	c->sync_status = 0;
	if (!req)
		return 0;
	if (evhttp_make_request(c->slots[0].con, req, EVHTTP_REQ_GET, target) < 0)
		return 0; /* evhttp freed req */
	while (!c->sync_done)
		if (event_base_dispatch(c->base) < 0)
			break;
	return c->sync_status;
}

static void start_next(struct conn_slot *s);

/* An operation's answer. */
static void op_cb(struct evhttp_request *req, void *arg)
{
	struct conn_slot *s = arg;
	struct client *c = s->c;
	struct op *op = s->op;
	int status = req ? evhttp_request_get_response_code(req) : 0;
	struct buf msg = BUF_INIT;

	s->op = NULL;
	c->running--;
	c->done++;
	if (op->kind == OP_PUT)
		c->bytes_done += (uint64_t)op->size;
	if ((op->kind == OP_PUT && (status == 200 || status == 201)) ||
	    (op->kind == OP_DELETE && (status == 200 || status == 404))) {
		struct evbuffer *in = evhttp_request_get_input_buffer(req);
		size_t len = evbuffer_get_length(in);
		const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
		struct json_reader jr;
		struct buf key = BUF_INIT, sha = BUF_INIT;
		uint64_t v = 0;

		json_init(&jr, body ? body : "", body ? len : 0);
		if (json_object(&jr) == 0) {
			while (json_key(&jr, &key) > 0) {
				if (strcmp(key.ptr, "version") == 0 && json_u64(&jr, &v) == 0 &&
				    v > c->max_version)
					c->max_version = v;
				else if (strcmp(key.ptr, "sha256") == 0)
					json_string(&jr, &sha);
				else if (json_skip(&jr) < 0)
					break;
			}
		}
		if (op->kind == OP_PUT) {
			c->uploaded++;
			if (sha.len && strcmp(sha.ptr, op->sha) != 0)
				say(c, "changed while syncing: %s (the server has what was read; "
				       "run sync again)", op->path);
		} else {
			c->deleted++;
		}
		buf_release(&key);
		buf_release(&sha);
	} else if (status == 412) {
		c->conflicts++;
		say(c, "conflict: %s: changed on the server since the manifest was read; not %s",
		    op->path, op->kind == OP_PUT ? "overwritten" : "deleted");
	} else {
		c->failed++;
		describe(req, &msg);
		say(c, "failed: %s %s: %s", op->kind == OP_PUT ? "upload" : "delete", op->path,
		    msg.ptr);
	}
	buf_release(&msg);
	progress(c, 0);
	start_next(s);
}

static void fail_op(struct conn_slot *s, struct op *op, const char *why)
{
	struct client *c = s->c;

	c->failed++;
	c->done++;
	say(c, "failed: %s %s: %s", op->kind == OP_PUT ? "upload" : "delete", op->path, why);
}

/* Starts the next operation of the plan on s, or leaves s idle. */
static void launch(struct conn_slot *s)
{
	struct client *c = s->c;

	while (c->next < c->nops) {
		struct op *op = &c->ops[c->next++];
		struct evhttp_request *req;
		struct buf target = BUF_INIT, body = BUF_INIT, full = BUF_INIT;
		struct evkeyvalq *h;
		char tag[SHA256_HEX_SIZE + 3], num[32];
		int rc = 0;

		buf_addf(&target, "%s/api/v1/files/", c->prefix);
		buf_add_urlpath(&target, op->path, strlen(op->path));
		req = new_request(c, op_cb, s);
		if (!req) {
			fail_op(s, op, "cannot make a request");
			buf_release(&target);
			continue;
		}
		h = evhttp_request_get_output_headers(req);
		if (op->kind == OP_PUT) {
			/*
			 * The file's bytes, read now: read_file() (whole, into memory), since
			 * the body must be in the request's buffer before it is sent, and
			 * freed when the request is done (--jobs bounds how many are held).
			 * Rejected: evbuffer_add_file() (the file could change between the
			 * Content-Length and the last byte sent).
			 */
			buf_addf(&full, "%s/%s", c->vault, op->disk);
			if (read_file(full.ptr, &body) < 0) {
				fail_op(s, op, strerror(errno));
				evhttp_request_free(req);
				buf_release(&target);
				buf_release(&full);
				buf_release(&body);
				continue;
			}
			op->size = (off_t)body.len;
			snprintf(num, sizeof(num), "%zu", body.len);
			rc |= evhttp_add_header(h, "Content-Length", num);
			rc |= evhttp_add_header(h, "Content-Type", "application/octet-stream");
			if (op->remote[0]) {
				snprintf(tag, sizeof(tag), "\"%s\"", op->remote);
				rc |= evhttp_add_header(h, "If-Match", tag);
			} else {
				rc |= evhttp_add_header(h, "If-None-Match", "*");
			}
			rc |= evbuffer_add(evhttp_request_get_output_buffer(req), body.ptr, body.len);
		} else {
			snprintf(tag, sizeof(tag), "\"%s\"", op->remote);
			rc |= evhttp_add_header(h, "If-Match", tag);
		}
		buf_release(&full);
		buf_release(&body);
		if (rc) {
			fail_op(s, op, "cannot make a request");
			evhttp_request_free(req);
			buf_release(&target);
			continue;
		}
		s->op = op;
		c->running++;
		if (evhttp_make_request(s->con, req,
					op->kind == OP_PUT ? EVHTTP_REQ_PUT : EVHTTP_REQ_DELETE,
					target.ptr) < 0) {
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

/* ---- the local side ---- */

struct hash_work {
	struct hash_cache *cache;
	int dirfd;
	struct vault_scan *scan;
	char (*sha)[SHA256_HEX_SIZE];
	char *ok;
	atomic_size_t hashed;
};

static void hash_one(void *ctx, size_t i)
{
	struct hash_work *w = ctx;
	const struct vault_file *f = &w->scan->files[i];
	struct stat st;
	int rc = hash_cache_file(w->cache, w->dirfd, f->disk, f->path, w->sha[i], &st);

	w->ok[i] = rc >= 0;
	if (rc > 0)
		atomic_fetch_add(&w->hashed, 1);
	if (rc >= 0)
		w->scan->files[i].size = st.st_size;
}

/* ---- the manifest ---- */

static void free_remote(struct map *m)
{
	size_t i = 0, klen;
	const char *key;
	void *v;

	while (map_next(m, &i, &key, &klen, &v)) {
		struct remote *r = v;
		free(r->path);
		free(r);
	}
	map_release(m);
}

/* Parses {"version":N,"files":{"path":{"sha256":"..","size":N},...}} into m. 0 or -1. */
static int parse_manifest(const char *body, size_t len, struct map *m, uint64_t *version)
{
	struct json_reader jr;
	struct buf key = BUF_INIT, path = BUF_INIT, field = BUF_INIT, sha = BUF_INIT;
	int rc = -1, have_files = 0;

	json_init(&jr, body, len);
	if (json_object(&jr) < 0)
		goto out;
	while (json_key(&jr, &key) > 0) {
		if (strcmp(key.ptr, "version") == 0) {
			if (json_u64(&jr, version) < 0)
				goto out;
			continue;
		}
		if (strcmp(key.ptr, "files") != 0) {
			if (json_skip(&jr) < 0)
				goto out;
			continue;
		}
		have_files = 1;
		if (json_object(&jr) < 0)
			goto out;
		while (json_key(&jr, &path) > 0) {
			struct remote *r = xcalloc(1, sizeof(*r));
			struct remote *old;
			r->path = xstrdup(path.ptr);
			old = map_put(m, r->path, strlen(r->path), r);
			if (old) {
				free(old->path);
				free(old);
			}
			if (json_object(&jr) < 0)
				goto out;
			while (json_key(&jr, &field) > 0) {
				if (strcmp(field.ptr, "sha256") == 0) {
					if (json_string(&jr, &sha) < 0 || sha.len != 64)
						goto out;
					memcpy(r->sha, sha.ptr, SHA256_HEX_SIZE);
				} else if (strcmp(field.ptr, "size") == 0) {
					if (json_u64(&jr, &r->size) < 0)
						goto out;
				} else if (json_skip(&jr) < 0) {
					goto out;
				}
			}
			if (!r->sha[0])
				goto out;
		}
	}
	if (jr.failed || json_end(&jr) < 0 || !have_files)
		goto out;
	rc = 0;
out:
	buf_release(&key);
	buf_release(&path);
	buf_release(&field);
	buf_release(&sha);
	return rc;
}

/* ---- the command ---- */

/* "http://host[:port][/prefix]" into the client; 0 or -1 (printed). */
static int parse_url(struct client *c, const char *url)
{
	struct evhttp_uri *u = evhttp_uri_parse(url);
	const char *scheme, *host, *path;
	size_t n;
	int ret = -1;

	if (!u) {
		fprintf(stderr, "quire sync: '%s' is not a URL\n", url);
		return -1;
	}
	scheme = evhttp_uri_get_scheme(u);
	host = evhttp_uri_get_host(u);
	path = evhttp_uri_get_path(u);
	if (!scheme || strcmp(scheme, "http") != 0) {
		fprintf(stderr, "quire sync: only http:// URLs are supported (put TLS in front "
				"with a tunnel or run it on the same host), got '%s'\n",
			url);
		goto out;
	}
	if (!host || !*host) {
		fprintf(stderr, "quire sync: '%s' has no host\n", url);
		goto out;
	}
	c->host = xstrdup(host);
	c->port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : 80;
	n = path ? strlen(path) : 0;
	while (n && path[n - 1] == '/')
		n--;
	c->prefix = xstrndup(path ? path : "", n);
	ret = 0;
out:
	evhttp_uri_free(u);
	return ret;
}

/* The token: the first line of file, else $QUIRE_TOKEN. NULL when neither (printed). */
static char *load_token(const char *file)
{
	struct buf b = BUF_INIT;
	const char *env = getenv("QUIRE_TOKEN");
	size_t n;
	char *t;

	if (!file) {
		if (env && *env)
			return xstrdup(env);
		fprintf(stderr, "quire sync: no token: give --token-file FILE or set QUIRE_TOKEN\n");
		return NULL;
	}
	/*
	 * Opening the token file: read_file(), whole; the first line is the
	 * token, so an editor's trailing newline is not part of it.
	 * Rejected: a --token flag (the token would show in ps and shell history).
	 */
	if (read_file(file, &b) < 0) {
		fprintf(stderr, "quire sync: %s: %s\n", file, strerror(errno));
		return NULL;
	}
	n = strcspn(b.ptr, "\r\n");
	while (n && (b.ptr[n - 1] == ' ' || b.ptr[n - 1] == '\t'))
		n--;
	t = n ? xstrndup(b.ptr, n) : NULL;
	if (!t)
		fprintf(stderr, "quire sync: %s holds no token\n", file);
	buf_release(&b);
	return t;
}

static int cmp_ops(const void *a, const void *b)
{
	const struct op *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind == OP_PUT ? -1 : 1;
	return strcmp(x->path, y->path);
}

static int env_ms(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : 0;
}

int sync_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "token-file", required_argument, NULL, 't' },
		{ "delete", no_argument, NULL, 'd' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct client c;
	struct vault_scan scan = VAULT_SCAN_INIT;
	struct diag_list diags;
	struct hash_work hw;
	struct hash_cache *cache = NULL;
	struct map remote = MAP_INIT;
	struct buf cache_file = BUF_INIT, target = BUF_INIT;
	const char *token_file = NULL, *vault, *url;
	char *token = NULL;
	int do_delete = 0, dry = 0, jobs = DEFAULT_JOBS, opt, ret = 1, vfd = -1, i;
	size_t k, unchanged = 0, skipped = 0, only_remote = 0;
	uint64_t version = 0;
	int64_t t0 = (int64_t)clock_ms();

	memset(&c, 0, sizeof(c));
	memset(&hw, 0, sizeof(hw));
	buf_init(&c.sync_body, 0);
	diag_list_init(&diags);
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 't': token_file = optarg; break;
		case 'd': do_delete = 1; break;
		case 'n': dry = 1; break;
		case 'j': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v < 1 || v > MAX_JOBS) {
				fprintf(stderr, "quire sync: --jobs takes 1 to %d, got '%s'\n", MAX_JOBS,
					optarg);
				return 2;
			}
			jobs = (int)v;
			break;
		}
		case 'h': fputs(sync_usage, stdout); return 0;
		default: fputs(sync_usage, stderr); return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "quire sync: VAULT and URL are required\n%s", sync_usage);
		return 2;
	}
	vault = argv[optind];
	url = argv[optind + 1];
	c.vault = vault;
	if (parse_url(&c, url) < 0)
		goto out;
	if (!(token = load_token(token_file)))
		goto out;
	c.auth = xmalloc(strlen(token) + 8);
	sprintf(c.auth, "Bearer %s", token);
	c.progress = isatty(2);
	c.delay_ms = env_ms("QUIRE_SYNC_TEST_DELAY_MS");

	/* the local files and their hashes */
	if (vault_scan(vault, NULL, &scan, &diags) < 0)
		goto out;
	for (k = 0; k < diags.n; k++)
		fprintf(stderr, "%s: %s: %s\n", diags.items[k].path,
			diags.items[k].level == DIAG_ERROR ? "skipped" : "note", diags.items[k].msg);
	/*
	 * Opening the vault folder: every local file is hashed relative to it,
	 * so the scan and the hashing see one folder.
	 * Rejected: joining paths per file (the path is resolved again each time).
	 */
	vfd = open(vault, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (vfd < 0) {
		fprintf(stderr, "quire sync: %s: %s\n", vault, strerror(errno));
		goto out;
	}
	buf_addf(&cache_file, "%s/.quire", vault);
	if (!dry && mkdir(cache_file.ptr, 0755) < 0 && errno != EEXIST)
		fprintf(stderr, "quire sync: %s: %s (hashes are not remembered)\n", cache_file.ptr,
			strerror(errno));
	buf_adds(&cache_file, "/sync-cache");
	cache = hash_cache_new();
	if (hash_cache_load(cache, cache_file.ptr) < 0)
		fprintf(stderr, "quire sync: starting with no remembered hashes\n");
	hw.cache = cache;
	hw.dirfd = vfd;
	hw.scan = &scan;
	hw.sha = xcalloc(scan.n + 1, sizeof(*hw.sha));
	hw.ok = xcalloc(scan.n + 1, 1);
	atomic_init(&hw.hashed, 0);
	{
		uint64_t pass = hash_cache_mark(cache);
		parallel_for(scan.n, parallel_cpus(), hash_one, &hw);
		hash_cache_sweep(cache, pass);
	}
	if (!dry && hash_cache_dirty(cache) && hash_cache_save(cache, cache_file.ptr) < 0)
		fprintf(stderr, "quire sync: hashes are not remembered for the next run\n");

	/* the server's side */
	c.base = event_base_new();
	if (!c.base) {
		fprintf(stderr, "quire sync: cannot create an event loop\n");
		goto out;
	}
	c.nslots = jobs;
	c.slots = xcalloc((size_t)jobs, sizeof(*c.slots));
	for (i = 0; i < jobs; i++) {
		c.slots[i].c = &c;
		c.slots[i].con = evhttp_connection_base_new(c.base, NULL, c.host, (ev_uint16_t)c.port);
		if (!c.slots[i].con) {
			fprintf(stderr, "quire sync: cannot connect to %s:%d\n", c.host, c.port);
			goto out;
		}
		evhttp_connection_set_timeout(c.slots[i].con, REQUEST_TIMEOUT_S);
		evhttp_connection_set_retries(c.slots[i].con, 2);
	}
	buf_addf(&target, "%s/api/v1/manifest", c.prefix);
	if (fetch(&c, target.ptr) != 200) {
		fprintf(stderr, "quire sync: cannot read the manifest from %s: %s\n", url,
			c.sync_status ? c.sync_body.ptr : "connection failed");
		goto out;
	}
	if (parse_manifest(c.sync_body.ptr, c.sync_body.len, &remote, &version) < 0) {
		fprintf(stderr, "quire sync: the server's manifest is not valid\n");
		goto out;
	}
	if (env_ms("QUIRE_SYNC_TEST_PAUSE_AFTER_MANIFEST_MS") > 0)
		usleep((useconds_t)env_ms("QUIRE_SYNC_TEST_PAUSE_AFTER_MANIFEST_MS") * 1000);

	/* the plan */
	for (k = 0; k < scan.n; k++) {
		const struct vault_file *f = &scan.files[k];
		struct remote *r = map_gets(&remote, f->path);
		struct buf nfc = BUF_INIT;
		const char *why;
		struct op *op;

		if (r)
			r->seen = 1;
		if (!hw.ok[k]) {
			fprintf(stderr, "failed: %s: cannot read it\n", f->path);
			c.failed++;
			continue;
		}
		if (syncapi_check_path(f->path, strlen(f->path), &nfc, &why) < 0) {
			fprintf(stderr, "skipped: %s: %s\n", f->path, why);
			skipped++;
			buf_release(&nfc);
			continue;
		}
		buf_release(&nfc);
		if (r && strcmp(r->sha, hw.sha[k]) == 0) {
			unchanged++;
			continue;
		}
		ALLOC_GROW(c.ops, c.nops + 1, c.aops);
		op = &c.ops[c.nops++];
		memset(op, 0, sizeof(*op));
		op->kind = OP_PUT;
		op->path = f->path;
		op->disk = f->disk;
		op->size = f->size;
		memcpy(op->sha, hw.sha[k], SHA256_HEX_SIZE);
		if (r)
			memcpy(op->remote, r->sha, SHA256_HEX_SIZE);
		c.bytes_total += (uint64_t)f->size;
	}
	{
		size_t it = 0, klen;
		const char *key;
		void *v;
		while (map_next(&remote, &it, &key, &klen, &v)) {
			struct remote *r = v;
			struct op *op;
			if (r->seen)
				continue;
			if (!do_delete) {
				only_remote++;
				continue;
			}
			ALLOC_GROW(c.ops, c.nops + 1, c.aops);
			op = &c.ops[c.nops++];
			memset(op, 0, sizeof(*op));
			op->kind = OP_DELETE;
			op->path = r->path;
			memcpy(op->remote, r->sha, SHA256_HEX_SIZE);
		}
	}
	if (c.nops)
		qsort(c.ops, c.nops, sizeof(*c.ops), cmp_ops);
	if (do_delete && scan.n == 0 && remote.len > 0) {
		fprintf(stderr, "quire sync: %s has no files; refusing to delete all %zu files on the "
				"server\n", vault, remote.len);
		goto out;
	}

	if (dry) {
		for (k = 0; k < c.nops; k++) {
			const struct op *op = &c.ops[k];
			if (op->kind == OP_PUT)
				printf("would upload %s (%s, %lld bytes)\n", op->path,
				       op->remote[0] ? "changed" : "new", (long long)op->size);
			else
				printf("would delete %s\n", op->path);
		}
	} else if (c.nops) {
		progress(&c, 0);
		for (i = 0; i < jobs; i++)
			start_next(&c.slots[i]);
		while (c.running > 0)
			if (event_base_dispatch(c.base) < 0)
				break;
		progress(&c, 1);
	}
	if (!dry && (c.uploaded || c.deleted) && c.max_version > 0) {
		buf_reset(&target);
		buf_addf(&target, "%s/api/v1/wait?version=%" PRIu64 "&timeout=%d", c.prefix,
			 c.max_version, WAIT_TIMEOUT_MS);
		if (fetch(&c, target.ptr) != 200) {
			fprintf(stderr, "quire sync: the server has not published snapshot %" PRIu64
					" yet: %s\n", c.max_version,
				c.sync_status ? c.sync_body.ptr : "connection failed");
			c.failed++;
		}
	}
	if (skipped)
		c.failed += skipped;
	if (dry) {
		size_t up = 0;
		for (k = 0; k < c.nops; k++)
			up += c.ops[k].kind == OP_PUT;
		printf("dry run: would upload %zu, would delete %zu, unchanged %zu, conflicts 0, "
		       "failed %zu in %lld ms; nothing was changed\n",
		       up, c.nops - up, unchanged, c.failed, (long long)((int64_t)clock_ms() - t0));
	} else {
		printf("uploaded %zu, deleted %zu, unchanged %zu, conflicts %zu, failed %zu in %lld ms\n",
		       c.uploaded, c.deleted, unchanged, c.conflicts, c.failed,
		       (long long)((int64_t)clock_ms() - t0));
	}
	if (only_remote)
		printf("%zu files are only on the server (--delete removes them)\n", only_remote);
	ret = c.failed || c.conflicts ? 1 : 0;
out:
	if (c.slots) {
		for (i = 0; i < c.nslots; i++) {
			if (c.slots[i].con)
				evhttp_connection_free(c.slots[i].con);
			if (c.slots[i].delay)
				event_free(c.slots[i].delay);
		}
		free(c.slots);
	}
	if (c.base)
		event_base_free(c.base);
	if (vfd >= 0 && close(vfd) < 0)
		fprintf(stderr, "quire sync: %s: %s\n", vault, strerror(errno));
	free_remote(&remote);
	hash_cache_free(cache);
	free(hw.sha);
	free(hw.ok);
	free(c.ops);
	free(c.host);
	free(c.prefix);
	if (c.auth) {
		memset(c.auth, 0, strlen(c.auth));
		free(c.auth);
	}
	if (token) {
		memset(token, 0, strlen(token));
		free(token);
	}
	buf_release(&c.sync_body);
	buf_release(&cache_file);
	buf_release(&target);
	vault_scan_release(&scan);
	diag_list_release(&diags);
	fflush(stdout);
	return ret;
}
