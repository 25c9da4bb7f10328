// Proves docs/behaviour.md 18.1 and 18.2 (secrets already stored; a tenant's own --sensitive) over
// real HTTP on loopback, against a temp SQLite database and (pg/integration/secrets-scan) a fresh
// PostgreSQL database, with the real PCRE2 detectors and the real `memoryd scan` binary run
// against the same database while memoryd serves it:
//   - secrets planted with --sensitive off, in live files and in older versions (an edit and a
//     delete record the text they replace), are found exactly by GET /v1/tenants/{t}/secrets
//     (exact JSON, paged by its cursor to the same findings) and by `memoryd scan` (exact JSON
//     lines, summary, exit status 1; --tenant; --sensitive-cards and --sensitive-patterns as the
//     server's); after the live files are edited and every version found is redacted
//     (POST /v1/redact), both find nothing (exit status 0); a bad cursor, a bad --tenant,
//     a missing --db are refused;
//   - PUT /v1/tenants/{t}/limits "sensitive": a tenant set to off stores a secret while another
//     tenant still gets the refusal (writes and imports); redact stores [REDACTED:kind]; a PUT
//     without the field leaves it; null clears it back to the server's mode; GET
//     /v1/tenants/{t} shows it; bad values are refused with their exact text, nothing changed;
//   - with --auth keys, a key without the admin scope gets 403 on the endpoint, an admin key 200.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createKey, runMemoryd, tempDir, withServer } from '../lib/server.mjs';
import { tarArchive } from '../lib/tar.mjs';

// Synthetic secrets (none is a live credential).
const AWS = 'AKIAZQ3TESTKEYW7XYQ2';
const GH = 'ghp_TestToken0123456789abcdefghijklmnopq';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0LXVzZXIifQ.TestSignature0123456789abcdefgh';
const CARD = '4111 1111 1111 1111';
const OWN = 'INT-58213907';

function patternsFile() {
  const file = path.join(tempDir('memoryd-patterns-'), 'patterns.txt');
  fs.writeFileSync(file, 'internal-token\tINT-[0-9]{8}\n');
  return file;
}

const refusal = (what, line) => `Error: The text contains what looks like ${what} (line ${line}); memory must not hold credentials. Write it again without the secret.`;

async function write(s, tenant, cmd) {
  const r = await s.post(cmd, { tenant });
  return r.json;
}

async function ok(s, tenant, cmd) {
  const r = await write(s, tenant, cmd);
  assert.equal(r.is_error, false, JSON.stringify(r));
  return r;
}

const secrets = (s, tenant, query = '') => s.request('GET', `/v1/tenants/${tenant}/secrets${query}`);

test('secrets already stored: found in files and versions by the endpoint and memoryd scan, then gone once edited and redacted', async () => {
  const patterns = patternsFile();
  const flags = ['--sensitive-cards', '--sensitive-patterns', patterns];
  await withServer({ args: ['--sensitive', 'off', ...flags] }, async (s) => {
    // alice: v1 create (no content), v2 the edit that took the key out (holds it, line 2),
    // v3..v5 creates. bob: v1 create, v2 the delete (holds the token). carol: nothing secret.
    await ok(s, 'alice', { command: 'create', path: '/memories/keys.txt', file_text: `note\n${AWS}\n` });
    await ok(s, 'alice', { command: 'str_replace', path: '/memories/keys.txt', old_str: AWS, new_str: 'gone' });
    await ok(s, 'alice', { command: 'create', path: '/memories/deep/jwt.md', file_text: `a\nb\ntoken ${JWT}\n` });
    await ok(s, 'alice', { command: 'create', path: '/memories/plain.txt', file_text: 'nothing here\n' });
    await ok(s, 'alice', { command: 'create', path: '/memories/card.txt', file_text: `card ${CARD}\nour ${OWN}\n` });
    await ok(s, 'bob', { command: 'create', path: '/memories/x.txt', file_text: `${GH}\n` });
    await ok(s, 'bob', { command: 'delete', path: '/memories/x.txt' });
    await ok(s, 'carol', { command: 'create', path: '/memories/c.txt', file_text: 'plain\n' });

    const aliceFindings = [
      { path: '/memories/card.txt', version: null, kind: 'payment-card', line: 1 },
      { path: '/memories/card.txt', version: null, kind: 'internal-token', line: 2 },
      { path: '/memories/deep/jwt.md', version: null, kind: 'jwt', line: 3 },
      { path: '/memories/keys.txt', version: 2, kind: 'aws-access-key-id', line: 2 },
    ];
    let r = await secrets(s, 'alice');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text, JSON.stringify({ tenant: 'alice', findings: aliceFindings, files_scanned: 4, versions_scanned: 1, next_cursor: null }));
    assert.ok(![AWS, JWT, CARD, OWN, 'note', 'gone'].some((x) => r.text.includes(x)), 'no content in the answer');
    r = await secrets(s, 'bob');
    assert.deepEqual(r.json, { tenant: 'bob', findings: [{ path: '/memories/x.txt', version: 2, kind: 'github-token', line: 1 }], files_scanned: 0, versions_scanned: 1, next_cursor: null });
    r = await secrets(s, 'nobody');
    assert.deepEqual(r.json, { tenant: 'nobody', findings: [], files_scanned: 0, versions_scanned: 0, next_cursor: null });

    // Pages of 2 entries (directories count) and versions: the same findings, in order.
    r = await secrets(s, 'alice', '?limit=2');
    assert.deepEqual(r.json, { tenant: 'alice', findings: aliceFindings.slice(0, 2), files_scanned: 1, versions_scanned: 0, next_cursor: 'f:/memories/card.txt' });
    const paged = [...r.json.findings];
    let pages = 1, files = r.json.files_scanned, versions = 0;
    while (r.json.next_cursor) {
      r = await secrets(s, 'alice', `?limit=2&cursor=${encodeURIComponent(r.json.next_cursor)}`);
      assert.equal(r.status, 200, r.text);
      paged.push(...r.json.findings);
      files += r.json.files_scanned;
      versions += r.json.versions_scanned;
      pages++;
    }
    assert.deepEqual([paged, files, versions, pages], [aliceFindings, 4, 1, 4]);

    const CURSOR = 'Parameter `cursor` must be the next_cursor of a page (f: and a path, or v: and a version)';
    for (const c of ['x', 'v:', 'v:-1', 'v:1x', 'f:', 'f:/etc', 'f:/memories/../x', 'f:/memories/a/']) {
      r = await secrets(s, 'alice', `?cursor=${encodeURIComponent(c)}`);
      assert.deepEqual([r.status, r.json], [400, { error: CURSOR }], c);
    }
    r = await secrets(s, 'alice', '?limit=0');
    assert.deepEqual([r.status, r.json], [400, { error: 'Parameter `limit` must be an integer from 1 to 10000' }]);

    // memoryd scan, on the same database while memoryd serves it.
    const line = (tenant, f) => JSON.stringify({ tenant, ...f });
    let c = await runMemoryd(['scan', '--db', s.dbPath, ...flags]);
    assert.deepEqual([c.code, c.stdout, c.stderr], [1, [
      ...aliceFindings.map((f) => line('alice', f)),
      line('bob', { path: '/memories/x.txt', version: 2, kind: 'github-token', line: 1 }),
      '{"tenants":3,"files_scanned":5,"versions_scanned":2,"findings":5}', ''].join('\n'), '']);
    c = await runMemoryd(['scan', '--db', s.dbPath, '--tenant', 'alice']);
    assert.deepEqual([c.code, c.stdout], [1, [
      line('alice', aliceFindings[2]), line('alice', aliceFindings[3]),
      '{"tenants":1,"files_scanned":4,"versions_scanned":1,"findings":2}', ''].join('\n')], c.stderr);
    c = await runMemoryd(['scan', '--db', s.dbPath, '--tenant', 'carol']);
    assert.deepEqual([c.code, c.stdout, c.stderr], [0, '{"tenants":1,"files_scanned":1,"versions_scanned":0,"findings":0}\n', '']);
    c = await runMemoryd(['scan', '--db', s.dbPath, '--tenant', 'no/such']);
    assert.equal(c.code, 2);
    assert.match(c.stderr, /^memoryd scan: --tenant must be 1\.\.128 of \[A-Za-z0-9._-\]: no\/such\n/);
    c = await runMemoryd(['scan'], { env: { MEMORYD_DB: '' } });
    assert.equal(c.code, 2);
    assert.match(c.stderr, /^memoryd scan: --db \(or MEMORYD_DB\) is needed\n/);
    c = await runMemoryd(['scan', '--db', s.dbPath, '--sensitive-patterns', path.join(s.dir, 'missing.txt')]);
    assert.deepEqual([c.code, c.stdout], [2, '']);
    assert.match(c.stderr, /^memoryd scan: cannot read --sensitive-patterns .*missing\.txt: No such file or directory\n$/);

    // The operator edits the live files (each edit records the text it replaced as a version)...
    await ok(s, 'alice', { command: 'str_replace', path: '/memories/card.txt', old_str: `card ${CARD}\nour ${OWN}\n`, new_str: 'card on file\n' });
    await ok(s, 'alice', { command: 'delete', path: '/memories/deep/jwt.md' });
    r = await secrets(s, 'alice');
    assert.deepEqual(r.json.findings, [
      { path: '/memories/keys.txt', version: 2, kind: 'aws-access-key-id', line: 2 },
      { path: '/memories/card.txt', version: 6, kind: 'payment-card', line: 1 },
      { path: '/memories/card.txt', version: 6, kind: 'internal-token', line: 2 },
      { path: '/memories/deep/jwt.md', version: 7, kind: 'jwt', line: 3 },
    ]);
    // ... and redacts every version found.
    for (const [tenant, found] of [['alice', r.json.findings], ['bob', [{ path: '/memories/x.txt', version: 2 }]]]) {
      for (const f of found) {
        const x = await s.request('POST', '/v1/redact', { body: JSON.stringify({ path: f.path, version: f.version }), headers: { 'content-type': 'application/json', 'x-tenant-id': tenant } });
        assert.equal(x.status, 200, x.text);
      }
    }
    r = await secrets(s, 'alice');
    assert.deepEqual(r.json, { tenant: 'alice', findings: [], files_scanned: 3, versions_scanned: 0, next_cursor: null });
    c = await runMemoryd(['scan', '--db', s.dbPath, ...flags]);
    assert.deepEqual([c.code, c.stdout, c.stderr], [0, '{"tenants":3,"files_scanned":4,"versions_scanned":0,"findings":0}\n', '']);
  });
});

test('a tenant\'s own --sensitive: off, redact, cleared, left as it is; bad values refused, nothing changed', async () => {
  await withServer({}, async (s) => {
    const limits = (tenant, body) => s.request('PUT', `/v1/tenants/${tenant}/limits`, { body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    const doc = (tenant, bytes, files, own, maxBytes = null) => ({
      tenant, bytes, files,
      limits: { max_bytes: maxBytes ?? 67108864, max_files: 10000, sensitive: own ?? 'reject', expire_after: null },
      overrides: { max_bytes: maxBytes, max_files: null, sensitive: own, expire_after: null },
    });
    const create = (tenant, p, text) => write(s, tenant, { command: 'create', path: p, file_text: text });

    let r = await s.request('GET', '/v1/tenants/alice');
    assert.deepEqual(r.json, doc('alice', 0, 0, null));
    r = await limits('alice', { max_bytes: null, max_files: null, sensitive: 'off' });
    assert.deepEqual([r.status, r.json], [200, doc('alice', 0, 0, 'off')]);
    assert.deepEqual((await s.request('GET', '/v1/tenants/alice')).json, doc('alice', 0, 0, 'off'));

    // alice stores the key; bob (the server's reject) is refused.
    r = await create('alice', '/memories/k.txt', `key ${AWS}\n`);
    assert.deepEqual(r, { type: 'tool_result', content: 'File created successfully at: /memories/k.txt', is_error: false });
    r = await create('bob', '/memories/k.txt', `key ${AWS}\n`);
    assert.deepEqual(r, { type: 'tool_result', content: refusal('an AWS access key ID', 1), is_error: true });
    // Imports follow the tenant's mode too.
    const tar = tarArchive([{ name: 'memories/i.txt', data: `x\n${GH}\n` }]);
    r = await s.request('POST', '/v1/tenants/alice/import?mode=merge', { body: tar });
    assert.equal(r.status, 200, r.text);
    r = await s.request('POST', '/v1/tenants/bob/import?mode=merge', { body: tar });
    assert.deepEqual([r.status, r.json], [422, { error: 'Nothing was imported: file memories/i.txt contains what looks like a GitHub token (line 2); memory must not hold credentials' }]);

    // bob: redact.
    r = await limits('bob', { max_bytes: null, max_files: null, sensitive: 'redact' });
    assert.deepEqual([r.status, r.json], [200, doc('bob', 0, 0, 'redact')]);
    r = await create('bob', '/memories/k.txt', `key ${AWS}\n`);
    assert.deepEqual(r, { type: 'tool_result', content: 'File created successfully at: /memories/k.txt (memoryd replaced what looks like an AWS access key ID on line 1 with [REDACTED:aws-access-key-id]: memory must not hold credentials)', is_error: false });
    r = await write(s, 'bob', { command: 'view', path: '/memories/k.txt' });
    assert.equal(r.content, 'Here\'s the content of /memories/k.txt with line numbers:\n     1\tkey [REDACTED:aws-access-key-id]\n     2\t');
    // A PUT without the field leaves it as it is.
    r = await limits('bob', { max_bytes: 1000, max_files: null });
    assert.deepEqual([r.status, r.json], [200, doc('bob', 33, 1, 'redact', 1000)]);

    // Bad values: refused, nothing changed.
    const BAD = 'Field `sensitive` must be "reject", "redact", "off" or null (the server\'s --sensitive)';
    for (const v of ['REJECT', 'on', '', 1, true, {}, []]) {
      r = await limits('bob', { max_bytes: null, max_files: null, sensitive: v });
      assert.deepEqual([r.status, r.json], [400, { error: BAD }], JSON.stringify(v));
    }
    r = await limits('bob', { max_bytes: null, max_files: null, sensitiv: 'off' });
    assert.deepEqual([r.status, r.json], [400, { error: 'Unknown field `sensitiv`: only max_bytes, max_files, sensitive and expire_after are taken' }]);
    r = await limits('bob', '[]');
    assert.deepEqual([r.status, r.json], [400, { error: 'The body must be a JSON object: {"max_bytes": N|null, "max_files": N|null[, "sensitive": "reject"|"redact"|"off"|null][, "expire_after": "90d"|"off"|null]}' }]);
    assert.deepEqual((await s.request('GET', '/v1/tenants/bob')).json, doc('bob', 33, 1, 'redact', 1000));

    // null: back to the server's mode (reject), at once.
    r = await limits('alice', { max_bytes: null, max_files: null, sensitive: null });
    assert.deepEqual([r.status, r.json.overrides, r.json.limits.sensitive], [200, { max_bytes: null, max_files: null, sensitive: null, expire_after: null }, 'reject']);
    r = await create('alice', '/memories/k2.txt', `key ${AWS}\n`);
    assert.deepEqual(r, { type: 'tool_result', content: refusal('an AWS access key ID', 1), is_error: true });
    // A tenant may be stricter than the server: reject under --sensitive off is the next test's.
  });
});

test('a tenant set to reject under --sensitive off is refused; the endpoint needs the admin scope', async () => {
  await withServer({ args: ['--sensitive', 'off', '--auth', 'keys'] }, async (s) => {
    const admin = await createKey(s, 'ops', 'admin');
    const writer = await createKey(s, 'alice', 'write');
    const auth = (key) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
    let r = await s.request('PUT', '/v1/tenants/alice/limits', { body: JSON.stringify({ max_bytes: null, max_files: null, sensitive: 'reject' }), headers: auth(admin) });
    assert.equal(r.status, 200, r.text);
    r = await s.request('POST', '/memory', { body: JSON.stringify({ command: 'create', path: '/memories/k.txt', file_text: `key ${AWS}\n` }), headers: auth(writer) });
    assert.deepEqual([r.status, r.json], [422, { type: 'tool_result', content: refusal('an AWS access key ID', 1), is_error: true }]);
    r = await s.request('GET', '/v1/tenants/alice/secrets', { headers: auth(writer) });
    assert.deepEqual([r.status, r.json], [403, { error: 'Forbidden: tenant administration (/v1/tenants) needs an API key with the admin scope' }]);
    r = await s.request('GET', '/v1/tenants/alice/secrets', { headers: auth(admin) });
    assert.deepEqual([r.status, r.json], [200, { tenant: 'alice', findings: [], files_scanned: 0, versions_scanned: 0, next_cursor: null }]);
  });
});
