/*
 * test-log.c: the log's lines. Each format renders an event's fields
 * (strings quoted only when they must be, numbers, durations, a list cut
 * to its first items with its count); every JSON line reads back through
 * util/json.h with the values it was given, whatever bytes they held
 * (quotes, newlines, invalid UTF-8); messages take their event from a
 * "word: " prefix; journald's lines carry a priority and no time, and are
 * told apart by $JOURNAL_STREAM naming stderr; a log file in stderr's place
 * is opened again after it is moved (logrotate).
 */
#include "util/buf.h"
#include "util/files.h"
#include "util/json.h"
#include "util/log.h"
#include "lib/test.h"
#include "lib/tv.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const paths[] = { "a.md", "b c.md", "d\"e.md", "f.md", "g.md", "h.md", "i.md" };

/* An event with a field of each type. */
static void sample(struct log_event *e)
{
	log_event_init(e, LOG_WARN, "change.live");
	log_event_str(e, "source", "webdav");
	log_event_str(e, "client", NULL); /* left out */
	log_event_str(e, "why", "a \"quoted\" = sign\nand a line");
	log_event_str(e, "empty", "");
	log_event_str(e, "bad", "x\xff\xc3y");
	log_event_uint(e, "version", 1764719000000001ull);
	log_event_int(e, "delta", -3);
	log_event_ms(e, "duration_ms", 3.2041);
	log_event_list(e, "paths", paths, 7, "npaths");
}

static void test_text(void)
{
	struct log_event e;
	struct buf b = BUF_INIT;

	sample(&e);
	log_format_line(&b, LOG_TEXT, "2026-12-07T17:22:00.123Z", 0, &e, "7 paths live");
	CHECK_STR(b.ptr, "time=2026-12-07T17:22:00.123Z level=warn event=change.live "
			 "msg=\"7 paths live\" source=webdav why=\"a \\\"quoted\\\" = sign\\nand a line\" "
			 "empty=\"\" bad=x\xef\xbf\xbd\xef\xbf\xbdy version=1764719000000001 delta=-3 "
			 "duration_ms=3.204 paths=\"a.md,b c.md,d\\\"e.md,f.md,g.md\" npaths=7");
	/* journald: the priority first, no time */
	buf_reset(&b);
	log_format_line(&b, LOG_TEXT, NULL, 1, &e, "live");
	CHECK(strncmp(b.ptr, "<4>level=warn event=change.live msg=live source=webdav ", 55) == 0);
	/* the commands' format: the message as it is, and no fields */
	buf_reset(&b);
	log_event_init(&e, LOG_ERROR, "config.error");
	log_event_int(&e, "line", 3);
	log_format_line(&b, LOG_PLAIN, NULL, 0, &e, "v/quire.yml:3: \"bad\"");
	CHECK_STR(b.ptr, "quire: error: v/quire.yml:3: \"bad\"");
	buf_release(&b);
}

/* Reads the JSON line back: every key once, with the values sample() gave. */
static void test_json(void)
{
	struct log_event e;
	struct buf b = BUF_INIT, key = BUF_INIT, val = BUF_INIT;
	struct json_reader r;
	uint64_t u;
	int seen = 0;

	sample(&e);
	log_format_line(&b, LOG_JSON, "2026-12-07T17:22:00.123Z", 0, &e, "7 paths\tlive");
	CHECK(!memchr(b.ptr, '\n', b.len));
	json_init(&r, b.ptr, b.len);
	CHECK(json_object(&r) == 0);
	while (json_key(&r, &key) > 0) {
		const char *k = key.ptr;
		seen++;
		if (!strcmp(k, "version") || !strcmp(k, "npaths")) {
			CHECK(json_u64(&r, &u) == 0);
			CHECK(u == (!strcmp(k, "npaths") ? 7 : 1764719000000001ull));
		} else if (!strcmp(k, "delta") || !strcmp(k, "duration_ms")) {
			/* numbers the reader does not take: where they are, the text is exact */
			CHECK(json_skip(&r) == 0);
		} else if (!strcmp(k, "paths")) {
			CHECK(json_skip(&r) == 0); /* its text is checked below */
		} else {
			CHECK(json_string(&r, &val) == 0);
			if (!strcmp(k, "time"))
				CHECK_STR(val.ptr, "2026-12-07T17:22:00.123Z");
			else if (!strcmp(k, "level"))
				CHECK_STR(val.ptr, "warn");
			else if (!strcmp(k, "event"))
				CHECK_STR(val.ptr, "change.live");
			else if (!strcmp(k, "msg"))
				CHECK_STR(val.ptr, "7 paths\tlive");
			else if (!strcmp(k, "source"))
				CHECK_STR(val.ptr, "webdav");
			else if (!strcmp(k, "why"))
				CHECK_STR(val.ptr, "a \"quoted\" = sign\nand a line");
			else if (!strcmp(k, "empty"))
				CHECK_STR(val.ptr, "");
			else if (!strcmp(k, "bad"))
				CHECK_STR(val.ptr, "x\xef\xbf\xbd\xef\xbf\xbdy");
			else
				CHECK(!"an unexpected key");
		}
	}
	CHECK(json_end(&r) == 0 && !r.failed);
	CHECK_INT(seen, 13);
	CHECK(strstr(b.ptr, ",\"delta\":-3,\"duration_ms\":3.204,") != NULL);
	CHECK(strstr(b.ptr, ",\"paths\":[\"a.md\",\"b c.md\",\"d\\\"e.md\",\"f.md\",\"g.md\"],") != NULL);
	buf_release(&b);
	buf_release(&key);
	buf_release(&val);
}

/* The time is RFC 3339 in UTC with milliseconds. */
static void test_time(void)
{
	char t[LOG_TIME_SIZE];
	const char *shape = "dddd-dd-ddTdd:dd:dd.dddZ";
	size_t i;

	log_time_now(t);
	CHECK_INT(strlen(t), strlen(shape));
	for (i = 0; i < strlen(shape); i++)
		CHECK(shape[i] == 'd' ? t[i] >= '0' && t[i] <= '9' : t[i] == shape[i]);
}

/* Puts a new file of dir in stderr's place; returns the saved stderr. */
static int capture(const char *path)
{
	int saved = dup(STDERR_FILENO), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(saved >= 0 && fd >= 0 && dup2(fd, STDERR_FILENO) == STDERR_FILENO);
	close(fd);
	return saved;
}

static void restore(int saved)
{
	fflush(stderr);
	CHECK(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
	close(saved);
}

/*
 * Messages: "http: cannot" is event http with the message "cannot" in the
 * server's formats, the whole message in the commands'; a level below the
 * log's is dropped; journald is recognized by the stream it gave.
 */
static void test_messages_and_journal(void)
{
	char *dir = tv_new();
	struct buf path = BUF_INIT, text = BUF_INIT, env = BUF_INIT;
	struct stat st;
	int saved;

	buf_addf(&path, "%s/stderr", dir);
	saved = capture(path.ptr);
	CHECK(log_setup(LOG_JSON, NULL) == 0);
	CHECK(!log_journal());
	log_info("http: cannot queue %d", 7);
	log_warn("Search is off: no file");
	log_debug("dropped: below the level");
	/* journald: $JOURNAL_STREAM names stderr's device and inode */
	CHECK(fstat(STDERR_FILENO, &st) == 0);
	buf_addf(&env, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", env.ptr, 1);
	CHECK(log_setup(LOG_TEXT, NULL) == 0);
	CHECK(log_journal());
	log_error("sync: lost");
	/* another stream's: not ours (stderr was redirected since) */
	buf_reset(&env);
	buf_addf(&env, "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + 1);
	setenv("JOURNAL_STREAM", env.ptr, 1);
	CHECK(log_setup(LOG_PLAIN, NULL) == 0);
	CHECK(!log_journal());
	log_info("http: as it was");
	unsetenv("JOURNAL_STREAM");
	restore(saved);
	CHECK(read_file(path.ptr, &text) == 0);
	CHECK(strstr(text.ptr, "\"level\":\"info\",\"event\":\"http\",\"msg\":\"cannot queue 7\"}\n"));
	CHECK(strstr(text.ptr, "\"level\":\"warn\",\"event\":\"message\",\"msg\":\"Search is off: no file\"}\n"));
	CHECK(!strstr(text.ptr, "dropped"));
	CHECK(strstr(text.ptr, "\n<3>level=error event=sync msg=lost\n"));
	CHECK(strstr(text.ptr, "\nquire: info: http: as it was\n"));
	CHECK_INT(test_count(text.ptr, "\n"), 4);
	buf_release(&path);
	buf_release(&text);
	buf_release(&env);
	tv_remove(dir);
}

/* A log file takes stderr's place; moved away and reopened, the next lines go to a new one. */
static void test_file_and_reopen(void)
{
	char *dir = tv_new();
	struct buf path = BUF_INIT, moved = BUF_INIT, text = BUF_INIT;
	int saved = dup(STDERR_FILENO);

	buf_addf(&path, "%s/quire.log", dir);
	buf_addf(&moved, "%s/quire.log.1", dir);
	CHECK(log_setup(LOG_TEXT, path.ptr) == 0);
	log_info("before the rotation");
	fprintf(stderr, "a library's own line\n");
	fflush(stderr);
	CHECK(rename(path.ptr, moved.ptr) == 0);
	CHECK(log_reopen() == 0);
	log_info("after the rotation");
	fflush(stderr);
	CHECK(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
	close(saved);
	CHECK(log_setup(LOG_PLAIN, NULL) == 0);
	CHECK(read_file(moved.ptr, &text) == 0);
	CHECK(strstr(text.ptr, " level=info event=message msg=\"before the rotation\"\n"));
	CHECK(strstr(text.ptr, "\na library's own line\n"));
	CHECK(!strstr(text.ptr, "after"));
	CHECK(read_file(path.ptr, &text) == 0);
	CHECK(strncmp(text.ptr, "time=", 5) == 0);
	CHECK(strstr(text.ptr, " level=info event=message msg=\"after the rotation\"\n"));
	CHECK(!strstr(text.ptr, "before"));
	/* a file that cannot be opened: said, and the log stays on stderr */
	buf_reset(&path);
	buf_addf(&path, "%s/no/such/folder/quire.log", dir);
	saved = capture(moved.ptr);
	CHECK(log_setup(LOG_JSON, path.ptr) < 0);
	restore(saved);
	CHECK(log_get_format() == LOG_PLAIN);
	CHECK(read_file(moved.ptr, &text) == 0);
	CHECK(strstr(text.ptr, "quire: error: cannot open the log file ") != NULL);
	buf_release(&path);
	buf_release(&moved);
	buf_release(&text);
	tv_remove(dir);
}

static void test_parse_format(void)
{
	enum log_format f = LOG_PLAIN;

	CHECK(log_parse_format("json", &f) == 0 && f == LOG_JSON);
	CHECK(log_parse_format("text", &f) == 0 && f == LOG_TEXT);
	CHECK(log_parse_format("logfmt", &f) < 0 && f == LOG_TEXT);
}

int main(void)
{
	RUN(test_text);
	RUN(test_json);
	RUN(test_time);
	RUN(test_messages_and_journal);
	RUN(test_file_and_reopen);
	RUN(test_parse_format);
	return test_done();
}
