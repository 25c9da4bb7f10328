// Start and drive a real memoryd process for tests: real HTTP on loopback,
// a real SQLite file in a fresh temp directory.
//
//   const srv = await startServer();            // --port 0, temp db
//   const r = await srv.post({command: 'view', path: '/memories'});
//   r.status, r.text (raw body), r.json (parsed or null), r.headers
//   await srv.stop();                           // SIGTERM, asserts exit 0
//   startServer({ bare: true, cwd })            // memoryd's own defaults: no --port/--db,
//                                               // no MEMORYD_* variable, run in `cwd`
//
// With MD_TEST_PG set (the PostgreSQL variant of a test, tests/lib/pg.mjs), each server gets a
// fresh database on the suite's PostgreSQL instead of a SQLite file: srv.dbPath is then its
// URI, and startServer({ db: srv.dbPath }) starts another memoryd on the same data.
//
// The binary comes from MD_TEST_BIN (set by ctest), else build/memoryd.
// `wrapper` (or the environment's MD_TEST_WRAPPER, split on spaces) is a
// command that runs memoryd in the same process (it must exec it), e.g.
// ['setpriv', '--reuid=nobody', ...] or a valgrind command line.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createDatabase, pgCluster } from './pg.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const BIN = path.resolve(process.env.MD_TEST_BIN || path.join(here, '../../build/memoryd'));

export function tempDir(prefix = 'memoryd-test-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

const ENV_WRAPPER = (process.env.MD_TEST_WRAPPER ?? '').split(' ').filter(Boolean);
// MD_TEST_TEMPLATE_DB (set by scripts/valgrind.sh): a SQLite database as memoryd makes a fresh
// one, every migration applied. A server started here without a database of its own starts on a
// copy of it, so that the migrations, the same for every new database and a quarter of a second
// apiece under valgrind, are not run again for every such server; a test that names its
// database, or starts memoryd bare or through a wrapper of its own, gets memoryd's own first
// start.
const TEMPLATE_DB = process.env.MD_TEST_TEMPLATE_DB;

// The suite's logs (MD_SUITE_LOG_DIR, set by ctest): the stderr of every memoryd started
// here, and the secrets the tests made (the API keys `memoryd keys create` printed, and what
// registerSecret was given), which tests/logs/no-secrets.mjs looks for in those logs once the
// whole suite has run.
const SUITE_LOG_DIR = process.env.MD_SUITE_LOG_DIR;
let suiteLogs = 0;
function suiteLogFile(kind) {
  fs.mkdirSync(SUITE_LOG_DIR, { recursive: true });
  return path.join(SUITE_LOG_DIR, `${kind}-${process.pid}-${suiteLogs++}.log`);
}

// Record a secret (a key, a file content) that must never appear in a log line.
export function registerSecret(secret) {
  if (!SUITE_LOG_DIR || !secret) return;
  fs.mkdirSync(SUITE_LOG_DIR, { recursive: true });
  fs.appendFileSync(path.join(SUITE_LOG_DIR, 'secrets.txt'), `${secret}\n`);
}

// [file, args] to spawn memoryd with `args`, through the given wrapper, then the
// environment's (e.g. setpriv, then valgrind), if any.
function command(args, wrapper = [], envWrapper = ENV_WRAPPER) {
  const w = [...wrapper, ...envWrapper];
  return w.length ? [w[0], [...w.slice(1), BIN, ...args]] : [BIN, args];
}
// The same for a test that spawns memoryd itself: spawn(...memorydCommand(args)).
export const memorydCommand = (args, wrapper) => command(args, wrapper);

export async function startServer({ args = [], env = {}, db, wrapper, startTimeoutMs = 20000, bare = false, cwd } = {}) {
  const pg = !bare && pgCluster();
  const dir = cwd ?? (db && !pg ? path.dirname(db) : tempDir());
  const dbPath = db ?? (pg ? await createDatabase(pg) : path.join(dir, 'memoryd.db'));
  if (TEMPLATE_DB && !db && !pg && !bare && !wrapper && !fs.existsSync(dbPath)) fs.copyFileSync(TEMPLATE_DB, dbPath);
  const inherited = bare ? Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MEMORYD_'))) : process.env;
  const childEnv = { ...inherited, ...env };
  const [file, argv] = command(bare ? args : ['--port', '0', '--db', dbPath, ...args], wrapper);
  const proc = spawn(file, argv, {
    env: childEnv,
    cwd,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const logs = [];
  const rawStderr = [];
  let exited = null;
  // 'close' (exit and stderr drained), so the logs are whole when a test reads them after exit.
  const exitPromise = new Promise((resolve) => {
    proc.on('close', (code, signal) => {
      exited = { code, signal };
      resolve(exited);
    });
  });
  const rl = readline.createInterface({ input: proc.stderr });
  const sink = SUITE_LOG_DIR ? fs.createWriteStream(suiteLogFile('memoryd')) : null;
  if (sink) {
    rl.on('line', (line) => sink.write(`${line}\n`));
    rl.on('close', () => sink.end());
  }
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`memoryd did not start:\n${rawStderr.join('\n')}`)), startTimeoutMs);
    rl.on('line', (line) => {
      rawStderr.push(line);
      let obj = null;
      try { obj = JSON.parse(line); } catch { /* sanitizer output etc. */ }
      if (obj) logs.push(obj);
      if (obj && obj.msg === 'listening') { clearTimeout(timer); resolve(obj.port); }
    });
    exitPromise.then((e) => { clearTimeout(timer); reject(new Error(`memoryd exited (${JSON.stringify(e)}) before listening:\n${rawStderr.join('\n')}`)); });
  });
  const url = `http://127.0.0.1:${port}`;

  async function request(method, urlPath, { body, headers = {} } = {}) {
    const res = await fetch(url + urlPath, { method, body, headers });
    const text = await res.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* text/plain */ }
    return { status: res.status, headers: res.headers, text, json };
  }

  // POST /memory. `body` may be an object (JSON-encoded) or a raw string.
  async function post(body, { headers = {}, tenant, accept } = {}) {
    const h = { 'content-type': 'application/json', ...headers };
    if (tenant !== undefined) h['x-tenant-id'] = tenant;
    if (accept) h.accept = accept;
    return request('POST', '/memory', { body: typeof body === 'string' ? body : JSON.stringify(body), headers: h });
  }

  async function stop({ expectCode = 0, timeoutMs = 20000 } = {}) {
    if (!exited) proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    const e = await exitPromise;
    clearTimeout(timer);
    if (expectCode !== null && e.code !== expectCode) {
      throw new Error(`memoryd exited with ${JSON.stringify(e)}, expected code ${expectCode}:\n${rawStderr.slice(-60).join('\n')}`);
    }
    return e;
  }

  // Log lines reach stderr from memoryd's log thread a few milliseconds after the request
  // they describe was answered: wait until `pred(logs)` holds (at most `ms`).
  async function waitForLogs(pred, what, ms = 5000) {
    for (const end = Date.now() + ms; Date.now() < end;) {
      if (pred(logs)) return logs;
      await new Promise((r) => setTimeout(r, 10));
    }
    if (pred(logs)) return logs;
    throw new Error(`log lines never showed ${what} within ${ms} ms:\n${rawStderr.slice(-40).join('\n')}`);
  }

  async function kill() {
    if (!exited) proc.kill('SIGKILL');
    return exitPromise;
  }

  return { port, url, dbPath, dir, proc, logs, rawStderr, request, post, stop, kill, waitForLogs, exited: () => exited };
}

// Run `fn(server)` against a server started with `opts` (startServer), stopped and its directory
// removed afterwards.
export async function withServer(opts, fn) {
  const s = await startServer(opts);
  try {
    await fn(s);
  } finally {
    await s.stop();
    fs.rmSync(s.dir, { recursive: true, force: true });
  }
}

// A new API key of `scope` for `tenant` on the server's database (memoryd keys create): the key.
// `extra`: more arguments of keys create (e.g. ['--path', '/memories/x']).
export async function createKey(s, tenant, scope, extra = []) {
  const r = await runMemoryd(['keys', 'create', '--db', s.dbPath, '--tenant', tenant, '--scope', scope, ...extra]);
  if (r.code !== 0) throw new Error(`memoryd keys create: ${r.stderr}`);
  return r.stdout.split('\n')[0];
}

// Run a CLI invocation of memoryd to completion: {code, stdout, stderr}. `unwrapped`: without the
// environment's wrapper (valgrind), for a test that repeats a command already checked under it.
export function runMemoryd(args, { env = {}, wrapper, unwrapped = false } = {}) {
  return new Promise((resolve) => {
    const [file, argv] = unwrapped ? command(args, wrapper, []) : command(args, wrapper);
    const p = spawn(file, argv, { env: { ...process.env, ...env } });
    let stdout = '', stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    // 'close', not 'exit': on 'exit' the pipes may still hold output not yet read.
    p.on('close', (code) => {
      if (SUITE_LOG_DIR) {
        fs.writeFileSync(suiteLogFile('cli'), stderr);
        if (code === 0 && args[0] === 'keys' && args[1] === 'create') registerSecret(stdout.split('\n')[0]);
      }
      resolve({ code, stdout, stderr });
    });
  });
}
