/*
 * tests/browser/weigh.mjs: what a page weighs, as Chromium received it:
 * the requests a page makes, with their status, what the network carried
 * (encodedDataLength from the DevTools protocol: headers and body as
 * sent, gzip included) and whether the cache answered; and the order in
 * which DOMContentLoaded fired and Mermaid's script was inserted. Shared
 * by tests/browser/weight.mjs (the budget) and bench/page-weight.mjs
 * (the figures in docs/performance.md).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * A page (in its own browser context when fresh: an empty cache) whose
 * traffic is recorded: page.net.take() returns the requests since the
 * last take(), page.order() the in-page events in the order they came.
 */
export async function weighedPage(browser, fresh) {
  const context = fresh ? await browser.createBrowserContext() : browser.defaultBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const cdp = await page.createCDPSession();
  await cdp.send('Network.enable');
  let reqs = new Map();
  const at = (id) => reqs.get(id) || {}; /* data: URLs are not recorded */
  cdp.on('Network.requestWillBeSent', (e) => {
    if (e.request.url.startsWith('data:')) return;
    reqs.set(e.requestId, {
      url: e.request.url, status: 0, bytes: 0, body: 0, cached: false, finished: false, failed: null,
    });
  });
  cdp.on('Network.requestServedFromCache', (e) => { at(e.requestId).cached = true; });
  cdp.on('Network.responseReceived', (e) => {
    const r = at(e.requestId);
    r.status = e.response.status;
    r.cached = r.cached || e.response.fromDiskCache || e.response.fromMemoryCache;
    r.range = e.response.headers['content-range'] || e.response.headers['Content-Range'] || null;
  });
  cdp.on('Network.dataReceived', (e) => { at(e.requestId).body += e.encodedDataLength; });
  cdp.on('Network.loadingFinished', (e) => {
    const r = at(e.requestId);
    r.bytes = e.encodedDataLength;
    r.finished = true;
  });
  cdp.on('Network.loadingFailed', (e) => {
    const r = at(e.requestId);
    r.failed = e.errorText;
  });
  page.net = {
    take() {
      const out = [...reqs.values()];
      reqs = new Map();
      return out;
    },
  };
  await page.evaluateOnNewDocument(() => {
    const order = [];
    window.quireOrder = order;
    document.addEventListener('DOMContentLoaded', () => order.push('DOMContentLoaded'));
    new MutationObserver((records) => records.forEach((m) => m.addedNodes.forEach((n) => {
      if (n.tagName === 'SCRIPT' && /mermaid/.test(n.src)) order.push('mermaid script');
    }))).observe(document, { childList: true, subtree: true });
  });
  page.order = () => page.evaluate(() => window.quireOrder.slice());
  page.done = async () => {
    await page.close();
    if (fresh) await context.close();
  };
  return page;
}

/* Loads url and waits until the network is idle; returns its requests. */
export async function weigh(page, url) {
  page.net.take();
  await page.goto(url, { waitUntil: 'networkidle0' });
  return page.net.take();
}

/*
 * The bytes the network carried for a list of requests: a request still
 * open (a media file the player paused) counts what it received so far.
 */
export const total = (reqs) => reqs.reduce((n, r) => n + Math.max(r.bytes, r.body), 0);

/* A WAV of seconds of a tone at 8 kHz, 8 bits, mono: 8,000 bytes a second. */
export function writeWav(path, seconds) {
  const rate = 8000, n = rate * seconds, b = Buffer.alloc(44 + n);
  b.write('RIFF', 0);
  b.writeUInt32LE(36 + n, 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20); /* PCM */
  b.writeUInt16LE(1, 22); /* mono */
  b.writeUInt32LE(rate, 24);
  b.writeUInt32LE(rate, 28);
  b.writeUInt16LE(1, 32);
  b.writeUInt16LE(8, 34);
  b.write('data', 36);
  b.writeUInt32LE(n, 40);
  for (let i = 0; i < n; i++) b[44 + i] = 128 + Math.round(40 * Math.sin(i / 10));
  writeFileSync(path, b);
  return b.length;
}

/* The notes both weight.mjs and page-weight.mjs add to a copy of vault-sample. */
export function addWeightNotes(vault) {
  mkdirSync(join(vault, 'weight'), { recursive: true });
  const diagram = '```mermaid\nflowchart LR\n  A[Start] --> B[End]\n```\n';
  const filler = 'A paragraph of filler text that pushes what follows down the page, '.repeat(4) + '\n\n';
  writeFileSync(join(vault, 'weight', 'Plain.md'), '# Plain\n\nA note with neither math nor diagrams.\n');
  /* no link between them: the local graph reads the pages a note links (graph.js) */
  writeFileSync(join(vault, 'weight', 'Other.md'), '# Other\n\nAnother plain note.\n');
  writeFileSync(join(vault, 'weight', 'Near.md'), '# Near\n\nA diagram in the first screen.\n\n' + diagram);
  writeFileSync(join(vault, 'weight', 'Far.md'), '# Far\n\nA diagram far below the fold.\n\n' +
    filler.repeat(120) + diagram);
  writeFileSync(join(vault, 'weight', 'Second.md'), '# Second\n\nAnother page with a diagram.\n\n' +
    diagram.replace('End', 'Finish'));
  writeFileSync(join(vault, 'weight', 'Math.md'), '# Math\n\nEuler: $e^{i\\pi} + 1 = 0$, and ' +
    '$\\mathbb{R}$, $\\mathcal{C}$, $\\mathfrak{g}$, $\\mathscr{L}$, $\\mathsf{x}$, $\\mathtt{y}$.\n\n' +
    '$$\n\\int_0^\\infty e^{-x^2}\\,dx = \\frac{\\sqrt{\\pi}}{2}\n$$\n');
  const size = writeWav(join(vault, 'attachments', 'long-tone.wav'), 240);
  writeFileSync(join(vault, 'weight', 'Audio.md'), '# Audio\n\n![[long-tone.wav]]\n');
  return size;
}
