/*
 * meter.h: the work and memory of what a test runs, counted, for tests
 * that check that a cost grows in proportion to its input
 * (tests/test-pathological.c). Counts, not times: a count comes out the
 * same on a slower or busier machine, so a bound on it holds anywhere.
 *
 *	struct meter m;
 *	meter_start(&m);
 *	... the work ...
 *	meter_stop(&m);          m.blocks, m.instructions, m.alloc_bytes, m.peak_bytes
 *
 * What is counted, on the calling thread (the work runs on it):
 *   instructions  retired in user space (perf_event_open), where the
 *                 machine gives them: not in most virtual machines, where
 *                 this stays 0 (meter_has_instructions());
 *   blocks        basic blocks run in quire's own code: the program links a
 *                 copy of the library compiled with
 *                 -fsanitize-coverage=trace-pc (tests/meson.build), whose
 *                 hook, __sanitizer_cov_trace_pc() in meter.c, counts;
 *   allocations   every call to the allocator in the process (quire's
 *                 xmalloc and friends, cmark-gfm, libyaml, gumbo,
 *                 libdeflate): their number, their bytes, and the most
 *                 bytes live at once above what was live at the start.
 *                 meter.c defines malloc, calloc, realloc, free and the
 *                 aligned forms over glibc's __libc_ ones; under the
 *                 sanitizers, which own malloc, it installs their hooks
 *                 (__sanitizer_install_malloc_and_free_hooks()).
 */
#ifndef QUIRE_TEST_METER_H
#define QUIRE_TEST_METER_H

#include <stdint.h>

struct meter {
	uint64_t instructions, blocks, allocs, alloc_bytes, peak_bytes;
	/* at meter_start() */
	uint64_t instructions0, blocks0, allocs0, alloc_bytes0;
	int64_t live0;
};

/*
 * Sets the meter up once (opens the instruction counter, installs the
 * sanitizer's hooks) and prints on stderr which measures this build and
 * machine have. Returns 0, or -1 when allocations cannot be counted.
 */
int meter_init(void);

/* 1 when the machine counts instructions for this process. */
int meter_has_instructions(void);

/* 1 when quire's code in this program counts its basic blocks. */
int meter_has_blocks(void);

void meter_start(struct meter *m);
/* Fills m with what ran since meter_start(m). */
void meter_stop(struct meter *m);

#endif
