/*
 * methods.c: the request methods quire names, from llhttp's.
 *
 * llhttp parses every method of its table (RFC 9110's, WebDAV's and a few
 * more) and frames each one's body alike, by Content-Length or chunks:
 * a WebDAV PROPFIND reads its body as a PUT does. Here its number becomes
 * quire's enum http_method. The names kept for HTTP_OTHER are TRACE and
 * CONNECT (405 from the snapshot, 501 for the rest, which llhttp knows
 * but quire serves nothing for); a method llhttp does not know at all is
 * refused by the parser (501, parse.c).
 *
 * Before issue 34 this file rewrote WebDAV's methods into POST in
 * evhttp's input buffer, since libevent 2.1 could not name them; the
 * connection layer of our own (conn.c) made that unnecessary.
 */
#include "http/http.h"
#include "http/http-int.h"

#include <string.h>

/* The methods quire names: the one table. */
static const struct {
	const char *name;
	enum http_method method;
} methods[] = {
	{ "GET", HTTP_GET },           { "HEAD", HTTP_HEAD },      { "POST", HTTP_POST },
	{ "PUT", HTTP_PUT },           { "DELETE", HTTP_DELETE },  { "PATCH", HTTP_PATCH },
	{ "OPTIONS", HTTP_OPTIONS },   { "PROPFIND", HTTP_PROPFIND },
	{ "PROPPATCH", HTTP_PROPPATCH }, { "MKCOL", HTTP_MKCOL }, { "COPY", HTTP_COPY },
	{ "MOVE", HTTP_MOVE },         { "LOCK", HTTP_LOCK },      { "UNLOCK", HTTP_UNLOCK },
};

#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

enum http_method http_methods_of(const char *ll_name, const char **name)
{
	enum http_method m = ll_name ? http_methods_lookup(ll_name, strlen(ll_name)) : HTTP_OTHER;

	*name = m != HTTP_OTHER ? http_methods_name(m) : NULL;
	if (m == HTTP_OTHER && ll_name &&
	    (strcmp(ll_name, "TRACE") == 0 || strcmp(ll_name, "CONNECT") == 0))
		*name = ll_name;
	return m;
}

enum http_method http_methods_lookup(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NMETHODS; i++)
		if (strlen(methods[i].name) == len && memcmp(methods[i].name, name, len) == 0)
			return methods[i].method;
	return HTTP_OTHER;
}

const char *http_methods_name(enum http_method m)
{
	size_t i;

	for (i = 0; i < NMETHODS; i++)
		if (methods[i].method == m)
			return methods[i].name;
	return NULL;
}
