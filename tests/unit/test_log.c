/*
 * test_log.c — structured log lines: the exact shape of a line (time,
 * level, msg, escaped strings, integers, booleans), levels that filter, and
 * the asynchronous writer: 4 threads × 5,000 lines all arrive on stderr,
 * whole (no interleaving), each thread's in order, nothing lost when it
 * stops; and direct writes again after it stops.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/md_log.h"
#include "check.h"

static char g_path[64];
static int g_saved = -1;

/* Send stderr to a fresh temp file. */
static void capture(void)
{
    strcpy(g_path, "/tmp/md-test-log-XXXXXX");
    int fd = mkstemp(g_path);
    fflush(stderr);
    g_saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

/* Restore stderr; returns what was written (caller frees). */
static char *release(size_t *len)
{
    fflush(stderr);
    dup2(g_saved, STDERR_FILENO);
    close(g_saved);
    FILE *f = fopen(g_path, "rb");
    char *buf = NULL;
    *len = 0;
    if (f) {
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        buf = calloc(1, (size_t)n + 1);
        *len = fread(buf, 1, (size_t)n, f);
        fclose(f);
    }
    unlink(g_path);
    return buf;
}

static void test_line_shape(void)
{
    md_log_set_level(MD_LOG_INFO);
    capture();
    struct md_logline l;
    md_log_begin(&l, MD_LOG_INFO, "request");
    md_log_str(&l, "tenant", "a\"b\\c\n");
    md_log_int(&l, "status", -404);
    md_log_bool(&l, "is_error", 1);
    md_log_end(&l);
    md_log_begin(&l, MD_LOG_DEBUG, "hidden"); /* below the level */
    md_log_int(&l, "x", 1);
    md_log_end(&l);
    size_t n;
    char *out = release(&n);
    CHECK(out != NULL);
    if (!out)
        return;
    /* {"time":"YYYY-MM-DDTHH:MM:SS.mmmZ",...} */
    CHECK(n > 40 && strncmp(out, "{\"time\":\"", 9) == 0);
    CHECK(out[13] == '-' && out[16] == '-' && out[19] == 'T' && out[22] == ':' && out[25] == ':' &&
          out[28] == '.' && out[32] == 'Z' && out[33] == '"');
    const char *rest = strstr(out, "\",\"level\"");
    CHECK_STR(rest ? rest : "", "\",\"level\":\"info\",\"msg\":\"request\",\"tenant\":"
                                "\"a\\\"b\\\\c\\n\",\"status\":-404,\"is_error\":true}\n");
    free(out);
}

enum { THREADS = 4, LINES = 5000 };

static void *writer(void *arg)
{
    long t = *(const long *)arg;
    for (long i = 0; i < LINES; i++) {
        struct md_logline l;
        md_log_begin(&l, MD_LOG_INFO, "line");
        md_log_int(&l, "t", t);
        md_log_int(&l, "i", i);
        md_log_str(&l, "pad", "some text to make lines longer than a few bytes each");
        md_log_end(&l);
    }
    return NULL;
}

/* The numbers of `"t":T,"i":I` at p; 1 when both are there. */
static int parse_t_i(const char *p, long *t, long *i)
{
    char *end;
    if (strncmp(p, "\"t\":", 4) != 0)
        return 0;
    *t = strtol(p + 4, &end, 10);
    if (end == p + 4 || strncmp(end, ",\"i\":", 5) != 0)
        return 0;
    const char *q = end + 5;
    *i = strtol(q, &end, 10);
    return end != q;
}

static void test_async(void)
{
    md_log_set_level(MD_LOG_INFO);
    capture();
    CHECK_EQ_INT(md_log_start_async(), 0);
    pthread_t th[THREADS];
    long ids[THREADS];
    for (long t = 0; t < THREADS; t++) {
        ids[t] = t;
        pthread_create(&th[t], NULL, writer, &ids[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    md_log_stop_async();
    md_log_msg(MD_LOG_INFO, "after", NULL); /* direct again */
    size_t n;
    char *out = release(&n);
    CHECK(out != NULL);
    if (!out)
        return;
    long next[THREADS] = {0};
    long lines = 0, bad = 0, after = 0;
    for (char *line = out, *end; *line; line = end + 1) {
        end = strchr(line, '\n');
        if (!end)
            break;
        *end = '\0';
        long t, i;
        const char *p = strstr(line, "\"t\":");
        if (p && parse_t_i(p, &t, &i) && t >= 0 && t < THREADS && line[0] == '{' &&
            end[-1] == '}') {
            if (i != next[t])
                bad++;
            next[t] = i + 1;
            lines++;
        } else if (strstr(line, "\"msg\":\"after\"")) {
            after++;
        } else {
            bad++;
        }
    }
    CHECK_EQ_INT(lines, THREADS * LINES);
    CHECK_EQ_INT(bad, 0);
    for (int t = 0; t < THREADS; t++)
        CHECK_EQ_INT(next[t], LINES);
    CHECK_EQ_INT(after, 1);
    free(out);
}

int main(void)
{
    test_line_shape();
    test_async();
    return check_report();
}
