/*
 * md_search.h — full-text search of a tenant's files (README, "Search";
 * docs/behaviour.md 17). GET /v1/search and the MCP tool memory_search
 * both call md_search() and render its result with md_search_json() or
 * md_search_text().
 *
 * A query is one or more terms separated by spaces; a term in double
 * quotes may hold spaces (a phrase). A file matches when its current text
 * contains every term where a word begins (md_text_find_word_ci), ASCII
 * letters compared without case.
 * Only current files are searched (not history). Hits come best first
 * (md_txn_search in md_store.h says how each engine ranks); each names the
 * file, how many of its lines contain a term and the first
 * MD_SEARCH_LINES of them, numbered as `view` numbers them, each cut to
 * MD_SEARCH_SNIPPET bytes around its first match. Pages are chained by an
 * opaque cursor tied to the query and the path.
 *
 * Ownership: md_search() fills *out, which the caller frees with
 * md_search_result_free() (also after an error; a zeroed result may be
 * freed). Rendering appends to a caller's md_buf.
 *
 * Errors: MD_EINVAL (bad q, path, limit or cursor) and MD_ENOENT (the
 * server runs with --search off), each with the text for the client in
 * `why`; MD_ENOMEM; the storage errors of md_store.h (MD_EBUSY,
 * MD_EUNAVAIL, MD_EDB), `why` left empty.
 */
#ifndef MD_SEARCH_H
#define MD_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "base/md_buf.h"
#include "base/md_err.h"
#include "base/md_path.h"
#include "store/md_search_terms.h"
#include "store/md_store.h"

#define MD_SEARCH_LIMIT_DEFAULT 10  /* hits per page */
#define MD_SEARCH_LIMIT_MAX     100 /* hits per page at most */
#define MD_SEARCH_LINES         3   /* matching lines shown per file */
#define MD_SEARCH_SNIPPET       160 /* bytes of a matching line shown at most */

struct md_search_req {
    const char *tenant;
    const char *q;      /* NUL-terminated, as sent; NULL: missing */
    const char *path;   /* the directory (or file) to search in, as sent; NULL: /memories */
    int64_t limit;      /* 1..MD_SEARCH_LIMIT_MAX; 0: MD_SEARCH_LIMIT_DEFAULT */
    const char *cursor; /* next_cursor of the previous page; NULL: the first page */
    /* The subtree the request's key sees (md_cmd.h `root`); NULL: the
     * whole tenant. A directory above it is searched as the subtree; one
     * outside it has no hits. */
    const char *root;
    size_t root_len;
};

struct md_search_line {
    int64_t line; /* 1-based, as view numbers it */
    char
        *text; /* the line, or MD_SEARCH_SNIPPET bytes of it around the match ("..." marks a cut) */
    size_t len;
};

struct md_search_hit {
    char *path;
    size_t path_len;
    int64_t
        matching_lines; /* lines containing a term (0: the match differs only in non-ASCII case) */
    size_t nlines;      /* of `lines` filled, <= MD_SEARCH_LINES */
    struct md_search_line lines[MD_SEARCH_LINES];
};

struct md_search_result {
    char *q;   /* the query as sent */
    char *dir; /* canonical */
    size_t dir_len;
    size_t first; /* 0-based rank of hits[0] */
    struct md_search_hit *hits;
    size_t n;
    char *next_cursor; /* NULL: no more hits */
};

/* Run a search in a read transaction of `store` (search_off: the store was
 * opened with --search off). */
enum md_err md_search(struct md_store *store, const struct md_path_limits *lim,
                      const struct md_search_req *req, struct md_search_result *out,
                      struct md_buf *why);

void md_search_result_free(struct md_search_result *r);

/* {"query":..,"path":..,"hits":[{"path":..,"matching_lines":n,"lines":[{"line":n,"text":..}]}],
 *  "next_cursor":..|null} */
enum md_err md_search_json(const struct md_search_result *r, struct md_buf *out);

/* The result as text for a model to read (docs/behaviour.md 17.3). */
enum md_err md_search_text(const struct md_search_result *r, struct md_buf *out);

/* Split q into its terms (pointers into q); *n terms. MD_EINVAL with the
 * text in `why` when q is empty, too long, holds a control character or an
 * unmatched quote, or has too many terms. */
enum md_err md_search_terms_parse(const char *q, const char *terms[MD_SEARCH_TERMS_MAX],
                                  size_t lens[MD_SEARCH_TERMS_MAX], size_t *n, struct md_buf *why);

#endif
