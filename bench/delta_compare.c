/*
 * delta_compare.c — issue 26, point 1: the splice delta memoryd keeps a
 * version as (md_delta.h) against zstd's prefix mode (ZSTD_CCtx_refPrefix:
 * the older text compressed with its successor as the dictionary), in
 * bytes per version and in time to make one, on notes of prose.
 *
 * The notes: 300 of 10,752 bytes, made of the lines of the files given
 * (README.md and the docs: bench/storage.mjs's corpus), cycled. Each note
 * is edited 20 times by one kind of edit (a fixed pseudo-random sequence):
 *   line       one line replaced by a line that names the edit (what
 *              bench/storage.mjs's str_replace does);
 *   lines5     five lines replaced so;
 *   paragraph  a paragraph of about 400 bytes of prose inserted;
 *   rewrite    every tenth line replaced (a file written again whole with
 *              small changes throughout).
 * For each version (the text before an edit, against the text after it):
 * the splice's size (md_delta_splice_size), what memoryd keeps
 * (md_delta_make: the splice, or zstd where smaller beyond 256 bytes, read
 * back with md_delta_apply), zstd's at levels 1, 3 and 19 (each
 * decompressed and compared, so that a size is never of a wrong delta),
 * and the mean time to make each. One line per kind and method:
 *   {"edit":"line","method":"splice","bytes_per_version":B,"us_per_version":U}
 *
 *   delta_compare FILE...
 *
 * Exit: 0; 1 when zstd failed or gave back another text; 2 on bad input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "base/md_buf.h"
#include "store/md_delta.h"

#define NOTES 300
#define SIZE  10752
#define EDITS 20
#define CAP   ((size_t)SIZE * 4)

static char *corpus;
static size_t corpus_len, corpus_at;
static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The corpus's next line (with its newline), cycled. */
static size_t next_line(const char **line)
{
    if (corpus_at >= corpus_len)
        corpus_at = 0;
    const char *p = corpus + corpus_at;
    const char *nl = memchr(p, '\n', corpus_len - corpus_at);
    size_t n = nl ? (size_t)(nl - p) + 1 : corpus_len - corpus_at;
    corpus_at += n;
    *line = p;
    return n;
}

/* Offsets of the lines of text[0..n): starts[i], at most max. */
static size_t lines_of(const char *text, size_t n, size_t *starts, size_t max)
{
    size_t k = 0;
    for (size_t at = 0; at < n && k < max;) {
        starts[k++] = at;
        const char *nl = memchr(text + at, '\n', n - at);
        at = nl ? (size_t)(nl - text) + 1 : n;
    }
    return k;
}

/* Line `k` of cur replaced by one that names edit `e`, into out. */
static size_t replace_line(const char *cur, size_t n, size_t k, int e, char *out)
{
    size_t starts[4096];
    size_t lines = lines_of(cur, n, starts, 4096);
    if (lines == 0) { /* an empty text: nothing to replace */
        memcpy(out, cur, n);
        return n;
    }
    k %= lines;
    size_t end = k + 1 < lines ? starts[k + 1] : n;
    size_t len = 0;
    memcpy(out, cur, starts[k]);
    len = starts[k];
    int w = snprintf(out + len, 120, "edited %d times, line %zu: %.40s\n", e, k, cur + starts[k]);
    for (int i = 0; i < w; i++)
        if (out[len + (size_t)i] == '\n' && i != w - 1)
            out[len + (size_t)i] = ' ';
    len += (size_t)w;
    memcpy(out + len, cur + end, n - end);
    return len + n - end;
}

/* One edit of `kind` to cur[0..n) into out; returns the new length. */
static size_t edit(const char *kind, const char *cur, size_t n, int e, char *out)
{
    if (strcmp(kind, "line") == 0)
        return replace_line(cur, n, (size_t)next_rand(), e, out);
    if (strcmp(kind, "lines5") == 0 || strcmp(kind, "rewrite") == 0) {
        static char tmp[CAP];
        size_t len = n;
        memcpy(tmp, cur, n);
        memcpy(out, cur, n);
        size_t starts[4096];
        size_t lines = lines_of(cur, n, starts, 4096);
        int times = strcmp(kind, "lines5") == 0 ? 5 : (int)(lines / 10);
        for (int t = 0; t < times; t++) {
            size_t k = strcmp(kind, "lines5") == 0 ? (size_t)next_rand() : (size_t)t * 10;
            len = replace_line(tmp, len, k, e, out);
            if (len > CAP / 2)
                break;
            memcpy(tmp, out, len);
        }
        return len;
    }
    /* paragraph: about 400 bytes of prose inserted at a line's start */
    size_t starts[4096];
    size_t lines = lines_of(cur, n, starts, 4096);
    size_t at = lines ? starts[next_rand() % lines] : 0, len = at;
    memcpy(out, cur, at);
    while (len - at < 400) {
        const char *l;
        size_t m = next_line(&l);
        memcpy(out + len, l, m);
        len += m;
    }
    memcpy(out + len, cur + at, n - at);
    return len + n - at;
}

struct tally {
    double bytes, us;
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: delta_compare FILE...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f)
            return 2;
        char buf[65536];
        size_t r;
        while ((r = fread(buf, 1, sizeof buf, f)) > 0) {
            char *p = realloc(corpus, corpus_len + r);
            if (!p)
                return 1;
            corpus = p;
            memcpy(corpus + corpus_len, buf, r);
            corpus_len += r;
        }
        fclose(f);
    }
    if (!corpus_len)
        return 2;
    static const char *const kinds[] = {"line", "lines5", "paragraph", "rewrite"};
    static const int levels[] = {1, 3, 19};
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    static char a[CAP], b[CAP], z[CAP], back[CAP];
    struct md_buf d, again;
    md_buf_init(&d, CAP);
    md_buf_init(&again, CAP);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        struct tally splice = {0}, kept = {0}, zs[3] = {{0}};
        long versions = 0;
        corpus_at = 0;
        for (int note = 0; note < NOTES; note++) {
            size_t n = 0;
            while (n < SIZE) {
                const char *l;
                size_t m = next_line(&l);
                if (n + m > SIZE)
                    m = SIZE - n;
                memcpy(a + n, l, m);
                n += m;
            }
            for (int e = 0; e < EDITS; e++) {
                size_t m = edit(kinds[k], a, n, e, b);
                if (m > CAP / 2) /* keep the note within the buffers */
                    m = CAP / 2;
                /* the version: a (before), against b (after) */
                double t0 = now_us();
                splice.bytes += (double)md_delta_splice_size(a, n, b, m);
                splice.us += now_us() - t0;
                t0 = now_us();
                md_buf_reset(&d);
                if (md_delta_make(a, n, b, m, &d) != MD_OK)
                    return 1;
                kept.us += now_us() - t0;
                kept.bytes += (double)d.len;
                md_buf_reset(&again);
                if (md_delta_apply(b, m, d.data, d.len, &again) != MD_OK || again.len != n ||
                    memcmp(again.data, a, n) != 0) {
                    fprintf(stderr, "delta_compare: md_delta_apply gave back another text\n");
                    return 1;
                }
                for (int v = 0; v < 3; v++) {
                    t0 = now_us();
                    ZSTD_CCtx_reset(cc, ZSTD_reset_session_and_parameters);
                    ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, levels[v]);
                    ZSTD_CCtx_refPrefix(cc, b, m);
                    size_t zn = ZSTD_compress2(cc, z, sizeof z, a, n);
                    zs[v].us += now_us() - t0;
                    if (ZSTD_isError(zn))
                        return 1;
                    zs[v].bytes += (double)zn;
                    ZSTD_DCtx_reset(dc, ZSTD_reset_session_and_parameters);
                    ZSTD_DCtx_refPrefix(dc, b, m);
                    size_t bn = ZSTD_decompressDCtx(dc, back, sizeof back, z, zn);
                    if (ZSTD_isError(bn) || bn != n || memcmp(back, a, n) != 0) {
                        fprintf(stderr, "delta_compare: zstd gave back another text\n");
                        return 1;
                    }
                }
                memcpy(a, b, m);
                n = m;
                versions++;
            }
        }
        printf("{\"edit\":\"%s\",\"method\":\"splice\",\"bytes_per_version\":%.1f,"
               "\"us_per_version\":%.2f}\n",
               kinds[k], splice.bytes / (double)versions, splice.us / (double)versions);
        printf("{\"edit\":\"%s\",\"method\":\"memoryd\",\"bytes_per_version\":%.1f,"
               "\"us_per_version\":%.2f}\n",
               kinds[k], kept.bytes / (double)versions, kept.us / (double)versions);
        for (int v = 0; v < 3; v++)
            printf("{\"edit\":\"%s\",\"method\":\"zstd-%d\",\"bytes_per_version\":%.1f,"
                   "\"us_per_version\":%.2f}\n",
                   kinds[k], levels[v], zs[v].bytes / (double)versions,
                   zs[v].us / (double)versions);
    }
    md_buf_free(&d);
    md_buf_free(&again);
    ZSTD_freeCCtx(cc);
    ZSTD_freeDCtx(dc);
    free(corpus);
    return 0;
}
