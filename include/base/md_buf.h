/*
 * md_buf.h — a growable byte buffer with a hard size limit.
 *
 * Ownership: a struct md_buf owns `data` (malloc'd). md_buf_free() releases
 * it; md_buf_take() hands it to the caller (who then frees it with free())
 * and resets the buffer. `data` is always NUL-terminated when non-NULL, but
 * may also contain NUL bytes: `len` is authoritative.
 *
 * Errors: appends return MD_ETOOBIG when the result would exceed `limit`
 * (the buffer is left unchanged) and MD_ENOMEM when malloc fails.
 */
#ifndef MD_BUF_H
#define MD_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/md_err.h"

struct md_buf {
    char *data;   /* owned; NULL until the first append */
    size_t len;   /* bytes in use, excluding the trailing NUL */
    size_t cap;   /* bytes allocated */
    size_t limit; /* most bytes `len` may reach */
};

/* Start an empty buffer that may grow to at most `limit` bytes. */
void md_buf_init(struct md_buf *b, size_t limit);

/* Release the buffer's memory and reset it (limit kept). */
void md_buf_free(struct md_buf *b);

/* Forget the contents but keep the allocation. */
void md_buf_reset(struct md_buf *b);

/* Make room for `extra` more bytes without changing len. */
enum md_err md_buf_reserve(struct md_buf *b, size_t extra);

enum md_err md_buf_append(struct md_buf *b, const void *p, size_t n);
enum md_err md_buf_puts(struct md_buf *b, const char *s);
enum md_err md_buf_putc(struct md_buf *b, char c);
/* Decimal integer. */
enum md_err md_buf_put_i64(struct md_buf *b, int64_t v);
/* printf-style append; for short, fixed-shape text only (no user data). */
enum md_err md_buf_printf(struct md_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
enum md_err md_buf_vprintf(struct md_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* A refusal's text (md_refusals.h: `md_buf_say(b, MD_R_..., values)`)
 * appended, printf-style; returns `err`, or the buffer's error when the
 * text does not fit. */
enum md_err md_buf_say(struct md_buf *b, enum md_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fast paths for hot loops: append without checks into room made before
 * with md_buf_reserve() (the caller guarantees it; the NUL is written by
 * md_buf_terminate() once at the end). */
static inline void md_buf_put_unchecked(struct md_buf *b, const void *p, size_t n)
{
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
}

static inline void md_buf_putc_unchecked(struct md_buf *b, char c)
{
    b->data[b->len++] = c;
}

static inline void md_buf_terminate(struct md_buf *b)
{
    if (b->data)
        b->data[b->len] = '\0';
}

/* Truncate to `len` bytes (len <= b->len). */
void md_buf_truncate(struct md_buf *b, size_t len);

/* Hand the memory to the caller; *len gets the length. The buffer is reset.
 * Returns a malloc'd, NUL-terminated string (an empty one if nothing was
 * appended) or NULL when out of memory. */
char *md_buf_take(struct md_buf *b, size_t *len);

#endif
