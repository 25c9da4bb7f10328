// Proves that openapi.yaml describes the memoryd of this tree:
// - Redocly CLI lints it with redocly.yaml (recommended-strict plus extra rules) with zero
//   errors, zero warnings and nothing ignored;
// - it agrees with the code's definitions (tests/lib/vocabulary.mjs): the operations of the route
//   table (include/http/md_routes.def), the command table (include/cmd/md_commands.def: the six
//   memory commands of POST /memory, their fields, types and required flags; the other rows,
//   restore and redact, as the bodies of POST /v1/restore and POST /v1/redact), the statuses of
//   the error classes (include/base/md_errors.def), the tenant header rules, the limits of
//   `memoryd --help` and the version of CMakeLists.txt;
// - every example it shows is what a live memoryd answers: each request example of
//   POST /memory is sent (as JSON and with Accept: text/plain) and must produce the response
//   example of the same name; each response example without a request example is provoked by
//   the request its description names (headers and earlier requests included); the few that
//   cannot be provoked on demand (storage failure, overload, shutdown) must be texts of the code
//   (string literals of src/, refusals of include/base/md_refusals.h). The same for the /v1 API, each example on a fresh tenant holding the seed and
//   the writes of info.description's table, times compared by their form only; ETags are
//   checked against the SHA-256 of the files.
//
// With MD_TEST_PG (the PostgreSQL variant, pg/openapi/openapi) every example runs the same way
// against memoryd on a fresh PostgreSQL database, those of history, the change feed and
// idempotent retries included.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { commands, cStringLiterals, errorClasses, refusals, routes as routeRows } from '../lib/vocabulary.mjs';

import { dbSql } from '../lib/db.mjs';
import { runMemoryd, startServer, tempDir } from '../lib/server.mjs';
import { tarArchive } from '../lib/tar.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const SRC = process.env.MD_SOURCE_DIR || path.resolve(here, '../..');
const REDOCLY = path.join(SRC, 'tests/node_modules/.bin/redocly');
const read = (rel) => fs.readFileSync(path.join(SRC, rel), 'utf8');

// ---- running Redocly ----

function redocly(args) {
  const r = spawnSync(REDOCLY, args, {
    cwd: SRC,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    env: {
      ...process.env,
      REDOCLY_TELEMETRY: 'off',
      REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
      NO_COLOR: '1',
    },
  });
  if (r.error) throw r.error;
  return r;
}

// The document as JSON (Redocly bundles the YAML; local $refs stay in place).
let doc;
let bundleDir;
function loadDocument() {
  bundleDir = tempDir('memoryd-openapi-');
  const out = path.join(bundleDir, 'openapi.json');
  const r = redocly(['bundle', 'openapi.yaml', '--ext', 'json', '-o', out]);
  assert.equal(r.status, 0, `redocly bundle failed:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(fs.readFileSync(out, 'utf8'));
}

// Follow a local $ref (repeatedly); other objects are returned as they are.
function deref(node) {
  while (node && typeof node === 'object' && typeof node.$ref === 'string') {
    assert.ok(node.$ref.startsWith('#/'), `only local $refs are expected, got ${node.$ref}`);
    let target = doc;
    for (const part of node.$ref.slice(2).split('/')) {
      target = target?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    }
    assert.ok(target !== undefined, `unresolved $ref ${node.$ref}`);
    node = target;
  }
  return node;
}

const schemaRef = (name) => `#/components/schemas/${name}`;
const schema = (name) => {
  const s = doc.components.schemas[name];
  assert.ok(s, `components/schemas/${name} is missing`);
  return s;
};

// ---- reading the definitions (tests/lib/vocabulary.mjs) ----

// Every text the code answers with: the string literals of src/**/*.c and the refusal texts of
// include/base/md_refusals.h.
function allSourceLiterals() {
  const dir = path.join(SRC, 'src');
  const set = new Set();
  for (const f of fs.readdirSync(dir, { recursive: true }).filter((n) => n.endsWith('.c'))) {
    for (const s of cStringLiterals(fs.readFileSync(path.join(dir, f), 'utf8'))) set.add(s);
  }
  for (const { text } of refusals().values()) set.add(text);
  // A refusal with a value in it (md_refusals.h: "Tenant %s is being imported"): the example
  // shows one value where the text has its printf conversion.
  const formats = [...set].filter((t) => /%(s|d|lld|zu)/.test(t)).map((t) => new RegExp(`^${t
    .replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/%(s|d|lld|zu)/g, (m) => (m === '%s' ? '[A-Za-z0-9._-]+' : '\\d+'))}$`));
  set.has = (v) => Set.prototype.has.call(set, v) || formats.some((re) => re.test(v));
  return set;
}

// The command table (include/cmd/md_commands.def): the field types, and [{name, tool, fields:
// [{name, type, required}]}], `tool` telling the memory tool's own commands (POST /memory) from
// the operations run as writes (/v1).
function parseCommandTable() {
  const { commands: list } = commands();
  const fieldTypes = ['PATH', 'STRING', 'NONEMPTY', 'INT', 'RANGE'];
  for (const c of list) for (const f of c.fields) assert.ok(fieldTypes.includes(f.type), `${c.name}.${f.name}: type ${f.type}`);
  const table = list.map((c) => ({ name: c.name, tool: c.tool, fields: c.fields }));
  assert.deepEqual(table.filter((r) => r.tool).map((r) => r.name), ['view', 'create', 'str_replace', 'insert', 'delete', 'rename'], 'the memory tool\'s six commands');
  return { fieldTypes, routes: table };
}

// md_err -> HTTP status (include/base/md_errors.def), and the md_err values each file of src/
// produces: the classes it names, and those of the refusals (md_refusals.h) it answers with.
function parseStatusMapping() {
  const map = new Map(errorClasses().map((e) => [e.name, e.status]));
  const ref = refusals();
  const usedBy = new Map();
  const use = (e, f) => {
    if (!usedBy.has(e)) usedBy.set(e, new Set());
    usedBy.get(e).add(f);
  };
  for (const f of fs.readdirSync(path.join(SRC, 'src'), { recursive: true })) {
    if (!f.endsWith('.c') || f === 'base/err.c') continue;
    const code = read(`src/${f}`);
    for (const m of code.matchAll(/\b(MD_E[A-Z]+)\b/g)) use(m[1], f);
    for (const m of code.matchAll(/\b(MD_(?:R|RPC)_[A-Z0-9_]+)\b/g)) if (ref.has(m[1])) use(ref.get(m[1]).err, f);
  }
  return { map, usedBy };
}

// ---- example state ----

// The files every example runs against (the table "The examples" in openapi.yaml).
const SEED = [
  ['/memories/notes.txt', 'Meeting notes:\n- Discussed project timeline\n- Next steps defined\n'],
  ['/memories/projects/roadmap.md', '# Roadmap\n- v1: ship the memory tool\n- v2: sync across devices\n'],
  ['/memories/projects/alpha/spec.md', '# Alpha spec\nGoal: remember user preferences.\n'],
];

const BIG_BODY_BYTES = 4 * 1024 * 1024 + 1;
function bodyOfSize(n) {
  const head = '{"command":"create","path":"/memories/big.txt","file_text":"';
  const tail = '"}';
  return head + 'x'.repeat(n - head.length - tail.length) + tail;
}

// How to provoke each response example that has no request example. `body` is sent as JSON,
// `raw` as it is; `headers` replace the test's own tenant header, `extraHeaders` are sent
// besides it; `server: 'requireTenant'` uses a memoryd run with --require-tenant,
// `server: 'proxied'` one run with --trusted-proxies 127.0.0.2 (the test's client is
// 127.0.0.1); `setup` commands run after the seed, and `prior` requests ({body, headers})
// after them. The example's description must contain each of `shows` (by default the body,
// each extra header and each prior body, in backticks), so it names the request that was
// really sent. `expectHeaders`: response headers (lower case) and their values, null for
// absent.
const VIEW_ROOT = { command: 'view', path: '/memories' };
const TODO_ANA = { command: 'create', path: '/memories/todo.md', file_text: '- Call Ana\n' };
const RETRY_KEY = { 'Idempotency-Key': '0b6f2c1e-retry-demo' };
const PROVOKE = {
  pathOutside: { body: { command: 'view', path: '/etc/passwd' } },
  pathDotSegment: { body: { command: 'view', path: '/memories/a/../notes.txt' } },
  invalidJson: { raw: '{"command": "view", "path": "/memories"' },
  missingField: { body: { command: 'create', path: '/memories/a.md' } },
  wrongType: { body: { command: 'insert', path: '/memories/notes.txt', insert_line: '2', insert_text: 'x' } },
  badViewRange: { body: { command: 'view', path: '/memories/notes.txt', view_range: [1.5, 2] } },
  emptyOldStr: { body: { command: 'str_replace', path: '/memories/notes.txt', old_str: '', new_str: 'x' } },
  unknownCommand: { body: { command: 'copy', path: '/memories/notes.txt' } },
  otherTool: { body: { type: 'tool_use', id: 'toolu_01', name: 'bash', input: { command: 'ls' } } },
  badTenant: {
    body: { command: 'view', path: '/memories' },
    headers: { 'X-Tenant-ID': 'team/b' },
    shows: ['`X-Tenant-ID: team/b`', '`{"command":"view","path":"/memories"}`'],
  },
  missingTenant: {
    body: { command: 'view', path: '/memories' },
    headers: {},
    server: 'requireTenant',
    shows: ['`{"command":"view","path":"/memories"}`', 'without `X-Tenant-ID`', '`memoryd --require-tenant`'],
  },
  untrustedClient: {
    body: { command: 'view', path: '/memories' },
    server: 'proxied',
    shows: ['`{"command":"view","path":"/memories"}`', 'from 127.0.0.1', '`memoryd --trusted-proxies 127.0.0.2`'],
  },
  // Streamed: with a Content-Length over the limit memoryd answers before reading the body and
  // closes the connection, which a client still writing the body may see as a reset (EPIPE).
  bodyTooLarge: { raw: bodyOfSize(BIG_BODY_BYTES), chunked: true, shows: ['4,194,305 bytes'] },
  fileTooLarge: {
    body: { command: 'create', path: '/memories/big.txt', file_text: 'x'.repeat(1024 * 1024 + 1) },
    shows: ['`create` of `/memories/big.txt`', '1,048,577 bytes'],
  },
  tooManyLines: {
    setup: [{ command: 'create', path: '/memories/lines.txt', file_text: '\n'.repeat(999999) }],
    body: { command: 'view', path: '/memories/lines.txt' },
    shows: ['`view` of `/memories/lines.txt`', '999,999 newlines'],
  },
  badIfMatch: {
    body: { command: 'str_replace', path: '/memories/notes.txt', old_str: 'defined', new_str: 'agreed' },
    extraHeaders: { 'If-Match': 'cf7994b9' },
  },
  badIdempotencyKey: {
    body: { command: 'delete', path: '/memories/notes.txt' },
    extraHeaders: { 'Idempotency-Key': 'retry 1' },
  },
  createReplayed: {
    prior: [{ body: TODO_ANA, headers: RETRY_KEY }],
    body: TODO_ANA,
    extraHeaders: RETRY_KEY,
    shows: ['`Idempotency-Key: 0b6f2c1e-retry-demo`', `\`${JSON.stringify(TODO_ANA)}\``],
    expectHeaders: { 'idempotent-replayed': 'true', etag: null },
  },
  ifMatchStale: {
    body: { command: 'insert', path: '/memories/notes.txt', insert_line: 0, insert_text: '# Monday\n' },
    extraHeaders: { 'If-Match': '"sha256-93d0320a8fe5d40afdcc963cd6a4adb22931263b21cf58d866981c282c64b4e6"' },
    expectHeaders: { etag: null },
  },
  ifNoneMatchExists: {
    body: { command: 'create', path: '/memories/notes.txt', file_text: 'new text' },
    extraHeaders: { 'If-None-Match': '*' },
  },
  idempotencyKeyReused: {
    prior: [{ body: TODO_ANA, headers: RETRY_KEY }],
    body: { ...TODO_ANA, file_text: '- Call Bo\n' },
    extraHeaders: RETRY_KEY,
  },
  // `limits`: the tenant's own limits, set with PUT /v1/tenants/{tenant}/limits first.
  memoryFullBytes: { limits: { max_bytes: 180, max_files: null }, body: TODO_ANA },
  memoryFullFiles: { limits: { max_bytes: null, max_files: 3 }, body: TODO_ANA },
  // memoryd --auth keys (`keyed`, its keys made by `memoryd keys create` in before(); `{key}`
  // in a header stands for the key of that scope), and `limited`, the same after 10 failures
  // of the test's address. The four 401 examples, each sent twice (JSON and text/plain), are 8
  // failures on `keyed`: under its limit of 10.
  authMissing: { server: 'keyed', body: VIEW_ROOT, headers: {}, shows: ['`{"command":"view","path":"/memories"}`', 'without `Authorization`', '`memoryd --auth keys`'], expectHeaders: { 'www-authenticate': 'Bearer' } },
  authMalformed: { server: 'keyed', body: VIEW_ROOT, headers: { Authorization: 'Basic YWNtZTpzZWNyZXQ=' }, shows: ['`{"command":"view","path":"/memories"}`', '`Authorization: Basic YWNtZTpzZWNyZXQ=`', '`memoryd --auth keys`'], expectHeaders: { 'www-authenticate': 'Bearer' } },
  authUnknown: { server: 'keyed', body: VIEW_ROOT, headers: { Authorization: `Bearer mdk_${'A'.repeat(43)}` }, shows: ['`{"command":"view","path":"/memories"}`', `\`Authorization: Bearer mdk_${'A'.repeat(43)}\``, '`memoryd --auth keys`'], expectHeaders: { 'www-authenticate': 'Bearer' } },
  authRevoked: { server: 'keyed', body: VIEW_ROOT, headers: { Authorization: 'Bearer {revoked}' }, shows: ['`{"command":"view","path":"/memories"}`', 'a key revoked by `memoryd keys revoke`', '`memoryd --auth keys`'], expectHeaders: { 'www-authenticate': 'Bearer' } },
  keyOtherTenant: { server: 'keyed', body: VIEW_ROOT, headers: { Authorization: 'Bearer {write}', 'X-Tenant-ID': 'other' }, shows: ['`{"command":"view","path":"/memories"}`', 'a write key of tenant `acme`', '`X-Tenant-ID: other`', '`memoryd --auth keys`'] },
  keyReadOnly: { server: 'keyed', body: { command: 'delete', path: '/memories/notes.txt' }, headers: { Authorization: 'Bearer {read}' }, shows: ['`{"command":"delete","path":"/memories/notes.txt"}`', 'a read key', '`memoryd --auth keys`'] },
  authRateLimited: { server: 'limited', body: VIEW_ROOT, headers: { Authorization: 'Bearer {write}' }, shows: ['`{"command":"view","path":"/memories"}`', 'after 10 requests with unknown keys', '`memoryd --auth keys`'], expectHeaders: { 'retry-after': /^([1-9]|[1-5][0-9]|60)$/ } },
};

// What a PROVOKE entry's description must show.
function shownBy(how) {
  if (how.shows) return how.shows;
  return [
    `\`${how.raw ?? JSON.stringify(how.body)}\``,
    ...Object.entries(how.extraHeaders ?? {}).map(([k, v]) => `\`${k}: ${v}\``),
    ...(how.prior ?? []).map((p) => `\`${JSON.stringify(p.body)}\``),
    ...(how.limits ? [`\`${JSON.stringify(how.limits)}\``] : []),
  ];
}

// Response examples that cannot be provoked on demand: their content must be a text of the code
// (allSourceLiterals).
const SOURCE_ONLY = new Set(['storageFailure', 'shuttingDown', 'overloaded', 'tenantImporting', 'storeBusy', 'storeUnavailable', 'bodiesInMemory', 'flushFailed']);

// ---- the live servers ----

let srv; // default options
let strict; // --require-tenant
let proxied; // --trusted-proxies 127.0.0.2
let keyed; // --auth keys, with keys of tenant acme (keyFor)
let limited; // --auth keys, after 10 failed attempts of 127.0.0.1 (primeLimited)
let keyedV1; // --auth keys, for the 401 example of each /v1 operation
let keyedV1Uses = 0;
const keyFor = {}; // scope (and 'revoked') -> key, of tenant acme on `keyed` and `limited`
let tenantSerial = 0;

async function freshTenant(label) {
  const tenant = `ex-${label}-${tenantSerial++}`;
  for (const [p, text] of SEED) {
    const r = await srv.post({ command: 'create', path: p, file_text: text }, { tenant });
    assert.equal(r.status, 200, `seeding ${p}: ${r.text}`);
  }
  return tenant;
}

// Send one request for an example; `accept` selects text/plain. A `chunked` body is streamed
// without a Content-Length.
async function send(server, { body, raw, chunked, headers, extraHeaders, tenant, accept }) {
  const h = { 'content-type': 'application/json' };
  // `Bearer {scope}`: the key of that scope made in before().
  if (headers) for (const [k, v] of Object.entries(headers)) h[k] = v.replace(/\{(\w+)\}/, (m, scope) => keyFor[scope] ?? m);
  else h['X-Tenant-ID'] = tenant;
  if (extraHeaders) Object.assign(h, extraHeaders);
  if (accept) h.accept = accept;
  let payload = raw ?? JSON.stringify(body);
  if (chunked) {
    const bytes = new TextEncoder().encode(payload);
    payload = new ReadableStream({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 65536) controller.enqueue(bytes.subarray(i, i + 65536));
        controller.close();
      },
    });
  }
  const res = await fetch(`${server.url}/memory`, { method: 'POST', headers: h, body: payload, duplex: 'half' });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* text/plain */
  }
  return { status: res.status, headers: res.headers, text, json };
}

// ---- the document's examples ----

const memoryOp = () => doc.paths['/memory'].post;

function requestExamples() {
  const rb = deref(memoryOp().requestBody);
  return Object.entries(rb.content['application/json'].examples).map(([name, ex]) => [name, deref(ex)]);
}

// name -> [{status, media, example}] over every response of POST /memory.
function responseExamples() {
  const index = new Map();
  for (const [status, resp] of Object.entries(memoryOp().responses)) {
    if (status === '431') continue; // libmicrohttpd's own page, checked in section 4
    for (const [media, mt] of Object.entries(deref(resp).content ?? {})) {
      for (const [name, ex] of Object.entries(mt.examples ?? {})) {
        if (!index.has(name)) index.set(name, []);
        index.get(name).push({ status: Number(status), media, example: deref(ex) });
      }
    }
  }
  return index;
}

function expectedFor(name) {
  const all = responseExamples().get(name) ?? [];
  const json = all.filter((e) => e.media === 'application/json');
  assert.equal(json.length, 1, `response example "${name}" must exist exactly once as application/json`);
  const text = all.filter((e) => e.media === 'text/plain');
  for (const t of text) {
    assert.equal(t.status, json[0].status, `text/plain example "${name}" is under another status`);
    assert.equal(t.example.value, json[0].example.value.content, `text/plain example "${name}" differs from its JSON content`);
  }
  return { status: json[0].status, value: json[0].example.value };
}

function assertAnswer(r, expected, what) {
  assert.equal(r.status, expected.status, `${what}: status (body ${r.text.slice(0, 300)})`);
  assert.equal(r.headers.get('content-type'), 'application/json', `${what}: content-type`);
  assert.deepEqual(r.json, expected.value, `${what}: body`);
  assert.equal(r.headers.get('x-memory-is-error'), String(expected.value.is_error), `${what}: X-Memory-Is-Error`);
}

function assertTextAnswer(r, expected, what) {
  assert.equal(r.status, expected.status, `${what} (text/plain): status`);
  assert.equal(r.headers.get('content-type'), 'text/plain; charset=utf-8', `${what} (text/plain): content-type`);
  assert.equal(r.text, expected.value.content, `${what} (text/plain): body`);
  assert.equal(r.headers.get('x-memory-is-error'), String(expected.value.is_error), `${what} (text/plain): X-Memory-Is-Error`);
}

before(async () => {
  doc = loadDocument();
  srv = await startServer();
  strict = await startServer({ args: ['--require-tenant'] });
  proxied = await startServer({ args: ['--trusted-proxies', '127.0.0.2'] });
  keyed = await startServer({ args: ['--auth', 'keys'] });
  limited = await startServer({ db: keyed.dbPath, args: ['--auth', 'keys'] });
  keyedV1 = await startServer({ db: keyed.dbPath, args: ['--auth', 'keys'] });
  for (const scope of ['read', 'write', 'admin', 'revoked']) {
    const r = await runMemoryd(['keys', 'create', '--db', keyed.dbPath, '--tenant', 'acme', '--scope', scope === 'revoked' ? 'write' : scope]);
    assert.equal(r.code, 0, r.stderr);
    keyFor[scope] = r.stdout.split('\n')[0];
    if (scope === 'revoked') assert.equal((await runMemoryd(['keys', 'revoke', '--db', keyed.dbPath, r.stdout.split('\n')[1].slice(4)])).code, 0);
  }
});

// Make `limited` refuse 127.0.0.1: failures until it answers 429 (10 at first; again after its
// 60 seconds ended, on a slow run).
async function primeLimited() {
  for (let i = 0; i < 11; i++) {
    const r = await send(limited, { body: VIEW_ROOT, headers: { Authorization: `Bearer mdk_${String(i % 10).repeat(43)}` } });
    if (r.status === 429) return;
    assert.equal(r.status, 401, r.text);
  }
  assert.fail('memoryd --auth keys never answered 429 after 11 failures');
}

after(async () => {
  await srv?.stop();
  await strict?.stop();
  await proxied?.stop();
  await keyed?.stop();
  await limited?.stop();
  await keyedV1?.stop();
  for (const dir of [bundleDir, srv?.dir, strict?.dir, proxied?.dir, keyed?.dir]) {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }
});

// ---- 1. the linter ----

test('redocly lint: zero errors, zero warnings, nothing ignored (recommended-strict + redocly.yaml)', () => {
  const r = redocly(['lint', 'openapi.yaml', '--config', 'redocly.yaml', '--format', 'json']);
  let report;
  try {
    report = JSON.parse(r.stdout);
  } catch {
    assert.fail(`redocly lint printed no JSON report (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
  const problems = report.problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer}`);
  assert.deepEqual(problems, [], 'lint problems');
  assert.deepEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 });
  assert.equal(r.status, 0, `redocly lint exit code\n${r.stderr}`);
  // The configuration is the strict one (a missing redocly.yaml would fall back silently).
  assert.match(read('redocly.yaml'), /^\s*-\s*recommended-strict\s*$/m);
});

// ---- 2. the document agrees with the code ----

describe('openapi.yaml agrees with the code', () => {
  test('info, servers, operations', () => {
    assert.equal(doc.openapi, '3.1.0');
    const version = read('CMakeLists.txt').match(/project\(memoryd VERSION ([0-9.]+)/)[1];
    assert.equal(doc.info.version, version, 'info.version must match CMakeLists.txt');
    assert.equal(doc.info.license.identifier, 'MIT');
    assert.deepEqual(doc.servers.map((s) => s.url), ['http://127.0.0.1:8080']);
    const ops = Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p} ${item[m].operationId}`));
    assert.deepEqual(ops.sort(), [
      'DELETE /mcp endMcpSession',
      'DELETE /v1/memories clearMemories',
      'DELETE /v1/tenants/{tenant} eraseTenant',
      'GET /healthz getHealth',
      'GET /metrics getMetrics',
      'GET /readyz getReadiness',
      'GET /v1/changes getChanges',
      'GET /v1/expiring listExpiring',
      'GET /v1/history getHistory',
      'GET /v1/search search',
      'GET /v1/tenants listTenants',
      'GET /v1/tenants/{tenant} getTenant',
      'GET /v1/tenants/{tenant}/export exportTenant',
      'GET /v1/tenants/{tenant}/secrets findSecrets',
      'GET /v1/versions/{version} getVersion',
      'POST /mcp postMcpMessage',
      'POST /memory runMemoryCommand',
      'POST /v1/redact redactVersion',
      'POST /v1/restore restoreFiles',
      'POST /v1/tenants/{tenant}/import importTenant',
      'PUT /v1/tenants/{tenant}/limits setTenantLimits',
    ]);
    // Every row of the route table (include/http/md_routes.def) is an operation, and nothing
    // else: but HEAD, which goes with GET on the probes and /metrics, and the catch-all of a
    // family ({*}), whose answer is a 404 (checked in section 4).
    const fromCode = routeRows().routes.filter((r) => r.method !== 'HEAD' && !r.path.includes('{*}')).map((r) => `${r.method} ${r.path}`);
    assert.deepEqual(ops.map((o) => o.split(' ').slice(0, 2).join(' ')).sort(), fromCode.sort());
  });

  test('every command and field of the command table (include/cmd/md_commands.def), and nothing else', () => {
    const { fieldTypes, routes } = parseCommandTable();

    // How each field type of the route table must be described.
    const TYPE_CHECKS = {
      PATH: (s) => s.$ref === schemaRef('MemoryPath'),
      STRING: (s) => s.type === 'string' && s.minLength === undefined,
      NONEMPTY: (s) => s.type === 'string' && s.minLength === 1,
      INT: (s) => s.type === 'integer',
      RANGE: (s) => s.$ref === schemaRef('ViewRange'),
    };
    assert.deepEqual(fieldTypes.slice().sort(), Object.keys(TYPE_CHECKS).sort(), 'a field type of md_commands.def has no check here');
    assert.equal(schema('MemoryPath').type, 'string');
    const vr = schema('ViewRange');
    assert.deepEqual([vr.type, vr.items.type, vr.minItems, vr.maxItems], ['array', 'integer', 2, 2]);

    // The command schemas, by their `command` const.
    const mc = schema('MemoryCommand');
    const documented = new Map();
    for (const branch of mc.oneOf) {
      const s = deref(branch);
      const name = s.properties?.command?.const;
      assert.ok(name, `${branch.$ref} has no const command`);
      assert.ok(!documented.has(name), `command ${name} is documented twice`);
      documented.set(name, { ref: branch.$ref, s });
    }
    const tools = routes.filter((r) => r.tool);
    assert.deepEqual([...documented.keys()].sort(), tools.map((r) => r.name).sort(), 'commands: openapi.yaml vs route table');
    assert.equal(mc.discriminator.propertyName, 'command');
    assert.deepEqual(mc.discriminator.mapping, Object.fromEntries([...documented].map(([n, d]) => [n, d.ref])));

    // The other rows are the bodies of POST /v1/{name}: the same fields, types and required
    // flags, and no `command`.
    // (`limits` is PUT /v1/tenants/{tenant}/limits, whose body src/http/tenants.c reads,
    // `erase` DELETE /v1/tenants/{tenant}, without a body, `import` POST
    // /v1/tenants/{tenant}/import, whose body is a tar, and `clear` DELETE /v1/memories, without
    // a body: the rows have no fields.)
    for (const name of ['limits', 'erase', 'import', 'clear']) assert.deepEqual(routes.find((r) => r.name === name)?.fields, [], `the ${name} row has no fields`);
    const others = routes.filter((r) => !r.tool && !['limits', 'erase', 'import', 'clear'].includes(r.name));
    assert.deepEqual(others.map((r) => r.name).sort(), ['redact', 'restore']);
    for (const route of others) {
      const where = `POST /v1/${route.name}`;
      const op = doc.paths[`/v1/${route.name}`]?.post;
      assert.ok(op, `${where} is not documented`);
      const s = deref(deref(op.requestBody).content['application/json'].schema);
      assert.equal(s.type, 'object', where);
      assert.notEqual(s.additionalProperties, false, `${where}: unknown extra keys are ignored, so they must be allowed`);
      assert.deepEqual(Object.keys(s.properties).sort(), route.fields.map((f) => f.name).sort(), `${where}: fields`);
      assert.deepEqual(s.required.slice().sort(), route.fields.filter((f) => f.required).map((f) => f.name).sort(), `${where}: required`);
      for (const f of route.fields) {
        let prop = s.properties[f.name];
        if (!f.required) {
          assert.ok(Array.isArray(prop.oneOf) && prop.oneOf.length === 2, `${where}.${f.name}: optional fields are oneOf [type, null]`);
          assert.deepEqual(prop.oneOf.filter((b) => b.type === 'null'), [{ type: 'null' }], `${where}.${f.name}: null branch`);
          prop = prop.oneOf.find((b) => b.type !== 'null');
        }
        assert.ok(TYPE_CHECKS[f.type](prop), `${where}.${f.name}: ${f.type} is described as ${JSON.stringify(prop)}`);
      }
    }

    for (const route of tools) {
      const { s } = documented.get(route.name);
      const where = `command ${route.name}`;
      assert.equal(s.type, 'object', where);
      assert.equal(s.properties.command.type, 'string', where);
      assert.notEqual(s.additionalProperties, false, `${where}: unknown extra keys are ignored, so they must be allowed`);
      assert.deepEqual(Object.keys(s.properties).filter((k) => k !== 'command').sort(), route.fields.map((f) => f.name).sort(), `${where}: fields`);
      assert.deepEqual(s.required.slice().sort(), ['command', ...route.fields.filter((f) => f.required).map((f) => f.name)].sort(), `${where}: required`);
      for (const f of route.fields) {
        let prop = s.properties[f.name];
        if (!f.required) {
          // null means absent: an optional field is "its type, or null".
          assert.ok(Array.isArray(prop.oneOf) && prop.oneOf.length === 2, `${where}.${f.name}: optional fields are oneOf [type, null]`);
          assert.deepEqual(prop.oneOf.filter((b) => b.type === 'null'), [{ type: 'null' }], `${where}.${f.name}: null branch`);
          prop = prop.oneOf.find((b) => b.type !== 'null');
        }
        assert.ok(TYPE_CHECKS[f.type](prop), `${where}.${f.name}: ${f.type} is described as ${JSON.stringify(prop)}`);
      }
    }

    // Both request forms.
    assert.deepEqual(schema('MemoryRequest').oneOf.map((b) => b.$ref ?? b.allOf?.[0]?.$ref), [schemaRef('MemoryCommand'), schemaRef('ToolUseBlock')]);
    const tu = schema('ToolUseBlock');
    assert.equal(tu.properties.input.$ref, schemaRef('MemoryCommand'));
    assert.equal(tu.properties.type.const, 'tool_use');
    assert.equal(tu.properties.name.const, 'memory');
    assert.deepEqual(tu.required.slice().sort(), ['id', 'input', 'type']);
  });

  test('the documented statuses of POST /memory are the ones md_errors.def can produce', () => {
    const { map, usedBy } = parseStatusMapping();
    // http/changes.c is the change feed: an error only it uses (MD_EGONE, 410) is not one of /memory.
    assert.deepEqual([...usedBy.get('MD_EGONE')], ['http/changes.c'], 'MD_EGONE (410) is the change feed\'s alone');
    const used = new Set([...usedBy].filter(([, files]) => [...files].some((f) => f !== 'http/changes.c')).map(([e]) => e));
    const produced = new Set([...map].filter(([e]) => used.has(e)).map(([, s]) => s));
    produced.add(200);
    const documented = new Set(Object.keys(memoryOp().responses).map(Number));
    documented.delete(431); // sent by libmicrohttpd itself, checked live below
    // 405 (MD_EMETHOD) answers methods other than POST on /memory: documented on the
    // operation with its Allow header (section 4 checks it live).
    assert.ok(produced.has(405), 'src/http/routes.c answers other methods on /memory with MD_EMETHOD (405)');
    assert.deepEqual([...documented].sort(), [...produced].sort());
    assert.ok(deref(memoryOp().responses['405']).headers.Allow, '405 carries Allow');
    for (const [status, resp] of Object.entries(memoryOp().responses)) {
      if (status === '431') continue;
      const r = deref(resp);
      assert.equal(r.content['application/json'].schema.$ref, schemaRef('ToolResult'), `${status}: tool_result body`);
      assert.ok(r.content['text/plain'], `${status}: text/plain form`);
      assert.equal(r.headers['X-Memory-Is-Error'].$ref, '#/components/headers/XMemoryIsError', `${status}: X-Memory-Is-Error`);
    }
    assert.ok(deref(memoryOp().responses['503']).headers['Retry-After'], '503 carries Retry-After');
    for (const name of ['ETag', 'Idempotent-Replayed']) assert.ok(deref(memoryOp().responses['200']).headers[name], `200 documents ${name}`);
    const params = memoryOp().parameters.map((x) => deref(x)).filter((x) => x.in === 'header').map((x) => x.name);
    assert.deepEqual(params, ['X-Tenant-ID', 'If-Match', 'If-None-Match', 'Idempotency-Key', 'X-Memory-Actor']);
    assert.match(read('src/http/reply.c'), /if \(status == 503\)\s*MHD_add_response_header\(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1"\)/);
  });

  test('the /v1 operations: statuses of md_errors.def, JSON errors, the tenant and write headers', () => {
    const { map } = parseStatusMapping();
    // 431 is libmicrohttpd's own (HeadersTooLarge, checked live below).
    const possible = new Set([200, 431, ...map.values()]);
    for (const [p, item] of Object.entries(doc.paths).filter(([q]) => q.startsWith('/v1/'))) {
      for (const [method, op] of Object.entries(item)) {
        const where = `${method.toUpperCase()} ${p}`;
        const statuses = Object.keys(op.responses).map(Number);
        for (const st of statuses) assert.ok(possible.has(st), `${where}: ${st} is not a status of md_errors.def`);
        for (const st of [200, 400, 403, 500, 503]) assert.ok(statuses.includes(st), `${where}: ${st} is not documented`);
        assert.equal(statuses.includes(410), p === '/v1/changes', `${where}: 410 is the change feed's`);
        assert.ok(statuses.includes(431), `${where}: 431 is not documented`);
        assert.ok(deref(op.responses['405']).headers.Allow, `${where}: 405 with Allow`);
        for (const [st, resp] of Object.entries(op.responses)) {
          if (st === '200' || st === '431') continue;
          assert.equal(deref(resp).content['application/json'].schema.$ref, schemaRef('V1Error'), `${where} ${st}: {"error": ...}`);
        }
        assert.ok(deref(op.responses['503']).headers['Retry-After'], `${where}: 503 carries Retry-After`);
        const headers = op.parameters.map((x) => deref(x)).filter((x) => x.in === 'header').map((x) => x.name);
        const expectedHeaders = {
          '/v1/restore': ['X-Tenant-ID', 'If-Match', 'If-None-Match', 'Idempotency-Key', 'X-Memory-Actor'],
          '/v1/redact': ['X-Tenant-ID', 'Idempotency-Key', 'X-Memory-Actor'],
          '/v1/memories': ['X-Tenant-ID', 'Idempotency-Key', 'X-Memory-Actor'],
          // the tenant is in the path
          '/v1/tenants': [],
          '/v1/tenants/{tenant}': [],
          '/v1/tenants/{tenant}/limits': [],
          '/v1/tenants/{tenant}/export': [],
          '/v1/tenants/{tenant}/secrets': [],
          '/v1/tenants/{tenant}/import': ['X-Memory-Actor'],
        }[p] ?? ['X-Tenant-ID'];
        assert.deepEqual(headers, expectedHeaders, where);
        // (An import takes no Idempotency-Key: it is all or nothing.)
        if ((method === 'post' && p !== '/v1/tenants/{tenant}/import') || p === '/v1/memories') {
          assert.ok(statuses.includes(422), `${where}: 422 (a reused Idempotency-Key)`);
          assert.ok(deref(op.responses['200']).headers['Idempotent-Replayed'], `${where}: 200 documents Idempotent-Replayed`);
        }
      }
    }
  });

  test('the tenant header', () => {
    const p = deref(memoryOp().parameters.find((x) => deref(x).in === 'header'));
    const max = Number(read('include/base/md_tenant.h').match(/#define MD_TENANT_MAX (\d+)/)[1]);
    const header = read('src/app/config.c').match(/\.http\.tenant_header = "([^"]+)"/)[1];
    assert.equal(p.name, header);
    assert.equal(p.required, false);
    assert.equal(p.schema.pattern, `^[A-Za-z0-9._-]{1,${max}}$`);
    assert.match(p.description, /--tenant-header/);
    assert.match(p.description, /--require-tenant/);
  });

  test('the limits table matches the defaults of memoryd --help', async () => {
    const help = await runMemoryd(['--help']);
    assert.equal(help.code, 0);
    const toBytes = (s) => {
      const m = s.match(/^([\d,]+)\s*(MiB|KiB|M|K|bytes)?$/);
      assert.ok(m, `cannot read size ${s}`);
      const mul = { MiB: 1 << 20, M: 1 << 20, KiB: 1 << 10, K: 1 << 10, bytes: 1 }[m[2] ?? 'bytes'];
      return Number(m[1].replace(/,/g, '')) * mul;
    };
    const rows = [...memoryOp().description.matchAll(/^\| [^|]+ \| ([^|]+?) \| `--([a-z-]+)` \|/gm)];
    assert.deepEqual(rows.map((r) => r[2]).sort(), ['max-body', 'max-file', 'max-path', 'max-segment', 'max-view']);
    for (const [, documented, flag] of rows) {
      const m = help.stdout.match(new RegExp(`--${flag} BYTES\\s+[^\\[]*\\[([^\\]]+)\\]`));
      assert.ok(m, `--${flag} not in --help`);
      assert.equal(toBytes(documented.trim()), toBytes(m[1]), `--${flag}: documented ${documented}, --help says ${m[1]}`);
    }
  });
});

// ---- 3. the examples are what memoryd answers ----

describe('every example of POST /memory is what a live memoryd answers', () => {
  test('the seed is the one the document describes', () => {
    const d = memoryOp().description;
    for (const [p, text] of SEED) {
      assert.ok(d.includes(`| \`${p}\` | \`${text.replace(/\n/g, '\\n')}\` |`), `seed file ${p} is not in the table`);
    }
  });

  test('every response example is covered exactly once', () => {
    const requests = new Set(requestExamples().map(([n]) => n));
    for (const [name, entries] of responseExamples()) {
      const kinds = [requests.has(name), name in PROVOKE, SOURCE_ONLY.has(name)].filter(Boolean).length;
      assert.equal(kinds, 1, `response example "${name}" must have exactly one of: a request example, a PROVOKE entry, a SOURCE_ONLY entry`);
      assert.ok(entries.some((e) => e.media === 'application/json'), `"${name}" has no application/json example`);
    }
    for (const name of [...Object.keys(PROVOKE), ...SOURCE_ONLY]) {
      assert.ok(responseExamples().has(name), `the test names a response example "${name}" that openapi.yaml lacks`);
    }
  });

  test('request examples: status, body and headers as documented (JSON and text/plain)', async () => {
    const examples = requestExamples();
    assert.ok(examples.length >= 20, `expected the request examples, found ${examples.length}`);
    for (const [name, ex] of examples) {
      const expected = expectedFor(name);
      if (ex.value.type === 'tool_use') assert.equal(expected.value.tool_use_id, ex.value.id, `${name}: tool_use_id`);
      else assert.equal(expected.value.tool_use_id, undefined, `${name}: no tool_use_id without a tool_use block`);
      const r = await send(srv, { body: ex.value, tenant: await freshTenant(name) });
      assertAnswer(r, expected, `request example ${name}`);
      const t = await send(srv, { body: ex.value, tenant: await freshTenant(name), accept: 'text/plain' });
      assertTextAnswer(t, expected, `request example ${name}`);
    }
  });

  test('per command: each required field is required, unknown extra keys are ignored', async () => {
    const success = new Map(); // command -> its first successful request example
    for (const [name, ex] of requestExamples()) {
      const cmd = ex.value.command;
      if (cmd && expectedFor(name).status === 200 && !success.has(cmd)) success.set(cmd, [name, ex.value]);
    }
    for (const branch of schema('MemoryCommand').oneOf) {
      const s = deref(branch);
      const cmd = s.properties.command.const;
      assert.ok(success.has(cmd), `openapi.yaml has no successful request example for ${cmd}`);
      const [name, value] = success.get(cmd);
      for (const field of s.required.filter((f) => f !== 'command')) {
        const body = { ...value };
        delete body[field];
        const content = `Error: Missing required parameter \`${field}\` for command \`${cmd}\``;
        const r = await send(srv, { body, tenant: await freshTenant(name) });
        assertAnswer(r, { status: 400, value: { type: 'tool_result', content, is_error: true } }, `${name} without ${field}`);
      }
      const r = await send(srv, { body: { ...value, x_unknown_key: [1, {}] }, tenant: await freshTenant(name) });
      assertAnswer(r, expectedFor(name), `${name} with an unknown extra key`);
    }
  });

  test('response examples without a request example: provoked as their description says', async () => {
    for (const [name, how] of Object.entries(PROVOKE)) {
      const expected = expectedFor(name);
      const { description = '' } = responseExamples().get(name).find((e) => e.media === 'application/json').example;
      for (const shown of shownBy(how)) {
        assert.ok(description.includes(shown), `${name}: the description must show ${shown}`);
      }
      const server = { requireTenant: strict, proxied, keyed, limited }[how.server] ?? srv;
      if (server === limited) await primeLimited();
      const tenant = server === srv ? await freshTenant(name) : undefined;
      for (const cmd of how.setup ?? []) {
        const s = await send(srv, { body: cmd, tenant });
        assert.equal(s.status, 200, `${name}: setup ${cmd.command} ${cmd.path}: ${s.text}`);
      }
      if (how.limits) {
        const s = await srv.request('PUT', `/v1/tenants/${tenant}/limits`, { body: JSON.stringify(how.limits) });
        assert.equal(s.status, 200, `${name}: limits: ${s.text}`);
      }
      for (const p of how.prior ?? []) {
        const s = await send(srv, { body: p.body, extraHeaders: p.headers, tenant });
        assert.equal(s.status, 200, `${name}: prior request ${JSON.stringify(p.body)}: ${s.text}`);
      }
      let r;
      try {
        r = await send(server, { ...how, tenant });
      } catch (e) {
        assert.fail(`response example ${name}: ${e.message} (${e.cause?.code ?? e.cause})`);
      }
      assertAnswer(r, expected, `response example ${name}`);
      const text = await send(server, { ...how, tenant, accept: 'text/plain' });
      assertTextAnswer(text, expected, `response example ${name}`);
      for (const [h, v] of Object.entries(how.expectHeaders ?? {})) {
        for (const [got, form] of [[r, ''], [text, ' (text/plain)']]) {
          if (v instanceof RegExp) assert.match(got.headers.get(h) ?? '', v, `response example ${name}${form}: header ${h}`);
          else assert.equal(got.headers.get(h), v, `response example ${name}${form}: header ${h}`);
        }
      }
    }
  });

  test('ETag: the SHA-256 of the file after each view of a file, create, str_replace and insert; in the JSON of a view of a command object only', async () => {
    const tag = (text) => `"sha256-${crypto.createHash('sha256').update(text, 'utf8').digest('hex')}"`;
    const seeded = new Map(SEED);
    let checked = 0;
    for (const [name, ex] of requestExamples()) {
      const expected = expectedFor(name);
      const cmd = ex.value.type === 'tool_use' ? ex.value.input : ex.value;
      const tenant = await freshTenant(`etag-${name}`);
      const r = await send(srv, { body: ex.value, tenant });
      const file = expected.status === 200 && (['create', 'str_replace', 'insert'].includes(cmd.command) || (cmd.command === 'view' && r.json.content.startsWith("Here's the content of ")));
      if (!file) {
        assert.equal(r.headers.get('etag'), null, `${name}: no ETag`);
        assert.equal(r.json.etag, undefined, `${name}: no etag in the JSON`);
        continue;
      }
      checked++;
      const etag = r.headers.get('etag');
      assert.match(etag ?? '', /^"sha256-[0-9a-f]{64}"$/, `${name}: ETag`);
      // The file as a view of a command object shows it: the same tag, in the header and the JSON.
      const v = await send(srv, { body: { command: 'view', path: cmd.path }, tenant });
      assert.equal(v.headers.get('etag'), etag, `${name}: the ETag of a view after it`);
      assert.equal(v.json.etag, etag, `${name}: the JSON etag of a view after it`);
      if (cmd.command === 'view') {
        if (seeded.has(cmd.path)) assert.equal(etag, tag(seeded.get(cmd.path)), `${name}: the SHA-256 of ${cmd.path}`);
        assert.equal(r.json.etag, ex.value.type === 'tool_use' ? undefined : etag, `${name}: etag in the JSON only without a tool_use block`);
      }
      if (cmd.command === 'create') assert.equal(etag, tag(cmd.file_text), `${name}: the SHA-256 of file_text`);
      // The text form has the header too.
      const text = await send(srv, { body: { command: 'view', path: cmd.path }, tenant, accept: 'text/plain' });
      assert.equal(text.headers.get('etag'), etag, `${name}: the ETag of a view as text/plain`);
    }
    assert.ok(checked >= 5, `only ${checked} examples with an ETag`);
  });

  test('response examples that cannot be provoked on demand are texts of the code (src/, md_refusals.h)', () => {
    const literals = allSourceLiterals();
    for (const name of SOURCE_ONLY) {
      const { value } = expectedFor(name);
      assert.ok(literals.has(value.content), `"${name}": ${JSON.stringify(value.content)} is not a text of the code`);
    }
  });
});

// ---- 4. the /v1 API ----

// The writes after the seed in every /v1 example (the table of info.description).
const V1_EDITS = [
  { headers: { 'X-Memory-Actor': 'agent-1' }, body: { command: 'str_replace', path: '/memories/notes.txt', old_str: 'Next steps defined', new_str: 'Next steps: ship v1' } },
  { headers: { 'X-Memory-Actor': 'agent-1' }, body: { command: 'insert', path: '/memories/notes.txt', insert_line: 1, insert_text: '- Attendees: Ana, Bo\n' } },
  { headers: { 'X-Memory-Actor': 'agent-2' }, body: { command: 'delete', path: '/memories/projects' } },
  { headers: {}, body: { command: 'create', path: '/memories/todo.md', file_text: '- Call Ana\n' } },
];

// The archive of importTenant's examples (its description names its files); tar headers
// and these contents are ASCII, so the string is the archive byte for byte.
const IMPORT_TAR = tarArchive([
  { name: 'memories/todo.md', data: '- Call Ana\n- Call Bo\n' },
  { name: 'memories/ideas.md', data: 'Ship it\n' },
]).toString('latin1');

// The request each /v1 operation makes for the examples its shared responses show.
const V1_DEFAULT = {
  getHistory: { method: 'GET', path: '/v1/history?path=/memories/notes.txt' },
  getVersion: { method: 'GET', path: '/v1/versions/4' },
  restoreFiles: { method: 'POST', path: '/v1/restore', body: { path: '/memories/notes.txt', version: 4 } },
  redactVersion: { method: 'POST', path: '/v1/redact', body: { path: '/memories/notes.txt', version: 4 } },
  getChanges: { method: 'GET', path: '/v1/changes?after=3' },
  search: { method: 'GET', path: '/v1/search?q=ship' },
  listExpiring: { method: 'GET', path: '/v1/expiring?within=7d' },
  getTenant: { method: 'GET', path: '/v1/tenants/acme' },
  listTenants: { method: 'GET', path: '/v1/tenants' },
  eraseTenant: { method: 'DELETE', path: '/v1/tenants/acme' },
  clearMemories: { method: 'DELETE', path: '/v1/memories' },
  setTenantLimits: { method: 'PUT', path: '/v1/tenants/acme/limits', body: { max_bytes: 1048576, max_files: null } },
  exportTenant: { method: 'GET', path: '/v1/tenants/acme/export' },
  findSecrets: { method: 'GET', path: '/v1/tenants/acme/secrets' },
  importTenant: { method: 'POST', path: '/v1/tenants/acme/import?mode=merge', raw: IMPORT_TAR },
};
// The examples of /v1/tenants are for the tenant `acme`: the test's tenant stands for it (in
// the path and in the answers).
const ACME = '/v1/tenants/acme';
function forTenant(expected, tenant) {
  const value = expected.example.value;
  if (value?.tenants) {
    const tenants = value.tenants.map((t) => (t.tenant === 'acme' ? { ...t, tenant } : t));
    return { ...expected, example: { ...expected.example, value: { ...value, tenants } } };
  }
  // An error naming the tenant (an import into a tenant with entries).
  if (typeof value?.error === 'string' && value.error.includes('tenant acme ')) {
    return { ...expected, example: { ...expected.example, value: { ...value, error: value.error.replace('tenant acme ', `tenant ${tenant} `) } } };
  }
  if (!value || value.tenant !== 'acme') return expected;
  return { ...expected, example: { ...expected.example, value: { ...value, tenant } } };
}

const REDACT_4 = { method: 'POST', path: '/v1/redact', body: { path: '/memories/notes.txt', version: 4 } };
const BIG = `big: ${'x'.repeat(1995)}`; // 2,000 bytes
const CALLS_BO = { command: 'create', path: '/memories/calls.md', file_text: '- Call Bo\n' };

// How to provoke each /v1 response example that has no request example (run on a fresh tenant
// holding the seed and V1_EDITS): `request` ({method, path, body, raw, chunked, headers}; the
// operation's V1_DEFAULT when absent), `setup` requests before it, `server: 'proxied'` (not
// seeded: it refuses the test's client), `restart: {args, sql}` (the tenant is made on a server
// of its own, which is stopped; the SQL, valid on both backends, runs on its database with the
// sqlite3 CLI or psql (tests/lib/db.mjs); the request goes to a new memoryd on that database
// run with `args`). The description must show each of `shows` (by default the request line for
// a GET, the body for a POST, in backticks).
const V1_PROVOKE = {
  tenantUsage: {},
  memoriesCleared: { shows: ['`DELETE /v1/memories`'] },
  clearPrecondition: { request: { headers: { 'If-Match': '*' } }, shows: ['`If-Match: *`'] },
  tenantBadName: { request: { path: '/v1/tenants/team:b' } },
  // On a database of its own: the tenant is the only one listed.
  tenantList: { restart: {} },
  tenantsBadLimit: { request: { path: '/v1/tenants?limit=0' } },
  tenantsBadCursor: { request: { path: '/v1/tenants?cursor=team:b' } },
  tenantErased: { shows: ['`DELETE /v1/tenants/acme`'] },
  eraseBadName: { request: { path: '/v1/tenants/team:b' }, shows: ['`DELETE /v1/tenants/team:b`'] },
  eraseNoSuchTenant: { request: { path: '/v1/tenants/nobody' }, shows: ['`DELETE /v1/tenants/nobody`'] },
  exportBadName: { request: { path: '/v1/tenants/team:b/export' } },
  tenantImported: { shows: ['`POST /v1/tenants/acme/import?mode=merge`', '`memories/todo.md`', '`memories/ideas.md`'] },
  importBadMode: { request: { path: '/v1/tenants/acme/import?mode=overwrite' }, shows: ['`POST /v1/tenants/acme/import?mode=overwrite`'] },
  importNotTar: { request: { raw: 'max_bytes=1000' }, shows: ['`max_bytes=1000`'] },
  importOutside: { request: { raw: tarArchive([{ name: 'notes/todo.md', data: 'x\n' }]).toString('latin1') }, shows: ['`notes/todo.md`'] },
  importNotEmpty: { request: { path: '/v1/tenants/acme/import' }, shows: ['`POST /v1/tenants/acme/import`'] },
  importOverQuota: {
    setup: [{ method: 'PUT', path: '/v1/tenants/acme/limits', body: { max_bytes: null, max_files: 2 } }],
    shows: ['`POST /v1/tenants/acme/import?mode=merge`', '`{"max_bytes":null,"max_files":2}`'],
  },
  tenantsNotLocal: { request: { headers: { 'X-Forwarded-For': '203.0.113.7' } }, shows: ['`X-Forwarded-For: 203.0.113.7`'] },
  limitsNotJson: { request: { raw: 'max_bytes=1000' }, shows: ['`max_bytes=1000`'] },
  limitsNegative: { request: { body: { max_bytes: -1, max_files: null } } },
  limitsUnknownField: { request: { body: { max_bytes: 0, max_files: 0, max_dirs: 10 } } },
  limitsMissingField: { request: { body: { max_bytes: 1000 } } },
  limitsBadSensitive: { request: { body: { max_bytes: null, max_files: null, sensitive: 'on' } } },
  secretsNone: {},
  secretsBadCursor: { request: { path: '/v1/tenants/acme/secrets?cursor=x' } },
  restoreOverQuota: {
    setup: [{ method: 'PUT', path: '/v1/tenants/acme/limits', body: { max_bytes: null, max_files: 2 } }],
    request: { method: 'POST', path: '/v1/restore', body: { path: '/memories/projects', before: 6 } },
    shows: ['`{"path":"/memories/projects","before":6}`', '`{"max_bytes":null,"max_files":2}`'],
  },
  fileHistory: { request: { method: 'GET', path: '/v1/history?path=/memories/notes.txt' } },
  historyPage: { request: { method: 'GET', path: '/v1/history?path=/memories/notes.txt&limit=2' } },
  historyNoPath: { request: { method: 'GET', path: '/v1/history' } },
  historyBadLimit: { request: { method: 'GET', path: '/v1/history?path=/memories/notes.txt&limit=0' } },
  v1BadTenant: {
    request: { method: 'GET', path: '/v1/history?path=/memories/notes.txt', headers: { 'X-Tenant-ID': 'team/b' } },
    shows: ['`GET /v1/history?path=/memories/notes.txt`', '`X-Tenant-ID: team/b`'],
  },
  historyUnknownPath: { request: { method: 'GET', path: '/v1/history?path=/memories/missing.txt' } },
  searchWord: { request: { method: 'GET', path: '/v1/search?q=ship' } },
  searchPhrase: { request: { method: 'GET', path: '/v1/search?q=%22call%20ana%22' } },
  searchMiss: { request: { method: 'GET', path: '/v1/search?q=invoice' } },
  searchNoQuery: { request: { method: 'GET', path: '/v1/search' } },
  searchBadLimit: { request: { method: 'GET', path: '/v1/search?q=ship&limit=101' } },
  // The suite's server runs without --expire-after.
  expiringOff: {},
  expiringBadWithin: { request: { path: '/v1/expiring?within=7' } },
  expiringBadCursor: { request: { path: '/v1/expiring?within=7d&cursor=x' } },
  limitsBadExpiry: { request: { body: { max_bytes: null, max_files: null, expire_after: '3x' } } },
  searchBadCursor: { request: { method: 'GET', path: '/v1/search?q=ship&cursor=10' } },
  versionWithContent: { request: { method: 'GET', path: '/v1/versions/4' } },
  versionOfCreate: { request: { method: 'GET', path: '/v1/versions/8' } },
  versionRedacted: {
    setup: [REDACT_4],
    request: { method: 'GET', path: '/v1/versions/4' },
    shows: ['`GET /v1/versions/4`', '`POST /v1/redact`', `\`${JSON.stringify(REDACT_4.body)}\``],
  },
  versionNotANumber: { request: { method: 'GET', path: '/v1/versions/latest' } },
  versionNotKept: { request: { method: 'GET', path: '/v1/versions/99' } },
  restoreReplayed: {
    setup: [{ method: 'POST', path: '/v1/restore', body: { path: '/memories/notes.txt', version: 4 }, headers: { 'Idempotency-Key': 'restore-4-demo' } }],
    request: { method: 'POST', path: '/v1/restore', body: { path: '/memories/notes.txt', version: 4 }, headers: { 'Idempotency-Key': 'restore-4-demo' } },
    shows: ['`Idempotency-Key: restore-4-demo`', '`{"path":"/memories/notes.txt","version":4}`'],
    expectHeaders: { 'idempotent-replayed': 'true' },
  },
  restoreRedacted: {
    setup: [REDACT_4],
    request: { method: 'POST', path: '/v1/restore', body: { path: '/memories/notes.txt', version: 4 } },
    shows: ['`{"path":"/memories/notes.txt","version":4}`', '`POST /v1/redact`'],
  },
  restoreTooLarge: {
    setup: [
      { method: 'POST', path: '/memory', body: { command: 'create', path: '/memories/big.txt', file_text: BIG } },
      { method: 'POST', path: '/memory', body: { command: 'str_replace', path: '/memories/big.txt', old_str: 'big:', new_str: 'huge:' } },
    ],
    restart: { args: ['--max-file', '1K'] },
    request: { method: 'POST', path: '/v1/restore', body: { path: '/memories/big.txt', version: 10 } },
    shows: ['`{"path":"/memories/big.txt","version":10}`', '2,000-byte', '`memoryd --max-file 1K`'],
  },
  v1BodyTooLarge: {
    request: { raw: `{"path":"/memories/notes.txt","version":4,"pad":"${'x'.repeat(BIG_BODY_BYTES - 50)}"}`, chunked: true },
    shows: ['4,194,305 bytes'],
  },
  redactNotPositive: { request: { method: 'POST', path: '/v1/redact', body: { path: '/memories/notes.txt', version: 0 } } },
  redactIfNoneMatch: {
    request: { headers: { 'If-None-Match': '*' } },
    shows: ['`If-None-Match: *`', '`{"path":"/memories/notes.txt","version":4}`'],
  },
  restoreBeforeIfMatch: {
    request: { body: { path: '/memories', before: 4 }, headers: { 'If-Match': '*' } },
    shows: ['`If-Match: *`', '`{"path":"/memories","before":4}`'],
  },
  restoreIfMatchStale: {
    request: { headers: { 'If-Match': '"sha256-cf7994b933f5c0ddc530e8e92fc646a2cc93a00ea326a772c9cf61a5f66ba4a4"' } },
    shows: ['`If-Match: "sha256-cf7994b933f5c0ddc530e8e92fc646a2cc93a00ea326a772c9cf61a5f66ba4a4"`', '`{"path":"/memories/notes.txt","version":4}`'],
  },
  v1KeyReused: {
    setup: [{ method: 'POST', path: '/memory', body: CALLS_BO, headers: { 'Idempotency-Key': 'used-for-a-create' } }],
    request: { headers: { 'Idempotency-Key': 'used-for-a-create' } },
    shows: ['`Idempotency-Key: used-for-a-create`', `\`${JSON.stringify(CALLS_BO)}\``],
  },
  v1Untrusted: { server: 'proxied', shows: ['127.0.0.1', '`memoryd --trusted-proxies 127.0.0.2`'] },
  // memoryd --auth keys: `keyedV1` (9 failures, one per operation: under its limit of 10) and
  // `limited` (10 failures first), with the admin key of tenant acme (any operation).
  v1AuthUnknown: { server: 'keyedV1', request: { headers: { Authorization: `Bearer mdk_${'B'.repeat(43)}` } }, shows: [`\`Authorization: Bearer mdk_${'B'.repeat(43)}\``, '`memoryd --auth keys`'], expectHeaders: { 'www-authenticate': 'Bearer' } },
  v1AuthRateLimited: { server: 'limited', request: { headers: { Authorization: 'Bearer {admin}' } }, shows: ['a valid key', 'after 10 requests with unknown keys', '`memoryd --auth keys`'], expectHeaders: { 'retry-after': /^([1-9]|[1-5][0-9]|60)$/ } },
  changesAfter: { request: { method: 'GET', path: '/v1/changes?after=3&limit=2' } },
  changesDelete: { request: { method: 'GET', path: '/v1/changes?after=5&limit=1' } },
  changesWaited: { request: { method: 'GET', path: '/v1/changes?after=7&wait=1' }, minMs: 900 },
  changesBadWait: { request: { method: 'GET', path: '/v1/changes?wait=61' } },
  changesGone: {
    restart: { sql: 'DELETE FROM changes WHERE seq <= 4;' },
    request: { method: 'GET', path: '/v1/changes?after=2' },
    shows: ['`GET /v1/changes?after=2`', 'changes 1 to 4'],
  },
};
// Examples of the /v1 API that cannot be provoked on demand: `Error: ` + their text, or their
// text, is a text of the code (allSourceLiterals).
const V1_SOURCE_ONLY = new Set(['v1StorageFailure', 'v1FlushFailed', 'v1ShuttingDown', 'v1StoreBusy', 'v1StoreUnavailable', 'v1Overloaded',
  'v1TenantImporting',
  // Times of a 90-day window, which no test waits for (integration/expiry proves the answer).
  'expiringOne']);

// Every /v1 operation: {operationId, method, path, op}.
function v1Operations() {
  return Object.entries(doc.paths)
    .filter(([p]) => p.startsWith('/v1/'))
    .flatMap(([p, item]) => Object.entries(item).map(([method, op]) => ({ id: op.operationId, method: method.toUpperCase(), path: p, op })));
}

// The response examples of an operation: name -> {status, example}.
function v1ResponseExamples(op) {
  const out = new Map();
  for (const [status, resp] of Object.entries(op.responses)) {
    for (const [name, ex] of Object.entries(deref(resp).content?.['application/json']?.examples ?? {})) {
      assert.ok(!out.has(name), `${op.operationId}: response example ${name} twice`);
      out.set(name, { status: Number(status), example: deref(ex) });
    }
  }
  return out;
}

function v1RequestExamples(op) {
  if (!op.requestBody) return [];
  return Object.entries(deref(op.requestBody).content['application/json']?.examples ?? {}).map(([n, ex]) => [n, deref(ex)]);
}

async function seedTenant(server, tenant) {
  for (const [p, text] of SEED) {
    const r = await server.post({ command: 'create', path: p, file_text: text }, { tenant });
    assert.equal(r.status, 200, `seeding ${p}: ${r.text}`);
  }
  for (const { headers, body } of V1_EDITS) {
    const r = await server.post(body, { tenant, headers });
    assert.equal(r.status, 200, `the /v1 examples' write ${JSON.stringify(body)}: ${r.text}`);
  }
}

async function v1Send(server, { method = 'GET', path: q, body, raw, chunked, headers = {} }, tenant) {
  const p = q.startsWith(`${ACME}/`) || q === ACME ? `/v1/tenants/${tenant}${q.slice(ACME.length)}` : q;
  const h = { 'X-Tenant-ID': tenant, ...headers };
  if (method === 'POST' || method === 'PUT') h['content-type'] = 'application/json';
  let payload = method === 'POST' || method === 'PUT' ? raw ?? JSON.stringify(body) : undefined;
  if (chunked) {
    const bytes = new TextEncoder().encode(payload);
    payload = new ReadableStream({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 65536) controller.enqueue(bytes.subarray(i, i + 65536));
        controller.close();
      },
    });
  }
  const res = await fetch(server.url + p, { method, headers: h, body: payload, duplex: 'half' });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON: the comparison fails */
  }
  return { status: res.status, headers: res.headers, text, json };
}

const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

// `actual` with each `time` that has the form of a time where `expected` has one too replaced
// by the expected value: times are compared by their form only.
function withExpectedTimes(actual, expected) {
  if (Array.isArray(actual) && Array.isArray(expected)) return actual.map((a, i) => withExpectedTimes(a, expected[i]));
  if (!actual || typeof actual !== 'object' || !expected || typeof expected !== 'object') return actual;
  const out = {};
  for (const [k, v] of Object.entries(actual)) {
    out[k] = (k === 'time' || k === 'last_write') && typeof v === 'string' && ISO_TIME.test(v) && ISO_TIME.test(expected[k] ?? '') ? expected[k] : withExpectedTimes(v, expected[k]);
  }
  return out;
}

function assertV1(r, expected, what) {
  assert.equal(r.status, expected.status, `${what}: status (body ${r.text.slice(0, 300)})`);
  assert.equal(r.headers.get('content-type'), 'application/json', `${what}: content-type`);
  assert.deepEqual(withExpectedTimes(r.json, expected.example.value), expected.example.value, `${what}: body`);
  assert.equal(r.headers.get('x-memory-is-error'), null, `${what}: no X-Memory-Is-Error outside /memory`);
  if (expected.status === 503) assert.equal(r.headers.get('retry-after'), '1', `${what}: Retry-After`);
}

describe('every example of the /v1 API is what a live memoryd answers', () => {
  test('the writes after the seed are the ones info.description lists', () => {
    const d = doc.info.description;
    V1_EDITS.forEach(({ headers, body }, i) => {
      const header = Object.entries(headers).map(([k, v]) => `\`${k}: ${v}\``)[0] ?? 'none';
      assert.ok(d.includes(`| ${i + 4} | ${header} | \`${JSON.stringify(body)}\` |`), `write ${i + 4} is not in the table`);
    });
  });

  test('every response example is covered exactly once', () => {
    const all = new Set();
    for (const { id, op } of v1Operations()) {
      assert.ok(V1_DEFAULT[id], `${id} has no default request`);
      const requests = new Set(v1RequestExamples(op).map(([n]) => n));
      for (const [name] of v1ResponseExamples(op)) {
        all.add(name);
        const kinds = [requests.has(name), name in V1_PROVOKE, V1_SOURCE_ONLY.has(name)].filter(Boolean).length;
        assert.equal(kinds, 1, `${id}: response example "${name}" must have exactly one of: a request example, a V1_PROVOKE entry, a V1_SOURCE_ONLY entry`);
      }
      for (const name of requests) assert.ok(v1ResponseExamples(op).has(name), `${id}: request example ${name} has no response example`);
    }
    for (const name of [...Object.keys(V1_PROVOKE), ...V1_SOURCE_ONLY]) assert.ok(all.has(name), `the test names a /v1 example "${name}" that openapi.yaml lacks`);
  });

  test('request examples of POST /v1/restore, /v1/redact and PUT /v1/tenants/{tenant}/limits', async () => {
    let n = 0;
    for (const { id, method, op } of v1Operations()) {
      for (const [name, ex] of v1RequestExamples(op)) {
        const tenant = `v1-${name}-${tenantSerial++}`;
        await seedTenant(srv, tenant);
        const r = await v1Send(srv, { method, path: V1_DEFAULT[id].path, body: ex.value }, tenant);
        assertV1(r, forTenant(v1ResponseExamples(op).get(name), tenant), `${id} request example ${name}`);
        n++;
      }
    }
    assert.ok(n >= 12, `only ${n} request examples`);
  });

  test('response examples without a request example: provoked as their description says', async () => {
    for (const { id, method, path: p, op } of v1Operations()) {
      for (const [name, expected] of v1ResponseExamples(op)) {
        const how = V1_PROVOKE[name];
        if (!how) continue;
        const request = { method, path: p, ...V1_DEFAULT[id], ...how.request, headers: { ...V1_DEFAULT[id].headers, ...how.request?.headers } };
        const what = `${id} response example ${name}`;
        const shows = how.shows ?? [request.method === 'GET' ? `\`${request.method} ${request.path}\`` : `\`${JSON.stringify(request.body)}\``];
        for (const shown of shows) assert.ok((expected.example.description ?? '').includes(shown), `${what}: the description must show ${shown}`);
        // keyedV1 takes 9 failures of this address (its limit is 10): a new one after that.
        if (how.server === 'keyedV1' && ++keyedV1Uses % 9 === 0) {
          await keyedV1.stop();
          keyedV1 = await startServer({ db: keyed.dbPath, args: ['--auth', 'keys'] });
        }
        let server = { proxied, keyedV1, limited }[how.server] ?? srv;
        if (server === limited) await primeLimited();
        if (how.server === 'keyedV1' || how.server === 'limited') {
          request.headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, v.replace(/\{(\w+)\}/, (m, sc) => keyFor[sc] ?? m)]));
        }
        const tenant = `v1-${name}-${tenantSerial++}`;
        let own = null;
        if (how.restart) own = await startServer();
        if (server === srv || own) await seedTenant(own ?? srv, tenant);
        for (const s of how.setup ?? []) {
          const r = await v1Send(own ?? srv, s, tenant);
          assert.equal(r.status, 200, `${what}: setup ${s.method} ${s.path} ${JSON.stringify(s.body)}: ${r.text}`);
        }
        if (own) {
          await own.stop();
          if (how.restart.sql) dbSql(own.dbPath, how.restart.sql);
          own = await startServer({ db: own.dbPath, args: how.restart.args ?? [] });
          server = own;
        }
        try {
          const t0 = Date.now();
          const r = await v1Send(server, request, tenant);
          assertV1(r, forTenant(expected, tenant), what);
          if (how.minMs) assert.ok(Date.now() - t0 >= how.minMs, `${what}: answered after ${Date.now() - t0} ms`);
          for (const [h, v] of Object.entries(how.expectHeaders ?? {})) {
            if (v instanceof RegExp) assert.match(r.headers.get(h) ?? '', v, `${what}: header ${h}`);
            else assert.equal(r.headers.get(h), v, `${what}: header ${h}`);
          }
        } finally {
          if (own) {
            await own.stop();
            fs.rmSync(own.dir, { recursive: true, force: true });
          }
        }
      }
    }
  });

  test('response examples that cannot be provoked on demand are texts of the code (src/, md_refusals.h)', () => {
    const literals = allSourceLiterals();
    for (const { id, op } of v1Operations()) {
      for (const [name, { example }] of v1ResponseExamples(op)) {
        if (!V1_SOURCE_ONLY.has(name)) continue;
        const text = example.value.error;
        assert.ok(literals.has(text) || literals.has(`Error: ${text}`), `${id} "${name}": ${JSON.stringify(text)} is not a text of the code`);
      }
    }
  });

  test('a long poll answers as soon as the tenant writes', async () => {
    const tenant = `v1-longpoll-${tenantSerial++}`;
    await seedTenant(srv, tenant);
    const t0 = Date.now();
    const polling = v1Send(srv, { method: 'GET', path: '/v1/changes?after=7&wait=30' }, tenant);
    await new Promise((r) => setTimeout(r, 300));
    const w = await srv.post({ command: 'delete', path: '/memories/todo.md' }, { tenant });
    assert.equal(w.status, 200);
    const r = await polling;
    assert.ok(Date.now() - t0 < 10000, `the long poll took ${Date.now() - t0} ms`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.changes.map((c) => [c.seq, c.command, c.paths]), [[8, 'delete', ['/memories/todo.md']]]);
    assert.equal(r.json.next_after, 8);
  });
});

describe('the other answers info.description states', () => {
  test('other methods on the /v1 routes: 405 with Allow and {"error":"method not allowed"}; any other path: 404', async () => {
    assert.match(doc.info.description, /`405` with an `Allow` header/);
    for (const [method, p, allow] of [['POST', '/v1/history', 'GET'], ['DELETE', '/v1/versions/1', 'GET'], ['GET', '/v1/restore', 'POST'], ['PUT', '/v1/redact', 'POST'], ['POST', '/v1/changes', 'GET']]) {
      const r = await srv.request(method, p);
      assert.equal(r.status, 405, `${method} ${p}`);
      assert.equal(r.headers.get('allow'), allow, `${method} ${p}`);
      assert.deepEqual(r.json, { error: 'method not allowed' }, `${method} ${p}`);
    }
    const notFound = doc.info.description.match(/Any other path is answered `404` with\s+`(\{[^`]+\})`/);
    assert.ok(notFound, 'info.description states the 404 of other paths');
    for (const p of ['/', '/v1', '/v1/nothing', '/memory/', '/Memory']) {
      const r = await srv.request('GET', p);
      assert.equal(r.status, 404, p);
      assert.deepEqual(r.json, JSON.parse(notFound[1]), p);
    }
  });
});

// ---- 5. the probes and the 431 of the HTTP library ----

describe('health, readiness and oversized headers', () => {
  const example = (p, status, name) => deref(deref(doc.paths[p].get.responses[status]).content['application/json'].examples[name]).value;

  test('GET /healthz and GET /readyz answer their 200 examples', async () => {
    for (const [p, name] of [['/healthz', 'alive'], ['/readyz', 'ready']]) {
      const r = await srv.request('GET', p);
      assert.equal(r.status, 200, p);
      assert.equal(r.headers.get('content-type'), 'application/json', p);
      assert.deepEqual(r.json, example(p, '200', name), p);
    }
  });

  test('other methods on /memory get the 405 the description states', async () => {
    assert.match(doc.info.description, /Any method other than `POST` on `\/memory` is answered\s+`405` with `Allow: POST`/);
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const r = await srv.request(method, '/memory');
      assert.equal(r.status, 405, method);
      assert.equal(r.headers.get('allow'), 'POST', method);
      assert.deepEqual(r.json, { type: 'tool_result', content: 'Error: Use POST /memory with a JSON memory command', is_error: true }, method);
    }
  });

  test('GET /metrics answers in each documented format; its examples are lines of a live scrape', async () => {
    const content = deref(doc.paths['/metrics'].get.responses['200']).content;
    for (const [type, accept] of [['text/plain', undefined], ['application/openmetrics-text', 'application/openmetrics-text']]) {
      const r = await srv.request('GET', '/metrics', { headers: accept ? { accept } : {} });
      assert.equal(r.status, 200, type);
      assert.equal(r.headers.get('content-type').split(';')[0], type);
      const live = new Set(r.text.split('\n'));
      for (const ex of Object.values(content[type].examples)) {
        for (const line of deref(ex).value.split('\n').filter(Boolean)) {
          // Sample values and the version differ; the names, labels and comments are the same.
          const shape = (l) => l.replace(/ [0-9.]+$/, '').replace(/version="[^"]*"/, 'version=""');
          assert.ok([...live].some((l) => shape(l) === shape(line)), `${type}: ${line}`);
        }
      }
    }
    const notFound = await srv.request('GET', '/nowhere');
    const ex = deref(doc.paths['/metrics'].get.responses['404']).content['application/json'].examples.elsewhere;
    assert.deepEqual(notFound.json, deref(ex).value);
  });

  test('the 503 bodies of /readyz are literal strings of src/http/health.c', () => {
    const literals = new Set(cStringLiterals(read('src/http/health.c')));
    const examples = deref(doc.paths['/readyz'].get.responses['503']).content['application/json'].examples;
    assert.deepEqual(Object.keys(examples).sort(), ['shuttingDown', 'storageUnavailable']);
    for (const [name, ex] of Object.entries(examples)) {
      assert.ok(literals.has(JSON.stringify(deref(ex).value)), `/readyz 503 ${name}`);
    }
  });

  test('headers over the connection buffer get the documented 431 on every operation', async () => {
    const resp = deref(doc.components.responses.HeadersTooLarge);
    const page = Object.values(resp.content['text/html'].examples)[0].value;
    const padding = { 'X-Padding': 'a'.repeat(70000) };
    for (const [method, p] of [['POST', '/memory'], ['GET', '/healthz'], ['GET', '/readyz'], ['GET', '/metrics']]) {
      assert.equal(doc.paths[p][method.toLowerCase()].responses['431'].$ref, '#/components/responses/HeadersTooLarge');
      // No body: memoryd answers and closes while the headers are still arriving, and a body
      // written after them would fail with EPIPE (Node 18's fetch then loses the answer).
      const r = await srv.request(method, p, { headers: padding });
      assert.equal(r.status, 431, `${method} ${p}`);
      assert.equal(r.text, page, `${method} ${p}`);
    }
  });
});
