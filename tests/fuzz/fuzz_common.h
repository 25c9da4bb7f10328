/*
 * fuzz_common.h — small helpers shared by the libFuzzer targets in
 * tests/fuzz/: a check that aborts (so libFuzzer records a crash artifact)
 * after printing what differed, a growable byte string, and models that are
 * deliberately written independently of src/ (a UTF-8 validator straight
 * from the Unicode table, a line splitter).
 *
 * Targets are built with -DNDEBUG (RelWithDebInfo), so they never rely on
 * assert(): FUZZ_CHECK always runs.
 */
#ifndef MD_FUZZ_COMMON_H
#define MD_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static inline void fuzz_show(const char *label, const char *p, size_t n)
{
    fprintf(stderr, "  %s (%zu bytes): \"", label, n);
    for (size_t i = 0; i < n && i < 4000; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\n')
            fputs("\\n", stderr);
        else if (c == '\t')
            fputs("\\t", stderr);
        else if (c == '"' || c == '\\')
            fprintf(stderr, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(stderr, "\\x%02x", c);
        else
            fputc(c, stderr);
    }
    fputs(n > 4000 ? "\"...\n" : "\"\n", stderr);
}

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed\n", __FILE__, __LINE__, #cond);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Two byte strings must be equal; prints both before aborting. */
#define FUZZ_CHECK_BYTES(got, got_len, want, want_len)                                             \
    do {                                                                                           \
        const char *g_ = (const char *)(got), *w_ = (const char *)(want);                          \
        size_t gl_ = (size_t)(got_len), wl_ = (size_t)(want_len);                                  \
        if (gl_ != wl_ || (gl_ && (!g_ || !w_ || memcmp(g_, w_, gl_) != 0))) {                     \
            fprintf(stderr, "%s:%d: %s differs from %s\n", __FILE__, __LINE__, #got, #want);       \
            fuzz_show("got ", g_ ? g_ : "", g_ ? gl_ : 0);                                         \
            fuzz_show("want", w_ ? w_ : "", w_ ? wl_ : 0);                                         \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* ---- a growable byte string for models (aborts when out of memory) ---- */

struct fstr {
    char *p;
    size_t n, cap;
};

static inline void fstr_add(struct fstr *s, const void *p, size_t n)
{
    if (!s->p || s->n + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 64;
        while (cap < s->n + n + 1)
            cap *= 2;
        s->p = realloc(s->p, cap);
        FUZZ_CHECK(s->p != NULL);
        s->cap = cap;
    }
    if (n)
        memcpy(s->p + s->n, p, n);
    s->n += n;
    s->p[s->n] = '\0';
}

static inline void fstr_puts(struct fstr *s, const char *z)
{
    fstr_add(s, z, strlen(z));
}

static inline void fstr_printf_lineno(struct fstr *s, long long n)
{
    char tmp[32];
    int k = snprintf(tmp, sizeof tmp, "%6lld\t", n);
    fstr_add(s, tmp, (size_t)k);
}

static inline void fstr_free(struct fstr *s)
{
    free(s->p);
    s->p = NULL;
    s->n = s->cap = 0;
}

/* ---- independent models ---- */

/* Valid UTF-8 per the Unicode Standard, Table 3-7 (well-formed byte
 * sequences), written as the table reads. */
static inline int fuzz_utf8_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k;
        unsigned lo = 0x80, hi = 0xBF; /* range of the second byte */
        if (c <= 0x7F) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            k = 2;
        } else if (c == 0xE0) {
            k = 3, lo = 0xA0;
        } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
            k = 3;
        } else if (c == 0xED) {
            k = 3, hi = 0x9F;
        } else if (c == 0xF0) {
            k = 4, lo = 0x90;
        } else if (c >= 0xF1 && c <= 0xF3) {
            k = 4;
        } else if (c == 0xF4) {
            k = 4, hi = 0x8F;
        } else {
            return 0;
        }
        if (n - i < k || s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t j = 2; j < k; j++)
            if (s[i + j] < 0x80 || s[i + j] > 0xBF)
                return 0;
        i += k;
    }
    return 1;
}

/* Lines of a text split on '\n' exactly like JavaScript's split('\n'). */
struct flines {
    const char **p; /* start of each line */
    size_t *n;      /* its length */
    size_t count;
};

static inline void flines_split(struct flines *l, const char *s, size_t n)
{
    size_t count = 1;
    for (size_t i = 0; i < n; i++)
        count += s[i] == '\n';
    l->p = malloc(count * sizeof *l->p);
    l->n = malloc(count * sizeof *l->n);
    FUZZ_CHECK(l->p && l->n);
    l->count = count;
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '\n') {
            l->p[k] = s + start;
            l->n[k] = i - start;
            k++;
            start = i + 1;
        }
    }
}

static inline void flines_free(struct flines *l)
{
    free(l->p);
    free(l->n);
}

#endif
