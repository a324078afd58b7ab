/*
 * diagrams.js: KaTeX math and Mermaid diagrams on the pages that load
 * them.
 */

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

onPage(() => {
  typesetMath();
  diagrams.length = 0;
  doc.querySelectorAll('.note-body pre.mermaid').forEach((pre) => {
    pre.dataset.source = pre.textContent;
    diagrams.push(pre);
  });
  drawDiagrams();
});
