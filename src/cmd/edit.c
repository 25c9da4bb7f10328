/* edit.c — commands that write one file: create, str_replace, insert. */
#include <string.h>

#include "base/md_refusals.h"
#include "cmd/md_quota.h"
#include "internal.h"

static enum md_err too_big(struct cmd_ctx *c, size_t size)
{
    const struct md_str *raw = &c->cmd->path.raw; /* md_path_canon took it: no NUL */
    md_buf_reset(c->out);
    return md_buf_say(c->out, MD_R_FILE_TOO_BIG, (int)raw->n, raw->p, size, c->lim->max_file);
}

enum md_err cmd_create(struct cmd_ctx *c)
{
    const struct md_patharg *p = &c->cmd->path;
    if (cmd_is_root(p))
        return cmd_say1(c->out, MD_EEXIST, "Error: File ", p->raw, " already exists");
    if (c->cmd->file_text.n > c->lim->max_file)
        return too_big(c, c->cmd->file_text.n);
    struct md_locate l = {.path = p->canon, .len = p->canon_len, .want_parent = 1};
    int exists;
    enum md_err e = md_txn_locate(c->t, c->tenant, &l, 1, &exists);
    if (!e)
        e = cmd_precond(c, p, l.found, &l.e);
    if (e)
        return e;
    if (l.found)
        return cmd_say1(c->out, MD_EEXIST, "Error: File ", p->raw, " already exists");
    if (l.anc_kind == MD_KIND_FILE)
        return cmd_say(c->out, MD_ECONFLICT, "Error: Cannot create ", p->raw, ": ",
                       (struct md_str){p->canon, l.anc_len}, " is a file, not a directory");
    e = md_quota_check(c->t, c->tenant, c->lim, (int64_t)c->cmd->file_text.n, 1, c->out);
    if (e)
        return e;
    unsigned char sha[MD_SHA256_LEN];
    e = cmd_hash(c, c->cmd->file_text.p, c->cmd->file_text.n, sha);
    if (!e)
        e = md_txn_put_file(c->t, c->tenant, p->canon, p->canon_len, c->cmd->file_text.p,
                            c->cmd->file_text.n, sha, -1, l.anc_len);
    if (!e)
        e = cmd_say1(c->out, MD_OK, "File created successfully at: ", p->raw, NULL);
    return e;
}

/* Read a file for editing. The preconditions first (MD_EPRECOND, text
 * written); on MD_ENOENT (missing, or a directory) the caller writes its
 * own message. */
static enum md_err load_file(struct cmd_ctx *c, struct md_entry *ent, int *found)
{
    const struct md_patharg *p = &c->cmd->path;
    struct md_locate l = {.path = p->canon, .len = p->canon_len, .want_content = 1};
    int exists;
    enum md_err e = md_txn_locate(c->t, c->tenant, &l, 1, &exists);
    if (!e)
        e = cmd_precond(c, p, l.found, &l.e);
    if (!e && (!l.found || l.e.kind != MD_KIND_FILE))
        e = MD_ENOENT;
    *ent = l.e;
    *found = l.found;
    return e;
}

/* Store the edited content (the store keeps directory sizes right), within
 * the tenant's quota when it grows. */
static enum md_err save_file(struct cmd_ctx *c, const struct md_buf *content, int64_t old_size)
{
    const struct md_patharg *p = &c->cmd->path;
    const char *data = content->data ? content->data : "";
    enum md_err e =
        md_quota_check(c->t, c->tenant, c->lim, (int64_t)content->len - old_size, 0, c->out);
    if (e)
        return e;
    unsigned char sha[MD_SHA256_LEN];
    e = cmd_hash(c, data, content->len, sha);
    return e ? e
             : md_txn_put_file(c->t, c->tenant, p->canon, p->canon_len, data, content->len, sha,
                               old_size, md_path_parent_len(p->canon, p->canon_len));
}

enum md_err cmd_str_replace(struct cmd_ctx *c)
{
    const struct md_cmd *cmd = c->cmd;
    struct md_entry ent;
    int found;
    enum md_err e = load_file(c, &ent, &found);
    if (e == MD_ENOENT)
        return cmd_not_found(c->out, "Error: The path ", cmd->path.raw,
                             " does not exist. Please provide a valid path.", found);
    if (e)
        return e;
    struct md_buf result;
    md_buf_init(&result, c->lim->max_file);
    e = md_str_replace(ent.content, ent.content_len, cmd->old_str.p, cmd->old_str.n, cmd->new_str.p,
                       cmd->new_str.n, cmd->path.raw.p, cmd->path.raw.n, &result, c->out);
    if (e == MD_ETOOBIG)
        e = too_big(c, ent.content_len - cmd->old_str.n + cmd->new_str.n);
    if (!e)
        e = save_file(c, &result, ent.size);
    md_buf_free(&result);
    return e;
}

enum md_err cmd_insert(struct cmd_ctx *c)
{
    const struct md_cmd *cmd = c->cmd;
    struct md_entry ent;
    int found;
    enum md_err e = load_file(c, &ent, &found);
    if (e == MD_ENOENT)
        return cmd_not_found(c->out, "Error: The path ", cmd->path.raw, " does not exist", found);
    if (e)
        return e;
    struct md_buf result;
    md_buf_init(&result, c->lim->max_file);
    e = md_insert(ent.content, ent.content_len, cmd->insert_line, cmd->insert_text.p,
                  cmd->insert_text.n, &result, c->out);
    if (e == MD_ETOOBIG) {
        size_t ins = cmd->insert_text.n;
        if (ins > 0 && cmd->insert_text.p[ins - 1] == '\n')
            ins--;
        e = too_big(c, ent.content_len + ins + 1);
    }
    if (!e)
        e = save_file(c, &result, ent.size);
    if (!e)
        e = cmd_say1(c->out, MD_OK, "The file ", cmd->path.raw, " has been edited.");
    md_buf_free(&result);
    return e;
}
