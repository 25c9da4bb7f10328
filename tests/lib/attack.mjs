// Helpers for the robustness tests that play hostile clients against a live memoryd
// (tests/robustness/hostile.test.mjs, isolation.test.mjs). Real sockets on loopback, no mocks.
//
//   RawConn.open(port, o)     one raw TCP connection (o.localAddress: its source address, e.g.
//                             127.0.0.2 to play another client): write(bytes), trickle(bytes, everyMs),
//                             responses(n, timeoutMs) (parsed HTTP/1.1 responses, in order),
//                             closed(timeoutMs) (resolves {closed, atMs, error} — closed by the
//                             server or not within the time), destroy().
//   exchange(port, bytes, o)  open, write, collect until the server closes or o.waitMs passes:
//                             {responses, rest, closed, error}.
//   httpRequest(port, o)      an HTTP request of exactly these header lines (raw, so duplicated,
//                             odd-cased or odd-spaced header names go out as written) and body;
//                             `Connection: close`; resolves the first parsed response.
//   parseResponses(buf)       parse consecutive HTTP/1.1 responses (Content-Length framed) from
//                             a Buffer: {responses: [{status, statusLine, headers, body, text}],
//                             rest}.
//   postOnce(port, body, o)   POST /memory on a connection of its own (Connection: close, so no
//                             keep-alive socket can race the server's idle timeout); body is an
//                             object (sent as JSON), a string or a Buffer; o.tenant sets
//                             X-Tenant-ID, o.headers adds headers, o.localAddress the source
//                             address. Resolves {status, headers,
//                             text, json}.
//   startGoodClient(port, o)  a well-behaved client on one keep-alive connection that runs real
//                             create / view / str_replace / view cycles with exact expected
//                             answers until stop(); stop() resolves {requests, maxMs, p99Ms,
//                             failures} (a failure is any wrong answer, error or request slower
//                             than o.limitMs).
//   procMemory(pid)           {rssKiB, hwmKiB} from /proc/<pid>/status.
//   sleep(ms)
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function procMemory(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status)[1]);
  return { rssKiB: kib('VmRSS'), hwmKiB: kib('VmHWM') };
}

// Consecutive responses in buf; each needs a Content-Length (memoryd and libmicrohttpd always
// send one) except 1xx interim responses. An incomplete tail is left in `rest`.
export function parseResponses(buf) {
  const responses = [];
  let off = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', off, 'latin1');
    if (end < 0) break;
    const head = buf.subarray(off, end).toString('latin1').split('\r\n');
    const statusLine = head[0];
    const m = /^HTTP\/1\.[01] (\d{3}) /.exec(statusLine);
    if (!m) break;
    const headers = {};
    for (const line of head.slice(1)) {
      const i = line.indexOf(':');
      const k = line.slice(0, i).toLowerCase();
      const v = line.slice(i + 1).trim();
      headers[k] = k in headers ? `${headers[k]}, ${v}` : v;
    }
    const status = Number(m[1]);
    if (status < 200) {
      responses.push({ status, statusLine, headers, body: Buffer.alloc(0), text: '' });
      off = end + 4;
      continue;
    }
    const len = Number(headers['content-length'] ?? NaN);
    if (!Number.isInteger(len) || end + 4 + len > buf.length) break;
    const body = buf.subarray(end + 4, end + 4 + len);
    responses.push({ status, statusLine, headers, body, text: body.toString('utf8') });
    off = end + 4 + len;
  }
  return { responses, rest: buf.subarray(off) };
}

export class RawConn {
  // o.localAddress: the source address (another 127.x.y.z plays another client).
  static open(port, o = {}) {
    return new Promise((resolve, reject) => {
      const c = new RawConn(port, o);
      c.sock.once('connect', () => resolve(c));
      c.sock.once('error', (e) => { if (!c.connected) reject(e); });
    });
  }

  constructor(port, { localAddress } = {}) {
    this.t0 = Date.now();
    this.data = Buffer.alloc(0);
    this.error = null;
    this.closedAt = null;
    this.connected = false;
    this.waiters = new Set();
    this.timer = null;
    this.sock = net.connect({ port, host: '127.0.0.1', localAddress });
    this.sock.setNoDelay(true);
    this.sock.on('connect', () => { this.connected = true; });
    this.sock.on('data', (d) => { this.data = Buffer.concat([this.data, d]); this.wake(); });
    this.sock.on('error', (e) => { this.error = e.code || String(e); });
    this.sock.on('close', () => { this.closedAt = Date.now(); this.stopTrickle(); this.wake(); });
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  // Resolves when check() returns a value other than undefined, or with onTimeout() after ms.
  waitFor(check, ms, onTimeout) {
    return new Promise((resolve) => {
      let timer = null;
      const done = (v) => { this.waiters.delete(poll); clearTimeout(timer); resolve(v); };
      const poll = () => { const v = check(); if (v !== undefined) done(v); };
      this.waiters.add(poll);
      timer = setTimeout(() => done(onTimeout()), ms);
      poll();
    });
  }

  write(bytes) {
    if (!this.sock.destroyed) this.sock.write(bytes);
  }

  // Send bytes one at a time, one every everyMs (a slowloris); resolves when all are sent or
  // the connection ended.
  trickle(bytes, everyMs) {
    const buf = Buffer.from(bytes);
    let i = 0;
    return new Promise((resolve) => {
      this.trickleDone = resolve;
      this.timer = setInterval(() => {
        if (i >= buf.length || this.sock.destroyed || this.closedAt) return this.stopTrickle();
        this.sock.write(buf.subarray(i, i + 1));
        i++;
      }, everyMs);
    });
  }

  stopTrickle() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.trickleDone) this.trickleDone();
    this.trickleDone = null;
  }

  // The first n complete responses (fewer if the server closes or the time runs out).
  responses(n, ms) {
    const got = () => parseResponses(this.data).responses;
    return this.waitFor(() => {
      const r = got();
      return r.length >= n || this.closedAt ? r : undefined;
    }, ms, got);
  }

  // {closed, atMs (since open), error}: whether the server closed the connection within ms.
  closed(ms) {
    const state = () => ({ closed: this.closedAt !== null, atMs: this.closedAt === null ? null : this.closedAt - this.t0, error: this.error });
    return this.waitFor(() => (this.closedAt !== null ? state() : undefined), ms, state);
  }

  destroy() {
    this.stopTrickle();
    this.sock.destroy();
  }
}

// Write bytes (a Buffer, a string or an array of them, written in order) on a fresh
// connection; collect what comes back until the server closes it or waitMs passes.
export async function exchange(port, bytes, { waitMs = 5000, endAfterWrite = false } = {}) {
  const c = await RawConn.open(port);
  for (const b of [].concat(bytes)) c.write(b);
  if (endAfterWrite) c.sock.end();
  const state = await c.closed(waitMs);
  c.destroy();
  const { responses, rest } = parseResponses(c.data);
  return { responses, rest, closed: state.closed, atMs: state.atMs, error: state.error, raw: c.data };
}

// One request with exactly these header lines, e.g. [['X-Tenant-ID', 'acme'], ['x-tenant-id', 'b']]
// or raw strings ('X-Tenant-ID : acme') — sent as written, no normalisation.
export async function httpRequest(port, { method = 'POST', path = '/memory', headers = [], body = '', waitMs = 5000 } = {}) {
  const payload = Buffer.from(body);
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1'];
  for (const h of headers) lines.push(typeof h === 'string' ? h : `${h[0]}: ${h[1]}`);
  lines.push(`Content-Length: ${payload.length}`, 'Connection: close', '', '');
  const r = await exchange(port, [Buffer.from(lines.join('\r\n'), 'latin1'), payload], { waitMs });
  return r.responses[0] ?? null;
}

export function postOnce(port, body, { tenant, headers = {}, accept, localAddress } = {}) {
  return new Promise((resolve, reject) => {
    const payload = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const h = { 'content-type': 'application/json', 'content-length': payload.length, ...headers };
    if (tenant !== undefined) h['x-tenant-id'] = tenant;
    if (accept) h.accept = accept;
    const req = http.request({ host: '127.0.0.1', port, path: '/memory', method: 'POST', agent: false, headers: h, localAddress }, (res) => {
      const parts = [];
      res.on('data', (c) => parts.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json = null;
        try { json = JSON.parse(text); } catch { /* text/plain or not JSON */ }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    req.setTimeout(60000, () => req.destroy(new Error('no answer within 60 s (safety net)')));
    req.end(payload);
  });
}

const percentile = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : 0);

// A well-behaved client: one keep-alive connection, cycles of
//   create {prefix}/c{i}.txt  -> "File created successfully at: ..."
//   view                      -> its two lines
//   str_replace "beta" -> "BETA {i}" -> the exact snippet
//   view                      -> the edited lines
// Every answer is compared exactly; any difference, error or request slower than limitMs is
// recorded as a failure (the loop goes on, so one slow answer does not hide later ones).
export function startGoodClient(port, { tenant = 'good', prefix = '/memories/good', limitMs = 5000, name = 'good' } = {}) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const latencies = [];
  const failures = [];
  let stopping = false;
  let requests = 0;
  const post = (cmd) => new Promise((resolve, reject) => {
    const body = JSON.stringify(cmd);
    const t0 = process.hrtime.bigint();
    const req = http.request({
      host: '127.0.0.1', port, path: '/memory', method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-tenant-id': tenant },
    }, (res) => {
      const parts = [];
      res.on('data', (c) => parts.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        latencies.push(ms);
        requests++;
        resolve({ status: res.statusCode, text: Buffer.concat(parts).toString('utf8'), ms });
      });
    });
    req.on('error', reject);
    req.setTimeout(limitMs * 4, () => req.destroy(new Error(`no answer within ${limitMs * 4} ms`)));
    req.end(body);
  });
  // `file`: for a view of a file, its whole content, whose ETag the JSON carries.
  const expect = async (cmd, status, content, file) => {
    const r = await post(cmd);
    const etag = file === undefined ? {} : { etag: `"sha256-${createHash('sha256').update(file).digest('hex')}"` };
    const want = JSON.stringify({ type: 'tool_result', content, is_error: status !== 200, ...etag });
    if (r.status !== status || r.text !== want) {
      failures.push(`${name}: ${JSON.stringify(cmd)} -> ${r.status} ${r.text.slice(0, 300)} (expected ${status} ${want.slice(0, 300)})`);
    }
    if (r.ms > limitMs) failures.push(`${name}: ${cmd.command} took ${r.ms.toFixed(0)} ms (liveness bound ${limitMs} ms)`);
  };
  const fileView = (p, lines) => [`Here's the content of ${p} with line numbers:`, ...lines.map((l, i) => `${String(i + 1).padStart(6)}\t${l}`)].join('\n');
  const loop = (async () => {
    for (let i = 0; !stopping; i++) {
      const p = `${prefix}/c${i}.txt`;
      try {
        await expect({ command: 'create', path: p, file_text: `alpha ${i}\nbeta\n` }, 200, `File created successfully at: ${p}`);
        await expect({ command: 'view', path: p }, 200, fileView(p, [`alpha ${i}`, 'beta', '']), `alpha ${i}\nbeta\n`);
        await expect({ command: 'str_replace', path: p, old_str: 'beta', new_str: `BETA ${i}` }, 200,
          `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n${fileView(p, [`alpha ${i}`, `BETA ${i}`, '']).split('\n').slice(1).join('\n')}`);
        await expect({ command: 'view', path: p }, 200, fileView(p, [`alpha ${i}`, `BETA ${i}`, '']), `alpha ${i}\nBETA ${i}\n`);
      } catch (e) {
        failures.push(`${name}: ${e.message}`);
        await sleep(50);
      }
    }
  })();
  return {
    get requests() { return requests; },
    async stop() {
      stopping = true;
      await loop;
      agent.destroy();
      const sorted = [...latencies].sort((a, b) => a - b);
      return { requests, maxMs: sorted.at(-1) ?? 0, p99Ms: percentile(sorted, 99), failures };
    },
  };
}
