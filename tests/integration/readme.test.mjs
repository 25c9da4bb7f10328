// The README's curl examples, run verbatim against a live memoryd on an empty
// database, in order; each must print exactly the output the README shows.
// The only change made to a command: "localhost:8080" points at the test
// server's port. Every ```console block of README.md takes part: a line
// starting with "$ " is a command, the lines up to the next command are its
// output (compared without curl's missing final newline).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { startServer } from '../lib/server.mjs';

const run = promisify(execFile);
const root = process.env.MD_SOURCE_DIR || path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

function examples(markdown) {
  const out = [];
  const blocks = markdown.match(/^```console\n[\s\S]*?^```$/gm) || [];
  for (const block of blocks) {
    const lines = block.split('\n').slice(1, -1);
    for (const line of lines) {
      if (line.startsWith('$ ')) out.push({ command: line.slice(2), expected: [] });
      else out.at(-1).expected.push(line);
    }
  }
  return out;
}

test('README curl examples run verbatim with the documented output', async () => {
  const list = examples(fs.readFileSync(path.join(root, 'README.md'), 'utf8'));
  assert.ok(list.length >= 12, `expected the README to show at least 12 examples, found ${list.length}`);
  for (const cmd of ['view', 'create', 'str_replace', 'insert', 'delete', 'rename']) {
    assert.ok(list.some((e) => e.command.includes(`"command":"${cmd}"`)), `no README example for ${cmd}`);
  }
  const srv = await startServer();
  try {
    for (const ex of list) {
      const command = ex.command.replaceAll('localhost:8080', `127.0.0.1:${srv.port}`);
      const { stdout } = await run('bash', ['-c', command]);
      const got = stdout.endsWith('\n') ? stdout.slice(0, -1) : stdout;
      assert.equal(got, ex.expected.join('\n'), `README example: ${ex.command}`);
    }
  } finally {
    await srv.stop();
  }
});
