/*
 * md_cmd.h — memory tool commands: parse a request body, execute it.
 *
 * md_cmd_parse() turns a POST /memory body (a command object or a whole
 * tool_use block) into a struct md_cmd, checking it against the command
 * table (md_commands.def, src/cmd/parse.c): known command, required fields,
 * field types, paths (through md_path_canon). md_cmd_exec() runs it on a
 * store transaction.
 *
 * Ownership: a parsed md_cmd owns the jansson document its strings point
 * into and its canonical paths; md_cmd_free() releases them (safe on a
 * zeroed or partly parsed cmd).
 *
 * Errors: both functions return the error class and append the exact
 * client-facing text to `out`. Storage failures (MD_EDB, MD_EBUSY,
 * MD_ENOMEM) leave `out` unspecified: the caller answers with the storage
 * text (md_storage_text, md_refusals.h) and the details are in the log.
 */
#ifndef MD_CMD_H
#define MD_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "base/md_buf.h"
#include "base/md_path.h"
#include "base/md_sha256.h"
#include "base/md_text.h"
#include "store/md_history.h"
#include "store/md_store.h"

/* Every command, in the order of md_commands.def (MD_CMD_VIEW, ...); the
 * memory tool's own commands are the first rows (scope TOOL), the first
 * MD_CMD_TOOL_COUNT kinds. */
#define MD_CMD_SCOPE_TOOL 1
#define MD_CMD_SCOPE_OP   0
enum md_cmd_kind {
#define MD_COMMAND(kind, name, scope, writes, handler, fields) MD_CMD_##kind,
#include "cmd/md_commands.def"
    MD_CMD_COUNT,
    MD_CMD_TOOL_COUNT = 0
#define MD_COMMAND(kind, name, scope, writes, handler, fields) +MD_CMD_SCOPE_##scope
#include "cmd/md_commands.def"
};

/* What an import does with the tenant's files (?mode=). */
enum md_import_mode {
    MD_IMPORT_NEW,     /* only into a tenant that has no entry below its root (409) */
    MD_IMPORT_REPLACE, /* everything below the root is removed first */
    MD_IMPORT_MERGE,   /* the archive's files are written over the tenant's */
};

/* Preconditions of a write (If-Match, If-None-Match), checked against the
 * file the command names first (`path`; for rename, `old_path`). */
#define MD_PRECOND_MAX 8
struct md_precond {
    int if_none_match; /* If-None-Match: * : nothing may be there */
    int if_match_any;  /* If-Match: * : a file must be there */
    size_t n_match;    /* If-Match: "sha256-<hex>", ...: the file's must be one of them */
    size_t n_never;    /* If-Match tags that never match (weak, or not of memoryd's form) */
    unsigned char match[MD_PRECOND_MAX][MD_SHA256_LEN];
};

/* Whether the request sent any precondition. */
static inline int md_precond_given(const struct md_precond *pre)
{
    return pre->if_none_match || pre->if_match_any || pre->n_match || pre->n_never;
}

/* What a command produced besides its text. */
struct md_cmd_result {
    int has_etag; /* a file viewed or written: its content's SHA-256 (the ETag) */
    unsigned char etag[MD_SHA256_LEN];
    struct md_change_rec change; /* a write: its change-feed entry */
    /* restore: files written back, removed (they did not exist then), and
     * left as they were (already so). import: files written (`restored`),
     * their bytes (`bytes`), and the files a replace removed first
     * (`removed`). */
    int64_t restored, removed, unchanged, bytes;
    /* A write that found nothing to change (clear: nothing below the root):
     * no change-feed entry, `change` all zeros. */
    int no_change;
};

struct md_str {
    const char *p; /* NULL when absent */
    size_t n;
};

struct md_patharg {
    struct md_str raw; /* as sent; used in messages */
    char *canon;       /* owned, canonical */
    size_t canon_len;
};

struct md_sensitive;
struct md_sensitive_modes;
struct md_uses;

struct md_limits {
    size_t max_body; /* request body bytes */
    size_t max_file; /* file content bytes */
    size_t max_view; /* view output bytes */
    struct md_path_limits path;
    /* A tenant's quota by default (md_quota.h): bytes of file content and
     * number of files; 0: unlimited. */
    size_t tenant_max_bytes, tenant_max_files;
    /* Secrets kept out (--sensitive, md_sensitive.h; borrowed); NULL: off. */
    const struct md_sensitive *sensitive;
    /* Tenants' own modes, cached (md_sensitive_modes.h; borrowed); NULL:
     * the server's mode for every tenant. */
    struct md_sensitive_modes *modes;
    /* Expiry of unused files (md_expiry.h): --expire-after (0: off),
     * --expire-granularity, and the files' uses kept in memory (md_uses.h;
     * borrowed; NULL: none recorded). */
    int64_t expire_after_ms, expire_granularity_ms;
    struct md_uses *uses;
};

struct md_cmd {
    enum md_cmd_kind kind;
    const char *name;        /* static command name; NULL until known */
    int write;               /* changes data */
    struct md_patharg path;  /* path, or old_path for rename */
    struct md_patharg path2; /* new_path for rename */
    struct md_str file_text, old_str, new_str, insert_text;
    int64_t insert_line;
    struct md_view_range range;
    struct md_str tool_use_id;    /* set when a tool_use block was sent */
    void *json;                   /* the jansson root document (owned) */
    int64_t version, before;      /* restore, redact: 0 when absent */
    int64_t max_bytes, max_files; /* limits: the overrides, -1: none (the default) */
    /* limits: the --sensitive override to set (enum md_sensitive_mode; -1:
     * none, the server's; -2: left as it is); import: the mode in force for
     * the tenant (set by md_import_check). */
    int sensitive;
    /* limits: "expire_after" given (else left as it is), and the window
     * (md_expiry.h): -1 none of its own, 0 off, else ms. */
    int expire_given;
    int64_t expire_ms;
    /* import: the tar (a readable file, borrowed: its owner closes it) and
     * the mode (enum md_import_mode). */
    int import_fd;
    int import_mode;
    /* import: the files and bytes the archive writes (md_import_check). */
    int64_t import_files, import_bytes;
    /* Set by the caller after parsing (request headers): */
    struct md_precond pre;
    const char *actor; /* X-Memory-Actor (borrowed), or NULL */
    /* The subtree the request's key sees (canonical, borrowed; NULL: the
     * whole tenant): paths outside it answer as paths that do not exist,
     * writes outside it are refused (src/cmd/subtree.c). */
    const char *root;
    size_t root_len;
};

/* Parse a request body. On failure returns MD_EINVAL with the text in
 * `out`; cmd->tool_use_id is still set when it could be read. */
enum md_err md_cmd_parse(struct md_cmd *cmd, const char *body, size_t len,
                         const struct md_limits *lim, struct md_buf *out);

/* Parse the JSON body of an operation that is not a memory tool command
 * (MD_CMD_RESTORE, MD_CMD_REDACT): an object with that route's fields. As
 * md_cmd_parse otherwise. */
enum md_err md_cmd_parse_op(struct md_cmd *cmd, enum md_cmd_kind kind, const char *body, size_t len,
                            const struct md_limits *lim, struct md_buf *out);

/* The entries a view asks its store for at most (md_txn_view's
 * `max_entries`), under these limits: the same for every view, so that a
 * engine can fetch a view before the command runs (md_store_view_async). */
size_t md_cmd_view_entries(const struct md_limits *lim);

/* Execute on `t` for tenant `tenant`; the result text goes to `out`, the
 * rest to `res` (zeroed first). Write commands need a write transaction
 * and must run inside a savepoint (on error the caller rolls back): they
 * record their versions and change-feed entry (md_txn_cmd_begin/_end). */
enum md_err md_cmd_exec(struct md_txn *t, const char *tenant, const struct md_cmd *cmd,
                        const struct md_limits *lim, struct md_buf *out, struct md_cmd_result *res);

/* The entity tag of a content hash as sent in ETag: "sha256-<hex>" with
 * its quotes (MD_ETAG_LEN bytes plus a NUL). */
#define MD_ETAG_LEN (MD_SHA256_HEX + 9)
void md_etag_format(const unsigned char sha256[MD_SHA256_LEN], char out[MD_ETAG_LEN + 1]);

/* Parse an If-Match / If-None-Match value into `pre` (`if_none` selects
 * which). MD_EINVAL with the reason in `out` when malformed. */
enum md_err md_precond_parse(struct md_precond *pre, int if_none, const char *value, size_t len,
                             struct md_buf *out);

void md_cmd_free(struct md_cmd *cmd);

/* Static name of a command kind ("view", ...). */
const char *md_cmd_kind_name(enum md_cmd_kind kind);

/* The JSON Schema of the memory tool's input (a command object), made from
 * md_commands.def: `command` with the tool's command names, then every
 * MD_PARAM with its type and description. Appended to `out`. */
enum md_err md_cmd_tool_schema(struct md_buf *out);

#endif
