/*
 * tests/browser/explorer-wrap.mjs: names in the explorer wrap between
 * words, not inside them.
 *
 *	node tests/browser/explorer-wrap.mjs   (meson runs it as "browser-explorer-wrap")
 *
 * Serves a copy of vault-sample with notes named as PowerShell's
 * reference names them (Get-ItemPropertyValue,
 * Microsoft.PowerShell.Archive.CompressArchive...), three folders deep
 * as in pwsh-docs, and opens one in Chromium at desktop width and in the
 * phone drawer, where the explorer is narrowest. For each such name it
 * reads the line boxes the browser laid out (a Range on each character
 * of the link's text nodes, getClientRects) and asserts that every line
 * starts at a boundary: after '-', '.', '_' or '/', or at a CamelCase
 * word ("Property|Value", "HTTP|Server"); and that the long names do
 * wrap there, so the check sees real breaks. Before explorer.js gave the
 * names break opportunities, "Get-ItemPropertyValue" broke as
 * "Get-ItemPropertyV|alue".
 *
 * Prints "N passed, N failed"; exits 1 on a failure.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { check, summary } from '../lib/check.mjs';
import { visit, watchedPage, withSample } from './lib.mjs';

const folder = ['reference', '7.4', 'Microsoft.PowerShell.Management'];
const names = [
  'Get-ItemPropertyValue',
  'Microsoft.PowerShell.Archive.CompressArchive',
  'Set-PSReadLineKeyHandlerWithALongName',
  'about_Automatic_Variables_And_Preferences',
  'HTTPServerConfigurationSettings',
];

/* May a line start at s[i]? The same rule as breakableName() in theme/js/explorer.js. */
function boundary(s, i) {
  const a = s[i - 1], b = s[i], c = s[i + 1] || '';
  const lower = (x) => /\p{Ll}|\p{N}/u.test(x), upper = (x) => /\p{Lu}/u.test(x);
  return /[-._/\s]/.test(a) || /\s/.test(b) || (lower(a) && upper(b)) ||
    (upper(a) && upper(b) && /\p{Ll}/u.test(c));
}

/* For each name shown in the explorer: where its lines start (indices into the name). */
function lineStarts(page, wanted) {
  return page.evaluate((wanted) => {
    const out = {};
    for (const a of document.querySelectorAll('.explorer .tree a')) {
      const name = a.textContent;
      if (!wanted.includes(name)) continue;
      const starts = [];
      let top = null, at = 0;
      const walk = document.createTreeWalker(a, NodeFilter.SHOW_TEXT);
      for (let t = walk.nextNode(); t; t = walk.nextNode()) {
        for (let i = 0; i < t.data.length; i++, at++) {
          const r = document.createRange();
          r.setStart(t, i);
          r.setEnd(t, i + 1);
          const rect = r.getClientRects()[0];
          if (!rect) continue;
          if (top !== null && rect.top > top + 2) starts.push(at);
          top = rect.top;
        }
      }
      out[name] = starts;
    }
    return out;
  }, wanted);
}

async function checkWidth(page, what) {
  const starts = await lineStarts(page, names);
  check(Object.keys(starts).length === names.length,
    `${what}: the explorer shows every deep name: ` + JSON.stringify(Object.keys(starts)));
  let wrapped = 0;
  for (const [name, at] of Object.entries(starts)) {
    const bad = at.filter((i) => !boundary(name, i));
    check(bad.length === 0, `${what}: ${name} wraps only between words, not as ` +
      JSON.stringify(bad.map((i) => name.slice(0, i) + '|' + name.slice(i))));
    wrapped += at.length > 0;
  }
  check(wrapped >= 3, `${what}: the explorer is narrow enough that the long names wrap ` +
    `(${wrapped} of ${names.length} do)`);
  const cut = await page.$$eval('.explorer .tree a',
    (as) => as.filter((a) => a.scrollWidth > a.clientWidth + 1).map((a) => a.textContent));
  check(cut.length === 0, `${what}: no name in the explorer is cut off: ` + JSON.stringify(cut));
}

async function run(browser, base) {
  const url = base + '/' + folder.map((s) => s.toLowerCase()).join('/') + '/get-itempropertyvalue';
  const desk = await watchedPage(browser, base, 1280, 900);
  check(await visit(desk, url) === 200, 'the deep note answers 200');
  await desk.waitForSelector('.explorer a[aria-current="page"]', { timeout: 10000 }).catch(() => null);
  await checkWidth(desk, 'at 1280 px');
  check(desk.problems.length === 0, 'no console error, failed or outside request: ' +
    JSON.stringify(desk.problems.slice(0, 5)));

  const phone = await watchedPage(browser, base, 300, 700);
  await visit(phone, url);
  await phone.click('.nav-toggle');
  await phone.waitForSelector('.explorer a[aria-current="page"]', { visible: true, timeout: 10000 })
    .catch(() => null);
  await checkWidth(phone, 'in the drawer at 300 px');
  check(phone.problems.length === 0, 'phone: no console error, failed or outside request: ' +
    JSON.stringify(phone.problems.slice(0, 5)));
}

function prepare(vault) {
  const dir = join(vault, ...folder);
  mkdirSync(dir, { recursive: true });
  for (const n of names) writeFileSync(join(dir, n + '.md'), `A note named ${n}.\n`);
}

withSample(prepare, run)
  .catch((e) => check(false, 'the run finished: ' + (e && e.stack || e)))
  .finally(() => {
    process.exit(summary());
  });
