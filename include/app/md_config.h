/*
 * md_config.h — memoryd's settings: defaults, MEMORYD_* environment
 * variables, then command-line flags (flags win).
 *
 * Every limit has a safe default and none may be set to "unlimited": zero
 * or out-of-range values are rejected with a message. The exceptions are
 * the tenant quotas (--tenant-max-bytes, --tenant-max-files), where 0 is
 * unlimited (an operator's choice, per tenant too: md_quota.h).
 *
 * Ownership: string settings point into argv/environ or static defaults;
 * the struct owns nothing.
 */
#ifndef MD_CONFIG_H
#define MD_CONFIG_H

#include <stddef.h>

#include "base/md_netaddr.h"
#include "base/md_tenant.h"
#include "cmd/md_cmd.h"
#include "store/md_store.h"

struct md_config {
    const char *listen; /* address to bind */
    unsigned port;      /* 0: any free port */
    const char *db;     /* SQLite file path or PostgreSQL URI */
    enum md_durability durability;
    const char *tenant_header; /* request header naming the tenant */
    const char *default_tenant;
    int require_tenant; /* 1: a request without the header is refused */
    /* When not empty, POST /memory is served only to these addresses (the
     * reverse proxy that authenticates clients and sets the tenant header);
     * others get 403. */
    struct md_cidr_list trusted_proxies;
    struct md_limits limits;
    unsigned threads; /* HTTP worker threads */
    unsigned max_connections;
    unsigned max_connections_per_ip; /* trusted proxies are exempt */
    size_t max_body_memory;          /* request bodies held at once, bytes */
    size_t max_import;               /* an import's tar (a temporary file), bytes */
    unsigned connection_timeout;     /* seconds of inactivity */
    size_t max_batch;                /* write commands per group commit */
    size_t max_queue;                /* write commands waiting; beyond -> 503 */
    unsigned busy_timeout_ms;        /* wait for another process's database lock */
    unsigned shutdown_timeout;       /* seconds to finish in-flight requests */
    struct md_retention history;     /* versions kept; 0 in either: history off */
    int log_level;
    /* GET /metrics on a listener of its own ("ADDR:PORT", "[v6]:PORT"),
     * then not on the public port; NULL: on the public port. */
    const char *metrics_listen;
    int metrics_tenant_labels; /* per-tenant request counters in /metrics */
    int search_off;            /* --search off: no full-text index (md_search.h) */
    int auth_keys;             /* --auth keys: memoryd's own API keys (md_http_auth.h) */
    unsigned mcp_sessions;     /* MCP sessions open at once at most (md_mcp_session.h) */
    const char *mcp_origins;   /* Origin values allowed on /mcp, comma-separated; "": none */
};

enum md_config_result { MD_CONFIG_RUN, MD_CONFIG_EXIT_OK, MD_CONFIG_EXIT_USAGE };

/* Fill `cfg` from defaults, the environment and argv. Prints --help /
 * --version / errors to stdout or stderr and says whether to run. */
enum md_config_result md_config_load(struct md_config *cfg, int argc, char **argv);

/* Parse a byte size: digits with an optional K, M or G suffix (1024-based;
 * "KiB"/"MiB"/"GiB" too). Returns 0 on success. */
int md_parse_size(const char *s, size_t *out);

/* Split "ADDR:PORT" or "[IPv6]:PORT" (--metrics-listen) into the address
 * (into addr, at most `len` bytes with its NUL) and the port (0..65535).
 * Returns 0, or -1 when it is not of that form. */
int md_config_split_listen(const char *s, char *addr, size_t len, unsigned *port);

#endif
