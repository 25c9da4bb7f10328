/*
 * fuzz_edit.c — libFuzzer target for the pure text operations (md_text.h):
 * md_view_file, md_str_replace, md_insert, plus md_line_count and
 * md_size_format. Every result is compared for EQUALITY with a simple model
 * written here on an array of lines (split on '\n' like JavaScript's
 * split('\n')), following docs/behaviour.md §4 and the SDK:
 *
 *   view        header + "%6d\t" numbered lines of lines.slice(start, end)
 *               with start = max(1, a) - 1 and end = (b == -1 ? n : b),
 *               JavaScript slice semantics (negative end counts from the
 *               end); with a large max_out nothing is cut. A second run with
 *               a small max_out must give the header, then whole model lines
 *               (or, when the first line alone is too long, the head of it
 *               cut at a UTF-8 boundary), then exactly the note; never more
 *               than max_out bytes once the header fits; no cut when the
 *               whole view fits well within max_out; and the view_range the
 *               note names must give exactly the remaining lines.
 *   str_replace non-overlapping occurrences of old_str counted by a naive
 *               scan: none -> "did not appear verbatim", several -> the line
 *               of each occurrence, one -> the new content and a snippet
 *               from 2 lines before the first changed line to 2 after the
 *               last line of the new text; the result buffer is untouched
 *               on error.
 *   insert      lines.splice(line, 0, text minus one trailing '\n'), the
 *               range error with its exact message outside [0, n].
 *   sizes       md_size_format against exact 128-bit arithmetic (one
 *               decimal, halves up, the largest unit of K/M/G not above).
 *
 * Input: byte 0 = op (bits 0-1: view, str_replace, insert, size format) and
 * whether a view_range is present (bit 2); bytes 1 and 2 = the two integer
 * parameters (small values as they are, a few bytes mean INT64_MIN/MAX and
 * the line limit); byte 3 = the small max_out (times 4); the rest is the
 * file text, then "|||" and old_str / insert_text, then "|||" and new_str.
 * An empty old_str is skipped: md_cmd_parse rejects it before md_str_replace
 * is reached, and md_str_replace does not handle one (it lists "1, 1, ..."
 * until the message buffer is full).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_text.h"
#include "fuzz_common.h"

#define PATH    "/memories/f.txt"
#define HEAD    "Here's the content of " PATH " with line numbers:\n"
#define SEP     "|||"
#define BIG     ((size_t)1 << 40)
#define RESERVE 200 /* the note room md_view_file keeps (src/base/text.c NOTE_RESERVE) */
#define SNIPHEAD                                                                                   \
    "The memory file has been edited. Here is the snippet showing the change (with line "          \
    "numbers):\n"

static int64_t param(uint8_t b)
{
    int8_t v = (int8_t)b;
    switch (v) {
    case 127:
        return INT64_MAX;
    case -128:
        return INT64_MIN;
    case 126:
        return MD_MAX_LINES;
    case -127:
        return INT64_MIN + 1;
    default:
        return v;
    }
}

/* Append model lines [from, to) (0-based) numbered from from + 1. */
static void put_lines(struct fstr *s, const struct flines *l, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        if (i > from)
            fstr_add(s, "\n", 1);
        fstr_printf_lineno(s, (long long)i + 1);
        fstr_add(s, l->p[i], l->n[i]);
    }
}

/* ---- view ---- */

/* lines.slice(start, end) bounds for view_range [a, b] on n lines. */
static void model_range(int present, int64_t a, int64_t b, size_t n, size_t *from, size_t *to)
{
    *from = 0;
    *to = n;
    if (!present)
        return;
    int64_t start = (a < 1 ? 1 : a) - 1; /* >= 0 */
    *from = (uint64_t)start > n ? n : (size_t)start;
    if (b == -1)
        *to = n;
    else if (b < 0)
        *to = (uint64_t)(-(b + 1)) + 1 >= n ? 0 : n - (size_t)(-(b + 1)) - 1;
    else
        *to = (uint64_t)b > n ? n : (size_t)b;
}

static void view(const struct md_view_range *r, const char *text, size_t len, size_t max_out,
                 struct md_buf *out)
{
    md_buf_init(out, BIG);
    FUZZ_CHECK(md_view_file(out, PATH, sizeof PATH - 1, text, len, r, max_out) == MD_OK);
}

static void check_view(const uint8_t *p, const char *text, size_t len)
{
    struct md_view_range r = {(p[0] >> 2) & 1, param(p[1]), param(p[2])};
    struct flines l;
    flines_split(&l, text, len);
    size_t from, to;
    model_range(r.present, r.first, r.last, l.count, &from, &to);
    struct fstr want = {0};
    fstr_puts(&want, HEAD);
    put_lines(&want, &l, from, to);

    struct md_buf out;
    view(&r, text, len, BIG, &out);
    FUZZ_CHECK_BYTES(out.data, out.len, want.p, want.n);
    md_buf_free(&out);

    /* Small max_out: cut at a line boundary, with the note. */
    size_t max_out = (size_t)p[3] * 4;
    view(&r, text, len, max_out, &out);
    const size_t hl = sizeof HEAD - 1;
    FUZZ_CHECK(out.len >= hl && memcmp(out.data, HEAD, hl) == 0);
    if (out.len == want.n && memcmp(out.data, want.p, want.n) == 0) {
        FUZZ_CHECK(from >= to || out.len <= max_out);
        goto done;
    }
    FUZZ_CHECK(from < to);
    FUZZ_CHECK(want.n + RESERVE > max_out); /* cut only when needed */
    if (hl + 7 + RESERVE <= max_out)
        FUZZ_CHECK(out.len <= max_out);
    /* Which note: a line holds no '\n', so the first '\n' after the first
     * line number either ends that line or starts the note about it. */
    struct fstr pre = {0}, note = {0};
    fstr_puts(&pre, HEAD);
    fstr_printf_lineno(&pre, (long long)from + 1);
    FUZZ_CHECK(out.len >= pre.n && memcmp(out.data, pre.p, pre.n) == 0);
    const char *nl = memchr(out.data + pre.n, '\n', out.len - pre.n);
    FUZZ_CHECK(nl != NULL);
    static const char LONG_NOTE[] = "\n[Output truncated: line ";
    int long_line = (size_t)(out.data + out.len - nl) >= sizeof LONG_NOTE - 1 &&
                    memcmp(nl, LONG_NOTE, sizeof LONG_NOTE - 1) == 0;
    /* Otherwise: the longest run of whole lines the output starts with. */
    size_t k = 0; /* whole lines shown */
    pre.n = hl;
    for (size_t i = from; i < to && !long_line; i++) {
        size_t mark = pre.n;
        if (i > from)
            fstr_add(&pre, "\n", 1);
        fstr_printf_lineno(&pre, (long long)i + 1);
        fstr_add(&pre, l.p[i], l.n[i]);
        if (pre.n > out.len || memcmp(out.data, pre.p, pre.n) != 0 ||
            (pre.n < out.len && out.data[pre.n] != '\n')) {
            pre.n = mark;
            break;
        }
        k++;
    }
    char tmp[256];
    size_t next; /* 0-based index of the first line not shown in full */
    if (k > 0) {
        next = from + k;
        snprintf(tmp, sizeof tmp,
                 "\n[Output truncated at the %zu-byte view limit after line %zu of %zu.", max_out,
                 next, l.count);
        fstr_puts(&note, tmp);
    } else {
        /* The first line alone does not fit: the head of it (all of it
         * only when it is empty and not even its number fits). */
        FUZZ_CHECK(long_line);
        fstr_printf_lineno(&pre, (long long)from + 1);
        size_t cut = (size_t)(nl - (out.data + pre.n));
        FUZZ_CHECK(cut < l.n[from] || cut == 0);
        if (fuzz_utf8_valid(l.p[from], l.n[from]))
            FUZZ_CHECK(fuzz_utf8_valid(l.p[from], cut));
        fstr_add(&pre, l.p[from], cut);
        next = from + 1;
        snprintf(tmp, sizeof tmp,
                 "\n[Output truncated: line %zu is longer than the %zu-byte view limit and was "
                 "cut after %zu bytes.",
                 from + 1, max_out, cut);
        fstr_puts(&note, tmp);
    }
    if (next < to) {
        snprintf(tmp, sizeof tmp, " To see more, view again with view_range [%zu, %lld].]",
                 next + 1, to == l.count ? -1LL : (long long)to);
        fstr_puts(&note, tmp);
    } else {
        fstr_puts(&note, "]");
    }
    fstr_add(&pre, note.p, note.n);
    FUZZ_CHECK_BYTES(out.data, out.len, pre.p, pre.n);
    md_buf_free(&out);

    /* Following the note gives exactly the rest. */
    if (next < to) {
        struct md_view_range again = {1, (int64_t)next + 1, to == l.count ? -1 : (int64_t)to};
        view(&again, text, len, BIG, &out);
        struct fstr rest = {0};
        fstr_puts(&rest, HEAD);
        put_lines(&rest, &l, next, to);
        FUZZ_CHECK_BYTES(out.data, out.len, rest.p, rest.n);
        fstr_free(&rest);
    }
    fstr_free(&pre);
    fstr_free(&note);
done:
    md_buf_free(&out);
    fstr_free(&want);
    flines_free(&l);
}

/* ---- str_replace ---- */

static void check_replace(const char *text, size_t len, const char *old, size_t olen,
                          const char *neu, size_t nlen)
{
    /* Non-overlapping occurrences, by a naive left-to-right scan. */
    size_t count = 0, at = 0;
    struct fstr lines = {0};
    for (size_t i = 0; olen <= len && i + olen <= len;) {
        if (memcmp(text + i, old, olen) == 0) {
            if (count == 0)
                at = i;
            size_t line = 1;
            for (size_t j = 0; j < i; j++)
                line += text[j] == '\n';
            char tmp[32];
            snprintf(tmp, sizeof tmp, "%s%zu", count ? ", " : "", line);
            fstr_puts(&lines, tmp);
            count++;
            i += olen;
        } else {
            i++;
        }
    }
    struct fstr want_msg = {0}, want_res = {0};
    enum md_err want_err = MD_ECONFLICT;
    if (count == 0) {
        fstr_puts(&want_msg, "No replacement was performed, old_str `");
        fstr_add(&want_msg, old, olen);
        fstr_puts(&want_msg, "` did not appear verbatim in " PATH ".");
    } else if (count > 1) {
        fstr_puts(&want_msg, "No replacement was performed. Multiple occurrences of old_str `");
        fstr_add(&want_msg, old, olen);
        fstr_puts(&want_msg, "` in lines: ");
        fstr_add(&want_msg, lines.p, lines.n);
        fstr_puts(&want_msg, ". Please ensure it is unique");
    } else {
        want_err = MD_OK;
        fstr_add(&want_res, text, at);
        fstr_add(&want_res, neu, nlen);
        fstr_add(&want_res, text + at + olen, len - at - olen);
        size_t first = 1, last;
        for (size_t j = 0; j < at; j++)
            first += text[j] == '\n';
        last = first;
        for (size_t j = 0; j < nlen; j++)
            last += neu[j] == '\n';
        struct flines l;
        flines_split(&l, want_res.p ? want_res.p : "", want_res.n);
        size_t lo = first > 2 ? first - 2 : 1;
        size_t hi = last + 2 < l.count ? last + 2 : l.count;
        fstr_puts(&want_msg, SNIPHEAD);
        put_lines(&want_msg, &l, lo - 1, hi);
        flines_free(&l);
    }
    struct md_buf res, msg;
    md_buf_init(&res, BIG);
    md_buf_init(&msg, BIG);
    enum md_err e =
        md_str_replace(text, len, old, olen, neu, nlen, PATH, sizeof PATH - 1, &res, &msg);
    FUZZ_CHECK(e == want_err);
    FUZZ_CHECK_BYTES(msg.data, msg.len, want_msg.p, want_msg.n);
    FUZZ_CHECK_BYTES(res.data, res.len, want_res.p, want_res.n);
    md_buf_free(&res);
    md_buf_free(&msg);
    fstr_free(&want_msg);
    fstr_free(&want_res);
    fstr_free(&lines);
}

/* ---- insert ---- */

static void check_insert(int64_t line, const char *text, size_t len, const char *ins, size_t ilen)
{
    struct flines l;
    flines_split(&l, text, len);
    struct fstr want_msg = {0}, want_res = {0};
    enum md_err want_err = MD_OK;
    if (line < 0 || (uint64_t)line > l.count) {
        want_err = MD_ERANGE;
        char tmp[256];
        snprintf(tmp, sizeof tmp,
                 "Error: Invalid `insert_line` parameter: %" PRId64
                 ". It should be within the range of lines of the file: [0, %zu]",
                 line, l.count);
        fstr_puts(&want_msg, tmp);
    } else {
        /* lines.splice(line, 0, ins.replace(/\n$/, '')).join('\n') */
        size_t n = ilen > 0 && ins[ilen - 1] == '\n' ? ilen - 1 : ilen;
        for (size_t i = 0; i <= l.count; i++) {
            if (i == (size_t)line) {
                if (i > 0)
                    fstr_add(&want_res, "\n", 1);
                fstr_add(&want_res, ins, n);
            }
            if (i < l.count) {
                if (i > 0 || line == 0)
                    fstr_add(&want_res, "\n", 1);
                fstr_add(&want_res, l.p[i], l.n[i]);
            }
        }
    }
    struct md_buf res, msg;
    md_buf_init(&res, BIG);
    md_buf_init(&msg, BIG);
    enum md_err e = md_insert(text, len, line, ins, ilen, &res, &msg);
    FUZZ_CHECK(e == want_err);
    FUZZ_CHECK_BYTES(msg.data, msg.len, want_msg.p, want_msg.n);
    FUZZ_CHECK_BYTES(res.data, res.len, want_res.p, want_res.n);
    md_buf_free(&res);
    md_buf_free(&msg);
    fstr_free(&want_msg);
    fstr_free(&want_res);
    flines_free(&l);
}

/* ---- size format and line count ---- */

static void check_size(uint64_t bytes)
{
    char got[24], want[64];
    size_t n = md_size_format(bytes, got);
    if (bytes < 1024) {
        snprintf(want, sizeof want, "%" PRIu64 "B", bytes);
    } else {
        int u = 1;
        while (u < 3 && bytes >= (uint64_t)1 << (10 * (u + 1)))
            u++;
        unsigned __int128 div = (unsigned __int128)1 << (10 * u);
        unsigned __int128 tenths = ((unsigned __int128)bytes * 20 + div) / (2 * div);
        snprintf(want, sizeof want, "%" PRIu64 ".%u%c", (uint64_t)(tenths / 10),
                 (unsigned)(tenths % 10), "KMG"[u - 1]);
    }
    FUZZ_CHECK_BYTES(got, n, want, strlen(want));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    const char *rest = (const char *)data + 4;
    size_t rlen = size - 4;
    /* Parts: text ||| a ||| b */
    const char *part[3] = {rest, "", ""};
    size_t plen[3] = {rlen, 0, 0};
    for (int i = 0; i < 2; i++) {
        const char *s = memmem(part[i], plen[i], SEP, 3);
        if (!s)
            break;
        part[i + 1] = s + 3;
        plen[i + 1] = plen[i] - (size_t)(s + 3 - part[i]);
        plen[i] = (size_t)(s - part[i]);
    }
    const char *text = part[0];
    size_t len = plen[0];

    struct flines l;
    flines_split(&l, text, len);
    FUZZ_CHECK(md_line_count(text, len) == l.count);
    flines_free(&l);

    switch (data[0] & 3) {
    case 0:
        check_view(data, text, len);
        break;
    case 1:
        if (plen[1] > 0)
            check_replace(text, len, part[1], plen[1], part[2], plen[2]);
        break;
    case 2:
        check_insert(param(data[1]), text, len, part[1], plen[1]);
        break;
    default: {
        uint64_t v = 0;
        for (size_t i = 1; i < size && i < 9; i++)
            v |= (uint64_t)data[i] << (8 * (i - 1));
        check_size(v);
        check_size(v >> (data[0] >> 2)); /* also small values */
        break;
    }
    }
    return 0;
}
