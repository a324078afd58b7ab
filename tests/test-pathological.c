/*
 * test-pathological.c: hostile inputs render, or are refused with a clear
 * message, at a cost linear in their size, counted.
 *
 * Each case of tests/lib/hostile.c (in the manner of cmark's
 * test/pathological_tests.py) runs once at a size n and once at 10 n,
 * checking what comes out, under the meter of tests/lib/meter.h, which
 * counts rather than times:
 *
 *	- basic blocks run in quire's own code (this program links a copy of
 *	  the library compiled with -fsanitize-coverage=trace-pc);
 *	- instructions in user space, where the machine gives them
 *	  (perf_event_open; not in most virtual machines);
 *	- allocations, every one in the process (cmark-gfm's tree included):
 *	  bytes asked for in all, and the most live at once.
 *
 * Linear work gives a ratio near 10 from n to 10 n, quadratic near 100;
 * each count must stay under MAX_RATIO. A count is the same on a slow or a
 * busy machine (the CPU-time ratios this test asserted before failed
 * there: 44 and 77 for linear work), so the bound can sit at twice linear.
 * And a note's memory is bounded by its size: at 10 n, neither the bytes
 * allocated nor the peak may pass MAX_ALLOC_PER_BYTE and
 * MAX_PEAK_PER_BYTE times the note's bytes (the cases of one note; a
 * vault's notes each cost a page around them, so there only the ratios). The times of the same cases
 * are bench/pathological-bench.c's, printed and never asserted.
 *
 * test_meter_sees_quadratic() first shows that the counts see what they
 * must: a quadratic loop over quire's code gives a ratio near 100.
 *
 * PATHOLOGICAL_ONLY=text runs only the cases whose name holds text (for a
 * profile of one case; the odd file names are always loaded).
 */
#include "lib/hostile.h"
#include "lib/meter.h"
#include "lib/test.h"
#include "lib/tv.h"

#include "markdown/markdown.h"
#include "site/site.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* 10 n against n: linear work near 10 (less where a fixed cost shows), quadratic 100 */
#define MAX_RATIO 20.0
/*
 * At 10 n, per byte of a note (docs/security.md, "Pathological inputs"):
 * cmark-gfm's tree is most of it, a node of about 170 bytes for as little
 * as one byte of input ("- - - -", "> > >", "[[[["), 225 bytes a byte at
 * its peak; the worst case here ("callout in a deep quote") holds 253 in
 * all and allocates 334 (285 and 350 under ASan, whose realloc() always
 * moves the block).
 */
#define MAX_ALLOC_PER_BYTE 450.0
#define MAX_PEAK_PER_BYTE 350.0

/* What one run counted, and the input's size. */
struct run {
	size_t bytes;
	struct meter m;
};

static void measure(const struct hostile_case *c, size_t n, struct run *out)
{
	void *in = c->build(n);

	out->bytes = hostile_bytes(c, in);
	meter_start(&out->m);
	c->run(in, n, 1);
	meter_stop(&out->m);
	c->drop(in);
}

static double ratio(uint64_t a, uint64_t b)
{
	return (double)b / (double)(a ? a : 1);
}

/* A ratio as the table shows it: "-" for a count this machine or build lacks. */
struct shown {
	char s[8];
};

static struct shown shown(uint64_t a, uint64_t b)
{
	struct shown r;

	if (!a || !b)
		snprintf(r.s, sizeof(r.s), "%6s", "-");
	else
		snprintf(r.s, sizeof(r.s), "%6.1f", ratio(a, b));
	return r;
}

/* One count from n to 10 n: under the bound, and not zero (a count that ran). */
static void check_ratio(const char *name, const char *what, uint64_t a, uint64_t b)
{
	if (a == 0 || b == 0) {
		fprintf(stderr, "  %s: no %s counted\n", name, what);
		CHECK(a > 0 && b > 0);
		return;
	}
	if (ratio(a, b) > MAX_RATIO) {
		fprintf(stderr, "  %s: %s grow faster than its size: %llu at n, %llu at 10 n "
			"(ratio %.1f)\n", name, what, (unsigned long long)a, (unsigned long long)b,
			ratio(a, b));
		CHECK(ratio(a, b) <= MAX_RATIO);
	}
}

static void check_per_byte(const char *name, const char *what, uint64_t bytes, size_t in,
			   double max)
{
	double per = (double)bytes / (double)(in ? in : 1);

	if (per > max) {
		fprintf(stderr, "  %s: %s %.1f bytes a byte of input (%zu bytes in), more than %.0f\n",
			name, what, per, in, max);
		CHECK(per <= max);
	}
}

static void run_case(const struct hostile_case *c)
{
	const char *only = getenv("PATHOLOGICAL_ONLY");
	size_t n = c->n;
	struct run a, b;

	if (only && *only && !strstr(c->name, only))
		return;
	/* a quarter under the sanitizers, where each run costs several times more */
	if (UNDER_ASAN && n >= 400 && c->kind == HOSTILE_BYTES)
		n /= 4;
	measure(c, n, &a);
	measure(c, 10 * n, &b);
	fprintf(stderr, "  %-30s %9zu  %s %s %5.1f %5.1f %5.1f  %6.1f %6.1f\n", c->name, a.bytes,
		shown(a.m.blocks, b.m.blocks).s, shown(a.m.instructions, b.m.instructions).s,
		ratio(a.m.allocs, b.m.allocs), ratio(a.m.alloc_bytes, b.m.alloc_bytes),
		ratio(a.m.peak_bytes, b.m.peak_bytes), (double)b.m.alloc_bytes / (double)b.bytes,
		(double)b.m.peak_bytes / (double)b.bytes);
	if (meter_has_blocks())
		check_ratio(c->name, "basic blocks", a.m.blocks, b.m.blocks);
	if (meter_has_instructions() && a.m.instructions && b.m.instructions)
		check_ratio(c->name, "instructions", a.m.instructions, b.m.instructions);
	check_ratio(c->name, "bytes allocated", a.m.alloc_bytes, b.m.alloc_bytes);
	check_ratio(c->name, "allocations", a.m.allocs, b.m.allocs);
	/* a vault's notes each cost a page around them: per byte only for one note */
	if (c->kind == HOSTILE_BYTES) {
		check_per_byte(c->name, "allocates", b.m.alloc_bytes, b.bytes, MAX_ALLOC_PER_BYTE);
		check_per_byte(c->name, "holds at its peak", b.m.peak_bytes, b.bytes,
			       MAX_PEAK_PER_BYTE);
	}
}

/*
 * The meter sees quadratic work: n heading ids of n characters each, at n
 * and 10 n, is 100 times the work and the bytes. Were the counts blind
 * (the library not compiled to count, the allocator not interposed),
 * every case above would pass whatever it cost.
 */
static void quadratic(size_t n, struct meter *m)
{
	char *text = malloc(n + 1);
	size_t i;

	memset(text, 'a', n);
	text[n] = '\0';
	meter_start(m);
	for (i = 0; i < n; i++)
		free(md_heading_id(text));
	meter_stop(m);
	free(text);
}

static void test_meter_sees_quadratic(void)
{
	struct meter a, b;

	CHECK(meter_init() == 0);
#ifdef QUIRE_COUNTED_BLOCKS
	/* meson compiled the library's copy to count: it must */
	CHECK(meter_has_blocks());
#endif
	quadratic(300, &a);
	quadratic(3000, &b);
	fprintf(stderr, "  quadratic loop: blocks %.1f, instructions %.1f, bytes %.1f\n",
		ratio(a.blocks, b.blocks), ratio(a.instructions, b.instructions),
		ratio(a.alloc_bytes, b.alloc_bytes));
	CHECK(ratio(a.alloc_bytes, b.alloc_bytes) > 5 * MAX_RATIO / 2);
	if (meter_has_blocks())
		CHECK(ratio(a.blocks, b.blocks) > 5 * MAX_RATIO / 2);
	if (meter_has_instructions())
		CHECK(ratio(a.instructions, b.instructions) > 5 * MAX_RATIO / 2);
}

/*
 * A note over max_note_size is never read whole (stat first): a sparse
 * file of 256 MiB loads in a vault with a few kilobytes allocated, an
 * error naming it, the rest published.
 */
static void test_over_the_limit_unread(void)
{
	struct site_options o = { .threads = 1 };
	char *dir = tv_new();
	struct buf path = BUF_INIT;
	struct meter m;
	struct site *s;
	size_t i, said = 0;
	int fd;

	buf_addf(&path, "%s/huge.md", dir);
	fd = open(path.ptr, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)256 << 20) == 0);
	if (fd >= 0)
		close(fd);
	tv_write(dir, "small.md", "# Small\n\nSee [[huge]].\n");
	meter_start(&m);
	s = site_load(dir, &o);
	meter_stop(&m);
	CHECK(s != NULL);
	for (i = 0; s && i < s->diags.n; i++)
		said += strcmp(s->diags.items[i].path, "huge.md") == 0 &&
			strstr(s->diags.items[i].msg, "268435456 bytes, over max_note_size") != NULL;
	CHECK_INT(said, 1);
	CHECK(s && site_find_note(s, "small.md") && site_find_note(s, "small.md")->published);
	fprintf(stderr, "  a note of 256 MiB over max_note_size: %.1f MiB allocated in the load\n",
		(double)m.alloc_bytes / (1 << 20));
	CHECK(m.alloc_bytes < 16 << 20);
	site_free(s);
	buf_release(&path);
	tv_remove(dir);
}

static void test_cases(void)
{
	size_t i;

	fprintf(stderr, "  %-30s %9s  %-38s  %s\n", "", "", "ratios, 10 n to n", "a byte, 10 n");
	fprintf(stderr, "  %-30s %9s  %6s %6s %5s %5s %5s  %6s %6s\n", "case", "bytes (n)", "blocks",
		"instr", "calls", "bytes", "peak", "bytes", "peak");
	for (i = 0; i < hostile_ncases; i++)
		run_case(&hostile_cases[i]);
}

int main(void)
{
	md_global_init();
	RUN(test_meter_sees_quadratic);
	RUN(hostile_odd_file_names);
	RUN(test_over_the_limit_unread);
	RUN(test_cases);
	return test_done();
}
