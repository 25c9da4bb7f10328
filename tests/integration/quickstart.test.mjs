// The quick start's defaults: memoryd run with no arguments and no MEMORYD_* variable, as
// scripts/run.sh runs it, serves on 127.0.0.1:8080 and keeps its store in ./memoryd.db of
// its working directory (created at start).
//
// Port 8080 is fixed here, so the test takes care not to meet another server on it:
//  - it skips (saying why) when something already listens on 127.0.0.1:8080;
//  - two runs of this test at once would race for 8080 (a second memoryd fails to bind it):
//    within one ctest run this test and valgrind/http-suites (which runs this file too) hold
//    the RESOURCE_LOCK memoryd-port-8080 (tests/CMakeLists.txt); across runs (another build
//    directory) a lock file in the temp directory lets one run at a time, and the other skips.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startServer, tempDir } from '../lib/server.mjs';

const PORT = 8080;
const LOCK = path.join(os.tmpdir(), `memoryd-test-port-${PORT}.lock`);

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
};

// Take the lock file: null when taken, else why not. A lock left by a dead process is removed.
function takeLock() {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(LOCK, String(process.pid), { flag: 'wx' });
      return null;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    const pid = Number(fs.readFileSync(LOCK, 'utf8'));
    if (pid > 0 && alive(pid)) return `another memoryd test (pid ${pid}, lock ${LOCK}) is using port ${PORT}`;
    fs.rmSync(LOCK, { force: true });
  }
  return `cannot take the lock ${LOCK}`;
}

// null when 127.0.0.1:PORT can be bound (nothing listens there), else why not.
function portBusy() {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', (e) => resolve(`127.0.0.1:${PORT} is in use (${e.code})`));
    probe.listen({ host: '127.0.0.1', port: PORT, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

test('no arguments, no MEMORYD_* variables: serves on 127.0.0.1:8080 with ./memoryd.db', async (t) => {
  const locked = takeLock();
  if (locked) {
    t.skip(`skipped: ${locked}`);
    return;
  }
  const dir = tempDir('memoryd-quickstart-');
  let srv;
  try {
    const busy = await portBusy();
    if (busy) {
      t.skip(`skipped: ${busy}; the quick-start defaults need that port free`);
      return;
    }
    srv = await startServer({ bare: true, cwd: dir });
    const listening = srv.logs.find((l) => l.msg === 'listening');
    assert.deepEqual([listening.address, listening.port, listening.db, listening.durability],
      ['127.0.0.1', PORT, './memoryd.db', 'full']);
    assert.equal(srv.url, `http://127.0.0.1:${PORT}`);

    const health = await srv.request('GET', '/healthz');
    assert.deepEqual([health.status, health.text], [200, '{"status":"ok"}']);
    const created = await srv.post({ command: 'create', path: '/memories/quickstart.md', file_text: '# Quick start\nserved on 127.0.0.1:8080\n' });
    assert.deepEqual([created.status, created.json],
      [200, { type: 'tool_result', content: 'File created successfully at: /memories/quickstart.md', is_error: false }]);
    const VIEW = "Here's the content of /memories/quickstart.md with line numbers:\n     1\t# Quick start\n     2\tserved on 127.0.0.1:8080\n     3\t";
    const viewed = await srv.post({ command: 'view', path: '/memories/quickstart.md' });
    assert.deepEqual([viewed.status, viewed.json], [200, { type: 'tool_result', content: VIEW, is_error: false }]);
    await srv.stop();
    srv = null;

    // The store is ./memoryd.db of the working directory, an SQLite file that keeps the
    // file across a restart.
    const db = path.join(dir, 'memoryd.db');
    assert.equal(fs.readFileSync(db).subarray(0, 16).toString('latin1'), 'SQLite format 3\0');
    srv = await startServer({ bare: true, cwd: dir });
    const again = await srv.post({ command: 'view', path: '/memories/quickstart.md' });
    assert.deepEqual([again.status, again.json?.content], [200, VIEW]);
    await srv.stop();
    srv = null;
  } finally {
    await srv?.kill();
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(LOCK, { force: true });
  }
});
