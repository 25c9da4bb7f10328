/*
 * test_path.c — proves docs/behaviour.md §3 on md_path_canon / md_path_errmsg and
 * the path helpers (depth, parent, is_inside) plus the strict UTF-8 checks
 * they rely on (md_utf8_seq, md_utf8_valid, md_utf8_cut). Every rejection
 * is checked for its status AND its exact client-facing text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_path.h"
#include "base/md_utf8.h"
#include "check.h"

static const struct md_path_limits LIM = {4096, 255};

/* Canonicalise; returns the status, the canonical form in out. */
static enum md_path_status canon(const char *in, size_t len, char *out, size_t *out_len)
{
    *out_len = 0;
    out[0] = '\0';
    return md_path_canon(in, len, &LIM, out, out_len);
}

/* The error text for a status, in a fresh malloc'd buffer (caller frees). */
static char *errmsg(enum md_path_status st, const char *in, size_t len, size_t *msg_len)
{
    struct md_buf m;
    md_buf_init(&m, 1 << 20);
    enum md_err e = md_path_errmsg(&m, st, in, len, &LIM);
    CHECK_EQ_INT(e, MD_OK);
    return md_buf_take(&m, msg_len);
}

/* A literal path that must canonicalise to the literal `want`. */
#define EXPECT_OK(in, want)                                                                        \
    do {                                                                                           \
        char o_[sizeof(in) + 1];                                                                   \
        size_t ol_;                                                                                \
        enum md_path_status s_ = canon(in, sizeof(in) - 1, o_, &ol_);                              \
        CHECK_EQ_INT(s_, MD_PATH_OK);                                                              \
        if (s_ == MD_PATH_OK) {                                                                    \
            CHECK_MEM(o_, ol_, want);                                                              \
            CHECK_EQ_INT(strlen(o_), ol_); /* NUL-terminated */                                    \
        }                                                                                          \
    } while (0)

/* A literal path (may hold NUL bytes) that must be rejected with `status`
 * and exactly the literal message `msg`. */
#define EXPECT_ERR(in, status, msg)                                                                \
    do {                                                                                           \
        char o_[sizeof(in) + 1];                                                                   \
        size_t ol_, ml_;                                                                           \
        enum md_path_status s_ = canon(in, sizeof(in) - 1, o_, &ol_);                              \
        CHECK_EQ_INT(s_, status);                                                                  \
        char *m_ = errmsg(s_, in, sizeof(in) - 1, &ml_);                                           \
        CHECK_MEM(m_, ml_, msg);                                                                   \
        free(m_);                                                                                  \
    } while (0)

static void test_root_and_slashes(void)
{
    EXPECT_OK("/memories", "/memories");
    EXPECT_OK("/memories/", "/memories");
    EXPECT_OK("/memories//", "/memories");
    EXPECT_OK("/memories///", "/memories");
    EXPECT_OK("/memories/a", "/memories/a");
    EXPECT_OK("/memories/a/", "/memories/a");
    EXPECT_OK("/memories//a/", "/memories/a");
    EXPECT_OK("/memories//a//", "/memories/a");
    EXPECT_OK("/memories///a//b///c.txt", "/memories/a/b/c.txt");
    EXPECT_OK("/memories/a/b/c.txt/", "/memories/a/b/c.txt");
    /* Names that merely contain dots are fine. */
    EXPECT_OK("/memories/.hidden", "/memories/.hidden");
    EXPECT_OK("/memories/...", "/memories/...");
    EXPECT_OK("/memories/a..b/..c/c..", "/memories/a..b/..c/c..");
    EXPECT_OK("/memories/.a./x.", "/memories/.a./x.");
    EXPECT_OK("/memories/a b/c d.txt", "/memories/a b/c d.txt");
    EXPECT_OK("/memories/node_modules/x", "/memories/node_modules/x");
    EXPECT_OK("/memories/memories", "/memories/memories");
}

static void test_not_under_root(void)
{
    EXPECT_ERR("", MD_PATH_NOT_UNDER_ROOT, "Error: Path must start with /memories, got: ");
    EXPECT_ERR("/", MD_PATH_NOT_UNDER_ROOT, "Error: Path must start with /memories, got: /");
    EXPECT_ERR("/memoriesX", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got: /memoriesX");
    EXPECT_ERR("/memories.txt", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got: /memories.txt");
    EXPECT_ERR("/memories-old/a", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got: /memories-old/a");
    EXPECT_ERR("/memorie", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got: /memorie");
    EXPECT_ERR("memories/a.txt", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got: memories/a.txt");
    EXPECT_ERR("a.txt", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got: a.txt");
    EXPECT_ERR("./memories/a", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got: ./memories/a");
    EXPECT_ERR("//memories/a", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got: //memories/a");
    EXPECT_ERR("/Memories/a", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got: /Memories/a");
    EXPECT_ERR(" /memories", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got:  /memories");
    EXPECT_ERR("/etc/passwd", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got: /etc/passwd");
    EXPECT_ERR("\\memories\\a", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got: \\memories\\a");
}

static void test_dot_segments(void)
{
    EXPECT_ERR("/memories/.", MD_PATH_DOT,
               "Error: Path /memories/. contains a '.' segment, which is not allowed");
    EXPECT_ERR("/memories/./a", MD_PATH_DOT,
               "Error: Path /memories/./a contains a '.' segment, which is not allowed");
    EXPECT_ERR("/memories/a/.", MD_PATH_DOT,
               "Error: Path /memories/a/. contains a '.' segment, which is not allowed");
    EXPECT_ERR("/memories/a/./", MD_PATH_DOT,
               "Error: Path /memories/a/./ contains a '.' segment, which is not allowed");
    EXPECT_ERR("/memories//.//a", MD_PATH_DOT,
               "Error: Path /memories//.//a contains a '.' segment, which is not allowed");
    /* '..' that stays inside is still refused. */
    EXPECT_ERR("/memories/a/../b", MD_PATH_DOTDOT,
               "Error: Path /memories/a/../b contains a '..' segment, which is not allowed");
    EXPECT_ERR("/memories/a/..", MD_PATH_DOTDOT,
               "Error: Path /memories/a/.. contains a '..' segment, which is not allowed");
    EXPECT_ERR("/memories/a/b/../../c", MD_PATH_DOTDOT,
               "Error: Path /memories/a/b/../../c contains a '..' segment, which is not allowed");
    /* '..' that climbs above /memories. */
    EXPECT_ERR("/memories/..", MD_PATH_ESCAPES,
               "Error: Path /memories/.. would escape /memories "
               "directory");
    EXPECT_ERR("/memories/../", MD_PATH_ESCAPES,
               "Error: Path /memories/../ would escape /memories directory");
    EXPECT_ERR("/memories/../etc/passwd", MD_PATH_ESCAPES,
               "Error: Path /memories/../etc/passwd would escape /memories directory");
    EXPECT_ERR("/memories/a/../../secret", MD_PATH_ESCAPES,
               "Error: Path /memories/a/../../secret would escape /memories directory");
    EXPECT_ERR("/memories//..//..", MD_PATH_ESCAPES,
               "Error: Path /memories//..//.. would escape /memories directory");
    /* An escape is reported as such even after a '.' segment. */
    EXPECT_ERR("/memories/./..", MD_PATH_ESCAPES,
               "Error: Path /memories/./.. would escape /memories directory");
    EXPECT_ERR("/memories/a/./../..", MD_PATH_ESCAPES,
               "Error: Path /memories/a/./../.. would escape /memories directory");
}

static void test_backslash_and_controls(void)
{
    EXPECT_ERR("/memories/a\\b", MD_PATH_BACKSLASH,
               "Error: Path /memories/a\\b contains a backslash (\\), which is not allowed");
    EXPECT_ERR("/memories\\a", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got: /memories\\a");
    EXPECT_ERR("/memories/..\\..\\etc", MD_PATH_BACKSLASH,
               "Error: Path /memories/..\\..\\etc contains a backslash (\\), which is not allowed");
    EXPECT_ERR("/memories/a\\", MD_PATH_BACKSLASH,
               "Error: Path /memories/a\\ contains a backslash (\\), which is not allowed");

    /* NUL and every other C0 control, DEL, C1 controls. */
    EXPECT_ERR("/memories/a\0b", MD_PATH_CONTROL,
               "Error: Path /memories/a\0b contains a control character, which is not allowed");
    EXPECT_ERR("/memories\0/a", MD_PATH_NOT_UNDER_ROOT,
               "Error: Path must start with /memories, got: /memories\0/a");
    EXPECT_ERR("/memories/\0", MD_PATH_CONTROL,
               "Error: Path /memories/\0 contains a control character, which is not allowed");
    EXPECT_ERR("/memories/a\tb", MD_PATH_CONTROL,
               "Error: Path /memories/a\tb contains a control character, which is not allowed");
    EXPECT_ERR("/memories/a\n", MD_PATH_CONTROL,
               "Error: Path /memories/a\n contains a control character, which is not allowed");
    EXPECT_ERR("/memories/a\rb", MD_PATH_CONTROL,
               "Error: Path /memories/a\rb contains a control character, which is not allowed");
    EXPECT_ERR("/memories/\x1b[31m", MD_PATH_CONTROL,
               "Error: Path /memories/\x1b[31m contains a control character, which is not "
               "allowed");
    EXPECT_ERR("/memories/a\x7f", MD_PATH_CONTROL,
               "Error: Path /memories/a\x7f contains a control character, which is not allowed");
    EXPECT_ERR("/memories/\xc2\x80x", MD_PATH_CONTROL,
               "Error: Path /memories/\xc2\x80x contains a control character, which is not "
               "allowed");
    EXPECT_ERR("/memories/x\xc2\x85", MD_PATH_CONTROL,
               "Error: Path /memories/x\xc2\x85 contains a control character, which is not "
               "allowed");
    EXPECT_ERR("/memories/x\xc2\x9f", MD_PATH_CONTROL,
               "Error: Path /memories/x\xc2\x9f contains a control character, which is not "
               "allowed");
    /* Every C0 byte and DEL, one by one. */
    for (int c = 0; c <= 0x20; c++) {
        char p[] = "/memories/a?b";
        p[11] = (char)(c == 0x20 ? 0x7f : c);
        char o[sizeof p];
        size_t ol;
        CHECK_EQ_INT(canon(p, sizeof p - 1, o, &ol), MD_PATH_CONTROL);
    }
    /* Printable neighbours of the control ranges are fine. */
    EXPECT_OK("/memories/a b~", "/memories/a b~");
    EXPECT_OK("/memories/nb\xc2\xa0sp", "/memories/nb\xc2\xa0sp"); /* U+00A0 */
    EXPECT_OK("/memories/\xc2\xbf", "/memories/\xc2\xbf");         /* U+00BF */
}

static void test_percent(void)
{
    static const char *const bad[] = {"%2e", "%2E", "%2f", "%2F", "%5c", "%5C"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char p[64], o[64];
        size_t ol;
        int n = snprintf(p, sizeof p, "/memories/a%sb", bad[i]);
        CHECK_EQ_INT(canon(p, (size_t)n, o, &ol), MD_PATH_PERCENT);
    }
    EXPECT_ERR("/memories/%2e%2e/secret", MD_PATH_PERCENT,
               "Error: Path /memories/%2e%2e/secret contains a percent-encoded '.', '/' or '\\' "
               "(%2e, %2f or %5c), which is not allowed");
    EXPECT_ERR("/memories/%2E%2E", MD_PATH_PERCENT,
               "Error: Path /memories/%2E%2E contains a percent-encoded '.', '/' or '\\' (%2e, "
               "%2f or %5c), which is not allowed");
    EXPECT_ERR("/memories/a%2fb", MD_PATH_PERCENT,
               "Error: Path /memories/a%2fb contains a percent-encoded '.', '/' or '\\' (%2e, "
               "%2f or %5c), which is not allowed");
    EXPECT_ERR("/memories/a%2F..%2Fb", MD_PATH_PERCENT,
               "Error: Path /memories/a%2F..%2Fb contains a percent-encoded '.', '/' or '\\' "
               "(%2e, %2f or %5c), which is not allowed");
    EXPECT_ERR("/memories/a%5cb", MD_PATH_PERCENT,
               "Error: Path /memories/a%5cb contains a percent-encoded '.', '/' or '\\' (%2e, "
               "%2f or %5c), which is not allowed");
    EXPECT_ERR("/memories/a%5C", MD_PATH_PERCENT,
               "Error: Path /memories/a%5C contains a percent-encoded '.', '/' or '\\' (%2e, "
               "%2f or %5c), which is not allowed");
    /* Harmless percent signs are kept literally. */
    EXPECT_OK("/memories/a%20b", "/memories/a%20b");
    EXPECT_OK("/memories/100%", "/memories/100%");
    EXPECT_OK("/memories/50%off", "/memories/50%off");
    EXPECT_OK("/memories/%", "/memories/%");
    EXPECT_OK("/memories/%2", "/memories/%2");
    EXPECT_OK("/memories/%25", "/memories/%25");
    EXPECT_OK("/memories/%252e", "/memories/%252e");
    EXPECT_OK("/memories/%2g%5d%3e%2d", "/memories/%2g%5d%3e%2d");
    EXPECT_OK("/memories/%e2%2", "/memories/%e2%2");
}

static void test_bad_utf8(void)
{
    EXPECT_ERR("/memories/\xc0\xaf", MD_PATH_BAD_UTF8,
               "Error: Path /memories/\xc0\xaf is not valid UTF-8"); /* overlong '/' */
    EXPECT_ERR("/memories/\xc1\xbf", MD_PATH_BAD_UTF8,
               "Error: Path /memories/\xc1\xbf is not valid UTF-8");
    EXPECT_ERR("/memories/\xe0\x80\xae", MD_PATH_BAD_UTF8,
               "Error: Path /memories/\xe0\x80\xae is not valid UTF-8"); /* overlong '.' */
    EXPECT_ERR("/memories/\xf0\x80\x80\xaf", MD_PATH_BAD_UTF8,
               "Error: Path /memories/\xf0\x80\x80\xaf is not valid UTF-8");
    EXPECT_ERR("/memories/\xed\xa0\x80", MD_PATH_BAD_UTF8,
               "Error: Path /memories/\xed\xa0\x80 is not valid UTF-8"); /* U+D800 */
    EXPECT_ERR("/memories/\xed\xbf\xbf", MD_PATH_BAD_UTF8,
               "Error: Path /memories/\xed\xbf\xbf is not valid UTF-8"); /* U+DFFF */
    EXPECT_ERR("/memories/a\xe2\x82", MD_PATH_BAD_UTF8,
               "Error: Path /memories/a\xe2\x82 is not valid UTF-8"); /* truncated at end */
    EXPECT_ERR("/memories/\xe2\x82/b", MD_PATH_BAD_UTF8,
               "Error: Path /memories/\xe2\x82/b is not valid UTF-8"); /* truncated inside */
    EXPECT_ERR("/memories/\xf0\x9f\x98", MD_PATH_BAD_UTF8,
               "Error: Path /memories/\xf0\x9f\x98 is not valid UTF-8");
    EXPECT_ERR("/memories/\xf4\x90\x80\x80", MD_PATH_BAD_UTF8,
               "Error: Path /memories/\xf4\x90\x80\x80 is not valid UTF-8"); /* U+110000 */
    EXPECT_ERR("/memories/\xf5\x80\x80\x80", MD_PATH_BAD_UTF8,
               "Error: Path /memories/\xf5\x80\x80\x80 is not valid UTF-8");
    EXPECT_ERR("/memories/\x80", MD_PATH_BAD_UTF8,
               "Error: Path /memories/\x80 is not valid UTF-8"); /* lone continuation */
    EXPECT_ERR("/memories/\xff", MD_PATH_BAD_UTF8, "Error: Path /memories/\xff is not valid UTF-8");
    EXPECT_ERR("/memories/\xfe\xfe", MD_PATH_BAD_UTF8,
               "Error: Path /memories/\xfe\xfe is not valid UTF-8");
    EXPECT_ERR("/memories/\xc3", MD_PATH_BAD_UTF8, "Error: Path /memories/\xc3 is not valid UTF-8");
    /* Valid multibyte names, 2 to 4 bytes per character. */
    EXPECT_OK("/memories/caf\xc3\xa9/r\xc3\xa9sum\xc3\xa9.md",
              "/memories/caf\xc3\xa9/r\xc3\xa9sum\xc3\xa9.md");
    EXPECT_OK(
        "/memories/\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e//\xe3\x83\x8e\xe3\x83\xbc\xe3\x83\x88/",
        "/memories/\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e/\xe3\x83\x8e\xe3\x83\xbc\xe3\x83\x88");
    EXPECT_OK("/memories/\xf0\x9f\x98\x80.txt", "/memories/\xf0\x9f\x98\x80.txt");
    EXPECT_OK("/memories/\xf4\x8f\xbf\xbf", "/memories/\xf4\x8f\xbf\xbf"); /* U+10FFFF */
    EXPECT_OK("/memories/\xed\x9f\xbf\xee\x80\x80", "/memories/\xed\x9f\xbf\xee\x80\x80");
}

/* "/memories" followed by "/" + 'x'*199 segments, cut to exactly `len` bytes. */
static char *long_path(size_t len)
{
    char *p = malloc(len + 1);
    memcpy(p, "/memories", 9);
    for (size_t i = 9; i < len; i++)
        p[i] = (i - 9) % 200 == 0 ? '/' : 'x';
    p[len] = '\0';
    return p;
}

static void test_path_length(void)
{
    char *out = malloc(8192);
    size_t ol, ml;

    /* Exactly 4096 bytes: accepted and unchanged. */
    char *p = long_path(4096);
    CHECK(p[4095] != '/');
    CHECK_EQ_INT(canon(p, 4096, out, &ol), MD_PATH_OK);
    CHECK_BUF(out, ol, p, 4096);
    free(p);

    /* 4097 bytes: refused, the message shows the first 100 bytes. */
    p = long_path(4097);
    CHECK_EQ_INT(canon(p, 4097, out, &ol), MD_PATH_TOO_LONG);
    char *m = errmsg(MD_PATH_TOO_LONG, p, 4097, &ml);
    char want[256];
    int wl = snprintf(want, sizeof want,
                      "Error: Path %.100s... is too long: 4097 bytes (the limit "
                      "is 4096)",
                      p);
    CHECK_BUF(m, ml, want, (size_t)wl);
    free(m);
    free(p);

    /* The limit is on the bytes as sent, even if the canonical form is short. */
    p = malloc(4098);
    memcpy(p, "/memories", 9);
    memset(p + 9, '/', 4097 - 9 - 1);
    p[4096] = 'a';
    CHECK_EQ_INT(canon(p, 4097, out, &ol), MD_PATH_TOO_LONG);
    CHECK_EQ_INT(canon(p + 1, 4096, out, &ol), MD_PATH_NOT_UNDER_ROOT);
    memcpy(p + 1, "/memories", 9); /* 4096 bytes from p + 1 */
    CHECK_EQ_INT(canon(p + 1, 4096, out, &ol), MD_PATH_OK);
    CHECK_MEM(out, ol, "/memories/a");
    free(p);

    /* The 100-byte head in the message never splits a character:
     * "/memories/a" (11 bytes) then 2-byte characters: byte 100 is a lead. */
    p = malloc(5000);
    memcpy(p, "/memories/a", 11);
    size_t n = 11;
    while (n + 2 <= 4200) {
        p[n++] = '\xc3';
        p[n++] = '\xa9';
        if ((n - 11) % 200 == 0)
            p[n++] = '/';
    }
    CHECK_EQ_INT(canon(p, n, out, &ol), MD_PATH_TOO_LONG);
    m = errmsg(MD_PATH_TOO_LONG, p, n, &ml);
    wl = snprintf(want, sizeof want,
                  "Error: Path %.99s... is too long: %zu bytes (the limit is "
                  "4096)",
                  p, n);
    CHECK_BUF(m, ml, want, (size_t)wl);
    free(m);

    /* Too long AND invalid UTF-8 in the head: the head is left out. */
    p[50] = '\xff';
    CHECK_EQ_INT(canon(p, n, out, &ol), MD_PATH_TOO_LONG);
    m = errmsg(MD_PATH_TOO_LONG, p, n, &ml);
    wl = snprintf(want, sizeof want, "Error: Path ... is too long: %zu bytes (the limit is 4096)",
                  n);
    CHECK_BUF(m, ml, want, (size_t)wl);
    free(m);
    free(p);
    free(out);
}

static void test_segment_length(void)
{
    char p[600], out[600];
    size_t ol, ml;

    /* A segment of exactly 255 bytes. */
    memcpy(p, "/memories/d/", 12);
    memset(p + 12, 's', 255);
    memcpy(p + 12 + 255, "/e", 3);
    size_t n = 12 + 255 + 2;
    CHECK_EQ_INT(canon(p, n, out, &ol), MD_PATH_OK);
    CHECK_BUF(out, ol, p, n);

    /* 256 bytes. */
    memset(p + 12, 's', 256);
    memcpy(p + 12 + 256, "/e", 3);
    n = 12 + 256 + 2;
    CHECK_EQ_INT(canon(p, n, out, &ol), MD_PATH_SEGMENT_TOO_LONG);
    char *m = errmsg(MD_PATH_SEGMENT_TOO_LONG, p, n, &ml);
    char want[700];
    int wl = snprintf(want, sizeof want, "Error: Path %s has a segment longer than 255 bytes", p);
    CHECK_BUF(m, ml, want, (size_t)wl);
    free(m);

    /* The last segment too, with a trailing '/'. */
    memset(p + 10, 'z', 256);
    memcpy(p + 10 + 256, "/", 2);
    n = 10 + 256 + 1;
    CHECK_EQ_INT(canon(p, n, out, &ol), MD_PATH_SEGMENT_TOO_LONG);
    n--; /* without the '/': still 256 */
    CHECK_EQ_INT(canon(p, n, out, &ol), MD_PATH_SEGMENT_TOO_LONG);
    n--; /* 255 */
    CHECK_EQ_INT(canon(p, n, out, &ol), MD_PATH_OK);

    /* Segments are measured in bytes: 127 two-byte characters + 'a' = 255
     * bytes is fine, 128 of them (256 bytes) is not. */
    memcpy(p, "/memories/", 10);
    n = 10;
    for (int i = 0; i < 127; i++) {
        p[n++] = '\xc3';
        p[n++] = '\xa9';
    }
    p[n++] = 'a';
    CHECK_EQ_INT(canon(p, n, out, &ol), MD_PATH_OK);
    CHECK_BUF(out, ol, p, n);
    p[n - 1] = '\xc3';
    p[n++] = '\xa9';
    CHECK_EQ_INT(canon(p, n, out, &ol), MD_PATH_SEGMENT_TOO_LONG);
    m = errmsg(MD_PATH_SEGMENT_TOO_LONG, p, n, &ml);
    wl = snprintf(want, sizeof want, "Error: Path %.*s has a segment longer than 255 bytes", (int)n,
                  p);
    CHECK_BUF(m, ml, want, (size_t)wl);
    free(m);

    /* A 4-byte character at the end of a 255-byte segment. */
    n = 10;
    memset(p + n, 'q', 251);
    n += 251;
    memcpy(p + n, "\xf0\x9f\x98\x80", 4);
    n += 4;
    CHECK_EQ_INT(canon(p, n, out, &ol), MD_PATH_OK);
}

static void test_errmsg_ok(void)
{
    struct md_buf m;
    md_buf_init(&m, 100);
    CHECK_EQ_INT(md_path_errmsg(&m, MD_PATH_OK, "/memories", 9, &LIM), MD_OK);
    CHECK_EQ_INT(m.len, 0);
    md_buf_free(&m);
}

static void test_helpers(void)
{
    CHECK_EQ_INT(md_path_depth("/memories", 9), 0);
    CHECK_EQ_INT(md_path_depth("/memories/a", 11), 1);
    CHECK_EQ_INT(md_path_depth("/memories/a/b", 13), 2);
    CHECK_EQ_INT(md_path_depth("/memories/a/b/c.txt", 19), 3);
    CHECK_EQ_INT(md_path_depth("/memories/\xc3\xa9/x", 14), 2);

    CHECK_EQ_INT(md_path_parent_len("/memories/a", 11), 9);
    CHECK_EQ_INT(md_path_parent_len("/memories/a/b", 13), 11);
    CHECK_EQ_INT(md_path_parent_len("/memories/a/b/c.txt", 19), 13);
    CHECK_EQ_INT(md_path_parent_len("/memories/abc/def", 17), 13);
    CHECK_EQ_INT(md_path_parent_len("/memories/\xc3\xa9/x", 14), 12);
    /* A prefix of a longer path works the same. */
    CHECK_EQ_INT(md_path_parent_len("/memories/a/b/c.txt", 13), 11);

    CHECK(md_path_is_inside("/memories/a/b", 13, "/memories/a", 11));
    CHECK(md_path_is_inside("/memories/a/b/c", 15, "/memories/a", 11));
    CHECK(md_path_is_inside("/memories/a", 11, "/memories", 9));
    CHECK(!md_path_is_inside("/memories/a", 11, "/memories/a", 11));
    CHECK(!md_path_is_inside("/memories", 9, "/memories", 9));
    CHECK(!md_path_is_inside("/memories/ab", 12, "/memories/a", 11));
    CHECK(!md_path_is_inside("/memories/a-b/c", 15, "/memories/a", 11));
    CHECK(!md_path_is_inside("/memories/a", 11, "/memories/a/b", 13));
    CHECK(!md_path_is_inside("/memories/b/a", 13, "/memories/a", 11));
}

static void test_utf8(void)
{
    CHECK(md_utf8_valid("", 0));
    CHECK(md_utf8_valid("plain ascii", 11));
    CHECK(md_utf8_valid("a\0b", 3));
    CHECK(md_utf8_valid("\xc3\xa9", 2));         /* U+00E9 */
    CHECK(md_utf8_valid("\xc2\x80", 2));         /* U+0080: lowest 2-byte */
    CHECK(md_utf8_valid("\xdf\xbf", 2));         /* U+07FF */
    CHECK(md_utf8_valid("\xe0\xa0\x80", 3));     /* U+0800: lowest 3-byte */
    CHECK(md_utf8_valid("\xe2\x82\xac", 3));     /* U+20AC */
    CHECK(md_utf8_valid("\xed\x9f\xbf", 3));     /* U+D7FF */
    CHECK(md_utf8_valid("\xee\x80\x80", 3));     /* U+E000 */
    CHECK(md_utf8_valid("\xef\xbf\xbf", 3));     /* U+FFFF */
    CHECK(md_utf8_valid("\xf0\x90\x80\x80", 4)); /* U+10000 */
    CHECK(md_utf8_valid("\xf0\x9f\x98\x80", 4)); /* U+1F600 */
    CHECK(md_utf8_valid("\xf4\x8f\xbf\xbf", 4)); /* U+10FFFF */

    CHECK(!md_utf8_valid("\x80", 1));
    CHECK(!md_utf8_valid("\xbf", 1));
    CHECK(!md_utf8_valid("\xc0\x80", 2)); /* overlong NUL */
    CHECK(!md_utf8_valid("\xc1\xbf", 2));
    CHECK(!md_utf8_valid("\xe0\x80\x80", 3));
    CHECK(!md_utf8_valid("\xe0\x9f\xbf", 3)); /* overlong U+07FF */
    CHECK(!md_utf8_valid("\xed\xa0\x80", 3)); /* U+D800 */
    CHECK(!md_utf8_valid("\xed\xbf\xbf", 3)); /* U+DFFF */
    CHECK(!md_utf8_valid("\xf0\x80\x80\x80", 4));
    CHECK(!md_utf8_valid("\xf0\x8f\xbf\xbf", 4)); /* overlong U+FFFF */
    CHECK(!md_utf8_valid("\xf4\x90\x80\x80", 4)); /* U+110000 */
    CHECK(!md_utf8_valid("\xf5\x80\x80\x80", 4));
    CHECK(!md_utf8_valid("\xf8\x88\x80\x80\x80", 5));
    CHECK(!md_utf8_valid("\xfe", 1));
    CHECK(!md_utf8_valid("\xff", 1));
    CHECK(!md_utf8_valid("\xc3", 1));         /* truncated */
    CHECK(!md_utf8_valid("\xe2\x82", 2));     /* truncated */
    CHECK(!md_utf8_valid("\xf0\x9f\x98", 3)); /* truncated */
    CHECK(!md_utf8_valid("\xc3"
                         "a",
                         2));                   /* bad continuation */
    CHECK(!md_utf8_valid("\xe2\x28\xa1", 3));   /* bad continuation */
    CHECK(!md_utf8_valid("ok\xc3\xa9\xff", 5)); /* bad after good */
    CHECK(!md_utf8_valid("\xc3\xa9\xa9", 3));   /* extra continuation */
    /* The length limits the check: a valid prefix of an invalid string. */
    CHECK(md_utf8_valid("ab\xff", 2));

    CHECK_EQ_INT(md_utf8_seq("a", 1), 1);
    CHECK_EQ_INT(md_utf8_seq("\xc3\xa9", 2), 2);
    CHECK_EQ_INT(md_utf8_seq("\xe2\x82\xac", 3), 3);
    CHECK_EQ_INT(md_utf8_seq("\xf0\x9f\x98\x80", 4), 4);
    CHECK_EQ_INT(md_utf8_seq("\xf0\x9f\x98\x80", 3), 0); /* n limits it */
    CHECK_EQ_INT(md_utf8_seq("\xc3\xa9", 1), 0);
    CHECK_EQ_INT(md_utf8_seq("\x80", 1), 0);

    /* md_utf8_cut: longest prefix that does not split a character. */
    CHECK_EQ_INT(md_utf8_cut("", 0), 0);
    CHECK_EQ_INT(md_utf8_cut("abc", 3), 3);
    CHECK_EQ_INT(md_utf8_cut("abc", 2), 2);
    CHECK_EQ_INT(md_utf8_cut("\xc3\xa9", 1), 0);
    CHECK_EQ_INT(md_utf8_cut("\xc3\xa9", 2), 2);
    CHECK_EQ_INT(md_utf8_cut("a\xc3\xa9", 2), 1);
    CHECK_EQ_INT(md_utf8_cut("a\xe2\x82\xac", 2), 1);
    CHECK_EQ_INT(md_utf8_cut("a\xe2\x82\xac", 3), 1);
    CHECK_EQ_INT(md_utf8_cut("a\xe2\x82\xac", 4), 4);
    CHECK_EQ_INT(md_utf8_cut("\xf0\x9f\x98\x80", 1), 0);
    CHECK_EQ_INT(md_utf8_cut("\xf0\x9f\x98\x80", 2), 0);
    CHECK_EQ_INT(md_utf8_cut("\xf0\x9f\x98\x80", 3), 0);
    CHECK_EQ_INT(md_utf8_cut("\xf0\x9f\x98\x80", 4), 4);
    CHECK_EQ_INT(md_utf8_cut("x\xf0\x9f\x98\x80y", 5), 5);
    CHECK_EQ_INT(md_utf8_cut("x\xf0\x9f\x98\x80y", 4), 1);
    CHECK_EQ_INT(md_utf8_cut("\xc3\xa9\xc3\xa9", 3), 2);
}

int main(void)
{
    test_root_and_slashes();
    test_not_under_root();
    test_dot_segments();
    test_backslash_and_controls();
    test_percent();
    test_bad_utf8();
    test_path_length();
    test_segment_length();
    test_errmsg_ok();
    test_helpers();
    test_utf8();
    return check_report();
}
