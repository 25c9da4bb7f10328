/*
 * search_terms.c — how a file matches the terms of a search (see
 * md_search_terms.h): both engines rank by it and find the words of the
 * terms by it.
 */
#include "store/md_search_terms.h"

#include <string.h>

#include "base/md_text.h"

int64_t md_search_score(const char *text, size_t n, const char *list, size_t list_len)
{
    int64_t score = 0;
    size_t i = 0;
    while (i < list_len) {
        const char *term = list + i;
        const char *nl = memchr(term, '\n', list_len - i);
        size_t m = nl ? (size_t)(nl - term) : list_len - i;
        i += m + 1;
        int64_t found = 0; /* an empty term (never made by memoryd) is found nowhere */
        for (long at = md_text_find_word_ci(text, n, 0, term, m); at >= 0;
             at = md_text_find_word_ci(text, n, (size_t)at + m, term, m))
            found++;
        if (found == 0)
            return -1;
        score += found;
    }
    return score;
}

int md_search_next_word(const char *s, size_t n, size_t *at, size_t *start, size_t *len)
{
    size_t k = *at;
    while (k < n && md_text_is_sep(s + k, n - k))
        k += ((unsigned char)s[k] & 0x80) ? 2 : 1; /* a C1 control is 2 bytes */
    size_t w = k;
    while (k < n && !md_text_is_sep(s + k, n - k))
        k++;
    *at = k > n ? n : k;
    *start = w;
    *len = (k > n ? n : k) - w;
    return k > w && w < n;
}
