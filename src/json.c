/* json.c — JSON string escaping and tool_result bodies (see md_json.h). */
#include "md_json.h"

#include <string.h>

#include "md_utf8.h"

enum md_err md_json_put_string(struct md_buf *b, const char *str, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    /* Worst case 6 bytes per input byte, plus quotes. */
    enum md_err e = md_buf_reserve(b, n + 2);
    if (e)
        return e;
    e = md_buf_putc(b, '"');
    size_t i = 0;
    while (!e && i < n) {
        /* Copy a run of bytes that need no escaping. */
        size_t j = i;
        while (j < n && s[j] >= 0x20 && s[j] < 0x80 && s[j] != '"' && s[j] != '\\')
            j++;
        if (j > i) {
            e = md_buf_append(b, s + i, j - i);
            i = j;
            continue;
        }
        unsigned c = s[i];
        if (c >= 0x80) {
            size_t k = md_utf8_seq((const char *)s + i, n - i);
            if (k) {
                e = md_buf_append(b, s + i, k);
                i += k;
            } else {
                e = md_buf_puts(b, "\\ufffd");
                i++;
            }
            continue;
        }
        char esc[6] = {'\\', 'u', '0', '0', 0, 0}; /* \u00XX */
        switch (c) {
        case '"':
            e = md_buf_puts(b, "\\\"");
            break;
        case '\\':
            e = md_buf_puts(b, "\\\\");
            break;
        case '\n':
            e = md_buf_puts(b, "\\n");
            break;
        case '\r':
            e = md_buf_puts(b, "\\r");
            break;
        case '\t':
            e = md_buf_puts(b, "\\t");
            break;
        default:
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            e = md_buf_append(b, esc, sizeof esc);
        }
        i++;
    }
    if (!e)
        e = md_buf_putc(b, '"');
    return e;
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
