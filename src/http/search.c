/*
 * http_search.c — GET /v1/search?q=..[&path=DIR][&limit=N][&cursor=C]
 * [&format=json|text]: full-text search of the tenant's files
 * (md_search.h; docs/behaviour.md 17).
 */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/md_cmd.h"
#include "cmd/md_search.h"
#include "internal.h"

/* Bytes of a search answer at most (100 hits of 3 snippets fit). */
#define SEARCH_OUT_LIMIT ((size_t)4 << 20)

static const char *arg(struct req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

enum MHD_Result md_http_search(struct req *r)
{
    enum MHD_Result ret;
    int64_t limit;
    if (md_http_int_arg(r, "limit", 1, MD_SEARCH_LIMIT_MAX, MD_SEARCH_LIMIT_DEFAULT, &limit, &ret))
        return ret;
    const char *format = arg(r, "format");
    int text = format && strcmp(format, "text") == 0;
    if (format && !text && strcmp(format, "json") != 0) {
        static const char bad[] = "Parameter `format` must be json or text";
        return md_http_reply_error(r, MD_EINVAL, bad, sizeof bad - 1);
    }
    struct md_search_req q = {r->tenant, arg(r, "q"), arg(r, "path"), limit, arg(r, "cursor")};
    struct md_search_result res;
    struct md_buf out;
    md_buf_init(&out, SEARCH_OUT_LIMIT);
    enum md_err e = md_search(r->h->store, &r->h->cfg->limits.path, &q, &res, &out);
    if (e == MD_EINVAL || e == MD_ENOENT) {
        ret = md_http_reply_error(r, e, out.data ? out.data : "", out.len);
    } else if (e) {
        if (e != MD_EBUSY && e != MD_EUNAVAIL)
            e = MD_EDB;
        const char *msg = md_cmd_storage_error_text(e);
        ret = md_http_reply_error(r, e, msg, strlen(msg));
    } else if (text) {
        e = md_search_text(&res, &out);
        size_t len = 0;
        char *body = e ? NULL : md_buf_take(&out, &len);
        ret =
            body ? md_http_queue(r, 200, "text/plain; charset=utf-8", body, len, -1, NULL) : MHD_NO;
    } else {
        e = md_search_json(&res, &out);
        ret = e ? MHD_NO : md_http_reply_json(r, 200, &out);
    }
    md_search_result_free(&res);
    md_buf_free(&out);
    return ret;
}
