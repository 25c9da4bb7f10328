// The conformance oracle: for one memory command, the result memoryd must give
// (content, is_error, HTTP status), derived from the SDK's result and the SDK's
// tree before the step. Where memoryd must differ from the SDK
// (docs/behaviour.md §5), the difference is named by one of CATEGORIES and the
// SDK's result must have exactly the shape that category describes; any other
// SDK/contract difference is reported as a problem (never silently accepted).
//
// Everything here is pure: no I/O, no memoryd.

import { formatSize } from '../lib/util.mjs';

// The deliberate differences from the SDK, in the order of the project brief.
export const CATEGORIES = {
  'no-error-prefix': '1. no "Error: " prefix on view-missing, no match, several matches, line limit',
  'whole-file-str_replace': '2. str_replace matches over the whole file; snippet to 2 lines after new_str',
  'input-validation': '3. input errors the SDK does not catch (memoryd only, 400)',
  'edit-on-dir-or-missing': '4. str_replace/insert on a directory, insert on a missing file',
  'path-rules': '5. docs/behaviour.md §3 path rules the SDK does not enforce',
  'raw-fs-error': '6. raw filesystem errors of the SDK -> clear messages',
  'failed-command-no-change': '7. a failed command changes nothing (SDK tree restored)',
  'listing-format': '8. directory listing: sizes, byte order, canonical entry paths',
  'view_range-type': '9. view_range not two integers -> 400 (memoryd only)',
  'nfc-note': '10. "does not exist" for a path not in Unicode NFC carries a note (paths are byte-exact)',
};

// Appended by memoryd to a "does not exist" error whose path is not NFC and names nothing
// at all (a directory where a file is wanted gets the plain text).
export const NFC_NOTE = ' (Note: this path is not in Unicode Normalization Form C (NFC); memoryd compares paths byte for byte, so a name that looks the same but is encoded differently is a different path.)';
const notFound = (msg, p) => (p.normalize('NFC') === p ? msg : msg + NFC_NOTE);

export const ROOT = '/memories';
export const MAX_LINES = 999999;
const MAX_PATH = 4096;
const MAX_SEGMENT = 255;

const E = (s) => `Error: ${s}`;
const utf8len = (s) => Buffer.byteLength(s, 'utf8');

// ---------------------------------------------------------------- paths

// docs/behaviour.md §3, with memoryd's wording (src/base/path.c): null when the path is
// valid, else {rule, message}.
export function pathCheck(p) {
  const bad = (rule, msg) => ({ rule, message: E(msg) });
  if (!(p === ROOT || p.startsWith(ROOT + '/'))) return bad('not-under-root', `Path must start with /memories, got: ${p}`);
  const len = utf8len(p);
  if (len > MAX_PATH) {
    // the message shows at most the first 100 bytes, cut at a character boundary
    const b = Buffer.from(p, 'utf8');
    let n = 100;
    while (n > 0 && (b[n] & 0xc0) === 0x80) n--;
    return bad('too-long', `Path ${b.subarray(0, n).toString('utf8')}... is too long: ${len} bytes (the limit is ${MAX_PATH})`);
  }
  if (/[\u0000-\u001f\u007f\u0080-\u009f]/.test(p)) return bad('control', `Path ${p} contains a control character, which is not allowed`);
  if (p.includes('\\')) return bad('backslash', `Path ${p} contains a backslash (\\), which is not allowed`);
  if (/%(2e|2f|5c)/i.test(p)) {
    return bad('percent', `Path ${p} contains a percent-encoded '.', '/' or '\\' (%2e, %2f or %5c), which is not allowed`);
  }
  let depth = 0;
  let escapes = false;
  let found = null;
  for (const seg of p.slice(ROOT.length).split('/')) {
    if (seg === '') continue;
    if (seg === '..') {
      if (--depth < 0) escapes = true;
      found ??= ['dotdot', "contains a '..' segment, which is not allowed"];
      continue;
    }
    if (seg === '.') {
      found ??= ['dot', "contains a '.' segment, which is not allowed"];
      continue;
    }
    depth++;
    if (utf8len(seg) > MAX_SEGMENT) found ??= ['segment-too-long', `has a segment longer than ${MAX_SEGMENT} bytes`];
  }
  if (escapes) return bad('escapes', `Path ${p} would escape /memories directory`);
  if (found) return bad(found[0], `Path ${p} ${found[1]}`);
  return null;
}

export const pathError = (p) => pathCheck(p)?.message ?? null;

// Canonical form of a valid path: runs of '/' collapsed, trailing '/' dropped.
export function canon(p) {
  const c = p.replace(/\/+/g, '/');
  return c.length > ROOT.length && c.endsWith('/') ? c.slice(0, -1) : c;
}

export function parentOf(c) {
  return c === ROOT ? null : c.slice(0, c.lastIndexOf('/'));
}

// ---------------------------------------------------------------- input checks

const ROUTES = {
  view: [['path', 'path', true], ['view_range', 'range', false]],
  create: [['path', 'path', true], ['file_text', 'string', true]],
  str_replace: [['path', 'path', true], ['old_str', 'nonempty', true], ['new_str', 'string', true]],
  insert: [['path', 'path', true], ['insert_line', 'int', true], ['insert_text', 'string', true]],
  delete: [['path', 'path', true]],
  rename: [['old_path', 'path', true], ['new_path', 'path', true]],
};

// An integer memoryd holds (int64); a whole number beyond it (or one JSON.parse
// made Infinity) is "out of range" rather than "not an integer".
const isInt = (v) => typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 2 ** 63;
const isBig = (v) => typeof v === 'number' && (Math.abs(v) === Infinity || (Number.isInteger(v) && Math.abs(v) >= 2 ** 63));
const outOfRange = (name) => E(`Parameter \`${name}\` has a number out of range: integers must be between -9223372036854775808 and 9223372036854775807`);
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// memoryd's check of a tool_use envelope (src/cmd/parse.c unwrap). Returns
// {content} for a rejected envelope, {input, id} otherwise.
export function checkEnvelope(body) {
  if (!isObject(body)) return { content: E('The request body must be a JSON object') };
  if (!('type' in body)) return { input: body, id: undefined };
  if (body.type !== 'tool_use') {
    return {
      content: E('Unsupported request: send a memory command object ({"command": ...}) or a tool_use block ({"type": "tool_use", ...})'),
    };
  }
  if (typeof body.id !== 'string') return { content: E('A tool_use block needs a string `id`') };
  if ('name' in body && body.name !== 'memory') {
    return { content: E(`Tool '${typeof body.name === 'string' ? body.name : ''}' not found`), id: body.id };
  }
  if (!isObject(body.input)) return { content: E('A tool_use block needs an object `input`'), id: body.id };
  return { input: body.input, id: body.id };
}

// Field checks of a command object, in memoryd's order (route table order).
// Returns null when every field is fine, else {content, status: 400, category,
// sdkSafe} where category is null (the SDK says the same), 'path-rules',
// 'view_range-type' or 'input-validation', and sdkSafe says whether the SDK may
// run the command at all (only when nothing but a path is wrong: the SDK would
// otherwise write garbage such as "undefined").
export function checkInput(cmd) {
  const fail = (content, category, sdkSafe, outcome) => ({ content, status: 400, category, sdkSafe, outcome });
  if (cmd.command === undefined || cmd.command === null) return fail(E('Missing required parameter `command`'), 'input-validation', false, 'input:field');
  if (typeof cmd.command !== 'string') return fail(E('Parameter `command` must be a string'), 'input-validation', false, 'input:field');
  if (!Object.hasOwn(ROUTES, cmd.command)) return fail(E(`${cmd.command} not implemented`), null, true, 'input:unknown-command');
  let first = null;
  let othersOk = true;
  for (const [name, type, required] of ROUTES[cmd.command]) {
    const v = cmd[name];
    let err = null;
    let category = 'input-validation';
    let outcome = 'input:field';
    if (v === undefined || v === null) {
      if (required) err = E(`Missing required parameter \`${name}\` for command \`${cmd.command}\``);
    } else if (type === 'path') {
      if (typeof v !== 'string') err = E(`Parameter \`${name}\` must be a string`);
      else {
        const bad = pathCheck(v);
        if (bad) [err, category, outcome] = [bad.message, 'path-rules', `path:${bad.rule}`];
      }
    } else if (type === 'string' || type === 'nonempty') {
      if (typeof v !== 'string') err = E(`Parameter \`${name}\` must be a string`);
      else if (type === 'nonempty' && v === '') err = E(`Parameter \`${name}\` must not be empty`);
    } else if (type === 'int') {
      if (isBig(v)) [err, outcome] = [outOfRange(name), 'input:out-of-range'];
      else if (!isInt(v)) err = E(`Parameter \`${name}\` must be an integer`);
    } else if (type === 'range') {
      // An array of another length than two is no range, for memoryd as for the SDK.
      const two = Array.isArray(v) && v.length === 2;
      if (two && v.every((x) => isInt(x) || isBig(x)) && !v.every(isInt)) {
        [err, category, outcome] = [outOfRange(name), 'view_range-type', 'input:out-of-range'];
      } else if (!(Array.isArray(v) && (v.length !== 2 || v.every(isInt)))) {
        err = E(`Parameter \`${name}\` must be an array of two integers [start_line, end_line]`);
        category = 'view_range-type';
        outcome = 'input:view_range';
      }
    }
    if (err && category !== 'path-rules') othersOk = false;
    if (err && !first) first = { err, category, outcome };
  }
  if (!first) return null;
  return fail(first.err, first.category, othersOk, first.outcome);
}

// ---------------------------------------------------------------- state

// A snapshot of the SDK's tree: Map canonical path -> {kind: 'dir'} | {kind: 'file', data: Buffer}.
export class State {
  constructor(entries) {
    this.entries = entries;
  }
  get(c) {
    return this.entries.get(c);
  }
  kind(c) {
    return this.entries.get(c)?.kind;
  }
  // The ancestor of c that is a file (there is at most one that exists), or null.
  fileAncestor(c) {
    for (let p = parentOf(c); p !== null; p = parentOf(p)) {
      if (this.kind(p) === 'file') return p;
    }
    return null;
  }
  children(c) {
    const out = [];
    for (const [p, e] of this.entries) if (p !== c && parentOf(p) === c) out.push({ path: p, name: p.slice(c.length + 1), ...e });
    return out;
  }
  // Total bytes of all files at or below c (hidden ones included).
  totalBytes(c) {
    let n = 0;
    for (const [p, e] of this.entries) {
      if (e.kind === 'file' && (p === c || p.startsWith(c + '/'))) n += e.data.length;
    }
    return n;
  }
}

// ---------------------------------------------------------------- text helpers

// memoryd's size format (docs/behaviour.md §4.1), shared with the integration tests.
export { formatSize };

const num = (n) => `${String(n).padStart(6, ' ')}\t`;

export function splitLines(data) {
  return data.toString('utf8').split('\n');
}

function lineAt(data, offset) {
  let n = 1;
  for (let i = 0; i < offset; i++) if (data[i] === 0x0a) n++;
  return n;
}

const byUtf8 = (a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
const hidden = (name) => name.startsWith('.') || name === 'node_modules';

// A file view with the SDK's view_range rules (start = max(1,a)-1, end = b == -1 ? n : b, slice).
export function renderFileView(shownPath, lines, range) {
  let shown = lines;
  let start = 1;
  if (range && range.length === 2) { // as the SDK: another length is no range
    const s = Math.max(1, range[0]) - 1;
    shown = lines.slice(s, range[1] === -1 ? lines.length : range[1]);
    start = s + 1;
  }
  return `Here's the content of ${shownPath} with line numbers:\n${shown.map((l, i) => num(start + i) + l).join('\n')}`;
}

// Views longer than this would be cut by memoryd's 256 KiB view limit (§6),
// which is not part of this test: the corpus must stay below it.
export const VIEW_SAFE = 250000;

// The two-level listing of directory c as the contract orders it, from the
// SDK tree alone: [{rel, dir}] in output order.
export function expectedEntries(state, c) {
  const out = [];
  const kids = state.children(c).filter((k) => !hidden(k.name)).sort((a, b) => byUtf8(a.name, b.name));
  for (const k of kids) {
    out.push({ rel: k.name, dir: k.kind === 'dir' });
    if (k.kind !== 'dir') continue;
    const grand = state.children(k.path).filter((g) => !hidden(g.name)).sort((a, b) => byUtf8(a.name, b.name));
    for (const g of grand) out.push({ rel: `${k.name}/${g.name}`, dir: g.kind === 'dir' });
  }
  return out;
}

// Transform the SDK's listing of directory `shown` (canonical c) into the
// contract's: sizes recomputed from the SDK's files, entries re-ordered by
// UTF-8 bytes (depth first), entry paths canonical. Returns {content} or
// {problem}.
export function transformListing(sdkContent, shown, c, state) {
  const header = `Here're the files and directories up to 2 levels deep in ${shown}, excluding hidden items and node_modules:`;
  const lines = sdkContent.split('\n');
  if (lines[0] !== header) return { problem: 'SDK listing has an unexpected header' };
  if (!/^[^\t]+\t/.test(lines[1] ?? '') || lines[1].slice(lines[1].indexOf('\t') + 1) !== shown) {
    return { problem: 'SDK listing has an unexpected first line' };
  }
  const sdkEntries = [];
  for (const line of lines.slice(2)) {
    const p = line.slice(line.indexOf('\t') + 1);
    if (!p.startsWith(shown + '/')) return { problem: `SDK listing line not under ${shown}: ${line}` };
    const rel = p.slice(shown.length + 1);
    sdkEntries.push(rel.endsWith('/') ? { rel: rel.slice(0, -1), dir: true } : { rel, dir: false });
  }
  // The SDK's entry set must be the contract's (hidden/node_modules left out, two levels).
  const want = expectedEntries(state, c);
  const key = (e) => `${e.dir ? 'd' : 'f'}:${e.rel}`;
  const got = new Set(sdkEntries.map(key));
  if (got.size !== want.length || !want.every((e) => got.has(key(e)))) {
    return { problem: `SDK listing entries differ from the tree: ${[...got].join(' | ')} vs ${want.map(key).join(' | ')}` };
  }
  const base = c === ROOT ? ROOT : c;
  // The first line echoes the path as sent, as the SDK's does; entries are canonical.
  const body = [`${formatSize(state.totalBytes(c))}\t${shown}`];
  for (const e of want) {
    const p = `${base}/${e.rel}`;
    const size = e.dir ? state.totalBytes(p) : state.get(p).data.length;
    body.push(`${formatSize(size)}\t${p}${e.dir ? '/' : ''}`);
  }
  return { content: `${header}\n${body.join('\n')}` };
}

// ---------------------------------------------------------------- judge

const RAW_FS = /^Error: E[A-Z]+: /; // a Node fs error message leaked by the SDK

// Judge one command whose input passed checkInput() (paths valid).
//   cmd: the command object; pre: State before; sdk: {content, is_error}.
// Returns {expected: {content, is_error, status}, cats: string[], apply?,
// problem?}. `apply` (canonical path -> new Buffer) is the contract's effect
// when the SDK failed to perform a command that must succeed.
export function judge(cmd, pre, sdk) {
  const cats = [];
  let problem = null;
  const eq = (a, b) => a.content === b.content && a.is_error === b.is_error;
  const out = (content, is_error, status) => ({ content, is_error, status });
  // expected result + the categories that may explain an SDK difference: [[cat, pred(sdk)]]
  // `outcome` names the case of the contract (coverage is checked on these).
  const decide = (outcome, expected, allowed = []) => {
    // The NFC note is memoryd's alone: the SDK is held to the text without it.
    // (an allowed shape may name the SDK's text as it is or with the note added).
    let [want, seen] = [expected, sdk];
    if (expected.is_error && expected.content.endsWith(NFC_NOTE)) {
      want = { ...expected, content: expected.content.slice(0, -NFC_NOTE.length) };
      seen = { ...sdk, content: sdk.content + NFC_NOTE };
      cats.push('nfc-note');
    }
    if (!eq(sdk, want)) {
      const hit = allowed.find(([, pred]) => pred(sdk) || pred(seen));
      if (hit) cats.push(...[hit[0]].flat());
      else problem = 'the SDK result differs from the contract in a way no deliberate difference explains';
    }
    return { expected, cats, problem, outcome };
  };
  const prefixed = (s) => (r) => r.is_error && r.content === `Error: ${s}`;
  const sdkSays = (s) => (r) => r.is_error && r.content === s;
  const raw = (r) => r.is_error && RAW_FS.test(r.content);

  switch (cmd.command) {
    case 'view': {
      const p = cmd.path;
      const c = canon(p);
      const missing = notFound(`The path ${p} does not exist. Please provide a valid path.`, p);
      if (pre.fileAncestor(c)) return decide('view:through-file', out(missing, true, 404), [['raw-fs-error', raw]]);
      const ent = pre.get(c);
      if (!ent) return decide('view:missing', out(missing, true, 404), [['no-error-prefix', prefixed(missing)]]);
      if (ent.kind === 'file') {
        const lines = splitLines(ent.data);
        if (lines.length > MAX_LINES) {
          const msg = `File ${p} exceeds maximum line limit of 999,999 lines.`;
          const sdkMsg = `File ${p} has too many lines (${lines.length}). Maximum is 999,999 lines.`;
          return decide('view:line-limit', out(msg, true, 413), [['no-error-prefix', prefixed(sdkMsg)]]);
        }
        const view = renderFileView(p, lines, cmd.view_range ?? null);
        if (utf8len(view) > VIEW_SAFE) throw new Error(`corpus error: view of ${p} is ${utf8len(view)} bytes, over the safe size`);
        const ignored = Array.isArray(cmd.view_range) && cmd.view_range.length !== 2;
        return decide(ignored ? 'view:range-ignored' : 'view:file', out(view, false, 200));
      }
      if (sdk.is_error) return { expected: null, cats, problem: 'the SDK failed to list a directory' };
      const t = transformListing(sdk.content, p, c, pre);
      if (t.problem) return { expected: null, cats, problem: t.problem };
      if (t.content !== sdk.content) cats.push('listing-format');
      return { expected: out(t.content, false, 200), cats, problem, outcome: p.endsWith('/') ? 'view:directory-trailing-slash' : 'view:directory' };
    }

    case 'create': {
      const p = cmd.path;
      const c = canon(p);
      if (utf8len(cmd.file_text) > 1048576) throw new Error('corpus error: file over the 1 MiB file limit');
      if (c === ROOT) return decide('create:root', out(E(`File ${p} already exists`), true, 409));
      if (pre.get(c)) return decide('create:exists', out(E(`File ${p} already exists`), true, 409));
      const fa = pre.fileAncestor(c);
      if (fa) return decide('create:under-file', out(E(`Cannot create ${p}: ${fa} is a file, not a directory`), true, 409), [['raw-fs-error', raw]]);
      return decide('create:ok', out(`File created successfully at: ${p}`, false, 200));
    }

    case 'str_replace': {
      const p = cmd.path;
      const c = canon(p);
      const missing = notFound(E(`The path ${p} does not exist. Please provide a valid path.`), p);
      if (pre.fileAncestor(c)) return decide('str_replace:through-file', out(missing, true, 404), [['raw-fs-error', raw]]);
      const ent = pre.get(c);
      if (!ent) return decide('str_replace:missing', out(missing, true, 404));
      // Something is at the path: the plain text, never the NFC note.
      if (ent.kind === 'dir') return decide('str_replace:directory', out(E(`The path ${p} does not exist. Please provide a valid path.`), true, 404), [['edit-on-dir-or-missing', sdkSays(E(`The path ${p} is not a file.`))]]);
      const data = ent.data;
      const oldB = Buffer.from(cmd.old_str, 'utf8');
      const newB = Buffer.from(cmd.new_str, 'utf8');
      const hits = [];
      for (let at = data.indexOf(oldB); at !== -1; at = data.indexOf(oldB, at + oldB.length)) hits.push(at);
      // What the SDK says: it tests each line (split on \n) for old_str.
      const sdkLines = [];
      splitLines(data).forEach((l, i) => l.includes(cmd.old_str) && sdkLines.push(i + 1));
      const noMatch = `No replacement was performed, old_str \`${cmd.old_str}\` did not appear verbatim in ${p}.`;
      const several = (ls) => `No replacement was performed. Multiple occurrences of old_str \`${cmd.old_str}\` in lines: ${ls.join(', ')}. Please ensure it is unique`;
      const sdkPredicted =
        sdkLines.length === 0 ? prefixed(noMatch)
          : sdkLines.length > 1 ? prefixed(several(sdkLines))
            : (r) => !r.is_error && r.content.startsWith('The memory file has been edited.');
      if (hits.length === 0) return decide('str_replace:no-match', out(noMatch, true, 409), [['no-error-prefix', prefixed(noMatch)]]);
      if (hits.length > 1) {
        const lines = hits.map((at) => lineAt(data, at));
        const msg = several(lines);
        const label = new Set(lines).size < lines.length ? 'str_replace:several-on-one-line' : 'str_replace:several';
        return decide(label, out(msg, true, 409), [
          ['no-error-prefix', prefixed(msg)],
          [['no-error-prefix', 'whole-file-str_replace'], sdkPredicted],
        ]);
      }
      const at = hits[0];
      const next = Buffer.concat([data.subarray(0, at), newB, data.subarray(at + oldB.length)]);
      if (next.length > 1048576) throw new Error('corpus error: str_replace result over the 1 MiB file limit');
      const first = lineAt(data, at);
      const newLines = splitLines(next);
      const last = first + splitLines(newB).length - 1;
      const from = Math.max(1, first - 2);
      const to = Math.min(last + 2, newLines.length);
      const snippet = (a, b) =>
        'The memory file has been edited. Here is the snippet showing the change (with line numbers):\n' +
        newLines.slice(a - 1, b).map((l, i) => num(a + i) + l).join('\n');
      const expected = out(snippet(from, to), false, 200);
      const sdkSnippet = snippet(from, Math.min(first + 2, newLines.length));
      const label = cmd.old_str.includes('\n') ? 'str_replace:ok-multiline-old' : cmd.new_str.includes('\n') ? 'str_replace:ok-multiline-new' : 'str_replace:ok';
      const r = decide(label, expected, [['whole-file-str_replace', sdkLines.length === 1 ? (x) => !x.is_error && x.content === sdkSnippet : sdkPredicted]]);
      if (sdk.is_error) r.apply = new Map([[c, next]]);
      r.effect = new Map([[c, next]]);
      return r;
    }

    case 'insert': {
      const p = cmd.path;
      const c = canon(p);
      const missing = notFound(E(`The path ${p} does not exist`), p);
      if (pre.fileAncestor(c)) return decide('insert:through-file', out(missing, true, 404), [['raw-fs-error', raw]]);
      const ent = pre.get(c);
      if (!ent) return decide('insert:missing', out(missing, true, 404), [['edit-on-dir-or-missing', sdkSays(E(`The path ${p} does not exist. Please provide a valid path.`))]]);
      if (ent.kind === 'dir') return decide('insert:directory', out(E(`The path ${p} does not exist`), true, 404), [['edit-on-dir-or-missing', sdkSays(E(`The path ${p} is not a file.`))]]);
      const lines = splitLines(ent.data);
      const n = lines.length;
      const k = cmd.insert_line;
      if (k < 0 || k > n) {
        return decide('insert:out-of-range', out(E(`Invalid \`insert_line\` parameter: ${k}. It should be within the range of lines of the file: [0, ${n}]`), true, 422));
      }
      const next = [...lines];
      next.splice(k, 0, cmd.insert_text.replace(/\n$/, ''));
      const nb = Buffer.from(next.join('\n'), 'utf8');
      if (nb.length > 1048576) throw new Error('corpus error: insert result over the 1 MiB file limit');
      const r = decide(`insert:${k === 0 ? 'ok-at-0' : k === n ? 'ok-at-end' : 'ok-middle'}`, out(`The file ${p} has been edited.`, false, 200));
      r.effect = new Map([[c, nb]]);
      return r;
    }

    case 'delete': {
      const p = cmd.path;
      const c = canon(p);
      if (c === ROOT) return decide('delete:root', out(E('Cannot delete the /memories directory itself'), true, 400));
      const missing = notFound(E(`The path ${p} does not exist`), p);
      if (pre.fileAncestor(c)) return decide('delete:through-file', out(missing, true, 404), [['raw-fs-error', raw]]);
      if (!pre.get(c)) return decide('delete:missing', out(missing, true, 404));
      return decide(`delete:ok-${pre.kind(c)}`, out(`Successfully deleted ${p}`, false, 200));
    }

    case 'rename': {
      const o = cmd.old_path;
      const n = cmd.new_path;
      const oc = canon(o);
      const nc = canon(n);
      const rawOk = [['raw-fs-error', raw]];
      if (oc === ROOT) return decide('rename:root', out(E('Cannot rename the /memories directory itself'), true, 400), rawOk);
      if (pre.get(nc)) return decide('rename:destination-exists', out(E(`The destination ${n} already exists`), true, 409), rawOk);
      const src = pre.get(oc);
      if (!src) return decide('rename:missing-source', out(notFound(E(`The path ${o} does not exist`), o), true, 404), rawOk);
      if (src.kind === 'dir' && nc.startsWith(oc + '/')) {
        return decide('rename:into-itself', out(E(`Cannot rename ${o} to ${n}: a directory cannot be moved inside itself`), true, 409), rawOk);
      }
      const fa = pre.fileAncestor(nc);
      if (fa) return decide('rename:destination-under-file', out(E(`Cannot rename ${o} to ${n}: ${fa} is a file, not a directory`), true, 409), rawOk);
      return decide(`rename:ok-${src.kind}`, out(`Successfully renamed ${o} to ${n}`, false, 200));
    }
  }
  throw new Error(`judge: unexpected command ${cmd.command}`);
}
