// Proves docs/behaviour.md "Export and import" over real HTTP on loopback, against a temp
// SQLite database and (pg/integration/export) a fresh PostgreSQL database:
//   - GET /v1/tenants/{t}/export streams a tar (application/x-tar, chunked) that plain GNU
//     `tar -x` extracts into exactly the tenant's tree: every file byte for byte (non-ASCII
//     names, a path over 100 bytes, a 255-byte segment, an empty file, a file of --max-file
//     bytes, NUL and CR bytes), every directory; entries in path order, a directory before
//     what is below it; a tenant that has never written exports "memories/" alone;
//   - the export is one snapshot: writes made while it is being read (a rename of the
//     directory being exported, a delete, a create) are not in it, across many pages;
//   - POST /v1/tenants/{t}/import takes that tar (and one GNU tar makes from the extracted
//     tree, names "./memories/..."): mode new (the default) into a tenant without entries,
//     refused with 409 otherwise; replace (the tree becomes the archive's; the removed files
//     keep their history); merge (written over, the rest kept); exact JSON answers; the
//     imported tree's views equal the source's;
//   - all or nothing: an archive whose last entry is refused (outside memories/, "..", a
//     symbolic link, a hard link, a fifo, a file over --max-file, not UTF-8, a file where a
//     directory is, a directory where a file is, a damaged or cut short archive, not a tar,
//     an empty body) gets its exact 4xx text and leaves the tenant exactly as it was (tree,
//     usage, change feed); over the tenant's quota (files, bytes): 507, nothing written;
//     over --max-import: 413; a bad mode, Idempotency-Key or If-Match: 400; other methods: 405;
//     through a proxy: 403.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { registerSecret, runMemoryd, startServer, tempDir } from '../lib/server.mjs';
import { tarArchive } from '../lib/tar.mjs';

async function withServer(opts, fn) {
  const s = await startServer(opts);
  try {
    await fn(s);
  } finally {
    await s.stop();
    fs.rmSync(s.dir, { recursive: true, force: true });
  }
}

async function write(s, tenant, cmd) {
  const r = await s.post(cmd, { tenant });
  assert.equal(r.status, 200, `${tenant} ${JSON.stringify(cmd).slice(0, 200)}: ${r.text}`);
  assert.equal(r.json.is_error, false, r.text);
}

async function exportTar(s, tenant) {
  const res = await fetch(`${s.url}/v1/tenants/${tenant}/export`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/x-tar');
  assert.equal(res.headers.get('content-disposition'), `attachment; filename="memories-${tenant}.tar"`);
  assert.equal(res.headers.get('transfer-encoding'), 'chunked');
  return Buffer.from(await res.arrayBuffer());
}

async function importTar(s, tenant, body, query = '', headers = {}) {
  const res = await fetch(`${s.url}/v1/tenants/${tenant}/import${query}`, { method: 'POST', body, headers });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, text, json, headers: res.headers };
}

// The tenant's files and directories, read through the API: {path: content | null (dir)}.
async function treeOf(s, tenant) {
  const out = {};
  async function walk(dir) {
    out[dir] = null;
    const r = await s.post({ command: 'view', path: dir }, { tenant });
    assert.equal(r.status, 200, r.text);
    const lines = r.json.content.split('\n').slice(1);
    for (const line of lines) {
      const p = line.split('\t')[1];
      if (!p || p === dir) continue;
      const rel = p.slice(dir.length + 1);
      if (rel.replace(/\/$/, '').includes('/')) continue; // two levels: the walk goes down itself
      if (p.endsWith('/')) await walk(p.slice(0, -1));
      else {
        const f = await fetch(`${s.url}/memory`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-tenant-id': tenant },
          body: JSON.stringify({ command: 'view', path: p }),
        });
        out[p] = (await f.json()).content;
      }
    }
  }
  await walk('/memories');
  return out;
}

// A file's view, as treeOf shows it.
function shown(p, text) {
  return `Here's the content of ${p} with line numbers:\n${text.split('\n').map((l, i) => `${String(i + 1).padStart(6)}\t${l}`).join('\n')}`;
}

// The files of an extracted tree: {"/memories/...": Buffer | null (dir)}.
function extracted(root) {
  const out = {};
  function walk(rel) {
    const abs = path.join(root, rel);
    const st = fs.lstatSync(abs);
    if (st.isDirectory()) {
      out[`/${rel}`] = null;
      for (const n of fs.readdirSync(abs)) walk(`${rel}/${n}`);
    } else {
      assert.ok(st.isFile(), `${rel} is a regular file`);
      out[`/${rel}`] = fs.readFileSync(abs);
    }
  }
  walk('memories');
  return out;
}

// Everything that must not change when an import is refused.
async function stateOf(s, tenant) {
  const usage = await s.request('GET', `/v1/tenants/${tenant}`);
  const changes = await s.request('GET', '/v1/changes?after=0&limit=1000', { headers: { 'x-tenant-id': tenant } });
  return { tree: await treeOf(s, tenant), usage: usage.json, changes: changes.json };
}

const LONG_DIR = 'd'.repeat(120);
const SEGMENT = 's'.repeat(255);
const BIG = 'x'.repeat(1024 * 1024 - 10) + '\nend\r\n\0\0z';
// A content that must never reach a log line (tests/logs/no-secrets.mjs looks for it).
const SECRET = `export-secret-content-${process.pid}-7f3a9c1e`;
registerSecret(SECRET);
const FILES = {
  '/memories/secret.md': `${SECRET}\n`,
  '/memories/notes.md': '# Notes\nline two\n',
  '/memories/empty.txt': '',
  '/memories/zürich/東京 notes.md': 'Grüße aus Zürich — 東京\n',
  [`/memories/${LONG_DIR}/deep/file.txt`]: 'deep\n',
  [`/memories/${SEGMENT}`]: 'long segment\n',
  '/memories/bin/nul.txt': 'a\0b\r\nc',
  '/memories/big.txt': BIG,
  '/memories/a/b/c/d.txt': 'four levels\n',
};

async function fill(s, tenant) {
  for (const [p, text] of Object.entries(FILES)) await write(s, tenant, { command: 'create', path: p, file_text: text });
}

describe('export', () => {
  test('plain tar -x extracts exactly the tenant tree; entries in path order, directories first', async () => {
    await withServer({}, async (s) => {
      await fill(s, 'alice');
      await write(s, 'bob', { command: 'create', path: '/memories/other.txt', file_text: 'not alice' });
      const tar = await exportTar(s, 'alice');
      const dir = tempDir('memoryd-export-');
      try {
        fs.writeFileSync(path.join(dir, 'a.tar'), tar);
        const names = execFileSync('tar', ['-tf', 'a.tar'], { cwd: dir, encoding: 'utf8' }).trim().split('\n');
        assert.equal(names[0], 'memories/');
        assert.deepEqual(names, [...names].sort((x, y) => Buffer.compare(Buffer.from(x.replace(/\/$/, '')), Buffer.from(y.replace(/\/$/, '')))));
        for (const [i, n] of names.entries()) {
          const parent = n.replace(/\/$/, '').replace(/\/[^/]*$/, '/');
          if (n !== 'memories/') assert.ok(names.slice(0, i).includes(parent), `${n} after its directory`);
        }
        assert.ok(!names.some((n) => n.includes('other.txt')), 'only alice');
        fs.mkdirSync(path.join(dir, 'x'));
        execFileSync('tar', ['-xf', '../a.tar'], { cwd: path.join(dir, 'x') });
        const got = extracted(path.join(dir, 'x'));
        const tree = await treeOf(s, 'alice');
        assert.deepEqual(Object.keys(got).sort(), Object.keys(tree).sort());
        for (const [p, text] of Object.entries(FILES)) assert.ok(got[p].equals(Buffer.from(text)), `${p} byte for byte`);
        const st = fs.statSync(path.join(dir, 'x/memories/notes.md'));
        assert.equal(st.mode & 0o777, 0o644);
        assert.ok(Math.abs(st.mtimeMs - Date.now()) < 600000, 'mtime: when it was written');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  test('a tenant that has never written exports memories/ alone', async () => {
    await withServer({}, async (s) => {
      const dir = tempDir('memoryd-export-');
      try {
        fs.writeFileSync(path.join(dir, 'e.tar'), await exportTar(s, 'nobody'));
        assert.equal(execFileSync('tar', ['-tf', 'e.tar'], { cwd: dir, encoding: 'utf8' }), 'memories/\n');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  test('one snapshot: writes made while the export is read are not in it', async () => {
    await withServer({}, async (s) => {
      // 1,200 files of 12 KiB (about 16 MiB of tar): more than the socket buffers hold, and
      // many pages of the scan, so most of the archive is made after the writes below. (300
      // under valgrind, whose pass looks for memory errors: still several pages.)
      const FILES_N = process.env.MD_TEST_WRAPPER ? 300 : 1200;
      const body = 'y'.repeat(12 * 1024);
      const queue = Array.from({ length: FILES_N }, (_, i) => `/memories/d/f${String(i).padStart(4, '0')}.txt`);
      await Promise.all(Array.from({ length: 16 }, async () => {
        for (let p; (p = queue.shift());) await write(s, 'snap', { command: 'create', path: p, file_text: body });
      }));
      const chunks = [];
      let got = 0;
      let paused;
      const done = new Promise((resolve, reject) => {
        http.get(`${s.url}/v1/tenants/snap/export`, (res) => {
          res.on('data', (c) => {
            chunks.push(c);
            got += c.length;
            if (!paused && got >= 64 * 1024) {
              res.pause();
              paused = (async () => {
                await write(s, 'snap', { command: 'rename', old_path: '/memories/d', new_path: '/memories/e' });
                await write(s, 'snap', { command: 'delete', path: '/memories/e/f0000.txt' });
                await write(s, 'snap', { command: 'create', path: '/memories/zz-new.txt', file_text: 'new' });
                res.resume();
              })();
            }
          });
          res.on('end', resolve);
          res.on('error', reject);
        }).on('error', reject);
      });
      await done;
      await paused;
      const dir = tempDir('memoryd-export-');
      try {
        fs.writeFileSync(path.join(dir, 's.tar'), Buffer.concat(chunks));
        const names = execFileSync('tar', ['-tf', 's.tar'], { cwd: dir, encoding: 'utf8', maxBuffer: 1 << 24 }).trim().split('\n');
        assert.equal(names.filter((n) => n.startsWith('memories/d/f')).length, FILES_N);
        assert.ok(!names.some((n) => n.startsWith('memories/e') || n.includes('zz-new')), 'nothing written after it began');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
      // The writes themselves were applied.
      const v = await s.post({ command: 'view', path: '/memories/zz-new.txt' }, { tenant: 'snap' });
      assert.equal(v.json.is_error, false);
    });
  });
});

describe('import', () => {
  test('round trip: export, import as new, replace, merge; GNU tar archives too', async () => {
    await withServer({}, async (s) => {
      await fill(s, 'alice');
      const tar = await exportTar(s, 'alice');
      const r = await importTar(s, 'bob', tar);
      assert.equal(r.status, 200, r.text);
      const total = Object.values(FILES).reduce((n, t) => n + Buffer.byteLength(t), 0);
      assert.deepEqual(r.json, { tenant: 'bob', mode: 'new', files: 9, bytes: total, removed: 0, seq: 1, versions_recorded: 9 });
      assert.deepEqual(await treeOf(s, 'bob'), await treeOf(s, 'alice'));

      // Mode new again: 409, nothing changed.
      const before = await stateOf(s, 'bob');
      const again = await importTar(s, 'bob', tar);
      assert.equal(again.status, 409);
      assert.deepEqual(again.json, { error: "Nothing was imported: tenant bob already has entries in /memories (import with ?mode=replace to replace them, or ?mode=merge to write the archive's files over them)" });
      assert.deepEqual(await stateOf(s, 'bob'), before);

      // An archive GNU tar makes from an extracted tree ("./memories/..."), as replace.
      const dir = tempDir('memoryd-import-');
      try {
        fs.mkdirSync(path.join(dir, 'src/memories/new'), { recursive: true });
        fs.writeFileSync(path.join(dir, 'src/memories/new/one.txt'), 'one\n');
        fs.writeFileSync(path.join(dir, 'src/memories/two.txt'), 'two\n');
        execFileSync('tar', ['-cf', '../g.tar', '.'], { cwd: path.join(dir, 'src') });
        const g = fs.readFileSync(path.join(dir, 'g.tar'));
        const rep = await importTar(s, 'bob', g, '?mode=replace');
        assert.equal(rep.status, 200, rep.text);
        assert.deepEqual(rep.json, { tenant: 'bob', mode: 'replace', files: 2, bytes: 8, removed: 9, seq: 2, versions_recorded: 11 });
        assert.deepEqual(await treeOf(s, 'bob'), {
          '/memories': null, '/memories/new': null, '/memories/new/one.txt': shown('/memories/new/one.txt', 'one\n'), '/memories/two.txt': shown('/memories/two.txt', 'two\n'),
        });
        // The replaced files keep their history: the old content can be restored.
        const h = await s.request('GET', '/v1/history?path=/memories/notes.md', { headers: { 'x-tenant-id': 'bob' } });
        assert.equal(h.status, 200, h.text);
        assert.equal(h.json.versions[0].command, 'import');

        // Merge: written over, the rest kept.
        const m = await importTar(s, 'bob', tarArchive([
          { name: 'memories/two.txt', data: 'TWO\n' }, { name: 'memories/three.txt', data: '3' },
        ]), '?mode=merge');
        assert.equal(m.status, 200, m.text);
        assert.deepEqual(m.json, { tenant: 'bob', mode: 'merge', files: 2, bytes: 5, removed: 0, seq: 3, versions_recorded: 2 });
        assert.deepEqual(await treeOf(s, 'bob'), {
          '/memories': null,
          '/memories/new': null,
          '/memories/new/one.txt': shown('/memories/new/one.txt', 'one\n'),
          '/memories/two.txt': shown('/memories/two.txt', 'TWO\n'),
          '/memories/three.txt': shown('/memories/three.txt', '3'),
        });
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  test('all or nothing: a refused entry after good ones leaves the tenant as it was', async () => {
    await withServer({ args: ['--max-file', '1000'] }, async (s) => {
      await write(s, 'carol', { command: 'create', path: '/memories/a/keep.txt', file_text: 'keep' });
      await write(s, 'carol', { command: 'create', path: '/memories/file.txt', file_text: 'f' });
      const good = [{ name: 'memories/g1.txt', data: 'good 1' }, { name: 'memories/sub/g2.txt', data: 'good 2' }];
      const N = 'Nothing was imported: ';
      const cases = [
        [{ name: 'notes/x.txt', data: 'x' }, 400, `${N}entry notes/x.txt is not under memories/ (the archive holds the memories/ tree, as GET /v1/tenants/{tenant}/export writes it)`],
        [{ name: 'memories/../x.txt', data: 'x' }, 400, null],
        [{ name: 'memories/l', type: '2', linkname: '/etc/passwd' }, 400, `${N}entry memories/l is a symbolic link: only files and directories are imported`],
        [{ name: 'memories/h', type: '1', linkname: 'memories/g1.txt' }, 400, `${N}entry memories/h is a hard link: only files and directories are imported`],
        [{ name: 'memories/p', type: '6' }, 400, `${N}entry memories/p is a special file: only files and directories are imported`],
        [{ name: 'memories/big.txt', data: 'b'.repeat(1001) }, 413, `${N}file memories/big.txt, 1001 bytes, is over the 1000-byte file size limit`],
        [{ name: 'memories/bin.dat', data: Buffer.from([0x61, 0xff, 0xfe]) }, 400, `${N}file memories/bin.dat is not UTF-8 text (memory files are text)`],
        [{ name: 'memories/a', data: 'x' }, 409, `${N}file memories/a: /memories/a is a directory`],
        [{ name: 'memories/file.txt/x', data: 'x' }, 409, `${N}file memories/file.txt/x: /memories/file.txt is a file, not a directory`],
        [{ name: 'memories/file.txt/', type: '5' }, 409, `${N}directory memories/file.txt/: /memories/file.txt is a file`],
        [{ name: 'memories', data: 'x' }, 409, `${N}entry memories: /memories is a directory`],
      ];
      const before = await stateOf(s, 'carol');
      for (const [bad, status, text] of cases) {
        const r = await importTar(s, 'carol', tarArchive([...good, bad]), '?mode=merge');
        assert.equal(r.status, status, `${bad.name}: ${r.text}`);
        if (text) assert.deepEqual(r.json, { error: text });
        else assert.match(r.json.error, /^Nothing was imported: entry memories\/\.\.\/x\.txt: /);
        assert.deepEqual(await stateOf(s, 'carol'), before, `${bad.name}: nothing written`);
      }
      const NOT_TAR = `${N}the body is not a tar archive, or it is damaged (send the tar, as GET /v1/tenants/{tenant}/export writes it: ustar, pax or GNU tar, not compressed)`;
      const whole = tarArchive([...good, { name: 'memories/last.txt', data: 'z'.repeat(900) }]);
      const raw = [
        [Buffer.from('this is not a tar archive at all, just text'.repeat(40)), 400, NOT_TAR],
        [whole.subarray(0, whole.length - 1024 - 512), 400, `${N}the archive is damaged or cut short at memories/last.txt`],
        [execFileSync('gzip', ['-c'], { input: whole }), 400, NOT_TAR],
        [Buffer.alloc(0), 400, `${N}the body is empty (send the tar, as GET /v1/tenants/{tenant}/export writes it)`],
      ];
      for (const [body, status, text] of raw) {
        const r = await importTar(s, 'carol', body, '?mode=merge');
        assert.equal(r.status, status, r.text);
        assert.deepEqual(r.json, { error: text });
        assert.deepEqual(await stateOf(s, 'carol'), before);
      }
      // The unreadable archives are logged with libarchive's words.
      await s.waitForLogs((l) => l.some((x) => x.msg === 'import refused: unreadable archive' && x.tenant === 'carol'), 'the archive error');
    });
  });

  test('quota: an import whose result is over the tenant limits gets 507, nothing written', async () => {
    await withServer({}, async (s) => {
      await write(s, 'dave', { command: 'create', path: '/memories/one.txt', file_text: '1' });
      const put = await s.request('PUT', '/v1/tenants/dave/limits', { body: JSON.stringify({ max_bytes: 1024, max_files: 3 }), headers: { 'content-type': 'application/json' } });
      assert.equal(put.status, 200, put.text);
      const before = await stateOf(s, 'dave');
      const files = await importTar(s, 'dave', tarArchive(['a', 'b', 'c'].map((n) => ({ name: `memories/${n}.txt`, data: n }))), '?mode=merge');
      assert.equal(files.status, 507);
      assert.deepEqual(files.json, { error: 'Nothing was imported: the tenant would hold 4 files, over its limit of 3 files' });
      const bytes = await importTar(s, 'dave', tarArchive([{ name: 'memories/big.txt', data: 'b'.repeat(1100) }]), '?mode=merge');
      assert.equal(bytes.status, 507);
      assert.deepEqual(bytes.json, { error: 'Nothing was imported: the tenant would hold 1.0 KiB, over its limit of 1 KiB' });
      assert.deepEqual(await stateOf(s, 'dave'), before);
      // A replace that fits is taken (the files it removes do not count).
      const rep = await importTar(s, 'dave', tarArchive(['a', 'b', 'c'].map((n) => ({ name: `memories/${n}.txt`, data: n }))), '?mode=replace');
      assert.equal(rep.status, 200, rep.text);
    });
  });

  test('bad requests: --max-import, mode, headers, methods, proxies', async () => {
    await withServer({ args: ['--max-import', '4096'] }, async (s) => {
      const small = tarArchive([{ name: 'memories/a.txt', data: 'a' }]);
      const big = tarArchive([{ name: 'memories/a.txt', data: 'a'.repeat(4000) }]);
      let r = await importTar(s, 'erin', big);
      assert.equal(r.status, 413);
      assert.deepEqual(r.json, { error: 'The archive exceeds the import limit of 4096 bytes (--max-import)' });
      r = await importTar(s, 'erin', small, '?mode=overwrite');
      assert.equal(r.status, 400);
      assert.deepEqual(r.json, { error: 'Parameter `mode` must be new (the default: into a tenant without entries), replace or merge' });
      const NO_HEADERS = { error: 'An import takes no Idempotency-Key, If-Match or If-None-Match (it is all or nothing; mode new refuses a tenant that already has entries)' };
      for (const h of [{ 'idempotency-key': 'k1' }, { 'if-match': '*' }, { 'if-none-match': '*' }]) {
        r = await importTar(s, 'erin', small, '', h);
        assert.equal(r.status, 400);
        assert.deepEqual(r.json, NO_HEADERS);
      }
      r = await importTar(s, 'erin', small, '', { 'x-forwarded-for': '203.0.113.7' });
      assert.equal(r.status, 403);
      for (const [method, p, allow] of [['GET', 'import', 'POST'], ['PUT', 'export', 'GET'], ['POST', 'export', 'GET']]) {
        const m = await fetch(`${s.url}/v1/tenants/erin/${p}`, { method, body: method === 'GET' ? undefined : 'x' });
        assert.equal(m.status, 405, `${method} ${p}`);
        assert.equal(m.headers.get('allow'), allow);
        await m.text();
      }
      const nf = await s.request('GET', '/v1/tenants/erin/exports');
      assert.equal(nf.status, 404);
      assert.deepEqual(nf.json, { error: 'Not found: use /v1/tenants/{tenant}, /v1/tenants/{tenant}/limits, /v1/tenants/{tenant}/export, /v1/tenants/{tenant}/import or /v1/tenants/{tenant}/secrets' });
      const ex = await fetch(`${s.url}/v1/tenants/erin/export`, { headers: { forwarded: 'for=203.0.113.7' } });
      assert.equal(ex.status, 403);
      await ex.text();
      // Nothing of it was written.
      assert.deepEqual(await treeOf(s, 'erin'), { '/memories': null });
      r = await importTar(s, 'erin', small, '', { 'x-memory-actor': 'migration-bot' });
      assert.equal(r.status, 200, r.text);
      const h = await s.request('GET', '/v1/history?path=/memories/a.txt', { headers: { 'x-tenant-id': 'erin' } });
      assert.equal(h.json.versions[0].actor, 'migration-bot');
    });
  });

  test('--auth keys: an admin key exports and imports any tenant, a write key gets 403; counted as admin', async () => {
    await withServer({ args: ['--auth', 'keys'] }, async (s) => {
      const key = async (scope) => {
        const r = await runMemoryd(['keys', 'create', '--db', s.dbPath, '--tenant', 'ops', '--scope', scope]);
        assert.equal(r.code, 0, r.stderr);
        return r.stdout.split('\n')[0];
      };
      const admin = await key('admin');
      const writer = await key('write');
      const tar = tarArchive([{ name: 'memories/k.txt', data: 'keyed\n' }]);
      let r = await importTar(s, 'frank', tar, '', { authorization: `Bearer ${writer}` });
      assert.equal(r.status, 403, r.text);
      r = await importTar(s, 'frank', tar, '', { authorization: `Bearer ${admin}` });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.tenant, 'frank');
      const denied = await fetch(`${s.url}/v1/tenants/frank/export`, { headers: { authorization: `Bearer ${writer}` } });
      assert.equal(denied.status, 403);
      await denied.text();
      const res = await fetch(`${s.url}/v1/tenants/frank/export`, { headers: { authorization: `Bearer ${admin}` } });
      assert.equal(res.status, 200);
      const dir = tempDir('memoryd-export-');
      try {
        fs.writeFileSync(path.join(dir, 'k.tar'), Buffer.from(await res.arrayBuffer()));
        assert.equal(execFileSync('tar', ['-xOf', 'k.tar', 'memories/k.txt'], { cwd: dir, encoding: 'utf8' }), 'keyed\n');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
      const m = await fetch(`${s.url}/metrics`);
      const text = await m.text();
      assert.match(text, /^memoryd_requests_total\{command="admin",class="2xx"\} 2$/m);
      assert.match(text, /^memoryd_requests_total\{command="admin",class="4xx"\} 2$/m);
      // No key in any log line.
      for (const line of s.rawStderr) for (const k of [admin, writer]) assert.ok(!line.includes(k), 'a key in the log');
    });
  });
});
