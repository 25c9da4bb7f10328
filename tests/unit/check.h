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

/* The checks are functions, so that a test function of a hundred checks stays a flat list of
 * calls (for the reader and for clang-tidy's readability-function-size). */
static void check_true(const char *file, int line, const char *expr, int ok)
{
    check_count++;
    if (!ok) {
        check_failures++;
        fprintf(stderr, "%s:%d: CHECK(%s) failed\n", file, line, expr);
    }
}

static void check_int(const char *file, int line, const char *expr, long long got, long long want)
{
    check_count++;
    if (got != want) {
        check_failures++;
        fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", file, line, expr, got, want);
    }
}

static void check_bytes(const char *file, int line, const char *expr, const char *got,
                        size_t got_len, const char *want, size_t want_len)
{
    check_count++;
    if (got_len == want_len && (got_len == 0 || memcmp(got, want, want_len) == 0))
        return;
    check_failures++;
    fprintf(stderr, "%s:%d: %s differs\n", file, line, expr);
    check_show("got ", got ? got : "", got ? got_len : 0);
    check_show("want", want, want_len);
}

#define CHECK(cond) check_true(__FILE__, __LINE__, #cond, (cond) ? 1 : 0)

#define CHECK_EQ_INT(got, want)                                                                    \
    check_int(__FILE__, __LINE__, #got, (long long)(got), (long long)(want))

/* `want` is a string literal. */
#define CHECK_MEM(got, got_len, want)                                                              \
    check_bytes(__FILE__, __LINE__, #got, (const char *)(got), (size_t)(got_len), want,            \
                sizeof(want) - 1)

/* Bytes against bytes of a run-time length. */
#define CHECK_BUF(got, got_len, want, want_len)                                                    \
    check_bytes(__FILE__, __LINE__, #got, (const char *)(got), (size_t)(got_len), (want),          \
                (size_t)(want_len))

#define CHECK_STR(got, want) CHECK_MEM((got), strlen(got), want)

static int check_report(void)
{
    fprintf(stderr, "%d checks, %d failed\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}

#endif
