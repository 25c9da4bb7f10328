// Proves memoryd's operational surface: --help lists every flag with its
// MEMORYD_* variable, --version, an unknown flag exits with status 2; GET
// /healthz and GET /readyz; one JSON log line per /memory request on stderr
// with time, tenant, command, status, bytes_in, bytes_out and us, which never
// carries file content or a path (checked with a secret marker in both); and
// SIGTERM (or SIGINT) ends memoryd with status 0 and a "stopped" line, with the
// data intact when it is started again on the same database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { isPg } from '../lib/pg.mjs';
import { startServer, runMemoryd } from '../lib/server.mjs';
import { volume } from '../lib/util.mjs';
import { routes } from '../lib/vocabulary.mjs';

const FLAGS = [
  ['listen', 'MEMORYD_LISTEN'],
  ['port', 'MEMORYD_PORT'],
  ['db', 'MEMORYD_DB'],
  ['durability', 'MEMORYD_DURABILITY'],
  ['tenant-header', 'MEMORYD_TENANT_HEADER'],
  ['default-tenant', 'MEMORYD_DEFAULT_TENANT'],
  ['require-tenant', 'MEMORYD_REQUIRE_TENANT'],
  ['trusted-proxies', 'MEMORYD_TRUSTED_PROXIES'],
  ['max-body', 'MEMORYD_MAX_BODY'],
  ['max-file', 'MEMORYD_MAX_FILE'],
  ['max-view', 'MEMORYD_MAX_VIEW'],
  ['tenant-max-bytes', 'MEMORYD_TENANT_MAX_BYTES'],
  ['tenant-max-files', 'MEMORYD_TENANT_MAX_FILES'],
  ['max-path', 'MEMORYD_MAX_PATH'],
  ['max-segment', 'MEMORYD_MAX_SEGMENT'],
  ['threads', 'MEMORYD_THREADS'],
  ['max-connections', 'MEMORYD_MAX_CONNECTIONS'],
  ['max-connections-per-ip', 'MEMORYD_MAX_CONNECTIONS_PER_IP'],
  ['max-body-memory', 'MEMORYD_MAX_BODY_MEMORY'],
  ['max-import', 'MEMORYD_MAX_IMPORT'],
  ['connection-timeout', 'MEMORYD_CONNECTION_TIMEOUT'],
  ['max-batch', 'MEMORYD_MAX_BATCH'],
  ['max-queue', 'MEMORYD_MAX_QUEUE'],
  ['busy-timeout', 'MEMORYD_BUSY_TIMEOUT'],
  ['history-versions', 'MEMORYD_HISTORY_VERSIONS'],
  ['history-days', 'MEMORYD_HISTORY_DAYS'],
  ['shutdown-timeout', 'MEMORYD_SHUTDOWN_TIMEOUT'],
  ['metrics-listen', 'MEMORYD_METRICS_LISTEN'],
  ['metrics-tenant-labels', 'MEMORYD_METRICS_TENANT_LABELS'],
  ['auth', 'MEMORYD_AUTH'],
  ['mcp-sessions', 'MEMORYD_MCP_SESSIONS'],
  ['mcp-origins', 'MEMORYD_MCP_ORIGINS'],
  ['search', 'MEMORYD_SEARCH'],
  ['sensitive', 'MEMORYD_SENSITIVE'],
  ['sensitive-cards', 'MEMORYD_SENSITIVE_CARDS'],
  ['sensitive-patterns', 'MEMORYD_SENSITIVE_PATTERNS'],
  ['expire-after', 'MEMORYD_EXPIRE_AFTER'],
  ['expire-granularity', 'MEMORYD_EXPIRE_GRANULARITY'],
  ['wal-size-limit', 'MEMORYD_WAL_SIZE_LIMIT'],
  ['log-level', 'MEMORYD_LOG_LEVEL'],
];

test('--help lists every flag, each with its MEMORYD_* variable; exit 0', async () => {
  const r = await runMemoryd(['--help']);
  assert.equal(r.code, 0);
  assert.equal(r.stderr, '');
  assert.match(r.stdout, /^Usage: memoryd \[OPTION\]\.\.\./);
  const lines = r.stdout.split('\n');
  for (const [flag, env] of FLAGS) {
    const i = lines.findIndex((l) => new RegExp(`^\\s+--${flag}(\\s|$)`).test(l));
    assert.ok(i >= 0, `--${flag} is not listed`);
    // The variable is named on the flag's entry: its line or the ones after it, before the next flag.
    const next = lines.findIndex((l, k) => k > i && /^\s+--[a-z]/.test(l));
    const entry = lines.slice(i, next).join('\n');
    assert.match(entry, new RegExp(`\\b${env}\\b`), `--${flag} does not name ${env}`);
  }
  // Every flag listed is one of those, and every MEMORYD_* variable named belongs to one.
  const listed = lines.map((l) => /^\s+--([a-z-]+)/.exec(l)?.[1]).filter(Boolean);
  assert.deepEqual(listed.sort(), [...FLAGS.map(([f]) => f), 'help', 'version'].sort());
  const vars = [...new Set(r.stdout.match(/MEMORYD_[A-Z_]+/g))].sort();
  assert.deepEqual(vars, FLAGS.map(([, e]) => e).sort());
});

test('--help lists every endpoint of the route table with its methods, and every subcommand', async () => {
  const r = await runMemoryd(['--help']);
  assert.equal(r.code, 0);
  const section = r.stdout.split('\nEndpoints (openapi.yaml describes them):\n')[1]?.split('\nCommands:\n');
  assert.ok(section, r.stdout);
  // One line per path of include/http/md_routes.def (the catch-alls are no endpoint), its
  // methods in row order.
  const want = new Map();
  for (const row of routes().routes) {
    if (row.path.includes('{*}')) continue;
    want.set(row.path, [...(want.get(row.path) ?? []), row.method]);
  }
  const lines = section[0].trimEnd().split('\n');
  assert.deepEqual(lines, [...want].map(([p, m]) => `  ${m.join(', ').padEnd(14)} ${p}`));
  for (const sub of ['memoryd keys', 'memoryd backup', 'memoryd migrate']) assert.ok(section[1].includes(`  ${sub} `), sub);
});

test('an open listener (not loopback, --auth none, no --trusted-proxies) is warned about at start; loopback, keys or a trusted proxy are not', async (t) => {
  const warned = (srv) => srv.logs.filter((l) => l.level === 'warn' && /^open listener/.test(l.msg));
  const open = await startServer({ args: ['--listen', '0.0.0.0'] });
  t.after(() => open.stop());
  assert.deepEqual(warned(open).map((l) => [l.msg, l.address]), [[
    "open listener: any client that reaches this address can read and write every tenant's memory; use --auth keys, or --trusted-proxies behind a proxy that authenticates, or --listen 127.0.0.1",
    '0.0.0.0',
  ]]);
  for (const args of [[], ['--listen', '::1'], ['--listen', '0.0.0.0', '--trusted-proxies', '127.0.0.1']]) {
    const srv = await startServer({ args });
    await srv.stop();
    assert.deepEqual(warned(srv), [], args.join(' '));
  }
});

test('--version prints the version; exit 0', async () => {
  const r = await runMemoryd(['--version']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^memoryd \d+\.\d+\.\d+\S* \(schema: sqlite \d+, postgres \d+\)\n$/);
  assert.equal(r.stderr, '');
});

test('an unknown flag or argument: exit 2 with a message', async () => {
  // (Under valgrind one of each kind: a --name that is no option, an argument without --.)
  for (const arg of volume(['--bogus', '--max_body', '-x', 'serve'], ['--max_body', 'serve'])) {
    const r = await runMemoryd(['--port', '0', arg]);
    assert.deepEqual({ code: r.code, stderr: r.stderr, stdout: r.stdout },
      { code: 2, stderr: `memoryd: unknown option '${arg}'; see memoryd --help\n`, stdout: '' }, arg);
  }
  const bad = await runMemoryd(['--port', '0', '--durability', 'fast']);
  assert.deepEqual({ code: bad.code, stderr: bad.stderr },
    { code: 2, stderr: "memoryd: invalid value for --durability: 'fast' (expected full|normal)\n" });
});

// A request with node:http (HEAD included): {status, headers, text}.
function raw(srv, method, path, body) {
  return new Promise((resolve, reject) => {
    const headers = body === undefined ? {} : { 'content-length': Buffer.byteLength(body) };
    const req = http.request({ host: '127.0.0.1', port: srv.port, method, path, headers }, (res) => {
      const parts = [];
      res.on('data', (c) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(parts).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('GET /healthz and GET /readyz', async () => {
  const srv = await startServer();
  try {
    const h = await raw(srv, 'GET', '/healthz');
    assert.deepEqual([h.status, h.headers['content-type'], h.text], [200, 'application/json', '{"status":"ok"}']);
    const r = await raw(srv, 'GET', '/readyz');
    assert.deepEqual([r.status, r.headers['content-type'], r.text], [200, 'application/json', '{"status":"ready"}']);
    for (const path of ['/healthz', '/readyz']) {
      const head = await raw(srv, 'HEAD', path);
      assert.equal(head.status, 200, `HEAD ${path}`);
      assert.equal(head.text, '');
      const post = await raw(srv, 'POST', path, '{}');
      assert.equal(post.status, 405, `POST ${path}`);
      assert.equal(post.headers.allow, 'GET, HEAD');
    }
  } finally {
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});

// Waits until `pred` holds for the server's parsed log lines.
const waitForLogs = (srv, pred, what) => srv.waitForLogs(pred, what);

test('one JSON log line per request with time, tenant, command, status, bytes; never content or paths', async () => {
  const marker = `S3CRET${crypto.randomBytes(6).toString('hex')}`;
  const srv = await startServer();
  const sent = [];
  let stopped = false;
  try {
    const send = async (tenant, body, expectStatus) => {
      const payload = typeof body === 'string' ? body : JSON.stringify(body);
      const r = await srv.post(payload, { tenant });
      assert.equal(r.status, expectStatus, r.text);
      sent.push({ tenant, command: typeof body === 'string' ? undefined : (body.command ?? body.input?.command), status: r.status,
        bytesIn: Buffer.byteLength(payload), bytesOut: Buffer.byteLength(r.text) });
    };
    const dir = `/memories/${marker}-dir`;
    await send('log-1', { command: 'create', path: `${dir}/f.txt`, file_text: `${marker} content\nline 2` }, 200);
    await send('log-1', { command: 'view', path: `${dir}/f.txt` }, 200);
    await send('log-3', { command: 'view', path: `${dir}/f.txt` }, 404); // other tenant
    await send('log-1', { command: 'view', path: dir }, 200);
    await send('log-4', { command: 'str_replace', path: `${dir}/f.txt`, old_str: marker, new_str: `${marker}2` }, 404);
    await send('log-5', { type: 'tool_use', id: 'toolu_log', name: 'memory', input: { command: 'str_replace', path: `${dir}/f.txt`, old_str: `${marker} content`, new_str: `new ${marker}` } }, 404);
    await send('log-6', { command: 'insert', path: `${dir}/f.txt`, insert_line: 0, insert_text: marker }, 404);
    await send('log-1', { command: 'str_replace', path: `${dir}/f.txt`, old_str: `${marker} content`, new_str: `new ${marker}` }, 200);
    await send('log-1', { command: 'insert', path: `${dir}/f.txt`, insert_line: 0, insert_text: `${marker} inserted` }, 200);
    await send('log-1', { command: 'str_replace', path: `${dir}/f.txt`, old_str: `absent ${marker}`, new_str: 'x' }, 409);
    await send('log-1', { command: 'rename', old_path: `${dir}/f.txt`, new_path: `/memories/${marker}.txt` }, 200);
    await send('log-1', { command: 'create', path: `/memories/${marker}.txt`, file_text: marker }, 409);
    await send('log-1', { command: 'view', path: `/memories/../${marker}` }, 400);
    await send('log-1', { command: 'view', path: `/${marker}` }, 400);
    await send('log-1', { command: 'delete', path: `/memories/${marker}.txt` }, 200);
    await send('log-1', `{"command":"create","path":"/memories/${marker}",`, 400);
    await send('log-1', { command: marker, path: `/memories/${marker}` }, 400);
    await send('log-7', { command: 'view', path: '/memories' }, 200);
    await waitForLogs(srv, (logs) => logs.filter((l) => l.msg === 'request').length >= sent.length, `${sent.length} request lines`);

    // Every line is one JSON object (nothing else is written to stderr).
    for (const line of srv.rawStderr) assert.doesNotThrow(() => JSON.parse(line), line);
    const lines = srv.logs.filter((l) => l.msg === 'request');
    assert.equal(lines.length, sent.length);
    // The same multiset of (tenant, command, status, bytes_in, bytes_out).
    const key = (o) => JSON.stringify([o.tenant, o.command ?? null, o.status, o.bytesIn, o.bytesOut]);
    const got = lines.map((l) => key({ tenant: l.tenant, command: l.command, status: l.status, bytesIn: l.bytes_in, bytesOut: l.bytes_out }));
    const want = sent.map((s) => key({ ...s, command: s.command === marker ? undefined : s.command }));
    assert.deepEqual(got.sort(), want.sort());
    for (const l of lines) {
      assert.match(l.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.equal(Math.abs(Date.parse(l.time) - Date.now()) < 3600e3, true, 'time is now-ish (UTC)');
      assert.equal(Number.isInteger(l.us) && l.us >= 0, true, `us: ${l.us}`);
      assert.equal(l.method, 'POST');
      assert.equal(l.route, '/memory');
      assert.equal(l.is_error, l.status !== 200);
    }
    await srv.stop();
    stopped = true;
    // Still exactly one line per request once everything is flushed.
    assert.equal(srv.logs.filter((l) => l.msg === 'request').length, sent.length);
    // Not a trace of the content or the paths anywhere on stderr.
    const all = srv.rawStderr.join('\n');
    assert.equal(all.includes(marker), false, `the marker appears in the log:\n${srv.rawStderr.filter((l) => l.includes(marker)).join('\n')}`);
  } finally {
    if (!stopped) await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});

test('a request refused for its tenant or method is logged too, without a tenant it does not have', async () => {
  const srv = await startServer({ args: ['--require-tenant'] });
  try {
    const r = await srv.post({ command: 'view', path: '/memories' });
    assert.equal(r.status, 400);
    await waitForLogs(srv, (logs) => logs.some((l) => l.msg === 'request'), 'a request line');
    const line = srv.logs.find((l) => l.msg === 'request');
    assert.equal(line.status, 400);
    assert.equal('tenant' in line, false);
    assert.equal(line.command, 'view'); // the body is parsed (for its tool_use_id) before the refusal
    assert.equal(line.bytes_in, Buffer.byteLength(JSON.stringify({ command: 'view', path: '/memories' })));
    assert.equal(line.bytes_out, Buffer.byteLength(r.text));
    // A wrong method on /memory.
    const g = await raw(srv, 'GET', '/memory');
    await waitForLogs(srv, (logs) => logs.some((l) => l.msg === 'request' && l.method === 'GET'), 'the GET line');
    const gl = srv.logs.find((l) => l.msg === 'request' && l.method === 'GET');
    assert.deepEqual([gl.route, gl.status, gl.bytes_in, gl.bytes_out, 'tenant' in gl, 'command' in gl],
      ['/memory', g.status, 0, Buffer.byteLength(g.text), false, false]);
  } finally {
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});

test('SIGTERM: exit 0 and a "stopped" line; the data is intact after a restart on the same database', async () => {
  const srv = await startServer();
  const files = {
    '/memories/keep.txt': 'kept\n',
    '/memories/d/e/deep.txt': 'deep \u00e9\u{1F600}',
    '/memories/.hidden': 'h',
  };
  for (const [path, file_text] of Object.entries(files)) {
    assert.equal((await srv.post({ command: 'create', path, file_text }, { tenant: 'persist' })).status, 200);
  }
  assert.equal((await srv.post({ command: 'str_replace', path: '/memories/keep.txt', old_str: 'kept', new_str: 'kept!' }, { tenant: 'persist' })).status, 200);
  assert.equal((await srv.post({ command: 'create', path: '/memories/other.txt', file_text: 'o' }, { tenant: 'other' })).status, 200);
  const views = async (s) => Promise.all(['/memories', '/memories/d', ...Object.keys(files)].map(
    async (path) => (await s.post({ command: 'view', path }, { tenant: 'persist' })).text));
  const before = await views(srv);
  const code = await srv.stop(); // SIGTERM; asserts exit code 0
  assert.deepEqual(code, { code: 0, signal: null });
  const msgs = srv.logs.map((l) => l.msg);
  assert.ok(msgs.includes('shutting down'), msgs.join(', '));
  assert.equal(srv.logs.find((l) => l.msg === 'shutting down').signal, 'SIGTERM');
  assert.equal(msgs.at(-1), 'stopped');

  const again = await startServer({ db: srv.dbPath });
  try {
    assert.deepEqual(await views(again), before);
    assert.equal(JSON.parse(before[2]).content, "Here's the content of /memories/keep.txt with line numbers:\n     1\tkept!\n     2\t");
    assert.equal((await again.post({ command: 'view', path: '/memories/other.txt' }, { tenant: 'other' })).json.content,
      "Here's the content of /memories/other.txt with line numbers:\n     1\to");
  } finally {
    // SIGINT ends it the same way.
    again.proc.kill('SIGINT');
    const e = await again.stop();
    assert.deepEqual(e, { code: 0, signal: null });
    assert.equal(again.logs.find((l) => l.msg === 'shutting down').signal, 'SIGINT');
    assert.equal(again.logs.at(-1).msg, 'stopped');
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});

test('a second memoryd on a port in use fails at start (no silent port sharing); a restart on the same port works at once', { timeout: 30000 }, async () => {
  const srv = await startServer();
  try {
    // Another database, same port: refused, exit 1, the reason on stderr; the first keeps serving.
    const second = await runMemoryd(['--port', String(srv.port), '--db', `${srv.dir}/second.db`]);
    assert.equal(second.code, 1);
    const line = JSON.parse(second.stderr.trim().split('\n').at(-1));
    assert.equal(line.msg, 'cannot start the HTTP server');
    assert.equal(line.detail, `cannot listen on 127.0.0.1 port ${srv.port} (in use, or not allowed)`);
    for (let i = 0; i < 20; i++) {
      const r = await srv.post({ command: 'view', path: '/memories' }, { tenant: 'port' });
      assert.equal(r.status, 200);
    }
  } finally {
    await srv.stop();
  }
  // Stopped with connections just closed (TIME_WAIT): the same port binds again at once.
  const again = await startServer({ db: srv.dbPath, args: ['--port', String(srv.port)] });
  try {
    assert.equal(again.port, srv.port);
    assert.equal((await again.post({ command: 'view', path: '/memories' }, { tenant: 'port' })).status, 200);
  } finally {
    await again.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});

// (Under valgrind, which looks for memory errors, 30 files instead of 300: the same statements.)
const MANY = volume(300, 30);
test(`the request log counts the SQL statements of each command: a directory rename or delete costs the same for 1 file as for ${MANY}`, async () => {
  const srv = await startServer();
  try {
    const ok = async (cmd) => assert.equal((await srv.post(cmd)).status, 200, JSON.stringify(cmd));
    await ok({ command: 'create', path: '/memories/one/f.txt', file_text: 'x' });
    for (let i = 0; i < MANY; i++) await ok({ command: 'create', path: `/memories/many/sub/f${i}.txt`, file_text: 'x' });
    const ops = [
      { command: 'rename', old_path: '/memories/one', new_path: '/memories/one2' },
      { command: 'rename', old_path: '/memories/many', new_path: '/memories/many2' },
      { command: 'delete', path: '/memories/one2' },
      { command: 'delete', path: '/memories/many2' },
    ];
    for (const cmd of ops) await ok(cmd);
    await waitForLogs(srv, (logs) => logs.filter((l) => l.msg === 'request').length >= MANY + 5, 'the request lines');
    const lines = srv.logs.filter((l) => l.msg === 'request').slice(-4);
    assert.deepEqual(lines.map((l) => l.command), ['rename', 'rename', 'delete', 'delete']);
    for (const l of lines) assert.ok(Number.isInteger(l.sql) && l.sql > 0, JSON.stringify(l));
    assert.equal(lines[1].sql, lines[0].sql, `renaming ${MANY + 1} entries runs as many statements as renaming 2`);
    assert.equal(lines[3].sql, lines[2].sql, `deleting ${MANY + 2} entries runs as many statements as deleting 2`);
    // A view of a file is a lookup of the tenant and of the file.
    await ok({ command: 'view', path: '/memories' });
    await waitForLogs(srv, (logs) => logs.filter((l) => l.msg === 'request').length >= MANY + 6, 'the view line');
    assert.ok(srv.logs.filter((l) => l.msg === 'request').at(-1).sql <= 4);
    if (isPg()) {
      // On PostgreSQL, round trips to the database: a view in one, a write command in at most
      // two, a directory rename or delete in at most three whatever its size.
      const more = [
        { command: 'create', path: '/memories/k/f.txt', file_text: 'x' },
        { command: 'view', path: '/memories/k/f.txt' },
        { command: 'create', path: '/memories/new/deep/er/f.txt', file_text: 'x' },
        { command: 'str_replace', path: '/memories/k/f.txt', old_str: 'x', new_str: 'y' },
        { command: 'insert', path: '/memories/k/f.txt', insert_line: 0, insert_text: 'z' },
        { command: 'rename', old_path: '/memories/new', new_path: '/memories/moved/new' },
        { command: 'delete', path: '/memories/moved' },
      ];
      for (const cmd of more) await ok(cmd);
      await waitForLogs(srv, (logs) => logs.filter((l) => l.msg === 'request').length >= MANY + 13, 'the request lines');
      const rt = srv.logs.filter((l) => l.msg === 'request').slice(-13).map((l) => [l.command, l.round_trips]);
      const limit = { view: 1, create: 2, str_replace: 2, insert: 2, rename: 3, delete: 3 };
      for (const [command, n] of rt) assert.ok(n >= 1 && n <= limit[command], `${command}: ${n} round trips (${JSON.stringify(rt)})`);
      // (the 2nd..5th of these are the renames and deletes of the 1-file and MANY + 1-file directories)
      assert.deepEqual(rt.slice(1, 5), [['rename', rt[1][1]], ['rename', rt[1][1]], ['delete', rt[3][1]], ['delete', rt[3][1]]],
        `a directory of 1 file or of ${MANY + 1}: the same round trips`);
    }
  } finally {
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});
