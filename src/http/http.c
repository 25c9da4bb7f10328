/*
 * http.c — libmicrohttpd front end (see md_http.h): the daemon, connections
 * and their limits, request bodies, the route table and the replies. The
 * handlers are in http_memory.c (POST /memory) and http_v1.c (the /v1 API).
 *
 * One request context per request (struct req, http_internal.h), allocated
 * on MHD's first call and freed in the completion callback. The only place
 * where enum md_err becomes an HTTP status (md_err_http_status).
 */
#include "http/md_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/md_json.h"
#include "base/md_log.h"
#include "base/md_metrics.h"
#include "http/md_connlimit.h"
#include "http/md_tenant_resolve.h"
#include "internal.h"

/* An oversized body of unannounced length is read and dropped up to this
 * many times the body limit before the connection is closed. */
#define DISCARD_FACTOR 4
#define DISCARD_FLOOR  ((size_t)64 << 20)

/* The routes: a path (or a prefix, for /v1/versions/{version}), the
 * methods it takes (the rest get 405 with this Allow), whether a body is
 * read, and the handler. */
typedef enum MHD_Result (*handler_fn)(struct req *r);
static enum MHD_Result handle_health(struct req *r);

static const struct route_def {
    const char *path;
    int prefix;
    enum route id;
    const char *allow;
    int body;
    handler_fn run;
} route_table[] = {
    {"/memory", 0, R_MEMORY, "POST", 1, md_http_memory},
    {"/healthz", 0, R_HEALTHZ, "GET, HEAD", 0, handle_health},
    {"/readyz", 0, R_READYZ, "GET, HEAD", 0, handle_health},
    {"/v1/history", 0, R_HISTORY, "GET", 0, md_http_v1},
    {"/v1/versions/", 1, R_VERSIONS, "GET", 0, md_http_v1},
    {"/v1/restore", 0, R_RESTORE, "POST", 1, md_http_v1},
    {"/v1/redact", 0, R_REDACT, "POST", 1, md_http_v1},
    {"/v1/changes", 0, R_CHANGES, "GET", 0, md_http_v1},
    {"/v1/search", 0, R_SEARCH, "GET", 0, md_http_v1},
    {"/metrics", 0, R_METRICS, "GET, HEAD", 0, md_http_metrics},
    {"/v1/tenants", 0, R_TENANTS, "GET", 0, md_http_tenants},
    {"/v1/tenants/", 1, R_TENANTS, "GET, PUT, DELETE, POST", 1, md_http_tenants},
    {"/mcp", 0, R_MCP, "POST, DELETE", 1, md_http_mcp},
};
#define NROUTES (sizeof route_table / sizeof route_table[0])

static const struct route_def *route_of(const char *url)
{
    for (size_t i = 0; i < NROUTES; i++) {
        const struct route_def *d = &route_table[i];
        size_t n = strlen(d->path);
        if (d->prefix ? strncmp(url, d->path, n) == 0 : strcmp(url, d->path) == 0)
            return d;
    }
    return NULL;
}

/* The method is one the route takes (HEAD goes with GET). */
static int method_allowed(const struct route_def *d, const char *method)
{
    if (strcmp(method, MHD_HTTP_METHOD_HEAD) == 0)
        method = strstr(d->allow, "HEAD") ? "HEAD" : "none";
    size_t n = strlen(method);
    for (const char *p = d->allow; (p = strstr(p, method)) != NULL; p += n)
        if ((p == d->allow || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

/* Socket contexts of connections counted per address: within the limit, or
 * over it (answered 503 and closed). */
static char counted_mark, over_mark;

/* Idle timeout of a connection over the per-address limit, seconds: it is
 * answered at its first request; one that sends none goes soon. */
#define OVER_CAP_TIMEOUT 2

/* Most body bytes read and dropped before a connection is closed. */
static size_t discard_cap(const struct md_http *h)
{
    size_t limit = h->cfg->limits.max_body;
    size_t cap = limit > SIZE_MAX / DISCARD_FACTOR ? SIZE_MAX : limit * DISCARD_FACTOR;
    return cap > DISCARD_FLOOR ? cap : DISCARD_FLOOR;
}

/* Count the request's body as `total` bytes against --max-body-memory
 * (a body announced by Content-Length is counted whole before it is read,
 * so a request is admitted or refused at once; a chunked one as it grows).
 * 0 when it does not fit (nothing more counted then). */
static int body_reserve(struct req *r, size_t total)
{
    if (total <= r->reserved)
        return 1;
    struct md_http *h = r->h;
    size_t n = total - r->reserved;
    size_t cap = h->cfg->max_body_memory;
    if (n > cap)
        return 0;
    size_t cur = atomic_load(&h->body_bytes);
    do {
        if (cur > cap - n)
            return 0;
    } while (!atomic_compare_exchange_weak(&h->body_bytes, &cur, cur + n));
    r->reserved += n;
    return 1;
}

void md_http_body_drop(struct req *r)
{
    md_buf_free(&r->body);
    atomic_fetch_sub(&r->h->body_bytes, r->reserved);
    r->reserved = 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

int md_http_is_import(const char *url)
{
    return ends_with(url, "/import");
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

uint64_t md_http_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- Accept negotiation ---- */

/* q of the best-matching media range for type/sub in an Accept value. */
static double accept_q(const char *accept, const char *type, const char *sub)
{
    double best = -1;
    int best_spec = -1;
    const char *p = accept;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *start = p;
        while (*p && *p != ',')
            p++;
        const char *end = p;
        const char *semi = memchr(start, ';', (size_t)(end - start));
        const char *mend = semi ? semi : end;
        while (mend > start && (mend[-1] == ' ' || mend[-1] == '\t'))
            mend--;
        const char *slash = memchr(start, '/', (size_t)(mend - start));
        if (!slash)
            continue;
        size_t tl = (size_t)(slash - start), sl = (size_t)(mend - slash - 1);
        int spec;
        if (tl == 1 && *start == '*' && sl == 1 && slash[1] == '*')
            spec = 0;
        else if (tl == strlen(type) && strncasecmp(start, type, tl) == 0 && sl == 1 &&
                 slash[1] == '*')
            spec = 1;
        else if (tl == strlen(type) && strncasecmp(start, type, tl) == 0 && sl == strlen(sub) &&
                 strncasecmp(slash + 1, sub, sl) == 0)
            spec = 2;
        else
            continue;
        double q = 1;
        /* Parameters: ";q=0.5" (others ignored). */
        for (const char *a = semi; a;) {
            a++;
            while (a < end && (*a == ' ' || *a == '\t'))
                a++;
            if (a + 1 < end && (a[0] == 'q' || a[0] == 'Q') && a[1] == '=')
                q = strtod(a + 2, NULL);
            a = a < end ? memchr(a, ';', (size_t)(end - a)) : NULL;
        }
        if (spec > best_spec) {
            best_spec = spec;
            best = q;
        }
    }
    return best;
}

int md_http_wants_openmetrics(const char *accept)
{
    if (!accept || !*accept)
        return 0;
    /* Named: a wildcard alone keeps the Prometheus text format. */
    static const char name[] = "application/openmetrics-text";
    int named = 0;
    for (const char *p = accept; *p && !named; p++)
        named = strncasecmp(p, name, sizeof name - 1) == 0;
    double om = accept_q(accept, "application", "openmetrics-text");
    return named && om > 0 && om >= accept_q(accept, "text", "plain");
}

int md_http_wants_text(const char *accept)
{
    if (!accept || !*accept)
        return 0;
    double text = accept_q(accept, "text", "plain");
    double json = accept_q(accept, "application", "json");
    return text > 0 && text > json;
}

/* ---- responses ---- */

enum MHD_Result md_http_queue_response(struct req *r, unsigned status, struct MHD_Response *resp,
                                       const char *type, size_t len, int is_error,
                                       const char *const *extra)
{
    int close_conn =
        r->too_big || r->refuse != NULL || r->over_cap ||
        (atomic_load(&r->h->stopping) && r->route != R_HEALTHZ && r->route != R_READYZ);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (is_error >= 0)
        MHD_add_response_header(resp, "X-Memory-Is-Error", is_error ? "true" : "false");
    if (status == 503)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (status == 401)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (status == 429) {
        char secs[16];
        snprintf(secs, sizeof secs, "%u", r->retry_after ? r->retry_after : 1);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, secs);
    }
    int own_allow = 0; /* a handler that tells the methods of a path itself */
    for (const char *const *x = extra; x && x[0]; x += 2)
        own_allow |= strcmp(x[0], MHD_HTTP_HEADER_ALLOW) == 0;
    if (status == 405 && !own_allow) {
        const struct route_def *d = route_of(r->url);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, d ? d->allow : "GET");
    }
    for (; extra && extra[0]; extra += 2)
        MHD_add_response_header(resp, extra[0], extra[1]);
    if (close_conn)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    r->status = status;
    r->bytes_out = len;
    atomic_store(&r->state, ST_RESPONDED);
    return ret;
}

enum MHD_Result md_http_queue(struct req *r, unsigned status, const char *type, char *body,
                              size_t len, int is_error, const char *const *extra)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer_with_free_callback(len, body, free);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    return md_http_queue_response(r, status, resp, type, len, is_error, extra);
}

static enum MHD_Result respond_plain_json(struct req *r, unsigned status, const char *json)
{
    size_t len = strlen(json);
    char *body = malloc(len + 1);
    if (!body)
        return MHD_NO;
    memcpy(body, json, len + 1);
    return md_http_queue(r, status, "application/json", body, len, -1, NULL);
}

enum MHD_Result md_http_reply_json(struct req *r, unsigned status, struct md_buf *json)
{
    size_t len;
    char *body = md_buf_take(json, &len);
    if (!body)
        return MHD_NO;
    return md_http_queue(r, status, "application/json", body, len, -1, NULL);
}

enum MHD_Result md_http_reply_error(struct req *r, enum md_err err, const char *text, size_t len)
{
    static const char prefix[] = "Error: ";
    if (len >= sizeof prefix - 1 && memcmp(text, prefix, sizeof prefix - 1) == 0) {
        text += sizeof prefix - 1;
        len -= sizeof prefix - 1;
    }
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    if (md_buf_puts(&json, "{\"error\":") || md_json_put_string(&json, text, len) ||
        md_buf_putc(&json, '}')) {
        md_buf_free(&json);
        return MHD_NO;
    }
    size_t n;
    char *body = md_buf_take(&json, &n);
    if (!body)
        return MHD_NO;
    /* A refusal kept for an Idempotency-Key, answered again. */
    static const char *const replayed[] = {"Idempotent-Replayed", "true", NULL};
    return md_http_queue(r, md_err_http_status(err), "application/json", body, n, -1,
                         r->job.replayed ? replayed : NULL);
}

/* A refusal before the handler runs: a tool_result for /memory, else
 * {"error": ...}. */
static enum MHD_Result refuse(struct req *r, enum md_err err, const char *text)
{
    if (r->route == R_MCP)
        return md_http_mcp_refuse(r, err, text, strlen(text));
    if (r->route != R_MEMORY)
        return md_http_reply_error(r, err, text, strlen(text));
    r->err = err;
    md_buf_reset(&r->out);
    md_buf_puts(&r->out, text);
    return md_http_reply_result(r, md_err_http_status(err));
}

int md_http_tenant(struct req *r, enum MHD_Result *ret)
{
    if (r->tenant[0])
        return 0;
    const struct header_seen *th = &r->headers.tenant;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    struct md_buf msg;
    md_buf_init(&msg, OUT_LIMIT);
    enum md_err e = md_tenant_resolve(r->h->cfg, ci ? ci->client_addr : NULL, th->count, th->value,
                                      th->len, r->tenant, &msg);
    if (e) {
        r->tenant[0] = '\0';
        if (r->route == R_MEMORY) {
            r->err = e;
            md_buf_free(&r->out);
            r->out = msg;
            *ret = md_http_reply_result(r, md_err_http_status(e));
        } else if (r->route == R_MCP) {
            *ret = md_http_mcp_refuse(r, e, msg.data ? msg.data : "", msg.len);
            md_buf_free(&msg);
        } else {
            *ret = md_http_reply_error(r, e, msg.data ? msg.data : "", msg.len);
            md_buf_free(&msg);
        }
        return -1;
    }
    md_buf_free(&msg);
    return 0;
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

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    struct headers *hd = cls;
    /* By length first: most headers are none of these. */
    if (key_size == hd->tenant_name_len && strcasecmp(key, hd->tenant_name) == 0)
        header_note(&hd->tenant, value, value_size);
    else if (key_size == sizeof MHD_HTTP_HEADER_CONTENT_LENGTH - 1 &&
             strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
        header_note(&hd->content_length, value, value_size);
    else if (key_size == sizeof MHD_HTTP_HEADER_TRANSFER_ENCODING - 1 &&
             strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
        header_note(&hd->transfer_encoding, value, value_size);
    else if (key_size == sizeof MHD_HTTP_HEADER_ACCEPT - 1 &&
             strcasecmp(key, MHD_HTTP_HEADER_ACCEPT) == 0)
        header_note(&hd->accept, value, value_size);
    else if (key_size == 8 && strcasecmp(key, "If-Match") == 0)
        header_note(&hd->if_match, value, value_size);
    else if (key_size == 13 && strcasecmp(key, "If-None-Match") == 0)
        header_note(&hd->if_none_match, value, value_size);
    else if (key_size == 15 && strcasecmp(key, "Idempotency-Key") == 0)
        header_note(&hd->idempotency_key, value, value_size);
    else if (key_size == sizeof MHD_HTTP_HEADER_AUTHORIZATION - 1 &&
             strcasecmp(key, MHD_HTTP_HEADER_AUTHORIZATION) == 0)
        header_note(&hd->authorization, value, value_size);
    else if (key_size == 14 && strcasecmp(key, "X-Memory-Actor") == 0)
        header_note(&hd->actor, value, value_size);
    else if (key_size == 14 && strcasecmp(key, "Mcp-Session-Id") == 0)
        header_note(&hd->mcp_session, value, value_size);
    else if (key_size == 20 && strcasecmp(key, "MCP-Protocol-Version") == 0)
        header_note(&hd->mcp_version, value, value_size);
    else if (key_size == 6 && strcasecmp(key, MHD_HTTP_HEADER_ORIGIN) == 0)
        header_note(&hd->origin, value, value_size);
    return MHD_YES;
}

/* A body length a proxy in front may read differently from
 * libmicrohttpd, which takes the first Content-Length and lets any
 * Transfer-Encoding win: the rest of the body would be taken for a second
 * request (request smuggling, RFC 9112 6.3), with a tenant header of its
 * own. Such a request is refused before its body is read. */
static const char *framing_error(const struct headers *hd)
{
    const struct header_seen *cl = &hd->content_length, *te = &hd->transfer_encoding;
    if (cl->count > 1)
        return "Error: The Content-Length header was sent more than once";
    if (cl->count && te->count)
        return "Error: A request must not have both Content-Length and Transfer-Encoding";
    if (te->count > 1 || (te->count && !header_is(te, "chunked")))
        return "Error: Unsupported Transfer-Encoding: only chunked is accepted";
    /* libmicrohttpd frames the body and takes "chunked " for an unknown
     * coding: refused rather than read differently from a proxy. */
    if (te->count && te->padded)
        return "Error: The Transfer-Encoding header has whitespace after `chunked`, which this "
               "server cannot read as chunked; send exactly `Transfer-Encoding: chunked`";
    return NULL;
}

/* ---- MHD callbacks ---- */

static enum MHD_Result handle_health(struct req *r)
{
    struct md_http *h = r->h;
    if (r->route == R_HEALTHZ)
        return respond_plain_json(r, 200, "{\"status\":\"ok\"}");
    if (atomic_load(&h->stopping))
        return respond_plain_json(r, 503, "{\"status\":\"shutting down\"}");
    if (md_store_ping(h->store) != MD_OK)
        return respond_plain_json(r, 503, "{\"status\":\"storage unavailable\"}");
    return respond_plain_json(r, 200, "{\"status\":\"ready\"}");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)version;
    struct md_http *h = cls;
    struct req *r = *req_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        r->h = h;
        r->conn = conn;
        r->t0 = md_http_now_us();
        const struct route_def *def = route_of(url);
        if (def && def->id == R_METRICS && h->cfg->metrics_listen)
            def = NULL; /* on its own port */
        r->route = def ? def->id : R_OTHER;
        r->method = method;
        r->url = url;
        md_buf_init(&r->body, h->cfg->limits.max_body);
        md_buf_init(&r->out, OUT_LIMIT);
        r->headers.tenant_name = h->cfg->tenant_header;
        r->headers.tenant_name_len = strlen(h->cfg->tenant_header);
        MHD_get_connection_values_n(conn, MHD_HEADER_KIND, scan_header, &r->headers);
        r->want_text = md_http_wants_text(r->headers.accept.value);
        atomic_fetch_add(&h->in_flight, 1);
        r->late = atomic_load(&h->stopping);
        *req_cls = r;
        r->spool_fd = -1;
        if (def && def->id == R_TENANTS && strcmp(method, MHD_HTTP_METHOD_POST) == 0 &&
            md_http_is_import(url)) {
            /* An import's tar goes to a temporary file, not memory. */
            const char *cl = r->headers.content_length.value;
            r->spool = 1;
            if (cl && strtoull(cl, NULL, 10) > h->cfg->max_import)
                r->too_big = 1;
        } else if (def && def->body &&
                   (strcmp(method, MHD_HTTP_METHOD_POST) == 0 ||
                    strcmp(method, MHD_HTTP_METHOD_PUT) == 0)) {
            const char *cl = r->headers.content_length.value;
            /* An announced body over the limit is still read (and
             * dropped) so that the client, busy sending it, reliably sees
             * the 413; only a body too large even to drop is refused at
             * once, before it is read. */
            unsigned long long announced = cl ? strtoull(cl, NULL, 10) : 0;
            if (announced > discard_cap(h))
                r->too_big = 1;
            else if (announced <= h->cfg->limits.max_body &&
                     (!body_reserve(r, announced) ||
                      (announced > 0 && md_buf_reserve(&r->body, (size_t)announced) != MD_OK)))
                r->busy = 1; /* over --max-body-memory (or out of memory): drained, then 503 */
            /* (a body that fits gets one allocation of its announced size) */
        }
        r->refuse = framing_error(&r->headers);
        const union MHD_ConnectionInfo *sc =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        r->over_cap = sc && sc->socket_context == &over_mark;
        if (!r->too_big && !r->refuse && !r->over_cap)
            return MHD_YES;
    }

    int state = atomic_load(&r->state);
    if (state == ST_RESPONDED) {
        *upload_data_size = 0; /* discard the rest of a refused body */
        return MHD_YES;
    }
    if (state == ST_READY && r->view_fetched)
        md_http_view_resumed(r);
    if (state == ST_READY)
        return r->route == R_MEMORY    ? md_http_reply_result(r, md_err_http_status(r->err))
               : r->route == R_MCP     ? md_http_mcp_tool_answer(r)
               : r->route == R_TENANTS ? md_http_tenants(r)
                                       : md_http_v1(r);
    if (state == ST_WAITING)
        return MHD_YES;

    if (*upload_data_size > 0) {
        /* libmicrohttpd only lets a response be queued before the body
         * starts or after it ends: a body that grows over the limit is read
         * and dropped, then answered with 413, up to discard_cap() bytes,
         * beyond which the connection is closed. */
        size_t n = *upload_data_size;
        r->received += n;
        *upload_data_size = 0;
        if (r->spool) {
            if (!r->too_big && !r->busy && spool_write(r, upload_data, n) != 0)
                r->busy = 1;
            if (r->received > h->cfg->max_import)
                r->too_big = 1;
        } else if (!r->too_big && !r->busy) {
            if (!body_reserve(r, r->body.len + n))
                r->busy = 1;
            else if (md_buf_append(&r->body, upload_data, n) != MD_OK)
                r->too_big = 1;
            if (r->too_big || r->busy)
                md_http_body_drop(r);
        }
        if ((r->too_big || r->busy) && r->received > discard_cap(h))
            return MHD_NO;
        return MHD_YES;
    }

    if (r->over_cap) {
        if (r->route != R_MEMORY)
            return respond_plain_json(r, 503,
                                      "{\"error\":\"too many connections from this address\"}");
        md_buf_reset(&r->out);
        md_buf_printf(&r->out,
                      "Error: Too many connections from your address (the limit is %u); the "
                      "command was not applied. Retry shortly.",
                      h->cfg->max_connections_per_ip);
        r->err = MD_EBUSY;
        return md_http_reply_result(r, 503);
    }
    if (r->refuse)
        return refuse(r, MD_EINVAL, r->refuse);
    if (r->too_big) {
        md_http_body_drop(r);
        char text[128];
        if (r->spool)
            snprintf(text, sizeof text,
                     "Error: The archive exceeds the import limit of %zu bytes (--max-import)",
                     h->cfg->max_import);
        else
            snprintf(text, sizeof text, "Error: The request body exceeds the limit of %zu bytes",
                     h->cfg->limits.max_body);
        return refuse(r, MD_ETOOBIG, text);
    }
    if (r->busy && r->spool)
        return refuse(r, MD_EUNAVAIL,
                      "Error: memoryd cannot keep the archive while it is read (a temporary file "
                      "in $TMPDIR could not be written); nothing was imported. Retry later.");
    if (r->busy)
        return refuse(r, MD_EBUSY,
                      "Error: memoryd is busy: too many request bodies are being received at "
                      "once; the command was not applied. Retry shortly.");

    const struct route_def *def = r->route == R_OTHER ? NULL : route_of(url);
    if (!def)
        return respond_plain_json(r, 404,
                                  "{\"error\":\"not found: use POST /memory, GET /healthz, GET "
                                  "/readyz or the /v1 API (see openapi.yaml)\"}");
    if (!method_allowed(def, method)) {
        if (r->route == R_MEMORY)
            return refuse(r, MD_EMETHOD, "Error: Use POST /memory with a JSON memory command");
        return respond_plain_json(r, 405, "{\"error\":\"method not allowed\"}");
    }
    enum MHD_Result auth_ret;
    if (def->id != R_HEALTHZ && def->id != R_READYZ && def->id != R_METRICS &&
        md_http_authenticate(r, &auth_ret) != 0)
        return auth_ret;
    return def->run(r);
}

/* The `command` label of a request's metrics. */
static enum md_metric_cmd metric_cmd(const struct req *r)
{
    static const enum md_metric_cmd by_route[] = {
        [R_MEMORY] = MD_MC_UNKNOWN,  [R_HEALTHZ] = MD_MC_HEALTHZ,   [R_READYZ] = MD_MC_READYZ,
        [R_HISTORY] = MD_MC_HISTORY, [R_VERSIONS] = MD_MC_VERSIONS, [R_RESTORE] = MD_MC_RESTORE,
        [R_REDACT] = MD_MC_REDACT,   [R_CHANGES] = MD_MC_CHANGES,   [R_METRICS] = MD_MC_METRICS,
        [R_TENANTS] = MD_MC_QUOTA,   [R_SEARCH] = MD_MC_SEARCH,     [R_MCP] = MD_MC_MCP,
        [R_OTHER] = MD_MC_NOT_FOUND,
    };
    /* The listing, erasure, export and import of tenants (the rest of
     * /v1/tenants: quota), refused or not. */
    if (r->route == R_TENANTS &&
        (strcmp(r->url, "/v1/tenants") == 0 || strcmp(r->method, MHD_HTTP_METHOD_DELETE) == 0 ||
         md_http_is_import(r->url) || ends_with(r->url, "/export")))
        return MD_MC_ADMIN;
    /* The memory tool's commands are MD_MC_VIEW.. in md_cmd_kind's order. */
    if ((r->route == R_MEMORY || r->route == R_MCP) && r->cmd.name &&
        r->cmd.kind < MD_CMD_TOOL_COUNT)
        return (enum md_metric_cmd)((int)MD_MC_VIEW + (int)r->cmd.kind);
    return (unsigned)r->route < sizeof by_route / sizeof by_route[0] ? by_route[r->route]
                                                                     : MD_MC_NOT_FOUND;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    struct md_http *h = cls;
    struct req *r = *req_cls;
    if (!r)
        return;
    *req_cls = NULL;
    uint64_t us = md_http_now_us() - r->t0;
    if (r->status)
        md_metrics_request(metric_cmd(r), r->status, us, r->tenant);
    if ((r->route != R_HEALTHZ && r->route != R_READYZ && r->route != R_METRICS) ||
        r->status >= 400 || md_log_enabled(MD_LOG_DEBUG)) {
        struct md_logline l;
        md_log_begin(&l, MD_LOG_INFO, "request");
        md_log_str(&l, "method", r->method);
        const struct route_def *def = r->route == R_OTHER ? NULL : route_of(r->url);
        md_log_str(&l, "route", def ? def->path : "other");
        if (r->tenant[0])
            md_log_str(&l, "tenant", r->tenant);
        if (r->key_id[0])
            md_log_str(&l, "key_id", r->key_id);
        if (r->mcp_method)
            md_log_str(&l, "rpc_method", r->mcp_method);
        if (r->cmd.name)
            md_log_str(&l, "command", r->cmd.name);
        md_log_int(&l, "status", r->status);
        if (r->route == R_MEMORY || (r->route == R_MCP && r->cmd.name))
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
    if (r->view_txn)
        md_txn_end(r->view_txn); /* fetched, never run: the client went */
    md_cmd_free(&r->cmd);
    free(r->mcp_id);
    md_http_body_drop(r);
    if (r->spool_fd >= 0)
        close(r->spool_fd);
    md_buf_free(&r->out);
    free(r);
    atomic_fetch_sub(&h->in_flight, 1);
}

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
    if (!conn_limited(h, addr) || md_connlimit_allowed(h->conns, addr))
        return MHD_YES;
    md_metrics_refused(MD_MR_PER_ADDRESS);
    long long sec = (long long)(md_http_now_us() / 1000000u);
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
            *socket_ctx = over ? &over_mark : &counted_mark;
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

/* libmicrohttpd's message as a log line; `public_port`: counts the
 * connections it closes at --max-connections. */
static void mhd_log_line(const char *fmt, va_list ap, int public_port)
{
    char text[512];
    vsnprintf(text, sizeof text, fmt, ap);
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
        text[--n] = '\0';
    /* libmicrohttpd closes a connection over MHD_OPTION_CONNECTION_LIMIT
     * itself; this message is the only sign of it. */
    static const char limit[] = "Server reached connection limit";
    if (public_port && strncmp(text, limit, sizeof limit - 1) == 0)
        md_metrics_refused(MD_MR_GLOBAL);
    md_log_msg(MD_LOG_WARN, "libmicrohttpd", text);
}

void md_http_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    mhd_log_line(fmt, ap, 0);
}

static void mhd_log_public(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    mhd_log_line(fmt, ap, 1);
}

struct md_http *md_http_start(const struct md_config *cfg, struct md_store *store,
                              struct md_writer *writer, char *why, size_t why_len)
{
    struct md_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    h->cfg = cfg;
    h->store = store;
    h->writer = writer;
    h->quiesced_fd = MHD_INVALID_SOCKET;
    md_metrics_init(cfg->metrics_tenant_labels);
    h->conns = md_connlimit_new(cfg->max_connections_per_ip);
    if (!h->conns || md_http_waiters_start(h) != 0) {
        snprintf(why, why_len, "out of memory, or cannot start a thread");
        md_connlimit_free(h->conns);
        free(h);
        return NULL;
    }
    if (md_http_auth_start(h, why, why_len) != 0 || md_http_mcp_start(h, why, why_len) != 0) {
        md_http_auth_stop(h);
        md_http_waiters_stop(h);
        md_connlimit_free(h->conns);
        free(h);
        return NULL;
    }

    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, cfg->listen, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)cfg->port);
    } else if (inet_pton(AF_INET6, cfg->listen, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)cfg->port);
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(why, why_len,
                 "cannot parse listen address '%s' (expected an IPv4 or IPv6 address)",
                 cfg->listen);
        md_http_waiters_stop(h);
        md_http_auth_stop(h);
        md_http_mcp_stop(h);
        md_connlimit_free(h->conns);
        free(h);
        return NULL;
    }
    struct MHD_OptionItem list[16];
    size_t n = 0;
    list[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log_public, NULL};
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
    list[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h};
    list[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h};
    list[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    h->d = MHD_start_daemon(flags, 0, on_accept, h, on_request, h, MHD_OPTION_ARRAY, list,
                            MHD_OPTION_END);
    if (!h->d) {
        snprintf(why, why_len, "cannot listen on %s port %u (in use, or not allowed)", cfg->listen,
                 cfg->port);
        md_http_waiters_stop(h);
        md_http_auth_stop(h);
        md_http_mcp_stop(h);
        md_connlimit_free(h->conns);
        free(h);
        return NULL;
    }
    if (md_http_metrics_start(h, why, why_len) != 0) {
        MHD_stop_daemon(h->d);
        md_http_waiters_stop(h);
        md_http_auth_stop(h);
        md_http_mcp_stop(h);
        md_connlimit_free(h->conns);
        free(h);
        return NULL;
    }
    /* The change feed's waiters hear of every commit: this process's (the
     * writer's hook) and, on a shared database, the others' (the store). */
    md_writer_on_commit(writer, md_http_changes_committed, h);
    if (md_store_watch(store, md_http_changes_heard, h) != MD_OK)
        md_log_msg(MD_LOG_WARN, "cannot hear other instances' changes", NULL);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : cfg->port;
    return h;
}

unsigned md_http_port(const struct md_http *h)
{
    return h->port;
}

void md_http_quiesce(struct md_http *h)
{
    atomic_store(&h->stopping, 1);
    h->quiesced_fd = MHD_quiesce_daemon(h->d);
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
    if (!h)
        return;
    md_store_watch(h->store, NULL, NULL);
    md_http_waiters_stop(h);
    md_http_metrics_stop(h);
    MHD_stop_daemon(h->d);
    if (h->quiesced_fd != MHD_INVALID_SOCKET)
        close(h->quiesced_fd);
    md_http_auth_stop(h);
    md_http_mcp_stop(h);
    md_connlimit_free(h->conns);
    free(h);
}
