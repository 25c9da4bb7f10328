/*
 * http_auth.c — --auth keys: every POST /memory and /v1 request carries
 * `Authorization: Bearer <key>`, looked up in the key store on each request
 * (no cache: a revocation counts at once on every instance). The key
 * decides the tenant and what the request may do (its scope); failures are
 * counted per client address (md_authfail.h). The key itself is never
 * logged or kept: only its id, in r->key_id, for the request log.
 */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "app/md_keystore.h"
#include "base/md_apikey.h"
#include "base/md_json.h"
#include "base/md_log.h"
#include "http/md_authfail.h"
#include "internal.h"

/* 10 failures within 60 s block an address for the rest of the 60 s. */
#define FAIL_MAX    10
#define FAIL_WINDOW 60

const char md_auth_read_only_text[] =
    "Error: Forbidden: this API key has the read scope: it may only view (the view command and "
    "GET requests). Nothing was done.";

int md_http_auth_start(struct md_http *h, char *why, size_t why_len)
{
    if (!h->cfg->auth_keys)
        return 0;
    char reason[256] = "";
    if (md_keystore_open(h->cfg->db, &h->keys, reason, sizeof reason) != MD_OK) {
        snprintf(why, why_len, "--auth keys: cannot open the key store: %s", reason);
        return -1;
    }
    h->authfail = md_authfail_new(FAIL_MAX, FAIL_WINDOW);
    if (!h->authfail) {
        snprintf(why, why_len, "out of memory");
        md_keystore_close(h->keys);
        h->keys = NULL;
        return -1;
    }
    return 0;
}

void md_http_auth_stop(struct md_http *h)
{
    md_keystore_close(h->keys);
    md_authfail_free(h->authfail);
    h->keys = NULL;
    h->authfail = NULL;
}

/* A refusal: a tool_result for /memory, else {"error": ...} (without the
 * leading "Error: "). */
static enum MHD_Result deny(struct req *r, enum md_err err, const char *text)
{
    if (r->route == R_MCP)
        return md_http_mcp_refuse(r, err, text, strlen(text));
    if (r->route != R_MEMORY)
        return md_http_reply_error(r, err, text, strlen(text));
    r->err = err;
    md_buf_reset(&r->out);
    md_buf_puts(&r->out, text);
    return md_http_reply_result(r, md_err_http_status(err));
}

/* The token of an Authorization header "Bearer <token>" (the scheme in any
 * case, RFC 9110 11.1), or NULL. */
static const char *bearer_token(const char *v, size_t n, size_t *len)
{
    if (!v || n < 7 || strncasecmp(v, "Bearer ", 7) != 0)
        return NULL;
    v += 7;
    n -= 7;
    while (n && *v == ' ') {
        v++;
        n--;
    }
    *len = n;
    return n ? v : NULL;
}

static enum MHD_Result fail(struct req *r, const struct sockaddr *peer, int64_t now,
                            const char *text)
{
    md_authfail_note(r->h->authfail, peer, now);
    return deny(r, MD_EAUTH, text);
}

int md_http_authenticate(struct req *r, enum MHD_Result *ret)
{
    struct md_http *h = r->h;
    if (!h->keys)
        return 0;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *peer = ci ? ci->client_addr : NULL;
    int64_t now = (int64_t)time(NULL);
    unsigned wait = md_authfail_blocked(h->authfail, peer, now);
    if (wait) {
        r->retry_after = wait;
        *ret =
            deny(r, MD_ERATE,
                 "Error: Too many failed authentication attempts from your address (10 within 60 "
                 "seconds); nothing was done. Retry in a minute (Retry-After tells the seconds).");
        return -1;
    }
    const struct header_seen *ah = &r->headers.authorization;
    if (ah->count == 0) {
        *ret = fail(r, peer, now,
                    "Error: Authentication required: send the header Authorization: Bearer <key> "
                    "with a memoryd API key");
        return -1;
    }
    size_t len = 0;
    const char *token = ah->count == 1 ? bearer_token(ah->value, ah->len, &len) : NULL;
    unsigned char hash[MD_APIKEY_HASH_LEN];
    if (!token || md_apikey_hash(token, len, hash) != 0) {
        *ret = fail(r, peer, now,
                    "Error: Invalid Authorization header: send it once, as Bearer followed by a "
                    "memoryd API key (mdk_...)");
        return -1;
    }
    struct md_key_info k;
    enum md_err e = md_keystore_find(h->keys, hash, &k);
    if (e == MD_ENOENT) {
        *ret = fail(r, peer, now, "Error: Unknown API key");
        return -1;
    }
    if (e) {
        *ret = deny(r, MD_EUNAVAIL,
                    "Error: memoryd cannot check the API key now (the database cannot be "
                    "reached); nothing was done. Retry shortly.");
        return -1;
    }
    if (k.revoked) {
        *ret = fail(r, peer, now, "Error: This API key has been revoked");
        return -1;
    }
    snprintf(r->key_id, sizeof r->key_id, "%s", k.id);
    r->key_scope = (int)k.scope;
    /* Tenant administration: every path under /v1/tenants, whatever its
     * route (the listing, erasure, export and import too). */
    if (strncmp(r->url, "/v1/tenants", 11) == 0 && (r->url[11] == '\0' || r->url[11] == '/')) {
        if (k.scope != MD_SCOPE_ADMIN) {
            *ret = deny(r, MD_EFORBIDDEN,
                        "Error: Forbidden: tenant administration (/v1/tenants) needs an API key "
                        "with the admin scope");
            return -1;
        }
        return 0;
    }
    /* The key decides the tenant: a tenant header may only repeat it. */
    const struct header_seen *th = &r->headers.tenant;
    if (th->count > 1 || (th->count == 1 && (th->len != strlen(k.tenant) ||
                                             memcmp(th->value, k.tenant, th->len) != 0))) {
        char text[256];
        snprintf(text, sizeof text,
                 "Error: Forbidden: the %s header names another tenant than this API key's; "
                 "the key decides the tenant: leave the header out or send the key's own "
                 "tenant. Nothing was done.",
                 h->cfg->tenant_header);
        *ret = deny(r, MD_EFORBIDDEN, text);
        return -1;
    }
    /* (/memory and /mcp tell views from writes themselves) */
    if (k.scope == MD_SCOPE_READ && r->route != R_MEMORY && r->route != R_MCP &&
        strcmp(r->method, MHD_HTTP_METHOD_GET) != 0) {
        *ret = deny(r, MD_EFORBIDDEN, md_auth_read_only_text);
        return -1;
    }
    /* --trusted-proxies still applies (md_tenant_resolve tells). */
    if (h->cfg->trusted_proxies.n > 0 && md_http_tenant(r, ret) != 0)
        return -1;
    memcpy(r->tenant, k.tenant, sizeof r->tenant);
    return 0;
}
