/*
 * bench/page-weight.mjs: what each kind of page weighs in Chromium, and
 * when its DOMContentLoaded fires (docs/performance.md, "Page weight").
 *
 *	node bench/page-weight.mjs [--rounds=N] [--quick] [--json]
 *
 * Serves a copy of vault-sample with the notes tests/browser/weight.mjs
 * adds (tests/browser/weigh.mjs) with `$QUIRE_BIN serve` (default
 * build/quire; point it at another build to compare), and opens each page
 * in a fresh browser context (an empty cache), through the DevTools
 * protocol: the bytes the network carried (encodedDataLength: headers and
 * gzip bodies) for the HTML, for what every page shares (the theme's
 * files, publish.css, the icon, the explorer's documents), for the rest
 * (KaTeX, Mermaid, fonts, images), the
 * requests, and DOMContentLoaded from the navigation timing; the median
 * of --rounds (default 5; --quick: 1 round, no throttled profile).
 * Two network profiles: the loopback as it is, and 10 Mbit/s down with
 * 40 ms of latency (Network.emulateNetworkConditions), where the bytes a
 * page waits for show in its DOMContentLoaded. Pin it (taskset) as
 * bench/run does. Prints a Markdown table, or JSON lines with --json.
 * Audio is left to tests/browser/weight.mjs: DevTools does not report
 * what a media request read while the player holds it open, so there is
 * no byte count to print for it here.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stop } from '../tests/lib/proc.mjs';
import { launch, root, serve } from '../tests/browser/lib.mjs';
import { addWeightNotes, total, weigh, weighedPage } from '../tests/browser/weigh.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const a = args.find((x) => x.startsWith('--' + name + '='));
  return a ? Number(a.split('=')[1]) : dflt;
};
const quick = args.includes('--quick');
const json = args.includes('--json');
const rounds = quick ? 1 : opt('rounds', 5);

const PAGES = [
  ['plain note', '/weight/plain'],
  ['plain note, second view', '/weight/other', '/weight/plain'],
  ['math', '/weight/math'],
  ['diagram in the first screen', '/weight/near'],
  ['diagram below the fold', '/weight/far'],
  ['vault-sample formatting (math, 2 diagrams)', '/writing/formatting'],
];
const PROFILES = [
  ['loopback', null],
  ['10 Mbit/s, 40 ms', { offline: false, latency: 40, downloadThroughput: 10e6 / 8, uploadThroughput: 5e6 / 8 }],
];

const shared = (p) => /^\/_quire\/(quire\.|favicon|publish\.css|tree)/.test(p);
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function measure(browser, base, url, before, conditions) {
  const page = await weighedPage(browser, true);
  const cdp = await page.createCDPSession();
  if (conditions) await cdp.send('Network.emulateNetworkConditions', conditions);
  if (before) await weigh(page, base + before);
  const reqs = await weigh(page, base + url);
  const dcl = await page.evaluate(() => performance.getEntriesByType('navigation')[0].domContentLoadedEventStart);
  const all = reqs.concat(page.net.take());
  await page.done();
  const path = (r) => new URL(r.url).pathname;
  const html = all.filter((r) => path(r) === url);
  const common = all.filter((r) => shared(path(r)));
  return {
    requests: all.length, html: total(html), shared: total(common),
    other: total(all) - total(html) - total(common), total: total(all), dcl,
  };
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'quire-weight-bench-'));
  const vault = join(work, 'vault');
  cpSync(join(root, 'vault-sample'), vault, { recursive: true });
  addWeightNotes(vault);
  const { proc, base } = await serve(vault);
  const browser = await launch();
  const rows = [];
  try {
    for (const [profile, conditions] of quick ? PROFILES.slice(0, 1) : PROFILES) {
      for (const [name, url, before] of PAGES) {
        const runs = [];
        for (let i = 0; i < rounds; i++) runs.push(await measure(browser, base, url, before, conditions));
        const row = { page: name, url, profile, rounds };
        for (const k of Object.keys(runs[0])) row[k] = median(runs.map((r) => r[k]));
        rows.push(row);
      }
    }
  } finally {
    await browser.close();
    await stop(proc);
    rmSync(work, { recursive: true, force: true });
  }
  if (json) {
    rows.forEach((r) => console.log(JSON.stringify(r)));
    return;
  }
  const kb = (n) => (n / 1024).toFixed(1);
  console.log('| page | network | requests | HTML KB | shared KB | other KB | total KB | DOMContentLoaded ms |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  for (const r of rows)
    console.log(`| ${r.page} | ${r.profile} | ${r.requests} | ${kb(r.html)} | ${kb(r.shared)} | ` +
      `${kb(r.other)} | ${kb(r.total)} | ${Math.round(r.dcl)} |`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
