// Proves preconditions on POST /memory over real HTTP on loopback against a temp SQLite database,
// and as pg/integration/preconditions against a fresh PostgreSQL database
// (tests/integration/preconditions.test.mjs):
//   - ETag: a view of a file answers with ETag: "sha256-<hex of the content's SHA-256>" (computed
//     here with node:crypto) and the same string as "etag" in the JSON (header only with
//     Accept: text/plain and for a tool_use block; the whole file's even with a view_range); a
//     directory view has none;
//     a successful create/str_replace/insert sends the ETag of the new content, delete/rename and
//     failed writes none;
//   - If-Match: the current tag, a list holding it, `*` on a file: applied; a stale tag, a list
//     without it, any tag or `*` on a missing file or on a directory: 412 with the exact text,
//     nothing written (tree and change feed unchanged); checked against the file the command
//     names first (rename: old_path); If-None-Match: * on create: applied when nothing is there,
//     412 with its text when a file or directory is; malformed or repeated headers: 400 with
//     exact text, nothing written;
//   - the lost-update race: 16 harnesses on separate connections, each doing view -> str_replace
//     with If-Match on one shared file for many rounds (the edit would apply on stale content
//     without the precondition): every accepted edit was based on the latest content (the
//     accepted edits form one chain, each based on the previous one's result, the file's
//     counter equals the number of accepted edits), every refused one got exactly 412 with the
//     text; run with the default settings and with --threads 1 --max-batch 1.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { startServer } from '../lib/server.mjs';
import { volume } from '../lib/util.mjs';

const sha256 = (s) => crypto.createHash('sha256').update(s).digest('hex');
const etagOf = (s) => `"sha256-${sha256(s)}"`;
const CHANGED = (p) => `The file ${p} changed since you viewed it; view it again before editing.`;
const EXISTS = (p) => `The file ${p} already exists (the request asked for If-None-Match: *); view it before changing it.`;
const ZERO_TAG = `"sha256-${'0'.repeat(64)}"`;

// One HTTP request with full control of the headers (a header given as an array is sent once
// per element; an empty string is sent as an empty value). `agent`: a keep-alive agent, or none.
function request(port, method, path, { body, headers = {}, agent } = {}) {
  return new Promise((resolve, reject) => {
    const h = { ...headers };
    if (body !== undefined) {
      h['content-type'] = 'application/json';
      h['content-length'] = Buffer.byteLength(body);
    }
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: h, agent: agent ?? false }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json = null;
        try { json = JSON.parse(text); } catch { /* text/plain */ }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    req.setTimeout(60000, () => req.destroy(new Error('request timed out')));
    req.end(body);
  });
}

function client(srv, tenant, agent) {
  const c = {
    post: (cmd, headers = {}, extra = {}) => request(srv.port, 'POST', '/memory', { body: JSON.stringify(cmd), headers: { 'x-tenant-id': tenant, ...headers }, agent, ...extra }),
    get: (p) => request(srv.port, 'GET', p, { headers: { 'x-tenant-id': tenant }, agent }),
    async view(path, headers = {}) {
      const r = await c.post({ command: 'view', path }, headers);
      assert.equal(r.status, 200, r.text);
      return r;
    },
    // A file's content and its ETag, read with one view.
    async read(path) {
      const r = await c.view(path);
      const [head, ...lines] = r.json.content.split('\n');
      assert.equal(head, `Here's the content of ${path} with line numbers:`);
      const text = lines.map((l, i) => {
        const m = /^ *(\d+)\t([^]*)$/.exec(l);
        assert.ok(m && Number(m[1]) === i + 1, `bad view line ${JSON.stringify(l)}`);
        return m[2];
      }).join('\n');
      assert.equal(r.headers.etag, r.json.etag);
      return { text, etag: r.headers.etag };
    },
    async create(path, text) {
      const r = await c.post({ command: 'create', path, file_text: text });
      assert.deepEqual([r.status, r.json.content], [200, `File created successfully at: ${path}`]);
    },
    async lastSeq() {
      const r = await c.get('/v1/changes?after=0&limit=1');
      assert.equal(r.status, 200, r.text);
      return r.json.last_seq;
    },
    // The whole tree: every listing and every file view.
    async tree() {
      const out = [];
      const visit = async (dir) => {
        const r = await c.view(dir);
        out.push(r.json.content);
        for (const line of r.json.content.split('\n').slice(2)) {
          const p = line.slice(line.indexOf('\t') + 1);
          const rel = p.slice(dir.length + 1);
          if (rel.endsWith('/') && !rel.slice(0, -1).includes('/')) await visit(p.slice(0, -1));
          else if (!rel.includes('/')) out.push(`${p}: ${(await c.view(p)).json.content}`);
        }
      };
      await visit('/memories');
      return out;
    },
    // The command fails with this status and tool_result text; nothing is written.
    async refused(cmd, headers, status, content) {
      const before = [await c.tree(), await c.lastSeq()];
      const r = await c.post(cmd, headers);
      assert.deepEqual([r.status, r.json, r.headers.etag, r.headers['x-memory-is-error']], [status, { type: 'tool_result', content, is_error: true }, undefined, 'true'], `${JSON.stringify(cmd)} with ${JSON.stringify(headers)}`);
      assert.deepEqual([await c.tree(), await c.lastSeq()], before, `state changed after the refused ${JSON.stringify(cmd)} with ${JSON.stringify(headers)}`);
    },
  };
  return c;
}

describe('preconditions', () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => {
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  });

  test('ETag: file views (header and JSON, whole-file even with view_range), not directories; successful writes of a file', async () => {
    const c = client(srv, 'p-etag');
    const p = '/memories/dir/notes.txt';
    const t0 = 'first line\nsecond line\n';
    const cr = await c.post({ command: 'create', path: p, file_text: t0 });
    assert.deepEqual([cr.status, cr.headers.etag, cr.json], [200, etagOf(t0), { type: 'tool_result', content: `File created successfully at: ${p}`, is_error: false }]);
    const v = await c.view(p);
    assert.equal(v.headers.etag, etagOf(t0));
    assert.deepEqual(v.json, { type: 'tool_result', content: `Here's the content of ${p} with line numbers:\n     1\tfirst line\n     2\tsecond line\n     3\t`, is_error: false, etag: etagOf(t0) });
    // A range of lines: still the whole file's tag.
    const vr = await c.view(p, {});
    const ranged = await c.post({ command: 'view', path: p, view_range: [2, 2] });
    assert.deepEqual([ranged.status, ranged.headers.etag, ranged.json.etag], [200, vr.headers.etag, etagOf(t0)]);
    // Accept: text/plain: the header only.
    const plain = await c.post({ command: 'view', path: p }, { accept: 'text/plain' });
    assert.deepEqual([plain.status, plain.headers.etag, plain.text], [200, etagOf(t0), `Here's the content of ${p} with line numbers:\n     1\tfirst line\n     2\tsecond line\n     3\t`]);
    // The tool_use form: the header only; the body stays a plain tool_result, ready for the
    // Messages API.
    const tu = await c.post({ type: 'tool_use', id: 'toolu_01', name: 'memory', input: { command: 'view', path: p } });
    assert.deepEqual([tu.headers.etag, tu.json], [etagOf(t0), { type: 'tool_result', tool_use_id: 'toolu_01', content: v.json.content, is_error: false }]);
    // Directories: no ETag anywhere.
    for (const d of ['/memories', '/memories/dir']) {
      const r = await c.view(d);
      assert.deepEqual([r.headers.etag, 'etag' in r.json], [undefined, false], d);
    }
    // An empty file has the tag of no bytes.
    const e = await c.post({ command: 'create', path: '/memories/empty.txt', file_text: '' });
    assert.equal(e.headers.etag, etagOf(''));
    assert.equal((await c.view('/memories/empty.txt')).headers.etag, `"sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"`);
    // str_replace and insert send the new content's tag (not in the JSON: only views carry it there).
    const sr = await c.post({ command: 'str_replace', path: p, old_str: 'first', new_str: '1st' });
    const t1 = '1st line\nsecond line\n';
    assert.deepEqual([sr.status, sr.headers.etag, 'etag' in sr.json], [200, etagOf(t1), false]);
    const ins = await c.post({ command: 'insert', path: p, insert_line: 2, insert_text: 'third line' });
    const t2 = '1st line\nsecond line\nthird line\n';
    assert.deepEqual([ins.status, ins.headers.etag, 'etag' in ins.json], [200, etagOf(t2), false]);
    assert.deepEqual(await c.read(p), { text: t2, etag: etagOf(t2) });
    // Unicode content: the tag is of the UTF-8 bytes.
    const u = '\u00e9t\u00e9 \u{1F600}\n';
    const ur = await c.post({ command: 'create', path: '/memories/u.txt', file_text: u });
    assert.equal(ur.headers.etag, `"sha256-${crypto.createHash('sha256').update(Buffer.from(u, 'utf8')).digest('hex')}"`);
    // Renames, deletes and failed writes: none.
    const rn = await c.post({ command: 'rename', old_path: '/memories/u.txt', new_path: '/memories/v.txt' });
    assert.deepEqual([rn.status, rn.headers.etag], [200, undefined]);
    const dl = await c.post({ command: 'delete', path: '/memories/v.txt' });
    assert.deepEqual([dl.status, dl.headers.etag], [200, undefined]);
    const fail = await c.post({ command: 'str_replace', path: p, old_str: 'absent', new_str: 'x' });
    assert.deepEqual([fail.status, fail.headers.etag], [409, undefined]);
    const missing = await c.post({ command: 'view', path: '/memories/none.txt' });
    assert.deepEqual([missing.status, missing.headers.etag, 'etag' in missing.json], [404, undefined, false]);
  });

  test('If-Match: current tag, a list holding it, * on a file: applied; stale, list without it, missing file, directory: 412, nothing written', async () => {
    const c = client(srv, 'p-if-match');
    const p = '/memories/f.txt';
    await c.create(p, 'v1');
    await c.create('/memories/d/inner.txt', 'inner');
    const stale = etagOf('v1');
    // The current tag: applied, the answer carries the new tag.
    const r1 = await c.post({ command: 'str_replace', path: p, old_str: 'v1', new_str: 'v2' }, { 'if-match': stale });
    assert.deepEqual([r1.status, r1.headers.etag], [200, etagOf('v2')]);
    // The old tag is stale now: refused, for every write command naming the file.
    await c.refused({ command: 'str_replace', path: p, old_str: 'v2', new_str: 'v3' }, { 'if-match': stale }, 412, CHANGED(p));
    await c.refused({ command: 'insert', path: p, insert_line: 0, insert_text: 'x' }, { 'if-match': stale }, 412, CHANGED(p));
    await c.refused({ command: 'create', path: p, file_text: 'x' }, { 'if-match': stale }, 412, CHANGED(p));
    // The message names the path as sent.
    await c.refused({ command: 'insert', path: '/memories//f.txt', insert_line: 0, insert_text: 'x' }, { 'if-match': stale }, 412, CHANGED('/memories//f.txt'));
    // A list: applied when one of them is current, refused when none is.
    const v2 = etagOf('v2');
    await c.refused({ command: 'insert', path: p, insert_line: 1, insert_text: 'x' }, { 'if-match': `${stale}, ${ZERO_TAG}` }, 412, CHANGED(p));
    const r2 = await c.post({ command: 'insert', path: p, insert_line: 1, insert_text: 'line 2' }, { 'if-match': `${stale}, ${v2},${ZERO_TAG}` });
    assert.deepEqual([r2.status, r2.headers.etag], [200, etagOf('v2\nline 2')]);
    // *: any file.
    const r3 = await c.post({ command: 'insert', path: p, insert_line: 2, insert_text: 'line 3' }, { 'if-match': '*' });
    assert.equal(r3.status, 200, r3.text);
    assert.deepEqual(await c.read(p), { text: 'v2\nline 2\nline 3', etag: etagOf('v2\nline 2\nline 3') });
    // A missing file: 412 (not 404), with * or a tag.
    const q = '/memories/missing.txt';
    await c.refused({ command: 'str_replace', path: q, old_str: 'a', new_str: 'b' }, { 'if-match': '*' }, 412, CHANGED(q));
    await c.refused({ command: 'insert', path: q, insert_line: 0, insert_text: 'b' }, { 'if-match': stale }, 412, CHANGED(q));
    await c.refused({ command: 'delete', path: q }, { 'if-match': '*' }, 412, CHANGED(q));
    await c.refused({ command: 'create', path: q, file_text: 'new' }, { 'if-match': '*' }, 412, CHANGED(q));
    // A directory is no file: 412 for * and for any tag.
    await c.refused({ command: 'delete', path: '/memories/d' }, { 'if-match': '*' }, 412, CHANGED('/memories/d'));
    await c.refused({ command: 'rename', old_path: '/memories/d', new_path: '/memories/e' }, { 'if-match': etagOf('') }, 412, CHANGED('/memories/d'));
    // Without a precondition the same commands behave as before.
    const r4 = await c.post({ command: 'str_replace', path: q, old_str: 'a', new_str: 'b' });
    assert.deepEqual([r4.status, r4.json.content], [404, `Error: The path ${q} does not exist. Please provide a valid path.`]);
  });

  test('If-Match with well-formed tags that do not strongly match (weak, another form): 412, as RFC 9110 says; applied when one tag of the list is current', async () => {
    const c = client(srv, 'p-if-match-rfc');
    const p = '/memories/f.txt';
    await c.create(p, 'v1');
    const current = etagOf('v1');
    const never = [
      `W/${current}`, // the current tag, but weak: a strong comparison never matches it
      `"sha256-${'0'.repeat(63)}"`, // one digit short: a tag, not one of memoryd's
      `"sha256-${'g'.repeat(64)}"`,
      `"md5-${'0'.repeat(32)}"`,
      '""', // the empty opaque tag
      'W/"x", "y"',
      '"caf\u00e9"', // obs-text
    ];
    for (const tag of never) await c.refused({ command: 'str_replace', path: p, old_str: 'v1', new_str: 'v2' }, { 'if-match': tag }, 412, CHANGED(p));
    assert.deepEqual(await c.read(p), { text: 'v1', etag: current });
    // A list that holds the current strong tag among tags that never match: applied.
    const r = await c.post({ command: 'str_replace', path: p, old_str: 'v1', new_str: 'v2' }, { 'if-match': `W/${current}, "other", ${current}` });
    assert.deepEqual([r.status, r.headers.etag], [200, etagOf('v2')]);
    // On a missing path, as any tag: 412.
    await c.refused({ command: 'create', path: '/memories/new.txt', file_text: 'x' }, { 'if-match': 'W/"x"' }, 412, CHANGED('/memories/new.txt'));
  });

  test('If-None-Match: * on create: applied when nothing is there, 412 when a file or a directory is', async () => {
    const c = client(srv, 'p-if-none');
    const p = '/memories/new/file.txt';
    const r = await c.post({ command: 'create', path: p, file_text: 'made' }, { 'if-none-match': '*' });
    assert.deepEqual([r.status, r.json.content, r.headers.etag], [200, `File created successfully at: ${p}`, etagOf('made')]);
    await c.refused({ command: 'create', path: p, file_text: 'again' }, { 'if-none-match': '*' }, 412, EXISTS(p));
    await c.refused({ command: 'create', path: '/memories/new', file_text: 'again' }, { 'if-none-match': '*' }, 412, EXISTS('/memories/new'));
    // Without it, create of an existing file is the usual 409.
    await c.refused({ command: 'create', path: p, file_text: 'again' }, {}, 409, `Error: File ${p} already exists`);
    // With both headers on an existing file, If-None-Match decides.
    await c.refused({ command: 'str_replace', path: p, old_str: 'made', new_str: 'x' }, { 'if-none-match': '*', 'if-match': etagOf('made') }, 412, EXISTS(p));
    assert.equal((await c.read(p)).text, 'made');
  });

  test('delete and rename with If-Match: checked against the file named first (rename: old_path)', async () => {
    const c = client(srv, 'p-tree');
    await c.create('/memories/a.txt', 'A');
    await c.create('/memories/b.txt', 'B');
    // Rename: the tag of old_path counts, not new_path's.
    await c.refused({ command: 'rename', old_path: '/memories/a.txt', new_path: '/memories/c.txt' }, { 'if-match': etagOf('B') }, 412, CHANGED('/memories/a.txt'));
    const rn = await c.post({ command: 'rename', old_path: '/memories/a.txt', new_path: '/memories/c.txt' }, { 'if-match': etagOf('A') });
    assert.deepEqual([rn.status, rn.json.content], [200, 'Successfully renamed /memories/a.txt to /memories/c.txt']);
    // Delete: stale refused, current applied.
    await c.refused({ command: 'delete', path: '/memories/b.txt' }, { 'if-match': etagOf('A') }, 412, CHANGED('/memories/b.txt'));
    const dl = await c.post({ command: 'delete', path: '/memories/b.txt' }, { 'if-match': etagOf('B') });
    assert.deepEqual([dl.status, dl.json.content], [200, 'Successfully deleted /memories/b.txt']);
    assert.equal((await c.read('/memories/c.txt')).text, 'A');
    const gone = await c.post({ command: 'view', path: '/memories/b.txt' });
    assert.equal(gone.status, 404);
  });

  test('malformed or repeated precondition headers: 400 with exact text, nothing written', async () => {
    const c = client(srv, 'p-malformed');
    const p = '/memories/f.txt';
    await c.create(p, 'content');
    const good = etagOf('content');
    const cmd = { command: 'str_replace', path: p, old_str: 'content', new_str: 'changed' };
    const MUST = 'Error: The If-Match header must be `*` or a comma-separated list of entity tags in double quotes, as sent in ETag';
    const cases = [
      [{ 'if-match': good.slice(1, -1) }, MUST], // without its quotes
      [{ 'if-match': `W${good}` }, MUST], // W without its slash
      [{ 'if-match': `"sha256-${'0'.repeat(64)}` }, MUST], // no closing quote
      [{ 'if-match': `"a b"` }, MUST], // a space inside
      [{ 'if-match': `${good} junk` }, MUST],
      [{ 'if-match': `${good} ${good}` }, MUST], // no comma between
      [{ 'if-match': `${good}, W/` }, MUST],
      [{ 'if-match': '' }, 'Error: The If-Match header is empty'],
      [{ 'if-match': ' , ' }, 'Error: The If-Match header is empty'],
      [{ 'if-match': `*, ${good}` }, 'Error: The If-Match header must be `*` alone or a list of entity tags'],
      [{ 'if-match': Array(9).fill(good).join(', ') }, 'Error: The If-Match header lists more than 8 entity tags'],
      [{ 'if-match': [good, good] }, 'Error: The If-Match header was sent more than once'],
      [{ 'if-none-match': good }, 'Error: The If-None-Match header must be `*`'],
      [{ 'if-none-match': '' }, 'Error: The If-None-Match header is empty'],
      [{ 'if-none-match': ['*', '*'] }, 'Error: The If-None-Match header was sent more than once'],
    ];
    for (const [headers, text] of cases) await c.refused(cmd, headers, 400, text);
    // Eight tags are fine.
    const r = await c.post(cmd, { 'if-match': [...Array(7).fill(ZERO_TAG), good].join(', ') });
    assert.equal(r.status, 200, r.text);
    assert.equal((await c.read(p)).text, 'changed');
  });
});

// The lost-update race. Each harness: view (content + ETag), then str_replace with If-Match of
// that tag, replacing the anchor "END" with a line naming the harness and the line it saw last:
// the str_replace would apply on any content (the anchor is always there), so only the
// precondition keeps a stale edit out.
const SETTINGS = [
  { name: 'default settings', args: [] },
  { name: '--threads 1 --max-batch 1', args: ['--threads', '1', '--max-batch', '1'] },
];
for (const setting of SETTINGS) {
  describe(`If-Match under concurrency (${setting.name})`, () => {
    let srv;
    before(async () => { srv = await startServer({ args: setting.args }); });
    after(async () => {
      await srv.stop();
      fs.rmSync(srv.dir, { recursive: true, force: true });
    });

    // (Under valgrind, which looks for memory errors, 6 harnesses × 8 rounds: they still race.)
    const HARNESSES = volume(16, 6);
    const ROUNDS = volume(30, 8);
    test(`${HARNESSES} harnesses × ${ROUNDS} rounds of view -> str_replace with If-Match on one file: accepted edits form one chain, the rest get 412`, async (t) => {
      const p = '/memories/shared/counter.txt';
      const agents = Array.from({ length: HARNESSES }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
      const clients = agents.map((a) => client(srv, 'p-race', a));
      const initial = 'start\nEND\n';
      await clients[0].create(p, initial);
      const accepted = [];
      let refused = 0;
      await Promise.all(clients.map(async (c, h) => {
        for (let round = 0; round < ROUNDS; round++) {
          const { text: base, etag } = await c.read(p);
          assert.equal(etag, etagOf(base));
          // ['start', entries..., 'END', '']: the counter is the number of entries.
          const lines = base.split('\n');
          const count = lines.length - 3;
          const lastId = lines.at(-3).split(' ')[0];
          const id = `h${h}-r${round}`;
          const entry = `${id} n=${count + 1} after ${lastId}`;
          const r = await c.post({ command: 'str_replace', path: p, old_str: 'END', new_str: `${entry}\nEND` }, { 'if-match': etag });
          if (r.status === 200) {
            const result = base.replace('END', `${entry}\nEND`);
            assert.equal(r.headers.etag, etagOf(result), `${id}: the ETag of the result`);
            accepted.push({ id, base, result });
          } else {
            assert.deepEqual([r.status, r.json, r.headers.etag], [412, { type: 'tool_result', content: CHANGED(p), is_error: true }, undefined], id);
            refused++;
          }
        }
      }));
      for (const a of agents) a.destroy();
      t.diagnostic(`${accepted.length} edits accepted, ${refused} refused with 412`);
      assert.equal(accepted.length + refused, HARNESSES * ROUNDS);
      assert.ok(refused > 0, 'no edit was refused: the harnesses never raced, the test proved nothing');
      // One chain: from the initial content, each accepted edit's base is the previous one's result.
      const byBase = new Map();
      for (const e of accepted) {
        assert.ok(!byBase.has(e.base), `two accepted edits were based on the same content (${byBase.get(e.base)?.id} and ${e.id}): a lost update`);
        byBase.set(e.base, e);
      }
      let content = initial;
      const chain = [];
      while (byBase.has(content)) {
        const e = byBase.get(content);
        chain.push(e.id);
        content = e.result;
      }
      assert.equal(chain.length, accepted.length, 'some accepted edits were based on content that was never the latest');
      // The file is the end of the chain; its entries count 1, 2, ... and each names the one before.
      await clients[0].create('/memories/shared/other.txt', 'x'); // (a write of another file does not disturb the check)
      const final = await clients[0].read(p);
      assert.equal(final.text, content);
      const entries = final.text.split('\n').slice(1, -2);
      assert.equal(entries.length, accepted.length);
      let prev = 'start';
      for (const [i, line] of entries.entries()) {
        const m = /^(h\d+-r\d+) n=(\d+) after (\S+)$/.exec(line);
        assert.ok(m, line);
        assert.deepEqual([Number(m[2]), m[3]], [i + 1, prev], `entry ${i + 1}: ${line}`);
        prev = m[1];
      }
      assert.deepEqual(entries.map((l) => l.split(' ')[0]), chain);
      // The change feed holds exactly the accepted edits after the create.
      const feed = await clients[0].get(`/v1/changes?after=1&limit=1000`);
      assert.equal(feed.json.changes.length, accepted.length + 1);
      feed.json.changes.pop();
      assert.ok(feed.json.changes.every((ch) => ch.command === 'str_replace' && ch.paths[0] === p));
    });
  });
}
