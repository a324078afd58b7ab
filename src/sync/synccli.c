/*
 * synccli.c: `quire sync`, the command.
 *
 * Steps, in order: scan the local vault with the scanner's rules (no
 * ignore globs, as the server's manifest), hash every file through the
 * hash cache (in parallel; only changed files are read), fetch the
 * manifest, plan (upload new and changed files, delete what only the
 * server has with --delete, count the rest unchanged), run the plan on
 * --jobs keep-alive connections from one event loop, then long-poll
 * /api/v1/wait for the highest version the server returned. sync_main()
 * reads as these steps; the requests, and what their answers count, are
 * in synccli-requests.c.
 *
 * Test hooks (environment): QUIRE_SYNC_TEST_PAUSE_AFTER_MANIFEST_MS sleeps
 * after the manifest is fetched; QUIRE_SYNC_TEST_DELAY_MS delays the start
 * of each request.
 */
#include "sync/synccli.h"
#include "sync/hashcache.h"
#include "sync/syncapi.h"
#include "sync/synccli-int.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/diag.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/map.h"
#include "util/parallel.h"
#include "util/xalloc.h"
#include "vault/vault.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/http.h>

#define DEFAULT_JOBS 4
#define MAX_JOBS 64
#define WAIT_TIMEOUT_MS 60000

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
	"  --jobs N            requests at once (default 4)\n"
	"  --watch             then stay running: push each change made in VAULT as it is\n"
	"                      saved (a file deleted there is deleted on the server), report\n"
	"                      conflicts, retry while the server is away; stop with Ctrl-C\n";

/* ---- the local side ---- */

/* ---- the manifest ---- */

void synccli_free_manifest(struct map *m)
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
int synccli_parse_manifest(const char *body, size_t len, struct map *m, uint64_t *version)
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

static void run_init(struct run *r)
{
	memset(r, 0, sizeof(*r));
	r->t0 = (int64_t)clock_ms();
	r->jobs = DEFAULT_JOBS;
	buf_init(&r->c.sync_body, 0);
	diag_list_init(&r->diags);
	r->scan = (struct vault_scan)VAULT_SCAN_INIT;
	r->remote = (struct map)MAP_INIT;
	r->hw.dirfd = -1;
}

/* The options and arguments into r. -1 to go on, else the exit status (printed). */
static int parse_args(struct run *r, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "token-file", required_argument, NULL, 't' },
		{ "delete", no_argument, NULL, 'd' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "watch", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 't': r->token_file = optarg; break;
		case 'd': r->do_delete = 1; break;
		case 'n': r->dry = 1; break;
		case 'w': r->watch = 1; break;
		case 'j': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v < 1 || v > MAX_JOBS) {
				fprintf(stderr, "quire sync: --jobs takes 1 to %d, got '%s'\n", MAX_JOBS,
					optarg);
				return 2;
			}
			r->jobs = (int)v;
			break;
		}
		case 'h': fputs(sync_usage, stdout); return 0;
		default: fputs(sync_usage, stderr); return 2;
		}
	}
	if (r->watch && r->dry) {
		fprintf(stderr, "quire sync: --watch and --dry-run do not go together\n");
		return 2;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "quire sync: VAULT and URL are required\n%s", sync_usage);
		return 2;
	}
	r->vault = argv[optind];
	r->url = argv[optind + 1];
	return -1;
}

/* The server's address and the token into the client. 0 or -1 (printed). */
static int set_up_client(struct run *r)
{
	struct client *c = &r->c;

	c->vault = r->vault;
	if (parse_url(c, r->url) < 0)
		return -1;
	if (!(r->token = load_token(r->token_file)))
		return -1;
	c->auth = xmalloc(strlen(r->token) + 8);
	sprintf(c->auth, "Bearer %s", r->token);
	c->progress = isatty(2);
	c->delay_ms = env_ms("QUIRE_SYNC_TEST_DELAY_MS");
	return 0;
}

/* The local files and their hashes, through the hash cache. 0 or -1 (printed). */
static int hash_local(struct run *r)
{
	struct hash_work *hw = &r->hw;
	struct buf cache_file = BUF_INIT;
	uint64_t pass;
	size_t k;

	if (vault_scan(r->vault, NULL, &r->scan, &r->diags) < 0)
		return -1;
	for (k = 0; k < r->diags.n; k++)
		fprintf(stderr, "%s: %s: %s\n", r->diags.items[k].path,
			r->diags.items[k].level == DIAG_ERROR ? "skipped" : "note",
			r->diags.items[k].msg);
	/*
	 * Opening the vault folder: every local file is hashed relative to it,
	 * so the scan and the hashing see one folder.
	 * Rejected: joining paths per file (the path is resolved again each time).
	 */
	if (hw->dirfd < 0)
		hw->dirfd = open(r->vault, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (hw->dirfd < 0) {
		fprintf(stderr, "quire sync: %s: %s\n", r->vault, strerror(errno));
		return -1;
	}
	buf_addf(&cache_file, "%s/.quire", r->vault);
	if (!r->dry && mkdir(cache_file.ptr, 0755) < 0 && errno != EEXIST)
		fprintf(stderr, "quire sync: %s: %s (hashes are not remembered)\n", cache_file.ptr,
			strerror(errno));
	buf_adds(&cache_file, "/sync-cache");
	if (!hw->cache) {
		hw->cache = hash_cache_new();
		if (hash_cache_load(hw->cache, cache_file.ptr) < 0)
			fprintf(stderr, "quire sync: starting with no remembered hashes\n");
	}
	hw->sha = xcalloc(r->scan.n + 1, sizeof(*hw->sha));
	hw->ok = xcalloc(r->scan.n + 1, 1);
	pass = hash_cache_mark(hw->cache);
	hash_cache_scan(hw->cache, hw->dirfd, &r->scan, hw->sha, hw->ok);
	hash_cache_sweep(hw->cache, pass);
	if (!r->dry && hash_cache_dirty(hw->cache) && hash_cache_save(hw->cache, cache_file.ptr) < 0)
		fprintf(stderr, "quire sync: hashes are not remembered for the next run\n");
	buf_release(&cache_file);
	return 0;
}

/* The server's manifest into r->remote. 0 or -1 (printed). */
static int fetch_manifest(struct run *r)
{
	struct client *c = &r->c;
	struct buf target = BUF_INIT;
	uint64_t version = 0;
	int ret = -1;

	buf_addf(&target, "%s/api/v1/manifest", c->prefix);
	if (synccli_fetch(c, target.ptr) != 200) {
		fprintf(stderr, "quire sync: cannot read the manifest from %s: %s\n", r->url,
			c->sync_status ? c->sync_body.ptr : "connection failed");
		goto out;
	}
	if (synccli_parse_manifest(c->sync_body.ptr, c->sync_body.len, &r->remote, &version) < 0) {
		fprintf(stderr, "quire sync: the server's manifest is not valid\n");
		goto out;
	}
	if (env_ms("QUIRE_SYNC_TEST_PAUSE_AFTER_MANIFEST_MS") > 0)
		usleep((useconds_t)env_ms("QUIRE_SYNC_TEST_PAUSE_AFTER_MANIFEST_MS") * 1000);
	ret = 0;
out:
	buf_release(&target);
	return ret;
}

struct op *synccli_add_op(struct client *c)
{
	struct op *op;

	ALLOC_GROW(c->ops, c->nops + 1, c->aops);
	op = &c->ops[c->nops++];
	memset(op, 0, sizeof(*op));
	return op;
}

/* Uploads for the local files that are new or differ; marks the remote files seen. */
static void plan_uploads(struct run *r)
{
	struct client *c = &r->c;
	size_t k;

	for (k = 0; k < r->scan.n; k++) {
		const struct vault_file *f = &r->scan.files[k];
		struct remote *rf = map_gets(&r->remote, f->path);
		struct buf nfc = BUF_INIT;
		const char *why;
		struct op *op;

		if (rf)
			rf->seen = 1;
		if (!r->hw.ok[k]) {
			fprintf(stderr, "failed: %s: cannot read it\n", f->path);
			c->failed++;
			continue;
		}
		if (syncapi_check_path(f->path, strlen(f->path), &nfc, &why) < 0) {
			fprintf(stderr, "skipped: %s: %s\n", f->path, why);
			r->skipped++;
			buf_release(&nfc);
			continue;
		}
		buf_release(&nfc);
		if (rf && strcmp(rf->sha, r->hw.sha[k]) == 0) {
			rf->synced = 1;
			r->unchanged++;
			continue;
		}
		if (rf && r->keep_remote && r->keep_remote(r->keep_ctx, f->path, r->hw.sha[k], rf->sha))
			continue;
		op = synccli_add_op(c);
		op->kind = OP_PUT;
		op->path = f->path;
		op->disk = f->disk;
		op->size = f->size;
		memcpy(op->sha, r->hw.sha[k], SHA256_HEX_SIZE);
		if (rf)
			memcpy(op->remote, rf->sha, SHA256_HEX_SIZE);
		c->bytes_total += (uint64_t)f->size;
	}
}

/* Deletions for the files only the server has (with --delete; else counted). */
static void plan_deletions(struct run *r)
{
	size_t it = 0, klen;
	const char *key;
	void *v;

	while (map_next(&r->remote, &it, &key, &klen, &v)) {
		struct remote *rf = v;
		struct op *op;
		if (rf->seen)
			continue;
		if (!r->do_delete) {
			r->only_remote++;
			continue;
		}
		op = synccli_add_op(&r->c);
		op->kind = OP_DELETE;
		op->path = rf->path;
		memcpy(op->remote, rf->sha, SHA256_HEX_SIZE);
	}
}

/*
 * The plan: uploads then deletions, each in path order. -1 (printed) when
 * it would delete every file on the server because the vault is empty.
 */
static int plan(struct run *r)
{
	struct client *c = &r->c;

	plan_uploads(r);
	plan_deletions(r);
	if (c->nops)
		qsort(c->ops, c->nops, sizeof(*c->ops), cmp_ops);
	if (r->do_delete && r->scan.n == 0 && r->remote.len > 0) {
		fprintf(stderr, "quire sync: %s has no files; refusing to delete all %zu files on the "
				"server\n", r->vault, r->remote.len);
		return -1;
	}
	return 0;
}

/* Runs the plan until every operation is answered; with --dry-run, prints it instead. */
static void run_plan(struct run *r)
{
	struct client *c = &r->c;
	size_t k;

	if (r->dry) {
		for (k = 0; k < c->nops; k++) {
			const struct op *op = &c->ops[k];
			if (op->kind == OP_PUT)
				printf("would upload %s (%s, %lld bytes)\n", op->path,
				       op->remote[0] ? "changed" : "new", (long long)op->size);
			else
				printf("would delete %s\n", op->path);
		}
	} else if (c->nops) {
		synccli_run(c);
	}
}

/*
 * Long-polls until the server's live snapshot holds every change made;
 * when it does not in time, that counts as failed.
 */
static void wait_published(struct run *r)
{
	struct client *c = &r->c;
	struct buf target = BUF_INIT;

	if (!r->dry && (c->uploaded || c->deleted) && c->max_version > 0) {
		buf_addf(&target, "%s/api/v1/wait?version=%" PRIu64 "&timeout=%d", c->prefix,
			 c->max_version, WAIT_TIMEOUT_MS);
		if (synccli_fetch(c, target.ptr) != 200) {
			fprintf(stderr, "quire sync: the server has not published snapshot %" PRIu64
					" yet: %s\n", c->max_version,
				c->sync_status ? c->sync_body.ptr : "connection failed");
			c->failed++;
		}
	}
	buf_release(&target);
}

/* Prints the totals; returns the exit status. */
static int report(struct run *r)
{
	struct client *c = &r->c;
	size_t k;

	if (r->skipped)
		c->failed += r->skipped;
	if (r->dry) {
		size_t up = 0;
		for (k = 0; k < c->nops; k++)
			up += c->ops[k].kind == OP_PUT;
		printf("dry run: would upload %zu, would delete %zu, unchanged %zu, conflicts 0, "
		       "failed %zu in %lld ms; nothing was changed\n",
		       up, c->nops - up, r->unchanged, c->failed,
		       (long long)((int64_t)clock_ms() - r->t0));
	} else {
		printf("uploaded %zu, deleted %zu, unchanged %zu, conflicts %zu, failed %zu in %lld ms\n",
		       c->uploaded, c->deleted, r->unchanged, c->conflicts, c->failed,
		       (long long)((int64_t)clock_ms() - r->t0));
	}
	if (r->only_remote)
		printf("%zu files are only on the server (--delete removes them)\n", r->only_remote);
	return c->failed || c->conflicts ? 1 : 0;
}

/* Forgets the last pass (scan, hashes, manifest, plan), keeping the hash cache and the vault open. */
static void pass_reset(struct run *r)
{
	vault_scan_release(&r->scan);
	r->scan = (struct vault_scan)VAULT_SCAN_INIT;
	diag_list_release(&r->diags);
	diag_list_init(&r->diags);
	free(r->hw.sha);
	free(r->hw.ok);
	r->hw.sha = NULL;
	r->hw.ok = NULL;
	synccli_free_manifest(&r->remote);
	r->c.nops = r->c.next = r->c.done = 0;
	r->unchanged = r->skipped = r->only_remote = 0;
}

int synccli_pass(struct run *r)
{
	pass_reset(r);
	if (hash_local(r) < 0 || fetch_manifest(r) < 0 || plan(r) < 0)
		return -1;
	run_plan(r);
	return 0;
}

/* Frees what the run holds, wiping the token. */
static void run_release(struct run *r)
{
	struct client *c = &r->c;

	synccli_disconnect(c);
	if (r->hw.dirfd >= 0 && close(r->hw.dirfd) < 0)
		fprintf(stderr, "quire sync: %s: %s\n", r->vault, strerror(errno));
	synccli_free_manifest(&r->remote);
	hash_cache_free(r->hw.cache);
	free(r->hw.sha);
	free(r->hw.ok);
	free(c->ops);
	free(c->host);
	free(c->prefix);
	if (c->auth) {
		memset(c->auth, 0, strlen(c->auth));
		free(c->auth);
	}
	if (r->token) {
		memset(r->token, 0, strlen(r->token));
		free(r->token);
	}
	buf_release(&c->sync_body);
	vault_scan_release(&r->scan);
	diag_list_release(&r->diags);
}

int sync_main(int argc, char **argv)
{
	struct run r;
	int ret;

	run_init(&r);
	ret = parse_args(&r, argc, argv);
	if (ret >= 0)
		goto out;
	ret = 1;
	if (set_up_client(&r) < 0 || synccli_connect(&r.c, r.jobs) < 0)
		goto out;
	if (synccli_pass(&r) < 0) {
		if (!r.watch)
			goto out;
		ret = synccli_watch(&r, 1); /* the server may not be up yet: it retries */
		goto out;
	}
	wait_published(&r);
	ret = report(&r);
	if (r.watch)
		ret = synccli_watch(&r, 0);
out:
	run_release(&r);
	fflush(stdout);
	return ret;
}
