/*
 * precond.c — entity tags and the preconditions of a write (md_cmd.h:
 * md_etag_format, md_precond_parse; internal.h: cmd_precond, cmd_hash).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static struct md_str cstr(const char *s)
{
    struct md_str r = {s, strlen(s)};
    return r;
}

void md_etag_format(const unsigned char sha256[MD_SHA256_LEN], char out[MD_ETAG_LEN + 1])
{
    char hex[MD_SHA256_HEX + 1];
    md_sha256_hex(sha256, hex);
    snprintf(out, MD_ETAG_LEN + 1, "\"sha256-%s\"", hex);
}

enum md_err md_precond_parse(struct md_precond *pre, int if_none, const char *value, size_t len,
                             struct md_buf *out)
{
    const char *name = if_none ? "If-None-Match" : "If-Match";
    size_t i = 0;
    int any = 0;
    while (i < len) {
        while (i < len && (value[i] == ' ' || value[i] == '\t' || value[i] == ','))
            i++;
        if (i == len)
            break;
        if (value[i] == '*') {
            any = 1;
            i++;
            continue;
        }
        /* "sha256-<64 hex>" (a weak W/ tag never matches a strong comparison: refused). */
        static const char prefix[] = "\"sha256-";
        size_t pl = sizeof prefix - 1;
        unsigned char d[MD_SHA256_LEN];
        if (len - i < pl + MD_SHA256_HEX + 1 || memcmp(value + i, prefix, pl) != 0 ||
            value[i + pl + MD_SHA256_HEX] != '"' ||
            md_sha256_parse_hex(value + i + pl, MD_SHA256_HEX, d) != 0 || if_none)
            return cmd_say(out, MD_EINVAL, "Error: The ", cstr(name),
                           if_none ? " header must be `*`"
                                   : " header must be `*` or entity tags \"sha256-<64 hex "
                                     "digits>\" as sent in ETag",
                           (struct md_str){0}, NULL);
        if (pre->n_match == MD_PRECOND_MAX)
            return cmd_say(out, MD_EINVAL, "Error: The ", cstr(name),
                           " header lists more than 8 entity tags", (struct md_str){0}, NULL);
        memcpy(pre->match[pre->n_match++], d, MD_SHA256_LEN);
        i += pl + MD_SHA256_HEX + 1;
    }
    if (!any && (if_none || pre->n_match == 0))
        return cmd_say(out, MD_EINVAL, "Error: The ", cstr(name), " header is empty",
                       (struct md_str){0}, NULL);
    if (any && (if_none ? 0 : pre->n_match > 0))
        return cmd_say(out, MD_EINVAL, "Error: The ", cstr(name),
                       " header must be `*` alone or a list of entity tags", (struct md_str){0},
                       NULL);
    if (if_none)
        pre->if_none_match = 1;
    else
        pre->if_match_any = any;
    return MD_OK;
}

enum md_err cmd_precond(struct cmd_ctx *c, const struct md_patharg *p, int found,
                        const struct md_entry *e)
{
    const struct md_precond *pre = &c->cmd->pre;
    if (pre->if_none_match && found)
        return cmd_say1(c->out, MD_EPRECOND, "The file ", p->raw,
                        " already exists (the request asked for If-None-Match: *); view it "
                        "before changing it.");
    if (!pre->if_match_any && pre->n_match == 0)
        return MD_OK;
    int ok = found && e->kind == MD_KIND_FILE;
    if (ok && pre->n_match) {
        ok = 0;
        for (size_t i = 0; i < pre->n_match && !ok; i++)
            ok = e->has_sha256 && memcmp(pre->match[i], e->sha256, MD_SHA256_LEN) == 0;
    }
    if (ok)
        return MD_OK;
    return cmd_say1(c->out, MD_EPRECOND, "The file ", p->raw,
                    " changed since you viewed it; view it again before editing.");
}

enum md_err cmd_hash(struct cmd_ctx *c, const char *content, size_t len,
                     unsigned char out[MD_SHA256_LEN])
{
    enum md_err e = md_sha256(content, len, out);
    if (!e) {
        memcpy(c->res->etag, out, MD_SHA256_LEN);
        c->res->has_etag = 1;
    }
    return e;
}
