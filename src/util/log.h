/*
 * log.h: single-line messages on stderr with a level.
 *
 * Each message is written with one write(2), so lines from several threads
 * never interleave. log_error() returns -1 so that a failing function can
 * report and return in one statement (git's `return error(...)`).
 */
#ifndef QUIRE_LOG_H
#define QUIRE_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_QUIET };

/* Messages below level are dropped. Default: LOG_INFO. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

int log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
