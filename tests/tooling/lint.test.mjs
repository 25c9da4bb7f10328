// scripts/lint.sh holds wherever the suite runs, and fails when it should: in a copy of the
// sources without .git (a tarball, an export) it lists the same C files as in the checkout,
// passes on clean code, and fails on a badly formatted file or on a build directory that
// does not describe the files (clang-tidy's compile commands). An earlier version listed the
// files with git and passed outside a git checkout, having checked nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../lib/server.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let copy;

const lint = (cwd, ...args) => {
  const r = spawnSync(path.join(cwd, 'scripts/lint.sh'), args, { cwd, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
};

before(() => {
  copy = tempDir('memoryd-lint-copy-');
  const skip = (src) => !/\/(node_modules|\.git)(\/|$)/.test(src) && !/\/build[^/]*$/.test(src);
  for (const entry of ['scripts', 'src', 'include', 'tests', 'bench', '.clang-format', '.clang-tidy']) {
    fs.cpSync(path.join(repo, entry), path.join(copy, entry), { recursive: true, filter: skip });
  }
  assert.ok(!fs.existsSync(path.join(copy, '.git')));
});

after(() => fs.rmSync(copy, { recursive: true, force: true }));

test('outside a git checkout the C files are listed as in the checkout', () => {
  const here = lint(repo, 'files');
  const there = lint(copy, 'files');
  assert.equal(here.code, 0, here.err);
  assert.equal(there.code, 0, there.err);
  const files = there.out.split('\n').filter(Boolean);
  assert.ok(files.includes('src/http/reply.c') && files.includes('include/store/md_store.h') && files.includes('tests/unit/test_path.c'), there.out);
  assert.deepEqual(files, here.out.split('\n').filter(Boolean));
});

test('format: clean code passes in the copy, a badly formatted file fails and is named', () => {
  const clean = lint(copy, 'format');
  assert.equal(clean.code, 0, clean.err);
  fs.appendFileSync(path.join(copy, 'src/base/buf.c'), '\nstatic int   badly_formatted( void ){return 1;}\n');
  const bad = lint(copy, 'format');
  assert.notEqual(bad.code, 0, 'a badly formatted file passed');
  assert.match(bad.err, /src\/base\/buf\.c/);
});

test('tidy: a missing build directory, or one that does not describe the sources, fails', () => {
  const none = lint(copy, 'tidy', path.join(copy, 'no-such-build'));
  assert.notEqual(none.code, 0);
  assert.match(none.err, /compile_commands\.json missing/);
  // The checkout's own build names the checkout's files, not the copy's: every file of the
  // copy is unaccounted for, and the first one stops the check.
  const build = path.dirname(process.env.MD_TEST_BIN ?? path.join(repo, 'build/memoryd'));
  assert.ok(fs.existsSync(path.join(build, 'compile_commands.json')), `no compile_commands.json in ${build}`);
  const foreign = lint(copy, 'tidy', build);
  assert.notEqual(foreign.code, 0);
  assert.match(foreign.err, /^lint: \S+\.c has no entry in /);
});
