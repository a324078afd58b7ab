/*
 * bench/graph-bench.mjs: the graph page at 173, 2,000 and 10,000 notes in
 * Chromium (headless, Debian's, through puppeteer-core).
 *
 *	node bench/graph-bench.mjs [--quick] [--json]
 *
 * For each size: a vault of linked notes (tests/browser/scale.mjs's
 * linkedVault(): ten folders, three links a note, a hub every 25), served
 * by build/quire serve pinned to core 0 (Chromium runs on core 1), the
 * graph page opened three times; prints the median time from navigation
 * to the graph drawn (the layout done and painted: .graph-global
 * [data-drawn], then a frame), the longest task (PerformanceObserver
 * 'longtask') and the layout's slices. --quick: 173 and 2,000 notes, once
 * each. --json: one JSON line at the end, for bench/run.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, serve } from '../tests/browser/lib.mjs';
import { linkedVault } from '../tests/browser/scale.mjs';
import { stop } from '../tests/lib/proc.mjs';

const quick = process.argv.includes('--quick');
const sizes = quick ? [173, 2000] : [173, 2000, 10000];
const runs = quick ? 1 : 3;

const watch = () => {
  window.__long = [];
  new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); })
    .observe({ type: 'longtask', buffered: true });
};

const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

async function main() {
  const rows = [];
  const work = mkdtempSync(join(tmpdir(), 'quire-graph-bench-'));
  const browser = await launch();
  try {
    const pid = browser.process().pid;
    await new Promise((r) => spawn('taskset', ['-a', '-p', '-c', '1', String(pid)], { stdio: 'ignore' }).on('exit', r));
    for (const n of sizes) {
      const vault = join(work, 'v' + n);
      linkedVault(vault, n);
      const { proc, base } = await serve(vault, { pin: 0 });
      const firsts = [], longest = [];
      let stats = {};
      try {
        for (let i = 0; i < runs; i++) {
          const page = await browser.newPage();
          await page.setViewport({ width: 1400, height: 900 });
          await page.evaluateOnNewDocument(watch);
          await page.goto(base + '/_quire/graph');
          await page.waitForSelector('.graph-global[data-drawn]', { timeout: 600000 });
          const got = await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r({
            drawn: performance.now(), long: window.__long, stats: window.__quireGraphStats }))));
          firsts.push(got.drawn);
          longest.push(got.long.length ? Math.max(...got.long) : 0);
          stats = got.stats;
          await page.close();
        }
      } finally {
        await stop(proc);
      }
      const row = { notes: n, first_drawn_ms: Math.round(median(firsts)), longest_task_ms: Math.round(median(longest)),
        drawn_with: stats.drawnWith, slices: stats.slices, max_slice_work: stats.maxSliceWork, ticks: stats.ticks,
        labels: stats.labels, runs };
      rows.push(row);
      console.log(`graph ${n} notes: first drawn ${row.first_drawn_ms} ms, longest task ${row.longest_task_ms} ms, ` +
        `${row.drawn_with}, ${row.slices} slices of at most ${row.max_slice_work} node updates, ${row.labels} labels (median of ${runs})`);
    }
  } finally {
    await browser.close();
    rmSync(work, { recursive: true, force: true });
  }
  if (process.argv.includes('--json')) console.log(JSON.stringify({ graph: rows }));
}

main().catch((e) => { console.error(e); process.exit(1); });
