/*
 * syncapi.c: writes into the vault over HTTP, durably, off the loops.
 *
 * Requests. One raw handler takes /api/v1/ (raw, so that a path the HTTP
 * front would refuse with a bare 400 gets a JSON error naming the
 * problem). It checks the address against the failure limiter, the
 * token, the route and the path, copies what the work needs (the path, the
 * preconditions, the body moved out of libevent's buffer, or a large one
 * as the file the HTTP layer spooled it to), defers the request and
 * queues a job. Nothing on a loop touches the disk.
 *
 * This file holds the requests (routes, handlers, path checks, JSON
 * errors) and the API's life (syncapi_new() to syncapi_free()). The rest
 * is cut by responsibility, sharing syncapi-int.h: syncapi-auth.c (the
 * token, the failure limit), syncapi-jobs.c (the job queue, its threads,
 * the manifest), syncapi-write.c (durable writes, spares, leftovers of a
 * crash) and syncapi-wait.c (long polls).
 */
#include "http/http.h"
#include "site/loader.h"
#include "sync/hashcache.h"
#include "sync/syncapi.h"
#include "sync/syncapi-int.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/log.h"
#include "util/ratelimit.h"
#include "util/unicode.h"
#include "util/xalloc.h"
#include "vault/vault.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define API_PREFIX "/api/v1/"
#define FILES_PREFIX "/api/v1/files"
#define FILES_LEN (sizeof(FILES_PREFIX) - 1)
#define DEFAULT_THREADS 4
#define DEFAULT_AUTH_FAILURES 10

/* ---- paths ---- */

int syncapi_check_path(const char *path, size_t len, struct buf *out, const char **why)
{
	return syncapi_check_path_dots(path, len, out, why, 0);
}

int syncapi_check_path_dots(const char *path, size_t len, struct buf *out, const char **why,
			    int allow_dot)
{
	size_t i, seg;
	char *nfc;

	buf_reset(out);
	if (len == 0)
		return *why = "empty path", -1;
	if (path[0] == '/')
		return *why = "absolute path", -1;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)path[i];
		if (c == 0)
			return *why = "NUL byte in path", -1;
		if (c < 0x20 || c == 0x7f)
			return *why = "control character in path", -1;
		if (c == '\\')
			return *why = "backslash in path", -1;
	}
	if (!utf8_valid(path, len))
		return *why = "path is not valid UTF-8", -1;
	nfc = utf8_nfc(path, len);
	buf_adds(out, nfc);
	free(nfc);
	if (out->len > SYNCAPI_MAX_PATH)
		return *why = "path longer than 1024 bytes", -1;
	for (i = 0; i <= out->len; i = seg + 1) {
		size_t n;
		seg = i;
		while (seg < out->len && out->ptr[seg] != '/')
			seg++;
		n = seg - i;
		if (n == 0)
			return *why = "empty path segment", -1;
		if ((n == 1 && out->ptr[i] == '.') || (n == 2 && out->ptr[i] == '.' && out->ptr[i + 1] == '.'))
			return *why = "'.' or '..' segment in path", -1;
		if (out->ptr[i] == '.' && !allow_dot)
			return *why = "dot-file or dot-folder in path", -1;
		if (n > SYNCAPI_MAX_SEGMENT)
			return *why = "path segment longer than 255 bytes", -1;
	}
	return 0;
}

int syncapi_decode_path(const char *raw, size_t len, struct buf *out, const char **why)
{
	struct buf dec = BUF_INIT;
	int rc;

	if (buf_add_urldecoded(&dec, raw, len, 0) < 0) {
		buf_release(&dec);
		buf_reset(out);
		return *why = "invalid percent-encoding in path", -1;
	}
	rc = syncapi_check_path(dec.ptr, dec.len, out, why);
	buf_release(&dec);
	return rc;
}

/* ---- answers ---- */

static void json_error(struct buf *b, const char *msg, const char *path)
{
	buf_adds(b, "{\"error\":\"");
	buf_adds_json(b, msg);
	buf_addc(b, '"');
	if (path) {
		buf_adds(b, ",\"path\":\"");
		buf_adds_json(b, path);
		buf_addc(b, '"');
	}
	buf_adds(b, "}\n");
}

void syncapi_origin(struct http_request *req, enum change_source source, struct change_origin *out)
{
	out->source = source;
	snprintf(out->client, sizeof(out->client), "%s", http_request_peer(req));
	out->since_ms = http_request_start_ms(req);
}

void syncapi_log_refusal(int dav, const char *method, int status, const char *why,
			 const char *path, const char *to, const char *client)
{
	struct log_event e;

	log_event_init(&e, status >= 500 ? LOG_ERROR : LOG_WARN, dav ? "dav.refused" : "sync.refused");
	log_event_str(&e, "method", method ? method : "-");
	log_event_str(&e, "path", path);
	log_event_str(&e, "to", to);
	log_event_int(&e, "status", status);
	log_event_str(&e, "why", why);
	log_event_str(&e, "client", client);
	log_event_emit(&e, "%s %s%s%s from %s refused %d: %s", method ? method : "-",
		       path ? path : "-", to ? " to " : "", to ? to : "", client, status, why);
}

/* Whether the sync API's method m writes (PUT, DELETE, a move's POST). */
static int writes(enum http_method m)
{
	return m == HTTP_PUT || m == HTTP_DELETE || m == HTTP_POST;
}

void syncapi_reply_error(struct http_request *req, int status, const char *msg, const char *path)
{
	struct buf b = BUF_INIT;

	/* 429s are logged once, as the address is blocked (syncapi-auth.c) */
	if (status == 401 || (status >= 400 && status != 429 && writes(http_request_method(req))))
		syncapi_log_refusal(0, http_request_method_name(req), status, msg, path, NULL,
				    http_request_peer(req));

	json_error(&b, msg, path);
	http_reply_header(req, "Cache-Control", "no-store");
	http_reply_buf(req, status, JSON_TYPE, &b);
}

void syncapi_dreply_error(struct http_deferred *d, int status, const char *msg, const char *path)
{
	struct buf b = BUF_INIT;

	json_error(&b, msg, path);
	http_deferred_reply_buf(d, status, JSON_TYPE, &b);
}

/* ---- handlers ---- */

/* An entity tag of If-Match / If-None-Match: "*" or one quoted SHA-256. */
int syncapi_parse_tag(const char *v, enum cond *kind, char out[SHA256_HEX_SIZE])
{
	size_t i;

	while (*v == ' ' || *v == '\t')
		v++;
	if (v[0] == '*' && (!v[1] || v[1] == ' ')) {
		*kind = C_MATCH_ANY;
		return 0;
	}
	if (v[0] != '"')
		return -1;
	for (i = 0; i < 64; i++) {
		char c = v[1 + i];
		if (c >= 'A' && c <= 'F')
			c = (char)(c - 'A' + 'a');
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -1;
		out[i] = c;
	}
	out[64] = '\0';
	if (v[65] != '"')
		return -1;
	for (v += 66; *v == ' ' || *v == '\t'; v++)
		;
	if (*v)
		return -1;
	*kind = C_MATCH;
	return 0;
}

static void handle_file(struct syncapi *api, struct http_request *req, const char *raw,
			size_t len)
{
	enum http_method m = http_request_method(req);
	const char *why, *im, *inm;
	struct buf path = BUF_INIT;
	unsigned long long size = 0;
	struct job *j;

	if (m != HTTP_PUT && m != HTTP_DELETE && m != HTTP_GET) {
		http_reply_header(req, "Allow", "GET, PUT, DELETE");
		syncapi_reply_error(req, 405, "files take GET, PUT and DELETE", NULL);
		return;
	}
	if (syncapi_decode_path(raw, len, &path, &why) < 0) {
		syncapi_reply_error(req, 400, why, NULL);
		buf_release(&path);
		return;
	}
	j = xcalloc(1, sizeof(*j));
	j->kind = m == HTTP_PUT ? J_PUT : m == HTTP_GET ? J_GET : J_DELETE;
	j->path = buf_detach(&path, NULL);
	im = http_request_header(req, "If-Match");
	inm = http_request_header(req, "If-None-Match");
	if (im && syncapi_parse_tag(im, &j->if_match, j->match) < 0) {
		syncapi_reply_error(req, 400, "If-Match takes * or one quoted SHA-256", j->path);
		syncapi_job_free(j);
		return;
	}
	if (inm) {
		enum cond k = C_NONE;
		char tag[SHA256_HEX_SIZE];
		if (syncapi_parse_tag(inm, &k, tag) < 0 || k != C_MATCH_ANY) {
			syncapi_reply_error(req, 400, "If-None-Match takes only *", j->path);
			syncapi_job_free(j);
			return;
		}
		j->if_none_match = 1;
	}
	buf_init(&j->body, 0);
	syncapi_origin(req, CHANGE_SYNC, &j->origin);
	if (j->kind == J_PUT)
		size = syncapi_take_body(api, req, &j->body, &j->up);
	if (size > api->max_upload) {
		syncapi_upload_drop(&j->up); /* gone before the client hears */
		syncapi_reply_error(req, 413, "the file is larger than the server accepts",
				    j->path);
		syncapi_job_free(j);
		return;
	}
	if (j->kind == J_PUT && syncapi_note_too_big(api, j->path, size, &path)) {
		syncapi_upload_drop(&j->up);
		syncapi_reply_error(req, 413, path.ptr, j->path);
		buf_release(&path);
		syncapi_job_free(j);
		return;
	}
	j->d = http_request_defer(req);
	syncapi_enqueue(api, j);
}

int syncapi_note_too_big(struct syncapi *api, const char *path, unsigned long long len,
			 struct buf *why)
{
	size_t max = api->loader ? loader_max_note_size(api->loader) : 0;

	if (!max || len <= max || !vault_is_note_path(path))
		return 0;
	buf_reset(why);
	buf_addf(why, "the note is %llu bytes, over max_note_size (%zu; quire.yml sets it): "
		 "it would not be published", len, max);
	return 1;
}

/*
 * Taking a body as a file: a body the HTTP layer spooled stays there, and
 * the write renames it into place, so that an upload of any size is never
 * whole in memory here ("Uploads" in syncapi-write.c).
 */
unsigned long long syncapi_take_body(struct syncapi *api, struct http_request *req,
				     struct buf *body, struct upload *up)
{
	memset(up, 0, sizeof(*up));
	up->file.fd = -1;
	up->dir = api->spool_fd;
	if (api->spool_fd >= 0 && http_request_take_body_file(req, &up->file) == 1) {
		up->spooled = 1;
		return up->file.len;
	}
	return http_request_take_body(req, body);
}

int syncapi_parse_move(const char *body, size_t len, struct buf *from, struct buf *to,
		       struct buf *err)
{
	struct buf key = BUF_INIT, val = BUF_INIT;
	struct json_reader r;
	const char *why = NULL, *what = NULL;
	int rc, have_from = 0, have_to = 0, ret = -1;

	buf_reset(err);
	json_init(&r, body, len);
	rc = json_object(&r);
	while (rc == 0 && (rc = json_key(&r, &key)) > 0) {
		if (strcmp(key.ptr, "from") == 0 || strcmp(key.ptr, "to") == 0) {
			int is_from = key.ptr[0] == 'f';
			if (json_string(&r, &val) < 0)
				break;
			if (syncapi_check_path(val.ptr, val.len, is_from ? from : to, &why) < 0) {
				what = is_from ? "from" : "to";
				break;
			}
			if (is_from)
				have_from = 1;
			else
				have_to = 1;
		} else if (json_skip(&r) < 0) {
			break;
		}
		rc = 0;
	}
	if (what) {
		buf_addf(err, "%s: %s", what, why);
	} else if (rc != 0 || json_end(&r) < 0 || !have_from || !have_to) {
		buf_adds(err, "move takes {\"from\":\"path\",\"to\":\"path\"}");
	} else if (strcmp(from->ptr, to->ptr) == 0) {
		buf_adds(err, "from and to are the same path");
		ret = -2;
	} else {
		ret = 0;
	}
	buf_release(&key);
	buf_release(&val);
	return ret;
}

static void handle_move(struct syncapi *api, struct http_request *req)
{
	struct buf from = BUF_INIT, to = BUF_INIT, err = BUF_INIT;
	const char *body;
	struct job *j;
	size_t len;
	int rc;

	if (http_request_method(req) != HTTP_POST) {
		http_reply_header(req, "Allow", "POST");
		syncapi_reply_error(req, 405, "move takes POST", NULL);
		return;
	}
	body = http_request_body(req, &len);
	rc = syncapi_parse_move(body, len, &from, &to, &err);
	if (rc < 0) {
		syncapi_reply_error(req, 400, err.ptr, rc == -2 ? from.ptr : NULL);
	} else {
		j = xcalloc(1, sizeof(*j));
		j->kind = J_MOVE;
		j->path = buf_detach(&from, NULL);
		j->to = buf_detach(&to, NULL);
		buf_init(&j->body, 0);
		syncapi_origin(req, CHANGE_SYNC, &j->origin);
		j->d = http_request_defer(req);
		syncapi_enqueue(api, j);
	}
	buf_release(&from);
	buf_release(&to);
	buf_release(&err);
}

static void handle(struct http_request *req, void *ctx)
{
	struct syncapi *api = ctx;
	const char *target, *query;
	size_t len;

	if (!syncapi_authenticate(api, req))
		return;
	target = http_request_target(req);
	len = strcspn(target, "?");
	query = target[len] == '?' ? target + len + 1 : NULL;
	if (len >= FILES_LEN && strncmp(target, FILES_PREFIX, FILES_LEN) == 0 &&
	    (len == FILES_LEN || target[FILES_LEN] == '/')) {
		/* "/api/v1/files" alone is the empty path */
		if (len == FILES_LEN)
			handle_file(api, req, target + len, 0);
		else
			handle_file(api, req, target + FILES_LEN + 1, len - FILES_LEN - 1);
	} else if (len == strlen(API_PREFIX "manifest") &&
		   strncmp(target, API_PREFIX "manifest", len) == 0) {
		struct job *j;
		if (http_request_method(req) != HTTP_GET) {
			http_reply_header(req, "Allow", "GET");
			syncapi_reply_error(req, 405, "the manifest takes GET", NULL);
			return;
		}
		j = xcalloc(1, sizeof(*j));
		j->kind = J_MANIFEST;
		buf_init(&j->body, 0);
		j->d = http_request_defer(req);
		syncapi_enqueue(api, j);
	} else if (len == strlen(API_PREFIX "move") && strncmp(target, API_PREFIX "move", len) == 0) {
		handle_move(api, req);
	} else if (len == strlen(API_PREFIX "wait") && strncmp(target, API_PREFIX "wait", len) == 0) {
		if (http_request_method(req) != HTTP_GET) {
			http_reply_header(req, "Allow", "GET");
			syncapi_reply_error(req, 405, "wait takes GET", NULL);
			return;
		}
		syncapi_handle_wait(api, req, query);
	} else {
		syncapi_reply_error(req, 404, "no such API endpoint", NULL);
	}
}

/* ---- setup ---- */

/*
 * Why a token cannot be the sync API's, or NULL when it can. A short one
 * is taken on a loopback address (loopback != 0), where only this
 * machine's processes can guess, at the failure limit's few a minute; a
 * benchmark or a test harness may pick one so.
 */
static const char *token_unusable(const char *token, int loopback)
{
	size_t i;

	if (!token || !token[0])
		return "an empty token would let anyone write the vault";
	for (i = 0; token[i]; i++)
		if ((unsigned char)token[i] <= 0x20 || token[i] == 0x7f)
			return "the token holds whitespace or a control character, which an "
			       "Authorization header cannot carry: no client could ever send it";
	if (i < SYNCAPI_MIN_TOKEN && !loopback)
		return "the token is shorter than 16 bytes: it could be guessed (make one with "
		       "`openssl rand -hex 32`)";
	if (i < SYNCAPI_MIN_TOKEN)
		log_warn("sync: the token is shorter than 16 bytes: taken because the server "
			 "listens on a loopback address only; elsewhere it would be refused");
	return NULL;
}

/*
 * The process's umask, which a file created with openat() gets and a
 * spooled upload renamed into place must be given (fchmod ignores it):
 * read from /proc (Linux 4.7 and later), 022 when it cannot be.
 * Rejected: umask() to read it (it sets it too, for every thread at once).
 */
static mode_t process_umask(void)
{
	char line[128];
	unsigned int mask;
	mode_t m = 022;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Umask: %o", &mask) == 1) {
			m = (mode_t)(mask & 0777);
			break;
		}
	if (f)
		fclose(f);
	return m;
}

struct syncapi *syncapi_new(const struct syncapi_options *opt, struct loader *loader)
{
	struct syncapi *api = xcalloc(1, sizeof(*api));
	struct buf dir = BUF_INIT;
	const char *why;
	int i, per_min;

	api->root_fd = -1;
	api->spares_fd = -1;
	api->spool_fd = -1;
	api->loader = loader;
	pthread_mutex_init(&api->block_lock, NULL);
	pthread_mutex_init(&api->lock, NULL);
	pthread_cond_init(&api->work, NULL);
	pthread_cond_init(&api->released, NULL);
	pthread_mutex_init(&api->wlock, NULL);
	pthread_cond_init(&api->wcond, NULL);
	pthread_mutex_init(&api->save_lock, NULL);
	api->cache = hash_cache_new();
	if ((why = token_unusable(opt->token, opt->loopback))) {
		log_error("sync: %s", why);
		goto fail;
	}
	hash_sha256_hex(opt->token, strlen(opt->token), api->token_sha);
	api->vault = xstrdup(opt->vault);
	api->max_upload = opt->max_upload ? opt->max_upload : SYNCAPI_DEFAULT_MAX_UPLOAD;
	per_min = opt->auth_failures > 0 ? opt->auth_failures : DEFAULT_AUTH_FAILURES;
	api->failures = rate_limiter_new(per_min / 60.0, per_min);
	/*
	 * Opening the vault folder: every file operation is relative to this
	 * descriptor, so renaming or replacing the vault's path under a running
	 * server does not redirect writes.
	 * Rejected: joining the vault path to each file's path (every write would
	 * resolve the whole path again, symlinks included).
	 */
	api->root_fd = open(api->vault, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (api->root_fd < 0) {
		log_error("sync: %s: %s", api->vault, strerror(errno));
		goto fail;
	}
	if (opt->data_dir)
		buf_adds(&dir, opt->data_dir);
	else
		buf_addf(&dir, "%s/.quire", api->vault);
	if (mkdir(dir.ptr, 0755) < 0 && errno != EEXIST) {
		log_error("sync: %s: %s", dir.ptr, strerror(errno));
		goto fail;
	}
	api->data_dir = xstrdup(dir.ptr);
	buf_adds(&dir, "/spares");
	api->spares_fd = syncapi_open_scratch(dir.ptr);
	buf_setlen(&dir, dir.len - strlen("/spares"));
	buf_adds(&dir, "/spool");
	api->spool_fd = syncapi_open_scratch(dir.ptr);
	if (api->spool_fd < 0)
		log_warn("sync: %s: %s: large uploads are held in memory", dir.ptr, strerror(errno));
	buf_setlen(&dir, dir.len - strlen("/spool"));
	api->new_mode = 0644 & ~process_umask();
	buf_adds(&dir, "/hashes");
	api->hashes_file = buf_detach(&dir, NULL);
	if (hash_cache_load(api->cache, api->hashes_file) < 0)
		log_warn("sync: starting with an empty hash cache");
	syncapi_remove_leftovers(api);

	api->nthreads = opt->threads > 0 ? opt->threads : DEFAULT_THREADS;
	api->threads = xcalloc((size_t)api->nthreads, sizeof(*api->threads));
	for (i = 0; i < api->nthreads; i++) {
		if (pthread_create(&api->threads[i], NULL, syncapi_worker_main, api) != 0) {
			log_error("sync: cannot start a thread");
			api->nthreads = i;
			goto fail;
		}
	}
	if (pthread_create(&api->wthread, NULL, syncapi_waiter_main, api) != 0) {
		log_error("sync: cannot start a thread");
		goto fail;
	}
	api->wstarted = 1;
	return api;
fail:
	buf_release(&dir);
	syncapi_free(api);
	return NULL;
}

int syncapi_register(struct syncapi *api, struct http_server *srv)
{
	if (api->spool_fd >= 0)
		http_server_set_body_spool(srv, api->spool_fd);
	http_server_set_body_policy(srv, API_PREFIX, syncapi_body_policy, api);
	return http_server_add_raw_handler(srv, API_PREFIX, handle, api);
}

void syncapi_get_stats(struct syncapi *api, struct syncapi_stats *out)
{
	out->puts = atomic_load(&api->puts);
	out->deletes = atomic_load(&api->deletes);
	out->moves = atomic_load(&api->moves);
	out->manifests = atomic_load(&api->manifests);
	out->gets = atomic_load(&api->gets);
	out->hashed = atomic_load(&api->hashed);
	out->uploads_renamed = atomic_load(&api->uploads_renamed);
	out->uploads_copied = atomic_load(&api->uploads_copied);
	out->auth_failures = atomic_load(&api->auth_failures);
	out->limited = atomic_load(&api->limited);
}

void syncapi_free(struct syncapi *api)
{
	int i;

	if (!api)
		return;
	pthread_mutex_lock(&api->lock);
	api->stop = 1;
	pthread_cond_broadcast(&api->work);
	pthread_mutex_unlock(&api->lock);
	for (i = 0; i < api->nthreads; i++)
		pthread_join(api->threads[i], NULL);
	free(api->threads);
	pthread_mutex_lock(&api->wlock);
	api->wstop = 1;
	pthread_cond_signal(&api->wcond);
	pthread_mutex_unlock(&api->wlock);
	if (api->wstarted)
		pthread_join(api->wthread, NULL);
	if (api->hashes_file)
		syncapi_save_cache(api);
	for (i = 0; i < (int)api->nspares; i++) /* the spares go with the server */
		unlinkat(api->spares_fd, api->spares[i].name, 0);
	if (api->spares_fd >= 0)
		close(api->spares_fd);
	if (api->spool_fd >= 0)
		close(api->spool_fd);
	if (api->root_fd >= 0 && close(api->root_fd) < 0)
		log_warn("sync: %s: %s", api->vault, strerror(errno));
	hash_cache_free(api->cache);
	rate_limiter_free(api->failures);
	free(api->busy);
	free(api->hashes_file);
	free(api->data_dir);
	free(api->vault);
	pthread_mutex_destroy(&api->block_lock);
	pthread_mutex_destroy(&api->lock);
	pthread_cond_destroy(&api->work);
	pthread_cond_destroy(&api->released);
	pthread_mutex_destroy(&api->wlock);
	pthread_cond_destroy(&api->wcond);
	pthread_mutex_destroy(&api->save_lock);
	free(api);
}
