/*
 * test_netaddr.c — CIDR lists for the trusted-proxy setting: parsing (hosts,
 * networks, IPv4 and IPv6, spaces and commas, every error), matching at the
 * edges of a prefix, IPv4-mapped IPv6 peers, and md_tenant_resolve()
 * refusing an untrusted peer with 403 while a trusted one gets its tenant;
 * and connections counted per address (md_connlimit, --max-connections-per-ip).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "app/md_config.h"
#include "base/md_netaddr.h"
#include "check.h"
#include "http/md_connlimit.h"
#include "http/md_tenant_resolve.h"

static struct sockaddr_storage v4(const char *a)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *s = (struct sockaddr_in *)&ss;
    s->sin_family = AF_INET;
    inet_pton(AF_INET, a, &s->sin_addr);
    return ss;
}

static struct sockaddr_storage v6(const char *a)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
    s->sin6_family = AF_INET6;
    inet_pton(AF_INET6, a, &s->sin6_addr);
    return ss;
}

static int match(const struct md_cidr_list *l, struct sockaddr_storage ss)
{
    return md_cidr_list_match(l, (const struct sockaddr *)&ss);
}

#define PARSE_BAD(text, want)                                                                      \
    do {                                                                                           \
        struct md_cidr_list l_;                                                                    \
        char why_[200] = "";                                                                       \
        CHECK_EQ_INT(md_cidr_list_parse(text, &l_, why_, sizeof why_), -1);                        \
        CHECK_STR(why_, want);                                                                     \
    } while (0)

static void test_parse(void)
{
    struct md_cidr_list l;
    char why[200] = "";
    CHECK_EQ_INT(md_cidr_list_parse("", &l, why, sizeof why), 0);
    CHECK_EQ_INT(l.n, 0);
    CHECK_EQ_INT(md_cidr_list_parse(" , ", &l, why, sizeof why), 0);
    CHECK_EQ_INT(l.n, 0);
    CHECK_EQ_INT(md_cidr_list_parse("127.0.0.1, 10.0.0.0/8,::1 fd00::/8", &l, why, sizeof why), 0);
    CHECK_EQ_INT(l.n, 4);
    CHECK_EQ_INT(l.net[0].family, AF_INET);
    CHECK_EQ_INT(l.net[0].prefix, 32);
    CHECK_EQ_INT(l.net[1].prefix, 8);
    CHECK_EQ_INT(l.net[2].family, AF_INET6);
    CHECK_EQ_INT(l.net[2].prefix, 128);
    CHECK_EQ_INT(l.net[3].prefix, 8);

    PARSE_BAD("10.0.0.0/33", "'/33' is not a prefix length for 10.0.0.0 (0 to 32)");
    PARSE_BAD("::/129", "'/129' is not a prefix length for :: (0 to 128)");
    PARSE_BAD("10.0.0.0/", "'/' is not a prefix length for 10.0.0.0 (0 to 32)");
    PARSE_BAD("10.0.0.0/-1", "'/-1' is not a prefix length for 10.0.0.0 (0 to 32)");
    PARSE_BAD("10.0.0.0/8x", "'/8x' is not a prefix length for 10.0.0.0 (0 to 32)");
    PARSE_BAD("proxy.local", "'proxy.local' is not an IP address");
    PARSE_BAD("10.0.0", "'10.0.0' is not an IP address");
    PARSE_BAD("1.2.3.4,nope", "'nope' is not an IP address");
    char many[2000] = "";
    for (size_t i = 0, at = 0; i < MD_CIDR_MAX + 1; i++)
        at += (size_t)snprintf(many + at, sizeof many - at, "10.0.0.1,");
    PARSE_BAD(many, "more than 32 networks");
}

static void test_match(void)
{
    struct md_cidr_list l;
    char why[200];
    CHECK_EQ_INT(md_cidr_list_parse("10.1.0.0/16,192.168.7.9,172.16.0.0/12,2001:db8::/33", &l, why,
                                    sizeof why),
                 0);
    CHECK(match(&l, v4("10.1.0.0")));
    CHECK(match(&l, v4("10.1.255.255")));
    CHECK(!match(&l, v4("10.0.255.255")));
    CHECK(!match(&l, v4("10.2.0.0")));
    CHECK(match(&l, v4("192.168.7.9")));
    CHECK(!match(&l, v4("192.168.7.8")));
    CHECK(match(&l, v4("172.31.255.255"))); /* /12: 172.16-172.31 */
    CHECK(!match(&l, v4("172.32.0.0")));
    CHECK(match(&l, v6("2001:db8:7fff::1"))); /* /33: bit 33 is 0 */
    CHECK(!match(&l, v6("2001:db8:8000::1")));
    CHECK(!match(&l, v6("::1")));
    CHECK(match(&l, v6("::ffff:10.1.2.3"))); /* an IPv4 client on an IPv6 socket */
    CHECK(!match(&l, v6("::ffff:10.2.2.3")));
    CHECK(!md_cidr_list_match(&l, NULL));

    CHECK_EQ_INT(md_cidr_list_parse("0.0.0.0/0", &l, why, sizeof why), 0);
    CHECK(match(&l, v4("8.8.8.8")));
    CHECK(!match(&l, v6("::1"))); /* families do not mix */

    char text[46];
    struct sockaddr_storage a = v4("10.9.8.7");
    md_sockaddr_text((const struct sockaddr *)&a, text);
    CHECK_STR(text, "10.9.8.7");
    a = v6("fd00::1");
    md_sockaddr_text((const struct sockaddr *)&a, text);
    CHECK_STR(text, "fd00::1");
    md_sockaddr_text(NULL, text);
    CHECK_STR(text, "?");
}

static void test_tenant_trusted(void)
{
    struct md_http_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.tenant_header = "X-Tenant-ID";
    cfg.default_tenant = "default";
    char out[MD_TENANT_MAX + 1];
    struct md_buf m;
    md_buf_init(&m, 4096);
    struct sockaddr_storage proxy = v4("127.0.0.1"), other = v4("127.0.0.2");

    /* No list: anyone. */
    CHECK_EQ_INT(md_tenant_resolve(&cfg, (struct sockaddr *)&other, 1, "acme", 4, out, &m), MD_OK);
    CHECK_STR(out, "acme");

    char why[100];
    CHECK_EQ_INT(md_cidr_list_parse("127.0.0.1", &cfg.trusted_proxies, why, sizeof why), 0);
    CHECK_EQ_INT(md_tenant_resolve(&cfg, (struct sockaddr *)&proxy, 1, "acme", 4, out, &m), MD_OK);
    CHECK_STR(out, "acme");
    md_buf_reset(&m);
    CHECK_EQ_INT(md_tenant_resolve(&cfg, (struct sockaddr *)&other, 1, "acme", 4, out, &m),
                 MD_EFORBIDDEN);
    CHECK_MEM(m.data, m.len,
              "Error: Forbidden: 127.0.0.2 is not a trusted proxy; send requests through the "
              "proxy");
    /* Without the header too: the default tenant is not a way around the proxy. */
    md_buf_reset(&m);
    CHECK_EQ_INT(md_tenant_resolve(&cfg, (struct sockaddr *)&other, 0, NULL, 0, out, &m),
                 MD_EFORBIDDEN);
    md_buf_free(&m);
}

static int allowed(struct md_connlimit *cl, struct sockaddr_storage ss)
{
    return md_connlimit_allowed(cl, (const struct sockaddr *)&ss);
}

static enum md_err add(struct md_connlimit *cl, struct sockaddr_storage ss, int delta)
{
    return md_connlimit_add(cl, (const struct sockaddr *)&ss, delta, NULL);
}

static unsigned count(struct md_connlimit *cl, struct sockaddr_storage ss)
{
    return md_connlimit_count(cl, (const struct sockaddr *)&ss);
}

static void test_connlimit(void)
{
    struct md_connlimit *cl = md_connlimit_new(3);
    CHECK(cl != NULL);
    /* Up to twice the limit an address is let in (the caller answers those
     * over the limit with a 503), then refused; other addresses are
     * independent. The count after each open tells which side it is on. */
    for (unsigned i = 1; i <= 6; i++) {
        CHECK(allowed(cl, v4("10.0.0.1")));
        struct sockaddr_storage a = v4("10.0.0.1");
        unsigned open = 0;
        CHECK_EQ_INT(md_connlimit_add(cl, (const struct sockaddr *)&a, +1, &open), MD_OK);
        CHECK_EQ_INT(open, i);
    }
    CHECK(!allowed(cl, v4("10.0.0.1")));
    CHECK(allowed(cl, v4("10.0.0.2")));
    CHECK(allowed(cl, v6("2001:db8::1")));
    /* An IPv4 client on an IPv6 socket is the same client. */
    CHECK(!allowed(cl, v6("::ffff:10.0.0.1")));
    CHECK_EQ_INT(count(cl, v6("::ffff:10.0.0.1")), 6);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(add(cl, v4("10.0.0.1"), -1), MD_OK);
    CHECK_EQ_INT(count(cl, v4("10.0.0.1")), 3);
    /* A close makes room again; closing every connection forgets the address. */
    CHECK_EQ_INT(add(cl, v6("::ffff:10.0.0.1"), -1), MD_OK);
    CHECK(allowed(cl, v4("10.0.0.1")));
    CHECK_EQ_INT(count(cl, v4("10.0.0.1")), 2);
    add(cl, v4("10.0.0.1"), -1);
    add(cl, v4("10.0.0.1"), -1);
    CHECK_EQ_INT(count(cl, v4("10.0.0.1")), 0);
    add(cl, v4("10.0.0.1"), -1); /* an extra close does not go below zero */
    CHECK_EQ_INT(count(cl, v4("10.0.0.1")), 0);
    /* IPv6 addresses are told apart by all 16 bytes; many addresses share buckets. */
    CHECK_EQ_INT(add(cl, v6("2001:db8::1"), +1), MD_OK);
    CHECK_EQ_INT(count(cl, v6("2001:db8::2")), 0);
    char text[64];
    for (int i = 0; i < 5000; i++) {
        snprintf(text, sizeof text, "10.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
        CHECK_EQ_INT(add(cl, v4(text), +1), MD_OK);
    }
    for (int i = 0; i < 5000; i += 7) {
        snprintf(text, sizeof text, "10.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
        CHECK_EQ_INT(count(cl, v4(text)), 1);
    }
    CHECK_EQ_INT(count(cl, v6("2001:db8::1")), 1);
    /* Non-IP peers are not counted and always allowed. */
    struct sockaddr_storage unix_peer;
    memset(&unix_peer, 0, sizeof unix_peer);
    unix_peer.ss_family = AF_UNIX;
    CHECK_EQ_INT(add(cl, unix_peer, +1), MD_OK);
    CHECK(allowed(cl, unix_peer));
    md_connlimit_free(cl); /* frees every remaining entry (ASan checks) */
}

int main(void)
{
    test_parse();
    test_match();
    test_tenant_trusted();
    test_connlimit();
    return check_report();
}
