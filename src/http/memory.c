/*
 * memory.c — POST /memory: the memory tool's commands, answered with a
 * tool_result (reply.c). The body is a command object or a tool_use block
 * (md_cmd_parse); views run now, writes go to the writer (run.c).
 *
 * Headers besides the tenant: If-Match / If-None-Match (preconditions of a
 * write), Idempotency-Key (a retried write is answered, not applied again)
 * and X-Memory-Actor (who wrote, in the history). A view of a file answers
 * with its ETag; so does a write of one.
 */
#include "internal.h"

enum MHD_Result md_http_memory(struct req *r)
{
    /* The body is parsed even when the tenant is refused, so that the
     * error carries the tool_use_id back. */
    struct md_buf parse_msg;
    md_buf_init(&parse_msg, OUT_LIMIT);
    const char *body = r->body.data ? r->body.data : "";
    enum md_err pe = md_cmd_parse(&r->cmd, body, r->body.len, r->h->limits, &parse_msg);
    if (!pe)
        pe = md_http_write_headers(r, body, r->body.len, &parse_msg);
    md_http_body_drop(r); /* the command owns what it needs from the body */
    enum MHD_Result ret;
    if (md_http_tenant(r, &ret) != 0) {
        md_buf_free(&parse_msg);
        return ret;
    }
    if (md_http_cmd_run(r, pe, &parse_msg))
        return MHD_YES; /* answered once the connection is resumed */
    return md_reply_result(r);
}
