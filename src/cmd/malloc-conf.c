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
 *   dirty_decay_ms:0   pages freed are given back at once: a change frees
 *   muzzy_decay_ms:0   what it replaced, and the server's size is its
 *                      live data, not its last burst.
 *
 * Why not glibc's malloc: at 100,000 notes its bins were 40% of a
 * retitle's profile (_int_malloc walking free chunks left by the load,
 * unlink_chunk, malloc_consolidate), and it held the heap's holes: on
 * bench/vaults/v100k, settled, 1,565,188 KiB resident against 1,467,200
 * with jemalloc so set, and a retitle in process (apply-bench, p50)
 * 6.95 ms against 4.92. mimalloc was as fast but held 64% more at 10,000
 * notes. docs/performance.md has the runs.
 */
extern const char *malloc_conf;
const char *malloc_conf = "narenas:2,dirty_decay_ms:0,muzzy_decay_ms:0";
