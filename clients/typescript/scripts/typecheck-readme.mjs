// Type-checks every ```ts block of this package's README.md and of the repository's README.md
// against the package's compiled types (dist/, so after `npm run build`), with the package's
// strict compiler options: each block is written to its own module in a temporary directory
// inside the package (so that `@memoryd/client` resolves to this package and
// `@anthropic-ai/sdk` to its node_modules) and `tsc --noEmit` checks them all. Unused locals
// are allowed: a snippet shows a value without always using it.
//
//   node scripts/typecheck-readme.mjs       exit 0 if every block compiles; else tsc's errors,
//                                           each file named after the README line of its block
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { codeBlocks } from '../../../tests/lib/examples.mjs';

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const docs = [
  ['clients/typescript/README.md', path.join(pkg, 'README.md')],
  ['README.md', path.join(pkg, '../../README.md')],
];

const dir = fs.mkdtempSync(path.join(pkg, '.readme-typecheck-'));
let failed = false;
try {
  const files = [];
  for (const [name, file] of docs) {
    const blocks = codeBlocks(fs.readFileSync(file, 'utf8')).filter((b) => b.lang === 'ts');
    if (blocks.length === 0) throw new Error(`${name}: no \`\`\`ts block`);
    for (const b of blocks) {
      const out = `${name.replaceAll('/', '_').replace(/\.md$/, '')}_line${b.line}.ts`;
      // `export {}` makes every block a module (top-level await, its own scope).
      fs.writeFileSync(path.join(dir, out), `${b.text}export {};\n`);
      files.push(`${out} = ${name} line ${b.line}`);
    }
  }
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      extends: '../tsconfig.json',
      compilerOptions: { noEmit: true, rootDir: '.', noUnusedLocals: false },
      include: ['*.ts'],
    }),
  );
  try {
    execFileSync(path.join(pkg, 'node_modules/.bin/tsc'), ['-p', path.join(dir, 'tsconfig.json')], { cwd: pkg, stdio: 'pipe' });
    console.log(`README snippets type-check: ${files.length} blocks compile`);
  } catch (e) {
    failed = true;
    console.error(`README snippets do not type-check (${files.join('; ')}):\n${e.stdout}${e.stderr}`);
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
