/*
 * explorer.js: the navigation drawer and the explorer tree.
 */

/* Explorer */

const nav = doc.getElementById('quire-explorer');
const navButton = doc.querySelector('.nav-toggle');

function setNav(open) {
  body.classList.toggle('nav-open', open);
  if (navButton) navButton.setAttribute('aria-expanded', String(open));
}
if (navButton) {
  navButton.addEventListener('click', () => setNav(!body.classList.contains('nav-open')));
  doc.addEventListener('click', (e) => {
    if (body.classList.contains('nav-open') && !nav.contains(e.target) &&
        !navButton.contains(e.target)) setNav(false);
  });
}

/*
 * The explorer: one JSON document per folder (/_quire/tree.json for the
 * root, /_quire/tree/<folder path>.json below it), so that an edit
 * rewrites the pages of the folders it touched, never the whole tree. A
 * big folder's document is cut in pages of about a thousand notes: the
 * first names the others' URLs in "more" and how many notes each holds
 * in "sizes". A folder's first page is fetched when the folder is first
 * opened (one request, however big the folder), its other pages only when
 * they are scrolled near, in parallel; the folders on the way to this page
 * (<body data-folder>) and those the reader left open are fetched at once,
 * before the tree is drawn, so the page opens with its folder expanded
 * (the page's own folder with all its pages, to mark the page).
 */
const treeRoot = body.dataset.tree || '';
const treeBase = treeRoot.replace(/\.json$/, '');
const docs = new Map();
const docUrl = (path) => (path ? treeBase + '/' + path.split('/').map(encodeURIComponent).join('/') + '.json' : treeRoot);
/*
 * A JSON document; a request that fails on the network (a connection the
 * server closed as the browser reused it) is made once more.
 */
const getJson = (url, again = true) => fetch(url).then((r) => (r.ok ? r.json() : Promise.reject(r.status)),
  (e) => (again ? new Promise((ok) => setTimeout(ok, 250)).then(() => getJson(url, false)) : Promise.reject(e)));
/* "more": the other pages' URLs; "sizes": how many notes each holds */
const pageList = (d) => (Array.isArray(d.more)
  ? d.more.map((url, i) => ({ url, n: Array.isArray(d.sizes) ? d.sizes[i] | 0 : 0 })).filter((m) => typeof m.url === 'string')
  : []);
/* A page of a folder's document: its notes, [] when it cannot be had. */
const treePage = (url) => getJson(url).then((p) => (p && Array.isArray(p.children) ? p.children : []), () => []);
/* A folder's first document; whole: with its other pages fetched and joined (d.more emptied). */
function folderDoc(url, whole) {
  return getJson(url).then((d) => {
    if (!d || !Array.isArray(d.children)) return { children: [] };
    const more = pageList(d);
    if (!whole || !more.length) return d;
    return Promise.all(more.map((m) => treePage(m.url))).then((parts) => {
      for (const p of parts) d.children.push(...p);
      d.more = [];
      return d;
    });
  });
}
function treeDoc(path, whole) {
  const key = (whole ? '+' : '-') + path;
  /* a failure is not kept: the next look asks again */
  if (!docs.has(key)) docs.set(key, folderDoc(docUrl(path), whole).catch(() => { docs.delete(key); return { children: [] }; }));
  return docs.get(key);
}

/*
 * A page of notes not fetched yet stands as one empty row as tall as its
 * notes will be, so the list has its full height at once; it is fetched
 * when it comes within a screen of the explorer's view, and its rows take
 * its place. Rows are cheap for the browser off screen too: quire.css
 * gives them content-visibility: auto.
 */
const pending = new Map();
const lazyPages = 'IntersectionObserver' in window && nav
  ? new IntersectionObserver((seen) => {
    for (const e of seen) if (e.isIntersecting && pending.has(e.target)) pending.get(e.target)();
  }, { root: nav, rootMargin: '100% 0px' })
  : null;
function placeholder(page, fill) {
  const li = h('li', { class: 'tree-pending', 'aria-hidden': 'true', 'data-notes': String(page.n | 0) });
  li.style.setProperty('--notes', String(Math.max(1, page.n | 0)));
  const load = () => {
    pending.delete(li);
    if (lazyPages) lazyPages.unobserve(li);
    treePage(page.url).then((kids) => li.replaceWith(...fill(kids)));
  };
  pending.set(li, load);
  if (lazyPages) lazyPages.observe(li);
  else load();
  return li;
}

let treeReveal = null; /* renderTree() sets it: the new page's place in the tree */

/*
 * A name as text with places a line may break where a reader would: after
 * '-', '.', '_' and '/', and between the words of CamelCase
 * ("Property|Value", "HTTP|Server"), each a <wbr> element (the name is
 * never parsed as markup). A deep name then wraps as
 * "Get-ItemProperty|Value", not "Get-ItemPropertyV|alue"; a word longer
 * than the line still breaks inside, the last resort (overflow-wrap).
 */
const NAME_BREAK = /[-._/](?=[^-._/\s])|[\p{Ll}\p{N}](?=\p{Lu})|\p{Lu}(?=\p{Lu}\p{Ll})/gu;
function breakableName(name) {
  const frag = doc.createDocumentFragment();
  let from = 0;
  for (const m of name.matchAll(NAME_BREAK)) {
    frag.append(name.slice(from, m.index + 1), doc.createElement('wbr'));
    from = m.index + 1;
  }
  frag.append(name.slice(from));
  return frag;
}

function renderTree(data, ready, open) {
  const trail = new Set(); /* folders on the way to the current page */
  const setters = new Map(); /* folder path -> its set(on), once drawn */
  let current = null;
  const isFolder = (node) => typeof node.name === 'string';
  const same = (url) => typeof url === 'string' && norm(url) === here;
  const folder = body.dataset.folder || '';
  if (folder) {
    const parts = folder.split('/');
    for (let i = 1; i <= parts.length; i++) trail.add(parts.slice(0, i).join('/'));
  }

  function link(url, text) {
    const a = h('a', { href: url }, [breakableName(text || '')]);
    if (same(url)) {
      a.setAttribute('aria-current', 'page');
      current = a;
    }
    return a;
  }

  function noteRow(c) {
    return h('li', { class: 'tree-note' }, [link(c.url, c.title)]);
  }

  /* Folders build their children when first opened: a big vault stays cheap. */
  function build(node, path) {
    const ul = h('ul', { class: 'tree' });
    for (const c of node.children || []) {
      if (!isFolder(c)) {
        if (typeof c.url === 'string') ul.append(noteRow(c));
        continue;
      }
      const cp = path ? path + '/' + c.name : c.name;
      const li = h('li', { class: 'tree-folder' });
      const toggle = h('button', { class: 'tree-toggle', type: 'button', 'aria-expanded': 'false' });
      const row = h('div', { class: 'tree-row' }, [toggle]);
      if (typeof c.url === 'string') {
        toggle.setAttribute('aria-label', 'Toggle ' + c.name);
        row.append(link(c.url, c.name));
      } else {
        toggle.classList.add('tree-label');
        toggle.append(breakableName(c.name));
      }
      li.append(row);
      let sub = null;
      const set = (on, remember) => {
        if (on && !sub) {
          sub = h('ul', { class: 'tree' });
          li.append(sub);
          if (ready.has(cp)) sub.replaceWith(sub = build(ready.get(cp), cp));
          else treeDoc(cp, false).then((d) => { const b = build(d, cp); b.hidden = sub.hidden; sub.replaceWith(b); sub = b; });
        }
        if (sub) sub.hidden = !on;
        toggle.setAttribute('aria-expanded', String(on));
        if (remember) {
          if (on) open.add('/' + cp);
          else open.delete('/' + cp);
          save(OPEN_KEY, JSON.stringify([...open]), true);
        }
      };
      setters.set(cp, set);
      toggle.addEventListener('click', () => set(toggle.getAttribute('aria-expanded') !== 'true', true));
      if (open.has('/' + cp) || trail.has(cp)) set(true, false);
      ul.append(li);
    }
    const rows = (kids) => kids.filter((c) => !isFolder(c) && typeof c.url === 'string').map(noteRow);
    for (const m of pageList(node)) ul.append(placeholder(m, rows));
    return ul;
  }

  nav.append(build(data, ''));
  if (current) {
    const top = current.getBoundingClientRect().top - nav.getBoundingClientRect().top;
    if (top > nav.clientHeight * 0.6) nav.scrollTop = top - nav.clientHeight / 3;
  }

  /*
   * After the page was replaced in place: its folders opened (each drawn
   * once its document is read), the mark moved to its link, and the
   * tree scrolled only when that link is out of sight.
   */
  treeReveal = async () => {
    const parts = (body.dataset.folder || '').split('/').filter(Boolean);
    for (let i = 1; i <= parts.length; i++) {
      const path = parts.slice(0, i).join('/');
      if (!setters.has(path)) break;
      setters.get(path)(true, false);
      await treeDoc(path); /* after set()'s own wait: its folders are drawn */
    }
    nav.querySelectorAll('a[aria-current="page"]').forEach((a) => a.removeAttribute('aria-current'));
    current = [...nav.querySelectorAll('.tree a[href]')].find((a) => same(a.getAttribute('href')));
    if (!current) return;
    current.setAttribute('aria-current', 'page');
    const r = current.getBoundingClientRect(), box = nav.getBoundingClientRect();
    if (nav.clientHeight && (r.top < box.top || r.bottom > box.top + nav.clientHeight))
      nav.scrollTop += r.top - box.top - nav.clientHeight / 3;
  };
}
onPage(() => {
  if (treeReveal) treeReveal();
});

if (nav && treeRoot) {
  let open;
  try {
    open = new Set(JSON.parse(load(OPEN_KEY, true) || '[]'));
  } catch (e) {
    open = new Set();
  }
  /* the root, the folders on the way here and the ones left open, all at once */
  const want = new Set();
  const folder = body.dataset.folder || '';
  if (folder) {
    const parts = folder.split('/');
    for (let i = 1; i <= parts.length; i++) want.add(parts.slice(0, i).join('/'));
  }
  for (const k of open) if (typeof k === 'string' && k.startsWith('/')) want.add(k.slice(1));
  treeDoc('', !folder)
    .then((data) => {
      if (!data || !Array.isArray(data.children) || !data.children.length) throw 0;
      const paths = [...want];
      return Promise.all(paths.map((p) => treeDoc(p, p === folder))).then((list) => {
        const ready = new Map();
        paths.forEach((p, i) => ready.set(p, list[i]));
        renderTree(data, ready, open);
      });
    })
    .catch(() => body.classList.add('no-nav'));
} else {
  body.classList.add('no-nav');
}
