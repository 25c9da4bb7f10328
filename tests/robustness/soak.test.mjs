// Soak: a bounded load run with every answer checked. 64 clients, each on its own keep-alive
// connection and in its own directory, send a mixed stream of commands (views of files and of
// their directory, creates, str_replace on counters, inserts, renames, deletes, plus inserts into
// one file shared by all) for MD_SOAK_SECONDS (default 8; the documented long run is 60). Each
// client keeps a model of its files, so every answer must equal the exact expected text and
// status: zero unexpected errors. At the end every file equals its model, and the shared file is
// read whole, page by page, following the view's truncation notes (memoryd runs with --max-view
// 16K, far above any other view here, so that even the short run reads it in several pages and
// the paging itself is checked): it must hold exactly the lines each client inserted (counted per
// client) and its final "end" line, so no acknowledged insert was lost or applied twice.
// memoryd's resident memory (VmRSS) is sampled every 250 ms and must stay flat: after the first
// quarter of the run (warm-up: caches, connections, SQLite page cache) it may grow by at most
// 16 MiB (not checked under ASan, whose quarantine grows by design). The figures are printed
// in one line starting "soak figures:".
//
// The documented long run (60 s, 64 connections), from the repository root after a build:
//
//   MD_SOAK_SECONDS=60 MD_SOAK_CLIENTS=64 MD_TEST_BIN=build/memoryd node --test tests/robustness/soak.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startServer } from '../lib/server.mjs';
import { makeClient } from '../lib/client.mjs';
import { formatSize, mulberry32 } from '../lib/util.mjs';

const SECONDS = Number(process.env.MD_SOAK_SECONDS ?? 8);
const CLIENTS = Number(process.env.MD_SOAK_CLIENTS ?? 64);
const MAX_FILES = 12;
const SHARED = '/memories/soak/shared.txt';
const MAX_VIEW = 16 * 1024;
const pad6 = (n) => String(n).padStart(6, ' ');

function rssKiB(pid, field = 'VmRSS') {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

function fileView(p, text) {
  return `Here's the content of ${p} with line numbers:\n${text.split('\n').map((l, i) => `${pad6(i + 1)}\t${l}`).join('\n')}`;
}

// One client's workload and model. Names are ASCII, so byte order is JavaScript's sort order.
function clientLoop(c, client, rand, deadline, stats) {
  const dir = `/memories/soak/c${String(c).padStart(2, '0')}`;
  const files = new Map(); // path -> content
  let next = 0;
  const pick = () => [...files.keys()][Math.floor(rand() * files.size)];
  const expect = async (cmd, status, content) => {
    const r = await client.post(cmd);
    stats.requests++;
    if (r.status !== status || r.content !== content || r.isError !== (status !== 200)) {
      stats.unexpected.push({ cmd, got: [r.status, r.content], want: [status, content] });
    }
    return r;
  };
  const listing = () => {
    const names = [...files.keys()].sort();
    const total = names.reduce((n, p) => n + Buffer.byteLength(files.get(p)), 0);
    return [`Here're the files and directories up to 2 levels deep in ${dir}, excluding hidden items and node_modules:`,
      `${formatSize(total)}\t${dir}`, ...names.map((p) => `${formatSize(Buffer.byteLength(files.get(p)))}\t${p}`)].join('\n');
  };
  return (async () => {
    await expect({ command: 'create', path: `${dir}/.keep`, file_text: '' }, 200, `File created successfully at: ${dir}/.keep`);
    files.set(`${dir}/.keep`, '');
    const hidden = (p) => p.endsWith('/.keep');
    while (Date.now() < deadline) {
      const x = rand();
      const visible = [...files.keys()].filter((p) => !hidden(p));
      if (x < 0.35 && visible.length) { // view a file
        const p = visible[Math.floor(rand() * visible.length)];
        await expect({ command: 'view', path: p }, 200, fileView(p, files.get(p)));
      } else if (x < 0.45) { // view the directory (the hidden .keep is left out, its 0 bytes too)
        files.delete(`${dir}/.keep`);
        const want = listing();
        files.set(`${dir}/.keep`, '');
        await expect({ command: 'view', path: dir }, 200, want);
      } else if (x < 0.6 && visible.length < MAX_FILES) { // create a counter file
        const p = `${dir}/f${next++}.txt`;
        const text = `value=0\nclient ${c}`;
        await expect({ command: 'create', path: p, file_text: text }, 200, `File created successfully at: ${p}`);
        files.set(p, text);
      } else if (x < 0.63 && visible.length) { // create over an existing file: 409
        const p = visible[0];
        await expect({ command: 'create', path: p, file_text: 'x' }, 409, `Error: File ${p} already exists`);
      } else if (x < 0.78 && visible.length) { // advance a counter
        const p = visible[Math.floor(rand() * visible.length)];
        const text = files.get(p);
        const n = Number(/value=(\d+)/.exec(text)[1]);
        const after = text.replace(`value=${n}`, `value=${n + 1}`);
        const lines = after.split('\n');
        const at = lines.findIndex((l) => l === `value=${n + 1}`);
        const snippet = lines.slice(Math.max(0, at - 2), Math.min(lines.length, at + 3)).map((l, i) => `${pad6(Math.max(0, at - 2) + i + 1)}\t${l}`).join('\n');
        await expect({ command: 'str_replace', path: p, old_str: `value=${n}`, new_str: `value=${n + 1}` }, 200,
          `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n${snippet}`);
        files.set(p, after);
      } else if (x < 0.86 && visible.length) { // a note line at the end of a file
        const p = visible[Math.floor(rand() * visible.length)];
        const text = files.get(p);
        const n = text.split('\n').length;
        if (Buffer.byteLength(text) > 900) continue;
        const note = `note ${c}.${next++}`;
        await expect({ command: 'insert', path: p, insert_line: n, insert_text: `${note}\n` }, 200, `The file ${p} has been edited.`);
        files.set(p, `${text}\n${note}`);
      } else if (x < 0.9) { // a line into the file everyone shares
        const r = await expect({ command: 'insert', path: SHARED, insert_line: 0, insert_text: `c${c}\n` }, 200, `The file ${SHARED} has been edited.`);
        if (r.status === 200) stats.sharedBy[c]++;
      } else if (x < 0.95 && visible.length) { // rename
        const p = pick();
        if (hidden(p)) continue;
        const q = `${dir}/f${next++}.txt`;
        await expect({ command: 'rename', old_path: p, new_path: q }, 200, `Successfully renamed ${p} to ${q}`);
        files.set(q, files.get(p));
        files.delete(p);
      } else if (visible.length) { // delete, and a second delete: 404
        const p = visible[Math.floor(rand() * visible.length)];
        await expect({ command: 'delete', path: p }, 200, `Successfully deleted ${p}`);
        files.delete(p);
        await expect({ command: 'delete', path: p }, 404, `Error: The path ${p} does not exist`);
      }
    }
    return files;
  })();
}

// Read a whole file, however long, with view: a plain view, then view_range pages as each
// truncation note asks. Every page must have the exact header, consecutive line numbers from
// where the previous page stopped, and a note naming the line it stopped after, the file's line
// count and the next range; the last page has no note. Returns the lines and the page count.
async function readPaged(client, p, maxView) {
  const lines = [];
  let pages = 0;
  let total = null;
  for (let cmd = { command: 'view', path: p }; cmd;) {
    const r = await client.post(cmd);
    pages++;
    assert.equal(r.status, 200, r.text);
    let body = r.content;
    cmd = null;
    const note = /\n\[Output truncated at the (\d+)-byte view limit after line (\d+) of (\d+)\. To see more, view again with view_range \[(\d+), -1\]\.\]$/.exec(body);
    if (note) {
      const [, limit, after, of, from] = note.map(Number);
      assert.equal(limit, maxView);
      assert.equal(from, after + 1);
      assert.ok(total === null || total === of, `line count changed from ${total} to ${of}`);
      total = of;
      body = body.slice(0, note.index);
      cmd = { command: 'view', path: p, view_range: [from, -1] };
    }
    const [header, ...rest] = body.split('\n');
    assert.equal(header, `Here's the content of ${p} with line numbers:`);
    for (const line of rest) {
      const want = `${pad6(lines.length + 1)}\t`;
      assert.ok(line.startsWith(want), `page ${pages}: ${JSON.stringify(line.slice(0, 40))} is not line ${lines.length + 1}`);
      lines.push(line.slice(want.length));
    }
    if (note) assert.equal(lines.length, Number(note[2]), 'the note names the last line shown');
  }
  if (total !== null) assert.equal(lines.length, total);
  return { lines, pages };
}

test(`soak: ${CLIENTS} connections, mixed commands for ${SECONDS} s, every answer exact, memory flat`, async (t) => {
  const srv = await startServer({ args: ['--max-view', String(MAX_VIEW)] });
  try {
    const setup = makeClient(srv.port);
    assert.equal((await setup.post({ command: 'create', path: SHARED, file_text: 'end' })).status, 200);
    const pid = srv.proc.pid;
    const samples = [];
    const sampler = setInterval(() => samples.push({ at: Date.now(), rss: rssKiB(pid) }), 250);
    const start = Date.now();
    const deadline = start + SECONDS * 1000;
    const stats = { requests: 0, sharedBy: new Array(CLIENTS).fill(0), unexpected: [] };
    const clients = Array.from({ length: CLIENTS }, () => makeClient(srv.port));
    const models = await Promise.all(clients.map((cl, c) => clientLoop(c, cl, mulberry32(1000 + c), deadline, stats)));
    clearInterval(sampler);
    const elapsed = (Date.now() - start) / 1000;
    for (const cl of clients) cl.close();

    const warm = samples.filter((s) => s.at >= start + (deadline - start) / 4);
    const base = warm[0]?.rss ?? samples[0].rss;
    const peak = Math.max(...warm.map((s) => s.rss));
    const end = samples.at(-1).rss;
    const shared = stats.sharedBy.reduce((a, b) => a + b, 0);
    // One line with every figure, printed before any assertion so that a failed run reports too.
    t.diagnostic(`soak figures: ${CLIENTS} connections, ${elapsed.toFixed(1)} s, ${stats.requests} requests, ` +
      `${Math.round(stats.requests / elapsed)} req/s, ${stats.unexpected.length} unexpected, ${shared} shared inserts, ` +
      `RSS after warm-up ${base} KiB, peak ${peak} KiB, end ${end} KiB, high-water ${rssKiB(pid, 'VmHWM')} KiB`);

    assert.deepEqual(stats.unexpected.slice(0, 5), [], `${stats.unexpected.length} unexpected answers`);
    // The final state equals the models: every file's content, and the shared file holds exactly
    // the acknowledged inserts (each client's count of its own lines) above its last line "end".
    for (const files of models) {
      for (const [p, text] of files) {
        const r = await setup.post({ command: 'view', path: p });
        assert.equal(r.content, fileView(p, text));
      }
    }
    const { lines, pages } = await readPaged(setup, SHARED, MAX_VIEW);
    assert.equal(lines.at(-1), 'end');
    const seen = new Array(CLIENTS).fill(0);
    for (const line of lines.slice(0, -1)) {
      const m = /^c(\d+)$/.exec(line);
      assert.ok(m && Number(m[1]) < CLIENTS, `unexpected line ${JSON.stringify(line)} in ${SHARED}`);
      seen[Number(m[1])]++;
    }
    assert.deepEqual(seen, stats.sharedBy, 'shared-file lines per client');
    t.diagnostic(`${SHARED}: ${lines.length} lines read in ${pages} page(s)`);
    setup.close();

    if (process.env.MD_SANITIZE !== '1' && !process.env.MD_TEST_WRAPPER) {
      assert.ok(peak - base <= 16 * 1024, `RSS grew from ${base} KiB to ${peak} KiB after warm-up`);
    }
    await srv.stop();
  } finally {
    if (!srv.exited()) await srv.kill();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});
