/*
 * progress.h: how far a load has come, shown on stderr while it runs.
 *
 * `quire serve`, `quire check` and `quire export` load the whole vault
 * before anything else (25 seconds at 10,000 notes): a thread of this
 * module reads the load's counts (site_progress, or the loader's) and
 * shows them. On a terminal, a bar redrawn ten times a second and erased
 * at the end; elsewhere (a log, a service manager), with lines set, a
 * line every five seconds, the first after five, so that a quick load
 * adds nothing; else nothing.
 */
#ifndef QUIRE_PROGRESS_H
#define QUIRE_PROGRESS_H

#include <stddef.h>

struct progress;

/*
 * Starts showing what read says (the notes' worth of work done and the
 * notes found, 0 before the scan; called on the module's thread, so
 * thread-safe) under the name what ("loading notes"). lines: when stderr
 * is not a terminal, a line every five seconds, else nothing. Returns the
 * display, or NULL when there is nothing to show (not a terminal, no
 * lines); progress_stop() takes either.
 */
struct progress *progress_start(const char *what, void (*read)(void *ctx, size_t *notes, size_t *of),
				void *ctx, int lines);

/* Stops the thread, erases the bar, frees p. Accepts NULL. */
void progress_stop(struct progress *p);

/*
 * The text shown for notes of of into out (at most size bytes, NUL
 * included): "what [#####.....] 120/500 notes" for a terminal (tty), else
 * "what: 120 of 500 notes". For tests.
 */
void progress_format(const char *what, size_t notes, size_t of, int tty, char *out, size_t size);

#endif
