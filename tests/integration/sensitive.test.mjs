// Proves docs/behaviour.md "Secrets" (issue 25, point 2) over real HTTP on loopback, against a
// temp SQLite database and (pg/integration/sensitive) a fresh PostgreSQL database, with the real
// PCRE2 detectors:
//   - --sensitive reject (the default): one secret of each kind (the built-in ones, a payment
//     card with --sensitive-cards, an operator's pattern of --sensitive-patterns) sent through
//     every write path (create, str_replace, insert, an import, MCP's tools/call) is refused
//     with its exact text, naming the kind and the line, never the secret; afterwards none of
//     the secrets is anywhere: the database's files (SQLite: the file and its WAL, raw; its
//     search index is in them) or its tables (PostgreSQL: files, versions, change feed,
//     Idempotency-Key answers), the search, memoryd's log lines; each refusal is counted by kind;
//   - --sensitive redact: the secrets are stored as [REDACTED:kind] and the answer says so;
//     an import's files likewise; none of them stored;
//   - --sensitive off stores the text as sent; a pattern file that does not compile stops
//     memoryd at start.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { dbSql, isPgUri, sqliteFilesHolding } from '../lib/db.mjs';
import { runMemoryd, startServer, tempDir } from '../lib/server.mjs';
import { tarArchive } from '../lib/tar.mjs';

// Synthetic secrets of each kind (none is a live credential), and what the refusal calls them.
const SECRETS = [
  ['private-key', 'a private key', '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAzQ1x0Test\n-----END RSA PRIVATE KEY-----'],
  ['aws-access-key-id', 'an AWS access key ID', 'AKIAZQ3TESTKEYW7XYQ2'],
  ['aws-secret-access-key', 'an AWS secret access key', 'aws_secret_access_key = Zk9qTestSecretKey0123456789abcdefghijklm'],
  ['github-token', 'a GitHub token', 'ghp_TestToken0123456789abcdefghijklmnopq'],
  ['anthropic-api-key', 'an Anthropic API key', 'sk-ant-api03-TestKey0123456789abcdefghijklmnopqrstuvwxyzABCD'],
  ['openai-api-key', 'an OpenAI API key', 'sk-proj-Test0123456789T3BlbkFJabcdefghij0123'],
  ['slack-token', 'a Slack token', 'xoxb-123456789012-TestSlackToken0123'],
  ['google-api-key', 'a Google API key', 'AIzaSyTestKey0123456789abcdefghijklmnop'],
  ['stripe-secret-key', 'a Stripe secret key', 'sk_live_TestStripeKey0123456789abcdef'],
  ['jwt', 'a JSON Web Token', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0LXVzZXIifQ.TestSignature0123456789abcdefgh'],
  ['payment-card', 'a payment card number', '4111 1111 1111 1111'],
  ['internal-token', 'a secret of the operator\'s kind internal-token', 'INT-58213907'],
];
// What must be found nowhere: a part of each secret that is its own (not a prefix any note has).
const needle = (secret) => secret.split('\n')[1] ?? secret.slice(-12);

function patternsFile() {
  const dir = tempDir('memoryd-patterns-');
  const file = path.join(dir, 'patterns.txt');
  fs.writeFileSync(file, '# the operator\'s own kinds\ninternal-token\tINT-[0-9]{8}\n');
  return file;
}

const refusal = (what, line) => `Error: The text contains what looks like ${what} (line ${line}); memory must not hold credentials. Write it again without the secret.`;

async function mcpCall(s, tenant, args) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-tenant-id': tenant };
  const init = await fetch(`${s.url}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) });
  assert.equal(init.status, 200);
  await init.text();
  const session = init.headers.get('mcp-session-id');
  const r = await fetch(`${s.url}/mcp`, { method: 'POST', headers: { ...headers, 'mcp-session-id': session }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'memory', arguments: args } }) });
  return JSON.parse(await r.text());
}

async function importTar(s, tenant, entries) {
  const res = await fetch(`${s.url}/v1/tenants/${tenant}/import?mode=merge`, { method: 'POST', body: tarArchive(entries) });
  return { status: res.status, json: JSON.parse(await res.text()) };
}

// Where a secret could have gone: nowhere, as the database and the log tell.
async function assertNowhere(s, secrets) {
  for (const secret of secrets) {
    const n = needle(secret);
    if (isPgUri(s.dbPath)) {
      const lit = `'${n.replace(/'/g, "''")}'`;
      const out = dbSql(s.dbPath, `SELECT (SELECT count(*) FROM entries WHERE position(convert_to(${lit}, 'UTF8') in content) > 0)`
        + ` + (SELECT count(*) FROM versions WHERE position(convert_to(${lit}, 'UTF8') in content) > 0)`
        + ` + (SELECT count(*) FROM changes WHERE position(${lit} in paths) > 0)`
        + ` + (SELECT count(*) FROM idempotency WHERE position(${lit} in body) > 0)`);
      assert.equal(out.trim(), '0', `${n} is stored`);
    } else {
      assert.deepEqual(sqliteFilesHolding(s.dbPath, n), {}, `${n} is in the database's files`);
    }
    assert.ok(!s.rawStderr.some((l) => l.includes(n)), `${n} is in a log line`);
  }
}

describe('--sensitive', () => {
  test('reject: every kind through every write path is refused with its text; nothing of it is stored or logged', async () => {
    const s = await startServer({ args: ['--sensitive-cards', '--sensitive-patterns', patternsFile()] });
    try {
      await s.post({ command: 'create', path: '/memories/notes.md', file_text: 'placeholder\n' }, { tenant: 'acme' });
      for (const [kind, what, secret] of SECRETS) {
        const text = `a note\n${secret}\n`;
        const line = 2;
        // create, str_replace, insert
        for (const cmd of [
          { command: 'create', path: `/memories/${kind}.md`, file_text: text },
          { command: 'str_replace', path: '/memories/notes.md', old_str: 'placeholder', new_str: text },
          { command: 'insert', path: '/memories/notes.md', insert_line: 1, insert_text: text },
        ]) {
          const r = await s.post(cmd, { tenant: 'acme', headers: { 'idempotency-key': `${kind}-${cmd.command}` } });
          assert.equal(r.status, 422, `${kind} ${cmd.command}: ${r.text}`);
          assert.deepEqual(r.json, { type: 'tool_result', content: refusal(what, line), is_error: true });
        }
        // an import
        const imp = await importTar(s, 'acme', [{ name: 'memories/ok.md', data: 'fine\n' }, { name: `memories/${kind}.md`, data: text }]);
        assert.equal(imp.status, 422, JSON.stringify(imp.json));
        assert.deepEqual(imp.json, { error: `Nothing was imported: file memories/${kind}.md contains what looks like ${what} (line ${line}); memory must not hold credentials` });
        // MCP
        const m = await mcpCall(s, 'acme', { command: 'create', path: `/memories/mcp-${kind}.md`, file_text: text });
        assert.deepEqual(m.result, { content: [{ type: 'text', text: refusal(what, line) }], isError: true });
      }
      // Nothing was written: the file as it was, no other file.
      const v = await s.post({ command: 'view', path: '/memories' }, { tenant: 'acme' });
      assert.match(v.json.content, /\n12B\t\/memories\n12B\t\/memories\/notes\.md$/);
      await assertNowhere(s, SECRETS.map((x) => x[2]));
      const hits = await s.request('GET', '/v1/search?q=TestKey0123456789abcdefghijklmnop', { headers: { 'x-tenant-id': 'acme' } });
      assert.deepEqual(hits.json.hits, []);
      const metrics = await (await fetch(`${s.url}/metrics`)).text();
      for (const [kind] of SECRETS) {
        assert.match(metrics, new RegExp(`^memoryd_sensitive_total\\{kind="${kind}",action="rejected"\\} 5$`, 'm'), kind);
      }
    } finally {
      await s.stop();
      fs.rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test('redact: stored as [REDACTED:kind], the answer says so; an import likewise', async () => {
    const s = await startServer({ args: ['--sensitive', 'redact'] });
    try {
      const aws = SECRETS[1][2];
      const gh = SECRETS[3][2];
      const r = await s.post({ command: 'create', path: '/memories/keys.md', file_text: `keys\nid ${aws}\ntoken ${gh}\n` }, { tenant: 'acme' });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.content, 'File created successfully at: /memories/keys.md (memoryd replaced what looks like an AWS access key ID on line 2 with [REDACTED:aws-access-key-id], and 1 more secrets likewise: memory must not hold credentials)');
      const v = await s.post({ command: 'view', path: '/memories/keys.md' }, { tenant: 'acme' });
      assert.equal(v.json.content, 'Here\'s the content of /memories/keys.md with line numbers:\n     1\tkeys\n     2\tid [REDACTED:aws-access-key-id]\n     3\ttoken [REDACTED:github-token]\n     4\t');
      const one = await s.post({ command: 'str_replace', path: '/memories/keys.md', old_str: 'keys', new_str: `jwt ${SECRETS[9][2]}` }, { tenant: 'acme' });
      assert.match(one.json.content, /^The memory file has been edited\. Here is the snippet showing the change \(with line numbers\):\n     1\tjwt \[REDACTED:jwt\]\n/);
      assert.match(one.json.content, / \(memoryd replaced what looks like a JSON Web Token on line 1 with \[REDACTED:jwt\]: memory must not hold credentials\)$/);
      const imp = await importTar(s, 'acme', [{ name: 'memories/imported.md', data: `stripe ${SECRETS[8][2]}\n` }]);
      assert.equal(imp.status, 200, JSON.stringify(imp.json));
      const iv = await s.post({ command: 'view', path: '/memories/imported.md' }, { tenant: 'acme' });
      assert.equal(iv.json.content, 'Here\'s the content of /memories/imported.md with line numbers:\n     1\tstripe [REDACTED:stripe-secret-key]\n     2\t');
      await assertNowhere(s, [aws, gh, SECRETS[9][2], SECRETS[8][2]]);
      const metrics = await (await fetch(`${s.url}/metrics`)).text();
      assert.match(metrics, /^memoryd_sensitive_total\{kind="aws-access-key-id",action="redacted"\} 1$/m);
      assert.match(metrics, /^memoryd_sensitive_total\{kind="stripe-secret-key",action="redacted"\} 1$/m);
    } finally {
      await s.stop();
      fs.rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test('off stores the text as sent; a pattern that does not compile stops memoryd at start', async () => {
    const s = await startServer({ args: ['--sensitive', 'off'] });
    try {
      const r = await s.post({ command: 'create', path: '/memories/k.md', file_text: `${SECRETS[1][2]}\n` }, { tenant: 'acme' });
      assert.equal(r.json.content, 'File created successfully at: /memories/k.md');
    } finally {
      await s.stop();
      fs.rmSync(s.dir, { recursive: true, force: true });
    }
    const dir = tempDir('memoryd-patterns-');
    const bad = path.join(dir, 'bad.txt');
    fs.writeFileSync(bad, 'broken\tINT-[0-9\n');
    const r = await runMemoryd(['--port', '0', '--db', path.join(dir, 'm.db'), '--sensitive-patterns', bad]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /cannot start: --sensitive.*the pattern of broken does not compile at offset \d+: missing terminating \]/);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
