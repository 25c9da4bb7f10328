/*
 * auth.c — who may use a route (its row's access, md_routes.def), before
 * its handler runs.
 *
 * With --auth keys every request of a route that is not PUBLIC carries
 * `Authorization: Bearer <key>`, looked up in the store on each request
 * (md_store_key_find: no cache, a revocation counts at once on every
 * instance). The key
 * decides the tenant and what the request may do (its scope: READ rows and
 * views for any key, WRITE rows for the write and admin scopes, ADMIN rows
 * for the admin scope); failures are counted per client address
 * (md_authfail.h). The key itself is never logged or kept: only its id, in
 * r->key_id, for the request log.
 *
 * Without --auth keys, ADMIN rows are served only to clients on this
 * machine that do not come through a proxy; the rest to anyone the tenant
 * rules admit (md_tenant_resolve.h).
 */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/md_apikey.h"
#include "base/md_netaddr.h"
#include "http/md_authfail.h"
#include "internal.h"
#include "store/md_store_admin.h"

/* 10 failures within 60 s block an address for the rest of the 60 s. */
#define FAIL_MAX    10
#define FAIL_WINDOW 60

int md_http_auth_start(struct md_http *h, char *why, size_t why_len)
{
    if (!h->cfg->auth_keys)
        return 0;
    h->authfail = md_authfail_new(FAIL_MAX, FAIL_WINDOW);
    if (!h->authfail) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    return 0;
}

void md_http_auth_stop(struct md_http *h)
{
    md_authfail_free(h->authfail);
    h->authfail = NULL;
}

static const struct sockaddr *peer_of(struct req *r)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return ci ? ci->client_addr : NULL;
}

/* A client on this machine (127.0.0.0/8, ::1), not relaying for another
 * (a request that carries Forwarded or X-Forwarded-For). */
static int local_admin(struct req *r)
{
    int family;
    uint8_t a[16];
    if (md_sockaddr_key(peer_of(r), &family, a) != 0)
        return 0;
    if (MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Forwarded") ||
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Forwarded-For"))
        return 0;
    if (family == AF_INET)
        return a[0] == 127;
    static const uint8_t loop6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return memcmp(a, loop6, 16) == 0;
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

/* A failed authentication (`MD_R_AUTH_...`), counted against the
 * client's address. */
static int refuse_key(struct req *r, int64_t now, enum MHD_Result *ret, enum md_err err,
                      const char *text)
{
    md_authfail_note(r->h->authfail, peer_of(r), now);
    *ret = md_reply_refuse(r, err, "%s", text);
    return -1;
}

/* The request's key, looked up: 0 with *k set, or -1 with the refusal. */
static int find_key(struct req *r, struct md_key_info *k, enum MHD_Result *ret)
{
    struct md_http *h = r->h;
    int64_t now = (int64_t)time(NULL);
    unsigned wait = md_authfail_blocked(h->authfail, peer_of(r), now);
    if (wait) {
        r->retry_after = wait;
        *ret = md_reply_refuse(r, MD_R_AUTH_BLOCKED);
        return -1;
    }
    const struct header_seen *ah = &r->headers.authorization;
    if (ah->count == 0)
        return refuse_key(r, now, ret, MD_R_AUTH_REQUIRED);
    size_t len = 0;
    const char *token = ah->count == 1 ? bearer_token(ah->value, ah->len, &len) : NULL;
    unsigned char hash[MD_APIKEY_HASH_LEN];
    if (!token || md_apikey_hash(token, len, hash) != 0)
        return refuse_key(r, now, ret, MD_R_AUTH_INVALID);
    enum md_err e = md_store_key_find(h->store, hash, k);
    if (e == MD_ENOENT)
        return refuse_key(r, now, ret, MD_R_AUTH_UNKNOWN);
    if (e) {
        *ret = md_reply_refuse(r, MD_R_AUTH_UNAVAILABLE);
        return -1;
    }
    if (k->revoked)
        return refuse_key(r, now, ret, MD_R_AUTH_REVOKED);
    return 0;
}

/* With a valid key `k`: whether its scope and tenant allow the request. */
static int key_allows(struct req *r, const struct md_key_info *k, enum MHD_Result *ret)
{
    struct md_http *h = r->h;
    snprintf(r->key_id, sizeof r->key_id, "%s", k->id);
    r->key_scope = (int)k->scope;
    if (r->route->access == ACCESS_ADMIN) {
        if (k->scope == MD_SCOPE_ADMIN)
            return 0;
        *ret = md_reply_refuse(r, MD_R_AUTH_NOT_ADMIN);
        return -1;
    }
    /* The key decides the tenant: a tenant header may only repeat it. */
    const struct header_seen *th = &r->headers.tenant;
    if (th->count > 1 || (th->count == 1 && (th->len != strlen(k->tenant) ||
                                             memcmp(th->value, k->tenant, th->len) != 0))) {
        *ret = md_reply_refuse(r, MD_R_AUTH_OTHER_TENANT, h->cfg->tenant_header);
        return -1;
    }
    /* (a COMMAND row tells views from writes when its command is read) */
    if (k->scope == MD_SCOPE_READ && r->route->access == ACCESS_WRITE) {
        *ret = md_reply_refuse(r, MD_R_AUTH_READ_ONLY);
        return -1;
    }
    /* --trusted-proxies still applies (md_tenant_resolve tells). */
    if (h->cfg->trusted_proxies.n > 0 && md_http_tenant(r, ret) != 0)
        return -1;
    memcpy(r->tenant, k->tenant, sizeof r->tenant);
    return 0;
}

int md_http_authenticate(struct req *r, enum MHD_Result *ret)
{
    if (!r->h->cfg->auth_keys) {
        if (r->route->access == ACCESS_ADMIN && !local_admin(r)) {
            *ret = md_reply_errorf(r, MD_R_ADMIN_NOT_LOCAL);
            return -1;
        }
        return 0;
    }
    struct md_key_info k;
    if (find_key(r, &k, ret) != 0)
        return -1;
    return key_allows(r, &k, ret);
}
