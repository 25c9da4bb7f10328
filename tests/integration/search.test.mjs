// Proves full-text search (GET /v1/search, md_search.h) over real HTTP on loopback against a
// temp SQLite database (FTS5 word index), and as pg/integration/search against a fresh
// PostgreSQL database (a GIN index of words), with the same answers in the same order:
//   - exact hits and misses, the whole JSON answer compared: a word (ASCII letters without
//     case), several words (every one must be in the file, anywhere), a phrase in double quotes
//     (the words together), a term with LIKE's wildcards taken literally, non-ASCII text
//     ("Zürich" with its case, "東京", "東京都"), matching lines numbered as view numbers
//     them, long lines cut around the match;
//   - the word rule: a term matches where a word begins (a prefix), never inside a word
//     ("illing", "京都" in "東京都に住む"); ASCII punctuation and _ separate words; a term
//     starting with a separator matches anywhere; words of 1-2 characters (a scan);
//   - a search right after an acknowledged write finds it (create, str_replace, delete);
//   - a directory of 1,000 files renamed: every file found under its new path by a word they
//     share (paged through) and by a word of one file, none under the old path; then the
//     directory deleted: none found;
//   - tenants apart; the path filter (a directory, a file, a path with no entry);
//   - pagination: limit and cursor, pages without overlap that add up to every hit; a cursor of
//     another search refused;
//   - ranking: the file with more occurrences first (the same order on both backends);
//   - the text rendering for a model (format=text), exact;
//   - every refusal (q missing, empty, too long, too many terms, unmatched quote, control
//     character; limit; cursor; path; format): its exact 400 body, nothing changed;
//   - --search off: 404 with its text, writes still served; back to --search on over the same
//     database: the index is rebuilt at start and finds what was written while it was off;
//   - a tenant of 10,000 files (searched without its tenant token on SQLite) and one of 9,999
//     (with it) find their own files only;
//   - an API key of the read scope may search (--auth keys).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { startServer, BIN } from '../lib/server.mjs';
import { isPg, psql } from '../lib/pg.mjs';

// Under valgrind (scripts/valgrind.sh) the two tests of sizes below are left out: they run the same code
// as the smaller cases with more data (20,000 writes; 2.5 MiB of words), which took minutes
// under memcheck; the plain and ASan runs keep them. The directory renamed and deleted there has
// 150 files instead of 1,000 (still two pages of hits).
const underValgrind = (process.env.MD_TEST_WRAPPER ?? '').includes('valgrind');

function client(srv, tenant) {
  return {
    async write(cmd) {
      const r = await srv.post(cmd, { tenant });
      assert.equal(r.status, 200, `${JSON.stringify(cmd)}: ${r.text}`);
      assert.equal(r.json.is_error, false, r.text);
      return r;
    },
    search: (query) => srv.request('GET', `/v1/search?${query}`, { headers: { 'x-tenant-id': tenant } }),
    async hits(query) {
      const r = await this.search(query);
      assert.equal(r.status, 200, r.text);
      return r.json;
    },
    async paths(query) {
      return (await this.hits(query)).hits.map((h) => h.path);
    },
  };
}
const q = (s) => encodeURIComponent(s);

// Every hit of a search, page after page; asserts the pages do not overlap.
async function allPaths(c, query, limit) {
  const seen = [];
  let cursor = null;
  for (;;) {
    const page = await c.hits(`${query}&limit=${limit}${cursor ? `&cursor=${q(cursor)}` : ''}`);
    assert.ok(page.hits.length <= limit);
    seen.push(...page.hits.map((h) => h.path));
    cursor = page.next_cursor;
    if (!cursor) break;
    assert.equal(page.hits.length, limit);
  }
  assert.equal(new Set(seen).size, seen.length, 'a hit on two pages');
  return seen;
}

describe('GET /v1/search', () => {
  let srv, alice, bob;
  before(async () => {
    srv = await startServer({ args: ['--tenant-max-files', '5000'] });
    alice = client(srv, 'alice');
    bob = client(srv, 'bob');
    await alice.write({ command: 'create', path: '/memories/notes/billing.md',
      file_text: 'Billing\nThe billing cycle starts on the 1st.\nnothing here\nBILLING again: 100% paid_in_full\n' });
    await alice.write({ command: 'create', path: '/memories/notes/cycle.md',
      file_text: 'A cycle of billing, in other words.\n' });
    await alice.write({ command: 'create', path: '/memories/travel/zurich.md',
      file_text: 'Trip to Zürich in May\n東京都に住む\n東京 tower\n' });
    await alice.write({ command: 'create', path: '/memories/long.txt',
      file_text: `${'x'.repeat(300)} needle ${'y'.repeat(300)}\n` });
    await bob.write({ command: 'create', path: '/memories/bob.md', file_text: 'billing for bob\n' });
  });
  after(async () => srv && srv.stop());

  test('exact hits and misses: words, phrases, wildcards taken literally, the JSON answer', async () => {
    // Both words, anywhere in the file; ranked by the terms' occurrences (billing.md: 3 billing
    // and 1 cycle; cycle.md: 1 each), the same on both backends.
    const both = await alice.hits(`q=${q('cycle billing')}`);
    assert.deepEqual(both.hits.map((h) => h.path), ['/memories/notes/billing.md', '/memories/notes/cycle.md']);
    assert.deepEqual(both.hits.find((h) => h.path === '/memories/notes/billing.md'), {
      path: '/memories/notes/billing.md', matching_lines: 3, lines: [
        { line: 1, text: 'Billing' },
        { line: 2, text: 'The billing cycle starts on the 1st.' },
        { line: 4, text: 'BILLING again: 100% paid_in_full' },
      ] });
    // A phrase: the words together, in this order.
    assert.deepEqual(await alice.hits(`q=${q('"billing cycle"')}`), {
      query: '"billing cycle"', path: '/memories', next_cursor: null,
      hits: [{ path: '/memories/notes/billing.md', matching_lines: 1, lines: [{ line: 2, text: 'The billing cycle starts on the 1st.' }] }],
    });
    assert.deepEqual(await alice.paths(`q=${q('"cycle of billing"')}`), ['/memories/notes/cycle.md']);
    assert.deepEqual(await alice.paths(`q=${q('"cycle billing"')}`), []);
    // Misses: a word nowhere, one word of two missing.
    assert.deepEqual(await alice.hits('q=invoice'), { query: 'invoice', path: '/memories', hits: [], next_cursor: null });
    assert.deepEqual(await alice.paths(`q=${q('billing invoice')}`), []);
    // % and _ are characters, not LIKE's wildcards.
    assert.deepEqual(await alice.paths(`q=${q('100%')}`), ['/memories/notes/billing.md']);
    assert.deepEqual(await alice.paths(`q=${q('paid_in')}`), ['/memories/notes/billing.md']);
    assert.deepEqual(await alice.paths(`q=${q('0%_')}`), []);
    assert.deepEqual(await alice.paths(`q=${q('paidxin')}`), []);
  });

  test('words: a term matches where a word begins (a prefix), not inside a word', async () => {
    // A prefix of a word, any case: all three lines of billing.md, one of cycle.md.
    const bill = await alice.hits('q=BILL');
    assert.deepEqual(bill.hits.map((h) => [h.path, h.matching_lines]), [['/memories/notes/billing.md', 3], ['/memories/notes/cycle.md', 1]]);
    // Not inside a word: nothing, on both backends.
    assert.deepEqual(await alice.paths('q=illing'), []);
    assert.deepEqual(await alice.paths('q=ycle'), []);
    assert.deepEqual(await alice.paths(`q=${q('"ing cycle"')}`), []);
    // ASCII punctuation and _ separate words: the parts of paid_in_full, the 1st.
    assert.deepEqual(await alice.paths('q=full'), ['/memories/notes/billing.md']);
    assert.deepEqual(await alice.paths(`q=${q('in_full')}`), ['/memories/notes/billing.md']);
    assert.deepEqual(await alice.paths(`q=${q('"1st."')}`), ['/memories/notes/billing.md']);
    assert.deepEqual(await alice.paths('q=tarts'), []);
    // A term that starts with a separator matches wherever it occurs.
    assert.deepEqual(await alice.paths(`q=${q('_full')}`), ['/memories/notes/billing.md']);
    // Words of 1 or 2 characters (not looked up in the index): the same rule, found by a scan.
    assert.deepEqual((await alice.hits(`q=${q('in')}`)).hits.map((h) => [h.path, h.matching_lines]),
      [['/memories/notes/billing.md', 1], ['/memories/notes/cycle.md', 1], ['/memories/travel/zurich.md', 1]]);
    assert.deepEqual(await alice.paths(`q=${q('in bill')}`), ['/memories/notes/billing.md', '/memories/notes/cycle.md']);
    // Each term on its own: a phrase's last word is a prefix too, its others whole words.
    assert.deepEqual(await alice.paths(`q=${q('"billing cyc"')}`), ['/memories/notes/billing.md']);
    assert.deepEqual(await alice.paths(`q=${q('"bill cycle"')}`), []);
  });

  test('non-ASCII text: Zürich, 東京 (shorter than a trigram), 東京都', async () => {
    // Non-ASCII letters compared exactly: their case too, on both backends.
    assert.deepEqual(await alice.paths(`q=${q('zürich')}`), ['/memories/travel/zurich.md']);
    assert.deepEqual(await alice.paths(`q=${q('ZÜRICH')}`), []);
    assert.deepEqual(await alice.paths(`q=${q('rich')}`), []);
    // Text without spaces is one word up to the next ASCII separator: found from its start only.
    assert.deepEqual(await alice.paths(`q=${q('京都')}`), []);
    assert.deepEqual(await alice.paths(`q=${q('住む')}`), []);
    assert.deepEqual(await alice.hits(`q=${q('Zürich')}`), {
      query: 'Zürich', path: '/memories', next_cursor: null,
      hits: [{ path: '/memories/travel/zurich.md', matching_lines: 1, lines: [{ line: 1, text: 'Trip to Zürich in May' }] }],
    });
    assert.deepEqual(await alice.paths(`q=${q('Zurich')}`), []);
    assert.deepEqual(await alice.hits(`q=${q('東京')}`), {
      query: '東京', path: '/memories', next_cursor: null,
      hits: [{ path: '/memories/travel/zurich.md', matching_lines: 2, lines: [{ line: 2, text: '東京都に住む' }, { line: 3, text: '東京 tower' }] }],
    });
    assert.deepEqual(await alice.hits(`q=${q('東京都')}`), {
      query: '東京都', path: '/memories', next_cursor: null,
      hits: [{ path: '/memories/travel/zurich.md', matching_lines: 1, lines: [{ line: 2, text: '東京都に住む' }] }],
    });
    assert.deepEqual(await alice.paths(`q=${q('大阪')}`), []);
  });

  test('a file with NUL bytes: its words on both sides of them are found', async () => {
    // PostgreSQL's text cannot hold NUL: memoryd_text reads each as a space (memoryd_text_nul).
    await alice.write({ command: 'create', path: '/memories/nul.bin', file_text: 'damson\u0000nectarine\u0000\u0000tart\n' });
    for (const word of ['damson', 'nectarine', 'tart']) assert.deepEqual(await alice.paths(`q=${word}`), ['/memories/nul.bin'], word);
    assert.deepEqual(await alice.paths('q=damsonnectarine'), []);
    await alice.write({ command: 'delete', path: '/memories/nul.bin' });
  });

  test('a long line is cut around its match', async () => {
    const h = await alice.hits('q=needle');
    assert.equal(h.hits.length, 1);
    const text = `...${'x'.repeat(39)} needle ${'y'.repeat(160 - 39 - 1 - 6 - 1)}...`;
    assert.deepEqual(h.hits[0], { path: '/memories/long.txt', matching_lines: 1, lines: [{ line: 1, text }] });
  });

  test('a search right after an acknowledged write finds it', async () => {
    await alice.write({ command: 'create', path: '/memories/fresh.md', file_text: 'kumquat season\n' });
    assert.deepEqual(await alice.paths('q=kumquat'), ['/memories/fresh.md']);
    await alice.write({ command: 'str_replace', path: '/memories/fresh.md', old_str: 'kumquat', new_str: 'loquat' });
    assert.deepEqual(await alice.paths('q=kumquat'), []);
    assert.deepEqual(await alice.paths('q=loquat'), ['/memories/fresh.md']);
    await alice.write({ command: 'insert', path: '/memories/fresh.md', insert_line: 0, insert_text: 'persimmon\n' });
    assert.deepEqual((await alice.hits('q=persimmon')).hits, [{ path: '/memories/fresh.md', matching_lines: 1, lines: [{ line: 1, text: 'persimmon' }] }]);
    await alice.write({ command: 'delete', path: '/memories/fresh.md' });
    assert.deepEqual(await alice.paths('q=loquat'), []);
  });

  test('writes sharing a batch (create, str_replace, delete, a path made again): the index is exact at the commit', async () => {
    // 60 writes in flight at once land in shared batches (group commit), several of them on one
    // file in one batch. A search right after them is exact; on SQLite the index itself catches
    // up beside the writer (from the notes the triggers made, search_pending) once the writes
    // pause, and must then hold exactly the files as they are.
    const c = client(srv, 'storm');
    const file = (i) => `/memories/storm/s${i}.md`;
    await Promise.all(Array.from({ length: 60 }, (_, i) => c.write({ command: 'create', path: file(i), file_text: `quince ${i}\nbramble\n` })));
    const model = new Map(Array.from({ length: 60 }, (_, i) => [file(i), `quince ${i}\nbramble\n`]));
    await Promise.all(Array.from({ length: 60 }, async (_, i) => {
      if (i % 4 === 0) {
        await c.write({ command: 'delete', path: file(i) });
        model.delete(file(i));
      } else if (i % 4 === 1) {
        await c.write({ command: 'str_replace', path: file(i), old_str: 'bramble', new_str: 'sorrel' });
        model.set(file(i), `quince ${i}\nsorrel\n`);
      } else if (i % 4 === 2) {
        await c.write({ command: 'delete', path: file(i) });
        await c.write({ command: 'create', path: file(i), file_text: 'tamarind\n' });
        model.set(file(i), 'tamarind\n');
      } else {
        await c.write({ command: 'create', path: `/memories/storm/n${i}.md`, file_text: 'bramble\n' });
        model.set(`/memories/storm/n${i}.md`, 'bramble\n');
      }
    }));
    for (const word of ['quince', 'bramble', 'sorrel', 'tamarind']) {
      const want = [...model].filter(([, text]) => text.split(/\W+/).includes(word)).map(([p]) => p).sort();
      assert.deepEqual((await allPaths(c, `q=${word}`, 100)).sort(), want, word);
    }
    if (!isPg()) {
      // The index itself, read with the sqlite3 CLI: for each word, the files it lists are the
      // tenant's files that hold it (a deleted or rewritten file's old words would be listed
      // too, were they not taken out); no note left behind.
      const sql = (query) => execFileSync('sqlite3', ['-readonly', srv.dbPath, query], { encoding: 'utf8' }).trim();
      const tenant = sql("SELECT id FROM tenants WHERE name = 'storm'");
      for (let i = 0; i < 200 && sql('SELECT count(*) FROM search_pending') !== '0'; i++) await sleep(50);
      assert.equal(sql('SELECT count(*) FROM search_pending'), '0');
      for (const word of ['quince', 'bramble', 'sorrel', 'tamarind']) {
        const indexed = sql(`SELECT e.path FROM entries_search s JOIN entries e ON e.id = s.rowid WHERE entries_search MATCH '${word} AND "\u{e000}${tenant}"' ORDER BY e.path`);
        const want = [...model].filter(([, text]) => text.split(/\W+/).includes(word)).map(([p]) => p).sort();
        assert.deepEqual(indexed ? indexed.split('\n') : [], want, `index of ${word}`);
        const all = sql(`SELECT count(*) FROM entries_search WHERE entries_search MATCH '${word}'`);
        assert.equal(all, String(want.length), `every tenant's files listed for ${word}`);
      }
    } else {
      // The index's expression evaluates with an empty search_path, as autovacuum's ANALYZE and
      // a restore of pg_dump run it (memoryd_words calls no function of memoryd's own), and
      // gives each file its words.
      psql(srv.dbPath, "SET search_path = ''; ANALYZE public.entries;");
      const words = psql(srv.dbPath, "SET search_path = ''; SELECT public.memoryd_words(content)::text FROM public.entries e"
        + " JOIN public.tenants t ON t.id = e.tenant WHERE t.name = 'storm' AND e.path = '/memories/storm/s1.md'").trim();
      assert.equal(words, "'1' 'quince' 'sorrel'");
    }
  });

  // (Under valgrind 150 files: still two pages of hits.)
  const DIR_FILES = underValgrind ? 150 : 1000;
  test(`a directory of ${DIR_FILES.toLocaleString('en-US')} files renamed, then deleted: the index follows`, async () => {
    const N = DIR_FILES;
    const name = (i) => `f${String(i).padStart(4, '0')}.txt`;
    for (let i = 0; i < N; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, k) => alice.write({ command: 'create',
        path: `/memories/big/${name(i + k)}`, file_text: `haystack\nitem-${i + k}-end\n` })));
    }
    const before = await allPaths(alice, `q=haystack&path=${q('/memories/big')}`, 100);
    assert.equal(before.length, N);
    await alice.write({ command: 'rename', old_path: '/memories/big', new_path: '/memories/moved' });
    const moved = await allPaths(alice, 'q=haystack', 100);
    assert.deepEqual(moved.sort(), Array.from({ length: N }, (_, i) => `/memories/moved/${name(i)}`));
    assert.deepEqual(await alice.paths(`q=haystack&path=${q('/memories/big')}`), []);
    const probe = Math.min(500, N - 50); // a word of one file
    assert.deepEqual((await alice.hits(`q=item-${probe}-end`)).hits, [{ path: `/memories/moved/${name(probe)}`, matching_lines: 1, lines: [{ line: 2, text: `item-${probe}-end` }] }]);
    await alice.write({ command: 'delete', path: '/memories/moved' });
    assert.deepEqual(await alice.paths('q=haystack'), []);
    assert.deepEqual(await alice.paths(`q=item-${probe}-end`), []);
  });

  test('tenants apart; the path filter', async () => {
    assert.deepEqual(await bob.paths('q=billing'), ['/memories/bob.md']);
    assert.deepEqual(await bob.paths('q=Zürich'), []);
    assert.deepEqual(await client(srv, 'carol').hits('q=billing'), { query: 'billing', path: '/memories', hits: [], next_cursor: null });
    assert.deepEqual(await alice.paths(`q=billing&path=${q('/memories/notes')}`).then((p) => p.sort()), ['/memories/notes/billing.md', '/memories/notes/cycle.md']);
    assert.deepEqual(await alice.paths(`q=billing&path=${q('/memories/notes/cycle.md')}`), ['/memories/notes/cycle.md']);
    assert.deepEqual(await alice.hits(`q=billing&path=${q('/memories/travel/')}`), { query: 'billing', path: '/memories/travel', hits: [], next_cursor: null });
    assert.deepEqual(await alice.paths(`q=billing&path=${q('/memories/nothing')}`), []);
    // /memories/notes is not a prefix match of /memories/notes2.
    await alice.write({ command: 'create', path: '/memories/notes2/x.md', file_text: 'billing\n' });
    assert.equal((await alice.paths(`q=billing&path=${q('/memories/notes')}`)).length, 2);
    await alice.write({ command: 'delete', path: '/memories/notes2' });
  });

  test('pagination: limit and cursor; ranking by occurrences', async () => {
    for (let i = 1; i <= 5; i++)
      await alice.write({ command: 'create', path: `/memories/rank/r${i}.md`, file_text: `${'walrus '.repeat(i)}\n` });
    const first = await alice.hits(`q=walrus&limit=2`);
    assert.deepEqual(first.hits.map((h) => h.path), ['/memories/rank/r5.md', '/memories/rank/r4.md']);
    assert.match(first.next_cursor, /^2-[0-9a-f]{16}$/);
    const all = await allPaths(alice, 'q=walrus', 2);
    assert.deepEqual(all, [5, 4, 3, 2, 1].map((i) => `/memories/rank/r${i}.md`));
    const last = await alice.hits(`q=walrus&limit=2&cursor=${first.next_cursor.replace(/^2-/, '4-')}`);
    assert.deepEqual([last.hits.map((h) => h.path), last.next_cursor], [['/memories/rank/r1.md'], null]);
    // Past the end: no hits.
    assert.deepEqual((await alice.hits(`q=walrus&cursor=${first.next_cursor.replace(/^2-/, '9-')}`)).hits, []);
    // The default limit is 10.
    for (let i = 6; i <= 12; i++)
      await alice.write({ command: 'create', path: `/memories/rank/r${i}.md`, file_text: 'walrus\n' });
    const page = await alice.hits('q=walrus');
    assert.equal(page.hits.length, 10);
    assert.match(page.next_cursor, /^10-/);
    // A cursor belongs to its query and path.
    const other = await alice.search(`q=walru&cursor=${first.next_cursor}`);
    assert.deepEqual([other.status, other.json], [400, { error: 'Parameter `cursor` must be the next_cursor of a page of this same search (the same q and path)' }]);
    const otherPath = await alice.search(`q=walrus&path=${q('/memories/rank')}&cursor=${first.next_cursor}`);
    assert.equal(otherPath.status, 400);
    await alice.write({ command: 'delete', path: '/memories/rank' });
  });

  test('the text rendering for a model (format=text)', async () => {
    const r = await alice.search(`q=${q('billing cycle')}&limit=1&format=text`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'text/plain; charset=utf-8');
    const cursor = (await alice.hits(`q=${q('billing cycle')}&limit=1`)).next_cursor;
    const top = (await alice.hits(`q=${q('billing cycle')}&limit=1`)).hits[0];
    const lines = top.lines.map((l) => `${String(l.line).padStart(6)}\t${l.text}\n`).join('');
    assert.equal(r.text, `Files in /memories that match billing cycle (best first, 1 to 1):\n${top.path}\n${lines}More files match: search again with cursor ${cursor}\n`);
    const b = await alice.search(`q=${q('"billing cycle"')}&format=text`);
    assert.equal(b.text, 'Files in /memories that match "billing cycle" (best first, 1 to 1):\n'
      + '/memories/notes/billing.md\n     2\tThe billing cycle starts on the 1st.\n');
    const three = await alice.search(`q=billing&path=${q('/memories/notes/billing.md')}&format=text`);
    assert.equal(three.text, 'Files in /memories/notes/billing.md that match billing (best first, 1 to 1):\n'
      + '/memories/notes/billing.md\n     1\tBilling\n     2\tThe billing cycle starts on the 1st.\n     4\tBILLING again: 100% paid_in_full\n');
    const none = await alice.search('q=invoice&format=text');
    assert.equal(none.text, 'No file in /memories matches invoice.\n');
  });

  test('refusals: exact 400 bodies, nothing changed', async () => {
    const listing = async () => (await srv.post({ command: 'view', path: '/memories' }, { tenant: 'alice' })).text;
    const before = await listing();
    const cases = [
      ['', 'Parameter `q` is required: the words to search for'],
      ['q=', 'Parameter `q` is required: the words to search for'],
      [`q=${q('   ')}`, 'Parameter `q` is required: the words to search for'],
      [`q=${q('""')}`, 'Parameter `q` is required: the words to search for'],
      [`q=${'a'.repeat(257)}`, 'Parameter `q` is too long: at most 256 bytes'],
      [`q=${q('a b c d e f g h i')}`, 'Parameter `q` has too many terms: at most 8'],
      [`q=${q('"billing cycle')}`, 'Parameter `q` has a double quote without its closing one'],
      [`q=${q('bill\ting')}`, 'Parameter `q` must not contain control characters'],
      [`q=${q('bill\ning')}`, 'Parameter `q` must not contain control characters'],
      ['q=%FF%FE', 'Parameter `q` must be UTF-8'],
      ['q=billing&limit=0', 'Parameter `limit` must be an integer from 1 to 100'],
      ['q=billing&limit=101', 'Parameter `limit` must be an integer from 1 to 100'],
      ['q=billing&limit=ten', 'Parameter `limit` must be an integer from 1 to 100'],
      ['q=billing&cursor=abc', 'Parameter `cursor` must be the next_cursor of a page of this same search (the same q and path)'],
      ['q=billing&cursor=0-0000000000000000', 'Parameter `cursor` must be the next_cursor of a page of this same search (the same q and path)'],
      ['q=billing&cursor=', 'Parameter `cursor` must be the next_cursor of a page of this same search (the same q and path)'],
      ['q=billing&path=/etc', 'Path must start with /memories, got: /etc'],
      ['q=billing&format=xml', 'Parameter `format` must be json or text'],
    ];
    for (const [query, error] of cases) {
      const r = await alice.search(query);
      assert.deepEqual([r.status, r.json], [400, { error }], query);
    }
    const dots = await alice.search(`q=billing&path=${q('/memories/../etc')}`);
    assert.equal(dots.status, 400);
    assert.equal(await listing(), before);
    const post = await srv.request('POST', '/v1/search?q=billing', { headers: { 'x-tenant-id': 'alice' } });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET');
  });
});

describe('files the index keeps otherwise: long words, large files, words past what it holds', { skip: underValgrind && 'sizes left to the plain and ASan runs' }, () => {
  // PostgreSQL keeps the words of a file of at most 300,000 bytes whose words have at most 400
  // bytes as they are; other files' words cut to 100 characters; a file whose words would not
  // fit in a tsvector (1 MB) as '#all', a candidate of every search. SQLite's FTS5 has no such
  // limits. Either way every such file is found by its words, and only by them.
  let srv, c;
  before(async () => {
    srv = await startServer({ args: ['--max-file', String(3 << 20), '--max-body', String(8 << 20)] });
    c = client(srv, 'sizes');
  });
  after(async () => srv && srv.stop());

  test('a word of 500 letters; a file of 400,000 bytes; a file of 2.5 MiB of distinct words', async () => {
    const long = `Q${'w'.repeat(499)}`;
    await c.write({ command: 'create', path: '/memories/long.md', file_text: `start ${long} end\n` });
    await c.write({ command: 'create', path: '/memories/big.md', file_text: `${'filler words here\n'.repeat(22000)}tamarillo\n` });
    let seed = 1;
    const word = () => Array.from({ length: 8 }, () => { seed = (seed * 1103515245 + 12345) % 2147483648; return 'abcdefghijklmnopqrstuvwxyz'[seed % 26]; }).join('');
    const words = Array.from({ length: 280000 }, word);
    await c.write({ command: 'create', path: '/memories/huge.md', file_text: `${words.join(' ')}\nkiwano\n` });
    assert.deepEqual(await c.paths(`q=${long.slice(0, 150)}`), ['/memories/long.md']);
    // q holds 256 bytes at most: a word of 250 letters, as a prefix and followed by nothing else.
    assert.deepEqual(await c.paths(`q=${long.slice(0, 250)}`), ['/memories/long.md']);
    assert.deepEqual(await c.paths(`q=${q(`start ${long.slice(0, 240)}`)}`), ['/memories/long.md']);
    assert.deepEqual(await c.paths(`q=${long.slice(0, 40).toLowerCase()}`), ['/memories/long.md']);
    assert.deepEqual(await c.paths(`q=${q(`${long.slice(0, 200)}x`)}`), []);
    assert.deepEqual(await c.paths('q=tamarillo'), ['/memories/big.md']);
    assert.deepEqual(await c.paths('q=kiwano'), ['/memories/huge.md']);
    assert.deepEqual(await c.paths(`q=${words[123456]}`), ['/memories/huge.md']);
    assert.deepEqual(await c.paths('q=filler'), ['/memories/big.md']);
    assert.deepEqual(await c.paths('q=persimmon'), []);
  });
});

// The index --search on builds at start is built while memoryd serves (md_store_build): wait
// for its log line before searching.
const built = (srv) => srv.waitForLogs((logs) => logs.some((l) => /^search index (re)?built/.test(l.msg)), 'the search index built', 60000);

describe('--search off, then on again over the same database', () => {
  test('404 while off, writes served; the index rebuilt at start finds them', async () => {
    const srv = await startServer({ args: ['--search', 'off'] });
    const c = client(srv, 'alice');
    await c.write({ command: 'create', path: '/memories/a.md', file_text: 'written while off: marmalade\n' });
    const r = await c.search('q=marmalade');
    assert.deepEqual([r.status, r.json], [404, { error: 'Search is turned off on this server (memoryd --search off)' }]);
    await srv.stop();
    const again = await startServer({ db: srv.dbPath });
    try {
      await built(again);
      assert.deepEqual(await client(again, 'alice').paths('q=marmalade'), ['/memories/a.md']);
      await client(again, 'alice').write({ command: 'rename', old_path: '/memories/a.md', new_path: '/memories/b.md' });
      assert.deepEqual(await client(again, 'alice').paths('q=marmalade'), ['/memories/b.md']);
    } finally {
      await again.stop();
    }
    // Off again: the index is dropped (404), and on once more: rebuilt.
    const off = await startServer({ db: srv.dbPath, args: ['--search', 'off'] });
    assert.equal((await client(off, 'alice').search('q=marmalade')).status, 404);
    await client(off, 'alice').write({ command: 'delete', path: '/memories/b.md' });
    await off.stop();
    const on = await startServer({ db: srv.dbPath });
    await built(on);
    assert.deepEqual(await client(on, 'alice').paths('q=marmalade'), []);
    await on.stop();
  });

  test('while the index is built at start memoryd serves: /healthz 200, /readyz 503, search 503, views; then ready; its progress logged', { skip: !isPg() && 'PostgreSQL only (pg/integration/search): to hold the build at a point the test chooses, another session holds a lock CREATE INDEX waits for and memoryd\'s start does not; SQLite has one write lock, which memoryd\'s start takes too' }, async () => {
    const srv = await startServer({ args: ['--search', 'off'] });
    await client(srv, 'alice').write({ command: 'create', path: '/memories/q.md', file_text: 'quince\n' });
    await srv.stop();
    // SHARE UPDATE EXCLUSIVE on entries: CREATE INDEX's SHARE lock waits for it; memoryd's reads,
    // writes and prepared statements do not.
    const holder = spawn('psql', ['-X', '-q', '-A', '-t', '-d', srv.dbPath], { stdio: ['pipe', 'pipe', 'inherit'] });
    let on = null;
    try {
      let out = '';
      holder.stdout.on('data', (d) => { out += d; });
      holder.stdin.write("BEGIN; LOCK TABLE entries IN SHARE UPDATE EXCLUSIVE MODE; SELECT 'locked';\n");
      for (let i = 0; !out.includes('locked'); i++) {
        assert.ok(i < 1000, 'the lock was not taken');
        await new Promise((r) => setTimeout(r, 10));
      }
      // MEMORYD_PROGRESS_MS=0: a progress line at every reading of the build (from its first,
      // made at once: the build waits for the lock then, with nothing done).
      on = await startServer({ db: srv.dbPath, env: { MEMORYD_PROGRESS_MS: '0' } });
      const health = await on.request('GET', '/healthz');
      const ready = await on.request('GET', '/readyz');
      assert.deepEqual([health.status, ready.status, ready.text], [200, 503, '{"status":"building the search index"}']);
      const r = await client(on, 'alice').search('q=quince');
      assert.deepEqual([r.status, r.json], [503, { error: 'The search index is being built (memoryd --search on, started on a database without it); retry shortly' }]);
      const v = await on.post({ command: 'view', path: '/memories/q.md' }, { tenant: 'alice' });
      assert.equal(v.status, 200, v.text);
      holder.stdin.end('COMMIT;\n');
      await built(on);
      assert.equal((await on.request('GET', '/readyz')).status, 200);
      assert.deepEqual(await client(on, 'alice').paths('q=quince'), ['/memories/q.md']);
      assert.ok(on.logs.findIndex((l) => l.msg === 'listening') < on.logs.findIndex((l) => /^search index (re)?built/.test(l.msg)));
      // Its progress (pg_stat_progress_create_index: the table's blocks scanned), then done.
      const lines = on.logs.filter((l) => l.work === 'search index');
      assert.deepEqual([lines[0].msg, lines[0].unit, lines[0].done], ['progress', 'blocks', 0]);
      assert.deepEqual([lines.at(-1).msg, lines.at(-1).unit], ['done', 'blocks']);
      assert.ok(lines.every((l) => l.done <= (l.total || l.done)), JSON.stringify(lines));
    } finally {
      holder.kill();
      if (on) await on.stop();
    }
  });

  test('SQLite: the rebuild at start logs its progress in files indexed, then done', { skip: isPg() && 'SQLite only: SQLite indexes the files itself and counts them; PostgreSQL\'s one CREATE INDEX reports blocks scanned, asserted by the test above (PostgreSQL only)' }, async () => {
    const srv = await startServer({ args: ['--search', 'off'] });
    for (let i = 0; i < 5; i++) await client(srv, 'alice').write({ command: 'create', path: `/memories/p${i}.md`, file_text: `pear ${i}\n` });
    await client(srv, 'alice').write({ command: 'create', path: '/memories/dir/p5.md', file_text: 'pear 5\n' });
    await srv.stop();
    // MEMORYD_PROGRESS_MS=0: a line for every chunk of files indexed (one here).
    const on = await startServer({ db: srv.dbPath, env: { MEMORYD_PROGRESS_MS: '0' } });
    try {
      await built(on);
      const lines = on.logs.filter((l) => l.work === 'search index').map((l) => [l.msg, l.unit, l.total, l.done]);
      assert.deepEqual(lines, [['progress', 'files', 6, 6], ['done', 'files', 6, 6]]);
      assert.equal((await client(on, 'alice').paths('q=pear')).length, 6);
    } finally {
      await on.stop();
    }
  });

  test('PostgreSQL: writes note nothing; a search sees the files of the feed after the index\'s cursor unindexed (a directory\'s path: every file below it), then the index takes them', { skip: !isPg() && 'PostgreSQL only: SQLite\'s index steps are the writer\'s, tested both before and after a step in unit/test_store (test_search_apart)' }, async () => {
    // MEMORYD_INDEX_EVERY_MS: the indexer never runs, so every file written stays unindexed.
    const held = await startServer({ env: { MEMORYD_INDEX_EVERY_MS: '100000000' } });
    const uri = held.dbPath;
    const c = client(held, 'sa');
    const write = (cmd) => c.write(cmd);
    await write({ command: 'create', path: '/memories/s/a.txt', file_text: 'walnut almond\n' });
    await write({ command: 'create', path: '/memories/s/b.txt', file_text: 'almond\n' });
    await write({ command: 'create', path: '/memories/s/r.txt', file_text: 'chestnut\n' });
    await write({ command: 'create', path: '/memories/d/x.txt', file_text: 'cashew\n' });
    await client(held, 'sb').write({ command: 'create', path: '/memories/fig.txt', file_text: 'fig almond\n' });
    await write({ command: 'str_replace', path: '/memories/s/a.txt', old_str: 'walnut', new_str: 'pecan' });
    await write({ command: 'delete', path: '/memories/s/b.txt' });
    await write({ command: 'rename', old_path: '/memories/s/r.txt', new_path: '/memories/s/q/r2.txt' });
    const expect = async (srv) => {
      const cc = client(srv, 'sa');
      assert.deepEqual(await cc.paths('q=walnut'), []);
      assert.deepEqual(await cc.paths('q=pecan'), ['/memories/s/a.txt']);
      assert.deepEqual(await cc.paths('q=almond'), ['/memories/s/a.txt']);
      assert.deepEqual(await cc.paths('q=chestnut'), ['/memories/s/q/r2.txt']);
      assert.deepEqual(await cc.paths('q=almond&path=/memories/s/q'), []);
      assert.deepEqual(await client(srv, 'sb').paths('q=almond'), ['/memories/fig.txt']);
    };
    const rows = (sql) => psql(uri, sql).trim().split('\n').filter(Boolean);
    const words = () => rows('SELECT path || \' \' || words::text FROM search_words ORDER BY path');
    const pending = () => rows('SELECT DISTINCT path FROM search_pending ORDER BY path');
    let on;
    try {
      // None indexed: every path of the feed pending, the old path of the rename and the
      // deleted file's too; the writes made no row for the index.
      assert.deepEqual(pending(), ['/memories/d/x.txt', '/memories/fig.txt', '/memories/s/a.txt', '/memories/s/b.txt', '/memories/s/q/r2.txt', '/memories/s/r.txt']);
      assert.deepEqual(words(), []);
      assert.deepEqual(rows('SELECT count(*) FROM search_cursor'), ['0']);
      await expect(held);
    } finally {
      await held.stop();
    }
    on = await startServer({ db: uri });
    const caughtUp = async () => {
      for (let i = 0; rows('SELECT count(*) FROM search_pending')[0] !== '0'; i++) {
        assert.ok(i < 600, 'the index did not catch up');
        await sleep(50);
      }
    };
    try {
      await caughtUp();
      // Indexed: the live files' words only (nothing of the deleted file, the old path or the
      // word the edit took away); each tenant's cursor at its last write.
      assert.deepEqual(words(), ["/memories/d/x.txt 'cashew'", "/memories/fig.txt 'almond' 'fig'", "/memories/s/a.txt 'almond' 'pecan'", "/memories/s/q/r2.txt 'chestnut'"]);
      assert.deepEqual(rows('SELECT t.name, k.seq = t.last_seq FROM search_cursor k JOIN tenants t ON t.id = k.tenant ORDER BY t.name'), ['sa|t', 'sb|t']);
      await expect(on);
    } finally {
      await on.stop();
    }
    // A directory renamed, another deleted: the feed names the directories only; a search
    // finds the files below the new one before the index has them, none below the others.
    const held2 = await startServer({ db: uri, env: { MEMORYD_INDEX_EVERY_MS: '100000000' } });
    try {
      const c2 = client(held2, 'sa');
      await c2.write({ command: 'rename', old_path: '/memories/s', new_path: '/memories/t' });
      await c2.write({ command: 'delete', path: '/memories/d' });
      assert.deepEqual(pending(), ['/memories/d', '/memories/s', '/memories/t']);
      assert.deepEqual(await c2.paths('q=chestnut'), ['/memories/t/q/r2.txt']);
      assert.deepEqual(await c2.paths('q=pecan'), ['/memories/t/a.txt']);
      assert.deepEqual(await c2.paths('q=cashew'), []);
    } finally {
      await held2.stop();
    }
    on = await startServer({ db: uri });
    try {
      await caughtUp();
      assert.deepEqual(words(), ["/memories/fig.txt 'almond' 'fig'", "/memories/t/a.txt 'almond' 'pecan'", "/memories/t/q/r2.txt 'chestnut'"]);
      assert.deepEqual(await client(on, 'sa').paths('q=chestnut'), ['/memories/t/q/r2.txt']);
    } finally {
      await on.stop();
    }
  });

  test('PostgreSQL: a step waits for no writer, takes the feed in order up to what has committed, and a write made while a step runs stays for the next; retention past the cursor reindexes the tenant', { skip: !isPg() && 'PostgreSQL only: its steps run beside the writes on a connection of their own (memoryd_index_step); SQLite\'s are the writer\'s own, between its batches (unit/test_store, test_search_apart)' }, async () => {
    // The indexer never runs: the test takes the steps itself (psql), as the indexer does.
    const srv = await startServer({ env: { MEMORYD_INDEX_EVERY_MS: '100000000' } });
    const uri = srv.dbPath;
    const c = client(srv, 'st');
    const rows = (sql) => psql(uri, sql).trim().split('\n').filter(Boolean);
    const words = () => rows("SELECT path || ' ' || words::text FROM search_words ORDER BY path");
    const pending = () => rows('SELECT DISTINCT path FROM search_pending ORDER BY path');
    const cursor = () => rows("SELECT k.seq FROM search_cursor k JOIN tenants t ON t.id = k.tenant WHERE t.name = 'st'")[0];
    const step = (more = '') => rows(`SET statement_timeout = '20s'; ${more} SELECT memoryd_index_step(256)`)[0];
    const holders = [];
    const hold = async (sql) => {
      const h = spawn('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', uri], { stdio: ['pipe', 'pipe', 'inherit'] });
      holders.push(h);
      let out = '';
      h.stdout.on('data', (d) => { out += d; });
      h.stdin.write(`BEGIN; ${sql}; SELECT 'held';\n`);
      for (let i = 0; !out.includes('held'); i++) {
        assert.ok(i < 1000, `not held: ${sql}`);
        await sleep(10);
      }
      return h;
    };
    const end = (h, how = 'COMMIT') => new Promise((resolve) => { h.on('exit', resolve); h.stdin.end(`${how};\n`); });
    try {
      await c.write({ command: 'create', path: '/memories/a.txt', file_text: 'walnut\n' }); // seq 1
      await c.write({ command: 'create', path: '/memories/b.txt', file_text: 'almond\n' }); // seq 2
      // A write still open (its tenant's counter and its feed row written, as memoryd's are,
      // not committed): the step takes the two committed rows without waiting for it (the
      // statement timeout would fail it), and not the open one. A step answers how many feed
      // rows it took.
      const writer = await hold("UPDATE tenants SET last_seq = 3 WHERE name = 'st';"
        + " INSERT INTO changes SELECT id, 3, NULL, 0, 0, 0, 'create', '/memories/open.txt', NULL FROM tenants WHERE name = 'st'");
      assert.equal(step(), '2');
      assert.deepEqual([words(), pending(), cursor()], [["/memories/a.txt 'walnut'", "/memories/b.txt 'almond'"], [], '2']);
      await end(writer, 'ROLLBACK');
      assert.equal(step(), '0');
      // A step held after it read the feed and before it writes the words (another session
      // holds a's words); meanwhile memoryd edits a.txt, acknowledged without waiting for the
      // step: the step's cursor stops at the edit it read, the next edit stays pending, with
      // the words the step read before it, then the next step's.
      const words0 = await hold("SELECT 1 FROM search_words WHERE path = '/memories/a.txt' FOR UPDATE");
      await c.write({ command: 'str_replace', path: '/memories/a.txt', old_str: 'walnut', new_str: 'pecan' }); // seq 3
      const stepper = spawn('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', uri, '-c',
        "SET statement_timeout = '20s'; SELECT memoryd_index_step(256)"], { stdio: ['ignore', 'pipe', 'inherit'] });
      holders.push(stepper);
      let stepOut = '';
      stepper.stdout.on('data', (d) => { stepOut += d; });
      const stepped = new Promise((resolve) => stepper.on('exit', resolve));
      for (let i = 0; rows("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%memoryd_index_step%'")[0] !== '1'; i++) {
        assert.ok(i < 1000, 'the step did not wait for the words held');
        await sleep(10);
      }
      await c.write({ command: 'str_replace', path: '/memories/a.txt', old_str: 'pecan', new_str: 'hazel' }); // seq 4
      assert.deepEqual(await c.paths('q=hazel'), ['/memories/a.txt']);
      await end(words0);
      assert.equal(await stepped, 0);
      assert.equal(stepOut.trim(), '1');
      assert.deepEqual([words(), pending(), cursor()], [["/memories/a.txt 'pecan'", "/memories/b.txt 'almond'"], ['/memories/a.txt'], '3']);
      assert.deepEqual(await c.paths('q=hazel'), ['/memories/a.txt']);
      assert.deepEqual(await c.paths('q=pecan'), []);
      assert.equal(step(), '1');
      assert.deepEqual([words(), pending(), cursor()], [["/memories/a.txt 'hazel'", "/memories/b.txt 'almond'"], [], '4']);
      // One step at a time in a database: another's, while one holds the lock, takes nothing.
      const other = await hold('SELECT pg_advisory_xact_lock(1835363684, 1)');
      await c.write({ command: 'create', path: '/memories/c.txt', file_text: 'cedar\n' }); // seq 5
      assert.equal(step(), '0');
      await end(other);
      assert.equal(step(), '1');
      assert.deepEqual(pending(), []);
      // Retention pruned the feed past the cursor (as an index stopped for longer than the
      // feed is kept would find it): every file of the tenant is pending, and the next step
      // takes them all and puts the cursor at the last write.
      await c.write({ command: 'str_replace', path: '/memories/b.txt', old_str: 'almond', new_str: 'acorn' }); // seq 6
      await c.write({ command: 'delete', path: '/memories/c.txt' }); // seq 7
      rows("DELETE FROM changes WHERE seq <= 6 AND tenant = (SELECT id FROM tenants WHERE name = 'st')");
      assert.deepEqual(pending(), ['/memories', '/memories/c.txt']);
      assert.deepEqual(await c.paths('q=acorn'), ['/memories/b.txt']);
      assert.deepEqual(await c.paths('q=cedar'), []);
      assert.equal(step(), '1');
      assert.deepEqual([words(), pending(), cursor()], [["/memories/a.txt 'hazel'", "/memories/b.txt 'acorn'"], [], '7']);
    } finally {
      for (const h of holders) h.kill();
      await srv.stop();
    }
  });

  test('PostgreSQL: once the writes pause, the index takes them without waiting for its period', { skip: !isPg() && 'PostgreSQL only: its index is written by a thread of its own on a period (memoryd_index_step); SQLite\'s steps are the writer\'s own, between its batches' }, async () => {
    // A period of 60 s: a pause of a twentieth of it (3 s) after the last write starts a step.
    // The thread's first tick is 60 s after memoryd started, so files indexed before then were
    // indexed because the writes paused.
    const srv = await startServer({ env: { MEMORYD_INDEX_EVERY_MS: '60000' } });
    const started = Date.now();
    const uri = srv.dbPath;
    const rows = (sql) => psql(uri, sql).trim().split('\n').filter(Boolean);
    try {
      const c = client(srv, 'qt');
      for (let i = 0; i < 20; i++) await c.write({ command: 'create', path: `/memories/n${i}.txt`, file_text: `quince${i} medlar\n` });
      await c.write({ command: 'str_replace', path: '/memories/n0.txt', old_str: 'medlar', new_str: 'sloe' });
      while (rows('SELECT count(*) FROM search_pending')[0] !== '0') {
        assert.ok(Date.now() - started < 55000, 'the writes paused 3 s, yet the index waited for its period');
        await sleep(100);
      }
      assert.deepEqual(rows("SELECT path || ' ' || words::text FROM search_words WHERE path IN ('/memories/n0.txt', '/memories/n19.txt') ORDER BY path"),
        ["/memories/n0.txt 'quince0' 'sloe'", "/memories/n19.txt 'medlar' 'quince19'"]);
      assert.equal(rows('SELECT count(*) FROM search_words')[0], '20');
    } finally {
      await srv.stop();
    }
  });

  test('SQLite: notes another writer left in search_pending go into the index at start', { skip: isPg() && 'SQLite only' }, async () => {
    const srv = await startServer();
    await client(srv, 'alice').write({ command: 'create', path: '/memories/n.md', file_text: 'alpha\n' });
    await srv.stop();
    // The sqlite3 CLI writes the file's content (same length), and the trigger notes it.
    execFileSync('sqlite3', [srv.dbPath, "UPDATE entries SET content = CAST('gamma' || char(10) AS BLOB) WHERE path = '/memories/n.md'"]);
    assert.equal(execFileSync('sqlite3', [srv.dbPath, 'SELECT count(*) FROM search_pending'], { encoding: 'utf8' }).trim(), '1');
    const again = await startServer({ db: srv.dbPath });
    try {
      assert.deepEqual(await client(again, 'alice').paths('q=gamma'), ['/memories/n.md']);
      assert.equal(execFileSync('sqlite3', ['-readonly', srv.dbPath, "SELECT count(*) FROM entries_search WHERE entries_search MATCH 'alpha'"], { encoding: 'utf8' }).trim(), '0');
      assert.equal(execFileSync('sqlite3', ['-readonly', srv.dbPath, 'SELECT count(*) FROM search_pending'], { encoding: 'utf8' }).trim(), '0');
    } finally {
      await again.stop();
    }
  });
});

describe('a tenant of 10,000 files', { skip: underValgrind && 'sizes left to the plain and ASan runs' }, () => {
  // SQLite ANDs a tenant's token into the index's query only below 10,000 files
  // (src/store/sqlite/search.c): both ways give the tenant its own files only.
  test('is searched without its token and finds its own files only; one file less, with it', async () => {
    const srv = await startServer({ args: ['--tenant-max-files', '20000'] });
    try {
      const big = client(srv, 'big');
      const names = Array.from({ length: 10000 }, (_, i) => i);
      for (let i = 0; i < names.length; i += 64)
        await Promise.all(names.slice(i, i + 64).map((n) => big.write({ command: 'create', path: `/memories/d${Math.floor(n / 100)}/f${n}.md`,
          file_text: n === 4321 ? 'the okapi of the big tenant\n' : `filler ${n}\n` })));
      await client(srv, 'small').write({ command: 'create', path: '/memories/okapi.md', file_text: 'an okapi, small tenant\n' });
      const want = { query: 'okapi', path: '/memories', next_cursor: null,
        hits: [{ path: '/memories/d43/f4321.md', matching_lines: 1, lines: [{ line: 1, text: 'the okapi of the big tenant' }] }] };
      assert.deepEqual(await big.hits('q=okapi'), want);
      assert.deepEqual(await client(srv, 'small').paths('q=okapi'), ['/memories/okapi.md']);
      await big.write({ command: 'delete', path: '/memories/d0/f0.md' });
      assert.deepEqual(await big.hits('q=okapi'), want);
      assert.equal((await big.hits('q=filler&limit=100')).hits.length, 100);
    } finally {
      await srv.stop();
    }
  });
});

describe('--auth keys', () => {
  test('an API key of the read scope may search, its own tenant only', async () => {
    const srv = await startServer({ args: ['--auth', 'keys'] });
    try {
      const key = (tenant, scope) => execFileSync(BIN, ['keys', 'create', '--db', srv.dbPath, '--tenant', tenant, '--scope', scope],
        { encoding: 'utf8' }).match(/mdk_[A-Za-z0-9_-]{43}/)[0];
      const writer = key('alice', 'write');
      const reader = key('alice', 'read');
      const w = await srv.request('POST', '/memory', { body: JSON.stringify({ command: 'create', path: '/memories/k.md', file_text: 'quince jam\n' }),
        headers: { authorization: `Bearer ${writer}`, 'content-type': 'application/json' } });
      assert.equal(w.status, 200, w.text);
      const r = await srv.request('GET', '/v1/search?q=quince', { headers: { authorization: `Bearer ${reader}` } });
      assert.deepEqual([r.status, r.json], [200, { query: 'quince', path: '/memories', next_cursor: null,
        hits: [{ path: '/memories/k.md', matching_lines: 1, lines: [{ line: 1, text: 'quince jam' }] }] }]);
      const none = await srv.request('GET', '/v1/search?q=quince');
      assert.equal(none.status, 401);
    } finally {
      await srv.stop();
    }
  });
});
