/*
 * request.c — one request of the public port, from its headers to its
 * completion (see internal.h): the context (struct req) made on
 * libmicrohttpd's first call, the headers read once, the body kept in
 * memory within --max-body and --max-body-memory (an import's spooled to a
 * temporary file), the refusals that come before routing (ambiguous
 * framing, a body over a limit, bodies over memory, a connection over its
 * address's limit), then routes.c. The completion callback logs the request
 * and frees its context.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/md_clock.h"
#include "base/md_log.h"
#include "internal.h"

/* An oversized body of unannounced length is read and dropped up to this
 * many times the body limit before the connection is closed. */
#define DISCARD_FACTOR 4
#define DISCARD_FLOOR  ((size_t)64 << 20)

/* Socket contexts of connections counted per address (daemon.c): within
 * the limit, or over it (answered 503 and closed). */
static char counted_mark, over_mark;

void *md_http_conn_mark(int over_cap)
{
    return over_cap ? &over_mark : &counted_mark;
}

/* ---- the body ---- */

/* Most body bytes read and dropped before a connection is closed. */
static size_t discard_cap(const struct md_http *h)
{
    size_t limit = h->limits->max_body;
    size_t cap = limit > SIZE_MAX / DISCARD_FACTOR ? SIZE_MAX : limit * DISCARD_FACTOR;
    return cap > DISCARD_FLOOR ? cap : DISCARD_FLOOR;
}

static int spooled(const struct req *r)
{
    return r->route && r->method_ok && r->route->body == BODY_SPOOL;
}

/* Append to the request's temporary file (made at the first bytes, in
 * $TMPDIR or /tmp, unlinked at once). 0, or -1 when it cannot be written. */
static int spool_write(struct req *r, const char *data, size_t n)
{
    if (r->spool_fd < 0) {
        const char *dir = getenv("TMPDIR");
        char tmpl[4096];
        snprintf(tmpl, sizeof tmpl, "%s/memoryd-import-XXXXXX", dir && *dir ? dir : "/tmp");
        r->spool_fd = mkostemp(tmpl, O_CLOEXEC);
        if (r->spool_fd < 0) {
            md_log_msg(MD_LOG_ERROR, "import: cannot make a temporary file", strerror(errno));
            return -1;
        }
        unlink(tmpl);
    }
    while (n > 0) {
        ssize_t w = write(r->spool_fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            md_log_msg(MD_LOG_ERROR, "import: cannot write the temporary file", strerror(errno));
            return -1;
        }
        data += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Admit the body its Content-Length announces, before it is read. */
static void admit_announced(struct req *r)
{
    struct md_http *h = r->h;
    const char *cl = r->headers.content_length.value;
    unsigned long long announced = cl ? strtoull(cl, NULL, 10) : 0;
    if (spooled(r)) {
        /* An import's tar goes to a temporary file, not memory. */
        if (announced > h->cfg->max_import)
            r->too_big = 1;
        return;
    }
    if (!r->route || r->route->body == BODY_NONE ||
        (strcmp(r->method, MHD_HTTP_METHOD_POST) != 0 &&
         strcmp(r->method, MHD_HTTP_METHOD_PUT) != 0))
        return;
    /* An announced body over the limit is still read (and dropped) so that
     * the client, busy sending it, reliably sees the 413; only a body too
     * large even to drop is refused at once, before it is read. */
    if (announced > discard_cap(h))
        r->too_big = 1;
    else if (announced <= h->limits->max_body &&
             (!md_http_body_reserve(r, announced) ||
              (announced > 0 && md_buf_reserve(&r->body, (size_t)announced) != MD_OK)))
        r->busy = 1; /* over --max-body-memory (or out of memory): drained, then 503 */
    /* (a body that fits gets one allocation of its announced size) */
}

/* Take `n` more body bytes; MHD_NO when the connection must go (a body
 * too large even to drop). libmicrohttpd only lets a response be queued
 * before the body starts or after it ends: a body that grows over the
 * limit is read and dropped, then answered with 413, up to discard_cap()
 * bytes. */
static enum MHD_Result take_body(struct req *r, const char *data, size_t n)
{
    struct md_http *h = r->h;
    r->received += n;
    if (spooled(r)) {
        if (!r->too_big && !r->busy && spool_write(r, data, n) != 0)
            r->busy = 1;
        if (r->received > h->cfg->max_import)
            r->too_big = 1;
    } else if (!r->too_big && !r->busy) {
        if (!md_http_body_reserve(r, r->body.len + n))
            r->busy = 1;
        else if (md_buf_append(&r->body, data, n) != MD_OK)
            r->too_big = 1;
        if (r->too_big || r->busy)
            md_http_body_drop(r);
    }
    if ((r->too_big || r->busy) && r->received > discard_cap(h))
        return MHD_NO;
    return MHD_YES;
}

/* ---- headers ---- */

static void header_note(struct header_seen *hs, const char *value, size_t len)
{
    if (hs->count++ > 0)
        return;
    if (!value)
        value = "", len = 0;
    size_t a = 0, b = len;
    while (a < b && (value[a] == ' ' || value[a] == '\t'))
        a++;
    while (b > a && (value[b - 1] == ' ' || value[b - 1] == '\t'))
        b--;
    hs->value = value + a;
    hs->len = b - a;
    hs->padded = a > 0 || b < len;
}

/* A trimmed header value equals `word` (ASCII, any case). */
static int header_is(const struct header_seen *hs, const char *word)
{
    size_t n = strlen(word);
    return hs->len == n && strncasecmp(hs->value, word, n) == 0;
}

/* The headers memoryd reads, by name (the tenant header's is configured). */
static struct header_seen *header_slot(struct headers *hd, const char *key, size_t key_size)
{
    static const struct {
        const char *name;
        size_t offset;
    } known[] = {
        {MHD_HTTP_HEADER_CONTENT_LENGTH, offsetof(struct headers, content_length)},
        {MHD_HTTP_HEADER_TRANSFER_ENCODING, offsetof(struct headers, transfer_encoding)},
        {MHD_HTTP_HEADER_ACCEPT, offsetof(struct headers, accept)},
        {"If-Match", offsetof(struct headers, if_match)},
        {"If-None-Match", offsetof(struct headers, if_none_match)},
        {"Idempotency-Key", offsetof(struct headers, idempotency_key)},
        {MHD_HTTP_HEADER_AUTHORIZATION, offsetof(struct headers, authorization)},
        {"X-Memory-Actor", offsetof(struct headers, actor)},
        {"Mcp-Session-Id", offsetof(struct headers, mcp_session)},
        {"MCP-Protocol-Version", offsetof(struct headers, mcp_version)},
        {MHD_HTTP_HEADER_ORIGIN, offsetof(struct headers, origin)},
    };
    if (key_size == hd->tenant_name_len && strcasecmp(key, hd->tenant_name) == 0)
        return &hd->tenant;
    /* By length first: most headers are none of these. */
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (key_size == strlen(known[i].name) && strcasecmp(key, known[i].name) == 0)
            return (struct header_seen *)(void *)((char *)hd + known[i].offset);
    return NULL;
}

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    struct header_seen *hs = header_slot(cls, key, key_size);
    if (hs)
        header_note(hs, value, value_size);
    return MHD_YES;
}

/* A body length a proxy in front may read differently from
 * libmicrohttpd, which takes the first Content-Length and lets any
 * Transfer-Encoding win: the rest of the body would be taken for a second
 * request (request smuggling, RFC 9112 6.3), with a tenant header of its
 * own. Such a request is refused before its body is read. */
static enum MHD_Result refuse_framing(struct req *r)
{
    const struct header_seen *cl = &r->headers.content_length, *te = &r->headers.transfer_encoding;
    if (cl->count > 1)
        return md_reply_refuse(r, MD_R_CONTENT_LENGTH_TWICE);
    if (cl->count && te->count)
        return md_reply_refuse(r, MD_R_LENGTH_AND_CHUNKED);
    if (te->count > 1 || (te->count && !header_is(te, "chunked")))
        return md_reply_refuse(r, MD_R_TRANSFER_ENCODING);
    /* libmicrohttpd frames the body and takes "chunked " for an unknown
     * coding: refused rather than read differently from a proxy. */
    return md_reply_refuse(r, MD_R_CHUNKED_PADDED);
}

static int framing_ambiguous(const struct headers *hd)
{
    const struct header_seen *cl = &hd->content_length, *te = &hd->transfer_encoding;
    return cl->count > 1 || (cl->count && te->count) ||
           (te->count && (te->count > 1 || !header_is(te, "chunked") || te->padded));
}

/* ---- the request ---- */

/* The context of a new request; NULL when out of memory. */
static struct req *req_new(struct md_http *h, struct MHD_Connection *conn, const char *url,
                           const char *method)
{
    struct req *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->h = h;
    r->conn = conn;
    r->t0 = md_now_us();
    r->method = method;
    r->url = url;
    r->spool_fd = -1;
    md_buf_init(&r->body, h->limits->max_body);
    md_buf_init(&r->out, OUT_LIMIT);
    md_buf_init(&r->redacted, (size_t)64 << 20);
    r->headers.tenant_name = h->cfg->tenant_header;
    r->headers.tenant_name_len = strlen(h->cfg->tenant_header);
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, scan_header, &r->headers);
    r->want_text = md_http_wants_text(r->headers.accept.value);
    r->route = md_http_route_of(url, method, h->cfg->metrics_listen == NULL, &r->method_ok);
    r->label = r->route ? r->route->label : L_NOT_FOUND;
    r->late = atomic_load(&h->stopping);
    r->bad_framing = framing_ambiguous(&r->headers);
    const union MHD_ConnectionInfo *sc =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    r->over_cap = sc && sc->socket_context == &over_mark;
    return r;
}

/* The refusals of a whole request that come before routing; MHD_YES with
 * *done 0 when there is none. */
static enum MHD_Result refuse_early(struct req *r, int *done)
{
    struct md_http *h = r->h;
    *done = 1;
    if (r->over_cap) {
        if (r->route && r->route->envelope == ENVELOPE_TOOL)
            return md_reply_refuse(r, MD_R_CONNECTIONS_TOOL, h->cfg->max_connections_per_ip);
        return md_reply_errorf(r, MD_R_CONNECTIONS);
    }
    if (r->bad_framing)
        return refuse_framing(r);
    if (r->too_big) {
        md_http_body_drop(r);
        if (spooled(r))
            return md_reply_refuse(r, MD_R_ARCHIVE_TOO_BIG, h->cfg->max_import);
        return md_reply_refuse(r, MD_R_BODY_TOO_BIG, h->limits->max_body);
    }
    if (r->busy && spooled(r))
        return md_reply_refuse(r, MD_R_SPOOL_FAILED);
    if (r->busy)
        return md_reply_refuse(r, MD_R_BODIES_BUSY);
    *done = 0;
    return MHD_YES;
}

enum MHD_Result md_http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **req_cls)
{
    (void)version;
    struct md_http *h = cls;
    struct req *r = *req_cls;
    if (!r) {
        r = req_new(h, conn, url, method);
        if (!r)
            return MHD_NO;
        atomic_fetch_add(&h->in_flight, 1);
        *req_cls = r;
        admit_announced(r);
        /* A connection over --max-connections-per-ip is answered once its
         * request is read (its body dropped): answered at once and closed,
         * the body still arriving would make the close a reset that can
         * overtake the answer. */
        if (!r->too_big && !r->bad_framing)
            return MHD_YES;
    }
    int state = atomic_load(&r->state);
    if (state == ST_RESPONDED) {
        *upload_data_size = 0; /* discard the rest of a refused body */
        return MHD_YES;
    }
    if (state == ST_READY)
        return md_http_resumed(r);
    if (state == ST_WAITING)
        return MHD_YES;
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        return r->over_cap ? MHD_YES : take_body(r, upload_data, n);
    }
    int done;
    enum MHD_Result ret = refuse_early(r, &done);
    return done ? ret : md_http_route(r);
}

/* The request's log line. */
static void log_request(const struct req *r, uint64_t us, enum MHD_RequestTerminationCode toe)
{
    struct md_logline l;
    md_log_begin(&l, MD_LOG_INFO, "request");
    md_log_str(&l, "method", r->method);
    md_log_str(&l, "route", r->route ? r->route->path : "other");
    if (r->tenant[0])
        md_log_str(&l, "tenant", r->tenant);
    if (r->key_id[0])
        md_log_str(&l, "key_id", r->key_id);
    if (r->mcp_method)
        md_log_str(&l, "rpc_method", r->mcp_method);
    if (r->cmd.name)
        md_log_str(&l, "command", r->cmd.name);
    md_log_int(&l, "status", r->status);
    if (r->route && (r->route->envelope == ENVELOPE_TOOL ||
                     (r->route->envelope == ENVELOPE_RPC && r->cmd.name)))
        md_log_bool(&l, "is_error", r->err != MD_OK);
    md_log_int(&l, "bytes_in", (int64_t)r->received);
    md_log_int(&l, "bytes_out", (int64_t)r->bytes_out);
    if (r->job.replayed)
        md_log_bool(&l, "replayed", 1); /* an Idempotency-Key's first answer, again */
    if (r->cmd.name) {
        md_log_int(&l, "sql", (int64_t)r->cost.statements);
        if (r->cost.round_trips)
            md_log_int(&l, "round_trips", (int64_t)r->cost.round_trips);
    }
    md_log_int(&l, "us", (int64_t)us);
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        md_log_int(&l, "termination", toe);
    md_log_end(&l);
}

void md_http_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                          enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    struct md_http *h = cls;
    struct req *r = *req_cls;
    if (!r)
        return;
    *req_cls = NULL;
    /* The probes and /metrics are logged when they fail (or at debug). */
    int quiet = r->route && r->route->envelope == ENVELOPE_PLAIN;
    if (!quiet || r->status >= 400 || md_log_enabled(MD_LOG_DEBUG))
        log_request(r, md_now_us() - r->t0, toe);
    if (r->view_txn)
        md_txn_end(r->view_txn); /* fetched, never run: the client went */
    md_cmd_free(&r->cmd);
    free(r->mcp_id);
    md_http_body_drop(r);
    if (r->spool_fd >= 0)
        close(r->spool_fd);
    md_buf_free(&r->out);
    md_buf_free(&r->redacted);
    free(r);
    atomic_fetch_sub(&h->in_flight, 1);
}
