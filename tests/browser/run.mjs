/*
 * tests/browser/run.mjs: the reader's side of quire in a real browser.
 *
 *	node tests/browser/run.mjs          (meson runs it as the "browser" test)
 *
 * Starts the real `$QUIRE_BIN serve` on a copy of vault-sample (with a note
 * that opens with its own title, and a folder of 250 notes), and drives
 * Debian's Chromium (/usr/bin/chromium, installed by scripts/setup) through
 * the DevTools protocol with puppeteer-core (pinned in package-lock.json,
 * installed by scripts/setup with `npm ci`; nothing is fetched at run time).
 * It asserts on the DOM after the theme's script ran, as a reader would
 * meet it: breadcrumbs and folder links navigate, the explorer's folder
 * names are links, the table of contents is reachable at 375 px wide, the
 * title is not shown twice, typing a prefix in the search box shows
 * results, /search pages through them, the local graph shows a note's
 * neighbours and a second hop, the graph page draws every note and is
 * used by mouse and keyboard, dark mode switches, and on every
 * page: no console error, no failed request, no request leaving the
 * server. axe-core (pinned) checks the home page, a note, a tag page,
 * /search, a folder page and the graph page for serious or critical
 * violations.
 * Screenshots of a few pages at desktop and phone widths go to
 * $QUIRE_ARTIFACTS (default: build/browser-shots under the current
 * directory).
 *
 * Prints "N passed, N failed" like the C tests; exits 1 on a failure.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { check, summary } from '../lib/check.mjs';
import { axe, shots, visit, watchedPage, withSample } from './lib.mjs';

/* Diagrams are drawn as they come near the viewport (tests/browser/weight.mjs): brings each there. */
async function drawAll(page) {
  const n = await page.$$eval('pre.mermaid', (all) => all.length);
  for (let i = 0; i < n; i++) {
    await page.$$eval('pre.mermaid', (all, k) => all[k].scrollIntoView({ block: 'center' }), i);
    await page.waitForFunction((k) => document.querySelectorAll('pre.mermaid')[k].querySelector('svg'),
      { timeout: 20000 }, i).catch(() => {});
  }
  await page.evaluate(() => window.scrollTo(0, 0));
}

function prepare(vault) {
  writeFileSync(join(vault, 'writing', 'Repeated.md'),
    '# Repeated\n\nA note that opens with its own title.\n\n## First part\n\nText.\n\n' +
    '## Second part\n\nMore text.\n');
  writeFileSync(join(vault, 'writing', 'Microsoft.PowerShell.Archive.CompressArchiveWithAVeryLongName.md'),
    'A note whose name, its title, has no space to break at.\n');
  mkdirSync(join(vault, 'big'));
  for (let i = 0; i < 250; i++)
    writeFileSync(join(vault, 'big', `n${String(i).padStart(3, '0')}.md`),
      `# Big note ${i}\n\nA note of a big folder, number ${i}.\n`);
  mkdirSync(shots, { recursive: true });
}

/* 200, or 304 for a page already fetched ahead into the HTTP cache (theme/js/navigation.js) */
const answered = (status) => status === 200 || status === 304;

async function run(browser, base) {
  const desk = await watchedPage(browser, base, 1400, 900);

  /* a note: breadcrumbs, the explorer open on its folder, folder names as links */
  check(await visit(desk, base + '/writing/links') === 200, 'a note answers 200');
  const crumbs = await desk.$$eval('nav.breadcrumbs li', (li) => li.map((x) => x.textContent));
  check(JSON.stringify(crumbs) === JSON.stringify(['Home', 'writing', 'Links']),
    'breadcrumbs read Home, writing, Links: ' + JSON.stringify(crumbs));
  await desk.waitForSelector('.explorer a[aria-current="page"]', { timeout: 5000 })
    .catch(() => null);
  check(await desk.$('.explorer a[aria-current="page"]') !== null,
    'the explorer opens on the current note');
  const folderLinks = await desk.$$eval('.explorer .tree-folder > .tree-row > a',
    (a) => a.map((x) => x.getAttribute('href')));
  check(folderLinks.includes('/writing/') && folderLinks.includes('/big/'),
    'folder names in the explorer link to folder pages: ' + JSON.stringify(folderLinks));
  const cut = await desk.$$eval('.explorer .tree a', (as) =>
    as.filter((a) => a.scrollWidth > a.clientWidth + 1).map((a) => a.textContent));
  check(cut.length === 0, 'no name in the explorer is cut off: ' + JSON.stringify(cut));
  await desk.screenshot({ path: join(shots, 'note-desktop.png'), fullPage: false });
  await axe(desk, 'a note');

  /* the folder crumb navigates to the folder's listing */
  await Promise.all([desk.waitForNavigation({ waitUntil: 'networkidle0' }),
    desk.click('nav.breadcrumbs li:nth-child(2) a')]);
  check(new URL(desk.url()).pathname === '/writing/', 'the folder crumb leads to /writing/');
  check(await desk.$eval('h1', (h) => h.textContent) === 'writing', 'the folder page is titled');
  check((await desk.$$('.listing-items a')).length === 8, 'the folder page lists its 8 notes');
  await axe(desk, 'a folder page');

  /* a folder name in the explorer navigates too */
  await desk.waitForSelector('.explorer .tree-folder > .tree-row > a[href="/big/"]');
  await Promise.all([desk.waitForNavigation({ waitUntil: 'networkidle0' }),
    desk.click('.explorer .tree-folder > .tree-row > a[href="/big/"]')]);
  check(new URL(desk.url()).pathname === '/big/', 'a folder in the explorer leads to its page');

  /* the title once, the table of contents beside the text */
  await visit(desk, base + '/writing/repeated');
  const shownH1 = await desk.$$eval('h1', (hs) =>
    hs.filter((h) => getComputedStyle(h).display !== 'none').map((h) => h.textContent));
  check(JSON.stringify(shownH1) === JSON.stringify(['Repeated']),
    'a note opening with its title shows it once: ' + JSON.stringify(shownH1));
  const tocWide = await desk.evaluate(() => [
    getComputedStyle(document.querySelector('.toc-side')).display !== 'none',
    getComputedStyle(document.querySelector('.toc-folded')).display !== 'none']);
  check(tocWide[0] && !tocWide[1], 'on a wide screen the table of contents is beside the text');

  /* a tag page */
  check(await visit(desk, base + '/tags/') === 200, 'the tags page answers');
  const tagHref = await desk.$eval('.listing-items a', (a) => a.getAttribute('href'));
  check(answered(await visit(desk, base + tagHref)), 'a tag page answers');
  await axe(desk, 'a tag page');

  /* the home page, and typing a prefix into the search box */
  await visit(desk, base + '/');
  await axe(desk, 'the home page');
  await desk.screenshot({ path: join(shots, 'home-desktop.png') });
  await desk.type('header form.search input', 'wikil');
  const dropdown = await desk.waitForSelector('header .search-results .search-result',
    { visible: true, timeout: 5000 }).catch(() => null);
  check(dropdown !== null, 'typing a prefix ("wikil") shows results under the box');

  /* a typo is forgiven: the results for the word corrected, saying which word */
  await desk.click('header form.search input', { clickCount: 3 });
  await desk.type('header form.search input', 'calouts');
  const fixed = await desk.waitForSelector('header .search-corrected', { visible: true, timeout: 5000 })
    .catch(() => null);
  const found = await desk.$$eval('header .search-results a.search-result',
    (as) => as.slice(0, 5).map((a) => new URL(a.href).pathname));
  check(fixed !== null && (await fixed.evaluate((d) => d.textContent)) === 'Showing results for callouts' &&
    found.includes('/writing/callouts'),
    'a mistyped word ("calouts") shows "Showing results for callouts" and the Callouts note in the first five: ' +
    JSON.stringify(found));

  /* two typos in a word of seven letters: nothing found, a suggestion, and choosing it searches it */
  await desk.click('header form.search input', { clickCount: 3 });
  await desk.type('header form.search input', 'caluots');
  const hint = await desk.waitForSelector('header .search-suggestion', { visible: true, timeout: 5000 })
    .catch(() => null);
  check(hint !== null && (await hint.evaluate((a) => a.textContent)) === 'Did you mean callouts?',
    'a word mistyped twice ("caluots") gets "Did you mean callouts?"');
  if (hint) {
    await hint.click();
    check(await desk.waitForFunction(() =>
      document.querySelector('header form.search input').value === 'callouts' &&
      document.querySelector('header .search-results a.search-result:not(.search-suggestion)'),
    { timeout: 5000 }).then(() => true, () => false), 'choosing it shows its results');
  }

  /* /search: the query kept, a count, a next page */
  check(await visit(desk, base + '/search?q=the') === 200, '/search answers');
  check(await desk.$eval('main input[name="q"]', (i) => i.value) === 'the',
    '/search keeps the query in its box');
  const total = await desk.$eval('.search-total', (p) => p.textContent);
  check(/^Results 1 to 20 of \d+$/.test(total), '/search counts the results: ' + total);
  check((await desk.$$('ol.search-page-results > li')).length === 20, '/search shows 20 a page');
  await axe(desk, '/search');
  await Promise.all([desk.waitForNavigation({ waitUntil: 'networkidle0' }),
    desk.click('.search-pager a[rel="next"]')]);
  check(new URL(desk.url()).searchParams.get('page') === '2', 'Next leads to page 2');
  check(/^Results 21 to \d+ of \d+$/.test(await desk.$eval('.search-total', (p) => p.textContent)),
    'page 2 starts at the 21st result');

  /* the vault's publish.css (Obsidian Publish's custom CSS) styles a callout type of its own */
  check(answered(await visit(desk, base + '/writing/callouts')), 'the callouts note answers');
  const recipe = await desk.evaluate(() => {
    const c = document.querySelector('.callout[data-callout="recipe"]');
    const n = document.querySelector('.callout[data-callout="note"]');
    return c && n && [getComputedStyle(c).borderLeftColor, getComputedStyle(n).borderLeftColor];
  });
  check(recipe && recipe[0] === 'rgb(200, 110, 30)' && recipe[1] !== recipe[0],
    'a rule of the vault\'s publish.css colours its own callout type: ' + JSON.stringify(recipe));

  /* math typeset by KaTeX and diagrams drawn by Mermaid, served by quire itself */
  check(answered(await visit(desk, base + '/writing/formatting')), 'the formatting note answers');
  await drawAll(desk);
  const typeset = await desk.evaluate(() => {
    const maths = [...document.querySelectorAll('.note-body .math')];
    return {
      maths: maths.length,
      katex: maths.filter((m) => m.querySelector('.katex')).length,
      display: document.querySelectorAll('.note-body .katex-display').length,
      raw: maths.filter((m) => /^\\[([]/.test(m.textContent.trim())).length,
      dollars: /\$[^$]*\$/.test(document.querySelector('.note-body').innerText
        .replace(/`[^`]*`/g, '').split('\n').filter((l) => !/^\s*(The cost|\$\$)/.test(l))
        .join('\n').replace(/\$\.\.\.\$|\$\$\.\.\.\$\$/g, '')),
      svgs: document.querySelectorAll('.note-body pre.mermaid svg').length,
      nodes: document.querySelectorAll('.note-body pre.mermaid svg .node').length,
      scripts: [...document.scripts].map((x) => x.src).filter(Boolean),
    };
  });
  check(typeset.maths >= 4 && typeset.katex === typeset.maths && typeset.raw === 0,
    `every formula is typeset by KaTeX, none left as source: ${JSON.stringify(typeset)}`);
  check(typeset.display >= 1, 'display math is typeset as a block');
  check(typeset.svgs === 2 && typeset.nodes >= 9, `both mermaid diagrams are drawn (9 nodes): ${typeset.svgs}, ${typeset.nodes}`);
  /* nodes of class internal-link are links to the notes they name, as in Obsidian */
  await desk.waitForFunction(() => document.querySelector('pre.mermaid a.diagram-link'), { timeout: 10000 })
    .catch(() => {});
  const nodeLinks = await desk.evaluate(() => [...document.querySelectorAll('pre.mermaid a.diagram-link')]
    .map((a) => [a.textContent.replace(/\s+/g, ' ').trim(), a.getAttribute('href')]));
  check(JSON.stringify(nodeLinks) === JSON.stringify([['render-on-write', '/design/render-on-write'],
    ['invariants', '/design/invariants'], ['link-resolution', '/reference/link-resolution']]),
  'the diagram\'s internal-link nodes link their notes, the missing one does not: ' + JSON.stringify(nodeLinks));
  await Promise.all([desk.waitForNavigation({ waitUntil: 'networkidle0' }),
    desk.click('pre.mermaid a.diagram-link[href="/design/invariants"]')]);
  check(new URL(desk.url()).pathname === '/design/invariants', 'a click on a linked node opens its note');
  check([200, 304].includes(await visit(desk, base + '/writing/formatting')), 'the formatting note answers again');
  await drawAll(desk);
  check(typeset.scripts.every((u) => u.startsWith(base + '/_quire/')),
    'KaTeX and Mermaid come from quire itself: ' + JSON.stringify(typeset.scripts));
  await desk.screenshot({ path: join(shots, 'math-diagram-desktop.png'), fullPage: true });
  const fill = () => desk.evaluate(() => {
    const r = document.querySelector('pre.mermaid svg .node rect, pre.mermaid svg .node polygon');
    return r ? getComputedStyle(r).fill : '';
  });
  const fillBefore = await fill();
  await desk.click('.theme-toggle');
  await desk.waitForFunction((f) => {
    const r = document.querySelector('pre.mermaid svg .node rect, pre.mermaid svg .node polygon');
    return r && getComputedStyle(r).fill !== f;
  }, { timeout: 10000 }, fillBefore).catch(() => {});
  const fillAfter = await fill();
  check(fillAfter !== '' && fillAfter !== fillBefore,
    `the diagram is drawn again in the other colour scheme (${fillBefore} -> ${fillAfter})`);
  await desk.click('.theme-toggle'); /* back as it was */
  await axe(desk, 'a note with math and a diagram');
  await visit(desk, base + '/writing/links');
  check(await desk.evaluate(() => [...document.scripts].every((x) => !/vendor/.test(x.src))),
    'a note without math or diagrams loads neither KaTeX nor Mermaid');

  /* code highlighted by the server: without script, in colours of its own */
  await desk.setJavaScriptEnabled(false);
  check(answered(await visit(desk, base + '/reference/quire-yml')), 'the quire.yml note answers');
  const code = await desk.evaluate(() => {
    const block = document.querySelector('code.language-yaml');
    const key = block && block.querySelector('.hl-a');
    const comment = block && block.querySelector('.hl-c');
    return {
      key: key ? key.textContent : null,
      keyColour: key ? getComputedStyle(key).color : null,
      plainColour: block ? getComputedStyle(block).color : null,
      comment: comment ? getComputedStyle(comment).fontStyle : null,
    };
  });
  await desk.setJavaScriptEnabled(true);
  check(code.key && code.keyColour !== code.plainColour && code.comment === 'italic',
    'a YAML block is highlighted with JavaScript off (keys coloured, comments in italics): ' +
    JSON.stringify(code));
  await visit(desk, base + '/reference/quire-yml');
  await axe(desk, 'a note with highlighted code');

  /* the graph: a note's neighbours below it, a second hop, a click opens a note */
  await visit(desk, base + '/writing/links');
  await desk.evaluate(() => document.querySelector('.graph-local').scrollIntoView());
  await desk.waitForFunction(() => document.querySelectorAll('.graph-local a.graph-node').length > 0 &&
    !/Reading/.test(document.querySelector('.graph-local .graph-status').textContent), { timeout: 10000 })
    .catch(() => null);
  await new Promise((r) => setTimeout(r, 500)); /* the neighbours' titles are read once in view */
  const local = await desk.evaluate(() => {
    const nodes = [...document.querySelectorAll('.graph-local a.graph-node')];
    const path = (u) => decodeURIComponent(new URL(u, location.href).pathname);
    const hrefs = new Set(nodes.map((a) => path(a.getAttribute('href'))));
    const linked = [...document.querySelectorAll('.note-body a.internal:not(.broken):not(.attachment), .backlinks a')]
      .map((a) => path(a.getAttribute('href'))).filter((p) => p !== location.pathname);
    const current = document.querySelector('.graph-local a.graph-node.current');
    return {
      nodes: nodes.length,
      current: current && current.getAttribute('href'),
      missing: linked.filter((p) => !hrefs.has(p)),
      extra: [...hrefs].filter((p) => p !== location.pathname && !linked.includes(p)),
      labels: nodes.map((a) => a.textContent),
      status: document.querySelector('.graph-local .graph-status').textContent,
    };
  });
  check(local.nodes >= 5 && local.current === '/writing/links' && !local.missing.length &&
    !local.extra.length, 'the local graph shows the note, every note it links to and every note ' +
    'linking to it, and nothing else: ' + JSON.stringify(local));
  check(local.labels.includes('Link resolution') && !local.labels.includes('link-resolution'),
    'its nodes are named by the notes\' titles, not the links\' text: ' + JSON.stringify(local.labels));
  await desk.click('.graph-local .graph-hops');
  await desk.waitForFunction((n) => document.querySelectorAll('.graph-local a.graph-node').length > n,
    { timeout: 10000 }, local.nodes).catch(() => null);
  const hops = await desk.$$eval('.graph-local a.graph-node', (a) => a.length);
  check(hops > local.nodes, `two hops show more notes (${local.nodes} -> ${hops})`);
  await desk.screenshot({ path: join(shots, 'graph-local-desktop.png'), fullPage: true });
  const target = await desk.$eval('.graph-local a.graph-node:not(.current)', (a) => a.getAttribute('href'));
  await Promise.all([desk.waitForNavigation({ waitUntil: 'networkidle0' }),
    desk.click(`.graph-local a.graph-node[href="${target}"] circle`)]);
  check(new URL(desk.url()).pathname === target, 'a click on a node of the graph opens its note: ' + target);

  /* the whole graph: every note, by keyboard too */
  const footerGraph = await desk.$eval('.site-footer a[href$="/_quire/graph"]', (a) => a.getAttribute('href'))
    .catch(() => null);
  check(footerGraph === '/_quire/graph', 'every page links the graph page in its footer');
  check(answered(await visit(desk, base + '/_quire/graph')), 'the graph page answers');
  await desk.waitForFunction(() => /links$/.test(document.querySelector('.graph-global .graph-status').textContent),
    { timeout: 20000 }).catch(() => null);
  const whole = await desk.evaluate(() => ({
    status: document.querySelector('.graph-global .graph-status').textContent,
    nodes: document.querySelectorAll('.graph-global a.graph-node').length,
    edges: (document.querySelector('.graph-global .graph-edges').getAttribute('d').match(/M/g) || []).length,
  }));
  const notes = Number((/^([\d,]+) notes/.exec(whole.status) || [0, '0'])[1].replace(/,/g, ''));
  check(notes >= 270 && whole.nodes === notes && whole.edges >= 50,
    'the graph page draws every note and the links between them: ' + JSON.stringify(whole));
  const box = await desk.$eval('.graph-global .graph-svg', (s) => s.getAttribute('viewBox'));
  await desk.click('.graph-global .graph-button[aria-label="Zoom in"]');
  const zoomed = await desk.$eval('.graph-global .graph-svg', (s) => s.getAttribute('viewBox'));
  check(Number(zoomed.split(' ')[2]) < Number(box.split(' ')[2]), `zoom in narrows the view (${box} -> ${zoomed})`);
  await desk.evaluate(() => document.querySelector('.graph-global .graph-svg').focus());
  await desk.keyboard.press('ArrowRight');
  const panned = await desk.$eval('.graph-global .graph-svg', (s) => s.getAttribute('viewBox'));
  check(Number(panned.split(' ')[0]) > Number(zoomed.split(' ')[0]), 'the arrow keys move the view');
  await desk.screenshot({ path: join(shots, 'graph-desktop.png') });
  await axe(desk, 'the graph page');
  await desk.keyboard.press('Tab');
  const focused = await desk.evaluate(() => document.activeElement.getAttribute('href'));
  await Promise.all([desk.waitForNavigation({ waitUntil: 'networkidle0' }), desk.keyboard.press('Enter')]);
  check(focused && new URL(desk.url()).pathname === focused,
    'Tab reaches a note of the graph and Enter opens it: ' + focused);

  /* dark mode */
  await visit(desk, base + '/writing/links');
  const before = await desk.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const was = await desk.evaluate(() => document.documentElement.dataset.theme || '');
  await desk.click('.theme-toggle');
  const after = await desk.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const now = await desk.evaluate(() => document.documentElement.dataset.theme || '');
  check(now !== was && (now === 'dark' || now === 'light') && after !== before,
    `the theme toggle switches the colours (${was || 'system'} ${before} -> ${now} ${after})`);
  await desk.screenshot({ path: join(shots, 'note-desktop-toggled.png') });
  await axe(desk, 'a note in the other colour scheme');

  check(desk.problems.length === 0, 'desktop pages: no console error, failed or outside request: ' +
    JSON.stringify(desk.problems.slice(0, 5)));

  /* a phone: the table of contents folded before the text, and it opens */
  const phone = await watchedPage(browser, base, 375, 740);
  await visit(phone, base + '/writing/repeated');
  const tocNarrow = await phone.evaluate(() => {
    const folded = document.querySelector('.toc-folded');
    const body = document.querySelector('.note-body');
    return [getComputedStyle(document.querySelector('.toc-side')).display === 'none',
      getComputedStyle(folded).display !== 'none',
      folded.getBoundingClientRect().top < body.getBoundingClientRect().top,
      folded.getBoundingClientRect().top < window.innerHeight];
  });
  check(tocNarrow.every(Boolean), 'at 375 px the table of contents is folded before the text, ' +
    'on the first screen: ' + JSON.stringify(tocNarrow));
  await phone.click('.toc-folded > summary');
  const link = await phone.$('.toc-folded a[href="#second-part"]');
  check(link !== null && await link.isVisible(), 'opening it shows the headings');
  if (link) {
    await link.click();
    await new Promise((r) => setTimeout(r, 300));
    check(await phone.evaluate(() => location.hash) === '#second-part', 'and a heading is reached');
  }
  await phone.screenshot({ path: join(shots, 'note-phone.png') });
  await visit(phone, base + '/');
  await phone.screenshot({ path: join(shots, 'home-phone.png') });
  await visit(phone, base + '/_quire/graph');
  await phone.waitForSelector('.graph-global a.graph-node', { timeout: 20000 }).catch(() => null);
  await phone.screenshot({ path: join(shots, 'graph-phone.png') });
  check(await phone.evaluate(() => document.querySelector('.graph-global .graph-svg').getBoundingClientRect().width <= 375),
    'at 375 px the graph fits the screen');
  check(phone.problems.length === 0, 'phone pages: no console error, failed or outside request: ' +
    JSON.stringify(phone.problems.slice(0, 5)));
}

withSample(prepare, run)
  .catch((e) => check(false, 'the run finished: ' + (e && e.stack || e)))
  .finally(() => {
    process.exit(summary());
  });
