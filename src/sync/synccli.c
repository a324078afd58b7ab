/*
 * synccli.c: `quire sync`, the command.
 *
 * Steps, in order: load the record of the last sync (syncrecord.h), scan
 * the local vault with the scanner's rules (no ignore globs, as the
 * server's manifest), hash every file through the hash cache (in
 * parallel; only changed files are read), fetch the manifest (bounded,
 * every path checked as the server checks paths), plan from the three
 * versions of each file and run the plan (synccli-plan.c), make the pass
 * again while the server changed during it, wait for the server to
 * publish what was sent, print the summary. sync_main() reads as these
 * steps.
 *
 * Test hooks (environment): QUIRE_SYNC_TEST_PAUSE_AFTER_MANIFEST_MS sleeps
 * after the manifest is fetched; QUIRE_SYNC_TEST_DELAY_MS delays the start
 * of each request.
 */
#include "sync/synccli.h"
#include "sync/hashcache.h"
#include "sync/syncapi.h"
#include "sync/synccli-int.h"
#include "sync/syncrecord.h"
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
#define ROUNDS 3

const char sync_usage[] =
	"usage: quire sync VAULT URL [--token-file FILE] [--push [--delete]] [--dry-run]\n"
	"                            [--jobs N] [--max-file BYTES] [--watch]\n"
	"\n"
	"Syncs the vault folder VAULT with the quire server at URL (http://host:port[/prefix])\n"
	"through its sync API, both ways, and waits until the site shows the changes. Each\n"
	"file is compared with the record of the last sync (VAULT/.quire/sync-record): a file\n"
	"changed on one side only is taken from that side (edits, new files and deletions\n"
	"come down as well as go up); a note changed on both sides is merged when the edits\n"
	"touch different lines; otherwise this side's file is kept and the server's version\n"
	"is written beside it as NAME.sync-conflict-YYYYMMDD-HHMMSS-server.EXT (UTC), which\n"
	"is synced too. An edit beats a deletion on the other side. Every write to the\n"
	"server says which version it replaces, so an edit made there during the sync is\n"
	"never overwritten. Run it again after an interruption: it does only what is left.\n"
	"\n"
	"  --token-file FILE   the API token (default: $QUIRE_TOKEN)\n"
	"  --push              one way: send what changed here, take nothing from the server;\n"
	"                      a file changed on the server since the last sync is a conflict,\n"
	"                      not overwritten\n"
	"  --delete            with --push: also delete files the server has and VAULT does\n"
	"                      not, when the server's copy is the one last synced\n"
	"  --dry-run           print what would be done, change nothing\n"
	"  --jobs N            requests at once (default 4)\n"
	"  --max-file BYTES    the largest file taken from the server (default 64 MiB); the\n"
	"                      manifest may be up to 256 MiB\n"
	"  --watch             then stay running: sync again whenever a file is saved in VAULT\n"
	"                      or the server publishes a change; retry while the server is\n"
	"                      away; stop with Ctrl-C\n"
	"\n"
	"Exit status: 0 everything is in sync; 3 in sync, with conflict copies written (both\n"
	"versions are on both sides: merge them by hand); 1 something failed or was left\n"
	"unsynced (with --push, a conflict); 2 usage.\n";

const struct option sync_options[] = {
	{ "token-file", required_argument, NULL, 't' },
	{ "delete", no_argument, NULL, 'd' },
	{ "push", no_argument, NULL, 'p' },
	{ "max-file", required_argument, NULL, 'm' },
	{ "dry-run", no_argument, NULL, 'n' },
	{ "jobs", required_argument, NULL, 'j' },
	{ "watch", no_argument, NULL, 'w' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

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

static int hex64(const struct buf *b)
{
	size_t i;

	if (b->len != 64)
		return 0;
	for (i = 0; i < 64; i++)
		if (!((b->ptr[i] >= '0' && b->ptr[i] <= '9') || (b->ptr[i] >= 'a' && b->ptr[i] <= 'f')))
			return 0;
	return 1;
}

/*
 * A path of the manifest, checked as the server checks the paths it is
 * sent (and as it lists them: already NFC). 0, or -1 with err set.
 */
static int check_listed(const struct buf *path, struct buf *err)
{
	struct buf nfc = BUF_INIT;
	const char *why = NULL;
	int rc = 0;

	if (syncapi_check_path(path->ptr, path->len, &nfc, &why) < 0)
		rc = -1;
	else if (nfc.len != path->len || memcmp(nfc.ptr, path->ptr, nfc.len) != 0)
		rc = -1, why = "not in NFC";
	if (rc < 0) {
		buf_adds(err, "it lists the path \"");
		buf_adds_json(err, path->ptr);
		buf_addf(err, "\" (%s)", why);
	}
	buf_release(&nfc);
	return rc;
}

/* One file's entry, {"sha256":"..","size":N}, into r. 0, or -1 with err set. */
static int parse_entry(struct json_reader *jr, struct remote *r, struct buf *err)
{
	struct buf field = BUF_INIT, sha = BUF_INIT;
	int rc = -1;

	if (json_object(jr) < 0)
		goto out;
	while (json_key(jr, &field) > 0) {
		if (strcmp(field.ptr, "sha256") == 0) {
			if (json_string(jr, &sha) < 0 || !hex64(&sha)) {
				buf_addf(err, "the hash of \"%s\" is not 64 lowercase hex digits",
					 r->path);
				goto out;
			}
			memcpy(r->sha, sha.ptr, SHA256_HEX_SIZE);
		} else if (strcmp(field.ptr, "size") == 0) {
			if (json_u64(jr, &r->size) < 0)
				goto out;
		} else if (json_skip(jr) < 0) {
			goto out;
		}
	}
	if (!r->sha[0]) {
		buf_addf(err, "\"%s\" has no sha256", r->path);
		goto out;
	}
	rc = 0;
out:
	buf_release(&field);
	buf_release(&sha);
	return rc;
}

int synccli_parse_manifest(const char *body, size_t len, struct map *m, uint64_t *version,
			   struct buf *err)
{
	struct json_reader jr;
	struct buf key = BUF_INIT, path = BUF_INIT;
	int rc = -1, have_files = 0;

	buf_reset(err);
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
			struct remote *r, *old;
			if (check_listed(&path, err) < 0)
				goto out;
			r = xcalloc(1, sizeof(*r));
			r->path = xstrdup(path.ptr);
			old = map_put(m, r->path, strlen(r->path), r);
			if (old) {
				free(old->path);
				free(old);
			}
			if (parse_entry(&jr, r, err) < 0)
				goto out;
		}
	}
	if (jr.failed || json_end(&jr) < 0 || !have_files)
		goto out;
	rc = 0;
out:
	if (rc < 0 && !err->len)
		buf_adds(err, "it is not {\"version\":N,\"files\":{\"path\":{\"sha256\":..,\"size\":N}}}");
	buf_release(&key);
	buf_release(&path);
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
	r->local = (struct map)MAP_INIT;
	r->hw.dirfd = -1;
	r->c.run = r;
	r->c.max_file = SYNCCLI_DEFAULT_MAX_FILE;
}

/* The options and arguments into r. -1 to go on, else the exit status (printed). */
static int parse_args(struct run *r, int argc, char **argv)
{
	int opt;

	while ((opt = getopt_long(argc, argv, "", sync_options, NULL)) != -1) {
		switch (opt) {
		case 't': r->token_file = optarg; break;
		case 'd': r->do_delete = 1; break;
		case 'p': r->push = 1; break;
		case 'm': {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (!*optarg || *end || v < 1 || v > (1ull << 40)) {
				fprintf(stderr, "quire sync: --max-file takes a number of bytes, got '%s'\n",
					optarg);
				return 2;
			}
			r->c.max_file = (size_t)v;
			break;
		}
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
	if (r->do_delete && !r->push) {
		fprintf(stderr, "quire sync: --delete goes with --push (both ways, a file deleted here "
				"is deleted on the server without it)\n");
		return 2;
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

/* The record of the last sync, VAULT/.quire/sync-record, loaded once. 0 or -1 (printed). */
static int open_record(struct run *r)
{
	struct buf file = BUF_INIT;

	if (r->record)
		return 0;
	buf_addf(&file, "%s/.quire", r->vault);
	if (!r->dry && mkdir(file.ptr, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "quire sync: %s: %s\n", file.ptr, strerror(errno));
		buf_release(&file);
		return -1;
	}
	buf_adds(&file, "/sync-record");
	r->record = sync_record_open(file.ptr, r->dry);
	buf_release(&file);
	return r->record ? 0 : -1;
}

/* The local files and their hashes, through the hash cache. 0 or -1 (printed). */
static int hash_local(struct run *r)
{
	struct hash_work *hw = &r->hw;
	struct buf cache_file = BUF_INIT, nfc = BUF_INIT;
	const char *why;
	uint64_t pass;
	size_t k;

	if (vault_scan(r->vault, NULL, &r->scan, &r->diags) < 0)
		return -1;
	for (k = 0; k < r->diags.n; k++)
		fprintf(stderr, "%s: %s: %s\n", r->diags.items[k].path,
			r->diags.items[k].level == DIAG_ERROR ? "skipped" : "note",
			r->diags.items[k].msg);
	/*
	 * Opening the vault folder: every local file is hashed and written
	 * relative to it, so the scan, the hashing and the writes see one folder.
	 * Rejected: joining paths per file (the path is resolved again each time).
	 */
	if (hw->dirfd < 0)
		hw->dirfd = open(r->vault, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (hw->dirfd < 0) {
		fprintf(stderr, "quire sync: %s: %s\n", r->vault, strerror(errno));
		return -1;
	}
	if (open_record(r) < 0)
		return -1;
	buf_addf(&cache_file, "%s/.quire/sync-cache", r->vault);
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
	/* the files the server would take: by NFC path */
	for (k = 0; k < r->scan.n; k++) {
		const struct vault_file *f = &r->scan.files[k];
		if (syncapi_check_path(f->path, strlen(f->path), &nfc, &why) < 0)
			fprintf(stderr, "skipped: %s: %s\n", f->path, why);
		else
			map_put(&r->local, f->path, strlen(f->path), (void *)(uintptr_t)(k + 1));
	}
	buf_release(&nfc);
	buf_release(&cache_file);
	return 0;
}

/* The server's manifest into r->remote, bounded and checked. 0 or -1 (printed). */
static int fetch_manifest(struct run *r)
{
	struct client *c = &r->c;
	struct buf target = BUF_INIT, err = BUF_INIT;
	uint64_t version = 0;
	int ret = -1;

	buf_addf(&target, "%s/api/v1/manifest", c->prefix);
	if (synccli_fetch(c, target.ptr, SYNCCLI_MAX_MANIFEST) != 200) {
		if (c->sync_too_long)
			fprintf(stderr, "quire sync: the manifest from %s is larger than %u MiB; "
					"refusing it\n", r->url, SYNCCLI_MAX_MANIFEST >> 20);
		else
			fprintf(stderr, "quire sync: cannot read the manifest from %s: %s\n", r->url,
				c->sync_status ? c->sync_body.ptr : "connection failed");
		goto out;
	}
	if (synccli_parse_manifest(c->sync_body.ptr, c->sync_body.len, &r->remote, &version,
				   &err) < 0) {
		fprintf(stderr, "quire sync: the server's manifest is not valid: %s; nothing was "
				"synced\n", err.ptr);
		goto out;
	}
	r->server_version = version;
	if (env_ms("QUIRE_SYNC_TEST_PAUSE_AFTER_MANIFEST_MS") > 0)
		usleep((useconds_t)env_ms("QUIRE_SYNC_TEST_PAUSE_AFTER_MANIFEST_MS") * 1000);
	ret = 0;
out:
	buf_release(&target);
	buf_release(&err);
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

/*
 * Long-polls until the server's live snapshot holds every change made;
 * when it does not in time, that counts as failed.
 */
static void wait_published(struct run *r)
{
	struct client *c = &r->c;
	struct buf target = BUF_INIT;

	if (!r->dry && (r->n.uploaded || r->n.deleted_there) && c->max_version > 0) {
		buf_addf(&target, "%s/api/v1/wait?version=%" PRIu64 "&timeout=%d", c->prefix,
			 c->max_version, WAIT_TIMEOUT_MS);
		if (synccli_fetch(c, target.ptr, 65536) != 200) {
			fprintf(stderr, "quire sync: the server has not published snapshot %" PRIu64
					" yet: %s\n", c->max_version,
				c->sync_status ? c->sync_body.ptr : "connection failed");
			r->n.failed++;
		}
	}
	buf_release(&target);
}

int synccli_report(struct run *r)
{
	const struct counts *n = &r->n;
	long long ms = (long long)((int64_t)clock_ms() - r->t0);

	printf("%suploaded %zu, downloaded %zu, merged %zu, deleted %zu here and %zu on the server, "
	       "unchanged %zu, conflicts %zu, failed %zu in %lld ms%s\n",
	       r->dry ? "dry run: would have " : "", n->uploaded, n->downloaded, n->merged,
	       n->deleted_here, n->deleted_there, n->unchanged, n->conflicts, n->failed + n->skipped,
	       ms, r->dry ? "; nothing was changed" : "");
	if (n->only_remote)
		printf("%zu files are only on the server (--delete removes them)\n", n->only_remote);
	if (n->failed || n->skipped || (r->push && n->conflicts))
		return 1;
	return n->conflicts ? 3 : 0;
}

/* Forgets the last pass (scan, hashes, manifest, plan), keeping the hash cache and the vault open. */
static void pass_reset(struct run *r)
{
	size_t k;

	vault_scan_release(&r->scan);
	r->scan = (struct vault_scan)VAULT_SCAN_INIT;
	diag_list_release(&r->diags);
	diag_list_init(&r->diags);
	free(r->hw.sha);
	free(r->hw.ok);
	r->hw.sha = NULL;
	r->hw.ok = NULL;
	map_release(&r->local);
	synccli_free_manifest(&r->remote);
	for (k = 0; k < r->c.nops; k++)
		buf_release(&r->c.ops[k].text);
	r->c.nops = r->c.next = r->c.done = 0;
	r->c.bytes_total = r->c.bytes_done = 0;
	for (k = 0; k < r->nstrs; k++)
		free(r->strs[k]);
	r->nstrs = 0;
	r->nlater = 0;
}

int synccli_pass(struct run *r)
{
	int round;

	for (round = 1;; round++) {
		pass_reset(r);
		/* what is found unchanged or only on one side is counted by the last round */
		r->n.raced = r->n.unchanged = r->n.only_remote = r->n.skipped = 0;
		if (r->push)
			r->n.conflicts = 0; /* --push finds its conflicts in the plan, again each round */
		if (hash_local(r) < 0 || fetch_manifest(r) < 0)
			return -1;
		synccli_plan(r);
		synccli_execute(r);
		if (r->dry || !r->n.raced)
			break;
		if (round == ROUNDS) {
			fprintf(stderr, "quire sync: %zu files kept changing during the sync; run it "
					"again\n", r->n.raced);
			r->n.failed += r->n.raced;
			break;
		}
	}
	if (!r->dry && sync_record_compact(r->record) < 0)
		r->n.failed++;
	return 0;
}

/* Frees what the run holds, wiping the token. */
static void run_release(struct run *r)
{
	struct client *c = &r->c;

	pass_reset(r);
	synccli_disconnect(c);
	if (r->hw.dirfd >= 0 && close(r->hw.dirfd) < 0)
		fprintf(stderr, "quire sync: %s: %s\n", r->vault, strerror(errno));
	sync_record_free(r->record);
	hash_cache_free(r->hw.cache);
	free(r->strs);
	free(r->later);
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
	r.say_sent = r.watch;
	if (synccli_pass(&r) < 0) {
		if (!r.watch)
			goto out;
		ret = synccli_watch(&r, 1); /* the server may not be up yet: it retries */
		goto out;
	}
	wait_published(&r);
	ret = synccli_report(&r);
	if (r.watch)
		ret = synccli_watch(&r, 0);
out:
	run_release(&r);
	fflush(stdout);
	return ret;
}
