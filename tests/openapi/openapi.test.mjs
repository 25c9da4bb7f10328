// Proves that openapi.yaml describes the memoryd of this tree:
// - Redocly CLI lints it with redocly.yaml (recommended-strict plus extra rules) with zero
//   errors, zero warnings and nothing ignored;
// - it agrees with the code: the route table of src/cmd_parse.c (commands, fields, types,
//   required flags), the status mapping of src/err.c, the tenant header rules, the limits of
//   `memoryd --help` and the version of CMakeLists.txt;
// - every example it shows is what a live memoryd answers: each request example of
//   POST /memory is sent (as JSON and with Accept: text/plain) and must produce the response
//   example of the same name; each response example without a request example is provoked by
//   the request its description names; the few that cannot be provoked on demand (storage
//   failure, overload, shutdown) must be literal strings of src/*.c.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { runMemoryd, startServer, tempDir } from '../lib/server.mjs';

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

// ---- reading the C sources ----

function unescapeC(s) {
  const simple = { n: '\n', t: '\t', r: '\r', '"': '"', "'": "'", '\\': '\\', '?': '?', a: '\x07', b: '\b', f: '\f', v: '\v', 0: '\0' };
  return s.replace(/\\(x[0-9a-fA-F]+|.)/g, (m, c) => {
    if (c[0] === 'x') return String.fromCharCode(parseInt(c.slice(1), 16));
    assert.ok(c in simple, `unexpected C escape ${m}`);
    return simple[c];
  });
}

// Every string literal of a C file, adjacent literals joined as the compiler does.
function cStringLiterals(code) {
  const token = /\/\*[\s\S]*?\*\/|\/\/[^\n]*|'(?:[^'\\\n]|\\.)*'|"((?:[^"\\\n]|\\.)*)"/g;
  const out = [];
  let current = null;
  let lastEnd = 0;
  let m;
  while ((m = token.exec(code))) {
    if (m[1] === undefined) {
      if (m[0][0] === "'" && current !== null) { out.push(current); current = null; }
      continue; // a comment (whitespace to the compiler) or a character literal
    }
    const between = code.slice(lastEnd, m.index).replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, '');
    const text = unescapeC(m[1]);
    if (current !== null && /^\s*$/.test(between)) current += text;
    else {
      if (current !== null) out.push(current);
      current = text;
    }
    lastEnd = token.lastIndex;
  }
  if (current !== null) out.push(current);
  return out;
}

function allSourceLiterals() {
  const dir = path.join(SRC, 'src');
  const set = new Set();
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.c'))) {
    for (const s of cStringLiterals(fs.readFileSync(path.join(dir, f), 'utf8'))) set.add(s);
  }
  return set;
}

// The routes[] initializer of src/cmd_parse.c: [{name, fields: [{name, type, required}]}].
function parseRouteTable() {
  const code = read('src/cmd_parse.c');
  const types = code.match(/enum field_type\s*\{([\s\S]*?)\};/);
  assert.ok(types, 'enum field_type not found in src/cmd_parse.c');
  const fieldTypes = [...types[1].matchAll(/\b(F_[A-Z_]+)\b/g)].map((m) => m[1]);
  const block = code.match(/static const struct route routes\[[^\]]*\]\s*=\s*\{([\s\S]*?)\n\};/);
  assert.ok(block, 'the routes[] initializer was not found in src/cmd_parse.c');
  const routes = [];
  const routeRe = /\{"([a-z_]+)",\s*MD_CMD_\w+,\s*[01],\s*\w+,\s*\{([\s\S]*?)\}\}/g;
  for (const m of block[1].matchAll(routeRe)) {
    const fields = [...m[2].matchAll(/FIELD\("([a-z_]+)",\s*(F_[A-Z_]+),\s*([01]),\s*\w+\)/g)].map(
      (f) => ({ name: f[1], type: f[2], required: f[3] === '1' }),
    );
    assert.equal(fields.length, (m[2].match(/FIELD\(/g) || []).length, `could not read every field of ${m[1]}`);
    routes.push({ name: m[1], fields });
  }
  assert.equal(routes.length, (block[1].match(/\{"/g) || []).length, 'could not read every route');
  assert.ok(routes.length >= 6, `expected the six commands, read ${routes.length}`);
  return { fieldTypes, routes };
}

// md_err -> HTTP status (src/err.c), and the md_err values the code produces.
function parseStatusMapping() {
  const code = read('src/err.c');
  const fn = code.match(/unsigned md_err_http_status\(enum md_err err\)\s*\{([\s\S]*?)\n\}/);
  assert.ok(fn, 'md_err_http_status not found in src/err.c');
  const map = new Map();
  let pending = [];
  for (const m of fn[1].matchAll(/case (MD_[A-Z]+):|return (\d+);/g)) {
    if (m[1]) pending.push(m[1]);
    else {
      for (const e of pending) map.set(e, Number(m[2]));
      pending = [];
    }
  }
  assert.ok(map.size >= 8, 'could not read the status mapping');
  const used = new Set();
  for (const f of fs.readdirSync(path.join(SRC, 'src'))) {
    if (!f.endsWith('.c') || f === 'err.c') continue;
    for (const m of read(`src/${f}`).matchAll(/\b(MD_E[A-Z]+)\b/g)) used.add(m[1]);
  }
  return { map, used };
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
// `raw` as it is; `headers` replace the test's own tenant header; `server: 'requireTenant'`
// uses a memoryd run with --require-tenant, `server: 'proxied'` one run with
// --trusted-proxies 127.0.0.2 (the test's client is 127.0.0.1); `setup` commands run after the seed. The
// example's description must contain each of `shows` (by default the body in backticks), so
// it names the request that was really sent.
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
};

// Response examples that cannot be provoked on demand: their content must be a string
// literal of src/*.c.
const SOURCE_ONLY = new Set(['storageFailure', 'shuttingDown', 'overloaded', 'storeBusy', 'storeUnavailable', 'bodiesInMemory', 'flushFailed']);

// ---- the live servers ----

let srv; // default options
let strict; // --require-tenant
let proxied; // --trusted-proxies 127.0.0.2
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
async function send(server, { body, raw, chunked, headers, tenant, accept }) {
  const h = { 'content-type': 'application/json' };
  if (headers) Object.assign(h, headers);
  else h['X-Tenant-ID'] = tenant;
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
});

after(async () => {
  await srv?.stop();
  await strict?.stop();
  await proxied?.stop();
  for (const dir of [bundleDir, srv?.dir, strict?.dir, proxied?.dir]) {
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
    assert.deepEqual(ops.sort(), ['GET /healthz getHealth', 'GET /readyz getReadiness', 'POST /memory runMemoryCommand']);
  });

  test('every command and field of the route table (src/cmd_parse.c), and nothing else', () => {
    const { fieldTypes, routes } = parseRouteTable();

    // How each field type of the route table must be described.
    const TYPE_CHECKS = {
      F_PATH: (s) => s.$ref === schemaRef('MemoryPath'),
      F_STRING: (s) => s.type === 'string' && s.minLength === undefined,
      F_NONEMPTY: (s) => s.type === 'string' && s.minLength === 1,
      F_INT: (s) => s.type === 'integer',
      F_RANGE: (s) => s.$ref === schemaRef('ViewRange'),
    };
    assert.deepEqual(fieldTypes.slice().sort(), Object.keys(TYPE_CHECKS).sort(), 'a field type of src/cmd_parse.c has no check here');
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
    assert.deepEqual([...documented.keys()].sort(), routes.map((r) => r.name).sort(), 'commands: openapi.yaml vs route table');
    assert.equal(mc.discriminator.propertyName, 'command');
    assert.deepEqual(mc.discriminator.mapping, Object.fromEntries([...documented].map(([n, d]) => [n, d.ref])));

    for (const route of routes) {
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

  test('the documented statuses of POST /memory are the ones src/err.c can produce', () => {
    const { map, used } = parseStatusMapping();
    const produced = new Set([...map].filter(([e]) => used.has(e)).map(([, s]) => s));
    produced.add(200);
    const documented = new Set(Object.keys(memoryOp().responses).map(Number));
    documented.delete(431); // sent by libmicrohttpd itself, checked live below
    // 405 (MD_EMETHOD) answers methods other than POST on /memory, so it is
    // not a response of the POST operation: info.description states it and
    // section 4 checks it live.
    assert.ok(produced.delete(405), 'src/http.c answers other methods on /memory with MD_EMETHOD (405)');
    assert.deepEqual([...documented].sort(), [...produced].sort());
    for (const [status, resp] of Object.entries(memoryOp().responses)) {
      if (status === '431') continue;
      const r = deref(resp);
      assert.equal(r.content['application/json'].schema.$ref, schemaRef('ToolResult'), `${status}: tool_result body`);
      assert.ok(r.content['text/plain'], `${status}: text/plain form`);
      assert.equal(r.headers['X-Memory-Is-Error'].$ref, '#/components/headers/XMemoryIsError', `${status}: X-Memory-Is-Error`);
    }
    assert.ok(deref(memoryOp().responses['503']).headers['Retry-After'], '503 carries Retry-After');
    assert.match(read('src/http.c'), /if \(status == 503\)\s*MHD_add_response_header\(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1"\)/);
  });

  test('the tenant header', () => {
    const p = deref(memoryOp().parameters.find((x) => deref(x).in === 'header'));
    const max = Number(read('include/md_config.h').match(/#define MD_TENANT_MAX (\d+)/)[1]);
    const header = read('src/config.c').match(/\.tenant_header = "([^"]+)"/)[1];
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
      for (const shown of how.shows ?? [`\`${how.raw ?? JSON.stringify(how.body)}\``]) {
        assert.ok(description.includes(shown), `${name}: the description must show ${shown}`);
      }
      const server = { requireTenant: strict, proxied }[how.server] ?? srv;
      const tenant = server === srv ? await freshTenant(name) : undefined;
      for (const cmd of how.setup ?? []) {
        const s = await send(srv, { body: cmd, tenant });
        assert.equal(s.status, 200, `${name}: setup ${cmd.command} ${cmd.path}: ${s.text}`);
      }
      let r;
      try {
        r = await send(server, { ...how, tenant });
      } catch (e) {
        assert.fail(`response example ${name}: ${e.message} (${e.cause?.code ?? e.cause})`);
      }
      assertAnswer(r, expected, `response example ${name}`);
      const t = await send(server, { ...how, tenant, accept: 'text/plain' });
      assertTextAnswer(t, expected, `response example ${name}`);
    }
  });

  test('response examples that cannot be provoked on demand are literal strings of src/*.c', () => {
    const literals = allSourceLiterals();
    for (const name of SOURCE_ONLY) {
      const { value } = expectedFor(name);
      assert.ok(literals.has(value.content), `"${name}": ${JSON.stringify(value.content)} is not a string literal of src/*.c`);
    }
  });
});

// ---- 4. the probes and the 431 of the HTTP library ----

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

  test('the 503 bodies of /readyz are literal strings of src/http.c', () => {
    const literals = new Set(cStringLiterals(read('src/http.c')));
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
    for (const [method, p] of [['POST', '/memory'], ['GET', '/healthz'], ['GET', '/readyz']]) {
      assert.equal(doc.paths[p][method.toLowerCase()].responses['431'].$ref, '#/components/responses/HeadersTooLarge');
      // No body: memoryd answers and closes while the headers are still arriving, and a body
      // written after them would fail with EPIPE (Node 18's fetch then loses the answer).
      const r = await srv.request(method, p, { headers: padding });
      assert.equal(r.status, 431, `${method} ${p}`);
      assert.equal(r.text, page, `${method} ${p}`);
    }
  });
});
