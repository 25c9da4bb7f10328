/*
 * test_json_read.c — proves the fast request reader (md_json_read.h): the
 * bodies it must take (every command shape, both request forms, every
 * escape, raw UTF-8, whitespace, nesting) give exactly jansson's value,
 * key order included (compared as jansson's own compact dump); every input
 * jansson rejects, and each shape the reader leaves to jansson (reals, long
 * integers, deep nesting, non-object bodies), is declined. The random
 * differential check is tests/fuzz/fuzz_json.c.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_json_read.h"
#include "check.h"

enum { DECLINE = 0, READ = 1 };
enum { JANSSON_REJECTS = 0, JANSSON_ACCEPTS = 1 };

static char *dump(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* Read s[0..n) both ways: the reader must READ or DECLINE as told, jansson
 * accept or reject as told, and a value read must be jansson's. */
static void expect_n(const char *s, size_t n, int want_read, int want_jansson)
{
    json_t *fast = md_json_read(s, n);
    json_error_t je;
    json_t *ref = json_loadb(s, n, MD_JSON_READ_FLAGS, &je);
    int read_ok = (fast != NULL) == (want_read == READ);
    int jansson_ok = (ref != NULL) == (want_jansson == JANSSON_ACCEPTS);
    CHECK_EQ_INT(fast != NULL, want_read == READ);
    CHECK_EQ_INT(ref != NULL, want_jansson == JANSSON_ACCEPTS);
    if (!read_ok || !jansson_ok)
        fprintf(stderr, "  input: %.*s\n", (int)(n > 200 ? 200 : n), s);
    if (fast && ref) {
        char *a = dump(fast), *b = dump(ref);
        CHECK(a && b);
        if (a && b)
            CHECK_BUF(a, strlen(a), b, strlen(b));
        CHECK(json_equal(fast, ref));
        free(a);
        free(b);
    }
    CHECK(!fast || ref); /* never accepts what jansson rejects */
    json_decref(fast);
    json_decref(ref);
}

#define EXPECT(lit, r, j) expect_n(lit, sizeof(lit) - 1, r, j)

/* {"deep":[[...[{}]...]]}: `containers` objects and arrays in all. */
static void expect_nested(int containers, int want_read)
{
    char *s = malloc((size_t)containers * 2 + 16);
    CHECK(s != NULL && containers >= 2);
    if (!s || containers < 2)
        return;
    size_t n = (size_t)sprintf(s, "{\"deep\":");
    for (int i = 0; i < containers - 2; i++)
        s[n++] = '[';
    s[n++] = '{';
    s[n++] = '}';
    for (int i = 0; i < containers - 2; i++)
        s[n++] = ']';
    s[n++] = '}';
    expect_n(s, n, want_read, containers <= 2048 ? JANSSON_ACCEPTS : JANSSON_REJECTS);
    free(s);
}

static void test_reads_request_bodies(void)
{
    EXPECT("{\"command\":\"view\",\"path\":\"/memories\"}", READ, JANSSON_ACCEPTS);
    EXPECT("{\"command\":\"view\",\"path\":\"/memories/a.txt\",\"view_range\":[2,-1]}", READ,
           JANSSON_ACCEPTS);
    EXPECT("{\"command\":\"create\",\"path\":\"/memories/a.txt\",\"file_text\":\"line 1\\nline "
           "2\\n\"}",
           READ, JANSSON_ACCEPTS);
    EXPECT("{\"command\":\"str_replace\",\"path\":\"/memories/a\",\"old_str\":\"x\",\"new_str\":"
           "\"\"}",
           READ, JANSSON_ACCEPTS);
    EXPECT("{\"command\":\"insert\",\"path\":\"/memories/a\",\"insert_line\":0,\"insert_text\":"
           "\"t\"}",
           READ, JANSSON_ACCEPTS);
    EXPECT("{\"command\":\"rename\",\"old_path\":\"/memories/a\",\"new_path\":\"/memories/b\"}",
           READ, JANSSON_ACCEPTS);
    /* The whole tool_use block, with the extra fields an SDK sends. */
    EXPECT("{\"type\":\"tool_use\",\"id\":\"toolu_01\",\"name\":\"memory\",\"input\":{\"command\":"
           "\"delete\",\"path\":\"/memories/x\"},\"cache_control\":null,\"caller\":{\"type\":"
           "\"direct\"}}",
           READ, JANSSON_ACCEPTS);
    /* Whitespace everywhere it may be, and key order kept. */
    EXPECT(" \t\r\n{ \"z\" : 1 ,\n\"a\"\t:\r[ 1 , 2 ] , \"m\" : { } , \"e\":[ ] } \n", READ,
           JANSSON_ACCEPTS);
    EXPECT("{\"t\":true,\"f\":false,\"n\":null,\"i\":[0,-0,7,-12,123456789012345678,"
           "-123456789012345678]}",
           READ, JANSSON_ACCEPTS);
    expect_nested(MD_JSON_READ_MAX_DEPTH, READ);
}

static void test_reads_strings(void)
{
    EXPECT("{\"s\":\"\"}", READ, JANSSON_ACCEPTS);
    EXPECT("{\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}", READ, JANSSON_ACCEPTS);
    EXPECT("{\"s\":\"\\u0041\\u00e9\\u20AC\\uffff\\ud83d\\ude00\\uDBFF\\uDFFF\"}", READ,
           JANSSON_ACCEPTS);
    EXPECT("{\"s\":\"nul \\u0000 inside\"}", READ, JANSSON_ACCEPTS); /* JSON_ALLOW_NUL */
    EXPECT("{\"s\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf \x7f\"}", READ,
           JANSSON_ACCEPTS);
    /* A key with an escape (held in the scratch buffer) and a value that
     * reuses that buffer. */
    EXPECT("{\"pa\\u0074h\":\"a\\nb\",\"k\\n\":\"\\t\"}", READ, JANSSON_ACCEPTS);
    EXPECT("{\"\":\"empty key\"}", READ, JANSSON_ACCEPTS);

    /* Long strings: escapes and multibyte text at every kind of offset. */
    size_t n = 200000;
    char *s = malloc(n + 64);
    CHECK(s != NULL);
    if (!s)
        return;
    size_t k = 0;
    k += (size_t)sprintf(s, "{\"file_text\":\"");
    for (size_t i = 0; k < n; i++) {
        if (i % 97 == 0) {
            memcpy(s + k, "\\n", 2);
            k += 2;
        } else if (i % 89 == 0) {
            memcpy(s + k, "\xc3\xa9", 2);
            k += 2;
        } else if (i % 1009 == 0) {
            memcpy(s + k, "\\ud83d\\ude00", 12);
            k += 12;
        } else {
            s[k++] = (char)('a' + i % 26);
        }
    }
    k += (size_t)sprintf(s + k, "\",\"x\":\"%s\"}", "plain");
    expect_n(s, k, READ, JANSSON_ACCEPTS);
    free(s);
}

static void test_declines_what_jansson_rejects(void)
{
    EXPECT("", DECLINE, JANSSON_REJECTS);
    EXPECT("  \n", DECLINE, JANSSON_REJECTS);
    EXPECT("{", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":1", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"", DECLINE, JANSSON_REJECTS); /* found by fuzz_json: a string cut at once */
    EXPECT("{\"a\":\"", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":1,}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":[1,]}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\" 1}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":1 \"b\":2}", DECLINE, JANSSON_REJECTS);
    EXPECT("{a:1}", DECLINE, JANSSON_REJECTS);
    EXPECT("{'a':1}", DECLINE, JANSSON_REJECTS);
    EXPECT("{} x", DECLINE, JANSSON_REJECTS);
    EXPECT("{}{}", DECLINE, JANSSON_REJECTS);
    EXPECT("\xef\xbb\xbf{}", DECLINE, JANSSON_REJECTS); /* a byte order mark */
    EXPECT("{\"a\":1,\"a\":2}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":1,\"\\u0061\":2}", DECLINE, JANSSON_REJECTS); /* the same key, escaped */
    EXPECT("{\"a\\u0000b\":1}", DECLINE, JANSSON_REJECTS);       /* NUL in a key */
    EXPECT("{\"a\":truex}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":nul}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":True}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":0123}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":-}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":+1}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":12a}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":99999999999999999999}", DECLINE, JANSSON_REJECTS); /* too big */
    /* Strings. */
    EXPECT("{\"a\":\"unterminated}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"cut \\", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"cut \\u12", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"\\x41\"}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"\\U0041\"}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"\\u12G4\"}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"\\ud83d\"}", DECLINE, JANSSON_REJECTS);        /* lone high surrogate */
    EXPECT("{\"a\":\"\\ude00\"}", DECLINE, JANSSON_REJECTS);        /* lone low surrogate */
    EXPECT("{\"a\":\"\\ud83d\\u0041\"}", DECLINE, JANSSON_REJECTS); /* high, then not low */
    EXPECT("{\"a\":\"\\ud83d\\n\"}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"tab\there\"}", DECLINE, JANSSON_REJECTS); /* a raw control character */
    EXPECT("{\"a\":\"line\nbreak\"}", DECLINE, JANSSON_REJECTS);
    expect_n("{\"a\":\"nul\0\"}", 11, DECLINE, JANSSON_REJECTS); /* a raw NUL */
    /* Invalid UTF-8: overlong, surrogate, above U+10FFFF, cut, stray. */
    EXPECT("{\"a\":\"\xc0\x80\"}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"\xe0\x80\xaf\"}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"\xed\xa0\x80\"}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"\xf4\x90\x80\x80\"}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"\xf5\x80\x80\x80\"}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"\xe2\x82\"}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"\x80\"}", DECLINE, JANSSON_REJECTS);
    EXPECT("{\"a\":\"\xff\"}", DECLINE, JANSSON_REJECTS);
}

static void test_leaves_other_shapes_to_jansson(void)
{
    EXPECT("[1,2]", DECLINE, JANSSON_ACCEPTS);
    EXPECT("\"view\"", DECLINE, JANSSON_ACCEPTS);
    EXPECT("42", DECLINE, JANSSON_ACCEPTS);
    EXPECT("null", DECLINE, JANSSON_ACCEPTS);
    EXPECT("{\"a\":1.5}", DECLINE, JANSSON_ACCEPTS);
    EXPECT("{\"a\":1e3}", DECLINE, JANSSON_ACCEPTS);
    EXPECT("{\"a\":-2E-1}", DECLINE, JANSSON_ACCEPTS);
    EXPECT("{\"a\":1234567890123456789}", DECLINE, JANSSON_ACCEPTS); /* 19 digits */
    /* 19 and 20 digits near the int64 limits (found by fuzz_request: no overflow). */
    EXPECT("{\"a\":9223372036854775807}", DECLINE, JANSSON_ACCEPTS);
    EXPECT("{\"a\":-9223372036854775808}", DECLINE, JANSSON_ACCEPTS);
    EXPECT("{\"a\":9999999999999999999}", DECLINE, JANSSON_REJECTS);
    expect_nested(MD_JSON_READ_MAX_DEPTH + 1, DECLINE);
    expect_nested(3000, DECLINE); /* deeper than jansson's own limit too */
}

int main(void)
{
    test_reads_request_bodies();
    test_reads_strings();
    test_declines_what_jansson_rejects();
    test_leaves_other_shapes_to_jansson();
    return check_report();
}
