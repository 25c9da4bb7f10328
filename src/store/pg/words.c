/*
 * words.c — a file's words for PostgreSQL's word index, in C (md_pg_words;
 * internal.h): what memoryd_words of 005_search.sql makes of a text, so
 * that the index's step (search.c) computes them in memoryd instead of in
 * a plpgsql call per file. Equal to memoryd_words on every text:
 * tests/unit/test_pg_words.c.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "store/md_search_terms.h"

/* memoryd_words: a text longer than this, or with a word longer than
 * WORD_LONG bytes, keeps each word's first WORD_CUT characters, once each,
 * and no words at all ('#all') when those take WORDS_ALL bytes or more
 * (8 more a word): a tsvector has a size limit of its own. */
#define TEXT_LONG 300000
#define WORD_LONG 400
#define WORD_CUT  100
#define WORDS_ALL 1000000

struct word {
    size_t at, len;
};

/* Words in byte order (memcmp, then the shorter first). */
static int word_order(const void *x, const void *y, void *text)
{
    const struct word *a = x, *b = y;
    int c = memcmp((const char *)text + a->at, (const char *)text + b->at,
                   a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* The bytes of the first `chars` characters of s[0..n) (UTF-8). */
static size_t first_chars(const char *s, size_t n, size_t chars)
{
    size_t k = 0;
    for (size_t seen = 0; k < n; k++) {
        if (((unsigned char)s[k] & 0xC0) != 0x80 && seen++ == chars)
            break;
    }
    return k;
}

enum md_err md_pg_words(const char *text, size_t n, struct md_buf *out)
{
    md_buf_reset(out);
    if (n == 0)
        return MD_OK;
    char *low = malloc(n);
    struct word *w = malloc((n / 2 + 1) * sizeof *w);
    enum md_err e = low && w ? MD_OK : MD_ENOMEM;
    size_t count = 0, longest = 0;
    if (!e) {
        static const char LOWER[] = "abcdefghijklmnopqrstuvwxyz";
        for (size_t i = 0; i < n; i++) {
            char c = text[i];
            if (c >= 'A' && c <= 'Z')
                c = LOWER[c - 'A'];
            low[i] = c;
        }
        for (size_t at = 0, start, len; md_search_next_word(low, n, &at, &start, &len);) {
            w[count++] = (struct word){start, len};
            if (len > longest)
                longest = len;
        }
    }
    int cut = n > TEXT_LONG || longest > WORD_LONG;
    if (!e && cut)
        for (size_t i = 0; i < count; i++)
            w[i].len = first_chars(low + w[i].at, w[i].len, WORD_CUT);
    if (!e && count > 1)
        qsort_r(w, count, sizeof *w, word_order, low);
    size_t kept = 0, bytes = 0;
    for (size_t i = 0; !e && i < count; i++) {
        if (kept && word_order(&w[kept - 1], &w[i], low) == 0)
            continue;
        w[kept++] = w[i];
        bytes += w[i].len + 8;
    }
    if (!e && cut && bytes >= WORDS_ALL)
        e = md_buf_puts(out, "#all");
    else
        for (size_t i = 0; !e && i < kept; i++) {
            if (i)
                e = md_buf_putc(out, ' ');
            if (!e)
                e = md_buf_append(out, low + w[i].at, w[i].len);
        }
    free(low);
    free(w);
    return e;
}
