/*
 * md_netaddr.h — lists of IP networks (CIDR) and matching a peer address
 * against them; used for the trusted-proxy setting.
 *
 * A list is parsed from text such as "127.0.0.1, 10.0.0.0/8, ::1, fd00::/8"
 * (a bare address is a single host). IPv4 clients seen on an IPv6 socket
 * (::ffff:a.b.c.d) match IPv4 networks.
 *
 * Also: listen addresses ("ADDR:PORT", an address and a port as a socket
 * address to bind).
 *
 * Ownership: a list is a fixed-size value; nothing is allocated.
 * Errors: md_cidr_list_parse() returns -1 with a reason in `why`.
 */
#ifndef MD_NETADDR_H
#define MD_NETADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define MD_CIDR_MAX 32 /* networks in one list */

struct md_cidr {
    int family;       /* AF_INET or AF_INET6 */
    uint8_t addr[16]; /* network address (4 bytes used for IPv4) */
    unsigned prefix;  /* 0..32 or 0..128 */
};

struct md_cidr_list {
    size_t n;
    struct md_cidr net[MD_CIDR_MAX];
};

/* Parse a comma-separated list (spaces allowed). An empty list is valid. */
int md_cidr_list_parse(const char *text, struct md_cidr_list *out, char *why, size_t why_len);

/* True when `sa` (AF_INET or AF_INET6) lies in one of the list's networks. */
int md_cidr_list_match(const struct md_cidr_list *list, const struct sockaddr *sa);

/* The address of `sa` as (family, bytes): AF_INET with 4 bytes (IPv4, also
 * when v4-mapped in IPv6) or AF_INET6 with 16. -1 for other families/NULL. */
int md_sockaddr_key(const struct sockaddr *sa, int *family, uint8_t addr[16]);

/* True when `sa` is on this machine: 127.0.0.0/8 (also v4-mapped) or ::1. */
int md_sockaddr_is_loopback(const struct sockaddr *sa);

/* Write the address of `sa` as text ("?" when unknown); `out` needs 46 bytes. */
void md_sockaddr_text(const struct sockaddr *sa, char out[46]);

/* Split "ADDR:PORT" or "[IPv6]:PORT" into the address (into addr, at most
 * `len` bytes with its NUL) and the port (0..65535). Returns 0, or -1 when
 * it is not of that form. */
int md_split_listen(const char *s, char *addr, size_t len, unsigned *port);

/* The socket address of IPv4 or IPv6 address text `addr` and `port`, into
 * `out` (zeroed first); *v6: whether it is IPv6. Returns 0, or -1 when
 * `addr` is neither. */
int md_sockaddr_of(const char *addr, unsigned port, struct sockaddr_storage *out, int *v6);

#endif
