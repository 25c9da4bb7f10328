/*
 * rows.c — reading the rows the SQLite engine's jobs share (see
 * internal.h): a version (SQ_VERSION_COLS), a change-feed entry
 * (SQ_CHANGE_COLS), an API key (SQ_KEY_COLS), as history.c, keys.c and
 * the dump (dump.c) select them. A version's and a change's strings are
 * borrowed from the row; a key's are copied into it.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

int sq_version_of(sqlite3_stmt *st, struct md_version *v, int content_col)
{
    v->version = sqlite3_column_int64(st, 0);
    v->path = (const char *)sqlite3_column_text(st, 1);
    v->path_len = (size_t)sqlite3_column_bytes(st, 1);
    v->existed = sqlite3_column_int(st, 2);
    v->redacted = sqlite3_column_int(st, 3);
    v->has_sha256 = sqlite3_column_bytes(st, 4) == MD_SHA256_LEN;
    if (v->has_sha256)
        memcpy(v->sha256, sqlite3_column_blob(st, 4), MD_SHA256_LEN);
    v->size = sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 5);
    v->time_ms = sqlite3_column_int64(st, 6);
    v->command = (const char *)sqlite3_column_text(st, 7);
    v->actor = (const char *)sqlite3_column_text(st, 8);
    v->actor_len = v->actor ? (size_t)sqlite3_column_bytes(st, 8) : 0;
    v->pruned_through = sqlite3_column_int64(st, 9);
    v->content = NULL;
    v->content_len = 0;
    if (content_col >= 0 && v->existed && !v->redacted) {
        v->content = sqlite3_column_blob(st, content_col);
        v->content_len = (size_t)sqlite3_column_bytes(st, content_col);
        if (!v->content)
            v->content = "";
    }
    if (!v->path)
        v->path = "";
    if (!v->command)
        v->command = "";
    return v->content && sqlite3_column_int(st, content_col - 1) == 1;
}

void sq_change_of(sqlite3_stmt *st, struct md_change *c)
{
    *c = (struct md_change){
        .seq = sqlite3_column_int64(st, 0),
        .version = sqlite3_column_int64(st, 1),
        .versions = sqlite3_column_int64(st, 2),
        .history_bytes = sqlite3_column_int64(st, 3),
        .time_ms = sqlite3_column_int64(st, 4),
        .command = (const char *)sqlite3_column_text(st, 5),
        .paths = (const char *)sqlite3_column_text(st, 6),
        .paths_len = (size_t)sqlite3_column_bytes(st, 6),
        .actor = (const char *)sqlite3_column_text(st, 7),
        .actor_len = (size_t)sqlite3_column_bytes(st, 7),
    };
    if (!c->command)
        c->command = "";
    if (!c->paths)
        c->paths = "";
}

static void copy_text(char *dst, size_t cap, const unsigned char *src)
{
    snprintf(dst, cap, "%s", src ? (const char *)src : "");
}

void sq_key_of(sqlite3_stmt *st, struct md_key_info *k)
{
    copy_text(k->id, sizeof k->id, sqlite3_column_text(st, 0));
    copy_text(k->tenant, sizeof k->tenant, sqlite3_column_text(st, 1));
    if (md_scope_parse((const char *)sqlite3_column_text(st, 2), &k->scope) != 0)
        k->scope = MD_SCOPE_READ;
    copy_text(k->name, sizeof k->name, sqlite3_column_text(st, 3));
    k->created = sqlite3_column_int64(st, 4);
    k->revoked = sq_column_or(st, 5, 0);
    copy_text(k->path, sizeof k->path, sqlite3_column_text(st, 6));
}
