#!/usr/bin/env node
// memoryd-mcp-bridge: memoryd's MCP endpoint (Streamable HTTP, POST /mcp) for an MCP client
// that speaks only stdio, such as Claude Desktop. It reads JSON-RPC messages, one per line,
// on standard input, posts each to memoryd, and writes memoryd's answers, one per line, on
// standard output. Node.js 18 or later, no dependency.
//
//   node memoryd-mcp-bridge.mjs URL          URL: memoryd's MCP endpoint, e.g.
//                                            http://127.0.0.1:8080/mcp
// Environment: MEMORYD_API_KEY (sent as Authorization: Bearer, for memoryd --auth keys),
// MEMORYD_TENANT (sent as X-Tenant-ID, without keys).
//
// It keeps the session memoryd opens at initialize (Mcp-Session-Id) and sends the
// negotiated MCP-Protocol-Version. Every tools/call gets an idempotency key of its own in
// params._meta["memoryd/idempotency-key"] (unless it has one), so that when memoryd cannot be
// reached or answers 502, 503 or 504 the bridge can send it again (up to 4 tries, 0.5 s, 1 s,
// 2 s apart, or as Retry-After says) and memoryd applies it once. Anything it cannot deliver
// is answered with a JSON-RPC error, so the client never waits forever. Diagnostics go to
// standard error.
import { randomUUID } from 'node:crypto';
import readline from 'node:readline';

const url = process.argv[2];
if (!url || !/^https?:\/\//.test(url)) {
  process.stderr.write('usage: memoryd-mcp-bridge URL (memoryd\'s MCP endpoint, e.g. http://127.0.0.1:8080/mcp)\n');
  process.exit(2);
}
const KEY_META = 'memoryd/idempotency-key';
const TRIES = 4;
let session = null;
let version = null;

const headers = () => {
  const h = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (process.env.MEMORYD_API_KEY) h.authorization = `Bearer ${process.env.MEMORYD_API_KEY}`;
  if (process.env.MEMORYD_TENANT) h['x-tenant-id'] = process.env.MEMORYD_TENANT;
  if (session) h['mcp-session-id'] = session;
  if (version) h['mcp-protocol-version'] = version;
  return h;
};
const write = (msg) => process.stdout.write(`${JSON.stringify(msg)}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Post one message; the answer's parsed body (null for 202), or throws after the last try.
async function post(msg) {
  const retryable = msg.method === 'tools/call' || msg.method === 'initialize' || msg.method === 'ping' || msg.method === 'tools/list';
  for (let attempt = 1; ; attempt++) {
    let res;
    try {
      res = await fetch(url, { method: 'POST', headers: headers(), body: JSON.stringify(msg) });
    } catch (err) {
      if (!retryable || attempt === TRIES) throw new Error(`memoryd cannot be reached at ${url}: ${err.cause?.code ?? err.message}`);
      await sleep(250 * 2 ** attempt);
      continue;
    }
    if (retryable && [502, 503, 504].includes(res.status) && attempt < TRIES) {
      const after = Number(res.headers.get('retry-after'));
      await res.arrayBuffer();
      await sleep(after > 0 && after <= 30 ? after * 1000 : 250 * 2 ** attempt);
      continue;
    }
    if (msg.method === 'initialize' && res.ok) session = res.headers.get('mcp-session-id');
    const text = await res.text();
    if (res.status === 202 || !text) return null;
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`memoryd answered ${res.status} with a body that is not JSON`);
    }
  }
}

async function handle(line) {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    write({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the line is not JSON' } });
    return;
  }
  if (msg && msg.method === 'tools/call' && msg.params && typeof msg.params === 'object') {
    const meta = msg.params._meta && typeof msg.params._meta === 'object' ? msg.params._meta : {};
    if (meta[KEY_META] === undefined) msg.params._meta = { ...meta, [KEY_META]: randomUUID() };
  }
  try {
    const answer = await post(msg);
    if (msg.method === 'initialize' && answer?.result?.protocolVersion) version = answer.result.protocolVersion;
    if (answer) write(answer);
  } catch (err) {
    process.stderr.write(`memoryd-mcp-bridge: ${err.message}\n`);
    if (msg && msg.id !== undefined && msg.id !== null) write({ jsonrpc: '2.0', id: msg.id, error: { code: -32000, message: err.message } });
  }
}

// In order: each message is answered before the next is sent (MCP clients wait anyway).
let queue = Promise.resolve();
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  if (line.trim()) queue = queue.then(() => handle(line));
});
rl.on('close', async () => {
  await queue;
  // End the session, as a client that goes away should.
  if (session) await fetch(url, { method: 'DELETE', headers: headers() }).catch(() => {});
});
