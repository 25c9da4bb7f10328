/*
 * search.c — GET /v1/search?q=..[&path=DIR][&limit=N][&cursor=C]
 * [&format=json|text]: full-text search of the tenant's files
 * (md_search.h; docs/behaviour.md 17).
 */
#include <string.h>

#include "cmd/md_search.h"
#include "internal.h"

/* Bytes of a search answer at most (100 hits of 3 snippets fit). */
#define SEARCH_OUT_LIMIT ((size_t)4 << 20)

enum MHD_Result md_http_search(struct req *r)
{
    enum MHD_Result ret;
    if (md_http_tenant(r, &ret) != 0 || md_http_tenant_readable(r, &ret) != 0)
        return ret;
    int64_t limit;
    if (md_http_int_arg(r, "limit", 1, MD_SEARCH_LIMIT_MAX, MD_SEARCH_LIMIT_DEFAULT, &limit, &ret))
        return ret;
    const char *format = md_http_arg(r, "format");
    int text = format && strcmp(format, "text") == 0;
    if (format && !text && strcmp(format, "json") != 0)
        return md_reply_errorf(r, MD_R_PARAM_FORMAT);
    struct md_search_req q = {r->tenant,
                              md_http_arg(r, "q"),
                              md_http_arg(r, "path"),
                              limit,
                              md_http_arg(r, "cursor"),
                              md_http_key_root(r),
                              strlen(r->key_path)};
    struct md_search_result res;
    struct md_buf out;
    md_buf_init(&out, SEARCH_OUT_LIMIT);
    enum md_err e = md_search(r->h->store, &r->h->limits->path, &q, &res, &out);
    if (e == MD_EINVAL || e == MD_ENOENT || (e == MD_EBUSY && md_store_building(r->h->store))) {
        ret = md_reply_error(r, e, out.data ? out.data : "", out.len);
    } else if (e) {
        ret = md_http_storage_error(r, e);
    } else if (text) {
        e = md_search_text(&res, &out);
        ret = e ? MHD_NO : md_reply_body(r, 200, "text/plain; charset=utf-8", &out, NULL);
    } else {
        e = md_search_json(&res, &out);
        ret = e ? MHD_NO : md_reply_json(r, 200, &out);
    }
    md_search_result_free(&res);
    md_buf_free(&out);
    return ret;
}
