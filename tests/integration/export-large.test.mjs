// Proves docs/behaviour.md "Export and import", memory: a 1 GiB tenant (1,024 files of
// 1 MiB, the --max-file default) goes in through POST /v1/tenants/{t}/import (logging its
// progress: bytes of the archive read, every MEMORYD_PROGRESS_MS), streamed from
// a generator (the archive never exists whole, here or in memoryd: memoryd keeps it in a
// temporary file) and comes out through GET .../export, read by GNU tar as it streams;
// memoryd's peak resident memory (VmHWM) stays under 64 MiB all along, against the
// 1 GiB it moved twice. Files are told apart by their content (index in every line), and a
// sample is compared byte for byte after extraction. Runs on both backends
// (pg/integration/export-large). Not in the sanitizer build: AddressSanitizer's quarantine
// alone holds up to 256 MiB of freed memory, so the bound would measure it, not memoryd.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startServer, tempDir } from '../lib/server.mjs';
import { tarEntry } from '../lib/tar.mjs';

const FILES = 1024;
const SIZE = 1024 * 1024; // --max-file's default
const PEAK_MAX = 64 * 1024 * 1024;
const sanitized = process.env.MD_SANITIZE === '1';

function content(i) {
  const line = `file ${String(i).padStart(4, '0')} of the 1 GiB tenant, `.padEnd(63, '.') + '\n';
  return Buffer.from(line.repeat(SIZE / 64));
}

function peak(pid) {
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmHWM:\s+(\d+) kB/);
  return Number(m[1]) * 1024;
}

test('a 1 GiB tenant: imported and exported as streams, memoryd peak memory bounded', { skip: sanitized && 'sanitizer build: see the header', timeout: 1800000 }, async () => {
  // MEMORYD_PROGRESS_MS: the import's progress lines every 500 ms (md_progress.h), not 2 s.
  const s = await startServer({ args: ['--tenant-max-bytes', '0', '--tenant-max-files', '0', '--max-import', '2G', '--history-versions', '0'], env: { MEMORYD_PROGRESS_MS: '500' } });
  const dir = tempDir('memoryd-export-large-');
  try {
    const start = peak(s.proc.pid);
    // Import: the archive generated while it is sent.
    const answer = await new Promise((resolve, reject) => {
      const req = http.request(`${s.url}/v1/tenants/big/import`, { method: 'POST', headers: { 'content-type': 'application/x-tar' } }, (res) => {
        let text = '';
        res.on('data', (c) => { text += c; });
        res.on('end', () => resolve({ status: res.statusCode, text }));
      });
      req.on('error', reject);
      let i = 0;
      const pump = () => {
        while (i < FILES) {
          const ok = req.write(tarEntry({ name: `memories/d${i % 8}/f${String(i).padStart(4, '0')}.txt`, data: content(i) }));
          i++;
          if (!ok) return void req.once('drain', pump);
        }
        req.end(Buffer.alloc(1024));
      };
      pump();
    });
    assert.equal(answer.status, 200, answer.text);
    const json = JSON.parse(answer.text);
    assert.equal(json.files, FILES);
    assert.equal(json.bytes, FILES * SIZE);
    const afterImport = peak(s.proc.pid);
    // The import said how far it had come: bytes of the archive read, of its size, then done.
    await s.waitForLogs((logs) => logs.some((l) => l.msg === 'done' && l.work === 'import'), 'the import\'s done line');
    const progress = s.logs.filter((l) => l.work === 'import');
    const total = progress[0].total;
    assert.ok(total > FILES * SIZE, `total ${total}`);
    assert.ok(progress.length >= 2, `${progress.length} progress lines`);
    assert.deepEqual(progress.map((l) => [l.msg, l.unit, l.total]), [...progress.slice(0, -1).map(() => ['progress', 'bytes', total]), ['done', 'bytes', total]]);
    const counts = progress.map((l) => l.done);
    assert.ok(counts.every((n, i) => n >= (counts[i - 1] ?? 0) && n <= total) && counts.at(-1) > FILES * SIZE, counts.join());

    // Export, extracted by GNU tar as it streams.
    const tar = spawn('tar', ['-xf', '-'], { cwd: dir, stdio: ['pipe', 'ignore', 'pipe'] });
    let tarErr = '';
    tar.stderr.on('data', (d) => { tarErr += d; });
    const tarDone = new Promise((resolve) => tar.on('close', resolve));
    const got = await new Promise((resolve, reject) => {
      http.get(`${s.url}/v1/tenants/big/export`, (res) => {
        let n = 0;
        res.on('data', (c) => { n += c.length; });
        res.pipe(tar.stdin);
        res.on('end', () => resolve({ status: res.statusCode, n }));
        res.on('error', reject);
      }).on('error', reject);
    });
    assert.equal(got.status, 200);
    assert.equal(await tarDone, 0, tarErr);
    assert.ok(got.n > FILES * SIZE, `the archive holds the gigabyte (${got.n} bytes)`);
    const afterExport = peak(s.proc.pid);
    let files = 0;
    for (let d = 0; d < 8; d++) files += fs.readdirSync(path.join(dir, `memories/d${d}`)).length;
    assert.equal(files, FILES);
    for (const i of [0, 1, 511, 1023]) {
      assert.ok(fs.readFileSync(path.join(dir, `memories/d${i % 8}/f${String(i).padStart(4, '0')}.txt`)).equals(content(i)), `file ${i}`);
    }
    console.log(`memoryd VmHWM: ${(start / 2 ** 20).toFixed(1)} MiB at start, ${(afterImport / 2 ** 20).toFixed(1)} MiB after the import, ${(afterExport / 2 ** 20).toFixed(1)} MiB after the export (bound ${PEAK_MAX / 2 ** 20} MiB; ${(got.n / 2 ** 30).toFixed(2)} GiB exported)`);
    assert.ok(afterExport < PEAK_MAX, `peak ${afterExport} bytes`);
  } finally {
    await s.stop();
    fs.rmSync(s.dir, { recursive: true, force: true });
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
