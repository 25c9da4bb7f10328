/*
 * md_metrics.h — memoryd's metrics: process-wide counters, gauges and
 * fixed-bucket histograms, rendered on demand for GET /metrics in the
 * Prometheus text format 0.0.4 or OpenMetrics 1.0.0.
 *
 * Recording is lock-free and allocation-free (C11 atomics on static
 * storage): the request path, the writer and the connection callbacks
 * call the md_metrics_* recorders directly. Rendering reads every value
 * once; a histogram's buckets, _count and _sum may be a request apart
 * while requests run (its _count is always the sum of its buckets).
 *
 * Tenant names are never label values unless md_metrics_init() was told
 * to count per tenant (--metrics-tenant-labels): then the first
 * MD_METRICS_TENANTS tenants seen each get a counter, and the requests of
 * any later tenant go to one overflow counter (bounded cardinality).
 *
 * Ownership: all state is static, owned by this module; nothing to free.
 * md_metrics_render() appends to a caller-owned md_buf. Errors: the
 * renderer returns MD_ENOMEM when the buffer cannot grow; recorders
 * cannot fail.
 */
#ifndef MD_METRICS_H
#define MD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "base/md_buf.h"
#include "base/md_err.h"
#include "store/md_history.h"

/* The `command` label of request metrics: the memory tool's six
 * commands, the /v1 endpoints (a tenant's usage and limits: quota), the
 * probes and /metrics itself. */
enum md_metric_cmd {
    MD_MC_VIEW,
    MD_MC_CREATE,
    MD_MC_STR_REPLACE,
    MD_MC_INSERT,
    MD_MC_DELETE,
    MD_MC_RENAME,
    MD_MC_UNKNOWN, /* POST /memory refused before its command was read */
    MD_MC_HISTORY,
    MD_MC_VERSIONS,
    MD_MC_RESTORE,
    MD_MC_REDACT,
    MD_MC_CHANGES,
    MD_MC_HEALTHZ,
    MD_MC_READYZ,
    MD_MC_METRICS,
    MD_MC_QUOTA,     /* GET /v1/tenants/{t}, PUT /v1/tenants/{t}/limits */
    MD_MC_ADMIN,     /* GET /v1/tenants, DELETE /v1/tenants/{t} */
    MD_MC_MCP,       /* /mcp, but for the memory tool's commands (labelled as on /memory) */
    MD_MC_SEARCH,    /* GET /v1/search */
    MD_MC_NOT_FOUND, /* no such route */
    MD_MC_COUNT
};

/* Why a connection was refused. */
enum md_metric_refusal {
    MD_MR_PER_ADDRESS, /* over --max-connections-per-ip (answered 503, or closed) */
    MD_MR_GLOBAL,      /* closed by libmicrohttpd at --max-connections (at the limit it
                          stops accepting: new connections wait in the kernel's queue; one
                          accepted in a race is closed) */
    MD_MR_COUNT
};

/* Most tenants given a series of their own with tenant labels on. */
#define MD_METRICS_TENANTS 1000

/* Values read when /metrics is rendered, from outside this module. */
struct md_metrics_gauges {
    int64_t db_bytes;         /* database size; < 0: unknown (not rendered) */
    const char *store;        /* "sqlite" or "postgres" (a label of db_bytes) */
    unsigned max_connections; /* --max-connections; 0: not rendered */
};

/* Set whether requests are also counted per tenant (before serving). */
void md_metrics_init(int tenant_labels);

/* Forget every value (tests). */
void md_metrics_reset(void);

/* A request answered with HTTP `status` after `us` microseconds;
 * `tenant` (may be NULL or "") is counted only with tenant labels on. */
void md_metrics_request(enum md_metric_cmd cmd, unsigned status, uint64_t us, const char *tenant);

/* A write batch of `commands` committed (or failed) in `commit_us`. */
void md_metrics_batch(size_t commands, uint64_t commit_us);

/* Write commands queued for the writer now. */
void md_metrics_queue_depth(size_t n);

/* A connection of the public port opened (+1) or closed (-1). */
void md_metrics_connection(int delta);

void md_metrics_refused(enum md_metric_refusal why);

/* An error the database returned (as logged by the store). */
void md_metrics_storage_error(void);

/* Rows retention deleted and committed. */
void md_metrics_pruned(const struct md_pruned *p);

/* Append every metric to `out`: OpenMetrics 1.0.0 when `openmetrics`,
 * else the Prometheus text format 0.0.4. */
enum md_err md_metrics_render(struct md_buf *out, int openmetrics,
                              const struct md_metrics_gauges *g);

/* The Content-Type of each format. */
#define MD_METRICS_TYPE_TEXT        "text/plain; version=0.0.4; charset=utf-8"
#define MD_METRICS_TYPE_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"

#endif
