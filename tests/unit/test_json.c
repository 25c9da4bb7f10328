/*
 * test_json.c — proves JSON writing (md_json.h): string escaping (quotes,
 * backslash, \n \r \t, other controls as \u00XX, NUL, valid multibyte text
 * kept as is, invalid UTF-8 bytes as \ufffd — always valid JSON, checked by
 * parsing it back with jansson), the tool_result body with and without
 * tool_use_id, and the bounded buffer (md_buf.h): MD_ETOOBIG leaves the
 * buffer unchanged, md_buf_take hands the memory over.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_buf.h"
#include "base/md_json.h"
#include "check.h"

/* Escape a literal (may hold NUL bytes); compare with the literal `want`;
 * parse the result back and compare with `decoded` (its UTF-8 bytes). */
#define EXPECT_JSON(in, want, decoded)                                                             \
    do {                                                                                           \
        struct md_buf b_;                                                                          \
        md_buf_init(&b_, 1 << 20);                                                                 \
        CHECK_EQ_INT(md_json_put_string(&b_, in, sizeof(in) - 1), MD_OK);                          \
        CHECK_MEM(b_.data, b_.len, want);                                                          \
        json_error_t je_;                                                                          \
        json_t *v_ = json_loadb(b_.data, b_.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je_);          \
        CHECK(v_ != NULL && json_is_string(v_));                                                   \
        if (v_ && json_is_string(v_))                                                              \
            CHECK_BUF(json_string_value(v_), json_string_length(v_), decoded,                      \
                      sizeof(decoded) - 1);                                                        \
        json_decref(v_);                                                                           \
        md_buf_free(&b_);                                                                          \
    } while (0)

static void test_put_string(void)
{
    EXPECT_JSON("", "\"\"", "");
    EXPECT_JSON("plain text", "\"plain text\"", "plain text");
    EXPECT_JSON("say \"hi\"", "\"say \\\"hi\\\"\"", "say \"hi\"");
    EXPECT_JSON("a\\b", "\"a\\\\b\"", "a\\b");
    EXPECT_JSON("C:\\\"x\"\\", "\"C:\\\\\\\"x\\\"\\\\\"", "C:\\\"x\"\\");
    EXPECT_JSON("l1\nl2\r\n\tx", "\"l1\\nl2\\r\\n\\tx\"", "l1\nl2\r\n\tx");
    EXPECT_JSON("/memories/a.txt", "\"/memories/a.txt\"", "/memories/a.txt");
    /* Other control characters as \u00XX, lower-case hex. */
    EXPECT_JSON("\x01", "\"\\u0001\"", "\x01");
    EXPECT_JSON("\b\f\v", "\"\\u0008\\u000c\\u000b\"", "\b\f\v");
    EXPECT_JSON("\x1b[0m", "\"\\u001b[0m\"", "\x1b[0m");
    EXPECT_JSON("\x1f", "\"\\u001f\"", "\x1f");
    EXPECT_JSON(" ~\x7f", "\" ~\x7f\"", " ~\x7f"); /* DEL needs no escape */
    /* NUL. */
    EXPECT_JSON("a\0b", "\"a\\u0000b\"", "a\0b");
    EXPECT_JSON("\0", "\"\\u0000\"", "\0");
    /* Valid multibyte text is kept, 2 to 4 bytes, incl. U+2028. */
    EXPECT_JSON("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8",
                "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8\"",
                "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8");
    EXPECT_JSON("\xc2\x80\xf4\x8f\xbf\xbf", "\"\xc2\x80\xf4\x8f\xbf\xbf\"",
                "\xc2\x80\xf4\x8f\xbf\xbf");
    /* Invalid UTF-8: each bad byte becomes U+FFFD. */
    EXPECT_JSON("\xff", "\"\\ufffd\"", "\xef\xbf\xbd");
    EXPECT_JSON("a\xc3", "\"a\\ufffd\"", "a\xef\xbf\xbd"); /* truncated */
    EXPECT_JSON("\xc3(", "\"\\ufffd(\"", "\xef\xbf\xbd("); /* bad continuation */
    EXPECT_JSON("\xc0\xaf", "\"\\ufffd\\ufffd\"",          /* overlong */
                "\xef\xbf\xbd\xef\xbf\xbd");
    EXPECT_JSON("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"", /* surrogate */
                "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    EXPECT_JSON("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"", /* > U+10FFFF */
                "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    EXPECT_JSON("x\xe2\x82\"", "\"x\\ufffd\\ufffd\\\"\"", "x\xef\xbf\xbd\xef\xbf\xbd\"");
    EXPECT_JSON("ok\xc3\xa9\x80ok", "\"ok\xc3\xa9\\ufffdok\"", "ok\xc3\xa9\xef\xbf\xbdok");

    /* Appends to what is there. */
    struct md_buf b;
    md_buf_init(&b, 1024);
    md_buf_puts(&b, "[");
    md_json_put_string(&b, "a", 1);
    md_buf_putc(&b, ',');
    md_json_put_string(&b, "b\n", 2);
    md_buf_putc(&b, ']');
    CHECK_MEM(b.data, b.len, "[\"a\",\"b\\n\"]");
    md_buf_free(&b);

    /* Every byte value 0..255 alone: always valid JSON. */
    for (int c = 0; c < 256; c++) {
        char in = (char)c;
        md_buf_init(&b, 64);
        CHECK_EQ_INT(md_json_put_string(&b, &in, 1), MD_OK);
        json_error_t je;
        json_t *v = json_loadb(b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        CHECK(v != NULL);
        json_decref(v);
        md_buf_free(&b);
    }

    /* Over the limit: MD_ETOOBIG. */
    md_buf_init(&b, 4);
    CHECK_EQ_INT(md_json_put_string(&b, "abc", 3), MD_ETOOBIG);
    md_buf_free(&b);
    md_buf_init(&b, 5);
    CHECK_EQ_INT(md_json_put_string(&b, "abc", 3), MD_OK);
    CHECK_MEM(b.data, b.len, "\"abc\"");
    md_buf_free(&b);
    /* The text fits unescaped but its escapes do not: the buffer is left as it was. */
    md_buf_init(&b, 12);
    CHECK_EQ_INT(md_buf_puts(&b, "xy"), MD_OK);
    CHECK_EQ_INT(md_json_put_string(&b, "a\nb\nc\"d", 7), MD_ETOOBIG);
    CHECK_MEM(b.data, b.len, "xy");
    CHECK_EQ_INT(md_json_put_string(&b, "a\nb", 3), MD_OK);
    CHECK_MEM(b.data, b.len, "xy\"a\\nb\"");
    md_buf_free(&b);
}

/* The reference escaping, byte by byte (ASCII only: bytes 0x80+ are checked
 * separately since they depend on their neighbours). */
static size_t ref_escape(const unsigned char *s, size_t n, char *out)
{
    size_t k = 0;
    out[k++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            out[k++] = '\\';
            out[k++] = (char)c;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            out[k++] = '\\';
            out[k++] = (char)(c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
        } else if (c < 0x20) {
            k += (size_t)snprintf(out + k, 7, "\\u%04x", c);
        } else {
            out[k++] = (char)c;
        }
    }
    out[k++] = '"';
    return k;
}

/* The word-at-a-time scan must see a special byte in every position of a
 * word and across word boundaries: every ASCII byte at every offset of texts
 * of 1..24 bytes, and a byte 0x80+ (here: an invalid lone one) likewise. */
static void test_put_string_every_byte_every_offset(void)
{
    unsigned char in[24];
    char want[24 * 6 + 2];
    for (size_t len = 1; len <= sizeof in; len++) {
        for (size_t at = 0; at < len; at++) {
            for (unsigned c = 0; c < 0x100; c++) {
                memset(in, 'a', len);
                in[at] = (unsigned char)c;
                struct md_buf b;
                md_buf_init(&b, 1 << 16);
                CHECK_EQ_INT(md_json_put_string(&b, (const char *)in, len), MD_OK);
                size_t wl;
                if (c < 0x80) {
                    wl = ref_escape(in, len, want);
                } else {
                    /* A lone byte 0x80+ is invalid UTF-8: \ufffd in its place. */
                    wl = 0;
                    want[wl++] = '"';
                    memset(want + wl, 'a', at);
                    wl += at;
                    memcpy(want + wl, "\\ufffd", 6);
                    wl += 6;
                    memset(want + wl, 'a', len - at - 1);
                    wl += len - at - 1;
                    want[wl++] = '"';
                }
                CHECK_BUF(b.data, b.len, want, wl);
                md_buf_free(&b);
            }
        }
    }
}

static void test_tool_result(void)
{
    struct md_buf b;
    md_buf_init(&b, 1 << 20);
    CHECK_EQ_INT(md_json_tool_result(&b, "toolu_01ABC", 11,
                                     "File created successfully at: "
                                     "/memories/a.txt",
                                     45, 0),
                 MD_OK);
    CHECK_MEM(b.data, b.len,
              "{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_01ABC\",\"content\":\"File "
              "created successfully at: /memories/a.txt\",\"is_error\":false}");

    md_buf_reset(&b);
    CHECK_EQ_INT(
        md_json_tool_result(&b, NULL, 0, "Error: The path /memories/x does not exist", 42, 1),
        MD_OK);
    CHECK_MEM(b.data, b.len,
              "{\"type\":\"tool_result\",\"content\":\"Error: The path /memories/x does not "
              "exist\",\"is_error\":true}");

    /* Content with newlines, tabs and quotes; an id needing escapes. */
    md_buf_reset(&b);
    const char content[] = "Here's the content of /memories/q.txt with line numbers:\n     "
                           "1\tsay \"hi\"";
    CHECK_EQ_INT(md_json_tool_result(&b, "id\"1", 4, content, sizeof content - 1, 0), MD_OK);
    CHECK_MEM(b.data, b.len,
              "{\"type\":\"tool_result\",\"tool_use_id\":\"id\\\"1\",\"content\":\"Here's the "
              "content of /memories/q.txt with line numbers:\\n     1\\tsay "
              "\\\"hi\\\"\",\"is_error\":false}");

    /* An empty id is still sent; empty content too. */
    md_buf_reset(&b);
    CHECK_EQ_INT(md_json_tool_result(&b, "", 0, "", 0, 0), MD_OK);
    CHECK_MEM(
        b.data, b.len,
        "{\"type\":\"tool_result\",\"tool_use_id\":\"\",\"content\":\"\",\"is_error\":false}");

    /* Invalid UTF-8 and NUL in content still give parseable JSON with the
     * exact fields. */
    md_buf_reset(&b);
    CHECK_EQ_INT(md_json_tool_result(&b, "t", 1, "a\0\xff", 3, 1), MD_OK);
    CHECK_MEM(b.data, b.len,
              "{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"a\\u0000\\ufffd\","
              "\"is_error\":true}");
    json_error_t je;
    json_t *v = json_loadb(b.data, b.len, JSON_ALLOW_NUL, &je);
    CHECK(v != NULL);
    if (v) {
        CHECK_EQ_INT(json_object_size(v), 4);
        CHECK(json_is_true(json_object_get(v, "is_error")));
        CHECK_EQ_INT(json_string_length(json_object_get(v, "content")), 5);
    }
    json_decref(v);
    md_buf_free(&b);

    /* Over the limit. */
    md_buf_init(&b, 30);
    CHECK_EQ_INT(md_json_tool_result(&b, NULL, 0, "hello", 5, 0), MD_ETOOBIG);
    md_buf_free(&b);
}

static void test_buf(void)
{
    struct md_buf b;
    md_buf_init(&b, 8);
    CHECK(b.data == NULL);
    CHECK_EQ_INT(b.len, 0);
    CHECK_EQ_INT(b.limit, 8);

    CHECK_EQ_INT(md_buf_append(&b, "abcd", 4), MD_OK);
    CHECK_MEM(b.data, b.len, "abcd");
    CHECK_EQ_INT(b.data[b.len], '\0');
    /* One byte over: refused, nothing changed. */
    CHECK_EQ_INT(md_buf_append(&b, "efghi", 5), MD_ETOOBIG);
    CHECK_MEM(b.data, b.len, "abcd");
    CHECK_EQ_INT(b.data[b.len], '\0');
    CHECK_EQ_INT(md_buf_puts(&b, "efghi"), MD_ETOOBIG);
    CHECK_EQ_INT(md_buf_printf(&b, "%d", 12345), MD_ETOOBIG);
    CHECK_EQ_INT(md_buf_put_i64(&b, 12345), MD_ETOOBIG);
    CHECK_EQ_INT(md_buf_reserve(&b, 5), MD_ETOOBIG);
    CHECK_MEM(b.data, b.len, "abcd");
    /* Exactly to the limit. */
    CHECK_EQ_INT(md_buf_printf(&b, "%s%d", "e", 42), MD_OK);
    CHECK_EQ_INT(md_buf_putc(&b, 'h'), MD_OK);
    CHECK_MEM(b.data, b.len, "abcde42h");
    CHECK_EQ_INT(b.len, b.limit);
    CHECK_EQ_INT(md_buf_putc(&b, 'i'), MD_ETOOBIG);
    CHECK_EQ_INT(md_buf_append(&b, "", 0), MD_OK); /* nothing more is fine */
    CHECK_EQ_INT(md_buf_puts(&b, ""), MD_OK);
    CHECK_EQ_INT(md_buf_reserve(&b, 0), MD_OK);
    CHECK_MEM(b.data, b.len, "abcde42h");
    CHECK_EQ_INT(b.data[8], '\0');

    /* Truncate and reset keep the memory and the limit. */
    md_buf_truncate(&b, 3);
    CHECK_MEM(b.data, b.len, "abc");
    CHECK_EQ_INT(b.data[3], '\0');
    md_buf_truncate(&b, 10); /* longer than len: no change */
    CHECK_MEM(b.data, b.len, "abc");
    md_buf_reset(&b);
    CHECK_EQ_INT(b.len, 0);
    CHECK(b.data != NULL && b.data[0] == '\0'); /* the memory is kept, an empty string */
    CHECK_EQ_INT(md_buf_append(&b, "12345678", 8), MD_OK);
    md_buf_free(&b);
    CHECK(b.data == NULL);
    CHECK_EQ_INT(b.len, 0);
    CHECK_EQ_INT(b.limit, 8);

    /* Integers. */
    md_buf_init(&b, 100);
    md_buf_put_i64(&b, 0);
    md_buf_putc(&b, ' ');
    md_buf_put_i64(&b, -42);
    md_buf_putc(&b, ' ');
    md_buf_put_i64(&b, INT64_MAX);
    md_buf_putc(&b, ' ');
    md_buf_put_i64(&b, INT64_MIN);
    CHECK_MEM(b.data, b.len, "0 -42 9223372036854775807 -9223372036854775808");
    md_buf_free(&b);

    /* NUL bytes inside: len is authoritative. */
    md_buf_init(&b, 100);
    md_buf_append(&b, "a\0b", 3);
    md_buf_putc(&b, '\0');
    CHECK_MEM(b.data, b.len, "a\0b\0");

    /* md_buf_take hands over the memory and resets the buffer. */
    size_t len = 99;
    char *p = md_buf_take(&b, &len);
    CHECK(p != NULL);
    CHECK_EQ_INT(len, 4);
    CHECK_MEM(p, len, "a\0b\0");
    CHECK_EQ_INT(p[4], '\0');
    CHECK(b.data == NULL);
    CHECK_EQ_INT(b.len, 0);
    CHECK_EQ_INT(b.cap, 0);
    CHECK_EQ_INT(b.limit, 100);
    free(p);
    /* The buffer is usable again after a take. */
    CHECK_EQ_INT(md_buf_puts(&b, "again"), MD_OK);
    p = md_buf_take(&b, &len);
    CHECK_MEM(p, len, "again");
    free(p);
    /* A take of an empty buffer is an empty string, not NULL. */
    len = 99;
    p = md_buf_take(&b, &len);
    CHECK(p != NULL);
    CHECK_EQ_INT(len, 0);
    if (p)
        CHECK_EQ_INT(p[0], '\0');
    free(p);
    md_buf_free(&b);

    /* Even with a zero limit. */
    md_buf_init(&b, 0);
    CHECK_EQ_INT(md_buf_putc(&b, 'x'), MD_ETOOBIG);
    CHECK_EQ_INT(md_buf_append(&b, "", 0), MD_OK);
    len = 99;
    p = md_buf_take(&b, &len);
    CHECK(p != NULL);
    CHECK_EQ_INT(len, 0);
    free(p);
    md_buf_free(&b);

    /* Growth over many appends keeps every byte. */
    md_buf_init(&b, 1 << 20);
    int ok = 1;
    for (int i = 0; i < 100000; i++)
        ok &= md_buf_putc(&b, (char)('a' + i % 26)) == MD_OK;
    CHECK(ok);
    CHECK_EQ_INT(b.len, 100000);
    int same = 1;
    for (int i = 0; i < 100000; i++)
        same &= b.data[i] == (char)('a' + i % 26);
    CHECK(same);
    CHECK_EQ_INT(b.data[100000], '\0');
    md_buf_free(&b);

    /* A large limit does not overflow the check. */
    md_buf_init(&b, SIZE_MAX);
    CHECK_EQ_INT(md_buf_append(&b, "x", 1), MD_OK);
    CHECK_EQ_INT(md_buf_reserve(&b, SIZE_MAX), MD_ETOOBIG);
    CHECK_MEM(b.data, b.len, "x");
    md_buf_free(&b);
}

int main(void)
{
    test_put_string();
    test_put_string_every_byte_every_offset();
    test_tool_result();
    test_buf();
    return check_report();
}
