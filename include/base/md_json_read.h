/*
 * md_json_read.h — a fast reader for the JSON a memory command is sent in.
 *
 * jansson stays the parser of record: md_json_read() handles the common
 * shapes of a request body (objects, arrays, strings with any escapes,
 * integers, true/false/null, a little nesting) in one pass with a 16-byte
 * scan over string contents, and builds the same jansson value. Anything
 * else — a real number, an integer of 19 digits or more, nesting deeper
 * than MD_JSON_READ_MAX_DEPTH, and every input jansson would reject — makes
 * it decline (return NULL), and the caller parses with json_loadb(), which
 * then gives the value or the exact error message.
 *
 * The promise, checked by tests/unit/test_json_read.c and the differential
 * fuzz target tests/fuzz/fuzz_json.c: whenever md_json_read() returns a
 * value, json_loadb(s, n, MD_JSON_READ_FLAGS, ...) returns one equal to it
 * (json_equal, and the same key order in every object).
 *
 * Ownership: the caller owns the returned value (json_decref). No error
 * detail is given: a NULL only means "ask jansson".
 */
#ifndef MD_JSON_READ_H
#define MD_JSON_READ_H

#include <jansson.h>
#include <stddef.h>

/* The jansson flags whose behaviour md_json_read() reproduces. */
#define MD_JSON_READ_FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY)

/* Deeper nesting than this (containers inside containers) declines. */
#define MD_JSON_READ_MAX_DEPTH 16

/* The value of s[0..n) (a top-level object), or NULL to decline. */
json_t *md_json_read(const char *s, size_t n);

#endif
