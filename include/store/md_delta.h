/*
 * md_delta.h — versions stored as reverse deltas (docs/architecture.md,
 * "History"): an older text kept as the change that turns its successor (the
 * text that replaced it) back into it, so that an edit of one line of a
 * large file keeps about that line, not a copy of the file.
 *
 * A delta is a splice: the successor's first `head` bytes, then `mid` (the
 * bytes the edit replaced), then the successor's last `tail` bytes. Encoded
 * as two unsigned LEB128 numbers (head, tail), then `mid`. A splice is what
 * every command of the memory tool makes (str_replace and insert change one
 * place; a whole text replaced gives a delta as long as the old text), and
 * finding it costs two memcmp-like passes, no search and no library. A
 * one-line edit of a 10.5 KiB note keeps 241 bytes of history with it
 * (bench/storage.mjs); zstd's prefix mode, which would also shrink whole
 * replacements, is not measured against it yet.
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

/* The delta that turns `succ` back into `old`, appended to `out`. At most
 * old_len + 20 bytes. */
enum md_err md_delta_make(const char *old, size_t old_len, const char *succ, size_t succ_len,
                          struct md_buf *out);

/* The delta's size for these texts, without making it (what
 * md_delta_make would append). */
size_t md_delta_size(const char *old, size_t old_len, const char *succ, size_t succ_len);

/* `base` (the successor) turned back by `delta`: the older text, appended to
 * `out` (which must not hold `base` or `delta`). */
enum md_err md_delta_apply(const char *base, size_t base_len, const char *delta, size_t delta_len,
                           struct md_buf *out);

/* How many deltas in a row a version's text may be rebuilt through (a
 * version is kept whole when it would be the next): reading any kept
 * version applies at most this many. */
#define MD_DELTA_RUN_MAX 32

#endif
