/* text.c — sizes, lines, views and edits (see md_text.h). */
#include "base/md_text.h"

#include <stdio.h>
#include <string.h>

#include "base/md_path.h"

size_t md_size_format(uint64_t bytes, char out[24])
{
    if (bytes < 1024)
        return (size_t)snprintf(out, 24, "%lluB", (unsigned long long)bytes);
    static const char units[] = "KMG";
    int u = 0;
    uint64_t div = 1024;
    while (u < 2 && bytes / div >= 1024) {
        div *= 1024;
        u++;
    }
    /* tenths = round-half-up(bytes * 10 / div), done without overflow. */
    uint64_t whole = bytes / div, rem = bytes % div;
    uint64_t tenths = whole * 10 + (rem * 10) / div;
    uint64_t r = (rem * 10) % div;
    if (r * 2 >= div)
        tenths++;
    return (size_t)snprintf(out, 24, "%llu.%llu%c", (unsigned long long)(tenths / 10),
                            (unsigned long long)(tenths % 10), units[u]);
}

size_t md_line_count(const char *s, size_t n)
{
    size_t count = 1;
    const char *p = s, *end = s + n;
    while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        count++;
        p++;
    }
    return count;
}

/* Longest "{n right-aligned in 6}\t" for n < 10^19. */
#define LINENO_MAX 21

/* Write "{n right-aligned in 6}\t" into out; returns its length. */
static size_t format_lineno(char out[LINENO_MAX], int64_t n)
{
    char digits[20];
    size_t k = 0;
    uint64_t v = n < 0 ? 0 : (uint64_t)n;
    do {
        digits[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    size_t len = 0;
    for (size_t pad = k; pad < 6; pad++)
        out[len++] = ' ';
    while (k)
        out[len++] = digits[--k];
    out[len++] = '\t';
    return len;
}

enum md_err md_put_lineno(struct md_buf *b, int64_t n)
{
    char tmp[LINENO_MAX];
    return md_buf_append(b, tmp, format_lineno(tmp, n));
}

/* Start offset of 1-based line `line` (which must exist). */
static size_t line_start(const char *s, size_t n, size_t line)
{
    size_t off = 0;
    for (size_t l = 1; l < line; l++) {
        const char *nl = memchr(s + off, '\n', n - off);
        off = (size_t)(nl - s) + 1;
    }
    return off;
}

enum md_err md_put_lines(struct md_buf *b, const char *text, size_t text_len, size_t from,
                         size_t to)
{
    size_t off = line_start(text, text_len, from);
    enum md_err e = MD_OK;
    for (size_t l = from; l <= to && !e; l++) {
        const char *nl = memchr(text + off, '\n', text_len - off);
        size_t end = nl ? (size_t)(nl - text) : text_len;
        if (l > from)
            e = md_buf_putc(b, '\n');
        if (!e)
            e = md_put_lineno(b, (int64_t)l);
        if (!e)
            e = md_buf_append(b, text + off, end - off);
        off = end + 1;
    }
    return e;
}

/* JavaScript Array.prototype.slice index normalisation for an end/start. */
static int64_t js_slice_index(int64_t v, int64_t len)
{
    if (v < 0)
        return v + len < 0 ? 0 : v + len;
    return v > len ? len : v;
}

/* Room kept for the truncation note. */
#define NOTE_RESERVE 200

enum md_err md_view_file(struct md_buf *out, const char *path, size_t path_len, const char *text,
                         size_t text_len, const struct md_view_range *range, size_t max_out)
{
    enum md_err e;
    size_t nlines = md_line_count(text, text_len);
    if (nlines > MD_MAX_LINES) {
        e = md_buf_puts(out, "File ");
        if (!e)
            e = md_buf_append(out, path, path_len);
        if (!e)
            e = md_buf_puts(out, " exceeds maximum line limit of 999,999 lines.");
        return e ? e : MD_ETOOBIG;
    }

    /* Lines [first, last) as 0-based indexes, following the SDK:
     * start = max(1, a) - 1; end = b == -1 ? len : b; lines.slice(start, end). */
    int64_t len = (int64_t)nlines, first = 0, last = len;
    if (range && range->present) {
        int64_t a = range->first < 1 ? 1 : range->first;
        first = js_slice_index(a - 1, len);
        last = range->last == -1 ? len : js_slice_index(range->last, len);
    }
    /* Room for the whole view at once (header, text, a number per line),
     * within the output limit: one allocation, not a doubling series. */
    size_t guess = 64 + path_len + text_len + (size_t)(last > first ? last - first : 0) * 8;
    md_buf_reserve(out, guess < max_out ? guess : max_out); /* a hint: failure is fine */
    e = md_buf_puts(out, "Here's the content of ");
    if (!e)
        e = md_buf_append(out, path, path_len);
    if (!e)
        e = md_buf_puts(out, " with line numbers:\n");
    if (e)
        return e;

    size_t budget = max_out > NOTE_RESERVE ? max_out - NOTE_RESERVE : 0;
    size_t off = first < last ? line_start(text, text_len, (size_t)first + 1) : 0;
    for (int64_t l = first; l < last; l++) {
        const char *nl = memchr(text + off, '\n', text_len - off);
        size_t end = nl ? (size_t)(nl - text) : text_len;
        size_t need = (l > first ? 1 : 0) + 7 + (end - off);
        if (out->len + need > budget) {
            if (l == first) {
                /* A single line longer than the limit: show its head. */
                size_t room = budget > out->len + 7 ? budget - out->len - 7 : 0;
                size_t cut = md_utf8_cut(text + off, room);
                e = md_put_lineno(out, l + 1);
                if (!e)
                    e = md_buf_append(out, text + off, cut);
                if (!e)
                    e = md_buf_printf(out,
                                      "\n[Output truncated: line %lld is longer than the %zu-byte "
                                      "view limit and was cut after %zu bytes.",
                                      (long long)l + 1, max_out, cut);
                l++;
            } else {
                e = md_buf_printf(out,
                                  "\n[Output truncated at the %zu-byte view limit after line %lld "
                                  "of %lld.",
                                  max_out, (long long)l, (long long)len);
            }
            if (!e && l < last)
                e = md_buf_printf(out, " To see more, view again with view_range [%lld, %lld].]",
                                  (long long)l + 1, (long long)(last == len ? -1 : last));
            else if (!e)
                e = md_buf_puts(out, "]");
            return e;
        }
        e = md_buf_reserve(out, need + LINENO_MAX);
        if (e)
            return e;
        if (l > first)
            md_buf_putc_unchecked(out, '\n');
        char num[LINENO_MAX];
        size_t numlen = format_lineno(num, l + 1);
        md_buf_put_unchecked(out, num, numlen);
        md_buf_put_unchecked(out, text + off, end - off);
        md_buf_terminate(out);
        off = end + 1;
    }
    return MD_OK;
}

/* memmem that accepts empty haystacks. */
static const char *find(const char *h, size_t hn, const char *n, size_t nn)
{
    if (nn > hn)
        return NULL;
    return memmem(h, hn, n, nn);
}

/* Append old_str as quoted in messages. */
static enum md_err put_backticked(struct md_buf *m, const char *s, size_t n)
{
    enum md_err e = md_buf_putc(m, '`');
    if (!e)
        e = md_buf_append(m, s, n);
    if (!e)
        e = md_buf_putc(m, '`');
    return e;
}

enum md_err md_str_replace(const char *text, size_t text_len, const char *old, size_t old_len,
                           const char *new_text, size_t new_len, const char *path, size_t path_len,
                           struct md_buf *result, struct md_buf *msg)
{
    enum md_err e;
    const char *first = find(text, text_len, old, old_len);
    const char *second = NULL;
    if (first) {
        size_t after = (size_t)(first - text) + old_len;
        second = find(text + after, text_len - after, old, old_len);
    }
    if (!first) {
        e = md_buf_puts(msg, "No replacement was performed, old_str ");
        if (!e)
            e = put_backticked(msg, old, old_len);
        if (!e)
            e = md_buf_puts(msg, " did not appear verbatim in ");
        if (!e)
            e = md_buf_append(msg, path, path_len);
        if (!e)
            e = md_buf_putc(msg, '.');
        return e ? e : MD_ECONFLICT;
    }
    if (second) {
        e = md_buf_puts(msg, "No replacement was performed. Multiple occurrences of old_str ");
        if (!e)
            e = put_backticked(msg, old, old_len);
        if (!e)
            e = md_buf_puts(msg, " in lines: ");
        /* The line on which each non-overlapping occurrence starts. */
        size_t line = 1, scanned = 0, off = 0;
        const char *hit;
        while (!e && (hit = find(text + off, text_len - off, old, old_len)) != NULL) {
            size_t at = (size_t)(hit - text);
            for (; scanned < at; scanned++)
                line += text[scanned] == '\n';
            if (off > 0)
                e = md_buf_puts(msg, ", ");
            if (!e)
                e = md_buf_put_i64(msg, (int64_t)line);
            off = at + old_len;
        }
        if (!e)
            e = md_buf_puts(msg, ". Please ensure it is unique");
        return e ? e : MD_ECONFLICT;
    }

    size_t at = (size_t)(first - text);
    e = md_buf_reserve(result, text_len - old_len + new_len);
    if (!e)
        e = md_buf_append(result, text, at);
    if (!e)
        e = md_buf_append(result, new_text, new_len);
    if (!e)
        e = md_buf_append(result, text + at + old_len, text_len - at - old_len);
    if (e)
        return e;

    /* Snippet: 2 lines before the first changed line to 2 after the last
     * line of the new text. */
    size_t first_line = md_line_count(text, at); /* 1-based */
    size_t last_line = first_line + md_line_count(new_text, new_len) - 1;
    size_t total = md_line_count(result->data, result->len);
    size_t from = first_line > 2 ? first_line - 2 : 1;
    size_t to = last_line + 2 < total ? last_line + 2 : total;
    e = md_buf_puts(msg, "The memory file has been edited. Here is the snippet showing the change "
                         "(with line numbers):\n");
    if (!e)
        e = md_put_lines(msg, result->data, result->len, from, to);
    return e;
}

enum md_err md_insert(const char *text, size_t text_len, int64_t line, const char *ins,
                      size_t ins_len, struct md_buf *result, struct md_buf *msg)
{
    size_t n = md_line_count(text, text_len);
    if (line < 0 || (uint64_t)line > n) {
        enum md_err e = md_buf_printf(msg,
                                      "Error: Invalid `insert_line` parameter: %lld. It should be "
                                      "within the range of lines of the file: [0, %zu]",
                                      (long long)line, n);
        return e ? e : MD_ERANGE;
    }
    if (ins_len > 0 && ins[ins_len - 1] == '\n')
        ins_len--;
    enum md_err e = md_buf_reserve(result, text_len + ins_len + 1);
    if (e)
        return e;
    if (line == 0) {
        e = md_buf_append(result, ins, ins_len);
        if (!e)
            e = md_buf_putc(result, '\n');
        if (!e)
            e = md_buf_append(result, text, text_len);
        return e;
    }
    /* Split point: the '\n' ending line `line`, or the end of the text. */
    size_t split = text_len;
    if ((size_t)line < n) {
        size_t start = line_start(text, text_len, (size_t)line + 1);
        split = start - 1;
    }
    e = md_buf_append(result, text, split);
    if (!e)
        e = md_buf_putc(result, '\n');
    if (!e)
        e = md_buf_append(result, ins, ins_len);
    if (!e)
        e = md_buf_append(result, text + split, text_len - split);
    return e;
}

static unsigned char fold_ascii(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + ('a' - 'A')) : c;
}

/* Whether hay[0..m) equals needle[0..m), ASCII letters without case. */
static int equal_ci(const char *hay, const char *needle, size_t m)
{
    for (size_t k = 0; k < m; k++)
        if (fold_ascii((unsigned char)hay[k]) != fold_ascii((unsigned char)needle[k]))
            return 0;
    return 1;
}

/* The candidates, where the needle's first byte is (in either case), are
 * found with memchr (vectorised by the C library): most of a search's CPU
 * is spent here, checking and ranking candidate files. */
long md_text_find_ci(const char *hay, size_t n, const char *needle, size_t m)
{
    if (m == 0 || m > n)
        return -1;
    unsigned char lo = fold_ascii((unsigned char)needle[0]);
    unsigned char up = (lo >= 'a' && lo <= 'z') ? (unsigned char)(lo - ('a' - 'A')) : lo;
    const char *end = hay + (n - m + 1); /* a match starts before end */
    const char *pl = memchr(hay, lo, (size_t)(end - hay));
    const char *pu = up != lo ? memchr(hay, up, (size_t)(end - hay)) : NULL;
    while (pl || pu) {
        int low = pl && (!pu || pl < pu);
        const char *p = low ? pl : pu;
        if (equal_ci(p + 1, needle + 1, m - 1))
            return (long)(p - hay);
        if (low)
            pl = memchr(p + 1, lo, (size_t)(end - (p + 1)));
        else
            pu = memchr(p + 1, up, (size_t)(end - (p + 1)));
    }
    return -1;
}

int md_text_is_sep(const char *s, size_t n)
{
    unsigned char c = (unsigned char)s[0];
    if (c < 0x80)
        return !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
    return c == 0xC2 && n > 1 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] <= 0x9F;
}

/* Whether the character that ends at hay[at - 1] is a separator (or at == 0). */
static int after_sep(const char *hay, size_t at)
{
    if (at == 0)
        return 1;
    unsigned char c = (unsigned char)hay[at - 1];
    if (c < 0x80)
        return md_text_is_sep(hay + at - 1, 1);
    return at >= 2 && md_text_is_sep(hay + at - 2, 2);
}

long md_text_find_word_ci(const char *hay, size_t n, size_t from, const char *needle, size_t m)
{
    int anywhere = m > 0 && md_text_is_sep(needle, m);
    while (from < n) {
        long at = md_text_find_ci(hay + from, n - from, needle, m);
        if (at < 0)
            return -1;
        size_t pos = from + (size_t)at;
        if (anywhere || after_sep(hay, pos))
            return (long)pos;
        from = pos + 1;
    }
    return -1;
}
