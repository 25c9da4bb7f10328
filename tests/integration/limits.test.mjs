// Proves docs/behaviour.md §6, the limits: a request body over --max-body is a 413
// (announced by Content-Length or streamed chunked without it) and stores
// nothing; file content over --max-file is a 413 (exactly at the limit is
// fine), also when str_replace or insert would grow a file past it, and the
// file stays unchanged; a path over 4096 bytes or a segment over 255 is a 400;
// a view longer than --max-view is cut at a line boundary and ends with a note
// naming the view_range that continues it, and a listing ends with its note;
// every limit flag and its MEMORYD_* variable change the limit; a zero or
// invalid limit value makes memoryd exit with status 2 and a message.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { startServer, runMemoryd, tempDir } from '../lib/server.mjs';
import { underValgrind } from '../lib/util.mjs';

const MiB = 1024 * 1024;
let dflt; // default limits
let flags; // every limit set by its flag
let envs; // every limit set by its MEMORYD_* variable

before(async () => {
  [dflt, flags, envs] = await Promise.all([
    startServer(),
    startServer({ args: ['--max-body', '2K', '--max-file', '1000', '--max-view', '1024', '--max-path', '64', '--max-segment', '16'] }),
    startServer({ env: { MEMORYD_MAX_BODY: '3KiB', MEMORYD_MAX_FILE: '500', MEMORYD_MAX_VIEW: '2048', MEMORYD_MAX_PATH: '100', MEMORYD_MAX_SEGMENT: '20' } }),
  ]);
});
after(async () => {
  await Promise.all([dflt, flags, envs].filter(Boolean).map(async (s) => {
    await s.stop();
    fs.rmSync(s.dir, { recursive: true, force: true });
  }));
});

async function run(srv, cmd, tenant = 'lim') {
  const r = await srv.post(cmd, { tenant });
  assert.ok(r.json, r.text);
  assert.equal(r.json.type, 'tool_result');
  assert.equal(r.json.is_error, r.status !== 200);
  return { status: r.status, content: r.json.content };
}
const view = (path, view_range) => (view_range ? { command: 'view', path, view_range } : { command: 'view', path });
const FILE_HEAD = (p) => `Here's the content of ${p} with line numbers:`;
const fileView = (p, lines, first = 1) => [FILE_HEAD(p), ...lines.map((l, i) => `${String(first + i).padStart(6)}\t${l}`)].join('\n');
const notFound = (p) => ({ status: 404, content: `The path ${p} does not exist. Please provide a valid path.` });
const created = (p) => ({ status: 200, content: `File created successfully at: ${p}` });
const tooBigFile = (p, n, limit) => ({ status: 413, content: `Error: File ${p} would be ${n} bytes, over the ${limit}-byte file size limit` });

// A create command padded (with an ignored key) to exactly `size` bytes of JSON.
function paddedCreate(path, size) {
  const base = JSON.stringify({ command: 'create', path, file_text: 'p', pad: '' });
  assert.ok(base.length <= size);
  return JSON.stringify({ command: 'create', path, file_text: 'p', pad: 'x'.repeat(size - base.length) });
}

// POST a body in chunks without Content-Length (Transfer-Encoding: chunked).
function postChunked(srv, chunks, tenant = 'lim') {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port: srv.port, method: 'POST', path: '/memory',
      headers: { 'content-type': 'application/json', 'x-tenant-id': tenant },
    }, (res) => {
      const parts = [];
      res.on('data', (c) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(parts).toString('utf8') }));
    });
    req.on('error', reject);
    let i = 0;
    const next = () => {
      if (i === chunks.length) return req.end();
      const ok = req.write(chunks[i++]);
      if (ok) setImmediate(next); else req.once('drain', next);
    };
    next();
  });
}

// ------------------------------------------------------------------ request body

for (const [name, get, limit] of [['--max-body 2K', () => flags, 2048], ['MEMORYD_MAX_BODY=3KiB', () => envs, 3072]]) {
  test(`request body: exactly ${limit} bytes is served, one more is a 413 and stores nothing (${name})`, async () => {
    const srv = get();
    const at = await srv.post(paddedCreate('/memories/at-limit.txt', limit), { tenant: 'body' });
    assert.equal(at.status, 200, at.text);
    const over = await srv.post(paddedCreate('/memories/over.txt', limit + 1), { tenant: 'body' });
    assert.equal(over.status, 413);
    assert.deepEqual(over.json, { type: 'tool_result', content: `Error: The request body exceeds the limit of ${limit} bytes`, is_error: true });
    assert.deepEqual(await run(srv, view('/memories/over.txt'), 'body'), notFound('/memories/over.txt'));
  });
}

test('request body: chunked without Content-Length over the limit -> 413, nothing stored; under it -> served', async () => {
  const body = paddedCreate('/memories/chunked.txt', 10000);
  const chunks = [];
  for (let i = 0; i < body.length; i += 700) chunks.push(body.slice(i, i + 700));
  const r = await postChunked(flags, chunks);
  assert.equal(r.status, 413);
  assert.deepEqual(JSON.parse(r.text), { type: 'tool_result', content: 'Error: The request body exceeds the limit of 2048 bytes', is_error: true });
  assert.deepEqual(await run(flags, view('/memories/chunked.txt')), notFound('/memories/chunked.txt'));
  // Just over the limit by one byte, chunked.
  const edge = paddedCreate('/memories/chunked-edge.txt', 2049);
  const r2 = await postChunked(flags, [edge.slice(0, 1000), edge.slice(1000, 2048), edge.slice(2048)]);
  assert.equal(r2.status, 413);
  assert.deepEqual(await run(flags, view('/memories/chunked-edge.txt')), notFound('/memories/chunked-edge.txt'));
  // Exactly at the limit, chunked.
  const small = paddedCreate('/memories/chunked-ok.txt', 2048);
  const ok = await postChunked(flags, [small.slice(0, 5), small.slice(5, 1500), small.slice(1500)]);
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(await run(flags, view('/memories/chunked-ok.txt')), { status: 200, content: fileView('/memories/chunked-ok.txt', ['p']) });
  // The server still serves requests afterwards.
  assert.equal((await run(flags, view('/memories'))).status, 200);
});

test('request body: the default limit is 4 MiB (chunked)', async () => {
  const at = await dflt.post(paddedCreate('/memories/4m.txt', 4 * MiB), { tenant: 'body' });
  assert.equal(at.status, 200, at.text.slice(0, 200));
  const body = paddedCreate('/memories/4m1.txt', 4 * MiB + 1);
  const chunks = [];
  for (let i = 0; i < body.length; i += 256 * 1024) chunks.push(body.slice(i, i + 256 * 1024));
  const chunked = await postChunked(dflt, chunks, 'body');
  assert.equal(chunked.status, 413);
  assert.equal(JSON.parse(chunked.text).content, 'Error: The request body exceeds the limit of 4194304 bytes');
  assert.deepEqual(await run(dflt, view('/memories/4m1.txt'), 'body'), notFound('/memories/4m1.txt'));
});

// POST a body announced by Content-Length with node:http; {status, text} or {error}.
function postSized(srv, body, tenant = 'lim') {
  return new Promise((resolve) => {
    const req = http.request({
      host: '127.0.0.1', port: srv.port, method: 'POST', path: '/memory',
      headers: { 'content-type': 'application/json', 'x-tenant-id': tenant, 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      const parts = [];
      res.on('data', (c) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(parts).toString('utf8') }));
    });
    req.on('error', (e) => resolve({ error: `${e.code}: ${e.message}` }));
    req.end(body);
  });
}

test('request body: a large body announced by Content-Length gets its 413, not a broken connection', async () => {
  // memoryd may answer before reading the body, but a client that is still
  // sending must be able to read that answer (RFC 9112 §9.6: no immediate
  // close while the client is sending).
  for (const [srv, size, limit] of [[dflt, 4 * MiB + 1, 4194304], [dflt, 6 * MiB, 4194304], [flags, 2 * MiB, 2048]]) {
    const r = await postSized(srv, paddedCreate('/memories/sized.txt', size), 'sized');
    assert.deepEqual(r, {
      status: 413,
      text: JSON.stringify({ type: 'tool_result', content: `Error: The request body exceeds the limit of ${limit} bytes`, is_error: true }),
    }, `${size}-byte body, ${limit}-byte limit`);
  }
  assert.deepEqual(await run(dflt, view('/memories/sized.txt'), 'sized'), notFound('/memories/sized.txt'));
  assert.deepEqual(await run(flags, view('/memories/sized.txt'), 'sized'), notFound('/memories/sized.txt'));
});

// ------------------------------------------------------------------ file size

for (const [name, get, limit] of [['default 1 MiB', () => dflt, MiB], ['--max-file 1000', () => flags, 1000], ['MEMORYD_MAX_FILE=500', () => envs, 500]]) {
  test(`file content: exactly ${limit} bytes is fine, one more is a 413 and stores nothing (${name})`, async () => {
    const srv = get();
    const t = 'file';
    assert.deepEqual(await run(srv, { command: 'create', path: '/memories/exact.txt', file_text: 'x'.repeat(limit) }, t), created('/memories/exact.txt'));
    assert.deepEqual(await run(srv, { command: 'create', path: '/memories/new/over.txt', file_text: 'x'.repeat(limit + 1) }, t),
      tooBigFile('/memories/new/over.txt', limit + 1, limit));
    assert.deepEqual(await run(srv, view('/memories/new/over.txt'), t), notFound('/memories/new/over.txt'));
    assert.deepEqual(await run(srv, view('/memories/new'), t), notFound('/memories/new'));
    // Bytes are counted, not characters: U+00E9 is two bytes.
    assert.deepEqual(await run(srv, { command: 'create', path: '/memories/e.txt', file_text: '\u00e9'.repeat(limit / 2 + 1) }, t),
      tooBigFile('/memories/e.txt', limit + 2, limit));
    assert.deepEqual(await run(srv, { command: 'create', path: '/memories/e.txt', file_text: '\u00e9'.repeat(limit / 2) }, t), created('/memories/e.txt'));
  });
}

test('file content: str_replace and insert that would grow a file past --max-file -> 413, file unchanged', async () => {
  const t = 'grow';
  const p = '/memories/g.txt';
  const content = `${'a'.repeat(489)}\nMARK\n${'b'.repeat(489)}`; // 984 bytes, 3 lines
  assert.equal(content.length, 984);
  assert.deepEqual(await run(flags, { command: 'create', path: p, file_text: content }, t), created(p));
  const before = (await run(flags, view(p), t)).content;
  // 984 - 4 + 21 = 1001
  assert.deepEqual(await run(flags, { command: 'str_replace', path: p, old_str: 'MARK', new_str: 'M'.repeat(21) }, t), tooBigFile(p, 1001, 1000));
  assert.equal((await run(flags, view(p), t)).content, before);
  // 984 + 16 + 1 = 1001 (one trailing newline of insert_text does not count)
  assert.deepEqual(await run(flags, { command: 'insert', path: p, insert_line: 1, insert_text: `${'i'.repeat(16)}\n` }, t), tooBigFile(p, 1001, 1000));
  assert.equal((await run(flags, view(p), t)).content, before);
  // Exactly to the limit is fine: 984 + 15 + 1 = 1000, then 1000 - 1 + 1 = 1000.
  assert.deepEqual(await run(flags, { command: 'insert', path: p, insert_line: 1, insert_text: 'i'.repeat(15) }, t),
    { status: 200, content: `The file ${p} has been edited.` });
  assert.equal((await run(flags, { command: 'str_replace', path: p, old_str: 'MARK', new_str: 'MAR!' }, t)).status, 200);
  assert.deepEqual(await run(flags, { command: 'insert', path: p, insert_line: 0, insert_text: '' }, t), tooBigFile(p, 1001, 1000));
  assert.deepEqual(await run(flags, view('/memories'), t), {
    status: 200,
    content: 'Here\'re the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n1000B\t/memories\n1000B\t/memories/g.txt',
  });
});

// ------------------------------------------------------------------ path and segment

// A path of exactly `len` bytes made of segments of at most `seg` bytes.
function pathOf(len, seg) {
  let p = '/memories';
  while (p.length < len) {
    const room = len - p.length - 1;
    p += `/${'s'.repeat(Math.min(seg, Math.max(1, room)))}`;
  }
  assert.equal(p.length, len);
  return p;
}

test('path: 4096 bytes and 255-byte segments are fine; one more byte is a 400 (defaults)', async () => {
  const t = 'path';
  const p4096 = pathOf(4096, 255);
  assert.deepEqual(await run(dflt, { command: 'create', path: p4096, file_text: 'deep' }, t), created(p4096));
  assert.deepEqual(await run(dflt, view(p4096), t), { status: 200, content: fileView(p4096, ['deep']) });
  const p4097 = pathOf(4097, 255);
  const msg = `Error: Path ${p4097.slice(0, 100)}... is too long: 4097 bytes (the limit is 4096)`;
  assert.deepEqual(await run(dflt, { command: 'create', path: p4097, file_text: 'x' }, t), { status: 400, content: msg });
  assert.deepEqual(await run(dflt, view(p4097), t), { status: 400, content: msg });
  // A cut inside a UTF-8 character shows the whole characters before it.
  const utf = `/memories/a${'\u00e9'.repeat(2100)}`; // 11 + 4200 bytes
  assert.deepEqual(await run(dflt, view(utf), t),
    { status: 400, content: `Error: Path /memories/a${'\u00e9'.repeat(44)}... is too long: 4211 bytes (the limit is 4096)` });
  const s255 = `/memories/${'z'.repeat(255)}`;
  assert.deepEqual(await run(dflt, { command: 'create', path: s255, file_text: 'z' }, t), created(s255));
  const s256 = `/memories/d/${'z'.repeat(256)}/f`;
  assert.deepEqual(await run(dflt, { command: 'create', path: s256, file_text: 'z' }, t),
    { status: 400, content: `Error: Path ${s256} has a segment longer than 255 bytes` });
  assert.deepEqual(await run(dflt, view('/memories/d'), t), notFound('/memories/d'));
});

for (const [name, get, maxPath, maxSeg] of [['--max-path 64 --max-segment 16', () => flags, 64, 16], ['MEMORYD_MAX_PATH=100 MEMORYD_MAX_SEGMENT=20', () => envs, 100, 20]]) {
  test(`path and segment limits follow ${name}`, async () => {
    const srv = get();
    const t = 'pathlim';
    const ok = pathOf(maxPath, maxSeg);
    assert.deepEqual(await run(srv, { command: 'create', path: ok, file_text: 'ok' }, t), created(ok));
    const long = pathOf(maxPath + 1, maxSeg);
    assert.deepEqual(await run(srv, { command: 'create', path: long, file_text: 'x' }, t),
      { status: 400, content: `Error: Path ${long.slice(0, 100)}... is too long: ${maxPath + 1} bytes (the limit is ${maxPath})` });
    const seg = `/memories/${'q'.repeat(maxSeg)}`;
    assert.deepEqual(await run(srv, { command: 'create', path: seg, file_text: 's' }, t), created(seg));
    const segOver = `/memories/${'q'.repeat(maxSeg + 1)}`;
    assert.deepEqual(await run(srv, { command: 'create', path: segOver, file_text: 's' }, t),
      { status: 400, content: `Error: Path ${segOver} has a segment longer than ${maxSeg} bytes` });
    assert.deepEqual(await run(srv, { command: 'rename', old_path: seg, new_path: segOver }, t),
      { status: 400, content: `Error: Path ${segOver} has a segment longer than ${maxSeg} bytes` });
    assert.deepEqual(await run(srv, view(seg), t), { status: 200, content: fileView(seg, ['s']) });
  });
}

// ------------------------------------------------------------------ view output

// Views `path` in pieces, following each truncation note, until the end.
// Returns the numbered lines seen and the number of views taken.
async function viewAll(srv, t, path, limit, range = [1, -1]) {
  const got = [];
  let views = 0;
  let next = range;
  for (;;) {
    const r = await run(srv, view(path, next), t);
    views++;
    assert.equal(r.status, 200);
    assert.ok(Buffer.byteLength(r.content) <= limit, `view output of ${Buffer.byteLength(r.content)} bytes over ${limit}`);
    const lines = r.content.split('\n');
    assert.equal(lines[0], FILE_HEAD(path));
    const last = lines.at(-1);
    const m = /^\[Output truncated at the (\d+)-byte view limit after line (\d+) of (\d+)\. To see more, view again with view_range \[(\d+), (-?\d+)\]\.\]$/.exec(last);
    const body = m ? lines.slice(1, -1) : lines.slice(1);
    got.push(...body);
    if (!m) return { got, views };
    assert.equal(Number(m[1]), limit);
    const after = Number(m[2]);
    // Cut at a line boundary: the last line shown is line `after`, whole.
    assert.match(body.at(-1), new RegExp(`^ *${after}\\t`));
    assert.equal(Number(m[4]), after + 1);
    assert.equal(Number(m[5]), range[1]);
    next = [after + 1, range[1]];
  }
}

test('view: a long file is cut at a line boundary, the note names the next view_range, and following it continues (default 256 KiB)', async () => {
  const t = 'viewdflt';
  const lines = Array.from({ length: 20000 }, (_, i) => `line ${i + 1} ${'.'.repeat(i % 37)}`);
  const p = '/memories/long.txt';
  assert.deepEqual(await run(dflt, { command: 'create', path: p, file_text: lines.join('\n') }, t), created(p));
  const first = await run(dflt, view(p), t);
  assert.match(first.content, /\n\[Output truncated at the 262144-byte view limit after line \d+ of 20000\. To see more, view again with view_range \[\d+, -1\]\.\]$/);
  const { got, views } = await viewAll(dflt, t, p, 262144);
  assert.ok(views >= 3, `only ${views} views`);
  assert.deepEqual(got, lines.map((l, i) => `${String(i + 1).padStart(6)}\t${l}`));
  // Within an explicit range, the note keeps the range's end.
  const part = await viewAll(dflt, t, p, 262144, [100, 15000]);
  assert.ok(part.views >= 2);
  assert.deepEqual(part.got, lines.slice(99, 15000).map((l, i) => `${String(i + 100).padStart(6)}\t${l}`));
});

for (const [name, get, limit, fileLimit] of [['--max-view 1024', () => flags, 1024, 1000], ['MEMORYD_MAX_VIEW=2048', () => envs, 2048, 500]]) {
  test(`view: the output limit follows ${name}`, async () => {
    const srv = get();
    const t = 'viewlim';
    // fileLimit - 1 bytes of one-digit lines: a view of several times that.
    const kept = Array.from({ length: fileLimit / 2 }, (_, i) => String(i % 10));
    const text = kept.join('\n');
    const p = '/memories/v.txt';
    assert.deepEqual(await run(srv, { command: 'create', path: p, file_text: text }, t), created(p));
    const first = await run(srv, view(p), t);
    assert.match(first.content, new RegExp(`\\n\\[Output truncated at the ${limit}-byte view limit after line \\d+ of ${kept.length}\\. To see more, view again with view_range \\[\\d+, -1\\]\\.\\]$`));
    const { got, views } = await viewAll(srv, t, p, limit);
    assert.ok(views >= 2);
    assert.deepEqual(got, kept.map((l, i) => `${String(i + 1).padStart(6)}\t${l}`));
  });
}

test('view: a single line longer than the limit shows its head and says so', async () => {
  const t = 'longline';
  const p = '/memories/one.txt';
  const line = 'w'.repeat(1000);
  assert.deepEqual(await run(flags, { command: 'create', path: p, file_text: `${line.slice(0, 990)}\nend` }, t), created(p));
  const r = await run(flags, view(p), t);
  assert.equal(r.status, 200);
  const m = /^Here's the content of \/memories\/one\.txt with line numbers:\n     1\t(w*)\n\[Output truncated: line 1 is longer than the 1024-byte view limit and was cut after (\d+) bytes\. To see more, view again with view_range \[2, -1\]\.\]$/.exec(r.content);
  assert.ok(m, r.content);
  assert.equal(m[1].length, Number(m[2]));
  assert.ok(m[1].length > 0 && m[1].length < 990);
  assert.ok(Buffer.byteLength(r.content) <= 1024);
  assert.deepEqual(await run(flags, view(p, [2, -1]), t), { status: 200, content: fileView(p, ['end'], 2) });
});

test('view: a directory listing over the limit ends with its note', async () => {
  const t = 'listlim';
  const names = Array.from({ length: 80 }, (_, i) => `f${String(i).padStart(3, '0')}.txt`);
  for (const n of names) assert.deepEqual(await run(flags, { command: 'create', path: `/memories/dir/${n}`, file_text: 'x' }, t), created(`/memories/dir/${n}`));
  const r = await run(flags, view('/memories/dir'), t);
  assert.equal(r.status, 200);
  assert.ok(Buffer.byteLength(r.content) <= 1024, `${Buffer.byteLength(r.content)} bytes`);
  const lines = r.content.split('\n');
  assert.equal(lines[0], "Here're the files and directories up to 2 levels deep in /memories/dir, excluding hidden items and node_modules:");
  assert.equal(lines[1], '80B\t/memories/dir');
  const entries = lines.slice(2, -1);
  assert.ok(entries.length > 10 && entries.length < 80, `${entries.length} entries`);
  assert.deepEqual(entries, names.slice(0, entries.length).map((n) => `1B\t/memories/dir/${n}`));
  assert.equal(lines.at(-1),
    `[Listing truncated at the 1024-byte view limit after ${entries.length} entries. View a subdirectory to see the rest.]`);
  // Same in a listing two levels deep, from the root.
  const root = await run(flags, view('/memories'), t);
  assert.ok(Buffer.byteLength(root.content) <= 1024);
  assert.match(root.content, /\n\[Listing truncated at the 1024-byte view limit after \d+ entries\. View a subdirectory to see the rest\.\]$/);
  // Under the limit there is no note.
  const env = await run(envs, view('/memories'), t);
  assert.equal(env.content.includes('[Listing truncated'), false);
});

// ------------------------------------------------------------------ bad limit values

test('zero or invalid limit values: exit status 2 and a message (flags and MEMORYD_* variables)', async () => {
  const dir = tempDir();
  const db = `${dir}/never.db`;
  const base = ['--port', '0', '--db', db];
  const ranges = {
    'max-body': [64, 1073741824],
    'max-file': [1, 1073741824],
    'max-view': [1024, 1073741824],
    'max-path': [16, 65536],
    'max-segment': [1, 65536],
  };
  // Every case: [what, args, env, expected stderr]; run four at a time (each a memoryd start,
  // seconds apiece under valgrind), every answer asserted exactly. The five flags share one
  // parser (src/app/config.c, set_opt) and differ in their bounds: under valgrind, which looks for
  // memory errors, the first flag gets every form and the others two each (a bound given as a
  // flag, a malformed variable): 19 memoryd starts instead of 55.
  const cases = [];
  for (const [i, [flag, [min, max]]] of Object.entries(ranges).entries()) {
    const env = `MEMORYD_${flag.toUpperCase().replace('-', '_')}`;
    const every = i === 0 || !underValgrind;
    cases.push([`--${flag} 0`, [...base, `--${flag}`, '0'], {}, `memoryd: --${flag} must be between ${min} and ${max}, got 0\n`]);
    if (every) {
      cases.push([`${env}=0`, base, { [env]: '0' }, `memoryd: ${env} must be between ${min} and ${max}, got 0\n`]);
      cases.push([`--${flag}=2G`, [...base, `--${flag}=2G`], {}, `memoryd: --${flag} must be between ${min} and ${max}, got 2G\n`]);
      for (const bad of ['abc', '-1', '1.5', '10X', '', '4 K']) {
        cases.push([`--${flag}=${bad}`, [...base, `--${flag}=${bad}`], {}, `memoryd: invalid value for --${flag}: '${bad}' (expected BYTES)\n`]);
      }
    }
    cases.push([`${env}=lots`, base, { [env]: 'lots' }, `memoryd: invalid value for ${env}: 'lots' (expected BYTES)\n`]);
    if (every) cases.push([`--${flag}`, [...base, `--${flag}`], {}, `memoryd: --${flag} needs a value (BYTES)\n`]);
  }
  assert.equal(cases.length, underValgrind ? 19 : 55);
  const queue = [...cases];
  await Promise.all(Array.from({ length: 4 }, async () => {
    for (let c; (c = queue.shift());) {
      const [what, args, env, stderr] = c;
      const r = await runMemoryd(args, { env });
      assert.deepEqual({ code: r.code, stderr: r.stderr }, { code: 2, stderr }, what);
    }
  }));
  fs.rmSync(dir, { recursive: true, force: true });
});
