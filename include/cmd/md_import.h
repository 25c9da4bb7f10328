/*
 * md_import.h — a tenant import (POST /v1/tenants/{t}/import): the archive
 * checked before the writer sees it, then written in steps between the
 * writer's other transactions (src/cmd/import.c; md_writer.h runs them).
 *
 * The archive (read by libarchive: ustar, pax and GNU tar; no compression)
 * holds "memories/" and what is below it, as GET .../export writes it or
 * `tar -cf x.tar memories` makes it. Regular files are written (as a
 * create, or over the file there); a directory entry is taken and makes
 * nothing by itself. Refused, with nothing written: an entry of another
 * type, outside memories/, with a path the tool would refuse, a file over
 * --max-file or not UTF-8 text, a file where the tenant (or the archive)
 * has a directory or the reverse (409), a result over the tenant's quota
 * (507), a tenant with entries in mode "new" (409).
 *
 * 1. md_import_check, on the request's thread: every refusal that does not
 *    depend on the tenant's files (all of them, for modes new and replace),
 *    and the files and bytes the archive holds.
 * 2. md_import_open, then md_import_step until *done, each step on a write
 *    transaction, each stopping after about `budget_us` of work; the
 *    writer commits a step's transaction (MD_IMPORT_HIST_EACH: each step
 *    is a command of its own, with its own change-feed entry) or keeps one
 *    open across them (MD_IMPORT_HIST_ONCE: one command, begun in the first
 *    step and ended in the last). A step that fails leaves its transaction
 *    to be rolled back; steps already committed are undone with
 *    md_import_undo (their engine keeps a mark: MD_STORE_CAP_IMPORT_MARK).
 *
 * Ownership: md_import_open allocates, md_import_close frees; the command
 * and the tenant name are borrowed until then. Errors: a refusal's class
 * with its text in `out` (replacing what was there), or a storage error.
 */
#ifndef MD_IMPORT_H
#define MD_IMPORT_H

#include <stdint.h>

#include "base/md_buf.h"
#include "cmd/md_cmd.h"
#include "store/md_store.h"

/* Who records the import as a write command (md_txn_cmd_begin/_end). */
enum md_import_hist {
    MD_IMPORT_HIST_NONE, /* the caller (md_cmd_exec: one transaction) */
    MD_IMPORT_HIST_EACH, /* each step, in a transaction of its own */
    MD_IMPORT_HIST_ONCE, /* the first step begins it, the last ends it */
};

/* Check the archive of `cmd` (mode, fd) for `tenant`, reading the tenant's
 * root on a read transaction of `s` (mode new: refused when it has
 * entries). MD_OK with cmd->import_files and import_bytes set (the files
 * and bytes the archive writes, each path counted once) and cmd->sensitive
 * (the tenant's --sensitive mode, md_sensitive_modes.h, which the writer's
 * steps follow too), or a refusal. */
enum md_err md_import_check(struct md_store *s, const char *tenant, struct md_cmd *cmd,
                            const struct md_limits *lim, struct md_buf *out);

struct md_import;

enum md_err md_import_open(const struct md_cmd *cmd, const char *tenant,
                           const struct md_limits *lim, enum md_import_hist hist,
                           struct md_import **out);

/* One step on write transaction `t`. *done: the import is written (then
 * `out` has its JSON answer, and `res` what it did). budget_us 0: no
 * limit. */
enum md_err md_import_step(struct md_import *im, struct md_txn *t, struct md_buf *out,
                           struct md_cmd_result *res, uint64_t budget_us, int *done);

/* Whether a step has run (the import's first step is behind it). */
int md_import_begun(const struct md_import *im);

void md_import_close(struct md_import *im);

/* A write transaction that locks `tenant` alone (md_txn_batch_begin): the
 * writer's (md_store_write_begin), or with `apart` the import's own
 * (md_store_import_begin). */
enum md_err md_import_begin(struct md_store *s, const char *tenant, int apart, struct md_txn **t);

/* Undo the committed steps of an import into `tenant` (its mark, kept by
 * md_txn_import_mark, says where its history stood: version V): the files
 * put back as they were before it (a restore of /memories to before
 * V + 1, when the import recorded any version), in one write transaction
 * of `s`, then md_txn_import_forget in another. MD_OK (also when there is
 * no mark), or an error (the mark stays: the next start tries again). */
enum md_err md_import_undo(struct md_store *s, const char *tenant, const struct md_limits *lim);

#endif
