/* migrate.c — copy a SQLite database's tenants into PostgreSQL (see
 * md_migrate.h), through the store: the source is opened read-only and
 * dumped from one snapshot (md_txn_dump), the target loads the rows in
 * one write transaction (md_txn_load) and each tenant's totals are compared
 * on both sides (md_txn_totals) before it commits. */
#include "app/md_migrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/md_engines.h"
#include "base/md_progress.h"
#include "store/md_store_admin.h"

static const char usage[] =
    "Usage: memoryd migrate --from SQLITE_PATH --to URI\n"
    "\n"
    "Copy every tenant of memoryd's SQLite database at SQLITE_PATH into the PostgreSQL\n"
    "database at URI (postgresql://... or postgres://...), whose schema memoryd creates or\n"
    "brings up to date: files and directories, history (versions, the change feed and its\n"
    "sequence numbers), the idempotency keys kept for retries, each tenant's own quota\n"
    "limits and the API keys (their hashes). One transaction, checked\n"
    "before it commits: rows, file bytes and directory sizes per tenant equal on both sides.\n"
    "Tenants already in the target are refused (nothing is written). The SQLite file is only\n"
    "read, from one snapshot; stop the memoryd that writes it first if later writes must be\n"
    "copied too.\n";

/* The tenants of the source, with their totals. */
struct tenant {
    char name[MD_TENANT_MAX + 1];
    struct md_totals totals;
};

struct copy {
    const char *from;
    struct md_store *src, *dst;
    struct md_txn *st; /* the source's snapshot */
    struct md_txn *dt; /* the target's write transaction */
    struct tenant *tenants;
    size_t n, cap;
    int failed;                  /* a row could not be loaded */
    struct md_progress progress; /* rows loaded, of the tenants' rows */
    int64_t rows;
};

/* Say what went wrong on stderr; returns -1. */
static int fail(const char *what, const char *detail)
{
    fprintf(stderr, "memoryd migrate: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return -1;
}

static int add_tenant(void *ctx, const struct md_tenant_info *ti)
{
    struct copy *c = ctx;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        struct tenant *t = realloc(c->tenants, cap * sizeof *t);
        if (!t)
            return 1;
        c->tenants = t;
        c->cap = cap;
    }
    struct tenant *t = &c->tenants[c->n++];
    snprintf(t->name, sizeof t->name, "%s", ti->name);
    return 0;
}

/* Every tenant of the source, by name, with its totals. */
static int read_tenants(struct copy *c)
{
    const char *after = "";
    for (;;) {
        size_t before = c->n;
        enum md_err e = md_txn_tenants(c->st, after, 1000, add_tenant, c);
        if (e)
            return fail("reading the SQLite database", md_strerror(e));
        if (c->n == before)
            break;
        after = c->tenants[c->n - 1].name;
    }
    for (size_t i = 0; i < c->n; i++) {
        enum md_err e = md_txn_totals(c->st, c->tenants[i].name, &c->tenants[i].totals);
        if (e)
            return fail("reading the SQLite database", md_strerror(e));
    }
    return 0;
}

/* Tenants of the source that the target already has: refused. */
static int check_free(struct copy *c)
{
    unsigned long taken = 0;
    for (size_t i = 0; i < c->n; i++) {
        struct md_locate root = {.path = "/memories", .len = 9};
        int exists = 0;
        enum md_err e = md_txn_locate(c->dt, c->tenants[i].name, &root, 1, &exists);
        if (e)
            return fail("reading the target", md_strerror(e));
        if (exists && taken++ < 5)
            fprintf(stderr, "memoryd migrate: tenant %s already exists in the target\n",
                    c->tenants[i].name);
    }
    return taken ? fail("refusing to copy over existing tenants (nothing was written)", NULL) : 0;
}

static int load_row(void *ctx, const struct md_dump_row *row)
{
    struct copy *c = ctx;
    md_progress_update(&c->progress, ++c->rows);
    enum md_err e = md_txn_load(c->dt, row);
    if (e) {
        fail("writing the target", md_strerror(e));
        c->failed = 1;
    }
    return e != MD_OK;
}

/* What arrived, tenant by tenant: the same rows, bytes and sizes. */
static int check_copy(struct copy *c)
{
    for (size_t i = 0; i < c->n; i++) {
        const struct md_totals *s = &c->tenants[i].totals;
        struct md_totals d;
        enum md_err e = md_txn_totals(c->dt, c->tenants[i].name, &d);
        if (e)
            return fail("reading the target", md_strerror(e));
        if (memcmp(s, &d, sizeof d) == 0)
            continue;
        char detail[512];
        snprintf(detail, sizeof detail,
                 "tenant %s: %lld entries, %lld bytes, sizes %lld, %lld versions, %lld changes, "
                 "%lld keys in SQLite; %lld, %lld, %lld, %lld, %lld, %lld copied",
                 c->tenants[i].name, (long long)s->entries, (long long)s->content_bytes,
                 (long long)s->sizes, (long long)s->versions, (long long)s->changes,
                 (long long)s->idempotency, (long long)d.entries, (long long)d.content_bytes,
                 (long long)d.sizes, (long long)d.versions, (long long)d.changes,
                 (long long)d.idempotency);
        return fail("the copy does not match its source", detail);
    }
    return 0;
}

/* Open the source (read-only, its snapshot) and the target (its write
 * transaction): 0, or -1 with the reason on stderr. */
static int open_both(struct copy *c, const char *to)
{
    char why[512] = "";
    struct md_store_config src = {
        .db = c->from, .busy_timeout_ms = 5000, .search = MD_SEARCH_KEEP, .read_only = 1};
    if (md_store_open(&src, NULL, &c->src, why, sizeof why) != MD_OK)
        return fail(why, NULL);
    if (md_store_snapshot_begin(c->src, &c->st) != MD_OK)
        return fail(c->from, "cannot read it");
    struct md_store_config dst = {.db = to,
                                  .durability = MD_DURABILITY_FULL,
                                  .busy_timeout_ms = 5000,
                                  .search = MD_SEARCH_KEEP,
                                  .keep_versions = 1};
    if (md_store_open(&dst, NULL, &c->dst, why, sizeof why) != MD_OK)
        return fail(why, NULL);
    if (md_store_write_begin(c->dst, &c->dt) != MD_OK)
        return fail("cannot begin a transaction on the target", NULL);
    return 0;
}

/* The copy, checked, committed: 0, or -1 (nothing written). */
static int copy_all(struct copy *c)
{
    if (read_tenants(c) || check_free(c))
        return -1;
    static const struct md_dump_sink sink = {load_row};
    /* Progress in rows: each tenant's, its files', versions', feed's and
     * kept answers' (the API keys come on top). */
    int64_t total = 0;
    for (size_t i = 0; i < c->n; i++) {
        const struct md_totals *t = &c->tenants[i].totals;
        total += 1 + t->entries + t->versions + t->changes + t->idempotency;
    }
    md_progress_begin(&c->progress, "migrate", "rows", total, 1);
    enum md_err e = md_txn_dump(c->st, &sink, c);
    md_progress_end(&c->progress);
    if (e == MD_EINVAL && !c->failed)
        return fail(c->from, "its schema is not this memoryd's (run memoryd on it once to bring "
                             "it up to date)");
    if (e && !c->failed)
        return fail("reading the SQLite database", md_strerror(e));
    if (e)
        return -1;
    if ((e = md_txn_flush(c->dt)) != MD_OK)
        return fail("writing the target", md_strerror(e));
    if (check_copy(c))
        return -1;
    e = md_txn_commit(c->dt);
    c->dt = NULL;
    return e ? fail("committing the copy", md_strerror(e)) : 0;
}

/* The arguments: 0, or the exit status (the usage printed). */
static int parse_args(int argc, char **argv, const char **from, const char **to)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = strncmp(a, "--from", 6) == 0 ? from
                           : strncmp(a, "--to", 4) == 0 ? to
                                                        : NULL;
        size_t flen = dst == from ? 6 : 4;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return -1;
        }
        if (dst && a[flen] == '=') {
            *dst = a + flen + 1;
        } else if (dst && a[flen] == '\0' && i + 1 < argc) {
            *dst = argv[++i];
        } else {
            fprintf(stderr, "memoryd migrate: unknown or incomplete argument: %s\n\n%s", a, usage);
            return 2;
        }
    }
    if (!*from || !*to || !**from || !**to) {
        fprintf(stderr, "memoryd migrate: both --from and --to are needed\n\n%s", usage);
        return 2;
    }
    /* From an engine that dumps (SQLite) to one that loads (PostgreSQL). */
    if (!(md_engine_for(*to)->caps & MD_STORE_CAP_LOAD) ||
        !(md_engine_for(*from)->caps & MD_STORE_CAP_DUMP)) {
        fprintf(stderr,
                "memoryd migrate: --from is a SQLite file and --to a PostgreSQL URI "
                "(postgresql://... or postgres://...)\n\n%s",
                usage);
        return 2;
    }
    return 0;
}

int md_migrate_main(int argc, char **argv)
{
    const char *from = NULL, *to = NULL;
    int rc = parse_args(argc, argv, &from, &to);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct copy c = {.from = from};
    int status = 1;
    if (open_both(&c, to) == 0 && copy_all(&c) == 0) {
        long long entries = 0, bytes = 0;
        for (size_t i = 0; i < c.n; i++) {
            entries += c.tenants[i].totals.entries;
            bytes += c.tenants[i].totals.content_bytes;
        }
        char shown[512];
        printf("memoryd migrate: copied %zu tenants, %lld entries, %lld bytes of files from %s to "
               "%s\n",
               c.n, entries, bytes, from, md_store_redact(to, shown, sizeof shown));
        status = 0;
    }
    if (c.dt)
        md_txn_rollback(c.dt);
    if (c.st)
        md_txn_end(c.st);
    md_store_close(c.dst);
    md_store_close(c.src);
    free(c.tenants);
    return status;
}
