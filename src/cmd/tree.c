/* tree.c — commands that move or remove whole subtrees: delete, rename,
 * clear (every file); a directory's children listed (cmd_children_list). */
#include <stdlib.h>
#include <string.h>

#include "base/md_refusals.h"
#include "internal.h"

enum md_err cmd_delete(struct cmd_ctx *c)
{
    const struct md_patharg *p = &c->cmd->path;
    if (cmd_is_root(p))
        return md_buf_puts(c->out, "Error: Cannot delete the /memories directory itself")
                   ? MD_ENOMEM
                   : MD_EINVAL;
    struct md_locate l = {.path = p->canon, .len = p->canon_len};
    int exists;
    enum md_err e = md_txn_locate(c->t, c->tenant, &l, 1, &exists);
    if (!e)
        e = cmd_precond(c, p, l.found, &l.e);
    if (!e && !l.found)
        return cmd_not_found(c->out, "Error: The path ", p->raw, " does not exist", 0);
    if (!e)
        e = md_txn_remove_tree(c->t, c->tenant, p->canon, p->canon_len, l.e.size);
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
    struct md_locate l[2] = {{.path = to->canon, .len = to->canon_len, .want_parent = 1},
                             {.path = from->canon, .len = from->canon_len}};
    int exists;
    enum md_err e = md_txn_locate(c->t, c->tenant, l, 2, &exists);
    if (!e)
        e = cmd_precond(c, from, l[1].found, &l[1].e);
    if (e)
        return e;
    const struct md_locate *dst = &l[0], *src = &l[1];
    if (dst->found)
        return cmd_say1(c->out, MD_EEXIST, "Error: The destination ", to->raw, " already exists");
    if (!src->found)
        return cmd_not_found(c->out, "Error: The path ", from->raw, " does not exist", 0);
    if (src->e.kind == MD_KIND_DIR &&
        md_path_is_inside(to->canon, to->canon_len, from->canon, from->canon_len))
        return cmd_say(c->out, MD_ECONFLICT, "Error: Cannot rename ", from->raw, " to ", to->raw,
                       ": a directory cannot be moved inside itself");
    if (dst->anc_kind == MD_KIND_FILE) {
        e = cmd_say(c->out, MD_OK, "Error: Cannot rename ", from->raw, " to ", to->raw, ": ");
        return cmd_say1(c->out, e ? e : MD_ECONFLICT, NULL,
                        (struct md_str){to->canon, dst->anc_len}, " is a file, not a directory");
    }
    e = md_txn_move_tree(c->t, c->tenant, from->canon, from->canon_len, to->canon, to->canon_len,
                         src->e.size, dst->anc_len);
    if (!e)
        e = cmd_say(c->out, MD_OK, "Successfully renamed ", from->raw, " to ", to->raw, NULL);
    return e;
}

/* A directory's children, listed (cmd_children_list). */
static int on_child(void *ctx, const char *path, size_t len, enum md_kind kind, int64_t size)
{
    struct cmd_children *ch = ctx;
    if (ch->n == ch->cap) {
        size_t cap = ch->cap ? ch->cap * 2 : 16;
        struct cmd_child *c = realloc(ch->c, cap * sizeof *c);
        if (!c) {
            ch->err = MD_ENOMEM;
            return 1;
        }
        ch->c = c;
        ch->cap = cap;
    }
    char *p = strndup(path, len);
    if (!p) {
        ch->err = MD_ENOMEM;
        return 1;
    }
    ch->c[ch->n++] = (struct cmd_child){p, len, kind == MD_KIND_DIR, size};
    return 0;
}

enum md_err cmd_children_list(struct cmd_ctx *c, const char *dir, size_t len,
                              struct cmd_children *out)
{
    *out = (struct cmd_children){0};
    enum md_err e = md_txn_list(c->t, c->tenant, dir, len, on_child, out);
    return e ? e : out->err;
}

void cmd_children_free(struct cmd_children *ch)
{
    for (size_t i = 0; i < ch->n; i++)
        free(ch->c[i].path);
    free(ch->c);
    *ch = (struct cmd_children){0};
}

/* The files below `top` (a list of children: emptied here). */
static enum md_err files_below(struct cmd_ctx *c, struct cmd_children *top, int64_t *files)
{
    enum md_err e = MD_OK;
    *files = 0;
    while (!e && top->n > 0) {
        struct cmd_child ch = top->c[--top->n];
        if (ch.dir) {
            e = md_txn_list(c->t, c->tenant, ch.path, ch.len, on_child, top);
            if (!e)
                e = top->err;
        } else {
            (*files)++;
        }
        free(ch.path);
    }
    return e;
}

/* DELETE /v1/memories: every entry below the root (a key's subtree: below
 * it) removed, in this one command (history records each file; one
 * change-feed entry). */
enum md_err cmd_clear(struct cmd_ctx *c)
{
    const struct md_cmd *cmd = c->cmd;
    if (md_precond_given(&cmd->pre))
        return md_buf_say(c->out, MD_R_CLEAR_PRECOND);
    struct md_usage u = {0};
    struct cmd_children ch = {0}, count = {0};
    const char *dir = cmd->root ? cmd->root : MD_ROOT;
    size_t len = cmd->root ? cmd->root_len : MD_ROOT_LEN;
    enum md_err e = cmd->root ? MD_OK : md_txn_usage(c->t, c->tenant, &u);
    if (!e)
        e = cmd_children_list(c, dir, len, &ch);
    if (!e && cmd->root)
        e = cmd_children_list(c, dir, len, &count);
    if (!e && cmd->root)
        e = files_below(c, &count, &u.files);
    if (e == MD_ENOENT)
        e = MD_OK; /* nothing there: nothing to clear */
    for (size_t i = 0; i < ch.n && !e; i++)
        e = md_txn_remove_tree(c->t, c->tenant, ch.c[i].path, ch.c[i].len, ch.c[i].size);
    if (!e) {
        c->res->removed = u.files;
        c->res->no_change = ch.n == 0;
    }
    cmd_children_free(&count);
    cmd_children_free(&ch);
    return e;
}
