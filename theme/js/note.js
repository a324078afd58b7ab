/*
 * note.js: a note's body once it is on the page: heading anchors, copy
 * buttons, local dates, the table of contents' active entry, and link
 * previews.
 */

/* Note body: heading anchors, copy buttons, local dates */

onPage(() => {
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
});

/* Table of contents: mark the section being read. */

/* one listener for the life of the tab; onPage() gives it the page's entries */
let tocPairs = [], tocLit = null, tocTicking = false;
const tocSpy = () => {
  tocTicking = false;
  if (!tocPairs.length) return;
  const line = parseFloat(getComputedStyle(root).scrollPaddingTop) + 16 || 80;
  let pick = tocPairs[0][1];
  for (const [target, a] of tocPairs) {
    if (target.getBoundingClientRect().top > line) break;
    pick = a;
  }
  if (pick === tocLit) return;
  if (tocLit) tocLit.classList.remove('active');
  pick.classList.add('active');
  tocLit = pick;
};
addEventListener('scroll', () => {
  if (!tocTicking && tocPairs.length) {
    tocTicking = true;
    requestAnimationFrame(tocSpy);
  }
}, { passive: true });
onPage(() => {
  tocPairs = [];
  tocLit = null;
  doc.querySelectorAll('.toc-side a').forEach((a) => {
    let target = null;
    try {
      target = doc.getElementById(decodeURIComponent(a.hash.slice(1)));
    } catch (e) { /* malformed id */ }
    if (target) tocPairs.push([target, a]);
  });
  tocSpy();
});

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
  onPage(hide); /* a page put in place: its links' previews go with it */
}
