/*
 * fuzz_json.c — libFuzzer target for the fast request reader
 * (md_json_read.h), differential against jansson, the parser of record.
 *
 * Input: any bytes, read as a request body.
 *
 * Checks, beyond "no crash, no sanitizer report":
 *   - whenever md_json_read() returns a value, json_loadb() with
 *     MD_JSON_READ_FLAGS accepts the same bytes and gives an equal value
 *     (json_equal, and byte-equal compact dumps: same types, same key
 *     order, same string bytes);
 *   - the reader declines only what it is documented to decline: jansson's
 *     own compact dump of any object jansson accepted (raw UTF-8, and again
 *     with every non-ASCII character as \u escapes, surrogate pairs
 *     included) is read back to the same value, unless the value holds a
 *     real, an integer of 19 digits or more, or nesting deeper than
 *     MD_JSON_READ_MAX_DEPTH.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_json_read.h"
#include "fuzz_common.h"

/* Whether the reader may decline v (see md_json_read.h), at this depth.
 * Recursion as deep as jansson's own nesting limit (2048). */
/* NOLINTNEXTLINE(misc-no-recursion): bounded depth */
static int leaves_to_jansson(const json_t *v, int depth)
{
    const json_int_t big = 999999999999999999; /* 18 digits */
    switch (json_typeof(v)) {
    case JSON_REAL:
        return 1;
    case JSON_INTEGER:
        return json_integer_value(v) > big || json_integer_value(v) < -big;
    case JSON_OBJECT: {
        if (depth > MD_JSON_READ_MAX_DEPTH)
            return 1;
        const char *key;
        const json_t *m;
        json_object_foreach((json_t *)v, key, m) if (leaves_to_jansson(m, depth + 1)) return 1;
        return 0;
    }
    case JSON_ARRAY: {
        if (depth > MD_JSON_READ_MAX_DEPTH)
            return 1;
        size_t i;
        const json_t *m;
        json_array_foreach(v, i, m) if (leaves_to_jansson(m, depth + 1)) return 1;
        return 0;
    }
    default:
        return 0;
    }
}

/* fast (may be NULL) against jansson's value ref (may be NULL). */
static void check_same(const json_t *fast, const json_t *ref, const char *in, size_t n)
{
    if (!fast)
        return;
    if (!ref) {
        fprintf(stderr, "md_json_read accepted what jansson rejects\n");
        fuzz_show("input", in, n);
        abort();
    }
    char *a = json_dumps(fast, JSON_COMPACT | JSON_ENCODE_ANY);
    char *b = json_dumps(ref, JSON_COMPACT | JSON_ENCODE_ANY);
    FUZZ_CHECK(a && b);
    if (strcmp(a, b) != 0)
        fuzz_show("input", in, n);
    FUZZ_CHECK_BYTES(a, strlen(a), b, strlen(b));
    FUZZ_CHECK(json_equal(fast, ref));
    free(a);
    free(b);
}

/* jansson's dump of ref (an object), read back by the fast reader. */
static void check_reads_dump(const json_t *ref, size_t dump_flags)
{
    char *d = json_dumps(ref, JSON_COMPACT | dump_flags);
    FUZZ_CHECK(d != NULL);
    size_t n = strlen(d);
    json_t *fast = md_json_read(d, n);
    if (!fast && !leaves_to_jansson(ref, 1)) {
        fprintf(stderr, "md_json_read declined jansson's own dump of a plain value\n");
        fuzz_show("dump", d, n);
        abort();
    }
    check_same(fast, ref, d, n);
    json_decref(fast);
    free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    json_t *fast = md_json_read(in, size);
    json_error_t je;
    json_t *ref = json_loadb(in, size, MD_JSON_READ_FLAGS, &je);
    check_same(fast, ref, in, size);
    if (json_is_object(ref)) {
        check_reads_dump(ref, 0);
        check_reads_dump(ref, JSON_ENSURE_ASCII);
    }
    json_decref(fast);
    json_decref(ref);
    return 0;
}
