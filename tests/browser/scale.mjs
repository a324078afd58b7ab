/*
 * tests/browser/scale.mjs: the explorer and the graph at scale, in Chromium.
 *
 *	node tests/browser/scale.mjs        (meson runs it as the "browser-scale" test)
 *
 * Three vaults, generated here, each served by the real `quire serve`:
 * - vault-sample with a folder of 1,000 notes: the folder opens with one
 *   request for its document, every note is reachable by scrolling the
 *   explorer, the pages of it not yet fetched hold their height and come
 *   when scrolled near, names are not cut off;
 * - 173 linked notes: the graph page shows labels, no two overlapping;
 *   axe-core finds no serious or critical violation; every note is a
 *   focusable link, and Enter on one opens it;
 * - 10,000 linked notes: the graph renders on one canvas, its layout ran
 *   in slices of bounded work (window.__quireGraphStats) and frames were
 *   drawn while it ran (a requestAnimationFrame loop counts them). The
 *   long tasks seen are printed, never asserted on.
 *
 * Prints "N passed, N failed"; exits 1 on a failure.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { check, summary } from '../lib/check.mjs';
import { stop } from '../lib/proc.mjs';
import { axe, chromium, launch, root, serve, visit, watchedPage } from './lib.mjs';

const WORDS = ['alpha', 'river', 'stone', 'garden', 'signal', 'harbour', 'lantern', 'meadow', 'copper', 'orbit'];

/* n linked notes in ten folders: each links three others, every 25th is a hub many link to */
export function linkedVault(dir, n) {
  const title = (i) => `Note ${i} ${WORDS[i % 10]} ${WORDS[(i * 7) % 10]}`;
  for (let f = 0; f < 10; f++) mkdirSync(join(dir, 'f' + f), { recursive: true });
  for (let i = 0; i < n; i++) {
    const links = [(i * 7 + 3) % n, (i * 13 + 5) % n, Math.floor(i / 25) * 25 % n]
      .filter((j) => j !== i).map((j) => `[[${title(j)}]]`).join(', ');
    writeFileSync(join(dir, 'f' + (i % 10), title(i) + '.md'),
      `# ${title(i)}\n\nA note about quire, linking ${links}.\n`);
  }
}

async function withServer(vault, fn) {
  const { proc, base } = await serve(vault);
  const browser = await launch();
  try {
    await fn(browser, base);
  } finally {
    await browser.close();
    await stop(proc);
  }
}

async function explorer(browser, base) {
  const page = await watchedPage(browser, base, 1400, 900);
  const trees = [];
  page.on('request', (r) => {
    const p = new URL(r.url()).pathname;
    if (p.startsWith('/_quire/tree')) trees.push(p);
  });
  check(await visit(page, base + '/') === 200, 'the home page answers 200');
  const toggle = '.explorer .tree-folder > .tree-row > button[aria-label="Toggle many"]';
  await page.waitForSelector(toggle, { timeout: 10000 }).catch(() => null);
  check(await page.$(toggle) !== null, 'the explorer shows the folder of 1,000 notes');
  if (!await page.$(toggle)) return;
  trees.length = 0;
  await page.click(toggle);
  await page.waitForSelector('.explorer a[href^="/many/m"]', { timeout: 10000 }).catch(() => null);
  await new Promise((r) => setTimeout(r, 300));
  const opened = trees.filter((p) => p.startsWith('/_quire/tree/many'));
  check(opened.length === 1 && trees.length === 1,
    `opening the folder costs one request for its document (${trees.join(' ')})`);
  const first = await page.evaluate(() => {
    const ul = document.querySelector('.explorer a[href^="/many/m"]').closest('ul');
    const pending = [...ul.querySelectorAll(':scope > .tree-pending')];
    return {
      rows: ul.querySelectorAll(':scope > .tree-note').length,
      pending: pending.reduce((s, li) => s + Number(li.dataset.notes), 0),
      tall: pending.every((li) => li.getBoundingClientRect().height >= Number(li.dataset.notes) * 20),
    };
  });
  console.log(`  the folder opened with ${first.rows} rows and ${first.pending} notes in pages not fetched yet`);
  check(first.rows + first.pending === 1000, `rows and pages to come hold the 1,000 notes (${first.rows} + ${first.pending})`);
  check(first.tall, 'a page not fetched yet holds the height of its notes');
  /* scroll the explorer to the end, a screen at a time, noting every row seen in view */
  const seen = await page.evaluate(async () => {
    const nav = document.getElementById('quire-explorer');
    const names = new Set();
    let cut = 0;
    for (let i = 0; i < 2000; i++) {
      const box = nav.getBoundingClientRect();
      for (const a of nav.querySelectorAll('a[href^="/many/m"]')) {
        const r = a.getBoundingClientRect();
        if (r.bottom > box.top && r.top < box.bottom) {
          names.add(a.getAttribute('href'));
          if (a.scrollWidth > a.clientWidth + 1) cut++;
        }
      }
      if (nav.scrollTop + nav.clientHeight >= nav.scrollHeight - 1 &&
          !nav.querySelector('.tree-pending')) break;
      nav.scrollTop += nav.clientHeight * 0.8;
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 30)));
    }
    return { names: names.size, cut };
  });
  check(seen.names === 1000, `every note of the folder comes into view by scrolling (${seen.names})`);
  check(seen.cut === 0, `no name is cut off (${seen.cut})`);
  const more = trees.filter((p) => p.startsWith('/_quire/tree-more/many/')).length;
  check(more === (first.pending ? new Set(trees.filter((p) => p.startsWith('/_quire/tree-more/'))).size : 0),
    `each page of the folder is fetched once, when scrolled near (${more})`);
  check(page.problems.length === 0, 'explorer: no console error or failed request: ' + page.problems.join('; '));
  await page.close();
}

/* Two labels overlap: their boxes share more than half a pixel each way. */
function overlaps(boxes) {
  let n = 0;
  for (let i = 0; i < boxes.length; i++)
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.x + a.w - 0.5 > b.x && b.x + b.w - 0.5 > a.x && a.y + a.h - 0.5 > b.y && b.y + b.h - 0.5 > a.y) n++;
    }
  return n;
}

async function smallGraph(browser, base) {
  const page = await watchedPage(browser, base, 1400, 900);
  check(await visit(page, base + '/_quire/graph') === 200, 'the graph page answers 200');
  await page.waitForSelector('.graph-global[data-drawn]', { timeout: 60000 }).catch(() => null);
  await page.mouse.move(2, 2);
  const labels = await page.$$eval('.graph-node.labelled text', (ts) => ts.map((t) => {
    const r = t.getBoundingClientRect();
    return { x: r.x, y: r.y, w: r.width, h: r.height };
  }));
  const nodes = await page.$$eval('a.graph-node', (as) => as.length);
  console.log(`  173 notes: ${labels.length} labels shown`);
  check(nodes === 173, `each of the 173 notes is a link in the graph (${nodes})`);
  check(labels.length >= 15, `the graph shows labels where they fit (${labels.length})`);
  check(overlaps(labels) === 0, `no two labels overlap (${overlaps(labels)} pairs do)`);
  /* zoomed in, more of them fit, still none overlapping */
  for (let i = 0; i < 3; i++) await page.click('.graph-tools button[aria-label="Zoom in"]');
  const zoomed = await page.$$eval('.graph-node.labelled text', (ts) => ts.map((t) => {
    const r = t.getBoundingClientRect();
    return { x: r.x, y: r.y, w: r.width, h: r.height };
  }));
  check(overlaps(zoomed) === 0, `zoomed in: no two labels overlap (${zoomed.length} shown)`);
  await axe(page, 'the graph page of 173 notes');
  /* from the keyboard: the graph, then its notes, one Tab each; Enter opens one */
  await page.evaluate(() => document.querySelector('.graph-svg').focus());
  await page.keyboard.press('Tab');
  const focused = await page.evaluate(() => {
    const a = document.activeElement;
    return a && a.matches('a.graph-node') ? a.getAttribute('href') : null;
  });
  check(focused !== null, 'Tab from the graph reaches a note');
  if (focused) {
    await Promise.all([page.waitForNavigation({ timeout: 10000 }).catch(() => null), page.keyboard.press('Enter')]);
    check(decodeURIComponent(new URL(page.url()).pathname) === decodeURIComponent(focused),
      `Enter opens the focused note (${page.url()})`);
  }
  check(page.problems.length === 0, 'graph of 173: no console error or failed request: ' + page.problems.join('; '));
  await page.close();
}

/* Counts frames, and long tasks, from before the page's script runs. */
const watchFrames = () => {
  window.__frames = { during: 0, all: 0, long: [] };
  const frame = () => {
    const s = window.__quireGraphStats;
    window.__frames.all++;
    if (s && s.slices > 0 && !s.laidOut) window.__frames.during++;
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  try {
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__frames.long.push(Math.round(e.duration)); })
      .observe({ type: 'longtask', buffered: true });
  } catch (e) { /* no long task timing */ }
};

async function bigGraph(browser, base) {
  const page = await watchedPage(browser, base, 1400, 900);
  await page.evaluateOnNewDocument(watchFrames);
  check(await visit(page, base + '/_quire/graph') === 200, 'the graph page of 10,000 notes answers 200');
  await page.waitForSelector('.graph-global[data-drawn]', { timeout: 240000 }).catch(() => null);
  await page.waitForFunction(() => document.querySelector('.graph-canvas[data-paints]'), { timeout: 10000 }).catch(() => null);
  const got = await page.evaluate(() => ({
    stats: window.__quireGraphStats || {},
    frames: window.__frames,
    elements: document.querySelectorAll('.graph-global *').length,
    canvases: document.querySelectorAll('.graph-global canvas').length,
  }));
  const s = got.stats;
  console.log(`  10,000 notes: ${s.slices} slices, at most ${s.maxSliceWork} node updates each (budget ${s.sliceBudget}), ` +
    `${s.ticks} ticks, ${got.frames.during} frames during the layout, ${s.labels} labels; ` +
    `long tasks (ms, not asserted): ${got.frames.long.slice(0, 30).join(' ') || 'none'}`);
  check(s.nodes === 10000 && s.laidOut === true, `the graph laid out the 10,000 notes (${s.nodes})`);
  check(s.drawnWith === 'canvas' && got.canvases === 1, `it is drawn on one canvas (${s.drawnWith})`);
  check(got.elements < 40, `the graph page holds a bounded number of elements (${got.elements})`);
  check(s.slices > 100 && s.maxSliceWork > 0 && s.maxSliceWork <= s.sliceBudget + s.sliceChunk - 1,
    `each slice of the layout does a bounded number of node updates (${s.maxSliceWork} <= ${s.sliceBudget} + ${s.sliceChunk} - 1)`);
  check(got.frames.during > 0, `frames are drawn while the layout runs (${got.frames.during})`);
  check(s.labels > 0, `labels are placed (${s.labels})`);
  /* the notes, for the keyboard and screen readers: a list of links */
  await page.click('.graph-list summary');
  /* the list is built on the details' toggle event, a task after the click */
  await page.waitForFunction(() => document.querySelectorAll('.graph-list a').length > 0, { timeout: 30000 })
    .catch(() => {});
  const listed = await page.$$eval('.graph-list a', (as) => as.length);
  check(listed === 10000, `the graph's notes are a list of links (${listed})`);
  check(page.problems.length === 0, 'graph of 10,000: no console error or failed request: ' + page.problems.join('; '));
  await page.close();
}

async function main() {
  if (!chromium) {
    check(false, 'chromium is installed (scripts/setup installs it)');
    return;
  }
  const work = mkdtempSync(join(tmpdir(), 'quire-scale-'));
  try {
    const sample = join(work, 'sample');
    cpSync(join(root, 'vault-sample'), sample, { recursive: true });
    mkdirSync(join(sample, 'many'));
    for (let i = 0; i < 1000; i++)
      writeFileSync(join(sample, 'many', `m${String(i).padStart(4, '0')}.md`),
        `# Many ${String(i).padStart(4, '0')} ${WORDS[i % 10]}\n\nA note of a folder of a thousand.\n`);
    await withServer(sample, explorer);
    const small = join(work, 'small');
    linkedVault(small, 173);
    await withServer(small, smallGraph);
    const big = join(work, 'big');
    linkedVault(big, 10000);
    await withServer(big, bigGraph);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/* run as a test, not when bench/graph-bench.mjs borrows linkedVault() */
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e) => check(false, 'the scale test ran: ' + (e && e.stack || e)))
    .finally(() => process.exit(summary()));
}
