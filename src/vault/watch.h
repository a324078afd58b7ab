/*
 * watch.h: the file watcher: which paths of the vault changed, in batches.
 *
 * A thread of its own watches the vault folder and every folder below it
 * (not dot-folders) with inotify, and hands the paths that changed to a
 * callback, typically loader_notify(). Paths are vault-relative and as on
 * disk (not NFC), files or folders; a folder means "everything below it",
 * and "" means the whole vault. What is reported:
 *	- a file created, written (closed after writing, not every write),
 *	  deleted, or renamed in or out (a rename inside the vault reports
 *	  both names; an editor's rename of a temp file over a note reports
 *	  the note);
 *	- a folder created, deleted or renamed, as the folder's path: its
 *	  contents at that moment are not listed (a folder moved in with
 *	  files, or made by `git checkout`, is one path);
 *	- "" when events were lost: the kernel's queue overflowed, a folder
 *	  could not be watched (the watch limit), or the vault folder itself
 *	  was deleted or moved (then the watcher tries again every second to
 *	  watch it, and reports "" once it is back).
 * Never reported: dot paths (".obsidian/...", "a/.hidden.md", ".#note.md")
 * and editors' temp files (names ending in '~', ".swp", ".swx", ".tmp").
 *
 * Batches: a burst of events is gathered until 20 ms pass without one, or
 * 200 ms after its first event, whichever comes first; duplicates are
 * removed, and so are paths below a reported folder. A batch holds at
 * most 8,192 paths; a larger one becomes "" (memory stays bounded during
 * a mass change).
 */
#ifndef QUIRE_WATCH_H
#define QUIRE_WATCH_H

#include <stddef.h>

struct watch;

/*
 * Starts watching root (borrowed for the call; a copy is kept). Every
 * folder is watched when this returns, so any change after it is seen.
 *
 * fn(ctx, paths, n) is called with n >= 1 paths sorted by bytes, borrowed
 * for the call only; ctx is passed as is. It runs on the watcher's thread,
 * which reads no events meanwhile (the kernel queues them), so it should
 * be quick: queue the paths and return.
 *
 * Returns NULL with a log line when inotify or the thread cannot start,
 * or root cannot be watched.
 */
struct watch *watch_new(const char *root,
			void (*fn)(void *ctx, const char *const *paths, size_t n), void *ctx);

/*
 * Called from fn: when the batch began, on clock_ms()'s clock (its first
 * event; for "", when the loss was found), so that the caller can time
 * the change from the moment it was seen. 0 outside fn.
 */
double watch_batch_start_ms(void);

/*
 * Stops the thread and frees everything. A batch not yet reported is
 * dropped; fn is not called after this returns. Accepts NULL.
 */
void watch_free(struct watch *w);

#endif
