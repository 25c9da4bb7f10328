/* cmd_tree.c — commands that move or remove whole subtrees: delete, rename. */
#include "cmd_internal.h"

enum md_err cmd_delete(struct cmd_ctx *c)
{
    const struct md_patharg *p = &c->cmd->path;
    if (cmd_is_root(p))
        return md_buf_puts(c->out, "Error: Cannot delete the /memories directory itself")
                   ? MD_ENOMEM
                   : MD_EINVAL;
    struct md_entry ent;
    enum md_err e = cmd_tenant(c, 0);
    if (!e)
        e = md_txn_get(c->t, c->tenant, p->canon, p->canon_len, 0, &ent);
    if (e == MD_ENOENT)
        return cmd_not_found(c->out, "Error: The path ", p->raw, " does not exist");
    if (!e)
        e = md_txn_remove_tree(c->t, c->tenant, p->canon, p->canon_len);
    if (!e)
        e = cmd_add_to_ancestors(c, p->canon, p->canon_len, -ent.size);
    if (!e)
        e = cmd_say1(c->out, MD_OK, "Successfully deleted ", p->raw, NULL);
    return e;
}

enum md_err cmd_rename(struct cmd_ctx *c)
{
    const struct md_patharg *from = &c->cmd->path, *to = &c->cmd->path2;
    if (cmd_is_root(from))
        return md_buf_puts(c->out, "Error: Cannot rename the /memories directory itself")
                   ? MD_ENOMEM
                   : MD_EINVAL;
    struct md_entry src, dst;
    enum md_err e = cmd_tenant(c, 0);
    if (e == MD_ENOENT) /* a tenant with no data has only the root */
        e = cmd_is_root(to) ? MD_OK : MD_ENOENT;
    else if (!e)
        e = md_txn_get(c->t, c->tenant, to->canon, to->canon_len, 0, &dst);
    if (e == MD_OK)
        return cmd_say1(c->out, MD_EEXIST, "Error: The destination ", to->raw, " already exists");
    if (e != MD_ENOENT)
        return e;
    e = c->tenant > 0 ? md_txn_get(c->t, c->tenant, from->canon, from->canon_len, 0, &src)
                      : MD_ENOENT;
    if (e == MD_ENOENT)
        return cmd_not_found(c->out, "Error: The path ", from->raw, " does not exist");
    if (e)
        return e;
    if (src.kind == MD_KIND_DIR &&
        md_path_is_inside(to->canon, to->canon_len, from->canon, from->canon_len))
        return cmd_say(c->out, MD_ECONFLICT, "Error: Cannot rename ", from->raw, " to ", to->raw,
                       ": a directory cannot be moved inside itself");
    size_t file_len = 0;
    e = cmd_make_parents(c, to->canon, to->canon_len, &file_len);
    if (e == MD_ECONFLICT) {
        e = cmd_say(c->out, MD_OK, "Error: Cannot rename ", from->raw, " to ", to->raw, ": ");
        return cmd_say1(c->out, e ? e : MD_ECONFLICT, NULL, (struct md_str){to->canon, file_len},
                        " is a file, not a directory");
    }
    if (!e)
        e = md_txn_move_tree(c->t, c->tenant, from->canon, from->canon_len, to->canon,
                             to->canon_len);
    if (!e)
        e = cmd_add_to_ancestors(c, from->canon, from->canon_len, -src.size);
    if (!e)
        e = cmd_add_to_ancestors(c, to->canon, to->canon_len, src.size);
    if (!e)
        e = cmd_say(c->out, MD_OK, "Successfully renamed ", from->raw, " to ", to->raw, NULL);
    return e;
}
