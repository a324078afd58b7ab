/*
 * tests/browser/lib.mjs: what the browser tests share: the real `quire
 * serve` on a vault, Debian's Chromium through puppeteer-core, a page that
 * records what the reader would not see (console errors, exceptions,
 * failed requests, requests leaving the server), and axe-core.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';
import { check } from '../lib/check.mjs';
import { stop } from '../lib/proc.mjs';

export const here = dirname(fileURLToPath(import.meta.url));
export const root = process.env.QUIRE_SOURCE_ROOT || join(here, '..', '..');
export const quire = process.env.QUIRE_BIN || join(root, 'build', 'quire');
export const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
export const shots = process.env.QUIRE_ARTIFACTS || join(process.cwd(), 'browser-shots');
const axeSource = readFileSync(join(here, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');


/*
 * quire serve on vault, on a free port. Resolves when the search index
 * answers, or with opts.loaded when the home page answers 200 (503 until
 * the vault is loaded) within opts.wait ms. Live pages are off unless
 * opts.live: an open page's stream is a request that never ends, and
 * visit() waits for the network to be idle (tests/browser/live.mjs follows
 * them); opts.args: more options; opts.pin runs it under taskset on that
 * core.
 */
export async function serve(vault, opts = {}) {
  const cmd = [quire, 'serve', '--vault', vault, '--listen', '127.0.0.1:0', '--threads', '1'];
  if (!opts.live) cmd.push('--no-live');
  cmd.push(...(opts.args || []));
  if (opts.pin !== undefined) cmd.unshift('taskset', '-c', String(opts.pin));
  const proc = spawn(cmd[0], cmd.slice(1), { stdio: ['ignore', 'pipe', 'ignore'] });
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
  const until = Date.now() + (opts.wait || 20000);
  while (Date.now() < until) {
    try {
      if (opts.loaded) {
        if ((await fetch(base + '/')).status === 200) break;
      } else {
        const r = await fetch(base + '/api/search?q=quire');
        if ((await r.text()).includes('"url"')) break;
      }
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
    /*
     * cut short as the reader leaves is no failure: a page fetched ahead
     * (theme/js/navigation.js), a live page's stream (theme/js/live.js)
     */
    const aborted = r.failure() && r.failure().errorText === 'net::ERR_ABORTED';
    const ahead = r.headers().purpose === 'prefetch', live = r.url().includes('/_quire/live?');
    if (!(aborted && (ahead || live))) problems.push('failed: ' + r.url());
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

/*
 * A copy of vault-sample, changed by prepare(vaultPath), served, and
 * Chromium: runs fn(browser, base), then closes the browser, stops the
 * server and removes the copy, whatever fn did. Without Chromium, a
 * failed check says what is missing.
 */
export async function withSample(prepare, fn) {
  if (!chromium) {
    check(false, 'chromium is installed (scripts/setup installs it)');
    return;
  }
  const work = mkdtempSync(join(tmpdir(), 'quire-browser-'));
  const vault = join(work, 'vault');
  cpSync(join(root, 'vault-sample'), vault, { recursive: true });
  let proc = null, browser = null;
  try {
    prepare(vault);
    let base;
    ({ proc, base } = await serve(vault));
    browser = await launch();
    await fn(browser, base);
  } finally {
    if (browser) await browser.close();
    if (proc) await stop(proc);
    rmSync(work, { recursive: true, force: true });
  }
}
