/*
 * md_quota.h — per-tenant quotas: bytes of file content and number of
 * files.
 *
 * A tenant's limits are its overrides (PUT /v1/tenants/{t}/limits, stored
 * on its row; md_txn_usage) or else the defaults (--tenant-max-bytes,
 * --tenant-max-files, in struct md_limits); 0 is unlimited. A write is
 * checked where the writer applies it, inside the transaction and after
 * the earlier commands of its batch (md_quota_check): one that adds bytes
 * or files beyond a limit is refused (MD_EFULL, 507) with a text the model
 * can act on; one that adds nothing (a shrinking or same-size edit, a
 * delete, a rename) is never refused, even over a limit.
 *
 * Sizes in texts (md_quota_size): under 1 KiB in bytes ("512 bytes",
 * "1 byte"); else in KiB, MiB or GiB (1024-based, the largest unit the
 * size reaches), as a whole number when exact ("64 MiB") and otherwise
 * with one decimal, rounded down ("63.9 MiB", "1.0 KiB" for 1025 bytes),
 * so that a usage under a limit never reads as the limit.
 *
 * Ownership: nothing is allocated but the text appended to `out`.
 * Errors: MD_EFULL with the text in `out`; storage errors from the store
 * (out unspecified).
 */
#ifndef MD_QUOTA_H
#define MD_QUOTA_H

#include <stddef.h>
#include <stdint.h>

#include "base/md_buf.h"
#include "cmd/md_cmd.h"
#include "store/md_store.h"

/* The limits in force for a tenant whose overrides are in `u`: an
 * override (>= 0) or else the default. */
int64_t md_quota_max_bytes(const struct md_usage *u, const struct md_limits *lim);
int64_t md_quota_max_files(const struct md_usage *u, const struct md_limits *lim);

/* Write `bytes` as described above into buf (at least 24 bytes). */
void md_quota_size(int64_t bytes, char *buf, size_t len);

/* May `tenant` grow by `add_bytes` bytes of content and `add_files` files
 * now? MD_OK (also without asking the store when it adds nothing), or
 * MD_EFULL with one of these texts in `out` (replacing what was there;
 * md_refusals.h: MD_R_QUOTA_BYTES, MD_R_QUOTA_FILES):
 *   "Memory is full: 63.9 MiB of 64 MiB used; delete or shorten files first."
 *   "Memory is full: 10000 of 10000 files used; delete files first."
 * (the files limit is checked first). */
enum md_err md_quota_check(struct md_txn *t, const char *tenant, const struct md_limits *lim,
                           int64_t add_bytes, int64_t add_files, struct md_buf *out);

/* The JSON document of GET /v1/tenants/{t} (and PUT .../limits), appended
 * to `out`:
 *   {"tenant":T,"bytes":N,"files":N,
 *    "limits":{"max_bytes":N,"max_files":N,"sensitive":M,"expire_after":D|null},
 *    "overrides":{"max_bytes":N|null,"max_files":N|null,"sensitive":M|null,
 *                 "expire_after":D|"off"|null}}
 * limits: those in force (0: unlimited; M: "reject", "redact" or "off";
 * expire_after null: off); overrides: the tenant's own (`sensitive`: its
 * --sensitive override, an enum md_sensitive_mode or -1 for none,
 * md_txn_sensitive_get; expire_own, md_txn_expiry_get: -1 none, 0 off,
 * else ms; md_expiry.h). */
enum md_err md_quota_json(struct md_buf *out, const char *tenant, const struct md_usage *u,
                          int sensitive, const struct md_limits *lim, int64_t expire_own);

#endif
