/*
 * navigation.js: instant navigation. A click on a link to another page
 * of the site fetches it and puts it in place of this one (replacePage()),
 * so the explorer, the search box and what else lives beside the page
 * keep their state; history, scroll, focus and the title follow as a
 * browser's own navigation would. Pages are fetched ahead on hover and
 * when their links come into view, into a small cache that lives seconds.
 * Without script the links are plain links: nothing in the HTML is for
 * this.
 */

const NAV_TTL = 10000;     /* ms a fetched page may be used: pages change (live pages) */
const NAV_CACHE = 30;      /* pages kept at most */
const HOVER_WAIT = 65;     /* ms on a link before it is fetched */
const VIEW_MAX = 12;       /* pages fetched ahead a page, for links in view */
const VIEW_BUSY = 2;       /* of those, at once */

/*
 * The address a link leads to when it is a page of this site that can be
 * put in place: same origin, under the site's prefix, not the API, not a
 * file (of the theme or an attachment), not for download or another
 * window. null otherwise.
 */
function pageLink(a) {
  let href = a.getAttribute('href');
  if (href === null) href = a.getAttribute('xlink:href'); /* an SVG link */
  if (href === null || a.hasAttribute('download')) return null;
  const target = a.getAttribute('target');
  if (target && target.toLowerCase() !== '_self') return null;
  if (a.classList.contains('attachment')) return null;
  let u;
  try {
    u = new URL(href, location.href);
  } catch (e) {
    return null;
  }
  const p = u.pathname;
  if (u.origin !== location.origin) return null;
  if (prefix && p !== prefix && !p.startsWith(prefix + '/')) return null;
  if (p.startsWith(prefix + '/api/') || p.startsWith(prefix + '/dav/')) return null;
  /*
   * A name ending in an extension is a file: an attachment, or the
   * theme's own under /_quire/ (its pages, the graph's, have none; an
   * export's end in .html). What still answers other than a page of the
   * theme is loaded the browser's way (go()).
   */
  if (/\.[a-z0-9]{1,5}$/i.test(p) && !/\.html?$/i.test(p)) return null;
  return u;
}

/* The page shown, as its address without the fragment. */
const sansHash = (u) => u.href.split('#')[0];
let shown = sansHash(location);

/*
 * The cache: address -> { at, got } where got resolves to { url, html }
 * (url: where the answer came from, after redirects) or null when the
 * answer is not a page to put in place. Read by clicks, filled by them
 * and by prefetches; oldest out first.
 */
const navCache = new Map();
function fetchPage(url, ahead) {
  const hit = navCache.get(url);
  if (hit && performance.now() - hit.at < NAV_TTL) return hit.got;
  const headers = { Accept: 'text/html' };
  if (ahead) headers.Purpose = 'prefetch';
  const got = fetch(url, { headers: headers, credentials: 'same-origin' })
    .then((r) => {
      const type = r.headers.get('content-type') || '';
      if (!r.ok || !/^text\/html/i.test(type) || new URL(r.url).origin !== location.origin) {
        if (r.body) r.body.cancel().catch(() => {});
        return null;
      }
      return r.text().then((html) => ({ url: r.url, html: html }));
    })
    .catch(() => null);
  const entry = { at: performance.now(), got: got };
  navCache.delete(url);
  navCache.set(url, entry);
  while (navCache.size > NAV_CACHE) navCache.delete(navCache.keys().next().value);
  got.then((page) => {
    if (!page && navCache.get(url) === entry) navCache.delete(url); /* a failure is not kept */
  });
  return got;
}

/*
 * History. Each entry of ours carries a key in its state; the scroll
 * position of the entries left is kept by key, in memory and, when the
 * document goes (a reload, another site), in the tab's session storage.
 * Nothing is written into an entry's state as it is left: a
 * replaceState() there would be one more navigation for whoever watches.
 * The browser does not restore the position: this script does.
 */
const SCROLL_KEY = 'quire-scroll', SCROLL_KEPT = 50;
let scrolls;
try {
  scrolls = new Map(JSON.parse(load(SCROLL_KEY, true) || '[]'));
} catch (e) {
  scrolls = new Map();
}
let entryKey = null;
const newKey = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 8);
function keyOf(state) {
  return state && typeof state.quire === 'string' ? state.quire : null;
}
function stamp() {
  /* the current entry gets a key if it has none, and keeps its state */
  if (!keyOf(history.state)) {
    const st = history.state && typeof history.state === 'object' ? history.state : {};
    history.replaceState(Object.assign({}, st, { quire: newKey() }), '');
  }
  entryKey = keyOf(history.state);
}
function keepScroll() {
  scrolls.delete(entryKey);
  scrolls.set(entryKey, scrollY);
  while (scrolls.size > SCROLL_KEPT) scrolls.delete(scrolls.keys().next().value);
}

/* After a page is put in place: where it is read from, as a browser would. */
function place(u, y) {
  if (typeof y === 'number') {
    scrollTo({ top: y, left: 0, behavior: 'instant' });
    return;
  }
  let target = null;
  if (u.hash.length > 1) {
    try {
      target = doc.getElementById(decodeURIComponent(u.hash.slice(1)));
    } catch (e) { /* a malformed fragment */ }
  }
  if (target) target.scrollIntoView({ behavior: 'instant' });
  else scrollTo({ top: 0, left: 0, behavior: 'instant' });
}

/* The new title is said to screen readers, as a page load would. */
const announcer = h('div', { class: 'nav-announce', 'aria-live': 'polite', 'aria-atomic': 'true' });

let navToken = 0;
/*
 * Go to u: 'push' for a click (a new entry), 'pop' for back and forward
 * (the address is already u; y the scroll position to restore). What
 * cannot be put in place is loaded the browser's way.
 */
function go(u, how, y) {
  const mine = ++navToken;
  fetchPage(sansHash(u), false).then((got) => {
    if (mine !== navToken) return null; /* another click came since */
    const next = got && new DOMParser().parseFromString(got.html, 'text/html');
    if (!next || !pageOfTheme(next)) return fallback(u, how);
    const loading = mergeHead(next);
    return Promise.resolve(loading).then(() => {
      if (mine !== navToken) return;
      const at = new URL(got.url);
      at.hash = u.hash;
      if (how === 'push' && sansHash(at) === shown) {
        history.replaceState({ quire: entryKey }, '', at.href); /* this page again: no new entry */
      } else if (how === 'push') {
        keepScroll();
        history.pushState({ quire: newKey() }, '', at.href);
      } else if (sansHash(at) !== sansHash(u)) {
        history.replaceState(history.state, '', at.href); /* redirected since */
      }
      entryKey = keyOf(history.state) || entryKey;
      shown = sansHash(location);
      if (body.classList.contains('nav-open')) setNav(false);
      if (!replacePage(next)) return fallback(u, how);
      const main = doc.getElementById('quire-main');
      if (main) main.focus({ preventScroll: true });
      place(at, y);
      announcer.textContent = doc.title;
      return null;
    });
  });
}
function fallback(u, how) {
  if (how === 'push') location.assign(u.href);
  else location.reload();
}

if (window.DOMParser && window.fetch && history.pushState && doc.getElementById('quire-main')) {
  body.append(announcer);
  history.scrollRestoration = 'manual';
  stamp();
  /* a reload, or back from another site to a page that is no longer in memory */
  const loaded = performance.getEntriesByType && performance.getEntriesByType('navigation')[0];
  if (loaded && loaded.type !== 'navigate' && scrolls.has(entryKey) && !location.hash)
    scrollTo({ top: scrolls.get(entryKey), left: 0, behavior: 'instant' });
  addEventListener('pagehide', () => {
    keepScroll();
    save(SCROLL_KEY, JSON.stringify([...scrolls]), true);
  });

  doc.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
    const a = e.target instanceof Element ? e.target.closest('a') : null;
    const u = a && pageLink(a);
    if (!u) return;
    if (sansHash(u) === shown && u.hash) return; /* a fragment of this page: the browser's */
    e.preventDefault();
    go(u, 'push');
  });

  addEventListener('popstate', (e) => {
    keepScroll();
    const u = new URL(location.href);
    const key = keyOf(e.state);
    const y = key && scrolls.has(key) ? scrolls.get(key) : undefined;
    if (sansHash(u) === shown) {
      /* the same page, another fragment of it */
      stamp();
      place(u, y);
      return;
    }
    stamp();
    go(u, 'pop', y);
  });
  /* a fragment followed on this page makes an entry of its own */
  addEventListener('hashchange', stamp);

  /* Fetching ahead: never when the reader asked to save data. */
  const conn = navigator.connection;
  if (!(conn && conn.saveData)) {
    const ahead = (a) => {
      const u = pageLink(a);
      if (u && sansHash(u) !== shown) fetchPage(sansHash(u), true);
    };
    let hoverTimer = 0;
    doc.addEventListener('mouseover', (e) => {
      const a = e.target instanceof Element ? e.target.closest('a') : null;
      if (!a) return;
      clearTimeout(hoverTimer);
      hoverTimer = setTimeout(() => ahead(a), HOVER_WAIT);
    });
    doc.addEventListener('mouseout', (e) => {
      if (e.target instanceof Element && e.target.closest('a')) clearTimeout(hoverTimer);
    });
    doc.addEventListener('touchstart', (e) => {
      const a = e.target instanceof Element ? e.target.closest('a') : null;
      if (a) ahead(a);
    }, { passive: true });

    /*
     * Links of the page's own content that come into view, fetched when
     * the browser is idle, VIEW_BUSY at a time, VIEW_MAX a page at most.
     */
    if (window.IntersectionObserver) {
      const idle = window.requestIdleCallback || ((fn) => setTimeout(fn, 200));
      let queue = [], started = 0, busy = 0, watch = null, round = 0;
      const pump = () => {
        while (busy < VIEW_BUSY && queue.length && started < VIEW_MAX) {
          const url = queue.shift(), mine = round;
          started++;
          busy++;
          fetchPage(url, true).then(() => {
            if (mine !== round) return;
            busy--;
            idle(pump, { timeout: 2000 });
          });
        }
      };
      onPage(() => {
        if (watch) watch.disconnect();
        queue = [];
        started = busy = 0;
        round++;
        const wanted = new Set();
        watch = new IntersectionObserver((entries) => {
          for (const e of entries) {
            if (!e.isIntersecting) continue;
            watch.unobserve(e.target);
            const url = sansHash(pageLink(e.target));
            if (url === shown || wanted.has(url)) continue;
            wanted.add(url);
            queue.push(url);
          }
          if (queue.length) idle(pump, { timeout: 2000 });
        });
        let n = 0;
        for (const a of doc.querySelectorAll('#quire-main a[href]')) {
          if (n >= VIEW_MAX * 8) break; /* a long listing: its first links */
          /* the breadcrumbs' folders are where a reader has been, not where they go next */
          if (pageLink(a) && !a.closest('.breadcrumbs')) {
            watch.observe(a);
            n++;
          }
        }
      });
    }
  }
}
