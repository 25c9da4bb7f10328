// Helpers of the benchmark runner (bench/run.mjs): processes, HTTP seeding, wrk runs.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

// A free TCP port on loopback.
// The benchmark's tenants outgrow the default quotas (64 MiB, 10,000 files: a run creates
// hundreds of thousands of files in one tenant, the scale figures seed 100,000): every memoryd
// of the benchmark runs with limits far beyond that, so the quota check still runs on every write.
// A bench script's command line: opt(name, default) reads `--name value`, `quick` is --quick, and
// the options every script takes: --build DIR, --memoryd BIN, --json FILE.
export function benchArgs(argv = process.argv.slice(2)) {
  const opt = (name, def) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : def;
  };
  const build = path.resolve(ROOT, opt('build', 'build'));
  return { opt, quick: argv.includes('--quick'), build, memoryd: path.resolve(ROOT, opt('memoryd', path.join(build, 'memoryd'))), json: opt('json', null) };
}

// Rows of cells printed as columns, the first row the head.
export function printTable(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(r.map((c, i) => c.padEnd(widths[i])).join('  '));
}

// Run a bench script's main, which resolves to the number of requests memoryd failed: exit 1
// when it failed any, or when main threw.
export function benchMain(main) {
  main().then((failed) => {
    if (failed) {
      console.error(`memoryd failed ${failed} requests`);
      process.exit(1);
    }
  }, (e) => {
    console.error(e);
    process.exit(1);
  });
}

export const BENCH_QUOTA = ['--tenant-max-bytes', String(2 ** 50), '--tenant-max-files', String(2 ** 40)];

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function waitForPort(port, proc, name) {
  for (let i = 0; i < 400; i++) {
    if (proc.exitCode !== null) throw new Error(`${name} exited with ${proc.exitCode}`);
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${name} did not listen on ${port}`);
}

// Start a server process and wait until it accepts connections. Its stderr goes to a file
// (`logFile`, default a temp file), so that reading it costs the benchmark nothing.
export async function startProcess(name, file, args, port, { env = {}, logFile } = {}) {
  const log = logFile ?? path.join(os.tmpdir(), `memoryd-bench-${name}-${port}.log`);
  const fd = fs.openSync(log, 'w');
  const proc = spawn(file, args, { stdio: ['ignore', 'ignore', fd], env: { ...process.env, ...env } });
  fs.closeSync(fd);
  await waitForPort(port, proc, name);
  return {
    name, proc, port, log,
    // The last `bytes` of its stderr (the log of a long run is too big for one string).
    stderrTail: (bytes = 1 << 20) => {
      const fd = fs.openSync(log, 'r');
      try {
        const size = fs.fstatSync(fd).size;
        const buf = Buffer.alloc(Math.min(bytes, size));
        fs.readSync(fd, buf, 0, buf.length, size - buf.length);
        return buf.toString('utf8');
      } finally {
        fs.closeSync(fd);
      }
    },
    async stop() {
      if (proc.exitCode !== null) return;
      const done = new Promise((r) => proc.on('exit', r));
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 15000);
      await done;
      clearTimeout(t);
    },
  };
}

export function tempDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

// POST /memory on a keep-alive agent: {status, json}.
export function poster(port, { tenant = 'bench', sockets = 32 } = {}) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  const post = (cmd) => new Promise((resolve, reject) => {
    const body = JSON.stringify(cmd);
    const req = http.request({
      host: '127.0.0.1', port, path: '/memory', method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-tenant-id': tenant },
    }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json = null;
        try { json = JSON.parse(text); } catch { /* reported below */ }
        resolve({ status: res.statusCode, json, text });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
  return { post, close: () => agent.destroy() };
}

// Run commands with bounded concurrency; every one must succeed.
export async function runAll(p, cmds, concurrency = 32) {
  let i = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (i < cmds.length) {
      const cmd = cmds[i++];
      const r = await p.post(cmd);
      if (r.status !== 200 || r.json?.is_error) throw new Error(`${JSON.stringify(cmd).slice(0, 200)} -> ${r.status} ${r.text.slice(0, 300)}`);
    }
  }));
}

// The wrk run with the median requests/s (of an odd number of runs).
export const medianRun = (runs) => [...runs].sort((a, b) => a.rps - b.rps)[Math.floor(runs.length / 2)];

// The machine's CPU time so far (/proc/stat, all CPUs, in clock ticks): busy and total.
export function cpuTicks() {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - f[3] - f[4], total }; // idle and iowait are not busy
}

// The busy share of the machine's CPU time since `c0` (a cpuTicks()).
export function busyShare(c0) {
  const c1 = cpuTicks();
  return (c1.busy - c0.busy) / Math.max(1, c1.total - c0.total);
}

// Run wrk; returns the BENCH line's figures, and cpu_busy: the share of the machine's CPU time
// (all cores: wrk, the server and anything else) that was busy during the run.
export function wrk({ port, script, args = [], conns, seconds, threads, env = {} }) {
  const t = threads ?? Math.min(conns, 2);
  const c0 = cpuTicks();
  const out = execFileSync('wrk', [`-t${t}`, `-c${conns}`, `-d${seconds}s`, '--timeout', '10s', '-s', script,
    `http://127.0.0.1:${port}/memory`, '--', ...args.map(String)],
  { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 24, env: { ...process.env, ...env } });
  const m = /^BENCH (\{.*\})$/m.exec(out);
  if (!m) throw new Error(`no BENCH line from wrk:\n${out}`);
  return { ...JSON.parse(m[1]), cpu_busy: busyShare(c0) };
}

// VmRSS / VmHWM of a process, KiB.
export function memKiB(pid) {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const get = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN);
  return { rss: get('VmRSS'), hwm: get('VmHWM') };
}

// 1 KiB of text with `marker` on one line in the middle.
export function kibWith(marker) {
  const line = 'abcdefghi'.repeat(7);
  const lines = Array.from({ length: 16 }, () => line);
  lines[8] = marker.padEnd(line.length, '.');
  return lines.join('\n') + '\n';
}
