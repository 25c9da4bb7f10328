/* wire.c — libpq helpers of the PostgreSQL engine: connecting, error
 * classes, binary parameters (array parameters too) and results (see
 * internal.h). */
#include <endian.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Server notices ("relation ... already exists, skipping") are not errors:
 * libpq would print them on stderr, which holds memoryd's JSON log. */
static void no_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

PGconn *md_pg_connect(const char *uri, char *why, size_t why_len)
{
    /* Defaults first: the URI (expanded from "dbname") overrides them. */
    const char *keys[] = {"connect_timeout", "application_name", "client_encoding", "dbname", NULL};
    const char *vals[] = {"5", "memoryd", "UTF8", uri, NULL};
    PGconn *conn = PQconnectdbParams(keys, vals, 1);
    if (!conn) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    if (PQstatus(conn) != CONNECTION_OK) {
        snprintf(why, why_len, "cannot connect to PostgreSQL: %s", PQerrorMessage(conn));
        size_t n = strlen(why);
        while (n > 0 && (why[n - 1] == '\n' || why[n - 1] == ' '))
            why[--n] = '\0';
        PQfinish(conn);
        return NULL;
    }
    PQsetNoticeProcessor(conn, no_notice, NULL);
    return conn;
}

enum md_err md_pg_classify(PGconn *conn, const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (PQstatus(conn) != CONNECTION_OK)
        return MD_EUNAVAIL;
    if (!state)
        return res ? MD_EDB : MD_EUNAVAIL;
    if (strncmp(state, "08", 2) == 0 || strcmp(state, "57P01") == 0 ||
        strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0)
        return MD_EUNAVAIL;
    if (strcmp(state, "23505") == 0)
        return MD_EEXIST;
    if (strcmp(state, "55P03") == 0 || strcmp(state, "57014") == 0 || strcmp(state, "40001") == 0 ||
        strcmp(state, "40P01") == 0)
        return MD_EBUSY;
    return MD_EDB;
}

void md_pg_bytes(struct md_pg_params *p, const void *data, size_t len)
{
    p->v[p->n] = data ? data : "";
    p->len[p->n] = (int)len;
    p->fmt[p->n] = 1;
    p->n++;
}

void md_pg_text(struct md_pg_params *p, const char *s)
{
    md_pg_bytes(p, s, strlen(s));
}

void md_pg_null(struct md_pg_params *p)
{
    p->v[p->n] = NULL;
    p->len[p->n] = 0;
    p->fmt[p->n] = 1;
    p->n++;
}

void md_pg_i64(struct md_pg_params *p, int64_t v)
{
    uint64_t be = htobe64((uint64_t)v);
    memcpy(p->num[p->n], &be, 8);
    md_pg_bytes(p, p->num[p->n], 8);
}

void md_pg_i32(struct md_pg_params *p, int32_t v)
{
    uint32_t be = htobe32((uint32_t)v);
    memcpy(p->num[p->n], &be, 4);
    md_pg_bytes(p, p->num[p->n], 4);
}

void md_pg_i64_or_null(struct md_pg_params *p, int64_t v)
{
    if (v < 0)
        md_pg_null(p);
    else
        md_pg_i64(p, v);
}

enum md_err md_pg_arr_begin(struct md_buf *b, Oid elem, size_t n)
{
    md_buf_reset(b);
    uint32_t h[5] = {htobe32(n ? 1 : 0), 0, htobe32(elem), htobe32((uint32_t)n), htobe32(1)};
    return md_buf_append(b, h, n ? sizeof h : 3 * sizeof h[0]);
}

void md_pg_arr_count(struct md_buf *b, size_t n)
{
    uint32_t be = htobe32((uint32_t)n);
    memcpy(b->data + 12, &be, 4); /* after ndim, flags, element type */
}

enum md_err md_pg_arr_elem(struct md_buf *b, const void *data, size_t len)
{
    uint32_t l = htobe32((uint32_t)len);
    enum md_err e = md_buf_append(b, &l, 4);
    return e ? e : md_buf_append(b, data, len);
}

enum md_err md_pg_arr_i64(struct md_buf *b, int64_t v)
{
    uint64_t be = htobe64((uint64_t)v);
    return md_pg_arr_elem(b, &be, 8);
}

enum md_err md_pg_arr_i32(struct md_buf *b, int32_t v)
{
    uint32_t be = htobe32((uint32_t)v);
    return md_pg_arr_elem(b, &be, 4);
}

enum md_err md_pg_arr_i16(struct md_buf *b, int16_t v)
{
    uint16_t be = htobe16((uint16_t)v);
    return md_pg_arr_elem(b, &be, 2);
}

int64_t md_pg_r_i64(const PGresult *r, int row, int col)
{
    uint64_t be;
    memcpy(&be, PQgetvalue(r, row, col), 8);
    return (int64_t)be64toh(be);
}

int32_t md_pg_r_i32(const PGresult *r, int row, int col)
{
    uint32_t be;
    memcpy(&be, PQgetvalue(r, row, col), 4);
    return (int32_t)be32toh(be);
}

int md_pg_r_i16(const PGresult *r, int row, int col)
{
    uint16_t be;
    memcpy(&be, PQgetvalue(r, row, col), 2);
    return (int16_t)be16toh(be);
}

enum md_err md_pg_arr_null(struct md_buf *b)
{
    static const unsigned char minus1[4] = {0xff, 0xff, 0xff, 0xff};
    return md_buf_append(b, minus1, 4);
}

enum md_err md_pg_arr_text_or_null(struct md_buf *b, const char *s)
{
    return s ? md_pg_arr_elem(b, s, strlen(s)) : md_pg_arr_null(b);
}

enum md_err md_pg_subtree_bounds(struct md_buf *lo, struct md_buf *hi, const char *dir, size_t len)
{
    md_buf_reset(lo);
    md_buf_reset(hi);
    enum md_err e = md_buf_append(lo, dir, len);
    if (!e)
        e = md_buf_putc(lo, '/');
    if (!e)
        e = md_buf_append(hi, dir, len);
    if (!e)
        e = md_buf_putc(hi, '0');
    return e;
}

int32_t md_pg_utf8_chars(const char *s, size_t n)
{
    int32_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

int64_t md_pg_r_i64_or(const PGresult *r, int row, int col, int64_t null_value)
{
    return PQgetisnull(r, row, col) ? null_value : md_pg_r_i64(r, row, col);
}

void md_pg_r_sha256(const PGresult *r, int row, int col, struct md_entry *e)
{
    e->has_sha256 = !PQgetisnull(r, row, col) && PQgetlength(r, row, col) == MD_SHA256_LEN;
    if (e->has_sha256)
        memcpy(e->sha256, PQgetvalue(r, row, col), MD_SHA256_LEN);
}
