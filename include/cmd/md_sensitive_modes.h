/*
 * md_sensitive_modes.h — the --sensitive mode in force for a tenant: its
 * own override (PUT /v1/tenants/{t}/limits "sensitive", stored on its row:
 * md_txn_sensitive_get) or else the server's (--sensitive), asked on the
 * request's thread before a write reaches the writer (src/http/run.c) and
 * by an import's check (md_import.h). src/cmd/sensitive_modes.c.
 *
 * The overrides are cached in memory, per tenant, for MD_SENSITIVE_MODES_TTL_MS:
 * a write asks the database at most once a second per tenant (a read
 * transaction, one round trip on PostgreSQL). This instance forgets a
 * tenant's entry when it changes or erases the tenant, before answering
 * (md_sensitive_modes_forget), so its next write sees the change; another
 * instance on the same PostgreSQL database sees it within the TTL. A read
 * that raced a change is not cached (a generation counter).
 *
 * The cache is a fixed table of MD_SENSITIVE_MODES_SLOTS entries, each
 * tenant in the slot its name hashes to (a tenant that takes another's slot
 * evicts it), under one mutex: a lookup is a hash, a lock and a compare.
 *
 * Ownership: md_sensitive_modes_new allocates, md_sensitive_modes_free
 * frees; any thread may use it. Errors: the store's (md_store.h), MD_ENOMEM.
 */
#ifndef MD_SENSITIVE_MODES_H
#define MD_SENSITIVE_MODES_H

#include "base/md_err.h"
#include "cmd/md_cmd.h"
#include "store/md_store.h"

#define MD_SENSITIVE_MODES_TTL_MS 1000
#define MD_SENSITIVE_MODES_SLOTS  4096

struct md_sensitive_modes;

struct md_sensitive_modes *md_sensitive_modes_new(void);
void md_sensitive_modes_free(struct md_sensitive_modes *m);

/* The mode (enum md_sensitive_mode) in force for `tenant` into *mode: its
 * override, from the cache (lim->modes) or else read from `store`, or the
 * server's (lim->sensitive). Without a cache (lim->modes NULL), the
 * server's. */
enum md_err md_sensitive_mode_of(const struct md_limits *lim, struct md_store *store,
                                 const char *tenant, int *mode);

/* Forget what is cached of `tenant` (after its override changed, or the
 * tenant was erased, and before that is answered). NULL: nothing. */
void md_sensitive_modes_forget(struct md_sensitive_modes *m, const char *tenant);

#endif
