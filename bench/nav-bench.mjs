/*
 * bench/nav-bench.mjs: instant navigation, click to painted, in Chromium.
 *
 *	[QUIRE_BIN=build/quire] taskset -c 1 node bench/nav-bench.mjs VAULT [--clicks N] [--seed S] [--json]
 *
 * Starts `quire serve` ($QUIRE_BIN, default build/quire) on VAULT (on core 0, one serving thread) and drives
 * Debian's Chromium with puppeteer-core (tests/browser/node_modules). It
 * first walks the site: from the home page, N times a link of the note's
 * text to another note, chosen with a seeded generator; then, for each of
 * those clicks, in turn:
 *
 *   nav      the page loaded, the link clicked with nothing fetched ahead
 *            (requests marked "Purpose: prefetch" are refused): from the
 *            click event to the first animation frame after the new main
 *            column is in the DOM, measured in the page (performance.now()).
 *   prefetch the same, the mouse resting 300 ms on the link first (a
 *            reader's hover before a click), so the hover prefetch and the
 *            prefetch of links in view have had their chance.
 *   full     the same click made a full page load (the theme's click
 *            handler is stopped before it sees the click): from the click
 *            to the new page's first contentful paint and to its load
 *            event, from the navigation timing of the new page.
 *
 * Prints p50, p90 and p99 of each in ms (with --json, one JSON line).
 * Figures only: nothing is asserted.
 */
import { launch, serve } from '../tests/browser/lib.mjs';
import { stop } from '../tests/lib/proc.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const [vault] = args.filter((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1].startsWith('--') &&
  args[i - 1] !== '--json'));
if (!vault) {
  console.error('usage: node bench/nav-bench.mjs VAULT [--clicks N] [--seed S] [--json]');
  process.exit(2);
}
const clicks = Number(opt('--clicks', 40));
let seed = Number(opt('--seed', 1)) >>> 0 || 1;
const json = args.includes('--json');
const say = (s) => { if (!json) console.log(s); else console.error(s); };
const random = () => {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
};

async function served() {
  const t0 = Date.now();
  const { proc, base } = await serve(vault, { pin: 0, loaded: true, wait: 600000 });
  say(`nav-bench: ${vault} served in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return { proc, base };
}

/* In every document: the click's time, and the frame after the main column is replaced. */
function instrument() {
  window.__bench = { full: false, clicked: 0, painted: 0 };
  addEventListener('click', (e) => {
    window.__bench.clicked = e.timeStamp;
    sessionStorage.setItem('bench-click', String(performance.timeOrigin + e.timeStamp));
    if (window.__bench.full) e.stopImmediatePropagation(); /* the theme never sees it */
  }, true);
  addEventListener('DOMContentLoaded', () => {
    const page = document.querySelector('.page');
    if (!page) return;
    new MutationObserver((records) => {
      if (!records.some((r) => [...r.addedNodes].some((n) => n.id === 'quire-main'))) return;
      requestAnimationFrame(() => { window.__bench.painted = performance.now(); });
    }).observe(page, { childList: true });
  });
}

const pick = () => {
  const here = location.pathname;
  return [...document.querySelectorAll('#quire-main .note-body a.internal[href]:not(.attachment):not(.broken)')]
    .map((a) => a.getAttribute('href'))
    .filter((h) => h.startsWith('/') && !h.includes('#') && !h.includes('?') &&
      !/\.[a-z0-9]{1,5}$/i.test(h) && decodeURIComponent(h) !== decodeURIComponent(here));
};

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Math.round(s[Math.min(s.length - 1, Math.ceil(p / 100 * s.length) - 1)] * 10) / 10 : null;
};

async function main() {
  const { proc, base } = await served();
  const browser = await launch();
  const out = { vault, clicks: 0, nav: [], prefetch: [], full_fcp: [], full_load: [], fallbacks: 0 };
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 900 });
    await page.evaluateOnNewDocument(instrument);
    let refuse = false;
    await page.setRequestInterception(true);
    page.on('request', (r) => {
      if (refuse && r.headers().purpose === 'prefetch') r.abort();
      else r.continue();
    });

    /* the walk: from the home page, a link of each note's text */
    const walk = [];
    await page.goto(base + '/', { waitUntil: 'load' });
    let from = null;
    const home = await page.$$eval('#quire-main a[href]', (as) => as.map((a) => a.getAttribute('href'))
      .filter((h) => h.startsWith('/') && h !== '/' && !h.startsWith('/_quire') && !h.startsWith('/tags')));
    for (let tries = 0; walk.length < clicks && tries < clicks * 5; tries++) {
      if (!from) from = home[Math.floor(random() * home.length)];
      await page.goto(base + from, { waitUntil: 'load' });
      const links = await page.evaluate(pick);
      if (!links.length) {
        /* a folder's listing (a vault without index.md starts on one): go down it */
        const down = await page.$$eval('#quire-main .listing-items a[href]', (as) => as.map((a) => a.getAttribute('href')));
        from = down.length ? down[Math.floor(random() * down.length)] : null;
        continue;
      }
      const href = links[Math.floor(random() * links.length)];
      walk.push([from, href]);
      from = href;
    }
    say(`nav-bench: ${walk.length} clicks, each measured three ways`);

    const click = async (href) => {
      const sel = `#quire-main .note-body a.internal[href="${href.replace(/"/g, '\\"')}"]`;
      await page.$eval(sel, (a) => a.scrollIntoView({ block: 'center', behavior: 'instant' }));
      return sel;
    };
    for (const [src, href] of walk) {
      /* nav: nothing fetched ahead */
      refuse = true;
      await page.goto(base + src, { waitUntil: 'networkidle0' });
      let sel = await click(href);
      await page.click(sel);
      let t = await page.waitForFunction(() => window.__bench.painted && window.__bench.painted - window.__bench.clicked,
        { timeout: 30000 }).then((x) => x.jsonValue(), () => null);
      if (t === null) { out.fallbacks++; continue; }
      out.nav.push(t);
      refuse = false;

      /* prefetch: the mouse on the link for 300 ms first */
      await page.goto(base + src, { waitUntil: 'networkidle0' });
      sel = await click(href);
      await page.hover(sel);
      await new Promise((r) => setTimeout(r, 300));
      await page.click(sel);
      t = await page.waitForFunction(() => window.__bench.painted && window.__bench.painted - window.__bench.clicked,
        { timeout: 30000 }).then((x) => x.jsonValue(), () => null);
      if (t !== null) out.prefetch.push(t);

      /* full: the browser loads the page */
      await page.goto(base + src, { waitUntil: 'networkidle0' });
      sel = await click(href);
      await page.evaluate(() => { window.__bench.full = true; });
      await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click(sel)]);
      /* the paint entry may come after the load event: wait for it (3 s at most) */
      const full = await page.evaluate(() => new Promise((done) => {
        const clicked = Number(sessionStorage.getItem('bench-click'));
        const nav = performance.getEntriesByType('navigation')[0];
        const load = nav ? performance.timeOrigin + nav.loadEventEnd - clicked : null;
        const timer = setTimeout(() => done([null, load]), 3000);
        new PerformanceObserver((list) => {
          const fcp = list.getEntries().find((e) => e.name === 'first-contentful-paint');
          if (!fcp) return;
          clearTimeout(timer);
          done([performance.timeOrigin + fcp.startTime - clicked, load]);
        }).observe({ type: 'paint', buffered: true });
      }));
      if (full[0] !== null) out.full_fcp.push(full[0]);
      if (full[1] !== null) out.full_load.push(full[1]);
      out.clicks++;
    }
  } finally {
    await browser.close();
    await stop(proc);
  }
  const row = { vault, clicks: out.clicks, fallbacks: out.fallbacks };
  for (const k of ['nav', 'prefetch', 'full_fcp', 'full_load']) {
    row[k + '_p50_ms'] = pct(out[k], 50);
    row[k + '_p90_ms'] = pct(out[k], 90);
    row[k + '_p99_ms'] = pct(out[k], 99);
  }
  if (json) {
    console.log(JSON.stringify(row));
  } else {
    for (const [k, what] of [['nav', 'in place, nothing fetched ahead (click to frame)'],
      ['prefetch', 'in place, after a 300 ms hover (click to frame)'],
      ['full_fcp', 'full load, click to first contentful paint'], ['full_load', 'full load, click to load event']])
      console.log(`${what}: p50 ${row[k + '_p50_ms']} ms, p90 ${row[k + '_p90_ms']} ms, p99 ${row[k + '_p99_ms']} ms`);
  }
}

main().catch((e) => {
  console.error('nav-bench: ' + (e && e.stack || e));
  process.exit(1);
});
