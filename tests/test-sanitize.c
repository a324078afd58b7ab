/*
 * test-sanitize.c: sanitize.c on real payloads and on what must survive.
 *
 * Three kinds of check: exact output where it is stable (what survives, and
 * how attacks come out); for every payload of the attack list, the same
 * invariants on whatever comes out (no script-capable element, no on*
 * attribute, no script or document URL in a URL attribute, no style that
 * loads or runs things) and that sanitizing the output again changes
 * nothing; and the Markdown renderer end to end (details around Markdown,
 * unsafe Markdown links). Hostile sizes must finish in linear time.
 *
 * `test-sanitize --html < piece.html` prints the sanitized piece: the way
 * to write the expected half of a new case.
 */
#include "markdown/sanitize.h"
#include "markdown/markdown.h"
#include "lib/test.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static char *sanitized(const char *html)
{
	struct buf b = BUF_INIT;

	sanitize_html(&b, html, strlen(html));
	return buf_detach(&b, NULL);
}

static void check_html(const char *in, const char *want)
{
	char *got = sanitized(in);

	if (strcmp(got, want) != 0)
		fprintf(stderr, "  input: %s\n", in);
	CHECK_STR(got, want);
	free(got);
}

/* Pieces that must come out exactly as they went in. */
static void check_same(const char *in)
{
	check_html(in, in);
}

/* ---- the invariants ---- */

/*
 * The entities the sanitizer writes, turned back, for checking values (and
 * &#x27;, which the Markdown renderer writes for ' in an href).
 */
static void decode(const char *s, size_t len, struct buf *out)
{
	static const struct {
		const char *ent;
		char c;
	} ents[] = { { "&amp;", '&' }, { "&quot;", '"' }, { "&lt;", '<' }, { "&gt;", '>' },
		     { "&nbsp;", ' ' }, { "&#x27;", '\'' } };
	size_t i, k;

	for (i = 0; i < len; i++) {
		for (k = 0; k < sizeof(ents) / sizeof(ents[0]); k++) {
			size_t n = strlen(ents[k].ent);

			if (i + n <= len && !memcmp(s + i, ents[k].ent, n)) {
				buf_addc(out, ents[k].c);
				i += n - 1;
				break;
			}
		}
		if (k == sizeof(ents) / sizeof(ents[0]))
			buf_addc(out, tolower((unsigned char)s[i]));
	}
}

static int listed(const char *name, size_t len, const char *const *list)
{
	for (; *list; list++)
		if (strlen(*list) == len && !strncasecmp(*list, name, len))
			return 1;
	return 0;
}

/*
 * The scheme of the URL u (in lower case) into scheme, read as a browser
 * reads it: leading controls and spaces skipped, tabs and newlines ignored,
 * a letter then letters, digits, '+', '-' or '.' up to a ':' (anything
 * else before the ':' makes a relative URL). Returns the index after the
 * ':', or 0 for a relative URL.
 */
static size_t scheme_of(const char *u, size_t n, char *scheme, size_t cap)
{
	size_t i = 0, k = 0;

	while (i < n && (unsigned char)u[i] <= 0x20)
		i++;
	for (; i < n; i++) {
		char c = u[i];

		if (c == '\t' || c == '\n' || c == '\r')
			continue;
		if (c == ':')
			break;
		if (!isalpha((unsigned char)c) &&
		    !(k && (isdigit((unsigned char)c) || c == '+' || c == '-' || c == '.')))
			return 0;
		if (k + 1 < cap)
			scheme[k++] = c;
	}
	scheme[k] = '\0';
	return i == n ? 0 : i + 1;
}

/* Has u a scheme other than http, https, mailto, or data: with a raster image? */
static int bad_url(const char *u, size_t n)
{
	static const char *const images[] = { "image/png", "image/gif", "image/jpeg", "image/webp",
					      "image/avif" };
	char scheme[32], rest[16];
	size_t i = scheme_of(u, n, scheme, sizeof(scheme)), r = 0, t;

	if (!i)
		return 0;
	if (!strcmp(scheme, "http") || !strcmp(scheme, "https") || !strcmp(scheme, "mailto"))
		return 0;
	if (strcmp(scheme, "data") != 0)
		return 1;
	for (; i < n && r + 1 < sizeof(rest); i++)
		if (u[i] != '\t' && u[i] != '\n' && u[i] != '\r')
			rest[r++] = u[i];
	rest[r] = '\0';
	for (t = 0; t < sizeof(images) / sizeof(images[0]); t++) {
		size_t len = strlen(images[t]);

		if (!strncmp(rest, images[t], len) &&
		    (!rest[len] || rest[len] == ';' || rest[len] == ','))
			return 0;
	}
	return 1;
}

/* srcset: each run between spaces and commas is a URL or a descriptor. */
static int bad_srcset(const char *s)
{
	while (*s) {
		size_t n = strcspn(s, " \t\n,");

		if (n && bad_url(s, n))
			return 1;
		s += n;
		s += strspn(s, " \t\n,");
	}
	return 0;
}

/*
 * Why html is unsafe, or NULL. In the sanitizer's output every '<' starts a
 * tag it wrote (text has &lt;) and every attribute value is in double
 * quotes (with &quot; inside), so a simple scan reads it exactly.
 */
static const char *unsafe(const char *html)
{
	static const char *const banned[] = {
		"script", "style",    "svg",      "math",     "object",   "embed",  "form",
		"input",  "button",   "meta",     "base",     "link",     "frame",  "frameset",
		"select", "textarea", "template", "noscript", "applet",   "title",  "xmp",
		"plaintext", "noembed", "noframes", "isindex", "keygen", "option", NULL
	};
	static const char *const url_attrs[] = { "href",   "src",        "poster",  "cite",
						 "srcset", "action",     "formaction", "background",
						 "dynsrc", "lowsrc",     "data",    "xlink:href",
						 "codebase", NULL };
	const char *p = html;

	if (strstr(html, "<!"))
		return "a comment or doctype";
	while ((p = strchr(p, '<')) != NULL) {
		const char *name = ++p, *end = strchr(p, '>');
		size_t nlen;
		int iframe, https_src = 0;
		char scheme[8];

		if (!end)
			return "a tag without '>'";
		if (*name == '/')
			name++;
		nlen = strcspn(name, " />");
		if (listed(name, nlen, banned))
			return "a banned element";
		iframe = p[0] != '/' && nlen == 6 && !strncasecmp(name, "iframe", 6);
		p = name + nlen;
		while (p < end) {
			struct buf v = BUF_INIT;
			const char *an = p, *q, *x;
			size_t alen;
			const char *why = NULL;
			int raw_ref = 0;

			while (p < end && (*p == ' ' || *p == '/'))
				p++;
			if (p >= end)
				break;
			an = p;
			alen = strcspn(an, "= />");
			p = an + alen;
			if (*p == '=') {
				if (p[1] != '"')
					return "an unquoted attribute";
				q = strchr(p + 2, '"');
				if (!q || q > end)
					return "an unterminated attribute";
				decode(p + 2, (size_t)(q - p - 2), &v);
				for (x = p + 2; x + 1 < q; x++)
					raw_ref |= x[0] == '&' && x[1] == '#' && strncmp(x, "&#x27;", 6);
				p = q + 1;
			}
			if (alen >= 2 && tolower((unsigned char)an[0]) == 'o' &&
			    tolower((unsigned char)an[1]) == 'n')
				why = "an on* attribute";
			if (!why && listed(an, alen, url_attrs)) {
				int srcset = alen == 6 && !strncasecmp(an, "srcset", 6);

				/* no numeric references but the renderer's &#x27; */
				if (raw_ref || (srcset ? bad_srcset(v.ptr) : bad_url(v.ptr, v.len)))
					why = "a URL with another scheme";
				if (iframe && alen == 3 && scheme_of(v.ptr, v.len, scheme, 8) &&
				    !strcmp(scheme, "https"))
					https_src = 1;
			}
			if (!why && alen == 5 && !strncasecmp(an, "style", 5) &&
			    (strstr(v.ptr, "expression") || strstr(v.ptr, "url(") ||
			     strstr(v.ptr, "image-set(") || strstr(v.ptr, "/*") ||
			     strstr(v.ptr, "javascript") || strchr(v.ptr, '\\') ||
			     strstr(v.ptr, "@import") || strstr(v.ptr, "binding") ||
			     strstr(v.ptr, "behavior")))
				why = "an unsafe style";
			if (!why && alen == 6 && !strncasecmp(an, "srcdoc", 6))
				why = "srcdoc";
			buf_release(&v);
			if (why)
				return why;
		}
		if (iframe && !https_src)
			return "an iframe without an https: src";
		p = end + 1;
	}
	return NULL;
}

/* ---- attacks ---- */

/*
 * The OWASP XSS filter evasion cheat sheet's classics, and the parser
 * tricks behind mutation XSS: each must come out safe and stable.
 */
static const char *const payloads[] = {
	"<SCRIPT SRC=http://xss.rocks/xss.js></SCRIPT>",
	"<IMG SRC=\"javascript:alert('XSS');\">",
	"<IMG SRC=javascript:alert('XSS')>",
	"<IMG SRC=JaVaScRiPt:alert('XSS')>",
	"<IMG SRC=javascript:alert(&quot;XSS&quot;)>",
	"<IMG SRC=`javascript:alert(\"RSnake says, 'XSS'\")`>",
	"<a onmouseover=\"alert(document.cookie)\">xxs link</a>",
	"<a onmouseover=alert(document.cookie)>xxs link</a>",
	"<IMG \"\"\"><SCRIPT>alert(\"XSS\")</SCRIPT>\"\\>",
	"<IMG SRC=javascript:alert(String.fromCharCode(88,83,83))>",
	"<IMG SRC=# onmouseover=\"alert('xxs')\">",
	"<IMG SRC= onmouseover=\"alert('xxs')\">",
	"<IMG SRC=/ onerror=\"alert(String.fromCharCode(88,83,83))\"></img>",
	"<img src=x onerror=\"&#0000106&#0000097&#0000118&#0000097&#0000115&#0000099&#0000114"
	"&#0000105&#0000112&#0000116&#0000058&#0000097&#0000108&#0000101&#0000114&#0000116"
	"&#0000040&#0000039&#0000088&#0000083&#0000083&#0000039&#0000041\">",
	"<IMG SRC=&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;&#97;&#108;"
	"&#101;&#114;&#116;&#40;&#39;&#88;&#83;&#83;&#39;&#41;>",
	"<IMG SRC=&#0000106&#0000097&#0000118&#0000097&#0000115&#0000099&#0000114&#0000105"
	"&#0000112&#0000116&#0000058&#0000097&#0000108&#0000101&#0000114&#0000116&#0000040"
	"&#0000039&#0000088&#0000083&#0000083&#0000039&#0000041>",
	"<IMG SRC=&#x6A&#x61&#x76&#x61&#x73&#x63&#x72&#x69&#x70&#x74&#x3A&#x61&#x6C&#x65"
	"&#x72&#x74&#x28&#x27&#x58&#x53&#x53&#x27&#x29>",
	"<IMG SRC=\"jav\tascript:alert('XSS');\">",
	"<IMG SRC=\"jav&#x09;ascript:alert('XSS');\">",
	"<IMG SRC=\"jav&#x0A;ascript:alert('XSS');\">",
	"<IMG SRC=\"jav&#x0D;ascript:alert('XSS');\">",
	"<IMG SRC=\" &#14;  javascript:alert('XSS');\">",
	"<SCRIPT/XSS SRC=\"http://xss.rocks/xss.js\"></SCRIPT>",
	"<BODY onload!#$%&()*~+-_.,:;?@[/|\\]^`=alert(\"XSS\")>",
	"<SCRIPT/SRC=\"http://xss.rocks/xss.js\"></SCRIPT>",
	"<<SCRIPT>alert(\"XSS\");//\\<</SCRIPT>",
	"<SCRIPT SRC=http://xss.rocks/xss.js?< B >",
	"<SCRIPT SRC=//xss.rocks/.j>",
	"<IMG SRC=\"`<javascript:alert>`('XSS')\"",
	"<iframe src=http://xss.rocks/scriptlet.html <",
	"</TITLE><SCRIPT>alert(\"XSS\");</SCRIPT>",
	"<INPUT TYPE=\"IMAGE\" SRC=\"javascript:alert('XSS');\">",
	"<BODY BACKGROUND=\"javascript:alert('XSS')\">",
	"<IMG DYNSRC=\"javascript:alert('XSS')\">",
	"<IMG LOWSRC=\"javascript:alert('XSS')\">",
	"<STYLE>li {list-style-image: url(\"javascript:alert('XSS')\");}</STYLE><UL><LI>XSS</br>",
	"<svg/onload=alert('XSS')>",
	"<BODY ONLOAD=alert('XSS')>",
	"<BGSOUND SRC=\"javascript:alert('XSS');\">",
	"<LINK REL=\"stylesheet\" HREF=\"javascript:alert('XSS');\">",
	"<STYLE>@import'http://xss.rocks/xss.css';</STYLE>",
	"<META HTTP-EQUIV=\"Link\" Content=\"<http://xss.rocks/xss.css>; REL=stylesheet\">",
	"<STYLE>BODY{-moz-binding:url(\"http://xss.rocks/xssmoz.xml#xss\")}</STYLE>",
	"<IMG STYLE=\"xss:expr/*XSS*/ession(alert('XSS'))\">",
	"<DIV STYLE=\"background-image: url(javascript:alert('XSS'))\">",
	"<DIV STYLE=\"background-image:\\0075\\0072\\006C\\0028'\\006a\\0061\\0076\\0061\\0073"
	"\\0063\\0072\\0069\\0070\\0074\\003a\\0061\\006c\\0065\\0072\\0074\\0028.1027\\0058"
	".1053\\0053\\0027\\0029'\\0029\">",
	"<DIV STYLE=\"width: expression(alert('XSS'));\">",
	"<META HTTP-EQUIV=\"refresh\" CONTENT=\"0;url=javascript:alert('XSS');\">",
	"<META HTTP-EQUIV=\"refresh\" CONTENT=\"0;url=data:text/html "
	"base64,PHNjcmlwdD5hbGVydCgnWFNTJyk8L3NjcmlwdD4K\">",
	"<IFRAME SRC=\"javascript:alert('XSS');\"></IFRAME>",
	"<IFRAME SRC=# onmouseover=\"alert(document.cookie)\"></IFRAME>",
	"<iframe srcdoc=\"&lt;script&gt;alert(1)&lt;/script&gt;\"></iframe>",
	"<iframe src=\"https://example.com\" srcdoc=\"&lt;script&gt;alert(1)&lt;/script&gt;\" "
	"onload=\"alert(1)\"></iframe>",
	"<FRAMESET><FRAME SRC=\"javascript:alert('XSS');\"></FRAMESET>",
	"<TABLE BACKGROUND=\"javascript:alert('XSS')\">",
	"<TABLE><TD BACKGROUND=\"javascript:alert('XSS')\">",
	"<BASE HREF=\"javascript:alert('XSS');//\">",
	"<OBJECT TYPE=\"text/x-scriptlet\" DATA=\"http://xss.rocks/scriptlet.html\"></OBJECT>",
	"<EMBED SRC=\"data:image/svg+xml;base64,PHN2ZyB4bWxuczpzdmc9Imh0dH\" "
	"type=\"image/svg+xml\" AllowScriptAccess=\"always\"></EMBED>",
	"<form action=\"javascript:alert(1)\"><input type=submit></form>",
	"<button formaction=javascript:alert(1)>x</button>",
	"<isindex action=javascript:alert(1) type=image>",
	"<keygen autofocus onfocus=alert(1)>",
	"<object data=\"javascript:alert(1)\"></object>",
	"<applet code=x></applet>",
	"<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
	"<math href=\"javascript:alert(1)\">CLICKME</math>",
	"<math><mi xlink:href=\"data:x,<script>alert(1)</script>\">x</mi></math>",
	"<svg><a xlink:href=\"javascript:alert(1)\"><text x=\"20\" y=\"20\">XSS</text></a></svg>",
	"<svg><script>alert(1)</script></svg>",
	"<svg><style><img src=x onerror=alert(1)></style></svg>",
	"<form><math><mtext></form><form><mglyph><style></math><img src onerror=alert(1)>",
	"<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">",
	"<scr<script>ipt>alert(1)</script>",
	"<!--><script>alert(1)</script>-->",
	"<!-- <script>alert(1)</script> -->",
	"<!--[if IE]><script>alert(1)</script><![endif]-->",
	"<![CDATA[<script>alert(1)</script>]]>",
	"<?xml version=\"1.0\"?><script>alert(1)</script>",
	"<a href=\"jav&#x09;ascript:alert(1)\">x</a>",
	"<a href=\"  javascript:alert(1)\">x</a>",
	"<a href=\"&#0;javascript:alert(1)\">x</a>",
	"<a href=\"\x01javascript:alert(1)\">x</a>",
	"<a href=\"java\nscript:alert(1)\">x</a>",
	"<a href=\"JAVASCRIPT:alert(1)\">x</a>",
	"<a href=\"vbscript:msgbox(1)\">x</a>",
	"<a href=\"livescript:alert(1)\">x</a>",
	"<a href=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">x</a>",
	"<a href=javascript&colon;alert(1)>x</a>",
	"<a href=\"java&#115;cript:alert(1)\">x</a>",
	"<a href=\"&#x6A;avascript:alert(1)\">x</a>",
	"<a href=\" &#x09;javascript:alert(1)\">x</a>",
	"<a href=\"javascript&#58;alert(1)\">x</a>",
	"<a href=\"javascript&#0000058alert(1)\">x</a>",
	"<a href=\"file:///etc/passwd\">x</a>",
	"<img src=\"x\" onerror =alert(1)>",
	"<img/src=x/onerror=alert(1)>",
	"<img src=x:alert(alt) onerror=eval(src) alt=0>",
	"<img src=\"data:image/svg+xml;base64,PHN2Zz4=\">",
	"<img srcset=\"javascript:alert(1)\">",
	"<img srcset=\"ok.png 1x, javascript:alert(1) 2x\">",
	"<picture><source srcset=\"javascript:alert(1)\"><img src=x></picture>",
	"<div/onclick=alert(1)>x</div>",
	"<details open ontoggle=alert(1)>",
	"<video><source onerror=alert(1)></video>",
	"<video poster=javascript:alert(1)></video>",
	"<video src=\"javascript:alert(1)\"></video>",
	"<audio src=x onerror=alert(1)>",
	"<track src=\"javascript:alert(1)\">",
	"<blockquote cite=\"javascript:alert(1)\">q</blockquote>",
	"<marquee onstart=alert(1)>x</marquee>",
	"<xmp><script>alert(1)</script></xmp>",
	"<title><script>alert(1)</script></title>",
	"<textarea><script>alert(1)</script></textarea>",
	"<plaintext><script>alert(1)</script>",
	"<template><script>alert(1)</script></template>",
	"<select><option><script>alert(1)</script>",
	"<noembed><img src=x onerror=alert(1)></noembed>",
	"<style>*{x:expression(alert(1))}</style>",
	"<span style=\"color:red;background:url(//evil.example/x.png)\">x</span>",
	"<span style=\"\\62 ackground:url(x)\">x</span>",
	"<span style=\"behavior:url(x.htc)\">x</span>",
	"<span style=\"background:image-set('x.png' 1x)\">x</span>",
	"<img src=x onerror=alert(1)",
	"<a href=\"javascript:alert(1)\"",
	"<a href=javascript:alert(1) onclick=alert(1) title=\"t\">x</a>",
	"<div id=x name=y class=z data-src=\"Note\" onclick=alert(1)>x</div>",
	"</script><script>alert(1)</script>",
	"<p>a</p></body></html><script>alert(1)</script>",
	"<html><head><script>alert(1)</script></head><body onload=alert(1)>x</body></html>",
	"<table><tr><td><script>alert(1)</script>x</td></tr>junk<img src=x onerror=alert(1)>"
	"</table>",
	"<b><i>x</b><img src=x onerror=alert(1)></i>",
	"<a href=\"https://example.com\" target=\"_blank\" rel=\"opener\">x</a>",
};

static void test_payloads(void)
{
	size_t i;

	for (i = 0; i < sizeof(payloads) / sizeof(payloads[0]); i++) {
		char *once = sanitized(payloads[i]), *twice = sanitized(once);
		const char *why = unsafe(once);

		if (why)
			fprintf(stderr, "  payload %zu: %s\n  output: %s\n  unsafe: %s\n", i,
				payloads[i], once, why);
		CHECK(why == NULL);
		if (strcmp(once, twice) != 0)
			fprintf(stderr, "  payload %zu: %s\n  once:  %s\n  twice: %s\n", i,
				payloads[i], once, twice);
		CHECK_STR(twice, once);
		free(once);
		free(twice);
	}
}

/* How some attacks come out, exactly. */
static void test_attacks_exact(void)
{
	check_html("<img src=x onerror=alert(1)>", "<img src=\"x\" />");
	check_html("<svg onload=alert(1)>", "");
	check_html("<div onclick=\"alert(1)\" class=\"note\">hi</div>",
		   "<div class=\"note\">hi</div>");
	check_html("<a href=\"javascript:alert(1)\">x</a>", "<a>x</a>");
	check_html("<a href=\"jav&#x09;ascript:alert(1)\">x</a>", "<a>x</a>");
	check_html("<a href=\"&#106;avascript:alert(1)\">x</a>", "<a>x</a>");
	check_html("<a href=\" JaVaScRiPt:alert(1)\" title=t>x</a>", "<a title=\"t\">x</a>");
	check_html("<scr<script>ipt>alert(1)</script>", "ipt&gt;alert(1)");
	check_html("<!--><script>alert(1)</script>-->", "--&gt;");
	check_html("<body onload=alert(1)>hi", "hi");
	check_html("<script>alert(1)</script>after", "after");
	check_html("<style>p{}</style><p>x</p>", "<p>x</p>");
	check_html("<iframe src=\"javascript:alert(1)\"></iframe>x", "x");
	check_html("<iframe src=\"http://example.com/\"></iframe>", "");
	check_html("<iframe src=\"//example.com/\"></iframe>", "");
	check_html("<iframe srcdoc=\"&lt;script&gt;alert(1)&lt;/script&gt;\"></iframe>", "");
	check_html("<meta http-equiv=refresh content=\"0;url=javascript:alert(1)\">", "");
	check_html("<base href=\"https://evil.example/\">", "");
	check_html("<object data=x><param name=a value=b>fallback</object>", "");
	check_html("<embed src=x>", "");
	check_html("<form action=\"https://evil.example/\"><input name=q>"
		   "<button>Go</button></form>",
		   "");
	check_html("<math><mi>x</mi></math>y", "y");
	check_html("<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">", "");
	check_html("<xmp><script>alert(1)</script></xmp>", "&lt;script&gt;alert(1)&lt;/script&gt;");
	check_html("<img src=x onerror=alert(1)", "");
	check_html("<a href=javascript&colon;alert(1)>x</a>", "<a>x</a>");
	check_html("<div id=x name=y data-src=\"Note\">x</div>", "<div id=\"x\">x</div>");
	check_html("<video poster=\"javascript:alert(1)\" src=\"data:video/mp4;base64,AA\" "
		   "controls></video>",
		   "<video controls=\"\"></video>");
}

/* ---- what must survive ---- */

static void test_survivors(void)
{
	check_same("<div class=\"box\">\n<p>kept</p>\n</div>\n");
	check_same("<kbd>Ctrl</kbd>+<kbd>C</kbd> H<sub>2</sub>O x<sup>2</sup> <mark>m</mark> "
		   "<u>u</u>");
	check_same("<span class=\"c\" style=\"color: red; font-weight: bold\">x</span>");
	check_html("<div class=a style=\"border:1px solid #ccc;padding:4px\">x</div>",
		   "<div class=\"a\" style=\"border:1px solid #ccc;padding:4px\">x</div>");
	check_html("<iframe width=\"560\" height=\"315\" "
		   "src=\"https://www.youtube.com/embed/dQw4w9WgXcQ\" "
		   "title=\"YouTube video player\" frameborder=\"0\" allow=\"accelerometer; "
		   "autoplay; clipboard-write; encrypted-media; gyroscope; picture-in-picture; "
		   "web-share\" referrerpolicy=\"strict-origin-when-cross-origin\" "
		   "allowfullscreen></iframe>",
		   "<iframe width=\"560\" height=\"315\" "
		   "src=\"https://www.youtube.com/embed/dQw4w9WgXcQ\" "
		   "title=\"YouTube video player\" frameborder=\"0\" "
		   "referrerpolicy=\"strict-origin-when-cross-origin\" allowfullscreen=\"\">"
		   "</iframe>");
	check_html("<iframe src=\"https://example.com/\">fallback</iframe>",
		   "<iframe src=\"https://example.com/\"></iframe>");
	check_html("<video controls width=\"400\" poster=\"p.jpg\">"
		   "<source src=\"v.webm\" type=\"video/webm\">"
		   "<source src=\"v.mp4\" type=\"video/mp4\">"
		   "<track src=\"s.vtt\" kind=\"subtitles\" srclang=\"en\" label=\"English\">"
		   "Your browser cannot play it.</video>",
		   "<video controls=\"\" width=\"400\" poster=\"p.jpg\">"
		   "<source src=\"v.webm\" type=\"video/webm\" />"
		   "<source src=\"v.mp4\" type=\"video/mp4\" />"
		   "<track src=\"s.vtt\" kind=\"subtitles\" srclang=\"en\" label=\"English\" />"
		   "Your browser cannot play it.</video>");
	check_html("<audio controls src=\"a.mp3\"></audio>",
		   "<audio controls=\"\" src=\"a.mp3\"></audio>");
	check_html("<picture><source srcset=\"a.webp 1x, a2.webp 2x\" type=\"image/webp\">"
		   "<img src=\"a.jpg\" alt=\"A\" width=100></picture>",
		   "<picture><source srcset=\"a.webp 1x, a2.webp 2x\" type=\"image/webp\" />"
		   "<img src=\"a.jpg\" alt=\"A\" width=\"100\" /></picture>");
	check_html("<img src=\"data:image/png;base64,iVBORw0KGgo=\" alt=\"dot\">",
		   "<img src=\"data:image/png;base64,iVBORw0KGgo=\" alt=\"dot\" />");
	check_html("<table><tr><th>a</th><th>b</th></tr>"
		   "<tr><td colspan=2 onclick=x>1</td></tr></table>",
		   "<table><tr><th>a</th><th>b</th></tr><tr><td colspan=\"2\">1</td></tr></table>");
	check_same("<table>\n<thead><tr><th align=\"left\">h</th></tr></thead>\n"
		   "<tbody>\n<tr><td>c</td></tr>\n</tbody>\n</table>");
	check_html("a<br>b<br/>c<BR />d</br>e", "a<br />b<br />c<br />d<br />e");
	check_html("<hr><wbr>", "<hr /><wbr />");
	check_html("<p>&amp; &lt; &gt; &nbsp; &quot; &copy; &#169; &#x263A;</p>",
		   "<p>&amp; &lt; &gt; &nbsp; \" \xc2\xa9 \xc2\xa9 \xe2\x98\xba</p>");
	check_same("<span title=\"a &quot;b&quot; &lt;c&gt; &amp; d\">x</span>");
	check_same("<abbr title=\"HyperText Markup Language\">HTML</abbr> "
		   "<time datetime=\"2024-05-01\">May</time>");
	check_html("<ol start=3 type=a reversed onclick=x><li value=5>x</li></ol>",
		   "<ol start=\"3\" type=\"a\" reversed=\"\"><li value=\"5\">x</li></ol>");
	check_same("<dl><dt>t</dt><dd>d</dd></dl>");
	check_same("<ruby>\xe6\xbc\xa2<rp>(</rp><rt>kan</rt><rp>)</rp></ruby>");
	check_same("<blockquote cite=\"https://example.com/q\">q</blockquote>");
	check_same("<center><font color=\"red\" face=\"Arial\" size=\"3\">x</font></center>");
	check_html("<figure><img src=\"x.png\" alt=\"x\"><figcaption>Cap</figcaption></figure>",
		   "<figure><img src=\"x.png\" alt=\"x\" /><figcaption>Cap</figcaption></figure>");
	check_same("<h2 id=\"top\" dir=\"rtl\" lang=\"ar\">t</h2>");
	check_same("<pre>\n\nx  y\n</pre>");
	check_same("<pre><code>a &lt; b</code></pre>");
	/* unknown elements lose their tags, not their text */
	check_html("<custom-tag a=1>text</custom-tag> <blink>b</blink>", "text b");
	check_html("<image src=\"x.png\">", "<img src=\"x.png\" />");
}

static void test_links(void)
{
	check_same("<a href=\"https://example.com/a?b=1&amp;c=2#d\">x</a>");
	check_same("<a href=\"mailto:me@example.com\">m</a> <a href=\"/root\">r</a> "
		   "<a href=\"rel/path\">p</a> <a href=\"#h\">f</a> <a href=\"?q=1\">q</a> "
		   "<a href=\"//cdn.example/x\">c</a>");
	check_html("<a href=x target=_blank>y</a>",
		   "<a href=\"x\" target=\"_blank\" rel=\"noopener noreferrer\">y</a>");
	check_html("<a href=x rel=\"nofollow\" target=\"_blank\">y</a>",
		   "<a href=\"x\" target=\"_blank\" rel=\"nofollow noopener noreferrer\">y</a>");
	check_html("<a href=x rel=\"NoOpener\" target=\"other\">y</a>",
		   "<a href=\"x\" target=\"other\" rel=\"NoOpener noreferrer\">y</a>");
	check_html("<a href=x target=_self>y</a>", "<a href=\"x\" target=\"_self\">y</a>");
	check_html("<a href=x rel=nofollow>y</a>", "<a href=\"x\" rel=\"nofollow\">y</a>");
	check_html("<a href=\"tel:123\">t</a> <a href=\"obsidian://open\">o</a> "
		   "<a href=\"C:/x\">c</a>",
		   "<a>t</a> <a>o</a> <a>c</a>");
	check_html("<img srcset=\"a.png 1x, b.png 2x\" src=\"a.png\">",
		   "<img srcset=\"a.png 1x, b.png 2x\" src=\"a.png\" />");
	check_html("<img srcset=\"data:image/png;base64,AA,BB 1x,c.png 2x\">",
		   "<img srcset=\"data:image/png;base64,AA,BB 1x,c.png 2x\" />");
	check_html("<img srcset=\"a.png 1x, javascript:alert(1) 2x\" src=a.png>",
		   "<img src=\"a.png\" />");
}

static void test_urls(void)
{
	static const struct {
		const char *url;
		int link, image;
	} cases[] = {
		{ "https://example.com/", 1, 1 },
		{ "HTTP://example.com/", 1, 1 },
		{ "mailto:a@example.com", 1, 1 },
		{ "", 1, 1 },
		{ "/root", 1, 1 },
		{ "rel/path.png", 1, 1 },
		{ "#frag", 1, 1 },
		{ "?q=a:b", 1, 1 },
		{ "a/b:c", 1, 1 },
		{ "//host/x", 1, 1 },
		{ "javascript%3Aalert(1)", 1, 1 }, /* a relative path to a browser */
		{ "javascript:alert(1)", 0, 0 },
		{ "JaVaScRiPt:alert(1)", 0, 0 },
		{ " javascript:alert(1)", 0, 0 },
		{ "\x01\x02 javascript:alert(1)", 0, 0 },
		{ "java\tscript:alert(1)", 0, 0 },
		{ "java\nscript:alert(1)", 0, 0 },
		{ "java\rscript:alert(1)", 0, 0 },
		{ "vbscript:msgbox(1)", 0, 0 },
		{ "livescript:x", 0, 0 },
		{ "file:///etc/passwd", 0, 0 },
		{ "ftp://example.com/", 0, 0 },
		{ "tel:123", 0, 0 },
		{ ":no-scheme", 0, 0 },
		{ "java script:x", 0, 0 },
		{ "\xc2\xa0javascript:x", 0, 0 },
		{ "averyveryverylongschemename:x", 0, 0 },
		{ "data:text/html,<script>alert(1)</script>", 0, 0 },
		{ "data:text/html;base64,PHNjcmlwdD4=", 0, 0 },
		{ "data:image/svg+xml;base64,PHN2Zz4=", 0, 0 },
		{ "data:image/png;base64,iVBORw0KGgo=", 0, 1 },
		{ "DATA:IMAGE/PNG;BASE64,iVBORw0KGgo=", 0, 1 },
		{ "data:image/gif;base64,R0lGOD", 0, 1 },
		{ "data:image/jpeg;base64,/9j/", 0, 1 },
		{ "data:image/webp;base64,UklG", 0, 1 },
		{ "data:image/avif;base64,AAAA", 0, 1 },
		{ "data:image/pngx;base64,AAAA", 0, 0 },
		{ "data:image/png", 0, 1 }, /* invalid without a ',', and harmless */
		{ "data:image/png/x", 0, 0 },
		{ "da\tta:image/png;base64,AA", 0, 1 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *u = cases[i].url;
		int link = sanitize_url(u, strlen(u), SANITIZE_URL_LINK);
		int image = sanitize_url(u, strlen(u), SANITIZE_URL_IMAGE);

		if (link != cases[i].link || image != cases[i].image)
			fprintf(stderr, "  url: %s\n", u);
		CHECK_INT(link, cases[i].link);
		CHECK_INT(image, cases[i].image);
	}
	/* the length is honoured: what follows is not read */
	CHECK_INT(sanitize_url("https:javascript:x", 6, SANITIZE_URL_LINK), 1);
	CHECK_INT(sanitize_url("javascript:x", 4, SANITIZE_URL_LINK), 1);
}

/*
 * style is kept whole or dropped whole: dropped for a backslash, a comment,
 * an at-rule, '<', or anything that loads or runs (url(), image-set(),
 * expression, behavior, -moz-binding, script schemes).
 */
static void test_style(void)
{
	static const char *const kept[] = {
		"color: red",
		"color:#c00;background-color:rgb(1,2,3)",
		"font-family: 'Fira Code', monospace",
		"width: calc(100% - 2em); border-radius: 4px", "text-decoration: underline wavy",
		"display:grid;grid-template-columns:repeat(2, 1fr)",
	};
	static const char *const dropped[] = {
		"background: url(x.png)",
		"background: URL(x.png)",
		"background:url (x)x;list-style:url(x)",
		"width: expression(alert(1))",
		"xss:expr/*XSS*/ession(alert(1))",
		"\\62 ackground: red",
		"@import 'x.css'", "behavior: url(x.htc)", "-moz-binding: url(x.xml#x)",
		"background: image-set('x.png' 1x)", "background: -webkit-image-set('x.png' 1x)",
		"background: cross-fade(url(a), url(b))", "background: element(#x)",
		"color: red; background: src('x')", "x: javascript:alert(1)", "a</style><script>",
	};
	size_t i;

	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		struct buf in = BUF_INIT, want = BUF_INIT;
		char *got;

		buf_addf(&in, "<span style=\"%s\">x</span>", kept[i]);
		buf_adds(&want, "<span style=\"");
		buf_adds_html(&want, kept[i]);
		buf_adds(&want, "\">x</span>");
		got = sanitized(in.ptr);
		CHECK_STR(got, want.ptr);
		free(got);
		buf_release(&in);
		buf_release(&want);
	}
	for (i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++) {
		struct buf in = BUF_INIT;
		char *got;

		buf_adds(&in, "<span style=\"");
		buf_adds_html(&in, dropped[i]);
		buf_adds(&in, "\">x</span>");
		got = sanitized(in.ptr);
		if (strcmp(got, "<span>x</span>") != 0)
			fprintf(stderr, "  style: %s\n", dropped[i]);
		CHECK_STR(got, "<span>x</span>");
		free(got);
		buf_release(&in);
	}
}

/* ---- pieces: what cmark-gfm hands over ---- */

static void test_pieces(void)
{
	/* an HTML block that opens what a later one closes */
	check_same("<details>\n<summary>Title</summary>\n");
	check_html("<details open>\n<summary>T</summary>\n",
		   "<details open=\"\">\n<summary>T</summary>\n");
	check_same("</details>\n");
	check_same("</div>");
	/* inline tags come one at a time */
	check_same("<span style=\"color:red\">");
	check_same("</span>");
	check_same("</b>");
	check_same("</a>");
	check_same("</li>");
	check_same("</td>");
	check_html("<td>", "");
	check_html("</script>", "");
	check_html("</svg>", "");
	check_html("</custom>", "");
	check_same("</picture>");
	check_same("</iframe>");
	check_html("</br>", "<br />");
	check_same("</p>");
	check_html("<!-- note -->", "");
	check_html("<?php echo 1; ?>", "");
	check_html("<!DOCTYPE html>", "");
	/* stray end tags keep their place among text gumbo joined up */
	check_same("</b>\ntext </i> more &amp; &lt; &nbsp;x\n");
	check_same("a</span>b</em>c");
	check_html("a<html lang=x>b<!doctype html>c</>d", "abcd");
	check_html("x</b title=\">\" >y", "x</b>y");
	/* the tree's repairs are not written: tags stay where the source has them */
	check_same("<b>1<p>2</b>3</p>");
	check_same("<b>bold <i>both</b> italic</i>");
	check_same("<table><tr><td>x</td></tr>junk</table>");
	check_html("<a href=x>1<a href=y>2", "<a href=\"x\">1<a href=\"y\">2");
	check_same("<p>one<p>two");
	check_same("<ul><li>a<li>b</ul>");
	/* control characters become U+FFFD, also in text joined across a stray tag */
	check_html("<span>a\x02" "b</span>", "<span>a\xef\xbf\xbd" "b</span>");
	check_html("a\x02" "b</i>c\x03", "a\xef\xbf\xbd" "b</i>c\xef\xbf\xbd");
}

/* ---- through the Markdown renderer ---- */

static char *render(const char *md)
{
	struct md_result r = MD_RESULT_INIT;
	char *html;

	CHECK_INT(md_render(md, strlen(md), NULL, &r), 0);
	html = xstrdup(r.html.ptr);
	md_result_release(&r);
	return html;
}

static void check_md(const char *md, const char *want)
{
	char *got = render(md);

	CHECK_STR(got, want);
	free(got);
}

static void test_markdown(void)
{
	check_md("<details>\n<summary>Click to expand</summary>\n\n"
		 "Hidden **Markdown** and `code`.\n\n- a list\n\n</details>\n\nAfter.\n",
		 "<details>\n<summary>Click to expand</summary>\n"
		 "<p>Hidden <strong>Markdown</strong> and <code>code</code>.</p>\n"
		 "<ul>\n<li>a list</li>\n</ul>\n</details>\n<p>After.</p>\n");
	check_md("Some <span style=\"color:red\" onmouseover=\"x()\">red *text*</span> here.\n",
		 "<p>Some <span style=\"color:red\">red <em>text</em></span> here.</p>\n");
	check_md("<div align=\"center\">\n\n![logo](logo.png)\n\n</div>\n",
		 "<div align=\"center\">\n<p><img src=\"logo.png\" alt=\"logo\" /></p>\n</div>\n");
	check_md("<script>\nalert(1)\n</script>\n\nText.\n", "<p>Text.</p>\n");
	check_md("a <!-- hidden --> b\n", "<p>a  b</p>\n");
	check_md("$x$ <span title=\"$y$\">z</span>\n",
		 "<p><span class=\"math math-inline\">\\(x\\)</span> "
		 "<span title=\"$y$\">z</span></p>\n");
	check_md("[x](javascript:alert(1) \"t\") ![i](vbscript:x) <javascript:alert(1)>\n",
		 "<p><a title=\"t\">x</a> <img alt=\"i\" /> <a>javascript:alert(1)</a></p>\n");
	check_md("[x](&#106;avascript:alert(1)) [y](java&#x09;script:alert(1)) "
		 "[z](<java\tscript:alert(1)>)\n",
		 "<p><a>x</a> <a>y</a> <a>z</a></p>\n");
	check_md("[ok](https://example.com \"T\") ![ok](data:image/gif;base64,R0lGOD)\n",
		 "<p><a href=\"https://example.com\" title=\"T\">ok</a> "
		 "<img src=\"data:image/gif;base64,R0lGOD\" alt=\"ok\" /></p>\n");
	check_md("| a |\n|---|\n| <b>x</b><script>y</script> |\n",
		 "<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n"
		 "<td><b>x</b>y</td>\n</tr>\n</tbody>\n</table>\n");
}

/* Every payload as a Markdown link, an image and raw HTML: the page is safe. */
static void test_markdown_payloads(void)
{
	static const char *const urls[] = {
		"javascript:alert(1)", "JAVASCRIPT:alert(1)", "vbscript:msgbox(1)",
		"data:text/html;base64,PHNjcmlwdD4=", "&#106;avascript:alert(1)",
		"java&#x09;script:alert(1)", "&#x20;javascript:alert(1)", "%20javascript:alert(1)",
		"data:image/svg+xml;base64,PHN2Zz4=", "javascript&colon;alert(1)",
	};
	size_t i;

	for (i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		struct buf md = BUF_INIT;
		char *html;
		const char *why;

		buf_addf(&md, "[a](%s) ![b](%s) [c][r] ![d][r]\n\n[r]: %s\n", urls[i], urls[i],
			 urls[i]);
		html = render(md.ptr);
		why = unsafe(html);
		if (why)
			fprintf(stderr, "  url %s\n  html: %s\n  unsafe: %s\n", urls[i], html, why);
		CHECK(why == NULL);
		free(html);
		buf_release(&md);
	}
	for (i = 0; i < sizeof(payloads) / sizeof(payloads[0]); i++) {
		struct buf md = BUF_INIT;
		char *html;
		const char *why;

		/* as an HTML block, and inline in a paragraph */
		buf_addf(&md, "%s\n\ntext %s text\n", payloads[i], payloads[i]);
		html = render(md.ptr);
		why = unsafe(html);
		if (why)
			fprintf(stderr, "  payload %zu: %s\n  html: %s\n  unsafe: %s\n", i,
				payloads[i], html, why);
		CHECK(why == NULL);
		free(html);
		buf_release(&md);
	}
}

/* ---- size and threads ---- */

static void repeat(struct buf *b, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		buf_adds(b, s);
}

/*
 * gumbo's cost is quadratic in nesting depth (100,000 nested <ul><li> would
 * take minutes in one parse); long pieces go in chunks, so these finish in
 * well under a second each in a release build. The bound below is loose
 * enough for sanitizers and slow machines, and far below quadratic.
 */
static void test_hostile(void)
{
	static const char *const units[] = {
		"<ul><li>", "<div>", "<b><i>", "<font><b><u>", "<table><tr><td>", "<p><b id=1>",
		"</span>x", "<a href=x>", "<select>", "<!--x-->", "<b>x</b>", "<p><b></p>x",
	};
	size_t i;

	/*
	 * What each costs is counted, not timed, by test-pathological ("raw
	 * HTML, hostile tags", at n and 10 n): here, that what comes out is safe.
	 */
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		struct buf in = BUF_INIT, out = BUF_INIT;
		const char *why;

		repeat(&in, units[i], 100000);
		buf_adds(&in, "<img src=x onerror=alert(1)>");
		sanitize_html(&out, in.ptr, in.len);
		why = unsafe(out.ptr);
		CHECK(why == NULL);
		buf_release(&in);
		buf_release(&out);
	}
}

/* Chunked pieces join up: big flat structures come out as they went in. */
static void test_long_pieces(void)
{
	struct buf in = BUF_INIT;
	char *out;
	int i;

	buf_adds(&in, "<table>\n<thead><tr><th>x</th></tr></thead>\n<tbody>\n");
	for (i = 0; i < 2000; i++)
		buf_addf(&in, "<tr><td>a%d</td><td><b>b</b></td></tr>\n", i);
	buf_adds(&in, "</tbody>\n</table>\n");
	out = sanitized(in.ptr);
	CHECK_STR(out, in.ptr);
	free(out);

	buf_reset(&in);
	buf_adds(&in, "<table>\n");
	for (i = 0; i < 2000; i++)
		buf_addf(&in, "<tr><td>a%d<td>b &amp; c\n", i);
	buf_adds(&in, "</table>\n");
	out = sanitized(in.ptr);
	CHECK_STR(out, in.ptr);
	free(out);

	buf_reset(&in);
	for (i = 0; i < 50; i++)
		buf_addf(&in, "<table><tr><td>%d</td></tr></table>\n", i);
	buf_adds(&in, "<table>");
	for (i = 0; i < 1500; i++)
		buf_addf(&in, "<tr><td>%d<td>y\n", i);
	buf_adds(&in, "</table>\n");
	for (i = 0; i < 300; i++)
		buf_addf(&in, "<ul><li>%d<li><code>x</code></ul><p>p</p>\n", i);
	out = sanitized(in.ptr);
	CHECK_STR(out, in.ptr);
	free(out);

	/* a script's text is never cut into markup */
	buf_reset(&in);
	buf_adds(&in, "<script>");
	repeat(&in, "<img src=x onerror=alert(1)>", 3000);
	buf_adds(&in, "</script><p>after</p>");
	out = sanitized(in.ptr);
	CHECK_STR(out, "<p>after</p>");
	free(out);
	buf_release(&in);
}

struct race {
	const char *in, *want;
	int bad;
};

static void *race_worker(void *arg)
{
	struct race *r = arg;
	int i;

	for (i = 0; i < 200; i++) {
		char *got = sanitized(r->in);

		if (strcmp(got, r->want) != 0)
			r->bad++;
		free(got);
	}
	return NULL;
}

static void test_threads(void)
{
	static const char in[] = "<div class=a onclick=x><table><tr><td>1</b>2"
				 "<img src=javascript:x></table>"
				 "<details><summary>s</summary>t &amp; u</details></div>";
	char *want = sanitized(in);
	struct race r[4];
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++) {
		r[i].in = in;
		r[i].want = want;
		r[i].bad = 0;
		CHECK_INT(pthread_create(&t[i], NULL, race_worker, &r[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK_INT(r[i].bad, 0);
	}
	free(want);
}

/* test-sanitize --html < piece.html: the sanitized piece, for new cases. */
static int html_stdin(void)
{
	struct buf in = BUF_INIT, out = BUF_INIT;
	char chunk[65536];
	size_t n;

	while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
		buf_add(&in, chunk, n);
	sanitize_html(&out, in.ptr, in.len);
	fwrite(out.ptr, 1, out.len, stdout);
	buf_release(&in);
	buf_release(&out);
	return 0;
}

int main(int argc, char **argv)
{
	md_global_init();
	if (argc > 1 && !strcmp(argv[1], "--html"))
		return html_stdin();
	RUN(test_urls);
	RUN(test_payloads);
	RUN(test_attacks_exact);
	RUN(test_survivors);
	RUN(test_links);
	RUN(test_style);
	RUN(test_pieces);
	RUN(test_markdown);
	RUN(test_markdown_payloads);
	RUN(test_hostile);
	RUN(test_long_pieces);
	RUN(test_threads);
	return test_done();
}
