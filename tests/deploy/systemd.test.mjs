// docker/memoryd.service, the systemd unit, checked without a running systemd (this machine
// has none as PID 1; neither has CI):
//
//  - `systemd-analyze verify` (Debian 12's systemd 252) reports nothing about the unit. The
//    test copy differs only in ExecStart's path (a copy of the built binary in a temp dir,
//    as verify needs the program to exist). A broken copy is reported: the check bites.
//  - `systemd-analyze security --offline=true` (systemd >= 250) rates it "OK" at or below
//    1.5 and the settings it still counts against the unit are exactly the listed ones.
//  - memoryd, run under strace with the unit's Environment= and a workload of every
//    command, a 403, a 413, health checks and SIGTERM, makes only system calls that the
//    unit's SystemCallFilter= allows, opens sockets only of RestrictAddressFamilies=,
//    never asks for writable+executable memory (MemoryDenyWriteExecute=), never calls
//    personality() (LockPersonality=), and writes files only in its StateDirectory=.
//    This is what would make the sandbox kill or break memoryd; systemd itself cannot
//    apply it here. The same again with memoryd on PostgreSQL (a cluster this test
//    starts), through its Unix socket and over TCP: libpq's calls are allowed too, its
//    sockets are AF_UNIX and AF_INET to loopback (IPAddressAllow=localhost), and it writes
//    no file at all.
//  - The PostgreSQL drop-ins the unit documents, applied to it, pass `systemd-analyze verify`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { BIN, tempDir } from '../lib/server.mjs';
import { pgBin } from '../lib/pg.mjs';
import { REPO, freePort, httpRequest, readDocker, run, spawnTracked, substitute, waitFor } from './lib/deploy.mjs';

const UNIT = readDocker('memoryd.service');
const dir = tempDir('memoryd-systemd-');
let stopPg = null; // stops the PostgreSQL of the strace test, if it started one
after(async () => {
  if (stopPg) await stopPg();
  fs.rmSync(dir, { recursive: true, force: true });
});

// The unit with ExecStart pointing at a copy of the built binary (verify needs it to exist).
function testUnit(name = 'memoryd.service', text = UNIT) {
  const bin = path.join(dir, 'bin', 'memoryd');
  fs.mkdirSync(path.dirname(bin), { recursive: true });
  if (!fs.existsSync(bin)) fs.copyFileSync(BIN, bin);
  fs.chmodSync(bin, 0o755);
  const unitDir = fs.mkdtempSync(path.join(dir, 'unit-'));
  const file = path.join(unitDir, name);
  fs.writeFileSync(file, substitute(text, [['\nExecStart=/usr/local/bin/memoryd\n', `\nExecStart=${bin}\n`]]));
  return file;
}

const sandboxSettings = Object.fromEntries(UNIT.split('\n')
  .filter((l) => /^[A-Z][A-Za-z]+=/.test(l) && !l.startsWith('Environment='))
  .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])
  .filter(([k]) => k !== 'SystemCallFilter'));

test('the unit has the sandbox settings of the deployment brief', () => {
  const expected = {
    DynamicUser: 'yes', StateDirectory: 'memoryd', ProtectSystem: 'strict', ProtectHome: 'yes',
    PrivateTmp: 'yes', NoNewPrivileges: 'yes', RestrictAddressFamilies: 'AF_INET AF_INET6 AF_UNIX',
    CapabilityBoundingSet: '', MemoryDenyWriteExecute: 'yes', LockPersonality: 'yes',
    Restart: 'on-failure', ExecStart: '/usr/local/bin/memoryd', KillSignal: 'SIGTERM',
  };
  for (const [k, v] of Object.entries(expected)) assert.equal(sandboxSettings[k], v, k);
  assert.deepEqual(UNIT.split('\n').filter((l) => l.startsWith('SystemCallFilter=')),
    ['SystemCallFilter=@system-service', 'SystemCallFilter=~@privileged @resources']);
  // systemd waits TimeoutStopSec for the exit after SIGTERM; memoryd needs up to
  // MEMORYD_SHUTDOWN_TIMEOUT for in-flight requests, then a checkpoint.
  const env = unitEnvironment('/var/lib');
  assert.equal(sandboxSettings.TimeoutStopSec, '30s');
  assert.ok(30 > Number(env.MEMORYD_SHUTDOWN_TIMEOUT) + 5, 'TimeoutStopSec leaves time for the checkpoint');
  assert.deepEqual(env, {
    MEMORYD_LISTEN: '127.0.0.1', MEMORYD_PORT: '8080', MEMORYD_DB: '/var/lib/memoryd/memoryd.db',
    MEMORYD_TRUSTED_PROXIES: '127.0.0.2', MEMORYD_REQUIRE_TENANT: 'true', MEMORYD_SHUTDOWN_TIMEOUT: '10',
  });
});

test('systemd-analyze verify reports nothing about the unit (and does report a broken one)', async () => {
  const file = testUnit();
  const r = await run('systemd-analyze', ['verify', file]);
  const about = (out) => out.split('\n').filter((l) => l.includes('memoryd') || l.includes(dir));
  assert.deepEqual([r.code, about(r.stdout), about(r.stderr)], [0, [], []], r.stderr);
  if (r.stderr.trim()) console.log(`systemd-analyze verify, about other units:\n${r.stderr}`);

  const broken = testUnit('memoryd.service', UNIT.replace('\nProtectSystem=strict\n', '\nProtectSystem=stricter\n').replace('\n[Service]\n', '\n[Service]\nExecStartPre=/nonexistent/program\n'));
  const b = await run('systemd-analyze', ['verify', broken]);
  assert.notEqual(b.code, 0);
  assert.match(b.stderr, /Failed to parse protect system value, ignoring: stricter/);
  assert.match(b.stderr, /Command \/nonexistent\/program is not executable/);
});

// The drop-ins for PostgreSQL that the unit's comments document ("#   <line>"), in order.
function documentedDropIns() {
  const lines = UNIT.split('\n').filter((l) => /^# {3}(\[(Unit|Service)\]|[A-Z][A-Za-z]+=.*)$/.test(l)).map((l) => l.slice(4));
  assert.deepEqual(lines, [
    '[Unit]', 'After=postgresql.service', '[Service]', 'Environment=MEMORYD_DB=postgresql:///memoryd?host=/run/postgresql',
    'Environment=MEMORYD_DB=postgresql://memoryd@db.example.internal:5432/memoryd', 'LoadCredential=pgpass:/etc/memoryd/pgpass',
    'Environment=PGPASSFILE=%d/pgpass', 'IPAddressAllow=10.0.0.5',
  ]);
  return { socket: lines.slice(0, 4), password: ['[Service]', ...lines.slice(4)] };
}

test('the PostgreSQL drop-ins the unit documents pass systemd-analyze verify (and a bad specifier in one is reported)', async () => {
  const { socket, password } = documentedDropIns();
  for (const dropIn of [socket, password]) {
    // A drop-in's settings come after the unit's: appended to a copy, as sections of it.
    const file = testUnit('memoryd.service', `${UNIT}\n${dropIn.join('\n')}\n`);
    const r = await run('systemd-analyze', ['verify', file]);
    const about = (out) => out.split('\n').filter((l) => l.includes('memoryd') || l.includes(dir));
    assert.deepEqual([r.code, about(r.stdout), about(r.stderr)], [0, [], []], dropIn.join('\n'));
  }
  const bad = testUnit('memoryd.service', `${UNIT}\n${password.join('\n').replace('%d/', '%Z/')}\n`);
  const b = await run('systemd-analyze', ['verify', bad]);
  assert.match(b.stderr, /Failed to resolve specifiers in PGPASSFILE=%Z\/pgpass, ignoring/);
});

test('systemd-analyze security --offline=true: exposure at most 1.5 (SAFE or OK), and exactly these settings count against it', async () => {
  // The committed file itself, as docker/README.md says (security does not need ExecStart).
  const file = path.join(REPO, 'docker', 'memoryd.service');
  const r = await run('systemd-analyze', ['security', '--offline=true', '--no-pager', '--threshold=15', file]);
  const overall = /Overall exposure level for memoryd\.service: (\d+\.\d) (\w+)/.exec(r.stdout);
  assert.ok(overall, r.stdout + r.stderr);
  console.log(`systemd-analyze security --offline=true: exposure ${overall[1]} ${overall[2]}`);
  assert.equal(r.code, 0, `over the threshold of 1.5:\n${r.stdout}`);
  assert.ok(['SAFE', 'OK'].includes(overall[2]), overall[2]);
  assert.ok(Number(overall[1]) <= 1.5);

  const j = await run('systemd-analyze', ['security', '--offline=true', '--json=short', file]);
  const open = JSON.parse(j.stdout).filter((e) => e.exposure && Number(e.exposure) > 0).map((e) => e.name).sort();
  // Each one is a choice: memoryd serves TCP (AF_INET*, the host's network, loopback
  // addresses allowed), runs the host's binary and libraries (no RootDirectory=), and the
  // device ACL of PrivateDevices= includes the clock (read-only).
  assert.deepEqual(open, [
    'DeviceAllow=',
    'IPAddressDeny=',
    'PrivateNetwork=',
    'RestrictAddressFamilies=~AF_(INET|INET6)',
    'RestrictAddressFamilies=~AF_UNIX',
    'RootDirectory=/RootImage=',
  ]);
});

// The unit's Environment= lines, %S (the state directory root) replaced.
function unitEnvironment(stateRoot) {
  return Object.fromEntries(UNIT.split('\n').filter((l) => l.startsWith('Environment='))
    .map((l) => l.slice('Environment='.length).replaceAll('%S', stateRoot))
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
}

// Every system call group of `systemd-analyze syscall-filter`, expanded.
async function syscallGroups() {
  const r = await run('systemd-analyze', ['syscall-filter', '--no-pager']);
  assert.equal(r.code, 0, r.stderr);
  const groups = {};
  let cur = null;
  for (const line of r.stdout.split('\n')) {
    if (/^@[\w-]+$/.test(line)) groups[cur = line] = [];
    else if (cur && /^ {4}[@\w-]+$/.test(line)) groups[cur].push(line.trim());
    else if (!line.trim()) cur = null;
  }
  const expand = (name, seen = new Set()) => {
    if (!name.startsWith('@')) return [name];
    if (seen.has(name)) return [];
    seen.add(name);
    assert.ok(groups[name], `unknown group ${name}`);
    return groups[name].flatMap((n) => expand(n, seen));
  };
  return expand;
}

// The sandbox is for the release build: an AddressSanitizer build makes calls of its own
// (personality(), huge shadow mappings), so the audit runs only in the plain build.
const sanitized = process.env.MD_SANITIZE === '1' || process.env.MD_SANITIZE === 'ON';
const skipAudit = sanitized && 'sanitizer build (the audit runs in the plain build)';

// memoryd under strace with the unit's environment (`db`, if given, as MEMORYD_DB), through
// every command, a 403, a 400, a 413, health checks and SIGTERM; returns what it did:
// {calls: [[name, line]], used: [names], state (the state directory)}.
async function underStrace(name, db) {
  // memoryd runs as an unprivileged user, as under DynamicUser= (as root, SQLite would
  // also fchown() its WAL and SHM files, which @privileged denies and never happens then);
  // strace runs as that user too, so it traces memoryd alone.
  const [uid, gid] = [65534, 65534]; // nobody, nogroup
  fs.chmodSync(dir, 0o755);
  const root = path.join(dir, name);
  fs.mkdirSync(root, { mode: 0o755 });
  const state = path.join(root, 'state');
  fs.mkdirSync(path.join(state, 'memoryd'), { recursive: true, mode: 0o700 });
  const traceDir = path.join(root, 'trace');
  fs.mkdirSync(traceDir, { mode: 0o700 });
  for (const d of [state, path.join(state, 'memoryd'), traceDir]) fs.chownSync(d, uid, gid);
  const env = unitEnvironment(state);
  if (db) env.MEMORYD_DB = db;
  const port = await freePort();
  env.MEMORYD_PORT = String(port); // 8080 may be taken on this machine
  const trace = path.join(traceDir, 'strace.txt');
  const p = spawnTracked('setpriv', [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--', 'strace', '-f', '-qq', '-o', trace, BIN], {
    cwd: path.join(state, 'memoryd'),
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', ...env },
  });
  await waitFor(() => p.err.includes('"msg":"listening"') || p.exitCode !== null, 'memoryd to listen', 30000);
  assert.match(p.err, /"msg":"listening"/);

  const post = (cmd, localAddress = '127.0.0.2', extra = {}) => httpRequest({
    port, method: 'POST', path: '/memory', localAddress, body: typeof cmd === 'string' ? cmd : JSON.stringify(cmd),
    headers: Object.fromEntries(Object.entries({ 'x-tenant-id': 'acme', ...extra }).filter(([, v]) => v !== undefined)),
  });
  const steps = [
    [{ command: 'create', path: '/memories/a.txt', file_text: 'one\ntwo\n' }, 200],
    [{ command: 'view', path: '/memories' }, 200],
    [{ command: 'view', path: '/memories/a.txt' }, 200],
    [{ command: 'str_replace', path: '/memories/a.txt', old_str: 'two', new_str: '2' }, 200],
    [{ command: 'insert', path: '/memories/a.txt', insert_line: 0, insert_text: 'zero\n' }, 200],
    [{ command: 'rename', old_path: '/memories/a.txt', new_path: '/memories/d/b.txt' }, 200],
    [{ command: 'delete', path: '/memories/d' }, 200],
    [{ command: 'view', path: '/memories/nope' }, 404],
  ];
  for (const [cmd, status] of steps) assert.equal((await post(cmd)).status, status, JSON.stringify(cmd));
  assert.equal((await post({ command: 'view', path: '/memories' }, '127.0.0.1')).status, 403);
  assert.equal((await post({ command: 'view', path: '/memories' }, '127.0.0.2', { 'x-tenant-id': undefined })).status, 400);
  assert.equal((await post('x'.repeat(5 * 1024 * 1024))).status, 413);
  assert.equal((await httpRequest({ port, path: '/healthz' })).status, 200);
  assert.equal((await httpRequest({ port, path: '/readyz' })).status, 200);
  // The operator on the host: memoryd admin, through the unit's loopback listener (the
  // tenant endpoints are served to this machine without a proxy header).
  const admin = await run(BIN, ['admin', '--url', `http://127.0.0.1:${port}`, 'tenants', 'list']);
  assert.equal(admin.code, 0, admin.stderr);
  assert.match(admin.stdout, /^tenant\tfiles\tbytes\tversions\tlast_write\nacme\t0\t0\t\d+\t\S+\n$/);
  // SIGTERM to memoryd (strace's child; setpriv exec'd strace), as systemd's KillSignal=;
  // strace then exits with memoryd's status.
  const child = Number(fs.readFileSync(`/proc/${p.pid}/task/${p.pid}/children`, 'utf8').trim());
  assert.ok(child > 0);
  process.kill(child, 'SIGTERM');
  let timer;
  const e = await Promise.race([p.exited, new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), 30000); })]);
  clearTimeout(timer);
  if (e === 'timeout') await p.stop('SIGKILL');
  assert.deepEqual(e, { code: 0, signal: null }, p.err);
  assert.match(p.err.trim().split('\n').at(-1), /"msg":"stopped"|"msg":"closed"|"msg":"bye"|shut/);

  const calls = [];
  for (const l of fs.readFileSync(trace, 'utf8').split('\n').filter(Boolean)) {
    const m = /^\d+\s+(?:<\.\.\. )?([a-z_0-9]+)(?:\(| resumed>)/.exec(l);
    if (m) calls.push([m[1], l]);
  }
  return { calls, used: [...new Set(calls.map(([n]) => n))].sort(), state, log: p.err };
}

// What the unit's sandbox would refuse: a system call outside SystemCallFilter=, a socket
// of a family outside RestrictAddressFamilies=, writable and executable memory, personality().
async function assertInsideSandbox({ calls, used }) {
  const expand = await syscallGroups();
  // Allow list first (with @default, always allowed), then the deny list removes.
  const allowed = new Set([...expand('@system-service'), ...expand('@default')]);
  for (const s of [...expand('@privileged'), ...expand('@resources')]) allowed.delete(s);
  assert.ok(used.length > 20 && used.includes('epoll_wait'), used.join(' '));
  const denied = used.filter((n) => !allowed.has(n));
  assert.deepEqual(denied, [], `system calls outside SystemCallFilter=: ${denied.join(', ')}`);
  const families = [...new Set(calls.filter(([n, l]) => n === 'socket' && l.includes('socket(')).map(([, l]) => /socket\((\w+)/.exec(l)[1]))].sort();
  assert.ok(families.length > 0 && families.every((f) => ['AF_INET', 'AF_INET6', 'AF_UNIX'].includes(f)), families.join());
  const wx = calls.filter(([n, l]) => (n === 'mmap' && /PROT_WRITE\|PROT_EXEC|PROT_EXEC\|PROT_WRITE/.test(l))
    || ((n === 'mprotect' || n === 'pkey_mprotect') && /PROT_EXEC/.test(l)));
  assert.deepEqual(wx, [], 'writable and executable memory');
  assert.deepEqual(calls.filter(([n]) => n === 'personality'), []);
  return families;
}

// Files opened for writing (successfully).
const writtenFiles = (calls) => calls.filter(([n, l]) => (n === 'openat' || n === 'open') && l.includes('"') && /O_WRONLY|O_RDWR|O_CREAT/.test(l) && !/= -1 /.test(l))
  .map(([, l]) => /"([^"]+)"/.exec(l)[1]);

test('under strace, memoryd stays inside the unit\'s system call filter, address families, W^X and state directory', { skip: skipAudit }, async () => {
  const t = await underStrace('sqlite');
  await assertInsideSandbox(t);
  assert.ok(t.used.includes('fdatasync'), t.used.join(' '));
  console.log(`memoryd made ${t.calls.length} system calls of ${t.used.length} kinds, all allowed: ${t.used.join(' ')}`);
  // Files opened for writing: only the database, its WAL and SHM (and the rollback journal
  // of the first migration, before WAL mode), in the state directory: ProtectSystem=strict
  // leaves nothing else writable.
  const writes = writtenFiles(t.calls);
  const outside = writes.filter((f) => !f.startsWith(`${t.state}/memoryd/`));
  assert.deepEqual(outside, [], 'files written outside the StateDirectory');
  assert.deepEqual([...new Set(writes)].sort(), ['memoryd.db', 'memoryd.db-journal', 'memoryd.db-shm', 'memoryd.db-wal'].map((f) => `${t.state}/memoryd/${f}`));
});

// A PostgreSQL of this test's own: a Unix socket in a directory anyone may enter (as
// /run/postgresql is) and TCP on 127.0.0.1, trust authentication, a database memoryd.
async function startPostgres() {
  const bin = pgBin();
  const root = process.getuid() === 0;
  const asOwner = (cmd, args) => (root ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]);
  const pgDir = path.join(dir, 'pg');
  const sock = path.join(dir, 'pg-socket');
  fs.chmodSync(dir, 0o755);
  fs.mkdirSync(pgDir, { mode: 0o700 });
  fs.mkdirSync(sock, { mode: 0o755 });
  if (root) for (const d of [pgDir, sock]) await run('chown', ['postgres:postgres', d]);
  const port = await freePort();
  const init = await run(...asOwner(path.join(bin, 'initdb'), ['-D', path.join(pgDir, 'data'), '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8']));
  assert.equal(init.code, 0, init.stderr);
  const start = await run(...asOwner(path.join(bin, 'pg_ctl'), ['-D', path.join(pgDir, 'data'), '-l', path.join(pgDir, 'server.log'), '-w', '-t', '60',
    '-o', `-c listen_addresses=127.0.0.1 -p ${port} -k ${sock}`, 'start']));
  assert.equal(start.code, 0, start.stderr + start.stdout);
  stopPg = () => run(...asOwner(path.join(bin, 'pg_ctl'), ['-D', path.join(pgDir, 'data'), '-m', 'fast', '-w', 'stop']));
  const created = await run('psql', ['-X', '-q', '-h', sock, '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-c', 'CREATE DATABASE memoryd']);
  assert.equal(created.code, 0, created.stderr);
  return { sock, port };
}

test('under strace, memoryd on PostgreSQL (Unix socket, then TCP) stays inside the sandbox and writes no file', { skip: skipAudit }, async () => {
  const { sock, port } = await startPostgres();
  const viaSocket = await underStrace('memoryd-pg-unix', `postgresql:///memoryd?host=${encodeURIComponent(sock)}&port=${port}&user=postgres`);
  const viaTcp = await underStrace('memoryd-pg-tcp', `postgresql://postgres@127.0.0.1:${port}/memoryd`);
  for (const [t, family] of [[viaSocket, 'AF_UNIX'], [viaTcp, 'AF_INET']]) {
    assert.match(t.log, /"msg":"listening".*"db":"postgresql:/);
    const families = await assertInsideSandbox(t);
    assert.ok(families.includes(family), families.join());
    // No file written at all: the data is PostgreSQL's (ProtectSystem=strict is no bother).
    assert.deepEqual(writtenFiles(t.calls), []);
    // Every connection memoryd opens to an IP address goes to loopback, which the unit's
    // IPAddressAllow=localhost admits (the documented drop-in widens it for another host).
    const connects = t.calls.filter(([n, l]) => n === 'connect' && /sa_family=AF_INET6?/.test(l)).map(([, l]) => l);
    assert.ok(connects.every((l) => /inet_addr\("127\.0\.0\.1"\)|inet_pton\(AF_INET6, "::1"/.test(l)), connects.join('\n'));
    console.log(`memoryd on PostgreSQL (${family}) made ${t.calls.length} system calls of ${t.used.length} kinds, all allowed: ${t.used.join(' ')}`);
  }
  // The database was reached the way the URI said.
  assert.ok(viaSocket.calls.some(([n, l]) => n === 'connect' && l.includes(`sun_path="${sock}/.s.PGSQL.${port}"`) && / = 0$/.test(l)));
  assert.ok(viaTcp.calls.some(([n, l]) => n === 'connect' && l.includes(`sin_port=htons(${port})`) && l.includes('inet_addr("127.0.0.1")')));
  // libpq's own calls beyond SQLite's run, all inside the filter above.
  const sqliteRun = await underStrace('sqlite-again');
  console.log(`system calls of memoryd on PostgreSQL and not on SQLite: ${[...new Set([...viaSocket.used, ...viaTcp.used])].filter((n) => !sqliteRun.used.includes(n)).join(' ')}`);
});
