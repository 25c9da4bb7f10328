// The README's curl examples of "Using it with curl", of "Quotas", of "Tenant administration"
// (its last_write times compared by their form), and those of "History,
// restore and safe retries", each block run verbatim against a live memoryd of its own on an empty database, in
// order; each must print exactly the output the README shows.
// The only change made to a command: "localhost:8080" points at the test server's port.
// A line starting with "$ " is a command, the lines up to the next command are its output
// (compared without curl's missing final newline). In the history block, times are compared
// by their form: each `"time":"<ISO 8601 UTC with milliseconds>"` of both the output and the
// README's text stands for any such time; everything else is exact (entity tags and hashes
// are the SHA-256 of the contents shown). Both blocks run on SQLite and, as
// pg/integration/readme, on PostgreSQL.
//
// The ```console blocks of "Deploy" and "Use from an agent" go through the authenticating
// proxy: tests/deploy/readme-examples.test.mjs runs them (and the other examples) against
// nginx + memoryd. This test checks that no ```console block is outside those sections.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer } from '../lib/server.mjs';
import { codeBlocks, consoleExamples, pointAt, runConsole } from '../lib/examples.mjs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

const root = process.env.MD_SOURCE_DIR || path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const blocks = codeBlocks(fs.readFileSync(path.join(root, 'README.md'), 'utf8'));

test('every ```console block of README.md is in a section whose examples a test runs', () => {
  const sections = blocks.filter((b) => b.lang === 'console').map((b) => b.section);
  assert.deepEqual([...new Set(sections)], ['Using it with curl', 'Quotas', 'Tenant administration', 'History, restore and safe retries', 'Deploy', 'Use from an agent']);
});

test('README curl examples run verbatim with the documented output', async () => {
  const list = consoleExamples(blocks.filter((b) => b.section === 'Using it with curl'));
  assert.ok(list.length >= 12, `expected the README to show at least 12 examples, found ${list.length}`);
  for (const cmd of ['view', 'create', 'str_replace', 'insert', 'delete', 'rename']) {
    assert.ok(list.some((e) => e.command.includes(`"command":"${cmd}"`)), `no README example for ${cmd}`);
  }
  const srv = await startServer();
  try {
    await runConsole(list, srv.port);
  } finally {
    await srv.stop();
  }
});

test('README quota examples run verbatim with the documented output', async () => {
  const list = consoleExamples(blocks.filter((b) => b.section === 'Quotas'));
  for (const needle of ['PUT localhost:8080/v1/tenants/', 'localhost:8080/v1/tenants/alice', 'Memory is full: ']) {
    assert.ok(list.some((e) => e.command.includes(needle) || e.expected.join('\n').includes(needle)), `no README quota example with ${needle}`);
  }
  const srv = await startServer();
  try {
    await runConsole(list, srv.port);
  } finally {
    await srv.stop();
  }
});

const TIME = /"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"/g;
const anyTime = (text) => text.replace(TIME, '"time":"<time>"');
const LAST_WRITE = /"last_write":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"/g;
const anyLastWrite = (text) => text.replace(LAST_WRITE, '"last_write":"<time>"');

test('README tenant administration examples run verbatim with the documented output (times aside)', async () => {
  const list = consoleExamples(blocks.filter((b) => b.section === 'Tenant administration'));
  for (const needle of ["localhost:8080/v1/tenants?limit=1'", '-X DELETE localhost:8080/v1/tenants/']) {
    assert.ok(list.some((e) => e.command.includes(needle)), `no README tenant administration example with ${needle}`);
  }
  const srv = await startServer();
  try {
    for (const ex of list) {
      const { stdout } = await execFileP('bash', ['-c', pointAt(ex.command, srv.port)]);
      const got = stdout.endsWith('\n') ? stdout.slice(0, -1) : stdout;
      assert.equal(anyLastWrite(got), anyLastWrite(ex.expected.join('\n')), `example: ${ex.command}`);
    }
  } finally {
    await srv.stop();
  }
});

test('README history examples run verbatim with the documented output (times aside)', async () => {
  const list = consoleExamples(blocks.filter((b) => b.section === 'History, restore and safe retries'));
  assert.ok(list.length >= 15, `expected the history examples, found ${list.length}`);
  for (const needle of ['If-Match: "sha256-', 'Idempotency-Key: ', 'X-Memory-Actor: ', '/v1/history?', '/v1/versions/', '/v1/restore', '/v1/redact', '/v1/changes?']) {
    assert.ok(list.some((e) => e.command.includes(needle)), `no README history example with ${needle}`);
  }
  // The placeholder is used only where a time is.
  const shown = list.flatMap((e) => e.expected).join('\n');
  assert.ok((shown.match(TIME) ?? []).length >= 5, 'the history examples show times');
  assert.ok(!shown.includes('<time>'));
  const srv = await startServer();
  try {
    for (const ex of list) {
      const { stdout } = await execFileP('bash', ['-c', pointAt(ex.command, srv.port)]);
      const got = stdout.endsWith('\n') ? stdout.slice(0, -1) : stdout;
      assert.equal(anyTime(got), anyTime(ex.expected.join('\n')), `example: ${ex.command}`);
    }
  } finally {
    await srv.stop();
  }
});
