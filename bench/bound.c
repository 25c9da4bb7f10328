/*
 * bound.c — what the two bounds of issue 26's point 4 share (bound.h).
 */
#include "bound.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int bound_args(int argc, char **argv, const char *prog, const char *where, struct bound_args *a)
{
    char *end1 = NULL, *end2 = NULL;
    int ok = argc == 6 && (strcmp(argv[4], "create") == 0 || strcmp(argv[4], "str_replace") == 0) &&
             (strcmp(argv[5], "bare") == 0 || strcmp(argv[5], "defaults") == 0);
    if (ok) {
        a->where = argv[1];
        a->seconds = strtod(argv[2], &end1);
        a->batch = strtol(argv[3], &end2, 10);
        a->workload = argv[4];
        a->mode = argv[5];
        a->create = strcmp(argv[4], "create") == 0;
        a->defaults = strcmp(argv[5], "defaults") == 0;
        ok = !*end1 && !*end2 && a->seconds > 0 && a->batch > 0 && a->batch <= 100000;
    }
    if (!ok)
        fprintf(stderr, "usage: %s %s SECONDS BATCH create|str_replace bare|defaults\n", prog,
                where);
    return ok ? 0 : 2;
}

double bound_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

size_t bound_kib_with(char *out, const char *marker)
{
    static const char letters[] = "abcdefghi";
    size_t n = 0;
    size_t m = strlen(marker);
    for (int l = 0; l < 16; l++) {
        for (size_t k = 0; k < 63; k++) {
            const char *c = l != 8 ? &letters[k % 9] : k < m ? &marker[k] : ".";
            out[n + k] = *c;
        }
        n += 63;
        out[n++] = '\n';
    }
    return n;
}

void bound_texts_init(struct bound_texts *t)
{
    for (size_t i = 0; i < BOUND_FILES; i++)
        t->len[i] = bound_kib_with(t->text[i], "state=on");
    t->created_len = bound_kib_with(t->created, "new");
}

int64_t bound_str_replace(struct bound_texts *t, int64_t n, char *old, size_t *len)
{
    int64_t id = n % BOUND_FILES + 1;
    char *text = t->text[id - 1];
    *len = t->len[id - 1];
    memcpy(old, text, *len);
    int on = memcmp(text + (size_t)8 * 64, "state=on", 8) == 0; /* the ninth line's start */
    bound_kib_with(text, on ? "state=off" : "state=on");
    return id;
}

void bound_report(const struct bound_args *a, int64_t commands, double took)
{
    printf("{\"workload\":\"%s\",\"mode\":\"%s\",\"batch\":%ld,\"commands\":%lld,\"seconds\":%.3f,"
           "\"per_sec\":%.1f}\n",
           a->workload, a->mode, a->batch, (long long)commands, took, (double)commands / took);
}
