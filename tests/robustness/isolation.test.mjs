// Tenant isolation under attack (issue "memoryd under attack"). Several tenants hold data —
// "acme", "ACME" (same letters, another tenant), "a_me" (matches "acme" if a LIKE pattern were
// used), "globex" and the default tenant (no header) — and each tries to reach the others':
//   - with every command (view, create, str_replace, insert, delete, rename by either path)
//     aimed at another tenant's paths and content;
//   - through paths: traversal forms ("..", "."), the tenant name inside paths, percent-encoded
//     and backslash forms, control characters, and literal look-alikes that are valid paths;
//   - through the tenant header: missing (default tenant only), empty, sent twice (also as
//     x-tenant-id + X-TENANT-ID), 129 characters, '/', spaces, SQL / LIKE characters, unicode,
//     NUL and other control bytes, a space before the colon, an underscored name, a folded
//     line, a chunked trailer, a query string;
//   - with SQL / LIKE / GLOB metacharacters (% _ ' " * [ and \ in content) in paths, content
//     and tenant names, which are stored and listed literally: "%" and "_" match nothing but
//     themselves, deleting or renaming "a_" leaves "ab" alone.
// After every attack: zero leaks — no response carries another tenant's secret token (every
// path and file of a tenant carries "S3CR3T<tenant>") unless the request itself or the
// caller's own tree holds it — and zero cross-tenant writes — every tenant's whole tree, read
// back with view (every directory listing, every file, and a 404 for every path that only
// other tenants have), equals its model exactly. Part of the suite runs with --require-tenant.
// Last, all tenants write at once, on several connections each, into the same paths, so that
// their commands share writer batches (one transaction, a savepoint per command), with failing
// commands mixed in; each tenant must end up with exactly its own tree.
//
// What libmicrohttpd 0.9.75 does to header lines before memoryd sees them, asserted as is:
// it cuts a header value at a NUL byte (so "acme\0globex" names "acme" — a valid id the client
// could have sent anyway, never the part after the NUL); it keeps a space before the colon in
// the header name and joins a folded continuation line onto the name, so those headers are not
// X-Tenant-ID at all (default tenant, or 400 with --require-tenant); it drops leading but keeps
// trailing whitespace of a value (" acme" is acme, "acme " is refused).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startServer } from '../lib/server.mjs';
import { makeClient } from '../lib/client.mjs';
import { exchange, httpRequest } from '../lib/attack.mjs';
import { formatSize, volume } from '../lib/util.mjs';

// ------------------------------------------------------------------------------------ model

const ROOT = '/memories';
const parentOf = (p) => p.slice(0, p.lastIndexOf('/'));
const nameOf = (p) => p.slice(p.lastIndexOf('/') + 1);
const byteOrder = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const hidden = (name) => name.startsWith('.') || name === 'node_modules';
const TOKEN_RE = /S3CR3T<[^>]*>/g;
const token = (tenant) => `S3CR3T<${tenant}>`;

// One tenant's expected tree.
class Tree {
  constructor() {
    this.files = new Map();
    this.dirs = new Set([ROOT]);
  }

  has(p) { return this.files.has(p) || this.dirs.has(p); }

  mkParents(p) {
    for (let d = parentOf(p); d !== ROOT && !this.dirs.has(d); d = parentOf(d)) this.dirs.add(d);
  }

  create(p, text) {
    this.mkParents(p);
    this.files.set(p, text);
  }

  delete(p) {
    const inside = (q) => q === p || q.startsWith(`${p}/`);
    for (const f of [...this.files.keys()]) if (inside(f)) this.files.delete(f);
    for (const d of [...this.dirs]) if (inside(d)) this.dirs.delete(d);
  }

  rename(from, to) {
    this.mkParents(to);
    const moved = (q) => (q === from ? to : q.startsWith(`${from}/`) ? to + q.slice(from.length) : null);
    for (const [f, text] of [...this.files]) {
      const m = moved(f);
      if (m) { this.files.delete(f); this.files.set(m, text); }
    }
    for (const d of [...this.dirs]) {
      const m = moved(d);
      if (m) { this.dirs.delete(d); this.dirs.add(m); }
    }
  }

  size(p) {
    if (this.files.has(p)) return Buffer.byteLength(this.files.get(p));
    let n = 0;
    for (const [f, text] of this.files) if (f.startsWith(`${p}/`)) n += Buffer.byteLength(text);
    return n;
  }

  children(dir) {
    const out = [];
    for (const q of [...this.files.keys(), ...this.dirs]) if (q !== ROOT && parentOf(q) === dir) out.push(q);
    return out.sort((a, b) => byteOrder(nameOf(a), nameOf(b)));
  }

  // docs/behaviour.md §4.1: two levels below dir, hidden entries left out, per directory in
  // byte order.
  listing(dir) {
    const lines = [`Here're the files and directories up to 2 levels deep in ${dir}, excluding hidden items and node_modules:`, `${formatSize(this.size(dir))}\t${dir}`];
    for (const c of this.children(dir)) {
      if (hidden(nameOf(c))) continue;
      const isDir = this.dirs.has(c);
      lines.push(`${formatSize(this.size(c))}\t${c}${isDir ? '/' : ''}`);
      if (!isDir) continue;
      for (const g of this.children(c)) {
        if (!hidden(nameOf(g))) lines.push(`${formatSize(this.size(g))}\t${g}${this.dirs.has(g) ? '/' : ''}`);
      }
    }
    return lines.join('\n');
  }

  tokens() {
    const all = [...this.dirs, ...this.files.keys(), ...this.files.values()].join('\n');
    return new Set(all.match(TOKEN_RE) ?? []);
  }
}

const fileView = (p, text) => [`Here's the content of ${p} with line numbers:`, ...text.split('\n').map((l, i) => `${String(i + 1).padStart(6)}\t${l}`)].join('\n');
const notThere = (p) => `The path ${p} does not exist. Please provide a valid path.`;

// -------------------------------------------------------------------------------- a server

// One memoryd and the expected tree of every tenant it holds. `headerless` is the tenant
// reached without the header (the default tenant), or null with --require-tenant.
class World {
  constructor(srv, { headerless }) {
    this.srv = srv;
    this.headerless = headerless;
    this.trees = new Map();
    this.clients = new Map();
    this.responses = 0;
  }

  tree(tenant) {
    if (!this.trees.has(tenant)) this.trees.set(tenant, new Tree());
    return this.trees.get(tenant);
  }

  // A new keep-alive connection of `tenant` (no header for the headerless tenant).
  newClient(tenant) {
    return makeClient(this.srv.port, tenant === this.headerless ? {} : { tenant });
  }

  client(tenant) {
    if (!this.clients.has(tenant)) this.clients.set(tenant, this.newClient(tenant));
    return this.clients.get(tenant);
  }

  close() {
    for (const c of this.clients.values()) c.close();
  }

  // No response may carry another tenant's secret token, unless the request itself or the
  // answering tenant's own tree holds it. landing: the tenant that answered, or null.
  checkLeak(landing, requestText, responseText) {
    this.responses++;
    const allowed = new Set(requestText.match(TOKEN_RE) ?? []);
    if (landing !== null) for (const t of this.tree(landing).tokens()) allowed.add(t);
    for (const t of responseText.match(TOKEN_RE) ?? []) {
      assert.ok(allowed.has(t), `LEAK: a response to ${landing === null ? 'a refused request' : `tenant ${landing}`} carries ${t}:\n${requestText}\n->\n${responseText}`);
    }
  }

  // A command as `tenant` (through its keep-alive client, or `client`); checks the envelope and
  // leaks.
  async run(tenant, cmd, client = this.client(tenant)) {
    const r = await client.post(cmd);
    assert.ok(r.json, r.text);
    assert.equal(r.json.type, 'tool_result');
    assert.equal(r.json.is_error, r.status !== 200);
    this.checkLeak(tenant, JSON.stringify(cmd), r.text);
    return { status: r.status, content: r.json.content };
  }

  async expect(tenant, cmd, status, content, client) {
    assert.deepEqual(await this.run(tenant, cmd, client), { status, content }, `${tenant}: ${JSON.stringify(cmd)}`);
  }

  // A command with exactly these raw header lines (fresh connection). `landing` is the tenant
  // expected to answer (for the leak check), or null when the request is refused.
  async raw(headers, cmd, landing) {
    const body = JSON.stringify(cmd);
    const r = await httpRequest(this.srv.port, { headers, body });
    assert.ok(r, `no answer to ${JSON.stringify(headers)}`);
    const json = JSON.parse(r.text);
    this.checkLeak(landing, `${headers.join('\n')}\n${body}`, r.text);
    return { status: r.status, content: json.content };
  }

  // One tenant's whole tree equals its model: every directory listing and every file.
  async assertTenant(tenant) {
    const t = this.tree(tenant);
    for (const d of t.dirs) await this.expect(tenant, { command: 'view', path: d }, 200, t.listing(d));
    for (const [f, text] of t.files) await this.expect(tenant, { command: 'view', path: f }, 200, fileView(f, text));
  }

  // Every tenant's whole tree equals its model, and "does not exist" for every path that only
  // other tenants have.
  async assertAll() {
    const everyPath = new Set();
    for (const t of this.trees.values()) for (const p of [...t.dirs, ...t.files.keys()]) everyPath.add(p);
    for (const [tenant, t] of this.trees) {
      await this.assertTenant(tenant);
      for (const p of everyPath) if (!t.has(p)) await this.expect(tenant, { command: 'view', path: p }, 404, notThere(p));
    }
  }

  // Create through the API and in the model.
  async create(tenant, path, text) {
    await this.expect(tenant, { command: 'create', path, file_text: text }, 200, `File created successfully at: ${path}`);
    this.tree(tenant).create(path, text);
  }
}

// The seed of every tenant: a file at the same path in all, a directory named after the
// tenant's token, a hidden file (counted in sizes, never listed).
async function seed(world, tenant) {
  const tok = token(tenant);
  await world.create(tenant, '/memories/shared/notes.txt', `notes of ${tenant}\n${tok}\n`);
  await world.create(tenant, `/memories/${tok}/secret.txt`, `${tok} top secret\n`);
  await world.create(tenant, '/memories/common.txt', `common ${tok}`);
  await world.create(tenant, '/memories/.hidden/h.txt', `hidden ${tok}\n`);
}

const TENANTS = ['acme', 'ACME', 'a_me', 'globex', 'default'];
let open; // no --require-tenant; the default tenant is reached without the header
let strict; // --require-tenant
const servers = [];

before(async () => {
  const [s1, s2] = await Promise.all([startServer(), startServer({ args: ['--require-tenant'] })]);
  servers.push(s1, s2);
  open = new World(s1, { headerless: 'default' });
  strict = new World(s2, { headerless: null });
  for (const t of TENANTS) await seed(open, t);
  for (const t of ['acme', 'ACME', 'default']) await seed(strict, t);
  await open.assertAll();
  await strict.assertAll();
});

after(async () => {
  for (const w of [open, strict]) w?.close();
  for (const s of servers) {
    await s.stop();
    fs.rmSync(s.dir, { recursive: true, force: true });
  }
});

// ------------------------------------------------------------------ every command, every pair

// Everything `a` can try against `b`'s data with ordinary, valid commands.
async function attackPair(world, a, b) {
  const vdir = `/memories/${token(b)}`;
  const vfile = `${vdir}/secret.txt`;
  const shared = '/memories/shared/notes.txt';
  const A = world.tree(a);
  const missing = `Error: The path ${vfile} does not exist`;
  // Reading b's paths.
  await world.expect(a, { command: 'view', path: vfile }, 404, notThere(vfile));
  await world.expect(a, { command: 'view', path: vdir }, 404, notThere(vdir));
  await world.expect(a, { command: 'view', path: vfile, view_range: [1, -1] }, 404, notThere(vfile));
  // Editing b's file, or b's text in a's own file.
  await world.expect(a, { command: 'str_replace', path: vfile, old_str: token(b), new_str: 'owned' }, 404, `${missing}. Please provide a valid path.`);
  await world.expect(a, { command: 'str_replace', path: shared, old_str: token(b), new_str: 'owned' }, 409,
    `No replacement was performed, old_str \`${token(b)}\` did not appear verbatim in ${shared}.`);
  await world.expect(a, { command: 'insert', path: vfile, insert_line: 0, insert_text: 'owned' }, 404, missing);
  // Deleting and renaming b's file and directory.
  await world.expect(a, { command: 'delete', path: vfile }, 404, missing);
  await world.expect(a, { command: 'delete', path: vdir }, 404, `Error: The path ${vdir} does not exist`);
  await world.expect(a, { command: 'rename', old_path: vfile, new_path: '/memories/stolen.txt' }, 404, missing);
  await world.expect(a, { command: 'rename', old_path: vdir, new_path: '/memories/stolen' }, 404, `Error: The path ${vdir} does not exist`);
  // b's paths are free in a's own tree: create there, rename onto it (b's existing file is
  // no obstacle) and back, delete — all in a's tree only.
  await world.create(a, vfile, `planted by ${a}`);
  await world.expect(a, { command: 'view', path: vfile }, 200, fileView(vfile, `planted by ${a}`));
  await world.expect(a, { command: 'delete', path: vdir }, 200, `Successfully deleted ${vdir}`);
  A.delete(vdir);
  await world.expect(a, { command: 'rename', old_path: '/memories/common.txt', new_path: vfile }, 200, `Successfully renamed /memories/common.txt to ${vfile}`);
  A.rename('/memories/common.txt', vfile);
  await world.expect(a, { command: 'rename', old_path: vfile, new_path: '/memories/common.txt' }, 200, `Successfully renamed ${vfile} to /memories/common.txt`);
  A.rename(vfile, '/memories/common.txt');
  await world.expect(a, { command: 'delete', path: vdir }, 200, `Successfully deleted ${vdir}`);
  A.delete(vdir);
  // a's own shared file: changed by a only.
  const before = A.files.get(shared);
  await world.expect(a, { command: 'insert', path: shared, insert_line: 0, insert_text: `seen by ${a} -> ${b}` }, 200, `The file ${shared} has been edited.`);
  A.files.set(shared, `seen by ${a} -> ${b}\n${before}`);
}

for (const [name, get, tenants] of [
  ['', () => open, TENANTS],
  [' (--require-tenant)', () => strict, ['acme', 'ACME', 'default']],
]) {
  test(`every command aimed at another tenant's paths and content stays in the caller's tenant, for every pair${name}`, async (t) => {
    const world = get();
    for (const a of tenants) {
      for (const b of tenants) {
        if (a === b) continue;
        await attackPair(world, a, b);
        await world.assertTenant(b);
        await world.assertTenant(a);
      }
    }
    await world.assertAll();
    t.diagnostic(`${world.responses} responses checked for leaks so far`);
  });
}

// ---------------------------------------------------------------------------------- paths

test('traversal, encoded and look-alike paths in every path position: refused (400) or literal in the caller\'s own tree', async () => {
  const world = open;
  const a = 'globex';
  const v = 'acme';
  const tok = token(v);
  const escape = (p) => `Error: Path ${p} would escape /memories directory`;
  const dotdot = (p) => `Error: Path ${p} contains a '..' segment, which is not allowed`;
  const dot = (p) => `Error: Path ${p} contains a '.' segment, which is not allowed`;
  const pct = (p) => `Error: Path ${p} contains a percent-encoded '.', '/' or '\\' (%2e, %2f or %5c), which is not allowed`;
  const bslash = (p) => `Error: Path ${p} contains a backslash (\\), which is not allowed`;
  const ctrl = (p) => `Error: Path ${p} contains a control character, which is not allowed`;
  const root = (p) => `Error: Path must start with /memories, got: ${p}`;
  const refused = [
    [`/memories/../${v}/memories/${tok}/secret.txt`, escape],
    [`/memories/../../${v}/memories/shared/notes.txt`, escape],
    [`/memories/${tok}/../../${v}/secret.txt`, escape],
    ['/memories/..', escape],
    [`/memories//../${tok}/secret.txt`, escape],
    [`/memories/x/../${tok}/secret.txt`, dotdot],
    [`/memories/${tok}/..`, dotdot],
    [`/memories/./${tok}/secret.txt`, dot],
    [`/memories/${tok}/./secret.txt`, dot],
    [`/memories/%2e%2e/${v}/secret.txt`, pct],
    [`/memories/%2E%2E%2F${v}`, pct],
    [`/memories/..%2f${v}`, pct],
    [`/memories/%5c..%5c${v}`, pct],
    [`/memories/..\\${v}\\secret.txt`, bslash],
    [`/memories/${tok}\\secret.txt`, bslash],
    [`/memories/${v}\u0000/secret.txt`, ctrl],
    [`/memories/${tok}\n/secret.txt`, ctrl],
    [`/memories/x\u0085/secret.txt`, ctrl],
    [`/${v}/memories/shared/notes.txt`, root],
    [`${v}/memories/shared/notes.txt`, root],
    ['memories/shared/notes.txt', root],
    [`/memories${tok}/secret.txt`, root],
    [`/memories\\..\\${v}`, root],
    ['//memories/shared/notes.txt', root],
    ['', root],
    [`~${v}/memories`, root],
  ];
  const existing = '/memories/common.txt';
  for (const [p, msg] of refused) {
    const want = msg(p);
    for (const cmd of [
      { command: 'view', path: p },
      { command: 'view', path: p, view_range: [1, 2] },
      { command: 'create', path: p, file_text: 'x' },
      { command: 'str_replace', path: p, old_str: 'S3CR3T', new_str: 'x' },
      { command: 'insert', path: p, insert_line: 0, insert_text: 'x' },
      { command: 'delete', path: p },
      { command: 'rename', old_path: p, new_path: '/memories/stolen.txt' },
      { command: 'rename', old_path: existing, new_path: p },
    ]) await world.expect(a, cmd, 400, want);
  }
  // Literal names that only look like traversal or like another tenant are valid paths in the
  // caller's own tree: created, listed, viewed and deleted there, never anywhere else.
  const literal = [
    `/memories/${v}/memories/${tok}/secret.txt`,
    '/memories/%252e%252e/x.txt',
    '/memories/%2/x.txt',
    '/memories/.../x.txt',
    '/memories/..../x.txt',
    '/memories/..;/x.txt',
    '/memories/ ../x.txt',
    '/memories/\u2025/x.txt', // two dot leader
    '/memories/\uff0e\uff0e/x.txt', // fullwidth full stops
    '/memories/%c0%ae%c0%ae/x.txt',
    `/memories/${v}:/x.txt`,
  ];
  for (const p of literal) {
    await world.expect(a, { command: 'view', path: p }, 404, notThere(p));
    await world.create(a, p, `literal ${p}`);
    await world.expect(a, { command: 'view', path: p }, 200, fileView(p, `literal ${p}`));
  }
  // Non-canonical spellings of the caller's own paths reach the same entries.
  await world.expect(a, { command: 'view', path: `/memories//${v}///memories/${tok}/secret.txt/` }, 200, fileView(`/memories//${v}///memories/${tok}/secret.txt/`, `literal /memories/${v}/memories/${tok}/secret.txt`));
  await world.assertAll();
  for (const p of literal) {
    const top = p.split('/').slice(0, 3).join('/');
    await world.expect(a, { command: 'delete', path: top }, 200, `Successfully deleted ${top}`);
    world.tree(a).delete(top);
  }
  await world.assertAll();
});

// ---------------------------------------------------------------------------- tenant header

// [label, raw header lines, the tenant that answers (open server), with --require-tenant]
// where a "tenant" is a name, or {error} for a 400 with that message.
const INVALID = { error: "Error: Invalid X-Tenant-ID header: a tenant id is 1 to 128 characters of A-Z, a-z, 0-9, '.', '_' and '-'" };
const TWICE = { error: 'Error: The X-Tenant-ID header was sent more than once' };
const MISSING = { error: 'Error: Missing X-Tenant-ID header: this server requires a tenant' };
const LONG128 = `${'Az09._-'.repeat(18)}xy`;
const HEADER_CASES = [
  ['no header', [], 'default', MISSING],
  ['X-Tenant-ID: acme', ['X-Tenant-ID: acme'], 'acme', 'acme'],
  ['lower-case name', ['x-tenant-id: acme'], 'acme', 'acme'],
  ['upper-case name', ['X-TENANT-ID: acme'], 'acme', 'acme'],
  ['mixed-case name', ['x-TeNaNt-Id: acme'], 'acme', 'acme'],
  ['value ACME is another tenant', ['X-Tenant-ID: ACME'], 'ACME', 'ACME'],
  ['explicit default', ['X-Tenant-ID: default'], 'default', 'default'],
  ['leading space (optional whitespace)', ['X-Tenant-ID:    acme'], 'acme', 'acme'],
  ['128 characters', [`X-Tenant-ID: ${LONG128}`], LONG128, LONG128],
  ['empty', ['X-Tenant-ID:'], INVALID, INVALID],
  ['empty after spaces', ['X-Tenant-ID:   '], INVALID, INVALID],
  ['twice, different', ['X-Tenant-ID: acme', 'X-Tenant-ID: globex'], TWICE, TWICE],
  ['twice, same', ['X-Tenant-ID: acme', 'X-Tenant-ID: acme'], TWICE, TWICE],
  ['twice, differently cased names', ['x-tenant-id: acme', 'X-TENANT-ID: acme'], TWICE, TWICE],
  ['twice, one empty', ['X-Tenant-ID: acme', 'X-Tenant-ID:'], TWICE, TWICE],
  ['129 characters', [`X-Tenant-ID: ${'a'.repeat(129)}`], INVALID, INVALID],
  ['a list', ['X-Tenant-ID: acme, globex'], INVALID, INVALID],
  ['a slash', ['X-Tenant-ID: acme/../globex'], INVALID, INVALID],
  ['a leading slash', ['X-Tenant-ID: /acme'], INVALID, INVALID],
  ['a space inside', ['X-Tenant-ID: ac me'], INVALID, INVALID],
  // Whitespace around a value is not part of it (RFC 9110 5.5): trimmed on both sides.
  ['a trailing space', ['X-Tenant-ID: acme '], 'acme', 'acme'],
  ['a trailing tab', ['X-Tenant-ID: acme\t'], 'acme', 'acme'],
  ['tabs and spaces around', ['X-Tenant-ID: \t acme \t '], 'acme', 'acme'],
  ['a tab inside', ['X-Tenant-ID: ac\tme'], INVALID, INVALID],
  ['SQL quote', ["X-Tenant-ID: acme' OR '1'='1"], INVALID, INVALID],
  ['SQL comment', ['X-Tenant-ID: acme--'], 'acme--', 'acme--'],
  ['LIKE %', ['X-Tenant-ID: %'], INVALID, INVALID],
  ['LIKE % suffix', ['X-Tenant-ID: ac%'], INVALID, INVALID],
  ['percent-encoded NUL', ['X-Tenant-ID: acme%00'], INVALID, INVALID],
  ['GLOB *', ['X-Tenant-ID: a*'], INVALID, INVALID],
  ['GLOB [', ['X-Tenant-ID: [a]cme'], INVALID, INVALID],
  ['double quote', ['X-Tenant-ID: "acme"'], INVALID, INVALID],
  ['backslash', ['X-Tenant-ID: ac\\me'], INVALID, INVALID],
  ['semicolon', ['X-Tenant-ID: acme;globex'], INVALID, INVALID],
  ['unicode é (UTF-8)', [Buffer.from('X-Tenant-ID: acm\u00e9').toString('latin1')], INVALID, INVALID],
  ['fullwidth letters', [Buffer.from('X-Tenant-ID: \uff41\uff43\uff4d\uff45').toString('latin1')], INVALID, INVALID],
  ['zero-width space', [Buffer.from('X-Tenant-ID: acme\u200b').toString('latin1')], INVALID, INVALID],
  ['Latin-1 byte', ['X-Tenant-ID: acm\xe9'], INVALID, INVALID],
  ['DEL', ['X-Tenant-ID: acme\x7f'], INVALID, INVALID],
  ['control byte', ['X-Tenant-ID: ac\x01me'], INVALID, INVALID],
  ['bare CR', ['X-Tenant-ID: acme\rglobex'], INVALID, INVALID],
  ['NUL first', ['X-Tenant-ID: \x00acme'], INVALID, INVALID],
  // libmicrohttpd cuts the value at a NUL: only the part before it counts.
  ['NUL after a tenant', ['X-Tenant-ID: acme\x00globex'], 'acme', 'acme'],
  ['NUL cutting a tenant', ['X-Tenant-ID: glo\x00acme'], 'glo', 'glo'],
  // Not the X-Tenant-ID header at all (libmicrohttpd keeps these names as written).
  ['space before the colon', ['X-Tenant-ID : acme'], 'default', MISSING],
  ['underscores in the name', ['X_Tenant_ID: acme'], 'default', MISSING],
  ['folded line', ['X-Tenant-ID: acme', ' globex'], 'default', MISSING],
  ['a similar name', ['X-Tenant: acme', 'Tenant: acme', 'X-Tenant-IDs: acme', 'X-Forwarded-Tenant-ID: acme'], 'default', MISSING],
];

const headerCaseTest = (getWorld, strictMode) => async () => {
  const world = getWorld();
  for (const [i, [label, headers, openWant, strictWant]] of HEADER_CASES.entries()) {
    const want = strictMode ? strictWant : openWant;
    const landing = typeof want === 'string' ? want : null;
    const path = `/memories/trick/${i}.txt`;
    const text = `trick ${i}: ${label}`;
    const created = await world.raw(headers, { command: 'create', path, file_text: text }, landing);
    const viewed = await world.raw(headers, { command: 'view', path: '/memories/shared/notes.txt' }, landing);
    if (landing === null) {
      assert.deepEqual(created, { status: 400, content: want.error }, label);
      assert.deepEqual(viewed, { status: 400, content: want.error }, label);
      // Every other command too, aimed at paths that exist in every tenant.
      for (const cmd of [
        { command: 'str_replace', path: '/memories/shared/notes.txt', old_str: 'notes', new_str: 'x' },
        { command: 'insert', path: '/memories/shared/notes.txt', insert_line: 0, insert_text: 'x' },
        { command: 'delete', path: '/memories/shared' },
        { command: 'rename', old_path: '/memories/common.txt', new_path: '/memories/moved.txt' },
      ]) assert.deepEqual(await world.raw(headers, cmd, null), { status: 400, content: want.error }, `${label}: ${cmd.command}`);
      continue;
    }
    assert.deepEqual(created, { status: 200, content: `File created successfully at: ${path}` }, label);
    world.tree(landing).create(path, text);
    const own = world.tree(landing).files.get('/memories/shared/notes.txt');
    assert.deepEqual(viewed, own === undefined
      ? { status: 404, content: notThere('/memories/shared/notes.txt') }
      : { status: 200, content: fileView('/memories/shared/notes.txt', own) }, label);
  }
  // The tenant in a chunked trailer or in the query string is not the tenant.
  const body = JSON.stringify({ command: 'create', path: '/memories/trick/trailer.txt', file_text: 'trailer' });
  const trailer = await exchange(world.srv.port, Buffer.from(['POST /memory HTTP/1.1', 'Host: 127.0.0.1', 'Transfer-Encoding: chunked', 'Connection: close', '',
    `${Buffer.byteLength(body).toString(16)}`, body, '0', 'X-Tenant-ID: acme', '', ''].join('\r\n')));
  const query = await httpRequest(world.srv.port, { path: '/memory?X-Tenant-ID=acme&tenant=acme', body: JSON.stringify({ command: 'create', path: '/memories/trick/query.txt', file_text: 'query' }) });
  for (const [r, path, text] of [[trailer.responses[0], '/memories/trick/trailer.txt', 'trailer'], [query, '/memories/trick/query.txt', 'query']]) {
    world.checkLeak(strictMode ? null : 'default', path, r.text);
    if (strictMode) {
      assert.deepEqual([r.status, JSON.parse(r.text).content], [400, MISSING.error]);
    } else {
      assert.deepEqual([r.status, JSON.parse(r.text).content], [200, `File created successfully at: ${path}`]);
      world.tree('default').create(path, text);
    }
  }
  await world.assertAll();
};

test('tenant header tricks land on exactly one tenant or are refused (no --require-tenant)', headerCaseTest(() => open, false));
test('tenant header tricks with --require-tenant: no header (or not quite the header) is a 400', headerCaseTest(() => strict, true));

// ------------------------------------------------------------------ SQL / LIKE / GLOB literal

const META_PATHS = [
  "/memories/100%_done['x'].txt",
  '/memories/%/in.txt', '/memories/%a/x.txt', '/memories/b%/y.txt', '/memories/abc/z.txt', '/memories/a%/p.txt',
  '/memories/_/one.txt', '/memories/x/two.txt',
  '/memories/a_/f.txt', '/memories/ab/g.txt', '/memories/a_b/h.txt', '/memories/aXb/i.txt',
  '/memories/[ab]/k.txt', '/memories/a/l.txt', '/memories/b/l2.txt',
  '/memories/*/m.txt', '/memories/"q"/n.txt', "/memories/'/o.txt", "/memories/';--/drop.txt",
];

function snippetAfter(text, at, newStr) {
  // docs/behaviour.md §4.4: numbered lines from 2 before the first changed line to 2 after the last
  // line of the new text.
  const lines = text.split('\n');
  const first = text.slice(0, at).split('\n').length;
  const last = first + newStr.split('\n').length - 1;
  const from = Math.max(1, first - 2);
  const to = Math.min(lines.length, last + 2);
  const shown = [];
  for (let n = from; n <= to; n++) shown.push(`${String(n).padStart(6)}\t${lines[n - 1]}`);
  return `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n${shown.join('\n')}`;
}

test('SQL / LIKE / GLOB metacharacters in paths, content and tenant names are literal', async () => {
  const world = open;
  for (const tenant of ['acme', 'a_me']) {
    const tree = world.tree(tenant);
    const tok = token(tenant);
    for (const p of META_PATHS) await world.create(tenant, p, `${nameOf(p)} of ${tenant} ${tok}\n`);
    const meta = '/memories/meta.txt';
    let text = `50% off_sale 'q' "dq" *star* [br] back\\slash ${tok}\n50X offXsale\np%q p_q\n`;
    await world.create(tenant, meta, text);
    // A directory named % or _ (or [ab] or *) lists only its own child.
    for (const [dir, child] of [['/memories/%', '/memories/%/in.txt'], ['/memories/_', '/memories/_/one.txt'], ['/memories/a_', '/memories/a_/f.txt'],
      ['/memories/[ab]', '/memories/[ab]/k.txt'], ['/memories/*', '/memories/*/m.txt'], ['/memories/a%', '/memories/a%/p.txt']]) {
      await world.expect(tenant, { command: 'view', path: dir }, 200,
        [`Here're the files and directories up to 2 levels deep in ${dir}, excluding hidden items and node_modules:`,
          `${formatSize(tree.size(dir))}\t${dir}`, `${formatSize(tree.size(child))}\t${child}`].join('\n'));
    }
    await world.expect(tenant, { command: 'view', path: META_PATHS[0] }, 200, fileView(META_PATHS[0], `100%_done['x'].txt of ${tenant} ${tok}\n`));
    // str_replace matches literally: "_", "%", "[br]" and "\" match only themselves.
    for (const [oldStr, newStr] of [['p_q', 'P_Q'], ['50% off_sale', '50%_OFF'], ['[br]', '[BR]'], ['\\', '/'], ["'q'", "''q''"]]) {
      const at = text.indexOf(oldStr);
      const next = text.slice(0, at) + newStr + text.slice(at + oldStr.length);
      await world.expect(tenant, { command: 'str_replace', path: meta, old_str: oldStr, new_str: newStr }, 200, snippetAfter(next, at, newStr));
      text = next;
      tree.files.set(meta, text);
    }
    await world.expect(tenant, { command: 'str_replace', path: meta, old_str: '*', new_str: '+' }, 409,
      'No replacement was performed. Multiple occurrences of old_str `*` in lines: 1, 1. Please ensure it is unique');
    await world.expect(tenant, { command: 'str_replace', path: meta, old_str: 'p%q p%q', new_str: '!' }, 409,
      `No replacement was performed, old_str \`p%q p%q\` did not appear verbatim in ${meta}.`);
    await world.expect(tenant, { command: 'view', path: meta }, 200, fileView(meta, text));
    // A backslash is refused in paths (it is fine in content, above).
    await world.expect(tenant, { command: 'create', path: '/memories/a\\b.txt', file_text: 'x' }, 400,
      'Error: Path /memories/a\\b.txt contains a backslash (\\), which is not allowed');
    await world.assertAll();
    // Deleting or renaming a directory whose name holds a metacharacter touches only it.
    const ops = [
      ['rename', '/memories/a_', '/memories/a_moved'],
      ['delete', '/memories/a_moved'],
      ['delete', '/memories/a_b'],
      ['rename', '/memories/%', '/memories/pct'],
      ['rename', '/memories/_', '/memories/under'],
      ['rename', '/memories/[ab]', '/memories/[cd]'],
      ['delete', '/memories/*'],
      ['rename', '/memories/a%', '/memories/a%%'],
      ['rename', "/memories/'", '/memories/quote'],
    ];
    for (const [op, from, to] of ops) {
      if (op === 'delete') {
        await world.expect(tenant, { command: 'delete', path: from }, 200, `Successfully deleted ${from}`);
        tree.delete(from);
      } else {
        await world.expect(tenant, { command: 'rename', old_path: from, new_path: to }, 200, `Successfully renamed ${from} to ${to}`);
        tree.rename(from, to);
      }
      // The listing (two levels: every directory and file above) is exactly the model's.
      await world.expect(tenant, { command: 'view', path: ROOT }, 200, tree.listing(ROOT));
      for (const sibling of ['/memories/ab/g.txt', '/memories/aXb/i.txt', '/memories/a/l.txt', '/memories/%a/x.txt', '/memories/b%/y.txt']) {
        await world.expect(tenant, { command: 'view', path: sibling }, 200, fileView(sibling, tree.files.get(sibling)));
      }
    }
    await world.assertAll();
  }
  // The tenants "acme" and "a_me" ("_" is LIKE's any-character) hold the same names with
  // different contents and changes: assertAll() above compared both trees in full.
});

// ------------------------------------------------------------------- all tenants at once

// WORKERS connections per tenant, every tenant at once, each connection in its own directory
// /memories/conc/w{w} — the same paths in every tenant, reached at about the same moment, so
// that the writer's batches mix tenants' commands on the same paths. Among the commands, ones
// that fail and roll back their savepoint inside a shared batch: a create over an existing file
// (409), a create below a file (409), a str_replace of another tenant's text that is in that
// tenant's file at the same path (409), an insert out of range (422), a rename onto itself
// (409), a second delete (404). Each tenant keeps, renames or deletes a different share of its
// files, so the trees differ. Every answer is exact and checked for leaks; at the end every
// tenant's tree is exactly its model, and the debug log shows batches larger than one tenant's
// connections (so batches held several tenants' commands). Under valgrind (scripts/valgrind.sh),
// which looks for memory errors, 3 steps per connection instead of 8: every command and every
// fate of a file (kept, renamed, deleted) still in each.
const WORKERS = 4;
const STEPS = volume(8, 3);

async function concurrentWorker(world, tenant, k, w, client) {
  const tree = world.tree(tenant);
  const tok = token(tenant);
  const others = TENANTS.filter((x) => x !== tenant);
  const dir = `/memories/conc/w${w}`;
  const ex = (cmd, status, content) => world.expect(tenant, cmd, status, content, client);
  for (let i = 0; i < STEPS; i++) {
    const f = `${dir}/f${i}.txt`;
    const text = `${tok} w${w} i${i}`;
    await ex({ command: 'create', path: f, file_text: text }, 200, `File created successfully at: ${f}`);
    tree.create(f, text);
    await ex({ command: 'create', path: f, file_text: `again ${tok}` }, 409, `Error: File ${f} already exists`);
    await ex({ command: 'create', path: `${f}/x.txt`, file_text: tok }, 409, `Error: Cannot create ${f}/x.txt: ${f} is a file, not a directory`);
    const theirs = token(others[(i + w) % others.length]);
    await ex({ command: 'str_replace', path: f, old_str: theirs, new_str: 'stolen' }, 409,
      `No replacement was performed, old_str \`${theirs}\` did not appear verbatim in ${f}.`);
    const edited = `${text} edited`;
    await ex({ command: 'str_replace', path: f, old_str: text, new_str: edited }, 200, snippetAfter(edited, 0, edited));
    await ex({ command: 'insert', path: f, insert_line: 5, insert_text: 'x' }, 422,
      `Error: Invalid \`insert_line\` parameter: 5. It should be within the range of lines of the file: [0, 1]`);
    await ex({ command: 'insert', path: f, insert_line: 1, insert_text: `by ${tenant}\n` }, 200, `The file ${f} has been edited.`);
    tree.files.set(f, `${edited}\nby ${tenant}`);
    await ex({ command: 'rename', old_path: f, new_path: f }, 409, `Error: The destination ${f} already exists`);
    await ex({ command: 'view', path: f }, 200, fileView(f, tree.files.get(f)));
    if ((i + k) % 3 === 0) {
      const r = `${dir}/r${i}.txt`;
      await ex({ command: 'rename', old_path: f, new_path: r }, 200, `Successfully renamed ${f} to ${r}`);
      tree.rename(f, r);
    } else if ((i + k) % 3 === 1) {
      await ex({ command: 'delete', path: f }, 200, `Successfully deleted ${f}`);
      tree.delete(f);
      await ex({ command: 'delete', path: f }, 404, `Error: The path ${f} does not exist`);
    }
  }
}

test(`${TENANTS.length} tenants x ${WORKERS} connections writing the same paths at once, failures mixed in: each tenant has exactly its own tree`, async (t) => {
  const srv = await startServer({ args: ['--log-level', 'debug'] });
  const world = new World(srv, { headerless: 'default' });
  const clients = [];
  try {
    for (const tenant of TENANTS) await seed(world, tenant);
    await Promise.all(TENANTS.flatMap((tenant, k) => Array.from({ length: WORKERS }, (_, w) => {
      const client = world.newClient(tenant);
      clients.push(client);
      return concurrentWorker(world, tenant, k, w, client);
    })));
    await world.assertAll();
    // memoryd logs from a background thread: wait for the request lines of every answer.
    await srv.waitForLogs((logs) => logs.filter((l) => l.msg === 'request').length >= world.responses, 'every request line');
    const all = srv.logs.filter((l) => l.msg === 'write batch').map((l) => l.commands);
    t.diagnostic(`${world.responses} responses checked; ${all.length} write batches, largest ${Math.max(...all)} commands, ` +
      `${all.filter((n) => n > WORKERS).length} larger than one tenant's ${WORKERS} connections`);
    assert.ok(all.some((n) => n > WORKERS), `no batch held several tenants' commands: ${JSON.stringify(all)}`);
  } finally {
    for (const c of clients) c.close();
    world.close();
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});
