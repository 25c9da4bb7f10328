/*
 * md_sensitive.h — secrets kept out of memory (--sensitive): the text a
 * write would store is checked for credentials and keys before it is
 * stored (src/cmd/sensitive.c).
 *
 * The detectors are regular expressions compiled once with PCRE2 (libpcre2-8,
 * Debian's libpcre2-dev), interpreted: each built-in one runs only where a
 * literal every match holds (a key's prefix) occurs, found with memmem;
 * payment card numbers (opt-in) are digits that pass the Luhn check; an
 * operator's own patterns (a file of "kind<TAB>regex" lines) are compiled
 * beside them. Kinds:
 * private-key, aws-access-key-id, aws-secret-access-key, github-token,
 * anthropic-api-key, openai-api-key, slack-token, google-api-key,
 * stripe-secret-key, jwt, payment-card, and the operator's names.
 *
 * What a finding does (enum md_sensitive_mode): `reject` refuses the write
 * with a text the model can act on, naming the kind and the line, never the
 * secret; `redact` stores "[REDACTED:kind]" in its place; `off` checks
 * nothing. The server's mode is --sensitive; a tenant may have its own
 * (md_sensitive_modes.h).
 *
 * Ownership: md_sensitive_new allocates, md_sensitive_free frees; a struct
 * md_sensitive is read-only once made and may be used by any thread (each
 * call takes match data of its own). Errors: MD_EINVAL with the reason in
 * `why` (a pattern that does not compile, a file that cannot be read),
 * MD_ENOMEM.
 */
#ifndef MD_SENSITIVE_H
#define MD_SENSITIVE_H

#include <stddef.h>

#include "base/md_buf.h"
#include "base/md_err.h"

enum md_sensitive_mode {
    MD_SENSITIVE_REJECT = 0, /* the default */
    MD_SENSITIVE_REDACT,
    MD_SENSITIVE_OFF,
};

struct md_sensitive_config {
    int mode;             /* enum md_sensitive_mode */
    int cards;            /* payment card numbers too (--sensitive-cards) */
    const char *patterns; /* a file of the operator's patterns, or NULL */
};

/* One finding: its kind ("aws-access-key-id"), what it looks like ("an AWS
 * access key ID"), its line (1-based) and its bytes in the text. */
struct md_sensitive_hit {
    const char *kind;
    const char *what;
    size_t line, off, len;
};

struct md_sensitive;

enum md_err md_sensitive_new(const struct md_sensitive_config *cfg, struct md_sensitive **out,
                             char *why, size_t why_len);
void md_sensitive_free(struct md_sensitive *s);

/* The server's mode, --sensitive (NULL: off). A tenant may have its own
 * (md_sensitive_modes.h); the detectors are compiled whatever the mode. */
int md_sensitive_mode(const struct md_sensitive *s);

/* A mode's name ("reject", "redact", "off"; NULL for another number), and
 * the mode a name names (-1: none). */
const char *md_sensitive_mode_name(int mode);
int md_sensitive_mode_parse(const char *name);

/* The first finding in text[0..len) (the earliest), into *hit: 1, or 0 for
 * none (also when `s` is NULL), whatever the mode (the caller decides
 * whether to look). -1 when out of memory. */
int md_sensitive_find(const struct md_sensitive *s, const char *text, size_t len,
                      struct md_sensitive_hit *hit);
/* The same, for findings that begin at `from` or after: the next one after
 * a hit is at hit.off + max(hit.len, 1). */
int md_sensitive_find_at(const struct md_sensitive *s, const char *text, size_t len, size_t from,
                         struct md_sensitive_hit *hit);

/* Mode redact: `out` gets the text with every finding replaced by
 * "[REDACTED:kind]"; *n the findings, *first the first of them. */
enum md_err md_sensitive_redact(const struct md_sensitive *s, const char *text, size_t len,
                                struct md_buf *out, size_t *n, struct md_sensitive_hit *first);

/* The refusal of mode reject: "Error: The text contains what looks like
 * {what} (line {line}); memory must not hold credentials. Write it again
 * without the secret." appended to `out` (MD_ESENSITIVE). */
enum md_err md_sensitive_refusal(struct md_buf *out, const struct md_sensitive_hit *hit);

/* The number of kinds (the built-in ones, then the operator's) and each
 * one's name, for the metrics; counted by md_sensitive_count. */
size_t md_sensitive_kinds(const struct md_sensitive *s);
const char *md_sensitive_kind(const struct md_sensitive *s, size_t i);

#endif
