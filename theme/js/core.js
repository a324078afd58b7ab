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
const here = norm(location.pathname);

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
 * replacePage(next): this page becomes the document `next` (a page of
 * the same site, parsed) without a reload: its title, the body's data,
 * the main column and the side table of contents are taken from `next`,
 * and the onPage() hooks run on the new content. What lives beside the
 * page (the header, the search box, the explorer) stays as it is.
 * Returns false when `next` is not a page of this theme, and the caller
 * loads it instead.
 */
function replacePage(next) {
  const main = doc.getElementById('quire-main');
  const nextMain = next.getElementById('quire-main');
  if (!main || !nextMain) return false;
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
  pageHooks.forEach((fn) => fn());
  return true;
}
