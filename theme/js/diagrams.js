/*
 * diagrams.js: KaTeX math and Mermaid diagrams on the pages that have
 * them.
 */

/*
 * Math. A page with math loads KaTeX's stylesheet in its head and its
 * script deferred before this one (src/site/layout.c), so the formulas
 * are typeset before DOMContentLoaded and painted once, typeset: math in
 * the first screen is common, and typesetting it after the first paint
 * would move the text under the reader's eyes. Until KaTeX runs (or
 * without script) the TeX is shown as text.
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

/*
 * Diagrams. Mermaid's script is 1.6 MB gzipped: a page with a diagram
 * names it in data-diagram-script (layout.c) and it is loaded here, once
 * per page load and only when a diagram comes within NEAR of the
 * viewport, after DOMContentLoaded, as an async script of the same origin
 * (CSP script-src 'self'). A diagram nobody scrolls to costs nothing; a
 * page replaced in place (onPage) observes its own diagrams and draws
 * them with the script already loaded. Until drawn, the diagram's source
 * is shown as text.
 */
const NEAR = '100% 0px'; /* a screen above and below the viewport */
const diagrams = [];
let mermaidScript = null; /* the promise of Mermaid's script, once asked for */
let nearObserver = null;
let diagramPage = 0;      /* which page a late callback was meant for */
let contentLoaded = doc.readyState === 'complete';
const afterLoaded = [];
if (!contentLoaded) {
  doc.addEventListener('DOMContentLoaded', () => {
    contentLoaded = true;
    afterLoaded.splice(0).forEach((fn) => fn());
  }, { once: true });
}
const whenContentLoaded = (fn) => (contentLoaded ? fn() : afterLoaded.push(fn));

function loadMermaid(url) {
  if (window.mermaid) return Promise.resolve();
  if (!mermaidScript) {
    mermaidScript = new Promise((resolve, reject) => {
      const s = h('script', { src: url });
      s.addEventListener('load', resolve);
      s.addEventListener('error', () => {
        mermaidScript = null; /* the next diagram that comes near asks again */
        s.remove();
        reject(new Error('cannot load ' + url));
      });
      doc.head.append(s);
    });
  }
  return mermaidScript;
}

function draw(nodes) {
  if (!window.mermaid || !nodes.length) return;
  nodes.forEach((pre) => {
    pre.removeAttribute('data-processed');
    pre.textContent = pre.dataset.source;
  });
  try {
    window.mermaid.initialize({
      startOnLoad: false, securityLevel: 'strict', theme: isDark() ? 'dark' : 'default',
    });
    /* run() draws every diagram, then throws the first one's error: link them all anyway */
    window.mermaid.run({ nodes })
      .catch(() => { /* its error is drawn in place */ })
      .finally(() => nodes.forEach(linkDiagram));
  } catch (e) { /* leave the source visible */ }
}

/* The diagrams drawn so far, again (the colour scheme changed). */
function drawDiagrams() {
  draw(diagrams.filter((pre) => pre.dataset.near !== undefined && pre.isConnected));
}

/* fn(elements) for the elements of list as they come near the viewport, each once. */
function whenNear(list, fn) {
  if (!window.IntersectionObserver) {
    fn(list);
    return null;
  }
  const io = new IntersectionObserver((entries) => {
    const near = entries.filter((e) => e.isIntersecting).map((e) => e.target);
    near.forEach((el) => io.unobserve(el));
    if (near.length) fn(near);
  }, { rootMargin: NEAR });
  list.forEach((el) => io.observe(el));
  return io;
}

onPage(() => {
  typesetMath();
  const page = ++diagramPage;
  if (nearObserver) nearObserver.disconnect();
  nearObserver = null;
  diagrams.length = 0;
  doc.querySelectorAll('.note-body pre.mermaid').forEach((pre) => {
    pre.dataset.source = pre.textContent;
    diagrams.push(pre);
  });
  const named = doc.querySelector('.note-body[data-diagram-script]');
  const url = named && named.dataset.diagramScript;
  if (!diagrams.length || !(url || window.mermaid)) return;
  whenContentLoaded(() => {
    if (page !== diagramPage) return; /* replaced in the meantime */
    nearObserver = whenNear(diagrams.slice(), (near) => {
      near.forEach((pre) => { pre.dataset.near = ''; });
      loadMermaid(url).then(() => draw(near.filter((pre) => pre.isConnected)), () => {});
    });
  });
});
