/*
 * fuzz_path.c — libFuzzer target for the path canonicaliser (md_path.h).
 *
 * Input: byte 0 picks a pair of limits (max_path, max_segment) from a
 * table, from the defaults down to tiny ones; the rest is path A, optionally
 * followed by 0xFF and path B (0xFF never occurs in valid UTF-8).
 *
 * Checks, beyond "no crash, no sanitizer report":
 *   - md_path_canon accepts a path exactly when a naive model of the rules
 *     of docs/behaviour.md §3 finds no violation, and a rejection names one of the
 *     rules the model says are violated ('..' that climbs above /memories is
 *     MD_PATH_ESCAPES, any other '..' MD_PATH_DOTDOT);
 *   - on MD_PATH_OK the output equals the model ("/memories" + "/"-joined
 *     non-empty segments) and is canonical: starts with /memories, no "//",
 *     no trailing '/' unless root, no "." or ".." segment, no backslash, no
 *     control character (C0, DEL, C1), valid UTF-8, NUL-terminated, not
 *     longer than the input; canonicalising it again gives it back;
 *   - md_path_depth, md_path_parent_len and md_path_is_inside agree with a
 *     model working on segment arrays (is_inside(A, B) iff B's segments are
 *     a proper prefix of A's), also for A against its own ancestors;
 *   - md_path_errmsg on every rejection succeeds, starts with "Error: ",
 *     names the path as sent (all of it, or for an over-long path a prefix),
 *     is valid UTF-8 whenever the input is, and is exactly the contract's
 *     text for "not under /memories" and "would escape".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_path.h"
#include "fuzz_common.h"

static const struct md_path_limits LIMITS[] = {
    {4096, 255}, {64, 16}, {32, 8}, {24, 3}, {16, 1}, {12, 2}, {10, 0}, {9, 255},
};

#define MAX_SEGS 4096

/* What the naive model makes of a path. */
struct model {
    int under_root, too_long, bad_utf8, control, backslash, percent;
    int dotdot, escapes, dot, seg_too_long;
    size_t nseg;
    const char *seg[MAX_SEGS];
    size_t seglen[MAX_SEGS];
};

/* Code point at s (valid UTF-8 assumed), its length in *k. */
static uint32_t decode(const unsigned char *s, size_t *k)
{
    if (s[0] < 0x80) {
        *k = 1;
        return s[0];
    }
    if (s[0] < 0xE0) {
        *k = 2;
        return ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    }
    if (s[0] < 0xF0) {
        *k = 3;
        return ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    *k = 4;
    return ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
           ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}

static int is_control(uint32_t cp)
{
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F);
}

static void model_path(struct model *m, const char *in, size_t len,
                       const struct md_path_limits *lim)
{
    memset(m, 0, sizeof *m);
    m->under_root = len >= 9 && memcmp(in, "/memories", 9) == 0 && (len == 9 || in[9] == '/');
    m->too_long = len > lim->max_path;
    m->bad_utf8 = !fuzz_utf8_valid(in, len);
    const unsigned char *u = (const unsigned char *)in;
    for (size_t i = 0; i < len;) {
        size_t k = 1;
        uint32_t cp = m->bad_utf8 ? u[i] : decode(u + i, &k);
        if (is_control(cp) && (cp < 0x80 || !m->bad_utf8))
            m->control = 1;
        i += k;
    }
    for (size_t i = 0; i < len; i++) {
        if (in[i] == '\\')
            m->backslash = 1;
        if (in[i] == '%' && i + 2 < len) {
            char a = in[i + 1], b = in[i + 2];
            if ((a == '2' && (b == 'e' || b == 'E' || b == 'f' || b == 'F')) ||
                (a == '5' && (b == 'c' || b == 'C')))
                m->percent = 1;
        }
    }
    if (!m->under_root)
        return;
    long depth = 0;
    size_t i = 9;
    while (i < len) {
        if (in[i] == '/') {
            i++;
            continue;
        }
        size_t start = i;
        while (i < len && in[i] != '/')
            i++;
        const char *s = in + start;
        size_t n = i - start;
        if (n == 1 && s[0] == '.') {
            m->dot = 1;
        } else if (n == 2 && s[0] == '.' && s[1] == '.') {
            m->dotdot = 1;
            if (--depth < 0)
                m->escapes = 1;
        } else {
            depth++;
            if (n > lim->max_segment)
                m->seg_too_long = 1;
            FUZZ_CHECK(m->nseg < MAX_SEGS);
            m->seg[m->nseg] = s;
            m->seglen[m->nseg] = n;
            m->nseg++;
        }
    }
}

static int model_ok(const struct model *m)
{
    return m->under_root && !m->too_long && !m->bad_utf8 && !m->control && !m->backslash &&
           !m->percent && !m->dotdot && !m->dot && !m->seg_too_long;
}

/* Is status `st` one of the violations the model found? */
static int model_allows(const struct model *m, enum md_path_status st)
{
    switch (st) {
    case MD_PATH_NOT_UNDER_ROOT:
        return !m->under_root;
    case MD_PATH_TOO_LONG:
        return m->too_long;
    case MD_PATH_BAD_UTF8:
        return m->bad_utf8;
    case MD_PATH_CONTROL:
        return m->control;
    case MD_PATH_BACKSLASH:
        return m->backslash;
    case MD_PATH_PERCENT:
        return m->percent;
    case MD_PATH_ESCAPES:
        return m->escapes;
    case MD_PATH_DOTDOT:
        return m->dotdot && !m->escapes;
    case MD_PATH_DOT:
        return m->dot;
    case MD_PATH_SEGMENT_TOO_LONG:
        return m->seg_too_long;
    default:
        return 0;
    }
}

/* The canonical form the model expects, in out (room for len + 1). */
static size_t model_canon(const struct model *m, char *out)
{
    size_t o = 9;
    memcpy(out, "/memories", 9);
    for (size_t i = 0; i < m->nseg; i++) {
        out[o++] = '/';
        memcpy(out + o, m->seg[i], m->seglen[i]);
        o += m->seglen[i];
    }
    out[o] = '\0';
    return o;
}

static void check_canonical(const char *c, size_t n, size_t in_len)
{
    FUZZ_CHECK(n <= in_len);
    FUZZ_CHECK(strlen(c) == n);
    FUZZ_CHECK(n >= 9 && memcmp(c, "/memories", 9) == 0 && (n == 9 || c[9] == '/'));
    FUZZ_CHECK(n == 9 || c[n - 1] != '/');
    FUZZ_CHECK(memmem(c, n, "//", 2) == NULL);
    FUZZ_CHECK(memchr(c, '\\', n) == NULL);
    FUZZ_CHECK(fuzz_utf8_valid(c, n));
    const unsigned char *u = (const unsigned char *)c;
    for (size_t i = 0; i < n;) {
        size_t k;
        FUZZ_CHECK(!is_control(decode(u + i, &k)));
        i += k;
    }
    /* No "." or ".." segment: look at every segment. */
    for (size_t i = 9; i < n;) {
        FUZZ_CHECK(c[i] == '/');
        size_t s = ++i;
        while (i < n && c[i] != '/')
            i++;
        FUZZ_CHECK(i > s);
        FUZZ_CHECK(!(i - s == 1 && c[s] == '.'));
        FUZZ_CHECK(!(i - s == 2 && c[s] == '.' && c[s + 1] == '.'));
    }
}

/* Canonicalise one path and check everything about it. Returns a malloc'd
 * canonical form (or NULL when rejected) for the pairwise checks. */
static char *check_path(const char *in, size_t len, const struct md_path_limits *lim,
                        struct model *m, size_t *out_len)
{
    model_path(m, in, len, lim);
    char *out = malloc(len + 1);
    FUZZ_CHECK(out != NULL);
    size_t olen = (size_t)-1;
    enum md_path_status st = md_path_canon(in, len, lim, out, &olen);
    if (st != MD_PATH_OK) {
        if (!model_allows(m, st)) {
            fprintf(stderr, "md_path_canon gave status %d, not a violation the model found\n", st);
            fuzz_show("path", in, len);
            abort();
        }
        struct md_buf msg;
        md_buf_init(&msg, (size_t)1 << 20);
        FUZZ_CHECK(md_path_errmsg(&msg, st, in, len, lim) == MD_OK);
        FUZZ_CHECK(msg.len >= 7 && memcmp(msg.data, "Error: ", 7) == 0);
        if (st != MD_PATH_TOO_LONG)
            FUZZ_CHECK(len == 0 || memmem(msg.data, msg.len, in, len) != NULL);
        else
            FUZZ_CHECK(memmem(msg.data, msg.len, " is too long: ", 14) != NULL);
        /* The two texts memoryd shares with the SDK (docs/behaviour.md §3). */
        if (st == MD_PATH_NOT_UNDER_ROOT || st == MD_PATH_ESCAPES) {
            struct fstr want = {0};
            if (st == MD_PATH_NOT_UNDER_ROOT) {
                fstr_puts(&want, "Error: Path must start with /memories, got: ");
                fstr_add(&want, in, len);
            } else {
                fstr_puts(&want, "Error: Path ");
                fstr_add(&want, in, len);
                fstr_puts(&want, " would escape /memories directory");
            }
            FUZZ_CHECK_BYTES(msg.data, msg.len, want.p, want.n);
            fstr_free(&want);
        }
        if (fuzz_utf8_valid(in, len) && !fuzz_utf8_valid(msg.data, msg.len)) {
            fprintf(stderr, "md_path_errmsg made invalid UTF-8 of a valid path\n");
            fuzz_show("path", in, len);
            fuzz_show("msg", msg.data, msg.len);
            abort();
        }
        md_buf_free(&msg);
        free(out);
        return NULL;
    }
    if (!model_ok(m)) {
        fprintf(stderr, "md_path_canon accepted a path the model rejects\n");
        fuzz_show("path", in, len);
        abort();
    }
    char *want = malloc(len + 1);
    FUZZ_CHECK(want != NULL);
    size_t wlen = model_canon(m, want);
    FUZZ_CHECK_BYTES(out, olen, want, wlen);
    free(want);
    check_canonical(out, olen, len);

    /* Idempotent. */
    char *again = malloc(olen + 1);
    FUZZ_CHECK(again != NULL);
    size_t alen = 0;
    FUZZ_CHECK(md_path_canon(out, olen, lim, again, &alen) == MD_PATH_OK);
    FUZZ_CHECK_BYTES(again, alen, out, olen);
    free(again);

    /* depth and parent against the segment model. */
    FUZZ_CHECK(md_path_depth(out, olen) == (int)m->nseg);
    if (m->nseg > 0) {
        size_t plen = 9;
        for (size_t i = 0; i + 1 < m->nseg; i++)
            plen += 1 + m->seglen[i];
        FUZZ_CHECK(md_path_parent_len(out, olen) == plen);
        /* Every ancestor (a prefix cut at a segment boundary) contains it. */
        size_t anc = 9;
        for (size_t i = 0; i < m->nseg; i++) {
            FUZZ_CHECK(md_path_is_inside(out, olen, out, anc));
            FUZZ_CHECK(!md_path_is_inside(out, anc, out, olen));
            FUZZ_CHECK(md_path_depth(out, anc) == (int)i);
            anc += 1 + m->seglen[i];
        }
        FUZZ_CHECK(anc == olen);
    }
    FUZZ_CHECK(!md_path_is_inside(out, olen, out, olen));
    *out_len = olen;
    return out;
}

/* is_inside(a, b) iff b's segments are a proper prefix of a's. */
static int model_inside(const struct model *a, const struct model *b)
{
    if (b->nseg >= a->nseg)
        return 0;
    for (size_t i = 0; i < b->nseg; i++)
        if (a->seglen[i] != b->seglen[i] || memcmp(a->seg[i], b->seg[i], a->seglen[i]) != 0)
            return 0;
    return 1;
}

static struct model MA, MB;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const struct md_path_limits *lim = &LIMITS[data[0] % (sizeof LIMITS / sizeof LIMITS[0])];
    const char *a = (const char *)data + 1;
    size_t alen = size - 1;
    const char *b = NULL;
    size_t blen = 0;
    const char *sep = memchr(a, 0xFF, alen);
    if (sep) {
        b = sep + 1;
        blen = alen - (size_t)(b - a);
        alen = (size_t)(sep - a);
    }
    size_t ca_len = 0, cb_len = 0;
    char *ca = check_path(a, alen, lim, &MA, &ca_len);
    char *cb = b ? check_path(b, blen, lim, &MB, &cb_len) : NULL;
    if (ca && cb) {
        FUZZ_CHECK(md_path_is_inside(ca, ca_len, cb, cb_len) == model_inside(&MA, &MB));
        FUZZ_CHECK(md_path_is_inside(cb, cb_len, ca, ca_len) == model_inside(&MB, &MA));
    }
    free(ca);
    free(cb);
    return 0;
}
