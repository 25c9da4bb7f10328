/* json_read.c — the fast reader for request bodies (see md_json_read.h).
 *
 * Grammar (RFC 8259, as jansson reads it with MD_JSON_READ_FLAGS):
 * whitespace is space, tab, LF, CR; a string holds no byte below 0x20, only
 * strict UTF-8 (md_utf8_seq), and the escapes \" \\ \/ \b \f \n \r \t
 * \uXXXX (a high surrogate only with a following low one, no lone low
 * surrogate; \u0000 is allowed in values, never in keys); an integer is
 * -?(0|[1-9][0-9]*) not followed by '.', 'e' or 'E'; keys are unique.
 * Every rule this reader does not implement is a decline, never a guess. */
#include "base/md_json_read.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_json.h"
#include "base/md_utf8.h"

struct reader {
    const unsigned char *p, *end;
    char *scratch; /* unescaped string text; big enough for any string left */
    size_t scratch_cap;
    int depth;
};

static void skip_ws(struct reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

static int hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* A \u escape at r->p (just after the backslash and 'u'), as UTF-8 into
 * out; its length, or 0 to decline. */
static size_t unicode_escape(struct reader *r, char *out)
{
    unsigned cp;
    if (r->end - r->p < 4 || hex4(r->p, &cp))
        return 0;
    r->p += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return 0; /* a lone low surrogate */
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        unsigned lo;
        if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' || hex4(r->p + 2, &lo) ||
            lo < 0xDC00 || lo > 0xDFFF)
            return 0;
        r->p += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The string whose opening quote was just read: *text and *len point into
 * the input (no escapes) or into r->scratch. 0, or -1 to decline. */
/* The character a two-character escape (\" \\ \/ \b \f \n \r \t) stands
 * for, after its backslash; 0 for any other. */
static char simple_escape(char c)
{
    switch (c) {
    case '"':
    case '\\':
    case '/':
        return c;
    case 'b':
        return '\b';
    case 'f':
        return '\f';
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    default:
        return 0;
    }
}

static int read_string(struct reader *r, const char **text, size_t *len)
{
    const unsigned char *start = r->p;
    size_t left = (size_t)(r->end - start);
    size_t run = md_json_plain_run((const char *)start, left);
    if (run < left && start[run] == '"') { /* the usual case: nothing to decode */
        *text = (const char *)start;
        *len = run;
        r->p = start + run + 1;
        return 0;
    }
    if (run == left)
        return -1; /* unterminated */
    /* Decoding never makes text longer than its source, so room for the
     * rest of the input is room for any string in it. */
    if (!r->scratch || r->scratch_cap < left) {
        free(r->scratch);
        r->scratch = malloc(left);
        r->scratch_cap = r->scratch ? left : 0;
        if (!r->scratch)
            return -1;
    }
    char *out = r->scratch;
    size_t n = 0;
    const unsigned char *p = start;
    for (;;) {
        run = md_json_plain_run((const char *)p, (size_t)(r->end - p));
        memcpy(out + n, p, run);
        n += run;
        p += run;
        if (p == r->end)
            return -1; /* unterminated */
        unsigned c = *p;
        if (c == '"')
            break;
        if (c >= 0x80) {
            size_t k = md_utf8_seq((const char *)p, (size_t)(r->end - p));
            if (!k)
                return -1;
            memcpy(out + n, p, k);
            n += k;
            p += k;
            continue;
        }
        if (c != '\\' || r->end - p < 2)
            return -1; /* a control character, or a cut escape */
        if (p[1] == 'u') {
            r->p = p + 2;
            size_t k = unicode_escape(r, out + n);
            if (!k)
                return -1;
            n += k;
            p = r->p;
            continue;
        }
        char e = simple_escape((char)p[1]);
        if (!e)
            return -1;
        out[n++] = e;
        p += 2;
    }
    *text = out;
    *len = n;
    r->p = p + 1;
    return 0;
}

static json_t *read_value(struct reader *r);

/* Just after '{' or '[': whitespace, then 1 (and past it) when `close`
 * follows at once, an empty container; else 0. */
static int closes_at_once(struct reader *r, unsigned char close)
{
    skip_ws(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return 1;
    }
    return 0;
}

/* After a member or element: 1 when `close` ends the container, 0 when a
 * ',' announces another (whitespace after it skipped), -1 otherwise. */
static int after_item(struct reader *r, unsigned char close)
{
    skip_ws(r);
    if (r->p == r->end)
        return -1;
    if (*r->p == close) {
        r->p++;
        return 1;
    }
    if (*r->p != ',')
        return -1;
    r->p++;
    skip_ws(r);
    return 0;
}

/* After '{': members up to the closing '}'. The reader recurses through
 * read_value, read_object and read_array at most MD_JSON_READ_MAX_DEPTH
 * deep (read_value declines deeper containers). */
/* NOLINTNEXTLINE(misc-no-recursion): bounded depth */
static json_t *read_object(struct reader *r)
{
    json_t *obj = json_object();
    if (!obj || closes_at_once(r, '}'))
        return obj;
    for (;;) {
        const char *key;
        size_t key_len;
        if (r->p == r->end || *r->p != '"')
            goto decline;
        r->p++;
        if (read_string(r, &key, &key_len) || memchr(key, '\0', key_len) ||
            json_object_getn(obj, key, key_len))
            goto decline;
        /* The key may live in the scratch buffer, which the value's strings
         * reuse: keep a copy while the value is read (keys are short). */
        char small[64], *copy = key_len <= sizeof small ? small : malloc(key_len);
        if (!copy)
            goto decline;
        memcpy(copy, key, key_len);
        skip_ws(r);
        json_t *value = NULL;
        if (r->p < r->end && *r->p == ':') {
            r->p++;
            skip_ws(r);
            value = read_value(r);
        }
        int bad = !value || json_object_setn_new_nocheck(obj, copy, key_len, value) != 0;
        if (copy != small)
            free(copy);
        int end = bad ? -1 : after_item(r, '}');
        if (end < 0)
            goto decline;
        if (end)
            return obj;
    }
decline:
    json_decref(obj);
    return NULL;
}

/* After '[': elements up to the closing ']'. */
/* NOLINTNEXTLINE(misc-no-recursion): bounded depth */
static json_t *read_array(struct reader *r)
{
    json_t *arr = json_array();
    if (!arr || closes_at_once(r, ']'))
        return arr;
    for (;;) {
        json_t *value = read_value(r);
        int end = !value || json_array_append_new(arr, value) != 0 ? -1 : after_item(r, ']');
        if (end < 0)
            goto decline;
        if (end)
            return arr;
    }
decline:
    json_decref(arr);
    return NULL;
}

/* -?(0|[1-9][0-9]*) of at most 18 digits, not followed by '.', 'e', 'E'
 * (a real) or another digit (jansson's "0123" is an error). */
static json_t *read_integer(struct reader *r)
{
    const unsigned char *p = r->p;
    int negative = p < r->end && *p == '-';
    p += negative;
    const unsigned char *digits = p;
    int64_t v = 0;
    while (p < r->end && *p >= '0' && *p <= '9') {
        if (p - digits == 18)
            return NULL; /* 19 digits or more: jansson checks the range */
        v = v * 10 + (*p++ - '0');
    }
    size_t n = (size_t)(p - digits);
    if (n == 0 || (digits[0] == '0' && n > 1))
        return NULL;
    if (p < r->end && (*p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9')))
        return NULL;
    r->p = p;
    return json_integer(negative ? -v : v);
}

static int literal(struct reader *r, const char *word, size_t len)
{
    if ((size_t)(r->end - r->p) < len || memcmp(r->p, word, len) != 0)
        return 0;
    r->p += len;
    return 1;
}

/* A value at r->p (whitespace before it already skipped). */
/* NOLINTNEXTLINE(misc-no-recursion): bounded depth */
static json_t *read_value(struct reader *r)
{
    if (r->p == r->end)
        return NULL;
    switch (*r->p) {
    case '"': {
        const char *text;
        size_t len;
        r->p++;
        return read_string(r, &text, &len) ? NULL : json_stringn_nocheck(text, len);
    }
    case '{':
    case '[': {
        if (r->depth >= MD_JSON_READ_MAX_DEPTH)
            return NULL;
        int object = *r->p == '{';
        r->p++;
        r->depth++;
        json_t *v = object ? read_object(r) : read_array(r);
        r->depth--;
        return v;
    }
    case 't':
        return literal(r, "true", 4) ? json_true() : NULL;
    case 'f':
        return literal(r, "false", 5) ? json_false() : NULL;
    case 'n':
        return literal(r, "null", 4) ? json_null() : NULL;
    default:
        return read_integer(r);
    }
}

json_t *md_json_read(const char *s, size_t n)
{
    struct reader r = {(const unsigned char *)s, (const unsigned char *)s + n, NULL, 0, 0};
    skip_ws(&r);
    if (r.p == r.end || *r.p != '{')
        return NULL;
    json_t *v = read_value(&r);
    free(r.scratch);
    if (!v)
        return NULL;
    skip_ws(&r);
    if (r.p != r.end) { /* something after the value */
        json_decref(v);
        return NULL;
    }
    return v;
}
