/* history.c — operations on history that run as writes: restore and
 * redact (POST /v1/restore, /v1/redact).
 *
 * Refusals: the texts of md_refusals.h. The paths in them, canonical or
 * as sent (md_path_canon took them), hold no NUL: they go in as %.*s. */
#include <stdlib.h>
#include <string.h>

#include "base/md_refusals.h"
#include "cmd/md_quota.h"
#include "internal.h"

/* A version is not kept: never given out, or pruned. */
static enum md_err not_kept(struct cmd_ctx *c, int64_t version)
{
    enum md_err e = md_buf_puts(c->out, MD_ERROR_PREFIX);
    return e ? e : md_buf_say(c->out, MD_R_VERSION_NOT_KEPT, (long long)version);
}

/* The version, asked for `path`, is of another path; for a key that sees
 * one subtree, a version of a path outside it is as one not kept. */
static enum md_err other_path(struct cmd_ctx *c, const struct md_version *v)
{
    const struct md_cmd *cmd = c->cmd;
    if (md_path_within(v->path, v->path_len, cmd->root, cmd->root_len) != MD_IN_SUBTREE)
        return not_kept(c, v->version);
    const struct md_str *raw = &c->cmd->path.raw;
    return md_buf_say(c->out, MD_R_VERSION_OTHER_PATH, (long long)v->version, (int)v->path_len,
                      v->path, (int)raw->n, raw->p);
}

static enum md_err redacted(struct cmd_ctx *c, int64_t version, const char *p, size_t n)
{
    return md_buf_say(c->out, MD_R_VERSION_REDACTED, (long long)version, (int)n, p);
}

static enum md_err is_a_directory(struct cmd_ctx *c, const char *p, size_t n)
{
    return md_buf_say(c->out, MD_R_RESTORE_DIRECTORY, (int)n, p);
}

/* Put `content` back at canonical path p (a file now, or nothing). */
static enum md_err write_back(struct cmd_ctx *c, const char *p, size_t n, const char *content,
                              size_t len, int64_t *restored, int64_t *unchanged)
{
    if (len > c->lim->max_file)
        return md_buf_say(c->out, MD_R_RESTORE_TOO_BIG, (int)n, p, len, c->lim->max_file);
    struct md_locate l = {.path = p, .len = n, .want_parent = 1};
    int exists;
    enum md_err e = md_txn_locate(c->t, c->tenant, &l, 1, &exists);
    if (e)
        return e;
    if (l.found && l.e.kind == MD_KIND_DIR)
        return is_a_directory(c, p, n);
    if (!l.found && l.anc_kind == MD_KIND_FILE)
        return md_buf_say(c->out, MD_R_RESTORE_UNDER_FILE, (int)n, p, (int)l.anc_len, p);
    unsigned char sha[MD_SHA256_LEN];
    if ((e = cmd_hash(c, content, len, sha)) != MD_OK)
        return e;
    if (l.found && l.e.has_sha256 && memcmp(l.e.sha256, sha, MD_SHA256_LEN) == 0 && unchanged) {
        (*unchanged)++;
        return MD_OK;
    }
    /* Within the tenant's quota (the content and the hash are ours). */
    e = md_quota_check(c->t, c->tenant, c->lim, (int64_t)len - (l.found ? l.e.size : 0),
                       l.found ? 0 : 1, c->out);
    if (e)
        return e;
    e = md_txn_put_file(c->t, c->tenant, p, n, content, len, sha, l.found ? l.e.size : -1,
                        l.found ? md_path_parent_len(p, n) : l.anc_len);
    if (!e)
        (*restored)++;
    return e;
}

static enum md_err restore_version(struct cmd_ctx *c)
{
    const struct md_patharg *p = &c->cmd->path;
    /* Preconditions against the file there now (If-Match: put the old
     * content back only over the content the caller saw). */
    struct md_locate now = {.path = p->canon, .len = p->canon_len};
    int exists;
    enum md_err e = md_txn_locate(c->t, c->tenant, &now, 1, &exists);
    if (!e)
        e = cmd_precond(c, p, now.found, &now.e);
    if (e)
        return e;
    struct md_version v;
    e = md_txn_version_get(c->t, c->tenant, c->cmd->version, 1, &v);
    if (e == MD_ENOENT)
        return not_kept(c, c->cmd->version);
    if (e)
        return e;
    if (v.path_len != p->canon_len || memcmp(v.path, p->canon, p->canon_len) != 0)
        return other_path(c, &v);
    if (v.redacted)
        return redacted(c, v.version, p->canon, p->canon_len);
    if (!v.existed)
        return md_buf_say(c->out, MD_R_RESTORE_NOT_EXISTED, (long long)v.version, (int)p->raw.n,
                          p->raw.p);
    /* The content is borrowed from the store until its next call. */
    char *content = malloc(v.content_len ? v.content_len : 1);
    if (!content)
        return MD_ENOMEM;
    memcpy(content, v.content, v.content_len);
    e = write_back(c, p->canon, p->canon_len, content, v.content_len, &c->res->restored, NULL);
    free(content);
    return e;
}

/* What one path was just before version `before` (md_txn_state_before). */
struct state {
    char *path;
    size_t len;
    int existed;
    char *content;
    size_t content_len;
    int removed; /* the restore removed the file there */
};

struct states {
    struct cmd_ctx *c;
    int64_t before;
    struct state *s;
    size_t n, cap;
    enum md_err err;
};

static int collect_state(void *ctx, const struct md_version *v)
{
    struct states *ss = ctx;
    if (v->pruned_through >= ss->before) {
        ss->err = md_buf_say(ss->c->out, MD_R_RESTORE_PRUNED, (int)v->path_len, v->path,
                             (long long)ss->before);
        return 1;
    }
    if (v->existed && v->redacted) {
        ss->err = redacted(ss->c, v->version, v->path, v->path_len);
        return 1;
    }
    if (ss->n == ss->cap) {
        size_t cap = ss->cap ? ss->cap * 2 : 64;
        struct state *s = realloc(ss->s, cap * sizeof *s);
        if (!s) {
            ss->err = MD_ENOMEM;
            return 1;
        }
        ss->s = s;
        ss->cap = cap;
    }
    struct state *st = &ss->s[ss->n];
    *st = (struct state){NULL, v->path_len, v->existed, NULL, v->content_len, 0};
    st->path = malloc(v->path_len + 1);
    st->content = v->existed ? malloc(v->content_len ? v->content_len : 1) : NULL;
    if (!st->path || (v->existed && !st->content)) {
        free(st->path);
        free(st->content);
        ss->err = MD_ENOMEM;
        return 1;
    }
    memcpy(st->path, v->path, v->path_len);
    st->path[v->path_len] = '\0';
    if (v->existed)
        memcpy(st->content, v->content, v->content_len);
    ss->n++;
    return 0;
}

static int count_entry(void *ctx, const char *path, size_t len, enum md_kind kind, int64_t size)
{
    (void)path, (void)len, (void)kind, (void)size;
    (*(size_t *)ctx)++;
    return 1; /* one is enough */
}

static int longer_first(const void *a, const void *b)
{
    size_t x = strlen(*(char *const *)a), y = strlen(*(char *const *)b);
    return (x < y) - (x > y);
}

/* Directories are not versioned: the directories that the removals left
 * empty (ancestors of removed files, the root aside) go too, deepest
 * first, so that a tree is as it stood (a directory renamed away, say). A
 * directory that was empty before the restore is left. */
static enum md_err remove_emptied(struct cmd_ctx *c, const struct states *ss)
{
    size_t n = 0, cap = 0;
    char **dirs = NULL;
    enum md_err e = MD_OK;
    for (size_t i = 0; i < ss->n && !e; i++) {
        if (!ss->s[i].removed)
            continue;
        for (size_t len = md_path_parent_len(ss->s[i].path, ss->s[i].len); len > MD_ROOT_LEN;
             len = md_path_parent_len(ss->s[i].path, len)) {
            size_t k = 0;
            while (k < n && !(strlen(dirs[k]) == len && memcmp(dirs[k], ss->s[i].path, len) == 0))
                k++;
            if (k < n)
                continue;
            if (n == cap) {
                char **d = realloc(dirs, (cap ? cap * 2 : 16) * sizeof *d);
                if (!d) {
                    e = MD_ENOMEM;
                    break;
                }
                dirs = d;
                cap = cap ? cap * 2 : 16;
            }
            if (!(dirs[n] = strndup(ss->s[i].path, len))) {
                e = MD_ENOMEM;
                break;
            }
            n++;
        }
    }
    if (n)
        qsort(dirs, n, sizeof *dirs, longer_first);
    for (size_t k = 0; k < n && !e; k++) {
        size_t len = strlen(dirs[k]), children = 0;
        struct md_locate l = {.path = dirs[k], .len = len};
        int exists;
        e = md_txn_locate(c->t, c->tenant, &l, 1, &exists);
        if (!e && l.found && l.e.kind == MD_KIND_DIR)
            e = md_txn_list(c->t, c->tenant, dirs[k], len, count_entry, &children);
        if (!e && l.found && l.e.kind == MD_KIND_DIR && children == 0)
            e = md_txn_remove_tree(c->t, c->tenant, dirs[k], len, 0);
    }
    for (size_t k = 0; k < n; k++)
        free(dirs[k]);
    free(dirs);
    return e;
}

static enum md_err restore_before(struct cmd_ctx *c)
{
    const struct md_patharg *p = &c->cmd->path;
    int64_t before = c->cmd->before;
    struct md_version v;
    enum md_err e = md_txn_version_get(c->t, c->tenant, before, 0, &v);
    if (e == MD_ENOENT)
        return not_kept(c, before);
    if (e)
        return e;
    struct states ss = {c, before, NULL, 0, 0, MD_OK};
    e = md_txn_state_before(c->t, c->tenant, p->canon, p->canon_len, &ss.before, collect_state,
                            &ss);
    if (!e)
        e = ss.err;
    /* Removals first (a file may have to go before another takes its place
     * as a directory), then the directories they leave empty, then the
     * contents, in path order. */
    for (int pass = 0; pass < 2 && !e; pass++) {
        if (pass == 1)
            e = remove_emptied(c, &ss);
        for (size_t i = 0; i < ss.n && !e; i++) {
            struct state *st = &ss.s[i];
            if (st->existed != (pass == 1))
                continue;
            if (pass == 1) {
                e = write_back(c, st->path, st->len, st->content, st->content_len,
                               &c->res->restored, &c->res->unchanged);
                continue;
            }
            struct md_locate l = {.path = st->path, .len = st->len};
            int exists;
            e = md_txn_locate(c->t, c->tenant, &l, 1, &exists);
            if (!e && l.found && l.e.kind == MD_KIND_FILE) {
                e = md_txn_remove_tree(c->t, c->tenant, st->path, st->len, l.e.size);
                c->res->removed++;
                st->removed = 1;
            } else if (!e) {
                c->res->unchanged++;
            }
        }
    }
    for (size_t i = 0; i < ss.n; i++) {
        free(ss.s[i].path);
        free(ss.s[i].content);
    }
    free(ss.s);
    return e;
}

enum md_err cmd_restore(struct cmd_ctx *c)
{
    const struct md_cmd *cmd = c->cmd;
    if (cmd->before > 0 && md_precond_given(&cmd->pre))
        return md_buf_say(c->out, MD_R_RESTORE_PRECOND);
    if ((cmd->version > 0) == (cmd->before > 0) || cmd->version < 0 || cmd->before < 0)
        return md_buf_say(c->out, MD_R_RESTORE_EITHER);
    if (cmd_is_root(&cmd->path) && cmd->version > 0)
        return is_a_directory(c, cmd->path.canon, cmd->path.canon_len);
    return cmd->version > 0 ? restore_version(c) : restore_before(c);
}

enum md_err cmd_redact(struct cmd_ctx *c)
{
    const struct md_patharg *p = &c->cmd->path;
    if (c->cmd->version <= 0)
        return md_buf_say(c->out, MD_R_REDACT_VERSION);
    if (md_precond_given(&c->cmd->pre))
        return md_buf_say(c->out, MD_R_REDACT_PRECOND);
    struct md_version v;
    enum md_err e = md_txn_version_get(c->t, c->tenant, c->cmd->version, 0, &v);
    if (e == MD_ENOENT)
        return not_kept(c, c->cmd->version);
    if (e)
        return e;
    if (v.path_len != p->canon_len || memcmp(v.path, p->canon, p->canon_len) != 0)
        return other_path(c, &v);
    if (!v.existed)
        return md_buf_say(c->out, MD_R_REDACT_NOT_EXISTED, (long long)v.version, (int)p->raw.n,
                          p->raw.p);
    if (v.redacted)
        return MD_OK; /* already: nothing left to erase */
    return md_txn_redact(c->t, c->tenant, c->cmd->version);
}
