/*
 * graph.js: the local graph under a note and the whole graph's page.
 */

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

onPage(() => {
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
});

onPage(() => {
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
});
