/*
 * progress.c: a thread that shows a load's progress on stderr.
 *
 * The load runs on the caller's thread (and the parallel loops it
 * starts), which counts its steps into atomics (site_progress); this
 * thread wakes ten times a second on a terminal, every five seconds
 * elsewhere, reads them and writes one line: "\r" and the bar on a
 * terminal, a line of the log otherwise ("load.progress", in the log's
 * format). A stop wakes it at once.
 *
 * Rejected: drawing from the load's own steps (they run on many threads
 * at once, and a 10,000-note load would redraw 30,000 times); a bar when
 * stderr is a file (a log would fill with carriage returns).
 */
#include "cmd/progress.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TTY_MS 100
#define LINE_MS 5000
#define BAR 30

struct progress {
	const char *what;
	void (*read)(void *ctx, size_t *notes, size_t *of);
	void *ctx;
	int tty, drawn;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stop;
};

void progress_format(const char *what, size_t notes, size_t of, int tty, char *out, size_t size)
{
	char bar[BAR + 1];
	size_t fill = of ? (notes > of ? of : notes) * BAR / of : 0;

	if (!tty) {
		if (of)
			snprintf(out, size, "%s: %zu of %zu notes", what, notes, of);
		else
			snprintf(out, size, "%s: reading the vault", what);
		return;
	}
	memset(bar, '#', fill);
	memset(bar + fill, '.', BAR - fill);
	bar[BAR] = '\0';
	if (of)
		snprintf(out, size, "%s [%s] %zu/%zu notes", what, bar, notes, of);
	else
		snprintf(out, size, "%s [%s] reading the vault", what, bar);
}

static void draw(struct progress *p)
{
	char line[160];
	size_t notes = 0, of = 0;

	p->read(p->ctx, &notes, &of);
	progress_format(p->what, notes, of, p->tty, line, sizeof(line));
	p->drawn = 1;
	if (!p->tty) {
		/* a line of the log, in its format */
		struct log_event e;
		log_event_init(&e, LOG_INFO, "load.progress");
		log_event_uint(&e, "notes", notes > of ? of : notes);
		log_event_uint(&e, "of", of);
		log_event_emit(&e, "%s", line);
		return;
	}
	/* "\033[K" erases what a longer line left */
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
}

static void *run(void *arg)
{
	struct progress *p = arg;
	long ms = p->tty ? TTY_MS : LINE_MS;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		struct timespec t = clock_deadline(ms);
		if (pthread_cond_timedwait(&p->wake, &p->lock, &t) == ETIMEDOUT && !p->stop) {
			pthread_mutex_unlock(&p->lock);
			draw(p);
			pthread_mutex_lock(&p->lock);
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct progress *progress_start(const char *what, void (*read)(void *ctx, size_t *notes, size_t *of),
				void *ctx, int lines)
{
	struct progress *p;
	/* a log of JSON lines gets lines, even on a terminal */
	int tty = isatty(STDERR_FILENO) && log_get_format() != LOG_JSON;

	if (!tty && !lines)
		return NULL;
	p = xcalloc(1, sizeof(*p));
	p->what = what;
	p->read = read;
	p->ctx = ctx;
	p->tty = tty;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	if (pthread_create(&p->thread, NULL, run, p) != 0) {
		log_warn("cannot start the progress display");
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->wake);
		free(p);
		return NULL;
	}
	return p;
}

void progress_stop(struct progress *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	if (p->tty && p->drawn) {
		fputs("\r\033[K", stderr); /* the lines that follow start clean */
		fflush(stderr);
	}
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	free(p);
}
