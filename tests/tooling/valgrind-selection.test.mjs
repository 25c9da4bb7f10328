// The valgrind tier's selection cannot rot silently: scripts/valgrind.sh runs by default only the
// tests scripts/valgrind-select.mjs chose (SELECTED: files, or tests of a file by name), the files
// whose lines they execute being COVERED; every candidate suite is in exactly one of the two
// lists, every listed file is a candidate (valgrind.sh --check), and every listed test name is
// the name of a test of its file (a renamed test would match nothing, and run nothing). A new
// suite runs whole under valgrind until it is classified, but this test fails meanwhile: run
// scripts/valgrind-select.mjs --write. Checked on the checkout, and on a copy of the script and
// the suites with a suite added, one removed and a test renamed. Starts no memoryd.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../lib/server.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SUITE_DIRS = ['tests/integration', 'tests/robustness'];
let copy;

const valgrindSh = (cwd, ...args) => {
  const r = spawnSync(path.join(cwd, 'scripts/valgrind.sh'), args, { cwd, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
};
// --list: a line `COST FILE` for each file, then `  :: NAME` for each test of a file run in part.
const listed = (r) => r.out.split('\n').filter((l) => /^\d/.test(l)).map((l) => l.split(' ')[1]);
function namesListed(r) {
  const out = [];
  let file;
  for (const l of r.out.split('\n')) {
    if (/^\d/.test(l)) file = l.split(' ')[1];
    else if (l.startsWith('  :: ')) out.push({ file, name: l.slice(5) });
  }
  return out;
}

// The listed names that are no test's name in their file: the names written as string literals
// after test(, it( or describe(, a template literal's ${...} standing for any text.
function unknownNames(root, names) {
  return names.filter(({ file, name }) => {
    const src = fs.readFileSync(path.join(root, file), 'utf8');
    const literals = src.matchAll(/\b(?:test|it|describe)\(\s*(['"`])((?:\\.|(?!\1)[^\\])*)\1/g);
    return ![...literals].some(([, q, body]) => {
      const parts = (q === '`' ? body.split(/\$\{[^}]*\}/) : [body])
        .map((p) => p.replace(/\\(.)/g, '$1').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
      return new RegExp(`^${parts.join('.*')}$`, 's').test(name);
    });
  });
}

before(() => {
  copy = tempDir('memoryd-valgrind-selection-');
  fs.mkdirSync(path.join(copy, 'scripts'));
  fs.copyFileSync(path.join(repo, 'scripts/valgrind.sh'), path.join(copy, 'scripts/valgrind.sh'));
  fs.chmodSync(path.join(copy, 'scripts/valgrind.sh'), 0o755);
  for (const dir of SUITE_DIRS) {
    fs.mkdirSync(path.join(copy, dir), { recursive: true });
    for (const f of fs.readdirSync(path.join(repo, dir)).filter((f) => f.endsWith('.test.mjs'))) {
      fs.copyFileSync(path.join(repo, dir, f), path.join(copy, dir, f));
    }
  }
});

after(() => fs.rmSync(copy, { recursive: true, force: true }));

test('every candidate suite is SELECTED or COVERED in scripts/valgrind.sh, and only candidates are', () => {
  const r = valgrindSh(repo, '--check');
  assert.equal(r.code, 0, `${r.err}(the selection is out of date: scripts/valgrind-select.mjs --write)`);
});

test('every test SELECTED by name is a test of its file', () => {
  const names = namesListed(valgrindSh(repo, '--list'));
  assert.ok(names.length > 0, 'no file is run in part');
  assert.deepEqual(unknownNames(repo, names), [], 'renamed? run scripts/valgrind-select.mjs --write');
});

test('by default the SELECTED run, their shares make them up, --all runs every candidate whole', () => {
  const all = valgrindSh(repo, '--all', '--list');
  assert.deepEqual(namesListed(all), []);
  const selected = listed(valgrindSh(repo, '--list'));
  assert.ok(selected.length > 0 && selected.length <= listed(all).length);
  assert.ok(selected.every((f) => listed(all).includes(f)));
  assert.ok(!listed(all).some((f) => /\/(soak|sigkill|export-large)\.test\.mjs$/.test(f)), all.out);
  for (const n of [1, 3]) {
    const shares = Array.from({ length: n }, (_, k) => listed(valgrindSh(repo, '--part', `${k + 1}/${n}`, '--list')));
    assert.deepEqual(shares.flat().sort(), [...selected].sort(), `${n} shares`);
  }
  // Entries given run exactly, whatever the lists say.
  const given = valgrindSh(repo, '--list', 'tests/robustness/soak.test.mjs', 'tests/integration/forms.test.mjs :: a b');
  assert.deepEqual(listed(given), ['tests/robustness/soak.test.mjs', 'tests/integration/forms.test.mjs']);
  assert.deepEqual(namesListed(given), [{ file: 'tests/integration/forms.test.mjs', name: 'a b' }]);
});

test('a new suite fails the check, and runs whole under valgrind until it is classified', () => {
  assert.equal(valgrindSh(copy, '--check').code, 0);
  const added = 'tests/integration/zz-new-suite.test.mjs';
  fs.writeFileSync(path.join(copy, added), '');
  try {
    const r = valgrindSh(copy, '--check');
    assert.notEqual(r.code, 0);
    assert.match(r.err, /zz-new-suite\.test\.mjs is new to the valgrind selection/);
    assert.ok(listed(valgrindSh(copy, '--list')).includes(added));
  } finally {
    fs.rmSync(path.join(copy, added));
  }
});

test('a listed suite that is gone fails the check', () => {
  const gone = listed(valgrindSh(copy, '--list'))[0];
  fs.renameSync(path.join(copy, gone), path.join(copy, `${gone}.away`));
  try {
    const r = valgrindSh(copy, '--check');
    assert.notEqual(r.code, 0);
    assert.ok(r.err.includes(`${gone} is listed in scripts/valgrind.sh but is not a candidate`), r.err);
  } finally {
    fs.renameSync(path.join(copy, `${gone}.away`), path.join(copy, gone));
  }
});

test('a selected test renamed is found', () => {
  const names = namesListed(valgrindSh(copy, '--list'));
  assert.deepEqual(unknownNames(copy, names), []);
  const { file, name } = names[0];
  const src = fs.readFileSync(path.join(copy, file), 'utf8');
  const word = name.match(/[a-z]{4,}/)[0];
  fs.writeFileSync(path.join(copy, file), src.replaceAll(word, `${word}-renamed`));
  try {
    assert.deepEqual(unknownNames(copy, names).filter((n) => n.name === name), [{ file, name }]);
  } finally {
    fs.writeFileSync(path.join(copy, file), src);
  }
});
