/*
 * md_store.h — the storage interface memoryd's commands are written against.
 *
 * A backend (today: SQLite, src/store_sqlite.c) implements struct
 * md_store_ops; command code (src/cmd.c) only calls the md_store_* / md_txn_*
 * wrappers below, so a second backend (e.g. PostgreSQL) plugs in here.
 *
 * Model: every tenant has a tree of entries keyed by canonical path
 * ("/memories", "/memories/a", "/memories/a/b.txt"). Directories are real
 * entries; the root "/memories" entry is created with the tenant. Every
 * directory's `size` is the total bytes of the files below it, kept up to
 * date by the command layer through md_txn_add_size().
 *
 * Transactions: md_store_read_begin() may be called from any thread and
 * gives a snapshot; md_store_write_begin() is for the single writer thread.
 * Writes run inside savepoints so a batch of commands can share one commit.
 *
 * Ownership: a txn is owned by its caller until md_txn_end()/commit/
 * rollback, which release it. Content pointers returned by md_txn_get()
 * are borrowed and valid until the next call on the same txn.
 *
 * Errors: MD_ENOENT (no such entry/tenant), MD_EEXIST (insert over an
 * existing path), MD_EBUSY (database locked), MD_EDB (anything else; the
 * backend has logged the details), MD_ENOMEM.
 */
#ifndef MD_STORE_H
#define MD_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "md_err.h"

enum md_kind { MD_KIND_FILE = 0, MD_KIND_DIR = 1 };

struct md_entry {
    enum md_kind kind;
    int64_t size;        /* file: bytes; directory: bytes of files below */
    const char *content; /* files only, when asked for; borrowed */
    size_t content_len;
};

/* Called once per child in path order; return nonzero to stop early. */
typedef int (*md_list_cb)(void *ctx, const char *path, size_t len, enum md_kind kind, int64_t size);

struct md_store;
struct md_txn;

struct md_store_ops {
    const char *name;
    void (*close)(struct md_store *s);
    enum md_err (*read_begin)(struct md_store *s, struct md_txn **out);
    enum md_err (*write_begin)(struct md_store *s, struct md_txn **out);
    void (*txn_end)(struct md_txn *t); /* read txns */
    enum md_err (*commit)(struct md_txn *t);
    void (*rollback)(struct md_txn *t);
    enum md_err (*savepoint)(struct md_txn *t);
    enum md_err (*release)(struct md_txn *t, int rollback);
    enum md_err (*tenant)(struct md_txn *t, const char *name, int create, int64_t *id);
    enum md_err (*get)(struct md_txn *t, int64_t tenant, const char *path, size_t len,
                       int want_content, struct md_entry *e);
    enum md_err (*list)(struct md_txn *t, int64_t tenant, const char *dir, size_t len,
                        md_list_cb cb, void *ctx);
    enum md_err (*insert)(struct md_txn *t, int64_t tenant, const char *path, size_t len,
                          enum md_kind kind, const char *content, size_t content_len);
    enum md_err (*set_content)(struct md_txn *t, int64_t tenant, const char *path, size_t len,
                               const char *content, size_t content_len);
    enum md_err (*remove_tree)(struct md_txn *t, int64_t tenant, const char *path, size_t len);
    enum md_err (*move_tree)(struct md_txn *t, int64_t tenant, const char *from, size_t flen,
                             const char *to, size_t tlen);
    enum md_err (*add_size)(struct md_txn *t, int64_t tenant, const char *path, size_t len,
                            int64_t delta);
    enum md_err (*ping)(struct md_store *s);
    unsigned long (*statements)(struct md_txn *t);
};

/* Every backend's store and txn structs begin with these. */
struct md_store {
    const struct md_store_ops *ops;
};
struct md_txn {
    struct md_store *store;
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
static inline enum md_err md_store_write_begin(struct md_store *s, struct md_txn **t)
{
    return s->ops->write_begin(s, t);
}
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
static inline enum md_err md_txn_savepoint(struct md_txn *t)
{
    return t->store->ops->savepoint(t);
}
static inline enum md_err md_txn_release(struct md_txn *t, int rollback)
{
    return t->store->ops->release(t, rollback);
}
/* Tenant id by name. create=0: MD_ENOENT when the tenant has no data yet;
 * create=1: creates the tenant and its root entry when missing. */
static inline enum md_err md_txn_tenant(struct md_txn *t, const char *name, int create, int64_t *id)
{
    return t->store->ops->tenant(t, name, create, id);
}
static inline enum md_err md_txn_get(struct md_txn *t, int64_t tenant, const char *path, size_t len,
                                     int want_content, struct md_entry *e)
{
    return t->store->ops->get(t, tenant, path, len, want_content, e);
}
/* Direct children of directory `dir`, in byte order of their paths. */
static inline enum md_err md_txn_list(struct md_txn *t, int64_t tenant, const char *dir, size_t len,
                                      md_list_cb cb, void *ctx)
{
    return t->store->ops->list(t, tenant, dir, len, cb, ctx);
}
static inline enum md_err md_txn_insert(struct md_txn *t, int64_t tenant, const char *path,
                                        size_t len, enum md_kind kind, const char *content,
                                        size_t content_len)
{
    return t->store->ops->insert(t, tenant, path, len, kind, content, content_len);
}
static inline enum md_err md_txn_set_content(struct md_txn *t, int64_t tenant, const char *path,
                                             size_t len, const char *content, size_t content_len)
{
    return t->store->ops->set_content(t, tenant, path, len, content, content_len);
}
/* Delete an entry and everything below it: one statement. */
static inline enum md_err md_txn_remove_tree(struct md_txn *t, int64_t tenant, const char *path,
                                             size_t len)
{
    return t->store->ops->remove_tree(t, tenant, path, len);
}
/* Move an entry and everything below it to a new path: one statement. */
static inline enum md_err md_txn_move_tree(struct md_txn *t, int64_t tenant, const char *from,
                                           size_t flen, const char *to, size_t tlen)
{
    return t->store->ops->move_tree(t, tenant, from, flen, to, tlen);
}
/* SQL statements (or the backend's unit of work) run through `t`'s
 * connection so far: the difference around a command is what it cost. */
static inline unsigned long md_txn_statements(struct md_txn *t)
{
    return t->store->ops->statements(t);
}
/* Add delta to directory `path`'s size. A backend may hold the change until
 * the commit (or until a list, remove_tree or move_tree needs the rows), as
 * SQLite's does to write each directory once per batch; md_txn_get() then
 * reports the size with the change, and a savepoint rolled back drops it. */
static inline enum md_err md_txn_add_size(struct md_txn *t, int64_t tenant, const char *path,
                                          size_t len, int64_t delta)
{
    return t->store->ops->add_size(t, tenant, path, len, delta);
}

/* ---- SQLite backend ---- */

enum md_durability { MD_DURABILITY_FULL = 0, MD_DURABILITY_NORMAL = 1 };

struct md_sqlite_config {
    const char *path;              /* database file */
    enum md_durability durability; /* synchronous=FULL or NORMAL */
    int busy_timeout_ms;           /* wait for locks held by other processes */
};

/* Open (creating and migrating when needed) a SQLite store. On failure
 * returns MD_EDB and writes a reason into `why` (a caller buffer). */
enum md_err md_store_sqlite_open(const struct md_sqlite_config *cfg, struct md_store **out,
                                 char *why, size_t why_len);

/* For tests: EXPLAIN QUERY PLAN every statement of the backend on the
 * database at `path`. Returns 0 when each one finds its rows by a search
 * that uses more than the tenant (no scan of a table or of a tenant's
 * rows), 1 otherwise and -1 on error, with the statement and plan in `why`. */
int md_store_sqlite_check_plans(const char *path, char *why, size_t why_len);

/* Schema version the code expects (number of migrations in sql/). */
int md_store_sqlite_schema_version(void);

/* For tests: PRAGMA synchronous (1 NORMAL, 2 FULL) of each connection that
 * writes the database file of the SQLite store `base`: out[0] the writer's
 * (transactions), out[1] the checkpointer's (WAL checkpoints). Call it only
 * before anything is written through `base`: from then on the checkpointer's
 * connection belongs to its thread. Returns 0, or -1 when `base` is not a
 * SQLite store or a value cannot be read. */
int md_store_sqlite_synchronous(struct md_store *base, int out[2]);

/* Connections remember tenant ids (a tenant row is never changed or deleted
 * by memoryd), and readers keep their read transaction while memoryd has
 * committed nothing. A test that changes the database behind the store's
 * back (deleting tenants, say) calls this, with no command in flight, so
 * that both are renewed. */
void md_store_sqlite_forget_tenants(struct md_store *base);

#endif
