/*
 * reply.c — every response of the HTTP front leaves through here (see
 * internal.h): the envelope comes from the route's row (md_routes.def), the
 * status from the error's row (md_errors.def), and md_reply_queue is the one
 * place a response is queued (MHD_queue_response) and the request counted
 * in the metrics (before the client can have read the answer, so that a
 * scrape made after it counts it).
 *
 * Envelopes: TOOL, a tool_result (JSON, or text/plain when the Accept
 * header prefers it; X-Memory-Is-Error, ETag, Idempotent-Replayed); RPC, a
 * JSON-RPC 2.0 object; JSON, a JSON document or {"error": text}; PLAIN, the
 * route's own body (probes, metrics).
 *
 * Ownership: a function that takes a md_buf takes its data (md_buf_take);
 * texts are borrowed. Every function returns libmicrohttpd's result: MHD_NO
 * when no response could be made (out of memory), and the connection goes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_clock.h"
#include "base/md_json.h"
#include "base/md_metrics.h"
#include "internal.h"

static const char json_type[] = "application/json";
static const char text_type[] = "text/plain; charset=utf-8";

/* The request is over: count it (the memory tool's commands by name; on
 * the metrics port, only its scrapes). */
static void count(struct req *r, unsigned status)
{
    if (r->metrics_port && status != 200)
        return;
    enum metric_label l = r->label;
    if (r->route && (r->route->envelope == ENVELOPE_TOOL || r->route->envelope == ENVELOPE_RPC) &&
        r->cmd.name && r->cmd.kind < MD_CMD_TOOL_COUNT)
        l = (enum metric_label)r->cmd.kind; /* the first labels are the tool's commands */
    md_metrics_request((unsigned)l, status, md_now_us() - r->t0, r->tenant);
}

enum MHD_Result md_reply_queue(struct req *r, unsigned status, struct MHD_Response *resp,
                               const char *type, size_t len, const char *const *extra)
{
    int probe = r->route && (r->route->id == R_HEALTHZ || r->route->id == R_HEALTHZ_HEAD ||
                             r->route->id == R_READYZ || r->route->id == R_READYZ_HEAD);
    int close_conn = r->too_big || r->bad_framing || r->over_cap ||
                     (!r->metrics_port && atomic_load(&r->h->stopping) && !probe);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == 503)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (status == 401)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (status == 429) {
        char secs[16];
        snprintf(secs, sizeof secs, "%u", r->retry_after ? r->retry_after : 1);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, secs);
    }
    if (status == 405 && r->allow[0])
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
    for (; extra && extra[0]; extra += 2)
        MHD_add_response_header(resp, extra[0], extra[1]);
    if (close_conn)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    r->status = status;
    r->bytes_out = len;
    count(r, status);
    enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    atomic_store(&r->state, ST_RESPONDED);
    return ret;
}

enum MHD_Result md_reply_body(struct req *r, unsigned status, const char *type, struct md_buf *b,
                              const char *const *extra)
{
    size_t len;
    char *body = md_buf_take(b, &len);
    if (!body)
        return MHD_NO;
    struct MHD_Response *resp = MHD_create_response_from_buffer_with_free_callback(len, body, free);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    return md_reply_queue(r, status, resp, type, len, extra);
}

enum MHD_Result md_reply_json(struct req *r, unsigned status, struct md_buf *json)
{
    return md_reply_body(r, status, json_type, json, NULL);
}

enum MHD_Result md_reply_empty(struct req *r, unsigned status)
{
    struct md_buf none;
    md_buf_init(&none, 1);
    return md_reply_body(r, status, json_type, &none, NULL);
}

/* Without a leading "Error: ", as answers to programs are. */
static void strip_error_prefix(const char **text, size_t *len)
{
    static const char prefix[] = "Error: ";
    if (*len >= sizeof prefix - 1 && memcmp(*text, prefix, sizeof prefix - 1) == 0) {
        *text += sizeof prefix - 1;
        *len -= sizeof prefix - 1;
    }
}

/* A refusal kept for an Idempotency-Key and answered again says so. */
static const char *const replayed_header[] = {"Idempotent-Replayed", "true", NULL};

enum MHD_Result md_reply_error(struct req *r, enum md_err err, const char *text, size_t len)
{
    strip_error_prefix(&text, &len);
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    if (md_buf_puts(&json, "{\"error\":") || md_json_put_string(&json, text, len) ||
        md_buf_putc(&json, '}')) {
        md_buf_free(&json);
        return MHD_NO;
    }
    return md_reply_body(r, md_err_http_status(err), json_type, &json,
                         r->job.replayed ? replayed_header : NULL);
}

/* A refusal's text, formatted into `text` (initialised here): 0, or -1
 * when it does not fit in memory (`text` freed). */
static int format_text(struct md_buf *text, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static int format_text(struct md_buf *text, const char *fmt, va_list ap)
{
    md_buf_init(text, OUT_LIMIT);
    if (md_buf_vprintf(text, fmt, ap) == MD_OK)
        return 0;
    md_buf_free(text);
    return -1;
}

enum MHD_Result md_reply_errorf(struct req *r, enum md_err err, const char *fmt, ...)
{
    struct md_buf text;
    va_list ap;
    va_start(ap, fmt);
    int bad = format_text(&text, fmt, ap);
    va_end(ap);
    if (bad)
        return MHD_NO;
    enum MHD_Result ret = md_reply_error(r, err, text.data ? text.data : "", text.len);
    md_buf_free(&text);
    return ret;
}

/* ---- JSON-RPC (the MCP endpoint) ---- */

/* `{"jsonrpc":"2.0","id":<the request's id, or null>,` into `b`. */
static enum md_err rpc_head(struct md_buf *b, const struct req *r)
{
    enum md_err e = md_buf_puts(b, "{\"jsonrpc\":\"2.0\",\"id\":");
    if (!e)
        e = md_buf_puts(b, r->mcp_id ? r->mcp_id : "null");
    if (!e)
        e = md_buf_putc(b, ',');
    return e;
}

static enum MHD_Result rpc_error_text(struct req *r, enum md_err err, int code, const char *msg,
                                      size_t len)
{
    strip_error_prefix(&msg, &len);
    struct md_buf b;
    md_buf_init(&b, OUT_LIMIT);
    enum md_err e = rpc_head(&b, r);
    if (!e)
        e = md_buf_printf(&b, "\"error\":{\"code\":%d,\"message\":", code);
    if (!e)
        e = md_json_put_string(&b, msg, len);
    if (!e)
        e = md_buf_puts(&b, "}}");
    if (e) {
        md_buf_free(&b);
        return MHD_NO;
    }
    return md_reply_body(r, md_err_http_status(err), json_type, &b, NULL);
}

enum MHD_Result md_reply_rpc_error(struct req *r, enum md_err err, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
    return rpc_error_text(r, err, code, msg, len);
}

enum MHD_Result md_reply_rpc_result(struct req *r, const char *result, size_t len,
                                    const char *const *extra)
{
    struct md_buf b;
    md_buf_init(&b, OUT_LIMIT);
    enum md_err e = rpc_head(&b, r);
    if (!e)
        e = md_buf_puts(&b, "\"result\":");
    if (!e)
        e = md_buf_append(&b, result, len);
    if (!e)
        e = md_buf_putc(&b, '}');
    if (e) {
        md_buf_free(&b);
        return MHD_NO;
    }
    return md_reply_body(r, 200, json_type, &b, extra);
}

/* A tool call's answer: r->out as the result's text content, isError when
 * r->err is set. */
static enum MHD_Result rpc_tool_answer(struct req *r)
{
    struct md_buf b;
    md_buf_init(&b, OUT_LIMIT);
    md_buf_reserve(&b, r->out.len + r->out.len / 8 + 128);
    enum md_err e = rpc_head(&b, r);
    if (!e)
        e = md_buf_puts(&b, "\"result\":{\"content\":[{\"type\":\"text\",\"text\":");
    if (!e)
        e = md_json_put_string(&b, r->out.data ? r->out.data : "", r->out.len);
    if (!e)
        e = md_buf_puts(&b, r->err != MD_OK ? "}],\"isError\":true}}" : "}],\"isError\":false}}");
    if (e) {
        md_buf_free(&b);
        return MHD_NO;
    }
    return md_reply_body(r, 200, json_type, &b, NULL);
}

/* ---- the tool_result (POST /memory) ---- */

static enum MHD_Result tool_result(struct req *r, unsigned status)
{
    int is_error = r->err != MD_OK;
    char etag[MD_ETAG_LEN + 1];
    const struct md_cmd_result *res = &r->job.res;
    int with_etag = !is_error && res->has_etag && !r->job.replayed;
    if (with_etag)
        md_etag_format(res->etag, etag);
    const char *extra[7] = {"X-Memory-Is-Error", is_error ? "true" : "false", NULL};
    size_t x = 2;
    if (with_etag) {
        extra[x++] = MHD_HTTP_HEADER_ETAG;
        extra[x++] = etag;
    }
    if (r->job.replayed) {
        extra[x++] = "Idempotent-Replayed";
        extra[x++] = "true";
    }
    if (r->want_text)
        return md_reply_body(r, status, text_type, &r->out, extra);
    struct md_buf json;
    md_buf_init(&json, OUT_LIMIT);
    /* One allocation: the text, its escapes (a newline per line or so), the envelope. */
    md_buf_reserve(&json, r->out.len + r->out.len / 8 + 96 + r->cmd.tool_use_id.n + MD_ETAG_LEN);
    const struct md_str *id = &r->cmd.tool_use_id;
    enum md_err e = md_json_tool_result(&json, id->p, id->n, r->out.data ? r->out.data : "",
                                        r->out.len, is_error);
    /* A view of a file carries its ETag in the JSON too, unless a tool_use
     * block was sent: then the answer is a tool_result block ready to go
     * back to the Messages API, which takes no other key. */
    if (!e && with_etag && r->cmd.kind == MD_CMD_VIEW && !r->cmd.tool_use_id.p) {
        json.len--; /* the closing brace */
        e = md_buf_puts(&json, ",\"etag\":");
        if (!e)
            e = md_json_put_string(&json, etag, strlen(etag));
        if (!e)
            e = md_buf_putc(&json, '}');
    }
    if (e) {
        md_buf_free(&json);
        return MHD_NO;
    }
    return md_reply_body(r, status, json_type, &json, extra);
}

/* ---- refusals and results ---- */

enum MHD_Result md_reply_refuse(struct req *r, enum md_err err, const char *fmt, ...)
{
    struct md_buf text;
    va_list ap;
    va_start(ap, fmt);
    int bad = format_text(&text, fmt, ap);
    va_end(ap);
    if (bad)
        return MHD_NO;
    enum route_envelope env = r->route ? r->route->envelope : ENVELOPE_JSON;
    enum MHD_Result ret;
    if (env == ENVELOPE_TOOL) {
        r->err = err;
        md_buf_free(&r->out);
        r->out = text;
        return tool_result(r, md_err_http_status(err));
    }
    if (env == ENVELOPE_RPC)
        ret = rpc_error_text(r, err, MD_RPC_SERVER_ERROR, text.data ? text.data : "", text.len);
    else
        ret = md_reply_error(r, err, text.data ? text.data : "", text.len);
    md_buf_free(&text);
    return ret;
}

enum MHD_Result md_reply_result(struct req *r)
{
    switch (r->route ? r->route->envelope : ENVELOPE_JSON) {
    case ENVELOPE_TOOL:
        return tool_result(r, md_err_http_status(r->err));
    case ENVELOPE_RPC:
        return rpc_tool_answer(r);
    default:
        if (r->err != MD_OK)
            return md_reply_error(r, r->err, r->out.data ? r->out.data : "", r->out.len);
        return md_reply_body(r, 200, json_type, &r->out, r->job.replayed ? replayed_header : NULL);
    }
}
