/*
 * export.c — GET /v1/tenants/{t}/export: the tenant's /memories tree
 * as a tar stream (POSIX pax, written by libarchive), read from one
 * snapshot of the database (md_store_snapshot_begin) a page at a time
 * (md_txn_scan), so that memory stays bounded whatever the tenant's size:
 * one page (EXPORT_PAGE_ROWS entries, or EXPORT_PAGE_BYTES of content plus
 * one file) of tar bytes is held at a time, per export.
 *
 * Entries: "memories/" and every directory below it ("memories/a/", mode
 * 0755), every file ("memories/a/b.txt", mode 0644), with their mtime;
 * owner 0:0 and no names. Paths are UTF-8 (a pax header carries those that
 * ustar cannot: long or non-ASCII).
 *
 * A failure once the stream has begun (the database gone, say) can no
 * longer change the status: the connection is cut before the end of the
 * archive (no end-of-archive blocks, the chunked body unterminated), which
 * every client reads as an error, never as a shorter tree.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/md_log.h"
#include "base/md_path.h"
#include "internal.h"

#define EXPORT_PAGE_ROWS  256
#define EXPORT_PAGE_BYTES ((int64_t)1 << 20)
/* libmicrohttpd asks for this much at a time. */
#define EXPORT_BLOCK ((size_t)64 * 1024)

struct export
{
    struct md_txn *t;
    char tenant[MD_TENANT_MAX + 1];
    struct archive *a;
    struct md_buf pending; /* tar bytes produced, not yet sent */
    size_t sent;           /* of pending */
    char *after;           /* the last path given ("": none yet) */
    size_t after_len;
    int more;   /* entries are left after `after` */
    int closed; /* the end of the archive is in `pending` */
    int64_t n;  /* entries written */
    enum md_err err;
};

static la_ssize_t on_write(struct archive *a, void *ctx, const void *buf, size_t len)
{
    struct export *x = ctx;
    if (md_buf_append(&x->pending, buf, len) != MD_OK) {
        archive_set_error(a, ENOMEM, "out of memory");
        return -1;
    }
    return (la_ssize_t)len;
}

/* Write one entry: `path` canonical (it starts with "/"). */
static enum md_err put_entry(struct export *x, const char *path, size_t len, enum md_kind kind,
                             int64_t mtime_ms, const char *content, size_t content_len)
{
    struct archive_entry *en = archive_entry_new();
    if (!en)
        return MD_ENOMEM;
    /* "memories/a/b.txt", and "memories/a/" for a directory. */
    char *name = malloc(len + 1);
    enum md_err e = name ? MD_OK : MD_ENOMEM;
    if (!e) {
        memcpy(name, path + 1, len - 1);
        if (kind == MD_KIND_DIR)
            name[len - 1] = '/', name[len] = '\0';
        else
            name[len - 1] = '\0';
        archive_entry_set_pathname(en, name); /* UTF-8: the locale's (main.c) */
        archive_entry_set_filetype(en, kind == MD_KIND_DIR ? AE_IFDIR : AE_IFREG);
        archive_entry_set_perm(en, kind == MD_KIND_DIR ? 0755 : 0644);
        archive_entry_set_size(en, kind == MD_KIND_DIR ? 0 : (la_int64_t)content_len);
        archive_entry_set_mtime(en, (time_t)(mtime_ms / 1000), (long)(mtime_ms % 1000) * 1000000);
        archive_entry_set_uid(en, 0);
        archive_entry_set_gid(en, 0);
        if (archive_write_header(x->a, en) != ARCHIVE_OK)
            e = MD_EDB;
    }
    if (!e && kind == MD_KIND_FILE && content_len > 0 &&
        archive_write_data(x->a, content, content_len) != (la_ssize_t)content_len)
        e = MD_EDB;
    if (e == MD_EDB) {
        struct md_logline l;
        md_log_begin(&l, MD_LOG_ERROR, "export: cannot write the archive");
        md_log_str(&l, "tenant", x->tenant);
        md_log_str(&l, "error", archive_error_string(x->a) ? archive_error_string(x->a) : "");
        md_log_end(&l);
    }
    free(name);
    archive_entry_free(en);
    if (!e)
        x->n++;
    return e;
}

static int on_entry(void *ctx, const struct md_scan_entry *en)
{
    struct export *x = ctx;
    /* The root was written first. */
    if (en->len != MD_ROOT_LEN)
        x->err =
            put_entry(x, en->path, en->len, en->kind, en->mtime_ms, en->content, en->content_len);
    if (!x->err) {
        char *copy = realloc(x->after, en->len + 1);
        if (!copy) {
            x->err = MD_ENOMEM;
        } else {
            memcpy(copy, en->path, en->len);
            copy[en->len] = '\0';
            x->after = copy;
            x->after_len = en->len;
        }
    }
    return x->err != MD_OK;
}

/* Produce the next page of the archive into `pending`. */
static enum md_err next_page(struct export *x)
{
    if (!x->more) {
        x->closed = 1;
        return archive_write_close(x->a) == ARCHIVE_OK ? MD_OK : MD_EDB;
    }
    int more = 0;
    enum md_err e = md_txn_scan(x->t, x->tenant, x->after ? x->after : "", x->after_len,
                                EXPORT_PAGE_ROWS, EXPORT_PAGE_BYTES, on_entry, x, &more);
    if (!e)
        e = x->err;
    x->more = more;
    return e;
}

static ssize_t on_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct export *x = cls;
    while (x->sent == x->pending.len) {
        md_buf_reset(&x->pending);
        x->sent = 0;
        if (x->closed)
            return MHD_CONTENT_READER_END_OF_STREAM;
        enum md_err e = next_page(x);
        if (e) {
            struct md_logline l;
            md_log_begin(&l, MD_LOG_ERROR, "export cut short");
            md_log_str(&l, "tenant", x->tenant);
            md_log_str(&l, "error", md_strerror(e));
            md_log_int(&l, "entries", x->n);
            md_log_end(&l);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    size_t n = x->pending.len - x->sent;
    if (n > max)
        n = max;
    memcpy(buf, x->pending.data + x->sent, n);
    x->sent += n;
    return (ssize_t)n;
}

static void export_free(void *cls)
{
    struct export *x = cls;
    if (!x)
        return;
    if (x->a)
        archive_write_free(x->a); /* (closes it first when open) */
    if (x->t)
        md_txn_end(x->t);
    md_buf_free(&x->pending);
    free(x->after);
    free(x);
}

enum MHD_Result md_http_export(struct req *r)
{
    struct export *x = calloc(1, sizeof *x);
    if (!x)
        return MHD_NO;
    snprintf(x->tenant, sizeof x->tenant, "%s", r->tenant);
    x->more = 1;
    md_buf_init(&x->pending, OUT_LIMIT);
    enum md_err e = md_store_snapshot_begin(r->h->store, &x->t);
    if (!e) {
        x->a = archive_write_new();
        if (!x->a || archive_write_set_format_pax_restricted(x->a) != ARCHIVE_OK ||
            archive_write_set_bytes_per_block(x->a, 0) != ARCHIVE_OK ||
            archive_write_open2(x->a, x, NULL, on_write, NULL, NULL) != ARCHIVE_OK)
            e = MD_ENOMEM;
    }
    /* The root first (also for a tenant that has never written), then the
     * first page: a database that fails now still gets a status. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (!e)
        e = put_entry(x, MD_ROOT, MD_ROOT_LEN, MD_KIND_DIR,
                      (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000, NULL, 0);
    if (!e)
        e = next_page(x);
    if (e) {
        export_free(x);
        return md_http_storage_error(r, e);
    }
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, EXPORT_BLOCK, on_read, x, export_free);
    if (!resp) {
        export_free(x);
        return MHD_NO;
    }
    char disposition[64 + MD_TENANT_MAX];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"memories-%s.tar\"",
             r->tenant);
    const char *extra[] = {"Content-Disposition", disposition, NULL};
    return md_reply_queue(r, 200, resp, "application/x-tar", 0, extra);
}
