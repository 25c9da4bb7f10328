/* cmd_view.c — the view command: a file with line numbers, or a directory
 * listing two levels deep. */
#include <stdlib.h>
#include <string.h>

#include "cmd_internal.h"

/* Room kept at the end of a listing for the truncation note. */
#define LIST_NOTE_RESERVE 160

struct child {
    size_t off, len; /* of the path in `paths` */
    enum md_kind kind;
    int64_t size;
};

struct listing {
    struct md_buf *out;
    size_t budget;       /* stop adding entries beyond this many bytes */
    size_t entries;      /* entries written */
    int full;            /* the budget ran out */
    struct md_buf paths; /* level-1 children: path bytes */
    struct child *kids;
    size_t nkids, capkids;
};

static int hidden(const char *path, size_t len)
{
    size_t i = len;
    while (i > 0 && path[i - 1] != '/')
        i--;
    const char *name = path + i;
    size_t n = len - i;
    return (n > 0 && name[0] == '.') || (n == 12 && memcmp(name, "node_modules", 12) == 0);
}

/* Append "\n{size}\t{path}[/]" unless it would pass the budget. */
static int put_entry(struct listing *l, const char *path, size_t len, enum md_kind kind,
                     int64_t size)
{
    char sz[24];
    size_t szn = md_size_format((uint64_t)size, sz);
    size_t need = 1 + szn + 1 + len + (kind == MD_KIND_DIR);
    if (l->out->len + need > l->budget) {
        l->full = 1;
        return 1;
    }
    struct md_buf *o = l->out;
    if (md_buf_putc(o, '\n') || md_buf_append(o, sz, szn) || md_buf_putc(o, '\t') ||
        md_buf_append(o, path, len) || (kind == MD_KIND_DIR && md_buf_putc(o, '/'))) {
        l->full = 1;
        return 1;
    }
    l->entries++;
    return 0;
}

/* Level 2: written straight out. */
static int on_grandchild(void *ctx, const char *path, size_t len, enum md_kind kind, int64_t size)
{
    struct listing *l = ctx;
    if (hidden(path, len))
        return 0;
    return put_entry(l, path, len, kind, size);
}

/* Level 1: remembered, since listing a subdirectory needs the store again. */
static int on_child(void *ctx, const char *path, size_t len, enum md_kind kind, int64_t size)
{
    struct listing *l = ctx;
    if (hidden(path, len))
        return 0;
    if (l->paths.len + len > l->budget) {
        l->full = 1; /* these alone would not fit in the output */
        return 1;
    }
    if (l->nkids == l->capkids) {
        size_t cap = l->capkids ? l->capkids * 2 : 32;
        struct child *k = realloc(l->kids, cap * sizeof *k);
        if (!k) {
            l->full = 1;
            return 1;
        }
        l->kids = k;
        l->capkids = cap;
    }
    struct child *k = &l->kids[l->nkids];
    k->off = l->paths.len;
    k->len = len;
    k->kind = kind;
    k->size = size;
    if (md_buf_append(&l->paths, path, len)) {
        l->full = 1;
        return 1;
    }
    l->nkids++;
    return 0;
}

static enum md_err view_dir(struct cmd_ctx *c, const struct md_patharg *p, int64_t size)
{
    struct md_buf *out = c->out;
    struct listing l = {out, 0, 0, 0, {0}, NULL, 0, 0};
    md_buf_init(&l.paths, c->lim->max_view);
    l.budget = c->lim->max_view > LIST_NOTE_RESERVE ? c->lim->max_view - LIST_NOTE_RESERVE : 0;

    enum md_err e =
        cmd_say1(out, MD_OK, "Here're the files and directories up to 2 levels deep in ", p->raw,
                 ", excluding hidden items and node_modules:");
    char sz[24];
    size_t szn = md_size_format((uint64_t)size, sz);
    if (!e)
        e = md_buf_putc(out, '\n');
    if (!e)
        e = md_buf_append(out, sz, szn);
    if (!e)
        e = md_buf_putc(out, '\t');
    /* The first line echoes the path as sent (`/memories/d/` keeps its
     * slash, as the SDK shows it); the entries below are canonical. */
    if (!e)
        e = md_buf_append(out, p->raw.p, p->raw.n);
    if (!e && c->tenant > 0)
        e = md_txn_list(c->t, c->tenant, p->canon, p->canon_len, on_child, &l);
    int kids_full = l.full;
    l.full = 0;
    for (size_t i = 0; !e && !l.full && i < l.nkids; i++) {
        const struct child *k = &l.kids[i];
        const char *kp = l.paths.data + k->off;
        if (put_entry(&l, kp, k->len, k->kind, k->size))
            break;
        if (k->kind == MD_KIND_DIR)
            e = md_txn_list(c->t, c->tenant, kp, k->len, on_grandchild, &l);
    }
    if (!e && (l.full || kids_full))
        e = md_buf_printf(out,
                          "\n[Listing truncated at the %zu-byte view limit after %zu entries. "
                          "View a subdirectory to see the rest.]",
                          c->lim->max_view, l.entries);
    md_buf_free(&l.paths);
    free(l.kids);
    return e;
}

enum md_err cmd_view(struct cmd_ctx *c)
{
    const struct md_patharg *p = &c->cmd->path;
    enum md_err e = cmd_tenant(c, 0);
    if (e == MD_ENOENT && cmd_is_root(p))
        return view_dir(c, p, 0); /* a tenant with no data: an empty root */
    struct md_entry ent;
    if (!e)
        e = md_txn_get(c->t, c->tenant, p->canon, p->canon_len, 1, &ent);
    if (e == MD_ENOENT)
        return cmd_not_found(c->out, "The path ", p->raw,
                             " does not exist. Please provide a valid path.");
    if (e)
        return e;
    if (ent.kind == MD_KIND_DIR)
        return view_dir(c, p, ent.size);
    return md_view_file(c->out, p->raw.p, p->raw.n, ent.content, ent.content_len, &c->cmd->range,
                        c->lim->max_view);
}
