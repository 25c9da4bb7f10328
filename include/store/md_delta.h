/*
 * md_delta.h — versions stored as reverse deltas (docs/architecture.md,
 * "History"): an older text kept as the change that turns its successor (the
 * text that replaced it) back into it, so that an edit of one line of a
 * large file keeps about that line, not a copy of the file.
 *
 * A delta is a splice: the successor's first `head` bytes, then `mid` (the
 * bytes the edit replaced), then the successor's last `tail` bytes. Encoded
 * as two unsigned LEB128 numbers (head, tail), then `mid`. A splice is what
 * str_replace and insert make (they change one place), and finding it costs
 * two memcmp-like passes. Where the change is not in one place (a whole
 * text written again with small changes throughout), the splice is about
 * as long as the old text: when it is longer than 256 bytes, the old text
 * compressed by zstd (level 1) with the successor as its prefix
 * (ZSTD_CCtx_refPrefix) is kept instead if smaller. A zstd delta is told
 * by the frame's magic number, which no splice begins with (md_delta_make
 * makes sure). Measured by bench/delta_compare.c on notes of prose: a
 * one-line edit keeps 75 bytes as a splice (zstd 59, six times slower to
 * make); five lines changed, 7,038 bytes as a splice and 194 with zstd;
 * every tenth line changed, 9,612 and 191.
 *
 * Ownership: the caller owns every buffer; out-parameters are md_bufs the
 * caller initialised (appended to). Errors: MD_ENOMEM (a buffer limit or
 * allocation), MD_EDB (a delta that does not fit its base: the stored bytes
 * are damaged).
 */
#ifndef MD_DELTA_H
#define MD_DELTA_H

#include <stddef.h>

#include "base/md_buf.h"
#include "base/md_err.h"

/* The delta that turns `succ` back into `old`, appended to `out`: at most
 * old_len + 20 bytes, except for a splice that would begin as a zstd frame
 * does (only possible with text that is not UTF-8), whose zstd delta may
 * take up to ZSTD_compressBound(old_len). */
enum md_err md_delta_make(const char *old, size_t old_len, const char *succ, size_t succ_len,
                          struct md_buf *out);

/* The splice's size for these texts, whatever md_delta_make keeps (for
 * bench/delta_compare.c). */
size_t md_delta_splice_size(const char *old, size_t old_len, const char *succ, size_t succ_len);

/* `base` (the successor) turned back by `delta`: the older text, appended to
 * `out` (which must not hold `base` or `delta`). */
enum md_err md_delta_apply(const char *base, size_t base_len, const char *delta, size_t delta_len,
                           struct md_buf *out);

/* How many deltas in a row a version's text may be rebuilt through (a
 * version is kept whole when it would be the next): reading any kept
 * version applies at most this many. */
#define MD_DELTA_RUN_MAX 32

/* One stored version of a path as the engines read it: its bytes (a delta,
 * or the whole text), borrowed from the caller. */
struct md_delta_link {
    const char *p;
    size_t n;
    int delta;    /* 1: `p` is a delta against the next newer text */
    int has_text; /* 0: an absence or a redacted version: no text */
};

/* The text of links[0], rebuilt into `out` (reset first): `links` oldest
 * first, the version itself, then its successors up to the first one kept
 * whole (the file itself, when the chain reaches it, as a whole link).
 * MD_EDB: the chain does not end in a whole text, leans on a link without
 * text, or is longer than a writer makes (MD_DELTA_RUN_MAX + 1 links). */
enum md_err md_delta_rebuild(const struct md_delta_link *links, size_t n, struct md_buf *out);

/* Stores version `i` of md_delta_convert's rows as `delta`; `delta` NULL:
 * the version is kept whole. */
typedef enum md_err (*md_delta_put_cb)(void *ctx, size_t i, const char *delta, size_t len);

/* A path's versions, all whole, newest first, turned into deltas: rows[i]
 * leans on the text just after it (rows[i - 1]'s; for rows[0], `succ`, the
 * file's text, absent when `succ` is NULL). A row with text becomes a delta
 * when its successor has text and the run of deltas it ends stays under
 * MD_DELTA_RUN_MAX; `put` is told of each row. *head_run: the deltas in a row from
 * the newest (what the path's next write counts on). */
enum md_err md_delta_convert(const struct md_delta_link *rows, size_t n, const char *succ,
                             size_t succ_len, md_delta_put_cb put, void *ctx, int *head_run);

/* `text` is what a version whose SHA-256 is `sha256` (NULL: not known)
 * held: MD_OK, else MD_EDB (logged), MD_ENOMEM. */
enum md_err md_delta_check(const unsigned char *sha256, const char *text, size_t len);

#endif
