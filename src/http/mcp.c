/*
 * mcp.c — /mcp: the Model Context Protocol over its Streamable HTTP
 * transport (revision 2025-11-25; 2025-06-18 too). One JSON-RPC 2.0
 * message per POST, answered with one JSON object (no server-to-client
 * stream: GET /mcp is 405). Sessions: md_mcp_session.h. The tools:
 * mcp_tools.c. The JSON-RPC envelope is reply.c's; the errors'
 * texts and codes are md_refusals.h's.
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

#include "base/md_clock.h"
#include "base/md_json.h"
#include "base/md_version.h"
#include "http/md_mcp_session.h"
#include "internal.h"

/* The revisions memoryd speaks, newest first: the answer to an
 * initialize asking for another one. */
static const char *const versions[] = {"2025-11-25", "2025-06-18"};
#define NVERSIONS (sizeof versions / sizeof versions[0])

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

/* A result (JSON text built in `b`, taken) with `extra` headers. */
static enum MHD_Result send_result(struct req *r, struct md_buf *b, enum md_err e,
                                   const char *const *extra)
{
    enum MHD_Result ret = e ? MHD_NO : md_reply_rpc_result(r, b->data, b->len, extra);
    md_buf_free(b);
    return ret;
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
        return md_reply_rpc_error(r, MD_RPC_INITIALIZE_VERSION);
    const char *chosen = versions[0];
    if (version_known(json_string_value(pv), json_string_length(pv)))
        chosen = json_string_value(pv);
    char sid[MD_MCP_SID_LEN + 1];
    if (md_mcp_session_open(r->h->mcp, r->tenant, now, sid) != MD_OK)
        return md_reply_rpc_error(r, MD_RPC_TOO_MANY_SESSIONS, r->h->cfg->mcp_sessions);
    struct md_buf b;
    md_buf_init(&b, OUT_LIMIT);
    enum md_err e =
        md_buf_printf(&b,
                      "{\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{\"listChanged\":"
                      "false}},\"serverInfo\":{\"name\":\"memoryd\",\"version\":\"%s\"},"
                      "\"instructions\":",
                      chosen, MD_VERSION);
    if (!e)
        e = md_json_put_string(&b, instructions, sizeof instructions - 1);
    if (!e)
        e = md_buf_putc(&b, '}');
    const char *const extra[] = {"Mcp-Session-Id", sid, NULL};
    return send_result(r, &b, e, extra);
}

static enum MHD_Result tools_list(struct req *r)
{
    struct md_buf b;
    md_buf_init(&b, OUT_LIMIT);
    enum md_err e = md_buf_puts(&b, "{\"tools\":[");
    for (size_t i = 0; i < md_mcp_tool_count && !e; i++) {
        const struct md_mcp_tool *t = &md_mcp_tools[i];
        e = md_buf_printf(&b, "%s{\"name\":\"%s\",\"title\":\"%s\",\"description\":", i ? "," : "",
                          t->name, t->title);
        if (!e)
            e = md_json_put_string(&b, t->description, strlen(t->description));
        if (!e)
            e = md_buf_puts(&b, ",\"inputSchema\":");
        if (!e)
            e = t->input_schema(&b);
        if (!e)
            e = md_buf_printf(&b, ",\"annotations\":{\"readOnlyHint\":%s}}",
                              t->read_only ? "true" : "false");
    }
    if (!e)
        e = md_buf_puts(&b, "]}");
    return send_result(r, &b, e, NULL);
}

/* At most 100 bytes of a name the client sent, for a message. */
static void shown_name(char shown[101], const char *name)
{
    snprintf(shown, 101, "%s", name);
}

static enum MHD_Result tools_call(struct req *r, const json_t *params)
{
    const json_t *name = params ? json_object_get(params, "name") : NULL;
    if (!json_is_string(name))
        return md_reply_rpc_error(r, MD_RPC_TOOL_NAME);
    const struct md_mcp_tool *tool = NULL;
    for (size_t i = 0; i < md_mcp_tool_count && !tool; i++)
        if (strcmp(md_mcp_tools[i].name, json_string_value(name)) == 0)
            tool = &md_mcp_tools[i];
    if (!tool) {
        char shown[101];
        shown_name(shown, json_string_value(name));
        return md_reply_rpc_error(r, MD_RPC_TOOL_UNKNOWN, shown);
    }
    json_t *args = json_object_get(params, "arguments");
    if (args && !json_is_object(args))
        return md_reply_rpc_error(r, MD_RPC_TOOL_ARGUMENTS);
    json_t *none = args ? NULL : json_object();
    if (!args && !none)
        return MHD_NO;
    /* A write's Idempotency-Key may come in _meta (MD_MCP_IDEMPOTENCY_META). */
    r->mcp_idem = json_object_get(json_object_get(params, "_meta"), MD_MCP_IDEMPOTENCY_META);
    enum MHD_Result ret = tool->call(r, args ? args : none);
    r->mcp_idem = NULL;
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

/* A JSON-RPC message's envelope checked: its id kept (r->mcp_id), its
 * method's label (r->mcp_method); *method: its method ("" for a
 * response). MHD_YES with *done 0 when it is well formed. */
static enum MHD_Result check_message(struct req *r, const json_t *msg, const char **method,
                                     int *done)
{
    *done = 1;
    if (json_is_array(msg))
        return md_reply_rpc_error(r, MD_RPC_BATCH);
    if (!json_is_object(msg))
        return md_reply_rpc_error(r, MD_RPC_NOT_OBJECT);
    const json_t *id = json_object_get(msg, "id");
    int id_ok = json_is_string(id) || json_is_integer(id);
    if (id_ok && !(r->mcp_id = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT)))
        return MHD_NO;
    const json_t *jv = json_object_get(msg, "jsonrpc");
    if (!json_is_string(jv) || strcmp(json_string_value(jv), "2.0") != 0)
        return md_reply_rpc_error(r, MD_RPC_JSONRPC_VERSION);
    if (id && !id_ok)
        return md_reply_rpc_error(r, MD_RPC_ID_TYPE);
    const json_t *m = json_object_get(msg, "method");
    int response = !m && id && (json_object_get(msg, "result") || json_object_get(msg, "error"));
    if (!response && !json_is_string(m))
        return md_reply_rpc_error(r, MD_RPC_METHOD_TYPE);
    *method = response ? "" : json_string_value(m);
    r->mcp_method = response ? "response" : method_label(*method);
    if (!id && strcmp(r->mcp_method, "other") == 0)
        r->mcp_method = "notification";
    const struct headers *hd = &r->headers;
    if (hd->mcp_version.count && !version_known(hd->mcp_version.value, hd->mcp_version.len)) {
        char shown[41]; /* at most 40 bytes of it */
        size_t n = hd->mcp_version.len < sizeof shown ? hd->mcp_version.len : sizeof shown - 1;
        memcpy(shown, hd->mcp_version.value, n);
        shown[n] = '\0';
        return md_reply_rpc_error(r, MD_RPC_PROTOCOL_VERSION, shown);
    }
    *done = 0;
    return MHD_YES;
}

/* One JSON-RPC message (any JSON value, read from the body). */
static enum MHD_Result handle_message(struct req *r, const json_t *msg, int64_t now)
{
    const char *m;
    int done;
    enum MHD_Result ret = check_message(r, msg, &m, &done);
    if (done)
        return ret;
    const struct headers *hd = &r->headers;
    const json_t *id = json_object_get(msg, "id");
    const json_t *params = json_object_get(msg, "params");
    int response = *m == '\0';
    if (!response && strcmp(m, "initialize") == 0) {
        if (!id)
            return md_reply_rpc_error(r, MD_RPC_INITIALIZE_ID);
        if (params && !json_is_object(params))
            return md_reply_rpc_error(r, MD_RPC_PARAMS_OBJECT);
        return initialize(r, params, now);
    }
    if (!hd->mcp_session.count)
        return md_reply_rpc_error(r, MD_RPC_SESSION_REQUIRED);
    if (md_mcp_session_touch(r->h->mcp, hd->mcp_session.value, hd->mcp_session.len, r->tenant,
                             now) != MD_OK)
        return md_reply_rpc_error(r, MD_RPC_NO_SUCH_SESSION);
    if (!id || response) /* a notification, or a response: nothing to answer */
        return md_reply_empty(r, 202);
    if (params && !json_is_object(params))
        return md_reply_rpc_error(r, MD_RPC_PARAMS_OBJECT);
    if (strcmp(m, "ping") == 0)
        return md_reply_rpc_result(r, "{}", 2, NULL);
    if (strcmp(m, "tools/list") == 0)
        return tools_list(r);
    if (strcmp(m, "tools/call") == 0)
        return tools_call(r, params);
    char shown[101];
    shown_name(shown, m);
    return md_reply_rpc_error(r, MD_RPC_METHOD_UNKNOWN, shown);
}

/* DELETE /mcp: the end of a session. */
static enum MHD_Result end_session(struct req *r)
{
    const struct headers *hd = &r->headers;
    if (!hd->mcp_session.count)
        return md_reply_rpc_error(r, MD_RPC_SESSION_TO_END);
    if (md_mcp_session_close(r->h->mcp, hd->mcp_session.value, hd->mcp_session.len, r->tenant) !=
        MD_OK)
        return md_reply_rpc_error(r, MD_RPC_NO_SESSION_TO_END);
    return md_reply_empty(r, 204);
}

enum MHD_Result md_http_mcp(struct req *r)
{
    const struct headers *hd = &r->headers;
    /* A web page may not use a memoryd on the user's machine or network
     * (DNS rebinding): a browser says where the page came from. */
    if (hd->origin.count &&
        (hd->origin.count > 1 ||
         !origin_allowed(r->h->cfg->mcp_origins, hd->origin.value, hd->origin.len)))
        return md_reply_rpc_error(r, MD_RPC_ORIGIN);
    enum MHD_Result ret;
    if (md_http_tenant(r, &ret) != 0)
        return ret;
    if (r->route->id == R_MCP_END)
        return end_session(r);
    int64_t now = (int64_t)(md_now_us() / 1000000u);
    json_error_t jerr;
    json_t *msg = json_loadb(r->body.data ? r->body.data : "", r->body.len,
                             JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    md_http_body_drop(r);
    if (!msg)
        return md_reply_rpc_error(r, MD_RPC_NOT_JSON, jerr.text, jerr.line, jerr.column);
    ret = handle_message(r, msg, now);
    json_decref(msg);
    return ret;
}
