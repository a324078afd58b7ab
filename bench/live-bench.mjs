#!/usr/bin/env node
/*
 * bench/live-bench.mjs: live pages, from an edit sent through the sync API
 * to the changed text painted in a browser that has the page open.
 *
 *	taskset -c 1 node bench/live-bench.mjs [--quire BIN] [--edits N]
 *	    [--others N,N...] [--server-core C] [--gap-ms MS] [--json]
 *
 * (bench/run's `live` part runs it.) It starts `quire serve --threads 1
 * --token-file` pinned to --server-core (default 0) on a copy of
 * vault-sample with one long note, /bench, and opens that note in
 * Chromium (Debian's, through puppeteer-core from tests/browser). For
 * each count of --others (default 0,999) it opens that many more streams
 * to the same page with plain node HTTP clients, which read every event
 * (the worst case of a fan-out: every reader follows the page that
 * changes), then makes --edits edits: a PUT of the note with a new
 * paragraph carrying a marker, and waits until the page has painted it.
 *
 * Timing. In the page, a MutationObserver sees the marker in the
 * document and a requestAnimationFrame callback, the frame that paints
 * it, takes performance.timeOrigin + performance.now(). The sender takes
 * the same sum in node just before the PUT. Both clocks are the system's
 * wall clock at their origin plus a monotonic clock since, so they agree
 * but for adjustments made to the wall clock between the two origins;
 * the offset between them is measured before each run (20 round trips
 * to the page: the one with the shortest round trip, its midpoint) and
 * taken off, so a figure is exact to half that round trip (printed as
 * clock_uncertainty_ms). Run this script pinned to another core than the
 * server (Chromium and the other clients inherit its affinity).
 *
 * Prints a line per run and, with --json, one JSON object as the last
 * line: {"runs":[{"pages":1,"edits":100,"p50_ms":..,"p99_ms":..,...}]}.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');

const TOKEN = 'live-bench-token-0123456789abcdef';
const opt = { quire: process.env.QUIRE_BIN || join(root, 'build', 'quire'), edits: 100,
  others: [0, 999], serverCore: '0', gapMs: 50, json: false };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i], v = process.argv[i + 1];
  if (a === '--quire') opt.quire = v, i++;
  else if (a === '--edits') opt.edits = Number(v), i++;
  else if (a === '--others') opt.others = v.split(',').map(Number), i++;
  else if (a === '--server-core') opt.serverCore = v, i++;
  else if (a === '--gap-ms') opt.gapMs = Number(v), i++;
  else if (a === '--json') opt.json = true;
  else {
    console.error('usage: live-bench.mjs [--quire BIN] [--edits N] [--others N,N] [--server-core C] [--gap-ms MS] [--json]');
    process.exit(2);
  }
}
/* the server, Chromium and puppeteer-core as the browser tests have them */
process.env.QUIRE_BIN = opt.quire;
const { launch, serve } = await import('../tests/browser/lib.mjs');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.timeOrigin + performance.now();

function note(marker) {
  let s = '# Bench\n\nA long note that a reader has open while it is edited.\n\n';
  for (let i = 0; i < 60; i++)
    s += `Paragraph ${i}: the text of a note as it is written, with a [[Welcome]] link and some *emphasis*.\n\n`;
  return s + `The last paragraph carries ${marker}.\n`;
}

async function streams(base) {
  const m = /quire_live_subscribers (\d+)/.exec(await (await fetch(base + '/metrics')).text());
  return m ? Number(m[1]) : -1;
}

async function waitStreams(base, want) {
  for (let i = 0; i < 600 && await streams(base) < want; i++) await sleep(50);
  const n = await streams(base);
  if (n < want) throw new Error(`only ${n} of ${want} live streams opened`);
}

/* n plain clients following /bench, reading all they get. */
function openOthers(base, n) {
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const reqs = [];
  for (let i = 0; i < n; i++) {
    const req = http.get(base + '/_quire/live?u=%2Fbench', { agent }, (res) => {
      res.on('data', () => {});
    });
    req.on('error', () => {});
    reqs.push(req);
  }
  return reqs;
}

/* The page's clock against ours: the offset with the shortest round trip, and half of it. */
async function clockOffset(page) {
  let best = null;
  for (let i = 0; i < 20; i++) {
    const t0 = now();
    const p = await page.evaluate(() => performance.timeOrigin + performance.now());
    const t1 = now();
    if (!best || t1 - t0 < best.rtt) best = { rtt: t1 - t0, offset: p - (t0 + t1) / 2 };
  }
  return best;
}

function pct(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

async function run(browser, base, others) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1000, height: 700 });
  await page.goto(base + '/bench', { waitUntil: 'load' });
  await waitStreams(base, 1);
  await page.evaluate(() => {
    window.scrollTo(0, 800);
    window.__painted = {};
    new MutationObserver(() => {
      const m = /EDIT-(\d+)-END/.exec(document.getElementById('quire-main')?.textContent || '');
      if (m && !(m[1] in window.__painted)) {
        const k = m[1];
        window.__painted[k] = -1;
        requestAnimationFrame(() => { window.__painted[k] = performance.timeOrigin + performance.now(); });
      }
    }).observe(document.body, { childList: true, subtree: true, characterData: true });
  });
  const reqs = openOthers(base, others);
  await waitStreams(base, others + 1);
  const clock = await clockOffset(page);
  const live = [], answered = [];
  let missed = 0;
  const tag = Date.now() % 100000;
  for (let i = 0; i < opt.edits; i++) {
    const k = `${tag}${i}`;
    const body = note(`EDIT-${k}-END`);
    const sent = now();
    const r = await fetch(base + '/api/v1/files/bench.md', { method: 'PUT', body,
      headers: { Authorization: 'Bearer ' + TOKEN } });
    await r.text();
    answered.push(now() - sent);
    const painted = await page.waitForFunction((key) => window.__painted[key] > 0 && window.__painted[key],
      { timeout: 10000, polling: 'raf' }, k).then((h) => h.jsonValue(), () => null);
    if (painted === null) missed++;
    else live.push(painted - clock.offset - sent);
    await sleep(opt.gapMs);
  }
  for (const q of reqs) q.destroy();
  await page.close();
  live.sort((a, b) => a - b);
  answered.sort((a, b) => a - b);
  const r2 = (x) => Math.round(x * 100) / 100;
  return { pages: others + 1, others, edits: opt.edits, painted: live.length, missed,
    p50_ms: r2(pct(live, 0.5)), p90_ms: r2(pct(live, 0.9)), p99_ms: r2(pct(live, 0.99)),
    max_ms: r2(live[live.length - 1]), put_p50_ms: r2(pct(answered, 0.5)),
    clock_uncertainty_ms: r2(clock.rtt / 2) };
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'quire-live-bench-'));
  const vault = join(work, 'vault');
  cpSync(join(root, 'vault-sample'), vault, { recursive: true });
  writeFileSync(join(vault, 'bench.md'), note('EDIT-start-END'));
  writeFileSync(join(work, 'token'), TOKEN + '\n');
  const { proc, base } = await serve(vault, { live: true, pin: opt.serverCore,
    args: ['--no-watch', '--token-file', join(work, 'token'), '--max-per-address', '4000'] });
  const browser = await launch();
  const runs = [];
  try {
    for (const others of opt.others) {
      const r = await run(browser, base, others);
      runs.push(r);
      console.log(`live: ${r.pages} open pages: edit to painted p50 ${r.p50_ms} ms, p90 ${r.p90_ms}, ` +
        `p99 ${r.p99_ms}, max ${r.max_ms} (${r.painted} of ${r.edits}; PUT answered p50 ` +
        `${r.put_p50_ms} ms; clocks within ${r.clock_uncertainty_ms} ms)`);
      await sleep(500);
    }
  } finally {
    await browser.close();
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    rmSync(work, { recursive: true, force: true });
  }
  if (opt.json) console.log(JSON.stringify({ server_core: opt.serverCore, runs }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
