/*
 * fuzz-sync.c: a libFuzzer target for what the sync API and `quire sync`
 * read from the other side.
 *
 * The server reads a file's path from the URL (syncapi_decode_path():
 * percent-decoding, then syncapi_check_path(): NFC, segments, dot-files,
 * lengths), If-Match and If-None-Match (syncapi_parse_tag()), the numbers
 * of /api/v1/wait (syncapi_query_num()) and the JSON body of a move,
 * {"from":..,"to":..} (read here with the same calls in the same order as
 * handle_move() in src/sync/syncapi.c); the client reads the manifest
 * (synccli_parse_manifest(), which must refuse any path the server would
 * refuse and any hash that is not one). Each input goes through all of them.
 *
 * Properties: an accepted path is valid UTF-8 in NFC without NUL, control
 * bytes, a leading '/', an empty, '.' or '..' segment, and no longer than
 * the limits; checking it again accepts it unchanged; a parsed tag is 64
 * lowercase hex digits.
 */
#include "fuzz.h"

#include "sync/synccli-int.h"
#include "sync/syncapi.h"
#include "sync/syncapi-int.h"
#include "util/buf.h"
#include "util/json.h"
#include "util/map.h"
#include "util/unicode.h"

static void check_accepted(const struct buf *p)
{
	struct buf again = BUF_INIT;
	const char *why = NULL;
	size_t i;

	fuzz_assert(p->len > 0 && p->len <= SYNCAPI_MAX_PATH && p->ptr[0] != '/');
	fuzz_assert(utf8_valid(p->ptr, p->len) && !strstr(p->ptr, "//"));
	for (i = 0; i < p->len; i++)
		fuzz_assert((unsigned char)p->ptr[i] >= 0x20 && p->ptr[i] != 0x7f &&
			    p->ptr[i] != '\\');
	fuzz_assert(syncapi_check_path(p->ptr, p->len, &again, &why) == 0);
	fuzz_assert(again.len == p->len && memcmp(again.ptr, p->ptr, p->len) == 0);
	buf_release(&again);
}

static void check_path(const char *s, size_t len)
{
	struct buf out = BUF_INIT;
	const char *why = NULL;

	if (syncapi_decode_path(s, len, &out, &why) == 0)
		check_accepted(&out);
	else
		fuzz_assert(why != NULL);
	why = NULL;
	if (syncapi_check_path(s, len, &out, &why) == 0)
		check_accepted(&out);
	else
		fuzz_assert(why != NULL);
	buf_release(&out);
}

static void check_tag(const char *s)
{
	enum cond kind = C_NONE;
	char tag[SHA256_HEX_SIZE] = "";
	size_t i;

	if (syncapi_parse_tag(s, &kind, tag) == 0 && kind == C_MATCH) {
		fuzz_assert(strlen(tag) == 64);
		for (i = 0; i < 64; i++)
			fuzz_assert((tag[i] >= '0' && tag[i] <= '9') || (tag[i] >= 'a' && tag[i] <= 'f'));
	}
}

/* A move's body, read as the API reads it; what it accepts is checked. */
static void read_move(const char *body, size_t len)
{
	struct buf from = BUF_INIT, to = BUF_INIT, err = BUF_INIT;

	if (syncapi_parse_move(body, len, &from, &to, &err) == 0) {
		check_accepted(&from);
		check_accepted(&to);
		fuzz_assert(strcmp(from.ptr, to.ptr) != 0);
	} else {
		fuzz_assert(err.len > 0);
	}
	buf_release(&from);
	buf_release(&to);
	buf_release(&err);
}

/*
 * A manifest from a server that may lie: when it is taken, every path in
 * it passes the server's own check unchanged and every hash is 64
 * lowercase hex digits (they go into If-Match headers and local writes).
 */
static void read_manifest(const char *s, size_t size, struct map *m, uint64_t *version)
{
	struct buf err = BUF_INIT, nfc = BUF_INIT;
	const char *key, *why;
	size_t i = 0, klen, k;
	void *v;

	if (synccli_parse_manifest(s, size, m, version, &err) == 0) {
		while (map_next(m, &i, &key, &klen, &v)) {
			const struct remote *r = v;
			fuzz_assert(syncapi_check_path(key, klen, &nfc, &why) == 0);
			fuzz_assert(nfc.len == klen && memcmp(nfc.ptr, key, klen) == 0);
			fuzz_assert(strlen(r->sha) == 64);
			for (k = 0; k < 64; k++)
				fuzz_assert((r->sha[k] >= '0' && r->sha[k] <= '9') ||
					    (r->sha[k] >= 'a' && r->sha[k] <= 'f'));
		}
	} else {
		fuzz_assert(err.len > 0);
	}
	synccli_free_manifest(m);
	buf_release(&err);
	buf_release(&nfc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);
	struct map m = MAP_INIT;
	uint64_t version = 0;

	check_path(s, size);
	check_tag(s);
	(void)syncapi_query_num(s, "version");
	(void)syncapi_query_num(s, "timeout");
	read_move(s, size);
	read_manifest(s, size, &m, &version);
	free(s);
	return 0;
}
