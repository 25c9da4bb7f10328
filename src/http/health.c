/*
 * health.c — the probes: GET /healthz (the process answers) and GET
 * /readyz (the store answers, its search index is built and memoryd is not
 * shutting down), with their
 * own small JSON bodies.
 */
#include <string.h>

#include "internal.h"

static enum MHD_Result status(struct req *r, unsigned code, const char *json)
{
    struct md_buf body;
    md_buf_init(&body, 64);
    if (md_buf_puts(&body, json)) {
        md_buf_free(&body);
        return MHD_NO;
    }
    return md_reply_json(r, code, &body);
}

enum MHD_Result md_http_health(struct req *r)
{
    struct md_http *h = r->h;
    if (r->route->id == R_HEALTHZ || r->route->id == R_HEALTHZ_HEAD)
        return status(r, 200, "{\"status\":\"ok\"}");
    if (atomic_load(&h->stopping))
        return status(r, 503, "{\"status\":\"shutting down\"}");
    if (md_store_building(h->store))
        return status(r, 503, "{\"status\":\"building the search index\"}");
    if (md_store_ping(h->store) != MD_OK)
        return status(r, 503, "{\"status\":\"storage unavailable\"}");
    return status(r, 200, "{\"status\":\"ready\"}");
}
