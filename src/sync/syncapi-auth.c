/*
 * syncapi-auth.c: who may use the sync API.
 *
 * Authentication. The token's SHA-256 is kept, and the presented token's
 * hash is compared with it in constant time (so neither the token's
 * length nor a matching prefix shows in the timing). Failures take a
 * token from a per-address bucket (ratelimit.h); when the bucket is
 * empty, the address is blocked until it holds a token again: its wrong
 * tokens get 429. The right token is never refused: behind a reverse
 * proxy every client has the proxy's address, and blocking the address
 * would let anyone who sends a few wrong tokens lock the owner out.
 * Guessing is no faster for it: a guess is told right or wrong only by
 * being right, and a token that can be guessed at this rate (a few per
 * minute) is refused at start-up (syncapi_new(): at least 16 bytes).
 *
 * The blocked addresses sit in a small table of BLOCK_SLOTS slots, probed
 * from the address's hash; when the probed slots are all taken, the one
 * expiring first is reused.
 */
#include "sync/syncapi.h"
#include "sync/syncapi-int.h"
#include "http/http.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/ratelimit.h"
#include "util/buf.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define BLOCK_PROBE 8

/* Seconds until addr may try again, or 0 when it is not blocked. */
static double blocked_for(struct syncapi *api, const char *addr, double now)
{
	uint32_t h = (uint32_t)hash64(addr, strlen(addr));
	double left = 0;
	int i;

	pthread_mutex_lock(&api->block_lock);
	for (i = 0; i < BLOCK_PROBE; i++) {
		struct blocked *b = &api->blocked[(h + (uint32_t)i) % BLOCK_SLOTS];
		if (b->until > now && strcmp(b->addr, addr) == 0) {
			left = b->until - now;
			break;
		}
	}
	pthread_mutex_unlock(&api->block_lock);
	return left;
}

/* Blocks addr until now + secs: its own slot, a free one, or the one expiring first. */
static void block(struct syncapi *api, const char *addr, double now, double secs)
{
	uint32_t h = (uint32_t)hash64(addr, strlen(addr));
	struct blocked *pick = NULL;
	int i;

	pthread_mutex_lock(&api->block_lock);
	for (i = 0; i < BLOCK_PROBE; i++) {
		struct blocked *b = &api->blocked[(h + (uint32_t)i) % BLOCK_SLOTS];
		if (strcmp(b->addr, addr) == 0) {
			pick = b;
			break;
		}
		if (!pick || b->until < pick->until)
			pick = b;
	}
	snprintf(pick->addr, sizeof(pick->addr), "%s", addr);
	pick->until = now + secs;
	pthread_mutex_unlock(&api->block_lock);
}

/*
 * The token an Authorization header presents: Bearer's credentials, or
 * with basic the password of Basic's "user:password" (any user name), into
 * tok. 0 when there is none.
 */
static int credentials(const char *auth, int basic, struct buf *tok)
{
	int is_basic = 0;
	size_t n;

	if (!auth)
		return 0;
	if (strncasecmp(auth, "Bearer", 6) == 0 && (auth[6] == ' ' || auth[6] == '\t')) {
		auth += 6;
	} else if (basic && strncasecmp(auth, "Basic", 5) == 0 &&
		   (auth[5] == ' ' || auth[5] == '\t')) {
		auth += 5;
		is_basic = 1;
	} else {
		return 0;
	}
	while (*auth == ' ' || *auth == '\t')
		auth++;
	n = strlen(auth);
	while (n && (auth[n - 1] == ' ' || auth[n - 1] == '\t'))
		n--;
	if (!n)
		return 0;
	if (!is_basic) {
		buf_add(tok, auth, n);
		return 1;
	}
	{
		struct buf dec = BUF_INIT;
		const char *colon;
		int ok = buf_add_base64_decoded(&dec, auth, n) == 0 &&
			 (colon = memchr(dec.ptr, ':', dec.len)) != NULL;
		if (ok)
			buf_add(tok, colon + 1, dec.len - (size_t)(colon + 1 - dec.ptr));
		buf_release(&dec);
		return ok && tok->len > 0;
	}
}

int syncapi_token_ok(struct syncapi *api, const char *auth, int basic)
{
	struct buf tok = BUF_INIT;
	char sha[SHA256_HEX_SIZE];
	unsigned diff = 0;
	int i, ok;

	ok = credentials(auth, basic, &tok);
	if (ok) {
		/* hashes compared in constant time: neither length nor prefix shows */
		hash_sha256_hex(tok.ptr, tok.len, sha);
		for (i = 0; i < 64; i++)
			diff |= (unsigned)(sha[i] ^ api->token_sha[i]);
		ok = diff == 0;
	}
	if (tok.ptr)
		memset(tok.ptr, 0, tok.len);
	buf_release(&tok);
	return ok;
}

int syncapi_auth_check(struct syncapi *api, struct http_request *req, int basic, double *retry)
{
	const char *addr = http_request_peer(req);
	double now;

	*retry = 0;
	if (syncapi_token_ok(api, http_request_header(req, "Authorization"), basic))
		return 1;
	count(&api->auth_failures);
	now = clock_ms() / 1e3;
	*retry = blocked_for(api, addr, now);
	if (*retry <= 0) {
		char why[96];
		if (rate_limiter_take(api->failures, addr, now, retry))
			return 0;
		if (*retry < 1)
			*retry = 1;
		block(api, addr, now, *retry);
		/* once as the block starts: its 429s are not logged one by one */
		snprintf(why, sizeof(why), "too many failed authentications: blocked for %.0f s",
			 *retry);
		syncapi_log_refusal(basic, http_request_method_name(req), 429, why,
				    NULL, NULL, addr);
	}
	count(&api->limited);
	return -1;
}

/* 1 when the request may go on; otherwise it has been answered (401 or 429). */
int syncapi_authenticate(struct syncapi *api, struct http_request *req)
{
	double retry;
	char num[32];
	int rc = syncapi_auth_check(api, req, 0, &retry);

	if (rc == 1)
		return 1;
	if (rc == 0) {
		http_reply_header(req, "WWW-Authenticate", "Bearer realm=\"quire\"");
		syncapi_reply_error(req, 401,
				    http_request_header(req, "Authorization") ? "wrong token"
									      : "missing bearer token",
				    NULL);
		return 0;
	}
	snprintf(num, sizeof(num), "%.0f", retry < 1 ? 1.0 : retry + 0.5);
	http_reply_header(req, "Retry-After", num);
	syncapi_reply_error(req, 429, "too many failed authentications from this address", NULL);
	return 0;
}

/*
 * How large a body a request to the API may carry, decided from its head
 * before any of the body is read (http.h, http_body_policy): with the
 * right token, as large as the server takes (the API answers 413 itself
 * over its upload limit); without it, UNAUTHENTICATED_BODY, enough for
 * the handler to answer 401 to a small request, and a larger body is
 * refused unread: nobody without the token makes the server hold 64 MB.
 */
#define UNAUTHENTICATED_BODY 4096

size_t syncapi_body_policy(void *ctx, const char *method, const char *target,
			   const char *authorization)
{
	(void)method;
	(void)target;
	return syncapi_token_ok(ctx, authorization, 0) ? SIZE_MAX : UNAUTHENTICATED_BODY;
}
