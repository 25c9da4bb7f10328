// The package as a harness installs it: `npm pack` of this package (built by `npm test` before
// it), installed into a fresh npm project in a temporary directory together with
// @anthropic-ai/sdk from the registry, of the version this run tests (the one in this
// package's node_modules: scripts/test.sh runs the suite once per SDK version), TypeScript
// and @types/node. Checks: the tarball's files (dist, src, README, LICENSE = the repository's
// MIT text; no tests) and package.json (MIT, not private, the peer range); npm installs it
// with no peer conflict and ONE copy of the SDK (`npm ls`); test/types/consumer.ts
// type-checks there against the installed declarations; and test/pack/round-trip.mjs, run
// there, drives the SDK's tool runner (scripted Messages API, live memoryd) through the memory
// tool and memory_search, and an error from the client is `instanceof ToolError` of the
// project's SDK.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startServer } from '../../../tests/lib/server.mjs';
import { startFakeAnthropic, toolResultsOf } from './lib/fake-anthropic.mjs';

const run = promisify(execFile);
const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const repoDir = path.resolve(pkgDir, '../..');
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
const SDK_VERSION = JSON.parse(fs.readFileSync(path.join(pkgDir, 'node_modules/@anthropic-ai/sdk/package.json'), 'utf8')).version;
const NPM = ['--no-audit', '--no-fund', '--loglevel=error'];

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memoryd-pack-'));
const cleanup = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
  fs.rmSync(work, { recursive: true, force: true });
});

test(`npm pack, installed into a fresh project with @anthropic-ai/sdk ${SDK_VERSION}: one SDK copy, a tool-runner round trip`, async (t) => {
  // The tarball (dist was built by `npm test`; --ignore-scripts: prepack would build again).
  const { stdout: packed } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work, ...NPM], { cwd: pkgDir });
  const [info] = JSON.parse(packed);
  const tarball = path.join(work, info.filename);
  const files = info.files.map((f) => f.path).sort();
  const sources = fs.readdirSync(path.join(pkgDir, 'src')).filter((f) => f.endsWith('.ts')).sort();
  for (const must of ['LICENSE', 'README.md', 'package.json', ...sources.flatMap((s) => [`src/${s}`, `dist/${s.replace(/\.ts$/, '.js')}`, `dist/${s.replace(/\.ts$/, '.d.ts')}`])]) {
    assert.ok(files.includes(must), `the tarball has ${must}`);
  }
  assert.deepEqual(files.filter((f) => !/^(LICENSE|README\.md|package\.json|src\/[\w-]+\.ts|dist\/[\w-]+\.(js|d\.ts)(\.map)?)$/.test(f)), [], 'nothing else');

  await run('tar', ['-xzf', tarball, '-C', work]);
  assert.equal(fs.readFileSync(path.join(work, 'package/LICENSE'), 'utf8'), fs.readFileSync(path.join(repoDir, 'LICENSE'), 'utf8'), 'LICENSE is the repository\'s');
  const manifest = JSON.parse(fs.readFileSync(path.join(work, 'package/package.json'), 'utf8'));
  assert.deepEqual(
    { name: manifest.name, license: manifest.license, private: manifest.private, peer: manifest.peerDependencies, deps: manifest.dependencies },
    { name: '@memoryd/client', license: 'MIT', private: undefined, peer: { '@anthropic-ai/sdk': '>=1.10 <2' }, deps: undefined },
  );

  // A fresh project: the tarball, the SDK of this run, and what the type check needs.
  const project = path.join(work, 'project');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'harness', version: '1.0.0', private: true, type: 'module' }, null, 2));
  await run(
    'npm',
    [
      'install',
      '--prefer-offline',
      ...NPM,
      tarball,
      `@anthropic-ai/sdk@${SDK_VERSION}`,
      `typescript@${pkg.devDependencies.typescript}`,
      `@types/node@${pkg.devDependencies['@types/node']}`,
    ],
    { cwd: project },
  );
  // One copy of the SDK, the project's, and no peer conflict (npm ls exits 0).
  const { stdout: copies } = await run('npm', ['ls', '@anthropic-ai/sdk', '--all', '--parseable', ...NPM], { cwd: project });
  assert.deepEqual([...new Set(copies.trim().split('\n'))], [path.join(project, 'node_modules/@anthropic-ai/sdk')]);
  const { stdout: tree } = await run('npm', ['ls', '@anthropic-ai/sdk', '--all', '--json', ...NPM], { cwd: project });
  const deps = JSON.parse(tree).dependencies;
  assert.equal(deps['@anthropic-ai/sdk'].version, SDK_VERSION);
  assert.equal(deps['@memoryd/client'].version, pkg.version);
  assert.equal(fs.existsSync(path.join(project, 'node_modules/@memoryd/client/node_modules')), false, 'the client has no node_modules of its own');
  t.diagnostic(`installed @memoryd/client ${pkg.version} with @anthropic-ai/sdk ${SDK_VERSION}`);

  // The public types, as a harness in TypeScript uses them, against the installed package.
  fs.copyFileSync(path.join(pkgDir, 'test/types/consumer.ts'), path.join(project, 'consumer.ts'));
  const compilerOptions = JSON.parse(fs.readFileSync(path.join(pkgDir, 'tsconfig.json'), 'utf8')).compilerOptions;
  fs.writeFileSync(
    path.join(project, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { ...compilerOptions, noEmit: true, rootDir: '.', outDir: undefined, declaration: false, declarationMap: false, sourceMap: false }, files: ['consumer.ts'] }),
  );
  await run(path.join(project, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json'], { cwd: project }).catch((e) => {
    assert.fail(`consumer.ts does not type-check against the installed package:\n${e.stdout}${e.stderr}`);
  });

  // The round trip, run inside the project.
  const srv = await startServer();
  cleanup.push(() => srv.stop());
  const NOTE = '- the release ships on Friday\n';
  const api = await startFakeAnthropic([
    [{ type: 'tool_use', name: 'memory', input: { command: 'view', path: '/memories/release.md' } }],
    [{ type: 'tool_use', name: 'memory', input: { command: 'create', path: '/memories/release.md', file_text: NOTE } }],
    [{ type: 'tool_use', name: 'memory_search', input: { q: 'ships friday' } }],
    [{ type: 'text', text: 'Noted.' }],
  ]);
  cleanup.push(() => api.close());
  fs.copyFileSync(path.join(pkgDir, 'test/pack/round-trip.mjs'), path.join(project, 'round-trip.mjs'));
  const { stdout } = await run(process.execPath, ['round-trip.mjs'], { cwd: project, env: { ...process.env, MEMORYD_URL: srv.url, ANTHROPIC_BASE_URL: api.url } });
  const report = JSON.parse(stdout);

  assert.deepEqual(report.final, [{ type: 'text', text: 'Noted.' }]);
  // memoryd's text for the missing file, without the "Error: " a plain Error would get: the
  // runner of the project's SDK took the client's ToolError for its own.
  assert.deepEqual(toolResultsOf(api.requests[1]), [
    { type: 'tool_result', tool_use_id: 'toolu_0_0', content: 'The path /memories/release.md does not exist. Please provide a valid path.', is_error: true },
  ]);
  assert.deepEqual(toolResultsOf(api.requests[2]), [{ type: 'tool_result', tool_use_id: 'toolu_1_0', content: 'File created successfully at: /memories/release.md' }]);
  assert.deepEqual(toolResultsOf(api.requests[3]), [
    { type: 'tool_result', tool_use_id: 'toolu_2_0', content: 'Files in /memories that match ships friday (best first, 1 to 1):\n/memories/release.md\n     1\t- the release ships on Friday\n' },
  ]);
  assert.deepEqual(report.error, {
    instanceofToolError: true,
    instanceofMemorydError: true,
    kind: 'rejected',
    status: 404,
    content: 'Error: Version 999999 is not kept (there is no such version of this tenant, or retention has pruned it)',
  });
});
