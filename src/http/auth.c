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
 * (md_authfail.h): behind one of --trusted-proxies, the client the proxy
 * reports in X-Forwarded-For or X-Real-IP. The key itself is never logged or kept: only its id, in
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

/* The address `text` (n bytes, spaces around it trimmed) into *ss: 0, or -1
 * when it is no IPv4 or IPv6 address. */
static int address_of(const char *text, size_t n, struct sockaddr_storage *ss)
{
    while (n && (*text == ' ' || *text == '\t'))
        text++, n--;
    while (n && (text[n - 1] == ' ' || text[n - 1] == '\t'))
        n--;
    char a[64];
    int v6;
    if (n == 0 || n >= sizeof a)
        return -1;
    memcpy(a, text, n);
    a[n] = '\0';
    return md_sockaddr_of(a, 0, ss, &v6);
}

/* The client the failed attempts are counted against: the peer, or, when
 * the peer is one of --trusted-proxies, the client it reports: the last
 * address of X-Forwarded-For that is not itself a trusted proxy (those
 * before it are the client's own say), else X-Real-IP. Never the proxy's
 * own address for a request it relays, so one bad client behind it does
 * not lock the others out. `buf` holds the address returned when it is
 * not the peer's. */
static const struct sockaddr *client_of(struct req *r, struct sockaddr_storage *buf)
{
    const struct sockaddr *peer = peer_of(r);
    const struct md_cidr_list *proxies = &r->h->cfg->trusted_proxies;
    if (!peer || proxies->n == 0 || !md_cidr_list_match(proxies, peer))
        return peer;
    const char *xff = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Forwarded-For");
    for (size_t end = xff ? strlen(xff) : 0; end > 0;) {
        size_t start = end;
        while (start > 0 && xff[start - 1] != ',')
            start--;
        if (address_of(xff + start, end - start, buf) != 0)
            break; /* not an address: what the proxy appended is before it */
        if (!md_cidr_list_match(proxies, (const struct sockaddr *)buf))
            return (const struct sockaddr *)buf;
        end = start ? start - 1 : 0;
    }
    const char *real = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Real-IP");
    if (real && address_of(real, strlen(real), buf) == 0)
        return (const struct sockaddr *)buf;
    return peer;
}

/* A client on this machine (127.0.0.0/8, ::1), not relaying for another
 * (a request that carries Forwarded or X-Forwarded-For). */
static int local_admin(struct req *r)
{
    if (MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Forwarded") ||
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Forwarded-For"))
        return 0;
    return md_sockaddr_is_loopback(peer_of(r));
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
    struct sockaddr_storage client;
    md_authfail_note(r->h->authfail, client_of(r, &client), now);
    *ret = md_reply_refuse(r, err, "%s", text);
    return -1;
}

/* The request's key, looked up: 0 with *k set, or -1 with the refusal. */
static int find_key(struct req *r, struct md_key_info *k, enum MHD_Result *ret)
{
    struct md_http *h = r->h;
    int64_t now = (int64_t)time(NULL);
    struct sockaddr_storage client;
    unsigned wait = md_authfail_blocked(h->authfail, client_of(r, &client), now);
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
    memcpy(r->key_path, k->path, sizeof r->key_path);
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
