/*
 * http_mcp.c — /mcp: the Model Context Protocol over its Streamable HTTP
 * transport (revision 2025-11-25; 2025-06-18 too). One JSON-RPC 2.0
 * message per POST, answered with one JSON object (no server-to-client
 * stream: GET /mcp is 405). Sessions: md_mcp_session.h. The tools:
 * http_mcp_tools.c.
 *
 * Before a message is read, the request went through what every POST
 * /memory goes through (body limits, --auth keys); here: the Origin
 * header, the tenant, the session. Errors of the transport are JSON-RPC
 * error objects with the HTTP status the specification asks for: a body
 * that is not JSON (-32700) or not a JSON-RPC message (-32600) is 400; a
 * request for an unknown method (-32601) or with bad params (-32602) is a
 * JSON-RPC error in a 200 answer.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/md_json.h"
#include "base/md_version.h"
#include "http/md_mcp_session.h"
#include "internal.h"

/* The revisions memoryd speaks, newest first: the answer to an
 * initialize asking for another one. */
static const char *const versions[] = {"2025-11-25", "2025-06-18"};
#define NVERSIONS (sizeof versions / sizeof versions[0])

#define RPC_PARSE_ERROR      (-32700)
#define RPC_INVALID_REQUEST  (-32600)
#define RPC_METHOD_NOT_FOUND (-32601)
#define RPC_INVALID_PARAMS   (-32602)
#define RPC_SERVER_ERROR     (-32000) /* the transport refused the request */
#define RPC_NO_SESSION       (-32001) /* Mcp-Session-Id unknown */

static const char instructions[] =
    "memoryd keeps a memory directory, /memories, for this tenant across conversations. Use the "
    "memory tool to view it before a task and to record what you learn.";

int md_http_mcp_start(struct md_http *h, char *why, size_t why_len)
{
    h->mcp = md_mcp_sessions_new(h->cfg->mcp_sessions);
    if (!h->mcp) {
        snprintf(why, why_len, "out of memory (the MCP session table)");
        return -1;
    }
    return 0;
}

void md_http_mcp_stop(struct md_http *h)
{
    md_mcp_sessions_free(h->mcp);
    h->mcp = NULL;
}

/* `{"jsonrpc":"2.0","id":<the request's id, or null>,` into `b`. */
static enum md_err put_head(struct md_buf *b, const struct req *r)
{
    enum md_err e = md_buf_puts(b, "{\"jsonrpc\":\"2.0\",\"id\":");
    if (!e)
        e = md_buf_puts(b, r->mcp_id ? r->mcp_id : "null");
    if (!e)
        e = md_buf_putc(b, ',');
    return e;
}

static enum MHD_Result send_json(struct req *r, unsigned status, struct md_buf *b, enum md_err e,
                                 const char *const *extra)
{
    if (e) {
        md_buf_free(b);
        return MHD_NO;
    }
    size_t len;
    char *body = md_buf_take(b, &len);
    if (!body)
        return MHD_NO;
    return md_http_queue(r, status, "application/json", body, len, -1, extra);
}

static enum MHD_Result rpc_error(struct req *r, unsigned status, int code, const char *msg,
                                 size_t len)
{
    struct md_buf b;
    md_buf_init(&b, OUT_LIMIT);
    enum md_err e = put_head(&b, r);
    if (!e)
        e = md_buf_printf(&b, "\"error\":{\"code\":%d,\"message\":", code);
    if (!e)
        e = md_json_put_string(&b, msg, len);
    if (!e)
        e = md_buf_puts(&b, "}}");
    return send_json(r, status, &b, e, NULL);
}

__attribute__((format(printf, 4, 5))) static enum MHD_Result
rpc_errorf(struct req *r, unsigned status, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
    return rpc_error(r, status, code, msg, len);
}

enum MHD_Result md_http_mcp_refuse(struct req *r, enum md_err err, const char *text, size_t len)
{
    static const char prefix[] = "Error: ";
    if (len >= sizeof prefix - 1 && memcmp(text, prefix, sizeof prefix - 1) == 0) {
        text += sizeof prefix - 1;
        len -= sizeof prefix - 1;
    }
    return rpc_error(r, md_err_http_status(err), RPC_SERVER_ERROR, text, len);
}

/* Begin a result: the head and `"result":`. */
static enum md_err put_result(struct md_buf *b, const struct req *r)
{
    enum md_err e = put_head(b, r);
    return e ? e : md_buf_puts(b, "\"result\":");
}

enum MHD_Result md_http_mcp_tool_answer(struct req *r)
{
    struct md_buf b;
    md_buf_init(&b, OUT_LIMIT);
    md_buf_reserve(&b, r->out.len + r->out.len / 8 + 128);
    enum md_err e = put_result(&b, r);
    if (!e)
        e = md_buf_puts(&b, "{\"content\":[{\"type\":\"text\",\"text\":");
    if (!e)
        e = md_json_put_string(&b, r->out.data ? r->out.data : "", r->out.len);
    if (!e)
        e = md_buf_puts(&b, r->err != MD_OK ? "}],\"isError\":true}}" : "}],\"isError\":false}}");
    return send_json(r, 200, &b, e, NULL);
}

/* The Origin value is one of --mcp-origins (comma-separated, any case). */
static int origin_allowed(const char *list, const char *v, size_t n)
{
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t k = strcspn(p, ",");
        size_t m = k;
        while (m > 0 && p[m - 1] == ' ')
            m--;
        if (m > 0 && m == n && strncasecmp(p, v, n) == 0)
            return 1;
        p += k;
    }
    return 0;
}

static int version_known(const char *v, size_t n)
{
    for (size_t i = 0; i < NVERSIONS; i++)
        if (strlen(versions[i]) == n && memcmp(versions[i], v, n) == 0)
            return 1;
    return 0;
}

static enum MHD_Result initialize(struct req *r, const json_t *params, int64_t now)
{
    const json_t *pv = params ? json_object_get(params, "protocolVersion") : NULL;
    if (!json_is_string(pv))
        return rpc_errorf(r, 200, RPC_INVALID_PARAMS,
                          "Invalid params: initialize needs `params.protocolVersion` (a string)");
    const char *chosen = versions[0];
    if (version_known(json_string_value(pv), json_string_length(pv)))
        chosen = json_string_value(pv);
    char sid[MD_MCP_SID_LEN + 1];
    if (md_mcp_session_open(r->h->mcp, r->tenant, now, sid) != MD_OK)
        return rpc_errorf(r, 503, RPC_SERVER_ERROR,
                          "Too many MCP sessions are open (the limit is %u, --mcp-sessions); "
                          "none was started. End unused sessions with DELETE /mcp, or retry later.",
                          r->h->cfg->mcp_sessions);
    struct md_buf b;
    md_buf_init(&b, OUT_LIMIT);
    enum md_err e = put_result(&b, r);
    if (!e)
        e = md_buf_printf(
            &b,
            "{\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{\"listChanged\":"
            "false}},\"serverInfo\":{\"name\":\"memoryd\",\"version\":\"%s\"},"
            "\"instructions\":",
            chosen, MD_VERSION);
    if (!e)
        e = md_json_put_string(&b, instructions, sizeof instructions - 1);
    if (!e)
        e = md_buf_puts(&b, "}}");
    const char *const extra[] = {"Mcp-Session-Id", sid, NULL};
    return send_json(r, 200, &b, e, extra);
}

static enum MHD_Result tools_list(struct req *r)
{
    struct md_buf b;
    md_buf_init(&b, OUT_LIMIT);
    enum md_err e = put_result(&b, r);
    if (!e)
        e = md_buf_puts(&b, "{\"tools\":[");
    for (size_t i = 0; i < md_mcp_tool_count && !e; i++) {
        const struct md_mcp_tool *t = &md_mcp_tools[i];
        e = md_buf_printf(&b, "%s{\"name\":\"%s\",\"title\":\"%s\",\"description\":", i ? "," : "",
                          t->name, t->title);
        if (!e)
            e = md_json_put_string(&b, t->description, strlen(t->description));
        if (!e)
            e = md_buf_printf(&b, ",\"inputSchema\":%s,\"annotations\":{\"readOnlyHint\":%s}}",
                              t->input_schema, t->read_only ? "true" : "false");
    }
    if (!e)
        e = md_buf_puts(&b, "]}}");
    return send_json(r, 200, &b, e, NULL);
}

static enum MHD_Result tools_call(struct req *r, const json_t *params)
{
    const json_t *name = params ? json_object_get(params, "name") : NULL;
    if (!json_is_string(name))
        return rpc_errorf(r, 200, RPC_INVALID_PARAMS,
                          "Invalid params: tools/call needs `params.name` (a string)");
    const struct md_mcp_tool *tool = NULL;
    for (size_t i = 0; i < md_mcp_tool_count && !tool; i++)
        if (strcmp(md_mcp_tools[i].name, json_string_value(name)) == 0)
            tool = &md_mcp_tools[i];
    if (!tool) {
        char shown[101]; /* at most 100 bytes of it */
        snprintf(shown, sizeof shown, "%s", json_string_value(name));
        return rpc_errorf(r, 200, RPC_INVALID_PARAMS,
                          "Invalid params: unknown tool: %s (tools/list names the tools)", shown);
    }
    json_t *args = json_object_get(params, "arguments");
    if (args && !json_is_object(args))
        return rpc_errorf(r, 200, RPC_INVALID_PARAMS,
                          "Invalid params: `params.arguments` must be an object");
    json_t *none = args ? NULL : json_object();
    if (!args && !none)
        return MHD_NO;
    enum MHD_Result ret = tool->call(r, args ? args : none);
    json_decref(none);
    return ret;
}

/* The method's name for the log, when it is one memoryd knows. */
static const char *method_label(const char *m)
{
    static const char *const known[] = {"initialize", "ping", "tools/list", "tools/call",
                                        "notifications/initialized"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(m, known[i]) == 0)
            return known[i];
    return "other";
}

/* One JSON-RPC message (any JSON value, read from the body). */
static enum MHD_Result handle_message(struct req *r, const json_t *msg, int64_t now)
{
    const struct headers *hd = &r->headers;
    if (json_is_array(msg))
        return rpc_errorf(r, 400, RPC_INVALID_REQUEST,
                          "Invalid Request: JSON-RPC batches are not supported (MCP has none "
                          "since revision 2025-06-18); send one message per request");
    if (!json_is_object(msg))
        return rpc_errorf(r, 400, RPC_INVALID_REQUEST,
                          "Invalid Request: a JSON-RPC message is a JSON object");
    const json_t *id = json_object_get(msg, "id");
    int id_ok = json_is_string(id) || json_is_integer(id);
    if (id_ok && !(r->mcp_id = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT)))
        return MHD_NO;
    const json_t *jv = json_object_get(msg, "jsonrpc");
    if (!json_is_string(jv) || strcmp(json_string_value(jv), "2.0") != 0)
        return rpc_errorf(r, 400, RPC_INVALID_REQUEST,
                          "Invalid Request: `jsonrpc` must be \"2.0\"");
    if (id && !id_ok)
        return rpc_errorf(r, 400, RPC_INVALID_REQUEST,
                          "Invalid Request: `id` must be a string or an integer");
    const json_t *method = json_object_get(msg, "method");
    int response =
        !method && id && (json_object_get(msg, "result") || json_object_get(msg, "error"));
    if (!response && !json_is_string(method))
        return rpc_errorf(r, 400, RPC_INVALID_REQUEST,
                          "Invalid Request: `method` must be a string");
    const char *m = response ? "" : json_string_value(method);
    r->mcp_method = response ? "response" : method_label(m);
    if (!id && strcmp(r->mcp_method, "other") == 0)
        r->mcp_method = "notification";
    const json_t *params = json_object_get(msg, "params");
    if (hd->mcp_version.count && !version_known(hd->mcp_version.value, hd->mcp_version.len)) {
        char shown[41]; /* at most 40 bytes of it */
        size_t n = hd->mcp_version.len < sizeof shown ? hd->mcp_version.len : sizeof shown - 1;
        memcpy(shown, hd->mcp_version.value, n);
        shown[n] = '\0';
        return rpc_errorf(r, 400, RPC_SERVER_ERROR,
                          "Bad Request: unsupported MCP-Protocol-Version: %s (memoryd speaks "
                          "2025-11-25 and 2025-06-18)",
                          shown);
    }
    if (!response && strcmp(m, "initialize") == 0) {
        if (!id)
            return rpc_errorf(r, 400, RPC_INVALID_REQUEST,
                              "Invalid Request: initialize must be a request (with an `id`)");
        if (params && !json_is_object(params))
            return rpc_errorf(r, 200, RPC_INVALID_PARAMS,
                              "Invalid params: `params` must be an object");
        return initialize(r, params, now);
    }
    if (!hd->mcp_session.count)
        return rpc_errorf(r, 400, RPC_SERVER_ERROR,
                          "Bad Request: the Mcp-Session-Id header is required: send initialize "
                          "first, then its Mcp-Session-Id with every request");
    if (md_mcp_session_touch(r->h->mcp, hd->mcp_session.value, hd->mcp_session.len, r->tenant,
                             now) != MD_OK)
        return rpc_errorf(r, 404, RPC_NO_SESSION,
                          "Session not found: this Mcp-Session-Id was ended or never started "
                          "for this tenant; send initialize to start a new session");
    if (!id || response) /* a notification, or a response: nothing to answer */
        return md_http_queue(r, 202, "application/json", calloc(1, 1), 0, -1, NULL);
    if (params && !json_is_object(params))
        return rpc_errorf(r, 200, RPC_INVALID_PARAMS, "Invalid params: `params` must be an object");
    if (strcmp(m, "ping") == 0) {
        struct md_buf b;
        md_buf_init(&b, OUT_LIMIT);
        enum md_err e = put_result(&b, r);
        return send_json(r, 200, &b, e ? e : md_buf_puts(&b, "{}}"), NULL);
    }
    if (strcmp(m, "tools/list") == 0)
        return tools_list(r);
    if (strcmp(m, "tools/call") == 0)
        return tools_call(r, params);
    char shown[101]; /* at most 100 bytes of it */
    snprintf(shown, sizeof shown, "%s", m);
    return rpc_errorf(r, 200, RPC_METHOD_NOT_FOUND, "Method not found: %s", shown);
}

enum MHD_Result md_http_mcp(struct req *r)
{
    const struct headers *hd = &r->headers;
    /* A web page may not use a memoryd on the user's machine or network
     * (DNS rebinding): a browser says where the page came from. */
    if (hd->origin.count &&
        (hd->origin.count > 1 ||
         !origin_allowed(r->h->cfg->mcp_origins, hd->origin.value, hd->origin.len)))
        return rpc_errorf(r, 403, RPC_SERVER_ERROR,
                          "Forbidden: this Origin may not use /mcp (memoryd --mcp-origins lists "
                          "the browser origins that may)");
    if (r->late)
        return rpc_errorf(r, 503, RPC_SERVER_ERROR,
                          "memoryd is shutting down; nothing was done. Retry shortly.");
    enum MHD_Result ret;
    if (md_http_tenant(r, &ret) != 0)
        return ret;
    int64_t now = (int64_t)(md_http_now_us() / 1000000u);
    if (strcmp(r->method, MHD_HTTP_METHOD_DELETE) == 0) {
        if (!hd->mcp_session.count)
            return rpc_errorf(r, 400, RPC_SERVER_ERROR,
                              "Bad Request: DELETE /mcp needs the Mcp-Session-Id header of the "
                              "session to end");
        if (md_mcp_session_close(r->h->mcp, hd->mcp_session.value, hd->mcp_session.len,
                                 r->tenant) != MD_OK)
            return rpc_errorf(r, 404, RPC_NO_SESSION,
                              "Session not found: this Mcp-Session-Id was ended or never started "
                              "for this tenant");
        return md_http_queue(r, 204, "application/json", calloc(1, 1), 0, -1, NULL);
    }
    json_error_t jerr;
    json_t *msg = json_loadb(r->body.data ? r->body.data : "", r->body.len,
                             JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    md_http_body_drop(r);
    if (!msg)
        return rpc_errorf(r, 400, RPC_PARSE_ERROR,
                          "Parse error: the body is not JSON: %s (line %d, column %d)", jerr.text,
                          jerr.line, jerr.column);
    ret = handle_message(r, msg, now);
    json_decref(msg);
    return ret;
}
