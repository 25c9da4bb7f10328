// Proves that the repository stands on its own: no document, source or test refers to a file
// outside it. Every text file of the tree is read (walked from the repository root without git,
// skipping .git, node_modules, build*/ directories, generated dist/ output, the fuzzers' input
// corpora and binary files), and the test fails, naming the file and line, on:
//   - a mention of a file kept outside the repository: the shared contract and performance
//     notes by name, the parent directory they lived in, or an absolute path of the machine
//     the repository was written on (the patterns are in FORBIDDEN below);
//   - a relative path (`../x`, in any file) that resolves outside the repository root;
//   - a relative link of a Markdown document (or of the Markdown in openapi.yaml) whose target
//     does not exist, or whose #anchor names no heading of the target document.
// A self-check first runs the checker on synthetic text, so that a scanner that finds nothing
// cannot pass unnoticed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { slug } from '../lib/markdown.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(process.env.MD_SOURCE_DIR || path.resolve(here, '../..'));

// Written in pieces so that this file does not trip over its own patterns.
const UP = '..' + '/';
const FORBIDDEN = [
  { re: new RegExp(escapeRe(UP + 'shared'), 'g'), why: 'points at a directory outside the repository' },
  { re: new RegExp(escapeRe('/' + 'work' + '/'), 'g'), why: 'names an absolute path of a machine, not of the repository' },
  { re: new RegExp(`\\b${'CONTRACT'}(?:\\.md)?\\s*§|\\b${'CONTRACT'}\\.md\\b`, 'g'), why: 'names a contract document that is not in the repository (see docs/behaviour.md)' },
  { re: new RegExp(`\\b${'PERF-NOTES'}\\.md\\b`, 'g'), why: 'names performance notes that are not in the repository (see bench/RESULTS.md)' },
];

function escapeRe(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// ---- walking the tree ----

const SKIP_DIRS = new Set(['.git', 'node_modules', 'dist']);
const SKIP_PATHS = new Set(['tests/fuzz/corpus']); // fuzzer inputs: data, not documents or sources

function walk(dir, out = []) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const abs = path.join(dir, entry.name);
    const rel = path.relative(ROOT, abs).split(path.sep).join('/');
    if (entry.isDirectory()) {
      if (SKIP_DIRS.has(entry.name) || entry.name.startsWith('build') || SKIP_PATHS.has(rel)) continue;
      walk(abs, out);
    } else if (entry.isFile() && entry.name !== '.git') {
      // (a `.git` file is a linked worktree's or a submodule's pointer to its git directory,
      // which is outside the tree by design: git's, not the repository's)
      out.push(rel);
    }
  }
  return out;
}

// Text: no NUL byte (databases, objects and other binaries have one early).
function readText(rel) {
  const buf = fs.readFileSync(path.join(ROOT, rel));
  if (buf.subarray(0, 65536).includes(0)) return null;
  return buf.toString('utf8');
}

// ---- Markdown: headings, anchors and links ----

// Every anchor a Markdown text offers: its headings' slugs (repeats numbered as GitHub does)
// and explicit <a id|name="...">.
export function anchorsOf(text) {
  const seen = new Map();
  const anchors = new Set();
  let fence = null;
  for (const line of text.split('\n')) {
    const f = line.match(/^\s*(`{3,}|~{3,})/);
    if (f) {
      if (!fence) fence = f[1][0];
      else if (f[1][0] === fence) fence = null;
      continue;
    }
    if (fence) continue;
    const h = line.match(/^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/);
    if (h) {
      const base = slug(h[1]);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]);
  }
  return anchors;
}

// The link targets of one line of Markdown (inline code left out): [text](target),
// reference definitions [id]: target, and href/src attributes.
function linkTargets(line) {
  const plain = line.replace(/(`+)[^`]*?\1/g, (m) => ' '.repeat(m.length));
  const out = [];
  for (const m of plain.matchAll(/\]\(\s*<?([^()\s<>]+(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+["'][^"']*["'])?\s*\)/g)) out.push(m[1]);
  const def = plain.match(/^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/);
  if (def) out.push(def[1]);
  for (const m of plain.matchAll(/\b(?:href|src)="([^"]+)"/g)) out.push(m[1]);
  return out;
}

const isMarkdown = (rel) => /\.(md|markdown)$/i.test(rel);
const hasMarkdown = (rel) => isMarkdown(rel) || /\.ya?ml$/i.test(rel); // openapi.yaml's descriptions

// ---- the checker ----

// Problems of one file: [{line, message}]. `fsView` answers what the checker asks of the tree
// (exists(abs), read(abs)), so that the self-check can run on synthetic files.
export function checkText(rel, text, fsView, root = ROOT) {
  const problems = [];
  const dir = path.dirname(path.join(root, rel));
  const inside = (abs) => abs === root || abs.startsWith(root + path.sep);
  const lines = text.split('\n');
  let fence = null;
  lines.forEach((line, i) => {
    const at = i + 1;
    for (const { re, why } of FORBIDDEN) {
      re.lastIndex = 0;
      for (const m of line.matchAll(re)) problems.push({ line: at, message: `"${m[0]}" ${why}` });
    }
    // Relative paths in any file: "../" at the start of a token (not inside a path such as
    // /memories/../x), resolved from the file's directory.
    for (const m of line.matchAll(/(?<![\w.\/@~-])((?:\.\.\/)+(?:\.\.(?![\w.-]))?[^\s'"`()\[\]{}<>,;|*]*)/g)) {
      const abs = path.resolve(dir, m[1].split('#')[0]);
      if (!inside(abs)) problems.push({ line: at, message: `relative path "${m[1]}" resolves outside the repository` });
    }
    if (!hasMarkdown(rel)) return;
    const f = line.match(/^\s*(`{3,}|~{3,})/);
    if (isMarkdown(rel)) {
      if (f) {
        if (!fence) fence = f[1][0];
        else if (f[1][0] === fence) fence = null;
        return;
      }
      if (fence) return;
    }
    for (const target of linkTargets(line)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) && !/^file:/i.test(target)) continue; // a URL
      if (/^file:/i.test(target)) {
        problems.push({ line: at, message: `link "${target}" points at a local file outside the repository` });
        continue;
      }
      const [file, anchor] = target.split('#');
      let abs;
      try {
        abs = file === '' ? path.join(root, rel) : path.resolve(file.startsWith('/') ? root : dir, decodeURIComponent(file.replace(/^\//, '')));
      } catch {
        problems.push({ line: at, message: `link "${target}" cannot be decoded` });
        continue;
      }
      if (!inside(abs)) {
        problems.push({ line: at, message: `link "${target}" points outside the repository` });
      } else if (!fsView.exists(abs)) {
        problems.push({ line: at, message: `link "${target}": ${path.relative(root, abs) || '.'} does not exist in the repository` });
      } else if (anchor && isMarkdown(abs) && !anchorsOf(fsView.read(abs)).has(decodeURIComponent(anchor))) {
        problems.push({ line: at, message: `link "${target}": no heading of ${path.relative(root, abs)} has the anchor #${anchor}` });
      }
    }
  });
  return problems;
}

const realFs = {
  exists: (abs) => fs.existsSync(abs),
  read: (abs) => fs.readFileSync(abs, 'utf8'),
};

const report = (rel, problems) => problems.map((p) => `${rel}:${p.line}: ${p.message}`);

// ---- the tests ----

test('self-check: the checker finds each kind of bad reference, with its line', () => {
  const root = path.join(path.sep, 'repo');
  const files = new Map([
    [path.join(root, 'README.md'), '# Top\n\n## Two words\n'],
    [path.join(root, 'docs', 'guide.md'), '# Guide\n'],
  ]);
  const view = { exists: (abs) => files.has(abs) || abs === root || abs === path.join(root, 'docs'), read: (abs) => files.get(abs) };
  const shared = UP + 'shared';
  const text = [
    '# Guide', // 1
    'See [the guide](guide.md) and [the top](../README.md#two-words).', // 2: fine
    `Follow [the contract](${UP}${shared}/${'CONTRACT'}.md).`, // 3: outside, the directory, the name
    'A [missing page](missing.md) and [a bad anchor](../README.md#three).', // 4: two problems
    '```sh', // 5
    'cat [not a link](nowhere.md)', // 6: inside a fence: no link
    '```', // 7
    `Measured in \`${UP}${UP}notes/x.md\` and under /${'work'}/main.`, // 8: outside, machine path
    'Also [an external page](https://example.com/x) and [this page](#guide).', // 9: fine
    `Or [a file URL](file:///etc/hosts), the ${'PERF-NOTES'}.md and ${'CONTRACT'} §3.`, // 10: three
    '[ref]: ../../elsewhere.md', // 11: outside (the link and the relative path)
  ].join('\n');
  const got = checkText('docs/guide.md', text, view, root).map((p) => `${p.line}: ${p.message}`);
  const lineOf = (s) => Number(s.split(':')[0]);
  assert.deepEqual([...new Set(got.map(lineOf))], [3, 4, 8, 10, 11], got.join('\n'));
  assert.equal(got.filter((s) => lineOf(s) === 3).length, 4, got.join('\n')); // directory, name, relative path, link
  assert.ok(got.some((s) => /^3: link ".*" points outside the repository$/.test(s)), got.join('\n'));
  assert.ok(got.includes('4: link "missing.md": docs/missing.md does not exist in the repository'), got.join('\n'));
  assert.ok(got.includes('4: link "../README.md#three": no heading of README.md has the anchor #three'), got.join('\n'));
  assert.equal(got.filter((s) => lineOf(s) === 8).length, 2, got.join('\n'));
  assert.equal(got.filter((s) => lineOf(s) === 10).length, 3, got.join('\n'));
  assert.equal(got.filter((s) => lineOf(s) === 11).length, 2, got.join('\n'));
  // In a source file: only the mentions and the relative paths count (no Markdown links).
  const src = [`// see ${shared}/notes`, "import x from '../lib/x.mjs';", `const p = '${UP.repeat(4)}etc';`, "const q = '/memories/../etc';"].join('\n');
  const srcGot = checkText('tests/unit/a.mjs', src, view, root).map((p) => `${p.line}: ${p.message}`);
  assert.deepEqual(srcGot.map(lineOf), [1, 3], srcGot.join('\n'));
  // Anchors as GitHub makes them.
  assert.equal(slug('What the tests exercise, and what they do not'), 'what-the-tests-exercise-and-what-they-do-not');
  assert.equal(slug('`view`: files and `view_range`'), 'view-files-and-view_range');
  assert.deepEqual([...anchorsOf('# A\n## A\n```\n# not\n```\n<a id="x"></a>')], ['a', 'a-1', 'x']);
});

test('no file of the repository refers to a file outside it; every relative link resolves', () => {
  const files = walk(ROOT);
  for (const must of ['README.md', 'openapi.yaml', 'docs/behaviour.md', 'LICENSE', 'src/http/reply.c', 'tests/docs/links.test.mjs']) {
    assert.ok(files.includes(must), `${must} was not among the files checked`);
  }
  const problems = [];
  let checked = 0;
  for (const rel of files.sort()) {
    const text = readText(rel);
    if (text === null) continue;
    checked++;
    problems.push(...report(rel, checkText(rel, text, realFs)));
  }
  assert.ok(checked > 100, `only ${checked} text files were checked`);
  assert.deepEqual(problems, [], `\n${problems.join('\n')}\n`);
});

test('the license: LICENSE is the MIT text, and the README and openapi.yaml say MIT', () => {
  const license = readText('LICENSE');
  assert.match(license, /^MIT License\n\nCopyright \(c\) \d{4} the memoryd authors\n\nPermission is hereby granted, free of charge,/);
  assert.match(license, /THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND/);
  const readme = readText('README.md');
  assert.match(readme, /\n## License\n\nmemoryd is released under the MIT License: see \[LICENSE\]\(LICENSE\)/);
  assert.match(readText('openapi.yaml'), /\n {2}license:\n {4}name: MIT\n {4}identifier: MIT\n/);
});
