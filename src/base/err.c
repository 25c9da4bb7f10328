/* err.c — names and HTTP classes of enum md_err. */
#include "base/md_err.h"

const char *md_strerror(enum md_err err)
{
    switch (err) {
    case MD_OK:
        return "ok";
    case MD_EINVAL:
        return "invalid request";
    case MD_EFORBIDDEN:
        return "forbidden";
    case MD_EMETHOD:
        return "method not allowed";
    case MD_ENOENT:
        return "not found";
    case MD_EEXIST:
        return "already exists";
    case MD_ECONFLICT:
        return "conflict";
    case MD_ETOOBIG:
        return "too large";
    case MD_ERANGE:
        return "out of range";
    case MD_ENOMEM:
        return "out of memory";
    case MD_EDB:
        return "storage failure";
    case MD_EUNSURE:
        return "storage failure, outcome unknown";
    case MD_EBUSY:
        return "busy";
    case MD_EUNAVAIL:
        return "storage unavailable";
    case MD_EPRECOND:
        return "precondition failed";
    case MD_EIDEMPOTENT:
        return "idempotency key reused";
    case MD_EGONE:
        return "gone";
    case MD_EFULL:
        return "quota exceeded";
    case MD_EAUTH:
        return "unauthorized";
    case MD_ERATE:
        return "too many failed authentications";
    case MD_EREDO:
        return "batch to run again";
    }
    return "unknown error";
}

unsigned md_err_http_status(enum md_err err)
{
    switch (err) {
    case MD_OK:
        return 200;
    case MD_EINVAL:
        return 400;
    case MD_EFORBIDDEN:
        return 403;
    case MD_EMETHOD:
        return 405;
    case MD_ENOENT:
        return 404;
    case MD_EEXIST:
    case MD_ECONFLICT:
        return 409;
    case MD_ETOOBIG:
        return 413;
    case MD_ERANGE:
        return 422;
    case MD_ENOMEM:
    case MD_EDB:
    case MD_EUNSURE:
    case MD_EREDO:
        return 500;
    case MD_EBUSY:
    case MD_EUNAVAIL:
        return 503;
    case MD_EPRECOND:
        return 412;
    case MD_EIDEMPOTENT:
        return 422;
    case MD_EGONE:
        return 410;
    case MD_EFULL:
        return 507;
    case MD_EAUTH:
        return 401;
    case MD_ERATE:
        return 429;
    }
    return 500;
}
