// Proves docs/behaviour.md §3–§5 over real HTTP on loopback against a temp database:
// the exact text and HTTP status of every command's success and of every
// error, the directory listing format (header with the path as sent, canonical
// entry lines, sizes, exclusions, depth, byte-order sorting, directory totals),
// the file view format and view_range forms, and every path rejection of §3.
// After every error the tenant's whole tree (every listing and every file
// view) is compared with its state before the request: a failed command
// changes nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startServer } from '../lib/server.mjs';

let srv;
before(async () => {
  srv = await startServer();
});
after(async () => {
  await srv.stop();
  fs.rmSync(srv.dir, { recursive: true, force: true });
});

const LISTING_HEAD = (p) =>
  `Here're the files and directories up to 2 levels deep in ${p}, excluding hidden items and node_modules:`;
const FILE_HEAD = (p) => `Here's the content of ${p} with line numbers:`;
const SNIPPET_HEAD =
  'The memory file has been edited. Here is the snippet showing the change (with line numbers):';

// A 6-column line number, a tab, the text.
const numbered = (n, text) => `${String(n).padStart(6, ' ')}\t${text}`;
const fileView = (p, lines, first = 1) => [FILE_HEAD(p), ...lines.map((l, i) => numbered(first + i, l))].join('\n');
const listing = (p, entries) => [LISTING_HEAD(p), ...entries].join('\n');

// POST one command for `tenant`; checks the envelope and returns {status, content}.
async function call(tenant, cmd) {
  const r = await srv.post(cmd, { tenant }); // an object, or a raw JSON string
  assert.ok(r.json, `response is not JSON: ${r.text}`);
  assert.equal(r.json.type, 'tool_result');
  assert.equal(typeof r.json.content, 'string');
  assert.equal(r.json.is_error, r.status !== 200, `is_error must match status ${r.status}`);
  assert.equal('tool_use_id' in r.json, false);
  return { status: r.status, content: r.json.content };
}

// Every listing and file view of the tenant's tree, walked from /memories.
async function snapshot(tenant) {
  const out = [];
  async function visit(dir) {
    const r = await call(tenant, { command: 'view', path: dir });
    assert.equal(r.status, 200);
    out.push(r.content);
    for (const line of r.content.split('\n').slice(2)) {
      const p = line.slice(line.indexOf('\t') + 1);
      const rel = p.slice(dir.length + 1);
      if (rel.endsWith('/') && !rel.slice(0, -1).includes('/')) {
        await visit(p.slice(0, -1));
      } else if (!rel.includes('/')) {
        const f = await call(tenant, { command: 'view', path: p });
        out.push(`${p}: ${f.content}`);
      }
    }
  }
  await visit('/memories');
  return out;
}

// A tenant-bound client for one test.
function client(tenant) {
  return {
    call: (cmd) => call(tenant, cmd),
    snapshot: () => snapshot(tenant),
    async ok(cmd, expected) {
      const r = await call(tenant, cmd);
      assert.deepEqual(r, { status: 200, content: expected }, JSON.stringify(cmd));
    },
    // The command fails with exactly this status and text and changes nothing.
    // `extra` lists paths (e.g. hidden ones) to view before and after as well.
    async fails(cmd, status, expected, extra = []) {
      const viewExtra = async () => Promise.all(extra.map((p) => call(tenant, { command: 'view', path: p })));
      const before = [await snapshot(tenant), await viewExtra()];
      const r = await call(tenant, cmd);
      assert.deepEqual(r, { status, content: expected }, typeof cmd === 'string' ? cmd : JSON.stringify(cmd));
      const afterState = [await snapshot(tenant), await viewExtra()];
      assert.deepEqual(afterState, before, `state changed after failed ${typeof cmd === 'string' ? cmd : JSON.stringify(cmd)}`);
    },
    async create(path, text) {
      const r = await call(tenant, { command: 'create', path, file_text: text });
      assert.deepEqual(r, { status: 200, content: `File created successfully at: ${path}` });
    },
    async content(path) {
      const r = await call(tenant, { command: 'view', path });
      assert.equal(r.status, 200, r.content);
      return r.content;
    },
  };
}

// ------------------------------------------------------------------ view: directories

test('view of an empty /memories: header and the root line only', async () => {
  const c = client('c-empty');
  await c.ok({ command: 'view', path: '/memories' }, listing('/memories', ['0B\t/memories']));
  // The first line echoes the path as sent, trailing slash included (as the SDK does).
  await c.ok({ command: 'view', path: '/memories/' }, listing('/memories/', ['0B\t/memories/']));
});

test('directory listing: format, sizes, exclusions, depth, byte-order sorting, totals', async () => {
  const c = client('c-listing');
  await c.create('/memories/B.txt', 'b'.repeat(1023));
  await c.create('/memories/a/z.txt', 'zzz');
  await c.create('/memories/a/empty.txt', '');
  await c.create('/memories/a/.secret', 's'.repeat(7));
  await c.create('/memories/a/deep/d2/x.txt', 'x'.repeat(10));
  await c.create('/memories/a/sub/big.txt', 'g'.repeat(1280));
  await c.create('/memories/a-b.txt', '12345');
  await c.create('/memories/emptydir/tmp', 'gone');
  await c.ok({ command: 'delete', path: '/memories/emptydir/tmp' }, 'Successfully deleted /memories/emptydir/tmp');
  await c.create('/memories/node_modules/m.js', 'm'.repeat(50));
  await c.create('/memories/.hidden/h.txt', 'h'.repeat(100));
  // U+FF5E (EF BD 9E) sorts before U+1F600 (F0 9F 98 80) in byte order,
  // though after it in UTF-16 order.
  await c.create('/memories/u/\u{1F600}.txt', 'four');
  await c.create('/memories/u/\u{FF5E}.txt', 'hi');
  await c.create('/memories/\u00e9.txt', 'e'.repeat(10240));
  // a/ = 3 + 0 + 7 + 10 + 1280 = 1300 -> 1.3K; root = 1023 + 1300 + 5 + 0 + 50
  // + 100 + 6 + 10240 = 12724 -> 12.4K (hidden and node_modules files count).
  const entries = [
    '1023B\t/memories/B.txt',
    '1.3K\t/memories/a/',
    '10B\t/memories/a/deep/',
    '0B\t/memories/a/empty.txt',
    '1.3K\t/memories/a/sub/',
    '3B\t/memories/a/z.txt',
    '5B\t/memories/a-b.txt',
    '0B\t/memories/emptydir/',
    '6B\t/memories/u/',
    '2B\t/memories/u/\u{FF5E}.txt',
    '4B\t/memories/u/\u{1F600}.txt',
    '10.0K\t/memories/\u00e9.txt',
  ];
  await c.ok({ command: 'view', path: '/memories' }, listing('/memories', ['12.4K\t/memories', ...entries]));
  // The header repeats the path as sent; entry lines use the canonical form.
  // As sent on the first line, entries canonical (one slash: never /memories//B.txt).
  await c.ok({ command: 'view', path: '/memories/' }, listing('/memories/', ['12.4K\t/memories/', ...entries]));
  await c.ok({ command: 'view', path: '/memories//' }, listing('/memories//', ['12.4K\t/memories//', ...entries]));
  // A subdirectory: its own two levels (a/deep/d2/ is listed, not opened).
  const aEntries = [
    '1.3K\t/memories/a',
    '10B\t/memories/a/deep/',
    '10B\t/memories/a/deep/d2/',
    '0B\t/memories/a/empty.txt',
    '1.3K\t/memories/a/sub/',
    '1.3K\t/memories/a/sub/big.txt',
    '3B\t/memories/a/z.txt',
  ];
  await c.ok({ command: 'view', path: '/memories/a' }, listing('/memories/a', aEntries));
  await c.ok({ command: 'view', path: '/memories//a/' }, listing('/memories//a/', ['1.3K\t/memories//a/', ...aEntries.slice(1)]));
  // view_range is ignored for directories.
  await c.ok({ command: 'view', path: '/memories/a', view_range: [2, 3] }, listing('/memories/a', aEntries));
  // Hidden entries and node_modules stay readable by exact path.
  await c.ok({ command: 'view', path: '/memories/.hidden' },
    listing('/memories/.hidden', ['100B\t/memories/.hidden', '100B\t/memories/.hidden/h.txt']));
  await c.ok({ command: 'view', path: '/memories/node_modules' },
    listing('/memories/node_modules', ['50B\t/memories/node_modules', '50B\t/memories/node_modules/m.js']));
  await c.ok({ command: 'view', path: '/memories/a/.secret' }, fileView('/memories/a/.secret', ['sssssss']));
  await c.ok({ command: 'view', path: '/memories/emptydir' }, listing('/memories/emptydir', ['0B\t/memories/emptydir']));
});

test('directory listing: depth-first order, a/ and a/z.txt before a-b.txt', async () => {
  const c = client('c-order');
  await c.create('/memories/a-b.txt', '');
  await c.create('/memories/a/z.txt', '');
  await c.create('/memories/a.txt', '');
  await c.create('/memories/Z.txt', '');
  await c.create('/memories/_.txt', '');
  // Excluded at the second level as well, with their subtrees.
  await c.create('/memories/a/node_modules/m/x.js', '');
  await c.create('/memories/a/.git/HEAD', '');
  await c.create('/memories/a/node_modules.txt', '');
  await c.ok({ command: 'view', path: '/memories' }, listing('/memories', [
    '0B\t/memories',
    '0B\t/memories/Z.txt',
    '0B\t/memories/_.txt',
    '0B\t/memories/a/',
    '0B\t/memories/a/node_modules.txt',
    '0B\t/memories/a/z.txt',
    '0B\t/memories/a-b.txt',
    '0B\t/memories/a.txt',
  ]));
});

test('sizes: 1024-based, one decimal rounded half up, K and M; directory totals', async () => {
  const c = client('c-sizes');
  await c.create('/memories/s/k1024', 'x'.repeat(1024));
  await c.create('/memories/s/k1075', 'x'.repeat(1075));
  await c.create('/memories/s/k1126', 'x'.repeat(1126));
  await c.create('/memories/s/k1536', 'x'.repeat(1536));
  await c.create('/memories/s/k2048', 'x'.repeat(2048));
  await c.create('/memories/m/one', 'x'.repeat(1 << 20));
  await c.create('/memories/m/two', 'x'.repeat(209716));
  // s = 1024 + 1075 + 1126 + 1536 + 2048 = 6809 -> 6.6K; m = 1258292 -> 1.2M;
  // root = 1265101 -> 1.2M
  await c.ok({ command: 'view', path: '/memories' }, listing('/memories', [
    '1.2M\t/memories',
    '1.2M\t/memories/m/',
    '1.0M\t/memories/m/one',
    '204.8K\t/memories/m/two',
    '6.6K\t/memories/s/',
    '1.0K\t/memories/s/k1024',
    '1.0K\t/memories/s/k1075',
    '1.1K\t/memories/s/k1126',
    '1.5K\t/memories/s/k1536',
    '2.0K\t/memories/s/k2048',
  ]));
  // Totals follow every write: str_replace, insert, delete, rename.
  await c.ok({ command: 'str_replace', path: '/memories/s/k1024', old_str: 'x'.repeat(1024), new_str: 'y' },
    `${SNIPPET_HEAD}\n${numbered(1, 'y')}`);
  await c.ok({ command: 'insert', path: '/memories/s/k1024', insert_line: 1, insert_text: 'abc' },
    'The file /memories/s/k1024 has been edited.');
  await c.ok({ command: 'delete', path: '/memories/m/one' }, 'Successfully deleted /memories/m/one');
  await c.ok({ command: 'rename', old_path: '/memories/s/k2048', new_path: '/memories/m/k2048' },
    'Successfully renamed /memories/s/k2048 to /memories/m/k2048');
  // s = 5 + 1075 + 1126 + 1536 = 3742 -> 3.7K; m = 209716 + 2048 = 211764 -> 206.8K;
  // root = 215506 -> 210.5K
  await c.ok({ command: 'view', path: '/memories' }, listing('/memories', [
    '210.5K\t/memories',
    '206.8K\t/memories/m/',
    '2.0K\t/memories/m/k2048',
    '204.8K\t/memories/m/two',
    '3.7K\t/memories/s/',
    '5B\t/memories/s/k1024',
    '1.0K\t/memories/s/k1075',
    '1.1K\t/memories/s/k1126',
    '1.5K\t/memories/s/k1536',
  ]));
});

// ------------------------------------------------------------------ view: files

test('file view: numbering, trailing newline, CR kept, path as sent', async () => {
  const c = client('c-fileview');
  await c.create('/memories/f.txt', 'first\nsecond\n');
  await c.ok({ command: 'view', path: '/memories/f.txt' }, fileView('/memories/f.txt', ['first', 'second', '']));
  await c.ok({ command: 'view', path: '/memories//f.txt' }, fileView('/memories//f.txt', ['first', 'second', '']));
  await c.create('/memories/crlf.txt', 'a\r\nb');
  await c.ok({ command: 'view', path: '/memories/crlf.txt' }, fileView('/memories/crlf.txt', ['a\r', 'b']));
  const twelve = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`);
  await c.create('/memories/twelve.txt', twelve.join('\n'));
  const got = await c.content('/memories/twelve.txt');
  assert.equal(got.split('\n')[10], '    10\tline 10');
  assert.equal(got, fileView('/memories/twelve.txt', twelve));
  // Content round-trips byte for byte, NUL and non-ASCII included.
  await c.create('/memories/bin.txt', 'a\u0000b \u00e9 \u{1F600}\ttab');
  await c.ok({ command: 'view', path: '/memories/bin.txt' }, fileView('/memories/bin.txt', ['a\u0000b \u00e9 \u{1F600}\ttab']));
});

test('file view: an empty file is one empty line 1', async () => {
  const c = client('c-emptyfile');
  await c.create('/memories/e.txt', '');
  await c.ok({ command: 'view', path: '/memories/e.txt' }, `${FILE_HEAD('/memories/e.txt')}\n     1\t`);
});

test('file view: view_range forms', async () => {
  const c = client('c-range');
  const lines = ['l1', 'l2', 'l3', 'l4', 'l5'];
  const p = '/memories/r.txt';
  await c.create(p, lines.join('\n'));
  const cases = [
    [[2, 4], ['l2', 'l3', 'l4'], 2],
    [[2, -1], ['l2', 'l3', 'l4', 'l5'], 2],
    [[1, -1], lines, 1],
    [[3, 3], ['l3'], 3],
    [[0, 2], ['l1', 'l2'], 1],
    [[-3, 2], ['l1', 'l2'], 1],
    [[4, 100], ['l4', 'l5'], 4],
    [[5, 5], ['l5'], 5],
    [[1, -2], ['l1', 'l2', 'l3'], 1], // as the SDK: slice(0, -2)
  ];
  for (const [range, want, first] of cases) {
    await c.ok({ command: 'view', path: p, view_range: range }, fileView(p, want, first));
  }
  // Empty selections: the header and an empty body.
  await c.ok({ command: 'view', path: p, view_range: [4, 2] }, `${FILE_HEAD(p)}\n`);
  await c.ok({ command: 'view', path: p, view_range: [6, 8] }, `${FILE_HEAD(p)}\n`);
  // null is no range; integral reals are integers.
  await c.ok({ command: 'view', path: p, view_range: null }, fileView(p, lines));
  await c.ok(`{"command":"view","path":"${p}","view_range":[2.0,3.0]}`, fileView(p, ['l2', 'l3'], 2));
  // As the SDK: an array of another length than two is no range (whatever it holds).
  for (const vr of [[2], [1, 2, 3], [], ['x'], [[1, 2]], [null, 2, 'y']]) {
    await c.ok({ command: 'view', path: p, view_range: vr }, fileView(p, lines));
  }
  // Anything else is a 400.
  const bad = 'Error: Parameter `view_range` must be an array of two integers [start_line, end_line]';
  for (const vr of ['1-2', [1.5, 2], ['1', '2'], {}, 3, [1, null], [true, 2], 'ab']) {
    await c.fails({ command: 'view', path: p, view_range: vr }, 400, bad);
  }
  // A number that does not fit in 64 bits is valid JSON: it is out of range, not "invalid JSON".
  const range = 'Error: Parameter `view_range` has a number out of range: integers must be between -9223372036854775808 and 9223372036854775807';
  for (const vr of ['[1,9223372036854775808]', '[-9223372036854775809,2]', '[1,99999999999999999999999]', '[1e400,2]', '[1,-1.5e999]', '[1e19,2]']) {
    await c.fails(`{"command":"view","path":"${p}","view_range":${vr}}`, 400, range);
  }
  // One element of the wrong type is a type error, whatever the other one is.
  await c.fails(`{"command":"view","path":"${p}","view_range":[99999999999999999999,"x"]}`, 400, bad);
  // The two extremes of int64 are in range (and select the whole file / nothing).
  await c.ok(`{"command":"view","path":"${p}","view_range":[-9223372036854775808,9223372036854775807]}`, fileView(p, lines));
  // A number too large in a field memoryd ignores does not matter.
  await c.ok(`{"command":"view","path":"${p}","extra":123456789012345678901234567890,"more":[1e400,-1e400]}`, fileView(p, lines));
  // Other JSON errors still say where they are: the column is the one of the body as sent
  // (here its last character).
  const trailing = `{"command":"view","path":"${p}","extra":123456789012345678901234567890,}`;
  await c.fails(trailing, 400, `Error: Invalid JSON in request body: string or '}' expected near '}' (line 1, column ${trailing.length})`);
});

test('paths are byte-exact: a name not in Unicode NFC is another path, and "does not exist" says so', async () => {
  const c = client('c-nfc');
  const nfc = '/memories/caf\u00e9.txt'; // precomposed é
  const nfd = '/memories/cafe\u0301.txt'; // e + combining acute accent: looks the same
  const note = ' (Note: this path is not in Unicode Normalization Form C (NFC); memoryd compares paths byte for byte, so a name that looks the same but is encoded differently is a different path.)';
  await c.create(nfc, 'precomposed');
  await c.fails({ command: 'view', path: nfd }, 404, `The path ${nfd} does not exist. Please provide a valid path.${note}`);
  await c.fails({ command: 'str_replace', path: nfd, old_str: 'pre', new_str: 'x' }, 404, `Error: The path ${nfd} does not exist. Please provide a valid path.${note}`);
  await c.fails({ command: 'insert', path: nfd, insert_line: 0, insert_text: 'x' }, 404, `Error: The path ${nfd} does not exist${note}`);
  await c.fails({ command: 'delete', path: nfd }, 404, `Error: The path ${nfd} does not exist${note}`);
  await c.fails({ command: 'rename', old_path: nfd, new_path: '/memories/moved.txt' }, 404, `Error: The path ${nfd} does not exist${note}`);
  // A directory named in NFD exists: str_replace and insert on it get the plain text, as the
  // note's explanation would be false there.
  const dir = '/memories/d\u00e9cor'.normalize('NFD');
  await c.create(`${dir}/inner.txt`, 'x');
  await c.fails({ command: 'str_replace', path: dir, old_str: 'x', new_str: 'y' }, 404, `Error: The path ${dir} does not exist. Please provide a valid path.`);
  await c.fails({ command: 'insert', path: dir, insert_line: 0, insert_text: 'y' }, 404, `Error: The path ${dir} does not exist`);
  await c.call({ command: 'delete', path: dir });
  // A path in NFC that does not exist gets the plain text; so does an ASCII one.
  await c.fails({ command: 'view', path: '/memories/na\u00efve.txt' }, 404, 'The path /memories/na\u00efve.txt does not exist. Please provide a valid path.');
  // The decomposed name is a file of its own, beside the precomposed one.
  await c.create(nfd, 'decomposed');
  await c.ok({ command: 'view', path: nfd }, fileView(nfd, ['decomposed']));
  await c.ok({ command: 'view', path: nfc }, fileView(nfc, ['precomposed']));
  await c.ok({ command: 'view', path: '/memories' }, listing('/memories', ['21B\t/memories', `10B\t${nfd}`, `11B\t${nfc}`]));
});

test('file view: missing path', async () => {
  const c = client('c-viewmissing');
  await c.fails({ command: 'view', path: '/memories/nope.txt' }, 404,
    'The path /memories/nope.txt does not exist. Please provide a valid path.');
  await c.create('/memories/f.txt', 'x');
  await c.fails({ command: 'view', path: '/memories/f.txt/below' }, 404,
    'The path /memories/f.txt/below does not exist. Please provide a valid path.');
  await c.fails({ command: 'view', path: '/memories//nope/' }, 404,
    'The path /memories//nope/ does not exist. Please provide a valid path.');
});

test('file view: more than 999,999 lines -> 413 with the spec message; 999,999 lines are fine', async () => {
  const c = client('c-linelimit');
  await c.create('/memories/big.txt', '\n'.repeat(999999)); // 1,000,000 lines
  const msg = 'File /memories/big.txt exceeds maximum line limit of 999,999 lines.';
  await c.fails({ command: 'view', path: '/memories/big.txt' }, 413, msg);
  await c.fails({ command: 'view', path: '/memories/big.txt', view_range: [1, 2] }, 413, msg);
  await c.create('/memories/ok.txt', '\n'.repeat(999998)); // 999,999 lines
  await c.ok({ command: 'view', path: '/memories/ok.txt', view_range: [999998, -1] },
    fileView('/memories/ok.txt', ['', ''], 999998));
});

// ------------------------------------------------------------------ create

test('create: success, missing parents made, never overwrites', async () => {
  const c = client('c-create');
  await c.ok({ command: 'create', path: '/memories/notes.txt', file_text: 'hello\n' },
    'File created successfully at: /memories/notes.txt');
  await c.ok({ command: 'view', path: '/memories/notes.txt' }, fileView('/memories/notes.txt', ['hello', '']));
  await c.ok({ command: 'create', path: '/memories//p/q//r.txt/', file_text: 'r' },
    'File created successfully at: /memories//p/q//r.txt/');
  await c.ok({ command: 'view', path: '/memories' }, listing('/memories', [
    '7B\t/memories',
    '6B\t/memories/notes.txt',
    '1B\t/memories/p/',
    '1B\t/memories/p/q/',
  ]));
  await c.ok({ command: 'view', path: '/memories/p/q/r.txt' }, fileView('/memories/p/q/r.txt', ['r']));
  // Names that look odd but are valid.
  for (const p of ['/memories/a%20b', '/memories/..a', '/memories/.a.', '/memories/a b', '/memories/%2', '/memories/x%2g']) {
    await c.create(p, p);
    await c.ok({ command: 'view', path: p }, fileView(p, [p]));
  }
});

test('create: already exists (file, directory, /memories)', async () => {
  const c = client('c-exists');
  await c.create('/memories/d/f.txt', 'original');
  await c.fails({ command: 'create', path: '/memories/d/f.txt', file_text: 'new' }, 409,
    'Error: File /memories/d/f.txt already exists');
  await c.fails({ command: 'create', path: '/memories//d/f.txt/', file_text: 'new' }, 409,
    'Error: File /memories//d/f.txt/ already exists');
  await c.fails({ command: 'create', path: '/memories/d', file_text: 'new' }, 409,
    'Error: File /memories/d already exists');
  await c.fails({ command: 'create', path: '/memories', file_text: 'new' }, 409,
    'Error: File /memories already exists');
  await c.fails({ command: 'create', path: '/memories/', file_text: '' }, 409,
    'Error: File /memories/ already exists');
  await c.ok({ command: 'view', path: '/memories/d/f.txt' }, fileView('/memories/d/f.txt', ['original']));
});

test('create: a parent that is a file -> 409, no directory left behind', async () => {
  const c = client('c-parentfile');
  await c.create('/memories/f.txt', 'file');
  await c.fails({ command: 'create', path: '/memories/f.txt/x', file_text: 'y' }, 409,
    'Error: Cannot create /memories/f.txt/x: /memories/f.txt is a file, not a directory');
  await c.fails({ command: 'create', path: '/memories/f.txt/x/y.txt', file_text: 'y' }, 409,
    'Error: Cannot create /memories/f.txt/x/y.txt: /memories/f.txt is a file, not a directory');
  await c.create('/memories/d/g.txt', 'g');
  await c.fails({ command: 'create', path: '/memories//d/g.txt/h/i', file_text: 'y' }, 409,
    'Error: Cannot create /memories//d/g.txt/h/i: /memories/d/g.txt is a file, not a directory');
});

test('create: missing or mistyped fields -> 400', async () => {
  const c = client('c-createfields');
  await c.fails({ command: 'create', path: '/memories/a.txt' }, 400,
    'Error: Missing required parameter `file_text` for command `create`');
  await c.fails({ command: 'create', path: '/memories/a.txt', file_text: null }, 400,
    'Error: Missing required parameter `file_text` for command `create`');
  await c.fails({ command: 'create', file_text: 'x' }, 400,
    'Error: Missing required parameter `path` for command `create`');
  await c.fails({ command: 'create', path: '/memories/a.txt', file_text: 5 }, 400,
    'Error: Parameter `file_text` must be a string');
  await c.fails({ command: 'create', path: ['/memories/a.txt'], file_text: 'x' }, 400,
    'Error: Parameter `path` must be a string');
});

// ------------------------------------------------------------------ str_replace

test('str_replace: success snippet from 2 before to 2 after the new text', async () => {
  const c = client('c-replace');
  const p = '/memories/s.txt';
  await c.create(p, 'l1\nl2\nl3\nl4\nl5\nl6\nl7');
  await c.ok({ command: 'str_replace', path: p, old_str: 'l4', new_str: 'X\nY' },
    [SNIPPET_HEAD, numbered(2, 'l2'), numbered(3, 'l3'), numbered(4, 'X'), numbered(5, 'Y'), numbered(6, 'l5'), numbered(7, 'l6')].join('\n'));
  await c.ok({ command: 'view', path: p }, fileView(p, ['l1', 'l2', 'l3', 'X', 'Y', 'l5', 'l6', 'l7']));
  // Near the start and the end the snippet is clamped.
  await c.ok({ command: 'str_replace', path: p, old_str: 'l1', new_str: 'first' },
    [SNIPPET_HEAD, numbered(1, 'first'), numbered(2, 'l2'), numbered(3, 'l3')].join('\n'));
  await c.ok({ command: 'str_replace', path: p, old_str: 'l7', new_str: 'last' },
    [SNIPPET_HEAD, numbered(6, 'l5'), numbered(7, 'l6'), numbered(8, 'last')].join('\n'));
  // An empty new_str deletes the text; the path is echoed as sent.
  await c.ok({ command: 'str_replace', path: '/memories//s.txt', old_str: 'X\n', new_str: '' },
    [SNIPPET_HEAD, numbered(2, 'l2'), numbered(3, 'l3'), numbered(4, 'Y'), numbered(5, 'l5'), numbered(6, 'l6')].join('\n'));
  await c.ok({ command: 'view', path: p }, fileView(p, ['first', 'l2', 'l3', 'Y', 'l5', 'l6', 'last']));
});

test('str_replace: multi-line old_str', async () => {
  const c = client('c-multiline');
  const p = '/memories/m.txt';
  await c.create(p, 'a\nb\nc\nd');
  await c.ok({ command: 'str_replace', path: p, old_str: 'b\nc', new_str: 'B' },
    [SNIPPET_HEAD, numbered(1, 'a'), numbered(2, 'B'), numbered(3, 'd')].join('\n'));
  await c.ok({ command: 'view', path: p }, fileView(p, ['a', 'B', 'd']));
  // Two multi-line occurrences: the lines where each starts.
  await c.create('/memories/m2.txt', 'x\ny\nz\nx\ny');
  await c.fails({ command: 'str_replace', path: '/memories/m2.txt', old_str: 'x\ny', new_str: '-' }, 409,
    'No replacement was performed. Multiple occurrences of old_str `x\ny` in lines: 1, 4. Please ensure it is unique');
});

test('str_replace: new_str is literal ($& and friends are not expanded)', async () => {
  const c = client('c-dollar');
  const p = '/memories/d.txt';
  await c.create(p, 'price: X');
  await c.ok({ command: 'str_replace', path: p, old_str: 'X', new_str: "$& $1 $$ $` $'" },
    `${SNIPPET_HEAD}\n${numbered(1, "price: $& $1 $$ $` $'")}`);
  await c.ok({ command: 'view', path: p }, fileView(p, ["price: $& $1 $$ $` $'"]));
});

test('str_replace: errors', async () => {
  const c = client('c-replace-err');
  const p = '/memories/s.txt';
  await c.create(p, 'ab\ncd\nab ab\nef');
  await c.create('/memories/dir/x.txt', 'ab');
  await c.fails({ command: 'str_replace', path: '/memories/nope.txt', old_str: 'a', new_str: 'b' }, 404,
    'Error: The path /memories/nope.txt does not exist. Please provide a valid path.');
  await c.fails({ command: 'str_replace', path: '/memories/dir', old_str: 'a', new_str: 'b' }, 404,
    'Error: The path /memories/dir does not exist. Please provide a valid path.');
  await c.fails({ command: 'str_replace', path: '/memories', old_str: 'a', new_str: 'b' }, 404,
    'Error: The path /memories does not exist. Please provide a valid path.');
  await c.fails({ command: 'str_replace', path: p, old_str: 'zzz', new_str: 'b' }, 409,
    'No replacement was performed, old_str `zzz` did not appear verbatim in /memories/s.txt.');
  await c.fails({ command: 'str_replace', path: '/memories//s.txt', old_str: 'AB', new_str: 'b' }, 409,
    'No replacement was performed, old_str `AB` did not appear verbatim in /memories//s.txt.');
  // Several, two of them on one line.
  await c.fails({ command: 'str_replace', path: p, old_str: 'ab', new_str: 'b' }, 409,
    'No replacement was performed. Multiple occurrences of old_str `ab` in lines: 1, 3, 3. Please ensure it is unique');
  // Field errors.
  await c.fails({ command: 'str_replace', path: p, old_str: '', new_str: 'b' }, 400,
    'Error: Parameter `old_str` must not be empty');
  await c.fails({ command: 'str_replace', path: p, old_str: 'cd' }, 400,
    'Error: Missing required parameter `new_str` for command `str_replace`');
  await c.fails({ command: 'str_replace', path: p, new_str: 'x' }, 400,
    'Error: Missing required parameter `old_str` for command `str_replace`');
  await c.fails({ command: 'str_replace', path: p, old_str: 'cd', new_str: 7 }, 400,
    'Error: Parameter `new_str` must be a string');
  await c.fails({ command: 'str_replace', path: p, old_str: ['cd'], new_str: 'x' }, 400,
    'Error: Parameter `old_str` must be a string');
  // An empty old_str is refused even on a missing file (fields are checked first).
  await c.fails({ command: 'str_replace', path: '/memories/nope.txt', old_str: '', new_str: 'b' }, 400,
    'Error: Parameter `old_str` must not be empty');
});

// ------------------------------------------------------------------ insert

test('insert: success at 0, in the middle and at the end; one trailing newline dropped', async () => {
  const c = client('c-insert');
  const p = '/memories/i.txt';
  await c.create(p, 'a\nb\nc');
  await c.ok({ command: 'insert', path: p, insert_line: 0, insert_text: 'top\n' }, `The file ${p} has been edited.`);
  await c.ok({ command: 'view', path: p }, fileView(p, ['top', 'a', 'b', 'c']));
  await c.ok({ command: 'insert', path: p, insert_line: 2, insert_text: 'x\ny\n' }, `The file ${p} has been edited.`);
  await c.ok({ command: 'view', path: p }, fileView(p, ['top', 'a', 'x', 'y', 'b', 'c']));
  await c.ok({ command: 'insert', path: '/memories//i.txt', insert_line: 6, insert_text: 'end' },
    'The file /memories//i.txt has been edited.');
  await c.ok({ command: 'view', path: p }, fileView(p, ['top', 'a', 'x', 'y', 'b', 'c', 'end']));
  // Only one trailing newline is dropped.
  await c.ok({ command: 'insert', path: p, insert_line: 1, insert_text: 'blank after\n\n' }, `The file ${p} has been edited.`);
  await c.ok({ command: 'view', path: p }, fileView(p, ['top', 'blank after', '', 'a', 'x', 'y', 'b', 'c', 'end']));
  // A file with a trailing newline has an empty last line; an empty file has one line.
  await c.create('/memories/t.txt', 'a\nb\n');
  await c.ok({ command: 'insert', path: '/memories/t.txt', insert_line: 3, insert_text: 'X' },
    'The file /memories/t.txt has been edited.');
  await c.ok({ command: 'view', path: '/memories/t.txt' }, fileView('/memories/t.txt', ['a', 'b', '', 'X']));
  await c.create('/memories/e.txt', '');
  await c.ok({ command: 'insert', path: '/memories/e.txt', insert_line: 1, insert_text: 'X' },
    'The file /memories/e.txt has been edited.');
  await c.ok({ command: 'view', path: '/memories/e.txt' }, fileView('/memories/e.txt', ['', 'X']));
  // An integral real is an integer.
  await c.ok('{"command":"insert","path":"/memories/e.txt","insert_line":0.0,"insert_text":"Y"}',
    'The file /memories/e.txt has been edited.');
  await c.ok({ command: 'view', path: '/memories/e.txt' }, fileView('/memories/e.txt', ['Y', '', 'X']));
});

test('insert: errors', async () => {
  const c = client('c-insert-err');
  const p = '/memories/i.txt';
  await c.create(p, 'a\nb\nc');
  await c.create('/memories/dir/x.txt', 'x');
  await c.fails({ command: 'insert', path: '/memories/nope.txt', insert_line: 0, insert_text: 'x' }, 404,
    'Error: The path /memories/nope.txt does not exist');
  await c.fails({ command: 'insert', path: '/memories/dir', insert_line: 0, insert_text: 'x' }, 404,
    'Error: The path /memories/dir does not exist');
  await c.fails({ command: 'insert', path: '/memories', insert_line: 0, insert_text: 'x' }, 404,
    'Error: The path /memories does not exist');
  await c.fails({ command: 'insert', path: p, insert_line: -1, insert_text: 'x' }, 422,
    'Error: Invalid `insert_line` parameter: -1. It should be within the range of lines of the file: [0, 3]');
  await c.fails({ command: 'insert', path: p, insert_line: 4, insert_text: 'x' }, 422,
    'Error: Invalid `insert_line` parameter: 4. It should be within the range of lines of the file: [0, 3]');
  await c.fails({ command: 'insert', path: p, insert_line: 1e9, insert_text: 'x' }, 422,
    'Error: Invalid `insert_line` parameter: 1000000000. It should be within the range of lines of the file: [0, 3]');
  for (const bad of [1.5, '2', true, [1]]) {
    await c.fails({ command: 'insert', path: p, insert_line: bad, insert_text: 'x' }, 400,
      'Error: Parameter `insert_line` must be an integer');
  }
  // Whole numbers beyond 64 bits (valid JSON): out of range, and nothing changes.
  const range = 'Error: Parameter `insert_line` has a number out of range: integers must be between -9223372036854775808 and 9223372036854775807';
  for (const big of ['9223372036854775808', '-9223372036854775809', '18446744073709551616', '1e19', '-1e400', '99999999999999999999999999999999']) {
    await c.fails(`{"command":"insert","path":"${p}","insert_line":${big},"insert_text":"x"}`, 400, range);
  }
  // The largest int64 is in range as a number: the file's range is what it is out of.
  await c.fails(`{"command":"insert","path":"${p}","insert_line":9223372036854775807,"insert_text":"x"}`, 422,
    'Error: Invalid `insert_line` parameter: 9223372036854775807. It should be within the range of lines of the file: [0, 3]');
  await c.ok({ command: 'view', path: p }, fileView(p, ['a', 'b', 'c']));
  await c.fails({ command: 'insert', path: p, insert_text: 'x' }, 400,
    'Error: Missing required parameter `insert_line` for command `insert`');
  await c.fails({ command: 'insert', path: p, insert_line: 1 }, 400,
    'Error: Missing required parameter `insert_text` for command `insert`');
  await c.fails({ command: 'insert', path: p, insert_line: 1, insert_text: 1 }, 400,
    'Error: Parameter `insert_text` must be a string');
});

// ------------------------------------------------------------------ delete

test('delete: a file, a directory recursively; the parent directory stays', async () => {
  const c = client('c-delete');
  await c.create('/memories/d/f.txt', 'f');
  await c.create('/memories/t/a/b/c.txt', 'deep');
  await c.create('/memories/t/x.txt', 'x');
  await c.ok({ command: 'delete', path: '/memories/d/f.txt' }, 'Successfully deleted /memories/d/f.txt');
  await c.ok({ command: 'view', path: '/memories' }, listing('/memories', [
    '5B\t/memories', '0B\t/memories/d/', '5B\t/memories/t/', '4B\t/memories/t/a/', '1B\t/memories/t/x.txt',
  ]));
  await c.ok({ command: 'delete', path: '/memories//t/' }, 'Successfully deleted /memories//t/');
  await c.ok({ command: 'view', path: '/memories' }, listing('/memories', ['0B\t/memories', '0B\t/memories/d/']));
  await c.fails({ command: 'view', path: '/memories/t/a/b/c.txt' }, 404,
    'The path /memories/t/a/b/c.txt does not exist. Please provide a valid path.');
  // The path can be used again.
  await c.create('/memories/t/a/b/c.txt', 'new');
  await c.ok({ command: 'view', path: '/memories/t/a/b/c.txt' }, fileView('/memories/t/a/b/c.txt', ['new']));
  // An empty directory can be deleted.
  await c.ok({ command: 'delete', path: '/memories/d' }, 'Successfully deleted /memories/d');
});

test('delete: errors', async () => {
  const c = client('c-delete-err');
  await c.create('/memories/f.txt', 'f');
  await c.fails({ command: 'delete', path: '/memories/nope' }, 404, 'Error: The path /memories/nope does not exist');
  await c.fails({ command: 'delete', path: '/memories/f.txt/x' }, 404, 'Error: The path /memories/f.txt/x does not exist');
  await c.fails({ command: 'delete', path: '/memories' }, 400, 'Error: Cannot delete the /memories directory itself');
  await c.fails({ command: 'delete', path: '/memories/' }, 400, 'Error: Cannot delete the /memories directory itself');
  await c.fails({ command: 'delete', path: '/memories//' }, 400, 'Error: Cannot delete the /memories directory itself');
  await c.fails({ command: 'delete' }, 400, 'Error: Missing required parameter `path` for command `delete`');
  // A tenant with no data at all.
  const e = client('c-delete-none');
  await e.fails({ command: 'delete', path: '/memories/x' }, 404, 'Error: The path /memories/x does not exist');
  await e.fails({ command: 'delete', path: '/memories' }, 400, 'Error: Cannot delete the /memories directory itself');
});

// ------------------------------------------------------------------ rename

test('rename: a file, a directory with its subtree, destination parents created', async () => {
  const c = client('c-rename');
  await c.create('/memories/a.txt', 'aaa');
  await c.ok({ command: 'rename', old_path: '/memories/a.txt', new_path: '/memories/b.txt' },
    'Successfully renamed /memories/a.txt to /memories/b.txt');
  await c.ok({ command: 'view', path: '/memories/b.txt' }, fileView('/memories/b.txt', ['aaa']));
  await c.fails({ command: 'view', path: '/memories/a.txt' }, 404,
    'The path /memories/a.txt does not exist. Please provide a valid path.');
  await c.create('/memories/d/e/f/g.txt', 'g');
  await c.create('/memories/d/h.txt', 'hh');
  await c.create('/memories/d/.hid', 'hidden');
  await c.ok({ command: 'rename', old_path: '/memories//d/', new_path: '/memories/n/m/d2' },
    'Successfully renamed /memories//d/ to /memories/n/m/d2');
  await c.ok({ command: 'view', path: '/memories' }, listing('/memories', [
    '12B\t/memories', '3B\t/memories/b.txt', '9B\t/memories/n/', '9B\t/memories/n/m/',
  ]));
  await c.ok({ command: 'view', path: '/memories/n/m/d2' }, listing('/memories/n/m/d2', [
    '9B\t/memories/n/m/d2', '1B\t/memories/n/m/d2/e/', '1B\t/memories/n/m/d2/e/f/', '2B\t/memories/n/m/d2/h.txt',
  ]));
  await c.ok({ command: 'view', path: '/memories/n/m/d2/e/f/g.txt' }, fileView('/memories/n/m/d2/e/f/g.txt', ['g']));
  await c.ok({ command: 'view', path: '/memories/n/m/d2/.hid' }, fileView('/memories/n/m/d2/.hid', ['hidden']));
  // The source's parent stays; a sibling with a common prefix is not "inside".
  await c.create('/memories/p/x.txt', 'x');
  await c.ok({ command: 'rename', old_path: '/memories/p/x.txt', new_path: '/memories/x.txt' },
    'Successfully renamed /memories/p/x.txt to /memories/x.txt');
  await c.ok({ command: 'rename', old_path: '/memories/p', new_path: '/memories/p2' },
    'Successfully renamed /memories/p to /memories/p2');
  await c.ok({ command: 'rename', old_path: '/memories/p2', new_path: '/memories/p' },
    'Successfully renamed /memories/p2 to /memories/p');
  await c.ok({ command: 'view', path: '/memories' }, listing('/memories', [
    '13B\t/memories', '3B\t/memories/b.txt', '9B\t/memories/n/', '9B\t/memories/n/m/', '0B\t/memories/p/', '1B\t/memories/x.txt',
  ]));
});

test('rename: errors', async () => {
  const c = client('c-rename-err');
  await c.create('/memories/a.txt', 'a');
  await c.create('/memories/b.txt', 'b');
  await c.create('/memories/d/sub/s.txt', 's');
  await c.create('/memories/f.txt', 'f');
  await c.fails({ command: 'rename', old_path: '/memories/nope', new_path: '/memories/x' }, 404,
    'Error: The path /memories/nope does not exist');
  await c.fails({ command: 'rename', old_path: '/memories/a.txt', new_path: '/memories/b.txt' }, 409,
    'Error: The destination /memories/b.txt already exists');
  await c.fails({ command: 'rename', old_path: '/memories/a.txt', new_path: '/memories/d' }, 409,
    'Error: The destination /memories/d already exists');
  await c.fails({ command: 'rename', old_path: '/memories/a.txt', new_path: '/memories/a.txt' }, 409,
    'Error: The destination /memories/a.txt already exists');
  await c.fails({ command: 'rename', old_path: '/memories/a.txt', new_path: '/memories//a.txt/' }, 409,
    'Error: The destination /memories//a.txt/ already exists');
  await c.fails({ command: 'rename', old_path: '/memories/d', new_path: '/memories/d' }, 409,
    'Error: The destination /memories/d already exists');
  await c.fails({ command: 'rename', old_path: '/memories/a.txt', new_path: '/memories' }, 409,
    'Error: The destination /memories already exists');
  await c.fails({ command: 'rename', old_path: '/memories/d', new_path: '/memories/d/sub/x' }, 409,
    'Error: Cannot rename /memories/d to /memories/d/sub/x: a directory cannot be moved inside itself');
  await c.fails({ command: 'rename', old_path: '/memories/d', new_path: '/memories/d/new' }, 409,
    'Error: Cannot rename /memories/d to /memories/d/new: a directory cannot be moved inside itself');
  await c.fails({ command: 'rename', old_path: '/memories/a.txt', new_path: '/memories/f.txt/z' }, 409,
    'Error: Cannot rename /memories/a.txt to /memories/f.txt/z: /memories/f.txt is a file, not a directory');
  await c.fails({ command: 'rename', old_path: '/memories', new_path: '/memories/x' }, 400,
    'Error: Cannot rename the /memories directory itself');
  await c.fails({ command: 'rename', old_path: '/memories/', new_path: '/memories/x' }, 400,
    'Error: Cannot rename the /memories directory itself');
  await c.fails({ command: 'rename', old_path: '/memories/a.txt' }, 400,
    'Error: Missing required parameter `new_path` for command `rename`');
  await c.fails({ command: 'rename', new_path: '/memories/x' }, 400,
    'Error: Missing required parameter `old_path` for command `rename`');
  await c.fails({ command: 'rename', old_path: '/memories/a.txt', new_path: 3 }, 400,
    'Error: Parameter `new_path` must be a string');
  // A tenant with no data at all.
  const e = client('c-rename-none');
  await e.fails({ command: 'rename', old_path: '/memories/x', new_path: '/memories/y' }, 404,
    'Error: The path /memories/x does not exist');
});

// ------------------------------------------------------------------ commands and fields

test('unknown command -> 400 "Error: {command} not implemented"', async () => {
  const c = client('c-unknown');
  await c.create('/memories/a.txt', 'a');
  await c.fails({ command: 'copy', path: '/memories/a.txt' }, 400, 'Error: copy not implemented');
  await c.fails({ command: 'View', path: '/memories' }, 400, 'Error: View not implemented');
  await c.fails({ command: '', path: '/memories' }, 400, 'Error:  not implemented');
  await c.fails({ path: '/memories' }, 400, 'Error: Missing required parameter `command`');
  await c.fails({ command: 1, path: '/memories' }, 400, 'Error: Parameter `command` must be a string');
});

// ------------------------------------------------------------------ §3 path rejections

const pathCases = [
  ['memories/a', 'Error: Path must start with /memories, got: memories/a'],
  ['/memoriesX', 'Error: Path must start with /memories, got: /memoriesX'],
  ['/memoriesX/a', 'Error: Path must start with /memories, got: /memoriesX/a'],
  ['/Memories/a', 'Error: Path must start with /memories, got: /Memories/a'],
  ['/etc/passwd', 'Error: Path must start with /memories, got: /etc/passwd'],
  ['', 'Error: Path must start with /memories, got: '],
  ['/memories\\a', 'Error: Path must start with /memories, got: /memories\\a'],
  ['/memories/../etc', 'Error: Path /memories/../etc would escape /memories directory'],
  ['/memories/..', 'Error: Path /memories/.. would escape /memories directory'],
  ['/memories/a/../../x', 'Error: Path /memories/a/../../x would escape /memories directory'],
  ['/memories/a/../b', "Error: Path /memories/a/../b contains a '..' segment, which is not allowed"],
  ['/memories/a/..', "Error: Path /memories/a/.. contains a '..' segment, which is not allowed"],
  ['/memories/.', "Error: Path /memories/. contains a '.' segment, which is not allowed"],
  ['/memories/./a', "Error: Path /memories/./a contains a '.' segment, which is not allowed"],
  ['/memories/a/.', "Error: Path /memories/a/. contains a '.' segment, which is not allowed"],
  ['/memories/a\\b', 'Error: Path /memories/a\\b contains a backslash (\\), which is not allowed'],
  ['/memories/..\\x', 'Error: Path /memories/..\\x contains a backslash (\\), which is not allowed'],
  ...['\u0000', '\n', '\t', '\r', '\u001b', '\u007f', '\u0085', '\u009f'].map((ch) => [
    `/memories/a${ch}b`, `Error: Path /memories/a${ch}b contains a control character, which is not allowed`,
  ]),
  ...['%2e', '%2E', '%2e%2e', '%2f', '%2F', '%5c', '%5C', 'a%2fb'].map((enc) => [
    `/memories/${enc}/x`,
    `Error: Path /memories/${enc}/x contains a percent-encoded '.', '/' or '\\' (%2e, %2f or %5c), which is not allowed`,
  ]),
  [`/memories/${'s'.repeat(256)}`, `Error: Path /memories/${'s'.repeat(256)} has a segment longer than 255 bytes`],
  [`/memories/ok/${'\u00e9'.repeat(128)}`, `Error: Path /memories/ok/${'\u00e9'.repeat(128)} has a segment longer than 255 bytes`],
];
// Over 4096 bytes: the message shows the first 100 bytes.
const longPath = `/memories/${`${'p'.repeat(200)}/`.repeat(21)}`; // 10 + 21 * 201 = 4231 bytes
pathCases.push([longPath, `Error: Path ${longPath.slice(0, 100)}... is too long: 4231 bytes (the limit is 4096)`]);

test('§3 path rejections: exact message, 400, nothing changed, for every command and path field', async () => {
  const c = client('c-paths');
  await c.create('/memories/a/b', 'b');
  await c.create('/memories/x', 'x');
  for (const [p, msg] of pathCases) {
    await c.fails({ command: 'view', path: p }, 400, msg);
    await c.fails({ command: 'create', path: p, file_text: 'new' }, 400, msg);
    await c.fails({ command: 'str_replace', path: p, old_str: 'b', new_str: 'c' }, 400, msg);
    await c.fails({ command: 'insert', path: p, insert_line: 0, insert_text: 'c' }, 400, msg);
    await c.fails({ command: 'delete', path: p }, 400, msg);
    await c.fails({ command: 'rename', old_path: p, new_path: '/memories/new' }, 400, msg);
    await c.fails({ command: 'rename', old_path: '/memories/a', new_path: p }, 400, msg);
  }
});

test('§3 accepted paths: runs of / collapse, one trailing / dropped, 255-byte segment', async () => {
  const c = client('c-pathok');
  await c.create('/memories///a//b.txt//', 'ab');
  await c.ok({ command: 'view', path: '/memories/a/b.txt' }, fileView('/memories/a/b.txt', ['ab']));
  await c.ok({ command: 'view', path: '/memories/a//b.txt/' }, fileView('/memories/a//b.txt/', ['ab']));
  const seg = 's'.repeat(255);
  await c.create(`/memories/${seg}`, 'long');
  await c.ok({ command: 'view', path: `/memories/${seg}` }, fileView(`/memories/${seg}`, ['long']));
  const seg2 = '\u00e9'.repeat(127); // 254 bytes
  await c.create(`/memories/${seg2}`, 'e');
  await c.ok({ command: 'view', path: `/memories/${seg2}` }, fileView(`/memories/${seg2}`, ['e']));
});

test('§3 invalid UTF-8 cannot reach a path: a lone surrogate or a raw 0xFF byte is invalid JSON (400), nothing stored', async () => {
  const c = client('c-utf8');
  await c.create('/memories/keep.txt', 'k');
  await c.fails('{"command":"create","path":"/memories/\\ud800","file_text":"x"}', 400,
    "Error: Invalid JSON in request body: invalid Unicode '\\uD800' near '\"/memories/\\ud800\"' (line 1, column 45)");
  const before = await c.snapshot();
  const r = await fetch(`${srv.url}/memory`, {
    method: 'POST',
    headers: { 'x-tenant-id': 'c-utf8' },
    body: Buffer.concat([Buffer.from('{"command":"create","path":"/memories/'), Buffer.from([0xff]), Buffer.from('","file_text":"x"}')]),
  });
  assert.equal(r.status, 400);
  const body = await r.json();
  assert.deepEqual(body, {
    type: 'tool_result',
    content: "Error: Invalid JSON in request body: unable to decode byte 0xff near '\"/memories/' (line 1, column 38)",
    is_error: true,
  });
  assert.deepEqual(await c.snapshot(), before);
});
