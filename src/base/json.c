/* json.c — JSON string escaping and tool_result bodies (see md_json.h). */
#include "base/md_json.h"

#include <stdint.h>
#include <string.h>
#include <time.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "base/md_utf8.h"

/* What each byte needs: 0 nothing (printable ASCII but '"' and '\\'),
 * 1 an escape, 2 a UTF-8 check (0x80 and above). */
/* clang-format off */
static const unsigned char byte_class[256] = {
    /* 0x00-0x1f: control characters */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 0x20-0x7f: '"' (0x22) and '\\' (0x5c) */
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 0x80-0xff */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
};
/* clang-format on */

/* The escape of an ASCII byte that is not plain: its length, text in esc. */
static size_t escape_ascii(unsigned char c, char esc[6])
{
    static const char hex[] = "0123456789abcdef";
    esc[0] = '\\';
    switch (c) {
    case '"':
    case '\\':
        esc[1] = (char)c;
        return 2;
    case '\n':
        esc[1] = 'n';
        return 2;
    case '\r':
        esc[1] = 'r';
        return 2;
    case '\t':
        esc[1] = 't';
        return 2;
    default:
        esc[1] = 'u';
        esc[2] = '0';
        esc[3] = '0';
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        return 6;
    }
}

#define REPLACEMENT "\\ufffd" /* an invalid UTF-8 byte */

/* Nonzero when a byte of w is zero (exact as a yes/no answer). */
static inline uint64_t has_zero_byte(uint64_t w)
{
    return (w - 0x0101010101010101u) & ~w & 0x8080808080808080u;
}

/* (See md_json.h.) Eight
 * bytes at a time; the first word holding a control character, '"', '\\'
 * or a byte 0x80 and above gives the position of the first such byte (the
 * lowest flagged byte of each test is exact: a borrow only runs upwards). */
size_t md_json_plain_run(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    size_t i = 0;
#ifdef __SSE2__
    /* Sixteen bytes at a time: a signed "less than 0x20" also catches the
     * bytes 0x80 and above (negative as signed). */
    const __m128i space = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"'),
                  bslash = _mm_set1_epi8('\\');
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i hit =
            _mm_or_si128(_mm_cmplt_epi8(v, space),
                         _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
        unsigned mask = (unsigned)_mm_movemask_epi8(hit);
        if (mask)
            return i + (size_t)__builtin_ctz(mask);
    }
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        uint64_t special = ((w - ones * 0x20) & ~w & highs) | (w & highs) |
                           has_zero_byte(w ^ (ones * '"')) | has_zero_byte(w ^ (ones * '\\'));
        if (special) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return i + (size_t)__builtin_ctzll(special) / 8;
#else
            break;
#endif
        }
    }
    while (i < n && byte_class[s[i]] == 0)
        i++;
    return i;
}

/* One pass: room for the whole text as it is, and some for escapes, is
 * reserved up front (escapes only make it longer); an escape that does not
 * fit reserves again, for itself and the rest as it is. Plain runs are
 * straight copies and a long text costs few allocations. */
enum md_err md_json_put_string(struct md_buf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    char esc[6];
    size_t start = b->len;
    /* Some room for escapes when the limit allows it; else exactly the text. */
    enum md_err e = md_buf_reserve(b, n + 2 + n / 8 + 16);
    if (e)
        e = md_buf_reserve(b, n + 2);
    if (e)
        return e;
    md_buf_putc_unchecked(b, '"');
    for (size_t i = 0; i < n;) {
        size_t j = i + md_json_plain_run(str + i, n - i);
        md_buf_put_unchecked(b, s + i, j - i);
        i = j;
        if (i == n)
            break;
        /* This byte (or UTF-8 sequence) as it goes out. */
        const char *out;
        size_t out_len, used;
        if (byte_class[s[i]] == 2) {
            used = md_utf8_seq(str + i, n - i);
            out = used ? str + i : REPLACEMENT;
            out_len = used ? used : sizeof REPLACEMENT - 1;
            used = used ? used : 1;
        } else {
            out = esc;
            out_len = escape_ascii(s[i], esc);
            used = 1;
        }
        i += used;
        /* Room for it, the rest of the text as it is, the quote and the NUL. */
        size_t need = out_len + (n - i) + 1;
        if (need >= b->cap - b->len || need > b->limit - b->len) {
            e = md_buf_reserve(b, need);
            if (e) {
                md_buf_truncate(b, start); /* as it was */
                return e;
            }
        }
        md_buf_put_unchecked(b, out, out_len);
    }
    md_buf_putc_unchecked(b, '"');
    md_buf_terminate(b);
    return MD_OK;
}

enum md_err md_json_tool_result(struct md_buf *b, const char *tool_use_id, size_t id_len,
                                const char *content, size_t content_len, int is_error)
{
    enum md_err e = md_buf_puts(b, "{\"type\":\"tool_result\",");
    if (!e && tool_use_id) {
        e = md_buf_puts(b, "\"tool_use_id\":");
        if (!e)
            e = md_json_put_string(b, tool_use_id, id_len);
        if (!e)
            e = md_buf_putc(b, ',');
    }
    if (!e)
        e = md_buf_puts(b, "\"content\":");
    if (!e)
        e = md_json_put_string(b, content, content_len);
    if (!e)
        e = md_buf_puts(b, is_error ? ",\"is_error\":true}" : ",\"is_error\":false}");
    return e;
}

enum md_err md_json_put_time(struct md_buf *b, int64_t ms)
{
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    return md_buf_printf(b, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900,
                         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                         (int)(ms % 1000));
}

enum md_err md_json_put_string_or_null(struct md_buf *b, const char *s, size_t n)
{
    return s ? md_json_put_string(b, s, n) : md_buf_puts(b, "null");
}
