/*
 * md_scan.h — secrets already stored: a tenant's live files and the
 * versions its history keeps, searched with the detectors of --sensitive
 * (md_sensitive.h: the built-in ones, --sensitive-cards and
 * --sensitive-patterns, whatever the mode), for GET
 * /v1/tenants/{t}/secrets (src/http/secrets.c) and memoryd scan
 * (src/app/scan_cli.c). src/cmd/scan.c.
 *
 * A scan goes through the tenant's files in path order (md_txn_scan), then
 * through its versions that hold content in version order
 * (md_txn_versions_scan: a redacted version, and one that records that the
 * file did not exist, hold none), a page at a time, each page on a
 * snapshot (md_store_snapshot_begin); struct md_scan_pos says where the
 * next page begins. Every finding of a text is reported (its kind and its
 * line), never the secret nor any content.
 *
 * Ownership: nothing is kept; the strings of a finding are borrowed until
 * the callback returns. Errors: the store's (md_store.h), MD_ENOMEM.
 */
#ifndef MD_SCAN_H
#define MD_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "base/md_buf.h"
#include "base/md_err.h"
#include "cmd/md_sensitive.h"
#include "store/md_store.h"

/* The bytes of content one page reads at most (at least one text, however
 * large). */
#define MD_SCAN_PAGE_BYTES ((int64_t)16 << 20)

/* One finding: where (the live file: version 0; else the version that
 * holds the text), its kind and its line (1-based). */
struct md_scan_finding {
    const char *path;
    size_t path_len;
    int64_t version;
    const char *kind;
    size_t line;
};
/* Return nonzero to stop the scan (it stops with MD_OK after that text). */
typedef int (*md_scan_found_cb)(void *ctx, const struct md_scan_finding *f);

enum md_scan_phase { MD_SCAN_FILES = 0, MD_SCAN_VERSIONS, MD_SCAN_DONE };

/* Where a tenant's scan stands: zeroed for its beginning. */
struct md_scan_pos {
    enum md_scan_phase phase;
    char *path; /* files: the last path scanned (malloc'd; NULL: none yet) */
    size_t path_len;
    int64_t version; /* versions: the last one scanned (0: none yet) */
};
void md_scan_pos_free(struct md_scan_pos *pos);

/* What was scanned: files, versions, findings. */
struct md_scan_counts {
    int64_t files, versions, findings;
};

/* One page, on `t` (a snapshot): at most `max_items` files and versions,
 * at most MD_SCAN_PAGE_BYTES of content, from `pos` on; each finding to
 * `cb`; `pos` moved on (MD_SCAN_DONE when nothing is left); `n` added to. */
enum md_err md_scan_page(struct md_txn *t, const struct md_sensitive *s, const char *tenant,
                         size_t max_items, struct md_scan_pos *pos, struct md_scan_counts *n,
                         md_scan_found_cb cb, void *ctx);

/* A finding as a JSON object, appended to `out`:
 * {"tenant":T,"path":P,"version":N|null,"kind":K,"line":N} ("tenant" only
 * when `tenant` is not NULL; version null for the live file). */
enum md_err md_scan_finding_json(struct md_buf *out, const char *tenant,
                                 const struct md_scan_finding *f);

#endif
