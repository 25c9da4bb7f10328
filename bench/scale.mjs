// Scale figures of memoryd's benchmark (bench/run.mjs calls scaleFigures): cost must not grow
// with what a command does not touch.
//   1. One database holding a tenant "big" with 100,000 files (1,000 directories of 100), 10,000
//      other tenants with a file each, and a tenant "small" with one directory of 100 files. For
//      view of a file, view of a 100-entry directory, rename of a file and create of a file, wrk
//      runs against "small" and "big" in turn, --repeat times (3; 1 in quick mode); each
//      side's median run counts: big must reach at least 1/1.5 of small.
//   2. str_replace and insert on files of 1 KiB, 16 KiB, 256 KiB and 1 MiB, one connection, each
//      the median of --repeat runs (each on a file of its own): the cost per operation grows
//      linearly with the file's size (not faster).
//   3. Renaming and deleting a directory of 1,000 and of 10,000 files: one request each, timed
//      on three copies of each tree (the median is reported), with the SQL statements memoryd
//      ran for it (its request log): the same count for both sizes.
// The big database is written straight with SQL (sqlite3 CLI) into the schema memoryd created.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BENCH_QUOTA, freePort, medianRun, startProcess, poster, runAll, wrk } from './lib.mjs';

const fmt = (n) => Math.round(n).toLocaleString('en-US');
// Each whole-directory operation is timed on three copies of its tree; the median is reported.
const TREE_COPIES = ['a', 'b', 'c'];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const failures = (runs) => runs.reduce((n, r) => n + r.non2xx + r.socket_errors, 0);

function populateSql({ bigDirs, filesPerDir, others, treeSizes }) {
  const content = 'x'.repeat(199) + '\n'; // 200 bytes
  const size = content.length;
  // Every file's SHA-256, as memoryd's create stores it (the same content everywhere).
  const sha = `X'${crypto.createHash('sha256').update(content).digest('hex')}'`;
  const sql = ['BEGIN;'];
  sql.push("INSERT INTO tenants (id, name, created_at) VALUES (1, 'small', 0), (2, 'big', 0), (3, 'trees', 0);");
  sql.push(`WITH RECURSIVE n(i) AS (SELECT 4 UNION ALL SELECT i + 1 FROM n WHERE i < ${others + 3})
    INSERT INTO tenants (id, name, created_at) SELECT i, 'other-' || i, 0 FROM n;`);
  // Roots: small and big hold directories of 100 files; others one note; trees two big dirs.
  const smallTotal = filesPerDir * size;
  const bigTotal = bigDirs * filesPerDir * size;
  const treesTotal = treeSizes.reduce((a, n) => a + n, 0) * size * TREE_COPIES.length;
  sql.push(`INSERT INTO entries (tenant, path, depth, kind, size, mtime, content) VALUES (1, '/memories', 0, 1, ${smallTotal}, 0, NULL), (2, '/memories', 0, 1, ${bigTotal}, 0, NULL),
    (3, '/memories', 0, 1, ${treesTotal}, 0, NULL);`);
  sql.push(`INSERT INTO entries (tenant, path, depth, kind, size, mtime, content) SELECT id, '/memories', 0, 1, ${size}, 0, NULL FROM tenants WHERE id > 3;`);
  sql.push(`INSERT INTO entries (tenant, path, depth, kind, size, mtime, sha256, content) SELECT id, '/memories/note.txt', 1, 0, ${size}, 0, ${sha}, CAST('${content}' AS BLOB) FROM tenants WHERE id > 3;`);
  sql.push(`INSERT INTO entries (tenant, path, depth, kind, size, mtime, content) VALUES (1, '/memories/d0000', 1, 1, ${filesPerDir * size}, 0, NULL);`);
  sql.push(`WITH RECURSIVE f(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM f WHERE j < ${filesPerDir - 1})
    INSERT INTO entries (tenant, path, depth, kind, size, mtime, sha256, content) SELECT 1, printf('/memories/d0000/f%03d.txt', j), 2, 0, ${size}, 0, ${sha}, CAST('${content}' AS BLOB) FROM f;`);
  sql.push(`WITH RECURSIVE d(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM d WHERE i < ${bigDirs - 1})
    INSERT INTO entries (tenant, path, depth, kind, size, mtime, content) SELECT 2, printf('/memories/d%04d', i), 1, 1, ${filesPerDir * size}, 0, NULL FROM d;`);
  sql.push(`WITH RECURSIVE d(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM d WHERE i < ${bigDirs - 1}),
    f(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM f WHERE j < ${filesPerDir - 1})
    INSERT INTO entries (tenant, path, depth, kind, size, mtime, sha256, content) SELECT 2, printf('/memories/d%04d/f%03d.txt', i, j), 2, 0, ${size}, 0, ${sha}, CAST('${content}' AS BLOB) FROM d, f;`);
  for (const n of treeSizes) {
    for (const copy of TREE_COPIES) {
      const dir = `/memories/t${n}${copy}`;
      sql.push(`INSERT INTO entries (tenant, path, depth, kind, size, mtime, content) VALUES (3, '${dir}', 1, 1, ${n * size}, 0, NULL);`);
      sql.push(`WITH RECURSIVE f(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM f WHERE j < ${n - 1})
        INSERT INTO entries (tenant, path, depth, kind, size, mtime, sha256, content) SELECT 3, printf('${dir}/f%05d.txt', j), 2, 0, ${size}, 0, ${sha}, CAST('${content}' AS BLOB) FROM f;`);
    }
  }
  sql.push('COMMIT;');
  return sql.join('\n');
}

// Rename every g<nnn>.txt of the tenant's directory back to f<nnn>.txt (what rename.lua left).
// wrk stops with renames still in flight, which memoryd carries out after it has gone: first a
// pause for them, and then a file found back in place already (409, the destination exists) is
// not an error.
export async function renameBack(port, tenant, dir) {
  await new Promise((res) => setTimeout(res, 300));
  const p = poster(port, { tenant });
  try {
    const list = await p.post({ command: 'view', path: `/memories/${dir}` });
    if (list.status !== 200) throw new Error(`view /memories/${dir}: ${list.status} ${list.text}`);
    const moved = [...list.json.content.matchAll(/\/g(\d{3})\.txt$/gm)].map((m) => m[1]);
    await Promise.all(moved.map(async (n) => {
      const cmd = { command: 'rename', old_path: `/memories/${dir}/g${n}.txt`, new_path: `/memories/${dir}/f${n}.txt` };
      const r = await p.post(cmd);
      const back = r.status === 409 && /destination .* already exists/.test(r.json?.content ?? '');
      if ((r.status !== 200 || r.json?.is_error) && !back) throw new Error(`${JSON.stringify(cmd)} -> ${r.status} ${r.text.slice(0, 300)}`);
    }));
  } finally {
    p.close();
  }
}

// The `sql` count of the last request line for `command` in memoryd's log (stderr).

function lastStatements(srv, command) {
  const lines = srv.stderrTail().split('\n').filter((l) => l.startsWith('{')).map((l) => { try { return JSON.parse(l); } catch { return null; } });
  return lines.filter((l) => l && l.msg === 'request' && l.command === command).at(-1)?.sql;
}

export async function scaleFigures({ memoryd, work, seconds, quick, repeat, log }) {
  const shape = quick
    ? { bigDirs: 100, filesPerDir: 100, others: 1000, treeSizes: [100, 1000] }
    : { bigDirs: 1000, filesPerDir: 100, others: 10000, treeSizes: [1000, 10000] };
  const db = path.join(work, 'scale.db');
  const targets = [];
  const reps = repeat ?? (quick ? 1 : 3);
  const out = { shape, ops: [], sizes: [], trees: [] };

  // The schema, made by memoryd itself; then the rows, straight in SQL.
  let port = await freePort();
  const logFile = path.join(work, 'scale-memoryd.log');
  let srv = await startProcess('memoryd', memoryd, ['--port', String(port), '--db', db, ...BENCH_QUOTA], port, { logFile });
  await srv.stop();
  const t0 = Date.now();
  execFileSync('sqlite3', [db], { input: populateSql(shape), stdio: ['pipe', 'ignore', 'inherit'] });
  const files = shape.bigDirs * shape.filesPerDir;
  log(`scale: populated ${fmt(files)} files for "big", ${fmt(shape.filesPerDir)} for "small", ${fmt(shape.others)} other tenants ` +
    `in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  port = await freePort();
  srv = await startProcess('memoryd', memoryd, ['--port', String(port), '--db', db, ...BENCH_QUOTA], port, { logFile });
  try {
    // 1. small vs big tenant, 16 connections.
    const mid = `d${String(Math.floor(shape.bigDirs / 2)).padStart(4, '0')}`;
    const ops = [
      { id: 'view_file', name: 'view a file', script: 'view.lua', args: (d) => [`/memories/${d}/f050.txt`] },
      { id: 'view_dir', name: 'view a 100-entry directory', script: 'view.lua', args: (d) => [`/memories/${d}`] },
      // rename.lua expects every file named f<nnn>.txt: after each run, renameBack.
      { id: 'rename', name: 'rename a file', script: 'rename.lua', args: (d) => [`/memories/${d}`, shape.filesPerDir / 2], after: renameBack },
      { id: 'create', name: 'create a file', script: 'create.lua', args: (d, r) => [`/memories/${d}/new${r}`] },
    ];
    log(`\n${'operation'.padEnd(28)} ${'tenant of 100 files'.padStart(20)} ${`tenant of ${fmt(files)} files`.padStart(26)}  ratio`);
    for (const op of ops) {
      const run = (tenant, dir, r) => wrk({ port, script: `bench/lua/${op.script}`, args: op.args(dir, r), conns: 16, seconds, env: { BENCH_TENANT: tenant } });
      const smalls = [], bigs = [];
      for (let r = 0; r < reps; r++) {
        smalls.push(run('small', 'd0000', r));
        if (op.after) await op.after(port, 'small', 'd0000');
        bigs.push(run('big', mid, r));
        if (op.after) await op.after(port, 'big', mid);
      }
      const small = medianRun(smalls);
      const big = medianRun(bigs);
      const ratio = small.rps / big.rps;
      out.ops.push({ op: op.id, small, big, ratio, small_rps: smalls.map((x) => x.rps), big_rps: bigs.map((x) => x.rps) });
      log(`${op.name.padEnd(28)} ${`${fmt(small.rps)}/s p99 ${small.p99_us} µs`.padStart(20)} ${`${fmt(big.rps)}/s p99 ${big.p99_us} µs`.padStart(26)}  ${ratio.toFixed(2)}×` +
        (reps > 1 ? `  (runs: ${smalls.map((x) => fmt(x.rps)).join(', ')} | ${bigs.map((x) => fmt(x.rps)).join(', ')})` : ''));
      const errors = failures(smalls) + failures(bigs);
      targets.push({ what: `${op.name}: 100-file tenant vs ${fmt(files)}-file tenant (among ${fmt(shape.others)} others)`, got: `${ratio.toFixed(2)}× (target ≤ 1.5×)${errors ? `, ${errors} failed requests` : ''}`, ok: ratio <= 1.5 && errors === 0 });
    }

    // 2. Edits on growing file sizes, one connection.
    const sizes = [1024, 16 * 1024, 256 * 1024, 1000 * 1000];
    const p = poster(port, { tenant: 'sizes' });
    const marker = 'state=on';
    const body = (n) => {
      const line = 'abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0\n'; // 64 bytes
      const text = line.repeat(Math.floor(n / 64)).slice(0, n - marker.length - 1);
      const half = Math.floor(text.length / 128) * 64; // the marker in the middle, on its own line
      return `${text.slice(0, half)}${marker}\n${text.slice(half)}`;
    };
    const seed = [];
    for (const n of sizes) {
      for (let r = 0; r < reps; r++) {
        seed.push({ command: 'create', path: `/memories/sr-${n}-${r}/f0.txt`, file_text: body(n) });
        seed.push({ command: 'create', path: `/memories/ins-${n}-${r}/f0.txt`, file_text: body(n) });
      }
    }
    await runAll(p, seed, 4);
    p.close();
    log(`\n${'file size'.padEnd(12)} ${'str_replace'.padStart(16)} ${'insert'.padStart(16)}   (one connection; µs per operation)`);
    for (const n of sizes) {
      const env = { BENCH_TENANT: 'sizes' };
      const srs = [], inss = [];
      for (let r = 0; r < reps; r++) {
        srs.push(wrk({ port, script: 'bench/lua/str_replace.lua', args: [`/memories/sr-${n}-${r}`, 1], conns: 1, seconds, env }));
        inss.push(wrk({ port, script: 'bench/lua/insert.lua', args: [`/memories/ins-${n}-${r}`, 1], conns: 1, seconds, env }));
      }
      const sr = medianRun(srs);
      const ins = medianRun(inss);
      const row = { bytes: n, str_replace_us: 1e6 / sr.rps, insert_us: 1e6 / ins.rps, errors: failures(srs) + failures(inss) };
      out.sizes.push(row);
      log(`${fmt(n).padEnd(12)} ${`${fmt(row.str_replace_us)} µs`.padStart(16)} ${`${fmt(row.insert_us)} µs`.padStart(16)}`);
    }
    const [, , quarter, full] = out.sizes;
    for (const k of ['str_replace', 'insert']) {
      const growth = full[`${k}_us`] / quarter[`${k}_us`];
      // 256 KiB -> 1,000,000 bytes is 3.8× the bytes: linear cost grows at most that much
      // (fixed costs make it less); 1.5× slack for noise.
      targets.push({ what: `${k} cost 256 KiB -> 1 MB file (3.8× the bytes)`, got: `${growth.toFixed(2)}× (target ≤ ${(3.8 * 1.5).toFixed(1)}×, linear)`, ok: growth <= 3.8 * 1.5 && full.errors === 0 });
    }

    // 3. Whole directories: one request each, on three copies of each tree (median time). A
    // write for the tenant first, so that every timed request finds its tenant id cached alike;
    // and a pause, so that the checkpoint of the edits above is not in the way.
    const tp = poster(port, { tenant: 'trees' });
    const warm = await tp.post({ command: 'create', path: '/memories/warm.txt', file_text: 'x' });
    if (warm.status !== 200) throw new Error(`warm-up create: ${warm.status} ${warm.text}`);
    await new Promise((res) => setTimeout(res, 1500));
    log('');
    for (const n of shape.treeSizes) {
      for (const command of ['rename', 'delete']) {
        const times = [];
        const counts = [];
        for (const copy of TREE_COPIES) {
          const dir = `/memories/t${n}${copy}`;
          const cmd = command === 'rename' ? { command, old_path: dir, new_path: `${dir}-moved` } : { command, path: `${dir}-moved` };
          const t = process.hrtime.bigint();
          const r = await tp.post(cmd);
          times.push(Number(process.hrtime.bigint() - t) / 1e6);
          if (r.status !== 200) throw new Error(`${JSON.stringify(cmd)}: ${r.status} ${r.text}`);
          await new Promise((res) => setTimeout(res, 50)); // the log line follows the answer
          counts.push(lastStatements(srv, command));
        }
        const statements = counts.every((c) => c === counts[0]) ? counts[0] : counts.join('/');
        out.trees.push({ files: n, command, ms: median(times), times, statements });
        log(`${command} a directory of ${fmt(n).padStart(6)} files: ${median(times).toFixed(1).padStart(7)} ms (median of ${times.map((x) => x.toFixed(1)).join(', ')}), ${statements} SQL statements`);
      }
    }
    tp.close();
    for (const command of ['rename', 'delete']) {
      const [a, b] = out.trees.filter((t) => t.command === command);
      targets.push({ what: `${command} of a directory: statements for ${fmt(a.files)} vs ${fmt(b.files)} files`, got: `${a.statements} vs ${b.statements} (target: equal)`, ok: a.statements === b.statements && a.statements > 0 });
    }
  } finally {
    await srv.stop();
  }
  out.targets = targets;
  return out;
}
