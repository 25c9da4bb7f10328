// Soak: a bounded load run with every answer checked. 64 clients, each on its own keep-alive
// connection and in its own directory, send a mixed stream of commands (views of files and of
// their directory, creates, str_replace on counters, inserts, renames, deletes, plus inserts into
// one file shared by all) for MD_SOAK_SECONDS (default 8; the documented long run is 60). Each
// client keeps a model of its files, so every answer must equal the exact expected text and
// status: zero unexpected errors. memoryd's resident memory (VmRSS) is sampled every 250 ms and
// must stay flat: after the first quarter of the run (warm-up: caches, connections, SQLite
// page cache) it may grow by at most 16 MiB (not checked under ASan, whose quarantine grows by
// design). The figures (requests, requests/s, RSS) are printed.
//
//   MD_SOAK_SECONDS=60 MD_TEST_BIN=build/memoryd node --test tests/robustness/soak.test.mjs
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
        await expect({ command: 'insert', path: SHARED, insert_line: 0, insert_text: `c${c}\n` }, 200, `The file ${SHARED} has been edited.`);
        stats.shared++;
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

test(`soak: ${CLIENTS} connections, mixed commands for ${SECONDS} s, every answer exact, memory flat`, async (t) => {
  const srv = await startServer();
  try {
    const setup = makeClient(srv.port);
    assert.equal((await setup.post({ command: 'create', path: SHARED, file_text: 'end' })).status, 200);
    const pid = srv.proc.pid;
    const samples = [];
    const sampler = setInterval(() => samples.push({ at: Date.now(), rss: rssKiB(pid) }), 250);
    const start = Date.now();
    const deadline = start + SECONDS * 1000;
    const stats = { requests: 0, shared: 0, unexpected: [] };
    const clients = Array.from({ length: CLIENTS }, () => makeClient(srv.port));
    const models = await Promise.all(clients.map((cl, c) => clientLoop(c, cl, mulberry32(1000 + c), deadline, stats)));
    clearInterval(sampler);
    const elapsed = (Date.now() - start) / 1000;
    for (const cl of clients) cl.close();

    assert.deepEqual(stats.unexpected.slice(0, 5), [], `${stats.unexpected.length} unexpected answers`);
    // The final state equals the models: every file's content, and the shared file's line count.
    for (const files of models) {
      for (const [p, text] of files) {
        const r = await setup.post({ command: 'view', path: p });
        assert.equal(r.content, fileView(p, text));
      }
    }
    const shared = await setup.post({ command: 'view', path: SHARED });
    assert.equal(shared.content.split('\n').length - 1, stats.shared + 1);
    setup.close();

    const warm = samples.filter((s) => s.at >= start + (deadline - start) / 4);
    const base = warm[0]?.rss ?? samples[0].rss;
    const peak = Math.max(...warm.map((s) => s.rss));
    const end = samples.at(-1).rss;
    t.diagnostic(`${stats.requests} requests in ${elapsed.toFixed(1)} s (${Math.round(stats.requests / elapsed)}/s), ` +
      `${stats.shared} shared inserts; RSS after warm-up ${base} KiB, peak ${peak} KiB, end ${end} KiB, ` +
      `high-water ${rssKiB(pid, 'VmHWM')} KiB`);
    if (process.env.MD_SANITIZE !== '1' && !process.env.MD_TEST_WRAPPER) {
      assert.ok(peak - base <= 16 * 1024, `RSS grew from ${base} KiB to ${peak} KiB after warm-up`);
    }
    await srv.stop();
  } finally {
    if (!srv.exited()) await srv.kill();
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
});
