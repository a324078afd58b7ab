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
const GRAPH_MAX = 10000; /* the most linked notes drawn, of a bigger site */
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

/*
 * The layout's work comes in slices of at most about SLICE_WORK node
 * updates (a node's charge, a link's spring, a node moved, a node put in
 * the quadtree: each one), CHUNK at a time, and the main thread is given
 * back between slices (a message to itself: no 4 ms timer clamp), so that
 * frames are drawn and input answered while 10,000 notes are placed. What
 * the last layout did is in window.__quireGraphStats (documented in
 * docs/design.md, "The graph at scale"): slices, maxSliceWork (at most
 * sliceBudget + sliceChunk - 1), ticks, nodes.
 */
const SLICE_WORK = 2000, CHUNK = 250;
function* each(list, fn) {
  for (let i = 0; i < list.length; i += CHUNK) {
    const end = Math.min(list.length, i + CHUNK);
    for (let j = i; j < end; j++) fn(list[j], j);
    yield end - i;
  }
}

/* Barnes-Hut: a quadtree of the nodes, each cell with its count and centre. */
function* quadtree(nodes, out) {
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
  yield* each(nodes, (n) => insert(rootCell, n, 0));
  out.root = rootCell;
}

/*
 * A force layout in the manner of d3-force: charge between every pair
 * (by Barnes-Hut above 300 nodes), springs along links, a pull to the
 * centre, velocity decay. Deterministic: nodes start on a spiral.
 */
function* layoutSteps(g, stats) {
  const nodes = g.nodes, n = nodes.length;
  nodes.forEach((d, i) => {
    const r = 10 * Math.sqrt(i + 0.5), a = i * 2.399963;
    d.x = r * Math.cos(a); d.y = r * Math.sin(a); d.vx = d.vy = 0;
  });
  const STRENGTH = -150, DIST = 50, THETA2 = 0.81;
  const ticks = n > 5000 ? 100 : n > 1000 ? 160 : 300;
  let alpha = 1;
  const decay = 1 - Math.pow(0.001, 1 / ticks);
  const push = (d, dx, dy, l2, count) => {
    if (l2 < 1) l2 = 1;
    const f = STRENGTH * count * alpha / l2;
    d.vx += dx * f; d.vy += dy * f;
  };
  const tree = {};
  const charge = (d) => {
    const stack = [tree.root];
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
  };
  const pairs = (a, i) => {
    for (let j = i + 1; j < n; j++) {
      const b = nodes[j], dx = b.x - a.x, dy = b.y - a.y;
      const l2 = Math.max(dx * dx + dy * dy, 1), f = STRENGTH * alpha / l2;
      a.vx += dx * f; a.vy += dy * f;
      b.vx -= dx * f; b.vy -= dy * f;
    }
  };
  const spring = ([a, b]) => {
    const dx = b.x + b.vx - a.x - a.vx || 1e-6, dy = b.y + b.vy - a.y - a.vy || 1e-6;
    const l = Math.sqrt(dx * dx + dy * dy);
    const k = (l - DIST) / l * alpha / Math.min(a.deg, b.deg);
    const bias = a.deg / (a.deg + b.deg);
    b.vx -= dx * k * bias; b.vy -= dy * k * bias;
    a.vx += dx * k * (1 - bias); a.vy += dy * k * (1 - bias);
  };
  const move = (d) => {
    d.vx -= d.x * 0.06 * alpha; d.vy -= d.y * 0.06 * alpha;
    d.x += (d.vx *= 0.6); d.y += (d.vy *= 0.6);
  };
  for (let t = 0; t < ticks; t++) {
    if (n > 300) {
      yield* quadtree(nodes, tree);
      yield* each(nodes, charge);
    } else {
      yield* each(nodes, pairs);
    }
    yield* each(g.edges, spring);
    yield* each(nodes, move);
    alpha -= alpha * decay;
    if (stats) stats.ticks = t + 1;
  }
}

function layoutGraph(g, stats) {
  const steps = layoutSteps(g, stats);
  if (stats) Object.assign(stats, { nodes: g.nodes.length, edges: g.edges.length, ticks: 0, slices: 0,
    maxSliceWork: 0, sliceBudget: SLICE_WORK, sliceChunk: CHUNK, laidOut: false });
  return new Promise((done) => {
    const channel = new MessageChannel();
    const slice = () => {
      let work = 0, r = { done: false };
      while (work < SLICE_WORK && !(r = steps.next()).done) work += r.value;
      if (stats) {
        stats.slices++;
        stats.maxSliceWork = Math.max(stats.maxSliceWork, work);
      }
      if (!r.done) { channel.port2.postMessage(0); return; }
      channel.port1.close();
      if (stats) stats.laidOut = true;
      done();
    };
    channel.port1.onmessage = slice;
    slice();
  });
}

/*
 * Labels where they fit: the notes most linked first (the current one
 * before all), each label's box on the screen checked against those
 * placed already (a grid of 64 px cells holds them), those that would
 * overlap one left out. Zooming in spreads the notes apart, so more of
 * them fit; a note pointed at or focused shows its label anyway.
 * at(n): its place on the screen {x, y, r}, or null when out of view.
 */
const LABEL_PX = 12;
let measureCtx = null;
function labelWidth(n, font) {
  if (n.tw === undefined || n.tf !== font) {
    if (!measureCtx) measureCtx = doc.createElement('canvas').getContext('2d');
    measureCtx.font = font;
    n.tw = measureCtx.measureText(n.title).width;
    n.tf = font;
  }
  return n.tw;
}
function placeLabels(ranked, at, font, max) {
  const CELL = 64, grid = new Map(), placed = new Set();
  for (const n of ranked) {
    if (placed.size >= max) break;
    const p = at(n);
    if (!p) continue;
    const w = labelWidth(n, font) + 6, top = p.y + p.r, bottom = top + LABEL_PX * 1.55;
    const box = { x0: p.x - w / 2, x1: p.x + w / 2, y0: top, y1: bottom };
    const gx0 = Math.floor(box.x0 / CELL), gx1 = Math.floor(box.x1 / CELL);
    const gy0 = Math.floor(box.y0 / CELL), gy1 = Math.floor(box.y1 / CELL);
    let free = true;
    for (let gx = gx0; free && gx <= gx1; gx++) {
      for (let gy = gy0; free && gy <= gy1; gy++) {
        for (const b of grid.get(gx + ',' + gy) || []) {
          if (b.x0 < box.x1 && box.x0 < b.x1 && b.y0 < box.y1 && box.y0 < b.y1) { free = false; break; }
        }
      }
    }
    if (!free) continue;
    placed.add(n);
    for (let gx = gx0; gx <= gx1; gx++) {
      for (let gy = gy0; gy <= gy1; gy++) {
        const k = gx + ',' + gy;
        if (!grid.has(k)) grid.set(k, []);
        grid.get(k).push(box);
      }
    }
  }
  return placed;
}

/*
 * Draws g into box, with the controls: up to SVG_MAX notes as SVG (one
 * <path> for all edges, one link per node: each is focusable and opens
 * its note), more on one <canvas> (a list of the notes as links, built
 * when opened, stands for the nodes for the keyboard and screen readers).
 * current is the node of this page (or null); labels: 'all' or the most
 * labels shown at once (they show only where they fit: placeLabels()).
 */
const SVG_MAX = 2000;
const count = (k, what) => k.toLocaleString('en') + ' ' + what + (k === 1 ? '' : 's');
const radius = (n) => Math.min(3 + Math.sqrt(n.deg) * 1.5, 14);
async function drawGraph(box, g, current, labels, placed, stats) {
  if (!placed) await layoutGraph(g, stats);
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const d of g.nodes) {
    x0 = Math.min(x0, d.x); y0 = Math.min(y0, d.y);
    x1 = Math.max(x1, d.x); y1 = Math.max(y1, d.y);
  }
  const pad = 30;
  let home = { x: x0 - pad, y: y0 - pad, w: x1 - x0 + 2 * pad, h: y1 - y0 + 2 * pad };
  let view = { ...home };
  const max = labels === 'all' ? Infinity : labels;
  const ranked = [...g.nodes].sort((a, b) => (b === current) - (a === current) || b.deg - a.deg);
  const adj = new Map(g.nodes.map((n) => [n, []]));
  for (const [a, b] of g.edges) { adj.get(a).push(b); adj.get(b).push(a); }
  const painter = g.nodes.length > SVG_MAX ? canvasPainter(box, g, current, adj) : svgPainter(g, current, adj);
  const el = painter.el;
  /* view units a screen pixel, and where a node is on the screen (null: out of view) */
  const frame = () => {
    const r = el.getBoundingClientRect();
    const s = r.width ? Math.max(view.w / r.width, view.h / r.height) : 1;
    const ox = r.width / 2 - (view.x + view.w / 2) / s, oy = r.height / 2 - (view.y + view.h / 2) / s;
    const at = (n) => {
      const x = ox + n.x / s, y = oy + n.y / s;
      return x < 0 || y < 0 || x > r.width || y > r.height ? null : { x, y, r: Math.max(radius(n) / s, 3) };
    };
    return { r, s, ox, oy, at };
  };
  const setView = () => {
    const f = frame();
    const shown = f.r.width ? placeLabels(ranked, f.at, LABEL_PX + 'px ' + getComputedStyle(box).fontFamily, max) : new Set();
    painter.show(view, f, shown);
    if (stats) stats.labels = shown.size;
  };

  const zoom = (f, cx, cy) => {
    const w = Math.min(Math.max(view.w / f, home.w / 20), home.w * 4), k = w / view.w;
    if (cx === undefined) { cx = view.x + view.w / 2; cy = view.y + view.h / 2; }
    view = { x: cx - (cx - view.x) * k, y: cy - (cy - view.y) * k, w, h: view.h * k };
    setView();
  };
  const toView = (e) => {
    const r = el.getBoundingClientRect(), s = Math.max(view.w / r.width, view.h / r.height);
    return { x: view.x + view.w / 2 + (e.clientX - r.left - r.width / 2) * s,
             y: view.y + view.h / 2 + (e.clientY - r.top - r.height / 2) * s, s };
  };
  const pointers = new Map();
  let pinch = 0;
  el.addEventListener('pointerdown', (e) => {
    if (e.target.closest('a') && e.pointerType === 'mouse') return; /* a click on a note opens it */
    pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
    if (pointers.size === 2) {
      const [p, q] = [...pointers.values()];
      pinch = Math.hypot(p.x - q.x, p.y - q.y);
    }
  });
  el.addEventListener('pointermove', (e) => {
    const was = pointers.get(e.pointerId);
    if (!was) { if (painter.hover) painter.hover(e, frame()); return; }
    const now = { x: e.clientX, y: e.clientY };
    if (Math.hypot(now.x - was.x, now.y - was.y) > 3 && !el.hasPointerCapture(e.pointerId)) {
      el.setPointerCapture(e.pointerId);
      el.classList.add('graph-dragging');
    }
    if (!el.hasPointerCapture(e.pointerId)) return;
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
    if (!pointers.size) el.classList.remove('graph-dragging');
  };
  el.addEventListener('pointerup', up);
  el.addEventListener('pointercancel', up);
  /* a drag that ends on a note does not open it */
  let dragEnd = -1e9;
  el.addEventListener('click', (e) => {
    if (performance.now() - dragEnd < 250) e.preventDefault();
    else if (painter.open) painter.open(e, frame());
  }, true);
  el.addEventListener('lostpointercapture', () => { dragEnd = performance.now(); });
  if (box.classList.contains('graph-global')) {
    el.addEventListener('wheel', (e) => {
      e.preventDefault();
      const p = toView(e);
      zoom(Math.exp(-e.deltaY / 300), p.x, p.y);
    }, { passive: false });
  }
  el.addEventListener('keydown', (e) => {
    const step = view.w / 10;
    const moves = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
    if (moves[e.key] && e.target === el) {
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
  box.querySelectorAll('.graph-svg, .graph-tools, .graph-list').forEach((x) => x.remove());
  box.append(el, tools);
  if (painter.list) box.append(painter.list);
  /* a small graph is not blown up to fill the box: at most 2 px a unit */
  const r = el.getBoundingClientRect();
  if (r.width) {
    const w = Math.max(home.w, r.width * 0.5), hh = Math.max(home.h, r.height * 0.5);
    home = { x: home.x - (w - home.w) / 2, y: home.y - (hh - home.h) / 2, w, h: hh };
    view = { ...home };
  }
  setView();
  if (stats) {
    stats.drawnWith = painter.kind;
    stats.drawingElements = el.querySelectorAll('*').length + 1;
  }
  return el;
}

const graphLabel = (g) => 'Graph of ' + g.nodes.length + ' notes. Arrow keys move it, + and - zoom, Tab goes through its notes.';

/* SVG: a link per node, labels shown by class (quire.css), the view by viewBox. */
function svgPainter(g, current, adj) {
  const svg = sv('svg', { class: 'graph-svg', tabindex: '0', role: 'group', 'aria-label': graphLabel(g) });
  let d = '';
  for (const [a, b] of g.edges) d += 'M' + a.x.toFixed(1) + ' ' + a.y.toFixed(1) + 'L' + b.x.toFixed(1) + ' ' + b.y.toFixed(1);
  svg.append(sv('path', { class: 'graph-edges', d }));
  const lit = sv('path', { class: 'graph-edges graph-edges-lit', d: '' });
  svg.append(lit);
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
    const r = radius(n);
    const a = sv('a', { href: n.url, class: 'graph-node' + (n === current ? ' current' : ''), 'aria-label': n.title }, [
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
  let was = new Set();
  return {
    kind: 'svg', el: svg,
    show(view, f, shown) {
      svg.setAttribute('viewBox', view.x + ' ' + view.y + ' ' + view.w + ' ' + view.h);
      if (f.r.width) svg.style.setProperty('--graph-u', String(f.s));
      for (const n of was) if (!shown.has(n)) n.el.classList.remove('labelled');
      for (const n of shown) n.el.classList.add('labelled');
      was = shown;
    },
  };
}

/*
 * A canvas: edges, nodes and the labels that fit, painted again (once a
 * frame at most) when the view moves or a node is pointed at. A click on
 * a node opens it; the notes are also a list of links under the graph.
 */
function canvasPainter(box, g, current, adj) {
  const canvas = h('canvas', { class: 'graph-svg graph-canvas', tabindex: '0', role: 'img', 'aria-label': graphLabel(g).replace('Tab goes through its notes', 'the list below has its notes') });
  const list = h('details', { class: 'graph-list' }, [h('summary', { text: 'The ' + count(g.nodes.length, 'note') + ' of the graph, as a list' })]);
  list.addEventListener('toggle', () => {
    if (!list.open || list.querySelector('ul')) return;
    const ul = h('ul');
    for (const n of [...g.nodes].sort((a, b) => a.title.localeCompare(b.title))) ul.append(h('li', {}, [h('a', { href: n.url, text: n.title })]));
    list.append(ul);
  });
  let last = null, hot = null, queued = 0;
  const css = (name) => getComputedStyle(box).getPropertyValue(name).trim();
  const paint = () => {
    queued = 0;
    const { view, f, shown } = last, r = f.r, dpr = window.devicePixelRatio || 1;
    if (!r.width) return;
    if (canvas.width !== Math.round(r.width * dpr) || canvas.height !== Math.round(r.height * dpr)) {
      canvas.width = Math.round(r.width * dpr);
      canvas.height = Math.round(r.height * dpr);
    }
    const c = canvas.getContext('2d');
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.clearRect(0, 0, r.width, r.height);
    const X = (n) => f.ox + n.x / f.s, Y = (n) => f.oy + n.y / f.s;
    const edges = (es, colour, width) => {
      c.strokeStyle = colour; c.lineWidth = width; c.beginPath();
      for (const [a, b] of es) { c.moveTo(X(a), Y(a)); c.lineTo(X(b), Y(b)); }
      c.stroke();
    };
    edges(g.edges, css('--border-strong'), 1);
    const near = hot ? new Set([hot, ...adj.get(hot)]) : null;
    if (hot) edges(adj.get(hot).map((m) => [hot, m]), css('--accent'), 1.5);
    c.globalAlpha = hot ? 0.35 : 1;
    c.fillStyle = css('--fg-faint');
    c.beginPath();
    for (const n of g.nodes) {
      const p = f.at(n);
      if (p && !(near && near.has(n))) { c.moveTo(p.x + p.r, p.y); c.arc(p.x, p.y, p.r, 0, 2 * Math.PI); }
    }
    c.fill();
    c.globalAlpha = 1;
    c.fillStyle = css('--accent');
    c.beginPath();
    for (const n of near || (current ? [current] : [])) {
      const p = f.at(n);
      if (p) { c.moveTo(p.x + p.r, p.y); c.arc(p.x, p.y, p.r, 0, 2 * Math.PI); }
    }
    c.fill();
    c.font = LABEL_PX + 'px ' + getComputedStyle(box).fontFamily;
    c.textAlign = 'center'; c.textBaseline = 'top'; c.lineJoin = 'round'; c.lineWidth = 3;
    c.strokeStyle = css('--bg-soft'); c.fillStyle = css('--fg');
    for (const n of near ? new Set([...shown, ...near]) : shown) {
      const p = f.at(n);
      if (!p) continue;
      c.strokeText(n.title, p.x, p.y + p.r + 2);
      c.fillText(n.title, p.x, p.y + p.r + 2);
    }
    canvas.dataset.paints = String((+canvas.dataset.paints || 0) + 1);
  };
  const later = () => { if (!queued) queued = requestAnimationFrame(paint); };
  /* the node under the pointer: within its circle, or 6 px of it */
  const nodeAt = (e, f) => {
    const x = e.clientX - f.r.left, y = e.clientY - f.r.top;
    let best = null, bd = Infinity;
    for (const n of g.nodes) {
      const p = f.at(n);
      if (!p) continue;
      const dd = Math.hypot(p.x - x, p.y - y);
      if (dd < Math.max(p.r, 6) && dd < bd) { best = n; bd = dd; }
    }
    return best;
  };
  return {
    kind: 'canvas', el: canvas, list,
    show(view, f, shown) { last = { view, f, shown }; later(); },
    hover(e, f) {
      const n = nodeAt(e, f);
      if (n === hot) return;
      hot = n;
      canvas.style.cursor = n ? 'pointer' : '';
      canvas.title = n ? n.title : '';
      if (last) later();
    },
    open(e, f) {
      const n = nodeAt(e, f);
      if (n) location.assign(n.url);
    },
  };
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
        /* what the layout did, for tests and benchmarks (docs/design.md, "The graph at scale") */
        const stats = window.__quireGraphStats = {};
        return drawGraph(globalBox, shownG, null, 'all', false, stats).then(() => {
          globalBox.dataset.drawn = 'true';
          status.textContent = (shownG === g ? count(g.nodes.length, 'note')
            : 'The ' + count(GRAPH_MAX, 'note') + ' with the most links, of ' + count(g.nodes.length, 'note')) +
            ', ' + count(shownG.edges.length, 'link');
        });
      })
      .catch(() => { status.textContent = 'The graph could not be read.'; });
  }
});
