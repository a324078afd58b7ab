/*
 * search.js: live search under the box, the static index of an export,
 * and the key that jumps to the box.
 */

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
    const fixed = data && typeof data.corrected === 'string' ? data.corrected : '';
    if (fixed && results.length) {
      /* typos forgiven: which words the results are for, as search engines say it */
      list.append(h('div', { class: 'search-corrected' },
        [data.exact ? 'Including results for ' : 'Showing results for ', h('strong', { text: fixed })]));
    }
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

/* the header's box lives as long as the tab; the /search page's own box comes with its page */
const forms = [...doc.querySelectorAll('form.search')].filter((f) => !f.closest('#quire-main'));
forms.forEach(liveSearch);
onPage(() => doc.querySelectorAll('#quire-main form.search').forEach(liveSearch));

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
