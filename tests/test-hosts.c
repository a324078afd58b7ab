/*
 * test-hosts.c: custom domains through the Host header, on a real loader
 * and a real front over loopback sockets.
 *
 * The vault has notes routed on a strict host (docs.example.com, the
 * default), an open one configured in quire.yml (open.example.org), an
 * explicit www. host, an extra path on the main site, a route conflict, a
 * draft with a route, and notes with no route at all. Each test asks the
 * server with a Host header and checks the bytes that come back; the
 * snapshot is read directly where the question is what was rendered.
 */
#include "lib/httpc.h"
#include "lib/server.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "markdown/markdown.h"
#include "site/hosts.h"
#include "site/loader.h"
#include "site/rewrite.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct site_server srv;
static char *vault;

/* GET path with Host: host (NULL: no Host header, HTTP/1.0). */
static int get(const char *host, const char *path, struct resp *r)
{
	char req[4096];
	if (host)
		snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
			 path, host);
	else
		snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", path);
	return fetch(srv.port, req, r);
}

static int has(const struct resp *r, const char *needle)
{
	return r->body.ptr && memmem(r->body.ptr, r->body.len, needle, strlen(needle)) != NULL;
}

/* Status of GET host path; the body's check with needle (if any) must pass too. */
static int status(const char *host, const char *path, const char *needle)
{
	struct resp r;
	int st = get(host, path, &r) == 0 ? r.status : -1;
	if (needle && !has(&r, needle)) {
		fprintf(stderr, "  %s%s: no '%s' in the body\n", host ? host : "", path, needle);
		st = -2;
	}
	resp_free(&r);
	return st;
}

/* 1 when GET host path answers and its body does not hold needle. */
static int lacks(const char *host, const char *path, const char *needle)
{
	struct resp r;
	int ok = get(host, path, &r) == 0 && !has(&r, needle);
	resp_free(&r);
	return ok;
}

static void write_note(const char *rel, const char *text)
{
	tv_write(vault, rel, text);
}

/* Writes a note and waits until the snapshot holding the change is live. */
static void change(const char *rel, const char *text)
{
	uint64_t v;
	write_note(rel, text);
	v = loader_notify(srv.loader, &rel, 1);
	/* settled: the snapshot that compresses the change replaces the one it published */
	CHECK_INT(loader_wait_settled(srv.loader, v, 10000), 0);
}

static void setup(void)
{
	struct site_options so = { .search = 1 };
	struct site_server_options o = { .site = &so, .threads = 4, .url_prefix = "",
					 .search_rate = 1e9, .search_burst = 1e9 };

	vault = tv_new();
	tv_write(vault, "quire.yml",
		 "title: Main Site\nbase_url: https://example.com\n"
		 "hosts:\n  open.example.org:\n    open: true\n    title: Open Docs\n");
	write_note("intro.md", "---\ntitle: Intro\n"
			       "routes: [docs.example.com/, DOCS.example.com:8443/start, /welcome]\n"
			       "tags: [alpha]\n---\n"
			       "INTROBODY links [[Setup]], [[Other]] and [[Plain]]. ![[pic.png]]\n");
	write_note("guide/Setup.md", "---\ntitle: Setup\nroute: docs.example.com/setup\n---\n"
				     "SETUPBODY back to [[intro]], see [[Other#Section]].\n");
	write_note("zz-conflict.md", "---\ntitle: Loser\nroute: docs.example.com/setup\n---\n"
				     "LOSERBODY\n");
	write_note("Other.md", "---\ntitle: Other\nroute: open.example.org/special\n---\n"
			       "## Section\n\nOTHERBODY links [[Setup]] and [[Plain]].\n");
	write_note("Plain.md", "---\ntitle: Plain\n---\nPLAINBODY links [[Other]] and [[Setup]].\n");
	write_note("Shop.md", "---\ntitle: Shop\nroute: www.shop.example.net/\n---\nSHOPBODY\n");
	write_note("Draft.md", "---\ntitle: Draft\ndraft: true\nroute: docs.example.com/secret\n---\n"
			       "DRAFTBODY\n");
	tv_write_len(vault, "pic.png", "\x89PNG fake", 9);

	site_server_start(&srv, vault, &o);
}

static void teardown(void)
{
	site_server_stop(&srv);
	tv_remove(vault);
}

/* ---- tests ---------------------------------------------------------------------- */

static void check_route(const char *spec, const char *host, const char *path)
{
	char *h = NULL, *p = NULL;
	const char *why = NULL;
	int rc = host_route_parse(spec, &h, &p, &why);

	if (!host) {
		CHECK(rc < 0 && why != NULL);
	} else {
		CHECK_INT(rc, 0);
		CHECK_STR(h, host);
		CHECK_STR(p, path);
	}
	free(h);
	free(p);
}

static void test_route_parse(void)
{
	check_route("docs.example.com/intro", "docs.example.com", "/intro");
	check_route("Docs.Example.COM:8080/Guide/", "docs.example.com", "/Guide");
	check_route("example.com", "example.com", "/");
	check_route("example.com/", "example.com", "/");
	check_route("https://example.com/a/b", "example.com", "/a/b");
	check_route("example.com./x", "example.com", "/x");
	check_route("/extra/path", "", "/extra/path");
	check_route("guide/intro", "", "/guide/intro");
	check_route("localhost/x", "localhost", "/x");
	check_route("", NULL, NULL);
	check_route("example.com/a//b", NULL, NULL);
	check_route("example.com/../etc", NULL, NULL);
	check_route("example.com/a/./b", NULL, NULL);
	check_route("example.com/a?b", NULL, NULL);
	check_route("example.com/a#b", NULL, NULL);
	check_route("example.com/a\\b", NULL, NULL);
	check_route("ex ample.com/a", NULL, NULL);
	check_route("example.com/a\tb", NULL, NULL);
}

static void test_routed_pages(void)
{
	CHECK_INT(status("docs.example.com", "/", "INTROBODY"), 200);
	CHECK_INT(status("docs.example.com", "/start", "INTROBODY"), 200);
	CHECK_INT(status("docs.example.com:8443", "/start", "INTROBODY"), 200);
	CHECK_INT(status("DOCS.Example.Com", "/", "INTROBODY"), 200);
	CHECK_INT(status("docs.example.com.", "/", "INTROBODY"), 200);
	CHECK_INT(status("open.example.org", "/special", "OTHERBODY"), 200);
	CHECK_INT(status("www.shop.example.net", "/", "SHOPBODY"), 200);
	/* a route without a host is an extra path on the main site */
	CHECK_INT(status("example.com", "/welcome", "INTROBODY"), 200);
	CHECK_INT(status("example.com", "/intro", "INTROBODY"), 200);
}

static void test_strict_host(void)
{
	struct snapshot *snap = snapshot_acquire(&srv.slot);
	struct snapshot_host *docs = NULL;
	size_t i = 0;
	const char *key;
	void *v;

	/* not routed here: the host's own 404, never the note */
	CHECK_INT(status("docs.example.com", "/plain", NULL), 404);
	CHECK_INT(status("docs.example.com", "/other", NULL), 404);
	CHECK_INT(status("docs.example.com", "/special", NULL), 404);
	CHECK_INT(status("docs.example.com", "/intro", NULL), 404);
	CHECK_INT(status("docs.example.com", "/tags/alpha", NULL), 404);
	CHECK_INT(status("docs.example.com", "/secret", NULL), 404);
	CHECK_INT(status("docs.example.com", "/guide/setup", NULL), 404);
	CHECK(lacks("docs.example.com", "/plain", "PLAINBODY"));
	/* the theme and the attachments its pages show work on every host */
	CHECK_INT(status("docs.example.com", "/pic.png", NULL), 200);
	CHECK(hosts_find(snap, "docs.example.com", &docs) == HOST_CUSTOM);
	/* only routed pages and the host's own resources were rendered for it */
	while (docs && map_next(&docs->pages, &i, &key, NULL, &v)) {
		const struct page *p = v;
		if (p->kind == PAGE_NOTE)
			CHECK(strcmp(key, "/") == 0 || strcmp(key, "/start") == 0 ||
			      strcmp(key, "/setup") == 0);
		else
			CHECK(p->kind == PAGE_GENERATED);
	}
	CHECK(docs && docs->lazy.len == 0 && !docs->open);
	{
		struct ptable_iter it = PTABLE_ITER_INIT;
		const struct page *p;
		while ((p = ptable_next(&snap->pages, &it))) {
			if (p->kind == PAGE_ASSET && strstr(p->path, ".css")) {
				CHECK_INT(status("docs.example.com", p->path, NULL), 200);
				CHECK_INT(status("open.example.org", p->path, NULL), 200);
			}
		}
	}
	snapshot_unref(snap);
}

static void test_links_per_host(void)
{
	struct resp r;

	CHECK(get("docs.example.com", "/", &r) == 0);
	/* Setup is served here: root-relative, at its route */
	CHECK(has(&r, "href=\"/setup\""));
	/* Other and Plain are not: absolute, on the main site */
	CHECK(has(&r, "href=\"https://example.com/other\""));
	CHECK(has(&r, "href=\"https://example.com/plain\""));
	CHECK(has(&r, "<link rel=\"canonical\" href=\"https://docs.example.com/\">"));
	CHECK(has(&r, "src=\"/pic.png\""));
	CHECK(!has(&r, "href=\"/other\""));
	resp_free(&r);
	/* the same note on the main site links as usual */
	CHECK(get("example.com", "/intro", &r) == 0);
	CHECK(has(&r, "href=\"/guide/setup\""));
	CHECK(has(&r, "href=\"/other\""));
	CHECK(has(&r, "<link rel=\"canonical\" href=\"https://example.com/intro\">"));
	resp_free(&r);
	/* Setup on docs: its backlink and link to intro stay on docs, Other goes to the main site */
	CHECK(get("docs.example.com", "/setup", &r) == 0);
	CHECK(has(&r, "href=\"/\""));
	CHECK(has(&r, "href=\"https://example.com/other#section\""));
	resp_free(&r);
}

/*
 * The URL of Mermaid's script that a page with a diagram names for the
 * theme's script to load (layout.c) is rewritten like any URL: a host
 * has no path prefix.
 */
static void test_rewrite_diagram_script(void)
{
	static const char page[] =
		"<div class=\"note-body\" data-diagram-script=\"/docs/_quire/vendor/m-1/m.js\">";
	struct map none = MAP_INIT;
	struct rewrite_rules r = { .main_origin = "https://example.com", .prefix = "/docs",
				   .main_title = "Main", .origin = "https://docs.example.org",
				   .title = "Main", .open = 1, .own = &none, .routed = &none,
				   .main = &none };
	struct buf out = BUF_INIT;

	rewrite_doc(&r, page, sizeof(page) - 1, &out);
	CHECK_STR(out.ptr, "<div class=\"note-body\" data-diagram-script=\"/_quire/vendor/m-1/m.js\">");
	buf_release(&out);
}

static void test_open_host(void)
{
	struct resp r;

	/* any published note at its usual path, rendered for this host */
	CHECK(get("open.example.org", "/plain", &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(has(&r, "PLAINBODY"));
	CHECK(has(&r, "<title>Plain \xc2\xb7 Open Docs</title>"));
	CHECK(has(&r, ">Open Docs</a>"));
	CHECK(!has(&r, "Main Site"));
	/* Other is routed here at /special; Setup is served at its usual path */
	CHECK(has(&r, "href=\"/special\""));
	CHECK(has(&r, "href=\"/guide/setup\""));
	CHECK(has(&r, "<link rel=\"canonical\" href=\"https://open.example.org/plain\">"));
	resp_free(&r);
	CHECK_INT(status("open.example.org", "/tags/alpha", "Intro"), 200);
	CHECK_INT(status("open.example.org", "/nothing-here", NULL), 404);
	/* drafts are nowhere */
	CHECK_INT(status("open.example.org", "/draft", NULL), 404);
	CHECK(lacks("open.example.org", "/draft", "DRAFTBODY"));
}

struct racer {
	pthread_barrier_t *go;
	struct resp r;
};

static void *race(void *arg)
{
	struct racer *rc = arg;
	pthread_barrier_wait(rc->go);
	get("open.example.org", "/guide/setup", &rc->r);
	return NULL;
}

static void test_lazy_render_once(void)
{
	enum { N = 16 };
	struct racer rc[N];
	pthread_t t[N];
	pthread_barrier_t go;
	struct snapshot *snap;
	struct snapshot_host *open = NULL;
	int i;

	/* nothing is rendered for a host until someone asks */
	snap = snapshot_acquire(&srv.slot);
	CHECK(hosts_find(snap, "open.example.org", &open) == HOST_CUSTOM);
	CHECK(open && open->open);
	snapshot_unref(snap);
	/* another snapshot: what the earlier tests rendered went with the old one */
	change("Plain.md", "---\ntitle: Plain\n---\nPLAINBODY again, [[Other]] and [[Setup]].\n");
	snap = snapshot_acquire(&srv.slot);
	CHECK(hosts_find(snap, "open.example.org", &open) == HOST_CUSTOM);
	CHECK(open && open->lazy.len == 0 && open->nrendered == 0);

	pthread_barrier_init(&go, NULL, N);
	for (i = 0; i < N; i++) {
		memset(&rc[i], 0, sizeof(rc[i]));
		rc[i].go = &go;
		CHECK(pthread_create(&t[i], NULL, race, &rc[i]) == 0);
	}
	for (i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	for (i = 0; i < N; i++) {
		CHECK_INT(rc[i].r.status, 200);
		CHECK(has(&rc[i].r, "SETUPBODY"));
		CHECK(rc[i].r.body.len == rc[0].r.body.len &&
		      memcmp(rc[i].r.body.ptr, rc[0].r.body.ptr, rc[0].r.body.len) == 0);
	}
	for (i = 0; i < N; i++)
		resp_free(&rc[i].r);
	/* sixteen concurrent first requests, one render */
	pthread_mutex_lock(&open->lock);
	CHECK_INT(open->nrendered, 1);
	CHECK_INT(open->lazy.len, 1);
	pthread_mutex_unlock(&open->lock);
	snapshot_unref(snap);
}

static void test_www_redirect(void)
{
	struct resp r;

	CHECK(get("www.docs.example.com", "/start?x=1", &r) == 0);
	CHECK_INT(r.status, 301);
	CHECK_STR(hdr(&r, "Location"), "https://docs.example.com/start?x=1");
	resp_free(&r);
	CHECK(get("www.example.com", "/guide/setup", &r) == 0);
	CHECK_INT(r.status, 301);
	CHECK_STR(hdr(&r, "Location"), "https://example.com/guide/setup");
	resp_free(&r);
	/* routed explicitly: served, not redirected; its bare host is not a host */
	CHECK_INT(status("www.shop.example.net", "/", "SHOPBODY"), 200);
	CHECK_INT(status("shop.example.net", "/plain", "PLAINBODY"), 200);
}

/*
 * Search answers are the main site's; on a host they link where the notes
 * are served there: a routed note at its route, anything a strict host
 * does not serve on the main site (never a path the host answers with
 * 404). The search page and a host page's search form stay on the host.
 */
static void test_search_per_host(void)
{
	struct resp r;
	int i, ok = 0;

	for (i = 0; i < 6000 && !ok; i++) { /* the loader fills the index after start-up */
		ok = get("example.com", "/api/search?q=PLAINBODY", &r) == 0 && r.status == 200 &&
		     has(&r, "\"url\":\"/plain\"");
		resp_free(&r);
		if (!ok)
			usleep(10000);
	}
	CHECK(ok);
	CHECK_INT(status("docs.example.com", "/api/search?q=INTROBODY", "\"url\":\"/\""), 200);
	CHECK_INT(status("docs.example.com", "/api/search?q=SETUPBODY", "\"url\":\"/setup\""), 200);
	CHECK_INT(status("docs.example.com", "/api/search?q=PLAINBODY",
			 "\"url\":\"https://example.com/plain\""), 200);
	CHECK(lacks("docs.example.com", "/api/search?q=PLAINBODY", "\"url\":\"/plain\""));
	CHECK_INT(status("open.example.org", "/api/search?q=PLAINBODY", "\"url\":\"/plain\""), 200);
	CHECK_INT(status("open.example.org", "/api/search?q=OTHERBODY", "\"url\":\"/special\""), 200);
	CHECK_INT(status("example.com", "/api/search?q=OTHERBODY", "\"url\":\"/other\""), 200);
	CHECK_INT(status("docs.example.com", "/search?q=PLAINBODY", "href=\"https://example.com/plain\""),
		  200);
	CHECK_INT(status("open.example.org", "/search?q=OTHERBODY", "href=\"/special\""), 200);
	CHECK_INT(status("open.example.org", "/search?q=OTHERBODY", "Open Docs"), 200);
	CHECK_INT(status("docs.example.com", "/", "action=\"/search\""), 200);
}

static void test_tls_ask(void)
{
	CHECK_INT(status(NULL, "/healthz/host?domain=docs.example.com", NULL), 200);
	CHECK_INT(status(NULL, "/healthz/host?domain=Docs.Example.com:443", NULL), 200);
	CHECK_INT(status(NULL, "/healthz/host?domain=www.docs.example.com", NULL), 200);
	CHECK_INT(status(NULL, "/healthz/host?domain=open.example.org", NULL), 200);
	CHECK_INT(status(NULL, "/healthz/host?domain=example.com", NULL), 200);
	CHECK_INT(status(NULL, "/healthz/host?domain=www.example.com", NULL), 200);
	CHECK_INT(status(NULL, "/healthz/host?domain=evil.example", NULL), 404);
	CHECK_INT(status(NULL, "/healthz/host?domain=", NULL), 404);
	CHECK_INT(status(NULL, "/healthz/host", NULL), 404);
	CHECK_INT(status(NULL, "/healthz/host?domain=%00", NULL), 404);
}

static void test_unknown_host_main_site(void)
{
	struct resp a, b, c;

	CHECK(get("unknown.example", "/plain", &a) == 0);
	CHECK(get(NULL, "/plain", &b) == 0);
	CHECK(get("127.0.0.1:8080", "/plain", &c) == 0);
	CHECK_INT(a.status, 200);
	CHECK(a.body.len == b.body.len && memcmp(a.body.ptr, b.body.ptr, a.body.len) == 0);
	CHECK(a.body.len == c.body.len && memcmp(a.body.ptr, c.body.ptr, a.body.len) == 0);
	CHECK(has(&a, "href=\"/other\""));
	resp_free(&a);
	resp_free(&b);
	resp_free(&c);
}

static void test_host_resources(void)
{
	struct resp r;

	CHECK(get("docs.example.com", "/sitemap.xml", &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(tv_xmllint(r.body.ptr, r.body.len, "sitemap.xsd"));
	CHECK(has(&r, "<loc>https://docs.example.com/</loc>"));
	CHECK(has(&r, "<loc>https://docs.example.com/start</loc>"));
	CHECK(has(&r, "<loc>https://docs.example.com/setup</loc>"));
	CHECK(!has(&r, "example.com/plain") && !has(&r, "secret") && !has(&r, "special"));
	resp_free(&r);
	CHECK(get("docs.example.com", "/robots.txt", &r) == 0);
	CHECK(has(&r, "Sitemap: https://docs.example.com/sitemap.xml"));
	resp_free(&r);
	CHECK(get("docs.example.com", "/rss.xml", &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(tv_xmllint(r.body.ptr, r.body.len, NULL));
	CHECK(has(&r, "<link>https://docs.example.com/setup</link>"));
	CHECK(has(&r, "<link>https://docs.example.com/</link>"));
	CHECK(!has(&r, "<title>Plain</title>") && !has(&r, "<title>Other</title>") &&
	      !has(&r, "Draft"));
	resp_free(&r);
	CHECK(get("docs.example.com", "/atom.xml", &r) == 0);
	CHECK(tv_xmllint(r.body.ptr, r.body.len, NULL));
	resp_free(&r);
	CHECK(get("docs.example.com", "/_quire/tree.json", &r) == 0);
	CHECK(has(&r, "\"url\":\"/setup\"") && !has(&r, "Plain"));
	/* Intro has two routes here (/ and /start): listed once, at the first */
	CHECK(has(&r, "{\"title\":\"Intro\",\"url\":\"/\"}") && !has(&r, "\"url\":\"/start\""));
	resp_free(&r);
	/* an open host: its routes, then the main site's shards as served here */
	CHECK(get("open.example.org", "/sitemap.xml", &r) == 0);
	CHECK(tv_xmllint(r.body.ptr, r.body.len, "siteindex.xsd"));
	CHECK(has(&r, "<loc>https://open.example.org/sitemap-routes.xml</loc>"));
	CHECK(has(&r, "<loc>https://open.example.org/sitemap-0.xml</loc>"));
	resp_free(&r);
	CHECK(get("open.example.org", "/sitemap-0.xml", &r) == 0);
	CHECK(tv_xmllint(r.body.ptr, r.body.len, "sitemap.xsd"));
	CHECK(has(&r, "<loc>https://open.example.org/plain</loc>"));
	CHECK(has(&r, "<loc>https://open.example.org/special</loc>"));
	CHECK(!has(&r, "https://example.com/"));
	resp_free(&r);
	CHECK(get("open.example.org", "/rss.xml", &r) == 0);
	CHECK(tv_xmllint(r.body.ptr, r.body.len, NULL));
	CHECK(has(&r, "<link>https://open.example.org/plain</link>"));
	CHECK(!has(&r, "https://example.com/"));
	resp_free(&r);
	/* the main site's own are untouched */
	CHECK(get("example.com", "/sitemap-0.xml", &r) == 0);
	CHECK(has(&r, "<loc>https://example.com/plain</loc>"));
	resp_free(&r);
}

static void test_route_conflict(void)
{
	const struct diag_list *d = &loader_site(srv.loader)->diags;
	size_t i;
	int found = 0;

	/* the first in path order wins, in a full load as after any edit */
	CHECK_INT(status("docs.example.com", "/setup", "SETUPBODY"), 200);
	CHECK(lacks("docs.example.com", "/setup", "LOSERBODY"));
	pthread_mutex_lock((pthread_mutex_t *)&d->lock);
	for (i = 0; i < d->n; i++)
		if (strcmp(d->items[i].path, "zz-conflict.md") == 0 &&
		    strstr(d->items[i].msg, "docs.example.com/setup") &&
		    strstr(d->items[i].msg, "guide/Setup.md"))
			found = 1;
	pthread_mutex_unlock((pthread_mutex_t *)&d->lock);
	CHECK(found);
}

static void test_route_changes(void)
{
	struct resp r;

	/* moved within its host: the old path answers 301 */
	change("Other.md", "---\ntitle: Other\nroute: open.example.org/special2\n---\n"
			   "## Section\n\nOTHERBODY links [[Setup]] and [[Plain]].\n");
	CHECK_INT(status("open.example.org", "/special2", "OTHERBODY"), 200);
	CHECK(get("open.example.org", "/special", &r) == 0);
	CHECK_INT(r.status, 301);
	CHECK_STR(hdr(&r, "Location"), "/special2");
	resp_free(&r);
	/* routed pages linking to it follow */
	CHECK(get("open.example.org", "/plain", &r) == 0);
	CHECK(has(&r, "href=\"/special2\""));
	resp_free(&r);

	/* the winner leaves: the next claimant serves the path, and links follow */
	change("guide/Setup.md", "---\ntitle: Setup\nroute: docs.example.com/begin\n---\n"
				 "SETUPBODY back to [[intro]], see [[Other#Section]].\n");
	CHECK_INT(status("docs.example.com", "/begin", "SETUPBODY"), 200);
	CHECK_INT(status("docs.example.com", "/setup", "LOSERBODY"), 200);
	CHECK(get("docs.example.com", "/", &r) == 0);
	CHECK(has(&r, "href=\"/begin\""));
	resp_free(&r);

	/* a route that moves to another host: gone from the first (404), live on the other;
	 * a path the note still has on a host keeps the others there as 301s */
	change("intro.md", "---\ntitle: Intro\nroutes: [docs.example.com/, open.example.org/start]\n"
			   "---\nINTROBODY links [[Setup]], [[Other]] and [[Plain]].\n");
	CHECK(get("docs.example.com", "/start", &r) == 0);
	CHECK_INT(r.status, 301);
	CHECK_STR(hdr(&r, "Location"), "/");
	resp_free(&r);
	CHECK_INT(status("open.example.org", "/start", "INTROBODY"), 200);
	CHECK_INT(status("example.com", "/welcome", NULL), 404);
	change("intro.md", "---\ntitle: Intro\nroutes: [open.example.org/start]\n"
			   "---\nINTROBODY links [[Setup]], [[Other]] and [[Plain]].\n");
	CHECK_INT(status("docs.example.com", "/", NULL), 404);
	CHECK_INT(status("docs.example.com", "/start", NULL), 404);
	CHECK_INT(status("open.example.org", "/start", "INTROBODY"), 200);

	/* the last route of a host goes: the host is the main site again */
	change("Shop.md", "---\ntitle: Shop\n---\nSHOPBODY\n");
	CHECK_INT(status("www.shop.example.net", "/shop", "SHOPBODY"), 200);

	/* unpublished: every route goes, and pages that linked to it stop linking */
	CHECK(get("open.example.org", "/start", &r) == 0);
	CHECK(has(&r, "href=\"/guide/setup\""));
	resp_free(&r);
	change("guide/Setup.md", "---\ntitle: Setup\ndraft: true\nroute: docs.example.com/begin\n---\n"
				 "SETUPBODY\n");
	CHECK_INT(status("docs.example.com", "/begin", NULL), 404);
	CHECK(get("open.example.org", "/start", &r) == 0);
	CHECK(has(&r, "INTROBODY") && !has(&r, "/begin") && !has(&r, "guide/setup"));
	resp_free(&r);
}

int main(void)
{
	md_global_init();
	RUN(test_route_parse);
	RUN(test_rewrite_diagram_script);
	setup();
	RUN(test_routed_pages);
	RUN(test_strict_host);
	RUN(test_links_per_host);
	RUN(test_open_host);
	RUN(test_www_redirect);
	RUN(test_search_per_host);
	RUN(test_tls_ask);
	RUN(test_unknown_host_main_site);
	RUN(test_host_resources);
	RUN(test_route_conflict);
	RUN(test_lazy_render_once);
	RUN(test_route_changes);
	teardown();
	return test_done();
}
