/* delta.c — reverse deltas of versions (md_delta.h): a splice, found by the
 * longest common head and tail of the two texts, or a zstd frame of the
 * older text with its successor as the prefix when that is smaller. */
#include "store/md_delta.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "base/md_log.h"
#include "base/md_sha256.h"

/* A splice this small is kept without trying zstd (a one-line edit, an
 * insert: bench/delta_compare.c measured the splice 6x faster to make and
 * within 20 bytes of zstd there). */
#define SPLICE_SMALL 256
/* zstd's level: 1 and 3 differed by 5% in size (bench/delta_compare.c). */
#define ZSTD_LEVEL 1

/* The first bytes of every zstd frame (ZSTD_MAGICNUMBER, little-endian). */
static const unsigned char zstd_magic[4] = {0x28, 0xB5, 0x2F, 0xFD};

/* Each thread's zstd contexts, made on first use, freed when it exits. */
struct zctx {
    ZSTD_CCtx *c;
    ZSTD_DCtx *d;
};
static pthread_key_t zkey;
static pthread_once_t zonce = PTHREAD_ONCE_INIT;
static int zkey_ok;

static void zctx_free(void *p)
{
    struct zctx *z = p;
    ZSTD_freeCCtx(z->c);
    ZSTD_freeDCtx(z->d);
    free(z);
}

static void zkey_make(void)
{
    zkey_ok = pthread_key_create(&zkey, zctx_free) == 0;
}

/* NULL when out of memory. */
static struct zctx *zctx(void)
{
    pthread_once(&zonce, zkey_make);
    if (!zkey_ok)
        return NULL;
    struct zctx *z = pthread_getspecific(zkey);
    if (z)
        return z;
    z = calloc(1, sizeof *z);
    if (!z)
        return NULL;
    z->c = ZSTD_createCCtx();
    z->d = ZSTD_createDCtx();
    if (!z->c || !z->d || pthread_setspecific(zkey, z) != 0) {
        zctx_free(z);
        return NULL;
    }
    return z;
}

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

size_t md_delta_splice_size(const char *old, size_t old_len, const char *succ, size_t succ_len)
{
    size_t head, tail;
    splice_of(old, old_len, succ, succ_len, &head, &tail);
    return varint_len(head) + varint_len(tail) + (old_len - head - tail);
}

/* `old` compressed with `succ` as its prefix, appended to out when it
 * takes fewer than `room` bytes: 1 when appended, 0 when not smaller, -1
 * out of memory. */
static int zstd_make(const char *old, size_t old_len, const char *succ, size_t succ_len,
                     size_t room, struct md_buf *out)
{
    struct zctx *z = zctx();
    if (!z || md_buf_reserve(out, room) != MD_OK)
        return -1;
    ZSTD_CCtx_reset(z->c, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(z->c, ZSTD_c_compressionLevel, ZSTD_LEVEL);
    ZSTD_CCtx_refPrefix(z->c, succ, succ_len);
    size_t n = ZSTD_compress2(z->c, out->data + out->len, room, old, old_len);
    if (ZSTD_isError(n))
        return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ? 0 : -1;
    out->len += n;
    out->data[out->len] = '\0';
    return 1;
}

enum md_err md_delta_make(const char *old, size_t old_len, const char *succ, size_t succ_len,
                          struct md_buf *out)
{
    size_t head, tail;
    splice_of(old, old_len, succ, succ_len, &head, &tail);
    size_t mid = old_len - head - tail;
    size_t splice = varint_len(head) + varint_len(tail) + mid;
    /* A splice that would begin as a zstd frame does (a head of 40 bytes,
     * a tail of 6,069 and a byte 0xFD, which no UTF-8 text holds) is never
     * written: zstd takes its place, whatever its size. */
    int looks_zstd = head == 0x28 && tail == 0x17B5 && mid && (unsigned char)old[head] == 0xFD;
    if (splice > SPLICE_SMALL || looks_zstd) {
        size_t room = looks_zstd ? ZSTD_compressBound(old_len) : splice - 1;
        int r = zstd_make(old, old_len, succ, succ_len, room, out);
        if (r < 0)
            return MD_ENOMEM;
        if (r > 0)
            return MD_OK;
    }
    enum md_err e = put_varint(out, head);
    if (!e)
        e = put_varint(out, tail);
    if (!e)
        e = md_buf_append(out, old + head, mid);
    return e;
}

/* A zstd delta: the frame decompressed with `base` as its prefix. */
static enum md_err zstd_apply(const char *base, size_t base_len, const char *delta,
                              size_t delta_len, struct md_buf *out)
{
    unsigned long long n = ZSTD_getFrameContentSize(delta, delta_len);
    if (n == ZSTD_CONTENTSIZE_UNKNOWN || n == ZSTD_CONTENTSIZE_ERROR || n > (size_t)1 << 40)
        return MD_EDB;
    struct zctx *z = zctx();
    if (!z)
        return MD_ENOMEM;
    enum md_err e = md_buf_reserve(out, (size_t)n);
    if (e)
        return e;
    ZSTD_DCtx_reset(z->d, ZSTD_reset_session_and_parameters);
    ZSTD_DCtx_refPrefix(z->d, base, base_len);
    size_t r = ZSTD_decompressDCtx(z->d, out->data + out->len, (size_t)n, delta, delta_len);
    if (ZSTD_isError(r) || r != n)
        return MD_EDB;
    out->len += r;
    out->data[out->len] = '\0';
    return MD_OK;
}

enum md_err md_delta_apply(const char *base, size_t base_len, const char *delta, size_t delta_len,
                           struct md_buf *out)
{
    if (delta_len >= sizeof zstd_magic && memcmp(delta, zstd_magic, sizeof zstd_magic) == 0)
        return zstd_apply(base, base_len, delta, delta_len, out);
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

enum md_err md_delta_rebuild(const struct md_delta_link *links, size_t n, struct md_buf *out)
{
    /* The first whole link: the base the deltas before it apply to. */
    size_t w = 0;
    while (w < n && links[w].delta && links[w].has_text)
        w++;
    if (w == n || !links[w].has_text || w > MD_DELTA_RUN_MAX + 1)
        return MD_EDB;
    struct md_buf a, b;
    md_buf_init(&a, (size_t)1 << 31);
    md_buf_init(&b, (size_t)1 << 31);
    enum md_err e = md_buf_append(&a, links[w].p ? links[w].p : "", links[w].n);
    for (size_t i = w; !e && i-- > 0;) {
        md_buf_reset(&b);
        e = md_delta_apply(a.data ? a.data : "", a.len, links[i].p ? links[i].p : "", links[i].n,
                           &b);
        struct md_buf tmp = a;
        a = b;
        b = tmp;
    }
    md_buf_reset(out);
    if (!e)
        e = md_buf_append(out, a.data ? a.data : "", a.len);
    md_buf_free(&a);
    md_buf_free(&b);
    return e;
}

enum md_err md_delta_convert(const struct md_delta_link *rows, size_t n, const char *succ,
                             size_t succ_len, md_delta_put_cb put, void *ctx, int *head_run)
{
    struct md_buf d;
    md_buf_init(&d, (size_t)1 << 31);
    enum md_err e = MD_OK;
    int have_succ = succ != NULL, since_whole = 0, in_head = 1;
    *head_run = 0;
    for (size_t i = 0; !e && i < n; i++) {
        const struct md_delta_link *r = &rows[i];
        int delta = r->has_text && have_succ && since_whole < MD_DELTA_RUN_MAX - 1;
        md_buf_reset(&d);
        if (delta)
            e = md_delta_make(r->p ? r->p : "", r->n, succ ? succ : "", succ_len, &d);
        if (!e)
            e = put(ctx, i, delta ? (d.data ? d.data : "") : NULL, d.len);
        since_whole = delta ? since_whole + 1 : 0;
        in_head = in_head && delta;
        *head_run += in_head;
        succ = r->p;
        succ_len = r->n;
        have_succ = r->has_text;
    }
    md_buf_free(&d);
    return e;
}

enum md_err md_delta_check(const unsigned char *sha256, const char *text, size_t len)
{
    if (!sha256)
        return MD_OK;
    unsigned char h[MD_SHA256_LEN];
    if (md_sha256(text ? text : "", len, h) != MD_OK)
        return MD_ENOMEM;
    if (memcmp(h, sha256, MD_SHA256_LEN) != 0) {
        md_log_msg(MD_LOG_ERROR, "a version's rebuilt text does not match its SHA-256", NULL);
        return MD_EDB;
    }
    return MD_OK;
}
