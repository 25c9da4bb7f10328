/* subtree.c — keys that see one subtree (md_cmd.h `root`; docs/behaviour.md
 * 15.3): what a write command may name. A path outside the subtree answers
 * as a path that does not exist (the command's own text), whether or not
 * something is there; a write that would create or change something outside
 * the subtree, or a directory above it (which holds other subtrees), is
 * refused with one text, whatever is there. Views decide in view.c (a
 * directory above the subtree is listed as holding the subtree alone);
 * restore and redact check the version's path too (history.c); clear
 * clears the subtree (tree.c). */
#include "base/md_refusals.h"
#include "internal.h"

static enum md_within where(const struct md_cmd *cmd, const struct md_patharg *p)
{
    return md_path_within(p->canon, p->canon_len, cmd->root, cmd->root_len);
}

static enum md_err refuse(const struct md_cmd *cmd, const struct md_patharg *p, struct md_buf *out)
{
    return md_buf_say(out, MD_R_SUBTREE_OUTSIDE, (int)p->raw.n, p->raw.p, (int)cmd->root_len,
                      cmd->root);
}

/* A path the command changes where it is: outside, as if nothing were
 * there (`missing`, the command's text after the path); above, refused. */
static enum md_err existing(const struct md_cmd *cmd, const struct md_patharg *p,
                            const char *missing, struct md_buf *out)
{
    switch (where(cmd, p)) {
    case MD_OUTSIDE_SUBTREE:
        return cmd_not_found(out, "Error: The path ", p->raw, missing, 0);
    case MD_ABOVE_SUBTREE:
        return refuse(cmd, p, out);
    case MD_IN_SUBTREE:
        break;
    }
    return MD_OK;
}

/* A path the command writes whatever is there: only inside. */
static enum md_err inside(const struct md_cmd *cmd, const struct md_patharg *p, struct md_buf *out)
{
    return where(cmd, p) == MD_IN_SUBTREE ? MD_OK : refuse(cmd, p, out);
}

enum md_err cmd_subtree_gate(const struct md_cmd *cmd, struct md_buf *out)
{
    if (!cmd->root)
        return MD_OK;
    enum md_err e;
    switch (cmd->kind) {
    case MD_CMD_CREATE:
    case MD_CMD_RESTORE:
    case MD_CMD_REDACT:
        return inside(cmd, &cmd->path, out);
    case MD_CMD_STR_REPLACE:
        return existing(cmd, &cmd->path, " does not exist. Please provide a valid path.", out);
    case MD_CMD_INSERT:
    case MD_CMD_DELETE:
        return existing(cmd, &cmd->path, " does not exist", out);
    case MD_CMD_RENAME:
        e = existing(cmd, &cmd->path, " does not exist", out);
        return e ? e : inside(cmd, &cmd->path2, out);
    default:
        /* view (view.c), clear (tree.c); the rest are for admin keys,
         * which see every tenant whole. */
        return MD_OK;
    }
}
