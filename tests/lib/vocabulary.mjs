// memoryd's vocabulary as its one source defines it, for the tests that hold openapi.yaml and
// docs/behaviour.md to the code: the error classes (include/base/md_errors.def), the refusal
// texts (include/base/md_refusals.h), the commands (include/cmd/md_commands.def) and the routes
// (include/http/md_routes.def). Each reader checks that it read every row it found.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (f) => fs.readFileSync(path.join(ROOT, f), 'utf8');

// A C string literal's text (the escapes the sources use; another is an error).
export function unescapeC(s) {
  const simple = { n: '\n', t: '\t', r: '\r', '"': '"', "'": "'", '\\': '\\', '?': '?', a: '\x07', b: '\b', f: '\f', v: '\v', 0: '\0' };
  return s.replace(/\\(x[0-9a-fA-F]+|.)/g, (m, c) => {
    if (c[0] === 'x') return String.fromCharCode(parseInt(c.slice(1), 16));
    assert.ok(c in simple, `unexpected C escape ${m}`);
    return simple[c];
  });
}

// The string literals of C code, adjacent ones joined (as the compiler does); comments and
// character literals are not text.
export function cStringLiterals(code) {
  const token = /\/\*[\s\S]*?\*\/|\/\/[^\n]*|'(?:[^'\\\n]|\\.)*'|"((?:[^"\\\n]|\\.)*)"/g;
  const out = [];
  let current = null;
  let lastEnd = 0;
  let m;
  while ((m = token.exec(code))) {
    if (m[1] === undefined) {
      if (m[0][0] === "'" && current !== null) {
        out.push(current);
        current = null;
      }
      continue; // a comment (whitespace to the compiler) or a character literal
    }
    const between = code.slice(lastEnd, m.index).replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, '');
    const text = unescapeC(m[1]);
    if (current !== null && /^\s*$/.test(between)) current += text;
    else {
      if (current !== null) out.push(current);
      current = text;
    }
    lastEnd = token.lastIndex;
  }
  if (current !== null) out.push(current);
  return out;
}

// The macro invocations NAME(...) of a .def file (comments removed), each with its arguments
// split at the top level: [{name, args: [text, ...]}].
function invocations(code, names) {
  const text = code.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/^\s*#.*$/gm, '');
  const out = [];
  const re = new RegExp(`\\b(${names.join('|')})\\(`, 'g');
  let m;
  while ((m = re.exec(text))) {
    let depth = 1;
    let i = re.lastIndex;
    let arg = '';
    const args = [];
    let inStr = false;
    for (; i < text.length && depth > 0; i++) {
      const c = text[i];
      if (inStr) {
        arg += c;
        if (c === '\\') arg += text[++i];
        else if (c === '"') inStr = false;
        continue;
      }
      if (c === '"') inStr = true;
      if (c === '(') depth++;
      if (c === ')' && --depth === 0) break;
      if (c === ',' && depth === 1) {
        args.push(arg.trim());
        arg = '';
        continue;
      }
      arg += c;
    }
    args.push(arg.trim());
    out.push({ name: m[1], args });
    re.lastIndex = i + 1;
  }
  return out;
}

// One C string expression ("a" "b" joined) of a macro argument.
function stringOf(arg) {
  const parts = cStringLiterals(arg);
  assert.equal(parts.length, 1, `not one string: ${arg}`);
  return parts[0];
}

// include/base/md_errors.def: [{name, status, text}] in enum order.
export function errorClasses() {
  const rows = invocations(read('include/base/md_errors.def'), ['MD_ERROR']).map(({ args }) => ({
    name: args[0],
    status: Number(args[1]),
    text: stringOf(args[2]),
  }));
  assert.ok(rows.length >= 20 && rows[0].name === 'MD_OK', 'could not read md_errors.def');
  return rows;
}

// include/base/md_refusals.h: Map name -> {err, code (JSON-RPC, or null), text} for every
// MD_R_* and MD_RPC_* refusal (its #define joined at its backslash-newlines).
export function refusals() {
  const code = read('include/base/md_refusals.h').replace(/\\\r?\n/g, ' ');
  const map = new Map();
  for (const m of code.matchAll(/^#define (MD_(?:R|RPC)_[A-Z0-9_]+)\s+(MD_E?[A-Z]+),\s*(?:(MD_RPC_[A-Z_]+),\s*)?(".*)$/gm)) {
    const codes = { MD_RPC_PARSE_ERROR: -32700, MD_RPC_INVALID_REQUEST: -32600, MD_RPC_METHOD_NOT_FOUND: -32601, MD_RPC_INVALID_PARAMS: -32602, MD_RPC_SERVER_ERROR: -32000, MD_RPC_NO_SESSION: -32001 };
    map.set(m[1], { err: m[2], code: m[3] ? codes[m[3]] : null, text: cStringLiterals(m[4]).join('') });
  }
  const defined = (code.match(/^#define MD_(?:R|RPC)_[A-Z0-9_]+\s+MD_E?[A-Z]+,/gm) || []).length;
  assert.equal(map.size, defined, 'could not read every refusal of md_refusals.h');
  assert.ok(map.size >= 60, 'too few refusals read');
  return map;
}

// include/cmd/md_commands.def: {commands: [{name, kind, tool, writes, fields: [{name, type,
// required}]}], params: [{name, description}]}.
export function commands() {
  const code = read('include/cmd/md_commands.def');
  const list = invocations(code, ['MD_COMMAND']).map(({ args }) => ({
    kind: args[0],
    name: stringOf(args[1]),
    tool: args[2] === 'TOOL',
    writes: args[3] === '1',
    fields: invocations(args[5] ?? '', ['MD_FIELD']).map((f) => ({ name: stringOf(f.args[0]), type: f.args[1], required: f.args[2] === '1' })),
  }));
  const params = invocations(code, ['MD_PARAM']).map(({ args }) => ({ name: stringOf(args[0]), description: stringOf(args[1]) }));
  assert.ok(list.length >= 11 && params.length >= 10, 'could not read md_commands.def');
  return { commands: list, params };
}

// include/http/md_routes.def: {routes: [{id, method, path, handler, body, access, envelope,
// label}], labels: [name, ...]} (the MD_LABEL rows, after the memory tool's commands).
export function routes() {
  const code = read('include/http/md_routes.def');
  const list = invocations(code, ['MD_ROUTE']).map(({ args }) => ({
    id: args[0],
    method: stringOf(args[1]),
    path: stringOf(args[2]),
    handler: args[3],
    body: args[4],
    access: args[5],
    envelope: args[6],
    label: args[7],
  }));
  const labels = invocations(code, ['MD_LABEL']).map(({ args }) => ({ id: args[0], name: stringOf(args[1]) }));
  assert.ok(list.length >= 20 && labels.length >= 10, 'could not read md_routes.def');
  return { routes: list, labels };
}
