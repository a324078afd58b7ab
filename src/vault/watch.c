/*
 * watch.c: inotify on a thread, a table of watched folders, a batch of paths.
 *
 * How. One non-blocking inotify descriptor and an eventfd (stop), both
 * polled by the thread, which owns everything below `started` in struct
 * watch. Each watched folder is a struct dir in a map from its watch
 * descriptor to its vault-relative path; an event's path is its folder's
 * path plus the name the event carries. A new folder (created or moved in)
 * is walked at once, every folder below it getting a watch, and is
 * reported as one path: the loader scans a folder path itself.
 *
 * Renamed folders. inotify_add_watch() on a folder already watched returns
 * the descriptor it has, so a folder moved within the vault is fixed by
 * walking it again at its new path: each descriptor below gets its new
 * path. From IN_MOVED_FROM to IN_MOVED_TO the old subtree is stale (its
 * events are ignored); what is still stale when the batch is reported has
 * left the vault, or gone into a dot-folder, and its watches are removed.
 *
 * Batches. Pending paths sit in an array, with a map to drop duplicates.
 * Past PENDING_MAX paths, on IN_Q_OVERFLOW, or when a watch cannot be
 * added, the batch becomes "" (the whole vault); before "" is reported the
 * whole tree is walked again, so folders whose creation was lost are
 * watched before the loader rescans. Events are read one buffer per
 * wake-up, so deadlines are checked between reads even under a flood.
 *
 * Rejected: fanotify (marks on a whole filesystem need CAP_SYS_ADMIN; one
 * inotify watch per folder is what an unprivileged server gets); polling
 * the tree with stat() (work in proportion to the vault at every tick, and
 * edits seen late); a libevent loop (the thread waits on two descriptors
 * and a timeout: poll() does that); patching path prefixes in the table
 * on IN_MOVE_SELF (the event does not say where the folder went; walking
 * the new path is the same work and also catches folders made inside the
 * moved one meanwhile); listing every file of a new folder (`git checkout`
 * could make the list huge, and the loader scans the folder anyway).
 */
#include "vault/watch.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/map.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define QUIET_MS 20       /* a batch ends after this long without an event... */
#define MAX_DELAY_MS 200  /* ...or this long after its first event */
#define RETRY_MS 1000     /* how often to look for a vault folder that went away */
#define PENDING_MAX 8192  /* paths in a batch before it becomes "" */
/*
 * An event is at most sizeof(struct inotify_event) + NAME_MAX + 1 bytes
 * (read() fails with EINVAL when the buffer cannot hold the next one); this
 * holds hundreds, and the kernel never splits one across reads.
 */
#define READ_SIZE 65536

#define DIR_MASK (IN_CREATE | IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
		  IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK)

struct dir {
	int wd;         /* the map's key points here */
	int stale;      /* moved away: events ignored until walked again, else removed */
	char *rel;      /* vault-relative, as on disk; "" for the root */
};

struct pend {
	signed char covers;  /* whether it stands for the paths below it; -1 until asked */
	char path[];         /* the map's key points here */
};

struct watch {
	char *root;
	void (*fn)(void *ctx, const char *const *paths, size_t n);
	void *ctx;
	int ifd;                /* inotify */
	int efd;                /* eventfd: written once to stop the thread */
	pthread_t thread;
	int started;
	/* the thread's alone once started */
	struct map dirs;        /* &dir->wd -> struct dir, owned */
	int root_wd;            /* -1 while the vault folder is not watched */
	int64_t retry_at;       /* when to look for it again, ms */
	size_t nstale;          /* dirs marked stale */
	struct pend **pend;     /* this batch, owned */
	size_t npend, apend;
	struct map pend_by_path; /* path -> struct pend in pend[] */
	int all;                /* this batch is "" */
	int64_t first, last;    /* this batch's first and latest event, ms */
	int enospc_logged;
	struct buf scratch;
	_Alignas(struct inotify_event) char events[READ_SIZE];
};

/* root + "/" + rel into b (root alone for ""). */
static const char *full_path(const struct watch *w, struct buf *b, const char *rel)
{
	buf_reset(b);
	buf_adds(b, w->root);
	if (rel[0]) {
		buf_addc(b, '/');
		buf_adds(b, rel);
	}
	return b->ptr;
}

/* path is folder or below it ("" is above everything). */
static int under(const char *path, const char *folder, size_t len)
{
	return !len || (strncmp(path, folder, len) == 0 && (path[len] == '\0' || path[len] == '/'));
}

static int ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* Dot names (".obsidian", ".#note.md", ".~lock") and, for files, editors' temp files. */
static int skipped_name(const char *name, int isdir)
{
	size_t len = strlen(name);

	if (name[0] == '.' || !len)
		return 1;
	if (isdir)
		return 0;
	return name[len - 1] == '~' || ends_with(name, len, ".swp") ||
	       ends_with(name, len, ".swx") || ends_with(name, len, ".tmp");
}

/* ---- the batch ---- */

static void touch(struct watch *w)
{
	int64_t now = (int64_t)clock_ms();

	if (!w->all && !w->npend)
		w->first = now;
	w->last = now;
}

static void clear_pending(struct watch *w)
{
	while (w->npend > 0)
		free(w->pend[--w->npend]);
	map_release(&w->pend_by_path);
}

static void report_all(struct watch *w)
{
	touch(w);
	clear_pending(w);
	w->all = 1;
}

static void add_pending(struct watch *w, const char *rel)
{
	size_t len = strlen(rel);
	struct pend *p;

	touch(w);
	if (w->all || map_get(&w->pend_by_path, rel, len))
		return;
	if (w->npend >= PENDING_MAX) {
		log_debug("watch: more than %d paths changed at once: rescanning the vault",
			  PENDING_MAX);
		report_all(w);
		return;
	}
	p = xmalloc(sizeof(*p) + len + 1);
	p->covers = -1;
	memcpy(p->path, rel, len + 1);
	ALLOC_GROW(w->pend, w->npend + 1, w->apend);
	w->pend[w->npend++] = p;
	map_put(&w->pend_by_path, p->path, len, p);
}

/*
 * A pending folder stands for everything below it when the loader will
 * scan it or find it gone (and drop what was below); not when a file now
 * has its name, for then the loader looks at that file only.
 */
static int covers(struct watch *w, struct pend *a)
{
	struct stat st;

	if (a->covers < 0)
		a->covers = !(lstat(full_path(w, &w->scratch, a->path), &st) == 0 &&
			      !S_ISDIR(st.st_mode));
	return a->covers;
}

static int covered(struct watch *w, const char *path)
{
	const char *s;

	for (s = strchr(path, '/'); s; s = strchr(s + 1, '/')) {
		struct pend *a = map_get(&w->pend_by_path, path, (size_t)(s - path));
		if (a && covers(w, a))
			return 1;
	}
	return 0;
}

static int by_path(const void *a, const void *b)
{
	return strcmp((*(struct pend *const *)a)->path, (*(struct pend *const *)b)->path);
}

/* ---- the table of watched folders ---- */

static struct dir *find_dir(struct watch *w, int wd)
{
	return map_get(&w->dirs, (const char *)&wd, sizeof(wd));
}

static void set_dir(struct watch *w, int wd, const char *rel)
{
	struct dir *d = find_dir(w, wd);

	if (d) {
		if (d->stale) {
			d->stale = 0;
			w->nstale--;
		}
		if (strcmp(d->rel, rel) != 0) {
			free(d->rel);
			d->rel = xstrdup(rel);
		}
	} else {
		d = xmalloc(sizeof(*d));
		d->wd = wd;
		d->stale = 0;
		d->rel = xstrdup(rel);
		map_put(&w->dirs, (const char *)&d->wd, sizeof(d->wd), d);
	}
	if (!rel[0])
		w->root_wd = wd;
}

/* Forgets d; unwatch also removes the kernel's watch (not needed after IN_IGNORED). */
static void drop_dir(struct watch *w, struct dir *d, int unwatch)
{
	/* EINVAL: the kernel has dropped it already (the folder is gone) */
	if (unwatch && inotify_rm_watch(w->ifd, d->wd) < 0 && errno != EINVAL)
		log_warn("watch: cannot stop watching %s/%s: %s", w->root, d->rel, strerror(errno));
	if (d->stale)
		w->nstale--;
	if (d->wd == w->root_wd)
		w->root_wd = -1;
	map_remove(&w->dirs, (const char *)&d->wd, sizeof(d->wd));
	free(d->rel);
	free(d);
}

static void mark_stale_under(struct watch *w, const char *rel)
{
	size_t i = 0, len = strlen(rel), keylen;
	const char *key;
	void *v;

	while (map_next(&w->dirs, &i, &key, &keylen, &v)) {
		struct dir *d = v;
		if (!d->stale && under(d->rel, rel, len)) {
			d->stale = 1;
			w->nstale++;
		}
	}
}

static void prune_stale(struct watch *w)
{
	size_t i = 0, keylen;
	const char *key;
	void *v;

	while (w->nstale > 0 && map_next(&w->dirs, &i, &key, &keylen, &v))
		if (((struct dir *)v)->stale)
			drop_dir(w, v, 1);
}

static void drop_all(struct watch *w)
{
	size_t i = 0, keylen;
	const char *key;
	void *v;

	while (map_next(&w->dirs, &i, &key, &keylen, &v))
		drop_dir(w, v, 1);
}

static void cannot_watch(struct watch *w, const char *path, int err)
{
	switch (err) {
	case ENOENT:
	case ENOTDIR:
		break; /* gone already, or not a folder (a symlink is not followed) */
	case ENOSPC:
		if (!w->enospc_logged)
			log_warn("watch: cannot watch %s: the inotify watch limit is reached; "
				 "changes there are seen only at a rescan; raise the limit, e.g. "
				 "sysctl fs.inotify.max_user_watches=524288", path);
		w->enospc_logged = 1;
		report_all(w);
		break;
	default:
		log_warn("watch: cannot watch %s: %s", path, strerror(err));
		break;
	}
}

static int is_folder(DIR *dh, const struct dirent *de)
{
	struct stat st;

	if (de->d_type != DT_UNKNOWN)
		return de->d_type == DT_DIR;
	return fstatat(dirfd(dh), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* Folders still to walk: vault-relative paths, owned. */
struct todo {
	char **v;
	size_t n, alloc;
};

/* Pushes the folders in the folder full (rel in the vault): not dot-folders, not symlinks. */
static void push_subfolders(struct todo *t, const char *full, const char *rel)
{
	struct buf child = BUF_INIT;
	struct dirent *de;
	DIR *dh = opendir(full);

	if (!dh) {
		if (errno != ENOENT && errno != ENOTDIR)
			log_warn("watch: cannot read %s: %s", full, strerror(errno));
		return;
	}
	for (;;) {
		errno = 0;
		de = readdir(dh);
		if (!de) {
			if (errno)
				log_warn("watch: cannot read %s: %s", full, strerror(errno));
			break;
		}
		if (de->d_name[0] == '.' || !is_folder(dh, de))
			continue; /* ".", "..", dot-folders; files */
		if (rel[0])
			buf_addf(&child, "%s/%s", rel, de->d_name);
		else
			buf_adds(&child, de->d_name);
		ALLOC_GROW(t->v, t->n + 1, t->alloc);
		t->v[t->n++] = buf_detach(&child, NULL);
	}
	if (closedir(dh) < 0)
		log_warn("watch: cannot close %s: %s", full, strerror(errno));
}

/*
 * Watches the folder rel and every folder below it but dot-folders and
 * symlinks, giving watches that exist their new path (rel may be a folder
 * moved within the vault). Iterative, so depth costs heap, not stack.
 * Returns 0, or the errno of rel's own watch when it fails.
 */
static int walk(struct watch *w, const char *rel)
{
	struct todo t = { NULL, 0, 0 };
	struct buf path = BUF_INIT;
	int ret = 0, first = 1;

	ALLOC_GROW(t.v, 1, t.alloc);
	t.v[t.n++] = xstrdup(rel);
	while (t.n > 0) {
		char *r = t.v[--t.n];
		int wd;

		full_path(w, &path, r);
		wd = inotify_add_watch(w->ifd, path.ptr, DIR_MASK | (r[0] ? IN_DONT_FOLLOW : 0));
		if (wd < 0) {
			if (first)
				ret = errno;
			cannot_watch(w, path.ptr, errno);
		} else {
			set_dir(w, wd, r);
			push_subfolders(&t, path.ptr, r);
		}
		free(r);
		first = 0;
	}
	free(t.v);
	buf_release(&path);
	return ret;
}

/* The vault folder was deleted or moved: its watches mean nothing now. */
static void lose_root(struct watch *w, const char *what)
{
	log_warn("watch: the vault folder %s was %s; watching it again when it is back", w->root,
		 what);
	drop_all(w);
	w->root_wd = -1;
	w->retry_at = (int64_t)clock_ms() + RETRY_MS;
	report_all(w);
}

/* ---- events ---- */

static void handle(struct watch *w, const struct inotify_event *ev, const char *name)
{
	int isdir = (ev->mask & IN_ISDIR) != 0;
	struct dir *d;
	const char *rel;

	if (ev->mask & IN_Q_OVERFLOW) {
		if (!w->all)
			log_info("watch: the kernel's event queue overflowed "
				 "(fs.inotify.max_queued_events): rescanning the vault");
		report_all(w);
		return;
	}
	d = find_dir(w, ev->wd);
	if (!d)
		return; /* a watch dropped already: its last events */
	if (ev->mask & IN_IGNORED) {
		if (d->wd == w->root_wd)
			lose_root(w, "unmounted");
		else
			drop_dir(w, d, 0);
		return;
	}
	if (d->stale)
		return;
	if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
		/* a folder below is reported by its parent's IN_DELETE or IN_MOVED_FROM */
		if (d->wd == w->root_wd)
			lose_root(w, ev->mask & IN_DELETE_SELF ? "deleted" : "moved");
		return;
	}
	if (skipped_name(name, isdir))
		return;
	buf_reset(&w->scratch);
	if (d->rel[0])
		buf_addf(&w->scratch, "%s/%s", d->rel, name);
	else
		buf_adds(&w->scratch, name);
	rel = w->scratch.ptr;
	if (isdir && (ev->mask & (IN_CREATE | IN_MOVED_TO))) {
		char *copy = xstrdup(rel); /* walk() may use scratch */
		walk(w, copy);
		add_pending(w, copy);
		free(copy);
		return;
	}
	if (isdir && (ev->mask & IN_MOVED_FROM))
		mark_stale_under(w, rel);
	add_pending(w, rel);
}

/* One read()'s worth of events. */
static void read_events(struct watch *w)
{
	ssize_t n = read(w->ifd, w->events, sizeof(w->events));
	size_t off = 0;

	if (n < 0) {
		if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
			log_warn("watch: cannot read events: %s; rescanning", strerror(errno));
			report_all(w);
		}
		return;
	}
	while (off < (size_t)n) {
		struct inotify_event ev;
		const char *name = "";
		size_t left = (size_t)n - off;

		/* the header is copied out: no reliance on the buffer's alignment */
		if (left < sizeof(ev))
			goto broken;
		memcpy(&ev, w->events + off, sizeof(ev));
		if (ev.len > left - sizeof(ev))
			goto broken;
		if (ev.len) {
			name = w->events + off + sizeof(ev);
			if (!memchr(name, '\0', ev.len))
				goto broken;
		}
		handle(w, &ev, name);
		off += sizeof(ev) + ev.len;
	}
	return;
broken:
	log_warn("watch: a truncated inotify event; rescanning the vault");
	report_all(w);
}

/* The batch fn is called with, on the watcher's thread (watch_batch_start_ms()). */
static _Thread_local double batch_start;

double watch_batch_start_ms(void)
{
	return batch_start;
}

static void flush(struct watch *w)
{
	static const char *const whole[] = { "" };
	const char **out;
	size_t i, n = 0;

	if (w->all) {
		int was_lost = w->root_wd < 0;

		/* watch what appeared unseen before the loader rescans */
		mark_stale_under(w, "");
		walk(w, "");
		prune_stale(w);
		if (w->root_wd < 0)
			w->retry_at = (int64_t)clock_ms() + RETRY_MS;
		else if (was_lost)
			log_info("watch: watching %s again", w->root);
		clear_pending(w);
		w->all = 0;
		batch_start = w->first ? (double)w->first : clock_ms();
		w->fn(w->ctx, whole, 1);
		batch_start = 0;
		return;
	}
	prune_stale(w);
	qsort(w->pend, w->npend, sizeof(*w->pend), by_path);
	out = xmalloc(w->npend * sizeof(*out));
	for (i = 0; i < w->npend; i++)
		if (!covered(w, w->pend[i]->path))
			out[n++] = w->pend[i]->path;
	batch_start = w->first ? (double)w->first : clock_ms();
	w->fn(w->ctx, out, n);
	batch_start = 0;
	free(out);
	clear_pending(w);
}

static void *run(void *arg)
{
	struct watch *w = arg;

	for (;;) {
		struct pollfd pfd[2];
		int64_t now = (int64_t)clock_ms(), due = -1;
		int r;

		if (w->all || w->npend) {
			due = w->last + QUIET_MS;
			if (w->first + MAX_DELAY_MS < due)
				due = w->first + MAX_DELAY_MS;
			if (due <= now) {
				flush(w);
				continue;
			}
		} else if (w->root_wd < 0) {
			struct stat st;

			if (w->retry_at <= now) {
				if (stat(w->root, &st) == 0 && S_ISDIR(st.st_mode))
					report_all(w); /* the flush watches it */
				else
					w->retry_at = now + RETRY_MS;
				continue;
			}
			due = w->retry_at;
		}
		pfd[0].fd = w->ifd;
		pfd[0].events = POLLIN;
		pfd[1].fd = w->efd;
		pfd[1].events = POLLIN;
		r = poll(pfd, 2, due < 0 ? -1 : (int)(due - now));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			log_error("watch: poll: %s; changes are no longer seen", strerror(errno));
			break;
		}
		if (pfd[1].revents)
			break;
		if (pfd[0].revents & POLLIN) {
			read_events(w);
		} else if (pfd[0].revents) {
			log_error("watch: the inotify descriptor failed; changes are no longer seen");
			break;
		}
	}
	return NULL;
}

struct watch *watch_new(const char *root,
			void (*fn)(void *ctx, const char *const *paths, size_t n), void *ctx)
{
	struct watch *w = xcalloc(1, sizeof(*w));
	sigset_t block, old;
	int err;

	w->root = xstrdup(root);
	w->fn = fn;
	w->ctx = ctx;
	w->ifd = w->efd = w->root_wd = -1;
	buf_init(&w->scratch, 256);
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->ifd < 0) {
		log_error("watch: cannot start inotify: %s%s", strerror(errno),
			  errno == EMFILE ? " (raise fs.inotify.max_user_instances)" : "");
		goto fail;
	}
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0) {
		log_error("watch: eventfd: %s", strerror(errno));
		goto fail;
	}
	err = walk(w, "");
	if (err) {
		log_error("watch: cannot watch %s: %s", root, strerror(err));
		goto fail;
	}
	/* folders over the watch limit were logged; nothing was missed yet */
	clear_pending(w);
	w->all = 0;
	/* signals go to the other threads: this one only polls */
	sigfillset(&block);
	err = pthread_sigmask(SIG_SETMASK, &block, &old);
	if (err) {
		log_error("watch: pthread_sigmask: %s", strerror(err));
		goto fail;
	}
	err = pthread_create(&w->thread, NULL, run, w);
	if (pthread_sigmask(SIG_SETMASK, &old, NULL) != 0)
		log_warn("watch: cannot restore the signal mask");
	if (err) {
		log_error("watch: cannot start the thread: %s", strerror(err));
		goto fail;
	}
	w->started = 1;
	return w;
fail:
	watch_free(w);
	return NULL;
}

void watch_free(struct watch *w)
{
	size_t i = 0, keylen;
	const char *key;
	void *v;
	int err;

	if (!w)
		return;
	if (w->started) {
		uint64_t one = 1;
		if (write(w->efd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			log_error("watch: cannot wake the thread to stop it: %s", strerror(errno));
		err = pthread_join(w->thread, NULL);
		if (err)
			log_error("watch: pthread_join: %s", strerror(err));
	}
	/* closing the inotify descriptor removes the kernel's watches */
	while (map_next(&w->dirs, &i, &key, &keylen, &v)) {
		free(((struct dir *)v)->rel);
		free(v);
	}
	map_release(&w->dirs);
	clear_pending(w);
	free(w->pend);
	if (w->ifd >= 0 && close(w->ifd) < 0)
		log_warn("watch: close: %s", strerror(errno));
	if (w->efd >= 0 && close(w->efd) < 0)
		log_warn("watch: close: %s", strerror(errno));
	buf_release(&w->scratch);
	free(w->root);
	free(w);
}
