/*
 * run.c — a parsed command run for a request (see internal.h): the write
 * headers read into it, a view run now on the HTTP worker (or fetched by
 * the store asynchronously, on an engine that can; a view of a file
 * recorded as its use, md_uses.h), a write handed to the writer while the
 * connection is suspended. The answer is left in r->out,
 * r->err and r->job for reply.c.
 */
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "base/md_clock.h"
#include "base/md_metrics.h"
#include "cmd/md_sensitive_modes.h"
#include "cmd/md_uses.h"
#include "internal.h"

/* Visible ASCII (an Idempotency-Key), or printable ASCII with spaces (an
 * actor). */
static int ascii_in(const char *s, size_t n, char lo)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < lo || s[i] > '~')
            return 0;
    return 1;
}

/* The subtree of the request's key into its command (md_cmd.h `root`). */
static void scope_cmd(struct req *r)
{
    r->cmd.root = md_http_key_root(r);
    r->cmd.root_len = strlen(r->key_path);
}

/* The request as its Idempotency-Key stands for it: route, body,
 * preconditions, and the subtree of its key (another subtree's key that
 * sends the same key is refused as another request, never answered with
 * what was recorded for this one). */
static enum md_err fingerprint(struct req *r, const char *body, size_t body_len)
{
    const struct headers *hd = &r->headers;
    const struct md_sha256_part parts[] = {
        {r->key_path, r->key_path[0] ? strlen(r->key_path) + 1 : 0},
        {r->url, strlen(r->url) + 1},
        {body, body_len},
        {"\0If-Match:", 10},
        {hd->if_match.value, hd->if_match.len},
        {"\0If-None-Match:", 15},
        {hd->if_none_match.value, hd->if_none_match.len},
    };
    return md_sha256_parts(parts, sizeof parts / sizeof parts[0], r->job.fingerprint);
}

enum md_err md_http_write_headers(struct req *r, const char *body, size_t body_len,
                                  struct md_buf *out)
{
    scope_cmd(r);
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
            return md_buf_say(out, MD_R_HEADER_TWICE, seen[i].name);
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
            return md_buf_say(out, MD_R_ACTOR_INVALID);
        memcpy(r->actor, a->value, a->len);
        r->actor[a->len] = '\0';
        r->cmd.actor = r->actor;
    }
    if (hd->idempotency_key.count)
        e = md_http_idempotency(r, hd->idempotency_key.value, hd->idempotency_key.len, body,
                                body_len, out, MD_R_IDEMPOTENCY_KEY_INVALID);
    return e;
}

enum md_err md_http_idempotency(struct req *r, const char *key, size_t len, const char *body,
                                size_t body_len, struct md_buf *out, enum md_err invalid_err,
                                const char *invalid)
{
    if (len < 1 || len >= sizeof r->idem_key || !ascii_in(key, len, '!'))
        return md_buf_say(out, invalid_err, "%s", invalid);
    memcpy(r->idem_key, key, len);
    r->idem_key[len] = '\0';
    r->job.idem_key = r->idem_key;
    r->job.idem_key_len = len;
    return fingerprint(r, body, body_len);
}

/* The text a write command would store (create, str_replace, insert):
 * its field, or NULL. */
static struct md_str *stored_text(struct md_cmd *cmd)
{
    switch (cmd->kind) {
    case MD_CMD_CREATE:
        return &cmd->file_text;
    case MD_CMD_STR_REPLACE:
        return &cmd->new_str;
    case MD_CMD_INSERT:
        return &cmd->insert_text;
    default:
        return NULL;
    }
}

/* r->err and the storage failure's text. */
static void storage_failure(struct req *r, enum md_err e)
{
    r->err = md_storage_class(e);
    md_buf_reset(&r->out);
    md_buf_puts(&r->out, md_storage_text(r->err));
}

/* --sensitive (md_sensitive.h), on this thread before the writer sees the
 * command: refused (1, answered in r->out), or with its secrets replaced in
 * r->redacted (0), or as it is (0). */
static int sensitive_check(struct req *r)
{
    const struct md_sensitive *s = r->h->limits->sensitive;
    struct md_str *text = stored_text(&r->cmd);
    if (!text || !text->p)
        return 0;
    /* The tenant's own mode, or the server's (cached: md_sensitive_modes.h). */
    int mode;
    enum md_err me = md_sensitive_mode_of(r->h->limits, r->h->store, r->tenant, &mode);
    if (me) {
        storage_failure(r, me);
        return 1;
    }
    if (mode == MD_SENSITIVE_OFF)
        return 0;
    struct md_sensitive_hit hit;
    if (mode == MD_SENSITIVE_REDACT) {
        enum md_err e =
            md_sensitive_redact(s, text->p, text->n, &r->redacted, &r->redactions, &hit);
        if (e) {
            storage_failure(r, e);
            return 1;
        }
        if (r->redactions) {
            r->redacted_first = hit;
            *text = (struct md_str){r->redacted.data ? r->redacted.data : "", r->redacted.len};
            md_metrics_sensitive(hit.kind, 1);
        }
        return 0;
    }
    int found = md_sensitive_find(s, text->p, text->n, &hit);
    if (found == 0)
        return 0;
    if (found < 0) {
        storage_failure(r, MD_ENOMEM);
        return 1;
    }
    md_buf_reset(&r->out);
    md_metrics_sensitive(hit.kind, 0);
    r->err = md_sensitive_refusal(&r->out, &hit);
    return 1;
}

/* A command whose secrets were replaced says so after its own text. */
static void say_redacted(struct req *r)
{
    const struct md_sensitive_hit *h = &r->redacted_first;
    if (!r->redactions || r->err != MD_OK)
        return;
    if (r->redactions == 1)
        md_buf_printf(&r->out, MD_SENSITIVE_REDACTED_ONE, h->what, h->line, h->kind);
    else
        md_buf_printf(&r->out, MD_SENSITIVE_REDACTED_MORE, h->what, h->line, h->kind,
                      r->redactions - 1);
}

/* The writer's notifier: the job is done. */
static void job_done(struct md_job *job)
{
    struct req *r = (struct req *)((char *)job - offsetof(struct req, job));
    r->err = job->err;
    /* A tenant's --sensitive override changed (or the tenant is gone):
     * forgotten here, after the commit and before the answer. */
    if (r->cmd.kind == MD_CMD_LIMITS || r->cmd.kind == MD_CMD_ERASE)
        md_sensitive_modes_forget(r->h->limits->modes, r->tenant);
    r->cost = job->cost;
    say_redacted(r);
    atomic_store(&r->state, ST_READY);
    MHD_resume_connection(r->conn);
}

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
        md_buf_reset(&r->out);
        r->job.err = e == MD_ECONFLICT ? md_buf_say(&r->out, MD_R_TENANT_IMPORTING, r->tenant)
                                       : md_buf_say(&r->out, MD_R_OVERLOADED);
        job_done(&r->job);
    }
    return MHD_YES;
}

/* A view of a file is a use of it (md_uses.h, for expiry): recorded in
 * memory, written back by the writer. A listing of a directory is not. */
static void record_use(struct req *r, enum md_err e)
{
    struct md_uses *uses = r->h->limits->uses;
    if (e || !uses || r->cmd.kind != MD_CMD_VIEW || !r->job.res.has_etag)
        return;
    md_uses_record(uses, r->tenant, r->cmd.path.canon, r->cmd.path.canon_len, md_wall_ms());
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
        e = md_cmd_exec(t, r->tenant, &r->cmd, h->limits, &r->out, &r->job.res);
        record_use(r, e);
        md_txn_stats(t, &after);
        r->cost.statements = after.statements - before.statements;
        r->cost.round_trips = after.round_trips - before.round_trips;
        md_txn_end(t);
    }
    if (e == MD_EDB || e == MD_ENOMEM || e == MD_EBUSY || e == MD_EUNAVAIL)
        storage_failure(r, e);
    else
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
    if (pe == MD_ENOMEM) {
        storage_failure(r, pe);
    } else if (pe) {
        md_buf_free(&r->out);
        r->out = *parse_msg; /* hand the message over */
        md_buf_init(parse_msg, OUT_LIMIT);
        r->err = pe;
    }
    md_buf_free(parse_msg);
    if (pe)
        return 0;
    scope_cmd(r);
    r->err = MD_OK;
    if (r->cmd.write && md_http_auth_read_only(r)) {
        md_buf_reset(&r->out);
        r->err = md_buf_say(&r->out, MD_R_AUTH_READ_ONLY);
        return 0;
    }
    if (r->cmd.write && sensitive_check(r))
        return 0;
    if (r->cmd.write) {
        md_http_submit(r);
        return 1;
    }
    if (md_http_unreadable(r)) {
        md_buf_reset(&r->out);
        r->err = md_buf_say(&r->out, MD_R_TENANT_IMPORTING, r->tenant);
        return 0;
    }
    const struct md_patharg *p = &r->cmd.path;
    enum md_within in = md_path_within(p->canon, p->canon_len, r->cmd.root, r->cmd.root_len);
    if (r->cmd.kind == MD_CMD_VIEW && in != MD_OUTSIDE_SUBTREE &&
        md_store_has_view_async(h->store)) {
        /* Above a key's subtree, the view lists the subtree (view.c). */
        int above = in == MD_ABOVE_SUBTREE;
        r->view = (struct md_view_job){r->tenant, above ? r->cmd.root : p->canon,
                                       above ? r->cmd.root_len : p->canon_len,
                                       md_cmd_view_entries(h->limits), view_fetched};
        atomic_store(&r->state, ST_WAITING);
        MHD_suspend_connection(r->conn);
        enum md_err e = md_store_view_async(h->store, &r->view);
        if (e)
            view_fetched(&r->view, NULL, e);
        return 1;
    }
    struct md_txn *t = NULL;
    enum md_err e = md_store_read_begin(h->store, &t);
    run_read(r, t, e);
    return 0;
}
