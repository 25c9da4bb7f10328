/* log.c — one JSON object per line on stderr (see md_log.h). */
#include "md_log.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "md_json.h"

static atomic_int g_level = MD_LOG_INFO;

void md_log_set_level(enum md_log_level level)
{
    atomic_store(&g_level, (int)level);
}

int md_log_enabled(enum md_log_level level)
{
    return (int)level <= atomic_load(&g_level);
}

int md_log_level_parse(const char *s)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static const char *level_name(enum md_log_level l)
{
    switch (l) {
    case MD_LOG_ERROR:
        return "error";
    case MD_LOG_WARN:
        return "warn";
    case MD_LOG_INFO:
        return "info";
    case MD_LOG_DEBUG:
        return "debug";
    }
    return "info";
}

void md_log_begin(struct md_logline *l, enum md_log_level level, const char *msg)
{
    md_buf_init(&l->b, (size_t)64 << 10);
    l->on = md_log_enabled(level);
    if (!l->on)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40];
    size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    md_buf_printf(&l->b, "{\"time\":\"%.*s.%03ldZ\",\"level\":\"%s\",\"msg\":", (int)n, when,
                  ts.tv_nsec / 1000000, level_name(level));
    md_json_put_string(&l->b, msg, strlen(msg));
}

void md_log_strn(struct md_logline *l, const char *key, const char *val, size_t len)
{
    if (!l->on)
        return;
    md_buf_putc(&l->b, ',');
    md_json_put_string(&l->b, key, strlen(key));
    md_buf_putc(&l->b, ':');
    md_json_put_string(&l->b, val, len);
}

void md_log_str(struct md_logline *l, const char *key, const char *val)
{
    md_log_strn(l, key, val ? val : "", val ? strlen(val) : 0);
}

void md_log_int(struct md_logline *l, const char *key, int64_t val)
{
    if (!l->on)
        return;
    md_buf_putc(&l->b, ',');
    md_json_put_string(&l->b, key, strlen(key));
    md_buf_printf(&l->b, ":%lld", (long long)val);
}

void md_log_bool(struct md_logline *l, const char *key, int val)
{
    if (!l->on)
        return;
    md_buf_putc(&l->b, ',');
    md_json_put_string(&l->b, key, strlen(key));
    md_buf_puts(&l->b, val ? ":true" : ":false");
}

void md_log_end(struct md_logline *l)
{
    if (l->on && md_buf_puts(&l->b, "}\n") == MD_OK) {
        const char *p = l->b.data;
        size_t left = l->b.len;
        while (left > 0) {
            ssize_t w = write(STDERR_FILENO, p, left);
            if (w <= 0)
                break;
            p += w;
            left -= (size_t)w;
        }
    }
    md_buf_free(&l->b);
}

void md_log_msg(enum md_log_level level, const char *msg, const char *detail)
{
    struct md_logline l;
    md_log_begin(&l, level, msg);
    if (detail)
        md_log_str(&l, "detail", detail);
    md_log_end(&l);
}
