/*
 * test_config.c — proves memoryd's settings and request preconditions:
 * md_parse_size (plain, K/M/G, KiB/MiB/GiB, rejections, overflow),
 * md_tenant_valid (length 1..128, every character class), md_tenant_resolve
 * (default tenant, required-but-missing, duplicated, empty, invalid — exact
 * messages), md_http_wants_text (Accept negotiation with q-values), and
 * md_config_load (defaults, MEMORYD_* variables, flags over variables,
 * --flag=value, bad values and zero limits -> usage error with the exact
 * message, --help / --version).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/md_config.h"
#include "base/md_log.h"
#include "base/md_version.h"
#include "check.h"
#include "http/md_http.h"
#include "http/md_tenant_resolve.h"
#include "store/pg/md_store_pg.h"
#include "store/sqlite/md_store_sqlite.h"

/* ---- md_parse_size ---- */

#define EXPECT_SIZE_OK(s, want)                                                                    \
    do {                                                                                           \
        size_t v_ = 12345;                                                                         \
        CHECK_EQ_INT(md_parse_size(s, &v_), 0);                                                    \
        CHECK(v_ == (size_t)(want));                                                               \
    } while (0)

#define EXPECT_SIZE_BAD(s)                                                                         \
    do {                                                                                           \
        size_t v_ = 12345;                                                                         \
        CHECK(md_parse_size(s, &v_) != 0);                                                         \
        CHECK_EQ_INT(v_, 12345); /* untouched */                                                   \
    } while (0)

static void test_parse_size(void)
{
    EXPECT_SIZE_OK("0", 0);
    EXPECT_SIZE_OK("1", 1);
    EXPECT_SIZE_OK("4096", 4096);
    EXPECT_SIZE_OK("007", 7);
    EXPECT_SIZE_OK("1K", 1024);
    EXPECT_SIZE_OK("1k", 1024);
    EXPECT_SIZE_OK("256K", 262144);
    EXPECT_SIZE_OK("1M", 1048576);
    EXPECT_SIZE_OK("4m", 4194304);
    EXPECT_SIZE_OK("1G", 1073741824);
    EXPECT_SIZE_OK("2g", 2147483648ULL);
    EXPECT_SIZE_OK("4KiB", 4096);
    EXPECT_SIZE_OK("3MiB", 3145728);
    EXPECT_SIZE_OK("1GiB", 1073741824);
    EXPECT_SIZE_OK("0K", 0);
    EXPECT_SIZE_OK("18446744073709551615", SIZE_MAX);
    EXPECT_SIZE_OK("17179869183G", 17179869183ULL << 30);

    EXPECT_SIZE_BAD(NULL);
    EXPECT_SIZE_BAD("");
    EXPECT_SIZE_BAD("-1");
    EXPECT_SIZE_BAD("-0");
    EXPECT_SIZE_BAD("+1");
    EXPECT_SIZE_BAD(" -1"); /* not digits: strtoull would skip the space, wrap to SIZE_MAX */
    EXPECT_SIZE_BAD("1X");
    EXPECT_SIZE_BAD("1T");
    EXPECT_SIZE_BAD("K");
    EXPECT_SIZE_BAD("M1");
    EXPECT_SIZE_BAD("1 K");
    EXPECT_SIZE_BAD("1K ");
    EXPECT_SIZE_BAD("1Ki");
    EXPECT_SIZE_BAD("1KiBs");
    EXPECT_SIZE_BAD("1KK");
    EXPECT_SIZE_BAD("1.5M");
    EXPECT_SIZE_BAD("0x10");
    EXPECT_SIZE_BAD("1e3");
    EXPECT_SIZE_BAD("abc");
    /* Overflow. */
    EXPECT_SIZE_BAD("18446744073709551616");
    EXPECT_SIZE_BAD("99999999999999999999999");
    EXPECT_SIZE_BAD("17179869184G");
    EXPECT_SIZE_BAD("17592186044416M");
    EXPECT_SIZE_BAD("18014398509481984K");
}

/* ---- md_tenant_valid / md_tenant_resolve ---- */

static void test_tenant_valid(void)
{
    char s[200];
    memset(s, 'a', sizeof s);
    CHECK(md_tenant_valid("a", 1));
    CHECK(md_tenant_valid(s, 128));
    CHECK(!md_tenant_valid(s, 129));
    CHECK(!md_tenant_valid(s, 0));
    CHECK(!md_tenant_valid("", 0));
    CHECK(md_tenant_valid("Acme-Corp_1.prod", 16));
    CHECK(md_tenant_valid("...", 3));
    CHECK(md_tenant_valid("-_-", 3));
    CHECK(md_tenant_valid("0123456789", 10));
    CHECK(md_tenant_valid("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 52));
    /* Only the first n bytes count. */
    CHECK(md_tenant_valid("ok/bad", 2));
    CHECK(!md_tenant_valid("ok/bad", 3));

    /* Every byte value: valid exactly for [A-Za-z0-9._-]. */
    int wrong = 0;
    for (int c = 0; c < 256; c++) {
        char t[3] = {'x', (char)c, 'y'};
        int want = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                   c == '.' || c == '_' || c == '-';
        if (!md_tenant_valid(t, 3) != !want) {
            fprintf(stderr, "md_tenant_valid wrong for byte 0x%02x\n", c);
            wrong++;
        }
    }
    CHECK_EQ_INT(wrong, 0);
    CHECK(!md_tenant_valid("a b", 3));
    CHECK(!md_tenant_valid("a/b", 3));
    CHECK(!md_tenant_valid("a\\b", 3));
    CHECK(!md_tenant_valid("a:b", 3));
    CHECK(!md_tenant_valid("a@b", 3));
    CHECK(!md_tenant_valid("a%b", 3));
    CHECK(!md_tenant_valid("a\0b", 3));
    CHECK(!md_tenant_valid("a\nb", 3));
    CHECK(!md_tenant_valid("caf\xc3\xa9", 5));
}

#define INVALID_MSG(h)                                                                             \
    "Error: Invalid " h " header: a tenant id is 1 to 128 characters of A-Z, a-z, 0-9, '.', '_' "  \
    "and '-'"

/* Resolve; check class, tenant and message. */
#define EXPECT_TENANT(cfg, count, value, vlen, want_err, want_tenant, want_msg)                    \
    do {                                                                                           \
        char out_[MD_TENANT_MAX + 1] = "unset";                                                    \
        struct md_buf m_;                                                                          \
        md_buf_init(&m_, 4096);                                                                    \
        enum md_err e_ = md_tenant_resolve(cfg, NULL, count, value, vlen, out_, &m_);              \
        CHECK_EQ_INT(e_, want_err);                                                                \
        CHECK_STR(out_, want_tenant);                                                              \
        CHECK_MEM(m_.data, m_.len, want_msg);                                                      \
        md_buf_free(&m_);                                                                          \
    } while (0)

static void test_tenant_resolve(void)
{
    struct md_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.http.tenant_header = "X-Tenant-ID";
    cfg.http.default_tenant = "default";
    cfg.http.require_tenant = 0;

    EXPECT_TENANT(&cfg.http, 0, NULL, 0, MD_OK, "default", "");
    EXPECT_TENANT(&cfg.http, 1, "acme", 4, MD_OK, "acme", "");
    EXPECT_TENANT(&cfg.http, 1, "acme-1.prod_x", 13, MD_OK, "acme-1.prod_x", "");
    /* The value need not be NUL-terminated: only len bytes count. */
    EXPECT_TENANT(&cfg.http, 1, "tenantXYZ", 6, MD_OK, "tenant", "");
    EXPECT_TENANT(&cfg.http, 2, "acme", 4, MD_EINVAL, "unset",
                  "Error: The X-Tenant-ID header was sent more than once");
    EXPECT_TENANT(&cfg.http, 3, "acme", 4, MD_EINVAL, "unset",
                  "Error: The X-Tenant-ID header was sent more than once");
    EXPECT_TENANT(&cfg.http, 1, "", 0, MD_EINVAL, "unset", INVALID_MSG("X-Tenant-ID"));
    EXPECT_TENANT(&cfg.http, 1, "a/b", 3, MD_EINVAL, "unset", INVALID_MSG("X-Tenant-ID"));
    EXPECT_TENANT(&cfg.http, 1, "../x", 4, MD_EINVAL, "unset", INVALID_MSG("X-Tenant-ID"));
    EXPECT_TENANT(&cfg.http, 1, "a b", 3, MD_EINVAL, "unset", INVALID_MSG("X-Tenant-ID"));
    EXPECT_TENANT(&cfg.http, 1, "x\0y", 3, MD_EINVAL, "unset", INVALID_MSG("X-Tenant-ID"));

    char t[200];
    memset(t, 'T', sizeof t);
    char out[MD_TENANT_MAX + 1];
    struct md_buf m;
    md_buf_init(&m, 4096);
    CHECK_EQ_INT(md_tenant_resolve(&cfg.http, NULL, 1, t, 128, out, &m), MD_OK);
    CHECK_EQ_INT(strlen(out), 128);
    CHECK_EQ_INT(m.len, 0);
    CHECK_EQ_INT(md_tenant_resolve(&cfg.http, NULL, 1, t, 129, out, &m), MD_EINVAL);
    CHECK_MEM(m.data, m.len, INVALID_MSG("X-Tenant-ID"));
    md_buf_free(&m);

    /* A server that requires the header; a custom header name. */
    cfg.http.require_tenant = 1;
    cfg.http.tenant_header = "X-Org";
    EXPECT_TENANT(&cfg.http, 0, NULL, 0, MD_EINVAL, "unset",
                  "Error: Missing X-Org header: this server requires a tenant");
    EXPECT_TENANT(&cfg.http, 1, "org.7", 5, MD_OK, "org.7", "");
    EXPECT_TENANT(&cfg.http, 2, "org.7", 5, MD_EINVAL, "unset",
                  "Error: The X-Org header was sent more than once");
    EXPECT_TENANT(&cfg.http, 1, "org#7", 5, MD_EINVAL, "unset", INVALID_MSG("X-Org"));

    /* A different default tenant. */
    cfg.http.require_tenant = 0;
    cfg.http.default_tenant = "shared";
    EXPECT_TENANT(&cfg.http, 0, NULL, 0, MD_OK, "shared", "");
}

/* ---- md_http_wants_text ---- */

static void test_wants_text(void)
{
    CHECK_EQ_INT(md_http_wants_text(NULL), 0);
    CHECK_EQ_INT(md_http_wants_text(""), 0);
    CHECK_EQ_INT(md_http_wants_text("*/*"), 0);
    CHECK_EQ_INT(md_http_wants_text("application/json"), 0);
    CHECK_EQ_INT(md_http_wants_text("text/plain"), 1);
    CHECK_EQ_INT(md_http_wants_text("text/plain; charset=utf-8"), 1);
    CHECK_EQ_INT(md_http_wants_text("text/*"), 1);
    CHECK_EQ_INT(md_http_wants_text("text/html"), 0);
    CHECK_EQ_INT(md_http_wants_text("text/plain;q=0"), 0);
    /* Equal preference: JSON. */
    CHECK_EQ_INT(md_http_wants_text("application/json, text/plain, */*"), 0);
    CHECK_EQ_INT(md_http_wants_text("text/plain, application/json"), 0);
    /* q-values decide. */
    CHECK_EQ_INT(md_http_wants_text("text/plain;q=0.5, application/json;q=0.4"), 1);
    CHECK_EQ_INT(md_http_wants_text("text/plain;q=0.4, application/json;q=0.5"), 0);
    CHECK_EQ_INT(md_http_wants_text("application/json;q=0, text/plain"), 1);
    CHECK_EQ_INT(md_http_wants_text("application/json;q=0.5, text/plain"), 1);
    CHECK_EQ_INT(md_http_wants_text("text/plain; q=0.9, */*;q=0.1"), 1);
    CHECK_EQ_INT(md_http_wants_text("application/*;q=0.2, text/plain;q=0.1"), 0);
    /* The most specific range counts: text/plain;q=0 beats text/(any). */
    CHECK_EQ_INT(md_http_wants_text("text/*, text/plain;q=0"), 0);
    CHECK_EQ_INT(md_http_wants_text("text/plain;q=0.8, text/*;q=0.1, application/json;q=0.5"), 1);
    /* Case-insensitive. */
    CHECK_EQ_INT(md_http_wants_text("TEXT/PLAIN"), 1);
    CHECK_EQ_INT(md_http_wants_text("Text/Plain;Q=0.5, Application/JSON;q=0.4"), 1);
    CHECK_EQ_INT(md_http_wants_text("text/plain, APPLICATION/JSON"), 0);
    /* Garbage is no preference. */
    /* Optional whitespace is spaces and tabs, around values and parameters. */
    CHECK_EQ_INT(md_http_wants_text("text/plain \t"), 1);
    CHECK_EQ_INT(md_http_wants_text("\ttext/plain"), 1);
    CHECK_EQ_INT(md_http_wants_text("text/plain\t;\tq=0.5,\tapplication/json;q=0.4\t"), 1);
    CHECK_EQ_INT(md_http_wants_text("garbage"), 0);
    CHECK_EQ_INT(md_http_wants_text(",,,"), 0);
}

/* ---- md_config_load ---- */

static void clear_env(void)
{
    for (;;) {
        char name[128] = "";
        for (char **e = environ; e && *e; e++) {
            if (strncmp(*e, "MEMORYD_", 8) == 0) {
                size_t n = strcspn(*e, "=");
                if (n < sizeof name) {
                    memcpy(name, *e, n);
                    name[n] = '\0';
                }
                break;
            }
        }
        if (!name[0])
            return;
        unsetenv(name);
    }
}

struct run {
    enum md_config_result r;
    char out[16384];
    char err[4096];
};

static void slurp(FILE *f, char *buf, size_t size)
{
    rewind(f);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* md_config_load with stdout and stderr captured. */
static void run_load(struct md_config *cfg, struct run *res, int argc, char **argv)
{
    fflush(stdout);
    fflush(stderr);
    FILE *fo = tmpfile(), *fe = tmpfile();
    int so = dup(1), se = dup(2);
    dup2(fileno(fo), 1);
    dup2(fileno(fe), 2);
    res->r = md_config_load(cfg, argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    slurp(fo, res->out, sizeof res->out);
    slurp(fe, res->err, sizeof res->err);
}

#define LOAD(cfg, res, ...)                                                                        \
    do {                                                                                           \
        char *argv_[] = {"memoryd", __VA_ARGS__, NULL};                                            \
        run_load(cfg, res, (int)(sizeof argv_ / sizeof argv_[0]) - 1, argv_);                      \
    } while (0)

/* A command line that must be refused with exactly `msg` on stderr. */
#define EXPECT_USAGE(msg, ...)                                                                     \
    do {                                                                                           \
        struct md_config c_;                                                                       \
        LOAD(&c_, &res, __VA_ARGS__);                                                              \
        CHECK_EQ_INT(res.r, MD_CONFIG_EXIT_USAGE);                                                 \
        CHECK_STR(res.err, msg);                                                                   \
        CHECK_STR(res.out, "");                                                                    \
    } while (0)

/* An environment variable that must be refused with exactly `msg`. */
#define EXPECT_ENV_USAGE(var, val, msg)                                                            \
    do {                                                                                           \
        struct md_config c_;                                                                       \
        clear_env();                                                                               \
        setenv(var, val, 1);                                                                       \
        run_load(&c_, &res, 1, noargs);                                                            \
        CHECK_EQ_INT(res.r, MD_CONFIG_EXIT_USAGE);                                                 \
        CHECK_STR(res.err, msg);                                                                   \
        unsetenv(var);                                                                             \
    } while (0)

static struct run res;

static void test_config_defaults(void)
{
    char *noargs[] = {"memoryd", NULL};
    struct md_config cfg;
    clear_env();
    run_load(&cfg, &res, 1, noargs);
    CHECK_EQ_INT(res.r, MD_CONFIG_RUN);
    CHECK_STR(res.out, "");
    CHECK_STR(res.err, "");
    CHECK_STR(cfg.http.listen, "127.0.0.1");
    CHECK_EQ_INT(cfg.http.port, 8080);
    CHECK_STR(cfg.db, "./memoryd.db");
    CHECK_EQ_INT(cfg.durability, MD_DURABILITY_FULL);
    CHECK_STR(cfg.http.tenant_header, "X-Tenant-ID");
    CHECK_STR(cfg.http.default_tenant, "default");
    CHECK_EQ_INT(cfg.http.require_tenant, 0);
    CHECK_EQ_INT(cfg.http.trusted_proxies.n, 0);
    CHECK(cfg.http.metrics_listen == NULL);
    CHECK_EQ_INT(cfg.http.metrics_tenant_labels, 0);
    CHECK_EQ_INT(cfg.http.auth_keys, 0);
    CHECK_EQ_INT(cfg.http.mcp_sessions, 1000);
    CHECK_STR(cfg.http.mcp_origins, "");
    CHECK_EQ_INT(cfg.search_off, 0);
    CHECK_EQ_INT(cfg.limits.max_body, 4 << 20);
    CHECK_EQ_INT(cfg.limits.max_file, 1 << 20);
    CHECK_EQ_INT(cfg.limits.max_view, 256 << 10);
    CHECK_EQ_INT(cfg.limits.path.max_path, 4096);
    CHECK_EQ_INT(cfg.limits.path.max_segment, 255);
    CHECK_EQ_INT(cfg.limits.tenant_max_bytes, 64 << 20);
    CHECK_EQ_INT(cfg.limits.tenant_max_files, 10000);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned cpus = ncpu > 0 ? (unsigned)ncpu : 2;
    CHECK_EQ_INT(cfg.http.threads, cpus);
    CHECK_EQ_INT(cfg.http.max_connections, 1024);
    CHECK_EQ_INT(cfg.http.max_connections_per_ip, 256);
    CHECK_EQ_INT(cfg.http.max_body_memory, 256 << 20);
    CHECK_EQ_INT(cfg.http.connection_timeout, 30);
    CHECK_EQ_INT(cfg.max_batch, 256);
    CHECK_EQ_INT(cfg.max_queue, 4096);
    CHECK_EQ_INT(cfg.busy_timeout_ms, 5000);
    CHECK_EQ_INT(cfg.shutdown_timeout, 10);
    CHECK_EQ_INT(cfg.log_level, MD_LOG_INFO);
}

/* On PostgreSQL, two HTTP threads per CPU unless --threads says otherwise. */
static void test_config_threads_pg(void)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned cpus = ncpu > 0 ? (unsigned)ncpu : 2;
    struct md_config cfg;
    char *pg[] = {"memoryd", "--db", "postgresql:///memoryd?host=/run/postgresql", NULL};
    clear_env();
    run_load(&cfg, &res, 3, pg);
    CHECK_EQ_INT(res.r, MD_CONFIG_RUN);
    CHECK_EQ_INT(cfg.http.threads, 2 * cpus < 32 ? 2 * cpus : (cpus > 32 ? cpus : 32));
    char *pg2[] = {"memoryd", "--db", "postgres://db.example/memoryd", "--threads", "3", NULL};
    run_load(&cfg, &res, 5, pg2);
    CHECK_EQ_INT(res.r, MD_CONFIG_RUN);
    CHECK_EQ_INT(cfg.http.threads, 3);
    char *sq[] = {"memoryd", "--db", "/tmp/postgresql.db", NULL};
    run_load(&cfg, &res, 3, sq);
    CHECK_EQ_INT(res.r, MD_CONFIG_RUN);
    CHECK_EQ_INT(cfg.http.threads, cpus);
}

static void test_config_env_and_flags(void)
{
    char *noargs[] = {"memoryd", NULL};
    struct md_config cfg;

    /* Every setting from the environment. */
    clear_env();
    setenv("MEMORYD_LISTEN", "::1", 1);
    setenv("MEMORYD_PORT", "9000", 1);
    setenv("MEMORYD_DB", "/tmp/x.db", 1);
    setenv("MEMORYD_DURABILITY", "normal", 1);
    setenv("MEMORYD_TENANT_HEADER", "X-Org", 1);
    setenv("MEMORYD_DEFAULT_TENANT", "acme", 1);
    setenv("MEMORYD_REQUIRE_TENANT", "yes", 1);
    setenv("MEMORYD_TRUSTED_PROXIES", "10.0.0.0/8, ::1", 1);
    setenv("MEMORYD_MAX_BODY", "8M", 1);
    setenv("MEMORYD_MAX_FILE", "2MiB", 1);
    setenv("MEMORYD_MAX_VIEW", "64K", 1);
    setenv("MEMORYD_MAX_PATH", "1024", 1);
    setenv("MEMORYD_MAX_SEGMENT", "100", 1);
    setenv("MEMORYD_TENANT_MAX_BYTES", "1G", 1);
    setenv("MEMORYD_TENANT_MAX_FILES", "0", 1);
    setenv("MEMORYD_THREADS", "3", 1);
    setenv("MEMORYD_MAX_CONNECTIONS", "50", 1);
    setenv("MEMORYD_MAX_CONNECTIONS_PER_IP", "7", 1);
    setenv("MEMORYD_MAX_BODY_MEMORY", "1G", 1);
    setenv("MEMORYD_CONNECTION_TIMEOUT", "5", 1);
    setenv("MEMORYD_MAX_BATCH", "16", 1);
    setenv("MEMORYD_MAX_QUEUE", "100", 1);
    setenv("MEMORYD_BUSY_TIMEOUT", "250", 1);
    setenv("MEMORYD_SHUTDOWN_TIMEOUT", "0", 1);
    setenv("MEMORYD_LOG_LEVEL", "debug", 1);
    setenv("MEMORYD_METRICS_LISTEN", "[::1]:9464", 1);
    setenv("MEMORYD_METRICS_TENANT_LABELS", "on", 1);
    run_load(&cfg, &res, 1, noargs);
    CHECK_EQ_INT(res.r, MD_CONFIG_RUN);
    CHECK_STR(res.err, "");
    CHECK_STR(cfg.http.listen, "::1");
    CHECK_EQ_INT(cfg.http.port, 9000);
    CHECK_STR(cfg.db, "/tmp/x.db");
    CHECK_EQ_INT(cfg.durability, MD_DURABILITY_NORMAL);
    CHECK_STR(cfg.http.tenant_header, "X-Org");
    CHECK_STR(cfg.http.default_tenant, "acme");
    CHECK_EQ_INT(cfg.http.require_tenant, 1);
    CHECK_EQ_INT(cfg.http.trusted_proxies.n, 2);
    CHECK_EQ_INT(cfg.limits.max_body, 8 << 20);
    CHECK_EQ_INT(cfg.limits.max_file, 2 << 20);
    CHECK_EQ_INT(cfg.limits.max_view, 64 << 10);
    CHECK_EQ_INT(cfg.limits.path.max_path, 1024);
    CHECK_EQ_INT(cfg.limits.path.max_segment, 100);
    CHECK_EQ_INT(cfg.limits.tenant_max_bytes, 1 << 30);
    CHECK_EQ_INT(cfg.limits.tenant_max_files, 0);
    CHECK_EQ_INT(cfg.http.threads, 3);
    CHECK_EQ_INT(cfg.http.max_connections, 50);
    CHECK_EQ_INT(cfg.http.max_connections_per_ip, 7);
    CHECK_EQ_INT(cfg.http.max_body_memory, 1 << 30);
    CHECK_EQ_INT(cfg.http.connection_timeout, 5);
    CHECK_EQ_INT(cfg.max_batch, 16);
    CHECK_EQ_INT(cfg.max_queue, 100);
    CHECK_EQ_INT(cfg.busy_timeout_ms, 250);
    CHECK_EQ_INT(cfg.shutdown_timeout, 0);
    CHECK_EQ_INT(cfg.log_level, MD_LOG_DEBUG);
    CHECK_STR(cfg.http.metrics_listen, "[::1]:9464");
    CHECK_EQ_INT(cfg.http.metrics_tenant_labels, 1);

    /* Flags override the environment; both flag forms; booleans. */
    LOAD(&cfg, &res, "--port", "9100", "--max-file=512K", "--durability=full",
         "--require-tenant=off", "--listen", "0.0.0.0", "--db=/tmp/y.db", "--log-level", "warn",
         "--default-tenant=t.2", "--max-batch", "1", "--tenant-max-bytes=512KiB",
         "--tenant-max-files", "25", "--auth", "keys", "--mcp-sessions", "3",
         "--mcp-origins=https://a.example,http://localhost:5173", "--search", "off");
    CHECK_EQ_INT(res.r, MD_CONFIG_RUN);
    CHECK_EQ_INT(cfg.http.auth_keys, 1);
    CHECK_EQ_INT(cfg.http.mcp_sessions, 3);
    CHECK_STR(cfg.http.mcp_origins, "https://a.example,http://localhost:5173");
    CHECK_EQ_INT(cfg.search_off, 1);
    CHECK_EQ_INT(cfg.limits.tenant_max_bytes, 512 << 10);
    CHECK_EQ_INT(cfg.limits.tenant_max_files, 25);
    CHECK_STR(res.err, "");
    CHECK_EQ_INT(cfg.http.port, 9100);
    CHECK_EQ_INT(cfg.limits.max_file, 512 << 10);
    CHECK_EQ_INT(cfg.durability, MD_DURABILITY_FULL);
    CHECK_EQ_INT(cfg.http.require_tenant, 0);
    CHECK_STR(cfg.http.listen, "0.0.0.0");
    CHECK_STR(cfg.db, "/tmp/y.db");
    CHECK_EQ_INT(cfg.log_level, MD_LOG_WARN);
    CHECK_STR(cfg.http.default_tenant, "t.2");
    CHECK_EQ_INT(cfg.max_batch, 1);
    /* ... and what no flag names stays as the environment set it. */
    CHECK_EQ_INT(cfg.limits.max_body, 8 << 20);
    CHECK_EQ_INT(cfg.http.threads, 3);
    CHECK_STR(cfg.http.tenant_header, "X-Org");

    /* --metrics-listen: ADDR:PORT, [IPv6]:PORT; split for the listener. */
    clear_env();
    LOAD(&cfg, &res, "--metrics-listen", "127.0.0.1:0", "--metrics-tenant-labels");
    CHECK_EQ_INT(res.r, MD_CONFIG_RUN);
    CHECK_STR(res.err, "");
    CHECK_STR(cfg.http.metrics_listen, "127.0.0.1:0");
    CHECK_EQ_INT(cfg.http.metrics_tenant_labels, 1);
    char addr[64];
    unsigned port = 1;
    CHECK_EQ_INT(md_split_listen("[::1]:9464", addr, sizeof addr, &port), 0);
    CHECK_STR(addr, "::1");
    CHECK_EQ_INT(port, 9464);
    CHECK_EQ_INT(md_split_listen("0.0.0.0:65535", addr, sizeof addr, &port), 0);
    CHECK_STR(addr, "0.0.0.0");
    CHECK_EQ_INT(port, 65535);
    CHECK_EQ_INT(md_split_listen("[]:1", addr, sizeof addr, &port), -1);
    CHECK_EQ_INT(md_split_listen(":1", addr, sizeof addr, &port), -1);
    CHECK_EQ_INT(md_split_listen("a:1x", addr, sizeof addr, &port), -1);
    CHECK_EQ_INT(md_split_listen("127.0.0.1:1", addr, 4, &port), -1);

    /* A bare boolean flag is true; the last flag wins; limits at their edges. */
    clear_env();
    LOAD(&cfg, &res, "--require-tenant", "--port", "1", "--port=0", "--max-file", "1G",
         "--max-view=1024", "--max-body", "64", "--max-path", "16", "--max-segment", "1",
         "--max-queue", "10000000");
    CHECK_EQ_INT(res.r, MD_CONFIG_RUN);
    CHECK_STR(res.err, "");
    CHECK_EQ_INT(cfg.http.require_tenant, 1);
    CHECK_EQ_INT(cfg.http.port, 0);
    CHECK_EQ_INT(cfg.limits.max_file, 1 << 30);
    CHECK_EQ_INT(cfg.limits.max_view, 1024);
    CHECK_EQ_INT(cfg.limits.max_body, 64);
    CHECK_EQ_INT(cfg.limits.path.max_path, 16);
    CHECK_EQ_INT(cfg.limits.path.max_segment, 1);
    CHECK_EQ_INT(cfg.max_queue, 10000000);

    static const char *const yes[] = {"1", "true", "TRUE", "yes", "On"};
    static const char *const no[] = {"0", "false", "No", "off", "OFF"};
    for (int i = 0; i < 5; i++) {
        setenv("MEMORYD_REQUIRE_TENANT", yes[i], 1);
        run_load(&cfg, &res, 1, noargs);
        CHECK_EQ_INT(res.r, MD_CONFIG_RUN);
        CHECK_EQ_INT(cfg.http.require_tenant, 1);
        setenv("MEMORYD_REQUIRE_TENANT", no[i], 1);
        run_load(&cfg, &res, 1, noargs);
        CHECK_EQ_INT(res.r, MD_CONFIG_RUN);
        CHECK_EQ_INT(cfg.http.require_tenant, 0);
    }
    setenv("MEMORYD_REQUIRE_TENANT", "no", 1);
    LOAD(&cfg, &res, "--require-tenant");
    CHECK_EQ_INT(cfg.http.require_tenant, 1);
    clear_env();
}

static void test_config_rejects(void)
{
    char *noargs[] = {"memoryd", NULL};
    clear_env();
    EXPECT_USAGE("memoryd: --port must be between 0 and 65535, got 70000\n", "--port", "70000");
    EXPECT_USAGE("memoryd: invalid value for --port: 'abc' (expected N)\n", "--port", "abc");
    EXPECT_USAGE("memoryd: invalid value for --auth: 'basic' (expected none|keys)\n", "--auth",
                 "basic");
    EXPECT_USAGE("memoryd: invalid value for --search: 'yes' (expected on|off)\n", "--search",
                 "yes");
    EXPECT_USAGE("memoryd: invalid value for --port: '-1' (expected N)\n", "--port=-1");
    EXPECT_USAGE("memoryd: invalid value for --port: '1K' (expected N)\n", "--port", "1K");
    EXPECT_USAGE("memoryd: invalid value for --port: '' (expected N)\n", "--port=");
    EXPECT_USAGE("memoryd: --port needs a value (N)\n", "--port");
    EXPECT_USAGE("memoryd: --max-file must be between 1 and 1073741824, got 0\n", "--max-file",
                 "0");
    EXPECT_USAGE("memoryd: --max-file must be between 1 and 1073741824, got 2G\n", "--max-file",
                 "2G");
    EXPECT_USAGE("memoryd: invalid value for --max-file: '1X' (expected BYTES)\n", "--max-file",
                 "1X");
    EXPECT_USAGE("memoryd: --max-body must be between 64 and 1073741824, got 0\n", "--max-body=0");
    EXPECT_USAGE("memoryd: --max-view must be between 1024 and 1073741824, got 0\n",
                 "--max-view=0");
    EXPECT_USAGE("memoryd: --max-view must be between 1024 and 1073741824, got 1023\n",
                 "--max-view=1023");
    EXPECT_USAGE("memoryd: --max-path must be between 16 and 65536, got 0\n", "--max-path=0");
    EXPECT_USAGE(
        "memoryd: --tenant-max-bytes must be between 0 and 1125899906842624, got 2000000G\n",
        "--tenant-max-bytes=2000000G");
    EXPECT_USAGE("memoryd: invalid value for --tenant-max-bytes: '-1' (expected BYTES)\n",
                 "--tenant-max-bytes=-1");
    EXPECT_USAGE("memoryd: invalid value for --tenant-max-files: '1.5' (expected N)\n",
                 "--tenant-max-files", "1.5");
    EXPECT_USAGE("memoryd: --max-segment must be between 1 and 65536, got 0\n", "--max-segment=0");
    EXPECT_USAGE("memoryd: --threads must be between 1 and 1024, got 0\n", "--threads", "0");
    EXPECT_USAGE("memoryd: invalid value for --threads: '2K' (expected N)\n", "--threads", "2K");
    EXPECT_USAGE("memoryd: --max-connections must be between 1 and 1000000, got 0\n",
                 "--max-connections=0");
    EXPECT_USAGE("memoryd: --connection-timeout must be between 1 and 86400, got 0\n",
                 "--connection-timeout=0");
    EXPECT_USAGE("memoryd: --max-batch must be between 1 and 100000, got 0\n", "--max-batch=0");
    EXPECT_USAGE("memoryd: --mcp-sessions must be between 1 and 1000000, got 0\n",
                 "--mcp-sessions=0");
    EXPECT_USAGE("memoryd: --max-queue must be between 1 and 10000000, got 0\n", "--max-queue=0");
    EXPECT_USAGE("memoryd: --busy-timeout must be between 1 and 600000, got 0\n",
                 "--busy-timeout=0");
    EXPECT_USAGE("memoryd: --shutdown-timeout must be between 0 and 3600, got 3601\n",
                 "--shutdown-timeout=3601");
    EXPECT_USAGE("memoryd: invalid value for --trusted-proxies: 'x' is not an IP address\n",
                 "--trusted-proxies=x");
    EXPECT_USAGE("memoryd: invalid value for --durability: 'sometimes' (expected full|normal)\n",
                 "--durability", "sometimes");
    EXPECT_USAGE("memoryd: invalid value for --log-level: 'loud' (expected "
                 "error|warn|info|debug)\n",
                 "--log-level=loud");
    EXPECT_USAGE("memoryd: invalid value for --default-tenant: 'a b' (expected ID)\n",
                 "--default-tenant=a b");
    EXPECT_USAGE("memoryd: invalid value for --default-tenant: '' (expected ID)\n",
                 "--default-tenant=");
    EXPECT_USAGE("memoryd: invalid value for --listen: '' (expected ADDR)\n", "--listen=");
    EXPECT_USAGE("memoryd: invalid value for --require-tenant: 'maybe' (expected true or false)\n",
                 "--require-tenant=maybe");
    EXPECT_USAGE("memoryd: invalid value for --metrics-listen: '9464' (expected ADDR:PORT)\n",
                 "--metrics-listen=9464");
    EXPECT_USAGE("memoryd: invalid value for --metrics-listen: '::1:9464' (expected ADDR:PORT)\n",
                 "--metrics-listen=::1:9464");
    EXPECT_USAGE("memoryd: invalid value for --metrics-listen: '127.0.0.1:65536' (expected "
                 "ADDR:PORT)\n",
                 "--metrics-listen=127.0.0.1:65536");
    EXPECT_USAGE("memoryd: invalid value for --metrics-listen: '127.0.0.1:' (expected "
                 "ADDR:PORT)\n",
                 "--metrics-listen", "127.0.0.1:");
    EXPECT_USAGE("memoryd: --metrics-tenant-labels puts tenant names in /metrics: it needs "
                 "--metrics-listen, a port of its own (not the public one)\n",
                 "--metrics-tenant-labels");
    EXPECT_USAGE("memoryd: unknown option '--bogus'; see memoryd --help\n", "--bogus");
    EXPECT_USAGE("memoryd: unknown option '--bogus=1'; see memoryd --help\n", "--bogus=1");
    EXPECT_USAGE("memoryd: unknown option '-p'; see memoryd --help\n", "-p", "80");
    EXPECT_USAGE("memoryd: unknown option 'serve'; see memoryd --help\n", "serve");
    EXPECT_USAGE("memoryd: unknown option '--'; see memoryd --help\n", "--");
    EXPECT_USAGE("memoryd: unknown option '--portx'; see memoryd --help\n", "--portx", "1");
    /* An error after good flags still stops everything. */
    EXPECT_USAGE("memoryd: unknown option '--nope'; see memoryd --help\n", "--port", "1", "--nope");

    EXPECT_ENV_USAGE("MEMORYD_MAX_BODY", "0",
                     "memoryd: MEMORYD_MAX_BODY must be between 64 and 1073741824, got 0\n");
    EXPECT_ENV_USAGE("MEMORYD_MAX_FILE", "0",
                     "memoryd: MEMORYD_MAX_FILE must be between 1 and 1073741824, got 0\n");
    EXPECT_ENV_USAGE("MEMORYD_PORT", "x",
                     "memoryd: invalid value for MEMORYD_PORT: 'x' (expected "
                     "N)\n");
    EXPECT_ENV_USAGE("MEMORYD_DURABILITY", "FULL",
                     "memoryd: invalid value for MEMORYD_DURABILITY: 'FULL' (expected "
                     "full|normal)\n");
    EXPECT_ENV_USAGE("MEMORYD_DEFAULT_TENANT", "no/slash",
                     "memoryd: invalid value for MEMORYD_DEFAULT_TENANT: 'no/slash' (expected "
                     "ID)\n");
    EXPECT_ENV_USAGE("MEMORYD_THREADS", "0",
                     "memoryd: MEMORYD_THREADS must be between 1 and 1024, got 0\n");
    clear_env();
}

static void test_config_help_version(void)
{
    struct md_config cfg;
    clear_env();
    LOAD(&cfg, &res, "--help");
    CHECK_EQ_INT(res.r, MD_CONFIG_EXIT_OK);
    CHECK_STR(res.err, "");
    CHECK(strncmp(res.out, "Usage: memoryd [OPTION]...\n", 27) == 0);
    static const char *const listed[] = {
        "--listen ADDR",
        "MEMORYD_LISTEN",
        "--port N",
        "MEMORYD_PORT",
        "--db PATH",
        "MEMORYD_DB",
        "--durability full|normal",
        "MEMORYD_DURABILITY",
        "--tenant-header NAME",
        "MEMORYD_TENANT_HEADER",
        "--default-tenant ID",
        "MEMORYD_DEFAULT_TENANT",
        "--require-tenant",
        "MEMORYD_REQUIRE_TENANT",
        "--max-body BYTES",
        "MEMORYD_MAX_BODY",
        "--max-file BYTES",
        "MEMORYD_MAX_FILE",
        "--max-view BYTES",
        "MEMORYD_MAX_VIEW",
        "--max-path BYTES",
        "MEMORYD_MAX_PATH",
        "--tenant-max-bytes BYTES",
        "MEMORYD_TENANT_MAX_BYTES",
        "--tenant-max-files N",
        "MEMORYD_TENANT_MAX_FILES",
        "0: unlimited",
        "--max-segment BYTES",
        "MEMORYD_MAX_SEGMENT",
        "--threads N",
        "MEMORYD_THREADS",
        "--max-connections N",
        "MEMORYD_MAX_CONNECTIONS",
        "--connection-timeout SECONDS",
        "MEMORYD_CONNECTION_TIMEOUT",
        "--max-batch N",
        "MEMORYD_MAX_BATCH",
        "--max-queue N",
        "MEMORYD_MAX_QUEUE",
        "--busy-timeout MS",
        "MEMORYD_BUSY_TIMEOUT",
        "--shutdown-timeout SECONDS",
        "MEMORYD_SHUTDOWN_TIMEOUT",
        "--trusted-proxies LIST",
        "MEMORYD_TRUSTED_PROXIES",
        "--metrics-listen ADDR:PORT",
        "MEMORYD_METRICS_LISTEN",
        "--metrics-tenant-labels",
        "MEMORYD_METRICS_TENANT_LABELS",
        "GET /metrics",
        "--auth none|keys",
        "MEMORYD_AUTH",
        "Authorization:",
        "--search on|off",
        "MEMORYD_SEARCH",
        "GET /v1/search",
        "memoryd keys create|list|revoke",
        "memoryd backup --db PATH --to FILE",
        "memoryd migrate --from SQLITE_PATH --to URI",
        "POST /mcp",
        "--mcp-sessions N",
        "MEMORYD_MCP_SESSIONS",
        "--mcp-origins LIST",
        "MEMORYD_MCP_ORIGINS",
        "--log-level error|warn|info|debug",
        "MEMORYD_LOG_LEVEL",
        "--help",
        "--version",
    };
    for (size_t i = 0; i < sizeof listed / sizeof listed[0]; i++) {
        if (!strstr(res.out, listed[i]))
            fprintf(stderr, "--help does not list %s\n", listed[i]);
        CHECK(strstr(res.out, listed[i]) != NULL);
    }

    LOAD(&cfg, &res, "-h");
    CHECK_EQ_INT(res.r, MD_CONFIG_EXIT_OK);
    CHECK(strncmp(res.out, "Usage: memoryd", 14) == 0);
    /* --help after other flags still only prints help. */
    LOAD(&cfg, &res, "--port", "1", "--help");
    CHECK_EQ_INT(res.r, MD_CONFIG_EXIT_OK);

    char want[128];
    snprintf(want, sizeof want, "memoryd %s (schema: sqlite %d, postgres %d)\n", MD_VERSION,
             md_store_sqlite_schema_version(), md_store_pg_schema_version());
    LOAD(&cfg, &res, "--version");
    CHECK_EQ_INT(res.r, MD_CONFIG_EXIT_OK);
    CHECK_STR(res.err, "");
    CHECK(strcmp(res.out, want) == 0);
    LOAD(&cfg, &res, "-V");
    CHECK_EQ_INT(res.r, MD_CONFIG_EXIT_OK);
    CHECK(strcmp(res.out, want) == 0);
}

int main(void)
{
    test_parse_size();
    test_tenant_valid();
    test_tenant_resolve();
    test_wants_text();
    test_config_defaults();
    test_config_threads_pg();
    test_config_env_and_flags();
    test_config_rejects();
    test_config_help_version();
    return check_report();
}
