// Runs one command sequence against both implementations and checks memoryd
// against the oracle: a fresh BetaLocalFilesystemMemoryTool (the SDK's
// reference implementation, pinned @anthropic-ai/sdk@1.10.0) in its own temp
// dir, and a live memoryd under its own tenant. After every step the SDK's
// tree is snapshotted (restored when a failed command changed it); after the
// sequence, every file and directory of the SDK's tree is viewed on memoryd
// and compared with the SDK's disk.
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BetaLocalFilesystemMemoryTool, betaMemoryTool } from '@anthropic-ai/sdk/tools/memory/node';
import {
  CATEGORIES, MAX_LINES, ROOT, State, VIEW_SAFE, checkEnvelope, checkInput, judge, renderFileView,
  splitLines, transformListing,
} from './oracle.mjs';
import { mulberry32 } from '../lib/util.mjs';

// ---------------------------------------------------------------- SDK side

// What the SDK's tool runner sends: the handler's string, or "Error: " + message.
async function runSdk(runner, input) {
  try {
    const content = await runner.run(input);
    if (typeof content !== 'string') throw new Error('SDK returned non-string content');
    return { content, is_error: false };
  } catch (err) {
    return { content: `Error: ${err instanceof Error ? err.message : String(err)}`, is_error: true };
  }
}

// Snapshot of the SDK's tree as a State (canonical path -> entry).
export async function snapshot(root) {
  const entries = new Map([[ROOT, { kind: 'dir' }]]);
  async function walk(dir, mem) {
    for (const d of await fs.readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, d.name);
      const p = `${mem}/${d.name}`;
      if (d.isDirectory()) {
        entries.set(p, { kind: 'dir' });
        await walk(full, p);
      } else if (d.isFile()) {
        entries.set(p, { kind: 'file', data: await fs.readFile(full) });
      } else {
        throw new Error(`unexpected entry in the SDK tree: ${full}`);
      }
    }
  }
  await walk(root, ROOT);
  return new State(entries);
}

function sameState(a, b) {
  if (a.entries.size !== b.entries.size) return false;
  for (const [p, e] of a.entries) {
    const f = b.entries.get(p);
    if (!f || f.kind !== e.kind || (e.kind === 'file' && !e.data.equals(f.data))) return false;
  }
  return true;
}

const diskPath = (root, c) => path.join(root, ...c.slice(ROOT.length).split('/').filter(Boolean));

async function restore(root, state) {
  await fs.rm(root, { recursive: true, force: true });
  await fs.mkdir(root, { mode: 0o700 });
  const paths = [...state.entries.keys()].filter((p) => p !== ROOT).sort((a, b) => a.length - b.length);
  for (const p of paths) {
    const e = state.get(p);
    if (e.kind === 'dir') await fs.mkdir(diskPath(root, p), { mode: 0o700 });
    else await fs.writeFile(diskPath(root, p), e.data, { mode: 0o600 });
  }
}

// ---------------------------------------------------------------- memoryd side

// How a step travels to memoryd: a command object (JSON), a whole tool_use
// block, or a command object asking for text/plain.
function modeFor(globalStep) {
  if (globalStep % 3 === 1) return 'tool_use';
  if (globalStep % 7 === 5) return 'text';
  return 'json';
}

async function callMemoryd(srv, tenant, body, { mode, id, raw }) {
  const sent = raw ?? (mode === 'tool_use' ? { type: 'tool_use', id, name: 'memory', input: body } : body);
  const r = await srv.post(sent, { tenant, accept: mode === 'text' ? 'text/plain' : undefined });
  if (mode === 'text') {
    const flag = r.headers.get('x-memory-is-error');
    if (flag !== 'true' && flag !== 'false') throw new Error(`text/plain reply without X-Memory-Is-Error: ${r.status} ${r.text}`);
    return { status: r.status, content: r.text, is_error: flag === 'true', envelopeProblem: null, etagHeader: r.headers.get('etag'), etagJson: undefined };
  }
  const j = r.json;
  if (!j || j.type !== 'tool_result' || typeof j.content !== 'string' || typeof j.is_error !== 'boolean') {
    throw new Error(`memoryd reply is not a tool_result: ${r.status} ${r.text.slice(0, 500)}`);
  }
  let envelopeProblem = null;
  const keys = Object.keys(j).sort().join(',');
  // A view of a file sent as a bare command object carries its ETag in the JSON too; a
  // tool_use block gets a block ready to send back to the Messages API (no other key).
  const wantKeys = id !== undefined ? 'content,is_error,tool_use_id,type' : j.etag !== undefined ? 'content,etag,is_error,type' : 'content,is_error,type';
  if (keys !== wantKeys) envelopeProblem = `tool_result keys are ${keys}, expected ${wantKeys}`;
  else if (id !== undefined && j.tool_use_id !== id) envelopeProblem = `tool_use_id ${JSON.stringify(j.tool_use_id)} != ${JSON.stringify(id)}`;
  return { status: r.status, content: j.content, is_error: j.is_error, envelopeProblem, etagHeader: r.headers.get('etag'), etagJson: j.etag };
}

// The ETag memoryd sends: on a successful view of a file, and on a successful create,
// str_replace or insert, the SHA-256 of the file as the SDK's tree holds it after the step
// (header; for a view sent as a bare command object, also the JSON's `etag`); never
// elsewhere.
function checkEtag(ctx, cmd, got, post, { bare }) {
  const canon = typeof cmd?.path === 'string' ? cmd.path.replace(/\/+/g, '/').replace(/(.)\/$/, '$1') : null;
  const file = canon && post.get(canon);
  const withTag = !got.is_error && ['view', 'create', 'str_replace', 'insert'].includes(cmd?.command) && file?.kind === 'file';
  const want = withTag ? `"sha256-${createHash('sha256').update(file.data).digest('hex')}"` : null;
  if (got.etagHeader !== want) fail(ctx, `ETag header ${got.etagHeader}, expected ${want}`, { memoryd: got });
  const wantJson = withTag && bare && cmd.command === 'view' ? want : undefined;
  if (got.etagJson !== wantJson) fail(ctx, `JSON etag ${got.etagJson}, expected ${wantJson}`, { memoryd: got });
}

// ---------------------------------------------------------------- reporting

export function newStats() {
  const cats = Object.fromEntries(Object.keys(CATEGORIES).map((k) => [k, 0]));
  return { sequences: 0, steps: 0, exact: 0, cats, outcomes: {}, finalChecks: 0, toolUse: 0, text: 0, sdkSkipped: 0, failures: [] };
}

const show = (v, max = 600) => {
  const s = JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max)}…(${s.length} chars)` : s;
};

class StepFailure extends Error {}

function fail(ctx, what, detail) {
  const msg = [
    `${ctx.seq} step ${ctx.step}: ${what}`,
    `  command: ${show(ctx.cmd)}`,
    ...Object.entries(detail).map(([k, v]) => `  ${k}: ${show(v)}`),
  ].join('\n');
  throw new StepFailure(msg);
}

function compare(ctx, expected, got) {
  if (got.envelopeProblem) fail(ctx, got.envelopeProblem, { memoryd: got });
  if (got.content !== expected.content || got.is_error !== expected.is_error || got.status !== expected.status) {
    fail(ctx, 'memoryd differs from the expected result', {
      sdk: ctx.sdk ?? '(not run)',
      expected,
      memoryd: { content: got.content, is_error: got.is_error, status: got.status },
      categories: ctx.cats ?? [],
    });
  }
}

// ---------------------------------------------------------------- one sequence

let globalStep = 0;

// seq: {name, steps: Array<step>} or {name, seed, length, generate(state, rng, i)}.
// A step is a command object, a function (state, rng) -> step, or
// {raw: 'json text'} (sent verbatim; the SDK gets JSON.parse of it) or
// {body: anything} (a whole request body for memoryd only: envelope checks).
export async function runSequence(seq, { srv, tenant, stats }) {
  const rng = mulberry32(seq.seed ?? 1); // deterministic random walks
  const base = await fs.mkdtemp(path.join(os.tmpdir(), 'memoryd-conf-'));
  try {
    const tool = await BetaLocalFilesystemMemoryTool.init(base);
    const runner = betaMemoryTool(tool);
    const root = path.join(base, 'memories');
    let pre = await snapshot(root);
    const count = seq.steps ? seq.steps.length : seq.length;
    for (let i = 0; i < count; i++) {
      let step = seq.steps ? seq.steps[i] : seq.generate(pre, rng, i);
      while (typeof step === 'function') step = step(pre, rng);
      const ctx = { seq: seq.name, step: i, cmd: step };
      const mode = modeFor(globalStep++);
      const id = `toolu_conf_${tenant}_${i}`;

      // 1. A request body sent verbatim: {body} (a tool_use envelope, checked
      //    by memoryd only when it is bad) or {raw} (JSON text).
      let raw;
      let rawId;
      let cmd = step;
      if (step && Object.hasOwn(step, 'body')) {
        const env = checkEnvelope(step.body);
        if (env.content) {
          const got = await callMemoryd(srv, tenant, null, { mode: 'json', id: env.id, raw: step.body });
          compare(ctx, { content: env.content, is_error: true, status: 400 }, got);
          stats.steps++;
          stats.sdkSkipped++;
          stats.cats['input-validation']++;
          stats.outcomes['input:envelope'] = (stats.outcomes['input:envelope'] ?? 0) + 1;
          continue;
        }
        raw = step.body;
        rawId = env.id;
        cmd = env.input;
      } else if (step && Object.hasOwn(step, 'raw')) {
        raw = step.raw;
        cmd = JSON.parse(raw);
      }
      ctx.cmd = cmd;

      // 2. Field checks (memoryd's 400s) before anything runs.
      const bad = checkInput(cmd);
      let expected;
      let cats = [];
      let sdk = null;
      let result = null;
      const outcome = bad ? bad.outcome : null;
      if (bad) {
        expected = { content: bad.content, is_error: true, status: 400 };
        if (bad.sdkSafe) {
          sdk = await runSdk(runner, cmd);
          if (bad.category === 'path-rules' && sdk.content === expected.content && sdk.is_error) cats = [];
          else if (bad.category === null && !(sdk.content === expected.content && sdk.is_error)) {
            fail({ ...ctx, sdk }, 'SDK result not explained by any deliberate difference', { sdk, expected });
          } else if (bad.category) cats = [bad.category];
        } else {
          cats = [bad.category];
          stats.sdkSkipped++;
        }
      } else {
        sdk = await runSdk(runner, cmd);
        result = judge(cmd, pre, sdk);
        if (result.problem) {
          fail({ ...ctx, sdk }, `SDK result not explained by any deliberate difference (${result.problem})`, { sdk, expected: result.expected });
        }
        expected = result.expected;
        cats = result.cats;
      }
      ctx.sdk = sdk;
      ctx.cats = cats;

      // 3. memoryd.
      const got = await callMemoryd(srv, tenant, cmd, { mode: raw ? 'json' : mode, id: raw ? rawId : mode === 'tool_use' ? id : undefined, raw });
      if (mode === 'tool_use' && !raw) stats.toolUse++;
      if (mode === 'text' && !raw) stats.text++;
      compare(ctx, expected, got);

      // 4. Keep the SDK's tree where the contract says the tree is.
      let post = sdk ? await snapshot(root) : pre;
      if (expected.is_error) {
        if (!sameState(pre, post)) {
          await restore(root, pre);
          post = pre;
          cats.push('failed-command-no-change');
        }
      } else if (result?.apply) {
        for (const [c, data] of result.apply) await fs.writeFile(diskPath(root, c), data);
        post = await snapshot(root);
      }
      checkEtag(ctx, cmd, got, post, { bare: (raw ? rawId : mode === 'tool_use' ? id : undefined) === undefined && mode !== 'text' });
      if (result?.effect && !expected.is_error) {
        for (const [c, data] of result.effect) {
          if (!post.get(c)?.data?.equals(data)) fail(ctx, `SDK's ${c} after the step is not what the contract says`, { sdk });
        }
      }
      const stray = (await fs.readdir(base)).filter((n) => n !== 'memories');
      if (stray.length) fail(ctx, `the SDK wrote outside its memory root: ${stray.join(', ')}`, { sdk });

      stats.steps++;
      const label = outcome ?? result.outcome;
      stats.outcomes[label] = (stats.outcomes[label] ?? 0) + 1;
      if (cats.length === 0) stats.exact++;
      for (const c of new Set(cats)) stats.cats[c]++;
      pre = post;
    }
    await checkFinalState(seq, root, pre, runner, { srv, tenant, stats });
    stats.sequences++;
  } finally {
    await fs.rm(base, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- final state

// Every file: memoryd's view equals the SDK's bytes (in pages when long).
// Every directory: memoryd's listing equals the SDK's listing transformed.
async function checkFinalState(seq, root, state, runner, { srv, tenant, stats }) {
  for (const [c, e] of state.entries) {
    const ctx = { seq: seq.name, step: 'final', cmd: { command: 'view', path: c } };
    if (e.kind === 'dir') {
      const sdk = await runSdk(runner, { command: 'view', path: c });
      const t = sdk.is_error ? { problem: sdk.content } : transformListing(sdk.content, c, c, state);
      if (t.problem) fail(ctx, `cannot list the SDK's ${c}: ${t.problem}`, { sdk });
      const got = await callMemoryd(srv, tenant, ctx.cmd, { mode: 'json' });
      compare({ ...ctx, sdk }, { content: t.content, is_error: false, status: 200 }, got);
      stats.finalChecks++;
      continue;
    }
    const lines = splitLines(e.data);
    if (lines.length > MAX_LINES) {
      const got = await callMemoryd(srv, tenant, ctx.cmd, { mode: 'json' });
      compare(ctx, { content: `File ${c} exceeds maximum line limit of 999,999 lines.`, is_error: true, status: 413 }, got);
      stats.finalChecks++;
      continue;
    }
    // Pages of at most ~200 KB of output, so memoryd's view limit never cuts them.
    const pages = [];
    let from = 1;
    let size = 0;
    for (let n = 1; n <= lines.length; n++) {
      size += Buffer.byteLength(lines[n - 1]) + 8;
      if (size > 200000 || n === lines.length) {
        pages.push([from, n]);
        from = n + 1;
        size = 0;
      }
    }
    for (const range of pages) {
      const whole = pages.length === 1;
      const cmd = whole ? { command: 'view', path: c } : { command: 'view', path: c, view_range: range };
      const want = renderFileView(c, lines, whole ? null : range);
      if (Buffer.byteLength(want) > VIEW_SAFE) throw new Error(`corpus error: a line of ${c} is too long to view whole`);
      const got = await callMemoryd(srv, tenant, cmd, { mode: 'json' });
      compare({ ...ctx, cmd }, { content: want, is_error: false, status: 200 }, got);
    }
    stats.finalChecks++;
  }
}

export { StepFailure };
