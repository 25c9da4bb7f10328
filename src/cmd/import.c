/*
 * import.c — POST /v1/tenants/{t}/import (md_import.h): the archive checked
 * on the request's thread, then written by the writer, in steps (md_writer.h)
 * or in one transaction (md_cmd_exec, cmd_import).
 *
 * Every path goes through md_path_canon. The check replays the archive on a
 * table of the paths it makes (struct sim), with the refusals the writer
 * would give on a tenant with no entries: for modes new and replace it is
 * exactly the tenant the writer writes into, so a refusal there is given
 * before anything is written. Mode merge meets the tenant's own files in
 * the writer's steps.
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/md_clock.h"
#include "base/md_json.h"
#include "base/md_log.h"
#include "base/md_metrics.h"
#include "base/md_progress.h"
#include "base/md_refusals.h"
#include "cmd/md_import.h"
#include "cmd/md_quota.h"
#include "cmd/md_sensitive.h"
#include "cmd/md_sensitive_modes.h"
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

/* ---- the archive's entries, one at a time ---- */

struct reader {
    struct archive *a;
    struct md_progress progress;
    struct md_buf content; /* a file's content */
};

static enum md_err reader_open(struct cmd_ctx *c, struct reader *r, int log_progress)
{
    md_buf_init(&r->content, c->lim->max_file + 1);
    r->a = archive_read_new();
    if (!r->a)
        return MD_ENOMEM;
    /* Progress in bytes of the archive read: a log line every few seconds of
     * a long import (md_progress.h); the check says nothing. */
    struct stat st;
    int64_t total = fstat(c->cmd->import_fd, &st) == 0 ? (int64_t)st.st_size : 0;
    md_progress_begin(&r->progress, "import", "bytes", total, 0);
    if (!log_progress)
        r->progress.every_us = UINT64_MAX;
    archive_read_support_format_tar(r->a);
    /* Names as stored are UTF-8 (as memoryd's paths are). */
    archive_read_set_options(r->a, "hdrcharset=UTF-8");
    if (lseek(c->cmd->import_fd, 0, SEEK_SET) != 0 ||
        archive_read_open_fd(r->a, c->cmd->import_fd, IMPORT_BLOCK) != ARCHIVE_OK)
        return not_tar(c, r->a);
    return MD_OK;
}

static void reader_close(struct reader *r)
{
    md_buf_free(&r->content);
    if (r->a)
        archive_read_free(r->a);
    r->a = NULL;
}

/* What reader_next found. */
struct entry {
    int eof;
    int dir;          /* a directory entry (else a file, its content in r->content) */
    const char *name; /* as in the archive (until the next entry) */
    char *p;          /* canonical path, malloc'd */
    size_t n;
};

/* The next entry that names something (the archive's own root "./" is
 * passed over), read and checked on its own: its type, name, path, and
 * for a file its size and text. */
static enum md_err reader_next(struct cmd_ctx *c, struct reader *r, struct entry *out)
{
    *out = (struct entry){0};
    for (;;) {
        md_progress_update(&r->progress, archive_filter_bytes(r->a, -1));
        struct archive_entry *en;
        int rc = archive_read_next_header(r->a, &en);
        if (rc == ARCHIVE_EOF) {
            out->eof = 1;
            md_progress_end(&r->progress);
            return MD_OK;
        }
        if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
            return not_tar(c, r->a);
        const char *name = archive_entry_pathname_utf8(en);
        if (!name)
            name = archive_entry_pathname(en);
        if (!name)
            return refused(c, MD_R_IMPORT_NAME_NOT_UTF8);
        char buf[300];
        mode_t type = archive_entry_filetype(en);
        if (archive_entry_hardlink(en) || type == AE_IFLNK ||
            (type != AE_IFREG && type != AE_IFDIR))
            return refused_type(c, en, shown(name, buf, sizeof buf));
        int skip;
        enum md_err e = entry_path(c, name, &out->p, &out->n, &skip);
        if (e)
            return e;
        if (skip)
            continue;
        out->name = name;
        out->dir = type == AE_IFDIR;
        if (out->dir)
            return MD_OK;
        if (out->n == MD_ROOT_LEN)
            return refused(c, MD_R_IMPORT_ROOT, shown(name, buf, sizeof buf));
        return read_content(c, r->a, name, archive_entry_size(en), &r->content);
    }
}

/* The JSON answer of an import (POST /v1/tenants/{t}/import). */
enum md_err cmd_import_answer(const char *tenant, const struct md_cmd *cmd,
                              const struct md_cmd_result *res, struct md_buf *out)
{
    static const char *const modes[] = {"new", "replace", "merge"};
    md_buf_reset(out);
    enum md_err e = md_buf_puts(out, "{\"tenant\":");
    if (!e)
        e = md_json_put_string(out, tenant, strlen(tenant));
    if (!e)
        e = md_buf_printf(out,
                          ",\"mode\":\"%s\",\"files\":%lld,\"bytes\":%lld,\"removed\":%lld,"
                          "\"seq\":%lld,\"versions_recorded\":%lld}",
                          modes[cmd->import_mode], (long long)res->restored, (long long)res->bytes,
                          (long long)res->removed, (long long)res->change.seq,
                          (long long)res->change.versions);
    return e;
}

/* ---- the check: the archive replayed on a table of the paths it makes ---- */

struct sim_slot {
    char *path; /* NULL: free */
    size_t len;
    int dir;
    int64_t size; /* a file's */
};

struct sim {
    struct sim_slot *slots;
    size_t cap, n; /* cap: a power of two */
    int64_t files, bytes;
};

static uint64_t sim_hash(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211u;
    return h;
}

/* The slot of p[0..n), or the free slot where it would go. */
static struct sim_slot *sim_slot(const struct sim *s, const char *p, size_t n)
{
    for (size_t i = sim_hash(p, n) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        struct sim_slot *sl = &s->slots[i];
        if (!sl->path || (sl->len == n && memcmp(sl->path, p, n) == 0))
            return sl;
    }
}

static const struct sim_slot *sim_find(const struct sim *s, const char *p, size_t n)
{
    if (!s->cap)
        return NULL;
    const struct sim_slot *sl = sim_slot(s, p, n);
    return sl->path ? sl : NULL;
}

/* Add p[0..n) (not there yet). */
static enum md_err sim_add(struct sim *s, const char *p, size_t n, int dir, int64_t size)
{
    if ((s->n + 1) * 2 > s->cap) {
        struct sim bigger = {calloc(s->cap ? s->cap * 2 : 1024, sizeof *s->slots),
                             s->cap ? s->cap * 2 : 1024, s->n, s->files, s->bytes};
        if (!bigger.slots)
            return MD_ENOMEM;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slots[i].path)
                *sim_slot(&bigger, s->slots[i].path, s->slots[i].len) = s->slots[i];
        free(s->slots);
        *s = bigger;
    }
    struct sim_slot *sl = sim_slot(s, p, n);
    sl->path = strndup(p, n);
    if (!sl->path)
        return MD_ENOMEM;
    *sl = (struct sim_slot){sl->path, n, dir, size};
    s->n++;
    return MD_OK;
}

static void sim_free(struct sim *s)
{
    for (size_t i = 0; i < s->cap; i++)
        free(s->slots[i].path);
    free(s->slots);
}

/* The nearest ancestor of p the table has (0: only the root). */
static size_t sim_ancestor(const struct sim *s, const char *p, size_t n, int *is_file)
{
    for (size_t len = md_path_parent_len(p, n); len > MD_ROOT_LEN;
         len = md_path_parent_len(p, len)) {
        const struct sim_slot *sl = sim_find(s, p, len);
        if (sl) {
            *is_file = !sl->dir;
            return len;
        }
    }
    *is_file = 0;
    return 0;
}

/* An entry replayed as put() and check_dir() would take it. */
static enum md_err sim_entry(struct cmd_ctx *c, struct sim *s, const struct entry *en, int64_t size)
{
    char buf[300];
    const struct sim_slot *at = sim_find(s, en->p, en->n);
    int anc_file;
    size_t anc = at ? 0 : sim_ancestor(s, en->p, en->n, &anc_file);
    if (en->dir) {
        if ((at && !at->dir) || (!at && anc_file))
            return refused(c, MD_R_IMPORT_DIR_ON_FILE, shown(en->name, buf, sizeof buf),
                           (int)(at ? en->n : anc), en->p);
        return MD_OK;
    }
    if (at && at->dir)
        return refused(c, MD_R_IMPORT_FILE_ON_DIR, shown(en->name, buf, sizeof buf), (int)en->n,
                       en->p);
    if (!at && anc_file)
        return refused(c, MD_R_IMPORT_FILE_UNDER_FILE, shown(en->name, buf, sizeof buf), (int)anc,
                       en->p);
    if (at) { /* the same file again: the last one is kept */
        s->bytes += size - at->size;
        ((struct sim_slot *)at)->size = size;
        return MD_OK;
    }
    enum md_err e = sim_add(s, en->p, en->n, 0, size);
    /* Its directories, up to the first the table has. */
    for (size_t len = md_path_parent_len(en->p, en->n); !e && len > MD_ROOT_LEN;
         len = md_path_parent_len(en->p, len)) {
        if (sim_find(s, en->p, len))
            break;
        e = sim_add(s, en->p, len, 1, 0);
    }
    if (!e) {
        s->files++;
        s->bytes += size;
    }
    return e;
}

/* --sensitive reject (the tenant's mode, md_sensitive_modes.h): a file of the archive holding what
 * looks like a secret is refused (md_sensitive.h). */
static enum md_err secret_refused(struct cmd_ctx *c, const struct entry *en,
                                  const struct md_buf *content)
{
    const struct md_sensitive *s = c->lim->sensitive;
    if (en->dir || c->cmd->sensitive != MD_SENSITIVE_REJECT)
        return MD_OK;
    struct md_sensitive_hit hit;
    int found = md_sensitive_find(s, content->data ? content->data : "", content->len, &hit);
    if (found < 0)
        return MD_ENOMEM;
    if (!found)
        return MD_OK;
    md_metrics_sensitive(hit.kind, 0);
    char buf[300];
    return refused(c, MD_R_IMPORT_SENSITIVE, shown(en->name, buf, sizeof buf), hit.what, hit.line);
}

/* --sensitive redact (the tenant's mode): a file's content with its secrets replaced, into
 * `content` itself. */
static enum md_err secret_redacted(struct cmd_ctx *c, struct md_buf *content)
{
    const struct md_sensitive *s = c->lim->sensitive;
    if (c->cmd->sensitive != MD_SENSITIVE_REDACT)
        return MD_OK;
    struct md_buf out;
    md_buf_init(&out, (size_t)64 << 20);
    size_t n = 0;
    struct md_sensitive_hit first;
    enum md_err e =
        md_sensitive_redact(s, content->data ? content->data : "", content->len, &out, &n, &first);
    if (!e && n) {
        md_metrics_sensitive(first.kind, 1);
        md_buf_reset(content);
        e = md_buf_append(content, out.data, out.len);
    }
    md_buf_free(&out);
    return e;
}

static int count_entry(void *ctx, const char *path, size_t len, enum md_kind kind, int64_t size)
{
    (void)path, (void)len, (void)kind, (void)size;
    (*(size_t *)ctx)++;
    return 1; /* one is enough */
}

/* Mode new: the tenant must have no entry below its root. */
static enum md_err check_empty(struct cmd_ctx *c)
{
    size_t n = 0;
    enum md_err e = md_txn_list(c->t, c->tenant, MD_ROOT, MD_ROOT_LEN, count_entry, &n);
    if (e == MD_ENOENT)
        e = MD_OK;
    return !e && n ? refused(c, MD_R_IMPORT_NOT_EMPTY, c->tenant) : e;
}

enum md_err md_import_check(struct md_store *s, const char *tenant, struct md_cmd *cmd,
                            const struct md_limits *lim, struct md_buf *out)
{
    struct md_cmd_result res = {0};
    struct cmd_ctx c = {NULL, tenant, cmd, lim, out, &res};
    enum md_err e = md_sensitive_mode_of(lim, s, tenant, &cmd->sensitive);
    if (e)
        return e;
    if (cmd->import_mode == MD_IMPORT_NEW) {
        e = md_store_read_begin(s, &c.t);
        if (e)
            return e;
        e = check_empty(&c);
        md_txn_end(c.t);
        if (e)
            return e;
    }
    struct reader r = {0};
    struct sim sim = {0};
    e = reader_open(&c, &r, 0);
    while (!e) {
        struct entry en;
        e = reader_next(&c, &r, &en);
        if (!e && en.eof) {
            cmd->import_files = sim.files;
            cmd->import_bytes = sim.bytes;
            free(en.p);
            break;
        }
        if (!e)
            e = secret_refused(&c, &en, &r.content);
        if (!e)
            e = sim_entry(&c, &sim, &en, (int64_t)r.content.len);
        free(en.p);
    }
    sim_free(&sim);
    reader_close(&r);
    return e;
}

/* ---- the writer's steps ---- */

enum phase { PH_START, PH_CLEAR, PH_ENTRIES, PH_DONE };

struct md_import {
    const struct md_cmd *cmd;
    const char *tenant;
    const struct md_limits *lim;
    enum md_import_hist hist;
    enum phase phase;
    struct reader r;
    struct md_usage before;
    struct md_cmd_result res; /* over every step */
};

enum md_err md_import_open(const struct md_cmd *cmd, const char *tenant,
                           const struct md_limits *lim, enum md_import_hist hist,
                           struct md_import **out)
{
    struct md_import *im = calloc(1, sizeof *im);
    if (!im)
        return MD_ENOMEM;
    *im = (struct md_import){.cmd = cmd, .tenant = tenant, .lim = lim, .hist = hist};
    *out = im;
    return MD_OK;
}

int md_import_begun(const struct md_import *im)
{
    return im->phase != PH_START;
}

void md_import_close(struct md_import *im)
{
    if (!im)
        return;
    reader_close(&im->r);
    free(im);
}

/* Within the tenant's quota, or refused (unless it did not grow: a replace
 * that shrinks a tenant over its quota is taken). `files`, `bytes`: what
 * the tenant holds, or would. */
static enum md_err quota_refusal(struct cmd_ctx *c, const struct md_usage *before, int64_t files,
                                 int64_t bytes)
{
    int64_t max_files = md_quota_max_files(before, c->lim);
    int64_t max_bytes = md_quota_max_bytes(before, c->lim);
    if (max_files > 0 && files > max_files && files > before->files)
        return refused(c, MD_R_IMPORT_FILES_OVER, (long long)files, (long long)max_files);
    if (max_bytes > 0 && bytes > max_bytes && bytes > before->bytes) {
        char used[32], limit[32];
        md_quota_size(bytes, used, sizeof used);
        md_quota_size(max_bytes, limit, sizeof limit);
        return refused(c, MD_R_IMPORT_BYTES_OVER, used, limit);
    }
    return MD_OK;
}

/* The first step: the tenant as it is, mode new's refusal, and for new and
 * replace the quota, from the archive's totals (md_import_check), before
 * anything is written. */
static enum md_err phase_start(struct md_import *im, struct cmd_ctx *c)
{
    enum md_err e = md_txn_usage(c->t, c->tenant, &im->before);
    if (!e && im->cmd->import_mode == MD_IMPORT_NEW)
        e = check_empty(c);
    if (!e && im->cmd->import_mode != MD_IMPORT_MERGE)
        e = quota_refusal(c, &im->before, im->cmd->import_files, im->cmd->import_bytes);
    if (!e)
        e = reader_open(c, &im->r, 1);
    if (e)
        return e;
    if (im->cmd->import_mode == MD_IMPORT_REPLACE) {
        im->res.removed = im->before.files;
        im->phase = PH_CLEAR;
    } else {
        im->phase = PH_ENTRIES;
    }
    return MD_OK;
}

/* Whether a step's time is up: `until` is past and it has done something
 * (*did: the entries it wrote or removed). */
static int time_up(uint64_t until, const int *did)
{
    return *did && md_now_us() >= until;
}

/* Mode replace: what is below the root removed, a file at a time, until
 * time is up: each round lists a directory (the root first), removes its
 * files and goes down into its first subdirectory; a directory found empty
 * is removed (with size 0: the sizes listed may be those before this
 * transaction's removals) and the next round starts at the root again. */
static enum md_err phase_clear(struct md_import *im, struct cmd_ctx *c, uint64_t until, int *did)
{
    /* The root located first: an engine learns the tenant's id there. */
    struct md_locate l = {.path = MD_ROOT, .len = MD_ROOT_LEN};
    int exists;
    enum md_err e = md_txn_locate(c->t, c->tenant, &l, 1, &exists);
    char *dir = strdup(MD_ROOT);
    size_t len = MD_ROOT_LEN;
    if (!dir)
        e = MD_ENOMEM;
    while (!e && !time_up(until, did)) {
        struct cmd_children ch;
        e = cmd_children_list(c, dir, len, &ch);
        char *down = NULL;
        size_t down_len = 0;
        for (size_t i = 0; i < ch.n && !e && !time_up(until, did); i++) {
            const struct cmd_child *k = &ch.c[i];
            if (k->dir) {
                if (!down) {
                    down = strndup(k->path, k->len);
                    down_len = k->len;
                    e = down ? MD_OK : MD_ENOMEM;
                }
                continue;
            }
            e = md_txn_remove_tree(c->t, c->tenant, k->path, k->len, k->size);
            (*did)++;
        }
        int empty = !e && ch.n == 0;
        cmd_children_free(&ch);
        if (empty && len == MD_ROOT_LEN) {
            im->phase = PH_ENTRIES;
            free(down);
            break;
        }
        if (empty) {
            e = md_txn_remove_tree(c->t, c->tenant, dir, len, 0);
            (*did)++;
            down = strdup(MD_ROOT);
            down_len = MD_ROOT_LEN;
            if (!down && !e)
                e = MD_ENOMEM;
        }
        if (down) {
            free(dir);
            dir = down;
            len = down_len;
        }
    }
    free(dir);
    return e;
}

/* The archive's entries, until time is up; at its end, the quota. */
static enum md_err phase_entries(struct md_import *im, struct cmd_ctx *c, uint64_t until, int *did)
{
    enum md_err e = MD_OK;
    while (!e && !time_up(until, did)) {
        struct entry en;
        e = reader_next(c, &im->r, &en);
        if (!e && en.eof) {
            struct md_usage u;
            e = md_txn_usage(c->t, c->tenant, &u);
            if (!e)
                e = quota_refusal(c, &im->before, u.files, u.bytes);
            if (!e)
                im->phase = PH_DONE;
            free(en.p);
            break;
        }
        if (!e && !en.dir)
            e = secret_redacted(c, &im->r.content);
        if (!e)
            e = en.dir ? check_dir(c, en.name, en.p, en.n)
                       : put(c, en.name, en.p, en.n, &im->r.content);
        (*did)++;
        free(en.p);
    }
    return e;
}

enum md_err md_import_step(struct md_import *im, struct md_txn *t, struct md_buf *out,
                           struct md_cmd_result *res, uint64_t budget_us, int *done)
{
    *done = 0;
    struct cmd_ctx c = {t, im->tenant, im->cmd, im->lim, out, &im->res};
    uint64_t until = budget_us ? md_now_us() + budget_us : UINT64_MAX;
    enum md_err e = MD_OK;
    if (im->hist == MD_IMPORT_HIST_EACH ||
        (im->hist == MD_IMPORT_HIST_ONCE && im->phase == PH_START)) {
        /* Each step's transaction goes on with the same command (EACH): what
         * the earlier ones recorded is counted into its one change-feed
         * entry, at the end. */
        struct md_write_meta m = {im->cmd->name, im->cmd->actor, md_wall_ms(), im->res.change};
        e = md_txn_cmd_begin(t, im->tenant, &m);
    }
    /* Something is written in every step, however short its budget. */
    int did = 0;
    while (!e && im->phase != PH_DONE && !time_up(until, &did)) {
        if (im->phase == PH_START)
            e = phase_start(im, &c);
        else if (im->phase == PH_CLEAR)
            e = phase_clear(im, &c, until, &did);
        else
            e = phase_entries(im, &c, until, &did);
    }
    if (e || im->hist == MD_IMPORT_HIST_NONE ||
        (im->hist == MD_IMPORT_HIST_ONCE && im->phase != PH_DONE)) {
        *done = !e && im->phase == PH_DONE;
        if (*done)
            *res = im->res;
        return e;
    }
    struct md_change_rec rec;
    if (im->phase != PH_DONE) {
        /* EACH, a step before the last: what it recorded, for the next. */
        md_txn_cmd_recorded(t, &rec);
        if (!im->res.change.version)
            im->res.change.version = rec.version;
        im->res.change.versions += rec.versions;
        im->res.change.history_bytes += rec.history_bytes;
        return MD_OK;
    }
    static const char *const paths[1] = {MD_ROOT};
    static const size_t lens[1] = {MD_ROOT_LEN};
    e = md_txn_cmd_end(t, paths, lens, 1, &rec);
    if (e)
        return e;
    im->res.change = rec;
    *done = 1;
    *res = im->res;
    return cmd_import_answer(im->tenant, im->cmd, res, out);
}

/* The command of md_cmd_exec: the whole import in its transaction. */
enum md_err cmd_import(struct cmd_ctx *c)
{
    struct md_import *im = NULL;
    enum md_err e = md_import_open(c->cmd, c->tenant, c->lim, MD_IMPORT_HIST_NONE, &im);
    int done = 0;
    if (!e)
        e = md_import_step(im, c->t, c->out, c->res, 0, &done);
    md_import_close(im);
    return e;
}

/* ---- undoing the committed steps of an import ---- */

struct mark_find {
    const char *tenant;
    int64_t version;
    int found;
};

static int on_mark(void *ctx, const char *tenant, int64_t version)
{
    struct mark_find *f = ctx;
    if (strcmp(tenant, f->tenant) != 0)
        return 0;
    f->version = version;
    f->found = 1;
    return 1;
}

enum md_err md_import_begin(struct md_store *s, const char *tenant, int apart, struct md_txn **t)
{
    enum md_err e = apart ? md_store_import_begin(s, t) : md_store_write_begin(s, t);
    if (e)
        return e;
    const char *tenants[1] = {tenant};
    struct md_batch b = {tenants, 1, NULL, 0, 0};
    e = md_txn_batch_begin(*t, &b);
    if (e)
        md_txn_rollback(*t);
    return e;
}

/* The restore of /memories to before `before` (cmd_restore), as a command
 * of its own: its versions and change-feed entry are forgotten next. */
static enum md_err restore_root(struct md_txn *t, const char *tenant, int64_t before,
                                const struct md_limits *lim)
{
    struct md_cmd cmd = {.kind = MD_CMD_RESTORE, .name = "restore", .write = 1, .before = before};
    cmd.path.canon = strdup(MD_ROOT);
    if (!cmd.path.canon)
        return MD_ENOMEM;
    cmd.path.canon_len = MD_ROOT_LEN;
    cmd.path.raw = (struct md_str){MD_ROOT, MD_ROOT_LEN};
    struct md_buf out;
    md_buf_init(&out, (size_t)64 * 1024);
    struct md_cmd_result res = {0};
    struct cmd_ctx c = {t, tenant, &cmd, lim, &out, &res};
    struct md_write_meta m = {cmd.name, NULL, md_wall_ms(), {0, 0, 0, 0}};
    enum md_err e = md_txn_cmd_begin(t, tenant, &m);
    if (!e)
        e = cmd_restore(&c);
    if (e && out.len)
        md_log_msg(MD_LOG_ERROR, "import undo: the restore was refused", out.data);
    md_buf_free(&out);
    free(cmd.path.canon);
    return e;
}

enum md_err md_import_undo(struct md_store *s, const char *tenant, const struct md_limits *lim)
{
    struct md_txn *t;
    enum md_err e = md_import_begin(s, tenant, 0, &t);
    if (e)
        return e;
    struct mark_find f = {tenant, 0, 0};
    e = md_txn_import_marks(t, on_mark, &f);
    struct md_version v;
    int recorded = 0;
    if (!e && f.found) {
        e = md_txn_version_get(t, tenant, f.version + 1, 0, &v);
        recorded = e == MD_OK;
        if (e == MD_ENOENT)
            e = MD_OK;
    }
    if (!e && recorded)
        e = restore_root(t, tenant, f.version + 1, lim);
    if (e) {
        md_txn_rollback(t);
        return e;
    }
    e = md_txn_commit(t);
    if (e || !f.found)
        return e;
    e = md_import_begin(s, tenant, 0, &t);
    if (e)
        return e;
    e = md_txn_import_forget(t, tenant);
    if (e) {
        md_txn_rollback(t);
        return e;
    }
    return md_txn_commit(t);
}
