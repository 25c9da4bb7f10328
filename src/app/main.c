/* main.c — memoryd: a subcommand (md_subcommands.h), or serving: settings,
 * store, writer, HTTP, and a graceful shutdown. */
#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "app/md_config.h"
#include "app/md_engines.h"
#include "app/md_subcommands.h"
#include "base/md_log.h"
#include "base/md_metrics.h"
#include "base/md_netaddr.h"
#include "base/md_version.h"
#include "cmd/md_sensitive.h"
#include "cmd/md_sensitive_modes.h"
#include "cmd/md_uses.h"
#include "cmd/md_writer.h"
#include "http/md_http.h"

/* Files whose last use memory keeps at most (md_uses.h: about 100 bytes
 * each, and a bucket). */
#define USES_MAX ((size_t)1 << 17)

/* Each connection is a file descriptor: raise the soft open-file limit to
 * what --max-connections needs (plus the database, WAL, eventfds and logs),
 * up to the hard limit; warn when even that is too low. */
static void raise_nofile_limit(const struct md_config *cfg)
{
    const rlim_t need = (rlim_t)cfg->http.max_connections + 64;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
        return;
    rlim_t want = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
    if (want > rl.rlim_cur) {
        rl.rlim_cur = want;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < need) {
        struct md_logline l;
        md_log_begin(&l, MD_LOG_WARN,
                     "open-file limit too low for --max-connections: new connections will fail "
                     "before that many are open (raise ulimit -n / LimitNOFILE)");
        md_log_int(&l, "nofile", (int64_t)rl.rlim_cur);
        md_log_int(&l, "needed", (int64_t)need);
        md_log_end(&l);
    }
}

/* The store, the writer and the HTTP front, started in that order. */
struct server {
    struct md_store *store;
    struct md_writer *writer;
    struct md_http *http;
    pthread_t build;   /* md_store_build, while memoryd serves */
    int build_started; /* `build` runs, to be joined */
};

/* The search index --search on wants and the open left to build: built
 * while memoryd serves (/readyz says not ready until it is). */
static void *build_main(void *arg)
{
    struct server *s = arg;
    char why[512] = "";
    if (md_store_build(s->store, why, sizeof why) != MD_OK)
        md_log_msg(MD_LOG_ERROR, "cannot build the search index; search stays off", why);
    return NULL;
}

/* Start the server: 0, or -1 with the reason logged and nothing left. */
static int server_start(struct md_config *cfg, struct server *s)
{
    char why[512] = "";
    struct md_store_config scfg = {.db = cfg->db,
                                   .durability = cfg->durability,
                                   .busy_timeout_ms = (int)cfg->busy_timeout_ms,
                                   .history = cfg->history,
                                   .search = cfg->search_off ? MD_SEARCH_OFF : MD_SEARCH_ON,
                                   .defer_build = 1};
    /* PostgreSQL: a reader per HTTP thread, and one for /readyz. */
    struct md_engine_configs own = {.pg = {.readers = cfg->http.threads + 1},
                                    .sqlite = {.wal_size_limit = (int64_t)cfg->wal_size_limit}};
    if (md_store_open(&scfg, &own, &s->store, why, sizeof why) != MD_OK) {
        md_log_msg(MD_LOG_ERROR, "cannot open the database", why);
        return -1;
    }
    s->writer = md_writer_start(s->store, &cfg->limits, cfg->max_batch, cfg->max_queue);
    if (!s->writer) {
        md_log_msg(MD_LOG_ERROR, "cannot start the writer thread", NULL);
        md_store_close(s->store);
        return -1;
    }
    /* Imports in steps where history can undo them; an import a stopped
     * memoryd left halfway is undone before its tenant is served. */
    md_writer_history(s->writer, md_history_on(&cfg->history));
    if (md_writer_recover(s->writer) != MD_OK)
        md_log_msg(MD_LOG_ERROR,
                   "cannot read the imports left halfway; they are undone at the next start", NULL);
    s->http = md_http_start(&cfg->http, &cfg->limits, s->store, s->writer, why, sizeof why);
    if (!s->http) {
        md_log_msg(MD_LOG_ERROR, "cannot start the HTTP server", why);
        md_writer_stop(s->writer, NULL);
        md_store_close(s->store);
        return -1;
    }
    return 0;
}

static void log_listening(const struct md_config *cfg, const struct server *s)
{
    struct md_logline l;
    md_log_begin(&l, MD_LOG_INFO, "listening");
    md_log_str(&l, "version", MD_VERSION);
    md_log_str(&l, "address", cfg->http.listen);
    md_log_int(&l, "port", md_http_port(s->http));
    if (cfg->http.metrics_listen)
        md_log_int(&l, "metrics_port", md_http_metrics_port(s->http));
    char db[512];
    md_log_str(&l, "db", md_store_redact(cfg->db, db, sizeof db));
    md_log_str(&l, "store", s->store->ops->name);
    md_log_str(&l, "durability", cfg->durability == MD_DURABILITY_FULL ? "full" : "normal");
    md_log_int(&l, "threads", cfg->http.threads);
    md_log_end(&l);
}

/* Finish the requests in flight (at most --shutdown-timeout), run and
 * answer what is queued, then stop everything. */
static void server_stop(const struct md_config *cfg, struct server *s)
{
    struct md_logline l;
    md_http_quiesce(s->http);
    unsigned left = md_http_wait_idle(s->http, cfg->shutdown_timeout * 1000u);
    if (left) {
        md_log_begin(&l, MD_LOG_WARN, "shutdown timeout: requests still in flight");
        md_log_int(&l, "in_flight", left);
        md_log_end(&l);
    }
    struct md_writer_stats ws;
    md_writer_stop(s->writer, &ws); /* runs and resumes anything still queued */
    if (s->build_started)
        pthread_join(s->build, NULL); /* a search index build finishes first */
    md_http_stop(s->http);
    md_store_close(s->store); /* checkpoints the WAL */
    md_log_begin(&l, MD_LOG_INFO, "stopped");
    md_log_int(&l, "write_batches", (int64_t)ws.batches);
    md_log_int(&l, "write_commands", (int64_t)ws.jobs);
    md_log_int(&l, "write_exec_ms", (int64_t)(ws.exec_us / 1000));
    md_log_int(&l, "write_commit_ms", (int64_t)(ws.commit_us / 1000));
    md_log_end(&l);
}

/* A listener other hosts can reach that asks nobody for a key and trusts no
 * proxy to have asked: anyone who reaches it reads and writes every tenant. */
static void warn_if_open(const struct md_config *cfg)
{
    struct sockaddr_storage ss;
    int v6;
    if (cfg->http.auth_keys || cfg->http.trusted_proxies.n ||
        md_sockaddr_of(cfg->http.listen, cfg->http.port, &ss, &v6) != 0 ||
        md_sockaddr_is_loopback((const struct sockaddr *)&ss))
        return;
    struct md_logline l;
    md_log_begin(&l, MD_LOG_WARN,
                 "open listener: any client that reaches this address can read and write every "
                 "tenant's memory; use --auth keys, or --trusted-proxies behind a proxy that "
                 "authenticates, or --listen 127.0.0.1");
    md_log_str(&l, "address", cfg->http.listen);
    md_log_end(&l);
}

/* Serve until SIGTERM or SIGINT; the exit status. */
static int serve(struct md_config *cfg, int utf8_locale)
{
    md_log_set_level((enum md_log_level)cfg->log_level);
    if (!utf8_locale)
        md_log_msg(MD_LOG_WARN, "no C.UTF-8 locale: exports and imports take ASCII names only",
                   NULL);
    raise_nofile_limit(cfg);
    warn_if_open(cfg);
    /* Signals are taken by sigwait() below, never by another thread. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Past a file-size limit, write(2) must fail (and the command with
     * it) rather than kill the process. */
    signal(SIGXFSZ, SIG_IGN);
    /* The detectors of --sensitive, compiled once; their kinds counted. */
    struct md_sensitive *sensitive = NULL;
    char why[512] = "";
    if (md_sensitive_new(&cfg->sensitive, &sensitive, why, sizeof why) != MD_OK) {
        md_log_msg(MD_LOG_ERROR, "cannot start: --sensitive", why);
        return 1;
    }
    cfg->limits.sensitive = sensitive;
    /* Tenants' own modes (PUT /v1/tenants/{t}/limits), cached. */
    struct md_sensitive_modes *modes = md_sensitive_modes_new();
    if (!modes) {
        md_sensitive_free(sensitive);
        md_log_msg(MD_LOG_ERROR, "cannot start: out of memory", NULL);
        return 1;
    }
    cfg->limits.modes = modes;
    /* Counted whatever --sensitive is: a tenant may have a mode of its own. */
    const char *kinds[MD_METRICS_SENSITIVE_KINDS];
    size_t nkinds = 0;
    while (nkinds < MD_METRICS_SENSITIVE_KINDS && nkinds < md_sensitive_kinds(sensitive)) {
        kinds[nkinds] = md_sensitive_kind(sensitive, nkinds);
        nkinds++;
    }
    md_metrics_sensitive_kinds(kinds, nkinds);
    /* The files' uses, recorded by views and written back by the writer
     * (md_uses.h), for expiry. */
    cfg->limits.uses = md_uses_new(USES_MAX, cfg->limits.expire_granularity_ms);
    if (!cfg->limits.uses) {
        md_log_msg(MD_LOG_ERROR, "cannot start: out of memory", NULL);
        md_sensitive_modes_free(modes);
        md_sensitive_free(sensitive);
        return 1;
    }
    struct server s;
    if (server_start(cfg, &s) != 0) {
        md_sensitive_modes_free(modes);
        md_uses_free(cfg->limits.uses);
        md_sensitive_free(sensitive);
        return 1;
    }
    /* From here on, log lines are written by a background thread. */
    if (md_log_start_async() != 0)
        md_log_msg(MD_LOG_WARN, "cannot start the log thread; logging directly", NULL);
    log_listening(cfg, &s);
    s.build_started =
        md_store_building(s.store) && pthread_create(&s.build, NULL, build_main, &s) == 0;
    if (md_store_building(s.store) && !s.build_started)
        md_log_msg(MD_LOG_ERROR, "cannot start the search index build", NULL);
    int sig = 0;
    sigwait(&sigs, &sig);
    struct md_logline l;
    md_log_begin(&l, MD_LOG_INFO, "shutting down");
    md_log_str(&l, "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    md_log_end(&l);
    server_stop(cfg, &s);
    md_log_stop_async();
    md_sensitive_modes_free(modes);
    md_uses_free(cfg->limits.uses);
    md_sensitive_free(sensitive);
    return 0;
}

int main(int argc, char **argv)
{
    const struct md_subcommand *sub = argc > 1 ? md_subcommand_find(argv[1]) : NULL;
    if (sub)
        return sub->run(argc - 1, argv + 1);
    /* Multibyte text is UTF-8 (libarchive's names in exports and imports;
     * nothing else depends on the locale). Built into glibc >= 2.35. */
    int utf8_locale = setlocale(LC_CTYPE, "C.UTF-8") != NULL;
    struct md_config cfg;
    switch (md_config_load(&cfg, argc, argv)) {
    case MD_CONFIG_EXIT_OK:
        return 0;
    case MD_CONFIG_EXIT_USAGE:
        return 2;
    case MD_CONFIG_RUN:
        break;
    }
    return serve(&cfg, utf8_locale);
}
