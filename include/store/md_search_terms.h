/*
 * md_search_terms.h — the terms of a full-text search as the store
 * interface takes them (struct md_search_terms, md_store.h) and how a
 * file's text matches them, for both engines (src/store/search_terms.c).
 * The request around them (parsing q, paging, snippets) is cmd/md_search.h.
 *
 * A file matches when its text contains every term where a word begins
 * (md_text_find_word_ci: ASCII letters without case).
 */
#ifndef MD_SEARCH_TERMS_H
#define MD_SEARCH_TERMS_H

#include <stddef.h>
#include <stdint.h>

#define MD_SEARCH_Q_MAX      256 /* bytes of q at most */
#define MD_SEARCH_TERMS_MAX  8   /* terms of q at most */
#define MD_SEARCH_SHORT_TERM 3   /* characters: shorter words are not looked up in the index */

/* How well text[0..n) matches the terms of list (terms separated by '\n'):
 * -1 when a term does not occur in it where a word begins (md_text.h,
 * md_text_find_word_ci: ASCII letters without case), else the number of
 * such occurrences of all terms (an empty list: 0; an empty term occurs
 * nowhere). The check and rank of every hit: SQLite's (memoryd_score), and
 * PostgreSQL's when a search has at most 500 candidates. */
int64_t md_search_score(const char *text, size_t n, const char *list, size_t list_len);

/* The next word of s[*at..n) (a run of characters that are not separators,
 * md_text_is_sep): its start in *start and its length in *len, *at moved
 * past it. 0 when no word is left. The engines' index queries take the
 * words of the terms so. */
int md_search_next_word(const char *s, size_t n, size_t *at, size_t *start, size_t *len);

#endif
