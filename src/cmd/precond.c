/*
 * precond.c — entity tags and the preconditions of a write (md_cmd.h:
 * md_etag_format, md_precond_parse; internal.h: cmd_precond, cmd_hash).
 */
#include <stdio.h>
#include <string.h>

#include "base/md_refusals.h"
#include "internal.h"

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
            return if_none ? md_buf_say(out, MD_R_IF_NONE_MATCH_SYNTAX)
                           : md_buf_say(out, MD_R_IF_MATCH_SYNTAX);
        if (pre->n_match == MD_PRECOND_MAX)
            return md_buf_say(out, MD_R_PRECOND_TOO_MANY, name);
        memcpy(pre->match[pre->n_match++], d, MD_SHA256_LEN);
        i += pl + MD_SHA256_HEX + 1;
    }
    if (!any && (if_none || pre->n_match == 0))
        return md_buf_say(out, MD_R_PRECOND_EMPTY, name);
    if (any && (if_none ? 0 : pre->n_match > 0))
        return md_buf_say(out, MD_R_PRECOND_ANY_AND_TAGS, name);
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
    /* The path as sent: md_path_canon took it, so it holds no NUL. */
    if (pre->if_none_match && found)
        return md_buf_say(c->out, MD_R_PRECOND_EXISTS, (int)p->raw.n, p->raw.p);
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
    return md_buf_say(c->out, MD_R_PRECOND_CHANGED, (int)p->raw.n, p->raw.p);
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
