/*
 * quire.js: the default theme's behaviour, in parts under theme/js/ that
 * scripts/embed.py joins in one function scope (meson.build lists their
 * order). Every page works without it; this adds the explorer tree (from
 * <body data-tree>), live search (from <body data-prefix> + /api/search,
 * or, in an export with no server, the static index under
 * _quire/search/), the theme toggle, link previews, heading anchors, copy
 * buttons, the active toc entry, local dates, the graph (local and whole),
 * and KaTeX / Mermaid rendering on the pages that load them.
 *
 * Server strings only ever reach the page through textContent or as
 * attributes; nothing is parsed with innerHTML. Nothing is loaded from
 * another origin.
 */

/*
 * core.js: what every part shares: building elements, local storage, the
 * normal form of a path, the colour scheme, and onPage().
 */

const doc = document;
const root = doc.documentElement;
const body = doc.body;
const prefix = body.dataset.prefix || '';
const THEME_KEY = 'quire-theme';
const OPEN_KEY = 'quire-open';

/*
 * What works on a page's own content (its body, its table of contents,
 * its local graph, its math and diagrams) registers with onPage(): each
 * runs when the script starts (start.js), and again on the new content
 * whenever the page is replaced in place.
 */
const pageHooks = [];
const onPage = (fn) => pageHooks.push(fn);

function h(tag, props, kids) {
  const e = doc.createElement(tag);
  for (const k in props || {}) {
    if (k === 'text') e.textContent = props[k];
    else if (k === 'class') e.className = props[k];
    else e.setAttribute(k, props[k]);
  }
  if (kids) e.append(...kids);
  return e;
}

function storage(session) {
  try {
    return session ? window.sessionStorage : window.localStorage;
  } catch (e) {
    return null;
  }
}
function load(key, session) {
  try {
    return storage(session).getItem(key);
  } catch (e) {
    return null;
  }
}
function save(key, value, session) {
  try {
    storage(session).setItem(key, value);
  } catch (e) { /* private mode, quota: forget it */ }
}

/* "/a/b%20c/", "/a/b c.html" and "/a/b c/index" name the same page. */
function norm(path) {
  try {
    path = decodeURIComponent(path);
  } catch (e) { /* keep it encoded */ }
  path = path.replace(/(\/index)?\.html$/, '').replace(/\/+$/, '');
  return path || '/';
}
/* the page shown: replacePage() moves it along with the address */
let here = norm(location.pathname);

/* Colour scheme */

const darkQuery = matchMedia('(prefers-color-scheme: dark)');
function isDark() {
  const t = root.dataset.theme;
  return t ? t === 'dark' : darkQuery.matches;
}
const themeButton = doc.querySelector('.theme-toggle');
function syncThemeButton() {
  if (themeButton) themeButton.setAttribute('aria-pressed', String(isDark()));
}
function themeChanged() {
  syncThemeButton();
  drawDiagrams(); /* Mermaid draws in the colours of the scheme it was given */
}
if (themeButton) {
  syncThemeButton();
  themeButton.addEventListener('click', () => {
    const next = isDark() ? 'light' : 'dark';
    root.dataset.theme = next;
    save(THEME_KEY, next);
    themeChanged();
  });
  darkQuery.addEventListener('change', themeChanged);
  addEventListener('storage', (e) => {
    if (e.key !== THEME_KEY) return;
    if (e.newValue === 'dark' || e.newValue === 'light') root.dataset.theme = e.newValue;
    else delete root.dataset.theme;
    themeChanged();
  });
}

/*
 * A page of this theme: it has the main column and loads the very script
 * that runs here. A page of another version of the theme (the site was
 * upgraded since this one loaded) or of no theme at all is loaded instead.
 */
const ownScript = doc.currentScript ? doc.currentScript.src : '';
function pageOfTheme(next) {
  if (!next || !next.getElementById('quire-main')) return false;
  if (!ownScript) return true;
  for (const s of next.querySelectorAll('script[src]')) {
    if (new URL(s.getAttribute('src'), location.href).href === ownScript) return true;
  }
  return false;
}

/*
 * The stylesheets and scripts `next` names in its head that this page
 * lacks (KaTeX's, Mermaid's: src/site/layout.c gives them to the pages
 * that need them), compared by URL, added to this page's head in their
 * order; the promise resolves when every one has loaded or failed. What
 * this page has already, or is loading, is not added twice.
 */
const headLoads = new Map(); /* absolute URL -> promise of its load, null once loaded */
function mergeHead(next) {
  const have = new Set();
  doc.querySelectorAll('link[rel~="stylesheet"][href], script[src]').forEach((e) => have.add(e.href || e.src));
  const waits = [];
  next.head.querySelectorAll('link[rel~="stylesheet"][href], script[src]').forEach((e) => {
    const isScript = e.tagName === 'SCRIPT';
    let url;
    try {
      url = new URL(e.getAttribute(isScript ? 'src' : 'href'), location.href).href;
    } catch (err) {
      return;
    }
    if (!headLoads.has(url) && !have.has(url)) {
      let add;
      if (isScript) {
        add = h('script', { src: url });
        add.async = false; /* in the order the page names them */
      } else {
        add = h('link', { rel: 'stylesheet', href: url });
      }
      headLoads.set(url, new Promise((done) => {
        const end = () => {
          headLoads.set(url, null);
          done();
        };
        add.addEventListener('load', end);
        add.addEventListener('error', end);
      }));
      doc.head.append(add);
    }
    if (headLoads.get(url)) waits.push(headLoads.get(url));
  });
  return waits.length ? Promise.all(waits) : null;
}

/*
 * replacePage(next): this page becomes the document `next` (a page of
 * the same site, parsed) without a reload: its title, the body's data,
 * the main column and the side table of contents are taken from `next`,
 * and the onPage() hooks run on the new content, once the stylesheets
 * and scripts its head adds have loaded (at once when it adds none).
 * What lives beside the page (the header, the search box, the explorer)
 * stays as it is. The address must already be the new page's (history
 * .pushState before, for a navigation). Returns false when `next` is
 * not a page of this theme, and the caller loads it instead.
 */
let pageCount = 0;
function replacePage(next) {
  const main = doc.getElementById('quire-main');
  if (!main || !pageOfTheme(next)) return false;
  const nextMain = next.getElementById('quire-main');
  here = norm(location.pathname);
  doc.title = next.title;
  for (const k of ['folder', 'graph', 'tree', 'prefix']) {
    if (next.body.dataset[k] === undefined) delete body.dataset[k];
    else body.dataset[k] = next.body.dataset[k];
  }
  main.replaceWith(doc.adoptNode(nextMain));
  const side = doc.querySelector('.page > .toc-side');
  const nextSide = next.querySelector('.page > .toc-side');
  if (side) side.remove();
  if (nextSide) doc.getElementById('quire-main').after(doc.adoptNode(nextSide));
  const page = doc.querySelector('.page'), nextPage = next.querySelector('.page');
  if (page && nextPage) page.className = nextPage.className;
  const mine = ++pageCount;
  const runHooks = () => {
    if (mine === pageCount) pageHooks.forEach((fn) => fn()); /* not if another page came since */
  };
  const loading = mergeHead(next);
  if (loading) loading.then(runHooks);
  else runHooks();
  return true;
}
