/*
 * md_dirsizes.h — directory size changes a write transaction has not
 * written yet, for any engine.
 *
 * A batch of creates under one directory would otherwise rewrite each
 * ancestor's row once per command (and, in PostgreSQL, leave a new row
 * version each time). Here the changes add up per directory and the
 * engine writes them once, before the commit, or before any statement that
 * could see or move the rows. An engine reading a directory's size adds the
 * pending change (md_dirsizes_pending).
 *
 * Savepoints: md_dirsizes_mark() snapshots the pending changes and
 * md_dirsizes_restore() puts them back as they were; the statements rolled
 * back may include a flush, which the database undoes with the rest, so the
 * snapshot is exactly what is pending again. Entries are only ever appended
 * within a transaction. When all MD_DIRSIZES_SLOTS are in use,
 * md_dirsizes_add() refuses a change to another directory: the engine
 * writes that one at once.
 *
 * Ownership: md_dirsizes_new() allocates, md_dirsizes_free() frees; paths
 * are copied in. Not thread-safe (one per write connection).
 */
#ifndef MD_DIRSIZES_H
#define MD_DIRSIZES_H

#include <stddef.h>
#include <stdint.h>

#define MD_DIRSIZES_SLOTS 128

struct md_dirsizes;

struct md_dirsizes *md_dirsizes_new(void);
void md_dirsizes_free(struct md_dirsizes *z);

/* Forget everything (a new transaction, a rollback, a commit). */
void md_dirsizes_reset(struct md_dirsizes *z);

/* Add `delta` to the pending change of (tenant, path). 0, or -1 when it
 * cannot be kept (full, or out of memory): write it now. */
int md_dirsizes_add(struct md_dirsizes *z, int64_t tenant, const char *path, size_t len,
                    int64_t delta);

/* The pending change of (tenant, path), 0 when none. */
int64_t md_dirsizes_pending(const struct md_dirsizes *z, int64_t tenant, const char *path,
                            size_t len);

/* Entry i (i < md_dirsizes_count) and its pending change. */
size_t md_dirsizes_count(const struct md_dirsizes *z);
void md_dirsizes_entry(const struct md_dirsizes *z, size_t i, int64_t *tenant, const char **path,
                       size_t *len, int64_t *delta);

/* Mark every pending change written (after a flush). */
void md_dirsizes_written(struct md_dirsizes *z);

/* At a savepoint / at a rollback to it. */
void md_dirsizes_mark(struct md_dirsizes *z);
void md_dirsizes_restore(struct md_dirsizes *z);

#endif
