// The alerting rules of docs/operations.md (docs/alerts.yml), for real:
//   - `promtool check rules` accepts them (Prometheus's own checker, Debian's prometheus);
//   - `promtool test rules tests/docs/alerts.test.yml`: each alert fires on the misbehaving
//     instance with its labels and rendered annotations, and not before its `for:`, nor on the
//     healthy one;
//   - every memoryd series the rules and the unit tests name, and every label value they
//     select or feed in, is one a live memoryd exports on GET /metrics (so a renamed metric or
//     label fails here, not silently in someone's Prometheus);
//   - docs/operations.md lists exactly the alerts of the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startServer } from '../lib/server.mjs';

const execFileP = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(process.env.MD_SOURCE_DIR || path.resolve(here, '../..'));
const RULES = path.join(ROOT, 'docs/alerts.yml');
const UNIT = path.join(ROOT, 'tests/docs/alerts.test.yml');

async function promtool(args) {
  try {
    const { stdout, stderr } = await execFileP('promtool', args, { cwd: ROOT });
    return { code: 0, stdout, stderr };
  } catch (e) {
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

// The selectors of memoryd's series in a text: [{name, matchers: [{label, op, value}]}].
function selectors(text) {
  const out = [];
  for (const m of text.matchAll(/\b(memoryd_[a-z_]+)(?:\{([^}]*)\})?/g)) {
    const matchers = [...(m[2] ?? '').matchAll(/([a-z_]+)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)].map((x) => ({ label: x[1], op: x[2], value: x[3] }));
    out.push({ name: m[1], matchers });
  }
  return out;
}

// A scrape as [{name, labels}].
function series(scrape) {
  return scrape
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const m = /^([a-z_:][a-z0-9_:]*)(?:\{(.*)\})? \S+$/i.exec(l);
      assert.ok(m, `not a sample: ${l}`);
      return { name: m[1], labels: Object.fromEntries([...(m[2] ?? '').matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]])) };
    });
}

test('self-check: selectors are read with their matchers', () => {
  assert.deepEqual(selectors('rate(memoryd_requests_total{class="5xx", command!="changes"}[5m]) / memoryd_x'), [
    { name: 'memoryd_requests_total', matchers: [{ label: 'class', op: '=', value: '5xx' }, { label: 'command', op: '!=', value: 'changes' }] },
    { name: 'memoryd_x', matchers: [] },
  ]);
});

test('promtool check rules: docs/alerts.yml is valid', async () => {
  const r = await promtool(['check', 'rules', 'docs/alerts.yml']);
  assert.deepEqual(r, { code: 0, stdout: 'Checking docs/alerts.yml\n  SUCCESS: 9 rules found\n\n', stderr: '' });
});

test('promtool test rules: each alert fires when it should and not otherwise', async () => {
  const r = await promtool(['test', 'rules', 'tests/docs/alerts.test.yml']);
  assert.deepEqual(r, { code: 0, stdout: 'Unit Testing:  tests/docs/alerts.test.yml\n  SUCCESS\n\n', stderr: '' });
  // Every alert of the file is tested, firing.
  const alerts = [...fs.readFileSync(RULES, 'utf8').matchAll(/^ {6}- alert: (\w+)$/gm)].map((m) => m[1]);
  const unit = fs.readFileSync(UNIT, 'utf8');
  for (const a of alerts) assert.match(unit, new RegExp(`alertname: ${a}\\n +exp_alerts:\\n +- exp_labels:`), `${a} is never tested firing`);
});

test('the series and label values the rules and their tests name are exported by memoryd', async () => {
  const srv = await startServer();
  let scraped;
  try {
    // One request of a few kinds, so that every family has samples.
    await srv.post({ command: 'view', path: '/memories' });
    await srv.post({ command: 'create', path: '/memories/a.md', file_text: 'a\n' });
    const r = await srv.request('GET', '/metrics');
    assert.equal(r.status, 200);
    scraped = series(r.text);
  } finally {
    await srv.stop();
  }
  const used = [...selectors(fs.readFileSync(RULES, 'utf8')), ...selectors(fs.readFileSync(UNIT, 'utf8'))];
  assert.ok(used.length >= 20, `only ${used.length} selectors read`);
  const problems = [];
  for (const { name, matchers } of used) {
    const of = scraped.filter((s) => s.name === name);
    if (of.length === 0) {
      problems.push(`${name}: not exported`);
      continue;
    }
    for (const { label, op, value } of matchers) {
      if (label === 'job' || label === 'instance') continue; // Prometheus's, from the scrape job
      if (!of.some((s) => label in s.labels)) problems.push(`${name}: no label ${label}`);
      else if (op === '=' && !of.some((s) => s.labels[label] === value)) problems.push(`${name}: no ${label}="${value}"`);
    }
  }
  assert.deepEqual(problems, []);
});

test('docs/operations.md lists exactly the alerts of docs/alerts.yml', () => {
  const alerts = [...fs.readFileSync(RULES, 'utf8').matchAll(/^ {6}- alert: (\w+)$/gm)].map((m) => m[1]);
  const doc = fs.readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
  const listed = [...doc.matchAll(/^\| `(Memoryd\w+)` \|/gm)].map((m) => m[1]);
  assert.deepEqual(listed, alerts);
});
