// Keeps docs/configuration.md equal to what scripts/gen-configuration.mjs makes of the built
// binary's `memoryd --help` (the option table of src/app/config.c, the routes, the commands):
// a changed option, default, endpoint or command fails this test until the file is generated
// again (`node scripts/gen-configuration.mjs build/memoryd > docs/configuration.md`). A
// self-check first runs the help reader on synthetic text, and the real help is checked to
// have been read whole (every MEMORYD_ variable an option of the table), so that a reader that
// drops lines cannot pass unnoticed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN } from '../lib/server.mjs';
import { routes } from '../lib/vocabulary.mjs';
import { configurationDoc, parseHelp } from '../../scripts/gen-configuration.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(process.env.MD_SOURCE_DIR || path.resolve(here, '../..'));
const help = () => execFileSync(BIN, ['--help'], { encoding: 'utf8' });

test('self-check: the help reader reads options, their variables and defaults, endpoints and commands', () => {
  const pad = (left, text) => `  ${left.padEnd(24)}${text}`;
  const text = [
    'Usage: memoryd [OPTION]...',
    'Serve it.',
    '',
    pad('--port N', 'TCP port                    [8080]'),
    `${' '.repeat(26)}MEMORYD_PORT`,
    '  --log-level error|warn|info|debug',
    `${' '.repeat(26)}least important lines,`,
    `${' '.repeat(26)}with a | and <b>      [info]`,
    `${' '.repeat(26)}MEMORYD_LOG_LEVEL`,
    pad('--metrics-tenant-labels', 'per tenant [off]'),
    `${' '.repeat(26)}MEMORYD_METRICS_TENANT_LABELS`,
    pad('--help', 'show this help and exit'),
    '',
    'Endpoints (openapi.yaml describes them):',
    '  POST, DELETE   /mcp',
    'Commands:',
    '  memoryd keys create|list ...',
    '      API keys',
    'Signals: SIGTERM stops it.',
    '',
  ].join('\n');
  const h = parseHelp(text);
  assert.deepEqual(h.options, [
    { flag: '--port', arg: 'N', env: 'MEMORYD_PORT', help: 'TCP port', default: '8080' },
    { flag: '--log-level', arg: 'error|warn|info|debug', env: 'MEMORYD_LOG_LEVEL', help: 'least important lines, with a | and <b>', default: 'info' },
    { flag: '--metrics-tenant-labels', arg: null, env: 'MEMORYD_METRICS_TENANT_LABELS', help: 'per tenant', default: 'off' },
    { flag: '--help', arg: null, env: null, help: 'show this help and exit', default: null },
  ]);
  assert.deepEqual(h.endpoints, [{ methods: ['POST', 'DELETE'], path: '/mcp' }]);
  assert.deepEqual(h.commands, [{ usage: 'memoryd keys create|list ...', what: 'API keys' }]);
  assert.equal(h.signals, 'SIGTERM stops it.');
  const doc = configurationDoc(text);
  assert.ok(doc.includes('| `--log-level error\\|warn\\|info\\|debug` | `MEMORYD_LOG_LEVEL` | info | least important lines, with a \\| and &lt;b&gt; |\n'), doc);
  assert.ok(doc.includes('| POST, DELETE | `/mcp` |\n'), doc);
  // A line the reader cannot place is an error, not a line dropped.
  assert.throws(() => parseHelp(text.replace('  --port N', '  -p N')), /not an option|a line of no option/);
  assert.throws(() => parseHelp(text.replace('Commands:', 'Subcommands:')), /no Commands/);
});

test('memoryd --help is read whole: every variable an option, every route an endpoint', () => {
  const text = help();
  const h = parseHelp(text);
  const vars = text.match(/^ +MEMORYD_[A-Z0-9_]+$/gm).map((s) => s.trim());
  assert.deepEqual(h.options.filter((o) => o.env).map((o) => o.env), vars);
  assert.ok(vars.length >= 30, `only ${vars.length} options read`);
  assert.ok(h.options.every((o) => o.env === null || o.default !== null), 'an option without a [default]');
  const rows = routes().routes.filter((r) => !r.path.includes('{*}'));
  assert.deepEqual(h.endpoints.map((e) => e.path), [...new Set(rows.map((r) => r.path))]);
  assert.deepEqual(h.commands.map((c) => c.usage.split(' ')[1]), ['keys', 'backup', 'migrate', 'admin', 'scan']);
});

test('docs/configuration.md is exactly what scripts/gen-configuration.mjs makes of memoryd --help', () => {
  const want = configurationDoc(help());
  const got = fs.readFileSync(path.join(ROOT, 'docs/configuration.md'), 'utf8');
  assert.equal(got, want, 'docs/configuration.md is stale: run node scripts/gen-configuration.mjs build/memoryd > docs/configuration.md');
  // The script itself, run as the comment says, writes the same.
  assert.equal(execFileSync(process.execPath, [path.join(ROOT, 'scripts/gen-configuration.mjs'), BIN], { encoding: 'utf8' }), want);
});
