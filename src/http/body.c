/*
 * body.c — request bodies held in memory, counted against
 * --max-body-memory (see internal.h): a body is reserved before it is read
 * (or as it grows, when chunked) and given back when it is dropped.
 */
#include "internal.h"

/* Count the request's body as `total` bytes against --max-body-memory
 * (a body announced by Content-Length is counted whole before it is read,
 * so a request is admitted or refused at once; a chunked one as it grows).
 * 0 when it does not fit (nothing more counted then). */
int md_http_body_reserve(struct req *r, size_t total)
{
    if (total <= r->reserved)
        return 1;
    struct md_http *h = r->h;
    size_t n = total - r->reserved;
    size_t cap = h->cfg->max_body_memory;
    if (n > cap)
        return 0;
    size_t cur = atomic_load(&h->body_bytes);
    do {
        if (cur > cap - n)
            return 0;
    } while (!atomic_compare_exchange_weak(&h->body_bytes, &cur, cur + n));
    r->reserved += n;
    return 1;
}

void md_http_body_drop(struct req *r)
{
    md_buf_free(&r->body);
    atomic_fetch_sub(&r->h->body_bytes, r->reserved);
    r->reserved = 0;
}
