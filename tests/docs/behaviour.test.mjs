// Holds docs/behaviour.md to the code, both ways:
//   - every answer text the page quotes (a code span that starts like one of memoryd's texts)
//     is made of what src/*.c writes: split at its {placeholders} and its \n and \t, each piece
//     must be exactly a run of whole text fragments of the code (its string literals, adjacent
//     ones joined as the compiler does, cut at their printf conversions, newlines and tabs; its
//     character literals; the string literals of the answer-text macros of include/, such as
//     MD_HISTORY_SCRUBBED_APPLIED and _REFUSED of md_history.h) and of the values the code puts
//     between them (a field or command name, a number);
//   - every text memoryd can answer with (each literal of the files that write answers that
//     starts with "Error: ", the JSON bodies of the other endpoints, the success texts and the
//     notes, the texts of the /v1 API and of preconditions, which have no "Error: ", and the
//     two texts, macros of include/store/md_history.h, that replace an idempotent answer when a
//     version is redacted) appears on the page, split at its printf conversions.
// So a message changed in the code, or one quoted wrongly, fails here; the live behaviour behind
// the texts is proved by the integration, conformance and OpenAPI tests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { commands, cStringLiterals, refusals, routes, unescapeC } from '../lib/vocabulary.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(process.env.MD_SOURCE_DIR || path.resolve(here, '../..'));
const PAGE = fs.readFileSync(path.join(ROOT, 'docs/behaviour.md'), 'utf8');

// ---- the C side ----

// The character literals of a C file.
function cCharLiterals(code) {
  const noComments = code.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, '').replace(/"(?:[^"\\\n]|\\.)*"/g, '""');
  return [...noComments.matchAll(/'((?:[^'\\\n]|\\.)+)'/g)].map((m) => unescapeC(m[1]));
}

// Every C file of src/, by its path below src/ ("cmd/parse.c").
const SOURCES = fs.readdirSync(path.join(ROOT, 'src'), { recursive: true }).filter((f) => f.endsWith('.c')).sort();
const readSrc = (f) => fs.readFileSync(path.join(ROOT, 'src', f), 'utf8');

// The string literals of the named macros of a header (their #define lines joined at their
// backslash-newlines first, as the compiler does), each macro's adjacent literals joined.
function macroLiterals(code, names) {
  const spliced = code.replace(/\\\r?\n/g, '');
  return names.flatMap((name) => {
    const m = spliced.match(new RegExp(`^[ \\t]*#[ \\t]*define[ \\t]+${name}\\b(.*)$`, 'm'));
    assert.ok(m, `#define ${name} not found`);
    return cStringLiterals(m[1]);
  });
}

// Answer texts defined as macros of include/ (and written by src/*.c through them): the texts
// that replace an answer kept for an idempotent retry when a version is redacted.
const HEADER_MACROS = { 'store/md_history.h': ['MD_HISTORY_SCRUBBED_APPLIED', 'MD_HISTORY_SCRUBBED_REFUSED'] };
const HEADER_LITERALS = Object.entries(HEADER_MACROS).flatMap(([f, names]) => macroLiterals(fs.readFileSync(path.join(ROOT, 'include', f), 'utf8'), names));
// The refusal texts (include/base/md_refusals.h): the code's too.
const REFUSALS = [...refusals().values()].map((r) => r.text);
const LITERALS = [...SOURCES.flatMap((f) => cStringLiterals(readSrc(f))), ...HEADER_LITERALS, ...REFUSALS];
const PRINTF = /%(?:zu|lld|llu|u|d|s|\.\*s|\.\d+s)/;
// Text fragments of the code: string literals cut at printf conversions, newlines and tabs;
// character literals.
const FRAGMENTS = [...new Set([...LITERALS.flatMap((l) => l.split(new RegExp(`${PRINTF.source}|[\\n\\t]`))), ...SOURCES.flatMap((f) => cCharLiterals(readSrc(f)))])].filter((f) => f !== '');
// What the code puts between fragments: the names of the command table's commands and fields
// (include/cmd/md_commands.def), the lists of paths the 404 texts name (made from
// include/http/md_routes.def, as src/http/routes.c makes them), and numbers.
// (longest first: the alternation takes the first that matches)
const NAMES = [...new Set(commands().commands.flatMap((c) => [c.name, ...c.fields.map((f) => f.name)]))].sort((a, b) => b.length - a.length);
const ROUTES = routes().routes;
function pathList(rows, { methods, orLast }) {
  const seen = [];
  for (const r of rows) if (!seen.some((x) => x.path === r.path)) seen.push(r);
  const items = seen.map((r) => (methods ? `${r.method} ${r.path}` : r.path));
  return orLast && items.length > 1 ? `${items.slice(0, -1).join(', ')} or ${items.at(-1)}` : items.join(', ');
}
const listed = ROUTES.filter((r) => !r.path.includes('{*}'));
const PATH_LISTS = [
  pathList(listed, { methods: true, orLast: true }),
  pathList(listed.filter((r) => r.path !== '/metrics'), { methods: true, orLast: true }),
  pathList(ROUTES.filter((r) => r.path.startsWith('/v1/tenants/') && !r.path.includes('{*}')), { orLast: true }),
];
const escape = (x) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
// A quoted text is cut at its {placeholders} before it is checked, and so are the lists
// (their paths have {version} and {tenant}): each piece of a list is a value.
const LIST_PIECES = [...new Set(PATH_LISTS.flatMap((l) => l.split(/\{[a-z][a-z0-9_+]*\}/)).filter((x) => x !== ''))].sort((a, b) => b.length - a.length);
const VALUE = new RegExp(`(?:${[...LIST_PIECES.map(escape), ...NAMES].join('|')}|-?\\d+)`, 'y');

// Whether `piece` is exactly a run of whole fragments and values.
function madeOfCode(piece) {
  const n = piece.length;
  const reach = new Array(n + 1).fill(false);
  reach[0] = true;
  for (let i = 0; i < n; i++) {
    if (!reach[i]) continue;
    for (const f of FRAGMENTS) if (piece.startsWith(f, i)) reach[i + f.length] = true;
    VALUE.lastIndex = i;
    const v = VALUE.exec(piece);
    if (v) reach[i + v[0].length] = true;
  }
  return reach[n];
}

// ---- the page ----

// The code spans of a Markdown text outside fenced blocks, with their line numbers
// (CommonMark: a run of n backticks closes at the next run of exactly n; one space is taken
// off each end when both ends have one).
function codeSpans(md) {
  const spans = [];
  let fenced = false;
  md.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return;
    }
    if (fenced) return;
    const re = /(`+)([\s\S]*?[^`])\1(?!`)/g;
    for (const m of line.matchAll(re)) {
      let t = m[2];
      if (t.length > 1 && t.startsWith(' ') && t.endsWith(' ') && t.trim() !== '') t = t.slice(1, -1);
      spans.push({ line: i + 1, text: t });
    }
  });
  return spans;
}

// How memoryd's answer texts start (the others quoted on the page are flags, paths, examples).
const ANSWER = /^(Error: |The path |Here're |Here's |No replacement |File |Successfully |The file |The memory file |\\n\[|\[Output |\[Listing | \(Note: |\{"status"|\{"error"|Version |Parameter `|Changes after |The command was (not )?applied|memoryd is shutting down)/;
const PLACEHOLDER = /\{[a-z][a-z0-9_+]*\}/g;

function quotedAnswers() {
  return codeSpans(PAGE).filter((s) => ANSWER.test(s.text));
}

test('self-check: code spans, placeholders and literals are read as intended', () => {
  const spans = codeSpans('a `x` and `` y `z` `` and ``Error: `q` {path}.``\n```\n`not`\n```\n`` (Note: n.)``').map((s) => s.text);
  assert.deepEqual(spans, ['x', 'y `z`', 'Error: `q` {path}.', ' (Note: n.)']);
  assert.deepEqual(cStringLiterals('f("a" /* c */ "b\\n", \'x\', "c");'), ['ab\n', 'c']);
  assert.deepEqual('Error: File {path} would be {bytes} bytes'.split(PLACEHOLDER), ['Error: File ', ' would be ', ' bytes']);
  assert.ok(LITERALS.length > 200, `only ${LITERALS.length} literals read from src/`);
  assert.deepEqual(cCharLiterals("putc('`'); x = '\\n'; s = \"'a'\"; // 'c'"), ['`', '\n']);
  assert.deepEqual(macroLiterals('#define A "x" \\\n    "y"\n#define AB \\\n  "z" /* c */ "w"\n', ['A', 'AB']), ['xy', 'zw']);
  assert.equal(HEADER_LITERALS.length, 2, `the answer-text macros of include/ read as ${JSON.stringify(HEADER_LITERALS)}`);
  for (const l of HEADER_LITERALS) assert.ok(l.length > 40, `an answer-text macro of include/ read as ${JSON.stringify(l)}`);
  // Pieces the code writes, from several fragments and values, pass; anything else fails.
  assert.ok(madeOfCode('Error: Parameter `old_str` must not be empty'));
  assert.ok(madeOfCode('. To see more, view again with view_range ['));
  assert.ok(madeOfCode(" header: a tenant id is 1 to 128 characters of A-Z, a-z, 0-9, '.', '_' and '-'"));
  assert.ok(!madeOfCode('Error: Parameter `old_str` must never be empty'));
  assert.ok(!madeOfCode('Error: The path is gone'));
  assert.ok(!madeOfCode('Error: File {path} already exist'.split(PLACEHOLDER)[1]));
});

test('every answer text quoted in docs/behaviour.md is made of the text of src/*.c', () => {
  const quoted = quotedAnswers();
  assert.ok(quoted.length >= 60, `only ${quoted.length} answer texts found on the page`);
  const problems = [];
  for (const { line, text } of quoted) {
    for (const piece of text.split(PLACEHOLDER).flatMap((p) => p.split(/\\[nt]/))) {
      if (piece.length < 3) continue; // ", ", "]", "B" and the like
      if (!madeOfCode(piece)) problems.push(`docs/behaviour.md:${line}: ${JSON.stringify(piece)} (of ${JSON.stringify(text)}) is not made of the text of src/*.c`);
    }
  }
  assert.deepEqual(problems, [], `\n${problems.join('\n')}\n`);
});

test('every answer text of src/*.c appears in docs/behaviour.md', () => {
  const writers = ['cmd/parse.c', 'cmd/view.c', 'cmd/edit.c', 'cmd/tree.c', 'cmd/history.c', 'base/path.c', 'base/text.c', 'http/health.c', 'cmd/writer.c', 'store/sqlite/history.c'];
  const answers = [...writers.flatMap((f) => cStringLiterals(readSrc(f))), ...REFUSALS].filter(
    (lit) =>
      lit.startsWith('Error: ') ||
      /^\{"(status|error)":"[^"]*"\}$/.test(lit) ||
      /^\n\[(Output|Listing) truncated/.test(lit) ||
      lit.startsWith(' (Note: ') ||
      /^(File created successfully at: |Successfully (deleted|renamed) |The file |Here're the files |Here's the content of |No replacement was performed|The memory file has been edited)/.test(lit) ||
      / exceeds maximum line limit | does not exist\. Please provide a valid path\.| has been edited\.| already exists|, over the |is a file, not a directory|cannot be moved inside itself| To see more, view again with view_range /.test(lit) ||
      // The /v1 API's own texts and the preconditions'.
      /^(Version |Parameter `|Changes after |The version in |memoryd is shutting down; retry)/.test(lit) ||
      / changed since you viewed it| has no history and does not exist/.test(lit) ||
      // The MCP endpoint's JSON-RPC error messages.
      /^(Parse error: |Invalid Request: |Invalid params: |Method not found: |Bad Request: |Session not found: |Too many MCP sessions |Forbidden: this Origin )/.test(lit),
  );
  // The answer-text macros of include/ (the scrubbed idempotent answers), every one of them.
  answers.push(...HEADER_LITERALS);
  assert.ok(answers.length >= 50, `only ${answers.length} answer texts found in src/`);
  const page = PAGE.replace(/`` (.*?) ``/g, '$1');
  const problems = [];
  for (const lit of answers) {
    for (const piece of lit.split(new RegExp(`${PRINTF.source}|\n`))) {
      if (piece.length >= 3 && !page.includes(piece)) problems.push(`${JSON.stringify(piece)} (of ${JSON.stringify(lit)})`);
    }
  }
  assert.deepEqual(problems, [], `texts of src/*.c missing from docs/behaviour.md:\n${problems.join('\n')}\n`);
});
