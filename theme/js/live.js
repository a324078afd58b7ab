/*
 * live.js: live pages. A page served by quire with live pages on (its
 * response says "Server-Timing: quire-live"; an export's does not, so an
 * export never asks) follows its own URL on one EventSource,
 * /_quire/live?u=<path> (docs/http-api.md):
 *   changed: the page is fetched again (no-cache), parsed with DOMParser
 *            and put in place with replacePage(), the scroll kept;
 *   gone:    a notice (role=status) above the content, which stays;
 *   moved:   the address becomes the new URL (history.replaceState) and
 *            its page is put in place.
 * The stream follows the page: a page replaced by navigation (onPage())
 * at another path re-subscribes; pagehide closes it, pageshow reopens.
 * A tab hidden for LIVE_HIDDEN_MS lets go of its stream (a browser keeps
 * six connections to a server over HTTP/1.1, shared by every tab) and
 * reopens it when shown: the hello's ETag tells whether it missed a
 * change. The browser reconnects a dropped stream after the server's
 * retry; a refused one (429, 503) is tried again after a backoff that
 * doubles to LIVE_MAX_BACKOFF_MS, with jitter.
 */

const LIVE_HIDDEN_MS = 60000;
const LIVE_FIRST_BACKOFF_MS = 5000;
const LIVE_MAX_BACKOFF_MS = 300000;

function liveServed() {
  try {
    const nav = performance.getEntriesByType('navigation')[0];
    return !!(nav && nav.serverTiming && nav.serverTiming.some((t) => t.name === 'quire-live'));
  } catch (e) {
    return false;
  }
}
const liveOn = typeof EventSource === 'function' && typeof DOMParser === 'function' && liveServed();
const live = { es: null, path: null, etag: null, failures: 0, timer: 0, hiddenTimer: 0,
  fetching: false, again: false };

function liveClose() {
  clearTimeout(live.timer);
  if (live.es) live.es.close();
  live.es = null;
}

/* The query value of this page's path: decoded once, then encoded whole. */
function liveTarget(path) {
  try {
    return encodeURIComponent(decodeURIComponent(path));
  } catch (e) {
    return encodeURIComponent(path);
  }
}

function liveOpen() {
  liveClose();
  if (!liveOn || doc.hidden) return;
  const path = location.pathname;
  if (path !== live.path) live.etag = null;
  live.path = path;
  const es = new EventSource(prefix + '/_quire/live?u=' + liveTarget(path));
  live.es = es;
  es.addEventListener('hello', (e) => {
    live.failures = 0;
    if (live.etag !== null && e.data !== live.etag) liveRefresh();
    live.etag = e.data;
  });
  es.addEventListener('changed', (e) => {
    live.etag = e.data;
    liveRefresh();
  });
  es.addEventListener('gone', () => liveNotice('This note was deleted or unpublished: ' +
    'what you read is how it last was.'));
  es.addEventListener('moved', (e) => liveFollow(e.data));
  es.onerror = () => {
    /* CONNECTING: the browser tries again after `retry`; CLOSED: refused, back off */
    if (es.readyState !== EventSource.CLOSED || live.es !== es) return;
    live.es = null;
    const wait = Math.min(LIVE_MAX_BACKOFF_MS, LIVE_FIRST_BACKOFF_MS * 2 ** live.failures++);
    live.timer = setTimeout(liveOpen, wait * (0.5 + Math.random()));
  };
}

/* The page again, in place, where the reader was. One fetch at a time; a change meanwhile fetches once more. */
function liveRefresh() {
  if (live.fetching) {
    live.again = true;
    return;
  }
  const path = location.pathname;
  live.fetching = true;
  fetch(path + location.search, { cache: 'no-cache', credentials: 'same-origin' })
    .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
    .then((text) => {
      if (location.pathname !== path) return;
      const next = new DOMParser().parseFromString(text, 'text/html');
      const x = window.scrollX, y = window.scrollY;
      if (replacePage(next)) window.scrollTo(x, y);
    })
    .catch(() => { /* the next change or a reload will do */ })
    .finally(() => {
      live.fetching = false;
      if (live.again) {
        live.again = false;
        liveRefresh();
      }
    });
}

function liveNotice(text) {
  const main = doc.getElementById('quire-main');
  if (!main) return;
  let n = doc.getElementById('quire-live-notice');
  if (!n) {
    n = h('p', { id: 'quire-live-notice', class: 'live-notice', role: 'status' });
    main.prepend(n);
  }
  n.textContent = text;
}

/* A moved page: its new address (same origin only), and its page in place. */
function liveFollow(url) {
  if (!url || url.charAt(0) !== '/' || url.charAt(1) === '/') return;
  history.replaceState(history.state, '', url + location.hash);
  liveOpen();
  liveRefresh();
}

if (liveOn) {
  /* a page put in place at another path (navigation) follows that path */
  onPage(() => {
    if (location.pathname !== live.path) liveOpen();
  });
  addEventListener('pagehide', liveClose);
  addEventListener('pageshow', (e) => {
    if (e.persisted) liveOpen();
  });
  doc.addEventListener('visibilitychange', () => {
    clearTimeout(live.hiddenTimer);
    if (doc.hidden) live.hiddenTimer = setTimeout(liveClose, LIVE_HIDDEN_MS);
    else if (!live.es) liveOpen();
  });
}
