// The README's curl examples of "Using it with curl", run verbatim against a live memoryd on
// an empty database, in order; each must print exactly the output the README shows.
// The only change made to a command: "localhost:8080" points at the test server's port.
// A line starting with "$ " is a command, the lines up to the next command are its output
// (compared without curl's missing final newline).
//
// The ```console blocks of "Deploy" and "Use from an agent" go through the authenticating
// proxy: tests/deploy/readme-examples.test.mjs runs them (and the other examples) against
// nginx + memoryd. This test checks that no ```console block is outside those sections.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer } from '../lib/server.mjs';
import { codeBlocks, consoleExamples, runConsole } from '../lib/examples.mjs';

const root = process.env.MD_SOURCE_DIR || path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const blocks = codeBlocks(fs.readFileSync(path.join(root, 'README.md'), 'utf8'));

test('every ```console block of README.md is in a section whose examples a test runs', () => {
  const sections = blocks.filter((b) => b.lang === 'console').map((b) => b.section);
  assert.deepEqual([...new Set(sections)], ['Using it with curl', 'Deploy', 'Use from an agent']);
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
