/*
 * md_engines.h — the engines this memoryd is built with, and opening a
 * store by the form of its `db` (src/app/engines.c).
 *
 * The registry asks each engine in turn whether a `db` is its (PostgreSQL:
 * a postgresql:// or postgres:// URI); SQLite, the first and the default,
 * takes any other (a file path). An engine is added by its folder under src/store/, its
 * `struct md_engine` (md_store.h) and one line in the registry's table; its
 * own settings, if any, go in struct md_engine_configs.
 *
 * Ownership: nothing is allocated but the store md_store_open returns
 * (md_store_close frees it); the descriptors are static.
 */
#ifndef MD_ENGINES_H
#define MD_ENGINES_H

#include <stddef.h>

#include "store/md_store.h"
#include "store/pg/md_store_pg.h"
#include "store/sqlite/md_store_sqlite.h"

/* Each engine's own settings (NULL to md_store_open: every engine's
 * defaults). */
struct md_engine_configs {
    struct md_pg_config pg;
    struct md_sqlite_config sqlite;
};

/* The engines, the default first: md_engine_at(0 .. md_engine_count() - 1). */
size_t md_engine_count(void);
const struct md_engine *md_engine_at(size_t i);

/* The engine that serves `db`; never NULL. */
const struct md_engine *md_engine_for(const char *db);

/* Open the store cfg->db names, with the engine's own settings from `own`
 * (NULL: its defaults). An engine built for another version of the
 * interface (MD_STORE_VERSION) is refused. On failure an error and the
 * reason in `why`. */
enum md_err md_store_open(const struct md_store_config *cfg, const struct md_engine_configs *own,
                          struct md_store **out, char *why, size_t why_len);

/* `db` as it may be logged (a URI's password replaced by "***"), into `buf`;
 * returns `buf`. */
const char *md_store_redact(const char *db, char *buf, size_t len);

#endif
