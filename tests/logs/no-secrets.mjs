// Run by ctest once the whole suite has run (logs/no-secrets, the cleanup of the fixture
// `suitelogs`): no secret a test made — every API key `memoryd keys create` printed, and the
// file contents registered with registerSecret (tests/lib/server.mjs) — appears in any log
// line of any memoryd the suite started (their stderr, kept in MD_SUITE_LOG_DIR). A key is
// looked for with and without its `mdk_` prefix (its secret part alone).
//   node tests/logs/no-secrets.mjs DIR
import fs from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node tests/logs/no-secrets.mjs DIR');
  process.exit(2);
}
const secretsFile = path.join(dir, 'secrets.txt');
const secrets = fs.existsSync(secretsFile) ? [...new Set(fs.readFileSync(secretsFile, 'utf8').split('\n').filter(Boolean))] : [];
const logs = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.log')) : [];
// A check of nothing proves nothing: the whole suite makes keys (tests/integration/keys.test.mjs
// and others) and registers contents (tests/integration/export.test.mjs). Run without them
// (ctest -R picking other tests), the check is skipped (77, ctest's SKIP_RETURN_CODE).
const keys = secrets.filter((s) => s.startsWith('mdk_')).length;
if (keys === 0 || keys === secrets.length || logs.length === 0) {
  console.log(`no-secrets: nothing to check (${keys} keys, ${secrets.length - keys} contents, ${logs.length} logs in ${dir}): skipped`);
  process.exit(77);
}
let lines = 0;
const found = [];
for (const f of logs) {
  const text = fs.readFileSync(path.join(dir, f), 'utf8');
  lines += text.split('\n').length - 1;
  for (const s of secrets) {
    const key = s.startsWith('mdk_');
    if (text.includes(s)) found.push(`${f}: ${key ? 'an API key' : 'a registered file content'} (${s.slice(0, 8)}...)`);
    else if (key && text.includes(s.slice(4))) found.push(`${f}: an API key without its mdk_ prefix (mdk_${s.slice(4, 8)}...)`);
  }
}
console.log(`no-secrets: ${secrets.length} secrets, ${logs.length} logs, ${lines} lines`);
if (found.length) {
  console.error(`no-secrets: found in the logs:\n${found.join('\n')}`);
  process.exit(1);
}
