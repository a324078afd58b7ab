/*
 * tests/browser/lib.mjs: what the browser tests share: the real `quire
 * serve` on a vault, Debian's Chromium through puppeteer-core, a page that
 * records what the reader would not see (console errors, exceptions,
 * failed requests, requests leaving the server), and axe-core.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';
import { check } from '../lib/check.mjs';

export const here = dirname(fileURLToPath(import.meta.url));
export const root = process.env.QUIRE_SOURCE_ROOT || join(here, '..', '..');
export const quire = process.env.QUIRE_BIN || join(root, 'build', 'quire');
export const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
export const shots = process.env.QUIRE_ARTIFACTS || join(process.cwd(), 'browser-shots');
const axeSource = readFileSync(join(here, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');


/*
 * quire serve on vault, on a free port; resolves when the search index
 * answers. Live pages are off unless opts.live: an open page's stream is
 * a request that never ends, and visit() waits for the network to be
 * idle (tests/browser/live.mjs follows them); opts.args: more options;
 * opts.core: the core to pin the server to (taskset; bench/live-bench.mjs).
 */
export async function serve(vault, opts = {}) {
  const args = ['serve', '--vault', vault, '--listen', '127.0.0.1:0', '--threads', '1'];
  if (!opts.live) args.push('--no-live');
  const argv = [quire, ...args, ...(opts.args || [])];
  const proc = opts.core === undefined
    ? spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'ignore'] })
    : spawn('taskset', ['-c', String(opts.core), ...argv], { stdio: ['ignore', 'pipe', 'ignore'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', () => reject(new Error('quire serve exited: ' + out)));
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    try {
      const r = await fetch(base + '/api/search?q=quire');
      if ((await r.text()).includes('"url"')) break;
    } catch (e) { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { proc, base };
}

/*
 * A page that records what the reader would not see: console errors,
 * uncaught exceptions, failed requests, requests to another origin.
 */
export async function watchedPage(browser, base, width, height) {
  const page = await browser.newPage();
  await page.setViewport({ width, height });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  page.on('pageerror', (e) => problems.push('exception: ' + e.message));
  page.on('requestfailed', (r) => {
    /* a live page's stream, closed by the page as it leaves or follows another path */
    const closed = r.url().includes('/_quire/live?') && r.failure()?.errorText === 'net::ERR_ABORTED';
    if (!closed) problems.push('failed: ' + r.url());
  });
  await page.setRequestInterception(true);
  page.on('request', (r) => {
    const u = r.url();
    if (u.startsWith(base) || u.startsWith('data:') || u.startsWith('about:')) {
      r.continue();
    } else {
      problems.push('left the server: ' + u);
      r.abort();
    }
  });
  page.problems = problems;
  return page;
}

export async function visit(page, url) {
  const res = await page.goto(url, { waitUntil: 'networkidle0' });
  return res ? res.status() : 0;
}

export async function axe(page, what) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () =>
    /* global axe */
    axe.run(document, { resultTypes: ['violations'] }));
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of bad)
    console.error(`  axe ${what}: ${v.impact} ${v.id}: ${v.help} (${v.nodes.length}: ` +
      v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ') + ')');
  check(bad.length === 0, `axe-core finds no serious or critical violation on ${what}`);
}

/* Debian's Chromium, headless, with nothing of its own on the network. */
export function launch() {
  return puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}
