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

/* One entity-tag of RFC 9110 (8.8.3) at value[*i]: [W/] DQUOTE *etagc DQUOTE, etagc
 * being %x21 / %x23-7E / obs-text. Returns 1 and moves *i past it; 0 when malformed.
 * *ours is set when it is a strong tag of memoryd's form, its digest in d. */
static int entity_tag(const char *value, size_t len, size_t *i, int *ours,
                      unsigned char d[MD_SHA256_LEN])
{
    static const char prefix[] = "\"sha256-";
    const size_t pl = sizeof prefix - 1;
    size_t j = *i;
    int weak = len - j >= 2 && value[j] == 'W' && value[j + 1] == '/';
    if (weak)
        j += 2;
    if (j == len || value[j] != '"')
        return 0;
    size_t open = j++;
    while (j < len && value[j] != '"') {
        unsigned char ch = (unsigned char)value[j];
        if (ch < 0x21 || ch == 0x7f)
            return 0;
        j++;
    }
    if (j == len)
        return 0;
    *ours = !weak && j - open == pl + MD_SHA256_HEX && memcmp(value + open, prefix, pl) == 0 &&
            md_sha256_parse_hex(value + open + pl, MD_SHA256_HEX, d) == 0;
    *i = j + 1;
    return 1;
}

enum md_err md_precond_parse(struct md_precond *pre, int if_none, const char *value, size_t len,
                             struct md_buf *out)
{
    const char *name = if_none ? "If-None-Match" : "If-Match";
    size_t i = 0;
    int any = 0;
    size_t tags = 0;
    /* #element: elements apart by commas with optional white space; empty ones allowed. */
    while (i < len) {
        while (i < len && (value[i] == ' ' || value[i] == '\t' || value[i] == ','))
            i++;
        if (i == len)
            break;
        if (value[i] == '*') {
            any = 1;
            i++;
        } else {
            /* If-None-Match takes `*` only (memoryd's writes need no other form). */
            int ours = 0;
            unsigned char d[MD_SHA256_LEN];
            if (if_none || !entity_tag(value, len, &i, &ours, d))
                return if_none ? md_buf_say(out, MD_R_IF_NONE_MATCH_SYNTAX)
                               : md_buf_say(out, MD_R_IF_MATCH_SYNTAX);
            if (++tags > MD_PRECOND_MAX)
                return md_buf_say(out, MD_R_PRECOND_TOO_MANY, name);
            /* A weak tag, or one that is not of memoryd's form, never matches strongly. */
            if (ours)
                memcpy(pre->match[pre->n_match++], d, MD_SHA256_LEN);
            else
                pre->n_never++;
        }
        while (i < len && (value[i] == ' ' || value[i] == '\t'))
            i++;
        if (i < len && value[i] != ',')
            return if_none ? md_buf_say(out, MD_R_IF_NONE_MATCH_SYNTAX)
                           : md_buf_say(out, MD_R_IF_MATCH_SYNTAX);
    }
    if (!any && (if_none || tags == 0))
        return md_buf_say(out, MD_R_PRECOND_EMPTY, name);
    if (any && (if_none ? 0 : tags > 0))
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
    if (!pre->if_match_any && pre->n_match == 0 && pre->n_never == 0)
        return MD_OK;
    int ok = found && e->kind == MD_KIND_FILE;
    if (ok && !pre->if_match_any) {
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
