// SQL on a memoryd database from a test, whichever backend it is: `dbPath` is a SQLite file (run
// with the sqlite3 CLI) or a postgresql:// URI (run with psql, tests/lib/pg.mjs). Both print
// one row per line, the columns of a row separated by "|", no header: "value\n".
//
//   dbSql(srv.dbPath, "SELECT count(*) FROM versions")   -> "0\n"
//   dbSqlFile(srv.dbPath, file)                            -> the same, the SQL in a file
//   isPgUri(srv.dbPath)                                     -> is it PostgreSQL?
//   dbInconsistencies(srv.dbPath)                           -> [] when the data is consistent:
//       SQLite's PRAGMA integrity_check, or pgInconsistencies() on PostgreSQL
//
// The SQL must be valid on both: mind that PostgreSQL computes an integer product such as
// 31*86400000 in int4 and overflows (write bigint literals: 2678400000, or 31::bigint * ...),
// that its booleans are true/false (SQLite: 1/0), and that a string is '...' (never "...").
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { pgInconsistencies, psql } from './pg.mjs';

export const isPgUri = (dbPath) => /^postgres(ql)?:\/\//.test(dbPath);

export function dbSql(dbPath, sql) {
  if (isPgUri(dbPath)) return psql(dbPath, sql);
  return execFileSync('sqlite3', ['-cmd', '.timeout 10000', dbPath, sql], { encoding: 'utf8', maxBuffer: 1 << 28 });
}

// The same for SQL in a file (too long for a command line's argument).
export function dbSqlFile(dbPath, file) {
  if (isPgUri(dbPath)) return execFileSync('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', dbPath, '-f', file], { encoding: 'utf8' });
  return execFileSync('sqlite3', ['-bail', '-cmd', '.timeout 10000', dbPath, `.read ${file}`], { encoding: 'utf8' });
}

export function dbInconsistencies(dbPath) {
  if (isPgUri(dbPath)) return pgInconsistencies(dbPath);
  const out = execFileSync('sqlite3', [dbPath, 'PRAGMA integrity_check;'], { encoding: 'utf8' });
  return out === 'ok\n' ? [] : out.split('\n').filter(Boolean);
}

// SQLite: where the bytes `needle` are still stored in the database's files, read raw:
// {"memoryd.db": [offsets], "memoryd.db-wal": [offsets]} ({} when nowhere).
export function sqliteFilesHolding(dbPath, needle) {
  const found = {};
  for (const suffix of ['', '-wal']) {
    const f = dbPath + suffix;
    if (!fs.existsSync(f)) continue;
    const buf = fs.readFileSync(f);
    const at = [];
    for (let i = buf.indexOf(needle); i >= 0; i = buf.indexOf(needle, i + 1)) at.push(i);
    if (at.length) found[`memoryd.db${suffix}`] = at;
  }
  return found;
}
