/*
 * md_expiry.h — expiry of unused files (--expire-after; docs/behaviour.md,
 * "Expiry of unused files").
 *
 * A file's last use is its last write or view of the file itself (a
 * listing of its directory is not a use). Views are recorded in memory
 * (md_uses.h) and written back by the writer thread (md_expiry_writeback),
 * at most once per file per --expire-granularity; writes set the file's
 * last change, which counts as its use. A tenant's window is its own
 * (PUT /v1/tenants/{t}/limits "expire_after", md_txn_expiry_set) or else
 * --expire-after; 0 is off. The writer's sweep (md_expiry_sweep) deletes
 * files unused for longer than their window, a few at a time, as ordinary
 * deletes: history keeps them (POST /v1/restore brings them back), the
 * change feed records one entry `expired` per tenant and sweep naming
 * them, memoryd_expired_total counts them, the log names the count per
 * tenant. Directories they leave empty are kept. The sweep decides again
 * inside the deleting transaction, with the tenant locked
 * (md_txn_batch_begin) and the use read there and in memory, so that
 * instances sweeping one PostgreSQL database never delete a file twice nor
 * one used meanwhile.
 *
 * Ownership: nothing allocated beyond each call. Errors: storage errors
 * from the store; MD_ENOMEM.
 */
#ifndef MD_EXPIRY_H
#define MD_EXPIRY_H

#include <stddef.h>
#include <stdint.h>

#include "base/md_buf.h"
#include "cmd/md_cmd.h"
#include "store/md_store.h"

/* The window in force for a tenant whose own is `own` (-1: none): ms, 0
 * off. */
int64_t md_expiry_window(int64_t own, const struct md_limits *lim);

/* The granularity --expire-granularity defaults to for a window of
 * `after_ms` (0: off): 1/100 of it, from 1 s to 1 h; 1 h when off. */
int64_t md_expiry_default_granularity(int64_t after_ms);

/* Append `"expire_after":V` where V is the window `ms` as a duration
 * ("90d"), `off_text` when 0 ("off", or null for a window in force), null
 * when < 0. */
enum md_err md_expiry_json_field(struct md_buf *out, int64_t ms, const char *off_text);

/* The writer thread: the uses recorded in memory written back, in write
 * transactions of their own (each with its tenants locked). *written: how
 * many. */
enum md_err md_expiry_writeback(struct md_store *s, const struct md_limits *lim, size_t *written);

/* Told of a tenant whose files expiry deleted (after the commit). */
typedef void (*md_expiry_told_cb)(void *ctx, const char *tenant);

/* The writer thread: delete up to `budget` files unused for longer than
 * their tenant's window, as of `now_ms`. *expired: files deleted; *more:
 * the budget was used up (more may be due). */
enum md_err md_expiry_sweep(struct md_store *s, const struct md_limits *lim, int64_t now_ms,
                            size_t budget, md_expiry_told_cb told, void *ctx, size_t *expired,
                            int *more);

#endif
