/*
 * http_memory.c — POST /memory: the memory tool's commands, answered with
 * a tool_result. Reads run here on the HTTP worker; writes go to the
 * writer (md_writer.h) while the connection is suspended.
 *
 * Headers besides the tenant: If-Match / If-None-Match (preconditions of a
 * write), Idempotency-Key (a retried write is answered, not applied again)
 * and X-Memory-Actor (who wrote, in the history). A view of a file answers
 * with its ETag; so does a write of one.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_json.h"
#include "internal.h"

enum MHD_Result md_http_reply_result(struct req *r, unsigned status)
{
    int is_error = r->err != MD_OK;
    char etag[MD_ETAG_LEN + 1];
    const struct md_cmd_result *res = &r->job.res;
    int with_etag = !is_error && res->has_etag && !r->job.replayed;
    if (with_etag)
        md_etag_format(res->etag, etag);
    const char *extra[5] = {NULL};
    size_t x = 0;
    if (with_etag) {
        extra[x++] = MHD_HTTP_HEADER_ETAG;
        extra[x++] = etag;
    }
    if (r->job.replayed) {
        extra[x++] = "Idempotent-Replayed";
        extra[x++] = "true";
    }
    char *body;
    size_t len;
    if (r->want_text) {
        body = md_buf_take(&r->out, &len);
        if (!body)
            return MHD_NO;
        return md_http_queue(r, status, "text/plain; charset=utf-8", body, len, is_error, extra);
    }
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
    body = md_buf_take(&json, &len);
    if (!body)
        return MHD_NO;
    return md_http_queue(r, status, "application/json", body, len, is_error, extra);
}

/* r->err and, unless NULL, the text in r->out. */
static void set_error(struct req *r, enum md_err err, const char *text)
{
    r->err = err;
    if (text) {
        md_buf_reset(&r->out);
        md_buf_puts(&r->out, text);
    }
}

/* An error result (text already in r->out or given here). */
static enum MHD_Result respond_error(struct req *r, enum md_err err, const char *text)
{
    set_error(r, err, text);
    return md_http_reply_result(r, md_err_http_status(err));
}

static void job_done(struct md_job *job)
{
    struct req *r = (struct req *)((char *)job - offsetof(struct req, job));
    r->err = job->err;
    r->cost = job->cost;
    atomic_store(&r->state, ST_READY);
    MHD_resume_connection(r->conn);
}

/* A buffer error, or MD_EINVAL once the message is written. */
static enum md_err einval(enum md_err buf_err)
{
    return buf_err ? buf_err : MD_EINVAL;
}

/* Visible ASCII (an Idempotency-Key), or printable ASCII with spaces (an
 * actor). */
static int ascii_in(const char *s, size_t n, char lo)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < lo || s[i] > '~')
            return 0;
    return 1;
}

enum md_err md_http_write_headers(struct req *r, const char *body, size_t body_len,
                                  struct md_buf *out)
{
    struct headers *hd = &r->headers;
    struct {
        const struct header_seen *h;
        const char *name;
    } seen[] = {{&hd->if_match, "If-Match"},
                {&hd->if_none_match, "If-None-Match"},
                {&hd->idempotency_key, "Idempotency-Key"},
                {&hd->actor, "X-Memory-Actor"}};
    for (size_t i = 0; i < sizeof seen / sizeof seen[0]; i++)
        if (seen[i].h->count > 1)
            return einval(
                md_buf_printf(out, "Error: The %s header was sent more than once", seen[i].name));
    if (!r->cmd.write)
        return MD_OK;
    enum md_err e = MD_OK;
    if (hd->if_match.count)
        e = md_precond_parse(&r->cmd.pre, 0, hd->if_match.value, hd->if_match.len, out);
    if (!e && hd->if_none_match.count)
        e = md_precond_parse(&r->cmd.pre, 1, hd->if_none_match.value, hd->if_none_match.len, out);
    if (e)
        return e;
    if (hd->actor.count) {
        const struct header_seen *a = &hd->actor;
        if (a->len < 1 || a->len > 128 || !ascii_in(a->value, a->len, ' '))
            return einval(md_buf_puts(out, "Error: The X-Memory-Actor header must be 1 to 128 "
                                           "printable ASCII characters"));
        memcpy(r->actor, a->value, a->len);
        r->actor[a->len] = '\0';
        r->cmd.actor = r->actor;
    }
    if (hd->idempotency_key.count) {
        const struct header_seen *k = &hd->idempotency_key;
        if (k->len < 1 || k->len > 255 || !ascii_in(k->value, k->len, '!'))
            return einval(md_buf_puts(out, "Error: The Idempotency-Key header must be 1 to 255 "
                                           "visible ASCII characters"));
        r->job.idem_key = k->value;
        r->job.idem_key_len = k->len;
        /* The request as the key stands for it: route, body, preconditions. */
        const struct md_sha256_part parts[] = {
            {r->url, strlen(r->url) + 1}, {body, body_len},
            {"\0If-Match:", 10},          {hd->if_match.value, hd->if_match.len},
            {"\0If-None-Match:", 15},     {hd->if_none_match.value, hd->if_none_match.len},
        };
        e = md_sha256_parts(parts, sizeof parts / sizeof parts[0], r->job.fingerprint);
    }
    return e;
}

/* Queue the parsed command (r->cmd) for the writer; its answer comes when
 * the connection is resumed. */
enum MHD_Result md_http_submit(struct req *r)
{
    r->job.cmd = &r->cmd;
    r->job.tenant = r->tenant;
    r->job.out = &r->out;
    r->job.done = job_done;
    atomic_store(&r->state, ST_WAITING);
    MHD_suspend_connection(r->conn);
    enum md_err e = md_writer_submit(r->h->writer, &r->job);
    if (e) {
        r->job.err = e;
        md_buf_reset(&r->out);
        md_buf_puts(&r->out, "Error: memoryd is overloaded; the command was not applied. Retry "
                             "shortly.");
        job_done(&r->job);
    }
    return MHD_YES;
}

enum MHD_Result md_http_memory(struct req *r)
{
    const struct md_config *cfg = r->h->cfg;
    /* A request taken in before shutdown began is completed; only later
     * ones are refused. */
    if (r->late)
        return respond_error(
            r, MD_EBUSY,
            "Error: memoryd is shutting down; the command was not applied. Retry shortly.");

    /* The body is parsed even when the tenant is refused, so that the
     * error carries the tool_use_id back. */
    struct md_buf parse_msg;
    md_buf_init(&parse_msg, OUT_LIMIT);
    const char *body = r->body.data ? r->body.data : "";
    enum md_err pe = md_cmd_parse(&r->cmd, body, r->body.len, &cfg->limits, &parse_msg);
    if (!pe)
        pe = md_http_write_headers(r, body, r->body.len, &parse_msg);
    md_http_body_drop(r); /* the command owns what it needs from the body */
    enum MHD_Result ret;
    if (md_http_tenant(r, &ret) != 0) {
        md_buf_free(&parse_msg);
        return ret;
    }
    if (md_http_cmd_run(r, pe, &parse_msg))
        return MHD_YES; /* answered when the writer is done */
    return md_http_reply_result(r, md_err_http_status(r->err));
}

/* Run the read command r->cmd on `t` (ended here), or record the error
 * that kept it from starting. */
static void run_read(struct req *r, struct md_txn *t, enum md_err e)
{
    struct md_http *h = r->h;
    if (!e && !t)
        e = MD_EDB;
    if (!e) {
        struct md_txn_stats before, after;
        md_txn_stats(t, &before);
        e = md_cmd_exec(t, r->tenant, &r->cmd, &h->cfg->limits, &r->out, &r->job.res);
        md_txn_stats(t, &after);
        r->cost.statements = after.statements - before.statements;
        r->cost.round_trips = after.round_trips - before.round_trips;
        md_txn_end(t);
    }
    if (e == MD_EDB || e == MD_ENOMEM || e == MD_EBUSY || e == MD_EUNAVAIL) {
        e = e == MD_ENOMEM ? MD_EDB : e;
        set_error(r, e, md_cmd_storage_error_text(e));
        return;
    }
    r->err = e;
}

/* The store's thread: the view is fetched (or failed). */
static void view_fetched(struct md_view_job *job, struct md_txn *t, enum md_err e)
{
    struct req *r = (struct req *)((char *)job - offsetof(struct req, view));
    r->view_txn = t;
    r->view_err = e;
    r->view_fetched = 1;
    atomic_store(&r->state, ST_READY);
    MHD_resume_connection(r->conn);
}

void md_http_view_resumed(struct req *r)
{
    r->view_fetched = 0;
    struct md_txn *t = r->view_txn;
    r->view_txn = NULL;
    run_read(r, t, t ? MD_OK : r->view_err);
}

int md_http_cmd_run(struct req *r, enum md_err pe, struct md_buf *parse_msg)
{
    struct md_http *h = r->h;
    enum md_err e = MD_OK;
    if (pe && pe != MD_ENOMEM) {
        md_buf_free(&r->out);
        r->out = *parse_msg; /* hand the message over */
        md_buf_init(parse_msg, OUT_LIMIT);
        e = pe;
    } else if (pe) {
        e = MD_ENOMEM;
        md_buf_reset(&r->out);
        md_buf_puts(&r->out, md_cmd_storage_error_text(e));
    }
    md_buf_free(parse_msg);
    r->err = e;
    if (e)
        return 0;
    if (r->cmd.write && md_http_auth_read_only(r)) {
        set_error(r, MD_EFORBIDDEN, md_auth_read_only_text);
        return 0;
    }
    if (r->cmd.write) {
        md_http_submit(r);
        return 1;
    }
    if (r->cmd.kind == MD_CMD_VIEW && md_store_has_view_async(h->store)) {
        const struct md_patharg *p = &r->cmd.path;
        r->view = (struct md_view_job){r->tenant, p->canon, p->canon_len,
                                       md_cmd_view_entries(&h->cfg->limits), view_fetched};
        atomic_store(&r->state, ST_WAITING);
        MHD_suspend_connection(r->conn);
        e = md_store_view_async(h->store, &r->view);
        if (e)
            view_fetched(&r->view, NULL, e);
        return 1;
    }
    struct md_txn *t = NULL;
    e = md_store_read_begin(h->store, &t);
    run_read(r, t, e);
    return 0;
}
