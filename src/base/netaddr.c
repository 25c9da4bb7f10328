/* netaddr.c — CIDR lists and address matching (see md_netaddr.h). */
#include "base/md_netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parse one "ADDR" or "ADDR/PREFIX" of length n. */
static int parse_one(const char *s, size_t n, struct md_cidr *c, char *why, size_t why_len)
{
    char text[64];
    if (n == 0 || n >= sizeof text) {
        snprintf(why, why_len, "'%.*s' is not an IP address or network", (int)(n < 60 ? n : 60), s);
        return -1;
    }
    memcpy(text, s, n);
    text[n] = '\0';
    char *slash = strchr(text, '/');
    if (slash)
        *slash = '\0';
    memset(c, 0, sizeof *c);
    if (inet_pton(AF_INET, text, c->addr) == 1) {
        c->family = AF_INET;
        c->prefix = 32;
    } else if (inet_pton(AF_INET6, text, c->addr) == 1) {
        c->family = AF_INET6;
        c->prefix = 128;
    } else {
        snprintf(why, why_len, "'%s' is not an IP address", text);
        return -1;
    }
    if (slash) {
        const char *p = slash + 1;
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (*p < '0' || *p > '9' || *end || v > c->prefix) {
            snprintf(why, why_len, "'/%s' is not a prefix length for %s (0 to %u)", p, text,
                     c->prefix);
            return -1;
        }
        c->prefix = (unsigned)v;
    }
    return 0;
}

int md_cidr_list_parse(const char *text, struct md_cidr_list *out, char *why, size_t why_len)
{
    out->n = 0;
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *start = p;
        while (*p && *p != ',' && *p != ' ')
            p++;
        if (out->n == MD_CIDR_MAX) {
            snprintf(why, why_len, "more than %d networks", MD_CIDR_MAX);
            return -1;
        }
        if (parse_one(start, (size_t)(p - start), &out->net[out->n], why, why_len))
            return -1;
        out->n++;
    }
    return 0;
}

/* The first `bits` bits of a and b are equal. */
static int prefix_equal(const uint8_t *a, const uint8_t *b, unsigned bits)
{
    size_t whole = bits / 8;
    if (memcmp(a, b, whole) != 0)
        return 0;
    unsigned rest = bits % 8;
    if (!rest)
        return 1;
    uint8_t mask = (uint8_t)(0xFF << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

int md_sockaddr_key(const struct sockaddr *sa, int *family, uint8_t addr[16])
{
    if (!sa)
        return -1;
    if (sa->sa_family == AF_INET) {
        *family = AF_INET;
        memcpy(addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a6)) {
            *family = AF_INET;
            memcpy(addr, a6->s6_addr + 12, 4);
        } else {
            *family = AF_INET6;
            memcpy(addr, a6->s6_addr, 16);
        }
        return 0;
    }
    return -1;
}

int md_sockaddr_is_loopback(const struct sockaddr *sa)
{
    int family;
    uint8_t a[16];
    if (md_sockaddr_key(sa, &family, a) != 0)
        return 0;
    if (family == AF_INET)
        return a[0] == 127;
    static const uint8_t loop6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return memcmp(a, loop6, 16) == 0;
}

int md_cidr_list_match(const struct md_cidr_list *list, const struct sockaddr *sa)
{
    uint8_t addr[16];
    int family;
    if (md_sockaddr_key(sa, &family, addr))
        return 0;
    for (size_t i = 0; i < list->n; i++) {
        const struct md_cidr *c = &list->net[i];
        if (c->family == family && prefix_equal(addr, c->addr, c->prefix))
            return 1;
    }
    return 0;
}

void md_sockaddr_text(const struct sockaddr *sa, char out[46])
{
    const void *a = NULL;
    if (sa && sa->sa_family == AF_INET)
        a = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    else if (sa && sa->sa_family == AF_INET6)
        a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    if (!a || !inet_ntop(sa->sa_family, a, out, 46))
        snprintf(out, 46, "?");
}

int md_split_listen(const char *s, char *addr, size_t len, unsigned *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
        strlen(colon + 1) > 5)
        return -1;
    unsigned long p = strtoul(colon + 1, NULL, 10);
    const char *a = s;
    size_t n = (size_t)(colon - s);
    if (*a == '[') { /* [IPv6]:PORT */
        if (n < 3 || a[n - 1] != ']')
            return -1;
        a++;
        n -= 2;
    } else if (memchr(a, ':', n)) {
        return -1; /* an IPv6 address needs its brackets */
    }
    if (p > 65535 || n + 1 > len)
        return -1;
    memcpy(addr, a, n);
    addr[n] = '\0';
    *port = (unsigned)p;
    return 0;
}

int md_sockaddr_of(const char *addr, unsigned port, struct sockaddr_storage *out, int *v6)
{
    memset(out, 0, sizeof *out);
    struct sockaddr_in *a4 = (struct sockaddr_in *)out;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)out;
    *v6 = 0;
    if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        return 0;
    }
    if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *v6 = 1;
        return 0;
    }
    return -1;
}
