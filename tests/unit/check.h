/*
 * check.h — a minimal assertion kit for memoryd's C unit tests.
 *
 *   CHECK(cond);                       a boolean
 *   CHECK_EQ_INT(got, want);           integers
 *   CHECK_MEM(got, got_len, "want");   bytes against a C string literal
 *   CHECK_BUF(got, got_len, want, n);  bytes against bytes of a run-time length
 *   return check_report();             at the end of main()
 *
 * A failed check prints file:line and both values and the test goes on;
 * check_report() prints a summary and returns the exit status.
 */
#ifndef MD_TEST_CHECK_H
#define MD_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

static void check_show(const char *label, const char *p, size_t n)
{
    fprintf(stderr, "    %s (%zu bytes): \"", label, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\n')
            fputs("\\n", stderr);
        else if (c == '\t')
            fputs("\\t", stderr);
        else if (c < 0x20 || c == 0x7f)
            fprintf(stderr, "\\x%02x", c);
        else
            fputc(c, stderr);
    }
    fputs("\"\n", stderr);
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) {                                                                             \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_INT(got, want)                                                                    \
    do {                                                                                           \
        long long g_ = (long long)(got), w_ = (long long)(want);                                   \
        check_count++;                                                                             \
        if (g_ != w_) {                                                                            \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #got, g_,    \
                    w_);                                                                           \
        }                                                                                          \
    } while (0)

#define CHECK_MEM(got, got_len, want)                                                              \
    do {                                                                                           \
        const char *g_ = (const char *)(got);                                                      \
        size_t gl_ = (size_t)(got_len);                                                            \
        size_t wl_ = sizeof(want) - 1;                                                             \
        check_count++;                                                                             \
        if (gl_ != wl_ || (gl_ && memcmp(g_, want, wl_) != 0)) {                                   \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: %s differs\n", __FILE__, __LINE__, #got);                      \
            check_show("got ", g_ ? g_ : "", g_ ? gl_ : 0);                                        \
            check_show("want", want, wl_);                                                         \
        }                                                                                          \
    } while (0)

/* Bytes against bytes of a run-time length. */
#define CHECK_BUF(got, got_len, want, want_len)                                                    \
    do {                                                                                           \
        const char *gb_ = (const char *)(got);                                                     \
        size_t gbl_ = (size_t)(got_len), wbl_ = (size_t)(want_len);                                \
        check_count++;                                                                             \
        if (gbl_ != wbl_ || (gbl_ && memcmp(gb_, (want), wbl_) != 0)) {                            \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: %s differs\n", __FILE__, __LINE__, #got);                      \
            check_show("got ", gb_ ? gb_ : "", gb_ ? gbl_ : 0);                                    \
            check_show("want", (want), wbl_);                                                      \
        }                                                                                          \
    } while (0)

#define CHECK_STR(got, want) CHECK_MEM((got), strlen(got), want)

static int check_report(void)
{
    fprintf(stderr, "%d checks, %d failed\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}

#endif
