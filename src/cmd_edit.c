/* cmd_edit.c — commands that write one file: create, str_replace, insert. */
#include <string.h>

#include "cmd_internal.h"

static enum md_err too_big(struct cmd_ctx *c, size_t size)
{
    md_buf_reset(c->out);
    enum md_err e = cmd_say1(c->out, MD_OK, "Error: File ", c->cmd->path.raw, NULL);
    if (!e)
        e = md_buf_printf(c->out, " would be %zu bytes, over the %zu-byte file size limit", size,
                          c->lim->max_file);
    return e ? e : MD_ETOOBIG;
}

enum md_err cmd_create(struct cmd_ctx *c)
{
    const struct md_patharg *p = &c->cmd->path;
    if (cmd_is_root(p))
        return cmd_say1(c->out, MD_EEXIST, "Error: File ", p->raw, " already exists");
    if (c->cmd->file_text.n > c->lim->max_file)
        return too_big(c, c->cmd->file_text.n);
    enum md_err e = cmd_tenant(c, 1);
    if (e)
        return e;
    /* No lookup of the path first: the insert itself fails on an existing
     * file or directory (and its parents exist then, so none is made). */
    size_t file_len = 0;
    e = cmd_make_parents(c, p->canon, p->canon_len, &file_len);
    if (e == MD_ECONFLICT)
        return cmd_say(c->out, MD_ECONFLICT, "Error: Cannot create ", p->raw, ": ",
                       (struct md_str){p->canon, file_len}, " is a file, not a directory");
    if (!e)
        e = md_txn_insert(c->t, c->tenant, p->canon, p->canon_len, MD_KIND_FILE,
                          c->cmd->file_text.p, c->cmd->file_text.n);
    if (e == MD_EEXIST)
        return cmd_say1(c->out, MD_EEXIST, "Error: File ", p->raw, " already exists");
    if (!e)
        e = cmd_add_to_ancestors(c, p->canon, p->canon_len, (int64_t)c->cmd->file_text.n);
    if (!e)
        e = cmd_say1(c->out, MD_OK, "File created successfully at: ", p->raw, NULL);
    return e;
}

/* Read a file for editing. On MD_ENOENT (missing, or a directory) the
 * caller writes its own message. */
static enum md_err load_file(struct cmd_ctx *c, struct md_entry *ent)
{
    const struct md_patharg *p = &c->cmd->path;
    enum md_err e = cmd_tenant(c, 0);
    if (!e)
        e = md_txn_get(c->t, c->tenant, p->canon, p->canon_len, 1, ent);
    if (!e && ent->kind != MD_KIND_FILE)
        e = MD_ENOENT;
    return e;
}

/* Store the edited content and keep directory sizes right. */
static enum md_err save_file(struct cmd_ctx *c, const struct md_buf *content, int64_t old_size)
{
    const struct md_patharg *p = &c->cmd->path;
    enum md_err e = md_txn_set_content(c->t, c->tenant, p->canon, p->canon_len,
                                       content->data ? content->data : "", content->len);
    if (!e)
        e = cmd_add_to_ancestors(c, p->canon, p->canon_len, (int64_t)content->len - old_size);
    return e;
}

enum md_err cmd_str_replace(struct cmd_ctx *c)
{
    const struct md_cmd *cmd = c->cmd;
    struct md_entry ent;
    enum md_err e = load_file(c, &ent);
    if (e == MD_ENOENT)
        return cmd_not_found(c->out, "Error: The path ", cmd->path.raw,
                             " does not exist. Please provide a valid path.");
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
    enum md_err e = load_file(c, &ent);
    if (e == MD_ENOENT)
        return cmd_not_found(c->out, "Error: The path ", cmd->path.raw, " does not exist");
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
