/*
 * tests/browser/navigation.mjs: instant navigation (theme/js/navigation.js)
 * in a real browser.
 *
 *	node tests/browser/navigation.mjs    (meson runs it as "browser-navigation")
 *
 * On a copy of vault-sample with a few notes of its own (two long notes
 * that link each other, a folder of 60 notes so the explorer scrolls), it
 * checks that a click on an internal link puts the page in place without
 * a reload (a marker set on window survives) with its address, title and
 * content; that back and forward restore the page and its scroll
 * position; that the explorer keeps its open folders and its scroll and
 * marks the new page; that the search box keeps its text; that a link
 * with a fragment scrolls to its heading; that focus is on the main
 * content and the title is announced; that math is typeset on a page
 * reached this way, the /search page and the graph page work; that an
 * attachment link and a modified click are left to the browser; that
 * without JavaScript a click loads the page; axe-core on a page reached
 * by navigation; and no console error or failed request anywhere.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { check, summary } from '../lib/check.mjs';
import { axe, visit, watchedPage, withSample } from './lib.mjs';

const filler = (what, n) => Array.from({ length: n }, (_, i) =>
  `Paragraph ${i} of ${what}, long enough to take a line or two of the page, so that the note ` +
  'is taller than the window and its scroll position means something.').join('\n\n');

function main() {
  return withSample((vault) => {
    mkdirSync(join(vault, 'nav'));
    writeFileSync(join(vault, 'nav', 'start.md'),
      '---\ntitle: Start\n---\n# Start\n\nTo [[target|the target]], to [[formatting|a page with math]], to ' +
      '[[link-resolution]], to [[target#Far heading|the far heading]], to ' +
      '[[cheatsheet.pdf|a PDF]], and to [the search page](/search?q=links).\n\n' +
      filler('the start', 40) + '\n\n## Below\n\nFurther down, [[target|the target again]].\n\n' +
      filler('the end of the start', 20) + '\n');
    writeFileSync(join(vault, 'nav', 'target.md'),
      '---\ntitle: Target\n---\n# Target\n\nBack to [[start]].\n\n' + filler('the target', 40) +
      '\n\n## Far heading\n\nFar down the target.\n\n' + filler('the end of the target', 30) + '\n');
    mkdirSync(join(vault, 'many'));
    for (let i = 0; i < 60; i++)
      writeFileSync(join(vault, 'many', `m${String(i).padStart(2, '0')}.md`),
        `---\ntitle: Many ${i}\n---\n# Many ${i}\n\nA note of a folder of 60. See [[link-resolution]].\n`);
  }, run);
}

const path = (page) => new URL(page.url()).pathname;
/* the address became p, and the page shown is the one it names */
const reached = (page, p, h1) => page.waitForFunction((p, h1) => location.pathname === p &&
  document.querySelector('#quire-main h1') && document.querySelector('#quire-main h1').firstChild.textContent === h1,
{ timeout: 30000 }, p, h1).then(() => true, () => page.evaluate(() => [location.href,
  document.querySelector('#quire-main h1') && document.querySelector('#quire-main h1').textContent])
  .then((at) => console.error('  at ' + JSON.stringify(at)), () => {}).then(() => false));
/* at the top, the mouse away from links (a link's preview would cover others) */
const toTop = (page) => page.mouse.move(1300, 880)
  .then(() => new Promise((r) => setTimeout(r, 400)))
  .then(() => page.evaluate(() => scrollTo({ top: 0, behavior: 'instant' })));
/* whether a click on the element was taken by the script (default prevented), stopped in any case */
const taken = (page, selector, modifier) => page.evaluate(() => {
  window.__taken = null;
  addEventListener('click', (e) => {
    window.__taken = e.defaultPrevented;
    e.preventDefault();
  }, { once: true });
}).then(async () => {
  if (modifier) await page.keyboard.down(modifier);
  await page.click(selector);
  if (modifier) await page.keyboard.up(modifier);
  return page.evaluate(() => window.__taken);
});

async function run(browser, base) {
  const desk = await watchedPage(browser, base, 1400, 900);

  /* a click: the page in place, no reload */
  await visit(desk, base + '/nav/start');
  await desk.evaluate(() => { window.__marker = 'kept'; });
  await desk.type('header form.search input', 'kept words');
  await desk.waitForSelector('header .search-results .search-result', { visible: true, timeout: 5000 })
    .catch(() => null);
  await desk.$eval('header form.search input', (i) => i.blur()); /* its results fold */
  await desk.click('.note-body a[href="/nav/target"]');
  check(await reached(desk, '/nav/target', 'Target'), 'a click on an internal link shows its page at its address');
  const after = await desk.evaluate(() => ({
    marker: window.__marker,
    loads: performance.getEntriesByType('navigation').length,
    title: document.title,
    search: document.querySelector('header form.search input').value,
    focus: document.activeElement && document.activeElement.id,
    said: document.querySelector('.nav-announce') && document.querySelector('.nav-announce').textContent,
    top: scrollY,
  }));
  check(after.marker === 'kept' && after.loads === 1, 'without a reload (a marker on window survives): ' +
    JSON.stringify(after));
  check(/^Target/.test(after.title), 'the title is the new page\'s: ' + after.title);
  check(after.search === 'kept words', 'the search box keeps its text: ' + after.search);
  check(after.focus === 'quire-main', 'focus is on the main content: ' + after.focus);
  check(after.said === after.title, 'the new title is announced: ' + after.said);
  check(after.top === 0, 'a new page starts at the top: ' + after.top);

  /* back and forward: the page and where it was read */
  await desk.evaluate(() => scrollTo({ top: 700, behavior: 'instant' }));
  const targetY = await desk.evaluate(() => scrollY);
  await desk.goBack();
  check(await reached(desk, '/nav/start', 'Start'), 'back shows the previous page');
  await desk.evaluate(() => scrollTo({ top: 0, behavior: 'instant' }));
  await desk.evaluate(() => document.querySelector('#below').scrollIntoView({ behavior: 'instant' }));
  const startY = await desk.evaluate(() => scrollY);
  await desk.click('#below + p a[href="/nav/target"]');
  check(await reached(desk, '/nav/target', 'Target'), 'a second click shows the target again');
  await desk.evaluate(() => scrollTo({ top: 1200, behavior: 'instant' }));
  await desk.goBack();
  check(await reached(desk, '/nav/start', 'Start'), 'back again');
  const backY = await desk.evaluate(() => scrollY);
  check(startY > 0 && Math.abs(backY - startY) <= 2, `back restores the scroll position (${startY}, at ${backY})`);
  await desk.goForward();
  check(await reached(desk, '/nav/target', 'Target'), 'forward shows the next page');
  const fwdY = await desk.evaluate(() => scrollY);
  check(Math.abs(fwdY - 1200) <= 2, `forward restores its scroll position (1200, at ${fwdY})`);
  check(targetY === 700, 'the first visit of the target scrolled as asked: ' + targetY);
  check(await desk.evaluate(() => window.__marker) === 'kept', 'back and forward did not reload');

  /* a link with a fragment scrolls to its heading */
  await desk.goBack();
  check(await reached(desk, '/nav/start', 'Start'), 'back to the start');
  await toTop(desk); /* the theme scrolls smoothly: puppeteer would click while it moves */
  await desk.click('.note-body a[href="/nav/target#far-heading"]');

  check(await reached(desk, '/nav/target', 'Target'), 'a link with a fragment shows its page');
  const far = await desk.evaluate(() => ({
    hash: location.hash, y: scrollY,
    top: document.getElementById('far-heading').getBoundingClientRect().top,
  }));
  check(far.hash === '#far-heading' && far.y > 0 && far.top >= 0 && far.top < 200,
    'and scrolls to the heading: ' + JSON.stringify(far));

  /* math on a page reached by navigation */
  await desk.goBack();
  check(await reached(desk, '/nav/start', 'Start'), 'back to the start once more');
  check(await desk.evaluate(() => !window.katex), 'the start has no KaTeX');
  await toTop(desk);
  await desk.click('.note-body a[href="/writing/formatting"]');
  check(await reached(desk, '/writing/formatting', 'Formatting'), 'a page with math shows');
  const maths = await desk.waitForFunction(() => {
    const m = document.querySelectorAll('.note-body .math');
    return m.length && [...m].every((x) => x.querySelector('.katex')) && m.length;
  }, { timeout: 20000 }).then((h) => h.jsonValue(), () => 0);
  check(maths >= 4, 'its math is typeset by KaTeX, loaded on the way: ' + maths);
  await axe(desk, 'a page with math reached by navigation');
  check(await desk.evaluate(() => window.__marker) === 'kept', 'still the same document');

  /* what is left to the browser, and what is not */
  await visit(desk, base + '/nav/start');
  check(await taken(desk, '.note-body a.attachment') === false, 'a click on an attachment is not taken');
  check(await taken(desk, '.note-body a[href="/nav/target"]', 'Control') === false, 'nor a ctrl-click');
  check(await taken(desk, '.note-body a[href="/nav/target"]', 'Shift') === false, 'nor a shift-click');
  check(path(desk) === '/nav/start', 'none of them left the page');
  check(await taken(desk, '.note-body a[href="/nav/target"]') === true, 'a plain click on a link to a page is');
  check(await reached(desk, '/nav/target', 'Target'), 'and shows it');
  await visit(desk, base + '/nav/start');

  /* the /search page and the graph page, reached by navigation */
  await desk.evaluate(() => { window.__marker = 'again'; });
  await desk.click('.note-body a[href="/search?q=links"]');
  check(await reached(desk, '/search', 'Search: links'), 'the search page shows in place');
  const found = await desk.evaluate(() => ({
    results: document.querySelectorAll('ol.search-page-results > li').length,
    live: document.querySelector('main input[name="q"]').getAttribute('role'),
  }));
  check(found.results > 0 && found.live === 'combobox', 'with its results, and its box searches as you type: ' +
    JSON.stringify(found));
  await desk.click('.site-footer a[href$="/_quire/graph"]');
  const drawn = await desk.waitForFunction(() => location.pathname === '/_quire/graph' &&
    document.querySelectorAll('.graph-global a.graph-node').length, { timeout: 20000 })
    .then((x) => x.jsonValue(), () => 0);
  check(drawn > 50 && await desk.evaluate(() => window.__marker) === 'again',
    'the graph page shows in place and draws its notes: ' + drawn);

  /* the explorer: its open folders, its scroll, the mark */
  await visit(desk, base + '/many/m05');
  await desk.waitForSelector('.explorer a[aria-current="page"]', { timeout: 5000 }).catch(() => null);
  await desk.click('.explorer .tree-folder > .tree-row > button[aria-label="Toggle design"]');
  await desk.waitForSelector('.explorer a[href="/design/invariants"]', { timeout: 5000 }).catch(() => null);
  await desk.evaluate(() => { document.querySelector('.explorer').scrollTop = 250; });
  const pick = await desk.evaluate(() => {
    const nav = document.querySelector('.explorer'), box = nav.getBoundingClientRect();
    const a = [...nav.querySelectorAll('a[href^="/many/m"]')].find((x) => {
      const r = x.getBoundingClientRect();
      return r.top > box.top + 20 && r.bottom < box.bottom - 20 && !x.hasAttribute('aria-current');
    });
    return { href: a && a.getAttribute('href'), scroll: nav.scrollTop };
  });
  check(pick.href && pick.scroll === 250, 'the explorer scrolls, a note of it in sight: ' + JSON.stringify(pick));
  await desk.click(`.explorer a[href="${pick.href}"]`);
  const n = Number(pick.href.slice(-2));
  check(await reached(desk, pick.href, 'Many ' + n), 'a click in the explorer shows the note in place');
  /* the mark moves in an onPage() hook, which may wait for the folder's document */
  await desk.waitForFunction((href) => [...document.querySelectorAll('.explorer a[aria-current="page"]')]
    .map((a) => a.getAttribute('href')).join() === href, { timeout: 30000 }, pick.href).catch(() => {});
  const tree = await desk.evaluate(() => ({
    scroll: document.querySelector('.explorer').scrollTop,
    design: document.querySelector('.explorer button[aria-label="Toggle design"]').getAttribute('aria-expanded'),
    current: [...document.querySelectorAll('.explorer a[aria-current="page"]')].map((a) => a.getAttribute('href')),
  }));
  check(tree.scroll === pick.scroll, `the explorer keeps its scroll (${pick.scroll}, at ${tree.scroll})`);
  check(tree.design === 'true', 'and the folder the reader opened');
  check(JSON.stringify(tree.current) === JSON.stringify([pick.href]), 'and marks the new page: ' +
    JSON.stringify(tree.current));
  check(await desk.evaluate(() => document.querySelector('.explorer button[aria-label="Toggle reference"]')
    .getAttribute('aria-expanded')) === 'false', 'the reference folder is closed');
  await desk.click('.note-body a[href="/reference/link-resolution"]');
  check(await reached(desk, '/reference/link-resolution', 'Link resolution'), 'a note of another folder shows');
  /*
   * The folder is opened at once and the mark moves once the folder's
   * document is read: wait for both, not for the first moment the folder
   * is open (the old mark is still there then, when the document takes a
   * request).
   */
  const marked = () => {
    const a = document.querySelector('.explorer a[aria-current="page"]');
    return { open: document.querySelector('.explorer button[aria-label="Toggle reference"]')
      .getAttribute('aria-expanded'), mark: a && a.getAttribute('href') };
  };
  await desk.waitForFunction(() => {
    const a = document.querySelector('.explorer a[aria-current="page"]');
    return a && a.getAttribute('href') === '/reference/link-resolution' &&
      document.querySelector('.explorer button[aria-label="Toggle reference"]').getAttribute('aria-expanded') === 'true';
  }, { timeout: 30000 }).catch(() => {});
  const opened = await desk.evaluate(marked);
  check(opened.open === 'true' && opened.mark === '/reference/link-resolution',
    'the explorer opens its folder and marks it: ' + JSON.stringify(opened));
  await axe(desk, 'a note reached by navigation');

  check(desk.problems.length === 0, 'no console error, failed or outside request: ' +
    JSON.stringify(desk.problems.slice(0, 5)));

  /* without JavaScript, a link is a link */
  const plain = await watchedPage(browser, base, 1400, 900);
  await plain.setJavaScriptEnabled(false);
  await visit(plain, base + '/nav/start');
  await Promise.all([plain.waitForNavigation({ waitUntil: 'load' }),
    plain.click('.note-body a[href="/nav/target"]')]);
  const loaded = await plain.evaluate(() => ({
    path: location.pathname, h1: document.querySelector('h1').textContent,
    scripted: document.documentElement.classList.contains('js'),
  }));
  check(loaded.path === '/nav/target' && loaded.h1 === 'Target' && !loaded.scripted,
    'without JavaScript a click loads the page: ' + JSON.stringify(loaded));
  check(plain.problems.length === 0, 'without JavaScript: no failed request: ' +
    JSON.stringify(plain.problems.slice(0, 5)));
}

main()
  .catch((e) => check(false, 'the run finished: ' + (e && e.stack || e)))
  .finally(() => {
    process.exit(summary());
  });
