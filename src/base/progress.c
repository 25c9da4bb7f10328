/* progress.c — a progress bar or progress log lines (see md_progress.h). */
#include "base/md_progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/md_clock.h"
#include "base/md_log.h"

#define BAR_WIDTH 30
#define REDRAW_US 100000u

void md_progress_begin(struct md_progress *p, const char *work, const char *unit, int64_t total,
                       int tty_ok)
{
    *p = (struct md_progress){.work = work, .unit = unit, .total = total > 0 ? total : 0};
    p->t0_us = p->shown_us = md_now_us();
    p->tty = tty_ok && isatty(STDERR_FILENO);
    const char *ms = getenv("MEMORYD_PROGRESS_MS");
    p->every_us =
        ms && *ms ? strtoull(ms, NULL, 10) * 1000u : (uint64_t)MD_PROGRESS_EVERY_S * 1000000u;
    p->redraw_us = p->every_us < REDRAW_US ? p->every_us : REDRAW_US;
}

/* `n` with thousands separators into out (32 bytes). */
static void grouped(int64_t n, char out[32])
{
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%lld", (long long)(n < 0 ? -n : n));
    int o = n < 0 ? (out[0] = '-', 1) : 0;
    for (int i = 0; i < len; i++) {
        out[o++] = digits[i];
        if ((len - i - 1) % 3 == 0 && i < len - 1)
            out[o++] = ',';
    }
    out[o] = '\0';
}

static int64_t rate_of(const struct md_progress *p, uint64_t now)
{
    uint64_t us = now - p->t0_us;
    return us ? (int64_t)((double)p->done * 1e6 / (double)us) : 0;
}

static void draw(struct md_progress *p, uint64_t now)
{
    char done[32], total[32], rate[32];
    grouped(p->done, done);
    grouped(p->total, total);
    grouped(rate_of(p, now), rate);
    if (p->total) {
        int filled = (int)(p->done >= p->total ? BAR_WIDTH : p->done * BAR_WIDTH / p->total);
        char bar[BAR_WIDTH + 1];
        for (int i = 0; i < BAR_WIDTH; i++)
            bar[i] = i < filled ? '#' : '-';
        bar[BAR_WIDTH] = '\0';
        fprintf(stderr, "\r%s  [%s] %3d%%  %s/%s %s  %s/s ", p->work, bar,
                (int)(p->done >= p->total ? 100 : p->done * 100 / p->total), done, total, p->unit,
                rate);
    } else {
        fprintf(stderr, "\r%s  %s %s  %s/s ", p->work, done, p->unit, rate);
    }
    fflush(stderr);
    p->shown = 1;
}

static void log_line(struct md_progress *p, uint64_t now, int end)
{
    struct md_logline l;
    md_log_begin(&l, MD_LOG_INFO, end ? "done" : "progress");
    md_log_str(&l, "work", p->work);
    md_log_int(&l, "done", p->done);
    if (p->total)
        md_log_int(&l, "total", p->total);
    md_log_str(&l, "unit", p->unit);
    md_log_int(&l, "rate", rate_of(p, now));
    if (end)
        md_log_int(&l, "ms", (int64_t)((now - p->t0_us) / 1000u));
    md_log_end(&l);
    p->shown = 1;
}

void md_progress_update(struct md_progress *p, int64_t done)
{
    p->done = done;
    uint64_t now = md_now_us();
    if (p->tty && now - p->shown_us >= p->redraw_us) {
        p->shown_us = now;
        draw(p, now);
    } else if (!p->tty && now - p->shown_us >= p->every_us) {
        p->shown_us = now;
        log_line(p, now, 0);
    }
}

void md_progress_end(struct md_progress *p)
{
    if (!p->shown)
        return;
    uint64_t now = md_now_us();
    if (p->tty) {
        draw(p, now);
        fputc('\n', stderr);
    } else {
        log_line(p, now, 1);
    }
    p->shown = 0;
}
