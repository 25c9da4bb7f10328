/*
 * query.c — the query parameters of the /v1 API, and its answer to a
 * storage failure (see internal.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

const char *md_http_arg(struct req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

int md_http_int_arg(struct req *r, const char *name, int64_t lo, int64_t hi, int64_t def,
                    int64_t *out, enum MHD_Result *ret)
{
    const char *v = md_http_arg(r, name);
    *out = def;
    if (!v)
        return 0;
    char *end = NULL;
    errno = 0;
    long long n = (*v >= '0' && *v <= '9') ? strtoll(v, &end, 10) : -1;
    if (n < lo || n > hi || errno || !end || *end) {
        *ret = md_reply_errorf(r, MD_R_PARAM_INT, name, (long long)lo, (long long)hi);
        return -1;
    }
    *out = n;
    return 0;
}

enum MHD_Result md_http_storage_error(struct req *r, enum md_err e)
{
    e = md_storage_class(e);
    return md_reply_errorf(r, e, "%s", md_storage_text(e));
}
