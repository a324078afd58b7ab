/*
 * tests/browser/weight.mjs: the weight budget of a page (issue 33), in
 * Chromium, by counting requests and the bytes the network carried
 * (tests/browser/weigh.mjs), never by time.
 *
 *	node tests/browser/weight.mjs       (meson runs it as the "browser-weight" test)
 *
 * On a copy of vault-sample with a few notes of its own (weigh.mjs):
 *  - a plain note costs its HTML plus what every page shares (the theme's
 *    stylesheet, script and icon, the vault's publish.css, the explorer's
 *    documents), and a second note brings only its HTML: the rest comes
 *    from the cache (immutable URLs) or is revalidated with no body;
 *  - a diagram far below the fold: Mermaid's script is not requested
 *    before DOMContentLoaded, nor at all until the diagram is scrolled
 *    near; then it is, and the diagram is drawn;
 *  - a diagram in the first screen is drawn, and DOMContentLoaded fired
 *    before the script was inserted (the order of events, not times);
 *    a page replaced in place (replacePage(), core.js) with another
 *    diagram draws it with the script already loaded, not loaded twice;
 *  - a page with math is typeset and every font it asks for answers 200;
 *  - an audio embed asks for metadata only (preload="metadata"), the
 *    browser fetched a range (206) and stopped reading once it had the
 *    metadata: no request for the file ran to its end, and the bytes it
 *    read are fewer than the file's size. (What the server sent is not
 *    counted: on the loopback, socket buffers of several MB take a whole
 *    file that the browser never reads.)
 * And in the static export (`quire export`, served as files), a diagram in
 * the first screen is drawn, its script inserted after DOMContentLoaded.
 * vault-sample has no video and there is no encoder here to make one: the
 * video embed's markup (preload="metadata") is checked by
 * tests/spec/embeds.txt, and its ranges are the same code as audio's.
 *
 * Prints the weights it measured, then "N passed, N failed".
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { check, summary } from '../lib/check.mjs';
import { stop } from '../lib/proc.mjs';
import { chromium, launch, quire, root, serve } from './lib.mjs';
import { addWeightNotes, total, weigh, weighedPage } from './weigh.mjs';

const path = (r) => new URL(r.url).pathname;
const isMermaid = (r) => /\/_quire\/vendor\/mermaid-[^/]+\/mermaid\.min\.js$/.test(path(r));
const drawn = (page, text) => page.waitForFunction((t) => [...document.querySelectorAll('pre.mermaid')]
  .some((p) => p.querySelector('svg') && p.textContent.includes(t)), { timeout: 30000 }, text)
  .then(() => true, () => false);
const settle = () => new Promise((r) => setTimeout(r, 500));

/* What every page shares: the theme's files, the icon, publish.css, the explorer's documents. */
function shared(r) {
  return /^\/_quire\/(quire\.[0-9a-f]+\.(css|js)|favicon[^/]*|publish\.css|tree\.json|tree(-more)?\/.+\.json)$/
    .test(path(r));
}

async function plain(browser, base) {
  const page = await weighedPage(browser, true);
  const first = await weigh(page, base + '/weight/plain');
  const html = first.find((r) => path(r) === '/weight/plain');
  const rest = first.filter((r) => r !== html);
  check(html && html.status === 200, 'the plain note answers');
  check(rest.every(shared), 'a plain note loads nothing but what every page shares: ' +
    JSON.stringify(rest.filter((r) => !shared(r)).map(path)));
  check(rest.every((r) => r.status === 200), 'each shared file answers 200');
  console.log(`  plain note, empty cache: ${first.length} requests, HTML ${html ? html.bytes : 0} B, ` +
    `shared ${total(rest)} B, total ${total(first)} B`);

  const second = await weigh(page, base + '/weight/other');
  const html2 = second.find((r) => path(r) === '/weight/other');
  const rest2 = second.filter((r) => r !== html2);
  check(html2 && html2.status === 200 && html2.bytes > 0, 'the second note answers');
  check(rest2.every((r) => r.body === 0), 'a second note brings only its HTML: nothing else has a body: ' +
    JSON.stringify(rest2.filter((r) => r.body > 0).map((r) => [path(r), r.body])));
  const theme = rest2.filter((r) => /^\/_quire\/quire\./.test(path(r)));
  check(theme.length === 2 && theme.every((r) => r.cached || r.bytes === 0),
    'the theme\'s stylesheet and script come from the cache, not the network: ' + JSON.stringify(theme));
  console.log(`  plain note, second view: ${second.length} requests, HTML ${html2 ? html2.bytes : 0} B, ` +
    `others ${total(rest2)} B (headers of revalidations)`);
  await page.done();
}

async function farDiagram(browser, base) {
  const page = await weighedPage(browser, true);
  const reqs = await weigh(page, base + '/weight/far');
  await settle();
  const before = reqs.concat(page.net.take());
  check(!before.some(isMermaid), 'a diagram far below the fold: Mermaid is not requested before it comes near');
  check((await page.order()).join() === 'DOMContentLoaded', 'nor inserted: ' + (await page.order()).join());
  check(await page.$eval('pre.mermaid', (p) => !p.querySelector('svg') && /flowchart/.test(p.textContent)),
    'until drawn, the diagram\'s source is shown as text');
  await page.$eval('pre.mermaid', (p) => p.scrollIntoView({ block: 'center' }));
  check(await drawn(page, 'End'), 'scrolled near, the diagram is drawn (an svg in its place)');
  const after = page.net.take();
  check(after.filter(isMermaid).length === 1 && after.find(isMermaid).status === 200,
    'Mermaid\'s script is requested once the diagram comes near');
  check(JSON.stringify(await page.order()) === '["DOMContentLoaded","mermaid script"]',
    'DOMContentLoaded fired before Mermaid\'s script was inserted: ' + (await page.order()).join());
  console.log(`  diagram below the fold: ${total(before)} B until scrolled near, ` +
    `${total(after)} B more once it is`);
  await page.done();
}

/*
 * The theme's script with replacePage() made reachable from the test: the
 * page replaced in place as instant navigation does it.
 */
async function exposeReplacePage(page) {
  await page.setRequestInterception(true);
  page.on('request', async (req) => {
    if (!/\/_quire\/quire\.[0-9a-f]+\.js$/.test(req.url())) return req.continue();
    const js = await (await fetch(req.url())).text();
    const end = js.lastIndexOf('})();');
    return req.respond({ status: 200, contentType: 'text/javascript',
      body: js.slice(0, end) + 'window.quireReplacePage = replacePage;\n' + js.slice(end) });
  });
}

async function nearDiagram(browser, base) {
  const page = await weighedPage(browser, true);
  const reqs = await weigh(page, base + '/weight/near');
  check(await drawn(page, 'End'), 'a diagram in the first screen is drawn');
  const all = reqs.concat(page.net.take());
  check(all.filter(isMermaid).length === 1, 'its page requests Mermaid\'s script once');
  check(JSON.stringify(await page.order()) === '["DOMContentLoaded","mermaid script"]',
    'DOMContentLoaded fired before Mermaid\'s script was inserted: ' + (await page.order()).join());
  check(await page.evaluate(() => ![...document.querySelectorAll('head script[src], link[rel=preload]')]
    .some((s) => /mermaid/.test(s.src || s.href) && !s.async)),
  'no blocking or deferred reference to Mermaid in the head');
  console.log(`  diagram in the first screen: ${all.length} requests, ${total(all)} B`);
  await page.done();

  /* replaced in place by a second page with a diagram: drawn with the script already there */
  const nav = await weighedPage(browser, true);
  await exposeReplacePage(nav);
  await weigh(nav, base + '/weight/near');
  check(await drawn(nav, 'End'), 'the first page\'s diagram is drawn');
  nav.net.take();
  const replaced = await nav.evaluate(async (u) => {
    const html = await (await fetch(u)).text();
    return window.quireReplacePage(new DOMParser().parseFromString(html, 'text/html'));
  }, base + '/weight/second');
  check(replaced === true, 'replacePage() put the second page in place');
  check(await drawn(nav, 'Finish'), 'the second page\'s diagram is drawn after the page is replaced in place');
  check(!nav.net.take().some(isMermaid) &&
    await nav.evaluate(() => document.querySelectorAll('script[src*="mermaid"]').length) === 1,
  'Mermaid\'s script is not loaded a second time');
  await nav.done();
}

async function math(browser, base) {
  const page = await weighedPage(browser, true);
  const reqs = await weigh(page, base + '/weight/math');
  const typeset = await page.evaluate(() => {
    const all = [...document.querySelectorAll('.note-body .math')];
    return [all.length, all.filter((m) => m.querySelector('.katex')).length];
  });
  check(typeset[0] >= 7 && typeset[0] === typeset[1], 'every formula is typeset: ' + typeset.join(' of '));
  const fonts = reqs.filter((r) => /\/fonts\//.test(path(r)));
  check(fonts.length >= 5 && fonts.every((r) => r.status === 200 && /\.woff2$/.test(path(r))),
    'every font the page asks for is a woff2 that answers 200: ' +
    JSON.stringify(fonts.map((r) => [path(r).replace(/.*\//, ''), r.status])));
  check(reqs.every((r) => r.status > 0 && r.status < 400),
    'no request of the page fails: ' + JSON.stringify(reqs.filter((r) => !(r.status > 0 && r.status < 400))
      .map((r) => [path(r), r.status])));
  console.log(`  math: ${reqs.length} requests (${fonts.length} fonts), ${total(reqs)} B`);
  await page.done();
}

async function audio(browser, base, size) {
  const page = await weighedPage(browser, true);
  const loaded = await weigh(page, base + '/weight/audio');
  check(await page.$eval('audio', (a) => a.getAttribute('preload')) === 'metadata',
    'an audio embed asks for metadata only (preload="metadata")');
  const duration = await page.waitForFunction(() => {
    const a = document.querySelector('audio');
    return a.readyState >= 1 && a.duration;
  }, { timeout: 20000 }).then((h) => h.jsonValue(), () => 0);
  check(Math.round(duration) === 240, 'the player knows its length (metadata loaded): ' + duration);
  await settle();
  const reqs = loaded.concat(page.net.take()).filter((r) => path(r) === '/attachments/long-tone.wav');
  check(reqs.some((r) => r.status === 206 && r.range), 'the browser fetched a byte range (206)');
  check(reqs.length > 0 && !reqs.some((r) => r.finished),
    'the player stopped reading once it had the metadata: no request for the audio ran to its end');
  await page.goto('about:blank'); /* the open request ends: what it read is reported */
  const got = total(reqs.concat(page.net.take().filter((r) => path(r) === '/attachments/long-tone.wav')));
  check(got < size, `bytes the browser read for the audio (${got}) are fewer than its size (${size})`);
  console.log(`  audio embed: ${got} B read of a ${size} B file, in ${reqs.length} requests`);
  await page.done();
}

/* The files of `quire export` as a static server answers them: /x is x.html or x/index.html. */
function serveExport(dir) {
  const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css',
    '.json': 'application/json', '.woff2': 'font/woff2', '.svg': 'image/svg+xml' };
  const server = createServer((req, res) => {
    const p = join(dir, decodeURIComponent(new URL(req.url, 'http://x').pathname));
    const file = [p, p + '.html', join(p, 'index.html')].find((f) => existsSync(f) && statSync(f).isFile());
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': types[extname(file)] || 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/* In the static export, with no quire in front: the diagram is drawn the same way. */
async function exported(browser, vault, work) {
  const out = join(work, 'export');
  const r = spawnSync(quire, ['export', '--vault', vault, '--out', out], { encoding: 'utf8' });
  check(r.status === 0, 'quire export: ' + r.stderr.slice(-300));
  const server = await serveExport(out);
  const page = await weighedPage(browser, true);
  await weigh(page, `http://127.0.0.1:${server.address().port}/weight/near`);
  check(await drawn(page, 'End'), 'in the static export, a diagram in the first screen is drawn');
  check(JSON.stringify(await page.order()) === '["DOMContentLoaded","mermaid script"]',
    'in the static export too, Mermaid\'s script comes after DOMContentLoaded');
  await page.done();
  await new Promise((resolve) => server.close(resolve));
}

async function main() {
  if (!chromium) {
    check(false, 'chromium is installed (scripts/setup installs it)');
    return;
  }
  const work = mkdtempSync(join(tmpdir(), 'quire-weight-'));
  const vault = join(work, 'vault');
  cpSync(join(root, 'vault-sample'), vault, { recursive: true });
  const size = addWeightNotes(vault);
  const { proc, base } = await serve(vault);
  const browser = await launch();
  try {
    await plain(browser, base);
    await farDiagram(browser, base);
    await nearDiagram(browser, base);
    await math(browser, base);
    await audio(browser, base, size);
    await exported(browser, vault, work);
  } finally {
    await browser.close();
    await stop(proc);
    rmSync(work, { recursive: true, force: true });
  }
}

main()
  .catch((e) => check(false, 'the run finished: ' + (e && e.stack || e)))
  .finally(() => process.exit(summary()));
