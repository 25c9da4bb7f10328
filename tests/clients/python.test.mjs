// The Python client (clients/python) against a live memoryd: starts memoryd (a SQLite file here,
// a fresh PostgreSQL database as pg/clients/python) and runs the package's pytest suite with
// Debian's python3 and pytest (python3-pytest, from scripts/setup.sh --test), with MEMORYD_URL
// pointing at memoryd and MEMORYD_TENANT the prefix of the tests' tenants (each test uses one
// of its own). What the suite covers is in clients/python/README.md, section Tests. Fails with
// pytest's output unless every test passed (none skipped).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startServer } from '../lib/server.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// Debian's python3, not another one on PATH (the package is tested with what Debian 12 ships).
const PYTHON = '/usr/bin/python3';

function run(file, args, env) {
  return new Promise((resolve, reject) => {
    // Asynchronous, so that memoryd's stderr (read by tests/lib/server.mjs) keeps flowing meanwhile.
    const p = spawn(file, args, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { out += d; });
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, out }));
  });
}

test('clients/python: pytest against a live memoryd', async () => {
  const pytest = await run(PYTHON, ['-c', 'import pytest'], process.env);
  assert.equal(pytest.code, 0, `${PYTHON} cannot import pytest: install python3-pytest (scripts/setup.sh --test)\n${pytest.out}`);
  const md = await startServer();
  try {
    const env = { ...process.env, MEMORYD_URL: md.url, MEMORYD_TENANT: `py${process.pid}`, PYTHONDONTWRITEBYTECODE: '1' };
    for (const k of Object.keys(env)) if (k.startsWith('PIP_') || (k.startsWith('PYTHON') && k !== 'PYTHONDONTWRITEBYTECODE')) delete env[k];
    // -p no:cacheprovider: no .pytest_cache in the source tree; -rs lists any skipped test.
    const r = await run(PYTHON, ['-m', 'pytest', 'clients/python/tests', '-q', '-p', 'no:cacheprovider', '-rs'], env);
    assert.equal(r.code, 0, `pytest failed:\n${r.out}`);
    // Only passes: no failure, skip, expected failure or warning in pytest's summary line.
    assert.match(r.out, /^\d+ passed in /m, r.out);
  } finally {
    await md.stop();
    fs.rmSync(md.dir, { recursive: true, force: true });
  }
});
