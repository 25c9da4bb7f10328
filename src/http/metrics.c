/*
 * metrics.c — GET /metrics (md_metrics.h rendered): on the public port,
 * or with --metrics-listen on a libmicrohttpd daemon of its own that serves
 * nothing else (its answers go through reply.c too). The database's size is read at most every
 * DB_SIZE_EVERY_US, by the scrape that finds it stale; never by a request
 * of the memory tool.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_clock.h"
#include "base/md_log.h"
#include "base/md_metrics.h"
#include "internal.h"

#define DB_SIZE_EVERY_US ((uint64_t)5 * 1000000)

/* The database's size, read again when older than DB_SIZE_EVERY_US (one
 * scrape does it; the others meanwhile show the value before). */
static int64_t db_size(struct md_http *h)
{
    uint64_t now = md_now_us();
    unsigned long long at = atomic_load(&h->db_size_at);
    if ((at == 0 || now - at >= DB_SIZE_EVERY_US) &&
        atomic_compare_exchange_strong(&h->db_size_at, &at, now)) {
        int64_t bytes = -1;
        if (md_store_db_size(h->store, &bytes) != MD_OK)
            bytes = -1;
        atomic_store(&h->db_size, bytes);
    }
    return atomic_load(&h->db_size);
}

/* The metrics in the format the Accept header asks for. */
static enum MHD_Result render(struct req *r, const char *accept)
{
    struct md_http *h = r->h;
    int om = md_http_wants_openmetrics(accept);
    struct md_metrics_gauges g = {db_size(h), h->store->ops->name, h->cfg->max_connections};
    struct md_buf out;
    md_buf_init(&out, (size_t)16 << 20);
    if (md_metrics_render(&out, om, &g) != MD_OK) {
        md_buf_free(&out);
        return MHD_NO;
    }
    static const char *const no_store[] = {MHD_HTTP_HEADER_CACHE_CONTROL, "no-store", NULL};
    return md_reply_body(r, 200, om ? MD_METRICS_TYPE_OPENMETRICS : MD_METRICS_TYPE_TEXT, &out,
                         no_store);
}

enum MHD_Result md_http_metrics(struct req *r)
{
    return render(r, r->headers.accept.count ? r->headers.accept.value : NULL);
}

/* ---- the listener of its own (--metrics-listen) ---- */

/* A request of the metrics port: GET or HEAD /metrics, nothing else (its
 * refusals are not counted; its scrapes are, as "metrics"). */
static enum MHD_Result on_metrics_request(void *cls, struct MHD_Connection *conn, const char *url,
                                          const char *method, const char *version,
                                          const char *upload_data, size_t *upload_data_size,
                                          void **req_cls)
{
    (void)version;
    (void)upload_data;
    struct md_http *h = cls;
    if (*req_cls == NULL) { /* headers only: a body, if any, is dropped */
        *req_cls = h;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    struct req r = {.h = h, .conn = conn, .t0 = md_now_us(), .metrics_port = 1};
    r.url = url;
    r.method = method;
    r.label = L_METRICS;
    if (strcmp(url, "/metrics") != 0)
        return md_reply_errorf(&r, MD_R_NOT_FOUND_METRICS_PORT);
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        snprintf(r.allow, sizeof r.allow, "GET, HEAD");
        return md_reply_errorf(&r, MD_R_METHOD);
    }
    return render(&r, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));
}

int md_http_metrics_start(struct md_http *h, char *why, size_t why_len)
{
    atomic_store(&h->db_size, -1);
    const char *listen = h->cfg->metrics_listen;
    if (!listen)
        return 0;
    char addr[64];
    unsigned port;
    struct sockaddr_storage ss;
    int v6;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (md_split_listen(listen, addr, sizeof addr, &port) != 0) {
        snprintf(why, why_len, "cannot parse --metrics-listen '%s' (expected ADDR:PORT)", listen);
        return -1;
    }
    if (md_sockaddr_of(addr, port, &ss, &v6) != 0) {
        snprintf(why, why_len,
                 "cannot parse the --metrics-listen address '%s' (expected an IPv4 or IPv6 "
                 "address)",
                 addr);
        return -1;
    }
    if (v6)
        flags |= MHD_USE_IPv6;
    h->metrics_d =
        MHD_start_daemon(flags, 0, NULL, NULL, on_metrics_request, h, MHD_OPTION_EXTERNAL_LOGGER,
                         md_http_mhd_log, NULL, MHD_OPTION_SOCK_ADDR, &ss,
                         MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32 << 10, MHD_OPTION_END);
    if (!h->metrics_d) {
        snprintf(why, why_len, "cannot listen on --metrics-listen %s (in use, or not allowed)",
                 listen);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->metrics_d, MHD_DAEMON_INFO_BIND_PORT);
    h->metrics_port = info ? info->port : port;
    return 0;
}

void md_http_metrics_stop(struct md_http *h)
{
    if (h->metrics_d)
        MHD_stop_daemon(h->metrics_d);
    h->metrics_d = NULL;
}

unsigned md_http_metrics_port(const struct md_http *h)
{
    return h->metrics_d ? h->metrics_port : 0;
}
