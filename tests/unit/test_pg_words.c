/*
 * test_pg_words.c — md_pg_words (src/store/pg/words.c), the words of a
 * file as the PostgreSQL index's step computes them in memoryd, against
 * memoryd_words of 005_search.sql on a real PostgreSQL: for each text, the
 * tsvector of md_pg_words' words (array_to_tsvector(string_to_array(w,
 * ' ')), as the step writes it) is memoryd_words' exactly. The texts: the
 * empty one, ASCII case and punctuation, NUL bytes, non-ASCII letters (not
 * folded), U+00A0 (a letter to both) and a C1 control (a separator), the
 * word "null", a word over 400 bytes (ASCII, and two-byte characters: cut
 * to 100 characters), texts over 300,000 bytes (few words; so many
 * distinct words that only '#all' is kept), and 300 random texts of those
 * pieces. The hand-written ones are also checked against their expected
 * words, so that the comparison cannot pass with both wrong.
 *
 * The database: MD_TEST_PG_URI, or a fresh one of the cluster MD_TEST_PG
 * names (pg_db.h, migrated here); skipped (77) without either.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_buf.h"
#include "check.h"
#include "pg_db.h"
#include "store/pg/internal.h"

static PGconn *C;

/* md_pg_words(text) as the step writes it, against memoryd_words(text):
 * both tsvectors' text equal; `want` (when not NULL) md_pg_words' own
 * output. */
static void same(const char *text, size_t n, const char *want)
{
    struct md_buf w;
    md_buf_init(&w, (size_t)1 << 30);
    CHECK_EQ_INT(md_pg_words(text, n, &w), MD_OK);
    if (want)
        CHECK_BUF(w.data ? w.data : "", w.len, want, strlen(want));
    const char *v[2] = {w.data ? w.data : "", text};
    int len[2] = {(int)w.len, (int)n}, fmt[2] = {1, 1};
    PGresult *r = PQexecParams(C,
                               "SELECT array_to_tsvector(string_to_array($1::text, ' '))::text,"
                               " memoryd_words($2::bytea)::text",
                               2, NULL, v, len, fmt, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "test_pg_words: %s", PQerrorMessage(C));
        CHECK(0);
    } else if (strcmp(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1)) != 0) {
        fprintf(stderr, "test_pg_words: %zu bytes: md_pg_words %.200s\n  memoryd_words %.200s\n", n,
                PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
        CHECK(0);
    } else {
        CHECK(1);
    }
    PQclear(r);
    md_buf_free(&w);
}

#define SAME(lit, want) same((lit), sizeof(lit) - 1, (want))

static void test_hand_written(void)
{
    SAME("", "");
    SAME("  ,;  ", "");
    SAME("Hello, World! hello HELLO", "hello world");
    SAME("x_y-z.1 2x", "1 2x x y z");
    SAME("a\0b\0\0NULL null", "a b null");
    SAME("Z\xc3\xbcrich Z\xc3\x9cRICH \xe6\x9d\xb1\xe4\xba\xac\xe9\x83\xbd",
         "z\xc3\x9crich z\xc3\xbcrich \xe6\x9d\xb1\xe4\xba\xac\xe9\x83\xbd");
    SAME("caf\xc3\xa9\xc2\xa0x", "caf\xc3\xa9\xc2\xa0x");
    SAME("a\xc2\x85"
         "b\xc2\x9f"
         "c",
         "a b c");
    SAME("\xf0\x9f\x98\x80smile", "\xf0\x9f\x98\x80smile");

    /* A word over 400 bytes: every word cut to its first 100 characters. */
    static char text[4096], want[4096];
    size_t n = 0, m = 0;
    memset(text, 'W', 500);
    n = 500;
    memcpy(text + n, " Short", 6);
    n += 6;
    memcpy(want, "short ", 6);
    m = 6;
    memset(want + m, 'w', 100);
    m += 100;
    want[m] = '\0';
    same(text, n, want);
    /* ... counted in characters: 300 two-byte ones (600 bytes) keep 100 (200 bytes). */
    for (n = 0; n < 600; n += 2)
        memcpy(text + n, "\xc3\xa9", 2);
    memcpy(text + n, " ab", 3);
    n += 3;
    memcpy(want, "ab ", 3);
    for (m = 3; m < 203; m += 2)
        memcpy(want + m, "\xc3\xa9", 2);
    want[m] = '\0';
    same(text, n, want);
}

static void test_long_texts(void)
{
    /* Over 300,000 bytes, few words: each once. */
    size_t n = 0;
    char *big = malloc(700001);
    CHECK(big != NULL);
    if (!big)
        return;
    while (n + 12 < 320000) {
        memcpy(big + n, "lorem Ipsum ", 12);
        n += 12;
    }
    same(big, n, "ipsum lorem");
    /* Over 300,000 bytes of distinct words: 13 bytes each with the 8, over 1,000,000 in all. */
    n = 0;
    for (int i = 0; i < 100000; i++)
        n += (size_t)snprintf(big + n, 700001 - n, "w%05d ", i);
    same(big, n, "#all");
    /* Just under: the words kept. */
    same(big, 300000, NULL);
    free(big);
}

/* Random texts of the pieces above. */
static void test_random(void)
{
    static const char *const pieces[] = {"a",
                                         "Z",
                                         "q",
                                         "7",
                                         " ",
                                         "\n",
                                         ",",
                                         "-",
                                         "_",
                                         "\0",
                                         "\xc3\xa9",
                                         "\xc3\x89",
                                         "\xe6\x9d\xb1",
                                         "\xc2\x85",
                                         "\xc2\xa0",
                                         "\xf0\x9f\x98\x80",
                                         "null",
                                         "NULL"};
    static const size_t lens[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 2, 2, 4, 4, 4};
    static char text[8192];
    unsigned seed = 26;
    for (int t = 0; t < 300; t++) {
        size_t n = 0, want = (size_t)(rand_r(&seed) % 2000);
        while (n < want) {
            size_t k = (size_t)rand_r(&seed) % (sizeof lens / sizeof lens[0]);
            memcpy(text + n, pieces[k], lens[k]);
            n += lens[k];
        }
        same(text, n, NULL);
    }
}

int main(void)
{
    static char name[64], made[1024];
    const char *uri = getenv("MD_TEST_PG_URI");
    if (!uri || !*uri) {
        int rc = pg_db_create("md_pgwords", name, sizeof name, made, sizeof made);
        if (rc)
            return rc;
        uri = made;
    }
    char why[512] = "";
    C = md_pg_connect(uri, why, sizeof why);
    if (!C || md_pg_migrate(C, why, sizeof why) != 0) {
        fprintf(stderr, "test_pg_words: cannot open %s: %s\n", uri, why);
        return 1;
    }
    test_hand_written();
    test_long_texts();
    test_random();
    PQfinish(C);
    if (name[0])
        pg_db_drop(name);
    return check_report();
}
