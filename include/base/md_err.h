/*
 * md_err.h — the one error enum of memoryd.
 *
 * Every module returns an `enum md_err`; MD_OK (0) is success. Only the HTTP
 * layer (src/http/http.c, md_err_http_status) turns these into status codes.
 * The numbers are stored (the first answer kept for an idempotent retry):
 * new ones are added at the end, none is ever renumbered.
 */
#ifndef MD_ERR_H
#define MD_ERR_H

enum md_err {
    MD_OK = 0,      /* success                                   -> 200 */
    MD_EINVAL,      /* malformed request, bad field, bad path    -> 400 */
    MD_EFORBIDDEN,  /* not allowed                               -> 403 */
    MD_EMETHOD,     /* wrong HTTP method                         -> 405 */
    MD_ENOENT,      /* path does not exist                       -> 404 */
    MD_EEXIST,      /* already exists                            -> 409 */
    MD_ECONFLICT,   /* str_replace 0/>1 matches, parent is file  -> 409 */
    MD_ETOOBIG,     /* body, file or output over a limit         -> 413 */
    MD_ERANGE,      /* parameter out of range (insert_line)      -> 422 */
    MD_ENOMEM,      /* allocation failed                         -> 500 */
    MD_EDB,         /* storage failure                           -> 500 */
    MD_EUNSURE,     /* a commit whose outcome is unknown (its disk flush
                       failed, or the connection to the database
                       was lost during it): the write may be there
                       or not                                    -> 500 */
    MD_EBUSY,       /* overloaded or shutting down               -> 503 */
    MD_EUNAVAIL,    /* the database cannot be reached right now:
                       nothing was done                          -> 503 */
    MD_EPRECOND,    /* If-Match / If-None-Match not met          -> 412 */
    MD_EIDEMPOTENT, /* an Idempotency-Key reused with another
                      request                                   -> 422 */
    MD_EGONE,       /* asked for what is no longer kept (changes
                       pruned)                                   -> 410 */
    MD_EFULL,       /* the tenant's quota (bytes or files) would be
                       exceeded                                  -> 507 */
    MD_EAUTH,       /* no valid API key (--auth keys)            -> 401 */
    MD_ERATE,       /* too many failed authentications from the
                       client's address                          -> 429 */
    MD_EREDO,       /* between the writer and the store: a batch's
                       deferred writes were given up (nothing applied):
                       run it again without deferral; never
                       answered                                  -> 500 */
};

/* Static, human-readable name of an error; never NULL. */
const char *md_strerror(enum md_err err);

/* The HTTP status code for an error class (200 for MD_OK). */
unsigned md_err_http_status(enum md_err err);

#endif
