/*
 * md_mcp_session.h — the MCP endpoint's sessions (POST /mcp): an id issued
 * at `initialize`, sent back by the client in Mcp-Session-Id on every
 * later request, ended by DELETE /mcp.
 *
 * A session id is 32 random bytes from the operating system's CSPRNG
 * (libsodium's randombytes_buf) as 64 lowercase hex digits. A session
 * belongs to the tenant that opened it: looked up with another tenant, it
 * is not found. The table is bounded (`max` sessions); when it is full, a
 * new session takes the place of the one idle longest if that one has been
 * idle for MD_MCP_SESSION_IDLE seconds or more, else it is refused. Sessions
 * live in this process's memory only.
 *
 * Thread-safe (one mutex). Ownership: md_mcp_sessions_new() allocates the
 * table; md_mcp_sessions_free() frees it (NULL is fine). Errors:
 * md_mcp_sessions_new() returns NULL when out of memory (or when libsodium
 * cannot start); the rest return MD_OK or the md_err named below.
 */
#ifndef MD_MCP_SESSION_H
#define MD_MCP_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "base/md_err.h"

#define MD_MCP_SID_LEN      64   /* hex digits of a session id */
#define MD_MCP_SESSION_IDLE 3600 /* seconds idle before a full table reclaims it */

struct md_mcp_sessions;

struct md_mcp_sessions *md_mcp_sessions_new(size_t max);
void md_mcp_sessions_free(struct md_mcp_sessions *s);

/* Open a session of `tenant` at time `now` (seconds); its id (with a NUL)
 * into `id`. MD_EBUSY: the table is full (nothing idle long enough). */
enum md_err md_mcp_session_open(struct md_mcp_sessions *s, const char *tenant, int64_t now,
                                char id[MD_MCP_SID_LEN + 1]);

/* Whether id[0..len) is an open session of `tenant` (MD_OK, and its idle
 * time starts again at `now`), or MD_ENOENT: unknown, ended, or another
 * tenant's. */
enum md_err md_mcp_session_touch(struct md_mcp_sessions *s, const char *id, size_t len,
                                 const char *tenant, int64_t now);

/* End the session id[0..len) of `tenant`: MD_OK, or MD_ENOENT as above. */
enum md_err md_mcp_session_close(struct md_mcp_sessions *s, const char *id, size_t len,
                                 const char *tenant);

/* Sessions open now. */
size_t md_mcp_session_count(struct md_mcp_sessions *s);

#endif
