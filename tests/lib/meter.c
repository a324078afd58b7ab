/*
 * meter.c: the counters of meter.h.
 *
 * Blocks: __sanitizer_cov_trace_pc() is what GCC and clang call at each
 * basic block of code compiled with -fsanitize-coverage=trace-pc. Only the
 * copy of libquire that tests/meson.build builds for this is compiled so;
 * this file is not, or the hook would call itself.
 *
 * Allocations: outside the sanitizers this file defines malloc() and its
 * family, over glibc's own (__libc_malloc() and the rest, which glibc
 * exports for this: "Replacing malloc" in its manual); glibc's internal
 * callers (strdup, fopen) come through them too. The bytes live are the
 * allocator's usable sizes. Under AddressSanitizer, whose runtime owns
 * malloc, its hooks count instead, with the sizes asked for.
 *
 * Instructions: one perf_event_open() counter on this thread, user space
 * only. Where it is multiplexed (running less than it was enabled) its
 * figure is an estimate and is dropped (0) for that measurement.
 *
 * Rejected: counting in util/xalloc.c under a test-only macro (it would
 * miss cmark-gfm's tree, the largest part of a note's memory, and
 * libyaml's and gumbo's); CPU times (they depend on the machine and what
 * else it runs: the time ratios this replaced failed on a busy 2-core
 * machine, 44 and 77 for linear work).
 */
#include "lib/meter.h"

#include "util/buf.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define METER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define METER_ASAN 1
#endif
#endif

/* ---- blocks ------------------------------------------------------------------ */

static _Thread_local uint64_t blocks;

void __sanitizer_cov_trace_pc(void);

void __sanitizer_cov_trace_pc(void)
{
	blocks++;
}

/* ---- allocations --------------------------------------------------------------- */

static _Atomic int64_t live, peak;
static _Atomic uint64_t nallocs, nbytes;

static void took(const volatile void *p, size_t asked, size_t size)
{
	int64_t now, top;

	if (!p)
		return;
	atomic_fetch_add_explicit(&nallocs, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&nbytes, asked, memory_order_relaxed);
	now = atomic_fetch_add_explicit(&live, (int64_t)size, memory_order_relaxed) + (int64_t)size;
	top = atomic_load_explicit(&peak, memory_order_relaxed);
	while (now > top && !atomic_compare_exchange_weak(&peak, &top, now))
		;
}

static void gave(size_t size)
{
	atomic_fetch_sub_explicit(&live, (int64_t)size, memory_order_relaxed);
}

#ifdef METER_ASAN

int __sanitizer_install_malloc_and_free_hooks(void (*on_malloc)(const volatile void *, size_t),
					       void (*on_free)(const volatile void *));
size_t __sanitizer_get_allocated_size(const volatile void *p);

static void on_malloc(const volatile void *p, size_t size)
{
	took(p, size, size);
}

static void on_free(const volatile void *p)
{
	if (p)
		gave(__sanitizer_get_allocated_size(p));
}

static int hooks_installed;

static int count_allocations(void)
{
	if (!hooks_installed)
		hooks_installed = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) != 0;
	return hooks_installed ? 0 : -1;
}

#else

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);
extern void __libc_free(void *p);

void *malloc(size_t size)
{
	void *p = __libc_malloc(size);

	took(p, size, p ? malloc_usable_size(p) : 0);
	return p;
}

void *calloc(size_t n, size_t size)
{
	void *p = __libc_calloc(n, size);

	took(p, n * size, p ? malloc_usable_size(p) : 0);
	return p;
}

void *realloc(void *p, size_t size)
{
	size_t old = p ? malloc_usable_size(p) : 0;
	void *q = __libc_realloc(p, size);

	/* a failed realloc keeps the old block; one to 0 bytes frees it */
	if (q || size == 0)
		gave(old);
	took(q, size, q ? malloc_usable_size(q) : 0);
	return q;
}

void free(void *p)
{
	if (p)
		gave(malloc_usable_size(p));
	__libc_free(p);
}

void *memalign(size_t align, size_t size)
{
	void *p = __libc_memalign(align, size);

	took(p, size, p ? malloc_usable_size(p) : 0);
	return p;
}

void *aligned_alloc(size_t align, size_t size)
{
	return memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p = memalign(align, size);

	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *valloc(size_t size)
{
	void *p = __libc_valloc(size);

	took(p, size, p ? malloc_usable_size(p) : 0);
	return p;
}

void *pvalloc(size_t size)
{
	void *p = __libc_pvalloc(size);

	took(p, size, p ? malloc_usable_size(p) : 0);
	return p;
}

static int count_allocations(void)
{
	return 0;
}

#endif

/* ---- instructions -------------------------------------------------------------- */

struct perf_read {
	uint64_t value, enabled, running;
};

static int perf_fd = -1;

static int perf_now(struct perf_read *r)
{
	memset(r, 0, sizeof(*r));
	return perf_fd >= 0 && read(perf_fd, r, sizeof(*r)) == (ssize_t)sizeof(*r) ? 0 : -1;
}

static void open_instructions(void)
{
	struct perf_event_attr a;
	struct perf_read r0, r1;
	struct buf b = BUF_INIT;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_HARDWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	perf_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (perf_fd < 0)
		return;
	/* a counter that opens but never runs (some hypervisors) counts nothing */
	perf_now(&r0);
	buf_addf(&b, "%d %s", 42, "some work to count");
	buf_release(&b);
	if (perf_now(&r1) != 0 || r1.value <= r0.value || r1.running == 0) {
		close(perf_fd);
		perf_fd = -1;
	}
}

/* ---- the meter ------------------------------------------------------------------- */

static int ready, has_blocks;

int meter_init(void)
{
	struct buf b = BUF_INIT;
	uint64_t before;
	int rc;

	if (ready)
		return 0;
	ready = 1;
	rc = count_allocations();
	open_instructions();
	before = blocks;
	buf_addf(&b, "%s", "a call into quire's code");
	buf_release(&b);
	has_blocks = blocks > before;
	fprintf(stderr, "  counted: %s, %s, %s\n",
		perf_fd >= 0 ? "instructions (perf_event_open)"
			     : "no instructions (perf_event_open: not on this machine)",
		has_blocks ? "basic blocks of quire's code (-fsanitize-coverage=trace-pc)"
			   : "no basic blocks (the library is not compiled to count them)",
		rc == 0 ? "allocations" : "no allocations");
	return rc;
}

int meter_has_instructions(void)
{
	return perf_fd >= 0;
}

int meter_has_blocks(void)
{
	return has_blocks;
}

void meter_start(struct meter *m)
{
	struct perf_read r;

	memset(m, 0, sizeof(*m));
	m->blocks0 = blocks;
	m->allocs0 = atomic_load(&nallocs);
	m->alloc_bytes0 = atomic_load(&nbytes);
	m->live0 = atomic_load(&live);
	atomic_store(&peak, m->live0);
	if (perf_now(&r) == 0)
		m->instructions0 = r.value;
	/* kept for meter_stop(): the counter must have run all the time it was enabled */
	m->instructions = r.enabled - r.running;
}

void meter_stop(struct meter *m)
{
	struct perf_read r;
	uint64_t missed0 = m->instructions;
	int64_t top = atomic_load(&peak) - m->live0;

	m->blocks = blocks - m->blocks0;
	m->allocs = atomic_load(&nallocs) - m->allocs0;
	m->alloc_bytes = atomic_load(&nbytes) - m->alloc_bytes0;
	m->peak_bytes = top > 0 ? (uint64_t)top : 0;
	m->instructions = 0;
	if (perf_now(&r) == 0 && r.enabled - r.running == missed0)
		m->instructions = r.value - m->instructions0;
}
