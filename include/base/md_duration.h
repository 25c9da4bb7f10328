/*
 * md_duration.h — durations as operators and clients write them: a whole
 * number and a unit, "90d", "12h", "30m", "2s", "500ms" (--expire-after,
 * --expire-granularity, the limits API's "expire_after", GET
 * /v1/expiring?within=).
 *
 * Nothing allocated. Errors: -1 from md_duration_parse for anything else
 * (no sign, no space, no fraction, no unit missing, 0, or more than
 * MD_DURATION_MAX_MS).
 */
#ifndef MD_DURATION_H
#define MD_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* 100 years of 365 days, in milliseconds. */
#define MD_DURATION_MAX_MS ((int64_t)100 * 365 * 24 * 3600 * 1000)

/* The `n` bytes at `s` as milliseconds (> 0): 0, or -1. */
int md_duration_parse(const char *s, size_t n, int64_t *ms);

/* `ms` (> 0) in the largest unit that holds it exactly ("90d", "1500ms"),
 * into `buf` (at least 24 bytes). */
void md_duration_format(int64_t ms, char *buf, size_t len);

#endif
