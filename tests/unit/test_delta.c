/*
 * test_delta.c — proves md_delta.h: every delta md_delta_make keeps turns
 * its successor back into the older text byte for byte (md_delta_apply);
 * an edit in one place is kept as a splice (its exact bytes checked), an
 * edit in many places as a zstd frame smaller than the splice; a splice
 * that would begin as a zstd frame does is never written; damaged deltas
 * are refused (MD_EDB), never read past their end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_buf.h"
#include "check.h"
#include "store/md_delta.h"

static const unsigned char zstd_magic[4] = {0x28, 0xB5, 0x2F, 0xFD};

static int is_zstd(const struct md_buf *d)
{
    return d->len >= 4 && memcmp(d->data, zstd_magic, 4) == 0;
}

/* The delta of old against succ: made, applied back, compared; its kind
 * (1 zstd, 0 splice) and size out. */
static int round_trip(const char *old, size_t old_len, const char *succ, size_t succ_len,
                      size_t *size)
{
    struct md_buf d, back;
    md_buf_init(&d, old_len + (old_len >> 6) + 1024);
    md_buf_init(&back, old_len + 1);
    CHECK_EQ_INT(md_delta_make(old, old_len, succ, succ_len, &d), MD_OK);
    CHECK_EQ_INT(md_delta_apply(succ, succ_len, d.data ? d.data : "", d.len, &back), MD_OK);
    CHECK_BUF(back.data ? back.data : "", back.len, old, old_len);
    int kind = is_zstd(&d);
    *size = d.len;
    md_buf_free(&d);
    md_buf_free(&back);
    return kind;
}

/* 160 lines of prose-like text into out (10 KiB or so); `seed` varies it. */
static size_t note(char *out, unsigned seed)
{
    static const char *const words[] = {"memory", "agent", "tenant",  "file",  "history",
                                        "search", "delta", "version", "write", "notes",
                                        "the",    "of",    "and",     "to",    "a"};
    size_t n = 0;
    uint32_t r = seed * 2654435761u + 1;
    for (int l = 0; l < 160; l++) {
        for (int w = 0; w < 9; w++) {
            r = r * 1103515245u + 12345u;
            const char *word = words[(r >> 16) % 15];
            size_t m = strlen(word);
            memcpy(out + n, word, m);
            n += m;
            out[n++] = w == 8 ? '\n' : ' ';
        }
    }
    return n;
}

static void test_splice(void)
{
    size_t size;
    /* The exact bytes of a one-place edit: head 6, tail 6, then "brown". */
    const char *old = "quick brown fox", *succ = "quick red fox";
    struct md_buf d;
    md_buf_init(&d, 64);
    CHECK_EQ_INT(md_delta_make(old, strlen(old), succ, strlen(succ), &d), MD_OK);
    CHECK_BUF(d.data, d.len,
              "\x06\x04"
              "brown",
              7);
    md_buf_free(&d);
    /* Empty texts, identical texts, one empty. */
    CHECK_EQ_INT(round_trip("", 0, "", 0, &size), 0);
    CHECK_EQ_INT(round_trip("same", 4, "same", 4, &size), 0);
    CHECK_EQ_INT(size, 2);
    CHECK_EQ_INT(round_trip("", 0, "new text", 8, &size), 0);
    CHECK_EQ_INT(round_trip("old text", 8, "", 0, &size), 0);
    /* One line of a 10 KiB note changed: a splice of about that line. */
    static char a[16384], b[16384];
    size_t n = note(a, 1);
    memcpy(b, a, n);
    memcpy(b + 5000, "CHANGED", 7);
    CHECK_EQ_INT(round_trip(a, n, b, n, &size), 0);
    CHECK(size < 16);
}

static void test_zstd(void)
{
    static char a[16384], b[16384];
    size_t n = note(a, 2), size;
    /* Every tenth line changed: the splice would be most of the text. */
    memcpy(b, a, n);
    for (size_t at = 100; at + 8 < n; at += 640)
        memcpy(b + at, "EDITED!!", 8);
    CHECK(md_delta_splice_size(a, n, b, n) > n / 2);
    CHECK_EQ_INT(round_trip(a, n, b, n, &size), 1);
    CHECK(size < n / 8);
    /* A text with nothing in common with its successor: whichever is
     * smaller, still byte-exact. */
    size_t m = note(b, 3);
    round_trip(a, n, b, m, &size);
    CHECK(size <= n + 20);
}

/* A splice that would begin 28 B5 2F FD (head 40, tail 6,069, a byte 0xFD
 * first in the middle) is kept as zstd instead. */
static void test_never_looks_like_zstd(void)
{
    static char a[8192], b[8192];
    memset(a, 'x', sizeof a);
    size_t n = 40 + 1 + 6069;
    for (size_t i = 0; i < n; i++)
        a[i] = (char)('a' + i % 26);
    memcpy(b, a, n);
    a[40] = (char)0xFD;
    b[40] = 'Z';
    size_t size;
    CHECK_EQ_INT(round_trip(a, n, b, n, &size), 1);
    /* One byte moved: the head and tail differ, a splice. */
    a[40] = (char)0xFE;
    CHECK_EQ_INT(round_trip(a, n, b, n, &size), 0);
}

static void test_damaged(void)
{
    struct md_buf out;
    md_buf_init(&out, 1 << 20);
    /* A splice whose head and tail are longer than the base. */
    CHECK_EQ_INT(md_delta_apply("abc", 3, "\x05\x00", 2, &out), MD_EDB);
    CHECK_EQ_INT(md_delta_apply("abc", 3, "\x02\x02", 2, &out), MD_EDB);
    /* A varint that never ends. */
    CHECK_EQ_INT(md_delta_apply("abc", 3, "\x80\x80", 2, &out), MD_EDB);
    /* A zstd frame cut short, and one of another base. */
    static char a[16384], b[16384];
    size_t n = note(a, 4);
    memcpy(b, a, n);
    for (size_t at = 100; at + 8 < n; at += 640)
        memcpy(b + at, "EDITED!!", 8);
    struct md_buf d;
    md_buf_init(&d, n + 1024);
    CHECK_EQ_INT(md_delta_make(a, n, b, n, &d), MD_OK);
    CHECK(is_zstd(&d));
    md_buf_reset(&out);
    CHECK_EQ_INT(md_delta_apply(b, n, d.data, d.len / 2, &out), MD_EDB);
    md_buf_reset(&out);
    CHECK_EQ_INT(md_delta_apply(b, n, d.data, 4, &out), MD_EDB);
    md_buf_free(&d);
    md_buf_free(&out);
}

int main(void)
{
    test_splice();
    test_zstd();
    test_never_looks_like_zstd();
    test_damaged();
    return check_report();
}
