/*
 * log.c: one line per event on stderr, in the format log_setup() chose.
 *
 * A line is built in a buffer of its own and written with one write(2), so
 * threads need no lock: lines interleave whole or not at all (stderr to a
 * pipe or a file opened for appending). The format and the journal flag
 * are set once, before other threads start; the level is an atomic.
 *
 * The time is formatted per line (clock_gettime and gmtime_r): lines are
 * events, not requests (the access log is http/respond.c's, with a date
 * cached per loop and second).
 *
 * Rejected: syslog(3) (no structured fields, and journald reads stderr
 * anyway); sd_journal_send() (a libsystemd dependency for what the
 * priority prefix already says); a lock around stdio (a line per write
 * needs none).
 */
#include "util/log.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static _Atomic int min_level = LOG_INFO;
static enum log_format format = LOG_PLAIN;
static int journal;
static char *log_path; /* the log file in stderr's place, or NULL */

static const char *const level_names[] = { "debug", "info", "warn", "error" };
static const char level_prio[] = { '7', '6', '4', '3' }; /* syslog's, for journald */

void log_set_level(enum log_level level)
{
	min_level = (int)level;
}

enum log_level log_get_level(void)
{
	return (enum log_level)min_level;
}

enum log_format log_get_format(void)
{
	return format;
}

int log_journal(void)
{
	return journal;
}

int log_parse_format(const char *name, enum log_format *out)
{
	if (strcmp(name, "text") == 0)
		*out = LOG_TEXT;
	else if (strcmp(name, "json") == 0)
		*out = LOG_JSON;
	else
		return -1;
	return 0;
}

/*
 * Whether stderr is the stream journald reads: systemd sets $JOURNAL_STREAM
 * to "DEVICE:INODE" of the stream it connects (systemd.exec(5)); a
 * process whose stderr was redirected since has another.
 */
static int stderr_is_journal(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!v || sscanf(v, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* Opens path for appending and puts it in stderr's place. 0 or -1 with errno. */
static int open_as_stderr(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644), err;

	if (fd < 0)
		return -1;
	if (fd != STDERR_FILENO && dup2(fd, STDERR_FILENO) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	if (fd != STDERR_FILENO)
		close(fd);
	return 0;
}

int log_setup(enum log_format fmt, const char *file)
{
	format = fmt;
	free(log_path);
	log_path = NULL;
	if (file) {
		if (open_as_stderr(file) < 0) {
			int err = errno;
			format = LOG_PLAIN;
			return log_error("cannot open the log file %s: %s", file, strerror(err));
		}
		log_path = xstrdup(file);
		journal = 0;
		return 0;
	}
	journal = fmt != LOG_PLAIN && stderr_is_journal();
	return 0;
}

int log_reopen(void)
{
	if (!log_path)
		return 0;
	if (open_as_stderr(log_path) < 0)
		return log_error("log: cannot open %s again: %s; still writing the old file",
				 log_path, strerror(errno));
	return 0;
}

/* v's last n decimal digits at p. */
static void digits(char *p, long v, int n)
{
	while (n-- > 0) {
		p[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

void log_time_now(char out[LOG_TIME_SIZE])
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (!gmtime_r(&ts.tv_sec, &tm) || tm.tm_year + 1900 > 9999 || tm.tm_year < -1900) {
		memcpy(out, "1970-01-01T00:00:00.000Z", 25);
		return;
	}
	memcpy(out, "0000-00-00T00:00:00.000Z", 25);
	digits(out, tm.tm_year + 1900, 4);
	digits(out + 5, tm.tm_mon + 1, 2);
	digits(out + 8, tm.tm_mday, 2);
	digits(out + 11, tm.tm_hour, 2);
	digits(out + 14, tm.tm_min, 2);
	digits(out + 17, tm.tm_sec, 2);
	digits(out + 20, ts.tv_nsec / 1000000L, 3);
}

/* ---- escaping ---- */

/* The length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	/* no overlong forms, no surrogates, nothing above U+10FFFF */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

void log_add_json(struct buf *b, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, from = 0, n;

	/* buf_add_json() escapes; what it would pass through that is not UTF-8 is replaced */
	while (i < len) {
		if (u[i] < 0x80 || (n = utf8_seq(u + i, len - i)) == 0) {
			if (u[i] >= 0x80) {
				buf_add_json(b, s + from, i - from);
				buf_add(b, "\xef\xbf\xbd", 3);
				from = i + 1;
			}
			i++;
		} else {
			i += n;
		}
	}
	buf_add_json(b, s + from, len - from);
}

/* A logfmt value: bare when it can be, else quoted. */
static void add_text_value(struct buf *b, const char *s, size_t len)
{
	size_t i;
	int quote = len == 0;

	for (i = 0; i < len && !quote; i++) {
		unsigned char c = (unsigned char)s[i];
		quote = c <= 0x20 || c == 0x7f || c == '"' || c == '=' || c == '\\';
	}
	if (quote)
		buf_addc(b, '"');
	log_add_json(b, s, len);
	if (quote)
		buf_addc(b, '"');
}

static void add_json_string(struct buf *b, const char *s)
{
	buf_addc(b, '"');
	log_add_json(b, s, strlen(s));
	buf_addc(b, '"');
}

/* ---- lines ---- */

static void add_value(struct buf *b, enum log_format fmt, const struct log_field *f)
{
	size_t i, n;

	switch (f->type) {
	case LOG_FIELD_STR:
		if (fmt == LOG_JSON)
			add_json_string(b, f->s);
		else
			add_text_value(b, f->s, strlen(f->s));
		break;
	case LOG_FIELD_UINT:
		buf_addf(b, "%llu", (unsigned long long)f->u);
		break;
	case LOG_FIELD_INT:
		buf_addf(b, "%lld", (long long)f->i);
		break;
	case LOG_FIELD_MS:
		buf_addf(b, "%.3f", f->ms >= 0 ? f->ms : 0.0);
		break;
	case LOG_FIELD_LIST:
		n = f->count < LOG_LIST_MAX ? f->count : LOG_LIST_MAX;
		if (fmt == LOG_JSON) {
			buf_addc(b, '[');
			for (i = 0; i < n; i++) {
				if (i)
					buf_addc(b, ',');
				add_json_string(b, f->list[i] ? f->list[i] : "");
			}
			buf_addc(b, ']');
		} else {
			/* comma-joined, one value (a reader wants the names; JSON has the list) */
			struct buf joined = BUF_INIT;
			for (i = 0; i < n; i++) {
				if (i)
					buf_addc(&joined, ',');
				buf_adds(&joined, f->list[i] ? f->list[i] : "");
			}
			add_text_value(b, joined.ptr ? joined.ptr : "", joined.len);
			buf_release(&joined);
		}
		break;
	}
}

void log_format_line(struct buf *out, enum log_format fmt, const char *time, int jrnl,
		     const struct log_event *e, const char *msg)
{
	int lv = e->level < LOG_DEBUG || e->level > LOG_ERROR ? LOG_ERROR : (int)e->level;
	size_t i;

	if (jrnl) {
		buf_addc(out, '<');
		buf_addc(out, level_prio[lv]);
		buf_addc(out, '>');
	}
	if (fmt == LOG_JSON) {
		buf_addc(out, '{');
		if (time) {
			buf_adds(out, "\"time\":");
			add_json_string(out, time);
			buf_addc(out, ',');
		}
		buf_addf(out, "\"level\":\"%s\",\"event\":", level_names[lv]);
		add_json_string(out, e->name);
		buf_adds(out, ",\"msg\":");
		add_json_string(out, msg);
		for (i = 0; i < e->n; i++) {
			buf_addc(out, ',');
			add_json_string(out, e->f[i].key);
			buf_addc(out, ':');
			add_value(out, fmt, &e->f[i]);
		}
		buf_addc(out, '}');
		return;
	}
	if (fmt == LOG_PLAIN) {
		/* as quire always wrote it, for a terminal: the message's own bytes, no fields */
		buf_addf(out, "quire: %s: %s", level_names[lv], msg);
		return;
	} else {
		if (time)
			buf_addf(out, "time=%s ", time);
		buf_addf(out, "level=%s event=", level_names[lv]);
		add_text_value(out, e->name, strlen(e->name));
		buf_adds(out, " msg=");
		add_text_value(out, msg, strlen(msg));
	}
	for (i = 0; i < e->n; i++) {
		buf_addc(out, ' ');
		buf_adds(out, e->f[i].key);
		buf_addc(out, '=');
		add_value(out, fmt, &e->f[i]);
	}
}

static void write_line(const struct buf *b)
{
	const char *p = b->ptr;
	size_t left = b->len;

	while (left > 0) {
		ssize_t n = write(STDERR_FILENO, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		p += n;
		left -= (size_t)n;
	}
}

static void emit_line(const struct log_event *e, const char *msg)
{
	struct buf b = BUF_INIT;
	char now[LOG_TIME_SIZE];
	int err = errno; /* a caller may log and then read errno */

	if (format != LOG_PLAIN && !journal)
		log_time_now(now);
	log_format_line(&b, format, format != LOG_PLAIN && !journal ? now : NULL, journal, e, msg);
	buf_addc(&b, '\n');
	write_line(&b);
	buf_release(&b);
	errno = err;
}

/* ---- events ---- */

void log_event_init(struct log_event *e, enum log_level level, const char *name)
{
	e->level = level;
	e->name = name;
	e->n = 0;
}

static struct log_field *add_field(struct log_event *e, const char *key, enum log_field_type t)
{
	struct log_field *f;

	if (e->n >= LOG_EVENT_FIELDS)
		return NULL;
	f = &e->f[e->n++];
	memset(f, 0, sizeof(*f));
	f->key = key;
	f->type = t;
	return f;
}

void log_event_str(struct log_event *e, const char *key, const char *value)
{
	struct log_field *f;

	if (value && (f = add_field(e, key, LOG_FIELD_STR)))
		f->s = value;
}

void log_event_uint(struct log_event *e, const char *key, uint64_t value)
{
	struct log_field *f = add_field(e, key, LOG_FIELD_UINT);

	if (f)
		f->u = value;
}

void log_event_int(struct log_event *e, const char *key, int64_t value)
{
	struct log_field *f = add_field(e, key, LOG_FIELD_INT);

	if (f)
		f->i = value;
}

void log_event_ms(struct log_event *e, const char *key, double ms)
{
	struct log_field *f = add_field(e, key, LOG_FIELD_MS);

	if (f)
		f->ms = ms;
}

void log_event_list(struct log_event *e, const char *key, const char *const *items, size_t n,
		    const char *count_key)
{
	struct log_field *f = add_field(e, key, LOG_FIELD_LIST);

	if (f) {
		f->list = items;
		f->count = n;
	}
	if (count_key)
		log_event_uint(e, count_key, n);
}

void log_event_emit(struct log_event *e, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	if ((int)e->level < min_level)
		return;
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	emit_line(e, msg.ptr ? msg.ptr : "");
	buf_release(&msg);
}

/* ---- messages ---- */

/*
 * A message's event: the word before its first ": " when it is a short
 * lowercase name ("http: cannot queue" is event http, message "cannot
 * queue"), else "message". The plain format keeps the message whole.
 */
static void emit(enum log_level level, const char *fmt, va_list ap)
{
	struct log_event e;
	struct buf msg = BUF_INIT;
	char name[24] = "message";
	const char *text;
	size_t n = 0;

	if ((int)level < min_level)
		return;
	buf_vaddf(&msg, fmt, ap);
	text = msg.ptr ? msg.ptr : "";
	while (n < sizeof(name) - 1 &&
	       ((text[n] >= 'a' && text[n] <= 'z') || (n && text[n] >= '0' && text[n] <= '9')))
		n++;
	if (n && text[n] == ':' && text[n + 1] == ' ') {
		memcpy(name, text, n);
		name[n] = '\0';
		if (format != LOG_PLAIN)
			text += n + 2;
	}
	log_event_init(&e, level, name);
	emit_line(&e, text);
	buf_release(&msg);
}

int log_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(LOG_ERROR, fmt, ap);
	va_end(ap);
	return -1;
}

void log_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(LOG_WARN, fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(LOG_INFO, fmt, ap);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(LOG_DEBUG, fmt, ap);
	va_end(ap);
}
