/*
 * test_metrics.c — the metrics renderer (md_metrics.h): exact lines of
 * counters and histograms in the Prometheus text format and in
 * OpenMetrics, cumulative buckets, the per-tenant counters and their
 * bound, and the OpenMetrics choice from an Accept header.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_metrics.h"
#include "check.h"
#include "http/md_http.h"

/* memoryd's `command` labels (the HTTP front makes them from its command
 * and route tables: md_commands.def, md_routes.def). */
enum {
    L_VIEW,
    L_CREATE,
    L_STR_REPLACE,
    L_INSERT,
    L_DELETE,
    L_RENAME,
    L_UNKNOWN,
    L_HISTORY,
    L_VERSIONS,
    L_RESTORE,
    L_REDACT,
    L_CHANGES,
    L_HEALTHZ,
    L_READYZ,
    L_METRICS,
    L_QUOTA,
    L_ADMIN,
    L_MCP,
    L_SEARCH,
    L_NOT_FOUND,
    L_COUNT
};
static const char *const labels[L_COUNT] = {
    "view",    "create",   "str_replace", "insert", "delete",  "rename",   "unknown",
    "history", "versions", "restore",     "redact", "changes", "healthz",  "readyz",
    "metrics", "quota",    "admin",       "mcp",    "search",  "not_found"};

static void init(int tenant_labels)
{
    md_metrics_init(tenant_labels, labels, L_COUNT);
}

static char *render(int om, const struct md_metrics_gauges *g)
{
    struct md_buf b;
    md_buf_init(&b, (size_t)16 << 20);
    CHECK_EQ_INT(md_metrics_render(&b, om, g), MD_OK);
    size_t len;
    char *s = md_buf_take(&b, &len);
    md_buf_free(&b);
    return s ? s : calloc(1, 1);
}

/* `line` (with its newline) is a whole line of `text`. */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return 1;
    fprintf(stderr, "    missing line: %s\n", line);
    return 0;
}

static void test_requests_and_latency(void)
{
    init(0);
    md_metrics_request(L_VIEW, 200, 400, "alice");      /* <= 0.0005 s */
    md_metrics_request(L_VIEW, 404, 3000, "alice");     /* <= 0.005 s */
    md_metrics_request(L_CREATE, 201, 20000000, "bob"); /* over 10 s: +Inf only */
    md_metrics_request(L_CHANGES, 503, 1000, NULL);     /* exactly on a bound */
    md_metrics_request(L_RENAME, 101, 10, NULL);        /* no class shown */
    char *t = render(0, NULL);
    CHECK(has_line(t, "# TYPE memoryd_requests_total counter"));
    CHECK(has_line(t, "memoryd_requests_total{command=\"view\",class=\"2xx\"} 1"));
    CHECK(has_line(t, "memoryd_requests_total{command=\"view\",class=\"4xx\"} 1"));
    CHECK(has_line(t, "memoryd_requests_total{command=\"create\",class=\"2xx\"} 1"));
    CHECK(has_line(t, "memoryd_requests_total{command=\"changes\",class=\"5xx\"} 1"));
    CHECK(has_line(t, "memoryd_requests_total{command=\"rename\",class=\"2xx\"} 0"));
    CHECK(has_line(t, "# TYPE memoryd_request_duration_seconds histogram"));
    CHECK(has_line(t, "memoryd_request_duration_seconds_bucket{command=\"view\",le=\"0.0005\"} 1"));
    CHECK(has_line(t, "memoryd_request_duration_seconds_bucket{command=\"view\",le=\"0.0025\"} 1"));
    CHECK(has_line(t, "memoryd_request_duration_seconds_bucket{command=\"view\",le=\"0.005\"} 2"));
    CHECK(has_line(t, "memoryd_request_duration_seconds_bucket{command=\"view\",le=\"+Inf\"} 2"));
    CHECK(has_line(t, "memoryd_request_duration_seconds_count{command=\"view\"} 2"));
    CHECK(has_line(t, "memoryd_request_duration_seconds_sum{command=\"view\"} 0.003400"));
    CHECK(has_line(t, "memoryd_request_duration_seconds_bucket{command=\"create\",le=\"10\"} 0"));
    CHECK(has_line(t, "memoryd_request_duration_seconds_bucket{command=\"create\",le=\"+Inf\"} 1"));
    CHECK(
        has_line(t, "memoryd_request_duration_seconds_bucket{command=\"changes\",le=\"0.001\"} 1"));
    /* A request whose class is not shown is still timed. */
    CHECK(has_line(t, "memoryd_request_duration_seconds_count{command=\"rename\"} 1"));
    /* No tenant name without tenant labels. */
    CHECK(strstr(t, "alice") == NULL && strstr(t, "tenant") == NULL);
    CHECK(strstr(t, "# EOF") == NULL);
    free(t);
}

static void test_writer_and_gauges(void)
{
    init(0);
    md_metrics_batch(1, 50);
    md_metrics_batch(3, 2000);
    md_metrics_batch(5000, 2000000);
    md_metrics_queue_depth(7);
    md_metrics_connection(+1);
    md_metrics_connection(+1);
    md_metrics_connection(-1);
    md_metrics_refused(MD_MR_PER_ADDRESS);
    md_metrics_refused(MD_MR_GLOBAL);
    md_metrics_refused(MD_MR_GLOBAL);
    md_metrics_storage_error();
    md_metrics_pruned(4, 2, 1);
    md_metrics_pruned(4, 2, 1);
    struct md_metrics_gauges g = {12345, "sqlite", 64};
    char *t = render(0, &g);
    CHECK(has_line(t, "memoryd_write_batch_size_bucket{le=\"1\"} 1"));
    CHECK(has_line(t, "memoryd_write_batch_size_bucket{le=\"2\"} 1"));
    CHECK(has_line(t, "memoryd_write_batch_size_bucket{le=\"4\"} 2"));
    CHECK(has_line(t, "memoryd_write_batch_size_bucket{le=\"4096\"} 2"));
    CHECK(has_line(t, "memoryd_write_batch_size_bucket{le=\"+Inf\"} 3"));
    CHECK(has_line(t, "memoryd_write_batch_size_count 3"));
    CHECK(has_line(t, "memoryd_write_batch_size_sum 5004"));
    CHECK(has_line(t, "memoryd_write_commit_duration_seconds_bucket{le=\"0.0001\"} 1"));
    CHECK(has_line(t, "memoryd_write_commit_duration_seconds_bucket{le=\"0.0025\"} 2"));
    CHECK(has_line(t, "memoryd_write_commit_duration_seconds_bucket{le=\"1\"} 2"));
    CHECK(has_line(t, "memoryd_write_commit_duration_seconds_count 3"));
    CHECK(has_line(t, "memoryd_write_commit_duration_seconds_sum 2.002050"));
    CHECK(has_line(t, "# TYPE memoryd_write_queue_depth gauge"));
    CHECK(has_line(t, "memoryd_write_queue_depth 7"));
    CHECK(has_line(t, "memoryd_open_connections 1"));
    CHECK(has_line(t, "memoryd_connections_limit 64"));
    CHECK(has_line(t, "memoryd_refused_connections_total{reason=\"per_address\"} 1"));
    CHECK(has_line(t, "memoryd_refused_connections_total{reason=\"global\"} 2"));
    CHECK(has_line(t, "memoryd_storage_errors_total 1"));
    CHECK(has_line(t, "memoryd_pruned_rows_total{kind=\"versions\"} 8"));
    CHECK(has_line(t, "memoryd_pruned_rows_total{kind=\"changes\"} 4"));
    CHECK(has_line(t, "memoryd_pruned_rows_total{kind=\"idempotency\"} 2"));
    CHECK(has_line(t, "memoryd_database_size_bytes{store=\"sqlite\"} 12345"));
    CHECK(has_line(t, "# TYPE memoryd_build_info gauge"));
    free(t);
    /* An unknown size is left out. */
    g.db_bytes = -1;
    t = render(0, &g);
    CHECK(strstr(t, "memoryd_database_size_bytes") == NULL);
    free(t);
}

static void test_openmetrics(void)
{
    init(0);
    md_metrics_request(L_DELETE, 200, 100, NULL);
    char *t = render(1, NULL);
    CHECK(has_line(t, "# TYPE memoryd_requests counter"));
    CHECK(has_line(t, "# HELP memoryd_requests HTTP requests answered, by command (or endpoint) "
                      "and status class."));
    CHECK(has_line(t, "memoryd_requests_total{command=\"delete\",class=\"2xx\"} 1"));
    CHECK(has_line(t, "# TYPE memoryd_refused_connections counter"));
    CHECK(has_line(t, "# TYPE memoryd_build info"));
    CHECK(strstr(t, "# TYPE memoryd_requests_total") == NULL);
    size_t n = strlen(t);
    CHECK(n > 6);
    if (n > 6)
        CHECK_MEM(t + n - 6, 6, "# EOF\n");
    free(t);
}

static void test_tenant_labels(void)
{
    init(1);
    md_metrics_request(L_VIEW, 200, 1, "alice");
    md_metrics_request(L_VIEW, 200, 1, "alice");
    md_metrics_request(L_VIEW, 200, 1, "bob");
    md_metrics_request(L_VIEW, 200, 1, NULL); /* no tenant: not counted per tenant */
    char name[32];
    for (int i = 0; i < MD_METRICS_TENANTS + 5; i++) {
        snprintf(name, sizeof name, "t%d", i);
        md_metrics_request(L_VIEW, 200, 1, name);
    }
    md_metrics_request(L_VIEW, 200, 1, "alice"); /* known: still its own */
    char *t = render(0, NULL);
    CHECK(has_line(t, "memoryd_tenant_requests_total{tenant=\"alice\"} 3"));
    CHECK(has_line(t, "memoryd_tenant_requests_total{tenant=\"bob\"} 1"));
    CHECK(has_line(t, "memoryd_tenant_requests_total{tenant=\"t0\"} 1"));
    CHECK(has_line(t, "memoryd_tenant_requests_total{tenant=\"t997\"} 1"));
    CHECK(strstr(t, "{tenant=\"t998\"}") == NULL);
    /* 2 + 1000 tenants seen: t998 .. t1004 overflow. */
    CHECK(has_line(t, "memoryd_tenant_requests_overflow_total 7"));
    size_t series = 0;
    for (const char *p = t; (p = strstr(p, "memoryd_tenant_requests_total{")) != NULL; p++)
        series++;
    CHECK_EQ_INT((long long)series, MD_METRICS_TENANTS);
    free(t);
    init(0);
}

static void test_accept(void)
{
    CHECK_EQ_INT(md_http_wants_openmetrics(NULL), 0);
    CHECK_EQ_INT(md_http_wants_openmetrics("*/*"), 0);
    CHECK_EQ_INT(md_http_wants_openmetrics("text/plain"), 0);
    CHECK_EQ_INT(md_http_wants_openmetrics("application/openmetrics-text"), 1);
    CHECK_EQ_INT(md_http_wants_openmetrics("application/openmetrics-text;version=1.0.0,"
                                           "application/openmetrics-text;version=0.0.1;q=0.75,"
                                           "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
                 1);
    CHECK_EQ_INT(md_http_wants_openmetrics("application/openmetrics-text;q=0.2,text/plain"), 0);
    CHECK_EQ_INT(md_http_wants_openmetrics("application/openmetrics-text;q=0"), 0);
}

int main(void)
{
    test_requests_and_latency();
    test_writer_and_gauges();
    test_openmetrics();
    test_tenant_labels();
    test_accept();
    return check_report();
}
