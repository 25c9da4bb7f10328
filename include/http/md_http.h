/*
 * md_http.h — the HTTP front (libmicrohttpd): the operations of
 * md_routes.def (POST /memory, /mcp, the probes, GET /metrics, the /v1
 * API) on one port, and GET /metrics alone on another with
 * --metrics-listen (src/http/).
 *
 * Views run on the HTTP worker threads (or, on an engine that fetches
 * them asynchronously, on the store's); writes go to the writer
 * (md_writer.h) while the connection is suspended.
 *
 * Ownership: the server borrows cfg, limits, store and writer; they must
 * outlive it.
 */
#ifndef MD_HTTP_H
#define MD_HTTP_H

#include <stddef.h>

#include "base/md_netaddr.h"
#include "cmd/md_cmd.h"
#include "cmd/md_writer.h"
#include "store/md_store.h"

/* The HTTP front's settings (memoryd's options: app/md_config.h). */
struct md_http_config {
    const char *listen;        /* address to bind */
    unsigned port;             /* 0: any free port */
    const char *tenant_header; /* request header naming the tenant */
    const char *default_tenant;
    int require_tenant; /* 1: a request without the header is refused */
    /* When not empty, requests are served only to these addresses (the
     * reverse proxy that authenticates clients and sets the tenant header);
     * others get 403. */
    struct md_cidr_list trusted_proxies;
    unsigned threads; /* HTTP worker threads */
    unsigned max_connections;
    unsigned max_connections_per_ip; /* trusted proxies are exempt */
    size_t max_body_memory;          /* request bodies held at once, bytes */
    size_t max_import;               /* an import's tar (a temporary file), bytes */
    unsigned connection_timeout;     /* seconds of inactivity */
    /* GET /metrics on a listener of its own ("ADDR:PORT", "[v6]:PORT"),
     * then not on the public port; NULL: on the public port. */
    const char *metrics_listen;
    int metrics_tenant_labels; /* per-tenant request counters in /metrics */
    int auth_keys;             /* --auth keys: memoryd's own API keys (src/http/auth.c) */
    unsigned mcp_sessions;     /* MCP sessions open at once at most (md_mcp_session.h) */
    const char *mcp_origins;   /* Origin values allowed on /mcp, comma-separated; "": none */
};

struct md_http;

/* Start listening. NULL on failure with the reason in `why`. */
struct md_http *md_http_start(const struct md_http_config *cfg, const struct md_limits *limits,
                              struct md_store *store, struct md_writer *writer, char *why,
                              size_t why_len);

/* The bound TCP port (useful with --port 0). */
unsigned md_http_port(const struct md_http *h);

/* The bound port of --metrics-listen (0: not set). */
unsigned md_http_metrics_port(const struct md_http *h);

/* Stop serving new connections (each is closed as it is accepted); requests
 * arriving on open connections from now on get 503. */
void md_http_quiesce(struct md_http *h);

/* Wait until no request is in flight, at most timeout_ms. Returns the
 * number still in flight. */
unsigned md_http_wait_idle(struct md_http *h, unsigned timeout_ms);

/* Stop the daemon and free the server. Every suspended connection must
 * have been resumed (stop the writer first). */
void md_http_stop(struct md_http *h);

/* The endpoints, as --help lists them (from md_routes.def): a line each,
 * "  POST, DELETE   /mcp\n", into `out`. */
enum md_err md_http_endpoints(struct md_buf *out);

/* Accept negotiation (src/http/accept.c): text/plain over JSON for an
 * Accept value (NULL: JSON); OpenMetrics over the Prometheus text format
 * (application/openmetrics-text named, at least as much as text/plain). */
int md_http_wants_text(const char *accept);
int md_http_wants_openmetrics(const char *accept);

#endif
