/*
 * md_refusals.h — every text memoryd refuses a request with, bound to its
 * error class (md_errors.def, which gives the HTTP status).
 *
 * One macro a refusal: MD_R_<NAME> expands to `class, "text"` (a printf
 * format where the text takes values), so that a call reads
 *   md_reply_refuse(r, MD_R_SHUTTING_DOWN_TOOL);
 *   md_buf_say(out, MD_R_HEADER_TWICE, "If-Match");
 * and the compiler checks each format against its values. Refusals of the
 * MCP endpoint's JSON-RPC also carry their JSON-RPC error code:
 * MD_RPC_<NAME> expands to `class, code, "text"`.
 *
 * A text beginning with "Error: " is a tool_result's (the memory tool's
 * envelope, POST /memory and the MCP tool); the reply path leaves the
 * prefix out where it answers {"error": ...} or a JSON-RPC error.
 *
 * Every refusal of memoryd's own is here, those of the commands
 * (src/cmd/) too. The only texts outside it are the memory tool's own
 * results and errors, which reproduce the SDK's (tests/conformance/
 * oracle.mjs checks them): those of view, create, str_replace, insert,
 * delete and rename (src/cmd/view.c, edit.c, tree.c, src/base/text.c,
 * path.c) and of their command and its fields (src/cmd/parse.c: a
 * missing or unknown command, a missing or mistyped parameter).
 * The OpenAPI and docs tests read this file.
 */
#ifndef MD_REFUSALS_H
#define MD_REFUSALS_H

#include "base/md_err.h"

/* How a tool_result's refusal begins (see above); the commands also write
 * it before a text that has none (restore: MD_R_VERSION_NOT_KEPT; import). */
#define MD_ERROR_PREFIX "Error: "

/* ---- the request: its framing, body and connection ---- */

#define MD_R_CONTENT_LENGTH_TWICE                                                                  \
    MD_EINVAL, "Error: The Content-Length header was sent more than once"
#define MD_R_LENGTH_AND_CHUNKED                                                                    \
    MD_EINVAL, "Error: A request must not have both Content-Length and Transfer-Encoding"
#define MD_R_TRANSFER_ENCODING                                                                     \
    MD_EINVAL, "Error: Unsupported Transfer-Encoding: only chunked is accepted"
#define MD_R_CHUNKED_PADDED                                                                        \
    MD_EINVAL, "Error: The Transfer-Encoding header has whitespace after `chunked`, which this "   \
               "server cannot read as chunked; send exactly `Transfer-Encoding: chunked`"
#define MD_R_BODY_TOO_BIG MD_ETOOBIG, "Error: The request body exceeds the limit of %zu bytes"
#define MD_R_ARCHIVE_TOO_BIG                                                                       \
    MD_ETOOBIG, "Error: The archive exceeds the import limit of %zu bytes (--max-import)"
#define MD_R_BODIES_BUSY                                                                           \
    MD_EBUSY, "Error: memoryd is busy: too many request bodies are being received at once; the "   \
              "command was not applied. Retry shortly."
#define MD_R_SPOOL_FAILED                                                                          \
    MD_EUNAVAIL, "Error: memoryd cannot keep the archive while it is read (a temporary file in "   \
                 "$TMPDIR could not be written); nothing was imported. Retry later."
/* Over --max-connections-per-ip: the memory tool's envelope, and the rest. */
#define MD_R_CONNECTIONS_TOOL                                                                      \
    MD_EBUSY, "Error: Too many connections from your address (the limit is %u); the command was "  \
              "not applied. Retry shortly."
#define MD_R_CONNECTIONS MD_EBUSY, "too many connections from this address"

/* ---- routing ---- */

#define MD_R_METHOD_TOOL MD_EMETHOD, "Error: Use POST /memory with a JSON memory command"
#define MD_R_METHOD      MD_EMETHOD, "method not allowed"
/* Any other path: the paths of the route table follow (routes.c). */
#define MD_R_NOT_FOUND              MD_ENOENT, "not found: use %s (see openapi.yaml)"
#define MD_R_NOT_FOUND_FAMILY       MD_ENOENT, "Not found: use %s"
#define MD_R_NOT_FOUND_METRICS_PORT MD_ENOENT, "not found: this port serves GET /metrics"

/* ---- shutting down, overload ---- */

#define MD_R_SHUTTING_DOWN_TOOL                                                                    \
    MD_EBUSY, "Error: memoryd is shutting down; the command was not applied. Retry shortly."
#define MD_R_SHUTTING_DOWN MD_EBUSY, "memoryd is shutting down; retry shortly"
#define MD_R_OVERLOADED                                                                            \
    MD_EBUSY, "Error: memoryd is overloaded; the command was not applied. Retry shortly."
/* The tenant's import runs (md_writer.h): its commands wait for its end. */
#define MD_R_TENANT_IMPORTING                                                                      \
    MD_EBUSY, "Error: Tenant %s is being imported; the command was not applied. Retry when the "   \
              "import is done."

/* ---- the tenant (md_tenant_resolve.h) ---- */

#define MD_R_NOT_TRUSTED_PROXY                                                                     \
    MD_EFORBIDDEN, "Error: Forbidden: %s is not a trusted proxy; send requests through the proxy"
#define MD_R_TENANT_HEADER_TWICE MD_EINVAL, "Error: The %s header was sent more than once"
#define MD_R_TENANT_HEADER_MISSING                                                                 \
    MD_EINVAL, "Error: Missing %s header: this server requires a tenant"
#define MD_R_TENANT_HEADER_INVALID                                                                 \
    MD_EINVAL, "Error: Invalid %s header: a tenant id is 1 to %d characters of A-Z, a-z, 0-9, "    \
               "'.', '_' and '-'"

/* ---- API keys (--auth keys) ---- */

#define MD_R_AUTH_BLOCKED                                                                          \
    MD_ERATE, "Error: Too many failed authentication attempts from your address (10 within 60 "    \
              "seconds); nothing was done. Retry in a minute (Retry-After tells the seconds)."
#define MD_R_AUTH_REQUIRED                                                                         \
    MD_EAUTH, "Error: Authentication required: send the header Authorization: Bearer <key> with "  \
              "a memoryd API key"
#define MD_R_AUTH_INVALID                                                                          \
    MD_EAUTH, "Error: Invalid Authorization header: send it once, as Bearer followed by a "        \
              "memoryd API key (mdk_...)"
#define MD_R_AUTH_UNKNOWN MD_EAUTH, "Error: Unknown API key"
#define MD_R_AUTH_REVOKED MD_EAUTH, "Error: This API key has been revoked"
#define MD_R_AUTH_UNAVAILABLE                                                                      \
    MD_EUNAVAIL, "Error: memoryd cannot check the API key now (the database cannot be reached); "  \
                 "nothing was done. Retry shortly."
#define MD_R_AUTH_READ_ONLY                                                                        \
    MD_EFORBIDDEN, "Error: Forbidden: this API key has the read scope: it may only view (the "     \
                   "view command and GET requests). Nothing was done."
#define MD_R_AUTH_NOT_ADMIN                                                                        \
    MD_EFORBIDDEN, "Error: Forbidden: tenant administration (/v1/tenants) needs an API key with "  \
                   "the admin scope"
#define MD_R_AUTH_OTHER_TENANT                                                                     \
    MD_EFORBIDDEN, "Error: Forbidden: the %s header names another tenant than this API key's; "    \
                   "the key decides the tenant: leave the header out or send the key's own "       \
                   "tenant. Nothing was done."
#define MD_R_ADMIN_NOT_LOCAL                                                                       \
    MD_EFORBIDDEN, "Tenant administration (/v1/tenants) is only served to clients on this "        \
                   "machine (127.0.0.1 or ::1) that do not come through a proxy (Forwarded, "      \
                   "X-Forwarded-For)"

/* ---- the headers of a write ---- */

#define MD_R_HEADER_TWICE MD_EINVAL, "Error: The %s header was sent more than once"
#define MD_R_ACTOR_INVALID                                                                         \
    MD_EINVAL, "Error: The X-Memory-Actor header must be 1 to 128 printable ASCII characters"
#define MD_R_IDEMPOTENCY_KEY_INVALID                                                               \
    MD_EINVAL, "Error: The Idempotency-Key header must be 1 to 255 visible ASCII characters"
/* /mcp: the key of a tools/call in params._meta (MD_MCP_IDEMPOTENCY_META). */
#define MD_R_IDEMPOTENCY_META_INVALID                                                              \
    MD_EINVAL, "Error: `_meta.memoryd/idempotency-key` must be a string of 1 to 255 visible "      \
               "ASCII characters"
#define MD_R_IDEMPOTENCY_KEY_TWO                                                                   \
    MD_EINVAL, "Error: The Idempotency-Key header and `_meta.memoryd/idempotency-key` differ; "    \
               "send one key"
#define MD_R_IDEMPOTENCY_KEY_REUSED                                                                \
    MD_EIDEMPOTENT, "Error: This Idempotency-Key was already used for another request (a "         \
                    "different body, path or precondition); a new request needs a new key."

/* ---- the /v1 API's parameters ---- */

#define MD_R_PARAM_INT    MD_EINVAL, "Parameter `%s` must be an integer from %lld to %lld"
#define MD_R_PARAM_PATH   MD_EINVAL, "Parameter `path` is required"
#define MD_R_PARAM_FORMAT MD_EINVAL, "Parameter `format` must be json or text"
#define MD_R_PARAM_WITHIN                                                                          \
    MD_EINVAL, "Parameter `within` must be a duration: a whole number and a unit (ms, s, m, h or " \
               "d), e.g. 7d"
#define MD_R_EXPIRING_CURSOR                                                                       \
    MD_EINVAL, "Parameter `cursor` must be the next_cursor of a page (a path below /memories)"
#define MD_R_NO_HISTORY MD_ENOENT, "The path %.*s has no history and does not exist"
#define MD_R_VERSION_NUMBER                                                                        \
    MD_EINVAL, "The version in /v1/versions/{version} must be a positive integer"
#define MD_R_VERSION_NOT_KEPT                                                                      \
    MD_ENOENT, "Version %lld is not kept (there is no such version of this tenant, or retention "  \
               "has pruned it)"
#define MD_R_CHANGES_GONE                                                                          \
    MD_EGONE, "Changes after %lld are no longer kept (the oldest kept is %lld): read the tree "    \
              "again, then follow the feed from after=%lld"

/* ---- tenant administration ---- */

#define MD_R_TENANT_NAME                                                                           \
    MD_EINVAL, "The tenant in /v1/tenants/{tenant} must be 1 to 128 of A-Z a-z 0-9 . _ -"
#define MD_R_TENANT_CURSOR                                                                         \
    MD_EINVAL, "Parameter `cursor` must be the next_cursor of a page (a tenant name: 1 to 128 of " \
               "A-Z a-z 0-9 . _ -)"
#define MD_R_SECRETS_CURSOR                                                                        \
    MD_EINVAL, "Parameter `cursor` must be the next_cursor of a page (f: and a path, or v: and a " \
               "version)"
#define MD_R_LIMITS_BODY                                                                           \
    MD_EINVAL, "The body must be a JSON object: {\"max_bytes\": N|null, \"max_files\": N|null"     \
               "[, \"sensitive\": \"reject\"|\"redact\"|\"off\"|null][, \"expire_after\": "        \
               "\"90d\"|\"off\"|null]}"
#define MD_R_LIMITS_UNKNOWN_FIELD                                                                  \
    MD_EINVAL, "Unknown field `%.64s`: only max_bytes, max_files, sensitive and expire_after are " \
               "taken"
#define MD_R_LIMITS_SENSITIVE                                                                      \
    MD_EINVAL, "Field `sensitive` must be \"reject\", \"redact\", \"off\" or null (the server's "  \
               "--sensitive)"
#define MD_R_LIMITS_EXPIRE                                                                         \
    MD_EINVAL, "Field `expire_after` must be a duration (a whole number and a unit: ms, s, m, h "  \
               "or d, e.g. \"90d\"), \"off\", or null (the default of --expire-after)"
#define MD_R_LIMITS_MISSING                                                                        \
    MD_EINVAL, "Field `%s` is required (a non-negative integer, or null for the default)"
#define MD_R_LIMITS_VALUE                                                                          \
    MD_EINVAL, "Field `%s` must be a non-negative integer (at most 2^53; 0: unlimited) or null "   \
               "(the default)"
#define MD_R_IMPORT_MODE                                                                           \
    MD_EINVAL, "Parameter `mode` must be new (the default: into a tenant without entries), "       \
               "replace or merge"
#define MD_R_IMPORT_EMPTY                                                                          \
    MD_EINVAL, "Nothing was imported: the body is empty (send the tar, as GET "                    \
               "/v1/tenants/{tenant}/export writes it)"
#define MD_R_IMPORT_HEADERS                                                                        \
    MD_EINVAL, "An import takes no Idempotency-Key, If-Match or If-None-Match (it is all or "      \
               "nothing; mode new refuses a tenant that already has entries)"

/* ---- the MCP tools' arguments ---- */

#define MD_R_TOOL_ARG_TYPE MD_EINVAL, "Error: Parameter `%s` must be %s"

/* ---- the body of a command (src/cmd/parse.c) ---- */

#define MD_R_BODY_EMPTY                                                                            \
    MD_EINVAL, "Error: The request body is empty; send a memory command as JSON, e.g. "            \
               "{\"command\": \"view\", \"path\": \"/memories\"}"
/* jansson's text (bytes that are not UTF-8 as U+FFFD), line, column. */
#define MD_R_BODY_NOT_JSON   MD_EINVAL, "Error: Invalid JSON in request body: %s (line %d, column %d)"
#define MD_R_BODY_NOT_OBJECT MD_EINVAL, "Error: The request body must be a JSON object"
/* A "type" other than "tool_use". */
#define MD_R_BODY_UNSUPPORTED                                                                      \
    MD_EINVAL, "Error: Unsupported request: send a memory command object ({\"command\": ...}) "    \
               "or a tool_use block ({\"type\": \"tool_use\", ...})"
#define MD_R_TOOL_USE_ID    MD_EINVAL, "Error: A tool_use block needs a string `id`"
#define MD_R_TOOL_USE_INPUT MD_EINVAL, "Error: A tool_use block needs an object `input`"

/* ---- the memory tool's commands: memoryd's limits (src/cmd/edit.c, say.c, quota.c) ---- */

#define MD_R_FILE_TOO_BIG                                                                          \
    MD_ETOOBIG, "Error: File %.*s would be %zu bytes, over the %zu-byte file size limit"
/* Follows a "does not exist" error whose path is not in Unicode
 * Normalization Form C. */
#define MD_R_PATH_NOT_NFC                                                                          \
    MD_ENOENT, " (Note: this path is not in Unicode Normalization Form C (NFC); memoryd compares " \
               "paths byte for byte, so a name that looks the same but is encoded differently "    \
               "is a different path.)"
/* The tenant's quota (any write that adds): files, then bytes (used and
 * the limit as md_quota_size writes them). */
#define MD_R_QUOTA_FILES MD_EFULL, "Memory is full: %lld of %lld files used; delete files first."
#define MD_R_QUOTA_BYTES MD_EFULL, "Memory is full: %s of %s used; delete or shorten files first."

/* ---- preconditions (src/cmd/precond.c) ---- */

#define MD_R_IF_MATCH_SYNTAX                                                                       \
    MD_EINVAL, "Error: The If-Match header must be `*` or a comma-separated list of entity tags "  \
               "in double quotes, as sent in ETag"
#define MD_R_IF_NONE_MATCH_SYNTAX MD_EINVAL, "Error: The If-None-Match header must be `*`"
/* Each: the header's name. */
#define MD_R_PRECOND_TOO_MANY MD_EINVAL, "Error: The %s header lists more than 8 entity tags"
#define MD_R_PRECOND_EMPTY    MD_EINVAL, "Error: The %s header is empty"
#define MD_R_PRECOND_ANY_AND_TAGS                                                                  \
    MD_EINVAL, "Error: The %s header must be `*` alone or a list of entity tags"
#define MD_R_PRECOND_EXISTS                                                                        \
    MD_EPRECOND, "The file %.*s already exists (the request asked for If-None-Match: *); view it " \
                 "before changing it."
#define MD_R_PRECOND_CHANGED                                                                       \
    MD_EPRECOND, "The file %.*s changed since you viewed it; view it again before editing."

/* ---- restore and redact (src/cmd/history.c) ----
 * A version that is not kept: MD_ERROR_PREFIX, then MD_R_VERSION_NOT_KEPT. */

#define MD_R_RESTORE_PRECOND                                                                       \
    MD_EINVAL, "Error: If-Match and If-None-Match apply to the restore of one version "            \
               "(`version`), not to `before`"
#define MD_R_RESTORE_EITHER                                                                        \
    MD_EINVAL, "Error: Give either `version` (a positive integer: put that version of the file "   \
               "back) or `before` (a positive integer: put every file at or below the path back "  \
               "as it stood just before that version), not both"
#define MD_R_VERSION_OTHER_PATH MD_ECONFLICT, "Error: Version %lld is of %.*s, not of %.*s"
#define MD_R_VERSION_REDACTED                                                                      \
    MD_ECONFLICT, "Error: Version %lld of %.*s was redacted: its content is gone"
#define MD_R_RESTORE_NOT_EXISTED                                                                   \
    MD_ECONFLICT, "Error: Version %lld records that %.*s did not exist before the write that "     \
                  "created it: there is no content to restore (delete the file to go back to "     \
                  "that state)"
#define MD_R_RESTORE_DIRECTORY MD_ECONFLICT, "Error: Cannot restore %.*s: it is a directory now"
/* The path, then the file above it. */
#define MD_R_RESTORE_UNDER_FILE                                                                    \
    MD_ECONFLICT, "Error: Cannot restore %.*s: %.*s is a file, not a directory"
#define MD_R_RESTORE_TOO_BIG                                                                       \
    MD_ETOOBIG, "Error: Cannot restore %.*s: %zu bytes, over the %zu-byte file size limit"
/* `before` reaches past what retention kept of a file's history. */
#define MD_R_RESTORE_PRUNED                                                                        \
    MD_ECONFLICT, "Error: The history of %.*s before version %lld was pruned (retention keeps "    \
                  "the newest versions of each file): restore its files one version at a time"
#define MD_R_REDACT_VERSION MD_EINVAL, "Error: `version` must be a positive integer"
/* --sensitive reject (md_sensitive.h): what it looks like, its line. */
#define MD_R_SENSITIVE                                                                             \
    MD_ESENSITIVE, "Error: The text contains what looks like %s (line %zu); memory must not hold " \
                   "credentials. Write it again without the secret."
/* --sensitive redact: after the command's own answer (what, line, kind;
 * then the number of others). */
#define MD_SENSITIVE_REDACTED_ONE                                                                  \
    " (memoryd replaced what looks like %s on line %zu with [REDACTED:%s]: memory must not hold "  \
    "credentials)"
#define MD_SENSITIVE_REDACTED_MORE                                                                 \
    " (memoryd replaced what looks like %s on line %zu with [REDACTED:%s], and %zu more secrets "  \
    "likewise: memory must not hold credentials)"
/* The same in an import: the entry's name as shown, what, line. */
#define MD_R_IMPORT_SENSITIVE                                                                      \
    MD_ESENSITIVE, "Nothing was imported: file %s contains what looks like %s (line %zu); memory " \
                   "must not hold credentials"

/* A key that sees one subtree (docs/behaviour.md 15.3): a write of a path
 * outside it, or of a directory above it (the path as sent, the subtree). */
#define MD_R_SUBTREE_OUTSIDE                                                                       \
    MD_EFORBIDDEN, "Error: The path %.*s is outside %.*s, the part of /memories this API key may " \
                   "change. Nothing was done."

/* DELETE /v1/memories */
#define MD_R_CLEAR_PRECOND                                                                         \
    MD_EINVAL, "Error: If-Match and If-None-Match do not apply to clearing every file (DELETE "    \
               "/v1/memories)"
#define MD_R_REDACT_PRECOND                                                                        \
    MD_EINVAL, "Error: If-Match and If-None-Match do not apply to a redaction"
#define MD_R_REDACT_NOT_EXISTED                                                                    \
    MD_ECONFLICT, "Error: Version %lld of %.*s holds no content: it records that the file did "    \
                  "not exist"

/* ---- import (src/cmd/import.c) ----
 * Each written after MD_ERROR_PREFIX (which the reply leaves out again),
 * cut at 1045 bytes; an entry's name is shown cut at 256 bytes, or as one
 * of these when it cannot be shown: */

#define MD_IMPORT_NAME_CONTROL  "(a name with control characters)"
#define MD_IMPORT_NAME_NOT_UTF8 "(a name that is not UTF-8)"

#define MD_R_IMPORT_NOT_TAR                                                                        \
    MD_EINVAL, "Nothing was imported: the body is not a tar archive, or it is damaged (send the "  \
               "tar, as GET /v1/tenants/{tenant}/export writes it: ustar, pax or GNU tar, not "    \
               "compressed)"
#define MD_R_IMPORT_NOT_EMPTY                                                                      \
    MD_ECONFLICT, "Nothing was imported: tenant %s already has entries in /memories (import "      \
                  "with ?mode=replace to replace them, or ?mode=merge to write the archive's "     \
                  "files over them)"
#define MD_R_IMPORT_NAME_NOT_UTF8                                                                  \
    MD_EINVAL, "Nothing was imported: an entry has a name that is not UTF-8"
#define MD_R_IMPORT_HARD_LINK                                                                      \
    MD_EINVAL, "Nothing was imported: entry %s is a hard link: only files and directories are "    \
               "imported"
#define MD_R_IMPORT_SYMLINK                                                                        \
    MD_EINVAL, "Nothing was imported: entry %s is a symbolic link: only files and directories "    \
               "are imported"
#define MD_R_IMPORT_SPECIAL                                                                        \
    MD_EINVAL, "Nothing was imported: entry %s is a special file: only files and directories "     \
               "are imported"
#define MD_R_IMPORT_OUTSIDE                                                                        \
    MD_EINVAL, "Nothing was imported: entry %s is not under memories/ (the archive holds the "     \
               "memories/ tree, as GET /v1/tenants/{tenant}/export writes it)"
/* The name, then the path's refusal (md_path_errmsg) without "Error: ". */
#define MD_R_IMPORT_BAD_PATH MD_EINVAL, "Nothing was imported: entry %s: %s"
#define MD_R_IMPORT_ROOT     MD_ECONFLICT, "Nothing was imported: entry %s: /memories is a directory"
#define MD_R_IMPORT_FILE_TOO_BIG                                                                   \
    MD_ETOOBIG, "Nothing was imported: file %s, %lld bytes, is over the %zu-byte file size limit"
#define MD_R_IMPORT_CUT_SHORT                                                                      \
    MD_EINVAL, "Nothing was imported: the archive is damaged or cut short at %s"
#define MD_R_IMPORT_NOT_TEXT                                                                       \
    MD_EINVAL, "Nothing was imported: file %s is not UTF-8 text (memory files are text)"
/* Each: the entry's name, then the path in the tenant. */
#define MD_R_IMPORT_FILE_ON_DIR MD_ECONFLICT, "Nothing was imported: file %s: %.*s is a directory"
#define MD_R_IMPORT_FILE_UNDER_FILE                                                                \
    MD_ECONFLICT, "Nothing was imported: file %s: %.*s is a file, not a directory"
#define MD_R_IMPORT_DIR_ON_FILE MD_ECONFLICT, "Nothing was imported: directory %s: %.*s is a file"
#define MD_R_IMPORT_FILES_OVER                                                                     \
    MD_EFULL, "Nothing was imported: the tenant would hold %lld files, over its limit of %lld "    \
              "files"
/* Sizes as md_quota_size writes them. */
#define MD_R_IMPORT_BYTES_OVER                                                                     \
    MD_EFULL, "Nothing was imported: the tenant would hold %s, over its limit of %s"

/* ---- tenant administration, search (src/cmd/limits.c, search.c;
 * `limit`: MD_R_PARAM_INT) ---- */

#define MD_R_NO_SUCH_TENANT MD_ENOENT, "No such tenant: %s"
#define MD_R_SEARCH_OFF     MD_ENOENT, "Search is turned off on this server (memoryd --search off)"
#define MD_R_SEARCH_BUILDING                                                                       \
    MD_EBUSY, "The search index is being built (memoryd --search on, started on a database "       \
              "without it); retry shortly"
#define MD_R_SEARCH_Q_LONG    MD_EINVAL, "Parameter `q` is too long: at most 256 bytes"
#define MD_R_SEARCH_Q_UTF8    MD_EINVAL, "Parameter `q` must be UTF-8"
#define MD_R_SEARCH_Q_CONTROL MD_EINVAL, "Parameter `q` must not contain control characters"
#define MD_R_SEARCH_Q_QUOTE   MD_EINVAL, "Parameter `q` has a double quote without its closing one"
#define MD_R_SEARCH_Q_TERMS   MD_EINVAL, "Parameter `q` has too many terms: at most 8"
#define MD_R_SEARCH_Q_EMPTY   MD_EINVAL, "Parameter `q` is required: the words to search for"
#define MD_R_SEARCH_CURSOR                                                                         \
    MD_EINVAL, "Parameter `cursor` must be the next_cursor of a page of this same search (the "    \
               "same q and path)"

/* ---- storage failures (any request that reached the store) ---- */

#define MD_R_STORE_BUSY                                                                            \
    MD_EBUSY, "Error: The memory store is busy; the command was not applied. Try again shortly."
#define MD_R_STORE_UNAVAILABLE                                                                     \
    MD_EUNAVAIL, "Error: The memory store is unavailable right now; the command was not "          \
                 "applied. Try again shortly."
#define MD_R_STORE_UNSURE                                                                          \
    MD_EUNSURE, "Error: The memory store could not confirm that the command was saved (a disk "    \
                "flush failed, or the connection to the database was lost while committing): "     \
                "it may or may not have been applied. View the path before trying again."
#define MD_R_STORE_FAILED                                                                          \
    MD_EDB, "Error: The memory store failed; the command was not applied. Try again later."

/* ---- the MCP endpoint (JSON-RPC 2.0): `class, code, "text"` ---- */

#define MD_RPC_PARSE_ERROR      (-32700)
#define MD_RPC_INVALID_REQUEST  (-32600)
#define MD_RPC_METHOD_NOT_FOUND (-32601)
#define MD_RPC_INVALID_PARAMS   (-32602)
#define MD_RPC_SERVER_ERROR     (-32000) /* the transport refused the request */
#define MD_RPC_NO_SESSION       (-32001) /* Mcp-Session-Id unknown */

#define MD_RPC_NOT_JSON                                                                            \
    MD_EINVAL, MD_RPC_PARSE_ERROR, "Parse error: the body is not JSON: %s (line %d, column %d)"
#define MD_RPC_BATCH                                                                               \
    MD_EINVAL, MD_RPC_INVALID_REQUEST,                                                             \
        "Invalid Request: JSON-RPC batches are not supported (MCP has none since revision "        \
        "2025-06-18); send one message per request"
#define MD_RPC_NOT_OBJECT                                                                          \
    MD_EINVAL, MD_RPC_INVALID_REQUEST, "Invalid Request: a JSON-RPC message is a JSON object"
#define MD_RPC_JSONRPC_VERSION                                                                     \
    MD_EINVAL, MD_RPC_INVALID_REQUEST, "Invalid Request: `jsonrpc` must be \"2.0\""
#define MD_RPC_ID_TYPE                                                                             \
    MD_EINVAL, MD_RPC_INVALID_REQUEST, "Invalid Request: `id` must be a string or an integer"
#define MD_RPC_METHOD_TYPE                                                                         \
    MD_EINVAL, MD_RPC_INVALID_REQUEST, "Invalid Request: `method` must be a string"
#define MD_RPC_INITIALIZE_ID                                                                       \
    MD_EINVAL, MD_RPC_INVALID_REQUEST,                                                             \
        "Invalid Request: initialize must be a request (with an `id`)"
#define MD_RPC_PROTOCOL_VERSION                                                                    \
    MD_EINVAL, MD_RPC_SERVER_ERROR,                                                                \
        "Bad Request: unsupported MCP-Protocol-Version: %s (memoryd speaks 2025-11-25 and "        \
        "2025-06-18)"
#define MD_RPC_SESSION_REQUIRED                                                                    \
    MD_EINVAL, MD_RPC_SERVER_ERROR,                                                                \
        "Bad Request: the Mcp-Session-Id header is required: send initialize first, then its "     \
        "Mcp-Session-Id with every request"
#define MD_RPC_SESSION_TO_END                                                                      \
    MD_EINVAL, MD_RPC_SERVER_ERROR,                                                                \
        "Bad Request: DELETE /mcp needs the Mcp-Session-Id header of the session to end"
#define MD_RPC_NO_SUCH_SESSION                                                                     \
    MD_ENOENT, MD_RPC_NO_SESSION,                                                                  \
        "Session not found: this Mcp-Session-Id was ended or never started for this tenant; "      \
        "send initialize to start a new session"
#define MD_RPC_NO_SESSION_TO_END                                                                   \
    MD_ENOENT, MD_RPC_NO_SESSION,                                                                  \
        "Session not found: this Mcp-Session-Id was ended or never started for this tenant"
#define MD_RPC_TOO_MANY_SESSIONS                                                                   \
    MD_EBUSY, MD_RPC_SERVER_ERROR,                                                                 \
        "Too many MCP sessions are open (the limit is %u, --mcp-sessions); none was started. End " \
        "unused sessions with DELETE /mcp, or retry later."
#define MD_RPC_ORIGIN                                                                              \
    MD_EFORBIDDEN, MD_RPC_SERVER_ERROR,                                                            \
        "Forbidden: this Origin may not use /mcp (memoryd --mcp-origins lists the browser "        \
        "origins that may)"
#define MD_RPC_SHUTTING_DOWN                                                                       \
    MD_EBUSY, MD_RPC_SERVER_ERROR, "memoryd is shutting down; nothing was done. Retry shortly."
/* JSON-RPC errors of a request that was read: in a 200 answer. */
#define MD_RPC_PARAMS_OBJECT                                                                       \
    MD_OK, MD_RPC_INVALID_PARAMS, "Invalid params: `params` must be an object"
#define MD_RPC_INITIALIZE_VERSION                                                                  \
    MD_OK, MD_RPC_INVALID_PARAMS,                                                                  \
        "Invalid params: initialize needs `params.protocolVersion` (a string)"
#define MD_RPC_TOOL_NAME                                                                           \
    MD_OK, MD_RPC_INVALID_PARAMS, "Invalid params: tools/call needs `params.name` (a string)"
#define MD_RPC_TOOL_UNKNOWN                                                                        \
    MD_OK, MD_RPC_INVALID_PARAMS, "Invalid params: unknown tool: %s (tools/list names the tools)"
#define MD_RPC_TOOL_ARGUMENTS                                                                      \
    MD_OK, MD_RPC_INVALID_PARAMS, "Invalid params: `params.arguments` must be an object"
#define MD_RPC_METHOD_UNKNOWN MD_OK, MD_RPC_METHOD_NOT_FOUND, "Method not found: %s"

/* The storage failure text of an error class (MD_EBUSY, MD_EUNAVAIL,
 * MD_EUNSURE; any other class: MD_R_STORE_FAILED's). */
const char *md_storage_text(enum md_err err);

/* The class a storage failure is answered with: MD_EBUSY, MD_EUNAVAIL and
 * MD_EUNSURE as they are, any other as MD_EDB. */
enum md_err md_storage_class(enum md_err err);

#endif
