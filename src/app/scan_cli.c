/* scan_cli.c — memoryd scan: the secrets already stored in a database
 * (md_scan_cli.h), found by the shared scan (md_scan.h). */
#include "app/md_scan_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/md_engines.h"
#include "base/md_tenant.h"
#include "cmd/md_scan.h"
#include "cmd/md_sensitive.h"

static const char usage[] =
    "Usage: memoryd scan --db PATH|URI [--tenant T] [--sensitive-cards]\n"
    "                    [--sensitive-patterns FILE]\n"
    "\n"
    "Find the secrets already stored in memoryd's database (written before --sensitive was\n"
    "on, or while it was off): every tenant's files and the versions its history keeps (or\n"
    "only tenant T's) are searched with the detectors of --sensitive, whatever mode memoryd\n"
    "runs in: the built-in ones, payment card numbers with --sensitive-cards, and the\n"
    "patterns of FILE (as memoryd's --sensitive-patterns). --db defaults to $MEMORYD_DB; a\n"
    "SQLite file is opened read-only, a PostgreSQL database only read. Each tenant is read\n"
    "from one snapshot while memoryd serves.\n"
    "\n"
    "Prints a JSON line per finding, {\"tenant\":T,\"path\":P,\"version\":N|null,\"kind\":K,\n"
    "\"line\":N} (version null: the file as it is now), then a summary line\n"
    "{\"tenants\":N,\"files_scanned\":N,\"versions_scanned\":N,\"findings\":N}; never the secret.\n"
    "Edit the files and redact the versions (POST /v1/redact) it names.\n"
    "Exit status: 0 nothing found, 1 secrets found, 2 error (the reason on stderr).\n";

struct args {
    const char *db, *tenant, *patterns;
    int cards;
};

static int error(const char *what, const char *detail, int with_usage)
{
    fprintf(stderr, "memoryd scan: %s%s%s\n%s", what, detail ? ": " : "", detail ? detail : "",
            with_usage ? "\n" : "");
    if (with_usage)
        fputs(usage, stderr);
    return 2;
}

/* 0, 1 after --help, 2 on a usage error (reported). */
static int parse_args(struct args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char **slot = strcmp(s, "--db") == 0                   ? &a->db
                            : strcmp(s, "--tenant") == 0             ? &a->tenant
                            : strcmp(s, "--sensitive-patterns") == 0 ? &a->patterns
                                                                     : NULL;
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        }
        if (strcmp(s, "--sensitive-cards") == 0)
            a->cards = 1;
        else if (!slot)
            return error("unknown argument", s, 1);
        else if (i + 1 >= argc)
            return error("a value is needed after", s, 1);
        else
            *slot = argv[++i];
    }
    if (!a->db)
        a->db = getenv("MEMORYD_DB");
    if (!a->db || !*a->db)
        return error("--db (or MEMORYD_DB) is needed", NULL, 1);
    if (a->tenant && !md_tenant_valid(a->tenant, strlen(a->tenant)))
        return error("--tenant must be 1..128 of [A-Za-z0-9._-]", a->tenant, 1);
    return 0;
}

struct scan {
    const char *tenant;
    struct md_buf line;
    struct md_scan_counts n;
    enum md_err err;
};

static int print_finding(void *ctx, const struct md_scan_finding *f)
{
    struct scan *sc = ctx;
    md_buf_reset(&sc->line);
    sc->err = md_scan_finding_json(&sc->line, sc->tenant, f);
    if (!sc->err)
        printf("%.*s\n", (int)sc->line.len, sc->line.data);
    return sc->err != MD_OK;
}

/* One tenant, from one snapshot. */
static enum md_err scan_tenant(struct md_store *store, const struct md_sensitive *s,
                               struct scan *sc, const char *tenant)
{
    struct md_txn *t = NULL;
    enum md_err e = md_store_snapshot_begin(store, &t);
    struct md_scan_pos pos = {0};
    sc->tenant = tenant;
    while (!e && pos.phase != MD_SCAN_DONE) {
        e = md_scan_page(t, s, tenant, 1000, &pos, &sc->n, print_finding, sc);
        if (!e)
            e = sc->err;
    }
    md_scan_pos_free(&pos);
    if (t)
        md_txn_end(t);
    return e;
}

/* The tenants' names, a page at a time (each page on a read transaction). */
struct names {
    char (*v)[MD_TENANT_MAX + 1];
    size_t n, cap;
    enum md_err err;
};

static int add_name(void *ctx, const struct md_tenant_info *ti)
{
    struct names *nm = ctx;
    if (nm->n == nm->cap) {
        size_t cap = nm->cap ? nm->cap * 2 : 64;
        void *v = realloc(nm->v, cap * sizeof *nm->v);
        if (!v) {
            nm->err = MD_ENOMEM;
            return 1;
        }
        nm->v = v;
        nm->cap = cap;
    }
    snprintf(nm->v[nm->n++], sizeof nm->v[0], "%s", ti->name);
    return 0;
}

static enum md_err list_tenants(struct md_store *store, struct names *nm)
{
    enum md_err e = MD_OK;
    for (size_t before = (size_t)-1; !e && nm->n != before;) {
        before = nm->n;
        struct md_txn *t = NULL;
        e = md_store_read_begin(store, &t);
        if (!e) {
            e = md_txn_tenants(t, nm->n ? nm->v[nm->n - 1] : "", 1000, add_name, nm);
            md_txn_end(t);
        }
        if (!e)
            e = nm->err;
    }
    return e;
}

int md_scan_main(int argc, char **argv)
{
    struct args a;
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc == 1 ? 0 : rc;
    char why[4400] = "";
    struct md_sensitive_config scfg = {MD_SENSITIVE_REJECT, a.cards, a.patterns};
    struct md_sensitive *s = NULL;
    if (md_sensitive_new(&scfg, &s, why, sizeof why) != MD_OK)
        return error(why[0] ? why : "out of memory", NULL, 0);
    /* A file engine (one that backs up) is opened read-only. */
    struct md_store_config cfg = {.db = a.db,
                                  .durability = MD_DURABILITY_FULL,
                                  .busy_timeout_ms = 5000,
                                  .search = MD_SEARCH_KEEP,
                                  .keep_versions = 1,
                                  .read_only =
                                      (md_engine_for(a.db)->caps & MD_STORE_CAP_BACKUP) != 0};
    struct md_store *store = NULL;
    if (md_store_open(&cfg, NULL, &store, why, sizeof why) != MD_OK) {
        md_sensitive_free(s);
        return error("cannot open the database", why, 0);
    }
    struct names nm = {0};
    struct scan sc = {0};
    md_buf_init(&sc.line, 1 << 20);
    enum md_err e = MD_OK;
    if (a.tenant)
        e = add_name(&nm, &(struct md_tenant_info){.name = a.tenant}) ? nm.err : MD_OK;
    else
        e = list_tenants(store, &nm);
    for (size_t i = 0; !e && i < nm.n; i++)
        e = scan_tenant(store, s, &sc, nm.v[i]);
    if (!e)
        printf("{\"tenants\":%zu,\"files_scanned\":%lld,\"versions_scanned\":%lld,"
               "\"findings\":%lld}\n",
               nm.n, (long long)sc.n.files, (long long)sc.n.versions, (long long)sc.n.findings);
    fflush(stdout);
    md_buf_free(&sc.line);
    free(nm.v);
    md_store_close(store);
    md_sensitive_free(s);
    if (e)
        return error("cannot read the database", md_strerror(e), 0);
    return sc.n.findings ? 1 : 0;
}
