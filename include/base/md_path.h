/*
 * md_path.h — the one canonicalisation function for /memories paths.
 *
 * Every path a client sends goes through md_path_canon() before it touches
 * storage. The rules are those of docs/behaviour.md §3:
 *   - valid only if exactly "/memories" or starting with "/memories/";
 *   - runs of '/' collapse, one trailing '/' is dropped;
 *   - refused: '.' and '..' segments, backslash, control characters
 *     (C0, DEL, C1), percent-encoded '.', '/', '\' (%2e %2f %5c, any case),
 *     invalid UTF-8, paths over `max_path` bytes, segments over
 *     `max_segment` bytes.
 *
 * Ownership: the caller provides `out`, at least `len + 1` bytes; the
 * canonical form is never longer than the input.
 */
#ifndef MD_PATH_H
#define MD_PATH_H

#include <stddef.h>

#include "base/md_buf.h"
#include "base/md_utf8.h"

#define MD_ROOT     "/memories"
#define MD_ROOT_LEN 9

enum md_path_status {
    MD_PATH_OK = 0,
    MD_PATH_NOT_UNDER_ROOT, /* not "/memories" nor "/memories/..." */
    MD_PATH_TOO_LONG,       /* over max_path bytes */
    MD_PATH_BAD_UTF8,
    MD_PATH_CONTROL, /* NUL or another control character */
    MD_PATH_BACKSLASH,
    MD_PATH_PERCENT, /* %2e, %2f or %5c in any case */
    MD_PATH_ESCAPES, /* a '..' that climbs above /memories */
    MD_PATH_DOTDOT,  /* a '..' segment that stays inside */
    MD_PATH_DOT,     /* a '.' segment */
    MD_PATH_SEGMENT_TOO_LONG,
};

struct md_path_limits {
    size_t max_path;    /* bytes, as sent */
    size_t max_segment; /* bytes */
};

/* Canonicalise `in` (`len` bytes, may contain NUL). On MD_PATH_OK, `out`
 * holds the NUL-terminated canonical path and *out_len its length. */
enum md_path_status md_path_canon(const char *in, size_t len, const struct md_path_limits *lim,
                                  char *out, size_t *out_len);

/* Append the client-facing error text ("Error: ...") for a refused path,
 * naming the path as sent. */
enum md_err md_path_errmsg(struct md_buf *msg, enum md_path_status st, const char *in, size_t len,
                           const struct md_path_limits *lim);

/* Number of segments below /memories of a canonical path (root = 0). */
int md_path_depth(const char *canon, size_t len);

/* Length of the canonical parent of a canonical, non-root path. */
size_t md_path_parent_len(const char *canon, size_t len);

/* True when canonical `p` lies strictly inside canonical directory `dir`. */
int md_path_is_inside(const char *p, size_t plen, const char *dir, size_t dlen);

/* Where canonical `p` lies from canonical `root`, the subtree a key may see
 * (README "Keys that see one subtree"): in it (`root` itself or below it),
 * a proper ancestor of it (on the way from /memories down to it), or
 * anywhere else. A NULL `root` is /memories: every path is in it. */
enum md_within { MD_IN_SUBTREE = 0, MD_ABOVE_SUBTREE, MD_OUTSIDE_SUBTREE };
enum md_within md_path_within(const char *p, size_t plen, const char *root, size_t rlen);

#endif
