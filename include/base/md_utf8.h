/*
 * md_utf8.h — UTF-8 checks shared by path canonicalisation, JSON writing
 * and view truncation. Strict: no overlong forms, no surrogates, nothing
 * above U+10FFFF.
 */
#ifndef MD_UTF8_H
#define MD_UTF8_H

#include <stddef.h>

/* Length (1-4) of the valid UTF-8 sequence starting at s (n > 0 bytes
 * left), or 0 when it is not valid. */
size_t md_utf8_seq(const char *s, size_t n);

/* True when s[0..n) is valid UTF-8. */
int md_utf8_valid(const char *s, size_t n);

/* Length of the longest prefix of s[0..n) that does not split a UTF-8
 * sequence (s is assumed valid UTF-8). */
size_t md_utf8_cut(const char *s, size_t n);

/* True when s[0..n) (valid UTF-8) is in Unicode Normalization Form C (or
 * when that cannot be decided for want of memory). */
int md_utf8_is_nfc(const char *s, size_t n);

#endif
