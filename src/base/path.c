/* path.c — canonicalisation of /memories paths (see md_path.h). */
#include "base/md_path.h"

#include <string.h>

static int is_hex_pct(const char *p, const char *end)
{
    /* p points at '%': %2e %2E %2f %2F %5c %5C */
    if (end - p < 3)
        return 0;
    char a = p[1], b = (char)(p[2] | 0x20);
    return (a == '2' && (b == 'e' || b == 'f')) || (a == '5' && b == 'c');
}

enum md_path_status md_path_canon(const char *in, size_t len, const struct md_path_limits *lim,
                                  char *out, size_t *out_len)
{
    if (len < MD_ROOT_LEN || memcmp(in, MD_ROOT, MD_ROOT_LEN) != 0 ||
        (len > MD_ROOT_LEN && in[MD_ROOT_LEN] != '/'))
        return MD_PATH_NOT_UNDER_ROOT;
    if (len > lim->max_path)
        return MD_PATH_TOO_LONG;
    if (!md_utf8_valid(in, len))
        return MD_PATH_BAD_UTF8;

    const char *end = in + len;
    int backslash = 0, percent = 0;
    for (const char *p = in; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7F)
            return MD_PATH_CONTROL;
        if (c == 0xC2 && p + 1 < end && (unsigned char)p[1] >= 0x80 && (unsigned char)p[1] <= 0x9F)
            return MD_PATH_CONTROL; /* C1 controls U+0080..U+009F */
        if (c == '\\')
            backslash = 1;
        else if (c == '%' && is_hex_pct(p, end))
            percent = 1;
    }
    if (backslash)
        return MD_PATH_BACKSLASH;
    if (percent)
        return MD_PATH_PERCENT;

    /* Walk the segments after "/memories". */
    enum md_path_status found = MD_PATH_OK;
    long depth = 0;
    int escapes = 0;
    size_t o = MD_ROOT_LEN;
    memcpy(out, MD_ROOT, MD_ROOT_LEN);
    const char *p = in + MD_ROOT_LEN;
    while (p < end) {
        while (p < end && *p == '/')
            p++;
        if (p == end)
            break;
        const char *seg = p;
        while (p < end && *p != '/')
            p++;
        size_t slen = (size_t)(p - seg);
        if (slen == 2 && seg[0] == '.' && seg[1] == '.') {
            if (--depth < 0)
                escapes = 1;
            if (found == MD_PATH_OK)
                found = MD_PATH_DOTDOT;
            continue;
        }
        depth++;
        if (slen == 1 && seg[0] == '.') {
            depth--;
            if (found == MD_PATH_OK)
                found = MD_PATH_DOT;
            continue;
        }
        if (slen > lim->max_segment && found == MD_PATH_OK)
            found = MD_PATH_SEGMENT_TOO_LONG;
        out[o++] = '/';
        memcpy(out + o, seg, slen);
        o += slen;
    }
    if (escapes)
        return MD_PATH_ESCAPES;
    if (found != MD_PATH_OK)
        return found;
    out[o] = '\0';
    *out_len = o;
    return MD_PATH_OK;
}

/* Longest prefix of a too-long path shown in an error message. */
#define MD_PATH_SHOWN 100

enum md_err md_path_errmsg(struct md_buf *m, enum md_path_status st, const char *in, size_t len,
                           const struct md_path_limits *lim)
{
    enum md_err e = MD_OK;
    switch (st) {
    case MD_PATH_OK:
        return MD_OK;
    case MD_PATH_NOT_UNDER_ROOT:
        e = md_buf_puts(m, "Error: Path must start with /memories, got: ");
        return e ? e : md_buf_append(m, in, len);
    case MD_PATH_TOO_LONG: {
        size_t shown = len > MD_PATH_SHOWN ? md_utf8_cut(in, MD_PATH_SHOWN) : len;
        if (!md_utf8_valid(in, shown))
            shown = 0;
        e = md_buf_puts(m, "Error: Path ");
        if (!e)
            e = md_buf_append(m, in, shown);
        if (!e)
            return md_buf_printf(m, "... is too long: %zu bytes (the limit is %zu)", len,
                                 lim->max_path);
        return e;
    }
    default:
        break;
    }
    e = md_buf_puts(m, "Error: Path ");
    if (!e)
        e = md_buf_append(m, in, len);
    if (e)
        return e;
    switch (st) {
    case MD_PATH_BAD_UTF8:
        return md_buf_puts(m, " is not valid UTF-8");
    case MD_PATH_CONTROL:
        return md_buf_puts(m, " contains a control character, which is not allowed");
    case MD_PATH_BACKSLASH:
        return md_buf_puts(m, " contains a backslash (\\), which is not allowed");
    case MD_PATH_PERCENT:
        return md_buf_puts(m, " contains a percent-encoded '.', '/' or '\\' (%2e, %2f or %5c), "
                              "which is not allowed");
    case MD_PATH_ESCAPES:
        return md_buf_puts(m, " would escape /memories directory");
    case MD_PATH_DOTDOT:
        return md_buf_puts(m, " contains a '..' segment, which is not allowed");
    case MD_PATH_DOT:
        return md_buf_puts(m, " contains a '.' segment, which is not allowed");
    case MD_PATH_SEGMENT_TOO_LONG:
        return md_buf_printf(m, " has a segment longer than %zu bytes", lim->max_segment);
    default:
        return md_buf_puts(m, " is not a valid path");
    }
}

int md_path_depth(const char *canon, size_t len)
{
    int d = 0;
    for (size_t i = MD_ROOT_LEN; i < len; i++)
        d += canon[i] == '/';
    return d;
}

size_t md_path_parent_len(const char *canon, size_t len)
{
    size_t i = len;
    while (i > MD_ROOT_LEN && canon[i - 1] != '/')
        i--;
    return i > MD_ROOT_LEN ? i - 1 : MD_ROOT_LEN;
}

int md_path_is_inside(const char *p, size_t plen, const char *dir, size_t dlen)
{
    return plen > dlen && memcmp(p, dir, dlen) == 0 && p[dlen] == '/';
}

enum md_within md_path_within(const char *p, size_t plen, const char *root, size_t rlen)
{
    if (!root || (plen == rlen && memcmp(p, root, rlen) == 0) ||
        md_path_is_inside(p, plen, root, rlen))
        return MD_IN_SUBTREE;
    /* `p` is the directory: is the subtree inside it? */
    const char *sub = root, *dir = p;
    size_t sublen = rlen, dirlen = plen;
    return md_path_is_inside(sub, sublen, dir, dirlen) ? MD_ABOVE_SUBTREE : MD_OUTSIDE_SUBTREE;
}
