// Checks what README.md claims that can be checked, against memoryd itself:
//   - it fits: at most 400 lines, and its "## Contents" lists exactly its `## ` headings after
//     it, in order, each linked to its anchor;
//   - the MCP tools: the number it says ("two tools") and their names are what a live
//     memoryd's /mcp answers to tools/list (README.md and docs/mcp.md both);
//   - every `--flag` it names is an option of `memoryd --help` (or of a subcommand's
//     --help), but for other programs' flags on lines that run those programs;
//   - its configuration table: each row's flag, variable and default are --help's;
//   - every endpoint it names (`GET /v1/history`, `/mcp`, a curl URL) is a route of
//     include/http/md_routes.def with that method, and it names every route (the catch-alls
//     and HEAD aside).
// A self-check first runs the extractors on synthetic text, so that an extractor that finds
// nothing cannot pass unnoticed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, startServer } from '../lib/server.mjs';
import { routes } from '../lib/vocabulary.mjs';
import { slug } from '../lib/markdown.mjs';
import { parseHelp } from '../../scripts/gen-configuration.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(process.env.MD_SOURCE_DIR || path.resolve(here, '../..'));
const read = (f) => fs.readFileSync(path.join(ROOT, f), 'utf8');
const README = read('README.md');
const MAX_LINES = 400;

// Flags of other programs the README shows, each with the program on its line.
const FOREIGN = new Map([
  ['--transport', 'claude mcp add'],
  ['--header', 'claude mcp add'],
  ['--test-dir', 'ctest'],
  ['--output-on-failure', 'ctest'],
  ['--postgres', 'bench/run.sh'],
  ['--install', 'cmake --install'],
]);

// `--flag` mentions: [{flag, line}] (a flag starts after a space, a backtick, a parenthesis or
// the line's start).
function flagsOf(text) {
  const out = [];
  for (const line of text.split('\n')) {
    for (const m of line.matchAll(/(?<=^|[\s`(])(--[a-z][a-z0-9-]*)/g)) out.push({ flag: m[1], line });
  }
  return out;
}

const METHOD = '(GET|POST|PUT|DELETE|HEAD)';
// Endpoints named: [{method (or null), path}]: code spans `METHOD /path`, `METHOD` and
// `METHOD /path` (both methods), bare code spans of a top-level route, and the paths of URLs
// on localhost:8080.
function endpointsOf(text) {
  const out = [];
  const plain = text.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
  for (const m of plain.matchAll(new RegExp(`\`${METHOD}\` and \`${METHOD} (/[^\`\\s?]*)\``, 'g'))) {
    out.push({ method: m[1], path: m[3] }, { method: m[2], path: m[3] });
  }
  for (const m of plain.matchAll(new RegExp(`\`${METHOD} (/[^\`\\s?]*)(?:\\?[^\`]*)?\``, 'g'))) out.push({ method: m[1], path: m[2] });
  for (const m of plain.matchAll(/`(\/(?:memory|mcp|healthz|readyz|metrics|v1\/[^`\s?]*))`/g)) out.push({ method: null, path: m[1] });
  for (const m of plain.matchAll(/localhost:8080(\/[^\s'"?)]*)/g)) out.push({ method: null, path: m[1] });
  return out;
}

// A route's path pattern as a regular expression ({name}: one segment, possibly empty).
const routeRe = (p) => new RegExp(`^${p.split(/(\{[a-z_]+\})/).map((part) => (/^\{[a-z_]+\}$/.test(part) ? '[^/]*' : part.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&'))).join('')}$`);
// The routes an endpoint can be: every row but the catch-alls ({*}) of a family.
const ROUTES = routes().routes.filter((r) => !r.path.includes('{*}'));
const known = (e) => ROUTES.some((r) => routeRe(r.path).test(concrete(e.path)) && (!e.method || e.method === r.method));
// A README path: its placeholders ({t}, {tenant}) stand for any segment.
const concrete = (p) => p.replace(/\{[a-z_]+\}/g, 'x');

test('self-check: the extractors find flags, endpoints and headings', () => {
  const text = [
    'Run `memoryd --port 9000` (or --db x) with (--auth keys).',
    '`GET /v1/history`, `POST` and `DELETE /mcp`, [the feed](x.md) `GET /v1/changes?after=1`,',
    'the `/healthz` probe, `/memories/x` is a path, `curl localhost:8080/v1/search?q=a`.',
  ].join('\n');
  assert.deepEqual(flagsOf(text).map((f) => f.flag), ['--port', '--db', '--auth']);
  assert.deepEqual(endpointsOf(text), [
    { method: 'POST', path: '/mcp' }, { method: 'DELETE', path: '/mcp' },
    { method: 'GET', path: '/v1/history' }, { method: 'DELETE', path: '/mcp' }, { method: 'GET', path: '/v1/changes' },
    { method: null, path: '/healthz' }, { method: null, path: '/v1/search' },
  ]);
  assert.ok(known({ method: 'PUT', path: '/v1/tenants/{t}/limits' }));
  assert.ok(!known({ method: 'GET', path: '/v1/tenant' }));
  assert.ok(!known({ method: 'POST', path: '/v1/history' }));
  assert.ok(!known({ method: 'GET', path: '/v1/tenants/x/y' })); // the family's catch-all is no endpoint
  assert.equal(slug('Using it from an agent'), 'using-it-from-an-agent');
});

test('README.md fits: at most 400 lines, and a table of contents of its ## headings', () => {
  const lines = README.split('\n');
  assert.ok(lines.length - 1 <= MAX_LINES, `README.md has ${lines.length - 1} lines (at most ${MAX_LINES})`);
  let fence = false;
  const headings = [];
  for (const line of lines) {
    if (line.startsWith('```')) fence = !fence;
    else if (!fence && line.startsWith('## ')) headings.push(line.slice(3));
  }
  assert.equal(headings[0], 'Contents');
  const start = README.indexOf('\n## Contents\n') + '\n## Contents\n'.length;
  const toc = README.slice(start, README.indexOf('\n## ', start)).trim().split('\n');
  assert.deepEqual(toc, headings.slice(1).map((h) => `- [${h}](#${slug(h)})`));
  // What a new user looks for first comes first: the quick start, curl and the clients are
  // the first sections after the contents, the configuration summary among the first five.
  assert.deepEqual(headings.slice(1, 4), ['Quick start', 'Using it with curl', 'Using it from an agent']);
  assert.ok(headings.indexOf('Configuration') >= 1 && headings.indexOf('Configuration') <= 5, 'Configuration is not near the top');
});

test('the MCP tools the README and docs/mcp.md name are the tools /mcp lists', async () => {
  const srv = await startServer();
  let names;
  try {
    const post = (body, headers = {}) => fetch(`${srv.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(body),
    });
    const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'readme', version: '1' } } });
    assert.equal(init.status, 200);
    const session = init.headers.get('mcp-session-id');
    const list = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    assert.equal(list.status, 200);
    names = (await list.json()).result.tools.map((t) => t.name);
  } finally {
    await srv.stop();
  }
  assert.ok(names.length >= 1);
  const words = ['zero', 'one', 'two', 'three', 'four', 'five', 'six'];
  for (const doc of ['README.md', 'docs/mcp.md']) {
    const text = read(doc);
    const said = [...text.matchAll(/\b(one|two|three|four|five|six) tools?\b/g)].map((m) => m[1]);
    assert.ok(said.length >= 1, `${doc} does not say how many tools /mcp offers`);
    assert.deepEqual([...new Set(said)], [words[names.length]], `${doc} says ${said.join(', ')} tools; /mcp lists ${names.join(', ')}`);
    for (const n of names) assert.ok(text.includes(`\`${n}\``), `${doc} does not name the tool ${n}`);
  }
});

test('every --flag the README names is an option of memoryd (or of the program on its line)', () => {
  const own = new Set(parseHelp(execFileSync(BIN, ['--help'], { encoding: 'utf8' })).options.map((o) => o.flag));
  for (const sub of [['keys', '--help'], ['backup', '--help'], ['migrate', '--help'], ['admin', '--help']]) {
    const r = (() => {
      try {
        return execFileSync(BIN, sub, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (e) {
        return `${e.stdout}${e.stderr}`;
      }
    })();
    for (const m of r.matchAll(/(?<=^|[\s[|])(--[a-z][a-z0-9-]*)/gm)) own.add(m[1]);
  }
  const mentions = flagsOf(README);
  assert.ok(mentions.length >= 20, `only ${mentions.length} flags found in README.md`);
  const bad = [];
  for (const { flag, line } of mentions) {
    if (own.has(flag)) continue;
    if (FOREIGN.has(flag) && line.includes(FOREIGN.get(flag))) continue;
    bad.push(`${flag} in: ${line.trim()}`);
  }
  assert.deepEqual(bad, []);
  for (const [flag, program] of FOREIGN) {
    assert.ok(mentions.some((m) => m.flag === flag && m.line.includes(program)), `FOREIGN lists ${flag} of ${program}, which the README no longer shows`);
  }
});

test('the README configuration table: each flag, variable and default as memoryd --help says', () => {
  const options = new Map(parseHelp(execFileSync(BIN, ['--help'], { encoding: 'utf8' })).options.map((o) => [o.flag, o]));
  const start = README.indexOf('\n## Configuration\n');
  const section = README.slice(start, README.indexOf('\n## ', start + 1));
  const rows = section.split('\n').filter((l) => l.startsWith('| `--'));
  assert.ok(rows.length >= 10, `only ${rows.length} rows in the configuration table`);
  for (const row of rows) {
    const cells = row.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim().replaceAll('\\|', '|'));
    const [flagCell, envCell, defaultCell] = cells;
    const [flag, arg] = flagCell.replace(/^`|`$/g, '').split(' ');
    const o = options.get(flag);
    assert.ok(o, `${flag} is not an option of memoryd --help`);
    assert.equal(arg ?? null, o.arg, `${flag}: its argument`);
    assert.equal(envCell, `\`${o.env}\``, `${flag}: its variable`);
    assert.equal(defaultCell, o.default, `${flag}: its default`);
  }
});

test('every endpoint the README names is a route, and it names every route', () => {
  const named = endpointsOf(README);
  assert.ok(named.length >= 20, `only ${named.length} endpoints found in README.md`);
  const unknown = named.filter((e) => !known(e));
  assert.deepEqual(unknown, [], 'endpoints the README names that md_routes.def has not');
  const said = new Set(named.filter((e) => e.method).map((e) => `${e.method} ${concrete(e.path)}`));
  const missing = ROUTES
    .filter((r) => r.method !== 'HEAD')
    .filter((r) => ![...said].some((s) => s.split(' ')[0] === r.method && routeRe(r.path).test(s.split(' ')[1])))
    .map((r) => `${r.method} ${r.path}`);
  assert.deepEqual(missing, [], 'routes the README does not name with their method');
});
