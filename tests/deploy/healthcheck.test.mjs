// docker/healthcheck.sh, the images' HEALTHCHECK (bash's /dev/tcp, no curl): healthy only
// for a 200 with memoryd's {"status":"ok"}; unhealthy, with a reason, for no listener, another
// status, another body, or a server that does not answer within the read timeout.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startServer } from '../lib/server.mjs';
import { DOCKER, freePort, run } from './lib/deploy.mjs';

const CHECK = path.join(DOCKER, 'healthcheck.sh');
let md;
before(async () => { md = await startServer(); });
after(async () => {
  await md.stop();
  fs.rmSync(md.dir, { recursive: true, force: true });
});

// A TCP server answering every connection with `reply` (raw bytes), or never.
async function fake(reply) {
  const sockets = new Set();
  const s = net.createServer((c) => {
    sockets.add(c);
    c.on('error', () => {});
    c.once('data', () => { if (reply !== null) c.end(reply); });
  });
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
  return { port: s.address().port, close: () => { for (const c of sockets) c.destroy(); return new Promise((r) => s.close(r)); } };
}

test('healthy: memoryd answers 200 {"status":"ok"}; the address comes from the arguments or MEMORYD_LISTEN/MEMORYD_PORT', async () => {
  for (const [args, env] of [
    [['127.0.0.1', String(md.port)], {}],
    [[], { MEMORYD_LISTEN: '0.0.0.0', MEMORYD_PORT: String(md.port) }], // the image's ENV
    [[], { MEMORYD_LISTEN: '127.0.0.1', MEMORYD_PORT: String(md.port) }],
  ]) {
    const r = await run(CHECK, args, { env: { PATH: process.env.PATH, ...env } });
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, 'healthy: {"status":"ok"}\n', ''], JSON.stringify([args, env]));
  }
});

test('unhealthy: nothing listening, another status, another body, no answer in time', async () => {
  const closed = await freePort();
  let r = await run(CHECK, ['127.0.0.1', String(closed)]);
  assert.deepEqual([r.code, r.stdout, r.stderr], [1, `unhealthy: cannot connect to 127.0.0.1 port ${closed}\n`, '']);

  const busy = await fake('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n');
  r = await run(CHECK, ['127.0.0.1', String(busy.port)]);
  await busy.close();
  assert.deepEqual([r.code, r.stdout], [1, 'unhealthy: status line: HTTP/1.1 503 Service Unavailable\n']);

  const other = await fake('HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<html>it works</html>');
  r = await run(CHECK, ['127.0.0.1', String(other.port)]);
  await other.close();
  assert.deepEqual([r.code, r.stdout], [1, 'unhealthy: body: <html>it works</html>\n']);

  const silent = await fake(null);
  const t0 = Date.now();
  r = await run(CHECK, ['127.0.0.1', String(silent.port)], { env: { ...process.env, HEALTHCHECK_READ_TIMEOUT: '1' } });
  const ms = Date.now() - t0;
  await silent.close();
  assert.deepEqual([r.code, r.stdout], [1, 'unhealthy: no answer within 1s\n']);
  assert.ok(ms >= 900 && ms < 5000, `${ms} ms`);
});
