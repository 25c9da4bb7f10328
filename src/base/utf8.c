/* utf8.c — strict UTF-8 checks (see md_utf8.h). */
#include "base/md_utf8.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

size_t md_utf8_seq(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t need;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n - 1 < need)
        return 0;
    for (size_t k = 1; k <= need; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return need + 1;
}

int md_utf8_valid(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t k = md_utf8_seq(s + i, n - i);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

size_t md_utf8_cut(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = n;
    /* Step back over at most 3 continuation bytes to the lead byte. */
    size_t back = 0;
    while (i > 0 && back < 4 && (s[i - 1] & 0xC0) == 0x80) {
        i--;
        back++;
    }
    if (i == 0)
        return 0;
    unsigned lead = s[i - 1];
    size_t seq = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (back + 1 >= seq)
        return n; /* the last sequence is complete */
    return i - 1;
}

int md_utf8_is_nfc(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (unsigned char)s[i] < 0x80)
        i++;
    if (i == n)
        return 1; /* ASCII is always NFC */
    utf8proc_uint8_t *nfc = NULL;
    utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &nfc,
                                      (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    int same = m < 0 || ((size_t)m == n && memcmp(nfc, s, n) == 0);
    free(nfc);
    return same;
}
