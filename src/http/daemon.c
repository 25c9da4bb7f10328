/*
 * daemon.c — the HTTP front's daemons (see md_http.h and internal.h): the
 * public port's libmicrohttpd daemon (its thread pool, connection limits,
 * timeouts, request.c's callbacks), the connections counted per client
 * address, the parts started and stopped with it (the change feed's
 * waiters, the key store, the MCP sessions, the metrics listener), and
 * shutting down.
 */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/md_clock.h"
#include "base/md_log.h"
#include "base/md_metrics.h"
#include "http/md_connlimit.h"
#include "internal.h"

/* Idle timeout of a connection over the per-address limit, seconds: it is
 * answered at its first request; one that sends none goes soon. */
#define OVER_CAP_TIMEOUT 2

/* ---- connections per client address ---- */

/* Trusted proxies carry many clients' connections: they are not limited. */
static int conn_limited(const struct md_http *h, const struct sockaddr *sa)
{
    return !(h->cfg->trusted_proxies.n > 0 && md_cidr_list_match(&h->cfg->trusted_proxies, sa));
}

/* Before a connection is accepted: close at once a connection from an
 * address that already holds twice --max-connections-per-ip (the last
 * resort; up to that, those over the limit are answered 503). Logged at
 * most once a second. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)addrlen;
    struct md_http *h = cls;
    /* Shutting down (md_http_quiesce): a new connection is closed at once,
     * never served. */
    if (atomic_load(&h->stopping))
        return MHD_NO;
    if (!conn_limited(h, addr) || md_connlimit_allowed(h->conns, addr))
        return MHD_YES;
    md_metrics_refused(MD_MR_PER_ADDRESS);
    long long sec = (long long)(md_now_us() / 1000000u);
    long long last = atomic_load(&h->refused_at);
    if (sec != last && atomic_compare_exchange_strong(&h->refused_at, &last, sec)) {
        char text[46];
        md_sockaddr_text(addr, text);
        struct md_logline l;
        md_log_begin(&l, MD_LOG_WARN, "connection closed: twice --max-connections-per-ip reached");
        md_log_str(&l, "client", text);
        md_log_int(&l, "limit", h->cfg->max_connections_per_ip);
        md_log_end(&l);
    }
    return MHD_NO;
}

/* Count connections as they open and close. *socket_ctx marks a counted
 * one, and whether it is over the limit (then its first request is
 * answered 503, and it gets a short idle timeout). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code)
{
    struct md_http *h = cls;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        md_metrics_connection(+1);
        unsigned open = 0;
        if (sa && conn_limited(h, sa) && md_connlimit_add(h->conns, sa, +1, &open) == MD_OK) {
            int over = open > h->cfg->max_connections_per_ip;
            *socket_ctx = md_http_conn_mark(over);
            if (over) {
                md_metrics_refused(MD_MR_PER_ADDRESS);
                MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
                                          (unsigned)OVER_CAP_TIMEOUT);
            }
        }
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        md_metrics_connection(-1);
        if (*socket_ctx)
            md_connlimit_add(h->conns, sa, -1, NULL);
        *socket_ctx = NULL;
    }
}

/* ---- starting and stopping ---- */

/* Stop and free what md_http_start made (any part may be missing). */
static void http_free(struct md_http *h)
{
    md_store_watch(h->store, NULL, NULL);
    md_http_waiters_stop(h);
    md_http_metrics_stop(h);
    if (h->d)
        MHD_stop_daemon(h->d);
    md_http_auth_stop(h);
    md_http_mcp_stop(h);
    md_connlimit_free(h->conns);
    free(h);
}

/* The public port's daemon: 0, or -1 with the reason. */
static int daemon_start(struct md_http *h, char *why, size_t why_len)
{
    const struct md_http_config *cfg = h->cfg;
    struct sockaddr_storage ss;
    int v6;
    if (md_sockaddr_of(cfg->listen, cfg->port, &ss, &v6) != 0) {
        snprintf(why, why_len,
                 "cannot parse listen address '%s' (expected an IPv4 or IPv6 address)",
                 cfg->listen);
        return -1;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0);
    struct MHD_OptionItem list[16];
    size_t n = 0;
    list[n++] =
        (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)md_http_mhd_log_public, NULL};
    list[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &ss};
    if (cfg->threads > 1)
        list[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, cfg->threads, NULL};
    list[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections, NULL};
    list[n++] =
        (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, cfg->connection_timeout, NULL};
    list[n++] =
        (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)64 << 10, NULL};
    /* No MHD_OPTION_LISTENING_ADDRESS_REUSE: its SO_REUSEPORT would let a
     * second memoryd bind the same port and silently take half the
     * connections. libmicrohttpd's default SO_REUSEADDR still allows an
     * immediate restart. */
    list[n++] =
        (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)md_http_on_completed, h};
    list[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h};
    list[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    h->d = MHD_start_daemon(flags, 0, on_accept, h, md_http_on_request, h, MHD_OPTION_ARRAY, list,
                            MHD_OPTION_END);
    if (!h->d) {
        snprintf(why, why_len, "cannot listen on %s port %u (in use, or not allowed)", cfg->listen,
                 cfg->port);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : cfg->port;
    return 0;
}

/* The `command` labels of the request metrics, from md_commands.def and
 * md_routes.def. */
static void metrics_start(const struct md_http_config *cfg)
{
    static const char *labels[L_COUNT];
    for (size_t i = 0; i < L_COUNT; i++)
        labels[i] = md_http_label_name((enum metric_label)i);
    md_metrics_init(cfg->metrics_tenant_labels, labels, L_COUNT);
}

struct md_http *md_http_start(const struct md_http_config *cfg, const struct md_limits *limits,
                              struct md_store *store, struct md_writer *writer, char *why,
                              size_t why_len)
{
    struct md_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    h->cfg = cfg;
    h->limits = limits;
    h->store = store;
    h->writer = writer;
    metrics_start(cfg);
    h->conns = md_connlimit_new(cfg->max_connections_per_ip);
    if (!h->conns || md_http_waiters_start(h) != 0) {
        snprintf(why, why_len, "out of memory, or cannot start a thread");
        goto fail;
    }
    if (md_http_auth_start(h, why, why_len) != 0 || md_http_mcp_start(h, why, why_len) != 0 ||
        daemon_start(h, why, why_len) != 0 || md_http_metrics_start(h, why, why_len) != 0)
        goto fail;
    /* The change feed's waiters hear of every commit: this process's (the
     * writer's hook) and, on a shared database, the others' (the store). */
    md_writer_on_commit(writer, md_http_changes_committed, h);
    if (md_store_watch(store, md_http_changes_heard, h) != MD_OK)
        md_log_msg(MD_LOG_WARN, "cannot hear other instances' changes", NULL);
    return h;
fail:
    http_free(h);
    return NULL;
}

unsigned md_http_port(const struct md_http *h)
{
    return h->port;
}

void md_http_quiesce(struct md_http *h)
{
    /* Not MHD_quiesce_daemon: with a thread pool on epoll, libmicrohttpd
     * 0.9.75 (Debian 12) races its workers for the listen socket's removal
     * from their epoll sets and aborts the process ("Failed to remove listen
     * FD from epoll set") when a worker wins. The listener stays open; every
     * connection that arrives from now on is closed on accept (on_accept). */
    atomic_store(&h->stopping, 1);
    md_http_waiters_wake_all(h); /* a long poll answers now with what there is */
}

unsigned md_http_wait_idle(struct md_http *h, unsigned timeout_ms)
{
    unsigned waited = 0;
    unsigned n;
    while ((n = atomic_load(&h->in_flight)) > 0 && waited < timeout_ms) {
        usleep(10000);
        waited += 10;
    }
    return n;
}

void md_http_stop(struct md_http *h)
{
    if (h)
        http_free(h);
}
