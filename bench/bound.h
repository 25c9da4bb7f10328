/*
 * bound.h — what the two bounds of issue 26's point 4 share
 * (bench/defaults_bound.c with SQLite, bench/defaults_bound_pg.c with
 * PostgreSQL): their arguments, the workloads' text, the clock and the JSON
 * line each prints.
 *
 *   PROG WHERE SECONDS BATCH create|str_replace bare|defaults
 */
#ifndef BOUND_H
#define BOUND_H

#include <stddef.h>
#include <stdint.h>

#define BOUND_FILES    512  /* the str_replace workload's files, ids 1..512 */
#define BOUND_TEXT_MAX 2048 /* room for any text of a workload (1 KiB) */

struct bound_args {
    const char *where;    /* DIR (SQLite) or URI (PostgreSQL) */
    const char *workload; /* "create" or "str_replace" */
    const char *mode;     /* "bare" or "defaults" */
    double seconds;
    long batch;
    int create, defaults;
};

/* Parse argv into *a: 0, or 2 (the usage printed, as `prog`, with `where`
 * naming the first argument) on bad arguments. */
int bound_args(int argc, char **argv, const char *prog, const char *where, struct bound_args *a);

/* Seconds on the monotonic clock. */
double bound_now_s(void);

/* bench/lib.mjs's kibWith(marker): 16 lines of 63 letters, the ninth
 * `marker` padded with dots (1024 bytes), into `out`; returns its length. */
size_t bound_kib_with(char *out, const char *marker);

/* The workloads' texts: the 512 files' as they are now and a created
 * file's (every create writes the same). */
struct bound_texts {
    char text[BOUND_FILES][BOUND_TEXT_MAX]; /* by id - 1 */
    size_t len[BOUND_FILES];
    char created[BOUND_TEXT_MAX]; /* kibWith('new') */
    size_t created_len;
};

/* Each of the 512 files kibWith('state=on'), a created one kibWith('new'). */
void bound_texts_init(struct bound_texts *t);

/* The n-th str_replace (from 0): the file in turn, id n % 512 + 1 (returned),
 * its `state=on` and `state=off` swapped in t->text; its text before copied
 * to `old` (BOUND_TEXT_MAX bytes), its length (which stays) to *len. */
int64_t bound_str_replace(struct bound_texts *t, int64_t n, char *old, size_t *len);

/* The JSON line of a run:
 *   {"workload":"str_replace","mode":"defaults","batch":16,"commands":N,
 *    "seconds":S,"per_sec":R} */
void bound_report(const struct bound_args *a, int64_t commands, double took);

#endif
