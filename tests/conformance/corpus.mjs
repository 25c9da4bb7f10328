// The conformance corpus: hand-written command sequences covering every
// command and every error of each, plus seeded pseudo-random walks. Each
// sequence runs against a fresh SDK tree and a fresh memoryd tenant.
//
// A step is a command object; a function (state, rng) -> step (to build a
// command from the tree as it is at that point); {raw: 'json'} (a request body
// sent verbatim; the SDK gets JSON.parse of it); or {body: value} (a whole
// request body with a bad tool_use envelope, memoryd only).

const V = (path, view_range) => (view_range === undefined ? { command: 'view', path } : { command: 'view', path, view_range });
const C = (path, file_text) => ({ command: 'create', path, file_text });
const S = (path, old_str, new_str) => ({ command: 'str_replace', path, old_str, new_str });
const I = (path, insert_line, insert_text) => ({ command: 'insert', path, insert_line, insert_text });
const D = (path) => ({ command: 'delete', path });
const R = (old_path, new_path) => ({ command: 'rename', old_path, new_path });

const sequences = [];
const seq = (name, ...steps) => sequences.push({ name, steps: steps.flat() });

const FIVE = 'l1\nl2\nl3\nl4\nl5';
const TEN = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
const viewAllAfter = (...paths) => paths.map((p) => V(p));

// ---------------------------------------------------------------- view

seq('view: empty tenant root in every spelling', V('/memories'), V('/memories/'), V('/memories//'), V('///memories'), V('/memories', [1, 2]));
seq('view: missing paths', V('/memories/nope.txt'), V('/memories/no/such/dir'), V('/memories/nope/'), C('/memories/a.txt', 'x'), V('/memories/A.txt'), V('/memories/a.tx'));
seq('view: simple files',
  C('/memories/notes.txt', 'first line\nsecond line'), V('/memories/notes.txt'),
  C('/memories/trailing.txt', 'with newline\n'), V('/memories/trailing.txt'),
  C('/memories/two-trailing.txt', 'x\n\n'), V('/memories/two-trailing.txt'),
  V('/memories'));
seq('view: empty file and newline-only files',
  C('/memories/empty.txt', ''), V('/memories/empty.txt'),
  C('/memories/nl.txt', '\n'), V('/memories/nl.txt'),
  C('/memories/nl3.txt', '\n\n\n'), V('/memories/nl3.txt'), V('/memories'));
seq('view: CRLF and tabs',
  C('/memories/crlf.txt', 'one\r\ntwo\r\nthree\r\n'), V('/memories/crlf.txt'),
  C('/memories/cr.txt', 'old mac\rline\r'), V('/memories/cr.txt'),
  C('/memories/tabs.txt', '\tindented\n\t\tmore\tinside\n'), V('/memories/tabs.txt'), V('/memories/crlf.txt', [2, 3]));
seq('view: NUL and other control bytes in content',
  C('/memories/nul.txt', 'a\u0000b\nc\u0000\n\u0000'), V('/memories/nul.txt'),
  S('/memories/nul.txt', 'a\u0000b', 'A\u0000B'), V('/memories/nul.txt'),
  C('/memories/ctl.txt', '\u0001\u0002\u001b[31mred\u001b[0m\u007f\n'), V('/memories/ctl.txt'),
  I('/memories/ctl.txt', 1, '\u0000'), V('/memories/ctl.txt'), V('/memories'));
seq('view: unicode content',
  C('/memories/u.txt', 'Grüße, 世界\n😀👍🏽 astral\ne\u0301 combining é\nשלום עולם\nمرحبا بالعالم\nabc\u200fdef\n\ufeffbom\n'),
  V('/memories/u.txt'), V('/memories/u.txt', [2, 4]), V('/memories'));
seq('view: view_range variants on a file without trailing newline',
  C('/memories/f.txt', FIVE),
  [[1, -1], [2, 3], [0, 2], [-3, 2], [3, 1], [4, 100], [10, 12], [1, 0], [1, -2], [2, -1], [5, 5], [6, -1], [0, 0], [-1, -1], [3, -3], [1, 5], [2, -5]]
    .map((r) => V('/memories/f.txt', r)),
  V('/memories/f.txt', null));
seq('view: view_range variants on a file with trailing newline',
  C('/memories/t.txt', TEN),
  [[1, -1], [10, 11], [11, 11], [12, -1], [9, -2], [0, -1], [-100, 3], [7, 7]].map((r) => V('/memories/t.txt', r)));
seq('view: view_range arrays of another length than two are ignored, as by the SDK',
  C('/memories/f.txt', FIVE), V('/memories/f.txt', [2]), V('/memories/f.txt', []), V('/memories/f.txt', [1, 2, 3]),
  V('/memories/f.txt', [3, 'x', 1]), V('/memories/f.txt', [[1, 2]]), V('/memories/f.txt', [null]), V('/memories', [2]), V('/memories/', []),
  V('/memories/f.txt', [2, 3]));
seq('view: numbers beyond 64 bits are out of range, in view_range and insert_line; ignored elsewhere',
  C('/memories/r.txt', 'a\nb\nc'),
  { raw: '{"command":"view","path":"/memories/r.txt","view_range":[1,99999999999999999999]}' },
  { raw: '{"command":"view","path":"/memories/r.txt","view_range":[-99999999999999999999,2]}' },
  { raw: '{"command":"view","path":"/memories/r.txt","view_range":[1e400,2]}' },
  { raw: '{"command":"view","path":"/memories/r.txt","view_range":[1,9223372036854774784]}' },
  { raw: '{"command":"view","path":"/memories/r.txt","view_range":[1,9223372036854775808]}' },
  { raw: '{"command":"insert","path":"/memories/r.txt","insert_line":18446744073709551616,"insert_text":"x"}' },
  { raw: '{"command":"insert","path":"/memories/r.txt","insert_line":-1e999,"insert_text":"x"}' },
  { raw: '{"command":"view","path":"/memories/r.txt","note":123456789012345678901234567890,"more":[1e400]}' },
  { raw: '{"command":"view","path":"/memories/r.txt","view_range":[99999999999999999999,"x"]}' },
  V('/memories/r.txt'));
seq('view: view_range on an empty file', C('/memories/e', ''), V('/memories/e', [1, 1]), V('/memories/e', [1, -1]), V('/memories/e', [2, 5]), V('/memories/e', [0, 0]));
seq('view: view_range is ignored for directories',
  C('/memories/d/a.txt', 'a'), V('/memories/d', [1, 1]), V('/memories/d', [5, -1]), V('/memories', [2, 1]), V('/memories/d/', [1, 2]));
seq('view: non-canonical spellings of files and directories',
  C('/memories/dir/file.txt', 'content\n'), V('/memories/dir/file.txt/'), V('/memories//dir//file.txt'), V('/memories/dir//'),
  V('/memories//dir'), V('//memories/dir/'), V('/memories///'));

seq('paths are byte-exact: a name not in Unicode NFC is another file, and its "does not exist" says so',
  C('/memories/caf\u00e9.txt', 'precomposed'), V('/memories/cafe\u0301.txt'), S('/memories/cafe\u0301.txt', 'a', 'b'),
  I('/memories/cafe\u0301.txt', 0, 'x'), D('/memories/cafe\u0301.txt'), R('/memories/cafe\u0301.txt', '/memories/moved.txt'),
  V('/memories/na\u00efve.txt'), D('/memories/na\u00efve.txt'), C('/memories/cafe\u0301.txt', 'decomposed'), V('/memories'),
  V('/memories/cafe\u0301.txt'), V('/memories/caf\u00e9.txt'), V('/memories/\u212b/'), C('/memories/A\u030a/x', 'angstrom'),
  V('/memories/\u00c5/x'), V('/memories/A\u030a/'), D('/memories/cafe\u0301.txt'), V('/memories'));

// ---------------------------------------------------------------- listings

seq('listing: depth two, second-level directory listed but not opened',
  C('/memories/a/b/c/d/e.txt', 'deep'), C('/memories/top.txt', 'top'), C('/memories/a/one.txt', '1'), C('/memories/a/b/two.txt', '22'),
  viewAllAfter('/memories', '/memories/a', '/memories/a/b', '/memories/a/b/c', '/memories/a/b/c/d'), V('/memories/a/b/c/d/e.txt'));
seq('listing: hidden entries and node_modules at several depths',
  C('/memories/.hidden', 'h'), C('/memories/.config/settings.json', '{"a":1}'), C('/memories/node_modules/pkg/index.js', 'module.exports = 1;\n'),
  C('/memories/visible.txt', 'v'), C('/memories/a/.secret', 'sssss'), C('/memories/a/node_modules/m.js', 'm'), C('/memories/a/b/.h', 'hh'),
  C('/memories/a/b/c.txt', 'c'), C('/memories/node_modules2/x', 'x'), C('/memories/a/.dir/inner.txt', 'inner'), C('/memories/...', 'dots'),
  C('/memories/..x', 'dotdotx'), C('/memories/a/b/node_modules/q', 'q'),
  viewAllAfter('/memories', '/memories/a', '/memories/a/b', '/memories/node_modules', '/memories/node_modules/pkg', '/memories/.config',
    '/memories/.hidden', '/memories/a/.secret', '/memories/a/node_modules/m.js', '/memories/node_modules/pkg/index.js', '/memories/...', '/memories/..x'),
  S('/memories/.hidden', 'h', 'hidden edited'), I('/memories/a/node_modules/m.js', 1, 'more'), V('/memories/a'), V('/memories'));
seq('listing: sort order edge cases',
  ['a/z.txt', 'a-b.txt', 'a.txt', 'A', '_', '~', 'B.txt', 'a b.txt', 'ä.txt', '😀.txt', 'ｆ.txt', '\ue000.txt', '\ufffd.txt', '0', '9',
    'é', 'e\u0301', 'Z', 'z', 'a/y/k.txt', 'a/Y.txt', 'aa', 'a!', '𝔸.txt', '\uffef.txt', '\u00ff', '\u0100']
    .map((n, i) => C(`/memories/${n}`, 'x'.repeat(i))),
  V('/memories'), V('/memories/a'), V('/memories/'));
seq('listing: astral vs U+E000-U+FFFF inside a subdirectory',
  C('/memories/s/\u{1f600}', '1'), C('/memories/s/\uff01', '2'), C('/memories/s/\ue000', '3'), C('/memories/s/\u{10000}', '4'), C('/memories/s/\uffff', '5'),
  C('/memories/s/\u{1f600}/x', '6'), C('/memories/s/\uff01x/y', '7'),
  V('/memories/s'), V('/memories'));
seq('listing: sizes and the size format',
  [0, 1, 1023, 1024, 1075, 1076, 1280, 1536, 2047, 2048, 10240, 102400, 104806, 104857].map((n) => C(`/memories/sz/${String(n).padStart(8, '0')}.bin`, 'y'.repeat(n))),
  V('/memories/sz'), V('/memories'));
seq('listing: a file of exactly 1 MiB and directory totals',
  C('/memories/big/one.txt', 'A'.repeat(1023) + '\n' + ('z'.repeat(1023) + '\n').repeat(1023)), C('/memories/big/.h', 'hidden bytes count'), C('/memories/big/sub/s.txt', 'ab'),
  V('/memories'), V('/memories/big'), V('/memories/big/one.txt', [1, 2]), V('/memories/big/one.txt', [1024, -1]), V('/memories/big/one.txt', [1025, -1]),
  S('/memories/big/one.txt', 'A\nz', 'B\nY'), V('/memories/big/one.txt', [1, 3]), V('/memories/big'));
seq('listing: 1048575 bytes in a directory',
  C('/memories/k/f.txt', ('q'.repeat(1023) + '\n').repeat(1023) + 'q'.repeat(1023)), V('/memories/k'), V('/memories'));
seq('listing: multibyte content counts bytes',
  C('/memories/mb/e.txt', 'é'.repeat(600)), C('/memories/mb/emoji.txt', '😀'.repeat(300)), V('/memories/mb'), V('/memories'));
seq('listing: many sibling files',
  Array.from({ length: 80 }, (_, i) => C(`/memories/many/f${String(i).padStart(2, '0')}.txt`, `file ${i}\n`.repeat(i % 7))),
  V('/memories/many'), V('/memories'), D('/memories/many/f40.txt'), V('/memories/many'));
seq('listing: empty directories stay after their last file is deleted',
  C('/memories/e1/e2/f.txt', 'f'), D('/memories/e1/e2/f.txt'), V('/memories'), V('/memories/e1'), V('/memories/e1/e2'),
  C('/memories/e1/e2/g.txt', 'g'), V('/memories/e1'));
seq('listing: non-canonical directory spellings keep the header, canonical entries',
  C('/memories/d/x.txt', 'x'), C('/memories/d/s/y.txt', 'yy'),
  V('/memories/d/'), V('/memories//d'), V('/memories//d//'), V('/memories/'), V('/memories//'), V('//memories//d/s/'));

// ---------------------------------------------------------------- create

seq('create: success, nested parents, existing file and directory',
  C('/memories/a.txt', 'hello'), C('/memories/a.txt', 'again'), V('/memories/a.txt'),
  C('/memories/x/y/z/deep.txt', 'deep'), C('/memories/x/y', 'dir exists'), C('/memories/x/y/', 'dir exists'), C('/memories/x', ''),
  C('/memories', 'root'), C('/memories/', 'root'), C('/memories//', 'root'), V('/memories'), V('/memories/x'));
seq('create: trailing slash and doubled slashes create a file',
  C('/memories/newfile/', 'trailing'), V('/memories/newfile'), C('/memories//p//q.txt', 'pq'), V('/memories/p/q.txt'), C('/memories/p/q.txt/', 'dup'), V('/memories'));
seq('create: under a file',
  C('/memories/a.txt', 'file'), C('/memories/a.txt/b', 'x'), C('/memories/a.txt/b/c.txt', 'x'), C('/memories/d/f', 'f'), C('/memories/d/f/g/h', 'x'),
  V('/memories'), V('/memories/a.txt'));
seq('create: unicode names and content',
  C('/memories/日本語/ファイル.txt', 'こんにちは\n'), C('/memories/emoji/😀🎉.md', '# 🎉\n'), C('/memories/rtl/שלום.txt', 'עברית\n'),
  C('/memories/comb/e\u0301.txt', 'decomposed'), C('/memories/comb/é.txt', 'precomposed'), C('/memories/space name/with  spaces .txt', ' '),
  C('/memories/%41%20', 'percent not special'), C('/memories/100%', 'percent at end'), C('/memories/%2', 'short escape'),
  V('/memories'), V('/memories/comb'), V('/memories/%41%20'), V('/memories/日本語/ファイル.txt'));
seq('create: empty content, hidden files, names with dots',
  C('/memories/e.txt', ''), C('/memories/.env', 'SECRET=1'), C('/memories/a.b.c', 'dots'), C('/memories/x./y..', 'trailing dots'),
  C('/memories/...', 'three dots'), C('/memories/.a/.b', 'nested hidden'), V('/memories'), V('/memories/.a'), V('/memories/x.'));
seq('create: long names and paths within the limits',
  C(`/memories/${'n'.repeat(255)}`, 'max segment'), C(`/memories/${'€'.repeat(85)}`, '255 bytes of euro'),
  C(`/memories/${Array.from({ length: 60 }, (_, i) => `seg${i}`).join('/')}/leaf.txt`, 'deep path'),
  C(`/memories/${Array.from({ length: 8 }, () => 'd'.repeat(120)).join('/')}/f`, 'about 1000 bytes'),
  V('/memories'), V(`/memories/${'n'.repeat(255)}`));
seq('create: many files then view each',
  Array.from({ length: 12 }, (_, i) => C(`/memories/m/${i}.txt`, `n=${i}\n`)), Array.from({ length: 12 }, (_, i) => V(`/memories/m/${i}.txt`)), V('/memories/m'));

// ---------------------------------------------------------------- str_replace

seq('str_replace: single-line replacements and snippets',
  C('/memories/s.txt', TEN),
  S('/memories/s.txt', 'line 1\n', 'LINE ONE\n'), S('/memories/s.txt', 'line 5', 'line five'), S('/memories/s.txt', 'line 10', 'last'),
  S('/memories/s.txt', 'line 2', ''), V('/memories/s.txt'));
seq('str_replace: new_str with several lines (snippet to 2 after its last line)',
  C('/memories/s.txt', TEN),
  S('/memories/s.txt', 'line 3', 'three\nthree-b\nthree-c'), S('/memories/s.txt', 'line 9', 'nine\nnine-b\n'), S('/memories/s.txt', 'line 1\n', '\n\n\n\n'),
  V('/memories/s.txt'));
seq('str_replace: old_str spanning lines',
  C('/memories/m.txt', 'alpha\nbeta\ngamma\ndelta\nepsilon\n'),
  S('/memories/m.txt', 'beta\ngamma', 'BG'), V('/memories/m.txt'), S('/memories/m.txt', 'alpha\nBG\n', 'A\nB\nC\n'), S('/memories/m.txt', 'delta\nepsilon\n', ''),
  V('/memories/m.txt'), S('/memories/m.txt', 'C\ndel', 'x'));
seq('str_replace: old_str of only a newline',
  C('/memories/one-nl.txt', 'left\nright'), S('/memories/one-nl.txt', '\n', ' + '), V('/memories/one-nl.txt'),
  C('/memories/two-nl.txt', 'a\nb\nc'), S('/memories/two-nl.txt', '\n', ''), S('/memories/two-nl.txt', '\n\n', ''));
seq('str_replace: no match',
  C('/memories/n.txt', 'some text\nmore text\n'), S('/memories/n.txt', 'absent', 'x'), S('/memories/n.txt', 'Some', 'x'), S('/memories/n.txt', 'text\nmore text\n\n', 'x'),
  C('/memories/empty', ''), S('/memories/empty', 'a', 'b'), S('/memories/n.txt', 'with `backticks`', 'x'), V('/memories/n.txt'));
seq('str_replace: several matches on different lines',
  C('/memories/d.txt', 'dup\nx\ndup\ny\ndup\n'), S('/memories/d.txt', 'dup', 'one'), S('/memories/d.txt', 'x\ndup', 'X'), V('/memories/d.txt'));
seq('str_replace: two matches on one line',
  C('/memories/l.txt', 'first\nsecond\nfoo and foo\nlast\n'), S('/memories/l.txt', 'foo', 'bar'), S('/memories/l.txt', 'o', '0'),
  C('/memories/aa.txt', 'aaaa\n'), S('/memories/aa.txt', 'aa', 'b'), C('/memories/aaa.txt', 'aaa'), S('/memories/aaa.txt', 'aa', 'b'), V('/memories/aaa.txt'),
  C('/memories/ml.txt', 'x\ny\nx\ny\n'), S('/memories/ml.txt', 'x\ny', 'z'), V('/memories/l.txt'));
seq('str_replace: overlapping candidates',
  C('/memories/o.txt', 'abababa\n'), S('/memories/o.txt', 'aba', 'X'), C('/memories/o2.txt', 'ababa'), S('/memories/o2.txt', 'aba', 'Y'), V('/memories/o2.txt'));
seq('str_replace: literal replacement text ($&, $1, backslashes)',
  C('/memories/r.txt', 'price: 5\n'), S('/memories/r.txt', '5', '$& $1 $$ $` $\' \\1 \\n'), V('/memories/r.txt'));
seq('str_replace: unicode, CRLF, whole content, empty new_str',
  C('/memories/u.txt', 'Grüße\r\n😀 smile\r\nשלום\r\n'), S('/memories/u.txt', '😀', '🙂'), S('/memories/u.txt', 'ß', 'ss'), S('/memories/u.txt', '\r\nשלום', ''),
  S('/memories/u.txt', 'e\u0301', 'x'), V('/memories/u.txt'), C('/memories/w.txt', 'whole'), S('/memories/w.txt', 'whole', ''), V('/memories/w.txt'),
  S('/memories/w.txt', 'x', 'y'));
seq('str_replace: snippet at the edges of a file',
  C('/memories/e.txt', 'only'), S('/memories/e.txt', 'only', 'one\ntwo'), S('/memories/e.txt', 'two', 'two\nthree\nfour\nfive\nsix\nseven'),
  S('/memories/e.txt', 'seven', 'end'), S('/memories/e.txt', 'one', 'start'), V('/memories/e.txt'));
seq('str_replace: missing file, directory, through a file',
  C('/memories/dir/f.txt', 'content'), S('/memories/missing.txt', 'a', 'b'), S('/memories/dir', 'a', 'b'), S('/memories/dir/', 'content', 'x'),
  S('/memories', 'a', 'b'), S('/memories/dir/f.txt/x', 'content', 'x'), S('/memories/dir/f.txt/x/y', 'a', 'b'), S('/memories/nodir/f.txt', 'a', 'b'),
  V('/memories/dir/f.txt'));

// ---------------------------------------------------------------- insert

seq('insert: at 0, middle and end',
  C('/memories/i.txt', 'one\ntwo\nthree'), I('/memories/i.txt', 0, 'zero'), I('/memories/i.txt', 2, 'one and a half'), I('/memories/i.txt', 5, 'four'),
  V('/memories/i.txt'), I('/memories/i.txt', 6, 'five\n'), V('/memories/i.txt'));
seq('insert: out of range and negative',
  C('/memories/i.txt', 'a\nb\n'), I('/memories/i.txt', 4, 'x'), I('/memories/i.txt', 3, 'ok'), I('/memories/i.txt', -1, 'x'), I('/memories/i.txt', 100, 'x'),
  I('/memories/i.txt', -100, 'x'), V('/memories/i.txt'));
seq('insert: into an empty file',
  C('/memories/e1', ''), I('/memories/e1', 0, 'first'), V('/memories/e1'), C('/memories/e2', ''), I('/memories/e2', 1, 'after'), V('/memories/e2'),
  C('/memories/e3', ''), I('/memories/e3', 2, 'x'), I('/memories/e3', 1, ''), V('/memories/e3'));
seq('insert: text with trailing newlines, several lines, CRLF, empty',
  C('/memories/t.txt', 'A\nB'), I('/memories/t.txt', 1, 'one\n'), I('/memories/t.txt', 1, 'two\n\n'), I('/memories/t.txt', 0, 'x\ny\nz'),
  I('/memories/t.txt', 2, 'crlf\r\n'), I('/memories/t.txt', 3, ''), I('/memories/t.txt', 3, '\n'), V('/memories/t.txt'));
seq('insert: unicode text and a file with trailing newline',
  C('/memories/u.txt', 'Grüße\n'), I('/memories/u.txt', 2, '😀 end'), I('/memories/u.txt', 1, 'e\u0301 שלום'), V('/memories/u.txt'), I('/memories/u.txt', 4, 'x'));
seq('insert: missing file, directory, through a file',
  C('/memories/d/f.txt', 'x'), I('/memories/missing.txt', 0, 'x'), I('/memories/d', 0, 'x'), I('/memories/d/', 1, 'x'), I('/memories', 0, 'x'),
  I('/memories/d/f.txt/g', 0, 'x'), I('/memories/nodir/f.txt', 0, 'x'), V('/memories/d/f.txt'));
seq('insert: integral JSON reals are integers',
  C('/memories/r.txt', 'a\nb'), { raw: '{"command":"insert","path":"/memories/r.txt","insert_line":1.0,"insert_text":"mid"}' },
  { raw: '{"command":"view","path":"/memories/r.txt","view_range":[2.0,-1.0]}' }, { raw: '{"command":"insert","path":"/memories/r.txt","insert_line":-0.0,"insert_text":"top"}' },
  V('/memories/r.txt'));

// ---------------------------------------------------------------- delete

seq('delete: files and non-empty directories',
  C('/memories/a.txt', 'a'), C('/memories/d/x.txt', 'x'), C('/memories/d/e/y.txt', 'y'), C('/memories/d/.h', 'h'),
  D('/memories/a.txt'), V('/memories/a.txt'), D('/memories/a.txt'), D('/memories/d'), V('/memories/d'), V('/memories/d/e/y.txt'), V('/memories'));
seq('delete: the root in every spelling',
  C('/memories/keep.txt', 'k'), D('/memories'), D('/memories/'), D('/memories//'), D('//memories'), V('/memories'));
seq('delete: missing, through a file, trailing slash',
  C('/memories/f.txt', 'f'), C('/memories/d/g.txt', 'g'), D('/memories/nope'), D('/memories/f.txt/x'), D('/memories/f.txt/x/y'), D('/memories/d/'),
  D('/memories/f.txt/'), V('/memories'));
seq('delete: directory stays when its last file goes; delete hidden and node_modules',
  C('/memories/d/only.txt', 'o'), C('/memories/.h/x', 'x'), C('/memories/node_modules/p/i.js', 'i'), D('/memories/d/only.txt'), V('/memories'),
  D('/memories/.h'), D('/memories/node_modules/p'), V('/memories/node_modules'), D('/memories/d'), V('/memories'));

// ---------------------------------------------------------------- rename

seq('rename: files',
  C('/memories/a.txt', 'a'), R('/memories/a.txt', '/memories/b.txt'), V('/memories/a.txt'), V('/memories/b.txt'),
  R('/memories/b.txt', '/memories/new/parents/c.txt'), V('/memories'), R('/memories/new/parents/c.txt', '/memories/C.TXT'), V('/memories'));
seq('rename: onto existing entries and onto itself',
  C('/memories/a.txt', 'a'), C('/memories/b.txt', 'b'), C('/memories/d/x', 'x'), R('/memories/a.txt', '/memories/b.txt'), R('/memories/a.txt', '/memories/d'),
  R('/memories/a.txt', '/memories/a.txt'), R('/memories/a.txt', '/memories//a.txt/'), R('/memories/d', '/memories/d/'), R('/memories/d', '/memories'),
  R('/memories/d', '/memories/'), R('/memories/d/x', '/memories/a.txt'), V('/memories'));
seq('rename: directories with their subtrees',
  C('/memories/d/a.txt', 'a'), C('/memories/d/e/b.txt', 'bb'), C('/memories/d/.h', 'hh'), R('/memories/d', '/memories/moved'), V('/memories'),
  V('/memories/moved'), R('/memories/moved/e', '/memories/x/y/e2'), V('/memories'), R('/memories/moved', '/memories/d2'), V('/memories/d2/.h'));
seq('rename: a directory into its own subtree',
  C('/memories/d/e/f.txt', 'f'), R('/memories/d', '/memories/d/sub'), R('/memories/d', '/memories/d/e/g/h'), R('/memories/d/', '/memories/d//x'),
  R('/memories/d/e', '/memories/d/e/e'), R('/memories/d', '/memories/d2'), V('/memories'), R('/memories/d2', '/memories/d2x/in'), V('/memories'));
seq('rename: missing source (nothing created)',
  R('/memories/nope', '/memories/new/deep/x'), V('/memories'), C('/memories/a', 'a'), R('/memories/b', '/memories/c/d'), R('/memories/a/b', '/memories/z'),
  V('/memories'));
seq('rename: the root and to the root',
  C('/memories/a', 'a'), R('/memories', '/memories/x'), R('/memories/', '/memories/y'), R('/memories//', '/memories'), R('/memories/a', '/memories'),
  R('/memories', '/memories/a/b'), V('/memories'));
seq('rename: destination under a file',
  C('/memories/f.txt', 'f'), C('/memories/g.txt', 'g'), C('/memories/d/x', 'x'), R('/memories/g.txt', '/memories/f.txt/g.txt'), R('/memories/g.txt', '/memories/f.txt/a/b'),
  R('/memories/d', '/memories/f.txt/d'), R('/memories/f.txt', '/memories/f.txt/inside'), R('/memories/nope', '/memories/f.txt/z'), V('/memories'));
seq('rename: source through a file',
  C('/memories/f.txt', 'f'), R('/memories/f.txt/a', '/memories/b'), R('/memories/f.txt/a/b', '/memories/f.txt'), V('/memories'));
seq('rename: hidden, node_modules, unicode, case change, sibling prefix',
  C('/memories/.h', 'h'), R('/memories/.h', '/memories/visible'), C('/memories/d/m.js', 'm'), R('/memories/d', '/memories/node_modules/d'), V('/memories'),
  V('/memories/node_modules'), C('/memories/ä.txt', 'ä'), R('/memories/ä.txt', '/memories/Ä.txt'), R('/memories/Ä.txt', '/memories/😀/ä.txt'),
  C('/memories/p/q', 'q'), R('/memories/p', '/memories/p2'), R('/memories/p2', '/memories/p'), R('/memories/p', '/memories/pp/p'), V('/memories'));
seq('rename: non-canonical spellings',
  C('/memories/a/b.txt', 'b'), R('/memories//a//b.txt', '/memories/a/c.txt/'), V('/memories/a'), R('/memories/a/', '//memories/z/'), V('/memories'));

// ---------------------------------------------------------------- path rules (§3)

const dotPaths = ['/memories/a/../b.txt', '/memories/./x.txt', '/memories/a/.', '/memories/a/./b', '/memories/a/b/../../c', '/memories/.', '/memories/./'];
seq('paths: "." and ".." segments that stay inside, every command',
  C('/memories/a/b.txt', 'b'), C('/memories/x.txt', 'x'),
  dotPaths.flatMap((p) => [C(p, 'x'), V(p), S(p, 'b', 'c'), I(p, 0, 'x'), D(p)]),
  R('/memories/a/../x.txt', '/memories/y.txt'), R('/memories/x.txt', '/memories/a/../y.txt'), R('/memories/./x.txt', '/memories/z.txt'), V('/memories'));
const escapes = ['/memories/..', '/memories/../x', '/memories/a/../../x', '/memories/../memories/a/b.txt', '/memories/../memories', '/memories/a/../../memories/x.txt',
  '/memories/../../etc/passwd', '/memories/a/b/../../../x', '/memories/./../x', '/memories/../'];
seq('paths: ".." that escapes',
  C('/memories/a/b.txt', 'b'), C('/memories/x.txt', 'x'), escapes.flatMap((p) => [V(p), C(p, 'x'), D(p)]),
  S('/memories/../memories/x.txt', 'x', 'y'), I('/memories/../memories/x.txt', 0, 'y'), R('/memories/../memories/x.txt', '/memories/y'), R('/memories/x.txt', '/memories/../y'),
  V('/memories'));
const backslashes = ['/memories/a\\b.txt', '/memories/..\\x', '/memories\\x', '/memories/\\', '/memories/a\\..\\..\\x', '/memories/x.txt\\'];
seq('paths: backslashes', C('/memories/x.txt', 'x'), backslashes.flatMap((p) => [C(p, 'x'), V(p), D(p)]), S('/memories/x.txt\\', 'x', 'y'), R('/memories/x.txt', '/memories/a\\b'), V('/memories'));
const percents = ['/memories/%2e%2e/x', '/memories/%2E%2E', '/memories/%2e', '/memories/a%2fb', '/memories/a%2Fb', '/memories/a%5cb', '/memories/a%5Cb',
  '/memories/x%2e.txt', '/memories/%2e%2E/%2F', '/memories/..%2f..%2fetc', '/memories/%252e'];
seq('paths: percent-encoded ".", "/" and "\\" in any case',
  C('/memories/x.txt', 'x'), percents.flatMap((p) => [C(p, 'x'), V(p)]), S('/memories/%2e', 'a', 'b'), I('/memories/%2E/x', 0, 'x'), D('/memories/a%2fb'),
  R('/memories/x.txt', '/memories/%5c'), R('/memories/%2fx', '/memories/y'), C('/memories/%25', 'percent-25 is allowed'), V('/memories'));
const notUnder = ['/memoriesX', '/memoriesX/a.txt', '/memories_old/a', '/memories.txt', '/memories-2', '/Memories/a', 'memories/a', '', '/', '/tmp/x', ' /memories',
  'memories', '/memorie', '../memories/a'];
seq('paths: not under /memories',
  C('/memories/x.txt', 'x'), notUnder.flatMap((p) => [C(p, 'x'), V(p)]), S('/memoriesX', 'a', 'b'), I('/memories_x/y', 0, 'x'), D('/memoriesX'), D('/memories_x'),
  R('/memories/x.txt', '/memoriesX'), R('/memoriesY', '/memories/y'), V('/memories'));
const controls = ['/memories/a\tb', '/memories/a\nb', '/memories/nul\u0000x', '/memories/\u0001', '/memories/del\u007f', '/memories/nel\u0085', '/memories/c1\u009f',
  '/memories/cr\r', '/memories/esc\u001b[0m'];
seq('paths: control characters',
  C('/memories/x.txt', 'x'), controls.flatMap((p) => [C(p, 'x'), V(p), D(p)]), S('/memories/x.txt\u0000', 'x', 'y'), R('/memories/x.txt', '/memories/x\ty'),
  C('/memories/ok\u00a0nbsp', 'U+00A0 is not a control character'), V('/memories'));
seq('paths: too long paths and segments',
  C('/memories/x.txt', 'x'),
  C(`/memories/${'n'.repeat(256)}`, 'x'), V(`/memories/${'n'.repeat(256)}`), C(`/memories/${'€'.repeat(86)}`, 'x'), C(`/memories/a/${'b'.repeat(300)}/c`, 'x'),
  C(`/memories/${'p/'.repeat(2044)}x`, 'x'), V(`/memories/${'q'.repeat(4087)}`), C(`/memories/${'é'.repeat(2044)}`, 'x'),
  C(`/memories/${'😀'.repeat(1022)}`, 'x'), D(`/memories/${'n'.repeat(256)}`), R('/memories/x.txt', `/memories/${'y'.repeat(256)}`),
  C(`/memories/../${'n'.repeat(300)}`, 'escape wins over segment'), C(`/memories/${'n'.repeat(300)}/..`, 'segment first'),
  C(`/memories/${'a/'.repeat(2043)}b`, '4097 bytes'), V(`/memories/${'é'.repeat(2043)}`), V('/memories'));

// ---------------------------------------------------------------- input errors (memoryd only)

seq('input: missing and empty fields',
  C('/memories/f.txt', 'one\ntwo\n'),
  S('/memories/f.txt', '', 'x'), { command: 'str_replace', path: '/memories/f.txt', old_str: 'one' }, { command: 'str_replace', path: '/memories/f.txt', new_str: 'x' },
  { command: 'create', path: '/memories/g.txt' }, { command: 'create', file_text: 'x' }, { command: 'insert', path: '/memories/f.txt', insert_line: 0 },
  { command: 'insert', path: '/memories/f.txt', insert_text: 'x' }, { command: 'view' }, { command: 'delete' }, { command: 'rename', old_path: '/memories/f.txt' },
  { command: 'rename', new_path: '/memories/g.txt' }, { command: 'create', path: '/memories/g.txt', file_text: null },
  { command: 'str_replace', path: '/memories/f.txt', old_str: 'one', new_str: null }, V('/memories'), V('/memories/f.txt'));
seq('input: wrong types',
  C('/memories/f.txt', 'one\ntwo\n'),
  I('/memories/f.txt', 1.5, 'x'), I('/memories/f.txt', '2', 'x'), I('/memories/f.txt', true, 'x'), I('/memories/f.txt', [1], 'x'), I('/memories/f.txt', 1, 5),
  C('/memories/g.txt', 42), C('/memories/g.txt', ['a']), C(123, 'x'), V(['/memories']), D({ p: 1 }), R('/memories/f.txt', 7), R(false, '/memories/x'),
  S('/memories/f.txt', 1, 'x'), S('/memories/f.txt', 'one', { a: 1 }), S('/memories/f.txt', 'one', 2), I('/memories/f.txt', 0.000001, 'x'),
  I('/memories/f.txt', -1.5, 'x'), V('/memories/f.txt'));
seq('input: the command field',
  { path: '/memories' }, { command: null, path: '/memories' }, { command: 7, path: '/memories' }, { command: ['view'], path: '/memories' },
  { command: 'copy', path: '/memories/a' }, { command: 'list', path: '/memories' }, { command: '', path: '/memories' }, { command: 'VIEW', path: '/memories' },
  { command: 'str-replace', path: '/memories/a' }, { command: 'view', path: '/memories', extra: 'ignored', view_range: null }, V('/memories'));
seq('input: the first bad field decides the message',
  C('/memories/f.txt', 'x'), { command: 'str_replace', path: '/memories/../x', old_str: '' }, { command: 'str_replace', path: '/memories/f.txt', old_str: '', new_str: 5 },
  { command: 'insert', path: 5, insert_line: 'x' }, { command: 'insert', path: '/memories/a\\b', insert_line: 1.5, insert_text: 'x' },
  { command: 'create', path: '/memories/%2e', file_text: 'x' }, { command: 'rename', old_path: '/memoriesX', new_path: 3 },
  { command: 'rename', old_path: '/memories/f.txt', new_path: '/memories/./g' }, V('/memories'));
seq('view_range: not two integers',
  C('/memories/f.txt', FIVE),
  [[1], [], [1, 2, 3], ['1', '2'], [1.5, 2], [1, 2.5], '1,2', {}, [null, 1], [1, true], 5, [[1], [2]], [1, '-1']].map((r) => V('/memories/f.txt', r)),
  V('/memories', [1]), V('/memories', 'all'), V('/memories/missing.txt', [1.5, 2]), V('/memories/f.txt', [2, 3]));
seq('envelope: bad tool_use blocks',
  C('/memories/f.txt', 'x'),
  { body: { type: 'tool_use', id: 'toolu_x1', name: 'other', input: { command: 'view', path: '/memories' } } },
  { body: { type: 'tool_use', name: 'memory', input: { command: 'view', path: '/memories' } } },
  { body: { type: 'tool_use', id: 5, name: 'memory', input: { command: 'view', path: '/memories' } } },
  { body: { type: 'tool_result', id: 'toolu_x2', content: 'x' } },
  { body: { type: 'tool_use', id: 'toolu_x3', name: 'memory' } },
  { body: { type: 'tool_use', id: 'toolu_x4', name: 'memory', input: 'view' } },
  { body: { type: 'tool_use', id: 'toolu_x5', name: 5, input: { command: 'view', path: '/memories' } } },
  { body: { type: 5, command: 'view', path: '/memories' } },
  { body: [{ command: 'view', path: '/memories' }] }, { body: [] },
  { body: { type: 'tool_use', id: 'toolu_x6', name: 'memory', input: { command: 'delete', path: '/memories/f.txt' }, extra: 1, nameX: 2 }, valid: true },
  V('/memories/f.txt'));

// ---------------------------------------------------------------- the line limit and large files

seq('limits: 999,999 lines is viewable, 1,000,000 is not',
  C('/memories/big/max.txt', '\n'.repeat(999998)), V('/memories/big/max.txt', [999997, -1]), V('/memories/big/max.txt', [1, 3]),
  V('/memories/big/max.txt', [999999, 999999]), V('/memories/big'), I('/memories/big/max.txt', 1000000, 'x'), I('/memories/big/max.txt', 999999, 'end'),
  V('/memories/big/max.txt'), V('/memories/big/max.txt', [1, 1]), I('/memories/big/max.txt', 1000001, 'x'), S('/memories/big/max.txt', 'end', 'END'),
  V('/memories/big'));
seq('limits: a file of 1,000,000 newline bytes',
  C('/memories/nl.txt', '\n'.repeat(1000000)), V('/memories/nl.txt'), V('/memories/nl.txt', [1, 2]), V('/memories'), I('/memories/nl.txt', 0, 'top'),
  V('/memories/nl.txt'), R('/memories/nl.txt', '/memories/moved/nl.txt'), V('/memories/moved/nl.txt', [1, 1]), D('/memories/moved'), V('/memories'));
seq('limits: large-ish files',
  C('/memories/l/a.txt', Array.from({ length: 5000 }, (_, i) => `entry ${i}: ${'ü'.repeat(i % 40)}`).join('\n')),
  V('/memories/l/a.txt', [4990, -1]), V('/memories/l/a.txt', [1, 100]), S('/memories/l/a.txt', 'entry 2500:', 'ENTRY 2500:\nsplit'),
  I('/memories/l/a.txt', 4000, 'inserted\nlines'), V('/memories/l/a.txt', [3995, 4005]), S('/memories/l/a.txt', 'entry 1', 'x'), V('/memories/l'),
  C('/memories/l/long-line.txt', 'w'.repeat(100000)), V('/memories/l/long-line.txt'), S('/memories/l/long-line.txt', 'ww', 'x'),
  S('/memories/l/long-line.txt', 'w'.repeat(99999) + 'w', 'short'), V('/memories/l/long-line.txt'), V('/memories/l'));

// ---------------------------------------------------------------- mixed scenarios

seq('scenario: a typical agent session',
  V('/memories'), C('/memories/progress.md', '# Progress\n\n- [ ] step one\n- [ ] step two\n'), S('/memories/progress.md', '- [ ] step one', '- [x] step one'),
  I('/memories/progress.md', 5, '- [ ] step three'), V('/memories/progress.md'), C('/memories/notes/decisions.md', 'Use SQLite.\n'),
  R('/memories/notes/decisions.md', '/memories/notes/adr-001.md'), V('/memories'), D('/memories/progress.md'), V('/memories'));
seq('scenario: failed commands leave no trace',
  C('/memories/a.txt', 'a'), R('/memories/nope', '/memories/p/q/r'), R('/memories/a.txt', '/memories/a.txt/x'), C('/memories/a.txt/x/y', 'x'),
  R('/memories/d', '/memories/d/e'), C('/memories/d/e.txt', 'e'), R('/memories/d', '/memories/d/sub/deeper'), S('/memories/a.txt', 'zzz', 'y'),
  I('/memories/a.txt', 9, 'x'), V('/memories'), V('/memories/d'));
seq('scenario: recreate after delete and rename back and forth',
  C('/memories/x', '1'), D('/memories/x'), C('/memories/x', '2'), V('/memories/x'), C('/memories/x/y', 'under file'), D('/memories/x'),
  C('/memories/x/y', 'now a dir'), R('/memories/x', '/memories/z'), R('/memories/z', '/memories/x'), V('/memories'), R('/memories/x/y', '/memories/x'),
  D('/memories/x/y'), R('/memories/x', '/memories/x2'), V('/memories'));
seq('scenario: edits on a file moved between directories',
  C('/memories/a/f.txt', 'one\ntwo\n'), R('/memories/a/f.txt', '/memories/b/f.txt'), S('/memories/a/f.txt', 'one', '1'), S('/memories/b/f.txt', 'one', '1'),
  I('/memories/b/f.txt', 3, 'three'), R('/memories/b', '/memories/a/b'), V('/memories/a/b/f.txt'), V('/memories'), V('/memories/a'));
seq('scenario: directory sizes follow every change',
  C('/memories/d/a', 'aaaa'), V('/memories'), S('/memories/d/a', 'aa', 'x'), S('/memories/d/a', 'aaaa', 'bbbbbbbbbbbbbbbbbbbb'), V('/memories'),
  I('/memories/d/a', 0, 'y'.repeat(2000)), V('/memories'), C('/memories/d/e/.h', 'z'.repeat(500)), V('/memories'), R('/memories/d/e', '/memories/e'), V('/memories'),
  D('/memories/d/a'), V('/memories'));
seq('scenario: same name as file and directory in different places',
  C('/memories/n/n', 'file n'), C('/memories/n/m/n', 'file n in m'), V('/memories'), S('/memories/n/n', 'file', 'FILE'), R('/memories/n/m/n', '/memories/n/m/m'),
  R('/memories/n/m', '/memories/m'), V('/memories'));

seq('envelope: valid tool_use blocks (unicode id, no name, extra fields)',
  { body: { type: 'tool_use', id: 'toolu_ünï😀', name: 'memory', input: C('/memories/t.txt', 'via tool_use') } },
  { body: { type: 'tool_use', id: '', input: V('/memories/t.txt') } },
  { body: { type: 'tool_use', id: 'toolu_"quoted"\\', name: 'memory', input: S('/memories/t.txt', 'via', 'through') } },
  { body: { type: 'tool_use', id: 'toolu_x', name: 'memory', input: I('/memories/t.txt', 1, 'x'), cache_control: { type: 'ephemeral' } } },
  { body: { type: 'tool_use', id: 'toolu_y', name: 'memory', input: { command: 'copy' } } },
  { body: { type: 'tool_use', id: 'toolu_z', name: 'memory', input: D('/memories/../t.txt') } },
  V('/memories'));
seq('create: content with JSON-special characters',
  C('/memories/j.txt', '"quotes" \\backslash\\ \u2028line sep\u2029para sep\n{"json": [1, 2]}\n\ud83d\ude00\n'), V('/memories/j.txt'),
  S('/memories/j.txt', '\\backslash\\', '/slash/'), S('/memories/j.txt', '\u2028', '\u2029'), V('/memories/j.txt'));
seq('str_replace: partial graphemes and combining marks',
  C('/memories/g.txt', 'cafe\u0301\ne\u0301e\u0301\n👍🏽👍\n'), S('/memories/g.txt', 'e\u0301e', 'E'), S('/memories/g.txt', '\u0301', ''), S('/memories/g.txt', '👍', 'ok'),
  S('/memories/g.txt', '🏽', ''), S('/memories/g.txt', '👍👍', 'two'), V('/memories/g.txt'));
seq('listing: a directory holding only hidden entries',
  C('/memories/h/.a', 'aaa'), C('/memories/h/.b/c', 'cccc'), C('/memories/h/node_modules/x', 'xx'), C('/memories/h2/node_modules.txt', 'shown'),
  C('/memories/h2/Node_modules/y', 'shown too'), C('/memories/h2/.node_modules', 'hidden'), V('/memories'), V('/memories/h'), V('/memories/h2'));
seq('listing: names with URL and shell characters',
  ['#hash', '?q=1', 'a&b', '100%', 'semi;colon', 'quote"s', "apo'strophe", 'star*', '[br]', '{cb}', 'at@', 'eq=', 'plus+', 'comma,', 'colon:', '|pipe', '<lt>']
    .map((n) => C(`/memories/u/${n}`, n)),
  V('/memories/u'), V('/memories/u/?q=1'), R('/memories/u/#hash', '/memories/u/#moved'), D('/memories/u/a&b'), V('/memories/u'));
seq('rename: chains and deep trees',
  C('/memories/a/b/c/d/e/f.txt', 'f'), C('/memories/a/b/x.txt', 'x'), R('/memories/a/b/c', '/memories/c'), R('/memories/c/d', '/memories/a/b/c/d'),
  R('/memories/a', '/memories/z/y/x/a'), V('/memories'), V('/memories/z/y/x/a'), R('/memories/z/y/x/a/b/c/d/e/f.txt', '/memories/f.txt'), D('/memories/z'), V('/memories'));
seq('delete: deep trees then recreate below',
  C('/memories/t/a/b/c.txt', 'c'), C('/memories/t/a/d.txt', 'd'), C('/memories/t/e.txt', 'e'), D('/memories/t/a'), V('/memories/t'), C('/memories/t/a/b/c.txt', 'again'),
  V('/memories/t'), D('/memories/t/a/b/c.txt/'), D('/memories//t'), V('/memories'), C('/memories/t', 'now a file'), V('/memories'));
seq('insert: near the end of a big file',
  C('/memories/b.txt', Array.from({ length: 3000 }, (_, i) => `row ${i}`).join('\n')), I('/memories/b.txt', 3000, 'after last'), I('/memories/b.txt', 3002, 'x'),
  I('/memories/b.txt', 2999, 'before last'), V('/memories/b.txt', [2998, -1]), S('/memories/b.txt', 'row 2999', 'ROW'), V('/memories/b.txt', [2997, 3003]));

export const handWritten = sequences.length;

// ---------------------------------------------------------------- seeded random walks

const DIRS = ['/memories', '/memories/d', '/memories/d/e', '/memories/f', '/memories/node_modules', '/memories/.cfg', '/memories/ü'];
const NAMES = ['a.txt', 'b.md', 'ü.txt', '.h', 'x', 'e', '😀', 'A'];
const TEXTS = ['', 'one', 'one\ntwo\nthree\n', 'α\nβ\nγ', 'x x x\nx\n', 'line1\r\nline2\r\n', '😀 smile\nend', 'a\n\nb\n\n', 'same\nsame\nsame',
  'tab\there\n', 'e\u0301\u05e9\u05dc\n'];
const PIECES = ['x', 'new', '', 'two\nlines', '\n', 'ü', '😀', '$&', 'same', 'a\n\n'];

export function randomWalk(k, length = 30) {
  return {
    name: `random walk #${k}`,
    seed: 0x5eed0000 + k,
    length,
    generate(state, rng) {
      const int = (lo, hi) => lo + Math.floor(rng() * (hi - lo + 1));
      const pick = (a) => a[int(0, a.length - 1)];
      const all = [...state.entries.keys()].filter((p) => p !== '/memories');
      const files = all.filter((p) => state.kind(p) === 'file');
      const dirs = all.filter((p) => state.kind(p) === 'dir');
      const fresh = () => (files.length && rng() < 0.08 ? `${pick(files)}/${pick(NAMES)}` : `${pick(DIRS)}/${pick(NAMES)}`);
      const existing = (list, p) => (list.length && rng() < p ? pick(list) : fresh());
      const spell = (p) => {
        const r = rng();
        if (r < 0.06) return `${p}/`;
        if (r < 0.1) return p.replace('/memories/', '/memories//');
        return p;
      };
      const op = rng();
      if (op < 0.22) return C(spell(fresh()), pick(TEXTS));
      if (op < 0.4) {
        const p = spell(rng() < 0.1 ? '/memories' : existing(all, 0.8));
        return rng() < 0.25 ? V(p, [int(-1, 4), pick([-1, int(-2, 6)])]) : V(p);
      }
      if (op < 0.6) {
        const p = existing(files, 0.85);
        const text = state.get(p)?.data?.toString('utf8') ?? '';
        const chars = Array.from(text);
        let old = pick(PIECES.filter(Boolean));
        if (chars.length && rng() < 0.75) {
          const start = int(0, chars.length - 1);
          old = chars.slice(start, start + int(1, Math.min(6, chars.length - start))).join('');
        }
        return S(spell(p), old, pick(PIECES));
      }
      if (op < 0.75) {
        const p = existing(files, 0.85);
        const n = state.get(p)?.data ? state.get(p).data.toString('utf8').split('\n').length : 2;
        return I(spell(p), int(-1, n + 1), pick(PIECES));
      }
      if (op < 0.88) {
        const src = existing(all, 0.85);
        const r = rng();
        let dst = fresh();
        if (r < 0.15 && all.length) dst = pick(all);
        else if (r < 0.25) dst = `${src}/${pick(NAMES)}`;
        else if (r < 0.45 && dirs.length) dst = `${pick(dirs)}/${pick(NAMES)}`;
        return R(spell(src), spell(dst));
      }
      return D(spell(rng() < 0.03 ? '/memories' : existing(all, 0.8)));
    },
  };
}

for (let k = 0; k < 60; k++) sequences.push(randomWalk(k));

export { sequences };
