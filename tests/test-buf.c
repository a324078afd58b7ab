/* test-buf.c: the byte buffer, the hash map and the escaping appenders. */
#include "util/buf.h"
#include "util/map.h"
#include "lib/test.h"
#include "util/xalloc.h"

#include <stdlib.h>

static void test_add_and_detach(void)
{
	struct buf b = BUF_INIT;
	char *p;
	size_t len;

	CHECK_STR(b.ptr, "");
	buf_adds(&b, "hello");
	buf_addc(&b, ' ');
	buf_addf(&b, "%d %s", 42, "world");
	CHECK_STR(b.ptr, "hello 42 world");
	CHECK_INT(b.len, 14);
	p = buf_detach(&b, &len);
	CHECK_STR(p, "hello 42 world");
	CHECK_INT(len, 14);
	CHECK_STR(b.ptr, "");
	free(p);
	p = buf_detach(&b, &len);
	CHECK_STR(p, "");
	free(p);
	buf_release(NULL);
}

static void test_long_format(void)
{
	struct buf b = BUF_INIT;
	char big[5000];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	buf_addf(&b, "[%s]", big);
	CHECK_INT(b.len, sizeof(big) + 1);
	CHECK(b.ptr[0] == '[' && b.ptr[b.len - 1] == ']' && b.ptr[b.len] == '\0');
	buf_release(&b);
}

static void test_binary(void)
{
	struct buf b = BUF_INIT;
	buf_add(&b, "a\0b", 3);
	CHECK_INT(b.len, 3);
	CHECK(memcmp(b.ptr, "a\0b", 3) == 0);
	buf_setlen(&b, 1);
	CHECK_STR(b.ptr, "a");
	buf_release(&b);
}

static void test_fit(void)
{
	struct buf b = BUF_INIT;

	buf_fit(&b); /* nothing allocated: stays the shared empty string */
	CHECK(b.cap == 0);
	buf_grow(&b, 1000);
	buf_adds(&b, "kept");
	buf_fit(&b);
	CHECK_INT(b.cap, 5);
	CHECK_STR(b.ptr, "kept");
	buf_adds(&b, " and grown");
	CHECK_STR(b.ptr, "kept and grown");
	buf_release(&b);
}

static void test_escapes(void)
{
	struct buf b = BUF_INIT;

	buf_adds_html(&b, "<a href=\"x\">&</a>");
	CHECK_STR(b.ptr, "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;");
	buf_reset(&b);
	buf_add_urlpath(&b, "/a b/100%/c#d?e/Привет", strlen("/a b/100%/c#d?e/Привет"));
	CHECK_STR(b.ptr, "/a%20b/100%25/c%23d%3Fe/%D0%9F%D1%80%D0%B8%D0%B2%D0%B5%D1%82");
	buf_reset(&b);
	buf_adds_json(&b, "q\"\\\n\x01</script>");
	CHECK_STR(b.ptr, "q\\\"\\\\\\n\\u0001\\u003c/script>");
	buf_release(&b);
}

/*
 * buf_add_html() passes 8 bytes at a time where none needs escaping: every
 * special byte at every place of strings of 0 to 40 bytes (and a NUL and
 * bytes >= 0x80 beside them) comes out as the byte-by-byte escaping says.
 */
static void test_html_blocks(void)
{
	static const char specials[] = { '&', '<', '>', '"', '\0', '\xd0', 'a' };
	struct buf got = BUF_INIT, want = BUF_INIT;
	char s[41];
	size_t len, at, k, i;
	int bad = 0;

	for (len = 0; len <= 40; len++) {
		for (at = 0; at < (len ? len : 1); at++) {
			for (k = 0; k < sizeof(specials); k++) {
				for (i = 0; i < len; i++)
					s[i] = (char)('a' + i % 26);
				if (len) {
					s[at] = specials[k];
					s[len - 1 - at / 2] = specials[(k + 1) % sizeof(specials)];
				}
				buf_reset(&got);
				buf_reset(&want);
				buf_add_html(&got, s, len);
				for (i = 0; i < len; i++) {
					switch (s[i]) {
					case '&': buf_adds(&want, "&amp;"); break;
					case '<': buf_adds(&want, "&lt;"); break;
					case '>': buf_adds(&want, "&gt;"); break;
					case '"': buf_adds(&want, "&quot;"); break;
					default: buf_addc(&want, s[i]);
					}
				}
				if (got.len != want.len || memcmp(got.ptr, want.ptr, got.len) != 0)
					bad++;
			}
		}
	}
	CHECK_INT(bad, 0);
	buf_release(&got);
	buf_release(&want);
}

static void test_map(void)
{
	struct map m = MAP_INIT, copy = MAP_INIT;
	char keys[2000][16];
	size_t i, n = 0;
	const char *k;
	void *v;

	for (i = 0; i < 2000; i++) {
		snprintf(keys[i], sizeof(keys[i]), "/note-%zu", i);
		CHECK(map_put(&m, keys[i], strlen(keys[i]), (void *)(uintptr_t)(i + 1)) == NULL);
	}
	CHECK_INT(m.len, 2000);
	for (i = 0; i < 2000; i++)
		CHECK_INT((uintptr_t)map_gets(&m, keys[i]), i + 1);
	CHECK(map_gets(&m, "/missing") == NULL);
	for (i = 0; i < 2000; i += 2)
		CHECK_INT((uintptr_t)map_remove(&m, keys[i], strlen(keys[i])), i + 1);
	CHECK_INT(m.len, 1000);
	CHECK(map_gets(&m, keys[0]) == NULL);
	CHECK_INT((uintptr_t)map_gets(&m, keys[1]), 2);
	/* replacing returns the old value */
	CHECK_INT((uintptr_t)map_put(&m, keys[1], strlen(keys[1]), (void *)7), 2);
	map_copy(&copy, &m);
	map_remove(&m, keys[1], strlen(keys[1]));
	CHECK_INT((uintptr_t)map_gets(&copy, keys[1]), 7);
	i = 0;
	while (map_next(&copy, &i, &k, NULL, &v))
		n++;
	CHECK_INT(n, 1000);
	/* churn: many removes and puts must not fill the table with tombstones */
	for (i = 0; i < 100000; i++) {
		map_put(&m, keys[i % 2000], strlen(keys[i % 2000]), (void *)1);
		map_remove(&m, keys[i % 2000], strlen(keys[i % 2000]));
	}
	CHECK(map_gets(&m, keys[3]) == NULL);
	map_release(&m);
	map_release(&copy);
}

int main(void)
{
	RUN(test_add_and_detach);
	RUN(test_long_format);
	RUN(test_binary);
	RUN(test_fit);
	RUN(test_escapes);
	RUN(test_html_blocks);
	RUN(test_map);
	return test_done();
}
