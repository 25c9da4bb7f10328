/* subcommands.c — the table of memoryd's other commands (see
 * md_subcommands.h). */
#include "app/md_subcommands.h"

#include <string.h>

#include "app/md_admin_cli.h"
#include "app/md_backup.h"
#include "app/md_keys_cli.h"
#include "app/md_migrate.h"
#include "app/md_scan_cli.h"

static const struct md_subcommand subcommands[] = {
    {"keys", "create|list|revoke ...", "API keys for --auth keys", md_keys_main},
    {"backup", "--db PATH --to FILE", "an online copy of a SQLite database", md_backup_main},
    {"migrate", "--from SQLITE_PATH --to URI", "copy a SQLite database into PostgreSQL",
     md_migrate_main},
    {"admin", "tenants list|show|limits|erase|export|import ...",
     "tenant administration through a running memoryd", md_admin_main},
    {"scan", "--db PATH|URI [--tenant T] [--sensitive-cards] [--sensitive-patterns FILE]",
     "the secrets already stored in files and history (exit 1 when found)", md_scan_main},
};
#define NSUBCOMMANDS (sizeof subcommands / sizeof subcommands[0])

const struct md_subcommand *md_subcommand_find(const char *name)
{
    for (size_t i = 0; i < NSUBCOMMANDS; i++)
        if (strcmp(subcommands[i].name, name) == 0)
            return &subcommands[i];
    return NULL;
}

void md_subcommands_help(FILE *f)
{
    for (size_t i = 0; i < NSUBCOMMANDS; i++) {
        const struct md_subcommand *c = &subcommands[i];
        fprintf(f, "  memoryd %s %s\n      %s (memoryd %s --help)\n", c->name, c->usage, c->what,
                c->name);
    }
}
