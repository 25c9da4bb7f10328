/*
 * md_err.h — the one error enum of memoryd, made from md_errors.def.
 *
 * Every module returns an `enum md_err`; MD_OK (0) is success. The HTTP
 * status of each class is its row's (md_err_http_status); only the HTTP
 * front's reply path (src/http/reply.c) sends it.
 */
#ifndef MD_ERR_H
#define MD_ERR_H

enum md_err {
#define MD_ERROR(name, status, text) name,
#include "base/md_errors.def"
#undef MD_ERROR
};

/* Static, human-readable name of an error; never NULL. */
const char *md_strerror(enum md_err err);

/* The HTTP status code for an error class (200 for MD_OK). */
unsigned md_err_http_status(enum md_err err);

#endif
