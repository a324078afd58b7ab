/*
 * malloc-conf.c: the allocator of the programs that hold a vault.
 *
 * quire serve links jemalloc (built in only outside the sanitizers, see
 * meson.build), with these settings, read by jemalloc at its first
 * allocation:
 *
 *   narenas:2          two arenas whatever the cores: the serving threads
 *                      allocate little (a request takes no memory in
 *                      proportion to its page), so arenas per core would
 *                      only spread a vault's notes over more of them;
 *   dirty_decay_ms:1000  pages freed are given back within a second, by
 *   muzzy_decay_ms:0     jemalloc's own thread (background_thread), so the
 *   background_thread:true  server's size is its live data, not its last
 *                      burst, while a change still reuses the pages the
 *                      one before it freed. Given back at once (0, as
 *                      before), every page a change writes was a fresh
 *                      page from the kernel: page faults were 19% of a
 *                      folder rename's profile, and a rename of 100 notes
 *                      in bench/vaults/v10k took 88.4 and 89.2 ms of CPU
 *                      (apply-bench, one thread, p50 of 15) against 75.1
 *                      and 82.7 now; settled at 100,000 notes the server
 *                      held 1,563,540 KiB against 1,566,556 now.
 *
 * Why not glibc's malloc: at 100,000 notes its bins were 40% of a
 * retitle's profile (_int_malloc walking free chunks left by the load,
 * unlink_chunk, malloc_consolidate), and it held the heap's holes: on
 * bench/vaults/v100k, settled, 1,565,188 KiB resident against 1,467,200
 * with jemalloc so set, and a retitle in process (apply-bench, p50)
 * 6.95 ms against 4.92. mimalloc was as fast but held 64% more at 10,000
 * notes. docs/performance.md has the runs.
 *
 * The lasting arena (xmalloc_lasting(), util/xalloc.h): a page's
 * compressed bytes, 1 to 16 KB each, are taken from an arena of their own,
 * without the thread caches. Taken from the common arenas, they shared
 * their slabs with the load's temporaries of the same sizes, and when the
 * load freed those the slabs stayed a third empty: settled at 100,000
 * notes, jemalloc's size classes from 1 to 14 KB were 56% to 79% used,
 * some 200 MB of resident memory holding nothing.
 */
#include "util/xalloc.h"

#include <pthread.h>
#include <stdlib.h>

#include <jemalloc/jemalloc.h>

extern const char *malloc_conf;
const char *malloc_conf = "narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0,background_thread:true";

/* For quire --version (commands.c refers to it weakly: absent without jemalloc). */
#define STR_(x) #x
#define STR(x) STR_(x)
extern const char quire_malloc_version[];
const char quire_malloc_version[] = STR(JEMALLOC_VERSION_MAJOR) "." STR(JEMALLOC_VERSION_MINOR) "."
	STR(JEMALLOC_VERSION_BUGFIX);

static unsigned lasting_arena;
static int lasting_ok;
static pthread_once_t lasting_once = PTHREAD_ONCE_INIT;

static void lasting_init(void)
{
	size_t len = sizeof(lasting_arena);

	lasting_ok = mallctl("arenas.create", &lasting_arena, &len, NULL, 0) == 0;
}

void *quire_lasting_alloc(size_t size)
{
	pthread_once(&lasting_once, lasting_init);
	if (!lasting_ok)
		return malloc(size);
	return mallocx(size, MALLOCX_ARENA(lasting_arena) | MALLOCX_TCACHE_NONE);
}

void quire_lasting_free(void *ptr)
{
	/* dallocx finds the arena from the pointer; the thread's cache is skipped */
	dallocx(ptr, MALLOCX_TCACHE_NONE);
}
