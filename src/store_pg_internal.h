/*
 * store_pg_internal.h — what the files of the PostgreSQL backend share
 * (store_pg.c: store, connections, operations; store_pg_migrate.c: schema).
 * Not a public interface.
 */
#ifndef MD_STORE_PG_INTERNAL_H
#define MD_STORE_PG_INTERNAL_H

#include <libpq-fe.h>
#include <stddef.h>

#include "md_err.h"

/* Open a libpq connection to `uri` with memoryd's defaults (a 5 s connect
 * timeout, application_name memoryd; the URI may override both). NULL
 * with a reason in `why` when it fails. */
PGconn *md_pg_connect(const char *uri, char *why, size_t why_len);

/* The error class of a failed result (NULL: the connection's state). */
enum md_err md_pg_classify(PGconn *conn, const PGresult *res);

/* Apply the migrations of sql/postgres/ not yet applied, under a session
 * advisory lock; refuse a database whose schema is newer. 0, or -1 with a
 * reason in `why`. `conn` is in normal (not pipeline) mode. */
int md_pg_migrate(PGconn *conn, char *why, size_t why_len);

#endif
