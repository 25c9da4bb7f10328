// The curl examples of the documents, each block run verbatim against a live memoryd of its
// own on an empty database, in order; each must print exactly the output the document shows:
//   - README.md, "Using it with curl";
//   - docs/tenants.md, "Quotas" and "Tenant administration" (its last_write times compared by
//     their form);
//   - docs/api.md, "History, restore and safe retries".
// The only change made to a command: "localhost:8080" points at the test server's port.
// A line starting with "$ " is a command, the lines up to the next command are its output
// (compared without curl's missing final newline). In the history block, times are compared
// by their form: each `"time":"<ISO 8601 UTC with milliseconds>"` of both the output and the
// document's text stands for any such time; everything else is exact (entity tags and hashes
// are the SHA-256 of the contents shown). All run on SQLite and, as pg/integration/readme, on
// PostgreSQL.
//
// The ```console blocks of docs/deploy.md go through the authenticating proxy:
// tests/deploy/readme-examples.test.mjs runs them (and docker/README.md's) against nginx +
// memoryd. This test checks that no ```console block of README.md or docs/*.md is outside the
// sections these two tests run.
//
// README.md's ```python example uses the Python client: it runs here too, with the client of
// clients/python on the import path, and what it wrote is checked with a view.
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
const docBlocks = (doc) => codeBlocks(fs.readFileSync(path.join(root, doc), 'utf8'));
const readme = docBlocks('README.md');
const blocks = [...readme, ...docBlocks('docs/tenants.md'), ...docBlocks('docs/api.md')];

// The sections whose ```console blocks a test runs, per document.
const RUN = {
  'README.md': ['Using it with curl'], // here
  'docs/tenants.md': ['Quotas', 'Tenant administration'], // here
  'docs/api.md': ['History, restore and safe retries'], // here
  'docs/deploy.md': ['Through the proxy', 'From code, through the proxy'], // tests/deploy/readme-examples.test.mjs
};

test('every ```console block of README.md and docs/*.md is in a section whose examples a test runs', () => {
  const docs = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const found = {};
  for (const doc of docs) {
    const sections = [...new Set(docBlocks(doc).filter((b) => b.lang === 'console').map((b) => b.section))];
    if (sections.length) found[doc] = sections;
  }
  assert.deepEqual(found, RUN);
});

test('README.md: the curl examples run verbatim with the documented output', async () => {
  const list = consoleExamples(readme.filter((b) => b.section === 'Using it with curl'));
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

test('docs/tenants.md: the quota examples run verbatim with the documented output', async () => {
  const list = consoleExamples(blocks.filter((b) => b.section === 'Quotas'));
  for (const needle of ['PUT localhost:8080/v1/tenants/', 'localhost:8080/v1/tenants/alice', 'Memory is full: ']) {
    assert.ok(list.some((e) => e.command.includes(needle) || e.expected.join('\n').includes(needle)), `no quota example with ${needle}`);
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

test('docs/tenants.md: the tenant administration examples run verbatim with the documented output (times aside)', async () => {
  const list = consoleExamples(blocks.filter((b) => b.section === 'Tenant administration'));
  for (const needle of ["localhost:8080/v1/tenants?limit=1'", '-X DELETE localhost:8080/v1/tenants/']) {
    assert.ok(list.some((e) => e.command.includes(needle)), `no tenant administration example with ${needle}`);
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

test('docs/api.md: the history examples run verbatim with the documented output (times aside)', async () => {
  const list = consoleExamples(blocks.filter((b) => b.section === 'History, restore and safe retries'));
  assert.ok(list.length >= 15, `expected the history examples, found ${list.length}`);
  for (const needle of ['If-Match: "sha256-', 'Idempotency-Key: ', 'X-Memory-Actor: ', '/v1/history?', '/v1/versions/', '/v1/restore', '/v1/redact', '/v1/changes?']) {
    assert.ok(list.some((e) => e.command.includes(needle)), `no history example with ${needle}`);
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

// The Python client, where this tree has it (clients/python, a package of the standard library
// only): README.md's example as written, against memoryd on localhost:8080.
const PYTHON_CLIENT = path.join(root, 'clients/python');

test('README.md: the Python example runs with the Python client and writes what it says', { skip: !fs.existsSync(PYTHON_CLIENT) && 'clients/python is not in this tree' }, async () => {
  const py = readme.filter((b) => b.lang === 'python');
  assert.equal(py.length, 1, 'README.md has one python example');
  assert.equal(py[0].section, 'Using it from an agent');
  const srv = await startServer();
  try {
    const env = { ...process.env, PYTHONPATH: [path.join(PYTHON_CLIENT, 'src'), PYTHON_CLIENT].join(path.delimiter) };
    const { stdout, stderr } = await execFileP('python3', ['-c', pointAt(py[0].text, srv.port)], { env });
    assert.equal(stderr, '');
    assert.match(stdout, /- indent: tabs/);
    const r = await srv.post({ command: 'view', path: '/memories/prefs.md' }, { tenant: 'alice' });
    assert.equal(r.json.content, "Here's the content of /memories/prefs.md with line numbers:\n     1\t- indent: tabs\n     2\t");
  } finally {
    await srv.stop();
  }
});
