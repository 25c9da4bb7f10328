/*
 * md_uses.h — when files were last used, kept in memory for the expiry of
 * unused files (md_expiry.h): a view of a file records a use here (an
 * update of a bounded table keyed by tenant and path, under a mutex: no
 * statement on the request's thread), and the writer thread takes the uses
 * to write back (md_expiry_writeback). A use is to be written back when
 * it is at least the granularity later than what was last written for the
 * file, so a file's use is written at most once per granularity, and the
 * database's last use of a file is never more than the granularity older
 * than its last use here (plus the time until the writer takes it).
 *
 * The table holds at most `cap` files. A file whose use is written back
 * may be dropped to make room; when every file holds a use not yet
 * written, a new file's use is dropped (counted: md_uses_dropped).
 *
 * Ownership: md_uses_new allocates, md_uses_free frees; strings given are
 * copied. md_uses_take hands out copies the caller frees with
 * md_use_free. Thread-safe. Errors: none (out of memory drops a use).
 */
#ifndef MD_USES_H
#define MD_USES_H

#include <stddef.h>
#include <stdint.h>

struct md_uses;

/* A use to write back (md_uses_take). */
struct md_use {
    char *tenant;
    char *path;
    size_t len;
    int64_t used_ms;
};

/* NULL: out of memory. */
struct md_uses *md_uses_new(size_t cap, int64_t granularity_ms);
void md_uses_free(struct md_uses *u);

/* The file at `path` (canonical) of `tenant` was used at `now_ms`. */
void md_uses_record(struct md_uses *u, const char *tenant, const char *path, size_t len,
                    int64_t now_ms);

/* Its last use known here (unix ms), 0 when none. */
int64_t md_uses_last(struct md_uses *u, const char *tenant, const char *path, size_t len);

/* Up to `max` uses to write back, into `out` (each then counts as
 * written): how many. */
size_t md_uses_take(struct md_uses *u, struct md_use *out, size_t max);

/* Uses taken whose write-back failed: to be written back again. */
void md_uses_untake(struct md_uses *u, const struct md_use *v, size_t n);

/* Free what md_uses_take gave (n of them). */
void md_use_free(struct md_use *v, size_t n);

/* Uses dropped because the table was full of uses not yet written. */
unsigned long long md_uses_dropped(struct md_uses *u);

#endif
