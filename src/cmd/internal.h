/*
 * internal.h — what the files of the commands share (src/cmd/): the
 * context a command runs in, its handlers (the command table of parse.c,
 * md_commands.def, names them), and the helpers they share (say.c,
 * precond.c). Not a public interface: see md_cmd.h.
 *
 * The files: parse.c (the command table: parsing a request against it,
 * running a command by it), view.c, edit.c, tree.c, history.c (restore,
 * redact), limits.c (limits, erase), import.c (the commands), say.c and
 * precond.c (their shared texts, entity tags and preconditions), quota.c
 * (md_quota.h), search.c (md_search.h), writer.c (md_writer.h: the writer
 * thread that runs the writes).
 */
#ifndef MD_CMD_INTERNAL_H
#define MD_CMD_INTERNAL_H

#include "cmd/md_cmd.h"

/* Everything a command needs while it runs. */
struct cmd_ctx {
    struct md_txn *t;
    const char *tenant;
    const struct md_cmd *cmd;
    const struct md_limits *lim;
    struct md_buf *out;
    struct md_cmd_result *res;
};

typedef enum md_err (*cmd_fn)(struct cmd_ctx *c);

enum md_err cmd_view(struct cmd_ctx *c);
enum md_err cmd_create(struct cmd_ctx *c);
enum md_err cmd_str_replace(struct cmd_ctx *c);
enum md_err cmd_insert(struct cmd_ctx *c);
enum md_err cmd_delete(struct cmd_ctx *c);
enum md_err cmd_rename(struct cmd_ctx *c);
enum md_err cmd_restore(struct cmd_ctx *c);
enum md_err cmd_redact(struct cmd_ctx *c);
enum md_err cmd_limits(struct cmd_ctx *c);
enum md_err cmd_erase(struct cmd_ctx *c);
enum md_err cmd_import(struct cmd_ctx *c);
enum md_err cmd_clear(struct cmd_ctx *c);

/* A key that sees one subtree (cmd->root; subtree.c): MD_OK when the write
 * command may run, else its error with the text in `out`. Before the
 * command begins: nothing is recorded. */
enum md_err cmd_subtree_gate(const struct md_cmd *cmd, struct md_buf *out);

/* A directory's children (tree.c): cmd_children_list fills `out` (path,
 * malloc'd, kind, size), cmd_children_free frees it. MD_ENOENT: no such
 * tenant or directory. */
struct cmd_children {
    struct cmd_child {
        char *path;
        size_t len;
        int dir;
        int64_t size;
    } * c;
    size_t n, cap;
    enum md_err err;
};
enum md_err cmd_children_list(struct cmd_ctx *c, const char *dir, size_t len,
                              struct cmd_children *out);
void cmd_children_free(struct cmd_children *ch);

/* The JSON answer of an import (import.c), in `out`. */
enum md_err cmd_import_answer(const char *tenant, const struct md_cmd *cmd,
                              const struct md_cmd_result *res, struct md_buf *out);

/* The command's preconditions (If-Match, If-None-Match) against what is at
 * `p` now (`found`, and then `e`): MD_OK, or MD_EPRECOND with the text the
 * model can act on in c->out. */
enum md_err cmd_precond(struct cmd_ctx *c, const struct md_patharg *p, int found,
                        const struct md_entry *e);

/* The SHA-256 of a new content into c->res (the ETag of the file written)
 * and `out`. */
enum md_err cmd_hash(struct cmd_ctx *c, const char *content, size_t len,
                     unsigned char out[MD_SHA256_LEN]);

/* Append pre + a + mid + b + post to out (any may be empty/NULL) and
 * return `result` (or a buffer error). */
enum md_err cmd_say(struct md_buf *out, enum md_err result, const char *pre, struct md_str a,
                    const char *mid, struct md_str b, const char *post);

/* cmd_say with one string. */
enum md_err cmd_say1(struct md_buf *out, enum md_err result, const char *pre, struct md_str a,
                     const char *post);

/* A "does not exist" error: pre + path + post, then, when the path is not
 * in Unicode Normalization Form C and nothing at all is at it (something_there
 * 0: a directory where the command wants a file gets the plain text), a note
 * that paths are compared byte for byte (a name that looks the same may be
 * encoded differently). */
enum md_err cmd_not_found(struct md_buf *out, const char *pre, struct md_str path, const char *post,
                          int something_there);

static inline int cmd_is_root(const struct md_patharg *p)
{
    return p->canon_len == MD_ROOT_LEN;
}

static inline struct md_str cmd_raw(const struct md_patharg *p)
{
    return p->raw;
}

#endif
