/*
 * md_config.h — memoryd's settings: defaults, MEMORYD_* environment
 * variables, then command-line flags (flags win).
 *
 * Every limit has a safe default and none may be set to "unlimited": zero
 * or out-of-range values are refused with a message. The exceptions are
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
#include "cmd/md_sensitive.h"
#include "http/md_http.h"
#include "store/md_store.h"

struct md_config {
    struct md_http_config http; /* the HTTP front's (md_http.h) */
    struct md_limits limits;    /* the commands' (md_cmd.h) */
    const char *db;             /* SQLite file path or PostgreSQL URI */
    enum md_durability durability;
    size_t max_batch;            /* write commands per group commit */
    size_t max_queue;            /* write commands waiting; beyond -> 503 */
    unsigned busy_timeout_ms;    /* wait for another process's database lock */
    size_t wal_size_limit;       /* SQLite: the -wal file's size after a checkpoint, at most */
    unsigned shutdown_timeout;   /* seconds to finish in-flight requests */
    struct md_retention history; /* versions kept; 0 in either: history off */
    int log_level;
    int search_off;                       /* --search off: no full-text index (md_search.h) */
    struct md_sensitive_config sensitive; /* --sensitive, -cards, -patterns */
};

enum md_config_result { MD_CONFIG_RUN, MD_CONFIG_EXIT_OK, MD_CONFIG_EXIT_USAGE };

/* Fill `cfg` from defaults, the environment and argv. Prints --help /
 * --version / errors to stdout or stderr and says whether to run. */
enum md_config_result md_config_load(struct md_config *cfg, int argc, char **argv);

/* Parse a byte size: digits with an optional K, M or G suffix (1024-based;
 * "KiB"/"MiB"/"GiB" too). Returns 0 on success. */
int md_parse_size(const char *s, size_t *out);

#endif
