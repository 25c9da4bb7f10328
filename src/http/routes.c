/*
 * routes.c — the route table of the HTTP front, made from md_routes.def
 * (see internal.h): which row a request's path and method select, what
 * the other methods of a path get (405 with its Allow), what an unknown
 * path gets (404 naming the paths there are), then the row's access
 * (auth.c), a late request's refusal, and the row's handler. A resumed
 * request is answered here too.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const struct route routes[R_COUNT] = {
#define MD_ROUTE(id, method, path, handler, body, access, envelope, label)                         \
    [R_##                                                                                          \
        id] = {R_##id,   method, path, handler, BODY_##body, ACCESS_##access, ENVELOPE_##envelope, \
               L_##label},
#include "http/md_routes.def"
};

/* The memory tool's commands (scope TOOL), then the MD_LABEL rows. */
#define TOOL_LABEL_TOOL(kind, name) [MD_CMD_##kind] = (name),
#define TOOL_LABEL_OP(kind, name)
static const char *const label_names[L_COUNT] = {
#define MD_COMMAND(kind, name, scope, writes, handler, fields) TOOL_LABEL_##scope(kind, name)
#include "cmd/md_commands.def"
#define MD_LABEL(id, name) [L_##id] = (name),
#include "http/md_routes.def"
};

/* The memory tool's commands are the first labels, in their kinds' order
 * (reply.c counts a command by its kind). */
_Static_assert(L_TOOL_COMMANDS + 1 == MD_CMD_TOOL_COUNT, "the tool's commands come first");

const char *md_http_label_name(enum metric_label l)
{
    return (unsigned)l < L_COUNT ? label_names[l] : "unknown";
}

/* ---- matching ---- */

/* How `url` matches `pattern`: 0 not, 1 as its path, 2 by a final {*}. A
 * {name} matches one segment, possibly empty. */
static int path_match(const char *pattern, const char *url)
{
    while (*pattern) {
        if (*pattern == '{') {
            if (strncmp(pattern, "{*}", 3) == 0)
                return 2; /* the rest, whatever it is */
            while (*url && *url != '/')
                url++;
            pattern = strchr(pattern, '}') + 1;
            continue;
        }
        if (*pattern++ != *url++)
            return 0;
    }
    return *url == '\0' ? 1 : 0;
}

static int served_here(const struct route *rt, int metrics_here)
{
    return metrics_here || (rt->id != R_METRICS && rt->id != R_METRICS_HEAD);
}

/* How closely any row matches `url` (1 as its path, 2 by a catch-all), or 0. */
static int best_match(const char *url, int metrics_here)
{
    int best = 0;
    for (size_t i = 0; i < R_COUNT; i++) {
        int m = served_here(&routes[i], metrics_here) ? path_match(routes[i].path, url) : 0;
        if (m && (!best || m < best))
            best = m;
    }
    return best;
}

const struct route *md_http_route_of(const char *url, const char *method, int metrics_here,
                                     int *method_ok)
{
    int best = best_match(url, metrics_here);
    const struct route *first = NULL;
    *method_ok = 0;
    for (size_t i = 0; best && i < R_COUNT; i++) {
        const struct route *rt = &routes[i];
        if (!served_here(rt, metrics_here) || path_match(rt->path, url) != best)
            continue;
        if (strcmp(rt->method, method) == 0) {
            *method_ok = 1;
            return rt;
        }
        if (!first)
            first = rt;
    }
    return first;
}

/* The methods of the rows that serve `url` as r->route does: "GET, HEAD". */
static void allow_of(struct req *r)
{
    int metrics_here = r->h->cfg->metrics_listen == NULL;
    int best = best_match(r->url, metrics_here);
    size_t n = 0;
    r->allow[0] = '\0';
    for (size_t i = 0; i < R_COUNT; i++) {
        const struct route *rt = &routes[i];
        if (served_here(rt, metrics_here) && path_match(rt->path, r->url) == best && n < 48)
            n += (size_t)snprintf(r->allow + n, sizeof r->allow - n, "%s%s", n ? ", " : "",
                                  rt->method);
    }
}

/* ---- the lists of paths in the 404 texts ---- */

/* The first row of each path among the rows that pass `pick`, in row
 * order, into `first`; their number. */
static size_t distinct_paths(int (*pick)(const struct route *, const void *), const void *ctx,
                             const struct route *first[R_COUNT])
{
    size_t n = 0;
    for (size_t i = 0; i < R_COUNT; i++) {
        if (!pick(&routes[i], ctx))
            continue;
        size_t k = 0;
        while (k < n && strcmp(first[k]->path, routes[i].path) != 0)
            k++;
        if (k == n)
            first[n++] = &routes[i];
    }
    return n;
}

/* Append to `out` ("A, B or C" when `or_last`, else "A, B, C") the paths
 * of the rows that pass `pick`, each once, in row order; with its first
 * method before it when `methods`. */
static enum md_err paths_of(struct md_buf *out, int (*pick)(const struct route *, const void *),
                            const void *ctx, int methods, int or_last)
{
    const struct route *seen[R_COUNT] = {0};
    size_t n = distinct_paths(pick, ctx, seen);
    enum md_err e = MD_OK;
    for (size_t k = 0; k < n && !e; k++) {
        const char *sep = k == 0 ? "" : or_last && k == n - 1 ? " or " : ", ";
        e = methods ? md_buf_printf(out, "%s%s %s", sep, seen[k]->method, seen[k]->path)
                    : md_buf_printf(out, "%s%s", sep, seen[k]->path);
    }
    return e;
}

/* The rows a client may name: all but the catch-alls, on the public port
 * with or without GET /metrics (ctx points to metrics_here). */
static int listed(const struct route *rt, const void *ctx)
{
    return !strstr(rt->path, "{*}") && served_here(rt, *(const int *)ctx);
}

enum md_err md_http_endpoints(struct md_buf *out)
{
    static const int metrics_here = 1;
    const struct route *seen[R_COUNT] = {0};
    size_t n = distinct_paths(listed, &metrics_here, seen);
    enum md_err e = MD_OK;
    for (size_t k = 0; k < n && !e; k++) {
        /* Its methods, in row order: "GET, HEAD". */
        char methods[48];
        size_t m = 0;
        methods[0] = '\0';
        for (size_t i = 0; i < R_COUNT; i++)
            if (strcmp(routes[i].path, seen[k]->path) == 0 && m < sizeof methods)
                m += (size_t)snprintf(methods + m, sizeof methods - m, "%s%s", m ? ", " : "",
                                      routes[i].method);
        e = md_buf_printf(out, "  %-14s %s\n", methods, seen[k]->path);
    }
    return e;
}

/* The rows of a catch-all's family, but the catch-alls (ctx: the family's
 * prefix, "/v1/tenants/"). */
static int in_family(const struct route *rt, const void *ctx)
{
    const char *prefix = ctx;
    return strncmp(rt->path, prefix, strlen(prefix)) == 0 && !strstr(rt->path, "{*}");
}

enum MHD_Result md_http_not_in_family(struct req *r)
{
    /* The family: the catch-all's path before its {*}. */
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%.*s", (int)(strstr(r->route->path, "{*}") - r->route->path),
             r->route->path);
    struct md_buf paths;
    md_buf_init(&paths, 4096);
    enum MHD_Result ret = paths_of(&paths, in_family, prefix, 0, 1)
                              ? MHD_NO
                              : md_reply_errorf(r, MD_R_NOT_FOUND_FAMILY, paths.data);
    md_buf_free(&paths);
    return ret;
}

static enum MHD_Result not_found(struct req *r)
{
    int metrics_here = r->h->cfg->metrics_listen == NULL;
    struct md_buf paths;
    md_buf_init(&paths, 4096);
    enum MHD_Result ret = paths_of(&paths, listed, &metrics_here, 1, 1)
                              ? MHD_NO
                              : md_reply_errorf(r, MD_R_NOT_FOUND, paths.data);
    md_buf_free(&paths);
    return ret;
}

/* ---- dispatch ---- */

/* A request that came after shutdown began: refused in its envelope. */
static enum MHD_Result refuse_late(struct req *r)
{
    switch (r->route->envelope) {
    case ENVELOPE_TOOL:
        return md_reply_refuse(r, MD_R_SHUTTING_DOWN_TOOL);
    case ENVELOPE_RPC:
        return md_reply_rpc_error(r, MD_RPC_SHUTTING_DOWN);
    default:
        return md_reply_errorf(r, MD_R_SHUTTING_DOWN);
    }
}

enum MHD_Result md_http_route(struct req *r)
{
    if (!r->route)
        return not_found(r);
    if (!r->method_ok) {
        allow_of(r);
        if (r->route->envelope == ENVELOPE_TOOL)
            return md_reply_refuse(r, MD_R_METHOD_TOOL);
        return md_reply_errorf(r, MD_R_METHOD);
    }
    if (r->route->access != ACCESS_PUBLIC) {
        enum MHD_Result ret;
        if (md_http_authenticate(r, &ret) != 0)
            return ret;
        /* A request taken in before shutdown began is completed; only
         * later ones are refused. */
        if (r->late)
            return refuse_late(r);
    }
    return r->route->handler(r);
}

enum MHD_Result md_http_resumed(struct req *r)
{
    /* Suspended for something else than a command (the change feed's long
     * poll): its handler asks again. */
    if (!r->job.done && !r->view_fetched && !r->view.done)
        return r->route->handler(r);
    if (r->view_fetched)
        md_http_view_resumed(r);
    return md_reply_result(r);
}
