/* view.c — the view command: a file with line numbers, or a directory
 * listing two levels deep; for a key that sees one subtree (md_cmd.h
 * `root`), a directory above the subtree listed as holding the subtree
 * alone. */
#include <string.h>

#include "internal.h"

/* Room kept at the end of a listing for the truncation note. */
#define LIST_NOTE_RESERVE 160

struct listing {
    struct cmd_ctx *c;
    const struct md_entry *dir; /* filled by the store before the first entry */
    size_t budget;              /* stop adding entries beyond this many bytes */
    size_t entries;             /* entries written */
    int started;                /* the header is written */
    int full;                   /* the budget ran out */
    enum md_err err;
};

/* The header sentence and the first line: the path as sent (`/memories/d/`
 * keeps its slash, as the SDK shows it); the entries below are canonical. */
static enum md_err put_header(struct listing *l)
{
    const struct md_patharg *p = &l->c->cmd->path;
    struct md_buf *out = l->c->out;
    l->started = 1;
    enum md_err e =
        cmd_say1(out, MD_OK, "Here're the files and directories up to 2 levels deep in ", p->raw,
                 ", excluding hidden items and node_modules:");
    char sz[24];
    size_t szn = md_size_format((uint64_t)l->dir->size, sz);
    if (!e)
        e = md_buf_putc(out, '\n');
    if (!e)
        e = md_buf_append(out, sz, szn);
    if (!e)
        e = md_buf_putc(out, '\t');
    if (!e)
        e = md_buf_append(out, p->raw.p, p->raw.n);
    return e;
}

/* Append "\n{size}\t{path}[/]" unless it would pass the budget. */
static int put_entry(void *ctx, const char *path, size_t len, enum md_kind kind, int64_t size)
{
    struct listing *l = ctx;
    if (!l->started && (l->err = put_header(l)) != MD_OK)
        return 1;
    char sz[24];
    size_t szn = md_size_format((uint64_t)size, sz);
    size_t need = 1 + szn + 1 + len + (kind == MD_KIND_DIR);
    struct md_buf *o = l->c->out;
    if (o->len + need > l->budget) {
        l->full = 1;
        return 1;
    }
    if (md_buf_putc(o, '\n') || md_buf_append(o, sz, szn) || md_buf_putc(o, '\t') ||
        md_buf_append(o, path, len) || (kind == MD_KIND_DIR && md_buf_putc(o, '/'))) {
        l->full = 1;
        return 1;
    }
    l->entries++;
    return 0;
}

/* The bytes of a listing's entries, before the truncation note. */
static size_t list_budget(const struct md_limits *lim)
{
    return lim->max_view > LIST_NOTE_RESERVE ? lim->max_view - LIST_NOTE_RESERVE : 0;
}

size_t md_cmd_view_entries(const struct md_limits *lim)
{
    /* An entry line is at least 15 bytes: more than this cannot fit. */
    return list_budget(lim) / 12 + 1;
}

static enum md_err not_found(struct cmd_ctx *c)
{
    return cmd_not_found(c->out, "The path ", c->cmd->path.raw,
                         " does not exist. Please provide a valid path.", 0);
}

/* The note after a listing cut short (after `entries` entries). */
static enum md_err truncated(struct cmd_ctx *c, size_t entries)
{
    return md_buf_printf(c->out,
                         "\n[Listing truncated at the %zu-byte view limit after %zu entries. "
                         "View a subdirectory to see the rest.]",
                         c->lim->max_view, entries);
}

/* A view of a directory above the key's subtree S: the directory as if S
 * were all it held. The listing shows the directories on the way down to S
 * (two levels deep at most, none below a hidden name), S, and S's own
 * entries when S is one level down; each directory's size is S's. */
struct above {
    struct listing l;
    const char *root;
    size_t root_len;
    size_t chain[2]; /* lengths of the prefixes of `root` listed */
    size_t nchain;
    int children_depth; /* depth of S's entries that are listed; -1: none */
    enum md_err err;
};

static enum md_err put_chain(struct above *a)
{
    const struct md_entry *s = a->l.dir;
    enum md_err e = put_header(&a->l);
    for (size_t i = 0; !e && i < a->nchain; i++) {
        int is_root = a->chain[i] == a->root_len;
        enum md_kind k = is_root ? s->kind : MD_KIND_DIR;
        if (put_entry(&a->l, a->root, a->chain[i], k, s->size))
            break;
    }
    return e;
}

static int above_entry(void *ctx, const char *path, size_t len, enum md_kind kind, int64_t size)
{
    struct above *a = ctx;
    if (!a->l.started && (a->err = put_chain(a)) != MD_OK)
        return 1;
    if (md_path_depth(path, len) != a->children_depth)
        return 0;
    return put_entry(&a->l, path, len, kind, size);
}

static enum md_err view_above(struct cmd_ctx *c)
{
    const struct md_cmd *cmd = c->cmd;
    const struct md_patharg *p = &cmd->path;
    struct md_entry s;
    struct above a = {.l = {c, &s, list_budget(c->lim), 0, 0, 0, MD_OK},
                      .root = cmd->root,
                      .root_len = cmd->root_len,
                      .children_depth = -1};
    int top = md_path_depth(p->canon, p->canon_len), d = md_path_depth(cmd->root, cmd->root_len);
    /* The prefixes of S one and two levels below the directory viewed. */
    size_t end = p->canon_len;
    for (int k = 1; k <= 2 && top + k <= d; k++) {
        size_t from = end + 1;
        end = from;
        while (end < cmd->root_len && cmd->root[end] != '/')
            end++;
        if (md_store_hidden_name(cmd->root + from, end - from))
            break;
        a.chain[a.nchain++] = end;
    }
    if (d == top + 1 && a.nchain == 1)
        a.children_depth = d + 1;
    int complete = 1;
    enum md_err e = md_txn_view(c->t, c->tenant, cmd->root, cmd->root_len, &s,
                                md_cmd_view_entries(c->lim), above_entry, &a, &complete);
    if (e == MD_ENOENT) {
        /* Nothing of S yet: /memories is there, empty; the rest is not. */
        if (!cmd_is_root(p))
            return not_found(c);
        s = (struct md_entry){.kind = MD_KIND_DIR};
        a.nchain = 0;
        e = MD_OK;
    }
    if (!e && !a.l.started)
        e = put_chain(&a);
    if (!e)
        e = a.err;
    if (!e && (a.l.full || (!complete && a.children_depth >= 0)))
        e = truncated(c, a.l.entries);
    return e;
}

enum md_err cmd_view(struct cmd_ctx *c)
{
    const struct md_patharg *p = &c->cmd->path;
    switch (md_path_within(p->canon, p->canon_len, c->cmd->root, c->cmd->root_len)) {
    case MD_ABOVE_SUBTREE:
        return view_above(c);
    case MD_OUTSIDE_SUBTREE:
        return not_found(c);
    case MD_IN_SUBTREE:
        break;
    }
    size_t max_view = c->lim->max_view;
    struct md_entry ent;
    struct listing l = {c, &ent, 0, 0, 0, 0, MD_OK};
    l.budget = list_budget(c->lim);
    int complete = 1;
    enum md_err e = md_txn_view(c->t, c->tenant, p->canon, p->canon_len, &ent,
                                md_cmd_view_entries(c->lim), put_entry, &l, &complete);
    if (e == MD_ENOENT)
        return not_found(c);
    if (e)
        return e;
    if (ent.kind == MD_KIND_FILE) {
        /* The ETag: kept with the file (hashed here only for a row written
         * without one). */
        if (ent.has_sha256) {
            memcpy(c->res->etag, ent.sha256, MD_SHA256_LEN);
            c->res->has_etag = 1;
        } else {
            unsigned char sha[MD_SHA256_LEN];
            if ((e = cmd_hash(c, ent.content, ent.content_len, sha)) != MD_OK)
                return e;
        }
        return md_view_file(c->out, p->raw.p, p->raw.n, ent.content, ent.content_len,
                            &c->cmd->range, max_view);
    }
    if (l.err)
        return l.err;
    if (!l.started)
        e = put_header(&l);
    if (!e && (l.full || !complete))
        e = truncated(c, l.entries);
    return e;
}
