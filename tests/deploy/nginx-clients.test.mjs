// memoryd's own API keys (--auth keys) behind a real nginx that only forwards (no key map):
// the failed-authentication limiter counts the client nginx reports (X-Forwarded-For,
// X-Real-IP, trusted from --trusted-proxies), never nginx's own address. A client sending bad
// keys through nginx is refused (429) while a good client through the same nginx keeps
// working; the bad client's good key is refused too, until its window ends.
//
// nginx connects from 127.0.0.2 (proxy_bind), which memoryd trusts; the clients reach nginx
// from 127.0.0.1 and 127.0.0.3.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import { runMemoryd, startServer } from '../lib/server.mjs';
import { httpRequest } from './lib/deploy.mjs';
import { nginxTestPaths, startNginx } from './lib/nginx.mjs';

// A forwarding proxy, as an operator puts in front of memoryd --auth keys: the client's
// address in X-Forwarded-For and X-Real-IP, the Authorization header passed on.
const forwarding = ({ port, upstreamPort, proxyBind, dir }) => nginxTestPaths(`
worker_processes 1;
events { worker_connections 64; }
http {
    access_log /var/log/nginx/access.log;
    client_body_temp_path /var/lib/nginx/body;
    proxy_temp_path /var/lib/nginx/proxy;
    fastcgi_temp_path /var/lib/nginx/fastcgi;
    uwsgi_temp_path /var/lib/nginx/uwsgi;
    scgi_temp_path /var/lib/nginx/scgi;
    server {
        listen 127.0.0.1:${port};
        location / {
            proxy_pass http://127.0.0.1:${upstreamPort};
            proxy_bind ${proxyBind};
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Real-IP $remote_addr;
        }
    }
}
`, dir);

const RATE = 'Error: Too many failed authentication attempts from your address (10 within 60 seconds); nothing was done. Retry in a minute (Retry-After tells the seconds).';
let md, px, key;

before(async () => {
  md = await startServer({ args: ['--auth', 'keys', '--trusted-proxies', '127.0.0.2'] });
  const r = await runMemoryd(['keys', 'create', '--db', md.dbPath, '--tenant', 'good', '--scope', 'write']);
  assert.equal(r.code, 0, r.stderr);
  key = r.stdout.split('\n')[0];
  px = await startNginx({ upstreamPort: md.port, config: forwarding });
});

after(async () => {
  if (px) await px.stop();
  if (md) await md.stop();
  if (md?.dir) fs.rmSync(md.dir, { recursive: true, force: true });
});

const view = JSON.stringify({ command: 'view', path: '/memories' });
const from = (localAddress, k) => httpRequest({ port: px.port, method: 'POST', path: '/memory', localAddress, body: view,
  headers: { 'content-type': 'application/json', authorization: `Bearer ${k}` } });

test('bad keys from one client through nginx: that client gets 429, a good client through the same nginx is served', async () => {
  for (let i = 0; i < 10; i++) {
    const r = await from('127.0.0.1', `mdk_${String(i).repeat(43)}`);
    assert.deepEqual([r.status, r.json?.content], [401, 'Error: Unknown API key'], `failure ${i + 1}`);
  }
  let r = await from('127.0.0.1', key);
  assert.deepEqual([r.status, r.json?.content], [429, RATE]);
  assert.ok(Number(r.headers['retry-after']) >= 1);
  r = await from('127.0.0.3', key);
  assert.equal(r.status, 200, r.text);
  // The bad client stays refused, with any key; the good one keeps being served.
  r = await from('127.0.0.1', key);
  assert.equal(r.status, 429, r.text);
  r = await from('127.0.0.3', key);
  assert.equal(r.status, 200, r.text);
});
