/*
 * say.c — the texts the commands answer with, put together from pieces
 * (internal.h: cmd_say, cmd_say1, cmd_not_found).
 */
#include "base/md_refusals.h"
#include "base/md_utf8.h"
#include "internal.h"

enum md_err cmd_say(struct md_buf *out, enum md_err result, const char *pre, struct md_str a,
                    const char *mid, struct md_str b, const char *post)
{
    enum md_err e = pre ? md_buf_puts(out, pre) : MD_OK;
    if (!e && a.p)
        e = md_buf_append(out, a.p, a.n);
    if (!e && mid)
        e = md_buf_puts(out, mid);
    if (!e && b.p)
        e = md_buf_append(out, b.p, b.n);
    if (!e && post)
        e = md_buf_puts(out, post);
    return e ? e : result;
}

enum md_err cmd_say1(struct md_buf *out, enum md_err result, const char *pre, struct md_str a,
                     const char *post)
{
    return cmd_say(out, result, pre, a, post, (struct md_str){0}, NULL);
}

enum md_err cmd_not_found(struct md_buf *out, const char *pre, struct md_str path, const char *post,
                          int something_there)
{
    enum md_err e = cmd_say1(out, MD_ENOENT, pre, path, post);
    if (e == MD_ENOENT && !something_there && !md_utf8_is_nfc(path.p, path.n))
        e = md_buf_say(out, MD_R_PATH_NOT_NFC);
    return e;
}
