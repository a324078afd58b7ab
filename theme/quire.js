/*
 * quire.js: the default theme's behaviour. Every page works without it;
 * this adds the explorer tree (from <body data-tree>), live search (from
 * <body data-prefix> + /api/search), the theme toggle, link previews,
 * heading anchors, copy buttons, the active toc entry, local dates, and
 * KaTeX / Mermaid rendering when a site loads those itself.
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
      fetch(prefix + '/api/search?q=' + encodeURIComponent(q) + '&limit=8', { signal: ctrl.signal })
        .then((r) => (r.ok ? r.json() : Promise.reject(r.status)))
        .then((data) => render(data, q))
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
      window.mermaid.run({ nodes: diagrams }).catch(() => { /* its error is drawn in place */ });
    } catch (e) { /* leave the source visible */ }
  }

  typesetMath();
  doc.querySelectorAll('.note-body pre.mermaid').forEach((pre) => {
    pre.dataset.source = pre.textContent;
    diagrams.push(pre);
  });
  drawDiagrams();
})();
