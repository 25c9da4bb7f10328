/* config.c — defaults, MEMORYD_* variables and flags (see md_config.h). */
#include "app/md_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/md_engines.h"
#include "app/md_subcommands.h"
#include "base/md_duration.h"
#include "base/md_log.h"
#include "base/md_version.h"
#include "cmd/md_expiry.h"
#include "cmd/md_sensitive.h"

enum opt_type {
    O_STR,
    O_PORT,
    O_UINT,
    O_SIZE,
    O_BOOL,
    O_DURABILITY,
    O_AUTH,
    O_SEARCH,
    O_SENSITIVE,
    O_LOGLEVEL,
    O_TENANT,
    O_CIDRS,
    O_LISTEN,
    O_DURATION, /* md_duration.h; with min 0: also "off" (0) */
};

struct opt {
    const char *flag; /* without "--" */
    const char *env;
    enum opt_type type;
    size_t offset;
    unsigned long min, max; /* for numbers */
    const char *arg;        /* shown in --help */
    const char *help;
};

#define OFF(m) offsetof(struct md_config, m)

static const struct opt opts[] = {
    {"listen", "MEMORYD_LISTEN", O_STR, OFF(http.listen), 0, 0, "ADDR",
     "address to listen on (IPv4 or IPv6)                 [127.0.0.1]"},
    {"port", "MEMORYD_PORT", O_PORT, OFF(http.port), 0, 65535, "N",
     "TCP port; 0 picks a free one                        [8080]"},
    {"db", "MEMORYD_DB", O_STR, OFF(db), 0, 0, "PATH|URI",
     "SQLite database file, or a PostgreSQL connection URI\n"
     "                          (postgresql://... or postgres://...)  [./memoryd.db]"},
    {"durability", "MEMORYD_DURABILITY", O_DURABILITY, OFF(durability), 0, 0, "full|normal",
     "full: a write is flushed to disk before it is\n"
     "                          acknowledged; normal: survives a crash of memoryd\n"
     "                          but not of the machine                              [full]"},
    {"tenant-header", "MEMORYD_TENANT_HEADER", O_STR, OFF(http.tenant_header), 0, 0, "NAME",
     "request header that names the tenant               [X-Tenant-ID]"},
    {"default-tenant", "MEMORYD_DEFAULT_TENANT", O_TENANT, OFF(http.default_tenant), 0, 0, "ID",
     "tenant used when the header is absent              [default]"},
    {"require-tenant", "MEMORYD_REQUIRE_TENANT", O_BOOL, OFF(http.require_tenant), 0, 0, NULL,
     "refuse requests without the tenant header (400)    [off]"},
    {"trusted-proxies", "MEMORYD_TRUSTED_PROXIES", O_CIDRS, OFF(http.trusted_proxies), 0, 0, "LIST",
     "serve POST /memory, /mcp and the tenants' /v1 API\n"
     "                          only to these IPs/networks, e.g. 127.0.0.1,10.0.0.0/8\n"
     "                          (the proxy that sets the tenant header); others get\n"
     "                          403                                     [unset: any]"},
    {"max-body", "MEMORYD_MAX_BODY", O_SIZE, OFF(limits.max_body), 64, 1UL << 30, "BYTES",
     "largest request body (413 beyond)                  [4M]"},
    {"max-file", "MEMORYD_MAX_FILE", O_SIZE, OFF(limits.max_file), 1, 1UL << 30, "BYTES",
     "largest file content (413 beyond)                  [1M]"},
    {"max-view", "MEMORYD_MAX_VIEW", O_SIZE, OFF(limits.max_view), 1024, 1UL << 30, "BYTES",
     "longest view output; longer views are cut          [256K]"},
    {"tenant-max-bytes", "MEMORYD_TENANT_MAX_BYTES", O_SIZE, OFF(limits.tenant_max_bytes), 0,
     (size_t)1 << 50, "BYTES",
     "bytes of file content one tenant may store (507\n"
     "                          beyond); 0: unlimited; per tenant: PUT\n"
     "                          /v1/tenants/{t}/limits                            [64M]"},
    {"tenant-max-files", "MEMORYD_TENANT_MAX_FILES", O_SIZE, OFF(limits.tenant_max_files), 0,
     (size_t)1 << 40, "N",
     "files one tenant may store (507 beyond);\n"
     "                          0: unlimited                                    [10000]"},
    {"max-path", "MEMORYD_MAX_PATH", O_SIZE, OFF(limits.path.max_path), 16, 65536, "BYTES",
     "longest path (400 beyond)                          [4096]"},
    {"max-segment", "MEMORYD_MAX_SEGMENT", O_SIZE, OFF(limits.path.max_segment), 1, 65536, "BYTES",
     "longest path segment (400 beyond)                  [255]"},
    {"threads", "MEMORYD_THREADS", O_UINT, OFF(http.threads), 1, 1024, "N",
     "HTTP worker threads            [CPUs; PostgreSQL: 2 x CPUs, <= 32]"},
    {"max-connections", "MEMORYD_MAX_CONNECTIONS", O_UINT, OFF(http.max_connections), 1, 1000000,
     "N", "open connections at most                           [1024]"},
    {"max-connections-per-ip", "MEMORYD_MAX_CONNECTIONS_PER_IP", O_UINT,
     OFF(http.max_connections_per_ip), 1, 1000000, "N",
     "open connections from one client address at most;\n"
     "                          the trusted proxies are exempt                     [256]"},
    {"max-body-memory", "MEMORYD_MAX_BODY_MEMORY", O_SIZE, OFF(http.max_body_memory), 64,
     (size_t)1 << 40, "BYTES",
     "request bodies held in memory at once, all clients\n"
     "                          together (503 beyond); at least the largest body   [256M]"},
    {"max-import", "MEMORYD_MAX_IMPORT", O_SIZE, OFF(http.max_import), 1024, (size_t)1 << 44,
     "BYTES",
     "largest tar POST /v1/tenants/{t}/import takes, kept\n"
     "                          in a file in $TMPDIR while it is read (413 beyond) [4G]"},
    {"connection-timeout", "MEMORYD_CONNECTION_TIMEOUT", O_UINT, OFF(http.connection_timeout), 1,
     86400, "SECONDS", "close a connection idle this long                  [30]"},
    {"max-batch", "MEMORYD_MAX_BATCH", O_SIZE, OFF(max_batch), 1, 100000, "N",
     "write commands sharing one commit at most          [256]"},
    {"max-queue", "MEMORYD_MAX_QUEUE", O_SIZE, OFF(max_queue), 1, 10000000, "N",
     "write commands waiting at most (503 beyond)        [4096]"},
    {"wal-size-limit", "MEMORYD_WAL_SIZE_LIMIT", O_SIZE, OFF(wal_size_limit), 0, (size_t)1 << 40,
     "BYTES",
     "SQLite: what the -wal file keeps of its size once\n"
     "                          writes pause (while they come, it keeps up to\n"
     "                          64M, or this if larger)                    [4M]"},
    {"busy-timeout", "MEMORYD_BUSY_TIMEOUT", O_UINT, OFF(busy_timeout_ms), 1, 600000, "MS",
     "wait this long for a database lock held by another\n"
     "                          process, then answer 503                          [5000]"},
    {"history-versions", "MEMORYD_HISTORY_VERSIONS", O_UINT, OFF(history.versions), 0, 100000, "N",
     "versions kept per file; 0 turns history off         [20]"},
    {"history-days", "MEMORYD_HISTORY_DAYS", O_UINT, OFF(history.days), 0, 36500, "DAYS",
     "versions (and change-feed entries) kept this long;\n"
     "                          0 turns history off (the feed keeps a day)          [30]"},
    {"expire-after", "MEMORYD_EXPIRE_AFTER", O_DURATION, OFF(limits.expire_after_ms), 0, 0,
     "DURATION|off",
     "delete files nobody viewed or wrote for this long,\n"
     "                          e.g. 90d, 12h, 30m, 2s (history keeps them: POST\n"
     "                          /v1/restore); per tenant: PUT /v1/tenants/{t}/limits\n"
     "                          \"expire_after\"                                   [off]"},
    {"expire-granularity", "MEMORYD_EXPIRE_GRANULARITY", O_DURATION,
     OFF(limits.expire_granularity_ms), 1, 0, "DURATION",
     "how coarsely use times are kept: a file's use is\n"
     "                          written to the database at most once per this, the\n"
     "                          sweep runs this often; a restart or another\n"
     "                          instance may miss a use this recent\n"
     "                          [1/100 of --expire-after, 1s to 1h; off: 1h]"},
    {"shutdown-timeout", "MEMORYD_SHUTDOWN_TIMEOUT", O_UINT, OFF(shutdown_timeout), 0, 3600,
     "SECONDS", "on SIGTERM, wait this long for in-flight requests [10]"},
    {"metrics-listen", "MEMORYD_METRICS_LISTEN", O_LISTEN, OFF(http.metrics_listen), 0, 0,
     "ADDR:PORT",
     "serve GET /metrics on this address of its own, e.g.\n"
     "                          127.0.0.1:9464 or [::1]:9464 (then the public port\n"
     "                          answers /metrics with 404)     [unset: public port]"},
    {"metrics-tenant-labels", "MEMORYD_METRICS_TENANT_LABELS", O_BOOL,
     OFF(http.metrics_tenant_labels), 0, 0, NULL,
     "count requests per tenant in /metrics (tenant names\n"
     "                          as label values, the first 1000 tenants); only\n"
     "                          with a --metrics-listen port of its own           [off]"},
    {"auth", "MEMORYD_AUTH", O_AUTH, OFF(http.auth_keys), 0, 0, "none|keys",
     "keys: POST /memory, /mcp and /v1/* need Authorization:\n"
     "                          Bearer <key> (memoryd keys create); the key decides\n"
     "                          the tenant and what it may do; none: no\n"
     "                          authentication (a proxy's job)                   [none]"},
    {"mcp-sessions", "MEMORYD_MCP_SESSIONS", O_UINT, OFF(http.mcp_sessions), 1, 1000000, "N",
     "MCP sessions (POST /mcp) open at once at most; when\n"
     "                          full, one idle for an hour is reclaimed, else 503  [1000]"},
    {"mcp-origins", "MEMORYD_MCP_ORIGINS", O_STR, OFF(http.mcp_origins), 0, 0, "LIST",
     "browser origins allowed to use /mcp, comma-separated,\n"
     "                          e.g. https://app.example.com; a request with any\n"
     "                          other Origin header gets 403           [unset: none]"},
    {"search", "MEMORYD_SEARCH", O_SEARCH, OFF(search_off), 0, 0, "on|off",
     "on: a full-text index of the files is kept, in the\n"
     "                          transaction of each write (GET /v1/search); off:\n"
     "                          none (the index is dropped at start, and rebuilt\n"
     "                          when turned on again)                              [on]"},
    {"sensitive", "MEMORYD_SENSITIVE", O_SENSITIVE, OFF(sensitive.mode), 0, 0, "reject|redact|off",
     "what a write holding what looks like a credential or\n"
     "                          a key (private keys; AWS, GitHub, Anthropic, OpenAI,\n"
     "                          Slack, Google, Stripe keys; JWTs) gets: reject: a\n"
     "                          refusal naming the kind and line; redact: stored\n"
     "                          as [REDACTED:kind]; off: not checked            [reject]"},
    {"sensitive-cards", "MEMORYD_SENSITIVE_CARDS", O_BOOL, OFF(sensitive.cards), 0, 0, NULL,
     "payment card numbers (that pass the Luhn check) too  [off]"},
    {"sensitive-patterns", "MEMORYD_SENSITIVE_PATTERNS", O_STR, OFF(sensitive.patterns), 0, 0,
     "FILE",
     "the operator's own detectors: lines of a kind, then\n"
     "                          a PCRE2 pattern                            [unset: none]"},
    {"log-level", "MEMORYD_LOG_LEVEL", O_LOGLEVEL, OFF(log_level), 0, 0, "error|warn|info|debug",
     "least important log lines written   [info]"},
};

#define NOPTS (sizeof opts / sizeof opts[0])

int md_parse_size(const char *s, size_t *out)
{
    /* Digits first: strtoull alone would skip spaces and wrap "-1". */
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned long long mul = 1;
    if (*end) {
        char u = *end;
        if (u == 'k' || u == 'K')
            mul = 1024ULL;
        else if (u == 'm' || u == 'M')
            mul = 1024ULL * 1024;
        else if (u == 'g' || u == 'G')
            mul = 1024ULL * 1024 * 1024;
        else
            return -1;
        end++;
        if (strcmp(end, "") != 0 && strcmp(end, "iB") != 0 && strcmp(end, "B") != 0)
            return -1;
    }
    if (v > (unsigned long long)SIZE_MAX / mul)
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

static int parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

/* Set one option from text; `from` names the source for messages. */
/* A number option (O_PORT, O_UINT, O_SIZE) into dst: 0, -1 when out of
 * range (said on stderr), 1 when it is not a number of its kind. */
static int set_number(const struct opt *o, char *dst, const char *val, const char *from)
{
    size_t v;
    if (md_parse_size(val, &v) || (o->type != O_SIZE && strspn(val, "0123456789") != strlen(val)))
        return 1;
    if (v < o->min || v > o->max) {
        fprintf(stderr, "memoryd: %s must be between %lu and %lu, got %s\n", from, o->min, o->max,
                val);
        return -1;
    }
    if (o->type == O_SIZE)
        *(size_t *)(void *)dst = v;
    else
        *(unsigned *)(void *)dst = (unsigned)v;
    return 0;
}

static int set_opt(struct md_config *cfg, const struct opt *o, const char *val, const char *from)
{
    char *dst = (char *)cfg + o->offset;
    switch (o->type) {
    case O_STR:
        if (!*val)
            goto bad;
        *(const char **)(void *)dst = val;
        return 0;
    case O_LISTEN: {
        char addr[64];
        unsigned port;
        if (md_split_listen(val, addr, sizeof addr, &port))
            goto bad;
        *(const char **)(void *)dst = val;
        return 0;
    }
    case O_TENANT:
        if (!md_tenant_valid(val, strlen(val)))
            goto bad;
        *(const char **)(void *)dst = val;
        return 0;
    case O_BOOL:
        if (parse_bool(val, (int *)(void *)dst))
            goto bad;
        return 0;
    case O_DURABILITY:
        if (strcmp(val, "full") == 0)
            *(enum md_durability *)(void *)dst = MD_DURABILITY_FULL;
        else if (strcmp(val, "normal") == 0)
            *(enum md_durability *)(void *)dst = MD_DURABILITY_NORMAL;
        else
            goto bad;
        return 0;
    case O_AUTH:
        if (strcmp(val, "none") == 0 || strcmp(val, "keys") == 0)
            *(int *)(void *)dst = strcmp(val, "keys") == 0;
        else
            goto bad;
        return 0;
    case O_SEARCH:
        if (strcmp(val, "on") == 0 || strcmp(val, "off") == 0)
            *(int *)(void *)dst = strcmp(val, "off") == 0;
        else
            goto bad;
        return 0;
    case O_SENSITIVE: {
        int mode = md_sensitive_mode_parse(val);
        if (mode < 0)
            goto bad;
        *(int *)(void *)dst = mode;
        return 0;
    }
    case O_CIDRS: {
        char why[160];
        if (md_cidr_list_parse(val, (struct md_cidr_list *)(void *)dst, why, sizeof why)) {
            fprintf(stderr, "memoryd: invalid value for %s: %s\n", from, why);
            return -1;
        }
        return 0;
    }
    case O_LOGLEVEL: {
        int l = md_log_level_parse(val);
        if (l < 0)
            goto bad;
        *(int *)(void *)dst = l;
        return 0;
    }
    case O_DURATION: {
        int64_t ms = 0;
        if (!(o->min == 0 && strcmp(val, "off") == 0) &&
            md_duration_parse(val, strlen(val), &ms) != 0)
            goto bad;
        *(int64_t *)(void *)dst = ms;
        return 0;
    }
    case O_PORT:
    case O_UINT:
    case O_SIZE: {
        int rc = set_number(o, dst, val, from);
        if (rc <= 0)
            return rc;
        goto bad;
    }
    }
bad:
    fprintf(stderr, "memoryd: invalid value for %s: '%s' (expected %s)\n", from, val,
            o->arg ? o->arg : "true or false");
    return -1;
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: memoryd [OPTION]...\n"
               "Serve Claude's memory tool (memory_20250818) over HTTP: POST /memory takes a\n"
               "command object or a tool_use block and answers with a tool_result.\n"
               "Every option can also be set by the environment variable shown.\n\n");
    for (size_t i = 0; i < NOPTS; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", opts[i].flag, opts[i].arg ? " " : "",
                 opts[i].arg ? opts[i].arg : "");
        if (strlen(left) < 24)
            fprintf(f, "  %-24s%s\n", left, opts[i].help);
        else
            fprintf(f, "  %s\n  %-24s%s\n", left, "", opts[i].help);
        fprintf(f, "  %-24s%s\n", "", opts[i].env);
    }
    fprintf(f, "  %-24s%s\n  %-24s%s\n", "--help", "show this help and exit", "--version",
            "show the version and exit");
    struct md_buf endpoints;
    md_buf_init(&endpoints, 1024);
    if (md_http_endpoints(&endpoints) == MD_OK)
        fprintf(f, "\nEndpoints (openapi.yaml describes them):\n%s", endpoints.data);
    md_buf_free(&endpoints);
    fprintf(f, "Commands:\n");
    md_subcommands_help(f);
    fprintf(f, "Signals: SIGTERM or SIGINT finish in-flight requests, checkpoint and exit.\n");
}

static const struct md_config defaults = {
    .http.listen = "127.0.0.1",
    .http.port = 8080,
    .db = "./memoryd.db",
    .durability = MD_DURABILITY_FULL,
    .http.tenant_header = "X-Tenant-ID",
    .http.default_tenant = "default",
    .http.require_tenant = 0,
    .limits = {.max_body = 4u << 20,
               .max_file = 1u << 20,
               .max_view = 256u << 10,
               .tenant_max_bytes = (size_t)64 << 20,
               .tenant_max_files = 10000,
               .path = {.max_path = 4096, .max_segment = 255}},
    .http.threads = 0, /* set later: from the database's kind (default_threads) */
    .http.max_connections = 1024,
    .http.max_connections_per_ip = 256,
    .http.mcp_sessions = 1000,
    .http.mcp_origins = "",
    .http.max_body_memory = (size_t)256 << 20,
    .http.max_import = (size_t)4 << 30,
    .http.connection_timeout = 30,
    .max_batch = 256,
    .max_queue = 4096,
    .busy_timeout_ms = 5000,
    .wal_size_limit = (size_t)4 << 20,
    .shutdown_timeout = 10,
    .history = {.versions = 20, .days = 30},
    .log_level = MD_LOG_INFO,
};

static void print_version(void)
{
    printf("memoryd %s (schema:", MD_VERSION);
    for (size_t k = 0; k < md_engine_count(); k++)
        printf("%s %s %d", k ? "," : "", md_engine_at(k)->name, md_engine_at(k)->schema_version());
    printf(")\n");
}

/* The option a flag names ("--name" or "--name=value"), or NULL. */
static const struct opt *opt_of(const char *a)
{
    if (strncmp(a, "--", 2) != 0)
        return NULL;
    const char *name = a + 2;
    const char *eq = strchr(name, '=');
    size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
    for (size_t k = 0; k < NOPTS; k++)
        if (strlen(opts[k].flag) == nlen && strncmp(opts[k].flag, name, nlen) == 0)
            return &opts[k];
    return NULL;
}

/* The flags of argv (over the environment's values). */
static enum md_config_result load_flags(struct md_config *cfg, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return MD_CONFIG_EXIT_OK;
        }
        if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            print_version();
            return MD_CONFIG_EXIT_OK;
        }
        const struct opt *o = opt_of(a);
        if (!o) {
            fprintf(stderr, "memoryd: unknown option '%s'; see memoryd --help\n", a);
            return MD_CONFIG_EXIT_USAGE;
        }
        const char *eq = strchr(a, '=');
        const char *val = eq                  ? eq + 1
                          : o->type == O_BOOL ? "true"
                          : i + 1 < argc      ? argv[++i]
                                              : NULL;
        if (!val) {
            fprintf(stderr, "memoryd: --%s needs a value (%s)\n", o->flag, o->arg);
            return MD_CONFIG_EXIT_USAGE;
        }
        char from[64];
        snprintf(from, sizeof from, "--%s", o->flag);
        if (set_opt(cfg, o, val, from))
            return MD_CONFIG_EXIT_USAGE;
    }
    return MD_CONFIG_RUN;
}

/* HTTP threads by default: the CPUs; two per CPU on an engine with round
 * trips (PostgreSQL), whose reads other than views hold their thread while
 * they wait for the server's answer. Views are suspended and resumed
 * (src/store/pg/reads.c), which costs more the more threads there are
 * (bench/pg.mjs, views of a file at 64 connections on 2 CPUs: 35k/s with 2
 * or 4 threads, 28.5k/s with 8). Up to 32 (each may hold a database
 * connection) or the CPUs when more. */
static unsigned default_threads(const char *db)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned cpus = ncpu > 0 ? (unsigned)ncpu : 2;
    unsigned two_per_cpu = 2 * cpus < 32 ? 2 * cpus : (cpus > 32 ? cpus : 32);
    return md_engine_for(db)->caps & MD_STORE_CAP_ROUND_TRIPS ? two_per_cpu : cpus;
}

/* The settings that must agree with each other. */
static enum md_config_result check(const struct md_config *cfg)
{
    if (cfg->http.metrics_tenant_labels && !cfg->http.metrics_listen) {
        fprintf(stderr, "memoryd: --metrics-tenant-labels puts tenant names in /metrics: it needs "
                        "--metrics-listen, a port of its own (not the public one)\n");
        return MD_CONFIG_EXIT_USAGE;
    }
    if (cfg->http.max_body_memory < cfg->limits.max_body) {
        fprintf(stderr,
                "memoryd: --max-body-memory (%zu) must be at least --max-body (%zu): a request "
                "of the largest allowed size could never be received\n",
                cfg->http.max_body_memory, cfg->limits.max_body);
        return MD_CONFIG_EXIT_USAGE;
    }
    return MD_CONFIG_RUN;
}

enum md_config_result md_config_load(struct md_config *cfg, int argc, char **argv)
{
    *cfg = defaults;
    for (size_t i = 0; i < NOPTS; i++) {
        const char *v = getenv(opts[i].env);
        if (v && set_opt(cfg, &opts[i], v, opts[i].env))
            return MD_CONFIG_EXIT_USAGE;
    }
    enum md_config_result r = load_flags(cfg, argc, argv);
    if (r != MD_CONFIG_RUN)
        return r;
    if (cfg->http.threads == 0)
        cfg->http.threads = default_threads(cfg->db);
    if (cfg->limits.expire_granularity_ms == 0)
        cfg->limits.expire_granularity_ms =
            md_expiry_default_granularity(cfg->limits.expire_after_ms);
    return check(cfg);
}
