/*
 * md_store.h — the storage interface memoryd's commands are written against.
 *
 * An engine implements struct md_store_ops and exports a struct md_engine
 * (below): SQLite (src/store/sqlite/, md_store_sqlite.h), the embedded
 * default, and PostgreSQL (src/store/pg/, md_store_pg.h), for many instances
 * on one database; the program's registry (app/md_engines.h) opens a store
 * by the form of its `db`. The commands (src/cmd/) and the HTTP front only
 * call the md_store_* / md_txn_* wrappers below, and know no engine: what
 * an engine can do beyond the operations every engine has, it says in its
 * capability bits (enum md_store_cap). What the operator's programs ask
 * beside the commands (API keys, dump and load, backup) has its wrappers in
 * md_store_admin.h.
 *
 * Model: every tenant has a tree of entries keyed by canonical path
 * ("/memories", "/memories/a", "/memories/a/b.txt"). Directories are real
 * entries; the root "/memories" is created with the tenant (a tenant that
 * has never written has no rows, yet its root exists: empty). Every
 * directory's `size` is the total bytes of the files below it: the engine
 * keeps it, inside the write operations (md_txn_put_file, remove_tree,
 * move_tree), however it likes (SQLite and PostgreSQL both write each
 * directory once per transaction, see md_dirsizes.h).
 *
 * The operations are coarse, each what a command means, so that a network
 * engine can do one in a fixed, small number of round trips (a view in
 * one; a write command in two: md_txn_locate, then one write operation).
 * Tenants are named by their id string (1..128 of [A-Za-z0-9._-]); a
 * engine maps names to its own keys.
 *
 * Transactions: md_store_read_begin() may be called from any thread and
 * gives a consistent view for each operation (a snapshot); write
 * transactions are for the single writer thread of a process
 * (src/cmd/writer.c). A write transaction first locks the tenants it will
 * touch (md_txn_batch_begin: several processes may write one database),
 * then runs each command inside a savepoint so that a batch of commands
 * shares one commit.
 *
 * Ownership: a txn is owned by its caller until md_txn_end()/commit/
 * rollback, which release it. Content pointers returned by an operation are
 * borrowed and valid until the next call on the same txn.
 *
 * Errors: MD_ENOENT (no such entry), MD_EEXIST (an entry is in the way),
 * MD_EBUSY (database locked or overloaded), MD_EUNAVAIL (the database
 * cannot be reached: nothing was done), MD_EUNSURE (a commit whose outcome
 * is unknown), MD_EDB (anything else; the engine has logged the details),
 * MD_ENOMEM.
 */
#ifndef MD_STORE_H
#define MD_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "base/md_err.h"
#include "base/md_tenant.h"
#include "store/md_history.h"

enum md_kind { MD_KIND_FILE = 0, MD_KIND_DIR = 1 };

struct md_entry {
    enum md_kind kind;
    int64_t size;        /* file: bytes; directory: bytes of files below */
    const char *content; /* files only, when asked for; borrowed */
    size_t content_len;
    int has_sha256; /* files found by view and locate: the content's SHA-256 */
    unsigned char sha256[MD_SHA256_LEN];
};

/* What a tenant stores, and its quota overrides (md_quota.h). */
struct md_usage {
    int64_t bytes;     /* bytes of file content: the root's size */
    int64_t files;     /* number of files */
    int64_t max_bytes; /* the tenant's overrides; -1: none (the defaults apply) */
    int64_t max_files;
};

/* One tenant of md_txn_tenants (GET /v1/tenants). */
struct md_tenant_info {
    const char *name; /* borrowed, until the callback returns */
    int64_t bytes;    /* bytes of file content */
    int64_t files;
    int64_t versions;   /* rows of history kept */
    int64_t last_write; /* unix ms of its latest change-feed entry kept; -1: none */
};
typedef int (*md_tenant_cb)(void *ctx, const struct md_tenant_info *ti);

/* What md_txn_erase deleted: rows of each table. */
struct md_erased {
    int64_t entries, versions, changes, idempotency, api_keys;
};

/* One entry of md_txn_scan (GET /v1/tenants/{t}/export). */
struct md_scan_entry {
    const char *path; /* canonical; borrowed, until the callback returns */
    size_t len;
    enum md_kind kind;
    int64_t mtime_ms;    /* unix ms of its last change */
    const char *content; /* files: the content (borrowed likewise); directories: NULL */
    size_t content_len;
};
typedef int (*md_scan_cb)(void *ctx, const struct md_scan_entry *e);

/* What md_txn_search looks for: files whose text contains every term
 * (where words begin, ASCII letters without case; md_search.h), at `dir` or below
 * it, ranked; `offset` hits skipped, at most `limit` answered. */
struct md_search_terms {
    const char *const *terms; /* n >= 1, each 1..MD_SEARCH_Q_MAX bytes, no control character */
    const size_t *lens;
    size_t n;
    const char *dir; /* canonical */
    size_t dir_len;
    size_t offset, limit;
};
/* One hit, best first: the file's path and content, borrowed until the
 * callback returns. Return nonzero to stop early. */
typedef int (*md_search_cb)(void *ctx, const char *path, size_t path_len, const char *content,
                            size_t content_len);

/* Called once per entry, in order; return nonzero to stop early. */
typedef int (*md_list_cb)(void *ctx, const char *path, size_t len, enum md_kind kind, int64_t size);

/* One path for md_txn_locate(), and what was found there. */
struct md_locate {
    const char *path; /* canonical */
    size_t len;
    int want_content; /* a file's content too */
    int want_parent;  /* also the deepest existing proper ancestor */
    /* out */
    int found;
    struct md_entry e;
    size_t anc_len;        /* want_parent: length of that ancestor's path (>= MD_ROOT_LEN) */
    enum md_kind anc_kind; /* and its kind */
};

/* Round trips to the database and statements run on a txn's connection so
 * far; a difference around a command is what it cost. An embedded engine
 * has no round trips (0). */
struct md_txn_stats {
    unsigned long statements;
    unsigned long round_trips;
};

struct md_store;
struct md_txn;

/* A view fetched before it runs (md_store_view_async). */
struct md_view_job {
    /* What will be viewed, as md_txn_view() will be called: borrowed until
     * `done` is called. */
    const char *tenant;
    const char *path; /* canonical */
    size_t len;
    size_t max_entries;
    /* Called once, from a thread of the store's: `t` is a read txn on
     * which md_txn_view() with the same arguments answers without waiting
     * (the callee ends it with md_txn_end(), from any thread), or NULL with
     * the error that kept the view from being fetched (MD_EUNAVAIL, MD_EDB,
     * MD_ENOMEM). */
    void (*done)(struct md_view_job *job, struct md_txn *t, enum md_err e);
};

/* Told of a tenant's committed change (md_store_watch), or NULL: maybe of
 * any tenant. */
typedef void (*md_watch_cb)(void *ctx, const char *tenant);

/* The version of this interface an engine implements (struct md_store_ops
 * `version`). As SQLite's sqlite3_vfs iVersion: operations are only ever
 * added, at the end, with the version that brought them; the registry
 * (app/md_engines.h) refuses an engine of another version. Version 2:
 * backup takes a progress; build and building (the search index built
 * after open, while memoryd serves). Version 3: imports in steps
 * (import_begin; import_mark, import_unmark, import_marks, import_forget;
 * cmd_recorded, and md_write_meta's `earlier`). Version 4: a tenant's
 * --sensitive override (sensitive_get, sensitive_set) and every version's
 * content (versions_scan), for memoryd scan and GET
 * /v1/tenants/{t}/secrets; expiry of unused files (expiry_set, expiry_get,
 * use_put, use_get, expired, expiring). Version 5: the search index caught
 * up beside the writer (index_step, INDEX_APART). */
#define MD_STORE_VERSION 5

/* What an engine can do beyond the operations every engine has (struct
 * md_store_ops `caps`); the wrappers below say which bit each operation
 * needs. An operation whose bit is not set is never called. */
enum md_store_cap {
    /* md_store_view_async: views fetched without a thread waiting for
     * them (a network engine multiplexes them on a few connections). */
    MD_STORE_CAP_VIEW_ASYNC = 1u << 0,
    /* md_store_prune_begin: retention in transactions of its own, on a
     * connection of its own, beside the writer's. Without it, retention
     * runs in the writer's transactions, between its batches. */
    MD_STORE_CAP_PRUNE_APART = 1u << 1,
    /* md_txn_batch_begin may defer a batch's writes until md_txn_flush
     * (struct md_batch `defer`). */
    MD_STORE_CAP_DEFER = 1u << 2,
    /* A network engine: md_txn_stats and md_store_wire count round trips. */
    MD_STORE_CAP_ROUND_TRIPS = 1u << 3,
    /* md_store_backup: an online copy of the database into a file. */
    MD_STORE_CAP_BACKUP = 1u << 4,
    /* md_txn_dump: every tenant's rows, read from a snapshot. */
    MD_STORE_CAP_DUMP = 1u << 5,
    /* md_txn_load: rows of md_txn_dump written into a write transaction. */
    MD_STORE_CAP_LOAD = 1u << 6,
    /* md_store_import_begin: an import's write transaction on a connection
     * of its own, which may stay open while the writer's transactions come
     * and go (the import's tenant locked all along, by md_txn_batch_begin):
     * the import is written in steps, between the writer's batches, and
     * committed once. */
    MD_STORE_CAP_IMPORT_APART = 1u << 7,
    /* md_txn_import_mark and the rest: an import written in steps that
     * each commit, in the writer's own transactions, with a mark that says
     * where the tenant's history stood, so that a failed or cut-off import
     * is undone (src/cmd/import.c). For an engine with one writer
     * (SQLite). */
    MD_STORE_CAP_IMPORT_MARK = 1u << 8,
    /* md_store_index_step: the search index is not written in the
     * transactions of the writes; it catches up in steps of its own,
     * which the writer runs between its batches (SQLite). Without the bit
     * the engine keeps its index by itself (PostgreSQL: the writes note
     * the files they touch, and a thread of the store's own indexes them
     * on a connection of its own). */
    MD_STORE_CAP_INDEX_APART = 1u << 9,
};

/* A file as expiry sees it (md_txn_expired, md_txn_expiring): its tenant
 * (borrowed, until the callback returns), path, and last use (unix ms: its
 * last change, or a later use written back by md_txn_use_put). Return
 * nonzero to stop. */
typedef int (*md_use_cb)(void *ctx, const char *tenant, const char *path, size_t len,
                         int64_t used_ms);

/* An import mark (md_txn_import_marks): the tenant, and its last version
 * when the import began. */
typedef int (*md_import_mark_cb)(void *ctx, const char *tenant, int64_t version);

/* What a batch of write commands names (md_txn_batch_begin): its tenants,
 * locked first, and the paths its commands name (each command's path,
 * with the file's content when the command edits it; a rename's
 * destination). */
struct md_batch_path {
    const char *tenant;
    const char *path; /* canonical */
    size_t len;
    int content; /* the command reads the file's content */
};
struct md_batch {
    const char *const *tenants; /* names may repeat */
    size_t ntenants;
    const struct md_batch_path *paths;
    size_t npaths;
    /* The engine may defer the batch's writes (MD_STORE_CAP_DEFER): it reads
     * the paths now, answers the commands' locates from those rows, queues
     * their writes and sends them all at md_txn_flush. Not for a batch
     * whose answers depend on reads made while it runs. */
    int defer;
};

struct md_key_info;
struct md_dump_sink;
struct md_dump_row;
struct md_totals;
struct md_backup_info;
struct md_progress;

struct md_store_ops {
    int version;   /* MD_STORE_VERSION */
    unsigned caps; /* enum md_store_cap */
    const char *name;
    void (*close)(struct md_store *s);
    enum md_err (*read_begin)(struct md_store *s, struct md_txn **out);
    enum md_err (*write_begin)(struct md_store *s, struct md_txn **out);
    void (*txn_end)(struct md_txn *t); /* read txns */
    enum md_err (*commit)(struct md_txn *t);
    void (*rollback)(struct md_txn *t);
    enum md_err (*batch_begin)(struct md_txn *t, const struct md_batch *b);
    enum md_err (*flush)(struct md_txn *t);
    enum md_err (*savepoint)(struct md_txn *t);
    enum md_err (*release)(struct md_txn *t, int rollback);
    enum md_err (*view)(struct md_txn *t, const char *tenant, const char *path, size_t len,
                        struct md_entry *e, size_t max_entries, md_list_cb cb, void *ctx,
                        int *complete);
    enum md_err (*locate)(struct md_txn *t, const char *tenant, struct md_locate *l, size_t n,
                          int *tenant_exists);
    enum md_err (*put_file)(struct md_txn *t, const char *tenant, const char *path, size_t len,
                            const char *content, size_t content_len,
                            const unsigned char sha256[MD_SHA256_LEN], int64_t old_size,
                            size_t parents_from);
    enum md_err (*remove_tree)(struct md_txn *t, const char *tenant, const char *path, size_t len,
                               int64_t size);
    enum md_err (*move_tree)(struct md_txn *t, const char *tenant, const char *from, size_t flen,
                             const char *to, size_t tlen, int64_t size, size_t parents_from);
    enum md_err (*get)(struct md_txn *t, const char *tenant, const char *path, size_t len,
                       int want_content, struct md_entry *e);
    enum md_err (*list)(struct md_txn *t, const char *tenant, const char *dir, size_t len,
                        md_list_cb cb, void *ctx);
    enum md_err (*ping)(struct md_store *s);
    void (*stats)(struct md_txn *t, struct md_txn_stats *st);
    void (*wire)(struct md_store *s, struct md_txn_stats *st);
    /* History, the change feed, idempotency (md_history.h); see the
     * wrappers below. */
    enum md_err (*cmd_begin)(struct md_txn *t, const char *tenant, const struct md_write_meta *m);
    enum md_err (*cmd_end)(struct md_txn *t, const char *const *paths, const size_t *lens, size_t n,
                           struct md_change_rec *rec);
    enum md_err (*idem_get)(struct md_txn *t, const char *tenant, const char *key, size_t key_len,
                            struct md_idem *out);
    enum md_err (*idem_put)(struct md_txn *t, const char *tenant, const char *key, size_t key_len,
                            const struct md_idem *answer, const char *path, size_t path_len);
    enum md_err (*history)(struct md_txn *t, const char *tenant, const char *path, size_t len,
                           int64_t below, size_t limit, md_version_cb cb, void *ctx);
    enum md_err (*version_get)(struct md_txn *t, const char *tenant, int64_t version,
                               int want_content, struct md_version *v);
    enum md_err (*state_before)(struct md_txn *t, const char *tenant, const char *dir, size_t len,
                                int64_t *before, md_version_cb cb, void *ctx);
    enum md_err (*changes)(struct md_txn *t, const char *tenant, int64_t after, size_t limit,
                           md_change_cb cb, void *ctx, int64_t *oldest, int64_t *last_seq);
    enum md_err (*redact)(struct md_txn *t, const char *tenant, int64_t version);
    enum md_err (*prune)(struct md_txn *t, int64_t now_ms, size_t budget,
                         struct md_pruned *deleted);
    enum md_err (*prune_begin)(struct md_store *s, struct md_txn **out); /* PRUNE_APART */
    enum md_err (*db_size)(struct md_store *s, int64_t *bytes);
    enum md_err (*watch)(struct md_store *s, md_watch_cb cb, void *ctx);
    /* Quotas (md_quota.h); see the wrappers below. */
    enum md_err (*usage)(struct md_txn *t, const char *tenant, struct md_usage *u);
    enum md_err (*search)(struct md_txn *t, const char *tenant, const struct md_search_terms *q,
                          md_search_cb cb, void *ctx);
    enum md_err (*set_limits)(struct md_txn *t, const char *tenant, int64_t max_bytes,
                              int64_t max_files);
    /* Tenant administration; see the wrappers below. */
    enum md_err (*tenants)(struct md_txn *t, const char *after, size_t limit, md_tenant_cb cb,
                           void *ctx);
    enum md_err (*erase)(struct md_txn *t, const char *tenant, struct md_erased *out);
    /* The export (md_store_snapshot_begin, md_txn_scan). */
    enum md_err (*snapshot_begin)(struct md_store *s, struct md_txn **out);
    enum md_err (*scan)(struct md_txn *t, const char *tenant, const char *after, size_t after_len,
                        size_t max_rows, int64_t max_bytes, md_scan_cb cb, void *ctx, int *more);
    enum md_err (*view_async)(struct md_store *s, struct md_view_job *job); /* VIEW_ASYNC */
    /* API keys (md_store_key_*). */
    enum md_err (*key_put)(struct md_store *s, const struct md_key_info *k,
                           const unsigned char *hash);
    enum md_err (*key_list)(struct md_store *s, const char *tenant,
                            void (*cb)(void *ctx, const struct md_key_info *k), void *ctx);
    enum md_err (*key_revoke)(struct md_store *s, const char *id, int64_t now);
    enum md_err (*key_find)(struct md_store *s, const unsigned char *hash, struct md_key_info *out);
    /* Copying a database (md_txn_dump, md_txn_load, md_txn_totals). */
    enum md_err (*dump)(struct md_txn *t, const struct md_dump_sink *sink, void *ctx); /* DUMP */
    enum md_err (*load)(struct md_txn *t, const struct md_dump_row *row);              /* LOAD */
    enum md_err (*totals)(struct md_txn *t, const char *tenant, struct md_totals *out);
    /* md_store_backup (BACKUP). */
    enum md_err (*backup)(struct md_store *s, const char *path, const volatile int *stop,
                          struct md_progress *progress, struct md_backup_info *out, char *why,
                          size_t why_len);
    /* Version 2: md_store_build, md_store_building. */
    enum md_err (*build)(struct md_store *s, char *why, size_t why_len);
    int (*building)(struct md_store *s);
    /* Version 3: imports in steps; see the wrappers below. */
    enum md_err (*import_begin)(struct md_store *s, struct md_txn **out); /* IMPORT_APART */
    enum md_err (*import_mark)(struct md_txn *t, const char *tenant);     /* IMPORT_MARK */
    enum md_err (*import_unmark)(struct md_txn *t, const char *tenant);   /* IMPORT_MARK */
    enum md_err (*import_marks)(struct md_txn *t, md_import_mark_cb cb,
                                void *ctx);                             /* IMPORT_MARK */
    enum md_err (*import_forget)(struct md_txn *t, const char *tenant); /* IMPORT_MARK */
    void (*cmd_recorded)(struct md_txn *t, struct md_change_rec *rec);
    /* Version 4: a tenant's --sensitive override; the versions that hold
     * content. See the wrappers below. */
    enum md_err (*sensitive_get)(struct md_txn *t, const char *tenant, int *mode);
    enum md_err (*sensitive_set)(struct md_txn *t, const char *tenant, int mode);
    enum md_err (*versions_scan)(struct md_txn *t, const char *tenant, int64_t after,
                                 size_t max_rows, int64_t max_bytes, md_version_cb cb, void *ctx,
                                 int *more);
    /* Version 4: expiry of unused files; see the wrappers below. */
    enum md_err (*expiry_set)(struct md_txn *t, const char *tenant, int64_t expire_ms);
    enum md_err (*expiry_get)(struct md_txn *t, const char *tenant, int64_t *expire_ms);
    enum md_err (*use_put)(struct md_txn *t, const char *tenant, const char *path, size_t len,
                           int64_t used_ms);
    enum md_err (*use_get)(struct md_txn *t, const char *tenant, const char *path, size_t len,
                           int64_t *used_ms, int64_t *size);
    enum md_err (*expired)(struct md_txn *t, int64_t now_ms, int64_t default_ms, size_t limit,
                           md_use_cb cb, void *ctx);
    enum md_err (*expiring)(struct md_txn *t, const char *tenant, int64_t before_ms,
                            const char *after, size_t after_len, size_t limit, md_use_cb cb,
                            void *ctx);
    /* Version 5. */
    enum md_err (*index_step)(struct md_store *s, int *more); /* INDEX_APART */
};

/* Every engine's store and txn structs begin with these. */
struct md_store {
    const struct md_store_ops *ops;
};
struct md_txn {
    struct md_store *store;
};

enum md_durability {
    MD_DURABILITY_FULL = 0,  /* acknowledged writes survive a machine crash */
    MD_DURABILITY_NORMAL = 1 /* ... a crash of memoryd (SQLite) / of the session (PostgreSQL) */
};

/* Whether the full-text index is kept (memoryd --search, md_search.h):
 * set at open; KEEP leaves it as the database has it (tools). */
enum md_search_mode { MD_SEARCH_KEEP = 0, MD_SEARCH_ON, MD_SEARCH_OFF };

/* What every engine is opened with; each engine's own settings are its
 * own (md_store_pg.h: struct md_pg_config). */
struct md_store_config {
    const char *db; /* a SQLite file path, or a PostgreSQL connection URI */
    enum md_durability durability;
    int busy_timeout_ms; /* wait this long for a lock another process holds */
    struct md_retention history;
    enum md_search_mode search; /* memoryd --search; tools leave the index as it is */
    /* A search index that --search on must build is left for md_store_build
     * (memoryd serves meanwhile) instead of being built by the open. */
    int defer_build;
    /* Open only to read what is there (memoryd backup, the source of
     * memoryd migrate): nothing is created, migrated or written, and no
     * thread is started; read_begin, snapshot_begin, dump, totals and
     * backup are the operations left. */
    int read_only;
    /* A tool (memoryd keys, scan, the target of migrate): versions are
     * left as the database has them (neither turned into deltas nor made
     * whole for --history-versions 0, which only memoryd itself acts on). */
    int keep_versions;
};

/* An engine, as the registry (app/md_engines.h) knows it: the form of the
 * `db` it serves, how it opens, how its `db` may be logged. */
struct md_engine {
    const char *name; /* "sqlite", "postgres": the `store` label of logs and metrics */
    unsigned caps;    /* enum md_store_cap: what a store it opens can do */
    /* True when `db` is this engine's (the registry asks in its order; the
     * last engine takes any db). */
    int (*claims)(const char *db);
    /* Open (creating and migrating when needed, unless cfg->read_only)
     * with the engine's own settings `own` (its config struct; NULL: its
     * defaults). On failure an error and the reason in `why`. */
    enum md_err (*open)(const struct md_store_config *cfg, const void *own, struct md_store **out,
                        char *why, size_t why_len);
    /* `db` as it may be logged (a password replaced by "***"), into `buf`;
     * returns `buf`. */
    const char *(*redact)(const char *db, char *buf, size_t len);
    int (*schema_version)(void); /* the number of its migrations (sql/<engine>/) */
};

static inline void md_store_close(struct md_store *s)
{
    if (s)
        s->ops->close(s);
}
static inline enum md_err md_store_read_begin(struct md_store *s, struct md_txn **t)
{
    return s->ops->read_begin(s, t);
}
/* A read transaction whose operations all see the database as it was at
 * its first one (one snapshot, however long it is held: an export's). On
 * PostgreSQL a pooled connection in a REPEATABLE READ, READ ONLY
 * transaction; on SQLite a reader's transaction (the WAL cannot be reset
 * while it is open). Ended by md_txn_end. */
static inline enum md_err md_store_snapshot_begin(struct md_store *s, struct md_txn **t)
{
    return s->ops->snapshot_begin(s, t);
}
static inline enum md_err md_store_write_begin(struct md_store *s, struct md_txn **t)
{
    return s->ops->write_begin(s, t);
}
/* Whether retention (md_txn_prune) can run beside the writer, in
 * transactions of its own from md_store_prune_begin: on a connection of
 * its own (PostgreSQL). Otherwise it runs in md_store_write_begin's
 * transactions, between the writer's batches (SQLite: one writer). */
static inline unsigned md_store_caps(const struct md_store *s)
{
    return s->ops->caps;
}
static inline int md_store_prunes_apart(const struct md_store *s)
{
    return (s->ops->caps & MD_STORE_CAP_PRUNE_APART) != 0;
}
/* A write transaction for md_txn_prune alone (md_store_prunes_apart), on
 * the pruner's connection; ended by md_txn_commit or md_txn_rollback. One
 * at a time (one pruner thread). */
static inline enum md_err md_store_prune_begin(struct md_store *s, struct md_txn **t)
{
    return s->ops->prune_begin(s, t);
}
/* The search index an open with defer_build left to build: built now, on a
 * connection of its own, waiting for the locks it needs (a long time on a
 * large database: call it from a thread of its own; md_store_close waits
 * for it). Until it returns, md_store_building is true and a search is
 * MD_EBUSY. MD_OK at once when nothing is left to build; on failure an
 * error and the reason in `why`, and search stays off. */
static inline enum md_err md_store_build(struct md_store *s, char *why, size_t why_len)
{
    return s->ops->build(s, why, why_len);
}
/* One step of the search index catching up with the writes committed
 * (MD_STORE_CAP_INDEX_APART; MD_OK doing nothing otherwise): at most a
 * fixed number of the files written since the last step are indexed, in a
 * write transaction of its own (call it where md_store_write_begin may be
 * called: the writer's thread, between batches). *more is set when files
 * are left for the next step. A search never waits for it: the files
 * written and not yet indexed are checked directly. On failure an error
 * as md_store.h; the files stay noted for the next step. */
static inline enum md_err md_store_index_step(struct md_store *s, int *more)
{
    *more = 0;
    if (!(s->ops->caps & MD_STORE_CAP_INDEX_APART))
        return MD_OK;
    return s->ops->index_step(s, more);
}
/* True while a search index is left to build (md_store_build). */
static inline int md_store_building(struct md_store *s)
{
    return s->ops->building(s);
}
/* An import's write transaction, on a connection of its own
 * (MD_STORE_CAP_IMPORT_APART): md_txn_batch_begin locks its tenant, then it
 * may stay open while the writer's transactions (md_store_write_begin) come
 * and go; ended by md_txn_commit or md_txn_rollback. One at a time, from
 * the writer's thread. */
static inline enum md_err md_store_import_begin(struct md_store *s, struct md_txn **t)
{
    return s->ops->import_begin(s, t);
}
/* Imports in steps that each commit (MD_STORE_CAP_IMPORT_MARK), on write
 * transactions. md_txn_import_mark: an import into `tenant` begins (the
 * tenant is made if new): its last version and change-feed seq are kept
 * with the mark, in the transaction of the import's first step.
 * md_txn_import_unmark: it is done (in its last step's transaction).
 * md_txn_import_marks: every mark (imports a stopped memoryd left halfway),
 * until `cb` returns nonzero. md_txn_import_forget: after the tenant's
 * files were put back as they stood (a restore to before the mark's
 * version + 1), the versions and change-feed entries recorded since the
 * mark are deleted, the tenant's counters set back, and the mark dropped;
 * in a transaction that runs no command (md_txn_cmd_begin). MD_ENOENT:
 * no mark for the tenant. */
static inline enum md_err md_txn_import_mark(struct md_txn *t, const char *tenant)
{
    return t->store->ops->import_mark(t, tenant);
}
static inline enum md_err md_txn_import_unmark(struct md_txn *t, const char *tenant)
{
    return t->store->ops->import_unmark(t, tenant);
}
static inline enum md_err md_txn_import_marks(struct md_txn *t, md_import_mark_cb cb, void *ctx)
{
    return t->store->ops->import_marks(t, cb, ctx);
}
static inline enum md_err md_txn_import_forget(struct md_txn *t, const char *tenant)
{
    return t->store->ops->import_forget(t, tenant);
}
/* MD_OK when the database answers and writes can be done. */
static inline enum md_err md_store_ping(struct md_store *s)
{
    return s->ops->ping(s);
}
static inline void md_txn_end(struct md_txn *t)
{
    t->store->ops->txn_end(t);
}
static inline enum md_err md_txn_commit(struct md_txn *t)
{
    return t->store->ops->commit(t);
}
static inline void md_txn_rollback(struct md_txn *t)
{
    t->store->ops->rollback(t);
}
/* Before anything else in a write transaction: lock the batch's tenants
 * until the transaction ends, so that no other process writes them
 * meanwhile (locks are taken in one fixed order, so two processes never
 * wait for each other); with b->defer, on an engine that defers
 * (MD_STORE_CAP_DEFER), read the batch's paths and defer its writes.
 * MD_EUNAVAIL: the database cannot be reached (nothing was done; the batch
 * may run again on a new connection). MD_EREDO: the deferral was given up
 * before it began; roll back and run the batch again without it. */
static inline enum md_err md_txn_batch_begin(struct md_txn *t, const struct md_batch *b)
{
    return t->store->ops->batch_begin(t, b);
}
/* Send the writes a deferring batch has held back (one round trip), before
 * md_txn_commit; MD_OK at once when nothing is held. MD_EREDO: a deferred
 * write failed: roll back and run the batch again without deferral (where
 * a failing command fails alone). */
static inline enum md_err md_txn_flush(struct md_txn *t)
{
    return t->store->ops->flush(t);
}
static inline enum md_err md_txn_savepoint(struct md_txn *t)
{
    return t->store->ops->savepoint(t);
}
/* End the command's savepoint: keep what it did, or roll it back. In a
 * deferring batch, MD_EREDO when the deferral has been given up (a
 * statement failed, or a command that wrote failed): roll back and run the
 * batch again without deferral. */
static inline enum md_err md_txn_release(struct md_txn *t, int rollback)
{
    return t->store->ops->release(t, rollback);
}
/*
 * What a view needs, in one operation: the entry at `path` (a file with its
 * content) and, when it is a directory, its listing: every visible entry
 * up to two levels below it, depth first, each directory followed by its
 * own children, siblings in byte order of their names; entries named
 * ".*" or "node_modules" are left out with everything below them. `cb` is
 * called for each until it returns nonzero. An engine may stop after about
 * `max_entries` entries; *complete is 0 when entries were left out (by the
 * engine or by `cb`). The root of a tenant without data is an empty
 * directory. MD_ENOENT when nothing is at `path`.
 */
static inline enum md_err md_txn_view(struct md_txn *t, const char *tenant, const char *path,
                                      size_t len, struct md_entry *e, size_t max_entries,
                                      md_list_cb cb, void *ctx, int *complete)
{
    return t->store->ops->view(t, tenant, path, len, e, max_entries, cb, ctx, complete);
}
/* Whether the store fetches views asynchronously: a network engine, whose
 * reads wait for a round trip, multiplexes them on a few connections
 * instead of a thread waiting for each. */
static inline int md_store_has_view_async(const struct md_store *s)
{
    return (s->ops->caps & MD_STORE_CAP_VIEW_ASYNC) != 0;
}
/* Start fetching the view `job` describes; `job->done` is called when it
 * is ready (possibly before this returns). MD_OK, or an error (MD_ENOMEM)
 * and `done` is not called. Only where md_store_has_view_async(). */
static inline enum md_err md_store_view_async(struct md_store *s, struct md_view_job *job)
{
    return s->ops->view_async(s, job);
}
/* Look up `n` paths at once (and, where asked, their deepest existing
 * ancestors). The root is always found (a directory), also for a tenant
 * without data; *tenant_exists tells whether the tenant has any. */
static inline enum md_err md_txn_locate(struct md_txn *t, const char *tenant, struct md_locate *l,
                                        size_t n, int *tenant_exists)
{
    return t->store->ops->locate(t, tenant, l, n, tenant_exists);
}
/* Write file `path`: a new one (old_size -1: nothing may be there) or a new
 * content for an existing file of old_size bytes. The directories between
 * the ancestor of length `parents_from` (which exists; MD_ROOT_LEN for the
 * root, which is made with the tenant when it has no data) and `path` are
 * made first. Every ancestor's size changes by the difference. */
static inline enum md_err md_txn_put_file(struct md_txn *t, const char *tenant, const char *path,
                                          size_t len, const char *content, size_t content_len,
                                          const unsigned char sha256[MD_SHA256_LEN],
                                          int64_t old_size, size_t parents_from)
{
    return t->store->ops->put_file(t, tenant, path, len, content, content_len, sha256, old_size,
                                   parents_from);
}
/* Delete the entry at `path` (not the root) and everything below it, of
 * `size` bytes in all; every ancestor's size goes down by `size`. */
static inline enum md_err md_txn_remove_tree(struct md_txn *t, const char *tenant, const char *path,
                                             size_t len, int64_t size)
{
    return t->store->ops->remove_tree(t, tenant, path, len, size);
}
/* Move the entry at `from` and everything below it (`size` bytes) to `to`,
 * which is free, not inside `from`, and whose missing parents below the
 * ancestor of length `parents_from` are made first; sizes follow. */
static inline enum md_err md_txn_move_tree(struct md_txn *t, const char *tenant, const char *from,
                                           size_t flen, const char *to, size_t tlen, int64_t size,
                                           size_t parents_from)
{
    return t->store->ops->move_tree(t, tenant, from, flen, to, tlen, size, parents_from);
}
/* One entry (for tools and tests; commands use view and locate). */
static inline enum md_err md_txn_get(struct md_txn *t, const char *tenant, const char *path,
                                     size_t len, int want_content, struct md_entry *e)
{
    return t->store->ops->get(t, tenant, path, len, want_content, e);
}
/* Direct children of directory `dir`, in byte order of their paths, hidden
 * ones included (for tools and tests). */
static inline enum md_err md_txn_list(struct md_txn *t, const char *tenant, const char *dir,
                                      size_t len, md_list_cb cb, void *ctx)
{
    return t->store->ops->list(t, tenant, dir, len, cb, ctx);
}
/* What the operations on `t` have cost so far. A command whose writes a
 * deferring batch holds back is charged the round trip that will send
 * them. */
static inline void md_txn_stats(struct md_txn *t, struct md_txn_stats *st)
{
    t->store->ops->stats(t, st);
}
/* Statements and round trips that went over the writer's connection so far
 * (MD_STORE_CAP_ROUND_TRIPS; zeros otherwise): around a whole transaction,
 * its BEGIN and COMMIT included. For the writer thread. */
static inline void md_store_wire(struct md_store *s, struct md_txn_stats *st)
{
    s->ops->wire(s, st);
}

/* ---- history, the change feed, idempotency (md_history.h) ---- */

/* In a write transaction, after md_txn_savepoint and before a write
 * command runs: what it is. Its writes (put_file, remove_tree, move_tree)
 * record versions when history is on; tenant counters are loaded here. */
static inline enum md_err md_txn_cmd_begin(struct md_txn *t, const char *tenant,
                                           const struct md_write_meta *m)
{
    return t->store->ops->cmd_begin(t, tenant, m);
}
/* The command succeeded: record its change-feed entry naming `paths`
 * (rename: old and new), and what it recorded in *rec. */
static inline enum md_err md_txn_cmd_end(struct md_txn *t, const char *const *paths,
                                         const size_t *lens, size_t n, struct md_change_rec *rec)
{
    return t->store->ops->cmd_end(t, paths, lens, n, rec);
}
/* What the command begun on `t` has recorded so far (seq 0): for a
 * command that goes on in another transaction (md_write_meta `earlier`)
 * instead of ending here. */
static inline void md_txn_cmd_recorded(struct md_txn *t, struct md_change_rec *rec)
{
    t->store->ops->cmd_recorded(t, rec);
}
/* The stored first answer for (tenant, key), kept MD_IDEMPOTENCY_MS;
 * MD_ENOENT when none. */
static inline enum md_err md_txn_idem_get(struct md_txn *t, const char *tenant, const char *key,
                                          size_t key_len, struct md_idem *out)
{
    return t->store->ops->idem_get(t, tenant, key, key_len, out);
}
/* Store the first answer for (tenant, key) in the open write transaction
 * (with the command's effect or, for a refused command, alone). `path`:
 * the file the command wrote (a redaction of its versions scrubs the
 * answer), or NULL. */
static inline enum md_err md_txn_idem_put(struct md_txn *t, const char *tenant, const char *key,
                                          size_t key_len, const struct md_idem *answer,
                                          const char *path, size_t path_len)
{
    return t->store->ops->idem_put(t, tenant, key, key_len, answer, path, path_len);
}
/* Versions of `path` below version `below` (0: all), newest first, at most
 * `limit`, without their content. */
static inline enum md_err md_txn_history(struct md_txn *t, const char *tenant, const char *path,
                                         size_t len, int64_t below, size_t limit, md_version_cb cb,
                                         void *ctx)
{
    return t->store->ops->history(t, tenant, path, len, below, limit, cb, ctx);
}
/* One version (MD_ENOENT when not kept). */
static inline enum md_err md_txn_version_get(struct md_txn *t, const char *tenant, int64_t version,
                                             int want_content, struct md_version *v)
{
    return t->store->ops->version_get(t, tenant, version, want_content, v);
}
/* For every path at or below `dir` with a version >= *before: the
 * earliest such version, with its content (what the path was just before
 * *before). In path order. A write records its versions under consecutive
 * numbers: *before is first moved back to the first version of the write
 * that recorded it (while its change-feed entry is kept), so that the
 * state is one that existed. */
static inline enum md_err md_txn_state_before(struct md_txn *t, const char *tenant, const char *dir,
                                              size_t len, int64_t *before, md_version_cb cb,
                                              void *ctx)
{
    return t->store->ops->state_before(t, tenant, dir, len, before, cb, ctx);
}
/* Change-feed entries with seq > after, in order, at most `limit`;
 * *oldest: the oldest seq kept (0: none kept), *last_seq: the tenant's
 * last (0: none ever). */
static inline enum md_err md_txn_changes(struct md_txn *t, const char *tenant, int64_t after,
                                         size_t limit, md_change_cb cb, void *ctx, int64_t *oldest,
                                         int64_t *last_seq)
{
    return t->store->ops->changes(t, tenant, after, limit, cb, ctx, oldest, last_seq);
}
/* Erase the content (and hash) of a version for good; the answers kept for
 * idempotent retries of writes to its path are scrubbed. The engine makes
 * sure the bytes leave its files after the commit (see the engines). */
static inline enum md_err md_txn_redact(struct md_txn *t, const char *tenant, int64_t version)
{
    return t->store->ops->redact(t, tenant, version);
}
/* In a write transaction of its own: delete up to `budget` rows that
 * retention no longer keeps (versions past --history-versions per file or
 * older than --history-days, change-feed entries, idempotency keys older
 * than a day). *deleted: how many of each kind, and whether work was left
 * for another call (deleted->more). */
static inline enum md_err md_txn_prune(struct md_txn *t, int64_t now_ms, size_t budget,
                                       struct md_pruned *deleted)
{
    return t->store->ops->prune(t, now_ms, budget, deleted);
}

/* The database's size on disk, bytes: SQLite's file and its WAL, or
 * PostgreSQL's pg_database_size() (one read, on a pooled connection).
 * For metrics; not for the request path. */
static inline enum md_err md_store_db_size(struct md_store *s, int64_t *bytes)
{
    return s->ops->db_size(s, bytes);
}

/* Hear of changes other processes commit to the database (the change
 * feed's long polls): cb is called from a thread of the store's. An engine
 * whose only writer is this process (SQLite) does nothing: the writer's
 * commit hook tells (md_writer.h). cb NULL stops it; stop it before what
 * cb uses is gone. */
static inline enum md_err md_store_watch(struct md_store *s, md_watch_cb cb, void *ctx)
{
    return s->ops->watch(s, cb, ctx);
}

/* ---- quotas (md_quota.h) ---- */

/* What `tenant` stores now, in this transaction (a write transaction's
 * earlier commands included), and its overrides; a tenant without data
 * stores nothing and has none. The file count is kept exactly by the
 * database (triggers of 003_quotas.sql, both engines) in the transaction that
 * adds or removes a file. PostgreSQL: one round trip; in an optimistic
 * batch (md_store_pg.h) none, from the prefetched root and the batch's
 * queued writes, or when they cannot tell (a tenant made, a directory
 * removed in the batch) the batch is given up and runs the exact way. */
static inline enum md_err md_txn_usage(struct md_txn *t, const char *tenant, struct md_usage *u)
{
    return t->store->ops->usage(t, tenant, u);
}
/* In a write transaction: set `tenant`'s overrides (-1: none), making the
 * tenant (its row and empty root) when it has no data. */
static inline enum md_err md_txn_set_limits(struct md_txn *t, const char *tenant, int64_t max_bytes,
                                            int64_t max_files)
{
    return t->store->ops->set_limits(t, tenant, max_bytes, max_files);
}

/* The tenant's --sensitive override (md_sensitive.h: an enum
 * md_sensitive_mode, stored as its number), or -1 in *mode: none (the
 * server's mode applies; also for a tenant without data). */
static inline enum md_err md_txn_sensitive_get(struct md_txn *t, const char *tenant, int *mode)
{
    return t->store->ops->sensitive_get(t, tenant, mode);
}
/* In a write transaction: set `tenant`'s --sensitive override (-1: none),
 * making the tenant (its row and empty root) when it has no data, as
 * md_txn_set_limits does. */
static inline enum md_err md_txn_sensitive_set(struct md_txn *t, const char *tenant, int mode)
{
    return t->store->ops->sensitive_set(t, tenant, mode);
}

/* ---- expiry of unused files (md_expiry.h) ---- */

/* A file's last use is the later of its last change (a write) and the
 * last use written back with md_txn_use_put (views; the engine keeps it
 * beside the row and only ever moves it forward). A tenant's window
 * (expire_ms): -1 none of its own (--expire-after applies), 0 off, else
 * milliseconds. */

/* In a write transaction: set `tenant`'s window (-1: none of its own),
 * making the tenant when it has no data. */
static inline enum md_err md_txn_expiry_set(struct md_txn *t, const char *tenant, int64_t expire_ms)
{
    return t->store->ops->expiry_set(t, tenant, expire_ms);
}
/* `tenant`'s window (-1 also for a tenant without data). */
static inline enum md_err md_txn_expiry_get(struct md_txn *t, const char *tenant,
                                            int64_t *expire_ms)
{
    return t->store->ops->expiry_get(t, tenant, expire_ms);
}
/* In a write transaction, with the tenant locked (md_txn_batch_begin):
 * the file at `path` was used at `used_ms`; its last use moves forward
 * to it (never back). Nothing when no file is there. */
static inline enum md_err md_txn_use_put(struct md_txn *t, const char *tenant, const char *path,
                                         size_t len, int64_t used_ms)
{
    return t->store->ops->use_put(t, tenant, path, len, used_ms);
}
/* The last use and size of the file at `path`; MD_ENOENT when no file is
 * there. */
static inline enum md_err md_txn_use_get(struct md_txn *t, const char *tenant, const char *path,
                                         size_t len, int64_t *used_ms, int64_t *size)
{
    return t->store->ops->use_get(t, tenant, path, len, used_ms, size);
}
/* Files of any tenant whose last use is older than now_ms minus their
 * tenant's window (`default_ms` for a tenant without one of its own; 0:
 * off), at most `limit`, in no particular order. */
static inline enum md_err md_txn_expired(struct md_txn *t, int64_t now_ms, int64_t default_ms,
                                         size_t limit, md_use_cb cb, void *ctx)
{
    return t->store->ops->expired(t, now_ms, default_ms, limit, cb, ctx);
}
/* `tenant`'s files last used at or before `before_ms` whose path sorts
 * after `after` ("" for the first), in path order, at most `limit`. */
static inline enum md_err md_txn_expiring(struct md_txn *t, const char *tenant, int64_t before_ms,
                                          const char *after, size_t after_len, size_t limit,
                                          md_use_cb cb, void *ctx)
{
    return t->store->ops->expiring(t, tenant, before_ms, after, after_len, limit, cb, ctx);
}

/* ---- full-text search (md_search.h) ---- */

/* In a read transaction: the tenant's files that match `q`, best first
 * (both engines: the number of the terms' occurrences in the file,
 * most first, then path; the index finds the candidates, SQLite's FTS5
 * word index or PostgreSQL's trigram index; a search with no word of 3
 * characters or more scans the tenant's files instead).
 * MD_ENOENT when the store was opened with search off. */
static inline enum md_err md_txn_search(struct md_txn *t, const char *tenant,
                                        const struct md_search_terms *q, md_search_cb cb, void *ctx)
{
    return t->store->ops->search(t, tenant, q, cb, ctx);
}

/* ---- helpers shared by the engines (src/store/store.c) ---- */

/* True for a name (one path segment) a listing leaves out: ".*" or
 * "node_modules". */
int md_store_hidden_name(const char *name, size_t len);

/* The two-level listing of md_txn_view() for an engine that can list one
 * directory at a time (`list`, called on `t`): the direct children of
 * `dir` are collected first (about `max_entries` of them at most), then
 * each is passed to `cb` followed, for a directory, by its own visible
 * children. */
enum md_err md_store_list_two_levels(struct md_txn *t, const char *tenant, const char *dir,
                                     size_t len, size_t max_entries, md_list_cb cb, void *ctx,
                                     int *complete);

/* A 64-bit key for a tenant name (for locks keyed by integers). */
int64_t md_store_tenant_key(const char *name);

/* ---- tenant administration ---- */

/* Tenants whose name sorts after `after` (byte order; "" for the first),
 * in that order, at most `limit`, with their usage: one indexed lookup per
 * tenant for its root, its last change-feed entry and the count of its
 * versions (on the versions primary key). */
static inline enum md_err md_txn_tenants(struct md_txn *t, const char *after, size_t limit,
                                         md_tenant_cb cb, void *ctx)
{
    return t->store->ops->tenants(t, after, limit, cb, ctx);
}
/* In a write transaction of its own, with the tenant locked: delete every
 * row of `tenant` (entries, versions, change feed, idempotency keys, the
 * tenant row). MD_ENOENT when it has no row. As after a redaction, the
 * engine makes sure the bytes leave its files after the commit. */
static inline enum md_err md_txn_erase(struct md_txn *t, const char *tenant, struct md_erased *out)
{
    return t->store->ops->erase(t, tenant, out);
}
/* The tenant's entries after path `after` (byte order: a directory before
 * what is below it; "" for the first), with the files' content, in path
 * order: at most `max_rows`, and no more once the contents sent reach
 * `max_bytes` (at least one entry, however large). *more: entries are left
 * after the last one given (scan again after it). For a snapshot
 * (md_store_snapshot_begin), so that pages agree; a tenant without data
 * has no entries. */
static inline enum md_err md_txn_scan(struct md_txn *t, const char *tenant, const char *after,
                                      size_t after_len, size_t max_rows, int64_t max_bytes,
                                      md_scan_cb cb, void *ctx, int *more)
{
    return t->store->ops->scan(t, tenant, after, after_len, max_rows, max_bytes, cb, ctx, more);
}
/* The tenant's versions that hold content (the file existed before the
 * write and the version is not redacted) numbered above `after` (0: from
 * the first), in version order, with their content: `version`, `path`,
 * `size` and `content` of struct md_version are set, `existed` is 1, the
 * rest zero. At most `max_rows`, and no more once the contents given reach
 * `max_bytes` (at least one version, however large); *more: versions are
 * left after the last one given. For a snapshot (md_store_snapshot_begin),
 * so that pages agree. */
static inline enum md_err md_txn_versions_scan(struct md_txn *t, const char *tenant, int64_t after,
                                               size_t max_rows, int64_t max_bytes, md_version_cb cb,
                                               void *ctx, int *more)
{
    return t->store->ops->versions_scan(t, tenant, after, max_rows, max_bytes, cb, ctx, more);
}

#endif
