/* store_pg.c — placeholder until the PostgreSQL backend lands. */
#include <stdio.h>

#include "md_store_pg.h"

enum md_err md_store_pg_open(const struct md_store_config *cfg, struct md_store **out, char *why,
                             size_t why_len)
{
    (void)cfg;
    (void)out;
    snprintf(why, why_len, "PostgreSQL is not supported by this build");
    return MD_EDB;
}

int md_store_pg_schema_version(void)
{
    return 0;
}
