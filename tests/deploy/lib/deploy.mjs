// Helpers for the deployment tests (tests/deploy/*.test.mjs): the files under docker/,
// free loopback ports, a raw HTTP client, and child processes that are always cleaned up.
//
//   REPO                      the source tree (MD_SOURCE_DIR, else two levels up)
//   readDocker(name)          text of docker/<name>
//   substitute(text, pairs)   replace each [from, to, count] exactly `count` times (else throw)
//   freePort(host)            a port nothing listens on right now
//   httpRequest(opts)         {status, headers, rawHeaders, text, json} over node:http
//   spawnTracked(cmd, args)   spawn in its own process group; killed (the group) at exit
//   run(cmd, args, opts)      run to completion: {code, signal, stdout, stderr}
//   waitFor(fn, what, ms)     poll fn() until it returns a truthy value
//   memorydRequests(md, tenant)  the POST /memory lines of memoryd's log (of one tenant)
//   memorydLogSync(md)        wait until memoryd's log holds every request answered so far
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO = process.env.MD_SOURCE_DIR || path.resolve(here, '../../..');
export const DOCKER = path.join(REPO, 'docker');

export function readDocker(name) {
  return fs.readFileSync(path.join(DOCKER, name), 'utf8');
}

// Replace `from` (a string) by `to`, asserting it occurs exactly `count` times: a test copy
// of a committed file differs from it only where the test says so.
export function substitute(text, pairs) {
  let out = text;
  for (const [from, to, count = 1] of pairs) {
    const n = out.split(from).length - 1;
    if (n !== count) throw new Error(`expected ${count} occurrence(s) of ${JSON.stringify(from)}, found ${n}`);
    out = out.split(from).join(to);
  }
  return out;
}

export function freePort(host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// One HTTP request with full control of headers (arrays send a header several times).
// `agent` defaults to a fresh connection per request.
export function httpRequest({ host = '127.0.0.1', port, method = 'GET', path: p = '/', headers = {}, body, agent = false, localAddress, timeoutMs = 15000 }) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port, method, path: p, headers, agent, localAddress }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json = null;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, headers: res.headers, rawHeaders: res.rawHeaders, text, json });
      });
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer in ${timeoutMs} ms: ${method} ${p}`)));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const tracked = new Set();
process.on('exit', () => {
  for (const p of tracked) {
    try { process.kill(-p.pid, 'SIGKILL'); } catch { /* gone */ }
  }
});

// Spawn a long-running process in a process group of its own; at exit of this test
// process the whole group is killed, whatever happened. Returns the ChildProcess with
// .out/.err (collected text), .exited (a promise of {code, signal}, once the output is
// all read) and .stop(signal, ms).
export function spawnTracked(cmd, args, opts = {}) {
  const p = spawn(cmd, args, { ...opts, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  tracked.add(p);
  p.out = '';
  p.err = '';
  p.stdout.on('data', (d) => { p.out += d; });
  p.stderr.on('data', (d) => { p.err += d; });
  // 'close' (the leader exited and its pipes are drained), so .out/.err are whole by then.
  p.exited = new Promise((resolve) => p.on('close', (code, signal) => {
    tracked.delete(p);
    resolve({ code, signal });
  }));
  p.stop = async (signal = 'SIGTERM', ms = 10000) => {
    if (p.exitCode === null && p.signalCode === null) {
      try { process.kill(p.pid, signal); } catch { /* gone */ }
    }
    const timer = setTimeout(() => { try { process.kill(-p.pid, 'SIGKILL'); } catch { /* gone */ } }, ms);
    const e = await p.exited;
    clearTimeout(timer);
    // Whatever the leader did, nothing of its group outlives it.
    try { process.kill(-p.pid, 'SIGKILL'); } catch { /* gone */ }
    return e;
  };
  return p;
}

export function run(cmd, args, { input, env, cwd, timeoutMs = 300000 } = {}) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { env: env ?? process.env, cwd, detached: true });
    tracked.add(p);
    let stdout = '', stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => { try { process.kill(-p.pid, 'SIGKILL'); } catch { /* gone */ } }, timeoutMs);
    p.on('error', (err) => { clearTimeout(timer); tracked.delete(p); resolve({ code: null, signal: null, stdout, stderr: stderr + String(err) }); });
    p.on('close', (code, signal) => { clearTimeout(timer); tracked.delete(p); resolve({ code, signal, stdout, stderr }); });
    if (input !== undefined) p.stdin.end(input); else p.stdin.end();
  });
}

export async function waitFor(fn, what, ms = 10000) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function canConnect(port, host = '127.0.0.1') {
  return new Promise((resolve) => {
    const s = net.connect({ port, host }, () => { s.destroy(); resolve(true); });
    s.on('error', () => resolve(false));
  });
}

// memoryd's log lines for the POST /memory requests it answered, optionally of one tenant
// (`md` from tests/lib/server.mjs startServer).
export function memorydRequests(md, tenant) {
  return md.logs.filter((l) => l.msg === 'request' && l.route === '/memory' && (tenant === undefined || l.tenant === tenant));
}

// memoryd logs a request after answering it and the line reaches us through a pipe: a
// direct request for an unknown path (404, logged) after the others, awaited in the log;
// since memoryd's two worker threads may log two requests in either order, the lines must
// then also have stopped coming for 100 ms (a request is logged microseconds after its
// answer): then the lines of every request answered before are in md.logs.
export async function memorydLogSync(md) {
  const barriers = () => md.logs.filter((l) => l.msg === 'request' && l.route === 'other').length;
  const n = barriers();
  const r = await md.request('GET', '/log-barrier');
  if (r.status !== 404) throw new Error(`GET /log-barrier: ${r.status}, expected 404`);
  await waitFor(() => barriers() > n, 'memoryd\'s log line');
  for (let seen = -1; seen !== md.logs.length;) {
    seen = md.logs.length;
    await new Promise((res) => setTimeout(res, 100));
  }
}
