/*
 * test-security.c: what a note's author can put in front of readers.
 *
 * A vault of hostile notes puts script payloads in every place a note can
 * put text: raw HTML blocks and inline HTML, Markdown links and images,
 * wikilink targets and labels, titles, aliases, tags, descriptions,
 * headings, callout titles, file and folder names, and quire.yml's title.
 * It is served by the real loader and front (with search) and exported.
 * Then every output is read as a browser or a feed reader would read it:
 *
 *	- HTML (pages, embeds, backlinks, tag and folder pages, 404, the
 *	  search page): every tag is tokenized; no script but the theme's, no
 *	  on* attribute, no URL attribute with a script scheme, no srcdoc, no
 *	  plugin, base or refresh, no frame but https;
 *	- XML (feeds, sitemaps): entities decoded once, since feed readers
 *	  render the HTML in <description>, then read as HTML;
 *	- JSON (explorer tree, search API): no raw '<', no script URL.
 *
 * Link previews read the pages themselves, so the pages cover them. The
 * security headers are checked on every kind of response, and a
 * reflected query on /search must come back as text.
 */
#include "cmd/export.h"
#include "lib/httpc.h"
#include "lib/server.h"
#include "lib/test.h"
#include "lib/tv.h"
#include "markdown/markdown.h"
#include "site/loader.h"
#include "util/files.h"
#include "util/hash.h"

#include <ctype.h>
#include <dirent.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct site_server srv;
static char *vault, *out;
static size_t scanned_tags, scanned_files;

static int get(const char *path, struct resp *r)
{
	char req[4096];
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path);
	return fetch(srv.port, req, r);
}

/* ---- the hostile vault ------------------------------------------------------- */

#define IMG "<img src=x onerror=alert(1)>"
#define SCRIPT "<script>alert(1)</script>"

static void write_vault(void)
{
	tv_write(vault, "quire.yml",
		 "title: \"</title><script>alert('yml')</script>\"\n"
		 "base_url: https://example.org\n");
	tv_write(vault, "index.md",
		 "# Home\n\nLinks: [[Raw HTML]], [[Links]], [[Names]], [[" IMG "]], "
		 "[[Names|" SCRIPT "]], [[Raw HTML#" IMG "]].\n\n![[Raw HTML]]\n\n![[Names]]\n\n![[pic.svg]]\n");
	tv_write(vault, "Raw HTML.md",
		 "---\ntags: [x]\n---\n"
		 "<div onclick=\"alert(1)\" style=\"color:red\">div</div>\n\n"
		 "<script>alert('block')</script>\n\n"
		 "<svg onload=alert(1)><circle r=1 /></svg>\n\n"
		 "<iframe src=\"javascript:alert(1)\"></iframe>\n\n"
		 "<iframe srcdoc=\"<script>alert(1)</script>\"></iframe>\n\n"
		 "<object data=\"javascript:alert(1)\"></object><embed src=\"x.swf\">\n\n"
		 "<base href=\"https://evil.example/\">\n\n"
		 "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">\n\n"
		 "<form action=\"https://evil.example/\"><input name=q></form>\n\n"
		 "<a href=\"jav&#x09;ascript:alert(1)\">tab</a> <a href=\"&#106;avascript:alert(1)\">ent</a>\n\n"
		 "<a href=\" JaVaScRiPt:alert(1)\">case</a> <img src=\"data:text/html,<script>alert(1)</script>\">\n\n"
		 "Inline " IMG " and <span onmouseover=\"alert(1)\">span</span> and "
		 "<scr<script>ipt>alert(1)</script>.\n\n"
		 "<!--><script>alert(1)</script>-->\n\n"
		 "<p style=\"background:url(javascript:alert(1))\">styled</p>\n\n"
		 "## Heading " IMG "\n\n"
		 "> [!note] Callout " IMG "\n> body " SCRIPT "\n");
	tv_write(vault, "Links.md",
		 "---\ntitle: \"Links " SCRIPT "\"\ndescription: \"\\\"><script>alert(1)</script>\"\n"
		 "aliases: [\"" IMG "\", \"javascript:alert(1)\"]\ntags: [\"" IMG "\", ok]\n---\n"
		 "[md](javascript:alert(1)) [vb](vbscript:msgbox(1)) "
		 "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) "
		 "[ent](&#106;avascript:alert(1)) ![img](javascript:alert(1)) "
		 "<javascript:alert(1)> [ok](https://example.org/) [[Raw HTML]]\n\n"
		 "#tag\n");
	tv_write(vault, "pic.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>");
	tv_write(vault, IMG ".md", "A note whose file name is markup. [[index]]\n");
	tv_write(vault, "\" onmouseover=\"alert(1).md", "A note whose name closes an attribute.\n");
	tv_write(vault, "<b onclick=alert(1)>folder</b>/inside.md", "In a hostile folder.\n");
	tv_write(vault, "Names.md",
		 "---\ntitle: \"' onmouseover='alert(1)\"\n---\n# " IMG "\n\n[[" IMG "]]\n");
}

/* ---- reading outputs as a browser does --------------------------------------- */

static int is_url_attr(const char *name)
{
	static const char *const urls[] = { "href", "src", "action", "formaction", "poster",
					    "data", "cite", "background", "srcset", "xlink:href",
					    "lowsrc", "dynsrc", "longdesc", "manifest", "ping" };
	size_t i;
	for (i = 0; i < sizeof(urls) / sizeof(*urls); i++)
		if (strcasecmp(name, urls[i]) == 0)
			return 1;
	return 0;
}

/* Decodes character references the way an attribute value is read. */
static void decode_entities(const char *s, size_t len, struct buf *dst)
{
	size_t i = 0;

	buf_reset(dst);
	while (i < len) {
		if (s[i] == '&') {
			size_t j = i + 1;
			unsigned long cp = 0;
			int ok = 0;
			if (j < len && s[j] == '#') {
				j++;
				if (j < len && (s[j] == 'x' || s[j] == 'X')) {
					for (j++; j < len && isxdigit((unsigned char)s[j]); j++, ok = 1)
						cp = cp * 16 + (unsigned long)(isdigit((unsigned char)s[j]) ? s[j] - '0' : (tolower((unsigned char)s[j]) - 'a' + 10));
				} else {
					for (; j < len && isdigit((unsigned char)s[j]); j++, ok = 1)
						cp = cp * 10 + (unsigned long)(s[j] - '0');
				}
				if (ok && cp < 128) {
					buf_addc(dst, (int)cp);
					i = j + (j < len && s[j] == ';');
					continue;
				}
			} else {
				static const struct { const char *n; char c; } named[] = {
					{ "colon;", ':' }, { "Tab;", '\t' }, { "NewLine;", '\n' },
					{ "lt;", '<' }, { "gt;", '>' }, { "amp;", '&' }, { "quot;", '"' },
					{ "apos;", '\'' }, { "#39;", '\'' },
				};
				size_t k;
				for (k = 0; k < sizeof(named) / sizeof(*named); k++) {
					size_t n = strlen(named[k].n);
					if (i + 1 + n <= len && memcmp(s + i + 1, named[k].n, n) == 0) {
						buf_addc(dst, named[k].c);
						i += 1 + n;
						ok = 1;
						break;
					}
				}
				if (ok)
					continue;
			}
		}
		buf_addc(dst, s[i++]);
	}
}

/* A URL a browser would run: its scheme after removing what browsers ignore. */
static int script_url(const char *v, size_t len, int image)
{
	struct buf d = BUF_INIT, clean = BUF_INIT;
	size_t i;
	int bad;

	decode_entities(v, len, &d);
	for (i = 0; i < d.len; i++) {
		unsigned char c = (unsigned char)d.ptr[i];
		if (c <= 0x20 && (clean.len == 0 || c == '\t' || c == '\n' || c == '\r'))
			continue;
		buf_addc(&clean, tolower(c));
	}
	bad = !strncmp(clean.ptr ? clean.ptr : "", "javascript:", 11) ||
	      !strncmp(clean.ptr ? clean.ptr : "", "vbscript:", 9) ||
	      (!strncmp(clean.ptr ? clean.ptr : "", "data:", 5) &&
	       (!image || strncmp(clean.ptr, "data:image/", 11) != 0 ||
		strncmp(clean.ptr, "data:image/svg", 14) == 0));
	buf_release(&d);
	buf_release(&clean);
	return bad;
}

static void fail(const char *where, const char *what, const char *at, size_t len)
{
	fprintf(stderr, "  %s: %s: %.*s\n", where, what, (int)(len > 160 ? 160 : len), at);
	test_current_failed = 1;
}

/*
 * Tokenizes html as a browser would (tags, attributes, comments, raw text
 * of script and style) and reports what could run. theme_ok allows the
 * theme's own script, form, link and meta tags (pages); a feed's decoded
 * content gets theme_ok = 0.
 */
static void scan_html(const char *where, const char *s, size_t len, int theme_ok)
{
	size_t i = 0;

	while (i < len) {
		char name[32];
		size_t n = 0, tag_start;
		int is_script = 0, script_ok = 0, is_img = 0;

		if (s[i] != '<') {
			i++;
			continue;
		}
		tag_start = i;
		if (i + 4 <= len && memcmp(s + i, "<!--", 4) == 0) {
			const char *e = memmem(s + i + 4, len - i - 4, "-->", 3);
			i = e ? (size_t)(e - s) + 3 : len;
			continue;
		}
		i++;
		if (i < len && s[i] == '/')
			continue;
		if (i >= len || !isalpha((unsigned char)s[i]))
			continue;
		while (i < len && !isspace((unsigned char)s[i]) && s[i] != '>' && s[i] != '/') {
			if (n + 1 < sizeof(name))
				name[n++] = (char)tolower((unsigned char)s[i]);
			i++;
		}
		name[n] = '\0';
		scanned_tags++;
		is_script = !strcmp(name, "script");
		is_img = !strcmp(name, "img") || !strcmp(name, "source") || !strcmp(name, "video");
		if (!strcmp(name, "object") || !strcmp(name, "embed") || !strcmp(name, "applet") ||
		    !strcmp(name, "base") || !strcmp(name, "frame") || !strcmp(name, "frameset") ||
		    !strcmp(name, "svg") || !strcmp(name, "math") || !strcmp(name, "style") ||
		    (!theme_ok && (!strcmp(name, "form") || !strcmp(name, "meta") ||
				   !strcmp(name, "link") || !strcmp(name, "input"))))
			fail(where, "element", s + tag_start, 80);
		/* attributes */
		for (;;) {
			char an[32];
			size_t an_len = 0;
			const char *v = NULL;
			size_t vlen = 0;

			while (i < len && (isspace((unsigned char)s[i]) || s[i] == '/'))
				i++;
			if (i >= len || s[i] == '>')
				break;
			while (i < len && !isspace((unsigned char)s[i]) && s[i] != '=' && s[i] != '>' &&
			       !(s[i] == '/' && i + 1 < len && s[i + 1] == '>')) {
				if (an_len + 1 < sizeof(an))
					an[an_len++] = (char)tolower((unsigned char)s[i]);
				i++;
			}
			an[an_len] = '\0';
			while (i < len && isspace((unsigned char)s[i]))
				i++;
			if (i < len && s[i] == '=') {
				i++;
				while (i < len && isspace((unsigned char)s[i]))
					i++;
				if (i < len && (s[i] == '"' || s[i] == '\'')) {
					char q = s[i++];
					const char *e = memchr(s + i, q, len - i);
					v = s + i;
					vlen = e ? (size_t)(e - v) : len - i;
					i = e ? (size_t)(e - s) + 1 : len;
				} else {
					v = s + i;
					while (i < len && !isspace((unsigned char)s[i]) && s[i] != '>')
						i++;
					vlen = (size_t)(s + i - v);
				}
			}
			if (an_len > 2 && an[0] == 'o' && an[1] == 'n')
				fail(where, "event handler", s + tag_start, 120);
			if (!strcmp(an, "srcdoc"))
				fail(where, "srcdoc", s + tag_start, 120);
			if (!strcmp(an, "http-equiv") && !theme_ok)
				fail(where, "http-equiv", s + tag_start, 120);
			if (v && !strcmp(an, "content") && !strcmp(name, "meta")) {
				/* a refresh (an exported redirect) goes to a URL: it must not run */
				const char *u = memmem(v, vlen, "url=", 4);
				if (u && script_url(u + 4, vlen - (size_t)(u + 4 - v), 0))
					fail(where, "refresh to a script URL", s + tag_start, 120);
			}
			if (v && is_url_attr(an) && script_url(v, vlen, is_img))
				fail(where, "script URL", s + tag_start, 120);
			if (v && !strcmp(an, "style")) {
				struct buf d = BUF_INIT;
				decode_entities(v, vlen, &d);
				for (size_t k = 0; k < d.len; k++)
					d.ptr[k] = (char)tolower((unsigned char)d.ptr[k]);
				if (d.len && (strstr(d.ptr, "expression(") || strstr(d.ptr, "javascript:") ||
					      strstr(d.ptr, "url(")))
					fail(where, "style that loads or runs", s + tag_start, 120);
				buf_release(&d);
			}
			if (v && is_script && !strcmp(an, "src") && theme_ok &&
			    vlen > 8 && memcmp(v, "/_quire/", 8) == 0)
				script_ok = 1;
			if (v && !strcmp(name, "iframe") && !strcmp(an, "src") &&
			    (vlen < 8 || strncasecmp(v, "https://", 8) != 0))
				fail(where, "frame that is not https", s + tag_start, 120);
		}
		i += i < len;
		if (is_script) {
			const char *e = memmem(s + i, len - i, "</script", 8);
			size_t body = e ? (size_t)(e - (s + i)) : len - i;
			/* the theme's inline script starts so; anything else is a payload */
			if (theme_ok && body > 11 && memcmp(s + i, "(function(d)", 12) == 0 &&
			    !memmem(s + i, body, "alert", 5))
				script_ok = 1;
			if (!script_ok)
				fail(where, "script", s + tag_start, 120);
			i += body;
		}
	}
}

/*
 * XML: feed readers render the entity-escaped HTML of an RSS <description>
 * and of Atom's <content> and <summary>: each is decoded once and read as
 * HTML. Titles are text (escaped once), which is what they must stay.
 */
static void scan_xml(const char *where, const char *s, size_t len)
{
	static const char *const html_elems[] = { "description", "content", "summary" };
	struct buf d = BUF_INIT, open = BUF_INIT, close = BUF_INIT;
	const char *cdata;
	size_t k;

	if ((cdata = memmem(s, len, "<![CDATA[", 9)))
		fail(where, "CDATA (content not escaped)", cdata, 60);
	for (k = 0; k < sizeof(html_elems) / sizeof(*html_elems); k++) {
		const char *p = s, *end = s + len;
		buf_reset(&open);
		buf_reset(&close);
		buf_addf(&open, "<%s", html_elems[k]);
		buf_addf(&close, "</%s>", html_elems[k]);
		while ((p = memmem(p, (size_t)(end - p), open.ptr, open.len))) {
			const char *gt = memchr(p, '>', (size_t)(end - p));
			const char *e = gt ? memmem(gt, (size_t)(end - gt), close.ptr, close.len) : NULL;
			if (!gt || !e)
				break;
			/* Atom's text constructs are text unless they say type="html" */
			if (k > 0 && !memmem(p, (size_t)(gt - p), "type=\"html\"", 11)) {
				p = e;
				continue;
			}
			decode_entities(gt + 1, (size_t)(e - gt - 1), &d);
			scan_html(where, d.ptr ? d.ptr : "", d.len, 0);
			p = e;
		}
	}
	buf_release(&d);
	buf_release(&open);
	buf_release(&close);
}

static void scan_json(const char *where, const char *s, size_t len)
{
	const char *p;

	if (memchr(s, '<', len))
		fail(where, "raw '<' in JSON", memchr(s, '<', len), 60);
	for (p = s; (p = memmem(p, len - (size_t)(p - s), "\"url\":\"", 7)); p += 7)
		if (script_url(p + 7, strcspn(p + 7, "\""), 0))
			fail(where, "script URL in JSON", p, 80);
}

static void scan_body(const char *where, const char *type, const char *s, size_t len)
{
	scanned_files++;
	if (strstr(type, "html"))
		scan_html(where, s, len, 1);
	else if (strstr(type, "xml"))
		scan_xml(where, s, len);
	else if (strstr(type, "json"))
		scan_json(where, s, len);
}

static int scan_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	struct buf data = BUF_INIT;
	size_t n = strlen(path);

	(void)st;
	(void)ftw;
	if (flag != FTW_F || read_file(path, &data) < 0)
		return 0;
	if (n > 5 && !strcmp(path + n - 5, ".html"))
		scan_body(path + strlen(out), "text/html", data.ptr, data.len);
	else if (n > 4 && !strcmp(path + n - 4, ".xml"))
		scan_body(path + strlen(out), "application/xml", data.ptr, data.len);
	else if (n > 5 && !strcmp(path + n - 5, ".json"))
		scan_body(path + strlen(out), "application/json", data.ptr, data.len);
	buf_release(&data);
	return 0;
}

/* ---- the server -------------------------------------------------------------- */

static void setup(void)
{
	struct site_options so = { .search = 1 };
	struct site_server_options o = { .site = &so, .threads = 1, .url_prefix = "",
					 .search_rate = 1000.0, .search_burst = 1000.0 };
	struct snapshot *snap;

	vault = tv_new();
	out = tv_new();
	write_vault();
	site_server_start(&srv, vault, &o);
	snap = snapshot_acquire(&srv.slot);
	CHECK_INT(export_snapshot(snap, out, NULL), 0);
	snapshot_unref(snap);
}

static void teardown(void)
{
	site_server_stop(&srv);
	tv_remove(vault);
	tv_remove(out);
}

/* Every exported file: pages, feeds, sitemaps, the explorer tree, tag and folder pages. */
static void test_exported_outputs(void)
{
	size_t files = scanned_files;

	nftw(out, scan_file, 16, FTW_PHYS);
	fprintf(stderr, "  %zu exported files read, %zu tags tokenized\n", scanned_files - files,
		scanned_tags);
	CHECK(scanned_files - files >= 10);
}

/* What is made on request: the search API and page, the 404 page, reflected queries. */
static void test_served_on_request(void)
{
	static const char *const asks[] = {
		"/api/search?q=alert",
		"/api/search?q=onerror",
		"/api/search?q=script",
		"/search?q=alert",
		"/search?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
		"/search?q=%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E",
		"/%3Cscript%3Ealert(1)%3C%2Fscript%3E",
		"/links",
		"/raw-html",
		"/",
	};
	struct resp r;
	size_t i;
	int ready = 0;

	for (i = 0; i < 600 && !ready; i++) { /* a minute: only a hang */
		ready = get("/api/search?q=callout", &r) == 0 && r.status == 200 &&
			memmem(r.body.ptr, r.body.len, "\"url\"", 5);
		resp_free(&r);
		if (!ready)
			usleep(100000);
	}
	CHECK(ready);
	for (i = 0; i < sizeof(asks) / sizeof(*asks); i++) {
		const char *type;
		CHECK(get(asks[i], &r) == 0);
		type = hdr(&r, "Content-Type");
		CHECK(type != NULL);
		if (type)
			scan_body(asks[i], type, r.body.ptr ? r.body.ptr : "", r.body.len);
		resp_free(&r);
	}
}

/* The headers of every kind of response. */
static void test_security_headers(void)
{
	static const char *const paths[] = { "/", "/links", "/no-such-page", "/robots.txt",
					     "/rss.xml", "/_quire/tree.json", "/search?q=x",
					     "/api/search?q=x" };
	struct resp r;
	size_t i;

	for (i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
		const char *csp;
		CHECK(get(paths[i], &r) == 0);
		csp = hdr(&r, "Content-Security-Policy");
		if (!csp || !strstr(csp, "default-src 'self'") || !strstr(csp, "object-src 'none'") ||
		    !strstr(csp, "base-uri 'none'") || !strstr(csp, "script-src 'self' 'sha256-") ||
		    !strstr(csp, "frame-src https:")) {
			fprintf(stderr, "  %s: Content-Security-Policy: %s\n", paths[i], csp ? csp : "(none)");
			test_current_failed = 1;
		}
		CHECK(hdr(&r, "X-Content-Type-Options") &&
		      !strcmp(hdr(&r, "X-Content-Type-Options"), "nosniff"));
		CHECK(hdr(&r, "Referrer-Policy") != NULL);
		CHECK_INT(hdr_count(&r, "Content-Security-Policy"), 1);
		resp_free(&r);
	}
	/* a 304 carries them too */
	CHECK(get("/links", &r) == 0);
	{
		char req[512];
		struct resp r2;
		snprintf(req, sizeof(req), "GET /links HTTP/1.1\r\nHost: x\r\nIf-None-Match: %s\r\n\r\n",
			 hdr(&r, "ETag"));
		CHECK(fetch(srv.port, req, &r2) == 0);
		CHECK_INT(r2.status, 304);
		CHECK(hdr(&r2, "Content-Security-Policy") != NULL);
		resp_free(&r2);
	}
	resp_free(&r);
	/* an attachment a browser would run is sandboxed */
	CHECK(get("/pic.svg", &r) == 0);
	CHECK_INT(r.status, 200);
	CHECK(hdr(&r, "Content-Security-Policy") &&
	      strstr(hdr(&r, "Content-Security-Policy"), "sandbox"));
	CHECK(hdr(&r, "X-Content-Type-Options") != NULL);
	resp_free(&r);
	/* errors that no snapshot answers still forbid everything */
	CHECK(fetch(srv.port, "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n", &r) == 0);
	CHECK_INT(r.status, 400);
	CHECK(hdr(&r, "Content-Security-Policy") &&
	      strstr(hdr(&r, "Content-Security-Policy"), "default-src 'none'"));
	resp_free(&r);
}

/* The inline script's hash in the policy is the hash of the script the pages carry. */
static void test_csp_hash_matches_page(void)
{
	struct resp r;
	const char *csp, *start, *end;

	CHECK(get("/links", &r) == 0);
	csp = hdr(&r, "Content-Security-Policy");
	start = memmem(r.body.ptr, r.body.len, "<script>", 8);
	end = start ? memmem(start, r.body.len - (size_t)(start - r.body.ptr), "</script>", 9) : NULL;
	CHECK(csp && start && end);
	if (csp && start && end) {
		char want[SHA256_B64_SIZE + 16];
		char hash[SHA256_B64_SIZE];
		hash_sha256_base64(start + 8, (size_t)(end - start - 8), hash);
		snprintf(want, sizeof(want), "'sha256-%s'", hash);
		CHECK(strstr(csp, want) != NULL);
	}
	resp_free(&r);
}

int main(void)
{
	md_global_init();
	setup();
	RUN(test_exported_outputs);
	RUN(test_served_on_request);
	RUN(test_security_headers);
	RUN(test_csp_hash_matches_page);
	teardown();
	return test_done();
}
