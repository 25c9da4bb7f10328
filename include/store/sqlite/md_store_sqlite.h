/*
 * md_store_sqlite.h — the SQLite engine of md_store (src/store/sqlite/, its
 * files by job: internal.h; the engine itself in store.c): one database
 * file in WAL mode, the embedded default. What only this engine has: its
 * descriptor and hooks for tests.
 */
#ifndef MD_STORE_SQLITE_H
#define MD_STORE_SQLITE_H

#include <stddef.h>

#include "store/md_store.h"

/* The engine (app/md_engines.h): any `db` no other engine claims, a file
 * path; opened (created and migrated when needed) with synchronous=FULL or
 * NORMAL after cfg->durability, cfg->busy_timeout_ms for locks held by
 * other processes. With cfg->read_only the file is only read (opened
 * SQLITE_OPEN_READONLY, no writer, no checkpointer thread; a write
 * transaction is MD_EINVAL), and refused when it is missing, not a SQLite
 * database or without memoryd's schema, the reason worded as memoryd
 * backup prints it ("PATH: No such file or directory", "PATH is not a
 * SQLite database: ...", "PATH is not a memoryd database (no memoryd
 * schema in it)"). open fails with MD_EDB and the reason. Capabilities:
 * MD_STORE_CAP_BACKUP, MD_STORE_CAP_DUMP. Its own settings: struct
 * md_sqlite_config (`own`; NULL: the defaults). */
extern const struct md_engine md_engine_sqlite;

/* The SQLite engine's own settings. */
struct md_sqlite_config {
    /* The -wal file's size left once writes pause (a TRUNCATE checkpoint
     * when the file is larger). While writes come, the file keeps up to
     * MD_SQLITE_WAL_BUSY_LIMIT (or this, if larger) after each checkpoint
     * (journal_size_limit): a file cut back at every checkpoint is grown
     * again by the next commits, and a commit that grows the file flushes
     * its size too (measured: bare durable writes 15-20% slower with 4 MiB
     * there). 0: the default, MD_SQLITE_WAL_LIMIT. */
    int64_t wal_size_limit;
};
#define MD_SQLITE_WAL_LIMIT      ((int64_t)4 << 20)
#define MD_SQLITE_WAL_BUSY_LIMIT ((int64_t)64 << 20)

/* For tests: EXPLAIN QUERY PLAN every statement of the engine on the
 * database at `path`. Returns 0 when each one finds its rows by a search
 * that uses more than the tenant (no scan of a table or of a tenant's
 * rows), 1 otherwise and -1 on error, with the statement and plan in `why`. */
int md_store_sqlite_check_plans(const char *path, char *why, size_t why_len);

/* Schema version the code expects (number of migrations in sql/sqlite/). */
int md_store_sqlite_schema_version(void);

/* For tests: PRAGMA synchronous (1 NORMAL, 2 FULL) of each connection that
 * writes the database file of the SQLite store `base`: out[0] the writer's
 * (transactions), out[1] the checkpointer's (WAL checkpoints). Call it only
 * before anything is written through `base`: from then on the checkpointer's
 * connection belongs to its thread. Returns 0, or -1 when `base` is not a
 * SQLite store or a value cannot be read. */
int md_store_sqlite_synchronous(struct md_store *base, int out[2]);

/* Connections remember tenant ids (a tenant row is never changed or deleted
 * by memoryd), and readers keep their read transaction while memoryd has
 * committed nothing. A test that changes the database behind the store's
 * back (deleting tenants, say) calls this, with no command in flight, so
 * that both are renewed. */
void md_store_sqlite_forget_tenants(struct md_store *base);

#endif
