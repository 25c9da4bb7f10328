/*
 * md_sha256.h — SHA-256 of file contents and requests (OpenSSL's libcrypto).
 *
 * Thread-safe. No allocation by the caller: digests are 32 bytes, their hex
 * form 64 characters plus a NUL.
 *
 * Errors: md_sha256() returns MD_OK, or MD_ENOMEM when libcrypto fails (it
 * allocates internally); md_sha256_parse_hex() returns 0 or -1.
 */
#ifndef MD_SHA256_H
#define MD_SHA256_H

#include <stddef.h>

#include "base/md_err.h"

#define MD_SHA256_LEN 32
#define MD_SHA256_HEX 64 /* 2 * MD_SHA256_LEN */

/* out = SHA-256 of the `n` bytes at `p` (p may be NULL when n is 0). */
enum md_err md_sha256(const void *p, size_t n, unsigned char out[MD_SHA256_LEN]);

/* The same over several pieces, as if they were one string. */
struct md_sha256_part {
    const void *p;
    size_t n;
};
enum md_err md_sha256_parts(const struct md_sha256_part *parts, size_t count,
                            unsigned char out[MD_SHA256_LEN]);

/* Lowercase hex of a digest into `hex` (MD_SHA256_HEX + 1 bytes, NUL-terminated). */
void md_sha256_hex(const unsigned char d[MD_SHA256_LEN], char hex[MD_SHA256_HEX + 1]);

/* A digest from MD_SHA256_HEX hex digits (either case); -1 if malformed. */
int md_sha256_parse_hex(const char *hex, size_t len, unsigned char out[MD_SHA256_LEN]);

#endif
