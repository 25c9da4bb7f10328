/*
 * md_json.h — writing JSON text: string escaping and the tool_result body.
 *
 * Parsing is jansson's job (src/cmd/parse.c, with md_json_read.h's fast
 * reader in front of it); writing is done here by hand into
 * an md_buf because a response is built from text pieces and one pass with
 * no intermediate json_t is both simpler and faster.
 *
 * Escaping always yields valid JSON: invalid UTF-8 bytes become U+FFFD.
 */
#ifndef MD_JSON_H
#define MD_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "base/md_buf.h"

/* Length of the longest prefix of s[0..n) that a JSON string holds as is:
 * no control character, '"', '\\' or byte 0x80 and above (sixteen bytes
 * at a time). Also the string scan of md_json_read(). */
size_t md_json_plain_run(const char *s, size_t n);

/* Append s[0..n) as a JSON string literal, quotes included. On error
 * (MD_ETOOBIG, MD_ENOMEM) the buffer is left as it was. */
enum md_err md_json_put_string(struct md_buf *b, const char *s, size_t n);

/* Unix time `ms` as a JSON string in RFC 3339, UTC, with milliseconds
 * ("2026-01-02T03:04:05.678Z"). */
enum md_err md_json_put_time(struct md_buf *b, int64_t ms);

/* A string, or null when `s` is NULL. */
enum md_err md_json_put_string_or_null(struct md_buf *b, const char *s, size_t n);

/* Append {"type":"tool_result"[,"tool_use_id":id],"content":...,"is_error":...}. */
enum md_err md_json_tool_result(struct md_buf *b, const char *tool_use_id, size_t id_len,
                                const char *content, size_t content_len, int is_error);

#endif
