/* json.c — JSON string escaping and tool_result bodies (see md_json.h). */
#include "md_json.h"

#include <string.h>

#include "md_utf8.h"

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

/* Two passes: measure the escaped text, then write it into room reserved
 * once, so a long text costs one allocation and straight copies. */
enum md_err md_json_put_string(struct md_buf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    char esc[6];
    size_t need = n + 2;
    for (size_t i = 0; i < n; i++) {
        unsigned c = byte_class[s[i]];
        if (c == 1) {
            need += escape_ascii(s[i], esc) - 1;
        } else if (c == 2) {
            size_t k = md_utf8_seq(str + i, n - i);
            if (k)
                i += k - 1;
            else
                need += sizeof REPLACEMENT - 2;
        }
    }
    enum md_err e = md_buf_reserve(b, need);
    if (e)
        return e;
    md_buf_putc_unchecked(b, '"');
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && byte_class[s[j]] == 0)
            j++;
        md_buf_put_unchecked(b, s + i, j - i);
        i = j;
        if (i == n)
            break;
        if (byte_class[s[i]] == 2) {
            size_t k = md_utf8_seq(str + i, n - i);
            if (k)
                md_buf_put_unchecked(b, s + i, k);
            else
                md_buf_put_unchecked(b, REPLACEMENT, sizeof REPLACEMENT - 1);
            i += k ? k : 1;
        } else {
            md_buf_put_unchecked(b, esc, escape_ascii(s[i], esc));
            i++;
        }
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
