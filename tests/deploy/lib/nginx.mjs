// Run the committed docker/nginx.conf with a real nginx (Debian's, from scripts/setup.sh
// --test) on loopback. The test copy differs from the committed file only in addresses,
// ports and paths (substitute() checks each one occurs as often as expected):
//   listen 8080               -> 127.0.0.1:<free port>
//   server memoryd:8080       -> 127.0.0.1:<upstreamPort>
//   proxy_bind 172.30.77.10   -> <proxyBind> (127.0.0.2: memoryd can tell nginx from a direct client)
//   /var/lib/nginx/* temp, /var/log/nginx/access.log -> the test's temp dir
// nginx runs as root (workers as www-data, as the file says) in the foreground, with its
// pid file in the temp dir; its access log is read from the temp dir, its error log
// (stderr) collected. tenants.map is copied next to the config, plus `extraMap` lines.
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../../lib/server.mjs';
import { canConnect, freePort, httpRequest, readDocker, run, spawnTracked, substitute, waitFor } from './deploy.mjs';

export const COMPOSE_PROXY_ADDRESS = '172.30.77.10';

export function nginxTestConfig({ port, upstreamPort, proxyBind, dir }) {
  return nginxTestPaths(substitute(readDocker('nginx.conf'), [
    ['listen 8080;', `listen 127.0.0.1:${port};`],
    ['server memoryd:8080;', `server 127.0.0.1:${upstreamPort};`],
    [`proxy_bind ${COMPOSE_PROXY_ADDRESS};`, `proxy_bind ${proxyBind};`],
  ]), dir);
}

// nginx.conf's temp and log paths pointed into `dir`.
export function nginxTestPaths(conf, dir) {
  return substitute(conf, [
    ['/var/lib/nginx/', `${dir}/`, 5],
    ['/var/log/nginx/access.log', `${dir}/access.log`],
  ]);
}

// `nginx -t` of the configuration file `conf` run as startNginx runs it: {code, stdout, stderr}.
export function nginxCheck(conf, dir) {
  return run('nginx', ['-t', '-p', `${dir}/`, '-c', conf, '-g', `pid ${dir}/nginx.pid;`]);
}

// `config` (default nginxTestConfig) makes the configuration's text from {port, upstreamPort,
// proxyBind, dir}: a test of another proxy setup gives its own.
export async function startNginx({ upstreamPort, proxyBind = '127.0.0.2', extraMap = '', config = nginxTestConfig }) {
  const dir = tempDir('memoryd-nginx-');
  fs.chmodSync(dir, 0o755); // the workers (www-data) create request body temp files here
  const mapPath = path.join(dir, 'tenants.map');
  fs.writeFileSync(mapPath, readDocker('tenants.map') + extraMap);
  const confPath = path.join(dir, 'nginx.conf');
  let proc, port;
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    fs.writeFileSync(confPath, config({ port, upstreamPort, proxyBind, dir }));
    proc = spawnTracked('nginx', ['-p', `${dir}/`, '-c', confPath, '-g', `daemon off; pid ${dir}/nginx.pid;`]);
    const up = await waitFor(async () => (proc.exitCode !== null ? 'exited' : (await canConnect(port)) && 'up'), 'nginx to listen');
    if (up === 'up') break;
    // Another process took the port between freePort() and nginx's bind: try another.
    if (attempt < 3 && /Address already in use/.test(proc.err)) continue;
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`nginx did not start:\n${proc.err}`);
  }

  async function request({ path: p = '/memory', method = 'POST', key, headers = {}, body, agent }) {
    const h = { ...headers };
    if (key !== undefined) h.authorization = `Bearer ${key}`;
    if (body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)) {
      body = JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    return httpRequest({ port, method, path: p, headers: h, body, agent });
  }

  // Add a key to tenants.map, made as tenants.map says (openssl rand -hex 32), and
  // `nginx -s reload`; resolves once the key is accepted.
  // The probe is a GET /memory: 405 (key accepted) or 401, decided before the rate limit
  // and never forwarded, so it costs the tenant nothing.
  // The master's worker processes (its children), from /proc.
  function workerPids() {
    const pids = [];
    for (const d of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(d)) continue;
      try {
        const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === proc.pid) pids.push(Number(d));
      } catch { /* gone */ }
    }
    return pids;
  }

  async function addKey(tenant) {
    const r = await run('openssl', ['rand', '-hex', '32']);
    if (r.code !== 0) throw new Error(`openssl rand failed: ${r.stderr}`);
    const key = r.stdout.trim();
    if (!/^[0-9a-f]{64}$/.test(key)) throw new Error(`unexpected key ${JSON.stringify(key)}`);
    fs.appendFileSync(mapPath, `${key} ${tenant};\n`);
    // A reload starts new workers and lets the old ones (with the old map) finish what they
    // have: until they are gone, a new connection may still meet one of them. So wait for
    // every old worker to exit, then for the key to be accepted.
    const oldWorkers = workerPids();
    const reload = await run('nginx', ['-p', `${dir}/`, '-c', confPath, '-g', `pid ${dir}/nginx.pid;`, '-s', 'reload']);
    if (reload.code !== 0) throw new Error(`nginx -s reload failed: ${reload.stderr}`);
    await waitFor(() => {
      const now = workerPids();
      return now.length > 0 && !now.some((pid) => oldWorkers.includes(pid));
    }, 'the old nginx workers to exit after the reload');
    await waitFor(async () => (await request({ method: 'GET', key })).status === 405,
      `nginx to accept the new key of ${tenant}`);
    return key;
  }

  async function stop() {
    const e = await proc.stop('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
    return e;
  }

  return { port, dir, proc, request, addKey, stop, accessLog: () => fs.readFileSync(path.join(dir, 'access.log'), 'utf8'), errorLog: () => proc.err };
}
