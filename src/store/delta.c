/* delta.c — reverse deltas of versions (md_delta.h): a splice, found by the
 * longest common head and tail of the two texts. */
#include "store/md_delta.h"

#include <stdint.h>
#include <string.h>

/* Bytes `a` and `b` share from their start, at most n. */
static size_t common_head(const char *a, const char *b, size_t n)
{
    size_t i = 0;
    for (; i + sizeof(uint64_t) <= n; i += sizeof(uint64_t)) {
        uint64_t x, y;
        memcpy(&x, a + i, sizeof x);
        memcpy(&y, b + i, sizeof y);
        if (x != y)
            break;
    }
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* Bytes `a` (a_len) and `b` (b_len) share at their ends, at most n. */
static size_t common_tail(const char *a, size_t a_len, const char *b, size_t b_len, size_t n)
{
    size_t i = 0;
    for (; i + sizeof(uint64_t) <= n; i += sizeof(uint64_t)) {
        uint64_t x, y;
        memcpy(&x, a + a_len - i - sizeof x, sizeof x);
        memcpy(&y, b + b_len - i - sizeof y, sizeof y);
        if (x != y)
            break;
    }
    while (i < n && a[a_len - i - 1] == b[b_len - i - 1])
        i++;
    return i;
}

static size_t varint_len(size_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static enum md_err put_varint(struct md_buf *out, size_t v)
{
    unsigned char b[10];
    size_t n = 0;
    do {
        b[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            b[n] |= 0x80;
        n++;
    } while (v);
    return md_buf_append(out, (const char *)b, n);
}

/* 0, or -1 when the varint runs past `end` or is too long. */
static int get_varint(const unsigned char **p, const unsigned char *end, size_t *v)
{
    size_t r = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return -1;
        unsigned char c = *(*p)++;
        r |= (size_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

/* The splice: head and tail shared, the tail never overlapping the head in
 * either text. */
static void splice_of(const char *old, size_t old_len, const char *succ, size_t succ_len,
                      size_t *head, size_t *tail)
{
    size_t shorter = old_len < succ_len ? old_len : succ_len;
    *head = common_head(old, succ, shorter);
    *tail = common_tail(old, old_len, succ, succ_len, shorter - *head);
}

size_t md_delta_size(const char *old, size_t old_len, const char *succ, size_t succ_len)
{
    size_t head, tail;
    splice_of(old, old_len, succ, succ_len, &head, &tail);
    return varint_len(head) + varint_len(tail) + (old_len - head - tail);
}

enum md_err md_delta_make(const char *old, size_t old_len, const char *succ, size_t succ_len,
                          struct md_buf *out)
{
    size_t head, tail;
    splice_of(old, old_len, succ, succ_len, &head, &tail);
    enum md_err e = put_varint(out, head);
    if (!e)
        e = put_varint(out, tail);
    if (!e)
        e = md_buf_append(out, old + head, old_len - head - tail);
    return e;
}

enum md_err md_delta_apply(const char *base, size_t base_len, const char *delta, size_t delta_len,
                           struct md_buf *out)
{
    const unsigned char *p = (const unsigned char *)delta, *end = p + delta_len;
    size_t head, tail;
    if (get_varint(&p, end, &head) || get_varint(&p, end, &tail) || head > base_len ||
        tail > base_len - head)
        return MD_EDB;
    enum md_err e = md_buf_append(out, base, head);
    if (!e)
        e = md_buf_append(out, (const char *)p, (size_t)(end - p));
    if (!e)
        e = md_buf_append(out, base + base_len - tail, tail);
    return e;
}
