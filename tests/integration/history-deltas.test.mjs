// Versions kept as reverse deltas (issue 26, point 1; docs/architecture.md "History") are
// byte-exact, on SQLite and (pg/integration/history-deltas) PostgreSQL: a randomized model of
// 1,000 writes to a dozen files — creates, whole texts replaced, str_replace and insert of one line,
// large files, empty files, deletes and re-creates, renames both ways, restores of a version,
// and redactions — with --history-versions 40, so that retention prunes the oldest versions of
// every file while the writes go on and runs of deltas longer than the limit (32) are cut by
// versions kept whole. Every 100 writes and at the end every version the model knows is read
// back: a kept one must be exactly what the file was before that write (GET /v1/versions/{v}:
// content byte for byte, size, sha256; a redacted one has no content), and a missing one must
// be older than every kept version of its path (pruned, never lost from the middle). The files
// themselves are checked as well.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { dbSql } from '../lib/db.mjs';
import { startServer } from '../lib/server.mjs';
import { mulberry32, volume } from '../lib/util.mjs';

const KEEP = 40;
const WRITES = volume(1000, 300);
const T = 'deltas';
let s;

before(async () => { s = await startServer({ args: ['--history-versions', String(KEEP)] }); });
after(async () => { await s.stop(); fs.rmSync(s.dir, { recursive: true, force: true }); });

const sha = (text) => crypto.createHash('sha256').update(Buffer.from(text, 'utf8')).digest('hex');

async function write(cmd) {
  const r = await s.post(cmd, { tenant: T });
  assert.equal(r.status, 200, `${JSON.stringify(cmd).slice(0, 200)}: ${r.text}`);
  return r;
}
const api = (method, url, body) => s.request(method, url, {
  headers: { 'x-tenant-id': T, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });

test('1,000 random writes with retention in between: every kept version byte for byte', async () => {
  const rnd = mulberry32(2026);
  const pick = (a) => a[Math.floor(rnd() * a.length)];
  const files = new Map(); // path -> content
  const versions = []; // [{version, path, existed, content}] in version order
  let nextLine = 0;
  const line = () => `line ${nextLine++} ${'x'.repeat(Math.floor(rnd() * 60))}`;
  const text = () => {
    const big = rnd() < 0.1;
    const n = big ? 200 + Math.floor(rnd() * 200) : Math.floor(rnd() * 12);
    return Array.from({ length: n }, line).join('\n') + (rnd() < 0.5 ? '\n' : '');
  };
  const NAMES = Array.from({ length: 12 }, (_, i) => `/memories/d${i % 3}/f${i}.md`);
  const recorded = (list) => {
    for (const [path, content] of list) versions.push({ version: versions.length + 1, path, existed: content !== null, content });
  };
  const redacted = new Set();

  async function check() {
    // The feed agrees with the model's numbering.
    const feed = await api('GET', '/v1/changes?after=0&limit=1000');
    const last = feed.json.last_seq;
    assert.ok(last > 0);
    const byPath = new Map();
    // Newest first: retention (on PostgreSQL beside the writer, at any time) deletes a path's
    // oldest versions first, so a version read as gone is older than every one read before.
    for (const v of [...versions].reverse()) {
      const r = await api('GET', `/v1/versions/${v.version}`);
      if (r.status === 404) {
        (byPath.get(v.path) ?? byPath.set(v.path, { gone: [], kept: [] }).get(v.path)).gone.push(v.version);
        continue;
      }
      assert.equal(r.status, 200, r.text);
      (byPath.get(v.path) ?? byPath.set(v.path, { gone: [], kept: [] }).get(v.path)).kept.push(v.version);
      assert.deepEqual([r.json.path, r.json.existed], [v.path, v.existed], `version ${v.version}`);
      if (redacted.has(v.version)) {
        assert.deepEqual([r.json.redacted, r.json.content], [true, null], `version ${v.version}`);
      } else if (v.existed) {
        assert.equal(r.json.content, v.content, `version ${v.version} of ${v.path}`);
        assert.equal(r.json.size, Buffer.byteLength(v.content));
        assert.equal(r.json.sha256, sha(v.content));
      }
    }
    for (const [p, { gone, kept }] of byPath) {
      if (kept.length) for (const g of gone) assert.ok(g < Math.min(...kept), `${p}: version ${g} lost between kept ones`);
    }
    for (const [p, content] of files) {
      const r = await s.post({ command: 'view', path: p }, { tenant: T });
      const want = content.split('\n').map((l, i) => `${String(i + 1).padStart(6)}\t${l}`).join('\n');
      assert.equal(r.json.content, `Here's the content of ${p} with line numbers:\n${want}`);
    }
  }

  for (let i = 1; i <= WRITES; i++) {
    const path = pick(NAMES);
    const had = files.get(path);
    const r = rnd();
    if (had === undefined) {
      const content = text();
      await write({ command: 'create', path, file_text: content });
      recorded([[path, null]]);
      files.set(path, content);
    } else if (r < 0.12 && had.length > 0) {
      // The whole text replaced by another (a version as long as the old text).
      const content = text();
      await write({ command: 'str_replace', path, old_str: had, new_str: content });
      recorded([[path, had]]);
      files.set(path, content);
    } else if (r < 0.5 && had.includes('line ')) {
      const lines = had.split('\n').filter((l) => l.startsWith('line '));
      const old = pick(lines);
      const replacement = rnd() < 0.2 ? '' : line();
      await write({ command: 'str_replace', path, old_str: old, new_str: replacement });
      recorded([[path, had]]);
      files.set(path, had.replace(old, replacement));
    } else if (r < 0.8) {
      const at = had.split('\n').length;
      const n = Math.floor(rnd() * (at + 1));
      const added = line();
      await write({ command: 'insert', path, insert_line: n, insert_text: added });
      recorded([[path, had]]);
      const ls = had.split('\n');
      ls.splice(n, 0, ...added.split('\n'));
      files.set(path, ls.join('\n'));
    } else if (r < 0.86) {
      await write({ command: 'delete', path });
      recorded([[path, had]]);
      files.delete(path);
    } else if (r < 0.92) {
      const to = pick(NAMES);
      if (to === path || files.has(to)) continue;
      await write({ command: 'rename', old_path: path, new_path: to });
      recorded([[path, had], [to, null]]);
      files.delete(path);
      files.set(to, had);
    } else if (r < 0.97) {
      // A restore of one of this path's versions that holds content and is kept.
      const h = await api('GET', `/v1/history?path=${encodeURIComponent(path)}&limit=1000`);
      const kept = h.json.versions.slice(0, KEEP).filter((v) => v.existed && !v.redacted); // the newest KEEP: retention (in the background) may prune any older one meanwhile
      if (kept.length === 0) continue;
      const v = pick(kept);
      const back = await api('POST', '/v1/restore', { path, version: v.version });
      assert.equal(back.status, 200, back.text);
      const old = versions[v.version - 1].content;
      recorded([[path, had]]);
      files.set(path, old);
    } else {
      const h = await api('GET', `/v1/history?path=${encodeURIComponent(path)}&limit=1000`);
      const kept = h.json.versions.slice(0, KEEP).filter((v) => v.existed && !v.redacted); // the newest KEEP: retention (in the background) may prune any older one meanwhile
      if (kept.length === 0) continue;
      const v = pick(kept);
      const red = await api('POST', '/v1/redact', { path, version: v.version });
      assert.equal(red.status, 200, red.text);
      redacted.add(v.version);
      recorded([]); // a redaction records no version
    }
    if (i % 100 === 0) await check();
  }
  await check();
  assert.ok(versions.length > WRITES * 0.9);
  // How they were kept: deltas, runs cut at 31, versions kept whole between. The longest run of
  // deltas of a path, in version order (the same SQL on both engines).
  const [deltas, whole] = dbSql(s.dbPath, 'SELECT sum(CASE WHEN enc = 1 THEN 1 ELSE 0 END), ' +
    'sum(CASE WHEN enc = 0 AND content IS NOT NULL THEN 1 ELSE 0 END) FROM versions').trim().split('|').map(Number);
  const maxRun = Number(dbSql(s.dbPath, 'SELECT max(n) FROM (SELECT count(*) AS n FROM (SELECT path, enc, ' +
    'row_number() OVER (PARTITION BY path ORDER BY version) - row_number() OVER (PARTITION BY path, enc ORDER BY version) AS g ' +
    'FROM versions) x WHERE enc = 1 GROUP BY path, g) y').trim());
  assert.ok(deltas > whole && whole > 0, `${deltas} deltas, ${whole} whole`);
  assert.ok(maxRun <= 31 && maxRun >= 10, `longest run ${maxRun}`);
});
