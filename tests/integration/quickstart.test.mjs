// The quick start's defaults: memoryd run with no arguments and no MEMORYD_* variable, as
// scripts/run.sh runs it, serves on 127.0.0.1:8080 and keeps its store in ./memoryd.db of
// its working directory (created at start).
//
// Port 8080 is the thing under test, and on a shared machine something else may hold it: so
// memoryd runs in a network namespace of its own (unshare --net; as an unprivileged user,
// with a user namespace too), where 127.0.0.1:8080 is always free, and the test talks to it
// from inside that namespace (nsenter + curl). The test never skips: a machine where it
// cannot make a namespace fails it, saying why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, tempDir } from '../lib/server.mjs';

const PORT = 8080;
const root = process.getuid() === 0;

// memoryd in a new network namespace with its loopback up; it is exec'd, so the pid that
// startServer sees is memoryd's own (and the namespace's).
const WRAPPER = ['unshare', ...(root ? [] : ['--user', '--map-root-user']), '--net', '--',
  'sh', '-c', 'ip link set lo up && exec "$0" "$@"'];

// An HTTP request from inside memoryd's namespace: {status, text}.
function inside(pid, method, urlPath, body) {
  const ns = ['--target', String(pid), '--net', ...(root ? [] : ['--user', '--preserve-credentials'])];
  const args = [...ns, 'curl', '-s', '-X', method, '-w', '\n%{http_code}', `http://127.0.0.1:${PORT}${urlPath}`];
  if (body !== undefined) args.push('-H', 'content-type: application/json', '--data-binary', JSON.stringify(body));
  return new Promise((resolve, reject) => {
    execFile('nsenter', args, { encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`nsenter curl failed: ${err.message}\n${stderr}`));
      const cut = stdout.lastIndexOf('\n');
      resolve({ status: Number(stdout.slice(cut + 1)), text: stdout.slice(0, cut) });
    });
  });
}

test('no arguments, no MEMORYD_* variables: serves on 127.0.0.1:8080 with ./memoryd.db', async () => {
  const dir = tempDir('memoryd-quickstart-');
  let srv;
  try {
    srv = await startServer({ bare: true, cwd: dir, wrapper: WRAPPER });
    const listening = srv.logs.find((l) => l.msg === 'listening');
    assert.deepEqual([listening.address, listening.port, listening.db, listening.durability],
      ['127.0.0.1', PORT, './memoryd.db', 'full']);
    const pid = srv.proc.pid;

    const health = await inside(pid, 'GET', '/healthz');
    assert.deepEqual([health.status, health.text], [200, '{"status":"ok"}']);
    const created = await inside(pid, 'POST', '/memory', { command: 'create', path: '/memories/quickstart.md', file_text: '# Quick start\nserved on 127.0.0.1:8080\n' });
    assert.deepEqual([created.status, JSON.parse(created.text)],
      [200, { type: 'tool_result', content: 'File created successfully at: /memories/quickstart.md', is_error: false }]);
    const VIEW = "Here's the content of /memories/quickstart.md with line numbers:\n     1\t# Quick start\n     2\tserved on 127.0.0.1:8080\n     3\t";
    const viewed = await inside(pid, 'POST', '/memory', { command: 'view', path: '/memories/quickstart.md' });
    const etag = `"sha256-${createHash('sha256').update('# Quick start\nserved on 127.0.0.1:8080\n').digest('hex')}"`;
    assert.deepEqual([viewed.status, JSON.parse(viewed.text)], [200, { type: 'tool_result', content: VIEW, is_error: false, etag }]);
    await srv.stop();
    srv = null;

    // The store is ./memoryd.db of the working directory, an SQLite file that keeps the
    // file across a restart.
    const db = path.join(dir, 'memoryd.db');
    assert.equal(fs.readFileSync(db).subarray(0, 16).toString('latin1'), 'SQLite format 3\0');
    srv = await startServer({ bare: true, cwd: dir, wrapper: WRAPPER });
    const again = await inside(srv.proc.pid, 'POST', '/memory', { command: 'view', path: '/memories/quickstart.md' });
    assert.deepEqual([again.status, JSON.parse(again.text).content], [200, VIEW]);
    await srv.stop();
    srv = null;
  } finally {
    await srv?.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
