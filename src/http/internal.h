/*
 * internal.h — what the files of the HTTP front share (src/http/). Not a
 * public interface: see md_http.h.
 *
 * The request's path through the folder:
 *   daemon.c    the libmicrohttpd daemons, connections and their limits
 *   request.c   one request: its context (struct req), headers, body; the
 *               refusals before routing (framing, body limits, overload)
 *   routes.c    the route table (md_routes.def): matching, methods,
 *               authentication (auth.c), then the row's handler
 *   handlers    memory.c (POST /memory), mcp.c and mcp_tools.c (/mcp),
 *               history.c, changes.c, search.c (the /v1 API), tenants.c
 *               and export.c (tenant administration), health.c, metrics.c
 *   run.c       a parsed command run for a request: views now (or by the
 *               store, asynchronously), writes by the writer
 *   reply.c     every response: the envelope from the route's row, the
 *               status from the error's row (md_errors.def), queued in one
 *               place, counted in the metrics there
 * Arrows only run down this list (a handler never calls request.c or
 * routes.c; reply.c calls no handler).
 *
 * A request has one context (struct req), allocated on libmicrohttpd's
 * first call and freed in the completion callback. A handler answers
 * through reply.c, or suspends the connection (state ST_WAITING); once it
 * is resumed (ST_READY), routes.c answers it (md_http_resumed).
 */
#ifndef MD_HTTP_INTERNAL_H
#define MD_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/md_apikey.h"
#include "base/md_refusals.h"
#include "base/md_tenant.h"
#include "cmd/md_cmd.h"
#include "cmd/md_sensitive.h"
#include "cmd/md_writer.h"
#include "http/md_http.h"
#include "store/md_store.h"
#include "store/md_store_admin.h"

/* Bounds of every response text: results are bounded by the limits, but
 * an error text repeating a long path or a list of lines can be large. */
#define OUT_LIMIT ((size_t)256 << 20)

/* ---- the route table (routes.c, from md_routes.def) ---- */

enum route_id {
#define MD_ROUTE(id, method, path, handler, body, access, envelope, label) R_##id,
#include "http/md_routes.def"
    R_COUNT
};

/* The `command` label values of the request metrics: the memory tool's
 * commands (their kinds), then md_routes.def's MD_LABEL rows. */
enum metric_label {
    L_TOOL_COMMANDS = MD_CMD_TOOL_COUNT - 1,
#define MD_LABEL(id, name) L_##id,
#include "http/md_routes.def"
    L_COUNT
};

enum route_body { BODY_NONE, BODY_JSON, BODY_SPOOL };
enum route_access { ACCESS_PUBLIC, ACCESS_READ, ACCESS_WRITE, ACCESS_COMMAND, ACCESS_ADMIN };
enum route_envelope { ENVELOPE_TOOL, ENVELOPE_RPC, ENVELOPE_JSON, ENVELOPE_PLAIN };

struct req;
typedef enum MHD_Result (*route_handler)(struct req *r);

struct route {
    enum route_id id;
    const char *method;
    const char *path; /* a pattern: {name} one segment, a final {*} the rest */
    route_handler handler;
    enum route_body body;
    enum route_access access;
    enum route_envelope envelope;
    enum metric_label label;
};

/* The row of `url` and `method` (*method_ok 1); when the path is served
 * by other methods only, its first row (*method_ok 0); NULL when no row
 * has the path (`metrics_here`: GET /metrics is on this port). */
const struct route *md_http_route_of(const char *url, const char *method, int metrics_here,
                                     int *method_ok);

/* Route r (the whole request received) to its handler, once it passed
 * the method check and authentication. */
enum MHD_Result md_http_route(struct req *r);

/* A resumed request (ST_READY): its answer. */
enum MHD_Result md_http_resumed(struct req *r);

/* The name of metric label `l` ("view", ..., "not_found"). */
const char *md_http_label_name(enum metric_label l);

/* ---- the server and the request ---- */

struct waiter;

struct md_http {
    const struct md_http_config *cfg;
    const struct md_limits *limits;
    struct md_store *store;
    struct md_writer *writer;
    struct MHD_Daemon *d;
    unsigned port;
    atomic_int stopping;
    atomic_uint in_flight;
    struct md_connlimit *conns; /* open connections per client address */
    atomic_size_t body_bytes;   /* request body bytes held, all requests */
    atomic_llong refused_at;    /* last connection refusal logged, seconds */
    /* The 404 text of the public port (md_http_not_found). */
    char not_found[256];
    /* GET /metrics (metrics.c): its own daemon (--metrics-listen), and the
     * database's size as last read, and when (microseconds). */
    struct MHD_Daemon *metrics_d;
    unsigned metrics_port;
    atomic_llong db_size;
    atomic_ullong db_size_at;
    /* Requests of the change feed waiting for a write (changes.c). */
    pthread_mutex_t wait_mu;
    pthread_cond_t wait_cv;
    struct waiter *waiters;
    pthread_t wait_thread;
    int wait_started, wait_stop;
    /* --auth keys (auth.c): failed attempts per client address. */
    struct md_authfail *authfail;
    /* The MCP endpoint's sessions (mcp.c, md_mcp_session.h). */
    struct md_mcp_sessions *mcp;
};

enum state {
    ST_NEW,       /* headers seen, body may follow */
    ST_WAITING,   /* suspended: the writer has the job, or a change is awaited */
    ST_READY,     /* resumed: answer now */
    ST_RESPONDED, /* a response is queued */
};

/* One header memoryd reads: how often it came and its first value, without
 * the spaces and tabs around it (RFC 9110 5.5: they are not part of it). */
struct header_seen {
    unsigned count;
    const char *value; /* into libmicrohttpd's copy, valid for the request */
    size_t len;        /* of the trimmed value */
    int padded;        /* the value as sent had whitespace around it */
};

/* The headers memoryd reads, gathered in one pass over the request's. */
struct headers {
    const char *tenant_name; /* --tenant-header */
    size_t tenant_name_len;
    struct header_seen content_length, transfer_encoding, accept, tenant;
    struct header_seen if_match, if_none_match, idempotency_key, actor;
    struct header_seen authorization;                    /* --auth keys (auth.c); never logged */
    struct header_seen mcp_session, mcp_version, origin; /* /mcp (mcp.c) */
};

struct req {
    struct md_http *h;
    struct MHD_Connection *conn;
    uint64_t t0;
    const struct route *route; /* NULL: no route (404) */
    int method_ok;             /* the route takes the request's method (else 405) */
    char allow[64];            /* a 405's Allow: the path's methods (routes.c) */
    enum metric_label label;   /* of its metrics (reply.c) */
    int metrics_port;          /* on the --metrics-listen daemon */
    const char *method;
    const char *url;
    struct md_buf body;
    int too_big;
    int want_text;
    struct headers headers; /* read once, when the request's headers are in */
    char tenant[MD_TENANT_MAX + 1];
    char actor[129];    /* X-Memory-Actor, when valid */
    char idem_key[256]; /* the Idempotency-Key r->job.idem_key points to, when valid */
    struct md_cmd cmd;
    /* --sensitive redact: the command's text with its secrets replaced
     * (cmd's text points here), how many, the first (for the answer). */
    struct md_buf redacted;
    size_t redactions;
    struct md_sensitive_hit redacted_first;
    struct md_buf out;
    enum md_err err;
    struct md_job job;
    /* A view fetched asynchronously (md_store_view_async): the store's txn
     * holding it, or the error, until the resumed request runs it. */
    struct md_view_job view;
    struct md_txn *view_txn;
    enum md_err view_err;
    int view_fetched;
    _Atomic int state;
    unsigned status;
    size_t bytes_out;
    size_t received;          /* body bytes seen, kept or not */
    size_t reserved;          /* body bytes counted in h->body_bytes */
    int busy;                 /* bodies in memory over --max-body-memory: 503 */
    struct md_txn_stats cost; /* what the command cost in the store */
    int late;                 /* arrived after shutdown began: refused with 503 */
    int bad_framing;          /* ambiguous framing: 400 before the body, then close */
    int over_cap;             /* its connection is over --max-connections-per-ip: 503 */
    /* The change feed (changes.c): what is awaited, until when. */
    int64_t wait_after;
    uint64_t wait_until_us;
    /* --auth keys: the request's key (its id, never the key) and scope
     * (enum md_scope); Retry-After of a 429. */
    char key_id[MD_APIKEY_ID_LEN + 1];
    int key_scope;
    /* The subtree the key sees (docs/behaviour.md 15.3), canonical; "": the
     * whole tenant (and without --auth keys). r->cmd.root points to it. */
    char key_path[MD_KEY_PATH_MAX + 1];
    unsigned retry_after;
    /* An import's body (POST /v1/tenants/{t}/import): kept in an unlinked
     * temporary file, `spool_fd` (-1 until its first bytes; closed when
     * the request ends). */
    int spool_fd;
    /* /mcp (mcp.c): the JSON-RPC request's id as JSON text (owned; NULL:
     * none yet) and its method when it is one memoryd knows (static; for
     * the log). */
    char *mcp_id;
    const char *mcp_method;
    /* tools/call's params._meta["memoryd/idempotency-key"] while the tool
     * runs (borrowed from the parsed message; NULL: none). */
    const struct json_t *mcp_idem;
};

/* body.c: count the request's body as `total` bytes against
 * --max-body-memory (a body announced by Content-Length is counted whole
 * before it is read, so a request is admitted or refused at once; a
 * chunked one as it grows): 0 when it does not fit (nothing more counted
 * then). md_http_body_drop frees the body and gives its bytes back. */
int md_http_body_reserve(struct req *r, size_t total);
void md_http_body_drop(struct req *r);

/* request.c: libmicrohttpd's callbacks of the public port (daemon.c). */
enum MHD_Result md_http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **req_cls);
void md_http_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                          enum MHD_RequestTerminationCode toe);

/* ---- reply.c: every response leaves through here ---- */

/* Queue `resp` (the reference is given up) with `status`, the Content-Type
 * `type`, the headers of the status (Retry-After, WWW-Authenticate),
 * Connection: close where the connection goes, and `extra` (name/value
 * pairs, NULL-terminated; may be NULL); `len` bytes are counted as sent.
 * The request is counted in the metrics now. The one caller of
 * MHD_queue_response. */
enum MHD_Result md_reply_queue(struct req *r, unsigned status, struct MHD_Response *resp,
                               const char *type, size_t len, const char *const *extra);
/* A body taken from `b` (its data: md_buf_take). */
enum MHD_Result md_reply_body(struct req *r, unsigned status, const char *type, struct md_buf *b,
                              const char *const *extra);
/* A JSON body taken from `json` (200 and the like). */
enum MHD_Result md_reply_json(struct req *r, unsigned status, struct md_buf *json);
/* No body (202, 204). */
enum MHD_Result md_reply_empty(struct req *r, unsigned status);
/* {"error": text} with the status of `err` (a leading "Error: " left out:
 * the /v1 API speaks to programs, not to the model). */
enum MHD_Result md_reply_error(struct req *r, enum md_err err, const char *text, size_t len);
/* The same from a format: `md_reply_errorf(r, MD_R_...)`. */
enum MHD_Result md_reply_errorf(struct req *r, enum md_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A refusal in the route's envelope: a tool_result (TOOL), a JSON-RPC
 * server error (RPC), {"error": ...} (the rest), with the status of
 * `err`. `md_reply_refuse(r, MD_R_...)`. */
enum MHD_Result md_reply_refuse(struct req *r, enum md_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A JSON-RPC error object (the request's id) with the status of `err`:
 * `md_reply_rpc_error(r, MD_RPC_...)`. */
enum MHD_Result md_reply_rpc_error(struct req *r, enum md_err err, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A JSON-RPC result: `result` (JSON text) for the request's id, with
 * `extra` headers. */
enum MHD_Result md_reply_rpc_result(struct req *r, const char *result, size_t len,
                                    const char *const *extra);
/* The answer of a command (r->out, r->err, r->job: a view's, or the
 * writer's) in the route's envelope: a tool_result (POST /memory), a tool
 * call's result (/mcp), the JSON document the command wrote or
 * {"error": ...} (the /v1 API). */
enum MHD_Result md_reply_result(struct req *r);

/* ---- tenant.c ---- */

/* The request's tenant, decided once (md_tenant_resolve.h) into
 * r->tenant: 0, or -1 with the refusal answered in *ret. */
int md_http_tenant(struct req *r, enum MHD_Result *ret);

/* Whether r->tenant may not be read now: an import into it commits in
 * steps (md_writer.h), which are not shown until its end. */
int md_http_unreadable(struct req *r);

/* 0 when r->tenant may be read now; else -1 with 503 (MD_R_TENANT_IMPORTING)
 * answered in *ret. */
int md_http_tenant_readable(struct req *r, enum MHD_Result *ret);

/* The key of params._meta that carries a tools/call's Idempotency-Key. */
#define MD_MCP_IDEMPOTENCY_META "memoryd/idempotency-key"

/* ---- run.c: running a parsed command ---- */

/* Read the write headers of a parsed command (If-Match, If-None-Match,
 * Idempotency-Key with the request's fingerprint, X-Memory-Actor) into
 * r->cmd and r->job; MD_OK, or MD_EINVAL with the text in `out`. Each may
 * come once. A view takes none of them (they are ignored). */
enum md_err md_http_write_headers(struct req *r, const char *body, size_t body_len,
                                  struct md_buf *out);
/* The Idempotency-Key of a write, `key` (len bytes; validated, copied into
 * r->idem_key) for the request whose body is `body`: r->job.idem_key and
 * its fingerprint set; MD_OK, or `invalid_err` with the text `invalid` (an
 * MD_R_... refusal gives both) in `out`. */
enum md_err md_http_idempotency(struct req *r, const char *key, size_t len, const char *body,
                                size_t body_len, struct md_buf *out, enum md_err invalid_err,
                                const char *invalid);
/* Queue r->cmd (parsed, r->tenant decided) for the writer; the connection
 * is resumed with the answer in r->out, r->err, r->job.res. */
enum MHD_Result md_http_submit(struct req *r);
/* Run the parsed r->cmd (r->tenant decided): `pe` is md_cmd_parse's
 * result and `parse_msg` its message (freed here). A view runs now and 0 is
 * returned with the answer in r->out and r->err (a refusal too: a parse
 * error, a read-only key's write, a storage failure); a write goes to the
 * writer, and on a store that fetches views asynchronously a view to the
 * store, and 1 is returned: the connection is suspended and answered once
 * it is resumed. */
int md_http_cmd_run(struct req *r, enum md_err pe, struct md_buf *parse_msg);
/* A resumed request whose view was fetched (r->view_fetched): run it,
 * leaving the answer in r->out and r->err as md_http_cmd_run would have. */
void md_http_view_resumed(struct req *r);

/* ---- query.c: query parameters ---- */

/* A query parameter, or NULL. */
const char *md_http_arg(struct req *r, const char *name);
/* An optional integer query parameter in [lo, hi] (default `def`): 0, or
 * -1 with the 400 answered in *ret. */
int md_http_int_arg(struct req *r, const char *name, int64_t lo, int64_t hi, int64_t def,
                    int64_t *out, enum MHD_Result *ret);
/* A storage failure answered as {"error": ...} with its class's status. */
enum MHD_Result md_http_storage_error(struct req *r, enum md_err e);

/* ---- auth.c: --auth keys ---- */

/* With --auth keys, the count of failed attempts (0, or -1 with the
 * reason); md_http_auth_stop frees it. */
int md_http_auth_start(struct md_http *h, char *why, size_t why_len);
void md_http_auth_stop(struct md_http *h);
/* Before a request of a route that is not PUBLIC runs: 0 when it may go on
 * (with --auth keys: r->tenant, r->key_id and r->key_scope set from its
 * key), or -1 with the refusal answered (401, 403, 429, 503). */
int md_http_authenticate(struct req *r, enum MHD_Result *ret);
/* The subtree the request's key sees (docs/behaviour.md 15.3), or NULL:
 * the whole tenant. */
static inline const char *md_http_key_root(const struct req *r)
{
    return r->key_path[0] ? r->key_path : NULL;
}

/* With --auth keys, a key of the read scope (only views). */
#define md_http_auth_read_only(r) ((r)->h->cfg->auth_keys && (r)->key_scope == MD_SCOPE_READ)

/* ---- the handlers (md_routes.def) ---- */

enum MHD_Result md_http_memory(struct req *r);         /* memory.c */
enum MHD_Result md_http_mcp(struct req *r);            /* mcp.c */
enum MHD_Result md_http_health(struct req *r);         /* health.c */
enum MHD_Result md_http_metrics(struct req *r);        /* metrics.c */
enum MHD_Result md_http_history(struct req *r);        /* history.c */
enum MHD_Result md_http_version(struct req *r);        /* history.c */
enum MHD_Result md_http_restore(struct req *r);        /* history.c */
enum MHD_Result md_http_redact(struct req *r);         /* history.c */
enum MHD_Result md_http_clear(struct req *r);          /* history.c */
enum MHD_Result md_http_changes(struct req *r);        /* changes.c */
enum MHD_Result md_http_search(struct req *r);         /* search.c */
enum MHD_Result md_http_expiring(struct req *r);       /* expiring.c */
enum MHD_Result md_http_tenants_list(struct req *r);   /* tenants.c */
enum MHD_Result md_http_tenant_get(struct req *r);     /* tenants.c */
enum MHD_Result md_http_tenant_erase(struct req *r);   /* tenants.c */
enum MHD_Result md_http_tenant_limits(struct req *r);  /* tenants.c */
enum MHD_Result md_http_tenant_export(struct req *r);  /* tenants.c, export.c */
enum MHD_Result md_http_tenant_secrets(struct req *r); /* tenants.c, md_scan.h */
enum MHD_Result md_http_tenant_import(struct req *r);  /* tenants.c */
enum MHD_Result md_http_not_in_family(struct req *r);  /* routes.c */

/* export.c: the tar stream of r->tenant (the caller is allowed). */
enum MHD_Result md_http_export(struct req *r);

/* mcp.c: the MCP sessions (0, or -1 with the reason). */
int md_http_mcp_start(struct md_http *h, char *why, size_t why_len);
void md_http_mcp_stop(struct md_http *h);

/* mcp_tools.c: the MCP tools, one entry each. `call` gets the request
 * (r->tenant decided) and the call's arguments (a JSON object, borrowed for
 * the call) and either answers at once (r->out, r->err set, then `return
 * md_reply_result(r)`) or hands the work to the writer (md_http_cmd_run)
 * and returns MHD_YES: the answer is made when the connection is resumed. */
struct json_t;
struct md_mcp_tool {
    const char *name;
    const char *title;
    const char *description;
    /* The JSON Schema of its input, appended to `out`. */
    enum md_err (*input_schema)(struct md_buf *out);
    int read_only; /* annotations.readOnlyHint */
    enum MHD_Result (*call)(struct req *r, struct json_t *args);
};
extern const struct md_mcp_tool md_mcp_tools[];
extern const size_t md_mcp_tool_count;

/* changes.c: the change feed's waiters. The writer's commit hook wakes
 * those of `tenants`; the store's watcher those of a tenant whose change
 * was committed elsewhere (NULL: any). */
void md_http_changes_committed(void *ctx, const char *const *tenants, size_t n);
void md_http_changes_heard(void *ctx, const char *tenant);
int md_http_waiters_start(struct md_http *h);
void md_http_waiters_wake_all(struct md_http *h);
void md_http_waiters_stop(struct md_http *h);

/* metrics.c: the listener of its own (--metrics-listen): 0, or -1 with the
 * reason in `why`; stopped by md_http_metrics_stop (either is a no-op
 * without it). */
int md_http_metrics_start(struct md_http *h, char *why, size_t why_len);
void md_http_metrics_stop(struct md_http *h);

/* mhd_log.c: libmicrohttpd's messages as log lines (the public port's
 * count the connections it closes at --max-connections). */
void md_http_mhd_log(void *cls, const char *fmt, va_list ap);
void md_http_mhd_log_public(void *cls, const char *fmt, va_list ap);

/* request.c: the socket context daemon.c gives a connection counted per
 * address, within its limit or over it. */
void *md_http_conn_mark(int over_cap);

#endif
