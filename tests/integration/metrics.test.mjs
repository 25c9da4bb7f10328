// GET /metrics: a known set of requests against a live memoryd, then exact counter deltas in
// the scrape (requests by command and status class, the latency histograms' counts, write
// batches, rows pruned by kind, connections open and refused, storage errors against the
// database errors logged); `promtool check metrics` passes on the scrape;
// OpenMetrics when the Accept header asks for it; --metrics-listen serves it on a port of its
// own while the public port answers 404; no tenant name in it by default, per-tenant counters
// with --metrics-tenant-labels (which needs --metrics-listen); and a real Prometheus server
// (Debian's `prometheus`) scraping memoryd every second, whose HTTP API then reports the
// counters of the requests this test made.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { dbSql } from '../lib/db.mjs';
import { isPg, psql } from '../lib/pg.mjs';
import { startServer, runMemoryd, tempDir } from '../lib/server.mjs';
import { RawConn, postOnce, sleep } from '../lib/attack.mjs';

const TEXT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
const OM_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8';
const PROMETHEUS_ACCEPT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
const TENANT = 'acme-secret-tenant';
const COMMANDS = ['view', 'create', 'str_replace', 'insert', 'delete', 'rename', 'unknown', 'history', 'versions',
  'restore', 'redact', 'changes', 'healthz', 'readyz', 'metrics', 'quota', 'admin', 'mcp', 'not_found'];
const CLASSES = ['2xx', '3xx', '4xx', '5xx'];

// The samples of a scrape in either format: "name{labels}" -> value.
function parse(text) {
  const samples = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^(\S+?(?:\{[^}]*\})?) (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    samples.set(m[1], Number(m[2]));
  }
  return samples;
}

async function scrape(url, accept) {
  const res = await fetch(`${url}/metrics`, { headers: accept ? { accept } : {} });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return { type: res.headers.get('content-type'), text, samples: parse(text) };
}

const req = (c, k) => `memoryd_requests_total{command="${c}",class="${k}"}`;
const DAY_MS = 24 * 3600 * 1000;
const isDbError = (l) => l.msg === 'sqlite error' || l.msg === 'postgres error';
const lat = (c) => `memoryd_request_duration_seconds_count{command="${c}"}`;

// Every sample's change from `before` to `after` that is not zero (a gauge or a timing sum
// left out), as an object.
function deltas(before, after) {
  const out = {};
  for (const [k, v] of after) {
    if (/_sum\b|_bucket\{|database_size|open_connections|queue_depth|start_time|build_info/.test(k)) continue;
    const d = v - (before.get(k) ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

async function post(srv, body, tenant = TENANT) {
  return srv.post(typeof body === 'string' ? body : body, { tenant });
}

test('each request is counted by command and status class and timed; writes by batch; the scrape passes promtool check metrics', async (t) => {
  const srv = await startServer({ args: ['--history-versions', '2'] });
  t.after(() => srv.stop());
  const before = (await scrape(srv.url)).samples;
  const statuses = [];
  const run = async (p) => { const r = await p; statuses.push(r.status); return r; };
  // Each awaited before the next: every write is a batch of its own.
  await run(post(srv, { command: 'create', path: '/memories/a.txt', file_text: 'v1\n' }));
  for (let i = 2; i <= 5; i++) await run(post(srv, { command: 'str_replace', path: '/memories/a.txt', old_str: `v${i - 1}`, new_str: `v${i}` }));
  await run(post(srv, { command: 'str_replace', path: '/memories/a.txt', old_str: 'absent', new_str: 'x' }));
  await run(post(srv, { command: 'insert', path: '/memories/a.txt', insert_line: 0, insert_text: 'top' }));
  await run(post(srv, { command: 'view', path: '/memories/a.txt' }));
  await run(post(srv, { command: 'view', path: '/memories/missing.txt' }));
  await run(post(srv, { command: 'rename', old_path: '/memories/a.txt', new_path: '/memories/b.txt' }));
  await run(post(srv, { command: 'delete', path: '/memories/b.txt' }));
  await run(post(srv, '{not json'));
  await run(srv.request('GET', '/v1/history?path=/memories/b.txt', { headers: { 'x-tenant-id': TENANT } }));
  await run(srv.request('GET', '/v1/changes', { headers: { 'x-tenant-id': TENANT } }));
  await run(srv.request('GET', '/healthz'));
  await run(srv.request('GET', '/nowhere'));
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 409, 200, 200, 404, 200, 200, 400, 200, 200, 200, 404]);
  // Retention runs between batches, at most every 100 ms: 6 versions of a.txt with 2 kept
  // (its rename moved them to b.txt, which the delete then versioned once more).
  let after;
  for (let i = 0; i < 100; i++) {
    after = await scrape(srv.url);
    if (after.samples.get('memoryd_pruned_rows_total{kind="versions"}') > 0) break;
    await sleep(50);
  }
  assert.equal(after.type, TEXT_TYPE);
  const d = deltas(before, after.samples);
  const pruned = d['memoryd_pruned_rows_total{kind="versions"}'];
  assert.ok(pruned > 0, 'no version was pruned');
  delete d['memoryd_pruned_rows_total{kind="versions"}'];
  // The views' use times (expiry), written back by the writer when its tick comes: 0 or 1 here.
  assert.ok([undefined, 1].includes(d.memoryd_use_times_written_total), String(d.memoryd_use_times_written_total));
  delete d.memoryd_use_times_written_total;
  const scrapes = d[req('metrics', '2xx')];
  assert.ok(scrapes >= 1);
  assert.deepEqual(d, {
    [req('create', '2xx')]: 1, [lat('create')]: 1,
    [req('str_replace', '2xx')]: 4, [req('str_replace', '4xx')]: 1, [lat('str_replace')]: 5,
    [req('insert', '2xx')]: 1, [lat('insert')]: 1,
    [req('view', '2xx')]: 1, [req('view', '4xx')]: 1, [lat('view')]: 2,
    [req('rename', '2xx')]: 1, [lat('rename')]: 1,
    [req('delete', '2xx')]: 1, [lat('delete')]: 1,
    [req('unknown', '4xx')]: 1, [lat('unknown')]: 1,
    [req('history', '2xx')]: 1, [lat('history')]: 1,
    [req('changes', '2xx')]: 1, [lat('changes')]: 1,
    [req('healthz', '2xx')]: 1, [lat('healthz')]: 1,
    [req('not_found', '4xx')]: 1, [lat('not_found')]: 1,
    [req('metrics', '2xx')]: scrapes, [lat('metrics')]: scrapes,
    // 9 writes (the refused str_replace too: the writer ran it), one batch each.
    memoryd_write_batch_size_count: 9, memoryd_write_commit_duration_seconds_count: 9,
  });
  const s = after.samples;
  assert.equal(s.get('memoryd_write_batch_size_sum'), 9);
  assert.equal(s.get('memoryd_write_batch_size_bucket{le="1"}'), 9);
  assert.equal(s.get('memoryd_write_queue_depth'), 0);
  assert.equal(s.get('memoryd_storage_errors_total'), 0);
  assert.equal(srv.logs.filter(isDbError).length, 0);
  assert.equal(s.get('memoryd_pruned_rows_total{kind="idempotency"}'), 0);
  assert.equal(s.get('memoryd_refused_connections_total{reason="per_address"}'), 0);
  assert.ok(s.get('memoryd_open_connections') >= 1);
  const store = isPg() ? 'postgres' : 'sqlite';
  assert.ok(s.get(`memoryd_database_size_bytes{store="${store}"}`) > 0);
  if (!isPg()) {
    const files = [srv.dbPath, `${srv.dbPath}-wal`].filter((f) => fs.existsSync(f));
    assert.ok(s.get('memoryd_database_size_bytes{store="sqlite"}') <= files.reduce((n, f) => n + fs.statSync(f).size, 0) * 2);
  }
  assert.match(after.text, /^memoryd_build_info\{version="\d+\.\d+\.\d+[^"]*"\} 1$/m);
  // Every command and class is there, zero or not; a histogram's +Inf bucket is its count.
  for (const c of COMMANDS) {
    for (const k of CLASSES) assert.ok(s.has(req(c, k)), req(c, k));
    assert.equal(s.get(`memoryd_request_duration_seconds_bucket{command="${c}",le="+Inf"}`), s.get(lat(c)));
  }
  // No tenant name by default.
  assert.ok(!after.text.includes(TENANT) && !after.text.includes('tenant'));
  // promtool's own linter and parser accept the scrape.
  const check = spawnSync('promtool', ['check', 'metrics'], { input: after.text, encoding: 'utf8' });
  assert.equal(check.error, undefined, 'promtool is missing: apt-get install prometheus (scripts/setup.sh --test)');
  assert.deepEqual([check.status, check.stdout, check.stderr], [0, '', '']);
});

// A request is counted before its answer goes out (src/http/reply.c), so a scrape sent the
// moment the answer is read counts it: no sleep, no retry, every round exact.
test('a scrape made right after an answer always counts it (views, writes, refusals, 404s, /v1)', async (t) => {
  const srv = await startServer();
  t.after(() => srv.stop());
  await post(srv, { command: 'create', path: '/memories/a.txt', file_text: 'a\n' });
  const rounds = [
    [() => post(srv, { command: 'view', path: '/memories/a.txt' }), req('view', '2xx')],
    [() => post(srv, { command: 'view', path: '/memories/none' }), req('view', '4xx')],
    [(i) => post(srv, { command: 'create', path: `/memories/b${i}.txt`, file_text: 'b' }), req('create', '2xx')],
    [() => post(srv, { command: 'create', path: '/memories/a.txt', file_text: 'again' }), req('create', '4xx')],
    [() => srv.request('GET', '/nowhere'), req('not_found', '4xx')],
    [() => srv.request('GET', '/v1/changes', { headers: { 'x-tenant-id': TENANT } }), req('changes', '2xx')],
    [() => srv.request('GET', '/healthz'), req('healthz', '2xx')],
  ];
  let last = (await scrape(srv.url)).samples;
  for (let i = 0; i < 20; i++) {
    for (const [send, key] of rounds) {
      await send(i);
      const now = (await scrape(srv.url)).samples;
      assert.equal(now.get(key) - last.get(key), 1, `round ${i}: ${key}`);
      last = now;
    }
  }
});

test('rows pruned by retention are counted by kind, exactly: versions, change-feed entries, Idempotency-Key answers', async (t) => {
  const srv = await startServer();
  t.after(() => srv.stop());
  const key = (k) => ({ 'idempotency-key': k, 'x-tenant-id': TENANT, 'content-type': 'application/json' });
  const send = (body, k) => srv.request('POST', '/memory', { body: JSON.stringify(body), headers: key(k) });
  assert.equal((await send({ command: 'create', path: '/memories/a.txt', file_text: 'v0' }, 'k-1')).status, 200);
  assert.equal((await send({ command: 'str_replace', path: '/memories/a.txt', old_str: 'v0', new_str: 'v1' }, 'k-2')).status, 200);
  assert.equal((await post(srv, { command: 'create', path: '/memories/b.txt', file_text: 'b' })).status, 200);
  assert.equal((await post(srv, { command: 'delete', path: '/memories/b.txt' })).status, 200);
  const count = (table) => Number(dbSql(srv.dbPath, `SELECT count(*) FROM ${table}`).trim());
  const rows = { versions: count('versions'), changes: count('changes'), idempotency: count('idempotency') };
  assert.deepEqual(rows, { versions: 4, changes: 4, idempotency: 2 });
  const s = (await scrape(srv.url)).samples;
  for (const kind of Object.keys(rows)) assert.equal(s.get(`memoryd_pruned_rows_total{kind="${kind}"}`), 0, kind);
  // Every row made older than what is kept (versions and the feed: 30 days; answers: a day).
  dbSql(srv.dbPath, `UPDATE versions SET time = time - ${31 * DAY_MS}; UPDATE changes SET time = time - ${31 * DAY_MS}; UPDATE idempotency SET time = time - ${2 * DAY_MS};`);
  // Retention runs at least once a second while the writer is idle: wait until it has taken
  // them all (its counters grow just after its commit).
  const pruned = async () => {
    const m = (await scrape(srv.url)).samples;
    return Object.keys(rows).map((kind) => m.get(`memoryd_pruned_rows_total{kind="${kind}"}`));
  };
  for (let i = 0; i < 200 && (Object.keys(rows).some((table) => count(table) > 0) || (await pruned()).join() !== Object.values(rows).join()); i++) await sleep(50);
  assert.deepEqual([count('versions'), count('changes'), count('idempotency')], [0, 0, 0]);
  assert.deepEqual(await pruned(), [rows.versions, rows.changes, rows.idempotency]);
});

test('OpenMetrics when the Accept header asks for it; the text format otherwise; HEAD; other methods 405', async (t) => {
  const srv = await startServer();
  t.after(() => srv.stop());
  for (const accept of [undefined, '*/*', 'text/plain', 'application/openmetrics-text;q=0.1, text/plain']) {
    const r = await scrape(srv.url, accept);
    assert.equal(r.type, TEXT_TYPE, String(accept));
    assert.match(r.text, /^# TYPE memoryd_requests_total counter$/m);
    assert.ok(!r.text.includes('# EOF'));
  }
  for (const accept of ['application/openmetrics-text', PROMETHEUS_ACCEPT]) {
    const r = await scrape(srv.url, accept);
    assert.equal(r.type, OM_TYPE);
    assert.ok(r.text.endsWith('\n# EOF\n'));
    assert.equal(r.text.indexOf('# EOF'), r.text.length - 6);
    assert.match(r.text, /^# TYPE memoryd_requests counter$/m);
    assert.match(r.text, /^# TYPE memoryd_build info$/m);
    assert.match(r.text, /^memoryd_requests_total\{command="metrics",class="2xx"\} [1-9]\d*$/m);
  }
  const head = await srv.request('HEAD', '/metrics');
  assert.deepEqual([head.status, head.headers.get('content-type'), head.text], [200, TEXT_TYPE, '']);
  const bad = await srv.request('POST', '/metrics', { body: 'x' });
  assert.deepEqual([bad.status, bad.headers.get('allow'), bad.text], [405, 'GET, HEAD', '{"error":"method not allowed"}']);
});

const metricsPort = (srv) => srv.logs.find((l) => l.msg === 'listening').metrics_port;

test('--metrics-listen: /metrics on its own port, 404 on the public one; --metrics-tenant-labels counts per tenant', async (t) => {
  const srv = await startServer({ args: ['--metrics-listen', '127.0.0.1:0', '--metrics-tenant-labels'] });
  t.after(() => srv.stop());
  const mport = metricsPort(srv);
  assert.ok(mport > 0 && mport !== srv.port);
  const murl = `http://127.0.0.1:${mport}`;
  const pub = await srv.request('GET', '/metrics');
  assert.deepEqual([pub.status, pub.text], [404, '{"error":"not found: use POST /memory, POST /mcp, GET /healthz, GET /readyz, GET /v1/history, GET /v1/versions/{version}, POST /v1/restore, POST /v1/redact, GET /v1/changes, GET /v1/search, DELETE /v1/memories, GET /v1/expiring, GET /v1/tenants, GET /v1/tenants/{tenant}, PUT /v1/tenants/{tenant}/limits, GET /v1/tenants/{tenant}/export, POST /v1/tenants/{tenant}/import or GET /v1/tenants/{tenant}/secrets (see openapi.yaml)"}']);
  for (let i = 0; i < 3; i++) assert.equal((await post(srv, { command: 'view', path: '/memories' }, 'tenant-a')).status, 200);
  assert.equal((await post(srv, { command: 'create', path: '/memories/x', file_text: 'x' }, 'tenant-b')).status, 200);
  const r = await scrape(murl);
  assert.equal(r.type, TEXT_TYPE);
  const s = r.samples;
  assert.equal(s.get(req('view', '2xx')), 3);
  assert.equal(s.get(req('create', '2xx')), 1);
  // The public port's 404 for /metrics is a request like any other; the metrics port's own
  // scrapes count as `metrics` (none before this one).
  assert.equal(s.get(req('not_found', '4xx')), 1);
  assert.equal(s.get(req('metrics', '2xx')), 0);
  assert.equal(s.get('memoryd_tenant_requests_total{tenant="tenant-a"}'), 3);
  assert.equal(s.get('memoryd_tenant_requests_total{tenant="tenant-b"}'), 1);
  assert.equal(s.get('memoryd_tenant_requests_overflow_total'), 0);
  assert.equal([...s.keys()].filter((k) => k.startsWith('memoryd_tenant_requests_total')).length, 2);
  assert.equal((await scrape(murl)).samples.get(req('metrics', '2xx')), 1);
  // The metrics port serves nothing else.
  const other = await fetch(`${murl}/memory`, { method: 'POST', body: '{}' });
  assert.deepEqual([other.status, await other.text()], [404, '{"error":"not found: this port serves GET /metrics"}']);
  const post405 = await fetch(`${murl}/metrics`, { method: 'POST', body: '{}' });
  assert.deepEqual([post405.status, post405.headers.get('allow'), await post405.text()], [405, 'GET, HEAD', '{"error":"method not allowed"}']);
  const om = await fetch(`${murl}/metrics`, { headers: { accept: 'application/openmetrics-text' } });
  assert.equal(om.headers.get('content-type'), OM_TYPE);
  assert.ok((await om.text()).endsWith('# EOF\n'));
});

test('--metrics-tenant-labels without --metrics-listen, and a malformed --metrics-listen, are refused at start', async () => {
  const r = await runMemoryd(['--metrics-tenant-labels', '--db', path.join(tempDir(), 'x.db')]);
  assert.deepEqual([r.code, r.stdout, r.stderr], [2, '', 'memoryd: --metrics-tenant-labels puts tenant names in /metrics: it needs --metrics-listen, a port of its own (not the public one)\n']);
  const bad = await runMemoryd(['--metrics-listen', 'localhost', '--db', path.join(tempDir(), 'x.db')]);
  assert.deepEqual([bad.code, bad.stdout, bad.stderr], [2, '', "memoryd: invalid value for --metrics-listen: 'localhost' (expected ADDR:PORT)\n"]);
  const host = await runMemoryd(['--metrics-listen', 'localhost:9464', '--port', '0', '--db', path.join(tempDir(), 'x.db')]);
  assert.equal(host.code, 1);
  assert.match(host.stderr, /"msg":"cannot start the HTTP server","detail":"cannot parse the --metrics-listen address 'localhost' \(expected an IPv4 or IPv6 address\)"/);
});

test('refused connections are counted over --max-connections-per-ip; at --max-connections a new connection waits, open connections at the limit', async (t) => {
  const srv = await startServer({ args: ['--max-connections-per-ip', '1', '--max-connections', '3', '--threads', '1', '--metrics-listen', '127.0.0.1:0'] });
  t.after(() => srv.stop());
  const murl = `http://127.0.0.1:${metricsPort(srv)}`;
  const held = [];
  try {
    // One connection from 127.0.0.1 is within the limit; the next is answered 503.
    const first = await RawConn.open(srv.port, { localAddress: '127.0.0.1' });
    held.push(first);
    first.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.equal((await first.responses(1, 10000))[0]?.status, 200);
    const over = await postOnce(srv.port, { command: 'view', path: '/memories' }, { localAddress: '127.0.0.1' });
    assert.equal(over.status, 503);
    let s = (await scrape(murl)).samples;
    assert.equal(s.get('memoryd_refused_connections_total{reason="per_address"}'), 1);
    assert.equal(s.get('memoryd_refused_connections_total{reason="global"}'), 0);
    assert.equal(s.get(req('view', '5xx')), 0); // refused before its command was read
    assert.equal(s.get(req('unknown', '5xx')), 1);
    // The refused connection is closed: one open again, before the next ones.
    for (let i = 0; i < 100 && s.get('memoryd_open_connections') !== 1; i++) {
      await sleep(50);
      s = (await scrape(murl)).samples;
    }
    assert.equal(s.get('memoryd_open_connections'), 1);
    // Two more from other addresses fill --max-connections (3); the fourth is closed unanswered.
    for (const addr of ['127.0.0.2', '127.0.0.3']) {
      const c = await RawConn.open(srv.port, { localAddress: addr });
      held.push(c);
      c.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      assert.equal((await c.responses(1, 10000))[0]?.status, 200);
    }
    s = (await scrape(murl)).samples;
    assert.equal(s.get('memoryd_open_connections'), 3);
    assert.equal(s.get('memoryd_connections_limit'), 3);
    // At the limit libmicrohttpd stops accepting: the next connection waits in the kernel's
    // queue, unanswered, until one closes.
    const fourth = await RawConn.open(srv.port, { localAddress: '127.0.0.4' });
    held.push(fourth);
    fourth.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await sleep(500);
    assert.equal(fourth.data.length, 0);
    held.shift().destroy();
    assert.equal((await fourth.responses(1, 10000))[0]?.status, 200);
    s = (await scrape(murl)).samples;
    assert.equal(s.get('memoryd_refused_connections_total{reason="global"}'), 0);
    assert.equal(s.get('memoryd_refused_connections_total{reason="per_address"}'), 1);
  } finally {
    for (const c of held) c.destroy();
  }
});

test('storage errors are counted, one per database error logged (PostgreSQL: memoryd\'s connections cut by the server)', { skip: !isPg() && 'PostgreSQL only (its variant, pg/integration/metrics): SQLite has no connection to cut' }, async (t) => {
  const srv = await startServer();
  t.after(() => srv.stop());
  assert.equal((await post(srv, { command: 'create', path: '/memories/a.txt', file_text: 'a' })).status, 200);
  assert.equal((await scrape(srv.url)).samples.get('memoryd_storage_errors_total'), 0);
  const cut = psql(srv.dbPath, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'memoryd' AND datname = current_database()");
  assert.ok(Number(cut) >= 1);
  // The next requests find their connections gone: each logs the error and reconnects (a
  // read is tried again at once; a write answers 503 or is run again).
  for (let i = 0; i < 4; i++) await post(srv, { command: 'view', path: '/memories/a.txt' });
  await post(srv, { command: 'create', path: '/memories/b.txt', file_text: 'b' });
  // The counter grows as each line is logged; the log thread writes the lines soon after.
  const s = (await scrape(srv.url)).samples;
  const errors = s.get('memoryd_storage_errors_total');
  assert.ok(errors >= 1);
  await srv.waitForLogs((logs) => logs.filter(isDbError).length >= errors, `${errors} database errors`);
  assert.equal(srv.logs.filter(isDbError).length, errors);
});

// A free TCP port on loopback (for Prometheus's own web listener).
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function promQuery(base, query) {
  const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(query)}`);
  const body = await res.json();
  assert.equal(body.status, 'success', JSON.stringify(body));
  return body.data.result; // [{metric: {...}, value: [time, "v"]}]
}

test('a real Prometheus server scraping memoryd every second reports the counters of the requests made', { timeout: 120000 }, async (t) => {
  const srv = await startServer({ args: ['--metrics-listen', '127.0.0.1:0'] });
  t.after(() => srv.stop());
  const target = `127.0.0.1:${metricsPort(srv)}`;
  // The requests, all answered before Prometheus starts.
  for (let i = 0; i < 3; i++) assert.equal((await post(srv, { command: 'create', path: `/memories/f${i}.txt`, file_text: `${i}` })).status, 200);
  for (let i = 0; i < 2; i++) assert.equal((await post(srv, { command: 'view', path: `/memories/f${i}.txt` })).status, 200);
  assert.equal((await post(srv, { command: 'view', path: '/memories/none' })).status, 404);
  assert.equal((await post(srv, { command: 'delete', path: '/memories/f2.txt' })).status, 200);

  const dir = tempDir('memoryd-prometheus-');
  const webPort = await freePort();
  fs.writeFileSync(path.join(dir, 'prometheus.yml'), [
    'global:', '  scrape_interval: 1s', '  evaluation_interval: 1s',
    'scrape_configs:', '  - job_name: memoryd', '    scrape_interval: 1s', '    scrape_timeout: 1s',
    '    static_configs:', `      - targets: ['${target}']`, ''].join('\n'));
  const logs = [];
  const prom = spawn('prometheus', [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${webPort}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let spawnError = null;
  prom.on('error', (e) => { spawnError = e; });
  prom.stdout.on('data', (b) => logs.push(b.toString()));
  prom.stderr.on('data', (b) => logs.push(b.toString()));
  const exited = new Promise((resolve) => prom.on('close', resolve));
  t.after(async () => {
    prom.kill('SIGTERM');
    const timer = setTimeout(() => prom.kill('SIGKILL'), 10000);
    await exited;
    clearTimeout(timer);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const base = `http://127.0.0.1:${webPort}`;
  // Every scrape is taken after the requests: wait for one, `up` 1 (the OpenMetrics it
  // negotiated was parsed) and memoryd_requests_total there.
  let up = [];
  let created = [];
  for (const end = Date.now() + 60000; Date.now() < end;) {
    assert.equal(spawnError, null, `prometheus could not be started (apt-get install prometheus): ${spawnError}`);
    try {
      up = await promQuery(base, 'up{job="memoryd"}');
      created = await promQuery(base, 'memoryd_requests_total{command="create",class="2xx"}');
    } catch { /* not listening yet */ }
    if (up.length && up[0].value[1] === '1' && created.length) break;
    await sleep(250);
  }
  assert.equal(up[0]?.value[1], '1', `prometheus never scraped memoryd:\n${logs.join('')}`);
  const value = async (q) => {
    const r = await promQuery(base, q);
    assert.equal(r.length, 1, `${q}: ${JSON.stringify(r)}`);
    return Number(r[0].value[1]);
  };
  assert.equal(await value('memoryd_requests_total{command="create",class="2xx"}'), 3);
  assert.equal(await value('memoryd_requests_total{command="view",class="2xx"}'), 2);
  assert.equal(await value('memoryd_requests_total{command="view",class="4xx"}'), 1);
  assert.equal(await value('memoryd_requests_total{command="delete",class="2xx"}'), 1);
  assert.equal(await value('sum(memoryd_requests_total{command!="metrics"})'), 7);
  assert.equal(await value('memoryd_request_duration_seconds_count{command="view"}'), 3);
  assert.equal(await value('memoryd_write_batch_size_count'), 4);
  assert.equal(await value('memoryd_write_batch_size_sum'), 4);
  assert.equal(await value('memoryd_storage_errors_total'), 0);
  assert.equal(await value('count(memoryd_build_info)'), 1);
});
