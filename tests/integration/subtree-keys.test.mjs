// Proves docs/behaviour.md 15.3 "Keys that see one subtree" (issue 25, point 3) over real HTTP
// on loopback with --auth keys, against a temp SQLite database and (pg/integration/subtree-keys)
// a fresh PostgreSQL database. One tenant, "acme", holds three parts: /memories/projects/x
// (key X, write; key RX, read), its sibling /memories/projects/y (key Y, write) and the rest
// (/memories/top.md, /memories/projects/xx: a name that starts as x does), written with a key of
// the whole tenant (W), with --expire-after (for GET /v1/expiring). Every file of a part carries its token (S3CR3T<x>, S3CR3T<y>,
// S3CR3T<top>), and so does every path name outside x. X, the attacker, then tries to reach
// the rest with every command, through /v1 (history, versions, restore, redact, the change
// feed, search, clear) and MCP, with the attack forms of the tenant-isolation suite (traversal,
// look-alike prefixes, percent and backslash forms, hidden names), and a replayed
// Idempotency-Key. Checked after every request: no answer to X carries a token other than
// x's unless the request did; a path outside x answers exactly as a path that does not exist
// (the same text whether something is there or not); writes outside x or above it are
// refused with one text; the rest of the tenant, read back with W, is exactly as it was.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createKey, runMemoryd, startServer } from '../lib/server.mjs';

const TOKEN_RE = /S3CR3T<([^>]*)>/g;
const OUT = (p) => `Error: The path ${p} is outside /memories/projects/x, the part of /memories this API key may change. Nothing was done.`;
const NOT_THERE = (p) => `The path ${p} does not exist. Please provide a valid path.`;
const HEAD = (p) => `Here're the files and directories up to 2 levels deep in ${p}, excluding hidden items and node_modules:`;

let s;
const key = {};
const FILES = {
  '/memories/top.md': 'top file S3CR3T<top>\n',
  '/memories/projects/xx/S3CR3T<top>.md': 'look-alike S3CR3T<top>\n',
  '/memories/projects/y/b.md': 'y file S3CR3T<y>\nsecond line\n',
  '/memories/projects/y/S3CR3T<y>/deep.md': 'deep S3CR3T<y>\n',
  '/memories/projects/.hidden-S3CR3T<top>.md': 'hidden S3CR3T<top>\n',
};
const X_FILES = {
  '/memories/projects/x/a.md': 'x file S3CR3T<x>\nline two\n',
  '/memories/projects/x/d/c.md': 'x deep S3CR3T<x>\n',
};
let yVersion; // a version of y's file

const auth = (k) => ({ authorization: `Bearer ${k}` });
const as = (k, body) => s.post(body, { headers: auth(k) });
const get = (k, url) => s.request('GET', url, { headers: auth(k) });
const postJson = (k, url, body, headers = {}) => s.request('POST', url, { headers: { ...auth(k), 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

// The tokens of other parts than x in `text`, unless `sent` (the request) holds them.
function leaks(text, sent) {
  const out = [];
  for (const m of String(text).matchAll(TOKEN_RE)) if (m[1] !== 'x' && !String(sent).includes(m[0])) out.push(m[0]);
  return out;
}

// X's request, checked for leaks.
async function x(body, k = key.X) {
  const r = await as(k, body);
  assert.deepEqual(leaks(r.text, JSON.stringify(body)), [], `leak in ${r.text}`);
  return r;
}
async function xGet(url, k = key.X) {
  const r = await get(k, url);
  assert.deepEqual(leaks(r.text, url), [], `leak in ${r.text}`);
  return r;
}

// The whole tenant's files as W sees them (files only; by a recursive walk of views).
async function tree() {
  const out = {};
  const walk = async (dir) => {
    const r = await as(key.W, { command: 'view', path: dir });
    for (const line of r.json.content.split('\n').slice(2)) {
      const p = line.split('\t')[1];
      if (p.endsWith('/')) await walk(p.slice(0, -1));
      else out[p] = (await as(key.W, { command: 'view', path: p })).json.content;
    }
  };
  await walk('/memories');
  for (const p of Object.keys(FILES)) if (p.includes('/.')) out[p] = (await as(key.W, { command: 'view', path: p })).json.content;
  return out;
}
let theRest; // tree() of everything but x, before the attacks

before(async () => {
  s = await startServer({ args: ['--auth', 'keys', '--expire-after', '30d'] });
  key.W = await createKey(s, 'acme', 'write');
  key.X = await createKey(s, 'acme', 'write', ['--path', '/memories/projects/x']);
  key.RX = await createKey(s, 'acme', 'read', ['--path', '/memories/projects/x/']);
  key.Y = await createKey(s, 'acme', 'write', ['--path', '/memories/projects/y']);
  for (const [p, text] of Object.entries(FILES)) {
    const r = await as(p.includes('/y/') ? key.Y : key.W, { command: 'create', path: p, file_text: text });
    assert.equal(r.json.is_error, false, r.text);
  }
  const e = await as(key.Y, { command: 'str_replace', path: '/memories/projects/y/b.md', old_str: 'second', new_str: ' 2nd' });
  assert.equal(e.json.is_error, false, e.text);
  FILES['/memories/projects/y/b.md'] = 'y file S3CR3T<y>\n 2nd line\n';
  for (const [p, text] of Object.entries(X_FILES)) {
    const r = await x({ command: 'create', path: p, file_text: text });
    assert.equal(r.json.is_error, false, r.text);
  }
  const h = await get(key.Y, '/v1/history?path=/memories/projects/y/b.md');
  yVersion = h.json.versions[0].version;
  const all = await tree();
  theRest = Object.fromEntries(Object.entries(all).filter(([p]) => !p.startsWith('/memories/projects/x/')));
  assert.equal(Object.keys(theRest).length, Object.keys(FILES).length);
});

after(async () => {
  await s.stop();
  fs.rmSync(s.dir, { recursive: true, force: true });
});

test('memoryd keys create --path: canonical, listed; refused for admin keys and bad paths', async () => {
  const r = await runMemoryd(['keys', 'list', '--db', s.dbPath, '--tenant', 'acme']);
  const paths = r.stdout.trim().split('\n').slice(1).map((l) => l.split('\t')[6]).sort();
  assert.deepEqual(paths, ['/memories', '/memories/projects/x', '/memories/projects/x', '/memories/projects/y']);
  const bad = [
    [['--scope', 'admin', '--path', '/memories/a'], 'memoryd keys: --path is for read and write keys (an admin key sees every tenant)\n'],
    [['--scope', 'write', '--path', '/etc'], 'memoryd keys: --path must be a valid path below /memories (as the memory tool\'s paths; at most 1024 bytes): /etc\n'],
    [['--scope', 'write', '--path', '/memories/a/../b'], 'memoryd keys: --path must be a valid path below /memories (as the memory tool\'s paths; at most 1024 bytes): /memories/a/../b\n'],
  ];
  for (const [args, msg] of bad) {
    const c = await runMemoryd(['keys', 'create', '--db', s.dbPath, '--tenant', 'acme', ...args]);
    assert.equal(c.code, 2);
    assert.ok(c.stderr.includes(msg), c.stderr);
  }
  const l = await runMemoryd(['keys', 'list', '--db', s.dbPath, '--tenant', 'acme']);
  assert.equal(l.stdout.trim().split('\n').length, 5, 'nothing was created');
});

test('views: an ancestor lists the subtree alone, sized as the subtree; everything else does not exist', async () => {
  const size = '43B'; // the bytes of x's two files
  let r = await x({ command: 'view', path: '/memories' });
  assert.equal(r.json.content, `${HEAD('/memories')}\n${size}\t/memories\n${size}\t/memories/projects/\n${size}\t/memories/projects/x/`);
  r = await x({ command: 'view', path: '/memories/projects/' });
  assert.equal(r.json.content, `${HEAD('/memories/projects/')}\n${size}\t/memories/projects/\n${size}\t/memories/projects/x/\n26B\t/memories/projects/x/a.md\n17B\t/memories/projects/x/d/`);
  r = await x({ command: 'view', path: '/memories/projects/x' });
  assert.equal(r.json.content, `${HEAD('/memories/projects/x')}\n${size}\t/memories/projects/x\n26B\t/memories/projects/x/a.md\n17B\t/memories/projects/x/d/\n17B\t/memories/projects/x/d/c.md`);
  assert.equal((await x({ command: 'view', path: '/memories/projects/x/a.md' })).json.content, 'Here\'s the content of /memories/projects/x/a.md with line numbers:\n     1\tx file S3CR3T<x>\n     2\tline two\n     3\t');
  // Outside: as a path that does not exist, whether or not something is there.
  for (const p of ['/memories/top.md', '/memories/projects/y', '/memories/projects/y/b.md', '/memories/projects/xx',
    '/memories/projects/xx/S3CR3T<top>.md', '/memories/projects/.hidden-S3CR3T<top>.md', '/memories/projects/y/nothing.md', '/memories/nothing']) {
    r = await x({ command: 'view', path: p });
    assert.deepEqual([r.status, r.json.is_error, r.json.content], [404, true, NOT_THERE(p)], p);
  }
  // The read key of the same subtree sees the same, and may not write.
  r = await x({ command: 'view', path: '/memories' }, key.RX);
  assert.equal(r.json.content, `${HEAD('/memories')}\n${size}\t/memories\n${size}\t/memories/projects/\n${size}\t/memories/projects/x/`);
  r = await x({ command: 'create', path: '/memories/projects/x/new.md', file_text: 'n' }, key.RX);
  assert.equal(r.status, 403);
  // A key whose subtree does not exist yet: /memories is empty, its other ancestors are not there.
  const fresh = await createKey(s, 'acme', 'write', ['--path', '/memories/projects/z/deeper']);
  r = await as(fresh, { command: 'view', path: '/memories' });
  assert.equal(r.json.content, `${HEAD('/memories')}\n0B\t/memories`);
  r = await as(fresh, { command: 'view', path: '/memories/projects' });
  assert.equal(r.json.content, NOT_THERE('/memories/projects'));
});

test('writes: outside the subtree refused or answered as for nothing there; nothing changed', async () => {
  const cases = [
    // [command, expected text, expected status]
    [{ command: 'create', path: '/memories/projects/y/c.md', file_text: 'evil' }, OUT('/memories/projects/y/c.md'), 403],
    [{ command: 'create', path: '/memories/projects/y/b.md', file_text: 'evil' }, OUT('/memories/projects/y/b.md'), 403],
    [{ command: 'create', path: '/memories/projects/xx/S3CR3T<top>.md', file_text: 'evil' }, OUT('/memories/projects/xx/S3CR3T<top>.md'), 403],
    [{ command: 'create', path: '/memories/projects', file_text: 'evil' }, OUT('/memories/projects'), 403],
    [{ command: 'create', path: '/memories/x-evil.md', file_text: 'evil' }, OUT('/memories/x-evil.md'), 403],
    [{ command: 'str_replace', path: '/memories/projects/y/b.md', old_str: 'y', new_str: 'z' }, `Error: ${NOT_THERE('/memories/projects/y/b.md')}`, 404],
    [{ command: 'str_replace', path: '/memories/projects/y/none.md', old_str: 'y', new_str: 'z' }, `Error: ${NOT_THERE('/memories/projects/y/none.md')}`, 404],
    [{ command: 'insert', path: '/memories/top.md', insert_line: 0, insert_text: 'evil' }, 'Error: The path /memories/top.md does not exist', 404],
    [{ command: 'insert', path: '/memories/none.md', insert_line: 0, insert_text: 'evil' }, 'Error: The path /memories/none.md does not exist', 404],
    [{ command: 'delete', path: '/memories/projects/y' }, 'Error: The path /memories/projects/y does not exist', 404],
    [{ command: 'delete', path: '/memories/projects/q' }, 'Error: The path /memories/projects/q does not exist', 404],
    [{ command: 'delete', path: '/memories/projects' }, OUT('/memories/projects'), 403],
    [{ command: 'delete', path: '/memories' }, OUT('/memories'), 403],
    [{ command: 'rename', old_path: '/memories/projects/y/b.md', new_path: '/memories/projects/x/stolen.md' }, 'Error: The path /memories/projects/y/b.md does not exist', 404],
    [{ command: 'rename', old_path: '/memories/projects/x/a.md', new_path: '/memories/projects/y/a.md' }, OUT('/memories/projects/y/a.md'), 403],
    [{ command: 'rename', old_path: '/memories/projects/x', new_path: '/memories/x' }, OUT('/memories/x'), 403],
    [{ command: 'rename', old_path: '/memories/projects', new_path: '/memories/projects/x/p' }, OUT('/memories/projects'), 403],
    // Attack forms: refused by the path rules before the subtree is asked.
    [{ command: 'create', path: '/memories/projects/x/../y/c.md', file_text: 'e' }, 'Error: Path /memories/projects/x/../y/c.md contains a \'..\' segment, which is not allowed', 400],
    [{ command: 'create', path: '/memories/projects/x/%2e%2e/y/c.md', file_text: 'e' }, null, 400],
    [{ command: 'create', path: '/memories/projects/x\\..\\y\\c.md', file_text: 'e' }, null, 400],
  ];
  for (const [cmd, text, status] of cases) {
    const r = await x(cmd, cmd.command === 'view' ? key.RX : key.X);
    assert.equal(r.status, status, `${JSON.stringify(cmd)}: ${r.text}`);
    assert.equal(r.json.is_error, true);
    if (text) assert.equal(r.json.content, text, JSON.stringify(cmd));
  }
  // Inside, a name that only begins as the subtree's does not count as inside (/memories/projects/xx).
  assert.deepEqual(await tree().then((t) => Object.fromEntries(Object.entries(t).filter(([p]) => !p.startsWith('/memories/projects/x/')))), theRest);
});

test('history, versions, restore and redact: filtered to the subtree, refused across it', async () => {
  let r = await xGet('/v1/history?path=/memories/projects/y/b.md');
  assert.deepEqual([r.status, r.json], [404, { error: 'The path /memories/projects/y/b.md has no history and does not exist' }]);
  r = await xGet('/v1/history?path=/memories/top.md');
  assert.deepEqual([r.status, r.json], [404, { error: 'The path /memories/top.md has no history and does not exist' }]);
  r = await xGet('/v1/history?path=/memories');
  assert.deepEqual([r.status, r.json], [200, { path: '/memories', versions: [], next_cursor: null }]);
  r = await xGet('/v1/history?path=/memories/projects/x/a.md');
  assert.equal(r.json.versions.length, 1);
  const xVersion = r.json.versions[0].version;
  const gone = (v) => `Version ${v} is not kept (there is no such version of this tenant, or retention has pruned it)`;
  r = await xGet(`/v1/versions/${yVersion}`);
  assert.deepEqual([r.status, r.json], [404, { error: gone(yVersion) }]);
  r = await xGet(`/v1/versions/${xVersion}`);
  assert.deepEqual([r.status, r.json.path, r.json.command, r.json.existed], [200, '/memories/projects/x/a.md', 'create', false]);
  // Restore and redact across the boundary.
  const refusals = [
    [{ path: '/memories/projects/y/b.md', version: yVersion }, 403, OUT('/memories/projects/y/b.md')],
    [{ path: '/memories', before: 1 }, 403, OUT('/memories')],
    [{ path: '/memories/projects', before: 1 }, 403, OUT('/memories/projects')],
    [{ path: '/memories/projects/x/a.md', version: yVersion }, 404, gone(yVersion)],
  ];
  for (const [body, status, text] of refusals) {
    r = await postJson(key.X, '/v1/restore', body);
    assert.deepEqual([r.status, r.json], [status, { error: text.replace(/^Error: /, '') }], JSON.stringify(body));
    assert.deepEqual(leaks(r.text, JSON.stringify(body)), []);
  }
  r = await postJson(key.X, '/v1/redact', { path: '/memories/projects/y/b.md', version: yVersion });
  assert.deepEqual([r.status, r.json], [403, { error: OUT('/memories/projects/y/b.md').replace(/^Error: /, '') }]);
  r = await postJson(key.X, '/v1/redact', { path: '/memories/projects/x/a.md', version: yVersion });
  assert.deepEqual([r.status, r.json], [404, { error: gone(yVersion) }]);
  // Y's version is still readable by Y, unredacted.
  r = await get(key.Y, `/v1/versions/${yVersion}`);
  assert.equal(r.json.redacted, false);
  assert.equal(r.json.content, 'y file S3CR3T<y>\nsecond line\n');
});

test('change feed and search: filtered to the subtree; MCP the same', async () => {
  const feed = await xGet('/v1/changes?after=0&limit=1000');
  assert.equal(feed.status, 200);
  assert.deepEqual(feed.json.changes.map((c) => [c.command, c.paths]),
    [['create', ['/memories/projects/x/a.md']], ['create', ['/memories/projects/x/d/c.md']]]);
  // A page of entries X may not read answers at once, with next_after past them.
  const page = await xGet('/v1/changes?after=0&limit=2&wait=30');
  assert.deepEqual([page.json.changes, page.json.next_after], [[], 2]);
  // A rename out of the subtree by a key of the whole tenant: the path outside is null.
  let r = await as(key.W, { command: 'create', path: '/memories/projects/x/leaving.md', file_text: 'bye\n' });
  assert.equal(r.json.is_error, false);
  r = await as(key.W, { command: 'rename', old_path: '/memories/projects/x/leaving.md', new_path: '/memories/projects/y/S3CR3T<y>-arrived.md' });
  assert.equal(r.json.is_error, false, r.text);
  const last = (await xGet('/v1/changes?after=0&limit=1000')).json.changes.at(-1);
  assert.deepEqual([last.command, last.paths], ['rename', ['/memories/projects/x/leaving.md', null]]);
  r = await as(key.W, { command: 'delete', path: '/memories/projects/y/S3CR3T<y>-arrived.md' });
  assert.equal(r.json.is_error, false);
  // Search: the subtree's hits alone, wherever X asks.
  const hits = async (url) => (await xGet(url)).json.hits.map((h) => h.path);
  assert.deepEqual(await hits('/v1/search?q=S3CR3T'), ['/memories/projects/x/a.md', '/memories/projects/x/d/c.md'].sort());
  assert.deepEqual(await hits('/v1/search?q=file'), ['/memories/projects/x/a.md']);
  assert.deepEqual(await hits('/v1/search?q=file&path=/memories/projects'), ['/memories/projects/x/a.md']);
  assert.deepEqual(await hits('/v1/search?q=file&path=/memories/projects/y'), []);
  assert.deepEqual(await hits('/v1/search?q=top&path=/memories/top.md'), []);
  // What would expire: the subtree's files alone, pages included.
  const exp = await xGet('/v1/expiring?within=60d');
  assert.deepEqual([exp.json.expire_after, exp.json.files.map((f) => f.path), exp.json.next_cursor], ['30d', Object.keys(X_FILES), null]);
  const one = await xGet('/v1/expiring?within=60d&limit=1');
  assert.deepEqual([one.json.files.map((f) => f.path), one.json.next_cursor], [['/memories/projects/x/a.md'], '/memories/projects/x/a.md']);
  const all = await get(key.W, '/v1/expiring?within=60d&limit=1000');
  assert.ok(all.json.files.length > Object.keys(X_FILES).length);
  // MCP: the memory tool and memory_search with X's key.
  const headers = { ...auth(key.X), 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await fetch(`${s.url}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) });
  await init.text();
  const session = init.headers.get('mcp-session-id');
  const call = async (name, args) => {
    const res = await fetch(`${s.url}/mcp`, { method: 'POST', headers: { ...headers, 'mcp-session-id': session }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args } }) });
    const text = await res.text();
    assert.deepEqual(leaks(text, JSON.stringify(args)), [], text);
    return JSON.parse(text).result;
  };
  let m = await call('memory', { command: 'view', path: '/memories/projects/y/b.md' });
  assert.deepEqual([m.isError, m.content[0].text], [true, NOT_THERE('/memories/projects/y/b.md')]);
  m = await call('memory', { command: 'create', path: '/memories/projects/y/mcp.md', file_text: 'evil' });
  assert.deepEqual([m.isError, m.content[0].text], [true, OUT('/memories/projects/y/mcp.md')]);
  m = await call('memory', { command: 'view', path: '/memories' });
  assert.equal(m.content[0].text, `${HEAD('/memories')}\n43B\t/memories\n43B\t/memories/projects/\n43B\t/memories/projects/x/`);
  m = await call('memory_search', { q: 'S3CR3T' });
  assert.doesNotMatch(m.content[0].text, /projects\/y|top\.md/);
  assert.match(m.content[0].text, /\/memories\/projects\/x\/a\.md/);
});

test('an Idempotency-Key of another subtree is not replayed', async () => {
  const body = { command: 'create', path: '/memories/projects/y/idem.md', file_text: 'y idem S3CR3T<y>\n' };
  let r = await s.post(body, { headers: { ...auth(key.Y), 'idempotency-key': 'shared-key' } });
  assert.equal(r.json.is_error, false, r.text);
  r = await s.post(body, { headers: { ...auth(key.X), 'idempotency-key': 'shared-key' } });
  assert.equal(r.status, 422, r.text);
  assert.equal(r.headers.get('idempotent-replayed'), null);
  assert.equal(r.json.content, 'Error: This Idempotency-Key was already used for another request (a different body, path or precondition); a new request needs a new key.');
  r = await as(key.W, { command: 'delete', path: '/memories/projects/y/idem.md' });
  assert.equal(r.json.is_error, false);
});

test('clear: a subtree key clears its subtree alone, and a restore undoes it', async () => {
  const r = await s.request('DELETE', '/v1/memories', { headers: auth(key.X) });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([r.json.path, r.json.removed, r.json.versions_recorded], ['/memories/projects/x', 2, 2]);
  assert.equal((await x({ command: 'view', path: '/memories/projects/x' })).json.content, `${HEAD('/memories/projects/x')}\n0B\t/memories/projects/x`);
  const rest = await tree();
  assert.deepEqual(rest, theRest);
  const back = await postJson(key.X, '/v1/restore', { path: '/memories/projects/x', before: r.json.restore_before });
  assert.equal(back.status, 200, back.text);
  assert.equal(back.json.restored, 2);
  for (const [p, text] of Object.entries(X_FILES)) {
    const v = await x({ command: 'view', path: p });
    assert.equal(v.json.content, `Here's the content of ${p} with line numbers:\n${text.split('\n').map((l, i) => `${String(i + 1).padStart(6)}\t${l}`).join('\n')}`);
  }
  // Everything outside x is as it was before the attacks.
  const after = await tree();
  assert.deepEqual(Object.fromEntries(Object.entries(after).filter(([p]) => !p.startsWith('/memories/projects/x/'))), theRest);
});

test('SQL and LIKE metacharacters in a subtree name match nothing but themselves', async () => {
  const P = await createKey(s, 'acme', 'write', ['--path', '/memories/m/p_']);
  const others = { '/memories/m/pq/f.md': 'pq S3CR3T<pq>\n', '/memories/m/p%/f.md': 'pct S3CR3T<pct>\n', '/memories/m/p_x/f.md': 'px S3CR3T<px>\n' };
  for (const [p, text] of Object.entries(others)) assert.equal((await as(key.W, { command: 'create', path: p, file_text: text })).json.is_error, false);
  const own = await as(P, { command: 'create', path: '/memories/m/p_/f.md', file_text: 'mine S3CR3T<x>\n' });
  assert.equal(own.json.is_error, false, own.text);
  const check = async (r, sent = '') => { assert.deepEqual(leaks(r.text, sent), [], r.text); return r; };
  let r = await check(await as(P, { command: 'view', path: '/memories/m' }));
  assert.equal(r.json.content, `${HEAD('/memories/m')}\n15B\t/memories/m\n15B\t/memories/m/p_/\n15B\t/memories/m/p_/f.md`);
  r = await check(await get(P, '/v1/search?q=S3CR3T&path=/memories/m'));
  assert.deepEqual(r.json.hits.map((h) => h.path), ['/memories/m/p_/f.md']);
  for (const p of Object.keys(others)) {
    r = await check(await as(P, { command: 'delete', path: p }));
    assert.deepEqual([r.status, r.json.content], [404, `Error: The path ${p} does not exist`]);
  }
  r = await check(await s.request('DELETE', '/v1/memories', { headers: auth(P) }));
  assert.deepEqual([r.json.path, r.json.removed], ['/memories/m/p_', 1]);
  for (const [p, text] of Object.entries(others)) {
    r = await as(key.W, { command: 'view', path: p });
    assert.equal(r.json.content, `Here's the content of ${p} with line numbers:\n     1\t${text.trim()}\n     2\t`);
  }
  assert.equal((await as(key.W, { command: 'delete', path: '/memories/m' })).json.is_error, false);
});
