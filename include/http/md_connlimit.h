/*
 * md_connlimit.h — open connections counted per client IP address, so that
 * one client (a slowloris, a runaway harness) cannot take every connection
 * slot (--max-connections-per-ip).
 *
 * Two bounds: up to `per_ip` connections an address is served; beyond
 * that, up to twice `per_ip`, a connection is let in only to be answered
 * 503 and closed (the HTTP layer tells them apart by the count that
 * md_connlimit_add() returns); beyond twice `per_ip` md_connlimit_allowed()
 * is false and the connection is closed at once, unanswered.
 *
 * The HTTP layer asks md_connlimit_allowed() before it accepts a connection
 * and calls md_connlimit_add(+1) when the connection starts and (-1) when it
 * closes. IPv4 clients seen on an IPv6 socket (::ffff:a.b.c.d) count as their
 * IPv4 address. Thread-safe (one mutex).
 *
 * Ownership: md_connlimit_new() allocates; md_connlimit_free() frees the
 * table and every entry. Errors: md_connlimit_new() returns NULL when out of
 * memory; md_connlimit_add() of +1 returns MD_ENOMEM when it cannot record
 * the address (the caller then refuses the connection).
 */
#ifndef MD_CONNLIMIT_H
#define MD_CONNLIMIT_H

#include <sys/socket.h>

#include "base/md_err.h"

struct md_connlimit;

/* A table allowing `per_ip` (>= 1) connections per address. */
struct md_connlimit *md_connlimit_new(unsigned per_ip);
void md_connlimit_free(struct md_connlimit *cl);

/* True when the address has fewer than twice `per_ip` connections open. */
int md_connlimit_allowed(struct md_connlimit *cl, const struct sockaddr *sa);

/* Count a connection of `sa` opened (+1) or closed (-1). After an open,
 * *open (unless NULL) is the address's count with it (0 when not counted:
 * not an IP address, or an error); more than `per_ip` means over the limit. */
enum md_err md_connlimit_add(struct md_connlimit *cl, const struct sockaddr *sa, int delta,
                             unsigned *open);

/* Connections open from `sa` (for tests). */
unsigned md_connlimit_count(struct md_connlimit *cl, const struct sockaddr *sa);

#endif
