/*
 * md_log.h — structured logs: one JSON object per line on stderr.
 *
 * Build a line with md_log_begin(), add fields, then md_log_end() writes it
 * with a single write(2) (lines from different threads never interleave).
 * Never log file contents, paths a client sent, or secrets.
 *
 * Ownership: a struct md_logline lives on the caller's stack; md_log_end()
 * frees what it allocated. Logging never fails loudly: on allocation
 * failure the line is dropped.
 */
#ifndef MD_LOG_H
#define MD_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "base/md_buf.h"

enum md_log_level { MD_LOG_ERROR = 0, MD_LOG_WARN = 1, MD_LOG_INFO = 2, MD_LOG_DEBUG = 3 };

void md_log_set_level(enum md_log_level level);
int md_log_enabled(enum md_log_level level);
/* Parse "error", "warn", "info", "debug"; -1 when unknown. */
int md_log_level_parse(const char *s);

struct md_logline {
    struct md_buf b;
    int on;
    int urgent; /* error or warning: written without waiting for more lines */
};

/* Keys are identifiers written in the code ([a-z_]): they go out as they
 * are; values are escaped. */
void md_log_begin(struct md_logline *l, enum md_log_level level, const char *msg);
void md_log_str(struct md_logline *l, const char *key, const char *val);
void md_log_strn(struct md_logline *l, const char *key, const char *val, size_t len);
void md_log_int(struct md_logline *l, const char *key, int64_t val);
void md_log_bool(struct md_logline *l, const char *key, int val);
void md_log_end(struct md_logline *l);

/* Write lines from a background thread from now on (memoryd's request
 * path then never waits for write(2)); returns -1 when it cannot start.
 * md_log_stop_async() writes what is pending and goes back to direct
 * writes. Without it every line is written at once (tests, tools). */
int md_log_start_async(void);
void md_log_stop_async(void);

/* One-shot: {"msg":msg,"detail":detail}. */
void md_log_msg(enum md_log_level level, const char *msg, const char *detail);

#endif
