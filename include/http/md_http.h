/*
 * md_http.h — the HTTP front end (libmicrohttpd).
 *
 * Routes: POST /memory (the memory tool), GET /healthz (the process is
 * up), GET /readyz (the store answers and we are not shutting down),
 * GET /metrics (md_metrics.h; on a port of its own with --metrics-listen),
 * the /v1 API.
 * Read commands run on the HTTP worker thread; write commands go to the
 * writer (md_writer.h) while the connection is suspended.
 *
 * Ownership: the server borrows cfg, store and writer; they must outlive it.
 */
#ifndef MD_HTTP_H
#define MD_HTTP_H

#include <stddef.h>

#include "app/md_config.h"
#include "cmd/md_writer.h"
#include "store/md_store.h"

struct md_http;

/* Start listening. NULL on failure with the reason in `why`. */
struct md_http *md_http_start(const struct md_config *cfg, struct md_store *store,
                              struct md_writer *writer, char *why, size_t why_len);

/* The bound TCP port (useful with --port 0). */
unsigned md_http_port(const struct md_http *h);

/* The bound port of --metrics-listen (0: not set). */
unsigned md_http_metrics_port(const struct md_http *h);

/* Stop accepting connections; requests arriving from now on get 503. */
void md_http_quiesce(struct md_http *h);

/* Wait until no request is in flight, at most timeout_ms. Returns the
 * number still in flight. */
unsigned md_http_wait_idle(struct md_http *h, unsigned timeout_ms);

/* Stop the daemon and free the server. Every suspended connection must
 * have been resumed (stop the writer first). */
void md_http_stop(struct md_http *h);

/* Choose text/plain over JSON for an Accept header value (NULL: JSON). */
int md_http_wants_text(const char *accept);

#endif
