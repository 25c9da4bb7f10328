// Keeps docs/architecture.md true of the tree: every file it names in a code span exists, each
// engine's list of files is exactly the .c files of its folder, in the order its internal.h
// lists them (bottom up), and the page stays within two pages. A self-check first runs the
// name finder on synthetic text, so that a finder that finds nothing cannot pass unnoticed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(process.env.MD_SOURCE_DIR || path.resolve(here, '../..'));
const DOC = 'docs/architecture.md';
const MAX_LINES = 120; // two printed pages of 60 lines

// The file names of the code spans of `text`: a span that is a path ending in .c, .h, .def or
// .mjs (or src/LAYERS), with any "#include" or quotes around it taken off.
function namedFiles(text) {
  const out = [];
  for (const m of text.matchAll(/`([^`\n]+)`/g)) {
    const span = m[1].replace(/^#include\s+"?/, '').replace(/"$/, '');
    if (/^[\w./-]+\.(c|h|def|mjs)$/.test(span) || span === 'src/LAYERS') out.push(span);
  }
  return out;
}

// Where a name of the page is: as written from the root, from src/ or include/ (the page writes
// `http/daemon.c` for src/http/daemon.c), or, for a bare name, any file of that name there.
function resolves(name) {
  for (const base of ['', 'src/', 'include/']) {
    if (fs.existsSync(path.join(ROOT, base, name))) return true;
  }
  if (name.includes('/')) return false;
  const walk = (dir) =>
    fs.readdirSync(dir, { withFileTypes: true }).some((e) =>
      e.isDirectory() ? walk(path.join(dir, e.name)) : e.name === name,
    );
  return walk(path.join(ROOT, 'src')) || walk(path.join(ROOT, 'include'));
}

// The engine's files in the order its internal.h lists them: "  name.c   what it does".
function internalOrder(folder) {
  const text = fs.readFileSync(path.join(ROOT, folder, 'internal.h'), 'utf8');
  const head = text.slice(0, text.indexOf('*/'));
  return [...head.matchAll(/^ \*\s{2,}(\w+\.c)\s/gm)].map((m) => m[1]);
}

const doc = fs.readFileSync(path.join(ROOT, DOC), 'utf8');

test('the name finder finds names (self-check)', () => {
  assert.deepEqual(namedFiles('see `http/daemon.c`, `#include "store/md_store.h"`, `md_errors.def` and `POST /memory`'), [
    'http/daemon.c',
    'store/md_store.h',
    'md_errors.def',
  ]);
  assert.equal(resolves('http/no-such-file.c'), false);
  assert.equal(resolves('no-such-file.c'), false);
});

test('every file docs/architecture.md names exists', () => {
  const names = namedFiles(doc);
  assert.ok(names.length > 40, `only ${names.length} file names found in ${DOC}`);
  const missing = names.filter((n) => !resolves(n));
  assert.deepEqual(missing, [], `${DOC} names files that do not exist`);
});

// Every folder of src/store/ is an engine's.
const engines = fs
  .readdirSync(path.join(ROOT, 'src/store'), { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name);

test('the engines are found (self-check)', () => {
  assert.ok(engines.includes('sqlite') && engines.includes('pg'), `engines found: ${engines}`);
});

for (const engine of engines) {
  test(`docs/architecture.md lists the files of store/${engine}/ bottom up, as its internal.h`, () => {
    const m = doc.match(new RegExp('`store/' + engine + '/` has ([^;]+?)(?:;|\\. Both)'));
    assert.ok(m, `${DOC} has no list of store/${engine}/'s files`);
    const listed = [...m[1].matchAll(/`(\w+\.c)`/g)].map((x) => x[1]);
    const folder = `src/store/${engine}`;
    const order = internalOrder(folder);
    // store.c closes both lists in the page's own words ("both end in `store.c`")
    assert.deepEqual([...listed, 'store.c'], order, `${DOC} and ${folder}/internal.h disagree`);
    const files = fs
      .readdirSync(path.join(ROOT, folder))
      .filter((f) => f.endsWith('.c'))
      .sort();
    assert.deepEqual([...order].sort(), files, `${folder}/internal.h does not list every file of the folder`);
  });
}

test('docs/architecture.md stays within two pages', () => {
  const lines = doc.split('\n').length;
  assert.ok(lines <= MAX_LINES, `${DOC} has ${lines} lines (at most ${MAX_LINES})`);
});
