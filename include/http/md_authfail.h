/*
 * md_authfail.h — failed authentication attempts counted per client
 * address (src/http/authfail.c), to slow down the guessing of API keys.
 *
 * A fixed table of MD_AUTHFAIL_SLOTS entries (bounded memory, whatever the
 * number of clients), 4-way set-associative by a hash of the address. An
 * address that failed `max` times within `window` seconds (counted from its
 * first failure) is blocked until that window ends. When a set is full, the
 * entry whose window ends first is replaced (so a flood of addresses can
 * only make the table forget, never grow).
 *
 * Thread-safe (one mutex). The table is owned by its creator:
 * md_authfail_new / md_authfail_free.
 */
#ifndef MD_AUTHFAIL_H
#define MD_AUTHFAIL_H

#include <stdint.h>
#include <sys/socket.h>

#define MD_AUTHFAIL_SLOTS 4096

struct md_authfail;

/* NULL when out of memory. */
struct md_authfail *md_authfail_new(unsigned max, unsigned window);
void md_authfail_free(struct md_authfail *t);

/* Seconds until `addr` may try again at time `now` (seconds); 0: not
 * blocked. */
unsigned md_authfail_blocked(struct md_authfail *t, const struct sockaddr *addr, int64_t now);

/* Count one failure of `addr` at `now`. */
void md_authfail_note(struct md_authfail *t, const struct sockaddr *addr, int64_t now);

#endif
