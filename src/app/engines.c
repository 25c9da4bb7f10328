/* engines.c — the registry of engines (see md_engines.h). */
#include "app/md_engines.h"

#include <stdio.h>

#include "store/pg/md_store_pg.h"
#include "store/sqlite/md_store_sqlite.h"

/* The first is the default: it takes any db that no other claims. */
static const struct md_engine *const engines[] = {&md_engine_sqlite, &md_engine_pg};
#define NENGINES (sizeof engines / sizeof engines[0])

size_t md_engine_count(void)
{
    return NENGINES;
}

const struct md_engine *md_engine_at(size_t i)
{
    return i < NENGINES ? engines[i] : NULL;
}

const struct md_engine *md_engine_for(const char *db)
{
    for (size_t i = 1; i < NENGINES; i++)
        if (engines[i]->claims(db))
            return engines[i];
    return engines[0];
}

/* The engine's own part of `own`. */
static const void *own_config(const struct md_engine *e, const struct md_engine_configs *own)
{
    if (!own)
        return NULL;
    if (e == &md_engine_pg)
        return &own->pg;
    if (e == &md_engine_sqlite)
        return &own->sqlite;
    return NULL;
}

enum md_err md_store_open(const struct md_store_config *cfg, const struct md_engine_configs *own,
                          struct md_store **out, char *why, size_t why_len)
{
    const struct md_engine *e = md_engine_for(cfg->db);
    enum md_err err = e->open(cfg, own_config(e, own), out, why, why_len);
    if (err)
        return err;
    if ((*out)->ops->version != MD_STORE_VERSION) {
        snprintf(why, why_len, "the %s engine implements version %d of the store interface, not %d",
                 e->name, (*out)->ops->version, MD_STORE_VERSION);
        md_store_close(*out);
        *out = NULL;
        return MD_EINVAL;
    }
    return MD_OK;
}

const char *md_store_redact(const char *db, char *buf, size_t len)
{
    return md_engine_for(db)->redact(db, buf, len);
}
