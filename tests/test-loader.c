/*
 * test-loader.c: the loader thread yields the CPU to readers, and frees
 * the snapshots it replaces itself.
 *
 * The loader thread (named quire-loader) runs SCHED_IDLE, so that a
 * serving thread waking on its core takes the core at once. A reader that
 * holds a snapshot across a publish keeps its pages readable; once it lets
 * go, the loader frees that snapshot within its reap interval, without
 * another change arriving to trigger it.
 */
#include "lib/tv.h"

#include "site/loader.h"
#include "lib/test.h"

#include <dirent.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char *vault;
static struct snapshot_slot slot;
static struct loader *loader;

/* The thread id of this process's thread named name, or -1. */
static pid_t thread_named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t found = -1;

	while (d && (e = readdir(d))) {
		char path[300];
		struct buf comm = BUF_INIT;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if (read_file(path, &comm) == 0 && comm.len && strncmp(comm.ptr, name, strlen(name)) == 0 &&
		    comm.ptr[strlen(name)] == '\n')
			found = (pid_t)atoi(e->d_name);
		buf_release(&comm);
	}
	if (d)
		closedir(d);
	return found;
}

static void setup(void)
{
	vault = tv_new();
	tv_write(vault, "a.md", "# A\n\nFirst text.\n");
	tv_write(vault, "b.md", "# B\n\nLinks to [[a]].\n");
	snapshot_slot_init(&slot);
	loader = loader_new(vault, NULL, &slot);
	CHECK(loader != NULL);
	CHECK(loader_start(loader) == 0);
}

static void teardown(void)
{
	loader_free(loader);
	snapshot_slot_release(&slot);
	tv_remove(vault);
}

static void test_loader_thread_is_background(void)
{
	pid_t tid = -1;
	int i;

	/* the thread names itself and lowers its policy as it starts */
	for (i = 0; i < 6000 && (tid < 0 || sched_getscheduler(tid) != SCHED_IDLE); i++) {
		usleep(10000);
		tid = thread_named("quire-loader");
	}
	CHECK(tid > 0);
	CHECK_INT(sched_getscheduler(tid), SCHED_IDLE);
	/* this thread, like the serving threads, is untouched */
	CHECK_INT(sched_getscheduler(0), SCHED_OTHER);
}

static void test_held_snapshot_freed_by_loader(void)
{
	struct snapshot *held = snapshot_acquire(&slot);
	struct page *old = page_ref(snapshot_get(held, "/a", 2));
	struct snapshot *live;
	const char *paths[] = { "a.md" };
	uint64_t v;
	int i;

	CHECK(old != NULL);
	tv_write(vault, "a.md", "# A\n\nSecond text.\n");
	v = loader_notify(loader, paths, 1);
	CHECK_INT(loader_wait(loader, v, 10000), 0);
	live = snapshot_acquire(&slot);
	CHECK(snapshot_get(live, "/a", 2) != old);
	snapshot_unref(live);
	/* the old snapshot is retired, still readable, its page still in it */
	CHECK(snapshot_get(held, "/a", 2) == old);
	CHECK(atomic_load(&old->refs) >= 2);
	snapshot_unref(held);
	/* no further change: the loader's timed reap frees it */
	for (i = 0; i < 6000 && atomic_load(&old->refs) > 1; i++) /* a minute: only a hang */
		usleep(10000);
	CHECK_INT(atomic_load(&old->refs), 1);
	page_unref(old);
}

int main(void)
{
	setup();
	RUN(test_loader_thread_is_background);
	RUN(test_held_snapshot_freed_by_loader);
	teardown();
	return test_done();
}
