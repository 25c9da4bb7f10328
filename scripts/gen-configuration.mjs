// Generates docs/configuration.md from `memoryd --help`, the one source of memoryd's options
// (the option table opts[] of src/app/config.c), its endpoints and its commands:
//
//   node scripts/gen-configuration.mjs [BINARY] > docs/configuration.md   (BINARY: build/memoryd)
//
// tests/docs/configuration.test.mjs fails when docs/configuration.md differs from what this
// makes of the binary's help, so the file is regenerated, never edited by hand. The test and
// tests/docs/readme-claims.test.mjs also import parseHelp() to read the options.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HELP_COLUMN = 26; // where --help's descriptions start (src/app/config.c, usage())

// The help text as {intro: [line], options: [{flag, arg, env, help, default}], endpoints:
// [{methods, path}], commands: [{usage, what}], signals}. Throws on a line it cannot place, so
// that a change of --help's layout fails the test instead of dropping an option.
export function parseHelp(text) {
  const lines = text.split('\n');
  let i = 0;
  const intro = [];
  while (i < lines.length && lines[i] !== '') intro.push(lines[i++]);
  while (i < lines.length && lines[i] === '') i++;
  const options = [];
  for (; i < lines.length && lines[i] !== ''; i++) {
    const line = lines[i];
    if (line.startsWith('  --')) {
      const same = line.length > HELP_COLUMN && line.slice(2, HELP_COLUMN).endsWith(' ');
      const left = (same ? line.slice(2, HELP_COLUMN) : line.slice(2)).trim();
      const m = /^--([a-z][a-z0-9-]*)(?: (\S+))?$/.exec(left);
      if (!m) throw new Error(`--help: not an option: ${JSON.stringify(line)}`);
      options.push({ flag: `--${m[1]}`, arg: m[2] ?? null, env: null, lines: same ? [line.slice(HELP_COLUMN)] : [] });
    } else if (line.startsWith(' '.repeat(HELP_COLUMN)) && options.length > 0) {
      const rest = line.slice(HELP_COLUMN);
      const o = options.at(-1);
      if (/^MEMORYD_[A-Z0-9_]+$/.test(rest)) {
        if (o.env) throw new Error(`--help: ${o.flag} has two variables`);
        o.env = rest;
      } else {
        if (o.env) throw new Error(`--help: ${o.flag}: text after its variable: ${JSON.stringify(line)}`);
        o.lines.push(rest);
      }
    } else {
      throw new Error(`--help: a line of no option: ${JSON.stringify(line)}`);
    }
  }
  for (const o of options) {
    const joined = o.lines.map((l) => l.trim()).join(' ').replace(/\s+/g, ' ');
    const d = /^(.*?)\s*\[([^\]]*)\]$/.exec(joined);
    o.help = d ? d[1] : joined;
    o.default = d ? d[2] : null;
    delete o.lines;
  }
  while (i < lines.length && lines[i] === '') i++;
  if (!/^Endpoints\b/.test(lines[i] ?? '')) throw new Error(`--help: no Endpoints after the options: ${JSON.stringify(lines[i])}`);
  const endpoints = [];
  for (i++; i < lines.length && lines[i].startsWith('  '); i++) {
    const m = /^ {2}([A-Z]+(?:, [A-Z]+)*) +(\/\S*)$/.exec(lines[i]);
    if (!m) throw new Error(`--help: not an endpoint: ${JSON.stringify(lines[i])}`);
    endpoints.push({ methods: m[1].split(', '), path: m[2] });
  }
  if (lines[i] !== 'Commands:') throw new Error(`--help: no Commands after the endpoints: ${JSON.stringify(lines[i])}`);
  const commands = [];
  for (i++; i < lines.length && lines[i].startsWith('  '); i += 2) {
    const usage = /^ {2}(memoryd \S.*)$/.exec(lines[i]);
    const what = /^ {6}(\S.*)$/.exec(lines[i + 1] ?? '');
    if (!usage || !what) throw new Error(`--help: not a command and its description: ${JSON.stringify(lines.slice(i, i + 2))}`);
    commands.push({ usage: usage[1], what: what[1] });
  }
  const signals = (lines[i] ?? '').startsWith('Signals: ') ? lines[i++].slice('Signals: '.length) : null;
  if (!signals || lines.slice(i).some((l) => l !== '')) throw new Error(`--help: unexpected end: ${JSON.stringify(lines.slice(i - 1))}`);
  return { intro, options, endpoints, commands, signals };
}

// A table cell's text: `|` escaped, and `<`, `>` as entities (`Bearer <key>` is no HTML tag).
const cell = (s) => s.replaceAll('|', '\\|').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
const code = (s) => '`' + s.replaceAll('|', '\\|') + '`';

export function configurationDoc(helpText) {
  const h = parseHelp(helpText);
  const options = h.options.filter((o) => o.env);
  const plain = h.options.filter((o) => !o.env);
  const out = [
    '# Configuration',
    '',
    '<!-- Generated from `memoryd --help` by `node scripts/gen-configuration.mjs build/memoryd >',
    'docs/configuration.md`: do not edit. tests/docs/configuration.test.mjs fails when this file',
    "differs from what the generator makes of the binary's help. -->",
    '',
    'Every option of memoryd, as `memoryd --help` prints it. Each can be given as a flag or as its',
    'environment variable; a flag wins over the variable. Sizes take `K`, `M` or `G` (1024-based:',
    '`4M` is 4 MiB). An invalid value, or one out of its range, stops memoryd at start with a',
    'message naming it. The rules behind each limit and setting are in',
    '[behaviour.md, section 6](behaviour.md#6-limits-and-settings).',
    '',
    ...h.intro.map((l) => `> ${l}`),
    '',
    '## Options',
    '',
    '| flag | environment | default | what |',
    '|---|---|---|---|',
    ...options.map((o) => `| ${code(o.arg ? `${o.flag} ${o.arg}` : o.flag)} | ${code(o.env)} | ${o.default === null ? '' : cell(o.default)} | ${cell(o.help)} |`),
    '',
    ...plain.map((o) => `${code(o.flag)}: ${o.help}.`).join(' ').split('\n'),
    '',
    '## Endpoints',
    '',
    'The routes memoryd serves ([openapi.yaml](../openapi.yaml) describes them;',
    '[api.md](api.md), [tenants.md](tenants.md) and [mcp.md](mcp.md) explain them):',
    '',
    '| methods | path |',
    '|---|---|',
    ...h.endpoints.map((e) => `| ${e.methods.join(', ')} | ${code(e.path)} |`),
    '',
    '## Commands',
    '',
    ...h.commands.map((c) => `- \`${c.usage}\`: ${c.what}`),
    '',
    '## Signals',
    '',
    h.signals,
    '',
  ];
  return out.join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const bin = process.argv[2] ?? path.join(here, '..', 'build', 'memoryd');
  process.stdout.write(configurationDoc(execFileSync(bin, ['--help'], { encoding: 'utf8' })));
}
