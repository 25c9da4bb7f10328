// The version comes from one place, CMakeLists.txt's project(memoryd VERSION x.y.z):
// `memoryd --version`, openapi.yaml's info.version and its memoryd_build_info examples, and
// CHANGELOG.md's newest heading say the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runMemoryd } from '../lib/server.mjs';
import { ROOT } from '../lib/vocabulary.mjs';

const read = (f) => fs.readFileSync(path.join(ROOT, f), 'utf8');
const VERSION = /^project\(memoryd VERSION (\d+\.\d+\.\d+) LANGUAGES C\)$/m.exec(read('CMakeLists.txt'))?.[1];

test('memoryd --version, openapi.yaml and CHANGELOG.md carry the version of CMakeLists.txt', async () => {
  assert.ok(VERSION, 'no project(memoryd VERSION ...) in CMakeLists.txt');
  const r = await runMemoryd(['--version']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, new RegExp(`^memoryd ${VERSION.replaceAll('.', '\\.')} \\(`));
  const api = read('openapi.yaml');
  assert.equal(/^info:\n(?: .*\n)*? {2}version: (\S+)$/m.exec(api)?.[1], VERSION);
  const infos = [...api.matchAll(/memoryd_build_info\{version="([^"]+)"\}/g)].map((m) => m[1]);
  assert.ok(infos.length >= 1);
  assert.deepEqual([...new Set(infos)], [VERSION]);
  const headings = [...read('CHANGELOG.md').matchAll(/^## (\d+\.\d+\.\d+)\b/gm)].map((m) => m[1]);
  assert.equal(headings[0], VERSION, 'the newest CHANGELOG.md heading');
  assert.equal(new Set(headings).size, headings.length, 'a version twice in CHANGELOG.md');
});
