/*
 * import.c — POST /v1/tenants/{t}/import: a tar's tree written into a
 * tenant, by the writer, in one transaction of its own (all or nothing).
 *
 * The archive (read by libarchive: ustar, pax and GNU tar; no compression)
 * holds "memories/" and what is below it, as GET .../export writes it or
 * `tar -cf x.tar memories` makes it (a leading "./" or "/" is taken).
 * Regular files are written (as a create, or over the file there); a
 * directory entry is taken and makes nothing by itself (directories are
 * made as the files below them need them). Every path goes through
 * md_path_canon. Refused, with nothing written: an entry of another type
 * (links, devices), outside memories/, with a path the tool would refuse,
 * a file over --max-file or not UTF-8 text, a file where the tenant (or
 * the archive) has a directory or the reverse (409), a result over the
 * tenant's quota (507), a tenant with entries in mode "new" (409).
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/md_log.h"
#include "base/md_progress.h"
#include "base/md_refusals.h"
#include "cmd/md_quota.h"
#include "internal.h"

/* libarchive's read block. */
#define IMPORT_BLOCK ((size_t)64 * 1024)

static enum md_err refused(struct cmd_ctx *c, enum md_err e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A refusal (MD_R_IMPORT_... of md_refusals.h and its values) in c->out,
 * alone, after MD_ERROR_PREFIX. */
static enum md_err refused(struct cmd_ctx *c, enum md_err e, const char *fmt, ...)
{
    /* The texts are short (a name is shown cut at 256 bytes): one is cut
     * at 1045 bytes ("Nothing was imported: " and 1023 more) all the same. */
    char msg[1046];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    md_buf_reset(c->out);
    enum md_err be = n < 0 ? MD_EINVAL : md_buf_puts(c->out, MD_ERROR_PREFIX);
    if (!be)
        be = md_buf_append(c->out, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    return be ? be : e;
}

/* libarchive's own words, for the operator (they hold no content). */
static void log_archive_error(struct cmd_ctx *c, struct archive *a)
{
    struct md_logline l;
    md_log_begin(&l, MD_LOG_WARN, "import refused: unreadable archive");
    md_log_str(&l, "tenant", c->tenant);
    md_log_str(&l, "error", archive_error_string(a) ? archive_error_string(a) : "");
    md_log_end(&l);
}

static enum md_err not_tar(struct cmd_ctx *c, struct archive *a)
{
    log_archive_error(c, a);
    return refused(c, MD_R_IMPORT_NOT_TAR);
}

/* An entry's name as it may be shown: printable UTF-8, cut at 256 bytes. */
static const char *shown(const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);
    if (n > 256)
        n = md_utf8_cut(name, 256);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return MD_IMPORT_NAME_CONTROL;
    if (!md_utf8_valid(name, n))
        return MD_IMPORT_NAME_NOT_UTF8;
    snprintf(buf, len, "%.*s%s", (int)n, name, n < strlen(name) ? "..." : "");
    return buf;
}

/* An entry that is neither a file nor a directory (`name`: as shown). */
static enum md_err refused_type(struct cmd_ctx *c, struct archive_entry *en, const char *name)
{
    if (archive_entry_hardlink(en))
        return refused(c, MD_R_IMPORT_HARD_LINK, name);
    if (archive_entry_filetype(en) == AE_IFLNK)
        return refused(c, MD_R_IMPORT_SYMLINK, name);
    return refused(c, MD_R_IMPORT_SPECIAL, name);
}

/* The canonical path of an archive entry's name into *canon (malloc'd),
 * or a refusal. *skip: the name is "." or "./" (the archive's own root). */
static enum md_err entry_path(struct cmd_ctx *c, const char *name, char **canon, size_t *len,
                              int *skip)
{
    char buf[300];
    *skip = 0;
    const char *p = name;
    while (p[0] == '.' && p[1] == '/')
        p += 2;
    while (*p == '/')
        p++;
    if (strcmp(p, "") == 0 || strcmp(p, ".") == 0) {
        *skip = 1;
        return MD_OK;
    }
    static const char root[] = "memories";
    size_t n = strlen(p);
    while (n > 0 && p[n - 1] == '/')
        n--; /* a directory's trailing slash */
    if (n < sizeof root - 1 || memcmp(p, root, sizeof root - 1) != 0 ||
        (n > sizeof root - 1 && p[sizeof root - 1] != '/'))
        return refused(c, MD_R_IMPORT_OUTSIDE, shown(name, buf, sizeof buf));
    /* "/memories/..." as a client would send it, then canonical. */
    char *in = malloc(n + 2);
    char *out = malloc(n + 2 + MD_ROOT_LEN);
    if (!in || !out) {
        free(in);
        free(out);
        return MD_ENOMEM;
    }
    in[0] = '/';
    memcpy(in + 1, p, n);
    in[n + 1] = '\0';
    enum md_path_status st = md_path_canon(in, n + 1, &c->lim->path, out, len);
    if (st != MD_PATH_OK) {
        struct md_buf why;
        md_buf_init(&why, (size_t)64 * 1024);
        enum md_err e = md_path_errmsg(&why, st, in, n + 1, &c->lim->path);
        const char *text = why.data ? why.data : "";
        if (strncmp(text, MD_ERROR_PREFIX, sizeof MD_ERROR_PREFIX - 1) == 0)
            text += sizeof MD_ERROR_PREFIX - 1;
        if (!e)
            e = refused(c, MD_R_IMPORT_BAD_PATH, shown(name, buf, sizeof buf), text);
        md_buf_free(&why);
        free(in);
        free(out);
        return e;
    }
    free(in);
    *canon = out;
    return MD_OK;
}

/* Read the entry's data (its size announced: `size`) into `content`. */
static enum md_err read_content(struct cmd_ctx *c, struct archive *a, const char *name,
                                int64_t size, struct md_buf *content)
{
    char buf[300];
    if (size < 0 || (uint64_t)size > c->lim->max_file)
        return refused(c, MD_R_IMPORT_FILE_TOO_BIG, shown(name, buf, sizeof buf), (long long)size,
                       c->lim->max_file);
    md_buf_reset(content);
    enum md_err e = md_buf_reserve(content, (size_t)size + 1);
    while (!e) {
        char block[16 * 1024];
        la_ssize_t got = archive_read_data(a, block, sizeof block);
        if (got == 0)
            break;
        if (got < 0 || content->len + (size_t)got > (size_t)size) {
            log_archive_error(c, a);
            return refused(c, MD_R_IMPORT_CUT_SHORT, shown(name, buf, sizeof buf));
        }
        e = md_buf_append(content, block, (size_t)got);
    }
    if (e)
        return e;
    if (!md_utf8_valid(content->data ? content->data : "", content->len))
        return refused(c, MD_R_IMPORT_NOT_TEXT, shown(name, buf, sizeof buf));
    return MD_OK;
}

/* Write one file at canonical `p` (new, or over the file there). */
static enum md_err put(struct cmd_ctx *c, const char *name, const char *p, size_t n,
                       const struct md_buf *content)
{
    char buf[300];
    struct md_locate l = {.path = p, .len = n, .want_parent = 1};
    int exists;
    enum md_err e = md_txn_locate(c->t, c->tenant, &l, 1, &exists);
    if (e)
        return e;
    if (l.found && l.e.kind == MD_KIND_DIR)
        return refused(c, MD_R_IMPORT_FILE_ON_DIR, shown(name, buf, sizeof buf), (int)n, p);
    if (!l.found && l.anc_kind == MD_KIND_FILE)
        return refused(c, MD_R_IMPORT_FILE_UNDER_FILE, shown(name, buf, sizeof buf), (int)l.anc_len,
                       p);
    const char *data = content->data ? content->data : "";
    unsigned char sha[MD_SHA256_LEN];
    e = md_sha256(data, content->len, sha);
    if (!e)
        e = md_txn_put_file(c->t, c->tenant, p, n, data, content->len, sha, l.found ? l.e.size : -1,
                            l.found ? md_path_parent_len(p, n) : l.anc_len);
    if (!e) {
        c->res->restored++;
        c->res->bytes += (int64_t)content->len;
    }
    return e;
}

/* A directory entry: what is there must not be a file. */
static enum md_err check_dir(struct cmd_ctx *c, const char *name, const char *p, size_t n)
{
    struct md_locate l = {.path = p, .len = n, .want_parent = 1};
    int exists;
    enum md_err e = md_txn_locate(c->t, c->tenant, &l, 1, &exists);
    if (!e && ((l.found && l.e.kind == MD_KIND_FILE) || (!l.found && l.anc_kind == MD_KIND_FILE))) {
        char buf[300];
        return refused(c, MD_R_IMPORT_DIR_ON_FILE, shown(name, buf, sizeof buf),
                       (int)(l.found ? n : l.anc_len), p);
    }
    return e;
}

/* The root's children (mode replace removes each; mode new refuses if any). */
struct children {
    char **paths;
    int64_t *sizes;
    size_t n, cap;
    enum md_err err;
};

static int on_child(void *ctx, const char *path, size_t len, enum md_kind kind, int64_t size)
{
    (void)kind;
    struct children *ch = ctx;
    if (ch->n == ch->cap) {
        size_t cap = ch->cap ? ch->cap * 2 : 16;
        char **p = realloc(ch->paths, cap * sizeof *p);
        if (p)
            ch->paths = p;
        int64_t *s = p ? realloc(ch->sizes, cap * sizeof *s) : NULL;
        if (s)
            ch->sizes = s;
        if (!p || !s) {
            ch->err = MD_ENOMEM;
            return 1;
        }
        ch->cap = cap;
    }
    ch->paths[ch->n] = strndup(path, len);
    if (!ch->paths[ch->n]) {
        ch->err = MD_ENOMEM;
        return 1;
    }
    ch->sizes[ch->n++] = size;
    return 0;
}

static enum md_err clear_root(struct cmd_ctx *c)
{
    struct children ch = {0};
    enum md_err e = md_txn_list(c->t, c->tenant, MD_ROOT, MD_ROOT_LEN, on_child, &ch);
    if (!e)
        e = ch.err;
    if (!e && ch.n > 0 && c->cmd->import_mode == MD_IMPORT_NEW)
        e = refused(c, MD_R_IMPORT_NOT_EMPTY, c->tenant);
    for (size_t i = 0; i < ch.n && !e && c->cmd->import_mode == MD_IMPORT_REPLACE; i++) {
        e = md_txn_remove_tree(c->t, c->tenant, ch.paths[i], strlen(ch.paths[i]), ch.sizes[i]);
    }
    for (size_t i = 0; i < ch.n; i++)
        free(ch.paths[i]);
    free(ch.paths);
    free(ch.sizes);
    return e;
}

/* After the writes: within the tenant's quota, or refused (unless it did
 * not grow: a replace that shrinks a tenant over its quota is taken). */
static enum md_err check_quota(struct cmd_ctx *c, const struct md_usage *before)
{
    struct md_usage u;
    enum md_err e = md_txn_usage(c->t, c->tenant, &u);
    if (e)
        return e;
    int64_t max_files = md_quota_max_files(&u, c->lim), max_bytes = md_quota_max_bytes(&u, c->lim);
    int files_over = max_files > 0 && u.files > max_files && u.files > before->files;
    int bytes_over = max_bytes > 0 && u.bytes > max_bytes && u.bytes > before->bytes;
    if (!files_over && !bytes_over)
        return MD_OK;
    char used[32], limit[32];
    md_quota_size(u.bytes, used, sizeof used);
    md_quota_size(max_bytes, limit, sizeof limit);
    if (files_over)
        return refused(c, MD_R_IMPORT_FILES_OVER, (long long)u.files, (long long)max_files);
    return refused(c, MD_R_IMPORT_BYTES_OVER, used, limit);
}

enum md_err cmd_import(struct cmd_ctx *c)
{
    struct md_usage before;
    enum md_err e = md_txn_usage(c->t, c->tenant, &before);
    if (!e && c->cmd->import_mode != MD_IMPORT_MERGE)
        e = clear_root(c);
    if (!e && c->cmd->import_mode == MD_IMPORT_REPLACE)
        c->res->removed = before.files;
    if (e)
        return e;
    struct archive *a = archive_read_new();
    if (!a)
        return MD_ENOMEM;
    /* Progress in bytes of the archive read: a log line every few seconds of a
     * long import (md_progress.h). */
    struct stat st;
    struct md_progress progress;
    md_progress_begin(&progress, "import", "bytes",
                      fstat(c->cmd->import_fd, &st) == 0 ? (int64_t)st.st_size : 0, 0);
    struct md_buf content;
    md_buf_init(&content, c->lim->max_file + 1);
    archive_read_support_format_tar(a);
    /* Names as stored are UTF-8 (as memoryd's paths are). */
    archive_read_set_options(a, "hdrcharset=UTF-8");
    if (lseek(c->cmd->import_fd, 0, SEEK_SET) != 0 ||
        archive_read_open_fd(a, c->cmd->import_fd, IMPORT_BLOCK) != ARCHIVE_OK) {
        e = not_tar(c, a);
        goto cleanup;
    }
    for (;;) {
        md_progress_update(&progress, archive_filter_bytes(a, -1));
        struct archive_entry *en;
        int rc = archive_read_next_header(a, &en);
        if (rc == ARCHIVE_EOF)
            break;
        if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
            e = not_tar(c, a);
            goto cleanup;
        }
        const char *name = archive_entry_pathname_utf8(en);
        if (!name)
            name = archive_entry_pathname(en);
        if (!name) {
            e = refused(c, MD_R_IMPORT_NAME_NOT_UTF8);
            goto cleanup;
        }
        char buf[300];
        mode_t type = archive_entry_filetype(en);
        if (archive_entry_hardlink(en) || type == AE_IFLNK ||
            (type != AE_IFREG && type != AE_IFDIR)) {
            e = refused_type(c, en, shown(name, buf, sizeof buf));
            goto cleanup;
        }
        char *p = NULL;
        size_t n = 0;
        int skip;
        e = entry_path(c, name, &p, &n, &skip);
        if (e || skip)
            goto next;
        if (type == AE_IFDIR) {
            e = check_dir(c, name, p, n);
        } else if (n == MD_ROOT_LEN) {
            e = refused(c, MD_R_IMPORT_ROOT, shown(name, buf, sizeof buf));
        } else {
            e = read_content(c, a, name, archive_entry_size(en), &content);
            if (!e)
                e = put(c, name, p, n, &content);
        }
    next:
        free(p);
        if (e)
            goto cleanup;
    }
    e = check_quota(c, &before);
    md_progress_end(&progress);
cleanup:
    md_buf_free(&content);
    archive_read_free(a);
    return e;
}
