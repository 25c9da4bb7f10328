/*
 * sensitive.c — secrets kept out of memory (see md_sensitive.h): PCRE2,
 * interpreted. Each built-in detector names literals one of which every
 * match holds (a key's prefix: "AKIA", "ghp_", "sk-ant-"); a text is
 * searched for them with memmem first, and a detector's pattern runs only
 * where one of its literals occurs, so that an ordinary note costs a few
 * memmem calls. No JIT: it needs memory both writable and executable,
 * which memoryd's systemd unit forbids (MemoryDenyWriteExecute). Payment
 * card numbers run only on a text with 13 digits or more; the operator's
 * patterns always run.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "cmd/md_sensitive.h"

#include <errno.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_refusals.h"

/* The built-in detectors: kind, what it looks like, pattern. Each is
 * specific enough to be rare in ordinary notes: a prefix the issuer gives
 * its keys and their length, or a key named as such. */
static const struct detector {
    const char *kind, *what, *re;
    const char *lit[6]; /* every match holds one of them */
} builtin[] = {
    {"private-key",
     "a private key",
     "-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
     {"PRIVATE KEY"}},
    {"aws-access-key-id",
     "an AWS access key ID",
     "\\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\\b",
     {"AKIA", "ASIA", "ABIA", "ACCA"}},
    {"aws-secret-access-key",
     "an AWS secret access key",
     "(?i:aws_?secret_?(?:access_?)?key)[\"']?\\s*[:=]\\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
     {"ecret", "ECRET"}},
    {"github-token",
     "a GitHub token",
     "\\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})\\b",
     {"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
    {"anthropic-api-key",
     "an Anthropic API key",
     "\\bsk-ant-[a-z]+\\d{2}-[A-Za-z0-9_-]{32,}",
     {"sk-ant-"}},
    {"openai-api-key",
     "an OpenAI API key",
     "\\bsk-(?:[a-z]+-)?[A-Za-z0-9_-]{8,}T3BlbkFJ[A-Za-z0-9_-]{8,}",
     {"T3BlbkFJ"}},
    {"slack-token",
     "a Slack token",
     "\\bxox[abposr]-[0-9]{6,}-[A-Za-z0-9-]{8,}|https://hooks\\.slack\\.com/services/"
     "T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{20,}",
     {"xox", "hooks.slack.com"}},
    {"google-api-key", "a Google API key", "\\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", {"AIza"}},
    {"stripe-secret-key",
     "a Stripe secret key",
     "\\b[sr]k_(?:live|test)_[A-Za-z0-9]{24,}\\b",
     {"k_live_", "k_test_"}},
    {"jwt",
     "a JSON Web Token",
     "\\beyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{16,}",
     {"eyJ"}},
};
#define NBUILTIN (sizeof builtin / sizeof builtin[0])

/* 13 to 19 digits, in groups of digits separated by single spaces or
 * dashes, not inside a longer run of digits. */
#define CARD_RE "(?<![0-9])[0-9](?:[ -]?[0-9]){12,18}(?![0-9])"

struct extra {
    char *kind, *what;
    pcre2_code *re;
};

struct md_sensitive {
    int mode;
    pcre2_code *re[NBUILTIN]; /* the built-in detectors */
    pcre2_code *card;         /* NULL unless --sensitive-cards */
    struct extra *extra;
    size_t nextra;
};

static pcre2_code *compile(const char *re, char *why, size_t why_len, const char *kind)
{
    int err;
    PCRE2_SIZE at;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                     &err, &at, NULL);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        snprintf(why, why_len, "the pattern of %s does not compile at offset %zu: %s", kind,
                 (size_t)at, (const char *)msg);
        return NULL;
    }
    return code;
}

/* The operator's patterns: one per line, "kind<TAB or spaces>regex"; empty
 * lines and lines beginning with '#' are skipped. */
static enum md_err load_patterns(struct md_sensitive *s, const char *file, char *why,
                                 size_t why_len)
{
    FILE *f = fopen(file, "r");
    if (!f) {
        snprintf(why, why_len, "cannot read --sensitive-patterns %s: %s", file, strerror(errno));
        return MD_EINVAL;
    }
    char line[4096];
    enum md_err e = MD_OK;
    for (unsigned n = 1; !e && fgets(line, sizeof line, f); n++) {
        size_t len = strcspn(line, "\r\n");
        line[len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        size_t k = strcspn(line, " \t");
        const char *re = line + k + strspn(line + k, " \t");
        if (k == 0 || k > 64 || !*re) {
            snprintf(why, why_len,
                     "--sensitive-patterns %s, line %u: expected a kind, then the "
                     "pattern",
                     file, n);
            e = MD_EINVAL;
            break;
        }
        line[k] = '\0';
        struct extra *x = realloc(s->extra, (s->nextra + 1) * sizeof *x);
        if (!x) {
            e = MD_ENOMEM;
            break;
        }
        s->extra = x;
        struct extra *one = &s->extra[s->nextra];
        *one = (struct extra){strdup(line), NULL, NULL};
        static const char prefix[] = "a secret of the operator's kind ";
        one->what = malloc(sizeof prefix + k);
        if (!one->kind || !one->what) {
            free(one->kind);
            free(one->what);
            e = MD_ENOMEM;
            break;
        }
        memcpy(one->what, prefix, sizeof prefix - 1);
        memcpy(one->what + sizeof prefix - 1, line, k + 1);
        s->nextra++;
        if (!(one->re = compile(re, why, why_len, one->kind)))
            e = MD_EINVAL;
    }
    fclose(f);
    return e;
}

enum md_err md_sensitive_new(const struct md_sensitive_config *cfg, struct md_sensitive **out,
                             char *why, size_t why_len)
{
    *out = NULL;
    struct md_sensitive *s = calloc(1, sizeof *s);
    if (!s)
        return MD_ENOMEM;
    s->mode = cfg->mode;
    enum md_err e = MD_OK;
    /* Compiled whatever the mode: a tenant's override (md_sensitive_modes.h)
     * and memoryd scan use them when the server's mode is off. */
    for (size_t i = 0; i < NBUILTIN && !e; i++)
        if (!(s->re[i] = compile(builtin[i].re, why, why_len, builtin[i].kind)))
            e = MD_EINVAL;
    if (!e && cfg->cards && !(s->card = compile(CARD_RE, why, why_len, "payment cards")))
        e = MD_EINVAL;
    if (!e && cfg->patterns && *cfg->patterns)
        e = load_patterns(s, cfg->patterns, why, why_len);
    if (e) {
        md_sensitive_free(s);
        return e;
    }
    *out = s;
    return MD_OK;
}

void md_sensitive_free(struct md_sensitive *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < NBUILTIN; i++)
        pcre2_code_free(s->re[i]);
    pcre2_code_free(s->card);
    for (size_t i = 0; i < s->nextra; i++) {
        pcre2_code_free(s->extra[i].re);
        free(s->extra[i].kind);
        free(s->extra[i].what);
    }
    free(s->extra);
    free(s);
}

int md_sensitive_mode(const struct md_sensitive *s)
{
    return s ? s->mode : MD_SENSITIVE_OFF;
}

static const char *const mode_names[] = {"reject", "redact", "off"};

const char *md_sensitive_mode_name(int mode)
{
    return mode >= 0 && mode < 3 ? mode_names[mode] : NULL;
}

int md_sensitive_mode_parse(const char *name)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(name, mode_names[i]) == 0)
            return i;
    return -1;
}

size_t md_sensitive_kinds(const struct md_sensitive *s)
{
    return NBUILTIN + 1 + (s ? s->nextra : 0);
}

const char *md_sensitive_kind(const struct md_sensitive *s, size_t i)
{
    if (i < NBUILTIN)
        return builtin[i].kind;
    if (i == NBUILTIN)
        return "payment-card";
    return s && i - NBUILTIN - 1 < s->nextra ? s->extra[i - NBUILTIN - 1].kind : NULL;
}

/* The Luhn check of the digits of text[0..len) (separators skipped). */
static int luhn(const char *text, size_t len)
{
    int sum = 0, odd = 0;
    for (size_t i = len; i-- > 0;) {
        if (text[i] < '0' || text[i] > '9')
            continue;
        int d = text[i] - '0';
        if (odd && (d *= 2) > 9)
            d -= 9;
        sum += d;
        odd = !odd;
    }
    return sum % 10 == 0;
}

/* The earliest match of `code` at or after `from` (its bytes in *off,
 * *len): 1, 0 for none, -1 on error. `luhn_check`: only matches that pass
 * it. */
static int first_match(const pcre2_code *code, const char *text, size_t len, size_t from,
                       int luhn_check, size_t *off, size_t *mlen)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    if (!md)
        return -1;
    int found = 0;
    while (from <= len) {
        int rc = pcre2_match(code, (PCRE2_SPTR)text, len, from, 0, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0) {
            found = rc == PCRE2_ERROR_NOMEMORY ? -1 : 0;
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (luhn_check && !luhn(text + ov[0], ov[1] - ov[0])) {
            from = ov[0] + 1;
            continue;
        }
        *off = ov[0];
        *mlen = ov[1] - ov[0];
        found = 1;
        break;
    }
    pcre2_match_data_free(md);
    return found;
}

static size_t line_of(const char *text, size_t off)
{
    size_t line = 1;
    for (const char *p = text; (p = memchr(p, '\n', (size_t)(text + off - p))) != NULL; p++)
        line++;
    return line;
}

/* Whether text[from..len) holds one of a detector's literals. */
static int has_literal(const struct detector *d, const char *text, size_t len, size_t from)
{
    for (size_t k = 0; k < sizeof d->lit / sizeof d->lit[0] && d->lit[k]; k++)
        if (memmem(text + from, len - from, d->lit[k], strlen(d->lit[k])))
            return 1;
    return 0;
}

/* Whether text[from..len) has the 13 digits a card number needs. */
static int has_digits(const char *text, size_t len, size_t from)
{
    size_t n = 0;
    for (size_t i = from; i < len && n < 13; i++)
        n += text[i] >= '0' && text[i] <= '9';
    return n >= 13;
}

/* Keep the earlier of *hit and a match (found: *hit holds one). */
static void keep_earliest(struct md_sensitive_hit *hit, int *found, const char *kind,
                          const char *what, size_t off, size_t len)
{
    if (*found && hit->off <= off)
        return;
    *hit = (struct md_sensitive_hit){kind, what, 0, off, len};
    *found = 1;
}

/* The earliest finding at or after `from`. */
static int find_from(const struct md_sensitive *s, const char *text, size_t len, size_t from,
                     struct md_sensitive_hit *hit)
{
    if (!s || !text || from >= len)
        return 0;
    int found = 0, rc = 0;
    size_t off, mlen;
    for (size_t i = 0; i < NBUILTIN && rc >= 0; i++) {
        if (!has_literal(&builtin[i], text, len, from))
            continue;
        rc = first_match(s->re[i], text, len, from, 0, &off, &mlen);
        if (rc > 0)
            keep_earliest(hit, &found, builtin[i].kind, builtin[i].what, off, mlen);
    }
    if (rc >= 0 && s->card && has_digits(text, len, from)) {
        rc = first_match(s->card, text, len, from, 1, &off, &mlen);
        if (rc > 0)
            keep_earliest(hit, &found, "payment-card", "a payment card number", off, mlen);
    }
    for (size_t i = 0; i < s->nextra && rc >= 0; i++) {
        rc = first_match(s->extra[i].re, text, len, from, 0, &off, &mlen);
        if (rc > 0 && mlen > 0)
            keep_earliest(hit, &found, s->extra[i].kind, s->extra[i].what, off, mlen);
    }
    if (rc < 0)
        return -1;
    if (found)
        hit->line = line_of(text, hit->off);
    return found;
}

int md_sensitive_find(const struct md_sensitive *s, const char *text, size_t len,
                      struct md_sensitive_hit *hit)
{
    return find_from(s, text, len, 0, hit);
}

int md_sensitive_find_at(const struct md_sensitive *s, const char *text, size_t len, size_t from,
                         struct md_sensitive_hit *hit)
{
    return find_from(s, text, len, from, hit);
}

enum md_err md_sensitive_redact(const struct md_sensitive *s, const char *text, size_t len,
                                struct md_buf *out, size_t *n, struct md_sensitive_hit *first)
{
    *n = 0;
    md_buf_reset(out);
    size_t at = 0;
    enum md_err e = MD_OK;
    struct md_sensitive_hit hit;
    int rc;
    while (!e && (rc = find_from(s, text, len, at, &hit)) == 1) {
        if (!*n)
            *first = hit;
        (*n)++;
        e = md_buf_append(out, text + at, hit.off - at);
        if (!e)
            e = md_buf_printf(out, "[REDACTED:%s]", hit.kind);
        at = hit.off + (hit.len ? hit.len : 1);
    }
    if (!e && rc < 0)
        e = MD_ENOMEM;
    if (!e)
        e = md_buf_append(out, text + at, len - at);
    return e;
}

enum md_err md_sensitive_refusal(struct md_buf *out, const struct md_sensitive_hit *hit)
{
    return md_buf_say(out, MD_R_SENSITIVE, hit->what, hit->line);
}
