// The peer for memoryd's benchmark: what a user would otherwise run — the official SDK's
// reference implementation, BetaLocalFilesystemMemoryTool (@anthropic-ai/sdk, pinned in
// package.json), behind a minimal Node http server with memoryd's POST /memory contract: a
// command object in, a tool_result out (200, or 400 with is_error when the tool threw).
//
//   node bench/peer/server.mjs PORT DIR
import http from 'node:http';
import { BetaLocalFilesystemMemoryTool } from '@anthropic-ai/sdk/tools/memory/node';

const [port, dir] = [Number(process.argv[2]), process.argv[3]];
const tool = await BetaLocalFilesystemMemoryTool.init(dir);
const COMMANDS = new Set(['view', 'create', 'str_replace', 'insert', 'delete', 'rename']);

function reply(res, status, content, isError) {
  const body = JSON.stringify({ type: 'tool_result', content, is_error: isError });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/memory') return reply(res, 404, 'Error: use POST /memory', true);
  const parts = [];
  req.on('data', (d) => parts.push(d));
  req.on('end', async () => {
    let cmd;
    try {
      cmd = JSON.parse(Buffer.concat(parts).toString('utf8'));
    } catch {
      return reply(res, 400, 'Error: invalid JSON', true);
    }
    if (!cmd || !COMMANDS.has(cmd.command)) return reply(res, 400, 'Error: unknown command', true);
    try {
      reply(res, 200, await tool[cmd.command](cmd), false);
    } catch (err) {
      reply(res, 400, `Error: ${err.message}`, true);
    }
  });
});
server.keepAliveTimeout = 30000;
server.listen(port, '127.0.0.1', () => console.error(`peer: listening on ${port}, files in ${dir}`));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
