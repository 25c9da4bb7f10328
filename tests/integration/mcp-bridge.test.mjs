// clients/mcp-bridge: memoryd's MCP endpoint for a stdio MCP client (Claude Desktop). The MCP
// SDK's stdio client starts the bridge as clients/mcp-bridge/README.md's Claude Desktop
// configuration says (its JSON read from the README: command, args, env), against a live
// memoryd: tools/list shows both tools, tools/call writes and reads in the configured tenant;
// with --auth keys, MEMORYD_API_KEY; a tools/call whose answer is lost on the way (a proxy cuts
// the connection after memoryd answered) is sent again by the bridge and applied once; memoryd
// unreachable: a JSON-RPC error, not a hang.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { runMemoryd, startServer } from '../lib/server.mjs';
import { ROOT } from '../lib/vocabulary.mjs';

const BRIDGE = path.join(ROOT, 'clients/mcp-bridge/memoryd-mcp-bridge.mjs');

// The README's configuration: {command, args, env} of mcpServers.memory.
function documented() {
  const readme = fs.readFileSync(path.join(ROOT, 'clients/mcp-bridge/README.md'), 'utf8');
  const block = /```json\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, 'no json block in clients/mcp-bridge/README.md');
  return JSON.parse(block[1]).mcpServers.memory;
}

// An SDK client on the bridge, started as the configuration says, pointed at `url`.
async function viaBridge(url, env) {
  const conf = documented();
  assert.equal(conf.command, 'node');
  assert.equal(conf.args[0], '/path/to/memoryd/clients/mcp-bridge/memoryd-mcp-bridge.mjs');
  const args = [BRIDGE, ...conf.args.slice(1).map((a) => a.replace('http://127.0.0.1:8080/mcp', url))];
  const transport = new StdioClientTransport({ command: process.execPath, args, env: { PATH: process.env.PATH, ...(env ?? conf.env) }, stderr: 'pipe' });
  const client = new Client({ name: 'claude-desktop-like', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const text = (r) => r.content[0].text;

test('the documented Claude Desktop configuration: both tools, writes and reads in its tenant', async (t) => {
  const srv = await startServer();
  t.after(() => srv.stop());
  const client = await viaBridge(`${srv.url}/mcp`);
  t.after(() => client.close());
  const tools = await client.listTools();
  assert.deepEqual(tools.tools.map((x) => x.name), ['memory', 'memory_search']);
  let r = await client.callTool({ name: 'memory', arguments: { command: 'create', path: '/memories/desk.md', file_text: 'from the desktop\n' } });
  assert.deepEqual([text(r), r.isError], ['File created successfully at: /memories/desk.md', false]);
  r = await client.callTool({ name: 'memory_search', arguments: { q: 'desktop' } });
  assert.match(text(r), /\/memories\/desk\.md/);
  // In the configured tenant (alice), as POST /memory sees it.
  const seen = await srv.post({ command: 'view', path: '/memories/desk.md' }, { tenant: 'alice' });
  assert.equal(seen.json.content, 'Here\'s the content of /memories/desk.md with line numbers:\n     1\tfrom the desktop\n     2\t');
  r = await client.callTool({ name: 'memory', arguments: { command: 'view', path: '/memories/nope' } });
  assert.deepEqual([text(r), r.isError], ['The path /memories/nope does not exist. Please provide a valid path.', true]);
});

test('with --auth keys: MEMORYD_API_KEY; the key decides the tenant', async (t) => {
  const srv = await startServer({ args: ['--auth', 'keys'] });
  t.after(() => srv.stop());
  const made = await runMemoryd(['keys', 'create', '--db', srv.dbPath, '--tenant', 'keyed', '--scope', 'write']);
  assert.equal(made.code, 0, made.stderr);
  const client = await viaBridge(`${srv.url}/mcp`, { MEMORYD_API_KEY: made.stdout.split('\n')[0] });
  t.after(() => client.close());
  const r = await client.callTool({ name: 'memory', arguments: { command: 'create', path: '/memories/k.md', file_text: 'k' } });
  assert.equal(r.isError, false, text(r));
});

test('a tools/call whose answer is lost is sent again by the bridge and applied once', async (t) => {
  const srv = await startServer();
  t.after(() => srv.stop());
  // A proxy that forwards everything and, once, cuts the connection after memoryd answered an
  // insert (the write is applied; its answer never reaches the bridge).
  let cut = 0;
  const proxy = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'content-length', 'connection'].includes(k)));
    const up = await fetch(`${srv.url}${req.url}`, { method: req.method, headers, body: req.method === 'POST' ? body : undefined });
    const answer = Buffer.from(await up.arrayBuffer());
    if (cut === 0 && body.includes('"insert"')) {
      cut++;
      req.socket.destroy();
      return;
    }
    res.writeHead(up.status, Object.fromEntries([...up.headers].filter(([k]) => !['content-length', 'connection', 'keep-alive', 'transfer-encoding'].includes(k))));
    res.end(answer);
  });
  await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t.after(() => { proxy.closeAllConnections(); proxy.close(); });
  const client = await viaBridge(`http://127.0.0.1:${proxy.address().port}/mcp`);
  t.after(() => client.close());
  await client.callTool({ name: 'memory', arguments: { command: 'create', path: '/memories/log.md', file_text: 'a\n' } });
  const r = await client.callTool({ name: 'memory', arguments: { command: 'insert', path: '/memories/log.md', insert_line: 1, insert_text: 'b\n' } });
  assert.deepEqual([text(r), r.isError], ['The file /memories/log.md has been edited.', false]);
  assert.equal(cut, 1);
  const seen = await srv.post({ command: 'view', path: '/memories/log.md' }, { tenant: 'alice' });
  assert.equal(seen.json.content, 'Here\'s the content of /memories/log.md with line numbers:\n     1\ta\n     2\tb\n     3\t');
});

test('memoryd unreachable: each request gets a JSON-RPC error; a bad URL is a usage error', async () => {
  const transport = new StdioClientTransport({ command: process.execPath, args: [BRIDGE, 'http://127.0.0.1:9/mcp'], env: { PATH: process.env.PATH }, stderr: 'pipe' });
  const client = new Client({ name: 'x', version: '1' });
  await assert.rejects(client.connect(transport), /memoryd cannot be reached at http:\/\/127\.0\.0\.1:9\/mcp/);
  await client.close().catch(() => {});
  const usage = await new Promise((resolve) => {
    const p = spawn(process.execPath, [BRIDGE, 'not-a-url']);
    let err = '';
    p.stderr.on('data', (d) => { err += d; });
    p.on('close', (code) => resolve({ code, err }));
  });
  assert.deepEqual(usage, { code: 2, err: 'usage: memoryd-mcp-bridge URL (memoryd\'s MCP endpoint, e.g. http://127.0.0.1:8080/mcp)\n' });
});
