/*
 * mcp_tools.c — the tools of the MCP endpoint (/mcp), one table entry
 * each (struct md_mcp_tool, internal.h): its name, what tools/list shows of
 * it, and its handler.
 *
 * `memory` is the memory tool: its arguments are a command object as
 * POST /memory takes it, read by the same parser (md_cmd_parse) and run by
 * the same path (md_http_cmd_run: the views here, the writes by the
 * writer), so that its text, limits, quota and errors are POST /memory's;
 * its input schema is made from the command table (md_cmd_tool_schema). A
 * write takes an Idempotency-Key, in the request's header or in
 * params._meta["memoryd/idempotency-key"], and is applied once however
 * often it is retried, as on POST /memory.
 *
 * A tool is added by one more entry: a read-only tool runs its work on a
 * read transaction for r->tenant, puts its text in r->out (and an error
 * in r->err) and returns md_reply_result(r).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/md_search.h"
#include "internal.h"

/* A write's Idempotency-Key: the request's header or params._meta's
 * (the same key if both), as POST /memory takes it, the fingerprint made of
 * the arguments (their keys sorted: a retry may order them otherwise). */
static enum md_err idempotency(struct req *r, json_t *args, struct md_buf *msg)
{
    const struct header_seen *h = &r->headers.idempotency_key;
    const json_t *meta = r->mcp_idem;
    if (h->count > 1)
        return md_buf_say(msg, MD_R_HEADER_TWICE, "Idempotency-Key");
    if (meta && !json_is_string(meta))
        return md_buf_say(msg, MD_R_IDEMPOTENCY_META_INVALID);
    const char *key = meta ? json_string_value(meta) : h->count ? h->value : NULL;
    size_t len = meta ? json_string_length(meta) : h->len;
    if (!key)
        return MD_OK;
    if (meta && h->count && (h->len != len || memcmp(h->value, key, len) != 0))
        return md_buf_say(msg, MD_R_IDEMPOTENCY_KEY_TWO);
    char *sorted = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS);
    if (!sorted)
        return MD_ENOMEM;
    enum md_err e = meta ? md_http_idempotency(r, key, len, sorted, strlen(sorted), msg,
                                               MD_R_IDEMPOTENCY_META_INVALID)
                         : md_http_idempotency(r, key, len, sorted, strlen(sorted), msg,
                                               MD_R_IDEMPOTENCY_KEY_INVALID);
    free(sorted);
    return e;
}

static enum MHD_Result memory_call(struct req *r, struct json_t *args)
{
    struct md_buf parse_msg;
    md_buf_init(&parse_msg, OUT_LIMIT);
    enum md_err pe;
    char *text = json_dumps(args, JSON_COMPACT);
    if (text) {
        pe = md_cmd_parse(&r->cmd, text, strlen(text), r->h->limits, &parse_msg);
        free(text); /* the command owns what it needs from it */
    } else {
        pe = MD_ENOMEM;
    }
    if (!pe && r->cmd.write)
        pe = idempotency(r, args, &parse_msg);
    if (md_http_cmd_run(r, pe, &parse_msg))
        return MHD_YES; /* answered once the connection is resumed */
    return md_reply_result(r);
}

/* memory_search's input: GET /v1/search's parameters (q, path, limit,
 * cursor), its errors the same texts after "Error: ". */
static const char search_schema_text[] =
    "{\"type\":\"object\","
    "\"properties\":{"
    "\"q\":{\"type\":\"string\",\"description\":\"Words to find (each where a word "
    "begins, ASCII letters without case); a phrase in double quotes.\"},"
    "\"path\":{\"type\":\"string\",\"description\":\"Search this directory (or file) only; "
    "default /memories.\"},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"description\":"
    "\"Files per page (default 10).\"},"
    "\"cursor\":{\"type\":\"string\",\"description\":\"The next page: the cursor the "
    "previous answer ended with.\"}},"
    "\"required\":[\"q\"]}";

static enum md_err search_schema(struct md_buf *out)
{
    return md_buf_puts(out, search_schema_text);
}

/* An argument of memory_search: absent, or of the type `want` (a string or
 * an integer); -1 with the reason in r->out otherwise. */
static int search_arg(struct req *r, json_t *args, const char *name, int integer, json_t **out)
{
    *out = json_object_get(args, name);
    if (!*out || (integer ? json_is_integer(*out) : json_is_string(*out)))
        return 0;
    md_buf_reset(&r->out);
    r->err = md_buf_say(&r->out, MD_R_TOOL_ARG_TYPE, name, integer ? "an integer" : "a string");
    return -1;
}

static enum MHD_Result search_call(struct req *r, struct json_t *args)
{
    json_t *q, *path, *limit, *cursor;
    if (search_arg(r, args, "q", 0, &q) || search_arg(r, args, "path", 0, &path) ||
        search_arg(r, args, "limit", 1, &limit) || search_arg(r, args, "cursor", 0, &cursor))
        return md_reply_result(r);
    struct md_search_req req = {
        .tenant = r->tenant,
        .q = q ? json_string_value(q) : NULL,
        .path = path ? json_string_value(path) : NULL,
        .limit = limit ? (int64_t)json_integer_value(limit) : 0,
        .cursor = cursor ? json_string_value(cursor) : NULL,
        .root = md_http_key_root(r),
        .root_len = strlen(r->key_path),
    };
    /* limit 0 would mean the default: out of range as sent. */
    if (limit && req.limit == 0)
        req.limit = -1;
    struct md_search_result res = {0};
    md_buf_reset(&r->out);
    struct md_buf why;
    md_buf_init(&why, OUT_LIMIT);
    enum md_err e = md_search(r->h->store, &r->h->limits->path, &req, &res, &why);
    if (!e) {
        e = md_search_text(&res, &r->out);
    } else if (e == MD_EINVAL || e == MD_ENOENT ||
               (e == MD_EBUSY && md_store_building(r->h->store))) {
        /* As the memory tool's errors: "Error: " and GET /v1/search's text. */
        md_buf_puts(&r->out, "Error: ");
        md_buf_append(&r->out, why.data ? why.data : "", why.len);
    } else {
        e = md_storage_class(e);
        md_buf_reset(&r->out);
        md_buf_puts(&r->out, md_storage_text(e));
    }
    r->err = e;
    md_buf_free(&why);
    md_search_result_free(&res);
    return md_reply_result(r);
}

const struct md_mcp_tool md_mcp_tools[] = {
    {"memory", "Memory",
     "A persistent memory directory, /memories, kept across conversations: view a directory or "
     "a file, create a file, replace or insert text in it, delete or rename files and "
     "directories. Check it before starting a task; record progress and what you learn as you "
     "go.",
     md_cmd_tool_schema, 0, memory_call},
    {"memory_search", "Search memory",
     "Full-text search of the /memories files: the files that contain every word of the query "
     "(where a word begins), best first, with the numbers and text of their matching lines. "
     "Use it to find a note before viewing it.",
     search_schema, 1, search_call},
};
const size_t md_mcp_tool_count = sizeof md_mcp_tools / sizeof md_mcp_tools[0];
