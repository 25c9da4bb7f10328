// memoryd admin: tenant administration from a shell, through a running memoryd's
// /v1/tenants endpoints (src/app/admin_cli.c). Against a live memoryd on the engine ctest
// gives: tenants list (every page, tab-separated), show, limits (one field given keeps the
// other's override), erase (only with --yes), export to a file (whole, or no file at all) and
// import from it into another tenant; the server's refusals with their status and text, exit
// 1; usage errors, exit 2, nothing sent; with --auth keys, an admin key from
// MEMORYD_ADMIN_KEY or --key-file, and the 401/403 texts without one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { runMemoryd, startServer, tempDir } from '../lib/server.mjs';

const admin = (srv, args, env = {}) => runMemoryd(['admin', '--url', srv.url, ...args], { env: { MEMORYD_ADMIN_KEY: '', ...env } });
const create = async (srv, tenant, p, text, headers = {}) => {
  const r = await srv.post({ command: 'create', path: p, file_text: text }, { tenant, headers });
  assert.equal(r.status, 200, r.text);
};

test('tenants list, show, limits, erase, export and import through a live memoryd', async (t) => {
  const srv = await startServer();
  t.after(() => srv.stop());
  await create(srv, 'alice', '/memories/plan.md', '# Plan\n');
  await create(srv, 'bob', '/memories/notes.md', 'Ana prefers short answers.\n');
  let r = await admin(srv, ['tenants', 'list']);
  assert.equal(r.code, 0, r.stderr);
  const rows = r.stdout.trimEnd().split('\n').map((l) => l.split('\t'));
  assert.deepEqual(rows.map((c) => c.slice(0, 4)), [['tenant', 'files', 'bytes', 'versions'], ['alice', '1', '7', '1'], ['bob', '1', '27', '1']]);
  for (const c of rows.slice(1)) assert.match(c[4], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

  r = await admin(srv, ['tenants', 'show', 'alice']);
  assert.deepEqual([r.code, r.stdout, r.stderr], [0, '{"tenant":"alice","bytes":7,"files":1,"limits":{"max_bytes":67108864,"max_files":10000,"sensitive":"reject","expire_after":null},"overrides":{"max_bytes":null,"max_files":null,"sensitive":null,"expire_after":null}}\n', '']);
  r = await admin(srv, ['tenants', 'limits', 'alice', '--max-bytes', '100']);
  assert.deepEqual([r.code, r.stdout], [0, '{"tenant":"alice","bytes":7,"files":1,"limits":{"max_bytes":100,"max_files":10000,"sensitive":"reject","expire_after":null},"overrides":{"max_bytes":100,"max_files":null,"sensitive":null,"expire_after":null}}\n'], r.stderr);
  // --max-files alone keeps the max_bytes override; "default" drops one.
  r = await admin(srv, ['tenants', 'limits', 'alice', '--max-files', '5']);
  assert.deepEqual([r.code, r.stdout], [0, '{"tenant":"alice","bytes":7,"files":1,"limits":{"max_bytes":100,"max_files":5,"sensitive":"reject","expire_after":null},"overrides":{"max_bytes":100,"max_files":5,"sensitive":null,"expire_after":null}}\n'], r.stderr);
  r = await admin(srv, ['tenants', 'limits', 'alice', '--max-bytes', 'default']);
  assert.deepEqual([r.code, r.stdout], [0, '{"tenant":"alice","bytes":7,"files":1,"limits":{"max_bytes":67108864,"max_files":5,"sensitive":"reject","expire_after":null},"overrides":{"max_bytes":null,"max_files":5,"sensitive":null,"expire_after":null}}\n'], r.stderr);
  // The tenant's --sensitive mode and expiry window; the limits kept; "default" drops them.
  r = await admin(srv, ['tenants', 'limits', 'alice', '--sensitive', 'off', '--expire-after', '30d']);
  assert.deepEqual([r.code, r.stdout], [0, '{"tenant":"alice","bytes":7,"files":1,"limits":{"max_bytes":67108864,"max_files":5,"sensitive":"off","expire_after":"30d"},"overrides":{"max_bytes":null,"max_files":5,"sensitive":"off","expire_after":"30d"}}\n'], r.stderr);
  r = await admin(srv, ['tenants', 'limits', 'alice', '--expire-after', 'soon']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /Field `expire_after` must be a duration/);
  r = await admin(srv, ['tenants', 'limits', 'alice', '--sensitive', 'default', '--expire-after', 'default']);
  assert.deepEqual([r.code, r.stdout], [0, '{"tenant":"alice","bytes":7,"files":1,"limits":{"max_bytes":67108864,"max_files":5,"sensitive":"reject","expire_after":null},"overrides":{"max_bytes":null,"max_files":5,"sensitive":null,"expire_after":null}}\n'], r.stderr);

  // export to a file, import it into a new tenant: the same tree.
  const dir = tempDir('memoryd-admin-');
  const tar = path.join(dir, 'bob.tar');
  r = await admin(srv, ['tenants', 'export', 'bob', '--to', tar]);
  assert.deepEqual([r.code, r.stdout, r.stderr], [0, '', '']);
  const listing = spawnSync('tar', ['-tf', tar], { encoding: 'utf8' });
  assert.deepEqual(listing.stdout.trim().split('\n'), ['memories/', 'memories/notes.md']);
  assert.deepEqual(fs.readdirSync(dir), ['bob.tar']);
  r = await admin(srv, ['tenants', 'import', 'carol', '--from', tar]);
  assert.deepEqual([r.code, r.stdout], [0, '{"tenant":"carol","mode":"new","files":1,"bytes":27,"removed":0,"seq":1,"versions_recorded":1}\n'], r.stderr);
  const seen = await srv.post({ command: 'view', path: '/memories/notes.md' }, { tenant: 'carol' });
  assert.match(seen.json.content, /Ana prefers short answers\./);
  // Again: carol has entries now, mode new refuses (409), merge applies.
  r = await admin(srv, ['tenants', 'import', 'carol', '--from', tar]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^memoryd admin: 409: /);
  r = await admin(srv, ['tenants', 'import', 'carol', '--from', tar, '--mode', 'merge']);
  assert.equal(r.code, 0, r.stderr);

  // erase: only with --yes; then the tenant is gone.
  r = await admin(srv, ['tenants', 'erase', 'bob']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^memoryd admin: erasing cannot be undone: add --yes\n/);
  r = await admin(srv, ['tenants', 'erase', 'bob', '--yes']);
  assert.deepEqual([r.code, r.stdout], [0, '{"tenant":"bob","erased":{"entries":2,"versions":1,"changes":1,"idempotency_keys":0,"api_keys":0}}\n'], r.stderr);
  // bob starts empty again; erasing it twice: the server's refusal, exit 1, its status and text.
  r = await admin(srv, ['tenants', 'show', 'bob']);
  assert.deepEqual([r.code, r.stdout], [0, '{"tenant":"bob","bytes":0,"files":0,"limits":{"max_bytes":67108864,"max_files":10000,"sensitive":"reject","expire_after":null},"overrides":{"max_bytes":null,"max_files":null,"sensitive":null,"expire_after":null}}\n']);
  r = await admin(srv, ['tenants', 'erase', 'bob', '--yes']);
  assert.deepEqual([r.code, r.stdout, r.stderr], [1, '', 'memoryd admin: 404: No such tenant: bob\n']);
  // A failed export leaves no file (nor its .part).
  r = await runMemoryd(['admin', '--url', 'http://127.0.0.1:9', 'tenants', 'export', 'alice', '--to', path.join(dir, 'alice.tar')]);
  assert.equal(r.code, 1);
  assert.deepEqual(fs.readdirSync(dir), ['bob.tar']);
  r = await admin(srv, ['tenants', 'list']);
  assert.deepEqual(r.stdout.trimEnd().split('\n').slice(1).map((l) => l.split('\t')[0]), ['alice', 'carol']);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('usage errors: exit 2 with the usage, nothing sent; an unreachable server: exit 1', async () => {
  const cases = [
    [[], 'tenants is needed'],
    [['tenants'], 'an action is needed'],
    [['tenants', 'drop', 'x'], 'unknown action: drop'],
    [['tenants', 'show'], 'a tenant is needed'],
    [['tenants', 'list', 'x'], 'unexpected argument: x'],
    [['tenants', 'show', '../x'], 'not a tenant id (1 to 128 of A-Z a-z 0-9 . _ -): ../x'],
    [['tenants', 'show', 'x', '--yes'], 'not an option of this action: --yes'],
    [['tenants', 'limits', 'x'], '--max-bytes, --max-files, --sensitive or --expire-after is needed'],
    [['tenants', 'limits', 'x', '--max-bytes', '-1'], 'not a limit (a whole number >= 0, or default): -1'],
    [['tenants', 'export', 'x'], '--to FILE is needed'],
    [['tenants', 'import', 'x', '--from', '/dev/null', '--mode', 'all'], '--mode is new, replace or merge: all'],
    [['tenants', 'list', '--bogus'], 'unknown argument: --bogus'],
  ];
  for (const [args, why] of cases) {
    const r = await runMemoryd(['admin', '--url', 'http://127.0.0.1:9', ...args]);
    assert.equal(r.code, 2, args.join(' '));
    assert.ok(r.stderr.startsWith(`memoryd admin: ${why}\n\nUsage: memoryd admin `), `${args.join(' ')}: ${r.stderr}`);
  }
  const help = await runMemoryd(['admin', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: memoryd admin \[--url URL\] \[--key-file FILE\] tenants ACTION/);
  // Port 9 (discard) is closed on loopback: no answer.
  const r = await runMemoryd(['admin', '--url', 'http://127.0.0.1:9', 'tenants', 'list']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^memoryd admin: GET http:\/\/127\.0\.0\.1:9\/v1\/tenants\?limit=1000: .+\n$/);
});

test('with --auth keys: an admin key from MEMORYD_ADMIN_KEY or --key-file; other keys and none refused', async (t) => {
  const srv = await startServer({ args: ['--auth', 'keys'] });
  t.after(() => srv.stop());
  const key = async (scope) => {
    const r = await runMemoryd(['keys', 'create', '--db', srv.dbPath, '--tenant', 'ops', '--scope', scope]);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.split('\n')[0];
  };
  const adminKey = await key('admin');
  const writeKey = await key('write');
  let r = await admin(srv, ['tenants', 'list']);
  assert.deepEqual([r.code, r.stderr], [1, 'memoryd admin: 401: Authentication required: send the header Authorization: Bearer <key> with a memoryd API key\n']);
  r = await admin(srv, ['tenants', 'list'], { MEMORYD_ADMIN_KEY: writeKey });
  assert.deepEqual([r.code, r.stderr], [1, 'memoryd admin: 403: Forbidden: tenant administration (/v1/tenants) needs an API key with the admin scope\n']);
  // A refused export leaves no file.
  const out = tempDir('memoryd-admin-export-');
  r = await admin(srv, ['tenants', 'export', 'ops', '--to', path.join(out, 'ops.tar')], { MEMORYD_ADMIN_KEY: writeKey });
  assert.deepEqual([r.code, r.stderr], [1, 'memoryd admin: 403: Forbidden: tenant administration (/v1/tenants) needs an API key with the admin scope\n']);
  assert.deepEqual(fs.readdirSync(out), []);
  fs.rmSync(out, { recursive: true, force: true });
  r = await admin(srv, ['tenants', 'list'], { MEMORYD_ADMIN_KEY: adminKey });
  assert.deepEqual([r.code, r.stdout, r.stderr], [0, 'tenant\tfiles\tbytes\tversions\tlast_write\n', '']);
  const dir = tempDir('memoryd-admin-key-');
  const file = path.join(dir, 'key');
  fs.writeFileSync(file, `${adminKey}\n`, { mode: 0o600 });
  r = await admin(srv, ['--key-file', file, 'tenants', 'list']);
  assert.deepEqual([r.code, r.stderr], [0, '']);
  r = await admin(srv, ['--key-file', path.join(dir, 'missing'), 'tenants', 'list']);
  assert.deepEqual([r.code, r.stderr], [1, `memoryd admin: ${path.join(dir, 'missing')}: No such file or directory\n`]);
  fs.rmSync(dir, { recursive: true, force: true });
});
