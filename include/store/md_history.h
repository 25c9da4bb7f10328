/*
 * md_history.h — versions, the change feed and idempotent retries: the
 * types the store interface (md_store.h) speaks, and the engine-neutral
 * bookkeeping a write transaction keeps for them (struct md_hist), used by
 * both engines.
 *
 * The model. Every successful write command records, for each file it
 * changes, what that file was just before: a version (per tenant, numbered
 * 1, 2, ... in commit order). A file the write creates is recorded as
 * "did not exist" (existed = 0: no content). A directory deleted or renamed
 * records each file below it; a rename records both the old paths (their
 * content) and the new ones (did not exist). So for any path and version V,
 * the earliest version >= V of that path says what it was just before V;
 * with none, it has not changed since. Every write command also gets the
 * next change-feed sequence number of its tenant (seq), whatever history
 * keeps.
 *
 * Counters. The last version and the last seq of a tenant live in its row;
 * a write transaction loads them once (md_hist_loaded/md_hist_load), takes
 * numbers from them in memory and writes the changed ones back once before
 * its commit (md_hist_dirty_*). Savepoints: md_hist_mark()/md_hist_restore()
 * as for directory sizes (md_dirsizes.h).
 *
 * Pruning by count happens in the background (md_txn_prune): a write that
 * records a version of a path queues (tenant, path) (md_hist_touch); the
 * pruner takes them (md_hist_take_touched). The queue is bounded: a path
 * left out is pruned the next time it is written. It is its own object
 * (struct md_touched), which a store may share between its writer's
 * connection and a pruner's of its own (md_store_prune_begin).
 *
 * Ownership: md_hist_new() allocates, md_hist_free() frees; strings given
 * are copied. A md_hist is not thread-safe (one per write connection); the
 * touched queue is (a mutex of its own), and outlives every md_hist given
 * it: md_touched_new() allocates it, md_touched_free() frees it.
 */
#ifndef MD_HISTORY_H
#define MD_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "base/md_sha256.h"

/* How much history is kept (--history-versions, --history-days). Either 0:
 * no versions are recorded (the change feed is kept for history_days, or a
 * day when that is 0). */
struct md_retention {
    unsigned versions; /* per file */
    unsigned days;
};

static inline int md_history_on(const struct md_retention *r)
{
    return r->versions > 0 && r->days > 0;
}

/* Rows retention deleted, by kind (md_txn_prune). */
struct md_pruned {
    size_t versions;    /* history versions */
    size_t changes;     /* change-feed entries */
    size_t idempotency; /* stored answers of Idempotency-Keys */
    int more;           /* work was left: queued paths, or the budget ran out */
};

static inline size_t md_pruned_total(const struct md_pruned *p)
{
    return p->versions + p->changes + p->idempotency;
}

/* How long the change feed and idempotency keys are kept, milliseconds. */
int64_t md_history_changes_ms(const struct md_retention *r);
#define MD_IDEMPOTENCY_MS ((int64_t)24 * 3600 * 1000)

/* The text an answer kept for an idempotent retry of a write to a file
 * gets when a version of that file is redacted (it may quote the
 * content): for an applied command, and for a refused one. */
#define MD_HISTORY_SCRUBBED_APPLIED                                                                \
    "The command was applied. Its original answer was erased because a version of the file was "   \
    "redacted."
#define MD_HISTORY_SCRUBBED_REFUSED                                                                \
    "The command was not applied. Its original answer was erased because a version of the file "   \
    "was redacted."

/* What a write command recorded (md_txn_cmd_end). */
struct md_change_rec {
    int64_t seq;           /* its change-feed number */
    int64_t version;       /* the first version it recorded, 0 for none */
    int64_t versions;      /* how many */
    int64_t history_bytes; /* content bytes they hold */
};

/* What a write command is, for what it records. */
struct md_write_meta {
    const char *command; /* "create", ..., "restore", "redact"; static */
    const char *actor;   /* X-Memory-Actor, or NULL */
    int64_t time_ms;     /* unix time */
    /* What the same command recorded in transactions before this one (an
     * import in steps, md_import.h; else zeros): counted into the change-
     * feed entry of its end. */
    struct md_change_rec earlier;
};

/* One version, as read back. Strings are borrowed until the next call on
 * the transaction (or, in a callback, until it returns). */
struct md_version {
    int64_t version;
    const char *path;
    size_t path_len;
    int existed;  /* 0: the path had no file before this version's write */
    int redacted; /* content (and its hash) erased */
    int has_sha256;
    unsigned char sha256[MD_SHA256_LEN];
    int64_t size; /* -1 when it did not exist */
    int64_t time_ms;
    const char *command;
    const char *actor; /* NULL: none */
    size_t actor_len;
    const char *content; /* when asked for and kept; else NULL */
    size_t content_len;
    int64_t pruned_through; /* newest version of this path pruned before it (0: none) */
};

/* Return nonzero to stop. */
typedef int (*md_version_cb)(void *ctx, const struct md_version *v);

/* One change-feed entry (borrowed strings, as above). */
struct md_change {
    int64_t seq;
    int64_t version; /* 0: none */
    int64_t versions;
    int64_t history_bytes;
    int64_t time_ms;
    const char *command;
    const char *paths; /* one per line */
    size_t paths_len;
    const char *actor; /* NULL: none */
    size_t actor_len;
};

typedef int (*md_change_cb)(void *ctx, const struct md_change *c);

/* A stored first answer to a write sent with an Idempotency-Key. */
struct md_idem {
    unsigned char fingerprint[MD_SHA256_LEN];
    int err; /* enum md_err */
    const char *body;
    size_t body_len;
};

/* ---- a write transaction's bookkeeping ---- */

struct md_hist;
struct md_touched;

struct md_touched *md_touched_new(void); /* NULL: out of memory */
void md_touched_free(struct md_touched *q);

/* With `shared` NULL, the md_hist has a touched queue of its own. */
struct md_hist *md_hist_new(struct md_touched *shared);
void md_hist_free(struct md_hist *h);

/* A new transaction (or after a commit or rollback): forget the counters
 * and the current command; the touched queue is kept. */
void md_hist_reset(struct md_hist *h);

/* Counters of tenant `id`: 1 and the values when loaded in this
 * transaction, else 0. */
int md_hist_loaded(const struct md_hist *h, int64_t id, int64_t *last_version, int64_t *last_seq);
/* Record what the tenant's row holds (once per transaction). -1: out of
 * memory. */
int md_hist_load(struct md_hist *h, int64_t id, int64_t last_version, int64_t last_seq);

/* The command about to run (after md_hist_mark): its meta is copied; its
 * tenant may be 0 when not known yet (md_hist_cmd_set_tenant). */
void md_hist_cmd_begin(struct md_hist *h, int64_t tenant, const struct md_write_meta *m);
void md_hist_cmd_set_tenant(struct md_hist *h, int64_t tenant);
/* The current command: tenant (0 when none), meta. */
int64_t md_hist_cmd_tenant(const struct md_hist *h);
const struct md_write_meta *md_hist_cmd_meta(const struct md_hist *h);

/* The next version number of the current command's tenant (loaded). */
int64_t md_hist_next_version(const struct md_hist *h);
/* Take `n` version numbers for it (the first is md_hist_next_version()),
 * holding `bytes` of content. */
void md_hist_take_versions(struct md_hist *h, int64_t n, int64_t bytes);
/* What the command has recorded so far (seq 0), `earlier` left out. */
void md_hist_cmd_recorded(const struct md_hist *h, struct md_change_rec *rec);
/* End the command: its seq taken, *rec filled with what it recorded
 * (and, from its meta, what it recorded earlier). */
void md_hist_cmd_end(struct md_hist *h, struct md_change_rec *rec);

/* Tenants whose counters changed in this transaction. */
size_t md_hist_dirty_count(const struct md_hist *h);
void md_hist_dirty_entry(const struct md_hist *h, size_t i, int64_t *id, int64_t *last_version,
                         int64_t *last_seq);

/* Savepoints. */
void md_hist_mark(struct md_hist *h);
void md_hist_restore(struct md_hist *h);

/* Queue (tenant, path) for pruning by count: the file at `path`, or with
 * `subtree` every file below it (dropped when the queue is full). */
void md_hist_touch(struct md_hist *h, int64_t tenant, const char *path, size_t len, int subtree);
/* Take up to `max` queued paths: cb is called with each (the path is
 * valid during the call). Returns how many were taken. */
typedef void (*md_hist_touched_cb)(void *ctx, int64_t tenant, const char *path, size_t len,
                                   int subtree);
size_t md_hist_take_touched(struct md_hist *h, size_t max, md_hist_touched_cb cb, void *ctx);
/* Whether a retention run that deleted `deleted` of `budget` rows left
 * work for the next (paths still queued, or the budget ran out). */
int md_hist_prune_more(const struct md_hist *h, const struct md_pruned *deleted, size_t budget);

#endif
