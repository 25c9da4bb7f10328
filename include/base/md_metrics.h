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

/* Values of the `command` label at most (md_metrics_init). */
#define MD_METRICS_LABELS_MAX 32

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

/* Before serving: the values of the `command` label, in the order they are
 * listed (`labels`, static, `n` <= MD_METRICS_LABELS_MAX; the HTTP front
 * makes them from its command and route tables), and whether requests are
 * also counted per tenant. */
void md_metrics_init(int tenant_labels, const char *const *labels, size_t n);

/* Forget every value (tests). */
void md_metrics_reset(void);

/* A request of label `label` (an index into md_metrics_init's labels)
 * answered with HTTP `status` after `us` microseconds; `tenant` (may be
 * NULL or "") is counted only with tenant labels on. */
void md_metrics_request(unsigned label, unsigned status, uint64_t us, const char *tenant);

/* A write batch of `commands` committed (or failed) in `commit_us`. */
void md_metrics_batch(size_t commands, uint64_t commit_us);

/* Write commands queued for the writer now. */
void md_metrics_queue_depth(size_t n);

/* A connection of the public port opened (+1) or closed (-1). */
void md_metrics_connection(int delta);

void md_metrics_refused(enum md_metric_refusal why);

/* An error the database returned (as logged by the store). */
void md_metrics_storage_error(void);

/* The kinds of secret counted (at most MD_METRICS_SENSITIVE_KINDS; names
 * borrowed, [a-z0-9-] as md_sensitive.h makes them), before serving; then a
 * write that held one, by kind: refused, or stored redacted. */
#define MD_METRICS_SENSITIVE_KINDS 64
void md_metrics_sensitive_kinds(const char *const *kinds, size_t n);
void md_metrics_sensitive(const char *kind, int redacted);

/* Rows retention deleted and committed: versions, change-feed entries,
 * idempotency answers. */
void md_metrics_pruned(size_t versions, size_t changes, size_t idempotency);

/* Files expiry deleted (memoryd_expired_total), and use times written
 * back to the database (memoryd_use_times_written_total; md_uses.h). */
void md_metrics_expired(size_t files);
void md_metrics_uses_written(size_t n);

/* Append every metric to `out`: OpenMetrics 1.0.0 when `openmetrics`,
 * else the Prometheus text format 0.0.4. */
enum md_err md_metrics_render(struct md_buf *out, int openmetrics,
                              const struct md_metrics_gauges *g);

/* The Content-Type of each format. */
#define MD_METRICS_TYPE_TEXT        "text/plain; version=0.0.4; charset=utf-8"
#define MD_METRICS_TYPE_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"

#endif
