/* metrics.c — counters, gauges and histograms for GET /metrics (see md_metrics.h). */
#include "base/md_metrics.h"

#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/md_tenant.h"
#include "base/md_version.h"

#define MAX_BUCKETS 16

/* Upper bounds of a histogram's buckets, in its recording unit
 * (microseconds, or commands), and the unit's size in what is shown
 * (seconds: 1e6; commands: 1). */
struct bounds {
    size_t n;
    uint64_t le[MAX_BUCKETS];
    double scale;
};

/* Buckets not cumulated (each counts its own range; the last one is
 * +Inf), and the sum in the recording unit. */
struct hist {
    atomic_ullong bucket[MAX_BUCKETS + 1];
    atomic_ullong sum;
};

static const struct bounds latency_bounds = {14,
                                             {500, 1000, 2500, 5000, 10000, 25000, 50000, 100000,
                                              250000, 500000, 1000000, 2500000, 5000000, 10000000},
                                             1e6};
static const struct bounds commit_bounds = {
    12, {100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000}, 1e6};
static const struct bounds batch_bounds = {
    12, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096}, 1};

/* Status classes shown: 2xx..5xx (index status / 100 - 2). */
#define NCLASSES 4

/* Per-tenant request counters: open addressing over twice the tenants
 * kept. A slot is claimed once (state EMPTY -> CLAIMING -> READY) and
 * keeps its tenant for the life of the process. */
#define TENANT_SLOTS 2048
enum { SLOT_EMPTY, SLOT_CLAIMING, SLOT_READY };
struct tenant_slot {
    atomic_int state;
    char name[MD_TENANT_MAX + 1];
    atomic_ullong requests;
};

static struct {
    int tenant_labels;
    const char *const *labels; /* the `command` label's values */
    size_t nlabels;
    atomic_ullong requests[MD_METRICS_LABELS_MAX][NCLASSES];
    struct hist latency[MD_METRICS_LABELS_MAX];
    struct hist batch_size, commit;
    atomic_ullong queue_depth;
    atomic_llong connections;
    atomic_ullong refused[MD_MR_COUNT];
    atomic_ullong storage_errors;
    atomic_ullong sensitive[MD_METRICS_SENSITIVE_KINDS][2]; /* rejected, redacted */
    atomic_ullong pruned_versions, pruned_changes, pruned_idempotency;
    atomic_ullong expired, uses_written;
    atomic_uint tenants_used;
    atomic_ullong tenant_overflow;
    struct tenant_slot tenants[TENANT_SLOTS];
    atomic_llong started; /* Unix time, seconds */
} M;

/* The kinds of md_metrics_sensitive (md_metrics_sensitive_kinds): kept
 * through md_metrics_reset. */
static const char *sensitive_kinds[MD_METRICS_SENSITIVE_KINDS];
static size_t nsensitive;

void md_metrics_sensitive_kinds(const char *const *kinds, size_t n)
{
    size_t k = 0;
    for (; k < n && k < MD_METRICS_SENSITIVE_KINDS; k++)
        sensitive_kinds[k] = kinds[k];
    nsensitive = k;
}

void md_metrics_sensitive(const char *kind, int redacted)
{
    for (size_t i = 0; i < nsensitive; i++)
        if (strcmp(sensitive_kinds[i], kind) == 0) {
            atomic_fetch_add_explicit(&M.sensitive[i][redacted != 0], 1, memory_order_relaxed);
            return;
        }
}

void md_metrics_reset(void)
{
    int tenant_labels = M.tenant_labels;
    const char *const *labels = M.labels;
    size_t n = M.nlabels;
    memset(&M, 0, sizeof M);
    M.tenant_labels = tenant_labels;
    M.labels = labels;
    M.nlabels = n;
    atomic_store(&M.started, (long long)time(NULL));
}

void md_metrics_init(int tenant_labels, const char *const *labels, size_t n)
{
    M.labels = labels;
    M.nlabels = n < MD_METRICS_LABELS_MAX ? n : MD_METRICS_LABELS_MAX;
    md_metrics_reset();
    M.tenant_labels = tenant_labels;
}

static void hist_observe(struct hist *h, const struct bounds *b, uint64_t v)
{
    size_t i = 0;
    while (i < b->n && v > b->le[i])
        i++;
    atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum, v, memory_order_relaxed);
}

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void tenant_count(const char *tenant)
{
    size_t len = strlen(tenant);
    if (len > MD_TENANT_MAX)
        return;
    size_t i = fnv1a(tenant) % TENANT_SLOTS;
    for (size_t probes = 0; probes < TENANT_SLOTS;) {
        struct tenant_slot *s = &M.tenants[i];
        int st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st == SLOT_READY) {
            if (strcmp(s->name, tenant) == 0) {
                atomic_fetch_add_explicit(&s->requests, 1, memory_order_relaxed);
                return;
            }
            i = (i + 1) % TENANT_SLOTS;
            probes++;
            continue;
        }
        if (st == SLOT_CLAIMING) {
            sched_yield(); /* another thread is writing its name: look again */
            continue;
        }
        /* An empty slot: the tenant is new. */
        if (atomic_fetch_add(&M.tenants_used, 1) >= MD_METRICS_TENANTS) {
            atomic_fetch_sub(&M.tenants_used, 1);
            break;
        }
        int empty = SLOT_EMPTY;
        if (!atomic_compare_exchange_strong(&s->state, &empty, SLOT_CLAIMING)) {
            atomic_fetch_sub(&M.tenants_used, 1);
            continue; /* taken meanwhile: look at it again */
        }
        memcpy(s->name, tenant, len + 1);
        atomic_store_explicit(&s->requests, 1, memory_order_relaxed);
        atomic_store_explicit(&s->state, SLOT_READY, memory_order_release);
        return;
    }
    atomic_fetch_add_explicit(&M.tenant_overflow, 1, memory_order_relaxed);
}

void md_metrics_request(unsigned label, unsigned status, uint64_t us, const char *tenant)
{
    if (label >= M.nlabels)
        return;
    if (status >= 200 && status < 600)
        atomic_fetch_add_explicit(&M.requests[label][status / 100 - 2], 1, memory_order_relaxed);
    hist_observe(&M.latency[label], &latency_bounds, us);
    if (M.tenant_labels && tenant && *tenant)
        tenant_count(tenant);
}

void md_metrics_batch(size_t commands, uint64_t commit_us)
{
    hist_observe(&M.batch_size, &batch_bounds, commands);
    hist_observe(&M.commit, &commit_bounds, commit_us);
}

void md_metrics_queue_depth(size_t n)
{
    atomic_store_explicit(&M.queue_depth, n, memory_order_relaxed);
}

void md_metrics_connection(int delta)
{
    atomic_fetch_add_explicit(&M.connections, delta, memory_order_relaxed);
}

void md_metrics_refused(enum md_metric_refusal why)
{
    if ((unsigned)why < MD_MR_COUNT)
        atomic_fetch_add_explicit(&M.refused[why], 1, memory_order_relaxed);
}

void md_metrics_storage_error(void)
{
    atomic_fetch_add_explicit(&M.storage_errors, 1, memory_order_relaxed);
}

void md_metrics_expired(size_t files)
{
    atomic_fetch_add_explicit(&M.expired, files, memory_order_relaxed);
}

void md_metrics_uses_written(size_t n)
{
    atomic_fetch_add_explicit(&M.uses_written, n, memory_order_relaxed);
}

void md_metrics_pruned(size_t versions, size_t changes, size_t idempotency)
{
    atomic_fetch_add_explicit(&M.pruned_versions, versions, memory_order_relaxed);
    atomic_fetch_add_explicit(&M.pruned_changes, changes, memory_order_relaxed);
    atomic_fetch_add_explicit(&M.pruned_idempotency, idempotency, memory_order_relaxed);
}

/* ---- rendering ---- */

struct out {
    struct md_buf *b;
    int om; /* OpenMetrics */
    enum md_err err;
};

static void put(struct out *o, const char *s)
{
    if (!o->err)
        o->err = md_buf_puts(o->b, s);
}

static void putf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(struct out *o, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    put(o, line);
}

/* A label value, escaped (\\, \" and \n). */
static void put_label_value(struct out *o, const char *v)
{
    for (; *v && !o->err; v++) {
        if (*v == '\\')
            put(o, "\\\\");
        else if (*v == '"')
            put(o, "\\\"");
        else if (*v == '\n')
            put(o, "\\n");
        else
            o->err = md_buf_putc(o->b, *v);
    }
}

/* # HELP and # TYPE of a metric family. A counter's samples end in
 * _total; its family is named without it in OpenMetrics, with it in the
 * Prometheus text format. An info metric is a gauge there. */
static void family(struct out *o, const char *name, const char *type, const char *help)
{
    int counter = strcmp(type, "counter") == 0, info = strcmp(type, "info") == 0;
    const char *suffix = o->om ? "" : counter ? "_total" : info ? "_info" : "";
    if (!o->om && info)
        type = "gauge";
    putf(o, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, suffix, help, name, suffix, type);
}

static void hist_render(struct out *o, const char *name, const struct hist *h,
                        const struct bounds *b, const char *label, const char *value)
{
    unsigned long long cum = 0;
    char lbl[96] = "";
    if (label)
        snprintf(lbl, sizeof lbl, "%s=\"%s\",", label, value);
    for (size_t i = 0; i <= b->n; i++) {
        cum += atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
        if (i < b->n)
            putf(o, "%s_bucket{%sle=\"%g\"} %llu\n", name, lbl, (double)b->le[i] / b->scale, cum);
        else
            putf(o, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, lbl, cum);
    }
    if (label)
        snprintf(lbl, sizeof lbl, "{%s=\"%s\"}", label, value);
    unsigned long long sum = atomic_load_explicit(&h->sum, memory_order_relaxed);
    putf(o, "%s_count%s %llu\n", name, lbl, cum);
    if (b->scale == 1)
        putf(o, "%s_sum%s %llu\n", name, lbl, sum);
    else
        putf(o, "%s_sum%s %.6f\n", name, lbl, (double)sum / b->scale);
}

static void render_requests(struct out *o)
{
    static const char *const classes[NCLASSES] = {"2xx", "3xx", "4xx", "5xx"};
    family(o, "memoryd_requests", "counter",
           "HTTP requests answered, by command (or endpoint) and status class.");
    for (size_t c = 0; c < M.nlabels; c++)
        for (int k = 0; k < NCLASSES; k++)
            putf(o, "memoryd_requests_total{command=\"%s\",class=\"%s\"} %llu\n", M.labels[c],
                 classes[k], atomic_load_explicit(&M.requests[c][k], memory_order_relaxed));
    family(o, "memoryd_request_duration_seconds", "histogram",
           "Time from a request's headers to its answer, by command (or endpoint).");
    for (size_t c = 0; c < M.nlabels; c++)
        hist_render(o, "memoryd_request_duration_seconds", &M.latency[c], &latency_bounds,
                    "command", M.labels[c]);
}

static void render_tenants(struct out *o)
{
    if (!M.tenant_labels)
        return;
    family(o, "memoryd_tenant_requests", "counter",
           "HTTP requests of each tenant (--metrics-tenant-labels; the first 1000 tenants seen).");
    for (size_t i = 0; i < TENANT_SLOTS; i++) {
        struct tenant_slot *s = &M.tenants[i];
        if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_READY)
            continue;
        put(o, "memoryd_tenant_requests_total{tenant=\"");
        put_label_value(o, s->name);
        putf(o, "\"} %llu\n", atomic_load_explicit(&s->requests, memory_order_relaxed));
    }
    family(o, "memoryd_tenant_requests_overflow", "counter",
           "HTTP requests of tenants beyond the first 1000 seen (no series of their own).");
    putf(o, "memoryd_tenant_requests_overflow_total %llu\n",
         atomic_load_explicit(&M.tenant_overflow, memory_order_relaxed));
}

static void render_writer(struct out *o)
{
    family(o, "memoryd_write_batch_size", "histogram",
           "Write commands per group commit (one transaction).");
    hist_render(o, "memoryd_write_batch_size", &M.batch_size, &batch_bounds, NULL, NULL);
    family(o, "memoryd_write_commit_duration_seconds", "histogram",
           "Time to commit a write batch (the flush).");
    hist_render(o, "memoryd_write_commit_duration_seconds", &M.commit, &commit_bounds, NULL, NULL);
    family(o, "memoryd_write_queue_depth", "gauge", "Write commands waiting for the writer.");
    putf(o, "memoryd_write_queue_depth %llu\n",
         atomic_load_explicit(&M.queue_depth, memory_order_relaxed));
}

static void render_other(struct out *o, const struct md_metrics_gauges *g)
{
    family(o, "memoryd_open_connections", "gauge", "Open connections on the public port.");
    long long open = atomic_load_explicit(&M.connections, memory_order_relaxed);
    putf(o, "memoryd_open_connections %lld\n", open > 0 ? open : 0);
    if (g && g->max_connections) {
        family(o, "memoryd_connections_limit", "gauge",
               "--max-connections: at this many open connections new ones wait to be accepted.");
        putf(o, "memoryd_connections_limit %u\n", g->max_connections);
    }
    family(o, "memoryd_refused_connections", "counter",
           "Connections refused: over --max-connections-per-ip (per_address), or closed at "
           "--max-connections (global).");
    putf(o, "memoryd_refused_connections_total{reason=\"per_address\"} %llu\n",
         atomic_load_explicit(&M.refused[MD_MR_PER_ADDRESS], memory_order_relaxed));
    putf(o, "memoryd_refused_connections_total{reason=\"global\"} %llu\n",
         atomic_load_explicit(&M.refused[MD_MR_GLOBAL], memory_order_relaxed));
    family(o, "memoryd_storage_errors", "counter",
           "Errors the database returned (each also logged).");
    putf(o, "memoryd_storage_errors_total %llu\n",
         atomic_load_explicit(&M.storage_errors, memory_order_relaxed));
    if (nsensitive)
        family(o, "memoryd_sensitive", "counter",
               "Writes that held what looks like a credential or a key (--sensitive), by kind: "
               "refused (rejected) or stored with it redacted.");
    for (size_t i = 0; i < nsensitive; i++)
        for (int a = 0; a < 2; a++)
            putf(o, "memoryd_sensitive_total{kind=\"%s\",action=\"%s\"} %llu\n", sensitive_kinds[i],
                 a ? "redacted" : "rejected",
                 atomic_load_explicit(&M.sensitive[i][a], memory_order_relaxed));
    family(o, "memoryd_pruned_rows", "counter",
           "Rows retention deleted: history versions, change-feed entries, Idempotency-Key "
           "answers.");
    putf(o, "memoryd_pruned_rows_total{kind=\"versions\"} %llu\n",
         atomic_load_explicit(&M.pruned_versions, memory_order_relaxed));
    putf(o, "memoryd_pruned_rows_total{kind=\"changes\"} %llu\n",
         atomic_load_explicit(&M.pruned_changes, memory_order_relaxed));
    putf(o, "memoryd_pruned_rows_total{kind=\"idempotency\"} %llu\n",
         atomic_load_explicit(&M.pruned_idempotency, memory_order_relaxed));
    family(o, "memoryd_expired", "counter",
           "Files deleted by expiry (--expire-after): unused for longer than their window.");
    putf(o, "memoryd_expired_total %llu\n", atomic_load_explicit(&M.expired, memory_order_relaxed));
    family(o, "memoryd_use_times_written", "counter",
           "Files' last use times written back to the database (at most once per file per "
           "--expire-granularity).");
    putf(o, "memoryd_use_times_written_total %llu\n",
         atomic_load_explicit(&M.uses_written, memory_order_relaxed));
    if (g && g->db_bytes >= 0) {
        family(o, "memoryd_database_size_bytes", "gauge",
               "Size of the database: the SQLite file and its WAL, or pg_database_size().");
        putf(o, "memoryd_database_size_bytes{store=\"%s\"} %lld\n", g->store ? g->store : "",
             (long long)g->db_bytes);
    }
    family(o, "memoryd_start_time_seconds", "gauge", "When memoryd started, Unix time.");
    putf(o, "memoryd_start_time_seconds %lld\n", atomic_load(&M.started));
    family(o, "memoryd_build", "info", "memoryd's version.");
    put(o, "memoryd_build_info{version=\"");
    put_label_value(o, MD_VERSION);
    put(o, "\"} 1\n");
}

enum md_err md_metrics_render(struct md_buf *out, int openmetrics,
                              const struct md_metrics_gauges *g)
{
    struct out o = {out, openmetrics, MD_OK};
    render_requests(&o);
    render_tenants(&o);
    render_writer(&o);
    render_other(&o, g);
    if (openmetrics)
        put(&o, "# EOF\n");
    return o.err;
}
