/*
 * fuzz-http.c: a libFuzzer target for quire's own reading of a request.
 *
 * libevent parses the request line and the header block; what quire then
 * reads from them is here: the request target (http_decode_target(), the
 * query through http_query_param()), the framing check
 * (http_framing_error()), conditional headers (If-None-Match,
 * If-Modified-Since through http_not_modified(), If-Range), Range,
 * Accept-Encoding, HTTP dates, the Host header (host_normalize(), and
 * http_host_error(): two Host lines are never let through) and the answer
 * of a server still loading (http_loading_answer(): 503 with a
 * Retry-After, the path's body never empty).
 *
 * The input is what libevent would hand over: a first line, the target,
 * then "Name: value" lines (CR LF or LF), cut and trimmed the way evhttp
 * does. Besides crashes it checks properties: a decoded path starts with
 * '/', has no NUL, no "//" and survives the encoding a redirect writes
 * (buf_add_urlpath()) and a second decoding unchanged; a satisfiable range
 * lies inside the representation.
 */
#include "fuzz.h"

#include "http/http.h"
#include "http/http-int.h"
#include "util/buf.h"
#include "util/unicode.h"
#include "vault/config.h"

#include <strings.h>

#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>

#define MTIME 784111777 /* Sun, 06 Nov 1994 08:49:37 GMT, the RFC's example */

static void check_target(const char *uri)
{
	size_t ulen = strlen(uri);
	char *out = malloc(ulen + 1), *again;
	const char *query, *q2;
	struct buf enc = BUF_INIT, v = BUF_INIT;
	long n, m;

	n = http_decode_target(uri, out, &query);
	if (n >= 0) {
		fuzz_assert((size_t)n <= ulen && out[0] == '/' && strlen(out) == (size_t)n);
		fuzz_assert(!strstr(out, "//") && utf8_valid(out, (size_t)n));
		/* what http_redirect_to() writes decodes to the same path */
		buf_add_urlpath(&enc, out, (size_t)n);
		again = malloc(enc.len + 1);
		m = http_decode_target(enc.ptr, again, &q2);
		fuzz_assert(m == n && memcmp(again, out, (size_t)n) == 0 && !q2);
		free(again);
		{
			const char *type;
			int retry = 0;
			fuzz_assert(http_loading_answer(out, ulen, ulen / 2, &retry, &type, &v) == 503);
			fuzz_assert(retry >= 1 && v.len > 0 && type);
		}
	}
	if (query) {
		static const char *const names[] = { "q", "limit", "offset", "version", "timeout" };
		size_t i;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (http_query_param(query, names[i], &v) > 0)
				fuzz_assert(!memchr(v.ptr, '\0', v.len));
	}
	buf_release(&enc);
	buf_release(&v);
	free(out);
}

static void check_range(const char *value)
{
	static const uint64_t sizes[] = { 0, 1, 100, 1 << 20, UINT64_MAX };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t off = 0, len = 0;
		if (http_parse_range(value, sizes[i], &off, &len) == 1)
			fuzz_assert(len > 0 && off < sizes[i] && len <= sizes[i] - off);
	}
}

/* One header line: evhttp's cut at the first ':' and its trimming of the value. */
static void add_header(struct evkeyvalq *hs, char *line)
{
	char *colon = strchr(line, ':'), *v, *end;

	if (!colon)
		return;
	*colon = '\0';
	v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	end = v + strlen(v);
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	evhttp_add_header(hs, line, v);
}

static void check_value(const char *name, const char *value)
{
	time_t t;
	char *h;

	if (http_parse_http_date(value, &t) == 0)
		(void)t;
	if (strcasecmp(name, "Range") == 0)
		check_range(value);
	else if (strcasecmp(name, "If-Range") == 0) {
		(void)http_if_range_ok(value, "\"abc\"", MTIME);
		(void)http_if_range_ok(value, "", 0);
	} else if (strcasecmp(name, "Accept-Encoding") == 0)
		(void)http_accepts_gzip(value);
	else if (strcasecmp(name, "Host") == 0) {
		h = host_normalize(value);
		free(h);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size), *line, *next;
	struct evhttp_request *ev = evhttp_request_new(NULL, NULL);
	struct evkeyvalq *hs = evhttp_request_get_input_headers(ev);
	struct evkeyval *kv;
	int first = 1;

	ev->major = 1;
	ev->minor = (char)(size & 1);
	for (line = s; line; line = next) {
		size_t len;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		len = strlen(line);
		if (len && line[len - 1] == '\r')
			line[len - 1] = '\0';
		if (first)
			check_target(line);
		else
			add_header(hs, line);
		first = 0;
	}
	(void)http_framing_error(ev);
	{
		const char *hosts[2];
		size_t nh = 0;
		for (kv = hs->tqh_first; kv && nh < 2; kv = kv->next.tqe_next)
			if (strcasecmp(kv->key, "Host") == 0)
				hosts[nh++] = kv->value;
		fuzz_assert(nh < 2 || http_host_error(hosts, nh) != NULL);
	}
	(void)http_not_modified(ev, "\"abc\"", MTIME);
	(void)http_not_modified(ev, "", 0);
	for (kv = hs->tqh_first; kv; kv = kv->next.tqe_next)
		check_value(kv->key, kv->value);
	evhttp_request_free(ev);
	free(s);
	return 0;
}
