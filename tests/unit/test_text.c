/*
 * test_text.c — proves the pure text operations of md_text.h against
 * docs/behaviour.md §4 and the SDK's semantics: the size format (one decimal,
 * halves round up like JavaScript's toFixed), line counting, file views
 * (every view_range form the SDK accepts, JavaScript slice semantics, the
 * 999,999-line limit, truncation at the view limit with its exact note),
 * str_replace (uniqueness, line numbers of matches, snippets, literal
 * new_str, NUL bytes) and insert (ranges, trailing newline, CRLF).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_text.h"
#include "check.h"
#include "cmd/md_search.h"

#define BIG ((size_t)64 << 20)

/* ---- md_size_format ---- */

#define EXPECT_SIZE(bytes, want)                                                                   \
    do {                                                                                           \
        char s_[24];                                                                               \
        size_t n_ = md_size_format((uint64_t)(bytes), s_);                                         \
        CHECK_MEM(s_, n_, want);                                                                   \
        CHECK_EQ_INT(strlen(s_), n_);                                                              \
    } while (0)

static void test_size_format(void)
{
    EXPECT_SIZE(0, "0B");
    EXPECT_SIZE(1, "1B");
    EXPECT_SIZE(999, "999B");
    EXPECT_SIZE(1023, "1023B");
    EXPECT_SIZE(1024, "1.0K");
    EXPECT_SIZE(1075, "1.0K"); /* 1.0498 */
    EXPECT_SIZE(1076, "1.1K"); /* 1.0508 */
    EXPECT_SIZE(1126, "1.1K");
    EXPECT_SIZE(1280, "1.3K"); /* 1.25: half rounds up, like toFixed(1) */
    EXPECT_SIZE(1536, "1.5K");
    EXPECT_SIZE(2047, "2.0K");
    EXPECT_SIZE(2048, "2.0K");
    EXPECT_SIZE(10240, "10.0K");
    EXPECT_SIZE(1048524, "1023.9K");
    EXPECT_SIZE(1048525, "1024.0K");
    EXPECT_SIZE(1048575, "1024.0K"); /* still below 1 MiB: K */
    EXPECT_SIZE(1048576, "1.0M");
    EXPECT_SIZE(1310720, "1.3M"); /* 1.25 MiB */
    EXPECT_SIZE(1258291, "1.2M");
    EXPECT_SIZE(5u << 20, "5.0M");
    EXPECT_SIZE(1073741823, "1024.0M");
    EXPECT_SIZE(1073741824, "1.0G");
    EXPECT_SIZE(3ULL << 30, "3.0G");
    EXPECT_SIZE((3ULL << 30) + (1ULL << 29), "3.5G");
    EXPECT_SIZE(1ULL << 40, "1024.0G"); /* no unit beyond G */
    EXPECT_SIZE(UINT64_MAX, "17179869184.0G");
}

/* ---- md_line_count / md_put_lineno ---- */

static void test_line_count(void)
{
    CHECK_EQ_INT(md_line_count("", 0), 1);
    CHECK_EQ_INT(md_line_count("a", 1), 1);
    CHECK_EQ_INT(md_line_count("a\n", 2), 2);
    CHECK_EQ_INT(md_line_count("\n", 1), 2);
    CHECK_EQ_INT(md_line_count("\n\n", 2), 3);
    CHECK_EQ_INT(md_line_count("a\nb\nc", 5), 3);
    CHECK_EQ_INT(md_line_count("a\r\nb\r\n", 6), 3);
    CHECK_EQ_INT(md_line_count("a\rb\rc", 5), 1); /* '\r' alone never splits */
    CHECK_EQ_INT(md_line_count("a\0\nb\0", 5), 2);
    CHECK_EQ_INT(md_line_count("a\nb\nc", 2), 2); /* the length limits it */

    struct md_buf b;
    md_buf_init(&b, BIG);
    md_put_lineno(&b, 1);
    md_put_lineno(&b, 42);
    md_put_lineno(&b, 999999);
    md_put_lineno(&b, 1000000);
    CHECK_MEM(b.data, b.len, "     1\t    42\t999999\t1000000\t");
    md_buf_free(&b);
}

/* ---- md_view_file ---- */

#define P     "/memories/f.txt"
#define HEAD  "Here's the content of " P " with line numbers:\n"
#define FIVE  "l1\nl2\nl3\nl4\nl5"
#define L1_5  "     1\tl1\n     2\tl2\n     3\tl3\n     4\tl4\n     5\tl5"
#define NOTE1 "[Output truncated at the "

/* View `text` (a literal) with an optional range; compare with `want`. */
#define EXPECT_VIEW(text, has_range, a, b, max, want_err, want)                                    \
    do {                                                                                           \
        struct md_buf o_;                                                                          \
        md_buf_init(&o_, BIG);                                                                     \
        struct md_view_range r_ = {has_range, a, b};                                               \
        enum md_err e_ =                                                                           \
            md_view_file(&o_, P, sizeof(P) - 1, text, sizeof(text) - 1, &r_, (size_t)(max));       \
        CHECK_EQ_INT(e_, want_err);                                                                \
        CHECK_MEM(o_.data, o_.len, want);                                                          \
        CHECK(o_.len <= (size_t)(max));                                                            \
        md_buf_free(&o_);                                                                          \
    } while (0)

#define VIEW_ALL(text, want)   EXPECT_VIEW(text, 0, 0, 0, 256 << 10, MD_OK, want)
#define VIEW_RANGE(a, b, want) EXPECT_VIEW(FIVE, 1, a, b, 256 << 10, MD_OK, want)

static void test_view_whole(void)
{
    VIEW_ALL("a\nb\nc", HEAD "     1\ta\n     2\tb\n     3\tc");
    VIEW_ALL("", HEAD "     1\t");
    VIEW_ALL("a\n", HEAD "     1\ta\n     2\t");
    VIEW_ALL("\n", HEAD "     1\t\n     2\t");
    VIEW_ALL("a\r\nb\r\n", HEAD "     1\ta\r\n     2\tb\r\n     3\t");
    VIEW_ALL("tab\there", HEAD "     1\ttab\there");
    VIEW_ALL("nul\0byte", HEAD "     1\tnul\0byte");
    VIEW_ALL("caf\xc3\xa9\n\xf0\x9f\x98\x80", HEAD "     1\tcaf\xc3\xa9\n     2\t\xf0\x9f\x98\x80");

    /* A NULL range is the whole file too. */
    struct md_buf o;
    md_buf_init(&o, BIG);
    CHECK_EQ_INT(md_view_file(&o, P, sizeof P - 1, "x\ny", 3, NULL, 1024), MD_OK);
    CHECK_MEM(o.data, o.len, HEAD "     1\tx\n     2\ty");
    md_buf_free(&o);

    /* Line numbers stay right-aligned in 6 columns past line 9. */
    const char text[] = "x\nx\nx\nx\nx\nx\nx\nx\nx\nx\nx"; /* 11 lines */
    md_buf_init(&o, BIG);
    struct md_view_range r = {1, 9, 11};
    CHECK_EQ_INT(md_view_file(&o, P, sizeof P - 1, text, strlen(text), &r, 1024), MD_OK);
    CHECK_MEM(o.data, o.len, HEAD "     9\tx\n    10\tx\n    11\tx");
    md_buf_free(&o);
}

static void test_view_ranges(void)
{
    VIEW_RANGE(1, -1, HEAD L1_5);
    VIEW_RANGE(2, 3, HEAD "     2\tl2\n     3\tl3");
    VIEW_RANGE(0, 2, HEAD "     1\tl1\n     2\tl2");  /* start below 1 -> 1 */
    VIEW_RANGE(-5, 2, HEAD "     1\tl1\n     2\tl2"); /* likewise */
    VIEW_RANGE(3, 1, HEAD);                           /* slice(2, 1): nothing */
    VIEW_RANGE(3, 3, HEAD "     3\tl3");
    VIEW_RANGE(5, 5, HEAD "     5\tl5");
    VIEW_RANGE(4, 100, HEAD "     4\tl4\n     5\tl5"); /* end beyond the file */
    VIEW_RANGE(10, -1, HEAD);                          /* start beyond the file */
    VIEW_RANGE(6, -1, HEAD);
    VIEW_RANGE(5, -1, HEAD "     5\tl5");
    VIEW_RANGE(1, 0, HEAD); /* slice(0, 0) */
    /* Negative ends other than -1 count from the end, like slice(). */
    VIEW_RANGE(1, -2, HEAD "     1\tl1\n     2\tl2\n     3\tl3");
    VIEW_RANGE(2, -4, HEAD);
    VIEW_RANGE(1, -5, HEAD);
    VIEW_RANGE(1, -10, HEAD);
    VIEW_RANGE(-1, -1, HEAD L1_5);
    VIEW_RANGE(INT64_MIN, INT64_MAX, HEAD L1_5);
    VIEW_RANGE(INT64_MAX, -1, HEAD);
    VIEW_RANGE(1, INT64_MIN, HEAD);
    /* A range on an empty file. */
    EXPECT_VIEW("", 1, 1, -1, 1024, MD_OK, HEAD "     1\t");
    EXPECT_VIEW("", 1, 2, -1, 1024, MD_OK, HEAD);
}

static void test_view_line_limit(void)
{
    /* 999,999 newlines = 1,000,000 lines: over the limit. */
    size_t n = MD_MAX_LINES;
    char *text = malloc(n);
    memset(text, '\n', n);
    struct md_buf o;
    md_buf_init(&o, BIG);
    CHECK_EQ_INT(md_view_file(&o, P, sizeof P - 1, text, n, NULL, 256 << 10), MD_ETOOBIG);
    CHECK_MEM(o.data, o.len, "File " P " exceeds maximum line limit of 999,999 lines.");
    md_buf_reset(&o);
    struct md_view_range r = {1, 1, 1};
    CHECK_EQ_INT(md_view_file(&o, P, sizeof P - 1, text, n, &r, 256 << 10), MD_ETOOBIG);
    CHECK_MEM(o.data, o.len, "File " P " exceeds maximum line limit of 999,999 lines.");

    /* Exactly 999,999 lines is allowed (here cut at the view limit). */
    md_buf_reset(&o);
    CHECK_EQ_INT(md_view_file(&o, P, sizeof P - 1, text, n - 1, NULL, 1024), MD_OK);
    /* 57 header bytes + 7 + 8 per further empty line, up to 1024 - 200. */
    char want[2048];
    size_t w = (size_t)snprintf(want, sizeof want, "%s", HEAD "     1\t");
    for (int i = 2; i <= 96; i++)
        w += (size_t)snprintf(want + w, sizeof want - w, "\n%6d\t", i);
    w += (size_t)snprintf(want + w, sizeof want - w,
                          "\n[Output truncated at the 1024-byte view limit after line 96 of "
                          "999999. To see more, view again with view_range [97, -1].]");
    CHECK_BUF(o.data, o.len, want, w);
    CHECK(o.len <= 1024);

    /* The last lines of that file, by range. */
    md_buf_reset(&o);
    r = (struct md_view_range){1, 999998, -1};
    CHECK_EQ_INT(md_view_file(&o, P, sizeof P - 1, text, n - 1, &r, 1024), MD_OK);
    CHECK_MEM(o.data, o.len, HEAD "999998\t\n999999\t");
    md_buf_free(&o);
    free(text);
}

static void test_view_truncation(void)
{
    /* max_out 300 keeps 100 bytes for text: the 57-byte header, then
     * "     1\tabcdefghi" (16) and "\n     2\tabcdefghi" (17) = 90 bytes. */
#define NINE "abcdefghi\nabcdefghi\nabcdefghi\nabcdefghi\nabcdefghi"
    EXPECT_VIEW(NINE, 0, 0, 0, 300, MD_OK,
                HEAD "     1\tabcdefghi\n     2\tabcdefghi\n[Output truncated at the 300-byte view "
                     "limit after line 2 of 5. To see more, view again with view_range [3, -1].]");
    EXPECT_VIEW(NINE, 1, 2, -1, 300, MD_OK,
                HEAD "     2\tabcdefghi\n     3\tabcdefghi\n[Output truncated at the 300-byte view "
                     "limit after line 3 of 5. To see more, view again with view_range [4, -1].]");
    /* A bounded range names its end in the note. */
    EXPECT_VIEW(NINE, 1, 2, 4, 300, MD_OK,
                HEAD "     2\tabcdefghi\n     3\tabcdefghi\n[Output truncated at the 300-byte view "
                     "limit after line 3 of 5. To see more, view again with view_range [4, 4].]");
    EXPECT_VIEW(NINE, 1, 1, -2, 300, MD_OK,
                HEAD "     1\tabcdefghi\n     2\tabcdefghi\n[Output truncated at the 300-byte view "
                     "limit after line 2 of 5. To see more, view again with view_range [3, 3].]");
    /* The range the note names gives the rest. */
    EXPECT_VIEW(NINE, 1, 4, -1, 300, MD_OK, HEAD "     4\tabcdefghi\n     5\tabcdefghi");
    /* Exactly at the budget: nothing is cut. */
    EXPECT_VIEW("abcdefghi\nabcdefghi", 0, 0, 0, 290, MD_OK,
                HEAD "     1\tabcdefghi\n     2\tabcdefghi");
    EXPECT_VIEW("abcdefghi\nabcdefghi", 0, 0, 0, 289, MD_OK,
                HEAD "     1\tabcdefghi\n[Output truncated at the 289-byte view limit after line 1 "
                     "of 2. To see more, view again with view_range [2, -1].]");

    /* A single line longer than the limit: its head is shown, cut at a
     * UTF-8 boundary. Room: 100 - 57 - 7 = 36 bytes. */
    char line[512];
    memset(line, 'x', 200);
    struct md_buf o;
    md_buf_init(&o, BIG);
    CHECK_EQ_INT(md_view_file(&o, P, sizeof P - 1, line, 200, NULL, 300), MD_OK);
    CHECK_MEM(o.data, o.len,
              HEAD "     1\txxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n[Output truncated: line 1 is "
                   "longer than the 300-byte view limit and was cut after 36 bytes.]");
    CHECK(o.len <= 300);

    /* "a" then 2-byte characters: byte 36 would split one, cut after 35. */
    line[0] = 'a';
    for (size_t i = 0; i < 100; i++)
        memcpy(line + 1 + 2 * i, "\xc3\xa9", 2);
    memcpy(line + 201, "\nshort", 6);
    md_buf_reset(&o);
    CHECK_EQ_INT(md_view_file(&o, P, sizeof P - 1, line, 201, NULL, 300), MD_OK);
    CHECK_MEM(o.data, o.len,
              HEAD
              "     1\ta\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
              "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
              "\n[Output truncated: line 1 is longer than the 300-byte view limit and was "
              "cut after 35 bytes.]");
    /* With a line after it, the note names the range for the rest. */
    md_buf_reset(&o);
    CHECK_EQ_INT(md_view_file(&o, P, sizeof P - 1, line, 207, NULL, 300), MD_OK);
    CHECK_MEM(o.data, o.len,
              HEAD
              "     1\ta\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
              "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
              "\n[Output truncated: line 1 is longer than the 300-byte view limit and was "
              "cut after 35 bytes. To see more, view again with view_range [2, -1].]");
    CHECK(o.len <= 300);

    /* The long line as the start of a range. */
    char text[600];
    memcpy(text, "first\n", 6);
    memset(text + 6, 'y', 200);
    memcpy(text + 206, "\nlast", 5);
    md_buf_reset(&o);
    struct md_view_range r = {1, 2, 2};
    CHECK_EQ_INT(md_view_file(&o, P, sizeof P - 1, text, 211, &r, 300), MD_OK);
    CHECK_MEM(o.data, o.len,
              HEAD "     2\tyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\n[Output truncated: line 2 is "
                   "longer than the 300-byte view limit and was cut after 36 bytes.]");
    md_buf_reset(&o);
    r = (struct md_view_range){1, 2, -1};
    CHECK_EQ_INT(md_view_file(&o, P, sizeof P - 1, text, 211, &r, 300), MD_OK);
    CHECK_MEM(o.data, o.len,
              HEAD "     2\tyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\n[Output truncated: line 2 is "
                   "longer than the 300-byte view limit and was cut after 36 bytes. To see more, "
                   "view again with view_range [3, -1].]");
    /* Reaching the long line after a short one: cut before it. */
    md_buf_reset(&o);
    CHECK_EQ_INT(md_view_file(&o, P, sizeof P - 1, text, 211, NULL, 300), MD_OK);
    CHECK_MEM(o.data, o.len,
              HEAD "     1\tfirst\n[Output truncated at the 300-byte view limit after line 1 of 3. "
                   "To see more, view again with view_range [2, -1].]");
    md_buf_free(&o);

    /* The default limit with a big file: cut at a line boundary, under 256 KiB. */
    size_t n = (size_t)100000 * 10;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i += 10)
        memcpy(big + i, "123456789\n", 10);
    md_buf_init(&o, BIG);
    CHECK_EQ_INT(md_view_file(&o, P, sizeof P - 1, big, n, NULL, 256 << 10), MD_OK);
    CHECK(o.len <= (256u << 10));
    CHECK(o.len > (256u << 10) - 300);
    static const char lead[] = "\n[Output truncated at the 262144-byte view limit after line ";
    const char *note = strstr(o.data, lead);
    CHECK(note != NULL);
    if (note) {
        const char *num = note + sizeof lead - 1;
        char *num_end = NULL;
        long shown = strtol(num, &num_end, 10);
        CHECK(num_end > num && *num_end == ' ');
        char tail[200];
        int tl = snprintf(tail, sizeof tail,
                          "%6ld\t123456789\n[Output truncated at the 262144-byte view limit after "
                          "line %ld of 100001. To see more, view again with view_range [%ld, -1].]",
                          shown, shown, shown + 1);
        CHECK(o.len >= (size_t)tl);
        CHECK_BUF(o.data + o.len - (size_t)tl, (size_t)tl, tail, (size_t)tl);
    }
    md_buf_free(&o);
    free(big);
#undef NINE
}

/* ---- md_str_replace ---- */

#define SNIP                                                                                       \
    "The memory file has been edited. Here is the snippet showing the change (with line "          \
    "numbers):\n"

/* str_replace on literals; checks the class, the message and the result. */
#define EXPECT_REPLACE(text, old, new_, want_err, want_msg, want_result)                           \
    do {                                                                                           \
        struct md_buf res_, msg_;                                                                  \
        md_buf_init(&res_, BIG);                                                                   \
        md_buf_init(&msg_, BIG);                                                                   \
        enum md_err e_ = md_str_replace(text, sizeof(text) - 1, old, sizeof(old) - 1, new_,        \
                                        sizeof(new_) - 1, P, sizeof(P) - 1, &res_, &msg_);         \
        CHECK_EQ_INT(e_, want_err);                                                                \
        CHECK_MEM(msg_.data, msg_.len, want_msg);                                                  \
        CHECK_MEM(res_.data, res_.len, want_result);                                               \
        md_buf_free(&res_);                                                                        \
        md_buf_free(&msg_);                                                                        \
    } while (0)

static void test_str_replace(void)
{
    EXPECT_REPLACE("one\ntwo\nthree\nfour\nfive\nsix\nseven", "four", "FOUR", MD_OK,
                   SNIP "     2\ttwo\n     3\tthree\n     4\tFOUR\n     5\tfive\n     6\tsix",
                   "one\ntwo\nthree\nFOUR\nfive\nsix\nseven");
    /* None. */
    EXPECT_REPLACE("one\ntwo", "zzz", "x", MD_ECONFLICT,
                   "No replacement was performed, old_str `zzz` did not appear verbatim in " P ".",
                   "");
    EXPECT_REPLACE("", "a", "x", MD_ECONFLICT,
                   "No replacement was performed, old_str `a` did not appear verbatim in " P ".",
                   "");
    EXPECT_REPLACE("abc", "abcd", "x", MD_ECONFLICT,
                   "No replacement was performed, old_str `abcd` did not appear verbatim in " P ".",
                   "");
    EXPECT_REPLACE("Case", "case", "x", MD_ECONFLICT,
                   "No replacement was performed, old_str `case` did not appear verbatim in " P ".",
                   "");
    /* Several, on different lines. */
    EXPECT_REPLACE("a x\nb\nc x\nd\nx", "x", "y", MD_ECONFLICT,
                   "No replacement was performed. Multiple occurrences of old_str `x` in lines: 1, "
                   "3, 5. Please ensure it is unique",
                   "");
    /* Two on one line are two matches. */
    EXPECT_REPLACE("l1\nl2\nfoo foo\nl4", "foo", "bar", MD_ECONFLICT,
                   "No replacement was performed. Multiple occurrences of old_str `foo` in lines: "
                   "3, 3. Please ensure it is unique",
                   "");
    /* Non-overlapping: "aa" in "aaa" is one match, in "aaaa" two. */
    EXPECT_REPLACE("aaa", "aa", "b", MD_OK, SNIP "     1\tba", "ba");
    EXPECT_REPLACE("aaaa", "aa", "b", MD_ECONFLICT,
                   "No replacement was performed. Multiple occurrences of old_str `aa` in lines: "
                   "1, 1. Please ensure it is unique",
                   "");
    /* Matches spanning lines are reported at the line where they start. */
    EXPECT_REPLACE("x\ny\nx\ny", "x\ny", "z", MD_ECONFLICT,
                   "No replacement was performed. Multiple occurrences of old_str `x\ny` in lines: "
                   "1, 3. Please ensure it is unique",
                   "");
    EXPECT_REPLACE("a\n\nb\n", "\n", "z", MD_ECONFLICT,
                   "No replacement was performed. Multiple occurrences of old_str `\n` in lines: "
                   "1, 2, 3. Please ensure it is unique",
                   "");
    /* A multi-line old_str. */
    EXPECT_REPLACE("a\nb\nc\nd\ne\nf\ng", "c\nd", "X", MD_OK,
                   SNIP "     1\ta\n     2\tb\n     3\tX\n     4\te\n     5\tf",
                   "a\nb\nX\ne\nf\ng");
    /* A new_str with newlines: 2 before the first changed line to 2 after
     * the last line of the new text. */
    EXPECT_REPLACE("1\n2\n3\n4\n5\n6\n7\n8\n9", "4", "x\ny\nz", MD_OK,
                   SNIP
                   "     2\t2\n     3\t3\n     4\tx\n     5\ty\n     6\tz\n     7\t5\n     8\t6",
                   "1\n2\n3\nx\ny\nz\n5\n6\n7\n8\n9");
    /* Match on line 1 and on the last line. */
    EXPECT_REPLACE("first\nsecond\nthird\nfourth", "first", "1st", MD_OK,
                   SNIP "     1\t1st\n     2\tsecond\n     3\tthird", "1st\nsecond\nthird\nfourth");
    EXPECT_REPLACE("a\nb\nc\nd\nlast", "last", "end", MD_OK,
                   SNIP "     3\tc\n     4\td\n     5\tend", "a\nb\nc\nd\nend");
    EXPECT_REPLACE("only", "only", "", MD_OK, SNIP "     1\t", "");
    /* Match in the middle of a line. */
    EXPECT_REPLACE("a\nb\nkey=old;\nd\ne\nf", "old", "new", MD_OK,
                   SNIP "     1\ta\n     2\tb\n     3\tkey=new;\n     4\td\n     5\te",
                   "a\nb\nkey=new;\nd\ne\nf");
    /* Deleting a whole line. */
    EXPECT_REPLACE("a\nb\nc", "b\n", "", MD_OK, SNIP "     1\ta\n     2\tc", "a\nc");
    /* new_str is literal: no $& or $1 expansion. */
    EXPECT_REPLACE("price: X", "X", "$& $1 $$ $` $'", MD_OK, SNIP "     1\tprice: $& $1 $$ $` $'",
                   "price: $& $1 $$ $` $'");
    /* old_str special characters are literal too. */
    EXPECT_REPLACE("a.*b\nab", ".*", "-", MD_OK, SNIP "     1\ta-b\n     2\tab", "a-b\nab");
    /* NUL bytes in the content, old_str and new_str. */
    EXPECT_REPLACE("a\0b\nc\0d", "\0d", "\0e", MD_OK, SNIP "     1\ta\0b\n     2\tc\0e",
                   "a\0b\nc\0e");
    EXPECT_REPLACE("a\0b\nc\0d", "\0", "-", MD_ECONFLICT,
                   "No replacement was performed. Multiple occurrences of old_str `\0` in lines: "
                   "1, 2. Please ensure it is unique",
                   "");
    EXPECT_REPLACE("x\0y", "y", "z", MD_OK, SNIP "     1\tx\0z", "x\0z");
    /* CRLF content keeps its '\r'. */
    EXPECT_REPLACE("a\r\nb\r\n", "b", "B", MD_OK, SNIP "     1\ta\r\n     2\tB\r\n     3\t",
                   "a\r\nB\r\n");
    /* Multibyte text. */
    EXPECT_REPLACE("caf\xc3\xa9 \xe2\x82\xac", "\xe2\x82\xac", "EUR", MD_OK,
                   SNIP "     1\tcaf\xc3\xa9 EUR", "caf\xc3\xa9 EUR");

    /* The result over the buffer limit: MD_ETOOBIG, no message. */
    struct md_buf res, msg;
    md_buf_init(&res, 5);
    md_buf_init(&msg, BIG);
    CHECK_EQ_INT(md_str_replace("abc", 3, "b", 1, "1234", 4, P, sizeof P - 1, &res, &msg),
                 MD_ETOOBIG);
    CHECK_EQ_INT(msg.len, 0);
    md_buf_free(&res);
    md_buf_free(&msg);
    /* Exactly at the limit is fine. */
    md_buf_init(&res, 6);
    md_buf_init(&msg, BIG);
    CHECK_EQ_INT(md_str_replace("abc", 3, "b", 1, "1234", 4, P, sizeof P - 1, &res, &msg), MD_OK);
    CHECK_MEM(res.data, res.len, "a1234c");
    md_buf_free(&res);
    md_buf_free(&msg);
}

/* ---- md_insert ---- */

#define EXPECT_INSERT(text, line, ins, want_err, want_msg, want_result)                            \
    do {                                                                                           \
        struct md_buf res_, msg_;                                                                  \
        md_buf_init(&res_, BIG);                                                                   \
        md_buf_init(&msg_, BIG);                                                                   \
        enum md_err e_ =                                                                           \
            md_insert(text, sizeof(text) - 1, line, ins, sizeof(ins) - 1, &res_, &msg_);           \
        CHECK_EQ_INT(e_, want_err);                                                                \
        CHECK_MEM(msg_.data, msg_.len, want_msg);                                                  \
        CHECK_MEM(res_.data, res_.len, want_result);                                               \
        md_buf_free(&res_);                                                                        \
        md_buf_free(&msg_);                                                                        \
    } while (0)

#define RANGE_ERR(n, max)                                                                          \
    "Error: Invalid `insert_line` parameter: " n                                                   \
    ". It should be within the range of lines of the file: [0, " max "]"

static void test_insert(void)
{
    EXPECT_INSERT("a\nb\nc", 0, "x", MD_OK, "", "x\na\nb\nc");
    EXPECT_INSERT("a\nb\nc", 1, "x", MD_OK, "", "a\nx\nb\nc");
    EXPECT_INSERT("a\nb\nc", 2, "x", MD_OK, "", "a\nb\nx\nc");
    EXPECT_INSERT("a\nb\nc", 3, "x", MD_OK, "", "a\nb\nc\nx");
    EXPECT_INSERT("a\nb\nc", 4, "x", MD_ERANGE, RANGE_ERR("4", "3"), "");
    EXPECT_INSERT("a\nb\nc", -1, "x", MD_ERANGE, RANGE_ERR("-1", "3"), "");
    EXPECT_INSERT("a\nb\nc", INT64_MAX, "x", MD_ERANGE, RANGE_ERR("9223372036854775807", "3"), "");
    EXPECT_INSERT("a\nb\nc", INT64_MIN, "x", MD_ERANGE, RANGE_ERR("-9223372036854775808", "3"), "");
    /* A trailing newline counts as a line. */
    EXPECT_INSERT("a\n", 2, "x", MD_OK, "", "a\n\nx");
    EXPECT_INSERT("a\n", 1, "x", MD_OK, "", "a\nx\n");
    EXPECT_INSERT("a\n", 3, "x", MD_ERANGE, RANGE_ERR("3", "2"), "");
    /* An empty file has one empty line. */
    EXPECT_INSERT("", 0, "x", MD_OK, "", "x\n");
    EXPECT_INSERT("", 1, "x", MD_OK, "", "\nx");
    EXPECT_INSERT("", 2, "x", MD_ERANGE, RANGE_ERR("2", "1"), "");
    /* One trailing "\n" of the text is dropped, only one. */
    EXPECT_INSERT("a", 0, "x\n", MD_OK, "", "x\na");
    EXPECT_INSERT("a", 1, "x\n", MD_OK, "", "a\nx");
    EXPECT_INSERT("a", 0, "x\n\n", MD_OK, "", "x\n\na");
    EXPECT_INSERT("a", 1, "x\n\n", MD_OK, "", "a\nx\n");
    EXPECT_INSERT("a\nb", 1, "\n", MD_OK, "", "a\n\nb");
    EXPECT_INSERT("a\nb", 1, "", MD_OK, "", "a\n\nb");
    /* "\r\n": only the '\n' goes, the '\r' stays. */
    EXPECT_INSERT("a", 0, "x\r\n", MD_OK, "", "x\r\na");
    EXPECT_INSERT("a\r\nb", 1, "x\r\n", MD_OK, "", "a\r\nx\r\nb");
    /* Several lines at once. */
    EXPECT_INSERT("a\nb", 1, "p\nq\n", MD_OK, "", "a\np\nq\nb");
    /* NUL bytes and multibyte text pass through. */
    EXPECT_INSERT("a\0\nb", 1, "\xc3\xa9\0", MD_OK, "", "a\0\n\xc3\xa9\0\nb");

    /* The result over the buffer limit: MD_ETOOBIG, nothing written. */
    struct md_buf res, msg;
    md_buf_init(&res, 4);
    md_buf_init(&msg, BIG);
    CHECK_EQ_INT(md_insert("abc", 3, 1, "x", 1, &res, &msg), MD_ETOOBIG);
    CHECK_EQ_INT(res.len, 0);
    CHECK_EQ_INT(msg.len, 0);
    md_buf_free(&res);
    md_buf_init(&res, 5);
    CHECK_EQ_INT(md_insert("abc", 3, 1, "x", 1, &res, &msg), MD_OK);
    CHECK_MEM(res.data, res.len, "abc\nx");
    md_buf_free(&res);
    md_buf_free(&msg);
}

static void test_put_lines(void)
{
    struct md_buf b;
    md_buf_init(&b, BIG);
    CHECK_EQ_INT(md_put_lines(&b, "a\nb\nc\n", 6, 2, 4), MD_OK);
    CHECK_MEM(b.data, b.len, "     2\tb\n     3\tc\n     4\t");
    md_buf_reset(&b);
    CHECK_EQ_INT(md_put_lines(&b, "a", 1, 1, 1), MD_OK);
    CHECK_MEM(b.data, b.len, "     1\ta");
    md_buf_free(&b);
}

/* The case-insensitive find of search (ASCII letters folded, other bytes exact), the query's
 * terms, words and where they begin, and the check and rank of a candidate. */
static void test_search_text(void)
{
    CHECK_EQ_INT(md_text_find_ci("The Billing cycle", 17, "billing", 7), 4);
    CHECK_EQ_INT(md_text_find_ci("BILLING", 7, "billing", 7), 0);
    CHECK_EQ_INT(md_text_find_ci("billin", 6, "billing", 7), -1);
    CHECK_EQ_INT(md_text_find_ci("ZÜRICH", strlen("ZÜRICH"), "zürich", strlen("zürich")), -1);
    CHECK_EQ_INT(md_text_find_ci("in Zürich", strlen("in Zürich"), "zürich", strlen("zürich")), 3);
    CHECK_EQ_INT(md_text_find_ci("a\0b", 3, "\0B", 2), 1);
    CHECK_EQ_INT(md_text_find_ci("abc", 3, "", 0), -1);
    /* Candidates of either case in turn, a failed candidate before a match, the last place. */
    CHECK_EQ_INT(md_text_find_ci("Bx bX bIlL", 10, "bill", 4), 6);
    CHECK_EQ_INT(md_text_find_ci("bilX BIlx biLL", 14, "BILL", 4), 10);
    CHECK_EQ_INT(md_text_find_ci("xxxb", 4, "B", 1), 3);
    CHECK_EQ_INT(md_text_find_ci("xxxb", 4, "xb", 2), 2);
    CHECK_EQ_INT(md_text_find_ci("-a-A", 4, "-A", 2), 0);
    /* The words of a term, as the backends' index queries take them. */
    {
        const char *t = "--Bill_ing \xc2\x85Zürich x";
        size_t at = 0, w = 0, len = 0, tn = strlen(t);
        CHECK_EQ_INT(md_search_next_word(t, tn, &at, &w, &len), 1);
        CHECK_MEM(t + w, len, "Bill");
        CHECK_EQ_INT(md_search_next_word(t, tn, &at, &w, &len), 1);
        CHECK_MEM(t + w, len, "ing");
        CHECK_EQ_INT(md_search_next_word(t, tn, &at, &w, &len), 1);
        CHECK_MEM(t + w, len, "Zürich");
        CHECK_EQ_INT(md_search_next_word(t, tn, &at, &w, &len), 1);
        CHECK_MEM(t + w, len, "x");
        CHECK_EQ_INT(md_search_next_word(t, tn, &at, &w, &len), 0);
        at = 0;
        CHECK_EQ_INT(md_search_next_word("-- ", 3, &at, &w, &len), 0);
    }
    /* Against the obvious loop, on random text of few letters (many candidates). */
    unsigned seed = 7;
    for (int round = 0; round < 2000; round++) {
        char hay[40], needle[5];
        size_t n = (size_t)(round % 40), m = 1 + (size_t)(round % 4);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            hay[i] = "aAbB-"[(seed >> 16) % 5];
        }
        for (size_t i = 0; i < m; i++) {
            seed = seed * 1103515245u + 12345u;
            needle[i] = "aAbB-"[(seed >> 16) % 5];
        }
        long want = -1;
        for (size_t i = 0; want < 0 && m <= n && i + m <= n; i++) {
            size_t k = 0;
            while (k < m && (hay[i + k] | 0x20) == (needle[k] | 0x20))
                k++;
            if (k == m)
                want = (long)i;
        }
        CHECK_EQ_INT(md_text_find_ci(hay, n, needle, m), want);
    }

    const char *terms[MD_SEARCH_TERMS_MAX];
    size_t lens[MD_SEARCH_TERMS_MAX], n = 0;
    struct md_buf why;
    md_buf_init(&why, 1024);
    CHECK_EQ_INT(
        md_search_terms_parse("  cycle \"billing cycle\"  x\"y z\"", terms, lens, &n, &why), MD_OK);
    CHECK_EQ_INT(n, 4);
    CHECK_MEM(terms[0], lens[0], "cycle");
    CHECK_MEM(terms[1], lens[1], "billing cycle");
    CHECK_MEM(terms[2], lens[2], "x");
    CHECK_MEM(terms[3], lens[3], "y z");
    CHECK_EQ_INT(md_search_terms_parse("\"\" ", terms, lens, &n, &why), MD_EINVAL);
    CHECK_MEM(why.data, why.len, "Parameter `q` is required: the words to search for");
    CHECK_EQ_INT(md_search_terms_parse("a \"b", terms, lens, &n, &why), MD_EINVAL);
    CHECK_MEM(why.data, why.len, "Parameter `q` has a double quote without its closing one");
    CHECK_EQ_INT(md_search_terms_parse("a b c d e f g h i", terms, lens, &n, &why), MD_EINVAL);
    CHECK_MEM(why.data, why.len, "Parameter `q` has too many terms: at most 8");
    CHECK_EQ_INT(md_search_terms_parse("a\tb", terms, lens, &n, &why), MD_EINVAL);
    CHECK_MEM(why.data, why.len, "Parameter `q` must not contain control characters");
    md_buf_free(&why);

    /* Words: runs of letters, digits and non-ASCII characters (a C1 control separates). */
    CHECK_EQ_INT(md_text_is_sep(" ", 1), 1);
    CHECK_EQ_INT(md_text_is_sep("_", 1), 1);
    CHECK_EQ_INT(md_text_is_sep("\0", 1), 1);
    CHECK_EQ_INT(md_text_is_sep("a", 1), 0);
    CHECK_EQ_INT(md_text_is_sep("7", 1), 0);
    CHECK_EQ_INT(md_text_is_sep("\xc2\x85", 2), 1);
    CHECK_EQ_INT(md_text_is_sep("\xc2\xa0", 2), 0);
    CHECK_EQ_INT(md_text_is_sep("東", strlen("東")), 0);
    CHECK_EQ_INT(md_text_find_word_ci("rebilling billing", 17, 0, "BILL", 4), 10);
    CHECK_EQ_INT(md_text_find_word_ci("rebilling", 9, 0, "billing", 7), -1);
    CHECK_EQ_INT(md_text_find_word_ci("snake_case", 10, 0, "case", 4), 6);
    CHECK_EQ_INT(md_text_find_word_ci("x.md", 4, 0, ".md", 3), 1);
    CHECK_EQ_INT(md_text_find_word_ci("Zürich", strlen("Zürich"), 0, "rich", 4), -1);
    CHECK_EQ_INT(md_text_find_word_ci("a\xc2\x85rich", 7, 0, "rich", 4), 3);
    CHECK_EQ_INT(md_text_find_word_ci("billing billing", 15, 1, "billing", 7), 8);

    /* The check and rank of a candidate: every term where a word begins, counted. */
    CHECK_EQ_INT(md_search_score("Tokyo 東京都, tokyo", strlen("Tokyo 東京都, tokyo"), "東京\nTOK",
                                 strlen("東京\nTOK")),
                 3);
    CHECK_EQ_INT(
        md_search_score("Tokyo 京都", strlen("Tokyo 京都"), "東京\nTOK", strlen("東京\nTOK")), -1);
    CHECK_EQ_INT(md_search_score("东京都", strlen("东京都"), "京都", strlen("京都")), -1);
    CHECK_EQ_INT(md_search_score("the billing cycle", 17, "billing cycle\ncycle", 19), 2);
    CHECK_EQ_INT(md_search_score("the billing  cycle", 18, "billing cycle", 13), -1);
    CHECK_EQ_INT(md_search_score("anything", 8, "", 0), 0);
}

int main(void)
{
    test_size_format();
    test_line_count();
    test_view_whole();
    test_view_ranges();
    test_view_line_limit();
    test_view_truncation();
    test_str_replace();
    test_insert();
    test_put_lines();
    test_search_text();
    return check_report();
}
