/* keys_cli.c — memoryd keys create|list|revoke (md_keys_cli.h), through the
 * store (md_store_key_*). */
#include "app/md_keys_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/md_engines.h"
#include "base/md_apikey.h"
#include "base/md_path.h"
#include "store/md_store_admin.h"

static const char usage[] =
    "Usage: memoryd keys create --db PATH|URI --tenant T --scope read|write|admin [--name N]\n"
    "                           [--path /memories/DIR]\n"
    "       memoryd keys list   --db PATH|URI [--tenant T]\n"
    "       memoryd keys revoke --db PATH|URI ID\n"
    "\n"
    "memoryd's own API keys (used with memoryd --auth keys). --db defaults to $MEMORYD_DB.\n"
    "create prints the new key once, alone on its first line (mdk_...), then its id; only\n"
    "a hash of the key is stored: it cannot be shown again. --path gives a read or write key\n"
    "one subtree of the tenant's /memories: it sees and changes nothing else. list prints id,\n"
    "tenant, scope, name, created, revoked (UTC) and path of each key, tab-separated, never a\n"
    "key. revoke takes effect at the next request on every memoryd of the database.\n"
    "Exit status: 0 done, 1 failed (nothing changed), 2 usage error.\n";

struct args {
    const char *action, *db, *tenant, *scope, *name, *id, *path;
    char canon[MD_KEY_PATH_MAX + 1]; /* --path, canonical; "": the whole tenant */
};

static int usage_error(const char *what, const char *detail)
{
    fprintf(stderr, "memoryd keys: %s%s%s\n\n%s", what, detail ? ": " : "", detail ? detail : "",
            usage);
    return 2;
}

static int fail(const char *what, const char *detail)
{
    fprintf(stderr, "memoryd keys: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return 1;
}

/* --path into a->canon: a canonical path below /memories (the root itself
 * is the whole tenant), for a read or write key; 0 or 2 (reported). */
static int parse_path(struct args *a, enum md_scope sc)
{
    if (sc == MD_SCOPE_ADMIN)
        return usage_error("--path is for read and write keys (an admin key sees every tenant)",
                           NULL);
    size_t len = strlen(a->path), n = 0;
    const struct md_path_limits lim = {.max_path = MD_KEY_PATH_MAX, .max_segment = 255};
    char *canon = malloc(len + 1);
    if (!canon)
        return fail("out of memory", NULL);
    enum md_path_status st = md_path_canon(a->path, len, &lim, canon, &n);
    if (st == MD_PATH_OK)
        memcpy(a->canon, canon, n == MD_ROOT_LEN ? 0 : n + 1);
    free(canon);
    if (st != MD_PATH_OK)
        return usage_error(
            "--path must be a valid path below /memories (as the memory tool's paths; at most "
            "1024 bytes)",
            a->path);
    return 0;
}

/* 0, 1 after --help, 2 on a usage error (reported). */
static int parse_args(struct args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char **slot = strcmp(s, "--db") == 0       ? &a->db
                            : strcmp(s, "--tenant") == 0 ? &a->tenant
                            : strcmp(s, "--scope") == 0  ? &a->scope
                            : strcmp(s, "--name") == 0   ? &a->name
                            : strcmp(s, "--path") == 0   ? &a->path
                                                         : NULL;
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        }
        if (slot) {
            if (i + 1 >= argc)
                return usage_error("a value is needed after", s);
            *slot = argv[++i];
        } else if (s[0] == '-') {
            return usage_error("unknown argument", s);
        } else if (!a->action) {
            a->action = s;
        } else if (!a->id) {
            a->id = s;
        } else {
            return usage_error("unexpected argument", s);
        }
    }
    if (!a->db)
        a->db = getenv("MEMORYD_DB");
    if (!a->action)
        return usage_error("create, list or revoke is needed", NULL);
    if (!a->db || !*a->db)
        return usage_error("--db (or MEMORYD_DB) is needed", NULL);
    int is_create = strcmp(a->action, "create") == 0, is_list = strcmp(a->action, "list") == 0,
        is_revoke = strcmp(a->action, "revoke") == 0;
    if (!is_create && !is_list && !is_revoke)
        return usage_error("unknown action (create, list or revoke)", a->action);
    if (a->id && !is_revoke)
        return usage_error("unexpected argument", a->id);
    if (is_revoke && !a->id)
        return usage_error("revoke needs the key's id", NULL);
    if (!is_create && (a->scope || a->name || a->path))
        return usage_error("--scope, --name and --path are for create", NULL);
    if (is_revoke && a->tenant)
        return usage_error("--tenant is not for revoke", NULL);
    if (is_create && (!a->tenant || !a->scope))
        return usage_error("create needs --tenant and --scope", NULL);
    if (a->tenant && !md_tenant_valid(a->tenant, strlen(a->tenant)))
        return usage_error("--tenant must be 1..128 of [A-Za-z0-9._-]", a->tenant);
    enum md_scope sc = MD_SCOPE_READ;
    if (a->scope && md_scope_parse(a->scope, &sc) != 0)
        return usage_error("--scope must be read, write or admin", a->scope);
    if (a->name && strlen(a->name) > MD_KEY_NAME_MAX)
        return usage_error("--name is longer than 128 bytes", NULL);
    for (const char *c = a->name; c && *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return usage_error("--name must not contain control characters", NULL);
    return a->path ? parse_path(a, sc) : 0;
}

static void time_text(int64_t t, char *out, size_t len)
{
    if (!t) {
        snprintf(out, len, "-");
        return;
    }
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void print_key(void *ctx, const struct md_key_info *k)
{
    (void)ctx;
    char created[32], revoked[32];
    time_text(k->created, created, sizeof created);
    time_text(k->revoked, revoked, sizeof revoked);
    printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k->id, k->tenant, md_scope_name(k->scope),
           k->name[0] ? k->name : "-", created, revoked, k->path[0] ? k->path : MD_ROOT);
}

static int create(struct md_store *store, const struct args *a)
{
    struct md_key_info k = {.created = (int64_t)time(NULL)};
    snprintf(k.tenant, sizeof k.tenant, "%s", a->tenant);
    snprintf(k.name, sizeof k.name, "%s", a->name ? a->name : "");
    memcpy(k.path, a->canon, sizeof k.path);
    md_scope_parse(a->scope, &k.scope);
    char key[MD_APIKEY_LEN + 1];
    unsigned char hash[MD_APIKEY_HASH_LEN];
    if (md_apikey_new(key, hash, k.id) != 0)
        return fail("libsodium cannot start", NULL);
    if (md_store_key_put(store, &k, hash) != MD_OK)
        return fail("cannot store the key (see the log line above)", NULL);
    printf("%s\nid: %s\n", key, k.id);
    fflush(stdout);
    memset(key, 0, sizeof key);
    return 0;
}

int md_keys_main(int argc, char **argv)
{
    struct args a;
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (strcmp(a.action, "revoke") == 0 && !md_apikey_id_valid(a.id))
        return fail("no such key", a.id);
    char why[512] = "";
    /* Opening the store creates and migrates the database when needed. */
    struct md_store_config scfg = {.db = a.db,
                                   .durability = MD_DURABILITY_FULL,
                                   .busy_timeout_ms = 5000,
                                   .search = MD_SEARCH_KEEP,
                                   .keep_versions = 1};
    struct md_store *store = NULL;
    if (md_store_open(&scfg, NULL, &store, why, sizeof why) != MD_OK)
        return fail("cannot open the database", why);
    if (strcmp(a.action, "create") == 0) {
        rc = create(store, &a);
    } else if (strcmp(a.action, "list") == 0) {
        printf("id\ttenant\tscope\tname\tcreated\trevoked\tpath\n");
        rc = md_store_key_list(store, a.tenant, print_key, NULL) == MD_OK
                 ? 0
                 : fail("cannot list the keys", NULL);
    } else {
        enum md_err e = md_store_key_revoke(store, a.id, (int64_t)time(NULL));
        rc = e == MD_ENOENT ? fail("no such key", a.id)
             : e            ? fail("cannot revoke the key", NULL)
                            : (printf("revoked %s\n", a.id), 0);
    }
    md_store_close(store);
    return rc;
}
