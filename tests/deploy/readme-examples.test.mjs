// The examples that go through the authenticating proxy, run verbatim against a real nginx
// (the committed docker/nginx.conf, test copy as in tests/deploy/lib/nginx.mjs) in front of a
// real memoryd as compose.yaml runs it (--trusted-proxies <nginx's address>
// --require-tenant), on an empty database per document:
//   - docs/deploy.md, sections "Through the proxy" and "From code, through the proxy", in
//     order: every ```console block (each "$ " line a command, the lines up to the next its
//     exact output) and every ```python block (run with python3; its exact output is the
//     ```text block after it);
//   - docker/README.md: every ```console block; and its ```nginx block, the three lines to
//     change for a host's nginx, applied to nginx.conf: the result passes `nginx -t`.
// The only change made to an example: "localhost:8080" points at the test's nginx.
// (The examples of README.md, docs/api.md and docs/tenants.md go to memoryd directly:
// tests/integration/readme.test.mjs.)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { startServer } from '../lib/server.mjs';
import { codeBlocks, consoleExamples, pointAt, runConsole } from '../lib/examples.mjs';
import { REPO, memorydLogSync, memorydRequests, readDocker, run, substitute } from './lib/deploy.mjs';
import { nginxCheck, nginxTestPaths, startNginx } from './lib/nginx.mjs';
import { tempDir } from '../lib/server.mjs';

const PROXIED_SECTIONS = ['Through the proxy', 'From code, through the proxy'];

// memoryd behind nginx on a fresh database; `fn({ port, md, px })` runs the examples.
async function behindProxy(fn) {
  const md = await startServer({ args: ['--trusted-proxies', '127.0.0.2', '--require-tenant'] });
  let px;
  try {
    px = await startNginx({ upstreamPort: md.port });
    await fn({ port: px.port, md, px });
  } finally {
    if (px) await px.stop();
    await md.stop();
    fs.rmSync(md.dir, { recursive: true, force: true });
  }
}

async function runPython(block, expected, port) {
  const env = { ...process.env };
  delete env.MEMORYD_KEY; // the example's default: the example key of team-a
  const r = await run('python3', ['-'], { input: pointAt(block.text, port), env });
  assert.deepEqual([r.code, r.stderr], [0, ''], `python example at line ${block.line}`);
  assert.equal(r.stdout, expected.text, `output of the python example at line ${block.line}`);
}

test('docs/deploy.md: the examples of "Through the proxy" and "From code, through the proxy" through nginx', async () => {
  const blocks = codeBlocks(fs.readFileSync(path.join(REPO, 'docs/deploy.md'), 'utf8'))
    .filter((b) => PROXIED_SECTIONS.includes(b.section));
  const langs = blocks.map((b) => `${b.section}: ${b.lang}`);
  assert.deepEqual([...new Set(langs)], ['Through the proxy: console', 'From code, through the proxy: console', 'From code, through the proxy: python', 'From code, through the proxy: text']);
  await behindProxy(async ({ port, md }) => {
    for (const [i, block] of blocks.entries()) {
      if (block.lang === 'console') await runConsole(consoleExamples([block]), port);
      else if (block.lang === 'python') {
        assert.equal(blocks[i + 1]?.lang, 'text', `the python example at line ${block.line} is followed by its output`);
        await runPython(block, blocks[i + 1], port);
      }
      // text: an output.
    }
    // Every request memoryd answered came through nginx, as the key's tenant.
    await memorydLogSync(md);
    assert.deepEqual(memorydRequests(md).map((l) => [l.tenant, l.command, l.status]), [
      ['team-a', 'create', 200],
      ['team-b', 'view', 404],
      ['team-a', 'view', 200],
      ['team-a', 'create', 200],
      ['team-a', 'view', 200],
      ['team-a', 'str_replace', 409],
    ]);
  });
});

const dockerReadme = () => codeBlocks(readDocker('README.md'));

test('docker/README.md: its console examples through nginx', async () => {
  const examples = consoleExamples(dockerReadme());
  assert.deepEqual(examples.map((e) => e.command.split(' ')[2]), ['localhost:8080/memory', 'localhost:8080/healthz']);
  await behindProxy(async ({ port, md }) => {
    await runConsole(examples, port);
    await memorydLogSync(md);
    assert.deepEqual(memorydRequests(md).map((l) => [l.tenant, l.command, l.status]), [['team-a', 'view', 200]]);
  });
});

test('docker/README.md: nginx.conf with the three lines changed for a host passes nginx -t', async () => {
  const blocks = dockerReadme().filter((b) => b.lang === 'nginx');
  assert.equal(blocks.length, 1);
  const edits = blocks[0].text.trimEnd().split('\n').map((line) => {
    const m = /^( +)(\S.*;) +# was: (.*;)$/.exec(line);
    assert.ok(m, `not "<line>  # was: <line>": ${JSON.stringify(line)}`);
    return [`\n${m[1]}${m[3]}\n`, `\n${m[1]}${m[2]}\n`];
  });
  assert.deepEqual(edits.map(([, to]) => to.trim()), ['listen 80;', 'server 127.0.0.1:8080;', 'proxy_bind 127.0.0.2;']);
  const dir = tempDir('memoryd-nginx-host-');
  try {
    // substitute() throws unless each "was" line occurs exactly once in nginx.conf.
    fs.writeFileSync(path.join(dir, 'nginx.conf'), nginxTestPaths(substitute(readDocker('nginx.conf'), edits), dir));
    fs.writeFileSync(path.join(dir, 'tenants.map'), readDocker('tenants.map'));
    const r = await nginxCheck(path.join(dir, 'nginx.conf'), dir);
    assert.deepEqual([r.code, r.stderr.replaceAll(dir, '<dir>')], [0,
      'nginx: the configuration file <dir>/nginx.conf syntax is ok\nnginx: configuration file <dir>/nginx.conf test is successful\n']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
