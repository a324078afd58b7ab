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
 * root, /_quire/tree/<folder path>.json below it, with pages of about 100
 * notes in a big folder), so that an edit rewrites the pages of the
 * folders it touched, never the whole tree. A folder's document is fetched when the folder is first opened;
 * the folders on the way to this page (<body data-folder>) and those the
 * reader left open are fetched at once, in parallel, before the tree is
 * drawn, so the page opens with its folder expanded.
 */
const treeRoot = body.dataset.tree || '';
const treeBase = treeRoot.replace(/\.json$/, '');
const docs = new Map();
const docUrl = (path) => (path ? treeBase + '/' + path.split('/').map(encodeURIComponent).join('/') + '.json' : treeRoot);
/*
 * A big folder's document is cut into pages like its listing: the first
 * names the others in "more", fetched at once and joined in order.
 */
const getJson = (url) => fetch(url).then((r) => (r.ok ? r.json() : Promise.reject(r.status)));
function wholeDoc(url) {
  return getJson(url).then((d) => {
    if (!d || !Array.isArray(d.children)) return { children: [] };
    if (!Array.isArray(d.more) || !d.more.length) return d;
    return Promise.all(d.more.map((u) => getJson(u).catch(() => ({ children: [] }))))
      .then((parts) => {
        for (const p of parts) if (p && Array.isArray(p.children)) d.children.push(...p.children);
        return d;
      });
  });
}
function treeDoc(path) {
  if (!docs.has(path)) docs.set(path, wholeDoc(docUrl(path)).catch(() => ({ children: [] })));
  return docs.get(path);
}

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

  /* Folders build their children when first opened: a big vault stays cheap. */
  function build(node, path) {
    const ul = h('ul', { class: 'tree' });
    for (const c of node.children || []) {
      const li = h('li');
      if (!isFolder(c)) {
        if (typeof c.url !== 'string') continue;
        li.className = 'tree-note';
        li.append(link(c.url, c.title));
        ul.append(li);
        continue;
      }
      const cp = path ? path + '/' + c.name : c.name;
      li.className = 'tree-folder';
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
          else treeDoc(cp).then((d) => { const b = build(d, cp); b.hidden = sub.hidden; sub.replaceWith(b); sub = b; });
        }
        if (sub) sub.hidden = !on;
        toggle.setAttribute('aria-expanded', String(on));
        if (remember) {
          if (on) open.add('/' + cp);
          else open.delete('/' + cp);
          save(OPEN_KEY, JSON.stringify([...open]), true);
        }
      };
      toggle.addEventListener('click', () => set(toggle.getAttribute('aria-expanded') !== 'true', true));
      if (open.has('/' + cp) || trail.has(cp)) set(true, false);
      ul.append(li);
    }
    return ul;
  }

  nav.append(build(data, ''));
  if (current) {
    const top = current.getBoundingClientRect().top - nav.getBoundingClientRect().top;
    if (top > nav.clientHeight * 0.6) nav.scrollTop = top - nav.clientHeight / 3;
  }
}

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
  wholeDoc(treeRoot)
    .then((data) => {
      if (!data || !Array.isArray(data.children) || !data.children.length) throw 0;
      const paths = [...want];
      return Promise.all(paths.map(treeDoc)).then((list) => {
        const ready = new Map();
        paths.forEach((p, i) => ready.set(p, list[i]));
        renderTree(data, ready, open);
      });
    })
    .catch(() => body.classList.add('no-nav'));
} else {
  body.classList.add('no-nav');
}
