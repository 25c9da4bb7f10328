/* search.c — full-text search of a tenant's files (see md_search.h). */
#include "cmd/md_search.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_json.h"
#include "base/md_refusals.h"
#include "base/md_text.h"
#include "base/md_utf8.h"

static enum md_err refuse(struct md_buf *why, enum md_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A refusal (md_refusals.h) in `why`, alone; returns its class, whether
 * the text fitted or not. */
static enum md_err refuse(struct md_buf *why, enum md_err err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    md_buf_reset(why);
    md_buf_vprintf(why, fmt, ap);
    va_end(ap);
    return err;
}

enum md_err md_search_terms_parse(const char *q, const char *terms[MD_SEARCH_TERMS_MAX],
                                  size_t lens[MD_SEARCH_TERMS_MAX], size_t *n, struct md_buf *why)
{
    *n = 0;
    size_t len = q ? strlen(q) : 0;
    if (len > MD_SEARCH_Q_MAX)
        return refuse(why, MD_R_SEARCH_Q_LONG);
    if (!md_utf8_valid(q ? q : "", len))
        return refuse(why, MD_R_SEARCH_Q_UTF8);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)q[i] < 0x20 || q[i] == 0x7f)
            return refuse(why, MD_R_SEARCH_Q_CONTROL);
    size_t i = 0;
    while (i < len) {
        if (q[i] == ' ') {
            i++;
            continue;
        }
        const char *start = q + i;
        size_t tl;
        if (q[i] == '"') {
            const char *close = memchr(q + i + 1, '"', len - i - 1);
            if (!close)
                return refuse(why, MD_R_SEARCH_Q_QUOTE);
            start = q + i + 1;
            tl = (size_t)(close - start);
            i = (size_t)(close - q) + 1;
        } else {
            size_t j = i;
            while (j < len && q[j] != ' ' && q[j] != '"')
                j++;
            tl = j - i;
            i = j;
        }
        if (tl == 0)
            continue; /* "" */
        if (*n == MD_SEARCH_TERMS_MAX)
            return refuse(why, MD_R_SEARCH_Q_TERMS);
        terms[*n] = start;
        lens[*n] = tl;
        (*n)++;
    }
    if (*n == 0)
        return refuse(why, MD_R_SEARCH_Q_EMPTY);
    return MD_OK;
}

/* ---- the cursor: "{offset}-{16 hex digits of a hash of q and the path}" ---- */

static uint64_t query_hash(const char *q, const char *dir, size_t dir_len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const char *p = q; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;
    for (size_t i = 0; i < dir_len; i++)
        h = (h ^ (unsigned char)dir[i]) * 1099511628211ULL;
    return h;
}

static int cursor_parse(const char *c, uint64_t hash, size_t *offset)
{
    char *end = NULL;
    errno = 0;
    unsigned long long off = (*c >= '1' && *c <= '9') ? strtoull(c, &end, 10) : 0;
    if (off == 0 || off > 1000000000ULL || errno || !end || *end != '-')
        return -1;
    char want[17];
    snprintf(want, sizeof want, "%016llx", (unsigned long long)hash);
    if (strcmp(end + 1, want) != 0)
        return -1;
    *offset = (size_t)off;
    return 0;
}

/* ---- hits: matching lines and their snippets ---- */

struct collect {
    struct md_search_result *r;
    const char *const *terms;
    const size_t *lens;
    size_t nterms, limit;
    int more;
    enum md_err err;
};

/* The first match of any term in line[0..n), or -1. */
static long first_match(const struct collect *c, const char *line, size_t n)
{
    long best = -1;
    for (size_t k = 0; k < c->nterms; k++) {
        long at = md_text_find_word_ci(line, n, 0, c->terms[k], c->lens[k]);
        if (at >= 0 && (best < 0 || at < best))
            best = at;
    }
    return best;
}

/* The snippet of a matching line: all of it, or MD_SEARCH_SNIPPET bytes
 * starting a quarter of that before the match, "..." where cut. */
static enum md_err snippet(struct md_search_line *sl, const char *line, size_t n, size_t at)
{
    size_t from = 0, to = n;
    if (n > MD_SEARCH_SNIPPET) {
        from = at > MD_SEARCH_SNIPPET / 4 ? at - MD_SEARCH_SNIPPET / 4 : 0;
        while (from > 0 && ((unsigned char)line[from] & 0xC0) == 0x80)
            from--;
        size_t room = n - from < MD_SEARCH_SNIPPET ? n - from : MD_SEARCH_SNIPPET;
        to = from + md_utf8_cut(line + from, room);
    }
    size_t len = (to - from) + (from > 0 ? 3 : 0) + (to < n ? 3 : 0);
    char *s = malloc(len + 1);
    if (!s)
        return MD_ENOMEM;
    size_t k = 0;
    if (from > 0) {
        memcpy(s, "...", 3);
        k = 3;
    }
    memcpy(s + k, line + from, to - from);
    k += to - from;
    if (to < n) {
        memcpy(s + k, "...", 3);
        k += 3;
    }
    s[k] = '\0';
    sl->text = s;
    sl->len = k;
    return MD_OK;
}

static int collect_hit(void *ctx, const char *path, size_t path_len, const char *content,
                       size_t content_len)
{
    struct collect *c = ctx;
    if (c->r->n == c->limit) {
        c->more = 1;
        return 1;
    }
    struct md_search_hit *h = &c->r->hits[c->r->n];
    memset(h, 0, sizeof *h);
    h->path = malloc(path_len + 1);
    if (!h->path) {
        c->err = MD_ENOMEM;
        return 1;
    }
    memcpy(h->path, path, path_len);
    h->path[path_len] = '\0';
    h->path_len = path_len;
    c->r->n++;
    size_t off = 0;
    for (int64_t line = 1; off <= content_len; line++) {
        const char *nl = memchr(content + off, '\n', content_len - off);
        size_t n = nl ? (size_t)(nl - content) - off : content_len - off;
        long at = first_match(c, content + off, n);
        if (at >= 0) {
            h->matching_lines++;
            if (h->nlines < MD_SEARCH_LINES) {
                struct md_search_line *sl = &h->lines[h->nlines];
                sl->line = line;
                c->err = snippet(sl, content + off, n, (size_t)at);
                if (c->err)
                    return 1;
                h->nlines++;
            }
        }
        if (!nl)
            break;
        off += n + 1;
    }
    return 0;
}

enum md_err md_search(struct md_store *store, const struct md_path_limits *lim,
                      const struct md_search_req *req, struct md_search_result *out,
                      struct md_buf *why)
{
    memset(out, 0, sizeof *out);
    const char *terms[MD_SEARCH_TERMS_MAX];
    size_t lens[MD_SEARCH_TERMS_MAX], nterms;
    enum md_err e = md_search_terms_parse(req->q, terms, lens, &nterms, why);
    if (e)
        return e;
    int64_t limit = req->limit ? req->limit : MD_SEARCH_LIMIT_DEFAULT;
    if (limit < 1 || limit > MD_SEARCH_LIMIT_MAX)
        return refuse(why, MD_R_PARAM_INT, "limit", 1LL, (long long)MD_SEARCH_LIMIT_MAX);
    const char *raw = req->path ? req->path : "/memories";
    size_t rawn = strlen(raw);
    out->q = strdup(req->q);
    out->dir = malloc(rawn + 1);
    if (!out->q || !out->dir)
        return MD_ENOMEM;
    enum md_path_status ps = md_path_canon(raw, rawn, lim, out->dir, &out->dir_len);
    if (ps != MD_PATH_OK) {
        md_buf_reset(why);
        md_path_errmsg(why, ps, raw, rawn, lim);
        return MD_EINVAL;
    }
    uint64_t hash = query_hash(req->q, out->dir, out->dir_len);
    if (req->cursor && cursor_parse(req->cursor, hash, &out->first))
        return refuse(why, MD_R_SEARCH_CURSOR);
    out->hits = calloc((size_t)limit, sizeof *out->hits);
    if (!out->hits)
        return MD_ENOMEM;
    struct md_search_terms q = {terms,        lens,       nterms,           out->dir,
                                out->dir_len, out->first, (size_t)limit + 1};
    switch (md_path_within(out->dir, out->dir_len, req->root, req->root_len)) {
    case MD_OUTSIDE_SUBTREE:
        return MD_OK; /* as a directory without files */
    case MD_ABOVE_SUBTREE:
        q.dir = req->root;
        q.dir_len = req->root_len;
        break;
    case MD_IN_SUBTREE:
        break;
    }
    struct collect c = {out, terms, lens, nterms, (size_t)limit, 0, MD_OK};
    struct md_txn *t = NULL;
    e = md_store_read_begin(store, &t);
    if (!e)
        e = md_txn_search(t, req->tenant, &q, collect_hit, &c);
    if (t)
        md_txn_end(t);
    if (e == MD_ENOENT)
        return refuse(why, MD_R_SEARCH_OFF);
    if (e == MD_EBUSY && md_store_building(store))
        return refuse(why, MD_R_SEARCH_BUILDING);
    if (!e)
        e = c.err;
    if (!e && c.more) {
        out->next_cursor = malloc(48);
        if (!out->next_cursor)
            return MD_ENOMEM;
        snprintf(out->next_cursor, 48, "%zu-%016llx", out->first + out->n,
                 (unsigned long long)hash);
    }
    return e;
}

void md_search_result_free(struct md_search_result *r)
{
    for (size_t i = 0; r->hits && i < r->n; i++) {
        free(r->hits[i].path);
        for (size_t k = 0; k < r->hits[i].nlines; k++)
            free(r->hits[i].lines[k].text);
    }
    free(r->hits);
    free(r->q);
    free(r->dir);
    free(r->next_cursor);
    memset(r, 0, sizeof *r);
}

/* ---- rendering ---- */

enum md_err md_search_json(const struct md_search_result *r, struct md_buf *out)
{
    enum md_err e = md_buf_puts(out, "{\"query\":");
    if (!e)
        e = md_json_put_string(out, r->q, strlen(r->q));
    if (!e)
        e = md_buf_puts(out, ",\"path\":");
    if (!e)
        e = md_json_put_string(out, r->dir, r->dir_len);
    if (!e)
        e = md_buf_puts(out, ",\"hits\":[");
    for (size_t i = 0; !e && i < r->n; i++) {
        const struct md_search_hit *h = &r->hits[i];
        e = md_buf_puts(out, i ? ",{\"path\":" : "{\"path\":");
        if (!e)
            e = md_json_put_string(out, h->path, h->path_len);
        if (!e)
            e = md_buf_printf(out, ",\"matching_lines\":%lld,\"lines\":[",
                              (long long)h->matching_lines);
        for (size_t k = 0; !e && k < h->nlines; k++) {
            e = md_buf_printf(out, "%s{\"line\":%lld,\"text\":", k ? "," : "",
                              (long long)h->lines[k].line);
            if (!e)
                e = md_json_put_string(out, h->lines[k].text, h->lines[k].len);
            if (!e)
                e = md_buf_putc(out, '}');
        }
        if (!e)
            e = md_buf_puts(out, "]}");
    }
    if (!e)
        e = md_buf_puts(out, "],\"next_cursor\":");
    if (!e && r->next_cursor)
        e = md_buf_printf(out, "\"%s\"}", r->next_cursor);
    else if (!e)
        e = md_buf_puts(out, "null}");
    return e;
}

enum md_err md_search_text(const struct md_search_result *r, struct md_buf *out)
{
    enum md_err e;
    if (r->n == 0) {
        e = md_buf_printf(out, "No file in %s matches %s%s.\n", r->dir, r->q,
                          r->first ? " beyond the previous pages" : "");
        return e;
    }
    e = md_buf_printf(out, "Files in %s that match %s (best first, %zu to %zu):\n", r->dir, r->q,
                      r->first + 1, r->first + r->n);
    for (size_t i = 0; !e && i < r->n; i++) {
        const struct md_search_hit *h = &r->hits[i];
        e = md_buf_append(out, h->path, h->path_len);
        if (!e)
            e = md_buf_putc(out, '\n');
        for (size_t k = 0; !e && k < h->nlines; k++) {
            e = md_put_lineno(out, h->lines[k].line);
            if (!e)
                e = md_buf_append(out, h->lines[k].text, h->lines[k].len);
            if (!e)
                e = md_buf_putc(out, '\n');
        }
        if (!e && h->matching_lines > (int64_t)h->nlines)
            e = md_buf_printf(out, "       (%lld more matching lines)\n",
                              (long long)(h->matching_lines - (int64_t)h->nlines));
    }
    if (!e && r->next_cursor)
        e = md_buf_printf(out, "More files match: search again with cursor %s\n", r->next_cursor);
    return e;
}
