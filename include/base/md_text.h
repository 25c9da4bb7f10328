/*
 * md_text.h — pure text operations of the memory tool: size format, line
 * splitting, file views, str_replace and insert. No I/O, no storage.
 *
 * Lines are split on '\n' only, exactly like JavaScript's split('\n'): a
 * file of n newlines has n + 1 lines, an empty file has one empty line.
 *
 * Ownership: results go into caller-owned md_bufs; inputs are borrowed.
 * Errors: MD_ENOMEM/MD_ETOOBIG from buffers, or the command's own error
 * class (with the client-facing text appended to `msg`).
 */
#ifndef MD_TEXT_H
#define MD_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "base/md_buf.h"

/* Most lines a file may have and still be viewed. */
#define MD_MAX_LINES 999999

/* Format a byte count: under 1024 "{n}B", else one decimal and K/M/G
 * (1024-based, halves round up). `out` needs 24 bytes. Returns length. */
size_t md_size_format(uint64_t bytes, char out[24]);

/* Number of lines of a text (count of '\n' + 1). */
size_t md_line_count(const char *s, size_t n);

/* Offset of the first occurrence of `needle` (m > 0 bytes) in hay[0..n),
 * ASCII letters compared without case (other bytes exactly); -1 when none. */
long md_text_find_ci(const char *hay, size_t n, const char *needle, size_t m);

/* Whether the character starting at s[0..n) (n > 0) separates words for
 * search: an ASCII character other than a letter or a digit (controls,
 * space, punctuation) or a C1 control (U+0080..U+009F). Every other
 * character (letters, digits, any other non-ASCII character) is part of a
 * word. The same rule as the SQLite index's tokenizer (sql/sqlite/005). */
int md_text_is_sep(const char *s, size_t n);

/* As md_text_find_ci, starting the search at hay[from], but only an
 * occurrence that begins a word: the needle starts with a separator, or
 * the occurrence is at 0 or right after a separator. -1 when none. */
long md_text_find_word_ci(const char *hay, size_t n, size_t from, const char *needle, size_t m);

/* Append "{n right-aligned in 6}\t" to b. */
enum md_err md_put_lineno(struct md_buf *b, int64_t n);

struct md_view_range {
    int present;   /* 0: whole file */
    int64_t first; /* as sent */
    int64_t last;  /* as sent; -1 means "to the end" */
};

/*
 * Render a file view into `out`: "Here's the content of {path} with line
 * numbers:\n" and numbered lines, following the SDK's view_range rules.
 * When the text would exceed `max_out` bytes it is cut at a line boundary
 * and ends with a note naming the view_range to ask for next.
 * Returns MD_ETOOBIG with the line-limit message when the file has more
 * than MD_MAX_LINES lines.
 */
enum md_err md_view_file(struct md_buf *out, const char *path, size_t path_len, const char *text,
                         size_t text_len, const struct md_view_range *range, size_t max_out);

/*
 * str_replace: `old` must occur exactly once (non-overlapping scan, matches
 * may span lines). On MD_OK `result` holds the new content and `msg` the
 * success text with the snippet; on MD_ECONFLICT `msg` holds the "did not
 * appear verbatim" or "Multiple occurrences" text and `result` is untouched.
 */
enum md_err md_str_replace(const char *text, size_t text_len, const char *old, size_t old_len,
                           const char *new_text, size_t new_len, const char *path, size_t path_len,
                           struct md_buf *result, struct md_buf *msg);

/*
 * insert: put `ins` (minus one trailing '\n') as line(s) after line
 * `line` (0 = at the top). MD_ERANGE with the contract's message when
 * `line` is outside [0, line count].
 */
enum md_err md_insert(const char *text, size_t text_len, int64_t line, const char *ins,
                      size_t ins_len, struct md_buf *result, struct md_buf *msg);

/* Append the numbered lines [from, to] (1-based, inclusive) of text. */
enum md_err md_put_lines(struct md_buf *b, const char *text, size_t text_len, size_t from,
                         size_t to);

#endif
