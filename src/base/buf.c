/* buf.c — bounded growable buffer (see md_buf.h). */
#include "base/md_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void md_buf_init(struct md_buf *b, size_t limit)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->limit = limit;
}

void md_buf_free(struct md_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void md_buf_reset(struct md_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

enum md_err md_buf_reserve(struct md_buf *b, size_t extra)
{
    if (extra > b->limit - b->len)
        return MD_ETOOBIG;
    size_t need = b->len + extra + 1; /* + NUL */
    if (need <= b->cap)
        return MD_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return MD_ENOMEM;
    b->data = p;
    b->cap = cap;
    return MD_OK;
}

enum md_err md_buf_append(struct md_buf *b, const void *p, size_t n)
{
    enum md_err err = md_buf_reserve(b, n);
    if (err)
        return err;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return MD_OK;
}

enum md_err md_buf_puts(struct md_buf *b, const char *s)
{
    return md_buf_append(b, s, strlen(s));
}

enum md_err md_buf_putc(struct md_buf *b, char c)
{
    return md_buf_append(b, &c, 1);
}

enum md_err md_buf_put_i64(struct md_buf *b, int64_t v)
{
    char tmp[24];
    size_t i = sizeof tmp;
    /* Digits from the right, without printf (on every log line). */
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[--i] = '-';
    return md_buf_append(b, tmp + i, sizeof tmp - i);
}

enum md_err md_buf_vprintf(struct md_buf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    enum md_err err = n < 0 ? MD_EINVAL : md_buf_reserve(b, (size_t)n);
    if (!err) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
    return err;
}

enum md_err md_buf_printf(struct md_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum md_err err = md_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return err;
}

enum md_err md_buf_say(struct md_buf *b, enum md_err err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum md_err e = md_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return e ? e : err;
}

void md_buf_truncate(struct md_buf *b, size_t len)
{
    if (len < b->len) {
        b->len = len;
        b->data[len] = '\0';
    }
}

char *md_buf_take(struct md_buf *b, size_t *len)
{
    char *p = b->data;
    if (!p) {
        p = malloc(1);
        if (!p)
            return NULL;
        p[0] = '\0';
    }
    *len = b->len;
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}
