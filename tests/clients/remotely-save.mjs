/*
 * tests/clients/remotely-save.mjs: quire's WebDAV endpoint driven the way
 * the Obsidian plugin Remotely Save drives a WebDAV server.
 *
 *	node tests/clients/remotely-save.mjs     (meson runs it as "client-remotely-save")
 *
 * Remotely Save 0.5.1 talks WebDAV through the `webdav` npm package
 * ("webdav": "^5.6.0" in its package.json); package-lock.json here pins
 * 5.6.0, installed by scripts/setup with `npm ci` (nothing is fetched at
 * run time). The calls below are the ones its src/fsWebdav.ts makes, with
 * its arguments: createClient with Basic auth and `Cache-Control: no-cache`;
 * at start exists("/<base>/") (PROPFIND Depth 0), createDirectory when it
 * is missing, getDAVCompliance (OPTIONS); walk() as a breadth-first
 * getDirectoryContents(deep: false) per folder (its default depth setting,
 * "manual_1") or one getDirectoryContents(deep: true) (Depth: infinity, the
 * "manual_infinity" setting); mkdir as createDirectory(recursive: false)
 * then stat; writeFile as putFileContents(overwrite: true) then stat;
 * readFile as getFileContents; rename as moveFile; rm as deleteFile.
 * Remotely Save keeps the vault in a folder of the server, "remote base
 * directory" (the vault's name unless set); the main part here uses the
 * set-up docs/editors.md gives to publish at the site's root: server
 * address http://HOST:PORT/ and remote base directory `dav`. The last part
 * uses the plugin's defaults with server address http://HOST:PORT/dav/
 * (the vault in /dav/<vault name>/).
 *
 * It starts the real `$QUIRE_BIN serve --token-file --no-watch` (changes
 * reach the site only through WebDAV) on a copy of vault-sample with an
 * .obsidian/ folder, and after each step asserts what the served site
 * shows: a page appears, changes, answers 404, moves. Two clients editing
 * one note: the later, sending the ETag it read as If-Match, gets 412 and
 * the note keeps the first client's bytes.
 *
 * Prints "N passed, N failed" like the C tests; exits 1 on a failure.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AuthType, createClient } from 'webdav';
import { check, failures, summary } from '../lib/check.mjs';
import { stop } from '../lib/proc.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = process.env.QUIRE_SOURCE_ROOT || join(here, '..', '..');
const quire = process.env.QUIRE_BIN || join(root, 'build', 'quire');
const LIVE_MS = 30000;


/* What a failed request was, for the report: method, URL, status, body. */
async function describe(err) {
  if (!err || !err.response) return String(err && err.stack || err);
  const r = err.response;
  let body = '';
  try { body = (await r.text()).replace(/\s+/g, ' ').slice(0, 300); } catch { /* read already */ }
  return `${err.message} (${r.url}): ${body}`;
}

/* Runs one client step; a throw is a failure with the request's answer. */
async function step(what, fn) {
  try {
    return await fn();
  } catch (err) {
    check(false, `${what}: ${await describe(err)}`);
    return undefined;
  }
}

/* src/vault/vault.c vault_slugify and vault_note_url (no `slug:`), percent-encoded. */
function slugify(seg) {
  let out = '';
  let dash = false;
  for (const ch of seg.toLowerCase()) {
    if ('-_.'.includes(ch) || /[\p{L}\p{N}]/u.test(ch)) {
      if (dash && out) out += '-';
      dash = false;
      out += ch;
    } else {
      dash = true;
    }
  }
  return out.replace(/\./g, '') ? out : '-';
}
function noteUrl(path) {
  const segs = path.normalize('NFC').replace(/\.md$/, '').split('/');
  const last = segs.pop();
  let url = segs.map((s) => '/' + slugify(s)).join('');
  url += last.toLowerCase() === 'index' ? '/' : '/' + slugify(last);
  return url.split('/').map(encodeURIComponent).join('/');
}

/* quire serve on vault with a token; resolves with its port once it listens. */
async function serve(vault, work) {
  const token = randomBytes(16).toString('hex');
  writeFileSync(join(work, 'token'), token + '\n');
  const proc = spawn(quire, ['serve', '--vault', vault, '--listen', '127.0.0.1:0', '--threads', '2',
    '--no-watch', '--search-rate', '0', '--token-file', join(work, 'token')],
  { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (d) => { log = (log + d).slice(-4000); });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', () => reject(new Error('quire serve exited: ' + out + log)));
  });
  return { proc, port, token, log: () => log };
}

/* The site as a reader sees it (redirects not followed). */
function site(base) {
  const get = async (path) => {
    const r = await fetch(base + path, { redirect: 'manual' });
    return { status: r.status, location: r.headers.get('location'), body: Buffer.from(await r.arrayBuffer()) };
  };
  const until = async (path, pred, ms = LIVE_MS) => {
    const end = Date.now() + ms;
    for (;;) {
      const r = await get(path);
      if (pred(r)) return { ok: true, ...r };
      if (Date.now() > end) return { ok: false, ...r };
      await new Promise((res) => setTimeout(res, 20));
    }
  };
  return {
    get,
    until,
    shows: (path, text, ms) => until(path, (r) => r.status === 200 && r.body.includes(text), ms),
    lacks: (path, text, ms) => until(path, (r) => r.status === 200 && !r.body.includes(text), ms),
    gone: (path, allowed = [404, 410], ms) => until(path, (r) => allowed.includes(r.status), ms),
  };
}

/* Remotely Save's FakeFsWebdav (src/fsWebdav.ts), reduced to its requests. */
class RemotelySave {
  constructor(address, username, password, remoteBaseDir) {
    this.base = remoteBaseDir;
    this.client = createClient(address, {
      username, password, authType: AuthType.Password, headers: { 'Cache-Control': 'no-cache' },
    });
  }

  path(key) { return key === '' || key === '/' ? `/${this.base}/` : `/${this.base}/${key}`; }

  key(filename, type) {
    const pre = `/${this.base}/`;
    if (!(filename === `/${this.base}` || filename.startsWith(pre))) {
      throw new Error(`"${filename}" does not start with "${pre}"`);
    }
    const k = filename.slice(pre.length);
    return type === 'directory' && !k.endsWith('/') ? k + '/' : k;
  }

  async init() {
    if (!(await this.client.exists(this.path('')))) {
      await this.client.createDirectory(this.path(''));
      this.created = true;
    }
    return this.client.getDAVCompliance(this.path(''));
  }

  /* "manual_1": breadth first, Depth 1 per folder, 10 folders at once. */
  async walk1() {
    const out = [];
    let queue = [`/${this.base}`];
    while (queue.length) {
      const next = [];
      for (let i = 0; i < queue.length; i += 10) {
        const got = await Promise.all(queue.slice(i, i + 10).map(
          (p) => this.client.getDirectoryContents(p, { deep: false, details: false })));
        for (const f of got.flat()) {
          out.push(f);
          if (f.type === 'directory') next.push(f.filename);
        }
      }
      queue = next;
    }
    return out;
  }

  /* "manual_infinity": one PROPFIND, Depth: infinity. */
  walkInf() {
    return this.client.getDirectoryContents(`/${this.base}`, { deep: true, details: false });
  }

  async mkdir(key) {
    await this.client.createDirectory(this.path(key), { recursive: false });
    return this.client.stat(this.path(key), { details: false });
  }

  async writeFile(key, bytes) {
    await this.client.putFileContents(this.path(key), bytes, { overwrite: true });
    return this.client.stat(this.path(key), { details: false });
  }

  readFile(key) { return this.client.getFileContents(this.path(key)); }
  rename(a, b) { return this.client.moveFile(this.path(a), this.path(b)); }
  rm(key) { return this.client.deleteFile(this.path(key)); }
}

/* The vault's files and folders as Remotely Save keys ("a/", "a/b.md"). */
function localKeys(dir, pre = '') {
  const out = new Map();
  for (const e of readdirSync(join(dir, pre))) {
    const rel = pre ? `${pre}/${e}` : e;
    if (rel === '.quire') continue;   // quire's data folder, not the vault's
    const st = statSync(join(dir, rel));
    if (st.isDirectory()) {
      out.set(rel + '/', -1);
      for (const [k, v] of localKeys(dir, rel)) out.set(k, v);
    } else {
      out.set(rel, st.size);
    }
  }
  return out;
}

function sameListing(rs, files, vault, what) {
  let keys;
  try {
    keys = new Map(files.map((f) => [rs.key(f.filename, f.type), f.type === 'directory' ? -1 : f.size]));
  } catch (err) {
    check(false, `${what}: ${err.message}`);
    return;
  }
  const want = localKeys(vault);
  const missing = [...want.keys()].filter((k) => !keys.has(k));
  const extra = [...keys.keys()].filter((k) => !want.has(k));
  const sizes = [...want].filter(([k, v]) => keys.has(k) && keys.get(k) !== v).map(([k]) => k);
  check(!missing.length && !extra.length && !sizes.length && files.length === want.size,
    `${what}: lists every file and folder of the vault with its size (${files.length} entries, ` +
    `${want.size} in the vault; missing ${missing.slice(0, 5)}; extra ${extra.slice(0, 5)}; ` +
    `sizes differ: ${sizes.slice(0, 5)})`);
  const bad = files.filter((f) => Number.isNaN(Date.parse(f.lastmod)));
  check(!bad.length, `${what}: every entry has a getlastmodified Date.parse reads (${bad.map((f) => f.filename).slice(0, 3)})`);
}

const sha = (b) => createHash('sha256').update(b).digest('hex');

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'quire-remotely-save-'));
  const vault = join(work, 'vault');
  cpSync(join(root, 'vault-sample'), vault, { recursive: true });
  mkdirSync(join(vault, '.obsidian'));
  writeFileSync(join(vault, '.obsidian', 'app.json'), '{"alwaysUpdateLinks":true}\n');
  const srv = await serve(vault, work);
  process.on('exit', () => srv.proc.kill('SIGKILL'));   // never left running
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(1));
  const base = `http://127.0.0.1:${srv.port}`;
  const web = site(base);
  try {
    await run(srv, base, web, vault);
  } finally {
    await stop(srv.proc);
    if (failures()) console.error('  the server\'s log, last lines:\n' + srv.log().split('\n').slice(-15).join('\n'));
    rmSync(work, { recursive: true, force: true });
  }
}

async function run(srv, base, web, vault) {
  // wrong credentials: 401 with a Basic challenge
  const anon = await fetch(base + '/dav/', { method: 'PROPFIND', headers: { Depth: '0' } });
  check(anon.status === 401 && /^Basic/i.test(anon.headers.get('www-authenticate') || ''),
    `PROPFIND /dav/ without credentials: 401 with WWW-Authenticate: Basic (${anon.status} ${anon.headers.get('www-authenticate')})`);
  const wrong = new RemotelySave(`${base}/`, 'me', 'not-the-token-at-all', 'dav');
  const w = await wrong.client.exists('/dav/').then(() => 'no error', (e) => e.status);
  check(w === 401, `a wrong password is refused 401 (${w})`);

  const rs = new RemotelySave(`${base}/`, 'obsidian', srv.token, 'dav');

  // start: exists, OPTIONS
  const comp = await step('init (exists /dav/, OPTIONS)', () => rs.init());
  check(comp && !rs.created, 'the base directory /dav/ exists');
  check(comp && comp.compliance.includes('1') && comp.compliance.includes('2'),
    `OPTIONS says DAV: 1, 2 (${comp && comp.compliance})`);
  if (!comp) {
    console.error('  the plugin stops here when its start fails: the rest is not tried');
    return;
  }

  // list: Depth 1 walk and Depth infinity
  const l1 = await step('walk, Depth 1 per folder', () => rs.walk1());
  if (l1) sameListing(rs, l1, vault, 'walk with Depth 1');
  const li = await step('walk, Depth infinity', () => rs.walkInf());
  if (li) sameListing(rs, li, vault, 'walk with Depth: infinity');

  // download: every file's bytes
  let same = 0;
  const files = [...localKeys(vault).keys()].filter((k) => !k.endsWith('/'));
  for (const k of files) {
    const got = await step(`readFile ${k}`, () => rs.readFile(k));
    if (got && Buffer.compare(Buffer.from(got), readFileSync(join(vault, k))) === 0) same++;
  }
  check(same === files.length, `readFile gives every file's bytes (${same} of ${files.length})`);

  // upload: a note into a new folder, an image it embeds, a note with a non-ASCII name
  const note = '---\ntitle: From the phone\n---\n\nWritten on the phone, upload-marker-R1.\n\n![[phone-shot.png]]\n';
  const png = readFileSync(join(vault, 'attachments', 'quire-mark.png'));
  await step('mkdir Remote/', () => rs.mkdir('Remote/'));
  const st = await step('writeFile Remote/From Phone.md', () => rs.writeFile('Remote/From Phone.md', Buffer.from(note)));
  check(st && st.size === Buffer.byteLength(note) && st.type === 'file',
    `stat after the upload: a file of ${Buffer.byteLength(note)} bytes (${st && st.size})`);
  const std = await step('stat with details', () => rs.client.stat('/dav/Remote/From Phone.md', { details: true }));
  // (the library strips the quotes of getetag)
  check(std && std.data.etag === sha(Buffer.from(note)),
    `its ETag is the SHA-256 of its bytes (${std && std.data.etag})`);
  await step('writeFile attachments/phone-shot.png', () => rs.writeFile('attachments/phone-shot.png', png));
  let r = await web.shows(noteUrl('Remote/From Phone.md'), 'upload-marker-R1');
  check(r.ok, `the uploaded note is served at ${noteUrl('Remote/From Phone.md')} (${r.status})`);
  check(r.ok && r.body.includes('phone-shot.png'), 'its page embeds the uploaded image');
  r = await web.until('/attachments/phone-shot.png', (x) => x.status === 200, LIVE_MS);
  check(r.ok && Buffer.compare(r.body, png) === 0, `the uploaded image is served with its bytes (${r.status})`);
  const cafe = 'Remote/Café notes.md';
  await step(`writeFile ${cafe}`, () => rs.writeFile(cafe, Buffer.from('# Café\n\nnon-ascii-marker-R2\n')));
  r = await web.shows(noteUrl(cafe), 'non-ascii-marker-R2');
  check(r.ok, `a note with a non-ASCII name is served at ${noteUrl(cafe)} (${r.status})`);
  r = await web.shows('/remote/', 'From the phone');
  check(r.ok, `the new folder's page lists the note (${r.status})`);

  // modify an existing note
  const links = readFileSync(join(vault, 'writing', 'links.md'), 'utf8');
  const links2 = links + '\n\nEdited on the phone: modify-marker-R3.\n';
  await step('writeFile writing/links.md', () => rs.writeFile('writing/links.md', Buffer.from(links2)));
  r = await web.shows('/writing/links', 'modify-marker-R3');
  check(r.ok, `the modified note's page shows the new text (${r.status})`);
  const back = await step('readFile writing/links.md', () => rs.readFile('writing/links.md'));
  check(back && Buffer.from(back).toString() === links2, 'readFile gives the new bytes');

  // delete: a note, then a folder after its note, as the plugin does
  await step('rm writing/tags.md', () => rs.rm('writing/tags.md'));
  r = await web.gone('/writing/tags');
  check(r.ok, `the deleted note's page answers 404 (${r.status})`);
  await step('mkdir Scratch/', () => rs.mkdir('Scratch/'));
  await step('writeFile Scratch/tmp.md', () => rs.writeFile('Scratch/tmp.md', Buffer.from('# Tmp\n\nscratch-marker\n')));
  r = await web.shows('/scratch/tmp', 'scratch-marker');
  check(r.ok, `a note in a second new folder is served (${r.status})`);
  await step('rm Scratch/tmp.md', () => rs.rm('Scratch/tmp.md'));
  await step('rm Scratch/', () => rs.rm('Scratch/'));
  const gone = await step('exists Scratch/', () => rs.client.exists('/dav/Scratch/'));
  check(gone === false, `the deleted folder is gone (exists: ${gone})`);
  r = await web.gone('/scratch/tmp');
  check(r.ok, `its note's page answers 404 (${r.status})`);

  // rename a note, then a folder
  await step('rename writing/callouts.md', () => rs.rename('writing/callouts.md', 'writing/Callouts renamed.md'));
  const calloutText = 'Callouts';
  r = await web.shows('/writing/callouts-renamed', calloutText);
  check(r.ok, `the renamed note answers at its new URL (${r.status})`);
  r = await web.gone('/writing/callouts', [301, 404, 410]);
  check(r.ok, `its old URL no longer serves it (${r.status}${r.location ? ' to ' + r.location : ''})`);
  check(!r.ok || r.status !== 301 || r.location === '/writing/callouts-renamed',
    `a redirect from the old URL goes to the new one (${r.location})`);
  await step('rename Remote/ to Remote Renamed/', () => rs.rename('Remote', 'Remote Renamed'));
  r = await web.shows('/remote-renamed/from-phone', 'upload-marker-R1');
  check(r.ok, `the notes of a renamed folder answer at their new URLs (${r.status})`);
  r = await web.gone('/remote/from-phone', [301, 404, 410]);
  check(r.ok, `and no longer at their old ones (${r.status})`);

  // .obsidian: stored and listed, never published
  const ws = '{"main":{"id":"x"}}\n';
  await step('writeFile .obsidian/workspace.json', () => rs.writeFile('.obsidian/workspace.json', Buffer.from(ws)));
  const li2 = (await step('walk after the changes', () => rs.walk1())) || [];
  const keys = new Set(li2.map((f) => rs.key(f.filename, f.type)));
  check(keys.has('.obsidian/workspace.json') && keys.has('.obsidian/app.json'),
    '.obsidian/ files are listed');
  check(keys.has('Remote Renamed/From Phone.md') && !keys.has('Remote/From Phone.md') &&
    !keys.has('writing/tags.md') && keys.has('writing/Callouts renamed.md'),
  'the listing shows the uploads, renames and deletes');
  const wsBack = await step('readFile .obsidian/workspace.json', () => rs.readFile('.obsidian/workspace.json'));
  check(wsBack && Buffer.from(wsBack).toString() === ws, '.obsidian/workspace.json comes back as written');
  for (const p of ['/.obsidian/workspace.json', '/.obsidian/app.json', '/.obsidian/']) {
    const g = await web.get(p);
    check(g.status === 404, `${p} is not published (${g.status})`);
  }

  // conflict: two clients, one note, If-Match with the ETag each read
  const a = new RemotelySave(`${base}/`, 'laptop', srv.token, 'dav');
  const b = new RemotelySave(`${base}/`, 'phone', srv.token, 'dav');
  const target = '/dav/publishing/deployment.md';
  const sa = await step('A: stat', () => a.client.stat(target, { details: true }));
  const sb = await step('B: stat', () => b.client.stat(target, { details: true }));
  const etag = sa && sa.data.etag;
  check(etag && sb && sb.data.etag === etag, `both read the same ETag (${etag})`);
  const orig = readFileSync(join(vault, 'publishing', 'deployment.md'), 'utf8');
  const textA = orig + '\n\nconflict-marker-A from the laptop, the longer of the two edits.\n';
  const textB = orig + '\n\nconflict-marker-B from the phone.\n';
  const ifm = etag && etag.startsWith('"') ? etag : `"${etag}"`;
  const okA = await step('A: PUT with If-Match', () => a.client.putFileContents(target, Buffer.from(textA),
    { overwrite: true, headers: { 'If-Match': ifm } }));
  check(okA === true, 'the first writer, If-Match its ETag, succeeds');
  const errB = await b.client.putFileContents(target, Buffer.from(textB),
    { overwrite: true, headers: { 'If-Match': ifm } }).then(() => null, (e) => e);
  check(errB && errB.status === 412, `the second writer, If-Match the stale ETag, gets 412 (${errB ? errB.status : 'success'})`);
  const now = await step('B: readFile after the 412', () => b.readFile('publishing/deployment.md'));
  check(now && Buffer.from(now).toString() === textA, 'the note keeps the first writer\'s bytes');
  r = await web.shows('/publishing/deployment', 'conflict-marker-A');
  check(r.ok && !r.body.includes('conflict-marker-B'), `the page shows the first writer's text only (${r.status})`);
  const sb2 = await step('B: stat again', () => b.client.stat(target, { details: true }));
  check(sb2 && sb2.data.etag !== etag && sb2.data.size === Buffer.byteLength(textA),
    `B sees the change as Remotely Save compares it: another ETag and the new size (${sb2 && sb2.data.etag}, ${sb2 && sb2.data.size})`);
  const created = await b.client.putFileContents(target, Buffer.from(textB), { overwrite: false }).then((x) => x, (e) => e.status);
  check(created === false, `PUT with If-None-Match: * on an existing note is refused 412 (${created})`);

  // the plugin's defaults: address /dav/, the vault in /dav/<vault name>/
  const def = new RemotelySave(`${base}/dav/`, 'obsidian', srv.token, 'My Vault');
  await step('init with the defaults (MKCOL /dav/My Vault/)', () => def.init());
  check(def.created, 'the missing base directory is created');
  await step('writeFile My Vault/hello.md', () => def.writeFile('hello.md', Buffer.from('# Hello\n\ndefault-marker-R4\n')));
  r = await web.shows('/my-vault/hello', 'default-marker-R4');
  check(r.ok, `with the defaults, a note is published under /my-vault/ (${r.status})`);
  const dl = await step('walk with the defaults', () => def.walk1());
  check(dl && dl.length === 1 && def.key(dl[0].filename, dl[0].type) === 'hello.md',
    `the defaults' walk lists its one note (${dl && dl.map((f) => f.filename)})`);

  check(srv.proc.exitCode === null, 'quire serve is still running');
}

main().catch((err) => { check(false, 'uncaught: ' + (err && err.stack || err)); }).finally(() => {
  process.exit(summary());
});
