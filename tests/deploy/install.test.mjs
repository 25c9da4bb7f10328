// `cmake --install`: into a temporary prefix, the program (which runs), its man page (made
// by help2man from --help: every option and subcommand is in it) and the systemd unit of
// docker/memoryd.service, its ExecStart pointed at the installed program and nothing else
// changed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, tempDir } from '../lib/server.mjs';
import { ROOT } from '../lib/vocabulary.mjs';

const BUILD = path.dirname(BIN); // the build directory ctest runs in

test('cmake --install puts the program, its man page and the systemd unit under the prefix', () => {
  const prefix = tempDir('memoryd-install-');
  const r = spawnSync('cmake', ['--install', BUILD, '--prefix', prefix], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr + r.stdout);
  const bin = path.join(prefix, 'bin', 'memoryd');
  const v = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  assert.equal(v.status, 0);
  assert.match(v.stdout, /^memoryd \d+\.\d+\.\d+ /);
  const help = spawnSync(bin, ['--help'], { encoding: 'utf8' }).stdout;
  const man = fs.readFileSync(path.join(prefix, 'share', 'man', 'man1', 'memoryd.1'), 'utf8');
  assert.match(man, /^\.TH MEMORYD "1"/m);
  // roff escapes the hyphens of options (\-\-listen): compare without them.
  const plain = man.replaceAll('\\-', '-');
  const flags = [...help.matchAll(/^ {2}(--[a-z-]+)/gm)].map((m) => m[1]);
  assert.ok(flags.length > 30, `${flags.length} options in --help`);
  for (const f of flags) assert.ok(plain.includes(f), `${f} is not in the man page`);
  for (const sub of ['keys', 'backup', 'migrate', 'admin']) assert.ok(plain.includes(`memoryd ${sub}`), `memoryd ${sub}`);
  const unit = fs.readFileSync(path.join(prefix, 'lib', 'systemd', 'system', 'memoryd.service'), 'utf8');
  const shipped = fs.readFileSync(path.join(ROOT, 'docker', 'memoryd.service'), 'utf8');
  assert.equal(unit, shipped.replace('ExecStart=/usr/local/bin/memoryd', `ExecStart=${bin}`));
  assert.notEqual(unit, shipped);
  fs.rmSync(prefix, { recursive: true, force: true });
});
