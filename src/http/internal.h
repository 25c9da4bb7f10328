/*
 * http_internal.h — what the files of the HTTP front end share: http.c
 * (the daemon, connections, bodies, the route table, replies),
 * http_memory.c (POST /memory), http_mcp.c and http_mcp_tools.c (the MCP
 * endpoint, /mcp) and http_v1.c (the /v1 API: history,
 * versions, restore, redact, the change feed). Not a public interface:
 * see md_http.h.
 *
 * A request has one context (struct req), allocated on libmicrohttpd's
 * first call and freed in the completion callback. A handler answers
 * through one of the reply functions below, or suspends the connection
 * (state ST_WAITING) and is called again once it is resumed (ST_READY).
 */
#ifndef MD_HTTP_INTERNAL_H
#define MD_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>

#include "app/md_config.h"
#include "base/md_apikey.h"
#include "cmd/md_cmd.h"
#include "cmd/md_writer.h"
#include "http/md_http.h"
#include "store/md_store.h"

/* Bounds of every response text: results are bounded by the limits, but
 * an error text repeating a long path or a list of lines can be large. */
#define OUT_LIMIT ((size_t)256 << 20)

struct waiter;

struct md_http {
    const struct md_config *cfg;
    struct md_store *store;
    struct md_writer *writer;
    struct MHD_Daemon *d;
    MHD_socket quiesced_fd;
    unsigned port;
    atomic_int stopping;
    atomic_uint in_flight;
    struct md_connlimit *conns; /* open connections per client address */
    atomic_size_t body_bytes;   /* request body bytes held, all requests */
    atomic_llong refused_at;    /* last connection refusal logged, seconds */
    /* GET /metrics (http_metrics.c): its own daemon (--metrics-listen),
     * and the database's size as last read, and when (microseconds). */
    struct MHD_Daemon *metrics_d;
    unsigned metrics_port;
    atomic_llong db_size;
    atomic_ullong db_size_at;
    /* Requests of the change feed waiting for a write (http_v1.c). */
    pthread_mutex_t wait_mu;
    pthread_cond_t wait_cv;
    struct waiter *waiters;
    pthread_t wait_thread;
    int wait_started, wait_stop;
    /* --auth keys (http_auth.c): the key store and failed attempts. */
    struct md_keystore *keys;
    struct md_authfail *authfail;
    /* The MCP endpoint's sessions (http_mcp.c, md_mcp_session.h). */
    struct md_mcp_sessions *mcp;
};

enum route {
    R_MEMORY,
    R_HEALTHZ,
    R_READYZ,
    R_HISTORY,
    R_VERSIONS,
    R_RESTORE,
    R_REDACT,
    R_CHANGES,
    R_METRICS,
    R_TENANTS,
    R_MCP,
    R_SEARCH,
    R_OTHER
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
    struct header_seen authorization; /* --auth keys (http_auth.c); never logged */
    struct header_seen mcp_session, mcp_version, origin; /* /mcp (http_mcp.c) */
};

struct req {
    struct md_http *h;
    struct MHD_Connection *conn;
    uint64_t t0;
    enum route route;
    const char *method;
    const char *url;
    struct md_buf body;
    int too_big;
    int want_text;
    struct headers headers; /* read once, when the request's headers are in */
    char tenant[MD_TENANT_MAX + 1];
    char actor[129]; /* X-Memory-Actor, when valid */
    struct md_cmd cmd;
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
    const char *refuse;       /* ambiguous framing: 400 before the body, then close */
    int over_cap;             /* its connection is over --max-connections-per-ip: 503 */
    /* The change feed (http_v1.c): what is awaited, until when. */
    int64_t wait_after;
    uint64_t wait_until_us;
    /* --auth keys: the request's key (its id, never the key) and scope
     * (enum md_scope); Retry-After of a 429. */
    char key_id[MD_APIKEY_ID_LEN + 1];
    int key_scope;
    unsigned retry_after;
    /* An import's body (POST /v1/tenants/{t}/import): kept in an unlinked
     * temporary file, `spool_fd` (-1 until its first bytes; closed when
     * the request ends). */
    int spool;
    int spool_fd;
    /* /mcp (http_mcp.c): the JSON-RPC request's id as JSON text (owned;
     * NULL: none yet) and its method when it is one memoryd knows (static;
     * for the log). */
    char *mcp_id;
    const char *mcp_method;
};

uint64_t md_http_now_us(void);

/* True for a URL that ends in "/import" (an import's body is spooled). */
int md_http_is_import(const char *url);

/* Free the request body and give its bytes back to --max-body-memory. */
void md_http_body_drop(struct req *r);

/* Queue `resp` (a stream's, say; the reference is given up): as
 * md_http_queue, with `len` bytes counted as sent. */
enum MHD_Result md_http_queue_response(struct req *r, unsigned status, struct MHD_Response *resp,
                                       const char *type, size_t len, int is_error,
                                       const char *const *extra);

/* Queue a response; takes `body` (malloc'd). is_error >= 0 adds
 * X-Memory-Is-Error. `extra` (may be NULL): more headers, name/value
 * pairs, NULL-terminated. */
enum MHD_Result md_http_queue(struct req *r, unsigned status, const char *type, char *body,
                              size_t len, int is_error, const char *const *extra);

/* A JSON body (taken from `json`). */
enum MHD_Result md_http_reply_json(struct req *r, unsigned status, struct md_buf *json);

/* {"error": text} with the status of `err`; a leading "Error: " is left
 * out (the /v1 API speaks to programs, not to the model). */
enum MHD_Result md_http_reply_error(struct req *r, enum md_err err, const char *text, size_t len);

/* The request's tenant, decided once (md_tenant.h) into r->tenant: 0, or
 * -1 with the error answered (as a tool_result for /memory, as
 * {"error": ...} for the /v1 API). */
int md_http_tenant(struct req *r, enum MHD_Result *ret);

/* Whether an Accept header value (NULL: none) asks for OpenMetrics
 * (application/openmetrics-text, at least as much as text/plain). */
int md_http_wants_openmetrics(const char *accept);

/* libmicrohttpd's messages as log lines (of the --metrics-listen daemon;
 * the public port's logger also counts refusals). */
void md_http_mhd_log(void *cls, const char *fmt, va_list ap);

/* http_metrics.c: GET /metrics on the public port; the listener of its
 * own when --metrics-listen is set (0, or -1 with the reason in `why`),
 * stopped by md_http_metrics_stop (either is a no-op without it). */
enum MHD_Result md_http_metrics(struct req *r);
int md_http_metrics_start(struct md_http *h, char *why, size_t why_len);
void md_http_metrics_stop(struct md_http *h);

/* http_memory.c */
enum MHD_Result md_http_memory(struct req *r);
/* Read the write headers of a parsed command (If-Match, If-None-Match,
 * Idempotency-Key with the request's fingerprint, X-Memory-Actor) into
 * r->cmd and r->job; MD_OK, or MD_EINVAL with the text in `out`. Each may
 * come once. A view takes none of them (they are ignored). */
enum md_err md_http_write_headers(struct req *r, const char *body, size_t body_len,
                                  struct md_buf *out);
/* Queue r->cmd (parsed, r->tenant decided) for the writer; the connection
 * is resumed with the answer in r->out, r->err, r->job.res. */
enum MHD_Result md_http_submit(struct req *r);
/* Answer r->out with r->err as a tool_result (JSON or text). */
enum MHD_Result md_http_reply_result(struct req *r, unsigned status);

/* Run the parsed r->cmd (r->tenant decided) as POST /memory does: `pe`
 * is md_cmd_parse's result and `parse_msg` its message (freed here). A
 * view runs now and 0 is returned with the answer in r->out and r->err (a
 * refusal too: a parse error, a read-only key's write, a storage failure);
 * a write goes to the writer, and on a store that fetches views
 * asynchronously a view to the store, and 1 is returned: the connection is
 * suspended and the route's handler answers once it is resumed (after
 * md_http_view_resumed). */
int md_http_cmd_run(struct req *r, enum md_err pe, struct md_buf *parse_msg);

/* A resumed request whose view was fetched (r->view_fetched): run it,
 * leaving the answer in r->out and r->err as md_http_cmd_run would have. */
void md_http_view_resumed(struct req *r);

/* http_mcp.c: /mcp, MCP's Streamable HTTP transport (JSON-RPC 2.0). Its
 * sessions live in h->mcp (md_http_mcp_start: 0, or -1 with the reason). */
enum MHD_Result md_http_mcp(struct req *r);
int md_http_mcp_start(struct md_http *h, char *why, size_t why_len);
void md_http_mcp_stop(struct md_http *h);
/* A refusal of an /mcp request before its message is read (tenant,
 * authentication, body limits) as a JSON-RPC error with the HTTP status of
 * `err`; a leading "Error: " of `text` is left out. */
enum MHD_Result md_http_mcp_refuse(struct req *r, enum md_err err, const char *text, size_t len);
/* The answer of a tools/call: r->out as the result's text content,
 * isError when r->err is set. */
enum MHD_Result md_http_mcp_tool_answer(struct req *r);

/* http_mcp_tools.c: the MCP tools, one entry each. `call` gets the
 * request (r->tenant decided) and the call's arguments (a JSON object,
 * borrowed for the call) and either answers at once (r->out, r->err set,
 * then `return md_http_mcp_tool_answer(r)`) or hands the work to the
 * writer (md_http_cmd_run, md_http_submit) and returns MHD_YES:
 * md_http_mcp_tool_answer runs when the connection is resumed. */
struct json_t;
struct md_mcp_tool {
    const char *name;
    const char *title;
    const char *description;
    const char *input_schema; /* JSON text of a JSON Schema object */
    int read_only;            /* annotations.readOnlyHint */
    enum MHD_Result (*call)(struct req *r, struct json_t *args);
};
extern const struct md_mcp_tool md_mcp_tools[];
extern const size_t md_mcp_tool_count;

/* http_v1.c */
enum MHD_Result md_http_v1(struct req *r);
/* The writer's commit hook: wake the change feed's waiters of `tenants`. */
void md_http_changes_committed(void *ctx, const char *const *tenants, size_t n);
/* The store's watcher: a tenant's change committed elsewhere (NULL: any). */
void md_http_changes_heard(void *ctx, const char *tenant);
int md_http_waiters_start(struct md_http *h);
void md_http_waiters_wake_all(struct md_http *h);
void md_http_waiters_stop(struct md_http *h);

/* http_tenants.c: GET /v1/tenants/{t}, PUT /v1/tenants/{t}/limits. */
enum MHD_Result md_http_tenants(struct req *r);

/* GET /v1/tenants/{t}/export (http_export.c), for r->tenant, once the
 * caller is allowed: a streamed tar of the tenant's tree. */
enum MHD_Result md_http_export(struct req *r);
/* http_search.c: GET /v1/search (md_search.h); the tenant is decided. */
enum MHD_Result md_http_search(struct req *r);

/* http_v1.c: an optional integer query parameter in [lo, hi] (default
 * `def`): 0, or -1 with the 400 answered in *ret ("Parameter `limit` must
 * be an integer from 1 to 1000"). */
int md_http_int_arg(struct req *r, const char *name, int64_t lo, int64_t hi, int64_t def,
                    int64_t *out, enum MHD_Result *ret);

/* http_v1.c: unix time `ms` as a JSON string in RFC 3339, UTC, with
 * milliseconds ("2026-01-02T03:04:05.678Z"). */
enum md_err md_http_put_time(struct md_buf *b, int64_t ms);

/* http_auth.c: --auth keys. md_http_auth_start opens the key store when
 * it is on (0, or -1 with the reason); md_http_auth_stop frees it. */
int md_http_auth_start(struct md_http *h, char *why, size_t why_len);
void md_http_auth_stop(struct md_http *h);
/* Before a POST /memory or /v1 request runs: 0 when it may go on (with
 * --auth keys: r->tenant, r->key_id and r->key_scope set from its key), or
 * -1 with the refusal answered (401, 403, 429, 503). */
int md_http_authenticate(struct req *r, enum MHD_Result *ret);
/* With --auth keys, a key of the read scope (only views). */
#define md_http_auth_read_only(r) ((r)->h->keys && (r)->key_scope == 0)
extern const char md_auth_read_only_text[];

#endif
