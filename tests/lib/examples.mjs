// The examples of a Markdown document (README.md, docker/README.md), for tests that run them
// verbatim:
//   codeBlocks(markdown)      every fenced block: { lang, section (the `## ` heading it is
//                             under, '' before the first), line (of the opening fence), text }
//   consoleExamples(blocks)   the ```console blocks as { command, expected }: a line starting
//                             with "$ " is a command, the lines up to the next command are its
//                             output
//   runConsole(examples, port)  runs each command with bash, "localhost:8080" pointed at
//                             127.0.0.1:<port> (the only change made), and asserts it prints
//                             exactly the expected lines (curl's missing final newline aside)
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

export function codeBlocks(markdown) {
  const blocks = [];
  let section = '';
  let open = null;
  for (const [i, line] of markdown.split('\n').entries()) {
    if (open) {
      if (line === '```') {
        blocks.push({ lang: open.lang, section: open.section, line: open.line, text: open.lines.join('\n') + '\n' });
        open = null;
      } else {
        open.lines.push(line);
      }
    } else if (line.startsWith('```')) {
      open = { lang: line.slice(3).trim(), section, line: i + 1, lines: [] };
    } else if (line.startsWith('## ')) {
      section = line.slice(3).trim();
    }
  }
  assert.equal(open, null, `unterminated code block at line ${open?.line}`);
  return blocks;
}

export function consoleExamples(blocks) {
  const out = [];
  for (const block of blocks.filter((b) => b.lang === 'console')) {
    for (const line of block.text.slice(0, -1).split('\n')) {
      if (line.startsWith('$ ')) out.push({ command: line.slice(2), expected: [] });
      else {
        assert.ok(out.length > 0, `output before the first command in the block at line ${block.line}`);
        out.at(-1).expected.push(line);
      }
    }
  }
  return out;
}

// `localhost:8080` in a README example -> the test's server.
export const pointAt = (text, port) => text.replaceAll('localhost:8080', `127.0.0.1:${port}`);

export async function runConsole(examples, port) {
  for (const ex of examples) {
    const { stdout } = await execFileP('bash', ['-c', pointAt(ex.command, port)]);
    const got = stdout.endsWith('\n') ? stdout.slice(0, -1) : stdout;
    assert.equal(got, ex.expected.join('\n'), `example: ${ex.command}`);
  }
}
