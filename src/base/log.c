/* log.c — one JSON object per line on stderr (see md_log.h). */
#include "base/md_log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/md_clock.h"
#include "base/md_json.h"

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

/* "YYYY-MM-DDTHH:MM:SS" of `sec`, formatted once per second and thread. */
static size_t format_second(time_t sec, char out[24])
{
    static _Thread_local time_t cached_sec = -1;
    static _Thread_local char cached[24];
    static _Thread_local size_t cached_len;
    if (sec != cached_sec) {
        struct tm tm;
        gmtime_r(&sec, &tm);
        cached_len = strftime(cached, sizeof cached, "%Y-%m-%dT%H:%M:%S", &tm);
        cached_sec = sec;
    }
    memcpy(out, cached, cached_len);
    return cached_len;
}

void md_log_begin(struct md_logline *l, enum md_log_level level, const char *msg)
{
    md_buf_init(&l->b, (size_t)64 << 10);
    l->on = md_log_enabled(level);
    l->urgent = level <= MD_LOG_WARN;
    if (!l->on || md_buf_reserve(&l->b, 384) != MD_OK) /* a request line fits */
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char when[24];
    size_t n = format_second(ts.tv_sec, when);
    long ms = ts.tv_nsec / 1000000;
    char frac[5] = {'.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10), (char)('0' + ms % 10),
                    'Z'};
    md_buf_puts(&l->b, "{\"time\":\"");
    md_buf_append(&l->b, when, n);
    md_buf_append(&l->b, frac, sizeof frac);
    md_buf_puts(&l->b, "\",\"level\":\"");
    md_buf_puts(&l->b, level_name(level));
    md_buf_puts(&l->b, "\",\"msg\":");
    md_json_put_string(&l->b, msg, strlen(msg));
}

/* `,"key":` — keys are identifiers written in the code (no escaping);
 * `extra` more bytes are reserved for the value. */
static int put_key(struct md_logline *l, const char *key, size_t extra)
{
    size_t n = strlen(key);
    if (md_buf_reserve(&l->b, n + 4 + extra) != MD_OK)
        return -1;
    md_buf_put_unchecked(&l->b, ",\"", 2);
    md_buf_put_unchecked(&l->b, key, n);
    md_buf_put_unchecked(&l->b, "\":", 2);
    md_buf_terminate(&l->b);
    return 0;
}

void md_log_strn(struct md_logline *l, const char *key, const char *val, size_t len)
{
    if (l->on && put_key(l, key, len + 2) == 0)
        md_json_put_string(&l->b, val, len);
}

void md_log_str(struct md_logline *l, const char *key, const char *val)
{
    md_log_strn(l, key, val ? val : "", val ? strlen(val) : 0);
}

void md_log_int(struct md_logline *l, const char *key, int64_t val)
{
    if (l->on && put_key(l, key, 20) == 0)
        md_buf_put_i64(&l->b, val);
}

void md_log_bool(struct md_logline *l, const char *key, int val)
{
    if (l->on && put_key(l, key, 5) == 0)
        md_buf_puts(&l->b, val ? "true" : "false");
}

static void write_all(const char *p, size_t left)
{
    while (left > 0) {
        ssize_t w = write(STDERR_FILENO, p, left);
        if (w <= 0)
            break;
        p += w;
        left -= (size_t)w;
    }
}

/* ---- the asynchronous writer ----
 * Lines are appended to a pending buffer; a thread writes whatever has
 * gathered with one write(2) and swaps buffers. The first line after a quiet
 * spell wakes the thread, which then lets lines gather for GATHER_MS (or
 * until the buffer is half full) before it writes: under load a wake-up and a
 * write(2) serve hundreds of lines, instead of a futex wake per line. An
 * error or warning is written at once (with what gathered before it). A full
 * buffer makes the logging thread wait (lines are never dropped). */

#define ASYNC_CAP ((size_t)1 << 20)
#define GATHER_MS 5

static struct {
    pthread_mutex_t mu;
    pthread_cond_t ready; /* lines pending, or stop */
    pthread_cond_t room;  /* the pending buffer was taken */
    char *pending, *spare;
    size_t len;
    int stop;
    int idle;      /* the thread waits for a first line: wake it */
    int gathering; /* the thread lets lines gather: wake it only when half full */
    int flush;     /* an urgent line is pending: write without gathering */
    pthread_t thread;
} g_async = {PTHREAD_MUTEX_INITIALIZER,
             PTHREAD_COND_INITIALIZER,
             PTHREAD_COND_INITIALIZER,
             NULL,
             NULL,
             0,
             0,
             0,
             0,
             0,
             0};
static atomic_int g_async_on;

static void *async_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_async.mu);
    for (;;) {
        g_async.idle = 1;
        while (g_async.len == 0 && !g_async.stop)
            pthread_cond_wait(&g_async.ready, &g_async.mu);
        g_async.idle = 0;
        if (g_async.len == 0)
            break; /* stopping, nothing left */
        if (!g_async.stop && !g_async.flush && g_async.len < ASYNC_CAP / 2) {
            struct timespec until = md_deadline_ms(GATHER_MS);
            g_async.gathering = 1;
            while (!g_async.stop && !g_async.flush && g_async.len < ASYNC_CAP / 2 &&
                   pthread_cond_timedwait(&g_async.ready, &g_async.mu, &until) == 0)
                ;
            g_async.gathering = 0;
        }
        char *out = g_async.pending;
        size_t n = g_async.len;
        g_async.pending = g_async.spare;
        g_async.spare = out;
        g_async.len = 0;
        g_async.flush = 0;
        pthread_cond_broadcast(&g_async.room);
        pthread_mutex_unlock(&g_async.mu);
        write_all(out, n);
        pthread_mutex_lock(&g_async.mu);
    }
    pthread_mutex_unlock(&g_async.mu);
    return NULL;
}

int md_log_start_async(void)
{
    g_async.pending = malloc(ASYNC_CAP);
    g_async.spare = malloc(ASYNC_CAP);
    g_async.len = 0;
    g_async.stop = 0;
    if (!g_async.pending || !g_async.spare ||
        pthread_create(&g_async.thread, NULL, async_main, NULL) != 0) {
        free(g_async.pending);
        free(g_async.spare);
        g_async.pending = g_async.spare = NULL;
        return -1;
    }
    atomic_store(&g_async_on, 1);
    return 0;
}

void md_log_stop_async(void)
{
    if (!atomic_load(&g_async_on))
        return;
    pthread_mutex_lock(&g_async.mu);
    g_async.stop = 1;
    pthread_cond_signal(&g_async.ready);
    pthread_mutex_unlock(&g_async.mu);
    pthread_join(g_async.thread, NULL);
    atomic_store(&g_async_on, 0);
    free(g_async.pending);
    free(g_async.spare);
    g_async.pending = g_async.spare = NULL;
}

/* Queue a line; an urgent one (error, warning) cuts the gathering short. */
static void async_put(const char *p, size_t n, int urgent)
{
    pthread_mutex_lock(&g_async.mu);
    while (g_async.len + n > ASYNC_CAP && g_async.len > 0)
        pthread_cond_wait(&g_async.room, &g_async.mu);
    if (n > ASYNC_CAP) {
        write_all(p, n); /* larger than the buffer: straight out */
    } else {
        memcpy(g_async.pending + g_async.len, p, n);
        g_async.len += n;
        if (urgent)
            g_async.flush = 1;
        if (g_async.idle || (g_async.gathering && (urgent || g_async.len >= ASYNC_CAP / 2)))
            pthread_cond_signal(&g_async.ready);
    }
    pthread_mutex_unlock(&g_async.mu);
}

void md_log_end(struct md_logline *l)
{
    if (l->on && md_buf_puts(&l->b, "}\n") == MD_OK) {
        if (atomic_load(&g_async_on))
            async_put(l->b.data, l->b.len, l->urgent);
        else
            write_all(l->b.data, l->b.len);
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
