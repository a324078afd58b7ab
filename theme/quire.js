/*
 * quire.js: the default theme's behaviour. Every page works without it;
 * this adds the explorer tree (from <body data-tree>), live search (from
 * <body data-prefix> + /api/search, or, in an export with no server, the
 * static index under _quire/search/), the theme toggle, link previews,
 * heading anchors, copy buttons, the active toc entry, local dates, the
 * graph (local and whole), and KaTeX / Mermaid rendering on the pages that
 * load them.
 *
 * Server strings only ever reach the page through textContent or as
 * attributes; nothing is parsed with innerHTML. Nothing is loaded from
 * another origin.
 */
(function () {
  'use strict';

  const doc = document;
  const root = doc.documentElement;
  const body = doc.body;
  const prefix = body.dataset.prefix || '';
  const THEME_KEY = 'quire-theme';
  const OPEN_KEY = 'quire-open';

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
      const a = h('a', { href: url, text: text || '' });
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
          toggle.append(c.name);
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

  /* Search: live results under the box; the form still submits to the search page. */

  let searchCount = 0;
  function liveSearch(form) {
    const input = form.querySelector('input[name="q"]');
    if (!input) return;
    const id = 'quire-results-' + searchCount++;
    const list = h('div', { class: 'search-results', id: id, role: 'listbox', hidden: '' });
    form.append(list);
    /* Keep focus in the box while a result is clicked (Safari does not focus links). */
    list.addEventListener('mousedown', (e) => e.preventDefault());
    input.setAttribute('role', 'combobox');
    input.setAttribute('aria-autocomplete', 'list');
    input.setAttribute('aria-controls', id);
    input.setAttribute('aria-expanded', 'false');

    let timer = 0, ctrl = null, items = [], active = -1, shown = '';

    function show(on) {
      list.hidden = !on;
      input.setAttribute('aria-expanded', String(on));
    }
    function select(i) {
      if (active >= 0 && items[active]) items[active].removeAttribute('aria-selected');
      active = i;
      if (i >= 0) {
        items[i].setAttribute('aria-selected', 'true');
        input.setAttribute('aria-activedescendant', items[i].id);
        items[i].scrollIntoView({ block: 'nearest' });
      } else {
        input.removeAttribute('aria-activedescendant');
      }
    }
    function render(data, q) {
      list.textContent = '';
      items = [];
      active = -1;
      input.removeAttribute('aria-activedescendant');
      const results = data && Array.isArray(data.results) ? data.results : [];
      results.forEach((r) => {
        if (typeof r.url !== 'string' || r.url[0] !== '/') return;
        const a = h('a', { class: 'search-result', href: r.url, role: 'option', id: id + '-' + items.length },
          [h('span', { class: 'search-result-title', text: r.title || r.url })]);
        if (Array.isArray(r.segments) && r.segments.length) {
          const s = h('span', { class: 'search-result-snippet' });
          for (const seg of r.segments) {
            const text = String(seg.text || '');
            s.append(seg.match ? h('mark', { text: text }) : doc.createTextNode(text));
          }
          a.append(s);
        }
        list.append(a);
        items.push(a);
      });
      if (!items.length) list.append(h('div', { class: 'search-empty', text: 'No results for \u201c' + q + '\u201d' }));
      const hint = data && typeof data.suggestion === 'string' ? data.suggestion : '';
      if (hint) {
        /* "did you mean": the index's own word for a mistyped one; choosing it searches it */
        const a = h('a', { class: 'search-result search-suggestion', role: 'option', id: id + '-' + items.length,
          href: form.action + '?q=' + encodeURIComponent(hint) }, ['Did you mean ', h('mark', { text: hint }), '?']);
        a.addEventListener('click', (e) => {
          e.preventDefault();
          input.value = hint;
          query();
          input.focus();
        });
        list.append(a);
        items.push(a);
      }
      const total = data && typeof data.total === 'number' ? data.total : 0;
      if (total > items.length) {
        const more = h('a', { class: 'search-more', href: form.action + '?q=' + encodeURIComponent(q) });
        more.textContent = 'See all ' + total + ' results';
        list.append(more);
      }
      shown = q;
      show(true);
    }
    function query() {
      const q = input.value.trim();
      if (ctrl) ctrl.abort();
      if (!q) {
        shown = '';
        show(false);
        return;
      }
      if (q === shown) {
        show(true);
        return;
      }
      ctrl = new AbortController();
      const signal = ctrl.signal;
      const asked = noApi ? Promise.reject(404)
        : fetch(prefix + '/api/search?q=' + encodeURIComponent(q) + '&limit=8', { signal: signal })
          .then((r) => (r.ok ? r.json() : Promise.reject(r.status)));
      asked
        .catch((e) => {
          /* no server behind this page (an export): the static index answers */
          if (signal.aborted || (e !== 404 && !(e instanceof TypeError))) throw e;
          noApi = true;
          return staticSearch(q, 8);
        })
        .then((data) => {
          if (!signal.aborted) render(data, q);
        })
        .catch(() => {});
    }

    input.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(query, 150);
    });
    input.addEventListener('focus', () => {
      if (input.value.trim() && input.value.trim() === shown) show(true);
    });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        if (list.hidden || !items.length) return;
        e.preventDefault();
        const n = items.length;
        select(e.key === 'ArrowDown' ? (active + 1) % n : (active - 1 + n) % n);
      } else if (e.key === 'Enter' && !list.hidden && active >= 0) {
        e.preventDefault();
        location.href = items[active].href;
      } else if (e.key === 'Escape') {
        if (!list.hidden) show(false);
        else input.blur();
      }
    });
    form.addEventListener('focusout', (e) => {
      if (!form.contains(e.relatedTarget)) show(false);
    });
  }
  /* static-search:begin (tests/test-export.py runs this block under node)
   * The export's search index (src/cmd/export-search.c): one shard of terms
   * per word, fetched on demand and kept; the last word matches as a prefix.
   * Notes whose title holds a word come first. */
  function staticSearcher(base, get) {
    const shards = new Map();
    const enc = new TextEncoder();
    function hex(word) {
      return Array.from(enc.encode(word).slice(0, 2), (b) => b.toString(16).padStart(2, '0')).join('');
    }
    function fnv(s) {
      let x = 2166136261;
      for (const b of enc.encode(s)) x = Math.imul(x ^ b, 16777619) >>> 0;
      return (x & 255).toString(16).padStart(2, '0');
    }
    function shard(name) {
      if (!shards.has(name)) {
        shards.set(name, get(base + '/_quire/search/' + name + '.json')
          .then((r) => (r.ok ? r.json() : {})).catch(() => ({})));
      }
      return shards.get(name);
    }
    return async function (q, limit) {
      const words = q.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
      let found = null;
      for (let i = 0; i < words.length; i++) {
        const w = words[i], last = i === words.length - 1;
        const terms = await shard('t/' + hex(w));
        const hits = new Set();
        for (const t in terms) {
          if (t === w || (last && w.length >= 2 && t.startsWith(w))) terms[t].forEach((u) => hits.add(u));
        }
        found = found ? new Set([...found].filter((u) => hits.has(u))) : hits;
        if (!found.size) break;
      }
      const urls = found ? [...found] : [];
      const all = await Promise.all(urls.map(async (u) => ({ url: u, title: (await shard('d/' + fnv(u)))[u] || u })));
      const inTitle = (r) => words.some((w) => r.title.toLowerCase().includes(w));
      all.sort((a, b) => (inTitle(b) - inTitle(a)) || (a.url < b.url ? -1 : a.url > b.url ? 1 : 0));
      /* total: no "see all" link, there is no /search page to show them */
      return { results: all.slice(0, limit), total: Math.min(all.length, limit) };
    };
  }
  /* static-search:end */
  const staticSearch = staticSearcher(prefix, (u) => fetch(u));
  let noApi = false;

  const forms = doc.querySelectorAll('form.search');
  forms.forEach(liveSearch);

  /* "/" or Ctrl-K / Cmd-K jumps to the search box. */
  doc.addEventListener('keydown', (e) => {
    if (!forms.length) return;
    const typing = e.target.closest && e.target.closest('input, textarea, select, [contenteditable]');
    if ((e.key === '/' && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) ||
        (e.key === 'k' && (e.ctrlKey || e.metaKey))) {
      e.preventDefault();
      forms[0].querySelector('input').focus();
    } else if (e.key === 'Escape' && body.classList.contains('nav-open')) {
      setNav(false);
      if (navButton) navButton.focus();
    }
  });

  /* Note body: heading anchors, copy buttons, local dates */

  doc.querySelectorAll('.note-body :is(h1, h2, h3, h4, h5, h6)[id]').forEach((hd) => {
    hd.append(h('a', { class: 'heading-anchor', href: '#' + hd.id, 'aria-label': 'Link to this section', text: '#' }));
  });

  /* a code block wider than the page scrolls: reachable from the keyboard too */
  doc.querySelectorAll('.note-body pre').forEach((pre) => {
    if (pre.scrollWidth > pre.clientWidth) pre.tabIndex = 0;
  });

  if (navigator.clipboard && window.isSecureContext) {
    doc.querySelectorAll('.note-body pre:not(.mermaid)').forEach((pre) => {
      const button = h('button', { class: 'copy-button', type: 'button', text: 'Copy' });
      const wrap = h('div', { class: 'code-block' });
      pre.replaceWith(wrap);
      wrap.append(pre, button);
      button.addEventListener('click', () => {
        navigator.clipboard.writeText(pre.textContent).then(() => {
          button.textContent = 'Copied';
          setTimeout(() => { button.textContent = 'Copy'; }, 1500);
        }, () => {});
      });
    });
  }

  doc.querySelectorAll('.note-meta time, .listing-items time').forEach((t) => {
    const d = new Date(t.dateTime + 'T00:00:00Z');
    if (isNaN(d)) return;
    try {
      t.textContent = d.toLocaleDateString(root.lang || undefined,
        { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });
    } catch (e) { /* unknown locale: keep the ISO date */ }
  });

  /* Table of contents: mark the section being read. */

  const tocPairs = [];
  doc.querySelectorAll('.toc-side a').forEach((a) => {
    let target = null;
    try {
      target = doc.getElementById(decodeURIComponent(a.hash.slice(1)));
    } catch (e) { /* malformed id */ }
    if (target) tocPairs.push([target, a]);
  });
  if (tocPairs.length) {
    let ticking = false, lit = null;
    const spy = () => {
      ticking = false;
      const line = parseFloat(getComputedStyle(root).scrollPaddingTop) + 16 || 80;
      let pick = tocPairs[0][1];
      for (const [target, a] of tocPairs) {
        if (target.getBoundingClientRect().top > line) break;
        pick = a;
      }
      if (pick === lit) return;
      if (lit) lit.classList.remove('active');
      pick.classList.add('active');
      lit = pick;
    };
    addEventListener('scroll', () => {
      if (!ticking) {
        ticking = true;
        requestAnimationFrame(spy);
      }
    }, { passive: true });
    spy();
  }

  /* Link previews: desktop only, same origin, cached per URL. */

  if (matchMedia('(hover: hover) and (pointer: fine)').matches && window.DOMParser) {
    const cache = new Map();
    let pop = null, owner = null, showTimer = 0, hideTimer = 0;

    const fetchPage = (url) => {
      if (!cache.has(url)) {
        cache.set(url, fetch(url)
          .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
          .then((html) => {
            const d = new DOMParser().parseFromString(html, 'text/html');
            const content = d.querySelector('.note-body');
            const title = d.querySelector('.note-title');
            return content ? { title: title ? title.textContent : '', content: content } : null;
          })
          .catch(() => null));
      }
      return cache.get(url);
    };

    const hide = () => {
      clearTimeout(showTimer);
      if (pop) pop.remove();
      pop = owner = null;
    };

    const open = (a) => {
      fetchPage(a.href.split('#')[0]).then((page) => {
        if (!page || owner !== a) return;
        let nodes = [...page.content.children];
        let target = null;
        if (a.hash.length > 1) {
          try {
            target = page.content.querySelector('#' + CSS.escape(decodeURIComponent(a.hash.slice(1))));
          } catch (e) { /* malformed fragment */ }
        }
        if (target) {
          while (target.parentElement && target.parentElement !== page.content) target = target.parentElement;
          nodes = nodes.slice(Math.max(0, nodes.indexOf(target)));
        }
        const inner = h('div', { class: 'note-body' });
        let length = 0;
        for (const n of nodes) {
          inner.append(doc.importNode(n, true));
          length += n.textContent.length;
          if (length > 1500 || inner.childElementCount >= 10) break;
        }
        inner.querySelectorAll('script, iframe, video, audio, object, embed').forEach((x) => x.remove());
        inner.querySelectorAll('[id]').forEach((x) => x.removeAttribute('id'));
        if (pop) pop.remove();
        pop = h('div', { class: 'popover', role: 'tooltip' });
        if (!target && page.title) pop.append(h('p', { class: 'popover-title', text: page.title }));
        pop.append(inner);
        pop.addEventListener('mouseenter', () => clearTimeout(hideTimer));
        pop.addEventListener('mouseleave', () => { hideTimer = setTimeout(hide, 250); });
        body.append(pop);
        const r = a.getBoundingClientRect();
        const w = pop.offsetWidth, ht = pop.offsetHeight;
        const left = Math.max(8, Math.min(r.left, innerWidth - w - 8));
        const below = r.bottom + 8 + ht < innerHeight || r.top < ht + 8;
        pop.style.left = left + scrollX + 'px';
        pop.style.top = (below ? r.bottom + 8 : r.top - ht - 8) + scrollY + 'px';
      });
    };

    doc.addEventListener('mouseover', (e) => {
      if (!(e.target instanceof Element)) return;
      if (pop && pop.contains(e.target)) return;
      const a = e.target.closest('a.internal');
      if (a && a === owner) {
        clearTimeout(hideTimer);
        return;
      }
      if (!a || a.classList.contains('broken') || !a.href ||
          a.origin !== location.origin || a.closest('.popover') ||
          (norm(a.pathname) === here && !a.hash)) return;
      clearTimeout(hideTimer);
      hide();
      owner = a;
      showTimer = setTimeout(() => open(a), 300);
    });
    doc.addEventListener('mouseout', (e) => {
      if (!owner || !(e.target instanceof Element) || e.target.closest('a.internal') !== owner) return;
      if (owner.contains(e.relatedTarget) || (pop && pop.contains(e.relatedTarget))) return;
      clearTimeout(showTimer);
      clearTimeout(hideTimer);
      hideTimer = setTimeout(hide, 250);
    });
    addEventListener('keydown', (e) => { if (e.key === 'Escape') hide(); });
    doc.addEventListener('click', hide);
  }

  /*
   * The graph. A note's page draws its neighbourhood: the notes it links
   * to and the notes linking to it, read from the page itself (its links
   * and its "Links to this page"), and on request a second hop, read from
   * those notes' pages. The graph page (<body data-graph>) draws the whole
   * site from the documents its container names (/_quire/graph.json and
   * its shards, src/site/derived-pages.c), the most linked notes when
   * there are more than it can draw. Each node is a link: a click, a tap
   * or Enter opens its note. Drag, a finger or the arrow keys move the
   * view; the wheel (on the graph page), a pinch, + and - zoom.
   */

  const SVG_NS = 'http://www.w3.org/2000/svg';
  const GRAPH_MAX = 2000;
  function sv(tag, attrs, kids) {
    const e = doc.createElementNS(SVG_NS, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (kids) e.append(...kids);
    return e;
  }

  /* A node for each URL (normalised, as norm()), edges one per pair. */
  function graphModel() {
    const nodes = [], byId = new Map(), pairs = new Set(), edges = [];
    return {
      nodes, edges, byId,
      /* sure: title is the note's own, not a link's text (which may be an alias) */
      node(url, title, sure) {
        let id;
        try { id = norm(new URL(url, location.href).pathname); } catch (e) { return null; }
        let n = byId.get(id);
        if (!n) {
          n = { id, url, title: title || id, sure: !!(title && sure), deg: 0, index: nodes.length };
          nodes.push(n);
          byId.set(id, n);
        } else if (title && sure && !n.sure) {
          n.title = title;
          n.sure = true;
        }
        return n;
      },
      edge(a, b) {
        if (!a || !b || a === b) return;
        const key = a.index < b.index ? a.index + ' ' + b.index : b.index + ' ' + a.index;
        if (pairs.has(key)) return;
        pairs.add(key);
        edges.push([a, b]);
        a.deg++;
        b.deg++;
      },
    };
  }

  /* Barnes-Hut: a quadtree of the nodes, each cell with its count and centre. */
  function quadtree(nodes) {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const n of nodes) {
      x0 = Math.min(x0, n.x); y0 = Math.min(y0, n.y);
      x1 = Math.max(x1, n.x); y1 = Math.max(y1, n.y);
    }
    const size = Math.max(x1 - x0, y1 - y0, 1);
    const cell = (x, y, w) => ({ x, y, w, count: 0, cx: 0, cy: 0, kids: null, leaf: null });
    const rootCell = cell(x0, y0, size);
    const insert = (c, n, depth) => {
      c.cx = (c.cx * c.count + n.x) / (c.count + 1);
      c.cy = (c.cy * c.count + n.y) / (c.count + 1);
      c.count++;
      if (c.count === 1) { c.leaf = n; return; }
      if (depth > 24) return; /* the same place: counted, not split */
      if (!c.kids) {
        const h = c.w / 2;
        c.kids = [cell(c.x, c.y, h), cell(c.x + h, c.y, h), cell(c.x, c.y + h, h), cell(c.x + h, c.y + h, h)];
        if (c.leaf) { const l = c.leaf; c.leaf = null; place(c, l, depth); }
      }
      place(c, n, depth);
    };
    const place = (c, n, depth) => {
      const h = c.w / 2;
      insert(c.kids[(n.x >= c.x + h ? 1 : 0) + (n.y >= c.y + h ? 2 : 0)], n, depth + 1);
    };
    for (const n of nodes) insert(rootCell, n, 0);
    return rootCell;
  }

  /*
   * A force layout in the manner of d3-force: charge between every pair
   * (by Barnes-Hut above 300 nodes), springs along links, a pull to the
   * centre, velocity decay. Deterministic: nodes start on a spiral.
   */
  /* ... in slices of about 12 ms, so that a big graph does not freeze the page. */
  function layoutGraph(g) {
    const nodes = g.nodes, n = nodes.length;
    nodes.forEach((d, i) => {
      const r = 10 * Math.sqrt(i + 0.5), a = i * 2.399963;
      d.x = r * Math.cos(a); d.y = r * Math.sin(a); d.vx = d.vy = 0;
    });
    const STRENGTH = -150, DIST = 50, THETA2 = 0.81;
    const ticks = n > 1000 ? 160 : 300;
    let alpha = 1;
    const decay = 1 - Math.pow(0.001, 1 / ticks);
    const push = (d, dx, dy, l2, count) => {
      if (l2 < 1) l2 = 1;
      const f = STRENGTH * count * alpha / l2;
      d.vx += dx * f; d.vy += dy * f;
    };
    const tick = () => {
      if (n > 300) {
        const tree = quadtree(nodes);
        for (const d of nodes) {
          const stack = [tree];
          while (stack.length) {
            const c = stack.pop();
            if (!c.count) continue;
            const dx = c.cx - d.x, dy = c.cy - d.y, l2 = dx * dx + dy * dy;
            if (c.leaf || (c.kids === null) || (c.w * c.w) / Math.max(l2, 1e-9) < THETA2) {
              if (c.leaf === d) continue;
              push(d, dx, dy, l2, c.leaf ? 1 : c.count);
            } else {
              stack.push(...c.kids);
            }
          }
        }
      } else {
        for (let i = 0; i < n; i++) {
          for (let j = i + 1; j < n; j++) {
            const a = nodes[i], b = nodes[j], dx = b.x - a.x, dy = b.y - a.y;
            const l2 = Math.max(dx * dx + dy * dy, 1), f = STRENGTH * alpha / l2;
            a.vx += dx * f; a.vy += dy * f;
            b.vx -= dx * f; b.vy -= dy * f;
          }
        }
      }
      for (const [a, b] of g.edges) {
        const dx = b.x + b.vx - a.x - a.vx || 1e-6, dy = b.y + b.vy - a.y - a.vy || 1e-6;
        const l = Math.sqrt(dx * dx + dy * dy);
        const k = (l - DIST) / l * alpha / Math.min(a.deg, b.deg);
        const bias = a.deg / (a.deg + b.deg);
        b.vx -= dx * k * bias; b.vy -= dy * k * bias;
        a.vx += dx * k * (1 - bias); a.vy += dy * k * (1 - bias);
      }
      for (const d of nodes) {
        d.vx -= d.x * 0.06 * alpha; d.vy -= d.y * 0.06 * alpha;
        d.x += (d.vx *= 0.6); d.y += (d.vy *= 0.6);
      }
      alpha -= alpha * decay;
    };
    return new Promise((done) => {
      let t = 0;
      const slice = () => {
        const until = performance.now() + 12;
        while (t < ticks && (t === 0 || performance.now() < until)) { tick(); t++; }
        if (t < ticks) setTimeout(slice, 0);
        else done();
      };
      slice();
    });
  }

  /*
   * Draws g into box: one <path> for all edges, one link per node, and
   * the controls. current is the node of this page (or null); labels:
   * 'all' or the number of best-linked nodes whose names always show.
   */
  const count = (k, what) => k.toLocaleString('en') + ' ' + what + (k === 1 ? '' : 's');
  async function drawGraph(box, g, current, labels, placed) {
    if (!placed) await layoutGraph(g);
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const d of g.nodes) {
      x0 = Math.min(x0, d.x); y0 = Math.min(y0, d.y);
      x1 = Math.max(x1, d.x); y1 = Math.max(y1, d.y);
    }
    const pad = 30;
    let home = { x: x0 - pad, y: y0 - pad, w: x1 - x0 + 2 * pad, h: y1 - y0 + 2 * pad };
    let view = { ...home };
    const svg = sv('svg', {
      class: 'graph-svg', tabindex: '0', role: 'group',
      'aria-label': 'Graph of ' + g.nodes.length + ' notes. Arrow keys move it, + and - zoom, Tab goes through its notes.',
    });
    /* labels keep their size on the screen, whatever the zoom */
    const setView = () => {
      svg.setAttribute('viewBox', view.x + ' ' + view.y + ' ' + view.w + ' ' + view.h);
      const r = svg.getBoundingClientRect();
      if (r.width) svg.style.setProperty('--graph-u', String(Math.max(view.w / r.width, view.h / r.height)));
    };
    let d = '';
    for (const [a, b] of g.edges) d += 'M' + a.x.toFixed(1) + ' ' + a.y.toFixed(1) + 'L' + b.x.toFixed(1) + ' ' + b.y.toFixed(1);
    svg.append(sv('path', { class: 'graph-edges', d }));
    const lit = sv('path', { class: 'graph-edges graph-edges-lit', d: '' });
    svg.append(lit);
    const shown = labels === 'all' ? Infinity
      : [...g.nodes].sort((a, b) => b.deg - a.deg).slice(0, labels).reduce((s, n) => s.add(n), new Set());
    const adj = new Map(g.nodes.map((n) => [n, []]));
    for (const [a, b] of g.edges) { adj.get(a).push(b); adj.get(b).push(a); }
    const light = (n) => {
      svg.classList.toggle('graph-hover', !!n);
      for (const x of svg.querySelectorAll('.graph-node.lit')) x.classList.remove('lit');
      if (!n) { lit.setAttribute('d', ''); return; }
      let p = '';
      n.el.classList.add('lit');
      for (const m of adj.get(n)) {
        m.el.classList.add('lit');
        p += 'M' + n.x.toFixed(1) + ' ' + n.y.toFixed(1) + 'L' + m.x.toFixed(1) + ' ' + m.y.toFixed(1);
      }
      lit.setAttribute('d', p);
    };
    const order = [...g.nodes].sort((a, b) => (a.y - b.y) || (a.x - b.x)); /* tab order: top to bottom */
    for (const n of order) {
      const r = Math.min(3 + Math.sqrt(n.deg) * 1.5, 14);
      const cls = 'graph-node' + (n === current ? ' current' : '') +
        (labels === 'all' || shown.has(n) ? ' labelled' : '');
      const a = sv('a', { href: n.url, class: cls, 'aria-label': n.title }, [
        sv('circle', { cx: n.x.toFixed(1), cy: n.y.toFixed(1), r: r.toFixed(1), style: '--r:' + r.toFixed(1) }),
        sv('text', { x: n.x.toFixed(1), y: (n.y + r).toFixed(1), dy: '1.1em' }),
      ]);
      a.lastChild.textContent = n.title;
      if (n === current) a.setAttribute('aria-current', 'page');
      a.addEventListener('pointerenter', () => light(n));
      a.addEventListener('pointerleave', () => light(null));
      a.addEventListener('focus', () => light(n));
      a.addEventListener('blur', () => light(null));
      n.el = a;
      svg.append(a);
    }

    const zoom = (f, cx, cy) => {
      const w = Math.min(Math.max(view.w / f, home.w / 20), home.w * 4), k = w / view.w;
      if (cx === undefined) { cx = view.x + view.w / 2; cy = view.y + view.h / 2; }
      view = { x: cx - (cx - view.x) * k, y: cy - (cy - view.y) * k, w, h: view.h * k };
      setView();
    };
    const toView = (e) => {
      const r = svg.getBoundingClientRect(), s = Math.max(view.w / r.width, view.h / r.height);
      return { x: view.x + view.w / 2 + (e.clientX - r.left - r.width / 2) * s,
               y: view.y + view.h / 2 + (e.clientY - r.top - r.height / 2) * s, s };
    };
    const pointers = new Map();
    let pinch = 0;
    svg.addEventListener('pointerdown', (e) => {
      if (e.target.closest('a') && e.pointerType === 'mouse') return; /* a click on a note opens it */
      pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
      if (pointers.size === 2) {
        const [p, q] = [...pointers.values()];
        pinch = Math.hypot(p.x - q.x, p.y - q.y);
      }
    });
    svg.addEventListener('pointermove', (e) => {
      const was = pointers.get(e.pointerId);
      if (!was) return;
      const now = { x: e.clientX, y: e.clientY };
      if (Math.hypot(now.x - was.x, now.y - was.y) > 3 && !svg.hasPointerCapture(e.pointerId)) {
        svg.setPointerCapture(e.pointerId);
        svg.classList.add('graph-dragging');
      }
      if (!svg.hasPointerCapture(e.pointerId)) return;
      pointers.set(e.pointerId, now);
      if (pointers.size === 2) {
        const [p, q] = [...pointers.values()], dist = Math.hypot(p.x - q.x, p.y - q.y);
        if (pinch) zoom(dist / pinch);
        pinch = dist;
        return;
      }
      const s = toView(e).s;
      view.x -= (now.x - was.x) * s;
      view.y -= (now.y - was.y) * s;
      setView();
    });
    const up = (e) => {
      pointers.delete(e.pointerId);
      if (pointers.size < 2) pinch = 0;
      if (!pointers.size) svg.classList.remove('graph-dragging');
    };
    svg.addEventListener('pointerup', up);
    svg.addEventListener('pointercancel', up);
    /* a drag that ends on a note does not open it */
    let dragEnd = -1e9;
    svg.addEventListener('click', (e) => {
      if (performance.now() - dragEnd < 250) e.preventDefault();
    }, true);
    svg.addEventListener('lostpointercapture', () => { dragEnd = performance.now(); });
    if (box.classList.contains('graph-global')) {
      svg.addEventListener('wheel', (e) => {
        e.preventDefault();
        const p = toView(e);
        zoom(Math.exp(-e.deltaY / 300), p.x, p.y);
      }, { passive: false });
    }
    svg.addEventListener('keydown', (e) => {
      const step = view.w / 10;
      const moves = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
      if (moves[e.key] && e.target === svg) {
        view.x += moves[e.key][0]; view.y += moves[e.key][1];
        setView();
      } else if (e.key === '+' || e.key === '=') {
        zoom(1.25);
      } else if (e.key === '-') {
        zoom(0.8);
      } else if (e.key === '0') {
        view = { ...home }; setView();
      } else {
        return;
      }
      e.preventDefault();
    });
    const button = (label, text, fn) => {
      const b = h('button', { type: 'button', class: 'graph-button', 'aria-label': label, text });
      b.addEventListener('click', fn);
      return b;
    };
    const tools = h('div', { class: 'graph-tools' }, [
      button('Zoom in', '+', () => zoom(1.25)),
      button('Zoom out', '\u2212', () => zoom(0.8)),
      button('Fit the graph', '\u2922', () => { view = { ...home }; setView(); }),
    ]);
    box.querySelectorAll('.graph-svg, .graph-tools').forEach((x) => x.remove());
    box.append(svg, tools);
    /* a small graph is not blown up to fill the box: at most 2 px a unit */
    const r = svg.getBoundingClientRect();
    if (r.width) {
      const w = Math.max(home.w, r.width * 0.5), hh = Math.max(home.h, r.height * 0.5);
      home = { x: home.x - (w - home.w) / 2, y: home.y - (hh - home.h) / 2, w, h: hh };
      view = { ...home };
    }
    setView();
    return svg;
  }

  /* The notes a page links to and those linking to it, as read from its document. */
  function pageLinks(d, base) {
    const out = [], seen = new Set(), self = norm(new URL(base).pathname);
    const add = (a, dir) => {
      if (a.classList.contains('broken') || a.classList.contains('attachment')) return;
      let u;
      try { u = new URL(a.getAttribute('href'), base); } catch (e) { return; }
      if (u.origin !== location.origin || norm(u.pathname) === self) return;
      const key = norm(u.pathname) + ' ' + dir;
      if (seen.has(key)) return;
      seen.add(key);
      out.push({ url: u.pathname, title: a.textContent.trim(), dir });
    };
    d.querySelectorAll('.note-body a.internal[href]').forEach((a) => {
      if (!a.closest('.backlinks')) add(a, 'out');
    });
    d.querySelectorAll('.backlinks a.internal[href]').forEach((a) => add(a, 'in'));
    return out;
  }

  if (doc.querySelector('article.note') && body.dataset.graph) (() => {
    const links = pageLinks(doc, location.href);
    if (!links.length) return;
    const title = doc.querySelector('.note-title');
    const box = h('section', { class: 'graph graph-local', 'aria-label': 'Graph of links' });
    const hops = h('button', { type: 'button', class: 'graph-button graph-hops', 'aria-pressed': 'false', text: 'Two hops' });
    const status = h('p', { class: 'graph-status', role: 'status' });
    box.append(h('div', { class: 'graph-head' }, [
      h('h2', { text: 'Graph' }), hops,
      h('a', { class: 'graph-whole', href: body.dataset.graph, text: 'Whole graph' }),
    ]), status);
    const after = doc.querySelector('article.note .backlinks') || doc.querySelector('article.note .note-body');
    after.after(box);

    /*
     * A link's text may be an alias: the neighbours' own pages give their
     * titles, and their links the second hop. Read when the graph comes
     * into view (40 pages at most, 4 at a time, from the browser's cache
     * when it has them).
     */
    const pages = new Map(); /* normalised path -> { title, links } */
    let reading = null;
    const readNeighbours = () => reading || (reading = new Promise((done) => {
      const todo = links.slice(0, 40).map((l) => l.url);
      let next = 0, busy = 0;
      const pump = () => {
        if (next >= todo.length && !busy) { done(); return; }
        while (busy < 4 && next < todo.length) {
          const url = todo[next++];
          busy++;
          fetch(url)
            .then((r) => (r.ok ? r.text() : ''))
            .then((html) => {
              const d = new DOMParser().parseFromString(html, 'text/html');
              const t = d.querySelector('.note-title');
              if (t) pages.set(norm(url), { title: t.textContent, links: pageLinks(d, new URL(url, location.href).href) });
            })
            .catch(() => null)
            .finally(() => { busy--; pump(); });
        }
      };
      pump();
    }));
    const model = (deep) => {
      const g = graphModel();
      /* a backlink shows its note's title; a link, its own text */
      const named = (l) => {
        const p = pages.get(norm(l.url));
        return g.node(l.url, p ? p.title : l.title, !!p || l.dir === 'in');
      };
      const me = g.node(location.pathname, title ? title.textContent : '', true);
      const first = links.map((l) => { const n = named(l); g.edge(me, n); return n; });
      if (deep) {
        for (const n of first) {
          const p = pages.get(n.id);
          if (p) for (const l of p.links) g.edge(n, named(l));
        }
      }
      return { g, me };
    };
    const deep = () => hops.getAttribute('aria-pressed') === 'true';
    let drawn = 0;
    const draw = () => {
      const { g, me } = model(deep()), mine = ++drawn;
      return layoutGraph(g).then(() => {
        if (mine !== drawn) return; /* a later draw is under way */
        drawGraph(box, g, me, g.nodes.length <= 40 ? 'all' : 12, true);
        status.textContent = count(g.nodes.length, 'note') + ', ' + count(g.edges.length, 'link');
      });
    };
    hops.addEventListener('click', () => {
      hops.setAttribute('aria-pressed', String(!deep()));
      if (!deep()) { draw(); return; }
      status.textContent = 'Reading the pages one hop away\u2026';
      readNeighbours().then(draw);
    });
    draw();
    if (window.IntersectionObserver) {
      const seen = new IntersectionObserver((entries) => {
        if (!entries.some((e) => e.isIntersecting)) return;
        seen.disconnect();
        readNeighbours().then(draw);
      });
      seen.observe(box);
    }
  })();

  const globalBox = doc.querySelector('.graph-global[data-src]');
  if (globalBox) {
    const status = globalBox.querySelector('.graph-status');
    status.textContent = 'Reading the graph\u2026';
    getJson(globalBox.dataset.src)
      .then((index) => Promise.all((index.shards || []).map((u) => getJson(u))))
      .then((shards) => {
        const g = graphModel(), byHref = new Map();
        const all = [];
        for (const sh of shards) for (const n of sh.notes || []) all.push(n);
        for (const n of all) byHref.set(n.u, g.node(n.u, n.t, true));
        /* links name their targets by the same URLs as their entries */
        for (const n of all) for (const l of n.l || []) g.edge(byHref.get(n.u), byHref.get(l));
        let shownG = g;
        if (g.nodes.length > GRAPH_MAX) {
          /* the best-linked notes, and the links among them */
          const keep = new Set([...g.nodes].sort((a, b) => b.deg - a.deg || (a.id < b.id ? -1 : 1)).slice(0, GRAPH_MAX));
          shownG = graphModel();
          for (const n of keep) shownG.node(n.url, n.title, true);
          for (const [a, b] of g.edges) if (keep.has(a) && keep.has(b)) shownG.edge(shownG.node(a.url), shownG.node(b.url));
        }
        if (!g.nodes.length) {
          status.textContent = 'No notes are published yet.';
          return null;
        }
        status.textContent = 'Placing ' + count(shownG.nodes.length, 'note') + '\u2026';
        return drawGraph(globalBox, shownG, null, 15).then(() => {
          status.textContent = (shownG === g ? count(g.nodes.length, 'note')
            : 'The ' + count(GRAPH_MAX, 'note') + ' with the most links, of ' + count(g.nodes.length, 'note')) +
            ', ' + count(shownG.edges.length, 'link');
        });
      })
      .catch(() => { status.textContent = 'The graph could not be read.'; });
  }

  /*
   * Math and diagrams. A page with math or a diagram loads KaTeX or
   * Mermaid before this script (src/site/layout.c: only those pages, from
   * /_quire/vendor/); until they run, the TeX and the diagram's source
   * are shown as text.
   */

  function typesetMath() {
    if (!window.katex) return;
    doc.querySelectorAll('.note-body .math').forEach((el) => {
      /* "\(tex\)" inline, "\[tex\]" displayed (src/markdown/html.c) */
      const m = /^\\[([]([\s\S]*)\\[)\]]$/.exec(el.textContent.trim());
      if (!m) return;
      try {
        window.katex.render(m[1], el, {
          displayMode: el.classList.contains('math-display'), throwOnError: false,
        });
      } catch (e) { /* leave the source visible */ }
    });
  }

  /*
   * A diagram's nodes of class internal-link become links to the notes the
   * server resolved from their text (src/markdown/links.c), listed hidden
   * right after the diagram, as Obsidian links them.
   */
  const squash = (t) => t.replace(/\s+/g, ' ').trim();
  function linkDiagram(pre) {
    const list = pre.nextElementSibling;
    if (!list || !list.classList.contains('diagram-links')) return;
    const urls = new Map();
    list.querySelectorAll('a[data-node]').forEach((a) => urls.set(squash(a.dataset.node), a.getAttribute('href')));
    pre.querySelectorAll('g.internal-link').forEach((g) => {
      const url = urls.get(squash(g.textContent));
      if (!url || g.closest('a')) return;
      const a = doc.createElementNS('http://www.w3.org/2000/svg', 'a');
      a.setAttribute('href', url);
      a.setAttribute('class', 'diagram-link');
      g.parentNode.insertBefore(a, g);
      a.appendChild(g);
    });
  }

  const diagrams = [];
  function drawDiagrams() {
    if (!window.mermaid || !diagrams.length) return;
    diagrams.forEach((pre) => {
      pre.removeAttribute('data-processed');
      pre.textContent = pre.dataset.source;
    });
    try {
      window.mermaid.initialize({
        startOnLoad: false, securityLevel: 'strict', theme: isDark() ? 'dark' : 'default',
      });
      /* run() draws every diagram, then throws the first one's error: link them all anyway */
      window.mermaid.run({ nodes: diagrams })
        .catch(() => { /* its error is drawn in place */ })
        .finally(() => diagrams.forEach(linkDiagram));
    } catch (e) { /* leave the source visible */ }
  }

  typesetMath();
  doc.querySelectorAll('.note-body pre.mermaid').forEach((pre) => {
    pre.dataset.source = pre.textContent;
    diagrams.push(pre);
  });
  drawDiagrams();
})();
