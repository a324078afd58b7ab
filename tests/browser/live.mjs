/*
 * tests/browser/live.mjs: live pages in a real browser (theme/js/live.js,
 * src/http/live.c).
 *
 *	node tests/browser/live.mjs          (meson runs it as "browser-live")
 *
 * Starts `$QUIRE_BIN serve` with live pages on and the sync API (a token
 * file) on a small vault, opens a long note in Chromium, scrolls it down
 * and leaves a marker on window. Then, through the sync API: a PUT
 * changes a paragraph, and the new text appears without a reload (the
 * marker is still there) at the same scroll position; a move follows to
 * the new URL (history.replaceState: the marker survives); a delete shows
 * a notice (role=status) and keeps the content. A page that navigates
 * away with its stream open, and the pages of an export, leave no console
 * error and no failed request.
 *
 * Prints "N passed, N failed"; exits 1 on a failure.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { check, summary } from '../lib/check.mjs';
import { stop } from '../lib/proc.mjs';
import { chromium, launch, quire, serve, watchedPage } from './lib.mjs';

const TOKEN = 'live-pages-test-token-0123456789';

function longNote(marker) {
  let s = '# Long\n\n';
  for (let i = 0; i < 80; i++) s += `Paragraph ${i} of a long note, long enough to scroll.\n\n`;
  return s + `The last paragraph says ${marker}.\n`;
}

async function api(base, method, path, body) {
  const r = await fetch(base + path, {
    method,
    headers: { Authorization: 'Bearer ' + TOKEN, 'Content-Type': 'application/octet-stream' },
    body,
  });
  await r.text();
  return r.status;
}

/* The number of open live streams, from /metrics (loopback may read it). */
async function streams(base) {
  const m = /quire_live_subscribers (\d+)/.exec(await (await fetch(base + '/metrics')).text());
  return m ? Number(m[1]) : -1;
}

/* The page, once the server counts its stream (want: the streams open then). */
async function opened(page, base, url, want) {
  await page.goto(url, { waitUntil: 'load' });
  for (let i = 0; i < 100 && await streams(base) < want; i++)
    await new Promise((r) => setTimeout(r, 100));
  check(await streams(base) >= want, `the page at ${url} opened its stream`);
}

async function run(browser, base, work) {
  const page = await watchedPage(browser, base, 1000, 600);
  await opened(page, base, base + '/long', 1);
  await page.evaluate(() => {
    window.liveMarker = 42;
    window.scrollTo(0, 900);
  });
  const y0 = await page.evaluate(() => window.scrollY);
  check(y0 > 500, 'the long note scrolls down');

  check(await api(base, 'PUT', '/api/v1/files/long.md', longNote('SECONDTEXT')) === 200,
    'the sync API takes the edit');
  const seen = await page.waitForFunction(
    () => document.getElementById('quire-main').textContent.includes('SECONDTEXT'),
    { timeout: 10000 }).then(() => true, () => false);
  check(seen, 'the changed paragraph appears without a reload');
  check(await page.evaluate(() => window.liveMarker) === 42, 'the page was not reloaded (its marker stayed)');
  const y1 = await page.evaluate(() => window.scrollY);
  check(Math.abs(y1 - y0) <= 1, `the scroll position stayed (${y0} then ${y1})`);

  check(await api(base, 'POST', '/api/v1/move', JSON.stringify({ from: 'long.md', to: 'moved/long.md' })) === 200,
    'the sync API moves the note');
  const followed = await page.waitForFunction(() => location.pathname === '/moved/long',
    { timeout: 10000 }).then(() => true, () => false);
  check(followed, 'a moved page follows to its new URL');
  check(await page.evaluate(() => window.liveMarker) === 42, 'following a move does not reload');

  /* the stream follows the new path: a delete there shows the notice */
  await new Promise((r) => setTimeout(r, 300));
  check(await api(base, 'DELETE', '/api/v1/files/moved/long.md') === 200, 'the sync API deletes the note');
  const notice = await page.waitForSelector('#quire-live-notice[role="status"]', { timeout: 10000 })
    .then(() => true, () => false);
  check(notice, 'a deleted page says so in a status notice');
  check(await page.evaluate(() => document.getElementById('quire-main').textContent.includes('SECONDTEXT')),
    'the deleted page stays readable');

  /* leaving a page with its stream open is no failure */
  await opened(page, base, base + '/other', 1);
  await page.goto(base + '/', { waitUntil: 'load' });
  await new Promise((r) => setTimeout(r, 300));
  check(page.problems.length === 0, 'no console error, no failed request: ' + page.problems.join('; '));
  await page.close();

  /* an export is served by anything but quire: its pages never ask */
  const exported = join(work, 'export');
  const ex = await new Promise((resolve) => {
    import('node:child_process').then(({ spawn }) => {
      const p = spawn(quire,
        ['export', '--vault', join(work, 'vault'), '--out', exported], { stdio: 'ignore' });
      p.on('exit', (code) => resolve(code));
    });
  });
  check(ex === 0, 'quire export runs');
  const { createServer } = await import('node:http');
  const { readFile } = await import('node:fs/promises');
  /* the export's files as nginx's try_files $uri $uri.html would serve them */
  const types = { '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml',
    '.json': 'application/json' };
  const files = createServer((req, res) => {
    let p = decodeURIComponent(req.url.split('?')[0]);
    if (p.endsWith('/')) p += 'index';
    const type = types[p.slice(p.lastIndexOf('.'))] || 'text/html';
    readFile(join(exported, p)).catch(() => readFile(join(exported, p + '.html')))
      .then((b) => {
        res.writeHead(200, { 'Content-Type': p.startsWith('/_quire/favicon') ? 'image/svg+xml' : type });
        res.end(b);
      }, () => {
        res.writeHead(404);
        res.end();
      });
  });
  await new Promise((r) => files.listen(0, '127.0.0.1', r));
  const exBase = `http://127.0.0.1:${files.address().port}`;
  const quiet = await watchedPage(browser, exBase, 1000, 600);
  await quiet.goto(exBase + '/other', { waitUntil: 'networkidle0' });
  const asked = await quiet.evaluate(() =>
    performance.getEntriesByType('resource').some((e) => e.name.includes('/_quire/live')));
  check(!asked, 'an exported page does not open a live stream');
  check(quiet.problems.length === 0, 'an exported page stays quiet: ' + quiet.problems.join('; '));
  await quiet.close();
  files.close();
}

async function main() {
  if (!chromium) {
    check(false, 'chromium is installed (scripts/setup installs it)');
    return;
  }
  const work = mkdtempSync(join(tmpdir(), 'quire-live-'));
  const vault = join(work, 'vault');
  await import('node:fs').then((fs) => fs.mkdirSync(vault));
  writeFileSync(join(vault, 'long.md'), longNote('FIRSTTEXT'));
  writeFileSync(join(vault, 'other.md'), '# Other\n\nAnother note of quire, [[long]].\n');
  writeFileSync(join(work, 'token'), TOKEN + '\n');
  const { proc, base } = await serve(vault, { live: true, args: ['--token-file', join(work, 'token')] });
  const browser = await launch();
  try {
    await run(browser, base, work);
  } finally {
    await browser.close();
    await stop(proc);
    rmSync(work, { recursive: true, force: true });
  }
}

main().then(() => process.exit(summary()), (e) => {
  console.error(e);
  process.exit(1);
});
