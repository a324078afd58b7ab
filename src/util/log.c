/*
 * log.c: leveled one-line messages on stderr.
 */
#include "util/log.h"
#include "util/buf.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <unistd.h>

static _Atomic int min_level = LOG_INFO;

void log_set_level(enum log_level level)
{
	min_level = (int)level;
}

enum log_level log_get_level(void)
{
	return (enum log_level)min_level;
}

static void emit(enum log_level level, const char *fmt, va_list ap)
{
	static const char *const names[] = { "debug", "info", "warn", "error" };
	struct buf b = BUF_INIT;
	const char *p;
	size_t left;

	if ((int)level < min_level)
		return;
	buf_addf(&b, "quire: %s: ", names[level]);
	buf_vaddf(&b, fmt, ap);
	buf_addc(&b, '\n');
	for (p = b.ptr, left = b.len; left > 0;) {
		ssize_t n = write(STDERR_FILENO, p, left);
		if (n <= 0)
			break;
		p += n;
		left -= (size_t)n;
	}
	buf_release(&b);
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
