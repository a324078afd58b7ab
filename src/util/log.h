/*
 * log.h: the log: one line per event, for an operator to read and a
 * machine to parse.
 *
 * Every line has a level and an event name, and in the server's formats
 * an RFC 3339 time (UTC, milliseconds):
 *
 *   LOG_PLAIN (commands at a terminal: check, export, sync; the default;
 *   the message alone, as quire always wrote it)
 *	quire: error: /srv/notes/quire.yml:3: invalid YAML
 *   LOG_TEXT (quire serve; logfmt, as Go's slog and Heroku write it)
 *	time=2026-12-07T17:22:00.123Z level=info event=change.live msg="1 path live" source=webdav
 *   LOG_JSON (quire serve --log-format json: one object a line)
 *	{"time":"2026-12-07T17:22:00.123Z","level":"info","event":"change.live",
 *	 "msg":"1 path live","source":"webdav"}   (on one line)
 *
 * When journald reads stderr ($JOURNAL_STREAM names stderr's device and
 * inode, as systemd documents), the time is left out (the journal stamps
 * its own) and each line starts with its syslog priority ("<6>"), which
 * journald takes off and records.
 *
 * Messages. log_error() and friends take a printf format; a message that
 * starts with a short lowercase word and ": " ("http: cannot ...") has that
 * word as its event, any other the event "message". Events an operator
 * acts on are written with fields (struct log_event below), which both
 * formats render: strings, numbers, durations in milliseconds and
 * bounded lists of paths.
 *
 * Each line is written with one write(2) to stderr, so lines from several
 * threads never interleave. With a log file (log_setup()), the file is put
 * in stderr's place (dup2), so that anything else written to stderr lands
 * there too, and log_reopen() (SIGHUP) opens it again after a rotation.
 * log_error() returns -1 so that a failing function can report and return
 * in one statement (git's `return error(...)`).
 */
#ifndef QUIRE_LOG_H
#define QUIRE_LOG_H

#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_QUIET };

enum log_format { LOG_PLAIN, LOG_TEXT, LOG_JSON };

/* Messages below level are dropped. Default: LOG_INFO. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* "text" or "json" into *out: 0, or -1 for another name. */
int log_parse_format(const char *name, enum log_format *out);

/*
 * Sets the format of every line from now on, and with file (not NULL) puts
 * that file, opened for appending (made if missing), in stderr's place.
 * Call it before other threads log. 0, or -1 (said on stderr) when the
 * file cannot be opened.
 */
int log_setup(enum log_format format, const char *file);

/*
 * Opens the log file again in stderr's place (after logrotate moved it);
 * nothing without one. Thread-safe: a line being written goes to the old
 * file or the new one whole. 0, or -1 (logged) when it cannot be opened.
 */
int log_reopen(void);

enum log_format log_get_format(void);
/* Whether journald reads the lines (see above): they carry no time then. */
int log_journal(void);

int log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * An event with fields, built on the stack and written by
 * log_event_emit():
 *
 *	struct log_event e;
 *	log_event_init(&e, LOG_INFO, "change.live");
 *	log_event_str(&e, "source", "webdav");
 *	log_event_list(&e, "paths", paths, n, "npaths");
 *	log_event_ms(&e, "duration_ms", ms);
 *	log_event_emit(&e, "%zu paths live", n);
 *
 * Field keys and string values are borrowed until the emit. A string value
 * NULL leaves the field out; invalid UTF-8 is written as U+FFFD. At most
 * LOG_EVENT_FIELDS fields (more are dropped).
 */
#define LOG_EVENT_FIELDS 16
#define LOG_LIST_MAX 5 /* items of a list written; its count says how many there were */

enum log_field_type { LOG_FIELD_STR, LOG_FIELD_UINT, LOG_FIELD_INT, LOG_FIELD_MS, LOG_FIELD_LIST };

struct log_field {
	const char *key;
	enum log_field_type type;
	const char *s;
	const char *const *list;
	size_t count;
	uint64_t u;
	int64_t i;
	double ms;
};

struct log_event {
	enum log_level level;
	const char *name;
	size_t n;
	struct log_field f[LOG_EVENT_FIELDS];
};

void log_event_init(struct log_event *e, enum log_level level, const char *name);
void log_event_str(struct log_event *e, const char *key, const char *value);
void log_event_uint(struct log_event *e, const char *key, uint64_t value);
void log_event_int(struct log_event *e, const char *key, int64_t value);
/* A duration in milliseconds, written with three decimals (microseconds). */
void log_event_ms(struct log_event *e, const char *key, double ms);
/*
 * The first LOG_LIST_MAX of n strings as a list under key, and n under
 * count_key (NULL: not written).
 */
void log_event_list(struct log_event *e, const char *key, const char *const *items, size_t n,
		    const char *count_key);
/* Writes the event with its message (printf format), unless its level is below the log's. */
void log_event_emit(struct log_event *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The line e would be with message msg, into out (no newline), in format
 * with time (an RFC 3339 string, or NULL for none: journald's lines) and
 * journal (the "<N>" priority first). What log_event_emit() writes; for
 * tests.
 */
struct buf;
void log_format_line(struct buf *out, enum log_format format, const char *time, int journal,
		     const struct log_event *e, const char *msg);

/*
 * s (len bytes) as the inside of a JSON string, also a logfmt quoted
 * value: quotes, backslashes and control bytes escaped, invalid UTF-8 as
 * U+FFFD (a path on disk need not be UTF-8; a JSON line must). For the
 * access log's JSON lines too.
 */
void log_add_json(struct buf *b, const char *s, size_t len);

/* The time now as RFC 3339 in UTC with milliseconds ("2026-12-07T17:22:00.123Z"). */
#define LOG_TIME_SIZE 32
void log_time_now(char out[LOG_TIME_SIZE]);

#endif
