// Differential conformance test: memoryd against the SDK's reference
// implementation (BetaLocalFilesystemMemoryTool of @anthropic-ai/sdk@1.10.0).
// Every sequence of corpus.mjs runs on a fresh SDK tree and on its own memoryd
// tenant of one live server; every step's result (content, is_error, HTTP
// status) must equal the SDK's, or — for the contract's deliberate
// differences (oracle.mjs CATEGORIES) — the contract's result. After each
// sequence, every file and directory of the SDK's tree is compared with
// memoryd's view of it. Prints per-category counts and a one-line summary.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startServer } from '../lib/server.mjs';
import { sequences, handWritten } from './corpus.mjs';
import { runSequence, newStats, StepFailure } from './harness.mjs';
import { CATEGORIES } from './oracle.mjs';

const stats = newStats();
const started = Date.now();

// Run only the sequences whose name contains CONF_FILTER (for debugging).
const filter = process.env.CONF_FILTER;
const selected = sequences.map((s, n) => ({ s, n })).filter(({ s }) => !filter || s.name.includes(filter));

// Every case of the contract the corpus must reach at least once (oracle.mjs
// names the case of each step; see judge() and checkInput()).
const REQUIRED_OUTCOMES = [
  'view:file', 'view:range-ignored', 'view:directory', 'view:directory-trailing-slash', 'view:missing', 'view:through-file', 'view:line-limit',
  'create:ok', 'create:exists', 'create:root', 'create:under-file',
  'str_replace:ok', 'str_replace:ok-multiline-old', 'str_replace:ok-multiline-new', 'str_replace:missing', 'str_replace:directory',
  'str_replace:through-file', 'str_replace:no-match', 'str_replace:several', 'str_replace:several-on-one-line',
  'insert:ok-at-0', 'insert:ok-middle', 'insert:ok-at-end', 'insert:missing', 'insert:directory', 'insert:through-file', 'insert:out-of-range',
  'delete:ok-file', 'delete:ok-dir', 'delete:root', 'delete:missing', 'delete:through-file',
  'rename:ok-file', 'rename:ok-dir', 'rename:root', 'rename:destination-exists', 'rename:missing-source', 'rename:into-itself',
  'rename:destination-under-file',
  'path:not-under-root', 'path:too-long', 'path:control', 'path:backslash', 'path:percent', 'path:escapes', 'path:dotdot', 'path:dot',
  'path:segment-too-long', 'input:field', 'input:view_range', 'input:out-of-range', 'input:unknown-command',
  'input:envelope',
];

test('corpus size', () => {
  assert.ok(sequences.length >= 100, `only ${sequences.length} sequences`);
  assert.ok(handWritten >= 60, `only ${handWritten} hand-written sequences`);
});

test('memoryd conforms to the SDK reference implementation, except the contract\'s deliberate differences', async (t) => {
  const srv = await startServer();
  try {
    for (const { s, n } of selected) {
      await t.test(`#${n} ${s.name}`, async () => {
        try {
          await runSequence(s, { srv, tenant: `conf-${n}`, stats });
        } catch (err) {
          stats.failures.push(err instanceof StepFailure ? err.message : `${s.name}: ${err.stack}`);
          throw err;
        }
      });
    }
  } finally {
    await srv.stop();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
  if (!filter) {
    const missing = REQUIRED_OUTCOMES.filter((o) => !stats.outcomes[o]);
    assert.deepEqual(missing, [], `cases of the contract the corpus never reached: ${missing.join(', ')}`);
    const unused = Object.keys(CATEGORIES).filter((k) => !stats.cats[k]);
    assert.deepEqual(unused, [], `deliberate differences the corpus never showed: ${unused.join(', ')}`);
    assert.ok(stats.steps >= 1000, `only ${stats.steps} steps`);
  }
});

after(() => {
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  const lines = [
    `conformance: ${stats.steps} steps in ${stats.sequences}/${selected.length} sequences; ` +
      `${stats.exact} matched the SDK exactly; ${stats.steps - stats.exact} in deliberate differences ` +
      `(a step may fall in several):`,
    ...Object.entries(CATEGORIES).map(([k, desc]) => `  ${String(stats.cats[k]).padStart(5)}  ${k}  (${desc})`),
    `  steps sent as tool_use blocks: ${stats.toolUse}; as text/plain: ${stats.text}; not run on the SDK (memoryd-only input checks): ${stats.sdkSkipped}`,
    `  final-state checks (files and directories compared after each sequence): ${stats.finalChecks}`,
    `  cases reached: ${Object.entries(stats.outcomes).sort().map(([k, v]) => `${k}=${v}`).join(' ')}`,
  ];
  if (stats.failures.length) lines.push(`  FAILURES (${stats.failures.length}):`, ...stats.failures.map((f) => f.replace(/^/gm, '    ')));
  lines.push(
    `CONFORMANCE SUMMARY: ${stats.failures.length || stats.sequences !== selected.length ? 'FAIL' : 'PASS'} — ${stats.sequences}/${selected.length} sequences, ${stats.steps} steps, ` +
      `${stats.exact} exact, ${stats.steps - stats.exact} deliberate differences, ${stats.failures.length} failures, ${secs}s`,
  );
  process.stdout.write(lines.join('\n') + '\n');
});
